"""The command line as a new user meets it: overrides, results on screen, shipped configs from
any folder, `init`, `python -m dml_bench`, one-line usage errors, retrieval configs."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from dml_bench.cli import main
from dml_bench.leaderboard.board import load_board
from dml_bench.experiment.config import ConfigError, apply_overrides, load_config, parse_config

pytestmark = pytest.mark.usefixtures("tmp_cache")

TINY = {"name": "tiny", "datasets": ["wine"], "solvers": ["euclidean", {"name": "lda"}],
        "split": {"n_splits": 2, "seed": 0}, "execution": {"n_jobs": 1}}


def invoke(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result, result.stdout + result.stderr


# ------------------------------------------------------------------------------ overrides


def test_overrides_set_values_by_path_index_and_label():
    data = {"solvers": ["euclidean", {"name": "itml", "label": "it"}], "split": {"n_splits": 10}}
    out = apply_overrides(data, ["split.n_splits=2", "solvers.it.params.gamma=1e-3",
                                 "solvers[0].params.x=[1, 2]", "execution.n_jobs=1",
                                 "description='0.5'"])
    assert out["split"]["n_splits"] == 2 and out["execution"] == {"n_jobs": 1}
    assert out["solvers"][1]["params"] == {"gamma": 0.001}
    assert out["solvers"][0] == {"name": "euclidean", "params": {"x": [1, 2]}}
    assert out["description"] == "0.5"  # quoted: a string
    assert data["split"]["n_splits"] == 10  # the file's data are not changed


@pytest.mark.parametrize("override, where, problem", [
    ("split", "<top>", "expected key.path=value"),
    ("solvers.5.params.x=1", "solvers.5", "out of range"),
    ("solvers.nope.params.x=1", "solvers.nope", "no single entry labelled or named 'nope'"),
    ("split.n_splits.x=1", "split.n_splits", "not a mapping or a list"),
])
def test_an_override_off_the_config_is_one_line(override, where, problem):
    with pytest.raises(ConfigError) as info:
        apply_overrides({"solvers": ["euclidean"], "split": {"n_splits": 10}}, [override], "c")
    assert str(info.value).startswith(f"c: {where}: ") and problem in str(info.value)


def test_overrides_are_validated_like_the_yaml_and_recorded(tmp_path, write_yaml):
    cfg = write_yaml(TINY, "tiny.yaml")
    result, out = invoke("validate", cfg, "split.n_splits=3")
    assert result.exit_code == 0 and "6 tasks" in out
    result, out = invoke("validate", cfg, "split.n_splits=0")
    assert result.exit_code == 2 and out.strip().endswith("split.n_splits: must be at least 1")
    result, out = invoke("validate", cfg, 'solvers.lda.params.solver="nope"')
    assert result.exit_code == 2 and "solvers[1].params.solver: must be" in out
    assert out.count("\n") == 1 and "Traceback" not in out
    result, out = invoke("run", cfg, "split.n_splits=1", "--results-dir", tmp_path / "r")
    assert result.exit_code == 0, out
    written = yaml.safe_load((tmp_path / "r" / "tiny" / "config.yaml").read_text())
    assert written["split"]["n_splits"] == 1
    assert len(pd.read_csv(tmp_path / "r" / "tiny" / "runs.csv")) == 2


# ------------------------------------------------------------------------ results on screen


def test_run_prints_its_error_and_time_table(tmp_path, write_yaml):
    result, out = invoke("run", write_yaml(TINY, "tiny.yaml"), "--results-dir", tmp_path)
    assert result.exit_code == 0, out
    summary = pd.read_csv(tmp_path / "tiny" / "summary.csv").set_index("label")
    assert "test error (%, mean ± std over the splits):" in out and "fit time (s" in out
    row = next(line for line in out.splitlines() if line.startswith("wine") and "±" in line)
    for label in ("euclidean", "lda"):
        mean, std = summary.loc[label, ["error_mean", "error_std"]]
        assert f"{mean:.2f} ± {std:.2f}" in row


# ----------------------------------------------------------------------- from any folder


def test_shipped_configs_are_found_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("configs/quickstart.yaml", "quickstart.yaml", "configs/ying2012_table4.yaml"):
        result, out = invoke("validate", name)
        assert result.exit_code == 0 and "ok" in out, out
    assert load_board("configs/leaderboard_quick.yaml").experiment.name == "leaderboard_quick"
    local = tmp_path / "configs" / "quickstart.yaml"  # a local copy of the same name comes first
    local.parent.mkdir()
    local.write_text(yaml.safe_dump({**TINY, "name": "mine"}))
    assert load_config("configs/quickstart.yaml").name == "mine"
    result, out = invoke("validate", "configs/nope.yaml")
    assert result.exit_code == 2 and "file not found" in out


def test_init_writes_a_starter_config_that_validates_and_never_replaces(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result, out = invoke("init")
    assert result.exit_code == 0 and (tmp_path / "experiment.yaml").is_file(), out
    text = (tmp_path / "experiment.yaml").read_text()
    assert text.count("#") > 10  # commented
    exp = load_config(tmp_path / "experiment.yaml", check_data=False)
    assert exp.name == "experiment" and exp.datasets[0].name == "wine"
    result, out = invoke("init")
    assert result.exit_code == 2 and "exists" in out and out.count("\n") == 1
    assert (tmp_path / "experiment.yaml").read_text() == text
    (tmp_path / "flowers.csv").write_text("a,b,species\n1,2,x\n2,3,y\n3,4,x\n4,5,y\n")
    result, out = invoke("init", "mine.yaml", "--data", "flowers.csv")
    assert result.exit_code == 2 and "--label-column" in out
    result, out = invoke("init", "mine.yaml", "--data", "flowers.csv", "--label-column", "species")
    assert result.exit_code == 0, out
    entry = yaml.safe_load((tmp_path / "mine.yaml").read_text())["datasets"][0]
    assert entry == {"path": "flowers.csv", "label_column": "species"}


# ---------------------------------------------------------------------- the entry points


def test_python_dash_m_runs_the_command():
    done = subprocess.run([sys.executable, "-m", "dml_bench", "--version"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("dmlbench, version")


@pytest.mark.parametrize("args, problem", [
    (["run", "x.yaml", "--backend", "foo"], "Invalid value for '--backend'"),
    (["run"], "Missing argument 'CONFIG'"),
    (["nosuch"], "No such command 'nosuch'"),
    (["reproduce", "--bogus"], "--bogus"),  # click words it "No such option[:] ['--bogus']"
])
def test_a_bad_option_or_argument_is_one_line(args, problem):
    result, out = invoke(*args)
    assert result.exit_code == 2 and out.count("\n") == 1 and problem in out, out
    assert args[0] != "reproduce" or "No such option" in out
    assert out.startswith("error: ") and "--help" in out


def test_reproduce_lists_its_targets():
    result, out = invoke("reproduce", "--list")
    assert result.exit_code == 0 and "ying2012-table4" in out and "shen2010-fig3" in out


# --------------------------------------------------------------------------- retrieval


RETRIEVAL = {"name": "r", "datasets": ["wine"], "solvers": ["euclidean"],
             "evaluation": {"task": "retrieval", "query_class": "class_0", "top": 5}}


def test_a_retrieval_config_needs_its_query_class_and_keeps_its_keys():
    exp = parse_config(RETRIEVAL, check_data=False)
    assert exp.kind == "retrieval" and exp.evaluation.retrieval.top == 5
    assert parse_config(exp.to_dict(), check_data=False) == exp
    with pytest.raises(ConfigError, match="evaluation.query_class: a retrieval experiment names"):
        parse_config({**RETRIEVAL, "evaluation": {"task": "retrieval"}}, check_data=False)
    with pytest.raises(ConfigError, match=r"\['top'\] apply to `task: retrieval` only \(this is a "
                                          r"k-NN experiment\)"):
        parse_config({**RETRIEVAL, "evaluation": {"top": 5}}, check_data=False)


def test_the_commands_work_from_an_empty_folder(tmp_path, mirror):
    """A new user's first commands, in a folder of their own with the package installed."""
    env = {**__import__("os").environ, "DMLBENCH_DATA_MIRROR": str(mirror),
           "DMLBENCH_CACHE": str(tmp_path / "home" / "cache")}
    tmp_path = tmp_path / "home"
    tmp_path.mkdir()

    def dmlbench(*args):
        done = subprocess.run([sys.executable, "-m", "dml_bench", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    assert "Usage:" in dmlbench("--help")
    out = dmlbench("reproduce", "ying2012-table4", "--quick", "-j", "1")
    assert "compared cells match" in out
    assert (tmp_path / "results" / "ying2012_table4_quick" / "runs.csv").is_file()
    dmlbench("leaderboard", "--quick")
    assert (tmp_path / "results" / "leaderboard_quick" / "leaderboard.html").is_file()
    dmlbench("init")
    out = dmlbench("run", "experiment.yaml", "split.n_splits=1", "solvers.itml.tune.cv=2")
    assert "test error (%" in out and (tmp_path / "results" / "experiment" / "runs.csv").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "experiment.yaml", "results"]
