"""MLKR: metric learning for kernel regression (Weinberger & Tesauro 2007), by L-BFGS-B.

Kernel regression predicts each training target from the others, leave-one-out,

    ŷ_i = Σ_{j≠i} y_j k_ij / Σ_{j≠i} k_ij,     k_ij = exp(−‖A(x_i − x_j)‖²),

and MLKR learns the linear map A (r×d; the metric is ``M = AᵀA``, the kernel's bandwidth is part
of A) minimising the leave-one-out squared error ``ℒ(A) = Σ_i (y_i − ŷ_i)²``.

The gradient, derived here from ℒ: with ``p_ij = k_ij / Σ_{l≠i} k_il`` (so ``ŷ_i = Σ_j p_ij y_j``)
and ``∂k_ij/∂A = −2 k_ij A x_ij x_ijᵀ`` (``x_ij = x_i − x_j``),
``∂ŷ_i/∂A = 2A Σ_{j≠i} p_ij (ŷ_i − y_j) x_ij x_ijᵀ``, hence

    ∂ℒ/∂A = 4A Σ_i Σ_{j≠i} w_ij x_ij x_ijᵀ,     w_ij = (ŷ_i − y_i)(ŷ_i − y_j) p_ij.

(The paper states the gradient, its Eq. (8), in another form; the one above is derived from ℒ
as written and checked against central differences of ℒ in the tests.)

For any weights, ``Σ_ij w_ij x_ij x_ijᵀ = Xᵀ (diag(V𝟙) − V) X`` with the symmetric
``V = W + Wᵀ``, so with ``Z = X Aᵀ`` the gradient is ``4 (diag(V𝟙) Z − V Z)ᵀ X``. No d×d matrix
is formed per pair, nor W itself: ``V Z`` and ``V𝟙`` come from the products of the p_ij matrix
P and of Pᵀ with thin n×(2r+1) and n×(2r+2) blocks (:func:`mlkr_loss_grad`), so one evaluation
is three GEMMs of O(n²r) flops (with ``Z Zᵀ``, the distances) and holds one n×n array. The p_ij
are a softmax over j of ``−‖A x_ij‖²`` computed after subtracting each row's smallest distance,
so no row underflows to 0/0 when the points are far apart in the kernel's units.

With more features than training points, ``n_components=None`` and ``init`` ``"pca"`` or
``"identity"``, MLKR solves in the span of the points (:mod:`.span`). The gradient above is
``4A V S Vᵀ`` with V an orthonormal basis of the span of the differences x_ij. From an
orthogonal ``A_0`` (the identity, or the d principal axes: the same distances) every iterate is
``A_0 (I + V C Vᵀ)``: each gradient, and each L-BFGS-B direction (a combination of gradients
and steps), is of that form, and L-BFGS-B's inner products are those of the q×q blocks. So
``M = AᵀA`` is the identity off the span, and the fit on ``Z = X V`` from ``A_Z = I`` makes the
same metrics in q ≤ n − 1 coordinates, with no d×d array. The one difference is the stopping
test: ``gtol`` bounds the largest entry of the q×q gradient instead of the d×d one (the same
iterations up to the stop; ``optimality_`` is the q×q one there).
"""

from __future__ import annotations

import time
from numbers import Integral, Real

import numpy as np
import scipy.optimize
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from .base import (MEMORY_LIMIT, VERBOSE, MetricLearner, report_progress, store_params,
                   warn_not_converged)
from .linalg import check_square_memory, eigh_all

INITS = ("pca", "identity", "random")
#: n×n float64 arrays counted per evaluation: the distances turned into the p_ij in place
#: (:func:`neighbour_probabilities`), and one for a temporary of numpy's
_N_PAIRWISE = 2


class MLKR(MetricLearner):
    """Metric learning for kernel regression (Weinberger & Tesauro 2007), L-BFGS-B on vec(A).

    Minimises the leave-one-out kernel-regression error ``ℒ(A) = Σ_i (y_i − ŷ_i)²`` (module
    docstring) over the r×d map A with scipy's L-BFGS-B, from one of three starting maps.
    ``y`` holds real-valued regression targets; class labels work when they are numbers (their
    order then counts). The Gaussian kernel has unit bandwidth in the mapped space: the scale of
    the starting map, hence of the features, sets where the search starts (standardise them).
    Every evaluation holds one n×n float64 array (two are counted): ``fit`` refuses with
    ``MemoryError`` before starting when they do not fit.

    Parameters
    ----------
    n_components : int or None, default=None
        r, the rows of A, at most d (None: d).
    init : {"pca", "identity", "random"}, default="pca"
        The starting A: the r leading principal axes of the training points as unit rows
        (eigenvectors of their scatter, by decreasing variance); the first r rows of the
        identity; or i.i.d. normal entries scaled by 1/√d (rows of unit expected length, seeded by
        ``random_state``). With r = d, "pca" and "identity" give the same distances.
    max_iter : int, default=200
        L-BFGS-B iterations.
    tol : float, default=1e-5
        L-BFGS-B's ``gtol``: it stops when the largest entry of ∂ℒ/∂A is at most ``tol`` (or
        when ℒ decreases relatively by less than scipy's default ``ftol``).
    random_state : int, RandomState or None, default=None
        Seeds ``init="random"`` (used only there).
    memory_limit_gb : float or None, default=None
        Memory the n×n arrays may use; None: the memory available when ``fit`` starts.
    verbose : int, default=0
        0: silent; 1: one line at the end of the fit (iterations, objective, largest gradient
        entry, converged, seconds); 2 and more: also one line per L-BFGS-B iteration.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, d)
        The learned A.
    metric_ : ndarray of shape (d, d)
        ``M = AᵀA``.
    objective_ : float
        ℒ(A), the leave-one-out squared error at the returned A.
    n_iter_ : int
        L-BFGS-B iterations.
    converged_ : bool
        Whether L-BFGS-B stopped by its tolerances (not by ``max_iter``, its evaluation cap or a
        failed line search).
    optimality_ : float
        The largest absolute entry of ∂ℒ/∂A at the returned A, what ``tol`` tests
        (``optimality_measure`` ``"projected_gradient_norm"``: there are no bounds).
    trace_ : dict
        Per iteration ``objective`` (ℒ), ``gradient_norm`` (the largest absolute entry of
        ∂ℒ/∂A) and ``time`` (seconds since the start of ``fit``).
    span_dim_ : int or None
        The dimension q of the span of the training points it solved in (module docstring),
        None when it solved in all d coordinates.
    span_basis_ : ndarray of shape (d, ``span_dim_``) or None
        The orthonormal basis V of that span (``components_ = I + V (A_Z − I) Vᵀ``).

    References
    ----------
    K. Q. Weinberger, G. Tesauro. Metric learning for kernel regression. AISTATS 2007, PMLR
    2:612–619.
    """

    constraint_kind = "labels"
    optimality_measure = "projected_gradient_norm"
    span_complement = "identity"

    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "init": [StrOptions(set(INITS))],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
        "memory_limit_gb": MEMORY_LIMIT,
        "verbose": VERBOSE,
    }

    def __init__(self, n_components=None, init="pca", max_iter=200, tol=1e-5,
                 random_state=None, memory_limit_gb=None, verbose=0):
        store_params(self, locals())

    def _solves_in_span(self) -> bool:
        """A square map started orthogonal (module docstring)."""
        return (super()._solves_in_span() and self.n_components is None
                and self.init in ("pca", "identity"))

    def _fit(self, X, y, constraints):
        if y is None:
            raise ValueError("MLKR needs targets y")
        try:
            y = np.asarray(y, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"MLKR needs numeric targets y: {exc}") from None
        n, d = X.shape
        r = d if self.n_components is None else self.n_components
        if r > d:
            raise ValueError(f"n_components={r} exceeds the number of features ({d})")
        check_square_memory("MLKR", n, _N_PAIRWISE, "n", self.memory_limit_gb)
        start = time.perf_counter()
        X = X - X.mean(axis=0)  # distances do not change; the Gram products lose less
        A0 = self._initial_map(X, r)
        report = (lambda n, loss, g: report_progress(self, n, objective=loss, gradient_norm=g)
                  ) if self.verbose >= 2 else None
        A, res, trace, loss, grad = _minimise(A0, X, y, self.max_iter, self.tol, start, report)
        self.components_ = np.ascontiguousarray(A)
        self.metric_ = A.T @ A
        self.objective_ = float(loss)
        self.n_iter_ = len(trace["time"])
        self.converged_ = bool(res.status == 0)
        self.optimality_ = float(np.abs(grad).max())
        self.trace_ = {k: np.asarray(v, dtype=float) for k, v in trace.items()}
        if not self.converged_:
            cap = f"max_iter = {self.max_iter} L-BFGS-B iterations"
            warn_not_converged(
                self, rule=f"largest entry of ∂ℒ/∂A ≤ tol = {self.tol:g}, or relative decrease "
                "of ℒ ≤ scipy's ftol", cap=cap,
                stopped=(None if self.n_iter_ >= self.max_iter else
                         f"L-BFGS-B stopped after {self.n_iter_} iterations ({res.message}), "
                         f"below the cap {cap},"),
                reached=f"largest gradient entry {self.optimality_:.3g}",
                hint="raise max_iter (or tol)")

    def _initial_map(self, X, r):
        """The starting A (r×d) of ``init``, from the centred ``X``."""
        d = X.shape[1]
        if self.init == "identity":
            return np.eye(d)[:r]
        if self.init == "random":
            return check_random_state(self.random_state).standard_normal((r, d)) / np.sqrt(d)
        _, U = eigh_all(X.T @ X)
        return np.ascontiguousarray(U[:, ::-1][:, :r].T)


def _minimise(A0, X, y, max_iter, tol, start, report=None):
    """scipy's L-BFGS-B on vec(A) from ``A0``; returns A, scipy's result, the per-iteration
    trace, and ℒ and ∂ℒ/∂A at A; ``report(n, ℒ, gradient norm)``, if given, is called at every
    iteration (``verbose ≥ 2``).

    ℒ and ∂ℒ/∂A at an iterate are those of the last evaluation when it was at that iterate
    (L-BFGS-B's accepted point is its last line-search evaluation), else evaluated anew.
    """
    shape = A0.shape
    last = {}

    def fun(a):
        loss, grad = mlkr_loss_grad(a.reshape(shape), X, y)
        last.update(a=a.copy(), loss=loss, grad=grad)
        return loss, grad.ravel()

    trace = {"objective": [], "gradient_norm": [], "time": []}

    def at(a):
        if not np.array_equal(a, last.get("a")):
            fun(a)
        return last["loss"], last["grad"]

    def record(a):
        at(a)
        trace["objective"].append(last["loss"])
        trace["gradient_norm"].append(float(np.abs(last["grad"]).max()))
        trace["time"].append(time.perf_counter() - start)
        if report is not None:
            report(len(trace["time"]), last["loss"], trace["gradient_norm"][-1])

    res = scipy.optimize.minimize(fun, A0.ravel(), jac=True, method="L-BFGS-B", callback=record,
                                  options={"maxiter": max_iter, "gtol": tol})
    return (res.x.reshape(shape), res, trace, *at(res.x))


def mlkr_loss_grad(A: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """``ℒ(A) = Σ_i (y_i − ŷ_i)²`` and ``∂ℒ/∂A`` (module docstring), with GEMMs.

    The weights ``W = diag(ŷ − y)(diag(ŷ) P − P diag(y))`` (P: the p_ij) are never formed: the
    products ``W Z``, ``Wᵀ Z`` and ``Wᵀ𝟙`` that the gradient needs are row scalings of ``P B``
    and ``Pᵀ B`` for thin blocks B, and ``W𝟙 = 0`` (P's rows sum to 1). P is the one n×n array.

    Parameters
    ----------
    A : ndarray of shape (r, d)
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)

    Returns
    -------
    loss : float
    grad : ndarray of shape (r, d)
    """
    Z = X @ A.T
    r = Z.shape[1]
    P = neighbour_probabilities(Z)
    left = P @ np.column_stack([y, Z, y[:, None] * Z])  # ŷ | P Z | P (y∘Z)
    y_hat = left[:, 0]
    res = y_hat - y
    right = P.T @ np.column_stack([res * y_hat, res, (res * y_hat)[:, None] * Z, res[:, None] * Z])
    WZ = res[:, None] * (y_hat[:, None] * left[:, 1:r + 1] - left[:, r + 1:])
    WtZ = right[:, 2:r + 2] - y[:, None] * right[:, r + 2:]
    Wt1 = right[:, 0] - y * right[:, 1]  # = V𝟙 for V = W + Wᵀ
    grad = 4.0 * (Wt1[:, None] * Z - WZ - WtZ).T @ X
    return float(res @ res), grad


def neighbour_probabilities(Z: np.ndarray) -> np.ndarray:
    """``p_ij = exp(−‖z_i − z_j‖²) / Σ_{l≠i} exp(−‖z_i − z_l‖²)`` (``p_ii = 0``), in one n×n
    array: the squared distances from ``Z Zᵀ``, shifted by each row's smallest before the
    exponential (a softmax: the same p, and no row of zeros)."""
    sq = np.einsum("ij,ij->i", Z, Z)
    P = Z @ Z.T
    P *= -2.0
    P += sq[:, None]
    P += sq[None, :]
    np.fill_diagonal(P, np.inf)  # j ≠ i
    P -= P.min(axis=1, keepdims=True)
    np.negative(P, out=P)
    np.exp(P, out=P)
    P /= P.sum(axis=1, keepdims=True)
    return P
