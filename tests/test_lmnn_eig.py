"""LMNN-eig against an independent SDP solver (cvxpy) on LMNN's primal (7), and Table 2 / (24)."""

import warnings

import numpy as np
import pytest
from scipy.special import logsumexp, softmax
from sklearn.exceptions import ConvergenceWarning

from dml_bench.constraints import Constraints, knn_triplets
from dml_bench.solvers.top_eigen import top_eigenvector
from dml_bench.solvers.lmnn_eig import LMNNEig, _lp_vertex

cp = pytest.importorskip("cvxpy")


def knn_problem(seed, d=3, n=8, k=1):
    """Two interleaved Gaussian classes; target/impostor triplets as in the benchmark."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    X = rng.normal(size=(n, d))
    X[:, 0] += y
    return X, y, knn_triplets(X, y, k)


def diffs(X, pairs):
    return X[pairs[:, 0]] - X[pairs[:, 1]]


def margins(X, triplets, M):
    """⟨C_τ, M⟩ = d²_M(anchor, impostor) − d²_M(anchor, target), row-wise."""
    A, B = diffs(X, triplets[:, [0, 2]]), diffs(X, triplets[:, [0, 1]])
    return np.einsum("ij,jk,ik->i", A, M, A) - np.einsum("ij,jk,ik->i", B, M, B)


def lmnn_primal_optimum(X, c, gamma):
    """Eq. (7) solved directly: min (1−γ)Σξ + γ Tr(X_S M) s.t. ⟨C_τ, M⟩ + ξ_τ ≥ 1, ξ ≥ 0, M ⪰ 0."""
    d, T = X.shape[1], c.triplets
    M, xi = cp.Variable((d, d), PSD=True), cp.Variable(len(T), nonneg=True)
    A, B, Ds = diffs(X, T[:, [0, 2]]), diffs(X, T[:, [0, 1]]), diffs(X, c.similar)
    margin = cp.sum(cp.multiply(A @ M, A), axis=1) - cp.sum(cp.multiply(B @ M, B), axis=1)
    problem = cp.Problem(cp.Minimize((1 - gamma) * cp.sum(xi) + gamma * cp.trace(Ds.T @ Ds @ M)),
                         [margin + xi >= 1])
    problem.solve(solver="CLARABEL")
    return problem.value, xi.value


def fit(X, c, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LMNNEig(**params).fit(X, constraints=c)


@pytest.mark.parametrize("seed,d,max_iter,n_slack", [(1, 3, 100, 0), (2, 3, 60_000, 3),
                                                     (1, 4, 60_000, 6)])
def test_reaches_the_lmnn_primal_optimum_of_eq7(seed, d, max_iter, n_slack):
    """Lemma 2: (M/f, ξ/f) with f = min_τ ⟨C_τ, M⟩ + ξ_τ is feasible for (7), objective 1/f."""
    X, _, c = knn_problem(seed, d=d)
    gamma, mu = 0.5, 1e-3
    opt, xi_opt = lmnn_primal_optimum(X, c, gamma)
    assert np.sum(xi_opt > 1e-6) == n_slack  # the problems: no slack, some slack, mostly slack
    model = fit(X, c, gamma=gamma, mu=mu, max_iter=max_iter, tol=0, ridge=0)
    M, xi = model.metric_, model.slack_
    Ds = diffs(X, c.similar)
    # the constraint of (8)/(16): (1 − γ) Σ ξ + γ Tr(X_S M) = 1
    assert (1 - gamma) * xi.sum() + gamma * np.trace(Ds.T @ Ds @ M) == pytest.approx(1, rel=1e-9)
    assert xi.min() >= 0
    f = np.min(margins(X, c.triplets, M) + xi)
    assert f == pytest.approx(model.objective_, rel=1e-8)
    M7, xi7 = M / f, xi / f  # feasible for (7) by construction of f
    assert np.min(margins(X, c.triplets, M7) + xi7) >= 1 - 1e-9
    primal = (1 - gamma) * xi7.sum() + gamma * np.trace(Ds.T @ Ds @ M7)
    assert primal == pytest.approx(1 / f, rel=1e-9)
    assert primal >= opt * (1 - 1e-6)  # a feasible point cannot beat the optimum
    assert (primal - opt) / opt < 1e-3
    # Frank-Wolfe certificate: max f ≤ max f_μ + μ ln T ≤ f_μ(S_t, ξ_t) + gap_t + μ ln T, every t
    bound = model.trace_["objective"] + model.trace_["gap"] + mu * np.log(len(c.triplets))
    assert 1 / opt <= bound.min() * (1 + 1e-6)


def test_first_iterations_follow_table2_with_the_lp_step_24():
    """A dense transcription of Table 2 (d×d matrices C̃_τ, the LP (24) by evaluating both
    vertices) against the solver, over iterations that take both kinds of vertex."""
    X, _, c = knn_problem(4, d=3, n=10, k=2)
    gamma, mu, n_iter = 0.3, 0.05, 12
    T = c.triplets
    Ds = diffs(X, c.similar)
    L = np.linalg.cholesky(Ds.T @ Ds)  # ridge 0
    A = np.linalg.solve(L, diffs(X, T[:, [0, 2]]).T).T
    B = np.linalg.solve(L, diffs(X, T[:, [0, 1]]).T).T
    C = np.einsum("ti,tj->tij", A, A) - np.einsum("ti,tj->tij", B, B)  # C̃_τ = L⁻¹ C_τ L⁻ᵀ
    d = X.shape[1]
    S, xi = np.eye(d) / d, np.full(len(T), 1 / len(T))
    f_mu, steps = [], []
    for t in range(1, n_iter + 1):
        h = np.einsum("tij,ij->t", C, S) + xi
        f_mu.append(-mu * logsumexp(-h / mu))
        w = softmax(-h / mu)
        lam, U = np.linalg.eigh(np.einsum("t,tij->ij", w, C))
        Z_s, xi_s = np.outer(U[:, -1], U[:, -1]) / gamma, np.zeros(len(T))
        Z_x, xi_x = np.zeros((d, d)), np.eye(len(T))[np.argmax(w)] / (1 - gamma)
        for Z, beta in ((Z_s, xi_s), (Z_x, xi_x)):  # both vertices are feasible for (24)
            assert (1 - gamma) * beta.sum() + gamma * np.trace(Z) == pytest.approx(1)
        value_s = np.sum(Z_s * np.einsum("t,tij->ij", w, C)) + w @ xi_s
        value_x = np.sum(Z_x * np.einsum("t,tij->ij", w, C)) + w @ xi_x
        assert value_s == pytest.approx(lam[-1] / gamma)
        assert value_x == pytest.approx(w.max() / (1 - gamma))
        Z, beta = (Z_s, xi_s) if value_s >= value_x else (Z_x, xi_x)
        steps.append(value_s < value_x)
        alpha = 2 / (t + 1)
        S, xi = (1 - alpha) * S + alpha * Z, (1 - alpha) * xi + alpha * beta
    assert any(steps) and not all(steps)  # both branches of (24) are exercised
    model = fit(X, c, gamma=gamma, mu=mu, max_iter=n_iter, tol=0, ridge=0, scale="none")
    np.testing.assert_array_equal(model.trace_["slack_step"], steps)
    np.testing.assert_allclose(model.trace_["objective"], f_mu, rtol=1e-10)
    L_inv = np.linalg.inv(L)
    np.testing.assert_allclose(model.metric_, L_inv.T @ S @ L_inv, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(model.slack_, xi, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("gamma", [0.2, 0.5, 0.8])
def test_lp_vertex_solves_eq24_against_cvxpy(gamma):
    rng = np.random.default_rng(int(gamma * 10))
    d, n = 4, 6
    branches = set()
    for beta_scale in (0.01, 1.0, 100.0):
        G = rng.normal(size=(d, d))
        A, beta = G + G.T, beta_scale * rng.random(n)
        Z, xi = cp.Variable((d, d), PSD=True), cp.Variable(n, nonneg=True)
        problem = cp.Problem(cp.Maximize(cp.trace(A @ Z) + beta @ xi),
                             [(1 - gamma) * cp.sum(xi) + gamma * cp.trace(Z) == 1])
        problem.solve(solver="CLARABEL")
        lam = np.linalg.eigvalsh(A)[-1]
        slack_step, value = _lp_vertex(lam, beta.max(), gamma)
        branches.add(slack_step)
        assert value == pytest.approx(problem.value, rel=1e-6, abs=1e-9)
        # the chosen vertex is the better of the two
        assert slack_step == (beta.max() / (1 - gamma) > lam / gamma)
    assert branches == {True, False}


def test_impossible_triplet_gets_unit_slack():
    """A triplet whose impostor coincides with its target has C_τ = 0: (7) needs ξ_τ = 1 exactly,
    which only the ξ-vertex of (24) can supply."""
    X, _, c = knn_problem(2, d=3)
    X = np.vstack([X, X[c.triplets[0, 1]]])  # a copy of triplet 0's target...
    triplets = np.vstack([c.triplets, [c.triplets[0, 0], c.triplets[0, 1], len(X) - 1]])
    c = Constraints(c.similar, c.dissimilar, triplets)  # ...as the impostor of a new triplet
    model = fit(X, c, mu=1e-3, max_iter=20_000, tol=0, ridge=0)
    assert model.trace_["slack_step"].any()
    assert margins(X, triplets[-1:], model.metric_)[0] == pytest.approx(0, abs=1e-12)
    assert 1 <= model.slack_[-1] / model.objective_ < 1 + 1e-2


def test_metric_is_psd_and_normalised_with_ridge_in_high_dimension():
    """d = 80 takes the ARPACK path of top_eigenvector with signed weights."""
    rng = np.random.default_rng(3)
    y = np.repeat([0, 1, 2], 30)
    X = rng.normal(size=(90, 80)) + 0.5 * y[:, None] * rng.normal(size=80)
    c = knn_triplets(X, y, k=3)
    gamma = 0.4
    model = fit(X, c, gamma=gamma, max_iter=40)
    M = model.metric_
    assert np.linalg.eigvalsh(M).min() >= -1e-10 * np.abs(M).max()
    np.testing.assert_allclose(model.components_.T @ model.components_, M, atol=1e-12)
    XS = diffs(X, c.similar).T @ diffs(X, c.similar)
    delta = 1e-2 * np.trace(XS) / X.shape[1]
    lhs = (1 - gamma) * model.slack_.sum() + gamma * np.trace((XS + delta * np.eye(80)) @ M)
    assert lhs == pytest.approx(1.0, rel=1e-9)
    assert model.objective_ == pytest.approx(np.min(margins(X, c.triplets, M) + model.slack_),
                                             rel=1e-8)
    assert model.trace_["slack_step"].any() and not model.trace_["slack_step"].all()


@pytest.mark.parametrize("n,d", [(30, 10), (20, 100), (500, 100)])
def test_top_eigenvector_with_signed_weights_matches_dense_eigh(n, d):
    rng = np.random.default_rng(n + d)
    D, w = rng.normal(size=(2 * n, d)), np.concatenate([rng.random(n), -rng.random(n)])
    G = (D * w[:, None]).T @ D
    lam, U = np.linalg.eigh(G)
    v = top_eigenvector(D, w, v0=rng.normal(size=d))
    assert v @ G @ v == pytest.approx(lam[-1], rel=1e-8)
    assert abs(v @ U[:, -1]) == pytest.approx(1.0, abs=1e-6)


def test_gap_is_a_certificate_of_the_smoothed_problem():
    """FW gap ≥ max f_μ − f_μ(S_t, ξ_t): later smoothed values never exceed f_μ + gap at t."""
    X, _, c = knn_problem(5, d=4, n=10, k=2)
    model = fit(X, c, mu=1e-2, max_iter=3000, tol=0)
    f, gap = model.trace_["objective"], model.trace_["gap"]
    assert np.all(gap >= -1e-12)
    assert f.max() <= np.min(f + gap) + 1e-12


def test_scale_only_rescales_mu():
    """``unit_mean`` with μ equals ``none`` with μ/c² (same problem (16), same iterates)."""
    X, _, c = knn_problem(6, d=4, n=10, k=2)
    unit = fit(X, c, mu=1e-2, max_iter=200, tol=0, scale="unit_mean")
    plain = fit(X, c, mu=1e-2 / unit.scale_, max_iter=200, tol=0, scale="none")
    assert unit.scale_ != pytest.approx(1.0)
    np.testing.assert_array_equal(unit.trace_["slack_step"], plain.trace_["slack_step"])
    np.testing.assert_allclose(unit.metric_, plain.metric_, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(unit.trace_["objective"], unit.scale_ * plain.trace_["objective"],
                               rtol=1e-7)


def test_stopping_rules_and_convergence_warning():
    X, _, c = knn_problem(7, d=4, n=12, k=2)
    with pytest.warns(ConvergenceWarning):
        capped = LMNNEig(max_iter=5, tol=0).fit(X, constraints=c)
    assert capped.n_iter_ == 5 and not capped.converged_
    loose = fit(X, c, mu=0.1, tol=0.05, max_iter=1000)
    assert loose.converged_ and loose.n_iter_ < 1000
    gap, f = loose.trace_["gap"], np.abs(loose.trace_["objective"])
    assert gap[-1] <= 0.05 * f[-1] and np.all(gap[:-1] > 0.05 * f[:-1])
    literal = fit(X, c, stopping="objective", tol=1e-4, max_iter=1000)
    f = literal.trace_["objective"]
    assert literal.converged_ and literal.n_iter_ < 1000
    assert np.all(np.abs(np.diff(f)) >= 1e-4)  # it stopped at the first small change


def test_bad_parameters_are_refused():
    X, _, c = knn_problem(0)
    for params in ({"gamma": 0}, {"gamma": 1}, {"stopping": "bogus"}, {"scale": "x"}, {"mu": 0},
                   {"ridge_mode": "x"}, {"init": "random"}):
        with pytest.raises(ValueError):
            LMNNEig(**params).fit(X, constraints=c)
    with pytest.raises(ValueError, match="triplet"):
        LMNNEig().fit(X, constraints=Constraints(c.similar, c.dissimilar, c.triplets[:0]))
