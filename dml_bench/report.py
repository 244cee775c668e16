"""Reporting stage: ``runs.csv`` → summary, LaTeX tables and comparisons with the papers' numbers.

A results directory ``results/<name>/`` holds ``runs.csv`` (one row per finished task) and the
resolved ``config.yaml``. :func:`write_report` turns them into

- ``summary.csv``: one row per (dataset, solver label), errors in percent;
- ``table.tex`` / ``table_time.tex``: test error / fit time in the papers' layout;
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
import yaml

from .papers import PaperTable, load_paper_table
from .figures import write_figures
from .errors import DMLBenchError
from .results import RUN_COLUMNS, RunStore

RUNS_FILE = "runs.csv"
CONFIG_FILE = "config.yaml"
STATUS_START = "<!-- status:start -->"
STATUS_END = "<!-- status:end -->"
NO_STD_MATCH = 0.5
"""Largest |ours − paper| (percentage points) counted as a match where the paper gives no std."""
FLOAT_SLACK = 1e-9
"""Slack on inclusive comparisons, so a difference exactly at a boundary is not lost to rounding."""

_TEXT_COLUMNS = ("dataset", "label", "solver")
_REQUIRED = ["task_id", *_TEXT_COLUMNS, "error", "fit_time", "fit_cpu_time", "n_iter", "n_test"]
_MATCH_MARK = {True: "$\\checkmark$", False: "$\\times$"}
COMPARISON_COLUMNS = [
    "table", "quantity", "dataset", "solver", "label", "paper_mean", "paper_std",
    "ours_mean", "ours_std", "n", "diff", "match", "ratio", "status", "welch_p", "significance",
    "note",
]
SIGNIFICANCE_LEVEL = 0.05
"""Two-sided level of the Welch test of ours against the paper (:func:`welch_verdict`)."""
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


class ReportError(DMLBenchError, RuntimeError):
    """A results directory cannot be reported on (missing or empty ``runs.csv``, no markers...)."""


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


def read_config(results_dir: Path | str) -> dict[str, Any]:
    """Read the resolved ``config.yaml`` of a results directory.

    Raises
    ------
    ReportError
        If the file is missing.
    """
    path = Path(results_dir) / CONFIG_FILE
    if not path.is_file():
        raise ReportError(f"no experiment config: {path} does not exist")
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


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
    return summary if config is None else _config_order(summary, config)


def _display_label(entry: Mapping[str, Any]) -> str:
    return str(entry.get("label") or entry["name"])


def _config_order(summary: pd.DataFrame, config: Mapping[str, Any]) -> pd.DataFrame:
    order = {}
    for column, section in (("dataset", "datasets"), ("label", "solvers")):
        listed = [_display_label(e) for e in config.get(section) or []]
        order[column] = {v: i for i, v in enumerate(dict.fromkeys(listed + list(summary[column])))}
    return summary.sort_values(
        ["dataset", "label"], key=lambda s: s.map(order[s.name]), kind="stable"
    ).reset_index(drop=True)


def is_match(ours: float, paper_mean: float, paper_std: float | None) -> bool:
    """Whether our mean reproduces a reported error.

    Parameters
    ----------
    ours, paper_mean : float
        Test errors in percent.
    paper_std : float or None
        The reported split-to-split std; None where the paper gives none.

    Returns
    -------
    bool
        ``|ours − paper_mean| <= paper_std``, or ``<= NO_STD_MATCH`` (0.5 points) without a std;
        the boundary counts as a match.
    """
    allowed = NO_STD_MATCH if paper_std is None else paper_std
    return bool(abs(ours - paper_mean) <= allowed + FLOAT_SLACK)


def welch_verdict(ours_mean: float, ours_std: float, ours_n: int, paper_mean: float,
                  paper_std: float | None, paper_n: int | None) -> tuple[float | None, str]:
    """Whether our mean error differs significantly from the paper's (Welch's unequal-variance t).

    The match rule (|ours − paper| ≤ the paper's std) reads a 2-point gap the same whether ours is
    better or broken; this says which side ours is on and whether the gap is larger than the two
    split-to-split spreads explain, by ``scipy.stats.ttest_ind_from_stats`` on both means, stds
    (sample stds, ddof = 1) and split counts.

    Parameters
    ----------
    ours_mean, ours_std : float
    ours_n : int
        Our number of splits.
    paper_mean : float
    paper_std : float or None
        None where the paper prints no std (a single run): not testable.
    paper_n : int or None
        The paper's number of splits (:attr:`PaperTable.n_splits`); None: not testable.

    Returns
    -------
    (p, verdict)
        The two-sided p-value (None when not testable) and ``"ours lower, p = …"`` /
        ``"ours higher, p = …"`` at :data:`SIGNIFICANCE_LEVEL`, ``"no significant difference
        (p = …)"``, or ``"not testable (…)"``.

    References
    ----------
    B. L. Welch. The generalization of "Student's" problem when several different population
    variances are involved. Biometrika 34(1/2):28–35, 1947.
    """
    from scipy.stats import ttest_ind_from_stats

    if paper_std is None or not paper_n or paper_n < 2:
        return None, "not testable (the paper gives no std or split count)"
    if ours_n < 2 or pd.isna(ours_std):
        return None, "not testable (one split of ours)"
    p = float(ttest_ind_from_stats(ours_mean, ours_std, ours_n, paper_mean, paper_std, paper_n,
                                   equal_var=False).pvalue)
    if np.isnan(p):  # both stds zero
        return None, "not testable (no spread on either side)"
    if p < SIGNIFICANCE_LEVEL:
        return p, f"ours {'lower' if ours_mean < paper_mean else 'higher'}, p = {p:.2g}"
    return p, f"no significant difference (p = {p:.2g})"


def compare_with_paper(
    summary: pd.DataFrame, table: PaperTable, config: Mapping[str, Any] | None = None
) -> pd.DataFrame:
    """Put our summary next to a reported table, cell by cell.

    A summary row is matched to paper row/column keys (registry names): a dataset label or solver
    label that is itself a key of the paper table is used as is; otherwise the dataset's registry
    name (from ``config``) and the solver's registry name (``solver`` column) are used.

    Parameters
    ----------
    summary : pandas.DataFrame
        From :func:`summarize`.
    table : PaperTable
        The reported numbers.
    config : mapping, optional
        The experiment config, to map dataset labels back to registry names.

    Returns
    -------
    pandas.DataFrame
        One row per reported cell, in the paper's order (one per matching label if several of our
        labels map to the same cell), columns :data:`COMPARISON_COLUMNS`. ``diff`` is
        ours − paper; for ``quantity == "error"`` ``match`` follows :func:`is_match` and
        ``ratio`` is empty, for time tables ``match`` is empty and ``ratio`` is ours / paper.
        ``status`` is ``match`` / ``mismatch`` (error), ``compared`` (time) or ``not run``;
        for errors ``welch_p`` and ``significance`` are :func:`welch_verdict`'s.
        Cells we ran that the paper lacks are left out, and so are paper rows of datasets that
        are not in the experiment (``config``'s datasets, else the summary's).
    """
    keyed = summary.assign(**_paper_keys(summary, table, config))
    in_experiment = set(keyed["row_key"]) | {d["name"] for d in (config or {}).get("datasets") or []}
    records = []
    for row, col, mean, std in table.cells():
        if row not in in_experiment:
            continue
        hits = keyed[(keyed["row_key"] == row) & (keyed["col_key"] == col)]
        base = {"table": table.key, "quantity": table.quantity, "dataset": row, "solver": col,
                "paper_mean": mean, "paper_std": std, "note": table.note_for(row, col)}
        if hits.empty:
            records.append({**base, "n": 0, "status": "not run"})
        records += [{**base, **_ours(hit, table, mean, std)} for _, hit in hits.iterrows()]
    return pd.DataFrame.from_records(records, columns=COMPARISON_COLUMNS)


def _paper_keys(
    summary: pd.DataFrame, table: PaperTable, config: Mapping[str, Any] | None
) -> dict[str, list[str]]:
    names = {_display_label(d): d["name"] for d in (config or {}).get("datasets") or []}
    return {
        "row_key": [d if d in table.row_names else names.get(d, d) for d in summary["dataset"]],
        "col_key": [lab if lab in table.column_names else s
                    for lab, s in zip(summary["label"], summary["solver"])],
    }


def _ours(hit: pd.Series, table: PaperTable, paper_mean: float, paper_std: float | None) -> dict:
    quantity = table.quantity
    ours, ours_std, n = hit[f"{quantity}_mean"], hit[f"{quantity}_std"], int(hit["error_n"])
    fields = {"label": hit["label"], "ours_mean": ours, "ours_std": ours_std, "n": n,
              "diff": ours - paper_mean}
    if quantity == "error":
        match = is_match(ours, paper_mean, paper_std)
        p, verdict = welch_verdict(ours, ours_std, n, paper_mean, paper_std, table.n_splits)
        return {**fields, "match": match, "status": "match" if match else "mismatch",
                "welch_p": p, "significance": verdict}
    return {**fields, "ratio": ours / paper_mean, "status": "compared"}


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
    from .datasets import DATASETS

    n = DATASETS[name].n_samples
    return min(n, n_samples) if n_samples else n


def add_precise_columns(comparison: pd.DataFrame, table: PaperTable, config: Mapping[str, Any],
                        precise_summary: pd.DataFrame | None,
                        precise_config: Mapping[str, Any] | None) -> pd.DataFrame:
    """Our many-split estimate beside every cell of an error comparison (:data:`PRECISE_COLUMNS`).

    ``precise_summary`` / ``precise_config`` are those of the precise companion (same config,
    more splits; ``precise_summary`` None: not run yet). Per cell: its split count, mean, std,
    the :func:`t_interval` of the mean, whether the paper's mean lies in it, and Welch's t of
    the paper's (mean, std, splits) against ours (:func:`welch_verdict`) — the paper's mean is
    itself a 10-split average, so lying outside our narrow interval alone does not make it
    different. A cell without an estimate says why in ``precise_note``: the data set or the
    solver is not in the precise run (a large set; a tuned solver), or it has not run yet;
    a cell still short of its splits says how many it has. Time tables are returned as they are.
    """
    if comparison.empty or not (comparison["quantity"] == "error").all():
        return comparison
    precise_config = precise_config or {}
    datasets = {_display_label(d): d for d in config.get("datasets") or []}
    precise_sets = {_display_label(d): d for d in precise_config.get("datasets") or []}
    tuned = {_display_label(s) for s in config.get("solvers") or [] if s.get("tune")}
    precise_solvers = {_display_label(s) for s in precise_config.get("solvers") or []}
    default_splits = (precise_config.get("split") or {}).get("n_splits", 10)
    found = {}
    if precise_summary is not None and not precise_summary.empty:
        ours = compare_with_paper(precise_summary, table, precise_config)
        ours = ours[ours["status"] != "not run"]
        found = {(r.dataset, r.solver, r.label): r for r in ours.itertuples(index=False)}
    rows = []
    for r in comparison.itertuples(index=False):
        entry = _dataset_entry(r.dataset, datasets)
        label = entry and _display_label(entry)
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


def _tex(text: Any) -> str:
    """Escape LaTeX special characters in a label."""
    out = str(text)
    for char in "&%$#_{}":
        out = out.replace(char, "\\" + char)
    return out


def _mean_std(mean: float, std: float | None) -> str:
    if pd.isna(mean):
        return "--"
    return f"{mean:.2f}" if std is None or pd.isna(std) else f"{mean:.2f} ({std:.2f})"


def _tex_row(cells: list[str]) -> str:
    return " & ".join(cells) + r" \\"


def _tabular(align: str, header: list[str], body: list[list[str]]) -> str:
    lines = [f"\\begin{{tabular}}{{{align}}}", "\\toprule", _tex_row(header), "\\midrule"]
    lines += [_tex_row(cells) for cells in body]
    return "\n".join(lines + ["\\bottomrule", "\\end{tabular}", ""])


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
        ``\\textbf{}`` (every tied cell); cells not run show ``--``.
    """
    datasets, labels = pd.unique(summary["dataset"]), pd.unique(summary["label"])
    grid = summary.set_index(["dataset", "label"])
    body = []
    for dataset in datasets:
        cells = [grid.loc[(dataset, lab), [f"{quantity}_mean", f"{quantity}_std"]]
                 if (dataset, lab) in grid.index else (np.nan, np.nan) for lab in labels]
        best = min((round(m, 2) for m, _ in cells if not pd.isna(m)), default=None)
        body.append([_tex(dataset)] + [
            f"\\textbf{{{_mean_std(m, s)}}}" if round(m, 2) == best else _mean_std(m, s)
            for m, s in cells
        ])
    return _tabular("l" + "r" * len(labels), ["Dataset"] + [_tex(lab) for lab in labels], body)


def comparison_to_latex(comparison: pd.DataFrame) -> str:
    """A booktabs table of reported vs. our values, one line per cell.

    Parameters
    ----------
    comparison : pandas.DataFrame
        From :func:`compare_with_paper`.

    Returns
    -------
    str
        Columns Dataset, Method (solver key, our label in parentheses where it differs), Paper,
        Ours, Diff., and Match (``$\\checkmark$`` / ``$\\times$``) for error tables or Ratio
        (ours / paper) for time tables; cells not run show ``not run``.
    """
    is_time = bool((comparison["quantity"] == "fit_time").any())
    body = []
    for rec in comparison.itertuples(index=False):
        ran_as = "" if pd.isna(rec.label) or rec.label == rec.solver else f" ({rec.label})"
        if rec.status == "not run":
            ours, diff, last = "not run", "--", "--"
        else:
            ours, diff = _mean_std(rec.ours_mean, rec.ours_std), f"{rec.diff:+.2f}"
            last = f"{rec.ratio:.2f}" if is_time else _MATCH_MARK[bool(rec.match)]
        paper = _mean_std(rec.paper_mean, rec.paper_std)
        body.append([_tex(rec.dataset), _tex(rec.solver + ran_as), paper, ours, diff, last])
    header = ["Dataset", "Method", "Paper", "Ours", "Diff.", "Ratio" if is_time else "Match"]
    return _tabular("llrrrc", header, body)


# ------------------------------------------------------------------------------------ files


def paper_table_keys(config: Mapping[str, Any]) -> list[str]:
    """The config's ``paper_table`` (null, a key, or a list of keys) as a list of keys."""
    keys = config.get("paper_table")
    if keys is None:
        return []
    return [keys] if isinstance(keys, str) else list(keys)


def write_report(results_dir: Path | str) -> dict[str, Path]:
    """Write the summary, LaTeX tables and paper comparisons of one results directory.

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
        ``figures/<name>.csv/.png/.pdf`` (:mod:`dml_bench.figures`).

    Raises
    ------
    ReportError
        If ``runs.csv`` or ``config.yaml`` is missing, or ``runs.csv`` is empty.
    """
    results_dir = Path(results_dir)
    runs, config = read_runs(results_dir), read_config(results_dir)
    summary = summarize(runs, config)
    outputs: dict[str, str | pd.DataFrame] = {
        "summary.csv": summary,
        "table.tex": summary_to_latex(summary, "error"),
        "table_time.tex": summary_to_latex(summary, "fit_time"),
    }
    precise_summary, precise_config = precise_of(results_dir)
    for key in paper_table_keys(config):
        comparison = compare_with_paper(summary, load_paper_table(key), config)
        if precise_config is not None:  # the many-split estimate beside each cell
            comparison = add_precise_columns(comparison, load_paper_table(key), config,
                                             precise_summary, precise_config)
        stem = "comparison_" + key.replace("/", "_")
        outputs[f"{stem}.csv"] = comparison
        outputs[f"{stem}.tex"] = comparison_to_latex(comparison)
    written = {name: _write(results_dir / name, content) for name, content in outputs.items()}
    for name, paths in write_figures(results_dir, runs, config).items():
        written.update({f"figures/{p.name}": p for p in paths})
    return written


def _write(path: Path, content: str | pd.DataFrame) -> Path:
    if isinstance(content, pd.DataFrame):
        content.to_csv(path, index=False)
    else:
        path.write_text(content, encoding="utf-8")
    return path


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
    readme.write_text(new, encoding="utf-8")
    return True
