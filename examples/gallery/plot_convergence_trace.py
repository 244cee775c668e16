"""
Reading a solver's convergence record
=====================================

Every iterative learner keeps a per-iteration record in ``trace_``: a dict of equal-length
arrays with the objective, the solver's optimality measure and the elapsed ``time`` in seconds.
``n_iter_``, ``converged_`` and ``optimality_`` summarise it, and the class attribute
``optimality_measure`` names what ``optimality_`` is; for DML-eig it is the relative Frank-Wolfe
duality gap, an upper bound on the distance to the optimum of its smoothed problem.

Below, DML-eig on the wine data under its two stopping rules: the default stops when the gap is
small, ``stopping="objective"`` when the objective stops changing (the rule printed in Ying &
Li 2012, Table 1).
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from dml_bench.solvers import DMLEig

warnings.simplefilter("ignore", ConvergenceWarning)

X, y = load_wine(return_X_y=True)
X = StandardScaler().fit_transform(X)

fig, ax = plt.subplots(figsize=(6, 3.5))
for stopping in ("gap", "objective"):
    model = DMLEig(stopping=stopping).fit(X, y)
    gap = np.asarray(model.trace_["gap"])
    print(f"stopping={stopping!r}: {model.n_iter_} iterations, converged {model.converged_}, "
          f"{model.optimality_measure} {model.optimality_:.2e}, "
          f"rank of M {np.linalg.matrix_rank(model.metric_)}")
    ax.semilogy(np.arange(1, len(gap) + 1), gap, label=f"stopping={stopping!r}")
ax.set_xlabel("iteration")
ax.set_ylabel("duality gap")
ax.legend()
ax.set_title("DML-eig on wine (z-scored)")
fig.tight_layout()
plt.show()
