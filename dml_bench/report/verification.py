"""The report of a pair-verification experiment (:func:`write_verification_report`).

``summary.csv`` (accuracy mean, std and SEM over the test folds, merged-ROC AUC and EER of
:mod:`dml_bench.experiment.verification`), ``table.tex``, ``roc.csv`` with one figure per
dataset entry, accuracy against the PCA dimension, and the paper comparisons
(:mod:`dml_bench.report.tables`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ..common.safe_write import output_dir, output_path, save_figure
from ..experiment.sections import LFW_TABLES
from ..experiment.verification import mean_sem, merged_roc
from ..experiment.verification_tasks import VERIFICATION_COLUMNS
from ..papers import load_paper_table
from ..run.results import RunStore
from .figures import axis_label, legend_outside, pyplot
from .tables import (ReportError, compare_with_paper, comparison_caption, comparison_to_latex,
                     config_order, latex_table, paper_table_keys, read_config, splits_phrase,
                     tabular, tex, write_output)


def summarize_verification(runs: pd.DataFrame, results_dir: Path,
                           config: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per (dataset entry, solver label): accuracy over the test folds and the merged ROC.

    Returns
    -------
    summary : DataFrame
        ``dataset, label, solver, features, pca, sqrt, accuracy_mean, accuracy_std,
        accuracy_sem`` (percent; std with ddof = 1, SEM = std / √n,
        :func:`~dml_bench.experiment.verification.mean_sem`),
        ``error_n`` (folds), ``auc`` and ``eer`` of the merged ROC
        (:func:`~dml_bench.experiment.verification.merged_roc`),
        ``fit_time_mean/_std``, ``fit_cpu_time_mean``, ``n_triplets_mean``, ``tuned_params``
        and ``note`` ("not the paper's features" for raw pixels); rows in config order.
    roc : DataFrame
        ``dataset, label, fpr, tpr, threshold``: each summary row's merged ROC.
    """
    rows, curves = [], []
    for (dataset, label), group in runs.groupby(["dataset", "label"], sort=False):
        group = group.sort_values("split")
        scores = [pd.read_csv(Path(results_dir) / "scores" / f"{tid}.csv") for tid in group["task_id"]]
        roc = merged_roc([s["distance"].to_numpy() for s in scores],
                         [s["same"].to_numpy(dtype=bool) for s in scores])
        mean, sem = mean_sem(group["accuracy"] * 100)
        prep = json.loads(group["preprocessing"].iloc[0])
        features = str(group["features"].iloc[0])
        rows.append({
            "dataset": dataset, "label": label, "solver": group["solver"].iloc[0],
            "features": features, "pca": prep.get("pca"), "sqrt": prep.get("sqrt"),
            "accuracy_mean": mean, "accuracy_std": float((group["accuracy"] * 100).std(ddof=1)),
            "accuracy_sem": sem, "error_n": len(group), "auc": roc["auc"], "eer": roc["eer"],
            "fit_time_mean": group["fit_time"].mean(), "fit_time_std": group["fit_time"].std(ddof=1),
            "fit_cpu_time_mean": group["fit_cpu_time"].mean(),
            "n_triplets_mean": group["n_triplets"].mean(),
            "tuned_params": ";".join(sorted({str(t) for t in group["tuned_params"].dropna() if t})),
            "note": LFW_TABLES["lfw_pixels"] if features == "lfw_pixels" else ""})
        curves.append(roc["roc"].assign(dataset=dataset, label=label))
    summary = pd.DataFrame(rows)
    if config:
        summary = config_order(summary, config)
    roc = (pd.concat(curves, ignore_index=True)[["dataset", "label", "fpr", "tpr", "threshold"]]
           if curves else pd.DataFrame(columns=["dataset", "label", "fpr", "tpr", "threshold"]))
    return summary, roc


def verification_latex(summary: pd.DataFrame) -> str:
    """A booktabs table: dataset entries × solvers, "accuracy ± SEM" (percent), the highest
    of each row in bold (the papers' layout of Ying & Li Table 6)."""
    datasets, labels = pd.unique(summary["dataset"]), pd.unique(summary["label"])
    grid = summary.set_index(["dataset", "label"])
    body = []
    for dataset in datasets:
        cells = [tuple(grid.loc[(dataset, lab), ["accuracy_mean", "accuracy_sem"]])
                 if (dataset, lab) in grid.index else (np.nan, np.nan) for lab in labels]
        best = max((round(m, 2) for m, _ in cells if not pd.isna(m)), default=None)
        text = ["--" if pd.isna(m) else f"{m:.2f} $\\pm$ {s:.2f}" if not pd.isna(s) else f"{m:.2f}"
                for m, s in cells]
        body.append([tex(dataset)] + [f"\\textbf{{{t}}}" if not pd.isna(m) and round(m, 2) == best
                                       else t for t, (m, _) in zip(text, cells)])
    return tabular("l" + "r" * len(labels), ["Dataset"] + [tex(lab) for lab in labels], body)


def plot_roc(roc: pd.DataFrame, summary: pd.DataFrame, path: Path, title: str) -> Path:
    """Merged ROC curves (TPR against FPR), one per solver label, AUC in the legend."""
    plt = pyplot()

    fig, ax = plt.subplots(figsize=(6.5, 4.5), layout="constrained")
    for label, curve in roc.groupby("label", sort=False):
        auc = summary.loc[summary["label"] == label, "auc"].iloc[0]
        ax.plot(curve["fpr"], curve["tpr"], label=f"{label} (AUC {auc:.3f})")
    ax.plot([0, 1], [0, 1], color="grey", lw=0.5, ls=":")
    ax.set(xlabel=axis_label("fpr"), ylabel=axis_label("tpr"), title=title,
           xlim=(0, 1), ylim=(0, 1))
    legend_outside(fig)
    try:
        return save_figure(fig, path, dpi=120)
    finally:
        plt.close(fig)


def plot_accuracy_vs_pca(summary: pd.DataFrame, path: Path) -> Path:
    """Accuracy (± SEM) against the PCA dimension, one line per solver and square-root setting
    (Ying & Li Fig. 2)."""
    plt = pyplot()

    fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    for (label, sqrt), part in summary.groupby(["label", "sqrt"], sort=False):
        part = part.sort_values("pca")
        ax.errorbar(part["pca"], part["accuracy_mean"], yerr=part["accuracy_sem"], marker="o",
                    capsize=3, label=f"{label}{' (square root)' if sqrt else ''}")
    ax.set(xlabel=axis_label("dataset.pca"), ylabel=axis_label("accuracy"))
    legend_outside(fig)
    try:
        return save_figure(fig, path, dpi=120)
    finally:
        plt.close(fig)


def write_verification_report(results_dir) -> dict[str, Path]:
    """The report of a verification experiment's folder (``runs.csv``, ``config.yaml``).

    Writes ``summary.csv`` (:func:`summarize_verification`), ``table.tex``
    (:func:`verification_latex`), ``roc.csv`` and ``figures/roc_<dataset>.png`` (merged ROC per
    dataset entry), ``figures/accuracy_vs_pca.png`` when the entries vary the PCA dimension, and
    per paper table of the config ``comparison_<paper>_<table>.csv/.tex``
    (:func:`~dml_bench.report.tables.compare_with_paper`). Returns file name → path.

    Raises
    ------
    ReportError
        No finished run, or no config.
    """
    results_dir = Path(results_dir)
    runs = RunStore(results_dir, "runs", VERIFICATION_COLUMNS).read()
    if runs.empty:
        raise ReportError(f"no runs to report: {results_dir / 'runs.csv'} holds no finished runs")
    runs = runs.drop_duplicates("task_id", keep="last").astype({"dataset": str, "label": str})
    config = read_config(results_dir)
    summary, roc = summarize_verification(runs, results_dir, config)
    caption = (f"Pair-verification accuracy (\\%), mean $\\pm$ standard error over "
               f"{splits_phrase(summary['error_n'], config, 'test fold')}; the highest of each "
               "row in bold; "
               "-- not run.")
    outputs = {"summary.csv": summary, "table.tex": latex_table(verification_latex(summary),
                                                                caption), "roc.csv": roc}
    for key in paper_table_keys(config):
        comparison = compare_with_paper(summary, load_paper_table(key), config)
        stem = "comparison_" + key.replace("/", "_")
        outputs[f"{stem}.csv"] = comparison
        outputs[f"{stem}.tex"] = latex_table(comparison_to_latex(comparison), comparison_caption(
            comparison, load_paper_table(key), config, "test fold"))
    written = {name: write_output(results_dir, name, content) for name, content in outputs.items()}
    figures = output_dir(results_dir, "figures")
    for dataset, curves in roc.groupby("dataset", sort=False):
        path = output_path(figures, f"roc_{dataset}.png", "figure name")
        written[f"figures/{path.name}"] = plot_roc(
            curves, summary[summary["dataset"] == dataset], path, f"{config.get('name', '')}: {dataset}")
    if summary["pca"].nunique() > 1:
        written["figures/accuracy_vs_pca.png"] = plot_accuracy_vs_pca(
            summary, figures / "accuracy_vs_pca.png")
    return written
