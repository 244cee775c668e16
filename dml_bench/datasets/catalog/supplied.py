"""The catalogue's data supplied by users: features that the papers used and that neither the
mirror nor a stable URL provides. Each is one .npz with X (n, d) and y (n,), checked for its
count, dimension and classes on load.

``SHEN2014`` (the action, teapot and face data of Shen et al. 2014) and ``RETRIEVAL`` (Shen et
al. 2010's Face-Background histograms), each a list of
:class:`~dml_bench.datasets.spec.DatasetSpec` in the catalogue's order.
"""

from __future__ import annotations

from .. import parsers
from ..spec import DatasetSpec, FileSpec
from . import common

SHEN2014: list[DatasetSpec] = []
RETRIEVAL: list[DatasetSpec] = []


def _user_npz(name, description, shape, papers, path, obtain, notes, **spec) -> DatasetSpec:
    """A user-supplied .npz (X, y) of ``shape`` (n, d, classes), unpinned; ``spec`` holds the
    entry's other fields (``class_names``, ``image_shape``, ``parser``, which defaults to
    :func:`parsers.npz_arrays`)."""
    spec.setdefault("parser", parsers.npz_arrays("X", "y"))
    return common.entry(name, description, shape, papers,
                        files=(FileSpec(path, None, None, obtain=obtain),), notes=notes, **spec)


_NPZ_HOW = ("save it with numpy.savez(path, X=X, y=y) and put it where the error message says "
            "(the cache, or a mirror folder named by DMLBENCH_DATA_MIRROR / --data-mirror)")

SHEN2014.append(_user_npz(
    "kth_actions", "KTH human actions: 2387 clips, 500-d bag of spatio-temporal words, 6 actions",
    (2387, 500, 6), ("shen2014",), "kth_actions/kth_actions.npz",
    "the clips are at https://www.csc.kth.se/cvap/actions/ (Schuldt et al. 2004); Shen et al. "
    "(2014, Table IV) describe each clip by a 500-word histogram of space-time interest points "
    "and do not publish the histograms: compute them (X (2387, 500), y = action 0..5) and "
    + _NPZ_HOW + ".",
    "Not in the data mirror; user-supplied features, unpinned. Table IV: 1529 training / 858 "
    "test clips, 10 runs.",
    class_names=("boxing", "handclapping", "handwaving", "jogging", "running", "walking")))

SHEN2014.append(_user_npz(
    "weizmann_actions", "Weizmann actions: 5594 frames/segments, 286-d descriptors, 10 actions",
    (5594, 286, 10), ("shen2014",), "weizmann_actions/weizmann_actions.npz",
    "the videos are at https://www.wisdom.weizmann.ac.il/~vision/SpaceTimeActions.html "
    "(Gorelick et al. 2007); Shen et al. (2014, Table IV) use 5594 286-d descriptors that they "
    "do not publish: compute them (X (5594, 286), y = action 0..9) and " + _NPZ_HOW + ".",
    "Not in the data mirror; user-supplied features, unpinned. Table IV: 3920 training / 1674 "
    "test, 10 runs."))

SHEN2014.append(_user_npz(
    "teapot", "Teapot: 200 colour images (101 x 76 x 3) of a teapot rotated through 360 degrees",
    (200, 23028, 200), ("shen2014",), "teapot/teapot.npz",
    "Weinberger & Saul's teapot images (the MVU data of Shen et al. 2014, Fig. 5, ref. [11]); "
    "from their teapots.mat take every second of the 400 images as rows of X (200, 23028) "
    "and y = the rotation index 0..199, then " + _NPZ_HOW + ".",
    "Not in the data mirror; unpinned. Not a classification set: y orders the images by angle "
    "(for colouring embeddings only)."))

SHEN2014.append(_user_npz(
    "frey_faces", "Frey faces: 1965 grey images (28 x 20) of one face in varied poses and expressions",
    (1965, 560, 1), ("shen2014",), "frey_faces/frey_faces.npz",
    "Brendan Frey's face images (Roweis' frey_rawface.mat, the face data of Shen et al. 2014, "
    "Fig. 6): X = the 1965 images as rows (560 = 28 x 20 pixels, row-major), y = zeros, then "
    + _NPZ_HOW + ".",
    "Not in the data mirror; unpinned. Not a classification set: y is constant.",
    image_shape=(28, 20)))


RETRIEVAL.append(_user_npz(
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
    class_names=("background", "face"), parser=parsers.labelled_histograms({1: 435, 0: 520})))
