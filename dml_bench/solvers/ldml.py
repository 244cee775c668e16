"""LDML: logistic discriminant metric learning (Guillaumin, Verbeek & Schmid 2009).

Part of the solver stage. LDML maximises the logistic log-likelihood of the pair labels by
gradient ascent; the distances of all pairs are computed row-wise from ``X M`` (n×d×d flops,
never a d×d matrix per pair; ``linalg.pair_quadratic_forms``) and the gradient
``Σ_n (p_n − t_n)(x_i − x_j)(x_i − x_j)ᵀ`` is one weighted pair outer sum
(``linalg.PairOuterSum``).
"""

from __future__ import annotations

import time
from numbers import Integral, Real

import numpy as np
import scipy.special
from sklearn.utils._param_validation import Interval, StrOptions

from .base import VERBOSE, MetricLearner, report_progress, store_params, warn_not_converged
from .baselines import _set_linear_map
from .linalg import PairOuterSum, components_from_psd, pair_quadratic_forms, project_psd



class LDML(MetricLearner):
    """Logistic discriminant metric learning (Guillaumin, Verbeek & Schmid 2009, LDML section).

    The probability that pair n = (i, j) is similar is ``p_n = σ(b − d_M(x_i, x_j))`` with
    ``d_M = (x_i − x_j)ᵀ M (x_i − x_j)`` and the log-likelihood of the pair labels t_n (1:
    similar, 0: dissimilar) is ``ℒ(M, b) = Σ_n t_n ln p_n + (1 − t_n) ln(1 − p_n)``. It is
    concave in (M, b) (d_M is linear in M) and maximised by gradient ascent with
    ``∂ℒ/∂M = Σ_n (p_n − t_n)(x_i − x_j)(x_i − x_j)ᵀ`` (one weighted pair outer sum) and
    ``∂ℒ/∂b = Σ_n (t_n − p_n)``. The original ignores the PSD constraint (``psd=False``); with
    ``psd=True`` each step is projected on the PSD cone (one d×d eigendecomposition per step).

    The step is chosen by backtracking (Armijo) on ℒ/N, so ℒ increases monotonically; it grows
    by 1.5× after every accepted step.

    Parameters
    ----------
    psd : bool, default=False
        Project M on the PSD cone after every step (projected gradient ascent).
    max_iter : int, default=5000
    tol : float, default=1e-3
        Stop when the optimality measure (norm of the gradient mapping of ℒ/N, ``kkt``) is below
        ``tol`` or the relative increase of ℒ is below ``tol · 1e-3``. On z-scored iris / wine /
        breast cancer / digits (pairs of k = 3 triplets, 70 % split) 1e-3 takes 231 / 263 /
        1 285 / 706 steps (≤ 1.7 s); 1e-6 stopped short at 1 000 steps on all four, and on
        breast cancer still after 2·10⁴. The paper configs pin ``tol=1e-6, max_iter=1000``.
    learning_rate : float, default=1.0
        Initial step on ℒ/N (the data are rescaled so the mean pair distance at M = I is 1).
    init_b : {"mean", float}, default="mean"
        Initial bias b (in the rescaled units): "mean" is 1, the mean distance at M = I.
    verbose : int, default=0
        0: silent; 1: one line at the end of the fit (iterations, objective, gradient-mapping
        norm, converged, seconds); 2 and more: also one line per iteration.

    Attributes
    ----------
    metric_ : ndarray (d, d)
        LᵀL: M itself when PSD, otherwise M with its negative eigenvalues clipped (the metric
        ``transform`` uses).
    raw_metric_ : ndarray (d, d)
        The M maximising ℒ (possibly indefinite with ``psd=False``).
    span_dim_ : int or None
        The dimension q of the span of the training points it solved in (Notes), None when it
        solved in all d coordinates.
    span_basis_ : ndarray of shape (d, ``span_dim_``) or None
        The orthonormal basis V of that span.
    bias_ : float
        b.
    objective_ : float
        ℒ(M, b), the log-likelihood (sum over pairs).
    optimality_ : float
        The gradient-mapping norm of ℒ/N (``kkt``, what ``tol`` tests) at the returned (M, b)
        (``optimality_measure`` ``"projected_gradient_norm"``).
    trace_ : dict
        Per iteration ``objective`` (ℒ), ``kkt`` (gradient-mapping norm of ℒ/N), ``step``,
        ``time``.

    Notes
    -----
    With more features than training points LDML solves in the span of the points
    (:mod:`.span`), exactly: M starts at I, every gradient ``∂ℒ/∂M`` is a combination of pair
    differences' outer products, and the PSD projection keeps the eigenvalue 1 of the
    complement; the distances, ℒ, b and the step rule are the same on the span coordinates. Off
    the span the returned metric is ``I/s``, with s the mean squared pair distance that the data
    are rescaled by.

    References
    ----------
    M. Guillaumin, J. Verbeek, C. Schmid. Is that you? Metric learning approaches for face
    identification. ICCV 2009.
    """

    constraint_kind = "pairs"
    #: M = I + (a combination of pair outer products) in the rescaled units (Notes)
    span_complement = "identity"
    optimality_measure = "projected_gradient_norm"
    _parameter_constraints: dict = {
        "psd": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "init_b": [StrOptions({"mean"}), Interval(Real, None, None, closed="neither")],
        "verbose": VERBOSE,
    }

    def __init__(self, psd=False, max_iter=5000, tol=1e-3, learning_rate=1.0, init_b="mean",
                 verbose=0):
        store_params(self, locals())

    def _fit(self, X, y, constraints):
        start = time.perf_counter()
        pairs = np.vstack([constraints.similar, constraints.dissimilar]).astype(np.int64)
        t = np.r_[np.ones(len(constraints.similar)), np.zeros(len(constraints.dissimilar))]
        if len(pairs) == 0:
            raise ValueError("LDML needs similar and/or dissimilar pairs")
        d = X.shape[1]
        Xc = X - X.mean(axis=0)
        diff = Xc[pairs[:, 0]] - Xc[pairs[:, 1]]
        scale = float(np.einsum("ij,ij->", diff, diff) / len(pairs))  # mean ‖x_i − x_j‖²
        scale = scale if scale > 0 else 1.0
        Xs = Xc / np.sqrt(scale)  # units where the mean distance at M = I is 1
        M = np.eye(d)
        b = 1.0 if self.init_b == "mean" else float(self.init_b)
        N = len(pairs)
        f, p = ldml_loglik(Xs, pairs, t, M, b)
        outer_sum = PairOuterSum(Xs, pairs)
        step = self.learning_rate

        def ascent(M, b, p):
            """The gradient of ℒ/N at (M, b) and the norm of its gradient mapping."""
            GM, Gb = ldml_gradient(outer_sum, t, p)
            GM /= N
            Gb /= N
            return GM, Gb, _gradient_mapping_norm(M, b, GM, Gb, self.psd)

        trace = {k: [] for k in ("objective", "kkt", "step", "time")}
        converged, report = False, self.verbose >= 2
        for it in range(1, self.max_iter + 1):
            GM, Gb, kkt = ascent(M, b, p)
            if kkt <= self.tol:
                converged = True
                trace["objective"].append(f)
                trace["kkt"].append(kkt)
                trace["step"].append(0.0)
                trace["time"].append(time.perf_counter() - start)
                break
            while True:  # backtracking on ℒ/N
                M_new = M + step * GM
                b_new = b + step * Gb
                if self.psd:
                    M_new = project_psd(M_new, positive_only=True)[0]
                f_new, p_new = ldml_loglik(Xs, pairs, t, M_new, b_new)
                moved = (np.sum((M_new - M) ** 2) + (b_new - b) ** 2) / step
                if f_new / N >= f / N + 0.5 * moved or step < 1e-16:
                    break
                step *= 0.5
            rel = (f_new - f) / max(abs(f), 1e-300)
            M, b, f, p = M_new, b_new, f_new, p_new
            trace["objective"].append(f)
            trace["kkt"].append(kkt)
            trace["step"].append(step)
            trace["time"].append(time.perf_counter() - start)
            if report:
                report_progress(self, it, objective=f, kkt=kkt, step=step)
            step *= 1.5
            if 0 <= rel < self.tol * 1e-3:
                converged = True
                break
        M_orig = (M + M.T) / (2 * scale)  # back to the original units: d_M scales by 1/scale
        self._scale = scale
        self.raw_metric_ = M_orig
        self.bias_ = float(b)
        _set_linear_map(self, components_from_psd(M_orig), f, len(trace["time"]), converged,
                        trace, ascent(M, b, p)[2])
        if not converged:
            warn_not_converged(
                self, rule=(f"gradient-mapping norm of ℒ/N ≤ tol = {self.tol:g}, or relative "
                            f"increase of ℒ < tol·1e-3"),
                cap=f"max_iter = {self.max_iter} iterations",
                reached=f"gradient-mapping norm {self.optimality_:.3g}",
                hint="raise max_iter (or tol)")


    def _span_complement_scale(self) -> float:
        return 1.0 / self._scale

    def _lift_from_span(self, V: np.ndarray) -> None:
        self._span_lifts.keep("raw_metric_", vars(self).pop("raw_metric_"), 1.0 / self._scale)


def ldml_loglik(X, pairs, t, M, b) -> tuple[float, np.ndarray]:
    """``ℒ = Σ t ln σ(b − d) + (1 − t) ln σ(d − b)`` and ``p = σ(b − d)``, stably, with the
    distances ``d = (x_i − x_j)ᵀ M (x_i − x_j)`` from ``X M`` (``linalg.pair_quadratic_forms``)."""
    z = b - pair_quadratic_forms(X @ M, X, pairs)
    f = -float(t @ np.logaddexp(0.0, -z) + (1 - t) @ np.logaddexp(0.0, z))
    return f, scipy.special.expit(z)


def ldml_gradient(outer_sum, t, p) -> tuple[np.ndarray, float]:
    """``∂ℒ/∂M = Σ (p − t)(x_i − x_j)(x_i − x_j)ᵀ`` (the pairs' ``linalg.PairOuterSum``, one
    GEMM) and ``∂ℒ/∂b = Σ (t − p)``."""
    return outer_sum(p - t), float(np.sum(t - p))


def _gradient_mapping_norm(M, b, GM, Gb, psd) -> float:
    """``‖(M, b) − Π((M, b) + ∇)‖`` (the gradient norm when unconstrained)."""
    if not psd:
        return float(np.sqrt(np.sum(GM ** 2) + Gb ** 2))
    return float(np.sqrt(np.sum((project_psd(M + GM, positive_only=True)[0] - M) ** 2) + Gb ** 2))

