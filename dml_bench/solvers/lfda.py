"""LFDA: local Fisher discriminant analysis (Sugiyama 2007), a closed form.

Fisher discriminant analysis written over pairs of points,
``S = ½ Σ_ij W_ij (x_i − x_j)(x_i − x_j)ᵀ``, has the within-class weights ``W_ij = 1/n_c`` and the
between-class weights ``1/n − 1/n_c`` for two points of the same class c (``n_c`` points) and
``1/n`` for points of different classes. LFDA multiplies the same-class weights by an affinity
``A_ij = exp(−‖x_i − x_j‖² / (σ_i σ_j))`` with the local scaling ``σ_i`` = the distance from
``x_i`` to its k-th nearest neighbour in its own class (Zelnik-Manor & Perona 2005):

    W^lw_ij = A_ij / n_c  (same class c),     0            (different classes)
    W^lb_ij = A_ij (1/n − 1/n_c)  (same class),   1/n      (different classes)

so that far-apart points of one class (several modes) are no longer pulled together. The
embedding is spanned by the leading generalised eigenvectors of ``S^lb φ = λ S^lw φ``.

A scatter ``½ Σ_ij W_ij (x_i − x_j)(x_i − x_j)ᵀ`` equals ``Xᵀ (diag(W𝟙) − W) X`` for a symmetric W
(never a d×d matrix per pair). Splitting the weights into their class blocks,

    S^lw = Σ_c S_A(c) / n_c
    S^lb = S_m − Σ_c (n_c/n) S_c + Σ_c (1/n − 1/n_c) S_A(c)

with ``S_m`` the total scatter ``Σ_i (x_i − x̄)(x_i − x̄)ᵀ``, ``S_c`` the scatter of class c about
its mean (the blocks of ``1/n`` on the whole matrix minus ``1/n`` on the class blocks) and
``S_A(c) = X_cᵀ (diag(A_c 𝟙) − A_c) X_c`` the affinity Laplacian product of class c: only the
same-class affinities are ever formed, one class at a time and in row blocks of at most
``_BLOCK_ELEMENTS`` entries, each a GEMM. With all affinities equal to 1, ``S^lw`` and ``S^lb`` are
Fisher's within- and between-class scatters and LFDA is Fisher's discriminant analysis.

With fewer points than dimensions the problem is solved exactly in the span of the points
(:func:`_solve_in_span`): O(n²d) instead of the O(d³) of a d×d generalised eigenproblem.
"""

from __future__ import annotations

import time
from numbers import Integral, Real

import numpy as np
import scipy.linalg
from sklearn.utils._param_validation import Interval, StrOptions

from .base import VERBOSE, MetricLearner, store_params
from .linalg import metric_from_components
from .span import span_basis

EMBEDDINGS = ("weighted", "orthonormalized", "plain")
#: S^lw counts as singular when its smallest eigenvalue is at most this times its largest
_SINGULAR_RCOND = 1e-10
#: entries of one row block of a class's affinity matrix (32 MiB of float64)
_BLOCK_ELEMENTS = 1 << 22


class LFDA(MetricLearner):
    """Local Fisher discriminant analysis (Sugiyama 2007), the closed-form embedding.

    ``fit`` builds the local within-class scatter ``S^lw`` and the local between-class scatter
    ``S^lb`` (module docstring; both from class-wise affinities with local scaling), solves the
    generalised eigenproblem ``S^lb φ = λ S^lw φ`` and keeps the eigenvectors of the
    ``n_components`` largest eigenvalues, each scaled to unit Euclidean length. They maximise
    the LFDA criterion ``tr((TᵀS^lwT)⁻¹ TᵀS^lbT)`` over d×r maps T, which any invertible r×r
    recombination of the columns leaves unchanged: ``embedding`` fixes the metric in the
    subspace. ``S^lb ⪰ 0`` (its weights are at least Fisher's between-class weights, which give a
    PSD matrix), so the eigenvalues are non-negative up to round-off.

    When ``S^lw`` is numerically singular (its smallest eigenvalue at most 10⁻¹⁰ times its
    largest, e.g. fewer points than dimensions, or a class of one point), the ridge
    ``δ = ridge · max(tr S^lw, tr S^lb) / d`` (δ = ``ridge`` if both traces are 0) is added to
    it: the eigenproblem solved is then ``S^lb φ = λ (S^lw + δI) φ``.

    Parameters
    ----------
    n_components : int or None, default=None
        Dimension r of the embedding, at most d (None: d).
    k : int, default=7
        The neighbour of the local scaling σ_i (the paper's choice, 7); in a class of
        ``n_c ≤ k`` points, its farthest other point (the ``n_c − 1``-th neighbour).
    embedding : {"weighted", "orthonormalized", "plain"}, default="weighted"
        The map T, with the unit-length eigenvectors φ_1, …, φ_r (λ_1 ≥ … ≥ λ_r):
        ``"weighted"``, the paper's proposal, ``T = (√λ_1 φ_1 | … | √λ_r φ_r)`` (directions
        weighted by how well they separate the classes locally); ``"orthonormalized"``, an
        orthonormal basis of their span (the QR factor of ``(φ_1 | … | φ_r)``: distances are
        those of the orthogonal projection on the LFDA subspace); ``"plain"``,
        ``T = (φ_1 | … | φ_r)``.
    ridge : float, default=1e-3
        Relative ridge δ of a singular ``S^lw`` (see above); unused when ``S^lw`` is regular.
    verbose : int, default=0
        0: silent; 1 and more: one line at the end of the fit (a closed form: no progress).

    Attributes
    ----------
    components_ : ndarray of shape (n_components, d)
        Tᵀ: the embedding is ``z = Tᵀx``.
    metric_ : ndarray of shape (d, d)
        ``M = T Tᵀ``.
    eigenvalues_ : ndarray of shape (n_components,)
        The generalised eigenvalues λ_1 ≥ … ≥ λ_r of the kept directions.
    local_within_scatter_ : ndarray of shape (d, d)
        ``S^lw`` (without the ridge).
    local_between_scatter_ : ndarray of shape (d, d)
        ``S^lb``.
    ridge_ : float
        The δ added to ``S^lw`` (0.0 when it is regular).
    objective_ : float
        The LFDA criterion at the returned subspace, ``λ_1 + … + λ_r``.
    n_iter_ : int
        0 (a closed form).
    converged_ : bool
        True.
    optimality_ : float
        0.0: a closed form (``optimality_measure`` ``"closed_form"``).
    trace_ : dict
        ``time``: the seconds of the fit (one entry).

    References
    ----------
    M. Sugiyama. Dimensionality reduction of multimodal labeled data by local Fisher
    discriminant analysis. JMLR 8:1027–1061, 2007.

    L. Zelnik-Manor, P. Perona. Self-tuning spectral clustering. NIPS 17, 2005 (the local
    scaling).
    """

    constraint_kind = "labels"
    optimality_measure = "closed_form"

    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "k": [Interval(Integral, 1, None, closed="left")],
        "embedding": [StrOptions(set(EMBEDDINGS))],
        "ridge": [Interval(Real, 0, None, closed="neither")],
        "verbose": VERBOSE,
    }

    def __init__(self, n_components=None, k=7, embedding="weighted", ridge=1e-3, verbose=0):
        store_params(self, locals())

    def _fit(self, X, y, constraints):
        if y is None:
            raise ValueError("LFDA needs labels y")
        start = time.perf_counter()
        d = X.shape[1]
        r = d if self.n_components is None else self.n_components
        if r > d:
            raise ValueError(f"n_components={r} exceeds the number of features ({d})")
        _, codes = np.unique(y, return_inverse=True)
        if codes.max() < 1:
            raise ValueError("LFDA needs at least 2 classes in y")
        codes = codes.ravel()
        span = span_basis(X) if len(X) <= d else None
        if span is not None and (self.embedding == "weighted" or r <= span.shape[1]):
            lam, Phi, scatters, self.ridge_ = _solve_in_span(X, codes, span, self.k,
                                                             self.ridge, r)
        else:
            S_lw, S_lb = local_scatters(X, codes, self.k)
            scatters = (None, S_lw, S_lb)
            S_w, self.ridge_ = _regularised(S_lw, S_lb, self.ridge)
            lam, Phi = scipy.linalg.eigh(S_lb, S_w)
            lam, Phi = np.maximum(lam[::-1][:r], 0.0), Phi[:, ::-1][:, :r]
            Phi = Phi / np.linalg.norm(Phi, axis=0)
        q = Phi.shape[1]  # directions with a possibly non-zero weight; the rest weigh 0
        if self.embedding == "weighted":
            T = Phi * np.sqrt(lam[:q])
        elif self.embedding == "orthonormalized":
            T = np.linalg.qr(Phi)[0]
        else:
            T = Phi
        # rows past q (the weighted embedding in the span): eigenvalue 0, zero rows
        self.components_ = np.zeros((r, d))
        self.components_[:q] = T.T
        self.eigenvalues_ = lam
        self._scatters = scatters
        self.objective_ = float(lam.sum())
        self.n_iter_ = 0
        self.converged_ = True
        self.optimality_ = 0.0
        self.trace_ = {"time": np.array([time.perf_counter() - start])}

    @property
    def metric_(self) -> np.ndarray:
        """``M = LᵀL`` (d×d), formed on access from ``components_``."""
        return metric_from_components(self.components_)

    @property
    def local_within_scatter_(self) -> np.ndarray:
        """S^lw (d×d), formed on access from its coordinates in the span of the points when
        they are fewer than the dimensions."""
        return _scatter(self._scatters, 1)

    @property
    def local_between_scatter_(self) -> np.ndarray:
        """S^lb (d×d), likewise."""
        return _scatter(self._scatters, 2)


def local_scatters(X: np.ndarray, codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(S^lw, S^lb)`` of LFDA from the class blocks (module docstring).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    codes : ndarray of shape (n,)
        Class of every point, as integers ``0 … c−1``.
    k : int
        Neighbour of the local scaling.
    """
    n, d = X.shape
    centred = X - X.mean(axis=0)
    S_lw = np.zeros((d, d))
    S_lb = centred.T @ centred  # S_m
    for c in range(codes.max() + 1):
        Xc = X[codes == c]
        n_c = len(Xc)
        if n_c < 2:  # one point: no pair, its own scatter is 0
            continue
        Xc = Xc - Xc.mean(axis=0)
        # a class whose distance matrix fits in one block: formed once, for σ and for A
        dist = (next(_row_blocks(Xc, np.einsum("ij,ij->i", Xc, Xc)))[1]
                if n_c * n_c <= _BLOCK_ELEMENTS else None)
        S_A = affinity_laplacian_product(Xc, local_scaling(Xc, k, dist), dist)
        S_lw += S_A / n_c
        S_lb += (1.0 / n - 1.0 / n_c) * S_A - (n_c / n) * (Xc.T @ Xc)
    return (S_lw + S_lw.T) / 2, (S_lb + S_lb.T) / 2


def local_scaling(Xc: np.ndarray, k: int, dist: np.ndarray | None = None) -> np.ndarray:
    """σ_i: the distance from each point of ``Xc`` (one class, at least 2 points) to its k-th
    nearest other point of the class (its farthest when the class has at most k others).

    Each point is its own nearest point (at distance 0, up to round-off), so σ_i is the
    (k+1)-th smallest entry of its row of squared distances (``np.partition``, no sort), from
    ``dist`` when given (the class's full matrix of squared distances), else by row blocks.
    """
    k = min(k, len(Xc) - 1)
    if dist is not None:
        return np.sqrt(np.partition(dist, k, axis=1)[:, k])
    sq = np.einsum("ij,ij->i", Xc, Xc)
    sigma = np.empty(len(Xc))
    for s, block in _row_blocks(Xc, sq):
        sigma[s:s + len(block)] = np.partition(block, k, axis=1)[:, k]
    return np.sqrt(sigma)


def _row_blocks(Xc: np.ndarray, sq: np.ndarray):
    """``(start, squared distances of rows start… to every row)`` for row blocks of at most
    ``_BLOCK_ELEMENTS`` entries, each one GEMM."""
    n_c = len(Xc)
    block = max(1, _BLOCK_ELEMENTS // n_c)
    for s in range(0, n_c, block):
        rows = Xc[s:s + block]
        dist = rows @ Xc.T
        dist *= -2.0
        dist += sq[s:s + block, None]
        dist += sq[None, :]
        yield s, np.maximum(dist, 0.0, out=dist)


def affinity_laplacian_product(Xc: np.ndarray, sigma: np.ndarray,
                               dist: np.ndarray | None = None) -> np.ndarray:
    """``Xcᵀ (diag(A𝟙) − A) Xc = ½ Σ_ij A_ij (x_i − x_j)(x_i − x_j)ᵀ`` for the affinities
    ``A_ij = exp(−‖x_i − x_j‖² / (σ_i σ_j))``, by row blocks of A (two GEMMs each), or at once
    from ``dist``, the class's full matrix of squared distances, when given.

    A pair with ``σ_i σ_j = 0`` (a point whose k-th neighbour coincides with it) and distinct
    points has affinity 0, the limit of the formula; coinciding points add nothing to the sum.
    """
    d = Xc.shape[1]
    blocks = [(0, dist)] if dist is not None else _row_blocks(
        Xc, np.einsum("ij,ij->i", Xc, Xc))
    S = np.zeros((d, d))
    for s, block in blocks:
        rows = Xc[s:s + len(block)]
        A = np.outer(sigma[s:s + len(block)], sigma)  # σ_i σ_j, then A in place
        positive = A > 0
        if positive.all():
            np.divide(block, A, out=A)
            np.negative(A, out=A)
            np.exp(A, out=A)
        else:
            A = np.where(positive, np.exp(-block / np.where(positive, A, 1.0)), 0.0)
        S += (rows * A.sum(axis=1)[:, None]).T @ rows - rows.T @ (A @ Xc)
    return S


def _regularised(S_lw: np.ndarray, S_lb: np.ndarray, ridge: float) -> tuple[np.ndarray, float]:
    """``(S^lw + δI, δ)``: δ = 0 for a regular ``S^lw``, else the relative ``ridge`` (see
    :class:`LFDA`)."""
    lam = np.linalg.eigvalsh(S_lw)
    if lam[0] > _SINGULAR_RCOND * max(lam[-1], 0.0):
        return S_lw, 0.0
    d = len(S_lw)
    delta = _relative_ridge(S_lw, S_lb, d, ridge)
    return S_lw + delta * np.eye(d), delta


def _relative_ridge(S_lw: np.ndarray, S_lb: np.ndarray, d: int, ridge: float) -> float:
    """δ = ``ridge · max(tr S^lw, tr S^lb) / d`` (``ridge`` if both traces are 0)."""
    scale = max(np.trace(S_lw), np.trace(S_lb)) / d
    return float(ridge * (scale if scale > 0 else 1.0))



def _scatter(scatters: tuple, which: int) -> np.ndarray:
    """One scatter of ``(V, S_lw, S_lb)``: as stored when V is None, else ``V S Vᵀ``."""
    V, S = scatters[0], scatters[which]
    return S if V is None else V @ S @ V.T


def _solve_in_span(X, codes, V, k, ridge, r):
    """LFDA with fewer points than dimensions, solved exactly in the span of the points.

    Both scatters are sums of ``(x_i − x_j)(x_i − x_j)ᵀ``, so their ranges lie in the span of
    V, and ``S^lw + δI`` maps that span and its complement to themselves. A direction with
    λ ≠ 0 therefore lies in the span, and its coordinates solve the q×q problem
    ``(VᵀS^lbV) a = λ (VᵀS^lwV + δI) a``, built from the coordinates ``Z = (X − x̄)V`` (the
    same differences and distances). The d×d problem's other eigenvalues are 0. Returns the
    eigenvalues (r of them, zeros past q), the unit directions ``Va`` (at most q of them),
    ``(V, VᵀS^lwV, VᵀS^lbV)`` (the scatters, factored) and δ. S^lw is singular (rank ≤ n − classes < d), so
    the ridge δ always applies. Costs O(n²d + nqd + q³) instead of O(d³)."""
    d, q = V.shape
    Z = (X - X.mean(axis=0)) @ V
    S_lw_q, S_lb_q = local_scatters(Z, codes, k)
    delta = _relative_ridge(S_lw_q, S_lb_q, d, ridge)  # the traces are those of the d×d scatters
    lam, A = scipy.linalg.eigh(S_lb_q, S_lw_q + delta * np.eye(q))
    m = min(r, q)
    lam, A = np.maximum(lam[::-1][:m], 0.0), A[:, ::-1][:, :m]
    Phi = V @ (A / np.linalg.norm(A, axis=0))
    lam = np.concatenate([lam, np.zeros(r - m)])
    return lam, Phi, (V, S_lw_q, S_lb_q), delta
