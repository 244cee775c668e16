"""LSML against independent references: its objective written out comparison by comparison, its
gradient against central finite differences, the Armijo descent's monotone decrease, the
residuals on separable triplets, the ``quadruplets=`` keyword, the refusals, a 3-NN sanity check on
wine and scikit-learn's estimator checks."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks
from test_sdml import check_parameter_constraints, run_estimator_check, wine_knn_errors

from dml_bench.constraints import Constraints, knn_triplets
from dml_bench.solvers.lsml import LSML, LSMLObjective

NO_PAIRS = np.zeros((0, 2), dtype=int)


def random_problem(seed, n=15, d=4, n_quads=40):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    quads = np.array([rng.choice(n, 4, replace=False) for _ in range(n_quads)])
    return X, quads


def random_pd(rng, d):
    B = rng.normal(size=(d, d))
    return B @ B.T / d + 0.5 * np.eye(d)


def objective_by_hand(X, quads, M, A, lam):
    """Σ_q max(d_ab − d_cd, 0)² + λ (tr(M A) − log det(M A) − d), one comparison at a time."""
    total = 0.0
    for a, b, c, e in quads:
        d_ab = np.sqrt((X[a] - X[b]) @ M @ (X[a] - X[b]))
        d_cd = np.sqrt((X[c] - X[e]) @ M @ (X[c] - X[e]))
        total += max(d_ab - d_cd, 0.0) ** 2
    d = len(M)
    return total + lam * (np.trace(M @ A) - np.log(np.linalg.det(M @ A)) - d)


@pytest.mark.parametrize("seed,lam", [(0, 1.0), (1, 0.1), (2, 3.0)])
def test_objective_and_gradient_match_the_definition_and_finite_differences(seed, lam):
    X, quads = random_problem(seed)
    rng = np.random.default_rng(100 + seed)
    A, M = random_pd(rng, 4), random_pd(rng, 4)
    f = LSMLObjective(X, quads, A, lam)
    value, state = f.value(M)
    assert value == pytest.approx(objective_by_hand(X, quads, M, A, lam), rel=1e-12)
    _, dist, _ = state
    residuals = dist[f.ab] - dist[f.cd]
    assert np.abs(residuals).min() > 1e-3  # away from the hinge's kink: f is smooth here
    G, n_active = f.gradient(state)
    assert n_active == np.count_nonzero(residuals > 0) > 0
    h = 1e-6
    for _ in range(5):
        E = rng.normal(size=(4, 4))
        E = (E + E.T) / 2
        slope = (f.value(M + h * E)[0] - f.value(M - h * E)[0]) / (2 * h)
        assert np.vdot(G, E) == pytest.approx(slope, rel=1e-6, abs=1e-8)


def test_the_objective_is_infinite_off_the_positive_definite_cone():
    X, quads = random_problem(3)
    f = LSMLObjective(X, quads, np.eye(4), 1.0)
    assert f.value(np.diag([1.0, 1.0, 1.0, -1e-3]))[0] == np.inf


@pytest.mark.parametrize("prior", ["identity", "covariance"])
def test_armijo_descent_decreases_the_objective_monotonically_to_a_stationary_point(prior):
    X, quads = random_problem(4, n=30, d=5, n_quads=120)
    model = LSML(prior=prior, tol=1e-6, max_iter=5000).fit(X, quadruplets=quads)
    Xc = X - X.mean(axis=0)
    A = np.eye(5) if prior == "identity" else Xc.T @ Xc / len(X)
    start = objective_by_hand(X, quads, np.linalg.inv(A), A, 1.0)
    values = np.concatenate([[start], model.trace_["objective"]])
    assert np.all(np.diff(values) < 0)
    assert model.converged_ and model.optimality_ <= 1e-6
    assert model.objective_ == pytest.approx(objective_by_hand(X, quads, model.metric_, A, 1.0))
    assert len(model.trace_["time"]) == model.n_iter_
    assert np.linalg.eigvalsh(model.metric_)[0] > 0


def separable_problem():
    """Two classes apart along the first axis with tiny spread there, noise in the other two:
    a metric that weights only the first axis satisfies every target/impostor triplet."""
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 20)
    X = np.column_stack([y + 0.05 * rng.normal(size=40), rng.normal(size=(40, 2))])
    return X, knn_triplets(X, y, 3)


def max_residual(X, triplets, M):
    i, j, k = triplets.T
    near = np.sqrt(np.einsum("ij,jk,ik->i", X[i] - X[j], M, X[i] - X[j]))
    far = np.sqrt(np.einsum("ij,jk,ik->i", X[i] - X[k], M, X[i] - X[k]))
    return np.maximum(near - far, 0.0).max(), np.count_nonzero(near > far)


def test_on_separable_triplets_the_violations_vanish_with_the_regularization():
    """The squared hinge has zero slope at a zero residual, so the LogDet term leaves residuals of
    order λ at the optimum: they fall tenfold per decade of λ, towards a metric that satisfies
    every triplet."""
    X, c = separable_problem()
    at_identity, violated_at_identity = max_residual(X, c.triplets, np.eye(3))
    assert violated_at_identity > 20
    worst = []
    for lam in (1.0, 0.1, 0.01):
        model = LSML(regularization=lam, tol=1e-7, max_iter=5000).fit(X, constraints=c)
        residual, violated = max_residual(X, c.triplets, model.metric_)
        assert violated == model.n_violated_ <= violated_at_identity / 4
        worst.append(residual)
    assert worst[0] < at_identity / 3
    assert worst[1] < worst[0] / 5 and worst[2] < worst[1] / 5 and worst[2] < 0.005


def test_triplets_are_the_quadruplets_i_j_i_k():
    X, c = separable_problem()
    from_triplets = LSML(tol=1e-6).fit(X, constraints=c)
    from_quads = LSML(tol=1e-6).fit(X, quadruplets=c.triplets[:, [0, 1, 0, 2]])
    np.testing.assert_allclose(from_quads.metric_, from_triplets.metric_, rtol=1e-10)
    # explicit quadruplets add to the constraints' triplets
    both = LSML(tol=1e-6).fit(X, constraints=Constraints(NO_PAIRS, NO_PAIRS, c.triplets[:30]),
                              quadruplets=c.triplets[30:, [0, 1, 0, 2]])
    np.testing.assert_allclose(both.metric_, from_triplets.metric_, rtol=1e-10)


@pytest.mark.parametrize("quads,message", [
    (np.zeros((3, 3), dtype=int), (r"^quadruplets: expected an array of shape \(n, 4\) of row "
                                   r"indices of X, got shape \(3, 3\)$")),
    (np.ones((2, 4)) * 0.5, r"^quadruplets: indices must be integers, got dtype float64$"),
    (np.array([[0, 1, 2, 40]]), (r"^quadruplets: index 40 is not a row of X; indices must be "
                                 r"in \[0, 40\)$")),
    (np.array([[0, 1, -1, 3]]), r"^quadruplets: index -1 is not a row of X"),
])
def test_bad_quadruplets_are_refused_in_one_line(quads, message):
    X, _ = separable_problem()
    with pytest.raises(ValueError, match=message):
        LSML().fit(X, quadruplets=quads)


def test_refuses_pairs_only_in_one_line_and_keeps_no_fit_state():
    X, c = separable_problem()
    model = LSML()
    with pytest.raises(ValueError, match="^LSML needs triplets or quadruplets; got only "
                                         "similar/dissimilar pairs$"):
        model.fit(X, constraints=Constraints(c.similar, c.dissimilar, np.zeros((0, 3), int)))
    assert not hasattr(model, "_quadruplets")


def test_every_parameter_is_declared_and_checked():
    check_parameter_constraints(LSML, {"regularization": 0.0, "prior": "bogus", "tol": -1.0,
                                       "max_iter": 0})


def test_lowers_the_3nn_error_on_wine():
    euclidean, learned = wine_knn_errors(LSML)
    assert learned < euclidean


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@parametrize_with_checks([LSML(max_iter=50)])
def test_scikit_learn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        run_estimator_check(estimator, check)
