"""Plug-in solvers and datasets (entry points, ``module:Class``) and users' data files.

A tiny plug-in distribution is laid out in tmp_path (a module, and a ``*.dist-info`` folder with
``METADATA`` and ``entry_points.txt``, as ``pip install`` leaves it), found by importlib.metadata
on ``PYTHONPATH`` / ``sys.path`` only: nothing is installed into the environment. References:
scikit-learn's own datasets and k-NN, and the built-in Euclidean solver on z-scored data.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from sklearn.datasets import dump_svmlight_file, load_iris, load_wine

from dml_bench.cli import main
from dml_bench.config import ConfigError, parse_config
from dml_bench.datasets import DATASETS, DataNotAvailable, DataParseError, load_dataset
from dml_bench.datasets.spec import as_dataset_spec
from dml_bench.registry import PluginError, UnknownNameError, check_solver
from dml_bench.solvers import SOLVERS

pytestmark = pytest.mark.usefixtures("tmp_cache")

MODULE = "dmlb_demo_plugin"

PLUGIN_SOURCE = '''
"""A plug-in for dml-bench that does not import dml_bench."""
import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.datasets import load_iris


class InverseStd(TransformerMixin, BaseEstimator):
    """The diagonal metric 1 / std per feature: z-scoring learned from the training part."""

    constraint_kind = "labels"

    def __init__(self, floor=1e-12):
        self.floor = floor

    def fit(self, X, y=None, constraints=None):
        self.components_ = np.diag(1.0 / np.maximum(np.std(X, axis=0), self.floor))
        self.n_iter_ = 0
        return self

    def transform(self, X):
        return np.asarray(X) @ self.components_.T


class NotASolver:
    constraint_kind = "quadruplets"

    def fit(self, X, y):
        return self


def iris():
    data = load_iris()
    return data.data, data.target


def not_a_dataset():
    return [1, 2, 3]


def failing_dataset():
    raise RuntimeError("the plug-in's server is down")
'''

ENTRY_POINTS = f"""
[dml_bench.solvers]
inverse_std = {MODULE}:InverseStd
not_a_solver = {MODULE}:NotASolver
broken_solver = dmlb_no_such_module:Thing

[dml_bench.datasets]
demo_iris = {MODULE}:iris
not_a_dataset = {MODULE}:not_a_dataset
failing_dataset = {MODULE}:failing_dataset
broken_dataset = dmlb_no_such_module:data
"""


@pytest.fixture
def plugin_site(tmp_path) -> Path:
    """A folder holding the plug-in distribution, as a site-packages folder would."""
    site = tmp_path / "site"
    site.mkdir()
    (site / f"{MODULE}.py").write_text(PLUGIN_SOURCE)
    info = site / f"{MODULE}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {MODULE}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return site


@pytest.fixture
def plugins(plugin_site, monkeypatch) -> Path:
    """The plug-in on ``sys.path`` of this process, the registries' resolved plug-ins reset."""
    monkeypatch.syspath_prepend(str(plugin_site))
    for registry in (SOLVERS, DATASETS):
        monkeypatch.setattr(registry, "_plugins", {})
    yield plugin_site
    sys.modules.pop(MODULE, None)


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def one_line_error(result, code: int = 2) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    message = result.stderr.strip()
    assert message.startswith("error: ") and "\n" not in message, message
    return message


def write_config(tmp_path: Path, text: str, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


# --------------------------------------------------------------------------- through `dmlbench run`


def test_plugin_solver_and_dataset_run_through_dmlbench_run(plugin_site, tmp_path):
    """Entry-point solver and dataset, and a ``module:Class`` reference, in a `dmlbench run`
    subprocess that finds the plug-in on PYTHONPATH only. InverseStd on raw data is z-scoring,
    so its 3-NN errors equal the built-in Euclidean solver's on z-scored data, split by split."""
    cfg = write_config(tmp_path, f"""\
        name: plugins
        datasets:
          - {{name: demo_iris, normalize: none, solvers: [inverse_std, by_reference]}}
          - {{name: demo_iris, label: iris_zscore, normalize: zscore, solvers: [euclidean]}}
        solvers:
          - inverse_std
          - {{name: "{MODULE}:InverseStd", label: by_reference}}
          - euclidean
        split: {{n_splits: 3}}
        """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_site), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", "from dml_bench.cli import main; main()", "run",
                           str(cfg), "--results-dir", str(tmp_path / "results")],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "plugins: 9 tasks run, 0 already done, 0 failed, 0 dataset×solver skipped" in done.stdout
    runs = pd.read_csv(tmp_path / "results" / "plugins" / "runs.csv")
    assert len(runs) == 9
    assert set(runs["solver"]) == {"inverse_std", f"{MODULE}:InverseStd", "euclidean"}
    iris = load_iris()
    assert (runs["n_train"] + runs["n_test"] == len(iris.target)).all()
    assert (runs["n_features"] == iris.data.shape[1]).all()
    error = runs.pivot_table(index="split", columns="label", values="error")
    assert error["inverse_std"].tolist() == error["euclidean"].tolist()
    assert error["by_reference"].tolist() == error["euclidean"].tolist()


def test_file_datasets_run_through_dmlbench_run(tmp_path, monkeypatch):
    """The same data as CSV, ARFF and LIBSVM files gives the same rows as the bundled `wine`
    named under the files' names (the splits derive from the dataset's name)."""
    wine = load_wine()
    frame = pd.DataFrame(wine.data, columns=[f"f{i}" for i in range(13)]).assign(kind=wine.target)
    frame.to_csv(tmp_path / "wine.csv", index=False)
    write_arff(tmp_path / "wine_arff.arff", wine.data, wine.target)
    dump_svmlight_file(wine.data, wine.target, str(tmp_path / "wine_svm.libsvm"))
    monkeypatch.chdir(tmp_path)
    cfg = write_config(tmp_path, """\
        name: files
        datasets:
          - {path: wine.csv, label_column: kind}
          - {path: wine_arff.arff, label_column: class, normalize: minmax}
          - {path: wine_svm.libsvm, dtype: float32}
        solvers: [euclidean]
        split: {n_splits: 2}
        execution: {backend: sequential}
        """)
    result = invoke("run", cfg, "--results-dir", tmp_path / "results")
    assert result.exit_code == 0, result.output
    assert "files: 6 tasks run, 0 already done, 0 failed, 0 dataset×solver skipped" in result.stdout
    runs = pd.read_csv(tmp_path / "results" / "files" / "runs.csv")
    assert sorted(runs["dataset"].unique()) == ["wine", "wine_arff", "wine_svm"]  # file stems
    assert (runs["n_train"] + runs["n_test"] == 178).all() and (runs["n_features"] == 13).all()
    prep = runs.set_index("dataset")["preprocessing"]
    assert '"normalize": "minmax"' in prep["wine_arff"].iloc[0]
    assert '"dtype": "float32"' in prep["wine_svm"].iloc[0]
    for stem, name in [("wine", "file:wine.csv?label_column=kind"),
                       ("wine_arff", "file:wine_arff.arff?label_column=class"),
                       ("wine_svm", "file:wine_svm.libsvm")]:
        X, y, meta = load_dataset(name)
        np.testing.assert_allclose(X, wine.data, rtol=1e-15)  # repr() round-trips floats
        assert (y == wine.target).all() and meta["source"] == "file"


def write_arff(path: Path, X, y, nominal_feature: list | None = None):
    """``X`` as REAL attributes (plus an optional nominal one) and ``y`` as nominal ``class``."""
    lines = ["@RELATION demo"] + [f"@ATTRIBUTE f{i} REAL" for i in range(X.shape[1])]
    if nominal_feature is not None:
        lines.append("@ATTRIBUTE colour {red,blue}")
    lines += ["@ATTRIBUTE class {" + ",".join(f"c{c}" for c in sorted(set(y))) + "}", "@DATA"]
    for i, (row, label) in enumerate(zip(X, y)):
        extra = [nominal_feature[i]] if nominal_feature is not None else []
        lines.append(",".join([*(repr(float(v)) for v in row), *extra, f"c{label}"]))
    path.write_text("\n".join(lines) + "\n")


# --------------------------------------------------------------------------- lookups in-process


def test_entry_points_resolve_lazily_to_checked_objects(plugins):
    assert "inverse_std" in SOLVERS and "demo_iris" in DATASETS  # names known, nothing loaded
    assert MODULE not in sys.modules
    cls = SOLVERS["inverse_std"]
    assert cls.__name__ == "InverseStd" and SOLVERS[f"{MODULE}:InverseStd"] is cls
    assert SOLVERS["inverse_std"] is cls  # resolved once
    X, y, meta = load_dataset("demo_iris")
    iris = load_iris()
    assert (X == iris.data).all() and (y == iris.target).all()
    assert meta["n_classes"] == 3 and meta["source"] == "bundled"
    assert list(SOLVERS) == list(SOLVERS._items)  # iteration: the built-ins only


def test_dataset_spec_contract():
    spec = DATASETS["wine"]
    renamed = as_dataset_spec("my_wine", spec)
    assert renamed.name == "my_wine" and renamed.n_samples == 178
    assert as_dataset_spec("f", lambda: spec).name == "f"
    arrays = as_dataset_spec("arr", lambda: (np.eye(3), ["a", "b", "a"]))
    assert (arrays.n_samples, arrays.n_features, arrays.n_classes) == (3, 3, 2)


def test_builtin_solver_classes_pass_the_plugin_check():
    for name in SOLVERS:
        assert check_solver(name, SOLVERS[name]) is SOLVERS[name]


# --------------------------------------------------------------------------- one-line errors


@pytest.mark.parametrize("solver, expected", [
    ("inverse_stdd", "solvers[0].name: unknown solver 'inverse_stdd'. Did you mean 'inverse_std'?"),
    ("broken_solver", "solvers[0].name: solver 'broken_solver' (entry point broken_solver = "
                      "dmlb_no_such_module:Thing (from dmlb_demo_plugin 0.1) of group "
                      "dml_bench.solvers): cannot load it: ModuleNotFoundError: No module named "
                      "'dmlb_no_such_module'"),
    ("not_a_solver", "dmlb_demo_plugin.NotASolver is not a scikit-learn-style solver: has no "
                     "get_params() method; has no transform() method; its fit() takes no "
                     "`constraints` argument; its constraint_kind is 'quadruplets', not one of "
                     "pairs, triplets, labels, none"),
    ("dmlb_no_such_module:Thing", "solver 'dmlb_no_such_module:Thing': cannot import module "
                                  "'dmlb_no_such_module': ModuleNotFoundError"),
    (f"{MODULE}:Missing", f"module '{MODULE}' has no attribute 'Missing'"),
    (f"{MODULE}:iris", "is a function, not a solver class"),
])
def test_bad_plugin_solvers_are_one_line_config_errors(plugins, tmp_path, solver, expected):
    cfg = write_config(tmp_path, f"name: bad\ndatasets: [wine]\nsolvers: ['{solver}']\n")
    message = one_line_error(invoke("run", cfg, "--results-dir", tmp_path / "results"))
    assert expected in message
    assert message.startswith(f"error: {cfg}: solvers[0].name: ")


def test_unknown_name_lists_the_plugins(plugins):
    with pytest.raises(UnknownNameError, match="inverse_std") as info:
        SOLVERS["no_such_solver"]
    assert "lmnn" in str(info.value) and "broken_solver" in str(info.value)


@pytest.mark.parametrize("dataset, code, expected", [
    ("not_a_dataset", 2, "dataset 'not_a_dataset' (entry point not_a_dataset = "
                         "dmlb_demo_plugin:not_a_dataset (from dmlb_demo_plugin 0.1) of group "
                         "dml_bench.datasets): gives a list, not a DatasetSpec or a pair (X, y)"),
])
def test_bad_plugin_dataset_is_one_line(plugins, tmp_path, dataset, code, expected):
    cfg = write_config(tmp_path, f"name: bad\ndatasets: [{dataset}]\nsolvers: [euclidean]\n")
    assert expected in one_line_error(invoke("run", cfg, "--results-dir", tmp_path / "results"), code)


def test_failing_plugin_dataset_is_skipped_with_its_reason(plugins, tmp_path):
    cfg = write_config(tmp_path, "name: bad\ndatasets: [failing_dataset, wine]\nsolvers: [euclidean]\n"
                                 "split: {n_splits: 1}\nexecution: {backend: sequential}\n")
    result = invoke("run", cfg, "--results-dir", tmp_path / "results")
    assert result.exit_code == 0, result.output
    assert "1 dataset×solver skipped" in result.stdout
    assert ("dataset 'failing_dataset' (entry point failing_dataset = dmlb_demo_plugin:failing_dataset"
            in result.output)
    assert "calling it failed: RuntimeError: the plug-in's server is down" in result.output


@pytest.fixture
def data_files(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    wine = load_wine()
    pd.DataFrame(wine.data[:, :3], columns=["a", "b", "c"]).assign(kind=wine.target).to_csv(
        "ok.csv", index=False)
    pd.DataFrame({"a": [1.0, 2.0, 3.0], "colour": ["red", "blue", "red"], "kind": [0, 1, 0]}).to_csv(
        "text.csv", index=False)
    Path("garbage.arff").write_text("this is not ARFF\n")
    Path("garbage.libsvm").write_text("1 1:2 oops\n")
    return tmp_path


@pytest.mark.parametrize("entry, where, expected", [
    ("{path: missing.csv, label_column: kind}", "datasets[0].path", "file missing.csv not found"),
    ("{path: ok.csv, label_column: nope}", "datasets[0]",
     "dataset 'ok' (ok.csv): has no column 'nope' (columns: a, b, c, kind)"),
    ("{path: ok.csv}", "datasets[0]", "a .csv file needs `label_column:`"),
    ("{path: garbage.libsvm, label_column: kind}", "datasets[0].label_column",
     "a LIBSVM file holds its labels in each line's first field: drop label_column"),
    ("{path: ok.xlsx, label_column: kind}", "datasets[0].path", "unknown file type '.xlsx'"),
    ("{path: text.csv, label_column: kind}", "datasets[0]",
     "feature column(s) colour hold text, not numbers"),
    ("{path: garbage.arff, label_column: class}", "datasets[0]",
     "dataset 'garbage' (garbage.arff): cannot parse it as ARFF: "),
    ("{path: garbage.libsvm}", "datasets[0]",
     "dataset 'garbage' (garbage.libsvm): cannot parse it as LIBSVM: ValueError"),
    ("{path: ok.csv, openml: 61, label_column: kind}", "datasets[0]", "give one of `path:`"),
    ("{path: ok.csv, label_column: kind, pca: 0}", "datasets[0].pca", "must be at least 1"),
    ("{path: ok.csv, label_column: kind, normalise: none}", "datasets[0].normalise",
     "unknown key (did you mean 'normalize'?)"),
])
def test_bad_data_files_are_one_line_config_errors(data_files, entry, where, expected):
    cfg = write_config(data_files, f"name: bad\ndatasets: [{entry}]\nsolvers: [euclidean]\n")
    message = one_line_error(invoke("run", cfg, "--results-dir", data_files / "results"))
    assert message.startswith(f"error: {cfg}: {where}: "), message
    assert expected in message


def test_file_loading_errors_are_data_errors(data_files):
    with pytest.raises(DataNotAvailable, match=r"^dataset 'gone' \(gone.csv\): the file does not exist"):
        load_dataset("file:gone.csv?label_column=kind")
    with pytest.raises(DataParseError, match="has no column 'zz'"):
        load_dataset("file:ok.csv?label_column=zz")


def test_nominal_features_are_one_hot_and_missing_rows_dropped(tmp_path):
    X = np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 6.0], [7.0, 8.0]])
    write_arff(tmp_path / "mixed.arff", X, [0, 1, 1, 1], nominal_feature=["red", "blue", "?", "blue"])
    X_read, y, meta = load_dataset(f"file:{tmp_path / 'mixed.arff'}?label_column=class")
    # rows 1 (missing f1) and 2 (missing colour) dropped; colour → (blue, red) indicator columns
    np.testing.assert_array_equal(X_read, [[1.0, 2.0, 0.0, 1.0], [7.0, 8.0, 1.0, 0.0]])
    assert y.tolist() == [0, 1] and meta["class_names"] == ["c0", "c1"] and meta["n_dropped"] == 2


def test_config_round_trips_a_file_dataset(data_files):
    exp = parse_config({"name": "rt", "datasets": [{"path": "ok.csv", "label_column": "kind",
                                                    "normalize": "none"}],
                        "solvers": ["euclidean"]})
    (entry,) = exp.datasets
    assert entry.name == "file:ok.csv?label_column=kind" and entry.label == "ok"
    assert entry.preprocessing.normalize == "none"
    again = parse_config(exp.to_dict() | {"paper_table": None})
    assert again.datasets == exp.datasets
    with pytest.raises(ConfigError, match="datasets.0..openml: expected an OpenML dataset id"):
        parse_config({"name": "x", "datasets": [{"openml": True}], "solvers": ["euclidean"]})


def test_plugin_error_is_a_one_line_dmlbench_error():
    with pytest.raises(PluginError) as info:
        SOLVERS["dmlb_no_such_module.sub:Thing"]
    assert "\n" not in str(info.value)


def test_an_entry_point_declared_twice_is_refused(plugins):
    other = plugins / "dmlb_other_plugin-1.0.dist-info"
    other.mkdir()
    (other / "METADATA").write_text("Metadata-Version: 2.1\nName: dmlb_other_plugin\nVersion: 1.0\n")
    (other / "entry_points.txt").write_text("[dml_bench.solvers]\ninverse_std = dmlb_other:Other\n")
    with pytest.raises(PluginError, match=r"^solver 'inverse_std': entry point of group "
                                          r"dml_bench.solvers is declared more than once: ") as info:
        SOLVERS["inverse_std"]
    assert "dmlb_other:Other (from dmlb_other_plugin 1.0)" in str(info.value)
    assert f"{MODULE}:InverseStd (from {MODULE} 0.1)" in str(info.value)


# --------------------------------------------------------------------------- listings


def test_solvers_lists_the_plugins_with_their_source(plugins):
    """`dmlbench solvers`: the built-ins, then each entry point marked as a plug-in with its
    source; one that cannot be used is one line with the reason (no traceback)."""
    other = plugins / "dmlb_other_plugin-1.0.dist-info"
    other.mkdir()
    (other / "METADATA").write_text("Metadata-Version: 2.1\nName: dmlb_other_plugin\nVersion: 1.0\n")
    (other / "entry_points.txt").write_text("[dml_bench.solvers]\nlmnn = dmlb_other:Lmnn\n"
                                            "inverse_std = dmlb_other:Other\n")
    result = invoke("solvers")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    lines = result.stdout.splitlines()
    heads = [line.split(" ")[0] for line in lines if not line.startswith(" ")]
    assert heads[:len(SOLVERS)] == list(SOLVERS)  # the built-ins first, as before
    dist = f"(from {MODULE} 0.1)"
    plugin_lines = [line for line in lines if " plug-in " in line]
    assert plugin_lines == [
        f"broken_solver plug-in broken_solver = dmlb_no_such_module:Thing {dist} — cannot be "
        "used: cannot load it: ModuleNotFoundError: No module named 'dmlb_no_such_module'",
        f"inverse_std plug-in inverse_std = {MODULE}:InverseStd {dist}; dmlb_other:Other (from "
        "dmlb_other_plugin 1.0) — cannot be used: entry point of group dml_bench.solvers is "
        f"declared more than once: {MODULE}:InverseStd {dist}; dmlb_other:Other (from "
        "dmlb_other_plugin 1.0); uninstall one",
        "lmnn plug-in lmnn = dmlb_other:Lmnn (from dmlb_other_plugin 1.0) — cannot be used: not "
        "used: the built-in solver 'lmnn' has this name",
        f"not_a_solver plug-in not_a_solver = {MODULE}:NotASolver {dist} — cannot be used: "
        f"{MODULE}.NotASolver is not a scikit-learn-style solver: has no get_params() method; "
        "has no transform() method; its fit() takes no `constraints` argument; its "
        "constraint_kind is 'quadruplets', not one of pairs, triplets, labels, none (see "
        "dml_bench.solvers.base.MetricLearner)",
    ]
    assert SOLVERS["lmnn"].__module__.startswith("dml_bench.")  # the built-in still wins


def test_a_usable_plugin_solver_is_listed_with_its_parameters(plugins):
    result = invoke("solvers")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    at = lines.index(f"inverse_std [labels] plug-in inverse_std = {MODULE}:InverseStd (from "
                     f"{MODULE} 0.1) — The diagonal metric 1 / std per feature: z-scoring "
                     "learned from the training part.")
    assert lines[at + 1] == "    floor=1e-12"


def test_datasets_lists_the_plugins_without_calling_them(plugins):
    """`dmlbench datasets`: plug-in functions are listed, not called (failing_dataset would
    fail), and a plug-in whose module does not import is one line with the reason."""
    result = invoke("datasets")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    lines = result.stdout.splitlines()
    assert [line.split(" ")[0] for line in lines[1:len(DATASETS) + 1]] == list(DATASETS)
    rows = {line.split(" ")[0]: " ".join(line.split()[1:]) for line in lines[len(DATASETS) + 1:]}
    assert rows == {
        "broken_dataset": "? ? plug-in broken_dataset = dmlb_no_such_module:data (from "
                          f"{MODULE} 0.1): cannot be used: cannot load it: ModuleNotFoundError: "
                          "No module named 'dmlb_no_such_module'",
        **{name: f"? ? plug-in {name} = {MODULE}:{function} (from {MODULE} 0.1): called when "
                 "a config names it" for name, function in [("demo_iris", "iris"),
                                                            ("failing_dataset", "failing_dataset"),
                                                            ("not_a_dataset", "not_a_dataset")]},
    }
