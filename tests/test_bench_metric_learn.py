"""``benchmarks/timing/bench_metric_learn.py``: our side on wine (no metric-learn venv), CSV and
table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dml_bench.datasets import load_dataset
from dml_bench.preprocess import Preprocessing
from dml_bench.splits import derive_seed, train_test_split_indices


def test_quick_run_of_our_side(benchmark_script, tmp_path, monkeypatch):
    bench = benchmark_script("timing/bench_metric_learn")
    monkeypatch.setenv(bench.VENV_ENV, str(tmp_path / "venv"))
    bench.main(["--quick", "--no-metric-learn", "--out", str(tmp_path)])
    assert not (tmp_path / "venv").exists()
    runs = pd.read_csv(tmp_path / "metric_learn.csv")
    assert list(runs.columns) == bench.COLUMNS
    methods = [*bench.METHODS, *bench.VARIANTS]
    assert set(runs.method) == set(methods) and len(runs) == len(methods)
    assert set(runs.dataset) == {"wine"} and set(runs.implementation) == {"dml_bench"}
    assert runs.error.between(0, 1).all() and (runs.fit_time > 0).all()
    assert (runs.n_train == 126).all() and (runs.n_test == 52).all()
    table = (tmp_path / "metric_learn.md").read_text().splitlines()
    assert len(table) == 2 + len(methods) and table[2].startswith("| wine | LMNN | 1 |")
    # the variant is ITML with metric-learn's stopping rule: at most 1000 sweeps
    variant = runs[runs.method == "ITML, metric-learn's stopping rule"].iloc[0]
    assert variant.estimator == "itml" and variant.n_iter <= 1000


def test_methods_refits_only_those_and_keeps_the_other_rows(benchmark_script, tmp_path):
    bench = benchmark_script("timing/bench_metric_learn")
    bench.main(["--quick", "--no-metric-learn", "--out", str(tmp_path)])
    before = pd.read_csv(tmp_path / "metric_learn.csv", dtype={"correct": str})
    bench.main(["--quick", "--no-metric-learn", "--out", str(tmp_path), "--methods", "RCA"])
    after = pd.read_csv(tmp_path / "metric_learn.csv", dtype={"correct": str})
    assert len(after) == len(before) and set(after.method) == set(before.method)
    others = before.method != "RCA"
    pd.testing.assert_frame_equal(after[after.method != "RCA"].reset_index(drop=True),
                                  before[others].reset_index(drop=True))


def test_both_sides_get_the_documented_split(benchmark_script):
    bench = benchmark_script("timing/bench_metric_learn")
    X_train, y_train, X_test, y_test, *_ = bench.prepare_split(bench.task("wine", 1, "lmnn"))
    X, y, _ = load_dataset("wine")
    train, test = train_test_split_indices(y, 0.7, derive_seed(0, "wine", 1))
    expected = Preprocessing(normalize="zscore").apply(X[train], X[test])
    np.testing.assert_allclose(X_train, expected[0])
    np.testing.assert_allclose(X_test, expected[1])
    np.testing.assert_array_equal(y_train, y[train])
    np.testing.assert_array_equal(y_test, y[test])


def test_paired_p_pools_the_splits_both_implementations_classified(benchmark_script):
    from scipy.stats import binomtest

    bench = benchmark_script("timing/bench_metric_learn")
    rows = [("dml_bench", 0, "1101"), ("metric-learn", 0, "1000"), ("dml_bench", 1, "10"),
            ("metric-learn", 1, "01"), ("dml_bench", 2, "11")]  # split 2: metric-learn failed
    runs = pd.DataFrame([{"dataset": "wine", "method": "LMNN", "implementation": impl,
                          "split": split, "correct": bits} for impl, split, bits in rows])
    # discordant points: ours alone right at 3 (two in split 0, one in split 1), theirs at 1
    only_ours, only_theirs = 3, 1
    assert bench.paired_p(runs, "wine", "LMNN") == pytest.approx(
        binomtest(only_ours, only_ours + only_theirs, 0.5).pvalue)
    assert np.isnan(bench.paired_p(runs, "wine", "ITML"))
    # a variant's rows are paired with the metric-learn fits of its base method
    variant = "ITML, metric-learn's stopping rule"
    runs = pd.DataFrame([{"dataset": "wine", "method": method, "implementation": impl,
                          "split": 0, "correct": bits} for method, impl, bits in (
        (variant, "dml_bench", "1111"), ("ITML", "dml_bench", "0000"),
        ("ITML", "metric-learn", "0001"))])
    assert bench.paired_p(runs, "wine", variant) == pytest.approx(binomtest(3, 3, 0.5).pvalue)


def test_same_problem_rows_fit_our_itml_on_metric_learns_pairs_and_bounds(benchmark_script,
                                                                          monkeypatch):
    """The worker's problem (pairs, similar first, and bounds) reaches our ITML unchanged, with
    metric-learn's constants and stopping rule, and the row compares with metric-learn's ITML."""
    bench = benchmark_script("timing/bench_metric_learn")
    method = next(iter(bench.SAME_PROBLEM))
    part = bench.prepare_split(bench.task("wine", 0, "euclidean"))
    pairs = np.array([[0, 1], [2, 3], [4, 5], [0, 7], [8, 9]])
    seen = []
    fit = bench.fit_task_solver

    def recording(t, X, y, constraints):
        seen.append((t, constraints))
        return fit(t, X, y, constraints)

    monkeypatch.setattr(bench, "fit_task_solver", recording)
    rows = bench.same_problem_rows("wine", {0: part},
                                   {("ITML_Supervised", 0): (pairs, 2, [1.5, 9.0])},
                                   [method, "LMNN"])
    assert len(rows) == 1 and rows[0]["method"] == method and rows[0]["estimator"] == "itml"
    (t, constraints), = seen
    np.testing.assert_array_equal(constraints.similar, pairs[:2])
    np.testing.assert_array_equal(constraints.dissimilar, pairs[2:])
    params = t.solver_params()
    assert params["bounds"] == (1.5, 9.0) and params["gamma"] == 1.0
    assert (params["tol"], params["max_iter"]) == (1e-3, 1000)  # ITML_Supervised's defaults
    assert bench.base_method(method) == "ITML"


def test_same_problem_rows_fit_our_lsml_on_metric_learns_quadruplets(benchmark_script,
                                                                     monkeypatch):
    """metric-learn's LSML quadruplets reach our LSML unchanged, with regularization = m (its
    weights 1/m and LogDet weight 1 are our weights 1 and weight m) and its cap, and no other
    constraint."""
    bench = benchmark_script("timing/bench_metric_learn")
    method = "LSML, metric-learn's quadruplets, weights and cap"
    part = bench.prepare_split(bench.task("wine", 0, "euclidean"))
    quads = np.array([[0, 1, 0, 60], [2, 3, 2, 70], [4, 5, 80, 4], [6, 7, 6, 90]])
    seen = []
    lsml = bench.SOLVERS["lsml"]
    real_fit = lsml.fit

    def recording(self, X, y=None, constraints=None, quadruplets=None):
        seen.append((self.get_params(), y, constraints, quadruplets))
        return real_fit(self, X, y, constraints=constraints, quadruplets=quadruplets)

    monkeypatch.setattr(lsml, "fit", recording)
    rows = bench.same_problem_rows("wine", {0: part}, {("LSML_Supervised", 0): quads},
                                   [method])
    assert len(rows) == 1 and rows[0]["method"] == method and rows[0]["estimator"] == "lsml"
    assert bench.base_method(method) == "LSML"
    (params, y, constraints, given), = seen
    np.testing.assert_array_equal(given, quads)
    assert y is None and not len(constraints.triplets) and not len(constraints.similar)
    assert params["regularization"] == len(quads)
    assert (params["tol"], params["max_iter"]) == (1e-3, 1000)  # LSML_Supervised's defaults
