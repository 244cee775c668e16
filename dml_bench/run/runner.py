"""Run an experiment: one task per (dataset, split, solver), in parallel, resumable.

Data flow of a task (:mod:`dml_bench.experiment.knn`): dataset (+ subsample) → split → preprocessing
fitted on the training part → constraints from the training part only → solver fit → k-NN error
on the test part → one row; the tasks run by :mod:`dml_bench.run.execution`. Seeds derive from
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
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from .. import __version__
from ..evaluate import model_error, spectrum_counts
from ..experiment.config import Experiment
from ..experiment.knn import Task, all_tasks, fit_task_solver, plan, prepare_split
from .execution import (BLAS_THREADS, RunSummary, check_labels, cpu_model, execution_backend,
                        failure_row, group_skipped, land_rows, open_logs, rows_saved,
                        set_aside_stale, utc_now)
from .results import RunStore, TaskClaims
from .tuning import TuningIncomplete, run_tune_task, tune_tasks, with_choice


def run_task(task: Task, blas_threads: int = BLAS_THREADS, n_jobs: int = 1,
             timing_mode: bool = False) -> dict:
    """Fit and evaluate one task; returns its ``runs.csv`` row, or an error row on failure."""
    try:
        with threadpool_limits(limits=blas_threads):
            X_train, y_train, X_test, y_test, constraints, c_time, split_seed = prepare_split(task)
            if task.solver.tune and not task.tuned:
                raise TuningIncomplete("the task's tune: block has not been resolved")
            solver, wall, cpu = fit_task_solver(task, X_train, y_train, constraints)
            error = model_error(solver, X_train, y_train, X_test, y_test, task.knn_k,
                                task.tie_break)
            sparsity = (spectrum_counts(solver.components_) if hasattr(solver, "components_")
                        else (None, None))
    except Exception as exc:  # one broken task must not take the experiment down
        return failure_row(task, exc)
    return {
        "task_id": task.task_id, "experiment": task.experiment, "dataset": task.dataset.label,
        "split": task.split, "seed": split_seed, "solver": task.solver.name,
        "label": task.solver.label, "solver_params": json.dumps(task.solver_params(), sort_keys=True),
        "preprocessing": json.dumps({**task.dataset.preprocessing.to_dict(),
                                     "n_samples": task.dataset.n_samples}, sort_keys=True),
        "constraints": json.dumps({"generator": task.generator, **dict(task.generator_params)}),
        "n_train": len(y_train), "n_test": len(y_test), "n_features": X_train.shape[1],
        "n_classes": len(np.unique(y_train)), **constraints.counts(), "knn_k": task.knn_k,
        "tie_break": task.tie_break, "error": error, "fit_time": wall, "fit_cpu_time": cpu,
        "constraint_time": c_time, "n_iter": getattr(solver, "n_iter_", None),
        "objective": getattr(solver, "objective_", None),
        "converged": getattr(solver, "converged_", None),
        "optimality": getattr(solver, "optimality_", None),
        "optimality_measure": getattr(solver, "optimality_measure", ""),
        "n_nonzero_eigenvalues": sparsity[0], "n_features_90_energy": sparsity[1],
        "tuned_params": json.dumps(dict(task.tuned), sort_keys=True) if task.tuned else "",
        "tuning_error": task.tuning_error, "tuning_time": task.tuning_time,
        "blas_threads": blas_threads,
        "n_jobs": n_jobs, "timing_mode": timing_mode, "dmlbench_version": __version__,
        "cpu_model": cpu_model(), "finished_at": utc_now(),
        **({"_trace": getattr(solver, "trace_", {})} if task.save_traces else {}),
    }


def run_experiment(exp: Experiment, results_root: str | Path = "results", *,
                   mirror: str | None = None, cache_dir: str | None = None, force: bool = False,
                   progress: Callable[[int], contextlib.AbstractContextManager] | None = None,
                   echo: Callable[[str], None] = print,
                   datasets: Sequence[str] | None = None,
                   solvers: Sequence[str] | None = None, supersede: bool = False) -> RunSummary:
    """Run every unfinished task of ``exp`` and append its row to ``results/<name>/runs.csv``.

    Parameters
    ----------
    exp : Experiment
        Validated config; ``exp.n_jobs``, ``exp.backend`` and ``exp.timing`` choose the execution.
        With ``timing`` the tasks run one after the other (parallel workers distort timings) and
        earlier rows not produced in timing mode are recomputed.
    results_root : path
        Parent folder of the experiment's results folder.
    force : bool
        Recompute tasks already in ``runs.csv``.
    progress : callable, optional
        ``progress(total)`` returns a context manager with an ``update(n)`` method (a bar).
    datasets : sequence of str, optional
        Run only the tasks of these dataset labels (the rest of the config stays as it is, so a
        later run of the other labels completes the same results folder).
    solvers : sequence of str, optional
        Likewise, run only the tasks of these solver labels.
    supersede : bool
        Move the rows of finished tasks that the config no longer contains (a changed setting or
        default, or an edited data file outside the catalogue, changes a task's id) to
        ``runs_superseded.csv`` / ``tuning_superseded.csv``.
        Without it (or ``force``) such a run is refused before any work, naming the rows.

    Returns
    -------
    RunSummary

    Raises
    ------
    UnknownNameError
        When a label of ``datasets`` or ``solvers`` is not one of the config's.
    NothingSelected
        When ``datasets`` and ``solvers`` together select no task.
    RunRefused
        When finished rows would be superseded without ``supersede`` or ``force``.
    UnsafeLog
        When a log of the results folder is a symbolic link (before any work).
    LogWriteFailed
        When a row cannot be written (a full disk): the message says how many rows the run
        saved; the rows before are on disk and the next run resumes from them.
    SchedulerLost
        When the dask scheduler is lost mid-run, likewise.

    Notes
    -----
    An experiment with ``evaluation: {task: verification}`` runs its (dataset, solver, test fold)
    tasks the same way, by :func:`~dml_bench.run.verification.run_verification_experiment`.
    """
    if exp.task == "verification":
        from .verification import run_verification_experiment

        return run_verification_experiment(
            exp, results_root, mirror=mirror, cache_dir=cache_dir, force=force, progress=progress,
            echo=echo, datasets=datasets, solvers=solvers, supersede=supersede)
    labels = check_labels(exp, datasets, solvers)
    store, tuning = open_logs(exp, results_root)
    tasks, skipped = _selected_tasks(exp, mirror, cache_dir, datasets, solvers, labels, echo)
    every = list(all_tasks(exp, mirror, cache_dir))
    set_aside_stale(exp.name, store, tuning, {t.task_id for t in every},
                    {tt.task_id for t in every for tt in tune_tasks(t)},
                    supersede=supersede, force=force, echo=echo)
    todo = _unfinished(tasks, store, force, exp.timing)
    tune_todo = _tuning_todo(tuning, todo, force)
    summary = RunSummary(total=len(tasks), done_before=len(tasks) - len(todo), skipped=skipped)
    if summary.done_before:
        echo(f"{summary.done_before} of {len(tasks)} tasks already in {store.runs}; "
             "running the rest (--force recomputes)")
    if tune_todo:
        echo(f"{len(tune_todo)} tuning fits (tune: blocks), each dataset's before its final fits, "
             f"logged to {tuning.runs}")
    _run_by_dataset(exp, todo, tune_todo, store, tuning, summary, progress=progress, echo=echo)
    return summary


def _selected_tasks(exp: Experiment, mirror, cache_dir, datasets, solvers, labels,
                    echo) -> tuple[list[Task], list]:
    """The planned tasks and skipped cells of the selected ``datasets`` and ``solvers`` labels
    (all when None); the skipped cells are reported, grouped by reason."""
    tasks, skipped = plan(exp, mirror, cache_dir)
    if datasets:
        tasks = [t for t in tasks if t.dataset.label in datasets]
        skipped = [s for s in skipped if s[0] in datasets]
    if solvers:
        tasks = [t for t in tasks if t.solver.label in solvers]
        skipped = [s for s in skipped if s[1] in solvers]
    for reason, cells in group_skipped(skipped, labels).items():
        echo(f"skipped {', '.join(cells)}: {reason}")
    return tasks, skipped


def _unfinished(tasks: list[Task], store: RunStore, force: bool, timing: bool) -> list[Task]:
    """The tasks to run: those without a row (every one with ``force``; with ``timing`` also
    those whose row is not from a timing run), their present rows dropped."""
    present = store.finished()
    done = set() if force else store.finished(require_timing=timing)
    todo = [t for t in tasks if t.task_id not in done]
    # rows of tasks about to be recomputed (--force, or not from a timing run): only those seen
    # here, never a row that another run on the folder has written since
    store.drop({t.task_id for t in todo} & present)
    return todo


def _run_by_dataset(exp: Experiment, todo: list[Task], tune_todo: list, store: RunStore,
                    tuning: RunStore, summary: RunSummary, *, progress, echo) -> None:
    """Run ``todo`` dataset by dataset (config order): its tuning fits, then its final fits, so
    the rows of a dataset land as soon as its own tuning is done."""
    n_jobs = 1 if exp.timing else exp.n_jobs
    backend = "sequential" if exp.timing else exp.backend
    bar = progress(len(todo) + len(tune_todo)) if progress else contextlib.nullcontext()
    fit = functools.partial(run_task, n_jobs=n_jobs, timing_mode=exp.timing)
    claims = TaskClaims(store.dir)
    with rows_saved(summary, len(todo)), bar as b, \
            execution_backend(backend, exp.scheduler, n_jobs):

        def land(fn, work: list, into: RunStore, count: bool = True):
            """Run ``work`` (:func:`~dml_bench.run.execution.land_rows`); tasks another run
            finished are counted, not rerun."""
            landed = land_rows(fn, work, into, n_jobs=n_jobs, backend=backend, claims=claims,
                               require_timing=exp.timing and into is store, bar=b, echo=echo,
                               record=lambda row: _record(into, row, summary, echo, count=count))
            if count:
                summary.elsewhere += len(work) - landed

        for dataset in dict.fromkeys(t.dataset.label for t in todo):
            land(run_tune_task, [tt for tt in tune_todo if tt.task.dataset.label == dataset],
                 tuning, count=False)
            final, failed = _resolve_tuning([t for t in todo if t.dataset.label == dataset],
                                            tuning)
            for row in failed:
                _record(store, row, summary, echo)
            land(fit, final, store)


def _tuning_todo(tuning: RunStore, todo: list[Task], force: bool) -> list:
    """Tuning fits still needed by ``todo``; with ``force`` ``todo``'s fits are redone."""
    needed = [tt for t in todo for tt in tune_tasks(t)]
    if force:
        tuning.drop({tt.task_id for tt in needed})
    done = tuning.finished()
    return [tt for tt in needed if tt.task_id not in done]


def _resolve_tuning(todo: list[Task], tuning: RunStore) -> tuple[list[Task], list[dict]]:
    """Fill in the chosen parameters of tasks with a ``tune:`` block; failures as error rows."""
    rows = tuning.read() if any(t.solver.tune for t in todo) else None
    final, failed = [], []
    for task in todo:
        if not task.solver.tune:
            final.append(task)
            continue
        try:
            final.append(with_choice(task, rows))
        except TuningIncomplete as exc:
            failed.append(failure_row(task, exc))
    return final, failed


def _record(store: RunStore, row: dict, summary: RunSummary, echo, count: bool = True) -> None:
    """Append a finished row to ``store``, or a failed one to ``errors.csv`` (and say so); the
    row counts as run once it is on disk."""
    trace = row.pop("_trace", None)
    if row.pop("_failed", False):
        store.append_error(row)
        summary.failed += 1
        echo(f"\nFAILED {row['dataset']} split {row['split']} {row['label']}: {row['message']}")
    else:
        if trace is not None:  # before the row: a row in runs.csv means its trace is there
            store.write_trace(row["task_id"], trace)
        store.append(row)
        summary.ran += count


