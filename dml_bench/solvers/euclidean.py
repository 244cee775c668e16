"""The Euclidean baseline ("Euc." in Ying & Li 2012, Table 4): M = I."""

import numpy as np

from .base import VERBOSE, MetricLearner, store_params


class Euclidean(MetricLearner):
    """Identity metric; ``fit`` only records the dimension.

    Parameters
    ----------
    verbose : int, default=0
        0: silent; 1 and more: one line at the end of the fit (a closed form: no progress).

    Attributes
    ----------
    optimality_ : float
        0.0: nothing to optimise (``optimality_measure`` ``"closed_form"``).
    """

    constraint_kind = "none"
    optimality_measure = "closed_form"
    ignores_y = True
    _parameter_constraints: dict = {"verbose": VERBOSE}  # no hyper-parameters

    def __init__(self, verbose=0):
        store_params(self, locals())

    def _fit(self, X, y, constraints):
        d = X.shape[1]
        self.metric_ = np.eye(d)
        self.components_ = np.eye(d)
        self.n_iter_ = 0
        self.objective_ = float("nan")
        self.converged_ = True
        self.optimality_ = 0.0
        self.trace_ = {}
