"""Baseline metric learners: scikit-learn wrappers (NCA, LDA, PCA) and RCA (LDML: :mod:`.ldml`).

Where scikit-learn has the method it is wrapped, not rewritten: ``NCA`` wraps
``sklearn.neighbors.NeighborhoodComponentsAnalysis``, ``LDA`` wraps
``sklearn.discriminant_analysis.LinearDiscriminantAnalysis`` and ``PCAMetric`` wraps
``sklearn.decomposition.PCA``; each exposes the linear map the wrapped estimator applies as
``components_`` (its transform up to a centring offset, which does not change distances).

``RCA`` (Bar-Hillel et al. 2005) is the inverse within-chunklet covariance, one GEMM over the
chunklet-centred points.
"""

from __future__ import annotations

import functools
import itertools
import time
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.linalg
import scipy.optimize
from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.exceptions import ConvergenceWarning
from sklearn.neighbors import NeighborhoodComponentsAnalysis
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from .base import (MEMORY_LIMIT, VERBOSE, MetricLearner, report_progress, store_params,
                   warn_not_converged)
from .linalg import check_square_memory, eigh_all
from .nca_blocked import nca_loss_grad

#: from this many training points on, NCA's loss and gradient run by blocks of rows
#: (:mod:`.nca_blocked`): five n×n arrays would be 0.67 GB
BLOCKED_FROM_N = 4096


def _wrapped_constraints(estimator_class, *names) -> dict:
    """The wrapped scikit-learn estimator's own constraints of the parameters passed to it
    unchanged (its ``fit`` runs inside ours, whose validation makes it skip its own)."""
    return {name: estimator_class._parameter_constraints[name] for name in names}


def _set_linear_map(est, L, objective=float("nan"), n_iter=0, converged=True, trace=None,
                    optimality=0.0):
    """Store ``components_ = L`` plus the bookkeeping attributes (the defaults are those of a
    closed form); ``metric_ = LᵀL`` (d×d) is formed when read
    (:meth:`~dml_bench.solvers.base.MetricLearner.__getattr__`)."""
    est.components_ = np.ascontiguousarray(L, dtype=np.float64)
    vars(est).pop("metric_", None)
    est.objective_ = float(objective)
    est.n_iter_ = int(n_iter)
    est.converged_ = bool(converged)
    est.optimality_ = float(optimality)
    est.trace_ = {} if trace is None else {k: np.asarray(v, dtype=float) for k, v in trace.items()}


# --------------------------------------------------------------------------------------------
# scikit-learn wrappers
# --------------------------------------------------------------------------------------------


class NCA(MetricLearner):
    """Neighbourhood components analysis (Goldberger et al. 2005), scikit-learn's implementation.

    Parameters other than ``memory_limit_gb`` are passed to
    ``sklearn.neighbors.NeighborhoodComponentsAnalysis`` unchanged (defaults are scikit-learn's).
    Each of its L-BFGS steps holds about four n×n float64 arrays (squared distances, softmax
    probabilities and their weighted copies): ``fit`` refuses with ``MemoryError`` before starting
    when they do not fit (Shen et al. 2014's NCA gave no result on their larger sets for this).

    With more features than training points, ``n_components=None`` and ``init`` ``"auto"`` or
    ``"identity"`` (``"auto"`` is the identity when d ≥ n), NCA solves in the span of the points
    (:mod:`.span`). The loss sees L only through ``L(x_i − x_j)``, and its gradient is
    ``2 L Σ_ij w_ij x_ij x_ijᵀ = 2 L V S Vᵀ`` with V an orthonormal basis of the span of the
    differences, so from L = I every gradient, and every L-BFGS-B direction (a combination of
    gradients and steps), is ``(L V) Cᵀ Vᵀ``: each iterate is ``I + V (L_V − I) Vᵀ``, the inner
    products L-BFGS-B takes equal those of the q×q blocks, and the fit on ``Z = X V`` from
    ``L_V = I`` makes the same iterates in q ≤ n − 1 coordinates (the identity off the span,
    no d×d array). The one difference is the stopping test: L-BFGS-B's ``pgtol`` takes the
    largest entry of the q×q gradient, not of the d×d one (the iterations are the same up to
    the stop; ``optimality_`` is the q×q one there). ``estimator_`` is then scikit-learn's NCA
    fitted on the span coordinates.

    From ``BLOCKED_FROM_N`` (4,096) training points on, and with a named ``init``, the loss
    and gradient run by blocks of rows (:mod:`.nca_blocked`): the same sums in another order,
    in memory linear in n, under scikit-learn's initial map and its L-BFGS-B call (``tol``,
    ``max_iter``); scikit-learn's per-iteration table (``verbose`` ≥ 2) is then not printed,
    and ``verbose`` ≥ 2 prints one line per evaluation of the loss and gradient instead (the
    L-BFGS-B iterations completed, the evaluations made, the objective and the gradient's
    ∞-norm there, and the seconds since the start of ``fit``).

    Parameters
    ----------
    n_components : int, optional
        Dimension of the projected space (default: d).
    init : {"auto", "pca", "lda", "identity", "random"} or ndarray, default="auto"
    max_iter : int, default=50
        L-BFGS iterations.
    tol : float, default=1e-5
    random_state : int or None, default=None
    memory_limit_gb : float or None, default=None
        Memory the n×n arrays may use (below ``BLOCKED_FROM_N`` points); None: the memory
        available when ``fit`` starts.
    verbose : int, default=0
        0: silent; 1: one line at the end of the fit (iterations, objective, gradient norm,
        converged, seconds); 2 and more: also scikit-learn's table of the loss per L-BFGS-B
        iteration (its ``verbose=1``).

    Attributes
    ----------
    components_ : ndarray (n_components, d)
        scikit-learn's ``components_``.
    estimator_ : NeighborhoodComponentsAnalysis
        The fitted wrapped estimator.
    objective_ : float
        The NCA objective ``Σ_i Σ_{j: y_j = y_i} p_ij`` (expected number of correctly classified
        points) at the returned map.
    n_iter_ : int
        L-BFGS iterations (callbacks; scikit-learn's ``n_iter_`` is one more).
    optimality_ : float
        ∞-norm of the gradient of the NCA loss at the returned map, what L-BFGS-B's ``pgtol``
        (``tol``) tests (``optimality_measure`` ``"projected_gradient_norm"``).
    trace_ : dict
        ``time`` per L-BFGS iteration (from scikit-learn's callback).
    span_dim_ : int or None
        The dimension q of the span of the training points it solved in (above), None when it
        solved in all d coordinates.
    span_basis_ : ndarray of shape (d, ``span_dim_``) or None
        The orthonormal basis V of that span (``components_ = I + V (L_V − I) Vᵀ``).

    References
    ----------
    J. Goldberger, S. Roweis, G. Hinton, R. Salakhutdinov. Neighbourhood components analysis.
    NIPS 17, 2005.
    """

    constraint_kind = "labels"
    optimality_measure = "projected_gradient_norm"
    span_complement = "identity"
    #: n×n float64 arrays counted for scikit-learn's loss and gradient: the about four alive at
    #: once at its peak, rounded up
    _n_pairwise = 5
    _parameter_constraints: dict = {
        **_wrapped_constraints(NeighborhoodComponentsAnalysis, "n_components", "init",
                               "max_iter", "tol", "random_state"),
        "memory_limit_gb": MEMORY_LIMIT,
        "verbose": VERBOSE,
    }

    def __init__(self, n_components=None, init="auto", max_iter=50, tol=1e-5, random_state=None,
                 memory_limit_gb=None, verbose=0):
        store_params(self, locals())

    def _solves_in_span(self) -> bool:
        """A square map started at the identity (class docstring)."""
        return (super()._solves_in_span() and self.n_components is None
                and isinstance(self.init, str) and self.init in ("auto", "identity"))

    def _fit(self, X, y, constraints):
        if y is None:
            raise ValueError("NCA needs labels y")
        start = time.perf_counter()
        times = []
        # in the span, "auto" is what it is in all d ≥ n coordinates: the identity (on q < n
        # coordinates scikit-learn's rule could pick "pca" or "lda")
        init = "identity" if getattr(self, "_off_span_dim", 0) else self.init
        nca = NeighborhoodComponentsAnalysis(
            n_components=self.n_components, init=init, max_iter=self.max_iter, tol=self.tol,
            random_state=self.random_state, verbose=int(self.verbose >= 2),
            callback=lambda L, it: times.append(time.perf_counter() - start))
        # the loss and gradient at the last point L-BFGS-B evaluated (the result, the end of its
        # line search): the objective and pgtol test without another evaluation
        last = {}
        blocked = X.shape[0] >= BLOCKED_FROM_N and isinstance(init, str)
        loss_grad = (functools.partial(_blocked_loss_grad, y=y) if blocked
                     else nca._loss_grad_lbfgs)

        evaluations = itertools.count(1)

        def remembered(transformation, *args, **kwargs):
            loss, grad = loss_grad(transformation, *args, **kwargs)
            last.update(at=transformation.copy(), loss=loss, grad=grad)
            if blocked and self.verbose >= 2:  # scikit-learn's table is not printed there
                report_progress(self, len(times), evaluations=next(evaluations),
                                objective=-float(loss), gradient_norm=float(np.abs(grad).max()),
                                seconds=time.perf_counter() - start)
            return loss, grad

        if blocked:
            self._minimize_blocked(nca, X, y, init, remembered, times, start)
        else:
            check_square_memory("NCA", X.shape[0], self._n_pairwise, "n", self.memory_limit_gb)
            nca._loss_grad_lbfgs = remembered  # the instance's, for its fit only
            try:
                with warnings.catch_warnings():  # its own, with verbose: said once below
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    nca.fit(X, y)
            finally:
                del nca._loss_grad_lbfgs
        converged = len(times) < self.max_iter  # L-BFGS stopped before its iteration cap
        # the timing closure does not pickle; with verbose, an evaluation below would print
        self.estimator_ = nca.set_params(callback=None, verbose=0)
        if not np.array_equal(last.get("at"), nca.components_.ravel()):
            remembered(nca.components_.ravel(), X,
                       None if blocked else y[:, None] == y[None, :], -1.0)
        # scikit-learn's loss is −Σ_i Σ_{j: y_j = y_i} p_ij; L-BFGS-B's pgtol test is the
        # ∞-norm of its gradient
        _set_linear_map(self, nca.components_, -float(last["loss"]), len(times), converged,
                        {"time": times}, float(np.abs(last["grad"]).max()))
        if not converged:
            warn_not_converged(
                self, rule=f"gradient ∞-norm ≤ tol = {self.tol:g}, or relative decrease ≤ ftol",
                cap=f"max_iter = {self.max_iter} L-BFGS-B iterations",
                reached=f"gradient ∞-norm {self.optimality_:.3g}", hint="raise max_iter (or tol)")
        elif not times:  # a stationary start, not a cap: converged_, with a warning all the same
            Z = X @ nca.components_.T
            warnings.warn(
                "NCA made no L-BFGS step: the gradient vanished at its initial map. Its "
                "soft-neighbour probabilities softmax(−‖z_i − z_j‖²) saturate when neighbours are "
                "far more than 1 apart (median nearest-neighbour squared distance here "
                f"{median_nn_sq_distance(Z):.3g}); rescale the features (config `normalize:`) "
                "for NCA to learn", ConvergenceWarning)

    def _minimize_blocked(self, nca, X, y, init, loss_grad, times, start):
        """scikit-learn's NCA fit (its initial map, L-BFGS-B with its options) on the blocked
        loss and gradient: no n×n array, not even scikit-learn's same-class mask."""
        nca.random_state_ = check_random_state(self.random_state)
        x0 = np.ravel(nca._initialize(X, y, init))
        result = scipy.optimize.minimize(
            loss_grad, x0, args=(X, None, -1.0), method="L-BFGS-B", jac=True, tol=self.tol,
            options={"maxiter": self.max_iter},
            callback=lambda xk: times.append(time.perf_counter() - start))
        nca.components_ = result.x.reshape(-1, X.shape[1])
        nca.n_features_in_ = X.shape[1]
        nca.n_iter_ = len(times) + 1  # scikit-learn's count: one more than the iterations


def _blocked_loss_grad(transformation, X, _mask, sign, y):
    """:func:`.nca_blocked.nca_loss_grad` with scikit-learn's argument order (no mask)."""
    return nca_loss_grad(transformation, X, y, sign)


def median_nn_sq_distance(Z: np.ndarray, n_sample: int = 500, seed: int = 0) -> float:
    """Median over (up to ``n_sample`` random) points of the squared distance to their nearest
    other point: the length scale NCA's softmax compares with 1."""
    idx = np.random.default_rng(seed).permutation(len(Z))[:n_sample]
    sq = np.einsum("ij,ij->i", Z, Z)
    dist = sq[idx, None] + sq[None, :] - 2 * Z[idx] @ Z.T
    dist[np.arange(len(idx)), idx] = np.inf
    return float(np.median(np.maximum(dist.min(axis=1), 0.0)))


class LDA(MetricLearner):
    """Linear discriminant analysis projection, scikit-learn's implementation.

    ``components_`` is the linear part of ``LinearDiscriminantAnalysis.transform``: for every
    solver ``transform(X) = X Lᵀ + c`` with a constant c (``−x̄ scalings`` for ``"svd"``), so
    ``X Lᵀ`` and scikit-learn's transform give the same distances.

    Parameters
    ----------
    n_components : int, optional
        At most ``min(n_classes − 1, d)`` (default).
    solver : {"svd", "eigen"}, default="svd"
        ``"lsqr"`` has no transform in scikit-learn and is refused.
    shrinkage : None, "auto" or float, default=None
        Only with ``solver="eigen"``.
    tol : float, default=1e-4
        Rank threshold of the ``"svd"`` solver.
    verbose : int, default=0
        0: silent; 1 and more: one line at the end of the fit (a closed form: no progress).

    Attributes
    ----------
    estimator_ : LinearDiscriminantAnalysis
        The fitted wrapped estimator.
    optimality_ : float
        0.0: a closed form (``optimality_measure`` ``"closed_form"``).

    References
    ----------
    R. A. Fisher. The use of multiple measurements in taxonomic problems. Annals of Eugenics
    7(2):179–188, 1936.
    """

    constraint_kind = "labels"
    optimality_measure = "closed_form"
    _parameter_constraints: dict = {
        **_wrapped_constraints(LinearDiscriminantAnalysis, "n_components", "shrinkage", "tol"),
        "solver": [StrOptions({"svd", "eigen"})],  # the solvers with a transform
        "verbose": VERBOSE,
    }

    def __init__(self, n_components=None, solver="svd", shrinkage=None, tol=1e-4, verbose=0):
        store_params(self, locals())

    def _fit(self, X, y, constraints):
        if y is None:
            raise ValueError("LDA needs labels y")
        lda = LinearDiscriminantAnalysis(n_components=self.n_components, solver=self.solver,
                                         shrinkage=self.shrinkage, tol=self.tol).fit(X, y)
        lda.set_output(transform="default")  # arrays, whatever sklearn's global transform_output
        d = X.shape[1]
        offset = lda.transform(np.zeros((1, d)))
        self.estimator_ = lda
        # the linear part, read off the transform of the unit vectors in blocks of rows (no d×d
        # array: at DEXTER's d = 20,000 the whole identity is 3.2 GB)
        block = max(1, min(d, 2 ** 23 // d))
        L = np.concatenate([lda.transform(np.eye(min(block, d - start), d, start)) - offset
                            for start in range(0, d, block)])
        _set_linear_map(self, L.T)


class PCAMetric(MetricLearner):
    """Principal component projection, scikit-learn's ``PCA``.

    Parameters
    ----------
    n_components : int, float or None, default=None
        As in ``sklearn.decomposition.PCA`` (None: all components).
    whiten : bool, default=False
        Divide each component by the square root of its explained variance (as PCA's transform).
    random_state : int or None, default=None
        For the randomized SVD solver.
    verbose : int, default=0
        0: silent; 1 and more: one line at the end of the fit (a closed form: no progress).

    Attributes
    ----------
    estimator_ : PCA
        The fitted wrapped estimator.
    optimality_ : float
        0.0: a closed form (``optimality_measure`` ``"closed_form"``).

    References
    ----------
    K. Pearson. On lines and planes of closest fit to systems of points in space. Philosophical
    Magazine 2(11):559–572, 1901.
    """

    constraint_kind = "none"
    optimality_measure = "closed_form"
    ignores_y = True
    _parameter_constraints: dict = {
        **_wrapped_constraints(PCA, "n_components", "whiten", "random_state"),
        "verbose": VERBOSE,
    }

    def __init__(self, n_components=None, whiten=False, random_state=None, verbose=0):
        store_params(self, locals())

    def _fit(self, X, y, constraints):
        pca = PCA(n_components=self.n_components, whiten=self.whiten,
                  random_state=self.random_state).fit(X)
        L = pca.components_
        if self.whiten:
            L = L / np.sqrt(pca.explained_variance_)[:, None]
        self.estimator_ = pca
        _set_linear_map(self, L)


# --------------------------------------------------------------------------------------------
# RCA
# --------------------------------------------------------------------------------------------


class RCA(MetricLearner):
    """Relevant component analysis (Bar-Hillel, Hertz, Shental & Weinshall 2005, RCA algorithm).

    Chunklets are groups of points known to share a label. The within-chunklet covariance
    ``Ĉ = (1/p) Σ_j Σ_{i ∈ H_j} (x_ji − m̂_j)(x_ji − m̂_j)ᵀ`` (``m̂_j`` the chunklet mean, ``p``
    the number of points in chunklets) is one GEMM of the chunklet-centred
    points, and the metric is ``M = Ĉ⁻¹`` with whitening transform ``W = Λ^{−1/2} Uᵀ`` from
    ``Ĉ = U Λ Uᵀ`` (``Ĉ^{−1/2}`` up to a rotation, which leaves distances unchanged).

    When Ĉ has rank R < d (fewer chunklet degrees of freedom than dimensions) the data are
    projected on the range of Ĉ (its R leading eigenvectors) and whitened there, i.e.
    ``M = Ĉ⁺``; a ``ridge`` δ > 0 instead gives ``M = (Ĉ + δ·tr(Ĉ)/d · I)⁻¹`` in the full space.

    ``n_components = k < d`` adds the algorithm's optional step 2, the constrained Fisher linear
    discriminant (cFLD, §2.3 of the paper): the k directions maximising ``|AᵀS_tA| / |AᵀĈA|``
    (``S_t`` the total covariance of the training points), i.e. the top generalised eigenvectors
    of ``S_t v = λ Ĉ v`` normalised to ``AᵀĈA = I``; whitening in that space is then the
    identity, so ``components_ = Aᵀ``.

    Parameters
    ----------
    n_components : int or None, default=None
        k of the cFLD reduction (None: no reduction).
    chunk_size : int or None, default=None
        None: every class is one chunklet. Otherwise each class is split at random into
        chunklets of ``chunk_size`` points (a remainder of fewer than 2 points is dropped).
    n_chunks : int or None, default=None
        With ``chunk_size``: keep this many chunklets chosen at random (all by default).
    ridge : float, default=0.0
        Relative ridge δ (see above).
    rank_tol : float, default=1e-10
        Eigenvalues of Ĉ below ``rank_tol · λ_max`` count as zero.
    random_state : int or None, default=None
        Seed of the random chunklets.
    verbose : int, default=0
        0: silent; 1 and more: one line at the end of the fit (a closed form: no progress).

    Attributes
    ----------
    chunklet_covariance_ : ndarray (d, d)
        Ĉ, formed when read. With fewer chunklet points than dimensions (and no ridge) the fit
        takes Ĉ's eigenpairs from the thin SVD of the chunklet-centred points instead, so no
        d×d array is formed.
    rank_ : int
        The number of rows of ``components_``: R (``ridge = 0``), d (``ridge > 0``) or k (cFLD).
    optimality_ : float
        0.0: a closed form (``optimality_measure`` ``"closed_form"``).

    References
    ----------
    A. Bar-Hillel, T. Hertz, N. Shental, D. Weinshall. Learning a Mahalanobis metric from
    equivalence constraints. JMLR 6:937–965, 2005.
    """

    constraint_kind = "labels"
    optimality_measure = "closed_form"
    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "chunk_size": [Interval(Integral, 2, None, closed="left"), None],
        "n_chunks": [Interval(Integral, 1, None, closed="left"), None],
        "ridge": [Interval(Real, 0, None, closed="left")],
        "rank_tol": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": VERBOSE,
    }

    def __init__(self, n_components=None, chunk_size=None, n_chunks=None, ridge=0.0,
                 rank_tol=1e-10, random_state=None, verbose=0):
        store_params(self, locals())

    def chunklets(self, y) -> np.ndarray:
        """Chunklet id of every point (−1: in no chunklet), from the labels (the parameters
        checked first, as by ``fit``)."""
        self._validate_params()
        y = np.asarray(y)
        _, codes = np.unique(y, return_inverse=True)
        if self.chunk_size is None:
            return codes
        rng = check_random_state(self.random_state)
        ids = np.full(len(y), -1)
        n_made = 0
        for c in range(codes.max() + 1):
            members = rng.permutation(np.flatnonzero(codes == c))
            n_full = len(members) // self.chunk_size
            for j in range(n_full):
                ids[members[j * self.chunk_size:(j + 1) * self.chunk_size]] = n_made + j
            n_made += n_full
        if self.n_chunks is not None and self.n_chunks < n_made:
            keep = rng.choice(n_made, self.n_chunks, replace=False)
            remap = np.full(n_made, -1)
            remap[np.sort(keep)] = np.arange(self.n_chunks)
            ids = np.where(ids >= 0, remap[np.maximum(ids, 0)], -1)
        return ids

    def _fit(self, X, y, constraints):
        if y is None:
            raise ValueError("RCA needs labels y (chunklets)")
        start = time.perf_counter()
        ids = self.chunklets(y)
        inside = ids >= 0
        Xc, ids = X[inside], ids[inside]
        if len(Xc) < 2:
            raise ValueError("RCA needs at least one chunklet of 2 or more points")
        n_chunk = ids.max() + 1
        counts = np.bincount(ids, minlength=n_chunk)
        means = np.zeros((n_chunk, X.shape[1]))
        np.add.at(means, ids, Xc)
        means /= np.maximum(counts, 1)[:, None]
        centred = Xc - means[ids]
        self._chunklet_factor = centred / np.sqrt(len(Xc))  # Ĉ = FᵀF
        d = X.shape[1]
        if self.ridge == 0 and d > len(Xc):
            # fewer chunklet points than dimensions: Ĉ's eigenpairs from the thin SVD of F
            # (Ĉ = Q Σ² Qᵀ), without the d×d Ĉ
            _, sigma, Qt = scipy.linalg.svd(self._chunklet_factor, full_matrices=False,
                                            check_finite=False)
            lam, U = sigma[::-1] ** 2, Qt[::-1].T  # ascending, as eigh_all's
        else:
            lam, U = eigh_all(self.chunklet_covariance_)
        C_trace = float(np.sum(self._chunklet_factor ** 2))
        if self.ridge > 0:
            lam = lam + self.ridge * C_trace / d
            keep = np.ones(d, dtype=bool)
        else:
            keep = lam > self.rank_tol * max(lam.max(), 0.0)
        if self.n_components is not None and self.n_components < d:
            L = self._cfld(X, U, lam, keep)
        else:
            L = (U[:, keep] / np.sqrt(lam[keep])).T[::-1]  # W = Λ^{−1/2}Uᵀ ≅ Ĉ^{−1/2}
        self.rank_ = len(L)
        _set_linear_map(self, L, trace={"time": [time.perf_counter() - start]}, n_iter=1)
        self.objective_ = float("nan")

    @property
    def chunklet_covariance_(self) -> np.ndarray:
        """Ĉ (d×d), formed on read from the chunklet-centred points."""
        F = vars(self).get("_chunklet_factor")
        if F is None:
            raise AttributeError("'RCA' object has no attribute 'chunklet_covariance_'")
        return F.T @ F

    def _cfld(self, X, U, lam, keep):
        """cFLD directions (Bar-Hillel et al. 2005, §2.3) as rows, in the range of Ĉ (+ ridge)."""
        if keep.sum() < self.n_components:
            raise ValueError(f"n_components={self.n_components} exceeds the rank of the chunklet "
                             f"covariance ({keep.sum()}); give a ridge > 0")
        W = U[:, keep] / np.sqrt(lam[keep])  # whitens Ĉ on its range: WᵀĈW = I
        Xw = (X - X.mean(axis=0)) @ W
        _, V = eigh_all(Xw.T @ Xw / len(X))  # S_t in whitened coordinates
        return (W @ V[:, ::-1][:, :self.n_components]).T
