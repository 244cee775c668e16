"""Content digests of data that can change under the same name, for the ids of tasks.

The catalogue's datasets are fixed by their names: their files are pinned by sha256, bundled
with a package, or generated from a fixed seed. Any other dataset can change while its name
stays the same: a user's file edited in place (``file:<path>``), an OpenML dataset, a plug-in's
arrays. The id of a task on such data carries its digest
(:func:`~dml_bench.datasets.loader.dataset_digest`), so that a changed file makes new tasks (the
finished rows of the old ones are then superseded as for any changed setting) and no finished
row is reused for other data:

- ``file:<path>[?label_column=<column>]``: the sha256 of the file's bytes (:func:`file_digest`);
- any other name outside the catalogue: the sha256 of the loaded arrays (:func:`array_digest`).

A file is hashed once per process and version, its version being the ``os.stat`` fields
``(st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns)`` and its absolute path (the ctime changes
on every write and cannot be set back, unlike the mtime that ``touch``, ``tar`` or ``rsync -t``
restore). Digests are also recorded in ``<cache>/digests.json`` (plain JSON, replaced whole), so
that a later run does not read a large file twice, and so that a task whose data cannot be had
now (a file removed, OpenML not reachable) keeps the id of its finished rows. A file's digest is
recorded on disk only when its ctime is at least :data:`RACY_NS` older than the reading: every
change of a file sets its ctime to the time of the change, rounded down to the file system's
timestamp resolution (a second or two on some), so a file changed again within the same tick
as its last change could keep its version, and a recorded digest of its former content. A file
read that soon is read once more when its digest is next asked for after that delay, and then
recorded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import time
import weakref
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..common.safe_write import write_text
from .checksums import sha256_file
from .files import resolve_cache_dir

#: file name of the digest record in the dataset cache
RECORD = "digests.json"
#: a file modified less than this long (ns) before it was hashed is not recorded on disk
RACY_NS = 2_000_000_000
#: the digest of data that cannot be had and has none recorded
UNAVAILABLE = "unavailable"

_files: dict[tuple, tuple[str, bool]] = {}  # file version -> (sha256, recorded on disk)
_arrays: dict[str, tuple[weakref.ref, str]] = {}  # dataset name -> (its X, sha256)
_fallback: dict[tuple, str] = {}  # (cache, key) -> recorded sha256 of data not available now


def file_version(path) -> tuple:
    """``(absolute path, st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns)`` of a regular file.

    Raises
    ------
    OSError
        The file cannot be stat'ed, or is not a regular file (``IsADirectoryError``).
    """
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise IsADirectoryError(f"{path} is not a regular file")
    return (os.path.abspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
            st.st_ctime_ns)


def file_digest(path, *, cache_dir=None) -> str:
    """sha256 (hex) of the bytes of the file at ``path``, read once per process and version.

    A version seen before in this process, or recorded in ``<cache>/digests.json``, is not read
    again, except once to record it when it was read too soon after its last change (see the
    module docstring).

    Raises
    ------
    OSError
        The file cannot be read.
    """
    version = file_version(path)
    digest, recorded = _files.get(version, (None, False))
    if digest is not None and (recorded or time.time_ns() - version[5] < RACY_NS):
        return digest
    record = _read_record(cache_dir)
    entry = record["files"].get(version[0])
    if entry is not None and entry.get("version") == list(version[1:]):
        digest = entry.get("sha256")
        if isinstance(digest, str):
            _files[version] = (digest, True)
            return digest
    started = time.time_ns()
    digest = sha256_file(Path(path))
    if file_version(path) != version:  # written while read: hash it again next time
        return digest
    recorded = started - version[5] >= RACY_NS
    if recorded:
        record["files"][version[0]] = {"version": list(version[1:]), "sha256": digest}
        _write_record(cache_dir, record)
    _files[version] = (digest, recorded)
    return digest


def recorded_file_digest(path, *, cache_dir=None) -> str:
    """The digest last recorded in ``<cache>/digests.json`` for the file at ``path`` (which
    cannot be read now), else :data:`UNAVAILABLE`; looked up once per process."""
    return _recorded(cache_dir, "files", os.path.abspath(path))


def array_digest(X, y) -> str:
    """sha256 (hex) of a dataset's arrays: their kinds, dtypes and shapes, then their bytes.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix
        Features (a sparse matrix enters by its CSR arrays).
    y : ndarray
        Labels.
    """
    digest = hashlib.sha256()
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        parts = [("shape", np.asarray(X.shape)), ("data", X.data), ("indices", X.indices),
                 ("indptr", X.indptr)]
    else:
        parts = [("X", np.asarray(X))]
    parts.append(("y", np.asarray(y)))
    for label, array in parts:
        array = np.ascontiguousarray(array)
        digest.update(f"{label} {array.dtype.str} {array.shape}\n".encode())
        digest.update(memoryview(array).cast("B"))
    return digest.hexdigest()


def loaded_digest(name: str, X, y, *, cache_dir=None) -> str:
    """The digest of dataset ``name``'s loaded arrays (:func:`array_digest`), computed once per
    loaded ``X`` and recorded in the cache, so that :func:`recorded_dataset_digest` finds it when
    the data cannot be read later."""
    known = _arrays.get(name)
    if known is not None and known[0]() is X:
        return known[1]
    digest = array_digest(X, y)
    _arrays[name] = (weakref.ref(X), digest)
    record = _read_record(cache_dir)
    if record["datasets"].get(name) != digest:
        record["datasets"][name] = digest
        _write_record(cache_dir, record)
    return digest


def recorded_dataset_digest(name: str, *, cache_dir=None) -> str:
    """The digest :func:`loaded_digest` last recorded for dataset ``name``, else
    :data:`UNAVAILABLE`."""
    return _recorded(cache_dir, "datasets", name)


def _record_path(cache_dir) -> Path:
    return resolve_cache_dir(cache_dir) / RECORD


def _read_record(cache_dir) -> dict:
    """The digest record of the cache: ``{"files": {path: {"version": [...], "sha256": ...}},
    "datasets": {name: sha256}}``; entries of another shape are left out, and a record that is
    missing, unreadable or not JSON is empty (it only saves reading files again)."""
    try:
        data = json.loads(_record_path(cache_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    files, datasets = (data.get(part) if isinstance(data, dict) else None
                       for part in ("files", "datasets"))
    return {"files": {k: v for k, v in (files if isinstance(files, dict) else {}).items()
                      if isinstance(v, dict)},
            "datasets": {k: v for k, v in (datasets if isinstance(datasets, dict) else {}).items()
                         if isinstance(v, str)}}


def _write_record(cache_dir, record: dict) -> None:
    """Replace the record by a temporary file renamed over it (:func:`~dml_bench.common.safe_write.
    write_text`: a reader never sees a partial one); a cache that cannot be written only costs
    reading the files again."""
    path = _record_path(cache_dir)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, json.dumps(record, sort_keys=True), durable=False)


def _recorded(cache_dir, part: str, key: str) -> str:
    """The digest last recorded for ``key`` (a file's absolute path, a dataset name), else
    :data:`UNAVAILABLE`; looked up once per process."""
    memo = (str(resolve_cache_dir(cache_dir)), part, key)
    if memo not in _fallback:
        entry = _read_record(cache_dir)[part].get(key)
        digest = entry.get("sha256") if isinstance(entry, dict) else entry
        _fallback[memo] = digest if isinstance(digest, str) else UNAVAILABLE
    return _fallback[memo]
