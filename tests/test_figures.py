"""Figures declared in configs: the plotted numbers (sweeps over settings, per-iteration traces),
the files written, and the config checks."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

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
