"""SCML (global) against independent references: cvxpy on the convex problem in w, the loss
subgradient against central finite differences away from the hinge's kinks, the pieces of F and
of its dual written out triplet by triplet, the local LDA basis on a toy, the refusals, a 3-NN
sanity check on wine and scikit-learn's estimator checks."""

import warnings

import cvxpy as cp
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks
from test_sdml import check_parameter_constraints, run_estimator_check, wine_knn_errors

from dml_bench.constraints import Constraints, knn_triplets
from dml_bench.solvers.scml import SCML, TripletProblem

NO_PAIRS = np.zeros((0, 2), dtype=int)


def labelled_problem(seed, n_per_class=8, d=3, n_basis=8):
    """Three classes shifted along the first axis, their 2-NN target/impostor triplets, and a
    random basis of unit rows."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n_per_class)
    X = rng.normal(size=(len(y), d))
    X[:, 0] += 1.5 * y
    B = rng.normal(size=(n_basis, d))
    return X, y, knn_triplets(X, y, 2).triplets, B / np.linalg.norm(B, axis=1, keepdims=True)


def features_by_hand(X, triplets, B):
    """c_τ = (B(x_i − x_k))² − (B(x_i − x_j))², one triplet at a time."""
    return np.array([(B @ (X[i] - X[k])) ** 2 - (B @ (X[i] - X[j])) ** 2 for i, j, k in triplets])


def objective_by_hand(C, w, beta):
    return np.mean([max(0.0, 1.0 - c @ w) for c in C]) + beta * w.sum()


def cvx_scml(C, beta):
    """min over w ≥ 0 of mean_τ [1 − c_τᵀw]_+ + β Σ w (Clarabel): the optimum."""
    w = cp.Variable(C.shape[1], nonneg=True)
    problem = cp.Problem(cp.Minimize(cp.sum(cp.pos(1 - C @ w)) / len(C) + beta * cp.sum(w)))
    problem.solve(solver="CLARABEL")
    assert problem.status == "optimal"
    return problem.value


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_reaches_the_cvxpy_optimum_within_its_certified_tolerance(seed):
    X, _, T, B = labelled_problem(seed)
    beta, tol = 1e-3, 2e-3
    model = SCML(beta=beta, basis=B, batch_size=16, max_iter=20_000, tol=tol,
                 check_every=100).fit(X, constraints=Constraints(NO_PAIRS, NO_PAIRS, T))
    C = features_by_hand(X, T, B)
    best = cvx_scml(C, beta)
    w = model.weights_
    assert model.converged_ and np.all(w >= 0)
    assert model.objective_ == pytest.approx(objective_by_hand(C, w, beta), rel=1e-12)
    # the certificate is sound: F* ≥ dual bound, F − F* ≤ gap · F(0) with F(0) = 1, and within
    # the tolerance
    assert objective_by_hand(C, np.zeros_like(w), beta) == pytest.approx(1.0)
    assert model.dual_bound_ <= best + 1e-8
    assert model.objective_ - best <= model.optimality_ + 1e-8
    assert model.optimality_ <= tol and model.objective_ - best <= tol
    np.testing.assert_allclose(model.metric_, sum(wk * np.outer(b, b) for wk, b in zip(w, B)),
                               atol=1e-12)
    np.testing.assert_allclose(model.components_.T @ model.components_, model.metric_,
                               atol=1e-10)


def test_loss_subgradient_matches_finite_differences_away_from_the_kinks():
    """F is piecewise linear in w: where no margin is 1 it is differentiable, with gradient
    −(1/T) Σ_{active} c_τ + β."""
    X, _, T, B = labelled_problem(3)
    problem = TripletProblem(X @ B.T, T, beta=0.01)
    rng = np.random.default_rng(0)
    w = rng.uniform(0.05, 0.3, size=len(B))
    assert np.abs(problem.margins(w) - 1).min() > 1e-4
    grad = problem.batch_gradient(w, np.arange(len(T))) + problem.beta
    h = 1e-7
    for _ in range(5):
        E = rng.normal(size=len(B))
        slope = (problem.objective(w + h * E) - problem.objective(w - h * E)) / (2 * h)
        assert grad @ E == pytest.approx(slope, rel=1e-6, abs=1e-9)


def test_problem_pieces_match_their_definitions():
    X, _, T, B = labelled_problem(4)
    problem = TripletProblem(X @ B.T, T, beta=0.01)
    C = features_by_hand(X, T, B)
    rng = np.random.default_rng(1)
    w = rng.uniform(0, 0.5, size=len(B)) * (rng.random(len(B)) < 0.6)
    alpha = rng.uniform(0, 1 / len(T), size=len(T))
    np.testing.assert_allclose(problem.margins(w), C @ w, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(problem.features(np.arange(len(T))), C, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(problem.feature_sum(alpha), alpha @ C, rtol=1e-10, atol=1e-12)
    assert problem.objective(w) == pytest.approx(objective_by_hand(C, w, 0.01), rel=1e-12)
    # any α of the box, scaled into Σ α c ≤ β, bounds the optimum from below (weak duality)
    best = cvx_scml(C, 0.01)
    for scale in (0.2, 1.0, 5.0):
        assert problem.dual_value(scale * alpha) <= best + 1e-9
    assert problem.dual_bound(problem.margins(w)) <= best + 1e-9


def test_lda_basis_finds_the_discriminative_axis():
    """Two classes apart along the first axis, spread along the others: every local Fisher
    direction is (up to sign) the first axis; one per locale for two classes, unit norm."""
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 30)
    X = np.column_stack([2.0 * y + 0.1 * rng.normal(size=60), rng.normal(size=(60, 3))])
    T = knn_triplets(X, y, 3).triplets
    with warnings.catch_warnings():  # 200 steps: the basis is the point, not convergence
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SCML(n_locales=5, max_iter=200).fit(X, y, constraints=Constraints(NO_PAIRS,
                                                                                 NO_PAIRS, T))
    B = model.basis_
    assert B.shape == (5, 4)
    np.testing.assert_allclose(np.linalg.norm(B, axis=1), 1.0)
    assert np.abs(B[:, 0]).min() > 0.99


def test_random_basis_is_unit_norm_and_seeded():
    X, y, _, _ = labelled_problem(5)
    first = SCML(basis="random", n_basis=7, max_iter=100).fit(X, y)
    again = SCML(basis="random", n_basis=7, max_iter=100).fit(X, y)
    assert first.basis_.shape == (7, 3)
    np.testing.assert_allclose(np.linalg.norm(first.basis_, axis=1), 1.0)
    np.testing.assert_array_equal(first.basis_, again.basis_)
    np.testing.assert_array_equal(first.metric_, again.metric_)


def test_refusals_are_one_line():
    X, y, _, _ = labelled_problem(6)
    c = knn_triplets(X, y, 2)
    with pytest.raises(ValueError, match="^SCML needs triplets; got only similar/dissimilar "
                                         "pairs$"):
        SCML().fit(X, y, constraints=Constraints(c.similar, c.dissimilar, np.zeros((0, 3), int)))
    with pytest.raises(ValueError, match=r"^SCML\(basis='lda'\) needs the labels y; with "
                                         "constraints alone use basis='random'"):
        SCML().fit(X, constraints=c)
    with pytest.raises(ValueError, match=r"^basis: expected a finite array of shape "
                                         r"\(n_basis, 3\), got shape \(4, 2\)$"):
        SCML(basis=np.ones((4, 2))).fit(X, y)


def test_every_parameter_is_declared_and_checked():
    check_parameter_constraints(SCML, {"beta": 0.0, "basis": "bogus", "n_locales": 0,
                                       "n_neighbors": 0, "n_basis": 0, "batch_size": 0,
                                       "gamma": -1.0, "max_iter": 0, "tol": -1.0,
                                       "check_every": 0, "random_state": "seed"})


def test_lowers_the_3nn_error_on_wine():
    euclidean, learned = wine_knn_errors(SCML)
    assert learned < euclidean


@parametrize_with_checks([SCML(max_iter=200, check_every=50)])
def test_scikit_learn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        run_estimator_check(estimator, check)
