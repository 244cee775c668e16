"""Public entry points: load a registered dataset, report or ensure the availability of its files."""

from __future__ import annotations

import copy
import functools
import os
import struct
import warnings
import zipfile
import zlib
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from . import bincache
from .catalog import DATASETS
from .errors import DataIntegrityError, DataParseError
from .files import ensure_files, files_status, resolve_cache_dir, resolve_mirror
from .spec import DatasetSpec

PathLike = str | os.PathLike


def load_dataset(
    name: str,
    *,
    mirror: PathLike | None = None,
    cache_dir: PathLike | None = None,
    allow_network: bool = True,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Load a registered dataset, fetching and verifying its files if needed.

    Files are looked for in the cache, then the mirror (copied into the cache), then downloaded
    (unless ``allow_network`` is false); each is checked by sha256 and the parsed data against
    the registered shape and number of classes. Results are memoised per process. Datasets
    registered with ``binary_cache`` (MNIST) are read from their verified parse in the cache
    once it exists (see ``bincache``); generated datasets are computed from their fixed seed.

    Parameters
    ----------
    name : str
        Registered name (see ``DATASETS``).
    mirror : path-like or None
        Read-only folder with the cache layout; default ``$DMLBENCH_DATA_MIRROR`` if set.
    cache_dir : path-like or None
        Cache folder; default ``$DMLBENCH_CACHE``, else ``./datasets``.
    allow_network : bool
        Whether missing files may be downloaded.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64, read-only; or scipy.sparse.csr_matrix
        A float64 CSR matrix (read-only buffers) for the high-dimensional sparse sets
        (``dexter``, ``dexter_train_valid``, ``gisette``, ``news20``: ``meta['sparse']`` is
        True); callers that need a dense array must densify (``X.toarray()``) or reduce it first.
    y : ndarray of shape (n_samples,), int64, read-only
        Labels 0..C-1 in the sorted order of the original labels.
    meta : dict
        ``name``, ``description``, ``n_samples``, ``n_features``, ``n_classes``, ``class_names``,
        ``source`` ('bundled', 'generated', 'cache', 'mirror' or 'network': the farthest place a
        file was read from), ``papers``, ``sparse``; ``image_shape`` (height, width) for images
        (rows are row-major images) and ``parts`` (rows per original split, in row order) where
        the files define splits; plus what the parser adds (``n_dropped`` rows with missing
        values, ``manifold`` coordinates of generated data, LFW ``image_names``).

    Raises
    ------
    UnknownNameError
        ``name`` is not registered.
    DataNotAvailable
        Every data fault, with a one-line message naming the dataset, the file and the problem
        (see :mod:`~dml_bench.datasets.errors`): a file in neither cache nor mirror that cannot be
        downloaded (missing mirror folder, no network, failed download), or a cache / mirror
        file that cannot be read or written.
    DataIntegrityError
        (A ``DataNotAvailable``.) A file fails its checksum or is a corrupt stream, does not
        parse (``DataParseError``, also a ``ValueError``), or the parsed data has the wrong shape
        or class count.
    """
    X, y, meta = _load(DATASETS[name], *_roots(mirror, cache_dir), allow_network)
    return X, y, copy.deepcopy(meta)


def dataset_status(name: str, *, mirror: PathLike | None = None, cache_dir: PathLike | None = None) -> str:
    """Where :func:`load_dataset` would get a dataset from (files are not hashed here).

    Parameters
    ----------
    name : str
        Registered name.
    mirror, cache_dir : path-like or None
        As for :func:`load_dataset`.

    Returns
    -------
    status : {'bundled', 'generated', 'cached', 'mirror', 'network needed'}
        'generated': computed from a seed, no files; 'network needed': some file is in neither
        cache nor mirror (whether or not it can actually be downloaded: see ``DATASETS[name]``'s
        files and notes; ``usps_roweis``, ``gisette``, ``news20``, ``lfw_sift``,
        ``face_background`` here).
    """
    spec = DATASETS[name]
    if spec.kind != "files":
        return spec.kind
    mirror_root, cache_root = _roots(mirror, cache_dir)
    return files_status(spec, cache_root, mirror_root)


def fetch_dataset(
    name: str,
    *,
    mirror: PathLike | None = None,
    cache_dir: PathLike | None = None,
    allow_network: bool = True,
) -> Path | None:
    """Make a dataset's files present and verified in the cache and check that they parse.

    Parameters
    ----------
    name : str
        Registered name.
    mirror, cache_dir, allow_network
        As for :func:`load_dataset`.

    Returns
    -------
    folder : Path or None
        The dataset's folder in the cache; ``None`` for data bundled with a package or generated.
    """
    spec = DATASETS[name]
    mirror_root, cache_root = _roots(mirror, cache_dir)
    _load(spec, mirror_root, cache_root, allow_network)
    return None if spec.kind != "files" else cache_root / spec.folder


def _roots(mirror: PathLike | None, cache_dir: PathLike | None) -> tuple[Path | None, Path]:
    return resolve_mirror(mirror), resolve_cache_dir(cache_dir)


_KNOWN_EXTRA = ("class_names", "image_shape", "parts")


@functools.lru_cache(maxsize=32)
def _load(spec: DatasetSpec, mirror: Path | None, cache_dir: Path, allow_network: bool):
    parsed, paths, source, from_binary_cache = _parse(spec, mirror, cache_dir, allow_network)
    try:
        X, classes, y = _checked_arrays(spec, parsed, paths)
    except DataIntegrityError as exc:
        if not from_binary_cache:
            raise
        # a stored parse that does not fit the spec: ignore it, parse the verified files again
        warnings.warn(f"dataset {spec.name!r}: ignoring the binary cache {paths[0]} ({exc}); it is "
                      "rebuilt from the verified files", RuntimeWarning, stacklevel=3)
        parsed, paths, source, from_binary_cache = _parse(
            spec, mirror, cache_dir, allow_network, use_binary_cache=False
        )
        X, classes, y = _checked_arrays(spec, parsed, paths)
    if spec.binary_cache and not from_binary_cache:
        try:
            bincache.save(spec, cache_dir, parsed)
        except OSError as exc:  # a read-only or full cache only costs speed
            warnings.warn(f"dataset {spec.name!r}: could not write the binary cache ({exc})",
                          RuntimeWarning, stacklevel=3)
    class_names = parsed.extra.get("class_names") or spec.class_names or [str(c) for c in classes]
    meta = {
        "name": spec.name,
        "description": spec.description,
        "n_samples": spec.n_samples,
        "n_features": spec.n_features,
        "n_classes": spec.n_classes,
        "class_names": list(class_names),
        "source": source,
        "papers": list(spec.papers),
        "sparse": spec.sparse,
    }
    if spec.image_shape is not None:
        meta["image_shape"] = spec.image_shape
    if "parts" in parsed.extra:
        meta["parts"] = dict(parsed.extra["parts"])
    meta.update({key: value for key, value in parsed.extra.items() if key not in _KNOWN_EXTRA})
    y = y.astype(np.int64).reshape(-1)
    for array in (X.data, X.indices, X.indptr) if spec.sparse else (X,):
        array.setflags(write=False)
    y.setflags(write=False)
    return X, y, meta


def _parse(
    spec: DatasetSpec,
    mirror: Path | None,
    cache_dir: Path,
    allow_network: bool,
    use_binary_cache: bool = True,
):
    """``(parsed, paths, source, from_binary_cache)`` for a spec."""
    if spec.generated:
        return spec.parser([]), [], spec.kind, False  # computed: its errors are bugs, not data faults
    if spec.bundled:
        return _run_parser(spec, []), [], spec.kind, False
    if use_binary_cache and spec.binary_cache and files_status(spec, cache_dir, None) == "cached":
        # files verified into the cache earlier: their verified parse may be stored already
        hit = bincache.load(spec, cache_dir)
        if hit is not None:
            return hit[0], [hit[1]], "cache", True
    paths, source = ensure_files(spec, cache_dir, mirror, allow_network)
    return _run_parser(spec, paths), paths, source, False


def _parse_errors() -> tuple[type[BaseException], ...]:
    """What parsers raise on a file that is not in their format (a data fault): malformed text
    (``ValueError``, ``UnicodeDecodeError``, pandas' ``ParserError``), unreadable or truncated
    files (``OSError``, ``EOFError``, ``zlib.error``, ``struct.error``, ``BadZipFile``, scipy's
    ``MatReadError``), a missing variable / group / column (``KeyError``, ``IndexError``).
    Anything else (``TypeError``, ``AttributeError``, ...) is a bug and propagates."""
    from scipy.io.matlab import MatReadError

    return (ValueError, OSError, EOFError, KeyError, IndexError, zlib.error, struct.error,
            zipfile.BadZipFile, MatReadError)


def _run_parser(spec: DatasetSpec, paths: list[Path]):
    try:
        return spec.parser(paths)
    except _parse_errors() as exc:
        raise DataParseError(
            f"dataset {spec.name!r}: cannot parse {_origin(spec, paths)}: {_describe(exc)}. "
            + _refetch_hint(spec)
        ) from exc


def _describe(exc: BaseException, limit: int = 300) -> str:
    """``Type: message`` of an exception, on one line, at most ``limit`` characters."""
    text = " ".join(str(exc).split()).rstrip(".") or "(no message)"
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{type(exc).__name__}: {text}"


def _refetch_hint(spec: DatasetSpec) -> str:
    if spec.bundled:
        return "The copy bundled with the package is damaged: reinstall the package that ships it."
    records = " (and their .sha256 records)" if any(not f.pinned for f in spec.files) else ""
    by_hand = [f for f in spec.files if f.url is None and not f.pinned and f.obtain]
    if by_hand and len(by_hand) == len(spec.files):  # no source, no checksum: the user's own file
        return (f"Supply a corrected file ({'; '.join(f.obtain.rstrip('.') for f in by_hand)}); "
                "delete the cached copy and its .sha256 record first, or the cache keeps the "
                "old one.")
    return (
        f"To re-fetch, delete the dataset's cached files{records} and run `dmlbench fetch "
        f"{spec.name}`; if that fails again, the registry entry does not match the data."
    )


def _checked_arrays(spec: DatasetSpec, parsed, paths: list[Path]):
    """``(X, classes, y)`` from a parse, checked against the spec (:class:`DataIntegrityError`
    if the data cannot be converted or has the wrong shape, class count or values)."""
    try:
        X = _as_float64(spec, parsed.X, paths)
    except (ValueError, TypeError) as exc:  # e.g. text in a feature column
        raise DataIntegrityError(
            f"dataset {spec.name!r}: the features parsed from {_origin(spec, paths)} are not "
            f"numeric ({_describe(exc)}). {_refetch_hint(spec)}"
        ) from exc
    try:
        classes, y = np.unique(np.asarray(parsed.labels), return_inverse=True)
    except TypeError as exc:  # labels of mixed types (ints and strings) do not sort
        raise DataIntegrityError(
            f"dataset {spec.name!r}: the labels parsed from {_origin(spec, paths)} cannot be "
            f"sorted ({_describe(exc)}). {_refetch_hint(spec)}"
        ) from exc
    finite = np.issubdtype(parsed.X.dtype, np.integer) or _all_finite(X)
    _check_parsed(spec, X, len(classes), parsed.extra.get("image_shape"), finite, paths)
    return X, classes, y


def _as_float64(spec: DatasetSpec, X, paths: list[Path]):
    if sp.issparse(X) != spec.sparse:
        kind = "sparse" if sp.issparse(X) else "dense"
        raise DataIntegrityError(f"dataset {spec.name!r}: the parser returned a {kind} matrix but "
                                 f"the spec says sparse={spec.sparse} ({_origin(spec, paths)})")
    if spec.sparse:
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        X.sum_duplicates()
        return X
    return np.asarray(X, dtype=np.float64)


def _all_finite(X) -> bool:
    return bool(np.isfinite(X.data if sp.issparse(X) else X).all())


def _check_parsed(
    spec: DatasetSpec, X, n_classes: int, image_shape, finite: bool, paths: list[Path]
) -> None:
    problems = []
    if X.shape != (spec.n_samples, spec.n_features):
        problems.append(f"shape {X.shape}, expected {(spec.n_samples, spec.n_features)}")
    if n_classes != spec.n_classes:
        problems.append(f"{n_classes} classes, expected {spec.n_classes}")
    if image_shape is not None and tuple(image_shape) != spec.image_shape:
        problems.append(f"images of shape {tuple(image_shape)}, expected {spec.image_shape}")
    if not finite:
        problems.append("non-finite feature values")
    if problems:
        raise DataIntegrityError(
            f"dataset {spec.name!r}: data parsed from {_origin(spec, paths)} has {'; '.join(problems)}. "
            + _refetch_hint(spec)
        )


def _origin(spec: DatasetSpec, paths: list[Path]) -> str:
    if spec.generated:
        return "the generator"
    if not paths:
        return "the bundled copy"
    if len(paths) > 3:
        return f"{len(paths)} files under {os.path.commonpath(paths)}"
    return ", ".join(map(str, paths))
