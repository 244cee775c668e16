"""``dmlbench leaderboard``: every method on every data set under one protocol."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from .base import _check_jobs, _exit_on_sigterm, _fail, main


@main.command()
@click.option("--quick", is_flag=True,
              help="The CI tier (configs/leaderboard_quick.yaml: bundled sets, 3 splits, few "
                   "methods) into RESULTS_DIR/leaderboard_quick.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="Board config (default configs/leaderboard.yaml, or _quick with --quick).")
@click.option("--dataset", "datasets", multiple=True, metavar="LABEL",
              help="Run only this data set (repeatable); the statistics list what is left.")
@click.option("--solver", "solvers", multiple=True, metavar="LABEL",
              help="Run only this method (repeatable), likewise.")
@click.option("-j", "--n-jobs", type=int, help="Parallel tasks within a cell.")
@click.option("--backend", type=click.Choice(["loky", "dask", "sequential"]),
              help="Where the tasks run (overrides execution.backend): loky processes, this "
                   "process, or dask workers. dask without --scheduler: a loopback-only "
                   "LocalCluster of -j single-threaded workers.")
@click.option("--scheduler", metavar="ADDR",
              help="dask scheduler address, e.g. tcp://host:8786 (needs --backend dask or "
                   "execution.backend: dask); the cluster runs as many tasks at once as its "
                   "workers have threads, whatever -j says.")
@click.option("--budget", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Per-fit wall-clock budget (overrides leaderboard.fit_budget_seconds).")
@click.option("--stats-only", is_flag=True,
              help="Only write the statistics of what has run (and move finished tasks' tuning "
                   "fits to tuning_done.csv).")
@click.option("--supersede", is_flag=True,
              help="Move finished rows of tasks the board no longer has (a changed protocol "
                   "setting) to *_superseded.csv; without it such a run stops and lists them.")
@click.option("--retry", is_flag=True,
              help="Run the selected cells (--dataset and --solver) again although they are "
                   "recorded over budget or complete, e.g. after a change to the method; the "
                   "record says so until they end, and their finished rows move to "
                   "runs_superseded.csv.")
@click.option("--results-dir", "--out", type=click.Path(file_okay=False), default="results",
              show_default=True)
@click.pass_obj
def leaderboard(obj, quick, config_path, datasets, solvers, n_jobs, backend, scheduler, budget,
                stats_only, supersede, retry, results_dir):
    """Run the leaderboard (every method, every data set, one protocol), then its statistics.

    Cells run through the ordinary runner (resumable, in parts, shared by concurrent runs); a
    fit over the budget marks its cell over budget (–) and a cell that breaks the memory rule is
    marked cannot run. Writes ranks, Friedman/Nemenyi, pairwise Wilcoxon, the critical-difference
    diagram, the time–rank plot and leaderboard.html into RESULTS_DIR/<board name>.
    """
    from ..leaderboard.board import load_board
    from ..leaderboard.page import write_board_report
    from ..leaderboard.run import compact_tuning_log, run_board
    from ..run.execution import check_labels
    from ..run.runner import Selection

    _exit_on_sigterm()
    _check_jobs(n_jobs)
    config_path = config_path or f"configs/leaderboard{'_quick' if quick else ''}.yaml"
    board = load_board(config_path)
    board = replace(board, budget=budget or board.budget,
                    experiment=replace(board.experiment, execution=replace(
                        board.experiment.execution, **{k: v for k, v in (
                            ("n_jobs", n_jobs), ("backend", backend), ("scheduler", scheduler))
                            if v is not None})))
    if scheduler and board.experiment.execution.backend != "dask":
        _fail(f"--scheduler {scheduler} needs --backend dask (the board's backend is "
              f"{board.experiment.execution.backend})")
    check_labels(board.experiment, datasets, solvers)  # labels that select nothing: one line
    if retry:
        if stats_only or not datasets or not solvers:
            _fail("--retry needs --dataset and --solver (the cells to run again), without "
                  "--stats-only")
        _mark_retried(board, Path(results_dir) / board.experiment.name, datasets, solvers,
                      echo=lambda m: click.echo(m, err=True))
    if not stats_only:
        s = run_board(board, results_dir, data=obj["data"],
                      select=Selection(datasets, solvers, supersede=supersede),
                      echo=lambda m: click.echo(m, err=True))
        click.echo(f"{board.experiment.name}: {s.ran} cells run, {s.done_before} already done, "
                   f"{s.over_budget} over budget, {s.cannot_run} cannot run, {s.failed} failed, "
                   f"{s.no_data} without data")
    board_dir = Path(results_dir) / board.experiment.name
    board_dir.mkdir(parents=True, exist_ok=True)
    if stats_only:
        compact_tuning_log(board_dir)
    for name, path in write_board_report(board, board_dir, obj["data"]).items():
        click.echo(f"  {name}: {path}")


def _mark_retried(board, board_dir: Path, datasets, solvers, echo) -> None:
    """Record the selected cells that are marked over budget as pending (run again), and move
    the selected cells' finished rows to ``runs_superseded.csv`` (their archived tuning fits to
    ``tuning_done_superseded.csv``), so that they run again; nothing is deleted."""
    from ..leaderboard.board import read_cells, record_cell
    from ..run.results import TUNE_COLUMNS, RunStore

    cells = read_cells(board_dir)
    for _, row in cells.iterrows():
        if (row["dataset"] in datasets and row["label"] in solvers
                and row["status"] == "over_budget"):
            record_cell(board_dir, row["dataset"], row["label"], "pending",
                        f"run again on request (was: {row['reason']})", board.budget)
    store = RunStore(board_dir)
    runs = store.read()
    again = set(runs.loc[runs["dataset"].isin(datasets) & runs["label"].isin(solvers),
                         "task_id"])
    if again:
        store.archive(again)
        done = RunStore(board_dir, "tuning_done", TUNE_COLUMNS)
        fits = done.read()
        done.archive(set(fits.loc[fits["outer_task_id"].isin(again), "task_id"]))
        echo(f"--retry: {len(again)} finished tasks of the selected cells moved to "
             f"{store.superseded}")
