"""Figures declared in configs: the plotted numbers (sweeps over settings, per-iteration traces),
the files written, and the config checks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from dml_bench.experiment.config import parse_config
from dml_bench.experiment.schema import ConfigError
from dml_bench.report.figures import figure_data, plot_figure
from dml_bench.run.results import RunStore


def runs_frame():
    rows = []
    for pca, errs in ((5, [0.10, 0.20]), (10, [0.05, 0.07])):
        for split, err in enumerate(errs):
            rows.append({"task_id": f"t{pca}{split}", "dataset": f"orl_pca{pca}", "split": split,
                         "label": "dml", "solver": "dml_eig", "error": err, "fit_time": pca,
                         "preprocessing": json.dumps({"pca": pca}),
                         "solver_params": json.dumps({"mu": 1e-4})})
    return pd.DataFrame(rows)


def test_sweep_averages_over_splits_against_the_setting(tmp_path):
    spec = {"name": "f", "kind": "sweep", "x": "dataset.pca", "y": "error", "panels": "none",
            "series": "label"}
    data = figure_data(runs_frame(), spec, RunStore(tmp_path))
    assert list(data["x"]) == [5, 10]
    np.testing.assert_allclose(data["y"], [15.0, 6.0])  # percent
    np.testing.assert_allclose(data["y_std"], [np.std([10, 20], ddof=1), np.std([5, 7], ddof=1)])
    spec = {**spec, "x": "solver.mu", "y": "fit_time", "panels": "dataset"}
    data = figure_data(runs_frame(), spec, RunStore(tmp_path))
    assert set(data["panel"]) == {"orl_pca5", "orl_pca10"} and set(data["x"]) == {1e-4}


def test_trace_uses_the_first_split_and_skips_missing_traces(tmp_path):
    store = RunStore(tmp_path)
    store.write_trace("t50", {"objective": np.array([3.0, 2.0, 1.5]), "time": [0.1, 0.2, 0.3]})
    store.write_trace("t51", {"objective": np.array([9.0]), "time": [0.1]})  # split 1: unused
    spec = {"name": "g", "kind": "trace", "x": "time", "y": "objective", "panels": "dataset",
            "series": "label"}
    data = figure_data(runs_frame(), spec, store)  # t100 has no trace file: left out
    assert list(data["panel"].unique()) == ["orl_pca5"]
    np.testing.assert_allclose(data["y"], [3.0, 2.0, 1.5])
    np.testing.assert_allclose(data["x"], [0.1, 0.2, 0.3])
    paths = plot_figure(data, spec, tmp_path / "figures")
    assert [p.suffix for p in paths] == [".csv", ".png", ".pdf"]
    assert all(p.stat().st_size > 0 for p in paths)
    assert pd.read_csv(paths[0]).shape == (3, 4)


BASE = {"name": "f", "datasets": [{"name": "wine"}], "solvers": [{"name": "euclidean"}]}


@pytest.mark.parametrize("figure,evaluation,problem", [
    ({"name": "a", "kind": "trace", "x": "iteration", "y": "objective"}, {}, "save_traces"),
    ({"name": "a", "kind": "pie", "x": "dataset.pca", "y": "error"}, {}, "kind"),
    ({"name": "a", "kind": "bar", "x": "dataset.pca", "y": "error"}, {}, "bar chart"),
    ({"name": "a", "kind": "sweep", "x": "pca", "y": "error"}, {}, "dataset.<preprocessing"),
    ({"name": "a", "kind": "sweep", "x": "dataset.pca", "y": "error", "series": "x"}, {},
     "series"),
])
def test_bad_figures_are_refused(figure, evaluation, problem):
    with pytest.raises(ConfigError, match=problem):
        parse_config({**BASE, "figures": [figure], "evaluation": evaluation}, source="t",
                     check_data=False)


def test_bar_groups_by_method_per_panel(tmp_path):
    runs = runs_frame().assign(label=["a", "a", "b", "b"], dataset="wine")
    spec = {"name": "b", "kind": "bar", "x": "label", "y": "error", "panels": "dataset",
            "series": "label"}
    data = figure_data(runs, spec, RunStore(tmp_path))
    assert list(data["x"]) == ["a", "b"] and set(data["panel"]) == {"wine"}
    np.testing.assert_allclose(data["y"], [15.0, 6.0])
    assert plot_figure(data, spec, tmp_path)[1].stat().st_size > 0


def test_series_by_a_solver_parameter(tmp_path):
    runs = runs_frame().assign(solver_params=[json.dumps({"rho": r, "divergence": d}) for r, d in
                                              ((0.1, "f"), (0.1, "f"), (1.0, "v"), (1.0, "v"))])
    spec = {"name": "s", "kind": "sweep", "x": "solver.rho", "y": "error", "panels": "none",
            "series": "solver.divergence"}
    data = figure_data(runs, spec, RunStore(tmp_path))
    assert list(zip(data["series"], data["x"])) == [("f", 0.1), ("v", 1.0)]


@pytest.mark.parametrize("name,message", [
    ("/tmp/x", "must be a plain file name, without '/', '\\' or NUL, got '/tmp/x'"),
    ("../x", "must be a plain file name, without '/', '\\' or NUL, got '../x'"),
    ("a\\b", "must be a plain file name, without '/', '\\' or NUL, got 'a\\\\b'"),
    ("..", "must be a plain file name, other than '.' and '..', got '..'"),
    ("", "must be a non-empty file name, got ''"),
])
def test_figure_names_that_leave_the_folder_are_refused_by_the_config(name, message):
    figure = {"name": name, "kind": "bar", "x": "label", "y": "error"}
    with pytest.raises(ConfigError) as info:
        parse_config({**BASE, "figures": [figure]}, source="t", check_data=False)
    assert str(info.value).endswith(f"figures[0].name: {message}")


@pytest.mark.parametrize("name", ["/tmp/x", "../x", "a\\b", "sub/x"])
def test_figure_names_that_leave_the_folder_are_refused_at_write_time(name, tmp_path):
    from dml_bench.report.figures import write_figures
    from dml_bench.common.safe_write import UnsafeOutputName

    results = tmp_path / "results"
    results.mkdir()
    spec = {"name": name, "kind": "bar", "x": "label", "y": "error", "panels": "dataset",
            "series": "label"}
    runs = runs_frame().assign(label=["a", "a", "b", "b"], dataset="wine")
    data = figure_data(runs, spec, RunStore(results))
    for write in (lambda: plot_figure(data, spec, results / "figures"),
                  lambda: write_figures(results, runs, {"figures": [spec]})):
        with pytest.raises(UnsafeOutputName) as info:
            write()
        assert str(info.value) == (f"figure name {name!r}: must be a plain file name, without "
                                   "'/', '\\' or NUL")
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["results"]


def test_figures_replace_symlinks_and_a_symlinked_figures_folder(tmp_path):
    from dml_bench.report.figures import write_figures

    outside, results = tmp_path / "outside", tmp_path / "results"
    outside.mkdir()
    results.mkdir()
    (outside / "b.png").write_bytes(b"theirs")
    (results / "figures").symlink_to(outside, target_is_directory=True)
    spec = {"name": "b", "kind": "bar", "x": "label", "y": "error", "panels": "dataset",
            "series": "label"}
    runs = runs_frame().assign(label=["a", "a", "b", "b"], dataset="wine")
    paths = write_figures(results, runs, {"figures": [spec]})["b"]
    assert [p.name for p in paths] == ["b.csv", "b.png", "b.pdf"]
    assert not (results / "figures").is_symlink()
    assert [p.name for p in outside.iterdir()] == ["b.png"]
    assert (outside / "b.png").read_bytes() == b"theirs"
    (results / "figures" / "b.png").unlink()
    (results / "figures" / "b.png").symlink_to(outside / "b.png")
    write_figures(results, runs, {"figures": [spec]})
    assert (outside / "b.png").read_bytes() == b"theirs"
    assert (results / "figures" / "b.png").read_bytes()[:4] == b"\x89PNG"


# ------------------------------------------------------------------- labels, legends, bar groups


def _points(ax) -> np.ndarray:
    """Display coordinates of every plotted point of ``ax``: line vertices and bar tops."""
    points = [line.get_xydata() for line in ax.get_lines() if len(line.get_xdata())]
    points += [np.array([[p.get_x() + p.get_width() / 2, p.get_y() + p.get_height()]])
               for p in ax.patches]
    return ax.transData.transform(np.vstack(points)) if points else np.empty((0, 2))


def assert_legend_hides_nothing(fig):
    """The figure's legend lies inside the figure (so it is saved) and outside every axes (so
    it covers no data point, whatever the data)."""
    fig.canvas.draw()
    legends = fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    assert legends, "no legend"
    for legend in legends:
        box = legend.get_window_extent()
        assert fig.bbox.x0 - 1 <= box.x0 and box.x1 <= fig.bbox.x1 + 1, "legend cut off"
        for ax in fig.axes:
            assert not box.overlaps(ax.get_window_extent()), "legend over an axes"
            inside = [box.contains(x, y) for x, y in _points(ax)]
            assert not any(inside), "legend over a data point"


def test_axes_are_labelled_in_words_with_their_units(tmp_path):
    from dml_bench.report.figures import AXIS_LABELS, axis_label, draw_figure

    expected = {("dataset.pca", "fit_time"): ("PCA dimension", "fit time (s)"),
                ("dataset.pca", "error"): ("PCA dimension", "test error (%)"),
                ("solver.mu", "fit_time"): ("mu (solver parameter)", "fit time (s)")}
    for (x, y), labels in expected.items():
        spec = {"name": "f", "kind": "sweep", "x": x, "y": y, "panels": "dataset",
                "series": "label"}
        fig = draw_figure(figure_data(runs_frame(), spec, RunStore(tmp_path)), spec)
        assert {(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes} == {labels}
    # one mapping: the verification and leaderboard figures take their labels from it too
    assert axis_label("accuracy") == AXIS_LABELS["accuracy"] == "verification accuracy (%)"
    assert axis_label("objective_gap") == "objective gap"


def test_the_legend_stands_outside_the_axes_and_covers_no_point(tmp_path):
    from dml_bench.report.figures import draw_figure

    runs = pd.concat([runs_frame(), runs_frame().assign(label="lmnn", error=[0.9, 0.95, 0.99, 1.0],
                                                        task_id=lambda r: r["task_id"] + "b")])
    for panels in ("none", "dataset"):
        spec = {"name": "f", "kind": "sweep", "x": "dataset.pca", "y": "error", "panels": panels,
                "series": "label", "title": "a title"}
        fig = draw_figure(figure_data(runs, spec, RunStore(tmp_path)), spec)
        assert [t.get_text() for t in fig.legends[0].get_texts()] == ["dml", "LMNN"]
        assert_legend_hides_nothing(fig)
    spec = {"name": "f", "kind": "bar", "x": "dataset", "y": "error", "panels": "none",
            "series": "label"}
    assert_legend_hides_nothing(draw_figure(figure_data(runs, spec, RunStore(tmp_path)), spec))


def test_verification_figures_keep_their_legend_off_the_curves(tmp_path, monkeypatch):
    from dml_bench.report import verification

    drawn = []
    monkeypatch.setattr(verification, "save_figure", lambda fig, path, **kw: drawn.append(fig))
    roc = pd.DataFrame({"dataset": "d", "label": ["a"] * 3 + ["b"] * 3,
                        "fpr": [0, 0.5, 1] * 2, "tpr": [0, 0.9, 1, 0, 0.6, 1]})
    summary = pd.DataFrame({"label": ["a", "b", "a", "b"], "auc": [0.9, 0.7, 0.9, 0.7],
                            "sqrt": [False] * 4, "pca": [10, 10, 20, 20],
                            "accuracy_mean": [80.0, 75, 85, 78], "accuracy_sem": [1.0] * 4})
    verification.plot_roc(roc, summary, tmp_path / "roc.png", "d")
    verification.plot_accuracy_vs_pca(summary, tmp_path / "acc.png")
    for fig in drawn:
        assert_legend_hides_nothing(fig)
    assert drawn[1].axes[0].get_xlabel() == "PCA dimension"


def test_a_bar_chart_draws_one_bar_per_series_in_each_x_group(tmp_path):
    """``{kind: bar, x: dataset, series: label}``: two solvers on two data sets are four bars,
    each the mean of its own (data set, solver) runs, side by side in their data set's group."""
    from dml_bench.report.figures import draw_figure

    rows = [{"task_id": f"{d}{s}{i}", "dataset": d, "split": i, "label": s, "solver": s,
             "error": e, "fit_time": 1.0, "preprocessing": "{}", "solver_params": "{}"}
            for d, s, errors in (("wine", "dml_eig", [0.02, 0.04]), ("wine", "lmnn", [0.10, 0.20]),
                                 ("iris", "dml_eig", [0.05, 0.07]), ("iris", "lmnn", [0.3, 0.5]))
            for i, e in enumerate(errors)]
    runs = pd.DataFrame(rows)
    spec = {"name": "b", "kind": "bar", "x": "dataset", "y": "error", "panels": "none",
            "series": "label"}
    data = figure_data(runs, spec, RunStore(tmp_path))
    expected = (runs.assign(error=runs["error"] * 100).groupby(["dataset", "label"])["error"]
                .agg(["mean", "std"]))
    got = data.set_index(["x", "series"]).sort_index()
    assert list(got.index) == list(expected.index)  # 4 bars, not 2 averaged ones
    np.testing.assert_allclose(got["y"], expected["mean"])
    np.testing.assert_allclose(got["y_std"], expected["std"])
    ax = draw_figure(data, spec).axes[0]
    ticks = {t.get_text(): t.get_position()[0] for t in ax.get_xticklabels()}
    assert set(ticks) == {"wine", "iris"}
    bars = {}
    for container in ax.containers:
        label = container.get_label()
        for patch in getattr(container, "patches", []):
            centre = patch.get_x() + patch.get_width() / 2
            group = min(ticks, key=lambda t: abs(ticks[t] - centre))
            assert abs(ticks[group] - centre) < 0.5  # within its data set's group
            bars[(group, label)] = (patch.get_height(), patch.get_facecolor())
    named = {"dml_eig": "DML-eig", "lmnn": "LMNN"}  # the legend names the methods
    assert {k: v[0] for k, v in bars.items()} == pytest.approx(
        {(d, named[s]): m for (d, s), m in expected["mean"].items()})
    assert bars[("wine", "DML-eig")][1] == bars[("iris", "DML-eig")][1]  # a series, a colour
    assert bars[("wine", "DML-eig")][1] != bars[("wine", "LMNN")][1]


# ------------------------------------------------------------------------- methods by name


def test_every_registered_solver_has_a_printed_name():
    from dml_bench.report.tables import SOLVER_NAMES
    from dml_bench.solvers import SOLVERS

    assert set(SOLVERS) <= set(SOLVER_NAMES)
    assert len(set(SOLVER_NAMES.values())) == len(SOLVER_NAMES)  # no two alike


@pytest.mark.parametrize("label,solver,shown", [
    ("dml_eig", "dml_eig", "DML-eig"), ("sgd_incsvd", "sgd_incsvd", "SGD-IncSVD"),
    ("lmnn_eig", "lmnn_eig", "LMNN-eig"), ("euclidean", "euclidean", "Euclidean"),
    ("frobmetric", "frobmetric", "FrobMetric"), ("sdpmetric", "sdpmetric", "SDPMetric"),
    ("boostmetric", "boostmetric", "BoostMetric"), ("xing", "xing", "Xing (MMC)"),
    ("itml", "itml", "ITML"), ("lmnn", "lmnn", "LMNN"),
    ("mdml_hf", "mdml", "mdml_hf"),  # the config's own label, as given
    ("lmnn", "lmnn_eig", "lmnn"),  # a label that is another solver's name: as given
    ("my_plugin", "my_plugin", "my_plugin"),  # not listed: its registry name
    ("dml_eig", None, "DML-eig"), ("DML-eig (rho 1)", None, "DML-eig (rho 1)"),
])
def test_a_method_prints_by_name_unless_the_config_labels_it(label, solver, shown):
    from dml_bench.report.tables import method_name

    assert method_name(label, solver) == shown


def test_two_methods_that_would_print_alike_keep_their_labels():
    from dml_bench.report.tables import method_names

    assert method_names([("dml_eig", "dml_eig"), ("DML-eig", "dml_eig"), ("itml", "itml")]) == {
        "dml_eig": "dml_eig", "DML-eig": "DML-eig", "itml": "ITML"}


def _legend(fig) -> list[str]:
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def test_figures_print_methods_by_name_and_their_csv_keeps_the_labels(tmp_path):
    """Legends, panel titles and bar ticks name a method as the papers do where the config
    gives it no label; a label it gives is printed as given; ``figures/<name>.csv`` keeps the
    labels of ``runs.csv``."""
    from dml_bench.report.figures import draw_figure, write_figures

    rows = [{"task_id": f"{d}{s}{i}", "dataset": d, "split": i, "label": lab, "solver": s,
             "error": 0.1 + 0.01 * i, "fit_time": 1.0 + i, "preprocessing": "{}",
             "solver_params": "{}"}
            for d in ("wine", "iris") for lab, s in (("euclidean", "euclidean"),
                                                     ("sgd_incsvd", "sgd_incsvd"),
                                                     ("mdml_hf", "mdml"))
            for i in range(2)]
    runs = pd.DataFrame(rows)
    drawn = {}
    specs = [{"name": "series", "kind": "bar", "x": "dataset", "y": "error", "panels": "none",
              "series": "label"},
             {"name": "ticks", "kind": "bar", "x": "label", "y": "error", "panels": "dataset",
              "series": "label"},
             {"name": "panels", "kind": "bar", "x": "dataset", "y": "fit_time",
              "panels": "solver", "series": "dataset"}]
    for spec in specs:
        drawn[spec["name"]] = draw_figure(figure_data(runs, spec, RunStore(tmp_path)), spec,
                                          {"euclidean": "Euclidean", "sgd_incsvd": "SGD-IncSVD",
                                           "mdml_hf": "mdml_hf"})
    assert _legend(drawn["series"]) == ["Euclidean", "SGD-IncSVD", "mdml_hf"]
    ticks = [t.get_text() for t in drawn["ticks"].axes[0].get_xticklabels()]
    assert ticks == ["Euclidean", "SGD-IncSVD", "mdml_hf"]
    assert [ax.get_title() for ax in drawn["panels"].axes] == ["Euclidean", "SGD-IncSVD", "MDML"]
    # the same through the report: names from runs.csv's (label, solver) pairs
    written = write_figures(tmp_path, runs, {"figures": specs[:1]})["series"]
    csv = pd.read_csv(written[0])
    assert sorted(set(csv["series"])) == ["euclidean", "mdml_hf", "sgd_incsvd"]


def test_the_written_figure_legend_names_the_methods(tmp_path, monkeypatch):
    from dml_bench.report import figures

    seen = []
    monkeypatch.setattr(figures, "save_figure",
                        lambda fig, out_dir, name: seen.append(_legend(fig)) or {})
    runs = runs_frame().assign(label=["dml_eig", "dml_eig", "lmnn_eig", "lmnn_eig"],
                               solver=["dml_eig", "dml_eig", "lmnn_eig", "lmnn_eig"])
    spec = {"name": "w", "kind": "sweep", "x": "dataset.pca", "y": "error", "panels": "none",
            "series": "label"}
    figures.write_figures(tmp_path, runs, {"figures": [spec]})
    assert seen == [["DML-eig", "LMNN-eig"]]


# ------------------------------------------------ figures that would average what they hide


def _check_figure(figure: dict, datasets=None, solvers=None, save_traces: bool = False):
    """``figure`` read by the config's ``_read_figures`` against an experiment's data sets and
    solver entries (two sets and two solvers unless given)."""
    from dml_bench.experiment.config import _read_figures
    from dml_bench.experiment.schema import Reader

    exp = parse_config({
        "name": "f", "datasets": datasets or [{"name": "wine"}, {"name": "iris"}],
        "solvers": solvers or [{"name": "euclidean"}, {"name": "lmnn"}]},
        source="t", check_data=False)
    return _read_figures(Reader("t"), [figure], {"save_traces": save_traces}, exp.datasets,
                         exp.solvers)


PCA_SETS = [{"name": "orl_faces", "label": f"orl_pca{n}", "pca": n} for n in (20, 40)]
RHO_SOLVERS = [{"name": "mdml", "label": f"{d}_rho{r}", "params": {"divergence": d, "rho": r}}
               for d in ("frobenius", "von_neumann") for r in (0.01, 0.1)]


@pytest.mark.parametrize("figure,datasets,solvers,message", [
    ({"kind": "bar", "x": "dataset", "y": "error", "series": "none"}, None, None,
     "the bar chart would average error over the solver labels euclidean, lmnn in one bar, as "
     "neither panels, series nor x shows them: set panels or series to label"),
    ({"kind": "bar", "x": "label", "y": "error", "panels": "none"}, None, None,
     "the bar chart would average error over the data sets wine, iris in one bar, as neither "
     "panels, series nor x shows them: set panels or series to dataset"),
    ({"kind": "sweep", "x": "dataset.pca", "y": "fit_time", "panels": "none", "series": "none"},
     PCA_SETS, None, "the sweep would average fit_time over the solver labels euclidean, lmnn "
     "in one point, as neither panels, series nor x shows them: set panels or series to label"),
    ({"kind": "sweep", "x": "solver.rho", "y": "error", "panels": "none",
      "series": "solver.divergence"}, None, RHO_SOLVERS,
     "the sweep would average error over the data sets wine, iris in one point, as neither "
     "panels, series nor x shows them: set panels or series to dataset"),
    ({"kind": "sweep", "x": "solver.rho", "y": "error", "panels": "dataset", "series": "none"},
     None, RHO_SOLVERS, "would average error over the solver labels frobenius_rho0.01, "
     "von_neumann_rho0.01 in one point"),
    ({"kind": "bar", "x": "solver", "y": "error", "panels": "dataset", "series": "solver"},
     None, [{"name": "lmnn"}, {"name": "lmnn", "label": "lmnn_b", "params": {"mu": 0.25}}],
     "would average error over the solver labels lmnn, lmnn_b in one bar"),
])
def test_a_figure_that_would_average_over_what_it_does_not_show_is_refused(
        figure, datasets, solvers, message):
    with pytest.raises(ConfigError) as info:
        _check_figure({"name": "a", **figure}, datasets, solvers)
    text = str(info.value)
    assert "\n" not in text and text.startswith("t: figures[0]: ") and message in text


@pytest.mark.parametrize("figure,datasets,solvers", [
    ({"kind": "bar", "x": "dataset", "y": "error", "series": "label"}, None, None),
    ({"kind": "bar", "x": "label", "y": "error", "panels": "dataset"}, None, None),
    ({"kind": "bar", "x": "none", "y": "error", "panels": "dataset", "series": "label"}, None,
     None),
    # one solver: nothing to tell apart across series
    ({"kind": "bar", "x": "dataset", "y": "error", "series": "none"}, None, [{"name": "lmnn"}]),
    # the PCA dimension tells the data sets apart (Ying & Li 2012, Fig. 1)
    ({"kind": "sweep", "x": "dataset.pca", "y": "error", "panels": "none", "series": "label"},
     PCA_SETS, None),
    # divergence and rho tell the solver labels apart (Kunapuli & Shavlik 2012, Fig. 4)
    ({"kind": "sweep", "x": "solver.rho", "y": "error", "panels": "dataset",
      "series": "solver.divergence"}, None, RHO_SOLVERS),
    # a parameter at its default is the value runs.csv records: lmnn's mu 0.5 against 0.25
    ({"kind": "sweep", "x": "solver.mu", "y": "error", "panels": "dataset", "series": "none"},
     None, [{"name": "lmnn"}, {"name": "lmnn", "label": "lmnn_b", "params": {"mu": 0.25}}]),
    # a sweep draws no point where x is missing (euclidean has no rho)
    ({"kind": "sweep", "x": "solver.rho", "y": "error", "panels": "dataset",
      "series": "solver.divergence"}, None,
     RHO_SOLVERS + [{"name": "euclidean"}, {"name": "euclidean", "label": "e2"}]),
    # a trace draws the first split of each run, one line each: not an average
    ({"kind": "trace", "x": "iteration", "y": "objective", "panels": "none", "series": "none"},
     None, None),
])
def test_a_figure_that_shows_every_run_it_draws_is_accepted(figure, datasets, solvers):
    trace = figure["kind"] == "trace"
    assert len(_check_figure({"name": "a", **figure}, datasets, solvers, save_traces=trace)) == 1


def test_the_committed_figure_configs_pass_the_check():
    from dml_bench.experiment.config import _read_figures, load_config
    from dml_bench.experiment.schema import Reader

    configs = sorted((Path(__file__).resolve().parent.parent / "dml_bench" / "configs")
                     .glob("*.yaml"))
    checked = 0
    for path in configs:
        raw = yaml.safe_load(path.read_text())
        if not raw.get("figures") or "leaderboard" in raw:
            continue
        exp = load_config(path, check_data=False)
        evaluation = {"save_traces": exp.evaluation.save_traces}
        _read_figures(Reader(str(path)), raw["figures"], evaluation, exp.datasets, exp.solvers)
        checked += 1
    assert checked >= 5


def test_a_trace_figure_without_its_traces_is_kept_not_emptied(tmp_path):
    """A clone holds a trace figure's files but not ``traces/``: reporting again keeps them."""
    import shutil

    from dml_bench.report.kind import write_report

    folder = tmp_path / "zhang2017_fig1"
    shutil.copytree(Path(__file__).resolve().parents[1] / "results" / "zhang2017_fig1", folder)
    before = (folder / "figures" / "fig1_rank.csv").read_bytes()
    assert not (folder / "traces").exists() and len(before.splitlines()) > 100
    with pytest.warns(Warning, match="no trace of .* is here; its files are kept"):
        write_report(folder)
    assert (folder / "figures" / "fig1_rank.csv").read_bytes() == before
