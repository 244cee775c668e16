"""Figures of an experiment, declared in its config (``figures:``) and drawn by the report.

Three kinds, each written as ``figures/<name>.csv`` (the plotted numbers) plus ``.png`` and ``.pdf``:

- ``trace``: a per-iteration quantity of the solvers' ``trace_`` (saved with
  ``evaluation: {save_traces: true}``) against ``iteration``, ``time`` or another trace column —
  e.g. the rank of W_t per iteration (Zhang & Zhang 2017, Fig. 1) or the objective against wall
  time (Fig. 2). One line per series, from the first split of each (dataset, solver label).
- ``sweep``: a ``runs.csv`` quantity (``error``, ``fit_time``, ``n_nonzero_eigenvalues``, …)
  averaged over splits against a setting that varies across config entries: ``dataset.<field>``
  (a preprocessing field such as ``pca``: Ying & Li 2012, Fig. 1) or ``solver.<parameter>``
  (e.g. ``solver.rho``: Kunapuli & Shavlik 2012, Fig. 4); error bars are the split std.

- ``bar``: a ``runs.csv`` quantity averaged over splits, one bar per ``x`` group (e.g. ``label``:
  one bar per method) in each panel, error bars the split std (Kunapuli & Shavlik 2012, Fig. 3).

``x`` of a bar chart and ``panels`` and ``series`` group by ``dataset``, ``label`` (solver label), ``solver`` (registry
name), ``solver.<parameter>`` (its value) or ``none``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from ..common.safe_write import check_name, output_dir, output_path, write_csv
from ..common.safe_write import save_figure as _save_one
from ..run.results import RunStore

#: runs.csv columns in percent on plots (stored as fractions)
PERCENT = {"error"}


def pyplot():
    """``matplotlib.pyplot`` on the non-interactive Agg backend, imported on first use.

    Every figure of the package is drawn through it and written to files, never shown, so no
    display is needed (a headless CI host, a worker process); matplotlib is imported only when
    a figure is drawn.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure_data(runs: pd.DataFrame, spec: Mapping[str, Any], store: RunStore) -> pd.DataFrame:
    """The numbers of one figure: columns ``panel, series, x, y`` (+ ``y_std`` for sweeps)."""
    runs = runs.assign(panel=_group(runs, spec["panels"]), series=_group(runs, spec["series"]))
    if spec["kind"] == "trace":
        return _trace_data(runs, spec, store)
    if spec["kind"] == "bar":
        runs = runs.assign(series=_group(runs, spec["x"]))
        return _mean_over_splits(runs.assign(x=runs["series"]), spec)
    return _sweep_data(runs, spec)


def _group(runs: pd.DataFrame, by: str) -> pd.Series:
    if by == "none":
        return pd.Series("", index=runs.index)
    if by.startswith("solver."):  # a solver parameter, e.g. solver.divergence
        return runs["solver_params"].map(lambda text: str(json.loads(text).get(by[7:])))
    return runs[by].astype(str)


def _trace_data(runs, spec, store) -> pd.DataFrame:
    frames = []
    first = runs.sort_values("split").groupby(["dataset", "label"], sort=False).head(1)
    for _, row in first.iterrows():
        try:
            trace = store.read_trace(row["task_id"])
        except FileNotFoundError:
            continue  # run before save_traces was on: rerun with --force to get it
        if spec["x"] not in trace or spec["y"] not in trace:
            continue  # this solver does not record the quantity
        frames.append(pd.DataFrame({"panel": row["panel"], "series": row["series"],
                                    "x": trace[spec["x"]], "y": trace[spec["y"]]}).dropna())
    if not frames:
        return pd.DataFrame(columns=["panel", "series", "x", "y"])
    return pd.concat(frames, ignore_index=True)


def _sweep_data(runs, spec) -> pd.DataFrame:
    where, field = spec["x"].split(".", 1)
    column = "preprocessing" if where == "dataset" else "solver_params"
    x = runs[column].map(lambda text: json.loads(text).get(field) if isinstance(text, str) else None)
    out = _mean_over_splits(runs.assign(x=x), spec)
    return out.sort_values(["panel", "series", "x"], kind="stable").reset_index(drop=True)


def _mean_over_splits(runs, spec) -> pd.DataFrame:
    y = runs[spec["y"]].astype(float) * (100 if spec["y"] in PERCENT else 1)
    frame = runs.assign(y=y).dropna(subset=["x", "y"])
    return (frame.groupby(["panel", "series", "x"], sort=False)["y"]
            .agg(y="mean", y_std="std").reset_index())


def plot_figure(data: pd.DataFrame, spec: Mapping[str, Any], out_dir: Path) -> list[Path]:
    """Draw ``data`` (from :func:`figure_data`) as ``<name>.png`` and ``.pdf``; also ``.csv``.

    ``spec['name']`` must be a plain file name; every file replaces its old version, never
    written through a symlink (:mod:`dml_bench.common.safe_write`).

    Raises
    ------
    dml_bench.common.safe_write.UnsafeOutputName
        If ``spec['name']`` is not a plain file name.
    """
    plt = pyplot()
    name = check_name(spec["name"], "figure name")
    out_dir.mkdir(parents=True, exist_ok=True)
    csv = write_csv(output_path(out_dir, f"{name}.csv", "figure name"), data, index=False)
    panels = list(dict.fromkeys(data["panel"])) or [""]
    fig, axes = plt.subplots(1, len(panels), figsize=(max(4.2 * len(panels), 6.4), 3.8),
                             squeeze=False)
    for ax, panel in zip(axes[0], panels):
        part = data[data["panel"] == panel]
        if spec["kind"] == "bar":
            ax.bar(part["x"].astype(str), part["y"], yerr=part["y_std"].fillna(0), capsize=3,
                   color=[f"C{i}" for i in range(len(part))])
            ax.tick_params(axis="x", labelrotation=60, labelsize="small")
        for series, line in ([] if spec["kind"] == "bar" else part.groupby("series", sort=False)):
            if "y_std" in line and line["y_std"].notna().any():
                ax.errorbar(line["x"], line["y"], yerr=line["y_std"].fillna(0), marker="o",
                            capsize=3, label=series)
            else:
                ax.plot(line["x"], line["y"], label=series)
        ax.set_title(panel)  # the figure's own title is the suptitle
        ax.set_xlabel(spec["x"])
        ax.set_ylabel(spec["y"] + (" (%)" if spec["y"] in PERCENT else ""))
        if spec.get("logx"):
            ax.set_xscale("log")
        if spec.get("logy"):
            ax.set_yscale("log")
        if spec["kind"] != "bar" and (part["series"] != "").any():
            ax.legend(fontsize="small")
    if spec.get("title"):
        fig.suptitle(spec["title"])
    fig.tight_layout()
    return [csv, *save_figure(fig, out_dir, name).values()]


def save_figure(fig, out_dir: Path, name: str, key: str | None = None, **savefig_kw) -> dict:
    """Write ``fig`` as ``<name>.png`` and ``<name>.pdf`` in ``out_dir`` (120 dpi) and close it;
    returns ``{"<key>_png": path, "<key>_pdf": path}`` (``key`` defaults to ``name``).

    Each file replaces its old version, never written through a symlink
    (:func:`dml_bench.common.safe_write.save_figure`).

    Raises
    ------
    dml_bench.common.safe_write.UnsafeOutputName
        If ``name`` is not a plain file name.
    """
    plt = pyplot()
    paths = {}
    try:
        for ext in ("png", "pdf"):
            path = output_path(out_dir, f"{check_name(name, 'figure name')}.{ext}", "figure name")
            paths[f"{key or name}_{ext}"] = _save_one(fig, path, dpi=120, **savefig_kw)
    finally:
        plt.close(fig)
    return paths


def write_figures(results_dir: Path, runs: pd.DataFrame, config: Mapping[str, Any]) -> dict:
    """Every figure of ``config['figures']`` into ``results_dir/figures/``: name → paths.

    ``figures/`` is a real folder (a symlink there is replaced by one,
    :func:`~dml_bench.common.safe_write.output_dir`); every figure's name is checked to be a plain
    file name before anything is drawn.

    Raises
    ------
    dml_bench.common.safe_write.UnsafeOutputName
        If a figure's name is not a plain file name.
    """
    specs = config.get("figures") or []
    for spec in specs:
        check_name(spec["name"], "figure name")
    if not specs:
        return {}
    store = RunStore(results_dir)
    out_dir = output_dir(results_dir, "figures")
    written = {}
    for spec in specs:
        data = figure_data(runs, spec, store)
        written[spec["name"]] = plot_figure(data, spec, out_dir)
    return written
