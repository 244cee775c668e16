"""Results are a function of the data: the ids of tasks on data that can change under the same
name (a user's file, OpenML data, a plug-in's arrays) carry the data's sha256
(``datasets.content``), while the ids of the catalogue's datasets, and so of every committed
result, stay as they were."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import OPENML_WINE_ID, lay_out_openml

from dml_bench.experiment.config import parse_config
from dml_bench.datasets import DATASETS, load_dataset, loader
from dml_bench.datasets import content
from dml_bench.datasets.spec import spec_from_arrays
from dml_bench.run.results import log_segments
from dml_bench.experiment.knn import all_tasks
from dml_bench.experiment.kinds import task_kind
from dml_bench.run.tuning import tune_tasks
from dml_bench.experiment.verification_tasks import data_digest as verification_digest

pytestmark = pytest.mark.usefixtures("tmp_cache")

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = sorted(p.parent for p in (ROOT / "results").glob("*/config.yaml")
                   if (p.parent / "runs.csv").is_file())


@pytest.fixture(autouse=True)
def fresh_memos(monkeypatch):
    """Each test starts from a process that has hashed nothing and parsed no user file."""
    monkeypatch.setattr(content, "_files", {})
    monkeypatch.setattr(content, "_arrays", {})
    monkeypatch.setattr(content, "_fallback", {})
    loader._versioned_file_spec.cache_clear()
    loader._load.cache_clear()
    yield
    loader._versioned_file_spec.cache_clear()
    loader._load.cache_clear()


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def write_csv(path: Path, X, y) -> Path:
    lines = ["a,b,label"] + [f"{a:.3f},{b:.3f},{c}" for (a, b), c in zip(X, y)]
    path.write_text("\n".join(lines) + "\n")
    return path


def move_mtime(path: Path, seconds: int = 10) -> None:
    """Move ``path``'s mtime ``seconds`` on: an edit is then seen whatever the file system's
    timestamp resolution."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + seconds * 1_000_000_000))


def count_reads(monkeypatch) -> list:
    """The files ``content`` hashes from now on, in order."""
    reads = []
    real = content.sha256_file

    def counted(path):
        reads.append(Path(path))
        return real(path)

    monkeypatch.setattr(content, "sha256_file", counted)
    return reads


@pytest.mark.parametrize("folder", COMMITTED, ids=[p.name for p in COMMITTED])
def test_committed_results_keep_their_task_ids(folder):
    """Every row of every committed results folder is a task of its saved config today, so the
    committed rows resume instead of being recomputed or superseded. The ids were written by the
    code of their time: this guards compatibility with them, it does not check ids against a
    reference (the content digest itself is checked against hashlib above)."""
    exp = parse_config(yaml.safe_load((folder / "config.yaml").read_text()),
                       source=str(folder / "config.yaml"), check_data=False)
    tasks = task_kind(exp).all_tasks(exp)
    ids = {t.task_id for t in tasks}
    rows = pd.concat([pd.read_csv(seg, dtype={"task_id": str})
                      for seg in log_segments(folder / "runs.csv")
                      if seg.is_file() and seg.stat().st_size])
    assert len(rows) and set(rows["task_id"]) <= ids
    tuning = folder / "tuning.csv"
    tuned = (pd.read_csv(tuning, dtype={"task_id": str})["task_id"]
             if tuning.is_file() and tuning.stat().st_size else ())
    if len(tuned):
        assert set(tuned) <= {tt.task_id for t in tasks for tt in tune_tasks(t)}


def test_committed_results_were_found():
    assert len(COMMITTED) >= 10


def test_catalogue_datasets_carry_no_digest():
    assert loader.dataset_digest("wine") is None
    assert loader.dataset_digest("usps") is None
    assert verification_digest("lfw_pixels") is None and verification_digest("wine") is None


def test_file_digest_is_the_sha256_of_the_bytes_read_once_per_version(tmp_path, monkeypatch):
    reads = count_reads(monkeypatch)
    path = write_csv(tmp_path / "d.csv", [[1, 2], [3, 4]], [0, 1])
    assert content.file_digest(path) == sha256(path)
    assert content.file_digest(path) == sha256(path)
    assert len(reads) == 1
    before = sha256(path)
    write_csv(path, [[1, 2], [3, 5]], [0, 1])  # same size, other values
    move_mtime(path)
    assert content.file_digest(path) == sha256(path) != before
    assert len(reads) == 2


def test_digest_record_spares_reading_a_settled_file_again(tmp_path, monkeypatch, tmp_cache):
    path = write_csv(tmp_path / "d.csv", [[1, 2], [3, 4]], [0, 1])
    reads = count_reads(monkeypatch)
    # a file written just now is not recorded: another write in the same timestamp tick would
    # leave its version unchanged
    content.file_digest(path)
    assert not (tmp_cache / content.RECORD).exists()
    monkeypatch.setattr(content, "RACY_NS", 0)  # as if the file had been written long ago
    monkeypatch.setattr(content, "_files", {})
    content.file_digest(path)
    assert (tmp_cache / content.RECORD).is_file()
    monkeypatch.setattr(content, "_files", {})  # a new process
    assert content.file_digest(path) == sha256(path)
    assert len(reads) == 2  # the record answered the third call
    # a record of another version (or a damaged record) is not believed
    write_csv(path, [[1, 2], [3, 5]], [0, 1])
    move_mtime(path)
    monkeypatch.setattr(content, "_files", {})
    assert content.file_digest(path) == sha256(path)
    (tmp_cache / content.RECORD).write_text('{"files": [1, 2], "datasets": 7')
    monkeypatch.setattr(content, "_files", {})
    assert content.file_digest(path) == sha256(path)
    assert len(reads) == 4


def test_a_file_read_soon_after_its_change_is_read_again_once_to_record_it(
        tmp_path, monkeypatch, tmp_cache):
    path = write_csv(tmp_path / "d.csv", [[1, 2], [3, 4]], [0, 1])
    reads = count_reads(monkeypatch)
    monkeypatch.setattr(content, "RACY_NS", 10**18)  # every change is recent
    assert content.file_digest(path) == content.file_digest(path) == sha256(path)
    assert len(reads) == 1 and not (tmp_cache / content.RECORD).exists()
    monkeypatch.setattr(content, "RACY_NS", 0)  # the change is now long past
    assert content.file_digest(path) == content.file_digest(path) == sha256(path)
    assert len(reads) == 2 and (tmp_cache / content.RECORD).is_file()


def test_a_file_that_cannot_be_read_keeps_its_recorded_digest(tmp_path, monkeypatch):
    monkeypatch.setattr(content, "RACY_NS", 0)
    path = write_csv(tmp_path / "d.csv", [[1, 2], [3, 4]], [0, 1])
    digest = sha256(path)
    name = f"file:{path}?label_column=label"
    assert loader.dataset_digest(name) == digest
    path.unlink()
    assert loader.dataset_digest(name) == digest
    assert loader.dataset_digest(f"file:{tmp_path / 'never.csv'}") == content.UNAVAILABLE


def test_a_file_edited_in_place_is_loaded_again_in_the_same_process(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write_csv(tmp_path / "d.csv", [[1, 2], [3, 4], [5, 6]], [0, 1, 1])
    name = "file:d.csv?label_column=label"
    X, _, _ = load_dataset(name)
    np.testing.assert_array_equal(X, [[1, 2], [3, 4], [5, 6]])
    write_csv(path, [[1, 2], [3, 4], [5, 7]], [0, 1, 1])
    move_mtime(path)
    X, _, _ = load_dataset(name)
    np.testing.assert_array_equal(X, [[1, 2], [3, 4], [5, 7]])
    # the same relative path from another working folder is another file
    other = tmp_path / "other"
    other.mkdir()
    write_csv(other / "d.csv", [[9, 9], [8, 8]], [0, 1])
    monkeypatch.chdir(other)
    X, _, _ = load_dataset(name)
    np.testing.assert_array_equal(X, [[9, 9], [8, 8]])
    assert loader.dataset_digest(name) == sha256(other / "d.csv") != sha256(path)


def csv_experiment(tmp_path, *files):
    return parse_config({"name": "digests", "datasets": [{"path": str(f), "label_column": "label"}
                                                         for f in files] + [{"name": "wine"}],
                         "solvers": ["euclidean"], "split": {"n_splits": 2}},
                        source="test")


def test_task_ids_follow_the_content_of_user_files_only(tmp_path):
    a = write_csv(tmp_path / "a.csv", np.arange(20).reshape(10, 2), np.arange(10) % 2)
    b = write_csv(tmp_path / "b.csv", np.arange(20).reshape(10, 2), np.arange(10) % 2)
    exp = csv_experiment(tmp_path, a, b)
    before = {(t.dataset.label, t.split): t.task_id for t in all_tasks(exp)}
    assert len(set(before.values())) == 6
    write_csv(a, np.arange(20).reshape(10, 2)[::-1], np.arange(10) % 2)  # same size
    move_mtime(a)
    move_mtime(b)  # touched, not changed
    after = {(t.dataset.label, t.split): t.task_id for t in all_tasks(exp)}
    assert {k for k in before if before[k] != after[k]} == {("a", 0), ("a", 1)}


def test_arrays_outside_the_catalogue_enter_by_their_content(monkeypatch):
    """A plug-in's (or any non-catalogue) arrays: the digest follows the loaded data, dtype and
    shape included."""
    X = np.arange(24, dtype=float).reshape(8, 3)
    y = np.arange(8) % 2
    monkeypatch.setitem(DATASETS._plugins, "toy_arrays", spec_from_arrays("toy_arrays", X, y))
    first = loader.dataset_digest("toy_arrays")
    X2 = X.copy()
    X2[5, 1] += 1
    monkeypatch.setitem(DATASETS._plugins, "toy_arrays", spec_from_arrays("toy_arrays", X2, y))
    second = loader.dataset_digest("toy_arrays")
    assert len({first, second}) == 2
    assert content.array_digest(X, y) == first
    assert content.array_digest(X.reshape(6, 4), y) != first  # same bytes, other shape
    assert content.array_digest(X.astype(np.float32), y) != first


def test_openml_task_ids_follow_the_data_and_survive_an_unreachable_server(openml_cache,
                                                                          tmp_path, monkeypatch):
    """The same OpenML data laid out in two caches gives the same ids, other data other ids;
    with the data gone and OpenML unreachable the ids are those recorded."""
    exp = parse_config({"name": "oml", "datasets": [{"openml": OPENML_WINE_ID}],
                        "solvers": ["euclidean"], "split": {"n_splits": 1}}, source="test",
                       check_data=False)
    def task():  # a new task object: a task's digest is computed once, with the object
        [one] = all_tasks(exp)
        return one

    folder = lay_out_openml(openml_cache)
    first = task().task_id
    X, y, _ = load_dataset(f"openml:{OPENML_WINE_ID}")
    assert task().data_digest == content.array_digest(X, y)

    def relaid(root, change):
        root.mkdir()
        moved = lay_out_openml(root)
        if change:
            arff = (moved / "dataset.arff").read_text().replace("14.23,", "14.25,", 1)
            (moved / "dataset.arff").write_text(arff)
            description = (moved / "description.xml").read_text()
            old = hashlib.md5((folder / "dataset.arff").read_bytes()).hexdigest()
            new = hashlib.md5(arff.encode()).hexdigest()
            (moved / "description.xml").write_text(description.replace(old, new))
        monkeypatch.setenv("DMLBENCH_OPENML_CACHE", str(root))
        monkeypatch.setattr(DATASETS, "_plugins", {})
        loader._load.cache_clear()

    relaid(tmp_path / "same", change=False)
    assert task().task_id == first
    relaid(tmp_path / "changed", change=True)
    changed = task().task_id
    assert changed != first
    monkeypatch.setenv("DMLBENCH_OPENML_CACHE", str(tmp_path / "empty"))
    monkeypatch.setattr(DATASETS, "_plugins", {})
    monkeypatch.setattr(content, "_fallback", {})
    loader._load.cache_clear()
    assert task().task_id == changed  # the digest recorded when the data was last loaded


def test_verification_ids_carry_the_lfw_sift_file(tmp_path):
    file = tmp_path / "sift.npz"
    file.write_bytes(b"not read as data here")
    assert verification_digest("lfw_sift", str(file)) == sha256(file)
    assert verification_digest("lfw_sift", str(tmp_path / "missing.npz")) == content.UNAVAILABLE


def test_a_task_keeps_the_digest_it_was_planned_with(tmp_path, monkeypatch):
    """A task sent to a worker reports the id the run planned and claimed it under, even if
    the file changes meanwhile; a task planned afterwards has the new content's id. (The copy
    below goes through ``__reduce_ex__``, the state that pickling sends to a worker.)"""
    import copy

    monkeypatch.chdir(tmp_path)
    a = write_csv(tmp_path / "a.csv", np.arange(20).reshape(10, 2), np.arange(10) % 2)
    exp = csv_experiment(tmp_path, Path("a.csv"))
    planned = next(iter(all_tasks(exp)))
    planned_id = planned.task_id
    write_csv(a, np.arange(20).reshape(10, 2)[::-1], np.arange(10) % 2)
    move_mtime(a)
    monkeypatch.chdir(ROOT)  # a worker elsewhere
    assert copy.deepcopy(planned).task_id == planned_id
    monkeypatch.chdir(tmp_path)
    assert next(iter(all_tasks(exp))).task_id != planned_id
