"""The eigendecompositions of the solvers (``linalg.eigh_all``, ``linalg.eigh_above``) against
the alternatives, timed in one run with one BLAS thread.

``--part drivers`` (``eigh_drivers.csv``): every eigenpair. ``eigh_all`` uses LAPACK's divide
and conquer (``syevd``); scipy's ``eigh`` defaults to MRRR (``syevr``). Both are timed,
interleaved, on symmetric matrices with eigenvalues of both signs (``W − ηG`` of a projected
gradient step), and both are checked: the largest eigenvalue difference and each one's residual
``‖AV − VΛ‖_max / ‖A‖_2`` (backward stable drivers give a few ``d ε``).

``--part above`` (``eigh_above.csv``): a projection onto the PSD cone keeps only the eigenpairs
above a threshold (GD, SGD, SGD-batch: above ηλ; FW's vertex: above 0).
Per d and number k of such eigenpairs, only those by ``syevr`` on the value range against every
eigenpair by ``syevd`` and the rest dropped, alternated; their ratio sets
``linalg.SUBSET_EIGH_MAX_FRACTION``, and ``eigh_above`` told k (``eigh_above_ratio``) takes the
faster of the two.

``--part solvers`` (``eigh_above_solvers.csv``): what that is worth in a fit. Zhang & Zhang's
dense comparators on the board's Yale B (split 0's training part, d = 1024, the board's
triplets; ``DMLBENCH_DATA_MIRROR``), at the middle of the board's grid, ``--iters`` iterations
with the subset rule (the default fraction) and without it (fraction 0: every eigenpair at every
iteration), alternated; seconds per iteration, and the largest difference of the two metrics.

``--part factor`` (``iterate_factor.csv``): the end of a DML-eig or LMNN-eig fit, M's factor
from the Frank-Wolfe iterate's k rank-one terms, factored (``dml_eig.factored_metric``: one
triangular solve and a thin SVD) against assembled and decomposed (``dml_eig.dense_metric``:
S, ``L⁻¹``, a full eigendecomposition, two d×d products), alternated, for k = 100 … 1,000 steps
(the cap of §5) whose vectors span 279 dimensions (ORL's n_train − 1), and the largest
difference of the two metrics. The crossover sets ``dml_eig.FACTOR_MAX_STEPS_FRACTION``.

    python benchmarks/timing/bench_eigh_drivers.py [--part drivers above solvers factor] \\
        [--repeat 7]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.linalg
from threadpoolctl import threadpool_limits

from dml_bench.solvers import linalg
from dml_bench.solvers.dml_eig import (FACTOR_MAX_STEPS_FRACTION, dense_metric, factored_metric,
                                       iterate_rows)
from dml_bench.solvers.linalg import eigh_above, eigh_all

#: (label, solver name, parameters): the middle of configs/leaderboard.yaml's lam × step grid
SOLVER_CASES = [("gd", "gd", {"lam": 0.1, "step": 0.1}), ("fw", "fw", {"lam": 0.1, "step": 0.2}),
                ("sgd", "sgd", {"lam": 0.1, "step": 0.1}),
                ("sgd_batch", "sgd_batch", {"lam": 0.1, "step": 0.1})]


def residual(A, lam, V):
    """``‖AV − VΛ‖_max / ‖A‖_2`` of an eigendecomposition."""
    return float(np.abs(A @ V - V * lam).max() / np.abs(lam).max())


def alternate(calls: dict, repeat: int) -> dict:
    """Median seconds of each zero-argument call, the calls interleaved ``repeat`` times: the
    machine's load hits them alike."""
    times = {name: [] for name in calls}
    for _ in range(repeat):
        for name, fn in calls.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: float(np.median(t)) for name, t in times.items()}


def time_drivers(dims, repeat, rng) -> pd.DataFrame:
    rows = []
    for d in dims:
        G = rng.standard_normal((d, d)) / np.sqrt(d)
        A = G @ G.T - np.eye(d)  # eigenvalues in (−1, 3): both signs, as W − ηG
        t = alternate({"syevr": lambda: scipy.linalg.eigh(A), "syevd": lambda: eigh_all(A)},
                      repeat)
        lam_r, V_r = scipy.linalg.eigh(A)
        lam_d, V_d = eigh_all(A)
        rows.append({"d": d, "syevr_s": t["syevr"], "syevd_s": t["syevd"],
                     "ratio": t["syevd"] / t["syevr"],
                     "max_eigenvalue_diff": float(np.abs(lam_r - lam_d).max()),
                     "residual_syevr": residual(A, lam_r, V_r),
                     "residual_syevd": residual(A, lam_d, V_d)})
        print(rows[-1], flush=True)
    return pd.DataFrame(rows)


def time_above(dims, repeat, rng) -> pd.DataFrame:
    rows = []
    for d in dims:
        Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
        for fraction in (0.005, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3):
            k = max(1, round(fraction * d))
            spectrum = np.r_[rng.uniform(-1.0, 0.0, d - k), rng.uniform(1.0, 2.0, k)]
            A = (Q * spectrum) @ Q.T
            subset = lambda: scipy.linalg.eigh(A, driver="evr",  # noqa: E731
                                               subset_by_value=(0.5, np.inf))
            t = alternate({"all": lambda: eigh_above(A, 0.5), "subset": subset,
                           "rule": lambda: eigh_above(A, 0.5, expected=k)}, repeat)
            lam_all, _ = eigh_above(A, 0.5)
            lam_sub, V_sub = subset()
            rows.append({"d": d, "k": k, "fraction": k / d, "all_syevd_s": t["all"],
                         "subset_syevr_s": t["subset"], "ratio": t["subset"] / t["all"],
                         "eigh_above_s": t["rule"], "eigh_above_ratio": t["rule"] / t["all"],
                         "max_eigenvalue_diff": float(np.abs(lam_all - lam_sub).max()),
                         "residual_subset": residual(A, lam_sub, V_sub)})
            print(rows[-1], flush=True)
    return pd.DataFrame(rows)


def time_solvers(iters, repeat, rng) -> pd.DataFrame:
    import os
    import sys

    sys.path.append(str(Path(__file__).resolve().parents[1] / "diagnoses"))
    from seed_diagnosis import tasks_for  # benchmarks/diagnoses/

    from dml_bench.solvers import SOLVERS
    from dml_bench.experiment.knn import prepare_split

    rows = []
    default = linalg.SUBSET_EIGH_MAX_FRACTION
    mirror = os.environ.get("DMLBENCH_DATA_MIRROR")
    for label, name, params in SOLVER_CASES:
        _, tasks = tasks_for("configs/leaderboard.yaml", label, "yale_b", 1, mirror)
        X, y, _, _, constraints, *_ = prepare_split(tasks[0])
        metrics = {}

        def fit(fraction):
            linalg.SUBSET_EIGH_MAX_FRACTION = fraction
            try:
                model = SOLVERS[name](max_iter=iters, **params).fit(X, y, constraints)
            finally:
                linalg.SUBSET_EIGH_MAX_FRACTION = default
            metrics[fraction] = model.metric_

        t = alternate({"subset": lambda: fit(default), "all": lambda: fit(0.0)}, repeat)
        W_sub, W_all = metrics[default], metrics[0.0]
        rows.append({"solver": label, **params, "d": X.shape[1], "n": X.shape[0],
                     "triplets": len(constraints.triplets), "iters": iters,
                     "subset_s_per_iter": t["subset"] / iters, "all_s_per_iter": t["all"] / iters,
                     "speedup": t["all"] / t["subset"],
                     "max_metric_diff": float(np.abs(W_sub - W_all).max()
                                              / max(np.abs(W_all).max(), 1e-300))})
        print(rows[-1], flush=True)
    return pd.DataFrame(rows)


def time_factor(dims, repeat, rng, steps=(100, 300, 600, 1000), span=279) -> pd.DataFrame:
    rows = []
    for d in dims:
        G = rng.standard_normal((d, d)) / np.sqrt(d)
        L = np.linalg.cholesky(G @ G.T + np.eye(d))
        basis = rng.standard_normal((min(span, d), d))
        for k in steps:
            V = rng.standard_normal((k, len(basis))) @ basis
            V /= np.linalg.norm(V, axis=1, keepdims=True)
            W = iterate_rows(V, 2.0 / (np.arange(1, k + 1) + 1), d)
            t = alternate({"dense": lambda: dense_metric(W, L),
                           "factor": lambda: factored_metric(W, L)}, repeat)
            M_dense, M_factor = dense_metric(W, L)[1], factored_metric(W, L)[1]
            rows.append({"d": d, "steps": k, "steps_fraction": k / d, "span": len(basis),
                         "dense_s": t["dense"], "factor_s": t["factor"],
                         "speedup": t["dense"] / t["factor"],
                         "iterate_metric_route": ("factor" if k < FACTOR_MAX_STEPS_FRACTION * d
                                                  else "dense"),
                         "max_metric_diff": float(np.abs(M_dense - M_factor).max()
                                                  / np.abs(M_dense).max())})
            print(rows[-1], flush=True)
    return pd.DataFrame(rows)


#: part: (timing function, output file)
PARTS = {"drivers": (time_drivers, "eigh_drivers.csv"), "above": (time_above, "eigh_above.csv"),
         "solvers": (time_solvers, "eigh_above_solvers.csv"),
         "factor": (time_factor, "iterate_factor.csv")}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", type=int, nargs="+", default=[64, 256, 512, 1024])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--iters", type=int, default=30, help="iterations of each solver fit")
    ap.add_argument("--solver-repeat", type=int, default=2, help="alternated fits per variant")
    ap.add_argument("--part", nargs="+", choices=PARTS, default=list(PARTS))
    ap.add_argument("--out", default="results/bench")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with threadpool_limits(1):
        for part in args.part:
            timing, name = PARTS[part]
            rng = np.random.default_rng(0)
            table = (timing(args.iters, args.solver_repeat, rng) if part == "solvers"
                     else timing(args.dims, args.repeat, rng))
            table.to_csv(out / name, index=False)
            print(f"wrote {out / name}")


if __name__ == "__main__":
    main()
