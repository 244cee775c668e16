"""One timing rule for both sides of ``bench_metric_learn.py`` (numpy and the standard library
only: ``metric_learn_worker.py`` imports it in metric-learn's environment).

A fit is repeated until its repeats take ``REPEAT_SECONDS`` of wall time, at most
``MAX_REPEATS`` times, and its time is the median of the repeats: a single fit of a millisecond
measures the machine's noise more than the fit. A fit of half a second or more runs once.
"""

import time

import numpy as np

REPEAT_SECONDS, MAX_REPEATS = 0.5, 25


def timed(fit):
    """``(median wall seconds, median CPU seconds, repeats)`` of ``fit()``, repeated as the
    module docstring says."""
    walls, cpus = [], []
    while not walls or (sum(walls) < REPEAT_SECONDS and len(walls) < MAX_REPEATS):
        wall, cpu = time.perf_counter(), time.process_time()
        fit()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return float(np.median(walls)), float(np.median(cpus)), len(walls)
