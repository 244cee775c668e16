"""Preprocessing fitted on the training part of a split and applied to its test part.

Steps run in a fixed order: ``downscale`` (image block averaging) → ``sqrt`` → ``normalize``
(``zscore`` / ``minmax`` / ``maxabs`` / ``global_maxabs`` / ``none``) → ``pca``. Papers differ on
normalisation (Ying & Li 2012 does not state it; Shen et al.'s Euclidean errors imply none), so it
is always explicit in the config. Sparse (CSR) data stay sparse: only ``none``, ``std``, ``maxabs``
and ``global_maxabs`` (which keep zeros zero) apply to them; steps that would densify are refused
with the reason.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import scipy.sparse
from sklearn.decomposition import PCA
from sklearn.preprocessing import StandardScaler

NORMALIZATIONS = ("none", "zscore", "std", "minmax", "maxabs", "global_maxabs")
#: normalisations that only divide (no shift): zeros stay zero, sparse data stay sparse
DIVISIVE = ("std", "maxabs", "global_maxabs")
DTYPES = ("float64", "float32")


@dataclass(frozen=True)
class Preprocessing:
    """Preprocessing options of one dataset entry of a config.

    Parameters
    ----------
    normalize : {"none", "zscore", "std", "minmax", "maxabs", "global_maxabs"}
        Scaling fitted on the training part. ``zscore`` and ``minmax`` are per feature (constant
        features are left centred); ``std`` divides each feature by its training standard
        deviation without centring (scikit-learn's ``StandardScaler(with_mean=False)``): z-score up
        to a translation, which changes no difference of two points and hence no distance, for
        sparse data, which it keeps sparse; ``maxabs`` divides each feature by its largest absolute
        training value (no shift), which keeps sparse data sparse; ``global_maxabs`` divides all
        features by one number, the largest absolute training value over every feature (pixels
        0–255 → 0–1): distances shrink uniformly, so the Euclidean geometry (every nearest-neighbour
        ranking) is unchanged and only solvers whose problem is not scale invariant notice.
    pca : int or None
        Number of principal components kept (fitted on the training part).
    sqrt : bool
        Element-wise square root of (non-negative) features, as in Ying & Li's LFW "Square Root".
    downscale : int or None
        Block-average images by this factor per axis (ORL 112×92 → 56×46 with 2); needs the
        dataset's ``image_shape``.
    dtype : {"float64", "float32"}
        Floating type of the preprocessed features (the last step). Solvers whose
        ``preserves_float32`` is true then compute their hot products in single precision (half
        the bytes, up to twice the GEMM rate); the others convert back to float64.
    """

    normalize: str = "zscore"
    pca: int | None = None
    sqrt: bool = False
    downscale: int | None = None
    dtype: str = "float64"

    def __post_init__(self):
        if self.normalize not in NORMALIZATIONS:
            raise ValueError(f"normalize must be one of {NORMALIZATIONS}, got {self.normalize!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {self.dtype!r}")

    def to_dict(self) -> dict:
        """The options as a dict; ``dtype`` only when not the default (so the ids and records of
        runs made before the option existed stay the same)."""
        d = asdict(self)
        if d["dtype"] == "float64":
            del d["dtype"]
        return d

    def apply(self, X_train, X_test, image_shape=None):
        """Fit on ``X_train`` and transform both parts; returns ``(X_train, X_test)``."""
        if scipy.sparse.issparse(X_train):
            return self._apply_sparse(X_train, X_test)
        if self.downscale:
            if image_shape is None:
                raise ValueError("downscale needs a dataset with an image_shape")
            X_train, X_test = (downscale_images(X, image_shape, self.downscale) for X in (X_train, X_test))
        if self.sqrt:
            if X_train.min() < 0 or X_test.min() < 0:
                raise ValueError("sqrt preprocessing needs non-negative features")
            X_train, X_test = np.sqrt(X_train), np.sqrt(X_test)
        if self.normalize in DIVISIVE:
            scale = _divisor(X_train, self.normalize)
            X_train, X_test = X_train / scale, X_test / scale
        elif self.normalize != "none":
            shift, scale = _normalization(X_train, self.normalize)
            X_train, X_test = (X_train - shift) / scale, (X_test - shift) / scale
        if self.pca:
            n_comp = min(self.pca, *X_train.shape)
            pca = PCA(n_components=n_comp, svd_solver="full").fit(X_train)
            X_train, X_test = pca.transform(X_train), pca.transform(X_test)
        return (np.ascontiguousarray(X_train, dtype=self.dtype),
                np.ascontiguousarray(X_test, dtype=self.dtype))


    def _apply_sparse(self, X_train, X_test):
        dense_steps = [name for name, on in (("downscale", self.downscale), ("sqrt", self.sqrt),
                                             ("pca", self.pca),
                                             (f"normalize: {self.normalize}",
                                              self.normalize not in ("none", *DIVISIVE))) if on]
        if dense_steps:
            raise ValueError(f"{', '.join(dense_steps)} would densify sparse data; use "
                             f"normalize: none or {' or '.join(DIVISIVE)}")
        X_train, X_test = scipy.sparse.csr_matrix(X_train), scipy.sparse.csr_matrix(X_test)
        if self.normalize in DIVISIVE:
            scale = _divisor(X_train, self.normalize)
            inv = scipy.sparse.diags(np.broadcast_to(1.0 / scale, X_train.shape[1]))
            X_train, X_test = (X_train @ inv).tocsr(), (X_test @ inv).tocsr()
        return X_train.astype(self.dtype), X_test.astype(self.dtype)


def _divisor(X, kind: str) -> np.ndarray:
    """The divisor of a :data:`DIVISIVE` normalisation fitted on ``X`` (dense or sparse): per
    feature, or one number for ``global_maxabs``; 1 where it is 0."""
    if kind == "std":  # StandardScaler's variance (sparse-aware) and its zero-variance rule
        return StandardScaler(with_mean=False).fit(X).scale_
    return _maxabs(X, per_feature=kind == "maxabs")


def _maxabs(X, per_feature: bool = True) -> np.ndarray:
    """Largest absolute value per feature, or over all features as a 0-d array (1 where 0)."""
    axis = 0 if per_feature else None
    peak = abs(X).max(axis=axis)
    peak = np.asarray(peak.todense() if scipy.sparse.issparse(peak) else peak, dtype=float)
    peak = peak.ravel() if per_feature else peak.reshape(())
    return np.where(peak > 0, peak, 1.0)


def _normalization(X: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    if kind == "zscore":
        shift, scale = X.mean(axis=0), X.std(axis=0)
    else:  # minmax
        shift, scale = X.min(axis=0), X.max(axis=0) - X.min(axis=0)
    scale = np.where(scale > 1e-12 * max(1.0, np.abs(shift).max()), scale, 1.0)
    return shift, scale


def downscale_images(X: np.ndarray, image_shape: tuple[int, int], factor: int) -> np.ndarray:
    """Block-average each row's ``image_shape`` image by ``factor`` (trailing pixels dropped)."""
    h, w = image_shape
    hh, ww = h // factor, w // factor
    imgs = X.reshape(len(X), h, w)[:, : hh * factor, : ww * factor]
    return imgs.reshape(len(X), hh, factor, ww, factor).mean(axis=(2, 4)).reshape(len(X), hh * ww)
