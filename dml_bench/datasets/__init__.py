"""Benchmark datasets: a registry of specs, and loaders that fetch and verify their files.

The catalogue (:mod:`.catalog`) names every dataset with its files and parser (:mod:`.parsers`,
the file formats); :mod:`.loader` loads them through :mod:`.files` (cache → mirror → network,
checked by :mod:`.checksums`), the binary parse cache (:mod:`.bincache`) and the content digests
of task ids (:mod:`.content`).

>>> from dml_bench.datasets import load_dataset
>>> X, y, meta = load_dataset("wine")
>>> X.shape, meta["n_classes"], meta["source"]
((178, 13), 3, 'bundled')

File-based datasets are read from the local cache (``$DMLBENCH_CACHE``, default ``./datasets``),
else from a mirror folder (``$DMLBENCH_DATA_MIRROR``) and copied into the cache, else downloaded.
Every file is checked by sha256 and the parsed data against the registered shape. Some entries
are generated from a fixed seed (``twin_peaks``, ``swiss_roll``, ``waveform_generated``), and the
high-dimensional text sets (``dexter``, ``gisette``, ``news20``) load with a
``scipy.sparse.csr_matrix`` X (``meta['sparse']``). LFW verification pairs and descriptors have
their own small API (:func:`load_lfw_pairs`, :func:`load_lfw_sift`; module ``lfw``).
Plug-in datasets (entry points of the group ``dml_bench.datasets``), users' data files
(``file:<path>?label_column=<column>``: CSV, ARFF, LIBSVM) and OpenML datasets (``openml:<id>``,
module ``openml_source``) load by the same names (see :mod:`dml_bench.registry`).

The dataset stage: the first after the ground (errors, registries, safe files), before the
splits, constraints and solvers.
"""

from .catalog import DATASETS
from .errors import DataIntegrityError, DataNotAvailable, DataParseError
from .lfw import LFWPair, load_lfw_pairs, load_lfw_sift, pair_indices, save_lfw_sift
from .loader import dataset_status, fetch_dataset, load_dataset
from .openml_source import openml_spec, openml_suite_datasets
from .spec import DatasetSpec, FileSpec, Parsed, spec_from_arrays

__all__ = [
    "DATASETS",
    "DataIntegrityError",
    "DataNotAvailable",
    "DataParseError",
    "DatasetSpec",
    "FileSpec",
    "LFWPair",
    "Parsed",
    "dataset_status",
    "fetch_dataset",
    "load_dataset",
    "load_lfw_pairs",
    "load_lfw_sift",
    "pair_indices",
    "save_lfw_sift",
]
