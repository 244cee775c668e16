"""LMNN's impostor search: the active set against a search of all training points every step.

LMNN (``impostors="recompute"``) searches the impostors among all training points at its start
and every ``update_every`` iterations, and in between keeps only the triplets of the
candidates found then (Weinberger & Saul 2009, §6's active set); ``update_every=1`` searches
all points at every iteration (exhaustive). For each split of a leaderboard data set (default:
letter, 14,000 training points), with the board's splits, constraints and the μ that the
split's tuning chose (the committed ``runs.csv`` row), LMNN is fitted both ways with one BLAS
thread. Recorded per split and route: CPU seconds, iterations, the loss, the 3-NN test error
(the board's rule) and whether the board's route reproduces the committed error; per split and
over the pooled test points of all splits, McNemar's exact p of the two routes' errors
(``bench_float32.mcnemar_p``).

    python benchmarks/timing/bench_lmnn_search.py [--dataset letter] [--splits 10]
        [--out results/bench]

Writes ``lmnn_search.csv`` (one row per split and route, and a ``pooled`` row per route).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from bench_float32 import mcnemar_p  # benchmarks/timing/, beside this script
from dml_bench.evaluate import knn_predict
from dml_bench.experiment.knn import all_tasks, fit_task_solver, prepare_split
from dml_bench.leaderboard.board import load_board
from dml_bench.run.results import RunStore

#: the board's route (its config's update_every, the default 10) and the exhaustive search
ROUTES = {"active_set": {}, "exhaustive": {"update_every": 1}}


def fit_routes(task, tuned: dict) -> tuple[list[dict], dict[str, np.ndarray]]:
    """Both routes on ``task``'s split: one row each, and each route's per-test-point
    correctness."""
    X, y, X_test, y_test, constraints, *_ = prepare_split(task)
    rows, correct = [], {}
    for route, change in ROUTES.items():
        solver = dataclasses.replace(task.solver, params={**task.solver.params, **change})
        run = dataclasses.replace(task, solver=solver, tuned=tuple(tuned.items()))
        start = time.process_time()
        model, wall, _ = fit_task_solver(run, X, y, constraints)
        cpu = time.process_time() - start
        predicted = knn_predict(model.transform(X), y, model.transform(X_test),
                                task.evaluation.knn_k, task.evaluation.tie_break)
        correct[route] = predicted == y_test
        rows.append({"dataset": task.dataset.label, "split": task.split, "route": route,
                     "update_every": model.update_every, **tuned, "cpu_s": cpu, "wall_s": wall,
                     "n_iter": model.n_iter_, "loss": model.objective_,
                     "error": float(np.mean(~correct[route]))})
    p = mcnemar_p(correct["active_set"], correct["exhaustive"])
    for row in rows:
        row["mcnemar_p"] = p
    return rows, correct


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="letter")
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--config", default="configs/leaderboard.yaml")
    parser.add_argument("--results", default="results", help="parent of the board's results")
    parser.add_argument("--out", default="results/bench")
    args = parser.parse_args(argv)
    exp = load_board(args.config).experiment
    committed = RunStore(Path(args.results) / exp.name).read()
    committed = committed[(committed.dataset == args.dataset) & (committed.label == "lmnn")]
    committed = committed.set_index("split")
    rows, pooled = [], {route: [] for route in ROUTES}
    with threadpool_limits(1):
        for task in all_tasks(exp):
            if (task.dataset.label != args.dataset or task.solver.label != "lmnn"
                    or task.split >= args.splits or task.split not in committed.index):
                continue
            text = committed.loc[task.split, "tuned_params"]
            tuned = json.loads(text) if isinstance(text, str) and text else {}
            split_rows, correct = fit_routes(task, tuned)
            split_rows[0]["reproduces_committed"] = (
                split_rows[0]["error"] == float(committed.loc[task.split, "error"]))
            rows += split_rows
            for route in ROUTES:
                pooled[route].append(correct[route])
            print(f"split {task.split}:", ", ".join(
                f"{r['route']} {100 * r['error']:.2f} % in {r['cpu_s']:.1f} s" for r in split_rows),
                f"(p = {split_rows[0]['mcnemar_p']:.3g})", flush=True)
            p = write(rows, pooled, args)  # after every split: a long run keeps its part
    if not rows:
        raise SystemExit(f"no committed lmnn row on {args.dataset!r}")
    print(f"pooled over {len(pooled['active_set'])} splits: McNemar p = {p:.3g}; "
          f"wrote {Path(args.out) / 'lmnn_search.csv'}")


def write(rows: list[dict], pooled: dict, args) -> float:
    """``lmnn_search.csv``: the splits' rows and a ``pooled`` row per route; returns the pooled
    McNemar p."""
    p = mcnemar_p(np.concatenate(pooled["active_set"]), np.concatenate(pooled["exhaustive"]))
    frame = pd.DataFrame(rows)
    total = [{"dataset": args.dataset, "split": "pooled", "route": route,
              "cpu_s": frame[frame.route == route].cpu_s.sum(),
              "wall_s": frame[frame.route == route].wall_s.sum(),
              "n_iter": frame[frame.route == route].n_iter.sum(),
              "error": float(np.mean(~np.concatenate(pooled[route]))), "mcnemar_p": p}
             for route in ROUTES]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows + total).to_csv(out / "lmnn_search.csv", index=False)
    return p


if __name__ == "__main__":
    main()
