"""The per-fit budget of a run cut into cells: each cell a (data set, method) pair of an
experiment, run by :func:`dml_bench.run.runner.run_experiment` in a child process under a watch.

The leaderboard (:mod:`dml_bench.leaderboard.run`) runs its cells through :func:`run_cells`.
No solver needs a time hook: each cell runs in a child interpreter in its own session (so its
loky or local dask workers are in its process group) while the parent watches the cell's logs.
The runner appends a row to ``runs.csv`` / ``tuning.csv`` / ``errors.csv`` as each task
finishes, with its ``fit_time``, and the parent reads each landed row (:class:`LandedRows`): a
``fit_time`` above the budget puts the cell over budget (:func:`fit_over_budget`; with ``-j N``
too, while the other workers' rows keep landing). A fit that would not end is caught by
silence: no row of the cell for :data:`SILENCE_BUDGETS` budgets. The silence also counts the
task's data preparation and evaluation, which are not part of its fit (on MNIST a cold cache's
data load and neighbour constraints take minutes), so it waits a second budget for them before
it decides that the running fits are over the first: then the process group is killed
(SIGKILL; the task claims are OS file locks and go with it).
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..errors import BoardError, DMLBenchError
from ..experiment.config import parse_config
from ..experiment.sections import DataPlace, Experiment
from .results import log_segments, log_stamp

OVER_BUDGET = "a fit ran over the {:g} s budget"
SILENCE_BUDGETS = 2  # budgets without a landed row after which a cell's running fits are over it


class LandedRows:
    """The whole rows appended to a CSV log (every file of it,
    :func:`~dml_bench.run.results.log_segments`) since this object was made, as dicts.

    Reading starts after the last whole line: a half-written last row of a killed run, which the
    runner cuts before appending (:mod:`dml_bench.run.results`), is not a row, and the rows appended
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


def fit_over_budget(rows: list[dict], cells: list, budget: float) -> tuple[int, str] | None:
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


def run_cells(exp: Experiment, source: str, budget: float, results_root, cells: list,
              supersede: bool = False) -> tuple[str, int, str]:
    """Run ``cells`` one after the other in a child process under the watchdog.

    The child is a fresh interpreter (``python -m dml_bench.run.budget``) in its own session, so
    that killing its process group also ends its loky workers (loky pools do not start inside
    ``multiprocessing`` children); it announces each cell on its stdout before running it.

    Two watches: a fit that landed records a ``fit_time`` above the budget (its data preparation
    and evaluation are not counted), and no row of ``cells`` has landed for twice the budget (the
    running fits are all over it, with room for their tasks' preparation and evaluation; rows of
    other cells, a concurrent run's on the same folder, do not count).

    Parameters
    ----------
    exp : Experiment
        The experiment the cells are of, with its execution settings (``n_jobs``, ``backend``).
    source : str
        Its config file, named in the child's config errors.
    budget : float
        Every fit's budget in seconds.
    results_root : path
        Parent of the experiment's results folder ``<results_root>/<name>/``.
    cells : list of (str, str)
        (data-set label, solver label) pairs of ``exp``.
    supersede : bool
        Passed on to :func:`~dml_bench.run.runner.run_experiment`.

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
    logs = _CellLogs(Path(results_root) / exp.name, cells, budget)
    last, since = logs.stamp(), time.monotonic()
    child, started, reader = _start_child(exp, source, budget, results_root, cells, supersede)
    try:
        over = _watch(child, logs, started, last, since)
        if over:
            _kill_group(child.pid)
            child.wait()
            reader.join()
            return ("over_budget", *over)
    except BaseException:  # Ctrl-C / SIGTERM of the parent: take the cell's workers along
        _kill_group(child.pid)
        raise
    if child.returncode != 0:  # a killed child's workers, left in its group, would run on
        _kill_group(child.pid)
    reader.join()
    over = logs.over_budget_fit(logs.landed())
    if over:
        return ("over_budget", *over)
    if child.returncode != 0:
        d, s = cells[started[-1] if started else 0]
        raise BoardError(f"{d} × {s}: the cell's run stopped with status {child.returncode} "
                         "(its message is above)")
    return "ok", len(cells), ""


class _CellLogs:
    """The logs of an experiment's results folder ``out``, watched for new rows of ``cells``."""

    def __init__(self, out: Path, cells: list, budget: float):
        self.logs = [out / name for name in ("runs.csv", "tuning.csv", "errors.csv")]
        self.tails = [LandedRows(path) for path in self.logs]  # runs and tuning rows are fits
        self.cells, self.budget = cells, budget

    def stamp(self) -> tuple:
        """The logs' stamps (:func:`~dml_bench.run.results.log_stamp`): a change means new rows."""
        return tuple(log_stamp(path) for path in self.logs)

    def landed(self) -> list[list[dict]]:
        """The new rows of ``cells`` in each log (a concurrent run's other cells left out)."""
        return [[row for row in tail.new() if _cell(row) in self.cells] for tail in self.tails]

    def over_budget_fit(self, rows: list[list[dict]]) -> tuple[int, str] | None:
        """:func:`fit_over_budget` of the landed runs and tuning rows."""
        return fit_over_budget(rows[0] + rows[1], self.cells, self.budget)


def _start_child(exp: Experiment, source: str, budget: float, results_root, cells: list,
                 supersede: bool) -> tuple[subprocess.Popen, list, threading.Thread]:
    """Start the cells' child process, its arguments written to its stdin, and a thread that
    collects the indices of the cells it announces (the list it fills)."""
    # the resolved experiment, not the file: the child runs the very data sets planned here (an
    # `openml_suite:` entry is listed once, by the parent) with the command line's overrides
    args = {"experiment": exp.to_dict(), "source": source,
            "results_root": str(results_root), "cells": cells, "budget": budget,
            "supersede": supersede}
    started = []  # indices of the cells the child has announced, read by a thread

    def follow(stream):
        for line in stream:
            started.append(int(line))

    # the arguments go over stdin, not argv: a long list of cells (an OpenML suite's) stays clear
    # of the kernel's limit on one argument, and the notes' text stays out of the command line,
    # where a `pkill -f` aimed at another program would match it
    child = subprocess.Popen([sys.executable, "-m", "dml_bench.run.budget"],
                             start_new_session=True, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        child.stdin.write(json.dumps(args))
        child.stdin.close()
    except BrokenPipeError:  # the child stopped before reading: its status says why, below
        pass
    reader = threading.Thread(target=follow, args=(child.stdout,), daemon=True)
    reader.start()
    return child, started, reader


def _watch(child: subprocess.Popen, logs: _CellLogs, started: list, last: tuple,
           since: float) -> tuple[int, str] | None:
    """Wait for ``child`` to end, checking the logs as it runs: the index and reason of the cell
    over budget (a landed fit over it, or no row for twice the budget), or None once it ended.
    ``last`` and ``since`` are the logs' stamp and the time of the last row seen."""
    budget = logs.budget
    while True:
        try:
            child.wait(timeout=min(0.2, budget / 4))
            return None
        except subprocess.TimeoutExpired:
            pass
        now, current, over = time.monotonic(), logs.stamp(), None
        if current != last:  # a log changed: rows of these cells, or a concurrent run's
            last, rows = current, logs.landed()
            if any(rows):
                since, over = now, logs.over_budget_fit(rows)
        if over is None and now - since > SILENCE_BUDGETS * budget:
            # the silence, a measured lower bound of the running fits' time plus their task's
            # data preparation and evaluation
            silent = now - since
            seconds = f"{silent:.0f}" if silent >= 10 else f"{silent:.3g}"
            over = started[-1] if started else 0, (
                f"{OVER_BUDGET.format(budget)} (no fit ended in {seconds} s, data preparation "
                "included)")
        if over:
            return over


def _cell_main(payload: str) -> int:  # pragma: no cover - runs in the child process
    """Entry point of the cells' child process: the runner restricted to one cell at a time.

    ``payload``: the JSON arguments :func:`run_cells` writes to the child's stdin."""
    from .progress import task_progress
    from .runner import Selection, run_experiment

    args = json.loads(payload)
    exp = parse_config(args["experiment"], source=args["source"], check_data=False)
    for i, (dataset, solver) in enumerate(args["cells"]):
        print(i, flush=True)
        print(f"{exp.name}: {dataset} × {solver} (budget {args['budget']:g} s a fit)",
              file=sys.stderr, flush=True)
        try:
            run_experiment(exp, args["results_root"],
                           data=DataPlace(os.environ.get("DMLBENCH_DATA_MIRROR"),
                                          os.environ.get("DMLBENCH_CACHE")),
                           select=Selection([dataset], [solver], supersede=args["supersede"]),
                           echo=lambda m: print(m, file=sys.stderr, flush=True),
                           progress=task_progress(f"{exp.name}: {dataset} × {solver}"))
        except DMLBenchError as exc:
            print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
            return 2
    return 0


def _kill_group(pid: int) -> None:
    """SIGKILL the process group ``pid`` leads (a cell's child and its workers), if any."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


if __name__ == "__main__":  # pragma: no cover - a cell's child process (see run_cells)
    sys.exit(_cell_main(sys.stdin.read()))
