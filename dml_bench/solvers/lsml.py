"""LSML: metric learning from relative comparisons by minimising squared residuals
(Liu, Guo, Zhang, Jojic & Wang 2012).

A relative comparison is a quadruplet ``(a, b, c, d)`` asking for ``d_M(x_a, x_b) < d_M(x_c, x_d)``
with the (not squared) Mahalanobis distance ``d_M(x, z) = √((x − z)ᵀ M (x − z))``. Its residual
is ``r = d_M(x_a, x_b) − d_M(x_c, x_d)``, penalised by the squared hinge ``H(r) = max(r, 0)²``, and
the metric stays close to a prior M₀ in the LogDet divergence (the paper's objective):

    min_{M ≻ 0}  f(M) = Σ_q w_q H(r_q(M))  +  λ D_ld(M, M₀),
    D_ld(M, M₀) = tr(M M₀⁻¹) − log det(M M₀⁻¹) − d.

Only the violated comparisons (r > 0) contribute to the gradient. With ``v = x_a − x_b``,
``∂ d_M(x_a, x_b) / ∂M = v vᵀ / (2 d_M(x_a, x_b))``, so

    ∇f(M) = Σ_{q: r_q > 0} w_q r_q (v_ab v_abᵀ / d_ab − v_cd v_cdᵀ / d_cd)  +  λ (M₀⁻¹ − M⁻¹).

The comparison part is one weighted sum of outer products over the distinct pairs of the
quadruplets, ``Σ_p ρ_p v_p v_pᵀ`` with ``ρ_p`` the signed, aggregated coefficients
(:class:`~dml_bench.solvers.linalg.PairOuterSum`: one GEMM, no d×d matrix per comparison), and the
distances come from the Cholesky factor of M (``M = R Rᵀ``: ``d_M² = ‖Rᵀ v‖²``, one n×d×d GEMM for
the points and one pass over the pairs). The descent is plain gradient descent with Armijo's
backtracking line search; a trial step is accepted only if M stays positive definite (its
Cholesky factorisation succeeds) and f decreases by the Armijo amount, so f decreases
monotonically and every iterate is a metric.

**Triplets.** A triplet ``(i, j, k)`` of :class:`~dml_bench.constraints.Constraints` (x_j closer
to x_i than x_k is) is the quadruplet ``(i, j, i, k)``. ``fit`` also takes explicit quadruplets.

The paper's section and equation numbers are not cited: its text was not at hand to check them
against, so the equations are written out in full instead.
"""

from __future__ import annotations

import time
from numbers import Integral, Real

import numpy as np
import scipy.linalg
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from ..constraints import Constraints
from .base import VERBOSE, MetricLearner, report_progress, store_params, warn_not_converged
from .linalg import PairOuterSum, components_from_psd, pair_sq_distances
from .sdml import PRIORS, prior_inverse

#: Armijo's sufficient-decrease constant and the backtracking factor of the line search
ARMIJO_C, BACKTRACK = 1e-4, 0.5
#: the line search gives up below this step relative to the first one, ‖M₀‖_F / ‖∇f(M₀)‖_F
MIN_RELATIVE_STEP = 1e-14


class LSML(MetricLearner):
    """Least-squares metric learning from relative comparisons (Liu et al. 2012).

    Parameters
    ----------
    regularization : float, default=1.0
        λ > 0, the weight of ``D_ld(M, M₀)`` against the sum of squared residuals (the paper's
        trade-off parameter; every comparison has weight ``w_q = 1``).
    prior : {"identity", "covariance"}, default="identity"
        M₀ and the starting point of the descent: the identity, or the inverse of the (biased)
        covariance of X (refused in one line when the covariance is singular).
    tol : float, default=1e-4
        Stop when ``‖∇f(M)‖_F ≤ tol · ‖∇f(M₀)‖_F``.
    max_iter : int, default=5000
        Cap on the gradient steps (digits, z-scored with k = 3 triplets, needs about 3,600 to
        reach the default ``tol``; metric-learn's cap is 1000 at ``tol=1e-3``).
    verbose : int, default=0
        0: silent; 1: one line at the end of the fit (steps, objective, relative gradient norm,
        converged, seconds); 2 and more: also one line per gradient step.

    Attributes
    ----------
    metric_, components_ : ndarray (d, d)
        The learned M (positive definite) and L with M = LᵀL.
    objective_ : float
        f at the returned M.
    n_violated_ : int
        Comparisons with a positive residual at the returned M.
    n_iter_ : int
        Gradient steps taken (1 when M₀ is already stationary: the iteration that finds
        ∇f(M₀) = 0 and takes no step).
    converged_ : bool
    optimality_ : float
        ``‖∇f(M)‖_F / ‖∇f(M₀)‖_F`` at the returned M (``optimality_measure``
        ``"relative_gradient_norm"``; 0 when M₀ is already optimal).
    trace_ : dict of ndarray
        Per step: ``objective`` (f after the step), ``gradient_norm`` (relative, as
        ``optimality_``, after the step), ``step`` (the accepted step length), ``violated``
        (comparisons with a positive residual) and ``time`` (seconds since the start of ``fit``).

    span_dim_ : int or None
        The dimension q of the span of the training points it solved in (Notes), None when it
        solved in all d coordinates.
    span_basis_ : ndarray of shape (d, ``span_dim_``) or None
        The orthonormal basis V of that span.

    Notes
    -----
    The paper also extends the model to promote sparsity in M; that extension is not
    implemented here. Every comparison has weight 1.

    With the identity prior and more features than training points LSML solves in the span of
    the points (:mod:`.span`), exactly: the comparisons' gradient is a combination of pair
    differences' outer products, and the prior's gradient ``λ(I − M⁻¹)`` is zero off the span
    where M = I, so from M₀ = I every iterate is the identity there. ``D_ld(M, I)`` is then the
    same on the span coordinates (the complement adds d − q to the trace and to d), and so are
    the distances, f, the gradient's norm and the line search. With the covariance prior it
    does not reduce.

    References
    ----------
    E. Y. Liu, Z. Guo, X. Zhang, V. Jojic and W. Wang. Metric learning from relative comparisons
    by minimizing squared residual. IEEE ICDM 2012.
    L. Armijo. Minimization of functions having Lipschitz continuous first partial derivatives.
    Pacific J. Math. 16(1):1–3, 1966.
    """

    constraint_kind = "triplets"
    #: from M₀ = I, the identity off the span (Notes); not with the covariance prior
    span_complement = "identity"
    optimality_measure = "relative_gradient_norm"

    _parameter_constraints: dict = {
        "regularization": [Interval(Real, 0, None, closed="neither")],
        "prior": [StrOptions(set(PRIORS))],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "verbose": VERBOSE,
    }

    def __init__(self, regularization=1.0, prior="identity", tol=1e-4, max_iter=5000, verbose=0):
        store_params(self, locals())

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, constraints: Constraints | None = None, quadruplets=None):
        """Learn the metric (see :meth:`MetricLearner.fit`).

        Parameters
        ----------
        X, y, constraints
            As :meth:`MetricLearner.fit`; each triplet ``(i, j, k)`` is the comparison
            ``(i, j, i, k)``.
        quadruplets : array-like of shape (n, 4), optional
            Comparisons ``(a, b, c, d)``: ``d_M(x_a, x_b) < d_M(x_c, x_d)``, as row indices of X
            (one-line ``ValueError`` otherwise). They are learned from together with the
            triplets of ``constraints``; given without ``constraints``, they are all that is
            learned from (no constraints are built from ``y``).

        Returns
        -------
        self
        """
        if quadruplets is not None and constraints is None:
            none = np.empty((0, 2), dtype=np.intp)
            constraints = Constraints(none, none, np.empty((0, 3), dtype=np.intp))
        self._quadruplets = quadruplets
        try:
            return super().fit(X, y, constraints)
        finally:
            del self._quadruplets

    def _constraints_needed(self):
        """Nothing here: :meth:`_fit` says in one line what is missing."""
        return ()

    def _solves_in_span(self) -> bool:
        return super()._solves_in_span() and self.prior == "identity"

    def _fit(self, X, y, constraints):
        start = time.perf_counter()
        quads = comparisons(constraints, getattr(self, "_quadruplets", None), len(X))
        A = prior_inverse(X, self.prior, "LSML")
        f = LSMLObjective(X, quads, A, float(self.regularization))
        M0 = np.linalg.inv(A) if self.prior != "identity" else np.eye(X.shape[1])
        M, trace, converged, value, grad_ratio, n_violated = armijo_descent(
            f, M0, self.tol, self.max_iter, start, self if self.verbose >= 2 else None,
            off_span=self._off_span_dim)
        if not converged:
            steps, cap = len(trace["objective"]), f"max_iter = {self.max_iter} steps"
            warn_not_converged(
                self, rule=f"‖∇f(M)‖_F ≤ tol·‖∇f(M₀)‖_F with tol = {self.tol:g}", cap=cap,
                stopped=(None if steps >= self.max_iter else
                         f"the line search found no decrease above round-off after {steps} "
                         f"steps, below the cap {cap},"),
                reached=f"relative gradient norm {grad_ratio:.3g}",
                hint="raise max_iter (or tol)")
        self.metric_ = M
        self.components_ = components_from_psd(M)
        self.objective_ = value
        self.n_violated_ = n_violated
        self.n_iter_ = len(trace["objective"])
        self.converged_ = converged
        self.optimality_ = grad_ratio
        self.trace_ = {k: np.asarray(v, dtype=float) for k, v in trace.items()}


def comparisons(constraints, quadruplets, n_samples: int) -> np.ndarray:
    """The quadruplets to learn from: each triplet (i, j, k) as (i, j, i, k), then the explicit
    ``quadruplets`` (checked: shape (n, 4), integers, rows of X); a one-line ``ValueError`` when
    there are none."""
    T = np.asarray(constraints.triplets, dtype=np.intp).reshape(-1, 3)
    quads = [T[:, [0, 1, 0, 2]]]
    if quadruplets is not None:
        quads.append(checked_quadruplets(quadruplets, n_samples))
    quads = np.vstack(quads)
    if not len(quads):
        pairs = len(constraints.similar) or len(constraints.dissimilar)
        got = "only similar/dissimilar pairs" if pairs else "no constraints"
        raise ValueError(f"LSML needs triplets or quadruplets; got {got}")
    return quads


def checked_quadruplets(quadruplets, n_samples: int) -> np.ndarray:
    """``quadruplets`` as an ``intp`` array of shape (m, 4) of rows of X, or a one-line
    ``ValueError`` naming the argument."""
    try:
        q = np.asarray(quadruplets)
    except (TypeError, ValueError):  # ragged rows
        q = np.asarray(quadruplets, dtype=object)
    if q.ndim != 2 or q.shape[1] != 4:
        raise ValueError(f"quadruplets: expected an array of shape (n, 4) of row indices of X, "
                         f"got shape {q.shape}")
    if q.dtype.kind not in "iu" and len(q):
        raise ValueError(f"quadruplets: indices must be integers, got dtype {q.dtype}")
    if len(q) and (q.min() < 0 or q.max() >= n_samples):
        bad = int(q.min()) if q.min() < 0 else int(q.max())
        raise ValueError(f"quadruplets: index {bad} is not a row of X; indices must be in "
                         f"[0, {n_samples})")
    return q.astype(np.intp).reshape(-1, 4)


def quadruplet_pairs(quads: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct unordered pairs among the quadruplets' ``{a, b}`` and ``{c, d}``, and the
    index of each quadruplet's two pairs among them: (pairs, ab, cd)."""
    m = len(quads)
    both = np.sort(np.vstack([quads[:, :2], quads[:, 2:]]).astype(np.int64), axis=1)
    base = np.int64(both.max(initial=0) + 1)
    keys, inverse = np.unique(both[:, 0] * base + both[:, 1], return_inverse=True)
    inverse = inverse.ravel()
    return np.column_stack([keys // base, keys % base]), inverse[:m], inverse[m:]


class LSMLObjective:
    """f(M) = Σ_q H(d_ab − d_cd) + λ D_ld(M, M₀) and its gradient, on fixed quadruplets.

    Parameters
    ----------
    X : ndarray (n, d)
    quads : ndarray (m, 4)
        Quadruplets ``(a, b, c, d)`` of rows of X.
    A : ndarray (d, d)
        M₀⁻¹ (positive definite).
    lam : float
        λ.
    """

    def __init__(self, X, quads, A, lam):
        self.X, self.A, self.lam = X, A, lam
        self.pairs, self.ab, self.cd = quadruplet_pairs(quads)
        self.outer = PairOuterSum(X, self.pairs)
        self.logdet_A = 2.0 * np.sum(np.log(np.diag(np.linalg.cholesky(A))))

    def value(self, M):
        """(f(M), state for :meth:`gradient`); f = ∞ when M is not positive definite."""
        try:
            R = scipy.linalg.cholesky(M, lower=True)
        except (np.linalg.LinAlgError, ValueError):  # not positive definite, or not finite
            return np.inf, None
        dist = np.sqrt(pair_sq_distances(self.X @ R, self.pairs))
        r = dist[self.ab] - dist[self.cd]
        r = np.maximum(r, 0.0)
        logdet = 2.0 * np.sum(np.log(np.diag(R)))
        div = np.vdot(M, self.A) - logdet - self.logdet_A - len(M)
        return float(r @ r + self.lam * div), (R, dist, r)

    def gradient(self, state):
        """∇f at the M whose :meth:`value` gave ``state``, and the number of violated
        comparisons."""
        R, dist, r = state
        active = np.flatnonzero(r > 0)
        rho = np.zeros(len(self.pairs))
        if len(active):
            with np.errstate(divide="ignore", invalid="ignore"):
                # d = 0 only for a zero difference v (M ≻ 0), whose v vᵀ is 0: coefficient 0
                inv = np.where(dist > 0, 1.0 / dist, 0.0)
            ab, cd, ra = self.ab[active], self.cd[active], r[active]
            rho += np.bincount(ab, ra * inv[ab], minlength=len(rho))
            rho -= np.bincount(cd, ra * inv[cd], minlength=len(rho))
        R_inv = scipy.linalg.solve_triangular(R, np.eye(len(R)), lower=True)
        G = self.outer(rho) + self.lam * (self.A - R_inv.T @ R_inv)
        return (G + G.T) / 2, len(active)


def armijo_descent(f: LSMLObjective, M, tol, max_iter, start, reporter=None, off_span=0):
    """Gradient descent on f from M with Armijo backtracking (``ARMIJO_C``, ``BACKTRACK``).

    The first trial step of an iteration is twice the last accepted one
    (``2 ‖M₀‖_F / ‖∇f(M₀)‖_F`` at first); it is halved until ``M − t∇f`` is positive definite and
    ``f(M − t∇f) ≤ f(M) − ARMIJO_C · t ‖∇f‖_F²``. Returns (M, trace, converged, f(M),
    ‖∇f(M)‖_F / ‖∇f(M₀)‖_F, violated comparisons at M); a progress line per step for
    ``reporter`` (``verbose ≥ 2``). ``off_span``: the dimensions off the span of a solve in the
    span, where M₀ is the identity (they count in ‖M₀‖_F).
    """
    value, state = f.value(M)
    G, violated = f.gradient(state)
    norm0 = float(np.linalg.norm(G))
    trace = _empty_trace()
    if norm0 == 0.0:  # M₀ is stationary: one iteration, which finds ∇f = 0 and takes no step
        for key, val in zip(trace, (value, 0.0, 0.0, violated, time.perf_counter() - start)):
            trace[key].append(val)
        return M, trace, True, value, 0.0, violated
    step = float(np.sqrt(np.vdot(M, M) + off_span)) / norm0
    min_step = MIN_RELATIVE_STEP * step
    ratio = 1.0
    for _ in range(max_iter):
        g2 = float(np.vdot(G, G))
        step *= 2.0
        while True:
            trial = M - step * G
            new_value, new_state = f.value(trial)
            if new_value <= value - ARMIJO_C * step * g2:
                break
            step *= BACKTRACK
            if step < min_step:
                return M, trace, False, value, ratio, violated
        M, value, state = trial, new_value, new_state
        G, violated = f.gradient(state)
        ratio = float(np.linalg.norm(G)) / norm0
        for key, val in zip(trace, (value, ratio, step, violated, time.perf_counter() - start)):
            trace[key].append(val)
        if reporter is not None:
            report_progress(reporter, len(trace["time"]), objective=value, gradient_norm=ratio,
                            step=step, violated=violated)
        if ratio <= tol:
            return M, trace, True, value, ratio, violated
    return M, trace, False, value, ratio, violated


def _empty_trace() -> dict:
    return {k: [] for k in ("objective", "gradient_norm", "step", "violated", "time")}
