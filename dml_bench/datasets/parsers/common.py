"""What the format readers share: the stacking of splits, bounded reading and decompression.

Bounded reading: before an array is read, the size its file declares is checked against the
smaller of the memory available now and a declared maximum (:func:`refuse`, from
:func:`dml_bench.common.resources.oversize`), so that a few bytes cannot exhaust the memory.
"""

from __future__ import annotations

import bz2
import gzip
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ...common.resources import npz_headers, oversize
from ..errors import DataTooLarge
from ..spec import Parsed


def stack(blocks: list[tuple], parts: Sequence[str] | None) -> Parsed:
    """One ``Parsed`` of the ``(features, labels)`` blocks of the splits, in order (CSR when any
    block is sparse); ``parts`` names the blocks in ``extra['parts']`` with their row counts."""
    features, labels = zip(*blocks)
    extra = {} if parts is None else {"parts": dict(zip(parts, map(len, labels), strict=True))}
    if any(sp.issparse(f) for f in features):
        X = sp.vstack(features, format="csr")
    else:
        X = features[0] if len(features) == 1 else np.concatenate(features)
    return Parsed(X, np.concatenate(labels), extra)


def rows_from_column_major(X: np.ndarray, image_shape: tuple[int, int]) -> np.ndarray:
    """Rows holding column-major (MATLAB) images → rows holding row-major images."""
    height, width = image_shape
    return np.ascontiguousarray(X.reshape(len(X), width, height).transpose(0, 2, 1)).reshape(len(X), -1)


def refuse(shape, dtype, where: str, type_name: str | None = None) -> None:
    """:class:`DataTooLarge` ``"<where> declares an array of …"`` when an array of ``shape`` and
    ``dtype`` (a dtype or an item size) does not fit
    :func:`dml_bench.common.resources.oversize`'s budget."""
    problem = oversize(shape, dtype, type_name=type_name)
    if problem:
        raise DataTooLarge(f"{where} {problem}")


def check_npz(path: Path, members: Sequence[str]) -> None:
    """The ``members`` of a ``.npz`` that are present fit in memory, from their headers."""
    for name, (shape, dtype) in npz_headers(path, members).items():
        refuse(shape, dtype, f"{path}: {name}")


def h5_read(dataset, path: Path, check_only: bool = False):
    """An HDF5 dataset's values, after its shape × item size is checked (nothing is read with
    ``check_only``)."""
    refuse(dataset.shape or (), dataset.dtype, f"{path}: {dataset.name}")
    return None if check_only else dataset[()]


#: bytes per element of the arrays ``scipy.io.loadmat`` makes of each MATLAB class (chars become
#: 4-byte unicode; cells and structs one object pointer each, their contents counted apart)
MAT_ITEMSIZE = {"double": 8, "single": 4, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2,
                 "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "logical": 1, "char": 4,
                 "cell": 8, "struct": 8, "object": 8}


def check_mat(path: Path, variables: Sequence[str]) -> None:
    """The named variables of a MAT v4/v5 file fit in memory, from their headers
    (``scipy.io.whosmat``). Sparse variables hold only their nonzeros, which the file holds."""
    import scipy.io

    for name, shape, mclass in scipy.io.whosmat(str(path)):
        if name in variables and mclass in MAT_ITEMSIZE:
            refuse(shape, MAT_ITEMSIZE[mclass], f"{path}: {name}", f"MATLAB {mclass}")


#: the opener of each compressed suffix; any other file is opened as it is
_DECOMPRESSORS = {".gz": gzip.open, ".bz2": bz2.open}


def _open(path: Path, mode: str):
    """Open ``path`` for reading in ``mode`` (``"rb"`` or ``"rt"``), decompressing ``.gz`` /
    ``.bz2``."""
    return _DECOMPRESSORS.get(Path(path).suffix, open)(path, mode)


def open_binary(path: Path):
    """Open a file for reading bytes, decompressing ``.gz`` / ``.bz2``."""
    return _open(path, "rb")


def open_text(path: Path):
    """Open a text file, decompressing ``.gz`` / ``.bz2``."""
    return _open(path, "rt")
