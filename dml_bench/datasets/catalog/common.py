"""What the catalogue's entries share: their download locations, and a spec from a shape."""

from __future__ import annotations

from ..spec import DatasetSpec

UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"
GITHUB = "https://raw.githubusercontent.com"
LIBSVM = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets"
MNIST = "https://ossci-datasets.s3.amazonaws.com/mnist"
LFW = "http://vis-www.cs.umass.edu/lfw"


def entry(name: str, description: str, shape: tuple[int, int, int], papers: tuple[str, ...],
          **fields) -> DatasetSpec:
    """The :class:`DatasetSpec` ``name`` of ``shape`` (n_samples, n_features, n_classes); ``fields``
    are its other fields."""
    n_samples, n_features, n_classes = shape
    return DatasetSpec(name=name, description=description, n_samples=n_samples,
                       n_features=n_features, n_classes=n_classes, papers=papers, **fields)
