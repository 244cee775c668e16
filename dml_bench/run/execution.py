"""Executing tasks: claims, parallel backends, rows of failed tasks.

The machinery the runner (:mod:`dml_bench.run.runner`) runs the tasks of every kind with: each task is dispatched once this run
holds its claim (:class:`~dml_bench.run.results.TaskClaims`), sequentially, by joblib or on a dask
cluster, and yields its row as it finishes; a task that raises yields an ``errors.csv`` row.

A run reports only what is on disk: a row counts as run once the store's ``append`` has returned
(written whole and synced), and a run stopped by a failed write or by the loss of its dask
scheduler says how many of its rows it saved (:func:`rows_saved`); the next run resumes from them.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import datetime as dt
import logging
import os
import platform
import traceback
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml
from joblib import Parallel, delayed

from ..common.safe_write import write_text
from ..errors import DMLBenchError, RunRefused
from ..registry import UnknownNameError, describe
from .results import RUN_COLUMNS, TUNE_COLUMNS, LogWriteFailed, RunStore, TaskClaims


BLAS_THREADS = 1

#: how much a loky worker's memory may grow after its first task before loky restarts it. loky
#: takes 300 MB of growth for a leak, while a worker's prepared-split caches
#: (``experiment.knn``: two data sets and four prepared splits) hold several hundred MB each on
#: MNIST, so it restarted a worker after about every second MNIST task and the new one read its
#: data again; the caches are bounded, so a larger allowance only keeps them
WORKER_CACHE_BYTES = 4 * 2 ** 30


def keep_worker_caches(fn: Callable, task, blas_threads: int):
    """``fn(task, blas_threads)`` in a loky worker whose memory may grow by
    :data:`WORKER_CACHE_BYTES` before it is restarted (loky's allowance is a module setting of
    its worker loop, read after each task; the process's memory is otherwise watched as loky
    does)."""
    from joblib.externals.loky import process_executor

    if getattr(process_executor, "_MAX_MEMORY_LEAK_SIZE", WORKER_CACHE_BYTES) < WORKER_CACHE_BYTES:
        process_executor._MAX_MEMORY_LEAK_SIZE = WORKER_CACHE_BYTES
    return fn(task, blas_threads)

#: where a local dask cluster serves its HTTP endpoints (dashboard, health): loopback, any free
#: port (``None`` would still bind the default 8787, which two runs on one machine share)
LOOPBACK_ANY_PORT = "127.0.0.1:0"


class SchedulerUnreachable(DMLBenchError):
    """``backend: dask`` with a ``scheduler`` address that cannot be connected to."""


class SchedulerLost(ConnectionError):
    """The dask scheduler of a run went away mid-run (killed, its host down, the network cut).

    A :class:`ConnectionError` (an ``OSError``: the command line exits with status 1). The rows
    landed before are on disk; running the same command again resumes from them.

    Parameters
    ----------
    address : str
        The scheduler's address.
    reason : str
        What the client saw first, in one line (``scheduler-connection-lost``, a closed
        connection, ...): kept as an attribute, not in the message, since which of them comes
        first is a matter of timing.
    saved : (int, int), optional
        Rows saved by the run and rows it had to run (:func:`rows_saved` fills it in).
    """

    def __init__(self, address: str, reason: str, saved: tuple[int, int] | None = None):
        rows = f"{saved[0]} of {saved[1]} rows saved, " if saved else ""
        super().__init__(f"the dask scheduler at {address} was lost mid-run; {rows}rerun the "
                         "same command to resume")
        self.address, self.reason, self.saved = address, reason, saved


class NothingSelected(DMLBenchError):
    """``--dataset`` / ``--solver`` choices that select no task of the config."""


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
    """The ``errors.csv`` row of a task that raised ``exc`` (a
    :class:`~dml_bench.experiment.knn.Task`, a
    :class:`~dml_bench.experiment.verification_tasks.VerificationTask` or the outer task of a tuning
    fit).

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
    for that host only (hosts of one nominal size can differ by a factor of 2 on the same fit,
    in either direction by workload)."""
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
            f"setting, default or data file changes a task's id){': e.g. ' if examples else ''}"
            f"{'; '.join(examples)}. Rerun with --supersede to move them to "
            f"{store.superseded.name} and run the new tasks (or --force to recompute everything),"
            " or restore the config that made them")


def check_labels(exp, datasets, solvers) -> list[str]:
    """The dataset labels of ``exp``, after checking the labels asked for (``--dataset``,
    ``--solver``).

    Raises
    ------
    UnknownNameError
        When a label is not one of the config's.
    NothingSelected
        When the labels are the config's but select no task together (each chosen dataset's
        entry restricts its ``solvers:`` to others than those chosen).
    """
    labels = [d.label for d in exp.datasets]
    for kind, chosen, known in (("dataset", datasets, labels),
                                ("solver", solvers, [s.label for s in exp.solvers])):
        for label in chosen or ():
            if label not in known:
                raise UnknownNameError(f"{kind} label of {exp.name}", label, known)
    if datasets or solvers:
        cells = [(d.label, s.label) for d in exp.datasets for s in exp.solvers
                 if (not d.solvers or s.label in d.solvers)
                 and (not datasets or d.label in datasets) and (not solvers or s.label in solvers)]
        if not cells:
            chosen = " ".join([*(f"--dataset {d}" for d in datasets or ()),
                               *(f"--solver {s}" for s in solvers or ())])
            raise NothingSelected(f"{chosen} select no task of {exp.name}: the chosen datasets' "
                                  "entries restrict their solvers (`solvers:`) to others")
    return labels


def open_logs(exp, results_root: str | Path,
              columns: list[str] = RUN_COLUMNS) -> tuple[RunStore, RunStore]:
    """The experiment's ``runs`` log (of ``columns``) and ``tuning`` log in
    ``results_root/<exp.name>``, checked (no log written through a symlink; corrupt lines set
    aside), with the resolved config written beside them as ``config.yaml``."""
    store = RunStore(Path(results_root) / exp.name, "runs", columns)
    store.dir.mkdir(parents=True, exist_ok=True)
    tuning = RunStore(store.dir, "tuning", TUNE_COLUMNS)
    store.check()
    tuning.check()
    write_text(store.dir / "config.yaml", yaml.safe_dump(exp.to_dict(), sort_keys=False,
                                                        allow_unicode=True))
    return store, tuning


def set_aside_stale(name: str, logs: tuple[RunStore, RunStore], ids: tuple[set, set], *,
                    supersede: bool, echo: Callable[[str], None]) -> None:
    """Finished rows of tasks the config no longer has (ids not in ``ids``, the task ids of the
    ``runs`` and ``tuning`` logs of ``logs``): refuse to run
    (:class:`~dml_bench.errors.RunRefused`, see :func:`supersede_refusal`) unless ``supersede``
    (``--supersede`` or ``--force``), which moves them to the stores' ``*_superseded.csv``."""
    (store, tuning), (task_ids, tuning_ids) = logs, ids
    stale = store.finished() - task_ids
    stale_tuning = tuning.finished() - tuning_ids
    if (stale or stale_tuning) and not supersede:
        raise RunRefused(supersede_refusal(name, store, stale, stale_tuning))
    if stale:
        store.archive(stale)
        echo(f"moved {len(stale)} rows of tasks no longer in {name}'s config (changed "
             f"settings or data) to {store.superseded}")
    if stale_tuning:
        tuning.archive(stale_tuning)


#: Signals that asked this process to stop (the CLI's SIGTERM handler appends them). The handler's
#: ``SystemExit`` is dropped when the signal lands inside a ctypes callback, so the row loop
#: checks here after every row and stops there.
STOP_SIGNALS: list[int] = []


@contextlib.contextmanager
def rows_saved(summary: RunSummary, total: int):
    """Around a run's row loop: a run stopped by a failed write (:class:`LogWriteFailed`, e.g.
    a full disk) or by the loss of its dask scheduler (:class:`SchedulerLost`) says how many
    rows it saved of the ``total`` it had to run (``summary.ran``, rows that are on disk), in
    the error's one line."""
    try:
        yield
    except LogWriteFailed as exc:
        raise LogWriteFailed(exc.errno, f"{exc.strerror}; {summary.ran} of {total} rows saved, "
                             "rerun to finish", exc.filename) from None
    except SchedulerLost as exc:
        raise SchedulerLost(exc.address, exc.reason, (summary.ran, total)) from None


@dataclass
class Landing:
    """Where a run lands its rows: its workers and backend, the results folder's claims, a
    progress bar (advanced by every task, ``update(n)``) and where messages go."""

    n_jobs: int
    backend: str
    claims: TaskClaims
    bar: object = None
    echo: Callable[[str], None] | None = None


def land_rows(fn: Callable, work: list, into: RunStore, landing: Landing, *,
              require_timing: bool, record: Callable[[dict], None]) -> int:
    """Run ``work`` and ``record`` each row as it comes: first the tasks no other run has
    claimed, then, waiting for their claims, those another run held (it may have died or failed
    them); tasks another run finished (rows in ``into``) are not rerun. Before waiting, says
    so once through ``landing.echo``. Advances ``landing.bar`` by the whole of ``work`` and
    returns how many rows landed here."""
    bar, echo = landing.bar, landing.echo
    finished = finished_reader(into, require_timing=require_timing)
    deferred, landed = [], 0
    for wait, batch in ((False, work), (True, deferred)):
        if wait and deferred and echo is not None:
            done = finished()
            held = sum(t.task_id not in done for t in deferred)
            if held:
                echo(f"waiting for {held} task{'' if held == 1 else 's'} that another run on "
                     "this folder is running")
        for row in execute(fn, batch, landing, finished, wait=wait, deferred=deferred):
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


def execute(fn: Callable, tasks: list, landing: Landing, finished: Callable[[], set], *,
            wait: bool, deferred: list) -> Iterable[dict]:
    """Yield ``fn(task, BLAS_THREADS)`` rows as tasks finish (unordered), with the backend
    (inside :func:`execution_backend`, which holds the dask client for the whole run).

    A task is dispatched only once this run holds its claim and ``finished()`` does not list it;
    the claim is released after the consumer has recorded its row. A task claimed by another
    run goes to ``deferred`` (with ``wait``, its claim is waited for instead). On dask, a lost
    scheduler raises :class:`SchedulerLost` and a cluster without workers
    :class:`SchedulerUnreachable`, each with a one-line message.
    """
    if not tasks:
        return
    n_jobs, backend, claims = landing.n_jobs, landing.backend, landing.claims
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

    cluster = _CLUSTER.get() if backend == "dask" else None
    try:
        if cluster is not None:
            rows = _on_cluster(fn, claimed(), *cluster)
        elif backend == "sequential" or n_jobs == 1:
            rows = (fn(t, BLAS_THREADS) for t in claimed())
        else:
            rows = Parallel(n_jobs=n_jobs, backend=backend, return_as="generator_unordered")(
                delayed(keep_worker_caches)(fn, t, BLAS_THREADS) for t in claimed())
        for row in rows:
            yield row
            held.pop(row["task_id"]).release()
    except (concurrent.futures.CancelledError, OSError, TimeoutError) as exc:
        fault = exc if cluster is None else _cluster_fault(exc, *cluster)
        if fault is exc:
            raise
        raise fault from exc


#: how long a run waits for its dask scheduler to have a worker before it gives up
WAIT_FOR_WORKERS = 10.0


def _on_cluster(fn: Callable, tasks: Iterable, client, address: str) -> Iterable[dict]:
    """Yield ``fn(task, BLAS_THREADS)`` rows computed on the workers of ``client``'s cluster,
    as they finish. At most two tasks per worker thread are in flight, so a task is drawn from
    ``tasks`` (and claimed) only when it is about to be submitted.

    Each result is fetched in this thread, so a scheduler lost at any moment (before a task
    finished, or between its finishing and the fetch of its row) raises here: a cancelled
    future (the client closed by :func:`_closed_when_lost`) or a closed connection becomes
    :class:`SchedulerLost`, never a wait that does not end.
    """
    from dask.utils import funcname
    from distributed import as_completed

    try:
        client.wait_for_workers(1, timeout=WAIT_FOR_WORKERS)
    except TimeoutError:
        raise SchedulerUnreachable(f"the dask scheduler at {address} has no worker to run the "
                                   f"tasks ({WAIT_FOR_WORKERS:g} s waited): start workers on "
                                   "it") from None
    slots = 2 * max(1, sum(client.ncores().values()))
    name, source, running = funcname(fn), iter(tasks), as_completed()

    def submit_next() -> bool:
        task = next(source, None)
        if task is None:
            return False
        # a key of its own: another run on the same scheduler may run the same task
        running.add(client.submit(fn, task, BLAS_THREADS, pure=False,
                                  key=f"{name}-{task.task_id}-{uuid.uuid4().hex}"))
        return True

    for _ in range(slots):
        if not submit_next():
            break
    for future in running:
        if future.status == "cancelled":
            raise SchedulerLost(address, "a task of the run was cancelled")
        try:
            row = future.result()
        except Exception as exc:
            if client.status != "running" or isinstance(exc, OSError):
                raise SchedulerLost(address, describe(exc)) from exc
            raise
        future.release()
        submit_next()
        yield row


def _cluster_fault(exc: BaseException, client, address: str) -> Exception:
    """The one-line error of a dask run whose task stream raised ``exc``: the scheduler lost
    (:class:`SchedulerLost`), or ``exc`` itself when the cluster is not at fault (a claim that
    cannot be written, ...)."""
    from distributed.comm import CommClosedError

    if isinstance(exc, (SchedulerLost, LogWriteFailed)):
        return exc
    if client.status != "running" or isinstance(exc, (concurrent.futures.CancelledError,
                                                      CommClosedError)):
        return SchedulerLost(address, getattr(exc, "reason", None) or describe(exc))
    return exc


#: the dask client of the run in progress and its scheduler's address (set by
#: :func:`execution_backend`), for :func:`execute` to tell a lost scheduler from a failed task
_CLUSTER: contextvars.ContextVar = contextvars.ContextVar("dml_bench_dask_cluster", default=None)


@contextlib.contextmanager
def execution_backend(backend: str, scheduler: str | None, n_jobs: int):
    """The execution context of a run: a dask client (one for the whole run) or nothing.

    With dask, the client's own error log is silenced for the run: a lost scheduler ends the run
    with one line (:class:`SchedulerLost`) instead of the client's tracebacks.
    """
    if backend != "dask":
        yield
        return
    with _dask_client(scheduler, n_jobs) as (client, address), _closed_when_lost(client):
        token = _CLUSTER.set((client, address))
        try:
            yield
        finally:
            _CLUSTER.reset(token)


#: how long a client may stay out of its "running" state (reconnecting to a scheduler that is
#: gone) before the run closes it, so that the tasks it waits for fail instead of hanging
LOST_SCHEDULER_GRACE = 5.0


@contextlib.contextmanager
def _closed_when_lost(client, grace: float = LOST_SCHEDULER_GRACE):
    """Watch ``client`` from a daemon thread while the run uses it: once it has not been
    "running" for ``grace`` seconds (its scheduler lost), close it. Its futures are then
    cancelled, so the row loop ends with :class:`SchedulerLost` (:func:`execute`) instead of
    waiting for a reconnection that does not come."""
    import threading
    import time

    stop = threading.Event()

    def watch():
        since = None
        while not stop.wait(0.25):
            if client.status == "running":
                since = None
            elif client.status in ("closing", "closed"):
                return
            elif since is None:
                since = time.monotonic()
            elif time.monotonic() - since >= grace:
                _close(client)
                return

    thread = threading.Thread(target=watch, name="dml-bench-scheduler-watch", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


@contextlib.contextmanager
def _dask_client(scheduler: str | None, n_jobs: int):
    """``(client, scheduler address)`` of a dask.distributed client: the given scheduler, or a
    loopback-only ``LocalCluster``; the client's error log is silenced meanwhile."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise RuntimeError("backend 'dask' needs dask.distributed: pip install 'dml-bench[dask]'") from None
    # the client side's logs, after the import (which sets their levels): their tracebacks of a
    # lost connection are replaced by SchedulerLost's one line
    logs = [logging.getLogger(f"distributed.{name}") for name in _CLIENT_LOGS]
    levels = [log.level for log in logs]
    for log in logs:
        log.setLevel(logging.CRITICAL + 1)
    try:
        with _connected(Client, LocalCluster, scheduler, n_jobs) as connected:
            yield connected
    finally:
        for log, level in zip(logs, levels):
            log.setLevel(level)


#: the loggers of distributed's client and its connections (not the scheduler's or workers')
_CLIENT_LOGS = ("client", "batched", "comm", "core", "utils")


@contextlib.contextmanager
def _connected(Client, LocalCluster, scheduler: str | None, n_jobs: int):
    """``(client, scheduler address)``: of ``scheduler``, or of a new loopback cluster."""
    if scheduler:
        try:
            client = Client(scheduler)
        except OSError as exc:  # refused, timed out, unknown host
            raise SchedulerUnreachable(f"cannot connect to the dask scheduler {scheduler}: "
                                       f"{describe(exc)}") from None
        try:
            yield client, scheduler
        finally:
            _close(client)
        return
    n_workers = n_jobs if n_jobs > 0 else os.cpu_count()
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                      host="127.0.0.1", dashboard_address=LOOPBACK_ANY_PORT) as cluster, \
            Client(cluster) as client:
        yield client, cluster.scheduler_address


def _close(client) -> None:
    """Close a client; one whose scheduler is gone may fail to say goodbye, which is no fault."""
    with contextlib.suppress(Exception):
        client.close(timeout=5)
