"""Time SGD-IncSVD (Zhang & Zhang 2017) on DEXTER and the Fig. 2 comparators on a smaller d.

Protocol of the paper's experiments: training triplets from ``random_triplets`` (all training
points, ``--n-triplets``), λ = 0.1 on DEXTER, 100 triplets per iteration, η_t = c/√t with c
chosen in a grid as "the one that leads to the largest decrement of the objective value" after
``--search-iter`` iterations (or fixed by ``--step``); then ``--max-iter`` iterations with that c,
reporting the rank of W_t (Fig. 1) and the time per iteration. ``--comparators`` times the d×d
methods on a dense data set (e.g. USPS, d = 256), each with its own searched step (10 iterations
per grid value; FW uses c = 2).

Scaling: the paper does not say how the data were scaled. With the raw DEXTER counts
(‖x‖² ≈ 1.6e6) even the grid's smallest c = 1e-7 makes F grow; with unit ℓ2 rows λ = 0.1 shrinks
every eigenvalue to 0 (W stays 0). The default ``--scaling maxabs`` (each feature divided by its
largest |value|, LIBSVM-style [0, 1] scaling, CSR preserved) is the reading under which λ = 0.1
gives a rank of the order of Fig. 1's (≈ 100–200).

A short search is misleading: after 20 iterations every c leaves F ≥ F(0) = 1 (smallest for the
smallest c), while after 200 iterations c = 0.1 reaches F ≈ 0.31 and c = 1 only ≈ 1.4.

    DMLBENCH_DATA_MIRROR=/work/shared/datasets python benchmarks/timing/bench_lowrank_sgd.py \
        [--dataset dexter] [--lam 0.1] [--max-iter 300] [--comparators usps]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.preprocessing import maxabs_scale, normalize
from threadpoolctl import threadpool_limits

from dml_bench.constraints import random_triplets
from dml_bench.datasets import load_dataset
from dml_bench.solvers.lowrank_dense import (LowRankFW, LowRankGD, LowRankSGD, LowRankSGDBatch,
                                             LowRankSGDOne)
from dml_bench.solvers.lowrank_sgd import SGDIncSVD

GRID = [10.0 ** e for e in range(-7, 2)]  # the paper's {1e-7, 1e-6, ..., 1, 10}


SCALINGS = ("maxabs", "l2", "none")


def scale(X, how):
    if how == "maxabs":
        return maxabs_scale(X)
    return normalize(X) if how == "l2" else X


def search_step(make, X, c, grid, n_iter):
    """c of the grid with the lowest final objective after ``n_iter`` iterations."""
    best = None
    for step in grid:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = make(step, n_iter).fit(X, constraints=c)
        print(f"    c = {step:g}: F = {model.objective_:.5f}, rank "
              f"{int(model.trace_['rank'][-1]) if 'rank' in model.trace_ else '-'}", flush=True)
        if best is None or model.objective_ < best[1]:
            best = (step, model.objective_)
    return best[0]


def report(name, model, t_fit):
    tr = model.trace_
    per_iter = np.diff(np.concatenate([[0.0], tr["time"]]))
    line = (f"  {name}: {model.n_iter_} iterations in {t_fit:.2f} s, {1e3 * per_iter.mean():.1f} "
            f"ms/iteration (median {1e3 * np.median(per_iter):.1f}), F = {model.objective_:.5f}")
    if "rank" in tr:
        r = tr["rank"]
        at = [int(r[i - 1]) for i in (50, 100, 200, 300, 500) if i <= len(r)]
        line += f", rank: final {int(r[-1])}, max {int(r.max())}, at it. 50/100/200/…: {at}"
    print(line, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="dexter")
    ap.add_argument("--lam", type=float, default=0.1)
    ap.add_argument("--n-triplets", type=int, default=10000)
    ap.add_argument("--max-iter", type=int, default=300)
    ap.add_argument("--search-iter", type=int, default=20)
    ap.add_argument("--grid", default="1e-3,1e-2,1e-1,1,10")
    ap.add_argument("--step", type=float, default=None, help="skip the search, use this c")
    ap.add_argument("--comparators", default=None, help="dense data set for the d×d methods")
    ap.add_argument("--comparator-iter", type=int, default=100)
    ap.add_argument("--methods", default="sgd_incsvd,gd,sgd,sgd_batch,fw,sgd_one",
                    help="comma-separated methods timed on the --comparators data set")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--scaling", choices=SCALINGS, default="maxabs",
                    help="maxabs: every feature divided by its largest |value| (LIBSVM-style "
                         "[0, 1] scaling, CSR stays CSR); l2: unit rows; none: raw")
    args = ap.parse_args()
    grid = [float(g) for g in args.grid.split(",")]

    with threadpool_limits(args.threads):
        X, y = load_dataset(args.dataset)[:2]
        X = scale(X, args.scaling)
        t0 = time.perf_counter()
        c = random_triplets(X, y, n_triplets=args.n_triplets, random_state=0)
        print(f"{args.dataset}: X {X.shape} ({type(X).__name__}), {len(c.triplets)} triplets "
              f"({time.perf_counter() - t0:.2f} s), λ = {args.lam}, BLAS threads {args.threads}")
        step = args.step
        if step is None and args.max_iter > 0:
            print(f"  step search, {args.search_iter} iterations each:")
            step = search_step(lambda s, n: SGDIncSVD(lam=args.lam, step=s, max_iter=n), X, c,
                               grid, args.search_iter)
        if args.max_iter > 0:
            t0 = time.perf_counter()
            model = SGDIncSVD(lam=args.lam, step=step, max_iter=args.max_iter).fit(
                X, constraints=c)
            report(f"sgd_incsvd c = {step:g}", model, time.perf_counter() - t0)

        if args.comparators:
            X, y = load_dataset(args.comparators)[:2]
            X = np.asarray(X, dtype=float)
            X = scale(X, args.scaling)
            c = random_triplets(X, y, n_triplets=args.n_triplets, random_state=0)
            print(f"{args.comparators}: X {X.shape}, {len(c.triplets)} triplets, "
                  f"{args.comparator_iter} iterations each")
            for name, cls, kw in [("sgd_incsvd", SGDIncSVD, {}), ("gd", LowRankGD, {}),
                                  ("sgd", LowRankSGD, {}), ("sgd_batch", LowRankSGDBatch, {}),
                                  ("fw", LowRankFW, {}), ("sgd_one", LowRankSGDOne, {})]:
                if name not in args.methods.split(","):
                    continue
                if name == "fw":
                    s = 2.0
                else:
                    s = search_step(lambda s, n: cls(lam=args.lam, step=s, max_iter=n, **kw), X,
                                    c, [1e-3, 1e-2, 1e-1, 1.0], 10)
                t0 = time.perf_counter()
                m = cls(lam=args.lam, step=s, max_iter=args.comparator_iter, **kw).fit(
                    X, constraints=c)
                report(f"{name} (c = {s:g})", m, time.perf_counter() - t0)


if __name__ == "__main__":
    main()
