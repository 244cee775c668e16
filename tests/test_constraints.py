"""knn_triplets: targets / impostors worked out by hand, the counts of Ying & Li (2012) Table 3,
constraints that only ever reference the training part of a split, and the disk cache of
generated constraints (checked against a fresh computation), which recomputes every entry it
cannot trust and never loads a pickle."""

from __future__ import annotations

import hashlib
import importlib
import io
import json
import pickle
import sys
import textwrap
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

from dml_bench.experiment.config import parse_config
from dml_bench.experiment import knn as tasks
from dml_bench.constraints import GENERATORS, Constraints, generate, knn_triplets
from dml_bench.datasets import load_dataset
from dml_bench.errors import DMLBenchWarning
from dml_bench.preprocess import Preprocessing
from dml_bench.splits import derive_seed, train_test_split_indices
from dml_bench.experiment.knn import plan, prepare_split
from fault_cases.security_code import Planted, _flip

pytestmark = pytest.mark.usefixtures("tmp_cache")

# 1-D toy set, classes interleaved, all pairwise gaps distinct (no ties):
#   index: 0  1  2  3  4   5   6   7
#   x:     0  2  5  9  14  20  27  35
#   class: A  B  A  B  A   B   A   B
X_TOY = np.array([0, 2, 5, 9, 14, 20, 27, 35], dtype=float)[:, None]
Y_TOY = np.array([0, 1, 0, 1, 0, 1, 0, 1])
# k = 2, by hand (distances in brackets):
TARGETS = {  # 2 nearest of the same class, the point itself excluded
    0: {2, 4},  # x=0:  5 (5), 14 (14); 27 (27)
    2: {0, 4},  # x=5:  0 (5), 14 (9); 27 (22)
    4: {2, 6},  # x=14: 5 (9), 27 (13); 0 (14)
    6: {4, 2},  # x=27: 14 (13), 5 (22); 0 (27)
    1: {3, 5},  # x=2:  9 (7), 20 (18); 35 (33)
    3: {1, 5},  # x=9:  2 (7), 20 (11); 35 (26)
    5: {3, 7},  # x=20: 9 (11), 35 (15); 2 (18)
    7: {5, 3},  # x=35: 20 (15), 9 (26); 2 (33)
}
IMPOSTORS = {  # 2 nearest of the other class
    0: {1, 3},  # x=0:  2 (2), 9 (9); 20 (20)
    2: {1, 3},  # x=5:  2 (3), 9 (4); 20 (15)
    4: {3, 5},  # x=14: 9 (5), 20 (6); 2 (12)
    6: {5, 7},  # x=27: 20 (7), 35 (8); 9 (18)
    1: {0, 2},  # x=2:  0 (2), 5 (3); 14 (12)
    3: {2, 4},  # x=9:  5 (4), 14 (5); 0 (9)
    5: {4, 6},  # x=20: 14 (6), 27 (7); 5 (15)
    7: {6, 4},  # x=35: 27 (8), 14 (21); 5 (30)
}


def as_set(rows) -> set[tuple]:
    return {tuple(int(v) for v in r) for r in rows}


def test_registered():
    assert GENERATORS["knn_triplets"] is knn_triplets


def test_hand_made_targets_impostors_triplets():
    c = knn_triplets(X_TOY, Y_TOY, k=2)
    assert isinstance(c, Constraints)
    assert c.similar.shape == (16, 2) and c.dissimilar.shape == (16, 2)
    assert c.triplets.shape == (32, 3)
    assert as_set(c.similar) == {(i, t) for i, ts in TARGETS.items() for t in ts}
    assert as_set(c.dissimilar) == {(i, m) for i, ms in IMPOSTORS.items() for m in ms}
    assert as_set(c.triplets) == {(i, t, m) for i in TARGETS for t in TARGETS[i]
                                  for m in IMPOSTORS[i]}
    # no duplicates here: every listed pair / triplet is distinct
    assert len(as_set(c.similar)) == 16 and len(as_set(c.triplets)) == 32
    assert c.counts() == {"n_similar": 16, "n_dissimilar": 16, "n_triplets": 32}


def test_hand_made_k1():
    c = knn_triplets(X_TOY, Y_TOY, k=1)
    # nearest target / impostor of each point, from the tables above
    assert as_set(c.similar) == {(0, 2), (2, 0), (4, 2), (6, 4), (1, 3), (3, 1), (5, 3), (7, 5)}
    assert as_set(c.dissimilar) == {(0, 1), (2, 1), (4, 3), (6, 5), (1, 0), (3, 2), (5, 4),
                                    (7, 6)}
    assert len(c.triplets) == 8


def test_string_labels_and_unsorted_rows():
    # labels need not be 0..C-1 integers; rows in arbitrary order
    perm = np.array([5, 0, 7, 2, 4, 1, 6, 3])
    y = np.where(Y_TOY == 0, "apple", "pear")[perm]
    c = knn_triplets(X_TOY[perm], y, k=2)
    inv = np.argsort(perm)  # new index of old row j is inv[j]
    expected = {(inv[i], inv[t]) for i, ts in TARGETS.items() for t in ts}
    assert as_set(c.similar) == {(int(a), int(b)) for a, b in expected}


def brute_force(X, y, k):
    """Independent reference: full distance matrix, argsort per row (no ties in random data)."""
    D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    targets, impostors = {}, {}
    for i in range(len(y)):
        same = [j for j in np.argsort(D[i]) if y[j] == y[i] and j != i]
        other = [j for j in np.argsort(D[i]) if y[j] != y[i]]
        targets[i], impostors[i] = set(same[:k]), set(other[:k])
    return targets, impostors


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_counts_and_brute_force_reference(k):
    rng = np.random.default_rng(k)
    X = rng.normal(size=(37, 2))
    y = rng.permutation(np.repeat([0, 1, 2], [12, 15, 10]))
    c = knn_triplets(X, y, k=k)
    n = len(y)
    assert c.counts() == {"n_similar": n * k, "n_dissimilar": n * k, "n_triplets": n * k * k}
    targets, impostors = brute_force(X, y, k)
    assert as_set(c.similar) == {(i, t) for i in targets for t in targets[i]}
    assert as_set(c.dissimilar) == {(i, m) for i in impostors for m in impostors[i]}
    assert as_set(c.triplets) == {(i, t, m) for i in targets for t in targets[i]
                                  for m in impostors[i]}
    # every anchor has exactly k targets of its class and k impostors of another class
    for rows, same in ((c.similar, True), (c.dissimilar, False)):
        assert np.array_equal(np.bincount(rows[:, 0], minlength=n), np.full(n, k))
        assert np.all((y[rows[:, 0]] == y[rows[:, 1]]) == same)


@pytest.mark.parametrize("name, n_train, counts", [
    # Ying & Li (2012), Table 3: |S| = |D| = n_train·3, |T| = n_train·9 with k = 3
    ("wine", 126, (378, 378, 1134)),  # 42 + 50 + 34 training points
    # The paper prints 954 triplets for iris; 105 training points × 9 = 945, so 954 is a
    # transposition typo in the paper and 945 is asserted.
    ("iris", 105, (315, 315, 945)),  # 35 + 35 + 35
    ("breast_cancer", 399, (1197, 1197, 3591)),  # ceil(0.7·212) + ceil(0.7·357) = 149 + 250
])
def test_paper_table3_counts(name, n_train, counts):
    X, y, _ = load_dataset(name)
    for split in range(2):
        train, _ = train_test_split_indices(y, 0.7, derive_seed(0, name, split), stratify=True)
        assert len(train) == n_train
        X_train, _ = Preprocessing("zscore").apply(X[train], X[train][:1])
        c = knn_triplets(X_train, y[train], k=3)
        assert (c.counts()["n_similar"], c.counts()["n_dissimilar"],
                c.counts()["n_triplets"]) == counts


def test_duplicates_do_not_make_a_point_its_own_target():
    # class 0: five copies of the same point; class 1: a duplicated pair + spread points
    X = np.array([[0.0, 0]] * 5 + [[5.0, 5], [5.0, 5], [6, 5], [7, 5], [9, 9]])
    y = np.array([0] * 5 + [1] * 5)
    for k in (1, 2, 3, 4):
        c = knn_triplets(X, y, k=k)
        assert np.all(c.similar[:, 0] != c.similar[:, 1]), k
        assert np.all(c.triplets[:, 0] != c.triplets[:, 1]), k
        for i in range(10):
            t = c.similar[c.similar[:, 0] == i, 1]
            assert len(t) == k and len(set(t)) == k  # k distinct targets
        # the copies of class 0 are at distance 0 from each other: targets are other copies
        assert set(c.similar[c.similar[:, 0] < 5, 1]) <= set(range(5))
    c = knn_triplets(X, y, k=1)
    assert as_set(c.similar[c.similar[:, 0] >= 5]) == {(5, 6), (6, 5), (7, 5), (8, 7), (9, 8)} \
        or as_set(c.similar[c.similar[:, 0] >= 5]) == {(5, 6), (6, 5), (7, 6), (8, 7), (9, 8)}


def test_k_too_large():
    y = np.array([0, 0, 0, 1, 1, 1, 1, 1])
    X = np.arange(8, dtype=float)[:, None]
    knn_triplets(X, y, k=2)  # smallest class has 3 > 2
    with pytest.raises(ValueError, match=r"k = 3 needs every class to have more than k .*has 3"):
        knn_triplets(X, y, k=3)
    with pytest.raises(ValueError, match="k = 0"):
        knn_triplets(X, y, k=0)


def test_single_class():
    with pytest.raises(ValueError, match="at least two classes"):
        knn_triplets(np.arange(10, dtype=float)[:, None], np.zeros(10, dtype=int), k=3)


# --------------------------------------------------------------------------- leakage


@pytest.mark.parametrize("dataset", ["wine", "iris"])
def test_runner_constraints_use_training_part_only(dataset):
    exp = parse_config({
        "name": "leak", "datasets": [{"name": dataset, "normalize": "zscore"}],
        "split": {"n_splits": 3, "seed": 7}, "solvers": [{"name": "euclidean"}],
    })
    tasks, skipped = plan(exp, check_data=lambda name: None)
    assert skipped == [] and [t.split for t in tasks] == [0, 1, 2]
    X, y, _ = load_dataset(dataset)
    for task in tasks:
        X_train, y_train, X_test, y_test, c, c_time, split_seed = prepare_split(task)
        assert split_seed == derive_seed(7, dataset, task.split)
        train, test = train_test_split_indices(y, 0.7, split_seed, stratify=True)
        n_train = len(train)
        assert len(y_train) == n_train and len(y_test) == len(test) == len(y) - n_train
        for rows in (c.similar, c.dissimilar, c.triplets):
            assert rows.min() >= 0 and rows.max() < n_train
        # the rows the runner hands to the solver are the training rows, z-scored with
        # statistics of the training part only (computed here by hand)
        mean, std = X[train].mean(axis=0), X[train].std(axis=0)
        np.testing.assert_allclose(X_train, (X[train] - mean) / std, atol=1e-12)
        np.testing.assert_allclose(X_test, (X[test] - mean) / std, atol=1e-12)
        np.testing.assert_array_equal(y_train, y[train])
        np.testing.assert_array_equal(y_test, y[test])
        # constraint index i is original row train[i]: no test row ever appears
        referenced = set(train[np.concatenate([c.similar.ravel(), c.dissimilar.ravel(),
                                               c.triplets.ravel()])])
        assert referenced.isdisjoint(test)
        assert referenced <= set(train)
        # and they are the constraints of the training part alone
        expected = knn_triplets((X[train] - mean) / std, y[train], k=3)
        assert as_set(c.triplets) == as_set(expected.triplets)
        assert c_time >= 0


# --------------------------------------------------------------------------- disk cache
COUNTED = """
from dml_bench.constraints import knn_triplets

CALLS = []


def counted(X, y, k=3):
    CALLS.append(len(y))
    return knn_triplets(X, y, k)
"""


def _counted_generator(tmp_path, monkeypatch, source=COUNTED):
    """A generator in its own module file (so its source can change), registered as 'counted',
    that records each computation."""
    (tmp_path / "counted_gen.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.reload(sys.modules["counted_gen"]) if "counted_gen" in sys.modules \
        else importlib.import_module("counted_gen")
    monkeypatch.setitem(GENERATORS._items, "counted", module.counted)
    return module


def _wine():
    X, y, _ = load_dataset("wine")
    return (X - X.mean(axis=0)) / X.std(axis=0), y


def _same(a: Constraints, b: Constraints) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f))
               for f in ("similar", "dissimilar", "triplets"))


def test_stored_constraints_equal_a_fresh_computation_and_keep_its_seconds(tmp_path, monkeypatch):
    gen = _counted_generator(tmp_path, monkeypatch)
    X, y = _wine()
    first, seconds = generate("counted", X, y, {"k": 3}, tmp_path / "store")
    again, seconds_again = generate("counted", X.copy(), y.copy(), {"k": 3}, tmp_path / "store")
    assert gen.CALLS == [len(y)]  # the second call read the disk
    assert _same(first, knn_triplets(X, y, 3)) and _same(again, first)
    assert seconds_again == seconds > 0  # the original computation's time, not the load's


def test_other_data_or_parameters_are_computed_not_read(tmp_path, monkeypatch):
    gen = _counted_generator(tmp_path, monkeypatch)
    X, y = _wine()
    generate("counted", X, y, {"k": 3}, tmp_path / "store")
    other = X.copy()
    other[0, 0] += 1e-9
    moved, _ = generate("counted", other, y, {"k": 3}, tmp_path / "store")
    fewer, _ = generate("counted", X, y, {"k": 2}, tmp_path / "store")
    assert len(gen.CALLS) == 3
    assert _same(moved, knn_triplets(other, y, 3)) and _same(fewer, knn_triplets(X, y, 2))


def test_a_changed_generator_source_is_computed_not_read(tmp_path, monkeypatch):
    _counted_generator(tmp_path, monkeypatch)
    X, y = _wine()
    generate("counted", X, y, {"k": 3}, tmp_path / "store")
    # the generator's module changes (here: it keeps only the first target of each point)
    edited = COUNTED.replace("return knn_triplets(X, y, k)", textwrap.dedent("""\
        c = knn_triplets(X, y, k)
            return type(c)(c.similar[::k], c.dissimilar[::k], c.triplets[::k * k])"""))
    gen = _counted_generator(tmp_path, monkeypatch, edited)
    changed, _ = generate("counted", X, y, {"k": 3}, tmp_path / "store")
    assert gen.CALLS == [len(y)] and len(changed.triplets) == len(y)


def test_an_unusable_cache_costs_only_time(tmp_path, monkeypatch):
    gen = _counted_generator(tmp_path, monkeypatch)
    X, y = _wine()
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got, _ = generate("counted", X, y, {"k": 3}, blocker)
    assert _same(got, knn_triplets(X, y, 3)) and gen.CALLS == [len(y)]
    assert [str(w.message).split(" (")[0] for w in caught] == [f"constraint cache {blocker} not used"]
    assert caught[0].category is DMLBenchWarning


def test_a_new_worker_loads_a_folds_constraints_from_the_dataset_cache(tmp_cache):
    """What a loky worker restarted after its first task (memory growth) or a second board
    sees: an empty in-process cache and the constraints on disk."""
    exp = parse_config({"name": "store", "datasets": [{"name": "wine", "normalize": "zscore"}],
                        "split": {"n_splits": 1}, "solvers": [{"name": "euclidean"}]})
    task = plan(exp, check_data=lambda name: None)[0][0]
    tasks._prepare_split.cache_clear()
    *_, c, seconds, _ = prepare_split(task)
    tasks._prepare_split.cache_clear()
    *_, c_again, seconds_again, _ = prepare_split(task)
    assert _same(c_again, c) and seconds_again == seconds
    stored = sorted(p.name for p in (tmp_cache / "constraints").iterdir())
    assert len(stored) == 2 and stored[0].startswith("knn_triplets-")
    assert [Path(n).suffix for n in stored] == [".json", ".npz"]


# --------------------------------------------------------------------------- damaged entries
#
# Every entry the cache cannot trust is recomputed (the generator runs again, its result equals
# a fresh computation) with one line on stderr, and rewritten so that the next call reads it.



def _entry(store: Path) -> tuple[Path, Path]:
    (npz,) = store.glob("counted-*.npz")
    return npz, npz.with_suffix(".json")


def _object_npy(obj) -> bytes:
    """A ``.npy`` holding an object array of ``[obj]``, laid out as numpy writes one (a pickle
    after the header), built by hand."""
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, {"descr": "|O", "fortran_order": False, "shape": (1,)})
    out.write(pickle.dumps(np.array([obj, None], dtype=object)[:1], protocol=4))
    return out.getvalue()


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return out.getvalue()


def _rehash(npz: Path, meta: Path):
    """The entry's checksum file rewritten to match its (replaced) .npz, as someone who planted
    it would."""
    info = json.loads(meta.read_text())
    info["sha256"] = hashlib.sha256(npz.read_bytes()).hexdigest()
    meta.write_text(json.dumps(info))


def _npy(array) -> bytes:
    out = io.BytesIO()
    np.lib.format.write_array(out, np.asarray(array), allow_pickle=False)
    return out.getvalue()




def _truncate(npz, meta, marker):
    npz.write_bytes(npz.read_bytes()[:100])
    return "checksum mismatch"


def _pickle_as_npz(npz, meta, marker):
    npz.write_bytes(pickle.dumps(Planted(marker)))
    return "checksum mismatch"


def _pickle_with_its_checksum(npz, meta, marker):
    npz.write_bytes(pickle.dumps(Planted(marker)))
    _rehash(npz, meta)
    return "not a readable .npz: File is not a zip file"


def _object_array_with_its_checksum(npz, meta, marker):
    npz.write_bytes(_zip({"similar.npy": _object_npy(Planted(marker)),
                          "dissimilar.npy": _npy(np.zeros((0, 2), int)),
                          "triplets.npy": _npy(np.zeros((0, 3), int))}))
    _rehash(npz, meta)
    return "member 'similar.npy' holds Python objects (a pickle), which are never loaded"


def _foreign_checksum(npz, meta, marker):
    info = json.loads(meta.read_text())
    meta.write_text(json.dumps({**info, "key": "0" * 64}))
    return f"its checksum file {meta.name} is another entry's"


def _junk_checksum(npz, meta, marker):
    meta.write_text("{not json")
    return f"its checksum file {meta.name} is not one"


def _missing_npz(npz, meta, marker):
    npz.unlink()
    return "its data file is missing"


def _out_of_range(npz, meta, marker):
    npz.write_bytes(_zip({"similar.npy": _npy([[0, 9999]]), "dissimilar.npy": _npy(np.zeros((0, 2), int)),
                          "triplets.npy": _npy(np.zeros((0, 3), int))}))
    _rehash(npz, meta)
    return "similar holds indices outside 0..177"


def _floats(npz, meta, marker):
    npz.write_bytes(_zip({"similar.npy": _npy([[0.5, 1.0]]), "dissimilar.npy": _npy(np.zeros((0, 2), int)),
                          "triplets.npy": _npy(np.zeros((0, 3), int))}))
    _rehash(npz, meta)
    return "similar is a (1, 2) float64 array, not (m, 2) integers"


def _wrong_members(npz, meta, marker):
    npz.write_bytes(_zip({"similar.npy": _npy(np.zeros((0, 2), int))}))
    _rehash(npz, meta)
    return "it holds ['similar'], not ['dissimilar', 'similar', 'triplets']"


def _huge_header(npz, meta, marker):
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<i8", "fortran_order": False,
                                                  "shape": (2**40, 3)})
    npz.write_bytes(_zip({"similar.npy": header.getvalue() + b"\0" * 48,
                          "dissimilar.npy": _npy(np.zeros((0, 2), int)),
                          "triplets.npy": _npy(np.zeros((0, 3), int))}))
    _rehash(npz, meta)
    return "member 'similar.npy' declares an array of 24.0 TiB (1099511627776 × 3 int64), more than"


@pytest.mark.parametrize("damage", [_flip, _truncate, _pickle_as_npz, _pickle_with_its_checksum,
                                    _object_array_with_its_checksum, _foreign_checksum,
                                    _junk_checksum, _missing_npz, _out_of_range, _floats,
                                    _wrong_members, _huge_header])
def test_a_damaged_or_foreign_entry_is_recomputed_with_one_line(tmp_path, monkeypatch, capsys,
                                                                damage):
    gen = _counted_generator(tmp_path, monkeypatch)
    X, y = _wine()
    store, marker = tmp_path / "store", tmp_path / "unpickled"
    first, _ = generate("counted", X, y, {"k": 3}, store)
    npz, meta = _entry(store)
    reason = damage(npz, meta, marker)
    capsys.readouterr()
    again, _ = generate("counted", X, y, {"k": 3}, store)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"warning: constraint cache entry {npz} is damaged ({reason}"), err
    assert err[0].endswith("); recomputed")
    assert gen.CALLS == [len(y), len(y)] and _same(again, knn_triplets(X, y, 3))
    assert not marker.exists()  # no pickle was ever loaded
    generate("counted", X, y, {"k": 3}, store)  # rewritten: read, not computed, no warning
    assert gen.CALLS == [len(y), len(y)] and capsys.readouterr().err == ""
