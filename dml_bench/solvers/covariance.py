"""The inverse-covariance baseline: ``M = Σ⁻¹`` of the training points, no labels.

The classical Mahalanobis distance (Mahalanobis 1936): with the sample covariance
``Σ = (1/(n−1)) Σ_i (x_i − x̄)(x_i − x̄)ᵀ`` (one GEMM of the centred points) and its
eigendecomposition ``Σ = U Λ Uᵀ``, the map ``L = Λ^{−1/2} Uᵀ`` whitens the data and
``M = LᵀL = Σ⁻¹``. A singular Σ (fewer points than dimensions, collinear features) has no
inverse: the eigenvalues ``λ ≤ d · ε · λ_max`` (ε the float64 machine epsilon) count as zero and
``M`` is the Moore–Penrose pseudo-inverse ``Σ⁺``, i.e. L whitens the range of Σ and drops the
directions in which the training points do not vary.

With fewer points than dimensions (n ≤ d) the rank of Σ is at most n − 1 < d, and its
eigenpairs are taken from the thin SVD of the centred points, ``X_c = P S Vᵀ``:
``Σ = V (S²/(n−1)) Vᵀ``, at O(n²d) instead of the O(d³) of a d×d eigendecomposition. The cut-off
and the resulting ``M`` are the same.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from .base import VERBOSE, MetricLearner, store_params
from .linalg import eigh_all, metric_from_components


class Covariance(MetricLearner):
    """Mahalanobis distance of the training data's covariance: ``M = Σ⁻¹`` (``Σ⁺`` if singular).

    No hyper-parameter, no labels (``y`` is ignored); see the module docstring for the
    pseudo-inverse of a singular covariance.

    Parameters
    ----------
    verbose : int, default=0
        0: silent; 1 and more: one line at the end of the fit (a closed form: no progress).

    Attributes
    ----------
    covariance_ : ndarray of shape (d, d)
        Σ, the sample covariance (divisor n − 1, as ``numpy.cov``).
    components_ : ndarray of shape (``rank_``, d)
        ``L = Λ^{−1/2} Uᵀ`` over the eigenvalues of Σ counted as non-zero, in decreasing order
        of variance (a single zero row when Σ = 0, all training points equal).
    metric_ : ndarray of shape (d, d)
        ``M = LᵀL = Σ⁻¹`` (``Σ⁺``).
    rank_ : int
        The number of eigenvalues of Σ counted as non-zero.
    objective_, n_iter_, converged_ : float, int, bool
        NaN, 0 and True: a closed form optimises nothing.
    optimality_ : float
        0.0 (``optimality_measure`` ``"closed_form"``).
    trace_ : dict
        Empty: there are no iterations.

    References
    ----------
    P. C. Mahalanobis. On the generalised distance in statistics. Proceedings of the National
    Institute of Sciences of India 2(1):49–55, 1936.
    """

    constraint_kind = "none"
    optimality_measure = "closed_form"
    ignores_y = True

    _parameter_constraints: dict = {"verbose": VERBOSE}  # no hyper-parameter

    def __init__(self, verbose=0):
        store_params(self, locals())

    def _fit(self, X, y, constraints):
        n, d = X.shape
        centred = X - X.mean(axis=0)
        if 1 < n <= d:  # in the span of the points (module docstring): Σ is kept as its factor
            _, s, Vt = scipy.linalg.svd(centred, full_matrices=False, check_finite=False)
            lam, U = s * s / (n - 1), Vt.T  # decreasing
            keep = lam > d * np.finfo(float).eps * max(lam[0], 0.0)
            L = (U[:, keep] / np.sqrt(lam[keep])).T
            self._covariance = ("factor", centred / np.sqrt(n - 1))
        else:
            C = centred.T @ centred / (n - 1)
            lam, U = eigh_all(C)  # increasing
            keep = lam > d * np.finfo(float).eps * max(lam[-1], 0.0)
            L = (U[:, keep] / np.sqrt(lam[keep])).T[::-1]
            self._covariance = ("dense", C)
        if not len(L):
            L = np.zeros((1, d))
        self.rank_ = int(keep.sum())
        self.components_ = np.ascontiguousarray(L)
        self.objective_ = float("nan")
        self.n_iter_ = 0
        self.converged_ = True
        self.optimality_ = 0.0
        self.trace_ = {}

    @property
    def covariance_(self) -> np.ndarray:
        """Σ (d×d), formed on access from the centred points when they are fewer than the
        dimensions."""
        kind, value = self._covariance
        return value if kind == "dense" else value.T @ value

    @property
    def metric_(self) -> np.ndarray:
        """``M = LᵀL`` (d×d), formed on access from ``components_``."""
        return metric_from_components(self.components_)
