"""Baselines: scikit-learn wrappers against scikit-learn, RCA against an independent covariance,
LDML against cvxpy (its log-likelihood is concave in (M, b)) and finite differences."""

import warnings

import numpy as np
import scipy.linalg
import pytest
from scipy.spatial.distance import pdist, squareform
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.exceptions import ConvergenceWarning
from sklearn.neighbors import NeighborhoodComponentsAnalysis

from dml_bench.constraints import Constraints
from dml_bench.solvers.baselines import LDA, NCA, RCA, PCAMetric
from dml_bench.solvers.ldml import LDML, ldml_gradient, ldml_loglik
from dml_bench.solvers.linalg import PairOuterSum

cp = pytest.importorskip("cvxpy")


@pytest.fixture(scope="module")
def labelled():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(m, s, (30, 5)) for m, s in ((0, 1), (1, 0.5), (-1, 2))])
    X = X @ rng.normal(size=(5, 5))
    return X, np.repeat([0, 1, 2], 30)


def same_distances(A, B):
    np.testing.assert_allclose(pdist(A), pdist(B), rtol=1e-8, atol=1e-8 * pdist(B).max())


# ------------------------------------------------------------------ wrappers


@pytest.mark.parametrize("n_components", [None, 2])
def test_nca_equals_sklearn(labelled, n_components):
    X, y = labelled
    params = dict(n_components=n_components, max_iter=30, tol=1e-5, init="pca", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = NCA(**params).fit(X, y)
        ref = NeighborhoodComponentsAnalysis(**params).fit(X, y)
    same_distances(model.transform(X), ref.transform(X))
    np.testing.assert_allclose(model.metric_, model.components_.T @ model.components_)
    assert model.n_iter_ == len(model.trace_["time"]) == ref.n_iter_ - 1  # sklearn counts +1
    assert model.converged_ == (model.n_iter_ < 30)


def test_nca_warns_when_saturated_softmax_stops_it_at_its_start():
    """On iris in centimetres NCA learns; scaled by 1000 every soft-neighbour probability is 0
    or 1, L-BFGS makes no step and the warning names the distance scale (the median
    nearest-neighbour squared distance, here from scipy's pdist over all 150 points) and the
    remedy."""
    X, y = load_iris(return_X_y=True)
    D = squareform(pdist(1000 * X, "sqeuclidean"))
    np.fill_diagonal(D, np.inf)
    reference = np.median(D.min(axis=1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        learned = NCA(max_iter=50).fit(X, y)
        stuck = NCA(max_iter=50).fit(1000 * X, y)
    messages = [str(w.message) for w in caught if "no L-BFGS step" in str(w.message)]
    assert learned.n_iter_ > 0 and stuck.n_iter_ == 0
    assert len(messages) == 1
    assert f"squared distance here {reference:.3g}" in messages[0] and "normalize:" in messages[0]
    np.testing.assert_allclose(stuck.metric_, np.eye(4))


def test_nca_memory_guard_matches_what_sklearn_allocates(labelled):
    """The guard's n×n estimate bounds scikit-learn's traced peak, and refuses before fitting."""
    import tracemalloc

    rng = np.random.default_rng(0)
    n = 600
    X, y = rng.normal(size=(n, 4)), rng.integers(0, 4, n)
    need = 8 * n * n * NCA._n_pairwise
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            NCA(max_iter=2, memory_limit_gb=need / 2**30).fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 3 * 8 * n * n < peak <= need
    with pytest.raises(MemoryError, match=r"NCA needs about .* GiB for n×n matrices \(n = 600"):
        NCA(max_iter=2, memory_limit_gb=0.9 * need / 2**30).fit(X, y)


@pytest.mark.parametrize("params", [{}, {"n_components": 1},
                                    {"solver": "eigen", "shrinkage": "auto"}])
def test_lda_equals_sklearn_up_to_centring(labelled, params):
    X, y = labelled
    model = LDA(**params).fit(X, y)
    ref = LinearDiscriminantAnalysis(**params).fit(X, y)
    Z, R = model.transform(X), ref.transform(X)
    offset = (R - Z).mean(axis=0)
    np.testing.assert_allclose(Z + offset, R, atol=1e-9 * np.abs(R).max())
    same_distances(Z, R)


def test_lda_refuses_lsqr(labelled):
    with pytest.raises(ValueError, match="solver"):
        LDA(solver="lsqr").fit(*labelled)


@pytest.mark.parametrize("params", [{}, {"n_components": 3, "whiten": True}])
def test_pca_equals_sklearn(labelled, params):
    X, _ = labelled
    model = PCAMetric(**params).fit(X)
    ref = PCA(**params).fit(X)
    same_distances(model.transform(X), ref.transform(X))
    eig = np.linalg.eigvalsh(model.metric_)
    assert eig.min() > -1e-10 * eig.max()


# ------------------------------------------------------------------ RCA


def chunklet_covariance_loops(X, ids):
    """Ĉ = (1/p) Σ_j Σ_{i∈H_j} (x_i − m_j)(x_i − m_j)ᵀ, by explicit loops."""
    d = X.shape[1]
    C, p = np.zeros((d, d)), 0
    for j in np.unique(ids[ids >= 0]):
        pts = X[ids == j]
        m = pts.mean(axis=0)
        for x in pts:
            C += np.outer(x - m, x - m)
            p += 1
    return C / p


def test_rca_is_inverse_within_class_covariance(labelled):
    X, y = labelled
    model = RCA().fit(X, y)
    C = chunklet_covariance_loops(X, y)
    np.testing.assert_allclose(model.metric_, np.linalg.inv(C), rtol=1e-8)
    # whitening: the chunklet covariance becomes the identity in the learned space
    L = model.components_
    np.testing.assert_allclose(L @ C @ L.T, np.eye(len(L)), atol=1e-9)


def test_rca_random_chunklets_and_ridge(labelled):
    X, y = labelled
    model = RCA(chunk_size=4, n_chunks=10, ridge=0.1, random_state=3).fit(X, y)
    ids = model.chunklets(y)
    sizes = np.bincount(ids[ids >= 0])
    assert len(sizes) == 10 and (sizes == 4).all()
    for j in range(10):  # a chunklet never mixes classes
        assert len(np.unique(y[ids == j])) == 1
    C = chunklet_covariance_loops(X, ids)
    delta = 0.1 * np.trace(C) / len(C)
    np.testing.assert_allclose(model.metric_, np.linalg.inv(C + delta * np.eye(len(C))),
                               rtol=1e-8)
    np.testing.assert_array_equal(RCA(chunk_size=4, n_chunks=10, random_state=3).chunklets(y),
                                  ids)


def test_rca_cfld_reduction_solves_the_generalised_eigenproblem(labelled):
    """n_components = k: the top-k generalised eigenvectors of S_t v = λ Ĉ v (Bar-Hillel et al.
    2005, §2.3), here from scipy's generalised solver on the loop-built covariances."""
    X, y = labelled
    k = 2
    model = RCA(n_components=k).fit(X, y)
    C = chunklet_covariance_loops(X, y)
    St = np.cov(X.T, bias=True)
    lam, V = scipy.linalg.eigh(St, C)
    Vk = V[:, ::-1][:, :k]
    assert model.components_.shape == (k, X.shape[1]) and model.rank_ == k
    np.testing.assert_allclose(model.metric_, Vk @ Vk.T, rtol=1e-7, atol=1e-10)
    L = model.components_  # whitened within chunklets, as RCA's step 3 requires
    np.testing.assert_allclose(L @ C @ L.T, np.eye(k), atol=1e-9)
    with pytest.raises(ValueError, match="rank of the chunklet"):
        # 5 chunklets of 2 points in 8 dimensions: rank Ĉ = 5 < k = 6
        RCA(n_components=6).fit(np.random.default_rng(1).normal(size=(10, 8)),
                                np.repeat(np.arange(5), 2))


def test_rca_rank_deficient_reduces_to_range():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(10, 6))
    y = np.repeat(np.arange(5), 2)  # 5 chunklets of 2 points: rank Ĉ = 5 < d = 6
    model = RCA().fit(X, y)
    C = chunklet_covariance_loops(X, y)
    assert model.rank_ == 5 == np.linalg.matrix_rank(C)
    np.testing.assert_allclose(model.metric_, np.linalg.pinv(C, rcond=1e-10),
                               atol=1e-8 * np.abs(model.metric_).max())



def test_rca_with_more_dimensions_than_points_takes_the_thin_svd():
    # 12 points in 40 dimensions, 4 chunklets: rank Ĉ = 8; the fit never forms the 40×40 Ĉ
    # and gives the pseudo-inverse of the loop-built covariance, whitened on its range
    rng = np.random.default_rng(2)
    X = rng.normal(size=(12, 40))
    y = np.repeat(np.arange(4), 3)
    model = RCA().fit(X, y)
    C = chunklet_covariance_loops(X, y)
    assert model.rank_ == 8 == np.linalg.matrix_rank(C)
    np.testing.assert_allclose(model.metric_, np.linalg.pinv(C, rcond=1e-10),
                               atol=1e-8 * np.abs(model.metric_).max())
    L = model.components_
    np.testing.assert_allclose(L @ C @ L.T, np.eye(8), atol=1e-9)
    np.testing.assert_allclose(model.chunklet_covariance_, C, atol=1e-12)

# ------------------------------------------------------------------ LDML


def tiny_pairs(seed, d=3, n=12, n_pairs=40):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    pairs = np.array([rng.choice(n, 2, replace=False) for _ in range(n_pairs)])
    similar = rng.random(n_pairs) < 0.5
    return X, Constraints(pairs[similar], pairs[~similar], np.zeros((0, 3), dtype=int))


def cvxpy_loglik_optimum(X, c, psd):
    """max Σ t log σ(b − d) + (1 − t) log σ(d − b)
    = −Σ t·logistic(d − b) + (1 − t)·logistic(b − d), over M ⪰ 0 (psd) or symmetric M."""
    d = X.shape[1]
    M = cp.Variable((d, d), PSD=True) if psd else cp.Variable((d, d), symmetric=True)
    b = cp.Variable()
    Ds = X[c.similar[:, 0]] - X[c.similar[:, 1]]
    Dd = X[c.dissimilar[:, 0]] - X[c.dissimilar[:, 1]]
    ds = cp.sum(cp.multiply(Ds @ M, Ds), axis=1)
    dd = cp.sum(cp.multiply(Dd @ M, Dd), axis=1)
    obj = -cp.sum(cp.logistic(ds - b)) - cp.sum(cp.logistic(b - dd))
    prob = cp.Problem(cp.Maximize(obj))
    prob.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    return prob.value


def loglik_direct(X, c, M, b):
    """ℒ = Σ_similar ln σ(b − d) + Σ_dissimilar ln(1 − σ(b − d)), one pair at a time."""
    total = 0.0
    for pairs, t in ((c.similar, 1), (c.dissimilar, 0)):
        for i, j in pairs:
            diff = X[i] - X[j]
            p = 1 / (1 + np.exp(-(b - diff @ M @ diff)))
            total += np.log(p) if t else np.log(1 - p)
    return total


def loglik_of(model, X, c):
    return loglik_direct(X, c, model.raw_metric_, model.bias_)


@pytest.mark.parametrize("psd", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_ldml_reaches_cvxpy_optimum(seed, psd):
    X, c = tiny_pairs(seed)
    opt = cvxpy_loglik_optimum(X, c, psd)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = LDML(psd=psd, max_iter=20_000, tol=1e-9).fit(X, constraints=c)
    achieved = loglik_of(model, X, c)
    assert achieved == pytest.approx(model.objective_, rel=1e-9)
    assert achieved <= opt + 1e-6 * abs(opt)  # no feasible point beats the optimum
    assert abs(achieved - opt) / abs(opt) < 1e-3
    eig = np.linalg.eigvalsh(model.metric_)
    assert eig.min() > -1e-10 * eig.max()
    if psd:
        np.testing.assert_allclose(model.metric_, model.raw_metric_, atol=1e-10)


def test_ldml_objective_increases_monotonically():
    X, c = tiny_pairs(2, d=4, n=15, n_pairs=40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = LDML(max_iter=200).fit(X, constraints=c)
    f = model.trace_["objective"]
    assert np.all(np.diff(f) >= -1e-12 * np.abs(f[:-1]))
    assert f[-1] > f[0]
    assert set(model.trace_) >= {"objective", "kkt", "time"}
    assert np.all(np.diff(model.trace_["time"]) >= 0)


def test_ldml_gradient_matches_finite_differences():
    rng = np.random.default_rng(4)
    X, c = tiny_pairs(3, d=4)
    pairs = np.vstack([c.similar, c.dissimilar])
    t = np.r_[np.ones(len(c.similar)), np.zeros(len(c.dissimilar))]
    A = rng.normal(size=(4, 4))
    M, b = A @ A.T / 4, 0.7
    f, p = ldml_loglik(X, pairs, t, M, b)
    assert f == pytest.approx(loglik_direct(X, c, M, b), rel=1e-12)
    GM, Gb = ldml_gradient(PairOuterSum(X, pairs), t, p)
    h = 1e-6
    for _ in range(5):
        E = rng.normal(size=(4, 4))
        E = (E + E.T) / 2
        fd = (ldml_loglik(X, pairs, t, M + h * E, b)[0]
              - ldml_loglik(X, pairs, t, M - h * E, b)[0]) / (2 * h)
        assert np.sum(GM * E) == pytest.approx(fd, rel=1e-6, abs=1e-8)
    fd_b = (ldml_loglik(X, pairs, t, M, b + h)[0] - ldml_loglik(X, pairs, t, M, b - h)[0]) / (2 * h)
    assert Gb == pytest.approx(fd_b, rel=1e-6)


# ------------------------------------------------------------------ conventions


@pytest.mark.parametrize("est", [NCA(max_iter=5), LDA(), PCAMetric(), RCA(), LDML(max_iter=5)])
def test_clone_and_determinism(labelled, est):
    X, y = labelled
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = clone(est).fit(X, y)
        np.random.seed(123)
        np.random.random(7)
        b = clone(est).fit(X, y)
    np.testing.assert_array_equal(a.components_, b.components_)
    assert a.components_.shape[1] == X.shape[1]
    np.testing.assert_allclose(a.metric_, a.components_.T @ a.components_)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # capped on purpose
def test_nca_objective_is_the_expected_number_of_correctly_classified_points():
    """``objective_`` (kept from scikit-learn's last loss evaluation) is Goldberger et al.'s
    ``Σ_i Σ_{j ≠ i, y_j = y_i} p_ij`` at the returned map, computed here from its definition,
    and ``optimality_`` the ∞-norm of the gradient at it (central differences)."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.integers(0, 2, 40)
    model = NCA(max_iter=5, random_state=0).fit(X, y)
    L = model.components_

    def objective(L):
        Z = X @ L.T
        sq = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
        np.fill_diagonal(sq, np.inf)
        p = np.exp(-sq) / np.exp(-sq).sum(axis=1, keepdims=True)
        return float((p * (y[:, None] == y[None, :])).sum())

    assert model.objective_ == pytest.approx(objective(L), rel=1e-10)
    h, grad = 1e-6, np.zeros_like(L)
    for idx in np.ndindex(L.shape):
        E = np.zeros_like(L)
        E[idx] = h
        grad[idx] = (objective(L + E) - objective(L - E)) / (2 * h)
    assert model.optimality_ == pytest.approx(np.abs(grad).max(), rel=1e-5, abs=1e-8)
