"""Benchmark datasets: a registry of specs, and loaders that fetch and verify their files.

>>> from dml_bench.datasets import load_dataset
>>> X, y, meta = load_dataset("wine")
>>> X.shape, meta["n_classes"], meta["source"]
((178, 13), 3, 'bundled')

File-based datasets are read from the local cache (``$DMLBENCH_CACHE``, default ``./datasets``),
else from a mirror folder (``$DMLBENCH_DATA_MIRROR``) and copied into the cache, else downloaded.
Every file is checked by sha256 and the parsed data against the registered shape.
"""

from .catalog import DATASETS
from .errors import DataIntegrityError, DataNotAvailable
from .loader import dataset_status, fetch_dataset, load_dataset
from .spec import DatasetSpec, FileSpec, Parsed

__all__ = [
    "DATASETS",
    "DataIntegrityError",
    "DataNotAvailable",
    "DatasetSpec",
    "FileSpec",
    "Parsed",
    "dataset_status",
    "fetch_dataset",
    "load_dataset",
]
