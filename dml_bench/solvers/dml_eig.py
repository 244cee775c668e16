"""DML-eig: approximate Frank-Wolfe on the smoothed eigenvalue problem (Ying & Li 2012, §3.1).

DML-eig solves Eq. (3), ``max_M min_{τ∈D} ⟨X_τ, M⟩ s.t. ⟨X_S, M⟩ ≤ 1, M ⪰ 0``. With the Cholesky
factor ``X_S + δI = L Lᵀ`` (remark after Theorem 1) and the whitened dissimilar differences
``z̃_τ = L⁻¹(x_i − x_j)``, it becomes Eq. (19), ``max_{S ∈ P} min_τ ⟨z̃_τ z̃_τᵀ, S⟩`` over the
spectrahedron P = {S ⪰ 0, tr S = 1}, and ``M = L⁻ᵀ S L⁻¹``.

The loop is Table 1 on the entropy-smoothed ``f_μ(S) = −μ ln Σ_τ exp(−q_τ/μ)`` with
``q_τ = z̃_τᵀ S z̃_τ``. No d×d matrix is built per pair and S itself is never formed inside the
loop: ``q ← (1 − α) q + α (Z̃ v)²`` is one pass over the |D|×d matrix Z̃, the Frank-Wolfe vertex
``v vᵀ`` is the top eigenvector of ``∇f_μ = Z̃ᵀ diag(w) Z̃`` (``w`` = softmax(−q/μ)), computed on
the rows whose weight is not negligible (:class:`top_eigen.GramTopEigenvector`), and the duality
gap ``λ_max(∇f_μ) − ⟨∇f_μ, S⟩ = vᵀ∇f_μ v − wᵀq`` costs nothing extra. S is kept as its rank-one
terms, and M's factor comes from them at the end (:func:`iterate_metric`).
"""

from __future__ import annotations

import time
from numbers import Integral, Real

import numpy as np
import scipy.linalg
from numba import njit, objmode
from sklearn.utils._param_validation import Interval, StrOptions

from .base import (VERBOSE, MetricLearner, rate_hint, report_progress, store_params,
                   warn_not_converged)

from .linalg import (JIT_OPTIONS, components_from_psd, pair_differences, pair_sq_distances,
                     weighted_outer_sum)
from .top_eigen import GramTopEigenvector, compiled_gram_top_eigenvector

STOPPING_RULES = ("gap", "objective")
#: the columns of the per-iteration trace (``trace_``)
TRACE_KEYS = ("objective", "min_distance", "gap", "time")
SCALINGS = ("unit_mean", "none")
#: DMLEig's ``tol=None``: per stopping rule, a relative duality gap of 1 % for ``"gap"``, Table
#: 1's absolute 1e-5 for ``"objective"``
DEFAULT_TOL = {"gap": 1e-2, "objective": 1e-5}

#: the hyper-parameters DML-eig and LMNN-eig share (Ying & Li 2012, Tables 1 and 2)
FRANK_WOLFE_CONSTRAINTS: dict = {
    "mu": [Interval(Real, 0, None, closed="neither")],
    "tol": [Interval(Real, 0, None, closed="left")],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "stopping": [StrOptions(set(STOPPING_RULES))],
    "ridge": [Interval(Real, 0, None, closed="left")],
    "ridge_mode": [StrOptions({"relative", "absolute"})],
    "scale": [StrOptions(set(SCALINGS))],
    # a fraction of the largest weight: above 1 even that row would be left out
    "weight_threshold": [Interval(Real, 0, 1, closed="both")],
    "init": [StrOptions({"identity"})],
    "verbose": VERBOSE,
}


class DMLEig(MetricLearner):
    """DML-eig metric learning (Ying & Li 2012, Eq. (3), Table 1).

    Parameters
    ----------
    mu : float, default=1e-4
        Entropy smoothing μ of ``f_μ`` (§3.1; §5 uses 1e-4). Only ``q/μ`` matters, see ``scale``.
    tol : float or None, default=None
        Stopping tolerance of ``stopping``. ``None``: 1e-2 for ``"gap"`` (a relative duality
        gap of 1 %), 1e-5 for ``"objective"`` (Table 1's rule is absolute). Frank-Wolfe closes
        the gap at the O(1/t) rate, so a relative gap of 1e-5 takes some 10⁷ iterations on
        small sets (z-scored digits, pairs of k = 3 triplets on a 70 % split: 0.11 after 10³
        iterations, 3.5·10⁻³ after 3·10⁴); 1e-2 is reached in 892 / 5 209 / 1 846 / 6 480
        iterations (0.11 / 0.25 / 0.46 / 5.9 s, one thread) on iris / wine / breast cancer /
        digits there, with the 3-NN test errors of 10³ iterations. The paper configs pin §5's
        ``tol=1e-5, max_iter=1000``.
    max_iter : int, default=10_000
        Iteration cap (§5: 10³, which ends those four fits at a relative gap of 0.03 to 0.11);
        the iterate's rows are reserved for ``max_iter`` steps (``max_iter × d`` floats, of
        which only the steps taken are written).
    stopping : {"gap", "objective"}, default="gap"
        ``"gap"``: stop when the Frank-Wolfe duality gap ``⟨∇f_μ(S_t), Z_t − S_t⟩`` is below
        ``tol · |f_μ(S_t)|`` (relative, an upper bound on the sub-optimality of ``f_μ``).
        ``"objective"``: Table 1's literal rule ``|f_μ(S_{t+1}) − f_μ(S_t)| < tol`` (absolute), which
        can end after a handful of iterations with a rank-2..6 metric.
    output : {"last", "previous"}, default="last"
        Which iterate ``stopping="objective"`` returns once ``|f_μ(S_{t+1}) − f_μ(S_t)| < tol``:
        ``"last"``, ``S_{t+1}`` (as other implementations do), or ``"previous"``, ``S_t``, Table
        1's "Output: S_t". The duality-gap rule returns the iterate it certifies, whatever
        ``output``.
    ridge : float, default=1e-2
        Ridge δ added to ``X_S`` before its Cholesky factorisation (remark after Theorem 1).
        Relative to ``tr(X_S)/d`` when ``ridge_mode="relative"``.
    ridge_mode : {"relative", "absolute"}, default="relative"
    scale : {"none", "unit_mean"}, default="none"
        Only ``q/μ`` matters. ``"none"`` keeps X_S the plain sum of Eq. (3) (``X_S = Σ_S X_ij``),
        the units in which §5 sets μ = 1e-4: q ≈ 1/|S|, so μ is a soft minimum on large sets.
        ``"unit_mean"`` rescales the whitened differences so the mean ``q_τ`` is 1 at S = I/d,
        making μ = 1e-4 a near-hard minimum, whose curvature 1/μ the Frank-Wolfe steps cannot
        follow: within §5's 10³ iterations its duality gap stays far larger than with
        ``"none"``. Its iterations are cheaper on large sets, where fewer pairs carry a weight
        above ``weight_threshold``.
    weight_threshold : float in [0, 1], default=1e-12
        Pairs whose softmax weight is below ``weight_threshold · max(w)`` are left out of the
        gradient; their total contribution to ``∇f_μ`` is below ``|D| · weight_threshold``
        relative to the largest term.
    init : {"identity"}, default="identity"
        ``S_1 = I/d``.
    verbose : int, default=0
        0: silent; 1: one line at the end of the fit (iterations, objective, relative duality
        gap, converged, seconds); 2 and more: also one line per iteration (``f_μ`` and the
        relative gap).

    With more features than training points and ``ridge > 0``, the fit runs in the span of the
    points' differences (:mod:`~dml_bench.solvers.span`; ``span_dim_``), where it takes the
    same steps as in all d coordinates. Off that span ``X_S + δI`` is δI, so the whitened
    differences stay in the whitened image of the span, and so does every Frank-Wolfe vertex
    (the top eigenvector of ``∇f_μ = Σ_τ w_τ z̃_τ z̃_τᵀ``, Eq. (20)); ``f_μ``, its gradient and
    the duality gap see only the values ``q_τ``. ``S_1 = I/d`` enters through ``q_τ = ‖z̃_τ‖²/d``
    with the whole space's d, and the first step (α_1 = 1) replaces it, so M is zero off the
    span, as Eq. (3)'s optimum is: mass there only spends ``⟨X_S + δI, M⟩ ≤ 1``.

    float32 input (``preserves_float32``; the ``dtype: float32`` preprocessing option) keeps the
    whitened differences Z in single precision: for ``d > top_eigen.COMPILED_GRAM_MAX_DIM`` the
    per-iteration passes over the pairs (the gradient GEMM and ``p = (Z v)²``) run in float32
    (below it, the compiled passes read float32 and sum in float64), while the whitening, the d×d
    eigenproblem, q, the softmax weights and the iterate stay in float64.

    Attributes
    ----------
    metric_ : ndarray (d, d)
        M with ``⟨X_S + δI, M⟩ = 1``.
    components_ : ndarray (d, d)
        L with M = LᵀL.
    objective_ : float
        ``min_τ ⟨X_τ, M⟩``, the objective of Eq. (3) at the returned M.
    n_iter_ : int
    converged_ : bool
    optimality_ : float
        Relative duality gap ``gap/|f_μ|`` at the returned iterate (``optimality_measure``
        ``"relative_duality_gap"``; the ``stopping="gap"`` test), an upper bound on the relative
        sub-optimality of ``f_μ``.
    trace_ : dict of ndarray
        Per iteration: ``objective`` (f_μ, scaled units), ``min_distance`` (f), ``gap``,
        ``time`` (seconds since the start of ``fit``).
    scale_ : float
        Factor c² with ``q_τ = c² ⟨X_τ, M⟩`` (the units of ``trace_``).
    span_dim_ : int or None
        The dimension of the span the fit ran in, or None when it ran in all coordinates.
    span_basis_ : ndarray (d, ``span_dim_``) or None
        An orthonormal basis of that span.

    References
    ----------
    Y. Ying and P. Li. Distance metric learning with eigenvalue optimization. JMLR 13:1–26, 2012.
    """

    constraint_kind = "pairs"
    optimality_measure = "relative_duality_gap"
    preserves_float32 = True
    span_complement = "zero"
    #: the iterate returned before ``output`` existed: left out of a result's identity
    neutral_params = {**MetricLearner.neutral_params, "output": "last"}
    _parameter_constraints: dict = {**FRANK_WOLFE_CONSTRAINTS,
                                    "tol": [Interval(Real, 0, None, closed="left"), None],
                                    "output": [StrOptions({"last", "previous"})]}

    def __init__(self, mu=1e-4, tol=None, max_iter=10_000, stopping="gap", output="last",
                 ridge=1e-2, ridge_mode="relative", scale="none", weight_threshold=1e-12,
                 init="identity", verbose=0):
        store_params(self, locals())

    def _solves_in_span(self) -> bool:
        """With a ridge δ > 0 (the whole space's ``X_S + δI`` definite, see the class docstring)."""
        return super()._solves_in_span() and self.ridge > 0

    def _span_complement_scale(self) -> float:
        return self._complement

    def _tolerance(self) -> float:
        """The tolerance in force: ``tol``, or for ``tol=None`` that of the stopping rule
        (:data:`DEFAULT_TOL`)."""
        return DEFAULT_TOL[self.stopping] if self.tol is None else self.tol

    def _constraints_needed(self):
        """Dissimilar pairs (the objective is their smallest distance) and similar pairs (see
        :func:`needs_similar_pairs`)."""
        return ("pairs", "dissimilar", *needs_similar_pairs(self))

    def _fit(self, X, y, constraints):
        start = time.perf_counter()
        pairs = constraints.dissimilar
        # d: the whole space's, of S_1 = I/d and the relative ridge, also in the span (:mod:`.span`)
        d = X.shape[1] + getattr(self, "_off_span_dim", 0)
        L, points, c2, delta = whiten(X, constraints.similar, pairs, self.ridge, self.ridge_mode,
                                      self.scale, learner="DMLEig", n_features=d)
        q = pair_sq_distances(points, pairs) / d  # q_τ = ‖z̃_τ‖²/d at S_1 = I/d
        vertex = GramTopEigenvector(points, pairs, self.weight_threshold)
        # S_t = (1 − α_1)…(1 − α_{t−1}) I/d + Σ_j α_j Π_{i>j}(1 − α_i) v_j v_jᵀ: the rows of
        # `vecs` and `alphas`; one `trace` row (f_μ, f, gap, time) per iteration evaluated
        vecs, alphas = np.empty((self.max_iter, X.shape[1])), np.empty(self.max_iter)
        trace = np.empty((self.max_iter, len(TRACE_KEYS)))
        tol = self._tolerance()
        settings = (self.mu, tol, self.max_iter, self.stopping == "objective", start)
        if vertex.compiled is not None:
            n_traced, n_steps, converged, f_mu, gap = _compiled_frank_wolfe(
                *vertex.compiled, self.weight_threshold, q, *settings, vecs, alphas, trace,
                self.verbose >= 2)
        else:
            n_traced, n_steps, converged, f_mu, gap = _frank_wolfe(
                vertex, q, *settings, vecs, alphas, trace, self.verbose >= 2)
        if not converged:
            warn_not_converged(self, **frank_wolfe_warning(self, f_mu, gap, tol))
        objective = q.min()
        if converged and self.stopping == "objective" and self.output == "previous":
            # S_t, one step before the returned S_{t+1}: the iterate of trace row t − 1
            n_steps -= 1
            f_mu, objective, gap = trace[n_steps, :3]
        self.components_, self.metric_ = iterate_metric(vecs[:n_steps], alphas[:n_steps], L, d)
        self._complement = off_span_scale(alphas[:n_steps], d, delta)
        self.objective_ = float(objective / c2)
        self.scale_ = float(c2)
        self.n_iter_ = n_traced
        self.converged_ = bool(converged)
        self.optimality_ = float(gap / abs(f_mu))
        self.trace_ = {k: trace[:n_traced, i].copy() for i, k in enumerate(TRACE_KEYS)}


def off_span_scale(alphas: np.ndarray, d: int, delta: float) -> float:
    """The multiple of the identity that ``M = L⁻ᵀ S L⁻¹`` is off the span of the points after
    the steps ``alphas`` from ``S_1 = I/d``: ``S = c I + …`` there (:func:`iterate_rows`), and
    ``X_S + δI`` is δ times the identity there, so ``M = (c/δ) I``; 0 after any step (and,
    unused, for δ = 0, which solves in all coordinates)."""
    c = float(np.prod(1 - alphas))
    return c / (d * delta) if c and delta else 0.0


def frank_wolfe_warning(solver, f_mu, gap, tol=None) -> dict:
    """The arguments of :func:`~.base.warn_not_converged` for DML-eig or LMNN-eig (the same
    rules and cap) that ended at ``max_iter`` with ``f_μ`` and the duality gap ``gap``, under
    the tolerance ``tol`` (default ``solver.tol``)."""
    tol = solver.tol if tol is None else tol
    relative = gap / abs(f_mu)
    reached = f"relative duality gap {relative:.3g} (|f_μ| = {abs(f_mu):.3g})"
    if solver.stopping == "objective":
        return dict(rule=f"|f_μ(S_t) − f_μ(S_t−1)| < tol = {tol:g}", reached=reached,
                    cap=f"max_iter = {solver.max_iter} iterations",
                    hint="raise max_iter, or use stopping='gap'")
    return dict(rule=f"relative duality gap ≤ tol = {tol:g}", reached=reached,
                cap=f"max_iter = {solver.max_iter} iterations",
                hint=rate_hint(solver.max_iter, relative, tol, rate="Frank-Wolfe O(1/t)"))


def _frank_wolfe(vertex, q, mu, tol, max_iter, objective_rule, start, vecs, alphas, trace,
                 report=False):
    """Table 1's loop from the values ``q`` of ``S_1`` (updated in place to those of the returned
    iterate): per iteration t, the vertex ``v_t`` and ``α_t = 2/(t + 1)`` into row t − 1 of
    ``vecs`` / ``alphas`` and ``(f_μ, min q, gap, seconds since start)`` into ``trace``, until
    the stopping rule holds (``objective_rule``: ``|f_μ(S_t) − f_μ(S_{t−1})| < tol``, else the
    relative duality gap ``gap ≤ tol · |f_μ|``) or ``max_iter``; ``report``: a progress line per
    iteration (``verbose ≥ 2``).

    Returns ``(n_traced, n_steps, converged, f_μ, gap)``: the trace rows and steps written, and
    ``f_μ`` and the duality gap at the returned iterate (one step past the last traced one when
    the loop ends at ``max_iter``). :func:`_compiled_frank_wolfe` is the same loop compiled, for
    the compiled branch of :class:`top_eigen.GramTopEigenvector`, where the per-iteration work is a
    few microseconds and a return to Python per iteration would cost more than the work.
    """
    f_prev = np.inf
    for t in range(1, max_iter + 1):
        f_mu, v, p, gap = _frank_wolfe_vertex(vertex, q, mu)
        if objective_rule and abs(f_mu - f_prev) < tol:
            return t - 1, t - 1, True, f_mu, gap
        trace[t - 1] = f_mu, q.min(), gap, time.perf_counter() - start
        if report:
            _report(t, f_mu, gap)
        if not objective_rule and gap <= tol * abs(f_mu):
            return t, t - 1, True, f_mu, gap
        alpha = 2.0 / (t + 1)
        q *= 1 - alpha
        q += alpha * p
        vecs[t - 1], alphas[t - 1] = v, alpha
        f_prev = f_mu
    f_mu, _, _, gap = _frank_wolfe_vertex(vertex, q, mu)
    return max_iter, max_iter, False, f_mu, gap


@njit(**{**JIT_OPTIONS, "nogil": False})  # it holds the GIL: the clock is read in object mode
def _compiled_frank_wolfe(rows_t, dsyevr, workspace, threshold, q, mu, tol, max_iter,
                          objective_rule, start, vecs, alphas, trace, report):
    """:func:`_frank_wolfe` compiled, on the compiled branch of :class:`GramTopEigenvector`
    (its ``compiled`` arguments and ``threshold`` first); the clock is read in object mode."""
    n = q.shape[0]
    w, p = np.empty(n), np.empty(n)
    f_prev = np.inf
    for t in range(1, max_iter + 1):
        f_mu = _smoothed_min_into(q, mu, w)
        v, lam = compiled_gram_top_eigenvector(rows_t, dsyevr, workspace, w, threshold, p)
        gap = lam - w @ q
        if objective_rule and abs(f_mu - f_prev) < tol:
            return t - 1, t - 1, True, f_mu, gap
        with objmode(now="float64"):
            now = time.perf_counter()
        trace[t - 1, 0], trace[t - 1, 1] = f_mu, _smallest(q)
        trace[t - 1, 2], trace[t - 1, 3] = gap, now - start
        if report:
            with objmode():
                _report(t, f_mu, gap)
        if not objective_rule and gap <= tol * abs(f_mu):
            return t, t - 1, True, f_mu, gap
        alpha = 2.0 / (t + 1)
        for r in range(n):
            q[r] = (1 - alpha) * q[r] + alpha * p[r]
        for k in range(v.shape[0]):  # element-wise: an array-to-slice copy would compile
            vecs[t - 1, k] = v[k]    # numba's shape-mismatch message (string formatting, ~4 s)
        alphas[t - 1] = alpha
        f_prev = f_mu
    f_mu = _smoothed_min_into(q, mu, w)
    lam = compiled_gram_top_eigenvector(rows_t, dsyevr, workspace, w, threshold, p)[1]
    return max_iter, max_iter, False, f_mu, lam - w @ q


def _report(t, f_mu, gap):
    """The progress line of iteration t (``verbose ≥ 2``)."""
    report_progress("DMLEig", int(t), objective=f_mu, relative_gap=gap / abs(f_mu))


def _frank_wolfe_vertex(vertex: GramTopEigenvector, q: np.ndarray, mu: float):
    """At the iterate with values ``q``: ``f_μ``, the vertex ``v`` (top eigenvector of
    ``∇f_μ = Σ_τ w_τ z̃_τ z̃_τᵀ``, Eq. (20), over the pairs whose weight is not negligible),
    ``p = (Z̃ v)²`` (``⟨X̃_τ, v vᵀ⟩`` for every pair: the one full pass per iteration) and the
    duality gap ``λ_max(∇f_μ) − wᵀq``."""
    f_mu, w = _smoothed_min(q, mu)
    v, p, lam = vertex(w)
    return f_mu, v, p, lam - float(w @ q)


def needs_similar_pairs(solver) -> tuple[str, ...]:
    """``("similar",)`` when :func:`whiten` needs similar pairs for ``solver``'s ``ridge`` and
    ``ridge_mode``: unless an absolute ridge δ > 0 makes ``X_S + δI`` definite by itself, an empty
    ``X_S`` leaves it singular; else ``()``."""
    absolute = (solver.ridge_mode == "absolute" and isinstance(solver.ridge, (int, float))
                and solver.ridge > 0)
    return () if absolute else ("similar",)


def whiten(X, similar, pairs, ridge, ridge_mode, scale, learner=None, n_features=None):
    """Whitening of the remark after Theorem 1: ``X_S + δI = L Lᵀ`` and the scaled whitened points
    ``x̃_i = c L⁻¹x_i``, whose differences are ``z̃_p = c L⁻¹(x_a − x_b) = x̃_a − x̃_b``.

    Parameters
    ----------
    X : ndarray (n, d)
    similar, pairs : ndarray (·, 2)
        The similar pairs defining ``X_S`` and the pairs whose differences are whitened.
    ridge, ridge_mode : float, {"relative", "absolute"}
        δ, relative to ``tr(X_S)/d`` or absolute.
    scale : {"unit_mean", "none"}
        ``"unit_mean"``: c² makes the mean ``‖z̃_p‖²/d`` equal to 1; ``"none"``: c = 1.
    learner : str, optional
        Who whitens, for the messages.
    n_features : int, optional
        The d of the relative ridge's ``tr(X_S)/d`` and of ``"unit_mean"``: the data's features
        (default ``X.shape[1]``), which a solve in the span of the points (:mod:`.span`) passes
        since its X has fewer columns.

    Returns
    -------
    L : ndarray (d, d), lower triangular
    points : ndarray (n, d)
        The scaled whitened points ``x̃_i``, in ``X``'s precision (computed in double precision).
    c2 : float
    delta : float
        The ridge δ added.
    """
    dtype, X = X.dtype, X.astype(np.float64, copy=False)
    XS = weighted_outer_sum(pair_differences(X, similar))
    d = X.shape[1] if n_features is None else n_features
    delta = ridge * (np.trace(XS) / d if ridge_mode == "relative" else 1.0)
    try:
        L = np.linalg.cholesky(XS + delta * np.eye(X.shape[1]))
    except np.linalg.LinAlgError:
        if not np.any(XS):  # the cause is the pairs, not the ridge
            who = f"{learner} needs" if learner else "the whitening needs"
            got = (f"each of the {len(similar)} given joins a point to itself" if len(similar)
                   else "none is given")
            raise ValueError(
                f"{who} similar pairs of distinct points, and {got}: X_S = 0, so X_S + ridge·I "
                "is singular (give such pairs, or ridge_mode='absolute' with ridge > 0)") from None
        raise ValueError(
            "X_S + ridge·I is singular: increase `ridge` (the similar pairs do not span the "
            "feature space)") from None
    points = scipy.linalg.solve_triangular(L, X.T, lower=True).T
    c2 = (d * len(pairs) / pair_sq_distances(points, pairs).sum() if scale == "unit_mean"
          else 1.0)
    return L, np.ascontiguousarray(points * np.sqrt(c2), dtype=dtype), c2, float(delta)


#: :func:`iterate_metric` factors the iterate's k weighted rows when k < this fraction of d, and
#: assembles and decomposes the d×d iterate otherwise, the cheaper of the two for many rows
FACTOR_MAX_STEPS_FRACTION = 0.6


def iterate_metric(V: np.ndarray, alphas: np.ndarray, L: np.ndarray, n_features: int | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """``components_`` and ``metric_`` of ``M = L⁻ᵀ S L⁻¹`` (remark after Theorem 1) for the
    Frank-Wolfe iterate S of Tables 1 and 2, from its rank-one terms.

    With the rows W of :func:`iterate_rows` (``S = WᵀW``), :func:`factored_metric` when W has
    fewer than ``FACTOR_MAX_STEPS_FRACTION · d`` rows (far fewer steps than dimensions: ORL's
    d = 10 304), otherwise :func:`dense_metric`; both give the same M up to rounding. No rows
    at all (every step's vector zero) is M = 0, through :func:`dense_metric`: LAPACK's SVD
    refuses an empty matrix under older scipy.

    Parameters
    ----------
    V : ndarray (k, d)
        The vertices' vectors v_j, one row per step (a zero row for a step that adds none).
    alphas : ndarray (k,)
        The step sizes α_j.
    L : ndarray (d, d), lower triangular
        Cholesky factor of ``X_S + δI``.
    n_features : int, optional
        The d of ``S_1 = I/d`` (default ``L.shape[0]``; see :func:`iterate_rows`).

    Returns
    -------
    components : ndarray (d, d)
        A factor of M, ``componentsᵀ components = M`` (each route its own, equal up to an
        orthogonal map of the rows, which leaves every distance as it is).
    metric : ndarray (d, d)
    """
    d = L.shape[0]
    W = iterate_rows(V, alphas, d, n_features)
    if 0 < len(W) < FACTOR_MAX_STEPS_FRACTION * d:
        return factored_metric(W, L)
    return dense_metric(W, L)


def iterate_rows(V: np.ndarray, alphas: np.ndarray, d: int, n_features: int | None = None
                 ) -> np.ndarray:
    """Rows W with ``WᵀW = S``, the end of the recursion ``S ← (1 − α_j) S + α_j v_j v_jᵀ``
    from ``S_1 = I/d'`` (``d' = n_features``, default d; a solve in the span of the points
    starts from the whole space's ``I/d'`` restricted to its d coordinates).

    ``S = c I + Σ_j β_j v_j v_jᵀ`` with ``β_j = α_j Π_{i>j} (1 − α_i)`` and
    ``c = Π_j (1 − α_j)/d'``, which is 0 after the first step (α_1 = 2/(1 + 1) = 1): the rows
    ``√β_j v_j`` that are not zero, and ``√c I`` (d×d) when c > 0.
    """
    keep = np.append(np.cumprod((1 - alphas)[::-1])[::-1][1:], 1.0)[:len(alphas)]
    W = V * np.sqrt(alphas * keep)[:, None]  # keep_j = Π_{i>j} (1 − α_i)
    W = W[np.any(W != 0, axis=1)]
    c = np.prod(1 - alphas) / (d if n_features is None else n_features)
    return np.vstack([W, np.sqrt(c) * np.eye(d)]) if c > 0 else W


def factored_metric(W: np.ndarray, L: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`iterate_metric` from the rows: ``M = FᵀF`` with ``F = W L⁻¹`` (one triangular
    solve), and the thin SVD ``F = P Σ Qᵀ`` gives the components ``Σ Qᵀ``, padded with zero rows
    to d × d. Neither S, L⁻¹ nor a d×d eigendecomposition is formed: O(d²k + dk²) for k rows."""
    d = L.shape[0]
    F = scipy.linalg.solve_triangular(L, W.T, lower=True, trans="T").T  # F L = W
    _, sigma, Qt = scipy.linalg.svd(F, full_matrices=False, overwrite_a=True)
    thin = sigma[:, None] * Qt
    components = np.zeros((d, d))
    components[:len(thin)] = thin
    return components, thin.T @ thin


def dense_metric(W: np.ndarray, L: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`iterate_metric` through d×d matrices: ``S = WᵀW``, L⁻¹, and the components
    ``Λ^{1/2} Uᵀ L⁻¹`` from S's eigendecomposition (:func:`linalg.components_from_psd`)."""
    L_inv = scipy.linalg.solve_triangular(L, np.eye(L.shape[0]), lower=True)
    components = components_from_psd(W.T @ W, right=L_inv)
    return components, components.T @ components


def _smoothed_min(q: np.ndarray, mu: float) -> tuple[float, np.ndarray]:
    """``f_μ = −μ ln Σ exp(−q/μ)`` and its gradient weights ``softmax(−q/μ)`` (§3.1), stably."""
    w = np.empty(len(q))
    return _smoothed_min_into(q, mu, w), w


@njit(**JIT_OPTIONS)
def _smallest(q):
    """``q.min()`` as a plain loop (NaN if any entry is NaN, as ``np.min``), which numba compiles
    several times faster than its generic ``np.min``."""
    smallest = q[0]
    for i in range(q.shape[0]):
        if q[i] != q[i]:
            return q[i]
        if q[i] < smallest:
            smallest = q[i]
    return smallest


@njit(**JIT_OPTIONS)
def _smoothed_min_into(q, mu, w):
    """Compiled :func:`_smoothed_min`: the weights into ``w``, ``f_μ`` returned (two passes)."""
    q_min = _smallest(q)
    total = 0.0
    for i in range(q.shape[0]):
        w[i] = np.exp((q_min - q[i]) / mu)
        total += w[i]
    for i in range(q.shape[0]):
        w[i] /= total
    return q_min - mu * np.log(total)
