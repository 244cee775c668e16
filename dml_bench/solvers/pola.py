"""POLA: the pseudo-metric online learning algorithm (Shalev-Shwartz, Singer & Ng 2004).

POLA learns a pseudo-metric ``d_A(x, z)² = (x − z)ᵀ A (x − z)`` together with a threshold ``b``
from a stream of labelled pairs ``(x_τ, z_τ, y_τ)``, ``y_τ = +1`` for a similar and ``−1`` for a
dissimilar pair. The pair is predicted similar when ``d_A² ≤ b``; the margin requirement is
``y_τ (b − d_A(x_τ, z_τ)²) ≥ 1`` and the loss is its hinge (§2 of the paper; the same margin
and loss with ``μ`` for ``b`` are Eqs. (2)–(3) of Kunapuli & Shavlik 2012):

    ℓ_τ(A, b) = max{0, y_τ (d_A(x_τ, z_τ)² − b) + 1}.

Each round makes two successive orthogonal projections (§3) of ``W = (A, b)``, viewed as a vector
of R^{d²+1} with the Frobenius inner product:

1. onto the half-space ``C_τ = {W : ℓ_τ(W) = 0}``. With ``v = x_τ − z_τ`` and
   ``X_τ = (−v vᵀ, 1)`` (so ``ℓ_τ = max{0, 1 − y_τ⟨W, X_τ⟩}``) this is closed form,

       Â = A − y_τ α_τ v vᵀ,    b̂ = b + y_τ α_τ,    α_τ = ℓ_τ(A, b) / (‖v‖⁴ + 1)

   (``‖X_τ‖² = ‖v vᵀ‖_F² + 1 = ‖v‖⁴ + 1``), after which ``y_τ (d_Â² − b̂) = −1`` exactly;
2. onto ``C_a = {(A, b) : A ⪰ 0, b ≥ 1}``: ``b ← max{b̂, 1}`` and ``A ← Σ_i max{λ_i, 0} u_i u_iᵀ``
   from ``Â = Σ_i λ_i u_i u_iᵀ`` (the nearest PSD matrix in Frobenius norm). For ``y_τ = −1``
   the update adds the PSD term ``α v vᵀ`` and Â is already PSD. For ``y_τ = +1`` the eigenvalues
   of the rank-one down-date interlace those of A (``λ_1(Â) ≤ λ_1(A) ≤ λ_2(Â) ≤ …``), so at
   most the smallest one is negative and the projection is ``A ← Â − λ_1 u_1 u_1ᵀ`` when
   ``λ_1 < 0``: one smallest eigenpair (LAPACK ``dsyevr`` restricted to the first index), not a
   full decomposition, and none at all when a lower bound on ``λ_min(A)`` shows that Â stays PSD.

The iterate ``A`` is a dense d×d matrix (inherent to POLA), kept full and exactly symmetric; a
round costs one matrix–vector product and one rank-one update (O(d²), in place), plus the smallest
eigenpair on the rounds where a similar pair is violated and the down-date may leave the PSD cone.
The pass over the pairs is one compiled loop (numba, :func:`_pola_pass`) that calls LAPACK
``dsyevr`` directly (scipy's ``cython_lapack``) for that eigenpair, so a round costs no interpreter
overhead; ``fit`` returns to Python only between two trace records.

With more features than training points POLA solves in the span of the points
(:mod:`.span`), exactly: from ``A_1 = 0`` every half-space step adds a multiple of ``v vᵀ`` with
``v`` a difference of two points, and the PSD step removes an eigenvector of a negative
eigenvalue, which lies in the range of Â and so in the span; on its complement A stays 0
(``λ_min(Â) < 0`` on all d coordinates exactly when it is on the span coordinates). The pair
distances, the losses and b are the same on the span coordinates, and ``metric_`` is zero off
the span.

Loss bound (Theorem 1 of the paper): if ``R ≥ ‖x_τ − z_τ‖⁴ + 1`` for every τ and some
``A* ⪰ 0, b* ≥ 1`` has ``ℓ_τ(A*, b*) = 0`` for every τ, then from ``A_1 = 0, b_1 = 1``,
``Σ_τ ℓ_τ(A_τ, b_τ)² ≤ R (‖A*‖_F² + (b* − 1)²)`` for any number of rounds; every prediction
mistake costs ``ℓ_τ ≥ 1``, so it also bounds the number of mistakes.
"""

from __future__ import annotations

import time
from numbers import Integral

import numpy as np
from numba import njit
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval

from .base import VERBOSE, MetricLearner, report_progress, store_params
from .linalg import (JIT_OPTIONS, components_from_psd, pair_differences, pair_sq_distances,
                     scipy_routine)

TRACE_KEYS = ("iteration", "objective", "squared_loss", "mistakes", "threshold", "time")

#: the scalars of the POLA iterate (``b`` and ``lam_lb``, a lower bound on ``λ_min(A)``) and its
#: online statistics, one record (a length-1 structured array) updated in place with ``A``
STATE = np.dtype([("b", "f8"), ("lam_lb", "f8"), ("loss", "f8"), ("sq_loss", "f8"),
                  ("mistakes", "i8"), ("n_updates", "i8"), ("n_eig", "i8"), ("n_proj", "i8")])

#: LAPACK dsyevr, callable from the compiled round
_dsyevr = scipy_routine("lapack", "dsyevr", 21)


def pola_state(A, b=1.0):
    """The iterate ``(A, b)`` as :func:`pola_round` takes it: ``(A, state)``.

    ``A`` (PSD) is copied to a C-contiguous float64 array; ``state`` is a record of :data:`STATE`
    with zero statistics and ``lam_lb = λ_min(A)`` (exactly 0 at ``A = 0``, the paper's start).
    """
    A = np.array(A, dtype=np.float64, order="C")
    state = np.zeros(1, dtype=STATE)
    state["b"] = b
    state["lam_lb"] = np.linalg.eigvalsh(A)[0]
    return A, state


@njit(**JIT_OPTIONS)
def _add_outer(A, c, v):
    """``A += c v vᵀ`` in place; ``c (v_i v_j)`` keeps a symmetric A exactly symmetric."""
    for i in range(v.shape[0]):
        for j in range(v.shape[0]):
            A[i, j] += c * (v[i] * v[j])


@njit(**JIT_OPTIONS)
def _smallest_eigenpair(A):
    """``(λ_1, u_1)`` of the symmetric A: LAPACK ``dsyevr`` restricted to the first index."""
    n = A.shape[0]
    a = A.copy()  # dsyevr overwrites its input
    jobz_range_uplo = np.array([ord("V"), ord("I"), ord("U")], np.uint8)  # vectors, by index
    # n, lda, il, iu, m (found), ldz, lwork, liwork, info (scipy's default workspace sizes)
    ints = np.array([n, n, 1, 1, 0, n, 26 * n, 10 * n, 0], np.int32)
    reals = np.zeros(3)  # vl, vu (unused for a range of indices), abstol (LAPACK's default)
    w, z, isuppz = np.empty(n), np.empty(n), np.empty(2, np.int32)
    work, iwork = np.empty(26 * n), np.empty(10 * n, np.int32)
    _dsyevr(jobz_range_uplo[0:].ctypes, jobz_range_uplo[1:].ctypes, jobz_range_uplo[2:].ctypes,
            ints[0:].ctypes, a.ctypes, ints[1:].ctypes,
            reals[0:].ctypes, reals[1:].ctypes, ints[2:].ctypes, ints[3:].ctypes,
            reals[2:].ctypes, ints[4:].ctypes, w.ctypes, z.ctypes, ints[5:].ctypes, isuppz.ctypes,
            work.ctypes, ints[6:].ctypes, iwork.ctypes, ints[7:].ctypes, ints[8:].ctypes)
    if ints[8] != 0:  # pragma: no cover - LAPACK failure
        raise np.linalg.LinAlgError("dsyevr failed")
    return w[0], z


@njit(**JIT_OPTIONS)
def halfspace_projection(A, state, v, y):
    """Step 1: project ``(A, b)`` onto ``C_τ``; returns the loss ``ℓ_τ(A, b)`` before it.

    ``Â = A − y α v vᵀ``, ``b̂ = b + y α`` with ``α = ℓ_τ / (‖v‖⁴ + 1)`` (in place). Counts a
    mistake when ``y (b − d_A²) ≤ 0``.
    """
    s = state[0]
    q = v @ (A @ v)
    if y * (s.b - q) <= 0.0:
        s.mistakes += 1
    loss = max(0.0, y * (q - s.b) + 1.0)
    if loss > 0.0:
        nv2 = v @ v
        alpha = loss / (nv2 * nv2 + 1.0)
        _add_outer(A, -y * alpha, v)
        s.b += y * alpha
        if y > 0:  # a rank-one down-date: λ_min drops by at most α‖v‖²
            s.lam_lb -= alpha * nv2
    return loss


@njit(**JIT_OPTIONS)
def psd_projection(A, state, y):
    """Step 2: project onto ``C_a = {A ⪰ 0, b ≥ 1}`` after a half-space step of label y.

    ``b ← max(b̂, 1)``. For ``y = −1`` Â = A + α v vᵀ is PSD: nothing to do. For ``y = +1``
    Â has at most one negative eigenvalue (interlacing); it is removed with its eigenvector,
    computed only when the lower bound ``lam_lb`` of ``λ_min(Â)`` is negative.
    """
    s = state[0]
    s.b = max(s.b, 1.0)
    if y < 0 or s.lam_lb >= 0.0:
        return
    lam, u = _smallest_eigenpair(A)
    s.n_eig += 1
    if lam < 0.0:
        _add_outer(A, -lam, u)
        s.n_proj += 1
        s.lam_lb = 0.0
    else:
        s.lam_lb = lam


@njit(**JIT_OPTIONS)
def pola_round(A, state, v, y):
    """One POLA round on the pair difference ``v`` with label ``y``; returns its loss."""
    loss = halfspace_projection(A, state, v, y)
    if loss > 0.0:
        psd_projection(A, state, y)
        s = state[0]
        s.loss += loss
        s.sq_loss += loss * loss
        s.n_updates += 1
    return loss


@njit(**JIT_OPTIONS)
def _pola_pass(A, state, D, Y):
    """:func:`pola_round` on every row of ``D`` (pair differences) with its label in ``Y``."""
    for t in range(D.shape[0]):
        pola_round(A, state, D[t], Y[t])


class POLA(MetricLearner):
    """Pseudo-metric online learning algorithm (Shalev-Shwartz, Singer & Ng 2004, §3).

    Online over the labelled pairs of the constraints: ``Constraints.similar`` are ``y = +1``
    and ``Constraints.dissimilar`` ``y = −1`` (Kunapuli & Shavlik 2012, §7.1, generate them with
    ``knn_pairs``, k = 3). Each round projects ``(A, b)`` onto the example's half-space and then
    onto ``{A ⪰ 0, b ≥ 1}`` (see the module docstring); the returned metric is the last iterate.

    Parameters
    ----------
    n_epochs : int, default=1
        Passes over the pairs. POLA is an online algorithm and Kunapuli & Shavlik (2012, Table 3)
        use it as one: one pass. More passes stop early after a pass without any update
        (every pair then has zero hinge loss).
    shuffle : bool, default=True
        Present the pairs in a random order (a new permutation each pass, from
        ``random_state``). ``False``: the given order, similar pairs first, then dissimilar.
    random_state : int, RandomState or None, default=0
        Seeds the presentation order (default fixed, so results do not depend on global state).
    log_every : int, default=100
        Append to ``trace_`` every ``log_every`` rounds (and after the last round). The compiled
        pass returns to Python for each record (a few µs), so ``log_every=1`` — one entry per
        round, ``len(trace_["time"]) == n_iter_`` — works but brings back a Python step per round
        (the default was 1 before the pass was compiled).
    verbose : int, default=0
        0: silent; 1: one line at the end of the fit (rounds, objective, converged, seconds);
        2 and more: also one line per trace record (every ``log_every`` rounds).

    Attributes
    ----------
    metric_ : ndarray (d, d)
        The last iterate ``A`` (PSD).
    components_ : ndarray (d, d), or (``span_dim_``, d)
        L with ``A = LᵀL`` (one row per span coordinate after a solve in the span).
    span_dim_ : int or None
        The dimension q of the span of the training points it solved in (module docstring),
        None when it solved in all d coordinates.
    span_basis_ : ndarray of shape (d, ``span_dim_``) or None
        The orthonormal basis V of that span (``metric_ = V A_V Vᵀ``).
    threshold_ : float
        The last threshold ``b`` (≥ 1): a pair is predicted similar when ``d_A² ≤ b``.
    objective_ : float
        Mean hinge loss ``ℓ(A, b)`` of the returned ``(A, b)`` over all the pairs.
    online_loss_ : float
        Cumulative online hinge loss ``Σ_τ ℓ_τ(A_τ, b_τ)`` (each loss before its update).
    n_mistakes_ : int
        Online prediction mistakes: rounds with ``y_τ (b_τ − d_{A_τ}²) ≤ 0``.
    n_updates_ : int
        Rounds with positive loss (the others leave ``(A, b)`` unchanged).
    n_eigensolves_, n_psd_projections_ : int
        Smallest-eigenpair computations, and those that found a negative eigenvalue to remove.
    n_iter_ : int
        Rounds played (pairs presented, over all passes).
    n_epochs_ : int
        Passes made.
    converged_ : bool
        Whether the last pass made no update (all pairs satisfy the margin). POLA runs a fixed
        number of passes, so no ConvergenceWarning is raised when this is False.
    optimality_ : float
        NaN (``optimality_measure`` ``"none (fixed number of passes)"``).
    trace_ : dict of ndarray
        Every ``log_every`` rounds: ``iteration`` (the round, 1-based), ``objective``
        (cumulative online loss ``Σ ℓ_τ``), ``squared_loss`` (``Σ ℓ_τ²``, the quantity of
        Theorem 1), ``mistakes`` (cumulative), ``threshold`` (b) and ``time`` (seconds since the
        start of ``fit``).

    Notes
    -----
    The paper initialises ``A_1 = 0, b_1 = 1`` (the origin of its loss bound). There a similar
    pair has ``ℓ = max{0, (0 − 1) + 1} = 0`` and a dissimilar one ``ℓ = 2``, so the first updates
    come from dissimilar pairs. Kunapuli & Shavlik give POLA no parameter: the algorithm has none
    besides the presentation order.

    References
    ----------
    S. Shalev-Shwartz, Y. Singer and A. Y. Ng. Online and batch learning of pseudo-metrics.
    Proc. 21st ICML, 2004, pp. 94–102. doi:10.1145/1015330.1015376

    G. Kunapuli and J. Shavlik. Mirror descent for metric learning: a unified approach.
    ECML PKDD 2012 (POLA as the online comparator of §7, Table 3).
    """

    constraint_kind = "pairs"
    #: every update is a multiple of a pair difference's outer product, or removes an
    #: eigenvector of Â's range, from A_1 = 0 (module docstring)
    span_complement = "zero"
    optimality_measure = "none (fixed number of passes)"
    _parameter_constraints: dict = {
        "n_epochs": [Interval(Integral, 1, None, closed="left")],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
        "log_every": [Interval(Integral, 1, None, closed="left")],
        "verbose": VERBOSE,
    }

    def __init__(self, n_epochs=1, shuffle=True, random_state=0, log_every=100, verbose=0):
        store_params(self, locals())

    def _fit(self, X, y, constraints):
        start = time.perf_counter()
        pairs = np.vstack([np.asarray(constraints.similar, dtype=np.intp).reshape(-1, 2),
                           np.asarray(constraints.dissimilar, dtype=np.intp).reshape(-1, 2)])
        labels = np.concatenate([np.ones(len(constraints.similar)),
                                 -np.ones(len(constraints.dissimilar))])
        if len(pairs) == 0:
            raise ValueError("POLA needs at least one similar or dissimilar pair")
        rng = check_random_state(self.random_state)
        A, state = pola_state(np.zeros((X.shape[1], X.shape[1])))
        s = state[0]  # a view: follows the compiled updates
        trace = {k: [] for k in TRACE_KEYS}
        log_every = int(self.log_every)
        epoch, n_rounds, updates_in_epoch = 0, 0, -1
        for epoch in range(1, self.n_epochs + 1):
            order = rng.permutation(len(pairs)) if self.shuffle else np.arange(len(pairs))
            D = np.ascontiguousarray(pair_differences(X, pairs[order]))  # rows in order
            Y = labels[order]
            updates_before = s["n_updates"]
            # the compiled pass runs between two trace records (log_every rounds at a time)
            cuts = np.arange(log_every - n_rounds % log_every, len(Y), log_every)
            for D_chunk, Y_chunk in zip(np.split(D, cuts), np.split(Y, cuts)):
                _pola_pass(A, state, D_chunk, Y_chunk)
                n_rounds += len(Y_chunk)
                if n_rounds % log_every == 0:
                    _log(trace, s, n_rounds, start)
                    if self.verbose >= 2:
                        report_progress(self, n_rounds, online_loss=trace["objective"][-1],
                                        mistakes=trace["mistakes"][-1],
                                        threshold=trace["threshold"][-1])
            updates_in_epoch = s["n_updates"] - updates_before
            if updates_in_epoch == 0:
                break
        if not trace["iteration"] or trace["iteration"][-1] != n_rounds:
            _log(trace, s, n_rounds, start)
        self.components_ = components_from_psd(A)
        self.metric_ = self.components_.T @ self.components_
        self.threshold_ = float(s["b"])
        q = pair_sq_distances(X @ self.components_.T, pairs)
        self.objective_ = float(np.mean(np.maximum(0.0, labels * (q - s["b"]) + 1.0)))
        self.online_loss_ = float(s["loss"])
        self.n_mistakes_ = int(s["mistakes"])
        self.n_updates_ = int(s["n_updates"])
        self.n_eigensolves_ = int(s["n_eig"])
        self.n_psd_projections_ = int(s["n_proj"])
        self.n_iter_ = int(n_rounds)
        self.n_epochs_ = int(epoch)
        self.converged_ = bool(updates_in_epoch == 0)
        self.optimality_ = float("nan")
        self.trace_ = {k: np.asarray(vals, dtype=float) for k, vals in trace.items()}


def _log(trace, s, n_rounds, start):
    for key, val in zip(TRACE_KEYS, (n_rounds, s["loss"], s["sq_loss"], s["mistakes"], s["b"],
                                     time.perf_counter() - start)):
        trace[key].append(val)
