"""What a dataset is: its files (with checksums and sources), expected shape and parser."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from ..registry import PluginError, describe
from .errors import DataIntegrityError, DataNotAvailable, DataParseError


class Parsed(NamedTuple):
    """What a parser returns.

    Attributes
    ----------
    X : ndarray or scipy.sparse matrix of shape (n_samples, n_features)
        Features in any numeric dtype (kept compact, e.g. uint8 pixels, in the binary parse
        cache; converted to float64 by the loader). Sparse for datasets registered with
        ``sparse=True`` (converted to float64 CSR).
    labels : ndarray of shape (n_samples,)
        Original labels (ints or strings); the loader encodes them as 0..C-1 in sorted order.
    extra : dict
        Additional metadata merged into ``meta``, e.g. ``parts`` (rows per file / split, in row
        order), ``class_names`` (one per sorted original label), ``image_shape``, or anything
        else a parser documents (``manifold`` coordinates of generated data, ``image_names``,
        ``n_dropped`` rows with missing values).
    """

    X: np.ndarray
    labels: np.ndarray
    extra: dict[str, Any]


Parser = Callable[[list[Path]], Parsed]

COMPRESSIONS = ("gzip", "bz2")


@dataclass(frozen=True)
class FileSpec:
    """One file of a dataset.

    Parameters
    ----------
    relpath : str
        POSIX path relative to the cache / mirror root, starting with the dataset's folder
        (``"pima/pima-indians-diabetes.csv"``).
    sha256 : str or None
        Hex digest the file must have, wherever it is read from (of its decompressed content
        when ``compression`` is set). ``None`` marks a file whose checksum could not be recorded
        when it was registered (the source was not reachable): the sha256 of the first copy that
        enters the cache is recorded next to it (``<relpath>.sha256``, trust on first use) and
        every later load must match it; the parsed shape is checked as for any file.
    url : str or None
        Where :func:`~dml_bench.datasets.fetch_dataset` downloads it from; ``None`` when there is
        no network source.
    members : str or None
        Marks the file as a ``sha256sum`` listing (lines ``HASH  ./relpath`` in natural order) of
        member files stored next to it, each verified against the listing; the dataset's parser
        receives the members instead of the listing. ``url`` is then a zip archive and
        ``members`` a regular expression whose first group maps archive entries to the listed
        relative paths. From the archive the listing is rebuilt from the extracted members and
        must hash to ``sha256``, which verifies every member.
    compression : {"gzip", "bz2"} or None
        The file is stored compressed, as obtained, and ``sha256`` is the digest of its
        DECOMPRESSED content: two compressions of the same content (the mirror's ``gzip -9 -n``
        copy and the original download) both verify, and a truncated or corrupt stream is
        refused like a checksum mismatch.
    obtain : str or None
        How to obtain the file by hand when there is no (working) network source; appended to
        the "not available" message.
    """

    relpath: str
    sha256: str | None
    url: str | None = None
    members: str | None = None
    compression: str | None = None
    obtain: str | None = None

    def __post_init__(self):
        if self.compression not in (None, *COMPRESSIONS):
            raise ValueError(f"{self.relpath}: unknown compression {self.compression!r}")
        if self.members is not None and (self.sha256 is None or self.compression is not None):
            raise ValueError(f"{self.relpath}: a listing needs a pinned sha256 and no compression")

    @property
    def pinned(self) -> bool:
        """Whether the registry holds the file's sha256 (else: trust on first use)."""
        return self.sha256 is not None

    @property
    def folder(self) -> str:
        """The dataset folder this file lives in (first component of ``relpath``)."""
        return PurePosixPath(self.relpath).parts[0]


@dataclass(frozen=True)
class DatasetSpec:
    """A registered dataset.

    Parameters
    ----------
    name : str
        Registry name.
    description : str
        One line on what the data is.
    n_samples, n_features, n_classes : int
        Shape the parsed data must have; anything else is a :class:`DataIntegrityError`.
    papers : tuple of str
        Keys of the papers that report results on it.
    files : tuple of FileSpec
        Files in the order the parser receives them; empty for data bundled with scikit-learn
        and for generated data.
    parser : callable
        ``parser(paths) -> Parsed`` (``paths`` is empty for bundled and generated data).
    image_shape : tuple of int or None
        ``(height, width)`` of image rows (row-major).
    notes : str
        Provenance of the network sources and how they are verified.
    class_names : tuple of str or None
        Readable names of the sorted original labels, when the parser gives none.
    generated : bool
        The data is generated deterministically by ``parser`` (fixed seed; no files).
    sparse : bool
        ``X`` is a ``scipy.sparse.csr_matrix`` (float64), not a dense array.
    binary_cache : bool
        Store the parsed arrays (in the parser's compact dtype) as a compressed ``.npz`` in the
        cache, keyed by the files' sha256, and load from it afterwards (see ``bincache``).
    """

    name: str
    description: str
    n_samples: int
    n_features: int
    n_classes: int
    papers: tuple[str, ...]
    files: tuple[FileSpec, ...]
    parser: Parser
    image_shape: tuple[int, int] | None = None
    notes: str = ""
    class_names: tuple[str, ...] | None = None
    generated: bool = False
    sparse: bool = False
    binary_cache: bool = False

    def __post_init__(self):
        for name in ("papers", "files"):  # tuples keep specs hashable (loads are memoised per spec)
            object.__setattr__(self, name, tuple(getattr(self, name)))
        for name in ("image_shape", "class_names"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.generated and self.files:
            raise ValueError(f"dataset {self.name!r}: generated data has no files")
        if self.binary_cache and not self.files:
            raise ValueError(f"dataset {self.name!r}: a binary cache needs files")
        if self.class_names is not None and len(self.class_names) != self.n_classes:
            raise ValueError(f"dataset {self.name!r}: {len(self.class_names)} class_names for "
                             f"{self.n_classes} classes")
        folders = {f.folder for f in self.files}
        if len(folders) > 1:
            raise ValueError(f"dataset {self.name!r}: files span several folders {sorted(folders)}")
        if self.image_shape is not None and np.prod(self.image_shape) != self.n_features:
            raise ValueError(f"dataset {self.name!r}: image_shape {self.image_shape} != n_features")

    @property
    def bundled(self) -> bool:
        """Whether the data ships with a Python package (no files to fetch)."""
        return not self.files and not self.generated

    @property
    def kind(self) -> str:
        """``"bundled"``, ``"generated"`` or ``"files"``."""
        return "generated" if self.generated else "bundled" if self.bundled else "files"

    @property
    def folder(self) -> str | None:
        """Folder of the dataset's files under the cache / mirror root (``None`` without files)."""
        return self.files[0].folder if self.files else None


def spec_from_arrays(name: str, X, labels, *, description: str = "", extra: dict | None = None
                     ) -> DatasetSpec:
    """A spec holding data already in memory (a user file's, an OpenML dataset's).

    The loader treats it as data bundled with a package (no files to fetch): ``load_dataset``
    returns float64 ``X`` and labels encoded 0..C-1 as for any catalogue dataset, and ``meta``
    gains ``extra`` (e.g. ``source``: where the data came from, ``n_dropped``).

    Parameters
    ----------
    name : str
        The name the spec is registered under.
    X : array-like of shape (n_samples, n_features) or scipy.sparse matrix
        Numeric features (sparse: kept as a CSR matrix, ``meta['sparse']``).
    labels : array-like of shape (n_samples,)
        Class labels (ints or strings).
    description : str
        One line on what the data is.
    extra : dict or None
        Merged into ``meta``.

    Raises
    ------
    DataParseError
        The features are not numeric, or ``X`` and ``labels`` differ in length.
    """
    extra = dict(extra or {})
    sparse = sp.issparse(X)
    try:
        X = sp.csr_matrix(X, dtype=np.float64) if sparse else np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataParseError(f"dataset {name!r}: the features are not numeric ({describe(exc)})") from exc
    labels = np.asarray(labels).reshape(-1)
    if X.ndim != 2 or X.shape[0] != len(labels) or len(labels) == 0:
        raise DataParseError(f"dataset {name!r}: X of shape {X.shape} and {len(labels)} labels do "
                             "not make a dataset (need n_samples >= 1 rows and one label per row)")
    parsed = Parsed(X, labels, extra)
    return DatasetSpec(name=name, description=description, n_samples=X.shape[0],
                       n_features=X.shape[1], n_classes=len(np.unique(labels)), papers=(),
                       files=(), parser=lambda paths: parsed, sparse=sparse)


#: the ``DatasetSpec`` fields a dataset plug-in class may set as class attributes (the first
#: three are required); see :func:`as_dataset_spec`
PLUGIN_FIELDS = ("n_samples", "n_features", "n_classes", "description", "papers", "files",
                 "image_shape", "notes", "class_names", "sparse", "binary_cache")


class PluginParser:
    """The parser of a plug-in dataset class: ``parser(paths)`` instantiates the class without
    arguments and returns what its ``load(paths)`` gives, as a :class:`Parsed`.

    Its failure is a one-line :class:`DataNotAvailable` naming the plug-in (the run skips the
    dataset with it), and a result that is not ``(X, y)`` a :class:`DataIntegrityError`; the
    loader then checks the data against the declared shape.

    Parameters
    ----------
    cls : type
        The plug-in class.
    what : str
        How messages name the plug-in.
    """

    def __init__(self, cls: type, what: str):
        self.cls, self.what = cls, what

    def __call__(self, paths: list[Path]) -> Parsed:
        try:
            out = self.cls().load(list(paths))
        except DataNotAvailable:
            raise
        except Exception as exc:  # noqa: BLE001 - the plug-in's own failure, reported in one line
            raise DataNotAvailable(f"{self.what}: its load() failed: {describe(exc)}") from exc
        if isinstance(out, Parsed):
            X, labels, extra = out
        elif isinstance(out, tuple) and len(out) == 2:
            (X, labels), extra = out, {}
        else:
            raise DataIntegrityError(f"{self.what}: its load() returned a {type(out).__name__}, "
                                     "not a pair (X, y)")
        try:
            X = X if sp.issparse(X) else np.asarray(X)
            labels = np.asarray(labels).reshape(-1)
        except (TypeError, ValueError) as exc:
            raise DataIntegrityError(f"{self.what}: its load() returned arrays that numpy cannot "
                                     f"read ({describe(exc)})") from exc
        return Parsed(X, labels, dict(extra))


def as_dataset_spec(name: str, obj: Any, what: str | None = None) -> DatasetSpec:
    """A plug-in dataset as a :class:`DatasetSpec` registered as ``name`` (the ``adapt`` of the
    dataset registry, :class:`~dml_bench.registry.Registry`), made without calling it.

    ``obj`` is a class with the interface of a ``DatasetSpec`` as class attributes (see
    :data:`PLUGIN_FIELDS`): ``n_samples``, ``n_features``, ``n_classes`` and optionally the
    others (``description`` defaults to the first line of its docstring), and a method
    ``load(self, paths)`` returning ``(X, y)``; its spec's parser is a :class:`PluginParser`, so
    the class is instantiated and ``load`` called only when the data is loaded. A
    ``DatasetSpec`` (from code, not from a plug-in: plug-ins are classes) is renamed.

    Raises
    ------
    PluginError
        ``obj`` is neither, or its attributes do not make a spec (one line naming what is
        wrong).
    """
    what = what or f"dataset {name!r}"
    if isinstance(obj, DatasetSpec):
        return dataclasses.replace(obj, name=name)
    if not isinstance(obj, type):
        raise PluginError(f"{what}: is a {type(obj).__name__}, not a dataset class")
    label = f"{obj.__module__}.{obj.__qualname__}"
    problems = [f"has no {key} (an int >= 1)" for key in PLUGIN_FIELDS[:3]
                if not isinstance(getattr(obj, key, None), int)
                or isinstance(getattr(obj, key), bool) or getattr(obj, key) < 1]
    if not callable(getattr(obj, "load", None)):
        problems.append("has no load(paths) method")
    if problems:
        raise PluginError(f"{what}: {label} is not a dataset plug-in: {'; '.join(problems)} "
                          "(see dml_bench.registry)")
    fields = {key: getattr(obj, key) for key in PLUGIN_FIELDS if hasattr(obj, key)}
    if "description" not in fields:
        fields["description"] = next(iter((obj.__doc__ or "").strip().splitlines()), label)
    fields.setdefault("papers", ())
    fields.setdefault("files", ())
    try:
        spec = DatasetSpec(name=name, parser=PluginParser(obj, what), **fields)
        hash(spec)  # loads are memoised per spec
        return spec
    except (TypeError, ValueError) as exc:
        raise PluginError(f"{what}: {label} is not a dataset plug-in: {describe(exc)}") from exc
