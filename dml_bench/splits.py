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
    """Indices of a random train/test split (:func:`split_indices` without a validation part)."""
    train, _, test = split_indices(y, train_fraction, seed, stratify)
    return train, test


def split_indices(
    y: np.ndarray, train_fraction: float, seed: int, stratify: bool = True,
    validation_fraction: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Indices of a random train/validation/test split.

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
    validation_fraction : float in [0, 1 − train_fraction)
        Fraction held out for parameter choice (Shen et al.'s 70/15/15 protocol), rounded up,
        drawn after the training part; the test part is the rest. With 0 the training part is
        the same as without a validation part.

    Returns
    -------
    train, validation, test : ndarray of int
        Sorted, disjoint indices covering ``range(n)``.
    """
    if not 0.0 < train_fraction < 1.0:
        raise ValueError(f"train_fraction must be in (0, 1), got {train_fraction}")
    if not (validation_fraction >= 0 and train_fraction + validation_fraction < 1 - 1e-9):
        raise ValueError(f"validation_fraction must be in [0, 1 - train_fraction), "
                         f"got {validation_fraction}")
    rng = np.random.default_rng(seed)
    groups = [np.flatnonzero(y == c) for c in np.unique(y)] if stratify else [np.arange(len(y))]
    train, validation = [], []
    for idx in groups:
        n_train = math.ceil(train_fraction * len(idx) - 1e-9)
        n_val = math.ceil(validation_fraction * len(idx) - 1e-9)
        order = rng.permutation(idx)
        train.append(order[:n_train])
        validation.append(order[n_train:n_train + n_val])
    train, validation = np.sort(np.concatenate(train)), np.sort(np.concatenate(validation))
    test = np.setdiff1d(np.arange(len(y)), np.concatenate([train, validation]))
    return train, validation, test


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


def tuning_parts(y: np.ndarray, train: np.ndarray, validation: np.ndarray, seed: int,
                 fold: tuple, stratify: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Fit and evaluation indices of one tuning fold, nested inside an outer split.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Labels of the whole dataset.
    train, validation : ndarray of int
        The outer split's training and validation parts (:func:`split_indices`); the test part
        is never an argument, so no tuning fold can touch it.
    seed : int
        The outer split's seed; the folds' seed derives from it.
    fold : tuple
        ``("cv", n_folds, i)``: fold ``i`` of a (stratified) ``n_folds``-fold partition of the
        training part (Ying & Li §5: three-fold cross validation on the training data);
        ``("validation",)``: fit on the training part, evaluate on the validation part (Shen et
        al. 2010/2014's 70/15/15 protocol).

    Returns
    -------
    fit, evaluate : ndarray of int
        Sorted indices into ``y``.
    """
    if fold[0] == "validation":
        if len(validation) == 0:
            raise ValueError("validation tuning needs split.validation_fraction > 0")
        return train, validation
    _, n_folds, i = fold
    rng = np.random.default_rng(derive_seed(seed, "tuning", n_folds))
    groups = [train[y[train] == c] for c in np.unique(y[train])] if stratify else [train]
    # deal the shuffled classes, one after the other, round-robin over the folds: every class is
    # spread evenly and fold sizes differ by at most one
    held = np.concatenate([rng.permutation(g) for g in groups])[i::n_folds]
    return np.setdiff1d(train, held), np.sort(held)
