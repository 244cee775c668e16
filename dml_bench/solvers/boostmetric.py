"""BoostMetric: boosting trace-one rank-one matrices (Shen, Kim, Wang & van den Hengel 2009, 2012).

Each triplet r = (i, j, k) (anchor i, target neighbour j of its class, impostor k of another
class) has the margin ``ρ_r = ‖x_i − x_k‖²_X − ‖x_i − x_j‖²_X = ⟨A_r, X⟩`` with
``A_r = a_r a_rᵀ − b_r b_rᵀ``, ``a_r = x_i − x_k``, ``b_r = x_i − x_j``. BoostMetric with the
exponential loss solves the primal problem (P1)

    min_{X ⪰ 0}  log Σ_r exp(−ρ_r) + v Tr(X),        ρ_r = ⟨A_r, X⟩,

whose Lagrange dual (D1) is the entropy maximisation ``max_u −Σ_r u_r log u_r`` subject to
``Σ_r u_r A_r ⪯ v I``, ``1ᵀu = 1``, ``u ≥ 0``; at the optimum ``u_r ∝ exp(−ρ_r)`` (KKT). X is
grown as ``X = Σ_j w_j Z_j`` of trace-one rank-one base learners ``Z_j = v_j v_jᵀ``, so
``Tr X = Σ_j w_j``. The stage-wise algorithm (Algorithm 2 of the JMLR paper):

1. ``u_r = 1/|I|`` (X = 0).
2. Base learner = most violated dual constraint: ``Z_j = v vᵀ``, v the top eigenvector of
   ``Â = Σ_r u_r A_r``.
3. Stop when ``λ_max(Â) ≤ v``: u is dual feasible, no base learner decreases the objective.
4. Weight: the exact minimiser ``w_j = argmin_{w ≥ 0} log Σ_r u_r exp(−w H_rj) + v w``,
   ``H_rj = ⟨A_r, Z_j⟩``, the root of ``Σ_r (H_rj − v) u_r exp(−w H_rj) = 0`` (Algorithm 1 is a
   bisection search; here bisection safeguards Newton steps, the alternative the paper names).
5. ``u_r ← u_r exp(−w_j H_rj)``, normalised; next j.

The stage-wise weights are never revised, so step 3 can be met at a point that is not optimal for
(P1): u is then dual feasible and the primal-dual gap ``v Tr X − Σ_r u_r ρ_r = ⟨∇f(X), X⟩ ≥ 0``
bounds the sub-optimality (recorded in ``trace_["gap"]``). The totally corrective variant of
column generation (``update="totally_corrective"``: after each new base learner, re-solve (P1)
over all weights w ≥ 0) closes that gap and reaches the optimum of (P1).

Cost per iteration: no d×d matrix per triplet and no T×d×d tensor. The triplets' pairs are
reduced to the distinct pairs (``triplet_pairs``), ``Â`` is ``Σ_p c_p d_p d_pᵀ`` with the signed
pair sums c of u, formed as ``X̄ᵀ L_c X̄`` (``linalg.PairOuterSum``: one sparse product and one
n_points×d×d GEMM); its top eigenpair is one LAPACK call on the d×d matrix. Then
``H_rj = (a_r·v)² − (b_r·v)²`` from ``z = X v`` (one pass over the points), the margins are kept
incrementally, ``ρ ← ρ + w_j H_j``, and X is assembled once at the end from its rank-one terms.

With more features than training points BoostMetric solves in the span of the points
(:mod:`.span`), exactly: X starts at 0 and each base learner is the top eigenvector of
``Â = Σ_r u_r A_r``, a combination of the triplets' difference outer products. When
``λ_max(Â) > 0`` that eigenvector lies in the range of Â, in the span; otherwise
``λ_max(Â) ≤ 0 ≤ v`` and step 3 stops both solves. The margins, u and the weights are the same on
the span coordinates, and X is zero off the span.
"""

from __future__ import annotations

import time
from numbers import Integral, Real

import numpy as np
from scipy.special import logsumexp
from sklearn.utils._param_validation import Interval, StrOptions

from .base import (VERBOSE, MetricLearner, integral_floats, report_progress, store_params,
                   warn_not_converged)
from .linalg import PairOuterSum, components_from_psd, triplet_pairs
from .top_eigen import leading_eigenvector

UPDATES = ("stagewise", "totally_corrective")

#: the line search stops at ``|g'(w)| ≤ _LINE_SEARCH_TOL · max_r |H_rj|`` (or round-off bracket)
_LINE_SEARCH_TOL = 1e-12


class BoostMetric(MetricLearner):
    """BoostMetric with the exponential loss (Shen et al. 2009/2012: (P1), Algorithms 1–2).

    Parameters
    ----------
    v : float ≥ 0, finite, default=1e-7
        Trace regulariser of (P1); Shen et al.'s Algorithm 2 takes it as an optional input to be
        set to a very small value such as 10⁻⁷. Absolute, in units of squared distances. (P1) is
        bounded below only if v is at least the triplets' hard margin
        ``max_{X ⪰ 0, Tr X = 1} min_r ⟨A_r, X⟩``; with a tiny v and triplets that some metric
        separates (z-scored wine, USPS), X grows without bound and the fit runs to ``max_iter``,
        as the original algorithm does; its ConvergenceWarning then says so, with the margin
        ``min_r ⟨A_r, X⟩ / Tr X`` of the returned X that a bounding v must exceed (z-scored
        wine, breast cancer, digits, k = 3 triplets: 0.33, 0.0073, 0.25; 10⁴ iterations leave
        the dual infeasibility where 10³ do).
    max_iter : int, default=1000
        Most base learners (Ying & Li 2012, §5: at most 10³ iterations for BoostMetric); an
        integral float such as ``1000.0`` is taken as the int.
    tol : float, default=1e-9
        Stop when ``λ_max(Σ_r u_r A_r) ≤ v + tol · λ₁``, λ₁ its value at the first iteration
        (uniform u): the paper's rule ``λ_max ≤ v`` (``tol=0``) with room for round-off (the
        literal rule ends with a few steps of w ≈ 1e-13 as λ_max closes on v). With
        ``update="totally_corrective"`` also the tolerance of the restricted problem's projected
        gradient (``max(tol, 1e-12) · λ₁``).
    update : {"stagewise", "totally_corrective"}, default="stagewise"
        ``"stagewise"``: Algorithm 2, each weight fixed once by its line search.
        ``"totally_corrective"``: after each line search, all weights are re-optimised, i.e. (P1)
        restricted to the base learners so far (projected Newton, O(T·J²) per Newton step and
        T×J memory for J base learners: meant for small problems and as the reference).
    verbose : int, default=0
        0: silent; 1: one line at the end of the fit (iterations, objective, relative dual
        infeasibility, converged, seconds); 2 and more: also one line per iteration ((P1),
        ``λ_max − v`` relative to λ₁, the weight added).

    Attributes
    ----------
    metric_ : ndarray (d, d)
        ``X = Σ_j w_j v_j v_jᵀ``.
    components_ : ndarray (d, d), or (``span_dim_``, d)
        L with X = LᵀL (one row per span coordinate after a solve in the span).
    span_dim_ : int or None
        The dimension q of the span of the training points it solved in (module docstring),
        None when it solved in all d coordinates.
    span_basis_ : ndarray of shape (d, ``span_dim_``) or None
        The orthonormal basis V of that span.
    base_learners_ : ndarray (J, d)
        Unit vectors v_j of the base learners ``Z_j = v_j v_jᵀ``, in the order they were added.
    weights_ : ndarray (J,)
        Their weights w_j ≥ 0 (``Tr X = Σ_j w_j``).
    objective_ : float
        (P1) at ``metric_`` (−inf when unbounded, see ``unbounded_``).
    n_iter_ : int
        Iterations run (eigen-problems solved).
    converged_ : bool
        Whether the dual-feasibility rule (step 3) was met.
    optimality_ : float
        Relative dual infeasibility ``(λ_max(Σ_r u_r A_r) − v)₊ / λ₁`` at the returned X, the
        quantity step 3 tests (``optimality_measure`` ``"relative_dual_infeasibility"``; 0 once
        u is dual feasible, when ``trace_["gap"]`` bounds the sub-optimality); ``inf`` when
        ``unbounded_``.
    unbounded_ : bool
        A base learner satisfied every triplet with margin ``min_r H_rj ≥ v``: its weight has no
        finite minimiser (g decreases for ever) and (P1) is unbounded below. The fit stops with
        that limit direction, ``metric_ = Z_j``, and a ConvergenceWarning.
    trace_ : dict of ndarray
        Per iteration t, at the iterate X_{t−1} whose eigen-problem was solved: ``objective``
        ((P1)), ``lambda_max`` (λ_max(Σ u_r A_r); dual feasible when ≤ v), ``gap``
        (``v Tr X − Σ u_r ρ_r = ⟨∇f(X), X⟩``: the primal-dual gap of (P1)/(D1), an upper bound
        on the sub-optimality once ``lambda_max ≤ v``), ``weight`` (the w_t added in the
        iteration, 0 if none) and ``time`` (seconds since the start of ``fit``).

    References
    ----------
    C. Shen, J. Kim, L. Wang and A. van den Hengel. Positive semidefinite metric learning with
    boosting. NIPS 22, 2009.
    C. Shen, J. Kim, L. Wang and A. van den Hengel. Positive semidefinite metric learning using
    boosting-like algorithms. JMLR 13:1007–1036, 2012.
    Y. Ying and P. Li. Distance metric learning with eigenvalue optimization. JMLR 13:1–26, 2012
    (§4 summary, §5 protocol).
    """

    constraint_kind = "triplets"
    #: X = Σ_j w_j v_j v_jᵀ from X = 0, each v_j in the range of Σ_r u_r A_r (module docstring)
    span_complement = "zero"
    optimality_measure = "relative_dual_infeasibility"
    _parameter_constraints: dict = {
        "v": [Interval(Real, 0, None, closed="left")],  # open at ∞: v is finite
        "max_iter": [Interval(Integral, 1, None, closed="left"), integral_floats(1)],
        "tol": [Interval(Real, 0, None, closed="left")],
        "update": [StrOptions(set(UPDATES))],
        "verbose": VERBOSE,
    }

    def __init__(self, v=1e-7, max_iter=1000, tol=1e-9, update="stagewise", verbose=0):
        store_params(self, locals())

    def _fit(self, X, y, constraints):
        start = time.perf_counter()
        triplets = np.asarray(constraints.triplets, dtype=np.intp).reshape(-1, 3)
        if len(triplets) == 0:
            raise ValueError("BoostMetric needs at least one triplet")
        n_trip, d = len(triplets), X.shape[1]
        pairs, target, impostor = triplet_pairs(triplets)  # a_r = ±d_impostor, b_r = ±d_target
        outer_sum = PairOuterSum(X, pairs)  # c ↦ Σ_p c_p d_p d_pᵀ
        nu = float(self.v)
        totally_corrective = self.update == "totally_corrective"
        H_cols = _Columns(n_trip) if totally_corrective else None  # H_j = ⟨A_r, Z_j⟩ per column
        rho = np.zeros(n_trip)  # margins ⟨A_r, X⟩ at X = 0
        vecs, weights = [], []
        trace = {k: [] for k in ("objective", "lambda_max", "gap", "weight", "time")}

        def base_learner(rho):
            return _base_learner(X, pairs, target, impostor, outer_sum, rho)

        lam_1, converged, unbounded, report = None, False, False, self.verbose >= 2
        for t in range(1, int(self.max_iter) + 1):
            lse, u, vec, H, lam = base_learner(rho)
            lam_1 = lam if lam_1 is None else lam_1
            trace_x = float(np.sum(weights))
            for key, val in zip(trace, (lse + nu * trace_x, lam, nu * trace_x - u @ rho, 0.0,
                                        time.perf_counter() - start)):
                trace[key].append(val)
            if lam <= nu + self.tol * abs(lam_1):  # step 3
                converged = True
                break
            if H.min() >= nu:
                unbounded = True
                break
            w = _line_search(rho, H, nu)  # step 4
            vecs.append(vec)
            weights.append(w)
            if totally_corrective:
                H_cols.append(H)
                weights = list(_corrective_weights(H_cols.view(), np.array(weights), nu,
                                                   max(self.tol, 1e-12) * abs(lam_1)))
                rho = H_cols.view() @ np.array(weights)
            else:
                rho += w * H
            trace["weight"][-1] = weights[-1]
            if report:
                report_progress(self, t, objective=trace["objective"][-1],
                                dual_infeasibility=(lam - nu) / abs(lam_1), weight=weights[-1])
        V = np.array(vecs).reshape(-1, d)
        w_arr = np.array(weights, dtype=float)
        if unbounded:
            warn_not_converged(
                self, rule=f"λ_max(Σ u_r A_r) ≤ v + tol·λ₁ with tol = {self.tol:g}",
                stopped=(f"(P1) is unbounded below: base learner {t} satisfies every triplet "
                         f"with margin min_r ⟨A_r, Z⟩ = {H.min():.3g} >= v = {nu:.3g}, so its "
                         "weight has no finite minimiser (the fit returns that limit direction)"),
                reached="relative dual infeasibility inf", hint="a larger v bounds (P1)")
            V, w_arr = vec[None, :], np.ones(1)
            objective = -np.inf
            optimality = np.inf
        else:
            objective = float(logsumexp(-rho) + nu * w_arr.sum())
            if not converged:
                lam = base_learner(rho)[-1]  # at the returned X
            optimality = (lam - nu) / abs(lam_1) if lam > nu else 0.0
            if not converged:
                warn_not_converged(
                    self, rule=f"(λ_max(Σ u_r A_r) − v)/λ₁ ≤ tol = {self.tol:g}",
                    cap=f"max_iter = {self.max_iter} base learners",
                    reached=f"relative dual infeasibility {optimality:.3g}",
                    hint=_not_converged_hint(nu, rho, w_arr))
        self.base_learners_ = V
        self.weights_ = w_arr
        self.metric_ = (V.T * w_arr) @ V
        self.components_ = components_from_psd(self.metric_)
        self.objective_ = objective
        self.n_iter_ = len(trace["time"])
        self.converged_ = converged
        self.unbounded_ = unbounded
        self.optimality_ = float(optimality)
        self.trace_ = {k: np.asarray(vals, dtype=float) for k, vals in trace.items()}


    def _lift_from_span(self, V: np.ndarray) -> None:
        """The base learners' vectors back in the d coordinates after a solve in the span."""
        self.base_learners_ = np.ascontiguousarray(self.base_learners_ @ V.T)


def _not_converged_hint(nu, rho, weights) -> str:
    """What to change after a fit that reached ``max_iter`` with margins ``rho`` at
    ``X = Σ_j w_j Z_j``. When X satisfies every triplet with ``min_r ⟨A_r, X⟩ / Tr X > v``, (P1)
    is unbounded below (along s·X, ``log Σ_r exp(−s ⟨A_r, X⟩) + v s Tr X → −∞``): no cap
    reaches the rule, and a larger v is the remedy."""
    trace_x = float(np.sum(weights))
    margin = float(rho.min()) / trace_x if trace_x > 0 else -np.inf
    if margin > nu:
        return (f"(P1) is unbounded below, so no max_iter reaches the rule: the returned X "
                f"satisfies every triplet with margin min_r ⟨A_r, X⟩/Tr X = {margin:.3g} > v = "
                f"{nu:.3g} and its weights grow without bound (Tr X = {trace_x:.3g}); a v above "
                f"{margin:.3g} bounds (P1)")
    return "raise max_iter (or tol)"


def _base_learner(X, pairs, target, impostor, outer_sum, rho):
    """At margins ρ: log Σ exp(−ρ), u, the top eigenvector v of Â = Σ u_r A_r (step 2),
    H_r = ⟨A_r, v vᵀ⟩ and λ_max(Â), for the triplets' distinct ``pairs`` (their ``target`` and
    ``impostor`` pair of each triplet) and ``outer_sum`` = ``PairOuterSum(X, pairs)``."""
    n_pairs = len(pairs)
    lse = logsumexp(-rho)
    u = np.exp(-rho - lse)  # u_r ∝ exp(−ρ_r) = step 5's product of exp(−w_j H_rj)
    c = np.bincount(impostor, u, n_pairs) - np.bincount(target, u, n_pairs)
    vec = leading_eigenvector(outer_sum(c))
    z = X @ vec
    p = (z[pairs[:, 0]] - z[pairs[:, 1]]) ** 2  # (d_p·v)² for every distinct pair
    H = p[impostor] - p[target]  # H_rt = ⟨A_r, v vᵀ⟩ = (a_r·v)² − (b_r·v)²
    return lse, u, vec, H, float(u @ H)  # vᵀ Â v = λ_max(Â)


def _line_search(rho, H, nu):
    """Exact minimiser of ``g(w) = log Σ_r exp(−ρ_r − w H_r) + ν w`` over w ≥ 0 (step 4).

    Equals the paper's ``log Σ_r u_r exp(−w H_r) + ν w`` up to a constant (u ∝ exp(−ρ)).
    g is convex with ``g'(w) = ν − E_q[H]`` and ``g''(w) = Var_q[H]``, q ∝ exp(−ρ − wH) (the next
    triplet weights). The caller guarantees ``g'(0) = ν − λ_max < 0`` and ``min H < ν`` (so
    ``g'(w) > 0`` for large w). The root of g' is bracketed by doubling, then located by Newton
    steps that fall back to bisection (Algorithm 1) whenever they leave the bracket.
    """

    def derivs(w):
        s = -(rho + w * H)
        q = np.exp(s - s.max())
        q /= q.sum()
        mean = q @ H
        return nu - mean, q @ (H - mean) ** 2

    h_scale = np.abs(H).max()
    lo, hi = 0.0, 1.0 / h_scale
    g1, g2 = derivs(hi)
    for _ in range(1100):  # double until g'(hi) ≥ 0 (g'(∞) = ν − min H > 0)
        if g1 >= 0:
            break
        lo, hi = hi, 2 * hi
        g1, g2 = derivs(hi)
    w = hi
    for _ in range(200):
        if abs(g1) <= _LINE_SEARCH_TOL * h_scale or hi - lo <= 4 * np.finfo(float).eps * hi:
            break
        if g1 > 0:
            hi = w
        else:
            lo = w
        w_newton = w - g1 / g2 if g2 > 0 else np.nan
        w = w_newton if lo < w_newton < hi else 0.5 * (lo + hi)
        g1, g2 = derivs(w)
    return float(w)


def _corrective_weights(H, w, nu, gtol, max_newton=100):
    """Totally corrective update: (P1) restricted to the current base learners.

    ``F(w) = log Σ_r exp(−(H w)_r) + ν 1ᵀw`` over w ≥ 0, with the columns ``H_j = ⟨A_r, Z_j⟩``,
    gradient ``ν − Hᵀu`` and Hessian ``Hᵀ(diag u − u uᵀ)H`` (u = softmax(−Hw)). Projected Newton
    (Bertsekas 1982): Newton on the weights that are positive or about to grow, the others held
    at 0, projected Armijo backtracking; until the projected gradient is below ``gtol`` (units of
    λ_max(Σ u_r A_r) − ν). Repeated base learners make the Hessian singular, hence a tiny
    Levenberg damping.
    """

    def evaluate(w):
        rho = H @ w
        lse = logsumexp(-rho)
        return lse + nu * w.sum(), np.exp(-rho - lse)

    f, u = evaluate(w)
    for _ in range(max_newton):
        Hu = H.T @ u
        g = nu - Hu
        held = (w <= 1e-14 * max(w.max(), 1.0)) & (g > 0)
        if np.abs(g[~held]).max(initial=0.0) <= gtol:
            break
        free = ~held
        Hf = H[:, free]
        S = (Hf * u[:, None]).T @ Hf - np.outer(Hu[free], Hu[free])
        S[np.diag_indices_from(S)] += 1e-12 * max(S.diagonal().max(), 1e-300)
        step = np.zeros_like(w)
        step[free] = -np.linalg.solve(S, g[free])
        alpha = 1.0
        while alpha > 1e-12:
            w_new = np.maximum(w + alpha * step, 0.0)
            f_new, u_new = evaluate(w_new)
            if f_new <= f + 1e-4 * (g @ (w_new - w)):
                break
            alpha /= 2
        else:
            break  # no decrease left above round-off
        w, f, u = w_new, f_new, u_new
    return w


class _Columns:
    """Growing (n, J) column store (amortised doubling instead of a copy per new column)."""

    def __init__(self, n):
        self._data = np.empty((n, 16))
        self._size = 0

    def append(self, col):
        if self._size == self._data.shape[1]:
            grown = np.empty((self._data.shape[0], 2 * self._size))
            grown[:, :self._size] = self._data
            self._data = grown
        self._data[:, self._size] = col
        self._size += 1

    def view(self):
        return self._data[:, :self._size]
