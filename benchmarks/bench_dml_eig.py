"""Benchmark DML-eig on USPS with Ying & Li's protocol (one 70/30 split, k = 3, d = 256).

Reports constraint generation time, fit time, iterations and seconds per iteration, with BLAS pinned
to the given number of threads. Ying & Li (2012) Table 5 report 52.48 s for DML-eig on USPS.

    python benchmarks/bench_dml_eig.py [--dataset usps] [--threads 1] [--max-iter 1000]
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
    args = ap.parse_args()
    X, y, _ = load_dataset(args.dataset)
    train, test = train_test_split_indices(y, 0.7, derive_seed(0, args.dataset, 0))
    with threadpool_limits(args.threads):
        X_tr, X_te = Preprocessing(normalize=args.normalize).apply(X[train], X[test])
        t0 = time.perf_counter()
        cons = knn_triplets(X_tr, y[train], k=3)
        t_cons = time.perf_counter() - t0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            model = DMLEig(max_iter=args.max_iter).fit(X_tr, y[train], constraints=cons)
            t_fit = time.perf_counter() - t0
        err = knn_error(model.transform(X_tr), y[train], model.transform(X_te), y[test])
    blas = ", ".join(f"{i['internal_api']}:{i['num_threads']}" for i in threadpool_info())
    print(f"dataset={args.dataset} n_train={len(train)} d={X.shape[1]} "
          f"|S|={len(cons.similar)} |D|={len(cons.dissimilar)} blas=[{blas}]")
    print(f"constraints {t_cons:.2f} s | fit {t_fit:.2f} s | {model.n_iter_} iterations | "
          f"{1e3 * t_fit / model.n_iter_:.2f} ms/iteration | 3-NN error {100 * err:.2f} % "
          f"| converged {model.converged_}")
    per_iter = np.diff(model.trace_["time"])
    print(f"per-iteration time: median {1e3 * np.median(per_iter):.2f} ms, "
          f"max {1e3 * per_iter.max():.2f} ms")


if __name__ == "__main__":
    main()
