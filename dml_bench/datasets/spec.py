"""What a dataset is: its files (with checksums and sources), expected shape and parser."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

import numpy as np


class Parsed(NamedTuple):
    """What a parser returns.

    Attributes
    ----------
    X : ndarray of shape (n_samples, n_features)
        Features (converted to float64 by the loader).
    labels : ndarray of shape (n_samples,)
        Original labels (ints or strings); the loader encodes them as 0..C-1 in sorted order.
    extra : dict
        Additional metadata merged into ``meta``, e.g. ``parts`` (rows per file / split, in row
        order), ``class_names`` (one per sorted original label) or ``image_shape``.
    """

    X: np.ndarray
    labels: np.ndarray
    extra: dict[str, Any]


Parser = Callable[[list[Path]], Parsed]


@dataclass(frozen=True)
class FileSpec:
    """One file of a dataset.

    Parameters
    ----------
    relpath : str
        POSIX path relative to the cache / mirror root, starting with the dataset's folder
        (``"pima/pima-indians-diabetes.csv"``).
    sha256 : str
        Hex digest the file must have, wherever it is read from.
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
    """

    relpath: str
    sha256: str
    url: str | None = None
    members: str | None = None

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
        Files in the order the parser receives them; empty for data bundled with scikit-learn.
    parser : callable
        ``parser(paths) -> Parsed``.
    image_shape : tuple of int or None
        ``(height, width)`` of image rows (row-major).
    notes : str
        Provenance of the network sources and how they are verified.
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

    def __post_init__(self):
        for name in ("papers", "files"):  # tuples keep specs hashable (loads are memoised per spec)
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.image_shape is not None:
            object.__setattr__(self, "image_shape", tuple(self.image_shape))
        folders = {f.folder for f in self.files}
        if len(folders) > 1:
            raise ValueError(f"dataset {self.name!r}: files span several folders {sorted(folders)}")
        if self.image_shape is not None and np.prod(self.image_shape) != self.n_features:
            raise ValueError(f"dataset {self.name!r}: image_shape {self.image_shape} != n_features")

    @property
    def bundled(self) -> bool:
        """Whether the data ships with a Python package (no files to fetch)."""
        return not self.files

    @property
    def folder(self) -> str | None:
        """Folder of the dataset's files under the cache / mirror root (``None`` when bundled)."""
        return self.files[0].folder if self.files else None
