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

The iterate ``A`` is a dense d×d matrix (inherent to POLA); a round costs one symmetric
matrix–vector product and one symmetric rank-one update (BLAS ``dsymv`` / ``dsyr`` on the upper
triangle, in place), plus the smallest eigenpair on the rounds where a similar pair is violated
and the down-date may leave the PSD cone.

Loss bound (Theorem 1 of the paper): if ``R ≥ ‖x_τ − z_τ‖⁴ + 1`` for every τ and some
``A* ⪰ 0, b* ≥ 1`` has ``ℓ_τ(A*, b*) = 0`` for every τ, then from ``A_1 = 0, b_1 = 1``,
``Σ_τ ℓ_τ(A_τ, b_τ)² ≤ R (‖A*‖_F² + (b* − 1)²)`` for any number of rounds; every prediction
mistake costs ``ℓ_τ ≥ 1``, so it also bounds the number of mistakes.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.linalg.blas import dsymv, dsyr
from scipy.linalg.lapack import dsyevr
from sklearn.utils import check_random_state

from .base import MetricLearner
from .linalg import components_from_psd, pair_differences, pair_sq_distances

TRACE_KEYS = ("round", "objective", "squared_loss", "mistakes", "threshold", "time")


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
    log_every : int, default=1
        Append to ``trace_`` every ``log_every`` rounds (and after the last round). With 1 the
        trace has one entry per round (``len(trace_["time"]) == n_iter_``).

    Attributes
    ----------
    metric_ : ndarray (d, d)
        The last iterate ``A`` (PSD).
    components_ : ndarray (d, d)
        L with ``A = LᵀL``.
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
    trace_ : dict of ndarray
        Every ``log_every`` rounds: ``round`` (1-based), ``objective`` (cumulative online loss
        ``Σ ℓ_τ``), ``squared_loss`` (``Σ ℓ_τ²``, the quantity of Theorem 1), ``mistakes``
        (cumulative), ``threshold`` (b) and ``time`` (seconds since the start of ``fit``).

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

    def __init__(self, n_epochs=1, shuffle=True, random_state=0, log_every=1):
        self.n_epochs = n_epochs
        self.shuffle = shuffle
        self.random_state = random_state
        self.log_every = log_every

    def _check_params(self):
        for name in ("n_epochs", "log_every"):
            value = getattr(self, name)
            if not (isinstance(value, (int, np.integer)) and value >= 1):
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")

    def _fit(self, X, y, constraints):
        self._check_params()
        start = time.perf_counter()
        pairs = np.vstack([np.asarray(constraints.similar, dtype=np.intp).reshape(-1, 2),
                           np.asarray(constraints.dissimilar, dtype=np.intp).reshape(-1, 2)])
        labels = np.concatenate([np.ones(len(constraints.similar)),
                                 -np.ones(len(constraints.dissimilar))])
        if len(pairs) == 0:
            raise ValueError("POLA needs at least one similar or dissimilar pair")
        rng = check_random_state(self.random_state)
        d = X.shape[1]
        state = PolaState(d)
        trace = {k: [] for k in TRACE_KEYS}
        log_every = int(self.log_every)
        epoch, n_rounds, updates_in_epoch = 0, 0, -1
        for epoch in range(1, self.n_epochs + 1):
            order = rng.permutation(len(pairs)) if self.shuffle else np.arange(len(pairs))
            D = pair_differences(X, pairs[order])  # the pass's difference rows, in order
            Y = labels[order]
            norms2 = np.einsum("ij,ij->i", D, D)
            updates_before = state.n_updates
            for v, y_t, nv2 in zip(D, Y, norms2):
                state.round(v, float(y_t), float(nv2))
                n_rounds += 1
                if n_rounds % log_every == 0:
                    _log(trace, state, n_rounds, start)
            updates_in_epoch = state.n_updates - updates_before
            if updates_in_epoch == 0:
                break
        if not trace["round"] or trace["round"][-1] != n_rounds:
            _log(trace, state, n_rounds, start)
        A = state.matrix()
        self.components_ = components_from_psd(A)
        self.metric_ = self.components_.T @ self.components_
        self.threshold_ = float(state.b)
        q = pair_sq_distances(X @ self.components_.T, pairs)
        self.objective_ = float(np.mean(np.maximum(0.0, labels * (q - state.b) + 1.0)))
        self.online_loss_ = float(state.loss)
        self.n_mistakes_ = int(state.mistakes)
        self.n_updates_ = int(state.n_updates)
        self.n_eigensolves_ = int(state.n_eig)
        self.n_psd_projections_ = int(state.n_proj)
        self.n_iter_ = int(n_rounds)
        self.n_epochs_ = int(epoch)
        self.converged_ = bool(updates_in_epoch == 0)
        self.trace_ = {k: np.asarray(vals, dtype=float) for k, vals in trace.items()}


def _log(trace, state, n_rounds, start):
    for key, val in zip(TRACE_KEYS, (n_rounds, state.loss, state.sq_loss, state.mistakes, state.b,
                                     time.perf_counter() - start)):
        trace[key].append(val)


class PolaState:
    """The POLA iterate ``(A, b)`` and its online statistics; one :meth:`round` per example.

    ``A`` is kept in Fortran order with only its upper triangle valid (BLAS ``dsymv``/``dsyr``
    and LAPACK ``dsyevr`` read and write that triangle); :meth:`matrix` returns the full
    symmetric matrix. Starts at ``A_1 = 0, b_1 = 1`` (the paper's initialisation).
    """

    def __init__(self, d: int, A: np.ndarray | None = None, b: float = 1.0):
        self.A = np.zeros((d, d), order="F") if A is None else np.array(A, dtype=float, order="F")
        self.b = float(b)
        # lower bound on λ_min(A): exact 0 at A = 0 (or computed; A must be PSD), kept valid by
        # every update (A + α v vᵀ does not lower it, A − α v vᵀ lowers it by at most α‖v‖²)
        self.lam_lb = 0.0 if A is None else float(np.linalg.eigvalsh(self.matrix())[0])
        self.loss = self.sq_loss = 0.0
        self.mistakes = self.n_updates = self.n_eig = self.n_proj = 0

    def matrix(self) -> np.ndarray:
        """The full symmetric ``A`` from its upper triangle."""
        U = np.triu(self.A)
        return U + np.triu(U, 1).T

    def halfspace_projection(self, v: np.ndarray, y: float, nv2: float | None = None) -> float:
        """Step 1: project ``(A, b)`` onto ``C_τ``; returns the loss ``ℓ_τ(A, b)`` before it.

        ``Â = A − y α v vᵀ``, ``b̂ = b + y α`` with ``α = ℓ_τ / (‖v‖⁴ + 1)`` (in place).
        """
        if nv2 is None:
            nv2 = float(v @ v)
        q = float(v @ dsymv(1.0, self.A, v, lower=0))
        if y * (self.b - q) <= 0.0:
            self.mistakes += 1
        loss = max(0.0, y * (q - self.b) + 1.0)
        if loss > 0.0:
            alpha = loss / (nv2 * nv2 + 1.0)
            self.A = dsyr(-y * alpha, v, a=self.A, lower=0, overwrite_a=True)
            self.b += y * alpha
            if y > 0:  # a rank-one down-date: λ_min drops by at most α‖v‖²
                self.lam_lb -= alpha * nv2
        return loss

    def psd_projection(self, y: float) -> None:
        """Step 2: project onto ``C_a = {A ⪰ 0, b ≥ 1}`` after a half-space step of label y.

        ``b ← max(b̂, 1)``. For ``y = −1`` Â = A + α v vᵀ is PSD: nothing to do. For ``y = +1``
        Â has at most one negative eigenvalue (interlacing); it is removed with its eigenvector,
        computed only when the lower bound ``lam_lb`` of ``λ_min(Â)`` is negative.
        """
        self.b = max(self.b, 1.0)
        if y < 0 or self.lam_lb >= 0.0:
            return
        w, Z, _, _, info = dsyevr(self.A, compute_v=1, range="I", lower=0, il=1, iu=1)
        if info != 0:  # pragma: no cover - LAPACK failure
            raise np.linalg.LinAlgError(f"dsyevr failed (info = {info})")
        self.n_eig += 1
        lam = float(w[0])
        if lam < 0.0:
            self.A = dsyr(-lam, np.ascontiguousarray(Z[:, 0]), a=self.A, lower=0,
                          overwrite_a=True)
            self.n_proj += 1
            self.lam_lb = 0.0
        else:
            self.lam_lb = lam

    def round(self, v: np.ndarray, y: float, nv2: float | None = None) -> float:
        """One POLA round on the pair difference ``v`` with label ``y``; returns its loss."""
        loss = self.halfspace_projection(v, y, nv2)
        if loss > 0.0:
            self.psd_projection(y)
            self.loss += loss
            self.sq_loss += loss * loss
            self.n_updates += 1
        return loss
