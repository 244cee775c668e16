"""Retrieval experiment of Shen, Kim & Wang (2010), Fig. 3 (and the Face-Background row of Table II).

"We evaluate retrieval accuracy using each facial image in a test subset as a query. For each
compared metric, the accuracy of the retrieved top 1 to 20 images are computed, which is defined
as the ratio of the number of facial images to the total number of retrieved images. We calculate
the average accuracy of each test subset and then average over the whole 10 test subsets."

Our reading, in one place: the gallery of a query is the test subset it belongs to, without the
query itself (:func:`~dml_bench.evaluate.retrieval_precision`): "a test subset" is both where the
queries come from and what is averaged over, and a query that could retrieve itself would make
the top-1 accuracy 100 % for every metric. The training part is not searched.

The experiment is a config (datasets, splits, constraints, solvers with their ``tune:`` blocks)
run task by task as :mod:`~dml_bench.run.runner` does (the same splits, preprocessing,
constraints and tuning folds, so its 3-NN errors are the config's), plus the retrieval curve of
every fitted metric. Written into ``out_dir``:

- ``retrieval_runs.csv``: one row per (dataset, split, solver label): the 3-NN ``error``, the
  tuned parameters, fit time, and ``precision_at_1`` .. ``precision_at_<top>``;
- ``<figure>.csv`` / ``.png`` / ``.pdf``: mean precision (%) over the splits against m, one line
  per solver label, error bars the split std (:func:`~dml_bench.report.figures.plot_figure`);
- ``comparison_<paper>_<table>.csv``: the 3-NN errors next to the config's ``paper_table``
  (:func:`~dml_bench.report.tables.compare_with_paper`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits

from ...common.safe_write import write_csv

RUNS_FILE = "retrieval_runs.csv"


def run_retrieval_experiment(out_dir, config, query_class: str, top: int = 20,
                             figure: str = "fig3_retrieval", n_jobs: int | None = None) -> dict:
    """Fit every task of ``config`` and measure its retrieval precision at 1..``top``.

    Parameters
    ----------
    out_dir : path
        Folder for the files listed in the module docstring (created if needed).
    config : path
        An experiment config (``configs/shen2010_fig3.yaml``); its ``figures``, ``quick`` and
        ``precise`` settings do not apply here.
    query_class : str
        Class name (``meta['class_names']`` of the dataset) whose test points are the queries
        and count as relevant retrieved points, e.g. ``"face"``.
    top : int, default=20
        Largest number of retrieved images.
    figure : str, default="fig3_retrieval"
        Name of the figure files.
    n_jobs : int, optional
        Parallel tasks (default: the config's ``execution.n_jobs``); BLAS keeps one thread each.

    Returns
    -------
    dict
        ``runs`` (DataFrame of ``retrieval_runs.csv``), ``curves`` (DataFrame of the figure's
        CSV) and the path of every file written (``runs_csv``, ``<figure>_csv``,
        ``<figure>_png``, ``<figure>_pdf``, ``comparison_<paper>_<table>``).

    Raises
    ------
    ValueError
        ``query_class`` is not a class of a dataset of the config.
    """
    from ...experiment.config import load_config
    from ...report.figures import plot_figure
    from ...experiment.knn import all_tasks

    exp = load_config(config)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tasks = list(all_tasks(exp))
    targets = {task.dataset.name: _class_index(task.dataset.name, query_class) for task in tasks}
    rows = Parallel(n_jobs=n_jobs or exp.n_jobs)(
        delayed(_run_task)(task, targets[task.dataset.name], top) for task in tasks)
    runs = pd.DataFrame(rows)
    written = {"runs_csv": out_dir / RUNS_FILE}
    write_csv(written["runs_csv"], runs, index=False)
    curves = retrieval_curves(runs, top)
    spec = {"name": figure, "kind": "sweep", "x": "retrieved images m",
            "y": f"retrieval accuracy at m, {query_class} queries (%)",
            "title": f"{exp.name}: precision of the top m retrieved test images"}
    for path in plot_figure(curves, spec, out_dir):
        written[f"{figure}_{path.suffix[1:]}"] = path
    written.update(_comparisons(runs, exp, out_dir))
    return {"runs": runs, "curves": curves, **written}


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


def _class_index(dataset: str, class_name: str) -> int:
    from ...datasets import load_dataset

    names = load_dataset(dataset)[2]["class_names"]
    if class_name not in names:
        raise ValueError(f"query class {class_name!r} is not a class of dataset {dataset!r} "
                         f"({', '.join(names)})")
    return names.index(class_name)


def _run_task(task, target: int, top: int) -> dict:
    """Tune (as the runner's ``tune:`` fits do), fit, and evaluate one task: its row."""
    from ...evaluate import model_error, model_retrieval_precision, spectrum_counts
    from ...experiment.knn import fit_task_solver, prepare_split
    from ...run.tuning import run_tune_task, tune_tasks, with_choice

    with threadpool_limits(limits=1):
        if task.solver.tune:
            fits = [run_tune_task(tt) for tt in tune_tasks(task)]
            failed = [row for row in fits if row.get("_failed")]
            if failed:
                raise RuntimeError(f"tuning fit {failed[0]['label']} failed: {failed[0]['message']}")
            task = with_choice(task, pd.DataFrame(fits))
        X_train, y_train, X_test, y_test, constraints, _, split_seed = prepare_split(task)
        solver, wall, cpu = fit_task_solver(task, X_train, y_train, constraints)
        error = model_error(solver, X_train, y_train, X_test, y_test, task.knn_k, task.tie_break)
        precision = model_retrieval_precision(solver, X_test, y_test, target, top)
        n_nonzero, n_energy = spectrum_counts(solver.components_)
    return {"task_id": task.task_id, "dataset": task.dataset.label, "split": task.split,
            "seed": split_seed, "solver": task.solver.name, "label": task.solver.label,
            "tuned_params": json.dumps(dict(task.tuned), sort_keys=True) if task.tuned else "",
            "n_train": len(y_train), "n_test": len(y_test),
            "n_queries": int(np.sum(np.asarray(y_test) == target)), "error": error,
            "fit_time": wall, "fit_cpu_time": cpu, "n_iter": getattr(solver, "n_iter_", None),
            "converged": getattr(solver, "converged_", None),
            "n_nonzero_eigenvalues": n_nonzero, "n_features_90_energy": n_energy,
            **{f"precision_at_{m}": float(p) for m, p in enumerate(precision, 1)}}


def _comparisons(runs: pd.DataFrame, exp, out_dir: Path) -> dict:
    """The 3-NN errors next to each table of the config's ``paper_table``."""
    from ...papers import load_paper_table
    from ...report.knn import summarize
    from ...report.tables import compare_with_paper

    config = exp.to_dict()
    summary = summarize(runs, config)
    written = {}
    for key in exp.paper_table:
        name = f"comparison_{key.replace('/', '_')}"
        path = out_dir / f"{name}.csv"
        write_csv(path, compare_with_paper(summary, load_paper_table(key), config), index=False)
        written[name] = path
    return written
