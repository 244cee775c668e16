"""The leaderboard on a dask cluster: ``dmlbench leaderboard --backend dask --scheduler ADDR``
runs every tuning and final fit on the cluster, and its cells equal those of the same experiment
run sequentially (same seeds, splits and tuning → identical errors and chosen parameters).

A ``distributed.LocalCluster`` in this process, on a loopback TCP address that the board's cell
process reaches, stands for a user's cluster, with two single-threaded workers.
"""

from __future__ import annotations

import re
from collections import Counter

import dask
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from distributed import Client, LocalCluster, get_task_stream

from dml_bench.cli import main
from dml_bench.run.execution import SchedulerUnreachable, execution_backend
from dml_bench.leaderboard.board import load_board
from dml_bench.leaderboard.stats import board_table
from dml_bench.run.runner import run_experiment

pytestmark = pytest.mark.usefixtures("tmp_cache")

#: two bundled sets, two splits, a plain and a tuned method (its grid search runs as tasks too)
BOARD = {
    "name": "board_dask",
    "datasets": [{"name": "iris", "normalize": "zscore"}, {"name": "wine", "normalize": "zscore"}],
    "split": {"train_fraction": 0.7, "n_splits": 2, "seed": 0, "stratify": True},
    "constraints": {"generator": "knn_triplets", "params": {"k": 3}},
    "solvers": [{"name": "lda"}, {"name": "svm", "tune": {"grid": {"C": [1.0, 10.0]}, "cv": 3}}],
    "evaluation": {"knn_k": 3, "tie_break": "nearest"},
    "execution": {"n_jobs": 1, "backend": "sequential"},
    "leaderboard": {"fit_budget_seconds": 60, "memory_gb": 8},
}
N_FITS = 2 * 2 * 2  # data sets × methods × splits
N_TUNING_FITS = 2 * 2 * 2 * 3  # data sets × splits × SVM's grid × CV folds


def test_board_on_a_dask_scheduler_equals_the_sequential_board(tmp_path):
    config = tmp_path / "board.yaml"
    config.write_text(yaml.safe_dump(BOARD, sort_keys=False))
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, host="127.0.0.1",
                      protocol="tcp", dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster) as client, get_task_stream(client) as stream:
        result = CliRunner().invoke(main, ["leaderboard", "--config", str(config), "--backend",
                                           "dask", "--scheduler", cluster.scheduler_address,
                                           "--results-dir", str(tmp_path / "dask")])
        workers = set(client.scheduler_info()["workers"])
    assert result.exit_code == 0, result.output
    assert "board_dask: 4 cells run, 0 already done, 0 over budget, 0 cannot run, 0 failed" \
        in result.stdout
    # every fit ran on the cluster's workers, one dask task per fit, named after its function
    calls = Counter()
    for task in stream.data:
        assert task["status"] == "OK" and task["worker"] in workers
        calls[re.fullmatch(r"(\w+?)-[0-9a-f]+-[0-9a-f]{32}", task["key"]).group(1)] += 1
    assert calls == {"run_task": N_FITS, "run_tune_task": N_TUNING_FITS}

    # the reference: the board's experiment through the ordinary runner, sequential, in this
    # process (a board's cells are that runner restricted to each cell)
    board = load_board(config)
    summary = run_experiment(board.experiment, tmp_path / "sequential", echo=lambda message: None)
    assert (summary.ran, summary.failed) == (N_FITS, 0)

    runs = {name: pd.read_csv(tmp_path / name / "board_dask" / "runs.csv").set_index("task_id")
            .sort_index() for name in ("sequential", "dask")}
    assert len(runs["dask"]) == N_FITS
    assert list(runs["dask"].index) == list(runs["sequential"].index)  # ids from the settings
    columns = ["dataset", "split", "seed", "label", "solver_params", "n_train", "n_test",
               "tuned_params", "tuning_error", "error"]
    pd.testing.assert_frame_equal(runs["dask"][columns], runs["sequential"][columns],
                                  check_exact=True)
    assert runs["dask"]["tuned_params"].notna().sum() == N_FITS // 2  # the SVM's rows
    cells = {name: board_table(board, tmp_path / name / "board_dask")
             for name in ("sequential", "dask")}
    assert (cells["dask"]["status"] == "complete").all()
    timing = ["fit_time", "final_seconds", "tuning_seconds"]  # each run's own clock
    pd.testing.assert_frame_equal(cells["dask"].drop(columns=timing),
                                  cells["sequential"].drop(columns=timing), check_exact=True)
    assert (tmp_path / "dask" / "board_dask" / "leaderboard.html").stat().st_size > 0


def test_an_unreachable_scheduler_is_one_line():
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}), \
            pytest.raises(SchedulerUnreachable, match=r"^cannot connect to the dask scheduler "
                                                      r"tcp://127\.0\.0\.1:1: OSError: "):
        with execution_backend("dask", "tcp://127.0.0.1:1", n_jobs=1):
            pass


def test_a_scheduler_without_the_dask_backend_is_refused(tmp_path):
    config = tmp_path / "board.yaml"
    config.write_text(yaml.safe_dump(BOARD, sort_keys=False))
    result = CliRunner().invoke(main, ["leaderboard", "--config", str(config), "--scheduler",
                                       "tcp://127.0.0.1:8786", "--results-dir", str(tmp_path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr == ("error: --scheduler tcp://127.0.0.1:8786 needs --backend dask (the "
                             "board's backend is sequential)\n")
    assert not (tmp_path / "board_dask").exists()  # refused before anything ran
