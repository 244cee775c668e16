"""LFW formats: the restricted protocol's pair lists and per-image descriptor tables.

A descriptor table is one row per LFW image (the SIFT descriptors of Guillaumin et al. 2009 in
the format of :func:`read_descriptor_table`: ``.npz``, MAT v5 or v7.3, or HDF5); every array's
declared size is checked against the memory before it is read.

References
----------
G. B. Huang, M. Ramesh, T. Berg and E. Learned-Miller. Labeled Faces in the Wild: a database for
studying face recognition in unconstrained environments. UMass Amherst TR 07-49, 2007.
M. Guillaumin, J. Verbeek and C. Schmid. Is that you? Metric learning approaches for face
identification. ICCV 2009.
"""

from __future__ import annotations

import re
import zipfile
import zlib
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..spec import Parsed, Parser
from .common import check_mat, check_npz, h5_read

LFW_IMAGE_NAME = re.compile(r"(.+)_(\d{4})")  # "Aaron_Eckhart_0001": person, image number


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
        ``X`` or ``names`` declares more bytes than may be read (see :mod:`dml_bench.datasets.parsers`).
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
        check_npz(path, ("X", "names"))
        with np.load(path, allow_pickle=False) as arrays:
            missing = {"X", "names"} - set(arrays.files)
            if missing:
                raise ValueError(f"{path}: no {sorted(missing)} in the .npz (has {arrays.files})")
            return arrays["X"], [str(n) for n in arrays["names"].ravel()]
    if head.startswith(b"\x89HDF\r\n\x1a\n") or head.startswith(b"MATLAB 7.3"):
        return _hdf5_table(path, matlab=head.startswith(b"MATLAB"))
    if head.startswith(b"MATLAB"):
        import scipy.io

        check_mat(path, ("X", "names"))
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
            h5_read(dataset, path, check_only=True)
        X = fh["X"][()]
        if not matlab:
            return X, [n.decode() if isinstance(n, bytes) else str(n) for n in names[()].ravel()]
        X = np.asarray(X).T
        if names.dtype == h5py.ref_dtype:  # cell array: one char (uint16) array per cell
            chars = [np.asarray(h5_read(fh[ref], path)).ravel() for ref in names[()].T.ravel()]
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
