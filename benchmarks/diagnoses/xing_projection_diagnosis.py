"""What Xing's two projections cost on one split of a board data set, cycle by cycle.

Each cycle of Xing's ascent projects onto C1 = {⟨X_S, A⟩ ≤ t} and the PSD cone C2
(``dml_bench.solvers.xing``): ``projection="alternating"``, the authors' rounds (one d×d
eigendecomposition each) until the violation is below ``eps``, or ``"exact"``, the Euclidean
projection onto C1 ∩ C2 with its multiplier found by safeguarded Newton steps. On the split's
data and pairs (the runner's ``all_tasks`` + ``prepare_split``, the board's Xing parameters),
this script fits the alternating route for ``--cycles`` cycles and the exact route for the
board's cap, one BLAS thread, and writes one row per cycle and route: projection rounds (or
eigendecompositions), seconds of the cycle, Eq. (1)'s objective at the accepted iterate. Rows
go to ``results/leaderboard_diagnosis/<dataset>_xing_projection.csv``.

The alternating route's time over the first cycles is a measured lower bound of its fit: the
rounds a cycle needs grow with the step, which grows by 5 % a cycle.

    DMLBENCH_DATA_MIRROR=../shared/datasets \\
        python benchmarks/diagnoses/xing_projection_diagnosis.py orl_faces --cycles 55
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from dml_bench.experiment.knn import all_tasks, prepare_split
from dml_bench.leaderboard.board import load_board
from dml_bench.solvers import SOLVERS

OUT = Path("results/leaderboard_diagnosis")


def fit_rows(X, y, constraints, params: dict, dataset: str, split: int) -> list[dict]:
    """One row per cycle of a Xing fit with ``params``."""
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore", ConvergenceWarning)
        start = time.perf_counter()
        model = SOLVERS["xing"](**params).fit(X, y, constraints=constraints)
        seconds = time.perf_counter() - start
    trace = model.trace_
    ends = np.asarray(trace["time"])
    return [{"dataset": dataset, "split": split, "projection": params["projection"],
             "cycle": i + 1, "eigendecompositions": int(trace["n_proj"][i]),
             "cycle_seconds": float(ends[i] - (ends[i - 1] if i else 0.0)),
             "elapsed_seconds": float(ends[i]), "objective": float(trace["objective"][i]),
             "fit_seconds": seconds, "span_dim": model.span_dim_}
            for i in range(len(ends))]


def diagnose(dataset: str, config: str, cycles: int, split: int = 0) -> pd.DataFrame:
    """The alternating route's first ``cycles`` cycles and the exact route's whole fit."""
    exp = load_board(config).experiment
    task = next(t for t in all_tasks(exp) if t.dataset.label == dataset
                and t.solver.label == "xing" and t.split == split)
    X, y, _, _, constraints, *_ = prepare_split(task)
    params = dict(task.solver.params)
    rows = fit_rows(X, y, constraints, {**params, "projection": "exact"}, dataset, split)
    rows += fit_rows(X, y, constraints, {**params, "projection": "alternating",
                                         "max_iter": cycles}, dataset, split)
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--cycles", type=int, default=10,
                        help="cycles of the alternating route to time (default 10)")
    parser.add_argument("--split", type=int, default=0)
    parser.add_argument("--config", default="configs/leaderboard.yaml")
    args = parser.parse_args()
    if args.cycles < 1:
        raise SystemExit("--cycles must be at least 1")
    rows = diagnose(args.dataset, args.config, args.cycles, args.split)
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{args.dataset}_xing_projection.csv"
    rows.to_csv(path, index=False)
    for route, part in rows.groupby("projection"):
        print(f"{args.dataset} split {args.split}, {route}: {len(part)} cycles, "
              f"{int(part.eigendecompositions.sum())} eigendecompositions, "
              f"{part.fit_seconds.iloc[0]:.1f} s; the last cycle "
              f"{int(part.eigendecompositions.iloc[-1])} in {part.cycle_seconds.iloc[-1]:.2f} s")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
