"""Views shown beside a reproduced table's headline: protocol sweeps and referees.

Part of the reproduction stage's report. A target of ``targets.yaml`` may declare sweeps
(``diagnoses:``: the table rerun under protocol variants, each cell's range over them) and
referees (``referees:``: another implementation run on our splits, with a paired test per
cell); both are committed CSVs read here and rendered under the target's table in
``results/REPRODUCTION.md``. Neither changes the headline or its match count.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..errors import warn


def _declared_csv(results_root: Path, folder: str, name: str,
                  columns) -> tuple[Path, pd.DataFrame | None]:
    """The CSV ``results_root/folder/name`` that a target declares; None when that results root
    does not hold it (a sweep is committed work, not part of a run), or, with a warning, when it
    lacks one of ``columns``."""
    path = results_root / folder / name
    if not path.is_file():
        return path, None
    table = pd.read_csv(path)
    missing = [c for c in columns if c not in table.columns]
    if missing:
        warn(f"{path}: no column {', '.join(missing)} (declared under `diagnoses:` in "
             "targets.yaml); not shown")
        return path, None
    return path, table


def sweep_ranges(results_root: Path, diagnoses) -> pd.DataFrame:
    """Range of each swept cell over the protocol sweeps a target declares.

    Each :class:`~dml_bench.reproduction.targets.Diagnosis` names its folder under
    ``results_root`` and its ``cells`` CSV there (one row per ``dataset`` label, ``solver`` label
    and protocol variant, the cell's mean in its ``value`` column). Returns per (``dataset``,
    ``solver``) the lowest and highest mean over the variants, their number and the file.
    """
    frames = []
    for diagnosis in diagnoses:
        path, cells = _declared_csv(results_root, diagnosis.folder, diagnosis.cells,
                                    ["dataset", "solver", diagnosis.value])
        if cells is not None:
            frames.append(cells[["dataset", "solver", diagnosis.value]]
                          .rename(columns={diagnosis.value: "value"}).assign(file=path.as_posix()))
    if not frames:
        return pd.DataFrame(columns=["dataset", "solver", "sweep_low", "sweep_high",
                                     "sweep_variants", "sweep_file"])
    sweep = pd.concat(frames)
    return (sweep.groupby(["dataset", "solver"], sort=False)
            .agg(sweep_low=("value", "min"), sweep_high=("value", "max"),
                 sweep_variants=("value", "size"), sweep_file=("file", "first")).reset_index())


def sweep_rankings(results_root: Path, diagnoses) -> list[tuple[str, pd.DataFrame, tuple]]:
    """The ``variants`` CSV of each declared sweep (protocol variants ranked by cells matched):
    its path, its table and its ``axes``."""
    rankings = []
    for diagnosis in diagnoses:
        path, ranking = _declared_csv(results_root, diagnosis.folder, diagnosis.variants, [
            *diagnosis.axes, "cells", "matched", "mean_abs_gap", "headline"])
        if ranking is not None:
            rankings.append((path.as_posix(), ranking, diagnosis.axes))
    return rankings


def sweep_tables(results_root: Path, diagnoses) -> list[tuple[str, pd.DataFrame, tuple]]:
    """For a figure's target (no paper numbers to count matches against): per declared sweep,
    its path and a table of each (data set, method)'s mean under every variant, one column per
    variant (named by its axis values), the headline's first."""
    tables = []
    for diagnosis in diagnoses:
        axes = list(diagnosis.axes)
        path, cells = _declared_csv(results_root, diagnosis.folder, diagnosis.cells,
                                    ["dataset", "solver", *axes, diagnosis.value])
        _, variants = _declared_csv(results_root, diagnosis.folder, diagnosis.variants,
                                    [*axes, "headline"])
        if cells is None or variants is None:
            continue
        variants = variants.sort_values("headline", ascending=False, kind="stable")

        def name(row):
            return ", ".join(f"{a} {row[a]}" for a in axes)

        cells = cells.assign(variant=[name(r) for _, r in cells.iterrows()])
        table = cells.pivot_table(index=["dataset", "solver"], columns="variant",
                                  values=diagnosis.value, sort=False)
        order = [name(r) for _, r in variants.iterrows() if name(r) in table.columns]
        table = table[order].rename(columns={order[0]: f"{order[0]} (headline)"}
                                    if bool(variants["headline"].iloc[0]) else {})
        tables.append((path.as_posix(), table.reset_index(), tuple(axes)))
    return tables


def sweep_table_lines(entry: dict) -> list[str]:
    """Per sweep of a figure's target: each variant's mean per (data set, method)."""
    lines = []
    for path, table, axes in entry.get("sweep_tables") or ():
        columns = list(table.columns[2:])
        lines += ["", f"*Sensitivity sweep* (`{path}`, {len(columns)} protocol variants over "
                      f"{', '.join(axes)}; the figure shows the headline): mean per data set "
                      "and variant.", "",
                  "| data set | method | " + " | ".join(columns) + " |",
                  "|---|---|" + "---:|" * len(columns)]
        for _, r in table.iterrows():
            lines.append(f"| {r['dataset']} | {r['solver']} | "
                         + " | ".join("–" if pd.isna(r[c]) else f"{r[c]:.2f}" for c in columns)
                         + " |")
    return lines


def referee_tables(results_root: Path, referees) -> list[tuple[str, str, pd.DataFrame]]:
    """``(name, path, summary)`` of each declared referee whose summary CSV is committed."""
    tables = []
    for referee in referees:
        path, summary = _declared_csv(results_root, referee.folder, referee.summary, [
            "dataset", "solver", "ours", "referee", "p", "flagged", "n"])
        if summary is not None:
            tables.append((referee.name, path.as_posix(), summary))
    return tables


def referee_lines(entry: dict) -> list[str]:
    """Per referee: our mean and its mean per cell, the paired test, and a flag where the two
    disagree by more than the split noise."""
    lines = []
    for name, path, summary in entry.get("referees") or ():
        flagged = int(summary["flagged"].astype(bool).sum())
        lines += ["", f"*Referee* ({name}, on our splits; `{path}`): {flagged} of {len(summary)} "
                      "cells disagree with ours by more than the split noise (paired t-test over "
                      "the splits, p < 0.05).", "",
                  "| data set | method | ours | referee | referee − ours | paired p | splits |",
                  "|---|---|---|---|---|---|---|"]
        for _, r in summary.iterrows():
            verdict = "**disagrees**, " if bool(r["flagged"]) else ""
            lines.append(f"| {r['dataset']} | {r['solver']} | {r['ours']:.2f} | "
                         f"{r['referee']:.2f} | {r['referee'] - r['ours']:+.2f} | "
                         f"{verdict}{_p(r['p'])} | {int(r['n'])} |")
    return lines


def _p(p) -> str:
    return "–" if pd.isna(p) else f"{p:.2g}"


def with_sweep_range(comparison: pd.DataFrame, results_root: Path, diagnoses,
                      config: dict) -> pd.DataFrame:
    """``comparison`` with the sweep range of each cell that a declared sweep covers."""
    ranges = sweep_ranges(results_root, diagnoses)
    names = {d.get("label") or d["name"]: d["name"] for d in config.get("datasets") or []}
    ranges["dataset"] = [names.get(label, label) for label in ranges["dataset"]]
    ranges = ranges.rename(columns={"solver": "label"})
    return comparison.merge(ranges, on=["dataset", "label"], how="left")


def sweep_cell(r: pd.Series) -> str:
    """``low–high`` of the cell over the sweep, bold when the paper's number lies inside."""
    low, high = r.get("sweep_low"), r.get("sweep_high")
    if low is None or pd.isna(low):
        return ""
    text = f"{low:.2f}–{high:.2f}"
    return f"**{text}**" if low <= r["paper_mean"] <= high else text


def sweep_lines(entry: dict) -> list[str]:
    """Per declared sweep: how many cells the headline and the best single variant match."""
    lines = []
    for path, ranking, axes in entry.get("sweeps") or ():
        best, head = ranking.iloc[0], ranking[ranking["headline"]]
        headline = (f"the headline protocol matches {int(head.iloc[0]['matched'])} of "
                    f"{int(head.iloc[0]['cells'])}; " if not head.empty else "")
        lines += ["", f"*Sensitivity sweep* (`{path}`, {len(ranking)} protocol variants over "
                      f"{', '.join(axes)}; the column *sweep range* is each cell's lowest–highest "
                      f"mean over them, bold where the paper's number lies inside): {headline}"
                      f"the single variant matching most swept cells is "
                      f"{', '.join(f'{a} {best[a]}' for a in axes)}: "
                      f"{int(best['matched'])} of {int(best['cells'])} (mean |ours − paper| "
                      f"{best['mean_abs_gap']:.2f})."]
    return lines
