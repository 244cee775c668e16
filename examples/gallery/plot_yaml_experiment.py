"""
Running a YAML experiment from Python
=====================================

``dmlbench run CONFIG`` is three calls of the Python API: read and validate the config
(:func:`dml_bench.experiment.config.load_config`), run its tasks
(:func:`dml_bench.run.runner.run_experiment`: one per data set, split and solver, each row
appended to ``runs.csv`` as soon as it finishes), and write the report
(:func:`dml_bench.report.kind.write_report`: ``summary.csv``, LaTeX tables, figures).

Everything here goes to a temporary folder: the config, the results, and the cache of data sets
and constraints (``DMLBENCH_CACHE``, the setting ``dmlbench --cache-dir`` gives). Keys not given
take their defaults (z-score, 3-NN triplets from the training part, the solvers' default
parameters); see the config reference.
"""

import os
import tempfile
import textwrap
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from sklearn.exceptions import ConvergenceWarning

from dml_bench.experiment.config import load_config
from dml_bench.report.kind import write_report
from dml_bench.run.runner import run_experiment

warnings.simplefilter("ignore", ConvergenceWarning)

CONFIG = textwrap.dedent("""\
    name: gallery_demo
    description: Euclidean, DML-eig and ITML on two bundled data sets, 3 splits.
    datasets:
      - {name: wine, normalize: zscore}
      - {name: iris, normalize: zscore}
    split: {train_fraction: 0.7, n_splits: 3, seed: 0}
    constraints: {generator: knn_triplets, params: {k: 3}}
    solvers:
      - euclidean
      - {name: dml_eig, label: DML-eig}
      - {name: itml, label: ITML, params: {gamma: 1.0}}
    evaluation: {knn_k: 3, tie_break: nearest}
    execution: {n_jobs: 1, backend: sequential}
    """)

with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)
    config = tmp / "demo.yaml"
    config.write_text(CONFIG)
    saved_cache = os.environ.get("DMLBENCH_CACHE")
    os.environ["DMLBENCH_CACHE"] = str(tmp / "cache")
    try:
        experiment = load_config(config)  # a bad key or value stops here, naming it
        summary = run_experiment(experiment, results_root=tmp / "results", echo=print)
        print(f"{summary.ran} tasks run")
        written = write_report(tmp / "results" / experiment.name)
        print("report:", ", ".join(sorted(written)))

        # a second run finds every task in runs.csv and runs nothing
        again = run_experiment(experiment, results_root=tmp / "results", echo=print)
        print(f"second run: {again.ran} tasks run, {again.done_before} already done")
        table = pd.read_csv(written["summary.csv"])
    finally:
        if saved_cache is None:
            del os.environ["DMLBENCH_CACHE"]
        else:
            os.environ["DMLBENCH_CACHE"] = saved_cache

columns = ["dataset", "label", "error_mean", "error_std", "fit_time_mean"]
print(table[columns].round(3).to_string(index=False))

# %%
# The summary has a row per (data set, solver): the mean and standard deviation of the 3-NN test
# error over the splits, in percent, and the mean fit time in seconds.
errors = table.pivot(index="dataset", columns="label", values="error_mean")
ax = errors.plot.bar(rot=0, figsize=(6, 3.5))
ax.set_ylabel("3-NN test error (%)")
ax.set_title("summary.csv of the run")
plt.tight_layout()
plt.show()
