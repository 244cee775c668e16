"""ITML: information-theoretic metric learning by cyclic Bregman projections (Davis et al. 2007).

ITML solves Eq. (4) of the paper with slack variables (§3.2, "Handling infeasibility"),

    min_{M ⪰ 0, ξ}  D_ld(M, M₀) + γ · D_ld(diag ξ, diag ξ₀)
    s.t.  d_M(x_i, x_j)² ≤ ξ_ij  for (i, j) similar,   d_M(x_i, x_j)² ≥ ξ_ij  for (i, j) dissimilar,

with the LogDet divergence ``D_ld(M, M₀) = tr(M M₀⁻¹) − log det(M M₀⁻¹) − d`` (Eq. (2) and §3.1),
the prior M₀ (``prior``: I by default) and the initial slacks ξ₀ = u for similar and ξ₀ = l for
dissimilar pairs (``D_ld`` of the diagonal slack matrices is ``Σ ξ/ξ₀ − log(ξ/ξ₀) − 1``). The
prior enters only as the starting point M = M₀ of the projections: a Bregman projection depends
on the current M alone, and cyclic projections from M₀ converge to the minimiser of ``D_ld(·, M₀)``
(Algorithm 1 takes M₀ as its input ``A₀``). Since ``D_ld(RᵀMR, RᵀM₀R) = D_ld(M, M₀)`` and
``d_M(x, z)`` of ``x, z`` equals ``d_{RᵀMR}`` of ``R⁻¹x, R⁻¹z``, ITML with prior M₀ = R Rᵀ on X
is ITML with prior I on the whitened points ``X R`` (with the bounds taken there too).

The loop is Algorithm 1 of the paper: one sweep visits every constraint once and projects (M, ξ)
onto it in the Bregman divergence of the objective, clipped so that its dual variable λ stays ≥ 0.
A projection is a Sherman–Morrison rank-one update ``M ← M + β M v vᵀ M`` (Eq. (3) of §3.1 and
step 3.8 of Algorithm 1), i.e. one matrix–vector product and one rank-one update of M (full,
exactly symmetric, in place): O(d²) per constraint and no d×d matrix stored per constraint. A sweep
is one compiled loop (numba, :func:`_sweep`), so a projection costs no interpreter overhead; a
projection that leaves its dual at 0 (a satisfied constraint) leaves M as it is. From d = 64 on
(:data:`BLOCKED_FROM_D`) a sweep delays the updates over blocks of constraints, so that their
matrix–vector products and their updates are GEMMs (:func:`_sweep_blocked`: the same
projections, 1.15–2.1× faster at d = 64–1,024, ``results/bench/itml_sweep.csv``);
``fit`` returns to Python once per sweep, for the stopping rule and the trace. The projection
constants, the stopping rule and the cap follow the authors' ``ItmlAlg.m`` (ITML code release
1.2), see the notes in :class:`ITML`.

With more features than training points and the identity prior, ITML solves in the span of the
points (:mod:`.span`): each projection ``M ← M + β M v vᵀ M`` from M₀ = I with ``v`` a
difference of points keeps ``M = I + V C Vᵀ`` (the argument of the paper's §4, "Kernelizing
the algorithm"), so the projections run on the q ≤ n − 1 span coordinates and the complement
keeps M = I. The bounds, slacks, duals and ``D_ld(M, I)`` are the same in both coordinates.
"""

from __future__ import annotations

import time
from numbers import Integral, Real

import numpy as np
from numba import njit
from sklearn.datasets import make_spd_matrix
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, Options, StrOptions

from .base import VERBOSE, MetricLearner, report_progress, store_params, warn_not_converged
from .linalg import (JIT_OPTIONS, components_from_psd, pair_differences, pair_sq_distances,
                     scipy_routine)
from .sdml import prior_inverse

#: BLAS dgemm, callable from the compiled sweep: it adds a block's updates to M in place
_dgemm = scipy_routine("blas", "dgemm", 13)

PAIR_MODES = ("given", "random")
#: the named priors M₀ of ITML (an SPD array is the fourth form)
PRIORS = ("identity", "covariance", "random")
#: up to this many distinct point pairs the percentile bounds use all of them, else a sample
_MAX_BOUND_PAIRS = 200_000


class PositivePair(Options):
    """Parameter constraint: a pair of positive numbers (tuple, list or 1-D array), e.g. ITML's
    ``bounds`` (u, l) (a YAML config gives a list)."""

    def __init__(self):
        super().__init__(object, set())

    def is_satisfied_by(self, val):
        if isinstance(val, (str, bytes)) or not hasattr(val, "__len__"):
            return False
        values = np.asarray(val, dtype=object)
        return values.shape == (2,) and all(
            isinstance(v, Real) and not isinstance(v, bool) and v > 0 for v in values)

    def __str__(self):
        return "a pair (u, l) of positive numbers"


class ITML(MetricLearner):
    """Information-theoretic metric learning (Davis et al. 2007, Eq. (4) with slacks, Algorithm 1).

    Parameters
    ----------
    gamma : float in (0, ∞], default=1.0
        Slack trade-off γ (the authors' code ``SetDefaultParams.m``: ``gamma = 1``; the paper
        tunes it by cross-validation). ``np.inf`` enforces the constraints exactly (no slack).
    tol : float, default=0.01
        Stop at the end of a sweep when ``‖λ − λ_old‖₁ / (‖λ‖₂ + ‖λ_old‖₂) < tol`` (λ: the dual
        variables of the constraints, λ_old: their values one sweep earlier), the rule and the
        threshold (``thresh = 10e-3``) of the authors' ``ItmlAlg.m``.
    max_proj : int or None, default=None
        Optional cap on the number of single projections. ``100_000`` is the authors' cap
        (``ItmlAlg.m``'s ``max_iters = 100000``, which counts projections, not sweeps); as there,
        it is checked at the end of a sweep only, so the run stops after the first sweep that
        passes it. It ends a fit after 100 000 / (number of pairs) sweeps, whatever the change of
        the duals (3 sweeps on USPS's k-NN pairs): ``None`` (the default) stops on the rule of
        ``tol`` or at ``max_iter`` sweeps.
    max_iter : int or None, default=1000
        Cap on the number of sweeps (``None``: only ``max_proj``).
    bounds : pair (u, l) of positive floats, or None, default=None
        Upper bound u of the squared distances of similar pairs and lower bound l of those of
        dissimilar pairs. ``None``: u and l are the 5th and 95th percentiles of the SQUARED
        Euclidean distances between training points (§4 of the paper; ``ComputeDistanceExtremes``
        in the authors' code, which squares the distances, whereas metric-learn's percentile of
        the non-squared distances is a bug); with a ``prior`` other than the identity, of the
        squared distances under M₀, as the authors' ``ComputeDistanceExtremes(X, 5, 95, A0)``.
        All distinct point pairs are used when there are at most 2·10⁵ of them, otherwise 2·10⁵
        random pairs (``random_state``); the authors histogram 100 random pairs.
    pairs : {"given", "random"}, default="given"
        ``"given"``: the constraints' similar pairs (≤ u) and dissimilar pairs (≥ l), similar
        pairs first, in the given order. ``"random"``: ignore them and draw ``40·c(c−1)`` random
        pairs of training points (c classes), similar if the labels agree (the authors'
        ``GetConstraints`` with ``const_factor = 40``). **This mode uses the labels y**.
    random_state : int, RandomState or None, default=0
        Seeds the random pairs, ``prior="random"`` and the distance sample of the bounds (used
        only there).
    prior : {"identity", "covariance", "random"} or array of shape (d, d), default="identity"
        M₀, the metric of the LogDet divergence ``D_ld(M, M₀)`` and the starting point of the
        projections (metric-learn's ``prior``): the identity; the inverse of the (biased)
        covariance ``X̄ᵀX̄ / n`` of the training points, as SDML's and LSML's ``"covariance"``
        (metric-learn divides by n − 1, which scales M₀ by (n − 1)/n; refused in one line when
        the covariance is singular); a random SPD matrix (scikit-learn's ``make_spd_matrix``
        drawn with ``random_state`` after any random pairs); or a given symmetric positive
        definite d×d array. ``"identity"`` is the fit from before the option existed and is left
        out of a result's identity (``neutral_params``).
    verbose : int, default=0
        0: silent; 1: one line at the end of the fit (sweeps, objective, relative change of the
        duals, converged, seconds); 2 and more: also one line per sweep.

    Attributes
    ----------
    metric_ : ndarray (d, d)
        The learned M (positive definite).
    span_dim_ : int or None
        The dimension q of the span of the training points it solved in (module docstring),
        None when it solved in all d coordinates.
    span_basis_ : ndarray of shape (d, ``span_dim_``) or None
        The orthonormal basis V of that span (``components_ = I + V (L_V − I) Vᵀ``).
    prior_ : ndarray (d, d)
        The M₀ used.
    components_ : ndarray (d, d)
        L with M = LᵀL.
    bounds_ : tuple of float
        (u, l) used.
    slack_ : ndarray (n_constraints,)
        The algorithm's slacks ξ (similar constraints first), after dropping zero-difference pairs.
    dual_ : ndarray (n_constraints,)
        The dual variables λ ≥ 0.
    objective_ : float
        ``D_ld(M, M₀) + γ D_ld(ξ, ξ₀)`` at the returned M and ξ (``D_ld(M, M₀)`` when γ = ∞).
    n_iter_ : int
        Number of sweeps.
    n_proj_ : int
        Number of projections.
    converged_ : bool
    optimality_ : float
        The stopping rule's relative change of the duals λ over the last sweep
        (``optimality_measure`` ``"relative_dual_change"``).
    trace_ : dict of ndarray
        Per sweep: ``objective``, ``conv`` (the relative change of λ of the stopping rule),
        ``violation`` (the largest constraint violation met by the sweep's projections,
        ``max(δ (d_M² − ξ)) / mean ξ₀`` over the pairs, each just before its projection; δ = +1
        for similar and −1 for dissimilar pairs) and ``time`` (seconds since the start of
        ``fit``).

    Notes
    -----
    Algorithm 1 in the paper writes ``α = min(λ, δ/2 (1/p − γ/ξ))`` and ``ξ ← γξ/(γ + δαξ)``; the
    authors' code uses ``α = min(λ, γ/(γ+1) (1/p − 1/ξ))`` (times δ) and ``1/ξ ← 1/ξ + δα/γ``,
    which is the exact Bregman projection for the objective above (the one of the brief and of
    the cvxpy test): the code's constants are implemented. Pairs with ``‖x_i − x_j‖ < 1e−9`` are
    dropped, as in ``ItmlAlg.m``; when no pair is left ``fit`` stops with a one-line
    ``ValueError`` (there is nothing to learn from, and M₀ = I would look converged).

    References
    ----------
    J. V. Davis, B. Kulis, P. Jain, S. Sra and I. S. Dhillon. Information-theoretic metric
    learning. ICML 2007, pp. 209–216.
    """

    constraint_kind = "pairs"
    optimality_measure = "relative_dual_change"
    _parameter_constraints: dict = {
        "gamma": [Interval(Real, 0, None, closed="right")],  # ∞: no slack
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_proj": [Interval(Integral, 1, None, closed="left"), None],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "bounds": [PositivePair(), None],
        "pairs": [StrOptions(set(PAIR_MODES))],
        "random_state": ["random_state"],
        "prior": [StrOptions(set(PRIORS)), "array-like"],
        "verbose": VERBOSE,
    }
    #: ``prior="identity"`` is the M₀ = I of ITML before the option existed
    neutral_params = {**MetricLearner.neutral_params, "prior": "identity"}
    span_complement = "identity"

    def _solves_in_span(self) -> bool:
        """Only from M₀ = I: another prior is not the identity off the span."""
        return (super()._solves_in_span() and isinstance(self.prior, str)
                and self.prior == "identity")

    def _lift_from_span(self, V):
        """The prior M₀ = I, kept factored as the other d×d results are."""
        self._span_lifts.keep("prior_", vars(self).pop("prior_"), 1.0)

    def __init__(self, gamma=1.0, tol=0.01, max_proj=None, max_iter=1000, bounds=None,
                 pairs="given", random_state=0, prior="identity", verbose=0):
        store_params(self, locals())


    def _report(self, sweep, trace):
        """The progress line of a sweep (``verbose ≥ 2``)."""
        report_progress(self, sweep, objective=trace["objective"][-1],
                        dual_change=trace["conv"][-1], violation=trace["violation"][-1])

    def _constraints_needed(self):
        """Pairs, unless they are drawn from the labels (``pairs='random'``)."""
        return () if self.pairs == "random" else super()._constraints_needed()

    def _fit(self, X, y, constraints):
        start = time.perf_counter()
        rng = check_random_state(self.random_state)
        if self.pairs == "random":
            if y is None:
                raise ValueError("ITML(pairs='random') needs the labels y")
            similar, dissimilar = random_label_pairs(y, rng)
        else:
            similar, dissimilar = constraints.similar, constraints.dissimilar
        M0, A = self._prior(X, rng)  # (None, None): the identity
        u, l = (tuple(map(float, self.bounds)) if self.bounds is not None
                else squared_distance_bounds(X if M0 is None else X @ np.linalg.cholesky(M0),
                                             rng=rng))  # squared d_{M₀}: X R with M₀ = R Rᵀ
        pairs = np.vstack([np.asarray(similar).reshape(-1, 2),
                           np.asarray(dissimilar).reshape(-1, 2)]).astype(np.int64)
        delta = np.concatenate([np.ones(len(similar)), -np.ones(len(dissimilar))])
        V = pair_differences(X, pairs)
        keep = np.sqrt(np.einsum("ij,ij->i", V, V)) >= 1e-9  # ItmlAlg.m: identical points
        if not keep.any():  # no constraint left: M = I would look converged, and is not learned
            got = (f"all {len(pairs)} pairs join identical points (closer than 1e-9)"
                   if len(pairs) else "no pairs")
            raise ValueError(f"ITML needs similar or dissimilar pairs of distinct points; got {got}")
        V, pairs, delta = np.ascontiguousarray(V[keep]), pairs[keep], delta[keep]
        xi0 = np.where(delta > 0, u, l)
        gamma = float(self.gamma)
        M, xi, lam, trace, converged, n_proj = _bregman_sweeps(
            V, delta, xi0, gamma, self.tol, self.max_proj, self.max_iter, start,
            M0=M0, prior_inv=A, report=self._report if self.verbose >= 2 else None)
        if not converged:
            sweeps = len(trace["conv"])
            warn_not_converged(
                self, rule=("relative change of the duals ‖λ − λ_old‖₁/(‖λ‖₂ + ‖λ_old‖₂) < tol "
                            f"= {self.tol:g} at the end of a sweep"),
                cap=(f"max_iter = {self.max_iter} sweeps" if self.max_iter is not None
                     and sweeps >= self.max_iter else
                     f"max_proj = {self.max_proj} projections ({sweeps} sweeps of {len(V)} "
                     "constraints)"),
                reached=(f"relative change of the duals {trace['conv'][-1]:.3g}, largest "
                         f"constraint violation in the last sweep {trace['violation'][-1]:.3g} "
                         "(relative to the mean bound)"),
                hint=("raise max_iter or max_proj (or tol); under cyclic projections this "
                      "change need not fall steadily, and can stall above tol"))
        self.metric_ = M
        self.components_ = components_from_psd(M)
        self.prior_ = np.eye(X.shape[1]) if M0 is None else M0
        self.bounds_ = (u, l)
        self.slack_ = xi
        self.dual_ = lam
        self.objective_ = float(itml_objective(M, xi, xi0, gamma, prior_inverse=A))
        self.n_iter_ = len(trace["conv"])
        self.n_proj_ = n_proj
        self.converged_ = converged
        self.optimality_ = trace["conv"][-1] if trace["conv"] else 0.0
        self.trace_ = {k: np.asarray(vals, dtype=float) for k, vals in trace.items()}

    def _prior(self, X, rng):
        """``(M₀, M₀⁻¹)`` of ``prior``, or ``(None, None)`` for the identity (whose arithmetic
        is then that of ITML before the option); a one-line ``ValueError`` naming ``prior`` for
        an array that is not a symmetric positive definite d×d matrix."""
        d = X.shape[1]
        if isinstance(self.prior, str):
            if self.prior == "identity":
                return None, None
            if self.prior == "covariance":
                A = prior_inverse(X, "covariance", "ITML")
                return _symmetric(np.linalg.inv(A)), A
            M0 = make_spd_matrix(d, random_state=rng)
            return M0, _symmetric(np.linalg.inv(M0))
        try:
            M0 = np.array(self.prior, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"prior: expected 'identity', 'covariance', 'random' or a "
                             f"symmetric positive definite ({d}, {d}) array "
                             f"({' '.join(str(exc).split())})") from None
        if M0.shape != (d, d) or not np.isfinite(M0).all():
            raise ValueError(f"prior: expected a finite ({d}, {d}) array for {d} features, got "
                             f"shape {M0.shape}")
        if not np.allclose(M0, M0.T, rtol=1e-10, atol=1e-12 * np.abs(M0).max()):
            raise ValueError("prior: the array must be symmetric")
        M0 = _symmetric(M0)
        try:
            np.linalg.cholesky(M0)
        except np.linalg.LinAlgError:
            raise ValueError(f"prior: the array must be positive definite (smallest eigenvalue "
                             f"{np.linalg.eigvalsh(M0)[0]:.3g})") from None
        return M0, _symmetric(np.linalg.inv(M0))


def _symmetric(S: np.ndarray) -> np.ndarray:
    """``(S + Sᵀ) / 2``: an inverse made exactly symmetric."""
    return (S + S.T) / 2


def _bregman_sweeps(V, delta, xi0, gamma, tol, max_proj, max_iter, start, M0=None,
                    prior_inv=None, report=None):
    """Algorithm 1: cyclic projections until the duals settle (``ItmlAlg.m``'s rule and cap).

    Each sweep is one call of the compiled :func:`_sweep`; the stopping rule, the cap and the
    trace record are checked in between. Returns (M, ξ, λ, trace, converged, number of
    projections). ``M0`` (None: I) is the start, ``prior_inv`` its inverse for the objective.
    ``report(sweep, trace)``, if given, is called after each sweep's record (``verbose ≥ 2``).

    The trace's ``log det M`` is carried by the determinant lemma, ``det(M + β u uᵀ) =
    det M · (1 + β vᵀ M v)`` for ``u = M v`` (the sweep returns the sum of the logarithms), so
    a record costs no factorisation of M; its violation is the largest met by the sweep's
    projections.
    """
    n_c, d = V.shape
    M = np.eye(d) if M0 is None else np.array(M0, dtype=np.float64, order="C")  # a copy of M₀
    logdet_inv = None if prior_inv is None else _logdet(prior_inv)
    logdet = 0.0 if M0 is None else _logdet(M)
    lam, lam_old = np.zeros(n_c), np.zeros(n_c)
    xi = xi0.astype(float).copy()
    gamma_proj = 1.0 if np.isinf(gamma) else gamma / (gamma + 1.0)
    inv_gamma = 0.0 if np.isinf(gamma) else 1.0 / gamma
    trace = {k: [] for k in ("objective", "conv", "violation", "time")}
    converged, n_proj, sweep = n_c == 0, 0, 0
    scale = float(np.mean(xi0)) if n_c else 1.0
    while not converged:
        if d >= BLOCKED_FROM_D:
            change, worst = _sweep_blocked(M, V, delta, xi, lam, gamma_proj, inv_gamma,
                                           SWEEP_BLOCK)
        else:
            change, worst = _sweep(M, V, delta, xi, lam, gamma_proj, inv_gamma)
        logdet += change
        n_proj += n_c
        sweep += 1
        normsum = np.linalg.norm(lam) + np.linalg.norm(lam_old)
        conv = 0.0 if normsum == 0 else float(np.abs(lam_old - lam).sum() / normsum)
        trace["objective"].append(itml_objective(M, xi, xi0, gamma, prior_inverse=prior_inv,
                                                 prior_logdet=logdet_inv, logdet=logdet))
        trace["conv"].append(conv)
        trace["violation"].append(worst / scale)
        trace["time"].append(time.perf_counter() - start)
        if report is not None:
            report(sweep, trace)
        if normsum == 0 or conv < tol:
            converged = True
        elif ((max_proj is not None and n_proj > max_proj)
              or (max_iter is not None and sweep >= max_iter)):
            break
        lam_old = lam.copy()
    return M, xi, lam, trace, converged, n_proj


@njit(**JIT_OPTIONS)
def _sweep(M, V, delta, xi, lam, gamma_proj, inv_gamma):
    """One sweep of Algorithm 1: project (M, ξ, λ) onto every constraint in turn, in place.

    Constraint c is ``vᵀ M v ≤ ξ_c`` (``delta[c] = +1``, similar) or ``≥ ξ_c`` (``−1``,
    dissimilar) with ``v = V[c]``. With ``p = vᵀ M v``, ``γ' = gamma_proj = γ/(γ+1)`` and
    ``1/γ = inv_gamma`` (``γ' = 1``, ``1/γ = 0`` for γ = ∞): ``α = min(λ_c, δ γ' (1/p − 1/ξ_c))``,
    ``λ_c ← λ_c − α``, ``1/ξ_c ← 1/ξ_c + δα/γ`` and ``M ← M + β (Mv)(Mv)ᵀ`` with
    ``β = δα / (1 − δαp)`` (``ItmlAlg.m``'s constants, see :class:`ITML`). M is full and
    C-contiguous; the update ``β ((Mv)_i (Mv)_j)`` keeps it exactly symmetric.

    Returns ``(Σ log(1 + β p), max δ (p − ξ_c))`` over the sweep's projections: the change of
    ``log det M`` (determinant lemma) and the largest violation met, each before its projection.
    """
    d = M.shape[0]
    Mv = np.empty(d)
    logdet, worst = 0.0, -np.inf
    for c in range(V.shape[0]):
        v = V[c]
        Mv[:] = 0.0
        for i in range(d):  # M v = Σ_i v_i M[i, :] (M symmetric): contiguous rows, vectorised
            for j in range(d):
                Mv[j] += v[i] * M[i, j]
        p = v @ Mv
        worst = max(worst, delta[c] * (p - xi[c]))
        alpha, beta = _project(c, p, delta, xi, lam, gamma_proj, inv_gamma)
        if alpha == 0.0:  # a satisfied constraint with λ_c = 0: M is unchanged
            continue
        logdet += np.log1p(beta * p)  # det(M + β u uᵀ) = det M (1 + β p) for u = M v
        for i in range(d):  # M ← M + β (Mv)(Mv)ᵀ
            for j in range(d):
                M[i, j] += beta * (Mv[i] * Mv[j])
    return logdet, worst



@njit(**JIT_OPTIONS)
def _project(c, p, delta, xi, lam, gamma_proj, inv_gamma):
    """Constraint c's projection at ``p = vᵀ M v = d_M(x_i, x_j)²`` (similar, ``delta[c] = +1``:
    p ≤ ξ; dissimilar: p ≥ ξ): updates ``ξ_c`` and ``λ_c`` in place and returns ``(α, β)``, the
    dual step and the coefficient of ``M ← M + β (Mv)(Mv)ᵀ`` (see :func:`_sweep`)."""
    if delta[c] > 0:
        alpha = min(lam[c], gamma_proj * (1.0 / p - 1.0 / xi[c]))
        beta = alpha / (1.0 - alpha * p)
        xi[c] = 1.0 / (1.0 / xi[c] + alpha * inv_gamma)
    else:
        alpha = min(lam[c], gamma_proj * (1.0 / xi[c] - 1.0 / p))
        beta = -alpha / (1.0 + alpha * p)
        xi[c] = 1.0 / (1.0 / xi[c] - alpha * inv_gamma)
    lam[c] -= alpha
    return alpha, beta


#: from this dimension on a sweep delays its rank-one updates over blocks of SWEEP_BLOCK
#: constraints (:func:`_sweep_blocked`); below it the plain loop is faster (measured in
#: ``benchmarks/bench_itml_sweep.py``)
BLOCKED_FROM_D = 64
SWEEP_BLOCK = 64


@njit(**JIT_OPTIONS)
def _sweep_blocked(M, V, delta, xi, lam, gamma_proj, inv_gamma, block):
    """:func:`_sweep` with the rank-one updates of each block of ``block`` constraints delayed.

    Within a block starting at M_s, the projections so far have made
    ``M = M_s + Σ_k β_k u_k u_kᵀ`` (``u_k = M v_k`` at the k-th update), so
    ``M v_j = M_s v_j + Σ_k β_k (u_kᵀ v_j) u_k``: the block's products ``V_B M_s`` are one GEMM,
    the corrections two matrix–vector products with the block's earlier updates, and the
    block's updates are added to M at its end by one in-place GEMM ``M += Uᵀ diag(β) U``
    (BLAS ``dgemm`` with β = 1, no temporary d×d product). That GEMM is
    symmetric only up to rounding, so M is made exactly symmetric once, at the end of the
    sweep. The same projections in the same order as :func:`_sweep`, with the sums regrouped:
    equal up to rounding; the same return value.
    """
    n_c, d = V.shape
    U = np.empty((block, d))
    W = np.empty((block, d))
    chars = np.array([ord("N"), ord("T")], np.uint8)  # dgemm's transa, transb
    ints = np.array([d, d, 0], np.int32)  # m = n = lda = ldb = ldc = d, k (set per block)
    one = np.ones(1)  # alpha = beta = 1
    logdet, worst = 0.0, -np.inf
    for s in range(0, n_c, block):
        e = min(s + block, n_c)
        P = V[s:e] @ M  # row j: (M_s v_j)ᵀ (M symmetric up to rounding within the sweep)
        n_up = 0
        for j in range(e - s):
            c = s + j
            v = V[c]
            Mv = P[j]
            if n_up:
                Mv += (W[:n_up] @ v) @ U[:n_up]  # Σ_k β_k (u_kᵀ v) u_k
            p = v @ Mv
            worst = max(worst, delta[c] * (p - xi[c]))
            alpha, beta = _project(c, p, delta, xi, lam, gamma_proj, inv_gamma)
            if alpha != 0.0:
                logdet += np.log1p(beta * p)
                U[n_up] = Mv
                W[n_up] = beta * Mv
                n_up += 1
        if n_up:  # M += Wᵀ U in place: BLAS's column-major view of M is Mᵀ, += Uᵀ W
            ints[2] = n_up
            _dgemm(chars[0:].ctypes, chars[1:].ctypes, ints[0:].ctypes, ints[1:].ctypes,
                   ints[2:].ctypes, one.ctypes, U.ctypes, ints[0:].ctypes, W.ctypes,
                   ints[0:].ctypes, one.ctypes, M.ctypes, ints[0:].ctypes)
    for i in range(d):
        for j in range(i + 1, d):
            g = 0.5 * (M[i, j] + M[j, i])
            M[i, j] = g
            M[j, i] = g
    return logdet, worst


def itml_objective(M, xi, xi0, gamma, chol=None, prior_inverse=None, prior_logdet=None,
                   logdet=None):
    """``D_ld(M, M₀) + γ Σ (ξ/ξ₀ − log(ξ/ξ₀) − 1)`` (Eq. (4) with slacks; no slack term if γ = ∞).

    ``D_ld(M, M₀) = tr(M M₀⁻¹) − log det M − log det M₀⁻¹ − d`` with ``prior_inverse`` = M₀⁻¹
    (None: M₀ = I) and ``prior_logdet`` its log-determinant (computed when not given).
    ``log det M`` is ``logdet`` when given, else from the Cholesky factor ``chol`` of M
    (computed when not given).
    """
    if logdet is None:
        R = np.linalg.cholesky(M) if chol is None else chol
        logdet = 2.0 * np.sum(np.log(np.diag(R)))
    if prior_inverse is None:
        f = np.trace(M) - logdet - M.shape[0]
    else:
        if prior_logdet is None:
            prior_logdet = _logdet(prior_inverse)
        f = np.vdot(prior_inverse, M) - logdet - prior_logdet - M.shape[0]
    if np.isfinite(gamma) and len(xi):
        r = np.asarray(xi) / np.asarray(xi0)
        f += gamma * np.sum(r - np.log(r) - 1.0)
    return float(f)


def _logdet(S: np.ndarray) -> float:
    """log det of a positive definite S, by its Cholesky factor."""
    return 2.0 * float(np.sum(np.log(np.diag(np.linalg.cholesky(S)))))


def squared_distance_bounds(X, lower_pct=5.0, upper_pct=95.0, rng=None,
                            max_pairs=_MAX_BOUND_PAIRS):
    """(u, l): the ``lower_pct`` and ``upper_pct`` percentiles of SQUARED Euclidean distances.

    Over all distinct pairs of rows of X when there are at most ``max_pairs`` of them, otherwise
    over ``max_pairs`` random pairs ``i ≠ j`` drawn with ``rng``.
    """
    n = len(X)
    if n * (n - 1) // 2 <= max_pairs:
        i, j = np.triu_indices(n, 1)
    else:
        rng = check_random_state(rng)
        i = rng.randint(0, n, max_pairs)
        j = (i + rng.randint(1, n, max_pairs)) % n
    d2 = pair_sq_distances(X, np.column_stack([i, j]))
    u, l = np.percentile(d2, [lower_pct, upper_pct])
    return float(u), float(l)


def random_label_pairs(y, rng, const_factor=40):
    """``const_factor·c(c−1)`` uniformly random pairs, similar when the labels agree.

    The authors' ``GetConstraints``: both points drawn uniformly (with replacement; pairs of a
    point with itself are later dropped as zero differences). Returns (similar, dissimilar).
    """
    y = np.asarray(y)
    c = len(np.unique(y))
    n_pairs = const_factor * c * (c - 1)
    idx = rng.randint(0, len(y), size=(n_pairs, 2))
    same = y[idx[:, 0]] == y[idx[:, 1]]
    return idx[same], idx[~same]
