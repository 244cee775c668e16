"""ITML against an independent convex solver (cvxpy) and the paper's / authors' definitions."""

import warnings

import numpy as np
import pytest
from scipy.spatial.distance import pdist
from sklearn.exceptions import ConvergenceWarning

from dml_bench.constraints import Constraints
from dml_bench.solvers.itml import (BLOCKED_FROM_D, ITML, itml_objective, random_label_pairs,
                                    squared_distance_bounds)
from problems import diffs, random_pair_problem

cp = pytest.importorskip("cvxpy")


def tiny_problem(seed, d=4, n=12, n_similar=10, n_dissimilar=15, scale=2.0):
    return random_pair_problem(seed, d, n, n_similar, n_dissimilar, scale)


def quad(X, pairs, M):
    D = diffs(X, pairs)
    return np.einsum("ij,jk,ik->i", D, M, D)


def cvx_optimum(X, c, u, l, gamma, prior_inverse=None):
    """min tr M − log det M − d + γ Σ (ξ/ξ₀ − log(ξ/ξ₀) − 1), d_M² ≤ ξ (similar), ≥ ξ (dissimilar);
    with ``prior_inverse`` A = M₀⁻¹ the LogDet divergence to M₀, tr(AM) − log det(AM) − d."""
    d = X.shape[1]
    A = np.eye(d) if prior_inverse is None else prior_inverse
    M = cp.Variable((d, d), PSD=True)
    xs, xd = cp.Variable(len(c.similar)), cp.Variable(len(c.dissimilar))
    Ds, Dd = diffs(X, c.similar), diffs(X, c.dissimilar)
    slack = (cp.sum(xs / u - cp.log(xs) + np.log(u) - 1)
             + cp.sum(xd / l - cp.log(xd) + np.log(l) - 1))
    objective = cp.trace(A @ M) - cp.log_det(M) - np.linalg.slogdet(A)[1] - d + gamma * slack
    cons = [cp.sum(cp.multiply(Ds @ M, Ds), axis=1) <= xs,
            cp.sum(cp.multiply(Dd @ M, Dd), axis=1) >= xd]
    problem = cp.Problem(cp.Minimize(objective), cons)
    problem.solve(solver="CLARABEL")
    assert problem.status == "optimal"
    return problem.value, M.value


def fit(X, c, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return ITML(**params).fit(X, constraints=c)


def best_slack_objective(model, X, c, gamma):
    """Objective at the returned M with the slacks that are optimal (and feasible) for that M."""
    u, l = model.bounds_
    qs, qd = quad(X, c.similar, model.metric_), quad(X, c.dissimilar, model.metric_)
    xi = np.concatenate([np.maximum(qs, u), np.minimum(qd, l)])
    xi0 = np.concatenate([np.full(len(qs), u), np.full(len(qd), l)])
    return itml_objective(model.metric_, xi, xi0, gamma)


@pytest.mark.parametrize("seed,gamma", [(0, 1.0), (1, 1.0), (2, 0.1), (3, 10.0)])
def test_reaches_the_convex_optimum(seed, gamma):
    X, c = tiny_problem(seed)
    model = fit(X, c, gamma=gamma, tol=1e-10, max_proj=10**5)
    assert model.converged_
    u, l = model.bounds_
    opt, M_opt = cvx_optimum(X, c, u, l, gamma)
    f_feasible = best_slack_objective(model, X, c, gamma)
    assert f_feasible >= opt - 1e-6 * abs(opt)  # a feasible point cannot beat the optimum
    assert (f_feasible - opt) / abs(opt) < 1e-3
    assert abs(model.objective_ - opt) / abs(opt) < 1e-3  # with the algorithm's own slacks
    np.testing.assert_allclose(model.metric_, M_opt, atol=1e-3 * np.abs(M_opt).max())


def test_constraints_hold_within_the_slacks_and_metric_is_positive_definite():
    X, c = tiny_problem(4, d=6, n=20, n_similar=20, n_dissimilar=20)
    model = fit(X, c, tol=1e-9, max_proj=10**5)
    assert model.converged_
    M = model.metric_
    np.testing.assert_allclose(M, M.T, atol=0)
    assert np.linalg.eigvalsh(M).min() > 0
    np.testing.assert_allclose(model.components_.T @ model.components_, M, atol=1e-10)
    ns = len(c.similar)
    xi_s, xi_d = model.slack_[:ns], model.slack_[ns:]
    u, l = model.bounds_
    assert np.all(quad(X, c.similar, M) <= xi_s * (1 + 1e-6))
    assert np.all(quad(X, c.dissimilar, M) >= xi_d * (1 - 1e-6))
    # KKT: λ ≥ 0, and each slack moved away from its target only in the direction its
    # constraint pushes (similar slacks grow above u, dissimilar shrink below l)
    assert np.all(model.dual_ >= 0)
    assert np.all(xi_s >= u * (1 - 1e-12)) and np.all(xi_d <= l * (1 + 1e-12))
    assert model.trace_["violation"][-1] < 1e-6
    np.testing.assert_allclose(model.pair_distances(X, c.dissimilar), quad(X, c.dissimilar, M),
                               rtol=1e-9)


def test_hard_constraints_with_infinite_gamma():
    """γ = ∞ (``gamma_proj = 1``, no slack): Eq. (4) without slacks, on a feasible problem."""
    rng = np.random.default_rng(5)
    d, n = 5, 20
    X = rng.normal(size=(n, d))
    B = rng.normal(size=(d, d))
    M_star = B @ B.T + np.eye(d)  # a feasible metric: sort 12 pairs by their d_{M*}²
    pairs = np.array([rng.choice(n, 2, replace=False) for _ in range(12)])
    order = np.argsort(quad(X, pairs, M_star))
    q_star = np.sort(quad(X, pairs, M_star))
    c = Constraints(pairs[order[:6]], pairs[order[6:]], np.zeros((0, 3), int))
    u, l = q_star[5], q_star[6]
    model = fit(X, c, gamma=np.inf, bounds=(u, l), tol=1e-10, max_proj=10**5)
    assert model.converged_
    assert quad(X, c.similar, model.metric_).max() <= u * (1 + 1e-6)
    assert quad(X, c.dissimilar, model.metric_).min() >= l * (1 - 1e-6)
    M = cp.Variable((d, d), PSD=True)
    Ds, Dd = diffs(X, c.similar), diffs(X, c.dissimilar)
    problem = cp.Problem(cp.Minimize(cp.trace(M) - cp.log_det(M) - d),
                         [cp.sum(cp.multiply(Ds @ M, Ds), axis=1) <= u,
                          cp.sum(cp.multiply(Dd @ M, Dd), axis=1) >= l])
    problem.solve(solver="CLARABEL")
    assert problem.status == "optimal"
    assert abs(model.objective_ - problem.value) / abs(problem.value) < 1e-3


def test_bounds_are_percentiles_of_squared_distances():
    X, c = tiny_problem(6, d=3, n=30, scale=10.0)
    model = fit(X, c, max_proj=1)
    sq = pdist(X, "sqeuclidean")
    expected = np.percentile(sq, [5, 95])
    np.testing.assert_allclose(model.bounds_, expected, rtol=1e-12)
    non_squared = np.percentile(pdist(X), [5, 95])  # metric-learn's (wrong) choice
    assert not np.allclose(model.bounds_, non_squared, rtol=0.1)
    # u = 5th percentile bounds similar pairs, l = 95th the dissimilar ones
    assert model.bounds_[0] < model.bounds_[1]
    # the sampled path (many pairs) estimates the same percentiles
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(600, 3)) * 5
    exact = np.percentile(pdist(Z, "sqeuclidean"), [5, 95])
    sampled = squared_distance_bounds(Z, rng=0, max_pairs=50_000)
    np.testing.assert_allclose(sampled, exact, rtol=0.05)


def test_explicit_bounds_and_no_active_constraint_returns_identity():
    X, c = tiny_problem(7)
    # bounds so loose that every constraint holds at M = I: all duals stay 0, M = M₀ = I
    model = fit(X, c, bounds=(1e6, 1e-6))
    assert model.converged_ and model.n_iter_ == 1
    np.testing.assert_allclose(model.metric_, np.eye(X.shape[1]), atol=0)
    assert model.objective_ == pytest.approx(0.0, abs=1e-12)


def test_rank_one_update_equals_sherman_morrison_projection():
    """One projection on one violated similar pair: M⁻¹ ← M⁻¹ − α v vᵀ lands on p = ξ (new)."""
    X = np.array([[0.0, 0.0], [3.0, 1.0]])
    c = Constraints(np.array([[0, 1]]), np.zeros((0, 2), int), np.zeros((0, 3), int))
    gamma, u = 1.0, 2.0
    model = fit(X, c, gamma=gamma, bounds=(u, 100.0), max_iter=1, tol=0)
    v = X[0] - X[1]
    p = v @ v
    alpha = -gamma / (gamma + 1) * (1 / p - 1 / u)  # the dual grows by this amount
    M_expected = np.linalg.inv(np.eye(2) + alpha * np.outer(v, v))
    np.testing.assert_allclose(model.metric_, M_expected, rtol=1e-12)
    assert model.dual_[0] == pytest.approx(alpha)
    xi = model.slack_[0]
    assert v @ model.metric_ @ v == pytest.approx(xi, rel=1e-12)  # projected onto p = ξ
    assert xi == pytest.approx(1 / (1 / u - alpha / gamma))


def algorithm1_reference(X, c, u, l, gamma, n_sweeps):
    """Algorithm 1 of the paper written out with dense numpy (ItmlAlg.m's α and ξ constants).

    Per constraint: p = vᵀAv, α = min(λ, δ γ/(γ+1) (1/p − 1/ξ)), β = δα/(1 − δαp),
    1/ξ ← 1/ξ + δα/γ, λ ← λ − α, A ← A + β A v vᵀ A. Returns (A, ξ, λ, number of clipped α = λ,
    largest δ (p − ξ) met in the last sweep, each before its projection).
    """
    D = np.vstack([diffs(X, c.similar), diffs(X, c.dissimilar)])
    delta = np.r_[np.ones(len(c.similar)), -np.ones(len(c.dissimilar))]
    xi = np.where(delta > 0, u, l).astype(float)
    lam, A, n_clipped = np.zeros(len(D)), np.eye(X.shape[1]), 0
    g = 1.0 if np.isinf(gamma) else gamma / (gamma + 1)
    for _ in range(n_sweeps):
        worst = -np.inf
        for k, (v, dk) in enumerate(zip(D, delta)):
            p = v @ A @ v
            worst = max(worst, dk * (p - xi[k]))
            step = dk * g * (1 / p - 1 / xi[k])
            alpha = min(lam[k], step)
            n_clipped += bool(lam[k] < step)
            beta = dk * alpha / (1 - dk * alpha * p)
            if np.isfinite(gamma):
                xi[k] = 1 / (1 / xi[k] + dk * alpha / gamma)
            lam[k] -= alpha
            A = A + beta * A @ np.outer(v, v) @ A
    return A, xi, lam, n_clipped, worst


@pytest.mark.parametrize("d", [5, BLOCKED_FROM_D + 6])  # the plain loop and the blocked one
@pytest.mark.parametrize("gamma", [1.0, 0.3, np.inf])
def test_compiled_sweeps_equal_the_algorithm1_reference(gamma, d):
    X, c = tiny_problem(10, d=d, n=20 + 4 * d, n_similar=15 + 3 * d, n_dissimilar=20 + 4 * d)
    u, l = squared_distance_bounds(X)
    model = fit(X, c, gamma=gamma, bounds=(u, l), tol=0, max_iter=6)
    assert model.n_iter_ == 6
    A, xi, lam, n_clipped, worst = algorithm1_reference(X, c, u, l, gamma, 6)
    assert n_clipped > 0  # the clipping α = λ (a dual returning to 0) is exercised
    np.testing.assert_allclose(model.metric_, A, rtol=1e-11, atol=1e-12 * np.abs(A).max())
    np.testing.assert_allclose(model.slack_, xi, rtol=1e-11)
    np.testing.assert_allclose(model.dual_, lam, rtol=1e-11, atol=1e-12 * np.abs(lam).max())
    # the trace: log det carried by the determinant lemma over 6 sweeps against slogdet, and the
    # largest violation the last sweep met
    xi0 = np.where(np.arange(len(xi)) < len(c.similar), u, l)
    slack = 0.0 if np.isinf(gamma) else gamma * np.sum(xi / xi0 - np.log(xi / xi0) - 1)
    assert model.trace_["objective"][-1] == pytest.approx(
        logdet_divergence(A, np.eye(d)) + slack, rel=1e-10)
    assert model.trace_["violation"][-1] * np.mean(xi0) == pytest.approx(worst, rel=1e-9)


def test_random_pairs_follow_the_authors_sampling():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (15, 3)), rng.normal(3, 1, (15, 3)), rng.normal(-3, 1, (15, 3))])
    y = np.repeat([0, 1, 2], 15)
    similar, dissimilar = random_label_pairs(y, np.random.RandomState(0))
    assert len(similar) + len(dissimilar) == 40 * 3 * 2
    assert np.all(y[similar[:, 0]] == y[similar[:, 1]])
    assert np.all(y[dissimilar[:, 0]] != y[dissimilar[:, 1]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = ITML(pairs="random", random_state=1, max_proj=5000).fit(X, y)
        np.random.seed(123)  # global state must not matter
        b = ITML(pairs="random", random_state=1, max_proj=5000).fit(X, y)
        other = ITML(pairs="random", random_state=2, max_proj=5000).fit(X, y)
    np.testing.assert_array_equal(a.metric_, b.metric_)
    assert not np.allclose(a.metric_, other.metric_)
    with pytest.raises(ValueError):
        ITML(pairs="random").fit(X, constraints=Constraints(np.array([[0, 1]]),
                                                            np.array([[0, 20]]),
                                                            np.zeros((0, 3), int)))


def test_stopping_rule_cap_and_warning():
    X, c = tiny_problem(8, d=5, n=30, n_similar=30, n_dissimilar=30)
    with pytest.warns(ConvergenceWarning):
        capped = ITML(tol=0, max_proj=100).fit(X, constraints=c)
    # the cap is checked at the end of a sweep (ItmlAlg.m): 60 constraints → 2 sweeps
    assert not capped.converged_ and capped.n_iter_ == 2 and capped.n_proj_ == 120
    default = fit(X, c)
    conv = default.trace_["conv"]
    assert default.converged_ and conv[-1] < 0.01 and np.all(conv[:-1] >= 0.01)
    assert set(default.trace_) == {"objective", "conv", "violation", "time"}
    assert all(len(v) == default.n_iter_ for v in default.trace_.values())
    assert np.all(np.diff(default.trace_["time"]) >= 0)


def test_identical_points_are_dropped():
    X, c = tiny_problem(9)
    X[1] = X[0]
    c = Constraints(np.vstack([c.similar, [[0, 1]]]), c.dissimilar, c.triplets)
    model = fit(X, c, max_proj=10**5)
    all_pairs = np.vstack([c.similar, c.dissimilar])
    n_zero = int(np.sum(np.all(X[all_pairs[:, 0]] == X[all_pairs[:, 1]], axis=1)))
    assert n_zero >= 1
    assert len(model.slack_) == len(all_pairs) - n_zero
    assert np.all(np.isfinite(model.metric_))


def test_bad_parameters_are_refused():
    X, c = tiny_problem(0)
    for params in ({"pairs": "bogus"}, {"gamma": 0}, {"tol": -1}, {"max_iter": 0},
                   {"bounds": (-1.0, 2.0)}):
        with pytest.raises(ValueError):
            ITML(**params).fit(X, constraints=c)


# -- prior: M₀ of the LogDet divergence --------------------------------------------------------


def sym_power(S, p):
    """S^p of a symmetric positive definite S by its eigendecomposition (S^{1/2}, S^{-1/2})."""
    lam, U = np.linalg.eigh(S)
    return (U * lam**p) @ U.T


def logdet_divergence(M, M0):
    """``tr(M M₀⁻¹) − log det(M M₀⁻¹) − d``, written out with solve and slogdet."""
    P = np.linalg.solve(M0, M)
    return float(np.trace(P) - np.linalg.slogdet(P)[1] - len(M))


@pytest.mark.parametrize("prior", ["covariance", "array"])
def test_a_prior_is_the_identity_prior_on_whitened_points(prior):
    """D_ld(RᵀMR, RᵀM₀R) = D_ld(M, M₀): ITML with M₀ on X is ITML with I on X M₀^{1/2}."""
    X, c = tiny_problem(5, n=20, n_similar=15, n_dissimilar=20)
    rng = np.random.default_rng(1)
    B = rng.normal(size=(4, 4))
    M0 = (np.linalg.inv(np.cov(X.T, bias=True)) if prior == "covariance"
          else B @ B.T + 0.5 * np.eye(4))
    model = fit(X, c, prior="covariance" if prior == "covariance" else M0, tol=1e-8)
    R = sym_power(M0, 0.5)  # a factor of M₀ other than the Cholesky one the code uses
    white = fit(X @ R, c, tol=1e-8)
    assert model.converged_ and white.converged_ and model.n_iter_ == white.n_iter_
    np.testing.assert_allclose(model.prior_, M0, rtol=1e-10)
    np.testing.assert_allclose(model.bounds_, white.bounds_, rtol=1e-10)  # squared d_{M₀}
    np.testing.assert_allclose(model.metric_, R @ white.metric_ @ R,
                               atol=1e-9 * np.abs(model.metric_).max())
    assert model.objective_ == pytest.approx(white.objective_, rel=1e-9)
    assert model.trace_["objective"][-1] == pytest.approx(model.objective_, rel=1e-9)
    xi0 = np.where(np.arange(len(model.slack_)) < len(c.similar), *model.bounds_)
    r = model.slack_ / xi0
    assert model.objective_ == pytest.approx(
        logdet_divergence(model.metric_, M0) + np.sum(r - np.log(r) - 1), rel=1e-9)


def test_covariance_prior_reaches_the_convex_optimum():
    X, c = tiny_problem(6, n=20)
    model = fit(X, c, prior="covariance", tol=1e-10, max_proj=10**5)
    assert model.converged_
    u, l = model.bounds_
    A = np.cov(X.T, bias=True)  # M₀⁻¹
    value, M_opt = cvx_optimum(X, c, u, l, 1.0, prior_inverse=A)
    assert abs(model.objective_ - value) / abs(value) < 1e-3
    np.testing.assert_allclose(model.metric_, M_opt, atol=1e-3 * np.abs(M_opt).max())


def test_random_prior_and_identity_prior():
    from sklearn.datasets import make_spd_matrix

    from dml_bench.solvers.base import identifying_params

    X, c = tiny_problem(7)
    model = fit(X, c, prior="random", random_state=3, max_iter=3)
    np.testing.assert_array_equal(model.prior_, make_spd_matrix(4, random_state=3))
    # "identity" is the fit from before the option existed: the default, and not in a task id
    default, explicit = fit(X, c), fit(X, c, prior="identity")
    np.testing.assert_array_equal(explicit.metric_, default.metric_)
    np.testing.assert_array_equal(default.prior_, np.eye(4))
    assert "prior" not in identifying_params(ITML())
    assert identifying_params(ITML(prior="identity")) == identifying_params(ITML())
    assert identifying_params(ITML(prior="covariance"))["prior"] == "covariance"
    assert "prior" in identifying_params(ITML(prior=np.eye(4)))  # an array is never neutral


@pytest.mark.parametrize("prior,message", [
    ("cov", "'prior' parameter of ITML"), (np.eye(3), r"\(4, 4\) array"),
    (-np.eye(4), "positive definite"), (np.triu(np.ones((4, 4))), "symmetric"),
    (np.full((4, 4), np.nan), "finite")])
def test_bad_priors_are_refused_in_one_line(prior, message):
    X, c = tiny_problem(0)
    with pytest.raises(ValueError, match=message) as err:
        ITML(prior=prior).fit(X, constraints=c)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="covariance"):  # singular: 3 points in 4 dimensions
        ITML(prior="covariance").fit(X[:3], constraints=Constraints([[0, 1]], [[0, 2]]))
