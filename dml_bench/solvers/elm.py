"""The kernel ELM baseline of Shen et al. (2014), Table I: a classifier, not a metric.

Huang, Zhou, Ding & Zhang (2012) §IV-B: with the kernel matrix ``Ω_ij = K(x_i, x_j)`` of the N
training points and the N×m target matrix T (``+1`` for a point's class, ``−1`` elsewhere, as in the
authors' code), the output weights are ``β = (I/C + Ω)⁻¹ T`` and a point x gets the outputs
``f(x) = [K(x, x_1), …, K(x, x_N)] β`` (Eq. (38)); its label is the class of the largest output.
It is kernel ridge regression on the ±1 class indicators. The kernel is Gaussian,
``K(u, v) = exp(−γ‖u − v‖²)``; Shen et al. chose "the kernel width" and C on the validation
part over the SVM's grids (:data:`svm.SHEN2014_GRID`), which we read as γ as for libsvm (the
ELM authors' code divides by its kernel parameter instead, ``exp(−‖u − v‖²/σ)``; the paper does
not say which). Like the SVM it may first scale each feature to [-1, 1] (``scale="minmax"``).

One N×N Cholesky solve: O(N³) time and O(N²) memory (Shen et al.'s ELM ran out of memory on
MNIST). With ``n_landmarks=m`` and more than m training points the kernel is replaced by its
Nyström approximation on m random landmarks (Williams & Seeger 2001; scikit-learn's
``Nystroem``), ``Ω ≈ Φ Φᵀ`` with Φ the N×m feature map. The same closed form on that kernel,
``β = (I/C + ΦΦᵀ)⁻¹ T``, gives the outputs ``f(x) = φ(x)ᵀ Φᵀ β = φ(x)ᵀ w`` with
``w = (ΦᵀΦ + I/C)⁻¹ Φᵀ T`` (the push-through identity): an m×m solve, O(N m² + m³) time and
O(N m) memory. It is an approximation of the method, a protocol choice to declare where used.
"""

from __future__ import annotations

import time
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import scipy.linalg
from sklearn.base import _fit_context
from sklearn.kernel_approximation import Nystroem
from sklearn.utils._param_validation import Interval

from .base import report_fit, store_params
from .svm import ScaledKernelClassifier, gaussian_gram


class KernelELM(ScaledKernelClassifier):
    """Kernel extreme learning machine with a Gaussian kernel (Huang et al. 2012, Eq. (38)).

    Parameters
    ----------
    C : float, default=1.0
        Regularisation parameter: the ridge added to Ω is ``I/C``.
    gamma : float, default=1.0
        γ of the kernel ``exp(−γ‖u − v‖²)``.
    scale : {None, "minmax"}, default=None
        ``"minmax"``: map each feature affinely onto [-1, 1] over the training points first.
    n_landmarks : int or None, default=None
        None: the exact N×N solve. An int m: with more than ``max_exact_n`` training points,
        the Nyström approximation of the kernel on m landmarks (module docstring); with at
        most that many, the exact solve.
    max_exact_n : int or None, default=None
        The most training points solved exactly when ``n_landmarks`` is set (None: m, so that
        the approximation is used whenever it has fewer landmarks than points).
    random_state : int or None, default=0
        Seed of the landmarks' draw (``n_landmarks``).
    verbose : int, default=0
        0: silent; 1 and more: one line at the end of the fit (a closed form: no progress).

    Attributes
    ----------
    classes_ : ndarray (m,)
    dual_coef_ : ndarray (N, m) or None
        The output weights β of the exact solve (None after a Nyström fit).
    X_fit_ : ndarray (N, d) or None
        The (scaled) training points the kernel is evaluated against (None after a Nyström
        fit).
    nystroem_ : Nystroem or None
        The fitted feature map φ of a Nyström fit (None after the exact solve).
    coef_ : ndarray (n_landmarks, m) or None
        The weights w of a Nyström fit, ``f(x) = φ(x)ᵀ w``.
    scaler_ : MinMaxScaler or None
    n_iter_ : int
        1 (a closed-form solve).
    objective_ : None
    converged_ : bool
    optimality_ : float
        0.0: a closed form (``optimality_measure`` ``"closed_form"``).
    trace_ : dict
        Empty.

    References
    ----------
    G.-B. Huang, H. Zhou, X. Ding and R. Zhang. Extreme learning machine for regression and
    multiclass classification. IEEE Trans. Syst. Man Cybern. B 42(2):513–529, 2012, Eq. (38).
    C. K. I. Williams and M. Seeger. Using the Nyström method to speed up kernel machines. NIPS
    13, 2001.
    C. Shen, J. Kim, F. Liu, L. Wang and A. van den Hengel. Efficient dual approach to distance
    metric learning. IEEE TNNLS 25(2), 2014, §IV-A.
    """

    optimality_measure = "closed_form"
    _parameter_constraints: dict = {
        **ScaledKernelClassifier._parameter_constraints,
        "gamma": [Interval(Real, 0, None, closed="neither")],
        "n_landmarks": [Interval(Integral, 1, None, closed="left"), None],
        "max_exact_n": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
    }
    #: the exact solve (no landmarks) is the fit from before the option
    neutral_params: ClassVar[dict] = {"n_landmarks": None, "max_exact_n": None,
                                      "random_state": 0}

    def __init__(self, C=1.0, gamma=1.0, scale=None, n_landmarks=None, max_exact_n=None,
                 random_state=0, verbose=0):
        store_params(self, locals())

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, constraints=None):
        """Solve for β on labelled points; ``constraints`` are ignored (labels are used)."""
        start = time.perf_counter()
        X, index = self._validate_fit(X, y)
        X = np.asarray(self._fit_scaler(X), dtype=float)
        T = -np.ones((len(X), len(self.classes_)))
        T[np.arange(len(X)), index] = 1.0
        self.nystroem_ = self.coef_ = self.dual_coef_ = self.X_fit_ = None
        if self.n_landmarks is not None and len(X) > (self.max_exact_n or self.n_landmarks):
            self.nystroem_ = Nystroem(kernel="rbf", gamma=self.gamma, n_components=self.n_landmarks,
                                      random_state=self.random_state).fit(X)
            Phi = self.nystroem_.transform(X)
            system = Phi.T @ Phi
            system[np.diag_indices_from(system)] += 1.0 / self.C
            self.coef_ = scipy.linalg.solve(system, Phi.T @ T, assume_a="pos", overwrite_a=True)
        else:
            system = gaussian_gram(X, X, self.gamma)
            system[np.diag_indices_from(system)] += 1.0 / self.C
            self.dual_coef_ = scipy.linalg.solve(system, T, assume_a="pos", overwrite_a=True)
            self.X_fit_ = X
        self.n_iter_, self.objective_, self.converged_, self.trace_ = 1, None, True, {}
        self.optimality_ = 0.0
        if self.verbose:
            report_fit(self, time.perf_counter() - start)
        return self

    def decision_function(self, X):
        """The m outputs ``f(x) = K(x, X_fit) β`` of each row of X, shape (n, m).

        With two classes only the output of ``classes_[1]``, shape (n,) (scikit-learn's binary
        convention): the other is its negative, the two columns of T being opposite.
        """
        outputs = self._outputs(X)
        return outputs[:, 1] if len(self.classes_) == 2 else outputs

    def predict(self, X):
        """The class of the largest output."""
        outputs = self._outputs(X)
        return self.classes_[np.argmax(outputs, axis=1)]

    def _outputs(self, X):
        Z = np.asarray(self._validate_predict(X), dtype=float)
        if self.nystroem_ is not None:
            return self.nystroem_.transform(Z) @ self.coef_
        return gaussian_gram(Z, self.X_fit_, self.gamma) @ self.dual_coef_
