"""Time the one-vs-one SVM on GEMM Gram matrices against libsvm's own kernel evaluations.

For one pair of classes of a registered dataset (features mapped onto [-1, 1], optionally after
PCA), fits ``sklearn.svm.SVC(kernel="rbf")`` and :class:`dml_bench.solvers.svm.SVM` at grid
points of Shen et al. (2014) and reports both fit times, the libsvm iterations and whether the
two decide the held-out points alike. BLAS is pinned to one thread (threadpoolctl).

    DMLBENCH_DATA_MIRROR=../shared/datasets python benchmarks/timing/bench_svm.py mnist \\
        --pca 164 --classes 3 5
    python benchmarks/timing/bench_svm.py digits --classes 1 7
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.decomposition import PCA
from sklearn.preprocessing import MinMaxScaler
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

from dml_bench.datasets import load_dataset
from dml_bench.solvers.svm import SVM

#: (C, γ) corners and centre of the grid of Shen et al. (2014) §IV-A
POINTS = [(2.0 ** -5, 2.0 ** -15), (2.0, 2.0 ** -7), (2.0 ** 15, 2.0 ** -15), (2.0 ** 15, 2.0 ** 5)]


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset")
    ap.add_argument("--classes", nargs=2, type=int, default=[0, 1], help="the pair's labels")
    ap.add_argument("--pca", type=int, default=None, help="PCA dimension first (MNIST: 164)")
    ap.add_argument("--held-out", type=float, default=0.15, help="fraction predicted")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    X, y, _ = load_dataset(args.dataset)
    keep = np.isin(y, args.classes)
    X, y = X[keep].astype(float), y[keep]
    order = np.random.default_rng(args.seed).permutation(len(y))
    n_fit = int(round(len(y) * (1 - args.held_out)))
    fit, test = order[:n_fit], order[n_fit:]
    with threadpool_limits(1):
        if args.pca:
            X = PCA(args.pca, random_state=args.seed).fit(X[fit]).transform(X)
        X = MinMaxScaler((-1, 1)).fit(X[fit]).transform(X)
        print(f"{args.dataset} classes {args.classes}: {len(fit)} fit, {len(test)} predicted, "
              f"{X.shape[1]} features; one BLAS thread")
        header = (f"{'C':>9} {'γ':>11} {'SVC rbf fit [s]':>16} {'ours fit [s]':>13} "
                  f"{'speed-up':>9} {'iterations':>11} {'same predictions':>17}")
        print(header)
        print("-" * len(header))
        for C, gamma in POINTS:
            ref, t_ref = _timed(lambda: SVC(C=C, gamma=gamma).fit(X[fit], y[fit]))
            ours, t_ours = _timed(lambda: SVM(C=C, gamma=gamma).fit(X[fit], y[fit]))
            same = np.array_equal(ref.predict(X[test]), ours.predict(X[test]))
            print(f"{C:9.4g} {gamma:11.4g} {t_ref:16.2f} {t_ours:13.2f} {t_ref / t_ours:9.1f} "
                  f"{int(ref.n_iter_.sum()):>5}/{ours.n_iter_:<5} {str(same):>17}")


if __name__ == "__main__":
    main()
