"""FrobMetric: Frobenius-regularised large-margin metric learning via its dual (Shen et al. 2014).

§II of the paper. With one triplet ``r = (i, j, k)`` (``x_j`` a target of ``x_i``, ``x_k`` an
impostor), ``A_r = (x_i − x_k)(x_i − x_k)ᵀ − (x_i − x_j)(x_i − x_j)ᵀ`` and the margin
``⟨A_r, X⟩ = d_X(i, k) − d_X(i, j)``. The primal (P3) is

    min_{X ⪰ 0, ξ ≥ 0}  ½‖X‖²_F + (C₃/m) Σ_r ξ_r   s.t. ⟨A_r, X⟩ ≥ 1 − ξ_r,

i.e. ``½‖X‖²_F + (C₃/m) Σ_r max(0, 1 − ⟨A_r, X⟩)``. Its Lagrange dual, after the closed-form
minimisation over the p.s.d. multiplier Z (Eqs. (3)–(4)), is Eq. (5),

    max_{0 ≤ u ≤ C₃/m}  Σ_r u_r − ½‖(Â)₋‖²_F,   Â = −Σ_r u_r A_r,

with gradient ``g_r = 1 + ⟨(Â)₋, A_r⟩`` and the primal recovered by Eq. (6),
``X* = −(Â)₋ = (Σ_r u_r A_r)₊``. Every evaluation of (5) costs one eigendecomposition of a d×d
matrix and two GEMMs with the n training points: the triplets' pairs are reduced to the distinct
unordered pairs with signed weights (``linalg.triplet_pairs``), ``Σ_r u_r A_r = Dᵀ diag(w) D`` is
formed as ``X̄ᵀ (L_w X̄)`` with the sparse weighted pair Laplacian ``L_w`` (``linalg.PairOuterSum``:
its sparsity pattern built once per fit; n×d×d flops instead of n_pairs×d×d), and all margins
come row-wise from the points mapped by the factor ``F`` of ``X = F Fᵀ`` (positive eigenpairs):
``z = Fᵀx``, ``q_p = ‖z_a − z_b‖²``, ``⟨A_r, X⟩ = q_impostor − q_target``. No ``A_r`` is formed.
L-BFGS-B runs through :func:`.lbfgsb.minimize_box`: scipy's compiled routine with the box bounds
as arrays (one dual variable per triplet), the same iterates as ``scipy.optimize.minimize``.

With more features than training points FrobMetric solves in the span of the points
(:mod:`.span`): every ``A_r`` lies in it, so ``Â`` and ``(Â)₋`` do, the dual (5), its gradient
and the primal (6) are the same on the span coordinates, and X* is zero off the span.

§III (Eqs. (7)–(10)) generalises the construction to any Frobenius-regularised SDP,
:func:`solve_frobenius_sdp`.

References
----------
C. Shen, J. Kim, F. Liu, L. Wang and A. van den Hengel. Efficient dual approach to distance metric
learning. IEEE Trans. Neural Netw. Learn. Syst. 25(2):394–406, 2014.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
import scipy.sparse
from numba import njit
from scipy.sparse.csgraph import reverse_cuthill_mckee
from sklearn.utils._param_validation import Interval, StrOptions

from .base import VERBOSE, MetricLearner, report_progress, store_params, warn_not_converged
from .lbfgsb import minimize_box
from .linalg import JIT_OPTIONS, PairOuterSum, eigh_all, pair_sq_distances, triplet_pairs

STOPPING_RULES = ("gap", "lbfgsb", "free_gradient")
#: ``factr = 1e7`` of the L-BFGS-B Fortran code (its default, "moderate accuracy") as scipy's ftol
LBFGSB_DEFAULT_FTOL = 1e7 * np.finfo(float).eps


class FrobMetric(MetricLearner):
    """FrobMetric (Shen et al. 2014, (P3) solved through its dual Eq. (5) by L-BFGS-B).

    Parameters
    ----------
    C : float, default=1.0
        C₃ of (P3): the hinge losses are weighted by ``C₃/m`` (m triplets), the dual box is
        ``0 ≤ u ≤ C₃/m``. The paper cross-validates it (§IV-A) and prints no value; 1 is the
        default of dlib's FrobMetric implementation. The problem is not scale invariant: scaling
        the data by s acts like C₃ · s⁴.
    tol : float, default=1e-5
        ``stopping="gap"``: relative duality gap ``(P(X_u) − D(u)) / P(X_u)`` to stop at, where
        ``X_u = (Σ u_r A_r)₊`` (Eq. (6)) is primal feasible with ``ξ_r = max(0, 1 − ⟨A_r, X_u⟩)``,
        so the gap bounds the primal sub-optimality of the returned metric.
        ``stopping="lbfgsb"``: L-BFGS-B's ``pgtol`` on the projected gradient of the dual in
        margin units (see ``trace_["pg_norm"]``). ``stopping="free_gradient"``: the largest
        ``|⟨A_r, X_u⟩ − 1|`` over the dual variables that their gradient does not hold at a bound.
    max_iter : int, default=1000
        Cap on L-BFGS-B iterations (not given in the paper, which reports 20–30 iterations
        as typical).
    stopping : {"gap", "lbfgsb", "free_gradient"}, default="gap"
        ``"gap"``: the duality-gap certificate above. ``"lbfgsb"``: L-BFGS-B's own rules, projected
        gradient ≤ ``tol`` or relative decrease of the dual ≤ ``factr·ε`` with the Fortran
        default ``factr = 1e7`` — what an off-the-shelf L-BFGS-B call as in the paper does; it
        can stop with a relative gap of 1e-3 on hard instances. ``"free_gradient"``: the rule of
        dlib's implementation of the method (``vector_normalizer_frobmetric``, with its
        ``eps = 0.1`` as ``tol``): every dual variable that is not at a bound its gradient pushes
        it against has ``|⟨A_r, X_u⟩ − 1| < tol``, i.e. each triplet's margin is within ``tol``
        of 1 unless its multiplier is 0 with the margin above 1 or ``C₃/m`` with the margin
        below. Unlike L-BFGS-B's projected gradient, a variable close to its bound counts with
        its whole gradient, not with its distance to the bound.
    max_corrections : int, default=10
        L-BFGS-B memory (scipy's default; not stated in the paper).
    verbose : int, default=0
        0: silent; 1: one line at the end of the fit (iterations, objective, relative duality
        gap, converged, seconds); 2 and more: also one line per L-BFGS-B iteration (dual and
        primal objectives, relative gap, projected gradient).

    Attributes
    ----------
    metric_ : ndarray (d, d)
        ``X* = (Σ_r u_r A_r)₊`` (Eq. (6)).
    components_ : ndarray (d, d), or (``span_dim_``, d)
        L with ``metric_ = LᵀL`` (one row per span coordinate after a solve in the span).
    span_dim_ : int or None
        The dimension q of the span of the training points it solved in (module docstring),
        None when it solved in all d coordinates.
    span_basis_ : ndarray of shape (d, ``span_dim_``) or None
        The orthonormal basis V of that span (``metric_ = V M_V Vᵀ``).
    dual_coef_ : ndarray (m,)
        The dual variables u of Eq. (5), in ``[0, C₃/m]``.
    objective_ : float
        Primal objective of (P3) at ``metric_``.
    dual_objective_ : float
        Dual objective of Eq. (5) at ``dual_coef_``.
    n_iter_ : int
        L-BFGS-B iterations.
    converged_ : bool
    optimality_ : float
        Relative duality gap ``(P(X_u) − D(u)) / P(X_u)`` at the returned point
        (``optimality_measure`` ``"relative_duality_gap"``; the ``stopping="gap"`` test, a bound
        on the relative primal sub-optimality, whatever ``stopping``).
    trace_ : dict of ndarray
        Per L-BFGS-B iteration: ``objective`` (dual Eq. (5)), ``primal`` ((P3) at ``X_u``),
        ``gap`` (primal − dual, ≥ 0), ``pg_norm`` (∞-norm of the projected gradient of the dual
        with u rescaled to ``[0, 1]^m``: the largest violation of the KKT conditions
        ``u_r = 0 ⇒ ⟨A_r,X⟩ ≥ 1``, ``0 < u_r < C₃/m ⇒ ⟨A_r,X⟩ = 1``, ``u_r = C₃/m ⇒ ⟨A_r,X⟩ ≤ 1``
        in margin units, capped at 1), ``time`` (seconds since the start of ``fit``).

    Notes
    -----
    L-BFGS-B runs on ``v = u·m/C₃ ∈ [0, 1]^m`` and minimises ``−(m/C₃)·(5)``, whose gradient is
    ``⟨A_r, X_u⟩ − 1``; the iterates are those of the unscaled problem up to L-BFGS-B's
    scale-dependent first step, and the tolerances get margin units. The start is ``u = 0``.

    References
    ----------
    C. Shen, J. Kim, F. Liu, L. Wang and A. van den Hengel. Efficient dual approach to distance
    metric learning. IEEE Trans. Neural Netw. Learn. Syst. 25(2):394–406, 2014.
    """

    constraint_kind = "triplets"
    #: X* = (Σ_r u_r A_r)₊ (Eq. (6)) is a combination of the triplets' difference outer products
    span_complement = "zero"
    optimality_measure = "relative_duality_gap"
    _parameter_constraints: dict = {
        "C": [Interval(Real, 0, None, closed="neither")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "stopping": [StrOptions(set(STOPPING_RULES))],
        "max_corrections": [Interval(Integral, 1, None, closed="left")],
        "verbose": VERBOSE,
    }

    def __init__(self, C=1.0, tol=1e-5, max_iter=1000, stopping="gap", max_corrections=10,
                 verbose=0):
        store_params(self, locals())

    def _fit(self, X, y, constraints):
        start = time.perf_counter()
        triplets = np.asarray(constraints.triplets)
        if triplets.ndim != 2 or triplets.shape[1] != 3 or len(triplets) == 0:
            raise ValueError("FrobMetric needs a non-empty (m, 3) array of triplets")
        dual = _TripletDual(X, triplets, float(self.C))
        m = len(triplets)
        by_gap = self.stopping == "gap"
        own_rule = self.stopping != "lbfgsb"  # checked here, not by L-BFGS-B

        def stop(state):
            if by_gap:
                return state["gap"] <= self.tol * abs(state["primal"])
            return own_rule and dual.free_gradient() < self.tol

        report = None
        if self.verbose >= 2:
            def report(n, state):
                report_progress(self, n, dual=state["objective"], primal=state["primal"],
                                relative_gap=state["gap"] / abs(state["primal"]),
                                pg_norm=state["pg_norm"])

        res, trace = _run_lbfgsb(
            dual, np.zeros(m), (0.0, 1.0), start=start, stop=stop,
            max_iter=self.max_iter, max_corrections=self.max_corrections,
            gtol=0.0 if own_rule else self.tol, ftol=0.0 if own_rule else LBFGSB_DEFAULT_FTOL,
            report=report)
        final = dual.state(res.x)
        converged = stop(final) if own_rule else res.status == 0
        if not converged:
            hint = "raise max_iter (or tol)" + (
                "" if np.any(res.x >= 1.0) else
                "; no dual variable is at its bound C/m, as in the hard-margin regime where "
                "squared distances far above the margin of 1 make C irrelevant and the dual "
                "ill-conditioned: rescale the features (e.g. normalize: global_maxabs)")
            warn_not_converged(
                self, rule=_RULE_TEXT[self.stopping].format(tol=self.tol),
                **lbfgsb_end(res, self.max_iter),
                reached=f"relative duality gap {final['gap'] / final['primal']:.3g}", hint=hint)
        self.metric_ = dual.metric()
        self.components_ = dual.components()
        self.dual_coef_ = res.x * dual.c
        self.objective_ = float(final["primal"])
        self.dual_objective_ = float(final["objective"])
        self.n_iter_ = int(res.nit)
        self.converged_ = bool(converged)
        self.optimality_ = float(final["gap"] / abs(final["primal"]))
        self.trace_ = trace


_RULE_TEXT = {
    "gap": "relative duality gap ≤ tol = {tol:g}",
    "lbfgsb": "L-BFGS-B's projected gradient ≤ tol = {tol:g} or relative decrease ≤ factr·ε",
    "free_gradient": "|⟨A_r, X⟩ − 1| < tol = {tol:g} on every dual variable not held at a bound",
}


class _CachedDual:
    """A dual objective for L-BFGS-B: ``(value, gradient)`` cached at the last evaluated point
    (the callback asks for the point just evaluated), its ``state`` for the trace, and the
    primal matrix ``U diag(λ) Uᵀ`` that ``_evaluate`` leaves in ``_U``, ``_lam``."""

    _point = None

    def __call__(self, point):
        if self._point is None or not np.array_equal(point, self._point):
            self._evaluate(point)
        return self._f, self._grad

    def state(self, point):
        self(point)
        return self._state

    def free_gradient(self):
        """``max |∇f_r|`` at the last evaluated point over the variables of ``[0, 1]^m`` that the
        gradient does not push against their bound (0 where every variable is held)."""
        v, g = self._point, self._grad
        free = ~(((v <= 0.0) & (g > 0.0)) | ((v >= 1.0) & (g < 0.0)))
        return float(np.abs(g[free]).max()) if free.any() else 0.0

    def metric(self):
        """The primal matrix at the last evaluated point."""
        return (self._U * self._lam) @ self._U.T

    def components(self):
        """L with ``LᵀL`` the primal matrix, from the eigenpairs at hand (no second
        eigendecomposition): ``Λ^{1/2} Uᵀ``, rows by decreasing eigenvalue, zero rows for the
        rest (the layout of :func:`~.linalg.components_from_psd`)."""
        order = np.argsort(self._lam)[::-1]
        L = np.zeros((self._U.shape[0], self._U.shape[0]))
        L[:len(order)] = (self._U[:, order] * np.sqrt(self._lam[order])).T
        return L


class _TripletDual(_CachedDual):
    """The dual Eq. (5) of (P3) on ``v = u·m/C₃ ∈ [0, 1]^m``, negated and scaled for minimisation.

    ``f(v) = (m/C₃)·(½‖(Σ u_r A_r)₊‖²_F − Σ u_r)`` and ``∇f(v)_r = ⟨A_r, X_u⟩ − 1`` (= −g_r of the
    paper), with ``(Â)₋ = −(Σ u_r A_r)₊``. The last evaluation is cached (L-BFGS-B's callback asks
    for the point it has just evaluated).

    The points are relabelled in the reverse Cuthill–McKee order of the pair graph, so that the
    rows read together by the sparse product ``L_w X̄`` and by the pair distances lie close in
    memory (the sums and distances do not depend on the labels).
    """

    def __init__(self, X, triplets, C):
        pairs, self.target, self.impostor = triplet_pairs(triplets)
        n = len(X)
        graph = scipy.sparse.csr_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])),
                                        shape=(n, n))
        order = reverse_cuthill_mckee(graph, symmetric_mode=False)
        label = np.empty(n, dtype=np.int64)
        label[order] = np.arange(n)
        self.pairs = label[pairs]
        self.pair_outer_sum = PairOuterSum(X[order], self.pairs)  # w ↦ Σ_p w_p d_p d_pᵀ
        self.X = self.pair_outer_sum.X  # centred: less round-off in X̄ᵀ L X̄ and X̄ F
        self.m = len(triplets)
        self.c = C / self.m  # the box bound C₃/m: u = c·v
        self._point = None

    def pair_weights(self, v):
        """Signed weights w of the distinct pairs: ``Σ_r u_r A_r = Dᵀ diag(w) D``."""
        return _signed_pair_weights(self.impostor, self.target, v, len(self.pairs), self.c)

    def _evaluate(self, v):
        S = self.pair_outer_sum(self.pair_weights(v))  # Σ_r u_r A_r
        lam, U = eigh_all(S)
        pos = lam > 0
        self._lam, self._U = lam[pos], U[:, pos]
        Z = self.X @ (self._U * np.sqrt(self._lam))  # points mapped by F, X_u = F Fᵀ
        q = pair_sq_distances(Z, self.pairs)  # (x_a − x_b)ᵀ X_u (x_a − x_b), every distinct pair
        grad, hinge, pg = _margin_terms(q, self.impostor, self.target, v)
        sq_norm = float(self._lam @ self._lam)  # ‖X_u‖²_F = ‖(Â)₋‖²_F
        primal = 0.5 * sq_norm + self.c * hinge.sum()
        dual = self.c * v.sum() - 0.5 * sq_norm
        self._point = v.copy()
        self._f, self._grad = -dual / self.c, grad
        self._state = {"objective": dual, "primal": primal, "gap": primal - dual, "pg_norm": pg}


@njit(**JIT_OPTIONS)
def _signed_pair_weights(impostor, target, v, n_pairs, c):
    """``c·(bincount(impostor, v) − bincount(target, v))`` in one pass over the triplets, each
    count summed in triplet order as ``np.bincount`` sums it (the same floats)."""
    plus, minus = np.zeros(n_pairs), np.zeros(n_pairs)
    for r in range(v.shape[0]):
        plus[impostor[r]] += v[r]
        minus[target[r]] += v[r]
    return c * (plus - minus)


@njit(**JIT_OPTIONS)
def _margin_terms(q, impostor, target, v):
    """Per triplet, from the pair distances ``q``: the gradient ``⟨A_r, X_u⟩ − 1``, the hinge
    ``max(0, 1 − ⟨A_r, X_u⟩)`` (summed by the caller with numpy's pairwise sum), and the largest
    ``|clip(v − g, 0, 1) − v|``, the projected-gradient norm, in one pass with numpy's
    element-wise arithmetic (NaN propagates as in ``np.maximum`` and ``np.clip``)."""
    m = v.shape[0]
    grad, hinge = np.empty(m), np.empty(m)
    pg = 0.0
    for r in range(m):
        margin = q[impostor[r]] - q[target[r]]  # ⟨A_r, X_u⟩
        grad[r] = margin - 1.0
        slack = 1.0 - margin
        hinge[r] = slack if (slack > 0.0 or slack != slack) else 0.0
        step = min(max(v[r] - grad[r], 0.0), 1.0) - v[r]
        dev = abs(step)
        if dev > pg or dev != dev:
            pg = dev
    return grad, hinge, pg


#: L-BFGS-B's evaluations per line search at most (scipy's ``maxls`` default).
_MAX_LINE_SEARCH = 20


def lbfgsb_end(res, max_iter: int) -> dict:
    """``cap`` and ``stopped`` of :func:`~.base.warn_not_converged` for the L-BFGS-B result
    ``res`` of a run capped at ``max_iter`` iterations: the cap, or why L-BFGS-B stopped before
    it (a failed line search, its evaluation cap)."""
    cap = f"max_iter = {max_iter} L-BFGS-B iterations"
    return {"cap": cap, "stopped": None if res.nit >= max_iter else (
        f"L-BFGS-B stopped after {res.nit} iterations ({res.message}), below the cap {cap},")}


def _run_lbfgsb(fun, x0, bounds, *, start, stop, max_iter, max_corrections, gtol, ftol,
                report=None):
    """L-BFGS-B (:func:`.lbfgsb.minimize_box`) over ``bounds = (lower, upper)`` recording
    ``fun.state`` at every iterate.

    ``stop(state)`` ends the run (StopIteration from the callback); ``report(n, state)``, if
    given, is called at every recorded iterate (``verbose ≥ 2``). The final iterate is recorded
    too when L-BFGS-B ends without calling back for it. ``max_iter`` alone bounds the run:
    L-BFGS-B's own cap on evaluations (``maxfun``, 15000 by default) is set to what ``max_iter``
    iterations can use, one evaluation each plus at most ``maxls`` (20) in a line search. Left
    at its default, it stopped a 20000-iteration budget at 14443 iterations (MVU on 36 points,
    σ = 1e4, scipy 1.11.1, whose run converges at 14577 iterations and 15143 evaluations).
    """
    keys = [*fun.state(x0), "time"]
    trace = {k: [] for k in keys}
    last = {"x": None}

    def record(x):
        state = fun.state(x)
        for k in keys[:-1]:
            trace[k].append(state[k])
        trace["time"].append(time.perf_counter() - start)
        last["x"] = x.copy()
        if report is not None:
            report(len(trace["time"]), state)
        return state

    def callback(intermediate_result):
        if stop(record(intermediate_result.x)):
            raise StopIteration

    res = minimize_box(fun, x0, *bounds, callback=callback, maxiter=max_iter,
                       maxfun=max_iter * (1 + _MAX_LINE_SEARCH), maxls=_MAX_LINE_SEARCH,
                       maxcor=max_corrections, gtol=gtol, ftol=ftol)
    if last["x"] is None or not np.array_equal(res.x, last["x"]):
        record(res.x)
    return res, {k: np.asarray(v, dtype=float) for k, v in trace.items()}


# --------------------------------------------------------------------------------------------
# §III: general Frobenius-norm regularised SDP


@dataclass
class FrobeniusSDPResult:
    """Solution of :func:`solve_frobenius_sdp`.

    Attributes
    ----------
    X : ndarray (d, d)
        ``X* = −σ (C + Â)₋`` (after Eq. (10)), p.s.d. by construction.
    u : ndarray (m,)
        Dual variables of the constraints (≥ 0 for inequalities, free for equalities).
    primal_objective : float
        ``⟨C, X⟩ + ‖X‖²_F / (2σ)`` at ``X``.
    dual_objective : float
        Lagrange dual value ``−(σ/2)‖(C + Â)₋‖²_F − bᵀu`` (= −Eq. (10)), a lower bound on the
        optimum.
    infeasibility : float
        ``max(max_i (⟨A_i, X⟩ − b_i)₊ over inequalities, max_i |⟨A_i, X⟩ − b_i| over equalities)``.
    n_iter : int
    converged : bool
        The projected gradient of Eq. (10) is at most ``tol``, so ``infeasibility ≤ tol``
        (L-BFGS-B's own exit status is in ``message``).
    message : str
    trace : dict of ndarray
        Per iteration: ``objective`` (dual value), ``primal``, ``infeasibility``, ``pg_norm``
        (∞-norm of the projected gradient of Eq. (10)), ``time``.
    """

    X: np.ndarray
    u: np.ndarray
    primal_objective: float
    dual_objective: float
    infeasibility: float
    n_iter: int
    converged: bool
    message: str
    trace: dict = field(repr=False)


def solve_frobenius_sdp(C, A, b, sigma=1.0, *, equality=None, tol=1e-6, ftol=0.0,
                        max_iter=1000, max_corrections=10) -> FrobeniusSDPResult:
    """Frobenius-norm regularised SDP through its dual (Shen et al. 2014, §III, Eqs. (7)–(10)).

    Solves ::

        min_X  ⟨C, X⟩ + ‖X‖²_F / (2σ)   s.t.  X ⪰ 0,  ⟨A_i, X⟩ ≤ b_i  (= b_i where ``equality[i]``)

    by minimising the dual Eq. (10), ``(σ/2)‖(C + Â)₋‖²_F + bᵀu`` with ``Â = Σ_i u_i A_i``, over
    ``u ≥ 0`` (free for equality constraints: their multipliers have no sign) with L-BFGS-B,
    gradient ``σ⟨(C + Â)₋, A_i⟩ + b_i = b_i − ⟨A_i, X_u⟩``, and recovering ``X* = −σ(C + Â*)₋``
    (Eq. (8) with Z from Eq. (9)). One eigendecomposition of a d×d matrix per evaluation.

    The paper states only inequalities; equalities (e.g. MVU's centring ``1ᵀX1 = 0``, or MVU's
    distance constraints in their original equality form) are the same derivation with free
    multipliers. For MVU, ``max Tr X − ‖X‖²_F/(2σ)`` is ``C = −I``.

    Parameters
    ----------
    C : array-like or sparse matrix (d, d)
    A : ndarray (m, d, d), sequence of m (d, d) arrays or sparse matrices, or a sparse / dense
        matrix (m, d²) whose row i is ``A_i`` flattened (row-major). Sparse input stays sparse
        (MVU's distance constraints ``(e_a − e_b)(e_a − e_b)ᵀ`` have 4 non-zeros each): the
        evaluation then costs two sparse mat-vecs besides the eigendecomposition. Only the
        symmetric parts of ``C`` and ``A_i`` matter (X is symmetric).
    b : array-like (m,)
    sigma : float, default=1.0
        σ > 0; the paper's MVU experiments use 10² to 10¹⁰ (§IV-B).
    equality : array-like of bool (m,), optional
        Which constraints are equalities (default: none, the paper's form).
    tol : float, default=1e-6
        The feasibility certificate, L-BFGS-B's ``pgtol``: ∞-norm of the projected gradient of
        Eq. (10), in constraint residual units. The gradient is ``b_i − ⟨A_i, X_u⟩``, so the
        projected gradient bounds the violation of every constraint by ``X_u``: ``converged``
        means ``infeasibility ≤ tol``, and nothing else does.
    ftol : float, default=0.0
        L-BFGS-B's relative-decrease test on Eq. (10). An exit through it certifies nothing:
        on ill-conditioned duals (large σ) it fires while ``X_u`` still stretches constraints by
        many times ``tol``, so the default leaves the decision to ``tol``. Below ``tol`` ≈
        ``sqrt(2 L ε |f|)`` (L the dual's curvature, ε the machine epsilon) the line search
        cannot see a decrease of Eq. (10) any more and stops; the result then says
        ``converged=False`` with the infeasibility it reached.
    max_iter : int, default=1000
    max_corrections : int, default=10

    Returns
    -------
    FrobeniusSDPResult
    """
    start = time.perf_counter()
    if not sigma > 0:
        raise ValueError(f"sigma must be positive, got {sigma!r}")
    C = C.toarray() if scipy.sparse.issparse(C) else np.asarray(C, dtype=float)
    d = C.shape[0]
    if C.shape != (d, d):
        raise ValueError(f"C must be square, got shape {C.shape}")
    A = _stack_constraints(A, d)
    b = np.asarray(b, dtype=float).reshape(-1)
    if A.shape[0] != len(b):
        raise ValueError(f"{A.shape[0]} constraint matrices but {len(b)} right-hand sides")
    eq = np.zeros(len(b), bool) if equality is None else np.asarray(equality, bool).reshape(-1)
    if len(eq) != len(b):
        raise ValueError(f"equality has {len(eq)} entries for {len(b)} constraints")
    dual = _SDPDual((C + C.T) / 2, A, b, float(sigma), eq)
    lower = np.where(eq, -np.inf, 0.0)
    res, trace = _run_lbfgsb(
        dual, np.zeros(len(b)), (lower, np.inf), start=start, stop=lambda state: False,
        max_iter=max_iter, max_corrections=max_corrections, gtol=tol, ftol=ftol)
    final = dual.state(res.x)
    converged = final["pg_norm"] <= tol  # the certificate, whatever stopped L-BFGS-B
    if not converged:
        warn_not_converged(
            "solve_frobenius_sdp", rule=f"projected gradient of Eq. (10) ≤ tol = {tol:g}",
            **lbfgsb_end(res, max_iter), hint="raise max_iter (or tol)",
            reached=(f"projected gradient {final['pg_norm']:.3g}, constraints violated by up "
                     f"to {final['infeasibility']:.3g}"))
    return FrobeniusSDPResult(
        X=dual.metric(), u=res.x.copy(), primal_objective=float(final["primal"]),
        dual_objective=float(final["objective"]), infeasibility=float(final["infeasibility"]),
        n_iter=int(res.nit), converged=bool(converged), message=str(res.message), trace=trace)


def _stack_constraints(A, d):
    """The m constraint matrices as one (m, d²) matrix (CSR when any input is sparse)."""
    if scipy.sparse.issparse(A):
        out = scipy.sparse.csr_matrix(A)
    elif isinstance(A, np.ndarray) and A.ndim in (2, 3):
        out = A.reshape(len(A), -1).astype(float)
    else:
        mats = list(A)
        if any(scipy.sparse.issparse(Ai) for Ai in mats):
            out = scipy.sparse.vstack(
                [scipy.sparse.csr_matrix(Ai).reshape(1, d * d) for Ai in mats], format="csr")
        else:
            out = np.asarray(mats, dtype=float).reshape(len(mats), -1)
    if out.shape[1] != d * d:
        raise ValueError(f"constraint matrices must be {d}×{d} (rows of length {d * d}), "
                         f"got rows of length {out.shape[1]}")
    return out


class _SDPDual(_CachedDual):
    """Eq. (10) and its gradient; ``X_u = −σ(C + Â)₋``, cached at the last evaluated point."""

    def __init__(self, C, A, b, sigma, eq):
        self.C, self.A, self.b, self.sigma, self.eq = C, A, b, sigma, eq
        self.lower = np.where(eq, -np.inf, 0.0)
        self._point = None

    def _evaluate(self, u):
        d = self.C.shape[0]
        A_hat = np.asarray(self.A.T @ u).reshape(d, d)
        lam, U = eigh_all(self.C + (A_hat + A_hat.T) / 2)
        neg = lam < 0
        self._lam, self._U = -self.sigma * lam[neg], U[:, neg]  # X_u = U diag(σ|λ₋|) Uᵀ
        X = self.metric()
        residual = self.b - np.asarray(self.A @ X.reshape(-1)).reshape(-1)  # b_i − ⟨A_i, X_u⟩
        sq_norm_neg = float(lam[neg] @ lam[neg])  # ‖(C + Â)₋‖²_F
        f = 0.5 * self.sigma * sq_norm_neg + float(self.b @ u)
        violation = np.where(self.eq, np.abs(residual), np.maximum(0.0, -residual))
        primal = float(np.sum(self.C * X)) + float(self._lam @ self._lam) / (2 * self.sigma)
        pg = np.abs(np.maximum(u - residual, self.lower) - u)
        self._point = u.copy()
        self._f, self._grad = f, residual
        self._state = {"objective": -f, "primal": primal,
                       "infeasibility": float(violation.max(initial=0.0)),
                       "pg_norm": float(pg.max(initial=0.0))}

