"""SCML: sparse compositional metric learning, global variant (Shi, Bellet & Sha 2014).

The metric is a sparse non-negative combination of K rank-one basis elements,
``M = Σ_k w_k b_k b_kᵀ = Bᵀ diag(w) B`` with ``w ≥ 0``, so that ``d_w(x, z) = Σ_k w_k (b_kᵀ(x − z))²``
is linear in w and M is positive semidefinite by construction. The global formulation of
the paper learns w from triplets ``(i, j, k)`` (x_j should be closer to x_i than x_k is):

    min_{w ≥ 0}  F(w) = (1/T) Σ_τ [1 + d_w(x_i, x_j) − d_w(x_i, x_k)]_+  +  β ‖w‖₁,

a convex problem (a linear programme) in w. With the triplet's feature vector
``c_τ = a_ik − a_ij``, ``a_ij = (B(x_i − x_j))²`` (element-wise), the hinge is ``[1 − c_τᵀ w]_+``.
With unit-norm basis elements (the built-in bases), ``‖w‖₁ = tr(M)``.

**Optimisation.** Stochastic regularised dual averaging (RDA, Xiao 2010), the paper's method, with
the proximal function ``½‖w‖²`` restricted to ``w ≥ 0`` and the weights ``γ√t``: at step t a
mini-batch gives a subgradient ``g_t = −mean_{τ ∈ batch, hinge active} c_τ`` of the loss, the
running average ``ḡ_t`` of those subgradients is kept and

    w_{t+1} = argmin_{w ≥ 0} ⟨ḡ_t, w⟩ + β 1ᵀw + (γ / (2√t)) ‖w‖²  =  (√t / γ) max(0, −ḡ_t − β)

(w_1 = 0). The speed depends on γ by orders of magnitude and the paper gives no rule, so
``gamma="auto"`` tries several: candidates spaced by factors of 10 around γ₀, the γ whose first
step gives the triplets a mean margin ``c_τᵀ w`` of 1 (γ₀ has the units of γ: it scales as the
fourth power of the data), each run for the first ``check_every`` steps on the same order of the
triplets, and the one with the lowest F goes on.

**Certificate.** The dual of the problem is ``max Σ_τ α_τ`` over ``0 ≤ α_τ ≤ 1/T`` with
``Σ_τ α_τ c_τ ≤ β`` (component-wise). Every ``check_every`` steps F is evaluated on every
triplet, a dual point is recovered from the iterate's margins by complementary slackness
(:meth:`TripletProblem.dual_bound`), the best iterate and the best dual value so far are kept,
and the fit stops when the gap ``F(w_best) − best dual value``, relative to ``F(0)`` (= 1: every
hinge is 1 at w = 0), is at most ``tol``: a certificate, as any dual-feasible value bounds the
optimum from below. The gap is taken relative to the starting value, not to ``F(w_best)``: on
nearly separable data the optimum is close to 0 (wine: 7·10⁻⁴), where a gap relative to it asks
for many more digits than the 3-NN decisions depend on.

**Basis** (``basis="lda"``; the paper's locally discriminative elements from Fisher
discriminant analysis around k-means centres, as we read it): the ``n_locales`` k-means centres
of X, and at each centre the ``n_neighbors`` nearest training points of every class; the local
within-class and between-class scatters S_w, S_b of these points give the ``min(c − 1, d)``
leading generalised eigenvectors of ``S_b v = μ (S_w + εI) v`` (the local LDA directions;
ε = 10⁻³ tr(S_w + S_b)/d), each scaled to unit norm. ``basis="random"``: ``n_basis`` Gaussian
directions of unit norm. An array of shape (K, d) is used as given.

The local variant of the paper (a weight vector that depends on x) is not implemented.

The paper's section and equation numbers are not cited: its text was not at hand to check them
against, so the equations are written out in full instead.
"""

from __future__ import annotations

import time
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog
from sklearn.cluster import KMeans
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from .base import (VERBOSE, MetricLearner, rate_hint, report_progress, store_params,
                   warn_not_converged)
from .linalg import components_from_psd, pair_sq_distances, triplet_pairs

#: "auto" γ: the candidates, in units of the γ whose first step gives a mean margin of 1
AUTO_GAMMA_FACTORS = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)
#: the restricted dual programme of a check has at most this many constraint entries
MAX_LP_ENTRIES = 2_000_000


#: the constraints of the basis options, shared by the global and the local SCML
BASIS_CONSTRAINTS = {
    "basis": [StrOptions({"lda", "random"}), "array-like"],
    "n_locales": [Interval(Integral, 1, None, closed="left")],
    "n_neighbors": [Interval(Integral, 1, None, closed="left")],
    "n_basis": [Interval(Integral, 1, None, closed="left")],
}


class SCML(MetricLearner):
    """Sparse compositional metric learning, global variant (Shi, Bellet & Sha 2014).

    Parameters
    ----------
    beta : float, default=1e-4
        β > 0, the weight of ``‖w‖₁`` (= tr M for unit-norm basis elements).
    basis : {"lda", "random"} or array-like of shape (n_basis, n_features), default="lda"
        The rank-one elements b_k (rows). ``"lda"`` (local Fisher discriminant directions, see
        the module notes) needs the labels y; ``"random"``: ``n_basis`` random unit directions.
    n_locales : int, default=20
        Number of k-means centres of the ``"lda"`` basis (at most the number of distinct rows
        of X); each gives ``min(c − 1, d)`` elements for c classes.
    n_neighbors : int, default=10
        Points of each class around a centre for its local discriminant analysis (``"lda"``).
    n_basis : int, default=100
        Number of elements of the ``"random"`` basis.
    batch_size : int, default=128
        Triplets per stochastic step (at most their number); the triplets are visited in a new
        random order every epoch.
    gamma : float or "auto", default="auto"
        γ > 0 of RDA's weights γ√t. ``"auto"``: the best after ``check_every`` steps of
        ``γ₀ · AUTO_GAMMA_FACTORS`` (10⁻⁴ … 10; module notes; our rule, the paper gives none).
        The best after 10⁴ steps on z-scored wine, iris, breast cancer and digits is 10⁻⁴ to
        3·10⁻³ γ₀, on tiny random problems 0.1 to 10 γ₀.
    max_iter : int, default=10_000
        Cap on the stochastic steps.
    tol : float, default=1e-2
        Stop when the duality gap at a check, relative to ``F(0) = 1``, is at most ``tol``
        (stochastic RDA closes it slowly, at the O(1/√t) rate of its objective).
    check_every : int, default=500
        Steps between the full evaluations of F and of the dual bound.
    random_state : int, RandomState instance or None, default=0
        Seeds the k-means centres, the random basis and the order of the triplets.
    verbose : int, default=0
        0: silent; 1: one line at the end of the fit (steps, objective, relative gap,
        converged, seconds); 2 and more: also one line per check (every ``check_every`` steps).

    Attributes
    ----------
    metric_ : ndarray (d, d)
        ``M = Bᵀ diag(w) B`` (positive semidefinite, of rank at most the nonzeros of w).
    components_ : ndarray (d, d)
        L with M = LᵀL.
    basis_ : ndarray (n_basis, d)
        The basis B (rows b_k).
    weights_ : ndarray (n_basis,)
        w ≥ 0, sparse; all zero when no checked iterate did better than w = 0 (F = 1), as when
        β ≥ max_k (1/T) Σ_τ c_τk makes w = 0 optimal.
    gamma_ : float
        The γ used.
    objective_ : float
        F(w) at the returned w, the best of the checks.
    dual_bound_ : float
        The best dual value found: F* ≥ ``dual_bound_``.
    n_iter_ : int
        Stochastic steps of the run returned (with ``"auto"``, the other candidates' first
        ``check_every`` steps come on top).
    converged_ : bool
    optimality_ : float
        ``(objective_ − dual_bound_) / F(0)`` with ``F(0) = 1`` (``optimality_measure``
        ``"relative_duality_gap"``, relative to the start): F(w) − F* is at most
        ``optimality_``.
    trace_ : dict of ndarray
        At every check: ``iteration``, ``objective`` (F at that step's w), ``dual_bound``,
        ``gap`` (of the best iterate and bound so far, relative to F(0)), ``n_nonzero`` (of w) and
        ``time`` (seconds since the start of ``fit``).

    References
    ----------
    Y. Shi, A. Bellet and F. Sha. Sparse compositional metric learning. AAAI 2014,
    pp. 2078–2084.
    L. Xiao. Dual averaging methods for regularized stochastic learning and online
    optimization. JMLR 11:2543–2596, 2010.
    """

    constraint_kind = "triplets"
    optimality_measure = "relative_duality_gap"

    _parameter_constraints: dict = {
        "beta": [Interval(Real, 0, None, closed="neither")],
        **BASIS_CONSTRAINTS,
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "gamma": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "check_every": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": VERBOSE,
    }

    def __init__(self, beta=1e-4, basis="lda", n_locales=20, n_neighbors=10, n_basis=100,
                 batch_size=128, gamma="auto", max_iter=10_000, tol=1e-2, check_every=500,
                 random_state=0, verbose=0):
        store_params(self, locals())

    def _constraints_needed(self):
        """Nothing here: :meth:`_fit` says in one line what is missing."""
        return ()

    def _fit(self, X, y, constraints):
        start = time.perf_counter()
        T = np.asarray(constraints.triplets, dtype=np.intp).reshape(-1, 3)
        if not len(T):
            pairs = len(constraints.similar) or len(constraints.dissimilar)
            got = "only similar/dissimilar pairs" if pairs else "no constraints"
            raise ValueError(f"SCML needs triplets; got {got}")
        rng = check_random_state(self.random_state)
        B = self._basis(X, y, rng)
        problem = TripletProblem(X @ B.T, T, float(self.beta))
        w, trace, converged, gamma = rda(problem, self._gammas(problem), self.batch_size,
                                         self.max_iter, self.tol, self.check_every, rng, start,
                                         self if self.verbose >= 2 else None)
        if not converged:
            warn_not_converged(
                self, rule=f"duality gap relative to F(0) ≤ tol = {self.tol:g}",
                cap=f"max_iter = {self.max_iter} steps",
                reached=f"relative duality gap {trace['gap'][-1]:.3g}",
                hint=rate_hint(int(trace["iteration"][-1]), trace["gap"][-1], self.tol, power=0.5,
                               rate="stochastic RDA O(1/√t)"))
        M = (B.T * w) @ B
        self.basis_ = B
        self.weights_ = w
        self.metric_ = (M + M.T) / 2
        self.components_ = components_from_psd(self.metric_)
        self.gamma_ = gamma
        self.objective_ = float(trace["objective_best"][-1])
        self.dual_bound_ = float(trace["dual_best"][-1])
        self.n_iter_ = int(trace["iteration"][-1])
        self.converged_ = converged
        self.optimality_ = float(trace["gap"][-1])
        keys = ("iteration", "objective", "dual_bound", "gap", "n_nonzero", "time")
        self.trace_ = {k: np.asarray(trace[k], dtype=float) for k in keys}
        self.trace_["iteration"] = self.trace_["iteration"].astype(int)

    def _basis(self, X, y, rng) -> np.ndarray:
        """B, rows b_k, from ``basis`` (:func:`build_basis`)."""
        return build_basis(self, X, y, rng)

    def _gammas(self, problem) -> list[float]:
        """The candidate γ: the given one, or ``"auto"``'s ``γ₀ · AUTO_GAMMA_FACTORS`` with γ₀
        the γ that takes the first step to a w with a mean margin of 1 (γ₀ = 1 when w = 0 is
        optimal)."""
        if self.gamma != "auto":
            return [float(self.gamma)]
        mean = problem.mean_feature()
        scale = float(mean @ np.maximum(mean - problem.beta, 0.0))  # mean margin of that first w
        return [(scale if scale > 0 else 1.0) * f for f in AUTO_GAMMA_FACTORS]


def build_basis(estimator, X, y, rng) -> np.ndarray:
    """The basis B (rows b_k) of a global or local SCML from its ``basis``, ``n_basis``,
    ``n_locales`` and ``n_neighbors``; a one-line ``ValueError`` for an unusable one."""
    d = X.shape[1]
    if isinstance(estimator.basis, str) and estimator.basis == "random":
        B = rng.standard_normal((estimator.n_basis, d))
        return B / np.linalg.norm(B, axis=1, keepdims=True)
    if isinstance(estimator.basis, str):
        if y is None:
            raise ValueError(f"{type(estimator).__name__}(basis='lda') needs the labels y; with "
                             "constraints alone use basis='random' or pass a basis array")
        return lda_basis(X, y, estimator.n_locales, estimator.n_neighbors, rng)
    B = np.asarray(estimator.basis, dtype=float)
    if B.ndim != 2 or B.shape[1] != d or not len(B) or not np.all(np.isfinite(B)):
        raise ValueError(f"basis: expected a finite array of shape (n_basis, {d}), got "
                         f"shape {B.shape}")
    return B


def lda_basis(X, y, n_locales, n_neighbors, rng) -> np.ndarray:
    """Local Fisher discriminant directions around k-means centres (module notes), unit norm.

    All locales at once: the neighbours by one query per class, the scatters by batched
    products, and the generalised eigenproblems by batched Cholesky and ``eigh``.
    """
    classes = np.unique(y)
    d = X.shape[1]
    n_centres = min(n_locales, len(np.unique(X, axis=0)))
    centres = KMeans(n_clusters=n_centres, n_init=1, random_state=rng).fit(X).cluster_centers_
    means, counts, S_w = [], [], np.zeros((n_centres, d, d))
    for c in classes:  # one neighbour query per class, every locale at once
        Xc = X[y == c]
        k = min(n_neighbors, len(Xc))
        idx = NearestNeighbors(n_neighbors=k).fit(Xc).kneighbors(centres, return_distance=False)
        local = Xc[idx]                                  # (locales, k, d)
        mean = local.mean(axis=1)
        D = local - mean[:, None, :]
        S_w += np.einsum("lki,lkj->lij", D, D)
        means.append(mean)
        counts.append(k)
    means, counts = np.stack(means, axis=1), np.asarray(counts, dtype=float)  # (locales, c, d)
    centre = np.einsum("c,lcd->ld", counts, means) / counts.sum()
    Dm = (means - centre[:, None, :]) * np.sqrt(counts)[None, :, None]
    S_b = np.einsum("lci,lcj->lij", Dm, Dm)
    eps = 1e-3 * np.trace(S_w + S_b, axis1=1, axis2=2) / d + np.finfo(float).tiny
    R = np.linalg.cholesky(S_w + eps[:, None, None] * np.eye(d))
    C = np.linalg.solve(R, np.swapaxes(np.linalg.solve(R, S_b), 1, 2))  # R⁻¹ S_b R⁻ᵀ
    _, U = np.linalg.eigh((C + np.swapaxes(C, 1, 2)) / 2)
    r = max(1, min(len(classes) - 1, d))
    V = np.linalg.solve(np.swapaxes(R, 1, 2), U[:, :, ::-1][:, :, :r])  # v = R⁻ᵀ u, leading r
    B = np.swapaxes(V, 1, 2).reshape(-1, d)
    return B / np.linalg.norm(B, axis=1, keepdims=True)


class TripletProblem:
    """F(w) and its pieces on fixed triplets, from the points' basis coordinates ``Z = X Bᵀ``.

    A pair's feature vector is ``a_p = (z_a − z_b)²``; a triplet's is ``c_τ = a_ik − a_ij``.
    Sums ``Σ_τ α_τ c_τ`` go over the distinct pairs (:func:`~.linalg.triplet_pairs`) with the
    signed weights ``ρ_p``, as ``diag(Zᵀ L_ρ Z)`` with the sparse Laplacian ``L_ρ`` of the pair
    graph: no T×K array is formed.
    """

    def __init__(self, Z, triplets, beta):
        self.Z, self.T, self.beta = Z, triplets, beta
        self.pairs, self.target, self.impostor = triplet_pairs(triplets)
        self.n = len(triplets)

    def margins(self, w) -> np.ndarray:
        """``c_τᵀ w`` of every triplet, from the distances of the distinct pairs."""
        nonzero = np.flatnonzero(w)
        q = pair_sq_distances(self.Z[:, nonzero] * np.sqrt(w[nonzero]), self.pairs)
        return q[self.impostor] - q[self.target]

    def objective(self, w, margins=None) -> float:
        """F(w) = mean hinge + β 1ᵀw."""
        m = self.margins(w) if margins is None else margins
        return float(np.maximum(1.0 - m, 0.0).mean() + self.beta * w.sum())

    def feature_sum(self, alpha) -> np.ndarray:
        """``Σ_τ α_τ c_τ`` as ``diag(Zᵀ L_ρ Z)``, ρ = α summed onto the impostor pairs (+) and
        the target pairs (−)."""
        P = len(self.pairs)
        rho = np.bincount(self.impostor, alpha, P) - np.bincount(self.target, alpha, P)
        a, b = self.pairs[:, 0], self.pairs[:, 1]
        n = len(self.Z)
        L = sp.coo_matrix((np.concatenate([rho, rho, -rho, -rho]),
                           (np.concatenate([a, b, a, b]), np.concatenate([a, b, b, a]))),
                          shape=(n, n)).tocsr()
        return np.einsum("ik,ik->k", self.Z, L @ self.Z)

    def mean_feature(self) -> np.ndarray:
        """``(1/T) Σ_τ c_τ``, the negated loss gradient at w = 0 (where every hinge is active)."""
        return self.feature_sum(np.full(self.n, 1.0 / self.n))

    def features(self, rows) -> np.ndarray:
        """``c_τ`` of the triplets ``rows``, as a |rows|×K array."""
        i, j, k = self.T[rows].T
        c = (self.Z[i] - self.Z[k]) ** 2
        c -= (self.Z[i] - self.Z[j]) ** 2
        return c

    def batch_gradient(self, w, rows) -> np.ndarray:
        """The loss subgradient on the triplets ``rows``: ``−(1/|rows|) Σ_{τ active} c_τ``
        over those with an active hinge (margin ``c_τᵀ w < 1``)."""
        c = self.features(rows)
        return -c[(c @ w) < 1.0].sum(axis=0) / len(rows)

    def dual_value(self, alpha) -> float:
        """Σα of α clipped into [0, 1/T] and scaled into ``Σ_τ α_τ c_τ ≤ β``: a lower bound
        on min F (weak duality)."""
        alpha = np.clip(alpha, 0.0, 1.0 / self.n)
        total = float(alpha.sum())
        if total == 0.0:
            return 0.0
        worst = float(self.feature_sum(alpha).max())
        return total / max(1.0, worst / self.beta)

    def dual_bound(self, margins) -> float:
        """A dual point recovered from the margins of a primal iterate, and its value.

        Complementary slackness fixes ``α_τ = 1/T`` where the hinge is active (margin < 1) and
        ``α_τ = 0`` where it is not, except at the kink (margin 1), where α is free. So the
        triplets of margin nearest 1 are left free (2K of them, then 8K and 32K while the
        restricted programme is infeasible, at most T and ``MAX_LP_ENTRIES / K``), the others
        are fixed by that rule, and the free ones solve the dual restricted to them, a linear
        programme with K constraints (HiGHS). Its solution, or the fixed rule alone, goes
        through :meth:`dual_value`, which makes it exactly feasible, so the value is a lower
        bound on min F whatever the iterate.
        """
        K = self.Z.shape[1]
        alpha = np.where(margins < 1.0, 1.0 / self.n, 0.0)
        order = np.argsort(np.abs(margins - 1.0), kind="stable")
        for size in (2 * K, 8 * K, 32 * K):
            n_free = min(self.n, size, max(1, MAX_LP_ENTRIES // K))
            free = order[:n_free]
            fixed = alpha.copy()
            fixed[free] = 0.0
            res = linprog(-np.ones(n_free), A_ub=self.features(free).T,
                          b_ub=self.beta - self.feature_sum(fixed), bounds=(0.0, 1.0 / self.n),
                          method="highs")
            if res.status == 0:
                fixed[free] = res.x
                return self.dual_value(fixed)
            if n_free < size:  # no larger programme to try
                break
        return self.dual_value(alpha)


class RDARun:
    """The state of one stochastic RDA run on a :class:`TripletProblem` (module notes): the step
    t, w, the average ``ḡ_t`` of the loss subgradients and the order of the triplets."""

    def __init__(self, problem: TripletProblem, gamma: float, batch_size: int, rng):
        self.problem, self.gamma, self.rng = problem, gamma, rng
        self.m = min(batch_size, problem.n)
        self.t, self.w, self.g_avg = 0, np.zeros(problem.Z.shape[1]), np.zeros(problem.Z.shape[1])
        self.order, self.pos = rng.permutation(problem.n), 0

    def advance(self, steps: int) -> None:
        """``steps`` RDA steps: ``w ← (√t/γ) max(0, −ḡ_t − β)`` after each mini-batch."""
        problem, m = self.problem, self.m
        for _ in range(steps):
            if self.pos + m > problem.n:
                self.order, self.pos = self.rng.permutation(problem.n), 0
            self.t += 1
            g = problem.batch_gradient(self.w, self.order[self.pos:self.pos + m])
            self.g_avg += (g - self.g_avg) / self.t
            self.pos += m
            self.w = np.sqrt(self.t) / self.gamma * np.maximum(-self.g_avg - problem.beta, 0.0)


def rda(problem: TripletProblem, gammas, batch_size, max_iter, tol, check_every, rng, start,
        reporter=None):
    """Stochastic RDA on F with the duality-gap checks every ``check_every`` steps; returns (best
    w, trace, converged, γ used); a progress line per check for ``reporter`` (``verbose ≥ 2``).

    With several candidate ``gammas``, each runs the first ``check_every`` steps (on the same
    order of the triplets) and the run of lowest F there goes on alone.
    """
    seed = rng.randint(np.iinfo(np.int32).max)
    runs = [RDARun(problem, g, batch_size, np.random.RandomState(seed)) for g in gammas]
    first = min(check_every, max_iter)
    for candidate in runs:
        candidate.advance(first)
    run = min(runs, key=lambda r: problem.objective(r.w))
    start_value = problem.objective(np.zeros_like(run.w))
    best = {"w": np.zeros_like(run.w), "F": start_value, "F0": start_value, "dual": 0.0}
    trace = {k: [] for k in ("iteration", "objective", "dual_bound", "gap", "n_nonzero", "time",
                             "objective_best", "dual_best")}
    while True:
        gap = _check(problem, run.w, best, trace, run.t, start)
        if reporter is not None:
            report_progress(reporter, run.t, objective=trace["objective"][-1], relative_gap=gap,
                            n_nonzero=trace["n_nonzero"][-1])
        if gap <= tol:
            return best["w"], trace, True, run.gamma
        if run.t >= max_iter:
            return best["w"], trace, False, run.gamma
        run.advance(min(check_every, max_iter - run.t))


def _check(problem, w, best, trace, t, start) -> float:
    """Full evaluation at step t: F(w) and the dual bound recovered from w's margins, the best
    of each so far into ``best``, a trace record; returns the gap of the bests relative to the
    starting value F(0)."""
    margins = problem.margins(w)
    F = problem.objective(w, margins)
    dual = problem.dual_bound(margins)
    if F < best["F"]:
        best.update(w=w.copy(), F=F)
    best["dual"] = max(best["dual"], dual)
    gap = (best["F"] - best["dual"]) / best["F0"] if best["F0"] > 0 else 0.0
    for key, val in (("iteration", t), ("objective", F), ("dual_bound", dual), ("gap", gap),
                     ("n_nonzero", np.count_nonzero(w)), ("time", time.perf_counter() - start),
                     ("objective_best", best["F"]), ("dual_best", best["dual"])):
        trace[key].append(val)
    return gap
