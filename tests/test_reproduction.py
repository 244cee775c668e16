"""Reproduction targets (dml_bench/reproduction/targets.yaml), `dmlbench reproduce` and `report
--all`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from dml_bench.reproduction import targets as reproduction
from dml_bench.report.check import write_baseline
from dml_bench.report.retrieval import FIGURE
from dml_bench.cli import main
from dml_bench.experiment.config import ConfigError, load_config
from dml_bench.run.runner import Selection
from dml_bench.papers import list_paper_tables
from dml_bench.report.html import render_html
from dml_bench.reproduction.report import collect, counts, render_markdown
from dml_bench.reproduction.targets import (TargetUnavailable, availability, load_targets,
                                            quick_version, reproduce, target_experiment)
from dml_bench.solvers import SOLVERS, Euclidean

pytestmark = pytest.mark.usefixtures("tmp_cache")
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def at_repo_root(monkeypatch):
    monkeypatch.chdir(REPO)  # target configs are paths relative to the project root


def test_every_target_is_well_formed():
    targets = load_targets()
    tables = set()
    for t in targets.values():
        assert t.paper in {"ying2012", "shen2014", "shen2010", "kunapuli2012", "zhang2017"}
        if t.unsupported:
            continue
        if t.function:  # its own experiment: an importable function writing the figures
            import importlib

            module, name = t.function.split(":")
            assert callable(getattr(importlib.import_module(module), name)) and t.output, t.id
            tables |= set(t.tables)
            continue
        if t.same_runs and targets[t.same_runs].function:  # reads a function target's run
            assert t.config is None and not t.quick and not t.precise, t.id
            tables |= set(t.tables)
            continue
        assert (t.config is None) != (t.same_runs is None), t.id
        if t.same_runs:
            assert targets[t.same_runs].config, t.id
        exp = target_experiment(t, targets)
        tables |= set(t.tables)
        assert set(t.tables) <= set(exp.paper_table), t.id  # the config reports them
        own = {FIGURE} if exp.kind == "retrieval" else set()  # the kind's report draws it
        assert set(t.figures) <= {f["name"] for f in exp.figures} | own, t.id
        if t.quick:
            labels = {d.label for d in exp.datasets}
            assert set(t.quick.get("datasets", [])) <= labels, t.id
            assert set(t.quick.get("solvers", [])) <= {s.label for s in exp.solvers}, t.id
    # every table of numbers in the papers files is the object of some runnable target, except
    # the LFW tables whose protocol is not supported here
    lfw = {"shen2014/table2", "shen2014/table2_time"}
    assert set(list_paper_tables()) - lfw <= tables


def test_quick_version_keeps_the_listed_parts_only():
    exp = load_config(REPO / "configs" / "ying2012_table4.yaml", check_data=False)
    quick = quick_version(exp, {"datasets": ["wine", "usps"], "n_splits": 2,
                                "solvers": ["euclidean", "lmnn"]})
    assert quick.name == "ying2012_table4_quick"
    assert [d.label for d in quick.datasets] == ["wine", "usps"]
    assert [d.n_splits for d in quick.datasets] == [2, 1]  # usps stays at its single split
    assert [s.label for s in quick.solvers] == ["euclidean", "lmnn"]
    assert quick.solvers[1].tune == exp.solvers[2].tune
    with pytest.raises(TargetUnavailable, match="no quick version"):
        quick_version(exp, {})


def test_unrunnable_targets_say_why(monkeypatch):
    monkeypatch.delenv("DMLBENCH_DATA_MIRROR", raising=False)
    targets = load_targets()
    table6 = targets["ying2012-table6"]
    reason = availability(table6, target_experiment(table6, targets))
    assert reason.startswith("data not available: ") and "needs the LFW-SIFT file" in reason
    assert "DMLBENCH_LFW_SIFT" in reason and "not supported" not in reason
    with pytest.raises(TargetUnavailable, match="ying2012-table6: data not available"):
        reproduce("ying2012-table6", results_root="unused")
    result = CliRunner().invoke(main, ["reproduce", "shen2014-table2"])
    assert result.exit_code == 3 and "needs the LFW-SIFT file" in result.stderr
    result = CliRunner().invoke(main, ["reproduce", "ying2012-table7"])  # other descriptors too
    assert result.exit_code == 3 and "not supported yet" in result.stderr
    result = CliRunner().invoke(main, ["reproduce", "ying2012-tabel4"])
    assert result.exit_code == 2 and "did you mean 'ying2012-table4'" in result.stderr.lower()



@pytest.mark.parametrize("tid, dataset", [("shen2014-fig5", "teapot"),
                                          ("shen2014-fig6", "frey_faces"),
                                          ("shen2014-fig8", "teapot")])
def test_image_embedding_targets_without_the_file_say_why(tmp_path, monkeypatch, tid, dataset):
    """The MVU studies on supplied images are runnable once the file is there; without it the
    command exits 3 with one line naming the file and its format."""
    monkeypatch.setenv("DMLBENCH_DATA_MIRROR", str(tmp_path / "no-mirror"))
    result = CliRunner().invoke(main, ["reproduce", tid, "--results-dir",
                                       str(tmp_path / "results")])
    assert result.exit_code == 3
    line = result.stderr.strip()
    relpath = f"{dataset}/{dataset}.npz"
    assert "\n" not in line and line.startswith(f"{tid}: data not available: {dataset}")
    assert relpath in line and "numpy.savez(path, X=X, y=y)" in line
    assert "not supported" not in line and not (tmp_path / "results").exists()

TINY_TARGETS = {"targets": {
    "tiny-table": {"paper": "ying2012", "item": "Table 4", "what": "a tiny stand-in",
                   "config": "CONFIG", "tables": ["ying2012/table4"],
                   "quick": {"datasets": ["wine"], "n_splits": 3}},
}}
TINY = {"name": "tiny", "paper_table": "ying2012/table4",
        "datasets": [{"name": "wine"}, {"name": "iris"}], "split": {"n_splits": 3, "seed": 0},
        "solvers": [{"name": "euclidean"}, {"name": "dml_eig", "params": {"max_iter": 1000}}],
        "notes": {"wine/dml_eig": "a note kept in the config"},
        "protocol": [{"choice": "splits", "ours": "3 random 70/30 splits",
                      "paper": "we randomly split the data sets 70% for training",
                      "why": "three, not ten, to be quick"},
                     {"choice": "ties", "ours": "nearest", "why": "the paper is silent"}],
        "execution": {"n_jobs": 1, "backend": "sequential"}}


@pytest.fixture
def tiny_target(tmp_path, monkeypatch):
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(yaml.safe_dump(TINY))
    spec = yaml.safe_load(yaml.safe_dump(TINY_TARGETS).replace("CONFIG", str(cfg)))
    path = tmp_path / "targets.yaml"
    path.write_text(yaml.safe_dump(spec))
    monkeypatch.setattr(reproduction, "TARGETS_FILE", path)
    monkeypatch.setattr(reproduction.load_targets, "__defaults__", (path,))
    return tmp_path


def test_quick_check_fails_on_a_deliberate_regression(tiny_target, monkeypatch):
    """CI's `reproduce --quick --check`: a solver returning the identity must fail it."""
    results = tiny_target / "results"
    run = CliRunner().invoke(main, ["reproduce", "tiny-table", "--quick", "--results-dir", results])
    assert run.exit_code == 0, run.output
    (results / "baselines").mkdir()
    write_baseline(results / "tiny_quick", results / "baselines" / "tiny-table_quick.csv")
    ok = CliRunner().invoke(main, ["reproduce", "tiny-table", "--quick", "--check",
                                   "--results-dir", results])
    assert ok.exit_code == 0, ok.output

    class IdentityDMLEig(Euclidean):
        def __init__(self, max_iter=1000):
            self.max_iter = max_iter

    monkeypatch.setitem(SOLVERS._items, "dml_eig", IdentityDMLEig)
    bad = CliRunner().invoke(main, ["reproduce", "tiny-table", "--quick", "--check", "--force",
                                    "--results-dir", results])
    assert bad.exit_code == 1
    assert "worse" in bad.stdout and "regressed: tiny-table" in bad.stderr


def test_report_all_from_results(tiny_target):
    results = tiny_target / "results"
    record = reproduce("tiny-table", results_root=results, echo=lambda m: None)
    assert record["ran"] == 12 and record["wall_seconds"] > 0
    entries = collect(results)
    (entry,) = entries
    assert entry["status"] == "ran" and entry["record"]["target"] == "tiny-table"
    (key, comparison), = entry["comparisons"]
    assert key == "ying2012/table4"
    ran = comparison[comparison["status"] != "not run"]
    assert set(ran["dataset"]) == {"wine", "iris"} and len(ran) == 4
    assert (comparison["status"] == "not run").sum() == 2 * 7 - 4  # other methods of these rows
    table = counts(entries).iloc[0]
    assert table["compared"] == 4 and table["matched"] == int((ran["status"] == "match").sum())
    markdown = render_markdown(entries, results)
    assert "### Table 4 — a tiny stand-in" in markdown and "`make reproduce-tiny-table`" in markdown
    assert f"{table['matched']} of 4 cells match" in markdown
    wine_dml = ran[(ran["dataset"] == "wine") & (ran["solver"] == "dml_eig")].iloc[0]
    if wine_dml["status"] == "mismatch":
        assert "a note kept in the config" in markdown
    assert ("| splits | 3 random 70/30 splits | paper: “we randomly split the data sets 70% for "
            "training” — three, not ten, to be quick |") in markdown
    assert "| ties | nearest | not stated; the paper is silent |" in markdown
    page = render_html(markdown, "dml-bench reproduction")
    assert page.count("<table>") == 3 and '<h3 id="' in page


def test_report_all_cli_writes_both_files(tiny_target):
    results = tiny_target / "results"
    out = CliRunner().invoke(main, ["report", "--all", "--results-root", results])
    assert out.exit_code == 0, out.output
    text = (results / "REPRODUCTION.md").read_text()
    assert "Not run yet" in text and (results / "REPRODUCTION.html").is_file()


def test_a_target_runs_dataset_by_dataset_and_the_report_lists_the_rest(tiny_target):
    """`reproduce --dataset`: part of a target now, the rest later into the same results."""
    results = tiny_target / "results"
    bad = CliRunner().invoke(main, ["reproduce", "tiny-table", "--dataset", "wnie",
                                    "--results-dir", results])
    assert bad.exit_code == 2 and "Did you mean 'wine'" in bad.output and "iris" in bad.output
    first = CliRunner().invoke(main, ["reproduce", "tiny-table", "--dataset", "wine",
                                      "--results-dir", results])
    assert first.exit_code == 0, first.output
    runs = pd.read_csv(results / "tiny" / "runs.csv")
    assert set(runs["dataset"]) == {"wine"} and len(runs) == 6
    (entry,) = collect(results)
    assert entry["not_run"] == {"iris": 6}
    assert counts([entry]).iloc[0]["partly_run"] == 1
    assert "**Partly run**: not run yet: iris (6 tasks)" in render_markdown([entry], results)
    wall_first = reproduction.json.loads((results / "tiny" / "reproduce.json").read_text())

    record = reproduce("tiny-table", results_root=results, echo=lambda m: None,
                       select=Selection(datasets=["iris"]))
    assert record["ran"] == 6 and record["datasets"] == ["wine", "iris"]
    assert record["wall_seconds"] > wall_first["tiny-table"]["wall_seconds"]  # both parts count
    assert record["started_at"] == wall_first["tiny-table"]["started_at"]
    (entry,) = collect(results)
    assert entry["not_run"] == {} and "Partly run" not in render_markdown([entry], results)


def test_a_target_runs_solver_by_solver(tiny_target):
    """`reproduce --solver`: the tasks of one solver now, the others later; the report counts
    the rest as not run and the record names the parts run."""
    results = tiny_target / "results"
    record = reproduce("tiny-table", results_root=results, echo=lambda m: None,
                       select=Selection(solvers=["euclidean"]))
    runs = pd.read_csv(results / "tiny" / "runs.csv")
    assert set(runs["label"]) == {"euclidean"} and record["ran"] == len(runs) == 6
    (entry,) = collect(results)
    assert entry["not_run"] == {"wine": 3, "iris": 3}
    record = reproduce("tiny-table", results_root=results, echo=lambda m: None)
    assert record["ran"] == 6 and record["solvers"] == "all"
    (entry,) = collect(results)
    assert entry["not_run"] == {}


def test_datasets_without_data_here_are_named_not_counted_as_not_run(tiny_target, monkeypatch):
    """A config dataset missing from mirror and cache is reported as such, not as work to do."""
    import dml_bench.datasets as datasets

    results = tiny_target / "results"
    reproduce("tiny-table", results_root=results, echo=lambda m: None,
              select=Selection(datasets=["wine"]))
    real = datasets.dataset_status
    monkeypatch.setattr(datasets, "dataset_status",
                        lambda name, **kw: "network needed" if name == "iris" else real(name, **kw))
    (entry,) = collect(results)
    assert entry["not_run"] == {} and entry["no_data"] == ["iris"]
    markdown = render_markdown([entry], results)
    assert "Partly run" not in markdown and "Data not available here" in markdown
    assert "iris; their rows are skipped" in markdown


def test_an_interrupted_run_keeps_its_rows_and_wall_time(tiny_target, monkeypatch):
    """Ctrl-C (or SIGTERM, turned into SystemExit by the CLI) after some rows: the record says
    interrupted with the rows it wrote, and the next run adds its own wall time to it."""
    from dml_bench.run import runner

    results = tiny_target / "results"
    real = runner.run_experiment

    def dies_after_wine(exp, results_root, **kwargs):
        real(exp, results_root, **{**kwargs, "select": Selection(datasets=["wine"])})
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_experiment", dies_after_wine)
    with pytest.raises(KeyboardInterrupt):
        reproduce("tiny-table", results_root=results, echo=lambda m: None)
    first = reproduction.json.loads((results / "tiny" / "reproduce.json").read_text())["tiny-table"]
    assert first["interrupted"] and first["ran"] == 6 and first["wall_seconds"] > 0
    (entry,) = collect(results)
    assert "the last run was interrupted" in render_markdown([entry], results)

    monkeypatch.setattr(runner, "run_experiment", real)
    record = reproduce("tiny-table", results_root=results, echo=lambda m: None)
    assert record["ran"] == 6 and record["done_before"] == 6 and "interrupted" not in record
    assert record["wall_seconds"] > first["wall_seconds"]
    assert record["started_at"] == first["started_at"]


def test_sigterm_stops_a_cli_run_like_ctrl_c(tmp_path):
    """`kill <pid>` of `dmlbench run` leaves a run that the same command resumes."""
    import signal
    import subprocess
    import sys
    import time

    cfg = tmp_path / "slow.yaml"
    cfg.write_text(yaml.safe_dump({
        "name": "slow", "datasets": [{"name": "wine"}],
        "split": {"train_fraction": 0.7, "n_splits": 40, "seed": 0},
        "constraints": {"generator": "knn_triplets", "params": {"k": 3}},
        "solvers": [{"name": "lmnn", "params": {"max_iter": 300}}],
        "execution": {"n_jobs": 1, "backend": "sequential"}}))
    runs = tmp_path / "results" / "slow" / "runs.csv"
    proc = subprocess.Popen([sys.executable, "-m", "dml_bench", "run", str(cfg),
                             "--results-dir", str(tmp_path / "results")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    deadline = time.time() + 120
    while time.time() < deadline and not (runs.is_file() and len(pd.read_csv(runs)) >= 2):
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err.decode()
    assert 2 <= len(pd.read_csv(runs)) < 40  # stopped mid-run, every written row readable


def test_a_sigterm_whose_exit_was_dropped_stops_the_run_after_its_row(tmp_path, monkeypatch):
    """`make test-oldest`, 2026-11-29: the SIGTERM of the test above landed in threadpoolctl's
    ctypes callback, which printed the handler's SystemExit and dropped it, and the run went on.
    The handler also records the signal, and the row loop stops after the row in progress."""
    from types import SimpleNamespace

    from dml_bench.run import execution
    from dml_bench.run.results import RunStore, TaskClaims

    monkeypatch.setattr(execution, "STOP_SIGNALS", [])
    recorded = []

    def fit(task, blas_threads):
        if task.task_id == "b":  # the signal arrives during the second fit, its exit dropped
            execution.STOP_SIGNALS.append(15)
        return {"task_id": task.task_id}

    work = [SimpleNamespace(task_id=t) for t in "abcd"]
    with pytest.raises(SystemExit) as stop:
        execution.land_rows(fit, work, RunStore(tmp_path),
                            execution.Landing(1, "sequential", TaskClaims(tmp_path)),
                            require_timing=False, record=recorded.append)
    assert stop.value.code == 128 + 15
    assert [row["task_id"] for row in recorded] == ["a", "b"]  # the second row is kept


def _declare_sweep(root: Path, **entry) -> None:
    """Give the tiny target a ``diagnoses:`` entry in its targets file."""
    path = root / "targets.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["targets"]["tiny-table"]["diagnoses"] = [entry]
    path.write_text(yaml.safe_dump(spec))


def test_a_declared_sensitivity_sweep_shows_beside_the_cells(tiny_target):
    """The sweep a target declares (folder, cells and variants CSVs, axes) gives the range column
    and the sentence naming the variant that matches most cells (values written here, so
    known); a sweep in a folder the target does not declare is not read."""
    results = tiny_target / "results"
    reproduce("tiny-table", results_root=results, echo=lambda m: None)
    sweep = results / "sweeps"
    sweep.mkdir()
    pd.DataFrame({"dataset": ["wine"] * 3 + ["iris"], "solver": ["dml_eig"] * 4,
                  "scale": ["none", "unit_mean", "none", "none"],
                  "mean": [1.0, 2.75, 0.5, 9.0]}).to_csv(sweep / "cells.csv", index=False)
    pd.DataFrame({"scale": ["unit_mean", "none"], "cells": [2, 2], "matched": [2, 1],
                  "mean_abs_gap": [0.25, 1.5], "headline": [False, True]}).to_csv(
        sweep / "variants.csv", index=False)
    undeclared = results / "tiny_diagnosis"  # the folder name alone makes nothing shown
    undeclared.mkdir()
    pd.DataFrame({"dataset": ["wine"], "solver": ["dml_eig"], "error": [40.0]}).to_csv(
        undeclared / "dml_eig_sensitivity_summary.csv", index=False)
    pd.DataFrame({"scale": ["none"], "cells": [2], "matched": [0], "mean_abs_gap": [9.0],
                  "headline": [True]}).to_csv(
        undeclared / "dml_eig_sensitivity_protocols.csv", index=False)
    (entry,) = collect(results)
    assert entry["comparisons"][0][1]["sweep_low"].isna().all() and entry["sweeps"] == []
    assert "| sweep range |" not in render_markdown([entry], results)

    _declare_sweep(tiny_target, folder="sweeps", cells="cells.csv", variants="variants.csv",
                   axes=["scale"], value="mean")
    (entry,) = collect(results)
    (_, comparison), = entry["comparisons"]
    wine = comparison[(comparison["dataset"] == "wine") & (comparison["label"] == "dml_eig")]
    assert wine[["sweep_low", "sweep_high", "sweep_variants"]].values.tolist() == [[0.5, 2.75, 3]]
    assert comparison.loc[comparison["label"] == "euclidean", "sweep_low"].isna().all()
    markdown = render_markdown([entry], results)
    assert "| sweep range |" in markdown
    assert "| **0.50–2.75** |" in markdown  # the paper's 1.35 lies inside
    assert "| 9.00–9.00 |" in markdown  # iris: paper 3.11 outside
    assert f"*Sensitivity sweep* (`{(sweep / 'variants.csv').as_posix()}`, 2 protocol " \
           "variants over scale;" in markdown
    assert ("the headline protocol matches 1 of 2; the single variant matching most swept cells "
            "is scale unit_mean: 2 of 2 (mean |ours − paper| 0.25)") in markdown
    assert "40.00" not in markdown and "0 of 2" not in markdown  # the undeclared sweep's


def test_a_declared_sweep_without_its_file_or_columns_is_left_out(tiny_target, capsys):
    """A results root without the declared files shows no sweep (a sweep is committed work, not
    part of a run); a file without a declared column is named in a warning."""
    results = tiny_target / "results"
    reproduce("tiny-table", results_root=results, echo=lambda m: None)
    (results / "sweeps").mkdir()
    pd.DataFrame({"dataset": ["wine"], "solver": ["dml_eig"], "error": [1.0]}).to_csv(
        results / "sweeps" / "cells.csv", index=False)
    _declare_sweep(tiny_target, folder="sweeps", cells="cells.csv", variants="absent.csv",
                   axes=["scale"], value="mean")
    (entry,) = collect(results)
    assert entry["comparisons"][0][1]["sweep_low"].isna().all() and entry["sweeps"] == []
    err = capsys.readouterr().err
    assert f"{results / 'sweeps' / 'cells.csv'}: no column mean (declared under `diagnoses:`" in err
    assert "absent.csv" not in err


@pytest.mark.parametrize("entry, key, problem", [
    ({"folder": "s", "cells": "c.csv", "variants": "v.csv", "axes": ["a"], "file": "x"},
     "diagnoses[0].file", "unknown key; valid keys: folder, cells, variants, axes, value"),
    ({"folder": "/abs", "cells": "c.csv", "variants": "v.csv", "axes": ["a"]},
     "diagnoses[0].folder", "must be a folder relative to the results root"),
    ({"folder": "s", "cells": "c.txt", "variants": "v.csv", "axes": ["a"]},
     "diagnoses[0].cells", "must be the name of a CSV file in the diagnosis's folder"),
    ({"folder": "s", "cells": "c.csv", "variants": "v.csv", "axes": "a"},
     "diagnoses[0].axes", "must be a list of column names"),
    ("s/c.csv", "diagnoses[0]", "must be a mapping with keys folder, cells, variants, axes, "
                                "value"),
])
def test_a_malformed_diagnosis_names_its_key(tiny_target, entry, key, problem):
    path = tiny_target / "targets.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["targets"]["tiny-table"]["diagnoses"] = [entry]
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(ConfigError) as err:
        load_targets(path)
    assert str(err.value) == f"{path}: targets.tiny-table.{key}: {problem}"


def test_the_committed_targets_declare_their_sweeps_and_each_file_exists():
    """Every declared sweep's files exist under results/ with the declared columns."""
    targets = load_targets()
    declared = {t.id: t.diagnoses for t in targets.values() if t.diagnoses}
    assert sorted(declared) == ["kunapuli2012-fig3", "kunapuli2012-table3", "shen2010-table2",
                                "shen2014-table1", "ying2012-table4"]
    for tid, diagnoses in declared.items():
        for d in diagnoses:
            cells = pd.read_csv(REPO / "results" / d.folder / d.cells, nrows=1)
            variants = pd.read_csv(REPO / "results" / d.folder / d.variants, nrows=1)
            assert {"dataset", "solver", d.value, *d.axes} <= set(cells.columns)
            counted = ["matched", "mean_abs_gap"] if targets[tid].tables else []  # a figure: none
            assert list(variants.columns) == [*d.axes, "cells", *counted, "headline"]


def test_a_declared_referee_shows_its_numbers_beside_ours(tiny_target):
    """A referee's summary (another implementation on our splits) is shown as a table under the
    comparison, a flagged cell marked as disagreeing; an undeclared one is not read."""
    results = tiny_target / "results"
    reproduce("tiny-table", results_root=results, echo=lambda m: None)
    folder = results / "referee"
    folder.mkdir()
    pd.DataFrame({"dataset": ["wine", "iris"], "solver": ["dml_eig"] * 2, "ours": [1.0, 3.0],
                  "referee": [1.25, 6.5], "referee_minus_ours": [0.25, 3.5], "p": [0.4, 0.001],
                  "flagged": [False, True], "n": [3, 3]}).to_csv(folder / "summary.csv",
                                                                  index=False)
    (entry,) = collect(results)
    assert "*Referee*" not in render_markdown([entry], results)
    path = tiny_target / "targets.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["targets"]["tiny-table"]["referees"] = [
        {"name": "another DML-eig", "folder": "referee", "summary": "summary.csv"}]
    path.write_text(yaml.safe_dump(spec))
    (entry,) = collect(results)
    markdown = render_markdown([entry], results)
    assert (f"*Referee* (another DML-eig, on our splits; `{(folder / 'summary.csv').as_posix()}`)"
            ": 1 of 2 cells disagree with ours by more than the split noise") in markdown
    assert "| wine | dml_eig | 1.00 | 1.25 | +0.25 | 0.4 | 3 |" in markdown
    assert "| iris | dml_eig | 3.00 | 6.50 | +3.50 | **disagrees**, 0.001 | 3 |" in markdown


def test_a_malformed_referee_names_its_key(tiny_target):
    path = tiny_target / "targets.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["targets"]["tiny-table"]["referees"] = [{"name": "x", "folder": "f", "summary": "s.txt"}]
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(ConfigError) as err:
        load_targets(path)
    assert str(err.value) == (f"{path}: targets.tiny-table.referees[0]: folder must be relative "
                              "to the results root and summary the name of a CSV file in it")


def test_the_committed_referees_exist():
    for target in load_targets().values():
        for referee in target.referees:
            summary = pd.read_csv(REPO / "results" / referee.folder / referee.summary)
            assert {"dataset", "solver", "ours", "referee", "p", "flagged", "n"} <= set(
                summary.columns)


def test_a_damaged_or_linked_run_record_is_written_afresh(tmp_path, capsys):
    import json

    from dml_bench.reproduction.targets import _update_record

    target = tmp_path / "elsewhere.json"
    target.write_text("keep")
    record = tmp_path / "reproduce.json"
    record.symlink_to(target)
    _update_record(record, "t", {"wall_seconds": 1.0, "started_at": "x"}, resumed=True)
    assert target.read_text() == "keep" and not record.is_symlink()
    record.write_bytes(b"\xff{not json")
    _update_record(record, "t", {"wall_seconds": 2.0, "started_at": "y"}, resumed=True)
    assert json.loads(record.read_text()) == {"t": {"wall_seconds": 2.0, "started_at": "y"}}
    assert "is not a JSON record" in capsys.readouterr().err


def test_a_figures_sweep_shows_each_variants_mean_per_cell(tmp_path):
    """A figure has no paper numbers to count matches against: its declared sweep is shown as
    each variant's mean per (data set, method), the headline's column first and named so."""
    from dml_bench.reproduction.beside import sweep_table_lines, sweep_tables
    from dml_bench.reproduction.targets import Diagnosis

    folder = tmp_path / "fig_diagnosis"
    folder.mkdir()
    pd.DataFrame({"dataset": ["iris", "iris", "wine", "wine"], "solver": ["mdml"] * 4,
                  "shrinkage": ["hard", "soft", "hard", "soft"],
                  "error": [3.5, 4.25, 1.0, 2.0]}).to_csv(folder / "cells.csv", index=False)
    pd.DataFrame({"shrinkage": ["hard", "soft"], "cells": [2, 2],
                  "headline": [False, True]}).to_csv(folder / "variants.csv", index=False)
    diagnosis = Diagnosis("fig_diagnosis", "cells.csv", "variants.csv", ("shrinkage",))
    (path, table, axes), = sweep_tables(tmp_path, [diagnosis])
    assert list(table.columns) == ["dataset", "solver", "shrinkage soft (headline)",
                                   "shrinkage hard"]
    assert table.values.tolist() == [["iris", "mdml", 4.25, 3.5], ["wine", "mdml", 2.0, 1.0]]
    lines = sweep_table_lines({"sweep_tables": [(path, table, axes)]})
    assert "| data set | method | shrinkage soft (headline) | shrinkage hard |" in lines
    assert "| iris | mdml | 4.25 | 3.50 |" in lines and "| wine | mdml | 2.00 | 1.00 |" in lines
    assert lines[1].startswith(f"*Sensitivity sweep* (`{path}`, 2 protocol variants over "
                               "shrinkage;")
