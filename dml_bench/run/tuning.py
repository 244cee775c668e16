"""Hyper-parameter selection nested inside each outer split (a solver's ``tune:`` block).

Ying & Li (2012, §5) tune the trade-off parameters of ITML, LMNN and LMNN-eig "via three-fold
cross validation" on the training part; Shen et al. (2010, 2014) use a held-out validation part
(70/15/15). For every outer task with a ``tune:`` block, each (grid point, fold) is one
:class:`TuneTask` — a runner task like any other, run in parallel and logged to ``tuning.csv`` —
that fits on the fold's fit part and measures the evaluation error on its held-out part. The
final task then takes the grid point with the lowest mean error (ties: the first in grid order)
and refits on the whole training part. Folds come from :func:`splits.tuning_parts`, which never
sees the outer test part; preprocessing and constraints are refitted on each fold's fit part.
"""

from __future__ import annotations

import hashlib
import json
import time
import warnings
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from ..evaluate import model_error
from ..experiment.knn import prepare_split
from .execution import cpu_model, failure_row, utc_now


@dataclass(frozen=True)
class TuneTask:
    """One fit of a grid point on one tuning fold of an outer task."""

    task: object  # tasks.Task
    point: tuple  # ((parameter, value), ...) in grid order
    fold: tuple

    @property
    def task_id(self) -> str:
        key = [self.task.task_id, _params_json(self.point), list(self.fold)]
        return hashlib.sha1(json.dumps(key).encode()).hexdigest()[:16]

    @property
    def fold_name(self) -> str:
        return "validation" if self.fold[0] == "validation" else f"{self.fold[2] + 1}/{self.fold[1]}"


def tune_tasks(task) -> list[TuneTask]:
    """The (grid point × fold) fits of ``task``'s ``tune:`` block (none without one)."""
    tune = task.solver.tune
    if tune is None:
        return []
    return [TuneTask(task, tuple(point.items()), fold)
            for point in tune.points() for fold in tune.folds()]


def run_tune_task(tt: TuneTask, blas_threads: int = 1) -> dict:
    """Fit one grid point on one fold; returns its ``tuning.csv`` row (or an error row)."""
    from ..solvers import SOLVERS

    task = tt.task
    try:
        with threadpool_limits(limits=blas_threads):
            X_fit, y_fit, X_eval, y_eval, constraints, _, _ = prepare_split(task, tt.fold)
            solver = SOLVERS[task.solver.name](**{**task.solver.params, **dict(tt.point)})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                wall = time.perf_counter()
                solver.fit(X_fit, y_fit, constraints=constraints)
                wall = time.perf_counter() - wall
            error = model_error(solver, X_fit, y_fit, X_eval, y_eval, task.evaluation.knn_k,
                                task.evaluation.tie_break)
    except Exception as exc:
        row = failure_row(task, exc)
        row["task_id"] = tt.task_id
        row["label"] = f"{task.solver.label} [tuning {_params_json(tt.point)}, fold {tt.fold_name}]"
        return row
    return {"task_id": tt.task_id, "outer_task_id": task.task_id, "experiment": task.experiment,
            "dataset": task.dataset.label, "split": task.split, "label": task.solver.label,
            "fold": tt.fold_name, "params": _params_json(tt.point), "error": error,
            "fit_time": wall, "n_fit": len(y_fit), "n_eval": len(y_eval), "cpu_model": cpu_model(),
            "finished_at": utc_now()}


class TuningIncomplete(RuntimeError):
    """Some (grid point, fold) fits of a task failed or are missing."""


def choose(task, tuning: pd.DataFrame) -> tuple[dict, float, float]:
    """The grid point with the lowest mean held-out error over the folds.

    Parameters
    ----------
    task : tasks.Task
        An outer task with a ``tune:`` block.
    tuning : DataFrame
        Rows of ``tuning.csv`` (any tasks).

    Returns
    -------
    params, mean_error, fit_time : dict, float, float
        The chosen values, their mean fold error and the total fit time of all tuning fits.

    Raises
    ------
    TuningIncomplete
        When a fit of the grid is missing (it failed: see ``errors.csv``).
    """
    wanted = tune_tasks(task)
    rows = tuning.set_index("task_id")
    missing = [tt for tt in wanted if tt.task_id not in rows.index]
    if missing:
        raise TuningIncomplete(f"{len(missing)} of {len(wanted)} tuning fits are missing "
                               "(failed: see errors.csv); rerun to retry them")
    errors = np.array([float(rows.loc[tt.task_id, "error"]) for tt in wanted])
    n_folds = len(task.solver.tune.folds())
    mean = errors.reshape(-1, n_folds).mean(axis=1)
    best = int(np.argmin(mean))  # first minimum: grid order breaks ties
    fit_time = float(sum(float(rows.loc[tt.task_id, "fit_time"]) for tt in wanted))
    return dict(wanted[best * n_folds].point), float(mean[best]), fit_time


def with_choice(task, tuning: pd.DataFrame):
    """``task`` with its chosen parameters filled in (``Task.tuned``)."""
    params, error, fit_time = choose(task, tuning)
    return replace(task, tuned=tuple(params.items()), tuning_error=error, tuning_time=fit_time)


def _params_json(point) -> str:
    return json.dumps(dict(point), sort_keys=True, default=float)
