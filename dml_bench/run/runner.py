"""Run an experiment: its tasks in parallel, resumable, whatever their kind.

The kind of an experiment (``evaluation.task``) says what a task is (:class:`~.kind.RunKind`):
for k-NN classification (:mod:`dml_bench.run.knn`) one (dataset, split, solver), whose data
flow is dataset (+ subsample) → split → preprocessing fitted on the training part →
constraints from the training part only → solver fit → k-NN error on the test part → one row;
for pair verification (:mod:`dml_bench.run.verification`) one (dataset, solver, test fold). The
tasks run by :mod:`dml_bench.run.execution`. Seeds derive from
(experiment seed, dataset, split) only, so results do not depend on ``n_jobs`` or task order.
Each worker pins BLAS to ``blas_threads`` threads (threadpoolctl): on small GEMMs threaded BLAS
inside parallel workers was measured ~30× slower on 2-core machines.

A row counts as run (``RunSummary.ran``) once it is on disk. Corrupt lines of the logs are set
aside into ``<log>.corrupt`` with a warning (:mod:`dml_bench.run.results`), and a run that waits
for tasks another run on the folder holds says so. Several runs of one config on one results
folder share its task list: each task is run by the run that claims it first
(:class:`~dml_bench.run.results.TaskClaims`); a run that meets a task claimed by another waits
for it at the end and runs it only if the other run did not finish it (it failed, or died). So
no task runs twice and none is lost.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..experiment.sections import DEFAULT_PLACE, DataPlace, Experiment
from . import knn, retrieval, verification
from .execution import (Landing, RunSummary, check_labels, execution_backend, failure_row,
                        group_skipped, land_rows, open_logs, rows_saved, set_aside_stale)
from .kind import RunKind
from .results import RunStore, TaskClaims
from .tuning import TuningIncomplete

#: the run of each task kind, by ``evaluation.task``
RUN_KINDS: dict[str, RunKind] = {"knn": knn.KIND, "verification": verification.KIND,
                                  "retrieval": retrieval.KIND}


@dataclass(frozen=True)
class Selection:
    """What a run does of an experiment's tasks.

    Attributes
    ----------
    datasets, solvers : sequence of str, optional
        Run only the tasks of these dataset / solver labels (the rest of the config stays as it
        is, so a later run of the other labels completes the same results folder).
    force : bool
        Recompute tasks already in ``runs.csv``.
    supersede : bool
        Move the rows of finished tasks that the config no longer contains (a changed setting or
        default, or an edited data file outside the catalogue, changes a task's id) to
        ``runs_superseded.csv`` / ``tuning_superseded.csv``. Without it (or ``force``) such a run
        is refused before any work, naming the rows.
    """

    datasets: Sequence[str] | None = None
    solvers: Sequence[str] | None = None
    force: bool = False
    supersede: bool = False


#: every task of the experiment, finished ones kept
EVERY_TASK = Selection()


def run_experiment(exp: Experiment, results_root: str | Path = "results", *,
                   data: DataPlace = DEFAULT_PLACE, select: Selection = EVERY_TASK,
                   progress: Callable[[int], contextlib.AbstractContextManager] | None = None,
                   echo: Callable[[str], None] = print) -> RunSummary:
    """Run every unfinished task of ``exp`` and append its row to ``results/<name>/runs.csv``.

    Parameters
    ----------
    exp : Experiment
        Validated config; its ``execution`` section chooses the workers and the backend. With
        ``execution.timing`` the tasks run one after the other (parallel workers distort
        timings) and earlier rows not produced in timing mode are recomputed.
    results_root : path
        Parent folder of the experiment's results folder.
    data : DataPlace
        The data mirror and the datasets' cache.
    select : Selection
        The labels to run, and whether finished or superseded rows are recomputed.
    progress : callable, optional
        ``progress(total)`` returns a context manager with an ``update(n)`` method (a bar).
    echo : callable
        Where the run's messages go.

    Returns
    -------
    RunSummary

    Raises
    ------
    UnknownNameError
        When a label of ``select`` is not one of the config's.
    NothingSelected
        When ``select.datasets`` and ``select.solvers`` together select no task.
    RunRefused
        When finished rows would be superseded without ``supersede`` or ``force``.
    UnsafeLog
        When a log of the results folder is a symbolic link (before any work).
    LogWriteFailed
        When a row cannot be written (a full disk): the message says how many rows the run
        saved; the rows before are on disk and the next run resumes from them.
    SchedulerLost
        When the dask scheduler is lost mid-run, likewise.
    """
    kind = RUN_KINDS[exp.kind]
    labels = check_labels(exp, select.datasets, select.solvers)
    store, tuning = open_logs(exp, results_root, kind.columns(exp))
    every, tasks, skipped = kind.plan(exp, data, echo)
    tasks, skipped = _selected(tasks, skipped, select, labels, echo)
    set_aside_stale(exp.name, (store, tuning), ({t.task_id for t in every},
                    {tt.task_id for t in every for tt in kind.tuning_tasks(t)}),
                    supersede=select.supersede or select.force, echo=echo)
    timing = exp.execution.timing and kind.timed
    todo = _unfinished(tasks, store, select.force, timing)
    tune_todo = _tuning_todo(kind, tuning, todo, select.force)
    summary = RunSummary(total=len(tasks), done_before=len(tasks) - len(todo), skipped=skipped)
    if summary.done_before:
        echo(f"{summary.done_before} of {len(tasks)} tasks already in {store.runs}; "
             "running the rest (--force recomputes)")
    if tune_todo:
        echo(f"{len(tune_todo)} tuning fits (tune: blocks), each group's before its final fits, "
             f"logged to {tuning.runs}")
    _run_by_group(exp, kind, (todo, tune_todo), (store, tuning), summary,
                  progress=progress, echo=echo)
    return summary


def _selected(tasks: list, skipped: list, select: Selection, labels: list,
              echo) -> tuple[list, list]:
    """The tasks and skipped cells of the selected dataset and solver labels (all when None);
    the skipped cells are reported, grouped by reason."""
    datasets, solvers = select.datasets, select.solvers
    tasks = [t for t in tasks if (not datasets or t.dataset.label in datasets)
             and (not solvers or t.solver.label in solvers)]
    skipped = [s for s in skipped if (not datasets or s[0] in datasets)
               and (not solvers or s[1] in solvers)]
    for reason, cells in group_skipped(skipped, labels).items():
        echo(f"skipped {', '.join(cells)}: {reason}")
    return tasks, skipped


def _unfinished(tasks: list, store: RunStore, force: bool, timing: bool) -> list:
    """The tasks to run: those without a row (every one with ``force``; with ``timing`` also
    those whose row is not from a timing run), their present rows dropped."""
    present = store.finished()
    done = set() if force else store.finished(require_timing=timing)
    todo = [t for t in tasks if t.task_id not in done]
    # rows of tasks about to be recomputed (--force, or not from a timing run): only those seen
    # here, never a row that another run on the folder has written since
    store.drop({t.task_id for t in todo} & present)
    return todo


def _tuning_todo(kind: RunKind, tuning: RunStore, todo: list, force: bool) -> list:
    """Tuning fits still needed by ``todo``, each once (tasks may share them); with ``force``
    ``todo``'s fits are redone."""
    needed = list({tt.task_id: tt for t in todo for tt in kind.tuning_tasks(t)}.values())
    if force:
        tuning.drop({tt.task_id for tt in needed})
    done = tuning.finished()
    return [tt for tt in needed if tt.task_id not in done]


def _run_by_group(exp: Experiment, kind: RunKind, work: tuple[list, list],
                  logs: tuple[RunStore, RunStore], summary: RunSummary, *, progress,
                  echo) -> None:
    """Run the final tasks and tuning fits of ``work`` group by group (:attr:`RunKind.group`,
    in plan order): a group's tuning fits, then its final fits, so the rows of a group land as
    soon as its own tuning is done."""
    (todo, tune_todo), (store, tuning) = work, logs
    timing = exp.execution.timing and kind.timed
    n_jobs = 1 if timing else exp.execution.n_jobs
    backend = "sequential" if timing else exp.execution.backend
    bar = progress(len(todo) + len(tune_todo)) if progress else contextlib.nullcontext()
    fit = functools.partial(kind.run_task, n_jobs=n_jobs, timing_mode=timing)
    record = functools.partial(_record, kind, store, summary, echo)
    if backend == "loky" and n_jobs > 1 and todo:  # workers on this machine share numba's cache
        from ..solvers.warmup import compile_kernels

        compile_kernels({t.solver.name: dict(t.solver.params) for t in todo})
    with rows_saved(summary, len(todo)), bar as b, \
            execution_backend(backend, exp.execution.scheduler, n_jobs):
        landing = Landing(n_jobs, backend, TaskClaims(store.dir), b, echo)

        def land(fn, tasks: list, into: RunStore, count: bool = True):
            """Run ``tasks`` (:func:`~dml_bench.run.execution.land_rows`); tasks another run
            finished are counted, not rerun."""
            landed = land_rows(fn, tasks, into, landing, require_timing=timing and into is store,
                               record=lambda row: record(into, row, count=count))
            if count:
                summary.elsewhere += len(tasks) - landed

        for group in dict.fromkeys(kind.group(t) for t in todo):
            land(kind.run_tuning_task, [tt for tt in tune_todo if kind.group(tt) == group],
                 tuning, count=False)
            final = [t for t in todo if kind.group(t) == group]
            land(fit, _resolved(kind, final, tuning, lambda row: record(store, row)), store)


def _resolved(kind: RunKind, tasks: list, tuning: RunStore, record) -> list:
    """``tasks`` with their ``tune:`` choices filled in (in the kind's order); a task whose
    tuning is incomplete is recorded as failed instead."""
    if kind.order is not None:
        tasks = sorted(tasks, key=kind.order)
    rows = tuning.read() if any(t.solver.tune for t in tasks) else None
    final = []
    for task in tasks:
        try:
            final.append(kind.resolve(task, rows) if task.solver.tune else task)
        except TuningIncomplete as exc:
            record(failure_row(task, exc))
    return final


def _record(kind: RunKind, store: RunStore, summary: RunSummary, echo, into: RunStore,
            row: dict, count: bool = True) -> None:
    """Append a finished row to ``into``, or a failed one to its ``errors.csv`` (and say so);
    the row's side data are written first (:attr:`RunKind.save_extra`). A row counts as run
    once it is on disk."""
    extra = {key: row.pop(key) for key in [k for k in row if k.startswith("_")]}
    if extra.pop("_failed", False):
        into.append_error(row)
        summary.failed += 1
        echo(f"\nFAILED {row['dataset']} {kind.unit} {row['split']} {row['label']}: "
             f"{row['message']}")
        return
    kind.save_extra(store, row["task_id"], extra)
    into.append(row)
    summary.ran += count
