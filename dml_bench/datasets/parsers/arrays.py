"""Array formats: HDF5 groups (USPS), NumPy ``.npz`` arrays (read without pickle, their headers
checked against the memory first), labelled count histograms, and scikit-learn's bundled sets.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..spec import Parsed, Parser
from .common import check_npz, h5_read, stack


def hdf5_groups(groups: Sequence[str], *, data: str = "data", target: str = "target") -> Parser:
    """One HDF5 file with a group per split, each holding a feature and a label dataset.

    Parameters
    ----------
    groups : sequence of str
        Groups read and concatenated in this order; ``meta['parts']`` gives their row counts.
    data, target : str
        Names of the feature and label datasets inside each group.

    Returns
    -------
    parser : callable
    """

    def parse(paths: list[Path]) -> Parsed:
        import h5py

        (path,) = paths
        with h5py.File(path, "r") as fh:
            blocks = [(h5_read(fh[g][data], path).astype(np.float64),
                       h5_read(fh[g][target], path)) for g in groups]
        return stack(blocks, groups)

    return parse


def npz_arrays(features: str = "X", labels: str = "y") -> Parser:
    """A NumPy ``.npz`` with a feature matrix and a label vector (read without pickle, after their
    headers are checked against the memory; other members, e.g. object arrays of names, are
    ignored: give names in the spec)."""

    def parse(paths: list[Path]) -> Parsed:
        (path,) = paths
        check_npz(path, (features, labels))
        with np.load(path, allow_pickle=False) as arrays:
            return Parsed(arrays[features], arrays[labels].ravel(), {})

    return parse


def labelled_histograms(class_sizes: dict[int, int], features: str = "X", labels: str = "y") -> Parser:
    """A NumPy ``.npz`` of count histograms (bags of visual words) with known class sizes.

    Read as :func:`npz_arrays`, then checked beyond what the loader checks (shape, class count,
    finite values): every value of ``X`` is non-negative and ``y`` holds exactly
    ``class_sizes[c]`` rows of each label ``c`` (no other label).

    Parameters
    ----------
    class_sizes : dict of int to int
        Label → number of rows with it (Shen et al. 2010's Face-Background: ``{1: 435, 0: 520}``).
    features, labels : str
        Names of the two arrays in the ``.npz``.

    Returns
    -------
    parser : callable
        Labels are returned as int64.
    """
    read = npz_arrays(features, labels)
    expected = {int(c): int(n) for c, n in sorted(class_sizes.items())}

    def parse(paths: list[Path]) -> Parsed:
        parsed = read(paths)
        (path,) = paths
        y = np.asarray(parsed.labels)
        if not np.issubdtype(y.dtype, np.number) or not np.isin(y, list(expected)).all():
            found = np.unique(y)
            raise ValueError(f"{path}: {labels} must hold only the labels {list(expected)}, found "
                             f"{found[:5].tolist()}{' ...' if len(found) > 5 else ''}")
        y = y.astype(np.int64)
        counts = {c: int(np.sum(y == c)) for c in expected}
        if counts != expected:
            raise ValueError(f"{path}: rows per label {counts}, expected {expected}")
        X = np.asarray(parsed.X)
        if np.issubdtype(X.dtype, np.number) and X.size and np.nanmin(X) < 0:
            row, col = np.argwhere(X < 0)[0]
            raise ValueError(f"{path}: histogram counts must be non-negative, {features}[{row}, "
                             f"{col}] = {X[row, col]}")
        return Parsed(X, y, parsed.extra)

    return parse


def sklearn_bundled(loader: str) -> Parser:
    """A dataset shipped with scikit-learn, e.g. ``"load_wine"``.

    Parameters
    ----------
    loader : str
        Name of the ``sklearn.datasets`` function.

    Returns
    -------
    parser : callable
        Takes no paths; keeps scikit-learn's ``target_names`` as ``class_names``.
    """

    def parse(paths: list[Path]) -> Parsed:
        import sklearn.datasets

        bunch = getattr(sklearn.datasets, loader)()
        return Parsed(bunch.data, bunch.target, {"class_names": [str(n) for n in bunch.target_names]})

    return parse
