"""Result tables: a results folder's config, our numbers beside a paper's table, LaTeX tables.

What every report (k-NN: :mod:`dml_bench.report.knn`; pair verification:
:mod:`dml_bench.report.verification`) builds its tables with: the resolved ``config.yaml``
(:func:`read_config`), the config's order of rows (:func:`config_order`), the comparison with
a reported table cell by cell (:func:`compare_with_paper`, :func:`is_match`,
:func:`welch_verdict`) and booktabs tables (:func:`tabular`, :func:`comparison_to_latex`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from ..common.safe_write import output_path, write_csv, write_text
from ..errors import DMLBenchError
from ..papers import PaperTable


class ReportError(DMLBenchError, RuntimeError):
    """A results directory cannot be reported on (missing or empty ``runs.csv``, no markers...)."""


CONFIG_FILE = "config.yaml"


def read_config(results_dir: Path | str) -> dict[str, Any]:
    """Read the resolved ``config.yaml`` of a results directory.

    Raises
    ------
    ReportError
        If the file is missing, or is not YAML within :mod:`~dml_bench.common.safe_yaml`'s limits.
    """
    from ..common import safe_yaml

    path = Path(results_dir) / CONFIG_FILE
    if not path.is_file():
        raise ReportError(f"no experiment config: {path} does not exist")
    try:
        return safe_yaml.load_file(path) or {}
    except yaml.YAMLError as exc:
        raise ReportError(f"{path}: {safe_yaml.describe(exc)}") from None


def paper_table_keys(config: Mapping[str, Any]) -> list[str]:
    """The config's ``paper_table`` (null, a key, or a list of keys) as a list of keys."""
    keys = config.get("paper_table")
    if keys is None:
        return []
    return [keys] if isinstance(keys, str) else list(keys)


def display_label(entry: Mapping[str, Any]) -> str:
    """The label of a config's dataset or solver entry: its ``label``, else its ``name``."""
    return str(entry.get("label") or entry["name"])


#: how figures and table headers print a solver that a config gives no label of its own: its
#: registry name → the name the papers use (:func:`method_name`); a solver not listed (a
#: plug-in) is printed by its registry name
SOLVER_NAMES = {
    "euclidean": "Euclidean", "dml_eig": "DML-eig", "lmnn_eig": "LMNN-eig",
    "frobmetric": "FrobMetric", "boostmetric": "BoostMetric", "sdpmetric": "SDPMetric",
    "xing": "Xing (MMC)", "lmnn": "LMNN", "itml": "ITML", "nca": "NCA", "lda": "LDA",
    "pca": "PCA", "rca": "RCA", "ldml": "LDML", "svm": "SVM", "elm": "ELM", "pola": "POLA",
    "mdml": "MDML", "sgd_incsvd": "SGD-IncSVD", "gd": "GD", "sgd": "SGD",
    "sgd_batch": "SGD-Batch", "fw": "FW", "sgd_one": "SGD-One", "lfda": "LFDA",
    "covariance": "Covariance", "mlkr": "MLKR", "sdml": "SDML", "lsml": "LSML", "scml": "SCML",
    "scml_local": "SCML-Local",
}


def method_name(label: Any, solver: str | None = None) -> str:
    """The name a figure or a table header prints for a method (a solver label).

    A label that is its solver's registry name (the config gave none) prints as
    :data:`SOLVER_NAMES` has it (``dml_eig`` → ``DML-eig``); a label the config gives
    (``label:`` other than the name) prints as given. Without ``solver``, a label that is a
    registry name is taken for that solver's own.
    """
    label = str(label)
    if solver is not None and label != str(solver):
        return label
    return SOLVER_NAMES.get(label, label)


def method_names(pairs) -> dict[str, str]:
    """``{label: printed name}`` of ``(label, solver)`` pairs (a runs table's columns, a
    config's solver entries), by :func:`method_name`. Labels that would print alike stay as
    they are, so that two methods never share a name on a figure or in a table."""
    names = {str(label): method_name(label, solver) for label, solver in pairs}
    shown = pd.Series(list(names.values()), dtype=object)
    clash = set(shown[shown.duplicated(keep=False)])
    return {label: label if name in clash else name for label, name in names.items()}


def config_order(summary: pd.DataFrame, config: Mapping[str, Any]) -> pd.DataFrame:
    """``summary``'s rows in the config's order: its ``datasets``, then its ``solvers`` (labels);
    anything else after, in order of first appearance."""
    order = {}
    for column, section in (("dataset", "datasets"), ("label", "solvers")):
        listed = [display_label(e) for e in config.get(section) or []]
        order[column] = {v: i for i, v in enumerate(dict.fromkeys(listed + list(summary[column])))}
    return summary.sort_values(
        ["dataset", "label"], key=lambda s: s.map(order[s.name]), kind="stable"
    ).reset_index(drop=True)


NO_STD_MATCH = 0.5
"""Largest |ours − paper| (percentage points) counted as a match where the paper gives no std."""


FLOAT_SLACK = 1e-9
"""Slack on inclusive comparisons, so a difference exactly at a boundary is not lost to rounding."""


COMPARISON_COLUMNS = [
    "table", "quantity", "dataset", "solver", "label", "paper_mean", "paper_std",
    "ours_mean", "ours_std", "n", "diff", "match", "ratio", "status", "welch_p", "significance",
    "note",
]


SIGNIFICANCE_LEVEL = 0.05
"""Two-sided level of the Welch test of ours against the paper (:func:`welch_verdict`)."""


_MATCH_MARK = {True: "$\\checkmark$", False: "$\\times$"}


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
        From :func:`~dml_bench.report.knn.summarize`.
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
    names = {display_label(d): d["name"] for d in (config or {}).get("datasets") or []}
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
    if quantity in ("error", "accuracy"):  # accuracy: pair verification, percent
        match = is_match(ours, paper_mean, paper_std)
        p, verdict = welch_verdict(ours, ours_std, n, paper_mean, paper_std, table.n_splits)
        return {**fields, "match": match, "status": "match" if match else "mismatch",
                "welch_p": p, "significance": verdict}
    return {**fields, "ratio": ours / paper_mean, "status": "compared"}


#: LaTeX's special characters as text: each is typeset as itself, none is a command
_TEX_ESCAPES = str.maketrans({
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&", "#": r"\#",
    "_": r"\_", "%": r"\%", "^": r"\textasciicircum{}", "~": r"\textasciitilde{}",
    "\n": " ", "\r": " ",
})


def tex(text: Any) -> str:
    """A label as LaTeX text: the special characters ``\\ { } $ & # ^ _ % ~`` escaped (in one
    pass, so an escape is never escaped again) and line breaks as spaces, so that no label can
    run a command, open a group or break the table."""
    return str(text).translate(_TEX_ESCAPES)


def mean_std(mean: float, std: float | None) -> str:
    """A table cell "mean (std)" with two decimals ("mean" without a std, "--" without a mean)."""
    if pd.isna(mean):
        return "--"
    return f"{mean:.2f}" if std is None or pd.isna(std) else f"{mean:.2f} ({std:.2f})"


def _tex_row(cells: list[str]) -> str:
    return " & ".join(cells) + r" \\"


def tabular(align: str, header: list[str], body: list[list[str]]) -> str:
    """A booktabs ``tabular`` of the given column alignment, header row and body rows."""
    lines = [f"\\begin{{tabular}}{{{align}}}", "\\toprule", _tex_row(header), "\\midrule"]
    lines += [_tex_row(cells) for cells in body]
    return "\n".join(lines + ["\\bottomrule", "\\end{tabular}", ""])


def latex_table(tabular_text: str, caption: str) -> str:
    """A ``tabular`` (from :func:`tabular`) as a ``table`` float with its caption above it.

    ``caption`` is LaTeX (escape labels in it with :func:`tex`); it says what the table shows and
    in which unit, so that the file reads on its own.
    """
    return "\n".join(["\\begin{table}[htbp]", "\\centering", f"\\caption{{{caption}}}",
                      tabular_text.rstrip("\n"), "\\end{table}", ""])


def splits_phrase(counts: pd.Series, config: Mapping[str, Any] | None = None,
                  unit: str | None = None) -> str:
    """"N random 70/30 training/test splits" for a caption: the split counts of the cells (a
    range where they differ) and the config's fractions (``split.train_fraction``, default 0.7);
    with ``unit`` (a verification report's "test fold"), "N <unit>s"."""
    counts = pd.to_numeric(counts, errors="coerce").dropna().astype(int)
    low, high = (int(counts.min()), int(counts.max())) if len(counts) else (0, 0)
    n, plural = (f"{low}" if low == high else f"{low}--{high}"), "s" * (high != 1)
    if unit:
        return f"{n} {unit}{plural}"
    train = float(((config or {}).get("split") or {}).get("train_fraction", 0.7))
    return (f"{n} random {round(100 * train):d}/{round(100 * (1 - train)):d} training/test "
            f"split{plural}")


def comparison_caption(comparison: pd.DataFrame, table: PaperTable,
                       config: Mapping[str, Any] | None = None, unit: str | None = None) -> str:
    """The caption of :func:`comparison_to_latex`'s table: which paper table, the quantity with
    its unit, our split count, and what the last two columns mean."""
    ran = comparison.loc[comparison["status"] != "not run", "n"]
    ours = f"ours over {splits_phrase(ran, config, unit)}" if len(ran) else "none of ours run yet"
    source = f"{tex(table.key.split('/')[0])}, Table {table.number}"
    if table.quantity == "fit_time":
        what = (f"fit time (s), mean (std) ({ours}); Diff.\\ = ours $-$ paper (s); Ratio = "
                "ours / paper (other hardware: compare ratios, not seconds)")
    else:
        unit = "pair-verification accuracy" if table.quantity == "accuracy" else "test error"
        what = (f"{unit} (\\%), mean (std) ({ours}); Diff.\\ = ours $-$ paper (percentage "
                f"points); Match: $|$ours $-$ paper$|$ $\\le$ the paper's std ({NO_STD_MATCH} "
                "points where it gives none)")
    return f"Paper against ours, {source}: {what}."


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
            ours, diff = mean_std(rec.ours_mean, rec.ours_std), f"{rec.diff:+.2f}"
            last = f"{rec.ratio:.2f}" if is_time else _MATCH_MARK[bool(rec.match)]
        paper = mean_std(rec.paper_mean, rec.paper_std)
        body.append([tex(rec.dataset), tex(rec.solver + ran_as), paper, ours, diff, last])
    header = ["Dataset", "Method", "Paper", "Ours", "Diff.", "Ratio" if is_time else "Match"]
    return tabular("llrrrc", header, body)


def write_output(folder: Path, name: str, content: str | pd.DataFrame) -> Path:
    """Write the report file ``folder / name``: a DataFrame as CSV (no index), a string as UTF-8
    text; returns its path.

    ``name`` must be a plain file name, and the file replaces its old version, never written
    through a symlink (:mod:`dml_bench.common.safe_write`).

    Raises
    ------
    dml_bench.common.safe_write.UnsafeOutputName
        If ``name`` is not a plain file name.
    """
    path = output_path(folder, name)
    if isinstance(content, pd.DataFrame):
        return write_csv(path, content, index=False)
    return write_text(path, content)
