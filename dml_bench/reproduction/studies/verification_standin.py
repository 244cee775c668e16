"""Face verification without LFW: the restricted protocol end to end on a face set that is here.

LFW-SIFT is not in the mirror, so Ying & Li (2012) §5.2's protocol
(:mod:`dml_bench.experiment.verification`) is run on Extended Yale B (38 people, 59–64 images
each, 32×32 pixels) or ORL (40 people, 10 images each): matched and mismatched pairs are drawn
LFW-style into ten folds with disjoint identities
(:func:`~dml_bench.experiment.verification.draw_pair_folds`, drawn once and shared by every
solver), each solver is trained on nine folds' pairs only (no identity labels, no other image),
its threshold chosen on those pairs, and tested on the tenth fold. Written into
``out_dir``:

- ``verification_folds.csv``: one row per (solver, test fold): test ``accuracy``, ``threshold``,
  ``train_accuracy``, ``fit_time``, ``fit_cpu_time`` and the pair and image counts;
- ``verification_summary.csv``: one row per solver: ``accuracy_mean`` and ``accuracy_sem`` over
  the folds (std ddof 1 / √n, the papers' statistic), ``auc`` and ``eer`` of the merged ROC,
  ``fit_time_mean``, the solver ``params`` (JSON), ``dataset``, ``pca``, ``sqrt``, the pair counts;
- ``verification_roc.csv``: ``solver``, ``fpr``, ``tpr`` of the merged test folds, at most
  :data:`ROC_POINTS` points per solver;
- ``fig_verification_roc.png`` / ``.pdf``: one ROC curve per solver, its accuracy mean ± SEM and
  AUC in the legend (the layout of Ying & Li Fig. 3).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from ...common.safe_write import write_csv
from ...errors import DMLBenchError
from ...report.figures import pyplot, save_figure

#: the solvers of Ying & Li Fig. 3 / Table 6 against the Euclidean reference, default parameters
#: (see :func:`run_verification_standin` for why)
SOLVERS = (("euclidean", {}), ("dml_eig", {}), ("itml", {}), ("ldml", {}))
#: legend names of the registry solvers
LABELS = {"euclidean": "Euclidean", "dml_eig": "DML-eig", "itml": "ITML", "ldml": "LDML"}
#: largest number of ROC points per solver in ``verification_roc.csv``
ROC_POINTS = 400
FOLDS_FILE, SUMMARY_FILE, ROC_FILE = ("verification_folds.csv", "verification_summary.csv",
                                      "verification_roc.csv")
FIGURE = "fig_verification_roc"


def run_verification_standin(out_dir, dataset: str = "yale_b", solvers=SOLVERS, n_folds: int = 10,
                             n_matched: int = 300, n_mismatched: int = 300, pca: int | None = 100,
                             sqrt: bool = False, seed: int = 0) -> dict:
    """Run the restricted verification protocol for every solver on drawn folds of a face set.

    The settings, chosen once:

    - **Pairs.** LFW's 10 folds of 300 matched + 300 mismatched pairs. Yale B allows them: its
      38 people make folds of 3–4 people, i.e. ≥ 5 800 distinct matched pairs per fold. ORL (4
      people of 10 images per fold, 180 matched pairs) does not; ask for fewer pairs there.
    - **PCA to 100 dimensions**, fitted on each fold's training images (about 2 100 on Yale B):
      the dimension Ying & Li use for LFW-SIFT (§5.2, Table 6), well below the number of
      training images, so the covariance is well determined. No square root (``sqrt``): it is
      for SIFT histograms, not pixel intensities.
    - **Solver parameters:** the registry defaults, which are the authors' (DML-eig μ = 1e-4,
      10³ iterations, Ying & Li §5; ITML γ = 1, the authors' ``ItmlAlg.m`` caps and
      percentile bounds; LDML 10³ gradient steps). Nothing is tuned: the restricted setting
      has no validation pairs of its own. At these defaults a fit takes at most ~12 s (LDML) per
      fold with one BLAS thread, so no iteration cap was reduced. On Yale B's fold 0 all three
      stop at their caps, not their tolerances: DML-eig after 10³ iterations (relative duality
      gap 0.12), ITML after 19 sweeps (10⁵ projections), LDML after 10³ steps.

    Parameters
    ----------
    out_dir : path
        Folder for the files listed in the module docstring (created if needed).
    dataset : str, default="yale_b"
        A labelled registry data set (``"yale_b"``, ``"orl_faces"``).
    solvers : sequence of (str, dict)
        Registry name and constructor parameters of each solver, in legend order.
    n_folds, n_matched, n_mismatched : int
        Folds and pairs per fold (:func:`~dml_bench.experiment.verification.draw_pair_folds`).
    pca : int or None, default=100
        PCA dimension (None: the raw pixels).
    sqrt : bool, default=False
        Element-wise square root before PCA.
    seed : int, default=0
        Seed of the fold draw (and of the triplet draw of triplet solvers).

    Returns
    -------
    dict
        ``folds``, ``summary``, ``roc`` (the DataFrames of the three CSV files) and the path of
        every file written (``folds_csv``, ``summary_csv``, ``roc_csv``, ``figure_png``,
        ``figure_pdf``).

    Raises
    ------
    ValueError
        A fold has fewer distinct pairs than asked for, or a solver needs class labels.
    DMLBenchError
        The data set is unknown or not available.
    """
    from ...datasets import load_dataset
    from ...experiment.verification import draw_pair_folds, run_verification

    out_dir = Path(out_dir)
    X, y, _ = load_dataset(dataset)
    folds = draw_pair_folds(y, n_folds, n_matched, n_mismatched, seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    fold_tables, summary, rocs = [], [], {}
    with threadpool_limits(limits=1):
        for name, params in solvers:
            result = run_verification(X, folds, name, params, pca=pca, sqrt=sqrt, seed=seed)
            fold_tables.append(result["folds"].assign(solver=name))
            rocs[name] = result["roc"]
            summary.append({"solver": name, "n_folds": n_folds,
                            "accuracy_mean": result["accuracy_mean"],
                            "accuracy_sem": result["accuracy_sem"], "auc": result["auc"],
                            "eer": result["eer"],
                            "fit_time_mean": result["folds"]["fit_time"].mean(),
                            "params": json.dumps(params, sort_keys=True), "dataset": dataset,
                            "pca": pca, "sqrt": sqrt, "n_matched": n_matched,
                            "n_mismatched": n_mismatched, "seed": seed})
    tables, written = _write_tables(out_dir, fold_tables, summary, rocs)
    title = (f"{dataset}: restricted verification, {n_folds} folds of {n_matched} + "
             f"{n_mismatched} pairs, PCA {pca}")
    written.update(plot_roc(rocs, tables["summary"], out_dir, title))
    return {**tables, **written}


def _write_tables(out_dir: Path, fold_tables: list, summary: list, rocs: dict) -> tuple[dict, dict]:
    """The ``folds``, ``summary`` and ``roc`` tables of the solvers' results (the ROC curves
    thinned by :func:`thin_roc`), written to their CSV files; returns the tables and the paths."""
    folds_table = pd.concat(fold_tables, ignore_index=True)
    folds_table = folds_table[["solver", *folds_table.columns.drop("solver")]]
    summary = pd.DataFrame(summary)
    roc = pd.concat([thin_roc(r)[["fpr", "tpr"]].assign(solver=name) for name, r in rocs.items()],
                    ignore_index=True)[["solver", "fpr", "tpr"]]
    written = {"folds_csv": out_dir / FOLDS_FILE, "summary_csv": out_dir / SUMMARY_FILE,
               "roc_csv": out_dir / ROC_FILE}
    for table, key in ((folds_table, "folds_csv"), (summary, "summary_csv"), (roc, "roc_csv")):
        write_csv(written[key], table, index=False)
    return {"folds": folds_table, "summary": summary, "roc": roc}, written


def thin_roc(roc: pd.DataFrame, n_points: int = ROC_POINTS) -> pd.DataFrame:
    """At most ``n_points`` rows of ``roc`` at evenly spaced positions, the first and last kept.

    With all thresholds kept, each step of the curve moves one pair, so evenly spaced rows are
    evenly spaced along the curve (in pairs passed).
    """
    if len(roc) <= n_points:
        return roc
    return roc.iloc[np.unique(np.linspace(0, len(roc) - 1, n_points).round().astype(int))]


def plot_roc(rocs: dict, summary: pd.DataFrame, out_dir, title: str) -> dict:
    """One ROC curve per solver (true-positive against false-positive rate), accuracy mean ±
    SEM and AUC in the legend; returns ``{"figure_png": path, "figure_pdf": path}``."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 4.6))
    for row in summary.itertuples():
        roc = rocs[row.solver]
        ax.plot(roc["fpr"], roc["tpr"],
                label=(f"{LABELS.get(row.solver, row.solver)}: {100 * row.accuracy_mean:.1f} ± "
                       f"{100 * row.accuracy_sem:.1f} %, AUC {row.auc:.3f}"))
    ax.plot([0, 1], [0, 1], color="grey", lw=0.6, ls=":")
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title(title, fontsize="small")
    ax.legend(title="accuracy mean ± SEM", fontsize="small", loc="lower right")
    fig.tight_layout()
    return save_figure(fig, out_dir, FIGURE, "figure")


class _Parser(argparse.ArgumentParser):
    """Bad options end in one line, ``<prog>: error: <message>``, and status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def main(argv=None) -> int:
    """``python -m dml_bench.reproduction.studies.verification_standin [--out DIR] [--dataset
    NAME] ...``."""
    parser = _Parser(prog="python -m dml_bench.reproduction.studies.verification_standin",
                     description="Restricted-protocol face verification on drawn LFW-style folds.")
    parser.add_argument("--out", default="results/verification_yale_b", help="output folder")
    parser.add_argument("--dataset", default="yale_b", help="labelled face set (yale_b, orl_faces)")
    parser.add_argument("--folds", type=int, default=10, help="number of folds")
    parser.add_argument("--pairs", type=int, default=300,
                        help="matched and mismatched pairs per fold (each)")
    parser.add_argument("--pca", type=int, default=100, help="PCA dimension")
    parser.add_argument("--seed", type=int, default=0, help="seed of the fold draw")
    args = parser.parse_args(argv)
    if args.folds < 2 or args.pairs < 1 or args.pca < 1:
        parser.error("need --folds >= 2, --pairs >= 1 and --pca >= 1")
    start = time.perf_counter()
    try:
        result = run_verification_standin(args.out, args.dataset, n_folds=args.folds,
                                          n_matched=args.pairs, n_mismatched=args.pairs,
                                          pca=args.pca, seed=args.seed)
    except (DMLBenchError, ValueError) as exc:
        parser.error(str(exc))
    columns = ["solver", "accuracy_mean", "accuracy_sem", "auc", "eer", "fit_time_mean", "params"]
    print(result["summary"][columns].to_string(index=False))
    print(f"written to {args.out} in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
