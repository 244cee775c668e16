"""The watch that closes a dask client whose scheduler is gone (run.execution._closed_when_lost),
so that a run whose scheduler dies ends with SchedulerLost instead of waiting forever."""

from __future__ import annotations

import time

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
