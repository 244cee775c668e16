"""SGD-One of Zhang & Zhang's Fig. 2: stochastic gradient with one projection at the end.

Part of the solver stage. The comparator of :mod:`.lowrank_dense` after Mahdavi et al. (2012),
on a dense d×d iterate, or, with the ``"eigenspace"`` subgradient and more features than
training points, on the span of the points (:mod:`.span`) and one scalar for the rest.

References
----------
M. Mahdavi, T. Yang, R. Jin, S. Zhu and J. Yi. Stochastic gradient descent with only one
projection. NIPS 2012. J. Zhang and L. Zhang. Efficient stochastic optimization for low-rank
distance metric learning. AAAI 2017. A. S. Lewis and M. L. Overton. Eigenvalue optimization.
Acta Numerica 5, 1996 (the subdifferential of an extreme eigenvalue).
"""

from __future__ import annotations

from numbers import Real

import numpy as np
import scipy.linalg
from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, eigsh
from sklearn.utils._param_validation import Interval, StrOptions

from . import top_eigen
from .base import MEMORY_LIMIT, store_params
from .linalg import eigh_all
from .lowrank_dense import _DenseBase, _from_top_eigenpairs
from .lowrank_sgd import lowrank_constraints, project_eigenvalues

#: eigenvalues within this fraction of ‖W‖_F of λ_min are taken as λ_min itself (its multiple
#: eigenvalue, known to rounding: the iterate's d×d products err by about d·ε·‖W‖)
TIE_RTOL = 1e-9


class LowRankSGDOne(_DenseBase):
    """SGD-One of Fig. 2 (Mahdavi et al. 2012): stochastic gradient with one projection at the end.

    The PSD constraint is the convex function constraint ``g(W) = −λ_min(W) ≤ 0``; the iterates
    only stay in the simple ball B = {‖W‖_F ≤ τ} (a scaling). With the augmented Lagrangian
    ``F(W) + μ g(W) − (γ/2) μ²`` (Mahdavi et al.'s Algorithm 1):

        W_{t+1} = Π_B[W_t − η(g_t + λI + μ_t ∂g(W_t))],   μ_{t+1} = [(1 − γη) μ_t + η g(W_t)]₊,

    and the returned metric is the projection (Theorem 3) of the average iterate onto
    ``S₊ ∩ B`` — the only eigendecomposition of the run; each iteration needs only λ_min.

    The subgradient ∂g: at a simple λ_min it is ``−v vᵀ`` (v its unit eigenvector). At a
    multiple one, g is not differentiable and its subdifferential is the convex hull of the
    ``−v vᵀ`` over the unit vectors v of the eigenspace (Lewis & Overton 1996). ``subgradient``
    chooses in it: ``"eigenvector"`` one such v, the one the eigensolver returns (the rule as
    Mahdavi et al. state it, and the default); ``"eigenspace"`` the barycentre ``−U Uᵀ / k``
    (U an orthonormal basis of the k-dimensional eigenspace). The two are the same step
    wherever λ_min is simple; where the training points leave directions untouched (more
    features than points, or constant features), λ_min lies there with a multiplicity, and the
    first rule's direction among them is set by rounding.

    With ``"eigenspace"`` and more features than training points the fit solves in the span of
    the points (:mod:`.span`), exactly: W₁ = 0; the hinge gradients are combinations of the
    triplets' difference outer products, in the span; λI and the ball's scaling act on every
    direction alike; and the barycentre of an eigenspace that holds the complement of the span
    adds the same multiple of the identity to all of it. So every iterate is ``V A Vᵀ + c P``
    (V a basis of the span, P the projector onto its complement, of dimension m = d − q), as
    are their average and its projection: the fit runs on the q span coordinates and the one
    scalar c, which enters the norm, the trace, λ_min and the final projection with
    multiplicity m. ``"eigenvector"`` does not: its v off the span is arbitrary.

    Parameters
    ----------
    lam, tau, constraint : as :class:`~.lowrank_sgd.SGDIncSVD` (``constraint="spectral"`` uses
        the spectral ball as B).
    step : float, default=1.0
        Constant step η (searched in the paper).
    gamma : float, default=1.0
        γ of the augmented Lagrangian (not given by Zhang & Zhang; Mahdavi et al. tie it to the
        bounds of the problem).
    batch_size : int, default=10
        Triplets per stochastic gradient (not stated in the paper; the SGD-Batch value).
    max_iter, log_every, n_eval, random_state : as :class:`~.lowrank_sgd.SGDIncSVD`. The logged
        objective is that of the final solution's rule (projected average) at that iteration.
    memory_limit_gb : float or None, default=None
        As :class:`~.lowrank_dense.LowRankGD`.
    subgradient : {"eigenvector", "eigenspace"}, default="eigenvector"
        The element of ∂g at a multiple λ_min (above); eigenvalues within ``TIE_RTOL`` · ‖W‖_F
        of λ_min count as λ_min. Only ``"eigenspace"`` solves in the span of the points.
    verbose : int, default=0
        0: silent; 1: one line at the end of the fit (iterations, objective, seconds); 2 and
        more: also one line at every logged objective (every ``log_every`` iterations).

    Attributes
    ----------
    trace_ : dict of ndarray
        Per iteration: ``objective`` (evaluation-subset estimate, every ``log_every``),
        ``multiplier`` (μ_{t+1}), ``time`` (seconds since the start of ``fit``).
    optimality_ : float
        NaN: no stopping rule (``optimality_measure`` ``"none (fixed number of iterations)"``).
    span_dim_ : int or None
        q after a fit in the span of the points, None after a fit in all d coordinates.

    References
    ----------
    M. Mahdavi, T. Yang, R. Jin, S. Zhu and J. Yi. Stochastic gradient descent with only one
    projection. NIPS 2012. J. Zhang and L. Zhang. AAAI 2017, §Experiments. A. S. Lewis and
    M. L. Overton. Eigenvalue optimization. Acta Numerica 5, 1996.
    """

    #: with the "eigenspace" subgradient: zero off the span, unless the final projection keeps
    #: a positive multiple of the identity there (``_span_complement_scale``)
    span_complement = "zero"
    #: the rule of the results computed before the choice existed
    neutral_params = {"subgradient": "eigenvector"}

    _schedule = "constant"
    _n_dense = 6    # W, the running average of the iterates and the step's arrays at the peak
    _parameter_constraints: dict = lowrank_constraints(
        "lam", "tau", "constraint", "step", "batch_size", "max_iter", "log_every", "n_eval",
        "random_state", gamma=[Interval(Real, 0, None, closed="left")],
        memory_limit_gb=MEMORY_LIMIT, subgradient=[StrOptions({"eigenvector", "eigenspace"})])

    def __init__(self, lam=0.1, tau=1.0, constraint="frobenius", step=1.0, gamma=1.0,
                 batch_size=10, max_iter=500, log_every=10, n_eval=10000, random_state=0,
                 memory_limit_gb=None, subgradient="eigenvector", verbose=0):
        store_params(self, locals())

    def _solves_in_span(self) -> bool:
        """With the ``"eigenspace"`` subgradient only (class docstring)."""
        return super()._solves_in_span() and self.subgradient == "eigenspace"

    def _span_complement_scale(self) -> float:
        return self._complement

    def _prepare(self, X, triplets):
        super()._prepare(X, triplets)
        q = X.shape[1]
        self._m = getattr(self, "_off_span_dim", 0)    # the complement's dimensions
        self._mu, self._v, self._avg, self._count = 0.0, None, np.zeros((q, q)), 0
        self._c = self._avg_c = self._complement = 0.0  # W, the average, the result off it
        self._rng = np.random.default_rng(0)            # Lanczos's start vectors

    def _min_eigpair(self, W):
        d = len(W)
        if d <= top_eigen.DENSE_EIGH_MAX_DIM:
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

    def _lowest(self, W, tol):
        """The eigenpairs of W within ``tol`` of its smallest eigenvalue (ascending).

        Lanczos finds λ_min but not its multiplicity (from one start vector it sees one vector
        per distinct eigenvalue), so the eigenspace comes from LAPACK's ``syevr`` restricted
        to the eigenvalues up to ``λ_min + tol``: a dense reduction of W, on the q span
        coordinates when the fit solves in the span.
        """
        d = len(W)
        if not W.any():  # W₁ = 0, where μ = 0 and only λ_min = 0 is needed
            return np.zeros(1), np.eye(d, 1)
        bound = None
        if d > top_eigen.DENSE_EIGH_MAX_DIM:
            try:  # a random start: the last vector's Krylov space may miss a part of W
                lam = eigsh(W, k=1, which="SA", v0=self._rng.standard_normal(d), tol=1e-10,
                            return_eigenvectors=False)
                bound = float(lam[0]) + 2 * tol
            except (ArpackNoConvergence, ArpackError):
                bound = None
        if bound is None:
            lam = scipy.linalg.eigh(W, subset_by_index=[0, 0], eigvals_only=True)
            bound = float(lam[0]) + 2 * tol
        lam, V = scipy.linalg.eigh(W, subset_by_value=(-np.inf, bound))
        keep = lam <= lam[0] + tol
        return lam[keep], V[:, keep]

    def _min_eigenspace(self, W):
        """``(λ_min, U, k, off)`` of the whole iterate: U an orthonormal basis of the part of
        λ_min's eigenspace on these coordinates, k the eigenspace's dimension and ``off``
        whether it holds the complement of the span."""
        if self.subgradient == "eigenvector":
            lam, v = self._min_eigpair(W)
            self._v = v
            return lam, v[:, None], 1, False
        # λ_min from a random start even while μ = 0 (only g(W) is needed then): from the last
        # vector Lanczos would miss a lower eigenvalue off the span in all coordinates
        c, m = self._c, self._m
        tol = TIE_RTOL * np.sqrt(np.vdot(W, W) + m * c * c)
        lams, U = self._lowest(W, tol)
        lam = min(lams[0], c) if m else lams[0]
        U = U[:, lams <= lam + tol]
        off = bool(m) and c <= lam + tol
        if U.shape[1]:
            self._v = U[:, 0]
        return float(lam), U, U.shape[1] + (m if off else 0), off

    def _update(self, t, W, G, eta):
        lam_min, U, k, off = self._min_eigenspace(W)
        W_new = np.multiply(G, -eta)                   # W − η(G + λI + μ ∂g(W))
        W_new.flat[::len(W) + 1] -= eta * self.lam
        c = self._c - eta * self.lam                   # the same, off the span
        if self._mu > 0:                               # μ ∂g(W) = −(μ/k) U Uᵀ
            share = eta * self._mu / k
            if U.shape[1] == 1:
                W_new += np.outer(U[:, 0], share * U[:, 0])
            elif U.shape[1]:
                W_new += (U * share) @ U.T
            if off:
                c += share
        W_new += W
        m = self._m
        if self.constraint == "frobenius":
            norm = np.sqrt(np.vdot(W_new, W_new) + m * c * c) if m else np.linalg.norm(W_new)
        else:
            norm = max(np.linalg.norm(W_new, 2), abs(c)) if m else np.linalg.norm(W_new, 2)
        if norm > self.tau:
            W_new *= self.tau / norm
            c *= self.tau / norm
        self._mu = max(0.0, (1 - self.gamma * eta) * self._mu - eta * lam_min)
        self._count += 1
        self._avg *= (self._count - 1) / self._count  # the running mean of the iterates
        self._avg += W_new / self._count
        self._c = c
        self._avg_c += (c - self._avg_c) / self._count
        return W_new, {"multiplier": self._mu}

    def _report(self, W):
        return self._final(W)

    def _final(self, W):
        mu, V = eigh_all(self._avg)
        m = self._m
        if not m:
            return _from_top_eigenpairs(
                V, project_eigenvalues(mu, 0.0, self.tau, self.constraint))[0]
        s = project_eigenvalues(np.append(mu, np.full(m, self._avg_c)), 0.0, self.tau,
                                self.constraint)
        self._complement = float(s[-1])
        return _from_top_eigenpairs(V, s[:-m])[0]

    def _trace(self, W):
        return np.trace(W) + self._m * self._complement
