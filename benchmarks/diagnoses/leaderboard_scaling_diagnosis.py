"""Why a leaderboard data set sits at chance: its Euclidean 3-NN error under other normalisations.

The diagnosis behind the data-set notes of ``configs/leaderboard.yaml``. On the
board's own splits (the runner's ``all_tasks`` + ``prepare_split`` for the ``euclidean`` label),
the Euclidean 3-NN test error (``evaluate.knn_error``) is computed with the board's normalisation
and with each other one given. The board's must reproduce the committed ``runs.csv`` error of the
split (``runs_error``). Each row also describes the training part after the normalisation:

- ``rare_features``: features that are non-zero in one or two training points;
- ``rare_share``: the mean share of a training point's squared norm that those features hold.
  A per-feature scale divides a rarely seen feature by a small standard deviation (a feature
  seen once in n points becomes about √n, whatever its value), which raises the weight of such
  features in every distance.

Rows go to ``results/leaderboard_diagnosis/<dataset>_scaling.csv``, with a summary (mean and
standard deviation of the error per normalisation) printed.

    DMLBENCH_DATA_MIRROR=../shared/datasets \\
        python benchmarks/diagnoses/leaderboard_scaling_diagnosis.py dexter \\
        --normalize none maxabs global_maxabs
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse

from dml_bench.evaluate import knn_error
from dml_bench.leaderboard.board import load_board
from dml_bench.run.results import RunStore
from dml_bench.experiment.knn import all_tasks, prepare_split

OUT = Path("results/leaderboard_diagnosis")


def rare_feature_share(X_fit, max_count: int = 2) -> tuple[int, float]:
    """Number of features non-zero in 1 to ``max_count`` rows of ``X_fit``, and the mean share of
    a row's squared norm that they hold."""
    X = scipy.sparse.csr_matrix(X_fit)
    seen = np.asarray((X != 0).sum(axis=0)).ravel()
    rare = (seen >= 1) & (seen <= max_count)
    squares = X.multiply(X)
    total = np.asarray(squares.sum(axis=1)).ravel()
    in_rare = np.asarray(squares[:, np.flatnonzero(rare)].sum(axis=1)).ravel()
    share = np.divide(in_rare, total, out=np.zeros_like(total), where=total > 0)
    return int(rare.sum()), float(share.mean())


def euclidean_tasks(dataset: str, config: str):
    """The board's experiment and its ``euclidean`` tasks on ``dataset`` (one per split): the
    board's own splits and preprocessing, for a diagnosis to recompute."""
    exp = load_board(config).experiment
    tasks = [t for t in all_tasks(exp)
             if t.dataset.label == dataset and t.solver.label == "euclidean"]
    if not tasks:
        raise SystemExit(f"{config}: no euclidean task on data set {dataset!r}")
    return exp, tasks


def diagnose(dataset: str, normalizations: list[str], config: str) -> pd.DataFrame:
    """One row per (split, normalisation): the Euclidean 3-NN error and the rare-feature share."""
    exp, tasks = euclidean_tasks(dataset, config)
    committed = RunStore(Path("results") / exp.name).read()
    if not len(committed):
        raise SystemExit(f"results/{exp.name}: no runs; run the board's euclidean cell on "
                         f"{dataset} first")
    committed = committed[(committed.dataset == dataset) & (committed.label == "euclidean")]
    runs_error = dict(zip(committed.split, committed.error))
    board = tasks[0].dataset.preprocessing.normalize
    rows = []
    for task in tasks:
        for normalize in [board, *[v for v in normalizations if v != board]]:
            entry = task.dataset
            variant = dataclasses.replace(task, dataset=dataclasses.replace(
                entry, preprocessing=dataclasses.replace(entry.preprocessing, normalize=normalize)))
            X_fit, y_fit, X_eval, y_eval, *_ = prepare_split(variant)
            n_rare, share = rare_feature_share(X_fit)
            rows.append({"dataset": dataset, "split": task.split, "normalize": normalize,
                         "board": normalize == board,
                         "error": knn_error(X_fit, y_fit, X_eval, y_eval, task.evaluation.knn_k,
                                            task.evaluation.tie_break),
                         "runs_error": runs_error.get(task.split) if normalize == board else None,
                         "rare_features": n_rare, "rare_share": share})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--normalize", nargs="+", default=["none", "maxabs"])
    parser.add_argument("--config", default="configs/leaderboard.yaml")
    args = parser.parse_args()
    rows = diagnose(args.dataset, args.normalize, args.config)
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{args.dataset}_scaling.csv"
    rows.to_csv(path, index=False)
    summary = rows.groupby("normalize", sort=False).agg(
        error_mean=("error", "mean"), error_std=("error", "std"),
        rare_share=("rare_share", "mean"), rare_features=("rare_features", "mean"))
    print(summary.round(4).to_string())
    board = rows[rows.board]
    print(f"board rows reproduce runs.csv: {np.allclose(board.error, board.runs_error)}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
