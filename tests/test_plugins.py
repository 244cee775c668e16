"""Plug-in solvers and datasets (entry points, ``module:Class``), the user's consent to import
them, and users' data files.

A tiny plug-in distribution is laid out in tmp_path (a module, and a ``*.dist-info`` folder with
``METADATA`` and ``entry_points.txt``, as ``pip install`` leaves it), found by importlib.metadata
on ``PYTHONPATH`` / ``sys.path`` only: nothing is installed into the environment. References:
scikit-learn's own datasets and k-NN, and the built-in Euclidean solver on z-scored data. Every
test starts without consent (``DMLBENCH_ALLOW_PLUGINS=0``, a settings file that does not exist);
the ``plugins`` fixture gives it.
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
from dml_bench.experiment.config import parse_config
from dml_bench.experiment.schema import ConfigError
from dml_bench.datasets import DATASETS, DataNotAvailable, DataParseError, load_dataset
from dml_bench.datasets.spec import as_dataset_spec
from dml_bench.constraints import GENERATORS
from dml_bench.registry import PluginConsentError, PluginError, UnknownNameError, check_solver
from dml_bench.common.settings import load_settings, settings_path
from dml_bench.solvers import SOLVERS

pytestmark = pytest.mark.usefixtures("tmp_cache")

MODULE = "dmlb_demo_plugin"

PLUGIN_SOURCE = '''
"""A plug-in for dml-bench that does not import dml_bench."""
import os

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


class Iris:
    """Fisher's iris, as scikit-learn bundles it."""

    n_samples, n_features, n_classes = 150, 4, 3

    def load(self, paths):
        data = load_iris()
        return data.data, data.target


class NotADataset:
    n_samples = 3

    def load(self, paths):
        return [1, 2, 3]


class ListDataset:
    n_samples, n_features, n_classes = 3, 1, 2

    def load(self, paths):
        return [1, 2, 3]


class WrongShape(Iris):
    n_samples = 100


class FailingDataset:
    n_samples, n_features, n_classes = 10, 2, 2

    def load(self, paths):
        raise RuntimeError("the plug-in's server is down")


class Marked:
    """Creates the file $DMLB_MARKER when instantiated: shows whether anything called it."""

    n_samples, n_features, n_classes = 150, 4, 3

    def __init__(self):
        open(os.environ["DMLB_MARKER"], "w").close()

    def load(self, paths):
        return Iris().load(paths)


def iris():
    open(os.environ.get("DMLB_MARKER", os.devnull), "w").close()
    data = load_iris()
    return data.data, data.target
'''

ENTRY_POINTS = f"""
[dml_bench.solvers]
inverse_std = {MODULE}:InverseStd
not_a_solver = {MODULE}:NotASolver
broken_solver = dmlb_no_such_module:Thing

[dml_bench.datasets]
demo_iris = {MODULE}:Iris
not_a_dataset = {MODULE}:NotADataset
list_dataset = {MODULE}:ListDataset
wrong_shape = {MODULE}:WrongShape
failing_dataset = {MODULE}:FailingDataset
marked = {MODULE}:Marked
function_dataset = {MODULE}:iris
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


@pytest.fixture(autouse=True)
def no_consent(tmp_path, monkeypatch) -> Path:
    """No consent to plug-ins: ``DMLBENCH_ALLOW_PLUGINS=0`` (restored after the test, whatever
    ``--allow-plugins`` sets) and a settings file that does not exist yet (returned)."""
    monkeypatch.setenv("DMLBENCH_ALLOW_PLUGINS", "0")
    settings = tmp_path / "settings" / "settings.yaml"
    monkeypatch.setenv("DMLBENCH_SETTINGS", str(settings))
    return settings


@pytest.fixture
def plugin_path(plugin_site, monkeypatch) -> Path:
    """The plug-in on ``sys.path`` of this process, the registries' resolved plug-ins reset, and
    no consent yet."""
    monkeypatch.syspath_prepend(str(plugin_site))
    for registry in (SOLVERS, DATASETS):
        monkeypatch.setattr(registry, "_plugins", {})
    sys.modules.pop(MODULE, None)
    yield plugin_site
    sys.modules.pop(MODULE, None)


@pytest.fixture
def plugins(plugin_path, monkeypatch) -> Path:
    """:func:`plugin_path`, with consent to import plug-ins (``DMLBENCH_ALLOW_PLUGINS=1``)."""
    monkeypatch.setenv("DMLBENCH_ALLOW_PLUGINS", "1")
    return plugin_path


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
    """Entry-point solver and dataset, and a ``module:Class`` reference, in a `dmlbench
    --allow-plugins run` subprocess that finds the plug-in on PYTHONPATH only. InverseStd on raw
    data is z-scoring, so its 3-NN errors equal the built-in Euclidean solver's on z-scored data,
    split by split."""
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
    done = subprocess.run([sys.executable, "-c", "from dml_bench.cli import main; main()",
                           "--allow-plugins", "run", str(cfg), "--results-dir",
                           str(tmp_path / "results")],
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
    assert meta["n_classes"] == 3 and meta["source"] == "plug-in"
    assert list(SOLVERS) == list(SOLVERS._items)  # iteration: the built-ins only


def test_dataset_spec_contract(plugins):
    """A DatasetSpec (from code) is renamed; a plug-in class gives a spec of the shape it
    declares without being instantiated; anything else is refused."""
    spec = DATASETS["wine"]
    renamed = as_dataset_spec("my_wine", spec)
    assert renamed.name == "my_wine" and renamed.n_samples == 178
    module = __import__(MODULE)

    class Pair:
        """Three points."""

        n_samples, n_features, n_classes = 3, 3, 2
        papers = ("ying2012",)

        def __init__(self):
            raise AssertionError("instantiated")

        def load(self, paths):
            raise AssertionError("called")

    declared = as_dataset_spec("pair", Pair)
    assert (declared.n_samples, declared.n_features, declared.n_classes) == (3, 3, 2)
    assert declared.description == "Three points." and declared.papers == ("ying2012",)
    assert as_dataset_spec("iris", module.Iris).description == "Fisher's iris, as scikit-learn bundles it."
    with pytest.raises(PluginError, match=r"^dataset 'f': is a function, not a dataset class$"):
        as_dataset_spec("f", module.iris)
    with pytest.raises(PluginError, match=r"^dataset 'f': is a tuple, not a dataset class$"):
        as_dataset_spec("f", (np.eye(3), [0, 1, 0]))
    with pytest.raises(PluginError, match=r"^dataset 'no': dmlb_demo_plugin.NotADataset is not a "
                                          r"dataset plug-in: has no n_features \(an int >= 1\); "
                                          r"has no n_classes \(an int >= 1\) \(see "):
        as_dataset_spec("no", module.NotADataset)

    class BadNames(Pair):
        class_names = ("only one",)

    with pytest.raises(PluginError, match=r"is not a dataset plug-in: ValueError: dataset 'bad': "
                                          r"1 class_names for 2 classes"):
        as_dataset_spec("bad", BadNames)


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


@pytest.mark.parametrize("dataset, expected", [
    ("not_a_dataset", "dataset 'not_a_dataset' (entry point not_a_dataset = "
                      "dmlb_demo_plugin:NotADataset (from dmlb_demo_plugin 0.1) of group "
                      "dml_bench.datasets): dmlb_demo_plugin.NotADataset is not a dataset plug-in: "
                      "has no n_features (an int >= 1); has no n_classes (an int >= 1) (see "
                      "dml_bench.registry)"),
    ("function_dataset", "dataset 'function_dataset' (entry point function_dataset = "
                         "dmlb_demo_plugin:iris (from dmlb_demo_plugin 0.1) of group "
                         "dml_bench.datasets): is a function, not a dataset class (plug-ins are "
                         "classes; see dml_bench.registry)"),
    (f"{MODULE}:iris", f"dataset '{MODULE}:iris': is a function, not a dataset class"),
    ("os:getcwd", "dataset 'os:getcwd': is a builtin_function_or_method, not a dataset class"),
    ("os.path:os", "dataset 'os.path:os': is a module, not a dataset class"),
])
def test_bad_plugin_dataset_is_one_line(plugins, tmp_path, dataset, expected, monkeypatch):
    """Refused at the config key that names it, in `validate` too, and never called."""
    marker = tmp_path / "called"
    monkeypatch.setenv("DMLB_MARKER", str(marker))
    cfg = write_config(tmp_path, f"name: bad\ndatasets: ['{dataset}']\nsolvers: [euclidean]\n")
    for command in ("validate", "run"):
        message = one_line_error(invoke(command, cfg, *(["--results-dir", tmp_path / "r"]
                                                        if command == "run" else [])))
        assert message.startswith(f"error: {cfg}: datasets[0].name: {expected}"), message
    assert not marker.exists()


def test_plugin_datasets_that_fail_to_load_are_skipped_with_their_reason(plugins, tmp_path):
    cfg = write_config(tmp_path, "name: bad\ndatasets: [failing_dataset, list_dataset, wrong_shape, "
                                 "wine]\nsolvers: [euclidean]\nsplit: {n_splits: 1}\n"
                                 "execution: {backend: sequential}\n")
    result = invoke("run", cfg, "--results-dir", tmp_path / "results")
    assert result.exit_code == 0, result.output
    assert "1 tasks run, 0 already done, 0 failed, 3 dataset×solver skipped" in result.stdout
    lines = result.output.splitlines()
    ep = "(entry point {0} = dmlb_demo_plugin:{1} (from dmlb_demo_plugin 0.1) of group dml_bench.datasets)"
    for expected in [
        "skipped failing_dataset × euclidean: data not available: dataset 'failing_dataset' "
        + ep.format("failing_dataset", "FailingDataset")
        + ": its load() failed: RuntimeError: the plug-in's server is down",
        "skipped list_dataset × euclidean: data not available: dataset 'list_dataset' "
        + ep.format("list_dataset", "ListDataset") + ": its load() returned a list, not a pair (X, y)",
        "skipped wrong_shape × euclidean: data not available: dataset 'wrong_shape': data parsed "
        "from the plug-in's load() (no files) has shape (150, 4), expected (100, 4). The plug-in's "
        "data does not fit what its class declares: fix the plug-in.",
    ]:
        assert expected in lines, (expected, lines)


def test_validate_never_calls_a_plugin(plugins, tmp_path, monkeypatch):
    """`validate` (and a run's config check) imports a consented plug-in class and checks it,
    but neither instantiates it nor calls its load(); the run does."""
    marker = tmp_path / "called"
    monkeypatch.setenv("DMLB_MARKER", str(marker))
    cfg = write_config(tmp_path, "name: m\ndatasets: [marked]\nsolvers: [euclidean]\n"
                                 "split: {n_splits: 1}\nexecution: {backend: sequential}\n")
    result = invoke("validate", cfg)
    assert result.exit_code == 0, result.output
    assert result.stdout == f"{cfg}: ok (1 datasets × 1 solvers, 1 tasks)\n"
    assert MODULE in sys.modules and not marker.exists()
    assert invoke("datasets").exit_code == 0 and not marker.exists()
    result = invoke("run", cfg, "--results-dir", tmp_path / "results")
    assert result.exit_code == 0, result.output
    assert marker.exists()


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


def test_plugin_error_is_a_one_line_dmlbench_error(monkeypatch):
    monkeypatch.setenv("DMLBENCH_ALLOW_PLUGINS", "1")
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


def test_datasets_lists_the_plugins_without_calling_them(plugins, tmp_path, monkeypatch):
    """`dmlbench datasets`: plug-in classes are listed with the size they declare, not
    instantiated (Marked would create the marker file), and a plug-in that cannot be used is one
    line with the reason."""
    marker = tmp_path / "called"
    monkeypatch.setenv("DMLB_MARKER", str(marker))
    result = invoke("datasets")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and not marker.exists()
    lines = result.stdout.splitlines()
    assert [line.split(" ")[0] for line in lines[1:len(DATASETS) + 1]] == list(DATASETS)
    rows = {line.split(" ")[0]: " ".join(line.split()[1:]) for line in lines[len(DATASETS) + 1:]}

    def where(name, target):
        return f"plug-in {name} = {MODULE}:{target} (from {MODULE} 0.1):"

    assert rows == {
        "broken_dataset": "? ? plug-in broken_dataset = dmlb_no_such_module:data (from "
                          f"{MODULE} 0.1): cannot be used: cannot load it: ModuleNotFoundError: "
                          "No module named 'dmlb_no_such_module'",
        "demo_iris": f"150×4 3 {where('demo_iris', 'Iris')} plug-in",
        "failing_dataset": f"10×2 2 {where('failing_dataset', 'FailingDataset')} plug-in",
        "function_dataset": f"? ? {where('function_dataset', 'iris')} cannot be used: is a "
                            "function, not a dataset class (plug-ins are classes; see "
                            "dml_bench.registry)",
        "list_dataset": f"3×1 2 {where('list_dataset', 'ListDataset')} plug-in",
        "marked": f"150×4 3 {where('marked', 'Marked')} plug-in",
        "not_a_dataset": f"? ? {where('not_a_dataset', 'NotADataset')} cannot be used: "
                         f"{MODULE}.NotADataset is not a dataset plug-in: has no n_features (an "
                         "int >= 1); has no n_classes (an int >= 1) (see dml_bench.registry)",
        "wrong_shape": f"100×4 3 {where('wrong_shape', 'WrongShape')} plug-in",
    }


# --------------------------------------------------------------------------- consent


def consent_refused(what: str, allow: str, settings: Path) -> str:
    return (f"{what} is a plug-in: importing it runs its code, so it needs your consent: pass "
            f"--allow-plugins, set DMLBENCH_ALLOW_PLUGINS=1, or list {allow!r} under plugins: in "
            f"{settings}")


def entry_point(kind: str, name: str, target: str) -> str:
    group = "dml_bench.solvers" if kind == "solver" else "dml_bench.datasets"
    return (f"{kind} {name!r} (entry point {name} = {MODULE}:{target} (from {MODULE} 0.1) of "
            f"group {group})")


@pytest.mark.parametrize("datasets, solvers, where, what, allow", [
    ("[wine]", "[inverse_std]", "solvers[0].name", entry_point("solver", "inverse_std", "InverseStd"),
     "inverse_std"),
    ("[wine]", f"['{MODULE}:InverseStd']", "solvers[0].name",
     f"solver '{MODULE}:InverseStd' (a reference to module '{MODULE}')", MODULE),
    ("[demo_iris]", "[euclidean]", "datasets[0].name", entry_point("dataset", "demo_iris", "Iris"),
     "demo_iris"),
    ("['tempfile:mkdtemp']", "[euclidean]", "datasets[0].name",
     "dataset 'tempfile:mkdtemp' (a reference to module 'tempfile')", "tempfile"),
])
def test_without_consent_no_plugin_is_imported(plugin_path, no_consent, tmp_path, monkeypatch,
                                              datasets, solvers, where, what, allow):
    """A config naming a plug-in, from anyone: one line naming it and the ways to consent, in
    `validate` and `run`; the module is not imported and nothing is called."""
    made = []
    monkeypatch.setattr("tempfile.mkdtemp", lambda *a, **k: made.append(a))
    cfg = write_config(tmp_path, f"name: p\ndatasets: {datasets}\nsolvers: {solvers}\n")
    for argv in (["validate", cfg], ["run", cfg, "--results-dir", tmp_path / "results"]):
        message = one_line_error(invoke(*argv))
        assert message == f"error: {cfg}: {where}: {consent_refused(what, allow, no_consent)}"
    assert MODULE not in sys.modules and made == [] and not (tmp_path / "results").exists()


def test_listings_without_consent_import_nothing(plugin_path, no_consent):
    for command, kind in (("solvers", "solver"), ("datasets", "dataset")):
        result = invoke(command)
        assert result.exit_code == 0, result.output
        listed = [line for line in result.stdout.splitlines() if " plug-in " in line]
        assert listed and all(f"not loaded: needs --allow-plugins, DMLBENCH_ALLOW_PLUGINS=1 or "
                              f"'{line.split()[0]}' under plugins: in {no_consent}" in line
                              for line in listed if "the built-in" not in line), listed
    assert MODULE not in sys.modules
    assert ("inverse_std plug-in inverse_std = dmlb_demo_plugin:InverseStd (from dmlb_demo_plugin "
            "0.1) — cannot be used: not loaded: needs --allow-plugins, DMLBENCH_ALLOW_PLUGINS=1 or "
            f"'inverse_std' under plugins: in {no_consent}") in invoke("solvers").stdout.splitlines()


def test_the_allow_plugins_option_gives_consent_and_exports_it(plugin_path, tmp_path):
    cfg = write_config(tmp_path, "name: p\ndatasets: [demo_iris]\nsolvers: [inverse_std]\n")
    assert invoke("validate", cfg).exit_code == 2
    result = invoke("--allow-plugins", "validate", cfg)
    assert result.exit_code == 0, result.output
    assert os.environ["DMLBENCH_ALLOW_PLUGINS"] == "1"  # seen by worker processes


@pytest.mark.parametrize("listed, allowed, refused", [
    (["inverse_std"], ["inverse_std"], [f"{MODULE}:InverseStd", "demo_iris"]),
    ([MODULE], ["inverse_std", f"{MODULE}:InverseStd", "demo_iris"], []),
    ([f"{MODULE}:InverseStd"], [f"{MODULE}:InverseStd"], ["inverse_std", "demo_iris"]),
    (["dmlb_demo"], [], ["inverse_std", f"{MODULE}:InverseStd"]),  # not a package of it
    ([], [], ["inverse_std", "demo_iris"]),
])
def test_a_plugins_list_in_the_settings_gives_consent_to_what_it_names(
        plugin_path, no_consent, listed, allowed, refused):
    no_consent.parent.mkdir()
    no_consent.write_text(f"# my plug-ins\nplugins: {listed}\n")
    for name in allowed:
        registry = DATASETS if name == "demo_iris" else SOLVERS
        assert registry[name].__module__ in (MODULE, "dml_bench.datasets.spec")
    for name in refused:
        registry = DATASETS if name == "demo_iris" else SOLVERS
        with pytest.raises(PluginConsentError, match=f"under plugins: in {no_consent}$"):
            registry[name]


def test_settings_file_locations(monkeypatch, tmp_path):
    monkeypatch.delenv("DMLBENCH_SETTINGS")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    assert settings_path() == tmp_path / "home" / ".config" / "dmlbench" / "settings.yaml"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert settings_path() == tmp_path / "xdg" / "dmlbench" / "settings.yaml"
    monkeypatch.setenv("DMLBENCH_SETTINGS", str(tmp_path / "mine.yaml"))
    assert settings_path() == tmp_path / "mine.yaml"
    assert load_settings() == {"plugins": ()}  # no file: no settings


def test_consent_is_checked_at_every_lookup(plugins, monkeypatch):
    """A plug-in resolved with consent is refused once the consent is withdrawn, though the
    registry keeps it for the process."""
    assert SOLVERS["inverse_std"].__name__ == "InverseStd"
    assert DATASETS["demo_iris"].n_samples == 150
    monkeypatch.setenv("DMLBENCH_ALLOW_PLUGINS", "0")
    for registry, name in ((SOLVERS, "inverse_std"), (DATASETS, "demo_iris")):
        with pytest.raises(PluginConsentError, match=rf"^{registry.kind} '{name}' \(entry point"):
            registry[name]
        with pytest.raises(PluginConsentError):
            registry.check_consent(name)
    assert SOLVERS["euclidean"].__name__ == "Euclidean"  # built-ins need no consent
    SOLVERS.check_consent("euclidean")
    DATASETS.check_consent("file:x.csv?label_column=y")  # data sources are not plug-ins


@pytest.mark.parametrize("content, problem", [
    ("plugins: mypkg\n", "plugins: expected a list of module or entry-point names, got str 'mypkg'"),
    ("plugins: [mypkg, 3]\n", "plugins: expected a list of module or entry-point names, got list "
                             "['mypkg', 3]"),
    ("- mypkg\n", "expected a mapping (plugins: [...]), got list"),
    ("plugin: [mypkg]\n", "unknown key 'plugin'; valid keys: plugins"),
    ("plugins: [mypkg\n", "not valid YAML: line 2, column 1: expected ',' or ']', but got "
                          "'<stream end>' (while parsing a flow sequence)"),
    (b"plugins: [caf\xe9]\n", "not UTF-8 text: byte 0xe9 at offset 13 is not valid UTF-8 (save "
                              "the file as UTF-8)"),
    ("plugins: !!python/object/apply:os.getcwd []\n", "not valid YAML: line 1, column 10: could "
     "not determine a constructor for the tag 'tag:yaml.org,2002:python/object/apply:os.getcwd'"),
])
def test_a_bad_settings_file_is_one_line(plugin_path, no_consent, tmp_path, content, problem):
    no_consent.parent.mkdir()
    (no_consent.write_bytes if isinstance(content, bytes) else no_consent.write_text)(content)
    cfg = write_config(tmp_path, "name: p\ndatasets: [wine]\nsolvers: [inverse_std]\n")
    message = one_line_error(invoke("validate", cfg))
    assert message == f"error: {cfg}: solvers[0].name: settings file {no_consent}: {problem}"
    assert MODULE not in sys.modules


def test_a_bad_allow_plugins_variable_is_one_line(plugin_path, tmp_path, monkeypatch):
    monkeypatch.setenv("DMLBENCH_ALLOW_PLUGINS", "sure")
    cfg = write_config(tmp_path, "name: p\ndatasets: [wine]\nsolvers: [inverse_std]\n")
    assert one_line_error(invoke("validate", cfg)) == (
        f"error: {cfg}: solvers[0].name: DMLBENCH_ALLOW_PLUGINS='sure': expected 1 (import "
        "plug-ins) or 0 (do not)")
    for value in ("1", "true", "Yes", "on"):
        monkeypatch.setenv("DMLBENCH_ALLOW_PLUGINS", value)
        assert invoke("validate", cfg).exit_code == 0


@pytest.mark.parametrize("reference, kind", [
    ("os:getcwd", "builtin_function_or_method"),
    ("os:path", "module"),
    ("tempfile:mkdtemp", "function"),
    ("os:sep", "str"),
])
def test_only_classes_are_plugins(monkeypatch, reference, kind):
    """With consent, a reference to anything but a class is refused without calling it."""
    monkeypatch.setenv("DMLBENCH_ALLOW_PLUGINS", "1")
    made = []
    monkeypatch.setattr("tempfile.mkdtemp", lambda *a, **k: made.append(a))
    for registry in (SOLVERS, DATASETS):
        with pytest.raises(PluginError, match=rf"^{registry.kind} '{reference}': is a {kind}, not "
                                              rf"a {registry.kind} class \(plug-ins are classes"):
            registry[reference]
    assert made == []


def test_generators_take_no_plugins(monkeypatch):
    monkeypatch.setenv("DMLBENCH_ALLOW_PLUGINS", "1")
    with pytest.raises(UnknownNameError, match=r"^unknown constraint generator 'os:getcwd'\. "
                                               r"Valid names: knn_pairs, knn_triplets, "
                                               r"random_triplets$"):
        GENERATORS["os:getcwd"]
