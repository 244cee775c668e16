"""Xing et al. (2002) "MMC": projected gradient ascent on the sum of dissimilar distances.

Xing, Ng, Jordan & Russell (2002), as Ying & Li (2012) state it in their Eq. (1)::

    max_M  Σ_{(i,j)∈D} d_M(x_i, x_j)     s.t.  Σ_{(i,j)∈S} d²_M(x_i, x_j) ≤ t,   M ⪰ 0,

with ``d_M(x, z) = sqrt((x − z)ᵀ M (x − z))``. With ``X_τ = (x_i − x_j)(x_i − x_j)ᵀ`` and
``X_S = Σ_{τ∈S} X_τ`` the objective is the concave ``g(M) = Σ_{τ∈D} sqrt(⟨X_τ, M⟩)`` and the
constraint is the half-space ``⟨X_S, M⟩ ≤ t``. The solution is a ray (``g`` is homogeneous of degree
½, the constraint linear), so t only fixes the scale: the returned metric is normalised to
``⟨X_S, M⟩ = 1``, Ying & Li's form of Eq. (1).

The loop follows the structure of the authors' MATLAB code (``fit_full_mmc``, Xing 2002; also the
basis of metric-learn's ``MMC``): start at ``A = I`` with ``t = ⟨X_S, I⟩ / 100``; every cycle

1. *iterated projections* onto C1 = {⟨X_S, A⟩ ≤ t} (Euclidean projection onto the half-space) and
   C2 = {A ⪰ 0} (eigendecomposition, negative eigenvalues clipped), alternated until
   ``(⟨X_S, A⟩ − t)/t < eps`` or ``max_proj`` rounds (``projection="alternating"``, the
   default), or the exact Euclidean projection onto C1 ∩ C2 (see ``projection``);
2. if the projection succeeded and raised ``g`` over the last accepted iterate ``A_last`` (always
   on the first cycle): accept, ``α ← 1.05 α``, take the ascent direction ``P`` = the gradient
   ``∇g(A) = Σ_{τ∈D} X_τ / (2 d_τ)`` with its component along ``X_S`` (the gradient of the
   constraint) removed and normalised to unit Frobenius norm, and step ``A ← A + α P``;
   otherwise ``α ← α/2`` and retry ``A ← A_last + α P``;
3. stop when ``‖α P‖_F / ‖A_last‖_F < tol``.

The original code maximises ``log g``; its gradient has the direction of ``∇g`` and its ordering is
that of ``g``, so the iterates are the same. No d×d matrix is built per pair: ``∇g`` is one
Laplacian GEMM (``linalg.PairOuterSum`` of D, weights 1/(2 d)) and the distances ``d_τ`` are row-wise
norms of ``X F`` with ``A = F Fᵀ`` taken from the eigendecomposition of the PSD projection (the one
d×d eigendecomposition per projection round the method needs).

Step 2's direction is not always an ascent direction after the projection (the component along
``X_S`` that it drops can matter once the projection is active), so the step-halving can end the
run by the ``tol`` rule short of the optimum; ``trace_["gap"]`` shows it when it happens.

Optimality certificate (``trace_["gap"]``): g is concave, so at the normalised feasible point
``M̂ = A / ⟨X_S, A⟩`` the Frank-Wolfe gap ``max_{Z feasible} ⟨∇g(M̂), Z − M̂⟩
= λ_max(X_S^{-1/2} ∇g(M̂) X_S^{-1/2}) − g(M̂)/2`` (``⟨∇g(M), M⟩ = g(M)/2``) bounds ``g* − g(M̂)``
from above. A singular X_S (features constant over the training set) is whitened on its range;
the gap is ``inf`` only when the dissimilar pairs also vary along its null space, where Eq. (1)
is unbounded.
"""

from __future__ import annotations

import time
from numbers import Integral, Real

import numpy as np
import scipy.linalg
from sklearn.utils._param_validation import Interval, StrOptions

from .base import VERBOSE, MetricLearner, report_progress, store_params, warn_not_converged
from .linalg import (PairOuterSum, syevd_routine, components_from_psd, eigh_all, pair_differences,
                     pair_sq_distances, weighted_outer_sum)

#: relative step of μ at which the exact projection's root finding stops (:func:`_project_exact`)
MU_RTOL = 1e-12
#: the original code sets the bound ``t = ⟨X_S, A_0⟩ / 100`` from the initial metric ``A_0 = I``
BOUND_DIVISOR = 100.0


class Xing(MetricLearner):
    """Xing et al. (2002) metric learning (MMC), Ying & Li (2012) Eq. (1), by projected ascent.

    Parameters
    ----------
    max_iter : int, default=500
        Cap on the ascent cycles. The original driver's ``maxiter = 100`` (metric-learn's MMC;
        the paper configs pin it) stops short of ``tol`` on z-scored breast cancer and digits
        (pairs of k = 3 triplets, 70 % splits 0 to 3: 140 to 251 and 97 to 160 cycles, at most
        2.8 s, one thread; iris and wine 16 to 84).
    tol : float, default=1e-3
        Stop when the relative step ``‖α P‖_F / ‖A_last‖_F`` is below ``tol`` (``threshold2 =
        0.001`` of the original code).
    eps : float, default=0.01
        Relative violation ``(⟨X_S, A⟩ − t)/t`` at which the iterated projections onto C1 and C2
        stop (``epsilon = 0.01`` of the original code). The returned metric is rescaled onto
        ``⟨X_S, M⟩ = 1`` afterwards, so it is exactly feasible whatever ``eps``.
    max_proj : int, default=10000
        Cap on the projection rounds per cycle (``maxprojs = 10000`` of the original code).
    step : float, default=0.1
        Initial step size α (``alpha = 0.1`` of the original code), in the units of ``A_0 = I``.
    projection : {"alternating", "exact"}, default="alternating"
        ``"alternating"``: Xing et al.'s algorithm, the original code's alternating projections
        onto C1 and C2 (``eps``, ``max_proj``); metric-learn's ``MMC`` is the same algorithm.
        They converge slowly (linearly, one eigendecomposition per round) and can run all
        ``max_proj`` rounds without reaching ``eps``.
        ``"exact"``: the Euclidean projection onto C1 ∩ C2 that they approximate,
        ``Π_PSD(B − μ X_S)`` with the scalar μ ≥ 0 found by safeguarded Newton steps (one d×d
        eigendecomposition per step, about 5 a cycle), always feasible. It is not the authors'
        projection, and the ascent around it can end elsewhere (a different 3-NN error).
    diagonal : bool, default=False
        Learn a diagonal M (Xing et al.'s §2.2): minimise ``g(a) = Σ_{τ∈S} d²_a − log Σ_{τ∈D}
        d_a`` over the diagonal ``a ≥ 0`` by Newton–Raphson steps (projected onto ``a ≥ 0``,
        with backtracking), which solves Eq. (1) restricted to diagonal metrics (see
        :func:`_fit_diagonal`). ``max_iter`` caps the Newton steps and ``tol`` bounds the
        relative Frank–Wolfe gap of the restricted problem; ``step``, ``projection``, ``eps``
        and ``max_proj`` are unused.
    verbose : int, default=0
        0: silent; 1: one line at the end of the fit (cycles, objective, relative gap,
        converged, seconds); 2 and more: also one line per cycle (objective, relative step,
        α).

    With more features than training points, the full metric is learned in the span of the
    points' differences (:mod:`~dml_bench.solvers.span`; ``span_dim_``), with the same cycles as
    in all d coordinates. From ``A_0 = I`` the complement of the span keeps ``A = I``: the
    gradient ``Σ_τ X_τ/(2 d_τ)`` and the constraint's ``X_S`` live on the span, the half-space
    projection subtracts a multiple of ``X_S``, and the PSD projection keeps the complement's
    eigenvalue 1. Only the relative step sees the complement, through
    ``‖A‖_F² = ‖A_span‖_F² + (d − q)``, which the solve in the span counts; the returned
    ``M = A/⟨X_S, A⟩`` is ``I/⟨X_S, A⟩`` off the span. The diagonal metric depends on the
    coordinates and is learned in all of them.

    Attributes
    ----------
    metric_ : ndarray (d, d)
        M, PSD, with ``⟨X_S, M⟩ = 1``.
    components_ : ndarray (d, d)
        L with M = LᵀL.
    objective_ : float
        ``Σ_{τ∈D} d_M(x_i, x_j)`` at the returned M (Eq. (1)).
    n_iter_ : int
    converged_ : bool
    optimality_ : float
        Relative Frank-Wolfe gap ``gap/g`` at the returned M (``optimality_measure``
        ``"relative_duality_gap"``): a certificate, unlike the relative step the stopping rule
        tests; ``inf`` where Eq. (1) is unbounded (see the module docstring).
    trace_ : dict of ndarray
        Per cycle: ``objective`` (Eq. (1) at the accepted iterate, normalised to ⟨X_S, M⟩ = 1),
        ``gap`` (Frank-Wolfe gap at it, an upper bound on the optimum minus ``objective``),
        ``delta`` (relative step, the stopping measure), ``step`` (α), ``n_proj`` (projection
        rounds; with the exact projection, the eigendecompositions of its root finding) and
        ``time`` (seconds since the start of ``fit``).
    span_dim_ : int or None
        The dimension of the span the fit ran in, or None when it ran in all coordinates.
    span_basis_ : ndarray (d, ``span_dim_``) or None
        An orthonormal basis of that span.

    References
    ----------
    E. P. Xing, A. Y. Ng, M. I. Jordan and S. Russell. Distance metric learning, with application
    to clustering with side-information. NIPS 15, 2002.
    Y. Ying and P. Li. Distance metric learning with eigenvalue optimization. JMLR 13:1–26, 2012
    (Eq. (1); §5 feeds all methods the same local k-NN pairs).
    """

    constraint_kind = "pairs"
    optimality_measure = "relative_duality_gap"
    span_complement = "identity"
    #: the full metric is the fit from before ``diagonal`` existed: left out of a result's
    #: identity at that value
    neutral_params = {**MetricLearner.neutral_params, "diagonal": False}
    _parameter_constraints: dict = {
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "step": [Interval(Real, 0, None, closed="neither")],
        "projection": [StrOptions({"exact", "alternating"})],
        "eps": [Interval(Real, 0, None, closed="neither")],
        "max_proj": [Interval(Integral, 1, None, closed="left")],
        "diagonal": ["boolean"],
        "verbose": VERBOSE,
    }

    def __init__(self, max_iter=500, tol=1e-3, step=0.1, projection="alternating", eps=0.01,
                 max_proj=10000, diagonal=False, verbose=0):
        store_params(self, locals())

    def _solves_in_span(self) -> bool:
        """The full metric only: a diagonal one depends on the coordinates."""
        return super()._solves_in_span() and not self.diagonal

    def _span_complement_scale(self) -> float:
        return self._complement

    def _fit(self, X, y, constraints):
        start = time.perf_counter()
        dissimilar = np.asarray(constraints.dissimilar)
        if len(dissimilar) == 0 or len(constraints.similar) == 0:
            raise ValueError("Xing needs similar and dissimilar pairs")
        d = X.shape[1]
        if self.diagonal:
            return self._fit_diagonal(X, np.asarray(constraints.similar), dissimilar, start)
        XS = weighted_outer_sum(pair_differences(X, np.asarray(constraints.similar)))
        XS = (XS + XS.T) / 2
        XS_norm2 = float(np.vdot(XS, XS))
        if XS_norm2 == 0:
            raise ValueError("all similar pairs have zero difference")
        XS_unit = XS / np.sqrt(XS_norm2)
        XS_whiten, XS_null = _whitener(XS)
        t = np.trace(XS) / BOUND_DIVISOR  # ⟨X_S, A_0⟩ / 100 with A_0 = I

        def distances(lam, V):
            """Row-wise ``d_τ = sqrt(⟨X_τ, A⟩)`` for ``A = V diag(lam) Vᵀ``, lam ≥ 0."""
            pos = lam > 0
            F = V[:, pos] * np.sqrt(lam[pos])
            return np.sqrt(pair_sq_distances(X @ F, dissimilar))

        outer_sum = PairOuterSum(X, dissimilar)  # w ↦ Σ_τ w_τ X_τ
        off_span = getattr(self, "_off_span_dim", 0)  # solving in the span (:mod:`.span`)
        A = np.eye(d)
        A_last = A.copy()
        dist_last = distances(np.ones(d), np.eye(d))
        alpha = float(self.step)
        P = _ascent_direction(_gradient(outer_sum, dist_last), XS_unit)  # at A_0, as the code
        trace = {k: [] for k in ("objective", "gap", "delta", "step", "n_proj", "time")}
        objective_n = gap = np.nan
        mu = 0.0  # the exact projection's multiplier, passed on as the next cycle's start
        converged, report = False, self.verbose >= 2
        for cycle in range(self.max_iter):
            # 1. projection onto C1 ∩ C2
            if self.projection == "exact":
                A, lam, V, mu, n_proj = _project_exact(A, XS, t, mu)
                satisfy = True
            else:  # the original code's alternating projections
                A, lam, V, satisfy, n_proj = _alternate(A, XS, XS_norm2, t, self.eps,
                                                        self.max_proj)
            # 2. accept (and grow α) or halve α and retry from the last accepted iterate
            dist = distances(lam, V)
            if satisfy and (cycle == 0 or dist.sum() > dist_last.sum()):
                alpha *= 1.05
                A_last, dist_last = A, dist
                grad = _gradient(outer_sum, dist)
                scale = float(np.vdot(XS, A))  # ⟨X_S, A⟩; M̂ = A / scale
                objective_n = dist.sum() / np.sqrt(scale)
                gap = _fw_gap(grad * np.sqrt(scale), objective_n, XS_whiten, XS_null)
                P = _ascent_direction(grad, XS_unit)
                A = A_last + alpha * P
            else:
                alpha /= 2
                A = A_last + alpha * P
            # 3. relative step
            # ‖P‖_F = 1, or 0; ‖A_last‖_F with the identity's dimensions off the span, if any
            delta = alpha * np.linalg.norm(P) / np.sqrt(np.vdot(A_last, A_last) + off_span)
            for key, val in zip(trace, (objective_n, gap, delta, alpha, n_proj,
                                        time.perf_counter() - start)):
                trace[key].append(val)
            if report:
                report_progress(self, cycle + 1, objective=objective_n, relative_step=delta)
            if delta < self.tol:
                converged = True
                break
        if not converged:
            self._warn_capped(trace["delta"][-1], gap / objective_n)
        scale = float(np.vdot(XS, A_last))
        self._complement = 1.0 / scale  # A is I off the span (class docstring), so M is I/scale
        M = A_last / scale
        self.components_ = components_from_psd(M)
        self.metric_ = self.components_.T @ self.components_
        self.objective_ = float(np.sqrt(pair_sq_distances(X @ self.components_.T,
                                                          dissimilar)).sum())
        self.n_iter_ = len(trace["delta"])
        self.converged_ = converged
        self.optimality_ = float(gap / objective_n)
        self.trace_ = {k: np.asarray(vals, dtype=float) for k, vals in trace.items()}

    def _fit_diagonal(self, X, similar, dissimilar, start):
        """Xing et al.'s diagonal algorithm. With ``D2`` the squared coordinate differences of the
        dissimilar pairs (one row per pair) and ``s`` their column sum over the similar pairs,
        ``g(a) = s·a − log h(a)``, ``h(a) = Σ_τ sqrt(D2_τ·a)``: convex on ``a ≥ 0`` (−log of a
        concave positive function). g is unchanged along rays up to the additive
        ``c s·a − ½ log c``, so its minimiser is the ray of Eq. (1)'s diagonal solution at
        ``s·a = ½``; the metric is returned rescaled to ``⟨X_S, M⟩ = s·a = 1``.

        Each step solves the Newton system of g on the coordinates not held at 0 (a coordinate
        at 0 whose partial derivative is positive stays there), clips the step at ``a ≥ 0`` and
        halves it until g decreases. The certificate is Eq. (1)'s Frank–Wolfe gap over the
        diagonal feasible set ``{a ≥ 0, s·a ≤ 1}``, whose vertices are ``e_k/s_k``: at the
        normalised ``â``, ``max_k ∂_k G(â)/s_k − G(â)/2`` with ``G(a) = Σ_τ d_a`` (homogeneous
        of degree ½). The fit stops when that gap is at most ``tol · G(â)``.
        """
        D2 = pair_differences(X, dissimilar) ** 2
        s = (pair_differences(X, similar) ** 2).sum(axis=0)
        if not s.any():
            raise ValueError("all similar pairs have zero difference")
        free_s = s > 0
        if np.any(D2[:, ~free_s] > 0):  # a feature constant over S but not over D
            raise ValueError("Eq. (1) is unbounded: a feature is constant over the similar "
                             "pairs but varies over the dissimilar ones")

        def g_parts(a):
            dist = np.sqrt(np.maximum(D2 @ a, 0.0))
            h = dist.sum()
            return s @ a - np.log(h), dist, h

        def certificate(a):
            scale = s @ a
            dist = np.sqrt(np.maximum(D2 @ (a / scale), 0.0))
            G = dist.sum()
            w = np.divide(0.5, dist, out=np.zeros_like(dist), where=dist > 0)
            dG = w @ D2
            ratio = np.divide(dG, s, out=np.zeros_like(dG), where=free_s)
            return G, max(float(ratio.max()) - G / 2, 0.0)

        a = np.where(free_s, 1.0, 0.0)
        a /= 2 * (s @ a)
        value, dist, h = g_parts(a)
        trace = {k: [] for k in ("objective", "gap", "delta", "step", "n_proj", "time")}
        converged, report = False, self.verbose >= 2
        G, gap = certificate(a)
        for step in range(self.max_iter):
            if gap <= self.tol * G:
                converged = True
                break
            trial, (trial_value, trial_dist, trial_h), length = _projected_newton_step(
                a, dist, h, value, s, D2, free_s, g_parts)
            delta = float(np.linalg.norm(trial - a) / np.linalg.norm(a))
            if trial_value >= value:  # no decrease left at machine precision
                converged = bool(gap <= self.tol * G)
                break
            a, value, dist, h = trial, trial_value, trial_dist, trial_h
            G, gap = certificate(a)
            for key, val in zip(trace, (G, gap, delta, length, 0, time.perf_counter() - start)):
                trace[key].append(val)
            if report:
                report_progress(self, step + 1, objective=G, relative_gap=gap / G)
        if not converged:
            warn_not_converged(
                self, rule=f"relative Frank-Wolfe gap ≤ tol = {self.tol:g}",
                cap=f"max_iter = {self.max_iter} Newton steps", hint="raise max_iter (or tol)",
                reached=f"relative Frank-Wolfe gap {gap / G:.3g}")
        a = a / (s @ a)
        self.metric_ = np.diag(a)
        self.components_ = np.diag(np.sqrt(a))
        self.objective_ = float(np.sqrt(D2 @ a).sum())
        self.n_iter_ = len(trace["delta"])
        self.converged_ = converged
        self.optimality_ = float(gap / G)
        self.trace_ = {k: np.asarray(vals, dtype=float) for k, vals in trace.items()}

    def _warn_capped(self, delta, relative_gap):
        """The ConvergenceWarning of a fit that reached ``max_iter`` (last relative step
        ``delta``)."""
        warn_not_converged(
            self, rule=f"relative step ‖αP‖_F/‖A‖_F < tol = {self.tol:g}",
            cap=f"max_iter = {self.max_iter} cycles", hint="raise max_iter (or tol)",
            reached=f"relative step {delta:.3g}, relative Frank-Wolfe gap {relative_gap:.3g}")


def _gradient(outer_sum, dist):
    """``∇g(A) = Σ_τ X_τ / (2 d_τ)`` by the pairs' ``linalg.PairOuterSum`` (one Laplacian GEMM;
    pairs at distance 0 left out)."""
    w = np.divide(0.5, dist, out=np.zeros_like(dist), where=dist > 0)
    G = outer_sum(w)
    return (G + G.T) / 2


def _alternate(A, XS, XS_norm2, t, eps, max_proj):
    """The original code's alternating projections from A: onto the half-space
    ``⟨X_S, A⟩ ≤ t`` (when outside it), then onto the PSD cone (:func:`.linalg.project_psd`'s
    product, from the same LAPACK call), until ``(⟨X_S, A⟩ − t)/t < eps`` or ``max_proj``
    rounds. Returns (A, its clipped eigenvalues, eigenvectors, whether eps was met, rounds).

    One d×d eigendecomposition per round and nothing else of size d³: the loop calls
    LAPACK's ``syevd`` itself (the decomposition :func:`.linalg.eigh_all` makes, without its
    per-call overhead, which is most of a round for d ≲ 30), falling back to ``eigh_all``
    where ``syevd`` does not converge.
    """
    xs = XS.ravel()
    syevd, work = syevd_routine(A.dtype.char, len(A), False)
    for n_proj in range(1, max_proj + 1):
        excess = float(xs @ A.ravel()) - t
        if excess > 0:
            A = A - (excess / XS_norm2) * XS
        S = A + A.T
        S /= 2
        # S is exactly symmetric: its transpose (Fortran order) read as the upper triangle, as
        # eigh_all reads a C-ordered matrix
        lam, V, info = syevd(S.T, compute_v=1, lower=0, **work)
        if info != 0:
            lam, V = eigh_all(S)
        np.maximum(lam, 0.0, out=lam)
        A = (V * lam) @ V.T
        if (float(xs @ A.ravel()) - t) / t < eps:
            return A, lam, V, True, n_proj
    return A, lam, V, False, max_proj


def _project_exact(B, XS, t, mu0=0.0, max_eval=100):
    """Euclidean projection of B onto {A ⪰ 0, ⟨X_S, A⟩ ≤ t}: ``A = Π_PSD(B − μ X_S)``.

    KKT of the projection: μ ≥ 0 is 0 if ``Π_PSD(B)`` is feasible, else the root of the
    nonincreasing ``h(μ) = ⟨X_S, Π_PSD(B − μ X_S)⟩ − t``. The root is found by Newton's method
    from ``mu0`` (the ascent passes the last cycle's μ), safeguarded by bisection on a bracket
    [lo, hi] with ``h(lo) > 0 ≥ h(hi)``: one d×d eigendecomposition per evaluation, whose
    eigenpairs also give the slope ``h′(μ)`` (:func:`_projection_slope`). A step that would
    leave μ ≥ 0 evaluates μ = 0, the answer when h(0) ≤ 0. It stops there, at h(μ) = 0, or when
    a step is below ``MU_RTOL`` of μ (h is evaluated to round-off, so the steps that follow
    convergence are noise of that order), at ``max_eval`` evaluations at most; the projection is
    the last one evaluated.

    Returns (A, its clipped eigenvalues, eigenvectors, μ, evaluations).
    """
    def evaluate(mu):
        S = B - mu * XS if mu else B
        lam, V = eigh_all((S + S.T) / 2)
        pos = lam > 0
        F = V[:, pos] * np.sqrt(lam[pos])
        A = F @ F.T
        return A, lam, V, float(np.vdot(XS, A)) - t

    mu = max(float(mu0), 0.0)
    A, lam, V, excess = evaluate(mu)
    lo, hi, n_eval = 0.0, np.inf, 1
    while n_eval < max_eval and excess != 0 and not (mu == 0 and excess < 0):
        if excess > 0:
            lo = mu
        else:
            hi = mu
        slope = _projection_slope(lam, V, XS)
        trial = mu - excess / slope if slope < 0 else np.inf
        if trial <= 0:
            trial = 0.0
        elif not lo < trial < hi:  # Newton left the bracket: bisect it (or step past lo)
            trial = (lo + hi) / 2 if np.isfinite(hi) else 2 * lo + excess / float(np.vdot(XS, XS))
        if trial and abs(trial - mu) <= MU_RTOL * trial:
            break
        mu = trial
        A, lam, V, excess = evaluate(mu)
        n_eval += 1
    return A, np.maximum(lam, 0.0), V, mu, n_eval


def _projection_slope(lam, V, XS):
    """``h′(μ) = −⟨X_S, DΠ(S)[X_S]⟩`` at ``S = B − μ X_S = V diag(λ) Vᵀ``, ``Π = Π_PSD``.

    The derivative of ``Π(S) = V max(Λ, 0) Vᵀ`` along H is ``V (Γ ∘ VᵀHV) Vᵀ`` with the divided
    differences ``Γ_ij = (λ_i⁺ − λ_j⁺)/(λ_i − λ_j)`` (Γ_ii = 1 for λ_i > 0, else 0: Daleckii–Krein,
    Bhatia 1997, Thm. V.3.3), so ``h′ = −Σ_ij Γ_ij Y_ij²`` with ``Y = VᵀX_SV``. Γ vanishes where
    both eigenvalues are ≤ 0: only the rows of the positive ones, ``Y_P = V_PᵀX_SV``, are formed.
    """
    pos = lam > 0
    if not pos.any():
        return 0.0
    Y = (XS @ V[:, pos]).T @ V  # rows: positive eigenvalues; columns: all
    lp, ln = lam[pos], lam[~pos]
    both = float(np.sum(Y[:, pos] ** 2))
    mixed = float(np.sum(Y[:, ~pos] ** 2 * (lp[:, None] / (lp[:, None] - ln[None, :]))))
    return -(both + 2 * mixed)


def _ascent_direction(grad, XS_unit):
    """``∇g`` without its component along ``X_S``, unit Frobenius norm (``grad_projection``).

    Zero when that component is all of ``∇g`` up to round-off: no direction along
    ``⟨X_S, A⟩ = const`` ascends (always so for d = 1), the relative step is 0 and the fit stops.
    """
    P = grad - float(np.vdot(grad, XS_unit)) * XS_unit
    norm = np.linalg.norm(P)
    return P / norm if norm > 1e-12 * np.linalg.norm(grad) else np.zeros_like(P)


def _whitener(XS, rtol=1e-10):
    """``(W, N)``: ``W = diag(s)^{-1/2} Uᵀ`` over the range of ``X_S = U diag(s) Uᵀ`` (eigenvalues
    above ``rtol · s_max``) and an orthonormal basis ``N`` of its null space (d×0 when regular)."""
    s, U = eigh_all(XS)
    keep = s > rtol * s[-1]
    return U[:, keep].T / np.sqrt(s[keep])[:, None], U[:, ~keep]


def _fw_gap(grad, objective, W, N):
    """Frank-Wolfe gap of Eq. (1) at a normalised point with gradient ``grad`` and value ``g``.

    ``max {⟨∇g, Z⟩ : Z ⪰ 0, ⟨X_S, Z⟩ ≤ 1} = λ_max(W ∇g Wᵀ)`` (``W`` whitens the range of X_S), minus
    ``⟨∇g, M̂⟩ = g/2``. A singular X_S (constant features, e.g. blank pixels) leaves the feasible
    set unbounded along its null space ``N``: the supremum is then finite only when ∇g vanishes
    there (∇g is PSD, so ``∇g N = 0`` iff ``Nᵀ ∇g N = 0``), else the gap is ``inf``.
    """
    if N.shape[1] and np.abs(N.T @ grad @ N).max() > 1e-10 * np.abs(grad).max():
        return np.inf
    C = W @ grad @ W.T
    r = len(C)
    lam = scipy.linalg.eigh((C + C.T) / 2, eigvals_only=True, subset_by_index=[r - 1, r - 1])
    return max(float(lam[0]), 0.0) - objective / 2


def _projected_newton_step(a, dist, h, value, s, D2, free_s, g_parts):
    """One step of the diagonal algorithm: the Newton system of ``g(a) = s·a − log h(a)`` on the
    coordinates not held at 0 (a coordinate at 0 whose partial derivative is positive stays
    there), the step clipped at ``a ≥ 0`` and halved until g decreases (or the step falls below
    1e-12). Returns the trial point, ``g_parts`` of it and the step length."""
    w = np.divide(1.0, dist, out=np.zeros_like(dist), where=dist > 0)
    grad_h = 0.5 * (w @ D2)
    grad = s - grad_h / h
    # Hessian of −log h: (∇h∇hᵀ)/h² − ∇²h/h, with ∇²h = −¼ Σ_τ D2_τ D2_τᵀ / d_τ³
    hess = np.outer(grad_h, grad_h) / h**2 + (D2.T * (w**3 / (4 * h))) @ D2
    free = free_s & ((a > 0) | (grad < 0))
    direction = np.zeros(a.shape[0])
    H = hess[np.ix_(free, free)]
    H[np.diag_indices_from(H)] += 1e-12 * max(np.trace(H), 1e-300)
    direction[free] = -np.linalg.solve(H, grad[free])
    length = 1.0
    while True:
        trial = np.maximum(a + length * direction, 0.0)
        parts = g_parts(trial)
        if parts[2] > 0 and parts[0] < value:
            break
        length /= 2
        if length < 1e-12:
            break
    return trial, parts, length
