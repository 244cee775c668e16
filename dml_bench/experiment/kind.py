"""The task kinds of the experiment stage: what an experiment of each kind (``evaluation.task``)
plans, and which of its data are missing.

Each kind's own module implements the protocol (:class:`TaskKind`): k-NN classification in
:mod:`.knn`, pair verification in :mod:`.verification_tasks`. Later stages look a kind up here
(:func:`~dml_bench.experiment.kinds.task_kind`) or in their own registry (the run's :data:`~dml_bench.run.runner.RUN_KINDS`,
the report's :data:`~dml_bench.report.knn.REPORTS`) and never branch on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ConfigRules:
    """What a task kind changes in the reading of a config
    (:func:`~dml_bench.experiment.config.parse_config`).

    Attributes
    ----------
    name : str
        The kind in messages (``"k-NN"``).
    keys : tuple of str
        The ``evaluation:`` keys that only this kind takes (refused for another kind).
    read : callable or None
        ``read(reader, evaluation, datasets, solvers)``: the kind's fields of
        :class:`~dml_bench.experiment.sections.EvaluationSpec` from its keys, checked (a
        one-line :class:`~dml_bench.experiment.schema.ConfigError` at the key path).
    extra_datasets : dict
        Dataset names the kind takes beyond the catalogue, with what they are.
    tune_on_view1 : bool
        ``tune:`` blocks give a grid only (LFW's View 1 chooses), no ``cv`` or ``validation``.
    class_sizes : bool
        ``k`` targets are checked against the smallest class of the training part.
    """

    name: str
    keys: tuple = ()
    read: Callable | None = None
    extra_datasets: dict = field(default_factory=dict)
    tune_on_view1: bool = False
    class_sizes: bool = True


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
    config : ConfigRules
        How the kind's configs are read.
    """

    all_tasks: Callable
    missing_data: Callable
    data_problem: Callable
    config: ConfigRules = ConfigRules("k-NN")
