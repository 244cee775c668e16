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
    verdict, every = (tmp_path / "metric_learn.md").read_text().split("## Every row")
    assert not [line for line in verdict.splitlines() if line.startswith("| wine")]  # no theirs
    table = every.splitlines()[2:]
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


def recorded_fits(bench, monkeypatch, solver):
    """The ``(parameters, y, constraints)`` of every fit of our ``solver`` (repeats included)."""
    seen = []
    cls = bench.SOLVERS[solver]
    real_fit = cls.fit

    def recording(self, X, y=None, constraints=None, **kwargs):
        seen.append((self.get_params(), y, constraints))
        return real_fit(self, X, y, constraints=constraints, **kwargs)

    monkeypatch.setattr(cls, "fit", recording)
    return seen


@pytest.mark.parametrize("cls,solver,bounds", [("ITML_Supervised", "itml", [1.5, 9.0]),
                                               ("MMC_Supervised", "xing", None)])
def test_same_problem_rows_fit_ours_on_metric_learns_pairs(benchmark_script, monkeypatch, cls,
                                                            solver, bounds):
    """The worker's problem (pairs, similar first, and ITML's bounds) reaches our ITML or Xing
    unchanged, with metric-learn's constants and stopping rule, and the row compares with
    metric-learn's fits of the method."""
    bench = benchmark_script("timing/bench_metric_learn")
    method = next(name for name, (base, _) in bench.SAME_PROBLEM.items()
                  if bench.METHODS[base][1] == cls)
    part = bench.prepare_split(bench.task("wine", 0, "euclidean"))
    pairs = np.array([[0, 1], [2, 3], [4, 5], [0, 7], [8, 9]])
    seen = recorded_fits(bench, monkeypatch, solver)
    rows = bench.same_problem_rows("wine", {0: part}, {(cls, 0): (pairs, 2, bounds)},
                                   [method, "LMNN"])
    assert len(rows) == 1 and rows[0]["method"] == method and rows[0]["estimator"] == solver
    assert seen and all(params == seen[0][0] for params, *_ in seen)  # repeats of one fit
    params, _, constraints = seen[0]
    np.testing.assert_array_equal(constraints.similar, pairs[:2])
    np.testing.assert_array_equal(constraints.dissimilar, pairs[2:])
    if solver == "itml":  # ITML_Supervised's defaults
        assert params["bounds"] == (1.5, 9.0) and params["gamma"] == 1.0
        assert (params["tol"], params["max_iter"], params["max_proj"]) == (1e-3, 1000, None)
    else:  # MMC_Supervised's defaults and algorithm
        assert (params["tol"], params["max_iter"], params["projection"]) == (
            1e-6, 100, "alternating")
    assert bench.base_method(method) == {"itml": "ITML", "xing": "MMC"}[solver]


def test_verdict_compares_the_same_problem_where_it_was_fitted(benchmark_script):
    """ITML is compared on metric-learn's own problem when that row exists, LMNN at the
    defaults; a slower fit or a higher error (McNemar p < 0.05) is marked **no**."""
    bench = benchmark_script("timing/bench_metric_learn")
    same = next(name for name, (base, _) in bench.SAME_PROBLEM.items() if base == "ITML")
    rows = [("ITML", "dml_bench", 9.0, "0" * 40), ("ITML", "metric-learn", 1.0, "1" * 40),
            (same, "dml_bench", 0.5, "1" * 40), ("LMNN", "dml_bench", 2.0, "1" * 40),
            ("LMNN", "metric-learn", 1.0, "1" * 40)]
    runs = pd.DataFrame([{"dataset": "wine", "method": method, "implementation": impl,
                          "split": 0, "fit_time": t, "error": 1 - bits.count("1") / len(bits),
                          "correct": bits} for method, impl, t, bits in rows])
    lines = {line.split(" | ")[1]: line for line in bench.verdict_markdown(runs).splitlines()
             if line.startswith("| wine")}
    assert set(lines) == {"ITML", "LMNN"}
    assert "the same problem | 2.00 |" in lines["ITML"] and lines["ITML"].endswith("| yes | yes |")
    assert "each library's defaults | 0.50 |" in lines["LMNN"]
    assert lines["LMNN"].endswith("| **no** | yes |")


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
    params, y, constraints, given = seen[0]
    assert all(again[3] is given for again in seen)  # the timing's repeats of one fit
    np.testing.assert_array_equal(given, quads)
    assert y is None and not len(constraints.triplets) and not len(constraints.similar)
    assert params["regularization"] == len(quads)
    assert (params["tol"], params["max_iter"]) == (1e-3, 1000)  # LSML_Supervised's defaults
