"""Benchmark every algorithm dml-bench shares with metric-learn 0.7.0, side by side.

The shared algorithms: LMNN, ITML, MMC, NCA, RCA, SDML, LSML, SCML, LFDA, MLKR and Covariance.

Measures per (dataset, method, implementation, split) the fit's wall and CPU seconds (in the
process that fits), its iterations and convergence, and the 3-NN test error in the learned space.
Both implementations see the same stratified 70/30 splits (seed ``derive_seed(0, dataset, i)``),
z-scored on the training part, with one BLAS thread and each library's default parameters: ours
(MMC is our ``xing``) through the runner (:func:`dml_bench.experiment.knn.prepare_split`, whose
k = 3 target/impostor constraints they consume, and
:func:`~dml_bench.experiment.knn.fit_task_solver`);
metric-learn's supervised classes (``LMNN``, ``ITML_Supervised``, ``MMC_Supervised``, ``NCA``,
``RCA_Supervised``, ``SDML_Supervised``, ``LSML_Supervised``, ``SCML_Supervised``, ``LFDA``,
``MLKR``, ``Covariance``; ``random_state`` = the split's seed where the class takes one) draw
their own constraints from the labels. ``VARIANTS`` add rows of our solver with another stopping
rule or metric-learn's iteration budget (the matched-budget rows), compared with the same
metric-learn fits.
The error of both is the 3-NN error (:func:`dml_bench.evaluate.knn_predict`) on the transformed
points, computed here; McNemar's exact test (``bench_float32.mcnemar_p``) compares the two on the
test points of all splits pooled, so "equal error" is a statement with a p-value.

metric-learn needs an older scikit-learn, so it runs in its own virtual environment (``PINS``: the
scikit-learn of its release, 1.3, on which its SDML still finds ``graphical_lasso``'s ``cov_init``,
removed in 1.4 and needed by every ``SDML`` fit; built
on first use at ``--venv``, default ``$DMLBENCH_METRIC_LEARN_VENV`` or
``~/.cache/dml-bench/metric-learn-venv``) by ``metric_learn_worker.py``, which gets the splits in
a temporary .npz and returns the transformed points (.npz) and timings (.json). Where that
environment cannot be built, only our side is written. Output: ``metric_learn.csv`` (one row per
fit) and ``metric_learn.md`` (means per dataset and method) in ``--out``.

    python benchmarks/timing/bench_metric_learn.py [--splits 3] [--quick] [--no-metric-learn] \\
        [--out DIR]
        [--methods METHOD ...]   # refit only these, keeping the other rows of metric_learn.csv
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from dml_bench import __version__
from dml_bench.experiment.sections import ConstraintSpec, DatasetEntry, EvaluationSpec, SolverEntry, SplitSpec
from dml_bench.constraints import Constraints
from bench_float32 import mcnemar_p  # benchmarks/timing/, beside this script
from repeat_timing import timed  # the same timing rule on both sides
from dml_bench.evaluate import knn_predict
from dml_bench.preprocess import Preprocessing
from dml_bench.solvers import SOLVERS
from dml_bench.experiment.knn import Task, prepare_split

#: method → (our solver, metric-learn class)
METHODS = {"LMNN": ("lmnn", "LMNN"), "ITML": ("itml", "ITML_Supervised"),
           "MMC": ("xing", "MMC_Supervised"), "NCA": ("nca", "NCA"),
           "RCA": ("rca", "RCA_Supervised"), "SDML": ("sdml", "SDML_Supervised"),
           "LSML": ("lsml", "LSML_Supervised"), "SCML": ("scml", "SCML_Supervised"),
           "LFDA": ("lfda", "LFDA"), "MLKR": ("mlkr", "MLKR"),
           "Covariance": ("covariance", "Covariance")}
#: our solver with another stopping rule, compared with the metric-learn fits of a method: ITML
#: with metric-learn's own rule (``ITML_Supervised``: ``convergence_threshold=1e-3``,
#: ``max_iter=1000`` sweeps) instead of our default's tol = 0.01 (the authors' threshold), and
#: with the authors' cap of 10⁵ projections (14 sweeps over digits' 7 572 pairs), the default
#: of the paper configs
VARIANTS = {"ITML, metric-learn's stopping rule": (
    "ITML", {"tol": 1e-3, "max_iter": 1000, "max_proj": None}),
    "ITML, the authors' cap of 10⁵ projections": (
        "ITML", {"max_proj": 100_000, "max_iter": None}),
    # matched iteration budgets where the two count the same steps and their caps differ (LMNN,
    # MMC and SCML have the same caps at the defaults: 1000 steps, 100 cycles, 10⁴ SGD steps)
    "NCA, metric-learn's cap of 100 L-BFGS iterations": ("NCA", {"max_iter": 100}),
    "MLKR, metric-learn's cap of 1000 L-BFGS iterations": ("MLKR", {"max_iter": 1000}),
    "LSML, metric-learn's cap of 1000 steps and tol": ("LSML", {"max_iter": 1000, "tol": 1e-3})}
#: our solver fitted on the very problem a metric-learn fit solved (its pairs and bounds, returned
#: by the worker) with metric-learn's constants and stopping rule: the two implementations of one
#: algorithm on one problem, so the time ratio compares the implementations (the rows above
#: compare the libraries' defaults, which pose different problems: our k-NN pairs outnumber
#: ``ITML_Supervised``'s 20·c² random ones 30×)
SAME_PROBLEM = {"ITML, metric-learn's pairs, bounds and stopping rule": (
    "ITML", {"gamma": 1.0, "tol": 1e-3, "max_iter": 1000, "max_proj": None}),
    # LSML_Supervised's quadruplets and cap; its weights 1/m with a LogDet weight of 1 are our
    # weights 1 with regularization = m (the same minimiser)
    "LSML, metric-learn's quadruplets, weights and cap": (
        "LSML", {"tol": 1e-3, "max_iter": 1000}),
    # MMC_Supervised's pairs (its 20·c² random ones), cap of 100 cycles and tol = 1e-6; the
    # alternating projections are its algorithm and our default
    "MMC, metric-learn's pairs, cap and tol": (
        "MMC", {"projection": "alternating", "max_iter": 100, "tol": 1e-6})}
DATASETS = ("wine", "breast_cancer", "digits", "waveform")  # waveform: 5,000 points
PINS = ("metric-learn==0.7.0", "scikit-learn==1.3.2", "numpy==1.26.4", "scipy==1.11.4")
VENV_ENV = "DMLBENCH_METRIC_LEARN_VENV"
DEFAULT_VENV = Path.home() / ".cache" / "dml-bench" / "metric-learn-venv"
WORKER = Path(__file__).with_name("metric_learn_worker.py")
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
COLUMNS = ["dataset", "method", "implementation", "estimator", "split", "seed", "n_train",
           "n_test", "n_features", "fit_time", "fit_cpu_time", "repeats", "error", "n_iter",
           "converged",
           "version", "failure", "correct"]


class Unavailable(Exception):
    """metric-learn cannot run here; the message is the one-line reason."""


def metric_learn_python(venv: Path) -> Path:
    """The python of ``venv`` with ``PINS`` installed, creating or rebuilding the venv if needed."""
    python, stamp = venv / "bin" / "python", venv / "pins.txt"
    if python.exists() and stamp.exists() and stamp.read_text().split() == list(PINS):
        return python
    for cmd in ([sys.executable, "-m", "venv", "--clear", str(venv)],
                [str(python), "-m", "pip", "install", "--quiet", *PINS]):
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise Unavailable(f"{' '.join(cmd[1:3])}: {exc}") from exc
        if done.returncode:
            lines = (done.stderr + done.stdout).strip().splitlines() or ["no output"]
            raise Unavailable(f"{' '.join(cmd[1:3])} exited {done.returncode}: {lines[-1]}")
    stamp.write_text("\n".join(PINS))
    return python


def task(dataset: str, split: int, solver: str, params: dict | None = None) -> Task:
    """The runner's task of our ``solver`` on one split: zscore, knn_triplets k = 3, 3-NN."""
    return Task("bench_metric_learn", DatasetEntry(dataset, dataset, Preprocessing("zscore")),
                split, SolverEntry(solver, solver, params or {}), SplitSpec(train_fraction=0.7),
                ConstraintSpec("knn_triplets", (("k", 3),)), EvaluationSpec(knn_k=3))


def our_solvers(methods) -> dict[str, tuple[str, dict]]:
    """``method → (our solver, its parameters)`` for the methods and variants in ``methods``
    (not the :data:`SAME_PROBLEM` ones, which need metric-learn's problem)."""
    ours = {method: (solver, {}) for method, (solver, _) in METHODS.items()}
    ours.update({variant: (METHODS[base][0], params)
                 for variant, (base, params) in VARIANTS.items()})
    return {method: ours[method] for method in methods if method in ours}


def base_method(method: str) -> str:
    """The method whose metric-learn fits a variant is compared with (a method: itself)."""
    variants = {**VARIANTS, **SAME_PROBLEM}
    return variants[method][0] if method in variants else method


def our_rows(dataset: str, split: int, methods=(*METHODS, *VARIANTS)) -> list[dict]:
    """One row per method (and variant) for our solvers on the split."""
    rows = []
    for method, (solver, params) in our_solvers(methods).items():
        t = task(dataset, split, solver, params)
        part = prepare_split(t)
        rows.append(our_fit(t, method, part, part[4]))
    return rows


def same_problem_rows(dataset: str, parts: dict, problems: dict, methods) -> list[dict]:
    """One row per :data:`SAME_PROBLEM` method in ``methods`` and split with metric-learn's
    problem (``problems[class, split]``: ``(pairs, n_similar, bounds)`` of ``ITML_Supervised``
    and ``MMC_Supervised`` (bounds None),
    the (m, 4) quadruplets of ``LSML_Supervised``): our solver on that problem with the variant's
    parameters, on the split's prepared data ``parts[split]``."""
    rows = []
    for method in (m for m in methods if m in SAME_PROBLEM):
        base, params = SAME_PROBLEM[method]
        for (cls, split), problem in problems.items():
            if cls != METHODS[base][1]:
                continue
            if base == "LSML":
                quads = problem
                t = task(dataset, split, "lsml", {**params, "regularization": float(len(quads))})
                rows.append(our_fit(t, method, parts[split], Constraints(), quadruplets=quads))
                continue
            pairs, n_similar, bounds = problem
            bounds = {} if bounds is None else {"bounds": tuple(bounds)}
            t = task(dataset, split, METHODS[base][0], {**params, **bounds})
            constraints = Constraints(pairs[:n_similar], pairs[n_similar:],
                                      np.zeros((0, 3), dtype=int))
            rows.append(our_fit(t, method, parts[split], constraints))
    return rows


def our_fit(t: Task, method: str, part: tuple, constraints: Constraints,
            quadruplets=None) -> dict:
    """Our row of ``method``: task ``t`` fitted on the prepared split ``part`` (as
    :func:`~dml_bench.experiment.knn.prepare_split` returns it) with ``constraints`` (and, for
    LSML, explicit ``quadruplets`` of rows of the training part)."""
    X_train, y_train, X_test, y_test, *_, seed = part
    model = SOLVERS[t.solver.name](**t.solver.params)  # as the runner's fit_task_solver
    extra = {} if quadruplets is None else {"quadruplets": quadruplets}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence is in the row
        wall, cpu, repeats = timed(lambda: model.fit(
            X_train, None if quadruplets is not None else y_train, constraints=constraints,
            **extra))
    correct = knn_predict(model.transform(X_train), y_train, model.transform(X_test)) == y_test
    return {"dataset": t.dataset.name, "method": method, "implementation": "dml_bench",
            "estimator": t.solver.name, "split": t.split, "seed": seed, "n_train": len(y_train),
            "n_test": len(y_test), "n_features": X_train.shape[1], "fit_time": wall,
            "fit_cpu_time": cpu, "repeats": repeats, "error": 1 - correct.mean(),
            "correct": _bits(correct),
            "n_iter": getattr(model, "n_iter_", None),
            "converged": getattr(model, "converged_", None), "version": __version__}


def metric_learn_rows(python: Path, dataset: str, n_splits: int, methods=tuple(METHODS)
                      ) -> tuple[list[dict], dict, dict]:
    """One row per method (of ``methods``) and split for metric-learn, fitted by the worker in
    ``python``; the prepared splits; and per (class, split) the problem its ITML, MMC or LSML solved
    (for :func:`same_problem_rows`)."""
    # the split, its preprocessing and constraints do not depend on the task's solver
    parts = {split: prepare_split(task(dataset, split, "euclidean")) for split in range(n_splits)}
    with tempfile.TemporaryDirectory() as tmp:
        job, out = Path(tmp) / "job", Path(tmp) / "out"
        np.savez(f"{job}.npz", **{f"{key}_{split}": array for split, part in parts.items()
                                  for key, array in zip(("X_train", "y_train", "X_test", "y_test"),
                                                        part[:4])})
        Path(f"{job}.json").write_text(json.dumps({
            "classes": [METHODS[method][1] for method in methods],
            "seeds": {str(split): part[-1] for split, part in parts.items()}}))
        done = subprocess.run([str(python), str(WORKER), str(job), str(out)], capture_output=True,
                              text=True, env={**os.environ, **ONE_THREAD})
        if done.returncode:
            lines = done.stderr.strip().splitlines() or ["no output"]
            print(f"metric-learn on {dataset} failed: {lines[-1]}", flush=True)
            return [], parts, {}
        result = json.loads(Path(f"{out}.json").read_text())
        points = dict(np.load(f"{out}.npz"))
    method_of = {cls: method for method, (_, cls) in METHODS.items()}
    rows, problems = [], {}
    for fit in result["fits"]:
        cls, split = fit["class"], fit["split"]
        if "failed" in fit:
            print(f"metric-learn {cls} on {dataset} split {split} failed: {fit['failed']}")
        X_train, y_train, X_test, y_test, *_, seed = parts[split]
        correct = None if "failed" in fit else knn_predict(
            points[f"{cls}_{split}_train"], y_train, points[f"{cls}_{split}_test"]) == y_test
        rows.append({"dataset": dataset, "method": method_of[cls],
                     "implementation": "metric-learn", "estimator": cls, "split": split,
                     "seed": seed, "n_train": len(y_train), "n_test": len(y_test),
                     "n_features": X_train.shape[1], "fit_time": fit.get("fit_time"),
                     "error": np.nan if correct is None else 1 - correct.mean(),
                     "correct": None if correct is None else _bits(correct),
                     "fit_cpu_time": fit.get("fit_cpu_time"), "repeats": fit.get("repeats"),
                     "n_iter": fit.get("n_iter"), "converged": fit.get("converged"),
                     "version": result["version"], "failure": fit.get("failed")})
        if f"{cls}_{split}_pairs" in points:  # ITML_Supervised (with its bounds), MMC_Supervised
            problems[cls, split] = (points[f"{cls}_{split}_pairs"], fit["n_similar"],
                                    fit.get("bounds"))
        if f"{cls}_{split}_quadruplets" in points:
            problems[cls, split] = points[f"{cls}_{split}_quadruplets"]
    return rows, parts, problems


def _bits(correct: np.ndarray) -> str:
    """Per test point, 1 if classified correctly: the ``correct`` column (for McNemar's test)."""
    return "".join("1" if c else "0" for c in correct)


def paired_p(runs: pd.DataFrame, dataset: str, method: str) -> float:
    """McNemar's exact p-value of ours against metric-learn on the test points of every split
    both classified (the errors are equal unless p is small), nan without such a split."""
    ours = (runs["implementation"] == "dml_bench") & (runs["method"] == method)
    theirs = (runs["implementation"] == "metric-learn") & (runs["method"] == base_method(method))
    fits = runs[(runs["dataset"] == dataset) & (ours | theirs)].dropna(
        subset=["correct"]).pivot(index="split", columns="implementation", values="correct")
    fits = fits.dropna()
    if fits.empty or len(fits.columns) < 2:
        return np.nan
    ours, theirs = ("".join(fits[impl]) for impl in ("dml_bench", "metric-learn"))
    return mcnemar_p(np.array(list(ours)) == "1", np.array(list(theirs)) == "1")


def verdict_markdown(runs: pd.DataFrame) -> str:
    """Per data set and algorithm both libraries fitted: the one comparison of the two
    implementations, with the time ratio and McNemar's p of the errors.

    Where the libraries' defaults pose different problems and the benchmark fits ours on
    metric-learn's own (:data:`SAME_PROBLEM`: ITML, MMC, LSML), that row is the comparison, and
    the rows at the defaults stay in the table below; otherwise (LMNN, NCA, MLKR, LFDA and
    Covariance learn from the labels alone; RCA, SCML and SDML draw their constraints in each
    library's own way) the rows at the defaults are.
    """
    mean = runs.groupby(["dataset", "method", "implementation"])[["fit_time", "error"]].mean()
    same = {base: name for name, (base, _) in SAME_PROBLEM.items()}
    lines = ["| dataset | algorithm | compared | time ratio (metric-learn / ours) | ours error (%) "
             "| metric-learn error (%) | McNemar p | faster | error equal or lower |",
             "|---|---|---|---:|---:|---:|---:|---|---|"]
    for dataset in runs["dataset"].drop_duplicates():
        for method in METHODS:
            theirs = mean.reindex([(dataset, method, "metric-learn")]).iloc[0]
            if np.isnan(theirs.error):
                continue  # metric-learn failed or did not run: nothing to compare
            row = same.get(method, method)
            if (dataset, row, "dml_bench") not in mean.index:
                row = method  # its same-problem row needs metric-learn's problem: not run
            ours = mean.reindex([(dataset, row, "dml_bench")]).iloc[0]
            p = paired_p(runs, dataset, row)
            ratio = theirs.fit_time / ours.fit_time
            equal = "yes" if (p >= 0.05 or ours.error < theirs.error) else "**no**"
            compared = "the same problem" if row != method else "each library's defaults"
            lines.append(f"| {dataset} | {method} | {compared} | {ratio:.2f} | "
                         f"{100 * ours.error:.2f} | {100 * theirs.error:.2f} | {p:.2g} | "
                         f"{'yes' if ratio > 1 else '**no**'} | {equal} |")
    return "\n".join(lines) + "\n"


def summary_markdown(runs: pd.DataFrame) -> str:
    """Mean fit seconds and 3-NN error (%) per dataset and method, ours vs metric-learn, and
    McNemar's p-value of the two errors over the pooled test points of the splits."""
    keys = ["dataset", "method"]
    mean = runs.groupby([*keys, "implementation"])[["fit_time", "error"]].mean()
    splits = runs.groupby(keys)["split"].nunique()
    lines = ["| dataset | method | splits | ours fit (s) | metric-learn fit (s) | "
             "time ratio (metric-learn / ours) | ours error (%) | metric-learn error (%) | "
             "McNemar p |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for dataset, method in runs[keys].drop_duplicates().itertuples(index=False):
        ours, theirs = (mean.reindex([(dataset, name, impl)]).iloc[0] for name, impl in (
            (method, "dml_bench"), (base_method(method), "metric-learn")))
        cells = [f"{ours.fit_time:.3f}", f"{theirs.fit_time:.3f}",
                 f"{theirs.fit_time / ours.fit_time:.1f}", f"{100 * ours.error:.2f}",
                 f"{100 * theirs.error:.2f}", f"{paired_p(runs, dataset, method):.2g}"]
        cells = [cell.replace("nan", "—") for cell in cells]
        lines.append(f"| {dataset} | {method} | {splits[dataset, method]} | "
                     + " | ".join(cells) + " |")
    failed = runs.dropna(subset=["failure"]).groupby(["dataset", "estimator", "failure"]).size()
    lines += ["", *(f"- {estimator} failed on {dataset} ({n} split(s)): {failure}"
                    for (dataset, estimator, failure), n in failed.items())] if len(failed) else []
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", type=int, default=3)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--quick", action="store_true", help="wine only, one split")
    ap.add_argument("--methods", nargs="+", choices=[*METHODS, *VARIANTS, *SAME_PROBLEM],
                    help="fit only these (metric-learn: the methods among them) and replace "
                         "their rows in --out's metric_learn.csv, keeping the others")
    ap.add_argument("--no-metric-learn", action="store_true", help="our side only, no venv")
    ap.add_argument("--venv", type=Path, default=Path(os.environ.get(VENV_ENV, DEFAULT_VENV)))
    ap.add_argument("--out", type=Path, help="default results/bench (results/bench_quick)")
    args = ap.parse_args(argv)
    datasets, n_splits = (["wine"], 1) if args.quick else (args.datasets, args.splits)
    out = args.out or Path(__file__).resolve().parents[2] / "results" / (
        "bench_quick" if args.quick else "bench")
    python = None
    if not args.no_metric_learn:
        try:
            python = metric_learn_python(args.venv)
        except Unavailable as exc:
            print(f"metric-learn skipped: cannot build {args.venv}: {exc}", flush=True)
    methods = args.methods or [*METHODS, *VARIANTS, *SAME_PROBLEM]
    theirs = list(dict.fromkeys(base_method(m) for m in methods if m not in VARIANTS))
    if not python and any(m in SAME_PROBLEM for m in methods):
        print("skipped (they need metric-learn's problems): "
              + ", ".join(m for m in methods if m in SAME_PROBLEM), flush=True)
    rows = []
    with threadpool_limits(1):
        for dataset in datasets:
            for split in range(n_splits):
                rows += our_rows(dataset, split, methods)
            if python and theirs:
                ml_rows, parts, problems = metric_learn_rows(python, dataset, n_splits, theirs)
                rows += ml_rows + same_problem_rows(dataset, parts, problems, methods)
            print(f"{dataset}: {sum(r['dataset'] == dataset for r in rows)} fits", flush=True)
    runs = pd.DataFrame(rows, columns=COLUMNS)
    if args.methods and (out / "metric_learn.csv").is_file():
        kept = pd.read_csv(out / "metric_learn.csv", dtype={"correct": str})
        ours = [m for m in methods if python or m not in SAME_PROBLEM]
        refitted = kept["dataset"].isin(datasets) & (
            kept["method"].isin(ours) & (kept["implementation"] == "dml_bench")
            | kept["method"].isin(theirs if python else []))
        runs = pd.concat([kept[~refitted], runs], ignore_index=True)[COLUMNS]
    out.mkdir(parents=True, exist_ok=True)
    runs.to_csv(out / "metric_learn.csv", index=False)
    text = ("## The two implementations, per data set and algorithm\n\n" + verdict_markdown(runs)
            + "\n## Every row: each library's defaults, matched budgets and the same problems\n\n"
            + summary_markdown(runs))
    (out / "metric_learn.md").write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
