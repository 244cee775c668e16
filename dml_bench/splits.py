"""Randomised train/test splits (Ying & Li 2012, §5: "randomly split the data sets 70% for
training and 30% for test").

The stratified rule takes ``ceil(train_fraction * n_c)`` points of every class ``c`` for training;
it reproduces the pair counts of Ying & Li's Table 3 exactly (e.g. wine: 42 + 50 + 34 = 126
training points, 378 similar pairs with k = 3).
"""

from __future__ import annotations

import math
import zlib

import numpy as np


def derive_seed(experiment_seed: int, dataset: str, split: int) -> int:
    """Deterministic 32-bit seed for one (experiment, dataset, split).

    The seed depends only on its arguments (not on task order or ``n_jobs``), so every worker
    draws the same split for the same task.
    """
    ss = np.random.SeedSequence([int(experiment_seed), zlib.crc32(dataset.encode()), int(split)])
    return int(ss.generate_state(1)[0])


def train_test_split_indices(
    y: np.ndarray, train_fraction: float, seed: int, stratify: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Indices of a random train/test split.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Class labels.
    train_fraction : float in (0, 1)
        Fraction of points (of each class when ``stratify``) used for training; rounded up.
    seed : int
        Seed of the permutation.
    stratify : bool
        Split each class separately (``ceil(train_fraction * n_c)`` training points per class).

    Returns
    -------
    train, test : ndarray of int
        Sorted, disjoint indices covering ``range(n)``.
    """
    if not 0.0 < train_fraction < 1.0:
        raise ValueError(f"train_fraction must be in (0, 1), got {train_fraction}")
    rng = np.random.default_rng(seed)
    groups = [np.flatnonzero(y == c) for c in np.unique(y)] if stratify else [np.arange(len(y))]
    train = []
    for idx in groups:
        n_train = math.ceil(train_fraction * len(idx) - 1e-9)
        train.append(rng.permutation(idx)[:n_train])
    train = np.sort(np.concatenate(train))
    test = np.setdiff1d(np.arange(len(y)), train)
    return train, test


def subsample_indices(y: np.ndarray, n_samples: int, seed: int) -> np.ndarray:
    """A stratified random subset of ``n_samples`` points (proportional class sizes).

    Used where a paper ran on a subset (Ying & Li's waveform: |D| = 1050 implies 500 points).
    """
    if n_samples >= len(y):
        return np.arange(len(y))
    keep, _ = train_test_split_indices(y, n_samples / len(y), seed, stratify=True)
    rng = np.random.default_rng(seed)
    # ceil per class can overshoot by < n_classes points: drop the excess at random
    return np.sort(rng.choice(keep, n_samples, replace=False)) if len(keep) > n_samples else keep
