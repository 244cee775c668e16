"""Shen et al. (2014) §IV-B: MVU embeddings and their quality (Figs. 5–9, Tables V–VI).

One data set — the generated swiss roll (Figs. 7, 9), or a registered one: the teapot images
(Figs. 5, 8, Tables V–VI's teapot row) or the Frey faces (Fig. 6) — is embedded in 2-D by the
Frobenius-regularised MVU (:func:`~dml_bench.reproduction.studies.mvu.mvu_frobenius`,
"ours"/FrobMetric), the original MVU SDP through cvxpy
(:func:`~dml_bench.reproduction.studies.mvu.mvu_interior_point`, optional), and scikit-learn's
Isomap and LLE, all with the same k; every embedding is then assessed against the data by the
co-ranking curves ``Q_NX(K)``, ``B_NX(K)`` (Figs. 7–8) and the criteria ALSTD, ALED, ALCD, GSCD
(Tables V–VI) of :mod:`dml_bench.reproduction.studies.embedding_quality`, and drawn with its
times (Figs. 5–6) or its principal spread directions (Fig. 9).

**Files.** ``summary.csv``: one row per method, ``dataset, label, solver`` and ``alstd, aled, alcd,
gscd``, the solve's time ``seconds``, objective and constraint violation; on the roll also
``knn_edges_across_turns``, the k-NN edges that join two turns of the roll. ``quality_curves.csv``:
``method, K, Q_nx, B_nx``. ``embedding_psd.csv``: ``method, index``, then ``t, height`` on the
roll or ``y`` on a data set, ``y1, y2`` and the principal spread direction ``u1x, u1y`` with its
variances ``var1, var2``. And ``<figNN>.png`` / ``.pdf`` for each figure drawn.

**Scale.** The data are multiplied by ``data_scale`` (s) before the two SDPs, as in
:func:`~dml_bench.reproduction.studies.mvu.run_mvu_experiment`: the paper does not state its
data's scale, σ acts as σ/s² on the unscaled data, and at s = 0.1 (σ effectively 1e7) the roll
unrolls into the paper's strip (at s = 1 the Frobenius term keeps it curled). The default
tolerance of the Frobenius dual is scaled by s²; Isomap, LLE and every criterion are scale-free.

**Size.** Measured here (2 cores shared with another job, one BLAS thread, this roll, k = 6,
s = 0.1): SCS at accuracy 1e-3 takes 15 s (5,300 iterations) at n = 100, 187 s (14,400) at
n = 200 and 886 s (33,500) at n = 300, where the whole run takes 944 s; an iteration costs an
n×n eigendecomposition (13 ms at n = 200, 26 ms at n = 300) and their number grows faster
than n², so n = 500 would take two hours or more. n = 300 is the largest roll on which the
original MVU SDP runs beside the other three within this target's budget (~15 min of one
core); the Frobenius dual alone takes ~3 min at n = 500 (``results/shen2014_fig4``). At
n = 300 the k-NN graph (k = 6) still joins two turns of the roll by 3 of its 1,074 edges
(``knn_edges_across_turns``; 25 at n = 200, none at n = 500 for seed 0), and these short
circuits fold every embedding, where the paper's (n = 500) unroll into strips. The 200
teapot images are within SCS's reach; the 1965 Frey faces are not (an n×n
eigendecomposition takes 1.8 s at n = 1965 on one core here, and the iterations grow
faster than n²), hence ``interior_point_max_n``.

References
----------
C. Shen, J. Kim, F. Liu, L. Wang and A. van den Hengel. Efficient dual approach to distance metric
learning. IEEE Trans. Neural Netw. Learn. Syst. 25(2):394–406, 2014.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ...common.safe_write import write_csv
from ...datasets.generators import make_swiss_roll
from ...report.figures import pyplot, save_figure
from .embedding_quality import (data_neighbours, embedding_criteria, neighbourhood_preservation,
                                principal_spread_directions)
from .mvu import (EXPERIMENT_SOLVER_KW, _baseline_embeddings, knn_graph_edges, mvu_frobenius,
                  mvu_interior_point, mvu_problem, plot_embeddings)

#: SCS accuracy of the MVU comparator (cvxpy's default, 1e-5, would need ~3× the iterations)
SCS_KW = {"eps_abs": 1e-3, "eps_rel": 1e-3}
#: (registry key of the paper's column, our label), in the order of Fig. 9's panels
METHODS = (("isomap", "Isomap"), ("lle", "LLE"), ("frobmetric", "FrobMetric"), ("mvu", "MVU"))
#: what the study can draw (Figs. 5–6, 7–8, 9), and what it draws on the swiss roll
FIGURE_KINDS = ("embedding", "quality", "psd")
SWISS_ROLL_FIGURES = {"quality": "fig7_quality", "psd": "fig9_psd"}


def run_embedding_quality_study(out_dir, n=300, k=6, sigma=1e5, seed=0, data_scale=0.1, *,
                                dataset=None, interior_point_max_n=None,
                                interior_point_solver="SCS", interior_point_kw=None,
                                frobenius_kw=None, frobenius_rel_tol=None, K_max=None,
                                figures=None):
    """Embed one data set four ways and write its figures and Tables V–VI's criteria.

    The files written, the data's scale and the roll's size: see the module docstring.

    Parameters
    ----------
    out_dir : path
    n : int, default=300
        Points of the swiss roll. The paper uses 500 (§IV-B); the SDP comparator's time bounds
        ours (module docstring, Size). Not used with ``dataset`` (all its rows are embedded).
    k : int, default=6
        Neighbours of the MVU constraints, of Isomap and LLE, and of the criteria's
        neighbourhoods (the paper: k = 6 on the swiss roll and the teapot, 5 on the faces).
    sigma : float, default=1e5
        σ of the Frobenius term (the paper: 1e5 on the swiss roll, Figs. 4, 7, 9; 1e10 on the
        teapot, Figs. 5, 8).
    seed : int
        Seed of :func:`~dml_bench.datasets.generators.make_swiss_roll` (not used with
        ``dataset``).
    data_scale : float, default=0.1
        The factor the data are multiplied by before the two SDPs (module docstring, Scale).
    dataset : str, optional
        A registered data set to embed instead of the swiss roll (e.g. ``"teapot"``,
        ``"frey_faces"``), loaded by :func:`~dml_bench.datasets.load_dataset` from the cache or
        mirror (``$DMLBENCH_CACHE``, ``$DMLBENCH_DATA_MIRROR``); its labels ``y`` colour the
        figures where the roll uses its angle t.
    interior_point_max_n : int, optional
        Run the MVU SDP comparator only when the data have at most this many points (default:
        always). Out of reach on the 1965 Frey faces (module docstring, Size).
    interior_point_solver : {"SCS", "CLARABEL"}, default="SCS"
    interior_point_kw : dict, optional
        ``cvxpy.Problem.solve`` settings (default :data:`SCS_KW` for SCS, none for Clarabel).
    frobenius_kw : dict, optional
        ``solve_frobenius_sdp`` settings (default
        :data:`~dml_bench.reproduction.studies.mvu.EXPERIMENT_SOLVER_KW`, ``tol`` times s²).
    frobenius_rel_tol : float, optional
        When given, the Frobenius dual's ``tol`` is this times the largest squared k-NN
        distance of the scaled data (the unit of ``rel_violation``), whatever the data's pixel
        scale; otherwise ``frobenius_kw``'s.
    K_max : int, optional
        Largest K of the Q_NX/B_NX curves (default n − 1).
    figures : dict, optional
        The figures to draw, kind → file stem: ``"embedding"`` (each method's embedding
        coloured by t or y, its time in the title: Figs. 5–6), ``"quality"`` (Q_NX and B_NX
        against K: Figs. 7–8), ``"psd"`` (principal spread directions: Fig. 9). Default
        :data:`SWISS_ROLL_FIGURES`. The paper's figure number is read from the stem
        (``fig8_quality`` → Fig. 8).

    Returns
    -------
    dict
        ``summary`` (DataFrame of ``summary.csv``) and the paths written: ``summary_csv``,
        ``quality_csv``, ``embedding_csv``, and ``<figNN>_png/pdf`` for each figure drawn.
    """
    figures = SWISS_ROLL_FIGURES if figures is None else figures
    unknown = sorted(set(figures) - set(FIGURE_KINDS))
    if unknown:
        raise ValueError(f"unknown figure kinds {unknown}; choose from {list(FIGURE_KINDS)}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    X, name, colours = _study_data(dataset, n, seed)
    n = len(X)
    solves, scale_sq = _sdp_solves(
        X, k, sigma, data_scale, {"max_n": interior_point_max_n, "solver": interior_point_solver,
                                  "solver_kw": interior_point_kw, "frobenius_kw": frobenius_kw,
                                  "frobenius_rel_tol": frobenius_rel_tol})
    embeddings, rows = _embed(X, k, data_scale, solves, scale_sq)
    labels = dict(METHODS, mvu=f"MVU ({interior_point_solver.upper()})")
    setting = {"dataset": name, "n": n, "k": k, "sigma": sigma, "data_scale": data_scale,
               **_knn_edges(X, k, colours.get("t"))}
    K_max = n - 1 if K_max is None else min(int(K_max), n - 1)
    tables = _assess(X, k, embeddings, rows, labels, setting, colours, K_max)
    paths = _write_tables(out_dir, tables)
    paths.update(_draw(out_dir, figures, tables, next(iter(colours)), setting))
    return {"summary": tables["summary"], **paths}


def _study_data(dataset: str | None, n: int, seed: int) -> tuple[np.ndarray, str, dict]:
    """The data to embed, their name and the values that colour the figures: a swiss roll of
    ``n`` points (its angle t and height) or the registered ``dataset`` (its labels y)."""
    if dataset is None:
        data = make_swiss_roll(n, seed=seed)
        t, height = data.extra["manifold"].T
        return data.X, "swiss_roll", {"t": t, "height": height}
    from ...datasets import load_dataset

    X, y, _ = load_dataset(dataset)
    return np.asarray(X, dtype=float), dataset, {"y": y}


def _sdp_solves(X, k, sigma, data_scale, solvers: dict) -> tuple[dict, float]:
    """The two SDP embeddings to run, ``{key: solve(Z)}`` (the interior-point one when ``X`` has
    at most ``max_n`` points), with the settings of ``solvers`` (``max_n``, ``solver``,
    ``solver_kw``, ``frobenius_kw``, ``frobenius_rel_tol``) resolved as
    :func:`run_embedding_quality_study` documents them, and the largest squared k-NN distance
    of the scaled data (the unit of ``rel_violation``)."""
    max_n, solver, solver_kw, frobenius_kw, frobenius_rel_tol = (
        solvers[key] for key in ("max_n", "solver", "solver_kw", "frobenius_kw",
                                 "frobenius_rel_tol"))
    if solver_kw is None:
        solver_kw = SCS_KW if solver.upper() == "SCS" else {}
    scale_sq = float(mvu_problem(data_scale * X, k).sq_dist.max())
    if frobenius_kw is None:
        frobenius_kw = dict(EXPERIMENT_SOLVER_KW, tol=EXPERIMENT_SOLVER_KW["tol"] * data_scale ** 2)
    if frobenius_rel_tol is not None:
        frobenius_kw = dict(frobenius_kw, tol=frobenius_rel_tol * scale_sq)
    solves = {"frobmetric": lambda Z: mvu_frobenius(Z, k, sigma, **frobenius_kw)}
    if max_n is None or len(X) <= max_n:
        solves["mvu"] = lambda Z: mvu_interior_point(Z, k, solver, **solver_kw)
    return solves, scale_sq


def _knn_edges(X, k: int, t=None) -> dict:
    """The number of k-NN edges and, on the roll (its angles ``t``), the edges joining two of its
    turns (angles more than π apart: the turns are 2π apart), the short circuits that fold
    every method's embedding."""
    edges = knn_graph_edges(X, k)
    extra = {"knn_edges": len(edges)}
    if t is not None:
        extra["knn_edges_across_turns"] = int((np.abs(t[edges[:, 0]] - t[edges[:, 1]])
                                               > np.pi).sum())
    return extra


def _embed(X, k: int, data_scale: float, solves: dict, scale_sq: float) -> tuple[dict, dict]:
    """Every method's 2-D embedding of ``X`` (the SDPs of ``solves`` on the scaled data, Isomap
    and LLE on ``X``), BLAS pinned to one thread, and its row of times and solver figures."""
    from threadpoolctl import threadpool_limits

    embeddings, rows = {}, {}
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key, solve in solves.items():
            Y, _, seconds, info = solve(data_scale * X)
            embeddings[key] = Y
            rows[key] = {"seconds": seconds, "objective_trK": info["objective"],
                         "max_violation": info["max_violation"],
                         "rel_violation": info["max_violation"] / scale_sq,
                         "n_iter": info.get("n_iter"),
                         "converged": info.get("converged", info.get("status") == "optimal")}
        for method, (Y, seconds) in _baseline_embeddings(X, k, 2).items():
            embeddings[method.lower()] = Y
            rows[method.lower()] = {"seconds": seconds}
    return embeddings, rows


def _assess(X, k: int, embeddings: dict, rows: dict, labels: dict, setting: dict, colours: dict,
            K_max: int) -> dict:
    """The ``summary``, ``quality`` and ``points`` tables of the embeddings (in :data:`METHODS`
    order): criteria and ``setting`` per method, Q_NX / B_NX curves, points with their principal
    spread directions."""
    nbrs = data_neighbours(X, k)
    n = len(X)
    summary, quality, points = [], [], []
    for key in (key for key, _ in METHODS if key in embeddings):
        Y = embeddings[key]
        # ``dataset`` first, then the method, then the rest of ``setting`` (a key keeps its place)
        summary.append({"dataset": setting["dataset"], "label": labels[key], "solver": key,
                        **setting, **embedding_criteria(X, Y, k), **rows[key]})
        Q, B = neighbourhood_preservation(X, Y, K_max)
        quality.append(pd.DataFrame({"method": labels[key], "K": np.arange(1, K_max + 1),
                                     "Q_nx": Q, "B_nx": B}))
        directions, variances = principal_spread_directions(Y, nbrs)
        points.append(pd.DataFrame({"method": labels[key], "index": np.arange(n), **colours,
                                    "y1": Y[:, 0], "y2": Y[:, 1],
                                    "u1x": directions[:, 0, 0], "u1y": directions[:, 1, 0],
                                    "var1": variances[:, 0], "var2": variances[:, 1]}))
    return {"summary": pd.DataFrame(summary), "quality": pd.concat(quality, ignore_index=True),
            "points": pd.concat(points, ignore_index=True)}


def _write_tables(out_dir: Path, tables: dict) -> dict:
    """Write the tables of :func:`_assess` to their CSV files; returns the paths."""
    paths = {"summary_csv": out_dir / "summary.csv", "quality_csv": out_dir / "quality_curves.csv",
             "embedding_csv": out_dir / "embedding_psd.csv"}
    for key, table in zip(paths, ("summary", "quality", "points")):
        write_csv(paths[key], tables[table], index=False)
    return paths


def _draw(out_dir: Path, figures: dict, tables: dict, colour: str, setting: dict) -> dict:
    """Draw ``figures`` (kind → file stem) of the tables, titled with the data and the
    ``setting``; returns the paths written."""
    title = (f"{setting['dataset'].replace('_', ' ')}, n = {setting['n']}, k = {setting['k']}, "
             f"σ = {setting['sigma']:g}, data × {setting['data_scale']:g}")
    draw = {"embedding": lambda stem: _plot_embedding(out_dir, stem, tables["points"],
                                                      tables["summary"], colour, title),
            "quality": lambda stem: _plot_quality(out_dir, stem, tables["quality"], title),
            "psd": lambda stem: _plot_psd(out_dir, stem, tables["points"], colour, title)}
    paths = {}
    for kind, stem in figures.items():
        paths.update(draw[kind](stem))
    return paths


def _paper_figure(stem):
    """``"fig8_quality"`` → ``"Fig. 8"``: the paper's figure a file stem stands for."""
    return f"Fig. {stem.split('_')[0].removeprefix('fig')}"


def _plot_embedding(out_dir, stem, points, summary, colour, title):
    """Figs. 5–6: each method's 2-D embedding, coloured by ``colour`` (t on the roll, the data
    set's y), its solve time in the panel's title."""
    seconds = dict(zip(summary["label"], summary["seconds"]))
    by_method = {m: p for m, p in points.groupby("method", sort=False)}
    # one colouring for all panels: every method embeds the same points in the same order
    embeddings = {m: (p[["y1", "y2"]].to_numpy(), seconds[m]) for m, p in by_method.items()}
    fig = plot_embeddings(embeddings, next(iter(by_method.values()))[colour].to_numpy(), colour,
                          f"2-D embeddings, {title} (Shen et al. 2014, {_paper_figure(stem)})")
    return save_figure(fig, out_dir, stem, stem.split("_")[0], bbox_inches="tight")


def _plot_quality(out_dir, stem, quality, title):
    """Figs. 7–8: (a) Q_NX(K), (b) B_NX(K) against K (log scale), one line per method."""
    plt = pyplot()

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for method, part in quality.groupby("method", sort=False):
        axes[0].plot(part["K"], part["Q_nx"], label=method)
        axes[1].plot(part["K"], part["B_nx"], label=method)
    for ax, name in zip(axes, ("(a) $Q_{NX}(K)$", "(b) $B_{NX}(K)$")):
        ax.set_xscale("log")
        ax.set_xlabel("K")
        ax.set_title(name, fontsize="small")
    axes[1].axhline(0.0, color="grey", lw=0.6)
    axes[0].legend(fontsize="small")
    fig.suptitle(f"Neighbourhood preservation, {title} (Shen et al. 2014, {_paper_figure(stem)})",
                 fontsize="small")
    fig.tight_layout()
    return save_figure(fig, out_dir, stem, stem.split("_")[0], bbox_inches="tight")


def _plot_psd(out_dir, stem, points, colour, title):
    """Fig. 9: each embedded point with its first PSD (longer line) and the orthogonal second
    (shorter line), half-lengths the neighbourhood's standard deviations along them."""
    plt = pyplot()
    from matplotlib.collections import LineCollection

    methods = list(dict.fromkeys(points["method"]))
    fig, axes = plt.subplots(1, len(methods), figsize=(3.4 * len(methods), 3.4), squeeze=False)
    for ax, method in zip(axes[0], methods):
        p = points[points["method"] == method]
        centre = p[["y1", "y2"]].to_numpy()
        u1 = p[["u1x", "u1y"]].to_numpy()
        u2 = np.column_stack([-u1[:, 1], u1[:, 0]])
        for u, var, width in ((u1, p["var1"], 0.9), (u2, p["var2"], 0.6)):
            half = u * np.sqrt(var.to_numpy())[:, None]
            ax.add_collection(LineCollection(np.stack([centre - half, centre + half], axis=1),
                                             colors="k", linewidths=width))
        ax.scatter(centre[:, 0], centre[:, 1], c=p[colour], s=5, cmap="jet", zorder=3)
        ax.set_title(method, fontsize="small")
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(f"Principal spread directions, {title} (Shen et al. 2014, "
                 f"{_paper_figure(stem)})", fontsize="small")
    fig.tight_layout()
    return save_figure(fig, out_dir, stem, stem.split("_")[0], bbox_inches="tight")
