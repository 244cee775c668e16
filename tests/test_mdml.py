"""MDML (Kunapuli & Shavlik 2012) against dense reference steps, cvxpy and finite differences."""

import numpy as np
import pytest
import scipy.linalg
from sklearn.datasets import load_wine
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from dml_bench.constraints import knn_pairs
from dml_bench.evaluate import knn_error
from dml_bench.solvers.mdml import MDML, comid_step, loss_and_slope
from problems import diffs, random_pair_problem

cp = pytest.importorskip("cvxpy")

LOSSES = ("hinge", "modified_least_squares", "exponential", "logistic")


def table1_loss(m, loss):
    """ℓ(m) of Table 1, written out independently of the package."""
    return {"hinge": max(0.0, 1 - m), "modified_least_squares": 0.5 * max(0.0, 1 - m) ** 2,
            "exponential": np.exp(-m), "logistic": np.log1p(np.exp(-m))}[loss]


def labelled(X, c):
    U = np.vstack([diffs(X, c.similar), diffs(X, c.dissimilar)])
    return U, np.r_[np.ones(len(c.similar)), -np.ones(len(c.dissimilar))]


def eq4(M, mu, U, y, loss, rho):
    """Objective (4): mean loss over the pairs + ρ tr(M)."""
    m = y * (mu - np.einsum("ij,jk,ik->i", U, M, U))
    return np.mean([table1_loss(v, loss) for v in m]) + rho * np.trace(M)


@pytest.mark.parametrize("loss", LOSSES)
def test_loss_gradients_match_finite_differences(loss):
    rng = np.random.default_rng(0)
    d = 4
    A = rng.normal(size=(d, d))
    M, u, E = A @ A.T / d, rng.normal(size=d), rng.normal(size=(d, d))
    E = (E + E.T) / 2
    for y, mu in ((1.0, 1.3), (-1.0, 2.0), (1.0, 9.0), (-1.0, 1.0)):
        def ell(M_, mu_):
            return table1_loss(y * (mu_ - u @ M_ @ u), loss)

        m = y * (mu - u @ M @ u)
        if loss == "hinge" and abs(1 - m) < 1e-3:
            continue  # not differentiable at the kink
        g = float(loss_and_slope(m, loss)[1])
        alpha = y * g
        grad_M, grad_mu = alpha * np.outer(u, u), -alpha  # Table 1: ∇_M ℓ = α uuᵀ, ∇_µ ℓ = −α
        h = 1e-6
        fd_M = (ell(M + h * E, mu) - ell(M - h * E, mu)) / (2 * h)
        fd_mu = (ell(M, mu + h) - ell(M, mu - h)) / (2 * h)
        assert np.sum(grad_M * E) == pytest.approx(fd_M, rel=1e-6, abs=1e-9)
        assert grad_mu == pytest.approx(fd_mu, rel=1e-6, abs=1e-9)
        assert float(loss_and_slope(m, loss)[0]) == pytest.approx(ell(M, mu), rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_frobenius_step_is_the_trace_norm_prox(seed):
    """(10)–(12): the shrunk rank-one update equals cvxpy's prox of η ρ tr(M) on the PSD cone."""
    rng = np.random.default_rng(seed)
    d = 5
    lam = np.array([0.0, 0.0, 0.3, 1.0, 2.0])
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    u = rng.normal(size=d)
    coef, thr = 0.4 * (-1) ** seed, 0.25  # η_t α_t and η_t ρ
    new_lam, new_V = comid_step(lam, Q, coef, Q.T @ u, thr)
    M_next = (new_V * new_lam) @ new_V.T
    Y = (Q * lam) @ Q.T - coef * np.outer(u, u)
    M = cp.Variable((d, d), PSD=True)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(M - Y) + thr * cp.trace(M)))
    prob.solve(solver="CLARABEL")
    ours = 0.5 * np.sum((M_next - Y) ** 2) + thr * np.trace(M_next)
    assert ours <= prob.value * (1 + 1e-3) + 1e-9
    assert ours >= prob.value - 1e-6 * (1 + abs(prob.value))  # cvxpy's accuracy
    np.testing.assert_allclose(M_next, M.value, atol=1e-5)
    assert new_lam.min() >= 0 and np.sum(new_lam == 0) >= 1  # PSD, spectrum shrunk to zero


def dense_mdml(U, y, loss, divergence, eta, rho, n_epochs, hard=False):
    """Algorithm 1 with dense matrices: eigh / scipy expm / logm each step, Table 1 by hand.
    ``hard``: the eigenvalues below ρ are zeroed and the others kept (the authors' code)."""

    def shrink(lam, eta_t):
        return np.where(lam < rho, 0.0, lam) if hard else np.maximum(lam - eta_t * rho, 0)

    d = U.shape[1]
    M, mu, t = np.eye(d), 1.0, 0
    for _ in range(n_epochs):
        for u, yt in zip(U, y):
            t += 1
            eta_t = eta / np.sqrt(t)
            m = yt * (mu - u @ M @ u)
            h = 1e-7  # −dℓ/dm by central differences of Table 1's loss (hinge: its step)
            g = float(m < 1) if loss == "hinge" else -(table1_loss(m + h, loss)
                                                        - table1_loss(m - h, loss)) / (2 * h)
            G = g * yt * np.outer(u, u)
            if divergence == "frobenius":
                lam, V = np.linalg.eigh(M - eta_t * G)
                M = (V * shrink(lam, eta_t)) @ V.T
                mu = max(mu + eta_t * g * yt, 1.0)
            else:
                lam, V = np.linalg.eigh(np.real(scipy.linalg.logm(M)) - eta_t * G)
                M = scipy.linalg.expm((V * shrink(lam, eta_t)) @ V.T)
                mu = max(mu * np.exp(eta_t * g * yt), 1.0)
            M = (M + M.T) / 2
    return M, mu


@pytest.mark.parametrize("loss,divergence", [("hinge", "frobenius"), ("logistic", "von_neumann"),
                                             ("modified_least_squares", "frobenius"),
                                             ("exponential", "von_neumann")])
def test_algorithm1_matches_a_dense_reference(loss, divergence):
    X, c = random_pair_problem(2, d=4, n=10, n_similar=6, n_dissimilar=8, scale=0.5)
    U, y = labelled(X, c)
    eta, rho = (0.3, 0.05) if divergence == "frobenius" else (0.2, 0.02)
    model = MDML(loss=loss, divergence=divergence, eta=eta, rho=rho, n_epochs=3,
                 shuffle=False).fit(X, constraints=c)
    M_ref, mu_ref = dense_mdml(U, y, loss, divergence, eta, rho, 3)
    tol = 1e-9 if loss == "hinge" else 1e-6  # the reference differentiates the loss numerically
    np.testing.assert_allclose(model.metric_, M_ref, atol=tol * np.abs(M_ref).max())
    assert model.threshold_ == pytest.approx(mu_ref, rel=tol)
    assert model.n_iter_ == 3 * len(U)


@pytest.mark.parametrize("loss,divergence", [("hinge", "frobenius"), ("logistic", "von_neumann")])
def test_hard_shrinkage_matches_the_dense_reference(loss, divergence):
    """``shrinkage="hard"`` (eigenvalues below ρ set to 0, the others kept) against the dense
    loop; ρ large enough that some eigenvalues are zeroed."""
    X, c = random_pair_problem(3, d=4, n=10, n_similar=6, n_dissimilar=8, scale=0.5)
    U, y = labelled(X, c)
    eta, rho = (0.3, 0.6) if divergence == "frobenius" else (0.2, 0.05)
    model = MDML(loss=loss, divergence=divergence, eta=eta, rho=rho, n_epochs=2,
                 shuffle=False, shrinkage="hard").fit(X, constraints=c)
    M_ref, mu_ref = dense_mdml(U, y, loss, divergence, eta, rho, 2, hard=True)
    tol = 1e-9 if loss == "hinge" else 1e-6  # the reference differentiates the loss numerically
    np.testing.assert_allclose(model.metric_, M_ref, atol=tol * np.abs(M_ref).max())
    assert model.threshold_ == pytest.approx(mu_ref, rel=tol)
    soft = MDML(loss=loss, divergence=divergence, eta=eta, rho=rho, n_epochs=2,
                shuffle=False).fit(X, constraints=c)
    assert not np.allclose(soft.metric_, model.metric_)  # the two rules differ here


def test_converges_to_the_cvxpy_optimum_of_eq4():
    """COMID with η/√t (O(√T) regret) reaches the minimum of (4) on a tiny problem."""
    X, c = random_pair_problem(0, d=3, n=10, n_similar=8, n_dissimilar=12, scale=0.5)
    U, y = labelled(X, c)
    rho = 0.05
    M, mu = cp.Variable((3, 3), PSD=True), cp.Variable()
    m = cp.multiply(y, mu - cp.sum(cp.multiply(U @ M, U), axis=1))
    prob = cp.Problem(cp.Minimize(cp.sum(cp.logistic(-m)) / len(y) + rho * cp.trace(M)), [mu >= 1])
    prob.solve(solver="CLARABEL")
    model = MDML(loss="logistic", divergence="frobenius", eta=0.3, rho=rho, n_epochs=200,
                 log_every=None).fit(X, constraints=c)
    achieved = eq4(model.metric_, model.threshold_, U, y, "logistic", rho)
    assert achieved == pytest.approx(model.objective_, rel=1e-10)
    assert achieved >= prob.value * (1 - 1e-6)  # cannot beat the optimum
    assert (achieved - prob.value) / prob.value < 1e-3
    assert np.linalg.eigvalsh(model.metric_).min() >= -1e-12 and model.threshold_ >= 1


def test_large_rho_gives_a_sparse_spectrum():
    """Fig. 4 (top): more trace-norm weight, fewer non-zero eigenvalues (exact zeros)."""
    X, c = random_pair_problem(3, d=6, n=20, n_similar=20, n_dissimilar=20)
    counts = []
    for rho in (0.0, 1.0, 4.0, 8.0):
        model = MDML(eta=0.1, rho=rho, n_epochs=2).fit(X, constraints=c)
        nonzero = np.sum(model.eigenvalues_ > 0)
        assert np.all(model.eigenvalues_ >= 0) and model.trace_["rank"][-1] == nonzero
        assert np.linalg.matrix_rank(model.metric_, tol=1e-10) == nonzero
        counts.append(nonzero)
    assert counts[0] == 6 and counts[-1] <= 1
    assert all(a >= b for a, b in zip(counts, counts[1:]))


@pytest.mark.parametrize("divergence", ["frobenius", "von_neumann"])
def test_fitted_attributes_are_consistent(divergence):
    X, c = random_pair_problem(4, d=5, n=20, n_similar=15, n_dissimilar=25)
    U, y = labelled(X, c)
    model = MDML(divergence=divergence, loss="logistic", rho=0.01, n_epochs=2,
                 log_every=7).fit(X, constraints=c)
    M = model.metric_
    np.testing.assert_allclose(model.components_.T @ model.components_, M, atol=1e-12)
    np.testing.assert_allclose(np.linalg.eigvalsh(M), model.eigenvalues_, atol=1e-10)
    assert model.objective_ == pytest.approx(eq4(M, model.threshold_, U, y, "logistic", 0.01),
                                             rel=1e-10)
    tr = model.trace_
    assert set(tr) >= {"objective", "time", "threshold"}
    assert tr["n_updates"][-1] == model.n_iter_ == 2 * len(U)
    assert np.all(np.diff(tr["n_updates"]) > 0) and len(tr["objective"]) == len(U) * 2 // 7 + 1
    assert np.all(np.diff(tr["time"]) >= 0) and model.converged_
    if divergence == "von_neumann":  # (12): log-eigenvalues shrunk to ≥ 0, so M ⪰ I (§4)
        assert model.eigenvalues_.min() >= 1 - 1e-12
    else:
        assert model.eigenvalues_.min() >= 0


def test_deterministic_given_random_state():
    X, c = random_pair_problem(5, d=4, n=15, n_similar=12, n_dissimilar=12)
    np.random.seed(1)
    a = MDML(random_state=3).fit(X, constraints=c).metric_
    np.random.seed(2)
    b = MDML(random_state=3).fit(X, constraints=c).metric_
    other = MDML(random_state=4).fit(X, constraints=c).metric_
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, other)


def test_improves_on_euclidean_3nn_on_wine():
    X, y = load_wine(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    sc = StandardScaler().fit(Xtr)
    Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
    c = knn_pairs(Xtr, ytr, k=3)
    euclid = knn_error(Xtr, ytr, Xte, yte)
    model = MDML().fit(Xtr, constraints=c)  # H+F with the defaults
    err = knn_error(model.transform(Xtr), ytr, model.transform(Xte), yte)
    assert err <= euclid and err <= 0.05


def test_bad_parameters_are_refused():
    X, c = random_pair_problem(0)
    for params in ({"loss": "bogus"}, {"divergence": "kl"}, {"eta": 0}, {"rho": -1},
                   {"n_epochs": 0}, {"log_every": 0}):
        with pytest.raises(ValueError):
            MDML(**params).fit(X, constraints=c)
