"""SCML-Local against independent references: the objective written out triplet by triplet with
each anchor's d×d metric, its gradient against central differences away from the kinks, the
reduction to the global SCML at A = 0 (distances, metric, neighbours and votes against
:class:`SCML`'s ``transform`` and the evaluation stage's k-NN rule), the embedding against
scikit-learn's ``KernelPCA``, a toy whose two regions need different metrics, wine, the
refusals and scikit-learn's estimator checks."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.decomposition import KernelPCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks
from test_sdml import check_parameter_constraints, run_estimator_check

from dml_bench.constraints import Constraints, knn_triplets
from dml_bench.evaluate import knn_error, knn_predict
from dml_bench.solvers import SCMLLocal
from dml_bench.solvers.scml import SCML, TripletProblem
from dml_bench.solvers.scml_local import LocalProblem

NO_PAIRS = np.zeros((0, 2), dtype=int)


def tiny_problem(seed, n=12, d=3, K=5, D=2):
    """Points, their 2-NN triplets, a unit-row basis, an embedding and a random Ã whose columns
    are all away from 0."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n // 3)
    X = rng.normal(size=(n, d))
    X[:, 0] += y
    B = rng.normal(size=(K, d))
    B /= np.linalg.norm(B, axis=1, keepdims=True)
    Z = rng.normal(size=(n, D))
    A = rng.normal(size=(D + 1, K)) * 0.4
    A[-1] += 0.8
    return X, knn_triplets(X, y, 2).triplets, B, Z, A


def objective_by_hand(X, T, B, Z, A, beta):
    """Mean hinge ``[1 + d_i(x_i, x_j)² − d_i(x_i, x_k)²]_+`` with each anchor's metric
    ``M_i = Σ_k w_ik b_k b_kᵀ``, ``w_i = (Aᵀz_i + c)²``, plus β Σ_k ‖Ã_{:,k}‖."""
    total = 0.0
    for i, j, k in T:
        w = (Z[i] @ A[:-1] + A[-1]) ** 2
        M = sum(wk * np.outer(b, b) for wk, b in zip(w, B))
        total += max(0.0, 1 + (X[i] - X[j]) @ M @ (X[i] - X[j]) - (X[i] - X[k]) @ M @ (X[i] - X[k]))
    return total / len(T) + beta * sum(np.linalg.norm(A[:, k]) for k in range(A.shape[1]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_objective_matches_its_definition(seed):
    X, T, B, Z, A = tiny_problem(seed)
    problem = LocalProblem(Z, X @ B.T, T, beta=0.05)
    F, loss, _, _ = problem.evaluate(A, gradient=False)
    assert F == pytest.approx(objective_by_hand(X, T, B, Z, A, 0.05), rel=1e-12)
    assert loss == pytest.approx(objective_by_hand(X, T, B, Z, A, 0.0), rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gradient_matches_finite_differences_away_from_the_kinks(seed):
    """F is smooth where no hinge is at its kink and no column of Ã is 0: there its gradient
    is ∇loss + β Ã_{:,k}/‖Ã_{:,k}‖, column by column."""
    X, T, B, Z, A = tiny_problem(seed)
    beta = 0.05
    problem = LocalProblem(Z, X @ B.T, T, beta)
    _, _, n_active, grad = problem.evaluate(A)
    U = np.column_stack([Z, np.ones(len(Z))]) @ A
    q = lambda i, j: (U[i] ** 2) @ ((B @ (X[i] - X[j])) ** 2)
    hinge = np.array([1 + q(i, j) - q(i, k) for i, j, k in T])
    assert np.abs(hinge).min() > 1e-3 and 0 < n_active < len(T)
    grad = grad + beta * A / np.linalg.norm(A, axis=0)
    F = lambda V: problem.evaluate(V, gradient=False)[0]
    h = 1e-6
    rng = np.random.default_rng(seed)
    for _ in range(5):
        E = rng.normal(size=A.shape)
        slope = (F(A + h * E) - F(A - h * E)) / (2 * h)
        assert np.sum(grad * E) == pytest.approx(slope, rel=1e-6, abs=1e-9)
    for index in [(0, 0), (-1, 2)]:  # single entries of A and of c
        E = np.zeros_like(A)
        E[index] = 1.0
        assert grad[index] == pytest.approx((F(A + h * E) - F(A - h * E)) / (2 * h), rel=1e-6,
                                            abs=1e-9)


def wine_split(seed=0):
    X, y = load_wine(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), scaler.transform(Xte), ytr, yte


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_with_A_zero_it_is_the_global_scml_with_w_equal_c_squared():
    Xtr, Xte, ytr, _ = wine_split()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        glob = SCML(max_iter=1000).fit(Xtr, ytr)
        local = SCMLLocal(basis=glob.basis_, init="uniform", max_iter=2).fit(Xtr, ytr)
    w = glob.weights_
    assert np.count_nonzero(w) > 0
    local.A_ = np.zeros_like(local.A_)
    local.c_ = np.sqrt(w)
    np.testing.assert_allclose(local.local_weights(Xte), np.tile(w, (len(Xte), 1)), atol=1e-12)
    np.testing.assert_allclose(local.local_metric(Xte[0]), glob.metric_, atol=1e-12)
    L_tr, L_te = glob.transform(Xtr), glob.transform(Xte)
    np.testing.assert_allclose(local.pair_distance(Xte, Xtr[:len(Xte)]),
                               np.linalg.norm(L_te - L_tr[:len(Xte)], axis=1), atol=1e-9)
    dist, ind = local.kneighbors(Xte)
    ref_dist, ref_ind = NearestNeighbors(n_neighbors=3).fit(L_tr).kneighbors(L_te)
    np.testing.assert_allclose(dist, ref_dist, atol=1e-7)
    np.testing.assert_array_equal(ind, ref_ind)
    np.testing.assert_array_equal(local.predict(Xte), knn_predict(L_tr, ytr, L_te, 3, "nearest"))
    # the loss part of F at Ã = [0; √w] is the global hinge at w
    T = knn_triplets(Xtr, ytr, 3).triplets
    P = Xtr @ glob.basis_.T
    A = np.zeros((local.A_.shape[0] + 1, len(w)))
    A[-1] = np.sqrt(w)
    _, loss, _, _ = LocalProblem(np.zeros((len(Xtr), local.A_.shape[0])), P, T, 0.0).evaluate(A)
    global_problem = TripletProblem(P, T, beta=1.0)
    assert loss == pytest.approx(global_problem.objective(w) - w.sum(), rel=1e-10)


def test_distances_use_the_metric_of_the_first_point():
    """kneighbors and pair_distance against the d×d metric of the query, point by point; the
    distance is not symmetric."""
    X, y = two_regions(0, 30)
    model = SCMLLocal(n_locales=4).fit(X, y)
    Q = X[:5] + 0.3
    for q, (dist, ind) in zip(Q, zip(*model.kneighbors(Q, n_neighbors=4))):
        M = model.local_metric(q)
        d_all = np.sqrt(np.einsum("ij,jk,ik->i", q - X, M, q - X))
        np.testing.assert_array_equal(ind, np.argsort(d_all, kind="stable")[:4])
        np.testing.assert_allclose(dist, d_all[ind], rtol=1e-7, atol=1e-9)
    d12, d21 = model.pair_distance(X[:30], X[30:60]), model.pair_distance(X[30:60], X[:30])
    ref = [np.sqrt((a - b) @ model.local_metric(a) @ (a - b)) for a, b in zip(X[:30], X[30:60])]
    np.testing.assert_allclose(d12, ref, rtol=1e-10)
    assert np.abs(d12 - d21).max() > 1e-3


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_embedding_is_kernel_pca():
    Xtr, Xte, ytr, _ = wine_split()
    model = SCMLLocal(n_components=5, max_iter=5).fit(Xtr, ytr)
    ref = KernelPCA(n_components=5, kernel="rbf", gamma=model.kernel_gamma_).fit(Xtr)
    sq = ((Xtr[:, None, :] - Xtr[None, :, :]) ** 2).sum(-1)
    assert model.kernel_gamma_ == pytest.approx(1 / np.median(sq[~np.eye(len(Xtr), dtype=bool)]))
    for X in (Xtr, Xte):
        z, z_ref = model.embed(X), ref.transform(X)
        signs = np.sign(np.sum(z * z_ref, axis=0))
        np.testing.assert_allclose(z * signs, z_ref, atol=1e-8)


def two_regions(seed, n):
    """Two regions apart along axis 0; the classes differ along axis 1 on the left and along
    axis 2 on the right, the other axis being noise (standard deviation 5) there."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=2 * n)
    left = np.arange(2 * n) < n
    X = rng.normal(size=(2 * n, 3)) * [0.5, 5.0, 5.0]
    X[:, 0] += np.where(left, -8.0, 8.0)
    signal = (2 * y - 1) * 0.6 + 0.2 * rng.normal(size=2 * n)
    X[left, 1] = signal[left]
    X[~left, 2] = signal[~left]
    return X, y


def test_two_regions_with_different_metrics_beat_the_global_metric():
    errors = []
    for seed in range(3):
        X, y = two_regions(seed, 40)
        Xt, yt = two_regions(100 + seed, 200)
        glob = SCML(n_locales=6).fit(X, y)
        local = SCMLLocal(n_locales=6).fit(X, y)
        assert local.converged_
        errors.append((knn_error(glob.transform(X), y, glob.transform(Xt), yt),
                       1 - local.score(Xt, yt)))
    glob_error, local_error = np.mean(errors, axis=0)
    assert glob_error > 0.15 and local_error < 0.05


def test_descent_is_monotone_and_the_group_norm_removes_elements():
    Xtr, _, ytr, _ = wine_split()
    model = SCMLLocal().fit(Xtr, ytr)
    F = model.trace_["objective"]
    assert np.all(np.diff(F) <= 0) and model.objective_ == pytest.approx(F[-1])
    assert model.objective_ < F[0]
    active = np.linalg.norm(np.vstack([model.A_, model.c_]), axis=0) > 0
    assert model.trace_["n_elements"][-1] == active.sum() < len(model.basis_)
    assert np.all(model.local_weights(Xtr)[:, ~active] == 0)
    heavy = SCMLLocal(beta=10.0, init="uniform").fit(Xtr, ytr)
    assert not heavy.A_.any() and not heavy.c_.any() and heavy.objective_ == 1.0


def test_lowers_the_3nn_error_on_wine():
    errors = []
    for seed in (0, 1, 2):
        Xtr, Xte, ytr, yte = wine_split(seed)
        model = SCMLLocal().fit(Xtr, ytr)
        errors.append((knn_error(Xtr, ytr, Xte, yte), 1 - model.score(Xte, yte)))
    euclidean, learned = np.mean(errors, axis=0)
    assert learned < euclidean


def test_constraints_without_labels():
    X, y = two_regions(1, 20)
    c = knn_triplets(X, y, 2)
    model = SCMLLocal(basis="random", n_basis=6).fit(X, constraints=c)
    assert model.classes_ is None and model.basis_.shape == (6, 3)
    assert model.pair_distance(X[:3], X[3:6]).shape == (3,)
    with pytest.raises(ValueError, match=r"^SCMLLocal was fitted without labels y; predict "
                                         r"needs them \(fit with y\)$"):
        model.predict(X)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_refusals_are_one_line():
    X, y = two_regions(2, 10)
    c = knn_triplets(X, y, 2)
    no_triplets = Constraints(c.similar, c.dissimilar, np.zeros((0, 3), int))
    cases = [
        (dict(X=X), r"^SCMLLocal requires y to be passed, but the target y is None \(or pass "
                    r"constraints with triplets\)$"),
        (dict(X=X, y=y, constraints=no_triplets),
         r"^constraints: SCMLLocal learns from triplets, but constraints.triplets is empty$"),
        (dict(X=X, constraints=c), r"^SCMLLocal\(basis='lda'\) needs the labels y; with "
                                   r"constraints alone use basis='random' or pass a basis array$"),
        (dict(X=X, y=np.zeros(len(X))), r"^SCMLLocal needs at least 2 classes, got 1 class$"),
        (dict(X=X[:, :, None], y=y), r"^X: expected a 2-D array of shape \(n_samples, "
                                     r"n_features\), got 3-D input of shape \(20, 3, 1\)$"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            SCMLLocal().fit(**kwargs)
    with pytest.raises(ValueError, match=r"^basis: expected a finite array of shape "
                                         r"\(n_basis, 3\), got shape \(4, 2\)$"):
        SCMLLocal(basis=np.ones((4, 2))).fit(X, y)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"^X: holds NaN at row 3, column 1; the features must "
                                         r"be finite$"):
        SCMLLocal().fit(bad, y)
    model = SCMLLocal(max_iter=5).fit(X, y)
    with pytest.raises(ValueError, match=r"^x: expected one point of shape \(n_features,\), got "
                                         r"shape \(2, 3\)$"):
        model.local_metric(X[:2])
    with pytest.raises(ValueError, match=r"^X2: expected the shape of X1, \(3, 3\), got "
                                         r"\(2, 3\)$"):
        model.pair_distance(X[:3], X[:2])
    with pytest.raises(ValueError, match=r"^X has 2 features, but SCMLLocal is expecting 3 "
                                         r"features as input\.$"):
        model.predict(X[:, :2])
    with pytest.raises(ValueError, match="Reshape your data") as refused:
        model.predict(X[0])
    assert "\n" not in str(refused.value)


def test_every_parameter_is_declared_and_checked():
    check_parameter_constraints(SCMLLocal, {"beta": -1.0, "basis": "bogus", "n_locales": 0,
                                            "n_neighbors": 0, "n_basis": 0, "n_components": 0,
                                            "init": "zero", "n_neighbors_predict": 0,
                                            "max_iter": 0, "tol": -1.0, "random_state": "seed"})


@parametrize_with_checks([SCMLLocal(max_iter=50)])
def test_scikit_learn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        run_estimator_check(estimator, check)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # capped on purpose
def test_an_experiments_knn_evaluation_votes_among_the_neighbours_in_each_queries_metric():
    """``model_error`` of a local metric: the experiment's k and tie-break over the neighbours
    found in each test point's own metric, checked against a brute-force search with
    ``pair_distance`` (the query's metric) and against the learner's own ``predict`` at k = 3."""
    from dml_bench.evaluate import model_error, neighbour_vote

    Xtr, Xte, ytr, yte = wine_split(1)
    model = SCMLLocal(max_iter=50).fit(Xtr, ytr)
    assert model_error(model, Xtr, ytr, Xte, yte, k=3) == pytest.approx(1 - model.score(Xte, yte))
    for k, tie_break in ((1, "nearest"), (4, "lowest"), (6, "nearest")):
        dist = np.array([model.pair_distance(np.repeat(x[None], len(Xtr), 0), Xtr) for x in Xte])
        brute = np.argsort(dist, axis=1, kind="stable")[:, :k]
        expected = np.mean(neighbour_vote(brute, ytr, tie_break) != yte)
        assert model_error(model, Xtr, ytr, Xte, yte, k=k, tie_break=tie_break) == expected


@pytest.mark.parametrize("evaluation", [{"task": "retrieval", "query_class": "face"},
                                        {"task": "verification", "folds": "drawn"}])
def test_verification_and_retrieval_refuse_it_in_one_line(evaluation):
    """Both score pairs or rank points in one learned space, which a metric per point has not."""
    from dml_bench.experiment.config import parse_config
    from dml_bench.experiment.schema import ConfigError

    with pytest.raises(ConfigError) as info:
        parse_config({"name": "x", "datasets": [{"name": "wine"}],
                      "solvers": [{"name": "euclidean"}, {"name": "scml_local"}],
                      "evaluation": evaluation}, check_data=False)
    message = str(info.value)
    assert "\n" not in message and "solvers[1]" in message and "k-NN experiments only" in message


def test_a_knn_experiment_runs_it(tmp_path):
    """Through the runner, with the config's k: a finished row whose error is the evaluation's."""
    import pandas as pd

    from dml_bench.experiment.config import parse_config
    from dml_bench.run.runner import run_experiment

    exp = parse_config({"name": "local", "datasets": [{"name": "wine", "normalize": "zscore"}],
                        "solvers": [{"name": "scml_local", "params": {"max_iter": 30}}],
                        "split": {"n_splits": 1, "seed": 0}, "evaluation": {"knn_k": 5},
                        "execution": {"n_jobs": 1}})
    summary = run_experiment(exp, tmp_path)
    assert summary.failed == 0
    runs = pd.read_csv(next(tmp_path.rglob("runs.csv")))
    assert len(runs) == 1 and runs.knn_k.iloc[0] == 5 and 0 <= runs.error.iloc[0] < 0.2
