"""SDPMetric: large-margin metric learning on the trace-one spectrahedron (Shen, Kim & Wang 2010).

For triplets r = (i, j, k) (``x_j`` a same-class target of the anchor ``x_i``, ``x_k`` an impostor)
with ``a_r = x_i − x_k``, ``b_r = x_i − x_j`` and ``A_r = a_r a_rᵀ − b_r b_rᵀ`` (Eq. (5)), SDPMetric
maximises Eq. (8),

    f(X, ρ) = ρ − C Σ_r λ(⟨A_r, X⟩ − ρ)   over   X ⪰ 0, tr X = 1, ρ ∈ ℝ,

with λ the squared hinge loss (11) or the Huber loss (16), a differentiable surrogate of the
soft-margin SDP (4). f is jointly concave in (X, ρ) and is maximised by alternating (§III,
Algorithm 1): ρ by exact one-dimensional maximisation (the derivative in ρ is piecewise linear, so
its root is found in closed form after sorting the smallest margins), then X by the rank-one
step (7) ``X ← (1 − α) X + α v vᵀ`` with v the leading eigenvector of ``∇_X f = Σ_r c_r A_r`` (problem
(18)), ``c_r = −C λ′(⟨A_r, X⟩ − ρ) ≥ 0``, and α in (0, 1] from a backtracking line search that
enforces the Wolfe conditions (19).

Costs per iteration: the margins ``m_r = ⟨A_r, X⟩`` are updated incrementally,
``m ← (1 − α) m + α ((a_r·v)² − (b_r·v)²)`` from ``u = X_data v`` (one GEMV over the n data rows,
then gathers), so each line-search trial is O(|S|); the gradient is never formed per triplet:
``∇_X f = Dᵀ diag(w) D`` with D the difference rows of the distinct (anchor, impostor) and
(anchor, target) pairs whose summed weight is non-zero and ``w = [c_a; −c_b]`` (k-NN triplets share
their pairs k times; the losses are exactly zero for triplets with a large enough margin), and
``top_eigen.top_eigenvector`` computes its leading eigenvector warm-started from the previous one.
X itself is a dense d×d matrix updated in O(d²). The ρ update sorts only the margins below the
root (``np.partition``); the margins of the vertex and every line-search trial are one compiled
pass over the triplets each.

The Frank-Wolfe gap ``⟨∇_X f, v vᵀ − X⟩ = λ_max(∇_X f) − Σ_r c_r m_r`` costs nothing extra; since
ρ_t maximises f(X_t, ·), it bounds the joint sub-optimality: ``max f − f(X_t, ρ_t) ≤ gap_t``.
"""

from __future__ import annotations

import time
from numbers import Integral, Real

import numpy as np
from numba import njit
from sklearn.utils._param_validation import Interval, StrOptions

from .base import (VERBOSE, MetricLearner, rate_hint, report_progress, store_params,
                   warn_not_converged)
from .linalg import JIT_OPTIONS, components_from_psd, pair_sq_distances, triplet_pairs
from .top_eigen import top_eigenvector
from .span import LeavesSpan

LOSSES = ("squared_hinge", "huber")
STOPPING_RULES = ("objective", "gap")


class SDPMetric(MetricLearner):
    """SDPMetric (Shen, Kim & Wang 2010, Eq. (8), Algorithms 1–2, Wolfe conditions (19)).

    Parameters
    ----------
    loss : {"squared_hinge", "huber"}, default="squared_hinge"
        λ of Eq. (8): the squared hinge loss (11) (SDPMetric-S) or the Huber loss (16)
        (SDPMetric-H); §IV reports both.
    C : float, default=0.1
        Trade-off between the margin ρ and the total loss (Eqs. (4), (8)). The paper selects it on
        a validation split (§IV: 70/15/15) and reports no value; 0.1 is the middle of
        {0.01, 0.1, 1}, for z-scored features. With the Huber loss, (8) is bounded above only
        when ``C·|S| > 1`` (for large ρ the loss grows linearly with slope ``C·|S|``); this is
        checked.
    h : float, default=0.5
        Huber width of Eq. (16) ("usually between 0.01 and 0.5"; Fig. 1 plots h = 0.5).
        Ignored by the squared hinge loss.
    tol : float, default=1e-5
        Stopping tolerance (see ``stopping``; the paper gives none).
    max_iter : int, default=1000
        Cap on the iterations of Algorithm 1 (each: one ρ update and one rank-one X step).
        The paper gives no value; 1000 as the other first-order spectrahedron solver of this
        benchmark (DML-eig).
    stopping : {"gap", "objective"}, default="gap"
        ``"gap"``: the Frank-Wolfe gap ``⟨∇_X f, v vᵀ − X⟩ ≤ tol · |f_t|`` (an upper bound on
        ``max f − f(X_t, ρ_t)``, since ρ_t is optimal for X_t), so ``converged_`` certifies the
        optimum. ``"objective"``: relative objective change
        ``|f_t − f_{t−1}| ≤ tol · max(|f_t|, |f_{t−1}|)``, which certifies nothing: it can fire
        while the gap is still a multiple of ``|f|``, at an iteration that round-off moves.
    c1, c2 : float, default=1e-4, 0.1
        Constants of the Wolfe conditions (19), ``0 < c1 < c2 < 1``. The paper defers to Nocedal
        & Wright [15] and gives no values: c1 = 1e-4 is theirs; c2 = 0.1 is their value for
        methods that need an accurate line search. With c2 = 0.9 the strong curvature condition
        also accepts steps far past the line maximiser whose gain is ~c1·α·gap, small enough to
        end a run early through the relative-objective-change rule.
    backtrack : float, default=0.5
        Contraction factor of the backtracking line search (α ← backtrack · α from α = 1).
    max_line_search : int, default=60
        Trials per line search.
    verbose : int, default=0
        0: silent; 1: one line at the end of the fit (iterations, objective, relative gap,
        converged, seconds); 2 and more: also one line per iteration (f, ρ, relative gap, step).

    With more features than training points, the fit runs in the span of the points'
    differences (:mod:`~dml_bench.solvers.span`; ``span_dim_``), with the same steps as in all
    d coordinates while each vertex lies in the span: ``∇_X f = Σ_r c_r A_r`` lives on the span,
    so when its largest eigenvalue there is positive, that eigenvector is the vertex of (18) in
    the whole space too, and every step keeps ``X = c·I`` off the span, with
    ``c = Π_t (1 − α_t)/d`` from ``X_1 = I/d``; the margins, ρ and the gap see only the span.
    When the largest eigenvalue on the span is ≤ 0, the whole space's vertex lies off the span
    (eigenvalue 0, any direction there), so the fit runs again in all coordinates.

    Attributes
    ----------
    metric_ : ndarray (d, d)
        The learned trace-one PSD Mahalanobis matrix X.
    components_ : ndarray (d, d)
        L with X = LᵀL.
    rho_ : float
        The margin ρ, optimal for the returned X.
    objective_ : float
        f(X, ρ) of Eq. (8) at (``metric_``, ``rho_``).
    n_iter_ : int
    converged_ : bool
    optimality_ : float
        Relative Frank-Wolfe gap ``gap/|f|`` at (``metric_``, ``rho_``), recomputed from their
        exact margins (``optimality_measure`` ``"relative_duality_gap"``; the ``stopping="gap"``
        test, a bound on the relative sub-optimality; ≤ 0 gaps, optimal, are reported as 0).
    trace_ : dict of ndarray
        Per iteration t (ρ update at X_t, then the step from X_t): ``objective`` f(X_t, ρ_t),
        ``rho`` ρ_t, ``gap`` (Frank-Wolfe gap at (X_t, ρ_t)), ``alpha`` (step taken),
        ``wolfe_armijo`` / ``wolfe_curvature`` (whether the first / second inequality of (19)
        held at that α), ``n_active`` (triplets with non-zero loss gradient), ``time`` (seconds
        since the start of ``fit``). The last entry of a converged run takes no step (α = 0, both
        flags False).
    span_dim_ : int or None
        The dimension of the span the fit ran in, or None when it ran in all coordinates.
    span_basis_ : ndarray (d, ``span_dim_``) or None
        An orthonormal basis of that span.

    Notes
    -----
    The paper maximises f but prints (19) in the minimisation form of Nocedal & Wright
    (sufficient *decrease* ``f(X + αp) ≤ f(X) + c1 α ⟨p, ∇f⟩``, and ``|⟨p, ∇f(X + αp)⟩| ≤
    c2 |⟨p, ∇f(X)⟩|``) while speaking of "gradient descent" and "sufficient reduction on the value
    of f". Read with f the maximised objective, the first inequality caps the increase and fails
    for every small α. The conditions are therefore implemented exactly as printed for the cost
    F = −f that the descent reduces: ``F(X + αp) ≤ F(X) + c1 α ⟨p, ∇F(X)⟩`` and
    ``|⟨p, ∇F(X + αp)⟩| ≤ c2 |⟨p, ∇F(X)⟩|`` (the second is the same for f and −f).
    The search starts at α = 1 (the largest step keeping X in the spectrahedron), contracts α
    until both hold, and bisects once the acceptable interval is bracketed; when F still decreases
    at α = 1 the curvature condition cannot hold on (0, 1] and α = 1, the constrained line
    minimiser, is taken (recorded as ``wolfe_curvature = False``).

    Algorithm 1 alternates the ρ update (line 3) with Algorithm 2 on X (line 4), whose own
    stopping rule the paper does not give (the algorithm boxes did not survive in our copy of the
    text, nor do a stopping rule, an iteration cap or the values of C, h used in §IV). One X step
    per ρ update is used: block-coordinate ascent of the jointly concave, differentiable f, whose
    ρ update costs a sort while an X step costs a leading eigenvector. X starts at I/d.

    References
    ----------
    C. Shen, J. Kim and L. Wang. Scalable large-margin Mahalanobis distance metric learning.
    IEEE Trans. Neural Networks 21(9):1524–1530, 2010.
    J. Nocedal and S. J. Wright. Numerical Optimization. Springer, 1999 (§3.1, Algorithm 3.1).
    """

    constraint_kind = "triplets"
    optimality_measure = "relative_duality_gap"
    span_complement = "identity"
    _parameter_constraints: dict = {
        "loss": [StrOptions(set(LOSSES))],
        "C": [Interval(Real, 0, None, closed="neither")],
        "h": [Interval(Real, 0, None, closed="neither")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "stopping": [StrOptions(set(STOPPING_RULES))],
        "c1": [Interval(Real, 0, 1, closed="neither")],  # and c1 < c2: _check_params
        "c2": [Interval(Real, 0, 1, closed="neither")],
        "backtrack": [Interval(Real, 0, 1, closed="neither")],
        "max_line_search": [Interval(Integral, 1, None, closed="left")],
        "verbose": VERBOSE,
    }

    def __init__(self, loss="squared_hinge", C=0.1, h=0.5, tol=1e-5, max_iter=1000,
                 stopping="gap", c1=1e-4, c2=0.1, backtrack=0.5, max_line_search=60,
                 verbose=0):
        store_params(self, locals())

    def _span_complement_scale(self) -> float:
        return self._complement

    def _check_params(self, n_triplets):
        """What the constraints of each parameter cannot say: c1 < c2, at least one triplet and,
        with the Huber loss, C·|S| > 1."""
        if not self.c1 < self.c2:
            raise ValueError(f"need c1 < c2 (Wolfe conditions), got c1={self.c1}, c2={self.c2}")
        if n_triplets == 0:
            raise ValueError("SDPMetric needs at least one triplet")
        if self.loss == "huber" and self.C * n_triplets <= 1:
            raise ValueError(
                f"with the Huber loss Eq. (8) is unbounded unless C·|S| > 1 "
                f"(C = {self.C}, |S| = {n_triplets})")

    def _fit(self, X, y, constraints):
        triplets = np.asarray(constraints.triplets, dtype=np.intp).reshape(-1, 3)
        self._check_params(len(triplets))
        start = time.perf_counter()
        off_span = getattr(self, "_off_span_dim", 0)  # solving in the span (:mod:`.span`)
        d = X.shape[1] + off_span  # the whole space's, of X_1 = I/d
        loss = _Loss(self.loss, self.C, self.h)
        i, j, k = triplets.T
        # distinct pairs; a_r = x_i − x_k is pairs[ia[r]], b_r = x_i − x_j is pairs[ib[r]]
        pairs, ib, ia = triplet_pairs(triplets)

        Xm = np.eye(X.shape[1]) / d  # X_1 = I/d: trace one, the Euclidean metric
        off = 1.0 / d  # X's value off the span, X = off·I there
        q = pair_sq_distances(X, pairs) / d
        m = q[ia] - q[ib]  # ⟨A_r, X_1⟩

        trace = {key: [] for key in ("objective", "rho", "gap", "alpha", "wolfe_armijo",
                                     "wolfe_curvature", "n_active", "time")}

        def vertex(m, v0):
            """At margins m: ρ (Algorithm 1, line 3), f, c, the vertex v of (18), p = ⟨A_r, v vᵀ⟩
            and the Frank-Wolfe gap."""
            rho = loss.optimal_rho(m)
            f, c = loss.value_and_weights(m, rho)
            # ∇_X f = Σ_r c_r A_r = Dᵀ diag(w) D over the pairs with non-zero signed weight
            on = np.flatnonzero(c)  # the triplets with a loss: few, with a good margin
            w = (np.bincount(ia[on], c[on], len(pairs))
                 - np.bincount(ib[on], c[on], len(pairs)))
            act = np.flatnonzero(w)
            v = top_eigenvector(X[pairs[act, 0]] - X[pairs[act, 1]], w[act], v0=v0)
            p = _vertex_margins(X @ v, i, j, k, np.empty(len(m)))  # ⟨A_r, v vᵀ⟩
            if off_span and c @ p <= 0:  # λ_max ≤ 0 here: the whole space's vertex is off it
                raise LeavesSpan
            return rho, f, c, v, p, float(c @ (p - m))  # gap ⟨∇_X f, v vᵀ − X⟩ = −⟨p, ∇F⟩

        v, converged, f_prev, report = None, False, None, self.verbose >= 2
        for it in range(1, self.max_iter + 1):
            rho, f, c, v, p, gap = vertex(m, v)
            if self.stopping == "gap":
                stop = gap <= self.tol * abs(f)
            else:
                stop = f_prev is not None and abs(f - f_prev) <= self.tol * max(abs(f), abs(f_prev))
            if stop or gap <= 0:  # gap ≤ 0: X_t maximises f(·, ρ_t), hence (X_t, ρ_t) is optimal
                converged = True
                alpha, armijo, curvature = 0.0, False, False  # no step: no line search
            else:
                alpha, armijo, curvature = _wolfe_backtracking(
                    loss, m, p - m, rho, f, gap, self.c1, self.c2, self.backtrack,
                    self.max_line_search)
            for key, val in zip(trace, (f, rho, gap, alpha, armijo, curvature,
                                        int(np.count_nonzero(c)), time.perf_counter() - start)):
                trace[key].append(val)
            if report:
                report_progress(self, it, objective=f, rho=rho, relative_gap=gap / abs(f),
                                step=alpha)
            if converged:
                break
            m += alpha * (p - m)  # Eq. (7): X ← X + α (v vᵀ − X)
            Xm *= 1 - alpha
            Xm += alpha * np.outer(v, v)
            off *= 1 - alpha
            f_prev = f
        Xm = (Xm + Xm.T) / 2
        self.components_ = components_from_psd(Xm)
        self.metric_ = Xm
        # exact margins of the returned X (the incremental ones carry round-off)
        XL = X @ self.components_.T
        q = pair_sq_distances(XL, pairs)
        m = q[ia] - q[ib]
        rho, f, *_, gap = vertex(m, v)
        self._complement = off
        self.rho_ = float(rho)
        self.objective_ = float(f)
        self.n_iter_ = len(trace["objective"])
        self.converged_ = converged
        self.optimality_ = max(gap, 0.0) / abs(f)
        self.trace_ = {key: np.asarray(vals) for key, vals in trace.items()}
        if not converged:
            self._warn_capped()

    def _warn_capped(self):
        """The ConvergenceWarning of a fit that reached ``max_iter``."""
        rule = ("relative Frank-Wolfe gap ≤ tol" if self.stopping == "gap"
                else "relative change of f ≤ tol")
        warn_not_converged(
            self, rule=f"{rule} = {self.tol:g}", cap=f"max_iter = {self.max_iter} iterations",
            reached=f"relative Frank-Wolfe gap {self.optimality_:.3g}",
            hint=rate_hint(self.max_iter, self.optimality_, self.tol, rate="Frank-Wolfe O(1/t)"))


class _Loss:
    """λ of Eq. (11) or (16), applied to the margin violations ``z_r = m_r − ρ``."""

    def __init__(self, name, C, h):
        self.name, self.C, self.h = name, float(C), float(h)

    def support_on_segment(self, m, dm, rho):
        """Indices of the triplets whose loss ``λ(m_r + α dm_r − ρ)`` is non-zero for some
        α ∈ [0, 1]: λ vanishes for ``z ≥ 0`` (11) or ``z ≥ h`` (16), and z is linear in α."""
        edge = 0.0 if self.name == "squared_hinge" else self.h
        return np.flatnonzero(np.minimum(m, m + dm) < rho + edge)

    def value_and_slope(self, m, dm, alpha, rho):
        """``f(X + α p, ρ)`` and ``Σ_r c_r dm_r`` at the margins ``m + α dm`` (a line-search
        trial of :func:`_wolfe_backtracking`): :meth:`value_and_weights` in one compiled pass."""
        if self.name == "squared_hinge":
            return _squared_hinge_value_and_slope(m, dm, alpha, rho, self.C)
        return _huber_value_and_slope(m, dm, alpha, rho, self.C, self.h)

    def value_and_weights(self, m, rho):
        """``f(X, ρ)`` of Eq. (8) and ``c_r = −C λ′(m_r − ρ) ≥ 0`` (``∇_X f = Σ_r c_r A_r``)."""
        z = m - rho
        if self.name == "squared_hinge":  # Eq. (11): λ(z) = z² for z < 0, 0 otherwise
            u = np.maximum(-z, 0.0)
            return rho - self.C * float(u @ u), 2.0 * self.C * u
        h = self.h  # Eq. (16): 0 (z ≥ h), (h − z)²/(4h) (|z| < h), −z (z ≤ −h)
        u = np.clip(h - z, 0.0, 2 * h)  # h − z on the quadratic piece
        lam = u * u / (4 * h) + np.maximum(-z - h, 0.0)
        return rho - self.C * float(lam.sum()), self.C * u / (2 * h)

    def optimal_rho(self, m, prefix: int = 4096):
        """``argmax_ρ f(X, ρ)`` (Algorithm 1, line 3) in closed form.

        ``∂f/∂ρ = 1 − Σ_r c_r(ρ)`` with ``c_r`` piecewise linear and non-decreasing in ρ, so the
        maximiser solves ``Σ_r c_r(ρ)/C = 1/C``: a piecewise-linear equation whose pieces are
        delimited by the sorted breakpoints (``m_r`` for (11), ``m_r ± h`` for (16)).

        Only the margins below the root matter (a margin above ``ρ + h`` has ``c_r = 0``), and
        with a good margin few are: the equation is solved on the ``prefix`` smallest margins
        (``np.partition``, then a sort of those), which gives the same root as a full sort
        whenever it lies below the breakpoint of the smallest margin left out; otherwise the
        prefix is doubled.
        """
        h = 0.0 if self.name == "squared_hinge" else self.h
        while prefix < len(m):
            part = np.partition(m, prefix)
            smallest = np.sort(part[:prefix])
            rho = self._rho_of_sorted(smallest)
            # below the left-out breakpoints, and (Huber) not past the prefix's own last one,
            # where its sum saturates and the root would be extrapolated
            if rho <= part[prefix] - h and (h == 0.0 or rho <= smallest[-1] + h):
                return rho
            prefix *= 4
        return self._rho_of_sorted(np.sort(m))

    def _rho_of_sorted(self, m):
        """The root of :meth:`optimal_rho` from sorted margins ``m``."""
        if self.name == "squared_hinge":  # Σ_r (ρ − m_r)_+ = 1/(2C)
            return _solve_piecewise_linear(m, np.ones(len(m), dtype=np.int64), 1.0, 0.5 / self.C)
        h = self.h  # Σ_r clip((ρ − m_r + h)/(2h), 0, 1) = 1/C: slope ±1/(2h) from m − h / m + h
        lower = m - h
        upper = lower + 2 * h
        # merge the two sorted knot lists (a lower knot goes first on ties) without a 2n-sort
        n = len(m)
        pos_lower = np.arange(n) + np.searchsorted(upper, lower, side="left")
        pos_upper = np.arange(n) + np.searchsorted(lower, upper, side="right")
        knots, changes = np.empty(2 * n), np.empty(2 * n, dtype=np.int64)
        knots[pos_lower], knots[pos_upper] = lower, upper
        changes[pos_lower], changes[pos_upper] = 1, -1
        return _solve_piecewise_linear(knots, changes, 0.5 / h, 1.0 / self.C)


def _solve_piecewise_linear(knots, slope_changes, unit, target):
    """Smallest ρ with ``g(ρ) = target`` for ``g(ρ) = unit · Σ_j s_j (ρ − e_j)_+``.

    ``e`` sorted, integer ``s_j`` whose running sums are ≥ 0 (g non-decreasing), and
    ``0 < target < g(∞)``.
    """
    slope = unit * np.cumsum(slope_changes)  # slope of g on [e_j, e_{j+1}] (exact counts × unit)
    g = np.concatenate([[0.0], np.cumsum(slope[:-1] * np.diff(knots))])  # g(e_j)
    j = max(int(np.searchsorted(g, target, side="left")) - 1, 0)  # g(e_j) < target ≤ g(e_{j+1})
    while slope[j] <= 0 and j > 0:  # round-off at the flat end of g (only when target ≈ g(∞))
        j -= 1
    return float(knots[j] + (target - g[j]) / slope[j])


def _wolfe_backtracking(loss, m, dm, rho, f0, gap, c1, c2, backtrack, max_trials):
    """Step α ∈ (0, 1] on ``X + α p`` satisfying the Wolfe conditions (19) for F = −f.

    Along the segment the margins are ``m + α dm`` (``dm_r = ⟨A_r, p⟩``), so each trial is
    O(number of triplets with a loss somewhere on the segment):
    ``F(α) = −f(X + αp, ρ)`` and ``F′(α) = ⟨p, ∇F(X + αp)⟩ = −Σ_r c_r(α) dm_r``;
    ``F′(0) = −gap < 0``. F is convex in α, so the Armijo set is an interval [0, ᾱ] and the
    curvature set an interval around the line minimiser: backtracking from α = 1 until an
    acceptable α is met or bracketed, then bisection of the bracket. Returns
    ``(α, armijo held, curvature held)``.
    """
    F0, dF0 = -f0, -gap
    # only the triplets with a loss somewhere on the segment add to F and F′ (the others add
    # exact zeros): the trials run over those alone
    near = loss.support_on_segment(m, dm, rho)
    m, dm = m[near], dm[near]
    lo, hi, alpha = 0.0, None, 1.0
    best = (0.0, True, False)
    for _ in range(max_trials):
        f, slope = loss.value_and_slope(m, dm, alpha, rho)
        F, dF = -f, -slope
        armijo = F <= F0 + c1 * alpha * dF0
        curvature = abs(dF) <= c2 * abs(dF0)
        if armijo and curvature:
            return alpha, True, True
        if armijo and dF < 0:  # left of the acceptable interval: larger steps needed
            if hi is None:  # F still decreasing at α = 1: the constrained line minimiser
                return alpha, armijo, curvature
            lo, best = alpha, (alpha, armijo, curvature)
        else:  # right of it (insufficient decrease, or past the line minimiser)
            hi = alpha
        alpha = backtrack * alpha if lo == 0.0 else 0.5 * (lo + hi)
    return best


@njit(**JIT_OPTIONS)
def _vertex_margins(u, i, j, k, out):
    """``out_r = ⟨A_r, v vᵀ⟩ = (u_i − u_k)² − (u_i − u_j)²`` for ``u = X v`` (one pass)."""
    for r in range(i.shape[0]):
        a = u[i[r]] - u[k[r]]
        b = u[i[r]] - u[j[r]]
        out[r] = a * a - b * b
    return out


@njit(**JIT_OPTIONS)
def _squared_hinge_value_and_slope(m, dm, alpha, rho, C):
    """``f`` of Eq. (8) with the squared hinge (11) and ``Σ_r c_r dm_r`` at the margins
    ``m + α dm``, as :meth:`_Loss.value_and_weights` computes them, in one pass."""
    total, slope = 0.0, 0.0
    for r in range(m.shape[0]):
        z = min(m[r] + alpha * dm[r] - rho, 0.0)
        total += z * z
        slope += z * dm[r]
    return rho - C * total, -2.0 * C * slope


@njit(**JIT_OPTIONS)
def _huber_value_and_slope(m, dm, alpha, rho, C, h):
    """As :func:`_squared_hinge_value_and_slope` for the Huber loss (16)."""
    total, slope = 0.0, 0.0
    for r in range(m.shape[0]):
        z = m[r] + alpha * dm[r] - rho
        u = min(max(h - z, 0.0), 2 * h)
        total += u * u / (4 * h) + max(-z - h, 0.0)
        slope += u * dm[r]
    return rho - C * total, C / (2 * h) * slope
