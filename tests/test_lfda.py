"""LFDA (Sugiyama 2007) against the paper's definitions written out pair by pair, the generalised
eigen-equation, and Fisher's discriminant analysis (scikit-learn's) when every affinity is 1."""

import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils.estimator_checks import check_param_validation, parametrize_with_checks
from test_sklearn_checks import RUN_CHECKS, needs_array_api_mode

from dml_bench.solvers import SOLVERS
from dml_bench.solvers import lfda as lfda_module
from dml_bench.solvers.lfda import LFDA


def multimodal(seed, n_per_mode=12, d=4):
    """Three classes in d dimensions; class 0 in two modes far apart, class 2 of 5 points (fewer
    than k = 7 others: its local scaling is the farthest point)."""
    rng = np.random.default_rng(seed)
    centres = [(0, -4), (0, 4), (1, 1), (2, 0)]
    sizes = [n_per_mode, n_per_mode, n_per_mode, 5]
    labels = [0, 0, 1, 2]
    X = np.vstack([rng.normal(0, 1, (m, d)) + np.r_[c, np.zeros(d - 2)] * 2
                   for c, m in zip(centres, sizes)])
    X = X @ (np.eye(d) + 0.3 * rng.normal(size=(d, d)))
    return X, np.repeat(labels, sizes)


def reference_scatters(X, y, k):
    """``S^lw`` and ``S^lb`` from the definitions, one pair at a time: the local scaling σ_i
    (distance to the k-th nearest same-class point, the farthest if there are fewer), the
    affinity ``A_ij = exp(−‖x_i − x_j‖²/(σ_i σ_j))``, the weights ``W^lw_ij = A_ij/n_c`` and
    ``W^lb_ij = A_ij(1/n − 1/n_c)`` (same class), ``0`` and ``1/n`` (different classes), and
    ``S = ½ Σ_ij W_ij (x_i − x_j)(x_i − x_j)ᵀ`` (σ_i σ_j = 0 with distinct points: the limit,
    affinity 0)."""
    n, d = X.shape
    sigma = np.zeros(n)
    for i in range(n):
        others = sorted(np.linalg.norm(X[i] - X[j]) for j in range(n) if j != i and y[j] == y[i])
        sigma[i] = others[min(k, len(others)) - 1] if others else np.nan  # no pair anyway
    S_lw, S_lb = np.zeros((d, d)), np.zeros((d, d))
    for i in range(n):
        for j in range(n):
            diff = X[i] - X[j]
            if not diff.any():  # (x_i − x_j)(x_i − x_j)ᵀ = 0 whatever the weight
                continue
            outer = np.outer(diff, diff)
            if y[i] == y[j]:
                n_c = np.sum(y == y[i])
                with np.errstate(divide="ignore"):  # σ_i σ_j = 0: the limit exp(−∞) = 0
                    a = np.exp(-diff @ diff / (sigma[i] * sigma[j]))
                S_lw += 0.5 * a / n_c * outer
                S_lb += 0.5 * a * (1 / n - 1 / n_c) * outer
            else:
                S_lb += 0.5 / n * outer
    return S_lw, S_lb


@pytest.mark.parametrize("k", [7, 2])
def test_local_scatters_are_the_papers_pair_sums(k):
    X, y = multimodal(0)
    model = LFDA(k=k).fit(X, y)
    S_lw, S_lb = reference_scatters(X, y, k)
    np.testing.assert_allclose(model.local_within_scatter_, S_lw, rtol=1e-9,
                               atol=1e-12 * np.abs(S_lw).max())
    np.testing.assert_allclose(model.local_between_scatter_, S_lb, rtol=1e-9,
                               atol=1e-12 * np.abs(S_lb).max())
    assert model.ridge_ == 0.0


@pytest.mark.parametrize("n_components", [None, 2])
def test_directions_solve_the_generalised_eigenproblem_of_the_reference_scatters(n_components):
    """Each plain direction φ (unit length) and its λ satisfy ``S^lb φ = λ S^lw φ`` for the
    pair-by-pair scatters; the λ are the largest of the spectrum, which numpy's non-symmetric
    eigensolver on ``(S^lw)⁻¹ S^lb`` gives independently."""
    X, y = multimodal(1)
    S_lw, S_lb = reference_scatters(X, y, 7)
    model = LFDA(n_components=n_components, embedding="plain").fit(X, y)
    Phi, lam = model.components_.T, model.eigenvalues_
    r = X.shape[1] if n_components is None else n_components
    assert Phi.shape == (X.shape[1], r)
    np.testing.assert_allclose(np.linalg.norm(Phi, axis=0), 1.0, rtol=1e-12)
    residual = np.linalg.norm(S_lb @ Phi - S_lw @ Phi * lam, axis=0)
    assert residual.max() <= 1e-9 * np.linalg.norm(S_lb, 2)
    spectrum = np.sort(np.linalg.eigvals(np.linalg.solve(S_lw, S_lb)).real)[::-1]
    np.testing.assert_allclose(lam, spectrum[:r], rtol=1e-8, atol=1e-12 * spectrum[0])
    assert model.objective_ == pytest.approx(spectrum[:r].sum(), rel=1e-8)
    assert np.all(lam >= 0) and np.all(np.diff(lam) <= 0)


def test_embeddings_weight_or_orthonormalise_the_same_directions():
    """weighted = plain · √λ (the paper's weighting); orthonormalized: orthonormal rows spanning
    the same subspace; every form has M = LᵀL."""
    X, y = multimodal(2)
    fits = {e: LFDA(n_components=2, embedding=e).fit(X, y)
            for e in ("weighted", "orthonormalized", "plain")}
    plain = fits["plain"].components_
    np.testing.assert_allclose(fits["weighted"].components_,
                               plain * np.sqrt(fits["plain"].eigenvalues_)[:, None], rtol=1e-10)
    Q = fits["orthonormalized"].components_
    np.testing.assert_allclose(Q @ Q.T, np.eye(2), atol=1e-12)
    assert np.max(scipy.linalg.subspace_angles(Q.T, plain.T)) < 1e-8
    for model in fits.values():
        L = model.components_
        np.testing.assert_allclose(model.metric_, L.T @ L, atol=1e-12 * np.abs(L).max() ** 2)


def test_with_every_affinity_1_it_is_fishers_discriminant_analysis(monkeypatch):
    """σ_i = 10¹⁵⁰ makes every ``A_ij`` 1: the scatters are Fisher's within- and between-class
    scatters (from the class means) and the c − 1 = 2 LFDA directions span the subspace of
    scikit-learn's LinearDiscriminantAnalysis (principal angles ≈ 0)."""
    X, y = multimodal(3)
    monkeypatch.setattr(lfda_module, "local_scaling", lambda Xc, k, dist=None: np.full(len(Xc), 1e150))
    model = LFDA(n_components=2).fit(X, y)
    mean = X.mean(axis=0)
    S_w = sum((X[y == c] - X[y == c].mean(0)).T @ (X[y == c] - X[y == c].mean(0))
              for c in range(3))
    S_b = sum(np.sum(y == c) * np.outer(X[y == c].mean(0) - mean, X[y == c].mean(0) - mean)
              for c in range(3))
    np.testing.assert_allclose(model.local_within_scatter_, S_w, rtol=1e-9)
    np.testing.assert_allclose(model.local_between_scatter_, S_b, rtol=1e-9,
                               atol=1e-12 * np.abs(S_b).max())
    scalings = LinearDiscriminantAnalysis(solver="eigen").fit(X, y).scalings_[:, :2]
    svd_scalings = LinearDiscriminantAnalysis().fit(X, y).scalings_[:, :2]
    for reference in (scalings, svd_scalings):
        assert np.max(scipy.linalg.subspace_angles(model.components_.T, reference)) < 1e-7


def test_keeps_a_class_in_two_modes_apart_where_fisher_fails():
    """The paper's motivating case: class 0 in two modes on either side of class 1, equal class
    means. Fisher's between-class scatter is ~0 and its one direction is noise; LFDA's one
    direction runs through the modes and 3-NN classifies in it almost without error."""
    rng = np.random.default_rng(4)
    X = np.vstack([rng.normal((-5, 0), 0.7, (40, 2)), rng.normal((5, 0), 0.7, (40, 2)),
                   rng.normal((0, 0), 0.7, (80, 2))])
    X[:, 1] *= 3  # the noise dimension has the larger spread
    y = np.repeat([0, 1], 80)
    test = rng.permutation(len(X))[:60]
    train = np.setdiff1d(np.arange(len(X)), test)

    def error(Z):
        knn = KNeighborsClassifier(3).fit(Z[train], y[train])
        return 1 - knn.score(Z[test], y[test])

    lfda = LFDA(n_components=1).fit(X[train], y[train])
    lda = LinearDiscriminantAnalysis(n_components=1).fit(X[train], y[train])
    assert error(lfda.transform(X)) < 0.05
    assert error(lda.transform(X)) > 0.25


def test_singular_within_scatter_gets_the_stated_ridge():
    """Fewer points than dimensions: ``S^lw`` is singular, δ = ridge · max(tr S^lw, tr S^lb)/d
    is added, and the directions solve ``S^lb φ = λ (S^lw + δI) φ``."""
    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(12, 20)), np.repeat([0, 1, 2], 4)
    model = LFDA(embedding="plain", ridge=1e-2).fit(X, y)
    S_lw, S_lb = reference_scatters(X, y, 7)
    delta = 1e-2 * max(np.trace(S_lw), np.trace(S_lb)) / 20
    assert model.ridge_ == pytest.approx(delta, rel=1e-10)
    Phi, lam = model.components_.T, model.eigenvalues_
    residual = S_lb @ Phi - (S_lw + delta * np.eye(20)) @ Phi * lam
    assert np.abs(residual).max() <= 1e-9 * np.linalg.norm(S_lb, 2) * max(1.0, lam.max())
    assert np.all(np.isfinite(model.metric_))


@pytest.mark.parametrize("n_components", [None, 5])
def test_fewer_points_than_dimensions_solves_the_full_problem(n_components):
    """n < d, solved in the span of the points: the weighted embedding equals the one of the
    d×d generalised eigenproblem of the pair-by-pair reference scatters (scipy's), up to the
    sign of each direction, and its directions beyond the span weigh 0."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(14, 3)) @ rng.normal(size=(3, 40)) + 0.3 * rng.normal(size=(14, 40))
    y = np.repeat([0, 1, 2], [5, 5, 4])
    d = X.shape[1]
    model = LFDA(n_components=n_components).fit(X, y)
    S_lw, S_lb = reference_scatters(X, y, 7)
    delta = 1e-3 * max(np.trace(S_lw), np.trace(S_lb)) / d
    assert model.ridge_ == pytest.approx(delta, rel=1e-10)
    scale = np.abs(S_lb).max()
    np.testing.assert_allclose(model.local_within_scatter_, S_lw, atol=1e-10 * scale)
    np.testing.assert_allclose(model.local_between_scatter_, S_lb, atol=1e-10 * scale)
    lam, Phi = scipy.linalg.eigh(S_lb, S_lw + delta * np.eye(d))
    r = d if n_components is None else n_components
    lam, Phi = np.maximum(lam[::-1][:r], 0), Phi[:, ::-1][:, :r]
    # the distinct non-zero eigenvalues fix their directions up to sign
    np.testing.assert_allclose(model.eigenvalues_, lam, rtol=1e-8, atol=1e-10 * lam.max())
    assert model.components_.shape == (r, d)
    strong = lam > 1e-6 * lam.max()
    T = (Phi / np.linalg.norm(Phi, axis=0) * np.sqrt(lam))[:, strong]
    ours = model.components_.T[:, strong]
    np.testing.assert_allclose(np.abs(ours), np.abs(T), rtol=1e-6, atol=1e-8 * np.abs(T).max())
    np.testing.assert_allclose(model.components_[~strong], 0, atol=1e-6 * np.abs(T).max())
    np.testing.assert_allclose(model.metric_, model.components_.T @ model.components_,
                               atol=1e-12 * np.abs(model.metric_).max())


def test_classes_of_one_point_and_duplicates_follow_the_limit_of_the_formula():
    """A class of one point adds no pair. Two coinciding points of class 0 with k = 1 have
    σ = 0, so their affinity to the distinct third point is exp(−‖x_i − x_j‖²/0) = 0 (the limit)
    and class 0 adds nothing to ``S^lw``; class 1's pair, at distance 1 with σ = 1, adds
    ``e⁻¹/2 · e₂e₂ᵀ``. That ``S^lw`` is singular: the ridge makes the metric finite."""
    X = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.5], [3.0, 1.0], [3.0, 2.0], [5.0, 5.0]])
    y = np.array([0, 0, 0, 1, 1, 2])
    model = LFDA(k=1).fit(X, y)
    np.testing.assert_allclose(model.local_within_scatter_, [[0, 0], [0, np.exp(-1) / 2]],
                               atol=1e-15)
    np.testing.assert_allclose(model.local_between_scatter_, reference_scatters(X, y, 1)[1],
                               rtol=1e-12)
    assert model.ridge_ > 0 and np.all(np.isfinite(model.metric_))


def test_refusals():
    X, y = multimodal(6)
    with pytest.raises(ValueError, match="LFDA needs labels y"):
        LFDA().fit(X)
    with pytest.raises(ValueError, match="n_components=5 exceeds the number of features"):
        LFDA(n_components=5).fit(X, y)
    with pytest.raises(ValueError, match="at least 2 classes"):
        LFDA().fit(X, np.zeros(len(X)))


def test_parameter_constraints_cover_every_parameter():
    check_param_validation("LFDA", LFDA())


def test_registered_as_lfda():
    assert SOLVERS["lfda"] is LFDA


def run_estimator_check(estimator, check):
    """One scikit-learn check; ``check_array_api_input`` in a subprocess with SciPy's array-API
    mode (as ``test_sklearn_checks`` runs it, so that it does not skip itself)."""
    if not needs_array_api_mode(check):
        check(estimator)
        return
    done = subprocess.run([sys.executable, "-c", RUN_CHECKS],
                          input=pickle.dumps([(estimator, check)]), capture_output=True,
                          env={**os.environ, "SCIPY_ARRAY_API": "1"})
    assert done.returncode == 0, done.stderr.decode()
    failure = json.loads(done.stdout.decode().splitlines()[-1])[type(estimator).__name__]
    assert failure is None, failure


#: the default LFDA is checked with every registered solver (test_sklearn_checks); these are the
#: other embeddings and a reduced dimension
@parametrize_with_checks([LFDA(n_components=1, embedding="plain"),
                          LFDA(k=2, embedding="orthonormalized")])
def test_scikit_learn_estimator_checks(estimator, check):
    run_estimator_check(estimator, check)
