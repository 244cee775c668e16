"""Reporting stage: ``runs.csv`` → summary, LaTeX tables and comparisons with the papers' numbers.

A results directory ``results/<name>/`` holds ``runs.csv`` (one row per finished task) and the
resolved ``config.yaml``. :func:`write_knn_report` turns them into

- ``summary.csv``: one row per (dataset, solver label), errors in percent;
- ``table.tex`` / ``table_time.tex``: test error (%) / fit time (s) in the papers' layout, each
  a captioned ``table`` float;
- ``comparison_<paper>_<table>.csv`` / ``.tex`` for every table named by the config's
  ``paper_table``: our numbers next to the reported ones.

:func:`status_markdown` collects every comparison under ``results/`` into the README status table.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..common.safe_write import check_name, write_text
from ..papers import PaperTable, load_paper_table
from ..run.results import RUN_COLUMNS, RunStore
from .figures import write_figures
from .tables import (FLOAT_SLACK, ReportError, compare_with_paper, comparison_caption,
                     comparison_to_latex, config_order, display_label, latex_table, mean_std,
                     paper_table_keys, read_config, splits_phrase, tabular, tex, write_output)

RUNS_FILE = "runs.csv"
STATUS_START = "<!-- status:start -->"
STATUS_END = "<!-- status:end -->"

_TEXT_COLUMNS = ("dataset", "label", "solver")
_REQUIRED = ["task_id", *_TEXT_COLUMNS, "error", "fit_time", "fit_cpu_time", "n_iter", "n_test"]
PRECISE_SUFFIX = "_precise"
"""``results/<name>_precise``: the precise companion of ``results/<name>`` (100 splits on the
small sets, cheap solvers; ``targets.yaml`` ``precise:``)."""
PRECISE_LEVEL = 0.95
"""Coverage of the t-interval of our many-split mean (:func:`t_interval`)."""
PRECISE_COLUMNS = [
    "precise_n", "precise_mean", "precise_std", "precise_ci_low", "precise_ci_high",
    "paper_in_ci", "precise_welch_p", "precise_significance", "precise_note",
]
"""Columns :func:`add_precise_columns` adds to an error comparison."""


def read_runs(results_dir: Path | str) -> pd.DataFrame:
    """Read ``runs.csv`` from a results directory.

    Parameters
    ----------
    results_dir : path-like
        ``results/<name>/``.

    Returns
    -------
    pandas.DataFrame
        One row per finished task (a half-written last line of a killed run is ignored); a task
        listed twice keeps its last row.

    Raises
    ------
    ReportError
        If the file is missing or holds no finished run, lacks a needed column, or holds an
        error outside [0, 1] (errors are fractions, not percent).
    """
    path = Path(results_dir) / RUNS_FILE
    if not path.is_file():
        raise ReportError(f"no runs to report: {path} does not exist (run the experiment first)")
    runs = RunStore(results_dir).read()
    if runs.empty:
        raise ReportError(f"no runs to report: {path} holds no finished runs")
    missing = [c for c in _REQUIRED if c not in runs.columns]
    if missing:
        raise ReportError(f"{path} lacks the column(s) {', '.join(missing)}")
    if not runs["error"].between(0, 1).all():
        raise ReportError(f"{path}: 'error' must be a fraction in [0, 1]")
    runs = runs.drop_duplicates("task_id", keep="last")
    # columns added after the file was written (older versions) read as empty
    runs = runs.reindex(columns=list(dict.fromkeys([*runs.columns, *RUN_COLUMNS])))
    return runs.astype({c: str for c in _TEXT_COLUMNS}).reset_index(drop=True)


#: per-run counts of the learned spectrum (``evaluate.spectrum_counts``; Kunapuli Table 3)
SPARSITY = ("n_nonzero_eigenvalues", "n_features_90_energy")


def summarize(runs: pd.DataFrame, config: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Aggregate runs over splits, per (dataset, solver label).

    Parameters
    ----------
    runs : pandas.DataFrame
        As returned by :func:`read_runs` (``error`` as a fraction).
    config : mapping, optional
        The experiment config; when given, rows follow its ``datasets`` then ``solvers`` order
        (row/column labels), anything else after in order of first appearance.

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset, label, solver, error_mean, error_std, error_n, fit_time_mean,
        fit_time_std, fit_cpu_time_mean, n_iter_mean, n_test_mean`` and the spectrum counts
        ``n_nonzero_eigenvalues_mean/_std``, ``n_features_90_energy_mean/_std``; errors in percent, stds with
        ddof=1 (NaN for a single split). Without ``config``, rows keep first-appearance order.
    """
    summary = (
        runs.assign(error=runs["error"] * 100)
        .groupby(["dataset", "label"], sort=False)
        .agg(
            solver=("solver", "first"),
            error_mean=("error", "mean"),
            error_std=("error", "std"),
            error_n=("error", "count"),
            fit_time_mean=("fit_time", "mean"),
            fit_time_std=("fit_time", "std"),
            fit_cpu_time_mean=("fit_cpu_time", "mean"),
            n_iter_mean=("n_iter", "mean"),
            n_test_mean=("n_test", "mean"),
            **{f"{q}_{stat}": (q, stat) for q in SPARSITY for stat in ("mean", "std")},
        )
        .reset_index()
    )
    if "accuracy" in runs and runs["accuracy"].notna().any():  # pair verification, percent
        accuracy = (runs["accuracy"] * 100).groupby([runs["dataset"], runs["label"]], sort=False)
        summary = summary.merge(accuracy.agg(accuracy_mean="mean", accuracy_std="std").reset_index(),
                                on=["dataset", "label"], how="left")
    return summary if config is None else config_order(summary, config)


# ------------------------------------------------------------------------ precise estimate


def t_interval(mean: float, std: float, n: int, level: float = PRECISE_LEVEL
               ) -> tuple[float, float]:
    """Student's t confidence interval of a mean from ``n`` splits: mean ± t·std/√n.

    ``t`` is the ``(1 + level)/2`` quantile of Student's t with ``n − 1`` degrees of freedom;
    ``std`` is the sample std (ddof = 1). (nan, nan) below two splits.
    """
    from scipy.stats import t as student_t

    if n < 2 or pd.isna(std) or pd.isna(mean):
        return float("nan"), float("nan")
    low, high = student_t.interval(level, n - 1, loc=mean, scale=std / np.sqrt(n))
    return float(low), float(high)


def dataset_points(name: str, n_samples: int | None = None) -> int:
    """Points of a registry data set, or of its ``n_samples`` subset."""
    from ..datasets import DATASETS

    n = DATASETS[name].n_samples
    return min(n, n_samples) if n_samples else n


def add_precise_columns(comparison: pd.DataFrame, table: PaperTable, config: Mapping[str, Any],
                        precise_summary: pd.DataFrame | None,
                        precise_config: Mapping[str, Any] | None) -> pd.DataFrame:
    """Our many-split estimate beside every cell of an error comparison (:data:`PRECISE_COLUMNS`).

    ``precise_summary`` / ``precise_config`` are those of the precise companion (same config,
    more splits; ``precise_summary`` None: not run yet). Per cell: its split count, mean, std,
    the :func:`t_interval` of the mean, whether the paper's mean lies in it, and Welch's t of
    the paper's (mean, std, splits) against ours
    (:func:`~dml_bench.report.tables.welch_verdict`) — the
    paper's mean is itself a 10-split average, so lying outside our narrow interval alone does
    not make it different. A cell without an estimate says why in ``precise_note``: the data set or the
    solver is not in the precise run (a large set; a tuned solver), or it has not run yet;
    a cell still short of its splits says how many it has. Time tables are returned as they are.
    """
    if comparison.empty or not (comparison["quantity"] == "error").all():
        return comparison
    precise_config = precise_config or {}
    datasets = {display_label(d): d for d in config.get("datasets") or []}
    precise_sets = {display_label(d): d for d in precise_config.get("datasets") or []}
    tuned = {display_label(s) for s in config.get("solvers") or [] if s.get("tune")}
    precise_solvers = {display_label(s) for s in precise_config.get("solvers") or []}
    default_splits = (precise_config.get("split") or {}).get("n_splits", 10)
    found = {}
    if precise_summary is not None and not precise_summary.empty:
        ours = compare_with_paper(precise_summary, table, precise_config)
        ours = ours[ours["status"] != "not run"]
        found = {(r.dataset, r.solver, r.label): r for r in ours.itertuples(index=False)}
    rows = []
    for r in comparison.itertuples(index=False):
        entry = _dataset_entry(r.dataset, datasets)
        label = entry and display_label(entry)
        hit = found.get((r.dataset, r.solver, r.label))
        if hit is None and pd.isna(r.label):  # a cell the headline did not run
            hit = next((v for (d, s, _), v in found.items() if (d, s) == (r.dataset, r.solver)),
                       None)
        if hit is not None:
            want = (precise_sets.get(label) or {}).get("n_splits") or default_splits
            low, high = t_interval(hit.ours_mean, hit.ours_std, hit.n)
            rows.append({
                "precise_n": hit.n, "precise_mean": hit.ours_mean, "precise_std": hit.ours_std,
                "precise_ci_low": low, "precise_ci_high": high,
                "paper_in_ci": (bool(low - FLOAT_SLACK <= r.paper_mean <= high + FLOAT_SLACK)
                                if not pd.isna(low) else None),
                "precise_welch_p": hit.welch_p, "precise_significance": hit.significance,
                "precise_note": f"{hit.n} of {want} splits run so far" if hit.n < want else ""})
            continue
        solver = r.label if isinstance(r.label, str) else r.solver
        if label is None or label not in precise_sets:
            size = dataset_points(entry["name"], entry.get("n_samples")) if entry else None
            why = f"large set, n = {size}" if size else "data set not in the precise run"
        elif solver in tuned and solver not in precise_solvers:
            why = "tuned solver: a grid search on every split"
        elif solver not in precise_solvers:
            why = "solver not in the precise run"
        else:
            why = "precise run not run yet"
        rows.append({"precise_n": 0, "precise_note": why})
    extra = pd.DataFrame.from_records(rows, columns=PRECISE_COLUMNS, index=comparison.index)
    return pd.concat([comparison.drop(columns=PRECISE_COLUMNS, errors="ignore"), extra], axis=1)


def _dataset_entry(row_key: str, datasets: Mapping[str, Mapping]) -> Mapping | None:
    """The config's dataset entry of a paper row key (its label, else its registry name)."""
    if row_key in datasets:
        return datasets[row_key]
    return next((d for d in datasets.values() if d["name"] == row_key), None)


def precise_of(results_dir: Path | str) -> tuple[pd.DataFrame | None, dict | None]:
    """Summary and config of ``results_dir``'s precise companion (``<dir>_precise``), or
    (None, None) when it holds no runs."""
    precise_dir = Path(results_dir).parent / (Path(results_dir).name + PRECISE_SUFFIX)
    try:
        runs, config = read_runs(precise_dir), read_config(precise_dir)
    except ReportError:
        return None, None
    return summarize(runs, config), config


# --------------------------------------------------------------------------------------- LaTeX


#: solvers whose fit learns nothing (the identity metric): their time is bookkeeping, so a time
#: table never marks it as the fastest
NO_FIT_SOLVERS = frozenset({"euclidean"})


def summary_to_latex(summary: pd.DataFrame, quantity: str = "error") -> str:
    """A booktabs table in the papers' layout: datasets × solvers, "mean (std)".

    Parameters
    ----------
    summary : pandas.DataFrame
        From :func:`summarize`; row and column order are taken from it.
    quantity : str
        ``"error"`` (percent) or ``"fit_time"`` (seconds).

    Returns
    -------
    str
        A ``tabular`` with two decimals; the lowest value of each row, as displayed, is in
        ``\\textbf{}`` (every tied cell); cells not run show ``--``. In a time table a cell
        that shows a zero time, or whose solver learns nothing (:data:`NO_FIT_SOLVERS`), is never
        the lowest.
    """
    datasets, labels = pd.unique(summary["dataset"]), pd.unique(summary["label"])
    grid = summary.set_index(["dataset", "label"])
    body = []
    for dataset in datasets:
        cells = [tuple(grid.loc[(dataset, lab), [f"{quantity}_mean", f"{quantity}_std"]])
                 if (dataset, lab) in grid.index else (np.nan, np.nan) for lab in labels]
        marked = [_may_be_best(grid, dataset, lab, m, quantity) for lab, (m, _) in
                  zip(labels, cells)]
        best = min((round(m, 2) for (m, _), ok in zip(cells, marked) if ok), default=None)
        body.append([tex(dataset)] + [
            f"\\textbf{{{mean_std(m, s)}}}" if ok and round(m, 2) == best else mean_std(m, s)
            for (m, s), ok in zip(cells, marked)
        ])
    return tabular("l" + "r" * len(labels), ["Dataset"] + [tex(lab) for lab in labels], body)


def _may_be_best(grid: pd.DataFrame, dataset: str, label: str, mean: float,
                 quantity: str) -> bool:
    """Whether a cell competes for the bold mark: it has a mean and, in a time table, shows a
    time above zero and its solver fits something."""
    if pd.isna(mean):
        return False
    if quantity != "fit_time":
        return True
    solver = grid.loc[(dataset, label)].get("solver")
    return round(mean, 2) > 0 and solver not in NO_FIT_SOLVERS


def summary_caption(summary: pd.DataFrame, quantity: str,
                    config: Mapping[str, Any] | None = None) -> str:
    """The LaTeX caption of :func:`summary_to_latex`'s table: the quantity with its unit, the
    split count and protocol, and what the bold mark means."""
    splits = splits_phrase(summary["error_n"], config)
    if quantity == "fit_time":
        no_fit = sorted(set(summary.get("solver", pd.Series(dtype=str))) & NO_FIT_SOLVERS)
        left_out = (f", and {', '.join(tex(s) for s in no_fit)} (no fit)" if no_fit else "")
        return (f"Fit time (s, wall clock), mean (std) over {splits}; the lowest of each row in "
                f"bold, leaving out zero times{left_out}; -- not run.")
    k = ((config or {}).get("evaluation") or {}).get("knn_k", 3)
    return (f"{k}-NN test error (\\%), mean (std) over {splits}; the lowest of each row in "
            "bold (ties included); -- not run.")


# ------------------------------------------------------------------------------------ files


def write_knn_report(results_dir: Path | str) -> dict[str, Path]:
    """Write the summary, LaTeX tables and paper comparisons of one k-NN results directory
    (:func:`~dml_bench.report.kind.write_report` calls it for ``evaluation: {task: knn}``).

    Parameters
    ----------
    results_dir : path-like
        ``results/<name>/`` holding ``runs.csv`` and ``config.yaml``.

    Returns
    -------
    dict of str to Path
        File name → path of every file written: ``summary.csv``, ``table.tex``,
        ``table_time.tex``, per paper table ``<paper>/<table>`` of the config
        ``comparison_<paper>_<table>.csv`` and ``.tex``, and per ``figures:`` entry
        ``figures/<name>.csv/.png/.pdf`` (:mod:`dml_bench.report.figures`).

    Raises
    ------
    ReportError
        If ``runs.csv`` or ``config.yaml`` is missing, or ``runs.csv`` is empty.
    dml_bench.common.safe_write.UnsafeOutputName
        If a figure's name in ``config.yaml`` is not a plain file name (nothing is written).

    Notes
    -----
    Every file replaces its old version by create-temporary-then-rename, never written through
    a symlink (:mod:`dml_bench.common.safe_write`).
    """
    results_dir = Path(results_dir)
    runs, config = read_runs(results_dir), read_config(results_dir)
    for spec in config.get("figures") or []:  # before anything is written
        check_name(spec.get("name") if isinstance(spec, Mapping) else None, "figure name")
    summary = summarize(runs, config)
    outputs: dict[str, str | pd.DataFrame] = {
        "summary.csv": summary,
        **{name: latex_table(summary_to_latex(summary, quantity),
                             summary_caption(summary, quantity, config))
           for name, quantity in (("table.tex", "error"), ("table_time.tex", "fit_time"))},
    }
    precise_summary, precise_config = precise_of(results_dir)
    for key in paper_table_keys(config):
        comparison = compare_with_paper(summary, load_paper_table(key), config)
        if precise_config is not None:  # the many-split estimate beside each cell
            comparison = add_precise_columns(comparison, load_paper_table(key), config,
                                             precise_summary, precise_config)
        stem = "comparison_" + key.replace("/", "_")
        outputs[f"{stem}.csv"] = comparison
        outputs[f"{stem}.tex"] = latex_table(comparison_to_latex(comparison), comparison_caption(
            comparison, load_paper_table(key), config))
    written = {name: write_output(results_dir, name, content) for name, content in outputs.items()}
    for name, paths in write_figures(results_dir, runs, config).items():
        written.update({f"figures/{p.name}": p for p in paths})
    return written


# ----------------------------------------------------------------------------------- status


def status_markdown(results_root: Path | str) -> str:
    """A Markdown table of every paper comparison found under ``results_root``.

    Parameters
    ----------
    results_root : path-like
        The ``results/`` directory; every ``*/comparison_*.csv`` in it is read.

    Returns
    -------
    str
        One line per experiment and paper table: cells compared, matched (error tables only),
        not run, and the largest gap (error: largest |ours − paper| in points; time: the ratio
        ours / paper furthest from 1), each with its cell.
    """
    files = sorted(Path(results_root).glob("*/comparison_*.csv"))
    if not files:
        return "_No paper comparisons yet._"
    lines = ["| Experiment | Paper table | Compared | Matched | Not run | Largest gap |",
             "|---|---|---:|---:|---:|---|"]
    for path in files:
        comparison = pd.read_csv(path, dtype={"label": str})
        lines.append("| " + " | ".join([path.parent.name, *_status_cells(comparison)]) + " |")
    return "\n".join(lines)


def _status_cells(comparison: pd.DataFrame) -> list[str]:
    ran = comparison[comparison["status"] != "not run"]
    is_time = bool((comparison["quantity"] == "fit_time").any())
    matched = "–" if is_time else str(int((ran["status"] == "match").sum()))
    return [", ".join(comparison["table"].unique()), str(len(ran)), matched,
            str(len(comparison) - len(ran)), _largest_gap(ran, is_time)]


def _largest_gap(ran: pd.DataFrame, is_time: bool) -> str:
    if ran.empty:
        return "–"
    gap = np.log(ran["ratio"]).abs() if is_time else ran["diff"].abs()
    worst = ran.loc[gap.idxmax()]
    value = f"×{worst['ratio']:.2f}" if is_time else f"{worst['diff']:+.2f} pts"
    return f"{value} ({worst['dataset']}/{worst['solver']})"


def update_readme_status(readme: Path | str, results_root: Path | str,
                         table: str | None = None) -> bool:
    """Regenerate the status table between the README's status markers.

    Parameters
    ----------
    readme : path-like
        A Markdown file containing ``<!-- status:start -->`` and ``<!-- status:end -->``.
    results_root : path-like
        Passed to :func:`status_markdown`.
    table : str, optional
        The Markdown to put between the markers instead (``dmlbench report --all``: the
        reproduction summary).

    Returns
    -------
    bool
        Whether the file changed (it is only written when it did).

    Raises
    ------
    ReportError
        If the markers are missing or out of order.
    """
    readme = Path(readme)
    text = readme.read_text(encoding="utf-8")
    start, end = text.find(STATUS_START), text.find(STATUS_END)
    if start < 0 or end < start:
        raise ReportError(f"{readme} needs the markers {STATUS_START} ... {STATUS_END}, in order")
    head = text[: start + len(STATUS_START)]
    body = table if table is not None else status_markdown(results_root)
    new = f"{head}\n{body}\n{text[end:]}"
    if new == text:
        return False
    write_text(readme.resolve(), new)  # the README the user named, a link's target included
    return True
