"""Symmetric rank-one update of an eigendecomposition (Kunapuli & Shavlik 2012, §4).

Given ``A = V diag(λ) Vᵀ`` (λ ascending, V orthonormal) the eigendecomposition of
``A + α u uᵀ`` follows from the one of ``diag(λ) + α z zᵀ`` with ``z = Vᵀu``:

1. **Deflation** (Dongarra & Sorensen 1987; LAPACK ``dlaed2``), with
   ``tol = 8 ε max(max|λ|, |α| ‖z‖²)``. Components with ``|α| ‖z‖ |z_i| ≤ tol`` leave their
   eigenpair unchanged. Within a group of (numerically) equal eigenvalues — a run whose
   consecutive gaps are ≤ tol, so the neglected coupling is ≤ (m − 1)·tol — Givens rotations of
   the group's eigenvectors concentrate the group's part of z in its last member, so ``m − 1``
   eigenpairs of a group of ``m`` are unchanged: the case §4 notes for the many zero eigenvalues of
   a trace-norm regularised metric. The product of the ``m − 1`` rotations ``G_1 … G_{m−1}``
   (``G_j`` zeroes ``z_j`` against the accumulated norm of ``z_1..z_{j+1}``) is applied in closed
   form, with one cumulative sum, in O(d·m).
2. **Secular equation** ``f(λ') = 1 + α Σ_i z_i² / (λ_i − λ')`` on the k remaining components,
   whose roots interlace: ``λ_i < λ'_i < λ_{i+1}`` (and ``λ'_k < λ_k + α‖z‖²``) for α > 0; α < 0 is
   mapped to α > 0 by negating and reversing. Each root is kept as ``λ'_i = δ_o + τ_i`` relative
   to its nearer pole δ_o (so the differences ``δ_j − λ'_i`` are exact to working precision),
   iterated with the "middle way" rational interpolation of LAPACK ``dlaed4`` (two-pole model,
   quadratically convergent; dlaed4's initial guess from the two nearest poles with the other terms
   frozen at the interval's midpoint), safeguarded by a bracket that every evaluation of f shrinks
   and by bisection when a step would leave it. O(k) per root and iteration, typically 4–8
   iterations.
3. **Stable eigenvectors** (Gu & Eisenstat 1994). The computed roots are the exact eigenvalues of
   ``diag(δ) + ẑ ẑᵀ`` for the ẑ of Löwner's formula
   ``ẑ_i² = Π_j (λ'_j − δ_i) / Π_{j≠i} (δ_j − δ_i)``,
   evaluated as a product of ratios in (0, 1]; the eigenvectors ``(diag(δ) − λ'_j I)⁻¹ ẑ``
   (normalised) are then numerically orthogonal whatever the accuracy of the roots. O(k²).
4. **Back-rotation** ``V_k Q`` with one GEMM (d × k × k flops): BLAS-3, but O(d³) when nothing
   deflates, so the update as a whole is O(d³) in the worst case (one d³ GEMM against the ~9d³
   flops of a tridiagonal-reduction ``eigh``); the secular part (2–3) is O(d²).

Steps 1–3 are scalar loops compiled with numba (``cache=True``: compiled once per machine), so an
update has no per-call interpreter overhead beyond one dispatch; MDML calls
:func:`_rank_one_update` from its own compiled loop over the pairs.

References
----------
G. Kunapuli and J. Shavlik. Mirror descent for metric learning: a unified approach. ECML PKDD 2012,
§4 and Fig. 2.
M. Gu and S. C. Eisenstat. A stable and efficient algorithm for the rank-one modification of the
symmetric eigenproblem. SIAM J. Matrix Anal. Appl. 15(4):1266–1276, 1994.
R.-C. Li. Solving secular equations stably and efficiently. LAPACK Working Note 89, 1994
(the "middle way" of ``dlaed4``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .linalg import JIT_OPTIONS

_EPS = np.finfo(np.float64).eps
_MAX_ITER = 100
#: after this many secular iterations every step is a bisection (guaranteed progress)
_BISECT_AFTER = 40



def rank_one_eigh_update(eigvals, eigvecs, alpha, u, z=None):
    """Eigendecomposition of ``V diag(λ) Vᵀ + α u uᵀ`` from the one of ``V diag(λ) Vᵀ``.

    Parameters
    ----------
    eigvals : ndarray (d,)
        λ, ascending (as ``numpy.linalg.eigh`` returns them).
    eigvecs : ndarray (d, d)
        V, orthonormal columns.
    alpha : float
        α, of either sign.
    u : ndarray (d,)
    z : ndarray (d,), optional
        ``Vᵀu`` when the caller already has it.

    Returns
    -------
    new_eigvals : ndarray (d,)
        Ascending.
    new_eigvecs : ndarray (d, d)
        Orthonormal columns, ``new_eigvecs[:, i]`` belonging to ``new_eigvals[i]``.
    """
    lam = np.ascontiguousarray(eigvals, dtype=np.float64)
    V = np.ascontiguousarray(eigvecs, dtype=np.float64)
    z = V.T @ np.asarray(u, dtype=np.float64) if z is None else np.asarray(z, dtype=np.float64)
    alpha = float(alpha)
    if not np.isfinite(alpha) or not np.all(np.isfinite(z)):
        raise ValueError("rank_one_eigh_update needs a finite alpha and u")
    return _rank_one_update(lam, V, alpha, np.ascontiguousarray(z))


@njit(**JIT_OPTIONS)
def _rank_one_update(lam, V, alpha, z):
    """:func:`rank_one_eigh_update` from ``z = Vᵀu`` (compiled; fresh arrays)."""
    if alpha >= 0:
        return _update_positive(lam, V, alpha, z)
    # A + αuuᵀ = −((−A) + |α| uuᵀ); −A has eigenvalues −λ reversed (ascending)
    lam2, V2 = _update_positive(-lam[::-1], np.ascontiguousarray(V[:, ::-1]), -alpha,
                                np.ascontiguousarray(z[::-1]))
    return -lam2[::-1], np.ascontiguousarray(V2[:, ::-1])


@njit(**JIT_OPTIONS)
def _update_positive(lam, V, alpha, z):
    """:func:`rank_one_eigh_update` for ``α ≥ 0`` (returns fresh arrays)."""
    d = len(lam)
    lam = lam.copy()
    V = V.copy()
    znorm2 = np.dot(z, z)
    rho = alpha * znorm2  # A + α uuᵀ = V (diag(λ) + ρ ẑ ẑᵀ) Vᵀ with ‖ẑ‖ = 1
    if d == 0 or rho == 0.0:
        return lam, V
    zn = z / np.sqrt(znorm2)
    tol = 8.0 * _EPS * max(np.abs(lam).max(), rho)
    # --- deflation 1: negligible components of z
    keep = rho * np.abs(zn) > tol
    # --- deflation 2: runs of (numerically) equal eigenvalues among the kept components
    idx = np.flatnonzero(keep)
    s = 0
    while s < len(idx):
        e = s + 1  # chained: a run of m spans at most (m − 1)·tol
        while e < len(idx) and lam[idx[e]] - lam[idx[e - 1]] <= tol:
            e += 1
        if e - s > 1:
            g = idx[s:e]
            zn[g[-1]] = _givens_concentrate(V, g, zn[g])
            for j in g[:-1]:
                zn[j] = 0.0
                keep[j] = False
        s = e
    nd = np.flatnonzero(keep)
    k = len(nd)
    if k == 0:
        return lam, V
    delta = lam[nd]
    w = rho * zn[nd] ** 2  # secular weights: f(x) = 1 + Σ w_j / (δ_j − x)
    origin, tau = _secular_roots(delta, w, _BISECT_AFTER)
    # Gu & Eisenstat: ẑ from the computed roots, then the eigenvectors of diag(δ) + ẑẑᵀ
    P = np.empty((k, k))  # P[i, j] = λ'_j − δ_i
    for i in range(k):
        for j in range(k):
            P[i, j] = tau[j] - (delta[i] - delta[origin[j]])
    Q = np.ones((k, k))
    if k > 1:
        zhat2 = _loewner(delta, P)
        for i in range(k):
            zh = np.copysign(np.sqrt(zhat2[i]), zn[nd[i]])
            for j in range(k):
                Q[i, j] = -zh / P[i, j]  # (δ_i − λ'_j)⁻¹ ẑ_i
        for j in range(k):  # unit columns (a loop: ``sum(axis=0)`` compiles an axis-error message)
            norm2 = 0.0
            for i in range(k):
                norm2 += Q[i, j] * Q[i, j]
            norm = np.sqrt(norm2)
            for i in range(k):
                Q[i, j] /= norm
    for i in range(k):
        lam[nd[i]] = delta[origin[i]] + tau[i]
    if k == d:  # nothing deflated: the roots are already ascending
        return lam, V @ Q
    Vk = np.empty((d, k))
    for i in range(k):
        _put_column(Vk, i, V[:, nd[i]])
    Vk = Vk @ Q
    for i in range(k):
        _put_column(V, nd[i], Vk[:, i])
    order = np.argsort(lam, kind="mergesort")
    out = np.empty_like(V)
    for i in range(d):
        _put_column(out, i, V[:, order[i]])
    return lam[order], out


@njit(**JIT_OPTIONS)
def _put_column(M, j, x):
    """``M[:, j] = x`` element by element: numba compiles an array-to-slice assignment with its
    shape-mismatch message, string formatting that takes seconds to compile in every new
    process (the cache keeps the kernels, not that helper)."""
    for i in range(M.shape[0]):
        M[i, j] = x[i]


@njit(**JIT_OPTIONS)
def _givens_concentrate(V, g, zg):
    """Rotate the columns ``V[:, g]`` (equal eigenvalues) so that z lives in the last one only.

    The rotations ``G_j`` (j = 1..m−1) act on the pair (j, j+1) and zero ``z_j`` against
    ``r_{j+1} = ‖z_1..z_{j+1}‖``. Their product maps column j (< m) to
    ``(z_{j+1} Σ_{i≤j} z_i v_i / r_j − r_j v_{j+1}) / r_{j+1}`` and the last column to
    ``Σ_i z_i v_i / r_m``, i.e. it is applied with one running sum in O(d·m). Returns ``r_m``.
    """
    m = len(g)
    r = np.sqrt(np.cumsum(zg ** 2))
    C = zg[0] * V[:, g[0]]  # C_j = Σ_{i≤j} z_i v_i
    for j in range(m - 1):
        nxt = V[:, g[j + 1]].copy()
        _put_column(V, g[j], C * (zg[j + 1] / (r[j] * r[j + 1])) - nxt * (r[j] / r[j + 1]))
        C = C + zg[j + 1] * nxt
    _put_column(V, g[m - 1], C / r[m - 1])
    return r[m - 1]


@njit(**JIT_OPTIONS)
def _loewner(delta, P):
    """``ẑ_i² = Π_j (λ'_j − δ_i) / Π_{j≠i} (δ_j − δ_i)`` (Gu & Eisenstat 1994, Löwner's formula).

    Evaluated as ``(λ'_k − δ_i) Π_{j<i} (λ'_j − δ_i)/(δ_j − δ_i)
    · Π_{i≤j<k} (λ'_j − δ_i)/(δ_{j+1} − δ_i)``:
    by interlacing every ratio lies in (0, 1], so the product neither overflows nor loses digits.
    """
    k = len(delta)
    out = np.empty(k)
    for i in range(k):
        prod = max(P[i, k - 1], 0.0)
        for j in range(k - 1):
            den = delta[j if j < i else j + 1] - delta[i]
            prod *= max(P[i, j] / den, 0.0)
        out[i] = prod
    return out


@njit(**JIT_OPTIONS)
def _secular_roots(delta, w, bisect_after):
    """All roots of ``f(x) = 1 + Σ_j w_j / (δ_j − x)`` (δ strictly ascending, w > 0).

    Root i lies in ``(δ_i, δ_{i+1})`` (the last one in ``(δ_k, δ_k + Σ w]``). Returns ``origin``
    (index of the pole each root is measured from) and ``τ`` with ``root_i = δ_origin + τ_i``.
    After ``bisect_after`` iterations every step is a bisection.
    """
    k = len(delta)
    origin = np.empty(k, dtype=np.intp)
    tau = np.empty(k)
    if k == 1:
        origin[0], tau[0] = 0, w[0]
        return origin, tau
    wsum = w.sum()
    for i in range(k):
        if i < k - 1:  # interior root: the sign of f at the midpoint says which pole is nearer
            gap = delta[i + 1] - delta[i]
            f_mid = 1.0
            for j in range(k):
                f_mid += w[j] / ((delta[j] - delta[i]) - gap / 2)
            left = f_mid >= 0  # root in (δ_i, mid] (dlaed4's ORGATI)
            # initial guess (dlaed4): the two poles exact, the other terms frozen at the midpoint
            c = f_mid + 2 * w[i] / gap - 2 * w[i + 1] / gap
            if left:
                o, lo, hi = i, 0.0, gap / 2
                a, b = c * gap + w[i] + w[i + 1], w[i] * gap
                disc = np.sqrt(abs(a * a - 4 * b * c))
                t = 2 * b / (a + disc) if a > 0 else (a - disc) / (2 * c)
            else:
                o, lo, hi = i + 1, -gap / 2, 0.0
                a, b = -c * gap + w[i] + w[i + 1], w[i + 1] * gap
                disc = np.sqrt(abs(a * a + 4 * b * c))
                t = -2 * b / (a + disc) if a > 0 else -(a + disc) / (2 * c)
            L, sg = i, 1.0  # poles of the two-pole model; dlaed4's interior branch
        else:
            o, lo, hi, t = k - 1, 0.0, wsum, wsum / 2
            L, sg = k - 2, -1.0  # the last root: dlaed4's branch beyond the last pole
        if not (lo < t < hi):  # also false for nan
            t = (lo + hi) / 2
        DL, DR = delta[L] - delta[o], delta[L + 1] - delta[o]
        for it in range(_MAX_ITER):
            total = dtotal = psi = dpsi = 0.0
            for j in range(k):
                T = 1.0 / ((delta[j] - delta[o]) - t)  # 1 / (δ_j − x)
                R = w[j] * T
                total += R
                dtotal += R * T
                if R < 0:  # interior roots: the terms j ≤ L are exactly the negative ones
                    psi += R
                    dpsi += R * T
            if sg < 0:  # last root: x > δ_k, ψ = terms j ≤ k−2, φ = term k−1
                T = 1.0 / ((delta[k - 1] - delta[o]) - t)
                psi, dpsi = total - w[k - 1] * T, dtotal - w[k - 1] * T * T
            f = 1.0 + total
            if f > 0:
                hi = t
            elif f < 0:
                lo = t
            err = _EPS * (8.0 * (1.0 + abs(psi) + abs(total - psi)) + 4.0 * abs(f)
                          + abs(t) * dtotal)
            if abs(f) <= err or hi - lo <= 4 * _EPS * max(-lo, hi):
                break
            # middle way step (LAPACK dlaed4): two-pole rational model through f and f'
            dL, dR = DL - t, DR - t
            C = abs(f - dL * dpsi - dR * (dtotal - dpsi))
            A = sg * ((dL + dR) * f - dL * dR * dtotal)
            B = dL * dR * f
            disc = np.sqrt(abs(A * A - 4 * B * C))
            eta = sg * ((A - disc) / (2 * C) if A <= 0 else 2 * B / (A + disc))
            if f * eta > 0 or not np.isfinite(eta):
                eta = -f / dtotal
            cand = t + eta
            if not (lo < cand < hi) or it >= bisect_after:
                t = (lo + hi) / 2
            else:
                small = abs(eta) <= 2 * _EPS * abs(t)
                t = cand
                if small:
                    break  # a full-precision model step ends the iteration too
        origin[i], tau[i] = o, t
    return origin, tau
