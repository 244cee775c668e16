"""Low-rank DML by SGD with incremental SVD (Zhang & Zhang 2017), and what its comparators share.

All solvers of the paper's experiments minimise (after Qian et al. 2015a)

    F(W) = (1/T) Σ_{(i,j,k)} max(1 + ‖x_i − x_j‖²_W − ‖x_i − x_k‖²_W, 0) + λ tr(W)
    s.t. W ∈ S₊, ‖W‖_F ≤ τ                                  (τ = 1 in the paper)

i.e. problem (2) (nuclear norm = trace on S₊) with the Frobenius ball of update (5); the spectral
ball of update (4) is the option ``constraint="spectral"``. T triplets ``(i, j, k)``: ``x_j`` of
``x_i``'s class, ``x_k`` of another class.

:class:`SGDIncSVD` (Algorithm 1): ``W_1 = 0``; every iteration samples ``batch_size`` triplets,
writes the stochastic gradient of the active ones as the signed low-rank factor ``g = A S Aᵀ``
(A = their difference rows, S = ±1/batch), obtains the eigendecomposition of ``W_t − η_t g`` by
the incremental update (:mod:`.incremental_eigen`), shrinks the eigenvalues by ``η_t λ`` and
clips them at 0 (Theorem 1, the proximal step of ``λ tr``), then scales onto the Frobenius ball
(Theorem 3, update (5)) or clips at τ (Theorem 2, update (4)). W stays ``U diag(s) Uᵀ``:
O(d(r + c)² + (r + c)³) time and O(d(r + c)) memory per iteration, no d×d array anywhere
(``metric_`` is computed on access).

The objective, the projections of the eigenvalues, the triplets' evaluation and the base class
here are shared with the comparators of Fig. 2 on dense d×d arrays (:mod:`.lowrank_dense`).

References
----------
J. Zhang and L. Zhang. Efficient stochastic optimization for low-rank distance metric learning.
AAAI 2017. M. Brand. Fast low-rank modifications of the thin singular value decomposition. Linear
Algebra Appl. 415(1):20–30, 2006. Q. Qian, R. Jin, J. Yi, L. Zhang and S. Zhu. Efficient distance
metric learning by adaptive sampling and mini-batch SGD. MLJ 99(3), 2015.
"""

from __future__ import annotations

import time
from numbers import Integral, Real

import numpy as np
import scipy.sparse
from sklearn.utils._param_validation import Interval, StrOptions

from .base import SEED, VERBOSE, MetricLearner, report_progress, store_params
from .incremental_eigen import eigen_update
from .linalg import pair_quadratic_forms, pair_sq_distances

CONSTRAINTS = ("frobenius", "spectral")


# --------------------------------------------------------------------------------------------
# shared helpers: objective, projections, the triplets' evaluation
# --------------------------------------------------------------------------------------------

def hinge_objective(q_target: np.ndarray, q_impostor: np.ndarray, trace_w: float,
                    lam: float) -> float:
    """``(1/T) Σ max(1 + q_ij − q_ik, 0) + λ tr(W)`` from the squared distances of the triplets."""
    return float(np.maximum(1.0 + q_target - q_impostor, 0.0).mean() + lam * trace_w)


def project_eigenvalues(mu: np.ndarray, shrink: float, tau: float,
                        constraint: str = "frobenius") -> np.ndarray:
    """Eigenvalues of ``Π_{S₊ ∩ ball}[Ŵ − shrink·I]`` from the eigenvalues ``mu`` of ``Ŵ``.

    Theorem 1 (PSD cone): ``max(μ − ηλ, 0)``; then Theorem 3 (``"frobenius"``): scale by
    ``min(1, τ/F)`` with ``F = ‖max(μ − ηλ, 0)‖₂``, or Theorem 2 (``"spectral"``): clip at τ.
    The eigenvectors are unchanged; eigenvalues of ``Ŵ`` outside its range are 0 and stay 0.
    """
    s = np.maximum(np.asarray(mu, dtype=float) - shrink, 0.0)
    if constraint == "frobenius":
        F = np.sqrt(s @ s)
        if F > tau:
            s *= tau / F
    else:
        np.minimum(s, tau, out=s)
    return s


def linear_minimizer_eigenvalues(theta: np.ndarray, tau: float, constraint: str) -> np.ndarray:
    """Eigenvalues of ``argmin_{S ∈ S₊ ∩ ball} ⟨G, S⟩`` given the eigenvalues ``theta`` of ``−G``.

    Frobenius ball: ``S = τ N/‖N‖_F`` with ``N = Π_{S₊}(−G)`` (Cauchy–Schwarz; ``S = 0`` when
    ``−G`` has no positive eigenvalue). Spectral ball: ``S = τ Σ_{θ_i > 0} v_i v_iᵀ``.
    """
    pos = np.maximum(theta, 0.0)
    if constraint == "spectral":
        return np.where(theta > 0, tau, 0.0)
    norm = np.sqrt(pos @ pos)
    return pos * (tau / norm) if norm > 0 else pos


def _rows(X, idx):
    """Dense copy of the rows ``idx`` of ``X`` (CSR rows are densified here, only these)."""
    R = X[idx]
    return R.toarray() if scipy.sparse.issparse(R) else np.asarray(R)


def _difference_rows(X, a, b):
    """Dense rows ``x_a − x_b`` (c×d); for CSR ``X`` only these c rows are densified."""
    if scipy.sparse.issparse(X):
        return (X[a] - X[b]).toarray()
    return X[a] - X[b]


class TripletEvaluator:
    """Objective of a fixed set of triplets at a metric given as a factor or a dense matrix.

    The points of the triplets are mapped once per evaluation (``Z = X_pts F`` for
    ``W = F Fᵀ``, n_pts×d×r flops) and the squared distances are taken row-wise on the mapped
    points; CSR ``X`` stays sparse. When the triplets use more than half of the rows of ``X``,
    all of ``X`` is mapped instead, by row slices read in place (no gathered copy of the rows;
    10 000 random triplets use 99% of USPS's training points).
    """

    def __init__(self, X, triplets, chunk: int = 1024):
        triplets = np.asarray(triplets)
        used = np.zeros(X.shape[0], dtype=bool)
        used[triplets] = True
        self.X, self.chunk = X, chunk
        if 2 * np.count_nonzero(used) > len(used):
            self.pts, self.local = None, triplets     # all rows, indexed by the triplets
        else:
            self.pts = np.flatnonzero(used)
            self.local = (np.cumsum(used) - 1)[triplets]

    def _map(self, F):
        n_pts = self.X.shape[0] if self.pts is None else len(self.pts)
        out = np.empty((n_pts, F.shape[1]))
        for s in range(0, n_pts, self.chunk):
            rows = slice(s, s + self.chunk) if self.pts is None else self.pts[s:s + self.chunk]
            out[s:s + self.chunk] = np.asarray(self.X[rows] @ F)
        return out

    def distances_factor(self, F):
        """``(q_ij, q_ik)`` for ``W = F Fᵀ`` (F: d×r)."""
        Z = self._map(F)
        return (pair_sq_distances(Z, self.local[:, [0, 1]]),
                pair_sq_distances(Z, self.local[:, [0, 2]]))

    def distances_dense(self, W):
        """``(q_ij, q_ik)`` for a dense symmetric d×d ``W`` (X dense)."""
        Xp = self.X if self.pts is None else self.X[self.pts]
        Y = Xp @ W
        return (pair_quadratic_forms(Y, Xp, self.local[:, [0, 1]]),
                pair_quadratic_forms(Y, Xp, self.local[:, [0, 2]]))


# --------------------------------------------------------------------------------------------
# base class
# --------------------------------------------------------------------------------------------

#: the constraints of the parameters the Zhang & Zhang solvers share (each solver takes those of
#: its constructor: :func:`lowrank_constraints`)
LOWRANK_CONSTRAINTS: dict = {
    "lam": [Interval(Real, 0, None, closed="left")],
    "tau": [Interval(Real, 0, None, closed="neither")],
    "constraint": [StrOptions(set(CONSTRAINTS))],
    "step": [Interval(Real, 0, None, closed="neither")],
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "log_every": [Interval(Integral, 1, None, closed="left")],
    "n_eval": [Interval(Integral, 1, None, closed="left"), None],
    "random_state": SEED,
}


def lowrank_constraints(*names: str, **own) -> dict:
    """``LOWRANK_CONSTRAINTS`` of the shared parameters ``names``, a solver's ``own``, and
    ``verbose`` (every solver's last parameter)."""
    return {**{name: LOWRANK_CONSTRAINTS[name] for name in names}, **own, "verbose": VERBOSE}


class LowRankDMLBase(MetricLearner):
    """Shared sampling and result bookkeeping of the Zhang & Zhang solvers."""

    constraint_kind = "triplets"
    optimality_measure = "none (fixed number of iterations)"
    #: step schedule: "sqrt" η_t = c/√t, "constant" η_t = c, "fw" γ_t = min(1, c/(t + 2))
    _schedule = "sqrt"

    def _step_size(self, t: int) -> float:
        if self._schedule == "sqrt":
            return self.step / np.sqrt(t)
        if self._schedule == "fw":
            return min(1.0, self.step / (t + 2))
        return float(self.step)

    @staticmethod
    def _triplets(constraints):
        T = np.asarray(constraints.triplets, dtype=np.intp).reshape(-1, 3)
        if len(T) == 0:
            raise ValueError("no triplets: the low-rank DML objective needs triplet constraints")
        return T

    def _evaluator(self, X, triplets, rng):
        """The fixed evaluation subset (``n_eval`` triplets, all of them when fewer)."""
        if self.n_eval is None or self.n_eval >= len(triplets):
            return TripletEvaluator(X, triplets)
        return TripletEvaluator(X, triplets[rng.choice(len(triplets), self.n_eval, replace=False)])

    def _finish(self, trace, n_iter, converged, objective, optimality=np.nan):
        self.n_iter_ = n_iter
        self.converged_ = converged
        self.objective_ = float(objective)
        self.optimality_ = float(optimality)
        self.trace_ = {k: np.asarray(v, dtype=float) for k, v in trace.items()}


# --------------------------------------------------------------------------------------------
# SGD-IncSVD
# --------------------------------------------------------------------------------------------

def incsvd_step(U, s, D_target, D_impostor, eta, lam, tau, constraint="frobenius",
                batch_size=None):
    """One iteration of Algorithm 1: ``W_{t+1} = Π[W_t − η g − ηλI]``, update (5) or (4).

    ``W_t = U diag(s) Uᵀ``; ``D_target``/``D_impostor`` are the difference rows ``x_i − x_j`` and
    ``x_i − x_k`` of the *active* triplets of the mini-batch (a×d each), so the stochastic
    gradient is ``g = A S Aᵀ`` with ``A = [D_targetᵀ D_impostorᵀ]`` and
    ``S = diag(+1/b, …, −1/b, …)`` (b = ``batch_size``, default a). Returns the factors of
    ``W_{t+1}`` (zero eigenvalues dropped).
    """
    a = len(D_target)
    b = a if batch_size is None else batch_size
    if a:
        A = np.concatenate([D_target, D_impostor]).T          # d×2a (a transposed view)
        w = np.concatenate([np.full(a, -eta / b), np.full(a, eta / b)])   # −η S
        U, mu = eigen_update(U, s, A, w, lower=eta * lam)   # θ ≤ ηλ would be clipped to 0
    else:
        mu = s
    s_new = project_eigenvalues(mu, eta * lam, tau, constraint)
    keep = s_new > 0
    return U[:, keep], s_new[keep]


class SGDIncSVD(LowRankDMLBase):
    """Low-rank DML by SGD with incremental SVD (Zhang & Zhang 2017, Algorithm 1, updates (3)–(5)).

    Parameters
    ----------
    lam : float, default=0.1
        λ of the trace (nuclear-norm) regulariser. Fig. 2 uses 1 (Gisette), 0.1 (Dexter) and
        0.01 (News20); Fig. 1 several values.
    tau : float, default=1.0
        Radius τ of the norm ball (the experiments' ``‖W‖_F ≤ 1``).
    constraint : {"frobenius", "spectral"}, default="frobenius"
        Norm ball: Frobenius (update (5), Theorem 3; the experiments) or spectral (update (4),
        Theorem 2).
    step : float, default=1.0
        c of η_t = c/√t. The paper searches c ∈ {1e-7, 1e-6, …, 1, 10} per data set ("the one that
        leads to the largest decrement of the objective value") and does not report the choice:
        c scales like 1/‖x_i − x_j‖², so it needs tuning per data set.
    batch_size : int, default=100
        Triplets sampled per iteration ("we randomly sample 100 triplets"), with replacement.
    max_iter : int, default=500
        Iterations (the paper runs 500 for Fig. 1). There is no stopping rule: Algorithm 1
        returns the last iterate ``W_{T+1}`` (``converged_`` is True after ``max_iter``).
    max_rank : int or None, default=None
        Optional guard (not in the paper): keep only the ``max_rank`` largest eigenvalues after
        each update.
    log_every : int, default=10
        The objective in ``trace_`` is evaluated every ``log_every`` iterations (and at the
        last), on the fixed evaluation subset; NaN at the other iterations.
    n_eval : int or None, default=10000
        Size of the fixed random evaluation subset of triplets (all triplets when fewer or None).
    random_state : int or None, default=0
        Seed of the mini-batch sampling (``numpy.random.default_rng``).
    verbose : int, default=0
        0: silent; 1: one line at the end of the fit (iterations, objective, seconds); 2 and
        more: also one line at every logged objective (every ``log_every`` iterations).

    Attributes
    ----------
    components_ : ndarray of shape (r, d)
        ``diag(√s) Uᵀ`` (one zero row when the rank is 0).
    metric_ : ndarray of shape (d, d)
        Property: ``components_ᵀ components_``, formed on access only — ``fit`` never allocates a
        d×d array (d = 20 000 would be 3.2 GB).
    eigenvectors_, eigenvalues_ : ndarray (d, r), (r,)
        The factors ``W = U diag(s) Uᵀ``.
    span_dim_ : int or None
        q when the fit ran in the span of the training points (see Notes), else None.
    objective_ : float
        F(W) over all training triplets at the returned W.
    n_iter_, converged_ : int, bool
    optimality_ : float
        NaN: no stopping rule (``optimality_measure`` ``"none (fixed number of iterations)"``).
    trace_ : dict of ndarray
        Per iteration: ``objective`` (evaluation-subset estimate, every ``log_every``), ``rank``,
        ``time`` (seconds since the start of ``fit``).

    Notes
    -----
    With more features than training points the fit runs in the q ≤ n − 1 coordinates of their
    span (:mod:`.span`), exactly: Algorithm 1 starts at ``W_1 = 0``, and each update adds
    ``A diag(w) Aᵀ`` with A the batch's difference rows, which lie in the span, so the
    incremental eigendecomposition keeps every eigenvector in the span; the shrinkage by
    ``η_t λ`` and the projection onto the ball act on the eigenvalues only. W is therefore zero
    off the span, every triplet's distances are those of the span coordinates, and the same
    mini-batches give the same iterates. The reduction is used only when the basis pays for
    itself: when n² ≤ T b² (1 − n/d) for T = ``max_iter`` and b = ``batch_size`` (an iteration
    costs about d(r + 2b)² in d coordinates, the basis about 4n²d), so a large sparse set such
    as News20 keeps the algorithm's own O(d(r + c)²) iteration.

    References
    ----------
    J. Zhang and L. Zhang. Efficient stochastic optimization for low-rank distance metric
    learning. AAAI 2017.
    """

    accepts_sparse = True
    #: W = 0 to start and every update in the span of the batch's differences (class docstring)
    span_complement = "zero"
    _parameter_constraints: dict = lowrank_constraints(
        "lam", "tau", "constraint", "step", "batch_size", "max_iter", "log_every", "n_eval",
        "random_state", max_rank=[Interval(Integral, 1, None, closed="left"), None])

    def __init__(self, lam=0.1, tau=1.0, constraint="frobenius", step=1.0, batch_size=100,
                 max_iter=500, max_rank=None, log_every=10, n_eval=10000, random_state=0,
                 verbose=0):
        store_params(self, locals())

    @property
    def metric_(self):
        """``W = U diag(s) Uᵀ`` (d×d), formed on access from ``components_``."""
        L = self.components_
        return L.T @ L

    def _span_pays(self, n: int, d: int) -> bool:
        # an iteration costs about d(r + 2b)² in d coordinates and q(r + 2b)² in the span
        # (q < n), the basis about 4n²d once: it pays when n² ≤ T b² (1 − n/d), r taken as 0
        return n * n <= self.max_iter * self.batch_size ** 2 * (1.0 - n / d)

    def _lift_from_span(self, V):
        self.eigenvectors_ = V @ self.eigenvectors_

    def _fit(self, X, y, constraints):
        start = time.perf_counter()
        triplets = self._triplets(constraints)
        d = X.shape[1]
        rng = np.random.default_rng(self.random_state)
        evaluator = self._evaluator(X, triplets, rng)
        U, s = np.zeros((d, 0)), np.zeros(0)
        trace = {"objective": [], "rank": [], "time": []}
        report = self.verbose >= 2
        for t in range(1, self.max_iter + 1):
            eta = self._step_size(t)
            batch = triplets[rng.integers(len(triplets), size=self.batch_size)]
            Dt = _difference_rows(X, batch[:, 0], batch[:, 1])
            Di = _difference_rows(X, batch[:, 0], batch[:, 2])
            Us = U * np.sqrt(s)                          # W = (U√s)(U√s)ᵀ
            Zt, Zi = Dt @ Us, Di @ Us
            active = 1.0 + np.einsum("ij,ij->i", Zt, Zt) - np.einsum("ij,ij->i", Zi, Zi) > 0
            U, s = incsvd_step(U, s, Dt[active], Di[active], eta, self.lam, self.tau,
                               self.constraint, self.batch_size)
            if self.max_rank is not None and len(s) > self.max_rank:
                U, s = U[:, :self.max_rank], s[:self.max_rank]
            if t % self.log_every == 0 or t == self.max_iter:
                qt, qi = evaluator.distances_factor(U * np.sqrt(s))
                trace["objective"].append(hinge_objective(qt, qi, s.sum(), self.lam))
                if report:
                    report_progress(self, t, objective=trace["objective"][-1], rank=len(s))
            else:
                trace["objective"].append(np.nan)
            trace["rank"].append(len(s))
            trace["time"].append(time.perf_counter() - start)
        self.eigenvectors_, self.eigenvalues_ = U, s
        self.components_ = ((U * np.sqrt(s)).T if len(s) else np.zeros((1, d)))
        objective = trace["objective"][-1]             # F on the evaluation subset at W_{T+1}
        if len(evaluator.local) < len(triplets):       # a subset: F over all the triplets
            qt, qi = TripletEvaluator(X, triplets).distances_factor(U * np.sqrt(s))
            objective = hinge_objective(qt, qi, s.sum(), self.lam)
        self._finish(trace, self.max_iter, True, objective)
