"""The registered datasets: one :class:`~dml_bench.datasets.spec.DatasetSpec` per entry of
``DATASETS``, from the modules of their kinds: :mod:`.uci` (tables), :mod:`.images`,
:mod:`.sparse` (high-dimensional text and digits), :mod:`.supplied` (features that users supply)
and :mod:`.generated`.

Checksums are those of the verified offline mirror (``MANIFEST.tsv``). Network sources are the
commit-pinned files the mirror copied (byte-identical by construction) where the mirror kept them
as distributed, else the original UCI / AT&T / LIBSVM / MNIST location; every download is checked
against the same sha256, so a source serving other bytes is refused rather than loaded. MNIST's
files are pinned by the sha256 of their decompressed content (the mirror re-gzipped them).

Files that are not in the mirror and whose bytes could not be seen when they were registered
(``gisette``, ``news20``, the DEXTER validation split, Roweis' USPS, the LFW SIFT descriptors,
the Face-Background histograms) have ``sha256=None``: trust on first use (see
:class:`~dml_bench.datasets.spec.FileSpec`), plus the shape check.

``papers`` keys: ``ying2012`` (DML-eig / LMNN-eig, JMLR 2012), ``shen2010`` (SDPMetric, 2010),
``shen2014`` (FrobMetric, dual approach, TNNLS 2014), ``kunapuli2012`` (MDML / COMID, ECML 2012),
``zhang2017`` (low-rank DML by SGD + incremental SVD, AAAI 2017), from their experiment sections.

Part of the dataset stage (:mod:`dml_bench.datasets`).
"""

from __future__ import annotations

from ...registry import Registry
from ..spec import as_dataset_spec
from . import generated, images, sparse, supplied, uci

#: the datasets by name; plug-ins of the entry-point group ``dml_bench.datasets``, and the
#: sources ``file:`` (``loader``) and ``openml:`` (``openml_source``)
DATASETS = Registry("dataset", group="dml_bench.datasets", adapt=as_dataset_spec)



def _register(*groups: list) -> None:
    """Register the specs of ``groups`` in this order, the catalogue's (``dmlbench datasets``)."""
    for group in groups:
        for spec in group:
            DATASETS.register(spec.name, spec)


_register(uci.BUNDLED, uci.TABLES, images.ORL_USPS, uci.MORE_TABLES, images.MNIST, images.SHEN2014,
          images.LFW, supplied.SHEN2014, sparse.SPECS, generated.SPECS, supplied.RETRIEVAL)
