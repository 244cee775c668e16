"""The Frank–Wolfe vertex of DML-eig and LMNN-eig on a large data set: formed Gram matrix or
matrix-free Lanczos, measured along the board's own fit.

Each iteration of DML-eig (Ying & Li 2012, Table 1) and LMNN-eig (Table 2) takes the top
eigenvector of ``G(w) = Σ_r w_r z_r z_rᵀ`` over the pair differences (Eqs. (20) and (24)).
:class:`~dml_bench.solvers.top_eigen.GramTopEigenvector` forms ``G = X̄ᵀ L_w X̄`` (one n×d×d
product) and runs Lanczos on it, warm-started at the previous vertex. The matrix-free route
runs the same Lanczos (ARPACK ``eigsh``, ``which="LA"``, same tolerance and warm start) on
``v ↦ X̄ᵀ L_w (X̄ v)`` without forming G: each product streams X̄ twice, so it wins only while
Lanczos needs fewer products than the GEMM costs.

This script fits the board's first fit of a cell (split 0, its first tuning fold and grid point:
:func:`budget_recheck.cell_fit`) with one BLAS thread, and at each checkpoint iteration solves
the same eigenproblem both ways, for the same weights: the formed route's seconds for the whole
call (G, its eigenvector and the pairs' projections), the matrix-free route's seconds for the
eigenvector and the projections, its number of products, the two eigenvalues and ``|cos|``
between the two vectors; and the fit's seconds without the matrix-free solves. One row per
checkpoint in ``results/leaderboard_diagnosis/eigen_route.csv``, with the precision of the fit's
points (a rerun replaces the cell's rows of the same precision).

    DMLBENCH_DATA_MIRROR=../shared/datasets python benchmarks/diagnoses/eigen_route.py \\
        mnist dml_eig --float32
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.sparse.linalg import LinearOperator, eigsh
from threadpoolctl import threadpool_limits

from dml_bench.experiment.knn import fit_task_solver, prepare_split
from dml_bench.leaderboard.board import load_board
from dml_bench.run.execution import cpu_model, utc_now
from dml_bench.solvers import top_eigen
from dml_bench.solvers.linalg import pair_sq_distances

sys.path.insert(0, str(Path(__file__).parent))
from budget_recheck import cell_fit, fit_task, replace_rows  # noqa: E402

OUT = Path("results/leaderboard_diagnosis/eigen_route.csv")
CHECKPOINTS = (1, 2, 3, 5, 10, 20, 50, 100, 200, 300, 500, 700, 1000)


def matrix_free_vertex(vertex, w: np.ndarray, v0: np.ndarray | None) -> dict:
    """The vertex of ``G(w)`` by Lanczos on ``v ↦ X̄ᵀ L_u (X̄ v)`` (u: the weights kept), as
    :func:`top_eigen.symmetric_top_eigenvector` runs it on the formed G, with the pairs'
    squared projections: its seconds, products and eigenvalue."""
    X, pairs = vertex._laplacian.X, vertex.pairs
    u = np.where(np.abs(w) >= vertex.threshold * np.abs(w).max(), w, 0.0).astype(X.dtype)
    a, b = pairs[:, 0], pairs[:, 1]
    products = 0

    def product(v):
        nonlocal products
        products += 1
        z = X @ v.ravel().astype(X.dtype)
        r = u * (z[a] - z[b])
        lz = np.bincount(a, r, minlength=len(X)) - np.bincount(b, r, minlength=len(X))
        return (X.T @ lz.astype(X.dtype)).astype(np.float64)

    d = X.shape[1]
    start = time.perf_counter()
    lam, V = eigsh(LinearOperator((d, d), matvec=product, dtype=np.float64), k=1, which="LA",
                   v0=top_eigen._start_vector(d, v0), tol=1e-10)
    v = V[:, 0]
    pair_sq_distances((X @ v.astype(X.dtype))[:, None], pairs)
    return dict(v=v, seconds=time.perf_counter() - start, products=products, lam=float(lam[0]))


def instrument(rows: list, checkpoints: set) -> None:
    """Wrap :class:`GramTopEigenvector`'s call: at the checkpoint calls, time it and solve the same
    problem matrix-free (only on its pair-Laplacian branch, the one large data sets take)."""
    formed = top_eigen.GramTopEigenvector.__call__

    def call(vertex, w):
        vertex._calls = getattr(vertex, "_calls", 0) + 1
        if vertex._calls not in checkpoints or vertex._laplacian is None:
            return formed(vertex, w)
        v0 = vertex._v
        start = time.perf_counter()
        v, p, lam = formed(vertex, w)
        seconds = time.perf_counter() - start
        free = matrix_free_vertex(vertex, w, v0)
        rows.append(dict(iteration=vertex._calls, precision=str(vertex._laplacian.X.dtype),
                         formed_seconds=seconds,
                         free_seconds=free["seconds"], free_products=free["products"],
                         formed_lambda=lam, free_lambda=free["lam"],
                         abs_cos=abs(float(v @ free["v"]))))
        print(json.dumps(rows[-1]), flush=True)
        return v, p, lam

    top_eigen.GramTopEigenvector.__call__ = call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("label", choices=["dml_eig", "lmnn_eig"])
    parser.add_argument("--config", default="configs/leaderboard.yaml")
    parser.add_argument("--float32", action="store_true",
                        help="give the solver the points in float32 (a solver that does not "
                             "preserve float32 fits in float64: the rows' precision is the "
                             "one the fit used)")
    parser.add_argument("--max-iter", type=int, default=1000)
    args = parser.parse_args()
    fit = cell_fit(load_board(args.config).experiment, args.dataset, args.label)
    task, fold = fit_task(fit, max_iter=args.max_iter)
    rows: list = []
    instrument(rows, {c for c in CHECKPOINTS if c <= args.max_iter + 1})
    with threadpool_limits(limits=1):
        X_fit, y_fit, *_, constraints, _, _ = prepare_split(task, fold)
        if args.float32:
            X_fit = X_fit.astype(np.float32)
        _, wall, _ = fit_task_solver(task, X_fit, y_fit, constraints)
    log = pd.DataFrame(rows).assign(
        dataset=args.dataset, label=args.label, fold=fit.fold_name,
        params=json.dumps(dict(fit.point)), n_fit=len(X_fit),
        fit_seconds=wall - sum(r["free_seconds"] for r in rows), cpu_model=cpu_model(),
        measured_at=utc_now())
    replace_rows(OUT, log, ["dataset", "label", "precision"])
    print(f"{args.dataset} × {args.label} ({log.precision.iloc[0]}): "
          f"fit {log.fit_seconds.iloc[0]:.0f} s "
          "without the matrix-free solves", flush=True)


if __name__ == "__main__":
    main()
