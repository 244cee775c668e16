"""The precise companion of a target (targets.yaml `precise:`): 100 splits on the small sets with
the cheap solvers, and its t-interval beside each compared cell (issue #19, item 4)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pandas as pd
import pytest
from scipy.stats import t as student_t

from dml_bench.experiment.config import load_config
from dml_bench.report.kind import write_report
from dml_bench.report.knn import add_precise_columns, read_runs, summarize, t_interval
from dml_bench.reproduction.targets import (TargetUnavailable, target_experiment, load_targets,
                                            precise_version)
from dml_bench.reproduction.report import _precise_cells
from dml_bench.splits import derive_seed
from dml_bench.report.tables import compare_with_paper
from dml_bench.experiment.knn import all_tasks

from test_report import CONFIG, tiny_table, welch_by_hand, write_results

REPO = Path(__file__).resolve().parents[1]


def test_t_interval_is_the_student_t_interval():
    # values 3, 4, 5, 6, 7: mean 5, sample variance 10/4
    low, high = t_interval(5.0, math.sqrt(2.5), 5)
    half = student_t.ppf(0.975, 4) * math.sqrt(2.5) / math.sqrt(5)
    assert (low, high) == pytest.approx((5.0 - half, 5.0 + half), rel=1e-12)
    assert half == pytest.approx(1.9632, abs=1e-4)  # 2.7764 · 1.5811 / 2.2361
    # 100 splits: t(0.975, 99) = 1.9842
    low, high = t_interval(4.81, 2.5, 100)
    assert high - 4.81 == pytest.approx(student_t.ppf(0.975, 99) * 2.5 / 10, rel=1e-12)
    assert high - 4.81 == pytest.approx(0.49605, abs=1e-4)
    assert all(math.isnan(x) for x in t_interval(3.0, float("nan"), 1))


def test_precise_version_runs_100_splits_on_the_small_sets_with_the_declared_solvers():
    targets = load_targets()
    headline = target_experiment(targets["ying2012-table4"], targets, root=REPO)
    precise = target_experiment(targets["ying2012-table4"], targets, root=REPO, precise=True)
    assert precise.name == "ying2012_table4_precise"
    # n < 2000: wine 178, iris 150, breast cancer 569, pima 768, AT&T faces 400; not waveform
    # (5000), segment (2310), optdigits (3823), USPS (9298)
    assert [d.label for d in precise.datasets] == [
        "wine", "iris", "breast_cancer", "pima", "orl_faces"]
    assert [s.label for s in precise.solvers] == ["euclidean", "xing", "boostmetric", "dml_eig"]
    assert all(s.tune is None for s in precise.solvers)
    tasks = list(all_tasks(precise))
    assert len(tasks) == 5 * 4 * 100
    # split i's seed comes from (seed, data set, i): splits 0-9 are the headline's tasks
    ids = {(t.dataset.label, t.split, t.solver.label): t.task_id for t in all_tasks(headline)}
    for t in tasks:
        if t.split < 10:
            assert ids[(t.dataset.label, t.split, t.solver.label)] == t.task_id
    seeds = {t.split: derive_seed(0, "wine", t.split) for t in tasks if t.dataset.name == "wine"}
    assert len(set(seeds.values())) == 100
    # the other declared targets: Shen 2010 only Euclidean (its SDPMetric and LMNN are tuned),
    # Shen 2014 its three small sets (Yale B has 2414 points)
    shen2010 = target_experiment(targets["shen2010-table2"], targets, root=REPO, precise=True)
    assert [s.label for s in shen2010.solvers] == ["euclidean"]
    assert [d.label for d in shen2010.datasets] == [
        "orl_faces", "wine", "balance_scale", "vehicle", "breast_cancer_original", "pima"]
    shen2014 = target_experiment(targets["shen2014-table1"], targets, root=REPO, precise=True)
    assert [d.label for d in shen2014.datasets] == ["balance_scale", "wine", "iris"]
    # every declared companion derives, with cheap (untuned) solvers only
    for t in targets.values():
        if t.precise:
            assert all(s.tune is None for s in target_experiment(t, targets, root=REPO,
                                                             precise=True).solvers), t.id


def test_precise_version_subsets_own_split_counts_and_bad_declarations():
    exp = load_config(REPO / "configs" / "ying2012_table4.yaml", check_data=False)
    wave, seg = exp.datasets[4], exp.datasets[5]
    assert (wave.name, seg.name) == ("waveform", "segment")
    small = (dataclasses.replace(wave, n_samples=500),  # a 500-point subset is small
             dataclasses.replace(exp.datasets[0], label="wine_one", n_splits=1,
                                 solvers=("lmnn", "xing")))
    precise = precise_version(dataclasses.replace(exp, datasets=(seg, *small)),
                              {"n_splits": 100, "max_n": 2000, "solvers": ["euclidean", "xing"]})
    assert [d.label for d in precise.datasets] == ["waveform", "wine_one"]
    assert precise.datasets[1].n_splits == 100 and precise.datasets[1].solvers == ("xing",)
    with pytest.raises(TargetUnavailable, match="unknown"):
        precise_version(exp, {"solvers": ["nope"]})
    with pytest.raises(TargetUnavailable, match="no precise version"):
        precise_version(exp, {})


# the tiny results of test_report, and a precise companion with 4 splits of wine / euclidean
PRECISE_RUNS = [("wine", "euclidean", "euclidean", i, e, 0.1)
                for i, e in enumerate([0.02, 0.04, 0.06, 0.08])]
PRECISE_CONFIG = {**CONFIG, "name": "tiny_precise", "split": {"n_splits": 4},
                  "datasets": [{"name": "wine"}, {"name": "iris", "label": "Iris"}],
                  "solvers": [{"name": "euclidean", "params": {}}]}
HEADLINE = {**CONFIG, "solvers": [*CONFIG["solvers"], {"name": "lmnn", "params": {},
                                                       "tune": {"grid": {"mu": [0.5]}, "cv": 3}}]}


def test_precise_columns_interval_welch_and_reasons(tmp_path):
    head = write_results(tmp_path / "tiny", config=HEADLINE)
    write_results(tmp_path / "tiny_precise", PRECISE_RUNS, PRECISE_CONFIG)
    table = dataclasses.replace(tiny_table(), n_splits=10)
    comp = compare_with_paper(summarize(read_runs(head), HEADLINE), table, HEADLINE)
    precise = summarize(read_runs(tmp_path / "tiny_precise"), PRECISE_CONFIG)
    cells = add_precise_columns(comp, table, HEADLINE, precise, PRECISE_CONFIG).set_index(
        ["dataset", "solver"])
    wine = cells.loc[("wine", "euclidean")]
    std = math.sqrt((9 + 1 + 1 + 9) / 3)  # 2, 4, 6, 8 %: deviations -3, -1, 1, 3 from 5
    half = student_t.ppf(0.975, 3) * std / 2
    assert (wine["precise_n"], wine["precise_mean"]) == (4, pytest.approx(5.0))
    assert wine["precise_ci_low"] == pytest.approx(5.0 - half)
    assert wine["precise_ci_high"] == pytest.approx(5.0 + half)
    assert wine["paper_in_ci"] == (5.0 - half <= 3.46 <= 5.0 + half)
    assert wine["precise_welch_p"] == pytest.approx(welch_by_hand(5.0, std, 4, 3.46, 3.60, 10))
    assert wine["precise_note"] == ""
    # why the others have none: a tuned solver, a solver not in the precise run, not run yet
    assert cells.loc[("wine", "lmnn"), "precise_note"].startswith("tuned solver")
    assert cells.loc[("wine", "dml_eig"), "precise_note"] == "solver not in the precise run"
    assert cells.loc[("iris", "dml_eig"), "precise_n"] == 0
    assert cells.loc[("iris", "euclidean"), "precise_note"] == "precise run not run yet"
    # a precise run short of its splits says so
    short = add_precise_columns(comp, table, HEADLINE, precise,
                                {**PRECISE_CONFIG, "split": {"n_splits": 100}})
    assert "4 of 100 splits run so far" in set(short["precise_note"])
    # a data set absent from the precise run is a large one
    only_wine = {**PRECISE_CONFIG, "datasets": [{"name": "wine"}]}
    cells = add_precise_columns(comp, table, HEADLINE, precise, only_wine).set_index(
        ["dataset", "solver"])
    assert cells.loc[("iris", "euclidean"), "precise_note"] == "large set, n = 150"
    # time tables are left as they are
    time_comp = compare_with_paper(summarize(read_runs(head), HEADLINE), tiny_table("fit_time"),
                                   HEADLINE)
    assert "precise_n" not in add_precise_columns(time_comp, tiny_table("fit_time"), HEADLINE,
                                                  precise, PRECISE_CONFIG).columns


def test_write_report_adds_the_precise_columns_to_the_comparison_csv(tmp_path):
    head = write_results(tmp_path / "tiny")
    (tmp_path / "tiny" / "comparison_ying2012_table4.csv").unlink(missing_ok=True)
    write_report(head)
    assert "precise_mean" not in pd.read_csv(head / "comparison_ying2012_table4.csv").columns
    write_results(tmp_path / "tiny_precise", PRECISE_RUNS, PRECISE_CONFIG)
    write_report(head)
    csv = pd.read_csv(head / "comparison_ying2012_table4.csv")
    wine = csv[(csv["dataset"] == "wine") & (csv["solver"] == "euclidean")].iloc[0]
    assert wine["precise_n"] == 4 and wine["precise_mean"] == pytest.approx(5.0)
    assert "precise_n" not in pd.read_csv(head / "comparison_ying2012_table5.csv").columns


def test_precise_cells_render_before_the_note():
    comp = pd.DataFrame({
        "quantity": ["error"] * 3,
        "precise_n": [100, 0, 57],
        "precise_mean": [4.81, None, 3.2], "precise_ci_low": [4.32, None, 2.9],
        "precise_ci_high": [5.30, None, 3.5],
        "precise_significance": ["no significant difference (p = 0.2)", None,
                                 "ours higher, p = 0.001"],
        "precise_note": ["", "tuned solver: a grid search on every split",
                         "57 of 100 splits run so far"]})
    header = ["data set", "method", "paper", "ours", "match", "note"]
    body = [["wine", "euclidean", "3.46", "6.35", "yes", ""],
            ["wine", "lmnn", "3.08", "3.08", "yes", ""],
            ["iris", "xing", "6.67", "4.22", "yes", "a note"]]
    header, body = _precise_cells(comp, header, body)
    assert header == ["data set", "method", "paper", "ours", "match",
                      "ours, 100 splits [95 % CI]", "paper vs 100 (Welch)", "note"]
    assert body[0][5:] == ["4.81 [4.32, 5.30]", "n.s.", ""]
    assert body[1][5:] == ["– (tuned solver: a grid search on every split)", "", ""]
    assert body[2][5:] == ["3.20 [2.90, 3.50] (57 of 100 splits run so far)",
                           "higher, p = 0.001", "a note"]
