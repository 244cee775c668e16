"""k-NN evaluation in the learned space (Ying & Li 2012, §5: k = 3), and retrieval precision
(Shen, Kim & Wang 2010, Fig. 3: :func:`retrieval_precision`).

Tie-breaking of the vote is explicit because it moves the numbers on many-class sets (ORL's 40
classes: a 1-1-1 vote changes the Euclidean error by several points):

- ``"nearest"`` (default): among the labels with the most votes, the one of the nearest such
  neighbour wins — the rule of the LMNN authors' code (Weinberger & Saul).
- ``"lowest"``: the lowest class index wins, as ``sklearn.neighbors.KNeighborsClassifier``.
"""

from __future__ import annotations

import numpy as np
from sklearn.neighbors import NearestNeighbors

TIE_BREAKS = ("nearest", "lowest")


def knn_predict(X_train, y_train, X_test, k: int = 3, tie_break: str = "nearest") -> np.ndarray:
    """Majority vote of the ``k`` nearest training points (Euclidean in the given space).

    Parameters
    ----------
    X_train, X_test : ndarray
        Points already mapped into the learned space (``solver.transform``).
    y_train : ndarray of int
        Training labels.
    k : int
        Number of neighbours.
    tie_break : {"nearest", "lowest"}
        Rule for labels with equal votes, see the module docstring.

    Returns
    -------
    ndarray
        Predicted labels of ``X_test``.
    """
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"tie_break must be one of {TIE_BREAKS}, got {tie_break!r}")
    nbrs = NearestNeighbors(n_neighbors=k, algorithm="brute").fit(X_train)
    return neighbour_vote(nbrs.kneighbors(X_test, return_distance=False), y_train, tie_break)


def neighbour_vote(neighbours, y_train, tie_break: str = "nearest") -> np.ndarray:
    """The majority label of each row of ``neighbours`` (indices into ``y_train``, nearest
    first), ties broken by ``tie_break`` (module docstring)."""
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"tie_break must be one of {TIE_BREAKS}, got {tie_break!r}")
    classes, y_idx = np.unique(y_train, return_inverse=True)
    neigh_labels = y_idx[neighbours]
    votes = np.zeros((len(neigh_labels), len(classes)), dtype=np.intp)
    np.add.at(votes, (np.arange(len(neigh_labels))[:, None], neigh_labels), 1)
    if tie_break == "lowest":
        return classes[votes.argmax(axis=1)]
    is_top = votes == votes.max(axis=1, keepdims=True)
    first_top = np.take_along_axis(is_top, neigh_labels, axis=1).argmax(axis=1)
    return classes[neigh_labels[np.arange(len(neigh_labels)), first_top]]


def knn_error(X_train, y_train, X_test, y_test, k: int = 3, tie_break: str = "nearest") -> float:
    """Fraction of misclassified test points by :func:`knn_predict`."""
    return float(np.mean(knn_predict(X_train, y_train, X_test, k, tie_break) != y_test))


def model_error(model, X_train, y_train, X_test, y_test, k: int = 3,
                tie_break: str = "nearest") -> float:
    """Test error of a fitted solver: k-NN in its learned space, or its own predictions.

    Metric learners (``model.evaluation == "knn"``, the default) are evaluated by
    :func:`knn_error` on ``transform``-ed points; classifiers compared in the papers' tables (the
    RBF SVM of Shen et al. 2014, ``evaluation == "predict"``) by their ``predict``; local metrics
    (one metric per point, SCML-Local: ``evaluation == "local_knn"``) by the same k-NN vote over
    the neighbours their ``kneighbors`` finds in each test point's own metric (the training
    points they were fitted on).
    """
    evaluation = getattr(model, "evaluation", "knn")
    if evaluation == "predict":
        return float(np.mean(model.predict(X_test) != y_test))
    if evaluation == "local_knn":
        neighbours = model.kneighbors(X_test, n_neighbors=k, return_distance=False)
        return float(np.mean(neighbour_vote(neighbours, y_train, tie_break) != y_test))
    return knn_error(model.transform(X_train), y_train, model.transform(X_test), y_test, k,
                     tie_break)


def retrieval_precision(X, relevant, queries, top: int = 20) -> np.ndarray:
    """Mean precision of the top 1..``top`` retrieved points (Shen, Kim & Wang 2010, Fig. 3).

    Each query ranks every OTHER point of ``X`` by Euclidean distance in the given space (itself
    left out: with it, the first retrieved image would always be the query); precision at m is
    the fraction of target-class (``relevant``) points among its m nearest, "the ratio of the
    number of facial images to the total number of retrieved images". Points at equal distance
    (frequent with integer word counts) are counted in expectation over their orders: when a
    group of t tied points, r of them relevant, straddles rank m and k of its places fall within
    the first m, it contributes k·r/t hits, so the result does not depend on the row order.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The gallery, already mapped into the learned space (``solver.transform``); the queries
        are rows of it.
    relevant : ndarray of bool, shape (n,)
        Whether each point belongs to the target class.
    queries : ndarray of bool, shape (n,), or of int
        The query points (a mask or indices into ``X``), e.g. every target-class point.
    top : int
        Largest number of retrieved points m; needs ``top < n``.

    Returns
    -------
    ndarray of shape (top,)
        Entry m − 1 is the precision at m averaged over the queries.
    """
    from scipy.spatial.distance import cdist

    X, relevant = np.asarray(X, dtype=float), np.asarray(relevant, dtype=bool)
    queries = np.asarray(queries)
    queries = np.flatnonzero(queries) if queries.dtype == bool else queries.astype(np.intp)
    if not 1 <= top < len(X):
        raise ValueError(f"top must be in [1, {len(X) - 1}] (the gallery minus the query), got {top}")
    if len(queries) == 0:
        raise ValueError("no query points")
    distances = cdist(X[queries], X, "sqeuclidean")
    distances[np.arange(len(queries)), queries] = np.inf  # the query is not retrieved
    m = np.arange(1, top + 1)
    order = np.argsort(distances, axis=1, kind="stable")
    ranked = np.take_along_axis(distances, order, axis=1)
    # found[q, j]: relevant points among query q's j nearest
    found = np.pad(np.cumsum(relevant[order], axis=1), ((0, 0), (1, 0)))
    # the tie group of the m-th nearest: ranks lo..hi-1 share its distance
    at_m = ranked[:, :top, None]
    lo = (ranked[:, None, :] < at_m).sum(axis=2)
    hi = (ranked[:, None, :] <= at_m).sum(axis=2)
    f_lo, f_hi = np.take_along_axis(found, lo, axis=1), np.take_along_axis(found, hi, axis=1)
    hits = f_lo + (m - lo) * (f_hi - f_lo) / (hi - lo)
    return (hits / m).mean(axis=0)


def model_retrieval_precision(model, X_test, y_test, target: int, top: int = 20) -> np.ndarray:
    """:func:`retrieval_precision` of a fitted metric learner on the test part: every point of
    class ``target`` queries the other test points, in the learned space."""
    if getattr(model, "evaluation", "knn") == "predict":
        raise ValueError(f"{type(model).__name__} is a classifier: it defines no distance to "
                         "retrieve with")
    relevant = np.asarray(y_test) == target
    return retrieval_precision(model.transform(X_test), relevant, relevant, top)


def model_spectrum_counts(model, energy: float = 0.9, rtol: float = 1e-8) -> tuple[int, int] | \
        tuple[None, None]:
    """:func:`spectrum_counts` of a fitted learner's ``components_`` ((None, None) for a model
    without one). A learner that solved in the span of its training points keeps
    ``L = √c I + V (L_V − √c I) Vᵀ`` factored (or ``L = L_V Vᵀ``: ``span_complement="zero"``,
    c = 0; :mod:`~dml_bench.solvers.span`): its singular values are those of the q×q L_V and
    √c for each of the d − q dimensions off the span, without the d×d SVD."""
    from .solvers.span import span_lifts  # the solver package only where a model is at hand

    lifts = span_lifts(model)
    if lifts is None:
        if not hasattr(model, "components_"):
            return None, None
        return spectrum_counts(model.components_, energy, rtol)
    V = lifts.basis
    L_V, root_c = lifts.parts.get("components_", (None, 0.0))
    if L_V is None:  # zero off the span: L V = L_V
        L_V = np.asarray(model.components_, dtype=float) @ V
    off_span = V.shape[0] - V.shape[1] if root_c else 0
    lam = np.concatenate([np.linalg.svd(L_V, compute_uv=False) ** 2,
                          np.full(off_span, root_c ** 2)])
    return _counts(lam, energy, rtol)


def spectrum_counts(components: np.ndarray, energy: float = 0.9,
                    rtol: float = 1e-8) -> tuple[int, int]:
    """Sparsity of a learned metric's spectrum (Kunapuli & Shavlik 2012, §7.2, Table 3).

    The eigenvalues of ``M = LᵀL`` are the squared singular values of ``L`` (``components``,
    r × d: never forms the d × d metric). Returns ``(n_nonzero, n_energy)``: ``‖λ‖₀`` with
    eigenvalues below ``rtol · λ_max`` counted as zero, and the smallest r with
    ``Σ_{i≤r} λ_(i) ≥ energy · Σ_i λ_i`` (eigenvalues in decreasing order), "the number of
    eigenvalues required to account for 90 % of the cumulative energy of the metric".
    """
    L = np.asarray(components, dtype=float)
    if L.shape[0] == L.shape[1] and np.count_nonzero(L) == np.count_nonzero(np.diagonal(L)):
        lam = np.diagonal(L) ** 2  # diagonal L (the Euclidean identity): no O(d³) SVD at d = 20 000
    else:  # zero rows (a factored fit's padding: dml_eig.iterate_metric) add only zeros
        rows = L[np.any(L != 0, axis=1)]
        lam = np.linalg.svd(rows, compute_uv=False) ** 2 if len(rows) else np.zeros(0)
    return _counts(lam, energy, rtol)


def _counts(lam: np.ndarray, energy: float, rtol: float) -> tuple[int, int]:
    """``(n_nonzero, n_energy)`` of the eigenvalues ``lam`` (see :func:`spectrum_counts`)."""
    if lam.size == 0 or lam.max() <= 0:
        return 0, 0
    n_nonzero = int(np.sum(lam > rtol * lam.max()))
    cumulative = np.cumsum(np.sort(lam)[::-1])
    n_energy = int(np.searchsorted(cumulative, energy * cumulative[-1] * (1 - 1e-12)) + 1)
    return n_nonzero, n_energy
