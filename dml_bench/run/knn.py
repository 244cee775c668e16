"""The k-NN task kind's run: one task is a fit and the k-NN test error of its solver.

:data:`KIND` is what :func:`~dml_bench.run.runner.run_experiment` runs a k-NN classification
experiment (``evaluation: {task: knn}``, the default) with: the tasks planned by
:mod:`dml_bench.experiment.knn`, their ``tune:`` fits (:mod:`dml_bench.run.tuning`), one
``runs.csv`` row per task (:func:`run_task`), the solver's per-iteration trace beside it when
``evaluation.save_traces`` asks for it. Its tasks run dataset by dataset, each dataset's tuning
fits first.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
from threadpoolctl import threadpool_limits

from .. import __version__
from ..evaluate import model_error, model_spectrum_counts
from ..experiment.sections import DataPlace, Experiment
from ..experiment.knn import Task, all_tasks, fit_task_solver, plan, prepare_split
from .execution import BLAS_THREADS, cpu_model, failure_row, utc_now
from .kind import RunKind
from .results import RUN_COLUMNS, RunStore
from .tuning import TuneTask, TuningIncomplete, run_tune_task, tune_tasks, with_choice


def run_task(task: Task, blas_threads: int = BLAS_THREADS, n_jobs: int = 1,
             timing_mode: bool = False, measure: Callable | None = None) -> dict:
    """Fit and evaluate one task; returns its ``runs.csv`` row, or an error row on failure.

    ``measure(task, solver, X_test, y_test)`` adds the columns it returns to the row (a kind
    that measures more of each fit than its k-NN error: :mod:`dml_bench.run.retrieval`)."""
    try:
        with threadpool_limits(limits=blas_threads):
            X_train, y_train, X_test, y_test, constraints, c_time, split_seed = prepare_split(task)
            if task.solver.tune and not task.tuned:
                raise TuningIncomplete("the task's tune: block has not been resolved")
            solver, wall, cpu = fit_task_solver(task, X_train, y_train, constraints)
            error = model_error(solver, X_train, y_train, X_test, y_test,
                                task.evaluation.knn_k, task.evaluation.tie_break)
            sparsity = model_spectrum_counts(solver)
            more = measure(task, solver, X_test, y_test) if measure else {}
    except Exception as exc:  # one broken task must not take the experiment down
        return failure_row(task, exc)
    return {
        "task_id": task.task_id, "experiment": task.experiment, "dataset": task.dataset.label,
        "split": task.split, "seed": split_seed, "solver": task.solver.name,
        "label": task.solver.label, "solver_params": json.dumps(task.solver_params(), sort_keys=True),
        "preprocessing": json.dumps({**task.dataset.preprocessing.to_dict(),
                                     "n_samples": task.dataset.n_samples}, sort_keys=True),
        "constraints": json.dumps({"generator": task.constraints.generator,
                                   **dict(task.constraints.params)}),
        "n_train": len(y_train), "n_test": len(y_test), "n_features": X_train.shape[1],
        "n_classes": len(np.unique(y_train)), **constraints.counts(),
        "knn_k": task.evaluation.knn_k, "tie_break": task.evaluation.tie_break, "error": error, "fit_time": wall, "fit_cpu_time": cpu,
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
        **({"_trace": getattr(solver, "trace_", {})} if task.evaluation.save_traces else {}),
        **more,
    }


def _plan(exp: Experiment, data: DataPlace, echo) -> tuple[list, list, list]:
    """Every task of ``exp``, those that can run, and the cells that cannot (with reasons)."""
    tasks, skipped = plan(exp, data)
    return list(all_tasks(exp, data)), tasks, skipped


def _group(task: Task | TuneTask) -> str:
    """A task's dataset label: a dataset's tuning fits run before its final fits."""
    return (task.task if isinstance(task, TuneTask) else task).dataset.label


def _save_trace(store: RunStore, task_id: str, extra: dict) -> None:
    """``traces/<task_id>.csv`` of a row that carries the solver's trace."""
    if extra.get("_trace") is not None:
        store.write_trace(task_id, extra["_trace"])


#: the k-NN classification task kind
KIND = RunKind(columns=lambda exp: RUN_COLUMNS, plan=_plan, tuning_tasks=tune_tasks, run_task=run_task,
               run_tuning_task=run_tune_task, resolve=with_choice, group=_group,
               save_extra=_save_trace)
