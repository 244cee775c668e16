"""A leaderboard's tables, figures and page, written from its statistics
(:mod:`dml_bench.leaderboard.stats`): CSV, LaTeX and HTML tables, Demšar's critical-difference
diagram, the time–rank plot, ``LEADERBOARD.md`` and ``leaderboard.html``.
"""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..experiment.sections import DEFAULT_PLACE, DataPlace
from .. import __version__
from ..common.safe_write import output_dir, output_path, write_text
from ..report import ranking
from ..report.figures import axis_label, legend_outside, pyplot, save_figure
from ..report.html import relative_paths, render_html
from ..report.tables import latex_table, method_names, splits_phrase, tabular, tex
from .board import STATUS_TEXT, Board
from .stats import Statistics, board_table, statistics

PAGE = "leaderboard.html"


def write_board_report(board: Board, board_dir: Path, data: DataPlace = DEFAULT_PLACE,
                       alpha: float = 0.05) -> dict[str, Path]:
    """Write the board's tables (CSV/LaTeX/HTML), figures and page into ``board_dir``.

    Files: ``board.csv`` (every cell with its status), ``ranks.csv/.tex/.html``,
    ``pairwise.csv/.tex/.html``, ``friedman.csv``, ``time_error.csv``,
    ``figures/cd_diagram.png/.pdf``, ``figures/time_error.png/.pdf``, ``LEADERBOARD.md`` and
    ``leaderboard.html``.

    The CSV files name the methods by their labels; the LaTeX and HTML tables, the figures and
    the page print them by name (:func:`~dml_bench.report.tables.method_names`: ``dml_eig`` as
    ``DML-eig``, a label the config gives as given).
    """
    board_dir = Path(board_dir)
    st = statistics(board_table(board, board_dir, data), alpha)
    names = method_names((s.label, s.name) for s in board.experiment.solvers)
    paths: dict[str, Path] = {}

    def put(name: str, text: str):
        paths[name] = write_text(output_path(board_dir, name), text)

    put("board.csv", st.table.to_csv(index=False, float_format="%.6g"))
    put("ranks.csv", _rank_table(st).to_csv(index=False, float_format="%.6g"))
    rank_table = _rank_table(st, bounds=True)
    put("ranks.tex", latex_table(tabular("l" + "r" * (rank_table.shape[1] - 1),
                                         [tex(c) for c in rank_table.columns],
                                         [[tex(c) for c in row]
                                          for row in _shown(rank_table, names=names)]),
                                 _ranks_caption(board, st)))
    put("ranks.html", _shown(rank_table, frame=True, names=names).to_html(index=False))
    pw = st.pairwise
    put("pairwise.csv", pw.to_csv(index=False, float_format="%.6g"))
    shown_pw = pw.assign(wilcoxon_p=pw["wilcoxon_p"].map(
        lambda p: "–" if pd.isna(p) else f"{p:.3g}"), method=_named(pw["method"], names),
        versus=_named(pw["versus"], names)).astype(str)
    put("pairwise.tex", latex_table(
        tabular("llrrrrr", [tex(c) for c in pw.columns],
                [[tex(c) for c in row] for row in shown_pw.to_numpy()]),
        f"Pairwise comparison over the {len(st.errors)} ranked data sets: wins, ties and losses "
        "of each method against each other (lower mean test error wins; a result beats none), "
        "the number of data sets where both have a result, and the two-sided Wilcoxon "
        "signed-rank p-value on those."))
    put("pairwise.html", shown_pw.to_html(index=False))
    fr = st.friedman
    put("friedman.csv", pd.DataFrame([{
        "n_datasets": len(st.errors), "n_methods": st.errors.shape[1], "alpha": alpha,
        "chi2": fr and fr.statistic, "p_value": fr and fr.p_value,
        "iman_davenport_F": fr and fr.iman_davenport,
        "iman_davenport_p": fr and fr.iman_davenport_p,
        "critical_difference": st.cd}]).to_csv(index=False, float_format="%.6g"))
    put("time_error.csv", st.time_error.to_csv(index=False, float_format="%.6g"))
    figures = output_dir(board_dir, "figures")
    if st.cd is not None:
        paths.update(_plot_cd(st, figures / "cd_diagram", names))
    if st.time_error["fit_time"].notna().any():
        paths.update(_plot_time_error(st, figures / "time_error", names))
    markdown = relative_paths(_markdown(board, st, board_dir, alpha, rank_table, names),
                              board_dir)
    put("LEADERBOARD.md", markdown)
    put(PAGE, render_html(markdown, "dml-bench leaderboard", root=board_dir))
    return paths


def _ranks_caption(board: Board, st: Statistics) -> str:
    """The caption of ``ranks.tex``: what the columns hold, in which unit, and the marks."""
    config = board.experiment.to_dict()
    k = (config.get("evaluation") or {}).get("knn_k", 3)
    return (f"Methods by mean rank over the {len(st.errors)} ranked data sets (1 = lowest "
            f"{k}-NN test error, ties averaged), then each data set's mean test error (\\%) "
            f"over {splits_phrase(st.table['n_splits'], config)}; -- over budget (with the "
            "longest wall time a fit was seen to run), n/a cannot run (memory rule; with the "
            "estimated memory of one fit), failed: the fit raised, \\dots{} still to run.")


def _under_the_ranks(table: pd.DataFrame, notes: dict, names: dict[str, str] | None) -> list:
    """The lines under the rank table: the cells solved in the span of the training points, then
    the config's notes."""
    lines = []
    wide = table[table["solved_in_span"].astype(bool)]
    if len(wide):
        lines += ["", "Solved in the span of the training points (more features than points; the "
                  "same metric as the solve in all coordinates, see each learner's docstring): "
                  + "; ".join(f"{r.dataset} × {_name(r.method, names)}"
                              for r in wide.itertuples()) + "."]
    if notes:
        lines += ["", "Notes (the config's `notes:`, by data set / method):", ""]
        lines += [f"- `{key}`: {' '.join(str(text).split())}" for key, text in notes.items()]
    return lines


def _compute_sentence(table: pd.DataFrame) -> str:
    """The board's recorded compute: the wall time of every finished fit, summed (final fits and
    tuning fits; each fit ran on one core, in parallel with others)."""
    final, tuning = table["final_seconds"].sum() / 3600, table["tuning_seconds"].sum() / 3600
    return (f"Compute recorded: {final + tuning:.1f} h of fit wall time over the finished tasks "
            f"({final:.1f} h final fits, {tuning:.1f} h tuning fits), each fit on one core; "
            "per cell in `board.csv` (`final_seconds`, `tuning_seconds`).")


def _hosts_sentence(table: pd.DataFrame, note: str = "") -> str:
    """Which CPUs the complete cells' final fits ran on (a time holds for its host only),
    followed by the board's ``hosts_note`` when it declares one."""
    complete = table[table["status"] == "complete"]
    counts = complete["hosts"].replace("", "not recorded").value_counts()
    listed = ", ".join(f"{host} ({n} cell{'s' * (n != 1)})" for host, n in counts.items())
    return f"The final fits ran on: {listed}" + (f"; {note}" if note else ".")


def _rank_table(st: Statistics, bounds: bool = False) -> pd.DataFrame:
    """Methods by mean rank, with their error on every data set (ranked ones first); a cell
    without a result shows its mark (:data:`STATUS_TEXT`), followed with ``bounds`` by the bound
    that decided it (``– > 1200 s``, ``n/a 23.8 GB``)."""
    status = st.table.pivot(index="dataset", columns="method", values="status")
    err = st.table.pivot(index="dataset", columns="method", values="error")
    bound = st.table.pivot(index="dataset", columns="method", values="bound").fillna("")
    out = pd.DataFrame({"method": st.mean_ranks.index, "mean_rank": st.mean_ranks.to_numpy(),
                        "n_ranked": len(st.errors)})
    datasets = list(dict.fromkeys(st.table["dataset"]))
    for d in datasets:
        out[d] = [err.loc[d, m] if status.loc[d, m] == "complete"
                  else " ".join([STATUS_TEXT[status.loc[d, m]]]
                                + [bound.loc[d, m]] * bool(bounds and bound.loc[d, m]))
                  for m in out["method"]]
    return out


def _name(method, names: dict[str, str] | None) -> str:
    """A method label as printed: by ``names`` (label → name), a label not in it as it is."""
    return (names or {}).get(str(method), str(method))


def _named(methods, names: dict[str, str] | None) -> list[str]:
    """Method labels as printed (:func:`_name`)."""
    return [_name(m, names) for m in methods]


def _shown(table: pd.DataFrame, frame: bool = False, names: dict[str, str] | None = None):
    """The rank table as text cells (errors in %, two decimals; methods by ``names``)."""
    shown = table.copy()
    shown["method"] = _named(shown["method"], names)
    for col in shown.columns[1:]:
        shown[col] = [f"{v:.2f}" if isinstance(v, (float, np.floating)) and not pd.isna(v)
                      else str(v) for v in shown[col]]
    return shown if frame else shown.astype(str).to_numpy().tolist()


def _plot_cd(st: Statistics, stem: Path, names: dict[str, str] | None = None
             ) -> dict[str, Path]:
    """Demšar's critical-difference diagram: the rank axis, each method (by ``names``) at its
    mean rank, bars joining the groups of methods not significantly different, and the CD as a
    scale bar."""
    plt = pyplot()
    mr, k = st.mean_ranks, len(st.mean_ranks)
    half = math.ceil(k / 2)
    fig, ax = plt.subplots(figsize=(8, 1.6 + 0.28 * half))
    ax.set_xlim(0.5, k + 0.5)
    ax.set_ylim(-(half + 1.5), 1.6)
    ax.axis("off")
    ax.hlines(0, 1, k, color="k", lw=1)
    for i in range(1, k + 1):
        ax.vlines(i, 0, 0.12, color="k", lw=1)
        ax.text(i, 0.22, str(i), ha="center", va="bottom", fontsize=8)
    bar = min(st.cd, k - 1)  # with few data sets the CD can exceed the whole axis
    ax.hlines(1.2, 1, 1 + bar, color="k", lw=1.5)
    ax.text(1 + bar / 2, 1.3, f"CD = {st.cd:.2f} (Nemenyi, α = 0.05)", ha="center",
            va="bottom", fontsize=8)
    for j, (name, r) in enumerate(zip(_named(mr.index, names), mr)):
        left = j < half
        level = -(j if left else k - 1 - j) - 1
        x_text = 0.6 if left else k + 0.4
        ax.plot([r, r, x_text], [0, level, level], color="k", lw=0.7)
        ax.text(x_text, level + 0.05, f"{name} ({r:.2f})", ha="left" if left else "right",
                va="bottom", fontsize=8)
    for g, group in enumerate(ranking.cliques(mr, st.cd)):
        y = -0.3 - 0.18 * g
        ax.hlines(y, mr[group[0]] - 0.05, mr[group[-1]] + 0.05, color="tab:red", lw=3)
    fr = st.friedman
    ax.set_title(f"{len(st.errors)} data sets, {k} methods; Friedman χ² = {fr.statistic:.1f}, "
                 f"p = {fr.p_value:.2g}", fontsize=9)
    return _save(fig, stem)


def _plot_time_error(st: Statistics, stem: Path, names: dict[str, str] | None = None
                     ) -> dict[str, Path]:
    """Mean rank against the geometric-mean final-fit time (each method by ``names``), the
    Pareto front joined."""
    import matplotlib.ticker

    plt = pyplot()
    te = st.time_error.dropna(subset=["fit_time"])
    fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
    ax.scatter(te["fit_time"], te["mean_rank"], c=np.where(te["pareto"], "tab:red", "tab:gray"))
    for rec in te.itertuples():
        ax.annotate(_name(rec.method, names), (rec.fit_time, rec.mean_rank), fontsize=7,
                    xytext=(3, 3), textcoords="offset points")
    front = te[te["pareto"]].sort_values("fit_time")
    ax.step(front["fit_time"], front["mean_rank"], where="post", color="tab:red", lw=1,
            label="Pareto front")
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.invert_yaxis()
    ax.set_xlabel(axis_label("final_fit_time"))
    ax.set_ylabel(axis_label("mean_rank"))
    legend_outside(fig)
    return _save(fig, stem)


def _save(fig, stem: Path) -> dict[str, Path]:
    """``fig`` as ``<stem>.png`` and ``.pdf`` (laid out tight, 120 dpi), closed; its paths by
    their names in the board's folder (``figures/<name>.png``)."""
    if fig.get_layout_engine() is None:  # a figure with a legend outside has its own layout
        fig.tight_layout()
    saved = save_figure(fig, stem.parent, stem.name)
    return {f"figures/{stem.name}.{ext}": saved[f"{stem.name}_{ext}"] for ext in ("png", "pdf")}


def _markdown(board: Board, st: Statistics, board_dir: Path, alpha: float,
              rank_table: pd.DataFrame, names: dict[str, str] | None = None) -> str:
    exp, fr = board.experiment, st.friedman
    report = (board_dir.parent / "REPRODUCTION.html").is_file()  # link only to pages written
    errors = " (see errors.csv)" if (board_dir / "errors.csv").is_file() else ""
    lines = ["# Leaderboard", "",
             *(["[Reproduction report](../REPRODUCTION.html) · **Leaderboard**", ""] if report
               else []),
             f"Generated by `dmlbench leaderboard` (dml-bench {__version__}) from `{board_dir}` on "
             f"{dt.date.today().isoformat()}. Do not edit: rerun the command.", "",
             "## Protocol", "", " ".join(exp.description.split()), "",
             f"Budget: {board.budget:g} s of wall-clock time per fit (one BLAS thread per worker); "
             f"memory rule: {board.memory_gb:g} GB per fit. – over budget, with the longest wall "
             "time a fit was seen to run (the budget when none was recorded; est.: extrapolated "
             "by the size rule from a smaller data set on which the method ran over); n/a cannot "
             "run (memory rule), with the footprint's memory estimate of one fit; failed: the "
             f"fit raised{errors}, … still to run.", "",
             _compute_sentence(st.table), "",
             "## Ranks", ""]
    if st.pending:
        lines += [f"**Partial board**: {len(st.pending)} data set(s) have cells still to run and "
                  "are not ranked yet (methods still to run): " + "; ".join(
                      f"{d} ({'all' if len(ms) == st.errors.shape[1] else ', '.join(ms)})"
                      for d, ms in st.pending) + ".", ""]
    if st.no_data:
        lines += [f"Not available here (left out): {', '.join(st.no_data)}.", ""]
    lines += [f"Mean rank over the {len(st.errors)} ranked data set(s) (1 = lowest 3-NN test "
              "error, ties averaged; a method over budget, unable to run or failed on a data set "
              "ranks last there, tied with the others that did). Cells: mean test error (%) over "
              "the splits.", ""]
    header = list(rank_table.columns)
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in _shown(rank_table, names=names)]
    lines += _under_the_ranks(st.table, exp.notes, names)
    lines += ["", "## Significance", ""]
    if fr is None:
        lines += ["Not enough ranked data sets (≥ 2) or methods (≥ 3) for the Friedman test."]
    else:
        verdict = "rejected" if fr.p_value < alpha else "not rejected"
        lines += [f"Friedman test (Demšar 2006 §3.2.2; scipy, tie-corrected): χ²_F = "
                  f"{fr.statistic:.2f} with {fr.n_methods - 1} degrees of freedom, p = "
                  f"{fr.p_value:.3g}; Iman–Davenport F_F = {fr.iman_davenport:.2f}, p = "
                  f"{fr.iman_davenport_p:.3g}. The hypothesis that all methods are equivalent is "
                  f"{verdict} at α = {alpha}.",
                  "", f"Nemenyi critical difference CD = q_α √(k(k+1)/(6N)) = {st.cd:.2f} "
                  f"(k = {fr.n_methods}, N = {fr.n_datasets}, q_{alpha} = "
                  f"{ranking.nemenyi_q(fr.n_methods, alpha):.3f}): two methods whose mean ranks "
                  "differ by at least CD differ significantly; the red bars of the diagram join "
                  "the groups that do not.", "",
                  "![critical-difference diagram](figures/cd_diagram.png)"]
    lines += ["", "## Time against rank", "",
              "Geometric mean of the final-fit time over the ranked data sets where the method "
              "ran, against its mean rank; red: the Pareto front (no method both faster and "
              "better ranked). Data: `time_error.csv`. "
              + _hosts_sentence(st.table, board.hosts_note), ""]
    if st.time_error["fit_time"].notna().any():
        lines += ["![time against rank](figures/time_error.png)", ""]
    lines += ["## Pairwise", "",
              "Wins / ties / losses of each method against each other over the ranked data "
              "sets (a result beats no result), and the two-sided Wilcoxon signed-rank p-value "
              "on the data sets where both have a result (Demšar 2006 §3.1.3; exact, with "
              "mid-ranks for ties and zero differences dropped). Full table: "
              "`pairwise.csv` (also .tex, .html).", ""]
    best = list(st.mean_ranks.index[:1])
    pw = st.pairwise[st.pairwise["method"].isin(best)]
    if len(pw):
        lines += ["| method | versus | wins | ties | losses | n both | Wilcoxon p |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {_name(r.method, names)} | {_name(r.versus, names)} | {r.wins} | {r.ties} | "
                  f"{r.losses} | {r.n_both} | "
                  f"{'–' if pd.isna(r.wilcoxon_p) else f'{r.wilcoxon_p:.3g}'} |"
                  for r in pw.itertuples()]
    marked = st.table[st.table["status"].isin(["over_budget", "cannot_run", "failed"])]
    if len(marked):
        lines += ["", "## Cells without a result", "", "| data set | method | status | reason |",
                  "|---|---|---|---|"]
        lines += [f"| {r.dataset} | {_name(r.method, names)} | {r.status} | {r.reason} |"
                  for r in marked.itertuples()]
    return "\n".join(lines) + "\n"
