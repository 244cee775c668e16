"""SCML-Local: sparse compositional local metrics (Shi, Bellet & Sha 2014).

Every point x gets its own metric, a non-negative combination of the K rank-one basis elements of
the global variant (:mod:`.scml`, the same ``basis`` option), with weights that are a function of
x:

    M_x = Σ_k w_{x,k} b_k b_kᵀ = Bᵀ diag(w_x) B,     w_x = (Aᵀ z_x + c)²  (component-wise),

so every M_x is positive semidefinite and the weights vary smoothly with x, also at points that
were not in the training set. z_x ∈ R^{D'} is an embedding of x; A (D'×K) and c (K) are learned.
The distance from x to x' is measured in the metric of x, ``d_x(x, x')² = Σ_k w_{x,k}
(b_kᵀ(x − x'))²``: it is not symmetric. With A = 0 every point has the metric of the global
model with ``w = c²``.

**Learning.** On triplets ``(i, j, k)`` (x_j should be closer to x_i than x_k is), each in the
metric of its anchor x_i, with ``Ã = [A; cᵀ]`` ((D'+1)×K, column k the parameters of element k):

    min_Ã  F(Ã) = (1/T) Σ_τ [1 + d_{x_i}(x_i, x_j)² − d_{x_i}(x_i, x_k)²]_+  +  β Σ_k ‖Ã_{:,k}‖₂,

the (2,1) mixed norm: a whole column goes to zero, and with it basis element k in every local
metric. F is not convex (w is quadratic in Ã).

Sources. The paper's own text was not at hand (only its abstract, which names the global,
multi-task and local formulations); what follows is taken from the authors' public code
(``SCML_local.m`` and its helpers, read, not copied): the model w_x = (Aᵀz_x + c)², the hinge on
triplets in the anchor's metric, the (2,1) norm over the columns of [A; cᵀ] (c included), the
start ``A = 0, c = √w_global + δ`` from the global SCML solution (δ > 0: a column of Ã at zero
has zero gradient and could never enter), the embedding z_x by Gaussian-kernel PCA (40
components, width from the median pairwise distance), and the k-NN rule in the metric of the
*query* point. Their optimiser is stochastic proximal subgradient descent, one triplet at a
time with a constant step. Our choices: the kernel ``exp(−γ‖x − x'‖²)`` with
``γ = 1 / median ‖x − x'‖²`` (the code divides squared distances by the median unsquared
distance, which is not unit-consistent); δ = 10⁻³ √w̄ with w̄ the uniform weight that gives the
training pairs a mean squared distance of 1 (the code adds 10⁻³); and the optimiser:
deterministic full-batch proximal gradient on the exact F (no smoothing) with a backtracking
step, which decreases F monotonically and stops reproducibly. Section and equation numbers are
therefore not cited.

**Computation.** A triplet's two squared distances are those of the ordered pairs (anchor, other),
each ``q_p = w_{a_p}ᵀ δ_p`` with ``δ_p = (B(x_a − x_b))²``; the distinct pairs' δ_p are formed
once (n_pairs×K). The gradient of the loss with respect to the anchors' weights is a sparse
(anchors × pairs) product with those rows, and with respect to Ã one GEMM, ``Ẑᵀ (2U ⊙ G)`` with
``U = Ẑ Ã``, ``Ẑ = [Z, 1]``: no d×d matrix is formed per point or per triplet. The proximal step
of the (2,1) norm shrinks each column: ``ã_k ← max(0, 1 − ηβ/‖ã_k‖) ã_k``.

Queries at predict time: ``d_q(x_q, x_t)² = s_q − 2 (w_q ⊙ p_q)ᵀ p_t + w_qᵀ (p_t ⊙ p_t)`` with
``p = Bx``, two GEMMs per block of queries against all training points. Memory: the n×n kernel
matrix of the embedding (``MemoryError`` before allocating when it does not fit) and the
n_pairs×K pair features.
"""

from __future__ import annotations

import time
import warnings
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..constraints import Constraints, knn_triplets
from .base import (ANY_VALUE, VERBOSE, ParamValidation, _check_finite, _default_k, report_fit,
                   report_progress, store_params, warn_not_converged)
from .linalg import check_square_memory
from .scml import BASIS_CONSTRAINTS, SCML, build_basis
from .svm import gaussian_gram

#: sufficient decrease of an accepted proximal step: ``F(new) ≤ F − ARMIJO_C/η ‖new − Ã‖²``
ARMIJO_C = 1e-4
#: the step after an accepted step (× STEP_GROWTH) and after a rejected one (× 0.5)
STEP_GROWTH = 1.5
#: the stopping rule compares F with its value this many iterations earlier
WINDOW = 10
#: at most this many training rows enter the median of the kernel width
MEDIAN_ROWS = 1000
#: query×training distances held at once by :meth:`SCMLLocal.kneighbors`
BLOCK_ENTRIES = 2**22
#: kernel-PCA components with an eigenvalue below this fraction of the largest are dropped
EIG_RTOL = 1e-10


class SCMLLocal(ParamValidation, ClassifierMixin, BaseEstimator):
    """Sparse compositional local metric learning, SCML-Local (Shi, Bellet & Sha 2014).

    Each point x has the metric ``M_x = Bᵀ diag(w_x) B`` with ``w_x = (Aᵀ z_x + c)²`` (module
    notes); a k-NN classifier in the metric of each query point. Not a single Mahalanobis metric,
    so there is no ``transform``.

    Parameters
    ----------
    beta : float, default=1e-4
        β ≥ 0, the weight of the (2,1) norm ``Σ_k ‖[A; cᵀ]_{:,k}‖₂``.
    basis : {"lda", "random"} or array-like of shape (n_basis, n_features), default="lda"
        The rank-one elements b_k, as :class:`~dml_bench.solvers.scml.SCML`'s ``basis``.
    n_locales, n_neighbors, n_basis
        As :class:`~dml_bench.solvers.scml.SCML` (the ``"lda"`` and ``"random"`` bases).
    n_components : int, default=40
        D', the kernel-PCA components of the embedding z_x (at most the training points; the
        authors' code uses 40). Components of eigenvalue below 10⁻¹⁰ of the largest are dropped.
    init : {"global", "uniform"}, default="global"
        The start (A = 0 in both): ``"global"``, c = √w + δ with w the global
        :class:`~dml_bench.solvers.scml.SCML` fitted on the same basis and triplets (its other
        parameters at their defaults; the authors' start); ``"uniform"``, c = √w̄ (every element
        weighted alike, the global fit skipped). δ, w̄: module notes.
    n_neighbors_predict : int, default=3
        k of the k-NN rule of :meth:`predict` (at most the training points). The fit does not
        use it (left out of a result's identity, ``neutral_params``); an experiment's k-NN
        evaluation takes its own k.
    max_iter : int, default=1000
        Cap on the proximal-gradient iterations (accepted or rejected steps).
    tol : float, default=1e-5
        Stop when F decreased by at most ``tol · F(start)`` over the last 10 iterations.
    random_state : int, RandomState instance or None, default=0
        Seeds the basis, the rows of the kernel-width median and the global fit of ``"global"``.
    verbose : int, default=0
        0: silent; 1: one line at the end of the fit (iterations, objective, relative change,
        converged, seconds); 2 and more: also one line every 10 iterations.

    Attributes
    ----------
    basis_ : ndarray (K, d)
        B (rows b_k).
    A_ : ndarray (D', K)
    c_ : ndarray (K,)
    kernel_gamma_ : float
        γ of the embedding's Gaussian kernel.
    embedding_points_ : ndarray (n, d)
        The training points (the kernel's centres).
    embedding_coef_ : ndarray (n, D')
        ``z_x = k(x) @ embedding_coef_ − embedding_shift_`` with ``k(x)`` the kernel row of x.
    embedding_shift_ : ndarray (D',)
    init_weights_ : ndarray (K,)
        c² at the start (``"global"``: the global solution plus δ).
    classes_ : ndarray or None
        The labels (None after a fit without y: :meth:`predict` then refuses).
    train_coords_ : ndarray (n, K)
        The training points' basis coordinates ``X Bᵀ`` (the neighbours of :meth:`kneighbors`).
    train_labels_ : ndarray (n,) or None
        Their class indices into ``classes_``.
    objective_ : float
        F at the returned Ã.
    n_active_ : int
        Triplets with a positive hinge there.
    n_iter_ : int
        Proximal steps tried, accepted or not (0 when the start is already stationary).
    converged_ : bool
    optimality_ : float
        ``(F_{t−10} − F_t) / F(start)`` at the last iteration t (from the start when t < 10;
        ``optimality_measure`` ``"relative_objective_change"``; 0 when the start is already
        stationary). F is not convex: this says the descent stalled, not that Ã is a global
        minimum.
    trace_ : dict of ndarray
        Per iteration: ``objective`` (of the current Ã), ``loss``, ``step`` (the η tried),
        ``accepted``, ``n_active``, ``n_elements`` (nonzero columns of Ã) and ``time`` (seconds
        since the start of ``fit``).

    References
    ----------
    Y. Shi, A. Bellet and F. Sha. Sparse compositional metric learning. AAAI 2014,
    pp. 2078–2084 (arXiv:1404.4105 for the extended version).
    B. Schölkopf, A. Smola and K.-R. Müller. Nonlinear component analysis as a kernel eigenvalue
    problem. Neural Computation 10(5):1299–1319, 1998.
    A. Beck and M. Teboulle. A fast iterative shrinkage-thresholding algorithm for linear inverse
    problems. SIAM J. Imaging Sciences 2(1):183–202, 2009 (the backtracking proximal step).
    """

    constraint_kind: ClassVar[str] = "triplets"
    #: evaluated by k-NN in each test point's own metric (:meth:`kneighbors`, with the
    #: experiment's k and tie-break), not on ``transform``-ed points: it has no global map
    evaluation: ClassVar[str] = "local_knn"
    optimality_measure = "relative_objective_change"

    _parameter_constraints: dict = {
        "beta": [Interval(Real, 0, None, closed="left")],
        **BASIS_CONSTRAINTS,
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "init": [StrOptions({"global", "uniform"})],
        "n_neighbors_predict": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": VERBOSE,
    }
    #: what the fit does not depend on: the printing, and the k of :meth:`predict`
    neutral_params: ClassVar[dict] = {"verbose": ANY_VALUE, "n_neighbors_predict": ANY_VALUE}

    def __init__(self, beta=1e-4, basis="lda", n_locales=20, n_neighbors=10, n_basis=100,
                 n_components=40, init="global", n_neighbors_predict=3, max_iter=1000, tol=1e-5,
                 random_state=0, verbose=0):
        store_params(self, locals())

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, constraints: Constraints | None = None):
        """Learn A and c from triplets.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Training points (finite, at least 2).
        y : array-like of shape (n,), optional
            Class labels: the k-NN rule of :meth:`predict` votes with them, and without
            ``constraints`` the triplets are :func:`~dml_bench.constraints.knn_triplets` with
            ``k = min(3, n_c − 1)`` (as the global SCML).
        constraints : Constraints, optional
            Triplets indexing rows of X (only its ``triplets`` are used). Without y, the
            ``basis`` must be ``"random"`` or an array, and :meth:`predict` is unavailable.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            In one line, before the descent: a hyper-parameter, X, y, the triplets or the
            basis are unusable.
        """
        start = time.perf_counter()
        name = type(self).__name__
        if y is None and constraints is None:
            raise ValueError(f"{name} requires y to be passed, but the target y is None (or "
                             "pass constraints with triplets)")
        X, y = self._check_data(X, y, reset=True)
        if y is not None:
            check_classification_targets(y)
            self.classes_, y = np.unique(y, return_inverse=True)
            if len(self.classes_) < 2:
                raise ValueError(f"{name} needs at least 2 classes, got 1 class")
        else:
            self.classes_ = None
        if constraints is None:
            T = knn_triplets(X, y, k=_default_k(y)).triplets
        else:
            T = Constraints.validated(constraints, X.shape[0], ("triplets",), name).triplets
        rng = check_random_state(self.random_state)
        B = self._basis(X, y, rng)
        Z = self._fit_embedding(X, rng)
        problem = LocalProblem(Z, X @ B.T, T, float(self.beta))
        A0 = np.zeros((Z.shape[1] + 1, len(B)))
        w_unit = problem.uniform_weight()
        if self.init == "global":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                w = SCML(basis=B, random_state=rng).fit(X, constraints=Constraints(triplets=T))
            A0[-1] = np.sqrt(w.weights_) + 1e-3 * np.sqrt(w_unit)
        else:
            A0[-1] = np.sqrt(w_unit)
        report = ((lambda it, F, change: report_progress(self, it, objective=F,
                                                         relative_change=change))
                  if self.verbose >= 2 else None)
        A, trace, converged, change = proximal_gradient(problem, A0, self.max_iter, self.tol,
                                                        start, report)
        if not converged:
            warn_not_converged(
                self, rule=f"decrease of F over the last {WINDOW} iterations ≤ tol = "
                f"{self.tol:g} × F(start)", cap=f"max_iter = {self.max_iter} iterations",
                reached=f"relative decrease {change:.3g}", hint="raise max_iter (or tol)")
        F, _, active, _ = problem.evaluate(A, gradient=False)
        self.basis_, self.A_, self.c_ = B, A[:-1].copy(), A[-1].copy()
        self.init_weights_ = A0[-1] ** 2
        self.train_coords_ = problem.P
        self.train_labels_ = y
        self.objective_, self.n_active_ = float(F), int(active)
        self.n_iter_, self.converged_, self.optimality_ = len(trace["objective"]), converged, change
        self.trace_ = {k: np.asarray(v) for k, v in trace.items()}
        if self.verbose:
            report_fit(self, time.perf_counter() - start)
        return self

    # -- the pieces of fit ----------------------------------------------------------------------

    def _check_data(self, X, y=None, reset=False):
        """X (and y) by scikit-learn's ``validate_data``, float64, each fault in one line (for
        new points, scikit-learn's own words: "Reshape your data …")."""
        if reset and getattr(X, "ndim", None) not in (None, 2):
            raise ValueError(f"X: expected a 2-D array of shape (n_samples, n_features), got "
                             f"{X.ndim}-D input of shape {X.shape}")
        checks = dict(dtype=np.float64, ensure_all_finite=False, reset=reset,
                      ensure_min_samples=2 if reset else 1)
        try:
            out = (validate_data(self, X, **checks) if y is None
                   else validate_data(self, X, y, **checks))
        except ValueError as exc:
            raise ValueError(" ".join(str(exc).split())) from None
        X, y = (out, None) if y is None else out
        _check_finite(X)
        return X, y

    def _basis(self, X, y, rng) -> np.ndarray:
        """B from ``basis``, as the global SCML builds it (:func:`.scml.build_basis`)."""
        return build_basis(self, X, y, rng)

    def _fit_embedding(self, X, rng) -> np.ndarray:
        """Kernel PCA of X (Gaussian kernel, median width); sets the ``embedding_*`` attributes
        and ``kernel_gamma_``, returns the training points' z (n×D')."""
        n = len(X)
        check_square_memory(f"{type(self).__name__} kernel PCA", n, 2, "n")
        rows = X if n <= MEDIAN_ROWS else X[rng.choice(n, MEDIAN_ROWS, replace=False)]
        sq = np.maximum(np.einsum("ij,ij->i", rows, rows)[:, None]
                        + np.einsum("ij,ij->i", rows, rows)[None, :] - 2 * rows @ rows.T, 0.0)
        off = sq[~np.eye(len(rows), dtype=bool)]
        positive = off[off > 0]
        median = float(np.median(off)) if len(off) else 0.0
        scale = median if median > 0 else (float(positive.mean()) if len(positive) else 1.0)
        self.kernel_gamma_ = 1.0 / scale
        K = gaussian_gram(X, X, self.kernel_gamma_)
        col_mean = K.mean(axis=0)
        K -= col_mean[None, :]
        K -= K.mean(axis=1, keepdims=True)  # doubly centred (K is symmetric)
        D = min(self.n_components, n)
        lam, V = scipy.linalg.eigh(K, subset_by_index=(n - D, n - 1), overwrite_a=True)
        lam, V = lam[::-1], V[:, ::-1]
        keep = lam > EIG_RTOL * max(lam[0], 0.0) if len(lam) and lam[0] > 0 else np.zeros(0, bool)
        lam, V = lam[keep], V[:, keep]
        self.embedding_points_ = X
        self.embedding_coef_ = V / np.sqrt(lam)
        # z(x) = centred kernel row @ coef; the coef columns sum to 0 (orthogonal to 1), so the
        # row-mean and overall-mean terms of the centring vanish and only the column means stay
        self.embedding_shift_ = col_mean @ self.embedding_coef_
        return V * np.sqrt(lam)

    # -- the fitted model -----------------------------------------------------------------------

    def embed(self, X) -> np.ndarray:
        """The kernel-PCA embedding z_x of each row of X, shape (n, D')."""
        check_is_fitted(self, "A_")
        X, _ = self._check_data(X)
        return self._embed(X)

    def _embed(self, X):
        return (gaussian_gram(X, self.embedding_points_, self.kernel_gamma_)
                @ self.embedding_coef_ - self.embedding_shift_)

    def local_weights(self, X) -> np.ndarray:
        """``w_x = (Aᵀ z_x + c)²`` of each row of X, shape (n, K)."""
        check_is_fitted(self, "A_")
        X, _ = self._check_data(X)
        return self._weights(X)

    def _weights(self, X):
        return (self._embed(X) @ self.A_ + self.c_) ** 2

    def local_metric(self, x) -> np.ndarray:
        """``M_x = Bᵀ diag(w_x) B`` of one point x of shape (n_features,): a (d, d) array (for
        inspection; the other methods never form it)."""
        check_is_fitted(self, "A_")
        x = np.asarray(x, dtype=float)
        if x.ndim != 1:
            raise ValueError(f"x: expected one point of shape (n_features,), got shape {x.shape}")
        X, _ = self._check_data(x[None, :])
        w = self._weights(X)[0]
        M = (self.basis_.T * w) @ self.basis_
        return (M + M.T) / 2

    def pair_distance(self, X1, X2) -> np.ndarray:
        """``d(x1_i, x2_i) = √((x1_i − x2_i)ᵀ M_{x1_i} (x1_i − x2_i))`` row by row (the metric of
        the first point; not squared, as metric-learn's ``pair_distance``)."""
        check_is_fitted(self, "A_")
        X1, _ = self._check_data(X1)
        X2, _ = self._check_data(X2)
        if X1.shape != X2.shape:
            raise ValueError(f"X2: expected the shape of X1, {X1.shape}, got {X2.shape}")
        diff = (X1 - X2) @ self.basis_.T
        return np.sqrt(np.einsum("ik,ik->i", self._weights(X1), diff * diff))

    def kneighbors(self, X, n_neighbors=None, return_distance=True):
        """The nearest training points of each row of X in that row's own metric.

        Returns ``(distances, indices)`` (not squared distances, nearest first), or the indices
        alone, of shape (n, k); ``k`` defaults to ``n_neighbors_predict`` (at most the training
        points). Blocks of queries against all training points, two GEMMs per block.
        """
        check_is_fitted(self, "A_")
        X, _ = self._check_data(X)
        Pt = self.train_coords_
        n_train = len(Pt)
        k = min(self.n_neighbors_predict if n_neighbors is None else int(n_neighbors), n_train)
        if k < 1:
            raise ValueError(f"n_neighbors: expected at least 1, got {n_neighbors}")
        Pt2 = (Pt * Pt).T
        dist = np.empty((len(X), k))
        ind = np.empty((len(X), k), dtype=np.intp)
        block = max(1, BLOCK_ENTRIES // n_train)
        for s in range(0, len(X), block):
            Xb = X[s:s + block]
            P, W = Xb @ self.basis_.T, self._weights(Xb)
            WP = W * P
            D = W @ Pt2
            D -= 2.0 * (WP @ Pt.T)
            D += np.einsum("ik,ik->i", WP, P)[:, None]
            np.maximum(D, 0.0, out=D)
            part = (np.argpartition(D, k - 1, axis=1)[:, :k] if k < n_train
                    else np.broadcast_to(np.arange(n_train), D.shape))
            d = np.take_along_axis(D, part, axis=1)
            order = np.lexsort((part, d), axis=1)  # by distance, ties by index
            ind[s:s + block] = np.take_along_axis(part, order, axis=1)
            dist[s:s + block] = np.sqrt(np.take_along_axis(d, order, axis=1))
        return (dist, ind) if return_distance else ind

    def predict(self, X) -> np.ndarray:
        """k-NN majority vote in each query's metric; ties go to the label of the nearest of
        the tied neighbours (as :func:`dml_bench.evaluate.knn_predict`'s default)."""
        check_is_fitted(self, "A_")
        if self.classes_ is None:
            raise ValueError(f"{type(self).__name__} was fitted without labels y; predict needs "
                             "them (fit with y)")
        labels = self.train_labels_[self.kneighbors(X, return_distance=False)]
        votes = np.zeros((len(labels), len(self.classes_)), dtype=np.intp)
        np.add.at(votes, (np.arange(len(labels))[:, None], labels), 1)
        top = np.take_along_axis(votes == votes.max(axis=1, keepdims=True), labels, axis=1)
        return self.classes_[labels[np.arange(len(labels)), top.argmax(axis=1)]]


class LocalProblem:
    """F(Ã) of SCML-Local and its gradient on fixed triplets (module notes).

    Parameters
    ----------
    Z : ndarray (n, D')
        The embedding of the training points.
    P : ndarray (n, K)
        Their basis coordinates ``X Bᵀ``.
    triplets : ndarray (T, 3)
    beta : float
    """

    def __init__(self, Z, P, triplets, beta):
        n = len(P)
        T = np.asarray(triplets, dtype=np.int64).reshape(-1, 3)
        self.Zh = np.column_stack([Z, np.ones(n)])
        self.P, self.beta, self.n = P, beta, len(T)
        keys = np.concatenate([T[:, 0] * n + T[:, 1], T[:, 0] * n + T[:, 2]])
        keys, inverse = np.unique(keys, return_inverse=True)  # ordered pairs, sorted by anchor
        self.anchor, other = keys // n, keys % n
        self.target, self.impostor = inverse[:self.n], inverse[self.n:]
        self.delta = (P[self.anchor] - P[other]) ** 2          # (n_pairs, K)
        self.indptr = np.concatenate([[0], np.cumsum(np.bincount(self.anchor, minlength=n))])

    def uniform_weight(self) -> float:
        """w̄: the weight of every element that gives the pairs a mean squared distance of 1."""
        mean = float(self.delta.sum(axis=1).mean())
        return 1.0 / mean if mean > 0 else 1.0

    def evaluate(self, A, gradient=True):
        """``(F, loss, n_active, ∇loss)`` at Ã = ``A`` ((D'+1)×K); ∇ None without ``gradient``."""
        U = self.Zh @ A
        W = U * U
        q = np.einsum("pk,pk->p", W[self.anchor], self.delta)
        hinge = 1.0 - (q[self.impostor] - q[self.target])
        active = hinge > 0
        loss = float(hinge[active].sum()) / self.n
        F = loss + self.beta * float(np.linalg.norm(A, axis=0).sum())
        if not gradient:
            return F, loss, int(active.sum()), None
        P = len(q)
        rho = (np.bincount(self.target[active], minlength=P)
               - np.bincount(self.impostor[active], minlength=P)) / self.n   # ∂loss/∂q_p
        S = sp.csr_matrix((rho, np.arange(P), self.indptr), shape=(len(U), P))
        G = np.asarray(S @ self.delta)                                       # ∂loss/∂W
        return F, loss, int(active.sum()), self.Zh.T @ (2.0 * U * G)

    def prox(self, A, step):
        """The proximal map of ``step · β Σ_k ‖Ã_{:,k}‖₂``: each column shrunk towards 0."""
        norms = np.linalg.norm(A, axis=0)
        shrink = np.divide(step * self.beta, norms, out=np.full_like(norms, np.inf),
                           where=norms > 0)
        return A * np.maximum(0.0, 1.0 - shrink)


def proximal_gradient(problem: LocalProblem, A, max_iter, tol, start, report=None):
    """Proximal gradient with a backtracking step on F from Ã = ``A``.

    A trial ``prox(Ã − η∇loss, η)`` is accepted when it lowers F by ``ARMIJO_C/η ‖Δ‖²`` (then
    η ×= 1.5), else η is halved; the first η is 10 % of ‖Ã‖ over the norm of F's gradient
    (the penalty's included) at the start. Stops when F dropped
    by at most ``tol · F(start)`` over the last ``WINDOW`` iterations. Returns (Ã, trace,
    converged, that relative change). ``report(iteration, F, change)``, if given, is called
    every ``WINDOW`` iterations (``verbose ≥ 2``).
    """
    F, loss, active, grad = problem.evaluate(A)
    F0 = F
    trace = {k: [] for k in ("objective", "loss", "step", "accepted", "n_active", "n_elements",
                             "time")}
    norms = np.linalg.norm(A, axis=0)
    slope = float(np.linalg.norm(grad + problem.beta * np.divide(A, norms, out=np.zeros_like(A),
                                                                 where=norms > 0)))
    if slope == 0.0 or F0 == 0.0:  # no active triplet and nothing to shrink: stationary
        return A, trace, True, 0.0
    step = 0.1 * float(np.linalg.norm(A)) / slope
    history = [F]
    for _ in range(max_iter):
        new = problem.prox(A - step * grad, step)
        F_new, loss_new, active_new, grad_new = problem.evaluate(new)
        accepted = F_new <= F - ARMIJO_C / step * float(np.sum((new - A) ** 2))
        tried = step
        if accepted:
            A, F, loss, active, grad = new, F_new, loss_new, active_new, grad_new
            step *= STEP_GROWTH
        else:
            step *= 0.5
        history.append(F)
        change = (history[max(0, len(history) - WINDOW - 1)] - F) / F0
        for key, val in (("objective", F), ("loss", loss), ("step", tried),
                         ("accepted", accepted), ("n_active", active),
                         ("n_elements", int(np.count_nonzero(np.linalg.norm(A, axis=0)))),
                         ("time", time.perf_counter() - start)):
            trace[key].append(val)
        if report is not None and len(history) % WINDOW == 1:
            report(len(history) - 1, F, float(change))
        if len(history) > WINDOW and change <= tol:
            return A, trace, True, float(change)
    return A, trace, False, float(change)
