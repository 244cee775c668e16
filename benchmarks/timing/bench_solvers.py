"""Time solvers on USPS with Ying & Li's protocol (one stratified 70/30 split, k = 3, d = 256).

Reports constraint generation time, then per solver: fit time, iterations, milliseconds per
iteration and 3-NN test error, with BLAS pinned to ``--threads`` threads. Solver specs are registry
names with optional parameters: ``dml_eig`` or ``dml_eig:scale=none,max_iter=200``.

Reported times for comparison (other hardware, MATLAB): Ying & Li 2012 Table 5 (USPS: DML-eig
52.48 s, LMNN-eig 572.04 s, BoostMetric 694.84 s), Shen et al. 2014 Table I, Shen et al. 2010
Table III.

    python benchmarks/timing/bench_solvers.py [--dataset usps] [--threads 1] \\
        dml_eig dml_eig:scale=none
"""

from __future__ import annotations

import argparse
import time
import warnings

from threadpoolctl import threadpool_limits

from dml_bench.experiment.config import parse_scalar
from dml_bench.constraints import knn_triplets
from dml_bench.datasets import load_dataset
from dml_bench.evaluate import knn_error
from dml_bench.preprocess import Preprocessing
from dml_bench.solvers import SOLVERS
from dml_bench.splits import derive_seed, train_test_split_indices


def parse_spec(spec: str) -> tuple[str, dict]:
    """``name:key=value,...`` → (name, params); values parsed as YAML scalars."""
    name, _, rest = spec.partition(":")
    params = dict(item.split("=", 1) for item in rest.split(",") if item)
    return name, {k: parse_scalar(v) for k, v in params.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("solvers", nargs="*", default=["dml_eig", "dml_eig:scale=none"])
    ap.add_argument("--dataset", default="usps")
    ap.add_argument("--normalize", default="none")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    X, y, _ = load_dataset(args.dataset)
    train, test = train_test_split_indices(y, 0.7, derive_seed(0, args.dataset, 0))
    with threadpool_limits(args.threads):
        X_tr, X_te = Preprocessing(normalize=args.normalize).apply(X[train], X[test])
        t0 = time.perf_counter()
        cons = knn_triplets(X_tr, y[train], k=3)
        print(f"{args.dataset}: n_train={len(train)} d={X.shape[1]} |S|={len(cons.similar)} "
              f"|D|={len(cons.dissimilar)} |T|={len(cons.triplets)} blas_threads={args.threads}; "
              f"constraints {time.perf_counter() - t0:.2f} s", flush=True)
        for spec in args.solvers:
            name, params = parse_spec(spec)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                model = SOLVERS[name](**params).fit(X_tr, y[train], constraints=cons)
                t_fit = time.perf_counter() - t0
            err = knn_error(model.transform(X_tr), y[train], model.transform(X_te), y[test])
            n_iter = max(int(model.n_iter_), 1)
            print(f"{spec}: fit {t_fit:.2f} s | {model.n_iter_} iterations | "
                  f"{1e3 * t_fit / n_iter:.2f} ms/iteration | 3-NN error {100 * err:.2f} % | "
                  f"converged {model.converged_}", flush=True)


if __name__ == "__main__":
    main()
