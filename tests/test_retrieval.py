"""Retrieval precision (Shen, Kim & Wang 2010, Fig. 3), the user-supplied face_background
dataset, and the shen2010-fig3 target end to end on a generated file of the real format."""

from __future__ import annotations

from pathlib import Path

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from sklearn.neighbors import NearestNeighbors

from dml_bench.reproduction import targets as reproduction
from dml_bench.cli import main
from dml_bench.experiment.config import load_config
from dml_bench.datasets import DataIntegrityError, DataNotAvailable, load_dataset
from dml_bench.evaluate import model_retrieval_precision, retrieval_precision
from dml_bench.run.runner import Selection, run_experiment
from dml_bench.solvers import SOLVERS
from dml_bench.splits import split_indices

REPO = Path(__file__).resolve().parents[1]
RELPATH = "face_background/face_background.npz"


# ------------------------------------------------------------------------ retrieval_precision


def reference_precision(X, relevant, queries, top):
    """Leave-one-out by construction: each query searches a gallery without itself
    (scikit-learn's brute-force neighbours), then the faces among the first m are counted."""
    per_query = []
    for q in queries:
        gallery = np.delete(np.arange(len(X)), q)
        nn = NearestNeighbors(n_neighbors=top, algorithm="brute").fit(X[gallery])
        found = gallery[nn.kneighbors(X[q:q + 1], return_distance=False)[0]]
        per_query.append([relevant[found[:m]].sum() / m for m in range(1, top + 1)])
    return np.mean(per_query, axis=0)


def test_retrieval_precision_matches_a_leave_one_out_search():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 5))
    relevant = rng.random(60) < 0.4
    X[relevant, 0] += 1.5  # some structure, no ties
    ours = retrieval_precision(X, relevant, relevant, top=20)
    np.testing.assert_allclose(ours, reference_precision(X, relevant, np.flatnonzero(relevant), 20))
    # queries as indices, and a different query set
    idx = np.array([0, 7, 59])
    np.testing.assert_allclose(retrieval_precision(X, relevant, idx, top=5),
                               reference_precision(X, relevant, idx, 5))


def test_retrieval_precision_by_hand():
    # 1-D: faces (relevant) at 0, 1, 10; backgrounds at 2, 3
    X = np.array([[0.0], [1.0], [10.0], [2.0], [3.0]])
    relevant = np.array([True, True, True, False, False])
    # query 0: 1 (face), 2, 3 (backgrounds), 10 (face) -> 1, 1/2, 1/3, 2/4
    # query 1: 0 (face) and 2 (background) tie at distance 1: half a hit at m = 1, one at m = 2;
    #          then 3 (background), 10 (face) -> 1/2, 1/2, 1/3, 2/4
    # query 10: 3, 2 (backgrounds), 1, 0 (faces) -> 0, 0, 1/3, 2/4
    expected = np.array([(1 + 0.5 + 0) / 3, (0.5 + 0.5 + 0) / 3, 1 / 3, 0.5])
    np.testing.assert_allclose(retrieval_precision(X, relevant, relevant, top=4), expected)


def test_retrieval_precision_counts_ties_in_expectation():
    """Integer word counts tie often: the result is the mean over random orders of the tied
    points (a direct count with random tie-break keys), whatever the row order."""
    rng = np.random.default_rng(1)
    X = rng.integers(0, 3, size=(25, 2)).astype(float)  # 9 possible points: many ties
    relevant = rng.random(25) < 0.5
    queries = np.flatnonzero(relevant)
    ours = retrieval_precision(X, relevant, relevant, top=6)
    draws = []
    for _ in range(4000):
        keys = rng.random(25)
        per_query = []
        for q in queries:
            d = ((X - X[q]) ** 2).sum(axis=1)
            d[q] = np.inf
            ranked = np.lexsort((keys, d))[:6]  # by distance, ties by the random keys
            per_query.append(np.cumsum(relevant[ranked]) / np.arange(1, 7))
        draws.append(np.mean(per_query, axis=0))
    np.testing.assert_allclose(ours, np.mean(draws, axis=0), atol=0.01)
    perm = rng.permutation(25)
    np.testing.assert_allclose(retrieval_precision(X[perm], relevant[perm], relevant[perm], top=6),
                               ours)


def test_retrieval_precision_refuses_what_it_cannot_measure():
    X, relevant = np.zeros((5, 2)), np.ones(5, bool)
    with pytest.raises(ValueError, match="top must be in"):
        retrieval_precision(X, relevant, relevant, top=5)  # 4 others to retrieve
    with pytest.raises(ValueError, match="no query"):
        retrieval_precision(X, relevant, np.zeros(5, bool), top=2)
    svm = SOLVERS["svm"]()
    with pytest.raises(ValueError, match="classifier"):
        model_retrieval_precision(svm, X, np.ones(5), 1, top=2)


def test_model_retrieval_precision_uses_the_learned_space():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = (rng.random(40) < 0.5).astype(int)
    X[:, 0] += 3 * y  # only feature 0 tells the classes apart; feature 1 is scaled up as noise
    X[:, 1] *= 50
    euclid = SOLVERS["euclidean"]().fit(X, y)
    ours = model_retrieval_precision(euclid, X, y, 1, top=3)
    np.testing.assert_allclose(ours, retrieval_precision(X, y == 1, y == 1, top=3))

    class FirstFeature:  # a fitted "metric learner" that keeps feature 0 only
        def transform(self, Z):
            return Z[:, :1]

    learned = model_retrieval_precision(FirstFeature(), X, y, 1, top=3)
    np.testing.assert_allclose(learned, retrieval_precision(X[:, :1], y == 1, y == 1, top=3))
    assert learned.mean() > ours.mean()


# ------------------------------------------------------------------------ face_background data


def face_background(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Generated histograms of the real format: 435 faces (y = 1), 520 backgrounds, 100 word
    counts; ten words are more frequent in faces."""
    rng = np.random.default_rng(seed)
    y = np.r_[np.ones(435), np.zeros(520)].astype(np.int64)
    rates = np.tile(rng.gamma(2.0, 1.0, 100), (len(y), 1))
    rates[:, :10] *= np.where(y[:, None] == 1, 1.6, 1.0)
    return rng.poisson(rates).astype(np.float64), y


def supply(root: Path, X, y) -> Path:
    path = root / RELPATH
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, X=X, y=y)
    return root


def test_face_background_loads_a_supplied_file(tmp_path):
    X, y = face_background()
    Xl, yl, meta = load_dataset("face_background", mirror=supply(tmp_path / "m", X, y),
                                cache_dir=tmp_path / "c", allow_network=False)
    np.testing.assert_array_equal(Xl, X)
    assert meta["class_names"] == ["background", "face"] and np.bincount(yl).tolist() == [520, 435]
    np.testing.assert_array_equal(yl, y)  # label 1 = face keeps its value (sorted encoding)
    assert (tmp_path / "c" / (RELPATH + ".sha256")).is_file()  # trust on first use


def _bad(kind):
    X, y = face_background()
    if kind == "negative":
        X[7, 3] = -2
    elif kind == "dimension":
        X = X[:, :99]
    elif kind == "count":
        X, y = X[:-1], y[:-1]
    elif kind == "classes":
        y = y.copy()
        y[0] = 0
    elif kind == "labels":
        y = np.where(y == 1, 2, 0)
    elif kind == "nan":
        X[0, 0] = np.nan
    return X, y


@pytest.mark.parametrize("kind, problem", [
    ("negative", r"non-negative, X\[7, 3\] = -2"),
    ("dimension", r"shape \(955, 99\), expected \(955, 100\)"),
    ("count", r"rows per label \{0: 519, 1: 435\}, expected \{0: 520, 1: 435\}"),
    ("classes", r"rows per label \{0: 521, 1: 434\}"),
    ("labels", r"only the labels \[0, 1\], found \[0, 2\]"),
    ("nan", "non-finite feature values"),
])
def test_face_background_refuses_a_wrong_file_in_one_line(tmp_path, kind, problem):
    root = supply(tmp_path / "m", *_bad(kind))
    with pytest.raises(DataIntegrityError, match=problem) as err:
        load_dataset("face_background", mirror=root, cache_dir=tmp_path / "c", allow_network=False)
    message = str(err.value)
    assert "\n" not in message and message.startswith("dataset 'face_background': ")
    assert RELPATH in message
    assert "Supply a corrected file" in message and "numpy.savez(path, X=X, y=y)" in message
    assert "delete the cached copy and its .sha256 record" in message
    assert "dmlbench fetch" not in message  # nothing to download


def test_face_background_missing_says_how_to_supply_it(tmp_path):
    with pytest.raises(DataNotAvailable) as err:
        load_dataset("face_background", mirror=tmp_path / "empty", cache_dir=tmp_path / "c")
    message = str(err.value)
    assert "\n" not in message and f"file '{RELPATH}' is not available" in message
    assert "no download source registered" in message and "numpy.savez" in message
    assert "To provide it: copy the file to the cache path named" in message
    assert "machine with network access" not in message


# ------------------------------------------------------------------------ the target


def test_reproduce_without_the_file_exits_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("DMLBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DMLBENCH_DATA_MIRROR", str(tmp_path / "no-mirror"))
    result = CliRunner().invoke(main, ["reproduce", "shen2010-fig3", "--results-dir",
                                       str(tmp_path / "results")])
    assert result.exit_code == 3
    line = result.stderr.strip()
    assert "\n" not in line and line.startswith("shen2010-fig3: data not available: face_background")
    assert RELPATH in line and "numpy.savez(path, X=X, y=y)" in line
    assert not (tmp_path / "results").exists()
    reason = reproduction.availability(reproduction.load_targets()["shen2010-fig3"], None)
    assert RELPATH in reason and "no download source" in reason


@pytest.fixture
def small_target(tmp_path, monkeypatch):
    """targets.yaml with shen2010-fig3 pointing at a reduced copy of its config (2 splits, 10
    iterations per fit), and a generated face_background file in a mirror folder."""
    monkeypatch.chdir(REPO)
    config = yaml.safe_load((REPO / "configs/shen2010_fig3.yaml").read_text())
    config["split"]["n_splits"] = 2
    config["execution"]["n_jobs"] = 1
    for solver in config["solvers"]:
        if solver["name"] != "euclidean":
            solver.setdefault("params", {})["max_iter"] = 10
    (tmp_path / "fig3.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    targets = yaml.safe_load((REPO / "dml_bench/reproduction/targets.yaml").read_text())
    targets["targets"]["shen2010-fig3"]["config"] = str(tmp_path / "fig3.yaml")
    (tmp_path / "targets.yaml").write_text(yaml.safe_dump(targets, sort_keys=False))
    monkeypatch.setattr(reproduction, "TARGETS_FILE", tmp_path / "targets.yaml")
    monkeypatch.setattr(reproduction.load_targets, "__defaults__", (tmp_path / "targets.yaml",))
    monkeypatch.setenv("DMLBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DMLBENCH_DATA_MIRROR", str(supply(tmp_path / "mirror", *face_background())))
    return tmp_path


def test_fig3_target_end_to_end_on_a_generated_file(small_target):
    results = small_target / "results"
    run = CliRunner().invoke(main, ["reproduce", "shen2010-fig3", "--results-dir", str(results)])
    assert run.exit_code == 0, run.output
    out = results / "shen2010_fig3"
    runs = pd.read_csv(out / "runs.csv")
    labels = ["euclidean", "lmnn", "sdpmetric_squared_hinge", "sdpmetric_huber"]
    assert sorted(runs["label"]) == sorted(labels * 2)
    assert (runs["n_train"] == 472).all() and (runs["n_test"] == 382).all()
    assert runs["n_queries"].tolist() == [435 - 215 - 46] * 8  # the test part's faces
    precision = runs[[f"precision_at_{m}" for m in range(1, 21)]].to_numpy()
    assert ((precision >= 0) & (precision <= 1)).all()
    assert runs.loc[runs["label"] == "lmnn", "tuned_params"].str.contains("mu").all()

    # the curve is the mean over the splits of each split's mean over its queries
    curves = pd.read_csv(out / "figures" / "retrieval.csv")
    assert set(curves["series"]) == set(labels) and curves["x"].max() == 20
    eu = curves[curves["series"] == "euclidean"].sort_values("x")
    np.testing.assert_allclose(eu["y"], 100 * precision[runs["label"] == "euclidean"].mean(axis=0))
    assert eu["n"].eq(2).all()
    for ext in ("png", "pdf"):
        assert (out / "figures" / f"retrieval.{ext}").stat().st_size > 0

    # Euclidean's split-0 curve: the faces of that split's test part, among its test images
    X, y, _ = load_dataset("face_background")
    task0 = runs[(runs["label"] == "euclidean") & (runs["split"] == 0)].iloc[0]
    _, _, test = split_indices(y, 0.494, int(task0["seed"]), True, 0.105)
    expected = retrieval_precision(X[test], y[test] == 1, y[test] == 1, 20)
    np.testing.assert_allclose(precision[(runs["label"] == "euclidean") & (runs["split"] == 0)][0],
                               expected)

    # Table II's Face-Background row, and its 3-NN errors equal the runner's on the same config
    comparison = pd.read_csv(out / "comparison_shen2010_table2.csv")
    assert comparison["dataset"].eq("face_background").all() and len(comparison) == 4
    assert comparison["paper_mean"].tolist() == [26.41, 14.71, 16.75, 15.86]
    assert comparison["status"].isin(["match", "mismatch"]).all()
    exp = load_config(small_target / "fig3.yaml")  # the same fits as a k-NN experiment
    exp = replace(exp, evaluation=replace(exp.evaluation, task="knn", retrieval=None))
    run_experiment(exp, small_target / "runner", select=Selection(solvers=["euclidean"]),
                   echo=lambda *_: None)
    by_runner = pd.read_csv(small_target / "runner/shen2010_fig3/runs.csv").sort_values("split")
    np.testing.assert_allclose(runs[runs["label"] == "euclidean"].sort_values("split")["error"],
                               by_runner["error"])

    # the reproduction report lists the target as run, with its figure
    report = CliRunner().invoke(main, ["report", "--all", "--results-root", str(results)])
    assert report.exit_code == 0, report.output
    md = (results / "REPRODUCTION.md").read_text()
    section = md[md.index("### Figure 3 — retrieval accuracy"):]
    section = section[:section.index("\n### ")]
    assert "make reproduce-shen2010-fig3" in section and "Not runnable" not in section
    assert "figures/retrieval.png" in section
