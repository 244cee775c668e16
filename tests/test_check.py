"""Tests of the baseline regression check."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from test_report import CONFIG, write_results

from dml_bench.report.check import check_against_baseline, tolerance, write_baseline

# (dataset, label, solver, split, error fraction, fit time); 50 test points per split
BASE = [
    *[("wine", "euclidean", "euclidean", s, e, 0.1) for s, e in enumerate([0.02, 0.04, 0.06])],
    *[("wine", "identity", "identity", s, 0.02, 0.1) for s in range(3)],
    *[("iris", "euclidean", "euclidean", s, e, 0.1) for s, e in enumerate([0.10, 0.12, 0.14])],
    *[("iris", "identity", "identity", s, e, 0.1) for s, e in enumerate([0.10, 0.12, 0.14])],
]


def shifted(runs, dataset, label, delta):
    """``runs`` with ``delta`` added to the error fraction of every split of one cell."""
    return [(d, lab, s, sp, e + delta if (d, lab) == (dataset, label) else e, t)
            for d, lab, s, sp, e, t in runs]


@pytest.fixture
def baseline(tmp_path):
    results = write_results(tmp_path / "base", BASE, CONFIG)
    return write_baseline(results, tmp_path / "baselines" / "base.csv")


def check(tmp_path, baseline, runs):
    ok, table = check_against_baseline(write_results(tmp_path / "now", runs, CONFIG), baseline)
    return ok, table.set_index(["dataset", "label"])["status"]


def test_baseline_file(baseline):
    stored = pd.read_csv(baseline)
    assert list(stored.columns) == [
        "dataset", "label", "error_mean", "error_std", "error_n", "n_test_mean"]
    assert stored["error_mean"].tolist() == pytest.approx([4.0, 2.0, 12.0, 12.0])


def test_identical_results_pass(tmp_path, baseline):
    ok, table = check_against_baseline(write_results(tmp_path / "now", BASE, CONFIG), baseline)
    assert ok and (table["status"] == "ok").all()
    assert list(table.columns) == [
        "dataset", "label", "baseline", "ours", "diff", "tolerance", "status"]
    assert (table["diff"] == 0).all()


def test_worse_cell_fails(tmp_path, baseline):
    ok, status = check(tmp_path, baseline, shifted(BASE, "iris", "identity", 0.10))
    assert not ok
    assert status[("iris", "identity")] == "worse"
    assert (status.drop(("iris", "identity")) == "ok").all()


def test_missing_cell_fails(tmp_path, baseline):
    ok, status = check(tmp_path, baseline, [r for r in BASE if r[:2] != ("wine", "identity")])
    assert not ok and status[("wine", "identity")] == "missing"


def test_better_cell_passes(tmp_path, baseline):
    ok, status = check(tmp_path, baseline, shifted(BASE, "iris", "euclidean", -0.08))
    assert ok and status[("iris", "euclidean")] == "better"


def test_zero_spread_uses_one_point_floor(tmp_path, baseline):
    # wine/identity has std 0 on both sides: the tolerance is one misclassified point (of 50) on
    # one of 3 splits, 100 / (50 * 3) points, so one more error on every split is worse
    ok, status = check(tmp_path, baseline, shifted(BASE, "wine", "identity", 0.02))
    assert not ok and status[("wine", "identity")] == "worse"
    table = check_against_baseline(tmp_path / "now", baseline)[1].set_index(["dataset", "label"])
    assert table.loc[("wine", "identity"), "tolerance"] == pytest.approx(100 / 150)
    assert table.loc[("wine", "identity"), "diff"] == pytest.approx(2.0)


def test_tolerance_formula_by_hand():
    # two standard errors of the baseline mean (paired splits): 2 * 2 / sqrt(3) ≈ 2.309 > 0.5
    assert tolerance(2.0, 3, 4, 50) == pytest.approx(2 * 2 / math.sqrt(3))
    # single splits (NaN std counts as 0): the floor, one test point of 200 on one split
    assert tolerance(float("nan"), 1, 1, 200) == pytest.approx(0.5)
    # floor wins over a tiny spread: 100 / (40 * 10) = 0.25 > 2 * 0.1 / sqrt(10)
    assert tolerance(0.1, 10, 10, 40) == pytest.approx(0.25)


def test_identity_solver_fails_the_committed_quickstart_baseline(tmp_path, monkeypatch):
    """A deliberate regression — DML-eig returning the identity — must fail CI's guard."""
    from dataclasses import replace
    from pathlib import Path

    from dml_bench.experiment.config import load_config
    from dml_bench.run.runner import run_experiment
    from dml_bench.solvers import SOLVERS, Euclidean

    repo = Path(__file__).resolve().parents[1]
    exp = load_config(repo / "configs" / "quickstart.yaml")
    exp = replace(exp, execution=replace(exp.execution, n_jobs=1))  # in-process
    monkeypatch.setitem(SOLVERS._items, "dml_eig", type("IdentityDMLEig", (Euclidean,), {
        "__init__": lambda self, **params: None, "get_params": lambda self, deep=True: {}}))
    run_experiment(exp, tmp_path, echo=lambda m: None)
    ok, table = check_against_baseline(tmp_path / "quickstart",
                                       repo / "results" / "baselines" / "quickstart.csv")
    assert not ok
    worse = table[table["status"] == "worse"]
    assert ("wine", "dml_eig") in set(zip(worse["dataset"], worse["label"]))
    assert set(worse["label"]) == {"dml_eig"}  # the Euclidean cells are untouched
