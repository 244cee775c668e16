"""LMNN-eig: approximate Frank-Wolfe on the smoothed eigenvalue form of LMNN (Ying & Li 2012, §3.2).

LMNN (Weinberger et al., 2005) as written in Eq. (7)::

    min_{M ⪰ 0, ξ ≥ 0}  (1 − γ) Σ_τ ξ_τ + γ Tr(X_S M)   s.t.  ⟨C_τ, M⟩ + ξ_τ ≥ 1  ∀τ ∈ T,

with ``X_S = Σ_{(i,j)∈S} (x_i − x_j)(x_i − x_j)ᵀ``. Lemma 2 turns it into the max-min problem
Eq. (8), ``max { min_τ (ξ_τ + ⟨C_τ, M⟩) : (1 − γ) Σ ξ + γ Tr(X_S M) = 1 }``, whose optimal value
is the reciprocal of the optimum of (7): an optimal (M, ξ) of (8) with value f gives the optimal
(M/f, ξ/f) of (7). With the Cholesky factor ``X_S + δI = L Lᵀ`` (remark after Theorem 1) and
``S = Lᵀ M L``, Theorem 3 gives Eq. (16), ``max_{S ⪰ 0, ξ ≥ 0} min_τ (ξ_τ + ⟨C̃_τ, S⟩)`` subject
to ``(1 − γ) ξᵀ1 + γ Tr(S) = 1``, with ``C̃_τ = L⁻¹ C_τ L⁻ᵀ``; ``M = L⁻ᵀ S L⁻¹``.

**Triplet convention.** Our triplet ``(i, j, k)`` is (anchor, target neighbour j of the same class,
impostor k of another class) as produced by ``knn_triplets``. The paper's ``τ = (i, j, k)`` has
``x_i`` similar to ``x_j`` and ``x_j`` dissimilar to ``x_k``, i.e. its anchor is ``j``, and
``C_τ = X_jk − X_ij`` (impostor distance minus target distance). In our indices that is
``C_τ = (x_i − x_k)(x_i − x_k)ᵀ − (x_i − x_j)(x_i − x_j)ᵀ``, so
``⟨C_τ, M⟩ = d²_M(x_i, x_k) − d²_M(x_i, x_j)`` and ``C̃_τ = a_τ a_τᵀ − b_τ b_τᵀ`` with the
whitened differences ``a_τ = L⁻¹(x_i − x_k)``, ``b_τ = L⁻¹(x_i − x_j)``.

The loop is Table 2 on the entropy-smoothed ``f_μ(S, ξ) = −μ ln Σ_τ exp(−(⟨C̃_τ, S⟩ + ξ_τ)/μ)``
(§3.2), whose gradient is ``(Σ_τ w_τ C̃_τ, w)`` with ``w = softmax(−(⟨C̃_τ, S⟩ + ξ_τ)/μ)``. The
Frank-Wolfe vertex solves the linear programme Eq. (24): with v the top eigenvector of
``Σ_τ w_τ C̃_τ = Aᵀ diag(w) A − Bᵀ diag(w) B`` (one :class:`top_eigen.GramTopEigenvector` call on
the distinct difference rows with signed weights) and ``τ* = argmax w``, it is ``(v vᵀ/γ, 0)`` when
``λ_max/γ ≥ w_{τ*}/(1 − γ)``, otherwise ``(0, e_{τ*}/(1 − γ))``; the step is ``α_t = 2/(t + 1)``.
No d×d matrix is built per triplet and S is never formed inside the loop: the margins
``⟨C̃_τ, S⟩`` are updated from ``(a_τᵀv)² − (b_τᵀv)²``, one pass over the distinct difference rows
(a triplet's a_τ and b_τ are rows of them, shared by the triplets with the same pair), ξ is a
vector, and S is kept as its rank-one terms, from which M's factor comes at the end.
"""

from __future__ import annotations

import time
from numbers import Real

import numpy as np
from numba import njit
from sklearn.utils._param_validation import Interval

from .base import MetricLearner, report_progress, store_params, warn_not_converged
from .dml_eig import (FRANK_WOLFE_CONSTRAINTS, _smoothed_min_into, frank_wolfe_warning,
                      iterate_metric, needs_similar_pairs, off_span_scale, whiten)
from .linalg import JIT_OPTIONS, pair_sq_distances, triplet_pairs
from .top_eigen import GramTopEigenvector


class LMNNEig(MetricLearner):
    """LMNN-eig metric learning (Ying & Li 2012, Eqs. (7), (16), Table 2).

    Parameters
    ----------
    gamma : float, default=0.5
        Trade-off γ ∈ (0, 1) of Eq. (7) between the slacks, ``(1 − γ) Σ ξ_τ``, and the similar-pair
        distances, ``γ Tr(X_S M)``. §5 tunes it by three-fold cross-validation without stating the
        grid; we assume γ ∈ {0.1, 0.2, …, 0.9} and default to its midpoint 0.5, which is also
        LMNN's usual equal weighting of the pull and push terms (Weinberger & Saul's μ = 0.5).
        It matters: USPS 3-NN error 3.52 / 9.05 / 36.6 % for γ = 0.1 / 0.5 / 0.9 (one split).
    mu : float, default=1e-4
        Entropy smoothing μ of ``f_μ`` (§3.2; §5 uses 1e-4). Only values/μ matter, see ``scale``.
    tol : float, default=1e-5
        Stopping tolerance.
    max_iter : int, default=1000
        Iteration cap (§5: 10³ for LMNN-eig).
    stopping : {"gap", "objective"}, default="gap"
        ``"gap"``: stop when the Frank-Wolfe duality gap
        ``⟨∇f_μ(S_t, ξ_t), (Z_t, β_t) − (S_t, ξ_t)⟩`` (the value of (24) minus ``wᵀ(m + ξ)``) is
        below ``tol · |f_μ(S_t, ξ_t)|`` (relative; an upper bound on the sub-optimality of
        ``f_μ``). On real data it stays far above 1e-5 within 10³ iterations (USPS: 0.16), so
        fits end at ``max_iter`` as in §5. ``"objective"``: Table 2's literal rule
        ``|f_μ(S_{t+1}, ξ_{t+1}) − f_μ(S_t, ξ_t)| < tol`` (absolute, units set by ``scale``).
    ridge : float, default=1e-2
        Ridge δ added to ``X_S`` before its Cholesky factorisation (remark after Theorem 1),
        relative to ``tr(X_S)/d`` when ``ridge_mode="relative"`` (as DML-eig). With δ > 0 the
        problem solved is (7) with ``X_S + δI`` in place of ``X_S``.
    ridge_mode : {"relative", "absolute"}, default="relative"
    scale : {"none", "unit_mean"}, default="none"
        ``f_μ`` is evaluated on ``c² (⟨C̃_τ, S⟩ + ξ_τ)``. As
        ``−μ ln Σ exp(−c² h_τ/μ) = c² f_{μ/c²}``, this leaves problem (16) unchanged and only
        sets the effective smoothing to μ/c².
        ``"none"`` (c² = 1) is the literal reading: X_S is a plain sum, the values are of order
        1/|S| and μ = 1e-4 spreads the weights w over many triplets (on large sets nearly all).
        ``"unit_mean"`` is DML-eig's rescaling (mean whitened squared length of the distinct
        target/impostor difference rows at S = I/d equal to 1), making μ = 1e-4 a near-hard
        minimum. Unlike DML-eig, that breaks LMNN-eig within 10³ iterations: with w concentrated
        on a few triplets, ``w_max/(1 − γ)`` beats ``λ_max/γ`` in (24), nearly every step is a
        ξ-vertex that raises one slack, and S is built from a handful of S-steps (rank 2–3).
        3-NN error (%), γ = 0.5, ``none`` / ``unit_mean`` / paper: wine 1.73 / 2.88 / 2.88 and
        iris 4.44 / 3.56 / 4.00 (10 splits, z-scored), breast cancer 5.10 / 4.12 / 4.94, pima
        28.41 / 33.48 / 31.13, segment 3.42 / 9.33 / 3.61 (3 splits), USPS 9.05 / 51.7 / 3.13
        (1 split; 3.52 with γ = 0.1, 36.6 with γ = 0.9: γ matters, tune it). Hence ``"none"``.
    weight_threshold : float in [0, 1], default=1e-12
        Difference rows whose aggregated weight |Σ_τ ±w_τ| is below ``weight_threshold`` times
        the largest are left out of the eigenvector computation (as DML-eig).
    init : {"identity"}, default="identity"
        ``S_1 = I/d`` and ``ξ_1 = 1/T``: Table 2's initialisation (``Tr(S_1) = 1``, ``ξ_1 ≥ 0``)
        that also satisfies the constraint of (16), which forces ``Σ ξ_1 = 1`` once ``Tr S_1 = 1``.
    verbose : int, default=0
        0: silent; 1: one line at the end of the fit (iterations, objective, relative duality
        gap, converged, seconds); 2 and more: also one line per iteration (``f_μ`` and the
        relative gap).

    With more features than training points and ``ridge > 0``, the fit runs in the span of the
    points' differences (:mod:`~dml_bench.solvers.span`; ``span_dim_``), with the same steps as
    in all d coordinates: off that span ``X_S + δI`` is δI, so every ``C̃_τ`` lives on the
    whitened image of the span, and so does ``Σ_τ w_τ C̃_τ``, which is zero off it. Its top
    eigenvector there is the vertex of (24) whenever ``λ_max > 0``; when the span holds no
    positive eigenvalue, the whole space's top one is 0, off the span, and (24) takes the
    ξ-vertex either way (``w_{τ*}/(1 − γ) > 0``), with the same value. ``S_1 = I/d`` enters
    through the whole space's d, and the first step (α_1 = 1) replaces it, so M is zero off the
    span, as (7)'s optimum is (mass there only adds ``γ Tr(X_S M)``, with ``X_S + δI``).

    Attributes
    ----------
    metric_ : ndarray (d, d)
        M with ``(1 − γ) Σ ξ_τ + γ ⟨X_S + δI, M⟩ = 1`` (ξ = ``slack_``).
    components_ : ndarray (d, d)
        L with M = LᵀL.
    slack_ : ndarray (T,)
        ξ of (16), one per triplet (same normalisation as ``metric_``).
    objective_ : float
        ``f = min_τ (⟨C_τ, M⟩ + ξ_τ)``, the objective of (8)/(16) at the returned point; by Lemma 2,
        ``(metric_/f, slack_/f)`` is feasible for (7) with objective value 1/f.
    n_iter_ : int
    converged_ : bool
    optimality_ : float
        Relative duality gap ``gap/|f_μ|`` at the returned iterate (``optimality_measure``
        ``"relative_duality_gap"``, as DML-eig).
    trace_ : dict of ndarray
        Per iteration: ``objective`` (f_μ, scaled units), ``min_value`` (f, scaled units), ``gap``,
        ``slack_step`` (True when the vertex of (24) was the ξ-vertex), ``time`` (seconds since
        the start of ``fit``).
    scale_ : float
        Factor c² of ``scale`` (the units of ``trace_``).
    span_dim_ : int or None
        The dimension of the span the fit ran in, or None when it ran in all coordinates.
    span_basis_ : ndarray (d, ``span_dim_``) or None
        An orthonormal basis of that span.

    References
    ----------
    Y. Ying and P. Li. Distance metric learning with eigenvalue optimization. JMLR 13:1–26, 2012.
    K. Q. Weinberger, J. Blitzer and L. K. Saul. Distance metric learning for large margin nearest
    neighbor classification. NIPS 18, 2005.
    """

    constraint_kind = "triplets"
    optimality_measure = "relative_duality_gap"
    span_complement = "zero"
    _parameter_constraints: dict = {"gamma": [Interval(Real, 0, 1, closed="neither")],
                                    **FRANK_WOLFE_CONSTRAINTS}

    def __init__(self, gamma=0.5, mu=1e-4, tol=1e-5, max_iter=1000, stopping="gap", ridge=1e-2,
                 ridge_mode="relative", scale="none", weight_threshold=1e-12,
                 init="identity", verbose=0):
        store_params(self, locals())

    def _solves_in_span(self) -> bool:
        """With a ridge δ > 0 (the whole space's ``X_S + δI`` definite)."""
        return super()._solves_in_span() and self.ridge > 0

    def _span_complement_scale(self) -> float:
        return self._complement

    def _constraints_needed(self):
        """Triplets, and similar pairs for the whitening (see
        :func:`~dml_bench.solvers.dml_eig.needs_similar_pairs`)."""
        return ("triplets", *needs_similar_pairs(self))

    def _whiten(self, X, constraints):
        """L, the whitened (scaled) points, the distinct pairs whose differences are the rows, the
        row of each triplet's a_τ and b_τ, and c².

        The rows are the distinct *unordered* pairs among the triplets' impostor pairs (i, k) and
        target pairs (i, j): ``r rᵀ`` does not depend on the sign of r, so (i, k) and (k, i) share
        a row (with ``knn_triplets`` on USPS: 32 629 rows instead of 58 626 · 2). The Cholesky
        factor, ridge and scale factor are DML-eig's (:func:`dml_eig.whiten`) with these pairs in
        the role of its dissimilar pairs.
        """
        T = constraints.triplets
        if len(T) == 0:
            raise ValueError("LMNN-eig needs at least one triplet")
        pairs, target, impostor = triplet_pairs(T)
        L, points, c2, delta = whiten(X, constraints.similar, pairs, self.ridge, self.ridge_mode,
                                      self.scale, n_features=self._whole_dim(X))
        return L, points, pairs, impostor, target, c2, delta

    def _whole_dim(self, X) -> int:
        """The whole space's d, also in a solve in the span (:mod:`.span`)."""
        return X.shape[1] + getattr(self, "_off_span_dim", 0)

    def _fit(self, X, y, constraints):
        start = time.perf_counter()
        # the distinct rows are the pairs' differences of the whitened points;
        # a_τ = row ia[τ], b_τ = row ib[τ]
        L, points, pairs, ia, ib, c2, delta = self._whiten(X, constraints)
        d, n_rows, n_trip = self._whole_dim(X), len(pairs), len(ia)
        gamma, mu = float(self.gamma), self.mu
        # State of (16): scaled margins m_τ = c²⟨C̃_τ, S⟩ and slacks ξ (units of (16)).
        sq = pair_sq_distances(points, pairs) / d  # ⟨r rᵀ, I/d⟩ for every distinct row
        margin = sq[ia] - sq[ib]
        xi = np.full(n_trip, 1.0 / n_trip)
        vecs, alphas = [], []  # S-vertex v/√γ, or 0 for a ξ-vertex (see iterate_metric)
        trace = {k: [] for k in ("objective", "min_value", "gap", "slack_step", "time")}

        top = GramTopEigenvector(points, pairs, self.weight_threshold, signed=True)

        row_w = np.empty(n_rows)

        def vertex():
            """At the current (S, ξ): f_μ, the vertex of (24) (v, p, τ*, ξ-vertex?), the gap and
            the smallest value ``min_τ (m_τ + c² ξ_τ)``."""
            # row_w: aggregated signed weight of each distinct row, Σ_τ w_τ C̃_τ = Rᵀ diag(row_w) R
            f_mu, w, value = _triplet_weights(margin, xi, c2, mu, ia, ib, row_w)
            v, p_rows, _ = top(row_w)  # p_rows: the one full pass per iteration
            p, lam = _triplet_projections(p_rows, ia, ib, w)  # p_τ = c²⟨C̃_τ, v vᵀ⟩, λ = wᵀp
            tau = int(np.argmax(w))
            slack_step, vertex_value = _lp_vertex(lam, c2 * w[tau], gamma)
            return f_mu, v, p, tau, slack_step, vertex_value - float(w @ value), value.min()

        converged, f_prev, report = False, np.inf, self.verbose >= 2
        for t in range(1, self.max_iter + 1):
            f_mu, v, p, tau, slack_step, gap, min_value = vertex()
            if self.stopping == "objective" and abs(f_mu - f_prev) < self.tol:
                converged = True
                break
            for key, val in zip(trace, (f_mu, min_value, gap, slack_step,
                                        time.perf_counter() - start)):
                trace[key].append(val)
            if report:
                report_progress(self, t, objective=f_mu, relative_gap=gap / abs(f_mu),
                                slack_step=slack_step)
            if self.stopping == "gap" and gap <= self.tol * abs(f_mu):
                converged = True
                break
            alpha = 2.0 / (t + 1)
            margin *= 1 - alpha
            xi *= 1 - alpha
            if slack_step:
                xi[tau] += alpha / (1 - gamma)
                vecs.append(np.zeros(X.shape[1]))
            else:
                margin += (alpha / gamma) * p
                vecs.append(v / np.sqrt(gamma))
            alphas.append(alpha)
            f_prev = f_mu
        if not converged:
            f_mu, *_, gap, _ = vertex()  # at the returned iterate
            warn_not_converged(self, **frank_wolfe_warning(self, f_mu, gap))
        self.components_, self.metric_ = iterate_metric(
            np.array(vecs).reshape(-1, X.shape[1]), np.array(alphas), L, d)
        self._complement = off_span_scale(np.array(alphas), d, delta)
        self.slack_ = xi
        self.objective_ = float((margin + c2 * xi).min() / c2)
        self.scale_ = float(c2)
        self.n_iter_ = len(trace["gap"])
        self.converged_ = converged
        self.optimality_ = float(gap / abs(f_mu))
        self.trace_ = {k: np.asarray(vals) for k, vals in trace.items()}


def _lp_vertex(lam_max: float, beta_max: float, gamma: float) -> tuple[bool, float]:
    """Solution of the linear programme Eq. (24) from ``λ_max(A)`` and ``β_max = β_{τ*}``.

    ``max {⟨Z, A⟩ + ξᵀβ : Z ⪰ 0, ξ ≥ 0, (1 − γ) ξᵀ1 + γ Tr(Z) = 1}`` is attained at
    ``(v vᵀ/γ, 0)`` with value ``λ_max/γ`` when ``λ_max/γ ≥ β_max/(1 − γ)``, otherwise at
    ``(0, e_{τ*}/(1 − γ))`` with value ``β_max/(1 − γ)``. Returns (ξ-vertex?, optimal value).
    """
    s_value, xi_value = lam_max / gamma, beta_max / (1 - gamma)
    return bool(s_value < xi_value), max(s_value, xi_value)


@njit(**JIT_OPTIONS)
def _triplet_weights(margin, xi, c2, mu, ia, ib, row_w):
    """At the triplet values ``h = m + c² ξ``: ``f_μ(h)``, the softmax weights ``w`` and ``h``
    (returned), and each distinct row's aggregated weight ``Σ_{τ: a_τ = r} w_τ − Σ_{τ: b_τ = r} w_τ``
    (into ``row_w``): the gradient ``Σ_τ w_τ C̃_τ = Rᵀ diag(row_w) R``. One compiled call."""
    value = margin + c2 * xi
    w = np.empty(value.shape[0])
    f_mu = _smoothed_min_into(value, mu, w)
    row_w[:] = 0.0
    for t in range(w.shape[0]):
        row_w[ia[t]] += w[t]
        row_w[ib[t]] -= w[t]
    return f_mu, w, value


@njit(**JIT_OPTIONS)
def _triplet_projections(p_rows, ia, ib, w):
    """``p_τ = p_rows[a_τ] − p_rows[b_τ]`` (``c²⟨C̃_τ, v vᵀ⟩``) and ``wᵀp``."""
    p = np.empty(ia.shape[0])
    total = 0.0
    for t in range(ia.shape[0]):
        p[t] = p_rows[ia[t]] - p_rows[ib[t]]
        total += w[t] * p[t]
    return p, total
