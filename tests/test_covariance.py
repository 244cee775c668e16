"""The inverse-covariance baseline against numpy's (pseudo-)inverse of ``numpy.cov`` and scipy's
Mahalanobis distance."""

import numpy as np
import pytest
from scipy.spatial.distance import mahalanobis
from sklearn.utils.estimator_checks import check_param_validation, parametrize_with_checks
from test_lfda import run_estimator_check

from dml_bench.solvers import SOLVERS
from dml_bench.solvers.covariance import Covariance


@pytest.fixture(scope="module")
def correlated():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5)) @ rng.normal(size=(5, 5)) + rng.normal(size=5) * 10
    return X, rng.integers(0, 3, 60)


def test_metric_is_the_inverse_of_numpys_covariance(correlated):
    X, y = correlated
    model = Covariance().fit(X, y)
    reference = np.linalg.pinv(np.cov(X, rowvar=False))
    np.testing.assert_allclose(model.metric_, reference, rtol=1e-9,
                               atol=1e-12 * np.abs(reference).max())
    np.testing.assert_allclose(model.covariance_, np.cov(X, rowvar=False), rtol=1e-12)
    assert model.rank_ == 5 and model.components_.shape == (5, 5)
    np.testing.assert_allclose(model.components_.T @ model.components_, model.metric_,
                               rtol=1e-10, atol=1e-12 * np.abs(reference).max())
    np.testing.assert_array_equal(Covariance().fit(X).metric_, model.metric_)  # y is ignored


def test_distances_are_scipys_mahalanobis(correlated):
    X, _ = correlated
    model = Covariance().fit(X)
    VI = np.linalg.inv(np.cov(X, rowvar=False))
    pairs = np.array([[0, 1], [2, 7], [10, 59], [33, 34], [5, 5]])
    expected = np.array([mahalanobis(X[i], X[j], VI) for i, j in pairs])
    np.testing.assert_allclose(model.pair_distances(X, pairs), expected ** 2, rtol=1e-9,
                               atol=1e-12)
    Z = model.transform(X)
    np.testing.assert_allclose(np.linalg.norm(Z[pairs[:, 0]] - Z[pairs[:, 1]], axis=1), expected,
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.cov(Z, rowvar=False), np.eye(5), atol=1e-9)  # whitened


def test_singular_covariance_gives_the_pseudo_inverse():
    """A feature repeated and fewer points than dimensions: Σ is singular, M is its
    pseudo-inverse with the stated cut-off (eigenvalues ≤ d·ε·λ_max are zero) and the map whitens
    the range of Σ only (rank_ rows)."""
    rng = np.random.default_rng(1)
    base = rng.normal(size=(6, 4))
    X = np.column_stack([base, base[:, 0], rng.normal(size=(6, 3))])  # n = 6 < d = 8
    d = X.shape[1]
    model = Covariance().fit(X)
    C = np.cov(X, rowvar=False)
    reference = np.linalg.pinv(C, rcond=d * np.finfo(float).eps)
    np.testing.assert_allclose(model.metric_, reference, rtol=1e-7,
                               atol=1e-9 * np.abs(reference).max())
    assert model.rank_ == np.linalg.matrix_rank(C) == 5
    assert model.components_.shape == (5, d)
    np.testing.assert_allclose(np.cov(model.transform(X), rowvar=False), np.eye(5), atol=1e-8)


def test_more_dimensions_than_points_is_the_pseudo_inverse():
    """n ≪ d (the case of face images): the pseudo-inverse of numpy's covariance, of rank n − 1,
    and scipy's Mahalanobis distance in it for points in the span of the training points."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 5)) @ rng.normal(size=(5, 300)) + rng.normal(size=(30, 300))
    d = X.shape[1]
    model = Covariance().fit(X)
    C = np.cov(X, rowvar=False)
    reference = np.linalg.pinv(C, rcond=d * np.finfo(float).eps, hermitian=True)
    np.testing.assert_allclose(model.metric_, reference, rtol=1e-7,
                               atol=1e-9 * np.abs(reference).max())
    np.testing.assert_allclose(model.covariance_, C, rtol=1e-12, atol=1e-12 * np.abs(C).max())
    assert model.rank_ == np.linalg.matrix_rank(C) == 29
    assert model.components_.shape == (29, d)
    np.testing.assert_allclose(np.cov(model.transform(X), rowvar=False), np.eye(29), atol=1e-8)
    i, j = 3, 17
    expected = (X[i] - X[j]) @ reference @ (X[i] - X[j])
    assert model.pair_distances(X, np.array([[i, j]]))[0] == pytest.approx(expected, rel=1e-7)


def test_one_feature_and_constant_points():
    X = np.array([[1.0], [2.0], [4.0]])
    assert Covariance().fit(X).metric_[0, 0] == pytest.approx(1 / np.var(X, ddof=1))
    for shape in ((4, 3), (3, 5)):  # more points than dimensions, and fewer
        model = Covariance().fit(np.ones(shape))
        np.testing.assert_array_equal(model.metric_, np.zeros((shape[1], shape[1])))
        assert model.rank_ == 0 and model.components_.shape == (1, shape[1])


def test_closed_form_bookkeeping(correlated):
    model = Covariance().fit(correlated[0])
    assert model.optimality_measure == "closed_form" and model.optimality_ == 0.0
    assert model.n_iter_ == 0 and model.converged_ and model.trace_ == {}
    assert Covariance.constraint_kind == "none"


def test_parameter_constraints_cover_every_parameter():
    check_param_validation("Covariance", Covariance())


def test_registered_as_covariance():
    assert SOLVERS["covariance"] is Covariance


@parametrize_with_checks([Covariance()])
def test_scikit_learn_estimator_checks(estimator, check):
    run_estimator_check(estimator, check)


def test_y_is_ignored_as_by_an_unsupervised_transformer(correlated):
    """Any y, even of another length or not numbers, gives the fit without y."""
    X, _ = correlated
    reference = Covariance().fit(X).metric_
    for y in (np.arange(len(X)), ["a"] * 3, None):
        np.testing.assert_array_equal(Covariance().fit(X, y).metric_, reference)
