"""SDPMetric against an independent SDP solver (cvxpy) and the paper's equations (Shen et al. 2010).

Everything the solver is checked against is recomputed here from the paper with dense d×d
matrices: Eq. (8) with the losses (11) and (16) written out piecewise, its gradient by finite
differences, the Wolfe conditions (19) by finite differences along the step.
"""

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from sklearn.exceptions import ConvergenceWarning

from dml_bench.constraints import Constraints, knn_triplets
from dml_bench.solvers.sdpmetric import SDPMetric, _Loss

cp = pytest.importorskip("cvxpy")

LOSSES = ("squared_hinge", "huber")
C, H = 0.1, 0.5


def triplet_problem(seed, d=5, n=16, n_triplets=40):
    """Target/impostor triplets of a labelling that depends on two of the d directions.

    The optimum of (8) is then of low rank (1–2): Frank-Wolfe steps like (7) cannot remove mass
    from a direction once added, and reach 1e-3 on full-rank optima only after ~10⁵ steps.
    """
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    t = knn_triplets(X, y, k=2).triplets
    t = t[rng.choice(len(t), min(n_triplets, len(t)), replace=False)]
    return X, Constraints(np.zeros((0, 2), int), np.zeros((0, 2), int), t)


def A_matrices(X, triplets):
    """A^r of Eq. (5), densely: (x_i − x_k)(x_i − x_k)ᵀ − (x_i − x_j)(x_i − x_j)ᵀ."""
    a = X[triplets[:, 0]] - X[triplets[:, 2]]
    b = X[triplets[:, 0]] - X[triplets[:, 1]]
    return np.einsum("ri,rj->rij", a, a) - np.einsum("ri,rj->rij", b, b)


def paper_loss(z, loss, h=H):
    """λ(z) of Eq. (11) (squared hinge) or Eq. (16) (Huber), case by case."""
    if loss == "squared_hinge":
        return np.where(z >= 0, 0.0, z ** 2)
    return np.where(z >= h, 0.0, np.where(z <= -h, -z, (h - z) ** 2 / (4 * h)))


def objective(As, M, rho, loss, c=C, h=H):
    """f(X, ρ) of Eq. (8)."""
    margins = np.einsum("rij,ij->r", As, M)
    return rho - c * paper_loss(margins - rho, loss, h).sum()


def numerical_gradient(As, M, rho, loss, eps=1e-6):
    """∇_X f by central differences over the symmetric basis E_ij + E_ji."""
    d = M.shape[0]
    G = np.zeros((d, d))
    for i in range(d):
        for j in range(i, d):
            E = np.zeros((d, d))
            E[i, j] = E[j, i] = 1.0
            deriv = (objective(As, M + eps * E, rho, loss)
                     - objective(As, M - eps * E, rho, loss)) / (2 * eps)
            G[i, j] = G[j, i] = deriv if i == j else deriv / 2
    return G


def best_rho(As, M, loss):
    """argmax_ρ f(X, ρ) by a bounded scalar search (not the solver's closed form)."""
    margins = np.einsum("rij,ij->r", As, M)
    lo, hi = margins.min() - 1 / C - 2 * H - 1, margins.max() + 2 * H + 1
    res = minimize_scalar(lambda r: -objective(As, M, r, loss), bounds=(lo, hi),
                          method="bounded", options={"xatol": 1e-12})
    return res.x


def reference_optimum(X, triplets, loss, c=C, h=H):
    """max over X ⪰ 0, tr X = 1, ρ of Eq. (8), jointly (f is jointly concave) — cvxpy.

    λ(z) = min{s² : s ≥ 0, s ≥ −z} (11) and min{s²/(4h) + t : s, t ≥ 0, s + t ≥ h − z} (16).
    """
    d, T = X.shape[1], len(triplets)
    As = A_matrices(X, triplets).reshape(T, d * d)
    M, rho = cp.Variable((d, d), PSD=True), cp.Variable()
    z = As @ cp.vec(M, order="C") - rho
    s = cp.Variable(T, nonneg=True)
    if loss == "squared_hinge":
        cons, penalty = [s >= -z], cp.sum_squares(s)
    else:
        t = cp.Variable(T, nonneg=True)
        cons, penalty = [s + t >= h - z], cp.sum_squares(s) / (4 * h) + cp.sum(t)
    problem = cp.Problem(cp.Maximize(rho - c * penalty), cons + [cp.trace(M) == 1])
    with warnings.catch_warnings():  # "solution may be inaccurate": cross-checked below
        warnings.simplefilter("ignore", UserWarning)
        problem.solve(solver="CLARABEL")
    value = problem.value
    if problem.status != "optimal":  # cross-check an "inaccurate" interior-point answer with SCS
        assert problem.status == "optimal_inaccurate"
        problem.solve(solver="SCS", eps=1e-9, max_iters=200_000)
        assert problem.status == "optimal"
        assert problem.value == pytest.approx(value, rel=1e-6)
    return float(problem.value)


def fit(X, c, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return SDPMetric(**{"C": C, "h": H, **params}).fit(X, constraints=c)


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("loss", LOSSES)
def test_reaches_the_joint_optimum_of_eq8(loss, seed):
    X, c = triplet_problem(seed)
    opt = reference_optimum(X, c.triplets, loss)
    model = fit(X, c, loss=loss, stopping="gap", tol=2e-4, max_iter=20_000)
    assert model.converged_
    As = A_matrices(X, c.triplets)
    f = objective(As, model.metric_, model.rho_, loss)
    assert f == pytest.approx(model.objective_, rel=1e-9, abs=1e-12)
    assert f <= opt + 1e-6 * abs(opt)  # a feasible point cannot beat the optimum
    assert abs(opt - f) <= 1e-3 * abs(opt)
    # the returned ρ is the best margin for the returned X
    assert f >= objective(As, model.metric_, best_rho(As, model.metric_, loss), loss) - 1e-12
    # the Frank-Wolfe gap after each ρ update bounds the joint sub-optimality
    assert np.all(opt - model.trace_["objective"] <= model.trace_["gap"] + 1e-7 * abs(opt))


@pytest.mark.parametrize("loss,c_loss,steps", [
    ("squared_hinge", C, (0, 1, 2, 5, 12, 30, 60)),
    ("huber", C, (0, 1, 2, 5, 12, 30, 60)),
    ("squared_hinge", 1e-3, (0, 1, 2, 3, 4, 8)),  # steps 0–3 stop at α = 1 (F′(1) < 0)
])
def test_steps_are_rank_one_trace_one_and_satisfy_wolfe_19(loss, c_loss, steps):
    """Each step X_{t+1} = X_t + α (v vᵀ − X_t) of (7), with v the top eigenvector of
    ∇_X f(X_t, ρ_t) (18), ρ_t = argmax f(X_t, ·), and α satisfying (19) for F = −f."""
    X, c = triplet_problem(3)
    As = A_matrices(X, c.triplets)
    d = X.shape[1]

    def objective(As, M, rho, loss):  # Eq. (8) with this test's C
        return globals()["objective"](As, M, rho, loss, c=c_loss)

    def best_rho(As, M, loss):
        margins = np.einsum("rij,ij->r", As, M)
        lo, hi = margins.min() - 1 / c_loss - 2 * H - 1, margins.max() + 2 * H + 1
        return minimize_scalar(lambda r: -objective(As, M, r, loss), bounds=(lo, hi),
                               method="bounded", options={"xatol": 1e-12}).x

    full = fit(X, c, loss=loss, C=c_loss, max_iter=max(steps) + 1, tol=0)
    assert full.n_iter_ == max(steps) + 1
    c1, c2 = full.c1, full.c2
    boundary_steps = 0
    for t in steps:
        X_t = np.eye(d) / d if t == 0 else fit(X, c, loss=loss, C=c_loss, max_iter=t, tol=0).metric_
        X_next = fit(X, c, loss=loss, C=c_loss, max_iter=t + 1, tol=0).metric_
        rho, alpha = full.trace_["rho"][t], full.trace_["alpha"][t]
        assert 0 < alpha <= 1
        # ρ_t maximises f(X_t, ·) (Algorithm 1, line 3)
        rho_ref = best_rho(As, X_t, loss)
        assert objective(As, X_t, rho, loss) >= objective(As, X_t, rho_ref, loss) - 1e-12
        # the step direction: X_t + p = v vᵀ, a rank-one trace-one matrix ...
        p = (X_next - X_t) / alpha
        lam, U = np.linalg.eigh(X_t + p)
        np.testing.assert_allclose(lam, [0] * (d - 1) + [1], atol=1e-8)
        v = U[:, -1]
        # ... whose v is the leading eigenvector of the gradient at (X_t, ρ_t)
        G = numerical_gradient(As, X_t, rho, loss) * c_loss / C
        g_max = np.linalg.eigvalsh(G)[-1]
        assert v @ G @ v == pytest.approx(g_max, rel=1e-6, abs=1e-8)

        def F(a):  # the cost that the line search reduces
            return -objective(As, X_t + a * p, rho, loss)

        def dF(a, eps=1e-5):  # ⟨p, ∇F(X_t + a p)⟩ by central differences (exact on the
            # quadratic pieces of F up to round-off ~1e-16·|F|/eps)
            return (F(a + eps) - F(a - eps)) / (2 * eps)

        slope0 = dF(0.0)
        assert slope0 == pytest.approx(-full.trace_["gap"][t], rel=1e-6, abs=1e-10)
        armijo = F(alpha) <= F(0.0) + c1 * alpha * slope0 + 1e-12
        curvature = abs(dF(alpha)) <= c2 * abs(slope0) + 1e-9
        assert armijo and full.trace_["wolfe_armijo"][t]
        assert curvature == full.trace_["wolfe_curvature"][t]
        if not curvature:  # only when F still decreases at the largest feasible step
            assert alpha == 1.0 and dF(1.0) < 0
            boundary_steps += 1
    if c_loss == 1e-3:  # the α = 1 branch of the line search is exercised
        assert boundary_steps >= 4


@pytest.mark.parametrize("loss", LOSSES)
def test_iterates_are_trace_one_psd_and_objective_never_decreases(loss):
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (25, 6)), rng.normal(0.8, 1, (25, 6))])
    X[:, 2] *= 4  # a noisy, large-variance direction
    y = np.repeat([0, 1], 25)
    c = knn_triplets(X, y, k=3)
    model = fit(X, c, loss=loss, max_iter=300, tol=0, C=0.05)
    M = model.metric_
    assert np.trace(M) == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(M, M.T, atol=0)
    assert np.linalg.eigvalsh(M).min() >= -1e-12
    np.testing.assert_allclose(model.components_.T @ model.components_, M, atol=1e-12)
    f = model.trace_["objective"]
    assert len(f) == model.n_iter_ == 300 and not model.converged_
    assert np.all(np.diff(f) >= -1e-12 * np.abs(f).max())
    assert f[-1] > f[0]
    assert model.objective_ >= f[-1] - 1e-12 * abs(f[-1])
    assert np.all(model.trace_["wolfe_armijo"]) and np.all(model.trace_["time"] >= 0)
    As = A_matrices(X, c.triplets)
    assert objective(As, M, model.rho_, loss, c=0.05) == pytest.approx(model.objective_, rel=1e-10)


@pytest.mark.parametrize("loss", LOSSES)
def test_closed_form_rho_matches_a_scalar_search(loss):
    rng = np.random.default_rng(7)
    for trial in range(20):
        m = rng.normal(size=rng.integers(1, 60)) * rng.choice([0.01, 1, 10])
        m[: len(m) // 3] = m[0]  # ties
        c = 10.0 / len(m) if loss == "huber" else rng.choice([0.01, 1.0, 100.0])
        lam = _Loss(loss, c, H)
        rho = lam.optimal_rho(m)

        def f(r):
            return r - c * paper_loss(m - r, loss).sum()

        res = minimize_scalar(lambda r: -f(r), bounds=(m.min() - 1 / c - 2, m.max() + 2),
                              method="bounded", options={"xatol": 1e-12})
        assert f(rho) >= f(res.x) - 1e-12 * max(1.0, abs(f(rho)))
        assert lam.value_and_weights(m, rho)[0] == pytest.approx(f(rho), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("loss", LOSSES)
def test_rho_from_the_smallest_margins_is_the_full_sort_root(loss):
    rng = np.random.default_rng(8)
    for trial in range(30):
        m = rng.normal(size=200) * rng.choice([0.01, 1, 10])
        m[rng.integers(0, 200, 20)] = m[0]  # ties
        # Huber: C·|S| just above 1 makes the root lie beyond most breakpoints (the prefix's
        # sum saturates), a large C keeps it among the smallest margins
        c = rng.choice([1.01, 1.5, 50.0]) / len(m) if loss == "huber" else rng.choice([0.01, 100.0])
        lam = _Loss(loss, c, H)
        assert lam.optimal_rho(m, prefix=3) == lam.optimal_rho(m, prefix=len(m))


@pytest.mark.parametrize("loss", LOSSES)
def test_line_search_value_and_slope_are_f_and_its_derivative(loss):
    rng = np.random.default_rng(9)
    m, dm = rng.normal(size=50), rng.normal(size=50)
    c, rho, alpha, eps = 0.3, 0.2, 0.4, 1e-6
    lam = _Loss(loss, c, H)

    def f(a):
        return rho - c * paper_loss(m + a * dm - rho, loss).sum()

    value, slope = lam.value_and_slope(m, dm, alpha, rho)
    assert value == pytest.approx(f(alpha), rel=1e-12)
    assert slope == pytest.approx((f(alpha + eps) - f(alpha - eps)) / (2 * eps), rel=1e-6)


def test_stopping_rules_and_convergence_warning():
    X, c = triplet_problem(4)
    with pytest.warns(ConvergenceWarning):
        capped = SDPMetric(max_iter=5, tol=0).fit(X, constraints=c)
    assert capped.n_iter_ == 5 and not capped.converged_
    relative = fit(X, c, stopping="objective", tol=1e-3, max_iter=5000)
    f = relative.trace_["objective"]
    assert relative.converged_ and relative.n_iter_ < 5000
    assert abs(f[-1] - f[-2]) <= 1e-3 * max(abs(f[-1]), abs(f[-2]))
    assert np.all(np.abs(np.diff(f[:-1])) > 1e-3 * np.maximum(abs(f[1:-1]), abs(f[:-2])))
    assert relative.trace_["alpha"][-1] == 0  # no step after the stopping test
    certified = fit(X, c, stopping="gap", tol=1e-2, max_iter=5000)
    gap, f = certified.trace_["gap"], certified.trace_["objective"]
    assert certified.converged_ and gap[-1] <= 1e-2 * abs(f[-1])
    assert np.all(gap[:-1] > 1e-2 * np.abs(f[:-1]))


def test_bad_parameters_are_refused():
    X, c = triplet_problem(0)
    for params in ({"loss": "hinge"}, {"stopping": "x"}, {"C": 0}, {"h": -1}, {"max_iter": 0},
                   {"c1": 0.5, "c2": 0.1}, {"backtrack": 1.0},
                   {"loss": "huber", "C": 1 / len(c.triplets)}):  # (8) unbounded: C·|S| ≤ 1
        with pytest.raises(ValueError):
            SDPMetric(**params).fit(X, constraints=c)
    with pytest.raises(ValueError):
        SDPMetric().fit(X, constraints=Constraints(c.similar, c.dissimilar,
                                                   np.zeros((0, 3), dtype=int)))
