"""End-to-end runner: determinism across n_jobs and backends, resume after a kill, skipping,
failures, timing mode. Every results folder lives in tmp_path."""

from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler

from dml_bench.run import execution
from dml_bench.experiment.config import load_config, parse_config
from dml_bench.experiment.sections import DataPlace
from dml_bench.datasets import load_dataset
from dml_bench.errors import RunRefused
from dml_bench.run.results import RUN_COLUMNS, RunStore
from dml_bench.run.runner import Selection, run_experiment
from dml_bench.splits import derive_seed, train_test_split_indices
from dml_bench.experiment.knn import plan, prepare_split

pytestmark = pytest.mark.usefixtures("tmp_cache")

TIMING_COLUMNS = ["fit_time", "fit_cpu_time", "constraint_time", "finished_at", "n_jobs"]

QUICK = {  # the quickstart, made small: wine + iris, Euclidean + DML-eig (50 iterations)
    "name": "quick",
    "datasets": [{"name": "wine", "normalize": "zscore"}, {"name": "iris", "normalize": "zscore"}],
    "split": {"train_fraction": 0.7, "n_splits": 2, "seed": 0, "stratify": True},
    "constraints": {"generator": "knn_triplets", "params": {"k": 3}},
    "solvers": [{"name": "euclidean"}, {"name": "dml_eig", "params": {"mu": 1e-4, "max_iter": 50}}],
    "evaluation": {"knn_k": 3, "tie_break": "nearest"},
    "execution": {"n_jobs": 2, "backend": "loky"},
}


def experiment(**changes):
    cfg = {**QUICK, **changes}
    return parse_config(cfg, source="test")


def with_execution(exp, **settings):
    """``exp`` with its ``execution:`` section changed."""
    return replace(exp, execution=replace(exp.execution, **settings))


def quiet_run(exp, root, **kw):
    messages = []
    summary = run_experiment(exp, root, echo=messages.append, **kw)
    return summary, messages


def runs_of(root, name="quick") -> pd.DataFrame:
    return pd.read_csv(root / name / "runs.csv", dtype={"task_id": str})


def comparable(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop(columns=TIMING_COLUMNS).sort_values("task_id").reset_index(drop=True)


def planned_ids(exp) -> list[str]:
    tasks, _ = plan(exp, check_data=lambda name: None)
    return [t.task_id for t in tasks]


# --------------------------------------------------------------------------- (a) n_jobs


def test_n_jobs_do_not_change_results(tmp_path):
    exp = experiment()
    s1, _ = quiet_run(with_execution(exp, n_jobs=1), tmp_path / "j1")
    s2, _ = quiet_run(with_execution(exp, n_jobs=2), tmp_path / "j2")
    assert (s1.total, s1.ran, s1.failed, s2.ran, s2.failed) == (8, 8, 0, 8, 0)  # 2 × 2 × 2
    r1, r2 = runs_of(tmp_path / "j1"), runs_of(tmp_path / "j2")
    assert list(r1.columns) == RUN_COLUMNS
    assert set(r1["n_jobs"]) == {1} and set(r2["n_jobs"]) == {2}
    # every row names the CPU its fit_time was measured on, as the kernel lists it
    assert r1["cpu_model"].nunique() == 1 and r1["cpu_model"].iloc[0]
    if Path("/proc/cpuinfo").exists():
        assert f": {r1['cpu_model'].iloc[0]}\n" in Path("/proc/cpuinfo").read_text()
    pd.testing.assert_frame_equal(comparable(r1), comparable(r2), check_exact=True)
    assert sorted(r1["task_id"]) == sorted(planned_ids(exp))
    # sizes worked out by hand: wine 42 + 50 + 34 = 126 training points, iris 3 × 35 = 105;
    # k = 3: |S| = |D| = 3 n, |T| = 9 n (Ying & Li 2012, Table 3)
    by_ds = r1.groupby("dataset").first()
    assert by_ds.loc["wine", ["n_train", "n_test", "n_features", "n_classes"]].tolist() == \
        [126, 52, 13, 3]
    assert by_ds.loc["iris", ["n_train", "n_test", "n_features", "n_classes"]].tolist() == \
        [105, 45, 4, 3]
    assert by_ds.loc["wine", ["n_similar", "n_dissimilar", "n_triplets"]].tolist() == \
        [378, 378, 1134]
    assert by_ds.loc["iris", ["n_similar", "n_dissimilar", "n_triplets"]].tolist() == \
        [315, 315, 945]
    for (dataset, split), seed in r1.groupby(["dataset", "split"])["seed"].first().items():
        assert seed == derive_seed(0, dataset, split)
    dml = r1[r1["solver"] == "dml_eig"]
    assert (dml["n_iter"] == 50).all() and r1["error"].between(0, 1).all()
    # the resolved config written next to the results re-parses to the same experiment
    written = yaml.safe_load((tmp_path / "j1" / "quick" / "config.yaml").read_text())
    assert parse_config(written) == with_execution(exp, n_jobs=1)


def test_euclidean_error_matches_sklearn_pipeline(tmp_path):
    # independent reference for the Euclidean rows: StandardScaler fitted on the training part +
    # KNeighborsClassifier(3) (its tie-break is "lowest")
    exp = experiment(solvers=[{"name": "euclidean"}], evaluation={"tie_break": "lowest"},
                     split={"n_splits": 3, "seed": 5})
    summary, _ = quiet_run(with_execution(exp, n_jobs=1), tmp_path)
    assert summary.ran == 6
    for row in runs_of(tmp_path).itertuples():
        X, y, _ = load_dataset(row.dataset)
        train, test = train_test_split_indices(y, 0.7, derive_seed(5, row.dataset, row.split))
        scaler = StandardScaler().fit(X[train])
        knn = KNeighborsClassifier(3, algorithm="brute").fit(scaler.transform(X[train]), y[train])
        expected = np.mean(knn.predict(scaler.transform(X[test])) != y[test])
        assert row.error == pytest.approx(expected, abs=1e-12), (row.dataset, row.split)
        assert math.isclose(row.error * row.n_test, round(row.error * row.n_test))


# --------------------------------------------------------------------------- (b) dask


def test_dask_local_cluster_matches_loky(tmp_path, monkeypatch):
    distributed = pytest.importorskip("dask.distributed", reason="dask.distributed not installed")
    clusters = []
    real = distributed.LocalCluster

    def spy(*args, **kwargs):
        cluster = real(*args, **kwargs)
        clusters.append((kwargs, cluster))
        return cluster

    monkeypatch.setattr(distributed, "LocalCluster", spy)
    exp = experiment()
    quiet_run(with_execution(exp, backend="loky", n_jobs=2), tmp_path / "loky")
    summary, _ = quiet_run(with_execution(exp, backend="dask", n_jobs=2, scheduler=None),
                           tmp_path / "dask")
    assert (summary.ran, summary.failed) == (8, 0)
    pd.testing.assert_frame_equal(comparable(runs_of(tmp_path / "loky")),
                                  comparable(runs_of(tmp_path / "dask")), check_exact=True)
    # the runner made one loopback-only cluster with n_jobs single-threaded workers, and closed it
    assert len(clusters) == 1
    kwargs, cluster = clusters[0]
    assert kwargs["host"] == "127.0.0.1" and kwargs["n_workers"] == 2
    assert kwargs["threads_per_worker"] == 1
    assert kwargs["dashboard_address"] == "127.0.0.1:0"  # loopback, a free port
    assert "clos" in str(cluster.status).lower()


# --------------------------------------------------------------------------- (c) kill + resume

KILL_CONFIG = {
    "name": "killme",
    "datasets": [{"name": "wine"}, {"name": "iris"}, {"name": "breast_cancer"}],
    "split": {"n_splits": 8, "seed": 1},
    # tol 0: DML-eig always runs its 1000 iterations (~0.1-0.3 s per task), so the run lasts
    # seconds and is killed part-way
    "solvers": [{"name": "euclidean"}, {"name": "dml_eig", "params": {"max_iter": 1000, "tol": 0.0}}],
    "execution": {"n_jobs": 1, "backend": "sequential"},
}


def complete_rows(path) -> int:
    """Data rows ending with a newline (what survives a kill)."""
    if not path.exists():
        return 0
    return max(path.read_bytes().count(b"\n") - 1, 0)


def test_killed_run_resumes_each_task_once(tmp_path, write_yaml):
    cfg = write_yaml(KILL_CONFIG, "kill.yaml")
    root = tmp_path / "results"
    runs_csv = root / "killme" / "runs.csv"
    cmd = [sys.executable, "-m", "dml_bench", "run", str(cfg), "--results-dir", str(root)]
    expected = planned_ids(load_config(cfg))
    assert len(expected) == len(set(expected)) == 3 * 2 * 8

    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=os.environ.copy())
    try:
        deadline = time.monotonic() + 120
        while complete_rows(runs_csv) < 2:
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "no rows appeared in runs.csv"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    survived = RunStore(root / "killme").read()
    n_before = len(survived)
    assert 2 <= n_before < len(expected), "killed after every task had finished"
    assert set(survived["task_id"]) <= set(expected)

    done = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy(), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (f"killme: {len(expected) - n_before} tasks run, {n_before} already done, 0 failed"
            in done.stdout)
    runs = runs_of(root, "killme")
    assert len(runs) == len(expected)
    assert runs["task_id"].value_counts().max() == 1
    assert sorted(runs["task_id"]) == sorted(expected)
    # rows written before the kill were kept, not recomputed
    kept = runs.set_index("task_id").loc[survived["task_id"], "finished_at"]
    assert kept.tolist() == survived["finished_at"].tolist()
    assert (root / "killme" / "summary.csv").exists()


def test_two_runs_on_one_folder_share_the_tasks(tmp_path, write_yaml):
    """Two `dmlbench run` processes started together on one config: every task runs once, in
    one of them, and each reports the tasks the other ran (claims: results.TaskClaims)."""
    cfg = write_yaml({**KILL_CONFIG, "name": "shared",
                      "solvers": [{"name": "euclidean"},
                                  {"name": "dml_eig", "params": {"max_iter": 200, "tol": 0.0}}]},
                     "shared.yaml")
    root = tmp_path / "results"
    cmd = [sys.executable, "-m", "dml_bench", "run", str(cfg), "--results-dir", str(root)]
    expected = planned_ids(load_config(cfg))
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=os.environ.copy()) for _ in range(2)]
    outputs = [proc.communicate(timeout=300) for proc in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err[-2000:]
    runs = runs_of(root, "shared")
    assert sorted(runs["task_id"]) == sorted(expected)  # each task once, none lost
    counts = [re.search(r"shared: (\d+) tasks run, (\d+) already done, 0 failed, 0 dataset×"
                        r"solver skipped(?:, (\d+) run by another process)?", out).groups()
              for out, _ in outputs]
    ran, before, elsewhere = ([int(c[i] or 0) for c in counts] for i in range(3))
    assert sum(ran) == len(expected)
    for i in range(2):  # what a run did not run, the other ran: before it started, or meanwhile
        assert before[i] + elsewhere[i] == ran[1 - i]


def small_experiment():
    return experiment(solvers=[{"name": "euclidean"}], split={"n_splits": 3},
                      execution={"n_jobs": 1, "backend": "sequential"})


def tid(i: int) -> str:
    """A task id (16 hexadecimal digits) for the i-th row of a hand-made log."""
    return f"{i:016x}"


def log_row(i):
    return {"task_id": tid(i), "experiment": "seg", "dataset": "wine", "split": i % 10,
            "solver": "lmnn", "label": "lmnn", "error": 0.01 * i, "fit_time": 1.5 * i}


def test_a_log_goes_on_in_numbered_files_below_the_segment_size(tmp_path, monkeypatch):
    """runs.csv, runs.2.csv, ..., runs.11.csv: each file at most SEGMENT_BYTES with its own
    header, read back as one log in the order written (runs.10.csv after runs.9.csv)."""
    from dml_bench.run import results
    monkeypatch.setattr(results, "SEGMENT_BYTES", 700)
    store = RunStore(tmp_path)
    ids = [log_row(i)["task_id"] for i in range(50)]
    for i in range(50):
        store.append(log_row(i))
    files = results.log_segments(tmp_path / "runs.csv")
    names = [f.name for f in files]
    assert names[:3] == ["runs.csv", "runs.2.csv", "runs.3.csv"] and len(names) > 10
    assert names == ["runs.csv"] + [f"runs.{k}.csv" for k in range(2, len(names) + 1)]
    header = ",".join(RUN_COLUMNS) + "\n"
    for f in files:
        text = f.read_text()
        assert len(text.encode()) <= 700 and text.startswith(header) and text.count("\n") > 1
    assert list(store.read()["task_id"]) == ids
    assert store.finished() == set(ids)
    # a batch (rows set aside in one write) fills the last file, then new ones
    RunStore(tmp_path).archive(set(ids[5:30]))
    assert list(store.read()["task_id"]) == ids[:5] + ids[30:]
    moved = results.log_segments(tmp_path / "runs_superseded.csv")
    assert len(moved) > 1 and all(len(f.read_bytes()) <= 700 for f in moved)
    assert list(pd.concat(pd.read_csv(f, dtype={"task_id": str}) for f in moved)["task_id"]) \
        == ids[5:30]
    # a torn last row (a killed run) is cut before the next append, in the last file only
    with open(files[-1], "a") as fh:
        fh.write(f"{tid(999)},seg,wi")
    assert list(store.read()["task_id"]) == ids[:5] + ids[30:]
    store.append(log_row(50))
    assert list(store.read()["task_id"]) == ids[:5] + ids[30:] + [tid(50)]
    assert all(f.read_bytes().endswith(b"\n") for f in results.log_segments(store.runs))


def test_a_row_longer_than_the_segment_size_gets_a_file_of_its_own(tmp_path, monkeypatch):
    from dml_bench.run import results
    monkeypatch.setattr(results, "SEGMENT_BYTES", 10)
    store = RunStore(tmp_path)
    store.archive(set())  # nothing to move: no file is written
    for i in range(3):
        store.append(log_row(i))
    files = results.log_segments(store.runs)
    assert [f.read_text().count("\n") for f in files] == [2, 2, 2]  # header + one whole row
    assert list(store.read()["task_id"]) == [tid(0), tid(1), tid(2)]


def test_a_run_sees_rows_that_land_in_a_new_file_of_the_log(tmp_path, monkeypatch):
    from dml_bench.run import results
    monkeypatch.setattr(results, "SEGMENT_BYTES", 400)
    store = RunStore(tmp_path)
    finished = execution.finished_reader(store, require_timing=False)
    store.append(log_row(0))
    assert finished() == {tid(0)}
    for i in range(1, 4):
        store.append(log_row(i))
    assert len(results.log_segments(store.runs)) > 1
    assert finished() == {tid(0), tid(1), tid(2), tid(3)}


def test_half_written_last_line_is_repaired(tmp_path):
    exp = small_experiment()
    ids = planned_ids(exp)
    quiet_run(exp, tmp_path)
    runs_csv = tmp_path / "quick" / "runs.csv"
    before = runs_of(tmp_path)
    with open(runs_csv, "a") as fh:
        fh.write(f"{ids[0][:8]},quick,wine,0,12")  # a kill in the middle of a line
    assert len(RunStore(tmp_path / "quick").read()) == len(ids)  # ignored when reading

    summary, _ = quiet_run(exp, tmp_path)
    assert (summary.ran, summary.done_before) == (0, len(ids))
    text = runs_csv.read_text()
    assert text.endswith("\n") and text.count("\n") == len(ids) + 1
    after = runs_of(tmp_path)
    pd.testing.assert_frame_equal(after, before, check_exact=True)  # surviving rows unchanged


def test_truncated_real_row_is_recomputed(tmp_path):
    exp = small_experiment()
    ids = planned_ids(exp)
    quiet_run(exp, tmp_path)
    runs_csv = tmp_path / "quick" / "runs.csv"
    text = runs_csv.read_text()
    last_start = text.rstrip("\n").rfind("\n") + 1
    lost_id = text[last_start:].split(",")[0]
    runs_csv.write_text(text[: last_start + (len(text) - last_start) // 2])  # half of the row
    summary, _ = quiet_run(exp, tmp_path)
    assert (summary.ran, summary.done_before) == (1, len(ids) - 1)
    runs = runs_of(tmp_path)
    assert sorted(runs["task_id"]) == sorted(ids)
    assert runs["task_id"].tolist()[-1] == lost_id


def test_only_half_a_header(tmp_path):
    # killed during the very first write: runs.csv holds part of the header and no newline
    exp = small_experiment()
    (tmp_path / "quick").mkdir()
    (tmp_path / "quick" / "runs.csv").write_text("task_id,experim")
    summary, _ = quiet_run(exp, tmp_path)
    assert (summary.ran, summary.done_before) == (3 * 2, 0)
    runs = runs_of(tmp_path)
    assert list(runs.columns) == RUN_COLUMNS
    assert sorted(runs["task_id"]) == sorted(planned_ids(exp))


# --------------------------------------------------------------------------- (d) skip / force


def test_rerun_skips_finished_and_force_recomputes(tmp_path):
    exp = with_execution(experiment(), n_jobs=1)
    ids = planned_ids(exp)
    first, _ = quiet_run(exp, tmp_path)
    assert (first.total, first.ran, first.done_before) == (8, 8, 0)
    content = (tmp_path / "quick" / "runs.csv").read_bytes()

    second, messages = quiet_run(exp, tmp_path)
    assert (second.total, second.ran, second.done_before, second.failed) == (8, 0, 8, 0)
    assert (tmp_path / "quick" / "runs.csv").read_bytes() == content
    assert any("8 of 8 tasks already" in m for m in messages)

    forced, _ = quiet_run(exp, tmp_path, select=Selection(force=True))
    assert (forced.ran, forced.done_before) == (8, 0)
    runs = runs_of(tmp_path)
    assert len(runs) == 8 and sorted(runs["task_id"]) == sorted(ids)
    pd.testing.assert_frame_equal(comparable(runs),
                                  comparable(pd.read_csv(pd.io.common.BytesIO(content),
                                                         dtype={"task_id": str})),
                                  check_exact=True)


def test_changed_setting_is_a_new_task(tmp_path):
    exp = small_experiment()
    quiet_run(exp, tmp_path)
    before = (tmp_path / "quick" / "runs.csv").read_bytes()
    changed = replace(exp, evaluation=replace(exp.evaluation, knn_k=5))
    # finished rows never vanish silently: the run stops first, naming them
    with pytest.raises(RunRefused) as refused:
        quiet_run(changed, tmp_path)
    message = str(refused.value)
    assert "6 finished rows of runs.csv" in message and "--supersede" in message
    first = runs_of(tmp_path).iloc[0]
    assert f"{first['dataset']} split {first['split']} {first['label']} [{first['task_id']}]" \
        in message
    assert "\n" not in message
    assert (tmp_path / "quick" / "runs.csv").read_bytes() == before
    assert not (tmp_path / "quick" / "runs_superseded.csv").exists()
    summary, _ = quiet_run(changed, tmp_path, select=Selection(supersede=True))
    assert summary.ran == summary.total == 6  # different knn_k -> different task ids
    # the old rows no longer belong to the config: moved aside, not mixed into the summary
    assert len(runs_of(tmp_path)) == 6
    superseded = pd.read_csv(tmp_path / "quick" / "runs_superseded.csv", dtype={"task_id": str})
    assert len(superseded) == 6
    assert set(superseded["task_id"]).isdisjoint(runs_of(tmp_path)["task_id"])
    assert (superseded["knn_k"] == 3).all() and (runs_of(tmp_path)["knn_k"] == 5).all()


# --------------------------------------------------------------------------- (e) failures


def test_failing_task_goes_to_errors_csv(tmp_path):
    exp = with_execution(experiment(solvers=[
        {"name": "euclidean"},
        {"name": "sdpmetric", "label": "broken", "params": {"c1": 0.5, "c2": 0.1, "max_iter": 5}},
    ]), n_jobs=1)
    summary, messages = quiet_run(exp, tmp_path)
    assert (summary.total, summary.ran, summary.failed) == (8, 4, 4)
    runs = runs_of(tmp_path)
    assert set(runs["label"]) == {"euclidean"} and len(runs) == 4
    errors = pd.read_csv(tmp_path / "quick" / "errors.csv", dtype={"task_id": str})
    assert len(errors) == 4 and set(errors["label"]) == {"broken"}
    assert set(errors["error_type"]) == {"ValueError"}
    assert errors["message"].str.contains("need c1 < c2").all()
    assert sorted(zip(errors["dataset"], errors["split"])) == \
        [("iris", 0), ("iris", 1), ("wine", 0), ("wine", 1)]
    assert set(errors["task_id"]).isdisjoint(runs["task_id"])
    assert sum("FAILED" in m for m in messages) == 4
    # failed tasks are not finished: the next run retries them (and they fail again)
    again, _ = quiet_run(exp, tmp_path)
    assert (again.done_before, again.ran, again.failed) == (4, 0, 4)


def test_failing_task_in_parallel(tmp_path):
    exp = experiment(solvers=[
        {"name": "euclidean"},
        {"name": "sdpmetric", "label": "broken", "params": {"c1": 0.5, "c2": 0.1}},
    ])
    summary, _ = quiet_run(with_execution(exp, n_jobs=2, backend="loky"), tmp_path)
    assert (summary.ran, summary.failed) == (4, 4)


# --------------------------------------------------------------------------- (f) skipped


def test_planned_solver_and_unavailable_dataset_are_skipped(tmp_path, monkeypatch, planned):
    monkeypatch.delenv("DMLBENCH_DATA_MIRROR", raising=False)
    attempts = []

    def offline(request, *args, **kwargs):
        attempts.append(getattr(request, "full_url", request))
        raise urllib.error.URLError("network disabled in this test")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    exp = experiment(datasets=[{"name": "wine"}, {"name": "pima"}],
                     solvers=[{"name": "euclidean"}, {"name": planned}],
                     execution={"n_jobs": 1})
    summary, messages = quiet_run(exp, tmp_path)
    assert (summary.total, summary.ran, summary.failed) == (2, 2, 0)  # wine × euclidean × 2
    skipped = {(d, s): reason for d, s, reason in summary.skipped}
    assert set(skipped) == {("wine", planned), ("pima", "euclidean"), ("pima", planned)}
    assert "not implemented" in skipped[("wine", planned)]
    assert skipped[("pima", "euclidean")].startswith("data not available")
    assert skipped[("pima", planned)].startswith("data not available")
    assert attempts  # the loader tried (and failed) to fetch pima instead of crashing
    assert any(m.startswith(f"skipped pima × euclidean, pima × {planned}: data not available")
               for m in messages)
    assert any(m.startswith(f"skipped wine × {planned}: not implemented") for m in messages)
    runs = runs_of(tmp_path)
    assert set(runs["dataset"]) == {"wine"} and set(runs["label"]) == {"euclidean"}
    assert not (tmp_path / "quick" / "errors.csv").exists()


def test_plan_with_check_data(planned):
    exp = experiment(solvers=[{"name": "euclidean"}, {"name": planned}])
    tasks, skipped = plan(exp, check_data=lambda name: "gone" if name == "iris" else None)
    assert [(t.dataset.name, t.split, t.solver.name) for t in tasks] == \
        [("wine", 0, "euclidean"), ("wine", 1, "euclidean")]
    assert [(d, s) for d, s, _ in skipped] == [("wine", planned), ("iris", "euclidean"),
                                               ("iris", planned)]
    assert skipped[1][2] == "gone"


def test_per_dataset_n_splits():
    exp = experiment(datasets=[{"name": "wine", "n_splits": 3}, {"name": "iris"}])
    tasks, _ = plan(exp, check_data=lambda name: None)
    # (3 + 2 default splits) × 2 solvers
    assert len(tasks) == 10 and len({t.task_id for t in tasks}) == 10


def test_mirror_dataset_is_planned_and_split(mirror, monkeypatch):
    monkeypatch.setenv("DMLBENCH_DATA_MIRROR", str(mirror))
    if not (mirror / "pima").exists():
        pytest.skip(f"the mirror {mirror} has no pima folder")
    exp = experiment(datasets=[{"name": "pima"}], solvers=[{"name": "euclidean"}])
    tasks, skipped = plan(exp, DataPlace(str(mirror)))
    assert skipped == [] and len(tasks) == 2
    X_train, y_train, X_test, y_test, c, _, _ = prepare_split(tasks[0])
    # 500 negatives, 268 positives: ceil(0.7·500) + ceil(0.7·268) = 350 + 188 = 538
    assert len(y_train) == 538 and len(y_test) == 768 - 538
    assert c.counts() == {"n_similar": 538 * 3, "n_dissimilar": 538 * 3, "n_triplets": 538 * 9}


# --------------------------------------------------------------------------- (g) timing


def test_timing_mode_runs_sequentially(tmp_path, monkeypatch):
    exp = experiment(execution={"n_jobs": 2, "backend": "loky", "timing": True})
    assert exp.execution.timing and exp.execution.n_jobs == 2

    def no_parallel(*args, **kwargs):
        raise AssertionError("timing mode must not run tasks in parallel workers")

    # first a normal (parallel) run; its rows are not timing rows
    quiet_run(with_execution(exp, timing=False), tmp_path)
    assert set(runs_of(tmp_path)["timing_mode"]) == {False}

    monkeypatch.setattr(execution, "Parallel", no_parallel)
    summary, _ = quiet_run(exp, tmp_path)
    assert (summary.ran, summary.done_before) == (8, 0)  # non-timing rows are recomputed
    runs = runs_of(tmp_path)
    assert len(runs) == 8 and runs["task_id"].is_unique
    assert set(runs["timing_mode"]) == {True} and set(runs["n_jobs"]) == {1}
    assert (runs["fit_time"] >= 0).all() and (runs["fit_cpu_time"] >= 0).all()
    again, _ = quiet_run(exp, tmp_path)
    assert (again.ran, again.done_before) == (0, 8)


@pytest.mark.parametrize("interruption", [SystemExit(128 + signal.SIGTERM), KeyboardInterrupt()])
def test_an_interruption_inside_a_compiled_call_stops_the_run(mirror, monkeypatch, interruption):
    """A SIGTERM (``cli._exit_on_sigterm``'s SystemExit) or a Ctrl-C that lands while a numba
    function runs reaches Python as ``SystemError: CPUDispatcher(...) returned a result with an
    exception set`` caused by the interruption (CPython's chaining, reproduced by sending SIGTERM
    during ``linalg._pair_sq_distances``). The task must re-raise the interruption, not record a
    failed task and let the run go on (the flaky ``test_sigterm_stops_a_cli_run_like_ctrl_c``)."""
    from dml_bench.run import knn as runner
    from dml_bench.experiment.knn import all_tasks

    config = Path(__file__).resolve().parents[1] / "configs" / "quickstart.yaml"
    task = next(iter(all_tasks(load_config(config), DataPlace(str(mirror)))))

    def interrupted(*args, **kwargs):
        try:
            raise interruption
        except BaseException as stop:
            raise SystemError("CPUDispatcher(<function _pair_sq_distances>) returned a result "
                              "with an exception set") from stop

    monkeypatch.setattr(runner, "fit_task_solver", interrupted)
    with pytest.raises(type(interruption)):
        runner.run_task(task)

    def broken(*args, **kwargs):
        raise SystemError("a solver's own fault")

    monkeypatch.setattr(runner, "fit_task_solver", broken)
    row = runner.run_task(task)
    assert row["_failed"] and row["error_type"] == "SystemError"


def test_a_user_file_edited_in_place_reruns_its_tasks_and_no_others(tmp_path):
    """The task id carries the sha256 of a user's file: a CSV rewritten in place (same path and
    size, other values) makes new tasks, its finished rows are refused until --supersede moves
    them aside, and the new rows hold the new data's error; a file left as it was keeps its rows.
    The rewrite moves the mtime 10 s on, past any file system's timestamp resolution."""
    rng = np.random.default_rng(3)
    labels = np.arange(30) % 2
    X = np.c_[5 * labels + rng.uniform(size=30), rng.uniform(size=30)]

    def write(path, features):
        path.write_text("a,b,label\n" + "".join(f"{u:.4f},{v:.4f},{c}\n"
                                                for (u, v), c in zip(features, labels)))

    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    write(a, X)
    write(b, X)
    exp = parse_config({"name": "edits", "solvers": ["euclidean"], "split": {"n_splits": 2},
                        "datasets": [{"path": str(f), "label_column": "label"} for f in (a, b)],
                        "evaluation": {"tie_break": "lowest"},
                        "execution": {"backend": "sequential"}}, source="test")
    root = tmp_path / "results"
    first, _ = quiet_run(exp, root)
    assert (first.ran, first.done_before) == (4, 0)
    old = runs_of(root, "edits")
    assert (old["error"] == 0).all()  # separable by the first feature

    size = a.stat().st_size
    shuffled = X[rng.permutation(30)]  # the same values in other rows: the labels do not follow
    write(a, shuffled)
    st = a.stat()
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000_000))
    assert a.stat().st_size == size
    with pytest.raises(RunRefused, match="no longer contains the tasks of 2 finished rows"):
        quiet_run(exp, root)
    summary, _ = quiet_run(exp, root, select=Selection(supersede=True))
    assert (summary.ran, summary.done_before) == (2, 2)

    runs = runs_of(root, "edits")
    assert len(runs) == 4 and runs["task_id"].is_unique
    moved = pd.read_csv(root / "edits" / "runs_superseded.csv", dtype={"task_id": str})
    assert sorted(moved["task_id"]) == sorted(old.loc[old["dataset"] == "a", "task_id"])
    kept = ["task_id", "finished_at", "error"]
    pd.testing.assert_frame_equal(runs.loc[runs["dataset"] == "b", kept].reset_index(drop=True),
                                  old.loc[old["dataset"] == "b", kept].reset_index(drop=True))
    # independent reference: the new file's values, z-scored on the training part, 3-NN
    from dml_bench.splits import split_indices

    values = pd.read_csv(a)[["a", "b"]].to_numpy()
    for row in runs[runs["dataset"] == "a"].itertuples():
        train, _, test = split_indices(labels, 0.7, row.seed)
        scaler = StandardScaler().fit(values[train])
        knn = KNeighborsClassifier(3, algorithm="brute").fit(scaler.transform(values[train]),
                                                             labels[train])
        expected = np.mean(knn.predict(scaler.transform(values[test])) != labels[test])
        assert row.error == pytest.approx(expected, abs=1e-12) and expected > 0


# --------------------------------------------------------------------------- (g) damaged logs


def file_lines(path) -> list[bytes]:
    return path.read_bytes().split(b"\n")[:-1]


def test_corrupt_lines_anywhere_are_set_aside_once(tmp_path, capsys):
    store = RunStore(tmp_path)
    for i in range(3):
        store.append(log_row(i))
    runs = tmp_path / "runs.csv"
    clean = file_lines(runs)
    junk = [b"\x00\x01\x89PNG binary", "caf\xe9,latin-1".encode("latin-1"), clean[0],
            f"{tid(7)},seg,wine".encode(), clean[1].replace(tid(0).encode(), b"not-a-task-id-00")]
    mixed = [clean[0], clean[1], junk[0], clean[2], junk[1], junk[2], clean[3], junk[3], junk[4]]
    runs.write_bytes(b"".join(line + b"\n" for line in mixed))

    assert list(store.read()["task_id"]) == [tid(0), tid(1), tid(2)]
    assert capsys.readouterr().err == \
        f"warning: {runs}: 5 corrupt lines set aside into runs.csv.corrupt\n"
    assert file_lines(runs) == clean  # the good rows, byte for byte
    assert (tmp_path / "runs.csv.corrupt").read_bytes() == b"".join(
        b"runs.csv:%d: %s\n" % (number, line) for number, line in zip((3, 5, 6, 8, 9), junk))
    # set aside once: reading again neither warns nor rewrites
    before = runs.stat()
    assert list(store.read()["task_id"]) == [tid(0), tid(1), tid(2)]
    assert capsys.readouterr().err == ""
    after = runs.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    # the next row goes after the good ones
    store.append(log_row(3))
    assert list(store.read()["task_id"]) == [tid(i) for i in range(4)]


def test_a_run_checks_every_log_and_segment_before_it_writes(tmp_path, capsys, monkeypatch):
    from dml_bench.run import results
    from dml_bench.run.results import ERROR_COLUMNS

    monkeypatch.setattr(results, "SEGMENT_BYTES", 700)
    store = RunStore(tmp_path)
    for i in range(6):
        store.append(log_row(i))
    second = results.log_segments(store.runs)[1]
    with open(second, "ab") as fh:
        fh.write(b"\xff\xfe\n")
    (tmp_path / "errors.csv").write_text(",".join(ERROR_COLUMNS) + "\nhalf,an,error\n")
    capsys.readouterr()
    store.check()
    assert capsys.readouterr().err.splitlines() == [
        f"warning: {second}: 1 corrupt line set aside into runs.csv.corrupt",
        f"warning: {tmp_path / 'errors.csv'}: 1 corrupt line set aside into errors.csv.corrupt"]
    number = second.read_bytes().count(b"\n") + 1
    assert (tmp_path / "runs.csv.corrupt").read_bytes() == \
        f"{second.name}:{number}: ".encode() + b"\xff\xfe\n"
    assert (tmp_path / "errors.csv.corrupt").read_bytes() == b"errors.csv:2: half,an,error\n"
    assert list(store.read()["task_id"]) == [tid(i) for i in range(6)]


def test_corrupt_lines_that_cannot_be_set_aside_are_skipped(tmp_path, capsys, monkeypatch):
    """A folder that cannot be written (read-only, or its lock refused): the lines stay, are
    skipped by every read, and are reported once."""
    store = RunStore(tmp_path)
    store.append(log_row(0))
    with open(store.runs, "ab") as fh:
        fh.write(b"junk\n")
    content = store.runs.read_bytes()

    def refused(self):
        raise PermissionError(13, "Permission denied", str(self._lock_path))

    monkeypatch.setattr(RunStore, "_locked", refused)
    capsys.readouterr()
    for _ in range(2):
        assert list(store.read()["task_id"]) == [tid(0)]
    assert capsys.readouterr().err == (f"warning: {store.runs}: 1 corrupt line skipped (cannot "
                                       "set it aside into runs.csv.corrupt: Permission denied)\n")
    assert store.runs.read_bytes() == content
    assert not (tmp_path / "runs.csv.corrupt").exists()


def test_short_writes_are_written_on_until_the_row_is_whole(tmp_path, monkeypatch):
    real = os.write
    calls = []

    def seven_bytes_at_a_time(fd, data):
        calls.append(len(data))
        return real(fd, bytes(data)[:7])

    monkeypatch.setattr(os, "write", seven_bytes_at_a_time)
    store = RunStore(tmp_path)
    for i in range(3):
        store.append(log_row(i))
    monkeypatch.undo()
    expected = pd.DataFrame([log_row(i) for i in range(3)]).reindex(columns=RUN_COLUMNS)
    assert store.runs.read_text() == expected.to_csv(index=False, lineterminator="\n")
    assert len(calls) > 3 * 20


def test_a_write_that_fails_part_way_leaves_the_log_as_it_was(tmp_path, monkeypatch):
    import errno

    from dml_bench.run.results import LogWriteFailed

    store = RunStore(tmp_path)
    store.append(log_row(0))
    before = store.runs.read_bytes()
    real, state = os.write, {"calls": 0}

    def full_disk(fd, data):
        state["calls"] += 1
        if state["calls"] == 1:  # part of the row fits
            return real(fd, bytes(data)[:10])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full_disk)
    with pytest.raises(LogWriteFailed) as failed:
        store.append(log_row(1))
    monkeypatch.undo()
    assert (failed.value.errno, failed.value.strerror, failed.value.filename) == (
        errno.ENOSPC, "No space left on device", str(store.runs))
    assert store.runs.read_bytes() == before
    store.append(log_row(2))
    assert list(store.read()["task_id"]) == [tid(0), tid(2)]


def test_a_full_disk_stops_the_run_with_the_rows_it_saved(tmp_path, monkeypatch):
    """The run stops at the row that does not fit, says how many it saved, and the next run
    runs the others: every task once."""
    import errno

    from dml_bench.run.results import LogWriteFailed

    exp = small_experiment()
    ids = planned_ids(exp)
    real, state = os.write, {"rows": 0}

    def full_after_two_rows(fd, data):
        if not os.readlink(f"/proc/self/fd/{fd}").endswith("/runs.csv"):
            return real(fd, data)
        state["rows"] += 1
        if state["rows"] > 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(os, "write", full_after_two_rows)
    with pytest.raises(LogWriteFailed) as failed:
        quiet_run(exp, tmp_path)
    monkeypatch.undo()
    assert failed.value.strerror == \
        f"No space left on device; 2 of {len(ids)} rows saved, rerun to finish"
    assert failed.value.filename == str(tmp_path / "quick" / "runs.csv")
    saved = runs_of(tmp_path)
    assert len(saved) == 2

    summary, _ = quiet_run(exp, tmp_path)
    assert (summary.ran, summary.done_before) == (len(ids) - 2, 2)
    runs = runs_of(tmp_path)
    assert sorted(runs["task_id"]) == sorted(ids)
    kept = runs.set_index("task_id").loc[saved["task_id"], "finished_at"]
    assert kept.tolist() == saved["finished_at"].tolist()


SUPERSEDE_KILLED = """
import os, signal, sys
from dml_bench.run import results
from dml_bench.cli import main

def killed(self, task_ids):  # archive's second step: the rows are in runs_superseded.csv
    os.kill(os.getpid(), signal.SIGKILL)

results.RunStore.drop = killed
sys.argv = ["dmlbench", "run", sys.argv[1], "--results-dir", sys.argv[2], "--supersede"]
main()
"""


def test_supersede_killed_between_its_two_steps_moves_each_row_once(tmp_path, write_yaml):
    """kill -9 after the rows were appended to runs_superseded.csv and before they left runs.csv:
    the rerun completes the move, no row duplicated or lost."""
    config = {**KILL_CONFIG, "name": "moved", "split": {"n_splits": 2, "seed": 1},
              "solvers": [{"name": "euclidean"}]}
    root = tmp_path / "results"
    summary, _ = quiet_run(parse_config(config), root)
    old = runs_of(root, "moved")
    assert summary.ran == len(old) == 6
    changed = write_yaml({**config, "evaluation": {"knn_k": 5}}, "changed.yaml")
    killed = subprocess.run([sys.executable, "-c", SUPERSEDE_KILLED, str(changed), str(root)],
                            capture_output=True, text=True, env=os.environ.copy(), timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    folder = root / "moved"
    superseded = pd.read_csv(folder / "runs_superseded.csv", dtype={"task_id": str})
    assert sorted(superseded["task_id"]) == sorted(old["task_id"])  # both logs hold them
    assert sorted(runs_of(root, "moved")["task_id"]) == sorted(old["task_id"])

    summary, messages = quiet_run(load_config(changed), root, select=Selection(supersede=True))
    assert summary.ran == 6
    superseded = pd.read_csv(folder / "runs_superseded.csv", dtype={"task_id": str})
    key = ["task_id", "finished_at"]
    pd.testing.assert_frame_equal(superseded[key].sort_values(key, ignore_index=True),
                                  old[key].sort_values(key, ignore_index=True))
    runs = runs_of(root, "moved")
    assert len(runs) == 6 and set(runs["task_id"]).isdisjoint(old["task_id"])


def test_a_log_that_is_a_symlink_is_never_written_through(tmp_path):
    from dml_bench.run.results import UnsafeLog, append_bytes

    exp = small_experiment()
    folder = tmp_path / "quick"
    folder.mkdir()
    target = tmp_path / "elsewhere.csv"
    target.write_text("precious\n")
    (folder / "runs.csv").symlink_to(target)
    with pytest.raises(UnsafeLog, match=r"runs\.csv is a symbolic link"):
        quiet_run(exp, tmp_path)
    # O_NOFOLLOW: even a link made after the run's check is not followed
    with pytest.raises(UnsafeLog):
        append_bytes(folder / "runs.csv", b"row\n")
    with pytest.raises(UnsafeLog):
        RunStore(folder).append(log_row(0))
    assert target.read_text() == "precious\n"
    assert not (folder / "config.yaml").exists()  # refused before any work


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o002])
def test_logs_get_the_mode_of_a_new_file_of_the_folder(tmp_path, umask):
    old = os.umask(umask)
    try:
        store = RunStore(tmp_path)
        for i in range(3):
            store.append(log_row(i))
        assert store.runs.stat().st_mode & 0o777 == 0o666 & ~umask
        store.drop({tid(1)})  # a rewrite: temporary file, renamed
        assert store.runs.stat().st_mode & 0o777 == 0o666 & ~umask
        assert list(store.read()["task_id"]) == [tid(0), tid(2)]
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".runs.csv")] == []
    finally:
        os.umask(old)


def test_a_dataset_that_cannot_be_read_is_a_reason_to_skip(monkeypatch):
    import dml_bench.datasets as datasets
    from dml_bench.experiment.knn import _data_problem

    def unreadable(name, **kwargs):
        raise PermissionError(13, "Permission denied", "/data/mine.csv")

    exp = experiment(solvers=[{"name": "euclidean"}])
    monkeypatch.setattr(datasets, "load_dataset", unreadable)
    assert _data_problem("wine", DataPlace()) == \
        "data not available: dataset 'wine': /data/mine.csv: Permission denied"
    tasks, skipped = plan(exp)
    assert tasks == []
    assert skipped == [(d, "euclidean", "data not available: dataset "
                        f"'{d}': /data/mine.csv: Permission denied") for d in ("wine", "iris")]

    def not_numbers(name, **kwargs):
        raise ValueError("could not convert string to float: 'x'")

    monkeypatch.setattr(datasets, "load_dataset", not_numbers)
    assert _data_problem("wine", DataPlace()) == \
        "data not available: dataset 'wine': ValueError: could not convert string to float: 'x'"

    def bug(name, **kwargs):
        raise TypeError("a bug, not a data fault")

    monkeypatch.setattr(datasets, "load_dataset", bug)
    with pytest.raises(TypeError):
        _data_problem("wine", DataPlace())


def test_labels_that_select_no_task_are_refused():
    from dml_bench.run.execution import NothingSelected, check_labels

    exp = experiment(datasets=[{"name": "wine", "solvers": ["euclidean"]}, {"name": "iris"}],
                     solvers=[{"name": "euclidean"}, {"name": "lda"}])
    assert check_labels(exp, ["wine"], ["euclidean"]) == ["wine", "iris"]
    assert check_labels(exp, None, ["lda"]) == ["wine", "iris"]  # iris runs it
    with pytest.raises(NothingSelected, match="--dataset wine --solver lda select no task of "
                                              "quick"):
        check_labels(exp, ["wine"], ["lda"])


def test_a_run_that_waits_for_another_says_so_once(tmp_path):
    """Another process holds two claims; this run defers both, says once that it waits, and
    runs them when the claims are released."""
    import threading

    from filelock import FileLock

    from dml_bench.run.results import TaskClaims

    claims = TaskClaims(tmp_path)
    claims.dir.mkdir()
    work = [type("T", (), {"task_id": tid(i)})() for i in range(4)]
    held = [FileLock(claims.dir / f"{t.task_id}.lock", thread_local=False) for t in work[1:3]]
    acquired, release = threading.Event(), threading.Event()

    def other_run():
        for lock in held:
            lock.acquire()
        acquired.set()
        release.wait(10)
        for lock in held:
            lock.release()

    thread = threading.Thread(target=other_run)
    thread.start()
    acquired.wait(10)
    messages, rows = [], []

    def record(row):
        rows.append(row["task_id"])
        if len(rows) == 2:  # this run's own tasks are done: the other run lets go
            release.set()

    execution.land_rows(lambda task, blas: {"task_id": task.task_id}, work, RunStore(tmp_path),
                        execution.Landing(1, "sequential", claims, echo=messages.append),
                        require_timing=False, record=record)
    thread.join()
    assert messages == ["waiting for 2 tasks that another run on this folder is running"]
    assert rows == [tid(0), tid(3), tid(1), tid(2)]
