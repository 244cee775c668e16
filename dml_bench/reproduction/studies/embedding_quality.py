"""Quality criteria of a low-dimensional embedding, as used by Shen et al. (2014, §IV-B).

Two families, both comparing an embedding ``Y`` (n × d) with its data ``X`` (n × D):

* the rank-based co-ranking criteria ``Q_NX(K)`` and ``B_NX(K)`` of Lee & Verleysen (Shen et
  al.'s Figs. 7–8), :func:`neighbourhood_preservation`;
* the local-neighbourhood criteria of Zhang, Wang, He & Zhou (2011), ALSTD, ALED, ALCD and GSCD
  (Shen et al.'s Tables V–VI, their reference [40]), :func:`embedding_criteria`, and the
  principal spread directions (PSD) they rest on (Shen et al.'s Fig. 9),
  :func:`principal_spread_directions`.

**Reconstruction.** The defining formulas of Zhang et al. (2011) are not available here (neither
the paper nor code implementing it could be found). Shen et al. (2014) describe the criteria in
one sentence each: ALSTD and ALED "measure the global smoothness of a recovered low-dimensional
manifold", ALCD "estimate[s] the average codirectional consistence of the principle spread
direction (PSD) of the data points", GSCD combines both; in Fig. 9 "the longer line at each
sample represents the first PSD, and the second line is orthogonal to the first PSD". Our
reading, with ``N_i`` the k nearest neighbours of ``x_i`` in the data (k = 6, the paper's
neighbourhood size):

* normalised scaling factors ``s_ij = (‖y_i − y_j‖ / ‖x_i − x_j‖) / c`` for ``j ∈ N_i``, ``c``
  the mean of the unnormalised ratios over all n·k pairs (so the criteria do not depend on the
  embedding's overall scale);
* ``ALSTD = mean_i std_{j∈N_i} s_ij`` (population std over the k factors) and
  ``ALED = mean_i (max_{j∈N_i} s_ij − min_{j∈N_i} s_ij)``: an embedding that is locally a
  similarity (rotation, translation, uniform scale) has both 0;
* the PSD ``u_i`` of point i: the leading eigenvector of the covariance of its embedded
  neighbourhood ``{y_i} ∪ {y_j : j ∈ N_i}`` (the second eigenvector is the orthogonal line);
* ``LCD_i = mean_{j∈N_i} |⟨u_i, u_j⟩|`` (|cos| of the angle between neighbouring PSDs; a
  direction has no sign), ``ALCD = mean_i LCD_i``: 1 when every neighbourhood spreads the same
  way;
* ``GSCD = mean_i LSTD_i / LCD_i`` (smaller is better, as ALSTD).

Two checks on the paper's own numbers are consistent with this reading without proving it:
ALED/ALSTD is 2.65–2.88 in all eight cells of Table V, the size of the expected range of six or
seven normal samples in units of their standard deviation (2.53, 2.70), as a max − min over one
neighbourhood of k = 6 should be; and GSCD is within 2.5 % of ALSTD/ALCD in all eight cells of
Table VI (to the printed digits on the teapot), as a per-point ratio averaged over points is.

References
----------
J. A. Lee and M. Verleysen. Quality assessment of dimensionality reduction: rank-based criteria.
Neurocomputing 72(7–9):1431–1443, 2009.

J. Zhang, Q. Wang, L. He and Z.-H. Zhou. Quantitative analysis of nonlinear embedding. IEEE
Trans. Neural Netw. 22(12):1987–1998, 2011.

C. Shen, J. Kim, F. Liu, L. Wang and A. van den Hengel. Efficient dual approach to distance metric
learning. IEEE Trans. Neural Netw. Learn. Syst. 25(2):394–406, 2014 (§IV-B, Figs. 7–9,
Tables V–VI).
"""

from __future__ import annotations

import numpy as np

from ...constraints import _neighbours

CRITERIA = ("alstd", "aled", "alcd", "gscd")


def _rank_matrix(D):
    """``R[i, j]`` = rank of j among the other points by distance from i, in 1..n−1
    (Lee & Verleysen's tie rule: equal distances ranked by index); ``R[i, i] = 0``."""
    n = len(D)
    D = np.array(D, dtype=float)
    np.fill_diagonal(D, -np.inf)
    order = np.argsort(D, axis=1, kind="stable")
    R = np.empty((n, n), dtype=np.int64)
    R[np.arange(n)[:, None], order] = np.arange(n)[None, :]
    return R


def _sq_distances(Z):
    Z = np.asarray(Z, dtype=float)
    sq = (Z * Z).sum(axis=1)
    return np.maximum(sq[:, None] + sq[None, :] - 2 * Z @ Z.T, 0.0)


def neighbourhood_preservation(X, Y, K_max):
    """Co-ranking quality ``Q_NX(K)`` and behaviour ``B_NX(K)`` for K = 1..K_max (Lee & Verleysen).

    With ``ρ_ij`` the rank of j among the neighbours of i in X and ``r_ij`` in Y (1..n−1, ties by
    index), the co-ranking matrix is ``Q_kl = |{(i, j) : ρ_ij = k, r_ij = l}|`` and ::

        Q_NX(K) = 1/(K n) Σ_{k ≤ K} Σ_{l ≤ K} Q_kl
                = 1/(K n) Σ_i |N_K^X(i) ∩ N_K^Y(i)|
        B_NX(K) = 1/(K n) ( Σ_{k, l ≤ K, l < k} Q_kl − Σ_{k, l ≤ K, l > k} Q_kl )

    i.e. the mild K-intrusions (``r_ij < ρ_ij``: j came closer in the embedding) minus the mild
    K-extrusions (``r_ij > ρ_ij``), normalised like ``Q_NX``. The sign follows the meaning both
    Shen et al. (2014, §IV-B) and Lee & Verleysen give it: ``B_NX > 0`` is an intrusive embedding
    (it crushes the manifold, far points become neighbours), ``B_NX < 0`` an extrusive one (it
    tears the manifold).

    Parameters
    ----------
    X : array-like (n, D)
        The data.
    Y : array-like (n, d)
        The embedding.
    K_max : int
        Largest neighbourhood size (≤ n − 1).

    Returns
    -------
    Q_nx, B_nx : ndarray (K_max,)
        Values for K = 1..K_max.
    """
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float)
    n = len(X)
    if len(Y) != n:
        raise ValueError(f"X has {n} points, Y {len(Y)}")
    if not 1 <= K_max <= n - 1:
        raise ValueError(f"need 1 <= K_max <= n - 1 = {n - 1}, got {K_max}")
    rho = _rank_matrix(_sq_distances(X))
    r = _rank_matrix(_sq_distances(Y))
    off = ~np.eye(n, dtype=bool)
    rho, r = rho[off], r[off]
    size = n  # ranks 1..n−1; index 0 unused
    # a pair (i, j) sits in the K×K block of Q for every K ≥ max(ρ, r)
    in_block = np.cumsum(np.bincount(np.maximum(rho, r), minlength=size))
    intr = np.cumsum(np.bincount(rho[r < rho], minlength=size))
    extr = np.cumsum(np.bincount(r[r > rho], minlength=size))
    K = np.arange(1, K_max + 1)
    return in_block[K] / (K * n), (intr[K] - extr[K]) / (K * n)


def data_neighbours(X, k):
    """Indices (n, k) of the k nearest neighbours of each point of X (itself excluded)."""
    X = np.asarray(X, dtype=float)
    if not 1 <= k < len(X):
        raise ValueError(f"need 1 <= k < n, got k={k}, n={len(X)}")
    return _neighbours(X, X, k, exclude_self=True)


def scaling_factors(X, Y, neighbours):
    """Normalised scaling factors ``s_ij`` of each point's neighbourhood (module docstring).

    Parameters
    ----------
    X : array-like (n, D)
    Y : array-like (n, d)
    neighbours : ndarray of int (n, k)
        ``N_i`` (:func:`data_neighbours`).

    Returns
    -------
    ndarray (n, k)
        ``(‖y_i − y_j‖ / ‖x_i − x_j‖) / c``, ``c`` the mean ratio over all n·k pairs.
    """
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float)
    rows = np.arange(len(X))[:, None]
    dx = np.linalg.norm(X[neighbours] - X[rows], axis=2)
    if np.any(dx == 0):
        raise ValueError("duplicate points in X: a scaling factor needs ‖x_i − x_j‖ > 0")
    ratio = np.linalg.norm(Y[neighbours] - Y[rows], axis=2) / dx
    return ratio / ratio.mean()


def principal_spread_directions(Y, neighbours):
    """Principal spread directions of every embedded neighbourhood (Shen et al. 2014, Fig. 9).

    Parameters
    ----------
    Y : array-like (n, d)
    neighbours : ndarray of int (n, k)

    Returns
    -------
    directions : ndarray (n, d, d)
        ``directions[i, :, m]`` is the m-th principal direction (unit vector) of the covariance of
        ``{y_i} ∪ {y_j : j ∈ N_i}``, by decreasing variance: column 0 is the PSD ``u_i``.
    variances : ndarray (n, d)
        The matching eigenvalues (variances of the neighbourhood along each direction).
    """
    Y = np.asarray(Y, dtype=float)
    patch = np.concatenate([Y[:, None, :], Y[neighbours]], axis=1)  # (n, k + 1, d)
    centred = patch - patch.mean(axis=1, keepdims=True)
    cov = np.einsum("npa,npb->nab", centred, centred) / patch.shape[1]
    lam, vec = np.linalg.eigh(cov)  # ascending
    return vec[:, :, ::-1], np.maximum(lam[:, ::-1], 0.0)


def local_criteria(X, Y, k=6):
    """Per-point LSTD, LED and LCD (module docstring; the averages are :func:`embedding_criteria`).

    Parameters
    ----------
    X : array-like (n, D)
        The data (neighbourhoods and reference distances).
    Y : array-like (n, d)
        The embedding, d ≥ 2.
    k : int, default=6

    Returns
    -------
    dict of ndarray (n,)
        ``lstd``, ``led``, ``lcd``.
    """
    Y = np.asarray(Y, dtype=float)
    if Y.ndim != 2 or Y.shape[1] < 2:
        raise ValueError(f"the embedding needs at least 2 dimensions for a PSD, got {Y.shape}")
    nbrs = data_neighbours(X, k)
    s = scaling_factors(X, Y, nbrs)
    u = principal_spread_directions(Y, nbrs)[0][:, :, 0]
    lcd = np.abs(np.einsum("nd,nkd->nk", u, u[nbrs])).mean(axis=1)
    return {"lstd": s.std(axis=1), "led": s.max(axis=1) - s.min(axis=1), "lcd": lcd}


def embedding_criteria(X, Y, k=6):
    """ALSTD, ALED, ALCD and GSCD of an embedding (Zhang et al. 2011, as read in the module
    docstring; Shen et al. 2014, Tables V–VI).

    Parameters
    ----------
    X : array-like (n, D)
    Y : array-like (n, d)
    k : int, default=6

    Returns
    -------
    dict
        ``alstd``, ``aled``, ``alcd``, ``gscd`` (floats). ALSTD, ALED and GSCD are 0 for an
        embedding that is locally a similarity of the data; ALCD lies in [0, 1], 1 when all
        neighbouring PSDs are parallel.
    """
    loc = local_criteria(X, Y, k)
    return {"alstd": float(loc["lstd"].mean()), "aled": float(loc["led"].mean()),
            "alcd": float(loc["lcd"].mean()), "gscd": float((loc["lstd"] / loc["lcd"]).mean())}
