"""``benchmarks/diagnoses/seed_diagnosis.py`` on scikit-learn's bundled wine (no mirror needed),
one split."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.spatial
from sklearn.neighbors import KNeighborsClassifier
from sklearn.svm import SVC

from dml_bench.run.knn import run_task
from dml_bench.experiment.knn import prepare_split

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.usefixtures("tmp_cache")


@pytest.fixture(scope="module")
def seed_diagnosis(benchmark_script):
    return benchmark_script("diagnoses/seed_diagnosis")


def test_rows_euclidean_error_and_configured_fit(seed_diagnosis):
    exp, tasks = seed_diagnosis.tasks_for(str(ROOT / "configs" / "quickstart.yaml"), "dml_eig",
                                          "wine", splits=1)
    # scikit-learn breaks vote ties to the lowest class: evaluate the split with that rule
    task = dataclasses.replace(tasks[0], evaluation=dataclasses.replace(tasks[0].evaluation,
                                                                       tie_break="lowest"))
    rows = seed_diagnosis.diagnose(task, caps=[10, 1000], paper=seed_diagnosis.paper_cells(exp, task))
    assert [r["cap"] for r in rows] == [10, 1000]
    for column in ("n_iter", "converged", "objective", "final_gap", "rel_gap", "rank",
                   "n_energy90", "error", "euclidean_error", "gain", "paper_error",
                   "paper_euclidean", "paper_gain", "fit_time"):
        assert all(column in r for r in rows), column
    assert rows[0]["n_iter"] == 10

    X_train, y_train, X_test, y_test, *_ = prepare_split(task)
    knn = KNeighborsClassifier(n_neighbors=3, algorithm="brute").fit(X_train, y_train)
    expected = 100 * np.mean(knn.predict(X_test) != y_test)
    assert all(r["euclidean_error"] == pytest.approx(expected) for r in rows)
    assert rows[0]["paper_euclidean"] == 3.46  # Ying & Li (2012) Table 4, wine, Euc.

    # the fit at the configured cap (1000) is the runner's own fit of the task
    ran = run_task(task)
    assert rows[1]["error"] == pytest.approx(100 * ran["error"])
    assert rows[1]["n_iter"] == ran["n_iter"]
    assert rows[1]["rank"] == ran["n_nonzero_eigenvalues"]


def test_tuned_parameters_come_from_runs_csv(seed_diagnosis, write_yaml):
    config = write_yaml({
        "name": "tiny", "datasets": [{"name": "wine", "normalize": "zscore"}],
        "split": {"train_fraction": 0.7, "n_splits": 1, "seed": 0, "stratify": True},
        "constraints": {"generator": "knn_triplets", "params": {"k": 3}},
        "solvers": [{"name": "lmnn_eig", "params": {"max_iter": 30},
                     "tune": {"grid": {"gamma": [0.25, 0.75]}, "cv": 3}}],
        "evaluation": {"knn_k": 3, "tie_break": "nearest"}})
    _, (task,) = seed_diagnosis.tasks_for(str(config), "lmnn_eig", "wine")
    runs = pd.DataFrame([{"dataset": "wine", "split": 0, "label": "lmnn_eig", "error": 0.5,
                          "tuned_params": '{"gamma": 0.75}', "finished_at": "2026-01-01"}])
    (row,) = seed_diagnosis.diagnose(task, caps=[30], runs=runs)
    assert row["tuned"] == '{"gamma": 0.75}'
    assert row["runs_error"] == 50.0
    ran = run_task(dataclasses.replace(task, tuned=(("gamma", 0.75),)))
    assert row["error"] == pytest.approx(100 * ran["error"])
    with pytest.raises(SystemExit, match="no tuned parameters"):
        seed_diagnosis.diagnose(task, caps=[30], runs=runs.iloc[:0])


def test_itml_caps_count_projections_and_no_param_fits_once(seed_diagnosis, write_yaml, tmp_path):
    config = write_yaml({
        "name": "tiny_itml", "datasets": [{"name": "wine", "normalize": "zscore"}],
        "split": {"train_fraction": 0.7, "n_splits": 1, "seed": 0, "stratify": True},
        "constraints": {"generator": "knn_triplets", "params": {"k": 3}},
        "solvers": [{"name": "itml", "params": {"gamma": 1.0, "max_proj": 100000,
                                                "max_iter": None}}],  # the paper configs' caps
        "evaluation": {"knn_k": 3, "tie_break": "nearest"}})
    assert seed_diagnosis.iteration_param("itml") == "max_proj"
    seed_diagnosis.main(["itml", str(config), "wine", "--max-iters", "100", "1000000",
                         "--results", str(tmp_path)])
    rows = pd.read_csv(tmp_path / "tiny_itml_diagnosis" / "itml_wine.csv")
    assert list(rows["cap"]) == [100, 1000000]  # as configured only, once per cap
    assert (rows["iter_param"] == "max_proj").all()
    # the cap is checked after a sweep: one full sweep (> 100 projections) at cap 100
    assert rows["n_iter"].iloc[0] == 1 and rows["n_proj"].iloc[0] > 100
    assert rows["cap_fraction"].iloc[1] == 10.0  # of the configured max_proj = 10⁵


def test_closed_form_fits_once_per_variant(seed_diagnosis, write_yaml, tmp_path):
    config = write_yaml({
        "name": "tiny_rca", "datasets": [{"name": "wine", "normalize": "zscore"}],
        "split": {"train_fraction": 0.7, "n_splits": 1, "seed": 0, "stratify": True},
        "constraints": {"generator": "knn_triplets", "params": {"k": 3}},
        "solvers": [{"name": "rca"}],
        "evaluation": {"knn_k": 3, "tie_break": "lowest"}})
    assert seed_diagnosis.iteration_param("rca") is None
    seed_diagnosis.main(["rca", str(config), "wine", "--param", "ridge=0,1",
                         "--results", str(tmp_path)])
    rows = pd.read_csv(tmp_path / "tiny_rca_diagnosis" / "rca_wine.csv")
    assert len(rows) == 3 and rows["cap"].isna().all()  # as configured, then ridge 0 and 1

    # each fit is scikit-learn's 3-NN under (Ĉ + δ·tr(Ĉ)/d·I)^(-1/2), Ĉ the pooled within-class
    # covariance of the training part (Bar-Hillel et al. 2005, every class a chunklet); the
    # configured fit is δ = 0 (wine's Ĉ has full rank)
    _, (task,) = seed_diagnosis.tasks_for(str(config), "rca", "wine")
    X_train, y_train, X_test, y_test, *_ = prepare_split(task)
    centred = X_train - np.stack([X_train[y_train == c].mean(axis=0) for c in y_train])
    C = centred.T @ centred / len(y_train)
    for row, ridge in ((0, 0.0), (1, 0.0), (2, 1.0)):
        w, U = np.linalg.eigh(C + ridge * np.trace(C) / C.shape[0] * np.eye(C.shape[0]))
        L = U / np.sqrt(w)
        knn = KNeighborsClassifier(n_neighbors=3, algorithm="brute").fit(X_train @ L, y_train)
        expected = 100 * np.mean(knn.predict(X_test @ L) != y_test)
        assert rows["error"].iloc[row] == pytest.approx(expected), (row, ridge)

    with pytest.raises(SystemExit, match="closed form"):
        seed_diagnosis.diagnose(task, caps=[10])


def test_reference_classifier_refits_without_a_spectrum(seed_diagnosis, write_yaml, tmp_path):
    config = write_yaml({
        "name": "tiny_svm", "datasets": [{"name": "wine", "normalize": "zscore"}],
        "split": {"train_fraction": 0.7, "n_splits": 1, "seed": 0, "stratify": True},
        "constraints": {"generator": "knn_triplets", "params": {"k": 3}},
        "solvers": [{"name": "svm", "params": {"C": 1.0, "gamma": 0.01}}],
        "evaluation": {"knn_k": 3, "tie_break": "lowest"}})
    seed_diagnosis.main(["svm", str(config), "wine", "--param", "C=0.1,100",
                         "--results", str(tmp_path)])
    rows = pd.read_csv(tmp_path / "tiny_svm_diagnosis" / "svm_wine.csv")
    assert len(rows) == 3 and rows["rank"].isna().all() and rows["cap"].isna().all()

    # each fit classifies as scikit-learn's RBF SVC at its C (one-vs-one, as libsvm)
    _, (task,) = seed_diagnosis.tasks_for(str(config), "svm", "wine")
    X_train, y_train, X_test, y_test, *_ = prepare_split(task)
    for row, C in ((0, 1.0), (1, 0.1), (2, 100.0)):
        svc = SVC(C=C, gamma=0.01, kernel="rbf").fit(X_train, y_train)
        expected = 100 * np.mean(svc.predict(X_test) != y_test)
        assert rows["error"].iloc[row] == pytest.approx(expected), (row, C)
    # the kernel between each training point and its nearest other one, at the fit's gamma: the
    # median of exp(-gamma d^2) over scipy's full distance matrix, the diagonal left out
    sq = scipy.spatial.distance.squareform(scipy.spatial.distance.pdist(X_train, "sqeuclidean"))
    np.fill_diagonal(sq, np.inf)
    expected = np.median(np.exp(-0.01 * sq.min(axis=1)))
    assert rows["kernel_nn_median"].to_numpy() == pytest.approx([expected] * 3, rel=1e-9)
    nn1 = KNeighborsClassifier(n_neighbors=1).fit(X_train, y_train)
    assert rows["nn1_error"].to_numpy() == pytest.approx(
        [100 * np.mean(nn1.predict(X_test) != y_test)] * 3)
