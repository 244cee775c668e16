"""The leaderboard: every method on every data set under one protocol, with a per-fit budget,
then the statistics of :mod:`dml_bench.ranking` as tables, figures and a page.

A board config (``configs/leaderboard.yaml``) is an experiment config plus a ``leaderboard:``
section: ``fit_budget_seconds`` (every fit's wall-clock budget), ``memory_gb`` and per-solver
``footprint`` (the "cannot run" rule). The experiment's ``notes:`` (keys ``<data set>/<method>``,
``*`` for any) are shown under the ranks: a finding about a row, with its diagnosis.
:func:`run_board` runs it cell by cell — one (data set, method) cell is the method's tuning and
final fits on the data set's splits — through the ordinary runner
(:func:`dml_bench.runner.run_experiment` restricted to the cell), so the board resumes, runs in
parts and shares its tasks with concurrent runs like every run.

Budget mechanism (no solver needs a time hook): each cell runs in a child interpreter in its own
session (so its loky or local dask workers are in its process group) while the parent watches the
cell's logs. The runner appends a row to ``runs.csv`` / ``tuning.csv`` / ``errors.csv`` as each task
finishes, with its ``fit_time``, and the parent reads each landed row: a ``fit_time`` above the
budget marks the cell ``over_budget`` in ``cells.csv`` (with ``-j N`` too, while the other
workers' rows keep landing). A fit that would not end is caught by silence: no row of the cell
for twice ``fit_budget_seconds``. The silence also counts the task's data preparation and
evaluation, which are not part of its fit (on MNIST a cold cache's data load and neighbour
constraints take minutes), so it waits a second budget for them before it decides that the
running fits are over the first: then the process group is killed (SIGKILL; the task claims are
OS file locks and go with it) and the cell is marked the same way. Before running, two declared
rules are checked: the memory rule (estimated peak 8 B × (dd·d² + nn·n_train²) above
``memory_gb`` marks the cell ``cannot_run``), and the size rule: a method over budget on a data
set is not tried on a data set with at least as many points and features (marked
``over_budget``, "estimated").
Cells recorded over budget are retried only with a larger budget.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import json
import io
import os
import signal
import subprocess
import threading
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from . import __version__, ranking, safe_yaml
from .config import ConfigError, Experiment, parse_config
from .errors import DMLBenchError, warn
from .results import append_bytes, log_segments, log_stamp

CELLS = "cells.csv"
OVER_BUDGET = "a fit ran over the {:g} s budget"
SILENCE_BUDGETS = 2  # budgets without a landed row after which a cell's running fits are over it
CELL_COLUMNS = ["dataset", "label", "status", "reason", "budget_seconds", "finished_at"]
_SECTION = {"fit_budget_seconds": (int, float), "memory_gb": (int, float), "footprint": dict}
PAGE = "leaderboard.html"


class BoardError(DMLBenchError):
    """A board cell could not be run for a reason outside the budget (e.g. a refused run)."""


@dataclass(frozen=True)
class Board:
    """A validated board config: the experiment and the ``leaderboard:`` rules."""

    experiment: Experiment
    budget: float = 600.0
    memory_gb: float = 8.0
    footprint: dict = field(default_factory=dict)  # solver name → {"dd": c, "nn": c}
    source: str = ""  # the config file (named in the cells' child processes' errors)

    def memory_bytes(self, solver: str, n_train: int, d: int) -> float:
        """Estimated peak memory of one fit: 8 B × (dd·d² + nn·n_train²)."""
        f = self.footprint.get(solver, self.footprint.get("default", {}))
        return 8.0 * (f.get("dd", 0) * d ** 2 + f.get("nn", 0) * n_train ** 2)


def load_board(path: str | Path) -> Board:
    """Read a board config: ``leaderboard:`` plus an experiment config (see the module doc).

    Raises
    ------
    ConfigError
        On any problem, naming the key.
    """
    source = str(path)
    try:
        data = safe_yaml.load_file(path)
    except FileNotFoundError:
        raise ConfigError(source, "", "file not found") from None
    except yaml.YAMLError as exc:
        raise ConfigError(source, "", safe_yaml.describe(exc)) from None
    if not isinstance(data, dict) or not isinstance(data.get("leaderboard"), dict):
        raise ConfigError(source, "leaderboard", "a board config needs a `leaderboard:` mapping "
                          f"with {', '.join(_SECTION)}")
    rules = data.pop("leaderboard")
    for key, value in rules.items():
        if key not in _SECTION:
            raise ConfigError(source, f"leaderboard.{key}",
                              f"unknown key; valid keys: {', '.join(_SECTION)}")
        if isinstance(value, bool) or not isinstance(value, _SECTION[key]):
            raise ConfigError(source, f"leaderboard.{key}", f"unexpected value {value!r}")
    for key in ("fit_budget_seconds", "memory_gb"):
        if rules.get(key, 1) <= 0:
            raise ConfigError(source, f"leaderboard.{key}", "must be positive")
    footprint = rules.get("footprint", {})
    for name, f in footprint.items():
        if not isinstance(f, dict) or set(f) - {"dd", "nn"}:
            raise ConfigError(source, f"leaderboard.footprint.{name}",
                              "must be a mapping with keys dd and/or nn (numbers of d×d and "
                              "n_train×n_train float64 matrices)")
    exp = parse_config(data, source=source)
    _check_note_keys(exp, source)
    return Board(exp, float(rules.get("fit_budget_seconds", 600)),
                 float(rules.get("memory_gb", 8)), footprint, str(Path(path).resolve()))


def experiment_of(path: str | Path) -> Experiment:
    """The experiment of a config file: a board config's (one with a ``leaderboard:`` mapping) or
    an ordinary run config's, for tools that take either (``benchmarks/seed_diagnosis.py``)."""
    from .config import load_config

    try:
        data = safe_yaml.load_file(path)
    except (OSError, yaml.YAMLError):
        data = None  # load_config names the problem
    if isinstance(data, dict) and isinstance(data.get("leaderboard"), dict):
        return load_board(path).experiment
    return load_config(path)


def _check_note_keys(exp: Experiment, source: str) -> None:
    """A board's ``notes:`` keys are ``<data set>/<method>`` labels of the board, or ``*``: the
    page shows each note under the ranks, so a key that names nothing is a typo."""
    datasets = {e.label for e in exp.datasets} | {"*"}
    methods = {s.label for s in exp.solvers} | {"*"}
    for key in exp.notes:
        d, _, m = key.partition("/")
        if d not in datasets or m not in methods:
            raise ConfigError(source, f"notes.{key}", "a note's key is <data set label>/<method "
                              "label> of this board, either part may be *")


# ------------------------------------------------------------------------------------- running


@dataclass
class BoardSummary:
    ran: int = 0            # cells run to the end in this call
    done_before: int = 0    # cells already complete
    over_budget: int = 0
    cannot_run: int = 0
    failed: int = 0
    no_data: int = 0


def _sizes(exp: Experiment, no_data=()) -> dict[str, tuple[int, int]]:
    """(n_train, d) per data-set label from the catalogue (no loading; an ``openml:`` data set's
    spec is its loaded data), the labels in ``no_data`` left out."""
    from .datasets import DATASETS

    out = {}
    for entry in (e for e in exp.datasets if e.label not in no_data):
        spec = DATASETS[entry.name]
        n = min(entry.n_samples or spec.n_samples, spec.n_samples)
        d = entry.preprocessing.pca or spec.n_features
        out[entry.label] = (math.ceil(exp.train_fraction * n), min(d, spec.n_features))
    return out


def read_cells(board_dir: Path) -> pd.DataFrame:
    """The latest ``cells.csv`` record of every (data set, method) cell (empty if none)."""
    path = Path(board_dir) / CELLS
    if not path.exists():
        return pd.DataFrame(columns=CELL_COLUMNS)
    bad = []
    cells = pd.read_csv(path, engine="python", encoding_errors="replace", dtype=str,
                        on_bad_lines=lambda line: bad.append(line))
    if list(cells.columns) != CELL_COLUMNS:
        raise BoardError(f"{path}: not a cells log of a board (its header is not "
                         f"{','.join(CELL_COLUMNS)}); move it aside to run the board afresh")
    whole = (cells["status"].isin(STATUS_TEXT)
             & pd.to_numeric(cells["budget_seconds"], errors="coerce").notna())
    if len(bad) + (~whole).sum():
        warn(f"{path}: {len(bad) + (~whole).sum()} corrupt line(s) ignored")
    return cells[whole].drop_duplicates(["dataset", "label"], keep="last")


def _record(board_dir: Path, dataset: str, label: str, status: str, reason: str,
            budget: float) -> None:
    path = board_dir / CELLS
    line = io.StringIO()
    writer = csv.writer(line, lineterminator="\n")
    if not os.path.lexists(path):
        writer.writerow(CELL_COLUMNS)
    writer.writerow([dataset, label, status, " ".join(str(reason).split()), budget,
                     dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")])
    append_bytes(path, line.getvalue().encode())  # whole, synced, never through a symlink


def run_board(board: Board, results_root: str | Path = "results", *, mirror=None, cache_dir=None,
              datasets: Sequence[str] | None = None, solvers: Sequence[str] | None = None,
              supersede: bool = False, echo: Callable[[str], None] = print) -> BoardSummary:
    """Run every cell of ``board`` not yet complete or marked, each fit under the budget.

    Parameters
    ----------
    board : Board
        With ``board.experiment.n_jobs`` / ``backend`` as the execution of each cell.
    results_root : path
        Parent of the board's folder ``<results_root>/<name>/``.
    datasets, solvers : sequence of str, optional
        Run only these data-set / solver labels (the rest stays to be run into the same folder).
    supersede : bool
        Set aside the rows of finished tasks that the board no longer has (a changed protocol
        setting), as :func:`dml_bench.runner.run_experiment` does; without it the first cell's
        run is refused and names them.

    Returns
    -------
    BoardSummary

    Raises
    ------
    BoardError
        When a cell's run stops for another reason than the budget (e.g. a refused run).
    """
    from .registry import UnknownNameError
    from .results import RunStore
    from .tasks import all_tasks, plan

    exp = board.experiment
    for kind, chosen, known in (("dataset", datasets, [d.label for d in exp.datasets]),
                                ("solver", solvers, [s.label for s in exp.solvers])):
        for label in chosen or ():
            if label not in known:
                raise UnknownNameError(f"{kind} label of {exp.name}", label, known)
    out = Path(results_root) / exp.name
    out.mkdir(parents=True, exist_ok=True)
    _, skipped = plan(exp, mirror, cache_dir)
    no_data = {d for d, _, reason in skipped if reason.startswith("data not available")}
    runs = RunStore(out)
    compact_tuning_log(out)  # a killed run's finished cells
    cells: dict[tuple[str, str], list] = {}
    for task in all_tasks(exp, mirror, cache_dir):
        if not (datasets and task.dataset.label not in datasets
                or solvers and task.solver.label not in solvers):
            cells.setdefault((task.dataset.label, task.solver.label), []).append(task)
    sizes, marks = _sizes(exp, no_data), read_cells(out).set_index(["dataset", "label"])
    over: dict[str, list[str]] = {}  # solver label → data sets it ran over budget on
    for (d, s), row in marks.iterrows():
        if row["status"] == "over_budget" and float(row["budget_seconds"]) >= board.budget:
            over.setdefault(s, []).append(d)
    summary = BoardSummary()
    done = runs.finished()
    queue = []
    for (d, s), tasks in cells.items():
        if d in no_data:
            summary.no_data += 1
        elif all(t.task_id in done for t in tasks):
            summary.done_before += 1
        elif d in over.get(s, []):
            summary.over_budget += 1
        else:
            queue.append((d, s))

    def verdict(d: str, s: str) -> tuple[str, str] | None:
        """A declared rule's verdict on a cell before it runs (None: run it)."""
        n_train, dim = sizes[d]
        need = board.memory_bytes(cells[d, s][0].solver.name, n_train, dim)
        if need > board.memory_gb * 2 ** 30:
            return "cannot_run", (f"memory: an estimated {need / 2 ** 30:.1f} GB for n_train = "
                                  f"{n_train}, d = {dim} exceeds the {board.memory_gb:g} GB rule")
        smaller = [o for o in over.get(s, []) if o in sizes  # (a label the config still has)
                   and sizes[o][0] <= n_train and sizes[o][1] <= dim]
        if smaller:
            return "over_budget", (f"estimated: over budget on {smaller[0]}, which has no more "
                                   "points and features")
        return None

    ran = []
    while queue:
        runnable = []
        for d, s in queue:
            rule = verdict(d, s)
            if rule is None:
                runnable.append((d, s))
                continue
            _mark(out, marks, d, s, *rule, board.budget)
            if rule[0] == "over_budget":
                over.setdefault(s, []).append(d)
            setattr(summary, rule[0], getattr(summary, rule[0]) + 1)
        if not runnable:
            break
        status, index, reason = _run_cells(board, results_root, runnable, supersede)
        ran += runnable[:index + (status == "ok")]
        if status == "ok":
            break
        d, s = runnable[index]
        _record(out, d, s, "over_budget", reason, board.budget)
        echo(f"{exp.name}: {d} × {s}: over budget (–)")
        over.setdefault(s, []).append(d)
        summary.over_budget += 1
        queue = runnable[index + 1:]
    done = runs.finished()
    for d, s in ran:
        if all(t.task_id in done for t in cells[d, s]):
            summary.ran += 1
        else:
            _record(out, d, s, "failed", "some of its tasks failed: see errors.csv",
                    board.budget)
            summary.failed += 1
    compact_tuning_log(out)
    return summary


def compact_tuning_log(board_dir: Path) -> int:
    """Move the tuning fits of finished tasks from ``tuning.csv`` to ``tuning_done.csv``.

    A task's tuning fits are read only while the task is unfinished (the runner tunes the tasks
    it has still to run); once its row is in ``runs.csv``, which records the chosen values, their
    validation error and the tuning time, they are a log. So the board's committed
    ``tuning.csv`` holds what a fresh checkout needs to resume, a few cells' fits, and the whole
    log (about 170 bytes a fit, 270 fits a tuned cell) stays local in ``tuning_done.csv``.
    Returns the number of rows moved.
    """
    from .results import TUNE_COLUMNS, RunStore

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
    _record(out, d, s, status, reason, budget)


class _LandedRows:
    """The whole rows appended to a CSV log (every file of it, :func:`results.log_segments`)
    since this object was made, as dicts.

    Reading starts after the last whole line: a half-written last row of a killed run, which the
    runner cuts before appending (:mod:`dml_bench.results`), is not a row, and the rows appended
    after the cut begin there. A file of the log that shrank (rows set aside by a concurrent
    run) is read on from its new end; a file that appears later is read from its first row.
    """

    def __init__(self, path: Path):
        self.path = path
        self.offsets = {seg: seg.read_bytes().rfind(b"\n") + 1
                        for seg in log_segments(path) if seg.exists()}

    def new(self) -> list[dict]:
        return [row for seg in log_segments(self.path) for row in self._new_in(seg)]

    def _new_in(self, seg: Path) -> list[dict]:
        if not seg.exists():
            return []
        offset = self.offsets.get(seg, 0)
        with open(seg, "rb") as fh:
            first = fh.readline()
            if not first.endswith(b"\n"):  # the header is being written
                return []
            size = fh.seek(0, os.SEEK_END)
            if size < offset:  # rewritten meanwhile (a concurrent run set rows aside)
                fh.seek(0)
                offset = fh.read().rfind(b"\n") + 1
            start = max(offset, len(first))
            fh.seek(start)
            chunk = fh.read()
        whole = chunk[:chunk.rfind(b"\n") + 1]  # a row being written waits for its newline
        self.offsets[seg] = start + len(whole)
        header = next(csv.reader([first.decode("utf-8", "replace")]))
        lines = [line.decode("utf-8", "replace") for line in whole.splitlines() if b"\0" not in line]
        # a foreign line with more fields than the header (the runner sets it aside) is no row
        return [row for row in csv.DictReader(lines, fieldnames=header) if None not in row]


def _cell(row: dict) -> tuple:
    """The (data set, method) cell of a landed row."""
    return row.get("dataset"), row.get("label")


def _fit_over_budget(rows: list[dict], cells: list, budget: float) -> tuple[int, str] | None:
    """The index in ``cells`` and the reason of the first of ``rows`` (landed fits, with their
    ``dataset``, ``label`` and ``fit_time``) that is a fit of one of ``cells`` over ``budget``
    seconds, or None. Rows of other cells (a concurrent run's) are not this watch's. The reason
    names the fit's host (``cpu_model``) where the row records it: a verdict holds for that host."""
    for row in rows:
        cell = _cell(row)
        try:
            seconds = float(row.get("fit_time") or "nan")
        except ValueError:  # not a whole row of the log (it was rewritten under the watch)
            continue
        if cell in cells and seconds > budget:
            host = f" on {row['cpu_model']}" if row.get("cpu_model") else ""
            return cells.index(cell), f"{OVER_BUDGET.format(budget)} ({seconds:.0f} s{host})"
    return None


def _run_cells(board: Board, results_root, cells: list,
               supersede: bool = False) -> tuple[str, int, str]:
    """Run ``cells`` one after the other in a child process under the watchdog.

    The child is a fresh interpreter (``python -m dml_bench.leaderboard``) in its own session, so
    that killing its process group also ends its loky workers (loky pools do not start inside
    ``multiprocessing`` children); it announces each cell on its stdout before running it.

    Two watches: a fit that landed records a ``fit_time`` above the budget (its data preparation
    and evaluation are not counted), and no row of ``cells`` has landed for twice the budget (the
    running fits are all over it, with room for their tasks' preparation and evaluation; rows of
    other cells, a concurrent run's on the same folder, do not count).

    Returns
    -------
    status, index, reason : str, int, str
        ``("ok", len(cells), "")`` when every cell ran to its end within the budget, or
        ``("over_budget", i, reason)`` when a fit of ``cells[i]`` exceeded it (the child was
        killed then, or had ended).

    Raises
    ------
    BoardError
        When the child stops with an error (its message is on stderr).
    """
    exp = board.experiment
    out = Path(results_root) / exp.name
    logs = [out / name for name in ("runs.csv", "tuning.csv", "errors.csv")]
    tails = [_LandedRows(path) for path in logs]  # runs and tuning rows are fits, errors not

    def stamp():
        return tuple(log_stamp(path) for path in logs)

    def landed():
        """The new rows of ``cells`` in each log (a concurrent run's other cells left out)."""
        return [[row for row in tail.new() if _cell(row) in cells] for tail in tails]

    def over_budget_fit(rows):
        return _fit_over_budget(rows[0] + rows[1], cells, board.budget)

    # the resolved experiment, not the file: the child runs the very data sets planned here (an
    # `openml_suite:` entry is listed once, by the parent) with the command line's overrides
    args = {"experiment": exp.to_dict(), "source": board.source,
            "results_root": str(results_root), "cells": cells, "budget": board.budget,
            "supersede": supersede}
    started = []  # indices of the cells the child has announced, read by a thread

    def follow(stream):
        for line in stream:
            started.append(int(line))

    last, since = stamp(), time.monotonic()
    # the arguments go over stdin, not argv: a long board (an OpenML suite's cells) stays clear
    # of the kernel's limit on one argument, and the notes' text stays out of the command line,
    # where a `pkill -f` aimed at another program would match it
    child = subprocess.Popen([sys.executable, "-m", "dml_bench.leaderboard"],
                             start_new_session=True, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        child.stdin.write(json.dumps(args))
        child.stdin.close()
    except BrokenPipeError:  # the child stopped before reading: its status says why, below
        pass
    reader = threading.Thread(target=follow, args=(child.stdout,), daemon=True)
    reader.start()
    try:
        while True:
            try:
                child.wait(timeout=min(0.2, board.budget / 4))
                break
            except subprocess.TimeoutExpired:
                pass
            now, current, over = time.monotonic(), stamp(), None
            if current != last:  # a log changed: rows of these cells, or a concurrent run's
                last, rows = current, landed()
                if any(rows):
                    since, over = now, over_budget_fit(rows)
            if over is None and now - since > SILENCE_BUDGETS * board.budget:
                over = started[-1] if started else 0, OVER_BUDGET.format(board.budget)
            if over:
                _kill_group(child.pid)
                child.wait()
                reader.join()
                return ("over_budget", *over)
    except BaseException:  # Ctrl-C / SIGTERM of the board: take the cell's workers along
        _kill_group(child.pid)
        raise
    if child.returncode != 0:  # a killed child's workers, left in its group, would run on
        _kill_group(child.pid)
    reader.join()
    over = over_budget_fit(landed())
    if over:
        return ("over_budget", *over)
    if child.returncode != 0:
        d, s = cells[started[-1] if started else 0]
        raise BoardError(f"{d} × {s}: the cell's run stopped with status {child.returncode} "
                         "(its message is above)")
    return "ok", len(cells), ""


def _cell_main(payload: str) -> int:  # pragma: no cover - runs in the child process
    """Entry point of the cells' child process: the runner restricted to one cell at a time.

    ``payload``: the JSON arguments :func:`_run_cells` writes to the child's stdin."""
    from .progress import task_progress
    from .runner import run_experiment

    args = json.loads(payload)
    exp = parse_config(args["experiment"], source=args["source"], check_data=False)
    for i, (dataset, solver) in enumerate(args["cells"]):
        print(i, flush=True)
        print(f"{exp.name}: {dataset} × {solver} (budget {args['budget']:g} s a fit)",
              file=sys.stderr, flush=True)
        try:
            run_experiment(exp, args["results_root"],
                           mirror=os.environ.get("DMLBENCH_DATA_MIRROR"),
                           cache_dir=os.environ.get("DMLBENCH_CACHE"),
                           echo=lambda m: print(m, file=sys.stderr, flush=True),
                           progress=task_progress(f"{exp.name}: {dataset} × {solver}"),
                           datasets=[dataset], solvers=[solver], supersede=args["supersede"])
        except DMLBenchError as exc:
            print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
            return 2
    return 0


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# ---------------------------------------------------------------------------------- statistics

STATUS_TEXT = {"over_budget": "–", "cannot_run": "n/a", "failed": "failed", "pending": "…",
               "no_data": "no data"}


def board_table(board: Board, board_dir: Path, mirror=None, cache_dir=None) -> pd.DataFrame:
    """One row per (data set, method) cell of the board: its status and, when complete, the mean
    and std of its test error over the splits and its mean final-fit time.

    Status: ``complete`` (every split has a row), ``over_budget`` (from ``cells.csv``, at this
    budget or a larger one: before completeness, since a fit over the budget can land last),
    ``cannot_run``, ``failed`` (from ``cells.csv``), ``no_data`` (the data set is not available
    here) or ``pending`` (still to run).
    """
    from .report import read_runs
    from .tasks import all_tasks, plan

    exp = board.experiment
    try:
        runs = read_runs(board_dir)
    except DMLBenchError:
        runs = pd.DataFrame(columns=["task_id", "error", "fit_time"])
    by_id = runs.set_index("task_id") if len(runs) else runs
    _, skipped = plan(exp, mirror, cache_dir)
    no_data = {d: reason for d, _, reason in skipped if reason.startswith("data not available")}
    marks = read_cells(board_dir).set_index(["dataset", "label"])
    cells: dict[tuple[str, str], list[str]] = {}
    for task in all_tasks(exp, mirror, cache_dir):
        cells.setdefault((task.dataset.label, task.solver.label), []).append(task.task_id)
    rows = []
    for (d, s), ids in cells.items():
        have = [i for i in ids if i in by_id.index]
        row = {"dataset": d, "method": s, "n_splits": len(ids), "n_done": len(have),
               "error": np.nan, "error_std": np.nan, "fit_time": np.nan, "hosts": "",
               "reason": ""}
        over = (d, s) in marks.index and marks.loc[(d, s), "status"] == "over_budget" \
            and float(marks.loc[(d, s), "budget_seconds"]) >= board.budget
        if d in no_data:
            row.update(status="no_data", reason=no_data[d])
        elif over:  # a fit over the budget makes the cell "–" even if its rows are all there
            row.update(status="over_budget", reason=marks.loc[(d, s), "reason"])
        elif len(have) == len(ids):
            errors = by_id.loc[have, "error"].astype(float) * 100
            # rounded far below one test point, so that equal error counts summed in another
            # order tie exactly in the ranks
            hosts = by_id.loc[have].get("cpu_model", pd.Series(dtype=str)).dropna().astype(str)
            row.update(status="complete", error=round(errors.mean(), 9),
                       error_std=errors.std(ddof=1),
                       fit_time=by_id.loc[have, "fit_time"].astype(float).mean(),
                       hosts="; ".join(sorted(set(hosts) - {""})))
        elif (d, s) in marks.index:
            row.update(status=marks.loc[(d, s), "status"], reason=marks.loc[(d, s), "reason"])
        else:
            row.update(status="pending")
        rows.append(row)
    return pd.DataFrame(rows)


@dataclass
class Statistics:
    """The leaderboard's statistics over the data sets without pending cells."""

    table: pd.DataFrame          # board_table
    errors: pd.DataFrame         # ranked data sets × methods, NaN where no result
    ranks: pd.DataFrame          # per-data-set ranks
    mean_ranks: pd.Series        # sorted
    friedman: ranking.Friedman | None
    cd: float | None
    pairwise: pd.DataFrame
    time_error: pd.DataFrame     # method, mean_rank, fit_time (geometric mean), pareto
    pending: list                # data sets left out: (data set, methods still to run)
    no_data: list


def statistics(table: pd.DataFrame, alpha: float = 0.05) -> Statistics:
    """Ranks, Friedman, Nemenyi CD, pairwise tests and the time–error front of a board table.

    A data set enters only when none of its cells is pending (a partial board ranks the data sets
    it has finished); data sets not available here are left out. Over-budget, cannot-run and
    failed cells rank last on their data set (:func:`ranking.ranks`).
    """
    grid = table.pivot(index="dataset", columns="method", values="error")
    status = table.pivot(index="dataset", columns="method", values="status")
    order_d = list(dict.fromkeys(table["dataset"]))
    order_m = list(dict.fromkeys(table["method"]))
    grid = grid.reindex(index=order_d, columns=order_m)
    status = status.reindex(index=order_d, columns=order_m)
    no_data = [d for d in order_d if (status.loc[d] == "no_data").all()]
    pending = [(d, [m for m in order_m if status.loc[d, m] == "pending"]) for d in order_d
               if d not in no_data and (status.loc[d] == "pending").any()]
    ranked = [d for d in order_d if d not in no_data and d not in dict(pending)]
    errors = grid.loc[ranked]
    r = ranking.ranks(errors)
    mean_ranks = r.mean().sort_values(kind="stable")
    fr = cd = None
    if len(ranked) >= 2 and len(order_m) >= 3:
        fr = ranking.friedman(errors)
        cd = ranking.critical_difference(len(order_m), len(ranked), alpha)
    times = table[table["dataset"].isin(ranked)].groupby("method")["fit_time"].apply(
        lambda t: float(np.exp(np.log(t.dropna().clip(lower=1e-6)).mean())) if t.notna().any()
        else np.nan)
    te = pd.DataFrame({"method": mean_ranks.index, "mean_rank": mean_ranks.to_numpy(),
                       "fit_time": times.reindex(mean_ranks.index).to_numpy()})
    has = te["fit_time"].notna().to_numpy()
    te["pareto"] = False
    if has.any():
        te.loc[has, "pareto"] = ranking.pareto_front(te.loc[has, "fit_time"].to_numpy(),
                                                     te.loc[has, "mean_rank"].to_numpy())
    return Statistics(table, errors, r, mean_ranks, fr, cd, ranking.pairwise(errors), te,
                      pending, no_data)


# ------------------------------------------------------------------------------------- writing


def write_board_report(board: Board, board_dir: Path, mirror=None, cache_dir=None,
                       alpha: float = 0.05) -> dict[str, Path]:
    """Write the board's tables (CSV/LaTeX/HTML), figures and page into ``board_dir``.

    Files: ``board.csv`` (every cell with its status), ``ranks.csv/.tex/.html``,
    ``pairwise.csv/.tex/.html``, ``friedman.csv``, ``time_error.csv``,
    ``figures/cd_diagram.png/.pdf``, ``figures/time_error.png/.pdf``, ``LEADERBOARD.md`` and
    ``leaderboard.html``.
    """
    from .tables import tabular, tex
    from .reproduction_report import render_html
    from .safe_write import output_dir, output_path, write_text

    board_dir = Path(board_dir)
    st = statistics(board_table(board, board_dir, mirror, cache_dir), alpha)
    paths: dict[str, Path] = {}

    def put(name: str, text: str):
        paths[name] = write_text(output_path(board_dir, name), text)

    put("board.csv", st.table.to_csv(index=False, float_format="%.6g"))
    rank_table = _rank_table(st)
    put("ranks.csv", rank_table.to_csv(index=False, float_format="%.6g"))
    put("ranks.tex", tabular("l" + "r" * (rank_table.shape[1] - 1),
                             [tex(c) for c in rank_table.columns],
                             [[tex(c) for c in row] for row in _shown(rank_table)]))
    put("ranks.html", _shown(rank_table, frame=True).to_html(index=False))
    pw = st.pairwise
    put("pairwise.csv", pw.to_csv(index=False, float_format="%.6g"))
    shown_pw = pw.assign(wilcoxon_p=pw["wilcoxon_p"].map(
        lambda p: "–" if pd.isna(p) else f"{p:.3g}")).astype(str)
    put("pairwise.tex", tabular("llrrrrr", [tex(c) for c in pw.columns],
                                [[tex(c) for c in row] for row in shown_pw.to_numpy()]))
    put("pairwise.html", shown_pw.to_html(index=False))
    fr = st.friedman
    put("friedman.csv", pd.DataFrame([{
        "n_datasets": len(st.errors), "n_methods": st.errors.shape[1], "alpha": alpha,
        "chi2": fr and fr.statistic, "p_value": fr and fr.p_value,
        "iman_davenport_F": fr and fr.iman_davenport,
        "iman_davenport_p": fr and fr.iman_davenport_p,
        "critical_difference": st.cd}]).to_csv(index=False, float_format="%.6g"))
    put("time_error.csv", st.time_error.to_csv(index=False, float_format="%.6g"))
    figures = output_dir(board_dir, "figures")
    if st.cd is not None:
        paths.update(_plot_cd(st, figures / "cd_diagram"))
    if st.time_error["fit_time"].notna().any():
        paths.update(_plot_time_error(st, figures / "time_error"))
    markdown = _markdown(board, st, board_dir, alpha, rank_table)
    put("LEADERBOARD.md", markdown)
    put(PAGE, render_html(markdown).replace("dml-bench reproduction</title>",
                                            "dml-bench leaderboard</title>"))
    return paths


def _hosts_sentence(table: pd.DataFrame) -> str:
    """Which CPUs the complete cells' final fits ran on: a time holds for its host only."""
    complete = table[table["status"] == "complete"]
    counts = complete["hosts"].replace("", "not recorded").value_counts()
    listed = ", ".join(f"{host} ({n} cell{'s' * (n != 1)})" for host, n in counts.items())
    return (f"The final fits ran on: {listed}; hosts of one nominal size differ by up to a factor "
            "of 2 on the same fit, in either direction by workload "
            "(`results/leaderboard_diagnosis/hosts.md`).")


def _rank_table(st: Statistics) -> pd.DataFrame:
    """Methods by mean rank, with their error on every data set (ranked ones first)."""
    status = st.table.pivot(index="dataset", columns="method", values="status")
    err = st.table.pivot(index="dataset", columns="method", values="error")
    out = pd.DataFrame({"method": st.mean_ranks.index, "mean_rank": st.mean_ranks.to_numpy(),
                        "n_ranked": len(st.errors)})
    datasets = list(dict.fromkeys(st.table["dataset"]))
    for d in datasets:
        out[d] = [err.loc[d, m] if status.loc[d, m] == "complete" else STATUS_TEXT[status.loc[d, m]]
                  for m in out["method"]]
    return out


def _shown(table: pd.DataFrame, frame: bool = False):
    """The rank table as text cells (errors in %, two decimals)."""
    shown = table.copy()
    for col in shown.columns[1:]:
        shown[col] = [f"{v:.2f}" if isinstance(v, (float, np.floating)) and not pd.isna(v)
                      else str(v) for v in shown[col]]
    return shown if frame else shown.astype(str).to_numpy().tolist()


def _plot_cd(st: Statistics, stem: Path) -> dict[str, Path]:
    """Demšar's critical-difference diagram: the rank axis, each method at its mean rank, bars
    joining the groups of methods not significantly different, and the CD as a scale bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mr, k = st.mean_ranks, len(st.mean_ranks)
    half = math.ceil(k / 2)
    fig, ax = plt.subplots(figsize=(8, 1.6 + 0.28 * half))
    ax.set_xlim(0.5, k + 0.5)
    ax.set_ylim(-(half + 1.5), 1.6)
    ax.axis("off")
    ax.hlines(0, 1, k, color="k", lw=1)
    for i in range(1, k + 1):
        ax.vlines(i, 0, 0.12, color="k", lw=1)
        ax.text(i, 0.22, str(i), ha="center", va="bottom", fontsize=8)
    bar = min(st.cd, k - 1)  # with few data sets the CD can exceed the whole axis
    ax.hlines(1.2, 1, 1 + bar, color="k", lw=1.5)
    ax.text(1 + bar / 2, 1.3, f"CD = {st.cd:.2f} (Nemenyi, α = 0.05)", ha="center",
            va="bottom", fontsize=8)
    for j, (name, r) in enumerate(mr.items()):
        left = j < half
        level = -(j if left else k - 1 - j) - 1
        x_text = 0.6 if left else k + 0.4
        ax.plot([r, r, x_text], [0, level, level], color="k", lw=0.7)
        ax.text(x_text, level + 0.05, f"{name} ({r:.2f})", ha="left" if left else "right",
                va="bottom", fontsize=8)
    for g, group in enumerate(ranking.cliques(mr, st.cd)):
        y = -0.3 - 0.18 * g
        ax.hlines(y, mr[group[0]] - 0.05, mr[group[-1]] + 0.05, color="tab:red", lw=3)
    fr = st.friedman
    ax.set_title(f"{len(st.errors)} data sets, {k} methods; Friedman χ² = {fr.statistic:.1f}, "
                 f"p = {fr.p_value:.2g}", fontsize=9)
    return _save(fig, stem)


def _plot_time_error(st: Statistics, stem: Path) -> dict[str, Path]:
    """Mean rank against the geometric-mean final-fit time, the Pareto front joined."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    te = st.time_error.dropna(subset=["fit_time"])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.scatter(te["fit_time"], te["mean_rank"], c=np.where(te["pareto"], "tab:red", "tab:gray"))
    for rec in te.itertuples():
        ax.annotate(rec.method, (rec.fit_time, rec.mean_rank), fontsize=7,
                    xytext=(3, 3), textcoords="offset points")
    front = te[te["pareto"]].sort_values("fit_time")
    ax.step(front["fit_time"], front["mean_rank"], where="post", color="tab:red", lw=1,
            label="Pareto front")
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.invert_yaxis()
    ax.set_xlabel("final-fit time, geometric mean over the ranked data sets (s)")
    ax.set_ylabel("mean rank (1 = best)")
    ax.legend(fontsize=8)
    return _save(fig, stem)


def _save(fig, stem: Path) -> dict[str, Path]:
    import matplotlib.pyplot as plt

    from .safe_write import save_figure

    fig.tight_layout()
    out = {}
    try:
        for ext in ("png", "pdf"):
            out[f"figures/{stem.name}.{ext}"] = save_figure(fig, stem.with_suffix(f".{ext}"),
                                                            dpi=120)
    finally:
        plt.close(fig)
    return out


def _markdown(board: Board, st: Statistics, board_dir: Path, alpha: float,
              rank_table: pd.DataFrame) -> str:
    exp, fr = board.experiment, st.friedman
    lines = ["# Leaderboard", "",
             "[Reproduction report](../REPRODUCTION.html) · **Leaderboard**", "",
             f"Generated by `dmlbench leaderboard` (dml-bench {__version__}) from `{board_dir}` on "
             f"{dt.date.today().isoformat()}. Do not edit: rerun the command.", "",
             "## Protocol", "", " ".join(exp.description.split()), "",
             f"Budget: {board.budget:g} s of wall-clock time per fit (one BLAS thread per worker); "
             f"memory rule: {board.memory_gb:g} GB per fit. – over budget, n/a cannot run "
             "(memory rule), failed: the fit raised (see errors.csv), … still to run.", "",
             "## Ranks", ""]
    if st.pending:
        lines += [f"**Partial board**: {len(st.pending)} data set(s) have cells still to run and "
                  "are not ranked yet (methods still to run): " + "; ".join(
                      f"{d} ({'all' if len(ms) == st.errors.shape[1] else ', '.join(ms)})"
                      for d, ms in st.pending) + ".", ""]
    if st.no_data:
        lines += [f"Not available here (left out): {', '.join(st.no_data)}.", ""]
    lines += [f"Mean rank over the {len(st.errors)} ranked data set(s) (1 = lowest 3-NN test "
              "error, ties averaged; a method over budget, unable to run or failed on a data set "
              "ranks last there, tied with the others that did). Cells: mean test error (%) over "
              "the splits.", ""]
    header = list(rank_table.columns)
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in _shown(rank_table)]
    if exp.notes:
        lines += ["", "Notes (the config's `notes:`, by data set / method):", ""]
        lines += [f"- `{key}`: {' '.join(str(text).split())}" for key, text in exp.notes.items()]
    lines += ["", "## Significance", ""]
    if fr is None:
        lines += ["Not enough ranked data sets (≥ 2) or methods (≥ 3) for the Friedman test."]
    else:
        verdict = "rejected" if fr.p_value < alpha else "not rejected"
        lines += [f"Friedman test (Demšar 2006 §3.2.2; scipy, tie-corrected): χ²_F = "
                  f"{fr.statistic:.2f} with {fr.n_methods - 1} degrees of freedom, p = "
                  f"{fr.p_value:.3g}; Iman–Davenport F_F = {fr.iman_davenport:.2f}, p = "
                  f"{fr.iman_davenport_p:.3g}. The hypothesis that all methods are equivalent is "
                  f"{verdict} at α = {alpha}.",
                  "", f"Nemenyi critical difference CD = q_α √(k(k+1)/(6N)) = {st.cd:.2f} "
                  f"(k = {fr.n_methods}, N = {fr.n_datasets}, q_{alpha} = "
                  f"{ranking.nemenyi_q(fr.n_methods, alpha):.3f}): two methods whose mean ranks "
                  "differ by at least CD differ significantly; the red bars of the diagram join "
                  "the groups that do not.", "",
                  "![critical-difference diagram](figures/cd_diagram.png)"]
    lines += ["", "## Time against rank", "",
              "Geometric mean of the final-fit time over the ranked data sets where the method "
              "ran, against its mean rank; red: the Pareto front (no method both faster and "
              "better ranked). Data: `time_error.csv`. " + _hosts_sentence(st.table), ""]
    if st.time_error["fit_time"].notna().any():
        lines += ["![time against rank](figures/time_error.png)", ""]
    lines += ["## Pairwise", "",
              "Wins / ties / losses of each method against each other over the ranked data "
              "sets (a result beats no result), and the two-sided Wilcoxon signed-rank p-value "
              "on the data sets where both have a result (Demšar 2006 §3.1.3; exact, with "
              "mid-ranks for ties and zero differences dropped). Full table: "
              "`pairwise.csv` (also .tex, .html).", ""]
    best = list(st.mean_ranks.index[:1])
    pw = st.pairwise[st.pairwise["method"].isin(best)]
    if len(pw):
        lines += ["| method | versus | wins | ties | losses | n both | Wilcoxon p |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {r.method} | {r.versus} | {r.wins} | {r.ties} | {r.losses} | {r.n_both} | "
                  f"{'–' if pd.isna(r.wilcoxon_p) else f'{r.wilcoxon_p:.3g}'} |"
                  for r in pw.itertuples()]
    marked = st.table[st.table["status"].isin(["over_budget", "cannot_run", "failed"])]
    if len(marked):
        lines += ["", "## Cells without a result", "", "| data set | method | status | reason |",
                  "|---|---|---|---|"]
        lines += [f"| {r.dataset} | {r.method} | {r.status} | {r.reason} |"
                  for r in marked.itertuples()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover - a cell's child process (see _run_cells)
    sys.exit(_cell_main(sys.stdin.read()))
