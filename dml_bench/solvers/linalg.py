"""Constraint algebra shared by the solvers.

Every solver works on rows of pair differences ``D`` (one row per constraint) instead of d×d
matrices per constraint: weighted sums of outer products are one GEMM,
``Σ_τ w_τ (x_i − x_j)(x_i − x_j)ᵀ = Dᵀ diag(w) D``, and Mahalanobis quadratic forms are
computed row-wise.
"""

from __future__ import annotations

import ctypes

import numpy as np
import scipy.linalg
import scipy.linalg.lapack
from numba import njit
from numba.extending import get_cython_function_address
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

from ..resources import available_memory_bytes  # check_square_memory's budget (tests patch it here)

#: numba options of every compiled kernel of the solvers: compiled once per machine (on-disk
#: cache), and IEEE division (x / 0 = ±inf, as in numpy) instead of Python's ZeroDivisionError
JIT_OPTIONS = {"cache": True, "error_model": "numpy", "nogil": True}

#: below this dimension a dense ``eigh`` beats ARPACK's per-call overhead
DENSE_EIGH_MAX_DIM = 64

#: up to this dimension :class:`GramTopEigenvector` forms its d×d matrix in a compiled pass over
#: the transposed difference rows: OpenBLAS's GEMM packs a narrow (n × d) operand at a loss there (pima's
#: 1614 × 8 rows: 16 µs against 57 µs), while from d ≈ 30 on its blocked kernel is faster
COMPILED_GRAM_MAX_DIM = 24

#: :class:`GramTopEigenvector` forms its matrix from the pair Laplacian (a sparse product and an
#: n×d×d GEMM) where that saves more than this many flops per call over the product on the
#: difference rows: about the Laplacian's fixed per-call cost (DML-eig on breast cancer, 1197
#: pairs of 399 points in d = 30, a saving of 0.36 Mflop, ran 1.6× slower with it)
LAPLACIAN_MIN_SAVING = 1e6

#: the compiled reductions may reorder their sums (vectorised); no finite-math assumption
_REDUCTION_JIT_OPTIONS = {**JIT_OPTIONS, "fastmath": {"reassoc", "contract"}}


def pair_differences(X: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Rows ``x_i − x_j`` for every pair ``(i, j)``: shape (n_pairs, d)."""
    return X[pairs[:, 0]] - X[pairs[:, 1]]


def weighted_outer_sum(D: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """``Σ_τ w_τ d_τ d_τᵀ = Dᵀ diag(w) D`` (``w = 1`` when omitted), in D's precision.

    With ``w ≥ 0`` it is ``YᵀY`` for ``Y = diag(√w) D``, which numpy computes with BLAS ``syrk``
    (one triangle: half the flops of a GEMM, and exactly symmetric); signed weights take a GEMM.
    """
    if w is None:
        return D.T @ D
    w = w.astype(D.dtype, copy=False)
    if w.min(initial=0.0) >= 0:
        Y = D * np.sqrt(w)[:, None]
        return Y.T @ Y
    return (D * w[:, None]).T @ D


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
    every other eigenpair): 3–6× faster for d = 13–64, where a Frank–Wolfe iteration on a small
    data set is mostly this call.
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
    :func:`top_eigenvector` never forms the matrix (``4 n_pairs < d``: Lanczos on the rows; on the
    DEXTER sweep, d = 5000, forming it made an iteration 1.3× slower)."""
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


@njit(**_REDUCTION_JIT_OPTIONS)
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


@njit(**_REDUCTION_JIT_OPTIONS)
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


def eigh_all(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every eigenpair ``(λ, U)`` of the symmetric ``S`` (read from its lower triangle), λ ascending.

    LAPACK's divide and conquer (``syevd``), the fastest driver with all eigenvectors: on one
    thread 0.80–0.86× the time of scipy's default MRRR (``syevr``) for d from 64 to 1024
    (``benchmarks/bench_eigh_drivers.py``, results/bench/eigh_drivers.csv). Where it fails to
    converge, MRRR, then the QR algorithm (``syev``): see :func:`_eigh_lower`. scipy 1.11 (the
    floor) sizes ``syevd``'s workspace wrongly for a 1×1 matrix: plain ``syev`` there.
    """
    return _eigh_lower(S, ("evd", "evr", "ev") if len(S) > 1 else ("ev",))


def _eigh_lower(S: np.ndarray, drivers: tuple[str, ...],
                **options) -> tuple[np.ndarray, np.ndarray]:
    """``scipy.linalg.eigh`` of the lower triangle of S with ``options``, by the first of the
    LAPACK ``drivers`` that converges.

    A driver can fail on a matrix that another decomposes to full accuracy: with one OpenBLAS
    0.3.30 thread, ``syevd``'s divide and conquer stopped on Xing's (MMC's) projections on
    four of MNIST's ten board splits (LAPACK's info > n, which scipy words as "the leading
    minor ... of B is not positive definite"), where ``syevr``, ``syevx``, ``syev`` and the
    other triangle all converge. So S is never overwritten: the next driver starts from it.
    A C-ordered S is passed as its transpose (Fortran-ordered, the same triangle read as the
    upper), without a copy of ours.
    """
    transpose = S.flags.c_contiguous and not S.flags.f_contiguous
    A = S.T if transpose else S
    for driver in drivers[:-1]:
        try:
            return scipy.linalg.eigh(A, lower=not transpose, driver=driver, **options)
        except np.linalg.LinAlgError:
            continue
    return scipy.linalg.eigh(A, lower=not transpose, driver=drivers[-1], **options)


#: :func:`eigh_above` computes only the eigenpairs asked for (``syevr`` on a value range) when
#: their expected number is at most this fraction of d; above it, every eigenpair by ``syevd``
#: is faster (one BLAS thread: 0.4–0.6× the time of ``syevd`` for a few eigenpairs, break-even
#: near 0.1 d at d = 256 and 0.2 d at d = 1024; benchmarks/bench_eigh_drivers.py --part above)
SUBSET_EIGH_MAX_FRACTION = 0.1


def eigh_above(S: np.ndarray, lower: float,
               expected: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The eigenpairs ``(λ, U)`` of the symmetric ``S`` with ``λ > lower``, λ ascending.

    What a projection onto the PSD cone needs (Theorem 1 of Zhang & Zhang 2017: the eigenvalues
    above the shrinkage ``ηλ``; the Frank-Wolfe vertex: the positive ones), the others being
    clipped to 0.
    With ``expected`` (the caller's guess of their number, such as the count at its previous
    iteration) at most ``SUBSET_EIGH_MAX_FRACTION · d``, only these are computed, by MRRR
    restricted to ``(lower, ∞)`` (``syevr``: the tridiagonal reduction, then k eigenvectors and
    their back-transformation; bisection and inverse iteration, ``syevx``, where it fails);
    otherwise (or with ``expected=None``) every eigenpair by :func:`eigh_all`, the rest dropped.
    The same eigenpairs either way, up to round-off.
    """
    d = len(S)
    if expected is None or expected > SUBSET_EIGH_MAX_FRACTION * d or d < 2:
        lam, U = eigh_all(S)
        first = np.searchsorted(lam, lower, side="right")
        return lam[first:], U[:, first:]
    return _eigh_lower(S, ("evr", "evx"), subset_by_value=(lower, np.inf))


def components_from_psd(S: np.ndarray, right: np.ndarray | None = None) -> np.ndarray:
    """``L`` with ``LᵀL = right_factorᵀ S right_factor`` for a PSD ``S``.

    Returns ``Λ^{1/2} Uᵀ`` (times ``right`` when given) from ``S = U Λ Uᵀ``, with round-off
    negative eigenvalues clipped to zero and rows ordered by decreasing eigenvalue.
    """
    A = S + S.T
    A *= 0.5
    lam, U = eigh_all(A)
    L = (np.sqrt(np.clip(lam, 0.0, None)) * U).T[::-1]
    return L if right is None else L @ right


def weighted_pair_outer_sum(X: np.ndarray, pairs: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``Σ_p w_p (x_a − x_b)(x_a − x_b)ᵀ`` over ``pairs`` (rows ``(a, b)``), ``w`` possibly signed.

    Equals ``weighted_outer_sum(pair_differences(X, pairs), w)``; computed by
    :class:`PairOuterSum`, which a solver evaluating the sum for many ``w`` on the same pairs
    should keep instead.
    """
    return PairOuterSum(X, pairs)(w)


class PairOuterSum:
    """``w ↦ Σ_p w_p (x_a − x_b)(x_a − x_b)ᵀ`` for fixed points ``X`` and ``pairs`` (rows
    ``(a, b)``), ``w`` possibly signed: ``weighted_pair_outer_sum`` for many weight vectors.

    With at most as many pairs as points the difference rows ``D`` are formed once and a call is
    ``Dᵀ diag(w) D`` (:func:`weighted_outer_sum`). With more pairs the sum is ``X̄ᵀ (L_w X̄)``
    with the weighted graph Laplacian ``L_w = Σ_p w_p (e_a − e_b)(e_a − e_b)ᵀ`` and ``X̄`` the
    centred points (``L_w 1 = 0``, so centring changes nothing but the round-off): one pass over
    the pairs and one n×d×d GEMM instead of an n_pairs×d×d GEMM (5× fewer flops for
    ``knn_triplets``' pairs). The pass (:func:`_packed_laplacian_product`) forms row i of
    ``L_w X̄`` as ``Σ_p w_p (x̄_i − x̄_j)`` over the pairs ``p = {i, j}`` at i, from the points'
    incidence lists, built here once. It replaced scipy's CSR product with the Laplacian, whose
    values had to be written per call: a call is 0.9–1.6× as fast on the real pairs of five
    timing rows, most where d is small (letter, d = 16), as the n×d×d GEMM dominates from
    d ≈ 60 (``benchmarks/bench_pair_distances.py``, ``results/bench/pair_outer_sum.csv``).

    Pairs of weight zero cost nothing: only the difference rows of nonzero weight, or the points
    that a pair of nonzero weight touches (the other rows of ``L_w X̄`` are zero), enter the GEMM.
    A hinge loss's gradient is that sparse: after 10 or 40 GD iterations on the board's MNIST
    split 0, 19 % of the pairs have a nonzero weight and they reach 51 % of the points; a call
    takes 0.55 s against 1.33 s for the CSR product over every row (``benchmarks/
    bench_pair_distances.py --part sparse_outer_sums``, ``results/bench/pair_outer_sum_sparse.csv``;
    an Intel Xeon, one thread), four fifths of it in the GEMM at 61 GFLOP/s. The pass writes the
    nonzero rows packed, and the GEMM takes the points at those rows gathered, both into buffers
    kept across calls: gathering into fresh arrays, as before, cost a call 0.1–0.2 s more there
    (page faults of two 100 MB arrays; ``results/leaderboard_diagnosis/hosts.md``).

    Attributes
    ----------
    X : ndarray (n, d)
        The centred points ``X̄``.
    """

    def __init__(self, X: np.ndarray, pairs: np.ndarray):
        pairs = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
        n, n_pairs = len(X), len(pairs)
        self.X = X - X.mean(axis=0)
        if n_pairs <= n:
            self._D = pair_differences(self.X, pairs)
            return
        self._D = None
        ends = pairs.T.ravel()  # a then b: incidence e is pair e mod n_pairs
        order = np.argsort(ends, kind="stable")
        self._start = np.concatenate([[0], np.cumsum(np.bincount(ends, minlength=n))])
        self._other = pairs[:, ::-1].T.ravel()[order]  # the pair's other point
        self._pair = order % n_pairs
        self._LX = np.empty_like(self.X)  # the nonzero rows of L_w X̄, packed; rewritten by a call
        self._rows = np.empty(n, dtype=np.intp)  # the points those rows belong to
        self._X_rows = None  # X̄ at those points: a buffer made at the first call that needs it

    def __call__(self, w: np.ndarray) -> np.ndarray:
        w = np.asarray(w, dtype=float)
        if self._D is not None:
            nonzero = np.flatnonzero(w)
            if len(nonzero) == len(w):
                return weighted_outer_sum(self._D, w)
            return weighted_outer_sum(self._D[nonzero], w[nonzero])
        w = w.astype(self.X.dtype, copy=False)  # in X's precision, as the products
        m = _packed_laplacian_product(self.X, self._start, self._other, self._pair, w, self._LX,
                                      self._rows)
        if m == len(self.X):  # every row: packed is L_w X̄ itself
            return self.X.T @ self._LX
        if self._X_rows is None:
            self._X_rows = np.empty_like(self.X)
        # into the kept buffer ("clip": unbuffered; the rows are valid indices)
        X_rows = np.take(self.X, self._rows[:m], axis=0, out=self._X_rows[:m], mode="clip")
        return X_rows.T @ self._LX[:m]


@njit(**JIT_OPTIONS)
def _packed_laplacian_product(X, start, other, pair, w, out, rows):
    """The nonzero rows of ``L_w X``, packed: for the points i that some incidence of nonzero
    weight reaches, in increasing order, ``out[r] = Σ_e w[pair[e]] (x_i − x_{other[e]})`` over
    the incidences ``e`` of i, ``start[i] ≤ e < start[i + 1]``, and ``rows[r] = i``
    (:class:`PairOuterSum`). Returns their number; the other rows of ``L_w X`` are zero."""
    m = 0
    for i in range(X.shape[0]):
        reached = False
        for e in range(start[i], start[i + 1]):
            j, w_e = other[e], w[pair[e]]
            if w_e == 0.0:
                continue
            if not reached:
                reached = True
                out[m] = 0.0
            for k in range(X.shape[1]):
                out[m, k] += w_e * (X[i, k] - X[j, k])
        if reached:
            rows[m] = i
            m += 1
    return m


def pair_sq_distances(Z: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Row-wise ``‖z_a − z_b‖²`` for every pair ``(a, b)`` of rows of ``Z``.

    With ``Z = X F`` (points mapped by a factor of ``M = F Fᵀ``) these are the Mahalanobis
    distances ``(x_a − x_b)ᵀ M (x_a − x_b)`` at n×d×rank flops for the mapping instead of
    n_pairs×d×rank. One compiled pass over the pairs (:func:`_pair_sq_distances`), accumulating
    in float64, with no gathered n_pairs×rank temporary: 3–4× faster than numpy's chunked
    gather and ``einsum`` (``benchmarks/bench_pair_distances.py``).
    """
    pairs = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
    return _pair_sq_distances(np.asarray(Z), pairs[:, 0], pairs[:, 1], np.empty(len(pairs)))


@njit(**_REDUCTION_JIT_OPTIONS)
def _pair_sq_distances(Z, a, b, out):
    """``out[p] = ‖Z[a[p]] − Z[b[p]]‖²`` (compiled loop of :func:`pair_sq_distances`; the sum
    over the rank vectorised, 1.7–2× faster on FrobMetric's MNIST pairs)."""
    rank = Z.shape[1]
    for p in range(a.shape[0]):
        i, j = a[p], b[p]
        total = 0.0
        for k in range(rank):
            diff = Z[i, k] - Z[j, k]
            total += diff * diff
        out[p] = total
    return out


def pair_quadratic_forms(Y: np.ndarray, X: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """``(x_a − x_b)ᵀ W (x_a − x_b)`` for every pair ``(a, b)``, from ``Y = X W`` (W symmetric).

    The form of a dense W, PSD or not (the iterates of GD and FW, before any factor exists):
    one n×d×d GEMM for ``Y`` (the caller's) and one compiled pass over the pairs,
    ``Σ_k (y_a − y_b)_k (x_a − x_b)_k``, instead of the difference rows' n_pairs×d×d GEMM and
    their n_pairs×d temporaries: 3.3–5.6× faster on the pairs of a tuning fold of digits, USPS
    and Yale B (d = 64 to 1024), 1.9× on letter's d = 16 (``benchmarks/bench_pair_distances.py``,
    results/bench/pair_quadratic_forms.csv).
    """
    pairs = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
    return _pair_bilinear(np.asarray(Y), np.asarray(X), pairs[:, 0], pairs[:, 1],
                          np.empty(len(pairs)))


@njit(**_REDUCTION_JIT_OPTIONS)
def _pair_bilinear(Y, X, a, b, out):
    """``out[p] = (Y[a[p]] − Y[b[p]]) · (X[a[p]] − X[b[p]])`` (:func:`pair_quadratic_forms`)."""
    for p in range(a.shape[0]):
        i, j = a[p], b[p]
        total = 0.0
        for k in range(X.shape[1]):
            total += (Y[i, k] - Y[j, k]) * (X[i, k] - X[j, k])
        out[p] = total
    return out


def triplet_pairs(triplets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct unordered pairs of triplets ``(i, j, k)`` and each triplet's two pairs among them.

    A triplet's constraint matrix is ``A_r = (x_i − x_k)(x_i − x_k)ᵀ − (x_i − x_j)(x_i − x_j)ᵀ``.
    The pairs ``{i, j}`` and ``{i, k}`` recur across triplets (``knn_triplets`` uses each target and
    each impostor pair k times, and mutual neighbours give both orders), so they are reduced to the
    distinct unordered pairs: ``Σ_r u_r A_r = weighted_pair_outer_sum(X, pairs, w)`` with the
    signed pair weights ``w = bincount(impostor, u) − bincount(target, u)``, and
    ``⟨A_r, M⟩ = q[impostor_r] − q[target_r]`` with ``q_p = (x_a − x_b)ᵀ M (x_a − x_b)`` computed
    row-wise.

    Returns
    -------
    pairs : ndarray of shape (n_pairs, 2)
        Distinct pairs ``(a, b)``, ``a < b``.
    target : ndarray of shape (n_triplets,)
        Index into ``pairs`` of ``{i, j}``.
    impostor : ndarray of shape (n_triplets,)
        Index into ``pairs`` of ``{i, k}``.
    """
    triplets = np.asarray(triplets, dtype=np.int64)
    m = len(triplets)
    both = np.sort(np.vstack([triplets[:, [0, 1]], triplets[:, [0, 2]]]), axis=1)
    base = np.int64(both.max(initial=0) + 1)
    keys, inverse = np.unique(both[:, 0] * base + both[:, 1], return_inverse=True)
    return np.column_stack([keys // base, keys % base]), inverse[:m], inverse[m:]


def check_square_memory(name: str, size: int, n_matrices: int, symbol: str = "d",
                        memory_limit_gb: float | None = None) -> int:
    """Raise ``MemoryError`` before allocating when ``n_matrices`` size×size float64 arrays do not
    fit (``symbol`` names the size in the message: d×d metrics, n×n pairwise arrays).

    The limit is ``memory_limit_gb`` when given, else the memory available now. Returns the bytes
    needed.
    """
    need = int(n_matrices) * size * size * 8
    avail = (int(memory_limit_gb * 2**30) if memory_limit_gb is not None
             else available_memory_bytes())
    if need > avail:
        raise MemoryError(f"{name} needs about {need / 2**30:.1f} GiB for {symbol}×{symbol} "
                          f"matrices ({symbol} = {size}, {n_matrices} of them); available "
                          f"{avail / 2**30:.1f} GiB")
    return need
