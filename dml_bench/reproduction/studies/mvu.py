"""Maximum variance unfolding (MVU) through the Frobenius-regularised SDP (Shen et al. 2014, §IV-B).

The MVU problem of Weinberger & Saul, as written in §III of Shen et al. (2014) (the display after
Eq. (10)), is ::

    max_K  Tr(K)   s.t.  ⟨A_ij, K⟩ ≤ b_ij  for neighbour pairs (i, j),   1ᵀK1 = 0,   K ⪰ 0,

with ``A_ij = (e_i − e_j)(e_i − e_j)ᵀ`` (so ``⟨A_ij, K⟩ = K_ii + K_jj − 2K_ij``, the squared
distance of the embedded points) and ``b_ij = ‖x_i − x_j‖²``. The paper states the distance
constraints as **inequalities** (local distances may shrink, never stretch), the centring as an
equality; this module follows it by default (``constraints="inequality"``) and offers Weinberger &
Saul's original equalities as ``constraints="equality"``. Shen et al. replace the objective by
``Tr(K) − ‖K‖²_F/(2σ)``, i.e. :func:`~dml_bench.solvers.frobmetric.solve_frobenius_sdp` with
``C = −I`` (Eqs. (7)–(10)), whose dual costs one n×n eigendecomposition per L-BFGS-B step, against
the "original MVU" solved by an SDP solver (CSDP in the paper; here cvxpy with Clarabel, an
interior-point method, or SCS, a first-order splitting method).

For large σ the Frobenius term vanishes: with ``K*`` the MVU optimum and ``K_σ`` the regularised
one, optimality of ``K_σ`` gives ``Tr K_σ − ‖K_σ‖²_F/(2σ) ≥ Tr K* − ‖K*‖²_F/(2σ)``, hence ::

    0 ≤ Tr K* − Tr K_σ ≤ ‖K*‖²_F / (2σ)            (both feasible for the same constraints)

Embeddings are the top eigenvectors of K scaled by the square roots of their eigenvalues, and are
assessed by the co-ranking criteria ``Q_NX(K)`` and ``B_NX(K)`` of Lee & Verleysen (Figs. 7–8 of
the paper), :func:`~dml_bench.reproduction.studies.embedding_quality.neighbourhood_preservation`.

References
----------
C. Shen, J. Kim, F. Liu, L. Wang and A. van den Hengel. Efficient dual approach to distance metric
learning. IEEE Trans. Neural Netw. Learn. Syst. 25(2):394–406, 2014.

K. Q. Weinberger and L. K. Saul. Unsupervised learning of image manifolds by semidefinite
programming. Int. J. Comput. Vis. 70(1):77–90, 2006.

J. A. Lee and M. Verleysen. Quality assessment of dimensionality reduction: rank-based criteria.
Neurocomputing 72(7–9):1431–1443, 2009 (and JMLR W&CP 4:21–35, 2008).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.linalg
import scipy.sparse

from ...common.safe_write import write_csv
from ...constraints import _neighbours
from ...datasets.generators import make_swiss_roll
from ...report.figures import pyplot, save_figure
from ...solvers.frobmetric import solve_frobenius_sdp
from .embedding_quality import neighbourhood_preservation

CONSTRAINT_FORMS = ("inequality", "equality")
IP_SOLVERS = ("CLARABEL", "SCS")

#: solve_frobenius_sdp settings of :func:`run_mvu_experiment` (measured: the library defaults
#: tol=1e-6, ftol=1e-10 need thousands of L-BFGS-B steps at n = 500)
EXPERIMENT_SOLVER_KW = {"tol": 1e-3, "ftol": 1e-8, "max_iter": 1000}


@dataclass
class MVUProblem:
    """The MVU constraints in the form :func:`solve_frobenius_sdp` takes.

    Attributes
    ----------
    pairs : ndarray (m, 2)
        Neighbour pairs ``i < j`` of the symmetrised k-NN graph.
    sq_dist : ndarray (m,)
        ``‖x_i − x_j‖²`` of each pair.
    A : scipy.sparse.csr_matrix (m + 1, n²)
        Row r (< m): ``(e_i − e_j)(e_i − e_j)ᵀ`` flattened row-major (4 non-zeros); the last row:
        ``11ᵀ`` (centring ``1ᵀK1 = 0``, the only dense row).
    b : ndarray (m + 1,)
        ``sq_dist`` and 0.
    equality : ndarray of bool (m + 1,)
        Which rows are equalities: the centring always, the distances when
        ``constraints="equality"``.
    C : scipy.sparse matrix (n, n)
        ``−I`` (``max Tr K`` as a minimisation).
    n, k : int
    constraints : str
    """

    pairs: np.ndarray
    sq_dist: np.ndarray
    A: scipy.sparse.csr_matrix
    b: np.ndarray
    equality: np.ndarray
    C: scipy.sparse.spmatrix
    n: int
    k: int
    constraints: str

    def violation(self, K):
        """Largest constraint violation of K (absolute, squared-distance units), centring included.

        Computed from the entries of K directly (not through ``A``): ``(d_ij − b_ij)₊`` for
        inequalities, ``|d_ij − b_ij|`` for equalities, ``|1ᵀK1|``.
        """
        K = np.asarray(K)
        i, j = self.pairs.T
        d = K[i, i] + K[j, j] - 2 * K[i, j]
        r = d - self.sq_dist
        dist_viol = np.abs(r) if self.constraints == "equality" else np.maximum(r, 0.0)
        return float(max(dist_viol.max(initial=0.0), abs(K.sum())))


def knn_graph_edges(X, k):
    """Pairs ``i < j`` of the symmetrised k-NN graph (j among the k nearest of i, or i of j)."""
    X = np.asarray(X, dtype=float)
    n = len(X)
    if not 1 <= k < n:
        raise ValueError(f"need 1 <= k < n, got k={k}, n={n}")
    nbrs = _neighbours(X, X, k, exclude_self=True)  # the constraint generators' k-NN search
    pairs = np.sort(np.column_stack([np.repeat(np.arange(n), k), nbrs.ravel()]), axis=1)
    return np.unique(pairs, axis=0)


def mvu_problem(X, k, *, constraints="inequality") -> MVUProblem:
    """The MVU SDP on the symmetrised k-NN graph of X, as sparse ``(C, A, b, equality)``.

    Parameters
    ----------
    X : array-like (n, d)
    k : int
        Neighbours per point (Shen et al. 2014, Fig. 4: k = 6).
    constraints : {"inequality", "equality"}, default="inequality"
        ``⟨A_ij, K⟩ ≤ ‖x_i − x_j‖²`` as in the MVU problem of Shen et al. (2014, §III), or ``=``
        as in Weinberger & Saul (2006).

    Returns
    -------
    MVUProblem
    """
    if constraints not in CONSTRAINT_FORMS:
        raise ValueError(f"constraints must be one of {CONSTRAINT_FORMS}, got {constraints!r}")
    X = np.asarray(X, dtype=float)
    n = len(X)
    pairs = knn_graph_edges(X, k)
    m = len(pairs)
    i, j = pairs.T
    sq_dist = ((X[i] - X[j]) ** 2).sum(axis=1)
    rows = np.repeat(np.arange(m), 4)
    cols = np.column_stack([i * n + i, j * n + j, i * n + j, j * n + i]).ravel()
    vals = np.tile([1.0, 1.0, -1.0, -1.0], m)
    A_dist = scipy.sparse.csr_matrix((vals, (rows, cols)), shape=(m, n * n))
    centring = scipy.sparse.csr_matrix(
        (np.ones(n * n), np.arange(n * n), [0, n * n]), shape=(1, n * n))
    A = scipy.sparse.vstack([A_dist, centring], format="csr")
    b = np.append(sq_dist, 0.0)
    equality = np.full(m + 1, constraints == "equality")
    equality[-1] = True
    return MVUProblem(pairs=pairs, sq_dist=sq_dist, A=A, b=b, equality=equality,
                      C=-scipy.sparse.identity(n, format="csr"), n=n, k=k,
                      constraints=constraints)


def embedding_from_gram(K, n_components=2):
    """``Y = U_d diag(√λ_d)``: the top ``n_components`` eigenpairs of the Gram matrix K."""
    n = len(K)
    lam, U = scipy.linalg.eigh((K + K.T) / 2, subset_by_index=[n - n_components, n - 1])
    order = np.argsort(lam)[::-1]
    return U[:, order] * np.sqrt(np.maximum(lam[order], 0.0))


def _info(problem, K, extra):
    lam = np.linalg.eigvalsh((K + K.T) / 2)[::-1]
    info = {"objective": float(np.trace(K)), "max_violation": problem.violation(K),
            "min_eigenvalue": float(lam[-1]), "top_eigenvalues": lam[:5].copy(),
            "n_constraints": len(problem.b), "n_pairs": len(problem.pairs)}
    info.update(extra)
    return info


def mvu_frobenius(X, k, sigma=1e5, *, n_components=2, constraints="inequality", **solver_kw):
    """Frobenius-perturbed MVU, ``max Tr K − ‖K‖²_F/(2σ)`` (Shen et al. 2014, §III, Eq. (10)).

    Parameters
    ----------
    X : array-like (n, d)
    k : int
    sigma : float, default=1e5
        σ of the Frobenius term (the paper: 1e5 for Fig. 4, 1e2 for Fig. 10's timing). The
        perturbation is not scale invariant: scaling X by s scales the MVU optimum by s², so σ
        acts like σ/s² on the unscaled data (bound ``Tr K* − Tr K_σ ≤ ‖K*‖²_F/(2σ)``).
    n_components : int, default=2
    constraints : {"inequality", "equality"}
    **solver_kw
        Passed to :func:`~dml_bench.solvers.frobmetric.solve_frobenius_sdp` (``tol``, ``ftol``,
        ``max_iter``, ``max_corrections``).

    Returns
    -------
    Y : ndarray (n, n_components)
    K : ndarray (n, n)
        ``K* = −σ(C + Â)₋`` (after Eq. (10)), p.s.d. by construction.
    seconds : float
        Wall time of the solve (the problem's construction excluded, as for the SDP solver).
    info : dict
        ``objective`` (Tr K), ``max_violation``, ``min_eigenvalue``, ``top_eigenvalues``,
        ``regularised_objective`` (Tr K − ‖K‖²_F/(2σ)), ``dual_bound`` (the dual value of
        Eq. (10), an upper bound on the regularised optimum), ``n_iter``, ``converged``,
        ``message``, ``n_constraints``, ``n_pairs``.
    """
    problem = mvu_problem(X, k, constraints=constraints)
    start = time.perf_counter()
    res = solve_frobenius_sdp(problem.C, problem.A, problem.b, sigma, equality=problem.equality,
                              **solver_kw)
    seconds = time.perf_counter() - start
    K = res.X
    info = _info(problem, K, {
        "regularised_objective": -res.primal_objective, "dual_bound": -res.dual_objective,
        "n_iter": res.n_iter, "converged": res.converged, "message": res.message,
        "sigma": float(sigma)})
    return embedding_from_gram(K, n_components), K, seconds, info


def _import_cvxpy():
    try:
        import cvxpy
    except ImportError as exc:  # pragma: no cover - cvxpy is a test dependency
        raise ImportError("mvu_interior_point needs cvxpy (pip install 'dml-bench[test]', or "
                          "pip install cvxpy clarabel)") from exc
    return cvxpy


def mvu_interior_point(X, k, solver="CLARABEL", *, n_components=2, constraints="inequality",
                       **solver_kw):
    """The original MVU SDP, ``max Tr K`` s.t. the same constraints and ``K ⪰ 0``, by cvxpy.

    The paper's comparator is the authors' MVU code on CSDP, an interior-point (primal-dual
    Newton) SDP solver. ``solver="CLARABEL"`` is an interior-point method too; ``"SCS"`` is a
    first-order splitting method (default accuracy 1e-4), given for the sizes where Clarabel's
    dense n(n+1)/2 KKT block is out of reach.

    Parameters
    ----------
    X : array-like (n, d)
    k : int
    solver : {"CLARABEL", "SCS"}
    n_components : int, default=2
    constraints : {"inequality", "equality"}
    **solver_kw
        Passed to ``cvxpy.Problem.solve``.

    Returns
    -------
    Y, K, seconds, info
        As :func:`mvu_frobenius`; ``seconds`` is the wall time of ``Problem.solve`` (cvxpy's
        compilation included), ``info["solver_seconds"]`` the solver's own time,
        ``info["status"]`` cvxpy's status.

    Raises
    ------
    ImportError
        When cvxpy is not installed.
    """
    cp = _import_cvxpy()
    solver = solver.upper()
    if solver not in IP_SOLVERS:
        raise ValueError(f"solver must be one of {IP_SOLVERS}, got {solver!r}")
    problem = mvu_problem(X, k, constraints=constraints)
    i, j = problem.pairs.T
    K = cp.Variable((problem.n, problem.n), PSD=True)
    dist = K[i, i] + K[j, j] - 2 * K[i, j]
    cons = [dist == problem.sq_dist if constraints == "equality" else dist <= problem.sq_dist,
            cp.sum(K) == 0]
    prob = cp.Problem(cp.Maximize(cp.trace(K)), cons)
    start = time.perf_counter()
    prob.solve(solver=solver, **solver_kw)
    seconds = time.perf_counter() - start
    if K.value is None:
        raise RuntimeError(f"cvxpy/{solver} returned no solution (status {prob.status})")
    Kv = (K.value + K.value.T) / 2
    stats = prob.solver_stats
    info = _info(problem, Kv, {"status": prob.status, "solver": solver,
                               "solver_seconds": getattr(stats, "solve_time", None),
                               "n_iter": getattr(stats, "num_iters", None)})
    return embedding_from_gram(Kv, n_components), Kv, seconds, info


def _baseline_embeddings(X, k, n_components):
    """Isomap and LLE (scikit-learn), the paper's other panels of Figs. 4 and 7."""
    from sklearn.manifold import Isomap, LocallyLinearEmbedding

    out = {}
    for name, est in (("Isomap", Isomap(n_neighbors=k, n_components=n_components)),
                      ("LLE", LocallyLinearEmbedding(n_neighbors=k, n_components=n_components,
                                                     eigen_solver="dense", random_state=0))):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            Y = est.fit_transform(X)
        out[name] = (Y, time.perf_counter() - start)
    return out


def run_mvu_experiment(out_dir, n_values=(100, 200, 300, 500), k=6, sigma=1e5, seed=0,
                       interior_point_max_n=100, *, interior_point_solver="SCS",
                       frobenius_kw=None, interior_point_kw=None, K_max=None, baselines=True,
                       data_scale=1.0):
    """Shen et al. (2014) Fig. 4 (embedding), Figs. 7–8 (Q_NX, B_NX) and Fig. 10 (time vs n).

    For each n of ``n_values`` a swiss roll (:func:`~dml_bench.datasets.generators.make_swiss_roll`,
    seed ``seed``) is embedded by :func:`mvu_frobenius` and, for n ≤ ``interior_point_max_n``, by
    :func:`mvu_interior_point`. BLAS is pinned to one thread while timing (as the runner does).

    Parameters
    ----------
    out_dir : path
    n_values : sequence of int
    k : int, default=6
    sigma : float, default=1e5
        Fig. 4's σ; the paper's Fig. 10 used σ = 1e2.
    seed : int
    interior_point_max_n : int, default=100
    interior_point_solver : {"SCS", "CLARABEL"}, default="SCS"
        Clarabel (interior point) was measured at 103 s for n = 100 on one core, out of reach
        beyond; SCS (first-order) is the comparator that runs at these sizes (see Notes).
    frobenius_kw : dict, optional
        ``solve_frobenius_sdp`` settings (default :data:`EXPERIMENT_SOLVER_KW`).
    interior_point_kw : dict, optional
        ``cvxpy.Problem.solve`` settings.
    K_max : int, optional
        Largest K of the quality curves (default n − 1 of the largest n).
    baselines : bool, default=True
        Add scikit-learn's Isomap and LLE (the paper's other panels) to the embedding and
        quality files at the largest n.
    data_scale : float, default=1.0
        The roll is multiplied by this before the SDPs (the paper does not state its data's
        scale). K scales as s², so σ on data scaled by s acts as σ/s² on the unscaled roll:
        with ``make_swiss_roll``'s scale (MVU optimum Tr K ≈ 4e5 at n = 500) σ = 1e5 keeps the
        roll curled, ``data_scale=0.1`` (≡ σ = 1e7) unrolls it. The default tolerance ``tol``
        is scaled by s² with it; quality criteria are scale-free.

    Notes
    -----
    Measured on 2 shared cores, BLAS pinned to one thread, swiss roll seed 0, k = 6: cvxpy's
    Clarabel (interior point) takes 103 s at n = 100 (its KKT system has a dense block of order
    n(n+1)/2 = 5050, and the centring row ``1ᵀK1 = 0`` defeats its chordal decomposition; the
    ``faer`` backend was slower, > 200 s); SCS takes 29–36 s at n = 100 and more than 250 s at
    n = 200. Hence ``interior_point_max_n=100`` with SCS keeps the whole run near 2 minutes;
    the Frobenius dual takes about 1, 8, 13 and 51 s at n = 100, 200, 300, 500.

    Returns
    -------
    dict
        ``times`` (DataFrame of ``mvu_times.csv``) and the paths of every file written
        (``times_csv``, ``embedding_csv``, ``quality_csv``, ``fig4_png``, ``fig4_pdf``,
        ``fig10_png``, ``fig10_pdf``).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if frobenius_kw is None:
        frobenius_kw = dict(EXPERIMENT_SOLVER_KW, tol=EXPERIMENT_SOLVER_KW["tol"] * data_scale ** 2)
    frobenius_kw = dict(frobenius_kw)
    interior_point_kw = dict(interior_point_kw or {})
    methods = [("FrobMetric-MVU", lambda X: mvu_frobenius(X, k, sigma, **frobenius_kw), None),
               (f"MVU ({interior_point_solver.upper()})", lambda X: mvu_interior_point(
                   X, k, interior_point_solver, **interior_point_kw), interior_point_max_n)]
    rows, embeddings, data_big = _time_methods(methods, n_values, k, sigma, seed, data_scale)
    if baselines:
        embeddings.update(_baseline_embeddings(data_big.X, k, 2))
    times = pd.DataFrame(rows)
    paths, t = _write_tables(out_dir, times, embeddings, data_big, K_max)
    paths.update(_plot(out_dir, embeddings, t, times, len(t), k, sigma, data_scale))
    return {"times": times, **paths}


def _time_methods(methods, n_values, k, sigma, seed, data_scale) -> tuple[list, dict, object]:
    """Embed a swiss roll of each n of ``n_values`` by each of ``methods`` (``(label, fit, max
    n or None)``, ``fit(X)`` → ``(Y, K, seconds, info)``), BLAS pinned to one thread: the rows of
    ``mvu_times.csv``, the embeddings ``{label: (Y, seconds)}`` of the largest n and its roll."""
    from threadpoolctl import threadpool_limits

    n_values = sorted(int(n) for n in n_values)
    n_big = n_values[-1]
    rows, embeddings, data_big = [], {}, None
    for n in n_values:
        data = make_swiss_roll(n, seed=seed)
        for method, fn, max_n in methods:
            if max_n is not None and n > max_n:
                continue
            with threadpool_limits(1), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                Y, K, seconds, info = fn(data_scale * data.X)
            rows.append({"n": n, "method": method, "seconds": seconds,
                         "objective_trK": info["objective"],
                         "max_violation": info["max_violation"],
                         "rel_violation": info["max_violation"] / float(
                             mvu_problem(data_scale * data.X, k).sq_dist.max()),
                         "data_scale": data_scale, "sigma": sigma,
                         "n_iter": info.get("n_iter"),
                         "converged": info.get("converged", info.get("status") == "optimal"),
                         "n_constraints": info["n_constraints"]})
            if n == n_big:
                embeddings[method] = (Y, seconds)
        if n == n_big:
            data_big = data
    return rows, embeddings, data_big


def _write_tables(out_dir: Path, times: pd.DataFrame, embeddings: dict, data_big,
                  K_max) -> tuple[dict, np.ndarray]:
    """Write ``mvu_times.csv``, the embeddings of the largest roll (``mvu_embedding.csv``) and
    their Q_NX / B_NX curves up to ``K_max`` (``mvu_quality.csv``); returns the paths and the
    roll's manifold coordinate t."""
    n_big = len(data_big.X)
    paths = {"times_csv": out_dir / "mvu_times.csv", "embedding_csv": out_dir / "mvu_embedding.csv",
             "quality_csv": out_dir / "mvu_quality.csv"}
    write_csv(paths["times_csv"], times, index=False)
    t, height = data_big.extra["manifold"].T
    emb = pd.concat([pd.DataFrame({"n": n_big, "method": m, "index": np.arange(n_big), "t": t,
                                   "height": height, "y1": Y[:, 0], "y2": Y[:, 1]})
                     for m, (Y, _) in embeddings.items()], ignore_index=True)
    write_csv(paths["embedding_csv"], emb, index=False)
    K_max = n_big - 1 if K_max is None else min(int(K_max), n_big - 1)
    quality = []
    for m, (Y, _) in embeddings.items():
        Q, B = neighbourhood_preservation(data_big.X, Y, K_max)
        quality.append(pd.DataFrame({"n": n_big, "method": m, "K": np.arange(1, K_max + 1),
                                     "Q_nx": Q, "B_nx": B}))
    write_csv(paths["quality_csv"], pd.concat(quality, ignore_index=True), index=False)
    return paths, t


def plot_embeddings(embeddings, colour, colour_label, title):
    """One panel per method of ``embeddings`` (method → (Y (n, ≥2), seconds)): the 2-D
    embedding coloured by ``colour`` (n values), the solve time in the panel's title."""
    plt = pyplot()

    fig, axes = plt.subplots(1, len(embeddings), figsize=(3.6 * len(embeddings), 3.4),
                             squeeze=False)
    for ax, (method, (Y, seconds)) in zip(axes[0], embeddings.items()):
        sc = ax.scatter(Y[:, 0], Y[:, 1], c=colour, s=6, cmap="jet")
        ax.set_title(f"{method}\n{seconds:.3g} s", fontsize="small")
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(sc, ax=axes[0].tolist(), label=colour_label, shrink=0.8)
    fig.suptitle(title, fontsize="small", y=1.04)
    return fig


def _plot(out_dir, embeddings, t, times, n, k, sigma, data_scale):
    plt = pyplot()

    scaled = "" if data_scale == 1 else f", data × {data_scale:g}"
    fig = plot_embeddings(embeddings, t, "t", f"Swiss roll, n = {n}, k = {k}, σ = {sigma:g}"
                                              f"{scaled} (Shen et al. 2014, Fig. 4)")
    paths = save_figure(fig, out_dir, "fig4_embedding", "fig4", bbox_inches="tight")
    fig, ax = plt.subplots(figsize=(4.6, 3.4))
    for method, part in times.groupby("method", sort=False):
        ax.plot(part["n"], part["seconds"], marker="o", label=method)
    ax.set_yscale("log")
    ax.set_xlabel("n (swiss roll points)")
    ax.set_ylabel("time (s)")
    ax.set_title("MVU time vs n (Shen et al. 2014, Fig. 10)", fontsize="small")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return {**paths, **save_figure(fig, out_dir, "fig10_time", "fig10")}
