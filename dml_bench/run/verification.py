"""Running a pair-verification experiment (``evaluation: {task: verification}``), resumably.

:func:`run_verification_experiment` runs one task per (dataset entry, solver, test fold) of the
protocol of :mod:`dml_bench.experiment.verification`, each a row of ``runs.csv``
(:data:`~dml_bench.experiment.verification_tasks.VERIFICATION_COLUMNS`) with its test pairs' distances in
``scores/<task_id>.csv`` (:func:`write_scores`), resumable and shared between concurrent runs
like every run (:mod:`dml_bench.run.execution`). A solver with a ``tune:`` grid is first tuned on
View 1 (fit on ``pairsDevTrain``, the grid point of highest accuracy on ``pairsDevTest`` wins,
:func:`with_view1_choice`; rows in ``tuning.csv``), as both papers select their parameters on
View 1.
"""

from __future__ import annotations

import contextlib
import functools
import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
from threadpoolctl import threadpool_limits

from .. import __version__
from ..experiment.config import LFW_TABLES
from ..experiment.verification_tasks import (VERIFICATION_COLUMNS, VerificationTask, data_problem,
                                             fit_and_score, tuning_tasks, verification_tasks)
from .execution import (RunSummary, check_labels, execution_backend, failure_row, group_skipped,
                        land_rows, open_logs, rows_saved, set_aside_stale, utc_now)
from .results import RunStore, TaskClaims, _atomic_write, _refuse_link


def run_verification_task(task: VerificationTask, blas_threads: int = 1, n_jobs: int = 1) -> dict:
    """One final task's ``runs.csv`` row (its test distances written to ``scores/``), or an
    error row."""
    try:
        with threadpool_limits(limits=blas_threads):
            if task.solver.tune and not task.tuned:
                raise ValueError("the task's tune: block has not been resolved on View 1")
            out = fit_and_score(task)
    except Exception as exc:  # one broken task must not take the experiment down
        return failure_row(task, exc)
    first, second = out.pop("pairs")
    scores = pd.DataFrame({"first": first, "second": second, "same": out.pop("same"),
                           "distance": out.pop("distances")})
    return {"task_id": task.task_id, "experiment": task.experiment, "dataset": task.dataset.label,
            "split": task.fold, "seed": task.seed, "solver": task.solver.name,
            "label": task.solver.label,
            "solver_params": json.dumps(task.full_params(), sort_keys=True, default=str),
            "preprocessing": json.dumps(task.dataset.preprocessing.to_dict(), sort_keys=True),
            "features": task.dataset.name, "folds": task.spec.folds, **out,
            "error": 1 - out["accuracy"], "n_test": out["n_test_pairs"],
            "tuned_params": json.dumps(dict(task.tuned), sort_keys=True) if task.tuned else "",
            "tuning_accuracy": task.tuning_accuracy, "tuning_time": task.tuning_time,
            "blas_threads": blas_threads, "n_jobs": n_jobs, "dmlbench_version": __version__,
            "finished_at": utc_now(), "_scores": scores}


def run_tuning_task(task: VerificationTask, blas_threads: int = 1) -> dict:
    """One View 1 fit of a grid point: its ``tuning.csv`` row (``error`` = 1 − DevTest
    accuracy), or an error row."""
    try:
        with threadpool_limits(limits=blas_threads):
            out = fit_and_score(task)
    except Exception as exc:
        return failure_row(task, exc)
    return {"task_id": task.task_id, "outer_task_id": "", "experiment": task.experiment,
            "dataset": task.dataset.label, "split": "view1", "label": task.solver.label,
            "fold": "pairsDevTest", "params": json.dumps(dict(task.point), sort_keys=True),
            "error": 1 - out["accuracy"], "fit_time": out["fit_time"],
            "n_fit": out["n_train_pairs"], "n_eval": out["n_test_pairs"], "finished_at": utc_now()}


def with_view1_choice(task: VerificationTask, tuning: pd.DataFrame) -> VerificationTask:
    """``task`` with the grid point of highest View 1 accuracy (the first in grid order on
    ties); ValueError when a grid point has no row yet."""
    rows = tuning.set_index("task_id") if len(tuning) else tuning
    tried = []
    for tt in tuning_tasks(task):
        if tt.task_id not in rows.index:
            raise ValueError(f"View 1 fit of {dict(tt.point)} did not finish (see errors.csv)")
        row = rows.loc[tt.task_id]
        tried.append((float(row["error"]), float(row["fit_time"]), tt.point))
    best = min(range(len(tried)), key=lambda i: tried[i][0])
    return replace(task, tuned=tried[best][2], tuning_accuracy=1 - tried[best][0],
                   tuning_time=sum(t for _, t, _ in tried))


def run_verification_experiment(exp, results_root="results", *, mirror=None, cache_dir=None,
                                force: bool = False, progress=None, echo=print, datasets=None,
                                solvers=None, supersede: bool = False):
    """:func:`~dml_bench.run.runner.run_experiment` for ``evaluation: {task: verification}``.

    The same contract: unfinished tasks only (``force`` recomputes), rows appended as they
    finish, tasks shared with concurrent runs on the folder through claims, rows of tasks the
    config no longer has refused or (``supersede``) moved aside, rows counted once they are on
    disk, logs checked and never written through a symlink. View 1 tuning fits of a dataset
    entry run before its final fits.

    Returns
    -------
    RunSummary
    """
    labels = check_labels(exp, datasets, solvers)
    store, tuning = open_logs(exp, results_root, VERIFICATION_COLUMNS)
    every = verification_tasks(exp, mirror, cache_dir)
    problem = data_problem(exp, mirror, cache_dir)
    tasks, skipped = _selected_tasks(exp, every, problem, labels, datasets, solvers, echo)
    set_aside_stale(exp.name, store, tuning, {t.task_id for t in every},
                    {tt.task_id for t in every for tt in tuning_tasks(t)},
                    supersede=supersede, force=force, echo=echo)
    todo, tune_todo = _unfinished(tasks, store, tuning, force)
    summary = RunSummary(total=len(tasks), done_before=len(tasks) - len(todo), skipped=skipped)
    if summary.done_before:
        echo(f"{summary.done_before} of {len(tasks)} tasks already in {store.runs}; "
             "running the rest (--force recomputes)")
    _run_by_family(exp, todo, tune_todo, store, tuning, summary, progress=progress, echo=echo)
    return summary


def _selected_tasks(exp, every: list, problem: str | None, labels, datasets, solvers,
                    echo) -> tuple[list, list]:
    """The tasks of the selected ``datasets`` and ``solvers`` labels (all when None), none when
    the data cannot be had (``problem``: every cell skipped with it); the skipped cells and the
    raw-pixel entries are reported."""
    tasks, skipped = ([], [(d, s.label, f"data not available: {problem}") for d in labels
                           for s in exp.solvers]) if problem else (every, [])
    tasks = [t for t in tasks if (not datasets or t.dataset.label in datasets)
             and (not solvers or t.solver.label in solvers)]
    for reason, cells in group_skipped(skipped, labels).items():
        echo(f"skipped {', '.join(cells)}: {reason}")
    for entry in exp.datasets:
        if entry.name == "lfw_pixels":
            echo(f"note: {entry.label}: {LFW_TABLES['lfw_pixels']}")
    return tasks, skipped


def _unfinished(tasks: list, store: RunStore, tuning: RunStore, force: bool) -> tuple[list, list]:
    """The tasks without a row (all with ``force``, their rows dropped) and the View 1 tuning
    fits they still need."""
    done = set() if force else store.finished()
    todo = [t for t in tasks if t.task_id not in done]
    store.drop({t.task_id for t in todo} & store.finished())
    tune_needed = list({tt.task_id: tt for t in todo for tt in tuning_tasks(t)}.values())
    if force:
        tuning.drop({tt.task_id for tt in tune_needed})
    tune_done = tuning.finished()
    return todo, [tt for tt in tune_needed if tt.task_id not in tune_done]


def _run_by_family(exp, todo: list, tune_todo: list, store: RunStore, tuning: RunStore,
                   summary: RunSummary, *, progress, echo) -> None:
    """Run ``todo`` family by family (:func:`_family`): entries that differ only in the PCA
    dimension (or the triplet count) share each fold's decomposition, so they run together,
    fold by fold, their View 1 tuning first."""
    bar = progress(len(todo) + len(tune_todo)) if progress else contextlib.nullcontext()
    claims = TaskClaims(store.dir)
    final_fn = functools.partial(run_verification_task, n_jobs=exp.n_jobs)

    def record(into, row, count=True):
        scores = row.pop("_scores", None)
        if row.pop("_failed", False):
            into.append_error(row)
            summary.failed += 1
            echo(f"\nFAILED {row['dataset']} fold {row['split']} {row['label']}: {row['message']}")
            return
        if scores is not None:  # before the row: a row in runs.csv means its scores are there
            write_scores(store.dir, row["task_id"], scores)
        into.append(row)
        summary.ran += count

    with rows_saved(summary, len(todo)), bar as b, \
            execution_backend(exp.backend, exp.scheduler, exp.n_jobs):

        def land(fn, work, into, count=True):
            landed = land_rows(fn, work, into, n_jobs=exp.n_jobs, backend=exp.backend,
                               claims=claims, require_timing=False, bar=b, echo=echo,
                               record=lambda row: record(into, row, count))
            if count:
                summary.elsewhere += len(work) - landed

        for family in dict.fromkeys(_family(t) for t in todo):
            land(run_tuning_task, [tt for tt in tune_todo if _family(tt) == family], tuning,
                 count=False)
            rows = tuning.read()
            final = []
            for task in sorted((t for t in todo if _family(t) == family), key=lambda t: t.fold):
                try:
                    final.append(with_view1_choice(task, rows) if task.solver.tune else task)
                except ValueError as exc:
                    record(store, failure_row(task, exc))
            land(final_fn, final, store)


def _family(task: VerificationTask) -> tuple:
    """The data and preprocessing a task's fold decomposition depends on (not the PCA dimension)."""
    prep = task.dataset.preprocessing
    return task.dataset.name, task.path, prep.sqrt, prep.normalize, bool(prep.pca)


def write_scores(results_dir: Path, task_id: str, scores: pd.DataFrame) -> Path:
    """``scores/<task_id>.csv``: the test pairs of a final task (rows of the descriptor table),
    same/not-same and the squared learned distance, written atomically."""
    path = Path(results_dir) / "scores" / f"{task_id}.csv"
    _refuse_link(path.parent)
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(path, scores.to_csv(index=False, lineterminator="\n"))
    return path
