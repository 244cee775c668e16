"""``results/REPRODUCTION.md`` (and ``.html``): what reproduces, generated from the results.

For every target of ``targets.yaml``, grouped by paper: its status (reproduced here, not run yet,
or not runnable here and why), the paper-vs-ours table of every compared cell with its match flag
and, for mismatches, the note kept as data (the papers' YAML ``notes``, the config's ``notes:``
keyed ``dataset/solver``, ``dataset/*`` or ``*/solver``), the figures, and the wall time of the
run. Summary counts per paper (cells matched / compared / not runnable here) and the largest
gaps come first; the README's status table is the same summary.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pandas as pd

from .. import __version__
from ..common.safe_write import write_text
from ..experiment.schema import ConfigError
from ..papers import load_paper_table, non_result_items, paper_citation
from ..report.html import relative_paths, render_html
from ..report.knn import PRECISE_LEVEL, add_precise_columns, precise_of, read_runs, summarize
from ..report.tables import ReportError, compare_with_paper, read_config
from .beside import (referee_lines, referee_tables, sweep_cell, sweep_lines, sweep_rankings,
                     sweep_table_lines, sweep_tables, with_sweep_range)
from .claims import check_claims, claims_markdown
from .studies.embedding_quality import CRITERIA
from .targets import RUN_RECORD, availability, config_target, load_targets, target_experiment

MD_NAME, HTML_NAME = "REPRODUCTION.md", "REPRODUCTION.html"


def collect(results_root: Path, root: Path = Path(".")) -> list[dict]:
    """One entry per target: status, comparisons, figures, timing (the report's data)."""
    targets = load_targets()
    entries = []
    for target in targets.values():
        entry = {"target": target, "comparisons": [], "figures": [], "record": None}
        try:
            exp = None if target.unsupported else target_experiment(target, targets, root=root)
        except ConfigError as exc:
            entry["status"], entry["reason"] = "not runnable here", f"config problem: {exc}"
            entries.append(entry)
            continue
        reason = availability(target, exp)
        # printed once, under the target whose runs it describes (not again under same_runs)
        entry["protocol"] = exp.protocol if exp and not target.same_runs else ()
        source = config_target(target, targets)  # a same_runs target reads its source's run
        results_dir = results_root / (exp.name if exp else source.output or "")
        if source.function and not reason:
            _fill_function(entry, results_dir, source)
            entries.append(entry)
            continue
        if reason:
            entry["status"], entry["reason"] = "not runnable here", reason
        elif not (results_dir / "runs.csv").is_file():
            entry["status"] = "not run yet"
            entry["reason"] = f"`make reproduce-{target.id}` has not been run"
        else:
            entry["status"] = "ran"
            _fill(entry, results_root, results_dir, targets)
            entry["not_run"], entry["no_data"] = tasks_not_run(exp, entry.get("task_ids", set()))
        entries.append(entry)
    return entries


def _fill(entry: dict, results_root: Path, results_dir: Path, targets) -> None:
    target = entry["target"]
    try:
        runs, config = read_runs(results_dir), read_config(results_dir)
    except ReportError as exc:
        entry["status"], entry["reason"] = "not run yet", str(exc)
        return
    summary = summarize(runs, config)
    notes = config.get("notes") or {}
    for key in target.tables:
        comparison = compare_with_paper(summary, load_paper_table(key), config)
        comparison["note"] = [_note(row, notes) for _, row in comparison.iterrows()]
        if comparison["quantity"].eq("error").all():
            comparison = with_sweep_range(comparison, results_root, target.diagnoses,
                                           config)
        entry["comparisons"].append((key, comparison))
    entry["comparisons"] = _with_precise(entry["comparisons"], target, targets, results_dir,
                                         config)
    if target.tables:
        entry["sweeps"] = sweep_rankings(results_root, target.diagnoses)
    else:  # a figure: no numbers to count matches against
        entry["sweep_tables"] = sweep_tables(results_root, target.diagnoses)
    entry["referees"] = referee_tables(results_root, target.referees)
    entry["figures"] = [results_dir / "figures" / f"{name}.png" for name in target.figures
                        if (results_dir / "figures" / f"{name}.png").is_file()]
    record_file = results_dir / RUN_RECORD
    records = json.loads(record_file.read_text()) if record_file.is_file() else {}
    source = config_target(target, targets).id
    entry["record"] = records.get(source)
    entry["fit_seconds"] = float(runs["fit_time"].sum()
                                 + pd.to_numeric(runs.get("tuning_time"), errors="coerce").sum())
    entry["results_dir"] = results_dir
    entry["n_runs"] = len(runs)
    entry["task_ids"] = set(runs["task_id"])


def tasks_not_run(exp, done: set[str]) -> tuple[dict[str, int], list[str]]:
    """Per dataset label of ``exp`` with data here: how many of its tasks have no row in ``done``
    (task ids); and the labels whose data are not available here (mirror, cache, bundled, the
    user's files)."""
    from ..experiment.kinds import task_kind

    kind = task_kind(exp)
    missing: dict[str, int] = {}
    no_data = kind.missing_data(exp)
    tasks = kind.all_tasks(exp)
    for task in tasks:
        if task.task_id not in done and task.dataset.label not in no_data:
            missing[task.dataset.label] = missing.get(task.dataset.label, 0) + 1
    return missing, no_data


def _fill_function(entry: dict, results_dir: Path, source) -> None:
    """Status, figures, record and tables of a ``function`` target, or of a ``same_runs`` target
    of one (``source``, whose run it reads; no runs.csv)."""
    target = entry["target"]
    record_file = results_dir / RUN_RECORD
    if not record_file.is_file():
        entry["status"] = "not run yet"
        entry["reason"] = f"`make reproduce-{target.id}` has not been run"
        return
    entry["status"], entry["results_dir"], entry["function"] = "ran", results_dir, True
    entry["record"] = json.loads(record_file.read_text()).get(source.id)
    entry["figures"] = [results_dir / f"{name}.png" for name in target.figures
                        if (results_dir / f"{name}.png").is_file()]
    entry["n_runs"], entry["fit_seconds"] = 1, entry["record"]["wall_seconds"]
    entry["comparisons"] = function_comparisons(results_dir, target.tables)


def function_comparisons(results_dir: Path, tables) -> list[tuple[str, pd.DataFrame]]:
    """A function target's paper tables against its run's ``summary.csv``, cell by cell.

    ``summary.csv`` holds one value per cell (a single run, no std): columns ``dataset``,
    ``label``, ``solver`` and one column per compared quantity (e.g. ``alstd``). Every row of the
    paper's table is listed; those the run did not compute are *not run*, with their note.
    """
    if not tables:
        return []
    summary = pd.read_csv(results_dir / "summary.csv")
    comparisons = []
    for key in tables:
        table = load_paper_table(key)
        q = table.quantity
        ours = summary.assign(**{f"{q}_mean": summary[q], f"{q}_std": float("nan"), "error_n": 1})
        every_row = {"datasets": [{"name": row} for row in table.row_names]}
        comparisons.append((key, compare_with_paper(ours, table, every_row)))
    return comparisons


def _note(row: pd.Series, config_notes: dict) -> str:
    """The paper file's note, else the config's (most specific key first)."""
    if isinstance(row.get("note"), str) and row["note"]:
        return row["note"]
    for key in (f"{row['dataset']}/{row['solver']}", f"{row['dataset']}/*", f"*/{row['solver']}"):
        if key in config_notes:
            return str(config_notes[key])
    return ""


def counts(entries: list[dict]) -> pd.DataFrame:
    """Per paper: targets, targets run, error cells compared / matched, cells not runnable."""
    rows = []
    for entry in entries:
        target = entry["target"]
        compared = matched = not_run = 0
        for _, comp in entry["comparisons"]:
            errors = comp[comp["quantity"] == "error"]
            ran = errors[errors["status"] != "not run"]
            compared += len(ran)
            matched += int((ran["status"] == "match").sum())
            not_run += len(errors) - len(ran)
        if entry["status"] != "ran":
            not_run += sum(len(load_paper_table(k).cells()) for k in target.tables
                           if load_paper_table(k).quantity == "error")
        rows.append({"paper": target.paper, "targets": 1, "run": int(entry["status"] == "ran"),
                     "partly_run": int(bool(entry.get("not_run"))),
                     "not_run_yet": int(entry["status"] == "not run yet"),
                     "not_runnable": int(entry["status"] == "not runnable here"),
                     "compared": compared, "matched": matched, "not_run": not_run})
    return pd.DataFrame(rows).groupby("paper", sort=False).sum().reset_index()


def largest_gaps(entries: list[dict], n: int = 3) -> pd.DataFrame:
    """The ``n`` error cells furthest from the paper (|ours − paper| in points)."""
    frames = [comp.assign(target=e["target"].id) for e in entries for _, comp in e["comparisons"]]
    if not frames:
        return pd.DataFrame()
    cells = pd.concat(frames, ignore_index=True)
    cells = cells[(cells["quantity"] == "error") & (cells["status"] != "not run")]
    return cells.assign(gap=cells["diff"].abs()).nlargest(n, "gap")


def _fmt(mean, std=None, digits=2) -> str:
    if mean is None or pd.isna(mean):
        return "–"
    text = f"{mean:.{digits}f}"
    return text if std is None or pd.isna(std) else f"{text} ({std:.{digits}f})"


def _comparison_rows(comp: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    # errors and (LFW) accuracies have a match rule; other quantities (times, ...) a ratio
    has_match_rule = bool(comp["quantity"].isin(("error", "accuracy")).all())
    digits = 4 if comp["quantity"].isin(CRITERIA).all() else 2  # the embedding criteria are < 1
    swept = has_match_rule and comp.get("sweep_low", pd.Series(dtype=float)).notna().any()
    header = ["data set", "method", "paper", "ours", *(["sweep range"] if swept else []),
              "ours − paper", "match" if has_match_rule else "ours / paper",
              *(["Welch's t"] if has_match_rule else []), "note"]
    body = []
    for _, r in comp.iterrows():
        welch = [_significance(r)] if has_match_rule else []
        sweep = [sweep_cell(r)] if swept else []
        if r["status"] == "not run":
            body.append([r["dataset"], r["solver"], _fmt(r["paper_mean"], r["paper_std"], digits),
                         "not run", *sweep, "", "", *([""] if has_match_rule else []),
                         r["note"] or ""])
            continue
        flag = ("yes" if r["status"] == "match" else "**no**") if has_match_rule else \
            f"×{r['ratio']:.2f}"
        body.append([r["dataset"], r["label"], _fmt(r["paper_mean"], r["paper_std"], digits),
                     _fmt(r["ours_mean"], r["ours_std"], digits), *sweep,
                     f"{r['diff']:+.{digits}f}", flag,
                     *welch,
                     "" if r["status"] == "match" else (r["note"] or "")])
    return header, body


def _significance_counts(entries: list[dict]) -> str:
    """One sentence: how the mismatched error cells split by the Welch test."""
    frames = [comp for e in entries for _, comp in e.get("comparisons") or []
              if (comp["quantity"] == "error").all()]
    if not frames:
        return ""
    cells = pd.concat(frames)
    verdicts = cells.loc[cells["status"] == "mismatch", "significance"].fillna("").map(
        lambda v: "lower" if v.startswith("ours lower") else "higher" if v.startswith(
            "ours higher") else "n.s." if v.startswith("no significant") else "untestable")
    n = verdicts.value_counts()
    return (f"Of the {len(verdicts)} that do not, ours is significantly lower (better) in "
            f"{n.get('lower', 0)}, significantly higher (worse) in {n.get('higher', 0)}, not "
            f"significantly different in {n.get('n.s.', 0)} (Welch's t, 5 %), and "
            f"{n.get('untestable', 0)} cannot be tested (a single run on one side).")


def _significance(r: pd.Series) -> str:
    """The Welch column: which side ours is on when significant, "–" when not testable."""
    verdict = r.get("significance")
    if not isinstance(verdict, str) or verdict.startswith("not testable"):
        return "–"
    return "n.s." if verdict.startswith("no significant") else verdict.replace("ours ", "")


def _duration(seconds: float) -> str:
    minutes, sec = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {sec:02d} s"


def _timing_line(entry: dict) -> str:
    record = entry.get("record")
    if entry.get("function"):
        return f"Wall time of `dmlbench reproduce {record['target']}`: " \
               f"{_duration(record['wall_seconds'])}."
    fits = f"fits and tuning took {_duration(entry['fit_seconds'])} of compute in total"
    if record:
        resumed = (f", resuming {record['done_before']} tasks finished by earlier runs"
                   if record["done_before"] else "")
        if record.get("interrupted"):
            resumed += "; the last run was interrupted"
        return (f"Wall time of `dmlbench reproduce {record['target']}`: "
                f"{_duration(record['wall_seconds'])} ({record['n_jobs']} parallel "
                f"task{'s' if record['n_jobs'] != 1 else ''}, "
                f"{record['cpu_count']} cores{resumed}); {fits}.")
    return f"Run with `dmlbench run` (no wall-time record); {fits}."


def render_markdown(entries: list[dict], results_root: Path) -> str:
    """The whole report as Markdown (figures as relative image links)."""
    table = counts(entries)
    walls = [e["record"]["wall_seconds"] for e in entries if e.get("record")
             and e["target"].same_runs is None]
    lines = ["# Reproduction report", "",
             f"Generated by `dmlbench report --all` (dml-bench {__version__}) from `{results_root}` "
             f"on {dt.date.today().isoformat()}. Do not edit: rerun the command.", "",
             *_leaderboard_link(results_root),
             "A cell *matches* when |ours − paper| ≤ the paper's standard deviation (0.5 points "
             "where the paper prints none). Times are compared as ratios only (other hardware). "
             "The column *Welch's t* says whether ours is significantly lower (better) or higher "
             "(worse) than the paper's mean at the 5 % level, from both means, stds and split "
             "counts (`scipy.stats.ttest_ind_from_stats`, unequal variances); n.s. is no "
             "significant difference, – not testable (the paper or ours has one run).", "",
             *_precise_header(entries),
             "## Summary", "",
             "| Paper | Targets | Run here (of which partly) | Not run yet | Not runnable here "
             "| Error cells compared | Matched | Cells not run |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for _, r in table.iterrows():
        lines.append(f"| {r['paper']} | {r['targets']} | {_run_cell(r)} | {r['not_run_yet']} | "
                     f"{r['not_runnable']} | {r['compared']} | {r['matched']} | {r['not_run']} |")
    total = table[["compared", "matched"]].sum()
    lines += ["", f"In all: **{total['matched']} of {total['compared']}** compared error cells "
              f"match. {_significance_counts(entries)}"]
    if walls:
        lines.append(f"Recorded wall time of the target runs: {_duration(sum(walls))} "
                     "(targets run with `dmlbench run` instead have no record; see each section).")
    gaps = largest_gaps(entries)
    if not gaps.empty:
        lines += ["", "Largest gaps:", ""]
        for _, g in gaps.iterrows():
            lines.append(f"- {g['target']}: {g['dataset']} / {g['label']}: paper "
                         f"{_fmt(g['paper_mean'], g['paper_std'])}, ours {_fmt(g['ours_mean'])} "
                         f"({g['diff']:+.2f} points){' — ' + g['note'] if g['note'] else ''}")
    for paper in dict.fromkeys(e["target"].paper for e in entries):
        lines += ["", f"## {paper}", "", paper_citation(paper)]
        skipped = non_result_items(paper)
        if skipped:
            lines += ["", "Captioned items that report no result (no target): "
                      + "; ".join(f"{item}, {what}" for item, what in skipped.items()) + "."]
        for entry in (e for e in entries if e["target"].paper == paper):
            lines += _target_markdown(entry, results_root)
    lines += ["", *claims_markdown(check_claims(entries, results_root))]
    return "\n".join(lines) + "\n"


def _target_markdown(entry: dict, results_root: Path) -> list[str]:
    t = entry["target"]
    lines = ["", f"### {t.item} — {t.what}", "", f"`make reproduce-{t.id}`"]
    if entry["status"] != "ran":
        lines += ["", f"**{entry['status'].capitalize()}**: {entry['reason']}."]
    else:
        runs = f" ({entry['n_runs']} runs)" if not entry.get("function") else ""
        lines += ["", f"Results: `{entry['results_dir']}`{runs}. " + _timing_line(entry)]
        if entry.get("not_run"):
            todo = ", ".join(f"{label} ({n} tasks)" for label, n in entry["not_run"].items())
            lines += ["", f"**Partly run**: not run yet: {todo}; `dmlbench reproduce "
                          f"{t.same_runs or t.id}` runs them into the same results."]
        if entry.get("no_data"):
            lines += ["", f"Data not available here (not in the mirror or cache): "
                          f"{', '.join(entry['no_data'])}; their rows are skipped (`dmlbench fetch "
                          "NAME` where there is network)."]
    if t.notes:
        lines += ["", t.notes]
    for key, comp in entry["comparisons"]:
        header, body = _comparison_rows(comp)
        header, body = _precise_cells(comp, header, body)
        ran = comp[comp["status"] != "not run"]
        if (comp["quantity"] == "error").all():
            head = f"{int((ran['status'] == 'match').sum())} of {len(ran)} cells match"
        else:
            head = f"{len(ran)} cells compared"
        lines += ["", f"**{key}** ({comp['quantity'].iloc[0]}): {head}"
                  f"{f', {len(comp) - len(ran)} not run' if len(comp) > len(ran) else ''}.", "",
                  "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(str(c).replace("|", "/") for c in row) + " |" for row in body]
    lines += sweep_lines(entry)
    lines += sweep_table_lines(entry)
    lines += referee_lines(entry)
    lines += _protocol_lines(entry.get("protocol") or ())
    for fig in entry["figures"]:
        lines += ["", f"![{fig.stem}]({fig.relative_to(results_root).as_posix()})"]
    return lines


def _leaderboard_link(results_root: Path) -> list[str]:
    """The link to the leaderboard's page (the second page, `dmlbench leaderboard`), if written."""
    if not (Path(results_root) / "leaderboard" / "leaderboard.html").is_file():
        return []
    return ["**Reproduction report** · [Leaderboard](leaderboard/leaderboard.html): every method "
            "on every data set under one protocol, with ranks and significance tests.", ""]


def _protocol_lines(protocol: tuple) -> list[str]:
    """The table's one protocol (config ``protocol:``): each choice, ours, and its basis."""
    if not protocol:
        return []
    lines = ["", "**Protocol** (one for every row of the table): each choice with the paper's "
                 "words it rests on, or the argument where the paper is silent.", "",
             "| choice | ours | basis |", "|---|---|---|"]
    for p in protocol:
        if p.get("paper"):
            basis = f"paper: “{p['paper']}”" + (f" — {p['why']}" if p.get("why") else "")
        else:
            basis = f"not stated; {p['why']}"
        # a formula's bars (|f|) as U+2223, so that they do not split the table's cells
        lines.append("| " + " | ".join(x.replace("|", "∣") for x in
                                       (p["choice"], p["ours"], basis)) + " |")
    return lines


def _run_cell(row: pd.Series) -> str:
    return f"{row['run']} ({row['partly_run']})" if row["partly_run"] else str(row["run"])


def summary_markdown(entries: list[dict]) -> str:
    """The per-paper summary table alone (the README's status table)."""
    rows = ["| Paper | Targets | Run here (of which partly) | Not run yet | Not runnable here "
            "| Error cells compared | Matched | Error cells not run |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for _, r in counts(entries).iterrows():
        rows.append(f"| {r['paper']} | {r['targets']} | {_run_cell(r)} | {r['not_run_yet']} | "
                    f"{r['not_runnable']} | {r['compared']} | {r['matched']} | {r['not_run']} |")
    return "\n".join(rows + ["", "Details, per cell and with the reasons for gaps: "
                                  "[results/REPRODUCTION.md](results/REPRODUCTION.md)."])


def write_reproduction_report(results_root: Path | str = "results",
                              root: Path = Path(".")) -> tuple[Path, Path, list[dict]]:
    """Write ``REPRODUCTION.md`` and ``.html`` into ``results_root``; returns the paths and the
    collected entries."""
    results_root = Path(results_root)
    entries = collect(results_root, root)
    markdown = relative_paths(render_markdown(entries, results_root), results_root)
    md, page = results_root / MD_NAME, results_root / HTML_NAME
    write_text(md, markdown)
    write_text(page, render_html(markdown, "dml-bench reproduction", root=results_root))
    return md, page, entries


# ------------------------------------------------------------- precise estimate (100 splits)


def _with_precise(comparisons: list, target, targets, results_dir: Path, config: dict) -> list:
    """The comparisons with the precise companion's columns, when the target declares one
    (``precise:``); not yet run, its cells say so."""
    from .targets import precise_version

    source = config_target(target, targets)
    if not source.precise:
        return comparisons
    summary, precise_config = precise_of(results_dir)
    if precise_config is None:  # declared, not run yet: what it would run
        exp = target_experiment(source, targets)
        precise_config = precise_version(exp, source.precise).to_dict()
    return [(key, add_precise_columns(comp, load_paper_table(key), config, summary,
                                      precise_config)) for key, comp in comparisons]


def _precise_text(r: pd.Series) -> tuple[str, str]:
    """The two precise cells of a row: "mean [low, high]" (or why there is none) and Welch's
    verdict at the precise split count."""
    if not r.get("precise_n"):
        return (f"– ({r['precise_note']})" if isinstance(r.get("precise_note"), str) else "–"), ""
    text = f"{r['precise_mean']:.2f} [{r['precise_ci_low']:.2f}, {r['precise_ci_high']:.2f}]"
    if isinstance(r.get("precise_note"), str) and r["precise_note"]:
        text += f" ({r['precise_note']})"
    return text, _significance(pd.Series({"significance": r["precise_significance"]}))


def _precise_cells(comp: pd.DataFrame, header: list[str], body: list[list[str]]
                   ) -> tuple[list[str], list[list[str]]]:
    """Insert the columns *ours, 100 splits [95 % CI]* and *paper vs 100* before the note."""
    if "precise_n" not in comp.columns:
        return header, body
    at = header.index("note")
    n = int(comp["precise_n"].max()) if comp["precise_n"].max() > 0 else 100
    header = [*header[:at], f"ours, {n} splits [{PRECISE_LEVEL * 100:.0f} % CI]",
              f"paper vs {n} (Welch)", *header[at:]]
    body = [[*row[:at], *_precise_text(r), *row[at:]]
            for row, (_, r) in zip(body, comp.iterrows())]
    return header, body


def _precise_header(entries: list[dict]) -> list[str]:
    """The report header's paragraph on the precise estimate (nothing when no target has one)."""
    declared = [e["target"].precise for e in entries if e["target"].precise]
    if not declared:
        return []
    n_splits = sorted({int(p.get("n_splits", 100)) for p in declared})
    max_n = sorted({int(p.get("max_n", 2000)) for p in declared})
    cells = [c.assign(paper_n=load_paper_table(key).n_splits)
             for e in entries for key, c in e.get("comparisons") or []
             if "precise_n" in c.columns]
    cells = pd.concat(cells) if cells else pd.DataFrame(columns=["precise_n", "status"])
    have = cells[(cells["precise_n"] > 0) & (cells["status"] != "not run")]
    counts = ""
    if len(have):
        differ = have["precise_significance"].fillna("").str.startswith("ours ")
        inside = have["paper_in_ci"].astype("boolean").fillna(False)
        half = (have["precise_ci_high"] - have["precise_ci_low"]) / 2
        wider = have["paper_std"] / have["paper_n"].astype(float) ** 0.5 > half
        mismatched = have["status"] == "mismatch"
        counts = (f" {len(have)} compared error cells have one: the paper's mean lies inside our "
                  f"interval in {int(inside.sum())} and differs significantly from our mean "
                  f"(Welch) in {int(differ.sum())}; {int(mismatched.sum())} of the {len(have)} "
                  f"do not match, {int((differ & mismatched).sum())} of them significantly "
                  f"different. The paper's own standard error (std/√n) is wider than our "
                  f"interval's half-width in {int(wider.sum())} of the {len(have)}.")
    grid = "/".join(map(str, n_splits))
    return [f"**Ours over {grid} splits.** Ten splits leave our own mean noisy (wine's "
            "Euclidean error over 10 z-scored splits is 6.35 % with seed 0, 4.62, 3.46 and "
            "3.08 % with seeds 1–3), so targets that declare a precise companion "
            "(`targets.yaml` `precise:`, run by `dmlbench reproduce ID --precise` into "
            "`results/<name>_precise`) rerun the data sets with fewer than "
            f"{'/'.join(map(str, max_n))} points over {grid} splits with the cheap, untuned "
            "solvers they list. Split i has the headline's seed (from the experiment seed, data "
            "set and i): its first 10 splits are the headline's tasks. The column *ours, N "
            f"splits* is our mean with its {PRECISE_LEVEL * 100:.0f} % Student-t interval, "
            f"mean ± t((1 + {PRECISE_LEVEL}) / 2, n − 1)·s/√n (`scipy.stats.t`); *paper vs N* is "
            "Welch's t of the paper's mean, std and split count against our N splits, at 5 %. "
            "We do not test whether the paper's mean lies inside our interval (a one-sample "
            "t-test): that takes the paper's 10-split mean as exact, though it carries its own "
            "sampling error, std/√10, and so calls too many cells different (the CSVs still "
            "give it, `paper_in_ci`). A cell without an estimate says why: a large set, a tuned "
            "solver (its grid search on every split), or not run yet. The 10-split headline and "
            f"the match rule stay as they are, for like-for-like.{counts}", ""]

