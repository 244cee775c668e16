"""Preprocessing fitted on the training part only; hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.decomposition import PCA
from sklearn.preprocessing import StandardScaler

from dml_bench.preprocess import NORMALIZATIONS, Preprocessing, downscale_images


def test_names():
    assert set(NORMALIZATIONS) == {"none", "zscore", "std", "minmax", "maxabs", "global_maxabs"}


def test_zscore_uses_training_statistics_only():
    # feature 1: train 1, 3 -> mean 2, std 1;  feature 2: train 10, 20 -> mean 15, std 5
    X_train = np.array([[1.0, 10.0], [3.0, 20.0]])
    X_test = np.array([[5.0, 0.0], [2.0, 15.0], [-1.0, 30.0]])
    tr, te = Preprocessing("zscore").apply(X_train, X_test)
    np.testing.assert_allclose(tr, [[-1, -1], [1, 1]])
    np.testing.assert_allclose(te, [[3, -3], [0, 0], [-3, 3]])
    # fitting on train + test (feature 1: mean 2, std 2) would give other numbers
    both = np.vstack([X_train, X_test])
    leaked = (X_test - both.mean(0)) / both.std(0)
    assert not np.allclose(te, leaked)
    # independent reference
    scaler = StandardScaler().fit(X_train)
    np.testing.assert_allclose(te, scaler.transform(X_test))


def test_zscore_three_points():
    # train 1, 3, 5: mean 3, population std sqrt(8/3) (as StandardScaler, ddof = 0)
    tr, te = Preprocessing("zscore").apply(np.array([[1.0], [3.0], [5.0]]), np.array([[7.0]]))
    s = np.sqrt(8 / 3)
    np.testing.assert_allclose(tr.ravel(), [-2 / s, 0, 2 / s])
    np.testing.assert_allclose(te.ravel(), [4 / s])


def test_minmax():
    # feature 1: train min 1, max 5 (range 4); feature 2: min -2, max 2 (range 4)
    X_train = np.array([[1.0, -2.0], [3.0, 2.0], [5.0, 0.0]])
    X_test = np.array([[7.0, 0.0], [0.0, -4.0]])
    tr, te = Preprocessing("minmax").apply(X_train, X_test)
    np.testing.assert_allclose(tr, [[0, 0], [0.5, 1], [1, 0.5]])
    np.testing.assert_allclose(te, [[1.5, 0.5], [-0.25, -0.5]])  # test values are not clipped


def test_none_leaves_data_alone():
    X_train, X_test = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[5.0, 6.0]])
    tr, te = Preprocessing("none").apply(X_train, X_test)
    np.testing.assert_array_equal(tr, X_train)
    np.testing.assert_array_equal(te, X_test)


@pytest.mark.parametrize("kind", ["zscore", "minmax"])
def test_constant_feature_no_nan(kind):
    X_train = np.array([[1.0, 4.0], [2.0, 4.0], [3.0, 4.0]])
    X_test = np.array([[2.0, 6.0]])
    tr, te = Preprocessing(kind).apply(X_train, X_test)
    assert np.isfinite(tr).all() and np.isfinite(te).all()
    # the constant feature is centred (shifted by 4: its mean and its min) and not scaled
    np.testing.assert_allclose(tr[:, 1], 0)
    np.testing.assert_allclose(te[:, 1], 2)


def test_nearly_constant_feature_from_rounding():
    # a constant 123.456 (or 1e6 + 0.1) repeated: numpy's mean is off by one ulp, so the computed
    # std is ~1e-14 (~1e-10) instead of 0; it must count as constant rather than blow the
    # feature up to O(1) noise
    n = 100
    X_train = np.column_stack([np.arange(float(n)), np.full(n, 123.456), np.full(n, 1e6 + 0.1)])
    assert X_train[:, 1].std() > 0 and X_train[:, 2].std() > 0  # the premise of the test
    X_test = X_train[:1].copy()
    for kind in ("zscore", "minmax"):
        tr, te = Preprocessing(kind).apply(X_train, X_test)
        assert np.abs(tr[:, 1:]).max() < 1e-6 and np.abs(te[:, 1:]).max() < 1e-6, kind


def test_inputs_not_modified_and_contiguous():
    X_train = np.asfortranarray(np.random.default_rng(0).normal(size=(6, 3)))
    X_test = np.random.default_rng(1).normal(size=(2, 3))
    copies = X_train.copy(), X_test.copy()
    tr, te = Preprocessing("zscore", pca=2).apply(X_train, X_test)
    np.testing.assert_array_equal(X_train, copies[0])
    np.testing.assert_array_equal(X_test, copies[1])
    assert tr.flags.c_contiguous and te.flags.c_contiguous


def test_pca_dimensions_and_reference():
    rng = np.random.default_rng(0)
    X_train = rng.normal(size=(40, 6)) @ rng.normal(size=(6, 6))
    X_test = rng.normal(size=(15, 6)) @ rng.normal(size=(6, 6))
    tr, te = Preprocessing("zscore", pca=2).apply(X_train, X_test)
    assert tr.shape == (40, 2) and te.shape == (15, 2)
    # PCA fitted on the z-scored training part (train statistics), components up to sign
    scaler = StandardScaler().fit(X_train)
    ref = PCA(n_components=2, svd_solver="full").fit(scaler.transform(X_train))
    np.testing.assert_allclose(np.abs(te), np.abs(ref.transform(scaler.transform(X_test))),
                               atol=1e-10)
    np.testing.assert_allclose(tr.mean(axis=0), 0, atol=1e-12)
    assert tr[:, 0].var() >= tr[:, 1].var()


@pytest.mark.parametrize("n_train, d, pca, expected", [(40, 5, 10, 5), (4, 6, 10, 4),
                                                        (40, 5, 5, 5), (40, 5, 1, 1)])
def test_pca_capped_by_data(n_train, d, pca, expected):
    rng = np.random.default_rng(1)
    tr, te = Preprocessing("none", pca=pca).apply(rng.normal(size=(n_train, d)),
                                                  rng.normal(size=(3, d)))
    assert tr.shape == (n_train, expected) and te.shape == (3, expected)


def test_sqrt_then_normalize():
    # sqrt runs before normalisation: train 1, 9 -> 1, 3 (mean 2, std 1); test 25 -> 5 -> 3
    tr, te = Preprocessing("zscore", sqrt=True).apply(np.array([[1.0], [9.0]]),
                                                      np.array([[25.0]]))
    np.testing.assert_allclose(tr.ravel(), [-1, 1])
    np.testing.assert_allclose(te.ravel(), [3])
    tr, te = Preprocessing("none", sqrt=True).apply(np.array([[4.0, 9.0]]), np.array([[0.0, 16.0]]))
    np.testing.assert_allclose(tr, [[2, 3]])
    np.testing.assert_allclose(te, [[0, 4]])


@pytest.mark.parametrize("where", ["train", "test"])
def test_sqrt_refuses_negatives(where):
    good, bad = np.array([[1.0, 4.0]]), np.array([[1.0, -0.5]])
    X_train, X_test = (bad, good) if where == "train" else (good, bad)
    with pytest.raises(ValueError, match="non-negative"):
        Preprocessing("none", sqrt=True).apply(X_train, X_test)


def test_downscale_block_average():
    # one 4×4 image 0..15 (row-major), 2×2 blocks:
    #  0  1 |  2  3        (0+1+4+5)/4 = 2.5     (2+3+6+7)/4 = 4.5
    #  4  5 |  6  7
    #  -----+------
    #  8  9 | 10 11        (8+9+12+13)/4 = 10.5  (10+11+14+15)/4 = 12.5
    # 12 13 | 14 15
    img = np.arange(16.0)[None, :]
    np.testing.assert_allclose(downscale_images(img, (4, 4), 2), [[2.5, 4.5, 10.5, 12.5]])
    np.testing.assert_allclose(downscale_images(img, (4, 4), 4), [[7.5]])
    np.testing.assert_allclose(downscale_images(img, (4, 4), 1), img)


def test_downscale_drops_trailing_pixels():
    # 3×5 image; factor 2 keeps the top-left 2×4: blocks (0,1,5,6) and (2,3,7,8)
    img = np.arange(15.0)[None, :]
    np.testing.assert_allclose(downscale_images(img, (3, 5), 2), [[3.0, 5.0]])


def test_downscale_in_pipeline():
    imgs = np.stack([np.arange(16.0), np.arange(16.0)[::-1]])
    tr, te = Preprocessing("none", downscale=2).apply(imgs, imgs[:1], image_shape=(4, 4))
    np.testing.assert_allclose(tr, [[2.5, 4.5, 10.5, 12.5], [12.5, 10.5, 4.5, 2.5]])
    np.testing.assert_allclose(te, [[2.5, 4.5, 10.5, 12.5]])
    with pytest.raises(ValueError, match="image_shape"):
        Preprocessing("none", downscale=2).apply(imgs, imgs)


def test_invalid_normalize():
    with pytest.raises(ValueError, match="normalize"):
        Preprocessing("l2")


def test_maxabs_scales_by_the_training_peak_and_keeps_sparse_data_sparse():
    import scipy.sparse as sp

    X_train = np.array([[2.0, 0.0, -4.0], [1.0, 0.0, 2.0]])
    X_test = np.array([[4.0, 3.0, 1.0]])
    dense = Preprocessing("maxabs").apply(X_train, X_test)
    np.testing.assert_allclose(dense[0], [[1.0, 0.0, -1.0], [0.5, 0.0, 0.5]])
    np.testing.assert_allclose(dense[1], [[2.0, 3.0, 0.25]])  # all-zero feature: scale 1
    sparse = Preprocessing("maxabs").apply(sp.csr_matrix(X_train), sp.csr_matrix(X_test))
    assert all(sp.isspmatrix_csr(part) for part in sparse)
    for got, want in zip(sparse, dense):
        np.testing.assert_allclose(got.toarray(), want)
    with pytest.raises(ValueError, match="would densify"):
        Preprocessing("zscore").apply(sp.csr_matrix(X_train), sp.csr_matrix(X_test))
    with pytest.raises(ValueError, match="pca"):
        Preprocessing("none", pca=2).apply(sp.csr_matrix(X_train), sp.csr_matrix(X_test))


def test_global_maxabs_divides_every_feature_by_one_training_peak():
    import scipy.sparse as sp

    X_train = np.array([[2.0, 0.0, -4.0], [1.0, 0.0, 2.0]])
    X_test = np.array([[4.0, 3.0, 1.0]])
    dense = Preprocessing("global_maxabs").apply(X_train, X_test)  # peak |−4| over all features
    np.testing.assert_allclose(dense[0], [[0.5, 0.0, -1.0], [0.25, 0.0, 0.5]])
    np.testing.assert_allclose(dense[1], [[1.0, 0.75, 0.25]])
    sparse = Preprocessing("global_maxabs").apply(sp.csr_matrix(X_train), sp.csr_matrix(X_test))
    assert all(sp.isspmatrix_csr(part) for part in sparse)
    for got, want in zip(sparse, dense):
        np.testing.assert_allclose(got.toarray(), want)
    zeros = Preprocessing("global_maxabs").apply(np.zeros((2, 2)), np.ones((1, 2)))
    np.testing.assert_allclose(zeros[1], [[1.0, 1.0]])  # all-zero training part: scale 1


def test_global_maxabs_keeps_nearest_neighbour_rankings_and_commutes_with_pca():
    rng = np.random.default_rng(0)
    X_train, X_test = rng.uniform(0, 255, (40, 6)), rng.uniform(0, 255, (5, 6))
    raw = Preprocessing("none", pca=3).apply(X_train, X_test)
    scaled = Preprocessing("global_maxabs", pca=3).apply(X_train, X_test)
    peak = np.abs(X_train).max()
    for got, want in zip(scaled, raw):  # PCA signs may flip per component
        np.testing.assert_allclose(np.abs(got) * peak, np.abs(want), rtol=1e-10)
    d_raw = ((raw[1][:, None] - raw[0][None]) ** 2).sum(-1)
    d_scaled = ((scaled[1][:, None] - scaled[0][None]) ** 2).sum(-1)
    np.testing.assert_array_equal(d_raw.argsort(axis=1), d_scaled.argsort(axis=1))


@pytest.mark.parametrize("sparse", [False, True])
def test_std_is_zscore_up_to_a_translation_and_keeps_sparse_data_sparse(sparse):
    """``std``: each feature over its training standard deviation (numpy's, ddof 0), no shift.
    Every difference of two points, hence every distance, equals z-score's; a constant feature
    keeps its scale (divisor 1), as z-score leaves it."""
    import scipy.sparse

    rng = np.random.default_rng(4)
    X_train = rng.normal(size=(30, 4)) * [1.0, 5.0, 0.1, 0.0] * (rng.random((30, 4)) < 0.5)
    X_test = rng.normal(size=(6, 4)) * (rng.random((6, 4)) < 0.5)
    std = X_train.std(axis=0)
    std[std == 0] = 1.0
    tr_z, te_z = Preprocessing("zscore").apply(X_train, X_test)
    wrap = scipy.sparse.csr_matrix if sparse else np.asarray
    tr, te = Preprocessing("std").apply(wrap(X_train), wrap(X_test))
    assert scipy.sparse.issparse(tr) == sparse and scipy.sparse.issparse(te) == sparse
    tr, te = (X.toarray() if sparse else X for X in (tr, te))
    np.testing.assert_allclose(tr, X_train / std, rtol=1e-12)
    np.testing.assert_allclose(te, X_test / std, rtol=1e-12)
    both, both_z = np.vstack([tr, te]), np.vstack([tr_z, te_z])
    np.testing.assert_allclose(both[:, None] - both[None], both_z[:, None] - both_z[None],
                               atol=1e-12)
