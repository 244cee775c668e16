"""OpenML datasets through the real ``openml`` code path, offline.

Each test lays out a cache directory in openml's on-disk format (``<root>/<server path>/datasets/
<id>/``: ``description.xml``, ``features.xml``, ``dataset.arff`` whose md5 the description holds),
built from scikit-learn's bundled wine data (``conftest.lay_out_openml``), and points openml at
a server that refuses every connection (``127.0.0.1:9``), so any download attempt fails at once
instead of reaching the network: what passes was read from the cache. The layout is read the
same way by openml 0.14 (the declared floor, ci/oldest.txt) and 0.15.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import OPENML_WINE_ID as WINE_ID, lay_out_openml as lay_out
from sklearn.datasets import load_wine
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler

from dml_bench.cli import main
from dml_bench.experiment.config import parse_config
from dml_bench.experiment.schema import ConfigError
from dml_bench.datasets import (DATASETS, DataIntegrityError, DataNotAvailable, dataset_status,
                                load_dataset)
from dml_bench.datasets.openml_source import ENV_OPENML_CACHE, openml_suite_datasets
from dml_bench.splits import split_indices

pytestmark = pytest.mark.usefixtures("tmp_cache")


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_openml_dataset_runs_through_dmlbench_run(openml_cache, tmp_path):
    lay_out(openml_cache)
    cfg = tmp_path / "openml.yaml"
    cfg.write_text(f"name: oml\ndatasets: [{{openml: {WINE_ID}}}]\nsolvers: [euclidean]\n"
                   "split: {n_splits: 3, seed: 5}\nevaluation: {tie_break: lowest}\n"
                   "execution: {backend: sequential}\n")
    result = invoke("run", cfg, "--results-dir", tmp_path / "results")
    assert result.exit_code == 0, result.output
    assert "oml: 3 tasks run, 0 already done, 0 failed, 0 dataset×solver skipped" in result.stdout
    runs = pd.read_csv(tmp_path / "results" / "oml" / "runs.csv")
    assert set(runs["dataset"]) == {f"openml_{WINE_ID}"}
    assert (runs[["n_train", "n_test", "n_features", "n_classes"]] == [126, 52, 13, 3]).all().all()
    # independent reference: scikit-learn's copy of wine, z-scored on the training part, 3-NN
    wine = load_wine()
    for row in runs.itertuples():
        train, _, test = split_indices(wine.target, 0.7, row.seed)
        scaler = StandardScaler().fit(wine.data[train])
        knn = KNeighborsClassifier(3, algorithm="brute").fit(
            scaler.transform(wine.data[train]), wine.target[train])
        expected = np.mean(knn.predict(scaler.transform(wine.data[test])) != wine.target[test])
        assert row.error == pytest.approx(expected, abs=1e-12)


def test_openml_data_and_meta_match_the_source(openml_cache):
    folder = lay_out(openml_cache)
    X, y, meta = load_dataset(f"openml:{WINE_ID}")
    wine = load_wine()
    np.testing.assert_array_equal(X, wine.data)  # repr() of a float64 round-trips exactly
    np.testing.assert_array_equal(y, wine.target)
    assert meta["source"] == "openml" and meta["openml_id"] == WINE_ID
    assert meta["openml_name"] == "wine" and meta["target"] == "class"
    assert meta["class_names"] == ["class_0", "class_1", "class_2"] and meta["n_dropped"] == 0
    assert (folder / "description.xml").is_file()  # openml's own cache, used in place


def test_status_reads_the_cache_without_loading(openml_cache):
    assert dataset_status(f"openml:{WINE_ID}") == "network needed"
    lay_out(openml_cache)
    assert dataset_status(f"openml:{WINE_ID}") == "cached"
    assert dataset_status("openml:wine") == "network needed"  # a name is looked up online
    assert f"openml:{WINE_ID}" not in DATASETS._plugins  # nothing was loaded


def test_tampered_cache_fails_its_md5(openml_cache):
    folder = lay_out(openml_cache)
    arff = folder / "dataset.arff"
    arff.write_bytes(arff.read_bytes().replace(b"14.23", b"99.99", 1))
    with pytest.raises(DataIntegrityError, match=r"md5 mismatch for the cached .*dataset\.arff") as info:
        load_dataset(f"openml:{WINE_ID}")
    assert "\n" not in str(info.value) and f"Delete {folder}" in str(info.value)


def test_regression_target_is_refused(openml_cache):
    lay_out(openml_cache, did=9001, target="f0")
    with pytest.raises(DataNotAvailable, match="its target 'f0' is float64, not nominal: a "
                                               "regression dataset"):
        load_dataset("openml:9001")


def test_uncached_dataset_without_network_is_a_one_line_skip(openml_cache, tmp_path):
    cfg = tmp_path / "offline.yaml"
    cfg.write_text("name: offline\ndatasets: [{openml: 40996}, wine]\nsolvers: [euclidean]\n"
                   "split: {n_splits: 1}\nexecution: {backend: sequential}\n")
    result = invoke("run", cfg, "--results-dir", tmp_path / "results")
    assert result.exit_code == 0, result.output
    assert "1 tasks run, 0 already done, 0 failed, 1 dataset×solver skipped" in result.stdout
    with pytest.raises(DataNotAvailable) as info:
        load_dataset("openml:40996")
    message = str(info.value)
    assert message.startswith("dataset 'openml:40996': not in openml's cache ")
    assert "OpenML cannot be reached (ConnectionError" in message and ENV_OPENML_CACHE in message
    assert "\n" not in message and message in result.output


def test_name_lookup_and_suite_need_the_network(openml_cache):
    with pytest.raises(DataNotAvailable, match="dataset 'openml:iris': not in openml's cache"):
        load_dataset("openml:iris")
    with pytest.raises(DataNotAvailable, match=r"^OpenML suite 'OpenML-CC18': cannot be listed "
                                               r"\(ConnectionError.*it needs network access"):
        openml_suite_datasets("OpenML-CC18")


def test_openml_config_entries(openml_cache):
    exp = parse_config({"name": "x", "datasets": [{"openml": 40996, "normalize": "none"},
                                                  {"openml": "iris", "label": "iris_oml"}],
                        "solvers": ["euclidean"]}, check_data=False)
    assert [(d.name, d.label) for d in exp.datasets] == [("openml:40996", "openml_40996"),
                                                         ("openml:iris", "iris_oml")]
    assert exp.datasets[0].preprocessing.normalize == "none"
    for bad, where in [({"openml": True}, "datasets[0].openml"), ({"openml": ""}, "datasets[0].openml"),
                       ({"openml": 61, "label_column": "x"}, "datasets[0].label_column")]:
        with pytest.raises(ConfigError, match=rf"^<config>: {where.replace('[', '.').replace(']', '.')}"):
            parse_config({"name": "x", "datasets": [bad], "solvers": ["euclidean"]})
