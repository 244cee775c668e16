"""Running a leaderboard: its cells in turn, each fit under the board's budget.

:func:`run_board` runs every cell not yet complete or marked through the ordinary runner
(:func:`dml_bench.run.runner.run_experiment` restricted to the cell, in a child process watched
by :func:`dml_bench.run.budget.run_cells`), so the board resumes, runs in parts and shares its
tasks with concurrent runs like every run. A fit that lands over the budget, or a cell silent
for two budgets, marks the cell ``over_budget`` in ``cells.csv``. Before running, two declared
rules are checked: the memory rule (estimated peak 8 B × (dd·d² + nn·n_train²) above
``memory_gb`` marks the cell ``cannot_run``), and the size rule: a method over budget on a data
set is not tried on a data set with at least as many points and features (marked
``over_budget``, "estimated"). Cells recorded over budget are retried only with a larger budget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..experiment.sections import DEFAULT_PLACE, DataPlace
from ..run.runner import EVERY_TASK, Selection
from ..experiment.sections import Experiment
from ..experiment.knn import all_tasks, plan
from ..run.budget import run_cells
from ..run.execution import check_labels
from ..run.results import TUNE_COLUMNS, RunStore
from .board import Board, memory_reason, planned_sizes, read_cells, record_cell


@dataclass
class BoardSummary:
    """Counts of the cells of one :func:`run_board` call, by what became of them."""

    ran: int = 0            # cells run to the end in this call
    done_before: int = 0    # cells already complete
    over_budget: int = 0
    cannot_run: int = 0
    failed: int = 0
    no_data: int = 0


def run_board(board: Board, results_root: str | Path = "results", *,
              data: DataPlace = DEFAULT_PLACE, select: Selection = EVERY_TASK,
              echo: Callable[[str], None] = print) -> BoardSummary:
    """Run every cell of ``board`` not yet complete or marked, each fit under the budget.

    Parameters
    ----------
    board : Board
        With ``board.experiment.execution`` as the execution of each cell.
    results_root : path
        Parent of the board's folder ``<results_root>/<name>/``.
    data : DataPlace
        The data mirror and the datasets' cache.
    select : Selection
        ``datasets``, ``solvers``: run only these data-set / solver labels (the rest stays to be
        run into the same folder); ``supersede``: set aside the rows of finished tasks that the
        board no longer has (a changed protocol setting), as
        :func:`dml_bench.run.runner.run_experiment` does; without it the first cell's run is
        refused and names them.

    Returns
    -------
    BoardSummary

    Raises
    ------
    UnknownNameError
        When a label of ``datasets`` or ``solvers`` is not one of the board's.
    NothingSelected
        When the labels select no cell together.
    BoardError
        When a cell's run stops for another reason than the budget (e.g. a refused run).
    """
    exp = board.experiment
    datasets, solvers = select.datasets, select.solvers
    check_labels(exp, datasets, solvers)
    out = Path(results_root) / exp.name
    out.mkdir(parents=True, exist_ok=True)
    _, skipped = plan(exp, data)
    no_data = {d for d, _, reason in skipped if reason.startswith("data not available")}
    runs = RunStore(out)
    compact_tuning_log(out)  # a killed run's finished cells
    cells = _selected_cells(exp, data, datasets, solvers)
    state = _board_state(board, out, no_data, cells)
    summary = BoardSummary()
    queue = _queue(state, runs.finished(), summary)
    ran = _run_queue(board, state, queue, summary, results_root, select.supersede, echo)
    _settle(board, state, runs.finished(), ran, summary)
    compact_tuning_log(out)
    return summary


@dataclass
class _BoardState:
    """What a board's run decides its cells by.

    Attributes
    ----------
    out : Path
        The board's results folder.
    cells : dict
        (data-set label, solver label) → the cell's tasks, for the selected cells.
    no_data : set of str
        Data-set labels whose data cannot be had.
    sizes : dict
        Data-set label → (n_train, d) (:func:`~.board.planned_sizes`).
    marks : DataFrame
        ``cells.csv`` indexed by (dataset, label).
    over : dict
        Solver label → the data-set labels it ran over the budget on (grows as the run goes).
    """

    out: Path
    cells: dict
    no_data: set
    sizes: dict
    marks: pd.DataFrame
    over: dict


def _selected_cells(exp: Experiment, data: DataPlace, datasets, solvers) -> dict:
    """(data-set label, solver label) → the cell's tasks, for the selected labels (all when
    None)."""
    cells: dict[tuple[str, str], list] = {}
    for task in all_tasks(exp, data):
        if not (datasets and task.dataset.label not in datasets
                or solvers and task.solver.label not in solvers):
            cells.setdefault((task.dataset.label, task.solver.label), []).append(task)
    return cells


def _board_state(board: Board, out: Path, no_data: set, cells: dict) -> _BoardState:
    """The sizes of the data sets and the cells' marks, with each solver's data sets recorded
    over the board's budget (or a larger one)."""
    sizes = planned_sizes(board.experiment, no_data)
    marks = read_cells(out).set_index(["dataset", "label"])
    over: dict[str, list[str]] = {}  # solver label → data sets it ran over budget on
    for (d, s), row in marks.iterrows():
        if row["status"] == "over_budget" and float(row["budget_seconds"]) >= board.budget:
            over.setdefault(s, []).append(d)
    return _BoardState(out, cells, no_data, sizes, marks, over)


def _queue(state: _BoardState, done: set, summary: BoardSummary) -> list[tuple[str, str]]:
    """The cells to run: not without data, not complete (``done`` holds the finished task ids),
    not recorded over budget; the others are counted in ``summary``."""
    queue = []
    for (d, s), tasks in state.cells.items():
        if d in state.no_data:
            summary.no_data += 1
        elif all(t.task_id in done for t in tasks):
            summary.done_before += 1
        elif d in state.over.get(s, []):
            summary.over_budget += 1
        else:
            queue.append((d, s))
    return queue


def _verdict(board: Board, state: _BoardState, d: str, s: str) -> tuple[str, str] | None:
    """A declared rule's verdict on a cell before it runs (None: run it)."""
    n_train, dim = state.sizes[d]
    solver = state.cells[d, s][0].solver
    need = board.memory_bytes(solver.name, n_train, dim, solver.params)
    if need > board.memory_gb * 2 ** 30:
        return "cannot_run", memory_reason(need, n_train, dim, board.memory_gb)
    smaller = [o for o in state.over.get(s, [])
               if o in state.sizes  # (a label the config still has)
               and state.sizes[o][0] <= n_train and state.sizes[o][1] <= dim]
    if smaller:
        return "over_budget", (f"estimated: over budget on {smaller[0]}, which has no more "
                               "points and features")
    return None


def _run_queue(board: Board, state: _BoardState, queue: list, summary: BoardSummary,
               results_root, supersede: bool, echo) -> list[tuple[str, str]]:
    """Run the cells of ``queue`` that the rules let run, under the budget, until all have run;
    a cell over budget is marked, and the rules are checked again for the cells after it.
    Returns the cells that ran to their end."""
    exp, ran = board.experiment, []
    while queue:
        runnable = []
        for d, s in queue:
            rule = _verdict(board, state, d, s)
            if rule is None:
                runnable.append((d, s))
                continue
            _mark(state.out, state.marks, d, s, *rule, board.budget)
            if rule[0] == "over_budget":
                state.over.setdefault(s, []).append(d)
            setattr(summary, rule[0], getattr(summary, rule[0]) + 1)
        if not runnable:
            break
        status, index, reason = run_cells(exp, board.source, board.budget, results_root,
                                           runnable, supersede)
        ran += runnable[:index + (status == "ok")]
        if status == "ok":
            break
        d, s = runnable[index]
        record_cell(state.out, d, s, "over_budget", reason, board.budget)
        echo(f"{exp.name}: {d} × {s}: over budget (–)")
        state.over.setdefault(s, []).append(d)
        summary.over_budget += 1
        queue = runnable[index + 1:]
    return ran


def _settle(board: Board, state: _BoardState, done: set, ran: list, summary: BoardSummary):
    """Count the cells that ran: complete (every task id in ``done``), or marked ``failed``."""
    for d, s in ran:
        if all(t.task_id in done for t in state.cells[d, s]):
            summary.ran += 1
        else:
            record_cell(state.out, d, s, "failed", "some of its tasks failed: see errors.csv",
                        board.budget)
            summary.failed += 1


def compact_tuning_log(board_dir: Path) -> int:
    """Move the tuning fits of finished tasks from ``tuning.csv`` to ``tuning_done.csv``.

    A task's tuning fits are read only while the task is unfinished (the runner tunes the tasks
    it has still to run); once its row is in ``runs.csv``, which records the chosen values, their
    validation error and the tuning time, they are a log. So the board's committed
    ``tuning.csv`` holds what a fresh checkout needs to resume, a few cells' fits, and the whole
    log (about 170 bytes a fit, 270 fits a tuned cell) stays local in ``tuning_done.csv``.
    Returns the number of rows moved.
    """
    board_dir = Path(board_dir)
    tuning = RunStore(board_dir, "tuning", TUNE_COLUMNS)
    fits = tuning.read()
    done = set(fits.loc[fits["outer_task_id"].isin(RunStore(board_dir).finished()), "task_id"])
    if done:
        tuning.archive(done, into=board_dir / "tuning_done.csv")
    return len(done)


def _mark(out: Path, marks: pd.DataFrame, d: str, s: str, status: str, reason: str,
          budget: float) -> None:
    """Record a rule's verdict unless the same one is the cell's latest record already."""
    if (d, s) in marks.index and marks.loc[(d, s), "status"] == status \
            and marks.loc[(d, s), "reason"] == reason:
        return
    record_cell(out, d, s, status, reason, budget)
