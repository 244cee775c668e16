"""OpenML datasets, loaded through the ``openml`` package, its cache and its checksums.

A config names one as ``datasets: [{openml: 40996}]`` (an id) or ``{openml: "iris"}`` (a name:
the oldest active version), which resolves to the registry name ``openml:<id or name>``
(:func:`openml_spec`). The data runs under the same preprocessing options as the catalogue's
datasets. Only classification datasets are accepted: the class is the dataset's
``default_target_attribute``, which must be one nominal attribute.

Where the data is kept is openml's business: its cache (``openml.config``: by default
``~/.cache/openml``, or its configuration file), or the folder named by ``$DMLBENCH_OPENML_CACHE``
(openml's root cache directory, ``set_root_cache_directory``). openml downloads the description
and the data file into it once and checks the file's md5 against the description when it
downloads it; here the cached ARFF file is checked against it again on every load, so a
damaged cache is refused rather than used. With the dataset in the cache no network is needed.

Faults are :class:`~dml_bench.datasets.DataNotAvailable` with a one-line message (OpenML not
reachable and the dataset not cached; an unknown id; not a classification dataset), and
``dmlbench run`` reports the dataset as skipped with that reason.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ..registry import describe
from .errors import DataIntegrityError, DataNotAvailable
from .catalog import DATASETS
from .loader import SOURCE_STATUS, frame_arrays
from .spec import DatasetSpec, spec_from_arrays

#: environment variable naming openml's root cache directory (default: openml's own setting)
ENV_OPENML_CACHE = "DMLBENCH_OPENML_CACHE"


def openml_spec(reference: str | int) -> DatasetSpec:
    """The spec of an OpenML classification dataset, its data loaded through ``openml``.

    Parameters
    ----------
    reference : str or int
        The dataset id (``40996``, ``"40996"``) or name (``"iris"``; looking a name up needs the
        network).

    Returns
    -------
    spec : DatasetSpec
        Registered as ``openml:<reference>``; ``meta`` gains ``source`` (``"openml"``),
        ``openml_id``, ``openml_name``, ``openml_version``, ``target`` and ``n_dropped`` (rows with
        a missing value, dropped). Nominal features are one-hot encoded (see
        :func:`~dml_bench.datasets.loader.frame_arrays`).

    Raises
    ------
    DataNotAvailable
        One line: OpenML is not reachable and the dataset is not in the cache; OpenML does not
        know it; it has no single nominal target (not a classification dataset).
    DataIntegrityError
        The cached data file's md5 differs from the description's.
    """
    import pandas as pd

    reference = str(reference).strip()
    what = f"dataset 'openml:{reference}'"
    dataset = _get_dataset(reference, what)
    _check_md5(dataset, what)
    target = dataset.default_target_attribute
    if not target or "," in target:
        kind = "several target attributes" if target else "no default target attribute"
        raise DataNotAvailable(f"{what} ({dataset.name}): has {kind}; dml-bench runs classification "
                               "datasets with one nominal class attribute")
    try:
        X, y, _, _ = dataset.get_data(target=target)
    except (OSError, ValueError, KeyError) as exc:  # a cached file openml cannot read
        raise DataNotAvailable(f"{what} ({dataset.name}): openml cannot read its cached data "
                               f"({describe(exc)}); delete {_cache_dir(dataset)} to download it "
                               "again") from exc
    if not isinstance(y.dtype, pd.CategoricalDtype) and not pd.api.types.is_bool_dtype(y):
        raise DataNotAvailable(f"{what} ({dataset.name}): its target {target!r} is {y.dtype}, not "
                               "nominal: a regression dataset (dml-bench runs classification only)")
    frame = X.copy()
    frame[target] = y
    parsed = frame_arrays(frame, target, f"{what} ({dataset.name})")
    extra = {"source": "openml", "openml_id": int(dataset.dataset_id), "openml_name": dataset.name,
             "openml_version": int(dataset.version), "target": target, **parsed.extra}
    return spec_from_arrays(f"openml:{reference}", parsed.X, parsed.labels,
                            description=f"OpenML dataset {dataset.dataset_id} ({dataset.name}, "
                            f"version {dataset.version})", extra=extra)


DATASETS.register_source("openml", openml_spec)


def openml_status(reference: str | int) -> str:
    """``"cached"`` if openml's cache holds the dataset's description and data file (so loading
    it needs no network), else ``"network needed"`` (always for a name: looking it up needs the
    network). Reads no file and makes no request."""
    reference = str(reference).strip()
    if not reference.isdigit():
        return "network needed"
    folder = Path(_openml().config.get_cache_directory()) / "datasets" / str(int(reference))
    data = ("dataset.arff", f"dataset_{int(reference)}.pq", "dataset.pq")
    cached = (folder / "description.xml").is_file() and any((folder / f).is_file() for f in data)
    return "cached" if cached else "network needed"


SOURCE_STATUS["openml"] = openml_status


def openml_suite_datasets(suite: str | int, *, max_datasets: int | None = None,
                          max_instances: int | None = None,
                          max_features: int | None = None) -> list[int]:
    """The dataset ids of an OpenML benchmark suite (e.g. ``"OpenML-CC18"``), smallest first,
    via the network.

    Each id runs as ``openml:<id>`` (a config's ``{openml_suite: ...}`` entry expands into one
    ``{openml: <id>}`` entry per id, see :mod:`dml_bench.experiment.config`). The sizes are OpenML's
    qualities ``NumberOfInstances`` and ``NumberOfFeatures`` (the class attribute not counted),
    read in one listing call, so nothing is downloaded; a dataset without them counts as
    infinitely large (listed last, dropped by a size limit).

    Parameters
    ----------
    suite : str or int
        The suite's alias (``"OpenML-CC18"``) or id (``99``).
    max_datasets : int, optional
        Keep the first ``max_datasets`` after the size limits (the smallest).
    max_instances, max_features : int, optional
        Keep the datasets with at most this many instances / features.

    Returns
    -------
    ids : list of int
        Ordered by number of instances, then of features, then id, so that a board fills in
        from the cheap end.

    Raises
    ------
    DataNotAvailable
        One line: OpenML is not reachable, or does not know the suite.
    """
    openml = _openml()
    try:
        ids = [int(i) for i in openml.study.get_suite(suite).data or ()]
        listing = openml.datasets.list_datasets(data_id=ids, status="all",
                                                output_format="dataframe") if ids else None
    except Exception as exc:  # noqa: BLE001 - network or server errors, reported in one line
        raise DataNotAvailable(f"OpenML suite {suite!r}: cannot be listed ({describe(exc)}); it "
                               "needs network access to OpenML") from exc
    inf = float("inf")
    sizes = {did: (inf, inf) for did in ids}
    if listing is not None and len(listing):  # a quality not computed is missing: NaN, unknown
        qualities = listing.reindex(columns=["NumberOfInstances", "NumberOfFeatures"]).astype(float)
        for did, n, d in zip(listing["did"], *(qualities.fillna(inf)[c] for c in qualities)):
            sizes[int(did)] = (n, d - 1)
    kept = sorted((size, did) for did, size in sizes.items()
                  if size[0] <= (max_instances or inf) and size[1] <= (max_features or inf))
    return [did for _, did in kept][:max_datasets]


def _openml():
    """The ``openml`` module, its cache at ``$DMLBENCH_OPENML_CACHE`` when that is set."""
    import openml

    if os.environ.get(ENV_OPENML_CACHE):
        openml.config.set_root_cache_directory(str(Path(os.environ[ENV_OPENML_CACHE]).expanduser()))
    return openml


def _get_dataset(reference: str, what: str):
    """``openml.datasets.get_dataset`` with the data file, faults as one-line errors."""
    openml = _openml()
    from openml.exceptions import OpenMLHashException, OpenMLServerException

    key = int(reference) if reference.isdigit() else reference
    try:
        # explicit flags: the same calls on openml 0.14 (defaults True, with a warning) and 0.15+
        return openml.datasets.get_dataset(key, download_data=True, download_qualities=False,
                                           download_features_meta_data=True)
    except OpenMLHashException as exc:
        raise DataIntegrityError(f"{what}: the file downloaded from OpenML fails its md5 "
                                 f"checksum ({describe(exc)}); nothing usable was saved") from exc
    except OpenMLServerException as exc:
        raise DataNotAvailable(f"{what}: OpenML refused it ({describe(exc)})") from exc
    except (OSError, ValueError, RuntimeError) as exc:  # requests' errors are OSErrors
        cache = openml.config.get_cache_directory()
        raise DataNotAvailable(
            f"{what}: not in openml's cache {cache} and OpenML cannot be reached ({describe(exc)}). "
            f"Run once with network access (openml downloads it into that cache), or set "
            f"{ENV_OPENML_CACHE} to an openml cache folder holding it"
        ) from exc


def _check_md5(dataset, what: str) -> None:
    """Refuse a cached ARFF file whose md5 differs from the one in the dataset's description."""
    path = Path(dataset.data_file) if dataset.data_file else None
    if not dataset.md5_checksum or path is None or path.suffix != ".arff" or not path.is_file():
        return  # parquet data: openml keeps no checksum for it
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    if digest.hexdigest() != dataset.md5_checksum:
        raise DataIntegrityError(
            f"{what} ({dataset.name}): md5 mismatch for the cached {path}: expected "
            f"{dataset.md5_checksum}, got {digest.hexdigest()}. Delete {_cache_dir(dataset)} to "
            "download it again"
        )


def _cache_dir(dataset) -> Path:
    return Path(dataset.data_file or dataset.parquet_file or ".").parent
