"""DML-eig's and LMNN-eig's Ying & Li (2012) Table 4 rows under the choices the paper leaves open.

The diagnosis behind the DML-eig and LMNN-eig notes of ``dml_bench/papers/ying2012.yaml`` and the
sweep range shown beside their cells in ``results/REPRODUCTION.md`` (issue #19). On the same
splits, constraints and (otherwise) preprocessing as ``configs/ying2012_table4.yaml`` (the
runner's own ``prepare_split``), the solver (μ = 1e-4; DML-eig Eq. (3) and Table 1, LMNN-eig
Eq. (16) and Table 2 with the γ that the run's 3-fold CV chose on that split, read from
``runs.csv``) is fitted under every combination of

- the stopping rule: ``gap`` (the Frank-Wolfe duality gap ≤ tol·|f_μ|) and ``objective``
  (Table 1's literal |f_μ(S_{t+1}) − f_μ(S_t)| < tol);
- the scale of X_S that μ acts against: ``none`` (Eq. (3)'s plain sum, the default) and
  ``unit_mean`` (mean pair weight 1 at S = I/d);
- the ridge δ relative to tr(X_S)/d: 1e-2 (the default) and 1e-6 ("a very small ridge");
- the normalisation: the config's (chosen per data set by the paper's Euclidean column) and the
  other of z-score / none (``swapped``); whitening by X_S makes DML-eig invariant to a linear map
  of the features, so this acts only through the ridge and the k-NN ties;
- the iteration cap: 100 and 1000 (the paper's),

and each fit's 3-NN test error, iterations, relative duality gap at the stop and rank of M are
written to ``results/ying2012_table4_diagnosis/<solver>_sensitivity.csv`` (one row per fit). The
headline variant (every default, the config's normalisation), which must reproduce the committed
``runs.csv`` error of its split (``headline_runs_error``), and the same with ``scale: unit_mean``
are also fitted on the training points perturbed by a relative 1e-13 (``error_perturbed``): a
capped iterate far from the optimum is chaotic, and this shows how much of a cell is round-off.
Outputs:

- ``<solver>_sensitivity_summary.csv``: mean error per (data set, variant);
- ``<solver>_sensitivity_protocols.csv``: per variant, the solver's cells of Table 4 it matches
  (|ours − paper| ≤ the paper's std) and its mean absolute gap, best first.

    DMLBENCH_DATA_MIRROR=../shared/datasets python benchmarks/eig_sensitivity.py \\
        [--solver dml_eig|lmnn_eig] [--dataset wine --dataset segment ...] [--n-jobs 2] \\
        [--restrict max_iter=100 --restrict ridge=1e-6 ...]

Fits are merged into the existing ``<solver>_sensitivity.csv`` (a rerun replaces the rows of the
same data set, split and variant), so a variant can be added on the large sets alone, e.g. the
one that matches most smaller rows, with ``--dataset usps --restrict ...``.

The two large sets (optdigits, USPS) are left out by default; LMNN-eig also leaves out waveform
(21 s a fit) and sweeps the normalisation only for DML-eig.
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
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits

from dml_bench.config import load_config
from dml_bench.evaluate import model_error, spectrum_counts
from dml_bench.papers import load_paper_table
from dml_bench.report import is_match
from dml_bench.runner import all_tasks, prepare_split
from dml_bench.solvers import DMLEig, LMNNEig

CONFIG = "configs/ying2012_table4.yaml"
TABLE = "ying2012/table4"
OUT = Path("results/ying2012_table4_diagnosis")
AXES = {"stopping": ("gap", "objective"), "scale": ("none", "unit_mean"),
        "ridge": (1e-2, 1e-6), "normalize": ("config", "swapped"), "max_iter": (100, 1000)}
HEADLINE = {"stopping": "gap", "scale": "none", "ridge": 1e-2, "normalize": "config",
            "max_iter": 1000}
ROUNDOFF = 1e-13
SOLVERS = {"dml_eig": DMLEig, "lmnn_eig": LMNNEig}
SKIPPED = {"dml_eig": ("optdigits_train", "usps"),
           "lmnn_eig": ("optdigits_train", "usps", "waveform")}


def variants(solver: str, restrict: dict | None = None) -> list[dict]:
    """Every combination of :data:`AXES` (LMNN-eig: the config's normalisation only) that agrees
    with ``restrict`` (axis → value)."""
    axes = dict(AXES, normalize=("config",)) if solver == "lmnn_eig" else AXES
    combos = [dict(zip(axes, values)) for values in itertools.product(*axes.values())]
    return [v for v in combos if all(v[k] == value for k, value in (restrict or {}).items())]


def _fit(X, y, X_test, y_test, constraints, variant, solver, tuned) -> dict:
    params = {k: v for k, v in variant.items() if k != "normalize"}
    model = SOLVERS[solver](mu=1e-4, **tuned, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model.fit(X, y, constraints=constraints)
        seconds = time.perf_counter() - start
    trace = model.trace_
    return {"error": 100 * model_error(model, X, y, X_test, y_test), "n_iter": model.n_iter_,
            "converged": model.converged_,
            "rel_gap": float(trace["gap"][-1] / abs(trace["objective"][-1])),
            "rank": spectrum_counts(model.components_)[0], "fit_time": seconds}


def fit_variants(task, committed: tuple[dict, float], restrict: dict) -> list[dict]:
    """The variants on one (data set, split) of the config, with the split's tuned parameters."""
    solver, rows, prepared = task.solver.name, [], {}
    tuned, committed_error = committed
    with threadpool_limits(1):
        for variant in variants(solver, restrict):
            norm = variant["normalize"]
            if norm not in prepared:
                spec = task.dataset
                if norm == "swapped":
                    other = "none" if spec.preprocessing.normalize == "zscore" else "zscore"
                    pre = dataclasses.replace(spec.preprocessing, normalize=other)
                    spec = dataclasses.replace(spec, preprocessing=pre)
                prepared[norm] = prepare_split(dataclasses.replace(task, dataset=spec))[:5]
            X, y, X_test, y_test, constraints = prepared[norm]
            row = {"dataset": task.dataset.label, "split": task.split, **variant, **tuned,
                   **_fit(X, y, X_test, y_test, constraints, variant, solver, tuned)}
            if variant == HEADLINE:
                row["headline_runs_error"] = committed_error
            if variant in (HEADLINE, dict(HEADLINE, scale="unit_mean")):
                noise = np.random.default_rng(task.split).standard_normal(X.shape)
                row["error_perturbed"] = _fit(X * (1 + ROUNDOFF * noise), y, X_test, y_test,
                                              constraints, variant, solver, tuned)["error"]
            rows.append(row)
    return rows


def committed_runs(solver: str) -> dict[str, tuple[dict, float]]:
    """Per task id of the committed Table 4 run: its tuned parameters (empty when untuned) and
    its error, which the headline variant must reproduce (``headline_runs_error``)."""
    runs = pd.read_csv(Path("results") / load_config(CONFIG).name / "runs.csv")
    runs = runs[runs["solver"] == solver]
    return {t: (json.loads(p) if isinstance(p, str) and p else {}, 100 * e)
            for t, p, e in zip(runs["task_id"], runs["tuned_params"], runs["error"])}


def protocol_ranking(summary: pd.DataFrame, solver: str) -> pd.DataFrame:
    """Per variant: how many of the solver's swept cells of Table 4 it matches, best first."""
    table = load_paper_table(TABLE)
    paper = {row: (mean, std) for row, col, mean, std in table.cells() if col == solver}
    exp = load_config(CONFIG)
    names = {d.label: d.name for d in exp.datasets}
    scored = summary.assign(
        paper=[paper[names[d]][0] for d in summary["dataset"]],
        match=[is_match(e, *paper[names[d]]) for d, e in zip(summary["dataset"], summary["error"])])
    scored["abs_gap"] = (scored["error"] - scored["paper"]).abs()
    ranking = (scored.groupby(list(AXES), sort=False)
               .agg(cells=("match", "size"), matched=("match", "sum"),
                    mean_abs_gap=("abs_gap", "mean")).round(3).reset_index())
    ranking["headline"] = [all(r[k] == v for k, v in HEADLINE.items())
                           for _, r in ranking.iterrows()]
    return ranking.sort_values(["matched", "mean_abs_gap"], ascending=[False, True])


def _number(text: str):
    """``text`` as an int or float where it is one (``1e-6`` too), else as given."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def merge_fits(path: Path, new: pd.DataFrame) -> pd.DataFrame:
    """``new`` fits written into the CSV at ``path``, replacing its rows of the same data set,
    split and variant; returns the whole table."""
    if path.is_file():
        key = ["dataset", "split", *AXES]
        old = pd.read_csv(path)
        seen = pd.MultiIndex.from_frame(new[key].astype(str))
        old = old[~pd.MultiIndex.from_frame(old[key].astype(str)).isin(seen)]
        new = pd.concat([old, new], ignore_index=True)
    new.to_csv(path, index=False)
    return new


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solver", choices=sorted(SOLVERS), default="dml_eig")
    parser.add_argument("--dataset", action="append",
                        help="data set labels (default: all but the large ones, see above)")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--restrict", action="append", default=[], metavar="AXIS=VALUE",
                        help="fit only the variants with this value on this axis (repeatable)")
    args = parser.parse_args()
    restrict = {k: _number(v) for k, v in (r.split("=", 1) for r in args.restrict)}
    if not variants(args.solver, restrict):
        parser.error(f"no variant has {restrict}; the axes are {AXES}")
    solver, exp = args.solver, load_config(CONFIG)
    labels = args.dataset or [d.label for d in exp.datasets if d.label not in SKIPPED[solver]]
    committed = committed_runs(solver)
    tasks = [t for t in all_tasks(exp) if t.solver.name == solver and t.dataset.label in labels]
    fitted = Parallel(n_jobs=args.n_jobs)(
        delayed(fit_variants)(t, committed.get(t.task_id, ({}, np.nan)), restrict) for t in tasks)
    OUT.mkdir(parents=True, exist_ok=True)
    fits = merge_fits(OUT / f"{solver}_sensitivity.csv",
                      pd.DataFrame([r for rs in fitted for r in rs]))
    head = fits.dropna(subset=["headline_runs_error"])
    same = np.isclose(head["error"], head["headline_runs_error"])
    print(f"the headline variant reproduces runs.csv on {same.sum()} of {len(head)} splits")
    summary = (fits.groupby(["dataset", *AXES], sort=False)
               .agg(error=("error", "mean"), error_std=("error", "std"),
                    error_perturbed=("error_perturbed", "mean"), n_iter=("n_iter", "mean"),
                    rel_gap=("rel_gap", "median"), rank=("rank", "mean"),
                    fit_time=("fit_time", "mean"), n=("error", "size")).round(3).reset_index())
    summary.insert(1, "solver", solver)
    summary.to_csv(OUT / f"{solver}_sensitivity_summary.csv", index=False)
    ranking = protocol_ranking(summary, solver)
    ranking.to_csv(OUT / f"{solver}_sensitivity_protocols.csv", index=False)
    print(ranking.head(10).to_string(index=False))


if __name__ == "__main__":
    main()
