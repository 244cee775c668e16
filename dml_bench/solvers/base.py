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

A fit that ends without meeting its stopping rule emits exactly one ``ConvergenceWarning``, in
the words of :func:`warn_not_converged`: the learner, why it stopped (its cap, mostly), the rule
with its tolerance, the optimality reached and what to change. Every registered solver takes
``verbose`` (:data:`VERBOSE`) as its last parameter: 1 prints :func:`report_fit`'s line at the
end of a fit, 2 and more also :func:`report_progress`'s lines at the solver's check points. It
changes no fit, so it is a neutral parameter (``neutral_params``) and enters no result's
identity (:func:`identifying_params`).
"""

from __future__ import annotations

import inspect
import math
import re
import time
import warnings
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import (BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin,
                          _fit_context)
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import (Hidden, Interval, InvalidParameterError, RealNotInt,
                                             validate_parameter_constraints)
from sklearn.utils.validation import check_is_fitted, validate_data

from ..constraints import Constraints, knn_triplets
from .span import (LeavesSpan, SpanLifts, check_fitted_metric, factored_components,
                   factored_transform, span_basis)
from .weak import WeaklySupervisedMixin, accepts_tuples

#: constraints of a seed of ``numpy.random.default_rng``: an int ≥ 0, or None for fresh entropy
#: (scikit-learn's ``"random_state"`` is for ``check_random_state``, which also takes a
#: ``RandomState``, a type ``default_rng`` refuses)
SEED = [Interval(Integral, 0, None, closed="left"), None]
#: constraints of ``memory_limit_gb``, the GiB a solver's large arrays may use (None: what is
#: available when ``fit`` starts; :func:`.linalg.check_square_memory`)
MEMORY_LIMIT = [Interval(Real, 0, None, closed="neither"), None]
#: constraints of ``verbose``, every registered solver's last constructor parameter: 0 prints
#: nothing, 1 one line at the end of each fit (:func:`report_fit`), 2 and more also a line at
#: each of the solver's check points (:func:`report_progress`)
VERBOSE = [Interval(Integral, 0, None, closed="left")]
#: a value of ``neutral_params`` meaning "any value" (output-only options such as ``verbose``)
ANY_VALUE = object()


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


class MetricLearner(WeaklySupervisedMixin, ParamValidation, ClassNamePrefixFeaturesOutMixin,
                    TransformerMixin, BaseEstimator):
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
    #: parameters that do not change the fit at the given value (``verbose`` at any value; an
    #: option at the value that reproduces the fit from before the option existed): left out of
    #: the identity of a result (:func:`identifying_params`), so that adding such an option keeps
    #: every finished result. A subclass's own dict adds to its bases' (:func:`identifying_params`
    #: merges them along the MRO), so ``verbose`` stays neutral in every learner
    neutral_params: ClassVar[dict] = {"verbose": ANY_VALUE}
    #: learners that learn from X alone set this: ``y`` is ignored, as in scikit-learn's
    #: unsupervised transformers (not validated, not passed to ``_fit``)
    ignores_y: ClassVar[bool] = False
    #: learners whose iterates stay the identity (``"identity"``) or zero (``"zero"``) off the
    #: span of the training points' differences set it: with more features than points they
    #: solve in that span (:mod:`.span`)
    span_complement: ClassVar[str | None] = None

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
        start = time.perf_counter()
        X, y = self._validated_data(X, None if self.ignores_y else y)
        if self.constraint_kind in ("pairs", "triplets"):
            if constraints is None:
                if y is None:
                    raise ValueError(f"{type(self).__name__} needs labels y or constraints")
                constraints = knn_triplets(X, y, k=_default_k(y))
            else:
                constraints = Constraints.validated(constraints, X.shape[0],
                                                    self._constraints_needed(),
                                                    type(self).__name__)
        self._fit_in_span_or_full(X, y, constraints)
        if getattr(self, "verbose", 0):  # a plug-in may have no `verbose`
            report_fit(self, time.perf_counter() - start)
        return self

    def _solves_in_span(self) -> bool:
        """Whether this fit, with these hyper-parameters, may solve in the span of the points
        (:mod:`.span`); a learner whose options can break it narrows this."""
        return self.span_complement in ("identity", "zero")

    def _span_pays(self, n: int, d: int) -> bool:
        """Whether the span's basis (an SVD of the n×d points, about 4n²d flops) costs less than
        it saves: always for a d×d iterate; a learner with a low-rank factor narrows this."""
        return True

    def _fit_in_span_or_full(self, X, y, constraints) -> None:
        """``_fit`` on the span coordinates ``X V`` and the metric lifted (:mod:`.span`) when
        the learner allows it, the points span fewer dimensions than X has, and the basis pays
        for itself (:meth:`_span_pays`); else on X. Sparse points are made dense for the basis
        only, an n×d array no larger than the basis itself; ``X V`` is dense."""
        vars(self).pop("_span_lifts", None)  # a previous fit's factored results
        start = time.perf_counter()
        V = (span_basis(X.toarray() if sp.issparse(X) else X)
             if self._solves_in_span() and X.shape[1] > X.shape[0]
             and self._span_pays(*X.shape) else None)
        if V is None or V.shape[1] >= X.shape[1]:
            self._off_span_dim = 0
            self._fit(X, y, constraints)
            if self.span_complement is not None:
                self.span_dim_ = self.span_basis_ = None
            return
        self._off_span_dim = X.shape[1] - V.shape[1]  # the identity's dimensions off the span
        try:
            Z = X @ V
            basis_seconds = time.perf_counter() - start
            self._fit(Z, y, constraints)
        except LeavesSpan:  # a step off the span: the same fit in all coordinates
            self._off_span_dim = 0
            self._fit(X, y, constraints)
            self.span_dim_ = self.span_basis_ = None
            return
        c = self._span_complement_scale()
        self._span_lifts = lifts = SpanLifts(V)  # the d×d results kept factored (:mod:`.span`)
        M_V = vars(self).pop("metric_", None)  # None: a learner given by L alone
        if c:  # M = c·I off the span, so L = √c·I there
            L_V = vars(self).pop("components_")
            lifts.keep("components_", L_V, np.sqrt(c))
            lifts.keep("metric_", L_V.T @ L_V if M_V is None else M_V, c)
        else:  # zero off the span: M = V M_V Vᵀ, L = L_V Vᵀ
            self.components_ = np.ascontiguousarray(self.components_ @ V.T)
            if M_V is not None:
                lifts.keep("metric_", M_V, 0.0)
        self._lift_from_span(V)
        trace = getattr(self, "trace_", None)
        if isinstance(trace, dict) and len(trace.get("time", ())):
            # a trace's times count from the start of the fit, the span's basis included
            trace["time"] = np.asarray(trace["time"], dtype=float) + basis_seconds
        self.span_dim_ = V.shape[1]
        self.span_basis_ = V

    def __getattr__(self, name):
        """A d×d attribute kept factored after a fit in the span, or the ``metric_ = LᵀL`` of a
        learner that stores only ``components_``, formed on this read."""
        lifts = vars(self).get("_span_lifts")
        if lifts is not None and name in lifts.parts:
            return lifts.lift(name)
        if name == "metric_" and "components_" in vars(self):
            L = vars(self)["components_"]
            return L.T @ L
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _span_complement_scale(self) -> float:
        """The multiple of the identity that the learner's metric is off the span after its fit:
        1 for ``"identity"`` and 0 for ``"zero"``, unless the learner rescales its metric (as
        LDML does) or its fit decides it (as DML-eig's, which is 0 after its first step)."""
        return 1.0 if self.span_complement == "identity" else 0.0

    def _lift_from_span(self, V: np.ndarray) -> None:
        """Lift the learner's other fitted d-sized attributes after a fit in the span (none
        here)."""

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

    @property
    def _n_features_out(self) -> int:
        """The columns of ``transform``: the rows of ``components_``. With it,
        ``get_feature_names_out()`` names them ``<class name lowercased>0``, ``…1``, …
        (scikit-learn's ``ClassNamePrefixFeaturesOutMixin``, as its
        ``NeighborhoodComponentsAnalysis``), and ``set_output(transform="pandas")`` gives a
        DataFrame with those columns."""
        check_fitted_metric(self)
        lifts = factored_components(self)
        if lifts is not None:
            return int(lifts.basis.shape[0])
        return int(np.shape(self.components_)[0])

    def transform(self, X):
        """Map ``X`` into the learned space: ``X Lᵀ`` (Euclidean there = ``d_M`` here); after a
        fit in the span, through L's factored form (:func:`.span.factored_transform`)."""
        check_fitted_metric(self)
        X = validate_data(self, X, dtype=self._input_dtypes(), reset=False,
                          accept_sparse="csr" if self.accepts_sparse else False)
        lifts = factored_components(self)
        if lifts is not None:
            return factored_transform(X, lifts)
        return np.asarray(X @ self.components_.T.astype(X.dtype, copy=False))

    def pair_distances(self, X, pairs):
        """Squared Mahalanobis distances of ``pairs`` (rows of indices into ``X``), row-wise;
        ``pairs`` is checked as the constraints of ``fit`` are (one-line ``ValueError``)."""
        pairs = Constraints.checked_indices("pairs", pairs, 2, X.shape[0])
        D = self.transform(X[pairs[:, 0]]) - self.transform(X[pairs[:, 1]])
        return np.einsum("ij,ij->i", D, D)


def identifying_params(estimator) -> dict:
    """``estimator.get_params()`` without the parameters that do not change its fit.

    Parameters
    ----------
    estimator : BaseEstimator
        A solver; the ``neutral_params`` (``{parameter: value}``, the value :data:`ANY_VALUE`
        for an output-only parameter such as ``verbose``) of its class and of every base class,
        merged along the MRO (a subclass's entry wins), name what is left out when the
        parameter holds that value.

    Returns
    -------
    dict
        The parameters that enter a result's identity (its task id).
    """
    neutral = {}
    for klass in reversed(type(estimator).__mro__):
        neutral.update(vars(klass).get("neutral_params", {}))
    return {name: value for name, value in estimator.get_params().items()
            if not (name in neutral and (neutral[name] is ANY_VALUE
                                         or _same_value(value, neutral[name])))}


def _same_value(value, neutral) -> bool:
    """``value`` is the neutral value: equal and of the same kind (``None`` only to ``None``)."""
    if neutral is None or value is None:
        return value is neutral
    try:
        return type(value) is type(neutral) and bool(value == neutral)
    except (TypeError, ValueError):  # arrays and other values without one truth value
        return False


def warn_not_converged(learner, *, rule: str, reached: str, cap: str | None = None,
                       stopped: str | None = None, hint: str | None = None) -> str:
    """Emit the one ``ConvergenceWarning`` of a fit that ends without meeting its stopping rule.

    Every solver says it the same way, in one line: who, why it stopped, the rule, the
    optimality reached and what to change, e.g. ``DMLEig did not converge: it reached the cap
    max_iter = 1000 iterations before its stopping rule (relative duality gap ≤ tol = 1e-05)
    held, at relative duality gap 3.2e-03; raise max_iter (or tol)``. A fit calls it at most
    once.

    Parameters
    ----------
    learner : estimator or str
        The solver (its class name is used) or a name.
    rule : str
        The stopping rule with its tolerance, e.g. ``"relative duality gap ≤ tol = 1e-05"``.
    reached : str
        The optimality at the end, e.g. ``"relative duality gap 3.2e-03"``.
    cap : str, optional
        The cap that ended the run, e.g. ``"max_iter = 1000 iterations"``.
    stopped : str, optional
        Why the run ended when not at ``cap`` (a failed line search, an unbounded problem);
        it should name the cap when there is one.
    hint : str, optional
        What to change, e.g. ``"raise max_iter (or tol)"``.

    Returns
    -------
    str
        The message.
    """
    name = learner if isinstance(learner, str) else type(learner).__name__
    why = stopped if stopped is not None else f"it reached the cap {cap}"
    message = (f"{name} did not converge: {why} before its stopping rule ({rule}) held, at "
               f"{reached}")
    if hint:
        message += f"; {hint}"
    message = _one_line(message)
    warnings.warn(message, ConvergenceWarning, stacklevel=2)
    return message


def rate_hint(n_iter: int, reached: float, tol: float, power: float = 1.0,
              rate: str = "O(1/t)", cap: str = "max_iter") -> str:
    """The hint of :func:`warn_not_converged` for a method whose optimality measure falls like
    ``t^-power``: about how many iterations ``tol`` would take from ``reached`` after
    ``n_iter``, e.g. ``"at its O(1/t) rate, tol = 1e-05 would take about 5e+06 iterations:
    raise max_iter, or tol"``."""
    if not (tol > 0 and reached > tol and n_iter > 0 and math.isfinite(reached)):
        return f"raise {cap} (or tol)"
    needed = n_iter * (reached / tol) ** (1.0 / power)
    return (f"at its {rate} rate, tol = {tol:g} would take about {needed:.1g} iterations: "
            f"raise {cap}, or tol")


def report_fit(estimator, seconds: float) -> None:
    """The line ``verbose ≥ 1`` prints at the end of a fit: iterations, objective, optimality
    (named by ``optimality_measure``), convergence and seconds, from the fitted attributes."""
    name = type(estimator).__name__
    parts = [f"{getattr(estimator, 'n_iter_', 0)} iterations"]
    objective = getattr(estimator, "objective_", None)
    if _finite_or_inf(objective):
        parts.append(f"objective {_number(objective)}")
    measure = getattr(estimator, "optimality_measure", None)
    optimality = getattr(estimator, "optimality_", None)
    if measure and _finite_or_inf(optimality):  # NaN: the solver has no optimality measure
        parts.append(f"{measure} {_number(optimality)}")
    parts.append(f"converged {getattr(estimator, 'converged_', True)}")
    parts.append(f"{seconds:.3g} s")
    print(f"[{name}] fit: " + ", ".join(parts), flush=True)


def report_progress(estimator, iteration, **values) -> None:
    """A progress line of ``verbose ≥ 2`` at one of a solver's check points:
    ``[DMLEig] iteration 10: objective 0.52, relative_gap 0.013`` (``estimator``: the solver or
    its name)."""
    name = estimator if isinstance(estimator, str) else type(estimator).__name__
    shown = ", ".join(f"{key} {_number(value)}" for key, value in values.items())
    print(f"[{name}] iteration {iteration}: {shown}", flush=True)


def _finite_or_inf(value) -> bool:
    """``value`` is a real number other than NaN (None, NaN and non-numbers are not shown)."""
    return (isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
            and not math.isnan(value))


def _number(value) -> str:
    """``value`` in a few digits (``%.6g`` for floats)."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    try:
        return f"{float(value):.6g}"
    except (TypeError, ValueError):
        return str(value)


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
