"""Fitting on your own pairs or triplets instead of labels (``dml_bench.constraints.Constraints``).

Side information often comes as "these two are alike / these two differ" rather than as labels.
``Constraints`` holds index arrays into the rows of X: ``similar`` and ``dissimilar`` pairs (n×2)
and ``triplets`` (n×3, x_j should be closer to x_i than x_k is). ``fit(X, constraints=...)`` takes
them without labels; a solver reads the kind it consumes (``constraint_kind``).
"""

import numpy as np
from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler

from dml_bench.constraints import Constraints
from dml_bench.solvers import ITML, SDPMetric

X, y = load_wine(return_X_y=True)
X = StandardScaler().fit_transform(X)

# 300 random pairs, labelled by whether the two points share a class (the labels are used only
# to simulate the side information)
rng = np.random.default_rng(0)
pairs = rng.choice(len(X), size=(300, 2))
pairs = pairs[pairs[:, 0] != pairs[:, 1]]
same = y[pairs[:, 0]] == y[pairs[:, 1]]
no_triplets = np.empty((0, 3), dtype=np.intp)
pair_constraints = Constraints(similar=pairs[same], dissimilar=pairs[~same], triplets=no_triplets)

itml = ITML().fit(X, constraints=pair_constraints)
print(f"ITML ({itml.constraint_kind}): {len(pairs[same])} similar, {len(pairs[~same])} dissimilar")
for name, model in [("Euclidean", None), ("ITML", itml)]:
    d2 = (np.sum((X[pairs[:, 0]] - X[pairs[:, 1]]) ** 2, axis=1) if model is None
          else model.pair_distances(X, pairs))
    print(f"  {name:9s} mean squared distance: similar {d2[same].mean():6.2f}, "
          f"dissimilar {d2[~same].mean():6.2f}")

# triplets (i, j, k): j shares i's class, k does not
anchors = rng.choice(len(X), size=500)
j = np.array([rng.choice(np.flatnonzero((y == y[i]) & (np.arange(len(y)) != i))) for i in anchors])
k = np.array([rng.choice(np.flatnonzero(y != y[i])) for i in anchors])
triplets = np.column_stack([anchors, j, k])
no_pairs = np.empty((0, 2), dtype=np.intp)
sdp = SDPMetric().fit(X, constraints=Constraints(no_pairs, no_pairs, triplets))
Z = sdp.transform(X)
margins = (np.sum((Z[triplets[:, 0]] - Z[triplets[:, 2]]) ** 2, axis=1)
           - np.sum((Z[triplets[:, 0]] - Z[triplets[:, 1]]) ** 2, axis=1))
print(f"SDPMetric ({sdp.constraint_kind}): {len(triplets)} triplets, "
      f"{np.mean(margins > 0):.1%} ordered as asked by the learned metric")
