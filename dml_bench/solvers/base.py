"""Base class of the metric learners (scikit-learn estimator conventions, as metric-learn).

A solver's constructor takes only hyper-parameters, stored unchanged by :func:`store_params`;
``fit`` learns ``metric_`` (M), ``components_`` (L with M = LᵀL), ``n_iter_``, ``objective_``,
``trace_`` (per-iteration objective, optimality measure and elapsed time) and ``optimality_``: the
optimality measure at the returned metric, named by the class attribute ``optimality_measure``
(``"relative_duality_gap"``, ``"closed_form"`` with value 0, ``"none (…)"`` with value NaN, …;
see each solver's Attributes). ``constraint_kind`` says what ``fit`` consumes: ``"pairs"``
(similar/dissimilar), ``"triplets"``, ``"labels"`` or ``"none"``.

``fit`` checks its arguments before any work, each fault a one-line ``ValueError`` naming the
argument: first the hyper-parameters, against the class's ``_parameter_constraints``
(scikit-learn's parameter-constraint machinery, run by its ``_fit_context`` decorator; the fault
an ``InvalidParameterError``), then ``X`` (two-dimensional, finite, as scikit-learn's
``validate_data`` otherwise), ``y``, and the constraints of a pairs or triplets solver (shape,
integer indices that are rows of ``X``, and not empty where the solver needs them:
:meth:`Constraints.validated`). :func:`param_problem` checks hyper-parameters against the same
constraints without an estimator, for the config reader.

metric-learn's user-facing API comes from :mod:`.weak`: ``get_mahalanobis_matrix``,
``get_metric``, ``pair_distance`` and ``pair_score`` on every learner, and on the pair and
triplet learners ``fit`` on tuples of points (``fit(pairs, y)`` with pairs of shape (n, 2, d),
``fit(triplets)``, or index tuples with ``preprocessor=X``), ``predict``, ``decision_function``,
``score`` and, for pairs, ``calibrate_threshold``. ``fit`` of a subclass that overrides it takes
tuples as well (:meth:`MetricLearner.__init_subclass__`). No constructor parameter is added, so
``get_params`` is unchanged.
"""

from __future__ import annotations

import inspect
import re
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import (Hidden, Interval, InvalidParameterError, RealNotInt,
                                             validate_parameter_constraints)
from sklearn.utils.validation import check_is_fitted, validate_data

from ..constraints import Constraints, knn_triplets
from .weak import WeaklySupervisedMixin, accepts_tuples

#: constraints of a seed of ``numpy.random.default_rng``: an int ≥ 0, or None for fresh entropy
#: (scikit-learn's ``"random_state"`` is for ``check_random_state``, which also takes a
#: ``RandomState``, a type ``default_rng`` refuses)
SEED = [Interval(Integral, 0, None, closed="left"), None]
#: constraints of ``memory_limit_gb``, the GiB a solver's large arrays may use (None: what is
#: available when ``fit`` starts; :func:`.linalg.check_square_memory`)
MEMORY_LIMIT = [Interval(Real, 0, None, closed="neither"), None]


class IntegralFloats(Interval):
    """Floats with an integral value in an interval (``1000.0`` where an int is expected).

    For the few counts whose code takes such floats (``int(value) == value``); wrap it in
    ``Hidden`` next to the ``Interval(Integral, …)`` of the same range, so that messages name
    only the int. Its type is ``RealNotInt``: scikit-learn refuses ``Integral`` and ``Real``
    intervals mixed in one parameter's constraints.
    """

    def __init__(self, left, right, *, closed):
        super().__init__(RealNotInt, left, right, closed=closed)

    def is_satisfied_by(self, val):
        return super().is_satisfied_by(val) and float(val).is_integer()

    def __str__(self):
        return super().__str__().replace("a float", "an integral float", 1)


def integral_floats(left, right=None, *, closed="left") -> Hidden:
    """``Hidden(IntegralFloats(left, right, closed=closed))``."""
    return Hidden(IntegralFloats(left, right, closed=closed))


#: the end of scikit-learn's message "The 'p' parameter of C must be … Got … instead."
_REFUSAL = re.compile(r" must be (?P<allowed>.*)\. Got (?P<got>.*) instead\.$", re.DOTALL)


def _one_line(text: str) -> str:
    """``text`` with its line breaks (a multi-line ``repr`` of an array) turned into spaces."""
    return re.sub(r"\s*\n\s*", " ", text.strip())


class ParamValidation:
    """Mixin of the solvers: hyper-parameters checked by scikit-learn's ``_validate_params``.

    A subclass declares ``_parameter_constraints`` (``{parameter: [constraints]}``, the syntax of
    ``sklearn.utils._param_validation``) and decorates its public ``fit`` with
    ``sklearn.base._fit_context``; the empty default validates nothing (plug-ins need not
    declare any). A fault is scikit-learn's ``InvalidParameterError`` ("The 'mu' parameter of
    DMLEig must be … Got … instead."), here always on one line.
    """

    _parameter_constraints: ClassVar[dict] = {}

    def _validate_params(self):
        try:
            super()._validate_params()
        except InvalidParameterError as exc:
            raise InvalidParameterError(_one_line(str(exc))) from None


def param_problem(cls, params: dict) -> tuple[str, str] | None:
    """The first constructor parameter of ``params`` that ``cls`` would refuse, without fitting.

    Parameters
    ----------
    cls : type
        A solver class; its ``_parameter_constraints`` are checked (scikit-learn's
        ``validate_parameter_constraints``). A class without them (a plug-in) refuses nothing.
    params : dict
        Constructor parameters by name, in the order they are checked. Names that ``cls`` has no
        constraint for are passed over (the config reader checks the names).

    Returns
    -------
    (name, message) or None
        The first parameter whose value fails its constraints, with a one-line message such as
        ``"must be a float in the range (0.0, inf), got '0.5'"``; None when all pass.
    """
    constraints = getattr(cls, "_parameter_constraints", None)
    if not isinstance(constraints, dict):
        return None
    for name, value in params.items():
        if name not in constraints:
            continue
        try:
            validate_parameter_constraints({name: constraints[name]}, {name: value},
                                           caller_name=cls.__name__)
        except InvalidParameterError as exc:
            found = _REFUSAL.search(str(exc))
            return name, _one_line(f"must be {found['allowed']}, got {found['got']}" if found
                                   else str(exc))
    return None


class MetricLearner(WeaklySupervisedMixin, ParamValidation, TransformerMixin, BaseEstimator):
    """Mahalanobis metric learner: ``d_M(x, z)² = (x − z)ᵀ M (x − z)``.

    Besides ``fit`` and ``transform``, metric-learn's API (:mod:`.weak`): ``get_mahalanobis_matrix``,
    ``get_metric``, ``pair_distance``, ``pair_score``; tuple input for the pair and triplet
    learners, with ``predict``, ``decision_function``, ``score`` (and ``calibrate_threshold`` for
    pairs) once fitted on tuples.
    """

    constraint_kind: ClassVar[str] = "none"
    #: what ``optimality_`` measures (set by every solver)
    optimality_measure: ClassVar[str]
    #: solvers that work on ``scipy.sparse`` CSR input without densifying ``X`` set this
    accepts_sparse: ClassVar[bool] = False
    #: solvers that keep float32 input in single precision for their hot products set this;
    #: the others convert it to float64
    preserves_float32: ClassVar[bool] = False
    #: what ``fit`` needs non-empty among the constraints, checked in order (``"pairs"``: similar
    #: or dissimilar pairs; ``"similar"``, ``"dissimilar"``, ``"triplets"``); None: at least one
    #: pair for a pairs solver, one triplet for a triplets solver
    required_constraints: ClassVar[tuple[str, ...] | None] = None

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.accepts_sparse
        tags.transformer_tags.preserves_dtype = (["float64", "float32"] if self.preserves_float32
                                                 else ["float64"])
        return tags

    def _input_dtypes(self):
        return [np.float64, np.float32] if self.preserves_float32 else np.float64

    def __init_subclass__(cls, **kwargs):
        """A subclass's own ``fit`` (one that takes ``constraints``) takes tuples too: it is
        wrapped by :func:`.weak.accepts_tuples`, as :meth:`fit` is."""
        super().__init_subclass__(**kwargs)
        fit = cls.__dict__.get("fit")
        if callable(fit) and "constraints" in inspect.signature(fit).parameters:
            cls.fit = accepts_tuples(fit)

    @accepts_tuples
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, constraints: Constraints | None = None):
        """Learn the metric.

        Parameters
        ----------
        X : array-like of shape (n, d), or tuples of shape (n, k, d)
            Training inputs. For a pair or triplet learner also tuples of points, metric-learn's
            convention: pairs (k = 2, with ``y`` ±1), triplets (k = 3: the second point closer
            to the first than the third is), quadruplets (k = 4, for a ``fit`` that takes
            ``quadruplets``); or, with ``preprocessor``, tuples of row indices, of shape (n, k).
            They are turned into the distinct points and index constraints on them (see
            :mod:`.weak`).
        y : array-like of shape (n,), optional
            Labels; used to build :func:`~dml_bench.constraints.knn_triplets` constraints when
            ``constraints`` is not given and the solver consumes pairs or triplets, with
            ``k = min(3, n_c − 1)`` for the smallest class size ``n_c`` (3 targets and impostors
            per point, fewer when a class is too small for 3 same-class neighbours). With
            tuples: +1 (similar) or −1 (dissimilar) per pair; per triplet or quadruplet
            optional, −1 turning it round.
        constraints : Constraints, optional
            Pairs/triplets indexing rows of ``X`` (checked by :meth:`Constraints.validated`;
            ignored by solvers that learn from labels or from nothing). Not with tuples.
        preprocessor : array-like of shape (n_samples, d), optional
            Keyword only: the points that index tuples are rows of. A fit parameter, not a
            constructor one, so that ``get_params`` does not change; kept as ``preprocessor_``
            for the tuple methods.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Before any work, in one line naming the argument: a hyper-parameter fails the
            class's ``_parameter_constraints`` (``InvalidParameterError``, a ``ValueError``);
            ``X`` is not two-dimensional, has fewer than 2 rows or a non-finite value; ``y``
            does not match ``X``; the constraints are not pairs of shape (n, 2) / triplets of
            shape (n, 3) of integer indices in ``[0, n_samples)``, or lack what the solver
            learns from; tuples are not of a width the learner learns from (``"ITML needs
            similar or dissimilar pairs; got only triplets …"``), pair labels are not ±1.
        """
        X, y = self._validated_data(X, y)
        if self.constraint_kind in ("pairs", "triplets"):
            if constraints is None:
                if y is None:
                    raise ValueError(f"{type(self).__name__} needs labels y or constraints")
                constraints = knn_triplets(X, y, k=_default_k(y))
            else:
                constraints = Constraints.validated(constraints, X.shape[0],
                                                    self._constraints_needed(),
                                                    type(self).__name__)
        self._fit(X, y, constraints)
        return self

    def _constraints_needed(self) -> tuple[str, ...]:
        """What ``fit`` needs non-empty among the constraints (see ``required_constraints``)."""
        if self.required_constraints is not None:
            return self.required_constraints
        return {"pairs": ("pairs",), "triplets": ("triplets",)}.get(self.constraint_kind, ())

    def _validated_data(self, X, y):
        """``(X, y)`` checked and converted by scikit-learn's ``validate_data``, each fault in
        one line: ``X`` must be two-dimensional with at least 2 rows and finite values."""
        ndim = getattr(X, "ndim", None)
        if ndim is None and isinstance(X, (list, tuple)):
            try:
                ndim = np.ndim(X)
            except ValueError:  # ragged rows: validate_data says so
                ndim = None
        if ndim is not None and ndim != 2:
            raise ValueError(f"X: expected a 2-D array of shape (n_samples, n_features), got "
                             f"{ndim}-D input of shape {np.shape(X)}")
        checks = dict(dtype=self._input_dtypes(), ensure_min_samples=2, ensure_all_finite=False,
                      accept_sparse="csr" if self.accepts_sparse else False)
        try:
            if y is None:
                X = validate_data(self, X, **checks)
            else:
                X, y = validate_data(self, X, y, **checks)
        except ValueError as exc:
            if "\n" not in str(exc):
                raise
            raise ValueError(" ".join(str(exc).split())) from exc
        _check_finite(X)
        return X, y

    def _fit(self, X, y, constraints):  # pragma: no cover - abstract
        raise NotImplementedError

    def transform(self, X):
        """Map ``X`` into the learned space: ``X Lᵀ`` (Euclidean there = ``d_M`` here)."""
        check_is_fitted(self, "components_")
        X = validate_data(self, X, dtype=self._input_dtypes(), reset=False,
                          accept_sparse="csr" if self.accepts_sparse else False)
        return np.asarray(X @ self.components_.T.astype(X.dtype, copy=False))

    def pair_distances(self, X, pairs):
        """Squared Mahalanobis distances of ``pairs`` (rows of indices into ``X``), row-wise;
        ``pairs`` is checked as the constraints of ``fit`` are (one-line ``ValueError``)."""
        pairs = Constraints.checked_indices("pairs", pairs, 2, X.shape[0])
        D = self.transform(X[pairs[:, 0]]) - self.transform(X[pairs[:, 1]])
        return np.einsum("ij,ij->i", D, D)


def store_params(estimator, params: dict) -> None:
    """Store a constructor's arguments as the estimator's attributes of the same names.

    Parameters
    ----------
    estimator : BaseEstimator
        The estimator being constructed.
    params : dict
        The constructor's ``locals()`` at its start: each argument is set unchanged (no copy, no
        check), as scikit-learn's ``get_params`` and ``clone`` expect; ``self`` and
        ``__class__`` are not arguments and are passed over.
    """
    for name, value in params.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)


def _check_finite(X) -> None:
    """A one-line ``ValueError`` naming the first non-finite entry of ``X`` (dense or CSR), if
    any; a finite sum spares the element-wise test."""
    values = X.data if sp.issparse(X) else X
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(values.sum()):
            return
    bad = ~np.isfinite(values)
    if not bad.any():  # the sum overflowed
        return
    first = int(np.argmax(bad.ravel()))
    value = float(values.ravel()[first])
    if sp.issparse(X):
        row, col = int(np.searchsorted(X.indptr, first, side="right")) - 1, int(X.indices[first])
    else:
        row, col = np.unravel_index(first, X.shape)
    name = "NaN" if np.isnan(value) else ("inf" if value > 0 else "-inf")
    raise ValueError(f"X: holds {name} at row {row}, column {col}; the features must be finite")


def _default_k(y, k: int = 3) -> int:
    """Targets and impostors per point of the constraints ``fit`` builds from labels alone.

    ``k`` (3, Ying & Li 2012 §5), lowered to ``n_c − 1`` when the smallest class has only
    ``n_c ≤ k`` points, so that every point keeps a same-class neighbour; a class of one point
    has none, which is an error.
    """
    classes, counts = np.unique(y, return_counts=True)
    if len(classes) >= 2 and counts.min() < 2:
        raise ValueError(f"building constraints from labels needs at least 2 points in every "
                         f"class; class {classes[counts.argmin()]} has 1")
    return int(min(k, counts.min() - 1))
