"""k-NN evaluation: the two tie-breaking rules on hand-made votes, and references."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.neighbors import KNeighborsClassifier

from dml_bench.evaluate import TIE_BREAKS, knn_error, knn_predict

# 1-D training set; far points (±100) never enter a 3-NN vote of a query near 0
X_TRAIN = np.array([1.0, -2.0, 3.0, 100.0, -100.0, 101.0])[:, None]


def test_tie_break_names():
    assert set(TIE_BREAKS) == {"nearest", "lowest"}


@pytest.mark.parametrize("labels_by_distance, nearest, lowest", [
    # query at 0: neighbours at distance 1, 2, 3 carry these labels (1-1-1 votes)
    ((2, 0, 1), 2, 0),
    ((1, 2, 0), 1, 0),
    ((0, 2, 1), 0, 0),
    ((7, 5, 9), 7, 5),  # non-contiguous labels map back to the original values
    # 2-1 majorities win under both rules, whatever the nearest label
    ((2, 0, 0), 0, 0),
    ((0, 2, 2), 2, 2),
    ((1, 2, 1), 1, 1),
])
def test_three_neighbour_votes(labels_by_distance, nearest, lowest):
    far = [5, 6, 8]  # labels of the far points; other values so they would show if used
    y = np.array([*labels_by_distance, *far])
    X_test = np.array([[0.0]])
    assert knn_predict(X_TRAIN, y, X_test, k=3, tie_break="nearest").tolist() == [nearest]
    assert knn_predict(X_TRAIN, y, X_test, k=3, tie_break="lowest").tolist() == [lowest]


def test_default_is_nearest():
    y = np.array([2, 0, 1, 5, 6, 8])
    assert knn_predict(X_TRAIN, y, np.array([[0.0]]), k=3).tolist() == [2]


def test_two_two_vote_with_k4():
    # neighbours of 0 at 1, 2, 3, 4 with labels 3, 1, 1, 3: classes 1 and 3 tie 2-2;
    # "nearest" takes the label of the nearest of the tied neighbours (3), "lowest" takes 1
    X = np.array([[1.0], [-2.0], [3.0], [-4.0], [50.0]])
    y = np.array([3, 1, 1, 3, 0])
    assert knn_predict(X, y, np.array([[0.0]]), k=4, tie_break="nearest").tolist() == [3]
    assert knn_predict(X, y, np.array([[0.0]]), k=4, tie_break="lowest").tolist() == [1]


def test_nearest_among_tied_labels_only():
    # k = 5 labels by distance: 4, 2, 1, 1, 2 -> 1 and 2 tie with two votes each, 4 has one.
    # The nearest neighbour (4) is not a tied label: "nearest" must give 2 (nearest of the tied).
    X = np.array([[1.0], [2.0], [3.0], [4.0], [5.0]])
    y = np.array([4, 2, 1, 1, 2])
    assert knn_predict(X, y, np.array([[0.0]]), k=5, tie_break="nearest").tolist() == [2]
    assert knn_predict(X, y, np.array([[0.0]]), k=5, tie_break="lowest").tolist() == [1]


def test_several_queries_at_once():
    X = np.array([0.0, 1.0, 2.0, 10.0, 11.0, 12.5])[:, None]
    y = np.array([0, 1, 2, 2, 1, 1])
    X_test = np.array([[0.4], [11.6], [1.2]])
    # 0.4: 0 (0.4), 1 (0.6), 2 (1.6) -> tie, nearest label 0; lowest 0
    # 11.6: 11 (0.6), 12.5 (0.9), 10 (1.6) -> labels 1, 1, 2 -> 1
    # 1.2: 1 (0.2), 2 (0.8), 0 (1.2) -> tie, nearest 1; lowest 0
    assert knn_predict(X, y, X_test, 3, "nearest").tolist() == [0, 1, 1]
    assert knn_predict(X, y, X_test, 3, "lowest").tolist() == [0, 1, 0]
    y_test = np.array([0, 2, 1])
    assert knn_error(X, y, X_test, y_test, 3, "nearest") == pytest.approx(1 / 3)
    assert knn_error(X, y, X_test, y_test, 3, "lowest") == pytest.approx(2 / 3)


def random_problem(seed, n_classes=25, n_train=150, n_test=400, d=3):
    rng = np.random.default_rng(seed)
    X_train, X_test = rng.normal(size=(n_train, d)), rng.normal(size=(n_test, d))
    y_train = 3 * rng.integers(0, n_classes, n_train) + 10  # non-contiguous labels
    return X_train, y_train, X_test


def naive_nearest_rule(X_train, y_train, X_test, k):
    """Reference for "nearest": the first label, in neighbour order, that has the top vote."""
    out = []
    for x in X_test:
        order = np.argsort(((X_train - x) ** 2).sum(axis=1))[:k]
        labels = list(y_train[order])
        top = max(labels.count(lab) for lab in labels)
        out.append(next(lab for lab in labels if labels.count(lab) == top))
    return np.array(out)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lowest_equals_sklearn(seed):
    X_train, y_train, X_test = random_problem(seed)
    ours = knn_predict(X_train, y_train, X_test, 3, "lowest")
    ref = KNeighborsClassifier(n_neighbors=3, algorithm="brute").fit(X_train, y_train)
    np.testing.assert_array_equal(ours, ref.predict(X_test))
    # with 25 classes many votes are 1-1-1 ties, so the rules really differ on this data
    nearest = knn_predict(X_train, y_train, X_test, 3, "nearest")
    assert (nearest != ours).sum() > 10


@pytest.mark.parametrize("k", [3, 4, 5])
def test_nearest_equals_naive_reference(k):
    X_train, y_train, X_test = random_problem(10 + k)
    np.testing.assert_array_equal(knn_predict(X_train, y_train, X_test, k, "nearest"),
                                  naive_nearest_rule(X_train, y_train, X_test, k))


def test_error_is_fraction():
    X_train, y_train, X_test = random_problem(3, n_classes=3)
    y_test = knn_predict(X_train, y_train, X_test, 3)
    assert knn_error(X_train, y_train, X_test, y_test, 3) == 0.0
    y_test[:100] = -1  # 100 of 400 test labels wrong
    assert knn_error(X_train, y_train, X_test, y_test, 3) == 0.25


def test_unknown_tie_break():
    with pytest.raises(ValueError, match="tie_break"):
        knn_predict(X_TRAIN, np.arange(6), X_TRAIN, 3, "random")


def test_spectrum_counts_of_a_diagonal_factor_equal_the_svd_ones():
    """The diagonal shortcut (the Euclidean identity at d = 20 000) against numpy's SVD."""
    from dml_bench.evaluate import spectrum_counts

    rng = np.random.default_rng(0)
    for L in (np.eye(7), np.diag(rng.normal(size=9) * (rng.random(9) < 0.6)),
              np.diag([3.0, 1.0, 1e-9, 0.5])):
        lam = np.linalg.svd(L, compute_uv=False) ** 2
        n_nonzero = int(np.sum(lam > 1e-8 * lam.max()))
        cumulative = np.cumsum(np.sort(lam)[::-1])
        n_energy = int(np.argmax(cumulative >= 0.9 * cumulative[-1] * (1 - 1e-12)) + 1)
        assert spectrum_counts(L) == (n_nonzero, n_energy)


def test_spectrum_counts_of_a_zero_padded_factor_are_the_metrics():
    """A factor padded with zero rows (a factored DML-eig fit) against the eigenvalues of
    M = LᵀL by numpy's eigvalsh."""
    from dml_bench.evaluate import spectrum_counts

    rng = np.random.default_rng(1)
    thin = rng.normal(size=(3, 8)) * np.array([[5.0], [1.0], [0.2]])
    L = np.vstack([thin, np.zeros((5, 8))])
    lam = np.clip(np.linalg.eigvalsh(L.T @ L), 0, None)[::-1]
    n_nonzero = int(np.sum(lam > 1e-8 * lam.max()))
    cumulative = np.cumsum(lam)
    n_energy = int(np.argmax(cumulative >= 0.9 * cumulative[-1] * (1 - 1e-12)) + 1)
    assert spectrum_counts(L) == (n_nonzero, n_energy) == (3, n_energy)


def test_spectrum_counts_of_a_zero_factor_are_zero():
    """A factor of only zero rows (M = 0), square or not: no eigenvalue counts."""
    from dml_bench.evaluate import spectrum_counts

    assert spectrum_counts(np.zeros((2, 5))) == spectrum_counts(np.zeros((5, 5))) == (0, 0)
