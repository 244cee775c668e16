"""Constraint generators: from the labelled *training* part to pairs and triplets.

``knn_triplets`` is the mechanism of Weinberger et al. (2005) used by Ying & Li (2012, §5): for
each training point its k nearest same-class neighbours (targets) and its k nearest other-class
points (impostors) in the Euclidean space of the preprocessed training data. They give the similar
pairs S = {(i, target)}, the dissimilar pairs D = {(i, impostor)} and the triplets
T = {(i, target, impostor)} (k² per point). Pairs are not de-duplicated, which reproduces the
counts of Ying & Li's Table 3 (wine: |S| = |D| = 378, |T| = 1134 on 126 training points).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy
import scipy.sparse as sp
import sklearn
from sklearn.neighbors import NearestNeighbors

from .errors import warn
from .registry import Registry

#: the generators by name; built-ins only (no entry-point group: a ``module:function`` name is
#: an unknown generator)
GENERATORS = Registry("constraint generator")

#: the version of the stored constraints' layout (part of every entry's key)
CACHE_FORMAT = 1
#: the members of a stored entry and the number of columns of each
_COLUMNS = {"similar": 2, "dissimilar": 2, "triplets": 3}


@dataclass(frozen=True)
class Constraints:
    """Index-based constraints on a training set ``X`` (rows of ``X`` are referenced).

    Any subset of the arrays may be given (``Constraints(triplets=T)``); a missing one, or None,
    is an empty ``intp`` array of its shape, (0, 2) for the pairs and (0, 3) for the triplets.

    Attributes
    ----------
    similar : ndarray of shape (n_similar, 2)
    dissimilar : ndarray of shape (n_dissimilar, 2)
    triplets : ndarray of shape (n_triplets, 3)
        ``(i, j, k)``: ``x_j`` should be closer to ``x_i`` than ``x_k`` is.
    """

    similar: np.ndarray | None = None
    dissimilar: np.ndarray | None = None
    triplets: np.ndarray | None = None

    def __post_init__(self):
        for name, width in _COLUMNS.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, np.empty((0, width), dtype=np.intp))

    def counts(self) -> dict[str, int]:
        return {"n_similar": len(self.similar), "n_dissimilar": len(self.dissimilar),
                "n_triplets": len(self.triplets)}

    @classmethod
    def validated(cls, constraints, n_samples: int, needs: tuple[str, ...] = (),
                  learner: str = "the learner") -> Constraints:
        """``constraints`` checked against a training set of ``n_samples`` rows, as index arrays.

        Each array must be two-dimensional with 2 (pairs) or 3 (triplets) columns, or empty;
        hold integers (integer dtype, or floats with whole values); and every index must be a row
        of ``X``: in ``[0, n_samples)``, so that −1 does not silently mean the last row.

        Parameters
        ----------
        constraints : Constraints
            Or any object with ``similar``, ``dissimilar`` and ``triplets`` arrays.
        n_samples : int
            The rows of the training set ``X``.
        needs : tuple of str
            What must not be empty, checked in order: ``"pairs"`` (similar or dissimilar pairs),
            ``"similar"``, ``"dissimilar"``, ``"triplets"``.
        learner : str
            Who needs them, for the messages (a solver's class name).

        Returns
        -------
        Constraints
            The same indices, as ``intp`` arrays of shape (m, 2), (m, 2) and (m, 3).

        Raises
        ------
        ValueError
            One line naming the argument, e.g. ``constraints.similar: pairs must have shape
            (n, 2), got (5, 3)`` or ``constraints.triplets: index -1 at row 4 is negative;
            indices must be rows of X, in [0, 150)``.
        """
        fields = ("similar", "dissimilar", "triplets")
        if not all(hasattr(constraints, name) for name in fields):
            raise ValueError(f"constraints: expected a Constraints with similar, dissimilar and "
                             f"triplets arrays, got {type(constraints).__name__}")
        checked = cls(*(cls.checked_indices(f"constraints.{name}", getattr(constraints, name),
                                            3 if name == "triplets" else 2, n_samples)
                        for name in fields))
        for need in needs:
            if need == "pairs" and not (len(checked.similar) or len(checked.dissimilar)):
                raise ValueError(f"constraints: {learner} learns from pairs, but "
                                 "constraints.similar and constraints.dissimilar are empty")
            if need == "triplets" and not len(checked.triplets):
                raise ValueError(f"constraints: {learner} learns from triplets, but "
                                 "constraints.triplets is empty")
            if need in ("similar", "dissimilar") and not len(getattr(checked, need)):
                raise ValueError(f"constraints.{need}: {learner} needs {need} pairs, got none")
        return checked

    @staticmethod
    def checked_indices(what: str, values, width: int, n_samples: int) -> np.ndarray:
        """``values`` as an ``intp`` array of shape (m, width) of rows of a training set of
        ``n_samples`` rows (the rules of :meth:`validated`); a one-line ``ValueError`` naming
        ``what`` otherwise."""
        kind = "pairs" if width == 2 else "triplets"
        try:
            a = np.asarray(values)
        except (TypeError, ValueError) as exc:  # ragged rows
            raise ValueError(f"{what}: {kind} must be an array of shape (n, {width}) "
                             f"({' '.join(str(exc).split())})") from None
        if a.size == 0 and a.ndim <= 1:
            return np.empty((0, width), dtype=np.intp)
        if a.ndim != 2 or a.shape[1] != width:
            raise ValueError(f"{what}: {kind} must have shape (n, {width}), got {a.shape}")
        if len(a) == 0:
            return np.empty((0, width), dtype=np.intp)
        bounds = f"indices must be rows of X, in [0, {n_samples})"
        if a.dtype.kind == "f":
            whole = np.isfinite(a) & (a == np.round(a))
            if not whole.all():
                row, col = np.unravel_index(np.argmin(whole), a.shape)
                raise ValueError(f"{what}: {float(a[row, col])!r} at row {row} is not an integer "
                                 f"index; {bounds}")
        elif a.dtype.kind not in "iu":
            raise ValueError(f"{what}: indices must be integers, got dtype {a.dtype}")
        low, high = a.min(), a.max()
        if low < 0 or high >= n_samples:
            bad = (a < 0) if low < 0 else (a >= n_samples)
            row, col = np.unravel_index(np.argmax(bad), a.shape)
            problem = "is negative" if low < 0 else "is out of range"
            raise ValueError(f"{what}: index {int(a[row, col])} at row {row} {problem}; {bounds}")
        return a.astype(np.intp, copy=False)


def generate(name: str, X, y: np.ndarray, params: dict,
             cache: str | Path | None = None) -> tuple[Constraints, float]:
    """The constraints of generator ``name`` on ``(X, y)``, and the seconds they took to compute.

    Parameters
    ----------
    name : str
        A registered generator (``GENERATORS``).
    X : ndarray of shape (n, d) or CSR matrix
        Preprocessed training data.
    y : ndarray of shape (n,)
        Training labels.
    params : dict
        The generator's parameters.
    cache : path-like or None
        A folder where results are stored on disk, so that any process that needs the same
        constraints again (a worker that loky restarted, a second board, a resumed run) loads
        them instead of computing them: the 3+3-NN triplets of an MNIST tuning fold take 32 s.
        An entry is keyed by the content of ``X`` and ``y``, ``name``, ``params`` and
        :func:`fingerprint` (:func:`cache_key`), so other data, another generator version or
        other library versions never read it. It is a ``.npz`` of integer arrays, written and
        read without pickle, with its sha256 in a JSON file beside it
        (``bincache.write_entry`` / ``read_entry``); a damaged, truncated or foreign entry is
        recomputed with a one-line warning, never trusted, and nothing in the folder is ever
        unpickled or executed. A stored result returns the seconds of its original
        computation. A cache that cannot be used costs only time (a warning).

    Returns
    -------
    constraints : Constraints
    seconds : float
        Wall-clock seconds of the generator's computation.
    """
    if cache is None:
        return _timed(name, X, y, params)
    from .datasets.bincache import DamagedEntry, read_entry, write_entry

    key = cache_key(name, X, y, params)
    stem = Path(cache) / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}-{key[:32]}"
    npz, meta = stem.with_suffix(".npz"), stem.with_suffix(".json")
    try:
        stored = read_entry(npz, meta, key)
        if stored is not None:
            return _stored(stored, X.shape[0])
    except DamagedEntry as exc:
        warn(f"constraint cache entry {npz} is damaged ({exc}); recomputed")
    constraints, seconds = _timed(name, X, y, params)
    arrays = {field: np.asarray(getattr(constraints, field), dtype=np.int64) for field in _COLUMNS}
    try:
        write_entry(npz, meta, arrays, {"key": key, "generator": name, "format": CACHE_FORMAT,
                                        "seconds": seconds})
    except OSError as exc:
        warn(f"constraint cache {cache} not used ({exc})")
    return constraints, seconds


def cache_key(name: str, X, y: np.ndarray, params: dict) -> str:
    """sha256 of what a generator's result depends on: the content (dtype, shape, values) of
    ``X`` (dense, or a sparse matrix as CSR) and ``y``, ``name``, ``params`` and the generator's
    :func:`fingerprint`."""
    digest = hashlib.sha256()
    head = {"format": CACHE_FORMAT, "generator": name, "fingerprint": fingerprint(GENERATORS[name]),
            "params": json.dumps(params, sort_keys=True, default=repr)}
    digest.update(json.dumps(head, sort_keys=True).encode())
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        parts = [("csr", X.shape), X.data, X.indices, X.indptr]
    else:
        parts = [("dense",), np.asarray(X)]
    for part in [*parts, np.asarray(y)]:
        if isinstance(part, tuple):
            digest.update(repr(part).encode())
            continue
        part = np.ascontiguousarray(part)
        digest.update(f"{part.dtype.str}{part.shape}".encode())
        digest.update(memoryview(part).cast("B"))
    return digest.hexdigest()


def _stored(stored: tuple[dict, dict], n: int) -> tuple[Constraints, float]:
    """The constraints and seconds of a verified entry, checked to be constraints on ``n``
    points (else a ``DamagedEntry``)."""
    from .datasets.bincache import DamagedEntry

    arrays, info = stored
    if set(arrays) != set(_COLUMNS):
        raise DamagedEntry(f"it holds {sorted(arrays)}, not {sorted(_COLUMNS)}")
    seconds = info.get("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) \
            or not math.isfinite(seconds) or seconds < 0:
        raise DamagedEntry(f"its seconds {seconds!r} are not a duration")
    out = {}
    for field, columns in _COLUMNS.items():
        a = arrays[field]
        if a.dtype.kind not in "iu" or a.ndim != 2 or a.shape[1] != columns:
            raise DamagedEntry(f"{field} is a {a.shape} {a.dtype} array, not (m, {columns}) "
                               "integers")
        if a.size and (a.min() < 0 or a.max() >= n):
            raise DamagedEntry(f"{field} holds indices outside 0..{n - 1}")
        out[field] = a.astype(np.intp)
    return Constraints(**out), float(seconds)


@functools.lru_cache(maxsize=None)
def fingerprint(generator) -> str:
    """sha256 of the source of ``generator``'s module and of the numerical libraries' versions
    (the nearest-neighbour search is scikit-learn's): what a stored result depends on besides
    its arguments. Read once per process, at the first use."""
    module = inspect.getmodule(generator)
    source = inspect.getsource(module) if module is not None else repr(generator)
    versions = f"numpy {np.__version__} scipy {scipy.__version__} sklearn {sklearn.__version__}"
    return hashlib.sha256(f"{versions}\n{source}".encode()).hexdigest()


def _timed(name: str, X, y, params: dict) -> tuple[Constraints, float]:
    """``(GENERATORS[name](X, y, **params), seconds)``."""
    t0 = time.perf_counter()
    constraints = GENERATORS[name](X, y, **params)
    return constraints, time.perf_counter() - t0


def _neighbours(X_fit: np.ndarray, X_query: np.ndarray, k: int, exclude_self: bool) -> np.ndarray:
    """Indices into ``X_fit`` of the k nearest neighbours of each query row (dense or CSR rows).

    With ``exclude_self`` the query rows are the fitted rows: row i's own index is removed (or,
    when duplicates pushed it out of the k + 1 nearest, the farthest of the k + 1).
    """
    nn = NearestNeighbors(n_neighbors=k + exclude_self, algorithm="brute").fit(X_fit)
    idx = nn.kneighbors(X_query, return_distance=False)
    if not exclude_self:
        return idx
    n_query = X_query.shape[0]  # not len(): the rows may be sparse (CSR)
    drop = idx == np.arange(n_query)[:, None]
    drop[~drop.any(axis=1), -1] = True
    return idx[~drop].reshape(n_query, k)


@GENERATORS.register("knn_triplets")
def knn_triplets(X: np.ndarray, y: np.ndarray, k: int = 3) -> Constraints:
    """Target/impostor constraints of Weinberger et al. (2005), Ying & Li (2012) §5.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Preprocessed training data (never the test part).
    y : ndarray of shape (n,)
        Training labels.
    k : int
        Number of targets and of impostors per point.

    Returns
    -------
    Constraints
        ``n·k`` similar pairs, ``n·k`` dissimilar pairs and ``n·k²`` triplets.
    """
    classes, counts = np.unique(y, return_counts=True)
    if len(classes) < 2:
        raise ValueError("knn_triplets needs at least two classes in the training part")
    if k < 1 or k >= counts.min():
        raise ValueError(
            f"k = {k} needs every class to have more than k training points; the smallest class "
            f"({classes[counts.argmin()]!r}) has {counts.min()}"
        )
    if k > len(y) - counts.max():
        raise ValueError(f"k = {k} exceeds the number of other-class points for the largest class")
    targets = np.empty((len(y), k), dtype=np.intp)
    impostors = np.empty((len(y), k), dtype=np.intp)
    for c in classes:
        same, other = np.flatnonzero(y == c), np.flatnonzero(y != c)
        targets[same] = same[_neighbours(X[same], X[same], k, exclude_self=True)]
        impostors[same] = other[_neighbours(X[other], X[same], k, exclude_self=False)]
    anchors = np.repeat(np.arange(len(y)), k)
    similar = np.column_stack([anchors, targets.ravel()])
    dissimilar = np.column_stack([anchors, impostors.ravel()])
    triplets = np.column_stack([
        np.repeat(np.arange(len(y)), k * k),
        np.repeat(targets, k, axis=1).ravel(),
        np.tile(impostors, (1, k)).ravel(),
    ])
    return Constraints(similar, dissimilar, triplets)


@GENERATORS.register("knn_pairs")
def knn_pairs(X: np.ndarray, y: np.ndarray, k: int = 3) -> Constraints:
    """Labelled pairs from k targets and k impostors per point (Kunapuli & Shavlik 2012, §7.1).

    The similar pairs (y = +1) are ``(i, target)`` and the dissimilar pairs (y = −1) are
    ``(i, impostor)`` of :func:`knn_triplets`; no triplets are formed.
    """
    c = knn_triplets(X, y, k)
    return Constraints(c.similar, c.dissimilar, np.empty((0, 3), dtype=np.intp))


@GENERATORS.register("random_triplets")
def random_triplets(X, y: np.ndarray, n_triplets: int = 10000,
                    random_state: int = 0) -> Constraints:
    """Random label triplets, "similar to Qian et al. (2015a)" (Zhang & Zhang 2017, §Experiments).

    Qian et al. (2015a) and Zhang & Zhang (2017) train on triplets ``(x_i, x_j, x_k)`` with
    ``x_j`` of ``x_i``'s class and ``x_k`` of another class, sampled at random; the exact
    procedure could not be checked against the paper text here, so what is implemented is stated
    precisely: each of the ``n_triplets`` triplets draws its anchor ``i`` uniformly among the
    points whose class has at least two points, ``j ≠ i`` uniformly within ``i``'s class and ``k``
    uniformly among the points of the other classes (independent draws, with replacement across
    triplets), from ``numpy.random.default_rng(random_state)``. Only the labels are used, so ``X``
    may be a ``scipy.sparse`` matrix (or anything with ``len``). No pairs are formed.
    """
    y = np.asarray(y)
    classes, inverse, counts = np.unique(y, return_inverse=True, return_counts=True)
    if len(classes) < 2:
        raise ValueError("random_triplets needs at least two classes in the training part")
    if n_triplets < 1:
        raise ValueError(f"n_triplets must be >= 1, got {n_triplets}")
    if X.shape[0] != len(y):
        raise ValueError(f"X has {X.shape[0]} rows but y has {len(y)} labels")
    rng = np.random.default_rng(random_state)
    order = np.argsort(inverse, kind="stable")            # points grouped by class
    starts = np.concatenate([[0], np.cumsum(counts)])
    anchors_ok = np.flatnonzero(counts[inverse] >= 2)
    i = anchors_ok[rng.integers(len(anchors_ok), size=n_triplets)]
    ci = inverse[i]
    # j: uniform over the class of i without i itself (draw among n_c − 1 and skip i's slot)
    pos_i = np.empty(len(y), dtype=np.intp)
    pos_i[order] = np.arange(len(y)) - starts[inverse[order]]
    r = rng.integers(counts[ci] - 1)
    r += r >= pos_i[i]
    j = order[starts[ci] + r]
    # k: uniform over the points outside the class of i
    r = rng.integers(len(y) - counts[ci])
    r += np.where(r >= starts[ci], counts[ci], 0)
    k = order[r]
    empty = np.empty((0, 2), dtype=np.intp)
    return Constraints(empty, empty.copy(), np.column_stack([i, j, k]).astype(np.intp))


def constraints_from_labels(X=None, y=None, *, n_pairs: int = 0, n_triplets: int | None = 0,
                            n_quadruplets: int = 0, k: int = 3,
                            seed: int | None = 0) -> tuple[Constraints, np.ndarray]:
    """Pairs, k-NN triplets and quadruplets drawn among the labelled points of partial labels.

    Called as ``constraints_from_labels(y, ...)`` when only pairs and quadruplets are drawn
    (they use the labels alone), and as ``constraints_from_labels(X, y, ...)`` for triplets,
    which need the points. Every index is a row of the full ``X`` (``y``), unlabelled rows
    included, so that the result is passed as is to ``fit(X, constraints=...)``; no constraint
    involves an unlabelled point.

    Parameters
    ----------
    X : array-like of shape (n, d) or CSR matrix, optional
        The points; needed only when triplets are drawn.
    y : array-like of shape (n,)
        Labels, ``-1`` for an unlabelled point.
    n_pairs : int, default=0
        Similar pairs drawn, and as many dissimilar pairs. A similar pair ``(i, j)``: ``i``
        uniform among the labelled points whose class has another labelled point, ``j ≠ i``
        uniform within that class; a dissimilar pair: ``i`` uniform among the labelled points,
        ``j`` uniform among the labelled points of the other classes. Draws are independent
        (a pair may repeat).
    n_triplets : int or None, default=0
        Triplets drawn, without repetition, from the :func:`knn_triplets` of the labelled points
        (each point's ``k`` nearest same-class and ``k`` nearest other-class labelled points in
        the Euclidean space of ``X``: ``n_labelled · k²`` triplets); None: all of them.
    n_quadruplets : int, default=0
        Quadruplets ``(a, b, c, d)`` asking ``d(x_a, x_b) < d(x_c, x_d)``: ``(a, b)`` a similar
        and ``(c, d)`` a dissimilar pair, each drawn as for ``n_pairs``.
    k : int, default=3
        Targets and impostors per labelled point of the k-NN triplets.
    seed : int or None, default=0
        Seed of ``numpy.random.default_rng``: the same seed and arguments give the same
        constraints (None: fresh entropy). The draws come in the order pairs, triplets,
        quadruplets.

    Returns
    -------
    constraints : Constraints
        The similar and dissimilar pairs and the triplets.
    quadruplets : ndarray of shape (n_quadruplets, 4)
        For learners that take them (``LSML().fit(X, quadruplets=...)``).

    Raises
    ------
    ValueError
        In one line naming the argument: nothing is asked for, a count is negative, ``y`` is not
        one-dimensional or does not match ``X``, triplets are asked for without ``X``, there are
        fewer than two labelled classes, no class has two labelled points for a similar pair, or
        more triplets are asked for than the labelled points have.
    """
    if y is None:
        X, y = None, X
    _LabelDraws.check_counts(n_pairs=n_pairs, n_triplets=n_triplets,
                             n_quadruplets=n_quadruplets, k=k)
    wants_triplets = n_triplets is None or n_triplets > 0
    if wants_triplets and X is None:
        raise ValueError("X: k-NN triplets need the points; call constraints_from_labels(X, y, "
                         "...)")
    X, y, draw = _LabelDraws.of(X, y)
    labelled = draw.labelled
    rng = np.random.default_rng(seed)
    empty = np.empty((0, 2), dtype=np.intp)
    similar = draw.similar(rng, n_pairs) if n_pairs else empty
    dissimilar = draw.dissimilar(rng, n_pairs) if n_pairs else empty.copy()
    triplets = np.empty((0, 3), dtype=np.intp)
    if wants_triplets:
        triplets = labelled[knn_triplets(X[labelled], y[labelled], k=k).triplets]
        if n_triplets is not None:
            if n_triplets > len(triplets):
                raise ValueError(f"n_triplets: {n_triplets} asked for, but the {len(labelled)} "
                                 f"labelled points have {len(triplets)} k-NN triplets (k = {k})")
            triplets = triplets[np.sort(rng.choice(len(triplets), n_triplets, replace=False))]
    quadruplets = np.empty((0, 4), dtype=np.intp)
    if n_quadruplets:
        quadruplets = np.hstack([draw.similar(rng, n_quadruplets),
                                 draw.dissimilar(rng, n_quadruplets)])
    return Constraints(similar, dissimilar, triplets), quadruplets


class _LabelDraws:
    """Random similar and dissimilar pairs among labelled points (:func:`constraints_from_labels`):
    ``labelled`` their rows, ``inverse`` the class of each (0..c−1), ``counts`` the class sizes."""

    @staticmethod
    def check_counts(**counts) -> None:
        """A one-line ``ValueError`` unless every count is an int ≥ 0 (``n_triplets`` may be
        None) and something is asked for."""
        for name, value in counts.items():
            if value is None and name == "n_triplets":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"{name}: expected an int >= 0, got {value!r}")
        if not (counts["n_pairs"] or counts["n_quadruplets"] or counts["n_triplets"] is None
                or counts["n_triplets"]):
            raise ValueError("constraints_from_labels: nothing to draw; give n_pairs, n_triplets "
                             "or n_quadruplets")

    @classmethod
    def of(cls, X, y):
        """``(X, y, draws)`` of the points (None, an array or CSR) and partial labels, checked
        in one line each: ``y`` one-dimensional, as many rows in ``X``, two labelled classes."""
        if y is None:
            raise ValueError("y: constraints_from_labels needs the labels y (-1 = unlabelled)")
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y: expected a 1-D array of labels, got shape {y.shape}")
        if X is not None and not sp.issparse(X):
            X = np.asarray(X)
        if X is not None and X.shape[0] != len(y):
            raise ValueError(f"X: has {X.shape[0]} rows but y has {len(y)} labels")
        unlabelled = (y == -1) if y.dtype.kind in "biuf" else (y.astype(str) == "-1")
        labelled = np.flatnonzero(~unlabelled)
        classes, inverse, counts = np.unique(y[labelled], return_inverse=True,
                                             return_counts=True)
        if len(classes) < 2:
            raise ValueError(f"y: constraints_from_labels needs at least two labelled classes, "
                             f"got {len(classes)}")
        return X, y, cls(labelled, inverse.ravel(), counts)

    def __init__(self, labelled, inverse, counts):
        self.labelled, self.inverse, self.counts = labelled, inverse, counts
        self.order = np.argsort(inverse, kind="stable")          # labelled points by class
        self.starts = np.concatenate([[0], np.cumsum(counts)])[:-1]
        self.slot = np.empty(len(inverse), dtype=np.intp)         # place within its class
        self.slot[self.order] = np.arange(len(inverse)) - self.starts[inverse[self.order]]

    def similar(self, rng, n: int) -> np.ndarray:
        anchors = np.flatnonzero(self.counts[self.inverse] >= 2)
        if not len(anchors):
            raise ValueError("y: a similar pair needs a class with two labelled points; every "
                             "labelled class has one")
        i = anchors[rng.integers(len(anchors), size=n)]
        c = self.inverse[i]
        r = rng.integers(self.counts[c] - 1)                      # a slot of c other than i's
        r += r >= self.slot[i]
        return np.column_stack([self.labelled[i], self.labelled[self.order[self.starts[c] + r]]])

    def dissimilar(self, rng, n: int) -> np.ndarray:
        i = rng.integers(len(self.inverse), size=n)
        c = self.inverse[i]
        r = rng.integers(len(self.inverse) - self.counts[c])      # a point outside class c
        r += np.where(r >= self.starts[c], self.counts[c], 0)
        return np.column_stack([self.labelled[i], self.labelled[self.order[r]]])
