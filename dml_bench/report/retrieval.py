"""The report of a retrieval experiment (``evaluation: {task: retrieval}``; Shen, Kim & Wang
2010, Fig. 3): the k-NN report of its fits (:func:`~dml_bench.report.knn.write_knn_report`) and
the retrieval curve, ``figures/retrieval.csv/.png/.pdf``: per dataset and solver label, the
mean precision (%) of the top m retrieved test points over the splits against m, error bars the
split std (each split's precision is the mean over its queries, as the paper averages "over the
whole 10 test subsets").
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .figures import plot_figure
from .knn import read_runs, write_knn_report
from .tables import read_config

#: the name of the retrieval curve's files under ``figures/``
FIGURE = "retrieval"


def retrieval_curves(runs: pd.DataFrame, top: int) -> pd.DataFrame:
    """Per (dataset, solver label) and m: mean and std (ddof 1) over the splits, in percent.

    Columns ``panel`` (dataset), ``series`` (label), ``x`` (m), ``y`` (mean), ``y_std`` and
    ``n`` (splits), the layout :func:`~dml_bench.report.figures.plot_figure` draws.
    """
    columns = [f"precision_at_{m}" for m in range(1, top + 1)]
    long = runs.melt(id_vars=["dataset", "label"], value_vars=columns, var_name="m",
                     value_name="precision")
    long["x"] = long["m"].str.removeprefix("precision_at_").astype(int)
    long["precision"] *= 100
    curves = (long.groupby(["dataset", "label", "x"], sort=False)["precision"]
              .agg(y="mean", y_std="std", n="count").reset_index())
    return curves.rename(columns={"dataset": "panel", "label": "series"})


def write_retrieval_report(results_dir: Path | str) -> dict[str, Path]:
    """Write the k-NN report of ``results_dir`` and its retrieval curve; returns file name →
    path of every file written."""
    results_dir = Path(results_dir)
    written = write_knn_report(results_dir)
    evaluation = read_config(results_dir).get("evaluation") or {}
    top, query = int(evaluation.get("top") or 20), evaluation.get("query_class", "")
    spec = {"name": FIGURE, "kind": "sweep", "x": "retrieved images m",
            "y": f"precision of the top m, {query} queries (%)",
            "title": "precision of the top m retrieved test points"}
    curves = retrieval_curves(read_runs(results_dir), top)
    for path in plot_figure(curves, spec, results_dir / "figures"):
        written[f"figures/{path.name}"] = path
    return written
