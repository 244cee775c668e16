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
  one bar per method) in each panel, error bars the split std (Kunapuli & Shavlik 2012, Fig. 3);
  when ``series`` groups otherwise than ``x`` (``{x: dataset, series: label}``), one bar per
  series value side by side in each ``x`` group, each its own mean.

``x`` of a bar chart and ``panels`` and ``series`` group by ``dataset``, ``label`` (solver
label), ``solver`` (registry name), ``solver.<parameter>`` (its value) or ``none``.

Axes are labelled in words with their unit (:data:`AXIS_LABELS`, :func:`axis_label`), and a
legend stands outside the axes, right of them (:func:`legend_outside`), so it hides no data.
Methods are printed by name (``dml_eig`` as ``DML-eig``,
:func:`~dml_bench.report.tables.method_name`), a label the config gives as given; the figure's
CSV keeps the labels of ``runs.csv``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from ..errors import warn
from ..common.safe_write import check_name, output_dir, output_path, write_csv
from ..common.safe_write import save_figure as _save_one
from ..run.results import RunStore

#: runs.csv columns in percent on plots (stored as fractions)
PERCENT = {"error"}

#: a figure key (a ``runs.csv`` or trace column, a ``dataset.<field>`` / ``solver.<parameter>``
#: setting, a grouping) → its axis label in words, with its unit; every figure of the package
#: labels its axes from here (:func:`axis_label`)
AXIS_LABELS = {
    "error": "test error (%)", "accuracy": "verification accuracy (%)",
    "fit_time": "fit time (s)", "fit_cpu_time": "fit CPU time (s)",
    "constraint_time": "constraint time (s)", "tuning_time": "tuning time (s)",
    "time": "time (s)", "iteration": "iteration", "n_iter": "iterations",
    "objective": "objective", "rank": "rank of the iterate",
    "n_nonzero_eigenvalues": "non-zero eigenvalues of M",
    "n_features_90_energy": "eigenvalues holding 90 % of the spectrum",
    "dataset.pca": "PCA dimension", "solver.rho": "ρ (regularisation)",
    "dataset": "data set", "label": "method", "solver": "solver",
    "fpr": "false positive rate", "tpr": "true positive rate",
    "mean_rank": "mean rank (1 = best)",
    "final_fit_time": "final-fit time, geometric mean over the ranked data sets (s)",
}


def axis_label(key: str) -> str:
    """The axis label of a figure key: :data:`AXIS_LABELS`'s, else ``<p> (solver parameter)`` /
    ``<field> (preprocessing)`` for a setting, else the key with spaces for underscores."""
    if key in AXIS_LABELS:
        return AXIS_LABELS[key]
    where, _, field = key.partition(".")
    if field and where in ("solver", "dataset"):
        return f"{field} ({'solver parameter' if where == 'solver' else 'preprocessing'})"
    return key.replace("_", " ")


def legend_outside(fig, fontsize: str = "small"):
    """One legend for ``fig``, outside its axes on the right, every label once (the handles of
    all its axes); None when nothing is labelled.

    The figure is laid out by matplotlib's constrained layout, which keeps room for the legend
    beside the axes: the legend covers no data point and stays inside the saved image.
    """
    handles = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label and not label.startswith("_"):
                handles.setdefault(label, handle)
    if not handles:
        return None
    fig.set_layout_engine("constrained")
    return fig.legend(list(handles.values()), list(handles), loc="outside right upper",
                      fontsize=fontsize)


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
    if spec["kind"] == "bar":  # one bar per (x, series) group, each its own mean
        return _mean_over_splits(runs.assign(x=_group(runs, spec["x"])), spec)
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


def plot_figure(data: pd.DataFrame, spec: Mapping[str, Any], out_dir: Path,
                names: Mapping[str, str] | None = None) -> list[Path]:
    """Draw ``data`` (from :func:`figure_data`) as ``<name>.png`` and ``.pdf``; also ``.csv``.

    The CSV holds the labels as ``runs.csv`` has them; the drawing prints methods by ``names``
    (:func:`draw_figure`).

    ``spec['name']`` must be a plain file name; every file replaces its old version, never
    written through a symlink (:mod:`dml_bench.common.safe_write`).

    Raises
    ------
    dml_bench.common.safe_write.UnsafeOutputName
        If ``spec['name']`` is not a plain file name.
    """
    name = check_name(spec["name"], "figure name")
    out_dir.mkdir(parents=True, exist_ok=True)
    csv = write_csv(output_path(out_dir, f"{name}.csv", "figure name"), data, index=False)
    return [csv, *save_figure(draw_figure(data, spec, names), out_dir, name).values()]


def draw_figure(data: pd.DataFrame, spec: Mapping[str, Any],
                names: Mapping[str, str] | None = None):
    """The matplotlib figure of ``data`` (from :func:`figure_data`): one panel per ``panel``,
    one line (or bar) per ``series``, axes labelled by :func:`axis_label`, the legend outside
    (:func:`legend_outside`).

    Methods (a ``label`` or ``solver`` grouping: legend entries, panel titles, bar ticks) are
    printed by ``names`` (label → name, :func:`~dml_bench.report.tables.method_names`), else by
    :func:`~dml_bench.report.tables.method_name`: ``dml_eig`` as ``DML-eig``, a label the config
    gave as given.
    """
    data = shown_methods(data, spec, names)
    plt = pyplot()
    panels = list(dict.fromkeys(data["panel"])) or [""]
    fig, axes = plt.subplots(1, len(panels), figsize=(max(4.2 * len(panels), 6.4), 3.8),
                             squeeze=False, layout="constrained")
    series = list(dict.fromkeys(data["series"]))
    for ax, panel in zip(axes[0], panels):
        part = data[data["panel"] == panel]
        if spec["kind"] == "bar":
            _bars(ax, part, series)
        for name, line in ([] if spec["kind"] == "bar" else part.groupby("series", sort=False)):
            if "y_std" in line and line["y_std"].notna().any():
                ax.errorbar(line["x"], line["y"], yerr=line["y_std"].fillna(0), marker="o",
                            capsize=3, label=name)
            else:
                ax.plot(line["x"], line["y"], label=name)
        ax.set_title(panel)  # the figure's own title is the suptitle
        ax.set_xlabel(axis_label(spec["x"]))
        ax.set_ylabel(axis_label(spec["y"]))
        if spec.get("logx"):
            ax.set_xscale("log")
        if spec.get("logy"):
            ax.set_yscale("log")
    if spec.get("title"):
        fig.suptitle(spec["title"])
    legend_outside(fig)
    return fig


def shown_methods(data: pd.DataFrame, spec: Mapping[str, Any],
                  names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """``data`` with the values of its method groupings (``panels``, ``series`` and a bar's
    ``x`` grouped by ``label`` or ``solver``) as printed (see :func:`draw_figure`)."""
    from .tables import method_name, method_names

    groupings = {column: spec.get(key) for column, key in
                 (("panel", "panels"), ("series", "series"), ("x", "x"))
                 if spec.get(key) in ("label", "solver") and (key != "x" or spec["kind"] == "bar")}
    if not groupings:
        return data
    data = data.copy()
    for column, by in groupings.items():
        values = data[column].astype(str)
        if by == "solver" or names is None:  # registry names, or labels taken for them
            shown = method_names((v, None) for v in values.unique())
        else:
            shown = {v: names.get(v, method_name(v)) for v in values.unique()}
        data[column] = values.map(shown)
    return data


def _bars(ax, part: pd.DataFrame, series: list) -> None:
    """One panel's bars: one per ``x`` value; where ``series`` groups otherwise (several series
    in one ``x`` group), one bar per series side by side in each group, coloured and labelled by
    series (``series`` in the figure's order, so colours agree across panels)."""
    xs = list(dict.fromkeys(part["x"].astype(str)))
    grouped = part.groupby("x", sort=False)["series"].nunique().max() > 1
    if not grouped:  # one bar per x: the tick names it
        ax.bar(part["x"].astype(str), part["y"], yerr=part["y_std"].fillna(0), capsize=3,
               color=[f"C{i}" for i in range(len(part))])
    else:
        width = 0.8 / len(series)
        for i, name in enumerate(series):
            bars = part[part["series"] == name]
            at = [xs.index(str(x)) + (i - (len(series) - 1) / 2) * width for x in bars["x"]]
            ax.bar(at, bars["y"], width, yerr=bars["y_std"].fillna(0), capsize=3,
                   color=f"C{i}", label=name)
        ax.set_xticks(range(len(xs)), xs)
    ax.tick_params(axis="x", labelrotation=60, labelsize="small")


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
    from .tables import method_names

    store = RunStore(results_dir)
    out_dir = output_dir(results_dir, "figures")
    names = method_names(zip(runs["label"], runs["solver"])) if "solver" in runs else None
    written = {}
    for spec in specs:
        data = figure_data(runs, spec, store)
        if data.empty and spec["kind"] == "trace" and (out_dir / f"{spec['name']}.csv").is_file():
            # the traces are not here (a clone holds the figure, not traces/): keep the figure
            warn(f"figure {spec['name']}: no trace of {results_dir} is here; its files are kept")
            continue
        written[spec["name"]] = plot_figure(data, spec, out_dir, names)
    return written
