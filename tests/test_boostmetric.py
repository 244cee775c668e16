"""BoostMetric against an independent convex solver (cvxpy) and the paper's optimality conditions.

The reference quantities are recomputed here from explicit d×d constraint matrices
``A_r = a_r a_rᵀ − b_r b_rᵀ`` (tiny problems only), never from the solver's internals.
"""

import functools
import warnings

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.exceptions import ConvergenceWarning

from dml_bench.constraints import Constraints
from dml_bench.solvers.boostmetric import BoostMetric

cp = pytest.importorskip("cvxpy")

NO_PAIRS = np.zeros((0, 2), dtype=int)


def tiny_problem(seed, d=4, n=12, n_triplets=30):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    triplets = np.array([rng.choice(n, 3, replace=False) for _ in range(n_triplets)])
    return X, Constraints(NO_PAIRS, NO_PAIRS, triplets)


def constraint_matrices(X, c):
    """Explicit A_r (T×d×d, fine at this size): impostor outer product minus target's."""
    i, j, k = c.triplets.T
    a, b = X[i] - X[k], X[i] - X[j]
    return np.einsum("ri,rj->rij", a, a) - np.einsum("ri,rj->rij", b, b)


def objective(A, M, v):
    """(P1): log Σ_r exp(−⟨A_r, M⟩) + v tr M."""
    return logsumexp(-np.einsum("rij,ij->r", A, M)) + v * np.trace(M)


def lambda_1(A):
    """λ_max of Σ_r u_r A_r at the uniform u (first iteration)."""
    return np.linalg.eigvalsh(A.mean(axis=0))[-1]


@functools.lru_cache(maxsize=None)
def problem(seed, d, v_frac):
    """Tiny problem, its v (a fraction of λ₁, so (P1) is bounded) and cvxpy's optimum of (P1)."""
    X, c = tiny_problem(seed, d=d)
    A = constraint_matrices(X, c)
    v = v_frac * lambda_1(A)
    i, j, k = c.triplets.T
    a, b = X[i] - X[k], X[i] - X[j]
    M = cp.Variable((d, d), PSD=True)
    rho = cp.sum(cp.multiply(a @ M, a), axis=1) - cp.sum(cp.multiply(b @ M, b), axis=1)
    prob = cp.Problem(cp.Minimize(cp.log_sum_exp(-rho) + v * cp.trace(M)))
    prob.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    return X, c, A, v, float(prob.value)


def fit(X, c, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return BoostMetric(**params).fit(X, constraints=c)


CASES = [(1, 5, 0.05), (2, 3, 0.05), (4, 3, 0.3)]


@pytest.mark.parametrize("seed,d,v_frac", CASES)
def test_totally_corrective_reaches_the_cvxpy_optimum_of_p1(seed, d, v_frac):
    X, c, A, v, opt = problem(seed, d, v_frac)
    model = fit(X, c, v=v, update="totally_corrective", tol=1e-8, max_iter=500)
    assert model.converged_
    achieved = objective(A, model.metric_, v)
    assert achieved == pytest.approx(model.objective_, rel=1e-10, abs=1e-12)
    assert abs(achieved - opt) <= 1e-3 * abs(opt)
    # stricter, on the scale of the decrease from X = 0 (f = log T) to the optimum
    assert achieved - opt <= 1e-3 * (np.log(len(A)) - opt)
    assert achieved >= opt - 1e-6  # cvxpy's own accuracy


@pytest.mark.parametrize("seed,d,v_frac", CASES)
def test_stagewise_stops_dual_feasible_and_its_gap_bounds_the_suboptimality(seed, d, v_frac):
    """The paper's rule λ_max(Σ u_r A_r) ≤ v at the round-off floor the solver uses itself
    (tol = 1e-12 · λ₁), checked with numpy's eigh at the result. At tol = 0 the stop would hang on
    the sign of a difference below eigh's accuracy (~d·eps·λ): on seed 1 with one BLAS thread,
    λ_max stays at v (1 + 9.3e-16) for 2000 iterations."""
    X, c, A, v, opt = problem(seed, d, v_frac)
    model = fit(X, c, v=v, tol=1e-12, max_iter=2000)
    assert model.converged_
    M = model.metric_
    rho = np.einsum("rij,ij->r", A, M)
    u = np.exp(-rho - logsumexp(-rho))  # KKT link u ∝ exp(−ρ)
    lam = np.linalg.eigvalsh(np.einsum("r,rij->ij", u, A))[-1]
    assert lam <= v * (1 + 1e-9)  # u is feasible for the dual (D1)
    assert model.trace_["lambda_max"][-1] == pytest.approx(lam, rel=1e-9)
    gap = v * np.trace(M) - u @ rho  # ⟨∇f(M), M⟩ = primal − dual objective
    assert model.trace_["gap"][-1] == pytest.approx(gap, rel=1e-8, abs=1e-12)
    achieved = objective(A, M, v)
    assert opt - 1e-6 <= achieved <= opt + gap + 1e-6  # weak duality certifies the gap


def test_stagewise_can_stop_short_of_the_optimum():
    """Documents Algorithm 2's limitation: weights are never revised, so the dual-feasibility
    rule can hold at a sub-optimal point (here > 1 % above the optimum, within the gap)."""
    X, c, A, v, opt = problem(3, 5, 0.05)
    model = fit(X, c, v=v, tol=0.0, max_iter=2000)
    assert model.converged_
    assert model.objective_ - opt > 1e-2 * abs(opt)
    assert model.objective_ - opt <= model.trace_["gap"][-1] + 1e-6
    corrective = fit(X, c, v=v, tol=1e-8, update="totally_corrective", max_iter=500)
    assert abs(corrective.objective_ - opt) <= 1e-3 * abs(opt)


def test_objective_non_increasing_and_line_search_exact():
    X, c, A, v, _ = problem(1, 5, 0.05)
    model = fit(X, c, v=v, tol=0.0, max_iter=2000)
    f = model.trace_["objective"]
    assert np.all(np.diff(f) <= 1e-12 * abs(f[0]))
    assert model.objective_ <= f[-1] + 1e-12
    assert f[0] == pytest.approx(np.log(len(A)))  # X = 0
    H_scale = np.abs(A).max() * A.shape[1]
    M = np.zeros_like(A[0])
    for vec, w in zip(model.base_learners_, model.weights_):
        assert np.linalg.norm(vec) == pytest.approx(1.0)  # trace-one rank-one base learner
        rho = np.einsum("rij,ij->r", A, M)
        H = np.einsum("rij,i,j->r", A, vec, vec)
        def g(s):  # the 1-D problem of step 4
            return logsumexp(-rho - s * H) + v * s
        q = np.exp(-rho - w * H - logsumexp(-rho - w * H))
        assert w > 0
        assert abs(v - q @ H) <= 1e-9 * H_scale  # g'(w) = 0: interior minimiser
        round_off = 8 * np.finfo(float).eps * abs(g(w))
        assert g(w) <= min(g(w * (1 - 1e-4)), g(w * (1 + 1e-4)), g(0.0)) + round_off
        M = M + w * np.outer(vec, vec)
    np.testing.assert_allclose(M, model.metric_, atol=1e-12 * np.abs(M).max())


def test_metric_is_psd_and_consistent_with_transform():
    X, c = tiny_problem(5, d=6, n=20, n_triplets=40)
    model = fit(X, c, v=1e-3, max_iter=50)
    M = model.metric_
    assert np.linalg.eigvalsh(M).min() >= -1e-10 * np.abs(M).max()
    assert np.trace(M) == pytest.approx(model.weights_.sum())
    assert np.all(model.weights_ >= 0)
    np.testing.assert_allclose(model.components_.T @ model.components_, M,
                               atol=1e-10 * np.abs(M).max())
    pairs = c.triplets[:, [0, 2]]
    D = X[pairs[:, 0]] - X[pairs[:, 1]]
    np.testing.assert_allclose(model.pair_distances(X, pairs),
                               np.einsum("ij,jk,ik->i", D, M, D), rtol=1e-9)


def test_unbounded_when_one_direction_separates_every_triplet():
    """Points on a line, triplets all satisfied along it: min_r H_r > v, no finite weight."""
    rng = np.random.default_rng(0)
    t = np.sort(rng.random(10)) * np.arange(1, 11)
    X = np.column_stack([t, np.zeros(10)])
    triplets = np.array([[i, i + 1, i + 3] for i in range(7)])  # |t_i − t_k| > |t_i − t_j|
    c = Constraints(NO_PAIRS, NO_PAIRS, triplets)
    with pytest.warns(ConvergenceWarning, match="unbounded"):
        model = BoostMetric().fit(X, constraints=c)
    assert model.unbounded_ and not model.converged_
    assert model.objective_ == -np.inf
    np.testing.assert_allclose(model.metric_, [[1.0, 0.0], [0.0, 0.0]], atol=1e-12)


def test_max_iter_warning_and_trace_shapes():
    X, c = tiny_problem(6, d=5, n=20, n_triplets=40)
    with pytest.warns(ConvergenceWarning):
        model = BoostMetric(v=1e-7, max_iter=7, tol=0.0).fit(X, constraints=c)
    assert model.n_iter_ == 7 and not model.converged_
    assert len(model.weights_) == 7 and model.base_learners_.shape == (7, 5)
    assert {k: len(a) for k, a in model.trace_.items()} == dict.fromkeys(
        ("objective", "lambda_max", "gap", "weight", "time"), 7)
    assert np.all(np.diff(model.trace_["time"]) >= 0)
    np.testing.assert_allclose(model.trace_["weight"], model.weights_)


def test_bad_parameters_are_refused():
    X, c = tiny_problem(0)
    for params in ({"update": "bogus"}, {"v": -1.0}, {"max_iter": 0}, {"tol": -1.0}):
        with pytest.raises(ValueError):
            BoostMetric(**params).fit(X, constraints=c)
    with pytest.raises(ValueError, match="triplet"):
        BoostMetric().fit(X, constraints=Constraints(NO_PAIRS, NO_PAIRS, np.zeros((0, 3), int)))
