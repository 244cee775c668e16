"""SDPMetric-H against an interior-point SDP solver as the dimension grows (Shen et al. 2010, Fig. 2).

§IV of Shen, Kim & Wang (2010) times SDPMetric with the Huber loss (16) against CVX with SeDuMi and
SDPT3 (both interior-point methods) on "1,000 training triplets" generated at random, for feature
dimensions 20 to 100: SDPMetric's time "almost keeps constant" while the interior-point solvers'
grows quickly, the difference reaching 800–1000 s at d = 100. SeDuMi and SDPT3 run under MATLAB
only; the comparator here is the same problem, Eq. (8) with the loss (16), written in cvxpy and
solved by Clarabel, an interior-point (primal-dual) conic solver.

The paper does not say how its triplets were drawn. Here (:func:`random_triplets`) the data are
``3 · n_triplets`` i.i.d. standard normal points of ℝ^d and triplet r is ``(3r, 3r+1, 3r+2)``:
anchor, target, impostor, each point in one triplet only, so no structure favours a low-rank
optimum. ``⟨A_r, I/d⟩`` is then of order 1, the scale of the Huber width h = 0.5.

Both solvers' results are scored by the same function, f(X, ρ*(X)) of Eq. (8) with the best ρ for
the returned X (:func:`eq8_objective`), so that the times compare solutions of known quality.

References
----------
C. Shen, J. Kim and L. Wang. Scalable large-margin Mahalanobis distance metric learning.
IEEE Trans. Neural Networks 21(9):1524–1530, 2010 (§IV, Fig. 2).
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning

from ...common.safe_write import write_csv
from ...constraints import Constraints
from ...report.figures import pyplot, save_figure
from ...solvers.sdpmetric import SDPMetric, _Loss

#: SDPMetric-H settings of the experiment: the solver's defaults (C, h as in the Table II runs;
#: Frank-Wolfe gap stopping rule at 1e-5 · |f|) but for the iteration cap, ``max_iter`` of
#: :func:`run_sdpmetric_timing`
SDPMETRIC_KW = {"loss": "huber", "C": 0.1, "h": 0.5}


def random_triplets(d, n_triplets=1000, seed=0):
    """``3 · n_triplets`` standard normal points of ℝ^d and the disjoint triplets (3r, 3r+1, 3r+2).

    Parameters
    ----------
    d : int
    n_triplets : int, default=1000
        Fig. 2 of Shen et al. (2010): 1,000.
    seed : int

    Returns
    -------
    X : ndarray (3 · n_triplets, d)
    constraints : Constraints
        Only ``triplets`` is filled (anchor, target, impostor).
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((3 * n_triplets, d))
    empty = np.zeros((0, 2), dtype=np.intp)
    return X, Constraints(empty, empty, np.arange(3 * n_triplets).reshape(n_triplets, 3))


def _margins(X, triplets, M):
    """``⟨A_r, M⟩ = a_rᵀ M a_r − b_rᵀ M b_r`` with ``a_r = x_i − x_k``, ``b_r = x_i − x_j`` (Eq. (5))."""
    i, j, k = np.asarray(triplets).T
    a, b = X[i] - X[k], X[i] - X[j]
    return np.einsum("ri,ij,rj->r", a, M, a) - np.einsum("ri,ij,rj->r", b, M, b)


def eq8_objective(X, triplets, M, C=0.1, h=0.5):
    """``max_ρ f(M, ρ)`` of Eq. (8) with the Huber loss (16), and the maximising ρ.

    Parameters
    ----------
    X : ndarray (n, d)
    triplets : ndarray (m, 3)
    M : ndarray (d, d)
        The metric (trace one, PSD; evaluated as given).
    C, h : float

    Returns
    -------
    f : float
    rho : float
    """
    m = _margins(X, triplets, M)
    loss = _Loss("huber", C, h)
    rho = loss.optimal_rho(m)
    return float(loss.value_and_weights(m, rho)[0]), float(rho)


def interior_point_sdpmetric(X, triplets, C=0.1, h=0.5, *, time_limit=None, solver="CLARABEL"):
    """Eq. (8) with the Huber loss (16) as a conic program, solved by cvxpy.

    The loss is ``λ(z) = min { s²/(4h) + t : s, t ≥ 0, s + t ≥ h − z }`` (the quadratic piece on
    ``h − z ∈ [0, 2h]``, slope one beyond), so (8) reads ::

        max  ρ − C Σ_r (s_r²/(4h) + t_r)   s.t.  s + t ≥ h − (⟨A_r, M⟩ − ρ),  s, t ≥ 0,
             tr M = 1,  M ⪰ 0.

    Parameters
    ----------
    X : ndarray (n, d)
    triplets : ndarray (m, 3)
    C, h : float
    time_limit : float, optional
        Seconds; passed to Clarabel (``time_limit``). ``None``: no limit.
    solver : str, default="CLARABEL"

    Returns
    -------
    M : ndarray (d, d) or None
        The solver's metric (None when it returned none).
    seconds : float
        Wall time of ``Problem.solve`` (cvxpy's compilation included).
    info : dict
        ``status`` (cvxpy's), ``value`` (the solver's objective), ``solver_seconds``,
        ``n_iter``.
    """
    import cvxpy as cp

    d, T = X.shape[1], len(triplets)
    i, j, k = np.asarray(triplets).T
    a, b = X[i] - X[k], X[i] - X[j]
    A = (np.einsum("ri,rj->rij", a, a) - np.einsum("ri,rj->rij", b, b)).reshape(T, d * d)
    M, rho = cp.Variable((d, d), PSD=True), cp.Variable()
    s, t = cp.Variable(T, nonneg=True), cp.Variable(T, nonneg=True)
    z = A @ cp.vec(M, order="C") - rho
    problem = cp.Problem(cp.Maximize(rho - C * (cp.sum_squares(s) / (4 * h) + cp.sum(t))),
                         [s + t >= h - z, cp.trace(M) == 1])
    kw = {} if time_limit is None else {"time_limit": float(time_limit)}
    start = time.perf_counter()
    with warnings.catch_warnings():  # "solution may be inaccurate": the status is recorded
        warnings.simplefilter("ignore", UserWarning)
        try:
            problem.solve(solver=solver, **kw)
        except cp.error.SolverError:  # e.g. the time limit hit before any usable iterate
            pass
    seconds = time.perf_counter() - start
    stats = problem.solver_stats
    Mv = None if M.value is None else (M.value + M.value.T) / 2
    return Mv, seconds, {"status": problem.status, "value": problem.value,
                         "solver_seconds": getattr(stats, "solve_time", None),
                         "n_iter": getattr(stats, "num_iters", None)}


def run_sdpmetric_timing(out_dir, dims=(20, 40, 60, 80, 100), n_triplets=1000, seed=0,
                         time_limit=300.0, max_iter=20000, accuracies=(1e-2, 1e-3)):
    """Shen et al. (2010) Fig. 2: time of SDPMetric-H and of an interior-point solver versus d.

    For each d of ``dims``, :func:`random_triplets` (seed ``seed``), then SDPMetric-H
    (:data:`SDPMETRIC_KW`, the solver's default stopping rule) and
    :func:`interior_point_sdpmetric` with Clarabel, BLAS pinned to one thread. Each solution is
    scored by :func:`eq8_objective`; the interior-point score is the reference optimum when its
    status is optimal.

    Parameters
    ----------
    out_dir : path
    dims : sequence of int
    n_triplets : int, default=1000
    seed : int
    time_limit : float, default=300
        Clarabel's time limit (s). A solve that hits it is kept in the CSV and the figure, marked
        ``over_limit`` (its time is then a lower bound).
    max_iter : int, default=20000
        SDPMetric-H's iteration cap. Its default, 1000, stops it 3 % below the optimum on these
        triplets (d = 20): the Frank-Wolfe steps (7) converge at rate O(1/t) towards an optimum
        of high rank.
    accuracies : sequence of float, default=(1e-2, 1e-3)
        Besides the full run, the time SDPMetric-H took to come within ``a`` · |f_IP| of the
        interior-point objective, for each ``a`` (read from its per-iteration trace, column
        ``seconds_to_<a>``; NaN when never).

    Notes
    -----
    Measured (2 shared cores, one BLAS thread, seed 0): Clarabel solves d = 20, 40, 60, 80, 100 in
    1.4, 6.3, 77, 150 and 240 s; 20 000 SDPMetric-H iterations take 16, 31, 45, 165 and 192 s
    and end 0.4, 2.1, 9.5, 19 and 8.5 % below the interior-point objective. The whole run takes
    about 15 minutes.

    Returns
    -------
    dict
        ``times`` (the DataFrame of ``sdpmetric_timing.csv``), ``times_csv``, ``fig2_png``,
        ``fig2_pdf``.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for d in sorted(int(d) for d in dims):
        rows += _time_dimension(d, n_triplets, seed, time_limit, max_iter, accuracies)
    times = pd.DataFrame(rows)
    speed = times.pivot(index="d", columns="method", values="seconds")
    times["ip_over_sdpmetric"] = times["d"].map(speed["cvxpy/Clarabel"] / speed["SDPMetric-H"])
    paths = {"times_csv": out_dir / "sdpmetric_timing.csv"}
    write_csv(paths["times_csv"], times, index=False)
    paths.update(_plot(out_dir, times, n_triplets, time_limit, accuracies))
    return {"times": times, **paths}


def _time_dimension(d, n_triplets, seed, time_limit, max_iter, accuracies) -> list[dict]:
    """The two rows of dimension ``d`` (see :func:`run_sdpmetric_timing`): SDPMetric-H and the
    interior-point solver on the same random triplets, each with its time and Eq. (8) objective."""
    from threadpoolctl import threadpool_limits

    C, h = SDPMETRIC_KW["C"], SDPMETRIC_KW["h"]
    X, cons = random_triplets(d, n_triplets, seed)
    with threadpool_limits(1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # recorded as converged=False
            start = time.perf_counter()
            model = SDPMetric(**SDPMETRIC_KW, max_iter=max_iter).fit(X, constraints=cons)
            sdp_seconds = time.perf_counter() - start
        M_ip, ip_seconds, ip = interior_point_sdpmetric(X, cons.triplets, C, h,
                                                        time_limit=time_limit)
    f_sdp = eq8_objective(X, cons.triplets, model.metric_, C, h)[0]
    f_ip = np.nan if M_ip is None else eq8_objective(X, cons.triplets, M_ip, C, h)[0]
    over = ip["status"] not in ("optimal", "optimal_inaccurate") or (
        time_limit is not None and ip_seconds >= time_limit)
    trace = model.trace_
    reached = {}
    for a in accuracies:
        hit = np.flatnonzero(trace["objective"] >= f_ip - a * abs(f_ip))
        reached[f"seconds_to_{a:g}"] = trace["time"][hit[0]] if len(hit) else np.nan
    common = {"d": d, "n_triplets": n_triplets, "C": C, "h": h}
    return [{**common, "method": "SDPMetric-H", "seconds": sdp_seconds,
             "objective": f_sdp, "n_iter": model.n_iter_, "status":
             "converged" if model.converged_ else "iteration cap",
             "over_limit": False,
             "rel_gap_fw": trace["gap"][-1] / abs(trace["objective"][-1]),
             "rel_objective_diff": (f_ip - f_sdp) / abs(f_ip), **reached},
            {**common, "method": "cvxpy/Clarabel", "seconds": ip_seconds,
             "objective": f_ip, "n_iter": ip["n_iter"], "status": ip["status"],
             "over_limit": over, "rel_gap_fw": np.nan, "rel_objective_diff": 0.0}]


def _plot(out_dir, times, n_triplets, time_limit, accuracies):
    plt = pyplot()

    fig, ax = plt.subplots(figsize=(4.6, 3.4))
    for method, part in times.groupby("method", sort=False):
        label = f"{method} ({part['n_iter'].max()} it. max)" if method == "SDPMetric-H" else method
        line, = ax.plot(part["d"], part["seconds"], marker="o", label=label)
        over = part[part["over_limit"]]
        if len(over):
            ax.plot(over["d"], over["seconds"], ls="none", marker="^", ms=10, mfc="none",
                    color=line.get_color(), label=f"{method}: time limit ({time_limit:g} s) hit")
    sdp = times[times["method"] == "SDPMetric-H"]
    for a, marker in zip(accuracies, "sdvp"):
        ax.plot(sdp["d"], sdp[f"seconds_to_{a:g}"], marker=marker, ls="--",
                label=f"SDPMetric-H to {a:g}·|f*|")
    ax.set_yscale("log")
    ax.set_xlabel("dimension d")
    ax.set_ylabel("time (s)")
    ax.set_title(f"{n_triplets} random triplets (Shen et al. 2010, Fig. 2)", fontsize="small")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return save_figure(fig, out_dir, "fig2_time", "fig2")
