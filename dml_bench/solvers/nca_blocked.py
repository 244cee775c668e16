"""NCA's loss and gradient over blocks of rows: memory linear in the number of points.

Part of the solver stage. scikit-learn's NCA forms its soft-neighbour probabilities as n×n
arrays (about five alive at once, 7.8 GB at n = 14,000) and a boolean n×n same-class mask.
The loss ``Σ_i p_i``, ``p_i = Σ_{j: y_j = y_i} p_ij``, and its gradient are sums over rows i,
so they are accumulated here over blocks of ``b`` rows, each block's arrays b×n:

- the block's squared distances in the embedding ``Z = X Lᵀ`` (the diagonal set to +∞), their
  row softmax ``P_B`` and its same-class part ``P_B ∘ [y_i = y_j]``, whose row sums are ``p_B``;
- ``W_B = P_B ∘ [y_i = y_j] − p_B P_B`` (rows that sum to zero);
- the gradient ``2 Zᵀ (W + Wᵀ − diag(colsum W)) X`` (Goldberger et al.'s gradient, as
  scikit-learn arranges it), as ``Σ_B Z_Bᵀ (W_B X) + (W_B Z)ᵀ X_B`` and the column sums of W
  carried across blocks.

The same sums as scikit-learn's ``NeighborhoodComponentsAnalysis._loss_grad_lbfgs``, in another
order (rounding only); ``tests/test_nca_blocked.py`` checks both against each other.

References
----------
J. Goldberger, S. Roweis, G. Hinton, R. Salakhutdinov. Neighbourhood components analysis.
NIPS 17, 2005.
"""

from __future__ import annotations

import numpy as np

#: bytes of one b×n float64 block array: about 16 MB keeps a block's few arrays in cache-sized
#: pieces while each GEMM still has b ≥ 64 rows
BLOCK_BYTES = 16 * 2**20


def block_rows(n: int, block_bytes: int | None = None) -> int:
    """Rows per block for n points: ``block_bytes / (8 n)`` (default :data:`BLOCK_BYTES`), at
    least 64 and at most n."""
    block_bytes = BLOCK_BYTES if block_bytes is None else block_bytes
    return int(min(n, max(64, block_bytes // (8 * max(n, 1)))))


def nca_loss_grad(transformation: np.ndarray, X: np.ndarray, y: np.ndarray, sign: float = 1.0,
                  block: int | None = None) -> tuple[float, np.ndarray]:
    """``(sign · Σ_i p_i, sign · ∂/∂L)`` at ``L = transformation.reshape(-1, d)``, by row blocks.

    The arguments and results of scikit-learn's ``_loss_grad_lbfgs`` (with the labels y in place
    of its n×n mask); ``block`` rows at a time (default :func:`block_rows`).
    """
    n, d = X.shape
    L = transformation.reshape(-1, d)
    Z = X @ L.T                                        # n×k embedding
    sq = np.einsum("ij,ij->i", Z, Z)
    b = block or block_rows(n)
    loss = 0.0
    grad = np.zeros_like(L)
    colsum = np.zeros(n)
    for lo in range(0, n, b):
        rows = slice(lo, min(lo + b, n))
        D = Z[rows] @ Z.T
        D *= -2.0
        D += sq[rows, None]
        D += sq[None, :]
        np.maximum(D, 0.0, out=D)
        D[np.arange(D.shape[0]), np.arange(rows.start, rows.stop)] = np.inf
        np.negative(D, out=D)
        D -= D.max(axis=1, keepdims=True)
        P = np.exp(D, out=D)
        P /= P.sum(axis=1, keepdims=True)              # row softmax of −distances
        same = y[rows, None] == y[None, :]
        p = np.einsum("ij,ij->i", P, same)             # Σ_{j same class} p_ij
        loss += p.sum()
        W = np.subtract(same, p[:, None])
        W *= P                                         # W_ij = p_ij ([y_i = y_j] − p_i)
        grad += Z[rows].T @ (W @ X) + (W @ Z).T @ X[rows]
        colsum += W.sum(axis=0)
    grad -= (Z * colsum[:, None]).T @ X
    return sign * loss, sign * 2.0 * grad.ravel()
