"""Regression check of a results directory against a stored baseline of test errors.

A baseline is a CSV with the ``summary.csv`` columns ``dataset, label, error_mean, error_std,
error_n, n_test_mean`` (see :func:`write_baseline`). :func:`check_against_baseline` re-summarizes
``runs.csv`` and flags every baseline cell that got worse by more than its tolerance, or vanished.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ..common.safe_write import write_csv
from .knn import read_runs, summarize
from .tables import FLOAT_SLACK

BASELINE_COLUMNS = ["dataset", "label", "error_mean", "error_std", "error_n", "n_test_mean"]
OFFENDING = ("worse", "missing")


def tolerance(
    std_base: ArrayLike, n_base: ArrayLike, n_ours: ArrayLike, n_test: ArrayLike
) -> np.ndarray:
    """Allowed increase of a mean test error (percent) before a cell counts as worse.

    ``max(2 * s_b / sqrt(n_b), 100 / (n_test * n_r))``. The current run and the baseline use the
    same splits (seeds derive from the config), so the comparison is paired and the noise to
    allow for is that of the baseline mean: two standard errors of it, from the split-to-split
    std (a NaN std, i.e. a single split, counts as 0), floored at one misclassified test point on
    one of our splits. An unpaired two-sample tolerance would let a 3-split quickstart hide a
    solver returning the identity (wine: 1.9 % → 6.4 % stays inside 2·√(1.9²/3 + 4.0²/3) = 5.1).

    Parameters
    ----------
    std_base, n_base : float or array-like
        Baseline split-to-split std (percent) and number of splits.
    n_ours : float or array-like
        Number of splits of the current results.
    n_test : float or array-like
        Test points per split of the current results.

    Returns
    -------
    numpy.ndarray
        The tolerance in percentage points.
    """
    se_base = np.nan_to_num(np.asarray(std_base, float)) / np.sqrt(np.asarray(n_base, float))
    floor = 100 / (np.asarray(n_test, float) * np.asarray(n_ours, float))
    return np.maximum(2 * se_base, floor)


def check_against_baseline(
    results_dir: Path | str, baseline_csv: Path | str
) -> tuple[bool, pd.DataFrame]:
    """Compare the current test errors of a results directory with a baseline.

    For each baseline cell (dataset, label), with ``diff = ours − baseline`` in percent and
    ``tolerance`` from :func:`tolerance` (derived from the baseline's split-to-split std, not a
    blanket allowance), the status is

    - ``missing``: the cell is not in the current results;
    - ``worse``: ``diff > tolerance``;
    - ``better``: ``diff < −tolerance``;
    - ``ok``: otherwise (the boundary included).

    Cells only in the current results are not checked.

    Parameters
    ----------
    results_dir : path-like
        ``results/<name>/`` holding ``runs.csv``.
    baseline_csv : path-like
        A baseline written by :func:`write_baseline` (or a ``summary.csv``).

    Returns
    -------
    ok : bool
        True when no cell is ``worse`` or ``missing``.
    table : pandas.DataFrame
        Columns ``dataset, label, baseline, ours, diff, tolerance, status``, in baseline order.

    Raises
    ------
    dml_bench.report.tables.ReportError
        If ``runs.csv`` is missing or empty.
    """
    baseline = pd.read_csv(baseline_csv, dtype={"dataset": str, "label": str})[BASELINE_COLUMNS]
    ours = summarize(read_runs(results_dir))[BASELINE_COLUMNS]
    both = baseline.merge(ours, on=["dataset", "label"], how="left", suffixes=("_b", "_r"))
    tol = tolerance(both["error_std_b"], both["error_n_b"], both["error_n_r"],
                    both["n_test_mean_r"])
    diff = both["error_mean_r"] - both["error_mean_b"]
    status = np.select(
        [both["error_mean_r"].isna(), diff > tol + FLOAT_SLACK, diff < -tol - FLOAT_SLACK],
        ["missing", "worse", "better"],
        "ok",
    )
    table = pd.DataFrame({
        "dataset": both["dataset"], "label": both["label"], "baseline": both["error_mean_b"],
        "ours": both["error_mean_r"], "diff": diff, "tolerance": tol, "status": status,
    })
    return not table["status"].isin(OFFENDING).any(), table


def write_baseline(results_dir: Path | str, out_csv: Path | str) -> Path:
    """Store the current test errors of a results directory as a baseline.

    Parameters
    ----------
    results_dir : path-like
        ``results/<name>/`` holding ``runs.csv``.
    out_csv : path-like
        Where to write the baseline (parent directories are created). The file is replaced
        whole (:func:`dml_bench.common.safe_write.write_csv`); if it is a symlink, its target is.

    Returns
    -------
    Path
        ``out_csv``.
    """
    out_csv = Path(out_csv)
    out_csv.parent.mkdir(parents=True, exist_ok=True)
    baseline = summarize(read_runs(results_dir))[BASELINE_COLUMNS]
    write_csv(out_csv.resolve(), baseline, index=False)  # the file named, a link's target included
    return out_csv
