"""The pair-verification task kind's run (``evaluation: {task: verification}``).

:data:`KIND` is what :func:`~dml_bench.run.runner.run_experiment` runs a verification experiment
with: one task per (dataset entry, solver, test fold) of the protocol of
:mod:`dml_bench.experiment.verification`, each a row of ``runs.csv``
(:data:`~dml_bench.experiment.verification_tasks.VERIFICATION_COLUMNS`) with its test pairs' distances in
``scores/<task_id>.csv`` (:func:`write_scores`), resumable and shared between concurrent runs
like every run. A solver with a ``tune:`` grid is first tuned on
View 1 (fit on ``pairsDevTrain``, the grid point of highest accuracy on ``pairsDevTest`` wins,
:func:`with_view1_choice`; rows in ``tuning.csv``), as both papers select their parameters on
View 1.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
from threadpoolctl import threadpool_limits

from .. import __version__
from ..experiment.sections import DataPlace, LFW_TABLES
from ..experiment.verification_tasks import (VERIFICATION_COLUMNS, VerificationTask, data_problem,
                                             fit_and_score, tuning_tasks, verification_tasks)
from .execution import failure_row, utc_now
from .kind import RunKind
from .results import RunStore, _atomic_write, _refuse_link
from .tuning import TuningIncomplete


def run_verification_task(task: VerificationTask, blas_threads: int = 1, n_jobs: int = 1,
                          timing_mode: bool = False) -> dict:
    """One final task's ``runs.csv`` row (its test distances for ``scores/``), or an error row
    (``timing_mode`` does not apply: verification rows carry no timing flag)."""
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
    ties); :class:`~dml_bench.run.tuning.TuningIncomplete` when a grid point has no row yet."""
    rows = tuning.set_index("task_id") if len(tuning) else tuning
    tried = []
    for tt in tuning_tasks(task):
        if tt.task_id not in rows.index:
            raise TuningIncomplete(f"View 1 fit of {dict(tt.point)} did not finish (see errors.csv)")
        row = rows.loc[tt.task_id]
        tried.append((float(row["error"]), float(row["fit_time"]), tt.point))
    best = min(range(len(tried)), key=lambda i: tried[i][0])
    return replace(task, tuned=tried[best][2], tuning_accuracy=1 - tried[best][0],
                   tuning_time=sum(t for _, t, _ in tried))


def _plan(exp, data: DataPlace, echo) -> tuple[list, list, list]:
    """Every task of ``exp``; all of them runnable, or none when the data cannot be had (every
    cell skipped with the reason); the raw-pixel entries are noted."""
    every = verification_tasks(exp, data)
    problem = data_problem(exp, data)
    for entry in exp.datasets:
        if entry.name == "lfw_pixels":
            echo(f"note: {entry.label}: {LFW_TABLES['lfw_pixels']}")
    if not problem:
        return every, every, []
    return every, [], [(d.label, s.label, f"data not available: {problem}")
                       for d in exp.datasets for s in exp.solvers]


def _save_scores(store: RunStore, task_id: str, extra: dict) -> None:
    """``scores/<task_id>.csv`` of a final row (:func:`write_scores`)."""
    if extra.get("_scores") is not None:
        write_scores(store.dir, task_id, extra["_scores"])


def _family(task: VerificationTask) -> tuple:
    """The data and preprocessing a task's fold decomposition depends on (not the PCA dimension
    or the triplet count): the tasks of a family run together, fold by fold, so they share each
    fold's decomposition."""
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


#: the pair-verification task kind
KIND = RunKind(columns=lambda exp: VERIFICATION_COLUMNS, plan=_plan, tuning_tasks=tuning_tasks,
               run_task=run_verification_task, run_tuning_task=run_tuning_task,
               resolve=with_view1_choice, group=_family, save_extra=_save_scores,
               order=lambda task: task.fold, unit="fold", timed=False)
