"""DML-eig against an independent SDP solver (cvxpy) and the paper's equations."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from dml_bench.solvers import DMLEig
from dml_bench.solvers import dml_eig
from dml_bench.solvers.dml_eig import iterate_metric
from dml_bench.solvers.linalg import components_from_psd, weighted_outer_sum
from dml_bench.solvers.top_eigen import COMPILED_GRAM_MAX_DIM, top_eigenvector
from problems import diffs, random_pair_problem

cp = pytest.importorskip("cvxpy")


tiny_problem = random_pair_problem


def sdp_optimum(X, c):
    """Eq. (3) of Ying & Li (2012) as a generic SDP: max t s.t. ⟨X_τ, M⟩ ≥ t, ⟨X_S, M⟩ ≤ 1."""
    d = X.shape[1]
    M, t = cp.Variable((d, d), PSD=True), cp.Variable()
    Dd, Ds = diffs(X, c.dissimilar), diffs(X, c.similar)
    cons = [cp.sum(cp.multiply(Dd @ M, Dd), axis=1) >= t, cp.trace(Ds.T @ Ds @ M) <= 1]
    cp.Problem(cp.Maximize(t), cons).solve(solver="CLARABEL")
    return float(t.value)


def fit(X, c, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return DMLEig(**params).fit(X, constraints=c)


@pytest.mark.parametrize("seed", [0, 2])
def test_reaches_the_sdp_optimum_of_eq3(seed):
    X, c = tiny_problem(seed)
    opt = sdp_optimum(X, c)
    model = fit(X, c, mu=1e-4, max_iter=100_000, tol=0, ridge=0, scale="unit_mean")
    Ds = diffs(X, c.similar)
    assert np.trace(Ds.T @ Ds @ model.metric_) == pytest.approx(1.0, rel=1e-9)  # feasible
    achieved = np.einsum("ij,jk,ik->i", diffs(X, c.dissimilar), model.metric_,
                         diffs(X, c.dissimilar)).min()
    assert achieved == pytest.approx(model.objective_, rel=1e-8)
    assert achieved <= opt * (1 + 1e-6)  # a feasible point cannot beat the optimum
    assert (opt - achieved) / opt < 1e-3


@pytest.mark.parametrize("d", [5, COMPILED_GRAM_MAX_DIM + 2])  # the compiled loop; the Python one
def test_reaches_the_optimum_of_the_smoothed_problem(d):
    """The smoothed Eq. (19), ``max_{S ⪰ 0, tr S = 1} −μ ln Σ_τ exp(−z̃_τᵀ S z̃_τ / μ)`` over the
    whitened differences ``z̃ = L⁻¹(x_i − x_j)``, ``X_S = L Lᵀ``, solved by cvxpy. The value of
    cvxpy's S (made exactly feasible) is a lower bound on the optimum, computed here: every
    iterate is within its Frank–Wolfe duality gap of it (the gap bounds the sub-optimality), no
    iterate beats it by more than the accuracy of cvxpy's solution, and the last one is within
    1 % of it."""
    X, c = tiny_problem(d, d=d, n=3 * d, n_similar=4 * d, n_dissimilar=3 * d)
    mu = 1e-2
    model = fit(X, c, mu=mu, max_iter=5000, tol=0, ridge=0)
    Ds, Dd = diffs(X, c.similar), diffs(X, c.dissimilar)
    Z = np.linalg.solve(np.linalg.cholesky(Ds.T @ Ds), Dd.T).T

    def f_mu(S):
        q = np.einsum("ij,jk,ik->i", Z, S, Z)
        return q.min() - mu * np.log(np.exp(-(q - q.min()) / mu).sum())

    S = cp.Variable((d, d), PSD=True)
    q = cp.sum(cp.multiply(Z @ S, Z), axis=1)
    with warnings.catch_warnings():  # "may be inaccurate" near this tolerance: the bound
        warnings.simplefilter("ignore", UserWarning)  # below is evaluated exactly all the same
        # SCS: CLARABEL 0.7 (the cvxpy 1.4 floor) fails on the d = 26 instance
        cp.Problem(cp.Minimize(cp.log_sum_exp(-q / mu)), [cp.trace(S) == 1]).solve(
            solver="SCS", eps=1e-9, max_iters=200_000)
    lam, U = np.linalg.eigh(S.value)
    lam = np.clip(lam, 0, None)
    f_lower = f_mu((U * (lam / lam.sum())) @ U.T)  # ≤ the optimum: a feasible S
    f, gap = model.trace_["objective"], model.trace_["gap"]
    assert np.all(f_lower - f <= gap + 1e-12 * abs(f_lower))
    assert np.all(f <= f_lower + 1e-6 * abs(f_lower))  # SCS's S is optimal to ~1e-8
    assert f_lower - f[-1] <= 1e-2 * abs(f_lower)


def test_gap_to_optimum_obeys_theorem7_and_shrinks():
    X, c = tiny_problem(1)
    opt = sdp_optimum(X, c)
    mu = 1e-2
    model = fit(X, c, mu=mu, max_iter=20_000, tol=0, ridge=0, scale="unit_mean")
    f_star = opt * model.scale_  # optimum in the solver's internal (scaled, whitened) units
    f_t = model.trace_["min_distance"]  # f(S_t), t = 1, 2, ...
    n_d = len(c.dissimilar)
    # ‖X̃_τ‖ = ‖z̃_τ‖² for the rank-one X̃_τ = z̃_τ z̃_τᵀ; recompute z̃ from the returned metric:
    # with δ = 0, M = L⁻ᵀ S L⁻¹ and z̃ = √c² L⁻¹(x_i − x_j), so ‖z̃‖² = c² (x_i−x_j)ᵀ X_S⁻¹ (x_i−x_j)
    Ds, Dd = diffs(X, c.similar), diffs(X, c.dissimilar)
    norms = model.scale_ * np.einsum("ij,ij->i", Dd @ np.linalg.inv(Ds.T @ Ds), Dd)
    for t in (10, 100, 1000, 20_000):
        bound = 2 * mu * np.log(n_d) + 8 * norms.max() ** 2 / (mu * t) + 8 * np.log(n_d) / t
        assert f_star - f_t[t - 1] <= bound
        assert f_t[t - 1] <= f_star * (1 + 1e-6)
    assert f_star - f_t[-1] < f_star - f_t[99] < f_star - f_t[9]
    assert f_star - f_t[-1] <= 2 * mu * np.log(n_d) + 1e-3 * f_star


def test_metric_is_psd_and_consistent_with_transform():
    X, c = tiny_problem(3, d=6, n=20, n_similar=20, n_dissimilar=30)
    model = fit(X, c, max_iter=300)
    assert np.linalg.eigvalsh(model.metric_).min() >= -1e-10 * np.abs(model.metric_).max()
    np.testing.assert_allclose(model.components_.T @ model.components_, model.metric_, atol=1e-12)
    Dd = diffs(X, c.dissimilar)
    np.testing.assert_allclose(model.pair_distances(X, c.dissimilar),
                               np.einsum("ij,jk,ik->i", Dd, model.metric_, Dd), rtol=1e-9)
    # the ridge enters the normalisation: ⟨X_S + δI, M⟩ = tr(S) = 1 with δ = ridge·tr(X_S)/d
    XS = diffs(X, c.similar).T @ diffs(X, c.similar)
    delta = 1e-2 * np.trace(XS) / X.shape[1]
    assert np.trace((XS + delta * np.eye(X.shape[1])) @ model.metric_) == pytest.approx(1.0)


@pytest.mark.parametrize("route", [0.0, np.inf])  # every case through both routes
@pytest.mark.parametrize("d,t,first", [(5, 7, 1.0), (5, 0, 1.0), (30, 8, 1.0), (6, 4, 0.4)])
def test_iterate_metric_is_the_recursions_whitened_metric(d, t, first, route, monkeypatch):
    # the dense reference: S from the recursion S <- (1 - a) S + a v v^T from S_1 = I/d (first
    # step a = 1 as in Tables 1-2, none, more dimensions than steps, and a first step below 1,
    # which keeps an identity part), then M = L^-T S L^-1 with L^-1 by numpy's inverse
    rng = np.random.default_rng(d + t)
    V = rng.normal(size=(t, d))
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    V[t // 2:t // 2 + 1] = 0.0  # a step that adds no vertex (LMNN-eig's slack step)
    alphas = 2.0 / (np.arange(1, t + 1) + 1)
    alphas[:1] = first
    S = np.eye(d) / d
    for v, a in zip(V, alphas):
        S = (1 - a) * S + a * np.outer(v, v)
    A = rng.normal(size=(d, d))
    L = np.linalg.cholesky(A @ A.T + np.eye(d))
    L_inv = np.linalg.inv(L)
    expected = L_inv.T @ S @ L_inv
    monkeypatch.setattr(dml_eig, "FACTOR_MAX_STEPS_FRACTION", route)
    components, metric = iterate_metric(V, alphas, L)
    scale = np.abs(expected).max()
    np.testing.assert_allclose(metric, expected, atol=1e-12 * scale)
    assert components.shape == (d, d)
    np.testing.assert_allclose(components.T @ components, expected, atol=1e-12 * scale)


@pytest.mark.parametrize("route", [0.0, np.inf])
def test_iterate_metric_of_only_empty_steps_is_zero(route, monkeypatch):
    # S_1 = I/d, then a first step α = 1 to a zero vector and more zero steps: S = 0, so M = 0
    # (no rows to factor: LAPACK's SVD refuses an empty matrix under scipy 1.11)
    d = 6
    A = np.random.default_rng(0).normal(size=(d, d))
    L = np.linalg.cholesky(A @ A.T + np.eye(d))
    monkeypatch.setattr(dml_eig, "FACTOR_MAX_STEPS_FRACTION", route)
    components, metric = iterate_metric(np.zeros((3, d)), np.array([1.0, 2 / 3, 0.5]), L)
    assert components.shape == metric.shape == (d, d)
    assert not components.any() and not metric.any()


@pytest.mark.parametrize("n,d", [(30, 10), (20, 100), (500, 100)])
def test_top_eigenvector_all_paths_match_dense_eigh(n, d):
    rng = np.random.default_rng(n + d)
    D, w = rng.normal(size=(n, d)), rng.random(n)
    expected = np.linalg.eigh((D * w[:, None]).T @ D)[1][:, -1]
    v = top_eigenvector(D, w, v0=rng.normal(size=d))
    assert abs(v @ expected) == pytest.approx(1.0, abs=1e-8)
    # unit weights (None) on rows scaled by √w: the same G
    v = top_eigenvector(D * np.sqrt(w)[:, None], None, v0=rng.normal(size=d))
    assert abs(v @ expected) == pytest.approx(1.0, abs=1e-8)
    # float32 rows: the products over them in single precision, the vector in double. Davis–Kahan:
    # sin θ ≤ 2‖ΔG‖/gap, with ‖ΔG‖ ≤ the rounding of D plus n ε₃₂ Σ w‖d‖² of the product
    v32 = top_eigenvector(D.astype(np.float32), w, v0=rng.normal(size=d))
    assert v32.dtype == np.float64
    G = (D * w[:, None]).T @ D
    D32 = D.astype(np.float32).astype(np.float64)
    dG = np.linalg.norm((D32 * w[:, None]).T @ D32 - G, 2) + n * np.finfo(np.float32).eps * (
        w @ np.einsum("ij,ij->i", D, D))
    lam = np.linalg.eigvalsh(G)
    sin = min(1.0, 2 * dG / (lam[-1] - lam[-2]))
    assert abs(v32 @ expected) >= np.sqrt(1 - sin ** 2) - 1e-8


@pytest.mark.parametrize("signed", [False, True])
def test_weighted_outer_sum_is_the_sum_of_outer_products(signed):
    """The syrk path (w ≥ 0) and the GEMM path (signed w) against the plain sum over rows."""
    rng = np.random.default_rng(5)
    D, w = rng.normal(size=(40, 6)), rng.random(40) - (0.5 if signed else 0.0)
    expected = sum(wi * np.outer(di, di) for di, wi in zip(D, w))
    np.testing.assert_allclose(weighted_outer_sum(D, w), expected, rtol=1e-12, atol=1e-12)


def test_components_from_psd_reconstructs():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(4, 2))
    R = rng.normal(size=(4, 4))
    L = components_from_psd(A @ A.T, right=R)
    np.testing.assert_allclose(L.T @ L, R.T @ A @ A.T @ R, atol=1e-10)


def test_stopping_rules_and_convergence_warning():
    X, c = tiny_problem(4, d=5, n=30, n_similar=30, n_dissimilar=30)
    with pytest.warns(ConvergenceWarning):
        capped = DMLEig(max_iter=5, tol=0).fit(X, constraints=c)
    assert capped.n_iter_ == 5 and not capped.converged_
    loose = fit(X, c, tol=0.5, max_iter=1000)
    assert loose.converged_ and loose.n_iter_ < 1000
    assert loose.trace_["gap"][-1] <= 0.5 * abs(loose.trace_["objective"][-1])
    literal = fit(X, c, stopping="objective", tol=1e-3, max_iter=1000)
    f = literal.trace_["objective"]
    assert literal.converged_ and literal.n_iter_ < 1000
    assert np.all(np.abs(np.diff(f)) >= 1e-3)  # it stopped at the first small change


def test_gap_is_a_certificate_of_the_smoothed_problem():
    """FW gap ≥ max f_μ − f_μ(S_t): later smoothed values never exceed f_μ(S_t) + gap_t."""
    X, c = tiny_problem(5)
    model = fit(X, c, mu=1e-2, max_iter=3000, tol=0, scale="unit_mean")
    f, gap = model.trace_["objective"], model.trace_["gap"]
    assert np.all(gap >= -1e-12)
    assert f.max() <= np.min(f + gap) + 1e-12


def test_bad_parameters_are_refused():
    X, c = tiny_problem(0)
    for params in ({"stopping": "bogus"}, {"scale": "x"}, {"mu": 0}, {"ridge_mode": "x"}):
        with pytest.raises(ValueError):
            DMLEig(**params).fit(X, constraints=c)


def table1_literal(X, c, mu, tol, max_iter, ridge):
    """Ying & Li's Table 1 written out densely, as an independent reference: X_S + δI = L Lᵀ
    (δ absolute), the whitened X̃_τ = L⁻¹ X_τ L⁻ᵀ, S_1 = I/d; per t the gradient of f_μ (Eq.
    (20)), its top eigenvector Z_t = v vᵀ, S_{t+1} = (1 − α_t) S_t + α_t Z_t with α_t = 2/(t+1),
    and the break once |f_μ(S_{t+1}) − f_μ(S_t)| < tol. Returns S_t and S_{t+1} at the break,
    mapped back to M = L⁻ᵀ S L⁻¹."""
    Ds, Dd = diffs(X, c.similar), diffs(X, c.dissimilar)
    d = X.shape[1]
    L = np.linalg.cholesky(Ds.T @ Ds + ridge * np.eye(d))
    Z = np.linalg.solve(L, Dd.T).T  # rows z̃_τ = L⁻¹(x_i − x_j)

    def f_and_grad(S):
        q = np.einsum("ij,jk,ik->i", Z, S, Z)
        shifted = np.exp(-(q - q.min()) / mu)
        w = shifted / shifted.sum()
        f = q.min() - mu * np.log(shifted.sum())
        return f, (Z * w[:, None]).T @ Z

    S = np.eye(d) / d
    for t in range(1, max_iter + 1):
        f, G = f_and_grad(S)
        v = np.linalg.eigh(G)[1][:, -1]
        alpha = 2 / (t + 1)
        S_next = (1 - alpha) * S + alpha * np.outer(v, v)
        if abs(f_and_grad(S_next)[0] - f) < tol:
            break
        S = S_next
    Linv = np.linalg.inv(L)
    return Linv.T @ S @ Linv, Linv.T @ S_next @ Linv


def test_table1s_output_is_the_iterate_before_the_last_step():
    X, c = tiny_problem(3, d=4, n=24, n_similar=20, n_dissimilar=20)
    params = dict(mu=1e-2, tol=1e-3, max_iter=500, ridge=1e-3)
    previous, last = table1_literal(X, c, **params)
    assert not np.allclose(previous, last, rtol=1e-3)  # the two outputs differ here
    for output, reference in (("previous", previous), ("last", last)):
        model = fit(X, c, stopping="objective", output=output, ridge_mode="absolute",
                    **params)
        assert model.converged_
        np.testing.assert_allclose(model.metric_, reference, rtol=1e-8,
                                   atol=1e-10 * np.abs(reference).max())
        Dd = diffs(X, c.dissimilar)
        assert model.objective_ == pytest.approx(
            np.einsum("ij,jk,ik->i", Dd, reference, Dd).min(), rel=1e-8)
