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

SPECS.append(
    DatasetSpec(
        name="dexter",
        description="NIPS 2003 DEXTER (text, 20000 sparse features), training split (300)",
        n_samples=300,
        n_features=20000,
        n_classes=2,
        papers=("zhang2017",),
        files=_DEXTER_TRAIN,
        parser=parsers.sparse_index_value(20000),
        sparse=True,
        notes=_DEXTER_NOTES + " Zhang et al. 2017 do not say which split they use.",
    )
)

SPECS.append(
    DatasetSpec(
        name="dexter_train_valid",
        description="NIPS 2003 DEXTER, training (300) then validation (300) split",
        n_samples=600,
        n_features=20000,
        n_classes=2,
        papers=("zhang2017",),
        files=_DEXTER_TRAIN
        + (
            FileSpec("dexter/dexter_valid.data", None, f"{common.UCI}/dexter/DEXTER/dexter_valid.data"),
            FileSpec("dexter/dexter_valid.labels", None, f"{common.UCI}/dexter/dexter_valid.labels"),
        ),
        parser=parsers.sparse_index_value(20000, parts=("train", "valid")),
        sparse=True,
        notes=_DEXTER_NOTES + " The validation split (labels released after the challenge; "
        "the test split has none) is not in the mirror: unpinned, downloaded from UCI.",
    )
)

SPECS.append(
    DatasetSpec(
        name="gisette",
        description="NIPS 2003 GISETTE (digits 4 vs 9, 5000 features), LIBSVM scaled training set",
        n_samples=6000,
        n_features=5000,
        n_classes=2,
        papers=("zhang2017",),
        files=(
            FileSpec(
                "gisette/gisette_scale.bz2",
                None,
                f"{common.LIBSVM}/binary/gisette_scale.bz2",
                compression="bz2",
            ),
        ),
        parser=parsers.libsvm(5000),
        sparse=True,
        binary_cache=True,
        notes="LIBSVM's gisette_scale (features scaled to [-1, 1]; Zhang et al. 2017 cite "
        "Chang & Lin 2011, i.e. the LIBSVM data sets). Not in the data mirror: unpinned (the sha256 "
        "of the decompressed content of the first copy is recorded). The 1000-row test set is "
        "gisette_scale.t.bz2. X is a scipy.sparse CSR matrix.",
    )
)

SPECS.append(
    DatasetSpec(
        name="news20",
        description="20 Newsgroups, LIBSVM news20.scale: 62061 tf-idf features, 20 classes (15935)",
        n_samples=15935,
        n_features=62061,
        n_classes=20,
        papers=("zhang2017",),
        files=(
            FileSpec(
                "news20/news20.scale.bz2",
                None,
                f"{common.LIBSVM}/multiclass/news20.scale.bz2",
                compression="bz2",
            ),
        ),
        parser=parsers.libsvm(62061),
        sparse=True,
        binary_cache=True,
        notes="LIBSVM's multiclass news20 training file (Lang 1995; 62061 features as in Zhang "
        "et al. 2017). Not in the data mirror: unpinned (the sha256 of the decompressed content of "
        "the first copy is recorded). The 3993-row test file is news20.t.scale.bz2. X is a "
        "scipy.sparse CSR matrix.",
    )
)
