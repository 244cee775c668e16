"""The catalogue's sparse, high-dimensional sets: DEXTER, GISETTE and 20 Newsgroups.

``SPECS``, a list of :class:`~dml_bench.datasets.spec.DatasetSpec` in the catalogue's order;
each loads with a ``scipy.sparse.csr_matrix`` X.
"""

from __future__ import annotations

from .. import parsers
from ..spec import DatasetSpec, FileSpec
from . import common

SPECS: list[DatasetSpec] = []

_DEXTER_TRAIN = (
    FileSpec(
        "dexter/dexter_train.data",
        "19f6a64c41bedd198f61b919f8b8bca98ee1173ca60db45f3aa980f1294d1fd0",
        f"{common.UCI}/dexter/DEXTER/dexter_train.data",
    ),
    FileSpec(
        "dexter/dexter_train.labels",
        "903477b77d8a81cc56828bb25626cd05a7fc95e3b67b6358faeee7cbdd85dbbc",
        f"{common.UCI}/dexter/DEXTER/dexter_train.labels",
    ),
)
_DEXTER_NOTES = (
    "NIPS 2003 feature-selection challenge (Guyon et al.), bag of words of Reuters texts, "
    "sparse 'index:value' lines, labels +1/-1 in a separate file; read as 0-based indices into "
    "20000 columns, following the data mirror's MANIFEST (indices seen: 4..19999; "
    "scikit-hubness reads them 1-based, a shift of one column that changes no distance). The "
    "pinned training files are those of the scikit-hubness 0.21.2 wheel; the UCI copy of the "
    "challenge files is the download source. X is a scipy.sparse CSR matrix."
)


def _dexter(name: str, description: str, n_samples: int, files: tuple[FileSpec, ...],
            parts: tuple[str, ...] | None, note: str) -> DatasetSpec:
    """The DEXTER entry ``name`` of the ``files`` (data then labels of each split, the splits
    named by ``parts``), read sparse into 20000 columns; ``note`` ends its notes."""
    return common.entry(
        name, description, (n_samples, 20000, 2), ("zhang2017",),
        files=files,
        parser=parsers.sparse_index_value(20000, parts=parts),
        sparse=True,
        notes=_DEXTER_NOTES + note,
    )


SPECS.append(_dexter(
    "dexter",
    "NIPS 2003 DEXTER (text, 20000 sparse features), training split (300)",
    300,
    _DEXTER_TRAIN,
    None,
    " Zhang et al. 2017 do not say which split they use.",
))

SPECS.append(_dexter(
    "dexter_train_valid",
    "NIPS 2003 DEXTER, training (300) then validation (300) split",
    600,
    _DEXTER_TRAIN + (
        FileSpec("dexter/dexter_valid.data", None, f"{common.UCI}/dexter/DEXTER/dexter_valid.data"),
        FileSpec("dexter/dexter_valid.labels", None, f"{common.UCI}/dexter/dexter_valid.labels"),
    ),
    ("train", "valid"),
    " The validation split (labels released after the challenge; the test split has none) is "
    "not in the mirror: unpinned, downloaded from UCI.",
))


def _libsvm_bz2(name: str, description: str, shape: tuple[int, int, int], path: str,
                source: str, test_file: str) -> DatasetSpec:
    """The unpinned LIBSVM training file ``path`` (``<folder>/<file>.bz2`` on the LIBSVM site) of
    ``shape`` (n_samples, n_features, n_classes), read sparse and cached as arrays; ``source``
    and ``test_file`` are the first and last sentences of its notes."""
    name_dir, file_name = path.split("/")
    return common.entry(
        name, description, shape, ("zhang2017",),
        files=(
            FileSpec(f"{name}/{file_name}", None, f"{common.LIBSVM}/{name_dir}/{file_name}",
                     compression="bz2"),
        ),
        parser=parsers.libsvm(shape[1]),
        sparse=True,
        binary_cache=True,
        notes=f"{source} Not in the data mirror: unpinned (the sha256 of the decompressed content "
        f"of the first copy is recorded). {test_file} X is a scipy.sparse CSR matrix.",
    )


SPECS.append(_libsvm_bz2(
    "gisette",
    "NIPS 2003 GISETTE (digits 4 vs 9, 5000 features), LIBSVM scaled training set",
    (6000, 5000, 2),
    "binary/gisette_scale.bz2",
    "LIBSVM's gisette_scale (features scaled to [-1, 1]; Zhang et al. 2017 cite Chang & Lin "
    "2011, i.e. the LIBSVM data sets).",
    "The 1000-row test set is gisette_scale.t.bz2.",
))

SPECS.append(_libsvm_bz2(
    "news20",
    "20 Newsgroups, LIBSVM news20.scale: 62061 tf-idf features, 20 classes (15935)",
    (15935, 62061, 20),
    "multiclass/news20.scale.bz2",
    "LIBSVM's multiclass news20 training file (Lang 1995; 62061 features as in Zhang et al. "
    "2017).",
    "The 3993-row test file is news20.t.scale.bz2.",
))
