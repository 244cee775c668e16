"""Labeled Faces in the Wild: the pair lists of the restricted protocol and per-image descriptors.

LFW face verification (Ying & Li 2012 §5.2, Shen et al. 2014 §V) is not a classification set:
models are trained and tested on *pairs* of images, in 10 folds (View 2) after development on
View 1. This module gives

- :func:`load_lfw_pairs` ``(view)``: the folds of pairs, read from the official pairs files
  (registered, verified files of the ``lfw_pairs`` dataset: cache → mirror → network);
- :func:`load_lfw_sift`: the SIFT descriptors of Guillaumin et al. (2009), funnelled images,
  9 facial points x 3 scales x 128 = 3456 dimensions, for users who have them (not in the data
  mirror, no public checksum). The accepted file formats are documented in
  :func:`~dml_bench.datasets.parsers.read_descriptor_table`: an ``.npz``, a MATLAB ``.mat`` (v5,
  or v7.3 = HDF5) or an ``.h5`` holding ``X`` (n_images x 3456) and ``names``
  (``"Aaron_Eckhart_0001"``, the LFW image file stems);
  the registered dataset ``lfw_sift`` reads it from ``<cache or mirror>/lfw/lfw_sift_funneled.npz``.
  :func:`save_lfw_sift` writes that format from any array and name list;
- :func:`lfw_sift_path` / :func:`load_lfw_table`: the user's descriptor file for the
  verification protocol (``DMLBENCH_LFW_SIFT``, a config's ``path:``, or the cache / mirror
  location), verified to hold every image the pair lists name;
- :func:`load_lfw_pixels`: the pixel alternative, raw LFW through scikit-learn's
  :func:`~sklearn.datasets.fetch_lfw_pairs` (network on first use) — *not* the papers' features;
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

__all__ = ["LFWPair", "LFW_SIFT_ENV", "VIEWS", "lfw_image_name", "lfw_sift_path", "load_lfw_pairs",
           "load_lfw_pixels", "load_lfw_sift", "load_lfw_table", "pair_indices", "save_lfw_sift"]

#: environment variable naming the user's LFW-SIFT descriptor file
LFW_SIFT_ENV = "DMLBENCH_LFW_SIFT"
#: where the registered ``lfw_sift`` dataset's file lies under the cache or a mirror
LFW_SIFT_RELPATH = "lfw/lfw_sift_funneled.npz"
#: scikit-learn's subsets of :func:`~sklearn.datasets.fetch_lfw_pairs` per pair list
_SKLEARN_SUBSETS = {"pairs.txt": "10_folds", "pairsDevTrain.txt": "train", "pairsDevTest.txt": "test"}


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
        A descriptor file in a documented format (``.npz``, MAT v5 / v7.3 or HDF5, any number of
        images: see :func:`~dml_bench.datasets.parsers.read_descriptor_table`). ``None`` loads the
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


def lfw_sift_path(path: PathLike | None = None, *, mirror: PathLike | None = None,
                  cache_dir: PathLike | None = None) -> Path:
    """The user's LFW-SIFT descriptor file: the first of ``path`` (a config's
    ``datasets: [{name: lfw_sift, path: ...}]``), ``$DMLBENCH_LFW_SIFT``,
    ``<cache>/lfw/lfw_sift_funneled.npz`` and ``<mirror>/lfw/lfw_sift_funneled.npz``.

    Raises
    ------
    DataNotAvailable
        One line: the file given does not exist, or none was given and none is in the cache or
        mirror ("needs the LFW-SIFT file", with the three ways to supply it).
    """
    from .errors import DataNotAvailable

    given = path or os.environ.get(LFW_SIFT_ENV)
    if given:
        if not Path(given).is_file():
            source = "path" if path else LFW_SIFT_ENV
            raise DataNotAvailable(f"the LFW-SIFT file {given} ({source}) does not exist")
        return Path(given)
    places = [resolve_cache_dir(cache_dir) / LFW_SIFT_RELPATH]
    mirror = resolve_mirror(mirror)
    places += [mirror / LFW_SIFT_RELPATH] if mirror else []
    for place in places:
        if place.is_file():
            return place
    raise DataNotAvailable(
        f"needs the LFW-SIFT file (3456-d SIFT of Guillaumin et al. 2009, not in the data mirror): "
        f"set {LFW_SIFT_ENV}=/path/file, or give `datasets: [{{name: lfw_sift, path: /path/file}}]` "
        f"in the config, or put it at {places[0]}; formats .npz, .mat (v5 or v7.3), .h5 with X "
        f"(n, 3456) and names (docs/reproducing.md, User-supplied data)")


def load_lfw_table(pair_lists: Sequence[Sequence[LFWPair]], path: PathLike | None = None, *,
                   mirror: PathLike | None = None, cache_dir: PathLike | None = None,
                   n_features: int = 3456) -> tuple[np.ndarray, list[str]]:
    """The LFW-SIFT descriptor table (:func:`lfw_sift_path`), verified for the protocol.

    Parameters
    ----------
    pair_lists : sequence of sequence of LFWPair
        Every pair the protocol uses (e.g. the folds of View 2 and of View 1); each image they
        name must have a row. Other rows are allowed (the full file has all 13 233 images).
    path, mirror, cache_dir
        As for :func:`lfw_sift_path`.
    n_features : int
        The dimension the file must have (3456).

    Returns
    -------
    X : ndarray of shape (n_images, n_features)
    names : list of str

    Raises
    ------
    DataNotAvailable
        No file (:func:`lfw_sift_path`).
    DataIntegrityError
        One line: the file is in no accepted format, has another dimension, or lacks images
        named in the pair lists (how many, and a few of them).
    """
    from .errors import DataIntegrityError

    file = lfw_sift_path(path, mirror=mirror, cache_dir=cache_dir)
    try:
        X, names = read_descriptor_table(file, n_features)
    except (ValueError, OSError) as exc:
        raise DataIntegrityError(f"LFW-SIFT file: {exc}") from exc
    have = set(names)
    wanted = {lfw_image_name(n, i) for pairs in pair_lists for p in pairs
              for n, i in ((p.name1, p.idx1), (p.name2, p.idx2))}
    missing = sorted(wanted - have)
    if missing:
        raise DataIntegrityError(
            f"the LFW-SIFT file {file} lacks {len(missing)} of the {len(wanted)} images named in "
            f"the LFW pair lists, e.g. {', '.join(missing[:3])}")
    return X, names


def load_lfw_pixels(pair_file: str = "pairs.txt", *, data_home: PathLike | None = None,
                    allow_network: bool = True) -> tuple[np.ndarray, list[str]]:
    """Raw LFW pixels of the images of one pair list, through scikit-learn's
    :func:`~sklearn.datasets.fetch_lfw_pairs` (funnelled images, grey, 62 x 47 after its default
    ``resize=0.5``): the pixel alternative to LFW-SIFT, **not the papers' features**.

    scikit-learn reads the same official pair lists in the same order, so row ``2k`` and
    ``2k + 1`` of its ``pairs`` are the two images of the k-th pair of ``pair_file``; images
    that recur are kept once, under their LFW names.

    Parameters
    ----------
    pair_file : {"pairs.txt", "pairsDevTrain.txt", "pairsDevTest.txt"}
    data_home : path-like, optional
        scikit-learn's data folder (default ``~/scikit_learn_data``; its own cache).
    allow_network : bool
        Download into that folder when it lacks the images (about 230 MB).

    Returns
    -------
    X : ndarray of shape (n_images, 2914)
    names : list of str

    Raises
    ------
    DataNotAvailable
        One line when the images are not in scikit-learn's cache and cannot be downloaded
        ("network needed").
    """
    from sklearn.datasets import fetch_lfw_pairs

    from .errors import DataNotAvailable

    try:
        bunch = fetch_lfw_pairs(subset=_SKLEARN_SUBSETS[pair_file], data_home=data_home,
                                download_if_missing=allow_network)
    except OSError as exc:  # URLError, a missing cache without download, a refused connection
        raise DataNotAvailable(
            f"dataset 'lfw_pixels': network needed: scikit-learn's fetch_lfw_pairs could not get "
            f"the LFW images ({type(exc).__name__}: {exc}); connect once to fill its cache "
            f"({data_home or os.environ.get('SCIKIT_LEARN_DATA', '~/scikit_learn_data')})") from exc
    folds = [p for fold in read_lfw_pairs(_pair_file_path(pair_file)) for p in fold]
    images = bunch.pairs.reshape(len(bunch.pairs) * 2, -1)
    names = [lfw_image_name(n, i) for p in folds for n, i in ((p.name1, p.idx1), (p.name2, p.idx2))]
    first = dict(reversed([(name, row) for row, name in enumerate(names)]))  # first occurrence
    keep = sorted(first.values())
    return images[keep].astype(np.float64), [names[r] for r in keep]


def _pair_file_path(filename: str) -> Path:
    """The verified local copy of one of the ``lfw_pairs`` files."""
    spec = DATASETS["lfw_pairs"]
    paths, _ = ensure_files(spec, resolve_cache_dir(None), resolve_mirror(None), True)
    return next(Path(p) for p in paths if Path(p).name == filename)
