"""Diagnose a mismatched cell of a paper's own method: where the fit stops and what it is worth.

The diagnosis behind the notes of the seed methods' mismatched cells in ``dml_bench/papers/*.yaml``.
On the splits, preprocessing and constraints of a paper config (the runner's
own ``all_tasks`` + ``prepare_split``), the solver of one config label is fitted as configured —
the config's parameters, plus the values its ``tune:`` block chose, read from the ``tuned_params``
column of ``results/<config name>/runs.csv`` (no re-tuning) — at several iteration caps, and each
fit writes one row with

- the optimality measure at the stop: iterations, ``converged_``, the solver's objective and the
  last entry of every per-iteration ``trace_`` column (``final_gap``, ``final_pg_norm``, ...) and
  ``rel_gap``, the duality / Frank-Wolfe gap relative to the primal (else the traced) objective;
- the rank of M and the eigenvalues holding 90 % of its energy (``evaluate.spectrum_counts``;
  empty for the board's reference classifiers, the SVM and the kernel ELM, which learn no metric);
  for those, ``kernel_nn_median`` instead: the median over training points of the Gaussian
  kernel ``exp(−γ‖x − x'‖²)`` between a point and its nearest other training point, so that a
  width γ too large for the data (a Gram matrix that is the identity up to rounding) shows,
  and ``nn1_error``, the Euclidean 1-NN test error on the kernel's inputs, the rule such a
  classifier reduces to when each prediction is decided by the nearest training point's term;
- the 3-NN test error (``evaluate.model_error``) and, on the same split, our Euclidean 3-NN error,
  so that ``gain = error − euclidean_error`` can be set against the paper's
  ``paper_gain = paper_error − paper_euclidean``: a different data set or split shifts the
  Euclidean error and leaves the gain, a different fit moves the gain;
- ``runs_error``: the error committed in runs.csv for the task, which the fit at the configured
  cap (``cap_fraction == 1`` with no ``--param`` override) reproduces when nothing changed since.

Caps default to 10 %, 50 %, 100 % and 300 % of the configured ``max_iter``; a closed form
(LDA, RCA) is fitted once per ``--param`` variant, with an empty ``cap``; for the online
learners, which have none (MDML), ``--max-iters`` sets their number of passes, ``n_epochs``, and
for ITML configured with a cap on single projections (the paper configs), ``max_proj`` (default:
the configured one), else its cap on sweeps, ``max_iter``. A cap
at or above the iterations of a fit that stopped by its own rule earlier gives the same fit, so it
is not refitted (``reused`` names the cap whose fit it copies). ``--param key=v1,v2`` refits at
other values of a parameter (every combination of all ``--param`` and caps), e.g. a ridge, μ or
scale, a learning rate or the random order of an online learner; the fits as configured come
first, with empty ``param_*`` columns. Rows go to
``results/<config name>_diagnosis/<label>_<dataset>.csv``.

    DMLBENCH_DATA_MIRROR=../shared/datasets python benchmarks/diagnoses/seed_diagnosis.py \\
        frobmetric configs/shen2014_table1.yaml letter
    python benchmarks/diagnoses/seed_diagnosis.py lmnn_eig configs/ying2012_table4.yaml waveform \\
        --splits 3 --max-iters 100 1000 3000 --param scale=none,unit_mean
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from dml_bench.experiment.config import parse_scalar
from dml_bench.experiment.sections import DataPlace
from dml_bench.evaluate import knn_error, model_error, spectrum_counts
from dml_bench.leaderboard.board import experiment_of
from dml_bench.run.results import RunStore
from dml_bench.solvers import SOLVERS
from dml_bench.experiment.knn import Task, all_tasks, prepare_split

DEFAULT_FRACTIONS = (0.1, 0.5, 1.0, 3.0)
#: the iteration-count parameter of solvers whose cap is not ``max_iter``: passes over the pairs
#: (MDML, POLA), single Bregman projections (ITML; its ``max_iter`` is an optional sweep cap)
ITER_PARAMS = {"mdml": "n_epochs", "pola": "n_epochs", "itml": "max_proj"}


def iteration_param(solver_name: str) -> str | None:
    """Name of the solver's iteration cap: ``max_iter``, or its number of passes; None for a
    closed form (LDA, RCA, ...), which is fitted once per variant."""
    name = ITER_PARAMS.get(solver_name, "max_iter")
    return name if name in SOLVERS[solver_name]().get_params() else None


def tasks_for(config: str, label: str, dataset: str, splits: int | None = None,
              mirror: str | None = None) -> tuple[object, list[Task]]:
    """The experiment and its tasks of (solver label, dataset label), the first ``splits`` ones.

    ``config`` is a paper config or a leaderboard config (``configs/leaderboard.yaml``).
    """
    exp = experiment_of(config)
    tasks = [t for t in all_tasks(exp, DataPlace(mirror)) if t.solver.label == label
             and t.dataset.label == dataset]
    if not tasks:
        raise SystemExit(f"{config}: no task with solver label {label!r} on dataset {dataset!r}")
    return exp, tasks[:splits] if splits else tasks


def committed_runs(exp, results_root: str | Path = "results") -> pd.DataFrame:
    """``results/<name>/runs.csv`` (and its further files) of the experiment (empty when it has
    not been run)."""
    return RunStore(Path(results_root) / exp.name).read()


def committed_row(task: Task, runs: pd.DataFrame) -> dict | None:
    """The runs.csv row of the task's (dataset, split, label), the latest if several."""
    if runs.empty:
        return None
    hits = runs[(runs["dataset"] == task.dataset.label) & (runs["split"] == task.split)
                & (runs["label"] == task.solver.label)]
    return None if hits.empty else hits.sort_values("finished_at").iloc[-1].to_dict()


def with_tuned(task: Task, row: dict | None) -> Task:
    """The task with the parameters its ``tune:`` block chose in the committed run."""
    if not task.solver.tune:
        return task
    raw = row.get("tuned_params") if row else None
    if not isinstance(raw, str) or not raw:
        raise SystemExit(f"{task.dataset.label} split {task.split} {task.solver.label}: no tuned "
                         "parameters in runs.csv; run the config first or pass them with --param")
    return dataclasses.replace(task, tuned=tuple(sorted(json.loads(raw).items())))


def paper_cells(exp, task: Task) -> dict:
    """The paper's error of the cell and of its Euclidean column (NaN where it has none)."""
    from dml_bench.papers import load_paper_table

    out = {"paper_error": np.nan, "paper_euclidean": np.nan}
    for key in exp.paper_table:
        table = load_paper_table(key)
        if table.quantity != "error":
            continue
        row = task.dataset.label if task.dataset.label in table.row_names else task.dataset.name
        col = task.solver.label if task.solver.label in table.column_names else task.solver.name
        cells = table.values.get(row, {})
        if cells.get(col):
            out["paper_error"] = cells[col][0]
        if cells.get("euclidean"):
            out["paper_euclidean"] = cells["euclidean"][0]
    return out


def _final_trace(trace: dict) -> dict:
    """The last entry of every numeric trace column, and the gap relative to the objective."""
    out = {}
    for key, values in (trace or {}).items():
        values = np.asarray(values)
        if key != "time" and values.size and values.dtype.kind in "biuf":
            out[f"final_{key}"] = float(values[-1])
    if "final_gap" in out:
        ref = out.get("final_primal", out.get("final_objective", np.nan))
        out["rel_gap"] = out["final_gap"] / abs(ref) if ref else np.nan
    return out


def nearest_sq_distances(X) -> np.ndarray:
    """Each row's squared Euclidean distance to its nearest other row (scikit-learn's brute
    neighbour search, in chunks: no n × n matrix)."""
    from sklearn.neighbors import NearestNeighbors

    dist, _ = NearestNeighbors(n_neighbors=2).fit(X).kneighbors(X)
    return dist[:, 1] ** 2


def diagnose(task: Task, caps: list[int] | None = None, fractions=DEFAULT_FRACTIONS,
             variants: list[dict] | None = None, runs: pd.DataFrame | None = None,
             paper: dict | None = None) -> list[dict]:
    """One row per (variant, cap) fit of the task's solver on its split; see the module doc.

    ``caps``: iteration caps (default: ``fractions`` of the configured cap, or the configured
    number of passes alone for solvers without ``max_iter``); ``variants``: parameter overrides,
    each fitted at every cap; ``runs``: the experiment's runs.csv, for the tuned parameters and
    the committed error.
    """
    row = committed_row(task, runs if runs is not None else pd.DataFrame())
    task = with_tuned(task, row)
    base = task.solver_params()  # config + tuned values over the solver's defaults
    it_param = iteration_param(task.solver.name)
    if it_param == "max_proj" and base.get("max_proj") is None:
        it_param = "max_iter"  # ITML without a cap on projections stops at its cap on sweeps
    if it_param is None:
        if caps:
            raise SystemExit(f"{task.solver.name} is a closed form without an iteration cap: "
                             "drop --max-iters")
        configured, caps = np.nan, [np.nan]
    else:
        configured = base[it_param]
        if caps is None:
            caps = ([max(1, round(f * configured)) for f in fractions]
                    if it_param == "max_iter" else [configured])
        caps = sorted(set(int(c) for c in caps))
    rows = []
    with threadpool_limits(1):
        X_train, y_train, X_test, y_test, constraints, _, _ = prepare_split(task)
        euclidean = 100 * knn_error(X_train, y_train, X_test, y_test, task.evaluation.knn_k,
                                    task.evaluation.tie_break)
        for variant in variants or [{}]:
            done = []  # (cap, n_iter, row) of the fits that stopped by their own rule
            for cap in caps:
                params = {**base, **variant, **({it_param: cap} if it_param else {})}
                reuse = next((r for c, n, r in done if n < c and n <= cap), None)
                if reuse is not None and it_param == "max_iter":
                    rows.append({**reuse, "cap": cap, "cap_fraction": cap / configured,
                                 "reused": reuse["cap"]})
                    continue
                model = SOLVERS[task.solver.name](**params)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    start = time.perf_counter()
                    model.fit(X_train, y_train, constraints=constraints)
                    seconds = time.perf_counter() - start
                error = 100 * model_error(model, X_train, y_train, X_test, y_test, task.evaluation.knn_k,
                                          task.evaluation.tie_break)
                # a reference classifier (SVM, kernel ELM) learns no metric: no spectrum
                rank, energy = (spectrum_counts(model.components_)
                                if hasattr(model, "components_") else (np.nan, np.nan))
                kernel = {}
                if not hasattr(model, "components_") and "gamma" in params:
                    scaler = getattr(model, "scaler_", None)  # the kernel's inputs, as fitted
                    Z_train, Z_test = ((X_train, X_test) if scaler is None else
                                       (scaler.transform(X_train), scaler.transform(X_test)))
                    gamma = getattr(model, "gamma_", params["gamma"])
                    nearest = np.exp(-gamma * nearest_sq_distances(Z_train))
                    kernel = {"kernel_nn_median": float(np.median(nearest)),
                              "nn1_error": 100 * knn_error(Z_train, y_train, Z_test, y_test, 1,
                                                           task.evaluation.tie_break)}
                fit = {
                    "experiment": task.experiment, "dataset": task.dataset.label,
                    "split": task.split, "solver": task.solver.name, "label": task.solver.label,
                    "tuned": json.dumps(dict(task.tuned), sort_keys=True),
                    **{f"param_{k}": v for k, v in variant.items()},
                    "iter_param": it_param, "cap": cap, "cap_fraction": cap / configured,
                    "n_iter": getattr(model, "n_iter_", np.nan),
                    **({"n_proj": model.n_proj_} if hasattr(model, "n_proj_") else {}),
                    "converged": getattr(model, "converged_", np.nan),
                    "objective": getattr(model, "objective_", np.nan),
                    **_final_trace(getattr(model, "trace_", {})),
                    "rank": rank, "n_energy90": energy, **kernel, "error": error,
                    "euclidean_error": euclidean, "gain": error - euclidean,
                    **(paper or {}),
                    "runs_error": 100 * row["error"] if row else np.nan,
                    "n_train": len(y_train), "n_test": len(y_test),
                    "n_features": X_train.shape[1], "fit_time": seconds, "reused": np.nan,
                }
                if "paper_error" in fit:
                    fit["paper_gain"] = fit["paper_error"] - fit["paper_euclidean"]
                rows.append(fit)
                if it_param == "max_iter" and fit["converged"] and fit["n_iter"] < cap:
                    done.append((cap, fit["n_iter"], fit))
    return rows


def _parse_params(items: list[str]) -> list[dict]:
    """``["eta=0.1,1", "random_state=0,1"]`` → every combination (values by ``parse_scalar``)."""
    grid = {}
    for item in items or []:
        key, _, values = item.partition("=")
        if not values:
            raise SystemExit(f"--param {item!r}: expected key=value[,value...]")
        grid[key] = [parse_scalar(v) for v in values.split(",")]
    return [dict(zip(grid, combo)) for combo in itertools.product(*grid.values())]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("label", help="solver label of the config (e.g. frobmetric, mdml_lv)")
    parser.add_argument("config")
    parser.add_argument("dataset", help="dataset label of the config")
    parser.add_argument("--splits", type=int, help="the first N splits (default: all)")
    parser.add_argument("--max-iters", type=int, nargs="+",
                        help="iteration caps (default: 10, 50, 100, 300 %% of the configured "
                        "max_iter); the number of passes (n_epochs) for solvers without max_iter, "
                        "of projections (max_proj) for ITML")
    parser.add_argument("--param", action="append", metavar="KEY=V1,V2",
                        help="refit at these parameter values (repeatable; all combinations)")
    parser.add_argument("--results", default="results", help="results root (default: results)")
    args = parser.parse_args(argv)
    exp, tasks = tasks_for(args.config, args.label, args.dataset, args.splits)
    runs = committed_runs(exp, args.results)
    # as configured first, then the overrides (none without --param: no second configured fit)
    variants = [{}] + [v for v in _parse_params(args.param) if v]
    rows = []
    for task in tasks:
        start = time.perf_counter()
        rows += diagnose(task, args.max_iters, variants=variants, runs=runs,
                         paper=paper_cells(exp, task))
        print(f"split {task.split}: {time.perf_counter() - start:.0f} s", flush=True)
    fits = pd.DataFrame(rows)
    out = Path(args.results) / f"{exp.name}_diagnosis" / f"{args.label}_{args.dataset}.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    fits.to_csv(out, index=False)
    keys = [c for c in fits if c.startswith("param_")] + ["cap"]
    shown = ["n_iter", "converged", "rel_gap", "rank", "error", "euclidean_error", "gain",
             "paper_gain", "runs_error", "fit_time"]
    summary = (fits.groupby(keys, sort=False, dropna=False)[[c for c in shown if c in fits]]
               .mean(numeric_only=True).round(4))
    print(summary.to_string())
    print(f"wrote {out} ({len(fits)} fits)")


if __name__ == "__main__":
    main()
