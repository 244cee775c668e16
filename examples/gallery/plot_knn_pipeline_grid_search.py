"""
A learned metric in a k-NN pipeline, tuned by GridSearchCV
==========================================================

Every metric learner of :mod:`dml_bench.solvers` is a scikit-learn transformer: ``fit(X, y)``
builds the constraints its method consumes from the labels and learns ``M = LᵀL``, and
``transform`` maps ``X`` to ``X Lᵀ``, where the Euclidean distance is the learned one. So a
learner slots into a :class:`~sklearn.pipeline.Pipeline` between a scaler and a
:class:`~sklearn.neighbors.KNeighborsClassifier`, and :class:`~sklearn.model_selection.GridSearchCV`
tunes its parameters together with the classifier's: each fold refits the scaler, the
constraints and the metric on its own fit part.

Here ITML's slack trade-off ``gamma`` and the number of neighbours are chosen by three-fold
cross-validation on the training part of the wine data.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.datasets import load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from dml_bench.solvers import ITML

# ITML stops at the authors' cap of 10⁵ projections on some folds, with a ConvergenceWarning
warnings.simplefilter("ignore", ConvergenceWarning)

X, y = load_wine(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y,
                                                    random_state=0)

pipeline = Pipeline([("scale", StandardScaler()), ("metric", ITML()),
                     ("knn", KNeighborsClassifier())])
grid = {"metric__gamma": [0.1, 1.0, 10.0], "knn__n_neighbors": [1, 3, 5]}
search = GridSearchCV(pipeline, grid, cv=3).fit(X_train, y_train)

print(f"best {search.best_params_}, cross-validated accuracy {search.best_score_:.3f}")
print(f"refitted on the whole training part: test error {1 - search.score(X_test, y_test):.3f}")

# %%
# The same pipeline without the learned metric, for reference:
euclidean = Pipeline([("scale", StandardScaler()), ("knn", KNeighborsClassifier(3))])
euclidean.fit(X_train, y_train)
print(f"Euclidean 3-NN test error {1 - euclidean.score(X_test, y_test):.3f}")

# %%
# The cross-validated accuracy over the whole grid:
scores = (pd.DataFrame(search.cv_results_)
          .pivot(index="param_metric__gamma", columns="param_knn__n_neighbors",
                 values="mean_test_score"))
fig, ax = plt.subplots(figsize=(5, 3.5))
image = ax.imshow(scores.to_numpy(), cmap="viridis", aspect="auto")
ax.set_xticks(np.arange(scores.shape[1]), labels=scores.columns)
ax.set_yticks(np.arange(scores.shape[0]), labels=scores.index)
ax.set_xlabel("k (neighbours)")
ax.set_ylabel("ITML gamma")
for (i, j), value in np.ndenumerate(scores.to_numpy()):
    ax.text(j, i, f"{value:.3f}", ha="center", va="center", color="white", fontsize=8)
fig.colorbar(image, label="mean CV accuracy")
ax.set_title("3-fold CV on the wine training part")
fig.tight_layout()
plt.show()
