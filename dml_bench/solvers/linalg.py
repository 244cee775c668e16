"""Constraint algebra shared by the solvers.

Every solver works on rows of pair differences ``D`` (one row per constraint) instead of d×d
matrices per constraint: weighted sums of outer products are one GEMM,
``Σ_τ w_τ (x_i − x_j)(x_i − x_j)ᵀ = Dᵀ diag(w) D``, and Mahalanobis quadratic forms are
computed row-wise.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

#: below this dimension a dense ``eigh`` beats ARPACK's per-call overhead
DENSE_EIGH_MAX_DIM = 64


def pair_differences(X: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Rows ``x_i − x_j`` for every pair ``(i, j)``: shape (n_pairs, d)."""
    return X[pairs[:, 0]] - X[pairs[:, 1]]


def weighted_outer_sum(D: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """``Σ_τ w_τ d_τ d_τᵀ = Dᵀ diag(w) D`` as one GEMM (``w = 1`` when omitted)."""
    return D.T @ D if w is None else (D * w[:, None]).T @ D


def top_eigenvector(D: np.ndarray, w: np.ndarray, v0: np.ndarray | None = None) -> np.ndarray:
    """Unit eigenvector of the largest (algebraic) eigenvalue of ``G = Dᵀ diag(w) D``.

    ``w`` may be signed: ``C = Σ_τ (a_τ a_τᵀ − b_τ b_τᵀ)`` is ``D = [A; B]`` with ``w = [u; −u]``.

    Small ``d`` uses a dense ``eigh`` of G. Otherwise Lanczos (ARPACK ``eigsh``) warm-started at
    ``v0`` (default: a fixed vector; ARPACK's own random start would depend on its earlier calls
    in the process, making results depend on task order): on G formed by one GEMM when there are more rows than ``d / 4``, matrix-free
    (``v ↦ Dᵀ(w ⊙ (D v))``, never forming G) when there are fewer.
    """
    n, d = D.shape
    if d <= DENSE_EIGH_MAX_DIM:
        return np.linalg.eigh(weighted_outer_sum(D, w))[1][:, -1]
    if v0 is None:
        v0 = np.random.default_rng(0).standard_normal(d)
    if n * 4 < d:
        op = LinearOperator((d, d), matvec=lambda v: D.T @ (w * (D @ v.ravel())), dtype=D.dtype)
    else:
        op = weighted_outer_sum(D, w)
    try:
        return eigsh(op, k=1, which="LA", v0=v0, tol=1e-10)[1][:, 0]
    except ArpackNoConvergence:  # rare: fall back to the exact dense solution
        G = weighted_outer_sum(D, w)
        return scipy.linalg.eigh(G, subset_by_index=[d - 1, d - 1])[1][:, 0]


def components_from_psd(S: np.ndarray, right: np.ndarray | None = None) -> np.ndarray:
    """``L`` with ``LᵀL = right_factorᵀ S right_factor`` for a PSD ``S``.

    Returns ``Λ^{1/2} Uᵀ`` (times ``right`` when given) from ``S = U Λ Uᵀ``, with round-off
    negative eigenvalues clipped to zero and rows ordered by decreasing eigenvalue.
    """
    lam, U = scipy.linalg.eigh((S + S.T) / 2)
    L = (np.sqrt(np.clip(lam, 0.0, None)) * U).T[::-1]
    return L if right is None else L @ right
