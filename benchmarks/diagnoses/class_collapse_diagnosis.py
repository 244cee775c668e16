"""Why several learners err identically on a data set with more features than training points.

With n training points of c classes in d > n dimensions (in general position), the
within-class differences x_i − mean(class of i) span n − c directions, and the differences of
all training points n − 1. So n − 1 − (n − c) = c − 1 directions in the span of the training
points are orthogonal to every within-class difference: on them, every training point of a
class projects to the same value (the null space of the within-class scatter inside the span of
the data). A metric that puts its weight there drives every similar pair's distance to zero
while the class means stay apart, which is what the pair and triplet objectives reward; the
3-NN rule in such a metric assigns a test point to the class whose common value is nearest to
its own projection.

This script computes that subspace on the board's own splits (the runner's ``all_tasks`` +
``prepare_split``), evaluates the board's k-NN rule on the projections onto it
(``evaluate.knn_error``), and compares each split's error with the committed ``runs.csv`` error
of every method of the data set: ``same`` counts the splits on which the two are equal (the same
number of misclassified test points). Rows go to
``results/leaderboard_diagnosis/<dataset>_class_collapse.csv``.

    DMLBENCH_DATA_MIRROR=../shared/datasets \\
        python benchmarks/diagnoses/class_collapse_diagnosis.py dexter
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.linalg
import scipy.sparse

from dml_bench.evaluate import knn_error
from dml_bench.experiment.knn import prepare_split
from dml_bench.run.results import RunStore
from leaderboard_scaling_diagnosis import euclidean_tasks  # beside this script

OUT = Path("results/leaderboard_diagnosis")


def collapse_basis(X, y) -> tuple[np.ndarray, float]:
    """An orthonormal basis (d × (c − 1)) of the directions in the span of the centred training
    points that are orthogonal to every within-class difference, and the largest within-class
    spread along it relative to the spread of the class means (0 up to round-off when the
    subspace exists)."""
    X = X.toarray() if scipy.sparse.issparse(X) else np.asarray(X, dtype=float)
    classes = np.unique(y)
    means = np.stack([X[y == k].mean(axis=0) for k in classes])
    within = X - means[np.searchsorted(classes, y)]
    _, s, vt = scipy.linalg.svd(within, full_matrices=False, lapack_driver="gesvd")
    rank = int((s > s[0] * max(X.shape) * np.finfo(float).eps).sum())
    between = means[1:] - means[0]
    between = between - (between @ vt[:rank].T) @ vt[:rank]
    basis = scipy.linalg.orth(between.T)
    spread = np.abs(within @ basis).max() / np.abs((means - means[0]) @ basis).max()
    return basis, float(spread)


def diagnose(dataset: str, config: str) -> pd.DataFrame:
    """One row per split: the collapse classifier's error, its within-class spread, and per
    method the committed error of the split."""
    exp, tasks = euclidean_tasks(dataset, config)
    runs = RunStore(Path("results") / exp.name).read()
    runs = runs[runs.dataset == dataset]
    rows = []
    for task in tasks:
        X_fit, y_fit, X_eval, y_eval, *_ = prepare_split(task)
        basis, spread = collapse_basis(X_fit, y_fit)
        error = knn_error(np.asarray(X_fit @ basis), y_fit, np.asarray(X_eval @ basis), y_eval,
                          task.evaluation.knn_k, task.evaluation.tie_break)
        row = {"dataset": dataset, "split": task.split, "n_train": X_fit.shape[0],
               "n_features": X_fit.shape[1], "n_test": X_eval.shape[0],
               "within_spread": spread, "collapse_error": error}
        split = runs[runs.split == task.split]
        row.update({f"error_{label}": e for label, e in zip(split.label, split.error)})
        rows.append(row)
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--config", default="configs/leaderboard.yaml")
    args = parser.parse_args()
    rows = diagnose(args.dataset, args.config)
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{args.dataset}_class_collapse.csv"
    rows.to_csv(path, index=False)
    n_test = rows["n_test"].to_numpy()
    ours = np.rint(rows["collapse_error"].to_numpy() * n_test)
    summary = []
    for col in [c for c in rows.columns if c.startswith("error_")]:
        theirs = np.rint(rows[col].to_numpy(dtype=float) * n_test)
        summary.append({"method": col[len("error_"):], "error_pct": 100 * rows[col].mean(),
                        "same": int((theirs == ours).sum()), "splits": len(rows)})
    print(f"collapse 3-NN: {100 * rows['collapse_error'].mean():.2f} % over {len(rows)} splits; "
          f"largest within-class spread {rows['within_spread'].max():.1e} of the class means'")
    print(pd.DataFrame(summary).sort_values("same", ascending=False).round(2).to_string(
        index=False))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
