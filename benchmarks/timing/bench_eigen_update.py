"""Time the rank-one eigen-update (Kunapuli & Shavlik 2012, §4) against a fresh ``numpy.linalg.eigh``.

For each d: a random PSD matrix ``A = V diag(λ) Vᵀ`` (Wishart-like spectrum; ``--zero-fraction`` of
its eigenvalues set to 0, as in a trace-norm regularised metric), then ``A + α u uᵀ`` either by
:func:`rank_one_eigh_update` from (λ, V) or by ``eigh`` of the updated matrix. BLAS is pinned to
one thread (threadpoolctl). Reports the median over ``--repeat`` runs and the accuracy of the
update against ``eigh``.

    python benchmarks/timing/bench_eigen_update.py                   # d = 64 … 1024
    python benchmarks/timing/bench_eigen_update.py --dims 64 256 --zero-fraction 0.75
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from dml_bench.solvers.eigen_update import rank_one_eigh_update


def median_seconds(fn, repeat):
    """Median wall seconds of ``repeat`` calls of ``fn``."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", type=int, nargs="+", default=[64, 128, 256, 512, 1024])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--alpha", type=float, default=-0.5, help="α of A + α u uᵀ")
    ap.add_argument("--zero-fraction", type=float, default=0.0,
                    help="fraction of zero eigenvalues of A (deflated by the update)")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    header = (f"{'d':>6} {'update [ms]':>12} {'eigh [ms]':>10} {'speed-up':>9} "
              f"{'max|Δλ|/|λ|':>12} {'‖VᵀV−I‖':>9} {'‖A′−VΛVᵀ‖/‖A′‖':>16}")
    print(f"BLAS threads: {args.threads}, α = {args.alpha}, zero fraction = {args.zero_fraction}, "
          f"median of {args.repeat}")
    print(header)
    print("-" * len(header))
    with threadpool_limits(args.threads):
        for d in args.dims:
            G = rng.normal(size=(d, d))
            lam, V = np.linalg.eigh(G @ G.T / d)
            lam[: int(args.zero_fraction * d)] = 0.0
            lam = np.clip(lam, 0.0, None)
            A = (V * lam) @ V.T
            u = rng.normal(size=d) / np.sqrt(d)
            B = A + args.alpha * np.outer(u, u)
            B = (B + B.T) / 2
            t_up = median_seconds(lambda: rank_one_eigh_update(lam, V, args.alpha, u), args.repeat)
            t_eigh = median_seconds(lambda: np.linalg.eigh(B), args.repeat)
            new_lam, new_V = rank_one_eigh_update(lam, V, args.alpha, u)
            ref = np.linalg.eigvalsh(B)
            e_val = np.abs(new_lam - ref).max() / np.abs(ref).max()
            e_orth = np.abs(new_V.T @ new_V - np.eye(d)).max()
            e_rec = np.abs((new_V * new_lam) @ new_V.T - B).max() / np.abs(B).max()
            print(f"{d:>6} {1e3 * t_up:>12.2f} {1e3 * t_eigh:>10.2f} {t_eigh / t_up:>9.2f} "
                  f"{e_val:>12.1e} {e_orth:>9.1e} {e_rec:>16.1e}", flush=True)


if __name__ == "__main__":
    main()
