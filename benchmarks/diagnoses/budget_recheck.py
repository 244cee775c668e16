"""Recheck the leaderboard's over-budget cells with the fit alone on the clock.

The board's budget watch (:mod:`dml_bench.run.budget`) marks a cell ``over_budget`` in
``results/leaderboard/cells.csv``. Such a mark holds when a fit of the cell runs over the budget
with only the fit on the clock, without the task's data preparation (the child's start, the data
load, the split's preprocessing and constraints) and evaluation. This script times one: the
board's first fit of the cell (split 0; with a ``tune:`` block its first grid point on its first
tuning fold, else the final fit), on the runner's own tasks (``all_tasks``, ``prepare_split``,
one BLAS thread, the solver built as the runner builds it). The task runs in a child process,
which is stopped once its fit has run for the budget.

One row per fit, appended to ``results/leaderboard_diagnosis/budget_recheck.csv`` (fits already
there are skipped, so it resumes): ``prep_seconds`` (the task's preparation in the child),
``fit_seconds`` (empty when stopped), ``over_budget`` (the fit reached the budget),
``measured_at`` and the fit's identity. With ``--progress`` the solver runs with ``verbose=2``
and the row also keeps how far the fit got: ``progress``, its last progress line before the
budget (iteration, objective and the optimality measure its stopping rule tests), and
``progress_seconds``, when in the fit that line came; a fit recorded without them is measured
again and its row replaced. A wall-clock budget depends on the machine's speed of
the day: time a fit of the board's record beside the recheck (``--split``, ``--fold``,
``--params``; e.g. the second example below, one of the board's GD fits) and set the two side
by side. Cells default to every cell of the data sets given whose latest record in
``results/leaderboard/cells.csv`` is an ``over_budget`` mark that was measured (not
"estimated").

    DMLBENCH_DATA_MIRROR=../shared/datasets python benchmarks/diagnoses/budget_recheck.py mnist
    python benchmarks/diagnoses/budget_recheck.py mnist --labels gd --split 7 --fold 2/3 \\
        --params '{"lam": 1.0, "step": 0.1}' --budget 1200
    python benchmarks/diagnoses/budget_recheck.py mnist --progress
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import sys
import time
from pathlib import Path

import pandas as pd
from filelock import FileLock
from threadpoolctl import threadpool_limits

from dml_bench.run.execution import cpu_model, utc_now
from dml_bench.leaderboard.board import load_board, read_cells
from dml_bench.experiment.knn import all_tasks, fit_task_solver, prepare_split
from dml_bench.run.tuning import TuneTask, tune_tasks

OUT = Path("results/leaderboard_diagnosis/budget_recheck.csv")
KEY = ["dataset", "label", "split", "fold", "params"]  # a fit's identity in OUT


def cell_fit(exp, dataset: str, label: str, split: int = 0, fold: str | None = None,
             params: dict | None = None):
    """A fit of the cell on ``split``: its first :class:`~dml_bench.run.tuning.TuneTask` (the
    board's first fit), or the one of ``fold`` (e.g. ``"3/3"``) and grid point ``params`` given; the
    split's outer task (its final fit) for a solver without a ``tune:`` block."""
    tasks = [t for t in all_tasks(exp) if t.dataset.label == dataset and t.solver.label == label
             and t.split == split]
    if not tasks:
        raise SystemExit(f"no task of {dataset} × {label} on split {split} in the board")
    fits = [tt for tt in tune_tasks(tasks[0])
            if fold in (None, tt.fold_name) and params in (None, dict(tt.point))]
    if tasks[0].solver.tune is not None and not fits:
        raise SystemExit(f"{dataset} × {label}: no tuning fit of fold {fold} at {params}")
    return (fits or tasks)[0]


def fit_task(fit, **params):
    """The task that ``fit`` (of :func:`cell_fit`) fits, with its grid point as the solver's
    values for a tuning fit (as the tuning fit builds it) and the solver's ``params`` overridden,
    and its tuning fold (None for a final fit)."""
    task, fold = (fit.task, fit.fold) if isinstance(fit, TuneTask) else (fit, None)
    if fold is not None:
        task = dataclasses.replace(task, tuned=fit.point)
    if params:
        task = dataclasses.replace(task, solver=dataclasses.replace(
            task.solver, params={**task.solver.params, **params}))
    return task, fold


def replace_rows(path: Path, new: pd.DataFrame, key: list[str]) -> None:
    """Write ``new`` into the CSV at ``path``, replacing its rows with the same values of ``key``
    (compared as text). The file is rewritten whole (rows from before a new column get it
    empty; the others keep their text), under a lock, so that two runs on disjoint rows lose
    none."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):
        if path.exists():
            kept = pd.read_csv(path, dtype=str, keep_default_na=False)
            seen = pd.MultiIndex.from_frame(new[key].astype(str))
            new = pd.concat([kept[~pd.MultiIndex.from_frame(kept[key]).isin(seen)], new])
        new.to_csv(path, index=False)


class _PipeLines:
    """A text stream that sends each complete line to ``pipe`` as ``("line", seconds, text)``,
    with the seconds since ``start`` (the fit's start): the solver's progress lines."""

    def __init__(self, pipe, start: float):
        self.pipe, self.start, self._buffer = pipe, start, ""

    def write(self, text: str) -> int:
        self._buffer += text
        *lines, self._buffer = self._buffer.split("\n")
        for line in filter(None, lines):
            self.pipe.send(("line", time.perf_counter() - self.start, line))
        return len(text)

    def flush(self) -> None:
        pass


def _fit_in_child(fit, pipe, progress: bool) -> None:
    """Prepare, report the preparation's seconds, fit (sending the solver's progress lines when
    ``progress``), report the fit's seconds."""
    task, fold = fit_task(fit, **({"verbose": 2} if progress else {}))
    with threadpool_limits(limits=1):
        start = time.perf_counter()
        X_fit, y_fit, *_, constraints, _, _ = prepare_split(task, fold)
        pipe.send(("prep", time.perf_counter() - start))
        if progress:
            sys.stdout = _PipeLines(pipe, time.perf_counter())
        _, wall, _ = fit_task_solver(task, X_fit, y_fit, constraints)
        pipe.send(("fit", wall))


def time_fit(fit, budget: float, progress: bool = False) -> dict:
    """Run ``fit`` in a child; stop it when the fit has run for ``budget`` seconds."""
    parent, child_end = multiprocessing.Pipe()
    child = multiprocessing.Process(target=_fit_in_child, args=(fit, child_end, progress))
    child.start()
    fit, last = None, (None, None)
    try:
        prep = parent.recv()[1]
        deadline = time.monotonic() + budget
        while parent.poll(max(deadline - time.monotonic(), 0.0)):
            message = parent.recv()
            if message[0] == "fit":
                fit = message[1]
                break
            last = message[1:]
    except EOFError:
        raise SystemExit(f"the fit's child stopped with status {child.exitcode}") from None
    finally:
        child.kill()
        child.join()
    row = {"prep_seconds": prep, "fit_seconds": fit, "over_budget": fit is None}
    if progress:
        row.update(progress=last[1], progress_seconds=last[0])
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--labels", nargs="+", help="default: the cells' measured marks")
    parser.add_argument("--config", default="configs/leaderboard.yaml")
    parser.add_argument("--budget", type=float, help="default: the board's")
    parser.add_argument("--split", type=int, default=0)
    parser.add_argument("--fold", help="a tuning fold, e.g. 3/3 (default: the first)")
    parser.add_argument("--params", type=json.loads,
                        help="a grid point as JSON, e.g. '{\"lam\": 1.0}' (default: the first)")
    parser.add_argument("--progress", action="store_true",
                        help="run the solver with verbose=2 and keep its last progress line")
    args = parser.parse_args()
    board = load_board(args.config)
    budget = args.budget or board.budget
    exp = board.experiment
    if args.labels:
        cells = [(d, s) for d in args.datasets for s in args.labels]
    else:
        marks = read_cells(Path("results") / exp.name)  # each cell's latest record
        measured = marks[(marks.status == "over_budget")
                         & ~marks.reason.str.startswith("estimated")
                         & marks.dataset.isin(args.datasets)]
        cells = list(dict.fromkeys(zip(measured.dataset, measured.label)))
    done = (pd.read_csv(OUT, dtype=str, keep_default_na=False) if OUT.exists()
            else pd.DataFrame(columns=KEY))
    if args.progress:  # a fit recorded without its progress is measured again
        done = done[done["progress"] != ""] if "progress" in done else done.iloc[:0]
    done_fits = set(map(tuple, done[KEY].to_numpy()))
    for dataset, label in cells:
        fit = cell_fit(exp, dataset, label, args.split, args.fold, args.params)
        tuning = isinstance(fit, TuneTask)
        row = {"dataset": dataset, "label": label,
               "split": (fit.task if tuning else fit).split,
               "fold": fit.fold_name if tuning else "final",
               "params": json.dumps(dict(fit.point)) if tuning else ""}
        if tuple(str(row[k]) for k in KEY) in done_fits:
            continue
        row.update(budget=budget, **time_fit(fit, budget, args.progress), cpu_model=cpu_model(),
                   measured_at=utc_now())
        replace_rows(OUT, pd.DataFrame([row]), KEY)  # a fit measured again replaces its row
        took = "over the budget" if row["over_budget"] else f"{row['fit_seconds']:.0f} s"
        if row.get("progress"):
            took += f" (at {row['progress_seconds']:.0f} s: {row['progress']})"
        print(f"{dataset} × {label}: preparation {row['prep_seconds']:.0f} s, fit {took}",
              flush=True)


if __name__ == "__main__":
    main()
