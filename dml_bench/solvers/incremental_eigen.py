"""Incremental eigen-update of a low-rank symmetric matrix (Brand 2006; Zhang & Zhang 2017).

``W = U diag(s) Uᵀ`` (``U`` d×r with orthonormal columns) is updated by a signed low-rank term
``A diag(w) Aᵀ`` (``A`` d×c, ``w`` signed) without ever forming a d×d matrix. Following the
"Incremental SVD" paragraph of Zhang & Zhang (2017), written there for ``W − AAᵀ``:

* ``P`` (orthonormal columns) and ``R_A`` are the QR factors of the part of ``A`` orthogonal to
  ``U``, ``(I − UUᵀ)A = P R_A`` (Householder, ``p = cols(P) = min(c, d)``; ``P`` is kept as its
  reflectors);
* ``[U A] = [U P] [[I, UᵀA], [0, R_A]]``, hence ``W + A diag(w) Aᵀ = [U P] K [U P]ᵀ`` with the
  (r+p)×(r+p) matrix

      K = [[diag(s), 0], [0, 0]] + [UᵀA; R_A] diag(w) [UᵀA; R_A]ᵀ

  (the paper's K with ``w = −1``);
* ``K = Û Σ̂ Ûᵀ`` (a small dense ``eigh``) and ``W + A diag(w) Aᵀ = ([U P] Û) Σ̂ ([U P] Û)ᵀ``,
  with ``[U P] Û = U Û_U + P Û_P`` (the reflectors applied to ``Û_P``).

Columns of ``A`` that already lie in span(U), or in the span of other columns (a mini-batch
sampled with replacement repeats difference rows), give no new direction: QR still returns an
orthonormal column of ``P`` for them, but its row of ``R_A`` is zero up to rounding, so it only
adds an eigenvalue 0 of K, which is dropped, and the kept eigenvectors of K have no component on
it (up to rounding). No rank-revealing factorisation is needed.

Cost O(d(r + c)² + (r + c)³) time and O(d(r + c)) memory.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

from .linalg import eigh_all

#: block size of the compact WY Householder QR (geqrt)
_QR_BLOCK = 32


def eigen_update(U: np.ndarray, s: np.ndarray, A: np.ndarray, w: np.ndarray,
                 rtol: float = 1e-12, lower: float = -np.inf) -> tuple[np.ndarray, np.ndarray]:
    """Eigendecomposition of ``U diag(s) Uᵀ + A diag(w) Aᵀ`` by the K matrix of Brand (2006).

    Parameters
    ----------
    U : ndarray of shape (d, r)
        Orthonormal columns (r may be 0).
    s : ndarray of shape (r,)
        Eigenvalues of the current matrix (any sign).
    A : ndarray of shape (d, c)
        Columns of the update.
    w : ndarray of shape (c,)
        Signed weights of the update's columns.
    rtol : float, default=1e-12
        Eigenvalues with ``|θ| ≤ rtol · max(|θ|)`` are dropped (the compact decomposition keeps
        only the non-zero eigenvalues, footnote 1 of the paper; this also drops the directions
        of ``A`` that are not new, see the module docstring).
    lower : float, default=-inf
        Eigenvalues ``θ ≤ lower`` are dropped too, and their eigenvectors are never formed (SGD-
        IncSVD keeps only ``θ > ηλ``).

    Returns
    -------
    U_new : ndarray of shape (d, r')
        Orthonormal eigenvectors, ordered by decreasing eigenvalue.
    s_new : ndarray of shape (r',)
        The kept eigenvalues, decreasing.
    """
    r = U.shape[1]
    if A.shape[1] == 0:
        keep = s > lower
        return U[:, keep], s[keep]
    d, c = A.shape
    UtA = U.T @ A                                   # r×c
    R = A - U @ UtA                                 # (I − UUᵀ)A, d×c
    corr = U.T @ R                                  # one re-orthogonalisation (classical GS twice)
    R -= U @ corr
    UtA += corr
    # P R_A = R by a Householder QR in compact WY form (LAPACK geqrt, BLAS-3 at any c, where
    # geqrf is unblocked below c = 128); P is only ever applied (gemqrt), never formed
    p = min(d, c)
    H, T, info = lapack.dgeqrt(min(p, _QR_BLOCK), R, overwrite_a=True)
    _check(info, "geqrt")
    B = np.vstack([UtA, np.triu(H[:p])])            # [UᵀA; R_A], (r+p)×c
    K = (B * np.asarray(w, dtype=float)) @ B.T
    K[np.arange(r), np.arange(r)] += s
    theta, V = eigh_all(K)
    tiny = rtol * max(np.abs(theta).max(initial=0.0), np.finfo(float).tiny)
    keep = np.flatnonzero((np.abs(theta) > tiny) & (theta > lower))[::-1]   # decreasing θ
    V = V[:, keep]
    PV = np.zeros((d, len(keep)), order="F")
    PV[:p] = V[r:]
    PV, info = lapack.dgemqrt(H[:, :p], T, PV, overwrite_c=True)     # P V[r:] = Q [V[r:]; 0]
    _check(info, "gemqrt")
    return U @ V[:r] + PV, theta[keep]              # [U P] Û without forming [U P]


def _check(info: int, routine: str):
    if info:
        raise np.linalg.LinAlgError(f"LAPACK {routine} failed (info = {info})")
