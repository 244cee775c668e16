"""metric-learn's user-facing API on the Mahalanobis learners: distances, tuples and classifiers.

Every :class:`~dml_bench.solvers.base.MetricLearner` has, through
:class:`~dml_bench.solvers.tuples.MahalanobisMixin`,
``get_mahalanobis_matrix()`` (M), ``get_metric()`` (a callable ``f(u, v)``, the distance
``√((u − v)ᵀ M (u − v))``, not squared, for ``NearestNeighbors(metric=f)`` or ``cdist``),
``pair_distance(pairs)`` and ``pair_score(pairs)`` (= −``pair_distance``: higher is more similar).

**Tuples.** A learner of pairs or triplets (``constraint_kind``) also learns from the tuples
themselves, metric-learn's weakly supervised convention: ``fit(pairs, y)`` with ``pairs`` of
shape (n, 2, d) and ``y`` in {−1, +1}; ``fit(triplets)`` of shape (n, 3, d), ``(a, b, c)`` asking
``b`` closer to ``a`` than ``c`` is; ``fit(quadruplets)`` of shape (n, 4, d),
``d(a, b) < d(c, d)``, for a learner whose ``fit`` takes ``quadruplets`` (LSML). ``fit`` tells
tuples from points by the number of dimensions (3) and turns them into what the learner learns
from: the distinct points, in order of first appearance, as ``X``, and the tuples as row indices
into it (:func:`accepts_tuples`). The same learner fitted on ``(X, constraints)`` is unchanged.

**Preprocessor.** Tuples may also be rows of indices into a data set:
``fit(pairs_idx, y, preprocessor=X)``, with ``pairs_idx`` of shape (n, 2). ``preprocessor`` is a
keyword of ``fit``, not a constructor parameter, so that ``get_params`` (and every task id and
result key built from it) stays what it is; the fitted learner keeps it as ``preprocessor_`` and
its tuple methods then take index rows too. For cross-validation over index tuples use
:class:`WeaklySupervised` (the learner and the data as one estimator), since scikit-learn would
slice a fit parameter whose length happens to equal the number of tuples.

**Classifiers.** After a tuple fit a pair learner is a classifier of pairs
(:class:`PairsClassifierMixin`): ``decision_function = pair_score − threshold_`` (positive:
similar), ``predict`` its sign as ±1, ``score`` the ROC AUC of ``pair_score``, and
``calibrate_threshold`` chooses ``threshold_`` (calibrated by accuracy on the training pairs at
the end of ``fit``; for a learner whose own ``fit`` learns a squared-distance threshold ``b``,
POLA's and MDML's ``threshold_``, it is ``−√b``, the learner's own rule). A triplet learner
classifies comparisons (:class:`ComparisonsClassifierMixin`): ``predict`` is +1 when the first
pair is the closer, ``score`` the accuracy.

These methods exist on an unfitted learner and after a tuple fit (or, for a pair learner, after
``calibrate_threshold`` or ``set_threshold``), not after a fit on points: there ``predict(X)`` of
a 2-D ``X`` has no meaning, and scikit-learn's estimator checks, which call every ``predict`` and
``score`` they find on 2-D data, keep seeing the transformer they test. The learners stay
transformers to scikit-learn, so ``cross_val_score`` splits them with ``KFold``, unshuffled:
shuffle the tuples, or pass ``cv=StratifiedKFold(...)``.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.metrics import roc_auc_score
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ..constraints import Constraints
from .span import check_fitted_metric, span_lifts
from .tuples import (MahalanobisMixin, column_distances, distinct_points, distinct_rows,
                     fitted_tuples, pair_labels, tuple_ndim, tuple_source)

#: the tuple widths a learner of each constraint kind learns from (4 too when ``fit`` takes
#: ``quadruplets``)
FIT_WIDTHS = {"pairs": (2,), "triplets": (3,)}
#: the strategies of :meth:`PairsClassifierMixin.calibrate_threshold`
THRESHOLD_STRATEGIES = ("accuracy", "f_beta", "max_tpr", "max_tnr")
#: the pairs of columns compared by a triplet (a, b, c) and a quadruplet (a, b, c, d)
_COMPARED = {3: ((0, 1), (0, 2)), 4: ((0, 1), (2, 3))}


def _forget_tuples(estimator) -> None:
    """Drop what a previous tuple fit left (``fit`` on points starts from none of it)."""
    for name in ("_tuple_fit", "preprocessor_", "threshold_"):
        estimator.__dict__.pop(name, None)


def accepts_tuples(fit):
    """Decorate a learner's ``fit(X, y=None, constraints=None, ...)`` to take tuples too.

    A 3-D ``X`` (point tuples) or a ``preprocessor`` (index tuples) is turned into the distinct
    points and :class:`~dml_bench.constraints.Constraints` on them (see the module docstring),
    and ``fit`` is called with those: pairs as ``constraints`` (similar: y = +1, dissimilar:
    y = −1); triplets as ``constraints.triplets`` together with their distinct ``(a, b)`` pairs as
    similar and ``(a, c)`` pairs as dissimilar (the pairs that
    :func:`~dml_bench.constraints.knn_triplets` makes with its triplets), a triplet of label −1
    turned round; quadruplets as ``quadruplets=``. Any other input goes to ``fit`` unchanged. The decorated function has
    ``fit``'s signature plus the keyword ``preprocessor``.
    """
    if getattr(fit, "accepts_tuples", False):
        return fit
    signature = inspect.signature(fit)
    takes_quadruplets = "quadruplets" in signature.parameters

    @functools.wraps(fit)
    def wrapper(self, X, y=None, *args, preprocessor=None, **kwargs):
        if preprocessor is None and tuple_ndim(X) != 3:
            _forget_tuples(self)
            return fit(self, X, y, *args, **kwargs)
        return _fit_tuples(self, fit, X, y, args, kwargs, preprocessor, takes_quadruplets)

    params = list(signature.parameters.values())
    keyword = inspect.Parameter("preprocessor", inspect.Parameter.KEYWORD_ONLY, default=None)
    at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
    wrapper.__signature__ = signature.replace(parameters=[*params[:at], keyword, *params[at:]])
    wrapper.accepts_tuples = True
    return wrapper


def _fit_tuples(self, fit, X, y, args, kwargs, preprocessor, takes_quadruplets):
    """The tuple branch of :func:`accepts_tuples`."""
    learner = type(self).__name__
    widths = FIT_WIDTHS.get(self.constraint_kind)
    if widths is None:
        what = "labels" if self.constraint_kind == "labels" else "the points alone"
        got = ("index tuples with a preprocessor" if preprocessor is not None
               else f"3-D input of shape {np.shape(X)}")
        raise ValueError(f"X: expected a 2-D array of shape (n_samples, n_features), got {got}; "
                         f"{learner} learns from {what}, not from tuples")
    if args or kwargs.get("constraints") is not None or kwargs.get("quadruplets") is not None:
        raise ValueError(f"constraints: {learner}.fit takes tuples, or X with constraints; not "
                         "both")
    kwargs = {k: v for k, v in kwargs.items() if k not in ("constraints", "quadruplets")}
    widths = widths + ((4,) if takes_quadruplets else ())
    self._validate_params()  # the hyper-parameters first, as fit checks them
    P, idx = tuple_source(self, X, widths, preprocessor)
    points, index = distinct_points(P, idx, by_value=preprocessor is None)
    _forget_tuples(self)
    if index.shape[1] == 2:
        labels = pair_labels(y, len(index))
        fit(self, points, None, constraints=Constraints(index[labels == 1], index[labels == -1]),
            **kwargs)
    else:
        signs = (np.ones(len(index), dtype=int) if y is None
                 else pair_labels(y, len(index), comparisons=True))
        turned = signs == -1
        if index.shape[1] == 3:
            index[turned] = index[turned][:, [0, 2, 1]]
            constraints = Constraints(distinct_rows(index[:, :2]),
                                      distinct_rows(index[:, [0, 2]]), index)
            fit(self, points, None, constraints=constraints, **kwargs)
        else:
            index[turned] = index[turned][:, [2, 3, 0, 1]]
            fit(self, points, None, quadruplets=index, **kwargs)
    self._tuple_fit = True
    if preprocessor is not None:
        self.preprocessor_ = P
    if self.constraint_kind == "pairs":
        own = self.__dict__.pop("threshold_", None)
        if own is not None:  # the learner's own squared-distance threshold b: d² ≤ b
            self.threshold_ = -float(np.sqrt(max(float(own), 0.0)))
        else:
            PairsClassifierMixin.calibrate_threshold(self, X, y, "accuracy")
    return self

class PairsClassifierMixin:
    """The classifier of pairs of a pair learner: similar (+1) when ``pair_score > threshold_``."""

    def decision_function(self, pairs) -> np.ndarray:
        """``pair_score(pairs) − threshold_``: positive for the pairs predicted similar.

        Parameters
        ----------
        pairs : array-like of shape (n, 2, d)
            Or rows of indices, (n, 2), after a fit with a preprocessor.

        Returns
        -------
        ndarray of shape (n,)
        """
        check_is_fitted(self, "threshold_")
        return self.pair_score(pairs) - self.threshold_

    def predict(self, pairs) -> np.ndarray:
        """+1 (similar) where ``decision_function(pairs) > 0``, else −1.

        Parameters
        ----------
        pairs : array-like of shape (n, 2, d)
            Or rows of indices, (n, 2), after a fit with a preprocessor.

        Returns
        -------
        ndarray of int, shape (n,)
        """
        return np.where(PairsClassifierMixin.decision_function(self, pairs) > 0, 1, -1)

    def score(self, pairs, y) -> float:
        """ROC AUC of ``pair_score(pairs)`` against the labels (``sklearn.metrics.roc_auc_score``).

        Parameters
        ----------
        pairs : array-like of shape (n, 2, d)
            Or rows of indices, (n, 2), after a fit with a preprocessor.
        y : array-like of shape (n,)
            +1 (similar) or −1 (dissimilar).

        Returns
        -------
        float
        """
        scores = self.pair_score(pairs)
        return float(roc_auc_score(pair_labels(y, len(scores)), scores))

    def set_threshold(self, threshold: float):
        """Set ``threshold_`` (on the ``pair_score`` scale: pairs scoring above it are similar).

        Parameters
        ----------
        threshold : float

        Returns
        -------
        self
        """
        check_fitted_metric(self)
        if isinstance(threshold, bool) or not np.isscalar(threshold) \
                or not np.isfinite(threshold):
            raise ValueError(f"threshold: expected a finite number, got {threshold!r}")
        self.threshold_ = float(threshold)
        self._tuple_fit = True
        return self

    def calibrate_threshold(self, pairs, y, strategy: str = "accuracy",
                            min_rate: float | None = None, beta: float = 1.0):
        """Choose ``threshold_`` on labelled pairs (a validation set, or the training pairs).

        Every distinct split of the pairs ordered by ``pair_score`` is a candidate: the k best
        scored predicted similar, for k = 0 … n, with ties on one side. Its threshold lies
        half-way between the k-th and the (k+1)-th score (exactly on the (k+1)-th where no float
        lies between), below all scores for k = n (the lowest score minus its magnitude, at
        least 1) and at the highest score for k = 0. Among equally good candidates the one with
        the fewest pairs predicted similar is taken. It replaces a ``threshold_`` that the
        learner's own ``fit`` set (POLA's b, MDML's µ: squared distances).

        Parameters
        ----------
        pairs : array-like of shape (n, 2, d)
            Or rows of indices, (n, 2), after a fit with a preprocessor.
        y : array-like of shape (n,)
            +1 (similar) or −1 (dissimilar).
        strategy : {"accuracy", "f_beta", "max_tpr", "max_tnr"}, default="accuracy"
            Maximise the accuracy; the F-beta score ``(1 + β²) TP / ((1 + β²) TP + β² FN + FP)``;
            the true-positive rate among the thresholds whose true-negative rate is at least
            ``min_rate`` (ties: the higher true-negative rate); or the true-negative rate among
            those whose true-positive rate is at least ``min_rate`` (ties: the higher
            true-positive rate).
        min_rate : float in [0, 1], optional
            Needed by ``"max_tpr"`` and ``"max_tnr"``.
        beta : float > 0, default=1.0
            β of ``"f_beta"``.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            One line naming the argument: an unknown ``strategy``, ``min_rate`` missing or
            outside [0, 1], ``beta`` not positive, labels not ±1, or a rate strategy without
            both similar and dissimilar pairs.
        """
        if strategy not in THRESHOLD_STRATEGIES:
            raise ValueError(f"strategy: expected one of {', '.join(THRESHOLD_STRATEGIES)}, got "
                             f"{strategy!r}")
        rate_ok = (min_rate is not None and not isinstance(min_rate, bool)
                   and np.isscalar(min_rate) and 0 <= min_rate <= 1)
        if strategy in ("max_tpr", "max_tnr") and not rate_ok:
            raise ValueError(f"min_rate: strategy={strategy!r} needs a rate in [0, 1], got "
                             f"{min_rate!r}")
        if strategy == "f_beta" and (isinstance(beta, bool) or not np.isscalar(beta)
                                     or not beta > 0 or not np.isfinite(beta)):
            raise ValueError(f"beta: expected a number > 0, got {beta!r}")
        scores = self.pair_score(pairs)
        labels = pair_labels(y, len(scores))
        if strategy in ("max_tpr", "max_tnr") and len(np.unique(labels)) < 2:
            raise ValueError(f"y: strategy={strategy!r} needs similar (+1) and dissimilar (-1) "
                             "pairs")
        self.threshold_ = best_threshold(scores, labels, strategy, min_rate, beta)
        self._tuple_fit = True
        return self


def best_threshold(scores, labels, strategy="accuracy", min_rate=None, beta=1.0) -> float:
    """The threshold of :meth:`PairsClassifierMixin.calibrate_threshold` for ``scores`` and
    ``labels`` (±1): +1 is predicted where ``score > threshold``."""
    s = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-s, kind="stable")
    s, positive = s[order], labels[order] == 1
    n = len(s)
    tp = np.concatenate([[0], np.cumsum(positive)])  # cut k: the k best predicted similar
    fp = np.arange(n + 1) - tp
    n_pos, n_neg = tp[-1], n - tp[-1]
    tn, fn = n_neg - fp, n_pos - tp
    valid = np.ones(n + 1, dtype=bool)
    valid[1:n] = s[:-1] > s[1:]  # a cut between equal scores cannot be made
    with np.errstate(divide="ignore", invalid="ignore"):
        if strategy == "accuracy":
            key = ((tp + tn) / n,)
        elif strategy == "f_beta":
            b2 = float(beta) ** 2
            denominator = ((1 + b2) * tp + b2 * fn + fp).astype(np.float64)
            key = (np.divide((1 + b2) * tp, denominator, out=np.zeros(n + 1),
                             where=denominator > 0),)
        else:
            tpr, tnr = tp / n_pos, tn / n_neg
            if strategy == "max_tpr":
                valid &= tnr >= min_rate
                key = (tpr, tnr)
            else:
                valid &= tpr >= min_rate
                key = (tnr, tpr)
    candidates = np.flatnonzero(valid)
    for k in key:
        values = k[candidates]
        candidates = candidates[values == values.max()]
    k = int(candidates[0])
    if k == 0:
        return float(s[0])
    if k == n:
        return float(s[-1] - max(1.0, abs(s[-1])))
    above, below = s[k - 1], s[k]
    middle = below + (above - below) / 2
    return float(middle if below < middle < above else below)


class ComparisonsClassifierMixin:
    """The classifier of triplets (a, b, c) and quadruplets (a, b, c, d) of a triplet learner:
    +1 when the first pair, (a, b), is the closer."""

    def decision_function(self, tuples) -> np.ndarray:
        """``d(a, c) − d(a, b)`` of triplets, ``d(c, d) − d(a, b)`` of quadruplets (the learned,
        not squared, distances): positive when the first pair is the closer.

        Parameters
        ----------
        tuples : array-like of shape (n, 3, d) or (n, 4, d)
            Triplets or quadruplets of points; or rows of indices, (n, 3) or (n, 4), after a fit
            with a preprocessor.

        Returns
        -------
        ndarray of shape (n,)
        """
        P, idx = fitted_tuples(self, tuples, (3, 4))
        D = column_distances(self, P, idx, _COMPARED[idx.shape[1]])
        return D[:, 1] - D[:, 0]

    def predict(self, tuples) -> np.ndarray:
        """+1 where ``decision_function(tuples) > 0`` (the first pair is the closer), else −1.

        Parameters
        ----------
        tuples : array-like of shape (n, 3, d) or (n, 4, d)
            Or rows of indices after a fit with a preprocessor.

        Returns
        -------
        ndarray of int, shape (n,)
        """
        return np.where(ComparisonsClassifierMixin.decision_function(self, tuples) > 0, 1, -1)

    def score(self, tuples, y=None) -> float:
        """Accuracy of ``predict``: the fraction of the comparisons it gets right.

        Parameters
        ----------
        tuples : array-like of shape (n, 3, d) or (n, 4, d)
            Or rows of indices after a fit with a preprocessor.
        y : array-like of shape (n,), optional
            +1 where the first pair is the closer, −1 where it is not; None: +1 for all (the
            tuples are written in their true order, as ``fit`` takes them).

        Returns
        -------
        float
        """
        predicted = ComparisonsClassifierMixin.predict(self, tuples)
        truth = 1 if y is None else pair_labels(y, len(predicted), comparisons=True)
        return float(np.mean(predicted == truth))


#: the classifier of each constraint kind
_CLASSIFIERS = {"pairs": PairsClassifierMixin, "triplets": ComparisonsClassifierMixin}


def _classifies_tuples(estimator) -> bool:
    """The tuple classifier's methods exist: a pair or triplet learner, unfitted or fitted on
    tuples (or given a threshold)."""
    return (getattr(estimator, "constraint_kind", None) in _CLASSIFIERS
            and (not _is_fitted(estimator) or estimator.__dict__.get("_tuple_fit", False)))


def _is_fitted(estimator) -> bool:
    """Fitted (``components_``, or its factored form after a fit in the span: not formed here)."""
    return span_lifts(estimator) is not None or "components_" in vars(estimator)


def _learns_pairs(estimator) -> bool:
    return getattr(estimator, "constraint_kind", None) == "pairs"


class WeaklySupervisedMixin(MahalanobisMixin):
    """The base class's share of the tuple API: the methods of :class:`PairsClassifierMixin`
    or :class:`ComparisonsClassifierMixin`, by ``constraint_kind``, where they exist (see the
    module docstring)."""

    @available_if(_classifies_tuples)
    def decision_function(self, X) -> np.ndarray:
        """Pairs: ``pair_score − threshold_``; triplets and quadruplets: ``d(second pair) −
        d(first pair)``. Positive: similar, or the first pair the closer.

        Parameters
        ----------
        X : array-like of shape (n, k, d)
            Or rows of indices, (n, k), after a fit with a preprocessor.
            Pairs (k = 2) of a pair learner; triplets (3) or quadruplets (4) of a triplet one.

        Returns
        -------
        ndarray of shape (n,)
        """
        return _CLASSIFIERS[self.constraint_kind].decision_function(self, X)

    @available_if(_classifies_tuples)
    def predict(self, X) -> np.ndarray:
        """+1 where ``decision_function(X) > 0``, else −1.

        Parameters
        ----------
        X : array-like of shape (n, k, d)
            Or rows of indices, (n, k), after a fit with a preprocessor.

        Returns
        -------
        ndarray of int, shape (n,)
        """
        return _CLASSIFIERS[self.constraint_kind].predict(self, X)

    @available_if(_classifies_tuples)
    def score(self, X, y=None) -> float:
        """Pairs: ROC AUC of ``pair_score`` (``y`` ±1 needed); comparisons: the accuracy of
        ``predict`` (``y`` optional, +1 for all by default).

        Parameters
        ----------
        X : array-like of shape (n, k, d)
            Or rows of indices, (n, k), after a fit with a preprocessor.
        y : array-like of shape (n,), optional

        Returns
        -------
        float
        """
        return _CLASSIFIERS[self.constraint_kind].score(self, X, y)

    @available_if(_learns_pairs)
    def calibrate_threshold(self, pairs, y, strategy: str = "accuracy",
                            min_rate: float | None = None, beta: float = 1.0):
        """See :meth:`PairsClassifierMixin.calibrate_threshold`.

        Parameters
        ----------
        pairs : array-like of shape (n, 2, d)
            Or rows of indices, (n, 2), after a fit with a preprocessor.
        y : array-like of shape (n,)
        strategy : {"accuracy", "f_beta", "max_tpr", "max_tnr"}, default="accuracy"
        min_rate : float in [0, 1], optional
        beta : float > 0, default=1.0

        Returns
        -------
        self
        """
        return PairsClassifierMixin.calibrate_threshold(self, pairs, y, strategy, min_rate, beta)

    @available_if(_learns_pairs)
    def set_threshold(self, threshold: float):
        """See :meth:`PairsClassifierMixin.set_threshold`.

        Parameters
        ----------
        threshold : float

        Returns
        -------
        self
        """
        return PairsClassifierMixin.set_threshold(self, threshold)


class WeaklySupervised(BaseEstimator):
    """A pair or triplet learner and the data its index tuples point into, as one estimator.

    ``fit(tuples, y)`` fits a clone of ``learner`` on rows of indices into ``preprocessor``
    (``learner.fit(tuples, y, preprocessor=preprocessor)``), so that ``cross_val_score`` and
    ``GridSearchCV`` split the tuples and never the data. ``get_params`` holds ``learner`` and
    ``preprocessor``; the learner's own parameters are unchanged (``learner__gamma`` in a grid).
    Without a preprocessor it takes point tuples, as the learner does.

    Parameters
    ----------
    learner : MetricLearner
        A learner of pairs or triplets.
    preprocessor : array-like of shape (n_samples, d), optional
        The points the tuples' indices are rows of.

    Attributes
    ----------
    learner_ : MetricLearner
        The fitted clone.
    """

    def __init__(self, learner, preprocessor=None):
        self.learner = learner
        self.preprocessor = preprocessor

    def fit(self, X, y=None):
        """Fit a clone of ``learner`` on the tuples.

        Parameters
        ----------
        X : array-like of shape (n, k) of indices into ``preprocessor``, or (n, k, d) of points
        y : array-like of shape (n,), optional
            Pair labels (±1); for comparisons optional.

        Returns
        -------
        self
        """
        kwargs = {} if self.preprocessor is None else {"preprocessor": self.preprocessor}
        self.learner_ = clone(self.learner).fit(X, y, **kwargs)
        return self

    def _fitted(self):
        check_is_fitted(self, "learner_")
        return self.learner_

    def decision_function(self, X):
        """The fitted learner's ``decision_function``."""
        return self._fitted().decision_function(X)

    def predict(self, X):
        """The fitted learner's ``predict``."""
        return self._fitted().predict(X)

    def score(self, X, y=None):
        """The fitted learner's ``score``."""
        return self._fitted().score(X, y)

    def calibrate_threshold(self, X, y, strategy="accuracy", min_rate=None, beta=1.0):
        """The fitted learner's ``calibrate_threshold``; returns self."""
        self._fitted().calibrate_threshold(X, y, strategy, min_rate, beta)
        return self

    def transform(self, X):
        """The fitted learner's ``transform`` (of points, not tuples)."""
        return self._fitted().transform(X)

    def pair_distance(self, pairs):
        """The fitted learner's ``pair_distance``."""
        return self._fitted().pair_distance(pairs)

    def pair_score(self, pairs):
        """The fitted learner's ``pair_score``."""
        return self._fitted().pair_score(pairs)

    def get_metric(self):
        """The fitted learner's ``get_metric()``."""
        return self._fitted().get_metric()

    def get_mahalanobis_matrix(self):
        """The fitted learner's ``get_mahalanobis_matrix()``."""
        return self._fitted().get_mahalanobis_matrix()
