"""ITML's sweep of cyclic Bregman projections: the plain loop (``itml._sweep``: one
matrix–vector product and one rank-one update of M per projection) against the blocked one
(``itml._sweep_blocked``: the products of a block of constraints as one GEMM, the block's
updates delayed and applied as one GEMM), timed in one run with one BLAS thread.

Per d: Gaussian points in three classes with shifted means (``--points``, 3,000), 40 k-NN-like random
same-class and different-class pairs per point, the bounds at the 5th and 95th percentile of
the squared distances (as ITML's default). Both loops start from the same state after
``--warm`` sweeps (so that the dual variables, and with them the share of projections that
change M, are those of a running fit), then run ``--sweeps`` sweeps each, alternated over
``--repeat`` rounds; the record is the median seconds per sweep, their ratio and the largest
relative difference of the two Ms after the timed sweeps (the same projections, sums regrouped:
rounding only). The crossover sets ``itml.BLOCKED_FROM_D``. A run replaces the record's rows of its
dimensions and keeps the others.

    python benchmarks/timing/bench_itml_sweep.py [--dims 16 32 64 128 256] [--repeat 3]
    python benchmarks/timing/bench_itml_sweep.py --dims 1024 --points 600 --sweeps 2
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from dml_bench.solvers.itml import SWEEP_BLOCK, _sweep, _sweep_blocked, squared_distance_bounds
from dml_bench.solvers.linalg import pair_differences

OUT = Path("results/bench/itml_sweep.csv")


def problem(d: int, rng, n: int = 3000) -> tuple:
    """Constraint differences, signs, starting slacks and duals of a synthetic ITML fit."""
    y = rng.integers(0, 3, n)
    X = rng.standard_normal((n, d)) + 0.7 * y[:, None] * rng.standard_normal(d)
    first = np.repeat(np.arange(n), 40)
    second = rng.integers(0, n, first.size)
    keep = first != second
    pairs = np.column_stack([first[keep], second[keep]]).astype(np.int64)
    delta = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1.0, -1.0)
    u, l = squared_distance_bounds(X, rng=np.random.RandomState(0))
    V = np.ascontiguousarray(pair_differences(X, pairs))
    return V, delta, np.where(delta > 0, u, l), np.zeros(len(V))


def timed(sweep, state, V, delta, n_sweeps, *block):
    M, xi, lam = (a.copy() for a in state)
    start = time.perf_counter()
    for _ in range(n_sweeps):
        sweep(M, V, delta, xi, lam, 0.5, 1.0, *block)
    return (time.perf_counter() - start) / n_sweeps, M, lam


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dims", type=int, nargs="+", default=[16, 32, 64, 128, 256])
    parser.add_argument("--warm", type=int, default=5)
    parser.add_argument("--sweeps", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--points", type=int, default=3000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    with threadpool_limits(1):
        for d in args.dims:
            V, delta, xi, lam = problem(d, rng, args.points)
            M = np.eye(d)
            for _ in range(args.warm):
                _sweep(M, V, delta, xi, lam, 0.5, 1.0)
            state = (M, xi, lam)
            timed(_sweep_blocked, state, V[:200], delta[:200], 1, SWEEP_BLOCK)  # compile
            timed(_sweep, state, V[:200], delta[:200], 1)
            plain, blocked = [], []
            for _ in range(args.repeat):
                t, M_plain, lam_end = timed(_sweep, state, V, delta, args.sweeps)
                plain.append(t)
                t, M_blocked, _ = timed(_sweep_blocked, state, V, delta, args.sweeps, SWEEP_BLOCK)
                blocked.append(t)
            rows.append({"d": d, "points": args.points, "constraints": len(V), "block": SWEEP_BLOCK,
                         "active_share": float(np.mean(lam_end > 0)),
                         "plain_s_per_sweep": float(np.median(plain)),
                         "blocked_s_per_sweep": float(np.median(blocked)),
                         "speedup": float(np.median(plain) / np.median(blocked)),
                         "max_rel_diff": float(np.abs(M_plain - M_blocked).max()
                                               / np.abs(M_plain).max())})
            print(rows[-1], flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    new = pd.DataFrame(rows)
    if OUT.exists():
        old = pd.read_csv(OUT)
        new = pd.concat([old[~old["d"].isin(new["d"])], new]).sort_values("d")
    new.to_csv(OUT, index=False)
    print(OUT)


if __name__ == "__main__":
    main()
