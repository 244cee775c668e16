"""Referee: metric-learn 0.7.0's ITML, MMC and LMNN on Ying & Li Table 4's small sets and USPS,
on our splits, preprocessing, pairs and tuned parameters, beside our committed cells.

Per data set and split of ``configs/ying2012_table4.yaml`` (the runner's own ``prepare_split``:
the same training and test parts and the same k-NN pairs), metric-learn fits, in its own
environment (``referee_worker.py``, the venv of ``benchmarks/timing/bench_metric_learn.py``):

- ``ITML`` on our similar and dissimilar pairs, at the γ our 3-fold CV chose on that split, with
  its own bounds, tolerance (1e-3) and cap (1000 sweeps);
- ``MMC`` on our pairs with the table's cap of 100 cycles (Xing et al.'s alternating
  projections, as our headline);
- ``LMNN`` on the labels with k = 3 and ``regularization`` = the μ our CV chose (its weight of the
  push term, as our μ).

Both sides are scored by the same 3-NN rule (``dml_bench.evaluate.knn_error``, ties to the
nearest). Writes to ``results/ying2012_table4_diagnosis/``:

- ``referee_metric_learn.csv``: one row per (data set, split, method): our committed error and
  the referee's, in %;
- ``referee_metric_learn_summary.csv``: per cell, both means, their difference and the paired
  t-test over the splits (``scipy.stats.ttest_rel``); ``flagged`` when p < 0.05, i.e. the two
  implementations disagree by more than the split noise.

    DMLBENCH_DATA_MIRROR=../shared/datasets python benchmarks/diagnoses/referee_metric_learn.py \\
        [--dataset wine ...] [--method itml ...] [--venv PATH]

Reruns merge into the CSV (rows of the same data set, split and method are replaced).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from dml_bench.evaluate import knn_error
from dml_bench.experiment.config import load_config
from dml_bench.experiment.knn import all_tasks, prepare_split
from dml_bench.run.results import RunStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "timing"))
from bench_metric_learn import DEFAULT_VENV, ONE_THREAD, VENV_ENV, metric_learn_python  # noqa: E402

CONFIG = "configs/ying2012_table4.yaml"
DATASETS = ("wine", "iris", "breast_cancer", "pima", "segment", "usps")
METHODS = ("itml", "xing", "lmnn")
WORKER = Path(__file__).with_name("referee_worker.py")
OUT = Path("results") / "ying2012_table4_diagnosis"


def referee_params(method: str, tuned: dict) -> dict:
    """metric-learn's parameters for our ``method`` with the parameters our CV chose."""
    if method == "itml":
        return {"gamma": float(tuned["gamma"]), "max_iter": 1000}
    if method == "xing":
        return {"max_iter": 100}
    return {"n_neighbors": 3, "regularization": float(tuned["mu"])}


def fit_dataset(python: Path, exp, runs: pd.DataFrame, dataset: str, methods) -> list[dict]:
    tasks = {(t.split, t.solver.label): t for t in all_tasks(exp)
             if t.dataset.label == dataset and t.solver.label in methods}
    committed = runs.set_index("task_id")
    parts, fits = {}, []
    for (split, method), task in sorted(tasks.items()):
        if split not in parts:
            parts[split] = prepare_split(task)[:5]
        row = committed.loc[task.task_id]
        tuned = json.loads(row["tuned_params"]) if isinstance(row["tuned_params"], str) else {}
        fits.append({"split": split, "method": method, "params": referee_params(method, tuned),
                     "ours": 100 * float(row["error"])})
    with tempfile.TemporaryDirectory() as tmp:
        job, out = Path(tmp) / "job", Path(tmp) / "out"
        arrays = {}
        for split, (X, y, X_test, _, c) in parts.items():
            arrays.update({f"X_train_{split}": X, f"y_train_{split}": y,
                           f"X_test_{split}": X_test,
                           f"pairs_{split}": np.vstack([c.similar, c.dissimilar]),
                           f"pair_y_{split}": np.r_[np.ones(len(c.similar)),
                                                    -np.ones(len(c.dissimilar))]})
        np.savez(f"{job}.npz", **arrays)
        Path(f"{job}.json").write_text(json.dumps({"fits": fits}))
        done = subprocess.run([str(python), str(WORKER), str(job), str(out)],
                              capture_output=True, text=True, env={**os.environ, **ONE_THREAD})
        if done.returncode:
            lines = done.stderr.strip().splitlines() or ["no output"]
            raise SystemExit(f"metric-learn on {dataset} failed: {lines[-1]}")
        result = json.loads(Path(f"{out}.json").read_text())
        points = dict(np.load(f"{out}.npz"))
    rows = []
    for fit, record in zip(fits, result["fits"]):
        split, method = fit["split"], fit["method"]
        _, y, _, y_test, _ = parts[split]
        failed = record.get("failed")
        error = np.nan if failed else 100 * knn_error(
            points[f"{method}_{split}_train"], y, points[f"{method}_{split}_test"], y_test,
            exp.evaluation.knn_k, exp.evaluation.tie_break)
        rows.append({"dataset": dataset, "split": split, "method": method, "ours": fit["ours"],
                     "referee": error, "referee_params": json.dumps(fit["params"]),
                     "referee_fit_time": record.get("fit_time"),
                     "referee_n_iter": record.get("n_iter"), "failure": failed,
                     "version": result["version"]})
        print(f"{dataset} split {split} {method}: ours {fit['ours']:.2f}, metric-learn "
              f"{error:.2f}", flush=True)
    return rows


def summarise(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (data set, method): both means, the difference and the paired t-test's p."""
    out = []
    for (dataset, method), cell in rows.groupby(["dataset", "method"], sort=False):
        cell = cell.dropna(subset=["referee"])
        diff = cell["referee"] - cell["ours"]
        p = (float(stats.ttest_rel(cell["referee"], cell["ours"]).pvalue)
             if len(cell) > 1 and diff.std() > 0 else (1.0 if len(cell) else np.nan))
        out.append({"dataset": dataset, "solver": method, "ours": cell["ours"].mean(),
                    "referee": cell["referee"].mean(), "referee_minus_ours": diff.mean(),
                    "p": p, "flagged": bool(p < 0.05), "n": len(cell)})
    return pd.DataFrame(out).round(4)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", action="append", choices=DATASETS)
    ap.add_argument("--method", action="append", choices=METHODS)
    ap.add_argument("--venv", type=Path, default=Path(os.environ.get(VENV_ENV, DEFAULT_VENV)))
    args = ap.parse_args(argv)
    python = metric_learn_python(args.venv)
    exp = load_config(CONFIG)
    runs = RunStore(Path("results") / exp.name).read()
    rows = [r for dataset in args.dataset or DATASETS
            for r in fit_dataset(python, exp, runs, dataset, args.method or METHODS)]
    new = pd.DataFrame(rows)
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "referee_metric_learn.csv"
    if path.is_file():
        old = pd.read_csv(path)
        key = ["dataset", "split", "method"]
        seen = pd.MultiIndex.from_frame(new[key].astype(str))
        new = pd.concat([old[~pd.MultiIndex.from_frame(old[key].astype(str)).isin(seen)], new],
                        ignore_index=True)
    new.to_csv(path, index=False)
    summary = summarise(new)
    summary.to_csv(OUT / "referee_metric_learn_summary.csv", index=False)
    print(summary.to_string(index=False))


if __name__ == "__main__":
    main()
