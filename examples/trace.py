"""Reading a fit's ``trace_``: the per-iteration record of every iterative solver.

``trace_`` is a dict of equal-length arrays, one entry per iteration (or per logged iteration):
the objective, the solver's optimality measure (for DML-eig the Frank-Wolfe duality gap, an
upper bound on the sub-optimality) and the elapsed ``time`` in seconds. ``n_iter_``,
``converged_`` and ``optimality_`` (what ``optimality_measure`` names) summarise it.
"""

import pandas as pd
from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler

from dml_bench.solvers import DMLEig

X, y = load_wine(return_X_y=True)
model = DMLEig().fit(StandardScaler().fit_transform(X), y)

trace = pd.DataFrame(model.trace_)
print(f"{model.n_iter_} iterations, converged: {model.converged_}, "
      f"{model.optimality_measure} at the end: {model.optimality_:.2e}")
print(trace.head(3).to_string())
print("...")
print(trace.tail(3).to_string())
# trace.plot(x="time", y="gap", logy=True) draws the convergence curve (matplotlib)
