"""Constraint algebra shared by the solvers.

Every solver works on rows of pair differences ``D`` (one row per constraint) instead of d×d
matrices per constraint: weighted sums of outer products are one GEMM,
``Σ_τ w_τ (x_i − x_j)(x_i − x_j)ᵀ = Dᵀ diag(w) D``, and Mahalanobis quadratic forms are
computed row-wise. Also the eigendecompositions of the projections onto the PSD cone
(:func:`eigh_all`, :func:`eigh_above`, :func:`project_psd`); the leading eigenvectors of the
Frank–Wolfe vertices are in :mod:`.top_eigen`.
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.linalg
from llvmlite import binding
from numba import njit, types
from numba.extending import get_cython_function_address

from ..common.resources import available_memory_bytes  # check_square_memory's budget (tests patch it here)

#: numba options of every compiled kernel of the solvers: compiled once per machine (on-disk
#: cache), and IEEE division (x / 0 = ±inf, as in numpy) instead of Python's ZeroDivisionError
JIT_OPTIONS = {"cache": True, "error_model": "numpy", "nogil": True}

#: the compiled reductions may reorder their sums (vectorised); no finite-math assumption
REDUCTION_JIT_OPTIONS = {**JIT_OPTIONS, "fastmath": {"reassoc", "contract"}}


def scipy_routine(library: str, name: str, n_args: int):
    """scipy's ``cython_<library>`` routine ``name`` (``"blas"`` or ``"lapack"``; every argument
    by reference) as a numba external function of ``n_args`` pointers, for compiled code to call
    without returning to Python. It is bound by symbol name (``dml_bench_<name>``), so the
    compiled functions that call it stay cacheable on disk."""
    symbol = f"dml_bench_{name}"
    binding.add_symbol(symbol, get_cython_function_address(f"scipy.linalg.cython_{library}", name))
    return types.ExternalFunction(symbol, types.void(*[types.voidptr] * n_args))


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


def eigh_all(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every eigenpair ``(λ, U)`` of the symmetric ``S`` (read from its lower triangle), λ ascending.

    LAPACK's divide and conquer (``syevd``), faster than scipy's default MRRR (``syevr``) when
    every eigenvector is wanted. Where it fails to converge, MRRR, then the QR algorithm
    (``syev``): see :func:`_eigh_lower`. scipy 1.11 (the floor) sizes ``syevd``'s workspace
    wrongly for a 1×1 matrix: plain ``syev`` there.
    """
    return _eigh_lower(S, ("evd", "evr", "ev") if len(S) > 1 else ("ev",))


def _eigh_lower(S: np.ndarray, drivers: tuple[str, ...],
                **options) -> tuple[np.ndarray, np.ndarray]:
    """``scipy.linalg.eigh`` of the lower triangle of S with ``options``, by the first of the
    LAPACK ``drivers`` that converges.

    A driver can fail on a matrix that another decomposes to full accuracy: ``syevd``'s divide
    and conquer can stop (LAPACK's info > n, which scipy words as "the leading minor ... of B is
    not positive definite") where ``syevr``, ``syevx`` and ``syev`` converge. So S is never
    overwritten: the next driver starts from it.
    A C-ordered S is passed as its transpose (Fortran-ordered, the same triangle read as the
    upper), without a copy of ours.
    """
    transpose = S.flags.c_contiguous and not S.flags.f_contiguous
    A = S.T if transpose else S
    for driver in drivers[:-1]:
        if driver == "evd" and not options and A.dtype in (np.float64, np.float32):
            found = _syevd(A, lower=not transpose)
            if found is not None:
                return found
            continue
        try:
            return scipy.linalg.eigh(A, lower=not transpose, driver=driver, **options)
        except np.linalg.LinAlgError:
            continue
    return scipy.linalg.eigh(A, lower=not transpose, driver=drivers[-1], **options)


@functools.lru_cache(maxsize=64)
def syevd_routine(dtype: str, n: int, lower: bool):
    """LAPACK's ``syevd`` for ``dtype`` and its optimal workspace sizes for an n×n matrix, as
    ``scipy.linalg.eigh(driver="evd")`` queries them (so that both make the same LAPACK call)."""
    probe = np.empty((1, 1), dtype=dtype)
    syevd, syevd_lwork = scipy.linalg.get_lapack_funcs(("syevd", "syevd_lwork"), (probe,))
    lwork, liwork = scipy.linalg.lapack._compute_lwork(syevd_lwork, n, lower=int(lower))
    # at least LAPACK's documented minimum for eigenvectors: scipy 1.11's query answers 1 for
    # a 1×1 matrix, which its own wrapper refuses (larger n: the query's optimum is larger)
    return syevd, {"lwork": max(lwork, 1 + 6 * n + 2 * n * n), "liwork": max(liwork, 3 + 5 * n)}


def _syevd(A: np.ndarray, lower: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """``scipy.linalg.eigh(A, lower=lower, driver="evd")`` without its per-call checks and
    workspace query (tens of microseconds, the whole cost of a small matrix's decomposition
    in the alternating projections of Xing et al.); None where ``syevd`` does not converge.
    A non-finite entry raises scipy's ``ValueError``, as ``eigh`` does. ``A``: float64 or
    float32, square."""
    if not np.isfinite(A).all():
        raise ValueError("array must not contain infs or NaNs")
    syevd, work = syevd_routine(A.dtype.char, A.shape[0], lower)
    w, v, info = syevd(A, compute_v=1, lower=int(lower), **work)
    if info < 0:  # pragma: no cover - an argument error of ours
        raise ValueError(f"illegal value in argument {-info} of LAPACK's syevd")
    return (w, v) if info == 0 else None


#: :func:`eigh_above` computes only the eigenpairs asked for (``syevr`` on a value range) when
#: their expected number is at most this fraction of d; above it, every eigenpair by ``syevd``
#: is the faster (MRRR's cost grows with the number of eigenvectors it computes)
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


def metric_from_components(L: np.ndarray) -> np.ndarray:
    """``M = LᵀL`` (d×d) of a factor L (k×d).

    numpy computes ``L.T @ L`` with a BLAS ``syrk``; the multithreaded ``syrk`` of the OpenBLAS
    that numpy's wheels bundle crashes the process on outputs above 2 GiB (numpy issue 19685;
    reproduced here at d = 20,000), so such an M is one GEMM against a copy of L instead."""
    if L.shape[1] ** 2 * 8 <= 2 ** 31:
        return L.T @ L
    return L.T @ L.copy()


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


def project_psd(S: np.ndarray, positive_only: bool = False
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The nearest positive semidefinite matrix to ``S`` in the Frobenius norm, with its
    eigenvalues and eigenvectors: ``Π_{⪰0}(S) = U max(Λ, 0) Uᵀ`` from one eigendecomposition
    (:func:`eigh_all`) of the symmetric part ``(S + Sᵀ) / 2`` = ``U Λ Uᵀ`` (Higham 1988,
    Theorem 2.1).

    Parameters
    ----------
    S : ndarray (d, d)
    positive_only : bool, default=False
        Whether the product is formed from the eigenpairs of positive eigenvalue alone, which are
        then all that is returned, instead of from every eigenpair with the negative eigenvalues
        set to 0. The same matrix up to round-off.

    Returns
    -------
    P : ndarray (d, d)
        ``Π_{⪰0}(S)``.
    lam : ndarray (d,) or (k,)
        Its eigenvalues, ascending: ``max(λ, 0)`` for every eigenvalue λ of the symmetric part, or
        (``positive_only``) its k positive ones.
    U : ndarray (d, d) or (d, k)
        The eigenvectors of ``lam`` as columns: ``P = U diag(lam) Uᵀ``.

    References
    ----------
    N. J. Higham. Computing a nearest symmetric positive semidefinite matrix. Linear Algebra Appl.
    103:103–118, 1988.
    """
    lam, U = eigh_all((S + S.T) / 2)
    if positive_only:
        positive = lam > 0
        lam, U = lam[positive], U[:, positive]
    else:
        lam = np.clip(lam, 0.0, None)
    return (U * lam) @ U.T, lam, U


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
    the pairs and one n×d×d GEMM instead of an n_pairs×d×d GEMM (n_pairs / n times fewer flops).
    The pass (:func:`_packed_laplacian_product`) forms row i of ``L_w X̄`` as
    ``Σ_p w_p (x̄_i − x̄_j)`` over the pairs ``p = {i, j}`` at i, from the points' incidence lists,
    built here once, so that no sparse matrix is written per call.

    Pairs of weight zero cost nothing: only the difference rows of nonzero weight, or the points
    that a pair of nonzero weight touches (the other rows of ``L_w X̄`` are zero), enter the GEMM,
    as for the sparse gradient of a hinge loss. The pass writes the nonzero rows packed, and the
    GEMM takes the points at those rows gathered, both into buffers kept across calls, so that a
    call allocates no n×d array.

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
    in float64, with no gathered n_pairs×rank temporary.
    """
    pairs = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
    return _pair_sq_distances(np.asarray(Z), pairs[:, 0], pairs[:, 1], np.empty(len(pairs)))


@njit(**REDUCTION_JIT_OPTIONS)
def _pair_sq_distances(Z, a, b, out):
    """``out[p] = ‖Z[a[p]] − Z[b[p]]‖²`` (compiled loop of :func:`pair_sq_distances`; the sum
    over the rank vectorised)."""
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
    their n_pairs×d temporaries.
    """
    pairs = np.asarray(pairs, dtype=np.intp).reshape(-1, 2)
    return _pair_bilinear(np.asarray(Y), np.asarray(X), pairs[:, 0], pairs[:, 1],
                          np.empty(len(pairs)))


@njit(**REDUCTION_JIT_OPTIONS)
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
