"""DML-eig in a scikit-learn Pipeline: z-score → learned metric → 3-NN, on the wine data.

A metric learner is a transformer: ``fit(X, y)`` builds its constraints from the labels (for
DML-eig, the pairs of each point with its 3 nearest same-class and other-class neighbours, Ying &
Li 2012 §5) and learns M = LᵀL; ``transform`` maps X to X Lᵀ, where the Euclidean distance is the
learned one, so any distance-based estimator can follow it.
"""

from sklearn.datasets import load_wine
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from dml_bench.solvers import DMLEig

X, y = load_wine(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y,
                                                    random_state=0)

models = {
    "Euclidean": make_pipeline(StandardScaler(), KNeighborsClassifier(n_neighbors=3)),
    "DML-eig": make_pipeline(StandardScaler(), DMLEig(), KNeighborsClassifier(n_neighbors=3)),
}
for name, model in models.items():
    model.fit(X_train, y_train)  # the scaler and the metric see the training part only
    print(f"{name:9s}  3-NN test error {1 - model.score(X_test, y_test):.3f}")
