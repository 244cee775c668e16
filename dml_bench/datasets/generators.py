"""Synthetic datasets generated deterministically from a seed (no files; status ``generated``).

Each ``make_*`` function returns a :class:`~dml_bench.datasets.spec.Parsed`; :func:`generated`
turns one, with fixed parameters, into a registry parser. Random numbers come from
``numpy.random.RandomState(seed)``, whose streams NumPy keeps stable across versions, so a seed
gives the same data everywhere. The formulas are those of the cited generators; the random
streams are of course not MATLAB's, so the points differ from the authors' draws.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from .spec import Parsed, Parser


def generated(make: Callable[..., Parsed], **params) -> Parser:
    """A registry parser calling ``make(**params)`` (the paths it receives are empty)."""

    def parse(paths: list[Path]) -> Parsed:
        if paths:
            raise ValueError(f"{make.__name__} takes no files, got {paths}")
        return make(**params)

    return parse


def make_twin_peaks(n: int = 20000, *, noise: float = 0.05, seed: int = 0) -> Parsed:
    """Twin peaks, as in van der Maaten's Matlab Toolbox for Dimensionality Reduction.

    ``generate_data('twinpeaks', n, noise)`` of drtoolbox::

        xy = 1 - 2 * rand(2, n)                                  # uniform on [-1, 1]^2
        X  = [xy; sin(pi * xy(1,:)) .* tanh(3 * xy(2,:))]' + noise * randn(n, 3)
        X(:,3) = X(:,3) * 10                                     # the height, noise included
        labels = uint8(X(:,3))                                   # toolbox versions of 2008-10

    ``y`` follows those labels: the height rounded half away from zero, clipped to
    ``0..10`` (``uint8`` saturates negative heights to 0; the clip at 10 keeps the rare noisy
    heights above 10.5 in the top class), which gives the 11 classes of Shen et al. (2010),
    Table I. Later toolbox versions label a 2-class checkerboard instead. ``meta['manifold']``
    holds the 2-D coordinates ``xy`` (n, 2).

    Parameters
    ----------
    n : int
        Number of points (Shen et al. 2010: 14000 + 3000 + 3000 = 20000).
    noise : float
        Standard deviation of the Gaussian noise (before the height is scaled by 10);
        drtoolbox's default 0.05.
    seed : int
    """
    rng = np.random.RandomState(seed)
    xy = 1 - 2 * rng.uniform(size=(n, 2))
    X = np.column_stack([xy, np.sin(np.pi * xy[:, 0]) * np.tanh(3 * xy[:, 1])])
    X += noise * rng.standard_normal((n, 3))
    X[:, 2] *= 10
    labels = np.clip(np.floor(X[:, 2] + 0.5), 0, 10).astype(np.int64)
    return Parsed(X, labels, {"manifold": xy})


def make_swiss_roll(n: int = 500, *, noise: float = 0.0, n_bins: int = 10, seed: int = 0) -> Parsed:
    """The 3-D Swiss roll (Roweis & Saul's ``swissroll.m``, as used for MVU / Isomap / LLE).

    ::

        t      = (3 pi / 2) (1 + 2 u1)     u1, u2 ~ U(0, 1)   (t in [1.5 pi, 4.5 pi])
        height = 21 u2
        X      = [t cos t, height, t sin t] + noise * N(0, I_3)

    (scikit-learn's ``make_swiss_roll`` uses the same formula.) The data is a manifold, not a
    classification set: ``y`` is the roll parameter ``t`` binned into ``n_bins`` equal-width
    bins over ``[1.5 pi, 4.5 pi]`` (0 = innermost), and the continuous coordinates
    ``(t, height)`` are in ``meta['manifold']`` (n, 2).

    Parameters
    ----------
    n : int
        Number of points (Shen et al. 2014, Fig. 4: 500).
    noise : float
    n_bins : int
    seed : int
    """
    rng = np.random.RandomState(seed)
    t = 1.5 * np.pi * (1 + 2 * rng.uniform(size=n))
    height = 21 * rng.uniform(size=n)
    X = np.column_stack([t * np.cos(t), height, t * np.sin(t)])
    if noise:
        X += noise * rng.standard_normal((n, 3))
    labels = np.minimum(((t - 1.5 * np.pi) / (3 * np.pi) * n_bins).astype(np.int64), n_bins - 1)
    return Parsed(X, labels, {"manifold": np.column_stack([t, height])})


def waveform_bases() -> np.ndarray:
    """Breiman's three base waves ``h1, h2, h3`` on ``i = 1..21``, shape (3, 21)::

        h1(i) = max(6 - |i - 11|, 0),   h2(i) = h1(i - 4),   h3(i) = h1(i + 4)
    """
    i = np.arange(1, 22)
    return np.maximum(6 - np.abs(i[None, :] - np.array([[11], [15], [7]])), 0).astype(np.float64)


def make_waveform(n: int = 5000, *, seed: int = 0) -> Parsed:
    """Breiman's waveform generator (CART, 1984, section 2.6.2; UCI "waveform", version 1).

    Each class is a random convex combination of two of the base waves
    (:func:`waveform_bases`) plus unit Gaussian noise on each of the 21 attributes::

        class 0: u h1 + (1 - u) h2     class 1: u h1 + (1 - u) h3     class 2: u h2 + (1 - u) h3
        u ~ U(0, 1), noise ~ N(0, 1), classes equiprobable

    The documented fallback for ``waveform`` (Ying & Li 2012) when its file is absent: same
    distribution, other draws (the class numbering may differ from the UCI file's).

    Parameters
    ----------
    n : int
        Number of samples (the UCI file has 5000).
    seed : int
    """
    rng = np.random.RandomState(seed)
    h1, h2, h3 = waveform_bases()
    pairs = np.array([[h1, h2], [h1, h3], [h2, h3]])  # (class, 2, 21)
    labels = rng.randint(3, size=n)
    u = rng.uniform(size=(n, 1))
    X = u * pairs[labels, 0] + (1 - u) * pairs[labels, 1] + rng.standard_normal((n, 21))
    return Parsed(X, labels.astype(np.int64), {})
