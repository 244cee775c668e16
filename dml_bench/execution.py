"""Executing tasks: claims, parallel backends, rows of failed tasks.

The machinery every kind of experiment (k-NN: :mod:`dml_bench.runner`; pair verification:
:mod:`dml_bench.verification_run`) runs its tasks with: each task is dispatched once this run
holds its claim (:class:`~dml_bench.results.TaskClaims`), sequentially, by joblib or on a dask
cluster, and yields its row as it finishes; a task that raises yields an ``errors.csv`` row.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import platform
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from joblib import Parallel, delayed, parallel_config

from .errors import DMLBenchError, RunRefused
from .registry import UnknownNameError, describe
from .results import RunStore, TaskClaims


BLAS_THREADS = 1

#: where a local dask cluster serves its HTTP endpoints (dashboard, health): loopback, any free
#: port (``None`` would still bind the default 8787, which two runs on one machine share)
LOOPBACK_ANY_PORT = "127.0.0.1:0"


class SchedulerUnreachable(DMLBenchError):
    """``backend: dask`` with a ``scheduler`` address that cannot be connected to."""


@dataclass
class RunSummary:
    """What a run did: its tasks, those finished before it, run, failed, skipped (as (dataset,
    solver, reason)) and finished meanwhile by another run on the same folder."""

    total: int = 0
    done_before: int = 0
    ran: int = 0
    failed: int = 0
    skipped: list = None  # (dataset, solver, reason)
    elsewhere: int = 0  # finished by another run on the same folder meanwhile


def failure_row(task, exc: BaseException) -> dict:
    """The ``errors.csv`` row of a task that raised ``exc`` (a :class:`~dml_bench.tasks.Task`, a
    :class:`~dml_bench.verification.VerificationTask` or the outer task of a tuning fit).

    An exception that an interruption caused is re-raised as that interruption instead, so the
    run stops rather than recording a failure and going on. A SIGTERM's ``SystemExit`` (see
    ``cli._exit_on_sigterm``) or a Ctrl-C raised while a compiled function runs reaches Python as
    ``SystemError: CPUDispatcher(...) returned a result with an exception set``, with the
    interruption as its cause.
    """
    cause, seen = exc, set()
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, (SystemExit, KeyboardInterrupt)):
            raise cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return {"_failed": True, "task_id": task.task_id, "experiment": task.experiment,
            "dataset": task.dataset.label, "split": task.split, "label": task.solver.label,
            "error_type": type(exc).__name__,
            "message": " ".join("".join(traceback.format_exception_only(exc)).split()),
            "where": " ".join(traceback.format_exc(limit=-3).split()), "finished_at": utc_now()}


def utc_now() -> str:
    """The time now, UTC, ISO 8601 to the second (a row's ``finished_at``)."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def cpu_model() -> str:
    """The model name of the CPU the rows are measured on (``/proc/cpuinfo``, else
    ``platform.processor()``): a wall-clock ``fit_time``, and a budget verdict drawn from it, hold
    for that host only (hosts of one nominal size differ by a factor of 2 on the same fit, in
    either direction by workload: ``results/leaderboard_diagnosis/hosts.md``)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def group_skipped(skipped: list, datasets: list[str]) -> dict[str, list[str]]:
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


def supersede_refusal(name: str, store: RunStore, stale: set, stale_tuning: set) -> str:
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


def check_labels(exp, datasets, solvers) -> list[str]:
    """The dataset labels of ``exp``; an :class:`~dml_bench.registry.UnknownNameError` when a
    label asked for (``--dataset``, ``--solver``) is not one of the config's."""
    labels = [d.label for d in exp.datasets]
    for kind, chosen, known in (("dataset", datasets, labels),
                                ("solver", solvers, [s.label for s in exp.solvers])):
        for label in chosen or ():
            if label not in known:
                raise UnknownNameError(f"{kind} label of {exp.name}", label, known)
    return labels


def set_aside_stale(name: str, store: RunStore, tuning: RunStore, task_ids: set,
                    tuning_ids: set, *, supersede: bool, force: bool,
                    echo: Callable[[str], None]) -> None:
    """Finished rows of tasks the config no longer has (ids not in ``task_ids`` /
    ``tuning_ids``): refuse to run (:class:`~dml_bench.errors.RunRefused`, see
    :func:`supersede_refusal`) unless ``supersede`` or ``force``, which move them to the
    stores' ``*_superseded.csv``."""
    stale = store.finished() - task_ids
    stale_tuning = tuning.finished() - tuning_ids
    if (stale or stale_tuning) and not (supersede or force):
        raise RunRefused(supersede_refusal(name, store, stale, stale_tuning))
    if stale:
        store.archive(stale)
        echo(f"moved {len(stale)} rows of tasks no longer in {name}'s config (changed "
             f"settings) to {store.superseded}")
    if stale_tuning:
        tuning.archive(stale_tuning)


#: Signals that asked this process to stop (the CLI's SIGTERM handler appends them). The handler's
#: ``SystemExit`` is dropped when the signal lands inside a ctypes callback, so the row loop
#: checks here after every row and stops there.
STOP_SIGNALS: list[int] = []


def land_rows(fn: Callable, work: list, into: RunStore, *, n_jobs: int, backend: str,
              claims: TaskClaims, require_timing: bool, record: Callable[[dict], None],
              bar=None) -> int:
    """Run ``work`` and ``record`` each row as it comes: first the tasks no other run has
    claimed, then, waiting for their claims, those another run held (it may have died or failed
    them); tasks another run finished (rows in ``into``) are not rerun. Advances ``bar`` by the
    whole of ``work`` and returns how many rows landed here."""
    finished = finished_reader(into, require_timing=require_timing)
    deferred, landed = [], 0
    for wait, batch in ((False, work), (True, deferred)):
        for row in execute(fn, batch, n_jobs, backend, claims, finished, wait=wait,
                           deferred=deferred):
            record(row)
            landed += 1
            if STOP_SIGNALS:
                raise SystemExit(128 + STOP_SIGNALS[0])
            if bar is not None:
                bar.update(1)
    if bar is not None and len(work) > landed:
        bar.update(len(work) - landed)
    return landed


def finished_reader(store: RunStore, require_timing: bool) -> Callable[[], set]:
    """``finished()``: the task ids in ``store`` now, re-read only when the log has changed
    (another run on the same folder appends to it)."""
    cache = {"key": None, "ids": set()}

    def finished() -> set:
        key = store.stamp()
        if key != cache["key"]:
            cache["key"], cache["ids"] = key, store.finished(require_timing=require_timing)
        return cache["ids"]

    return finished


def execute(fn: Callable, tasks: list, n_jobs: int, backend: str, claims: TaskClaims,
            finished: Callable[[], set], *, wait: bool, deferred: list) -> Iterable[dict]:
    """Yield ``fn(task, BLAS_THREADS)`` rows as tasks finish (unordered), with the backend
    (inside :func:`execution_backend`, which holds the dask client for the whole run).

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
def execution_backend(backend: str, scheduler: str | None, n_jobs: int):
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
        try:
            client = Client(scheduler)
        except OSError as exc:  # refused, timed out, unknown host
            raise SchedulerUnreachable(f"cannot connect to the dask scheduler {scheduler}: "
                                       f"{describe(exc)}") from None
        with client:
            yield client
        return
    n_workers = n_jobs if n_jobs > 0 else os.cpu_count()
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                      host="127.0.0.1", dashboard_address=LOOPBACK_ANY_PORT) as cluster, \
            Client(cluster) as client:
        yield client
