"""Binary parse cache: a dataset's parsed arrays stored once as a compressed ``.npz``.

Parsing MNIST's IDX files (decompressing 55 MB and hashing it) takes seconds; loading the parsed
arrays back takes a fraction of that. For specs registered with ``binary_cache=True`` the loader
writes, after the first successful (verified and shape-checked) parse::

    <cache>/<folder>/.parsed/<name>-<key[:16]>.npz    X in the parser's dtype (uint8 pixels stay
                                                       uint8), labels, extra arrays, JSON extras
    <cache>/<folder>/.parsed/<name>-<key[:16]>.json   {"key": ..., "sha256": <npz sha256>, ...}

``key`` is the sha256 of the files' (relpath, content sha256, compression), the parser's
registered shape and ``FORMAT``: files with other content, or a format change, give another key
and a fresh parse. The ``.npz`` is written only from files that were just verified, and is itself
checked against the sha256 in its ``.json`` before use; a damaged, foreign or stale entry is
ignored (with a one-line warning, :func:`dml_bench.errors.warn`) and rebuilt, and so is an entry
whose arrays do not fit the spec's shape (the loader checks every parse, stored or not). A cache
that cannot be written only costs speed (a warning). Entries are written atomically (temporary
file, then rename), in ZIP_DEFLATED level 1 (the fastest level to write).

:func:`write_entry` and :func:`read_entry` store and read such a checksummed entry for any set
of arrays (the constraint cache, :mod:`dml_bench.constraints`, uses them too). An entry holds
``.npy`` arrays only, read without pickle: an object array (a pickle) is refused before anything
in it is read, and so is a member whose header declares more than its bytes hold or more than
the memory (:func:`dml_bench.common.resources.oversize`); nothing in an entry can run code.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import secrets
import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import warn
from ..common.resources import npy_header, oversize
from .files import expected_sha256
from .spec import DatasetSpec, Parsed

FORMAT = 1
_FOLDER = ".parsed"
_ARRAY_PREFIX = "extra__"


def cache_key(spec: DatasetSpec, cache_dir: Path) -> str | None:
    """sha256 identifying the parse of ``spec``'s files; ``None`` if a file's hash is unknown."""
    files = []
    for fspec in spec.files:
        digest = expected_sha256(fspec, cache_dir)
        if digest is None or fspec.members is not None:
            return None
        files.append([fspec.relpath, digest, fspec.compression])
    ident = {
        "format": FORMAT,
        "name": spec.name,
        "files": files,
        "shape": [spec.n_samples, spec.n_features, spec.n_classes],
        "sparse": spec.sparse,
    }
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()


def entry_paths(spec: DatasetSpec, cache_dir: Path, key: str) -> tuple[Path, Path]:
    """``(npz, json)`` paths of the cache entry for ``key``."""
    stem = cache_dir / spec.folder / _FOLDER / f"{spec.name}-{key[:16]}"
    return stem.with_suffix(".npz"), stem.with_suffix(".json")


def load(spec: DatasetSpec, cache_dir: Path) -> tuple[Parsed, Path] | None:
    """The cached parse of ``spec`` and its path, or ``None`` (no entry, or a damaged one)."""
    try:
        key = cache_key(spec, cache_dir)
    except OSError:  # an unreadable .sha256 record: no entry; loading the files reports it
        return None
    if key is None:
        return None
    npz, meta = entry_paths(spec, cache_dir, key)
    try:
        entry = read_entry(npz, meta, key)
        if entry is None:
            return None
        parsed = _unpack(entry[0])
    except (DamagedEntry, ValueError, KeyError, TypeError) as exc:
        warn(f"dataset {spec.name!r}: ignoring the damaged binary cache {npz} ({exc}); it is "
             "rebuilt from the verified files")
        return None
    return parsed, npz


def save(spec: DatasetSpec, cache_dir: Path, parsed: Parsed) -> Path | None:
    """Store ``parsed`` (from just-verified files) as the cache entry of ``spec``."""
    key = cache_key(spec, cache_dir)
    if key is None:
        return None
    npz, meta = entry_paths(spec, cache_dir, key)
    write_entry(npz, meta, _pack(parsed), {"key": key, "dataset": spec.name, "format": FORMAT,
                                           "files": [f.relpath for f in spec.files]},
                compress=True)
    return npz


class DamagedEntry(ValueError):
    """A cache entry that cannot be trusted; ``str()`` says why (one line)."""


#: the largest checksum file read, in bytes (one is about 200)
MAX_META_BYTES = 1 << 16


def write_entry(npz: Path, meta: Path, arrays: dict[str, np.ndarray], info: dict,
                compress: bool = False) -> None:
    """Store ``arrays`` as the ``.npz`` ``npz``, and ``info`` with the ``.npz``'s sha256 as the
    JSON ``meta`` beside it, each atomically (a temporary file in the folder, renamed over the
    entry) and the JSON last, so that an entry is complete once its JSON exists.

    The arrays are written without pickle (an object array is a ``ValueError``) into a zip whose
    members carry a fixed date, so the same arrays always give the same bytes (two processes
    storing the same entry at once leave a consistent one). Files get the mode a new file of
    the folder gets.

    Parameters
    ----------
    npz, meta : Path
        The entry's ``.npz`` and ``.json``; their folder is created if needed.
    arrays : dict of str to ndarray
        The members (``<name>.npy``).
    info : dict
        JSON-serialisable fields of the ``.json`` (its ``key`` is what :func:`read_entry`
        expects); ``sha256`` is added.
    compress : bool
        ZIP_DEFLATED level 1 instead of stored members.

    Raises
    ------
    OSError
        The folder or a file cannot be written (nothing is left behind but the old entry).
    """
    npz.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(buffer, "w", method, compresslevel=1 if compress else None) as zf:
        for name, array in arrays.items():
            member = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            member.compress_type = method
            with zf.open(member, "w", force_zip64=True) as out:
                np.lib.format.write_array(out, np.ascontiguousarray(array), allow_pickle=False)
    data = buffer.getvalue()
    _replace(npz, data)
    body = {**info, "sha256": hashlib.sha256(data).hexdigest()}
    _replace(meta, json.dumps(body, indent=1).encode())  # written last: marks the entry complete


def read_entry(npz: Path, meta: Path, key: str) -> tuple[dict[str, np.ndarray], dict] | None:
    """The arrays and the JSON fields of the entry ``(npz, meta)`` written by
    :func:`write_entry` for ``key``, or ``None`` when there is no entry (no JSON).

    The ``.npz`` is read once into memory and used only if its sha256 is the one in the JSON,
    whose ``key`` must be ``key``; each member must be a ``.npy`` array of a plain dtype (never
    an object array: no pickle is ever loaded) whose header fits its bytes and the memory.

    Raises
    ------
    DamagedEntry
        The entry cannot be trusted: unreadable, truncated, foreign (another key, another
        checksum) or not arrays; the message says which.
    """
    try:
        with open(meta, "rb") as f:
            text = f.read(MAX_META_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise DamagedEntry(f"its checksum file cannot be read: {exc.strerror or exc}") from exc
    try:
        info = json.loads(text) if len(text) <= MAX_META_BYTES else None
    except ValueError:  # not JSON, or not UTF-8
        info = None
    if not isinstance(info, dict) or not isinstance(info.get("sha256"), str):
        raise DamagedEntry(f"its checksum file {meta.name} is not one")
    if info.get("key") != key:
        raise DamagedEntry(f"its checksum file {meta.name} is another entry's")
    try:
        data = npz.read_bytes()
    except FileNotFoundError:
        raise DamagedEntry("its data file is missing") from None
    except OSError as exc:
        raise DamagedEntry(f"its data file cannot be read: {exc.strerror or exc}") from exc
    if hashlib.sha256(data).hexdigest() != info["sha256"]:
        raise DamagedEntry("checksum mismatch")
    return _read_npz(data), info


def _read_npz(data: bytes) -> dict[str, np.ndarray]:
    """The ``.npy`` members of a zip held in ``data``, checked from their headers first."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            members = zf.infolist()
            problem = oversize((sum(m.file_size for m in members),), np.uint8, "members")
            if problem:
                raise DamagedEntry(problem)
            arrays = {}
            for member in members:
                name = member.filename.removesuffix(".npy")
                if name == member.filename or name in arrays:
                    raise DamagedEntry(f"member {member.filename!r} is not a .npy array")
                arrays[name] = _read_npy(zf.read(member), member.filename)
    except (zipfile.BadZipFile, EOFError, OSError) as exc:  # OSError: a bad deflate stream
        raise DamagedEntry(f"not a readable .npz: {exc}") from exc
    return arrays


def _read_npy(raw: bytes, name: str) -> np.ndarray:
    stream = io.BytesIO(raw)
    try:
        shape, dtype = npy_header(stream)
    except ValueError as exc:
        raise DamagedEntry(f"member {name!r} is not a .npy array ({exc})") from exc
    if dtype.hasobject:
        raise DamagedEntry(f"member {name!r} holds Python objects (a pickle), which are never "
                           "loaded")
    if (problem := oversize(shape, dtype)) is not None:
        raise DamagedEntry(f"member {name!r} {problem}")
    if int(np.prod(shape, dtype=object)) * dtype.itemsize != len(raw) - stream.tell():
        raise DamagedEntry(f"member {name!r} does not hold the {shape} {dtype} array its header "
                           "declares")
    stream.seek(0)
    return np.lib.format.read_array(stream, allow_pickle=False)


def _replace(path: Path, data: bytes) -> None:
    """Write ``data`` as ``path`` atomically: a new file in its folder (created with the mode
    new files of the folder get), renamed over it."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.part")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _pack(parsed: Parsed) -> dict[str, np.ndarray]:
    X = parsed.X
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        arrays = {"X_data": X.data, "X_indices": X.indices, "X_indptr": X.indptr,
                  "X_shape": np.array(X.shape, dtype=np.int64)}
    else:
        arrays = {"X": np.asarray(X)}
    labels = np.asarray(parsed.labels)
    if labels.dtype == object:
        labels = labels.astype(str)
    arrays["labels"] = labels
    extras: dict = {}
    for name, value in parsed.extra.items():
        if isinstance(value, np.ndarray):
            arrays[_ARRAY_PREFIX + name] = value
        else:
            extras[name] = value
    arrays["extras_json"] = np.frombuffer(json.dumps(extras).encode(), dtype=np.uint8)
    return arrays


def _unpack(arrays) -> Parsed:
    if "X" in arrays:
        X = arrays["X"]
    else:
        X = sp.csr_matrix((arrays["X_data"], arrays["X_indices"], arrays["X_indptr"]),
                          shape=tuple(arrays["X_shape"]))
    extra = json.loads(arrays["extras_json"].tobytes())
    if not isinstance(extra, dict):
        raise ValueError(f"its extras are a {type(extra).__name__}, not a mapping")
    for name in arrays:
        if name.startswith(_ARRAY_PREFIX):
            extra[name[len(_ARRAY_PREFIX):]] = arrays[name]
    for name in ("image_shape",):
        if name in extra:
            extra[name] = tuple(extra[name])
    return Parsed(X, arrays["labels"], extra)
