"""Base class of the metric learners (scikit-learn estimator conventions, as metric-learn).

A solver's constructor takes only hyper-parameters, stored unchanged by :func:`store_params`;
``fit`` learns ``metric_`` (M), ``components_`` (L with M = LᵀL), ``n_iter_``, ``objective_``,
``trace_`` (per-iteration objective, optimality measure and elapsed time) and ``optimality_``: the
optimality measure at the returned metric, named by the class attribute ``optimality_measure``
(``"relative_duality_gap"``, ``"closed_form"`` with value 0, ``"none (…)"`` with value NaN, …;
see each solver's Attributes). ``constraint_kind`` says what ``fit`` consumes: ``"pairs"``
(similar/dissimilar), ``"triplets"``, ``"labels"`` or ``"none"``.

``fit`` checks its arguments before any work, each fault a one-line ``ValueError`` naming the
argument: ``X`` (two-dimensional, finite, as scikit-learn's ``validate_data`` otherwise), ``y``,
and the constraints of a pairs or triplets solver (shape, integer indices that are rows of
``X``, and not empty where the solver needs them: :meth:`Constraints.validated`).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..constraints import Constraints, knn_triplets


class MetricLearner(TransformerMixin, BaseEstimator):
    """Mahalanobis metric learner: ``d_M(x, z)² = (x − z)ᵀ M (x − z)``."""

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

    def fit(self, X, y=None, constraints: Constraints | None = None):
        """Learn the metric.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Training inputs.
        y : array-like of shape (n,), optional
            Labels; used to build :func:`~dml_bench.constraints.knn_triplets` constraints when
            ``constraints`` is not given and the solver consumes pairs or triplets, with
            ``k = min(3, n_c − 1)`` for the smallest class size ``n_c`` (3 targets and impostors
            per point, fewer when a class is too small for 3 same-class neighbours).
        constraints : Constraints, optional
            Pairs/triplets indexing rows of ``X`` (checked by :meth:`Constraints.validated`;
            ignored by solvers that learn from labels or from nothing).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Before any work, in one line naming the argument: ``X`` is not two-dimensional, has
            fewer than 2 rows or a non-finite value; ``y`` does not match ``X``; the constraints
            are not pairs of shape (n, 2) / triplets of shape (n, 3) of integer indices in
            ``[0, n_samples)``, or lack what the solver learns from.
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
