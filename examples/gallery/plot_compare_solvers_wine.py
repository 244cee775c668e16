"""
Comparing metric learners by their 3-NN error on wine
=====================================================

The benchmark's protocol in a few lines of the Python API: stratified 70/30 splits
(:func:`dml_bench.splits.train_test_split_indices`), a z-score fitted on the training part only
(:class:`dml_bench.preprocess.Preprocessing`), each learner's default constraints built from the
training labels, and the 3-NN test error in the learned space with the LMNN authors' tie-break
(:func:`dml_bench.evaluate.model_error`). ``dmlbench run`` does the same from a config, in
parallel and resumably (see :doc:`plot_yaml_experiment`).
"""

import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.datasets import load_wine
from sklearn.exceptions import ConvergenceWarning

from dml_bench.evaluate import model_error
from dml_bench.preprocess import Preprocessing
from dml_bench.solvers import (ITML, LMNN, NCA, RCA, DMLEig, Euclidean, FrobMetric, LMNNEig,
                               SDPMetric, Xing)
from dml_bench.splits import derive_seed, train_test_split_indices

warnings.simplefilter("ignore", ConvergenceWarning)  # capped runs are part of the protocol

X, y = load_wine(return_X_y=True)
solvers = {"Euclidean": Euclidean, "DML-eig": DMLEig, "LMNN-eig": LMNNEig, "LMNN": LMNN,
           "ITML": ITML, "Xing (MMC)": Xing, "NCA": NCA, "RCA": RCA, "SDPMetric": SDPMetric,
           "FrobMetric": FrobMetric}
n_splits = 4

rows = []
for split in range(n_splits):
    train, test = train_test_split_indices(y, 0.7, seed=derive_seed(0, "wine", split))
    X_train, X_test = Preprocessing(normalize="zscore").apply(X[train], X[test])
    for name, solver in solvers.items():
        start = time.perf_counter()
        model = solver().fit(X_train, y[train])
        rows.append({"solver": name, "split": split, "fit_time": time.perf_counter() - start,
                     "error": model_error(model, X_train, y[train], X_test, y[test], k=3)})

summary = (pd.DataFrame(rows).groupby("solver", sort=False)
           .agg(error=("error", "mean"), std=("error", "std"), fit_time=("fit_time", "mean")))
print((summary * [100, 100, 1]).round(2).rename(
    columns={"error": "error (%)", "std": "std (%)", "fit_time": "fit time (s)"}).to_string())

# %%
# Mean 3-NN test error over the splits, with the split-to-split standard deviation:
order = summary.sort_values("error")
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.barh(order.index, 100 * order["error"], xerr=100 * order["std"], color="tab:blue", alpha=0.8)
ax.invert_yaxis()
ax.set_xlabel(f"3-NN test error (%), mean ± std over {n_splits} splits")
ax.set_title("wine (z-scored), stratified 70/30 splits")
fig.tight_layout()
plt.show()
