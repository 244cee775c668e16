"""The Euclidean baseline ("Euc." in Ying & Li 2012, Table 4): M = I."""

import numpy as np

from .base import MetricLearner


class Euclidean(MetricLearner):
    """Identity metric; ``fit`` only records the dimension.

    Attributes
    ----------
    optimality_ : float
        0.0: nothing to optimise (``optimality_measure`` ``"closed_form"``).
    """

    constraint_kind = "none"
    optimality_measure = "closed_form"
    _parameter_constraints: dict = {}  # no hyper-parameters

    def _fit(self, X, y, constraints):
        d = X.shape[1]
        self.metric_ = np.eye(d)
        self.components_ = np.eye(d)
        self.n_iter_ = 0
        self.objective_ = float("nan")
        self.converged_ = True
        self.optimality_ = 0.0
        self.trace_ = {}
