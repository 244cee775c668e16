"""Text formats: delimited tables (UCI), sparse ``index:value`` lines with a separate label file
(NIPS 2003 feature-selection challenge), and libsvm / svmlight files.

Delimited text and ``index:value`` files need no size check before they are read: their arrays
are at most a few times the size of their (decompressed) text, which the catalogue pins by its
sha256. A user's libsvm file is checked before it is densified (:func:`user_libsvm`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ...common.resources import oversize
from ..errors import DataTooLarge
from ..spec import Parsed, Parser
from .common import open_text, stack


def delimited_text(
    *,
    label_column: int = -1,
    skip_lines: int = 0,
    delimiter: str = ",",
    parts: Sequence[str] | None = None,
    drop_columns: Sequence[int] = (),
    missing: str | None = None,
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
    drop_columns : sequence of int
        Columns that are neither features nor label (e.g. a sample id), by index in the file.
    missing : str or None
        Token marking a missing value (e.g. ``"?"``): rows holding it are dropped and
        ``meta['n_dropped']`` gives their number. With ``None`` pandas' default NA tokens apply
        and no row is dropped (the loader then refuses non-finite features).

    Returns
    -------
    parser : callable
    """

    def parse(paths: list[Path]) -> Parsed:
        blocks, dropped = [], 0
        for path in paths:
            if missing is None:
                table = pd.read_csv(path, sep=delimiter, header=None, skiprows=skip_lines)
            else:
                table = pd.read_csv(path, sep=delimiter, header=None, skiprows=skip_lines,
                                    na_values=[missing], keep_default_na=False)
                complete = table.dropna()
                dropped += len(table) - len(complete)
                table = complete
            label = table.columns[label_column]
            unused = [label, *(table.columns[c] for c in drop_columns)]
            blocks.append((table.drop(columns=unused).to_numpy(np.float64), table[label].to_numpy()))
        parsed = stack(blocks, parts)
        if missing is not None:
            parsed.extra["n_dropped"] = dropped
        return parsed

    return parse


def sparse_index_value(n_features: int, *, index_base: int = 0, parts: Sequence[str] | None = None) -> Parser:
    """Sparse ``index:value`` text (NIPS 2003 feature-selection challenge), labels apart.

    Files come as ``[data, labels, data, labels, ...]`` pairs, one per split. A data line is
    one sample: whitespace-separated ``index:value`` tokens (possibly none); a label file has
    one label per line. Files ending in ``.gz`` / ``.bz2`` are decompressed.

    Parameters
    ----------
    n_features : int
        Number of columns; an index outside ``index_base .. index_base + n_features - 1`` is an
        error.
    index_base : int
        Index of the first column in the file (0 or 1).
    parts : sequence of str or None
        Split names, one per pair.

    Returns
    -------
    parser : callable
        ``X`` is a float64 ``scipy.sparse.csr_matrix``.
    """

    def parse(paths: list[Path]) -> Parsed:
        if len(paths) % 2 or (parts is not None and len(paths) != 2 * len(parts)):
            raise ValueError(f"expected (data, labels) pairs for parts {parts}, got {len(paths)} files")
        blocks = []
        for data_path, labels_path in zip(paths[::2], paths[1::2]):
            X = read_index_value(data_path, n_features, index_base=index_base)
            labels = np.loadtxt(open_text(labels_path), dtype=np.int64, ndmin=1)
            if len(labels) != X.shape[0]:
                raise ValueError(f"{data_path}: {X.shape[0]} rows for {len(labels)} labels in {labels_path}")
            blocks.append((X, labels))
        return stack(blocks, parts)

    return parse


def read_index_value(path: Path, n_features: int, *, index_base: int = 0) -> sp.csr_matrix:
    """Read sparse ``index:value`` lines (one sample per line) as a float64 CSR matrix."""
    indptr, indices, values = [0], [], []
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, 1):
            for token in line.split():
                index, sep, value = token.partition(":")
                if not sep:
                    raise ValueError(f"{path}:{lineno}: {token!r} is not index:value")
                column = int(index) - index_base
                if not 0 <= column < n_features:
                    raise ValueError(f"{path}:{lineno}: feature index {index} outside "
                                     f"{index_base}..{index_base + n_features - 1}")
                indices.append(column)
                values.append(float(value))
            indptr.append(len(indices))
    X = sp.csr_matrix((np.array(values, np.float64), np.array(indices, np.int32), np.array(indptr)),
                      shape=(len(indptr) - 1, n_features))
    X.sum_duplicates()
    return X


def libsvm(n_features: int, *, parts: Sequence[str] | None = None) -> Parser:
    """libsvm / svmlight files (``label index:value ...``, 1-based indices), one per split.

    Files ending in ``.gz`` / ``.bz2`` are decompressed (scikit-learn's svmlight reader).
    Integral labels are returned as ints (class names ``"1"``, not ``"1.0"``).

    Returns
    -------
    parser : callable
        ``X`` is a float64 ``scipy.sparse.csr_matrix`` with ``n_features`` columns.
    """

    def parse(paths: list[Path]) -> Parsed:
        from sklearn.datasets import load_svmlight_files

        loaded = load_svmlight_files([str(p) for p in paths], n_features=n_features,
                                     dtype=np.float64, zero_based=False)
        blocks = []
        for X, labels in zip(loaded[::2], loaded[1::2]):
            if np.all(labels == np.round(labels)):
                labels = labels.astype(np.int64)
            blocks.append((sp.csr_matrix(X), labels))
        return stack(blocks, parts)

    return parse


def user_libsvm(path: Path, what: str) -> Parsed:
    """A user's LIBSVM / svmlight file (``label index:value ...``), densified.

    scikit-learn's reader keeps the data sparse; before it is densified, its rows × (largest
    feature index) float64 values are checked against the memory (see
    :mod:`dml_bench.datasets.parsers`), so that a few lines with a feature index of two billion
    are refused, not allocated. Integral labels are returned as ints; ``what`` names the dataset
    in the error.

    Raises
    ------
    DataTooLarge
        The dense array would not fit.
    ValueError
        The file does not parse (scikit-learn's message).
    """
    from sklearn.datasets import load_svmlight_file

    X, labels = load_svmlight_file(str(path), dtype=np.float64)
    problem = oversize(X.shape, np.float64, "a dense array")
    if problem:
        raise DataTooLarge(f"{what}: the file {problem}; its largest feature index is "
                           f"{X.shape[1]}, on {X.shape[0]} lines")
    labels = labels.astype(np.int64) if np.all(labels == np.round(labels)) else labels
    return Parsed(X.toarray(), labels, {"n_dropped": 0})
