"""Incremental eigen-update of a low-rank symmetric matrix (Brand 2006; Zhang & Zhang 2017).

``W = U diag(s) Uᵀ`` (``U`` d×r with orthonormal columns) is updated by a signed low-rank term
``A diag(w) Aᵀ`` (``A`` d×c, ``w`` signed) without ever forming a d×d matrix. Following the
"Incremental SVD" paragraph of Zhang & Zhang (2017), written there for ``W − AAᵀ``:

* ``P`` is an orthonormal basis of the part of ``A`` orthogonal to ``U``, ``(I − UUᵀ)A = P R_A``
  (QR, then an SVD of its c×c triangle to reveal the rank; columns of ``A`` that already lie
  in span(U) give no new direction, so ``p = cols(P) ≤ c`` and may be 0);
* ``[U A] = [U P] [[I, UᵀA], [0, R_A]]``, hence ``W + A diag(w) Aᵀ = [U P] K [U P]ᵀ`` with the
  (r+p)×(r+p) matrix

      K = [[diag(s), 0], [0, 0]] + [UᵀA; R_A] diag(w) [UᵀA; R_A]ᵀ

  (the paper's K with ``w = −1``);
* ``K = Û Σ̂ Ûᵀ`` (a small dense ``eigh``) and ``W + A diag(w) Aᵀ = ([U P] Û) Σ̂ ([U P] Û)ᵀ``.

Cost O(d(r + c)² + (r + c)³) time and O(d(r + c)) memory.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg


def eigen_update(U: np.ndarray, s: np.ndarray, A: np.ndarray, w: np.ndarray,
                 rtol: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
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
        only the non-zero eigenvalues, footnote 1 of the paper); directions of ``A`` whose
        component orthogonal to ``U`` is below ``rtol`` relative to ``‖A‖`` are treated as lying
        in span(U).

    Returns
    -------
    U_new : ndarray of shape (d, r')
        Orthonormal eigenvectors, ordered by decreasing eigenvalue.
    s_new : ndarray of shape (r',)
        The non-negligible eigenvalues, decreasing.
    """
    d, r = U.shape
    w = np.asarray(w, dtype=float)
    if A.shape[1] == 0:
        return U, s
    UtA = U.T @ A                                   # r×c
    R = A - U @ UtA                                 # (I − UUᵀ)A, d×c
    corr = U.T @ R                                  # one re-orthogonalisation (classical GS twice)
    R -= U @ corr
    UtA += corr
    # rank-revealing QR of R: blocked Householder QR (LAPACK geqrf, BLAS-3; column pivoting is
    # BLAS-2 and several times slower at d = 20 000), then an SVD of the small c×c triangle
    Q, Rq = scipy.linalg.qr(R, mode="economic", overwrite_a=True, check_finite=False)
    try:
        Ur, sv, Vrt = scipy.linalg.svd(Rq, check_finite=False)
    except np.linalg.LinAlgError:  # gesdd can fail on exactly rank-deficient triangles
        Ur, sv, Vrt = scipy.linalg.svd(Rq, check_finite=False, lapack_driver="gesvd")
    scale = max(np.abs(A).max(), np.finfo(float).tiny) * np.sqrt(d)
    p = int(np.sum(sv > rtol * scale))
    P = Q @ Ur[:, :p]                               # orthonormal basis of (I − UUᵀ)A
    RA = sv[:p, None] * Vrt[:p]                     # P R_A = (I − UUᵀ)A
    B = np.vstack([UtA, RA])                  # [UᵀA; R_A], (r+p)×c
    K = (B * w) @ B.T
    K[np.arange(r), np.arange(r)] += s
    theta, V = scipy.linalg.eigh((K + K.T) / 2)
    order = np.argsort(theta)[::-1]
    theta, V = theta[order], V[:, order]
    keep = np.abs(theta) > rtol * max(np.abs(theta).max(initial=0.0), np.finfo(float).tiny)
    theta, V = theta[keep], V[:, keep]
    U_new = U @ V[:r] + P @ V[r:]                   # [U P] Û without concatenating [U P]
    return U_new, theta
