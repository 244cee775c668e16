"""Leading eigenvectors of symmetric matrices: the Frank–Wolfe vertices of the spectrahedron.

The maximiser of ``⟨G, S⟩`` over ``{S ⪰ 0, tr S = 1}`` is ``v vᵀ`` for the top eigenvector v of
G: the vertex of DML-eig and LMNN-eig (Ying & Li 2012, Tables 1 and 2), of SDPMetric's step (7)
(Shen, Kim & Wang 2010) and BoostMetric's base learner (Shen et al. 2012, Algorithm 2). G is a
weighted sum of outer products of pair differences (:mod:`.linalg`): :class:`GramTopEigenvector`
forms it for new weights on fixed pairs, :func:`top_eigenvector` from difference rows
(matrix-free, by Lanczos, where the rows are few), :func:`leading_eigenvector` is LAPACK's
``dsyevr`` for one eigenpair, and :func:`compiled_gram_top_eigenvector` all of it in one compiled
call.

References
----------
Y. Ying and P. Li. Distance metric learning with eigenvalue optimization. JMLR 13:1–26, 2012.
C. Shen, J. Kim and L. Wang. Scalable large-margin Mahalanobis distance metric learning. IEEE
Trans. Neural Networks 21(9):1524–1530, 2010. C. Shen, J. Kim, L. Wang and A. van den Hengel.
Positive semidefinite metric learning using boosting-like algorithms. JMLR 13:1007–1036, 2012.
"""

from __future__ import annotations

import ctypes

import numpy as np
import scipy.linalg.lapack
from numba import njit
from numba.extending import get_cython_function_address
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

from .linalg import (JIT_OPTIONS, REDUCTION_JIT_OPTIONS, PairOuterSum, pair_differences,
                     pair_sq_distances, weighted_outer_sum)

#: below this dimension a dense ``eigh`` beats ARPACK's per-call overhead
DENSE_EIGH_MAX_DIM = 64

#: up to this dimension :class:`GramTopEigenvector` forms its d×d matrix in a compiled pass over
#: the transposed difference rows, where a BLAS GEMM spends more on packing the narrow (n × d)
#: operand than its blocked kernel saves; above it, the GEMM is the faster
COMPILED_GRAM_MAX_DIM = 24

#: :class:`GramTopEigenvector` forms its matrix from the pair Laplacian (a sparse product and an
#: n×d×d GEMM) where that saves more than this many flops per call over the product on the
#: difference rows: about the Laplacian's fixed per-call cost, below which the saving is lost
LAPLACIAN_MIN_SAVING = 1e6


def top_eigenvector(D: np.ndarray, w: np.ndarray | None, v0: np.ndarray | None = None
                    ) -> np.ndarray:
    """Unit eigenvector of the largest (algebraic) eigenvalue of ``G = Dᵀ diag(w) D``.

    ``w`` may be signed: ``C = Σ_τ (a_τ a_τᵀ − b_τ b_τᵀ)`` is ``D = [A; B]`` with ``w = [u; −u]``;
    ``None`` means unit weights (``G = DᵀD``, for rows already scaled by ``√w``).

    G is formed by one GEMM (:func:`symmetric_top_eigenvector`), except with fewer rows than
    ``d / 4`` above ``DENSE_EIGH_MAX_DIM``: then Lanczos runs matrix-free
    (``v ↦ Dᵀ(w ⊙ (D v))``, never forming G), warm-started at ``v0``.

    A float32 ``D`` keeps the products over its rows in single precision; G (d×d) and the
    eigensolver are double precision, and so is the returned vector.
    """
    n, d = D.shape
    if d > DENSE_EIGH_MAX_DIM and n * 4 < d:
        wd = 1 if w is None else w.astype(D.dtype, copy=False)
        op = LinearOperator((d, d), dtype=np.float64, matvec=lambda v: (
            D.T @ (wd * (D @ v.ravel().astype(D.dtype, copy=False)))).astype(np.float64))
        try:
            return eigsh(op, k=1, which="LA", v0=_start_vector(d, v0), tol=1e-10)[1][:, 0]
        except ArpackNoConvergence:  # rare: fall back to the exact dense solution
            pass
    return symmetric_top_eigenvector(weighted_outer_sum(D, w).astype(np.float64, copy=False), v0)


def symmetric_top_eigenvector(G: np.ndarray, v0: np.ndarray | None = None) -> np.ndarray:
    """Unit eigenvector of the largest eigenvalue of the symmetric d×d matrix ``G``: LAPACK
    (:func:`leading_eigenvector`) up to ``DENSE_EIGH_MAX_DIM``, where it beats ARPACK's per-call
    overhead, else Lanczos (ARPACK ``eigsh``) warm-started at ``v0`` (default: a fixed vector;
    ARPACK's own random start would depend on its earlier calls in the process, making results
    depend on task order), with the dense solution where it does not converge (rare)."""
    d = G.shape[0]
    if d <= DENSE_EIGH_MAX_DIM:
        return leading_eigenvector(G)
    try:
        return eigsh(G, k=1, which="LA", v0=_start_vector(d, v0), tol=1e-10)[1][:, 0]
    except ArpackNoConvergence:
        return leading_eigenvector(G)


def _start_vector(d: int, v0: np.ndarray | None) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(d) if v0 is None else v0


def leading_eigenvector(G: np.ndarray) -> np.ndarray:
    """Unit eigenvector of the largest eigenvalue of the symmetric d×d matrix ``G`` (its lower
    triangle is read), in double precision.

    LAPACK ``dsyevr`` for that one eigenpair: exact and deterministic (no start vector), and,
    called directly, without the per-call overhead of ``numpy.linalg.eigh`` (which also computes
    every other eigenpair), the larger part of a Frank–Wolfe iteration on a small data set.
    """
    d = G.shape[0]
    _, vectors, _, _, info = scipy.linalg.lapack.dsyevr(
        np.asarray(G, dtype=np.float64), compute_v=1, range="I", il=d, iu=d, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"LAPACK dsyevr failed (info = {info})")
    return vectors[:, 0]


class GramTopEigenvector:
    """Top eigenvector of ``G(w) = Σ_r w_r z_r z_rᵀ`` over the pair differences
    ``z_r = x_a − x_b`` of fixed points and pairs, for weights ``w`` (possibly signed) that change
    every call, with the squared projections ``(z_rᵀ v)²`` of every pair: the Frank–Wolfe vertex
    of DML-eig (Ying & Li 2012, Table 1 and Eq. (20)) and of LMNN-eig (Table 2 and Eq. (24)).
    One instance per fit.

    Pairs with ``|w_r| < threshold · max|w|`` are left out of ``G`` (their total contribution is
    below ``n_pairs · threshold`` of the largest term). How ``G`` is formed depends on the shape:

    - ``d ≤ COMPILED_GRAM_MAX_DIM``: the lower triangle of ``G`` and the projections are compiled
      passes over the transposed difference rows (contiguous per feature, so the sums over rows
      vectorise), accumulated in float64 also for float32 points;
    - where :func:`uses_pair_laplacian` (it saves flops: many more pairs than points):
      ``G = X̄ᵀ L_u X̄`` with the pairs' weighted graph Laplacian (:class:`PairOuterSum`: one
      sparse product and one n×d×d GEMM instead of an n_pairs×d×d one), and the projections
      ``((X̄v)_a − (X̄v)_b)²`` from one n×d product;
    - otherwise one BLAS product over the difference rows kept (for ``w ≥ 0`` gathered and scaled
      by ``√w``, for ``syrk``, into a buffer as large as the rows that every call reuses), the
      projections one GEMV, in the points' precision.

    The eigenvector is :func:`symmetric_top_eigenvector` (Lanczos warm-started at the previous
    call's vector above ``DENSE_EIGH_MAX_DIM``).

    Lanczos is not run matrix-free on the points (``v ↦ X̄ᵀ L_u X̄ v``) instead of forming ``G``:
    as Frank–Wolfe closes the gap, the top eigenvalues of the gradient draw together, and
    Lanczos needs ever more products, each streaming the points twice. Along DML-eig's fit on
    MNIST (32,670 points in float32) it needed 21–41 products at the first steps, 111 at step
    100 and 411 at step 1,000, 0.3–5.4 s against about 0.5 s for forming ``G`` and its
    eigenvector (``benchmarks/diagnoses/eigen_route.py``).

    Parameters
    ----------
    points : ndarray (n, d)
    pairs : ndarray (n_pairs, 2)
        Rows ``(a, b)``: the pair differences ``points[a] − points[b]``.
    threshold : float
        Relative weight below which a pair is left out of ``G``.
    signed : bool, default=False
        Whether the weights may be negative (LMNN-eig), which makes the product on the rows a
        GEMM instead of a ``syrk``.

    Attributes
    ----------
    compiled : tuple or None
        In the compiled branch, the arguments ``(rows_t, dsyevr, workspace)`` that
        :func:`compiled_gram_top_eigenvector` takes before ``w``, so that a compiled solver loop
        can call it without a return to Python; None in the other branches.
    """

    def __init__(self, points: np.ndarray, pairs: np.ndarray, threshold: float,
                 signed: bool = False):
        self.pairs = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
        self.threshold = threshold
        n, d = points.shape
        self._v, self._buffer = None, None  # the Lanczos warm start; the rows scaled by √w
        self._rows = self._laplacian = self.compiled = None
        if d <= COMPILED_GRAM_MAX_DIM:
            self.compiled = (np.ascontiguousarray(pair_differences(points, self.pairs).T),
                             DSYEVR, top_eigenpair_workspace(d))
        elif uses_pair_laplacian(n, len(self.pairs), d, signed):
            self._laplacian = PairOuterSum(points, self.pairs)
        else:
            self._rows = pair_differences(points, self.pairs)

    def __call__(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """``(v, p, λ)``: the unit top eigenvector ``v`` of ``G(w)`` (float64), ``p_r = (z_rᵀ v)²``
        for every pair (float64) and ``λ = vᵀ G(w) v = Σ_{r kept} w_r p_r``, its eigenvalue."""
        if self.compiled is not None:
            p = np.empty(len(w))
            v, lam = compiled_gram_top_eigenvector(*self.compiled, w, self.threshold, p)
            return v, p, lam
        keep_min = self.threshold * np.abs(w).max()
        kept = np.abs(w) >= keep_min
        if self._laplacian is not None:
            u = np.where(kept, w, 0.0)
            G = self._laplacian(u).astype(np.float64, copy=False)
            v = self._v = symmetric_top_eigenvector(G, v0=self._v)
            projected = self._laplacian.X @ v.astype(self._laplacian.X.dtype)
            p = pair_sq_distances(projected[:, None], self.pairs)
            return v, p, float(u @ p)
        keep = np.flatnonzero(kept)
        Z = self._rows
        if w.min() >= 0:  # G = YᵀY, Y = diag(√w) Z over the rows kept: syrk
            if self._buffer is None:
                self._buffer = np.empty_like(Z)
            Y = self._buffer[:len(keep)]
            np.take(Z, keep, axis=0, out=Y)
            Y *= np.sqrt(w[keep].astype(Y.dtype))[:, None]
            v = top_eigenvector(Y, None, v0=self._v)
        else:
            v = top_eigenvector(Z if len(keep) == len(w) else Z[keep], w[keep], v0=self._v)
        self._v = v
        p = (Z @ v.astype(Z.dtype)).astype(np.float64) ** 2
        return v, p, float(w[keep] @ p[keep])


def uses_pair_laplacian(n: int, n_pairs: int, d: int, signed: bool) -> bool:
    """Whether :class:`GramTopEigenvector` forms ``Σ_r w_r z_r z_rᵀ`` over ``n_pairs`` pair
    differences of ``n`` points in ``d > COMPILED_GRAM_MAX_DIM`` from the pair Laplacian: when its
    ``2 n d²`` flops undercut the rows' product (``n_pairs d²`` for a ``syrk``, twice that for
    signed weights) by more than ``LAPLACIAN_MIN_SAVING``. Not where the rows are so few that
    :func:`top_eigenvector` never forms the matrix (``4 n_pairs < d``: Lanczos on the rows, cheaper
    than forming any d×d matrix)."""
    if d > DENSE_EIGH_MAX_DIM and 4 * n_pairs < d:
        return False
    rows = (2 if signed else 1) * n_pairs * d ** 2
    return rows - 2 * n * d ** 2 > LAPLACIAN_MIN_SAVING


#: LAPACK ``dsyevr`` as a C function pointer (scipy's ``cython_lapack``), for compiled code to call
#: without returning to Python. It is passed to the compiled functions as an argument: a global
#: ctypes pointer would stop numba from caching them on disk
DSYEVR = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 21)(
    get_cython_function_address("scipy.linalg.cython_lapack", "dsyevr"))


def top_eigenpair_workspace(d: int) -> tuple:
    """The arrays that :func:`compiled_top_eigenpair` passes to ``dsyevr`` for a d×d matrix: the
    matrix (overwritten), the eigenvector, the eigenvalue, the real and integer work arrays,
    the integer and real scalar arguments, and ``jobz``, ``range``, ``uplo`` = V, I, L (the
    ``il = iu = d``-th eigenpair: the largest)."""
    ints = np.array([d, d, d, d, 0, d, 26 * d, 10 * d, 0, 0, 0], dtype=np.int32)
    # n, lda, il, iu, m (out), ldz, lwork, liwork, info (out), isuppz[2]
    return (np.empty((d, d)), np.empty(d), np.empty(d), np.empty(26 * d),
            np.empty(10 * d, dtype=np.int32), ints, np.zeros(3),
            np.frombuffer(b"VIL", dtype=np.uint8).copy())


@njit(**JIT_OPTIONS)
def compiled_top_eigenpair(dsyevr, workspace):
    """Compiled :func:`leading_eigenvector`: the largest eigenvalue and its unit eigenvector of the
    symmetric matrix in ``workspace[0]`` (a :func:`top_eigenpair_workspace`; both triangles
    filled, as LAPACK reads the C array's upper one; overwritten) by LAPACK ``dsyevr``. Returns
    ``(λ, v)``, ``v`` a view of the workspace."""
    G, v, lam, work, iwork, ints, reals, chars = workspace
    dsyevr(chars[0:].ctypes, chars[1:].ctypes, chars[2:].ctypes, ints[0:].ctypes, G.ctypes,
           ints[1:].ctypes, reals[0:].ctypes, reals[1:].ctypes, ints[2:].ctypes, ints[3:].ctypes,
           reals[2:].ctypes, ints[4:].ctypes, lam.ctypes, v.ctypes, ints[5:].ctypes,
           ints[9:].ctypes, work.ctypes, ints[6:].ctypes, iwork.ctypes, ints[7:].ctypes,
           ints[8:].ctypes)
    if ints[8] != 0:
        raise np.linalg.LinAlgError("LAPACK dsyevr failed")
    return lam[0], v


@njit(**JIT_OPTIONS)
def compiled_gram_top_eigenvector(rows_t, dsyevr, workspace, w, threshold, p):
    """The compiled branch of :class:`GramTopEigenvector` in one call: ``G`` over the pairs with
    ``|w_r| ≥ threshold · max|w|`` from the transposed rows ``rows_t`` (d, n_pairs), its top
    eigenvector ``v`` (a copy), the squared projections ``p_r = (z_rᵀ v)²`` of every pair into
    ``p``, and ``λ = Σ_{r kept} w_r p_r``. Returns ``(v, λ)``."""
    w_max = 0.0
    for r in range(w.shape[0]):
        w_max = max(w_max, abs(w[r]))
    keep_min = threshold * w_max
    G = workspace[0]
    _masked_gram_lower(rows_t, w, keep_min, G)
    d = G.shape[0]
    for i in range(d):
        for j in range(i):
            G[j, i] = G[i, j]
    v = compiled_top_eigenpair(dsyevr, workspace)[1].copy()
    return v, _squared_projections(rows_t, v, w, keep_min, p)


@njit(**REDUCTION_JIT_OPTIONS)
def _masked_gram_lower(rows_t, w, keep_min, gram):
    """Lower triangle of ``Σ_{|w_r| ≥ keep_min} w_r z_r z_rᵀ`` into ``gram``, from the transposed
    rows ``rows_t`` (d, n); float64 sums."""
    d, n = rows_t.shape
    u = np.empty(n)
    for r in range(n):
        u[r] = w[r] if abs(w[r]) >= keep_min else 0.0
    weighted = np.empty(n)
    for i in range(d):
        for r in range(n):
            weighted[r] = u[r] * rows_t[i, r]
        for j in range(i + 1):
            total = 0.0
            for r in range(n):
                total += weighted[r] * rows_t[j, r]
            gram[i, j] = total


@njit(**REDUCTION_JIT_OPTIONS)
def _squared_projections(rows_t, v, w, keep_min, p):
    """``p_r = (z_rᵀ v)²`` into ``p`` from the transposed rows, and ``Σ_{|w_r| ≥ keep_min} w_r p_r``."""
    d, n = rows_t.shape
    p[:] = 0.0
    for i in range(d):
        v_i = v[i]
        for r in range(n):
            p[r] += v_i * rows_t[i, r]
    total = 0.0
    for r in range(n):
        p[r] *= p[r]
        if abs(w[r]) >= keep_min:
            total += w[r] * p[r]
    return total
