"""Public entry points: load a registered dataset, report or ensure the availability of its files."""

from __future__ import annotations

import copy
import functools
import os
from pathlib import Path

import numpy as np

from .catalog import DATASETS
from .errors import DataIntegrityError
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
    the registered shape and number of classes. Results are memoised per process.

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
    X : ndarray of shape (n_samples, n_features), float64, read-only
    y : ndarray of shape (n_samples,), int64, read-only
        Labels 0..C-1 in the sorted order of the original labels.
    meta : dict
        ``name``, ``description``, ``n_samples``, ``n_features``, ``n_classes``, ``class_names``,
        ``source`` ('bundled', 'cache', 'mirror' or 'network': the farthest place a file was read
        from), ``papers``; ``image_shape`` (height, width) for images (rows are row-major images)
        and ``parts`` (rows per original split, in row order) where the files define splits.

    Raises
    ------
    UnknownNameError
        ``name`` is not registered.
    DataNotAvailable
        A file is in neither cache nor mirror and cannot be downloaded.
    DataIntegrityError
        A file fails its checksum, or the parsed data has the wrong shape or class count.
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
    status : {'bundled', 'cached', 'mirror', 'network needed'}
    """
    spec = DATASETS[name]
    if spec.bundled:
        return "bundled"
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
        The dataset's folder in the cache; ``None`` for data bundled with a package.
    """
    spec = DATASETS[name]
    mirror_root, cache_root = _roots(mirror, cache_dir)
    _load(spec, mirror_root, cache_root, allow_network)
    return None if spec.bundled else cache_root / spec.folder


def _roots(mirror: PathLike | None, cache_dir: PathLike | None) -> tuple[Path | None, Path]:
    return resolve_mirror(mirror), resolve_cache_dir(cache_dir)


@functools.lru_cache(maxsize=32)
def _load(spec: DatasetSpec, mirror: Path | None, cache_dir: Path, allow_network: bool):
    if spec.bundled:
        paths, source = [], "bundled"
    else:
        paths, source = ensure_files(spec, cache_dir, mirror, allow_network)
    parsed = spec.parser(paths)
    X = np.asarray(parsed.X, dtype=np.float64)
    classes, y = np.unique(parsed.labels, return_inverse=True)
    _check_parsed(spec, X, len(classes), parsed.extra.get("image_shape"), paths)
    meta = {
        "name": spec.name,
        "description": spec.description,
        "n_samples": spec.n_samples,
        "n_features": spec.n_features,
        "n_classes": spec.n_classes,
        "class_names": parsed.extra.get("class_names") or [str(c) for c in classes],
        "source": source,
        "papers": list(spec.papers),
    }
    if spec.image_shape is not None:
        meta["image_shape"] = spec.image_shape
    if "parts" in parsed.extra:
        meta["parts"] = dict(parsed.extra["parts"])
    y = y.astype(np.int64).reshape(-1)
    for array in (X, y):
        array.setflags(write=False)
    return X, y, meta


def _check_parsed(spec: DatasetSpec, X: np.ndarray, n_classes: int, image_shape, paths: list[Path]) -> None:
    problems = []
    if X.shape != (spec.n_samples, spec.n_features):
        problems.append(f"shape {X.shape}, expected {(spec.n_samples, spec.n_features)}")
    if n_classes != spec.n_classes:
        problems.append(f"{n_classes} classes, expected {spec.n_classes}")
    if image_shape is not None and tuple(image_shape) != spec.image_shape:
        problems.append(f"images of shape {tuple(image_shape)}, expected {spec.image_shape}")
    if not np.isfinite(X).all():
        problems.append("non-finite feature values")
    if problems:
        if not paths:
            origin = "the bundled copy"
        elif len(paths) > 3:
            origin = f"{len(paths)} files under {os.path.commonpath(paths)}"
        else:
            origin = ", ".join(map(str, paths))
        raise DataIntegrityError(
            f"dataset {spec.name!r}: data parsed from {origin} has {'; '.join(problems)}. To "
            f"re-fetch, delete the dataset's cached files and run `dmlbench fetch {spec.name}`; "
            f"if that fails again, the registry entry does not match the data."
        )
