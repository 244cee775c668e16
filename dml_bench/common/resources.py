"""What the machine can hold, and how large the arrays a file declares are, before they are read.

A few bytes of a file can declare an array of terabytes: the header of a ``.npy`` array (also
each member of a ``.npz``), an HDF5 dataset's shape, a MAT variable's dimensions, a LIBSVM
file's largest feature index. Readers ask :func:`oversize` about the declared shape and dtype
first, and refuse the file with its one-line answer instead of running out of memory.

The budget of one array is the smaller of the memory available now
(:func:`available_memory_bytes`) and a declared maximum, :data:`MAX_ARRAY_BYTES` (64 GiB),
which the environment variable ``DMLBENCH_MAX_ARRAY_BYTES`` (a number of bytes) replaces.

:func:`npy_header` and :func:`npz_headers` read the shape and dtype of ``.npy`` arrays and of
the members of a ``.npz`` from their headers alone (``numpy.lib.format``), never unpickling an
object array.
"""

from __future__ import annotations

import math
import os
import zipfile
from collections.abc import Sequence
from typing import BinaryIO

import numpy as np
from numpy.lib import format as npy_format

from ..errors import DMLBenchError

#: the declared maximum size of one array read from a file, in bytes
MAX_ARRAY_BYTES = 64 * 2**30
#: environment variable replacing :data:`MAX_ARRAY_BYTES` (a number of bytes)
MAX_ARRAY_BYTES_ENV = "DMLBENCH_MAX_ARRAY_BYTES"


class LimitSettingError(DMLBenchError):
    """``DMLBENCH_MAX_ARRAY_BYTES`` holds something other than a positive number of bytes."""


def available_memory_bytes() -> int:
    """Memory available to this process now (psutil when installed, else sysconf)."""
    try:
        import psutil
        return int(psutil.virtual_memory().available)
    except ImportError:  # pragma: no cover - psutil is installed here
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def max_array_bytes() -> int:
    """The declared maximum of one array: ``$DMLBENCH_MAX_ARRAY_BYTES`` if set, else
    :data:`MAX_ARRAY_BYTES`.

    Raises
    ------
    LimitSettingError
        The variable is set to something other than a positive integer.
    """
    text = os.environ.get(MAX_ARRAY_BYTES_ENV, "").strip()
    if not text:
        return MAX_ARRAY_BYTES
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise LimitSettingError(f"{MAX_ARRAY_BYTES_ENV}={text!r} is not a positive number of "
                                "bytes")
    return value


def array_budget() -> tuple[int, str]:
    """``(bytes, description)`` of the largest array that may be read now: the smaller of the
    declared maximum and the memory available, described as ``"the 20.1 GiB of memory
    available"`` or ``"the declared maximum of 64.0 GiB (DMLBENCH_MAX_ARRAY_BYTES)"``."""
    declared, available = max_array_bytes(), available_memory_bytes()
    if available < declared:
        return available, f"the {format_bytes(available)} of memory available"
    return declared, f"the declared maximum of {format_bytes(declared)} ({MAX_ARRAY_BYTES_ENV})"


def oversize(shape: Sequence[int], dtype, what: str = "an array",
             type_name: str | None = None) -> str | None:
    """Why an array of ``shape`` and ``dtype`` cannot be allocated, or ``None`` if it fits the
    budget (:func:`array_budget`).

    Parameters
    ----------
    shape : sequence of int
    dtype : dtype-like or int
        The element type, or its size in bytes.
    what : str
        What is declared, e.g. ``"an array"`` or ``"a dense array"``.
    type_name : str, optional
        The element type's name in the message (default: the dtype's name).

    Returns
    -------
    problem : str or None
        e.g. ``"declares an array of 25.0 TiB (3000000 × 1200000 float64), more than the 20.1 GiB
        of memory available"``.
    """
    if isinstance(dtype, (int, np.integer)):
        itemsize, name = int(dtype), f"{int(dtype)}-byte"
    else:
        dtype = np.dtype(dtype)
        itemsize, name = dtype.itemsize, dtype.name if dtype.kind in "biufc" else dtype.str
    name = type_name or name
    need = math.prod(int(n) for n in shape) * itemsize
    budget, description = array_budget()
    if need <= budget:
        return None
    dims = " × ".join(str(int(n)) for n in shape) or "scalar"
    return (f"declares {what} of {format_bytes(need)} ({dims} {name}), more than "
            f"{description}")


def format_bytes(n: float) -> str:
    """``n`` bytes in binary units with one decimal: ``"20.1 GiB"``, ``"25.0 TiB"``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError  # pragma: no cover


def npy_header(fh: BinaryIO) -> tuple[tuple[int, ...], np.dtype]:
    """``(shape, dtype)`` from a ``.npy`` header at the position of ``fh`` (format versions 1, 2
    and 3), without reading the data.

    Raises
    ------
    ValueError
        Not a ``.npy`` header.
    """
    version = npy_format.read_magic(fh)
    if version == (1, 0):
        shape, _, dtype = npy_format.read_array_header_1_0(fh)
    else:  # 2.0, and 3.0 (a 2.0 header in UTF-8: read as Latin-1 only field names differ)
        shape, _, dtype = npy_format.read_array_header_2_0(fh)
    return tuple(int(n) for n in shape), np.dtype(dtype)


def npz_headers(path: str | os.PathLike, members: Sequence[str] | None = None
                ) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """``{name: (shape, dtype)}`` of the arrays of a ``.npz`` (all, or ``members``: names without
    ``.npy``), from each member's header alone.

    Raises
    ------
    ValueError
        A member is not a ``.npy`` array.
    zipfile.BadZipFile, OSError
        The file is not a readable zip archive.
    """
    out = {}
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            if members is not None and name not in members:
                continue
            with archive.open(info) as fh:
                out[name] = npy_header(fh)
    return out
