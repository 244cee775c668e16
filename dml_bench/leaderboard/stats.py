"""A leaderboard's statistics: its table of cells, then ranks, Friedman's test, Nemenyi's
critical difference, pairwise tests and the time–rank front (:mod:`dml_bench.report.ranking`,
Demšar 2006) over the data sets whose cells have all run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..experiment.sections import DEFAULT_PLACE, DataPlace
from ..errors import DMLBenchError
from ..experiment.knn import all_tasks, plan
from ..report import ranking
from ..report.knn import read_runs
from .board import Board, cell_bound, memory_reason, planned_sizes, read_cells


def _seconds(by_id: pd.DataFrame, have: list) -> dict:
    """The wall seconds that a cell's finished tasks took: their final fits and their tuning
    fits (each task's ``tuning_time``), summed."""
    rows = by_id.loc[have] if have else by_id.iloc[:0]
    total = {}
    for column, key in (("fit_time", "final_seconds"), ("tuning_time", "tuning_seconds")):
        values = rows[column] if column in rows else pd.Series(dtype=float)
        total[key] = float(pd.to_numeric(values, errors="coerce").fillna(0.0).sum())
    return total


def solved_in_span(row) -> bool:
    """Whether the fit of a ``runs.csv`` row solved in the span of its training points: more
    features than training points, and the learner's own rule at the row's parameters
    (``MetricLearner._solves_in_span``, :mod:`dml_bench.solvers.span`) and its cost rule
    (``MetricLearner._span_pays``)."""
    from ..solvers import SOLVERS

    n, d = int(row["n_train"]), int(row["n_features"])
    if row["solver"] not in set(SOLVERS) or not d > n:
        return False
    learner = SOLVERS[row["solver"]](**json.loads(row["solver_params"]))
    rule = getattr(learner, "_solves_in_span", None)
    return bool(rule is not None and rule() and learner._span_pays(n, d))


def board_table(board: Board, board_dir: Path, data: DataPlace = DEFAULT_PLACE) -> pd.DataFrame:
    """One row per (data set, method) cell of the board: its status and, when complete, the mean
    and std of its test error over the splits and its mean final-fit time.

    ``solved_in_span``: the cell's fits solved in the span of the training points
    (:func:`solved_in_span`); ``final_seconds`` and ``tuning_seconds``: the wall seconds of its
    finished tasks' final and tuning fits; ``bound``: what decided a cell that did not run to its
    end (:func:`~dml_bench.leaderboard.board.cell_bound`). Status: ``complete`` (every split
    has a row), ``over_budget`` (from ``cells.csv``, at this budget or a larger one: before
    completeness, since a fit over the budget can land last), ``cannot_run`` (from
    ``cells.csv``, while the solver's footprint still breaks the memory rule on the data set's
    size as the rule takes it, :func:`~.board.planned_sizes`; the reason gives the footprint's
    estimate as it is now), ``failed`` (from ``cells.csv``), ``no_data`` (the data set is not
    available here) or ``pending`` (still to run, a cannot-run mark whose rule no longer holds
    included).
    """
    exp = board.experiment
    try:
        runs = read_runs(board_dir)
    except DMLBenchError:
        runs = pd.DataFrame(columns=["task_id", "error", "fit_time"])
    by_id = runs.set_index("task_id") if len(runs) else runs
    _, skipped = plan(exp, data)
    no_data = {d: reason for d, _, reason in skipped if reason.startswith("data not available")}
    marks = read_cells(board_dir).set_index(["dataset", "label"])
    cells: dict[tuple[str, str], list[str]] = {}
    solver_of = {}  # (data set, method) → its solver entry, the data set's parameters included
    for task in all_tasks(exp, data):
        cells.setdefault((task.dataset.label, task.solver.label), []).append(task.task_id)
        solver_of[task.dataset.label, task.solver.label] = task.solver
    sizes = planned_sizes(exp, no_data)
    rows = []
    for (d, s), ids in cells.items():
        have = [i for i in ids if i in by_id.index]
        row = {"dataset": d, "method": s, "n_splits": len(ids), "n_done": len(have),
               "error": np.nan, "error_std": np.nan, "fit_time": np.nan, "hosts": "",
               "reason": "", "bound": "", "solved_in_span": bool(have) and solved_in_span(by_id.loc[have[0]]),
               **_seconds(by_id, have)}
        over = (d, s) in marks.index and marks.loc[(d, s), "status"] == "over_budget" \
            and float(marks.loc[(d, s), "budget_seconds"]) >= board.budget
        if d in no_data:
            row.update(status="no_data", reason=no_data[d])
        elif over:  # a fit over the budget makes the cell "–" even if its rows are all there
            row.update(status="over_budget", reason=marks.loc[(d, s), "reason"])
        elif len(have) == len(ids):
            errors = by_id.loc[have, "error"].astype(float) * 100
            # rounded far below one test point, so that equal error counts summed in another
            # order tie exactly in the ranks
            hosts = by_id.loc[have].get("cpu_model", pd.Series(dtype=str)).dropna().astype(str)
            row.update(status="complete", error=round(errors.mean(), 9),
                       error_std=errors.std(ddof=1),
                       fit_time=by_id.loc[have, "fit_time"].astype(float).mean(),
                       hosts="; ".join(sorted(set(hosts) - {""})))
        elif (d, s) in marks.index:
            row.update(status=marks.loc[(d, s), "status"], reason=marks.loc[(d, s), "reason"])
            if row["status"] == "cannot_run" and d in sizes:
                # the rule on the sizes it is checked on, with the footprint as it is now
                n, dim = sizes[d]
                need = board.memory_bytes(solver_of[d, s].name, n, dim, solver_of[d, s].params)
                if need <= board.memory_gb * 2 ** 30:  # the footprint changed since the mark
                    row.update(status="pending", reason=(
                        f"to run: an estimated {need / 2 ** 30:.1f} GB now meets the "
                        f"{board.memory_gb:g} GB rule (was: {row['reason']})"))
                else:
                    row["reason"] = memory_reason(need, n, dim, board.memory_gb)
        else:
            row.update(status="pending")
        row["bound"] = cell_bound(row["status"], row["reason"], board.budget)
        rows.append(row)
    return pd.DataFrame(rows)


@dataclass
class Statistics:
    """The leaderboard's statistics over the data sets without pending cells."""

    table: pd.DataFrame          # board_table
    errors: pd.DataFrame         # ranked data sets × methods, NaN where no result
    ranks: pd.DataFrame          # per-data-set ranks
    mean_ranks: pd.Series        # sorted
    friedman: ranking.Friedman | None
    cd: float | None
    pairwise: pd.DataFrame
    time_error: pd.DataFrame     # method, mean_rank, fit_time (geometric mean), pareto
    pending: list                # data sets left out: (data set, methods still to run)
    no_data: list


def statistics(table: pd.DataFrame, alpha: float = 0.05) -> Statistics:
    """Ranks, Friedman, Nemenyi CD, pairwise tests and the time–error front of a board table.

    A data set enters only when none of its cells is pending (a partial board ranks the data sets
    it has finished); data sets not available here are left out. Over-budget, cannot-run and
    failed cells rank last on their data set (:func:`ranking.ranks`).
    """
    grid = table.pivot(index="dataset", columns="method", values="error")
    status = table.pivot(index="dataset", columns="method", values="status")
    order_d = list(dict.fromkeys(table["dataset"]))
    order_m = list(dict.fromkeys(table["method"]))
    grid = grid.reindex(index=order_d, columns=order_m)
    status = status.reindex(index=order_d, columns=order_m)
    no_data = [d for d in order_d if (status.loc[d] == "no_data").all()]
    pending = [(d, [m for m in order_m if status.loc[d, m] == "pending"]) for d in order_d
               if d not in no_data and (status.loc[d] == "pending").any()]
    ranked = [d for d in order_d if d not in no_data and d not in dict(pending)]
    errors = grid.loc[ranked]
    r = ranking.ranks(errors)
    mean_ranks = r.mean().sort_values(kind="stable")
    fr = cd = None
    if len(ranked) >= 2 and len(order_m) >= 3:
        fr = ranking.friedman(errors)
        cd = ranking.critical_difference(len(order_m), len(ranked), alpha)
    times = table[table["dataset"].isin(ranked)].groupby("method")["fit_time"].apply(
        lambda t: float(np.exp(np.log(t.dropna().clip(lower=1e-6)).mean())) if t.notna().any()
        else np.nan)
    te = pd.DataFrame({"method": mean_ranks.index, "mean_rank": mean_ranks.to_numpy(),
                       "fit_time": times.reindex(mean_ranks.index).to_numpy()})
    has = te["fit_time"].notna().to_numpy()
    te["pareto"] = False
    if has.any():
        te.loc[has, "pareto"] = ranking.pareto_front(te.loc[has, "fit_time"].to_numpy(),
                                                     te.loc[has, "mean_rank"].to_numpy())
    return Statistics(table, errors, r, mean_ranks, fr, cd, ranking.pairwise(errors), te,
                      pending, no_data)
