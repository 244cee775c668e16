"""What every registered solver promises, whatever its algorithm.

Estimator conventions (clone-able, fitted attributes ending in ``_``), a PSD metric with
``M = LᵀL``, ``transform`` consistent with the metric, a per-iteration trace with times, and
results that do not depend on hidden global state (ARPACK keeps its random start across calls: the
d = 70 data below takes the Lanczos path of ``top_eigen.top_eigenvector``).
"""

import inspect
import warnings

import numpy as np
import pytest
from scipy.sparse.linalg import eigsh
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import estimator_checks

from dml_bench.solvers import SOLVERS, MetricLearner

#: every registered metric learner (the registry also holds the SVM classifier baseline)
LEARNERS = sorted(n for n in SOLVERS if issubclass(SOLVERS[n], MetricLearner))

QUICK = {"lfda": {}, "covariance": {}, "mlkr": {"max_iter": 20}, "sdml": {},
         "lsml": {"max_iter": 20}, "scml": {"max_iter": 200, "check_every": 50},
         "dml_eig": {"max_iter": 20}, "lmnn_eig": {"max_iter": 20},
         "sdpmetric": {"max_iter": 15, "tol": 0}, "boostmetric": {"max_iter": 15},
         "frobmetric": {"max_iter": 15}, "xing": {"max_iter": 20}, "lmnn": {"max_iter": 20},
         "nca": {"max_iter": 5}, "ldml": {"max_iter": 20}, "lda": {}, "pca": {}, "rca": {},
         "itml": {"max_iter": 3}, "pola": {}, "mdml": {"log_every": 100},
         "sgd_incsvd": {"max_iter": 10, "step": 0.01}, "gd": {"max_iter": 5, "step": 0.01},
         "sgd": {"max_iter": 10, "step": 0.01}, "sgd_batch": {"max_iter": 10, "step": 0.01},
         "fw": {"max_iter": 5}, "sgd_one": {"max_iter": 10, "step": 0.01}}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (40, 70)), rng.normal(0.5, 1, (40, 70))])
    return X, np.repeat([0, 1], 40)


def fit(name, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return SOLVERS[name](**QUICK.get(name, {})).fit(X, y)


def test_every_solver_has_quick_settings_here():
    assert set(LEARNERS) - {"euclidean"} == set(QUICK)


@pytest.mark.parametrize("name", LEARNERS)
def test_fitted_metric_contract(name, data):
    X, y = data
    model = fit(name, X, y)
    M, L = model.metric_, model.components_
    assert M.shape == (70, 70) and np.allclose(M, M.T)
    assert np.linalg.eigvalsh(M).min() >= -1e-9 * max(1.0, np.abs(M).max())
    np.testing.assert_allclose(L.T @ L, M, atol=1e-10 * max(1.0, np.abs(M).max()))
    pairs = np.array([[0, 1], [2, 50], [41, 79]])
    diffs = X[pairs[:, 0]] - X[pairs[:, 1]]
    np.testing.assert_allclose(model.pair_distances(X, pairs),
                               np.einsum("ij,jk,ik->i", diffs, M, diffs), rtol=1e-8, atol=1e-12)
    assert model.constraint_kind in ("none", "pairs", "triplets", "labels")
    assert isinstance(model.n_iter_, (int, np.integer)) and isinstance(model.trace_, dict)
    if model.n_iter_:
        counter = model.trace_.get("iteration", model.trace_.get("n_updates"))
        if counter is None:  # one record per iteration
            assert len(model.trace_["time"]) == model.n_iter_
        else:  # a record every few iterations, numbered, the last at the end
            assert len(counter) == len(model.trace_["time"]) and counter[-1] == model.n_iter_
            assert np.all(np.diff(counter) > 0)
        assert np.all(np.diff(model.trace_["time"]) >= 0)
    assert clone(model).get_params() == model.get_params()


@pytest.mark.parametrize("name", sorted(set(LEARNERS) - {"euclidean"}))
def test_result_does_not_depend_on_earlier_arpack_calls(name, data):
    X, y = data
    first = fit(name, X, y).metric_
    rng = np.random.default_rng(1)
    for _ in range(5):
        eigsh(rng.random((90, 90)) + np.eye(90), k=1)
    np.testing.assert_array_equal(fit(name, X, y).metric_, first)


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_constructor_stores_each_argument_unchanged(name):
    cls = SOLVERS[name]
    names = [p for p in inspect.signature(cls).parameters]
    given = {p: object() for p in names}
    model = cls(**given)
    assert set(vars(model)) == set(names)
    assert all(getattr(model, p) is given[p] for p in names)
    assert all(model.get_params()[p] is given[p] for p in names)
    for check in (estimator_checks.check_no_attributes_set_in_init,
                  estimator_checks.check_parameters_default_constructible,
                  estimator_checks.check_get_params_invariance,
                  estimator_checks.check_set_params):
        check(name, cls())
