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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import yaml
from joblib import Parallel, delayed, parallel_config
from threadpoolctl import threadpool_limits

from . import __version__
from .config import DatasetEntry, Experiment, SolverEntry
from .constraints import GENERATORS
from .evaluate import model_error, spectrum_counts
from .registry import UnknownNameError
from .errors import RunRefused
from .results import TUNE_COLUMNS, RunStore, TaskClaims
from .splits import derive_seed, split_indices, subsample_indices, tuning_parts
from .tuning import TuningIncomplete, run_tune_task, tune_tasks, with_choice

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
    predefined: bool = False
    save_traces: bool = False  # return the solver's per-iteration trace_ (not part of task_id)
    # filled in from tuning.csv once the task's ``tune:`` fits are done (not part of task_id)
    tuned: tuple = ()
    tuning_error: float | None = None
    tuning_time: float | None = None

    @property
    def task_id(self) -> str:
        """Hash of every setting that changes the task's result (not paths or n_jobs).

        The solver enters with all its effective parameters (defaults included), so changing a
        default recomputes the tasks that relied on it; a ``tune:`` block enters as given (the
        values it chooses follow from it).
        """
        solver = {"name": self.solver.name, "label": self.solver.label,
                  "params": self.solver_params(tuned=False)}
        if self.solver.tune:
            solver["tune"] = self.solver.tune.to_dict()
        dataset = {**asdict(self.dataset), "preprocessing": self.dataset.preprocessing.to_dict()}
        if dataset["solvers"] is None:  # keep the ids of configs without the restriction
            del dataset["solvers"]
        key = {"dataset": dataset, "split": self.split, "solver": solver,
               "seed": self.seed, "train_fraction": self.train_fraction,
               "validation_fraction": self.validation_fraction,
               **({"predefined": True} if self.predefined else {}),
               "stratify": self.stratify, "generator": self.generator,
               "generator_params": self.generator_params, "knn_k": self.knn_k,
               "tie_break": self.tie_break}
        return hashlib.sha1(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def solver_params(self, tuned: bool = True) -> dict:
        """The solver's parameters as it runs: tuned and config values over the defaults."""
        from .solvers import SOLVERS

        params = {**self.solver.params, **dict(self.tuned)} if tuned else dict(self.solver.params)
        if self.solver.name not in SOLVERS:  # a planned solver: only the config's values exist
            return params
        return SOLVERS[self.solver.name](**params).get_params()


@dataclass
class RunSummary:
    total: int = 0
    done_before: int = 0
    ran: int = 0
    failed: int = 0
    skipped: list = None  # (dataset, solver, reason)
    elsewhere: int = 0  # finished by another run on the same folder meanwhile


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
            if entry.solvers and solver.label not in entry.solvers:
                continue  # the dataset entry restricts its solvers
            for split in range(entry.n_splits or exp.n_splits):
                yield Task(exp.name, entry, split, solver, exp.seed, exp.train_fraction,
                           exp.stratify, exp.generator, tuple(sorted(exp.generator_params.items())),
                           exp.knn_k, exp.tie_break, mirror, cache_dir, exp.validation_fraction,
                           exp.predefined, exp.save_traces)


def _data_problem(name: str, mirror, cache_dir) -> str | None:
    from .datasets import DataNotAvailable, load_dataset

    try:
        load_dataset(name, mirror=mirror, cache_dir=cache_dir)
    except DataNotAvailable as exc:
        return f"data not available: {exc}"
    return None


def prepare_split(task: Task, fold: tuple | None = None):
    """Preprocessed fit/evaluation parts and the constraints of the task's (dataset, split).

    Without ``fold``: the outer training and test parts. With a tuning ``fold``
    (:func:`splits.tuning_parts`): that fold's fit and held-out parts, both inside the outer
    training (or validation) part. Preprocessing and constraints are fitted on the fit part only.

    Returns ``(X_fit, y_fit, X_eval, y_eval, constraints, constraint_time, split_seed)``;
    cached per worker, so every solver of the same (dataset, split, fold) reuses them.
    """
    return _prepare_split(task.dataset, task.split, task.seed, task.train_fraction,
                          task.validation_fraction, task.stratify, task.predefined,
                          task.generator, task.generator_params, task.mirror, task.cache_dir,
                          fold)


def split_parts(task: Task) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Indices ``(train, validation, test, split_seed)`` of the task's outer split."""
    _, y, meta = _load(task.dataset, task.seed, task.mirror, task.cache_dir)
    split_seed = derive_seed(task.seed, task.dataset.name, task.split)
    return (*_outer_split(y, meta, task.dataset.name, split_seed, task.train_fraction,
                          task.validation_fraction, task.stratify, task.predefined), split_seed)


def _outer_split(y, meta, name, split_seed, train_fraction, validation_fraction, stratify,
                 predefined):
    """``(train, validation, test)`` indices: random (:func:`split_indices`), or the dataset's
    own train/test parts (``split.predefined``: e.g. optdigits' 3823/1797)."""
    if not predefined:
        return split_indices(y, train_fraction, split_seed, stratify, validation_fraction)
    parts = meta.get("parts")
    if not parts or set(parts) != {"train", "test"}:
        raise ValueError(f"split.predefined: dataset {name!r} has no predefined train/test "
                         "parts (datasets with them: see `dmlbench datasets`)")
    n_train = parts["train"]
    return np.arange(n_train), np.arange(0), np.arange(n_train, len(y))


@functools.lru_cache(maxsize=2)
def _load(entry, seed, mirror, cache_dir):
    from .datasets import load_dataset

    X, y, meta = load_dataset(entry.name, mirror=mirror, cache_dir=cache_dir)
    if entry.n_samples:
        keep = subsample_indices(y, entry.n_samples, derive_seed(seed, entry.name + ":subset", 0))
        X, y = X[keep], y[keep]
    return X, y, meta


@functools.lru_cache(maxsize=4)
def _prepare_split(entry, split, seed, train_fraction, validation_fraction, stratify, predefined,
                   generator, generator_params, mirror, cache_dir, fold):
    X, y, meta = _load(entry, seed, mirror, cache_dir)
    split_seed = derive_seed(seed, entry.name, split)
    # the validation part (if any) is held out of both: parameter choice uses it
    train, validation, test = _outer_split(y, meta, entry.name, split_seed, train_fraction,
                                           validation_fraction, stratify, predefined)
    if fold is not None:
        train, test = tuning_parts(y, train, validation, split_seed, fold, stratify)
    X_train, X_test = entry.preprocessing.apply(X[train], X[test], meta.get("image_shape"))
    t0 = time.perf_counter()
    constraints = GENERATORS[generator](X_train, y[train], **dict(generator_params))
    return X_train, y[train], X_test, y[test], constraints, time.perf_counter() - t0, split_seed


def fit_task_solver(task: Task, X_train, y_train, constraints):
    """The task's solver (its params and tuned values) fitted on the training part, with the
    fit's wall and CPU seconds; warnings are silenced (convergence is recorded in the row)."""
    from .solvers import SOLVERS

    solver = SOLVERS[task.solver.name](**{**task.solver.params, **dict(task.tuned)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wall, cpu = time.perf_counter(), time.process_time()
        solver.fit(X_train, y_train, constraints=constraints)
        return solver, time.perf_counter() - wall, time.process_time() - cpu


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
        return _failure_row(task, exc)
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
        "finished_at": _now(),
        **({"_trace": getattr(solver, "trace_", {})} if task.save_traces else {}),
    }


def _failure_row(task: Task, exc: BaseException) -> dict:
    """The ``errors.csv`` row of a task that raised ``exc``."""
    return {"_failed": True, "task_id": task.task_id, "experiment": task.experiment,
            "dataset": task.dataset.label, "split": task.split, "label": task.solver.label,
            "error_type": type(exc).__name__,
            "message": " ".join("".join(traceback.format_exception_only(exc)).split()),
            "where": " ".join(traceback.format_exc(limit=-3).split()), "finished_at": _now()}


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
        default changes a task's id) to ``runs_superseded.csv`` / ``tuning_superseded.csv``.
        Without it (or ``force``) such a run is refused before any work, naming the rows.

    Returns
    -------
    RunSummary

    Raises
    ------
    UnknownNameError
        When a label of ``datasets`` or ``solvers`` is not one of the config's.
    RunRefused
        When finished rows would be superseded without ``supersede`` or ``force``.

    Notes
    -----
    Several runs of one config on one results folder share its task list: each task is run by
    the run that claims it first (:class:`~dml_bench.results.TaskClaims`); a run that meets a
    task claimed by another waits for it at the end and runs it only if the other run did not
    finish it (it failed, or died). So no task runs twice and none is lost.
    """
    labels = [d.label for d in exp.datasets]
    for kind, chosen, known in (("dataset", datasets, labels),
                                ("solver", solvers, [s.label for s in exp.solvers])):
        for label in chosen or ():
            if label not in known:
                raise UnknownNameError(f"{kind} label of {exp.name}", label, known)
    store = RunStore(Path(results_root) / exp.name)
    store.dir.mkdir(parents=True, exist_ok=True)
    (store.dir / "config.yaml").write_text(yaml.safe_dump(exp.to_dict(), sort_keys=False))
    tasks, skipped = plan(exp, mirror, cache_dir)
    if datasets:
        tasks = [t for t in tasks if t.dataset.label in datasets]
        skipped = [s for s in skipped if s[0] in datasets]
    if solvers:
        tasks = [t for t in tasks if t.solver.label in solvers]
        skipped = [s for s in skipped if s[1] in solvers]
    for reason, cells in _group_skipped(skipped, labels).items():
        echo(f"skipped {', '.join(cells)}: {reason}")
    every = list(all_tasks(exp, mirror, cache_dir))
    tuning = RunStore(store.dir, "tuning", TUNE_COLUMNS)
    stale = store.finished() - {t.task_id for t in every}
    stale_tuning = tuning.finished() - {tt.task_id for t in every for tt in tune_tasks(t)}
    if (stale or stale_tuning) and not (supersede or force):
        raise RunRefused(_supersede_refusal(exp.name, store, stale, stale_tuning))
    if stale:
        store.archive(stale)
        echo(f"moved {len(stale)} rows of tasks no longer in {exp.name}'s config (changed "
             f"settings) to {store.superseded}")
    if stale_tuning:
        tuning.archive(stale_tuning)
    present = store.finished()
    done = set() if force else store.finished(require_timing=exp.timing)
    todo = [t for t in tasks if t.task_id not in done]
    # rows of tasks about to be recomputed (--force, or not from a timing run): only those seen
    # here, never a row that another run on the folder has written since
    store.drop({t.task_id for t in todo} & present)
    tune_todo = _tuning_todo(tuning, todo, force)
    summary = RunSummary(total=len(tasks), done_before=len(tasks) - len(todo), skipped=skipped)
    if summary.done_before:
        echo(f"{summary.done_before} of {len(tasks)} tasks already in {store.runs}; "
             "running the rest (--force recomputes)")
    if tune_todo:
        echo(f"{len(tune_todo)} tuning fits (tune: blocks), each dataset's before its final fits, "
             f"logged to {tuning.runs}")
    n_jobs = 1 if exp.timing else exp.n_jobs
    backend = "sequential" if exp.timing else exp.backend
    bar = progress(len(todo) + len(tune_todo)) if progress else contextlib.nullcontext()
    fit = functools.partial(run_task, n_jobs=n_jobs, timing_mode=exp.timing)
    claims = TaskClaims(store.dir)
    with bar as b, _backend(backend, exp.scheduler, n_jobs):

        def land(fn, work: list, into: RunStore, count: bool = True):
            """Run ``work`` and record each row as it comes: first the tasks no other run has
            claimed, then, waiting for their claims, those another run held (it may have died
            or failed them); tasks another run finished are counted, not rerun."""
            finished = _finished_reader(into, require_timing=exp.timing and into is store)
            deferred, landed = [], 0
            for wait, batch in ((False, work), (True, deferred)):
                for row in _execute(fn, batch, n_jobs, backend, claims, finished, wait=wait,
                                    deferred=deferred):
                    _record(into, row, summary, echo, count=count)
                    landed += 1
                    if b is not None:
                        b.update(1)
            if count:
                summary.elsewhere += len(work) - landed
            if b is not None and len(work) > landed:
                b.update(len(work) - landed)

        # dataset by dataset (config order): its tuning fits, then its final fits, so the rows of
        # a dataset land as soon as its own tuning is done
        for dataset in dict.fromkeys(t.dataset.label for t in todo):
            land(run_tune_task, [tt for tt in tune_todo if tt.task.dataset.label == dataset],
                 tuning, count=False)
            final, failed = _resolve_tuning([t for t in todo if t.dataset.label == dataset],
                                            tuning)
            for row in failed:
                _record(store, row, summary, echo)
            land(fit, final, store)
    return summary


def _supersede_refusal(name: str, store: RunStore, stale: set, stale_tuning: set) -> str:
    """The one-line refusal of a run that would move finished rows aside: counts and examples."""
    runs = store.read()
    rows = runs[runs["task_id"].isin(stale)]
    examples = [f"{r.dataset} split {r.split} {r.label} [{r.task_id}]"
                for r in rows.head(3).itertuples()]
    what = [f"{len(stale)} finished rows of runs.csv"] if stale else []
    what += [f"{len(stale_tuning)} rows of tuning.csv"] if stale_tuning else []
    return (f"{name}: the config no longer contains the tasks of {' and '.join(what)} (a changed "
            f"setting or default changes a task's id){': e.g. ' if examples else ''}"
            f"{'; '.join(examples)}. Rerun with --supersede to move them to "
            f"{store.superseded.name} and run the new tasks (or --force to recompute everything),"
            " or restore the config that made them")


def _finished_reader(store: RunStore, require_timing: bool) -> Callable[[], set]:
    """``finished()``: the task ids in ``store`` now, re-read only when the file has changed
    (another run on the same folder appends to it)."""
    cache = {"key": None, "ids": set()}

    def finished() -> set:
        try:
            stat = store.runs.stat()
            key = (stat.st_mtime_ns, stat.st_size)
        except FileNotFoundError:
            key = None
        if key != cache["key"]:
            cache["key"], cache["ids"] = key, store.finished(require_timing=require_timing)
        return cache["ids"]

    return finished


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
            failed.append(_failure_row(task, exc))
    return final, failed


def _record(store: RunStore, row: dict, summary: RunSummary, echo, count: bool = True) -> None:
    """Append a finished row to ``store``, or a failed one to ``errors.csv`` (and say so)."""
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


def _execute(fn: Callable, tasks: list, n_jobs: int, backend: str, claims: TaskClaims,
             finished: Callable[[], set], *, wait: bool, deferred: list) -> Iterable[dict]:
    """Yield ``fn(task, BLAS_THREADS)`` rows as tasks finish (unordered), with the backend
    (inside :func:`_backend`, which holds the dask client for the whole run).

    A task is dispatched only once this run holds its claim and ``finished()`` does not list it;
    the claim is released after the consumer has recorded its row. A task claimed by another
    run goes to ``deferred`` (with ``wait``, its claim is waited for instead).
    """
    if not tasks:
        return
    held = {}

    def claimed():  # consumed lazily, by joblib's dispatching thread in the parallel case
        for task in tasks:
            lock = claims.claim(task.task_id, blocking=wait)
            if lock is None:
                deferred.append(task)
            elif task.task_id in finished():  # another run finished it since the plan
                lock.release()
            else:
                held[task.task_id] = lock
                yield task

    if backend == "sequential" or n_jobs == 1 and backend != "dask":
        rows = (fn(t, BLAS_THREADS) for t in claimed())
    else:
        kwargs = {} if backend == "dask" else {"backend": backend}
        rows = Parallel(n_jobs=n_jobs, return_as="generator_unordered", **kwargs)(
            delayed(fn)(t, BLAS_THREADS) for t in claimed())
    for row in rows:
        yield row
        held.pop(row["task_id"]).release()


@contextlib.contextmanager
def _backend(backend: str, scheduler: str | None, n_jobs: int):
    """The execution context of a run: a dask client (one for the whole run) or nothing."""
    if backend != "dask":
        yield
        return
    with _dask_client(scheduler, n_jobs), parallel_config(backend="dask"):
        yield


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
