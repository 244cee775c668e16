"""The catalogue's generated sets: drawn from a fixed seed, without files.

``SPECS``, a list of :class:`~dml_bench.datasets.spec.DatasetSpec` in the catalogue's order.
"""

from __future__ import annotations

from .. import generators
from ..spec import DatasetSpec
from . import common

SPECS: list[DatasetSpec] = []


def _generated(name: str, description: str, shape: tuple[int, int, int], papers, parser,
               notes: str) -> DatasetSpec:
    """A dataset drawn by ``parser`` (a :func:`generators.generated` parser), without files."""
    return common.entry(
        name, description, shape, papers,
        files=(),
        parser=parser,
        generated=True,
        notes=notes,
    )


SPECS.append(_generated(
    "twin_peaks",
    "Twin peaks surface in 3-D (van der Maaten's drtoolbox), height rounded to 11 classes",
    (20000, 3, 11),
    ("shen2010",),
    generators.generated(generators.make_twin_peaks, n=20000, noise=0.05, seed=0),
    "Generated (seed 0) by generators.make_twin_peaks, drtoolbox's generate_data('twinpeaks', "
    "20000, 0.05): xy ~ U[-1, 1]^2, X = [xy, sin(pi x) tanh(3 y)] + 0.05 N(0, I), height x 10; "
    "y = height rounded, clipped to 0..10 (the toolbox's uint8 labels; Shen et al. 2010 Table I: "
    "3 dims, 11 classes, 14000 / 3000 / 3000). meta['manifold'] = xy.",
))

SPECS.append(_generated(
    "swiss_roll",
    "3-D Swiss roll (500 points) for the MVU experiment; y = roll parameter in 10 bins",
    (500, 3, 10),
    ("shen2014",),
    generators.generated(generators.make_swiss_roll, n=500, noise=0.0, n_bins=10, seed=0),
    "Generated (seed 0) by generators.make_swiss_roll: t = 1.5 pi (1 + 2 u), height = 21 v, "
    "X = [t cos t, height, t sin t] (no noise). Shen et al. 2014 embed it by MVU / FrobMetric "
    "with 6-NN (Figs. 4, 7-10). Not a classification set: y bins t into 10 equal-width bins; "
    "the continuous (t, height) are in meta['manifold'].",
))

SPECS.append(_generated(
    "waveform_generated",
    "Breiman's waveform generator: 21 noisy attributes, 3 classes (5000 samples)",
    (5000, 21, 3),
    (),
    generators.generated(generators.make_waveform, n=5000, seed=0),
    "Generated (seed 0) by generators.make_waveform (CART's waveform, version 1): each class "
    "mixes two of three triangular base waves with weight u ~ U(0, 1), plus N(0, 1) noise. The "
    "documented fallback for `waveform` (Ying & Li 2012) when the UCI file is absent; other "
    "draws of the same distribution, so numbers are comparable only statistically.",
))
