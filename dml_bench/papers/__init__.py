"""Numbers reported in the papers the benchmark reproduces, kept as data.

Every ``<paper>.yaml`` file in this package holds one paper's citation and its reported tables
(the layout is described at the top of ``ying2012.yaml``). A table is addressed as
``"<paper>/<table>"``, e.g. ``"ying2012/table4"``; adding a paper or a table means adding YAML only.

Part of the ground stage: configs, reports and claims of the later stages read them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..registry import UnknownNameError

PAPERS_DIR = Path(__file__).parent

Cell = tuple[float, float | None] | None


@dataclass(frozen=True)
class PaperTable:
    """One table of numbers reported in a paper.

    Attributes
    ----------
    key : str
        ``"<paper>/<table>"``, e.g. ``"ying2012/table4"``.
    paper : str
        Citation of the paper.
    number : int
        The table's number in the paper.
    caption : str
        The caption as printed.
    quantity : str
        The summary quantity the numbers report: ``"error"`` or ``"fit_time"``.
    unit : str
        ``"percent"`` or ``"seconds"``.
    row_names, column_names : dict[str, str]
        Our dataset / solver registry name → the paper's display name, in the paper's order.
    values : dict[str, dict[str, Cell]]
        ``values[row][col]`` is ``(mean, std)`` with ``std`` None where the paper prints none, or
        None where the paper has no number ("-").
    protocol : dict[str, str]
        How the paper obtained the numbers (splits, classifier, constraints, ...).
    notes : dict[str, str]
        Explanations of known differences, keyed ``"row/col"``, ``"row/*"`` or ``"*/col"``.
    n_splits : int or None
        How many random splits each mean with a std averages (None where the paper does not
        say); what a significance test of our mean against the paper's needs.
    """

    key: str
    paper: str
    number: int
    caption: str
    quantity: str
    unit: str
    row_names: dict[str, str]
    column_names: dict[str, str]
    values: dict[str, dict[str, Cell]]
    protocol: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    n_splits: int | None = None

    def cells(self) -> list[tuple[str, str, float, float | None]]:
        """The reported cells in the paper's row-major order.

        Returns
        -------
        list of (row, column, mean, std)
            Only cells with a number; ``std`` is None where the paper gives none.
        """
        return [
            (row, col, *self.values[row][col])
            for row in self.row_names
            for col in self.column_names
            if self.values[row][col] is not None
        ]

    def note_for(self, row: str, col: str) -> str:
        """The note explaining cell ``(row, col)``, or ``""``.

        Parameters
        ----------
        row, col : str
            Registry names of the dataset and solver.

        Returns
        -------
        str
            The most specific of the notes keyed ``row/col``, ``row/*`` and ``*/col``.
        """
        for key in (f"{row}/{col}", f"{row}/*", f"*/{col}"):
            if key in self.notes:
                return self.notes[key]
        return ""


def paper_citation(paper: str) -> str:
    """The citation of ``paper`` (the stem of its ``<paper>.yaml``)."""
    if not (PAPERS_DIR / f"{paper}.yaml").is_file():
        raise UnknownNameError("paper", paper, sorted(p.stem for p in PAPERS_DIR.glob("*.yaml")))
    return " ".join(str(_load_paper(paper)["citation"]).split())


def non_result_items(paper: str) -> dict[str, str]:
    """The paper's captioned items that report no result (``not_results:``): item → what it is."""
    paper_citation(paper)  # an unknown paper lists the valid ones
    return {str(k): " ".join(str(v).split()) for k, v in
            (_load_paper(paper).get("not_results") or {}).items()}


def list_paper_tables() -> list[str]:
    """All table keys available, e.g. ``["ying2012/table4", "ying2012/table5"]``.

    Returns
    -------
    list of str
        ``"<paper>/<table>"`` keys, sorted by paper then in file order.
    """
    return [
        f"{paper}/{table}"
        for paper in sorted(p.stem for p in PAPERS_DIR.glob("*.yaml"))
        for table in _load_paper(paper)["tables"]
    ]


def load_paper_table(key: str) -> PaperTable:
    """Load one reported table.

    Parameters
    ----------
    key : str
        ``"<paper>/<table>"``, e.g. ``"ying2012/table4"``.

    Returns
    -------
    PaperTable

    Raises
    ------
    dml_bench.registry.UnknownNameError
        If no such table exists; the message lists the valid keys and the closest match.
    """
    valid = list_paper_tables()
    if key not in valid:
        raise UnknownNameError("paper table", key, valid)
    paper, table = key.split("/")
    doc = _load_paper(paper)
    return _build_table(key, doc["citation"], doc["tables"][table])


@functools.cache
def _load_paper(paper: str) -> dict[str, Any]:
    with open(PAPERS_DIR / f"{paper}.yaml", encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _build_table(key: str, citation: str, spec: dict[str, Any]) -> PaperTable:
    rows, cols = dict(spec["rows"]), dict(spec["columns"])
    raw = spec["values"]
    declared = {(r, c) for r in rows for c in cols}
    given = {(r, c) for r, cells in raw.items() for c in cells}
    if given != declared:
        raise ValueError(
            f"{key}: values must give every declared row/column exactly; "
            f"missing {sorted(declared - given)}, undeclared {sorted(given - declared)}"
        )
    values = {r: {c: _cell(key, r, c, raw[r][c]) for c in cols} for r in rows}
    return PaperTable(
        key=key,
        paper=citation,
        number=int(spec["number"]),
        caption=spec["caption"],
        quantity=spec["quantity"],
        unit=spec["unit"],
        row_names=rows,
        column_names=cols,
        values=values,
        protocol=dict(spec.get("protocol") or {}),
        notes=dict(spec.get("notes") or {}),
        n_splits=spec.get("n_splits"),
    )


def _cell(key: str, row: str, col: str, raw: Any) -> Cell:
    if raw is None:
        return None
    if not (isinstance(raw, list) and len(raw) == 2 and raw[0] is not None):
        raise ValueError(f"{key}: cell {row}/{col} must be [mean, std|null] or null, got {raw!r}")
    mean, std = raw
    return float(mean), None if std is None else float(std)
