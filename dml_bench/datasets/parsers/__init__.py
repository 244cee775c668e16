"""Reusable parsers: each factory returns ``parser(paths) -> Parsed`` for a file format.

Parsers only read; the loader checks the shape and class count against the spec. Files may be
gzip / bz2 compressed (by suffix ``.gz`` / ``.bz2``) where a parser says so.

Formats, by family: text (:mod:`.text`: delimited text (UCI), sparse ``index:value`` text with a
separate label file (NIPS 2003 feature-selection challenge), libsvm / svmlight), images
(:mod:`.images`: binary PGM, IDX (MNIST), MAT v5 matrices of images (Yale B, Roweis USPS)),
arrays (:mod:`.arrays`: HDF5 groups, ``.npz`` arrays, scikit-learn's bundled sets) and LFW
(:mod:`.lfw`: pair lists and per-image descriptor tables, see :func:`read_descriptor_table`).
Every factory and reader is importable from this package.

Bounded reading: before an array is read, the size its file declares (a ``.npy`` header, each
``.npz`` member's header, an HDF5 dataset's shape and dtype, a MAT variable's dimensions from
``scipy.io.whosmat``, an IDX header, a LIBSVM file's rows × largest feature index before it is
densified) is checked against the smaller of the memory available now and a declared maximum,
:data:`dml_bench.common.resources.MAX_ARRAY_BYTES` (64 GiB; the environment variable
``DMLBENCH_MAX_ARRAY_BYTES``, a number of bytes, replaces it). A file beyond it is refused with
:class:`~dml_bench.datasets.errors.DataTooLarge` (a ``DataNotAvailable``: the dataset is skipped
with the reason), e.g. ``/w/big.npz: X declares an array of 26.2 TiB (3000000 × 1200000
float64), more than the 20.1 GiB of memory available``, so that a few bytes cannot exhaust the
memory. Delimited text, PGM and index:value files need no such check: their arrays are at most a
few times the size of their (decompressed) text, which the catalogue pins by its sha256.

Part of the dataset stage (:mod:`dml_bench.datasets`).
"""

from .arrays import hdf5_groups, labelled_histograms, npz_arrays, sklearn_bundled
from .images import idx_files, mat_class_blocks, mat_images, pgm_images, read_idx, read_pgm
from .lfw import (LFW_IMAGE_NAME, LFWPair, lfw_descriptors, lfw_pair_list, read_descriptor_table,
                  read_lfw_pairs)
from .text import delimited_text, libsvm, read_index_value, sparse_index_value, user_libsvm

__all__ = ["LFW_IMAGE_NAME", "LFWPair", "delimited_text", "hdf5_groups", "idx_files",
           "labelled_histograms", "lfw_descriptors", "lfw_pair_list", "libsvm", "mat_class_blocks",
           "mat_images", "npz_arrays", "pgm_images", "read_descriptor_table", "read_idx",
           "read_index_value", "read_lfw_pairs", "read_pgm", "sklearn_bundled",
           "sparse_index_value", "user_libsvm"]
