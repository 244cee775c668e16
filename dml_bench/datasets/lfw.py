"""Labeled Faces in the Wild: the pair lists of the restricted protocol and per-image descriptors.

LFW face verification (Ying & Li 2012 §5.2, Shen et al. 2014 §V) is not a classification set:
models are trained and tested on *pairs* of images, in 10 folds (View 2) after development on
View 1. This module gives

- :func:`load_lfw_pairs` ``(view)``: the folds of pairs, read from the official pairs files
  (registered, verified files of the ``lfw_pairs`` dataset: cache → mirror → network);
- :func:`load_lfw_sift`: the SIFT descriptors of Guillaumin et al. (2009), funnelled images,
  9 facial points x 3 scales x 128 = 3456 dimensions, for users who have them (not in the data
  mirror, no public checksum). The accepted file format is documented in
  :func:`~dml_bench.datasets.parsers.read_descriptor_table`: an ``.npz`` (or MAT v5) holding
  ``X`` (n_images x 3456) and ``names`` (``"Aaron_Eckhart_0001"``, the LFW image file stems);
  the registered dataset ``lfw_sift`` reads it from ``<cache or mirror>/lfw/lfw_sift_funneled.npz``.
  :func:`save_lfw_sift` writes that format from any array and name list;
- :func:`pair_indices`: row indices of each pair's two images in such a descriptor table.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .catalog import DATASETS
from .files import ensure_files, resolve_cache_dir, resolve_mirror
from .parsers import LFW_IMAGE_NAME, LFWPair, read_descriptor_table, read_lfw_pairs

PathLike = str | os.PathLike

VIEWS = {
    "view1": ("pairsDevTrain.txt", "pairsDevTest.txt"),  # folds: [train (2200), test (1000)]
    "view2": ("pairs.txt",),  # 10 folds of 300 matched + 300 mismatched pairs
}

__all__ = ["LFWPair", "VIEWS", "lfw_image_name", "load_lfw_pairs", "load_lfw_sift", "pair_indices",
           "save_lfw_sift"]


def load_lfw_pairs(
    view: str = "view2",
    *,
    mirror: PathLike | None = None,
    cache_dir: PathLike | None = None,
    allow_network: bool = True,
) -> list[list[LFWPair]]:
    """The pairs of an LFW protocol view, per fold.

    Parameters
    ----------
    view : {"view1", "view2"}
        ``"view1"``: ``[DevTrain pairs (1100 matched + 1100 mismatched), DevTest pairs
        (500 + 500)]``; ``"view2"``: 10 folds of 300 matched + 300 mismatched pairs.
    mirror, cache_dir, allow_network
        As for :func:`~dml_bench.datasets.load_dataset` (the files are those of the registered
        ``lfw_pairs`` dataset, verified by sha256).

    Returns
    -------
    folds : list of list of LFWPair
        Each pair is ``(name1, idx1, name2, idx2, same)``, a named tuple; matched pairs come
        first in each fold, as in the files. Image ``idx`` of ``name`` is the file
        ``name/name_{idx:04d}.jpg`` (:func:`lfw_image_name`).
    """
    if view not in VIEWS:
        raise ValueError(f"unknown LFW view {view!r}; expected one of {sorted(VIEWS)}")
    spec = DATASETS["lfw_pairs"]
    paths, _ = ensure_files(spec, resolve_cache_dir(cache_dir), resolve_mirror(mirror), allow_network)
    by_name = {Path(p).name: p for p in paths}
    folds = []
    for filename in VIEWS[view]:
        folds += read_lfw_pairs(by_name[filename])
    return folds


def lfw_image_name(name: str, idx: int) -> str:
    """The LFW image stem of image ``idx`` (1-based) of person ``name``: ``Name_0001``."""
    return f"{name}_{idx:04d}"


def pair_indices(pairs: Sequence[LFWPair], image_names: Sequence[str]) -> tuple[np.ndarray, ...]:
    """Row indices, in a descriptor table, of the two images of each pair.

    Parameters
    ----------
    pairs : sequence of LFWPair
    image_names : sequence of str
        The table's image names in row order (``meta['image_names']`` of ``lfw_sift``, or the
        names returned by :func:`load_lfw_sift`).

    Returns
    -------
    first, second : ndarray of int
    same : ndarray of bool

    Raises
    ------
    KeyError
        Some pair image has no row (the message lists a few).
    """
    row = {name: i for i, name in enumerate(image_names)}
    wanted = [(lfw_image_name(p.name1, p.idx1), lfw_image_name(p.name2, p.idx2)) for p in pairs]
    missing = sorted({n for pair in wanted for n in pair if n not in row})
    if missing:
        raise KeyError(f"{len(missing)} pair images have no descriptor row, e.g. {missing[:3]}")
    first = np.array([row[a] for a, _ in wanted], dtype=np.int64)
    second = np.array([row[b] for _, b in wanted], dtype=np.int64)
    return first, second, np.array([p.same for p in pairs], dtype=bool)


def load_lfw_sift(
    path: PathLike | None = None,
    *,
    mirror: PathLike | None = None,
    cache_dir: PathLike | None = None,
    n_features: int = 3456,
) -> tuple[np.ndarray, list[str]]:
    """SIFT descriptors of LFW images (Guillaumin et al. 2009), with their image names.

    Parameters
    ----------
    path : path-like or None
        A descriptor file in the documented format (``.npz`` or MAT v5, any number of images:
        see :func:`~dml_bench.datasets.parsers.read_descriptor_table`). ``None`` loads the
        registered ``lfw_sift`` dataset (``lfw/lfw_sift_funneled.npz`` in the cache or mirror,
        all 13233 images).
    mirror, cache_dir
        As for :func:`~dml_bench.datasets.load_dataset` (when ``path`` is None).
    n_features : int, default=3456
        Dimension the file at ``path`` must have (3456 for the SIFT descriptors; another value
        for other per-image descriptors in the same format). The registered dataset is 3456.

    Returns
    -------
    X : ndarray of shape (n_images, n_features), float64
    names : list of str
        Image names (``Aaron_Eckhart_0001``) in row order.

    Raises
    ------
    DataNotAvailable
        No descriptor file (``path`` missing, or nothing in cache or mirror).
    ValueError, DataIntegrityError
        The file is not in the documented format / has the wrong shape.
    """
    from .errors import DataNotAvailable
    from .loader import load_dataset

    if path is None:
        X, _, meta = load_dataset("lfw_sift", mirror=mirror, cache_dir=cache_dir, allow_network=False)
        return X, meta["image_names"]
    if not Path(path).is_file():
        raise DataNotAvailable(f"data not available: LFW SIFT descriptor file {path} does not exist. "
                               + DATASETS["lfw_sift"].files[0].obtain)
    return read_descriptor_table(Path(path), n_features)


def save_lfw_sift(path: PathLike, X: np.ndarray, names: Sequence[str]) -> None:
    """Write descriptors in the ``.npz`` format :func:`load_lfw_sift` reads (no pickle).

    To use them as the registered ``lfw_sift`` dataset, write to
    ``<cache>/lfw/lfw_sift_funneled.npz`` (or the same path under a mirror).
    """
    X = np.asarray(X)
    names = [str(n) for n in names]
    bad = [n for n in names if not LFW_IMAGE_NAME.fullmatch(n)]
    if X.ndim != 2 or len(names) != len(X) or bad:
        raise ValueError(f"need X of shape (n, d) and n names like Aaron_Eckhart_0001 "
                         f"(got {X.shape}, {len(names)} names, bad: {bad[:3]})")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        np.savez_compressed(fh, X=X, names=np.array(names, dtype=str))
