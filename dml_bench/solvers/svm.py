"""The RBF-kernel SVM baseline of Shen et al. (2014), Table I: a classifier, not a metric.

It is evaluated by its own predictions (``evaluation = "predict"``), not by k-NN. Shen et al.
chose the kernel width γ from {2⁻¹⁵, 2⁻¹³, …, 2⁵} and C from {2⁻⁵, 2⁻³, …, 2¹⁵} on the validation
part; ``configs/shen2014_table1.yaml`` expresses that as a ``tune:`` block (:data:`SHEN2014_GRID`).
Those grids are libsvm's (Hsu, Chang & Lin's guide), which assumes every feature has first been
scaled to [-1, 1] by ``svm-scale``; ``scale="minmax"`` does that, fitted on the training part.

The multi-class SVM is libsvm's one-vs-one scheme (Chang & Lin 2011, §7), run here pair by pair:
each pair of classes is libsvm's own binary problem, fitted on its Gram matrix
(``kernel="precomputed"``) assembled from class blocks computed by GEMM, instead of libsvm's kernel
evaluations one at a time, and all pairs' decision values for new points come from one GEMM
against the support vectors. Same problems, same SMO, same votes.
"""

from __future__ import annotations

import time
from numbers import Real
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.preprocessing import MinMaxScaler
from sklearn.svm import SVC
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .base import ANY_VALUE, VERBOSE, ParamValidation, report_fit, store_params
from .linalg import check_square_memory

#: Shen et al. (2014) §IV-A: the grids searched on the validation set (libsvm's usual grid)
SHEN2014_GRID = {"C": [2.0 ** e for e in range(-5, 16, 2)],
                 "gamma": [2.0 ** e for e in range(-15, 6, 2)]}


def gaussian_gram(A, B, gamma, out=None):
    """``exp(−γ‖a − b‖²)`` for all rows a of A, b of B, through one GEMM, written into ``out``.

    ``‖a − b‖² = ‖a‖² + ‖b‖² − 2aᵀb``, clipped at 0 against rounding; ``out`` may be a block of a
    larger array (rows of unit stride), so no temporary of its size is made.
    """
    out = np.matmul(A, B.T, out=out)
    out *= 2.0 * gamma
    out -= gamma * np.einsum("ij,ij->i", A, A)[:, None]
    out -= gamma * np.einsum("ij,ij->i", B, B)[None, :]
    np.minimum(out, 0.0, out=out)
    return np.exp(out, out=out)


class ScaledKernelClassifier(ParamValidation, ClassifierMixin, BaseEstimator):
    """Shared plumbing of the Gaussian-kernel classifier baselines (SVM, kernel ELM).

    They consume labels, are evaluated by their own ``predict`` and may first map each feature
    onto [-1, 1] over the training points (``scale="minmax"``, libsvm's ``svm-scale``), applying
    the same map to the points they predict. Their ``fit`` checks the hyper-parameters first
    (``_parameter_constraints``, as :class:`~dml_bench.solvers.base.MetricLearner`).
    """

    constraint_kind: ClassVar[str] = "labels"
    evaluation: ClassVar[str] = "predict"
    _parameter_constraints: dict = {
        "C": [Interval(Real, 0, None, closed="neither")],
        "scale": [StrOptions({"minmax"}), None],
        "verbose": VERBOSE,
    }
    #: left out of a result's identity, as :attr:`.base.MetricLearner.neutral_params`
    neutral_params: ClassVar[dict] = {"verbose": ANY_VALUE}

    def _validate_fit(self, X, y):
        """scikit-learn's checks of the training data (they set ``n_features_in_``); sets
        ``classes_`` and returns X and each point's class index."""
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_, index = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 classes, got 1 class")
        return X, index

    def _validate_predict(self, X):
        """The points to predict, checked against the fitted data and scaled as it was."""
        check_is_fitted(self)
        return self._scaled(validate_data(self, X, dtype=np.float64, reset=False))

    def _fit_scaler(self, X):
        """Fit the feature scaling on the training points; returns them scaled."""
        self.scaler_ = MinMaxScaler(feature_range=(-1, 1)).fit(X) if self.scale else None
        return self._scaled(X)

    def _scaled(self, X):
        return X if self.scaler_ is None else self.scaler_.transform(X)


class SVM(ScaledKernelClassifier):
    """Gaussian-kernel SVM, libsvm's one-vs-one multi-class scheme on GEMM-computed Gram matrices.

    Its predictions are those of ``sklearn.svm.SVC(C, gamma, kernel="rbf")``: for each pair of
    classes i < j, libsvm's binary problem on those two classes' points (fitted through
    :class:`sklearn.svm.SVC` with ``kernel="precomputed"``); a point gets one vote from each pair,
    the class with most votes wins, ties going to the class that sorts first. A pair of n points
    needs its n×n Gram matrix (8n² bytes; ``MemoryError`` beforehand when it does not fit).

    Parameters
    ----------
    C : float, default=1.0
        Regularisation parameter.
    gamma : float or {"scale", "auto"}, default="scale"
        Kernel width γ of ``exp(−γ‖x − z‖²)``; ``"scale"`` is ``1 / (n_features · Var(X))`` and
        ``"auto"`` ``1 / n_features``, as in scikit-learn (X after the scaling).
    scale : {None, "minmax"}, default=None
        ``"minmax"``: map each feature affinely onto [-1, 1] over the training points (libsvm's
        ``svm-scale``) before the kernel; the same map is applied to the points predicted.
    verbose : int, default=0
        0: silent; 1 and more: one line at the end of the fit (libsvm's iterations, converged,
        seconds).

    Attributes
    ----------
    classes_ : ndarray (m,)
    pairs_ : ndarray (m(m−1)/2, 2)
        Class indices (i, j), i < j, of each binary problem, in libsvm's order.
    support_ : ndarray (s,)
        Indices of the training points that are a support vector of at least one pair.
    support_vectors_ : ndarray (s, d)
        Those points (after the scaling).
    dual_coef_ : ndarray (s, m(m−1)/2)
        Each pair's coefficients y_k α_k on the support vectors (0 outside that pair), signed so
        that a positive decision value votes for class j, as scikit-learn's binary ``SVC``.
    intercept_ : ndarray (m(m−1)/2,)
    gamma_ : float
        The kernel width used.
    n_iter_ : int
        Total libsvm iterations over the one-vs-one problems.
    objective_ : None
    converged_ : bool
        Whether every pair's SMO stopped before its iteration cap.
    optimality_ : float
        NaN: libsvm does not report the KKT violation its SMO stopping rule tests
        (``optimality_measure`` ``"none (not reported by libsvm)"``).
    trace_ : dict
        Empty (libsvm reports no per-iteration trace).

    References
    ----------
    C. Shen, J. Kim, F. Liu, L. Wang and A. van den Hengel. Efficient dual approach to distance
    metric learning. IEEE TNNLS 25(2), 2014, §IV-A.
    C.-C. Chang and C.-J. Lin. LIBSVM: a library for support vector machines. ACM TIST, 2011,
    §7 (one-against-one multi-class classification and its voting).
    C.-W. Hsu, C.-C. Chang and C.-J. Lin. A practical guide to support vector classification.
    Technical report, National Taiwan University, 2003, §2.2 (scaling) and §3.2 (grid search).
    """

    optimality_measure = "none (not reported by libsvm)"
    _parameter_constraints: dict = {
        **ScaledKernelClassifier._parameter_constraints,
        "gamma": [Interval(Real, 0, None, closed="neither"), StrOptions({"scale", "auto"})],
    }

    def __init__(self, C=1.0, gamma="scale", scale=None, verbose=0):
        store_params(self, locals())

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, constraints=None):
        """Fit the m(m−1)/2 binary SVMs on labelled points; ``constraints`` are ignored."""
        start = time.perf_counter()
        X, index = self._validate_fit(X, y)
        X = np.asarray(self._fit_scaler(X), dtype=np.float64)
        self.gamma_ = self._resolve_gamma(X)
        self.pairs_ = np.array([(i, j) for i in range(len(self.classes_))
                                for j in range(i + 1, len(self.classes_))])
        supports, coefs, intercepts, n_iter, capped = [], [], [], 0, False
        for members, gram in self._pair_grams(X, index):
            svc = SVC(C=self.C, kernel="precomputed").fit(gram, index[members])
            supports.append(members[svc.support_])
            coefs.append(svc.dual_coef_[0])
            intercepts.append(svc.intercept_[0])
            n_iter += int(svc.n_iter_[0])
            capped |= svc.max_iter > 0 and svc.n_iter_[0] >= svc.max_iter
        self.support_ = np.unique(np.concatenate(supports))
        self.support_vectors_ = X[self.support_]
        self.dual_coef_ = np.zeros((len(self.support_), len(self.pairs_)))
        for p, (rows, coef) in enumerate(zip(supports, coefs)):
            self.dual_coef_[np.searchsorted(self.support_, rows), p] = coef
        self.intercept_ = np.array(intercepts)
        self.n_iter_, self.objective_, self.converged_, self.trace_ = n_iter, None, not capped, {}
        self.optimality_ = float("nan")
        if self.verbose:
            report_fit(self, time.perf_counter() - start)
        return self

    def _pair_grams(self, X, index):
        """Yield (members, Gram matrix) of each pair i < j in libsvm's order, class i's points first.

        Each Gram matrix ``[[K_ii, K_ij], [K_ji, K_jj]]`` is assembled from the classes' own blocks
        K_kk, computed once (Σ n_k² entries), and the pair's K_ij, computed into place by one GEMM.
        """
        groups = [np.flatnonzero(index == k) for k in range(len(self.classes_))]
        check_square_memory("SVM class blocks", int(np.sqrt(sum(len(g) ** 2 for g in groups))),
                            1, "n")
        within = [gaussian_gram(X[g], X[g], self.gamma_) for g in groups]
        for block in within:  # K(x, x) = 1 exactly, as libsvm computes it
            np.fill_diagonal(block, 1.0)
        for i, j in self.pairs_:
            members = np.concatenate([groups[i], groups[j]])
            check_square_memory(f"SVM pair ({self.classes_[i]}, {self.classes_[j]})",
                                len(members), 1, "n")
            n = len(groups[i])
            gram = np.empty((len(members), len(members)))
            gram[:n, :n] = within[i]
            gram[n:, n:] = within[j]
            gaussian_gram(X[groups[i]], X[groups[j]], self.gamma_, out=gram[:n, n:])
            gram[n:, :n] = gram[:n, n:].T
            yield members, gram

    def _resolve_gamma(self, X):
        if self.gamma == "scale":
            variance = X.var()
            return 1.0 / (X.shape[1] * variance) if variance > 0 else 1.0
        if self.gamma == "auto":
            return 1.0 / X.shape[1]
        return float(self.gamma)

    def pair_decision_function(self, X, chunk=1024):
        """Each pair's decision value for each row of X, shape (n, m(m−1)/2); positive votes j.

        These are libsvm's one-vs-one values, those of
        ``SVC(decision_function_shape="ovo").decision_function`` negated (pairs in ``pairs_``).
        """
        Z = self._validate_predict(X)
        return np.vstack([gaussian_gram(Z[start:start + chunk], self.support_vectors_, self.gamma_)
                          @ self.dual_coef_ + self.intercept_ for start in range(0, len(Z), chunk)])

    def decision_function(self, X):
        """Decision values in scikit-learn's shape, consistent with :meth:`predict`.

        With two classes the pair's decision value, shape (n,), positive for ``classes_[1]``; with
        m > 2 classes each class's one-vs-one votes, shape (n, m), whose first maximum is the
        prediction. :meth:`pair_decision_function` gives the m(m−1)/2 pairs' values.
        """
        decision = self.pair_decision_function(X)
        return decision[:, 0] if len(self.classes_) == 2 else self._votes(decision).astype(float)

    def predict(self, X):
        """The class with most one-vs-one votes (ties: the class that sorts first, as libsvm)."""
        votes = self._votes(self.pair_decision_function(X))
        return self.classes_[np.argmax(votes, axis=1)]

    def _votes(self, decision):
        """Votes of each class from the pairs' decision values (n, m(m−1)/2) → (n, m)."""
        winners = np.where(decision >= 0, self.pairs_[:, 1], self.pairs_[:, 0])
        votes = np.zeros((len(decision), len(self.classes_)), dtype=int)
        np.add.at(votes, (np.arange(len(decision))[:, None], winners), 1)
        return votes
