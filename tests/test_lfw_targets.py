"""The LFW targets end to end (issue #22): a synthetic LFW-SIFT file of the real image names of
the mirror's pair lists, in every format the loader reads, through `dmlbench reproduce` and
`dmlbench run` (evaluation task verification), with the one-line errors of a missing, mis-shaped
or incomplete file and of raw pixels without network."""

from __future__ import annotations

import json
import socket

import numpy as np
import pandas as pd
import pytest
import scipy.io
import yaml
from click.testing import CliRunner

from dml_bench.cli import main
from dml_bench.experiment.config import parse_config
from dml_bench.experiment.schema import ConfigError
from dml_bench.datasets import DataIntegrityError, DataNotAvailable
from dml_bench.datasets.lfw import (LFW_SIFT_ENV, lfw_image_name, load_lfw_pairs, load_lfw_pixels,
                                    load_lfw_table, save_lfw_sift)
from dml_bench.datasets.parsers import read_descriptor_table
from dml_bench.reproduction.targets import load_targets

pytestmark = pytest.mark.usefixtures("tmp_cache")

DIM = 3456  # the papers' SIFT dimension, checked by the loader
INFORMATIVE = 24  # columns that carry the person; the rest are constant (cheap PCA, exactly)
LFW_TARGETS = ["ying2012-table6", "ying2012-fig2", "ying2012-fig3", "shen2014-table2",
               "shen2014-table3", "shen2014-fig2"]


@pytest.fixture(scope="module")
def lfw_names() -> list[str]:
    """Every image named by View 2 and View 1 (9056 images of the real pair lists)."""
    import os

    if not os.environ.get("DMLBENCH_DATA_MIRROR"):
        pytest.fail("needs the offline dataset mirror (DMLBENCH_DATA_MIRROR) for LFW's pair lists")
    folds = load_lfw_pairs("view2", allow_network=False) + load_lfw_pairs("view1", allow_network=False)
    return sorted({lfw_image_name(n, i) for fold in folds for p in fold
                   for n, i in ((p.name1, p.idx1), (p.name2, p.idx2))})


@pytest.fixture(scope="module")
def lfw_features(lfw_names) -> np.ndarray:
    """Non-negative float32 descriptors whose first columns depend on the person (verification
    well above chance, below perfect); the other columns are zero."""
    rng = np.random.default_rng(0)
    people = sorted({n.rsplit("_", 1)[0] for n in lfw_names})
    centre = dict(zip(people, rng.gamma(2.0, 1.0, (len(people), INFORMATIVE))))
    X = np.zeros((len(lfw_names), DIM), dtype=np.float32)
    X[:, :INFORMATIVE] = np.abs(np.array([centre[n.rsplit("_", 1)[0]] for n in lfw_names])
                                + rng.normal(0, 1.0, (len(lfw_names), INFORMATIVE)))
    return X


@pytest.fixture(scope="module")
def npz_file(tmp_path_factory, lfw_names, lfw_features):
    path = tmp_path_factory.mktemp("lfw") / "lfw_sift.npz"
    save_lfw_sift(path, lfw_features, lfw_names)
    return path


def write_mat_v73(path, X, names, char_matrix=False):
    """A MATLAB v7.3 file as MATLAB writes one: a 512-byte header, then HDF5 whose matrices are
    stored transposed and whose cell array holds references to uint16 char arrays."""
    import h5py

    with h5py.File(path, "w", userblock_size=512) as fh:
        fh["X"] = np.asarray(X).T
        if char_matrix:
            width = max(map(len, names))
            fh["names"] = np.array([[ord(c) for c in n.ljust(width)] for n in names],
                                   dtype=np.uint16).T
        else:
            refs = fh.create_group("#refs#")
            cells = [refs.create_dataset(f"n{i}", data=np.array([[ord(c)] for c in n], dtype=np.uint16)).ref
                     for i, n in enumerate(names)]
            fh.create_dataset("names", data=np.array(cells, dtype=h5py.ref_dtype)[None, :])
    with open(path, "r+b") as fh:
        fh.write(b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: synthetic HDF5 schema 1.00 .".ljust(116))


def write_h5(path, X, names):
    import h5py

    with h5py.File(path, "w") as fh:
        fh["X"] = X
        fh["names"] = np.array(names, dtype=h5py.string_dtype())


def write_mat_v5(path, X, names):
    scipy.io.savemat(path, {"X": X, "names": np.array(names, dtype=object)[:, None]})


WRITERS = {"mat_v5": write_mat_v5, "h5": write_h5,
           "mat_v73": lambda p, X, n: write_mat_v73(p, X, n, char_matrix=True)}


def _invoke(args, **env):
    result = CliRunner().invoke(main, args, env=env)
    return result, result.stdout + result.stderr


def _one_line_without_traceback(text: str, needle: str) -> str:
    lines = [line for line in text.splitlines() if needle in line]
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


def test_every_lfw_target_runs_end_to_end_and_resumes(npz_file, tmp_path, lfw_names):
    results = tmp_path / "results"
    for tid in LFW_TARGETS:
        result, out = _invoke(["reproduce", tid, "--quick", "--results-dir", str(results), "-j", "1"],
                              **{LFW_SIFT_ENV: str(npz_file)})
        assert result.exit_code == 0, out
    for name, entry, solvers in (("ying2012_table6_quick", "pca35",
                                  ["euclidean", "itml", "dml_eig"]),
                                 ("shen2014_table2_quick", "pca100_triplets3000", ["frobmetric"])):
        folder = results / name
        runs = pd.read_csv(folder / "runs.csv")
        assert len(runs) == 2 * len(solvers) and set(runs["split"]) == {0, 1}
        assert (runs["n_train_pairs"] == 5400).all() and (runs["n_test_pairs"] == 600).all()
        summary = pd.read_csv(folder / "summary.csv")
        assert list(summary["label"]) == solvers and (summary["dataset"] == entry).all()
        assert (summary["accuracy_mean"] > 60).all() and (summary["accuracy_mean"] < 100).all()
        for _, row in summary.iterrows():  # the summary is the folds' mean and SEM
            acc = runs.loc[runs["label"] == row["label"], "accuracy"] * 100
            assert row["accuracy_mean"] == pytest.approx(acc.mean())
            assert row["accuracy_sem"] == pytest.approx(acc.std(ddof=1) / np.sqrt(2))
        roc = pd.read_csv(folder / "roc.csv")
        assert set(roc["label"]) == set(solvers) and (folder / "figures" / f"roc_{entry}.png").is_file()
        for tid in runs["task_id"]:  # every row has its test pairs' distances
            assert len(pd.read_csv(folder / "scores" / f"{tid}.csv")) == 600
    # View 1 tuning: the chosen value is the grid point of lowest DevTest error (first on ties)
    for name, label, param in (("ying2012_table6_quick", "itml", "gamma"),
                               ("shen2014_table2_quick", "frobmetric", "C")):
        tuning = pd.read_csv(results / name / "tuning.csv")
        tuning = tuning[tuning["label"] == label]
        assert len(tuning) == 3 and (tuning["n_fit"] == 2200).all() and (tuning["n_eval"] == 1000).all()
        best = json.loads(tuning.iloc[int(np.argmin(tuning["error"].to_numpy()))]["params"])
        runs = pd.read_csv(results / name / "runs.csv")
        chosen = runs.loc[runs["label"] == label, "tuned_params"].map(json.loads)
        assert all(c == best for c in chosen) and param in best
    shen = pd.read_csv(results / "shen2014_table2_quick" / "runs.csv")
    assert (shen["n_triplets"] == 3000).all()
    comparison = pd.read_csv(results / "ying2012_table6_quick" / "comparison_ying2012_table6.csv")
    assert set(comparison.loc[comparison["status"] != "not run", "dataset"]) == {"pca35"}
    for table in ("shen2014_table2", "shen2014_table2_time", "shen2014_table3"):
        assert (results / "shen2014_table2_quick" / f"comparison_{table}.csv").is_file()
    # resume: a second run of a target does no work
    result, out = _invoke(["reproduce", "ying2012-table6", "--quick", "--results-dir", str(results)],
                          **{LFW_SIFT_ENV: str(npz_file)})
    assert result.exit_code == 0 and "0 tasks run, 6 already done" in out, out
    # Table 7 needs descriptors no file provides
    result, out = _invoke(["reproduce", "ying2012-table7"], **{LFW_SIFT_ENV: str(npz_file)})
    assert result.exit_code == 3 and "LBP" in _one_line_without_traceback(out, "not supported yet")


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_every_file_format_reads_the_same_table(fmt, tmp_path, lfw_names, lfw_features):
    path = tmp_path / f"lfw_sift.{'h5' if fmt == 'h5' else 'mat'}"
    WRITERS[fmt](path, lfw_features, lfw_names)
    X, names = load_lfw_table(load_lfw_pairs("view2") + load_lfw_pairs("view1"), path)
    assert names == lfw_names and X.dtype == np.float64
    np.testing.assert_array_equal(X, lfw_features)


def test_mat_v73_cell_array_of_names(tmp_path, lfw_names):
    """MATLAB's usual form of a name list, a cell array (references to char arrays), on a few
    rows (one HDF5 object per name is slow to write)."""
    X = np.arange(5 * 7, dtype=float).reshape(5, 7)
    write_mat_v73(tmp_path / "few.mat", X, lfw_names[:5])
    got, names = read_descriptor_table(tmp_path / "few.mat", n_features=7)
    assert names == lfw_names[:5]
    np.testing.assert_array_equal(got, X)


def test_a_config_path_runs_and_wins_over_the_environment(tmp_path, lfw_names, lfw_features,
                                                          write_yaml):
    fmt, path = "h5", tmp_path / "lfw_sift.h5"
    write_h5(path, lfw_features, lfw_names)
    config = write_yaml({
        "name": f"lfw_{fmt}", "split": {"n_splits": 1},
        "datasets": [{"name": "lfw_sift", "label": "pca10", "normalize": "none", "pca": 10,
                      "sqrt": True, "path": str(path)}],
        "solvers": ["euclidean", {"name": "dml_eig", "params": {"max_iter": 50}}],
        "evaluation": {"task": "verification"}})
    result, out = _invoke(["run", str(config), "--results-dir", str(tmp_path / "results")],
                          **{LFW_SIFT_ENV: str(tmp_path / "elsewhere.npz")})  # path: wins
    assert result.exit_code == 0, out
    summary = pd.read_csv(tmp_path / "results" / f"lfw_{fmt}" / "summary.csv")
    assert list(summary["label"]) == ["euclidean", "dml_eig"] and (summary["accuracy_mean"] > 60).all()
    saved = yaml.safe_load((tmp_path / "results" / f"lfw_{fmt}" / "config.yaml").read_text())
    assert saved["datasets"][0]["path"] == str(path) and saved["evaluation"]["task"] == "verification"


def test_missing_file_is_one_line_saying_how_to_supply_it(tmp_path, monkeypatch):
    monkeypatch.delenv(LFW_SIFT_ENV, raising=False)
    for tid in LFW_TARGETS:
        result, out = _invoke(["reproduce", tid, "--results-dir", str(tmp_path)])
        assert result.exit_code == 3, out
        line = _one_line_without_traceback(out, "needs the LFW-SIFT file")
        assert line.startswith(f"{tid}: data not available")
        assert LFW_SIFT_ENV in line and "path:" in line and "lfw/lfw_sift_funneled.npz" in line
    result, out = _invoke(["reproduce", "ying2012-table6", "--results-dir", str(tmp_path)],
                          **{LFW_SIFT_ENV: str(tmp_path / "nowhere.mat")})
    assert result.exit_code == 3
    assert "nowhere.mat" in _one_line_without_traceback(out, "does not exist")
    assert not (tmp_path / "ying2012_table6").exists()  # refused before any work


def test_wrong_dimension_and_missing_images_are_one_line(tmp_path, lfw_names, lfw_features):
    narrow = tmp_path / "narrow.npz"
    save_lfw_sift(narrow, lfw_features[:, :128], lfw_names)
    result, out = _invoke(["reproduce", "ying2012-table6", "--quick", "--results-dir", str(tmp_path)],
                          **{LFW_SIFT_ENV: str(narrow)})
    assert result.exit_code == 3
    assert "(n, 3456)" in _one_line_without_traceback(out, "LFW-SIFT file")
    dropped = [lfw_names[0], lfw_names[-1]]
    keep = list(range(1, len(lfw_names) - 1))
    partial = tmp_path / "partial.h5"
    write_h5(partial, lfw_features[keep], [lfw_names[i] for i in keep])
    with pytest.raises(DataIntegrityError, match=f"lacks 2 of the 9056 images .*{dropped[0]}"):
        load_lfw_table(load_lfw_pairs("view2") + load_lfw_pairs("view1"), partial)
    result, out = _invoke(["reproduce", "shen2014-table2", "--quick", "--results-dir", str(tmp_path)],
                          **{LFW_SIFT_ENV: str(partial)})
    assert result.exit_code == 3
    line = _one_line_without_traceback(out, "lacks 2 of the 9056 images")
    assert dropped[0] in line and dropped[1] in line
    garbage = tmp_path / "garbage.h5"
    garbage.write_bytes(b"not a descriptor file")
    with pytest.raises(DataIntegrityError, match="neither a .npz, a MAT"):
        load_lfw_table([], garbage)


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("network disabled by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.mark.filterwarnings("ignore:Retry downloading")
def test_pixel_alternative_offline_says_network_needed(tmp_path, no_network, write_yaml,
                                                       monkeypatch):
    monkeypatch.setenv("SCIKIT_LEARN_DATA", str(tmp_path / "sklearn"))
    monkeypatch.setattr("sklearn.datasets._base.time.sleep", lambda s: None)  # no retry delays
    with pytest.raises(DataNotAvailable, match="lfw_pixels': network needed") as info:
        load_lfw_pixels(data_home=tmp_path / "sklearn")
    assert "\n" not in str(info.value)
    config = write_yaml({"name": "pixels", "datasets": [{"name": "lfw_pixels", "normalize": "none",
                                                         "pca": 10}],
                         "solvers": ["euclidean"], "evaluation": {"task": "verification"}})
    result, out = _invoke(["run", str(config), "--results-dir", str(tmp_path / "results")])
    assert "Traceback" not in out
    assert "network needed" in _one_line_without_traceback(out, "skipped euclidean")
    assert "not the paper's features" in out


@pytest.mark.parametrize("change, problem", [
    ({"datasets": [{"name": "orl_faces"}]}, "take LFW's folds"),
    ({"evaluation": {"task": "verification", "folds": "drawn"}}, "drawn folds"),
    ({"solvers": ["lda"]}, "needs class labels"),
    ({"solvers": [{"name": "itml", "tune": {"grid": {"gamma": [1.0]}, "cv": 3}}]}, "View 1"),
    ({"evaluation": {"task": "verification", "n_triplets": {"nope": 10}}}, "unknown dataset label"),
    ({"evaluation": {"task": "verification", "n_folds": 5}}, "drawn folds only"),
    ({"evaluation": {"task": "knn", "folds": "lfw"}}, "task: verification"),
    ({"evaluation": {"task": "ranking"}}, "must be one of knn, verification"),
    ({"datasets": [{"name": "wine", "path": "x.npz"}]}, "only for lfw_sift"),
])
def test_verification_config_errors(change, problem):
    config = {"name": "v", "datasets": [{"name": "lfw_sift", "pca": 10}], "solvers": ["euclidean"],
              "evaluation": {"task": "verification"}, **change}
    with pytest.raises(ConfigError, match=problem):
        parse_config(config, check_data=False)


def test_drawn_folds_config_and_lfw_targets_are_runnable_configs():
    exp = parse_config({"name": "v", "datasets": [{"name": "orl_faces", "pca": 20}],
                        "solvers": ["euclidean"], "evaluation": {
                            "task": "verification", "folds": "drawn", "n_folds": 10,
                            "n_matched": 60, "n_mismatched": 60}}, check_data=False)
    spec = exp.evaluation.verification
    assert spec.folds == "drawn" and spec.n_matched == 60
    targets = load_targets()
    for tid in LFW_TARGETS:
        assert not targets[tid].unsupported, tid
    assert targets["ying2012-table7"].unsupported


def test_report_counts_the_lfw_tasks_still_to_run_once_the_file_is_supplied(npz_file, monkeypatch):
    """With the file named by the environment, the reproduction report lists every LFW task as
    still to run (none as without data); without it, every entry as without data."""
    from dml_bench.reproduction.targets import target_experiment
    from dml_bench.reproduction.report import tasks_not_run
    from dml_bench.experiment.verification_tasks import verification_tasks

    targets = load_targets()
    exp = target_experiment(targets["ying2012-table6"], targets)
    monkeypatch.setenv(LFW_SIFT_ENV, str(npz_file))
    missing, no_data = tasks_not_run(exp, set())
    assert no_data == [] and sum(missing.values()) == len(verification_tasks(exp))
    monkeypatch.setenv(LFW_SIFT_ENV, str(npz_file.parent / "absent.npz"))
    missing, no_data = tasks_not_run(exp, set())
    assert missing == {} and no_data == [d.label for d in exp.datasets]
