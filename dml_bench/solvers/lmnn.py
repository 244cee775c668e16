"""LMNN: large margin nearest neighbour metric learning (Weinberger, Blitzer & Saul 2005;
Weinberger & Saul 2009, JMLR).

The loss is Eq. (13) of Weinberger & Saul (2009) (Eq. (4)–(5) of the 2005 paper)::

    ε(L) = (1 − μ) Σ_{j ⇝ i} ‖L(x_i − x_j)‖² + μ Σ_{j ⇝ i} Σ_l (1 − y_il) [1 + ‖L(x_i − x_j)‖² − ‖L(x_i − x_l)‖²]₊

with target neighbours ``j ⇝ i`` fixed in the Euclidean space of the input and impostors ``l`` of
another class. Written in ``M = LᵀL`` it is the SDP Eq. (14) (convex in M). Its (sub)gradient,
as in the paper's solver (§5; the G_t of its incremental update), is ``∂ε/∂L = 2 L G`` with

    G = (1 − μ) Σ_{j ⇝ i} C_ij + μ Σ_{(i,j,l) active} (C_ij − C_il),   C_ab = (x_a − x_b)(x_a − x_b)ᵀ,

(active: positive hinge). G is never built from per-triplet matrices: with the signed pair weights
``w_p = (1 − μ)[p is a target pair] + μ #(active triplets whose target pair is p) −
μ #(active triplets whose impostor pair is p)`` it is ``Σ_p w_p C_p``, by a
``linalg.PairOuterSum`` built once per pair set (one sparse Laplacian product and one n×d×d
GEMM per gradient), and all distances are row-wise on ``Z = X Lᵀ``.

As the authors' MATLAB code with ``obj=1`` (the default), the solver descends in L:
``L ← L − α · 2 L G``; the step α grows by 1.01 after a step that lowered the loss, and a step that
raised it is rejected and α halved. ``solver="M"`` instead takes projected gradient steps on the
convex problem, ``M ← Π_{⪰0}(M − α G)`` (one d×d eigendecomposition per iteration; the code's
``obj=0``).

With more features than training points and ``n_components=None``, LMNN solves in the span of
the points (:mod:`.span`): G is a sum of ``C_ab`` of differences of points, so from L = I each
step ``L ← L − α 2 L G`` (or ``M ← Π(M − α G)``, whose projection leaves the eigenvalue 1 off the
span) keeps ``L = I + V C Vᵀ``, and every distance, hinge and step is the same on the span
coordinates; the first step's size, ``0.1 ‖L‖_F / ‖∇‖``, counts the identity off the span.

Impostors: ``impostors="recompute"`` (default) keeps, like the authors' code, an active set of
candidate impostor pairs ``(i, l)``, ``y_l ≠ y_i``, with ``‖L(x_i − x_l)‖² < max_{j⇝i}
‖L(x_i − x_j)‖² + 1`` searched among *all* training points (per class, chunked GEMMs) at the start
and every ``update_every`` iterations with the current L; between searches only the triplets
``(i, j, l)`` built from the candidates and i's target neighbours enter the loss (exact at each
search). ``impostors="given"`` uses exactly the provided triplets ``(i, j, k)``.

Target neighbours are the distinct pairs ``(i, j)`` of the triplets' first two columns (with
``knn_triplets`` each (point, target) pair once: the pull term counts each once, the push term
each triplet). With ``impostors="recompute"`` only these targets are taken from the constraints.
"""

from __future__ import annotations

import time
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..evaluate import knn_error
from ..splits import train_test_split_indices
from .base import SEED, VERBOSE, MetricLearner, report_progress, store_params, warn_not_converged
from .linalg import (PairOuterSum, components_from_psd, eigh_all, pair_sq_distances,
                     project_psd)

IMPOSTOR_MODES = ("recompute", "given")
SOLVERS = ("L", "M")


class LMNN(MetricLearner):
    """Large margin nearest neighbour metric learning (Weinberger & Saul 2009, Eq. (13)/(14)).

    Parameters
    ----------
    mu : float, default=0.5
        Weight μ ∈ (0, 1) of the push term, ``(1 − μ)`` of the pull term (Weinberger & Saul 2009,
        §3.1 and §6: μ = 0.5 throughout; the code's ``pars.mu``).
    margin : float, default=1.0
        The unit margin of the hinge (Eq. (13)); any positive value only rescales L.
    max_iter : int, default=1000
        Iteration cap (one step, accepted or rejected, per iteration; Ying & Li's protocol).
    tol : float, default=1e-7
        Convergence when the loss changed by less than ``tol · loss`` over each of the last three
        accepted steps (the authors' code's relative objective threshold).
    step_size : float or None, default=None
        Initial step α. The code's 1e-7 is tuned to raw pixel data and is scale dependent, so
        ``None`` chooses the step whose first update changes L (or M) by 10 % in Frobenius norm,
        ``α₀ = 0.1 ‖L‖ / ‖∇_L ε‖`` (``0.1 ‖M‖ / ‖G‖`` for ``solver="M"``).
    step_growth : float, default=1.01
        Factor of α after an accepted step (the code's ``stepgrowth``); a rejected step halves α.
    impostors : {"recompute", "given"}, default="recompute"
        See the module docstring. ``"recompute"`` needs the labels ``y``.
    update_every : int, default=10
        Iterations between two impostor searches (``impostors="recompute"``).
    solver : {"L", "M"}, default="L"
        ``"L"``: gradient steps in L (non-convex, the code's default). ``"M"``: projected gradient
        steps in M (the convex SDP Eq. (14)).
    smoothing : float, default=1e-6
        ``solver="M"`` only. The hinge is piecewise linear, so monotone gradient steps stall at
        its kinks (0.1–1 % above the SDP optimum on tiny problems). ``solver="M"`` therefore
        minimises the Huber-smoothed hinge (quadratic on ``[0, s]``, error ≤ s/2 per triplet),
        starting at ``s = margin`` and dividing s by 10 whenever the step rule converges, down to
        ``s = smoothing · margin``. ``objective_`` is always the exact ε.
    chunk_size : int, default=2**22
        Number of distances computed at once by the impostor search.
    validation : float, default=0.0
        Early stopping as the authors' code's ``pars.validation``: this fraction of the training
        points (stratified, drawn with ``random_state``) is held out of the loss; every
        ``validation_every`` iterations the 3-NN error of the held-out points (references: the
        remaining training points, mapped by the current L) is measured, the best L is kept,
        and the run stops after ``patience`` checks without improvement. Triplets involving a
        held-out point are dropped. 0 disables it.
    validation_every : int, default=10
        Iterations between two validation checks (the code's ``valcount``).
    patience : int, default=5
        Checks without a lower validation error before stopping.
    random_state : int or None, default=0
        Seed of the validation draw (``numpy.random.default_rng``).
    n_components : int or None, default=None
        ``None``: L is d×d and starts at I. An int k ≤ d: L is k×d, so M = LᵀL has rank ≤ k and
        ``transform`` gives k columns; it starts at the top k principal directions of the
        training points (orthonormal rows, the ``"pca"`` start of scikit-learn's NCA and
        metric-learn's LMNN) and the same loss ε is minimised by the same gradient steps in L,
        ``∂ε/∂L = 2 L G`` (not a projection of a full-rank M afterwards). k < d needs
        ``solver="L"`` (one-line ``ValueError`` otherwise): a rank cap on M is not convex.
        k = d starts from a rotation of I, which has the same distances: the same fit as
        ``None`` up to round-off. ``None`` is left out of a result's identity
        (``neutral_params``): it is the fit from before the option existed.
    verbose : int, default=0
        0: silent; 1: one line at the end of the fit (iterations, objective, relative change,
        converged, seconds); 2 and more: also one line per iteration (loss, step α, active
        triplets).

    Attributes
    ----------
    metric_ : ndarray (d, d)
    components_ : ndarray (n_components, d)
        L with M = LᵀL (d rows for ``n_components=None``), as the eigen-factor of M: rows by
        decreasing eigenvalue.
    objective_ : float
        ε at the returned L (over all impostors among the training points with
        ``impostors="recompute"``, over the given triplets otherwise).
    n_iter_ : int
        Iterations run (gradient steps tried); 1 when the fit stops at its first evaluation of ε
        (no active triplet, see Notes).
    converged_ : bool
    optimality_ : float
        The stopping rule's relative loss change (largest over the last three accepted steps, /ε;
        ``optimality_measure`` ``"relative_objective_change"``) at the last iterate (``inf``
        right after an impostor search; NaN when the fit stops at once, see Notes). ``validation``
        can return an earlier iterate.
    span_dim_ : int or None
        The dimension q of the span of the training points it solved in (module docstring),
        None when it solved in all d coordinates.
    span_basis_ : ndarray of shape (d, ``span_dim_``) or None
        The orthonormal basis V of that span (``components_ = I + V (L_V − I) Vᵀ``).
    n_active_ : int
        Active (positive-hinge) triplets at the returned L.
    best_iter_ : int
        With ``validation``: the iteration whose L is returned (lowest validation error).
    validation_error_ : float or None
        With ``validation``: that lowest validation error.
    trace_ : dict of ndarray
        Per iteration: ``objective`` (ε at the current iterate), ``grad_norm`` (‖∇ε‖_F w.r.t. the
        optimised variable at the current iterate), ``step`` (α), ``n_active``, ``time``
        (seconds since the start of ``fit``) and ``validation_error`` (NaN where not measured).

    Notes
    -----
    *No impostors.* When no triplet has a positive hinge at the start (the initial L = I, or the
    principal directions with ``n_components``, already separates every target neighbour from
    every impostor by the margin), only the pull term is left; it is minimised by the degenerate
    L → 0, which LMNN's scale-fixing margin is meant to prevent. The solver then stops after
    that first evaluation (``converged_ = True``, ``n_iter_ = 1``, one trace record) and returns
    the initial L.

    References
    ----------
    K. Q. Weinberger, J. Blitzer and L. K. Saul. Distance metric learning for large margin nearest
    neighbor classification. NIPS 18, 2005.
    K. Q. Weinberger and L. K. Saul. Distance metric learning for large margin nearest neighbor
    classification. JMLR 10:207–244, 2009.
    """

    constraint_kind = "triplets"
    optimality_measure = "relative_objective_change"
    _parameter_constraints: dict = {
        "mu": [Interval(Real, 0, 1, closed="neither")],
        "margin": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "step_size": [Interval(Real, 0, None, closed="neither"), None],
        "step_growth": [Interval(Real, 1, None, closed="left")],
        "impostors": [StrOptions(set(IMPOSTOR_MODES))],
        "update_every": [Interval(Integral, 1, None, closed="left")],
        "solver": [StrOptions(set(SOLVERS))],
        "smoothing": [Interval(Real, 0, None, closed="neither")],
        "chunk_size": [Interval(Integral, 1, None, closed="left")],
        "validation": [Interval(Real, 0, 1, closed="left")],
        "validation_every": [Interval(Integral, 1, None, closed="left")],
        "patience": [Interval(Integral, 1, None, closed="left")],
        "random_state": SEED,
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "verbose": VERBOSE,
    }
    #: ``n_components=None`` is the square L that LMNN learned before the option existed
    neutral_params = {**MetricLearner.neutral_params, "n_components": None}
    span_complement = "identity"

    def _solves_in_span(self) -> bool:
        """Only from L = I (``n_components=None``): the PCA start of a rectangular L is not the
        identity off the span."""
        return super()._solves_in_span() and self.n_components is None

    def __init__(self, mu=0.5, margin=1.0, max_iter=1000, tol=1e-7, step_size=None,
                 step_growth=1.01, impostors="recompute", update_every=10, solver="L",
                 smoothing=1e-6, chunk_size=2**22, validation=0.0, validation_every=10,
                 patience=5, random_state=0, n_components=None, verbose=0):
        store_params(self, locals())

    def _fit(self, X, y, constraints):
        start = time.perf_counter()
        d = X.shape[1]
        recompute = self.impostors == "recompute"
        self._check_n_components(d)
        X, y, targets, prob, held_out, L = self._problem(X, y, constraints)
        M = np.eye(d)
        smooth = self.margin if self.solver == "M" else 0.0
        smooth_min = self.smoothing * self.margin if self.solver == "M" else 0.0
        loss, state = prob.loss(L, smooth)
        trace = {k: [] for k in ("objective", "grad_norm", "step", "n_active", "time",
                                 "validation_error")}
        best = (np.inf, L, 0)  # (validation error, L, iteration)
        if state[2].sum() == 0:  # no active triplet: nothing to push, see Notes
            self.validation_error_, self.best_iter_ = None, 0
            self._finish(L, loss, 1, True, np.nan, int(state[2].sum()), trace, start)
            return
        checks_since_best = 0
        G, grad = self._gradients(prob, state, L)
        # ‖L‖_F (‖M‖_F) of the whole iterate: in the span of the points (span_complement) the
        # identity off the span adds 1 per dimension
        x_norm = np.sqrt(np.linalg.norm(L if self.solver == "L" else M) ** 2
                         + getattr(self, "_off_span_dim", 0))
        alpha = (self.step_size if self.step_size is not None
                 else 0.1 * x_norm / max(np.linalg.norm(grad), np.finfo(float).tiny))
        alpha_min = 1e-14 * alpha
        accepted = [loss]
        converged, change = False, np.inf
        it = 0
        for it in range(1, self.max_iter + 1):
            if recompute and it % self.update_every == 0:
                prob.set_impostors(*_search_impostors(X, y, targets, L, self.margin,
                                                      self.chunk_size))
                loss, state = prob.loss(L, smooth)
                G, grad = self._gradients(prob, state, L)
                accepted = [loss]
            if self.solver == "L":
                L_new = L - alpha * grad
                M_new = None
            else:
                M_new, L_new = _projected(M - alpha * G)
            loss_new, state_new = prob.loss(L_new, smooth)
            if loss_new <= loss:
                L, loss, state = L_new, loss_new, state_new
                if M_new is not None:
                    M = M_new
                G, grad = self._gradients(prob, state, L)
                alpha *= self.step_growth
                accepted.append(loss)
            else:
                alpha *= 0.5
            val_err = np.nan
            if held_out is not None and (it % self.validation_every == 0 or it == 1):
                val_err = knn_error(X @ L.T, y, held_out[0] @ L.T, held_out[1])
                checks_since_best = 0 if val_err < best[0] else checks_since_best + 1
                if val_err <= best[0]:  # ties: keep the later (longer trained) iterate
                    best = (val_err, L, it)
            for key, val in zip(trace, (loss, np.linalg.norm(grad), alpha,
                                        int(state[2].sum()), time.perf_counter() - start,
                                        val_err)):
                trace[key].append(val)
            if self.verbose >= 2:
                report_progress(self, it, objective=loss, step=alpha,
                                n_active=trace["n_active"][-1], validation_error=val_err)
            if held_out is not None and checks_since_best >= self.patience:
                converged = True  # early stopping: the validation error stopped improving
                break
            stalled = alpha < alpha_min
            change = _relative_change(accepted)
            if stalled or (len(accepted) >= 4 and change <= self.tol):
                if smooth > smooth_min:  # continuation: sharpen the smoothed hinge
                    smooth = max(smooth * 0.1, smooth_min)
                    loss, state = prob.loss(L, smooth)
                    G, grad = self._gradients(prob, state, L)  # solver "M": grad is G
                    accepted = [loss]
                    alpha = max(alpha, 1e3 * alpha_min)
                    continue
                if not recompute:
                    converged = True
                    break
                # converged on the current impostor set: search again, stop if nothing changes
                prob.set_impostors(*_search_impostors(X, y, targets, L, self.margin,
                                                      self.chunk_size))
                loss_new, state = prob.loss(L, smooth)
                changed = abs(loss_new - loss) > self.tol * abs(loss)
                loss = loss_new
                G, grad = self._gradients(prob, state, L)
                accepted = [loss]
                if stalled or not changed:
                    converged = True
                    break
        if not converged:
            warn_not_converged(
                self, rule=(f"relative change of the loss ≤ tol = {self.tol:g} over 3 accepted "
                            "steps, then no new impostor"),
                cap=f"max_iter = {self.max_iter} iterations",
                reached=f"loss {loss:.6g}, relative change {change:.3g}",
                hint="raise max_iter (or tol)")
        L = self._keep_best(X, y, held_out, L, it, best)
        if recompute:  # the loss over all impostors at the returned L
            prob.set_impostors(*_search_impostors(X, y, targets, L, self.margin, self.chunk_size))
        loss, state = prob.loss(L)  # the exact (unsmoothed) ε
        self._finish(L, loss, it, converged, change, int(state[2].sum()), trace, start)

    def _problem(self, X, y, constraints):
        """The training data without the validation part, and the loss over its triplets.

        Returns ``(X, y, targets, prob, held_out, L0)``: the distinct target pairs (sorted by
        anchor with ``impostors="recompute"``, whose impostors are searched at the starting L),
        the :class:`_Problem`, ``held_out`` of :meth:`_hold_out` and the starting L
        (:meth:`_initial_L`).
        """
        recompute = self.impostors == "recompute"
        if recompute and y is None:
            raise ValueError("impostors='recompute' needs the labels y; to learn from exactly "
                             "the given triplets, without labels, use impostors='given'")
        T = np.asarray(constraints.triplets, dtype=np.intp).reshape(-1, 3)
        X, y, T, held_out = self._hold_out(X, y, T)
        if len(T) == 0:
            raise ValueError("LMNN needs at least one triplet (target neighbours)")
        L0 = self._initial_L(X)
        targets, t_of = np.unique(T[:, :2], axis=0, return_inverse=True)
        t_of = t_of.ravel()
        if recompute:
            order = np.argsort(targets[:, 0], kind="stable")
            targets, t_of = targets[order], np.argsort(order)[t_of]
            prob = _Problem(X, targets, self.mu, self.margin)
            prob.set_impostors(*_search_impostors(X, y, targets, L0, self.margin,
                                                  self.chunk_size))
        else:
            imp, i_of = np.unique(T[:, [0, 2]], axis=0, return_inverse=True)
            prob = _Problem(X, targets, self.mu, self.margin)
            prob.set_triplets(imp, t_of, i_of.ravel())
        return X, y, targets, prob, held_out, L0

    def _check_n_components(self, d: int) -> None:
        """A one-line ``ValueError`` for an ``n_components`` above d, or below d with
        ``solver="M"`` (a rank cap on M is not convex: it is learned in L only)."""
        k = self.n_components
        if k is None:
            return
        if k > d:
            raise ValueError(f"n_components={k} exceeds the number of features ({d})")
        if k < d and self.solver == "M":
            raise ValueError(f"n_components={k} needs solver='L' (a rectangular L); "
                             f"solver='M' learns a full-rank M by projected steps on the convex "
                             f"problem, which a rank cap would make non-convex")

    def _initial_L(self, X) -> np.ndarray:
        """The starting L: I (d×d) for ``n_components=None``, else the top ``n_components``
        principal directions of the training points ``X`` as orthonormal rows (the ``"pca"``
        start of scikit-learn's NCA and metric-learn's LMNN); with ``n_components = d`` a
        rotation, which gives the same distances, so the same fit as I up to round-off."""
        d = X.shape[1]
        if self.n_components is None:
            return np.eye(d)
        Xc = X - X.mean(axis=0)
        _, U = eigh_all(Xc.T @ Xc)
        return np.ascontiguousarray(U[:, ::-1][:, :self.n_components].T)

    def _gradients(self, prob, state, L):
        """``(G, grad)``: the gradient G of the loss in M at ``state``, and the step's direction,
        ``∇_L ε = 2 L G`` (``solver="L"``) or G."""
        G = prob.gradient(state)
        return G, (2 * L @ G if self.solver == "L" else G)

    def _keep_best(self, X, y, held_out, L, it, best):
        """The L returned: with a validation part, the iterate of least validation error (the
        last L included, ties to the later), recorded in ``validation_error_`` and
        ``best_iter_``; else L itself, after ``it`` iterations."""
        if held_out is not None:
            val_err = knn_error(X @ L.T, y, held_out[0] @ L.T, held_out[1])
            if val_err <= best[0]:
                best = (val_err, L, it)
            L = best[1]
        self.validation_error_ = None if held_out is None else float(best[0])
        self.best_iter_ = int(best[2]) if held_out is not None else int(it)
        return L

    def _hold_out(self, X, y, T):
        """Remove the validation part (``validation``) from the data and the triplets.

        Returns ``(X, y, T, held_out)`` with ``held_out = (X_val, y_val)`` or None.
        """
        if not self.validation:
            return X, y, T, None
        if y is None:
            raise ValueError("validation needs the labels y")
        keep, held = train_test_split_indices(y, 1 - self.validation, self.random_state)
        new_index = np.full(len(y), -1)
        new_index[keep] = np.arange(len(keep))
        T = new_index[T]
        T = T[(T >= 0).all(axis=1)]
        return X[keep], y[keep], T, (X[held], y[held])

    def _finish(self, L, loss, n_iter, converged, optimality, n_active, trace, start):
        # LᵀL's eigen-factor, rows by decreasing eigenvalue: the first L.shape[0] carry its rank
        self.components_ = components_from_psd(L.T @ L)[:L.shape[0]]
        self.metric_ = self.components_.T @ self.components_
        self.objective_ = float(loss)
        self.n_iter_ = int(n_iter)
        self.converged_ = bool(converged)
        self.optimality_ = float(optimality)
        self.n_active_ = n_active
        if not trace["objective"]:
            for key, val in zip(trace, (loss, 0.0, 0.0, n_active, time.perf_counter() - start,
                                        np.nan)):
                trace[key].append(val)
        self.trace_ = {k: np.asarray(v) for k, v in trace.items()}


def _relative_change(accepted):
    """Largest change of the loss over the last (up to) three accepted steps, relative to the
    last loss (``inf`` before any step): the stopping rule's measure."""
    if len(accepted) < 2:
        return np.inf
    return float(np.max(np.abs(np.diff(accepted[-4:]))) / abs(accepted[-1]))


class _Problem:
    """ε and its gradient matrix G on target pairs and (candidate) impostor pairs, by pair rows.

    Triplet r is (target pair ``tp[r]``, impostor pair ``ip[r]``); its hinge is
    ``margin + q_T[tp[r]] − q_I[ip[r]]`` with the squared distances q computed row-wise on Z = X Lᵀ.
    """

    def __init__(self, X, targets, mu, margin):
        self.X, self.targets, self.mu, self.margin = X, targets, mu, margin

    def set_triplets(self, imp, tp, ip):
        self.imp, self.tp, self.ip = imp, tp, ip
        self.pairs = np.vstack([self.targets, imp])
        self.outer_sum = PairOuterSum(self.X, self.pairs)  # w ↦ Σ_p w_p C_p

    def set_impostors(self, imp, tp, ip):
        self.set_triplets(imp, tp, ip)

    def loss(self, L, smoothing=0.0):
        """ε at L, with the hinge Huber-smoothed over ``[0, smoothing]`` when ``smoothing > 0``.

        Returns the loss and the state ``(q_T, q_I, active, slope)``: ``slope`` is the hinge's
        derivative per active triplet (1 for the exact hinge).
        """
        Z = self.X @ L.T
        qT = pair_sq_distances(Z, self.targets)
        qI = pair_sq_distances(Z, self.imp) if len(self.imp) else np.zeros(0)
        h = self.margin + qT[self.tp] - qI[self.ip]
        active = h > 0
        ha = h[active]
        if smoothing > 0:
            slope = np.minimum(ha / smoothing, 1.0)
            push = np.where(ha >= smoothing, ha - smoothing / 2, ha * ha / (2 * smoothing)).sum()
        else:
            slope, push = np.ones(len(ha)), ha.sum()
        loss = (1 - self.mu) * qT.sum() + self.mu * push
        return float(loss), (qT, qI, active, slope)

    def gradient(self, state):
        """``G = ∂ε/∂M`` (the paper's G_t) as one weighted pair outer sum."""
        active, slope = state[2], state[3]
        nT, nI = len(self.targets), len(self.imp)
        w = np.concatenate([
            (1 - self.mu) + self.mu * np.bincount(self.tp[active], slope, minlength=nT),
            -self.mu * np.bincount(self.ip[active], slope, minlength=nI)])
        return self.outer_sum(w)


def _projected(S):
    """``Π_{⪰0}(S)`` and a factor L with ``Π(S) = LᵀL`` from one eigendecomposition."""
    P, lam, U = project_psd(S)
    return P, (np.sqrt(lam) * U).T


def _search_impostors(X, y, targets, L, margin, chunk_size):
    """Candidate impostor pairs among all training points at the current L, and their triplets.

    ``targets`` must be sorted by anchor. A pair ``(i, l)`` with ``y_l ≠ y_i`` is a candidate when
    ``‖L(x_i − x_l)‖² < max_{j⇝i} ‖L(x_i − x_j)‖² + margin``: exactly the impostors of at least one
    triplet with a positive hinge. Distances are computed per class of the anchor, ``chunk_size``
    at a time, by float32 GEMMs on Z = X Lᵀ with a round-off slack (a superset: the hinges
    themselves are evaluated in float64). Returns ``(pairs, tp, ip)`` with the triplets
    ``(target pair tp[r], impostor pair ip[r])`` of every candidate and every target of its anchor.
    """
    n = len(X)
    Z = X @ L.T
    sq = np.einsum("ij,ij->i", Z, Z)
    qT = pair_sq_distances(Z, targets)
    reach = np.full(n, -np.inf)
    np.maximum.at(reach, targets[:, 0], qT)
    reach += margin
    Z32 = Z.astype(np.float32)
    found = []
    for c in np.unique(y):
        anchors = np.flatnonzero((y == c) & np.isfinite(reach))
        others = np.flatnonzero(y != c)
        if len(anchors) == 0 or len(others) == 0:
            continue
        Zo, half_sqo, sq_max = Z32[others], (0.5 * sq[others]).astype(np.float32), sq[others].max()
        step = max(1, chunk_size // len(others))
        for s in range(0, len(anchors), step):
            a = anchors[s:s + step]
            # ‖z_a − z_l‖² < bound_a  ⇔  z_aᵀz_l − ½‖z_l‖² > ½(‖z_a‖² − bound_a): one float32 GEMM
            # (half the bytes of float64) and one in-place pass over the chunk; the slack covers
            # float32 round-off, and a candidate whose exact distance is beyond reach only adds
            # inactive triplets
            G = Z32[a] @ Zo.T
            G -= half_sqo
            bound = reach[a] + 1e-5 * (sq[a] + sq_max)
            hit = np.flatnonzero(G > (0.5 * (sq[a] - bound)).astype(np.float32)[:, None])
            r, col = np.divmod(hit, len(others))
            found.append(np.column_stack([a[r], others[col]]))
    pairs = np.vstack(found) if found else np.zeros((0, 2), dtype=np.intp)
    # triplets: every candidate (i, l) with every target pair of anchor i (targets sorted by i)
    first = np.searchsorted(targets[:, 0], np.arange(n))
    count = np.bincount(targets[:, 0], minlength=n)
    per = count[pairs[:, 0]]
    ip = np.repeat(np.arange(len(pairs)), per)
    offs = np.arange(len(ip)) - np.repeat(np.cumsum(per) - per, per)
    tp = np.repeat(first[pairs[:, 0]], per) + offs
    return pairs, tp, ip
