"""The report of a results folder, by the task kind of its experiment: k-NN classification
(:func:`~dml_bench.report.knn.write_knn_report`), pair verification
(:func:`~dml_bench.report.verification.write_verification_report`) or retrieval
(:func:`~dml_bench.report.retrieval.write_retrieval_report`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .tables import CONFIG_FILE, read_config


def _task(results_dir: Path) -> str:
    """The task kind of a results folder (``evaluation.task`` of its ``config.yaml``)."""
    config = read_config(results_dir) if (results_dir / CONFIG_FILE).is_file() else {}
    return (config.get("evaluation") or {}).get("task", "knn")


def write_report(results_dir: Path | str) -> dict[str, Path]:
    """Write the report of one results directory, as its experiment's task kind
    (``evaluation.task`` of its ``config.yaml``) makes it; returns file name → path of every
    file written. A folder without ``config.yaml`` gets the k-NN report, which says what is
    missing (:class:`~dml_bench.report.tables.ReportError`)."""
    from .knn import write_knn_report
    from .retrieval import write_retrieval_report
    from .verification import write_verification_report

    results_dir = Path(results_dir)
    task = _task(results_dir)
    writers = {"knn": write_knn_report, "verification": write_verification_report,
               "retrieval": write_retrieval_report}
    return writers[task](results_dir)


#: what the screen table of a kind shows: (summary column of the mean, of its spread, name, unit)
_SCREEN = {"knn": ("error_mean", "error_std", "test error", "%, mean ± std over the splits"),
           "retrieval": ("error_mean", "error_std", "test error", "%, mean ± std over the splits"),
           "verification": ("accuracy_mean", "accuracy_sem", "accuracy",
                            "%, mean ± SEM over the folds")}


def screen_tables(results_dir: Path | str) -> str:
    """The results of a folder to print at the end of a run: per dataset (rows) and solver
    label (columns) the error (accuracy for verification) and the mean fit time, from its
    ``summary.csv`` (empty when there is none)."""
    results_dir = Path(results_dir)
    if not (results_dir / "summary.csv").is_file():
        return ""
    summary = pd.read_csv(results_dir / "summary.csv")
    mean, spread, name, unit = _SCREEN[_task(results_dir)]
    order = {"index": list(dict.fromkeys(summary["dataset"])),
             "columns": list(dict.fromkeys(summary["label"]))}
    cells = summary.assign(cell=[f"{m:.2f} ± {s:.2f}" if pd.notna(s) else f"{m:.2f}"
                                 for m, s in zip(summary[mean], summary[spread])])
    error = cells.pivot(index="dataset", columns="label", values="cell").reindex(**order)
    times = summary.assign(cell=[f"{t:.3g}" for t in summary["fit_time_mean"]]).pivot(
        index="dataset", columns="label", values="cell").reindex(**order)
    return (f"{name} ({unit}):\n{error.fillna('–').to_string()}\n\n"
            f"fit time (s, mean over the splits):\n{times.fillna('–').to_string()}")


def comparison_lines(results_dir: Path | str) -> list[str]:
    """Per paper table compared in a results folder (its ``comparison_*.csv``): how many of the
    compared cells match the paper, and each cell that does not, with both numbers."""
    lines = []
    for path in sorted(Path(results_dir).glob("comparison_*.csv")):
        table = pd.read_csv(path)
        compared = table[table["status"].isin(["match", "mismatch"])]
        if compared.empty:
            continue
        key = compared["table"].iloc[0]
        matched = int((compared["status"] == "match").sum())
        lines.append(f"{key}: {matched} of {len(compared)} compared cells match")
        for row in compared[compared["status"] == "mismatch"].itertuples():
            lines.append(f"  not matched: {row.dataset} / {row.label}: ours {row.ours_mean:.4g}, "
                         f"paper {row.paper_mean:.4g} ({row.quantity})")
    return lines
