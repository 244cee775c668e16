"""The task kinds of the experiment stage: what an experiment of each kind (``evaluation.task``)
plans, and which of its data are missing.

Each kind's own module implements the protocol (:class:`TaskKind`): k-NN classification in
:mod:`.knn`, pair verification in :mod:`.verification_tasks`. Later stages look a kind up here
(:func:`~dml_bench.experiment.kinds.task_kind`) or in their own registry (the run's :data:`~dml_bench.run.runner.RUN_KINDS`,
the report's :data:`~dml_bench.report.knn.REPORTS`) and never branch on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class TaskKind:
    """The planning side of a task kind.

    Attributes
    ----------
    all_tasks : callable
        ``all_tasks(exp, data)``: every task of the experiment, runnable or not, each with its
        ``task_id``, ``dataset`` and ``solver`` entries.
    missing_data : callable
        ``missing_data(exp, data)``: the dataset labels whose data are not here (mirror, cache,
        bundled, a user's file), without loading or fetching them.
    data_problem : callable
        ``data_problem(exp, data, load)``: why data that the kind reads beyond the catalogue's
        datasets (each checked by the target's ``requires``) cannot be had, or None.
    """

    all_tasks: Callable
    missing_data: Callable
    data_problem: Callable
