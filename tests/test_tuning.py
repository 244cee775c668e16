"""The ``tune:`` block: folds nested inside each outer split (never touching its test part),
selection by held-out error, chosen values in runs.csv, resumable tuning fits."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from dml_bench.run import runner
from dml_bench.experiment.config import parse_config
from dml_bench.experiment.schema import ConfigError
from dml_bench.datasets import load_dataset
from dml_bench.run.execution import failure_row
from dml_bench.run.runner import run_experiment
from dml_bench.solvers import SOLVERS
from dml_bench.solvers.base import MetricLearner
from dml_bench.splits import split_indices, tuning_parts
from dml_bench.experiment.knn import plan, split_parts
from dml_bench.run.tuning import TuningIncomplete, choose, run_tune_task, tune_tasks

pytestmark = pytest.mark.usefixtures("tmp_cache")


class Spy(MetricLearner):
    """Records every row it is fitted on or asked to map; ``noise`` scrambles the metric."""

    seen: list = []

    def __init__(self, noise=0.0):
        self.noise = noise

    def _fit(self, X, y, constraints):
        Spy.seen.append(X.copy())
        rng = np.random.default_rng(0)
        d = X.shape[1]
        self.components_ = np.eye(d) + self.noise * rng.standard_normal((d, d))
        self.metric_ = self.components_.T @ self.components_
        self.n_iter_, self.objective_, self.converged_, self.trace_ = 0, None, True, {}

    def transform(self, X):
        Spy.seen.append(np.asarray(X).copy())
        return super().transform(X)


@pytest.fixture
def spy(monkeypatch):
    monkeypatch.setitem(SOLVERS._items, "spy", Spy)
    Spy.seen = []
    return Spy


def config(tune, normalize="none", **split):
    return parse_config({
        "name": "tuned", "datasets": [{"name": "wine", "normalize": normalize}],
        "split": {"n_splits": 2, **split},
        "solvers": [{"name": "euclidean"}, {"name": "spy", "tune": tune}],
        "execution": {"n_jobs": 1, "backend": "sequential"}}, source="test")


# ------------------------------------------------------------------------------- folds


@pytest.mark.parametrize("validation_fraction", [0.0, 0.15])
def test_cv_folds_partition_the_training_part_only(validation_fraction):
    y = np.repeat([0, 1, 2], [40, 31, 20])
    train, val, test = split_indices(y, 0.7, 5, True, validation_fraction)
    folds = [tuning_parts(y, train, val, 5, ("cv", 3, i)) for i in range(3)]
    held = np.concatenate([h for _, h in folds])
    np.testing.assert_array_equal(np.sort(held), train)  # every training point held out once
    for fit, h in folds:
        assert not np.intersect1d(fit, h).size
        np.testing.assert_array_equal(np.union1d(fit, h), train)
        assert not np.intersect1d(np.union1d(fit, h), np.union1d(test, val)).size
        for c in range(3):  # stratified: each class spread over the folds (±1)
            assert abs((y[h] == c).sum() - (y[train] == c).sum() / 3) < 1
    sizes = [len(h) for _, h in folds]
    assert max(sizes) - min(sizes) <= 1
    again = tuning_parts(y, train, val, 5, ("cv", 3, 1))
    np.testing.assert_array_equal(again[1], folds[1][1])


def test_validation_fold_fits_on_train_and_evaluates_on_validation():
    y = np.repeat([0, 1], 50)
    train, val, test = split_indices(y, 0.7, 1, True, 0.15)
    fit, held = tuning_parts(y, train, val, 1, ("validation",))
    np.testing.assert_array_equal(fit, train)
    np.testing.assert_array_equal(held, val)
    with pytest.raises(ValueError, match="validation_fraction"):
        tuning_parts(y, train, val[:0], 1, ("validation",))


@pytest.mark.parametrize("tune,split", [({"grid": {"noise": [0.0, 3.0]}, "cv": 3}, {}),
                                        ({"grid": {"noise": [0.0, 3.0]}, "validation": 0.15},
                                         {"validation_fraction": 0.15})])
def test_tuning_fits_never_see_the_outer_test_part(spy, tune, split):
    X, _, _ = load_dataset("wine")
    assert len(np.unique(X, axis=0)) == len(X)  # rows identify points
    exp = config(tune, **split)
    tasks, _ = plan(exp)
    for task in tasks:
        if task.solver.name != "spy":
            continue
        train, val, test = split_parts(task)[:3]
        Spy.seen = []
        for tt in tune_tasks(task):
            row = run_tune_task(tt)
            assert "error" in row and not row.get("_failed"), row
        seen = np.unique(np.vstack(Spy.seen), axis=0)
        rows = {r.tobytes() for r in seen}
        assert not any(r.tobytes() in rows for r in X[test])
        allowed = {r.tobytes() for r in X[np.union1d(train, val)]}
        assert rows <= allowed
        if "cv" in tune:  # cross validation does not use the validation part either
            assert not any(r.tobytes() in rows for r in X[val])


# ------------------------------------------------------------------------------ choice


def test_runner_chooses_the_lowest_held_out_error_and_records_it(spy, tmp_path):
    exp = config({"grid": {"noise": [3.0, 0.0]}, "cv": 3}, normalize="zscore")
    messages = []
    summary = run_experiment(exp, tmp_path, echo=messages.append)
    assert summary.failed == 0 and summary.ran == 4
    tuning = pd.read_csv(tmp_path / "tuned" / "tuning.csv", dtype={"task_id": str})
    assert len(tuning) == 2 * 2 * 3  # splits × grid points × folds
    assert tuning["cpu_model"].nunique() == 1  # the host of the fit times, on every row
    runs = pd.read_csv(tmp_path / "tuned" / "runs.csv", dtype={"task_id": str})
    spy_rows = runs[runs.solver == "spy"]
    for _, row in spy_rows.iterrows():
        mine = tuning[(tuning.split == row.split)]
        means = mine.groupby("params").error.mean()
        assert json.loads(row.tuned_params) == json.loads(means.idxmin())
        assert row.tuning_error == pytest.approx(means.min())
        assert row.tuning_time == pytest.approx(mine.fit_time.sum())
        assert json.loads(row.solver_params)["noise"] == json.loads(row.tuned_params)["noise"]
    # the noisy metric is clearly worse: the clean one must have been chosen
    assert (spy_rows.tuned_params.map(lambda s: json.loads(s)["noise"]) == 0.0).all()
    # the final model was refitted on the whole training part (126 wine points)
    assert any(len(x) == 126 for x in Spy.seen)

    again = run_experiment(exp, tmp_path, echo=messages.append)  # resumes: nothing to redo
    assert again.ran == 0
    assert len(pd.read_csv(tmp_path / "tuned" / "tuning.csv")) == 12


def test_choose_breaks_ties_by_grid_order_and_refuses_incomplete_tuning(spy):
    exp = config({"grid": {"noise": [0.5, 0.0, 0.25]}, "cv": 2})
    task = next(t for t in plan(exp)[0] if t.solver.name == "spy")
    fits = tune_tasks(task)
    errors = {0.5: [0.2, 0.2], 0.0: [0.1, 0.3], 0.25: [0.3, 0.1]}  # all means 0.2
    rows = pd.DataFrame([{"task_id": tt.task_id, "error": errors[dict(tt.point)["noise"]].pop(0),
                          "fit_time": 1.0} for tt in fits])
    params, mean, fit_time = choose(task, rows)
    assert params == {"noise": 0.5} and mean == pytest.approx(0.2) and fit_time == 6.0
    rows.loc[2, "error"] = 0.0  # first fold of noise = 0.0 (rows are point-major): mean 0.15
    assert choose(task, rows)[0] == {"noise": 0.0}
    with pytest.raises(TuningIncomplete, match="1 of 6"):
        choose(task, rows.iloc[1:])


def test_failed_tuning_fits_fail_the_task_and_are_retried(spy, tmp_path, monkeypatch):
    exp = config({"grid": {"noise": [0.0, 1.0]}, "cv": 2})
    real = runner.RUN_KINDS["knn"]

    def flaky(tt, blas_threads=1):
        if dict(tt.point)["noise"] == 1.0 and tt.fold[2] == 0:
            try:
                raise RuntimeError("injected")
            except RuntimeError as exc:
                return {**failure_row(tt.task, exc), "task_id": tt.task_id}
        return real.run_tuning_task(tt, blas_threads)

    monkeypatch.setitem(runner.RUN_KINDS, "knn", dataclasses.replace(real, run_tuning_task=flaky))
    first = run_experiment(exp, tmp_path, echo=lambda m: None)
    runs = pd.read_csv(tmp_path / "tuned" / "runs.csv")
    assert set(runs.solver) == {"euclidean"}
    errors = pd.read_csv(tmp_path / "tuned" / "errors.csv")
    assert errors.message.str.contains("tuning fits are missing").sum() == 2
    assert first.failed == 4
    monkeypatch.setitem(runner.RUN_KINDS, "knn", real)
    second = run_experiment(exp, tmp_path, echo=lambda m: None)
    assert second.ran == 2 and second.failed == 0


# ------------------------------------------------------------------------------ config


@pytest.mark.parametrize("tune,split,problem", [
    ({"grid": {"noise": [0, 1]}}, {}, "exactly one of"),
    ({"grid": {"noise": [0, 1]}, "cv": 3, "validation": 0.15}, {"validation_fraction": 0.15},
     "exactly one of"),
    ({"grid": {"noise": [0, 1]}, "cv": 1}, {}, "at least 2"),
    ({"grid": {"nois": [0, 1]}, "cv": 3}, {}, "did you mean 'noise'"),
    ({"grid": {"noise": []}, "cv": 3}, {}, "non-empty list"),
    ({"grid": {"noise": 0.5}, "cv": 3}, {}, "non-empty list"),
    ({"grid": {}, "cv": 3}, {}, "at least one parameter"),
    ({"grid": {"noise": [0, 1]}, "validation": 0.15}, {}, "split.validation_fraction"),
    ({"grid": {"noise": [0, 1]}, "folds": 3}, {}, "unknown key"),
])
def test_bad_tune_blocks_are_refused(spy, tune, split, problem):
    with pytest.raises(ConfigError, match=problem) as err:
        config(tune, **split)
    assert "solvers[1].tune" in str(err.value)


def test_a_parameter_cannot_be_both_fixed_and_tuned(spy):
    with pytest.raises(ConfigError, match="also fixed in params"):
        parse_config({"name": "t", "datasets": [{"name": "wine"}],
                      "solvers": [{"name": "spy", "params": {"noise": 1.0},
                                   "tune": {"grid": {"noise": [0, 1]}, "cv": 3}}]}, source="t")


def test_tune_block_enters_the_task_id(spy):
    a = next(t for t in plan(config({"grid": {"noise": [0.0, 1.0]}, "cv": 3}))[0]
             if t.solver.name == "spy")
    b = next(t for t in plan(config({"grid": {"noise": [0.0, 2.0]}, "cv": 3}))[0]
             if t.solver.name == "spy")
    assert a.task_id != b.task_id


def test_predefined_split_uses_the_datasets_own_parts(mirror):
    exp = parse_config({"name": "pre", "datasets": [{"name": "optdigits", "normalize": "none"}],
                        "split": {"predefined": True, "n_splits": 1},
                        "solvers": [{"name": "euclidean"}]}, source="test")
    task = plan(exp)[0][0]
    train, val, test = split_parts(task)[:3]
    np.testing.assert_array_equal(train, np.arange(3823))
    np.testing.assert_array_equal(test, np.arange(3823, 5620))
    assert len(val) == 0
    with pytest.raises(ConfigError, match="must be 1 with split.predefined"):
        parse_config({"name": "p", "datasets": [{"name": "optdigits"}],
                      "split": {"predefined": True}, "solvers": [{"name": "euclidean"}]}, "t")
    wine = parse_config({"name": "p", "datasets": [{"name": "wine"}],
                         "split": {"predefined": True, "n_splits": 1},
                         "solvers": [{"name": "euclidean"}]}, source="t")
    with pytest.raises(ValueError, match="no predefined train/test parts"):
        split_parts(plan(wine)[0][0])
