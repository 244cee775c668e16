"""Compile the learners' numba kernels once, before parallel workers start.

Solver stage. numba compiles a kernel at its first call and writes it to its on-disk cache
(``cache=True``); a process started after that loads it instead of compiling it again.
:func:`compile_kernels` fits each named built-in learner once, on a tiny generated problem, in
the calling process (a few milliseconds for a learner without kernels). A parallel run calls it before its workers start,
so that they find the kernels of the small-problem code paths cached, instead of each compiling
the same kernels itself (several seconds each for DML-eig, MDML and POLA). Kernels that only
large problems reach are still compiled by the first worker that needs them.
"""

from __future__ import annotations

import warnings

import numpy as np
from threadpoolctl import threadpool_limits

#: the tiny problem: 3 classes of 10 points in 4 dimensions, and its 2-NN constraints
_N_PER_CLASS, _N_FEATURES, _K = 10, 4, 2


def tiny_problem():
    """``(X, y, constraints)``: three shifted Gaussian classes and their k-NN pairs and triplets
    (fixed seed)."""
    from ..constraints import knn_triplets

    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), _N_PER_CLASS)
    X = rng.normal(size=(len(y), _N_FEATURES)) + y[:, None]
    return X, y, knn_triplets(X, y, k=_K)


def compile_kernels(solvers: dict[str, dict]) -> list[str]:
    """Fit each built-in learner of ``solvers`` (config name → parameters) once on
    :func:`tiny_problem`, with one BLAS thread and warnings silenced; returns the names fitted.
    Plug-ins are left to their tasks, and a learner that fails on the tiny problem is passed
    over: its tasks report their own errors."""
    from . import SOLVERS

    builtin = set(SOLVERS)  # plug-ins are not fitted here: they run in their tasks only
    fitted = []
    problem = None
    for name, params in solvers.items():
        cls = SOLVERS[name] if name in builtin else None
        if cls is None:
            continue
        problem = problem or tiny_problem()
        X, y, constraints = problem
        with warnings.catch_warnings(), threadpool_limits(1):
            warnings.simplefilter("ignore")
            try:
                cls(**params).fit(X, y, constraints=constraints)
            except Exception:  # noqa: BLE001 - the run's own tasks report it
                continue
        fitted.append(name)
    return fitted
