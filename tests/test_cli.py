"""The ``dmlbench`` command line (click.testing.CliRunner on ``dml_bench.cli.main``)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from click.testing import CliRunner

from dml_bench.report.check import write_baseline
from dml_bench.cli import main

pytestmark = pytest.mark.usefixtures("tmp_cache")

TINY = {
    "name": "tiny",
    "datasets": [{"name": "wine"}, {"name": "iris"}],
    "split": {"n_splits": 3, "seed": 2},
    "solvers": [{"name": "euclidean"}, {"name": "dml_eig", "params": {"max_iter": 20}}],
    "execution": {"n_jobs": 1, "backend": "sequential"},
}


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def tiny_results(tmp_path, write_yaml):
    """``dmlbench run`` of TINY into tmp_path/results; returns results/tiny."""
    cfg = write_yaml(TINY, "tiny.yaml")
    result = invoke("run", cfg, "--results-dir", tmp_path / "results")
    assert result.exit_code == 0, result.output
    # 2 datasets × 3 splits × 2 solvers
    assert "tiny: 12 tasks run, 0 already done, 0 failed, 0 dataset×solver skipped" in result.stdout
    return tmp_path / "results" / "tiny"


def test_run_accepts_bare_dataset_and_solver_names(tmp_path, write_yaml):
    cfg = write_yaml("name: bare\ndatasets: [wine]\nsolvers: [dml_eig, euclidean]\n"
                     "split: {n_splits: 2}\nexecution: {backend: sequential}\n", "bare.yaml")
    result = invoke("run", cfg, "--results-dir", tmp_path / "results")
    assert result.exit_code == 0, result.output
    assert "bare: 4 tasks run, 0 already done, 0 failed" in result.stdout
    runs = pd.read_csv(tmp_path / "results" / "bare" / "runs.csv")
    assert sorted(runs["label"].unique()) == ["dml_eig", "euclidean"] and len(runs) == 4


@pytest.mark.parametrize("command", [[], ["run"], ["report"], ["check"], ["validate"],
                                     ["datasets"], ["fetch"], ["solvers"]])
def test_help(command):
    for flag in ("--help", "-h"):
        result = invoke(*command, flag)
        assert result.exit_code == 0, result.output
        assert result.stdout.startswith("Usage: ")
        assert "Traceback" not in result.output


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0 and "dmlbench" in result.stdout


def test_solvers_lists_parameters(planned):
    result = invoke("solvers")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    euc = next(i for i, line in enumerate(lines) if line.startswith("euclidean "))
    dml = next(i for i, line in enumerate(lines) if line.startswith("dml_eig "))
    assert "(no parameters)" in lines[euc + 1]
    # Ying & Li (2012) §5 settings are the defaults: mu = 1e-4, 1000 iterations
    params = lines[dml + 1]
    assert "mu=0.0001" in params and "max_iter=1000" in params and "stopping=" in params
    assert "[pairs]" in lines[dml]
    assert any(line.startswith(f"{planned} — not implemented") for line in lines)


def test_datasets_lists_bundled_and_missing(monkeypatch):
    monkeypatch.delenv("DMLBENCH_DATA_MIRROR", raising=False)
    result = invoke("datasets")
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line.split() for line in result.stdout.splitlines()[1:]}
    assert rows["wine"][1:3] == ["178×13", "3"] and rows["wine"][-1] == "bundled"
    assert rows["iris"][1:3] == ["150×4", "3"] and rows["iris"][-1] == "bundled"
    assert result.stdout.splitlines()[0].split() == ["name", "n×d", "classes", "papers",
                                                     "availability"]
    # an empty cache and no mirror: file-based datasets need the network
    assert " ".join(rows["pima"][-2:]) == "network needed"


def test_datasets_with_mirror(mirror):
    if not (mirror / "pima").exists():
        pytest.skip(f"the mirror {mirror} has no pima folder")
    result = invoke("--data-mirror", mirror, "datasets")
    assert result.exit_code == 0, result.output
    pima = next(line for line in result.stdout.splitlines() if line.startswith("pima "))
    assert pima.split()[1] == "768×8" and pima.endswith("mirror")


def test_fetch_bundled_and_unknown():
    ok = invoke("fetch", "wine")
    assert ok.exit_code == 0 and "wine: nothing to fetch (bundled)" in ok.stdout
    bad = invoke("fetch", "wne")
    assert bad.exit_code == 1
    assert bad.stderr.startswith("error: unknown dataset 'wne'. Did you mean 'wine'?")
    assert "Traceback" not in bad.output


def test_run_then_report(tiny_results):
    runs = pd.read_csv(tiny_results / "runs.csv")
    for name in ("summary.csv", "table.tex"):
        (tiny_results / name).unlink()
    result = invoke("report", tiny_results)
    assert result.exit_code == 0, result.output
    assert f"summary.csv: {tiny_results / 'summary.csv'}" in result.stdout
    summary = pd.read_csv(tiny_results / "summary.csv")
    assert len(summary) == 4  # 2 datasets × 2 solvers
    for row in summary.itertuples():
        errors = runs[(runs["dataset"] == row.dataset) & (runs["label"] == row.label)]["error"]
        assert row.error_n == 3
        assert row.error_mean == pytest.approx(100 * errors.mean())  # percent
    tex = (tiny_results / "table.tex").read_text()
    assert "\\begin{tabular}" in tex and "wine" in tex and "iris" in tex and "dml\\_eig" in tex


def test_run_again_skips(tiny_results, tmp_path):
    result = invoke("run", tmp_path / "tiny.yaml", "--results-dir", tmp_path / "results")
    assert result.exit_code == 0, result.output
    assert "tiny: 0 tasks run, 12 already done, 0 failed" in result.stdout


def test_run_one_dataset_of_the_config(tmp_path, write_yaml):
    cfg = write_yaml(TINY, "tiny.yaml")
    bad = invoke("run", cfg, "--dataset", "irsi", "--results-dir", tmp_path / "results")
    assert bad.exit_code == 2 and "Did you mean 'iris'" in bad.output and "wine" in bad.output
    result = invoke("run", cfg, "--dataset", "iris", "--results-dir", tmp_path / "results")
    assert result.exit_code == 0, result.output
    assert "tiny: 6 tasks run, 0 already done" in result.stdout
    assert set(pd.read_csv(tmp_path / "results" / "tiny" / "runs.csv")["dataset"]) == {"iris"}
    rest = invoke("run", cfg, "--results-dir", tmp_path / "results")
    assert "tiny: 6 tasks run, 6 already done" in rest.stdout


def test_run_one_solver_of_the_config(tmp_path, write_yaml):
    cfg = write_yaml(TINY, "tiny.yaml")
    bad = invoke("run", cfg, "--solver", "dml_ieg", "--results-dir", tmp_path / "results")
    assert bad.exit_code == 2 and "Did you mean 'dml_eig'" in bad.output and "euclidean" in bad.output
    result = invoke("run", cfg, "--solver", "euclidean", "--dataset", "wine",
                    "--results-dir", tmp_path / "results")
    assert result.exit_code == 0, result.output
    assert "tiny: 3 tasks run, 0 already done" in result.stdout
    runs = pd.read_csv(tmp_path / "results" / "tiny" / "runs.csv")
    assert set(zip(runs["dataset"], runs["label"])) == {("wine", "euclidean")}
    rest = invoke("run", cfg, "--solver", "dml_eig", "--results-dir", tmp_path / "results")
    assert "tiny: 6 tasks run, 0 already done" in rest.stdout


def test_run_bad_config_exits_2(tmp_path, write_yaml):
    cfg = write_yaml({**TINY, "solver": TINY["solvers"]}, "typo.yaml")
    result = invoke("run", cfg, "--results-dir", tmp_path / "results")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and "did you mean 'solvers'" in result.stderr
    assert not (tmp_path / "results").exists()


def test_run_with_failures_exits_1(tmp_path, write_yaml):
    cfg = write_yaml({**TINY, "solvers": [{"name": "euclidean"},
                                          {"name": "sdpmetric", "params": {"c1": 0.5, "c2": 0.1}}]})
    result = invoke("run", cfg, "--results-dir", tmp_path / "results")
    assert result.exit_code == 1
    assert "6 tasks run, 0 already done, 6 failed" in result.stdout
    assert "error: 6 task(s) failed" in result.stderr and "errors.csv" in result.stderr


def test_check_passes_on_own_baseline(tiny_results, tmp_path):
    baseline = write_baseline(tiny_results, tmp_path / "baseline.csv")
    result = invoke("check", tiny_results, "--baseline", baseline)
    assert result.exit_code == 0, result.output
    assert "ok: no cell worse than" in result.stdout


def test_check_fails_on_regression(tiny_results, tmp_path):
    baseline = write_baseline(tiny_results, tmp_path / "baseline.csv")
    base = pd.read_csv(baseline)
    # make the cell with the largest error look better than achievable: 0 % error on every split
    i = base["error_mean"].idxmax()
    ours, std, n, n_test = base.loc[i, ["error_mean", "error_std", "error_n", "n_test_mean"]]
    # tolerance by hand: max(2·std/√n of the baseline, one test point on one split in percent)
    tol = max(2 * std / math.sqrt(n), 100 / (n_test * n))
    assert ours > tol, "precondition: the cell must be clearly above 0 %"
    base.loc[i, ["error_mean", "error_std"]] = [0.0, 0.0]
    base.to_csv(baseline, index=False)
    result = invoke("check", tiny_results, "--baseline", baseline)
    assert result.exit_code == 1
    assert "1 cell(s) regressed" in result.stderr and "worse" in result.stderr
    assert base.loc[i, "dataset"] in result.stderr and "Traceback" not in result.output


def test_check_fails_on_missing_cell(tiny_results, tmp_path):
    baseline = write_baseline(tiny_results, tmp_path / "baseline.csv")
    base = pd.read_csv(baseline)
    extra = base.iloc[[0]].assign(dataset="ghost")
    pd.concat([base, extra]).to_csv(baseline, index=False)
    result = invoke("check", tiny_results, "--baseline", baseline)
    assert result.exit_code == 1
    assert "missing" in result.stderr and "ghost" in result.stderr


def test_report_without_runs(tmp_path):
    (tmp_path / "empty").mkdir()
    result = invoke("report", tmp_path / "empty")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: no runs to report")


def test_an_exception_that_a_sigterm_caused_exits_like_the_sigterm(monkeypatch):
    """SIGTERM raised inside C code that calls back into Python (pandas' CSV tokenizer, seen in
    CI) can surface as a TypeError: it must still end the run with status 128 + 15, silently."""
    import signal

    import click

    from dml_bench.cli import base as cli

    @click.group(cls=cli._OneLineErrors)
    def group():
        pass

    @group.command()
    def work():
        cli._TERMINATED.append(signal.SIGTERM)
        raise TypeError("raise: exception class must be a subclass of BaseException")

    monkeypatch.setattr(cli, "_TERMINATED", [])
    monkeypatch.delenv("DMLBENCH_DEBUG", raising=False)
    result = CliRunner().invoke(group, ["work"])
    assert result.exit_code == 128 + signal.SIGTERM and "Traceback" not in result.output


JOBS = "must be a positive number of workers or -1 (all cores)"
FORCE_SUPERSEDE = ("--force and --supersede contradict each other: --force recomputes every "
                   "task, --supersede keeps the finished ones (both move the rows of tasks the "
                   "config no longer has aside); give one")
RESTRICTED = {**TINY, "datasets": [{"name": "wine", "solvers": ["euclidean"]}, {"name": "iris"}]}


@pytest.mark.parametrize("options, line", [
    (["-j", "0"], f"-j 0: {JOBS}"),
    (["-j", "-4"], f"-j -4: {JOBS}"),
    (["--scheduler", "tcp://127.0.0.1:1"],
     "--scheduler tcp://127.0.0.1:1 needs --backend dask (the config's backend is sequential)"),
    (["--timing", "-j", "2"], "--timing runs one task at a time so that fit times compare: it "
                              "cannot be combined with -j 2"),
    (["--timing", "--backend", "dask"], "--timing runs one task at a time in this process so "
                                        "that fit times compare: it cannot be combined with "
                                        "--backend dask"),
    (["--force", "--supersede"], FORCE_SUPERSEDE),
    (["--dataset", "wine", "--solver", "dml_eig"],
     "--dataset wine --solver dml_eig select no task of tiny: the chosen datasets' entries "
     "restrict their solvers (`solvers:`) to others"),
])
def test_contradictory_run_options_are_refused_before_any_work(tmp_path, write_yaml, options,
                                                               line):
    cfg = write_yaml(RESTRICTED, "tiny.yaml")
    result = invoke("run", cfg, *options, "--results-dir", tmp_path / "results")
    assert result.exit_code == 2
    assert result.output == f"error: {line}\n"
    assert not (tmp_path / "results").exists()


def test_all_cores_is_still_a_number_of_jobs(tmp_path, write_yaml):
    cfg = write_yaml({**TINY, "datasets": [{"name": "wine"}], "solvers": [{"name": "euclidean"}]},
                     "tiny.yaml")
    result = invoke("run", cfg, "-j", "-1", "--results-dir", tmp_path / "results")
    assert result.exit_code == 0, result.output
    assert "tiny: 3 tasks run, 0 already done, 0 failed" in result.stdout


@pytest.mark.parametrize("command, line", [
    (["leaderboard", "-j", "0"], f"-j 0: {JOBS}"),
    (["reproduce", "ying2012-table4", "-j", "-2"], f"-j -2: {JOBS}"),
    (["reproduce", "ying2012-table4", "--force", "--supersede"], FORCE_SUPERSEDE),
])
def test_contradictory_options_of_the_other_runs_are_refused(tmp_path, monkeypatch, command,
                                                             line):
    monkeypatch.chdir(tmp_path)
    result = invoke(*command, "--results-dir", tmp_path / "results")
    assert result.exit_code == 2
    assert result.output == f"error: {line}\n"
    assert list(tmp_path.iterdir()) == [tmp_path / "dataset-cache"]
