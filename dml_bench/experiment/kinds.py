"""The task kinds of the experiment stage by name: k-NN classification and retrieval
(:mod:`.knn`: the same tasks, retrieval measuring more of each) and pair verification
(:mod:`.verification_tasks`), each implementing :class:`~.kind.TaskKind`."""

from __future__ import annotations

from . import knn, verification_tasks
from .kind import TaskKind


def kind_named(name: str) -> TaskKind:
    """The task kind of ``evaluation.task: <name>``."""
    # a retrieval experiment plans the (dataset, split, solver) tasks of a k-NN one
    return {"knn": knn.KIND, "verification": verification_tasks.KIND,
            "retrieval": knn.RETRIEVAL}[name]


def task_kind(exp) -> TaskKind:
    """The kind of the experiment ``exp`` (its ``evaluation.task``)."""
    return kind_named(exp.kind)
