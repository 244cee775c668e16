"""What the optimum of a solver's own problem is worth for 3-NN, on one split of a paper config.

The diagnostic behind the notes that explain a gap by the problem rather than the solver
(``dml_bench/papers/*.yaml``). On one split of a config's dataset (same preprocessing, constraints
and split as the run) it fits the solver and, with ``--cvxpy``, solves the same convex problem
with cvxpy (Clarabel interior point), printing objective, rank and 3-NN test error of both:

- ``xing``: Eq. (1) of Ying & Li (2012), for each cycle cap of ``--cycles``, with the Frank-Wolfe
  gap (an upper bound on optimum − objective);
- ``lmnn``: Eq. (14) of Weinberger & Saul (2009) over *every* (point, target, other-class point)
  triplet, the problem the default LMNN solves by impostor search (d ≤ ~10: the cvxpy problem has
  one hinge per triplet);
- ``dml_eig``: Eq. (3) of Ying & Li (2012), the hard minimum that DML-eig's smoothed f_μ
  approximates, with the solver's ridge (X_S + δI, δ = ridge · tr(X_S)/d).

``--param key=value`` sets a solver parameter for the fits (e.g. ``scale=unit_mean``).

    DMLBENCH_DATA_MIRROR=../shared/datasets python benchmarks/diagnoses/solver_optimum.py \\
        xing configs/ying2012_table4.yaml orl_faces --cycles 1 10 100 --cvxpy
    python benchmarks/diagnoses/solver_optimum.py lmnn configs/shen2014_table1.yaml balance_scale \\
        --cvxpy
    python benchmarks/diagnoses/solver_optimum.py dml_eig configs/ying2012_table4.yaml segment \\
        --cycles 10 100 1000 10000 --param scale=unit_mean --cvxpy
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from dml_bench.experiment.config import parse_scalar
from dml_bench.evaluate import knn_error
from dml_bench.leaderboard.board import experiment_of
from dml_bench.solvers import SOLVERS
from dml_bench.solvers.linalg import components_from_psd
from dml_bench.experiment.knn import all_tasks, prepare_split


def xing_objective(X, y, constraints, M) -> float:
    """Eq. (1): Σ_{(i,j)∈D} sqrt((x_i − x_j)ᵀ M (x_i − x_j))."""
    D = X[constraints.dissimilar[:, 0]] - X[constraints.dissimilar[:, 1]]
    return float(np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", D, M, D), 0)).sum())


def xing_cvxpy(X, y, constraints) -> np.ndarray:
    """argmax of Eq. (1), solved in the coordinates W = V Λ^{-1/2} that whiten X_S on its range.

    Exact reparametrisation M = W M̃ Wᵀ: ⟨X_S, M⟩ = tr M̃ and d_M = d_M̃ on the pairs. Restricting
    to the range of X_S drops the directions no pair moves along (segment's constant column and
    linearly dependent features), where M is free and the interior point method fails.
    """
    import cvxpy as cp

    S = X[constraints.similar[:, 0]] - X[constraints.similar[:, 1]]
    D = X[constraints.dissimilar[:, 0]] - X[constraints.dissimilar[:, 1]]
    w, V = np.linalg.eigh(S.T @ S)
    keep = w > 1e-12 * w.max()
    W = V[:, keep] / np.sqrt(w[keep])
    off = D - D @ V[:, keep] @ V[:, keep].T  # a dissimilar pair outside the range: unbounded
    if np.abs(off).max() > 1e-6 * np.abs(D).max():
        raise ValueError("dissimilar differences outside the range of X_S: Eq. (1) is unbounded")
    D = D @ W
    M = cp.Variable((W.shape[1],) * 2, PSD=True)
    cp.Problem(cp.Maximize(cp.sum(cp.sqrt(cp.sum(cp.multiply(D @ M, D), axis=1)))),
               [cp.trace(M) <= 1]).solve(solver="CLARABEL")
    return W @ ((M.value + M.value.T) / 2) @ W.T


def _every_triplet(y, constraints):
    """Target pairs of the constraints and every (i, j target, l of another class) triplet."""
    targets = np.unique(constraints.triplets[:, :2], axis=0)
    others = [np.flatnonzero(y != y[i]) for i in targets[:, 0]]
    counts = np.array([len(o) for o in others])
    triplets = np.column_stack([np.repeat(targets, counts, axis=0), np.concatenate(others)])
    return targets, triplets


def lmnn_objective(X, y, constraints, M, mu=0.5) -> float:
    """Eq. (14): (1 − μ) Σ_targets d²_M + μ Σ_every triplet [1 + d²_M(i, j) − d²_M(i, l)]₊."""
    targets, T = _every_triplet(y, constraints)

    def sq(a, b):
        Z = X[a] - X[b]
        return np.einsum("ij,jk,ik->i", Z, M, Z)

    hinge = np.maximum(1 + sq(T[:, 0], T[:, 1]) - sq(T[:, 0], T[:, 2]), 0)
    return float((1 - mu) * sq(targets[:, 0], targets[:, 1]).sum() + mu * hinge.sum())


def lmnn_cvxpy(X, y, constraints, mu=0.5) -> np.ndarray:
    """argmin of Eq. (14) over every triplet; ⟨C_ab, M⟩ as a linear form in M's upper triangle."""
    import cvxpy as cp

    targets, T = _every_triplet(y, constraints)
    d = X.shape[1]
    iu = np.triu_indices(d)
    weight = np.where(iu[0] == iu[1], 1.0, 2.0)

    def forms(a, b):
        Z = X[a] - X[b]
        return Z[:, iu[0]] * Z[:, iu[1]] * weight

    M = cp.Variable((d, d), PSD=True)
    m = cp.hstack([M[a, b] for a, b in zip(*iu)])
    pull = forms(targets[:, 0], targets[:, 1]).sum(axis=0)
    push = forms(T[:, 0], T[:, 1]) - forms(T[:, 0], T[:, 2])
    cp.Problem(cp.Minimize((1 - mu) * pull @ m + mu * cp.sum(cp.pos(1 + push @ m)))).solve(
        solver="CLARABEL")
    return (M.value + M.value.T) / 2


def _ridged_similar_sum(X, constraints, ridge=1e-2):
    """X_S + δI with DML-eig's default relative ridge δ = ridge · tr(X_S)/d."""
    S = X[constraints.similar[:, 0]] - X[constraints.similar[:, 1]]
    XS = S.T @ S
    return XS + ridge * np.trace(XS) / len(XS) * np.eye(len(XS))


def dml_eig_objective(X, y, constraints, M) -> float:
    """Eq. (3) at M rescaled to ⟨X_S + δI, M⟩ = 1: min_τ∈D ⟨X_τ, M⟩ / ⟨X_S + δI, M⟩."""
    D = X[constraints.dissimilar[:, 0]] - X[constraints.dissimilar[:, 1]]
    similar = np.sum(_ridged_similar_sum(X, constraints) * M)
    return float(np.einsum("ij,jk,ik->i", D, M, D).min() / similar)


def dml_eig_cvxpy(X, y, constraints) -> np.ndarray:
    """argmax of Eq. (3), as its equivalent min ⟨X_S + δI, M⟩ s.t. ⟨X_τ, M⟩ ≥ 1 (τ ∈ D), M ⪰ 0
    (the optimum of (3) is this M rescaled; the data are rescaled so that tr(X_S + δI) = d)."""
    import cvxpy as cp

    XS = _ridged_similar_sum(X, constraints)
    scale = np.sqrt(np.trace(XS) / len(XS))
    D = (X[constraints.dissimilar[:, 0]] - X[constraints.dissimilar[:, 1]]) / scale
    M = cp.Variable((X.shape[1],) * 2, PSD=True)
    cp.Problem(cp.Minimize(cp.trace(XS / scale**2 @ M)),
               [cp.sum(cp.multiply(D @ M, D), axis=1) >= 1]).solve(solver="CLARABEL")
    return (M.value + M.value.T) / 2


PROBLEMS = {"xing": (xing_objective, xing_cvxpy), "lmnn": (lmnn_objective, lmnn_cvxpy),
            "dml_eig": (dml_eig_objective, dml_eig_cvxpy)}


def rank(M: np.ndarray, rtol: float = 1e-3) -> int:
    w = np.linalg.eigvalsh(M)
    return int((w > rtol * w.max()).sum())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("solver", choices=sorted(PROBLEMS))
    parser.add_argument("config")
    parser.add_argument("dataset", help="a dataset label of the config")
    parser.add_argument("--split", type=int, default=0)
    parser.add_argument("--mu", type=float, default=0.5, help="LMNN's μ")
    parser.add_argument("--cycles", type=int, nargs="+", default=[100],
                        help="iteration caps (max_iter) to fit with")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="a solver parameter for the fits (repeatable)")
    parser.add_argument("--cvxpy", action="store_true", help="also solve the problem with cvxpy")
    parser.add_argument("--out", help="append the rows (one per fit) to this CSV file")
    args = parser.parse_args(argv)
    objective, reference = PROBLEMS[args.solver]
    params = {"mu": args.mu} if args.solver == "lmnn" else {}
    fit_params = dict(params, **{k: parse_scalar(v) for k, v in
                                 (item.split("=", 1) for item in args.param)})
    task = next(t for t in all_tasks(experiment_of(args.config)) if t.dataset.label == args.dataset
                and t.solver.name == args.solver and t.split == args.split)
    X, y, X_test, y_test, constraints, _, _ = prepare_split(task)

    def error(M):
        L = components_from_psd(M)
        return 100 * knn_error(X @ L.T, y, X_test @ L.T, y_test)

    def describe(M, **fields) -> dict:
        row = {"dataset": args.dataset, "split": args.split, **fields,
               "objective": objective(X, y, constraints, M, **params), "rank": rank(M),
               "error": error(M)}
        print(", ".join(f"{k} {v:.6g}" if isinstance(v, float) else f"{k} {v}"
                        for k, v in row.items()))
        return row

    rows = [describe(np.eye(X.shape[1]), method="euclidean")]
    for cap in args.cycles:
        start = time.perf_counter()
        # one BLAS thread, as the board's workers fit: timings compare, and a run beside the
        # board does not oversubscribe the cores (which slowed Xing's cycles 75-fold on USPS)
        with warnings.catch_warnings(), threadpool_limits(1):
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = SOLVERS[args.solver](max_iter=cap, **fit_params).fit(X, y,
                                                                          constraints=constraints)
        rows.append(describe(model.metric_, method=args.solver, params=json.dumps(fit_params),
                             max_iter=cap, n_iter=model.n_iter_,
                             gap=float(model.trace_["gap"][-1]) if "gap" in model.trace_ else None,
                             seconds=time.perf_counter() - start))
    if args.cvxpy:
        start = time.perf_counter()
        M = reference(X, y, constraints, **params)
        rows.append(describe(M, method="cvxpy optimum", seconds=time.perf_counter() - start))
    if args.out:
        out = Path(args.out)
        table = pd.DataFrame(rows)
        table.to_csv(out, mode="a", header=not out.is_file(), index=False)


if __name__ == "__main__":
    main()
