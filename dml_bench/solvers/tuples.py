"""Tuples of points as metric-learn takes them, and the learned distance on them.

The input side of :mod:`.weak`: tuples of points of shape (n, k, d), or rows of indices of shape
(n, k) into a preprocessor's data, checked (one-line ``ValueError`` naming the argument) and
turned into points and index rows (:func:`tuple_source`, :func:`distinct_points`); the learned
distances between their columns (:func:`column_distances`); and :class:`MahalanobisMixin`, the
metric as metric-learn exposes it (``get_mahalanobis_matrix``, ``get_metric``,
``pair_distance``, ``pair_score``), which every
:class:`~dml_bench.solvers.base.MetricLearner` has.
"""

from __future__ import annotations

import numpy as np

from .span import check_fitted_metric, factored_components, factored_transform

#: the tuples of each width, for the messages
NAMES = {2: "pairs", 3: "triplets", 4: "quadruplets"}


class MahalanobisDistance:
    """The learned distance ``f(u, v) = ‖L(u − v)‖ = √((u − v)ᵀ M (u − v))`` of two points.

    What :meth:`MahalanobisMixin.get_metric` returns: a picklable callable holding a copy of the
    learner's ``components_`` L (a later fit does not change it), for
    ``sklearn.neighbors.NearestNeighbors(metric=f)`` or ``scipy.spatial.distance.cdist(A, B, f)``.

    Parameters
    ----------
    components : array-like of shape (k, d)
        L, with M = LᵀL.
    """

    def __init__(self, components):
        self.components = np.array(components, dtype=np.float64)

    def __call__(self, u, v) -> float:
        """The distance of the points ``u`` and ``v`` (1-D, d features each)."""
        diff = np.asarray(u, dtype=np.float64) - np.asarray(v, dtype=np.float64)
        if diff.shape != (self.components.shape[1],):
            raise ValueError(f"u, v: expected two points of {self.components.shape[1]} features, "
                             f"got shapes {np.shape(u)} and {np.shape(v)}")
        z = self.components @ diff
        return float(np.sqrt(z @ z))

    def __repr__(self):
        return f"MahalanobisDistance(d={self.components.shape[1]})"


def tuple_ndim(X) -> int | None:
    """The number of dimensions of an array or nested list (None for ragged or other input)."""
    ndim = getattr(X, "ndim", None)
    if ndim is None and isinstance(X, (list, tuple)):
        try:
            ndim = np.ndim(X)
        except ValueError:  # ragged
            return None
    return ndim


def _kind_needs(learner, widths) -> str:
    """What ``learner`` learns from, for the messages."""
    if widths == (2,):
        return f"{learner} needs similar or dissimilar pairs"
    return f"{learner} needs " + " or ".join(NAMES[w] for w in widths)


def _shape_text(widths) -> str:
    return " or ".join(f"(n, {w}, d)" for w in widths)


def _float_dtype(estimator, dtype):
    """float32 for float32 input to a learner that keeps it, else float64."""
    keep = getattr(estimator, "preserves_float32", False) and dtype == np.float32
    return np.float32 if keep else np.float64


def _width_check(learner: str, width: int, widths) -> None:
    if width not in widths:
        got = NAMES.get(width, f"tuples of {width} points")
        raise ValueError(f"{_kind_needs(learner, widths)}; got only {got} (tuples of shape "
                         f"(n, {width}, d)); expected tuples of shape {_shape_text(widths)}")


def _point_tuples(estimator, X, widths, n_features=None) -> np.ndarray:
    """``X`` as a finite float array of shape (n, w, d) with w in ``widths``, or a one-line
    ``ValueError`` naming what is wrong."""
    learner = type(estimator).__name__
    try:
        a = np.asarray(X)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"tuples: expected an array of shape {_shape_text(widths)} "
                         f"({' '.join(str(exc).split())})") from None
    if a.ndim != 3:
        raise ValueError(f"tuples: expected an array of shape {_shape_text(widths)}, got shape "
                         f"{a.shape}")
    _width_check(learner, a.shape[1], widths)
    if a.dtype.kind not in "biuf":
        raise ValueError(f"tuples: expected numbers, got dtype {a.dtype}")
    if not len(a):
        raise ValueError(f"tuples: {learner} needs at least one tuple, got shape {a.shape}")
    if n_features is not None and a.shape[2] != n_features:
        raise ValueError(f"X has {a.shape[2]} features, but {learner} is expecting {n_features} "
                         f"features as input")
    a = a.astype(_float_dtype(estimator, a.dtype), copy=False)
    finite = np.isfinite(a)
    if not finite.all():
        t, p, f = np.unravel_index(np.argmin(finite), a.shape)
        raise ValueError(f"tuples: holds {a[t, p, f]} at tuple {t}, point {p}, feature {f}; the "
                         "features must be finite")
    return a


def _preprocessor_array(estimator, preprocessor) -> np.ndarray:
    """The data of ``preprocessor=``: a finite 2-D float array, or a one-line ``ValueError``."""
    try:
        P = np.asarray(preprocessor)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"preprocessor: expected an array of shape (n_samples, n_features) "
                         f"({' '.join(str(exc).split())})") from None
    if P.ndim != 2 or P.dtype.kind not in "biuf":
        raise ValueError(f"preprocessor: expected a numeric array of shape (n_samples, "
                         f"n_features), got shape {P.shape} of dtype {P.dtype}")
    P = P.astype(_float_dtype(estimator, P.dtype), copy=False)
    finite = np.isfinite(P)
    if not finite.all():
        row, col = np.unravel_index(np.argmin(finite), P.shape)
        raise ValueError(f"preprocessor: holds {P[row, col]} at row {row}, column {col}; the "
                         "features must be finite")
    return P


def _index_tuples(estimator, X, widths, n_rows: int) -> np.ndarray:
    """``X`` as an ``intp`` array of shape (n, w), w in ``widths``, of rows of a preprocessor of
    ``n_rows`` rows, or a one-line ``ValueError``."""
    learner = type(estimator).__name__
    try:
        a = np.asarray(X)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"tuples: expected indices of shape (n, {widths[0]}) into the "
                         f"preprocessor ({' '.join(str(exc).split())})") from None
    if a.ndim != 2:
        raise ValueError(f"tuples: with a preprocessor, expected rows of indices of shape "
                         f"(n, {' or '.join(map(str, widths))}), got shape {a.shape}")
    _width_check(learner, a.shape[1], widths)
    if not len(a):
        raise ValueError(f"tuples: {learner} needs at least one tuple, got shape {a.shape}")
    if a.dtype.kind == "f" and np.all(np.isfinite(a) & (a == np.round(a))):
        a = a.astype(np.intp)
    if a.dtype.kind not in "iu":
        raise ValueError(f"tuples: with a preprocessor, the tuples are row indices and must be "
                         f"integers, got dtype {a.dtype}")
    if a.min() < 0 or a.max() >= n_rows:
        bad = int(a.min()) if a.min() < 0 else int(a.max())
        raise ValueError(f"tuples: index {bad} is not a row of the preprocessor; indices must be "
                         f"in [0, {n_rows})")
    return a.astype(np.intp, copy=False)


def tuple_source(estimator, X, widths, preprocessor=None, n_features=None):
    """``(P, idx)``: points ``P`` of shape (m, d) and the tuples as rows ``idx`` (n, w) into it.

    From point tuples (n, w, d) (``P`` their points, row by row), or from index tuples (n, w)
    into ``preprocessor`` (given, or the fitted learner's ``preprocessor_``).
    """
    if preprocessor is None and tuple_ndim(X) != 3:
        preprocessor = getattr(estimator, "preprocessor_", None)
        if preprocessor is None:
            shape = np.shape(X) if tuple_ndim(X) is not None else "ragged"
            raise ValueError(f"tuples: expected an array of shape {_shape_text(widths)}, got "
                             f"shape {shape} (index rows need fit(..., preprocessor=X))")
    elif preprocessor is not None:
        if tuple_ndim(X) == 3:
            raise ValueError("preprocessor: given with tuples of points; pass the tuples as "
                             "rows of indices into it, or no preprocessor")
        preprocessor = _preprocessor_array(estimator, preprocessor)
    if preprocessor is not None:
        if n_features is not None and preprocessor.shape[1] != n_features:
            raise ValueError(f"X has {preprocessor.shape[1]} features, but "
                             f"{type(estimator).__name__} is expecting {n_features} features "
                             f"as input")
        return preprocessor, _index_tuples(estimator, X, widths, len(preprocessor))
    T = _point_tuples(estimator, X, widths, n_features)
    n, w, d = T.shape
    return T.reshape(n * w, d), np.arange(n * w).reshape(n, w)


def distinct_points(P: np.ndarray, idx: np.ndarray, by_value: bool):
    """The rows of ``P`` that ``idx`` references, each once in order of first appearance, and
    ``idx`` renumbered into them: ``(points, index)``.

    ``by_value``: rows with equal values are one point (point tuples); else rows are told apart
    by their index only (a preprocessor's rows).
    """
    flat = idx.ravel()
    if by_value:
        rows = np.ascontiguousarray(P[flat]) + 0.0  # −0.0 and 0.0 become one key
        keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        first = flat[first]
    else:
        _, first, inverse = np.unique(flat, return_index=True, return_inverse=True)
        first = flat[first]
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return P[first[order]], rank[inverse.ravel()].reshape(idx.shape).astype(np.intp)


def distinct_rows(a: np.ndarray) -> np.ndarray:
    """The distinct rows of ``a`` in order of first appearance."""
    if not len(a):
        return a
    _, first = np.unique(a, axis=0, return_index=True)
    return a[np.sort(first)]


def pair_labels(y, n: int, comparisons: bool = False) -> np.ndarray:
    """``y`` as an int array of n labels in {−1, +1}, or a one-line ``ValueError``: of pairs
    (+1 similar), or with ``comparisons`` of triplets or quadruplets (+1: the first pair is the
    closer)."""
    meaning = ("+1 (first pair closer) or -1 (second pair closer)" if comparisons
               else "+1 (similar) or -1 (dissimilar)")
    if y is None:
        raise ValueError(f"y: pairs need labels, {meaning}")
    y = np.asarray(y)
    if y.shape != (n,):
        raise ValueError(f"y: expected {n} labels (one per tuple), got shape {y.shape}")
    if y.dtype.kind not in "biuf" or not np.isin(y, (-1, 1)).all():
        bad = y[~np.isin(y, (-1, 1))][0].item() if y.dtype.kind in "biuf" else y.dtype
        raise ValueError(f"y: labels must be {meaning}, got {bad!r}")
    return y.astype(int)


def column_distances(estimator, P, idx, columns) -> np.ndarray:
    """``(n, len(columns))`` learned distances between the points of columns (a, b) of the
    tuples ``idx`` (rows of ``P``): ``‖L(x_a − x_b)‖``."""
    lifts = factored_components(estimator)
    L = None if lifts is not None else np.asarray(estimator.components_, dtype=np.float64)
    out = np.empty((len(idx), len(columns)))
    for c, (a, b) in enumerate(columns):
        D = np.asarray(P[idx[:, a]] - P[idx[:, b]], dtype=np.float64)
        Z = D @ L.T if lifts is None else factored_transform(D, lifts)
        out[:, c] = np.sqrt(np.einsum("ij,ij->i", Z, Z))
    return out


def fitted_tuples(estimator, X, widths):
    """``(P, idx)`` of :func:`tuple_source` for a fitted learner's tuple methods."""
    check_fitted_metric(estimator)
    return tuple_source(estimator, X, widths, n_features=estimator.n_features_in_)


class MahalanobisMixin:
    """The learned metric as metric-learn exposes it: M, a distance callable, pair distances."""

    def get_mahalanobis_matrix(self) -> np.ndarray:
        """M, the learned d×d metric (a copy of ``metric_``).

        Returns
        -------
        ndarray of shape (d, d)

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit``.
        """
        check_fitted_metric(self)
        M = getattr(self, "metric_", None)
        if M is None:
            L = np.asarray(self.components_)
            M = L.T @ L
        return np.array(M, copy=True)

    def get_metric(self) -> MahalanobisDistance:
        """The learned distance as a function of two points, ``f(u, v) = √((u − v)ᵀ M (u − v))``.

        Returns
        -------
        MahalanobisDistance
            A picklable callable on two 1-D points, holding a copy of ``components_``: for
            ``NearestNeighbors(metric=f)`` or ``scipy.spatial.distance.cdist(A, B, f)``.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit``.
        """
        check_fitted_metric(self)
        return MahalanobisDistance(self.components_)

    def pair_distance(self, pairs) -> np.ndarray:
        """The learned distances ``√((u − v)ᵀ M (u − v))`` of pairs (not squared).

        Parameters
        ----------
        pairs : array-like of shape (n, 2, d)
            Pairs of points; or rows of indices, (n, 2), into the preprocessor of a fit with one.

        Returns
        -------
        ndarray of shape (n,)

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit``.
        ValueError
            One line: ``pairs`` is not of that shape, has another number of features than the
            fit, or a non-finite value.
        """
        P, idx = fitted_tuples(self, pairs, (2,))
        return column_distances(self, P, idx, ((0, 1),))[:, 0]

    def pair_score(self, pairs) -> np.ndarray:
        """``−pair_distance(pairs)``: the higher, the more similar the pair.

        Parameters
        ----------
        pairs : array-like of shape (n, 2, d)
            Or rows of indices, (n, 2), after a fit with a preprocessor.

        Returns
        -------
        ndarray of shape (n,)
        """
        return -self.pair_distance(pairs)
