"""float32 against float64 for the solvers that keep single precision.

For each timing cell of a paper table (default: Ying & Li 2012 Table 5, DML-eig, on its larger
sets) the committed run's task is fitted twice on split 0 with one BLAS thread: with the config's
preprocessing and with ``dtype: float32``. Recorded per dtype: wall and CPU seconds, iterations,
the optimality measure at stop and the 3-NN test error. Per cell: the CPU-time speed-up
(float64 / float32, both measured in this run) and whether the error changed, tested on the two
classifiers' test predictions with McNemar's exact test (a binomial test on the test points that
exactly one of the two classifies correctly; ``scipy.stats.binomtest``).

    python benchmarks/timing/bench_float32.py [--table ying2012/table5] [--solver dml_eig]
        [--dataset usps ...] [--out results/bench]

Writes ``float32.csv`` (one row per cell and dtype, with the cell's speed-up and p-value).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import binomtest
from threadpoolctl import threadpool_limits

from bench_paper_times import ROOT, table_cells  # benchmarks/timing/, beside this script
from dml_bench.evaluate import knn_predict
from dml_bench.solvers import SOLVERS
from dml_bench.experiment.knn import fit_task_solver, prepare_split

DTYPES = ("float64", "float32")


def with_dtype(task, dtype):
    """The task with its dataset's preprocessing ``dtype`` replaced."""
    prep = dataclasses.replace(task.dataset.preprocessing, dtype=dtype)
    return dataclasses.replace(task, dataset=dataclasses.replace(task.dataset, preprocessing=prep))


def fit_and_predict(task):
    """Fit ``task`` (1 BLAS thread); its row fields and the test predictions."""
    with threadpool_limits(limits=1):
        X_train, y_train, X_test, y_test, constraints, _, _ = prepare_split(task)
        solver, wall, cpu = fit_task_solver(task, X_train, y_train, constraints)
        pred = knn_predict(solver.transform(X_train), y_train, solver.transform(X_test),
                           k=task.evaluation.knn_k, tie_break=task.evaluation.tie_break)
    return {"wall_seconds": wall, "cpu_seconds": cpu, "n_iter": solver.n_iter_,
            "optimality": getattr(solver, "optimality_", np.nan),
            "error": float(np.mean(pred != y_test))}, pred == y_test


def mcnemar_p(correct_a, correct_b) -> float:
    """Exact McNemar p-value: the discordant test points split evenly under 'same error'."""
    only_a = int(np.sum(correct_a & ~correct_b))
    only_b = int(np.sum(~correct_a & correct_b))
    return 1.0 if only_a + only_b == 0 else binomtest(only_a, only_a + only_b, 0.5).pvalue


def compare(task) -> list[dict]:
    """Both dtypes of one task, with the speed-up and McNemar's p on each row."""
    rows, correct = [], []
    for dtype in DTYPES:
        row, ok = fit_and_predict(with_dtype(task, dtype))
        rows.append({"dataset": task.dataset.label, "solver": task.solver.label,
                     "dtype": dtype, **row})
        correct.append(ok)
    speedup = rows[0]["cpu_seconds"] / rows[1]["cpu_seconds"]
    p = mcnemar_p(*correct)
    return [{**r, "cpu_speedup": speedup, "mcnemar_p": p} for r in rows]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", default="ying2012/table5")
    ap.add_argument("--solver", default="dml_eig")
    ap.add_argument("--dataset", action="append",
                    help="paper row(s) (default: usps, optdigits_train, waveform)")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench")
    args = ap.parse_args(argv)
    keep = sorted(n for n, s in SOLVERS.items() if getattr(s, "preserves_float32", False))
    if args.solver not in keep:
        print(f"error: --solver must keep float32, one of {', '.join(keep)}", file=sys.stderr)
        return 2
    datasets = args.dataset or ["usps", "optdigits_train", "waveform"]
    cells = [c for c in table_cells(args.table)
             if c.solver == args.solver and c.dataset in datasets and c.task is not None]
    if not cells:
        print(f"error: no runnable {args.solver} cell of {args.table} among {datasets}",
              file=sys.stderr)
        return 2
    rows = []
    for cell in cells:
        rows += compare(cell.task)
        r = rows[-1]
        print(f"{cell.dataset}: float32 {r['cpu_speedup']:.2f}x faster (CPU), error "
              f"{100 * rows[-2]['error']:.2f} -> {100 * r['error']:.2f} %, McNemar "
              f"p = {r['mcnemar_p']:.3g}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(args.out / "float32.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
