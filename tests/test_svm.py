"""The RBF-SVM baseline: libsvm's one-vs-one SVM on GEMM-computed Gram matrices, checked against
scikit-learn's SVC (libsvm's own multi-class), evaluated by its predictions, its C/γ chosen on the
validation part over Shen et al. (2014)'s grids."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_digits
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from dml_bench.experiment.config import parse_config
from dml_bench.evaluate import model_error
from dml_bench.run.runner import run_experiment
from dml_bench.solvers.svm import SHEN2014_GRID, SVM
from dml_bench.experiment.knn import plan, split_parts

from conftest import papers_dir

pytestmark = pytest.mark.usefixtures("tmp_cache")
PAPER = papers_dir() / "shen2014_frobmetric_dual.txt"


def test_predictions_equal_sklearn_svc():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (30, 4)), rng.normal(1.5, 1, (30, 4))])
    y = np.repeat([3, 7], 30)
    ours = SVM(C=2.0, gamma=0.5).fit(X, y)
    ref = SVC(C=2.0, gamma=0.5, kernel="rbf").fit(X, y)
    Z = rng.normal(0.7, 1.5, (50, 4))
    np.testing.assert_array_equal(ours.predict(Z), ref.predict(Z))
    assert ours.evaluation == "predict" and ours.constraint_kind == "labels"
    assert model_error(ours, X, y, Z, ref.predict(Z)) == 0.0
    assert model_error(ours, X, y, X, y) == pytest.approx(np.mean(ref.predict(X) != y))


@pytest.mark.parametrize("C, gamma", [(2.0 ** -5, 2.0 ** -15), (2.0, 2.0 ** -7),
                                      (2.0 ** 15, 2.0 ** -3), (8.0, "scale"), (0.5, "auto")])
def test_one_vs_one_equals_libsvm_multiclass_on_digits(C, gamma):
    """Ten classes, 45 pairs, across the grid's corners: libsvm's own multi-class SVC decides the
    same pairs the same way (its ovo decision values are ours negated) and votes the same."""
    X, y = load_digits(return_X_y=True)
    X, Z, y = X[:900], X[900:1400], y[:900]
    ours = SVM(C=C, gamma=gamma, scale="minmax").fit(X, y)
    scaler = ours.scaler_
    ref = SVC(C=C, gamma=gamma, decision_function_shape="ovo").fit(scaler.transform(X), y)
    np.testing.assert_allclose(ours.pair_decision_function(Z),
                               -ref.decision_function(scaler.transform(Z)),
                               rtol=1e-6, atol=1e-6 * max(C, 1.0))
    np.testing.assert_array_equal(ours.predict(Z), ref.predict(scaler.transform(Z)))
    np.testing.assert_array_equal(ours.support_, np.sort(ref.support_))
    assert ours.n_iter_ == pytest.approx(ref.n_iter_.sum(), rel=0.02)
    assert ours.gamma_ == pytest.approx(ref._gamma) and ours.converged_


def test_votes_tie_to_the_class_that_sorts_first():
    """Three overlapping classes: some points get one vote from each pair (a cycle); libsvm gives
    them to the class that sorts first, and so must we."""
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(90, 2)), np.repeat(["c", "a", "b"], 30)
    Z = rng.normal(size=(400, 2)) * 2
    ours = SVM(C=1.0, gamma=0.5).fit(X, y)
    ref = SVC(C=1.0, gamma=0.5, decision_function_shape="ovo").fit(X, y)
    votes_for_j = ref.decision_function(Z) < 0  # libsvm's sign: positive votes for class i
    winners = np.where(votes_for_j, [1, 2, 2], [0, 0, 1])  # pairs (a,b), (a,c), (b,c)
    tied = np.all([np.sum(winners == k, axis=1) == 1 for k in range(3)], axis=0)
    assert tied.sum() >= 2  # the check below covers ties
    np.testing.assert_array_equal(ours.predict(Z[tied]), "a")
    np.testing.assert_array_equal(ours.predict(Z), ref.predict(Z))


def test_bad_input_is_refused(monkeypatch):
    X = np.random.default_rng(3).normal(size=(20, 3))
    with pytest.raises(ValueError, match="at least 2 classes"):
        SVM().fit(X, np.zeros(20))
    with pytest.raises(ValueError, match="gamma"):
        SVM(gamma=-1.0).fit(X, np.repeat([0, 1], 10))
    monkeypatch.setattr("dml_bench.solvers.linalg.available_memory_bytes", lambda: 20 * 20 * 8 - 1)
    with pytest.raises(MemoryError, match=r"SVM pair \(0, 1\) needs"):
        SVM().fit(X, np.repeat([0, 1], 10))


def test_minmax_scaling_is_svm_scale_fitted_on_the_training_points():
    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(0, 1, (40, 3)), rng.normal(1.2, 1, (40, 3))]) * [1.0, 300.0, 0.01]
    y = np.repeat([0, 1], 40)
    Z = rng.normal(0.5, 1.5, (60, 3)) * [1.0, 300.0, 0.01]
    lo, hi = X.min(axis=0), X.max(axis=0)
    svm_scale = lambda A: 2 * (A - lo) / (hi - lo) - 1  # libsvm's svm-scale -l -1 -u 1
    ref = SVC(C=4.0, gamma=0.5).fit(svm_scale(X), y)
    ours = SVM(C=4.0, gamma=0.5, scale="minmax").fit(X, y)
    np.testing.assert_array_equal(ours.predict(Z), ref.predict(svm_scale(Z)))
    # hence invariant to a positive affine map of each feature, which the unscaled SVM is not
    a, b = np.array([5.0, 0.001, 40.0]), np.array([-3.0, 7.0, 100.0])
    moved = SVM(C=4.0, gamma=0.5, scale="minmax").fit(X * a + b, y)
    np.testing.assert_array_equal(moved.predict(Z * a + b), ours.predict(Z))
    assert np.any(SVM(C=4.0, gamma=0.5).fit(X * a + b, y).predict(Z * a + b)
                  != SVM(C=4.0, gamma=0.5).fit(X, y).predict(Z))
    with pytest.raises(ValueError, match="minmax"):
        SVM(scale="zscore").fit(X, y)


@pytest.mark.skipif(not PAPER.exists(), reason="paper text not available")
def test_grids_are_those_of_shen_2014():
    text = PAPER.read_text()
    assert re.search(r"\\\{2\^\{-15\}, 2\^\{-13\}, \\ldots, 2\^5\\\}", text)
    assert re.search(r"\\\{2\^\{-5\}, 2\^\{-3\}, \\ldots, 2\^\{15\}\\\}", text)
    assert SHEN2014_GRID["gamma"] == [2.0 ** e for e in (-15, -13, -11, -9, -7, -5, -3, -1, 1, 3, 5)]
    assert SHEN2014_GRID["C"] == [2.0 ** e for e in (-5, -3, -1, 1, 3, 5, 7, 9, 11, 13, 15)]


def test_validation_tuned_svm_in_the_runner(tmp_path):
    grid = {"C": [0.25, 4.0, 64.0], "gamma": [0.001, 0.05, 2.0]}
    exp = parse_config({
        "name": "svm", "datasets": [{"name": "wine", "normalize": "zscore"}],
        "split": {"n_splits": 1, "validation_fraction": 0.15},
        "solvers": [{"name": "svm", "tune": {"grid": grid, "validation": 0.15}}],
        "execution": {"n_jobs": 1}}, source="test")
    summary = run_experiment(exp, tmp_path, echo=lambda m: None)
    assert summary.failed == 0 and summary.ran == 1
    row = pd.read_csv(tmp_path / "svm" / "runs.csv").iloc[0]
    # independent reference: scikit-learn on the same parts, every grid point by hand
    task = plan(exp)[0][0]
    train, val, test = split_parts(task)[:3]
    from dml_bench.datasets import load_dataset

    X, y, _ = load_dataset("wine")
    scaler = StandardScaler().fit(X[train])
    best = min(((np.mean(SVC(C=c, gamma=g).fit(scaler.transform(X[train]), y[train])
                         .predict(scaler.transform(X[val])) != y[val]), i, c, g)
                for i, (c, g) in enumerate((c, g) for c in grid["C"] for g in grid["gamma"])))
    assert json.loads(row.tuned_params) == {"C": best[2], "gamma": best[3]}
    ref = SVC(C=best[2], gamma=best[3]).fit(scaler.transform(X[train]), y[train])
    assert row.error == pytest.approx(np.mean(ref.predict(scaler.transform(X[test])) != y[test]))
    assert row.n_train == len(train) and row.n_test == len(test)
