"""The run side of a task kind: what :func:`~dml_bench.run.runner.run_experiment` needs to know
of a kind (k-NN classification: :mod:`dml_bench.run.knn`; pair verification:
:mod:`dml_bench.run.verification`). The runner plans, resumes, claims, tunes and lands the rows
of every kind the same way, through these functions only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class RunKind:
    """How the runner runs the tasks of one kind.

    Attributes
    ----------
    columns : callable
        ``columns(exp)``: the columns of the kind's ``runs.csv``.
    plan : callable
        ``plan(exp, data, echo)``: ``(every task, the tasks that can run, skipped cells)``, the
        skipped cells as ``(dataset label, solver label, reason)``.
    tuning_tasks : callable
        ``tuning_tasks(task)``: the fits of a task's ``tune:`` grid (none without one).
    run_task, run_tuning_task : callable
        ``run_task(task, blas_threads, n_jobs=, timing_mode=)`` and
        ``run_tuning_task(tuning_task, blas_threads)``: a ``runs.csv`` / ``tuning.csv`` row, or
        an error row (``_failed``). Keys starting with ``_`` are side data for ``save_extra``.
    resolve : callable
        ``resolve(task, tuning_rows)``: the task with its grid's choice filled in; raises
        :class:`~dml_bench.run.tuning.TuningIncomplete` when a grid point has no row.
    group : callable
        ``group(task_or_tuning_task)``: tasks of one group run together, their tuning fits first.
    save_extra : callable
        ``save_extra(store, task_id, extra)``: writes a row's side data (a trace, test scores)
        before the row itself, so that a row in ``runs.csv`` means its side files are there.
    order : callable or None
        Sort key of the final tasks within a group (None: plan order).
    unit : str
        What a task's ``split`` column counts, for messages ("split", "fold").
    timed : bool
        Whether ``execution.timing`` applies (tasks one at a time, rows marked as timed).
    """

    columns: Callable
    plan: Callable
    tuning_tasks: Callable
    run_task: Callable
    run_tuning_task: Callable
    resolve: Callable
    group: Callable
    save_extra: Callable
    order: Callable | None = None
    unit: str = "split"
    timed: bool = True
