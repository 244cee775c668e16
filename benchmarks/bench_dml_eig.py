"""Benchmark DML-eig on USPS with Ying & Li's protocol (one 70/30 split, k = 3, d = 256).

Reports constraint generation time, fit time, iterations and seconds per iteration, with BLAS pinned
to the given number of threads. Ying & Li (2012) Table 5 report 52.48 s for DML-eig on USPS.

    python benchmarks/bench_dml_eig.py [--dataset usps] [--threads 1] [--max-iter 1000]
                                       [--scale none unit_mean]

With ``scale: none`` (the paper's literal X_S sum) the softmax weights are nearly uniform on USPS, so
every iteration forms G = Z̃ᵀ diag(w) Z̃ over all |D| pairs; with ``unit_mean`` a few dozen pairs
carry the weight and the iteration cost is one streaming pass over Z̃.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from dml_bench.constraints import knn_triplets
from dml_bench.datasets import load_dataset
from dml_bench.evaluate import knn_error
from dml_bench.preprocess import Preprocessing
from dml_bench.solvers import DMLEig
from dml_bench.splits import derive_seed, train_test_split_indices


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="usps")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-iter", type=int, default=1000)
    ap.add_argument("--normalize", default="none")
    ap.add_argument("--scale", nargs="+", default=["none", "unit_mean"])
    args = ap.parse_args()
    X, y, _ = load_dataset(args.dataset)
    train, test = train_test_split_indices(y, 0.7, derive_seed(0, args.dataset, 0))
    with threadpool_limits(args.threads):
        X_tr, X_te = Preprocessing(normalize=args.normalize).apply(X[train], X[test])
        t0 = time.perf_counter()
        cons = knn_triplets(X_tr, y[train], k=3)
        t_cons = time.perf_counter() - t0
        results = [(scale, *fit_and_score(X_tr, y[train], X_te, y[test], cons, scale,
                                            args.max_iter)) for scale in args.scale]
    blas = ", ".join(f"{i['internal_api']}:{i['num_threads']}" for i in threadpool_info())
    print(f"dataset={args.dataset} n_train={len(train)} d={X.shape[1]} |S|={len(cons.similar)} "
          f"|D|={len(cons.dissimilar)} blas threads={args.threads} (outside: {blas})")
    print(f"constraints: {t_cons:.2f} s")
    for scale, model, t_fit, err in results:
        per_iter = np.diff(model.trace_["time"])
        print(f"scale={scale}: fit {t_fit:.2f} s | {model.n_iter_} iterations | "
              f"{1e3 * t_fit / model.n_iter_:.2f} ms/iteration (median "
              f"{1e3 * np.median(per_iter):.2f}) | 3-NN error {100 * err:.2f} % | "
              f"converged {model.converged_}")


def fit_and_score(X_tr, y_tr, X_te, y_te, cons, scale, max_iter):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        model = DMLEig(max_iter=max_iter, scale=scale).fit(X_tr, y_tr, constraints=cons)
        t_fit = time.perf_counter() - t0
    err = knn_error(model.transform(X_tr), y_tr, model.transform(X_te), y_te)
    return model, t_fit, err


if __name__ == "__main__":
    main()
