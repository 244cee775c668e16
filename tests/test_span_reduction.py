"""Learners that solve in the span of the training points (d > n) against the same learner
solving in all d coordinates: the same iterates in another basis, so the metrics agree to
rounding, and the test points' 3-NN predictions are the same."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.neighbors import KNeighborsClassifier

from dml_bench.constraints import knn_triplets
from dml_bench.evaluate import model_spectrum_counts, spectrum_counts
from dml_bench.solvers import SOLVERS, top_eigen
from dml_bench.solvers.span import lift_identity_complement, span_basis


def problem(seed=0, n=40, d=120):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = rng.standard_normal((n, d)) + 1.5 * np.eye(3, d)[y] * rng.uniform(1, 3, d)
    X_test = rng.standard_normal((30, d)) + 1.5 * np.eye(3, d)[np.arange(30) % 3]
    return X, y, X_test, np.arange(30) % 3


def full_and_reduced(name, params):
    cls = SOLVERS[name.split("-")[0]]
    full_cls = type("Full" + cls.__name__, (cls,), {"span_complement": None})
    X, y, X_test, y_test = problem()
    c = knn_triplets(X, y, k=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a fixed number of iterations
        reduced = cls(**params).fit(X, y, constraints=c)
        full = full_cls(**params).fit(X, y, constraints=c)
    return X, y, X_test, reduced, full


CASES = {  # every learner with span_complement set
    "itml": {"max_iter": 30, "tol": 0.0},
    "lmnn": {"max_iter": 40},
    "lmnn-M": {"max_iter": 40, "solver": "M"},
    "frobmetric": {"max_iter": 50},
    "pola": {"n_epochs": 2},
    "boostmetric": {"max_iter": 30},
    "gd": {"max_iter": 20},
    "sgd": {"max_iter": 60, "log_every": 20},
    "sgd_incsvd": {"max_iter": 60, "log_every": 20},
    "sgd_batch": {"max_iter": 60, "log_every": 20},
    "fw": {"max_iter": 30},
    # the step and λ that put λ_min off the span with μ > 0 (the barycentre's case)
    "sgd_one": {"max_iter": 60, "log_every": 20, "subgradient": "eigenspace", "step": 0.05},
    "dml_eig": {"max_iter": 40, "tol": 0.0},
    "lmnn_eig": {"max_iter": 40, "tol": 0.0},
    "xing": {"max_iter": 30, "tol": 0.0, "max_proj": 20},
    "xing-exact": {"max_iter": 30, "tol": 0.0, "projection": "exact"},
    "sdpmetric": {"max_iter": 30, "tol": 0.0},
    "mdml": {"log_every": 50},
    "mdml-hard": {"log_every": 50, "shrinkage": "hard", "rho": 0.5},
    "mdml-vn": {"log_every": 50, "divergence": "von_neumann", "loss": "logistic", "eta": 0.05},
    "mdml-rho": {"log_every": 50, "rho": 2.0},  # the off-span eigenvalue shrinks to 0
    "ldml": {"max_iter": 40, "tol": 0.0},
    "ldml-psd": {"max_iter": 40, "tol": 0.0, "psd": True},
    # 12 steps: LSML's descent amplifies rounding (after 30 steps the full solve on rotated
    # coordinates, the same problem, differs from itself by 2e-8 in the objective)
    "lsml": {"max_iter": 12, "tol": 0.0},
    "nca": {"max_iter": 15, "tol": 0.0},
    "mlkr": {"max_iter": 15, "tol": 0.0},
    "mlkr-identity": {"max_iter": 15, "tol": 0.0, "init": "identity"},
}


def test_every_learner_that_solves_in_the_span_is_checked_here():
    assert {n for n, cls in SOLVERS.items() if getattr(cls, "span_complement", None)} == {
        case.split("-")[0] for case in CASES}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_span_solve_is_the_full_solve(name, monkeypatch):
    # both solves on LAPACK's leading eigenvectors: above 64 dimensions the full solve would
    # take Lanczos's, accurate to 1e-10, a difference of the eigensolvers and not of the span
    # (SDPMetric's 30 steps amplify it to 3e-8 of the largest entry)
    monkeypatch.setattr(top_eigen, "DENSE_EIGH_MAX_DIM", 10_000)
    X, y, X_test, reduced, full = full_and_reduced(name, CASES[name])
    assert reduced.span_dim_ == np.linalg.matrix_rank(X - X.mean(axis=0)) < X.shape[1]
    assert getattr(full, "span_dim_", None) is None
    scale = np.abs(full.metric_).max()
    # the same operations in an orthonormal basis: rounding only (1e-9 of the largest entry)
    np.testing.assert_allclose(reduced.metric_, full.metric_, atol=1e-9 * scale)
    np.testing.assert_allclose(reduced.components_.T @ reduced.components_, full.metric_,
                               atol=1e-9 * scale)
    assert reduced.n_iter_ == full.n_iter_
    assert reduced.objective_ == pytest.approx(full.objective_, rel=1e-9)
    knn = [KNeighborsClassifier(3).fit(m.transform(X), y).predict(m.transform(X_test))
           for m in (reduced, full)]
    np.testing.assert_array_equal(*knn)
    # the spectrum from the span (no d×d SVD) is the one of the whole L
    assert model_spectrum_counts(reduced) == spectrum_counts(reduced.components_)
    assert model_spectrum_counts(reduced, energy=0.5) == spectrum_counts(reduced.components_,
                                                                         energy=0.5)


def test_the_lift_is_the_identity_off_the_span():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((6, 15))
    V = span_basis(X)
    assert V.shape == (15, 5)  # six centred points span five dimensions
    A = rng.standard_normal((5, 5))
    M = lift_identity_complement(A, V)
    off = rng.standard_normal(15)
    off -= V @ (V.T @ off)
    np.testing.assert_allclose(M @ off, off, atol=1e-12)
    np.testing.assert_allclose(V.T @ M @ V, A, atol=1e-12)


def test_a_prior_other_than_the_identity_solves_in_all_coordinates():
    X, y, _, _ = problem()
    with pytest.warns(ConvergenceWarning):
        model = SOLVERS["itml"](prior="random", max_iter=3).fit(X, y)
    assert model.span_dim_ is None


def test_boostmetric_base_learners_are_lifted_with_the_metric():
    """BoostMetric's base learners after a solve in the span: unit vectors in the d coordinates
    whose weighted outer products sum to the full solve's metric."""
    _, _, _, reduced, full = full_and_reduced("boostmetric", CASES["boostmetric"])
    B = reduced.base_learners_
    assert B.shape == full.base_learners_.shape
    np.testing.assert_allclose(np.linalg.norm(B, axis=1), 1.0, rtol=1e-12)
    scale = np.abs(full.metric_).max()
    np.testing.assert_allclose((B.T * reduced.weights_) @ B, full.metric_, atol=1e-9 * scale)


def test_ldml_is_a_multiple_of_the_identity_off_the_span():
    """LDML's metric off the span is I/s (s its data scale), and its raw M is lifted likewise."""
    X, _, _, reduced, full = full_and_reduced("ldml", CASES["ldml"])
    V = reduced.span_basis_
    P = np.eye(X.shape[1]) - V @ V.T  # the projector onto the complement
    off = P @ full.metric_ @ P
    c = off.trace() / P.trace()
    np.testing.assert_allclose(off, c * P, atol=1e-12 * c)
    diffs = X[:, None, :] - X[None, :, :]
    assert c > 0 and np.isfinite(c)
    scale = np.abs(full.raw_metric_).max()
    np.testing.assert_allclose(reduced.raw_metric_, full.raw_metric_, atol=1e-9 * scale)


@pytest.mark.parametrize("name", ["dml_eig", "lmnn_eig"])
def test_a_frank_wolfe_fit_without_a_step_keeps_its_start_off_the_span(name):
    """Stopped before its first step, DML-eig's (LMNN-eig's) M is ``(X_S + δI)⁻¹/d``, which is
    ``I/(dδ)`` off the span: the solve in the span lifts that multiple of the identity."""
    X, _, _, reduced, full = full_and_reduced(name, {"tol": 1e9})
    assert reduced.n_iter_ == full.n_iter_ == 1 and reduced.span_dim_ is not None
    scale = np.abs(full.metric_).max()
    np.testing.assert_allclose(reduced.metric_, full.metric_, atol=1e-9 * scale)
    V = reduced.span_basis_
    off = np.linalg.qr(np.hstack([V, np.eye(X.shape[1])[:, :3]]))[0][:, -1]  # off the span
    assert off @ reduced.metric_ @ off > 0


def test_a_step_off_the_span_solves_in_all_coordinates():
    """SDPMetric's vertex leaves the span when ``∇_X f`` has no positive eigenvalue on it (here:
    every triplet's impostor is its anchor, so ``A_r = −b_r b_rᵀ`` and ``∇_X f ⪯ 0``): the fit
    then runs in all coordinates."""
    X, y, _, _ = problem()
    c = knn_triplets(X, y, k=3)
    swapped = type(c)(triplets=c.triplets[:, [0, 1, 0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SOLVERS["sdpmetric"](max_iter=5).fit(X, y, constraints=swapped)
    assert model.span_dim_ is None and model.metric_.shape == (X.shape[1],) * 2


@pytest.mark.parametrize("name", ["mdml", "mdml-hard", "mdml-vn", "mdml-rho"])
def test_mdml_counts_the_eigenvalues_off_the_span(name):
    """MDML's trace norm, rank and spectrum in the span count the d − q eigenvalues off it."""
    _, _, _, reduced, full = full_and_reduced(name, CASES[name])
    scale = full.eigenvalues_.max()
    np.testing.assert_allclose(reduced.eigenvalues_, full.eigenvalues_, atol=1e-9 * scale)
    np.testing.assert_array_equal(reduced.trace_["rank"], full.trace_["rank"])
    np.testing.assert_allclose(reduced.trace_["objective"], full.trace_["objective"], rtol=1e-9)


@pytest.mark.parametrize("name, params", [("itml", {"max_iter": 5}), ("ldml", {"max_iter": 5}),
                                          ("dml_eig", {"max_iter": 5}),
                                          ("nca", {"max_iter": 5}), ("mlkr", {"max_iter": 5}),
                                          ("sgd_incsvd", {"max_iter": 5})])
def test_a_fit_in_the_span_forms_no_d_by_d_array(name, params):
    # d = 3000: one d×d array is 72 MB; the fit, transform, pair distances and spectrum keep to
    # the points and the span (peak measured by tracemalloc, which numpy reports to), after a
    # first fit that imports and compiles what the learner uses
    import tracemalloc
    X, y, X_test, _ = problem(n=40, d=3000)
    learner = SOLVERS[name](**params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        learner.fit(X[:, :200], y)
    tracemalloc.start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        learner.fit(X, y)
    Z = learner.transform(X_test)
    D = learner.pair_distance(np.stack([X_test[:10], X_test[10:20]], axis=1))
    counts = model_spectrum_counts(learner)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 0.25 * 3000 ** 2 * 8  # a quarter of one d×d array
    # the same map as the d×d L formed on reading it
    L = learner.components_
    np.testing.assert_allclose(Z, X_test @ L.T, atol=1e-10 * np.abs(X_test @ L.T).max())
    np.testing.assert_allclose(D, np.linalg.norm((X_test[:10] - X_test[10:20]) @ L.T, axis=1),
                               rtol=1e-10)
    assert counts == spectrum_counts(L)
    np.testing.assert_allclose(learner.get_mahalanobis_matrix(), L.T @ L,
                               atol=1e-10 * np.abs(L.T @ L).max())


def test_sparse_points_solve_in_the_span_as_the_dense_ones_in_all_coordinates():
    import scipy.sparse
    X, y, X_test, _ = problem()
    X[np.abs(X) < 1.0] = 0.0  # about two thirds zeros
    c = knn_triplets(X, y, k=3)
    cls = SOLVERS["sgd_incsvd"]
    full_cls = type("FullSGDIncSVD", (cls,), {"span_complement": None})
    reduced = cls(max_iter=60).fit(scipy.sparse.csr_matrix(X), y, constraints=c)
    full = full_cls(max_iter=60).fit(X, y, constraints=c)
    assert reduced.span_dim_ == np.linalg.matrix_rank(X - X.mean(axis=0))
    np.testing.assert_allclose(reduced.metric_, full.metric_,
                               atol=1e-9 * np.abs(full.metric_).max())
    assert reduced.eigenvectors_.shape == (X.shape[1], len(reduced.eigenvalues_))
    np.testing.assert_allclose(reduced.eigenvalues_, full.eigenvalues_,
                               rtol=1e-9, atol=1e-12 * full.eigenvalues_.max())


def test_sgd_incsvd_keeps_all_coordinates_when_the_basis_costs_more_than_it_saves():
    # n = 40 points, 5 iterations of 2 triplets: n² = 1600 > T b² (1 − n/d) = 20 · 2/3
    X, y, _, _ = problem()
    learner = SOLVERS["sgd_incsvd"](max_iter=5, batch_size=2).fit(X, y)
    assert learner.span_dim_ is None and learner.eigenvectors_.shape[0] == X.shape[1]


def test_a_refit_in_all_coordinates_drops_the_factored_results():
    X, y, X_test, _ = problem()
    learner = SOLVERS["itml"](max_iter=5).fit(X, y)
    assert learner.span_dim_ is not None
    learner.fit(X[:, :20], y)  # more points than features: all coordinates
    assert learner.span_dim_ is None
    np.testing.assert_allclose(learner.transform(X_test[:, :20]),
                               X_test[:, :20] @ learner.components_.T)


def test_a_trace_in_the_span_counts_the_basis_in_its_times(monkeypatch):
    import time

    from dml_bench.solvers import base

    def slow_basis(X):
        time.sleep(0.3)
        return span_basis(X)

    monkeypatch.setattr(base, "span_basis", slow_basis)
    X, y, _, _ = problem()
    learner = SOLVERS["sgd_incsvd"](max_iter=5).fit(X, y)
    assert learner.span_dim_ is not None
    assert learner.trace_["time"][0] >= 0.3
    assert np.all(np.diff(learner.trace_["time"]) >= 0)


@pytest.mark.parametrize("dense_up_to", [64, 10_000])  # Lanczos, or LAPACK, in all d
def test_sgd_one_s_barycentre_keeps_a_multiple_of_the_identity_off_the_span(dense_up_to,
                                                                          monkeypatch):
    # a large λ on small points: λ_min leaves the span, where it has multiplicity d − q, while
    # μ > 0, so the subgradient is the barycentre over the complement (and the span's ties)
    monkeypatch.setattr(top_eigen, "DENSE_EIGH_MAX_DIM", dense_up_to)
    X, y, _, _ = problem()
    X *= 0.1
    c = knn_triplets(X, y, k=3)
    cls = SOLVERS["sgd_one"]
    params = dict(step=0.1, lam=1.0, tau=100.0, max_iter=100, subgradient="eigenspace")
    off_span_steps = []
    spied = cls._min_eigenspace

    def spy(self, W):
        out = spied(self, W)
        off_span_steps.append(self._mu > 0 and out[3])
        return out

    monkeypatch.setattr(cls, "_min_eigenspace", spy)
    reduced = cls(**params).fit(X, y, constraints=c)
    assert sum(off_span_steps) > 20
    full = type("Full", (cls,), {"span_complement": None})(**params).fit(X, y, constraints=c)
    V = reduced.span_basis_
    lifted = lift_identity_complement(reduced._avg, V, reduced._avg_c)
    # the same steps in an orthonormal basis: rounding only
    np.testing.assert_allclose(full._avg, lifted, atol=1e-9 * np.abs(full._avg).max())
    np.testing.assert_allclose(full.trace_["multiplier"], reduced.trace_["multiplier"],
                               rtol=1e-9)
    # one eigenvector instead: a direction of the complement set by rounding, so the average
    # is no multiple of the identity there
    one = type("Full", (cls,), {"span_complement": None})(**{**params,
                                                             "subgradient": "eigenvector"})
    one.fit(X, y, constraints=c)
    P = np.eye(X.shape[1]) - V @ V.T
    off = P @ one._avg @ P
    assert np.abs(off - np.trace(off) / np.trace(P) * P).max() > 1e-3 * np.abs(off).max()
