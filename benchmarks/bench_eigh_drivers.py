"""The full eigendecomposition of the solvers (``linalg.eigh_all``) against scipy's default driver.

Every projection onto the PSD cone (GD, SGD, SGD-batch, SGD-one's average, LMNN ``solver="M"``,
Xing, LDML), every Frank–Wolfe vertex of Zhang & Zhang's FW and every dual
evaluation of FrobMetric decomposes a dense symmetric d×d matrix in full. ``eigh_all`` uses
LAPACK's divide and conquer (``syevd``); scipy's ``eigh`` defaults to MRRR (``syevr``). Both are
timed in this run, interleaved, with one BLAS thread, on symmetric matrices with eigenvalues of
both signs (``W − ηG`` of a projected gradient step), and both are checked: the largest
eigenvalue difference and each one's residual ``‖AV − VΛ‖_max / ‖A‖_2`` (backward stable
drivers give a few ``d ε``).

    python benchmarks/bench_eigh_drivers.py [--dims 64 256 512 1024] [--repeat 7]

Writes ``eigh_drivers.csv``: per d the median seconds of each driver and their ratio.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.linalg
from threadpoolctl import threadpool_limits

from dml_bench.solvers.linalg import eigh_all


def residual(A, lam, V):
    """``‖AV − VΛ‖_max / ‖A‖_2`` of an eigendecomposition."""
    return float(np.abs(A @ V - V * lam).max() / np.abs(lam).max())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", type=int, nargs="+", default=[64, 256, 512, 1024])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", default="results/bench")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    rows = []
    with threadpool_limits(1):
        for d in args.dims:
            G = rng.standard_normal((d, d)) / np.sqrt(d)
            A = G @ G.T - np.eye(d)  # eigenvalues in (−1, 3): both signs, as W − ηG
            times = {"syevr": [], "syevd": []}
            for _ in range(args.repeat):  # interleaved: the machine's load hits both alike
                for name, fn in (("syevr", lambda: scipy.linalg.eigh(A)),
                                 ("syevd", lambda: eigh_all(A))):
                    start = time.perf_counter()
                    fn()
                    times[name].append(time.perf_counter() - start)
            lam_r, V_r = scipy.linalg.eigh(A)
            lam_d, V_d = eigh_all(A)
            r, s = (float(np.median(times[k])) for k in ("syevr", "syevd"))
            rows.append({"d": d, "syevr_s": r, "syevd_s": s, "ratio": s / r,
                         "max_eigenvalue_diff": float(np.abs(lam_r - lam_d).max()),
                         "residual_syevr": residual(A, lam_r, V_r),
                         "residual_syevd": residual(A, lam_d, V_d)})
            print(rows[-1], flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(out / "eigh_drivers.csv", index=False)
    print(f"wrote {out / 'eigh_drivers.csv'}")


if __name__ == "__main__":
    main()
