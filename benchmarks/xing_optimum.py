"""How far Xing/MMC gets from the optimum of Eq. (1), and what that optimum is worth for 3-NN.

The diagnostic behind the ``*/xing`` notes of ``dml_bench/papers/ying2012.yaml``: on one split of a
Table 4 dataset (same preprocessing, pairs and split as ``configs/ying2012_table4.yaml``) it fits
``xing`` for each cycle cap given and prints the objective of Eq. (1) at the normalised metric, the
Frank-Wolfe gap (an upper bound on optimum − objective), the rank and the 3-NN test error. With
``--cvxpy`` it also solves Eq. (1) with cvxpy (Clarabel interior point; minutes at d = 64) and
prints the optimum, its rank and its 3-NN error.

    DMLBENCH_DATA_MIRROR=../shared/datasets \\
        python benchmarks/xing_optimum.py orl_faces --cycles 1 10 100 --cvxpy
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from dml_bench.config import load_config
from dml_bench.evaluate import knn_error
from dml_bench.runner import all_tasks, prepare_split
from dml_bench.solvers.linalg import components_from_psd
from dml_bench.solvers.xing import Xing


def eq1_objective(D: np.ndarray, M: np.ndarray) -> float:
    """Σ_{τ∈D} sqrt(d_τᵀ M d_τ) for difference rows ``D``."""
    return float(np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", D, M, D), 0)).sum())


def cvxpy_optimum(S: np.ndarray, D: np.ndarray) -> np.ndarray:
    """argmax of Eq. (1) by cvxpy; rows are rescaled first (the optimum value is scale-free)."""
    import cvxpy as cp

    scale = np.sqrt((S * S).sum() / len(S))
    S, D = S / scale, D / scale
    M = cp.Variable((S.shape[1],) * 2, PSD=True)
    problem = cp.Problem(cp.Maximize(cp.sum(cp.sqrt(cp.sum(cp.multiply(D @ M, D), axis=1)))),
                         [cp.trace(S.T @ S @ M) <= 1])
    problem.solve(solver="CLARABEL")
    return (M.value + M.value.T) / 2 / scale**2


def rank(M: np.ndarray, rtol: float = 1e-3) -> int:
    w = np.linalg.eigvalsh(M)
    return int((w > rtol * w.max()).sum())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", help="dataset label of configs/ying2012_table4.yaml")
    parser.add_argument("--split", type=int, default=0)
    parser.add_argument("--cycles", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--cvxpy", action="store_true", help="also solve Eq. (1) with cvxpy")
    args = parser.parse_args(argv)
    exp = load_config("configs/ying2012_table4.yaml")
    task = next(t for t in all_tasks(exp) if t.dataset.label == args.dataset
                and t.solver.name == "xing" and t.split == args.split)
    X, y, X_test, y_test, constraints, _, _ = prepare_split(task)
    S = X[constraints.similar[:, 0]] - X[constraints.similar[:, 1]]
    D = X[constraints.dissimilar[:, 0]] - X[constraints.dissimilar[:, 1]]

    def error(M):
        L = components_from_psd(M)
        return 100 * knn_error(X @ L.T, y, X_test @ L.T, y_test, k=3)

    print(f"{args.dataset} split {args.split}: n = {len(X)}, d = {X.shape[1]}, {len(S)} similar "
          f"and {len(D)} dissimilar pairs; Euclidean 3-NN error {error(np.eye(X.shape[1])):.2f} %")
    for cycles in args.cycles:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = Xing(max_iter=cycles).fit(X, y, constraints=constraints)
        print(f"xing, {cycles:5d} cycles: objective {eq1_objective(D, model.metric_):.4f}, gap "
              f"{model.trace_['gap'][-1]:.4g}, rank {rank(model.metric_)}, error "
              f"{error(model.metric_):.2f} %, {time.perf_counter() - start:.1f} s")
    if args.cvxpy:
        start = time.perf_counter()
        M = cvxpy_optimum(S, D)
        print(f"cvxpy optimum: objective {eq1_objective(D, M):.4f}, rank {rank(M)}, error "
              f"{error(M):.2f} %, {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
