"""DML-eig's Ying & Li (2012) Table 4 rows under the choices the paper leaves open (issue #19).

The diagnosis behind the DML-eig notes of ``dml_bench/papers/ying2012.yaml``. On the same splits,
preprocessing and constraints as ``configs/ying2012_table4.yaml`` (the runner's own
``prepare_split``), DML-eig (μ = 1e-4, Eq. (3), Table 1) is fitted under every combination of

- the stopping rule: ``gap`` (our default, the Frank-Wolfe duality gap ≤ tol·|f_μ|) and
  ``objective`` (Table 1's literal |f_μ(S_{t+1}) − f_μ(S_t)| < tol);
- the scale of X_S that μ acts against: ``unit_mean`` (our default) and ``none`` (a plain sum);
- the iteration cap: 10, 100 and 1000 (the paper's),

and each fit's 3-NN test error, iterations, duality gap at the stop and rank of M are written to
``results/ying2012_table4_diagnosis/dml_eig_sensitivity.csv`` (one row per fit), with the mean
error per (data set, variant) in ``dml_eig_sensitivity_summary.csv``.

    DMLBENCH_DATA_MIRROR=../shared/datasets python benchmarks/dml_eig_sensitivity.py \\
        [--dataset wine --dataset segment ...] [--n-jobs 2]
"""

from __future__ import annotations

import argparse
import itertools
import time
import warnings
from pathlib import Path

import pandas as pd
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits

from dml_bench.config import load_config
from dml_bench.evaluate import model_error, spectrum_counts
from dml_bench.runner import all_tasks, prepare_split
from dml_bench.solvers import DMLEig

CONFIG = "configs/ying2012_table4.yaml"
OUT = Path("results/ying2012_table4_diagnosis")
VARIANTS = [{"stopping": s, "scale": c, "max_iter": m}
            for s, c, m in itertools.product(("gap", "objective"), ("unit_mean", "none"),
                                             (10, 100, 1000))]


def fit_variants(task) -> list[dict]:
    """Every variant on one (data set, split) of the config."""
    rows = []
    with threadpool_limits(1):
        X_train, y_train, X_test, y_test, constraints, _, _ = prepare_split(task)
        for variant in VARIANTS:
            model = DMLEig(mu=1e-4, **variant)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                model.fit(X_train, y_train, constraints=constraints)
                seconds = time.perf_counter() - start
            rows.append({"dataset": task.dataset.label, "split": task.split, **variant,
                         "error": 100 * model_error(model, X_train, y_train, X_test, y_test),
                         "n_iter": model.n_iter_, "converged": model.converged_,
                         "final_gap": float(model.trace_["gap"][-1]),
                         "rank": spectrum_counts(model.components_)[0], "fit_time": seconds})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", action="append", help="data set labels (default: all but "
                        "optdigits_train and usps, the two large ones)")
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    exp = load_config(CONFIG)
    labels = args.dataset or [d.label for d in exp.datasets
                              if d.label not in ("optdigits_train", "usps")]
    tasks = [t for t in all_tasks(exp) if t.solver.name == "dml_eig" and t.dataset.label in labels]
    rows = [r for rs in Parallel(n_jobs=args.n_jobs)(delayed(fit_variants)(t) for t in tasks)
            for r in rs]
    OUT.mkdir(parents=True, exist_ok=True)
    fits = pd.DataFrame(rows)
    fits.to_csv(OUT / "dml_eig_sensitivity.csv", index=False)
    summary = (fits.groupby(["dataset", "stopping", "scale", "max_iter"], sort=False)
               .agg(error=("error", "mean"), error_std=("error", "std"),
                    n_iter=("n_iter", "mean"), rank=("rank", "mean"),
                    fit_time=("fit_time", "mean"), n=("error", "size")).round(3).reset_index())
    summary.to_csv(OUT / "dml_eig_sensitivity_summary.csv", index=False)
    print(summary.to_string(index=False))


if __name__ == "__main__":
    main()
