"""Pair verification in the restricted setting of LFW (Ying & Li 2012 §5.2, Shen et al. 2014 §V).

The protocol, as the papers state it and as this module implements it:

- **Folds.** View 2 of LFW has ten folds of 300 matched and 300 mismatched pairs, "divided into
  ten folds where the subject identities are mutually exclusive" (Ying & Li §5.2; the real
  ``pairs.txt`` indeed shares no person, image or pair between folds). For test fold f the model
  is trained on the pairs of the other nine folds, "2700 pairs of images from the same identities
  and another 2700 pairs of images from the different identities", and tested "using the other
  600 image pairs" (Ying & Li §5.2). :func:`lfw_pair_folds` turns the pair lists into index
  arrays, :func:`draw_pair_folds` draws such folds on a labelled face set (ORL, Yale B) with
  disjoint identities, :func:`restricted_split` gives the training and test parts of one fold.
- **Restricted configuration.** "Only same/not-same labels are used during training and no
  information about the actual names of the people" (Ying & Li §5.2): the training images are
  exactly the images of the training pairs, without labels.
- **Preprocessing** (:func:`preprocess_fold`), fitted on the training images only: optional
  element-wise square root (the "Square Root" column of Ying & Li Table 6), then PCA to a
  configured dimension ("we reduced the dimension using PCA", Ying & Li §5.2).
- **Constraints** (:func:`pair_constraints`, :func:`pair_triplets`): the training pairs
  themselves for pair solvers (DML-eig, ITML, LDML); for triplet solvers the rule of Shen et al.
  (2014, §V and Fig. 1), see :func:`pair_triplets`.
- **Decision** (:func:`best_threshold`): the pair is "same" when its squared learned distance is
  at most a threshold chosen on the training pairs; the test-fold accuracy is averaged over the
  folds and reported with the standard error of the mean (:func:`mean_sem`: "mean verification
  accuracy and standard error of the mean of 10-fold cross validation test", Ying & Li Table 6).
- **ROC** (:func:`merged_roc`): Ying & Li Fig. 3 and Shen et al. Fig. 2 are made "by altering the
  threshold value across the distributions of match and mismatch similarity scores" (Shen et al.
  §V). We merge the folds by concatenating the ten test folds' distances (each fold's own
  metric) and sweep one threshold over them; the equal-error rate and the AUC are read from that
  curve.

Shen et al. classify the test pairs with Mk-NN (their ref. [20]) rather than a threshold; here
every solver, triplet solvers included, is evaluated with the threshold rule above.

The protocol as the tasks of an experiment (``evaluation: {task: verification}``) is
:mod:`dml_bench.experiment.verification_tasks`'s.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from sklearn.metrics import roc_auc_score, roc_curve
from sklearn.metrics.pairwise import euclidean_distances

from ..constraints import Constraints
from ..datasets.lfw import LFWPair, pair_indices
from ..preprocess import Preprocessing

_NO_PAIRS = np.empty((0, 2), dtype=np.int64)
_NO_TRIPLETS = np.empty((0, 3), dtype=np.int64)
#: anchors per block of the distance matrix in :func:`pair_triplets`
_CHUNK = 512


@dataclass(frozen=True)
class PairFold:
    """Pairs of images as row indices into a descriptor table.

    Attributes
    ----------
    first, second : ndarray of int, shape (n_pairs,)
        Rows of the pair's two images.
    same : ndarray of bool, shape (n_pairs,)
        True for a matched pair (same person).
    """

    first: np.ndarray
    second: np.ndarray
    same: np.ndarray

    def images(self) -> np.ndarray:
        """Sorted distinct rows of the images named in the pairs."""
        return np.union1d(self.first, self.second)


@dataclass(frozen=True)
class RestrictedSplit:
    """Training and test parts of one test fold (rows of the descriptor table).

    Attributes
    ----------
    train_images : ndarray of int
        Sorted distinct rows of the images named in the training pairs, and no other.
    train, test : PairFold
        Pairs of the nine training folds (concatenated in fold order), and of the test fold.
    """

    train_images: np.ndarray
    train: PairFold
    test: PairFold


def lfw_pair_folds(folds: Sequence[Sequence[LFWPair]], image_names: Sequence[str]) -> list[PairFold]:
    """The folds of :func:`~dml_bench.datasets.lfw.load_lfw_pairs` as rows of a descriptor table.

    Parameters
    ----------
    folds : list of list of LFWPair
        E.g. ``load_lfw_pairs("view2")``.
    image_names : sequence of str
        The table's image names in row order (as :func:`~dml_bench.datasets.lfw.load_lfw_sift`
        returns them).

    Returns
    -------
    list of PairFold

    Raises
    ------
    KeyError
        A pair image has no row in the table.
    """
    return [PairFold(*pair_indices(fold, image_names)) for fold in folds]


def draw_pair_folds(y, n_folds: int = 10, n_matched: int = 300, n_mismatched: int = 300,
                    seed: int = 0) -> list[PairFold]:
    """LFW-style folds of pairs on a labelled set: disjoint identities, m matched + m' mismatched.

    The identities are shuffled and dealt into ``n_folds`` groups of (nearly) equal size, as
    View 2 of LFW keeps the people of its folds mutually exclusive (Ying & Li 2012 §5.2). In
    each fold, ``n_matched`` distinct pairs of two images of one identity and ``n_mismatched``
    distinct pairs of images of two identities of the fold are drawn uniformly without
    replacement; matched pairs come first, as in ``pairs.txt``.

    Parameters
    ----------
    y : array-like of shape (n,)
        Identity of each row.
    n_folds, n_matched, n_mismatched : int
        LFW: 10 folds of 300 + 300 pairs.
    seed : int
        Seed of the identity shuffle and of the pair draws.

    Returns
    -------
    list of PairFold

    Raises
    ------
    ValueError
        A fold has fewer distinct matched or mismatched pairs than asked for.
    """
    y = np.asarray(y)
    rng = np.random.default_rng(seed)
    groups = np.array_split(rng.permutation(np.unique(y)), n_folds)
    folds = []
    for f, group in enumerate(groups):
        rows = np.flatnonzero(np.isin(y, group))
        i, j = np.triu_indices(len(rows), k=1)
        same = y[rows[i]] == y[rows[j]]
        picked = [_draw(np.flatnonzero(same == kind), n, rng, f, label)
                  for kind, n, label in ((True, n_matched, "matched"), (False, n_mismatched, "mismatched"))]
        pick = np.concatenate(picked)
        folds.append(PairFold(rows[i[pick]], rows[j[pick]], same[pick]))
    return folds


def _draw(candidates: np.ndarray, n: int, rng, fold: int, kind: str) -> np.ndarray:
    if len(candidates) < n:
        raise ValueError(f"fold {fold} has {len(candidates)} distinct {kind} pairs, fewer than "
                         f"the {n} asked for; ask for fewer pairs or fewer folds")
    return np.sort(rng.choice(candidates, size=n, replace=False))


def restricted_split(folds: Sequence[PairFold], test_fold: int) -> RestrictedSplit:
    """The restricted setting for one test fold: train on the other folds' pairs and images only.

    Parameters
    ----------
    folds : sequence of PairFold
        View 2's ten folds (:func:`lfw_pair_folds`) or drawn folds (:func:`draw_pair_folds`).
    test_fold : int
        Index of the test fold.

    Returns
    -------
    RestrictedSplit
        The training pairs are those of every other fold; the training images are exactly the
        images they name (no identity labels, no other image of the table).
    """
    others = [fold for f, fold in enumerate(folds) if f != test_fold]
    train = PairFold(*(np.concatenate([getattr(fold, part) for fold in others])
                       for part in ("first", "second", "same")))
    return RestrictedSplit(train.images(), train, folds[test_fold])


def preprocess_fold(X, split: RestrictedSplit, pca: int | None = None, sqrt: bool = False,
                    normalize: str = "none"):
    """Square root and PCA fitted on the training images, applied to training and test images.

    With ``pca``, the first ``pca`` columns of :func:`project_fold` (the projections on every
    principal component, in order), which several PCA dimensions can share.

    Parameters
    ----------
    X : ndarray of shape (n_images, d)
        Descriptor table (non-negative when ``sqrt``, as SIFT histograms are).
    split : RestrictedSplit
    pca : int or None
        Number of principal components (centred PCA of the training images); None keeps all
        features.
    sqrt : bool
        Element-wise square root first ("Square Root", Ying & Li 2012 Table 6).
    normalize : str
        Per-feature scaling fitted on the training images before the PCA
        (:class:`~dml_bench.preprocess.Preprocessing`; the papers use none).

    Returns
    -------
    Z_train : ndarray of shape (len(split.train_images), pca or d)
        Row r is image ``split.train_images[r]``.
    Z_test : ndarray of shape (len(test_images), pca or d)
        Row r is image ``test_images[r]``.
    test_images : ndarray of int
        Sorted distinct rows of the test fold's images.
    """
    if pca:
        Z_train, Z_test, test_images = project_fold(X, split, sqrt, normalize)
        return np.ascontiguousarray(Z_train[:, :pca]), np.ascontiguousarray(Z_test[:, :pca]), test_images
    test_images = split.test.images()
    Z_train, Z_test = Preprocessing(normalize=normalize, sqrt=sqrt).apply(
        *(np.asarray(X[rows], dtype=float) for rows in (split.train_images, test_images)))
    return Z_train, Z_test, test_images


def project_fold(X, split: RestrictedSplit, sqrt: bool = False, normalize: str = "none"):
    """The training and test images projected on every principal component of the training
    images (after ``sqrt`` and ``normalize``), in decreasing order of variance.

    The first k columns are the PCA-k features (:class:`~dml_bench.preprocess.Preprocessing`'s
    full SVD keeps every component and truncates, so they agree to round-off). Features
    constant on the training images are dropped first: they have no variance, so the
    components are the same without them, and a table with many constant columns costs only
    its varying ones.

    Returns
    -------
    Z_train, Z_test, test_images
        As :func:`preprocess_fold`, with ``min(n_train_images, varying features)`` columns.
    """
    test_images = split.test.images()
    X_train, X_test = (np.asarray(X[rows], dtype=float) for rows in (split.train_images, test_images))
    if normalize != "global_maxabs":  # a global scale would see the dropped columns
        varying = np.ptp(X_train, axis=0) > 0
        X_train, X_test = X_train[:, varying], X_test[:, varying]
    Z_train, Z_test = Preprocessing(normalize=normalize, pca=min(X_train.shape), sqrt=sqrt).apply(
        X_train, X_test)
    return Z_train, Z_test, test_images


def local_pairs(pairs: PairFold, images: np.ndarray) -> PairFold:
    """``pairs`` with rows of the table replaced by positions in the sorted array ``images``."""
    return PairFold(np.searchsorted(images, pairs.first), np.searchsorted(images, pairs.second),
                    pairs.same)


def pair_constraints(pairs: PairFold) -> Constraints:
    """Similar (matched) and dissimilar (mismatched) pairs for the pair solvers; no triplets."""
    both = np.column_stack([pairs.first, pairs.second]).astype(np.int64)
    return Constraints(both[pairs.same], both[~pairs.same], _NO_TRIPLETS)


def matched_components(pairs: PairFold, n_images: int) -> np.ndarray:
    """Pseudo-identities from same/not-same labels only: the connected components of the graph
    whose edges are the matched pairs (images linked by matched pairs are one person).

    Two components may still be one person; the restricted setting cannot tell.
    """
    first, second = pairs.first[pairs.same], pairs.second[pairs.same]
    edges = coo_matrix((np.ones(len(first)), (first, second)), shape=(n_images, n_images))
    return connected_components(edges, directed=False)[1]


def pair_triplets(Z, pairs: PairFold, identity, k: int = 5, n_triplets: int | None = None,
                  seed: int = 0) -> Constraints:
    """Triplets from pairs, the rule of Shen et al. (2014) §V, Fig. 1.

    "For matched pairs, we find the third example that belongs to a different individual with
    k-NN (k is between five and 30). For mismatched pairs, we find the k-NN that have the same
    identity as one of the individuals in the given pair" (Shen et al. 2014 §V). A triplet
    ``(i, j, k)`` asks ``x_j`` to be closer to ``x_i`` than ``x_k`` is; "the first two belong to
    the same individual and the third is a different individual" (Fig. 1). Our reading, with
    the pair's first image ``a`` as the anchor and neighbours in the Euclidean space of ``Z``:

    - matched pair ``(a, b)``: ``(a, b, c)`` for each of the k nearest images ``c`` of ``a``
      with an identity other than ``a``'s;
    - mismatched pair ``(a, c)``: ``(a, b, c)`` for each of the k nearest images ``b ≠ a`` of
      ``a`` with ``a``'s identity (fewer when ``a``'s identity has fewer other images).

    Parameters
    ----------
    Z : ndarray of shape (n_images, d)
        The (preprocessed) training images.
    pairs : PairFold
        Training pairs, indices into ``Z``'s rows.
    identity : array-like of shape (n_images,)
        Identity of each row of ``Z``. Shen et al. "use individual's identity information to
        generate the third example": with names this is beyond the restricted setting;
        :func:`matched_components` gives identities from the same/not-same labels alone.
    k : int
        Neighbours per pair (Shen et al.: 5 to 30).
    n_triplets : int or None
        Keep this many triplets, drawn uniformly without replacement (Shen et al. Table II:
        3 000 to 18 000 per fold); None keeps all.
    seed : int
        Seed of that draw.

    Returns
    -------
    Constraints
        The triplets, and the pairs as similar/dissimilar pairs.
    """
    identity = np.asarray(identity)
    triplets = []
    for start in range(0, len(pairs.same), _CHUNK):  # a chunk of pairs at a time, no loop over pairs
        part = slice(start, start + _CHUNK)
        a, other, same = pairs.first[part], pairs.second[part], pairs.same[part][:, None]
        dist = euclidean_distances(Z[a], Z, squared=True)
        own = identity[a][:, None] == identity[None, :]
        allowed = np.where(same, ~own, own)  # matched: other people; mismatched: a's own
        allowed[np.arange(len(a)), a] = False
        dist[~allowed] = np.inf
        near = _k_nearest(dist, k)
        found = near >= 0
        a_, other_ = np.broadcast_to(a[:, None], near.shape), np.broadcast_to(other[:, None], near.shape)
        triplets.append(np.stack([a_, np.where(same, other_, near), np.where(same, near, other_)],
                                 axis=-1)[found])
    triplets = np.concatenate([np.empty((0, 3), dtype=np.int64), *triplets]).astype(np.int64)
    if n_triplets is not None and n_triplets < len(triplets):
        keep = np.random.default_rng(seed).choice(len(triplets), size=n_triplets, replace=False)
        triplets = triplets[np.sort(keep)]
    both = pair_constraints(pairs)
    return Constraints(both.similar, both.dissimilar, triplets)


def _k_nearest(dist: np.ndarray, k: int) -> np.ndarray:
    """Per row, the columns of the k smallest finite entries, nearest first, ties to the lower
    column (what a stable argsort gives), −1 where a row has fewer; by a partition and a sort of
    the candidates only (at most k per row but for ties), not a sort of every row."""
    n_rows, n_cols = dist.shape
    near = np.full((n_rows, k), -1, dtype=np.int64)
    if n_cols == 0 or k == 0:
        return near
    kth = np.partition(dist, min(k, n_cols) - 1, axis=1)[:, [min(k, n_cols) - 1]]
    rows, cols = np.nonzero((dist <= kth) & np.isfinite(dist))
    order = np.lexsort((cols, dist[rows, cols], rows))
    rows, cols = rows[order], cols[order]
    rank = np.arange(len(rows)) - np.searchsorted(rows, rows)  # position within its row
    keep = rank < k
    near[rows[keep], rank[keep]] = cols[keep]
    return near


def best_threshold(distances, same) -> tuple[float, float]:
    """The distance threshold of highest accuracy on (training) pairs.

    A pair is declared "same" when its distance is at most the threshold. Only the position of
    the threshold between two consecutive distinct distances matters; we return the midpoint of
    that gap (−inf: all "different"; +inf: all "same"). When several gaps give the highest
    accuracy, the one of the smallest threshold wins.

    Parameters
    ----------
    distances : array-like of shape (n,)
    same : array-like of bool, shape (n,)

    Returns
    -------
    threshold : float
    accuracy : float
        Accuracy of the threshold on these pairs.
    """
    d, same = np.asarray(distances, dtype=float), np.asarray(same, dtype=bool)
    values = np.unique(d)
    same_at_or_below = np.searchsorted(np.sort(d[same]), values, side="right")
    diff_above = (~same).sum() - np.searchsorted(np.sort(d[~same]), values, side="right")
    correct = np.concatenate([[(~same).sum()], same_at_or_below + diff_above])  # gap g: after values[g-1]
    g = int(np.argmax(correct))
    edges = np.concatenate([[-np.inf], values, [np.inf]])
    threshold = -np.inf if g == 0 else (np.inf if g == len(values) else (edges[g] + edges[g + 1]) / 2)
    return float(threshold), float(correct[g] / len(d))


def accuracy(distances, same, threshold: float) -> float:
    """Fraction of pairs whose decision ``distance <= threshold`` equals ``same``."""
    return float(np.mean((np.asarray(distances) <= threshold) == np.asarray(same, dtype=bool)))


def mean_sem(values) -> tuple[float, float]:
    """Mean and standard error of the mean, ``std(ddof=1) / sqrt(n)``: the papers' statistic
    over the 10 folds (Ying & Li 2012 Table 6; LFW's σ of Huang et al. 2007 divides by n − 1).
    The SEM of a single value is nan."""
    values = np.asarray(values, dtype=float)
    sem = values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else np.nan
    return float(values.mean()), float(sem)


def equal_error_rate(fpr, tpr) -> float:
    """Where the ROC curve, linear between its points, crosses FPR = 1 − TPR (= FNR).

    ``fpr`` and ``tpr`` run from (0, 0) to (1, 1) with the threshold, as
    :func:`sklearn.metrics.roc_curve` returns them.
    """
    fpr, tpr = np.asarray(fpr, dtype=float), np.asarray(tpr, dtype=float)
    gap = fpr - (1 - tpr)  # rises from -1 to +1
    i = int(np.argmax(gap >= 0))
    if gap[i] == 0:
        return float(fpr[i])
    w = -gap[i - 1] / (gap[i] - gap[i - 1])
    return float(fpr[i - 1] + w * (fpr[i] - fpr[i - 1]))


def merged_roc(distances: Sequence, same: Sequence) -> dict:
    """ROC of the test folds merged by concatenating their distances (score = −distance).

    Parameters
    ----------
    distances, same : sequences of arrays, one per fold

    Returns
    -------
    dict
        ``roc``: DataFrame of ``fpr``, ``tpr`` and the distance ``threshold`` at each point
        (:func:`sklearn.metrics.roc_curve`, all points kept); ``auc``
        (:func:`sklearn.metrics.roc_auc_score`); ``eer`` (:func:`equal_error_rate`).
    """
    d, s = np.concatenate(distances), np.concatenate(same).astype(bool)
    fpr, tpr, thresholds = roc_curve(s, -d, drop_intermediate=False)
    return {"roc": pd.DataFrame({"fpr": fpr, "tpr": tpr, "threshold": -thresholds}),
            "auc": float(roc_auc_score(s, -d)), "eer": equal_error_rate(fpr, tpr)}


def squared_distances(solver, Z, pairs: PairFold) -> np.ndarray:
    """Squared learned distances ``d_M(x_i, x_j)²`` of ``pairs`` (indices into ``Z``)."""
    L = solver.transform(Z)
    diff = L[pairs.first] - L[pairs.second]
    return np.einsum("ij,ij->i", diff, diff)


def fit_pair_solver(name: str, params: dict, Z, pairs: PairFold, identity=None, k: int = 5,
                    n_triplets: int | None = None, seed: int = 0):
    """Fit registry solver ``name`` on training pairs; returns ``(solver, constraints, wall, cpu)``.

    Pair solvers get :func:`pair_constraints`, triplet solvers :func:`pair_triplets` (with
    ``identity``, default :func:`matched_components`), solvers without constraints (Euclidean)
    empty constraints. Label solvers are refused: the restricted setting has no labels. Warnings are
    silenced, as in :func:`~dml_bench.experiment.knn.fit_task_solver`.
    """
    from ..solvers import SOLVERS

    solver = SOLVERS[name](**params)
    kind = solver.constraint_kind
    if kind == "labels":
        raise ValueError(f"solver {name!r} needs class labels, which the restricted setting has not")
    if kind == "triplets":
        identity = matched_components(pairs, len(Z)) if identity is None else identity
        constraints = pair_triplets(Z, pairs, identity, k, n_triplets, seed)
    else:
        constraints = (pair_constraints(pairs) if kind == "pairs"
                       else Constraints(_NO_PAIRS, _NO_PAIRS, _NO_TRIPLETS))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wall, cpu = time.perf_counter(), time.process_time()
        solver.fit(Z, None, constraints=constraints)
        return solver, constraints, time.perf_counter() - wall, time.process_time() - cpu

