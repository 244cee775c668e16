"""MLKR (Weinberger & Tesauro 2007): its objective against the leave-one-out kernel regression
written out point by point, its gradient against central differences of that reference, and the
learned metric on a problem whose answer is known (the target depends on one feature)."""

import warnings

import numpy as np
import pytest
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import check_param_validation, parametrize_with_checks
from test_lfda import run_estimator_check

from dml_bench.solvers import SOLVERS
from dml_bench.solvers.mlkr import MLKR, mlkr_loss_grad


def reference_loss(A, X, y):
    """``Σ_i (y_i − ŷ_i)²`` with ``ŷ_i = Σ_{j≠i} y_j k_ij / Σ_{j≠i} k_ij`` and
    ``k_ij = exp(−‖A(x_i − x_j)‖²)``, one pair at a time."""
    total = 0.0
    for i in range(len(X)):
        num = den = 0.0
        for j in range(len(X)):
            if j != i:
                v = A @ (X[i] - X[j])
                k = np.exp(-v @ v)
                num += k * y[j]
                den += k
        total += (y[i] - num / den) ** 2
    return total


def small_problem(seed, n=15, d=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X[:, 0] - 0.5 * X[:, 1] ** 2 + 0.1 * rng.normal(size=n)


@pytest.mark.parametrize("r", [4, 2])
def test_objective_is_the_leave_one_out_error(r):
    X, y = small_problem(0)
    A = 0.6 * np.random.default_rng(1).normal(size=(r, 4))
    assert mlkr_loss_grad(A, X, y)[0] == pytest.approx(reference_loss(A, X, y), rel=1e-12)


@pytest.mark.parametrize("r", [4, 2])
def test_gradient_matches_central_differences_of_the_reference(r):
    """Central differences with step h err by O(h²) (the third derivatives, O(ℒ) here) plus
    the round-off ε·ℒ/h: at h = 10⁻⁵ both are below 10⁻⁹ · max(ℒ, 1)."""
    X, y = small_problem(2)
    A = 0.6 * np.random.default_rng(3).normal(size=(r, 4))
    h = 1e-5
    numeric = np.zeros_like(A)
    for idx in np.ndindex(A.shape):
        step = np.zeros_like(A)
        step[idx] = h
        numeric[idx] = (reference_loss(A + step, X, y) - reference_loss(A - step, X, y)) / (2 * h)
    analytic = mlkr_loss_grad(A, X, y)[1]
    scale = max(reference_loss(A, X, y), 1.0)
    np.testing.assert_allclose(analytic, numeric, rtol=0, atol=1e-7 * scale)
    assert np.abs(analytic).max() > 1e-3 * scale  # not trivially 0


def test_far_apart_points_predict_from_their_nearest_neighbour():
    """With the points 100× apart in kernel units every k_ij underflows; the prediction is the
    limit of the kernel average, the nearest other point's target, and the gradient is finite."""
    X, y = small_problem(4)
    Xs = 100 * X
    loss, grad = mlkr_loss_grad(np.eye(4), Xs, y)
    dist = np.linalg.norm(Xs[:, None] - Xs[None], axis=2)
    np.fill_diagonal(dist, np.inf)
    assert loss == pytest.approx(np.sum((y - y[dist.argmin(axis=1)]) ** 2), rel=1e-12)
    assert np.all(np.isfinite(grad))


def test_learned_metric_weights_the_informative_feature_most():
    """y = sin(1.5 x₀) + noise, four noise features: the learned A stretches feature 0 at least
    twice as much as any other, and the leave-one-out error falls from its starting value and
    monotonically along the iterations."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(120, 5))
    y = np.sin(1.5 * X[:, 0]) + 0.05 * rng.normal(size=120)
    model = MLKR(init="identity").fit(X, y)
    weight = np.linalg.norm(model.components_, axis=0)
    assert weight[0] >= 2 * weight[1:].max()
    start = reference_loss(np.eye(5), X, y)
    assert model.objective_ == pytest.approx(reference_loss(model.components_, X, y), rel=1e-9)
    assert model.objective_ < 0.2 * start
    objective = model.trace_["objective"]
    assert objective[0] < start and np.all(np.diff(objective) <= 1e-12 * start)


def test_bookkeeping_of_an_l_bfgs_run():
    X, y = small_problem(6, n=40)
    model = MLKR(n_components=2).fit(X, y)
    assert model.converged_ and 1 <= model.n_iter_ < 200
    assert {k: len(v) for k, v in model.trace_.items()} == dict.fromkeys(
        ("objective", "gradient_norm", "time"), model.n_iter_)
    grad = mlkr_loss_grad(model.components_, X - X.mean(axis=0), y)[1]
    assert model.optimality_ == pytest.approx(np.abs(grad).max(), rel=1e-12)
    assert model.trace_["gradient_norm"][-1] == pytest.approx(model.optimality_, rel=1e-12)
    assert model.components_.shape == (2, 4)
    np.testing.assert_allclose(model.metric_, model.components_.T @ model.components_)
    with pytest.warns(ConvergenceWarning,
                      match="MLKR did not converge: it reached the cap max_iter = 1 L-BFGS-B"):
        capped = MLKR(max_iter=1).fit(X, y)
    assert not capped.converged_ and capped.n_iter_ == 1


def test_initial_maps():
    """"pca": scikit-learn's principal axes (up to sign); "identity": the first rows of I;
    "random": seeded, rows of unit expected length."""
    X, _ = small_problem(7, n=30, d=6)
    centred = X - X.mean(axis=0)
    pca = MLKR(init="pca")._initial_map(centred, 3)
    reference = PCA(n_components=3).fit(X).components_
    np.testing.assert_allclose(np.abs(np.sum(pca * reference, axis=1)), 1.0, rtol=1e-10)
    np.testing.assert_array_equal(MLKR(init="identity")._initial_map(centred, 2), np.eye(6)[:2])
    random = MLKR(init="random", random_state=0)._initial_map(centred, 400)
    np.testing.assert_array_equal(random, MLKR(init="random", random_state=0)._initial_map(
        centred, 400))
    assert np.mean(np.sum(random ** 2, axis=1)) == pytest.approx(1.0, rel=0.05)


def test_class_labels_as_numbers_and_refusals():
    X, _ = small_problem(8, n=30)
    y = np.repeat([0, 1, 2], 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        assert MLKR().fit(X, y).objective_ < reference_loss(np.eye(4), X, y)
    with pytest.raises(ValueError, match="MLKR needs numeric targets y"):
        MLKR().fit(X, np.repeat(["a", "b", "c"], 10))
    with pytest.raises(ValueError, match="MLKR needs targets y"):
        MLKR().fit(X)
    with pytest.raises(ValueError, match="n_components=5 exceeds the number of features"):
        MLKR(n_components=5).fit(X, y)
    with pytest.raises(MemoryError, match=r"MLKR needs about .*\(n = 30, 2 of them\)"):
        MLKR(memory_limit_gb=1e-9).fit(X, y)


def test_parameter_constraints_cover_every_parameter():
    check_param_validation("MLKR", MLKR())


def test_registered_as_mlkr():
    assert SOLVERS["mlkr"] is MLKR


#: the default MLKR is checked with every registered solver (test_sklearn_checks); these are the
#: other starting maps and a reduced dimension, capped for time (convergence is not the point)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@parametrize_with_checks([MLKR(init="random", n_components=1, random_state=0, max_iter=20),
                          MLKR(init="identity", max_iter=20)])
def test_scikit_learn_estimator_checks(estimator, check):
    run_estimator_check(estimator, check)
