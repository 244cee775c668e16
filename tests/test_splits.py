"""Randomised stratified splits: ceil(f·n_c) training points per class, determinism, seeds."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from dml_bench.datasets import load_dataset
from dml_bench.splits import derive_seed, subsample_indices, train_test_split_indices

pytestmark = pytest.mark.usefixtures("tmp_cache")


def labels(*sizes: int, shuffle_seed: int | None = 0) -> np.ndarray:
    y = np.repeat(np.arange(len(sizes)), sizes)
    return y if shuffle_seed is None else np.random.default_rng(shuffle_seed).permutation(y)


@pytest.mark.parametrize("name, class_sizes, per_class_train", [
    ("wine", [59, 71, 48], [42, 50, 34]),  # ceil(41.3), ceil(49.7), ceil(33.6) -> 126
    ("iris", [50, 50, 50], [35, 35, 35]),  # 0.7·50 = 35 exactly -> 105
    ("breast_cancer", [212, 357], [149, 250]),  # ceil(148.4), ceil(249.9) -> 399
])
def test_stratified_counts_on_bundled_sets(name, class_sizes, per_class_train):
    _, y, _ = load_dataset(name)
    assert np.bincount(y).tolist() == class_sizes
    for split in range(3):
        train, test = train_test_split_indices(y, 0.7, derive_seed(0, name, split))
        assert np.bincount(y[train]).tolist() == per_class_train
        assert np.bincount(y[test]).tolist() == [n - t for n, t in zip(class_sizes, per_class_train)]
        assert len(train) == sum(per_class_train)


@pytest.mark.parametrize("fraction, sizes, expected", [
    (0.7, [10, 20, 30], [7, 14, 21]),  # exact products: no rounding up
    (0.7, [3, 7, 11], [3, 5, 8]),  # 0.7·3 = 2.0999999999999996 in floating point -> ceil = 3
    (0.5, [5, 9], [3, 5]),  # 2.5 -> 3, 4.5 -> 5
    (0.3, [10, 1], [3, 1]),  # 0.3·10 = 3.0; a 1-point class still gets its point for training
    (0.55, [100, 180], [55, 99]),  # 0.55·100 = 55.00000000000001 in floating point -> 55, not 56
])
def test_ceil_per_class(fraction, sizes, expected):
    y = labels(*sizes)
    train, test = train_test_split_indices(y, fraction, seed=3)
    assert np.bincount(y[train], minlength=len(sizes)).tolist() == expected


def test_disjoint_sorted_covering():
    y = labels(13, 29, 8)
    train, test = train_test_split_indices(y, 0.7, seed=1)
    assert np.all(np.diff(train) > 0) and np.all(np.diff(test) > 0)
    assert np.intersect1d(train, test).size == 0
    assert np.array_equal(np.union1d(train, test), np.arange(len(y)))


def test_not_stratified():
    y = labels(90, 10)
    sizes = set()
    for seed in range(20):
        train, test = train_test_split_indices(y, 0.7, seed, stratify=False)
        assert len(train) == 70 and len(test) == 30  # ceil(0.7 · 100)
        assert np.array_equal(np.union1d(train, test), np.arange(100))
        sizes.add(int((y[train] == 1).sum()))
    assert len(sizes) > 1  # class proportions vary when not stratified


def test_deterministic_and_different_across_splits():
    y = labels(40, 60, 25)
    a1, b1 = train_test_split_indices(y, 0.7, seed=123)
    a2, b2 = train_test_split_indices(y, 0.7, seed=123)
    assert np.array_equal(a1, a2) and np.array_equal(b1, b2)
    trains = {tuple(train_test_split_indices(y, 0.7, derive_seed(0, "toy", s))[0])
              for s in range(10)}
    assert len(trains) == 10


@pytest.mark.parametrize("fraction", [0.0, 1.0, 1.5, -0.2])
def test_invalid_fraction(fraction):
    with pytest.raises(ValueError, match="train_fraction"):
        train_test_split_indices(labels(5, 5), fraction, seed=0)


def test_derive_seed_independent_of_call_order():
    keys = [(s, d, k) for s in (0, 1) for d in ("wine", "iris", "pima") for k in range(4)]
    forward = {key: derive_seed(*key) for key in keys}
    rng = np.random.default_rng(0)
    np.random.seed(99)  # global numpy state must not matter either
    backward = {keys[i]: derive_seed(*keys[i]) for i in rng.permutation(len(keys))}
    assert forward == backward
    assert len(set(forward.values())) == len(keys)  # distinct per (seed, dataset, split)
    assert all(isinstance(v, int) and 0 <= v < 2**32 for v in forward.values())


def test_derive_seed_same_in_a_fresh_interpreter():
    # not built on hash(): a new process (other PYTHONHASHSEED) derives the same seeds
    code = "from dml_bench.splits import derive_seed; print(derive_seed(0, 'wine', 3), " \
           "derive_seed(5, 'iris', 0))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin"}).stdout.split()
    assert [int(v) for v in out] == [derive_seed(0, "wine", 3), derive_seed(5, "iris", 0)]


@pytest.mark.parametrize("sizes, n", [((1000, 1500, 2500), 500), ((59, 71, 48), 100),
                                      ((7, 93), 30), ((10, 10, 10), 29)])
def test_subsample_size_and_stratification(sizes, n):
    y = labels(*sizes)
    keep = subsample_indices(y, n, seed=4)
    assert len(keep) == n and len(np.unique(keep)) == n
    assert np.all(np.diff(keep) > 0) and keep.min() >= 0 and keep.max() < len(y)
    counts = np.bincount(y[keep], minlength=len(sizes))
    proportional = np.array(sizes) * n / len(y)
    # ceil per class, then fewer than n_classes excess points dropped at random
    assert np.all(counts <= np.ceil(proportional - 1e-9))
    assert np.all(counts >= np.ceil(proportional - 1e-9) - (len(sizes) - 1))
    assert np.all(np.abs(counts - proportional) < len(sizes))
    assert np.array_equal(keep, subsample_indices(y, n, seed=4))
    assert not np.array_equal(keep, subsample_indices(y, n, seed=5))


def test_subsample_waveform_like_exact():
    # 5000 points in three classes of 1657/1647/1696 -> 500: 165.7, 164.7, 169.6 -> 166+165+170 =
    # 501 by ceil, one dropped
    y = labels(1657, 1647, 1696)
    counts = np.bincount(y[subsample_indices(y, 500, seed=0)])
    assert counts.sum() == 500
    assert sorted((counts - np.array([166, 165, 170])).tolist()) == [-1, 0, 0]


def test_subsample_everything():
    y = labels(3, 4)
    assert np.array_equal(subsample_indices(y, 7, seed=0), np.arange(7))
    assert np.array_equal(subsample_indices(y, 100, seed=0), np.arange(7))


def test_ceil_matches_math():
    # a direct check of the rule on many class sizes against math.ceil of the exact rational
    from fractions import Fraction

    for n_c in range(1, 120):
        y = labels(n_c, 5)
        train, _ = train_test_split_indices(y, 0.7, seed=n_c)
        assert (y[train] == 0).sum() == math.ceil(Fraction(7, 10) * n_c)


def test_three_way_split_follows_the_70_15_15_protocol():
    from dml_bench.splits import split_indices

    y = np.repeat([0, 1, 2], [59, 71, 48])  # wine's classes
    train, val, test = split_indices(y, 0.7, seed=3, validation_fraction=0.15)
    # per class: ceil(0.7 n_c) training, ceil(0.15 n_c) validation, the rest test
    for c, n_c in zip(range(3), (59, 71, 48)):
        assert np.sum(y[train] == c) == math.ceil(0.7 * n_c)
        assert np.sum(y[val] == c) == math.ceil(0.15 * n_c)
    assert (len(train), len(val), len(test)) == (126, 9 + 11 + 8, 178 - 126 - 28)
    assert len(np.intersect1d(train, val)) == len(np.intersect1d(train, test)) == 0
    assert len(np.intersect1d(val, test)) == 0
    # with no validation part the training part is unchanged and validation is empty
    train0, val0, test0 = split_indices(y, 0.7, seed=3)
    np.testing.assert_array_equal(train0, train)
    assert len(val0) == 0 and len(test0) == 178 - 126
    with pytest.raises(ValueError, match="validation_fraction"):
        split_indices(y, 0.7, seed=3, validation_fraction=0.3)
