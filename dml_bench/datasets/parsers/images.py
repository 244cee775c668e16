"""Image formats: binary PGM files (AT&T faces), IDX files (MNIST) and MAT v5 matrices of images
(Yale B, Roweis' USPS).

An IDX header's and a MAT variable's declared size (``scipy.io.whosmat``) are checked against
the memory before the data is read; a PGM raster must match its header's size.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..spec import Parsed, Parser
from .common import check_mat, open_binary, refuse, rows_from_column_major, stack

_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_PGM_TOKEN = re.compile(rb"(?:\s+|#[^\n]*\n?)*([^\s#]+)")  # whitespace and comments, then a token


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
        parsed = stack(blocks, parts)
        parsed.extra["image_shape"] = shapes.pop()
        return parsed

    return parse


def read_idx(path: Path) -> np.ndarray:
    """Read an IDX file (``.gz`` decompressed): 2 zero bytes, type code, ndim, big-endian
    uint32 sizes, then the data in C order. The declared size is checked against the memory
    before the data is read (a small ``.gz`` may expand to any size)."""
    with open_binary(path) as fh:
        head = fh.read(4)
        if len(head) < 4 or head[:2] != b"\0\0" or head[2] not in _IDX_DTYPES:
            raise ValueError(f"{path}: not an IDX file (header {head.hex()})")
        ndim = head[3]
        sizes = fh.read(4 * ndim)
        if len(sizes) != 4 * ndim:
            raise ValueError(f"{path}: truncated IDX header")
        shape = tuple(int(d) for d in np.frombuffer(sizes, ">u4"))
        dtype = np.dtype(_IDX_DTYPES[head[2]])
        refuse(shape, dtype, str(path))
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
        check_mat(path, (features, labels))
        mat = scipy.io.loadmat(path)
        X = np.asarray(mat[features])
        if X.ndim != 2 or X.shape[1] != np.prod(image_shape):
            raise ValueError(f"{path}: {features} has shape {X.shape}, not (n, {np.prod(image_shape)})")
        if column_major:
            X = rows_from_column_major(X, image_shape)
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
        check_mat(path, (variable,))
        data = np.asarray(scipy.io.loadmat(path)[variable])
        if data.ndim != 3 or data.shape[0] != np.prod(image_shape) or data.shape[2] != len(class_labels):
            raise ValueError(f"{path}: {variable} has shape {data.shape}, expected "
                             f"({np.prod(image_shape)}, n, {len(class_labels)})")
        X = data.transpose(2, 1, 0).reshape(-1, data.shape[0])
        if column_major:
            X = rows_from_column_major(X, image_shape)
        labels = np.repeat(np.asarray(class_labels), data.shape[1])
        return Parsed(X, labels, {"image_shape": tuple(image_shape)})

    return parse
