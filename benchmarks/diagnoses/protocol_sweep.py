"""A seed method's cells of a paper table under the protocol choices that the paper leaves open.

The sweeps behind the "sweep range" column and the sentence under a table in
``results/REPRODUCTION.md``, and behind the DML-eig / LMNN-eig notes of
``dml_bench/papers/ying2012.yaml``. Each entry of :data:`SWEEPS` names a config, the paper table,
one solver label of the config and the axes swept (axis → values). On the same splits,
constraints and (otherwise) preprocessing as the config (the runner's own ``prepare_split``), the
solver is built as the runner builds it (the config's params, then the parameters that the run's
tuning chose on that split, read from ``runs.csv``, then the variant's) and fitted under every
combination of the axes' values. ``normalize`` is not a solver parameter: ``config`` keeps the
config's normalisation, ``swapped`` takes the other of z-score / none, any other value replaces
it. Every other axis is passed to the solver.

- ``ying2012_table4/dml_eig``, ``ying2012_table4/lmnn_eig`` (Ying & Li 2012, Table 4; μ = 1e-4,
  LMNN-eig's γ from its 3-fold CV): the stopping rule (``gap``: the Frank-Wolfe duality gap ≤
  tol·|f_μ|; ``objective``: Table 1's literal |f_μ(S_{t+1}) − f_μ(S_t)| < tol), the scale of X_S
  that μ acts against (``none``: Eq. (3)'s plain sum; ``unit_mean``: mean pair weight 1 at
  S = I/d), the ridge δ relative to tr(X_S)/d (1e-2, 1e-6), the normalisation (DML-eig only:
  whitening by X_S makes it invariant to a linear map of the features, so this acts only through
  the ridge and the k-NN ties) and the iteration cap (100, 1000); DML-eig also under Table 1
  taken literally (its stopping rule with the plain sum, a "very small" ridge: 1e-2, 1e-6 and 1e-8
  relative, 1e-8 absolute, and either output, S_t or S_{t+1}). The headline variant and the
  same with ``scale: unit_mean`` are also fitted on the training points perturbed by a relative
  1e-13 (``error_perturbed``): a capped iterate far from the optimum is chaotic, and this shows
  how much of a cell is round-off.
- ``ying2012_table4/itml`` (Ying & Li 2012, Table 4; γ from the run's 3-fold CV): ITML's own
  stopping rule with at most 1000 sweeps over the pairs (the headline) beside the authors' cap
  of 10⁵ projections, which ends after a few sweeps on the larger sets.
- ``ying2012_table4/xing`` (Ying & Li 2012, Table 4, 100 cycles): the full metric of Eq. (1)
  (the headline, with Xing et al.'s alternating projections; beside it the exact projection
  onto the constraint set) and Xing et al.'s diagonal metric (their §2.2, by Newton–Raphson).
  Ying & Li's text says Xing's algorithm "needs the computation of the full eigen-decomposition
  of a matrix in each iteration", so
  the headline stays full.
- ``kunapuli2012_table3/mdml_hf``, ``kunapuli2012_table3/mdml_lv`` (Kunapuli & Shavlik 2012,
  Table 3; ρ from the run's 5-fold CV): the authors' published MATLAB code as described, not the
  paper's text: eigenvalues below ρ set to 0 instead of shrunk (``shrinkage``), and pairs drawn
  from the 4 nearest same- and other-class points instead of 3 (``pairs_k``, ``normalize``-like:
  it changes the constraints). The code's single shuffled pass with η/√t and its margin μ ≥ 1
  are the headline's already.
- ``kunapuli2012_fig3/mdml_hf``, ``kunapuli2012_fig3/mdml_lv``: the same two facts on Figure 3's
  six sets (ρ from the run's 10-fold CV). The figure prints no numbers, so its protocols file
  counts no matches: it lists the variants, and the report shows each one's mean per set.
- ``shen2010_table2/sdpmetric_squared_hinge``, ``shen2010_table2/sdpmetric_huber`` (Shen, Kim &
  Wang 2010, Table II; C from the run's validation split): the stopping rule (``gap``: Frank-Wolfe
  gap ≤ tol·|f|; ``objective``: relative objective change), the iteration cap (1000, 100) and the
  normalisation (the config's none, z-score). The paper states none of them. A larger cap (3000)
  and a rescaled C grid did not fit the time budget of the committed run.
- ``shen2014_table1/frobmetric`` (Shen et al. 2014, Table I; C from the run's validation split;
  the large sets MNIST, letter and Yale B skipped): the stopping rule (``gap``: relative duality
  gap ≤ tol; ``lbfgsb``: L-BFGS-B's own projected-gradient rule), the cap (1000, 100) and the
  normalisation (the config's none, z-score); beside them dlib's implementation of the method as
  described (``code``): its stop when the gradient of every dual variable not held at a bound is
  below 0.1 (``stopping: free_gradient``), at the run's C and at dlib's default C = 1.

The first value of each axis is the headline protocol (the config's), unless the entry gives
``headline``. Each fit's test error, iterations, relative duality gap at the stop and rank of M
are written to ``results/<experiment>_diagnosis/<label>_sensitivity.csv`` (one row per fit); the
headline variant must reproduce the committed ``runs.csv`` error of its split
(``headline_runs_error``). Outputs beside it:

- ``<label>_sensitivity_summary.csv``: mean error per (data set, variant);
- ``<label>_sensitivity_protocols.csv``: per variant, the label's swept cells of the table it
  matches (|ours − paper| ≤ the paper's std) and its mean absolute gap, best first.

    DMLBENCH_DATA_MIRROR=../shared/datasets python benchmarks/diagnoses/protocol_sweep.py SWEEP \\
        [--dataset wine --dataset segment ...] [--n-jobs 2] \\
        [--restrict max_iter=100 --restrict ridge=1e-6 ...]

Fits are merged into the existing ``<label>_sensitivity.csv`` (a rerun replaces the rows of the
same data set, split and variant), so a variant can be added on the large sets alone, e.g. the
one that matches most smaller rows, with ``--dataset usps --restrict ...``. The large sets of each
entry (``skip``) are left out unless named with ``--dataset``.
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

from dml_bench.experiment.config import load_config, parse_scalar
from dml_bench.evaluate import model_error, spectrum_counts
from dml_bench.papers import load_paper_table
from dml_bench.run.results import RunStore
from dml_bench.solvers import SOLVERS
from dml_bench.report.tables import is_match
from dml_bench.experiment.knn import all_tasks, prepare_split

ROUNDOFF = 1e-13
_EIG_AXES = {"stopping": ("gap", "objective"), "scale": ("none", "unit_mean"),
             "ridge": (1e-2, 1e-6), "normalize": ("config", "swapped"), "max_iter": (1000, 100)}
_SDP_AXES = {"stopping": ("gap", "objective"), "max_iter": (1000, 100),
             "normalize": ("config", "zscore")}
_AUTHORS_MDML = {"shrinkage": ("soft", "hard"), "pairs_k": (3, 4)}
_SHEN_SKIP = ("usps", "usps_pca", "mnist_test", "mnist_test_pca", "letter")
_FROB_AXES = {"stopping": ("gap", "lbfgsb"), "max_iter": (1000, 100),
              "normalize": ("config", "zscore")}

#: sweep name → config, paper table, solver label, axes (axis → values, the first the headline's
#: unless ``headline`` is given), data set labels skipped by default, and the variants (as
#: changes to the headline) also fitted on round-off-perturbed training points.
#: Table 1 of Ying & Li taken literally: its stopping rule, X_S the plain sum, a "very small"
#: ridge (§2.1: "δ > 0 is a very small ridge constant"; relative 1e-2, 1e-6, 1e-8 and an absolute
#: 1e-8) and either output (Table 1's "Output: S_t", or S_{t+1})
_TABLE1_LITERAL = tuple(
    {"stopping": "objective", "scale": "none", "ridge": ridge, "normalize": "config",
     "max_iter": 1000, "ridge_mode": mode, "output": output}
    for ridge, mode in ((1e-2, "relative"), (1e-6, "relative"), (1e-8, "relative"),
                        (1e-8, "absolute"))
    for output in ("last", "previous"))

SWEEPS = {
    "ying2012_table4/dml_eig": {
        "config": "configs/ying2012_table4.yaml", "table": "ying2012/table4", "label": "dml_eig",
        "axes": dict(_EIG_AXES, ridge_mode=("relative",), output=("last",)),
        "extra": _TABLE1_LITERAL, "skip": ("optdigits_train", "usps"),
        "perturb": ({}, {"scale": "unit_mean"})},
    "ying2012_table4/xing": {
        "config": "configs/ying2012_table4.yaml", "table": "ying2012/table4", "label": "xing",
        "axes": {"diagonal": (False, True), "projection": ("alternating",)},
        # the exact Euclidean projection onto the constraint set, for the full metric (the
        # diagonal algorithm has no projection step)
        "extra": ({"diagonal": False, "projection": "exact"},),
        "skip": ("usps",)},
    "ying2012_table4/itml": {
        "config": "configs/ying2012_table4.yaml", "table": "ying2012/table4", "label": "itml",
        # the method's rule with at most 1000 sweeps (the headline), beside the authors' cap
        # of 10⁵ projections (and no sweep cap)
        "axes": {"cap": ("1000 sweeps", "1e5 projections")},
        "presets": {"cap": {"1000 sweeps": {"max_iter": 1000, "max_proj": None},
                            "1e5 projections": {"max_iter": None, "max_proj": 100000}}},
        "skip": ("usps",)},
    "ying2012_table4/lmnn_eig": {
        "config": "configs/ying2012_table4.yaml", "table": "ying2012/table4", "label": "lmnn_eig",
        "axes": dict(_EIG_AXES, normalize=("config",)),
        # the slow sets (waveform 21 s a fit, USPS 178 s) run on request, merged into the files:
        # `--dataset waveform --dataset usps` (committed); optdigits (18 s a fit) not swept
        "skip": ("optdigits_train", "usps", "waveform"),
        "perturb": ({}, {"scale": "unit_mean"})},
    # the authors' published MDML code, as described (not copied): eigenvalues below ρ zeroed
    # (`shrinkage: hard`) and pairs from the 4 nearest same- and other-class points
    # (`pairs_k: 4`); its single pass with η/√t and μ ≥ 1 are the headline's already
    "kunapuli2012_table3/mdml_hf": {
        "config": "configs/kunapuli2012_table3.yaml", "table": "kunapuli2012/table3",
        "label": "mdml_hf", "axes": _AUTHORS_MDML, "skip": ()},
    "kunapuli2012_table3/mdml_lv": {
        "config": "configs/kunapuli2012_table3.yaml", "table": "kunapuli2012/table3",
        "label": "mdml_lv", "axes": _AUTHORS_MDML, "skip": ()},
    # the same on Figure 3's six sets (a figure: no paper numbers, so no match count)
    "kunapuli2012_fig3/mdml_hf": {
        "config": "configs/kunapuli2012_fig3.yaml", "table": None, "label": "mdml_hf",
        "axes": _AUTHORS_MDML, "skip": ()},
    "kunapuli2012_fig3/mdml_lv": {
        "config": "configs/kunapuli2012_fig3.yaml", "table": None, "label": "mdml_lv",
        "axes": _AUTHORS_MDML, "skip": ()},
    "shen2010_table2/sdpmetric_squared_hinge": {
        "config": "configs/shen2010_table2.yaml", "table": "shen2010/table2",
        "label": "sdpmetric_squared_hinge", "axes": _SDP_AXES, "skip": _SHEN_SKIP},
    "shen2010_table2/sdpmetric_huber": {
        "config": "configs/shen2010_table2.yaml", "table": "shen2010/table2",
        "label": "sdpmetric_huber", "axes": _SDP_AXES, "skip": _SHEN_SKIP},
    # dlib's implementation of the method, as described (not copied): the same dual box
    # [0, C/m] and L-BFGS, stopped when every free dual variable's gradient is below eps = 0.1
    # (`stopping: free_gradient`), at the run's C and at dlib's default C = 1
    "shen2014_table1/frobmetric": {
        "config": "configs/shen2014_table1.yaml", "table": "shen2014/table1",
        "label": "frobmetric", "axes": dict(_FROB_AXES, code=("paper",)),
        "extra": tuple({"stopping": "free_gradient", "max_iter": 1000, "normalize": "config",
                        "code": code} for code in ("dlib", "dlib, C = 1")),
        "presets": {"code": {"paper": {}, "dlib": {"tol": 0.1},
                             "dlib, C = 1": {"tol": 0.1, "C": 1.0}}},
        "skip": ("mnist", "letter", "yale_b")},
}


def axes(sweep: str) -> dict:
    return SWEEPS[sweep]["axes"]


def headline(sweep: str) -> dict:
    """The headline protocol of ``sweep``: its ``headline`` entry, else each axis' first value."""
    entry = SWEEPS[sweep]
    return dict(entry.get("headline") or {k: v[0] for k, v in entry["axes"].items()})


def variants(sweep: str, restrict: dict | None = None) -> list[dict]:
    """Every combination of the sweep's axes, then its ``extra`` variants (values outside the
    grid, each a full assignment of the axes), that agrees with ``restrict`` (axis → value)."""
    grid = axes(sweep)
    combos = [dict(zip(grid, values)) for values in itertools.product(*grid.values())]
    combos += [dict(v) for v in SWEEPS[sweep].get("extra", ()) if dict(v) not in combos]
    return [v for v in combos if all(v[k] == value for k, value in (restrict or {}).items())]


def _normalized(spec, norm):
    """The data set entry ``spec`` under the normalisation value ``norm`` of the sweep."""
    if norm == "config":
        return spec
    if norm == "swapped":
        norm = "none" if spec.preprocessing.normalize == "zscore" else "zscore"
    pre = dataclasses.replace(spec.preprocessing, normalize=norm)
    return dataclasses.replace(spec, preprocessing=pre)


#: axes that change the data or the constraints, not the solver
DATA_AXES = ("normalize", "pairs_k")


def _with_pairs_k(task, k):
    """``task`` with its constraint generator's ``k`` set to ``k`` (``pairs_k`` axis)."""
    if k is None:
        return task
    params = tuple(sorted({**dict(task.constraints.params), "k": int(k)}.items()))
    return dataclasses.replace(task, constraints=dataclasses.replace(task.constraints,
                                                                     params=params))


def build_solver(task, tuned: dict, variant: dict, presets: dict | None = None):
    """The task's solver as the runner builds it, with the variant's parameters on top; an axis
    of ``presets`` (axis → value → parameters) stands for the parameters its value names."""
    params = {}
    for axis, value in variant.items():
        if axis in (presets or {}):
            params.update(presets[axis][value])
        elif axis not in DATA_AXES:
            params[axis] = value
    return SOLVERS[task.solver.name](**{**task.solver.params, **tuned, **params})


def _fit(task, X, y, X_test, y_test, constraints, variant, tuned, presets=None) -> dict:
    model = build_solver(task, tuned, variant, presets)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model.fit(X, y, constraints=constraints)
        seconds = time.perf_counter() - start
    trace = getattr(model, "trace_", None) or {}
    rel_gap = (float(trace["gap"][-1] / abs(trace["objective"][-1]))
               if len(trace.get("gap", ())) and len(trace.get("objective", ())) else np.nan)
    return {"error": 100 * model_error(model, X, y, X_test, y_test, task.evaluation.knn_k, task.evaluation.tie_break),
            "n_iter": getattr(model, "n_iter_", None),
            "converged": getattr(model, "converged_", None), "rel_gap": rel_gap,
            "rank": spectrum_counts(model.components_)[0], "fit_time": seconds}


def fit_variants(sweep: str, task, committed: tuple[dict, float], restrict: dict) -> list[dict]:
    """The variants on one (data set, split) of the config, with the split's tuned parameters."""
    rows, prepared = [], {}
    tuned, committed_error = committed
    head = headline(sweep)
    perturbed = [dict(head, **change) for change in SWEEPS[sweep].get("perturb", ())]
    presets = SWEEPS[sweep].get("presets")
    with threadpool_limits(1):
        for variant in variants(sweep, restrict):
            norm, k = variant.get("normalize", "config"), variant.get("pairs_k")
            if (norm, k) not in prepared:
                spec = _normalized(task.dataset, norm)
                prepared[norm, k] = prepare_split(
                    dataclasses.replace(_with_pairs_k(task, k), dataset=spec))[:5]
            X, y, X_test, y_test, constraints = prepared[norm, k]
            row = {"dataset": task.dataset.label, "split": task.split, **variant, **tuned,
                   **_fit(task, X, y, X_test, y_test, constraints, variant, tuned, presets)}
            if variant == head:
                row["headline_runs_error"] = committed_error
            if variant in perturbed:
                noise = np.random.default_rng(task.split).standard_normal(X.shape)
                row["error_perturbed"] = _fit(task, X * (1 + ROUNDOFF * noise), y, X_test, y_test,
                                              constraints, variant, tuned, presets)["error"]
            rows.append(row)
    return rows


def committed_runs(sweep: str) -> dict[str, tuple[dict, float]]:
    """Per task id of the committed run of the sweep's label: its tuned parameters (empty when
    untuned) and its error (%), which the headline variant must reproduce."""
    entry = SWEEPS[sweep]
    runs = RunStore(Path("results") / load_config(entry["config"]).name).read()
    runs = runs[runs["label"] == entry["label"]]
    return {t: (json.loads(p) if isinstance(p, str) and p else {}, 100 * e)
            for t, p, e in zip(runs["task_id"], runs["tuned_params"], runs["error"])}


def protocol_ranking(summary: pd.DataFrame, sweep: str) -> pd.DataFrame:
    """Per variant: how many of the label's swept cells of the table it matches, best first;
    for a sweep of a figure (``table`` None) only the variants, their cells and the headline's
    flag, in the order of the sweep."""
    entry, grid = SWEEPS[sweep], list(axes(sweep))
    head = headline(sweep)
    if entry["table"] is None:
        ranking = summary.groupby(grid, sort=False).size().rename("cells").reset_index()
        ranking["headline"] = [all(r[k] == v for k, v in head.items())
                               for _, r in ranking.iterrows()]
        return ranking
    table = load_paper_table(entry["table"])
    paper = {row: (mean, std) for row, col, mean, std in table.cells() if col == entry["label"]}
    exp = load_config(entry["config"])
    names = {d.label: d.name for d in exp.datasets}
    row = [d if d in paper else names.get(d, d) for d in summary["dataset"]]  # label, else name
    scored = summary.assign(paper=[paper[r][0] for r in row],
                            match=[is_match(e, *paper[r]) for r, e in zip(row, summary["error"])])
    scored["abs_gap"] = (scored["error"] - scored["paper"]).abs()
    ranking = (scored.groupby(grid, sort=False)
               .agg(cells=("match", "size"), matched=("match", "sum"),
                    mean_abs_gap=("abs_gap", "mean")).round(3).reset_index())
    ranking["headline"] = [all(r[k] == v for k, v in head.items()) for _, r in ranking.iterrows()]
    return ranking.sort_values(["matched", "mean_abs_gap"], ascending=[False, True])


def merge_fits(path: Path, new: pd.DataFrame, axis_names, defaults: dict | None = None
               ) -> pd.DataFrame:
    """``new`` fits written into the CSV at ``path``, replacing its rows of the same data set,
    split and variant (values of ``axis_names``); returns the whole table. An axis that the
    CSV's rows predate gets its value in ``defaults`` (the headline's, which they were fitted
    with)."""
    if path.is_file():
        key = ["dataset", "split", *axis_names]
        old = pd.read_csv(path)
        for axis in axis_names:
            if axis not in old:
                old[axis] = (defaults or {})[axis]
        seen = pd.MultiIndex.from_frame(new[key].astype(str))
        old = old[~pd.MultiIndex.from_frame(old[key].astype(str)).isin(seen)]
        new = pd.concat([old, new], ignore_index=True)
    new.to_csv(path, index=False)
    return new


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep", choices=sorted(SWEEPS))
    parser.add_argument("--dataset", action="append",
                        help="data set labels (default: all but the sweep's skipped ones)")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--restrict", action="append", default=[], metavar="AXIS=VALUE",
                        help="fit only the variants with this value on this axis (repeatable)")
    args = parser.parse_args()
    sweep, entry = args.sweep, SWEEPS[args.sweep]
    restrict = {k: parse_scalar(v) for k, v in (r.split("=", 1) for r in args.restrict)}
    if not variants(sweep, restrict):
        parser.error(f"no variant has {restrict}; the axes are {axes(sweep)}")
    exp, label = load_config(entry["config"]), entry["label"]
    labels = args.dataset or [d.label for d in exp.datasets if d.label not in entry["skip"]]
    committed = committed_runs(sweep)
    tasks = [t for t in all_tasks(exp) if t.solver.label == label and t.dataset.label in labels]
    fitted = Parallel(n_jobs=args.n_jobs)(
        delayed(fit_variants)(sweep, t, committed.get(t.task_id, ({}, np.nan)), restrict)
        for t in tasks)
    out = Path("results") / f"{exp.name}_diagnosis"
    out.mkdir(parents=True, exist_ok=True)
    grid = list(axes(sweep))
    fits = merge_fits(out / f"{label}_sensitivity.csv",
                      pd.DataFrame([r for rs in fitted for r in rs]), grid, headline(sweep))
    head = fits.dropna(subset=["headline_runs_error"])
    same = np.isclose(head["error"], head["headline_runs_error"])
    print(f"the headline variant reproduces runs.csv on {same.sum()} of {len(head)} splits")
    if "error_perturbed" not in fits:
        fits["error_perturbed"] = np.nan
    summary = (fits.groupby(["dataset", *grid], sort=False)
               .agg(error=("error", "mean"), error_std=("error", "std"),
                    error_perturbed=("error_perturbed", "mean"), n_iter=("n_iter", "mean"),
                    rel_gap=("rel_gap", "median"), rank=("rank", "mean"),
                    fit_time=("fit_time", "mean"), n=("error", "size")).round(3).reset_index())
    if not SWEEPS[sweep].get("perturb"):
        summary = summary.drop(columns="error_perturbed")
    summary.insert(1, "solver", label)
    summary.to_csv(out / f"{label}_sensitivity_summary.csv", index=False)
    ranking = protocol_ranking(summary, sweep)
    ranking.to_csv(out / f"{label}_sensitivity_protocols.csv", index=False)
    print(ranking.head(10).to_string(index=False))


if __name__ == "__main__":
    main()
