"""The papers' stated conclusions, checked on the paper's numbers and on ours.

Each ``dml_bench/papers/<paper>.yaml`` lists its claims under ``claims:`` ::

    - id: dml_eig_beats_euclidean           # unique within the paper
      target: ying2012-table4               # the reproduction target it rests on
      claim: DML-eig errs less than Euclidean on most data sets.
      quote: "..."                          # the paper's sentence
      check: {kind: lower, table: ying2012/table4, method: dml_eig, than: euclidean, share: 0.5}
      explanation: "..."                    # why it does not hold for us (when it does not)

A check reads a matrix of one quantity, data sets × methods, from one of three sources:

- ``table: <paper>/<table>``: the paper's printed table, and ours from the target's comparison
  of that table (the same cells);
- ``runs: <target>`` with ``quantity`` (one of :data:`QUANTITIES`, default error): our means
  over splits from that target's ``runs.csv``, rows = data set labels, columns = solver labels
  (a figure, or a table not loaded as numbers: the paper side is not evaluated);
- ``csv: {file: <file under results/>, index: …, columns: …, values: …}`` (column names): a
  function target's output, pivoted (means over repeated entries).

and applies one kind of test to every row (or to the ``rows`` listed) that has the numbers it
needs; ``than`` may also be a number (a bound):

- ``lower``: ``method`` < ``than``; with a ``factor``, ``than`` ≥ factor × ``method`` (an n-fold
  speed-up); with ``tol``, ``method`` ≤ ``than`` + tol ("similar or better");
- ``lowest`` / ``highest``: ``method`` ≤ (≥) every other column of ``among`` (default all);
- ``within``: |``method`` − ``than``| ≤ ``tol``;
- ``decreasing``: along the ``columns`` listed (in order), each value ≤ the one before
  (within ``tol``, default 0);
- ``spread``: the range over the rows of ``method`` (or of each of a list of methods) ≤ ``tol``,
  or, with ``relative: true``, the range over the smallest value ≤ ``tol`` (one verdict per
  method, not per row).

Per-row kinds hold when the share of rows passing is at least ``share`` (strictly more than
``share`` with ``strict: true``; "most" is ``share: 0.5, strict: true``). A claim whose target
cannot run here, or has not run, is *not checked* with that reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from ..errors import DMLBenchError
from ..papers import PAPERS_DIR, load_paper_table

KINDS = ("lower", "lowest", "highest", "within", "decreasing", "spread")
#: runs.csv columns a ``runs:`` check can average (error in percent)
QUANTITIES = ("error", "fit_time", "n_iter", "objective", "n_nonzero_eigenvalues",
              "n_features_90_energy")


class ClaimError(DMLBenchError, ValueError):
    """A malformed claim in a paper file."""


@dataclass(frozen=True)
class Claim:
    """One stated conclusion of a paper and how it is checked."""

    paper: str
    id: str
    target: str
    claim: str
    quote: str
    check: dict
    explanation: str = ""


@dataclass(frozen=True)
class Verdict:
    """A claim checked on the paper's numbers and on ours.

    ``holds`` is True/False on ours, None when not checked (``ours`` then says why).
    """

    claim: Claim
    paper: str
    ours: str
    holds: bool | None


def load_claims(papers_dir: Path = PAPERS_DIR) -> list[Claim]:
    """Every claim of every paper file, in file order; malformed entries raise :class:`ClaimError`."""
    claims = []
    for path in sorted(papers_dir.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        seen = set()
        for raw in doc.get("claims") or []:
            claim = _claim(path.stem, raw)
            if claim.id in seen:
                raise ClaimError(f"{path.name}: claim id {claim.id!r} appears twice")
            seen.add(claim.id)
            claims.append(claim)
    return claims


def _claim(paper: str, raw: dict) -> Claim:
    missing = [k for k in ("id", "target", "claim", "quote", "check") if not raw.get(k)]
    if missing:
        raise ClaimError(f"{paper}.yaml: claim {raw.get('id', '?')!r} lacks {missing}")
    check = dict(raw["check"])
    if check.get("kind") not in KINDS:
        raise ClaimError(f"{paper}.yaml: claim {raw['id']!r}: kind must be one of {KINDS}, "
                         f"got {check.get('kind')!r}")
    if sum(k in check for k in ("table", "runs", "csv")) != 1:
        raise ClaimError(f"{paper}.yaml: claim {raw['id']!r}: give exactly one of table, runs, csv")
    if "csv" in check and not (isinstance(check["csv"], dict)
                               and {"file", "index", "columns", "values"} <= set(check["csv"])):
        raise ClaimError(f"{paper}.yaml: claim {raw['id']!r}: csv needs file, index, columns, "
                         "values")
    if check.get("quantity", "error") not in QUANTITIES:
        raise ClaimError(f"{paper}.yaml: claim {raw['id']!r}: quantity must be one of "
                         f"{QUANTITIES}")
    return Claim(paper=paper, id=str(raw["id"]), target=str(raw["target"]),
                 claim=" ".join(str(raw["claim"]).split()),
                 quote=" ".join(str(raw["quote"]).split()), check=check,
                 explanation=" ".join(str(raw.get("explanation") or "").split()))


# ------------------------------------------------------------------------------ the tests


def evaluate(check: dict, matrix: pd.DataFrame) -> tuple[bool | None, str]:
    """Apply ``check`` to ``matrix`` (rows × columns of one quantity; NaN = no number).

    Returns the verdict (None when no row has the numbers the check needs) and the evidence,
    e.g. ``"7 of 9 rows"``.
    """
    kind = check["kind"]
    if check.get("rows"):
        matrix = matrix.reindex(index=list(check["rows"]))
    if kind == "spread":
        methods = check["method"] if isinstance(check["method"], list) else [check["method"]]
        ranges = {m: _column(matrix, m).dropna() for m in methods}
        if any(v.empty for v in ranges.values()):
            return None, "no numbers"
        spreads = {m: float(v.max() - v.min()) / (float(v.min()) if check.get("relative") else 1.0)
                   for m, v in ranges.items()}
        return (all(r <= check["tol"] for r in spreads.values()),
                ("relative range " if check.get("relative") else "range ") + ", ".join(f"{m} {r:.3g}" for m, r in spreads.items())
                + f" over {len(next(iter(ranges.values())))} rows")
    passed = _rows_passing(check, matrix).dropna()
    if passed.empty:
        return None, "no row with the numbers needed"
    share, hits = float(check.get("share", 1.0)), int(passed.sum())
    fraction = hits / len(passed)
    holds = fraction > share if check.get("strict") else fraction >= share - 1e-12
    return bool(holds), f"{hits} of {len(passed)} rows"


def _rows_passing(check: dict, m: pd.DataFrame) -> pd.Series:
    """Per row: True/False, NaN where a needed number is missing."""
    kind = check["kind"]
    if kind == "lower":
        a, b = _column(m, check["method"]), _column(m, check["than"])
        if "factor" in check:
            ok = b >= float(check["factor"]) * a
        else:
            ok = a <= b + float(check["tol"]) if "tol" in check else a < b
    elif kind == "within":
        a, b = _column(m, check["method"]), _column(m, check["than"])
        ok = (a - b).abs() <= float(check["tol"])
    elif kind in ("lowest", "highest"):
        cols = [c for c in check.get("among") or list(m.columns) if c in m.columns]
        a = _column(m, check["method"])
        others = m[[c for c in cols if c != check["method"]]]
        ok = (a <= others.min(axis=1, skipna=True) + 1e-12 if kind == "lowest"
              else a >= others.max(axis=1, skipna=True) - 1e-12)
        a = a.where(others.notna().any(axis=1))
    else:  # decreasing
        cols = list(check["columns"])
        sub = m.reindex(columns=cols)
        steps = sub.diff(axis=1).iloc[:, 1:]
        ok = (steps <= float(check.get("tol", 0.0))).all(axis=1)
        a = sub.iloc[:, 0].where(sub.notna().all(axis=1))
        return ok.where(a.notna())
    return ok.where(a.notna() & (b.notna() if kind in ("lower", "within") else True))


def _column(m: pd.DataFrame, name: str | float) -> pd.Series:
    if isinstance(name, (int, float)):
        return pd.Series(float(name), index=m.index)
    return m[name] if name in m.columns else pd.Series(np.nan, index=m.index)


# ------------------------------------------------------------------------------ the sources


def paper_matrix(table_key: str) -> pd.DataFrame:
    """The paper's printed numbers of a table as data sets × methods (NaN for a "-")."""
    table = load_paper_table(table_key)
    return pd.DataFrame({col: [(table.values[row][col] or (np.nan,))[0] for row in table.row_names]
                         for col in table.column_names}, index=list(table.row_names))


def ours_from_comparison(comparison: pd.DataFrame) -> pd.DataFrame:
    """Our means of a comparison (:func:`dml_bench.report.tables.compare_with_paper`), same
    layout."""
    ran = comparison.dropna(subset=["ours_mean"]).drop_duplicates(["dataset", "solver"])
    return ran.pivot(index="dataset", columns="solver", values="ours_mean")


def ours_from_runs(results_dir: Path, quantity: str = "error") -> pd.DataFrame:
    """Our means over splits of ``quantity`` in ``results_dir/runs.csv`` (error in percent):
    data set label × solver label."""
    from ..report.knn import read_runs

    runs = read_runs(results_dir)
    values = runs[quantity] * (100 if quantity == "error" else 1)
    return (runs.assign(value=pd.to_numeric(values, errors="coerce"))
            .pivot_table(index="dataset", columns="label", values="value", aggfunc="mean",
                         sort=False))


def ours_from_csv(path: Path, spec: dict) -> pd.DataFrame:
    """A function target's CSV pivoted as ``spec`` says (``index``, ``columns``, ``values``)."""
    frame = pd.read_csv(path)
    missing = [spec[k] for k in ("index", "columns", "values") if spec[k] not in frame.columns]
    if missing:
        raise ClaimError(f"{path}: no column {missing} (columns: {list(frame.columns)})")
    return frame.pivot_table(index=spec["index"], columns=spec["columns"], values=spec["values"],
                             aggfunc="mean")


def check_claims(entries: list[dict], results_root: Path,
                 claims: list[Claim] | None = None) -> list[Verdict]:
    """The claims of the reported targets, checked against the collected report entries (see
    :func:`dml_bench.reproduction.report.collect`); claims of targets not in ``entries`` are left
    out."""
    by_target = {e["target"].id: e for e in entries}
    return [_verdict(claim, by_target[claim.target], Path(results_root))
            for claim in (load_claims() if claims is None else claims)
            if claim.target in by_target]


def _verdict(claim: Claim, entry: dict, results_root: Path) -> Verdict:
    check = claim.check
    paper_text = "–"
    if "table" in check:
        held, evidence = evaluate(check, paper_matrix(check["table"]))
        paper_text = _text(held, evidence)
    if entry["status"] != "ran":
        return Verdict(claim, paper_text, f"not checked: target {entry['status']} (see its "
                                          "section)", None)
    if "table" in check:
        found = [c for key, c in entry["comparisons"] if key == check["table"]]
        if not found:
            raise ClaimError(f"claim {claim.id!r}: target {claim.target} does not compare "
                             f"{check['table']}")
        ours = ours_from_comparison(found[0])
    elif "runs" in check:
        ours = ours_from_runs(entry["results_dir"], check.get("quantity", "error"))
    else:
        path = results_root / check["csv"]["file"]
        if not path.is_file():
            return Verdict(claim, paper_text, f"not checked: {path} not written yet", None)
        ours = ours_from_csv(path, check["csv"])
    held, evidence = evaluate(check, ours)
    return Verdict(claim, paper_text, _text(held, evidence), held)


def _text(held: bool | None, evidence: str) -> str:
    return f"{'holds' if held else 'does not hold' if held is not None else 'no numbers'}: " \
           f"{evidence}"


def claims_markdown(verdicts: list[Verdict]) -> list[str]:
    """The report's claims section: per paper, each claim with the paper's and our verdict."""
    held = sum(v.holds is True for v in verdicts)
    failed = [v for v in verdicts if v.holds is False]
    unchecked = sum(v.holds is None for v in verdicts)
    lines = ["## Claims", "",
             "Each paper's stated conclusions, encoded as checks in `dml_bench/papers/*.yaml` "
             "(`claims:`) and applied to the paper's own numbers and to ours "
             "(`dml_bench.reproduction.claims`). "
             f"Of {len(verdicts)} claims, {held} hold on our results, {len(failed)} do not "
             f"(each with its explanation) and {unchecked} cannot be checked here.", ""]
    for paper in dict.fromkeys(v.claim.paper for v in verdicts):
        lines += [f"### {paper}", "",
                  "| claim | target | the paper's words | paper's numbers | ours | holds | "
                  "explanation |", "|---|---|---|---|---|---|---|"]
        for v in (v for v in verdicts if v.claim.paper == paper):
            mark = {True: "yes", False: "**no**", None: "–"}[v.holds]
            note = v.claim.explanation if v.holds is False else ""
            lines.append(f"| {v.claim.claim} | {v.claim.target} | “{v.claim.quote}” | "
                         f"{v.paper} | {v.ours} | {mark} | {note} |")
        lines.append("")
    return lines
