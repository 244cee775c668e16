"""SDML: sparse distance metric learning by ℓ1-penalised log-determinant regularisation
(Qi, Tang, Zha, Chua & Zhang 2009).

The metric is the minimiser of the LogDet divergence to a prior metric M₀, plus a loss on the
labelled pairs and an ℓ1 penalty on the off-diagonal entries of M (the paper's objective):

    min_{M ≻ 0}  tr(M₀⁻¹ M) − log det M  +  η tr(K M)  +  λ ‖M‖_{1,off},

with ``‖M‖_{1,off} = Σ_{i≠j} |M_ij|``. The pair loss is ``tr(K M)`` with ``K = Xᵀ L X``: L is the
Laplacian of the signed pair graph (weight +1 on a similar pair, −1 on a dissimilar one), so
``tr(K M) = Σ_S d_M² − Σ_D d_M²`` (pulls similar pairs together, pushes dissimilar ones apart).
Writing ``P = M₀⁻¹ + η K``, the problem is ``min_{M ≻ 0} tr(P M) − log det M + λ ‖M‖_{1,off}``:
the graphical lasso with P in the place of the empirical covariance and M in that of the
precision matrix, which the paper solves by block coordinate descent (Banerjee et al. 2008;
Friedman et al. 2008). Here that is scikit-learn's ``sklearn.covariance.graphical_lasso``.

Without the ℓ1 term the problem is bounded below only when P is positive definite: if
``vᵀ P v < 0``, ``tr(P M)`` falls without bound along ``M + t v vᵀ`` while ``−log det M`` grows
only like ``−log t``. (A large λ can make up for a mildly indefinite P, but the graphical lasso
starts from P and needs it positive definite.) With dissimilar pairs, K is indefinite, so P is
positive definite exactly for ``η < η_max``; ``fit`` computes η_max and refuses a larger
``balance_param`` in one line (no silent shift of P, which would change the problem), and
``balance_param="auto"`` picks ``min(1, η_max / 2)``.

The paper's section and equation numbers are not cited: its text was not at hand to check them
against, so the equations are written out in full instead.
"""

from __future__ import annotations

import time
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.linalg
from sklearn.covariance import graphical_lasso
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from .base import VERBOSE, MetricLearner, store_params, warn_not_converged
from .linalg import components_from_psd, weighted_pair_outer_sum

PRIORS = ("identity", "covariance")


class SDML(MetricLearner):
    """Sparse distance metric learning (Qi et al. 2009), by the graphical lasso.

    Parameters
    ----------
    balance_param : float or "auto", default="auto"
        η, the weight of the pair loss ``tr(K M)``. P = M₀⁻¹ + ηK must be positive definite,
        which holds for η below a bound η_max set by the pairs and the prior (∞ without
        dissimilar pairs); a float at or above it is refused with a one-line ``ValueError``
        stating η_max. ``"auto"``: η = min(1, η_max/2), half way to the bound (our choice; the
        paper tunes η on held-out data).
    sparsity_param : float, default=0.01
        λ ≥ 0, the weight of ``‖M‖_{1,off}`` (scikit-learn's ``alpha``; 0 gives M = P⁻¹).
    prior : {"identity", "covariance"}, default="identity"
        The prior M₀: the identity, or the inverse of the (biased) covariance of X, for which
        M₀⁻¹ is the covariance itself (refused in one line when it is singular).
    tol : float, default=1e-4
        Stopping tolerance of the graphical lasso on its dual gap and of its inner lasso solves
        (scikit-learn's ``tol`` and ``enet_tol``, whose defaults are both 1e-4).
    max_iter : int, default=100
        Cap on the sweeps of block coordinate descent (scikit-learn's ``max_iter``).
    verbose : int, default=0
        0: silent; 1: one line at the end of the fit (sweeps, objective, relative duality gap,
        converged, seconds); 2 and more: also scikit-learn's line per graphical-lasso sweep.

    Attributes
    ----------
    metric_ : ndarray (d, d)
        The learned M (positive definite, sparse off the diagonal for large λ).
    components_ : ndarray (d, d)
        L with M = LᵀL.
    balance_ : float
        The η used.
    balance_max_ : float
        η_max, the supremum of the η that keep P positive definite (``inf`` when K ⪰ 0 in the
        metric of M₀).
    objective_ : float
        ``tr(P M) − log det M + λ ‖M‖_{1,off}`` at the returned M (the paper's objective up to the
        constant ``log det M₀``).
    duality_gap_ : float
        The objective minus the value of the dual problem, ``max log det W + d`` over the W
        with ``W_ii = P_ii`` and ``|W_ij − P_ij| ≤ λ`` (i ≠ j), at the dual point W = M⁻¹
        clipped into that box (``inf`` if the clipped W is not positive definite): an upper bound
        on the sub-optimality of M, by weak duality.
    optimality_ : float
        ``duality_gap_ / max(|objective_|, 1)`` (``optimality_measure``
        ``"relative_duality_gap"``).
    n_iter_ : int
        Sweeps of the graphical lasso (0 when λ = 0 or d = 1: then M = P⁻¹ directly).
    converged_ : bool
        Whether the graphical lasso and its inner lasso solves met their tolerance within
        ``max_iter`` (scikit-learn's tests; False comes with one ConvergenceWarning).
    costs_ : ndarray (``n_iter_``, 2)
        Per sweep, scikit-learn's objective (the one above) and its dual gap.
    trace_ : dict of ndarray
        One record at the end of the fit (the graphical lasso reports no per-sweep times):
        ``iteration`` (``n_iter_``), ``objective``, ``duality_gap`` and ``time`` (seconds since the
        start of ``fit``).

    Notes
    -----
    The pairs are the similar and dissimilar pairs of the constraints, each weighted ±1 as
    given (a pair listed twice counts twice); triplets are not used. Without labels or pairs
    ``fit`` raises a one-line ``ValueError`` (``"SDML needs similar or dissimilar pairs; got only
    triplets"``).

    References
    ----------
    G.-J. Qi, J. Tang, Z.-J. Zha, T.-S. Chua and H.-J. Zhang. An efficient sparse metric
    learning in high-dimensional space via ℓ1-penalized log-determinant regularization.
    ICML 2009.
    J. Friedman, T. Hastie and R. Tibshirani. Sparse inverse covariance estimation with the
    graphical lasso. Biostatistics 9(3):432–441, 2008.
    O. Banerjee, L. El Ghaoui and A. d'Aspremont. Model selection through sparse maximum
    likelihood estimation for multivariate Gaussian or binary data. JMLR 9:485–516, 2008.
    """

    constraint_kind = "pairs"
    optimality_measure = "relative_duality_gap"

    _parameter_constraints: dict = {
        "balance_param": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "sparsity_param": [Interval(Real, 0, None, closed="left")],
        "prior": [StrOptions(set(PRIORS))],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "verbose": VERBOSE,
    }

    def __init__(self, balance_param="auto", sparsity_param=0.01, prior="identity", tol=1e-4,
                 max_iter=100, verbose=0):
        store_params(self, locals())

    def _constraints_needed(self):
        """Nothing here: :meth:`_fit` says in one line which kind is missing."""
        return ()

    def _fit(self, X, y, constraints):
        start = time.perf_counter()
        pairs, signs = signed_pairs(constraints, "SDML")
        K = weighted_pair_outer_sum(X, pairs, signs)  # Xᵀ L X of the signed pair graph
        A = prior_inverse(X, self.prior, "SDML")       # M₀⁻¹
        eta_max = largest_balance(A, K)
        eta = self._balance(eta_max)
        P = A + eta * K
        lam = float(self.sparsity_param)
        caught = []
        if len(P) == 1 or lam == 0:  # no penalty (no off-diagonal entry): M = P⁻¹
            M, costs, n_iter = np.linalg.inv(P), np.empty((0, 2)), 0
        else:
            with warnings.catch_warnings(record=True) as caught:  # said once, below
                warnings.simplefilter("always", ConvergenceWarning)
                _, M, costs, n_iter = graphical_lasso(
                    P, alpha=lam, tol=self.tol, enet_tol=self.tol, max_iter=self.max_iter,
                    return_costs=True, return_n_iter=True, verbose=self.verbose >= 2)
            for other in [w for w in caught if not issubclass(w.category, ConvergenceWarning)]:
                warnings.warn_explicit(other.message, other.category, other.filename,
                                       other.lineno)
            caught = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
        M = (M + M.T) / 2
        objective = sdml_objective(M, P, lam)
        gap = objective - sdml_dual_value(M, P, lam)
        self.metric_ = M
        self.components_ = components_from_psd(M)
        self.balance_ = eta
        self.balance_max_ = eta_max
        self.objective_ = objective
        self.duality_gap_ = float(max(gap, 0.0))
        self.optimality_ = self.duality_gap_ / max(abs(objective), 1.0)
        self.n_iter_ = int(n_iter)
        self.converged_ = not caught
        self.costs_ = np.asarray(costs, dtype=float).reshape(-1, 2)
        self.trace_ = {"iteration": np.array([self.n_iter_]), "objective": np.array([objective]),
                       "duality_gap": np.array([self.duality_gap_]),
                       "time": np.array([time.perf_counter() - start])}
        if caught:
            cap = f"max_iter = {self.max_iter} sweeps"
            warn_not_converged(
                self, rule=f"scikit-learn's graphical-lasso dual gap ≤ tol = {self.tol:g}",
                cap=cap, stopped=(None if self.n_iter_ >= self.max_iter else
                                  f"an inner lasso solve reached its cap ({cap}; scikit-learn: "
                                  f"{_one_line_message(caught[0])})"),
                reached=(f"scikit-learn's dual gap {self.costs_[-1, 1]:.3g}, relative duality gap "
                         f"{self.optimality_:.3g}" if len(self.costs_) else
                         f"relative duality gap {self.optimality_:.3g}"),
                hint="raise max_iter (or tol)")

    def _balance(self, eta_max: float) -> float:
        """η from ``balance_param`` and η_max; a one-line ``ValueError`` if P would not be
        positive definite."""
        if self.balance_param == "auto":
            return min(1.0, eta_max / 2)
        eta = float(self.balance_param)
        if eta >= eta_max:
            raise ValueError(
                f"SDML: P = M0^-1 + balance_param*K is not positive definite for "
                f"balance_param={eta:g} with these pairs and prior={self.prior!r} (it is for "
                f"balance_param < {eta_max:.4g}); lower balance_param or use "
                f"balance_param='auto'")
        return eta


def _one_line_message(record) -> str:
    """A recorded warning's text on one line."""
    return " ".join(str(record.message).split())


def signed_pairs(constraints, learner: str) -> tuple[np.ndarray, np.ndarray]:
    """The similar then the dissimilar pairs of ``constraints`` and their signs (+1, −1); a
    one-line ``ValueError`` naming ``learner`` when there are none."""
    similar = np.asarray(constraints.similar, dtype=np.intp).reshape(-1, 2)
    dissimilar = np.asarray(constraints.dissimilar, dtype=np.intp).reshape(-1, 2)
    if not len(similar) and not len(dissimilar):
        got = "only triplets" if len(constraints.triplets) else "no constraints"
        raise ValueError(f"{learner} needs similar or dissimilar pairs; got {got}")
    signs = np.concatenate([np.ones(len(similar)), -np.ones(len(dissimilar))])
    return np.vstack([similar, dissimilar]), signs


def prior_inverse(X: np.ndarray, prior: str, learner: str) -> np.ndarray:
    """M₀⁻¹ of the prior: the identity, or the biased covariance ``X̄ᵀX̄ / n`` of X (the inverse
    of M₀ = Σ⁻¹), refused in one line when it is singular."""
    d = X.shape[1]
    if prior == "identity":
        return np.eye(d)
    Xc = X - X.mean(axis=0)
    S = Xc.T @ Xc / len(X)
    low = float(np.linalg.eigvalsh(S)[0])
    if not low > 1e-12 * max(float(np.trace(S)) / d, np.finfo(float).tiny):
        raise ValueError(f"{learner}: prior='covariance' needs a nonsingular covariance of X "
                         f"(smallest eigenvalue {low:.3g}); use prior='identity'")
    return S


def largest_balance(A: np.ndarray, K: np.ndarray) -> float:
    """η_max = sup{η ≥ 0 : A + ηK ≻ 0} for a positive definite A and a symmetric K.

    With A = R Rᵀ (Cholesky), ``A + ηK = R (I + η R⁻¹ K R⁻ᵀ) Rᵀ``, positive definite iff
    ``1 + η μ > 0`` for every eigenvalue μ of ``R⁻¹ K R⁻ᵀ``: η_max = −1/μ_min when μ_min < 0,
    otherwise ∞.
    """
    R = np.linalg.cholesky(A)
    B = scipy.linalg.solve_triangular(R, K, lower=True)
    C = scipy.linalg.solve_triangular(R, B.T, lower=True)
    mu_min = float(np.linalg.eigvalsh((C + C.T) / 2)[0])
    return -1.0 / mu_min if mu_min < 0 else np.inf


def sdml_objective(M: np.ndarray, P: np.ndarray, lam: float) -> float:
    """``tr(P M) − log det M + λ Σ_{i≠j} |M_ij|`` (``inf`` when M is not positive definite)."""
    sign, logdet = np.linalg.slogdet(M)
    if sign <= 0:
        return np.inf
    off = np.abs(M).sum() - np.abs(np.diag(M)).sum()
    return float(np.vdot(P, M) - logdet + lam * off)


def sdml_dual_value(M: np.ndarray, P: np.ndarray, lam: float) -> float:
    """``log det W + d`` at W = M⁻¹ clipped into the dual's box ``|W_ij − P_ij| ≤ λ`` (i ≠ j),
    ``W_ii = P_ii``: a lower bound on the optimum (``−inf`` if that W is not positive definite).

    The dual of ``min tr(P M) − log det M + λ‖M‖_{1,off}`` is ``max log det W + d`` over that
    box (write ``λ|M_ij| = max_{|U_ij| ≤ λ} U_ij M_ij`` and minimise over M for fixed
    W = P + U), whose optimal W is the inverse of the optimal M.
    """
    W = np.clip(np.linalg.inv(M), P - lam, P + lam)
    np.fill_diagonal(W, np.diag(P))
    sign, logdet = np.linalg.slogdet((W + W.T) / 2)
    return float(logdet + len(M)) if sign > 0 else -np.inf
