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
checked against the sha256 in its ``.json`` before use; a damaged or stale entry is ignored (with
a warning) and rebuilt, and so is an entry whose arrays do not fit the spec's shape (the loader
checks every parse, stored or not). A cache that cannot be written only costs speed (a warning).
Entries are written atomically (temporary file, then rename), in ZIP_DEFLATED level 1 (MNIST:
~17 MB, written in well under a second; read back in ~0.3 s).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .files import expected_sha256, sha256_file
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
    if not (npz.is_file() and meta.is_file()):
        return None
    try:
        info = json.loads(meta.read_text())
        if info.get("key") != key or info.get("sha256") != sha256_file(npz):
            raise ValueError("checksum mismatch")
        with np.load(npz, allow_pickle=False) as arrays:
            parsed = _unpack(arrays)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        warnings.warn(f"dataset {spec.name!r}: ignoring the damaged binary cache {npz} ({exc}); "
                      "it is rebuilt from the verified files", RuntimeWarning, stacklevel=3)
        return None
    return parsed, npz


def save(spec: DatasetSpec, cache_dir: Path, parsed: Parsed) -> Path | None:
    """Store ``parsed`` (from just-verified files) as the cache entry of ``spec``."""
    key = cache_key(spec, cache_dir)
    if key is None:
        return None
    npz, meta = entry_paths(spec, cache_dir, key)
    npz.parent.mkdir(parents=True, exist_ok=True)
    arrays = _pack(parsed)
    fd, tmp = tempfile.mkstemp(dir=npz.parent, prefix=f".{npz.name}.", suffix=".part")
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
            for name, array in arrays.items():
                with zf.open(f"{name}.npy", "w", force_zip64=True) as out:
                    np.lib.format.write_array(out, np.ascontiguousarray(array), allow_pickle=False)
        info = {"key": key, "sha256": sha256_file(Path(tmp)), "dataset": spec.name, "format": FORMAT,
                "files": [f.relpath for f in spec.files]}
        os.replace(tmp, npz)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    tmp_meta = meta.with_name(f".{meta.name}.part")
    tmp_meta.write_text(json.dumps(info, indent=1))
    os.replace(tmp_meta, meta)  # written last: marks the entry complete
    return npz


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
    for name in arrays.files:
        if name.startswith(_ARRAY_PREFIX):
            extra[name[len(_ARRAY_PREFIX):]] = arrays[name]
    for name in ("image_shape",):
        if name in extra:
            extra[name] = tuple(extra[name])
    return Parsed(X, arrays["labels"], extra)
