"""loky workers keep the prepared-split caches instead of being restarted as leaking
(``dml_bench.run.execution.keep_worker_caches``)."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest
from joblib.externals.loky import get_reusable_executor, process_executor

from dml_bench.run.execution import WORKER_CACHE_BYTES, keep_worker_caches

_KEPT = []  # a worker's "cache"


def _grow_and_report(task, blas_threads):
    """Keep 400 MB more, past loky's check delay, and say which process ran."""
    _KEPT.append(np.ones(50_000_000))
    time.sleep(1.2)  # loky checks a worker's memory at most once a second
    return os.getpid()


def _plain(task, blas_threads):
    return _grow_and_report(task, blas_threads)


@pytest.mark.filterwarnings("ignore:A worker stopped:UserWarning")
def test_a_worker_whose_caches_grow_is_kept_with_the_allowance_and_restarted_without():
    assert WORKER_CACHE_BYTES >= 3 * 400 * 2 ** 20
    executor = get_reusable_executor(max_workers=1, reuse=False)
    pids = [executor.submit(keep_worker_caches, _grow_and_report, i, 1).result()
            for i in range(3)]
    assert len(set(pids)) == 1  # one worker, 1.2 GB of "cache" kept
    executor = get_reusable_executor(max_workers=1, reuse=False)
    pids = [executor.submit(_plain, i, 1).result() for i in range(3)]
    # loky took the growth for a leak and started a new worker (it watches memory with psutil,
    # which the test dependencies bring)
    assert (len(set(pids)) > 1) == process_executor._USE_PSUTIL
    executor.shutdown(wait=True)
