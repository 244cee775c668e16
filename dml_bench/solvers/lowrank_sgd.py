"""Low-rank DML by SGD with incremental SVD (Zhang & Zhang 2017) and the comparators of its Fig. 2.

All solvers minimise the objective of the paper's experiments section (after Qian et al. 2015a),

    F(W) = (1/T) Σ_{(i,j,k)} max(1 + ‖x_i − x_j‖²_W − ‖x_i − x_k‖²_W, 0) + λ tr(W)
    s.t. W ∈ S₊, ‖W‖_F ≤ τ                                  (τ = 1 in the paper)

i.e. problem (2) (nuclear norm = trace on S₊) with the Frobenius ball of update (5); the spectral
ball of update (4) is the option ``constraint="spectral"``. T triplets ``(i, j, k)``: ``x_j`` of
``x_i``'s class, ``x_k`` of another class.

* :class:`SGDIncSVD` (Algorithm 1): ``W_1 = 0``; every iteration samples ``batch_size`` triplets,
  writes the stochastic gradient of the active ones as the signed low-rank factor
  ``g = A S Aᵀ`` (A = their difference rows, S = ±1/batch), obtains the eigendecomposition of
  ``W_t − η_t g`` by the incremental update (:mod:`.incremental_eigen`), shrinks the eigenvalues
  by ``η_t λ`` and clips them at 0 (Theorem 1, the proximal step of ``λ tr``), then scales onto the
  Frobenius ball (Theorem 3, update (5)) or clips at τ (Theorem 2, update (4)). W stays
  ``U diag(s) Uᵀ``: O(d(r + c)² + (r + c)³) time and O(d(r + c)) memory per iteration, no d×d
  array anywhere (``metric_`` is computed on access).
* Comparators of Fig. 2, on d×d arrays (a memory check refuses to start when they do not fit):
  :class:`LowRankGD` (full gradient, projection by ``eigh``), :class:`LowRankSGD` (stochastic
  gradient, projection every iteration, η_t = c/√t), :class:`LowRankSGDBatch` (mini-batch of 10,
  constant step), :class:`LowRankFW` (Frank-Wolfe, η_t = c/(t + 2)), :class:`LowRankSGDOne`
  (Mahdavi et al. 2012: one projection at the end).

References
----------
J. Zhang and L. Zhang. Efficient stochastic optimization for low-rank distance metric learning.
AAAI 2017. M. Brand. Fast low-rank modifications of the thin singular value decomposition. Linear
Algebra Appl. 415(1):20–30, 2006. M. Mahdavi, T. Yang, R. Jin, S. Zhu and J. Yi. Stochastic
gradient descent with only one projection. NIPS 2012. Q. Qian, R. Jin, J. Yi, L. Zhang and S. Zhu.
Efficient distance metric learning by adaptive sampling and mini-batch SGD. MLJ 99(3), 2015.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.linalg
import scipy.sparse
from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, eigsh
from sklearn.exceptions import ConvergenceWarning

from .base import MetricLearner
from .incremental_eigen import eigen_update
from .linalg import (DENSE_EIGH_MAX_DIM, PairOuterSum, check_square_memory, components_from_psd,
                     eigh_above, eigh_all, pair_differences, pair_quadratic_forms,
                     pair_sq_distances, triplet_pairs)

CONSTRAINTS = ("frobenius", "spectral")


# --------------------------------------------------------------------------------------------
# shared helpers: objective, projections, memory check
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

class _LowRankDMLBase(MetricLearner):
    """Shared parameter checks, sampling and result bookkeeping of the Zhang & Zhang solvers."""

    constraint_kind = "triplets"
    optimality_measure = "none (fixed number of iterations)"
    #: step schedule: "sqrt" η_t = c/√t, "constant" η_t = c, "fw" γ_t = min(1, c/(t + 2))
    _schedule = "sqrt"

    def _check_common(self):
        if self.constraint not in CONSTRAINTS:
            raise ValueError(f"constraint must be one of {CONSTRAINTS}, got {self.constraint!r}")
        if not (self.lam >= 0 and self.tau > 0 and self.step > 0 and self.max_iter >= 1):
            raise ValueError("need lam >= 0, tau > 0, step > 0 and max_iter >= 1")
        for name in ("batch_size", "log_every", "n_eval"):
            value = getattr(self, name, 1)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")

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


class SGDIncSVD(_LowRankDMLBase):
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

    Attributes
    ----------
    components_ : ndarray of shape (r, d)
        ``diag(√s) Uᵀ`` (one zero row when the rank is 0).
    metric_ : ndarray of shape (d, d)
        Property: ``components_ᵀ components_``, formed on access only — ``fit`` never allocates a
        d×d array (d = 20 000 would be 3.2 GB).
    eigenvectors_, eigenvalues_ : ndarray (d, r), (r,)
        The factors ``W = U diag(s) Uᵀ``.
    objective_ : float
        F(W) over all training triplets at the returned W.
    n_iter_, converged_ : int, bool
    optimality_ : float
        NaN: no stopping rule (``optimality_measure`` ``"none (fixed number of iterations)"``).
    trace_ : dict of ndarray
        Per iteration: ``objective`` (evaluation-subset estimate, every ``log_every``), ``rank``,
        ``time`` (seconds since the start of ``fit``).

    References
    ----------
    J. Zhang and L. Zhang. Efficient stochastic optimization for low-rank distance metric
    learning. AAAI 2017.
    """

    accepts_sparse = True

    def __init__(self, lam=0.1, tau=1.0, constraint="frobenius", step=1.0, batch_size=100,
                 max_iter=500, max_rank=None, log_every=10, n_eval=10000, random_state=0):
        self.lam = lam
        self.tau = tau
        self.constraint = constraint
        self.step = step
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.max_rank = max_rank
        self.log_every = log_every
        self.n_eval = n_eval
        self.random_state = random_state

    def _check_params(self):
        self._check_common()
        if self.max_rank is not None and self.max_rank < 1:
            raise ValueError(f"max_rank must be None or >= 1, got {self.max_rank}")

    @property
    def metric_(self):
        """``W = U diag(s) Uᵀ`` (d×d), formed on access from ``components_``."""
        L = self.components_
        return L.T @ L

    def _fit(self, X, y, constraints):
        self._check_params()
        start = time.perf_counter()
        triplets = self._triplets(constraints)
        d = X.shape[1]
        rng = np.random.default_rng(self.random_state)
        evaluator = self._evaluator(X, triplets, rng)
        U, s = np.zeros((d, 0)), np.zeros(0)
        trace = {"objective": [], "rank": [], "time": []}
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


# --------------------------------------------------------------------------------------------
# dense comparators (Fig. 2)
# --------------------------------------------------------------------------------------------

def _batch_gradient(X, batch, W):
    """Stochastic gradient of the hinge term on ``batch`` at dense ``W`` (d×d), without λI.

    ``(1/b) Σ_active (d_ij d_ijᵀ − d_ik d_ikᵀ)`` as one GEMM on the stacked difference rows.
    """
    Dt = pair_differences(X, batch[:, [0, 1]])
    Di = pair_differences(X, batch[:, [0, 2]])
    active = (1.0 + np.einsum("ij,ij->i", Dt @ W, Dt)
              - np.einsum("ij,ij->i", Di @ W, Di)) > 0
    D = np.concatenate([Dt[active], Di[active]])
    w = np.concatenate([np.ones(active.sum()), -np.ones(active.sum())]) / len(batch)
    return (D * w[:, None]).T @ D


class _FullObjective:
    """F(W) and its (sub)gradient over all T triplets at a dense W.

    The triplets' pairs are reduced to the distinct pairs (``linalg.triplet_pairs``); their
    squared distances are the quadratic forms of W on the mapped points ``X W``
    (``linalg.pair_quadratic_forms``), or, given a factor ``W = F Fᵀ`` (d×r, the projected
    iterate of GD), the squared distances of the points mapped by F (n×d×r flops instead of
    n×d×d), and the hinge subgradient
    ``(1/T) Σ_active (d_ij d_ijᵀ − d_ik d_ikᵀ)`` is one signed weighted outer sum
    (``linalg.PairOuterSum``).
    """

    def __init__(self, X, triplets, lam):
        self.X, self.lam, self.T = X, lam, len(triplets)
        self.pairs, self.target, self.impostor = triplet_pairs(triplets)
        self.outer_sum = PairOuterSum(X, self.pairs)
        points, local = np.unique(self.pairs, return_inverse=True)
        self.Xp, self.local_pairs = X[points], local.reshape(-1, 2)  # the pairs' points only

    def __call__(self, W, factor=None):
        q = (pair_quadratic_forms(self.Xp @ W, self.Xp, self.local_pairs) if factor is None
             else pair_sq_distances(self.Xp @ factor, self.local_pairs))
        margin = 1.0 + q[self.target] - q[self.impostor]
        active = margin > 0
        f = float(np.maximum(margin, 0.0).mean() + self.lam * np.trace(W))
        w = (np.bincount(self.target[active], minlength=len(self.pairs))
             - np.bincount(self.impostor[active], minlength=len(self.pairs))) / self.T
        G = self.outer_sum(w)
        return f, G                                    # G: gradient of the hinge term only


def _from_top_eigenpairs(V, s):
    """``(Σ_{s_i > 0} s_i v_i v_iᵀ, its factor V_+ diag(√s_+))`` for the new eigenvalues s of an
    ascending ``eigh`` (V).

    The projections (4)/(5) and the FW vertex map the eigenvalues monotonically, so the positive
    ones are the last: their eigenvectors are taken as a view, not a gathered copy.
    """
    first = len(s) - np.count_nonzero(s > 0)
    Vk = V[:, first:]
    return (Vk * s[first:]) @ Vk.T, Vk * np.sqrt(s[first:])


class _DenseBase(_LowRankDMLBase):
    """Projected (stochastic) gradient on a dense d×d W; projection (5)/(4) by ``eigh``.

    A projection keeps only the eigenpairs above the shrinkage ηλ (the FW vertex: above 0).
    While the last one kept few (≤ ``linalg.SUBSET_EIGH_MAX_FRACTION`` · d), only these are
    computed (``linalg.eigh_above``): still a d×d tridiagonal reduction per iteration, the
    O(d³) cost that SGD-IncSVD avoids, but 1.3–1.6× faster iterations on the board's Yale B
    (``benchmarks/bench_eigh_drivers.py --part solvers``).
    """

    #: d×d float64 arrays alive at once at the peak: W, the gradient, the matrix decomposed, the
    #: copy LAPACK works on (its eigenvectors in place; the matrix itself is kept for a fallback
    #: driver, ``linalg._eigh_lower``) and ``syevd``'s workspace of 2 d² (measured with
    #: tracemalloc in tests/test_lowrank_sgd.py)
    _n_dense = 6
    #: full gradient over all triplets (GD, FW) or mini-batches of ``batch_size`` (SGD variants)
    _full_gradient = False

    def _check_params(self):
        self._check_common()

    def _prepare(self, X, triplets):
        check_square_memory(type(self).__name__, X.shape[1], self._n_dense, "d",
                            self.memory_limit_gb)
        self._full = _FullObjective(X, triplets, self.lam) if self._full_gradient else None
        self._factor = None        # W = F Fᵀ after a projection (d×r), for the full objective
        self._n_above = None       # eigenvalues above the threshold at the last decomposition

    def _gradient(self, X, triplets, W, rng):
        """(objective or None, hinge gradient): exact for the full-gradient methods."""
        if self._full is not None:
            factor, self._factor = self._factor, None   # not kept through the next eigh
            return self._full(W, factor)
        batch = triplets[rng.integers(len(triplets), size=self.batch_size)]
        return None, _batch_gradient(X, batch, W)

    def _eigh_above(self, A, lower):
        """The eigenpairs of A above ``lower`` (all that a projection keeps): only these when
        few are expected from the last iteration's count (``linalg.eigh_above``)."""
        mu, V = eigh_above(A, lower, self._n_above)
        self._n_above = len(mu)
        return mu, V

    def _update(self, t, W, G, eta):
        """``Π_{S₊ ∩ ball}[W − ηG − ηλI]`` by ``eigh`` (Theorems 1–3): the eigenpairs of
        ``W − ηG`` above ηλ, the others being clipped to 0. Returns (W, info)."""
        A = np.multiply(G, -eta)
        A += W
        mu, V = self._eigh_above(A, eta * self.lam)
        s = project_eigenvalues(mu, eta * self.lam, self.tau, self.constraint)
        W, factor = _from_top_eigenpairs(V, s)
        self._factor = factor if self._full is not None else None
        return W, {"rank": int(np.count_nonzero(s > 0))}

    def _fit(self, X, y, constraints):
        self._check_params()
        start = time.perf_counter()
        triplets = self._triplets(constraints)
        d = X.shape[1]
        self._prepare(X, triplets)
        rng = np.random.default_rng(getattr(self, "random_state", 0))
        evaluator = None if self._full_gradient else self._evaluator(X, triplets, rng)
        W = np.zeros((d, d))
        trace = {"objective": [], "time": []}
        converged = False
        for t in range(1, self.max_iter + 1):
            f, G = self._gradient(X, triplets, W, rng)
            W, info = self._update(t, W, G, self._step_size(t))
            if f is None:   # stochastic: objective of the new iterate on the evaluation subset
                f = (self._subset_objective(W, evaluator)
                     if t % self.log_every == 0 or t == self.max_iter else np.nan)
            trace["objective"].append(f)     # full gradient: F at the iterate the step started
            stop = info.pop("stop", False)
            for key, val in info.items():
                trace.setdefault(key, []).append(val)
            trace["time"].append(time.perf_counter() - start)
            if stop:
                converged = True
                break
        del G                                # d×d arrays alive at the end: W and the final one
        W = self._final(W)
        optimality = self._optimality(W)
        self.metric_ = W
        self.components_ = components_from_psd(W)
        qt, qi = TripletEvaluator(X, triplets).distances_dense(W)
        tol = getattr(self, "tol", 0.0)
        if tol > 0 and not converged:
            warnings.warn(f"{type(self).__name__} did not converge in {self.max_iter} iterations "
                          f"(last gap {trace['gap'][-1]:.3g})", ConvergenceWarning)
        # no stopping rule (tol = 0): the method runs its prescribed max_iter iterations
        self._finish(trace, len(trace["time"]), converged or tol == 0,
                     hinge_objective(qt, qi, np.trace(W), self.lam), optimality)

    def _subset_objective(self, W, evaluator):
        """F on the evaluation subset of triplets at the reported matrix of W."""
        R = self._report(W)
        qt, qi = evaluator.distances_dense(R)
        return hinge_objective(qt, qi, np.trace(R), self.lam)

    def _optimality(self, W):
        """``optimality_`` at the returned W (no measure by default)."""
        return np.nan

    def _report(self, W):
        """The matrix whose objective is logged (SGD-One: its projection)."""
        return W

    def _final(self, W):
        return W


class LowRankGD(_DenseBase):
    """GD of Fig. 2 (Zhang & Zhang 2017): full gradient, projection (5) by ``eigh``.

    ``W_{t+1} = Π_{S₊ ∩ {‖W‖_F ≤ τ}}[W_t − η(∇f(W_t) + λI)]`` with a constant step η = ``step``
    (the paper searches it in {1e-7, …, 10}). The gradient is the subgradient of the hinge over
    all T triplets (one weighted GEMM on the distinct pairs). ``trace_``: ``objective`` (exact F
    at the iterate the step starts from), ``rank``, ``time``.

    Parameters
    ----------
    lam, tau, constraint : as :class:`SGDIncSVD`.
    step : float, default=1.0
        Constant step η (searched per data set in the paper; no reported value).
    max_iter : int, default=500
    memory_limit_gb : float or None, default=None
        Memory the d×d arrays may use; None: the memory available now (``MemoryError`` before any
        d×d allocation when 4 d×d float64 arrays exceed it).

    Attributes
    ----------
    optimality_ : float
        NaN: no stopping rule (``optimality_measure`` ``"none (fixed number of iterations)"``).

    References
    ----------
    J. Zhang and L. Zhang. Efficient stochastic optimization for low-rank distance metric
    learning. AAAI 2017, §Experiments.
    """

    _schedule = "constant"
    _full_gradient = True

    def __init__(self, lam=0.1, tau=1.0, constraint="frobenius", step=1.0, max_iter=500,
                 memory_limit_gb=None):
        self.lam = lam
        self.tau = tau
        self.constraint = constraint
        self.step = step
        self.max_iter = max_iter
        self.memory_limit_gb = memory_limit_gb


class LowRankSGD(_DenseBase):
    """SGD of Fig. 2: GD with stochastic gradients, projection (5) every iteration, η_t = c/√t.

    Parameters
    ----------
    lam, tau, constraint : as :class:`SGDIncSVD`.
    step : float, default=1.0
        c of η_t = c/√t (the paper's setting for SGD and SGD-IncSVD; c searched per data set).
    batch_size : int, default=1
        Triplets per stochastic gradient. The paper does not say; "SGD-Batch uses mini-batch to
        reduce the number of projections of SGD" reads as one triplet per projection.
    max_iter : int, default=500
    log_every, n_eval, random_state : as :class:`SGDIncSVD`.
    memory_limit_gb : float or None, default=None
        As :class:`LowRankGD`.

    Attributes
    ----------
    optimality_ : float
        NaN: no stopping rule (``optimality_measure`` ``"none (fixed number of iterations)"``).

    References
    ----------
    J. Zhang and L. Zhang. AAAI 2017, §Experiments.
    """

    _schedule = "sqrt"

    def __init__(self, lam=0.1, tau=1.0, constraint="frobenius", step=1.0, batch_size=1,
                 max_iter=500, log_every=10, n_eval=10000, random_state=0,
                 memory_limit_gb=None):
        self.lam = lam
        self.tau = tau
        self.constraint = constraint
        self.step = step
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.log_every = log_every
        self.n_eval = n_eval
        self.random_state = random_state
        self.memory_limit_gb = memory_limit_gb


class LowRankSGDBatch(LowRankSGD):
    """SGD-Batch of Fig. 2 (Qian et al. 2015a): mini-batches of 10 triplets, constant step.

    Same parameters and attributes as :class:`LowRankSGD`; ``batch_size`` defaults to 10
    ("according to the suggestion in (Qian et al. 2015a)") and ``step`` is a constant η (searched
    in the paper).

    References
    ----------
    J. Zhang and L. Zhang. AAAI 2017, §Experiments; Qian et al., MLJ 99(3), 2015.
    """

    _schedule = "constant"

    def __init__(self, lam=0.1, tau=1.0, constraint="frobenius", step=1.0, batch_size=10,
                 max_iter=500, log_every=10, n_eval=10000, random_state=0,
                 memory_limit_gb=None):
        super().__init__(lam=lam, tau=tau, constraint=constraint, step=step,
                         batch_size=batch_size, max_iter=max_iter, log_every=log_every,
                         n_eval=n_eval, random_state=random_state,
                         memory_limit_gb=memory_limit_gb)


class LowRankFW(_DenseBase):
    """FW of Fig. 2: Frank-Wolfe on F over ``S₊ ∩ {‖W‖_F ≤ τ}``, γ_t = min(1, c/(t + 2)).

    ``W_{t+1} = (1 − γ_t) W_t + γ_t S_t`` with ``S_t = argmin_{S ∈ S₊ ∩ ball} ⟨∇F(W_t), S⟩``.
    Over the Frobenius ball the linear minimiser is ``τ N/‖N‖_F``, ``N = Π_{S₊}(−∇F)`` (all
    negative eigen-directions of ∇F, one ``eigh`` of a d×d matrix per iteration) — not a single
    top eigenvector, which is the minimiser over the spectrahedron {tr S ≤ τ} of Ying & Li (2012);
    spectral ball: ``τ Σ_{θ_i>0} v_i v_iᵀ``. The duality gap ``⟨∇F(W_t), W_t − S_t⟩`` bounds
    ``F(W_t) − F*`` for the (subgradient-)linearisation and stops the loop at ``tol``.

    Parameters
    ----------
    lam, tau, constraint : as :class:`SGDIncSVD`.
    step : float, default=2.0
        c of γ_t = c/(t + 2) (clipped at 1); c = 2 is the classical Frank-Wolfe step (Jaggi
        2013). The paper searches c ∈ {1e-7, …, 10}.
    max_iter : int, default=500
    tol : float, default=0.0
        Stop when the gap is ≤ ``tol · |F(W_t)|`` (0: run ``max_iter`` iterations, as in the
        paper's Fig. 2, without warning).
    memory_limit_gb : float or None, default=None
        As :class:`LowRankGD`.

    Attributes
    ----------
    optimality_ : float
        Relative duality gap ``gap/|F|`` at the returned W (``optimality_measure``
        ``"relative_duality_gap"``; what ``tol`` tests).

    References
    ----------
    J. Zhang and L. Zhang. AAAI 2017, §Experiments; M. Jaggi. Revisiting Frank-Wolfe. ICML 2013.
    """

    _schedule = "fw"
    _full_gradient = True
    optimality_measure = "relative_duality_gap"

    def __init__(self, lam=0.1, tau=1.0, constraint="frobenius", step=2.0, max_iter=500,
                 tol=0.0, memory_limit_gb=None):
        self.lam = lam
        self.tau = tau
        self.constraint = constraint
        self.step = step
        self.max_iter = max_iter
        self.tol = tol
        self.memory_limit_gb = memory_limit_gb

    def _check_params(self):
        self._check_common()
        if self.tol < 0:
            raise ValueError(f"tol must be >= 0, got {self.tol}")

    def _vertex(self, W, G):
        """The linear minimiser S and the gap ``⟨∇F(W), W − S⟩`` (G: the hinge gradient), with
        ``∇F = G + λI``."""
        A = np.negative(G)
        A.flat[::len(W) + 1] -= self.lam               # −∇F: only its positive eigenpairs count
        theta, V = self._eigh_above(A, 0.0)
        S, _ = _from_top_eigenpairs(
            V, linear_minimizer_eigenvalues(theta, self.tau, self.constraint))
        gap = np.vdot(G, W) - np.vdot(G, S) + self.lam * (np.trace(W) - np.trace(S))
        return S, float(gap)

    def _update(self, t, W, G, gamma):
        S, gap = self._vertex(W, G)
        stop = self.tol > 0 and gap <= self.tol * abs(self._last_f)
        if stop:
            return W, {"gap": gap, "stop": stop}
        S *= gamma
        W_new = np.multiply(W, 1 - gamma)
        W_new += S
        return W_new, {"gap": gap, "stop": stop}

    def _gradient(self, X, triplets, W, rng):
        f, G = super()._gradient(X, triplets, W, rng)
        self._last_f = f
        return f, G

    def _optimality(self, W):
        f, G = self._full(W)
        return self._vertex(W, G)[1] / abs(f)


class LowRankSGDOne(_DenseBase):
    """SGD-One of Fig. 2 (Mahdavi et al. 2012): stochastic gradient with one projection at the end.

    The PSD constraint is the convex function constraint ``g(W) = −λ_min(W) ≤ 0`` (subgradient
    ``−v vᵀ``, v a unit eigenvector of λ_min, one extreme eigenvector per iteration instead of a
    projection); the iterates only stay in the simple ball B = {‖W‖_F ≤ τ} (a scaling). With the
    augmented Lagrangian ``F(W) + μ g(W) − (γ/2) μ²`` (Mahdavi et al.'s Algorithm 1):

        W_{t+1} = Π_B[W_t − η(g_t + λI + μ_t ∇g(W_t))],   μ_{t+1} = [(1 − γη) μ_t + η g(W_t)]₊,

    and the returned metric is the projection (Theorem 3) of the average iterate onto
    ``S₊ ∩ B`` — the only eigendecomposition of the run.

    Parameters
    ----------
    lam, tau, constraint : as :class:`SGDIncSVD` (``constraint="spectral"`` uses the spectral
        ball as B).
    step : float, default=1.0
        Constant step η (searched in the paper).
    gamma : float, default=1.0
        γ of the augmented Lagrangian (not given by Zhang & Zhang; Mahdavi et al. tie it to the
        bounds of the problem).
    batch_size : int, default=10
        Triplets per stochastic gradient (not stated in the paper; the SGD-Batch value).
    max_iter, log_every, n_eval, random_state : as :class:`SGDIncSVD`. The logged objective is
        that of the final solution's rule (projected average) at that iteration.
    memory_limit_gb : float or None, default=None
        As :class:`LowRankGD`.

    Attributes
    ----------
    optimality_ : float
        NaN: no stopping rule (``optimality_measure`` ``"none (fixed number of iterations)"``).

    References
    ----------
    M. Mahdavi, T. Yang, R. Jin, S. Zhu and J. Yi. Stochastic gradient descent with only one
    projection. NIPS 2012. J. Zhang and L. Zhang. AAAI 2017, §Experiments.
    """

    _schedule = "constant"
    _n_dense = 6    # W, the running average of the iterates and the step's arrays (measured)

    def __init__(self, lam=0.1, tau=1.0, constraint="frobenius", step=1.0, gamma=1.0,
                 batch_size=10, max_iter=500, log_every=10, n_eval=10000, random_state=0,
                 memory_limit_gb=None):
        self.lam = lam
        self.tau = tau
        self.constraint = constraint
        self.step = step
        self.gamma = gamma
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.log_every = log_every
        self.n_eval = n_eval
        self.random_state = random_state
        self.memory_limit_gb = memory_limit_gb

    def _check_params(self):
        self._check_common()
        if self.gamma < 0:
            raise ValueError(f"gamma must be >= 0, got {self.gamma}")

    def _prepare(self, X, triplets):
        super()._prepare(X, triplets)
        d = X.shape[1]
        self._mu, self._v, self._avg, self._count = 0.0, None, np.zeros((d, d)), 0

    def _min_eigpair(self, W):
        d = len(W)
        if d <= DENSE_EIGH_MAX_DIM:
            lam, V = scipy.linalg.eigh(W, subset_by_index=[0, 0])
            return float(lam[0]), V[:, 0]
        if not W.any():                                # W_1 = 0: any unit vector, λ_min = 0
            return 0.0, np.full(d, 1 / np.sqrt(d))
        v0 = self._v if self._v is not None else np.random.default_rng(0).standard_normal(d)
        try:
            lam, V = eigsh(W, k=1, which="SA", v0=v0, tol=1e-8)
        except (ArpackNoConvergence, ArpackError):     # rare: the exact dense answer
            lam, V = scipy.linalg.eigh(W, subset_by_index=[0, 0])
        return float(lam[0]), V[:, 0]

    def _update(self, t, W, G, eta):
        lam_min, v = self._min_eigpair(W)
        self._v = v
        g_val = -lam_min
        W_new = np.multiply(G, -eta)                   # W − η(G + λI − μ v vᵀ)
        W_new.flat[::len(W) + 1] -= eta * self.lam
        if self._mu > 0:                               # μ ∇g(W) = −μ v vᵀ
            W_new += np.outer(v, (eta * self._mu) * v)
        W_new += W
        norm = (np.linalg.norm(W_new) if self.constraint == "frobenius"
                else np.linalg.norm(W_new, 2))
        if norm > self.tau:
            W_new *= self.tau / norm
        self._mu = max(0.0, (1 - self.gamma * eta) * self._mu + eta * g_val)
        self._count += 1
        self._avg *= (self._count - 1) / self._count  # the running mean of the iterates
        self._avg += W_new / self._count
        return W_new, {"multiplier": self._mu}

    def _report(self, W):
        return self._final(W)

    def _final(self, W):
        mu, V = eigh_all(self._avg)
        return _from_top_eigenpairs(V, project_eigenvalues(mu, 0.0, self.tau, self.constraint))[0]
