"""The retrieval task kind's run (``evaluation: {task: retrieval}``; Shen, Kim & Wang 2010,
Fig. 3).

A retrieval experiment has the tasks of a k-NN one (:mod:`dml_bench.run.knn`): each fit's row
holds its k-NN test error and, beside it, the precision of the ``top`` nearest test points of
every query (each test point of ``query_class`` queries the other test points, itself left out;
:func:`~dml_bench.evaluate.model_retrieval_precision`), averaged over the queries:
``precision_at_1`` .. ``precision_at_<top>``, and ``n_queries``.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from ..evaluate import model_retrieval_precision
from . import knn
from .results import RUN_COLUMNS


def _columns(exp) -> list[str]:
    """``runs.csv``'s columns: the k-NN ones, the number of queries and the precisions."""
    top = exp.evaluation.retrieval.top
    return [*RUN_COLUMNS, "n_queries", *(f"precision_at_{m}" for m in range(1, top + 1))]


@functools.lru_cache(maxsize=8)
def _class_index(dataset: str, class_name: str, mirror, cache_dir) -> int:
    """The label of ``class_name`` in ``dataset`` (``meta['class_names']``); ValueError when the
    dataset has no such class."""
    from ..datasets import load_dataset

    names = list(load_dataset(dataset, mirror=mirror, cache_dir=cache_dir)[2].get("class_names")
                 or [])
    if class_name not in names:
        raise ValueError(f"evaluation.query_class: {class_name!r} is not a class of dataset "
                         f"{dataset!r} ({', '.join(map(str, names)) or 'no class names'})")
    return names.index(class_name)


def measure(task, solver, X_test, y_test) -> dict:
    """The retrieval columns of one fitted task (see the module docstring)."""
    spec = task.evaluation.retrieval
    target = _class_index(task.dataset.name, spec.query_class, task.data.mirror,
                          task.data.cache_dir)
    precision = model_retrieval_precision(solver, X_test, y_test, target, spec.top)
    return {"n_queries": int(np.sum(np.asarray(y_test) == target)),
            **{f"precision_at_{m}": float(p) for m, p in enumerate(precision, 1)}}


#: the retrieval task kind: the k-NN kind's tasks, tuning and traces, with :func:`measure`
KIND = dataclasses.replace(knn.KIND, columns=_columns,
                           run_task=functools.partial(knn.run_task, measure=measure))
