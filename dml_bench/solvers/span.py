"""Solving in the span of the training points when they are fewer than the features.

Part of the solver stage. A learner whose objective sees the points only through their
differences ``x_i − x_j``, started at M = I (or L = I), changes M only in the span of those
differences: every update it makes is a sum of terms ``(x_i − x_j)(x_i − x_j)ᵀ`` multiplied by
the iterate on either side, so with V an orthonormal basis (d×q) of that span each iterate is
``I + V C Vᵀ`` and the complement of the span keeps M = I. The learner fitted on the
coordinates ``Z = X V`` (n×q, the same differences, distances and constraints) therefore
yields the full metric as ``M = I + V (M_Z − I) Vᵀ`` (and ``L = I + V (L_Z − I) Vᵀ``): the same
iterates in q ≤ n − 1 coordinates instead of d. A learner whose solution is a combination of
the constraints' ``(x_i − x_j)(x_i − x_j)ᵀ`` (a dual) is zero off the span:
``span_complement = "zero"``, ``M = V M_Z Vᵀ`` and ``L = L_Z Vᵀ``. Learners declare it with
``span_complement = "identity"`` and, where some option breaks it (another prior, a
rectangular L), :meth:`~dml_bench.solvers.base.MetricLearner._solves_in_span` says when it
holds; each states its own reason in its docstring. A learner whose iterate can leave the span
in some step raises :class:`LeavesSpan` there, and the fit runs again in all coordinates. The
fitted learner records q in ``span_dim_`` (None when it solved in all d coordinates).

After a fit in the span no d×d array is formed: the learner keeps V and the q×q results with
the multiple of the identity they take off the span (:class:`SpanLifts`). ``transform`` maps
points through that factored form in O(n d q) (:func:`factored_transform`), the spectrum comes
from the q×q factor, and a d×d attribute (``metric_``, an identity lift's ``components_``) is
formed only when it is read (:func:`lift_identity_complement`), so that a fit on 20,000 features
needs memory for the points and the span, not for d×d arrays.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from sklearn.utils.validation import check_is_fitted


class LeavesSpan(Exception):
    """Raised by a learner's fit in the span when its next iterate would leave the span (its
    step's direction lies off it), so that the fit runs again in all coordinates."""


def span_basis(X: np.ndarray) -> np.ndarray | None:
    """An orthonormal basis (d×q) of the span of the differences of the rows of X: the right
    singular vectors of the centred points over the singular values above numpy's rank
    cut-off; None when every point is the same."""
    _, s, Vt = scipy.linalg.svd(X - X.mean(axis=0), full_matrices=False, check_finite=False)
    if not len(s) or s[0] == 0:
        return None
    keep = s > s[0] * max(X.shape) * np.finfo(float).eps
    return np.ascontiguousarray(Vt[keep].T)


def lift_identity_complement(A: np.ndarray, V: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """``s I + V (A − s I) Vᵀ`` (d×d) of a q×q matrix A: the d×d matrix that is A on the span of
    V and ``s`` times the identity (``scale``, 1 by default) on its complement."""
    q = A.shape[0]
    B = V @ (A - scale * np.eye(q))
    out = B @ V.T
    out.flat[:: out.shape[0] + 1] += scale
    return out


class SpanLifts:
    """The d×d attributes of a learner fitted in the span, kept factored: per attribute name
    a q×q matrix A and a scale s, the attribute being ``s I + V (A − s I) Vᵀ``
    (:func:`lift_identity_complement`) with V the learner's ``span_basis_``."""

    def __init__(self, basis: np.ndarray):
        self.basis = basis
        self.parts: dict[str, tuple[np.ndarray, float]] = {}

    def keep(self, name: str, A: np.ndarray, scale: float) -> None:
        """Keep attribute ``name`` as the q×q ``A`` and its off-span ``scale``."""
        self.parts[name] = (np.asarray(A), float(scale))

    def lift(self, name: str) -> np.ndarray:
        """Attribute ``name`` formed as a d×d array (on each read; nothing is cached)."""
        A, scale = self.parts[name]
        return lift_identity_complement(A, self.basis, scale)


def span_lifts(estimator) -> SpanLifts | None:
    """The estimator's factored d×d attributes (None when it keeps them as arrays)."""
    return vars(estimator).get("_span_lifts")


def factored_components(estimator) -> SpanLifts | None:
    """The estimator's factored d×d attributes when they hold ``components_`` (an identity
    lift), else None (``components_`` is an array)."""
    lifts = span_lifts(estimator)
    return lifts if lifts is not None and "components_" in lifts.parts else None


def check_fitted_metric(estimator) -> None:
    """scikit-learn's ``NotFittedError`` before ``fit``; a learner fitted in the span counts as
    fitted without forming its d×d ``components_``."""
    if span_lifts(estimator) is None:
        check_is_fitted(estimator, "components_")


def factored_transform(X, lifts: SpanLifts) -> np.ndarray:
    """``X Lᵀ`` for ``L = s I + V (A − s I) Vᵀ`` (the kept ``components_``), as
    ``s X + (X V)(A − s I)ᵀ Vᵀ``: O(n d q) and no d×d array."""
    A, scale = lifts.parts["components_"]
    V = lifts.basis.astype(X.dtype, copy=False)
    inner = (A - scale * np.eye(A.shape[0])).T.astype(X.dtype, copy=False)
    out = ((X @ V) @ inner) @ V.T
    if scale:
        out = out + scale * X  # a sparse X too
    return np.asarray(out)
