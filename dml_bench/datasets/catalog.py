"""The registered datasets: one :class:`DatasetSpec` per entry of ``DATASETS``.

Checksums are those of the verified offline mirror (``MANIFEST.tsv``). Network sources are the
commit-pinned files the mirror copied (byte-identical by construction) where the mirror kept them
as distributed, else the original UCI / AT&T location; every download is checked against the same
sha256, so a source serving other bytes is refused rather than loaded.
"""

from __future__ import annotations

from ..registry import Registry
from . import parsers
from .spec import DatasetSpec, FileSpec

DATASETS = Registry("dataset")

_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"
_GITHUB = "https://raw.githubusercontent.com"


def _register(spec: DatasetSpec) -> None:
    DATASETS.register(spec.name, spec)


# --------------------------------------------------------------------------- scikit-learn bundled


def _sklearn_bundled(name: str, loader: str, shape: tuple[int, int, int], description: str) -> None:
    _register(
        DatasetSpec(
            name=name,
            description=description,
            n_samples=shape[0],
            n_features=shape[1],
            n_classes=shape[2],
            papers=("ying2012",),
            files=(),
            parser=parsers.sklearn_bundled(loader),
            notes=f"Bundled with scikit-learn (sklearn.datasets.{loader}); class names as there.",
        )
    )


_sklearn_bundled("wine", "load_wine", (178, 13, 3), "UCI Wine: chemical analysis of three cultivars")
_sklearn_bundled("iris", "load_iris", (150, 4, 3), "Fisher's Iris: sepal / petal sizes of three species")
_sklearn_bundled(
    "breast_cancer",
    "load_breast_cancer",
    (569, 30, 2),
    "UCI Breast Cancer Wisconsin (Diagnostic), WDBC: malignant / benign",
)

# --------------------------------------------------------------------------- UCI text files

_register(
    DatasetSpec(
        name="pima",
        description="Pima Indians Diabetes (UCI): 8 clinical measurements, diabetes yes / no",
        n_samples=768,
        n_features=8,
        n_classes=2,
        papers=("ying2012",),
        files=(
            FileSpec(
                "pima/pima-indians-diabetes.csv",
                "6bfe5d0f379d17a0e0819b996407e3c09bf80febd4287f2ed212190dfff154af",
                f"{_GITHUB}/robintux/Datasets4StackOverFlowQuestions/"
                "f52993bfda077e6ebe17201b1a7394068d0ad6c2/pima-indians-diabetes.csv",
            ),
        ),
        parser=parsers.delimited_text(label_column=-1),
        notes="Original UCI layout (zeros encode missing values). Downloaded from the commit-pinned "
        "GitHub copy the mirror holds (values cross-checked with R mlbench PimaIndiansDiabetes). "
        "OpenML 37 'diabetes' has the same data as ARFF with other labels, so no sha256 to match.",
    )
)

_register(
    DatasetSpec(
        name="waveform",
        description="Breiman's Waveform v1 (UCI): 21 noisy attributes, 3 wave classes",
        n_samples=5000,
        n_features=21,
        n_classes=3,
        papers=("ying2012",),
        files=(
            FileSpec(
                "waveform/waveform.data",
                "da332f3121943f586826f5d1b2cdd354548c59f71ddbf28c4d0c2eb623d7bfc3",
                f"{_GITHUB}/diegoscr/Desafio2id3450/52fb3b9663b16f16e16d760fe0685bbb75b19456/waveform.txt",
            ),
        ),
        parser=parsers.delimited_text(label_column=-1),
        notes="UCI distributes only waveform.data.Z (compress); downloaded from the commit-pinned "
        "uncompressed GitHub copy the mirror holds.",
    )
)

_SEGMENT_DATA = FileSpec(
    "segment/segmentation.data",
    "b4226a708f25d44fbbe4eae36f0d66326bc46393534c2a0d2b9267ae1302002f",
    f"{_GITHUB}/newtonlb/ProjetoAM/0ec4ab9d39f10362448a519804dfe3fc2e7d908f/segmentation.data",
)
_SEGMENT_TEST = FileSpec(
    "segment/segmentation.test",
    "3b5aa7c3559fdc3a165e97d321809b81292084adfc112645e250d90321203685",
    f"{_GITHUB}/newtonlb/ProjetoAM/0ec4ab9d39f10362448a519804dfe3fc2e7d908f/segmentation.test",
)
_SEGMENT_NOTES = (
    "Original UCI files (5 header lines skipped); downloaded from the commit-pinned GitHub copy "
    "the mirror holds. Feature 3 (REGION-PIXEL-COUNT) is constant."
)

_register(
    DatasetSpec(
        name="segment",
        description="UCI Image Segmentation: 19 region features of outdoor images, 7 classes",
        n_samples=2310,
        n_features=19,
        n_classes=7,
        papers=("ying2012",),
        files=(_SEGMENT_DATA, _SEGMENT_TEST),
        parser=parsers.delimited_text(label_column=0, skip_lines=5, parts=("data", "test")),
        notes=_SEGMENT_NOTES,
    )
)

_register(
    DatasetSpec(
        name="segment_train",
        description="UCI Image Segmentation, the 210-row segmentation.data file only",
        n_samples=210,
        n_features=19,
        n_classes=7,
        papers=("kunapuli2012",),
        files=(_SEGMENT_DATA,),
        parser=parsers.delimited_text(label_column=0, skip_lines=5),
        notes=_SEGMENT_NOTES,
    )
)

_OPTDIGITS_TRA = FileSpec(
    "optdigits/optdigits.tra",
    "e1b683cc211604fe8fd8c4417e6a69f31380e0c61d4af22e93cc21e9257ffedd",
    f"{_UCI}/optdigits/optdigits.tra",
)
_OPTDIGITS_TES = FileSpec(
    "optdigits/optdigits.tes",
    "6ebb3d2fee246a4e99363262ddf8a00a3c41bee6014c373ed9d9216ba7f651b8",
    f"{_UCI}/optdigits/optdigits.tes",
)
_OPTDIGITS_NOTES = (
    "UCI Optical Recognition of Handwritten Digits, 8x8 blocks of counts 0..16. Downloaded from "
    "the UCI archive; the mirror files have the UCI sizes (optdigits.tes is byte-identical to "
    "scikit-learn's digits.csv.gz) but were not compared with a live download."
)

_register(
    DatasetSpec(
        name="optdigits",
        description="UCI optdigits, optdigits.tra then optdigits.tes",
        n_samples=5620,
        n_features=64,
        n_classes=10,
        papers=("ying2012",),
        files=(_OPTDIGITS_TRA, _OPTDIGITS_TES),
        parser=parsers.delimited_text(label_column=-1, parts=("train", "test")),
        image_shape=(8, 8),
        notes=_OPTDIGITS_NOTES,
    )
)

_register(
    DatasetSpec(
        name="optdigits_train",
        description="UCI optdigits, optdigits.tra only (Ying & Li 2012 Table 3: 70% of it = 2680)",
        n_samples=3823,
        n_features=64,
        n_classes=10,
        papers=("ying2012",),
        files=(_OPTDIGITS_TRA,),
        parser=parsers.delimited_text(label_column=-1),
        image_shape=(8, 8),
        notes=_OPTDIGITS_NOTES,
    )
)

# --------------------------------------------------------------------------- images

_register(
    DatasetSpec(
        name="orl_faces",
        description="AT&T (ORL) faces: 40 subjects x 10 grey images of 112x92 pixels",
        n_samples=400,
        n_features=112 * 92,
        n_classes=40,
        papers=("ying2012",),
        files=(
            FileSpec(
                "orl_faces/SHA256SUMS",
                "4eb747dbb7fc834f9c8d674678fcb6a2f53788d628f37892f50c9315980a2cee",
                "https://www.cl.cam.ac.uk/Research/DTG/attarchive/pub/data/att_faces.zip",
                members=r"(?:^|/)(s\d+/\d+\.pgm)$",
            ),
        ),
        parser=parsers.pgm_images(r"/s(\d+)/(\d+)\.pgm$"),
        image_shape=(112, 92),
        notes="Label = subject number N of folder sN. Each sN/M.pgm is verified against "
        "SHA256SUMS, itself verified by sha256. From the AT&T zip, the pgm files are extracted "
        "and their sha256 listing rebuilt and compared with the registered SHA256SUMS hash.",
    )
)

_register(
    DatasetSpec(
        name="usps",
        description="USPS handwritten digits 16x16, values in [0, 1]: train (7291) then test (2007)",
        n_samples=9298,
        n_features=256,
        n_classes=10,
        papers=("ying2012",),
        files=(
            FileSpec(
                "usps/usps.h5",
                "734f88c541104a956d88be2c95d03b4a463ffd74ccc2ba9c80841fb98e3fcb36",
                f"{_GITHUB}/niuers/Learning-From-Data-A-Short-Course/"
                "879a698b960e5867f7c2b11f8938fa89c3d21839/data/usps.h5",
            ),
        ),
        parser=parsers.hdf5_groups(("train", "test")),
        image_shape=(16, 16),
        notes="ElemStatLearn zip.train / zip.test rescaled as (x + 1) / 2, as HDF5; downloaded "
        "from the commit-pinned GitHub copy the mirror holds. The libsvm usps files use another "
        "preprocessing and are not mixed in.",
    )
)
