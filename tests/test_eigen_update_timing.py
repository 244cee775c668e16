"""Kunapuli & Shavlik (2012) Fig. 2 (right) experiment: matrices, references, verification.

Eigenvalues are checked against ``numpy.linalg.eigvalsh`` of the explicitly updated matrix; no
timing is asserted.
"""

import numpy as np
import pandas as pd
import pytest

from dml_bench.reproduction.studies import eigen_update_timing
from dml_bench.reproduction.studies.eigen_update_timing import (METHODS, eigenvalue_tolerance,
                                                                random_psd_with_zeros,
                                                                run_eigen_update_timing)
from dml_bench.solvers.eigen_update import rank_one_eigh_update


@pytest.mark.parametrize("sparsity", [0.0, 0.5, 0.9])
def test_random_matrix_has_the_requested_zero_eigenvalues(sparsity):
    n = 60
    M, lam, Q = random_psd_with_zeros(n, sparsity, np.random.default_rng(1))
    np.testing.assert_allclose(Q.T @ Q, np.eye(n), atol=1e-12)
    np.testing.assert_allclose(M, (Q * lam) @ Q.T, atol=1e-12)
    assert np.all(np.diff(lam) >= 0) and lam.min() >= 0
    assert np.count_nonzero(lam == 0) == round(sparsity * n)
    np.testing.assert_allclose(np.linalg.eigvalsh(M), lam, atol=eigenvalue_tolerance(lam))


@pytest.mark.parametrize("sparsity", [0.0, 0.8])
def test_update_eigenvalues_match_eigvalsh_of_the_updated_matrix(sparsity):
    n = 80
    rng = np.random.default_rng(2)
    M, lam, Q = random_psd_with_zeros(n, sparsity, rng)
    u = rng.standard_normal(n) / np.sqrt(n)
    A = M + np.outer(u, u)
    values, vectors = rank_one_eigh_update(lam, Q, 1.0, u)
    reference = np.linalg.eigvalsh(A)
    tol = eigenvalue_tolerance(reference)
    np.testing.assert_allclose(values, reference, rtol=0, atol=tol)
    # deflation: the zero eigenvalues but one stay zero (interlacing, §4)
    assert np.count_nonzero(np.abs(values) <= tol) >= round(sparsity * n) - 1
    np.testing.assert_allclose(vectors.T @ A @ vectors, np.diag(values), atol=1e-12)


def test_run_verifies_every_method_and_writes_its_files(tmp_path):
    out = run_eigen_update_timing(tmp_path, n=40, n_matrices=2, sparsities=(0.25, 0.9))
    for key in ("times_csv", "summary_csv", "fig2_png", "fig2_pdf"):
        assert out[key].exists() and out[key].stat().st_size > 0, key
    times = pd.read_csv(out["times_csv"])
    assert len(times) == 2 * 2 * len(METHODS) and set(times["method"]) == set(METHODS)
    assert (times["max_eigenvalue_error"] <= times["tolerance"]).all()
    assert (times["max_orthogonality_error"] < 1e-10).all()
    lanczos = times[times["method"] == "Lanczos (eigsh)"]
    assert set(zip(lanczos["sparsity"], lanczos["rank"])) == {(0.25, 31), (0.9, 5)}
    summary = pd.read_csv(out["summary_csv"])
    assert len(summary) == 2 * len(METHODS)
    dsyev = summary[summary["method"] == "eigh QR (dsyev)"]
    np.testing.assert_allclose(dsyev["speedup_vs_dsyev"], 1.0)


def test_run_rejects_wrong_eigenvalues(tmp_path, monkeypatch):
    def off_by_a_little(lam, V, alpha, u):
        values, vectors = rank_one_eigh_update(lam, V, alpha, u)
        return values + 1e-9, vectors

    monkeypatch.setattr(eigen_update_timing, "rank_one_eigh_update", off_by_a_little)
    with pytest.raises(AssertionError, match="rank-one update"):
        run_eigen_update_timing(tmp_path, n=30, n_matrices=1, sparsities=(0.5,))
