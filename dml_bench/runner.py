"""Run an experiment: one task per (dataset, split, solver), in parallel, resumable.

Data flow of a task: dataset (+ subsample) → split → preprocessing fitted on the training part →
constraints from the training part only → solver fit → k-NN error on the test part → one row.
Seeds derive from (experiment seed, dataset, split) only, so results do not depend on ``n_jobs``
or task order. Each worker pins BLAS to ``blas_threads`` threads (threadpoolctl): on small GEMMs
threaded BLAS inside parallel workers was measured ~30× slower on 2-core machines.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import json
import os
import time
import traceback
import warnings
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import yaml
from joblib import Parallel, delayed, parallel_config
from threadpoolctl import threadpool_limits

from . import __version__
from .config import DatasetEntry, Experiment, SolverEntry
from .constraints import GENERATORS
from .evaluate import knn_error
from .results import RunStore
from .splits import derive_seed, split_indices, subsample_indices

BLAS_THREADS = 1


@dataclass(frozen=True)
class Task:
    """Everything one worker needs; hashable so prepared splits can be cached per worker."""

    experiment: str
    dataset: DatasetEntry
    split: int
    solver: SolverEntry
    seed: int
    train_fraction: float
    stratify: bool
    generator: str
    generator_params: tuple
    knn_k: int
    tie_break: str
    mirror: str | None
    cache_dir: str | None
    validation_fraction: float = 0.0

    @property
    def task_id(self) -> str:
        """Hash of every setting that changes the task's result (not paths or n_jobs).

        The solver enters with all its effective parameters (defaults included), so changing a
        default recomputes the tasks that relied on it.
        """
        key = {"dataset": asdict(self.dataset), "split": self.split,
               "solver": {"name": self.solver.name, "label": self.solver.label,
                          "params": self.solver_params()},
               "seed": self.seed, "train_fraction": self.train_fraction,
               "validation_fraction": self.validation_fraction,
               "stratify": self.stratify, "generator": self.generator,
               "generator_params": self.generator_params, "knn_k": self.knn_k,
               "tie_break": self.tie_break}
        return hashlib.sha1(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def solver_params(self) -> dict:
        """The solver's parameters as it runs: the config's values over the defaults."""
        from .solvers import SOLVERS

        if self.solver.name not in SOLVERS:  # a planned solver: only the config's values exist
            return dict(self.solver.params)
        return SOLVERS[self.solver.name](**self.solver.params).get_params()


@dataclass
class RunSummary:
    total: int = 0
    done_before: int = 0
    ran: int = 0
    failed: int = 0
    skipped: list = None  # (dataset, solver, reason)


def plan(exp: Experiment, mirror: str | None = None, cache_dir: str | None = None,
         check_data: Callable[[str], str | None] | None = None) -> tuple[list[Task], list]:
    """All tasks of ``exp`` and the (dataset, solver, reason) combinations that cannot run.

    ``check_data(name)`` returns a reason when a dataset cannot be loaded (default: try to load it,
    fetching into the cache if needed).
    """
    from .solvers import PLANNED

    check_data = check_data or functools.partial(_data_problem, mirror=mirror, cache_dir=cache_dir)
    problems = {entry.name: check_data(entry.name) for entry in exp.datasets}
    tasks, skipped = [], {}
    for task in all_tasks(exp, mirror, cache_dir):
        reason = problems[task.dataset.name] or PLANNED.get(task.solver.name)
        if reason:
            skipped.setdefault((task.dataset.label, task.solver.label), reason)
        else:
            tasks.append(task)
    return tasks, [(d, s, reason) for (d, s), reason in skipped.items()]


def all_tasks(exp: Experiment, mirror: str | None = None, cache_dir: str | None = None):
    """Every (dataset, split, solver) task of ``exp``, runnable or not."""
    for entry in exp.datasets:
        for solver in exp.solvers:
            for split in range(entry.n_splits or exp.n_splits):
                yield Task(exp.name, entry, split, solver, exp.seed, exp.train_fraction,
                           exp.stratify, exp.generator, tuple(sorted(exp.generator_params.items())),
                           exp.knn_k, exp.tie_break, mirror, cache_dir, exp.validation_fraction)


def _data_problem(name: str, mirror, cache_dir) -> str | None:
    from .datasets import DataNotAvailable, load_dataset

    try:
        load_dataset(name, mirror=mirror, cache_dir=cache_dir)
    except DataNotAvailable as exc:
        return f"data not available: {exc}"
    return None


def prepare_split(task: Task):
    """Preprocessed train/test parts and the constraints of the task's (dataset, split).

    Returns ``(X_train, y_train, X_test, y_test, constraints, constraint_time, split_seed)``;
    cached per worker, so every solver of the same (dataset, split) reuses them.
    """
    return _prepare_split(task.dataset, task.split, task.seed, task.train_fraction,
                          task.validation_fraction, task.stratify, task.generator,
                          task.generator_params, task.mirror, task.cache_dir)


@functools.lru_cache(maxsize=4)
def _prepare_split(entry, split, seed, train_fraction, validation_fraction, stratify, generator,
                   generator_params, mirror, cache_dir):
    from .datasets import load_dataset

    X, y, meta = load_dataset(entry.name, mirror=mirror, cache_dir=cache_dir)
    if entry.n_samples:
        keep = subsample_indices(y, entry.n_samples, derive_seed(seed, entry.name + ":subset", 0))
        X, y = X[keep], y[keep]
    split_seed = derive_seed(seed, entry.name, split)
    # the validation part (if any) is held out of both: parameter choice will use it
    train, _, test = split_indices(y, train_fraction, split_seed, stratify, validation_fraction)
    X_train, X_test = entry.preprocessing.apply(X[train], X[test], meta.get("image_shape"))
    t0 = time.perf_counter()
    constraints = GENERATORS[generator](X_train, y[train], **dict(generator_params))
    return X_train, y[train], X_test, y[test], constraints, time.perf_counter() - t0, split_seed


def run_task(task: Task, blas_threads: int = BLAS_THREADS, n_jobs: int = 1,
             timing_mode: bool = False) -> dict:
    """Fit and evaluate one task; returns its ``runs.csv`` row, or an error row on failure."""
    from .solvers import SOLVERS

    try:
        with threadpool_limits(limits=blas_threads):
            X_train, y_train, X_test, y_test, constraints, c_time, split_seed = prepare_split(task)
            solver = SOLVERS[task.solver.name](**task.solver.params)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # convergence is recorded in the row instead
                wall, cpu = time.perf_counter(), time.process_time()
                solver.fit(X_train, y_train, constraints=constraints)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            error = knn_error(solver.transform(X_train), y_train, solver.transform(X_test), y_test,
                              task.knn_k, task.tie_break)
    except Exception as exc:  # one broken task must not take the experiment down
        return {"_failed": True, "task_id": task.task_id, "experiment": task.experiment,
                "dataset": task.dataset.label, "split": task.split, "label": task.solver.label,
                "error_type": type(exc).__name__,
                "message": "".join(traceback.format_exception_only(exc)).strip()
                + " | " + traceback.format_exc(limit=-3).replace("\n", " "), "finished_at": _now()}
    return {
        "task_id": task.task_id, "experiment": task.experiment, "dataset": task.dataset.label,
        "split": task.split, "seed": split_seed, "solver": task.solver.name,
        "label": task.solver.label, "solver_params": json.dumps(task.solver_params(), sort_keys=True),
        "preprocessing": json.dumps({**asdict(task.dataset.preprocessing),
                                     "n_samples": task.dataset.n_samples}, sort_keys=True),
        "constraints": json.dumps({"generator": task.generator, **dict(task.generator_params)}),
        "n_train": len(y_train), "n_test": len(y_test), "n_features": X_train.shape[1],
        "n_classes": len(np.unique(y_train)), **constraints.counts(), "knn_k": task.knn_k,
        "tie_break": task.tie_break, "error": error, "fit_time": wall, "fit_cpu_time": cpu,
        "constraint_time": c_time, "n_iter": getattr(solver, "n_iter_", None),
        "objective": getattr(solver, "objective_", None),
        "converged": getattr(solver, "converged_", None), "blas_threads": blas_threads,
        "n_jobs": n_jobs, "timing_mode": timing_mode, "dmlbench_version": __version__,
        "finished_at": _now(),
    }


def _group_skipped(skipped: list, datasets: list[str]) -> dict[str, list[str]]:
    """Skipped (dataset, solver) cells per reason; a solver skipped on every dataset is named once."""
    by_reason: dict[str, list[tuple[str, str]]] = {}
    for dataset, solver, reason in skipped:
        by_reason.setdefault(reason, []).append((dataset, solver))
    grouped = {}
    for reason, cells in by_reason.items():
        solvers = dict.fromkeys(s for _, s in cells)
        everywhere = [s for s in solvers if sum(c[1] == s for c in cells) == len(datasets)]
        grouped[reason] = [f"{s} (all datasets)" for s in everywhere] + [
            f"{d} × {s}" for d, s in cells if s not in everywhere]
    return grouped


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def run_experiment(exp: Experiment, results_root: str | Path = "results", *,
                   mirror: str | None = None, cache_dir: str | None = None, force: bool = False,
                   progress: Callable[[int], contextlib.AbstractContextManager] | None = None,
                   echo: Callable[[str], None] = print) -> RunSummary:
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

    Returns
    -------
    RunSummary
    """
    store = RunStore(Path(results_root) / exp.name)
    store.dir.mkdir(parents=True, exist_ok=True)
    (store.dir / "config.yaml").write_text(yaml.safe_dump(exp.to_dict(), sort_keys=False))
    tasks, skipped = plan(exp, mirror, cache_dir)
    for reason, cells in _group_skipped(skipped, [d.label for d in exp.datasets]).items():
        echo(f"skipped {', '.join(cells)}: {reason}")
    stale = store.finished() - {t.task_id for t in all_tasks(exp, mirror, cache_dir)}
    if stale:
        store.archive(stale)
        echo(f"moved {len(stale)} rows of tasks no longer in {exp.name}'s config (changed "
             f"settings) to {store.superseded}")
    done = set() if force else store.finished(require_timing=exp.timing)
    todo = [t for t in tasks if t.task_id not in done]
    store.drop({t.task_id for t in todo})  # stale rows of tasks about to be recomputed
    summary = RunSummary(total=len(tasks), done_before=len(tasks) - len(todo), skipped=skipped)
    if summary.done_before:
        echo(f"{summary.done_before} of {len(tasks)} tasks already in {store.runs}; "
             "running the rest (--force recomputes)")
    n_jobs = 1 if exp.timing else exp.n_jobs
    bar = progress(len(todo)) if progress else contextlib.nullcontext()
    with bar as b:
        for row in _execute(todo, n_jobs, "sequential" if exp.timing else exp.backend,
                            exp.scheduler, exp.timing):
            if row.pop("_failed", False):
                store.append_error(row)
                summary.failed += 1
                echo(f"\nFAILED {row['dataset']} split {row['split']} {row['label']}: "
                     f"{row['message']}")
            else:
                store.append(row)
                summary.ran += 1
            if b is not None:
                b.update(1)
    return summary


def _execute(tasks: list[Task], n_jobs: int, backend: str, scheduler: str | None,
             timing: bool) -> Iterable[dict]:
    """Yield result rows as tasks finish (unordered), with the requested backend."""
    if not tasks:
        return
    calls = (delayed(run_task)(t, BLAS_THREADS, n_jobs, timing) for t in tasks)
    if backend == "sequential" or n_jobs == 1 and backend != "dask":
        yield from (run_task(t, BLAS_THREADS, n_jobs, timing) for t in tasks)
    elif backend == "dask":
        with _dask_client(scheduler, n_jobs), parallel_config(backend="dask"):
            yield from Parallel(n_jobs=n_jobs, return_as="generator_unordered")(calls)
    else:
        yield from Parallel(n_jobs=n_jobs, backend=backend,
                            return_as="generator_unordered")(calls)


@contextlib.contextmanager
def _dask_client(scheduler: str | None, n_jobs: int):
    """A dask.distributed client: the given scheduler, or a loopback-only ``LocalCluster``."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise RuntimeError("backend 'dask' needs dask.distributed: pip install 'dml-bench[dask]'") from None
    if scheduler:
        with Client(scheduler) as client:
            yield client
        return
    n_workers = n_jobs if n_jobs > 0 else os.cpu_count()
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                      host="127.0.0.1", dashboard_address=None) as cluster, Client(cluster) as client:
        yield client
