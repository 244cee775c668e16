"""LMNN's impostor list between two searches: the loss along the board's first fit, with the
search every ``update_every`` iterations (the board's 10) and at every iteration.

With ``impostors="recompute"`` (:mod:`dml_bench.solvers.lmnn`), LMNN searches all training points
for impostor candidates every ``update_every`` iterations, as the authors' code does; between two
searches only the candidates' triplets enter the loss, and a step is accepted when it lowers that
loss. A point that becomes an impostor between two searches is not in it: the loss the steps
descend then understates ε, and the next search adds the missed triplets at once. With a search
at every iteration each step starts from ε itself.

This script fits the board's first fit of the LMNN cell (split 0, first tuning fold and grid
point: :func:`budget_recheck.cell_fit`) for ``--iters`` iterations at each ``--update-every``, with
one BLAS thread, and keeps each iteration's loss (exact at a search), active triplets and step
(the solver's ``trace_``), and the fit's exact ε at its last iterate (``objective_``, after a
search), in ``results/leaderboard_diagnosis/lmnn_search_<dataset>.csv``; and per fit, in
``lmnn_searches.csv`` there, the exact ε at each search from the start to the returned iterate
(the loss the solver computes first after a search), how many searches found it higher than
the search before and the largest such ratio. A rerun replaces the rows of the ``update_every``
values it runs.

    DMLBENCH_DATA_MIRROR=../shared/datasets python benchmarks/diagnoses/lmnn_search_diagnosis.py \\
        usps --iters 80 --update-every 10 1
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
from threadpoolctl import threadpool_limits

from dml_bench.experiment.knn import fit_task_solver, prepare_split
from dml_bench.leaderboard.board import load_board
from dml_bench.solvers import lmnn

sys.path.insert(0, str(Path(__file__).parent))
from budget_recheck import cell_fit, fit_task, replace_rows  # noqa: E402

OUT = Path("results/leaderboard_diagnosis")


def record_searches(losses: list) -> None:
    """Append to ``losses`` the exact ε at each impostor search: the loss the solver computes
    first after a search (at the search's L, over all the impostors it found)."""
    set_impostors, loss = lmnn._Problem.set_impostors, lmnn._Problem.loss

    def searched(prob, *args):
        prob._searched = True
        return set_impostors(prob, *args)

    def evaluated(prob, L, smoothing=0.0):
        value = loss(prob, L, smoothing)
        if getattr(prob, "_searched", False):
            prob._searched = False
            losses.append(value[0])
        return value

    lmnn._Problem.set_impostors, lmnn._Problem.loss = searched, evaluated


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--config", default="configs/leaderboard.yaml")
    parser.add_argument("--iters", type=int, default=80)
    parser.add_argument("--update-every", type=int, nargs="+", default=[10, 1])
    args = parser.parse_args()
    fit = cell_fit(load_board(args.config).experiment, args.dataset, "lmnn")
    frames, searches, summaries = [], [], []
    record_searches(searches)
    with threadpool_limits(limits=1):
        task, fold = fit_task(fit)
        X_fit, y_fit, *_, constraints, _, _ = prepare_split(task, fold)
        for every in args.update_every:
            task, _ = fit_task(fit, max_iter=args.iters, update_every=every)
            searches.clear()
            solver, wall, _ = fit_task_solver(task, X_fit, y_fit, constraints)
            # the exact ε at each search, from the start to the returned iterate
            at_search = pd.Series(searches)
            rose = int(at_search.diff().gt(0).sum())
            trace = solver.trace_
            frame = pd.DataFrame({"iteration": range(1, len(trace["objective"]) + 1),
                                  **{k: trace[k] for k in ("objective", "n_active", "step")}})
            frames.append(frame.assign(update_every=every, final_exact_objective=solver.objective_,
                                       fit_seconds=wall, fold=fit.fold_name,
                                       params=str(dict(fit.point))))
            summaries.append(dict(
                dataset=args.dataset, update_every=every, max_iter=args.iters,
                n_iter=solver.n_iter_, converged=solver.converged_, searches=len(at_search),
                searches_rising=rose, largest_rise=float((at_search / at_search.shift()).max()),
                first_exact=at_search.iloc[0], last_exact=at_search.iloc[-1],
                exact_at_searches=" ".join(f"{v:.6g}" for v in at_search), fit_seconds=wall,
                fold=fit.fold_name, params=str(dict(fit.point))))
            rises = frame.objective.diff().gt(0).sum()
            print(f"update_every={every}: loss {frame.objective.iloc[0]:.4g} -> "
                  f"{frame.objective.iloc[-1]:.4g} (exact at the end {solver.objective_:.4g}), "
                  f"{rises} rises; exact loss at {len(at_search)} searches, rising at {rose}; "
                  f"{solver.n_iter_} iterations, converged {solver.converged_}, {wall:.0f} s",
                  flush=True)
    replace_rows(OUT / f"lmnn_search_{args.dataset}.csv", pd.concat(frames), ["update_every"])
    replace_rows(OUT / "lmnn_searches.csv", pd.DataFrame(summaries), ["dataset", "update_every"])

if __name__ == "__main__":
    main()
