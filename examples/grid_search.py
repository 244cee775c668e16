"""GridSearchCV over a metric learner's parameter, inside a Pipeline with 3-NN.

LMNN-eig's γ weighs its large-margin term (Ying & Li 2012, Eq. (22)); Ying & Li tune it by
three-fold cross-validation on the training part, which is what GridSearchCV does here: each fold
refits the scaler, the constraints and the metric on its own fit part.
"""

import pandas as pd
from sklearn.datasets import load_wine
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from dml_bench.solvers import LMNNEig

X, y = load_wine(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y,
                                                    random_state=0)

pipeline = Pipeline([("scale", StandardScaler()), ("metric", LMNNEig(max_iter=200)),
                     ("knn", KNeighborsClassifier(n_neighbors=3))])
search = GridSearchCV(pipeline, {"metric__gamma": [0.1, 0.5, 0.9]}, cv=3)
search.fit(X_train, y_train)

table = pd.DataFrame(search.cv_results_)[["param_metric__gamma", "mean_test_score",
                                          "std_test_score"]]
print(table.to_string(index=False))
print(f"best {search.best_params_}; refitted on the whole training part, "
      f"3-NN test error {1 - search.score(X_test, y_test):.3f}")
