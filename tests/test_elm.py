"""The kernel ELM baseline (Huang et al. 2012, Eq. (38)) against the paper's closed form computed
by hand, and in the runner as Shen et al. (2014) use it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dml_bench.experiment.config import parse_config
from dml_bench.evaluate import model_error
from dml_bench.run.runner import run_experiment
from dml_bench.solvers import SOLVERS
from dml_bench.solvers.elm import KernelELM


def three_classes(seed, n=20, d=3):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(c, 1.0, (n, d)) for c in (0.0, 1.5, 3.0)])
    return X, np.repeat(["a", "b", "c"], n), rng.normal(1.5, 2.0, (30, d))


def eq38(X, y, Z, C, gamma):
    """f(z) = [K(z, x_1) … K(z, x_N)] (I/C + Ω)⁻¹ T, T the ±1 class indicators; K by its formula."""
    classes = np.unique(y)
    T = np.where(y[:, None] == classes[None, :], 1.0, -1.0)
    kernel = lambda A, B: np.exp(-gamma * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))
    beta = np.linalg.solve(np.eye(len(X)) / C + kernel(X, X), T)
    return kernel(Z, X) @ beta, classes


def test_outputs_and_labels_are_those_of_eq_38():
    X, y, Z = three_classes(0)
    model = KernelELM(C=8.0, gamma=0.3).fit(X, y)
    outputs, classes = eq38(X, y, Z, C=8.0, gamma=0.3)
    np.testing.assert_allclose(model.decision_function(Z), outputs, rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(model.predict(Z), classes[outputs.argmax(axis=1)])
    assert model.evaluation == "predict" and model.constraint_kind == "labels"
    assert SOLVERS["elm"] is KernelELM
    assert model_error(model, X, y, Z, model.predict(Z)) == 0.0


def test_regularisation_moves_from_interpolation_to_zero_output():
    X, y, _ = three_classes(1)
    T = np.where(y[:, None] == np.unique(y)[None, :], 1.0, -1.0)
    tight = KernelELM(C=1e8, gamma=1.0).fit(X, y)  # Ω is invertible: outputs interpolate T
    np.testing.assert_allclose(tight.decision_function(X), T, atol=1e-4)
    loose = KernelELM(C=1e-8, gamma=1.0).fit(X, y)  # β ≈ C·T: every output shrinks to 0
    assert np.abs(loose.decision_function(X)).max() < 1e-6


def test_minmax_scaling_and_bad_parameters():
    X, y, Z = three_classes(2)
    X, Z = X * [1.0, 500.0, 0.01], Z * [1.0, 500.0, 0.01]
    lo, hi = X.min(axis=0), X.max(axis=0)
    svm_scale = lambda A: 2 * (A - lo) / (hi - lo) - 1
    scaled = KernelELM(C=4.0, gamma=0.5, scale="minmax").fit(X, y)
    np.testing.assert_allclose(scaled.decision_function(Z),
                               eq38(svm_scale(X), y, svm_scale(Z), C=4.0, gamma=0.5)[0],
                               rtol=1e-8, atol=1e-10)
    for bad in ({"C": 0.0}, {"gamma": -1.0}, {"scale": "zscore"}):
        with pytest.raises(ValueError):
            KernelELM(**bad).fit(X, y)


def test_nystroem_outputs_are_eq_38_on_the_approximated_kernel():
    # the kernel ELM's closed form on Ω ≈ Φ Φᵀ, N×N and by hand, against the m×m solve
    X, y, Z = three_classes(3, n=30)
    model = KernelELM(C=5.0, gamma=0.4, n_landmarks=25, random_state=1).fit(X, y)
    assert model.dual_coef_ is None and model.coef_.shape == (25, 3)
    Phi, Phi_z = model.nystroem_.transform(X), model.nystroem_.transform(Z)
    T = np.where(y[:, None] == np.unique(y)[None, :], 1.0, -1.0)
    beta = np.linalg.solve(np.eye(len(X)) / 5.0 + Phi @ Phi.T, T)
    np.testing.assert_allclose(model.decision_function(Z), Phi_z @ Phi.T @ beta, rtol=1e-8,
                               atol=1e-10)
    # the feature map is scikit-learn's Nyström map of the Gaussian kernel on its landmarks
    L = X[model.nystroem_.component_indices_]
    kernel = lambda A, B: np.exp(-0.4 * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))
    np.testing.assert_allclose(Phi @ Phi.T, kernel(X, L) @ np.linalg.pinv(kernel(L, L))
                               @ kernel(L, X), atol=1e-8)


def test_as_many_landmarks_as_points_is_the_exact_solve():
    X, y, Z = three_classes(4)
    exact = KernelELM(C=3.0, gamma=0.2).fit(X, y)
    capped = KernelELM(C=3.0, gamma=0.2, n_landmarks=len(X)).fit(X, y)
    assert capped.nystroem_ is None
    np.testing.assert_array_equal(capped.decision_function(Z), exact.decision_function(Z))
    # fewer landmarks than points, but no more points than max_exact_n: the exact solve
    kept = KernelELM(C=3.0, gamma=0.2, n_landmarks=10, max_exact_n=len(X)).fit(X, y)
    assert kept.nystroem_ is None
    np.testing.assert_array_equal(kept.decision_function(Z), exact.decision_function(Z))
    approx = KernelELM(C=3.0, gamma=0.2, n_landmarks=10, max_exact_n=len(X) - 1).fit(X, y)
    assert approx.coef_.shape == (10, 3)
    with pytest.raises(ValueError):
        KernelELM(n_landmarks=0).fit(X, y)


def test_the_landmark_options_at_their_defaults_keep_a_result_s_identity():
    from dml_bench.solvers.base import identifying_params
    assert set(identifying_params(KernelELM(C=2.0))) == {"C", "gamma", "scale"}
    assert "n_landmarks" in identifying_params(KernelELM(n_landmarks=100))


@pytest.mark.usefixtures("tmp_cache")
def test_validation_tuned_elm_in_the_runner(tmp_path):
    grid = {"C": [0.25, 64.0], "gamma": [0.01, 1.0]}
    exp = parse_config({
        "name": "elm", "datasets": [{"name": "wine", "normalize": "none"}],
        "split": {"n_splits": 1, "validation_fraction": 0.15},
        "solvers": [{"name": "elm", "params": {"scale": "minmax"},
                     "tune": {"grid": grid, "validation": 0.15}}],
        "execution": {"n_jobs": 1}}, source="test")
    summary = run_experiment(exp, tmp_path, echo=lambda m: None)
    assert summary.failed == 0 and summary.ran == 1
    row = pd.read_csv(tmp_path / "elm" / "runs.csv").iloc[0]
    assert row.solver == "elm" and 0.0 <= row.error < 0.15  # wine, scaled features
    tuning = pd.read_csv(tmp_path / "elm" / "tuning.csv")
    assert len(tuning) == 4
