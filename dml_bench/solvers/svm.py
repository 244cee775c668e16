"""The RBF-kernel SVM baseline of Shen et al. (2014), Table I: a classifier, not a metric.

It is evaluated by its own predictions (``evaluation = "predict"``), not by k-NN. Shen et al.
chose the kernel width γ from {2⁻¹⁵, 2⁻¹³, …, 2⁵} and C from {2⁻⁵, 2⁻³, …, 2¹⁵} on the validation
part; ``configs/shen2014_table1.yaml`` expresses that as a ``tune:`` block (:data:`SHEN2014_GRID`).
Those grids are libsvm's (Hsu, Chang & Lin's guide), which assumes every feature has first been
scaled to [-1, 1] by ``svm-scale``; ``scale="minmax"`` does that, fitted on the training part.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.preprocessing import MinMaxScaler
from sklearn.svm import SVC
from sklearn.utils.validation import check_is_fitted

#: Shen et al. (2014) §IV-A: the grids searched on the validation set (libsvm's usual grid)
SHEN2014_GRID = {"C": [2.0 ** e for e in range(-5, 16, 2)],
                 "gamma": [2.0 ** e for e in range(-15, 6, 2)]}


class ScaledKernelClassifier(ClassifierMixin, BaseEstimator):
    """Shared plumbing of the Gaussian-kernel classifier baselines (SVM, kernel ELM).

    They consume labels, are evaluated by their own ``predict`` and may first map each feature
    onto [-1, 1] over the training points (``scale="minmax"``, libsvm's ``svm-scale``), applying
    the same map to the points they predict.
    """

    constraint_kind: ClassVar[str] = "labels"
    evaluation: ClassVar[str] = "predict"

    def _fit_scaler(self, X):
        """Fit the feature scaling on the training points; returns them scaled."""
        if self.scale not in (None, "minmax"):
            raise ValueError(f"scale must be None or 'minmax', got {self.scale!r}")
        self.scaler_ = MinMaxScaler(feature_range=(-1, 1)).fit(X) if self.scale else None
        return self._scaled(X)

    def _scaled(self, X):
        return X if self.scaler_ is None else self.scaler_.transform(X)


class SVM(ScaledKernelClassifier):
    """Gaussian-kernel SVM (libsvm through :class:`sklearn.svm.SVC`), one-vs-one multi-class.

    Parameters
    ----------
    C : float, default=1.0
        Regularisation parameter.
    gamma : float or {"scale", "auto"}, default="scale"
        Kernel width γ of ``exp(−γ‖x − z‖²)``.
    scale : {None, "minmax"}, default=None
        ``"minmax"``: map each feature affinely onto [-1, 1] over the training points (libsvm's
        ``svm-scale``) before the kernel; the same map is applied to the points predicted.

    Attributes
    ----------
    svc_ : SVC
        The fitted scikit-learn estimator.
    scaler_ : MinMaxScaler or None
        The fitted feature scaling (``scale="minmax"``).
    n_iter_ : int
        Total libsvm iterations over the one-vs-one problems.
    objective_ : None
    converged_ : bool
    trace_ : dict
        Empty (libsvm reports no per-iteration trace).

    References
    ----------
    C. Shen, J. Kim, F. Liu, L. Wang and A. van den Hengel. Efficient dual approach to distance
    metric learning. IEEE TNNLS 25(2), 2014, §IV-A.
    C.-C. Chang and C.-J. Lin. LIBSVM: a library for support vector machines. ACM TIST, 2011.
    C.-W. Hsu, C.-C. Chang and C.-J. Lin. A practical guide to support vector classification.
    Technical report, National Taiwan University, 2003, §2.2 (scaling) and §3.2 (grid search).
    """

    def __init__(self, C=1.0, gamma="scale", scale=None):
        self.C = C
        self.gamma = gamma
        self.scale = scale

    def fit(self, X, y, constraints=None):
        """Fit the SVM on labelled points; ``constraints`` are ignored (labels are used)."""
        self.svc_ = SVC(C=self.C, gamma=self.gamma, kernel="rbf").fit(self._fit_scaler(X), y)
        self.classes_ = self.svc_.classes_
        self.n_iter_ = int(np.sum(self.svc_.n_iter_))
        self.objective_ = None
        self.converged_ = bool(np.all(self.svc_.n_iter_ < self.svc_.max_iter)
                               if self.svc_.max_iter > 0 else True)
        self.trace_ = {}
        return self

    def predict(self, X):
        check_is_fitted(self, "svc_")
        return self.svc_.predict(self._scaled(X))
