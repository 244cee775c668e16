"""``Constraints`` with any subset of its arrays, and ``constraints_from_labels`` on partial
labels, checked against the labels and a brute-force k-NN written here."""

import numpy as np
import pytest

from dml_bench.constraints import Constraints, constraints_from_labels
from dml_bench.solvers import ITML, LSML, DMLEig


def partial(seed=0, n=60, d=3, unlabelled=0.3):
    """Three classes, a fraction of the points unlabelled (−1)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.arange(n) % 3
    y[rng.random(n) < unlabelled] = -1
    return X, y


def test_missing_arrays_are_empty_of_their_shape():
    c = Constraints()
    assert c.similar.shape == c.dissimilar.shape == (0, 2) and c.triplets.shape == (0, 3)
    assert all(a.dtype == np.intp for a in (c.similar, c.dissimilar, c.triplets))
    T = np.array([[0, 1, 2]])
    only = Constraints(triplets=T)
    assert only.triplets is T and only.similar.shape == (0, 2)
    assert Constraints(similar=[[0, 1]]).counts() == {"n_similar": 1, "n_dissimilar": 0,
                                                      "n_triplets": 0}
    checked = Constraints.validated(Constraints(dissimilar=[[0, 2]]), 3, ("pairs",))
    assert checked.dissimilar.tolist() == [[0, 2]] and checked.triplets.shape == (0, 3)
    # positional construction is unchanged
    S = np.array([[0, 1]])
    assert Constraints(S, S, T).similar is S


def test_pairs_join_labelled_points_of_the_same_or_of_other_classes():
    X, y = partial(1)
    c, quads = constraints_from_labels(y, n_pairs=500, seed=3)
    assert c.similar.shape == c.dissimilar.shape == (500, 2) and c.triplets.shape == (0, 3)
    assert quads.shape == (0, 4)
    for pairs in (c.similar, c.dissimilar):
        assert np.all(y[pairs] != -1) and np.all(pairs[:, 0] != pairs[:, 1])
    assert np.all(y[c.similar[:, 0]] == y[c.similar[:, 1]])
    assert np.all(y[c.dissimilar[:, 0]] != y[c.dissimilar[:, 1]])
    # every labelled point can be drawn, and each class pair appears
    assert set(np.unique(c.dissimilar)) == set(np.flatnonzero(y != -1))
    classes = {tuple(sorted(p)) for p in y[c.dissimilar].tolist()}
    assert classes == {(0, 1), (0, 2), (1, 2)}
    # the same seed, the same pairs; another seed, other pairs; X may be given or not
    again, _ = constraints_from_labels(X, y, n_pairs=500, seed=3)
    np.testing.assert_array_equal(again.similar, c.similar)
    np.testing.assert_array_equal(again.dissimilar, c.dissimilar)
    other, _ = constraints_from_labels(y, n_pairs=500, seed=4)
    assert not np.array_equal(other.similar, c.similar)


def brute_force_knn_triplets(X, y, k):
    """All (i, target, impostor) of the labelled points: the k nearest labelled same-class
    points and the k nearest labelled other-class points, by full distance sorting."""
    labelled = np.flatnonzero(y != -1)
    D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    out = set()
    for i in labelled:
        same = [j for j in labelled if y[j] == y[i] and j != i]
        other = [j for j in labelled if y[j] != y[i]]
        targets = sorted(same, key=lambda j: D[i, j])[:k]
        impostors = sorted(other, key=lambda j: D[i, j])[:k]
        out |= {(int(i), int(t), int(m)) for t in targets for m in impostors}
    return out


def test_triplets_are_knn_triplets_of_the_labelled_points():
    X, y = partial(2)
    c, _ = constraints_from_labels(X, y, n_triplets=None, k=2, seed=0)
    reference = brute_force_knn_triplets(X, y, 2)
    assert set(map(tuple, c.triplets.tolist())) == reference
    assert len(c.triplets) == len(reference)
    drawn, _ = constraints_from_labels(X, y, n_triplets=50, k=2, seed=5)
    rows = set(map(tuple, drawn.triplets.tolist()))
    assert len(rows) == 50 and rows <= reference  # without repetition, among them
    again, _ = constraints_from_labels(X, y, n_triplets=50, k=2, seed=5)
    np.testing.assert_array_equal(again.triplets, drawn.triplets)


def test_quadruplets_compare_a_similar_with_a_dissimilar_pair():
    X, y = partial(3)
    c, quads = constraints_from_labels(X, y, n_pairs=20, n_triplets=30, n_quadruplets=40, k=2,
                                       seed=7)
    assert quads.shape == (40, 4) and np.all(y[quads] != -1)
    assert np.all(y[quads[:, 0]] == y[quads[:, 1]]) and np.all(quads[:, 0] != quads[:, 1])
    assert np.all(y[quads[:, 2]] != y[quads[:, 3]])
    c2, quads2 = constraints_from_labels(X, y, n_pairs=20, n_triplets=30, n_quadruplets=40, k=2,
                                         seed=7)
    np.testing.assert_array_equal(quads2, quads)
    np.testing.assert_array_equal(c2.triplets, c.triplets)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_the_constraints_feed_the_learners():
    X, y = partial(4)
    c, quads = constraints_from_labels(X, y, n_pairs=40, n_triplets=60, n_quadruplets=30, k=2)
    assert ITML().fit(X, constraints=c).metric_.shape == (3, 3)
    assert DMLEig(max_iter=30).fit(X, constraints=c).metric_.shape == (3, 3)
    assert LSML(max_iter=30).fit(X, quadruplets=quads).metric_.shape == (3, 3)


@pytest.mark.parametrize("args, kwargs, message", [
    ((), {"n_pairs": 3}, r"^y: constraints_from_labels needs the labels y"),
    (("y",), {}, r"^constraints_from_labels: nothing to draw"),
    (("y",), {"n_pairs": -1}, r"^n_pairs: expected an int >= 0, got -1"),
    (("y",), {"n_triplets": 5}, r"^X: k-NN triplets need the points"),
    (("X", "y"), {"n_triplets": 10**6, "k": 2},
     r"^n_triplets: 1000000 asked for, but the \d+ labelled points have \d+ k-NN triplets"),
    (("one_class",), {"n_pairs": 2},
     r"^y: constraints_from_labels needs at least two labelled classes, got 1"),
    (("singletons",), {"n_pairs": 2}, r"^y: a similar pair needs a class with two labelled"),
    (("X", "short"), {"n_pairs": 2}, r"^X: has 60 rows but y has 10 labels"),
])
def test_faults_are_one_line(args, kwargs, message):
    X, y = partial(5)
    values = {"X": X, "y": y, "short": y[:10], "one_class": np.where(y == 0, 0, -1),
              "singletons": np.array([0, 1, 2, -1, -1])}
    with pytest.raises(ValueError, match=message) as fault:
        constraints_from_labels(*(values[a] for a in args), **kwargs)
    assert "\n" not in str(fault.value)
