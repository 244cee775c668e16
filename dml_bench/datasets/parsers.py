"""Reusable parsers: each factory returns ``parser(paths) -> Parsed`` for a file format.

Parsers only read; the loader checks the shape and class count against the spec.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .spec import Parsed, Parser

_PGM_TOKEN = re.compile(rb"(?:\s+|#[^\n]*\n?)*([^\s#]+)")  # whitespace and comments, then a token


def delimited_text(
    *, label_column: int = -1, skip_lines: int = 0, delimiter: str = ",", parts: Sequence[str] | None = None
) -> Parser:
    """Delimited text files with one sample per line, concatenated in the order given.

    Parameters
    ----------
    label_column : int
        Column holding the label (negative counts from the end); all other columns are features.
    skip_lines : int
        Lines skipped at the top of each file (blank lines are ignored everywhere).
    delimiter : str
        Field separator.
    parts : sequence of str or None
        One name per file; ``meta['parts']`` then maps each name to its number of rows.

    Returns
    -------
    parser : callable
    """

    def parse(paths: list[Path]) -> Parsed:
        blocks = []
        for path in paths:
            table = pd.read_csv(path, sep=delimiter, header=None, skiprows=skip_lines)
            label = table.columns[label_column]
            blocks.append((table.drop(columns=label).to_numpy(np.float64), table[label].to_numpy()))
        return _stack(blocks, parts)

    return parse


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
            blocks = [(fh[g][data][()].astype(np.float64), fh[g][target][()]) for g in groups]
        return _stack(blocks, groups)

    return parse


def pgm_images(pattern: str) -> Parser:
    """One binary PGM (P5) image per file, flattened row-major.

    Parameters
    ----------
    pattern : str
        Regular expression searched in each path (``/`` separators); its groups, read as ints,
        order the rows and the first one is the label (e.g. ``r"s(\\d+)/(\\d+)\\.pgm$"``: subject
        folder, then image number).

    Returns
    -------
    parser : callable
        Adds ``image_shape`` ``(height, width)`` to the metadata.
    """

    def parse(paths: list[Path]) -> Parsed:
        keyed = []
        for path in paths:
            match = re.search(pattern, Path(path).as_posix())
            if match is None:
                raise ValueError(f"{path} does not match {pattern!r}")
            keyed.append((tuple(int(g) for g in match.groups()), path))
        keyed.sort()
        images = [read_pgm(path) for _, path in keyed]
        shapes = {image.shape for image in images}
        if len(shapes) != 1:
            raise ValueError(f"images of different shapes: {sorted(shapes)}")
        X = np.stack([image.ravel() for image in images]).astype(np.float64)
        labels = np.array([key[0] for key, _ in keyed])
        return Parsed(X, labels, {"image_shape": images[0].shape})

    return parse


def read_pgm(path: Path) -> np.ndarray:
    """Read a binary PGM (P5) image as a ``(height, width)`` array.

    The header is ``P5``, width, height and maxval separated by whitespace, where ``#`` starts a
    comment running to the end of the line; one whitespace byte then precedes the raster.
    """
    raw = Path(path).read_bytes()
    tokens, pos = [], 0
    while len(tokens) < 4:
        match = _PGM_TOKEN.match(raw, pos)
        if match is None:
            raise ValueError(f"{path}: truncated PGM header")
        tokens.append(match[1])
        pos = match.end()
    magic, width, height, maxval = tokens[0], *(int(t) for t in tokens[1:])
    if magic != b"P5" or not raw[pos : pos + 1].isspace():
        raise ValueError(f"{path}: not a binary PGM (magic {magic!r})")
    dtype = np.dtype(">u2" if maxval > 255 else "u1")
    raster = raw[pos + 1 :]  # a single whitespace byte ends the header
    if len(raster) != width * height * dtype.itemsize:
        raise ValueError(f"{path}: {len(raster)} raster bytes for a {width}x{height} image")
    return np.frombuffer(raster, dtype=dtype).reshape(height, width)


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


def _stack(blocks: list[tuple[np.ndarray, np.ndarray]], parts: Sequence[str] | None) -> Parsed:
    features, labels = zip(*blocks)
    extra = {} if parts is None else {"parts": dict(zip(parts, map(len, labels), strict=True))}
    return Parsed(np.concatenate(features), np.concatenate(labels), extra)
