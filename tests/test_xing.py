"""Xing et al. (2002) / MMC against an independent convex solver (cvxpy) and finite differences."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from dml_bench.solvers.linalg import PairOuterSum
import scipy.optimize

from dml_bench.solvers.xing import Xing, _gradient, _project_exact, _projection_slope
from problems import diffs, random_pair_problem

cp = pytest.importorskip("cvxpy")


tiny_problem = random_pair_problem


def eq1_objective(X, pairs, M):
    """Σ_{(i,j)∈D} d_M(x_i, x_j), straight from the definition."""
    Dd = diffs(X, pairs)
    return float(np.sqrt(np.einsum("ij,jk,ik->i", Dd, M, Dd)).sum())


def cvxpy_optimum(X, c):
    """Eq. (1) of Ying & Li (2012), generic conic program: max Σ sqrt(⟨X_τ, M⟩), ⟨X_S, M⟩ ≤ 1."""
    d = X.shape[1]
    M = cp.Variable((d, d), PSD=True)
    Dd, Ds = diffs(X, c.dissimilar), diffs(X, c.similar)
    problem = cp.Problem(cp.Maximize(cp.sum(cp.sqrt(cp.sum(cp.multiply(Dd @ M, Dd), axis=1)))),
                         [cp.trace(Ds.T @ Ds @ M) <= 1])
    problem.solve(solver="CLARABEL")
    return float(problem.value)


def fit(X, c, **params):
    """Xing with the exact projection unless ``params`` say otherwise: the tests below hold its
    guarantees (the cvxpy optimum to 1e-3, accepted iterates that only improve); the alternating
    projections of the default stop at ``eps`` and are tested for what they guarantee."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return Xing(**{"projection": "exact", **params}).fit(X, constraints=c)


@pytest.mark.parametrize("seed,d,n_similar,n_dissimilar", [(0, 4, 8, 15), (2, 5, 10, 20),
                                                           (3, 6, 15, 25)])
def test_reaches_the_cvxpy_optimum_of_eq1(seed, d, n_similar, n_dissimilar):
    X, c = tiny_problem(seed, d=d, n=12, n_similar=n_similar, n_dissimilar=n_dissimilar)
    opt = cvxpy_optimum(X, c)
    model = fit(X, c, tol=1e-7, max_iter=3000)
    assert model.converged_
    M = model.metric_
    Ds = diffs(X, c.similar)
    assert np.trace(Ds.T @ Ds @ M) <= 1 + 1e-8  # ⟨X_S, M⟩ ≤ 1
    assert np.linalg.eigvalsh(M).min() >= -1e-10 * np.abs(M).max()  # PSD
    achieved = eq1_objective(X, c.dissimilar, M)
    assert achieved == pytest.approx(model.objective_, rel=1e-10)
    assert achieved <= opt * (1 + 1e-6)  # a feasible point cannot beat the optimum
    assert (opt - achieved) / opt < 1e-3


def test_gap_certifies_the_distance_to_the_cvxpy_optimum():
    """Every traced objective plus its Frank-Wolfe gap is an upper bound on the true optimum."""
    X, c = tiny_problem(1, d=5, n=14, n_similar=12, n_dissimilar=25)
    opt = cvxpy_optimum(X, c)
    model = fit(X, c)  # the original code's defaults
    f, gap = model.trace_["objective"], model.trace_["gap"]
    assert np.all(gap >= -1e-9 * f)
    assert np.all(f <= opt * (1 + 1e-6))
    assert np.all(f + gap >= opt * (1 - 1e-6))
    assert np.all(np.diff(f) >= -1e-9 * f[1:])  # only improving iterates are accepted


def test_gap_with_a_constant_feature_still_certifies_the_cvxpy_optimum():
    """A feature constant over the data (a blank pixel) makes X_S singular but leaves Eq. (1)
    bounded: the gap, whitened on the range of X_S, stays finite and an upper bound."""
    X, c = tiny_problem(4, d=4, n=14, n_similar=12, n_dissimilar=25)
    X = np.hstack([X, np.full((len(X), 1), 3.0)])
    opt = cvxpy_optimum(X, c)
    model = fit(X, c)
    f, gap = model.trace_["objective"], model.trace_["gap"]
    assert np.all(np.isfinite(gap)) and np.all(gap >= -1e-9 * f)
    assert np.all(f + gap >= opt * (1 - 1e-6))
    assert f[-1] + gap[-1] - opt < 0.5 * (f[0] + gap[0] - opt)  # the certificate tightens


def test_gap_is_infinite_where_eq1_is_unbounded():
    """A feature equal within every similar pair but not within dissimilar ones makes Eq. (1)
    unbounded (an explicit feasible ray), and the gap says so."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    X, c = tiny_problem(5, d=3, n=12, n_similar=6, n_dissimilar=20)
    graph = coo_matrix((np.ones(len(c.similar)), tuple(c.similar.T)), shape=(len(X),) * 2)
    _, component = connected_components(graph, directed=False)
    free = component % 2  # equal within each similar pair, varies between components
    assert np.any(free[c.dissimilar[:, 0]] != free[c.dissimilar[:, 1]])
    X = np.hstack([X, free[:, None].astype(float)])
    v = np.eye(X.shape[1])[-1]  # the ray M = t v vᵀ: feasible for every t, objective ∝ √t
    assert np.allclose(diffs(X, c.similar) @ v, 0) and np.abs(diffs(X, c.dissimilar) @ v).sum() > 0
    assert np.isinf(fit(X, c, max_iter=5).trace_["gap"][-1])


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(9, 5))
    pairs = np.array([rng.choice(9, 2, replace=False) for _ in range(30)])  # > n: Laplacian path
    B = rng.normal(size=(5, 5))
    A = B @ B.T + 0.1 * np.eye(5)
    Dd = diffs(X, pairs)
    dist = np.sqrt(np.einsum("ij,jk,ik->i", Dd, A, Dd))
    G = _gradient(PairOuterSum(X, pairs), dist)
    h = 1e-6
    for _ in range(5):
        E = rng.normal(size=(5, 5))
        E = (E + E.T) / 2
        fd = (eq1_objective(X, pairs, A + h * E) - eq1_objective(X, pairs, A - h * E)) / (2 * h)
        assert np.sum(G * E) == pytest.approx(fd, rel=1e-6)
    np.testing.assert_allclose(  # few pairs: the direct GEMM path of the same sum
        _gradient(PairOuterSum(X, pairs[:5]), dist[:5]),
        sum(np.outer(r, r) / (2 * s) for r, s in zip(Dd[:5], dist[:5])), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("seed", [0, 1])
def test_exact_projection_matches_cvxpy(seed):
    rng = np.random.default_rng(seed)
    d = 5
    B = rng.normal(size=(d, d))
    B = (B + B.T) / 2 + np.eye(d)
    R = rng.normal(size=(8, d))
    XS = R.T @ R
    t = 0.2 * np.trace(XS) / d
    A, lam, V, _, _ = _project_exact(B, XS, t)
    Z = cp.Variable((d, d), PSD=True)
    cp.Problem(cp.Minimize(cp.sum_squares(Z - B)), [cp.trace(XS @ Z) <= t]).solve(
        solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    # f = ‖· − B‖²_F is a quadratic with Hessian 2I, so at the minimiser A over the feasible set
    # f(Z) = f(A) + ⟨∇f(A), Z − A⟩ + ‖Z − A‖² ≥ f(A) + ‖Z − A‖² for every feasible Z (first-order
    # optimality): Clarabel's point, feasible to its tolerance, certifies A however close to the
    # optimum Clarabel itself stopped. Its infeasibility (≤ tol_feas, scaled) changes f by less
    # than slack.
    Zv = (Z.value + Z.value.T) / 2
    f_A, f_Z = np.sum((A - B) ** 2), np.sum((Zv - B) ** 2)
    slack = 1e-8 * (1 + f_Z)
    assert np.sum((Zv - A) ** 2) <= f_Z - f_A + slack
    np.testing.assert_allclose((V * lam) @ V.T, A, atol=1e-12)
    assert np.sum(XS * A) <= t * (1 + 1e-10) and lam.min() >= 0
    A_in, _, _, _, _ = _project_exact(A, XS, t)  # a feasible point is its own projection
    np.testing.assert_allclose(A_in, A, atol=1e-10)


def _constraint_value(B, XS, mu):
    """``⟨X_S, Π_PSD(B − μ X_S)⟩`` from numpy's own eigendecomposition (not the solver's)."""
    lam, V = np.linalg.eigh(B - mu * XS)
    return float(np.sum(XS * ((V * np.maximum(lam, 0)) @ V.T)))


def _projection_problem(seed, d=12):
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(d, d))
    B = (B + B.T) / 2 + 0.5 * np.eye(d)
    R = rng.normal(size=(3 * d // 2, d))
    return B, R.T @ R


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_projection_slope_is_the_derivative_of_the_constraint(seed):
    """Daleckii–Krein's derivative against central differences of ⟨X_S, Π(B − μ X_S)⟩ at μ
    away from any eigenvalue crossing 0 (there h is smooth: error O(h²) ≈ 1e-10 relative)."""
    B, XS = _projection_problem(seed)
    for mu in (0.0, 0.01, 0.05):
        lam, V = np.linalg.eigh(B - mu * XS)
        step = 1e-5
        fd = (_constraint_value(B, XS, mu + step) - _constraint_value(B, XS, mu - step)) / (2 * step)
        assert _projection_slope(lam, V, XS) == pytest.approx(fd, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_exact_projection_finds_brents_root_in_few_eigendecompositions(seed):
    """μ from scipy's Brent method on the same h (an independent root finder at 4 ulp), from a
    cold start and from starts above and below the root (the last cycle's μ); the safeguarded
    Newton iteration needs far fewer evaluations than bisection's ~50."""
    B, XS = _projection_problem(seed)
    t = 0.3 * _constraint_value(B, XS, 0.0)
    hi = 1.0
    while _constraint_value(B, XS, hi) > t:
        hi *= 2
    mu_ref = scipy.optimize.brentq(lambda m: _constraint_value(B, XS, m) - t, 0.0, hi,
                                   xtol=1e-15, rtol=4 * np.finfo(float).eps)
    lam_ref, V_ref = np.linalg.eigh(B - mu_ref * XS)
    for mu0 in (0.0, 0.5 * mu_ref, 3.0 * mu_ref):
        A, lam, V, mu, n_eval = _project_exact(B, XS, t, mu0)
        np.testing.assert_allclose(A, (V_ref * np.maximum(lam_ref, 0)) @ V_ref.T, atol=1e-10)
        assert mu == pytest.approx(mu_ref, rel=1e-10)
        assert np.sum(XS * A) == pytest.approx(t, rel=1e-10)
        assert n_eval <= 12


def test_a_start_above_the_root_of_a_feasible_point_ends_at_mu_zero():
    """B already feasible: μ = 0 whatever the start, and A = Π_PSD(B) (numpy's eigh)."""
    B, XS = _projection_problem(4)
    t = 2.0 * _constraint_value(B, XS, 0.0)
    A, _, _, mu, n_eval = _project_exact(B, XS, t, mu0=0.7)
    lam, V = np.linalg.eigh(B)
    assert mu == 0 and n_eval == 2
    np.testing.assert_allclose(A, (V * np.maximum(lam, 0)) @ V.T, atol=1e-12)


def test_alternating_projections_of_the_original_code_give_a_feasible_psd_metric():
    X, c = tiny_problem(4, d=4, n=20, n_similar=20, n_dissimilar=30)
    model = fit(X, c, projection="alternating", max_iter=20)
    Ds = diffs(X, c.similar)
    assert np.trace(Ds.T @ Ds @ model.metric_) == pytest.approx(1.0, rel=1e-10)
    assert np.linalg.eigvalsh(model.metric_).min() >= -1e-10 * np.abs(model.metric_).max()
    assert model.trace_["n_proj"].max() >= 1
    assert np.all(model.trace_["objective"] <= cvxpy_optimum(X, c) * (1 + 1e-6))


def test_metric_transform_trace_and_convergence_warning():
    X, c = tiny_problem(5, d=6, n=20, n_similar=20, n_dissimilar=30)
    with pytest.warns(ConvergenceWarning):
        capped = Xing(max_iter=3, tol=0).fit(X, constraints=c)
    assert capped.n_iter_ == 3 and not capped.converged_
    model = fit(X, c)
    assert model.converged_ and model.trace_["delta"][-1] < 1e-3
    np.testing.assert_allclose(model.components_.T @ model.components_, model.metric_, atol=1e-12)
    Dd = diffs(X, c.dissimilar)
    np.testing.assert_allclose(model.pair_distances(X, c.dissimilar),
                               np.einsum("ij,jk,ik->i", Dd, model.metric_, Dd), rtol=1e-9)
    assert set(model.trace_) >= {"objective", "gap", "time"}
    assert all(len(v) == model.n_iter_ for v in model.trace_.values())
    assert np.all(np.diff(model.trace_["time"]) >= 0)


def test_deterministic_and_independent_of_global_random_state():
    X, c = tiny_problem(6)
    np.random.seed(0)
    a = fit(X, c, max_iter=30)
    np.random.seed(1)
    np.random.standard_normal(100)
    b = fit(X, c, max_iter=30)
    np.testing.assert_array_equal(a.metric_, b.metric_)


def test_bad_parameters_are_refused():
    X, c = tiny_problem(0)
    for params in ({"projection": "bogus"}, {"step": 0}, {"max_iter": 0}, {"eps": 0}):
        with pytest.raises(ValueError):
            Xing(**params).fit(X, constraints=c)


def cvxpy_diagonal_optimum(X, c):
    """Eq. (1) over diagonal metrics, generic conic program: max Σ sqrt(D2_τ·a), s·a ≤ 1, a ≥ 0
    (D2_τ the squared coordinate differences of a dissimilar pair, s their sum over S)."""
    a = cp.Variable(X.shape[1], nonneg=True)
    D2, s = diffs(X, c.dissimilar) ** 2, (diffs(X, c.similar) ** 2).sum(axis=0)
    problem = cp.Problem(cp.Maximize(cp.sum(cp.sqrt(D2 @ a))), [s @ a <= 1])
    problem.solve(solver="CLARABEL")
    return float(problem.value), a.value


@pytest.mark.parametrize("seed,d", [(0, 4), (2, 6), (5, 9)])
def test_diagonal_reaches_the_cvxpy_optimum_of_diagonal_eq1(seed, d):
    """Xing et al.'s diagonal algorithm against cvxpy on Eq. (1) restricted to diagonal M: the
    returned metric is diagonal, feasible, within its certified gap of the optimum, and that gap
    is within tol."""
    X, c = tiny_problem(seed, d=d, n=15, n_similar=12, n_dissimilar=20)
    X[:, 0] *= 5  # unequal scales, so the optimum is not near the identity
    opt, a_opt = cvxpy_diagonal_optimum(X, c)
    tol = 1e-6  # a relative Frank-Wolfe gap; below ~1e-8 g no longer decreases in float64
    model = fit(X, c, diagonal=True, tol=tol, max_iter=200)
    assert model.converged_
    M = model.metric_
    np.testing.assert_array_equal(M, np.diag(np.diag(M)))
    assert np.diag(M).min() >= 0
    Ds = diffs(X, c.similar)
    assert np.trace(Ds.T @ Ds @ M) == pytest.approx(1.0, rel=1e-12)
    achieved = eq1_objective(X, c.dissimilar, M)
    assert achieved == pytest.approx(model.objective_, rel=1e-12)
    assert achieved <= opt * (1 + 1e-7)  # a feasible point cannot beat the optimum
    assert opt - achieved <= model.optimality_ * achieved + 1e-7 * opt  # the gap certifies
    assert model.optimality_ <= tol
    np.testing.assert_allclose(np.diag(M), a_opt, atol=1e-4 * np.abs(a_opt).max())
    np.testing.assert_allclose(model.components_.T @ model.components_, M, rtol=1e-12)


def test_diagonal_refuses_an_unbounded_problem():
    X, c = tiny_problem(1, d=4, n=12, n_similar=8, n_dissimilar=10)
    X[np.unique(c.similar), 2] = 0.0  # constant over the similar pairs' points only
    X[:, 2][np.setdiff1d(np.arange(12), np.unique(c.similar))] = 1.0
    with pytest.raises(ValueError, match="unbounded"):
        Xing(diagonal=True).fit(X, constraints=c)
