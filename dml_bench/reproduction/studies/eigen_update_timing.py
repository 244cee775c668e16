"""Rank-one eigen-update against full and Lanczos eigensolvers (Kunapuli & Shavlik 2012, Fig. 2 right).

§4 of Kunapuli & Shavlik (2012) updates the eigendecomposition of ``M + α u uᵀ`` from the one of
``M`` through the secular equation, whose roots interlace the old eigenvalues, and equal (e.g.
zero) eigenvalues deflate. Fig. 2 (right) compares the update by Newton's method and by rational
interpolation (Gu & Eisenstat) with Lanczos and MATLAB's ``eig`` (QR + Householder) "on 20 random
matrices in S_+^500, over increasing sparsity in the spectrum of the matrix".

Here the methods are:

- ``rank-one update``: :func:`~dml_bench.solvers.eigen_update.rank_one_eigh_update`, the update MDML
  uses (deflation, then the secular equation by the rational "middle way" interpolation of LAPACK
  ``dlaed4``, Gu–Eisenstat eigenvectors, one back-rotation GEMM) from ``(λ, V)`` of M;
- ``eigh QR (dsyev)``: ``scipy.linalg.eigh(driver="ev")``, Householder tridiagonalisation and
  implicit QL/QR iteration, the method of the paper's ``eig``;
- ``eigh MRRR (dsyevr)``: ``scipy.linalg.eigh``'s default driver;
- ``Lanczos (eigsh)``: ``scipy.sparse.linalg.eigsh`` (ARPACK, implicitly restarted Lanczos) for the
  ``r + 1`` largest eigenpairs, ``r`` the rank of M: the non-zero part of the spectrum of
  ``M + α u uᵀ`` (α > 0), the only part a Lanczos solver is asked for (it cannot return all n).

All return eigenvalues and eigenvectors. Newton's method for the secular equation is not
implemented in this project (MDML uses the rational interpolation only).

Matrices (:func:`random_psd_with_zeros`): ``M = Q diag(λ) Qᵀ`` with Q Haar-random orthogonal and λ
the eigenvalues of a Wishart matrix ``G Gᵀ / n`` (G n × n standard normal) whose smallest
``round(s · n)`` are set to 0 (sparsity s); ``u ~ N(0, I/n)``, α = 1 (the perturbation of the
paper's Fig. 2 left, ``M + ρ u uᵀ``).

References
----------
G. Kunapuli and J. Shavlik. Mirror descent for metric learning: a unified approach. ECML PKDD 2012,
§4 and Fig. 2. The update's own references: :mod:`dml_bench.solvers.eigen_update`.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.linalg
from scipy.sparse.linalg import eigsh

from ...common.safe_write import write_csv
from ...report.figures import pyplot, save_figure
from ...solvers.eigen_update import rank_one_eigh_update

METHODS = ("rank-one update", "eigh QR (dsyev)", "eigh MRRR (dsyevr)", "Lanczos (eigsh)")


def random_psd_with_zeros(n, sparsity, rng):
    """A random ``M ∈ S_+^n`` with ``round(sparsity · n)`` zero eigenvalues, and its eigenpairs.

    Parameters
    ----------
    n : int
    sparsity : float in [0, 1)
        Fraction of zero eigenvalues.
    rng : numpy.random.Generator

    Returns
    -------
    M : ndarray (n, n)
    lam : ndarray (n,)
        Eigenvalues of M, ascending (exactly those M is built from).
    Q : ndarray (n, n)
        Orthonormal eigenvectors.
    """
    G = rng.standard_normal((n, n))
    lam = np.linalg.eigvalsh(G @ G.T / n)
    lam[: int(round(sparsity * n))] = 0.0
    Q, R = np.linalg.qr(rng.standard_normal((n, n)))
    Q *= np.sign(np.diag(R))  # Haar measure (Mezzadri 2007)
    return (Q * lam) @ Q.T, lam, Q


def eigenvalue_tolerance(eigenvalues):
    """``n ε ‖A‖₂`` (from the eigenvalues of A): the error bound of a backward-stable symmetric
    eigensolver on A.

    A backward-stable method returns the exact eigenvalues of ``A + E`` with ``‖E‖₂ ≤ p(n) ε ‖A‖₂``,
    so by Weyl's inequality each eigenvalue is off by at most that much; p(n) = n here. It covers
    LAPACK's eigensolvers, the Gu–Eisenstat update (backward stable with respect to
    ``diag(λ) + α z zᵀ``, whose input ``(λ, V)`` carries the same error) and ARPACK at its default
    tolerance (machine precision: Ritz residuals ``≤ ε |θ|``).
    """
    eigenvalues = np.asarray(eigenvalues)
    return len(eigenvalues) * np.finfo(np.float64).eps * float(np.abs(eigenvalues).max())


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def run_eigen_update_timing(out_dir, n=500, n_matrices=20, sparsities=(0.1, 0.2, 0.3, 0.4, 0.5,
                                                                        0.6, 0.7, 0.8, 0.9, 0.95),
                            alpha=1.0, seed=0):
    """Kunapuli & Shavlik (2012) Fig. 2 (right): eigen-update time versus spectral sparsity.

    For each sparsity s and each of ``n_matrices`` matrices (:func:`random_psd_with_zeros`, one
    generator seeded ``seed``), the eigendecomposition of ``M + α u uᵀ`` by every method of
    :data:`METHODS`, BLAS pinned to one thread; each method's eigenvalues are compared with
    ``numpy.linalg.eigvalsh`` of the updated matrix (Lanczos: its r + 1 values with the largest
    r + 1, and the other n − r − 1 reference values must be zero) within
    :func:`eigenvalue_tolerance`.

    Parameters
    ----------
    out_dir : path
    n : int, default=500
        Order of the matrices (the paper: S_+^500).
    n_matrices : int, default=20
    sparsities : sequence of float
        Fractions of zero eigenvalues of M, each < 1 − 1/n (Lanczos needs r + 1 < n).
    alpha : float, default=1.0
        α > 0 (the update keeps M in S_+).
    seed : int

    Notes
    -----
    Measured (one BLAS thread, n = 500, 20 matrices per sparsity): the update takes 27 ms at
    s = 0.1 and 9–11 ms from s = 0.5, dsyev 100–180 ms, dsyevr 26–42 ms, Lanczos 280 ms at
    s = 0.1 falling to 6 ms at s = 0.95. The whole run takes about 1.5 minutes.

    Returns
    -------
    dict
        ``times`` (the per-matrix DataFrame of ``eigen_update_timing.csv``), ``summary`` (mean
        time per method and sparsity, ``eigen_update_summary.csv``), the paths ``times_csv``,
        ``summary_csv``, ``fig2_png``, ``fig2_pdf``.

    Raises
    ------
    AssertionError
        When a method's eigenvalues miss the reference by more than the tolerance.
    """
    from threadpoolctl import threadpool_limits

    if alpha <= 0:
        raise ValueError("alpha must be > 0 (the Lanczos comparator computes the top r + 1)")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    rows = []
    with threadpool_limits(1):
        for s in sparsities:
            for rep in range(n_matrices):
                rows += _time_matrix(n, s, rep, alpha, rng)
    times = pd.DataFrame(rows)
    summary = (times.groupby(["sparsity", "method"], sort=False)["seconds"]
               .agg(["mean", "std", "median"]).reset_index())
    ref = summary[summary["method"] == "eigh QR (dsyev)"].set_index("sparsity")["mean"]
    summary["speedup_vs_dsyev"] = summary["sparsity"].map(ref) / summary["mean"]
    paths = {"times_csv": out_dir / "eigen_update_timing.csv",
             "summary_csv": out_dir / "eigen_update_summary.csv"}
    write_csv(paths["times_csv"], times, index=False)
    write_csv(paths["summary_csv"], summary, index=False)
    paths.update(_plot(out_dir, summary, n, n_matrices))
    return {"times": times, "summary": summary, **paths}


def _time_matrix(n: int, s: float, rep: int, alpha: float, rng) -> list[dict]:
    """The rows of matrix ``rep`` of sparsity ``s`` (see :func:`run_eigen_update_timing`): a
    random ``M`` and ``u`` drawn from ``rng``, every method's time and errors on ``M + α u uᵀ``."""
    M, lam, Q = random_psd_with_zeros(n, s, rng)
    u = rng.standard_normal(n) / np.sqrt(n)
    A = M + alpha * np.outer(u, u)
    reference = np.linalg.eigvalsh(A)
    tol = eigenvalue_tolerance(reference)
    k = n - int(round(s * n)) + 1  # rank of A
    runs = {
        "rank-one update": lambda: rank_one_eigh_update(lam, Q, alpha, u),
        "eigh QR (dsyev)": lambda: scipy.linalg.eigh(A, driver="ev"),
        "eigh MRRR (dsyevr)": lambda: scipy.linalg.eigh(A),
        "Lanczos (eigsh)": lambda: eigsh(A, k=k, which="LA"),
    }
    rows = []
    for method, fn in runs.items():
        (values, vectors), seconds = _timed(fn)
        values = np.sort(values)
        error = float(np.abs(values - reference[n - len(values):]).max())
        if len(values) < n:  # the eigenvalues Lanczos was not asked for are zero
            error = max(error, float(np.abs(reference[: n - len(values)]).max()))
        if error > tol:
            raise AssertionError(f"{method}, s = {s}, matrix {rep}: eigenvalue error "
                                 f"{error:.3g} > n ε ‖A‖ = {tol:.3g}")
        orth = float(np.abs(vectors.T @ vectors - np.eye(vectors.shape[1])).max())
        rows.append({"n": n, "sparsity": s, "matrix": rep, "rank": k,
                     "method": method, "seconds": seconds,
                     "max_eigenvalue_error": error, "tolerance": tol,
                     "max_orthogonality_error": orth})
    return rows


def _plot(out_dir, summary, n, n_matrices):
    plt = pyplot()

    fig, ax = plt.subplots(figsize=(4.6, 3.4))
    for method, part in summary.groupby("method", sort=False):
        ax.errorbar(part["sparsity"], part["mean"], yerr=part["std"], marker="o", capsize=2,
                    label=method)
    ax.set_yscale("log")
    ax.set_xlabel("fraction of zero eigenvalues of M")
    ax.set_ylabel("time (s), mean ± sd")
    ax.set_title(f"Eigendecomposition of M + uuᵀ, M ∈ S+^{n}, {n_matrices} matrices\n"
                 "(Kunapuli & Shavlik 2012, Fig. 2 right)", fontsize="small")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return save_figure(fig, out_dir, "fig2_eigen_update", "fig2")
