"""Solver registry: config names → estimator classes.

``PLANNED`` lists the methods of the papers' tables that are not implemented yet; configs may name
them and ``dmlbench run`` reports their tasks as skipped with the reason.
"""

from ..registry import Registry
from .base import MetricLearner
from .dml_eig import DMLEig
from .euclidean import Euclidean

SOLVERS = Registry("solver")
SOLVERS.register("euclidean", Euclidean)
SOLVERS.register("dml_eig", DMLEig)

PLANNED = {
    "xing": "not implemented yet (issue #5: compared methods)",
    "lmnn": "not implemented yet (issue #5: compared methods)",
    "itml": "not implemented yet (issue #5: compared methods)",
    "boostmetric": "not implemented yet (issue #4: batch seed solvers)",
    "lmnn_eig": "not implemented yet (issue #4: batch seed solvers)",
}

__all__ = ["SOLVERS", "PLANNED", "MetricLearner", "DMLEig", "Euclidean"]
