"""Rank-one eigen-update (Kunapuli & Shavlik 2012, §4) against numpy.linalg.eigh of the updated matrix."""

import numpy as np
import pytest

from dml_bench.solvers.eigen_update import _BISECT_AFTER, _secular_roots, rank_one_eigh_update


def random_orthogonal(rng, d):
    Q, R = np.linalg.qr(rng.normal(size=(d, d)))
    return Q * np.sign(np.diag(R))


def check_update(lam, V, alpha, u):
    """The update against an independent dense ``eigh`` of ``V diag(λ) Vᵀ + α u uᵀ``."""
    d = len(lam)
    A = (V * lam) @ V.T
    B = A + alpha * np.outer(u, u)
    B = (B + B.T) / 2
    new_lam, new_V = rank_one_eigh_update(lam, V, alpha, u)
    ref = np.linalg.eigvalsh(B)
    scale = max(np.abs(ref).max(), np.abs(lam).max(), 1e-300)
    assert new_lam.shape == (d,) and new_V.shape == (d, d)
    assert np.all(np.diff(new_lam) >= 0)  # ascending
    assert np.abs(new_lam - ref).max() <= 1e-10 * scale
    assert np.abs(new_V.T @ new_V - np.eye(d)).max() <= 1e-8
    assert np.abs((new_V * new_lam) @ new_V.T - B).max() <= 1e-9 * max(np.abs(B).max(), 1e-300)
    return new_lam, new_V


@pytest.mark.parametrize("d", [1, 2, 7, 40])
@pytest.mark.parametrize("alpha", [2.5, -2.5, 1e-3, -40.0])
def test_random_symmetric_matrices(d, alpha):
    rng = np.random.default_rng(d * 100 + int(abs(alpha) * 10))
    lam = np.sort(rng.normal(size=d))
    check_update(lam, random_orthogonal(rng, d), alpha, rng.normal(size=d))


def test_large_dimension():
    rng = np.random.default_rng(7)
    d = 300
    lam = np.sort(rng.exponential(size=d))
    check_update(lam, random_orthogonal(rng, d), 0.7, rng.normal(size=d))
    check_update(lam, random_orthogonal(rng, d), -0.7, rng.normal(size=d))


@pytest.mark.parametrize("alpha", [1.0, -1.0, 10.0])
def test_repeated_eigenvalues_deflate(alpha):
    rng = np.random.default_rng(3)
    lam = np.array([0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0, 3.0, 3.0, 3.0, 3.0])
    V = random_orthogonal(rng, len(lam))
    new_lam, _ = check_update(lam, V, alpha, rng.normal(size=len(lam)))
    # interlacing: a group of m equal eigenvalues keeps m − 1 copies exactly
    for value, m in ((0.0, 4), (1.0, 3), (3.0, 4)):
        assert np.sum(np.abs(new_lam - value) <= 1e-12) >= m - 1


def test_rank_deficient_and_zero_matrices():
    rng = np.random.default_rng(4)
    d = 9
    V = random_orthogonal(rng, d)
    for alpha in (1.0, -1.0):
        check_update(np.zeros(d), np.eye(d), alpha, rng.normal(size=d))  # 0·I
        check_update(np.zeros(d), V, alpha, rng.normal(size=d))
    lam = np.concatenate([np.zeros(6), [0.5, 2.0, 4.0]])  # PSD of rank 3
    new_lam, _ = check_update(lam, V, 0.3, rng.normal(size=d))
    assert new_lam.min() >= -1e-12  # PSD + PSD stays PSD
    assert np.sum(np.abs(new_lam) <= 1e-12) >= 5


def test_near_equal_eigenvalues_and_wide_dynamic_range():
    rng = np.random.default_rng(5)
    d = 40
    lam = np.sort(np.concatenate([1 + 1e-13 * rng.random(8), 1e-9 * rng.random(8),
                                  1e5 * rng.random(8), rng.random(16)]))
    V = random_orthogonal(rng, d)
    for alpha in (1.0, -1.0, 1e4, -1e-8):
        check_update(lam, V, alpha, rng.normal(size=d))


def test_u_with_zero_components_in_the_eigenbasis():
    rng = np.random.default_rng(6)
    d = 10
    lam = np.sort(rng.normal(size=d))
    V = random_orthogonal(rng, d)
    u = V[:, [0, 3, 4, 9]] @ rng.normal(size=4)  # z = Vᵀu has six zero components
    new_lam, _ = check_update(lam, V, 1.5, u)
    untouched = [1, 2, 5, 6, 7, 8]
    assert np.all(np.min(np.abs(new_lam[:, None] - lam[untouched]), axis=0) <= 1e-13)
    check_update(lam, V, -1.5, u)


def test_u_parallel_to_an_eigenvector():
    rng = np.random.default_rng(8)
    d = 8
    lam = np.array([0.0, 0.0, 0.0, 1.0, 2.0, 2.0, 5.0, 7.0])
    V = random_orthogonal(rng, d)
    for j, alpha in ((4, 3.0), (3, -0.5), (0, 2.0), (7, -10.0)):
        new_lam, _ = check_update(lam, V, alpha, 1.7 * V[:, j])
        expected = lam.copy()
        expected[j] += alpha * 1.7 ** 2
        np.testing.assert_allclose(new_lam, np.sort(expected), atol=1e-12)


@pytest.mark.parametrize("alpha", [1e-14, -1e-14, 1e-300, 0.0])
def test_tiny_alpha(alpha):
    rng = np.random.default_rng(9)
    d = 6
    lam = np.sort(rng.normal(size=d))
    V = random_orthogonal(rng, d)
    new_lam, _ = check_update(lam, V, alpha, rng.normal(size=d))
    np.testing.assert_allclose(new_lam, lam, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_secular_roots_interlace_and_solve_the_equation(seed):
    rng = np.random.default_rng(seed)
    k = 25
    delta = np.sort(rng.normal(size=k))
    w = rng.exponential(size=k) * 10.0 ** rng.uniform(-6, 1, size=k)
    origin, tau = _secular_roots(delta, w, _BISECT_AFTER)
    roots = delta[origin] + tau
    assert np.all(roots[:-1] > delta[:-1]) and np.all(roots[:-1] < delta[1:])
    assert delta[-1] < roots[-1] <= delta[-1] + w.sum()
    # f(root) = 0 in the sense of a backward error: |f| small against its terms
    terms = w / ((delta[None, :] - delta[origin][:, None]) - tau[:, None])
    f = 1 + terms.sum(axis=1)
    assert np.all(np.abs(f) <= 1e-12 * (1 + np.abs(terms).sum(axis=1)))
    # the roots are the eigenvalues of diag(δ) + √w √wᵀ
    s = np.sqrt(w)
    np.testing.assert_allclose(roots, np.linalg.eigvalsh(np.diag(delta) + np.outer(s, s)),
                               rtol=0, atol=1e-12 * np.abs(delta).max())


@pytest.mark.parametrize("k", [25, 80])
def test_secular_roots_fall_back_to_bisection(k):
    """Past ``bisect_after`` iterations every step bisects; with bisection from the first step
    the roots are still the eigenvalues of diag(δ) + √w √wᵀ."""
    rng = np.random.default_rng(3)
    delta = np.sort(rng.normal(size=k))
    w = rng.exponential(size=k)
    origin, tau = _secular_roots(delta, w, 0)
    s = np.sqrt(w)
    np.testing.assert_allclose(delta[origin] + tau,
                               np.linalg.eigvalsh(np.diag(delta) + np.outer(s, s)),
                               rtol=0, atol=1e-12 * np.abs(delta).max())


def test_chained_updates_stay_accurate():
    """Fifty successive updates (as inside MDML) against eigh of the accumulated matrix."""
    rng = np.random.default_rng(10)
    d = 12
    lam, V = np.zeros(d), np.eye(d)
    A = np.zeros((d, d))
    for _ in range(50):
        u, alpha = rng.normal(size=d), rng.normal()
        A += alpha * np.outer(u, u)
        lam, V = rank_one_eigh_update(lam, V, alpha, u)
    scale = np.abs(A).max()
    np.testing.assert_allclose(lam, np.linalg.eigvalsh(A), rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose((V * lam) @ V.T, A, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(V.T @ V, np.eye(d), rtol=0, atol=1e-8)


def test_precomputed_projection_is_used():
    rng = np.random.default_rng(11)
    d = 5
    lam, V = np.sort(rng.normal(size=d)), random_orthogonal(rng, d)
    u = rng.normal(size=d)
    a = rank_one_eigh_update(lam, V, 0.5, u)
    b = rank_one_eigh_update(lam, V, 0.5, u, z=V.T @ u)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
