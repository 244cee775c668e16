"""Exact routes that avoid a large array, against the direct one, timed in one run.

- **NCA by blocks of rows** (``solvers.nca_blocked``) against scikit-learn's n×n loss and
  gradient (``NeighborhoodComponentsAnalysis._loss_grad_lbfgs``), on letter's z-scored 70 %
  training part (n = 14,015, d = 16) at L = I: CPU seconds of one evaluation, the peak memory
  of one evaluation (``tracemalloc``, in a separate pass), and the largest relative difference
  of the two gradients.
- **SGD-IncSVD in the span** of the training points against the same fit in all d
  coordinates, on DEXTER's max-abs-scaled 70 % training part (210 × 20,000) with its 3-NN
  triplets: CPU seconds of a fit and the largest difference of the two metrics relative to
  their largest entry.

The two paths of a pair alternate over ``--repeat`` rounds, one BLAS thread; the record is the
median CPU seconds per path and their ratio (``results/bench/routes.csv``).

    DMLBENCH_DATA_MIRROR=../shared/datasets python benchmarks/timing/bench_routes.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse
from sklearn.model_selection import train_test_split
from sklearn.neighbors import NeighborhoodComponentsAnalysis
from threadpoolctl import threadpool_limits

from dml_bench.constraints import knn_triplets
from dml_bench.datasets.loader import load_dataset
from dml_bench.solvers import SOLVERS
from dml_bench.solvers.nca_blocked import nca_loss_grad

OUT = Path("results/bench/routes.csv")


def training_part(name: str, scaling: str):
    X, y, _ = load_dataset(name)
    X = X.toarray() if scipy.sparse.issparse(X) else np.asarray(X, dtype=float)
    X, _, y, _ = train_test_split(X, y, train_size=0.7, stratify=y, random_state=0)
    if scaling == "zscore":
        sd = X.std(0)
        return (X - X.mean(0)) / np.where(sd > 0, sd, 1), y
    top = np.abs(X).max(0)
    return X / np.where(top > 0, top, 1), y


def cpu(fn):
    start = time.process_time()
    out = fn()
    return time.process_time() - start, out


def peak_bytes(fn) -> int:
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def nca_rows(repeat: int) -> list[dict]:
    X, y = training_part("letter", "zscore")
    L = np.eye(X.shape[1]).ravel()
    mask = y[:, None] == y[None, :]
    nca = NeighborhoodComponentsAnalysis()
    nca.n_iter_, nca.verbose = 1, 0
    paths = {"scikit-learn n×n": lambda: nca._loss_grad_lbfgs(L, X, mask, -1.0),
             "blocks of rows": lambda: nca_loss_grad(L, X, y, -1.0)}
    return _timed("nca loss and gradient", "letter", X.shape, paths, repeat,
                  lambda a, b: float(np.abs(a[1] - b[1]).max() / np.abs(a[1]).max()))


def sgd_incsvd_rows(repeat: int) -> list[dict]:
    X, y = training_part("dexter", "maxabs")
    c = knn_triplets(X, y, k=3)
    cls = SOLVERS["sgd_incsvd"]
    full = type("FullSGDIncSVD", (cls,), {"span_complement": None})
    paths = {"all coordinates": lambda: full(lam=0.1, step=0.1).fit(X, y, constraints=c),
             "span of the points": lambda: cls(lam=0.1, step=0.1).fit(X, y, constraints=c)}

    def diff(a, b):
        return float(np.abs(a.metric_ - b.metric_).max() / np.abs(a.metric_).max())
    return _timed("sgd_incsvd fit", "dexter", X.shape, paths, repeat, diff, memory=False)


def _timed(what, dataset, shape, paths, repeat, difference, memory=True) -> list[dict]:
    seconds = {name: [] for name in paths}
    results = {}
    for _ in range(repeat):
        for name, fn in paths.items():
            t, results[name] = cpu(fn)
            seconds[name].append(t)
    (first, a), (second, b) = results.items()
    rows = []
    for name in paths:
        rows.append({"what": what, "dataset": dataset, "n": shape[0], "d": shape[1],
                     "path": name, "cpu_seconds": float(np.median(seconds[name])),
                     "peak_mb": (peak_bytes(paths[name]) / 2**20) if memory else np.nan})
    rows[1]["ratio_to_first"] = rows[1]["cpu_seconds"] / rows[0]["cpu_seconds"]
    rows[1]["relative_difference"] = difference(a, b)
    print(f"{what} ({dataset}): {first} {rows[0]['cpu_seconds']:.2f} s, {second} "
          f"{rows[1]['cpu_seconds']:.2f} s (×{rows[1]['ratio_to_first']:.3f}), relative "
          f"difference {rows[1]['relative_difference']:.1e}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with threadpool_limits(1):
        rows = nca_rows(args.repeat) + sgd_incsvd_rows(args.repeat)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(OUT, index=False)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
