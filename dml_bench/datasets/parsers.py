"""Reusable parsers: each factory returns ``parser(paths) -> Parsed`` for a file format.

Parsers only read; the loader checks the shape and class count against the spec. Files may be
gzip / bz2 compressed (by suffix ``.gz`` / ``.bz2``) where a parser says so.

Formats: delimited text (UCI), HDF5 groups, binary PGM images, IDX (MNIST), MAT v5 matrices
of images (Yale B, Roweis USPS), ``.npz`` arrays, sparse ``index:value`` text with a separate
label file (NIPS 2003 feature-selection challenge), libsvm / svmlight, and per-image descriptor
tables (LFW SIFT; see :func:`read_descriptor_table`).

Bounded reading: before an array is read, the size its file declares (a ``.npy`` header, each
``.npz`` member's header, an HDF5 dataset's shape and dtype, a MAT variable's dimensions from
``scipy.io.whosmat``, an IDX header, a LIBSVM file's rows × largest feature index before it is
densified) is checked against the smaller of the memory available now and a declared maximum,
:data:`dml_bench.resources.MAX_ARRAY_BYTES` (64 GiB; the environment variable
``DMLBENCH_MAX_ARRAY_BYTES``, a number of bytes, replaces it). A file beyond it is refused with
:class:`~dml_bench.datasets.errors.DataTooLarge` (a ``DataNotAvailable``: the dataset is skipped
with the reason), e.g. ``/w/big.npz: X declares an array of 26.2 TiB (3000000 × 1200000
float64), more than the 20.1 GiB of memory available``, so that a few bytes cannot exhaust the
memory. Delimited text, PGM and index:value files need no such check: their arrays are at most a
few times the size of their (decompressed) text, which the catalogue pins by its sha256.
"""

from __future__ import annotations

import bz2
import gzip
import re
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..resources import npz_headers, oversize
from .errors import DataTooLarge
from .spec import Parsed, Parser

_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
LFW_IMAGE_NAME = re.compile(r"(.+)_(\d{4})")  # "Aaron_Eckhart_0001": person, image number

_PGM_TOKEN = re.compile(rb"(?:\s+|#[^\n]*\n?)*([^\s#]+)")  # whitespace and comments, then a token


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
        parsed = _stack(blocks, parts)
        if missing is not None:
            parsed.extra["n_dropped"] = dropped
        return parsed

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
            blocks = [(_h5_read(fh[g][data], path).astype(np.float64),
                       _h5_read(fh[g][target], path)) for g in groups]
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


def idx_files(parts: Sequence[str] | None = None) -> Parser:
    """IDX files (MNIST layout), as ``[images, labels, images, labels, ...]`` pairs.

    Each pair is one split (``parts`` names them, in order); images of shape ``(n, h, w)`` are
    flattened row-major and keep their IDX dtype (uint8 for MNIST: compact in the binary
    cache). Files ending in ``.gz`` are decompressed.

    Returns
    -------
    parser : callable
        Adds ``image_shape`` ``(h, w)``, and ``parts`` when named.
    """

    def parse(paths: list[Path]) -> Parsed:
        if len(paths) % 2 or (parts is not None and len(paths) != 2 * len(parts)):
            raise ValueError(f"expected (images, labels) pairs for parts {parts}, got {len(paths)} files")
        blocks, shapes = [], set()
        for images_path, labels_path in zip(paths[::2], paths[1::2]):
            images, labels = read_idx(images_path), read_idx(labels_path)
            if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
                raise ValueError(f"{images_path}, {labels_path}: {images.shape} images for "
                                 f"{labels.shape} labels")
            shapes.add(images.shape[1:])
            blocks.append((images.reshape(len(images), -1), labels))
        if len(shapes) != 1:
            raise ValueError(f"images of different shapes: {sorted(shapes)}")
        parsed = _stack(blocks, parts)
        parsed.extra["image_shape"] = shapes.pop()
        return parsed

    return parse


def read_idx(path: Path) -> np.ndarray:
    """Read an IDX file (``.gz`` decompressed): 2 zero bytes, type code, ndim, big-endian
    uint32 sizes, then the data in C order. The declared size is checked against the memory
    before the data is read (a small ``.gz`` may expand to any size)."""
    with _open_binary(path) as fh:
        head = fh.read(4)
        if len(head) < 4 or head[:2] != b"\0\0" or head[2] not in _IDX_DTYPES:
            raise ValueError(f"{path}: not an IDX file (header {head.hex()})")
        ndim = head[3]
        sizes = fh.read(4 * ndim)
        if len(sizes) != 4 * ndim:
            raise ValueError(f"{path}: truncated IDX header")
        shape = tuple(int(d) for d in np.frombuffer(sizes, ">u4"))
        dtype = np.dtype(_IDX_DTYPES[head[2]])
        _refuse(shape, dtype, str(path))
        need = int(np.prod(shape)) * dtype.itemsize
        raw = fh.read(need + 1)
    if len(raw) != need:
        raise ValueError(f"{path}: {len(raw)}{'+' if len(raw) > need else ''} data bytes for "
                         f"shape {shape} of {dtype}")
    return np.frombuffer(raw, dtype).reshape(shape).astype(dtype.newbyteorder("="))


def mat_images(
    features: str, labels: str, *, image_shape: tuple[int, int], column_major: bool = False
) -> Parser:
    """A MAT v5 file holding one image per row of ``features`` and a label vector ``labels``.

    Parameters
    ----------
    features, labels : str
        Variable names (Deng Cai's face sets: ``"fea"``, ``"gnd"``).
    image_shape : (height, width)
    column_major : bool
        Rows hold MATLAB (column-major) images; they are transposed so that
        ``X[i].reshape(height, width)`` is the upright image.

    Returns
    -------
    parser : callable
        Keeps the file's dtype (uint8 pixels); adds ``image_shape``.
    """

    def parse(paths: list[Path]) -> Parsed:
        import scipy.io

        (path,) = paths
        _check_mat(path, (features, labels))
        mat = scipy.io.loadmat(path)
        X = np.asarray(mat[features])
        if X.ndim != 2 or X.shape[1] != np.prod(image_shape):
            raise ValueError(f"{path}: {features} has shape {X.shape}, not (n, {np.prod(image_shape)})")
        if column_major:
            X = _rows_from_column_major(X, image_shape)
        return Parsed(X, np.asarray(mat[labels]).ravel(), {"image_shape": tuple(image_shape)})

    return parse


def mat_class_blocks(
    variable: str, class_labels: Sequence, *, image_shape: tuple[int, int], column_major: bool = False
) -> Parser:
    """A MAT v5 array of shape ``(n_features, n_per_class, n_classes)`` (Roweis' ``usps_all``).

    Parameters
    ----------
    variable : str
        Variable name (``"data"``).
    class_labels : sequence
        Label of each block along the last axis (Roweis: digits 1..9 then 0).
    image_shape : (height, width)
    column_major : bool
        As for :func:`mat_images`.

    Returns
    -------
    parser : callable
        Rows are class by class (block order), then in their order within the block.
    """

    def parse(paths: list[Path]) -> Parsed:
        import scipy.io

        (path,) = paths
        _check_mat(path, (variable,))
        data = np.asarray(scipy.io.loadmat(path)[variable])
        if data.ndim != 3 or data.shape[0] != np.prod(image_shape) or data.shape[2] != len(class_labels):
            raise ValueError(f"{path}: {variable} has shape {data.shape}, expected "
                             f"({np.prod(image_shape)}, n, {len(class_labels)})")
        X = data.transpose(2, 1, 0).reshape(-1, data.shape[0])
        if column_major:
            X = _rows_from_column_major(X, image_shape)
        labels = np.repeat(np.asarray(class_labels), data.shape[1])
        return Parsed(X, labels, {"image_shape": tuple(image_shape)})

    return parse


def npz_arrays(features: str = "X", labels: str = "y") -> Parser:
    """A NumPy ``.npz`` with a feature matrix and a label vector (read without pickle, after their
    headers are checked against the memory; other members, e.g. object arrays of names, are
    ignored: give names in the spec)."""

    def parse(paths: list[Path]) -> Parsed:
        (path,) = paths
        _check_npz(path, (features, labels))
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
            labels = np.loadtxt(_open_text(labels_path), dtype=np.int64, ndmin=1)
            if len(labels) != X.shape[0]:
                raise ValueError(f"{data_path}: {X.shape[0]} rows for {len(labels)} labels in {labels_path}")
            blocks.append((X, labels))
        return _stack(blocks, parts)

    return parse


def read_index_value(path: Path, n_features: int, *, index_base: int = 0) -> sp.csr_matrix:
    """Read sparse ``index:value`` lines (one sample per line) as a float64 CSR matrix."""
    indptr, indices, values = [0], [], []
    with _open_text(path) as fh:
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
        return _stack(blocks, parts)

    return parse


def lfw_descriptors(n_features: int = 3456) -> Parser:
    """Per-image descriptors of LFW images (see :func:`read_descriptor_table`).

    Returns
    -------
    parser : callable
        Labels are the person names (from the image names); ``meta['image_names']`` lists the
        image names in row order.
    """

    def parse(paths: list[Path]) -> Parsed:
        (path,) = paths
        X, names = read_descriptor_table(path, n_features)
        people = np.array([LFW_IMAGE_NAME.fullmatch(n)[1] for n in names])
        return Parsed(X, people, {"image_names": list(names)})

    return parse


def read_descriptor_table(path: Path, n_features: int = 3456) -> tuple[np.ndarray, list[str]]:
    """Read a descriptor table: one row per LFW image, named ``<Person_Name>_<NNNN>``.

    Accepted formats (chosen by content, not by suffix):

    - NumPy ``.npz`` (no pickle) with ``X``, a numeric ``(n, n_features)`` array, and
      ``names``, a ``(n,)`` string array;
    - MATLAB v5 ``.mat`` (``scipy.io.loadmat``) with the same two variables, ``names`` as a
      cell array of strings or a char matrix (rows right-padded with blanks);
    - MATLAB v7.3 ``.mat`` (an HDF5 file, read with ``h5py``) with the same two variables as
      MATLAB saves them (``X`` an n x n_features matrix, ``names`` a cell array of strings or a
      char matrix): MATLAB stores matrices column-major, so h5py sees their transposes;
    - HDF5 ``.h5`` / ``.hdf5`` with datasets ``X`` ``(n, n_features)`` and ``names`` ``(n,)``
      (variable-length or fixed-length strings, UTF-8 or bytes).

    ``names`` are the LFW image file stems (``Aaron_Eckhart_0001`` for
    ``lfw_funneled/Aaron_Eckhart/Aaron_Eckhart_0001.jpg``), unique. For the SIFT descriptors of
    Guillaumin et al. (2009), ``n_features = 3456`` = 9 facial points x 3 scales x 128 bins,
    column ``(point * 3 + scale) * 128 + bin``.

    Returns
    -------
    X : ndarray of shape (n, n_features), float64
    names : list of str

    Raises
    ------
    ValueError
        The file is in neither format, is damaged (a broken zip, MAT or HDF5 structure), or its
        content does not follow the layout above.
    DataTooLarge
        ``X`` or ``names`` declares more bytes than may be read (see the module docstring).
    """
    path = Path(path)
    with open(path, "rb") as fh:
        head = fh.read(128)
    try:
        X, names = _descriptor_arrays(path, head)
    except (zipfile.BadZipFile, EOFError, KeyError, zlib.error, NotImplementedError) as exc:
        raise ValueError(f"{path}: damaged or unreadable ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())})") from exc
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[1] != n_features or not np.issubdtype(X.dtype, np.number):
        raise ValueError(f"{path}: X has shape {X.shape} and dtype {X.dtype}, expected numeric "
                         f"(n, {n_features})")
    if len(names) != X.shape[0]:
        raise ValueError(f"{path}: {len(names)} names for {X.shape[0]} rows")
    bad = [n for n in names if not LFW_IMAGE_NAME.fullmatch(n)]
    if bad:
        raise ValueError(f"{path}: image names not of the form Person_Name_0001: {bad[:3]}")
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: duplicate image names")
    return X.astype(np.float64), names


def _descriptor_arrays(path: Path, head: bytes) -> tuple:
    """``(X, names)`` of a descriptor table whose first bytes are ``head`` (see
    :func:`read_descriptor_table`), each array's declared size checked before it is read."""
    if head.startswith(b"PK"):
        _check_npz(path, ("X", "names"))
        with np.load(path, allow_pickle=False) as arrays:
            missing = {"X", "names"} - set(arrays.files)
            if missing:
                raise ValueError(f"{path}: no {sorted(missing)} in the .npz (has {arrays.files})")
            return arrays["X"], [str(n) for n in arrays["names"].ravel()]
    if head.startswith(b"\x89HDF\r\n\x1a\n") or head.startswith(b"MATLAB 7.3"):
        return _hdf5_table(path, matlab=head.startswith(b"MATLAB"))
    if head.startswith(b"MATLAB"):
        import scipy.io

        _check_mat(path, ("X", "names"))
        mat = scipy.io.loadmat(path)
        missing = {"X", "names"} - set(mat)
        if missing:
            raise ValueError(f"{path}: no {sorted(missing)} in the .mat file")
        return mat["X"], _mat_strings(mat["names"])
    raise ValueError(f"{path}: neither a .npz, a MAT (v5 or v7.3) nor an HDF5 file")


class LFWPair(NamedTuple):
    """One LFW pair: images ``name1_idx1`` and ``name2_idx2`` (1-based image numbers)."""

    name1: str
    idx1: int
    name2: str
    idx2: int
    same: bool


def read_lfw_pairs(path: Path) -> list[list[LFWPair]]:
    """Read an LFW pairs file into folds of pairs.

    The first line is ``n_folds n_per_fold`` (View 2 ``pairs.txt``: ``10 300``) or just
    ``n_per_fold`` (View 1 ``pairsDevTrain.txt`` / ``pairsDevTest.txt``: one fold). Each fold
    then lists ``n_per_fold`` matched pairs (``name i j``) followed by ``n_per_fold`` mismatched
    pairs (``name1 i name2 j``), tab-separated.

    Returns
    -------
    folds : list of list of LFWPair
        ``2 * n_per_fold`` pairs per fold, matched first, in file order.

    Raises
    ------
    ValueError
        The counts or a line do not follow this layout.
    """
    lines = [line.split() for line in Path(path).read_text().splitlines() if line.strip()]
    if not lines or len(lines[0]) not in (1, 2) or not all(t.isdigit() for t in lines[0]):
        raise ValueError(f"{path}: first line must be 'n_folds n_per_fold' or 'n_per_fold'")
    n_folds, n_per = (int(t) for t in lines[0]) if len(lines[0]) == 2 else (1, int(lines[0][0]))
    body = lines[1:]
    if len(body) != 2 * n_folds * n_per:
        raise ValueError(f"{path}: {len(body)} pair lines, header announces {n_folds} x 2 x {n_per}")
    folds = []
    for fold in range(n_folds):
        pairs = []
        for k, fields in enumerate(body[2 * n_per * fold: 2 * n_per * (fold + 1)]):
            same = k < n_per
            lineno = 2 + 2 * n_per * fold + k
            try:
                if same and len(fields) == 3:
                    pairs.append(LFWPair(fields[0], int(fields[1]), fields[0], int(fields[2]), True))
                elif not same and len(fields) == 4:
                    pairs.append(LFWPair(fields[0], int(fields[1]), fields[2], int(fields[3]), False))
                else:
                    raise ValueError
            except ValueError:
                kind = "matched 'name i j'" if same else "mismatched 'name1 i name2 j'"
                raise ValueError(f"{path}:{lineno}: expected a {kind} pair, got {fields}") from None
        folds.append(pairs)
    return folds


def lfw_pair_list(filename: str) -> Parser:
    """One LFW pairs file (chosen by name among the paths) as labelled pairs without features.

    Returns
    -------
    parser : callable
        ``X`` has 0 columns; labels are 1 (same person) / 0; ``meta['pairs']`` lists the
        :class:`LFWPair` tuples in row order and ``parts`` the fold sizes (``fold1`` ...).
    """

    def parse(paths: list[Path]) -> Parsed:
        (path,) = [p for p in paths if Path(p).name == filename]
        folds = read_lfw_pairs(path)
        pairs = [pair for fold in folds for pair in fold]
        labels = np.array([int(pair.same) for pair in pairs])
        parts = {f"fold{k}": len(fold) for k, fold in enumerate(folds, 1)}
        return Parsed(np.empty((len(pairs), 0)), labels, {"parts": parts, "pairs": pairs})

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


def _stack(blocks: list[tuple], parts: Sequence[str] | None) -> Parsed:
    features, labels = zip(*blocks)
    extra = {} if parts is None else {"parts": dict(zip(parts, map(len, labels), strict=True))}
    if any(sp.issparse(f) for f in features):
        X = sp.vstack(features, format="csr")
    else:
        X = features[0] if len(features) == 1 else np.concatenate(features)
    return Parsed(X, np.concatenate(labels), extra)


def _rows_from_column_major(X: np.ndarray, image_shape: tuple[int, int]) -> np.ndarray:
    """Rows holding column-major (MATLAB) images → rows holding row-major images."""
    height, width = image_shape
    return np.ascontiguousarray(X.reshape(len(X), width, height).transpose(0, 2, 1)).reshape(len(X), -1)


def _hdf5_table(path: Path, matlab: bool) -> tuple[np.ndarray, list[str]]:
    """``X`` and ``names`` of an HDF5 descriptor table; ``matlab``: a MAT v7.3 file, whose
    matrices h5py reads transposed and whose cell arrays hold references to char arrays."""
    import h5py

    with h5py.File(path, "r") as fh:
        missing = {"X", "names"} - set(fh)
        if missing:
            raise ValueError(f"{path}: no {sorted(missing)} in the HDF5 file (has {sorted(fh)})")
        names = fh["names"]
        for dataset in (fh["X"], names):
            _h5_read(dataset, path, check_only=True)
        X = fh["X"][()]
        if not matlab:
            return X, [n.decode() if isinstance(n, bytes) else str(n) for n in names[()].ravel()]
        X = np.asarray(X).T
        if names.dtype == h5py.ref_dtype:  # cell array: one char (uint16) array per cell
            chars = [np.asarray(_h5_read(fh[ref], path)).ravel() for ref in names[()].T.ravel()]
            return X, ["".join(map(chr, c)) for c in chars]
        table = np.asarray(names[()]).T  # char matrix: one padded name per row
        return X, ["".join(map(chr, row)).rstrip() for row in np.atleast_2d(table)]


def _mat_strings(value) -> list[str]:
    """Strings of a MATLAB cell array of strings or char matrix, as read by ``loadmat``."""
    value = np.asarray(value)
    if value.dtype == object:
        return [str(np.asarray(v).ravel()[0]) if np.asarray(v).size else "" for v in value.ravel()]
    if value.dtype.kind == "U":
        return [str(v).rstrip() for v in value.ravel()]
    raise ValueError(f"names of dtype {value.dtype} are not strings")


def user_libsvm(path: Path, what: str) -> Parsed:
    """A user's LIBSVM / svmlight file (``label index:value ...``), densified.

    scikit-learn's reader keeps the data sparse; before it is densified, its rows × (largest
    feature index) float64 values are checked against the memory (see the module docstring), so
    that a few lines with a feature index of two billion are refused, not allocated. Integral
    labels are returned as ints; ``what`` names the dataset in the error.

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


def _refuse(shape, dtype, where: str, type_name: str | None = None) -> None:
    """:class:`DataTooLarge` ``"<where> declares an array of …"`` when an array of ``shape`` and
    ``dtype`` (a dtype or an item size) does not fit :func:`dml_bench.resources.oversize`'s
    budget."""
    problem = oversize(shape, dtype, type_name=type_name)
    if problem:
        raise DataTooLarge(f"{where} {problem}")


def _check_npz(path: Path, members: Sequence[str]) -> None:
    """The ``members`` of a ``.npz`` that are present fit in memory, from their headers."""
    for name, (shape, dtype) in npz_headers(path, members).items():
        _refuse(shape, dtype, f"{path}: {name}")


def _h5_read(dataset, path: Path, check_only: bool = False):
    """An HDF5 dataset's values, after its shape × item size is checked (nothing is read with
    ``check_only``)."""
    _refuse(dataset.shape or (), dataset.dtype, f"{path}: {dataset.name}")
    return None if check_only else dataset[()]


#: bytes per element of the arrays ``scipy.io.loadmat`` makes of each MATLAB class (chars become
#: 4-byte unicode; cells and structs one object pointer each, their contents counted apart)
_MAT_ITEMSIZE = {"double": 8, "single": 4, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2,
                 "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "logical": 1, "char": 4,
                 "cell": 8, "struct": 8, "object": 8}


def _check_mat(path: Path, variables: Sequence[str]) -> None:
    """The named variables of a MAT v4/v5 file fit in memory, from their headers
    (``scipy.io.whosmat``). Sparse variables hold only their nonzeros, which the file holds."""
    import scipy.io

    for name, shape, mclass in scipy.io.whosmat(str(path)):
        if name in variables and mclass in _MAT_ITEMSIZE:
            _refuse(shape, _MAT_ITEMSIZE[mclass], f"{path}: {name}", f"MATLAB {mclass}")


def _open_binary(path: Path):
    """Open a file for reading bytes, decompressing ``.gz`` / ``.bz2``."""
    suffix = Path(path).suffix
    if suffix == ".gz":
        return gzip.open(path, "rb")
    if suffix == ".bz2":
        return bz2.open(path, "rb")
    return open(path, "rb")


def _open_text(path: Path):
    """Open a text file, decompressing ``.gz`` / ``.bz2``."""
    suffix = Path(path).suffix
    if suffix == ".gz":
        return gzip.open(path, "rt")
    if suffix == ".bz2":
        return bz2.open(path, "rt")
    return open(path)
