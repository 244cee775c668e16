"""The shared constraint algebra and eigensolvers against their definitions, term by term."""

import numpy as np
import pytest

from dml_bench.solvers import linalg, top_eigen
from dml_bench.solvers.linalg import PairOuterSum, pair_sq_distances, weighted_pair_outer_sum
from dml_bench.solvers.top_eigen import (COMPILED_GRAM_MAX_DIM, GramTopEigenvector,
                                         uses_pair_laplacian)


def explicit_sum(X, pairs, w):
    """``Σ_p w_p (x_a − x_b)(x_a − x_b)ᵀ`` one outer product at a time."""
    return sum(wp * np.outer(X[a] - X[b], X[a] - X[b]) for (a, b), wp in zip(pairs, w))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pair_sq_distances_are_the_mahalanobis_distances(dtype):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 5))
    F = rng.normal(size=(5, 3))
    pairs = rng.integers(0, 12, size=(40, 2))
    M = F @ F.T
    expected = np.array([(X[a] - X[b]) @ M @ (X[a] - X[b]) for a, b in pairs])
    Z = (X @ F).astype(dtype)
    # float32 Z: the mapped points carry float32 round-off, the sum is accumulated in float64
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(pair_sq_distances(Z, pairs), expected, rtol=rtol)
    np.testing.assert_allclose(pair_sq_distances(np.asfortranarray(Z), pairs.T.copy().T),
                               expected, rtol=rtol)
    assert pair_sq_distances(Z, np.zeros((0, 2), dtype=int)).shape == (0,)


def test_pair_quadratic_forms_are_the_forms_of_an_indefinite_w():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(12, 5))
    G = rng.normal(size=(5, 5))
    W = G + G.T  # symmetric, eigenvalues of both signs
    pairs = rng.integers(0, 12, size=(40, 2))
    expected = np.array([(X[a] - X[b]) @ W @ (X[a] - X[b]) for a, b in pairs])
    np.testing.assert_allclose(linalg.pair_quadratic_forms(X @ W, X, pairs), expected,
                               rtol=1e-12, atol=1e-12 * np.abs(expected).max())
    assert linalg.pair_quadratic_forms(X @ W, X, np.zeros((0, 2), dtype=int)).shape == (0,)


@pytest.mark.parametrize("n_pairs", [6, 60])  # fewer pairs than points: differences; more: Laplacian
def test_pair_outer_sum_is_the_explicit_sum_for_every_call(n_pairs):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(15, 4)) + 3.0
    pairs = rng.integers(0, 15, size=(n_pairs, 2))
    outer_sum = PairOuterSum(X, pairs)
    for _ in range(3):  # one operator, several weight vectors (signed, with zeros)
        w = rng.normal(size=n_pairs) * (rng.random(n_pairs) < 0.7)
        expected = explicit_sum(X, pairs, w)
        np.testing.assert_allclose(outer_sum(w), expected, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(weighted_pair_outer_sum(X, pairs, w), expected,
                                   rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("n_pairs", [6, 60])
@pytest.mark.parametrize("n_nonzero", [0, 1, 3])
def test_pair_outer_sum_of_sparse_weights_is_the_explicit_sum(n_pairs, n_nonzero):
    """Weights that reach only some points (a hinge loss's few active triplets), or none: the
    rows left out of the GEMM are those whose contribution is exactly zero."""
    rng = np.random.default_rng(n_pairs + n_nonzero)
    X = rng.normal(size=(15, 4)) + 3.0
    pairs = rng.integers(0, 15, size=(n_pairs, 2))
    outer_sum = PairOuterSum(X, pairs)
    for _ in range(3):
        w = np.zeros(n_pairs)
        w[rng.choice(n_pairs, n_nonzero, replace=False)] = rng.normal(size=n_nonzero)
        np.testing.assert_allclose(outer_sum(w), explicit_sum(X, pairs, w), rtol=1e-10,
                                   atol=1e-10)
    w = rng.normal(size=n_pairs)                   # then every weight nonzero, same operator
    np.testing.assert_allclose(outer_sum(w), explicit_sum(X, pairs, w), rtol=1e-10, atol=1e-10)
    w[rng.random(n_pairs) < 0.8] = 0.0             # and sparse again: no row of a call before
    np.testing.assert_allclose(outer_sum(w), explicit_sum(X, pairs, w), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("expected", [None, 2, 15, 150])  # 15 ≤ 0.1 d < 150: both drivers
@pytest.mark.parametrize("n_above", [0, 1, 12])
def test_eigh_above_gives_numpys_eigenpairs_above_the_threshold(expected, n_above, eigh_drivers):
    """The eigenpairs above ``lower`` of numpy's ``eigh`` (eigenvalues, and the projector onto
    their span, which does not depend on the eigenvectors' signs), read from the lower triangle
    of a C-ordered matrix, whatever the guess ``expected``; the value-range driver ``syevr``
    only when the guess is at most a tenth of d."""
    from dml_bench.solvers import linalg
    rng = np.random.default_rng(n_above)
    d, lower = 200, 0.3
    Q = np.linalg.qr(rng.normal(size=(d, d)))[0]
    spectrum = np.r_[rng.uniform(-2.0, 0.29, d - n_above), rng.uniform(0.31, 2.0, n_above)]
    A = (Q * spectrum) @ Q.T
    junk = np.tril(A) + np.triu(rng.normal(size=(d, d)), 1)
    before = junk.copy()
    lam, V = linalg.eigh_above(junk, lower, expected)
    np.testing.assert_array_equal(junk, before)  # kept for a fallback driver
    ref_lam, ref_V = np.linalg.eigh(A)
    above = ref_lam > lower
    assert eigh_drivers == ["evr" if expected is not None and expected <= d / 10 else "evd"]
    assert lam.shape == (n_above,) and V.shape == (d, n_above) and np.all(np.diff(lam) >= 0)
    eps = np.finfo(float).eps
    np.testing.assert_allclose(lam, ref_lam[above], rtol=0, atol=100 * d * eps)
    np.testing.assert_allclose(V @ V.T, ref_V[:, above] @ ref_V[:, above].T, rtol=0,
                               atol=1e-10)


@pytest.mark.parametrize("d", [1, 2, 60])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_eigh_all_is_an_eigendecomposition(d, dtype):
    """Every eigenpair, ascending, with the residual and orthogonality of a backward stable
    driver (a small multiple of d ε ‖A‖), read from the lower triangle; d = 1 is the size whose
    divide-and-conquer workspace scipy 1.11 gets wrong."""
    from dml_bench.solvers.linalg import eigh_all
    rng = np.random.default_rng(d)
    G = rng.normal(size=(d, d))
    A = (G + G.T).astype(dtype)
    lower = np.tril(A) + np.triu(rng.normal(size=(d, d)), 1).astype(dtype)  # junk upper part
    lam, V = eigh_all(lower)
    eps = np.finfo(dtype).eps
    norm = np.abs(np.linalg.eigvalsh(A.astype(np.float64))).max()
    assert lam.shape == (d,) and V.shape == (d, d) and np.all(np.diff(lam) >= 0)
    assert np.abs(A @ V - V * lam).max() <= 10 * d * eps * norm
    assert np.abs(V.T @ V - np.eye(d)).max() <= 10 * d * eps
    np.testing.assert_allclose(lam, np.linalg.eigvalsh(A.astype(np.float64)),
                               atol=10 * d * eps * norm)


@pytest.mark.parametrize("failing, expected, calls", [
    ({"evd"}, None, ["evd", "evr"]),              # divide and conquer fails: MRRR
    ({"evd", "evr"}, None, ["evd", "evr", "ev"]),  # then QR
    ({"evr"}, 3, ["evr", "evx"]),                 # a value range: bisection and inverse iteration
])
def test_a_driver_that_fails_to_converge_gives_way_to_the_next(failing, expected, calls,
                                                                eigh_drivers):
    """LAPACK drivers that stop with info > 0 (scipy's ``LinAlgError``, as ``syevd`` can) are
    replaced by the next driver on the untouched matrix, and the result is
    numpy's eigendecomposition of the lower triangle (eigenvalues; the projector onto the kept
    eigenvectors, which does not depend on their signs)."""
    rng = np.random.default_rng(3)
    d, lower = 40, 1.0
    G = rng.normal(size=(d, d))
    A = G + G.T
    junk = np.tril(A) + np.triu(rng.normal(size=(d, d)), 1)
    before = junk.copy()
    eigh_drivers.failing = frozenset(failing)
    lam, V = linalg.eigh_above(junk, lower, expected)
    assert eigh_drivers == calls
    np.testing.assert_array_equal(junk, before)
    ref_lam, ref_V = np.linalg.eigh(A)
    above = ref_lam > lower
    np.testing.assert_allclose(lam, ref_lam[above], rtol=0, atol=100 * d * np.finfo(float).eps)
    np.testing.assert_allclose(V @ V.T, ref_V[:, above] @ ref_V[:, above].T, rtol=0, atol=1e-10)


def test_the_last_driver_s_failure_is_raised(eigh_drivers):
    """When every driver fails, the last one's error reaches the caller (no silent result)."""
    eigh_drivers.failing = frozenset({"evd", "evr", "ev"})
    with pytest.raises(np.linalg.LinAlgError, match="simulated: ev failed"):
        linalg.eigh_all(np.eye(4))
    assert eigh_drivers == ["evd", "evr", "ev"]


@pytest.mark.parametrize("d", [1, 2, 30])
@pytest.mark.parametrize("positive_only", [False, True])
def test_project_psd_is_the_positive_part_of_the_moreau_decomposition(d, positive_only):
    """The nearest PSD matrix P to S is characterised by Moreau's decomposition of the symmetric
    part over the self-dual PSD cone: ``sym(S) = P − N`` with ``P ⪰ 0``, ``N ⪰ 0`` and
    ``⟨P, N⟩ = 0``. Checked with numpy's eigenvalues of P and N, for a non-symmetric S with
    eigenvalues of both signs; the returned eigenpairs rebuild P, and a PSD input comes back."""
    rng = np.random.default_rng(d)
    S = rng.normal(size=(d, d)) + (np.diag(rng.choice([-2.0, 2.0], d)) if d > 1 else 0)
    S[0, 0] = -abs(S[0, 0]) - 1  # a negative direction, also for d = 1
    P, lam, U = linalg.project_psd(S, positive_only=positive_only)
    sym = (S + S.T) / 2
    N = P - sym
    tol = 1e2 * d * np.finfo(float).eps * np.abs(np.linalg.eigvalsh(sym)).max()
    np.testing.assert_allclose(P, P.T, rtol=0, atol=tol)
    assert np.linalg.eigvalsh(P).min() >= -tol and np.linalg.eigvalsh(N).min() >= -tol
    assert abs(np.vdot(P, N)) <= tol * np.abs(P).sum()
    np.testing.assert_allclose((U * lam) @ U.T, P, rtol=0, atol=tol)
    np.testing.assert_allclose(U.T @ U, np.eye(len(lam)), rtol=0, atol=1e2 * d * np.finfo(float).eps)
    assert np.all(lam >= 0) and np.all(np.diff(lam) >= 0)
    positive = np.linalg.eigvalsh(sym) > tol
    assert (len(lam) == positive.sum() if positive_only else len(lam) == d)
    G = rng.normal(size=(d, d))
    np.testing.assert_allclose(linalg.project_psd(G @ G.T, positive_only)[0], G @ G.T, rtol=0,
                               atol=1e2 * d * np.finfo(float).eps * np.abs(G @ G.T).max())


@pytest.mark.parametrize("d", [1, 5, 40])
def test_leading_eigenvector_is_numpys_top_eigenvector(d):
    from dml_bench.solvers.top_eigen import leading_eigenvector

    rng = np.random.default_rng(d)
    A = rng.normal(size=(d, d))
    G = A + A.T
    lam, U = np.linalg.eigh(G)
    v = leading_eigenvector(G)
    assert np.linalg.norm(v) == pytest.approx(1.0)
    # eigenvalues of a random symmetric matrix are simple: the same vector up to sign
    assert abs(v @ U[:, -1]) == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(G @ v, lam[-1] * v, atol=1e-12 * np.abs(lam).max())


@pytest.mark.parametrize("d", [3, COMPILED_GRAM_MAX_DIM, COMPILED_GRAM_MAX_DIM + 1, 70])
@pytest.mark.parametrize("laplacian", [False, True])
@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gram_top_eigenvector_is_numpys_over_the_pairs_kept(d, laplacian, signed, dtype,
                                                            monkeypatch):
    """Every branch (compiled up to COMPILED_GRAM_MAX_DIM; above it the pair Laplacian or BLAS
    over the rows, forced here through the flop saving it needs; dense eigh up to 64, Lanczos
    above), for several weight vectors in a row (warm starts): v is numpy's top eigenvector of
    Σ_{r kept} w_r z_r z_rᵀ formed one outer product at a time, with the pairs below the
    threshold left out, p its squared projections and λ its eigenvalue."""
    monkeypatch.setattr(top_eigen, "LAPLACIAN_MIN_SAVING", -np.inf if laplacian else np.inf)
    rng = np.random.default_rng(d)
    X = rng.normal(size=(40, d)).astype(dtype)
    pairs = rng.choice(40, size=(150, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    Z64 = X.astype(np.float64)[pairs[:, 0]] - X.astype(np.float64)[pairs[:, 1]]
    top = GramTopEigenvector(X, pairs, threshold=1e-3, signed=signed)
    assert (top._laplacian is not None) == (laplacian and d > COMPILED_GRAM_MAX_DIM)
    for call in range(3):
        w = rng.exponential(size=len(pairs)) * (rng.choice([-1, 1], len(pairs)) if signed else 1)
        w[rng.choice(len(pairs), 40, replace=False)] *= 1e-6  # below 1e-3 of the largest
        if signed:
            w[np.argmax(np.abs(w))] = 50.0  # a clear top eigenvalue with signed weights
        kept = np.abs(w) >= 1e-3 * np.abs(w).max()
        G = sum(wr * np.outer(z, z) for z, wr, k in zip(Z64, w, kept) if k)
        lam, V = np.linalg.eigh(G)
        v, p, value = top(w)
        # the eigenvector's error is round-off over the eigen-gap (Davis-Kahan); float32 points
        # perturb G by ~1e-7 relative
        gap = lam[-1] - lam[-2]
        eps = 1e-12 if dtype == np.float64 else 1e-6
        assert abs(abs(v @ V[:, -1]) - 1) < 1e2 * eps * np.abs(lam).max() / gap
        np.testing.assert_allclose(value, lam[-1], rtol=1e2 * eps)
        np.testing.assert_allclose(p, (Z64 @ v) ** 2, rtol=1e2 * eps, atol=1e2 * eps * d)


def test_the_pair_laplacian_is_used_where_it_saves_flops():
    # USPS's DML-eig pairs: 19 542 of 6 514 points in d = 256 (syrk 1.28 Gflop, Laplacian 0.85)
    assert uses_pair_laplacian(6514, 19542, 256, signed=False)
    # breast cancer's: 1 197 of 399 in d = 30 saves 0.36 Mflop, below the Laplacian's overhead
    assert not uses_pair_laplacian(399, 1197, 30, signed=False)
    # LMNN-eig's signed rows there (1 931): a GEMM of 3.5 Mflop against 0.7
    assert uses_pair_laplacian(399, 1931, 30, signed=True)
    assert uses_pair_laplacian(100, 150, 256, signed=True)  # a GEMM over 150 rows vs 2·100
    assert not uses_pair_laplacian(100, 90, 256, signed=True)  # fewer pairs than points
    # DEXTER's 900 pairs of 300 points in d = 5000: Lanczos on the rows, never forming the matrix
    assert not uses_pair_laplacian(300, 900, 5000, signed=False)

@pytest.mark.parametrize("d", [2, 13, 64])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_eigh_all_makes_scipys_syevd_call(d, dtype):
    """The direct LAPACK call gives scipy's ``eigh(driver="evd")`` bit for bit (same routine,
    same workspace), on the lower triangle, and refuses a non-finite entry as scipy does."""
    import scipy.linalg

    rng = np.random.default_rng(d)
    S = rng.normal(size=(d, d)).astype(dtype)
    lam, U = linalg.eigh_all(S)  # C-ordered: read as the transpose's upper triangle
    ref_lam, ref_U = scipy.linalg.eigh(S.T, lower=False, driver="evd")
    np.testing.assert_array_equal(lam, ref_lam)
    np.testing.assert_array_equal(U, ref_U)
    assert lam.dtype == dtype
    S[-1, 0] = np.nan
    with pytest.raises(ValueError, match="infs or NaNs"):
        linalg.eigh_all(S)
