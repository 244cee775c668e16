"""
A learned metric's 2-D embedding of the digits
==============================================

A Mahalanobis metric ``M = LᵀL`` is the Euclidean distance after the linear map
``x ↦ L x`` (``transform``). Plotting the first two principal axes of the mapped points shows how
the learned space arranges the classes; next to it, the same view of the z-scored pixels.

The learner is LMNN (Weinberger & Saul 2009), fitted on the training part of scikit-learn's 8×8
digits; the plots show the test part, which neither the scaler nor the metric saw.
"""

import warnings

import matplotlib.pyplot as plt
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler

from dml_bench.solvers import LMNN

warnings.simplefilter("ignore", ConvergenceWarning)

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y,
                                                    random_state=0)
scaler = StandardScaler().fit(X_train)
X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)

lmnn = LMNN(max_iter=100).fit(X_train, y_train)
spaces = {"z-scored pixels (Euclidean)": (X_train, X_test),
          "LMNN's learned space": (lmnn.transform(X_train), lmnn.transform(X_test))}

fig, axes = plt.subplots(1, 2, figsize=(10, 4.5))
for ax, (title, (Z_train, Z_test)) in zip(axes, spaces.items()):
    error = 1 - KNeighborsClassifier(3).fit(Z_train, y_train).score(Z_test, y_test)
    view = PCA(n_components=2).fit(Z_train)  # the two principal axes of the training points
    P = view.transform(Z_test)
    points = ax.scatter(P[:, 0], P[:, 1], c=y_test, cmap="tab10", s=8)
    ax.set_title(f"{title}\n3-NN test error {error:.1%}")
    ax.set_xticks([])
    ax.set_yticks([])
    print(f"{title}: 3-NN test error {error:.3f}")
fig.colorbar(points, ax=axes, ticks=range(10), label="digit")
plt.show()
