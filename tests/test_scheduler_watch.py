"""The watch that closes a dask client whose scheduler is gone (run.execution._closed_when_lost),
so that a run whose scheduler dies ends with SchedulerLost instead of waiting forever."""

from __future__ import annotations

import threading
import time

import pytest
from distributed import Client, Future, LocalCluster
from distributed.comm import CommClosedError

from dml_bench.run import execution


class FakeClient:
    """A client whose status the test sets; ``close`` records the time it was called."""

    def __init__(self):
        self.status, self.closed_at = "running", None

    def close(self, timeout=None):
        self.closed_at = time.monotonic()
        self.status = "closed"


def test_a_client_reconnecting_past_the_grace_is_closed():
    client = FakeClient()
    with execution._closed_when_lost(client, grace=0.5):
        time.sleep(0.6)
        assert client.closed_at is None  # running: left alone
        client.status = "connecting"
        lost = time.monotonic()
        deadline = lost + 5
        while client.closed_at is None and time.monotonic() < deadline:
            time.sleep(0.05)
    assert client.closed_at is not None and 0.5 <= client.closed_at - lost < 2


def test_a_client_that_reconnects_in_time_is_kept():
    client = FakeClient()
    with execution._closed_when_lost(client, grace=1.0):
        client.status = "connecting"
        time.sleep(0.5)
        client.status = "running"
        time.sleep(1.5)
    assert client.closed_at is None


class Task:
    """A task as the runner hands it over: an id."""

    def __init__(self, task_id):
        self.task_id = task_id


def tasks(names):
    return (Task(name) for name in names)


def _row(task, blas_threads):
    return {"task_id": task.task_id}


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, host="127.0.0.1",
                      protocol="tcp", dashboard_address="127.0.0.1:0") as local, \
            Client(local) as client:
        yield client, local.scheduler_address


def test_every_row_comes_from_the_cluster_once(cluster):
    rows = list(execution._on_cluster(_row, tasks("abcde"), *cluster))
    assert sorted(row["task_id"] for row in rows) == ["a", "b", "c", "d", "e"]


def test_tasks_are_drawn_only_when_a_slot_is_free(cluster):
    drawn = []

    def drawing():
        for task in tasks("abcdefgh"):
            drawn.append(task)
            yield task

    rows = execution._on_cluster(_row, drawing(), *cluster)
    next(rows)
    assert len(drawn) == 2 * 2 + 1  # two per worker thread, and the one that replaced the first
    rows.close()


def test_a_row_whose_fetch_fails_after_its_task_finished_is_a_lost_scheduler(cluster,
                                                                           monkeypatch):
    """The scheduler killed between a task's end and the fetch of its row: the fetch's closed
    connection ends the run with SchedulerLost (no row waited for in vain)."""
    def closed(self, timeout=None):
        raise CommClosedError("in <TCP (closed) ConnectionPool.gather>: Stream is closed")

    monkeypatch.setattr(Future, "result", closed)
    start = time.monotonic()
    with pytest.raises(execution.SchedulerLost) as info:
        list(execution._on_cluster(_row, tasks("ab"), *cluster))
    assert time.monotonic() - start < 10
    assert info.value.address == cluster[1] and "Stream is closed" in info.value.reason


def test_a_cancelled_task_is_a_lost_scheduler(cluster):
    client, address = cluster

    def slow(task, blas_threads):
        time.sleep(2)
        return _row(task, blas_threads)

    # what closing the client does to the futures it holds (execution._closed_when_lost)
    rows = execution._on_cluster(slow, tasks("a"), client, address)
    threading.Timer(0.5, lambda: [state.cancel() for state in list(client.futures.values())]
                    ).start()
    with pytest.raises(execution.SchedulerLost, match="was lost mid-run"):
        next(rows)
