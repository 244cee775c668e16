"""An OpenML benchmark suite as a config's data sets (``{openml_suite: OpenML-CC18}``), offline.

The suite's dataset ids come from a stand-in for ``openml.study.get_suite`` (an object with
``.data``, as openml's ``OpenMLBenchmarkSuite``); their sizes from openml's own ``list_datasets``,
which parses a ``data/list`` answer given in place of the server's (``_perform_api_call``); the
data from an openml cache laid out by ``conftest.lay_out_openml``, openml unable to connect
(``openml_cache``). The suite lists a large dataset first (not in the cache) and wine second, so
the expansion's smallest-first order and its size limits are visible.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import openml
import pandas as pd
import pytest
import requests
import yaml
from click.testing import CliRunner
from conftest import OPENML_WINE_ID, lay_out_openml

from dml_bench.cli import main
from dml_bench.experiment.config import load_config, parse_config
from dml_bench.experiment.schema import ConfigError
from dml_bench.datasets import DataNotAvailable
from dml_bench.leaderboard.board import planned_sizes

pytestmark = pytest.mark.usefixtures("tmp_cache")

REPO = Path(__file__).resolve().parents[1]
SUITE = "OpenML-CC18"
BIG = 9002  # listed first by the suite, 5000 × 20 by its qualities, not in the cache
QUALITIES = {OPENML_WINE_ID: ("wine", 178, 14), BIG: ("big", 5000, 21)}  # features incl. class


@pytest.fixture
def suite(openml_cache, monkeypatch) -> list:
    """Wine laid out in the cache; ``SUITE`` lists ``[BIG, wine]``. Returns the suites asked."""
    lay_out_openml(openml_cache)
    asked = []

    def get_suite(suite_id):
        asked.append(suite_id)
        return SimpleNamespace(data=[BIG, OPENML_WINE_ID])

    real = openml._api_calls._perform_api_call

    def answer(call, method, *args, **kwargs):  # OpenML's answer to data/list/.../data_id/<ids>
        if not call.startswith("data/list/"):
            return real(call, method, *args, **kwargs)  # refused: openml cannot connect
        ids = [int(i) for i in call.rpartition("data_id/")[2].split(",")]
        rows = "".join(
            f"<oml:dataset><oml:did>{did}</oml:did><oml:name>{name}</oml:name>"
            "<oml:version>1</oml:version><oml:status>active</oml:status>"
            f'<oml:quality name="NumberOfInstances">{n}.0</oml:quality>'
            f'<oml:quality name="NumberOfFeatures">{d}.0</oml:quality></oml:dataset>'
            for did, (name, n, d) in QUALITIES.items() if did in ids)
        return f'<oml:data xmlns:oml="http://openml.org/openml">{rows}</oml:data>'

    monkeypatch.setattr(openml.study, "get_suite", get_suite)
    monkeypatch.setattr(openml._api_calls, "_perform_api_call", answer)
    return asked


def config(datasets: list, **extra) -> dict:
    return {"name": "suite", "datasets": datasets, "solvers": ["euclidean"], **extra}


def test_suite_entry_expands_smallest_first_with_its_options(suite, write_yaml):
    path = write_yaml(config([{"openml_suite": SUITE, "normalize": "none", "pca": 5,
                               "n_splits": 2, "solvers": ["euclidean"]}, "iris"]))
    exp = load_config(path, check_data=False)
    assert suite == [SUITE]
    assert [(d.name, d.label) for d in exp.datasets] == [
        (f"openml:{OPENML_WINE_ID}", f"openml_{OPENML_WINE_ID}"),
        (f"openml:{BIG}", f"openml_{BIG}"),
        ("iris", "iris")]
    for d in exp.datasets[:2]:  # the suite entry's options, copied to each of its datasets
        assert (d.preprocessing.normalize, d.preprocessing.pca, d.n_splits, d.solvers) == \
            ("none", 5, 2, ("euclidean",))
    assert exp.datasets[2].preprocessing.normalize == "zscore" and exp.datasets[2].n_splits is None
    # the resolved config (written next to the results) lists the datasets, not the suite
    assert [d["name"] for d in exp.to_dict()["datasets"]] == [f"openml:{OPENML_WINE_ID}",
                                                             f"openml:{BIG}", "iris"]


@pytest.mark.parametrize("limits, kept", [
    ({"max_datasets": 1}, [OPENML_WINE_ID]), ({"max_instances": 178}, [OPENML_WINE_ID]),
    ({"max_instances": 177}, []), ({"max_features": 20}, [OPENML_WINE_ID, BIG]),
    ({"max_features": 19, "max_instances": 10 ** 6, "max_datasets": 5}, [OPENML_WINE_ID])])
def test_size_limits_select_by_openml_qualities(suite, limits, kept):
    entry = {"openml_suite": 99, **limits}  # an id names a suite as well as its alias
    if not kept:
        with pytest.raises(ConfigError, match=r"^<config>: datasets\[0\]\.openml_suite: OpenML "
                                              r"suite 99 has no dataset within max_instances "
                                              r"= 177$"):
            parse_config(config([entry]), check_data=False)
        return
    exp = parse_config(config([entry]), check_data=False)
    assert [d.name for d in exp.datasets] == [f"openml:{i}" for i in kept] and suite == [99]


@pytest.mark.parametrize("entry, where, problem", [
    ({"openml_suite": True}, "datasets[0].openml_suite", "expected an OpenML suite alias or id"),
    ({"openml_suite": SUITE, "label": "cc18"}, "datasets[0]", "label cannot go with"),
    ({"openml_suite": SUITE, "openml": 61}, "datasets[0]", "openml cannot go with"),
    ({"openml_suite": SUITE, "max_datasets": 0}, "datasets[0].max_datasets", "expected a positive"),
    ({"openml_suite": SUITE, "normalise": "none"}, "datasets[0].normalise", "unknown key"),
])
def test_bad_suite_entries_are_config_errors_before_any_request(suite, entry, where, problem):
    with pytest.raises(ConfigError, match=f"^<config>: {re.escape(where)}: {re.escape(problem)}"):
        parse_config(config([entry]), check_data=False)
    assert suite == []  # refused before the network


def test_suite_runs_through_dmlbench_run_as_its_openml_entries(suite, tmp_path, write_yaml):
    common = {"split": {"n_splits": 2, "seed": 3}, "execution": {"backend": "sequential"}}
    runs = {}
    for name, entry in (("by_suite", {"openml_suite": SUITE, "max_datasets": 1}),
                        ("by_id", {"openml": OPENML_WINE_ID})):
        path = write_yaml({**config([entry], **common), "name": name}, f"{name}.yaml")
        result = CliRunner().invoke(main, ["run", str(path), "--results-dir", str(tmp_path / "r")])
        assert result.exit_code == 0, result.output
        assert f"{name}: 2 tasks run, 0 already done, 0 failed, 0 dataset×solver skipped" \
            in result.stdout
        runs[name] = pd.read_csv(tmp_path / "r" / name / "runs.csv").sort_values("seed")
    # the same tasks as the `openml:` entry (whose errors test_openml_source checks against
    # scikit-learn): same data set, splits, sizes and errors
    columns = ["dataset", "seed", "n_train", "n_test", "n_features", "n_classes", "error"]
    pd.testing.assert_frame_equal(runs["by_suite"][columns].reset_index(drop=True),
                                  runs["by_id"][columns].reset_index(drop=True))
    assert set(runs["by_suite"]["dataset"]) == {f"openml_{OPENML_WINE_ID}"}


@pytest.fixture
def board(tmp_path):
    """A board of the quick tier's protocol on the suite's smallest data set: Euclidean, and LDA
    under a memory rule that it breaks (any d×d matrix exceeds it), 2 splits, one process."""
    data = yaml.safe_load((REPO / "configs" / "leaderboard_quick.yaml").read_text())
    data["datasets"] = [{"openml_suite": SUITE, "max_datasets": 1, "normalize": "zscore"}]
    data["solvers"] = [{"name": "euclidean"}, {"name": "lda"}]
    data["split"]["n_splits"] = 2
    data["execution"] = {"n_jobs": 1, "backend": "sequential"}
    data["leaderboard"] = {"fit_budget_seconds": 60, "memory_gb": 1e-7,
                           "footprint": {"default": {"dd": 8}, "euclidean": {}}}
    path = tmp_path / "board.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("command", ["run", "leaderboard"])
def test_suite_without_network_is_one_line_and_exit_2(openml_cache, monkeypatch, board, command,
                                                      write_yaml):
    def get_suite(suite_id):
        raise requests.exceptions.ConnectionError("Max retries exceeded with url: /api/v1/xml/"
                                                  "study/OpenML-CC18\n(name resolution failed)")

    monkeypatch.setattr(openml.study, "get_suite", get_suite)
    if command == "run":
        board = write_yaml(config([{"openml_suite": SUITE}]))  # the same entry in a run config
    args = [command, str(board)] if command == "run" else [command, "--config", str(board)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit)
    line = result.output.strip()
    assert "\n" not in line and "Traceback" not in result.output
    assert line.startswith(f"error: {board}: datasets[0].openml_suite: OpenML suite "
                           f"'{SUITE}': cannot be listed (ConnectionError: Max retries exceeded")
    assert line.endswith("it needs network access to OpenML")


def test_leaderboard_runs_a_suite_with_its_rules(suite, board, tmp_path, openml_cache,
                                                monkeypatch):
    # the board's cells run in fresh interpreters, whose openml has its configured server (not
    # the test's): wine is laid out under that server's cache folder too, so they read it there
    refused = openml.config.server
    monkeypatch.setattr(openml.config, "server", subprocess.run(
        [sys.executable, "-c", "import openml; print(openml.config.server)"], check=True,
        capture_output=True, text=True).stdout.strip())
    lay_out_openml(openml_cache)
    monkeypatch.setattr(openml.config, "server", refused)
    result = CliRunner().invoke(main, ["leaderboard", "--config", str(board),
                                       "--results-dir", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert "1 cells run, 0 already done, 0 over budget, 1 cannot run" in result.output
    out = tmp_path / "r" / "leaderboard_quick"
    table = pd.read_csv(out / "board.csv").set_index(["dataset", "method"])
    wine = f"openml_{OPENML_WINE_ID}"
    assert table.loc[(wine, "euclidean"), "status"] == "complete"
    assert table.loc[(wine, "euclidean"), "n_done"] == 2
    # the memory rule reads the expanded entry's size: n_train = ⌈0.7 · 178⌉, d = 13
    assert table.loc[(wine, "lda"), "status"] == "cannot_run"
    assert "for n_train = 125, d = 13 exceeds" in table.loc[(wine, "lda"), "reason"]
    assert list(pd.read_csv(out / "runs.csv")["dataset"].unique()) == [wine]


def test_board_sizes_leave_out_data_sets_without_data(suite):
    exp = parse_config(config([{"openml_suite": SUITE}]), check_data=False)
    with pytest.raises(DataNotAvailable, match=f"dataset 'openml:{BIG}': not in openml's cache"):
        planned_sizes(exp)  # BIG is not cached and OpenML cannot be reached
    assert planned_sizes(exp, {f"openml_{BIG}"}) == {f"openml_{OPENML_WINE_ID}":
                                               (math.ceil(0.7 * 178), 13)}
