"""SGD-IncSVD and the Fig. 2 comparators (Zhang & Zhang 2017) against dense numpy and cvxpy.

References used here, written independently of the package: numpy ``eigh`` of the dense
matrices of updates (3)–(5), and cvxpy (Clarabel) on the convex problem of the paper's experiments
section, ``min (1/T) Σ max(1 + ‖x_i − x_j‖²_W − ‖x_i − x_k‖²_W, 0) + λ tr W, W ⪰ 0, ‖W‖ ≤ τ``.
"""

import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from dml_bench.constraints import Constraints, random_triplets
from dml_bench.solvers.incremental_eigen import eigen_update
from dml_bench.solvers.lowrank_dense import LowRankFW, LowRankGD, LowRankSGD, LowRankSGDBatch
from dml_bench.solvers.lowrank_sgd_one import LowRankSGDOne
from dml_bench.solvers.lowrank_sgd import SGDIncSVD, TripletEvaluator, incsvd_step

cp = pytest.importorskip("cvxpy")

COMPARATORS = [LowRankGD, LowRankSGD, LowRankSGDBatch, LowRankFW, LowRankSGDOne]


# ------------------------------------------------------------------------------ references

def triplet_problem(seed, d=4, n=12, T=25, max_sq_norm=None):
    """Gaussian points with 3 labels and T random label triplets (i, j same class, k other).

    With ``max_sq_norm`` the points are scaled so that every difference row of a triplet has
    ‖·‖² ≤ max_sq_norm; below 1/2 every hinge is active on the whole feasible set (‖W‖₂ ≤ 1),
    so the objective is linear there.
    """
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.integers(0, 3, size=n)
    y[:3] = [0, 1, 2]
    trip = []
    while len(trip) < T:
        i, j, k = rng.choice(n, 3, replace=False)
        if y[i] == y[j] and y[k] != y[i]:
            trip.append((i, j, k))
    trip = np.array(trip)
    if max_sq_norm is not None:
        sq = max(((X[trip[:, 0]] - X[trip[:, c]]) ** 2).sum(1).max() for c in (1, 2))
        X *= np.sqrt(max_sq_norm / sq)
    empty = np.zeros((0, 2), dtype=int)
    return X, Constraints(empty, empty, trip)


def objective(X, c, W, lam):
    """F(W), written out with dense d×d algebra."""
    T = c.triplets
    Dt, Di = X[T[:, 0]] - X[T[:, 1]], X[T[:, 0]] - X[T[:, 2]]
    qt = np.einsum("ij,jk,ik->i", Dt, W, Dt)
    qi = np.einsum("ij,jk,ik->i", Di, W, Di)
    return np.maximum(1 + qt - qi, 0).mean() + lam * np.trace(W)


def cvxpy_optimum(X, c, lam, tau=1.0, norm="fro"):
    d = X.shape[1]
    W = cp.Variable((d, d), PSD=True)
    T = c.triplets
    Dt, Di = X[T[:, 0]] - X[T[:, 1]], X[T[:, 0]] - X[T[:, 2]]
    qt = cp.sum(cp.multiply(Dt @ W, Dt), axis=1)
    qi = cp.sum(cp.multiply(Di @ W, Di), axis=1)
    ball = cp.norm(W, "fro") <= tau if norm == "fro" else cp.lambda_max(W) <= tau
    prob = cp.Problem(cp.Minimize(cp.sum(cp.pos(1 + qt - qi)) / len(T) + lam * cp.trace(W)),
                      [ball])
    prob.solve(solver="CLARABEL")
    return prob.value, W.value


def dense_projected_step(W, D_target, D_impostor, eta, lam, tau, constraint, b):
    """Update (5) (or (4)) densely: eigh of W − ηg, shrink by ηλ, clip at 0, then the ball."""
    g = (D_target.T @ D_target - D_impostor.T @ D_impostor) / b
    mu, V = np.linalg.eigh(W - eta * g)
    s = np.maximum(mu - eta * lam, 0)
    if constraint == "frobenius":
        s *= min(1.0, tau / np.linalg.norm(s)) if s.any() else 1.0
    else:
        s = np.minimum(s, tau)
    return (V * s) @ V.T


def assert_psd_in_ball(W, tau=1.0):
    lam = np.linalg.eigvalsh(W)
    assert lam.min() >= -1e-10 * max(1.0, lam.max())
    assert np.linalg.norm(W) <= tau * (1 + 1e-9)


# ------------------------------------------------------------------------------ incremental eigen

@pytest.mark.parametrize("r,c", [(3, 4), (0, 5), (6, 2)])
def test_incremental_update_equals_dense_eigh(r, c):
    rng = np.random.default_rng(r * 10 + c)
    d = 10
    U = np.linalg.qr(rng.normal(size=(d, max(r, 1))))[0][:, :r]
    s = rng.normal(size=r) * 3
    A = rng.normal(size=(d, c))
    w = rng.choice([-1.0, 1.0], size=c) * rng.uniform(0.5, 2, size=c)
    U2, s2 = eigen_update(U, s, A, w)
    dense = (U * s) @ U.T + (A * w) @ A.T
    ev = np.linalg.eigvalsh(dense)
    nonzero = np.sort(ev[np.abs(ev) > 1e-10 * np.abs(ev).max()])[::-1]
    scale = np.abs(ev).max()
    assert len(s2) == len(nonzero) == np.linalg.matrix_rank(dense)
    np.testing.assert_allclose(s2, nonzero, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose((U2 * s2) @ U2.T, dense, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(U2.T @ U2, np.eye(len(s2)), atol=1e-12)


def test_incremental_update_with_repeated_columns():
    """Mini-batches sampled with replacement repeat difference rows: A exactly rank-deficient."""
    rng = np.random.default_rng(8)
    d = 40
    U = np.linalg.qr(rng.normal(size=(d, 3)))[0]
    s = np.array([1.0, 0.5, 0.25])
    a, b = rng.normal(size=(d, 1)), rng.normal(size=(d, 1))
    A = np.hstack([a, a, b, a, b, rng.normal(size=(d, 1))])
    w = np.array([0.1, 0.1, -0.1, 0.1, -0.1, 0.1])
    U2, s2 = eigen_update(U, s, A, w)
    dense = (U * s) @ U.T + (A * w) @ A.T
    assert len(s2) == np.linalg.matrix_rank(dense) == 6
    np.testing.assert_allclose((U2 * s2) @ U2.T, dense, atol=1e-12 * np.abs(dense).max())


def test_incremental_update_with_columns_inside_the_span():
    """A ⊂ span(U): no new direction (p = 0 in the paper), rank stays r."""
    rng = np.random.default_rng(7)
    d, r = 9, 4
    U = np.linalg.qr(rng.normal(size=(d, r)))[0]
    s = np.array([4.0, 2.0, 1.0, 0.5])
    A = U @ rng.normal(size=(r, 3))
    w = np.array([0.3, -0.2, 0.1])
    U2, s2 = eigen_update(U, s, A, w)
    dense = (U * s) @ U.T + (A * w) @ A.T
    assert len(s2) == r
    np.testing.assert_allclose((U2 * s2) @ U2.T, dense, atol=1e-12 * np.abs(s).max())
    np.testing.assert_allclose(s2, np.sort(np.linalg.eigvalsh(dense))[::-1][:r], atol=1e-12 * 4)


@pytest.mark.parametrize("d,r,c", [(12, 3, 5), (5, 2, 8)])  # c > d: p = d new directions
def test_incremental_update_keeps_only_eigenvalues_above_lower(d, r, c):
    rng = np.random.default_rng(d + r + c)
    U = np.linalg.qr(rng.normal(size=(d, r)))[0]
    s = np.sort(rng.uniform(0.5, 3, size=r))[::-1]
    A = rng.normal(size=(d, c))
    w = rng.choice([-1.0, 1.0], size=c) * rng.uniform(0.5, 2, size=c)
    lower = 0.7
    U2, s2 = eigen_update(U, s, A, w, lower=lower)
    ev, V = np.linalg.eigh((U * s) @ U.T + (A * w) @ A.T)
    above = ev > lower
    np.testing.assert_allclose(s2, ev[above][::-1], rtol=0, atol=1e-12 * np.abs(ev).max())
    np.testing.assert_allclose((U2 * s2) @ U2.T, (V[:, above] * ev[above]) @ V[:, above].T,
                               rtol=0, atol=1e-12 * np.abs(ev).max())
    np.testing.assert_allclose(U2.T @ U2, np.eye(len(s2)), atol=1e-12)


@pytest.mark.parametrize("n", [12, 60])  # the triplets use most rows / a few rows of X
def test_triplet_evaluator_equals_dense_distances(n):
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 6))
    T = rng.integers(0, 10, size=(15, 3))
    F = rng.normal(size=(6, 2))
    W = F @ F.T
    ev = TripletEvaluator(X, T)
    assert (ev.pts is None) == (n == 12)
    Dt, Di = X[T[:, 0]] - X[T[:, 1]], X[T[:, 0]] - X[T[:, 2]]
    expected = (np.einsum("ij,jk,ik->i", Dt, W, Dt), np.einsum("ij,jk,ik->i", Di, W, Di))
    for got in (ev.distances_factor(F), ev.distances_dense(W),
                TripletEvaluator(scipy.sparse.csr_matrix(X), T).distances_factor(F)):
        np.testing.assert_allclose(got, expected, rtol=1e-12)


# ------------------------------------------------------------------------------ one step, fit

@pytest.mark.parametrize("constraint,tau", [("frobenius", 1.0), ("frobenius", 0.3),
                                            ("spectral", 0.4)])
def test_one_incsvd_step_equals_the_dense_projected_step(constraint, tau):
    rng = np.random.default_rng(3)
    d, r, a, b = 8, 3, 5, 7
    U = np.linalg.qr(rng.normal(size=(d, r)))[0]
    s = np.array([0.6, 0.4, 0.05])
    Dt, Di = rng.normal(size=(a, d)), rng.normal(size=(a, d))
    eta, lam = 0.2, 0.3
    U2, s2 = incsvd_step(U, s, Dt, Di, eta, lam, tau, constraint, batch_size=b)
    expected = dense_projected_step((U * s) @ U.T, Dt, Di, eta, lam, tau, constraint, b)
    np.testing.assert_allclose((U2 * s2) @ U2.T, expected, rtol=0, atol=1e-9)
    assert np.all(s2 > 0)
    assert len(s2) == np.linalg.matrix_rank(expected, tol=1e-10)


def test_fit_replays_algorithm_1_densely():
    """Five iterations of the solver equal a dense replay with the same mini-batches."""
    X, c = triplet_problem(1, d=5, n=14, T=30)
    lam, step, b = 0.05, 0.3, 8
    model = SGDIncSVD(lam=lam, step=step, batch_size=b, max_iter=5, random_state=11,
                      n_eval=None).fit(X, constraints=c)
    rng = np.random.default_rng(11)  # the documented sampling: default_rng(random_state)
    W = np.zeros((5, 5))
    for t in range(1, 6):
        batch = c.triplets[rng.integers(len(c.triplets), size=b)]
        Dt, Di = X[batch[:, 0]] - X[batch[:, 1]], X[batch[:, 0]] - X[batch[:, 2]]
        act = 1 + np.einsum("ij,jk,ik->i", Dt, W, Dt) - np.einsum("ij,jk,ik->i", Di, W, Di) > 0
        W = dense_projected_step(W, Dt[act], Di[act], step / np.sqrt(t), lam, 1.0, "frobenius", b)
    np.testing.assert_allclose(model.metric_, W, atol=1e-10)
    assert model.objective_ == pytest.approx(objective(X, c, W, lam), rel=1e-10)
    assert model.trace_["rank"][-1] == np.linalg.matrix_rank(W, tol=1e-10)
    assert model.trace_["objective"][-1] == pytest.approx(model.objective_, rel=1e-12)
    np.testing.assert_allclose(model.components_.T @ model.components_, W, atol=1e-10)
    assert "metric_" not in vars(model)  # a property, never stored


def active_rows(X, c, W):
    """The difference rows ``x_i − x_j``, ``x_i − x_k`` of the triplets whose hinge is active at
    W (dense d×d algebra)."""
    T = c.triplets
    Dt, Di = X[T[:, 0]] - X[T[:, 1]], X[T[:, 0]] - X[T[:, 2]]
    act = 1 + np.einsum("ij,jk,ik->i", Dt, W, Dt) - np.einsum("ij,jk,ik->i", Di, W, Di) > 0
    return Dt[act], Di[act]


def fw_vertex(G, lam, tau=1.0):
    """``τ N/‖N‖_F``, ``N = Π_{S₊}(−G − λI)``, by numpy's ``eigh``."""
    theta, V = np.linalg.eigh(-G - lam * np.eye(len(G)))
    N = (V * np.maximum(theta, 0)) @ V.T
    return tau * N / np.linalg.norm(N) if N.any() else N


def in_all_coordinates(cls):
    """``cls`` solving in all d coordinates even with fewer points than features."""
    return type(cls.__name__, (cls,), {"span_complement": None})


@pytest.mark.parametrize("cls", [LowRankGD, LowRankFW])
def test_gd_and_fw_replay_their_updates_densely(cls, eigh_drivers):
    """Eight iterations of GD (update (5) with the full gradient) and of FW equal a dense numpy
    replay, in d = 200 where the iterates have rank at most 29 (30 points): after the first,
    the projections decompose only the few eigenpairs they keep (``syevr`` on a value range,
    ``linalg.eigh_above``), and GD's objective is taken on the factor of its iterate."""
    X, c = triplet_problem(5, d=200, n=30, T=80)
    lam, step = 0.1, (0.1 if cls is LowRankGD else 2.0)
    full = in_all_coordinates(cls)  # the d×d path (the span's is checked against it elsewhere)
    model = full(lam=lam, step=step, max_iter=8).fit(X, constraints=c)
    W, objectives = np.zeros((200, 200)), []
    for t in range(1, 9):
        objectives.append(objective(X, c, W, lam))
        At, Ai = active_rows(X, c, W)
        if cls is LowRankGD:  # the full gradient: the mini-batch step with b = T
            W = dense_projected_step(W, At, Ai, step, lam, 1.0, "frobenius", len(c.triplets))
        else:
            G = (At.T @ At - Ai.T @ Ai) / len(c.triplets)
            gamma = min(1.0, step / (t + 2))
            W = (1 - gamma) * W + gamma * fw_vertex(G, lam)
    assert "evr" in eigh_drivers[1:]
    np.testing.assert_allclose(model.metric_, W, rtol=0, atol=1e-10)
    np.testing.assert_allclose(model.trace_["objective"], objectives, rtol=1e-10)
    assert model.objective_ == pytest.approx(objective(X, c, W, lam), rel=1e-10)


def test_csr_input_gives_the_same_result_as_dense():
    X, c = triplet_problem(2, d=30, n=20, T=40)
    X[np.abs(X) < 1.0] = 0.0  # genuinely sparse
    kw = dict(lam=0.05, step=0.05, batch_size=10, max_iter=20, random_state=0)
    dense = SGDIncSVD(**kw).fit(X, constraints=c)
    sparse = SGDIncSVD(**kw).fit(scipy.sparse.csr_matrix(X), constraints=c)
    np.testing.assert_allclose(sparse.metric_, dense.metric_, atol=1e-12)
    np.testing.assert_allclose(sparse.trace_["objective"], dense.trace_["objective"], rtol=1e-12)
    np.testing.assert_allclose(sparse.transform(scipy.sparse.csr_matrix(X)), dense.transform(X),
                               atol=1e-12)


def test_memory_stays_linear_in_d():
    """d = 20 000: peak traced memory O(d(r + c)), far below one d×d array (3.2 GB)."""
    rng = np.random.default_rng(0)
    n, d, b, r_max = 60, 20_000, 20, 50
    X = scipy.sparse.random(n, d, density=0.05, format="csr", random_state=1, dtype=float)
    c = random_triplets(X, rng.integers(0, 3, size=n), n_triplets=500, random_state=0)
    model = SGDIncSVD(lam=1e-3, step=1.0, batch_size=b, max_iter=4, max_rank=r_max,
                      log_every=2)
    tracemalloc.start()
    try:
        model.fit(X, constraints=c)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    r = int(model.trace_["rank"].max())
    assert 0 < r <= r_max
    assert peak < 50 * d * (r + 2 * b) * 8
    assert peak < d * d * 8 / 20
    assert "metric_" not in vars(model)


@pytest.mark.parametrize("cls", COMPARATORS)
def test_the_memory_guard_counts_the_dxd_arrays_a_fit_holds(cls):
    """The guard's count of d×d arrays (``_n_dense``) against the peak that tracemalloc measures
    over a whole fit (numpy and LAPACK's workspace included): never above it, and not padded by
    a whole array. The n×d arrays of 40 points add 0.05 d² here."""
    rng = np.random.default_rng(0)
    n, d = 40, 800
    X = rng.standard_normal((n, d))
    c = Constraints(np.zeros((0, 2), int), np.zeros((0, 2), int),
                    np.array([[i, (i + 1) % n, (i + 2) % n] for i in range(n)]))
    model = in_all_coordinates(cls)(max_iter=3)  # 40 points in d = 800: not in their span
    if "log_every" in model.get_params():  # the SGD variants: their objective at every iterate
        model.set_params(log_every=1)
    clone(model).fit(X, constraints=c)  # numba's first compilation (no on-disk cache) is not
    tracemalloc.start()                 # the fit's memory
    try:
        model.fit(X, constraints=c)
        peak = tracemalloc.get_traced_memory()[1] / (d * d * 8)
    finally:
        tracemalloc.stop()
    assert cls._n_dense - 1 < peak <= cls._n_dense + 0.25


@pytest.mark.parametrize("cls", COMPARATORS)
def test_memory_guard_raises_before_allocating(cls):
    d = 200_000
    X = np.zeros((4, d))
    X[np.arange(4), np.arange(4)] = 1.0
    c = Constraints(np.zeros((0, 2), int), np.zeros((0, 2), int), np.array([[0, 1, 2]]))
    # in all coordinates (the learner without its solve in the span)
    full = type("Full" + cls.__name__, (cls,), {"span_complement": None})
    with pytest.raises(MemoryError, match=r"needs about \d+.* GiB for d×d matrices \(d = 200000"):
        full(max_iter=1).fit(X, constraints=c)
    with pytest.raises(MemoryError, match="available 0.0 GiB"):
        full(max_iter=1, memory_limit_gb=1e-6).fit(X[:, :300], constraints=c)
    if cls(max_iter=1)._solves_in_span():
        # four points span three dimensions: the fit there forms no d×d matrix and runs
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            assert cls(max_iter=1).fit(X, constraints=c).span_dim_ == 3
    if cls is LowRankSGDOne:  # in the span with the barycentre subgradient only
        assert LowRankSGDOne(max_iter=1, subgradient="eigenspace").fit(
            X, constraints=c).span_dim_ == 3


# ------------------------------------------------------------------------------ optimisation

@pytest.mark.parametrize("cls,params", [
    (SGDIncSVD, {"step": 0.1, "batch_size": 10}),
    (LowRankGD, {"step": 0.05}),
    (LowRankSGD, {"step": 0.1}),
    (LowRankSGDBatch, {"step": 0.02}),
    (LowRankFW, {}),
    (LowRankSGDOne, {"step": 0.02}),
])
def test_each_method_decreases_the_objective(cls, params):
    X, c = triplet_problem(4, d=5, n=16, T=30)
    lam = 0.1
    model = cls(lam=lam, max_iter=300, **params).fit(X, constraints=c)
    f0 = objective(X, c, np.zeros((5, 5)), lam)  # W_1 = 0
    f_opt, _ = cvxpy_optimum(X, c, lam)
    W = model.metric_
    assert_psd_in_ball(W)
    assert model.objective_ == pytest.approx(objective(X, c, W, lam), rel=1e-10)
    # at least half of the way from F(0) to the optimum
    assert model.objective_ - f_opt < 0.5 * (f0 - f_opt)
    logged = model.trace_["objective"][~np.isnan(model.trace_["objective"])]
    assert logged[-1] < logged[0] or logged[0] < f0
    assert all(len(v) == model.n_iter_ for v in model.trace_.values())
    assert np.all(np.diff(model.trace_["time"]) >= 0)


@pytest.mark.parametrize("seed", [1, 4])
def test_gd_and_fw_reach_the_cvxpy_optimum_when_the_objective_is_linear(seed):
    """All hinges active on the feasible set: F linear, W* = τ Π₊(−∇F)/‖Π₊(−∇F)‖_F."""
    X, c = triplet_problem(seed, max_sq_norm=0.45)
    lam = 0.01
    f_opt, W_opt = cvxpy_optimum(X, c, lam)
    assert np.linalg.norm(W_opt) > 0.99  # a non-trivial optimum on the sphere (seed 1: rank 2)
    gd = LowRankGD(lam=lam, step=1.0, max_iter=200).fit(X, constraints=c)
    fw = LowRankFW(lam=lam, max_iter=400).fit(X, constraints=c)
    for model in (gd, fw):
        assert_psd_in_ball(model.metric_)
        assert abs(model.objective_ - f_opt) <= 1e-3 * abs(f_opt)
        assert model.objective_ >= f_opt * (1 - 1e-6)  # a feasible point cannot beat cvxpy
        assert model.objective_ - f_opt <= 1e-3 * (1.0 - f_opt)  # 1e-3 of the decrease F(0) − F*
        np.testing.assert_allclose(model.metric_, W_opt, atol=1e-3)


def test_spectral_ball_matches_cvxpy():
    """Update (4) / Theorem 2: the same problem with ‖W‖₂ ≤ τ."""
    X, c = triplet_problem(1, max_sq_norm=0.45)
    lam, tau = 0.01, 0.5
    f_opt, W_opt = cvxpy_optimum(X, c, lam, tau=tau, norm="spectral")
    assert np.linalg.matrix_rank(W_opt, tol=1e-6) >= 1
    gd = LowRankGD(lam=lam, tau=tau, constraint="spectral", step=10.0, max_iter=200).fit(
        X, constraints=c)
    assert np.linalg.eigvalsh(gd.metric_).max() <= tau * (1 + 1e-9)
    assert abs(gd.objective_ - f_opt) <= 1e-3 * abs(f_opt)
    assert abs(gd.objective_ - f_opt) <= 1e-3 * (1.0 - f_opt)


@pytest.mark.parametrize("seed", [0, 2])
def test_gd_reaches_the_cvxpy_optimum_on_the_hinge(seed):
    """Kinks active at the optimum: constant-step GD (the paper's setting) reaches an O(η)
    neighbourhood; its best iterate (the trace holds the exact F of every iterate) is within
    1e-3 of cvxpy, and so is FW's duality gap certificate at every iterate."""
    X, c = triplet_problem(seed, d=4)
    lam = 0.1
    f_opt, _ = cvxpy_optimum(X, c, lam)
    gd = LowRankGD(lam=lam, step=0.003, max_iter=6000).fit(X, constraints=c)
    best = gd.trace_["objective"].min()
    assert best >= f_opt * (1 - 1e-6)
    assert (best - f_opt) / f_opt < 1e-3
    fw = LowRankFW(lam=lam, max_iter=300).fit(X, constraints=c)
    # FW gap ⟨g, W_t − S_t⟩ ≥ F(W_t) − F* for any subgradient g (convexity)
    assert np.all(fw.trace_["gap"] >= fw.trace_["objective"] - f_opt - 1e-7)


def test_fw_tolerance_stops_and_warns():
    X, c = triplet_problem(1, max_sq_norm=0.45)
    fw = LowRankFW(lam=0.01, tol=1e-6, max_iter=5000).fit(X, constraints=c)
    assert fw.converged_ and fw.n_iter_ < 5000
    assert fw.trace_["gap"][-1] <= 1e-6 * abs(fw.trace_["objective"][-1])
    from sklearn.exceptions import ConvergenceWarning
    with pytest.warns(ConvergenceWarning):
        capped = LowRankFW(lam=0.01, tol=1e-12, max_iter=3).fit(X, constraints=c)
    assert not capped.converged_


@pytest.mark.parametrize("d", [5, 70])  # dense eigh / Lanczos (from W_1 = 0) for λ_min
def test_sgd_one_returns_a_feasible_projection_of_the_average(d):
    X, c = triplet_problem(3, d=d, n=16, T=30)
    model = LowRankSGDOne(lam=0.1, step=0.02, max_iter=200 if d < 10 else 20).fit(
        X, constraints=c)
    assert_psd_in_ball(model.metric_)
    assert model.trace_["multiplier"].min() >= 0


def test_rank_shrinks_with_lambda():
    X, c = triplet_problem(6, d=6, n=20, T=40)
    ranks = [SGDIncSVD(lam=lam, step=0.1, batch_size=20, max_iter=100).fit(X, constraints=c)
             .trace_["rank"][-1] for lam in (0.0, 0.5, 50.0)]
    assert ranks[0] >= ranks[1] >= ranks[2] == 0


# ------------------------------------------------------------------------------ generator, params

def test_random_triplets_are_label_triplets_and_work_on_csr():
    y = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 3])
    X = scipy.sparse.csr_matrix(np.eye(10))
    c = random_triplets(X, y, n_triplets=5000, random_state=1)
    T = c.triplets
    assert T.shape == (5000, 3)
    assert np.all(y[T[:, 0]] == y[T[:, 1]]) and np.all(T[:, 0] != T[:, 1])
    assert np.all(y[T[:, 0]] != y[T[:, 2]])
    assert not np.any(T[:, 0] == 9)  # a singleton class has no same-class partner
    counts = np.bincount(T[:, 0], minlength=10)[:9]
    assert counts.min() > 0.8 * 5000 / 9  # anchors uniform over the 9 eligible points
    np.testing.assert_array_equal(random_triplets(X, y, 5000, random_state=1).triplets, T)
    assert not np.array_equal(random_triplets(X, y, 5000, random_state=2).triplets, T)


@pytest.mark.parametrize("cls", [SGDIncSVD, *COMPARATORS])
def test_bad_parameters_are_refused(cls):
    X, c = triplet_problem(0)
    for params in ({"constraint": "nuclear"}, {"tau": 0}, {"step": -1}, {"lam": -1}):
        with pytest.raises(ValueError):
            cls(**params).fit(X, constraints=c)
