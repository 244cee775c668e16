"""MDML: mirror descent for metric learning (Kunapuli & Shavlik 2012, Algorithm 1).

Online composite-objective mirror descent (COMID, Duchi et al. 2010) on Eq. (4),

    min_{M ⪰ 0, µ ≥ 1}  (1/T) Σ_t ℓ_t(M, µ) + ρ ‖M‖_*,

over labelled pairs ``(x_t, z_t, y_t)`` with the margin (3) ``m_t = y_t (µ − u_tᵀ M u_t)``,
``u_t = x_t − z_t`` (similar pairs y = +1, dissimilar y = −1). Every loss of Table 1 has
``∇_M ℓ_t = α_t u_t u_tᵀ`` with ``α_t = y_t · g(m_t)``, ``g = −ℓ'`` and ``∇_µ ℓ_t = −α_t``, so step
(9) ``∇ψ(M_{t+½}) = ∇ψ(M_t) − η_t α_t u_t u_tᵀ`` is a symmetric rank-one update of the
eigendecomposition of ``∇ψ(M_t)`` (§4, :func:`rank_one_eigh_update`), and (10)–(12) (Proposition 1)
shrink its eigenvalues: ``M_{t+1} = V ∇ψ⁻¹((λ − η_t ρ)_+) Vᵀ``.

* ``divergence="frobenius"``: ψ = ½‖·‖²_F, ``∇ψ = id``: additive step, then eigenvalue
  soft-thresholding = the exact prox of ``η_t ρ tr(M)`` on the PSD cone (MDML H+F with the hinge).
* ``divergence="von_neumann"``: ψ = tr(M log M − M), ``∇ψ = log``: ``log M`` is updated and
  thresholded, ``M = V exp((λ − η_t ρ)_+) Vᵀ`` (multiplicative; MDML L+V with the logistic loss).

The state is the eigendecomposition ``∇ψ(M_t) = V diag(λ) Vᵀ`` only; ``z = Vᵀu`` gives the margin
``uᵀMu = Σ_i h(λ_i) z_i²`` (h = id or exp) and is reused by the rank-one update, so a step costs
O(d²) for the secular equation plus the d × k × k back-rotation of the k non-deflated eigenpairs —
never a fresh ``eigh`` and never a d×d matrix per pair. The pass over the pairs is one compiled
loop (numba, :func:`_comid_pass`), so a step costs no interpreter overhead.

References
----------
G. Kunapuli and J. Shavlik. Mirror descent for metric learning: a unified approach. ECML PKDD 2012,
LNAI 7523, pp. 859–874. Eqs. (3), (4), (7)–(13), Table 1, Algorithm 1, §7.
J. Duchi, S. Shalev-Shwartz, Y. Singer and A. Tewari. Composite objective mirror descent. COLT 2010.
"""

from __future__ import annotations

import time
from numbers import Integral, Real

import numpy as np
from numba import njit
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from .base import VERBOSE, MetricLearner, integral_floats, report_progress, store_params
from .eigen_update import _rank_one_update
from .linalg import components_from_psd, pair_differences

LOSSES = ("hinge", "modified_least_squares", "exponential", "logistic")
DIVERGENCES = ("frobenius", "von_neumann")


def loss_and_slope(m, loss):
    """Table 1's losses ``ℓ(m)`` and their slopes ``g(m) = −dℓ/dm ≥ 0``, element-wise.

    ``∇_M ℓ_t = g(m_t) y_t u_t u_tᵀ`` and ``∇_µ ℓ_t = −g(m_t) y_t``. For the hinge Table 1 writes
    the slope as ``(1 − m)_*`` with the "step function" of §1.2; it is the (sub)gradient
    ``1[m < 1]`` (§1.2's definition of ``v_*``, which repeats the plus function, is read as the
    step function it is named after — otherwise the hinge gradient would be the modified least
    squares one).
    """
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    m = np.asarray(m, dtype=np.float64)
    losses, slopes = _loss_and_slope_flat(m.reshape(-1), LOSSES.index(loss))
    return losses.reshape(m.shape), slopes.reshape(m.shape)


@njit(cache=True, nogil=True)
def _loss_and_slope_flat(m, code):
    """:func:`_loss` and :func:`_slope` at every entry of the 1-d array ``m``."""
    losses, slopes = np.empty_like(m), np.empty_like(m)
    for i in range(m.shape[0]):
        losses[i], slopes[i] = _loss(m[i], code), _slope(m[i], code)
    return losses, slopes


@njit(cache=True, nogil=True)
def _loss(m, code):
    """ℓ(m) of Table 1 for ``LOSSES[code]`` at a scalar ``m`` (compiled on first use, like every
    kernel here, so that importing the package compiles nothing)."""
    if code == 0:
        return max(0.0, 1.0 - m)
    if code == 1:
        return 0.5 * max(0.0, 1.0 - m) ** 2
    if code == 2:
        return np.exp(-m)
    return max(0.0, -m) + np.log1p(np.exp(-abs(m)))  # log(1 + e^{−m}), overflow-free


@njit(cache=True, nogil=True)
def _slope(m, code):
    """g(m) = −ℓ'(m) of Table 1 for ``LOSSES[code]`` at a scalar ``m``."""
    if code == 0:
        return 1.0 if m < 1.0 else 0.0
    if code == 1:
        return max(0.0, 1.0 - m)
    if code == 2:
        return np.exp(-m)
    if m >= 0:  # σ(−m) = e^{−m} / (1 + e^{−m}), overflow-free on both sides
        e = np.exp(-m)
        return e / (1.0 + e)
    return 1.0 / (1.0 + np.exp(m))


@njit(cache=True, nogil=True)
def comid_step(eigvals, eigvecs, coef, z, threshold, hard=False):
    """Steps (9)–(12) in eigen coordinates: eigendecomposition of ``∇ψ(M_{t+1})``.

    ``∇ψ(M_{t+½}) = V diag(λ) Vᵀ − coef · u uᵀ`` (rank-one update, §4) with ``z = Vᵀu``, then the
    eigenvalues are shrunk, ``(λ − threshold)_+`` (Proposition 1; ``threshold = η_t ρ``), or with
    ``hard`` those below ``threshold`` are set to 0 and the others kept.
    Returns (λ', V').
    """
    if coef != 0.0:
        eigvals, eigvecs = _rank_one_update(eigvals, eigvecs, -coef, z)
    shrunk = np.empty_like(eigvals)  # a loop: np.where's broadcasting compiles for seconds
    for i in range(eigvals.shape[0]):
        if hard:
            shrunk[i] = 0.0 if eigvals[i] < threshold else eigvals[i]
        else:
            shrunk[i] = max(eigvals[i] - threshold, 0.0)
    return shrunk, eigvecs


@njit(cache=True, nogil=True)
def _comid_pass(U, labels, order, t, lam, V, mu, eta, rho, loss_code, von_neumann, hard):
    """Algorithm 1 over the pairs ``order`` (rows of ``U``), from update count ``t``.

    Per pair: the margin (3) from ``z = Vᵀu``, the slope of Table 1, steps (9)–(12) with
    ``η_t = η/√t`` and the µ step (13). Returns (λ, V, µ, t, m) where ``m`` is the margin at which
    the loss gradient overflowed (the pass stops there) or nan.
    """
    for p in order:
        t += 1
        eta_t = eta / np.sqrt(t)
        z = V.T @ U[p]
        hl = np.exp(lam) if von_neumann else lam
        m = labels[p] * (mu - np.dot(hl, z * z))  # margin (3)
        alpha = labels[p] * _slope(m, loss_code)  # ∇_M ℓ_t = α u uᵀ, ∇_µ ℓ_t = −α (Table 1)
        if not np.isfinite(alpha):
            return lam, V, mu, t, m
        # (9)–(12); the authors' code instead zeroes the eigenvalues below ρ
        lam, V = comid_step(lam, V, eta_t * alpha, z, rho if hard else eta_t * rho, hard)
        mu = max(mu * np.exp(eta_t * alpha) if von_neumann else mu + eta_t * alpha, 1.0)  # (13)
    return lam, V, mu, t, np.nan


def off_span_shrinkage(value: float, t0: int, t1: int, eta: float, rho: float,
                       hard: bool) -> float:
    """The eigenvalue of ``∇ψ(M)`` off the span of the points after the updates ``t0 + 1 … t1``
    from ``value``: no rank-one term reaches it (``z = Vᵀu`` is 0 there), only the shrinkage of
    each step, ``(λ − η_t ρ)_+``, or with ``hard`` the cut at ρ (:func:`comid_step`)."""
    if t1 == t0:
        return value
    if hard:
        return 0.0 if value < rho else value
    shrink = rho * (eta / np.sqrt(np.arange(t0 + 1, t1 + 1, dtype=np.float64)))
    return max(value - float(shrink.sum()), 0.0)  # once at 0 it stays there


class MDML(MetricLearner):
    """Mirror descent metric learning (Kunapuli & Shavlik 2012, Algorithm 1).

    Parameters
    ----------
    loss : {"hinge", "modified_least_squares", "exponential", "logistic"}, default="hinge"
        ℓ of Table 1 on the margin (3). §7's two variants: hinge + Frobenius (H+F), logistic +
        von Neumann (L+V).
    divergence : {"frobenius", "von_neumann"}, default="frobenius"
        Bregman function ψ of §2.2 for M; µ uses its scalar counterpart (½µ² resp. µ log µ − µ), so
        (13) reads ``µ ← max(µ + η_t α_t, 1)`` resp. ``µ ← max(µ exp(η_t α_t), 1)``.
    eta : float or None, default=None
        η of the learning rate ``η_t = η/√t`` (§4). §7 selects η and ρ by 10-fold (UCI) / 5-fold
        (optdigits) cross-validation and reports no values. ``None``: 0.1 for Frobenius, 1.0 for
        von Neumann, chosen on z-scored wine / iris (5 stratified 70/30 splits, grid η ∈ {0.01,
        0.1, 1}, ρ ∈ {0, 1e-3, 0.1}); with M_0 = I a Frobenius step ``η‖u‖²`` of order one suits
        nearest-neighbour pairs of z-scored data, while the von Neumann step acts on log M, whose
        thresholded eigenvalues stay ≥ 0 (M ⪰ I), and η = 0.1 leaves M ≈ I after one pass.
    rho : float, default=1e-3
        ρ, weight of the trace norm (4); each step shrinks the eigenvalues of ∇ψ(M) by ``η_t ρ``.
        Not reported in §7 (cross-validated); chosen with ``eta`` as above. Larger ρ gives
        sparser spectra (Fig. 4).
    n_epochs : int, default=1
        Passes over the pairs. Algorithm 1 is one pass (T = number of pairs); t keeps counting
        over further passes (η_t = η/√t with the global t). An integral float such as ``2.0``
        is taken as the int.
    shuffle : bool, default=True
        Visit the pairs of each pass in a random order drawn from ``random_state`` (otherwise
        similar pairs first, then dissimilar ones, in the given order).
    random_state : int, RandomState or None, default=0
    log_every : int or None, default=2000
        Record ``trace_`` every ``log_every`` updates (and after the last); ``None``: once per pass.
        Each record costs one T × d × d GEMM over all pairs.
    shrinkage : {"soft", "hard"}, default="soft"
        ``"soft"``: Proposition 1's ``(λ − η_t ρ)_+`` on the eigenvalues of ``∇ψ(M_{t+½})``, the
        paper's step. ``"hard"``: the eigenvalues below ρ are set to 0 and the others kept, as
        the authors' published MATLAB code does (a protocol variant; not the prox of the trace
        norm).
    verbose : int, default=0
        0: silent; 1: one line at the end of the fit (updates, objective, seconds); 2 and more:
        also one line per trace record.

    With more features than training points, the fit runs in the span of the points'
    differences (:mod:`~dml_bench.solvers.span`; ``span_dim_``), with the same updates as in all
    d coordinates: each step's rank-one term ``u uᵀ`` lies on the span, so ``∇ψ(M)`` keeps one
    eigenvalue off it, which only the shrinkage moves (1 for Frobenius, 0 for von Neumann at
    ``M_0 = I``; :func:`off_span_shrinkage`), and M is ``h`` of it times the identity there.
    The trace norm, ``rank`` and ``eigenvalues_`` count those d − q eigenvalues.

    Attributes
    ----------
    metric_ : ndarray (d, d)
        ``M = V h(Λ) Vᵀ`` (h = identity for Frobenius, exp for von Neumann).
    components_ : ndarray (d, d)
        L with M = LᵀL.
    threshold_ : float
        µ.
    eta_ : float
        The η used (``eta`` or its per-divergence default).
    eigenvalues_ : ndarray (d,)
        Eigenvalues of M, ascending (zeros for the shrunk directions of H+F).
    objective_ : float
        Eq. (4) at the returned (M, µ): mean of ℓ_t over all T pairs plus ρ tr(M)
        (= ρ‖M‖_* on the PSD cone).
    n_iter_ : int
        Number of pair updates (T · n_epochs).
    converged_ : bool
        Always True: Algorithm 1 has no stopping test; it ends after its passes.
    optimality_ : float
        nan: an online pass certifies no optimality (``optimality_measure``).
    trace_ : dict of ndarray
        Per record: ``objective`` (Eq. (4)), ``mean_loss``, ``threshold`` (µ), ``rank`` (eigenvalues
        of ∇ψ(M) that are non-zero, i.e. of M above 0 for Frobenius and above 1 for von Neumann),
        ``n_updates``, ``time`` (seconds since the start of ``fit``).
    span_dim_ : int or None
        The dimension of the span the fit ran in, or None when it ran in all coordinates.
    span_basis_ : ndarray (d, ``span_dim_``) or None
        An orthonormal basis of that span.

    Notes
    -----
    Readings of the paper where it is ambiguous:

    * Algorithm 1, step 8 omits the step size (``… − α_t u uᵀ``) and step 10 uses η, not η_t; we
      follow (9) and (13), with the learning rate ``η_t = η/√t`` of §4 in the M step, the µ step
      and the shrinkage ``η_t ρ`` (COMID (7) with step η_t).
    * Table 1's hinge slope ``(1 − m)_*``: §1.2 defines ``v_*`` like the plus function; read as the
      step function its name says, i.e. the hinge subgradient ``1[m < 1]`` (with the literal
      reading the hinge would update like the modified least squares loss).
    * von Neumann: (12) shrinks the eigenvalues of ``log M_{t+½}`` and cuts them at 0, so every
      eigenvalue of M is ≥ 1 ("the smallest eigenvalues … will all be 1", §4) and M ⪰ I. This is
      the paper's rule and is what we implement; it is not the exact minimiser of (10) for this
      divergence (which would be ``e^{−η_t ρ} M_{t+½}``, never rank-deficient).
    * §7.1 z-scores the UCI sets; §7.2 does not say how optdigits is normalised.

    References
    ----------
    G. Kunapuli and J. Shavlik. Mirror descent for metric learning: a unified approach.
    ECML PKDD 2012, LNAI 7523, pp. 859–874.
    """

    constraint_kind = "pairs"
    optimality_measure = "none (fixed number of passes)"
    span_complement = "identity"
    _parameter_constraints: dict = {
        "loss": [StrOptions(set(LOSSES))],
        "divergence": [StrOptions(set(DIVERGENCES))],
        "eta": [Interval(Real, 0, None, closed="neither"), None],
        "rho": [Interval(Real, 0, None, closed="left")],
        "n_epochs": [Interval(Integral, 1, None, closed="left"), integral_floats(1)],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
        "log_every": [Interval(Integral, 1, None, closed="left"), None],
        "shrinkage": [StrOptions({"soft", "hard"})],
        "verbose": VERBOSE,
    }
    #: the paper's shrinkage is the fit from before ``shrinkage`` existed
    neutral_params = {**MetricLearner.neutral_params, "shrinkage": "soft"}

    def __init__(self, loss="hinge", divergence="frobenius", eta=None, rho=1e-3, n_epochs=1,
                 shuffle=True, random_state=0, log_every=2000, shrinkage="soft", verbose=0):
        store_params(self, locals())

    def _fit(self, X, y, constraints):
        start = time.perf_counter()
        pairs = np.vstack([np.asarray(constraints.similar).reshape(-1, 2),
                           np.asarray(constraints.dissimilar).reshape(-1, 2)]).astype(np.intp)
        labels = np.concatenate([np.ones(len(constraints.similar)),
                                 -np.ones(len(constraints.dissimilar))])
        if len(pairs) == 0:
            raise ValueError("MDML needs at least one similar or dissimilar pair")
        U = pair_differences(X, pairs)  # one row u_t per pair, never a d×d matrix per pair
        n_pairs, d = U.shape
        vn = self.divergence == "von_neumann"
        eta = self.eta if self.eta is not None else (1.0 if vn else 0.1)
        self.eta_ = float(eta)
        h = np.exp if vn else (lambda lam: lam)  # M = V h(Λ) Vᵀ from ∇ψ(M) = V Λ Vᵀ
        lam = np.zeros(d) if vn else np.ones(d)  # M_0 = I: log M_0 = 0, resp. M_0 = I
        off = 0.0 if vn else 1.0  # the same off the span of the points, if solving in it
        V = np.eye(d)
        mu = 1.0  # µ_0 = 1
        rng = check_random_state(self.random_state)
        log_every = self.log_every or n_pairs
        trace = {k: [] for k in
                 ("objective", "mean_loss", "threshold", "rank", "n_updates", "time")}
        t = 0
        code = LOSSES.index(self.loss)
        for _ in range(int(self.n_epochs)):
            order = rng.permutation(n_pairs) if self.shuffle else np.arange(n_pairs)
            # the compiled pass runs between two trace records (log_every pairs at a time)
            for chunk in np.split(order, np.arange(log_every - t % log_every, n_pairs, log_every)):
                t0 = t
                lam, V, mu, t, m = _comid_pass(U, labels, chunk, t, lam, V, mu, eta, self.rho,
                                               code, vn, self.shrinkage == "hard")
                off = off_span_shrinkage(off, t0, t, eta, self.rho, self.shrinkage == "hard")
                if np.isfinite(m):
                    raise FloatingPointError(
                        f"MDML: the {self.loss} loss gradient overflowed at update {t} "
                        f"(margin {m:.3g}); decrease eta or normalise the data")
                if t % log_every == 0:
                    self._record(trace, U, labels, lam, V, h, mu, t, start, off)
        if not trace["n_updates"] or trace["n_updates"][-1] != t:
            self._record(trace, U, labels, lam, V, h, mu, t, start, off)
        hl = h(lam)
        M = (V * hl) @ V.T
        self.metric_ = (M + M.T) / 2
        self.components_ = components_from_psd(self.metric_)
        off_span = getattr(self, "_off_span_dim", 0)
        self._complement = float(h(off))  # M off the span of the points, when solving in it
        self.eigenvalues_ = np.sort(np.append(hl, np.full(off_span, self._complement)))
        self.threshold_ = float(mu)
        self.objective_ = float(trace["objective"][-1])
        self.n_iter_ = t
        self.converged_ = True
        self.optimality_ = float("nan")
        self.trace_ = {k: np.asarray(v) for k, v in trace.items()}

    def _span_complement_scale(self) -> float:
        return self._complement

    def _record(self, trace, U, labels, lam, V, h, mu, t, start, off):
        """Append Eq. (4) at the current (M, µ): distances row-wise from ``U V h(Λ)^{1/2}``;
        ``off``: ∇ψ(M)'s eigenvalue off the span of the points, when solving in it."""
        active = lam != 0  # for Frobenius only the non-zero eigenvalues contribute
        hl = h(lam)
        if self.divergence == "frobenius":
            W = U @ V[:, active]
            dist = (W * W) @ hl[active]
        else:
            W = U @ V
            dist = (W * W) @ hl
        mean_loss = float(loss_and_slope(labels * (mu - dist), self.loss)[0].mean())
        off_span = getattr(self, "_off_span_dim", 0)  # each with eigenvalue `off` of ∇ψ(M)
        trace["objective"].append(mean_loss + self.rho * (float(hl.sum())
                                                          + off_span * float(h(off))))
        trace["mean_loss"].append(mean_loss)
        trace["threshold"].append(float(mu))
        trace["rank"].append(int(active.sum()) + (off_span if off != 0 else 0))
        trace["n_updates"].append(t)
        trace["time"].append(time.perf_counter() - start)
        if self.verbose >= 2:
            report_progress(self, t, objective=trace["objective"][-1], mean_loss=mean_loss,
                            threshold=mu, rank=trace["rank"][-1])
