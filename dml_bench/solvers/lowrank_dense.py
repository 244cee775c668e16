"""The comparators of Zhang & Zhang's Fig. 2, on dense d×d arrays.

They minimise the objective F of :mod:`.lowrank_sgd` over ``S₊ ∩ {‖W‖_F ≤ τ}`` (or the spectral
ball) with an eigendecomposition of a d×d matrix per iteration, the O(d³) cost that SGD-IncSVD
avoids; a memory check refuses to start when their d×d arrays do not fit.
:class:`LowRankGD` (full gradient, projection by ``eigh``), :class:`LowRankSGD` (stochastic
gradient, projection every iteration, η_t = c/√t), :class:`LowRankSGDBatch` (mini-batch of 10,
constant step), :class:`LowRankFW` (Frank-Wolfe, η_t = c/(t + 2)); :mod:`.lowrank_sgd_one`
holds :class:`~.lowrank_sgd_one.LowRankSGDOne` (Mahdavi et al. 2012: one projection at the end).

With more features than training points GD, SGD, SGD-Batch and FW solve in the span of the
points (:mod:`.span`), exactly: W starts at 0, the hinge gradients are combinations of the
triplets' difference outer products, and the trace term's λI only shifts the eigenvalues. A
projection keeps the eigenpairs of ``W − ηG`` above ηλ ≥ 0, and a Frank-Wolfe vertex the
positive ones of ``−G − λI``; off the span these eigenvalues are 0 and −λ, never kept, so W
stays zero there. SGD-One goes negative off the span between its projections, so that λ_min
lies there with multiplicity d − q; with the ``"eigenspace"`` subgradient (the barycentre of the
eigenspace's ``−v vᵀ``) its iterate stays a multiple of the identity off the span, and it solves
in the span too.

References
----------
J. Zhang and L. Zhang. Efficient stochastic optimization for low-rank distance metric learning.
AAAI 2017. M. Mahdavi, T. Yang, R. Jin, S. Zhu and J. Yi. Stochastic gradient descent with only
one projection. NIPS 2012. Q. Qian, R. Jin, J. Yi, L. Zhang and S. Zhu. Efficient distance metric
learning by adaptive sampling and mini-batch SGD. MLJ 99(3), 2015. M. Jaggi. Revisiting
Frank-Wolfe: projection-free sparse convex optimization. ICML 2013.
"""

from __future__ import annotations

import time
from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval

from .base import MEMORY_LIMIT, rate_hint, report_progress, store_params, warn_not_converged
from .linalg import (PairOuterSum, check_square_memory, components_from_psd, eigh_above, eigh_all,
                     pair_differences, pair_quadratic_forms, pair_sq_distances, triplet_pairs)
from .lowrank_sgd import (LowRankDMLBase, TripletEvaluator, hinge_objective,
                          linear_minimizer_eigenvalues, lowrank_constraints, project_eigenvalues)


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


class _DenseBase(LowRankDMLBase):
    """Projected (stochastic) gradient on a dense d×d W; projection (5)/(4) by ``eigh``.

    A projection keeps only the eigenpairs above the shrinkage ηλ (the FW vertex: above 0).
    While the last one kept few (≤ ``linalg.SUBSET_EIGH_MAX_FRACTION`` · d), only these are
    computed (``linalg.eigh_above``): still a d×d tridiagonal reduction per iteration, the
    O(d³) cost that SGD-IncSVD avoids, but not the eigenvectors that the projection drops.
    """

    #: W = 0 to start; every projection or vertex keeps W zero off the span (module docstring)
    span_complement = "zero"
    #: d×d float64 arrays alive at once at the peak: W, the gradient, the matrix decomposed, the
    #: copy LAPACK works on (its eigenvectors in place; the matrix itself is kept for a fallback
    #: driver, ``linalg._eigh_lower``) and ``syevd``'s workspace of 2 d² (the peak that
    #: tracemalloc sees in the tests)
    _n_dense = 6
    #: full gradient over all triplets (GD, FW) or mini-batches of ``batch_size`` (SGD variants)
    _full_gradient = False

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
        start = time.perf_counter()
        triplets = self._triplets(constraints)
        d = X.shape[1]
        self._prepare(X, triplets)
        rng = np.random.default_rng(getattr(self, "random_state", 0))
        evaluator = None if self._full_gradient else self._evaluator(X, triplets, rng)
        W = np.zeros((d, d))
        trace = {"objective": [], "time": []}
        converged, report = False, self.verbose >= 2
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
            if report and not np.isnan(f):
                report_progress(self, t, objective=f, **{k: v[-1] for k, v in trace.items()
                                                         if k not in ("objective", "time")})
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
            warn_not_converged(
                self, rule=f"Frank-Wolfe gap ≤ tol·|F| with tol = {tol:g}",
                cap=f"max_iter = {self.max_iter} iterations",
                reached=f"relative duality gap {optimality:.3g}",
                hint=rate_hint(self.max_iter, optimality, tol, rate="Frank-Wolfe O(1/t)"))
        # no stopping rule (tol = 0): the method runs its prescribed max_iter iterations
        self._finish(trace, len(trace["time"]), converged or tol == 0,
                     hinge_objective(qt, qi, self._trace(W), self.lam), optimality)

    def _subset_objective(self, W, evaluator):
        """F on the evaluation subset of triplets at the reported matrix of W."""
        R = self._report(W)
        qt, qi = evaluator.distances_dense(R)
        return hinge_objective(qt, qi, self._trace(R), self.lam)

    def _trace(self, W):
        """``Tr W`` of the whole iterate (SGD-One adds its part off the span)."""
        return np.trace(W)

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
    verbose : int, default=0
        0: silent; 1: one line at the end of the fit (iterations, objective, seconds); 2 and
        more: also one line per iteration (the objective F at its start, the rank).

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
    _parameter_constraints: dict = lowrank_constraints(
        "lam", "tau", "constraint", "step", "max_iter", memory_limit_gb=MEMORY_LIMIT)

    def __init__(self, lam=0.1, tau=1.0, constraint="frobenius", step=1.0, max_iter=500,
                 memory_limit_gb=None, verbose=0):
        store_params(self, locals())


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
    verbose : int, default=0
        0: silent; 1: one line at the end of the fit (iterations, objective, seconds); 2 and
        more: also one line at every logged objective (every ``log_every`` iterations).

    Attributes
    ----------
    trace_ : dict of ndarray
        Per iteration: ``objective`` (evaluation-subset estimate, every ``log_every``), ``rank``,
        ``time`` (seconds since the start of ``fit``).
    optimality_ : float
        NaN: no stopping rule (``optimality_measure`` ``"none (fixed number of iterations)"``).

    References
    ----------
    J. Zhang and L. Zhang. AAAI 2017, §Experiments.
    """

    _schedule = "sqrt"
    _parameter_constraints: dict = lowrank_constraints(
        "lam", "tau", "constraint", "step", "batch_size", "max_iter", "log_every", "n_eval",
        "random_state", memory_limit_gb=MEMORY_LIMIT)

    def __init__(self, lam=0.1, tau=1.0, constraint="frobenius", step=1.0, batch_size=1,
                 max_iter=500, log_every=10, n_eval=10000, random_state=0,
                 memory_limit_gb=None, verbose=0):
        store_params(self, locals())


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
                 memory_limit_gb=None, verbose=0):
        super().__init__(lam=lam, tau=tau, constraint=constraint, step=step,
                         batch_size=batch_size, max_iter=max_iter, log_every=log_every,
                         n_eval=n_eval, random_state=random_state,
                         memory_limit_gb=memory_limit_gb, verbose=verbose)


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
    verbose : int, default=0
        0: silent; 1: one line at the end of the fit (iterations, objective, relative gap,
        converged, seconds); 2 and more: also one line per iteration (F at its start, the
        gap).

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
    _parameter_constraints: dict = lowrank_constraints(
        "lam", "tau", "constraint", "step", "max_iter",
        tol=[Interval(Real, 0, None, closed="left")], memory_limit_gb=MEMORY_LIMIT)

    def __init__(self, lam=0.1, tau=1.0, constraint="frobenius", step=2.0, max_iter=500,
                 tol=0.0, memory_limit_gb=None, verbose=0):
        store_params(self, locals())

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
