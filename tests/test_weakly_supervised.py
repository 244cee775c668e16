"""metric-learn's user-facing API on the learners (``dml_bench.solvers.weak``), against references
written here: SciPy's ``mahalanobis``, explicit ``einsum`` distances with M, scikit-learn's
neighbours on the transformed points, the index-constraint fit of the same problem, folds and
thresholds enumerated by brute force."""

import copy
import inspect
import warnings

import numpy as np
import pytest
from scipy.spatial.distance import cdist, mahalanobis
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.metrics import fbeta_score, roc_auc_score
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.neighbors import NearestNeighbors
from test_solver_contract import QUICK

from dml_bench.constraints import Constraints, knn_triplets
from dml_bench.solvers import (ITML, LMNN, LSML, MDML, NCA, POLA, SOLVERS, DMLEig, LMNNEig,
                               MetricLearner, Xing)
from dml_bench.solvers.weak import WeaklySupervised

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

LEARNERS = sorted(n for n in SOLVERS if issubclass(SOLVERS[n], MetricLearner))


def blobs(seed=0, n=30, d=4):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(0, 1, (n, d)), rng.normal(1.5, 1, (n, d))])
    return X, np.repeat([0, 1], n)


def labelled_pairs(X, y, n_pairs, seed=0):
    """Random index pairs (i ≠ j) and their labels: +1 when the classes agree."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(len(X), size=(3 * n_pairs, 2))
    idx = idx[idx[:, 0] != idx[:, 1]][:n_pairs]
    return idx, np.where(y[idx[:, 0]] == y[idx[:, 1]], 1, -1)


def einsum_distances(U, V, M):
    D = U - V
    return np.sqrt(np.einsum("ij,jk,ik->i", D, M, D))


@pytest.fixture(scope="module")
def fitted():
    """Every metric learner fitted on labels (its own constraints), with the QUICK caps."""
    X, y = blobs()
    models = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for name in LEARNERS:
            models[name] = SOLVERS[name](**QUICK.get(name, {})).fit(X, y)
    return X, y, models


@pytest.mark.parametrize("name", LEARNERS)
def test_metric_callable_and_pair_distances_match_independent_formulas(name, fitted):
    X, y, models = fitted
    model = models[name]
    M = model.get_mahalanobis_matrix()
    np.testing.assert_array_equal(M, model.metric_)
    M[0, 0] += 1.0  # a copy
    assert model.metric_[0, 0] != M[0, 0]
    M = model.get_mahalanobis_matrix()
    f = model.get_metric()
    idx, _ = labelled_pairs(X, y, 12)
    expected = [mahalanobis(X[i], X[j], M) for i, j in idx]
    np.testing.assert_allclose([f(X[i], X[j]) for i, j in idx], expected,
                               rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(cdist(X[:5], X[5:9], f), cdist(X[:5], X[5:9], "mahalanobis", VI=M),
                               rtol=1e-7, atol=1e-9)
    pairs = X[idx]
    reference = einsum_distances(pairs[:, 0], pairs[:, 1], M)
    np.testing.assert_allclose(model.pair_distance(pairs), reference, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(model.pair_score(pairs), -reference, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", LEARNERS)
def test_every_method_refuses_an_unfitted_learner(name):
    model = SOLVERS[name]()
    pairs = np.zeros((3, 2, 4))
    for call in (model.get_mahalanobis_matrix, model.get_metric,
                 lambda: model.pair_distance(pairs), lambda: model.pair_score(pairs),
                 lambda: model.transform(pairs[:, 0])):
        with pytest.raises(NotFittedError):
            call()
    if SOLVERS[name].constraint_kind == "pairs":
        for call in (lambda: model.predict(pairs), lambda: model.decision_function(pairs),
                     lambda: model.score(pairs, np.ones(3)),
                     lambda: model.calibrate_threshold(pairs, np.array([1, -1, 1]))):
            with pytest.raises(NotFittedError):
                call()
    elif SOLVERS[name].constraint_kind == "triplets":
        for call in (lambda: model.predict(np.zeros((3, 3, 4))), lambda: model.score(np.zeros((3, 3, 4)))):
            with pytest.raises(NotFittedError):
                call()
    else:
        assert not hasattr(model, "predict") and not hasattr(model, "score")


@pytest.mark.parametrize("name", ["itml", "lda", "lmnn"])
def test_neighbours_under_get_metric_are_those_of_the_transformed_points(name, fitted):
    X, _, models = fitted
    model = models[name]
    ours = NearestNeighbors(n_neighbors=5, metric=model.get_metric()).fit(X)
    reference = NearestNeighbors(n_neighbors=5).fit(model.transform(X))
    d_ours, i_ours = ours.kneighbors(X[:20])
    d_ref, i_ref = reference.kneighbors(model.transform(X[:20]))
    np.testing.assert_array_equal(i_ours, i_ref)
    np.testing.assert_allclose(d_ours, d_ref, rtol=1e-7, atol=1e-9)


def first_appearance(tuples):
    """Reference of the tuple conversion: the distinct points in order of first appearance and
    the tuples as indices into them, by a dictionary over the rows."""
    seen, points = {}, []
    index = np.empty(tuples.shape[:2], dtype=np.intp)
    for t in range(tuples.shape[0]):
        for p in range(tuples.shape[1]):
            key = tuples[t, p].tobytes()
            if key not in seen:
                seen[key] = len(points)
                points.append(tuples[t, p])
            index[t, p] = seen[key]
    return np.array(points), index


def test_itml_on_pair_tuples_equals_itml_on_the_equivalent_index_constraints():
    X, y = blobs(1)
    idx, labels = labelled_pairs(X, y, 80, seed=1)
    pairs = X[idx]
    points, index = first_appearance(pairs)
    constraints = Constraints(similar=index[labels == 1], dissimilar=index[labels == -1])
    reference = ITML().fit(points, constraints=constraints)
    on_tuples = ITML().fit(pairs, labels)
    np.testing.assert_array_equal(on_tuples.metric_, reference.metric_)
    assert on_tuples.n_iter_ == reference.n_iter_
    with_preprocessor = ITML().fit(idx, labels, preprocessor=X)
    np.testing.assert_array_equal(with_preprocessor.metric_, reference.metric_)
    np.testing.assert_array_equal(with_preprocessor.predict(idx), on_tuples.predict(pairs))
    # the same learner still learns from X and constraints, unchanged by the tuple fit before
    again = on_tuples.fit(points, constraints=constraints)
    np.testing.assert_array_equal(again.metric_, reference.metric_)
    assert not hasattr(again, "predict") and not hasattr(again, "threshold_")


@pytest.mark.parametrize("cls", [DMLEig, Xing, LMNNEig])
def test_other_learners_fit_tuples_as_their_index_constraints(cls):
    X, y = blobs(2)
    if cls.constraint_kind == "pairs":
        idx, labels = labelled_pairs(X, y, 60, seed=2)
        tuples, (points, index) = X[idx], first_appearance(X[idx])
        constraints = Constraints(index[labels == 1], index[labels == -1])
        args = (tuples, labels)
    else:  # triplets, with their (a, b) pairs similar and (a, c) pairs dissimilar
        T = knn_triplets(X, y, k=2).triplets[::3]
        tuples, (points, index) = X[T], first_appearance(X[T])
        def distinct(a):
            return a[np.sort(np.unique(a, axis=0, return_index=True)[1])]
        constraints = Constraints(distinct(index[:, :2]), distinct(index[:, [0, 2]]), index)
        args = (tuples,)
    params = QUICK.get({DMLEig: "dml_eig", Xing: "xing", LMNNEig: "lmnn_eig"}[cls], {})
    np.testing.assert_array_equal(cls(**params).fit(*args).metric_,
                                  cls(**params).fit(points, constraints=constraints).metric_)


def test_get_params_and_signatures_are_unchanged_by_the_tuple_api():
    """No constructor parameter is added (task ids are built from get_params): the preprocessor
    is a keyword of fit, and a tuple fit changes no parameter."""
    X, y = blobs()
    idx, labels = labelled_pairs(X, y, 40)
    for name in LEARNERS:
        cls = SOLVERS[name]
        assert "preprocessor" not in inspect.signature(cls).parameters
        assert "preprocessor" in inspect.signature(cls.fit).parameters
    model = ITML(gamma=2.0)
    before = model.get_params()
    model.fit(idx, labels, preprocessor=X)
    assert model.get_params() == before == clone(model).get_params()


def test_cross_val_score_over_pair_tuples_equals_folds_scored_by_hand():
    X, y = blobs(3)
    idx, labels = labelled_pairs(X, y, 90, seed=3)
    pairs = X[idx]
    scores = cross_val_score(ITML(), pairs, labels, cv=3)
    expected = []
    for train, test in KFold(3).split(pairs):
        M = ITML().fit(pairs[train], labels[train]).metric_
        expected.append(roc_auc_score(labels[test],
                                      -einsum_distances(pairs[test, 0], pairs[test, 1], M)))
    np.testing.assert_allclose(scores, expected, rtol=1e-12)
    # index tuples and the data as one estimator: the same folds, the same scores
    wrapped = cross_val_score(WeaklySupervised(ITML(), preprocessor=X), idx, labels, cv=3)
    np.testing.assert_allclose(wrapped, scores, rtol=1e-12)
    search = GridSearchCV(ITML(), {"gamma": [0.5, 2.0]}, cv=3).fit(pairs, labels)
    assert search.best_params_["gamma"] in (0.5, 2.0)
    assert set(np.unique(search.predict(pairs))) <= {-1, 1}
    grid = GridSearchCV(WeaklySupervised(ITML(), preprocessor=X),
                        {"learner__gamma": [0.5, 2.0]}, cv=3).fit(idx, labels)
    assert grid.best_params_ == {"learner__gamma": search.best_params_["gamma"]}


def test_cross_val_score_over_triplet_tuples_counts_correct_comparisons():
    X, y = blobs(4)
    T = knn_triplets(X, y, k=2).triplets
    T = T[np.random.default_rng(4).permutation(len(T))]
    scores = cross_val_score(LMNN(impostors="given", max_iter=30), X[T], cv=3)
    expected = []
    for train, test in KFold(3).split(T):
        M = LMNN(impostors="given", max_iter=30).fit(X[T[train]]).metric_
        t = X[T[test]]
        expected.append(np.mean(einsum_distances(t[:, 0], t[:, 1], M)
                                < einsum_distances(t[:, 0], t[:, 2], M)))
    np.testing.assert_allclose(scores, expected, rtol=1e-12)


def brute_force_rates(scores, labels):
    """Per candidate threshold t (every score, and below them all): the predictions score > t
    and their accuracy, TPR and TNR."""
    candidates = np.concatenate([np.unique(scores), [scores.min() - 1.0]])
    predictions = np.where(scores[None, :] > candidates[:, None], 1, -1)
    pos, neg = labels == 1, labels == -1
    accuracy = (predictions == labels).mean(axis=1)
    tpr = (predictions[:, pos] == 1).mean(axis=1)
    tnr = (predictions[:, neg] == -1).mean(axis=1)
    return predictions, accuracy, tpr, tnr


@pytest.fixture(scope="module")
def pair_problem():
    """ITML fitted on 100 labelled pairs of overlapping classes (no threshold is perfect), and
    60 other pairs to calibrate on."""
    X, y = blobs(5, n=40)
    X += np.random.default_rng(5).normal(0, 1.5, X.shape)
    idx, labels = labelled_pairs(X, y, 160, seed=5)
    model = ITML().fit(X[idx[:100]], labels[:100])
    return model, (X[idx[:100]], labels[:100]), (X[idx[100:]], labels[100:])


def calibrated(pair_problem, **how):
    """A copy of the fitted model, calibrated on the other pairs."""
    model, _, (pairs, labels) = pair_problem
    return copy.deepcopy(model).calibrate_threshold(pairs, labels, **how), pairs, labels


def test_calibrated_accuracy_is_the_best_of_all_thresholds(pair_problem):
    model, pairs, labels = calibrated(pair_problem, strategy="accuracy")
    _, accuracy, _, _ = brute_force_rates(model.pair_score(pairs), labels)
    assert np.mean(model.predict(pairs) == labels) == accuracy.max()
    assert accuracy.max() < 1.0  # the problem does not make it trivial


def test_fit_calibrates_the_threshold_by_accuracy_on_the_training_pairs(pair_problem):
    model, (pairs, labels), _ = pair_problem
    _, accuracy, _, _ = brute_force_rates(model.pair_score(pairs), labels)
    assert np.mean(model.predict(pairs) == labels) == accuracy.max()


@pytest.mark.parametrize("beta", [0.5, 1.0, 3.0])
def test_calibrated_f_beta_is_the_best_of_all_thresholds(pair_problem, beta):
    model, pairs, labels = calibrated(pair_problem, strategy="f_beta", beta=beta)
    predictions, _, _, _ = brute_force_rates(model.pair_score(pairs), labels)
    best = max(fbeta_score(labels, p, beta=beta, zero_division=0) for p in predictions)
    assert fbeta_score(labels, model.predict(pairs), beta=beta) == pytest.approx(best, abs=1e-12)


@pytest.mark.parametrize("strategy", ["max_tpr", "max_tnr"])
@pytest.mark.parametrize("min_rate", [0.0, 0.5, 0.8, 1.0])
def test_calibrated_rates_are_the_best_under_the_constraint(pair_problem, strategy, min_rate):
    model, pairs, labels = calibrated(pair_problem, strategy=strategy, min_rate=min_rate)
    _, _, tpr, tnr = brute_force_rates(model.pair_score(pairs), labels)
    predicted = model.predict(pairs)
    got_tpr = np.mean(predicted[labels == 1] == 1)
    got_tnr = np.mean(predicted[labels == -1] == -1)
    if strategy == "max_tpr":
        assert got_tnr >= min_rate and got_tpr == tpr[tnr >= min_rate].max()
    else:
        assert got_tpr >= min_rate and got_tnr == tnr[tpr >= min_rate].max()


def test_predict_decision_function_and_score_agree(pair_problem):
    model, _, (pairs, labels) = pair_problem
    model = copy.deepcopy(model)
    decision = model.decision_function(pairs)
    M = model.get_mahalanobis_matrix()
    np.testing.assert_allclose(decision, -einsum_distances(pairs[:, 0], pairs[:, 1], M)
                               - model.threshold_, rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(model.predict(pairs), np.where(decision > 0, 1, -1))
    assert model.score(pairs, labels) == pytest.approx(
        roc_auc_score(labels, -einsum_distances(pairs[:, 0], pairs[:, 1], M)), abs=1e-12)
    model.set_threshold(-1.0)
    np.testing.assert_array_equal(model.predict(pairs),
                                  np.where(model.pair_distance(pairs) < 1.0, 1, -1))


def test_tuple_methods_exist_only_where_they_mean_something():
    X, y = blobs()
    idx, labels = labelled_pairs(X, y, 40)
    on_points = ITML().fit(X, y)
    for method in ("predict", "decision_function", "score"):
        assert hasattr(ITML(), method) and not hasattr(on_points, method)
        assert not hasattr(NCA(), method)
    assert not hasattr(LMNN(), "calibrate_threshold")
    on_points.calibrate_threshold(X[idx], labels)  # a threshold makes it a pair classifier
    assert np.mean(on_points.predict(X[idx]) == labels) > 0.5


@pytest.mark.parametrize("cls", [POLA, MDML])
def test_a_learned_squared_distance_threshold_is_the_pair_classifier(cls):
    """POLA's b and MDML's µ: similar when d² ≤ b; after a tuple fit ``threshold_`` is −√b."""
    X, y = blobs(6)
    idx, labels = labelled_pairs(X, y, 60, seed=6)
    points, index = first_appearance(X[idx])
    reference = cls().fit(points, constraints=Constraints(index[labels == 1],
                                                          index[labels == -1]))
    model = cls().fit(X[idx], labels)
    assert model.threshold_ == pytest.approx(-np.sqrt(reference.threshold_), rel=1e-12)
    d2 = einsum_distances(X[idx[:, 0]], X[idx[:, 1]], reference.metric_) ** 2
    np.testing.assert_array_equal(model.predict(X[idx]), np.where(d2 < reference.threshold_, 1, -1))


def test_triplet_and_quadruplet_predictions_count_like_brute_force():
    X, y = blobs(7)
    T = knn_triplets(X, y, k=2).triplets
    rng = np.random.default_rng(7)
    flipped = rng.random(len(T)) < 0.3
    model = LSML(max_iter=50).fit(X[T])
    M = model.get_mahalanobis_matrix()
    test = T.copy()
    test[flipped] = test[flipped][:, [0, 2, 1]]
    t = X[test]
    closer = einsum_distances(t[:, 0], t[:, 1], M) < einsum_distances(t[:, 0], t[:, 2], M)
    np.testing.assert_array_equal(model.predict(t), np.where(closer, 1, -1))
    assert model.score(t) == np.mean(closer)
    truth = np.where(flipped, -1, 1)
    assert model.score(t, truth) == np.mean(np.where(closer, 1, -1) == truth)
    decision = einsum_distances(t[:, 0], t[:, 2], M) - einsum_distances(t[:, 0], t[:, 1], M)
    np.testing.assert_allclose(model.decision_function(t), decision, rtol=1e-7, atol=1e-9)
    # quadruplets (a, b, c, d): d(a, b) < d(c, d); LSML learns from them too
    Q = np.column_stack([T[:, 0], T[:, 1], T[:, 0], T[:, 2]])
    quads = LSML(max_iter=50).fit(X[Q])
    np.testing.assert_allclose(quads.metric_, model.metric_, rtol=1e-10, atol=1e-12)
    q = X[Q]
    M = quads.get_mahalanobis_matrix()
    closer = einsum_distances(q[:, 0], q[:, 1], M) < einsum_distances(q[:, 2], q[:, 3], M)
    assert quads.score(q) == np.mean(closer)
    # a triplet of label −1 is learned turned round
    turned = LSML(max_iter=50).fit(X[test], truth)
    np.testing.assert_allclose(turned.metric_, model.metric_, rtol=1e-10, atol=1e-12)


def test_constraint_faults_are_one_line_and_name_what_is_needed():
    X, y = blobs(8)
    c = knn_triplets(X, y, k=2)
    T = X[c.triplets]
    with pytest.raises(ValueError, match="^ITML needs similar or dissimilar pairs; got only "
                                         "triplets") as fault:
        ITML().fit(T)
    assert "\n" not in str(fault.value)
    # pairs that all join a point to itself leave nothing to learn: no identity "converged"
    with pytest.raises(ValueError, match="^ITML needs similar or dissimilar pairs of distinct "
                                         "points") as fault:
        ITML().fit(X, constraints=Constraints(similar=[[0, 0], [3, 3]], triplets=c.triplets))
    assert "\n" not in str(fault.value)
    # DML-eig: the missing similar pairs, not the ridge, come first
    with pytest.raises(ValueError, match="^DMLEig needs similar pairs of distinct points") as fault:
        DMLEig().fit(X, constraints=Constraints([[0, 0], [1, 1]], c.dissimilar, c.triplets))
    assert "\n" not in str(fault.value)
    with pytest.raises(ValueError, match="^DMLEig needs similar or dissimilar pairs; got only "
                                         "triplets") as fault:
        DMLEig().fit(T)
    assert "\n" not in str(fault.value)
    # LMNN on triplets alone: its default impostor search needs labels, the way out is named
    with pytest.raises(ValueError, match="impostors='given'") as fault:
        LMNN().fit(T)
    assert "\n" not in str(fault.value)
    with pytest.raises(ValueError, match="impostors='given'") as fault:
        LMNN().fit(X, constraints=Constraints(triplets=c.triplets))
    assert "\n" not in str(fault.value)


@pytest.mark.parametrize("call, message", [
    (lambda X, idx, lab: ITML().fit(X[idx], np.zeros(len(idx))),
     r"^y: labels must be \+1 \(similar\) or -1 \(dissimilar\), got 0"),
    (lambda X, idx, lab: ITML().fit(X[idx]), r"^y: pairs need labels"),
    (lambda X, idx, lab: ITML().fit(X[idx], lab, constraints=Constraints()),
     r"^constraints: ITML.fit takes tuples, or X with constraints; not both"),
    (lambda X, idx, lab: ITML().fit(X[idx], lab, preprocessor=X),
     r"^preprocessor: given with tuples of points"),
    (lambda X, idx, lab: ITML().fit(idx + len(X), lab, preprocessor=X),
     r"^tuples: index \d+ is not a row of the preprocessor"),
    (lambda X, idx, lab: NCA().fit(X[idx], lab), r"^X: expected a 2-D array .* NCA learns from labels"),
    (lambda X, idx, lab: LMNN().fit(X[idx], lab), r"^LMNN needs triplets; got only pairs"),
    (lambda X, idx, lab: ITML().fit(X[idx], lab).predict(X[idx][:, :, :2]),
     r"^X has 2 features, but ITML is expecting 4 features as input"),
    (lambda X, idx, lab: ITML().fit(X[idx], lab).predict(idx),
     r"^tuples: expected an array of shape \(n, 2, d\)"),
    (lambda X, idx, lab: ITML().fit(X[idx], lab).calibrate_threshold(X[idx], lab, "max_tpr"),
     r"^min_rate: strategy='max_tpr' needs a rate in \[0, 1\]"),
    (lambda X, idx, lab: ITML().fit(X[idx], lab).calibrate_threshold(X[idx], lab, "best"),
     r"^strategy: expected one of accuracy, f_beta, max_tpr, max_tnr"),
])
def test_tuple_faults_are_one_line(call, message):
    X, y = blobs(9)
    idx, labels = labelled_pairs(X, y, 30, seed=9)
    with pytest.raises(ValueError, match=message) as fault:
        call(X, idx, labels)
    assert "\n" not in str(fault.value)
