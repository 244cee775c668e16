"""Public entry points: load a registered dataset, report or ensure the availability of its files."""

from __future__ import annotations

import copy
import functools
import os
import struct
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..errors import DMLBenchError, warn
from ..registry import describe as _describe
from ..common.resources import oversize
from . import bincache
from .catalog import DATASETS
from . import content
from .content import file_version
from .errors import DataIntegrityError, DataNotAvailable, DataParseError, DataTooLarge
from .files import ensure_files, files_status, resolve_cache_dir, resolve_mirror
from .spec import DatasetSpec, Parsed, PluginParser, spec_from_arrays

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
        Registered name (see ``DATASETS``), or a plug-in's or a source reference
        (``file:<path>?label_column=<column>``, ``openml:<id>``; see :mod:`dml_bench.registry`).
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
        file was read from; 'file' or 'openml' for a user's file or an OpenML dataset, see
        :func:`file_spec` and :mod:`~dml_bench.datasets.openml_source`), ``papers``, ``sparse``; ``image_shape`` (height, width) for images
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
    # a user's file: the spec of its content now, not the one the registry read first
    spec = _file_source(name.removeprefix("file:")) if name.startswith("file:") else DATASETS[name]
    X, y, meta = _load(spec, *_roots(mirror, cache_dir), allow_network)
    return X, y, copy.deepcopy(meta)


#: ``scheme → status(reference)`` of the dataset sources whose data live outside the cache and
#: mirror (set by the source's module: ``openml_source``)
SOURCE_STATUS: dict[str, Callable[[str], str]] = {}


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
    status : {'bundled', 'generated', 'plug-in', 'cached', 'mirror', 'network needed'}
        'generated': computed from a seed, no files; 'plug-in': loaded by a plug-in class
        without files (its code, run only when a run loads it); 'network needed': some file is in neither
        cache nor mirror (whether or not it can actually be downloaded: see ``DATASETS[name]``'s
        files and notes; ``usps_roweis``, ``gisette``, ``news20``, ``lfw_sift``,
        ``face_background`` here). An OpenML dataset (``openml:<id>``) is 'cached' when openml's
        cache holds its description and data file, else 'network needed', without loading it.
    """
    scheme, _, reference = name.partition(":")
    if reference and scheme in SOURCE_STATUS:
        return SOURCE_STATUS[scheme](reference)
    spec = DATASETS[name]
    if spec.kind != "files":
        return "plug-in" if isinstance(spec.parser, PluginParser) else spec.kind
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
        warn(f"dataset {spec.name!r}: ignoring the binary cache {paths[0]} ({exc}); it is "
             "rebuilt from the verified files")
        parsed, paths, source, from_binary_cache = _parse(
            spec, mirror, cache_dir, allow_network, use_binary_cache=False
        )
        X, classes, y = _checked_arrays(spec, parsed, paths)
    if spec.binary_cache and not from_binary_cache:
        try:
            bincache.save(spec, cache_dir, parsed)
        except OSError as exc:  # a read-only or full cache only costs speed
            warn(f"dataset {spec.name!r}: could not write the binary cache ({exc})")
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
    """``(parsed, paths, source, from_binary_cache)`` for a spec.

    A plug-in's data (a :class:`~dml_bench.datasets.spec.PluginParser`) is loaded only with
    ``allow_network``: its code may use the network, and a load without network access (the
    config's checks, ``dmlbench validate``) must not run it."""
    if isinstance(spec.parser, PluginParser) and not allow_network:
        raise DataNotAvailable(f"dataset {spec.name!r}: a plug-in's data is loaded only for a run "
                               "(its code may use the network, which is not allowed here)")
    if spec.generated:
        return spec.parser([]), [], spec.kind, False  # computed: its errors are bugs, not data faults
    if spec.bundled:
        source = "plug-in" if isinstance(spec.parser, PluginParser) else spec.kind
        return _run_parser(spec, []), [], source, False
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
    except DataTooLarge as exc:  # refused from its header: name the dataset, no re-fetch hint
        raise DataTooLarge(f"dataset {spec.name!r}: {exc}") from exc
    except _parse_errors() as exc:
        raise DataParseError(
            f"dataset {spec.name!r}: cannot parse {_origin(spec, paths)}: {_describe(exc)}. "
            + _refetch_hint(spec)
        ) from exc


def _refetch_hint(spec: DatasetSpec) -> str:
    if isinstance(spec.parser, PluginParser):
        return "The plug-in's data does not fit what its class declares: fix the plug-in."
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
    if isinstance(spec.parser, PluginParser):
        return f"the plug-in's load() ({', '.join(map(str, paths)) or 'no files'})"
    if not paths:
        return "the bundled copy"
    if len(paths) > 3:
        return f"{len(paths)} files under {os.path.commonpath(paths)}"
    return ", ".join(map(str, paths))


# --------------------------------------------------------------------------- user-supplied data

#: file suffixes read by :func:`file_spec`, and the format each means
FILE_FORMATS = {".csv": "csv", ".arff": "arff", ".libsvm": "libsvm", ".svm": "libsvm",
                ".svmlight": "libsvm"}


def file_reference(path: PathLike, label_column: str | None = None) -> str:
    """The registry name of a user's data file: ``file:<path>[?label_column=<column>]``."""
    return f"file:{path}" + (f"?label_column={label_column}" if label_column else "")


def file_spec(path: PathLike, label_column: str | None = None) -> DatasetSpec:
    """The spec of a user's own dataset file, read by its suffix (:data:`FILE_FORMATS`).

    - ``.csv``: a header row naming the columns (pandas ``read_csv``);
    - ``.arff``: Weka's attribute-relation format (``scipy.io.arff``; nominal attributes);
    - ``.libsvm`` / ``.svm`` / ``.svmlight``: ``label index:value ...`` lines
      (``sklearn.datasets.load_svmlight_file``), densified; the label is each line's first field.

    For CSV and ARFF, ``label_column`` names the class column and every other column is a
    feature: numeric columns as they are, nominal (ARFF) and boolean columns one-hot encoded;
    text columns are refused. Rows with a missing value are dropped (``meta['n_dropped']``).
    The file is read when the spec is made (:func:`load_dataset` makes the spec of a ``file:``
    name once per process and version of the file); relative paths are relative to the working
    directory.

    Parameters
    ----------
    path : path-like
        The file.
    label_column : str or None
        The class column (CSV, ARFF; required there); ``None`` for LIBSVM.

    Returns
    -------
    spec : DatasetSpec
        Registered as ``file:<path>[?label_column=<column>]``; ``meta['source']`` is ``"file"``.

    Raises
    ------
    DataNotAvailable
        One line: the file does not exist or cannot be read.
    DataParseError
        One line: an unsupported suffix, a missing or misplaced ``label_column``, a file that does
        not parse, text features.
    """
    name = file_reference(path, label_column)
    path = Path(path)
    what = f"dataset {path.stem!r} ({path})"
    fmt = FILE_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise DataParseError(f"{what}: unknown file type {path.suffix!r}; supported: "
                             f"{', '.join(FILE_FORMATS)}")
    if (fmt == "libsvm") == (label_column is not None):
        raise DataParseError(f"{what}: " + ("a LIBSVM file holds its labels in the first field; "
                                            "drop label_column" if label_column else
                                            f"a {fmt.upper()} file needs label_column: <column>"))
    if not path.is_file():
        state = "is a folder" if path.is_dir() else "does not exist"
        raise DataNotAvailable(f"{what}: the file {state} (relative paths are read from the "
                               f"working directory {Path.cwd()})")
    try:
        if fmt == "libsvm":
            from .parsers import user_libsvm

            parsed = user_libsvm(path, what)  # refuses a dense array beyond the memory
        else:
            frame = pd.read_csv(path) if fmt == "csv" else _read_arff(path)
            parsed = frame_arrays(frame, label_column, what)
    except DataNotAvailable:
        raise
    except (*_parse_errors(), NotImplementedError, StopIteration) as exc:  # scipy.io.arff's too
        raise DataParseError(f"{what}: cannot parse it as {fmt.upper()}: {_describe(exc)}") from exc
    return spec_from_arrays(name, parsed.X, parsed.labels, description=f"{fmt.upper()} file {path}",
                            extra={"source": "file", "path": str(path), **parsed.extra})


def _file_source(reference: str) -> DatasetSpec:
    """The spec a ``file:<path>[?label_column=<column>]`` dataset name refers to, made once per
    version of the file (:func:`~dml_bench.datasets.content.file_version`): a file changed in
    place, or another file at the same relative path, is read again."""
    path, _, label_column = reference.partition("?label_column=")
    try:
        version = file_version(path)
    except OSError:
        version = None  # file_spec says why it cannot be read
    return _versioned_file_spec(path, label_column or None, version)


@functools.lru_cache(maxsize=8)
def _versioned_file_spec(path: str, label_column: str | None, version: tuple | None):
    return file_spec(path, label_column)


DATASETS.register_source("file", _file_source)


def frame_arrays(frame: pd.DataFrame, label_column: str, what: str) -> Parsed:
    """Features and labels of a table: ``label_column`` is the class, the other columns features.

    Numeric columns are kept, categorical and boolean ones one-hot encoded (one 0/1 column per
    category), and rows with a missing value (feature or label) dropped (``n_dropped`` in the
    extra); ``what`` names the data in errors.

    Raises
    ------
    DataParseError
        ``label_column`` is not a column, a feature column holds text, or no row is complete.
    DataTooLarge
        The one-hot encoded array would not fit in memory (:func:`dml_bench.common.resources.oversize`).
    """
    if label_column not in frame.columns:
        columns = ", ".join(map(str, frame.columns[:20])) + (", ..." if frame.shape[1] > 20 else "")
        raise DataParseError(f"{what}: has no column {label_column!r} (columns: {columns})")
    features = frame.drop(columns=[label_column])
    categorical = [c for c in features.columns if isinstance(features[c].dtype, pd.CategoricalDtype)
                   or pd.api.types.is_bool_dtype(features[c])]
    text = [str(c) for c in features.columns
            if c not in categorical and not pd.api.types.is_numeric_dtype(features[c])]
    if text:
        raise DataParseError(f"{what}: feature column(s) {', '.join(text[:5])} hold text, not "
                             "numbers; remove them or make them the label_column")
    complete = (features.notna().all(axis=1) & frame[label_column].notna()).to_numpy()
    if not complete.any():
        raise DataParseError(f"{what}: no row is complete (every row has a missing value)")
    width = sum(len(features[c].cat.categories) if isinstance(features[c].dtype, pd.CategoricalDtype)
                else 2 if c in categorical else 1 for c in features.columns)  # one-hot columns
    problem = oversize((int(complete.sum()), width), np.float64, "a dense array")
    if problem:  # a nominal column of n distinct values makes n columns
        raise DataTooLarge(f"{what}: the one-hot encoded table {problem}")
    X = pd.get_dummies(features[complete], columns=categorical, dtype=np.float64)
    labels = frame[label_column][complete].to_numpy()
    if labels.dtype.kind == "f" and np.all(labels == np.round(labels)):
        labels = labels.astype(np.int64)
    elif labels.dtype.kind == "O":
        labels = labels.astype(str)
    return Parsed(X.to_numpy(np.float64), labels, {"n_dropped": int((~complete).sum())})


def _read_arff(path: Path) -> pd.DataFrame:
    """An ARFF file as a table, nominal attributes as categorical columns of str."""
    from scipy.io import arff

    data, meta = arff.loadarff(str(path))
    frame = pd.DataFrame(data)
    for column, kind in zip(meta.names(), meta.types()):
        if kind == "nominal":
            values = frame[column].str.decode("utf-8")
            frame[column] = values.where(values != "?").astype("category")
    return frame


def dataset_digest(name: str, *, mirror=None, cache_dir=None) -> str | None:
    """The content digest that enters the ids of tasks on dataset ``name``.

    Parameters
    ----------
    name : str
        A dataset name as configs give it (see :func:`load_dataset`).
    mirror, cache_dir : path-like or None
        As for :func:`load_dataset`; the record of digests is in the cache.

    Returns
    -------
    digest : str or None
        None for a catalogue dataset (its name and pinned files fix its data); the sha256 of the
        file for ``file:<path>[?label_column=<column>]``; the sha256 of the loaded arrays for any
        other name (OpenML, plug-ins). When the data cannot be read now, the digest recorded when
        it last could, else :data:`~dml_bench.datasets.content.UNAVAILABLE` (such tasks are
        skipped, not run).
    """
    if any(name == known for known in DATASETS):  # iterating lists the catalogue alone
        return None
    if name.startswith("file:"):
        path = name.removeprefix("file:").partition("?label_column=")[0]
        try:
            return content.file_digest(path, cache_dir=cache_dir)
        except OSError:
            return content.recorded_file_digest(path, cache_dir=cache_dir)
    try:
        X, y, _ = load_dataset(name, mirror=mirror, cache_dir=cache_dir)
    except DMLBenchError:  # not available now (or not allowed): the digest of its rows
        return content.recorded_dataset_digest(name, cache_dir=cache_dir)
    return content.loaded_digest(name, X, y, cache_dir=cache_dir)
