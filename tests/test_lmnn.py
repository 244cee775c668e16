"""LMNN against an independent SDP solver (cvxpy), finite differences and brute-force losses."""

import itertools
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from dml_bench.constraints import Constraints, knn_triplets
from dml_bench.solvers.lmnn import LMNN, _Problem, _search_impostors

cp = pytest.importorskip("cvxpy")


def tiny_problem(seed, d=4, n=14, k=2, max_triplets=40, shift=1.0):
    """Two overlapping Gaussian classes, ``knn_triplets`` (at most 40 of them)."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    X = rng.normal(size=(n, d))
    X[:, 0] += shift * y
    c = knn_triplets(X, y, k=k)
    return X, y, Constraints(c.similar, c.dissimilar, c.triplets[:max_triplets])


def brute_loss(X, M, triplets, mu=0.5, margin=1.0):
    """ε of Weinberger & Saul (2009) Eq. (13) in M, one triplet at a time (no shared algebra)."""
    def dist(a, b):
        v = X[a] - X[b]
        return float(v @ M @ v)
    targets = {(int(i), int(j)) for i, j, _ in triplets}
    pull = sum(dist(i, j) for i, j in targets)
    push = sum(max(0.0, margin + dist(i, j) - dist(i, k)) for i, j, k in triplets)
    return (1 - mu) * pull + mu * push


def sdp_optimum(X, triplets, mu=0.5):
    """Eq. (14): min (1−μ) Σ tr(M C_ij) + μ Σ [1 + tr(M C_ij) − tr(M C_ik)]₊ s.t. M ⪰ 0."""
    d = X.shape[1]
    M = cp.Variable((d, d), PSD=True)
    targets = np.unique(triplets[:, :2], axis=0)

    def q(pairs):
        D = X[pairs[:, 0]] - X[pairs[:, 1]]
        return cp.sum(cp.multiply(D @ M, D), axis=1)

    obj = ((1 - mu) * cp.sum(q(targets))
           + mu * cp.sum(cp.pos(1 + q(triplets[:, [0, 1]]) - q(triplets[:, [0, 2]]))))
    problem = cp.Problem(cp.Minimize(obj))
    problem.solve(solver="CLARABEL")
    return float(problem.value)


def fit(X, y, c, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LMNN(**params).fit(X, y, constraints=c)


def is_psd(M):
    return np.linalg.eigvalsh(M).min() >= -1e-10 * np.abs(M).max()


@pytest.mark.parametrize("seed", [0, 3])
def test_solver_M_reaches_the_sdp_optimum(seed):
    X, y, c = tiny_problem(seed)
    opt = sdp_optimum(X, c.triplets)
    model = fit(X, y, c, solver="M", impostors="given", max_iter=5000)
    assert model.converged_
    assert is_psd(model.metric_)
    achieved = brute_loss(X, model.metric_, c.triplets)
    assert model.objective_ == pytest.approx(achieved, rel=1e-9)
    assert achieved >= opt * (1 - 1e-6)  # a feasible M cannot beat the optimum
    assert (achieved - opt) / opt < 1e-3


@pytest.mark.parametrize("solver", ["L", "M"])
def test_objective_decreases(solver):
    X, y, c = tiny_problem(1, n=30, max_triplets=10_000)
    model = fit(X, y, c, solver=solver, impostors="given", max_iter=300, smoothing=1.0)
    f = model.trace_["objective"]
    assert np.all(np.diff(f) <= 1e-12 * np.abs(f[:-1]))  # monotone step rule
    assert f[-1] < 0.8 * brute_loss(X, np.eye(X.shape[1]), c.triplets)
    assert model.objective_ == pytest.approx(brute_loss(X, model.metric_, c.triplets), rel=1e-9)


def test_objective_decreases_between_impostor_searches():
    X, y, c = tiny_problem(2, n=40, max_triplets=10_000)
    model = fit(X, y, c, max_iter=200, update_every=7)
    f = model.trace_["objective"]
    for start in range(0, len(f), 7):  # iterations 7m … 7m + 6 share one impostor set
        block = f[max(start - 1, 0):start + 6]
        assert np.all(np.diff(block) <= 1e-12 * np.abs(block[:-1]))


def _random_state(seed=0, d=4, n=12):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    T = np.array([rng.choice(n, 3, replace=False) for _ in range(30)])
    targets, tp = np.unique(T[:, :2], axis=0, return_inverse=True)
    imp, ip = np.unique(T[:, [0, 2]], axis=0, return_inverse=True)
    prob = _Problem(X, targets, 0.5, 1.0)
    prob.set_triplets(imp, tp.ravel(), ip.ravel())
    L = rng.normal(size=(d, d)) * 0.3 + np.eye(d)
    return rng, X, T, prob, L


@pytest.mark.parametrize("smoothing", [0.0, 0.7])
def test_gradient_in_L_matches_finite_differences(smoothing):
    rng, X, T, prob, L = _random_state()
    loss, state = prob.loss(L, smoothing)
    if smoothing == 0:
        assert loss == pytest.approx(brute_loss(X, L.T @ L, T), rel=1e-12)
    grad = 2 * L @ prob.gradient(state)  # ∂ε/∂L = 2 L G
    h = 1e-6
    for _ in range(5):
        E = rng.normal(size=L.shape)
        fd = (prob.loss(L + h * E, smoothing)[0] - prob.loss(L - h * E, smoothing)[0]) / (2 * h)
        assert fd == pytest.approx(np.sum(grad * E), rel=1e-6, abs=1e-8)


def test_gradient_in_M_matches_finite_differences():
    rng, X, T, prob, L = _random_state(1)
    M = L.T @ L
    G = prob.gradient(prob.loss(L)[1])

    def loss_M(M):
        return prob.loss(np.linalg.cholesky(M).T)[0]  # any factor with LᵀL = M

    h = 1e-6
    for _ in range(5):
        E = rng.normal(size=M.shape)
        E = (E + E.T) / 2
        fd = (loss_M(M + h * E) - loss_M(M - h * E)) / (2 * h)
        assert fd == pytest.approx(np.sum(G * E), rel=1e-6, abs=1e-8)
        assert loss_M(M) == pytest.approx(brute_loss(X, M, T), rel=1e-12)


def test_impostor_search_matches_brute_force():
    X, y, c = tiny_problem(4, d=3, n=24, k=2, max_triplets=10_000, shift=0.5)
    targets = np.unique(c.triplets[:, :2], axis=0)
    rng = np.random.default_rng(0)
    L = np.eye(3) + 0.5 * rng.normal(size=(3, 3))
    pairs, tp, ip = _search_impostors(X, y, targets, L, 1.0, chunk_size=7)
    M = L.T @ L

    def dist(a, b):
        return float((X[a] - X[b]) @ M @ (X[a] - X[b]))

    reach = {i: max(dist(i, j) for j in targets[targets[:, 0] == i, 1]) + 1 for i in range(len(y))}
    # exact candidates: y_k ≠ y_i and d(i, k) < max target distance + margin; the float32 search
    # may add pairs within its round-off slack only
    expected = {(i, k) for i in range(len(y)) for k in range(len(y))
                if y[k] != y[i] and dist(i, k) < reach[i]}
    found = {(int(i), int(k)) for i, k in pairs}
    assert len(found) == len(pairs) and expected <= found
    assert all(dist(i, k) < reach[i] + 1e-4 * (1 + dist(i, k)) for i, k in found - expected)
    # each candidate is combined with every target of its anchor, once
    got = sorted((int(pairs[b, 0]), int(targets[a, 1]), int(pairs[b, 1])) for a, b in zip(tp, ip))
    want = sorted((i, int(j), k) for i, k in found for j in targets[targets[:, 0] == i, 1])
    assert got == want
    assert {t for t in got if 1 + dist(t[0], t[1]) - dist(t[0], t[2]) > 0} == \
        {(i, j, k) for (i, j) in map(tuple, targets) for k in range(len(y))
         if y[k] != y[i] and 1 + dist(i, j) - dist(i, k) > 0}  # all violated triplets


def test_recompute_objective_is_over_all_impostors():
    X, y, c = tiny_problem(5, d=3, n=24, k=2, max_triplets=10_000, shift=0.5)
    model = fit(X, y, c, max_iter=100, update_every=5)
    targets = np.unique(c.triplets[:, :2], axis=0)
    all_triplets = np.array([(i, j, k) for (i, j), k in itertools.product(targets, range(len(y)))
                             if y[k] != y[i]])
    assert model.objective_ == pytest.approx(brute_loss(X, model.metric_, all_triplets), rel=1e-9)
    assert is_psd(model.metric_)
    np.testing.assert_allclose(model.components_.T @ model.components_, model.metric_,
                               atol=1e-10)


def test_no_impostors_stops_at_the_identity():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 10)
    X = rng.normal(scale=0.1, size=(20, 3))
    X[:, 0] += 100 * y  # every impostor far beyond every target + margin
    for impostors in ("given", "recompute"):
        model = fit(X, y, knn_triplets(X, y, k=2), impostors=impostors)
        assert model.converged_ and model.n_iter_ == 1 and model.n_active_ == 0
        np.testing.assert_allclose(model.metric_, np.eye(3), atol=1e-12)
        assert np.isfinite(model.objective_) and len(model.trace_["objective"]) == 1


def test_convergence_warning_and_bad_parameters():
    X, y, c = tiny_problem(0, n=30)
    with pytest.warns(ConvergenceWarning):
        model = LMNN(max_iter=3, tol=0).fit(X, y, constraints=c)
    assert model.n_iter_ == 3 and not model.converged_
    assert set(model.trace_) >= {"objective", "grad_norm", "time"}
    assert all(len(v) == 3 for v in model.trace_.values())
    for params in ({"mu": 0}, {"mu": 1}, {"impostors": "x"}, {"solver": "Q"},
                   {"update_every": 0}, {"step_size": -1.0}):
        with pytest.raises(ValueError):
            LMNN(**params).fit(X, y, constraints=c)
    with pytest.raises(ValueError):
        LMNN().fit(X, None, constraints=c)  # recompute needs labels


def test_validation_early_stopping_returns_the_best_checked_iterate():
    from sklearn.neighbors import KNeighborsClassifier

    from dml_bench.splits import train_test_split_indices

    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(0, 1, (40, 6)), rng.normal(0.8, 1, (40, 6))])
    X[:, 3:] *= 8  # noisy, large dimensions the metric should shrink
    y = np.repeat([0, 1], 40)
    c = knn_triplets(X, y, k=3)
    model = fit(X, y, c, validation=0.25, validation_every=5, patience=3, max_iter=400)
    errs = model.trace_["validation_error"]
    checked = np.flatnonzero(~np.isnan(errs))
    assert checked[0] == 0 and np.all(np.diff(checked[1:]) == 5)  # iteration 1, then every 5
    assert model.validation_error_ == pytest.approx(np.nanmin(errs))
    # independent check of the returned metric's validation error (sklearn k-NN, same held-out
    # part: the ceil(0.75·n_c) points per class drawn with random_state kept for training)
    keep, held = train_test_split_indices(y, 0.75, 0)
    knn = KNeighborsClassifier(3).fit(model.transform(X[keep]), y[keep])
    assert np.mean(knn.predict(model.transform(X[held])) != y[held]) == \
        pytest.approx(model.validation_error_, abs=1 / len(held) + 1e-12)  # vote ties may differ
    # stopping: the run ends once `patience` checks in a row did not improve on the best
    after_best = errs[checked[checked > model.best_iter_ - 1]]
    if model.n_iter_ < 400:
        assert len(after_best) >= 3
        assert np.all(errs[checked][-3:] >= model.validation_error_)


def test_validation_zero_is_off():
    X, y, c = tiny_problem(0)
    model = fit(X, y, c)
    assert model.validation_error_ is None and np.isnan(model.trace_["validation_error"]).all()
    with pytest.raises(ValueError, match="validation"):
        fit(X, y, c, validation=1.0)


# -- n_components: a rectangular L ------------------------------------------------------------


def test_gradient_in_a_rectangular_L_matches_finite_differences():
    rng, X, T, prob, _ = _random_state(2)
    L = rng.normal(size=(2, X.shape[1]))  # k × d, k = 2 < d = 4
    loss, state = prob.loss(L)
    assert loss == pytest.approx(brute_loss(X, L.T @ L, T), rel=1e-12)
    grad = 2 * L @ prob.gradient(state)
    assert grad.shape == L.shape
    h = 1e-6
    for _ in range(5):
        E = rng.normal(size=L.shape)
        fd = (prob.loss(L + h * E)[0] - prob.loss(L - h * E)[0]) / (2 * h)
        assert fd == pytest.approx(np.sum(grad * E), rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("impostors", ["given", "recompute"])
def test_n_components_learns_a_rank_k_metric_on_the_same_loss(impostors):
    from sklearn.decomposition import PCA

    X, y, c = tiny_problem(1, n=30, max_triplets=10_000)
    model = fit(X, y, c, n_components=2, impostors=impostors, max_iter=300)
    assert model.components_.shape == (2, 4) and model.transform(X).shape == (30, 2)
    np.testing.assert_allclose(model.components_.T @ model.components_, model.metric_,
                               atol=1e-10)
    assert np.linalg.matrix_rank(model.metric_, tol=1e-9 * np.abs(model.metric_).max()) <= 2
    targets = np.unique(c.triplets[:, :2], axis=0)
    triplets = (c.triplets if impostors == "given" else
                np.array([(i, j, k) for (i, j), k in itertools.product(targets, range(len(y)))
                          if y[k] != y[i]]))
    assert model.objective_ == pytest.approx(brute_loss(X, model.metric_, triplets), rel=1e-9)
    # it starts at the top 2 principal directions (scikit-learn's PCA) and descends from there
    P = PCA(2).fit(X).components_
    assert model.objective_ < 0.9 * brute_loss(X, P.T @ P, triplets)
    if impostors == "given":
        f = model.trace_["objective"]
        assert np.all(np.diff(f) <= 1e-12 * np.abs(f[:-1]))
        # a rank-2 M is feasible for the SDP Eq. (14): it cannot beat its optimum
        assert model.objective_ >= sdp_optimum(X, c.triplets) * (1 - 1e-6)


def test_n_components_starts_at_the_principal_directions():
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 10)
    X = rng.normal(scale=0.1, size=(20, 3))
    X[:, 0] += 100 * y  # no impostor: the fit returns its starting L
    model = fit(X, y, knn_triplets(X, y, k=2), n_components=1)
    assert model.n_iter_ == 1 and model.n_active_ == 0 and model.components_.shape == (1, 3)
    u = PCA(1).fit(X).components_[0]
    np.testing.assert_allclose(model.metric_, np.outer(u, u), atol=1e-12)


def test_n_components_d_is_the_default_fit_and_none_is_neutral():
    from dml_bench.solvers.base import identifying_params

    X, y, c = tiny_problem(2, n=40, max_triplets=10_000)
    for impostors in ("given", "recompute"):
        full = fit(X, y, c, impostors=impostors, max_iter=200)
        rotated = fit(X, y, c, impostors=impostors, max_iter=200, n_components=4)
        # the PCA start is a rotation of I: same distances, so the same iterates up to round-off
        np.testing.assert_allclose(rotated.metric_, full.metric_, rtol=1e-8, atol=1e-10)
        assert rotated.n_iter_ == full.n_iter_
    explicit = fit(X, y, c, max_iter=50, n_components=None)
    np.testing.assert_array_equal(explicit.components_, fit(X, y, c, max_iter=50).components_)
    # None is the fit from before the option existed: it is not part of a result's identity
    assert "n_components" not in identifying_params(LMNN())
    assert identifying_params(LMNN(n_components=None)) == identifying_params(LMNN())
    assert identifying_params(LMNN(n_components=2))["n_components"] == 2


def test_n_components_faults_are_one_line():
    X, y, c = tiny_problem(0, n=30)
    for params, message in (({"n_components": 5}, "exceeds the number of features"),
                            ({"n_components": 2, "solver": "M"}, "needs solver='L'"),
                            ({"n_components": 0}, "n_components"),
                            ({"n_components": 1.5}, "n_components")):
        with pytest.raises(ValueError, match=message) as err:
            LMNN(**params).fit(X, y, constraints=c)
        assert "\n" not in str(err.value)
    assert fit(X, y, c, n_components=4, solver="M", max_iter=20).components_.shape == (4, 4)


def test_lmnn_search_diagnosis_records_the_exact_loss_at_each_search(benchmark_script,
                                                                     monkeypatch):
    """The diagnosis's record of the loss at each impostor search: one value per search, the
    first ε over all impostors at the start (L = I), the last at the returned metric, both by
    :func:`brute_loss` over every (target, other-class point) triplet."""
    from dml_bench.solvers import lmnn

    diagnosis = benchmark_script("diagnoses/lmnn_search_diagnosis")
    for name in ("set_impostors", "loss"):  # the recorder patches the class: undone after
        monkeypatch.setattr(lmnn._Problem, name, getattr(lmnn._Problem, name))
    searches, calls = [], []
    diagnosis.record_searches(searches)
    real = lmnn._search_impostors
    monkeypatch.setattr(lmnn, "_search_impostors", lambda *a: calls.append(1) or real(*a))
    X, y, c = tiny_problem(5, d=3, n=24, k=2, max_triplets=10_000, shift=0.5)
    model = fit(X, y, c, max_iter=30, update_every=7)
    targets = np.unique(c.triplets[:, :2], axis=0)
    all_triplets = np.array([(i, j, k) for (i, j), k in itertools.product(targets, range(len(y)))
                             if y[k] != y[i]])
    assert len(searches) == len(calls) >= 3
    assert searches[0] == pytest.approx(brute_loss(X, np.eye(3), all_triplets), rel=1e-12)
    assert searches[-1] == pytest.approx(brute_loss(X, model.metric_, all_triplets), rel=1e-9)
