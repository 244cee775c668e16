"""FrobMetric and the Frobenius-regularised SDP (Shen et al. 2014) against cvxpy and the paper's
optimality conditions.

The references here build every ``A_r`` explicitly (tiny problems only) and never reuse the
solver's row-wise algebra, so they check it independently.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from dml_bench.constraints import Constraints
from dml_bench.solvers.frobmetric import (LBFGSB_DEFAULT_FTOL, FrobMetric, _SDPDual,
                                          _TripletDual, solve_frobenius_sdp)
from dml_bench.solvers.linalg import (PairOuterSum, pair_differences, triplet_pairs,
                                    weighted_outer_sum, weighted_pair_outer_sum)

cp = pytest.importorskip("cvxpy")


@pytest.fixture(autouse=True)
def one_blas_thread():
    """Tiny GEMMs/eigh with threaded BLAS on 2 busy cores are ~10× slower; pin as the runner."""
    with threadpool_limits(1):
        yield


def tiny_problem(seed, d=4, n=12, m=30):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    triplets = np.array([rng.choice(n, 3, replace=False) for _ in range(m)])
    return X, triplets


def as_constraints(triplets):
    empty = np.zeros((0, 2), dtype=int)
    return Constraints(empty, empty, triplets)


def explicit_A(X, triplets):
    """A_r = (x_i − x_k)(x_i − x_k)ᵀ − (x_i − x_j)(x_i − x_j)ᵀ, one d×d matrix per triplet."""
    a = X[triplets[:, 0]] - X[triplets[:, 2]]
    b = X[triplets[:, 0]] - X[triplets[:, 1]]
    return np.einsum("ri,rj->rij", a, a) - np.einsum("ri,rj->rij", b, b)


def primal_p3(M, A, C):
    """(P3) with ξ eliminated: ½‖M‖²_F + (C/m) Σ max(0, 1 − ⟨A_r, M⟩)."""
    margins = np.einsum("rij,ij->r", A, M)
    return 0.5 * np.sum(M * M) + C / len(A) * np.maximum(0.0, 1.0 - margins).sum()


def dual_eq5(u, A):
    """Eq. (5): Σ u_r − ½‖(Â)₋‖²_F with Â = −Σ u_r A_r, and X = −(Â)₋ (Eq. (6))."""
    lam, U = np.linalg.eigh(-np.einsum("r,rij->ij", u, A))
    neg_part = (U * np.minimum(lam, 0.0)) @ U.T
    return u.sum() - 0.5 * np.sum(neg_part**2), -neg_part


def cvxpy_p3(X, triplets, C):
    """(P3) solved directly as a conic program (CLARABEL)."""
    d, m = X.shape[1], len(triplets)
    M = cp.Variable((d, d), PSD=True)
    a = X[triplets[:, 0]] - X[triplets[:, 2]]
    b = X[triplets[:, 0]] - X[triplets[:, 1]]
    margins = cp.sum(cp.multiply(a @ M, a), axis=1) - cp.sum(cp.multiply(b @ M, b), axis=1)
    # ‖M‖²_F as sum_squares(vec(M)), the same sum of squared entries: cvxpy ≤ 1.9.2 silently drops
    # sum_squares(M) of a PSD/symmetric Variable M itself (cvxpy PR #3384), not of an expression
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(cp.vec(M, order="F"))
                                     + C / m * cp.sum(cp.pos(1 - margins))))
    problem.solve(solver="CLARABEL")
    return problem.value, M.value


def fit(X, triplets, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # these fits must converge
        return FrobMetric(**params).fit(X, constraints=as_constraints(triplets))


# (seed, C₃): each optimum has some u_r = 0, some u_r = C₃/m and some in between
CASES = [(0, 3.0), (1, 1.0)]


@pytest.mark.parametrize("seed,C", CASES)
def test_primal_optimum_matches_cvxpy(seed, C):
    X, T = tiny_problem(seed)
    opt, M_ref = cvxpy_p3(X, T, C)
    model = fit(X, T, C=C, tol=1e-8, max_iter=10_000)
    A = explicit_A(X, T)
    achieved = primal_p3(model.metric_, A, C)
    assert model.objective_ == pytest.approx(achieved, rel=1e-10)
    assert abs(achieved - opt) <= 1e-6 * opt  # project standard 1e-3; observed ~1e-8
    # (P3) is strongly convex: the minimiser is unique, so the metrics agree too
    assert np.linalg.norm(model.metric_ - M_ref) <= 1e-3 * np.linalg.norm(M_ref)
    assert np.linalg.eigvalsh(model.metric_).min() >= -1e-12 * np.abs(model.metric_).max()
    np.testing.assert_allclose(model.components_.T @ model.components_, model.metric_,
                               atol=1e-12 * np.abs(model.metric_).max())
    # rows by decreasing eigenvalue: their squared norms are M's eigenvalues, largest first
    row_norms = (model.components_ ** 2).sum(axis=1)
    np.testing.assert_allclose(row_norms, np.linalg.eigvalsh(model.metric_)[::-1],
                               atol=1e-12 * np.abs(model.metric_).max())


@pytest.mark.parametrize("seed,C", CASES)
def test_strong_duality_and_kkt_conditions(seed, C):
    X, T = tiny_problem(seed)
    model = fit(X, T, C=C, tol=1e-8, max_iter=10_000)
    A, u, m = explicit_A(X, T), model.dual_coef_, len(T)
    primal = primal_p3(model.metric_, A, C)
    dual, X_from_u = dual_eq5(u, A)
    assert dual == pytest.approx(model.dual_objective_, rel=1e-10)
    assert abs(primal - dual) <= 1e-4 * primal  # strong duality (P3) ↔ (5)
    assert dual <= primal * (1 + 1e-12)  # weak duality
    # Eq. (6): X* = −(Â)₋ with Â = −Σ u_r A_r
    np.testing.assert_allclose(model.metric_, X_from_u, atol=1e-10 * np.abs(X_from_u).max())
    # box of (5) and complementary slackness of (P3): u_r (⟨A_r,X⟩ − 1 + ξ_r) = 0 with
    # ξ_r = (1 − ⟨A_r,X⟩)₊, and (C/m − u_r) ξ_r = 0
    box = C / m
    assert np.all(u >= 0) and np.all(u <= box)
    margins = np.einsum("rij,ij->r", A, model.metric_)
    xi = np.maximum(0.0, 1.0 - margins)
    assert np.max(u * (margins - 1 + xi)) <= 1e-4 * box
    assert np.max((box - u) * xi) <= 1e-4 * box
    # the three KKT regimes all occur (the checks above are not vacuous)
    v = u / box
    assert (v == 0).any() and (v == 1).any() and ((v > 0) & (v < 1)).any()
    interior = (v > 1e-3) & (v < 1 - 1e-3)
    np.testing.assert_allclose(margins[interior], 1.0, atol=1e-4)


def test_dual_matches_eq5_and_its_gradient_finite_differences():
    X, T = tiny_problem(2, d=5, m=25)
    C, m = 2.0, len(T)
    dual = _TripletDual(X, T, C)
    A = explicit_A(X, T)
    rng = np.random.default_rng(0)
    for v in (rng.uniform(0.05, 0.95, m), rng.uniform(0, 1, m) * (rng.random(m) < 0.5)):
        f, g = dual(v)
        value, _ = dual_eq5(C / m * v, A)
        assert f == pytest.approx(-value * m / C, rel=1e-12)  # minimised: −(m/C₃)·(5)
        # paper: g(u_r) = 1 + ⟨(Â)₋, A_r⟩ for (5); here the gradient in v of −(m/C₃)·(5)
        h = 1e-6
        for direction in (*np.eye(m)[:3], rng.normal(size=m)):
            fd = (dual(v + h * direction)[0] - dual(v - h * direction)[0]) / (2 * h)
            assert g @ direction == pytest.approx(fd, rel=1e-6, abs=1e-8)


def test_trace_obeys_weak_duality_and_is_monotone():
    X, T = tiny_problem(0)
    C = 3.0
    opt, _ = cvxpy_p3(X, T, C)
    model = fit(X, T, C=C, tol=1e-8, max_iter=10_000)
    tr = model.trace_
    assert set(tr) == {"objective", "primal", "gap", "pg_norm", "time"}
    assert all(len(vals) == model.n_iter_ for vals in tr.values())
    assert np.all(tr["objective"] <= opt * (1 + 1e-7))  # every dual value bounds the optimum
    assert np.all(tr["primal"] >= opt * (1 - 1e-7))  # every X_u is primal feasible
    np.testing.assert_allclose(tr["gap"], tr["primal"] - tr["objective"])
    assert np.all(np.diff(tr["objective"]) >= -1e-12 * opt)  # L-BFGS-B is a descent method
    assert np.all(np.diff(tr["time"]) >= 0)
    assert tr["gap"][-1] <= 1e-8 * tr["primal"][-1] < tr["gap"][0]
    assert tr["pg_norm"][-1] < 1e-3 < tr["pg_norm"][0]


def test_lbfgsb_stopping_and_convergence_warning():
    X, T = tiny_problem(1)
    with pytest.warns(ConvergenceWarning):
        capped = FrobMetric(C=1.0, max_iter=2).fit(X, constraints=as_constraints(T))
    assert capped.n_iter_ == 2 and not capped.converged_ and len(capped.trace_["gap"]) == 2
    assert np.any(capped.dual_coef_ >= 1.0 / len(T))  # some u at C/m: no data-scale hint
    # pixel-scale data: squared distances ~10^6 against the margin of 1 keep u far below C/m
    with pytest.warns(ConvergenceWarning, match="global_maxabs") as record:
        raw = FrobMetric(C=1.0, max_iter=2).fit(255 * X, constraints=as_constraints(T))
    assert np.all(raw.dual_coef_ < 1.0 / len(T)) and len(record) == 1
    literal = fit(X, T, C=1.0, stopping="lbfgsb", tol=1e-5)
    assert literal.converged_
    # L-BFGS-B's rules on the scaled dual f = −(m/C₃)·(5): pgtol, or relative decrease ≤ factr·ε
    f = -literal.trace_["objective"] * len(T) / 1.0
    decrease = (f[-2] - f[-1]) / max(abs(f[-2]), abs(f[-1]), 1.0)
    assert literal.trace_["pg_norm"][-1] <= 1e-5 or decrease <= LBFGSB_DEFAULT_FTOL
    by_gap = fit(X, T, C=1.0, tol=1e-5)  # the default rule stops at the first certified iterate
    gap, primal = by_gap.trace_["gap"], by_gap.trace_["primal"]
    assert gap[-1] <= 1e-5 * primal[-1] and np.all(gap[:-1] > 1e-5 * primal[:-1])


def test_triplet_pairs_rebuild_the_constraint_sum_and_margins():
    X, T = tiny_problem(3, n=6, m=40)  # many repeated pairs, in both orders
    pairs, target, impostor = triplet_pairs(T)
    assert len(pairs) < 2 * len(T) and np.all(pairs[:, 0] < pairs[:, 1])
    u = np.random.default_rng(1).random(len(T))
    n_pairs = len(pairs)
    w = np.bincount(impostor, u, minlength=n_pairs) - np.bincount(target, u, minlength=n_pairs)
    A = explicit_A(X, T)
    expected = np.einsum("r,rij->ij", u, A)
    np.testing.assert_allclose(weighted_pair_outer_sum(X, pairs, w), expected, atol=1e-12)
    M = np.cov(np.random.default_rng(2).normal(size=(4, 10)))
    D = pair_differences(X, pairs)
    q = np.einsum("ij,jk,ik->i", D, M, D)
    np.testing.assert_allclose(q[impostor] - q[target], np.einsum("rij,ij->r", A, M), atol=1e-12)


@pytest.mark.parametrize("n_pairs", [5, 60])  # the direct GEMM and the Laplacian path
def test_weighted_pair_outer_sum_matches_the_gemm_despite_an_offset(n_pairs):
    rng = np.random.default_rng(n_pairs)
    X = rng.normal(size=(20, 6)) + 1e5  # large common offset: uncentred X̄ᵀLX̄ loses ~1e-7
    pairs = rng.integers(0, 20, size=(n_pairs, 2))
    w = rng.normal(size=n_pairs)
    expected = weighted_outer_sum(X[pairs[:, 0]] - X[pairs[:, 1]], w)
    np.testing.assert_allclose(weighted_pair_outer_sum(X, pairs, w), expected,
                               atol=1e-10 * np.abs(expected).max())


def test_pair_outer_sum_reused_for_many_weights_matches_the_sum_of_outer_products():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(15, 5)) + 3.0
    pairs = rng.integers(0, 15, size=(80, 2))  # duplicates, both orders and self pairs
    pairs[:3] = [[4, 9], [9, 4], [6, 6]]
    outer_sum = PairOuterSum(X, pairs)
    np.testing.assert_allclose(outer_sum.X, X - X.mean(axis=0), atol=1e-12)
    for w in (rng.normal(size=80), np.zeros(80), rng.random(80) * (rng.random(80) < 0.3)):
        expected = sum(wp * np.outer(X[a] - X[b], X[a] - X[b]) for wp, (a, b) in zip(w, pairs))
        np.testing.assert_allclose(outer_sum(w), expected, atol=1e-12 * max(1, abs(expected).max()))


def test_bad_input_is_refused():
    X, T = tiny_problem(0)
    for params in ({"C": 0}, {"stopping": "bogus"}, {"tol": -1}, {"max_iter": 0}):
        with pytest.raises(ValueError):
            FrobMetric(**params).fit(X, constraints=as_constraints(T))
    with pytest.raises(ValueError, match="triplets"):
        FrobMetric().fit(X, constraints=as_constraints(np.zeros((0, 3), dtype=int)))


def random_symmetric(rng, d):
    B = rng.normal(size=(d, d))
    return (B + B.T) / 2


def cvxpy_frobenius_sdp(C, A, b, sigma, equality):
    d = C.shape[0]
    X = cp.Variable((d, d), PSD=True)
    cons = [cp.trace(Ai @ X) == bi if eq else cp.trace(Ai @ X) <= bi
            for Ai, bi, eq in zip(A, b, equality)]
    # ‖X‖²_F as sum_squares(vec(X)): see cvxpy_p3 (cvxpy ≤ 1.9.2 drops sum_squares(X) of PSD X)
    problem = cp.Problem(cp.Minimize(cp.trace(C @ X) + cp.sum_squares(cp.vec(X, order="F"))
                                     / (2 * sigma)), cons)
    problem.solve(solver="CLARABEL")
    return problem.value, X.value


def random_sdp(seed, d=5):
    """Three equalities and two inequalities, feasible by construction at a PSD X₀."""
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(d, 3))
    X0 = G @ G.T
    A = np.array([random_symmetric(rng, d) for _ in range(5)])
    b = np.einsum("kij,ij->k", A, X0) + np.array([0, 0, 0, 0, 0.5])
    return random_symmetric(rng, d), A, b, np.array([True, True, True, False, False])


@pytest.mark.parametrize("seed", [0, 1])
def test_frobenius_sdp_matches_cvxpy(seed):
    C, A, b, eq = random_sdp(seed)
    sigma = 2.0
    opt, X_ref = cvxpy_frobenius_sdp(C, A, b, sigma, eq)
    res = solve_frobenius_sdp(C, A, b, sigma, equality=eq)
    assert res.converged
    assert np.linalg.eigvalsh(res.X).min() >= -1e-12 * np.abs(res.X).max()
    primal = np.sum(C * res.X) + np.sum(res.X**2) / (2 * sigma)
    assert res.primal_objective == pytest.approx(primal, rel=1e-10)
    assert abs(primal - opt) <= 1e-4 * abs(opt)
    assert abs(res.dual_objective - opt) <= 1e-4 * abs(opt)  # strong duality
    assert res.dual_objective <= opt + 1e-7 * abs(opt)  # a dual value bounds the optimum
    np.testing.assert_allclose(res.X, X_ref, atol=1e-3 * np.abs(X_ref).max())
    residual = np.einsum("kij,ij->k", A, res.X) - b
    assert np.all(np.abs(residual[eq]) <= 1e-4) and np.all(residual[~eq] <= 1e-4)
    assert np.all(res.u[~eq] >= 0)  # inequality multipliers
    # Eq. (8)–(9): X* = −σ (C + Σ u_i A_i)₋
    lam, U = np.linalg.eigh(C + np.einsum("k,kij->ij", res.u, A))
    np.testing.assert_allclose(res.X, -sigma * (U * np.minimum(lam, 0)) @ U.T, atol=1e-10)


def test_frobenius_sdp_dual_gradient_matches_finite_differences():
    C, A, b, eq = random_sdp(2)
    dual = _SDPDual(C, A.reshape(len(A), -1), b, 3.0, eq)
    rng = np.random.default_rng(0)
    u = rng.normal(size=len(b)) * 0.5
    f, g = dual(u)
    lam = np.linalg.eigvalsh(C + np.einsum("k,kij->ij", u, A))
    assert f == pytest.approx(1.5 * np.sum(np.minimum(lam, 0) ** 2) + b @ u, rel=1e-12)  # Eq. (10)
    h = 1e-6
    for direction in (*np.eye(len(b)), rng.normal(size=len(b))):
        fd = (dual(u + h * direction)[0] - dual(u - h * direction)[0]) / (2 * h)
        assert g @ direction == pytest.approx(fd, rel=1e-6, abs=1e-8)


def test_frobenius_sdp_sparse_mvu_matches_cvxpy():
    """Frobenius-perturbed MVU (§III): max Tr X − ‖X‖²_F/(2σ), kNN distances kept, centred."""
    t = np.linspace(0, 3 * np.pi, 9)
    P = np.column_stack([np.cos(t), np.sin(t), 0.3 * t])
    n, k = len(P), 2
    dist2 = ((P[:, None] - P[None]) ** 2).sum(-1)
    edges = {tuple(sorted((i, j))) for i in range(n) for j in np.argsort(dist2[i])[1:k + 1]}
    rows, cols, vals = [], [], []
    for r, (i, j) in enumerate(sorted(edges)):  # (e_i − e_j)(e_i − e_j)ᵀ: four non-zeros
        rows += [r] * 4
        cols += [i * n + i, j * n + j, i * n + j, j * n + i]
        vals += [1.0, 1.0, -1.0, -1.0]
    m = len(edges)
    A = scipy.sparse.vstack([
        scipy.sparse.csr_matrix((vals, (rows, cols)), shape=(m, n * n)),
        scipy.sparse.csr_matrix(np.ones((1, n * n))),  # 1ᵀX1 = 0
    ]).tocsr()
    b = np.append([dist2[i, j] for i, j in sorted(edges)], 0.0)
    eq = np.zeros(m + 1, dtype=bool)
    eq[-1] = True  # the paper's MVU: distance constraints ≤, centring =
    sigma = 10.0
    dense_A = A.toarray().reshape(m + 1, n, n)
    opt, X_ref = cvxpy_frobenius_sdp(-np.eye(n), dense_A, b, sigma, eq)
    res = solve_frobenius_sdp(scipy.sparse.identity(n) * -1.0, A, b, sigma, equality=eq,
                              tol=1e-7, max_iter=5000)
    assert abs(res.primal_objective - opt) <= 1e-4 * abs(opt)
    assert abs(res.dual_objective - opt) <= 1e-4 * abs(opt)
    np.testing.assert_allclose(res.X, X_ref, atol=1e-3 * np.abs(X_ref).max())
    assert np.linalg.eigvalsh(res.X).min() >= -1e-12 * np.abs(res.X).max()
    assert res.infeasibility <= 1e-4


def test_frobenius_sdp_accepts_lists_and_refuses_bad_shapes():
    C, A, b, eq = random_sdp(0)
    res_list = solve_frobenius_sdp(C, list(A), b, 2.0, equality=eq)
    res_sparse = solve_frobenius_sdp(C, [scipy.sparse.csr_matrix(Ai) for Ai in A], b, 2.0,
                                     equality=eq)
    opt, _ = cvxpy_frobenius_sdp(C, A, b, 2.0, eq)
    for res in (res_list, res_sparse):
        assert abs(res.dual_objective - opt) <= 1e-4 * abs(opt)
    with pytest.raises(ValueError):
        solve_frobenius_sdp(C, A[:, :4, :4], b, 2.0)
    with pytest.raises(ValueError):
        solve_frobenius_sdp(C, A, b[:3], 2.0)
    with pytest.raises(ValueError):
        solve_frobenius_sdp(C, A, b, 0.0)


def largest_free_margin_violation(model, X, triplets, C):
    """dlib's stopping measure from the fitted metric and duals alone: the largest
    |⟨A_r, M⟩ − 1| over the triplets whose u_r is not held at 0 (margin > 1) or at C/m
    (margin < 1)."""
    margins = np.einsum("rij,ij->r", explicit_A(X, triplets), model.metric_)
    u, top = model.dual_coef_, C / len(triplets)
    held = ((u <= 0) & (margins > 1)) | ((u >= top) & (margins < 1))
    return np.abs(margins - 1)[~held].max(initial=0.0)


@pytest.mark.parametrize("seed,C", CASES)
def test_free_gradient_rule_stops_at_the_first_iterate_within_tol(seed, C):
    """``stopping="free_gradient"`` (dlib's rule, eps = 0.1) holds where the fit stops, measured
    on the returned metric and duals, and not one L-BFGS-B iteration earlier."""
    X, T = tiny_problem(seed)
    model = fit(X, T, C=C, stopping="free_gradient", tol=0.1)
    assert model.converged_ and largest_free_margin_violation(model, X, T, C) < 0.1
    assert model.n_iter_ > 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        before = FrobMetric(C=C, stopping="free_gradient", tol=0.1,
                            max_iter=model.n_iter_ - 1).fit(X, constraints=as_constraints(T))
    assert not before.converged_ and largest_free_margin_violation(before, X, T, C) >= 0.1
    # a tight tolerance gets the optimum: every free margin is 1 (the KKT conditions)
    tight = fit(X, T, C=C, stopping="free_gradient", tol=1e-7)
    assert largest_free_margin_violation(tight, X, T, C) < 1e-7
    _, M_ref = cvxpy_p3(X, T, C)
    assert np.linalg.norm(tight.metric_ - M_ref) <= 1e-4 * np.linalg.norm(M_ref)
