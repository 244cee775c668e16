"""The stored reported numbers against an independent parse of the paper text."""

from __future__ import annotations

import re

import pytest

from dml_bench.papers import list_paper_tables, load_paper_table
from conftest import papers_dir
from dml_bench.registry import UnknownNameError

PAPERS = papers_dir()
YING2012 = PAPERS / "ying2012_dml_eig_lmnn_eig.txt"

# Table 3 / §5 numbering of the data sets, and the printed column headers, as registry names
YING2012_ROWS = ["wine", "iris", "breast_cancer", "pima", "waveform", "segment",
                 "optdigits_train", "orl_faces", "usps"]
YING2012_COLUMNS = {"Euc.": ["euclidean"], "Xing": ["xing"], "LMNN": ["lmnn"], "ITML": ["itml"],
                    "BoostMetric": ["boostmetric"], "DML-eig": ["dml_eig"],
                    "LMNN-eig": ["lmnn_eig"], "LMNN/mLNN": ["lmnn", "mlmnn"]}
CELL = re.compile(r"^\s*([\d.]+)\s*(?:\(([\d.]+)\))?\s*$")


def parse_table(text: str, number: int) -> dict[tuple[str, str], tuple[float, float | None] | None]:
    """Read a numbered table of the paper: the tab-separated lines just above its caption."""
    lines = text.splitlines()
    caption = next(i for i, line in enumerate(lines) if line.startswith(f"Table {number}:"))
    first = caption
    while not lines[first - 1].strip() or re.match(r"^\d\t", lines[first - 1]):
        first -= 1
    header = [YING2012_COLUMNS[name] for name in lines[first - 1].split("\t")[1:]]
    body = [line for line in lines[first:caption] if line.strip()]
    assert [int(line.split("\t")[0]) for line in body] == list(range(1, len(YING2012_ROWS) + 1))
    cells = {}
    for row, line in zip(YING2012_ROWS, body):
        for columns, field in zip(header, line.split("\t")[1:], strict=True):
            for column, value in zip(columns, field.split("/"), strict=True):
                cells[row, column] = parse_cell(value)
    return cells


def parse_cell(field: str) -> tuple[float, float | None] | None:
    if field.strip() == "-":
        return None
    mean, std = CELL.match(field).groups()
    return float(mean), None if std is None else float(std)


@pytest.fixture(scope="module")
def paper_text() -> str:
    if not YING2012.is_file():
        pytest.skip(f"paper text not found at {YING2012} (set DMLBENCH_PAPERS to its folder)")
    return YING2012.read_text(encoding="utf-8")


@pytest.mark.parametrize("number", [4, 5])
def test_every_stored_number_is_the_papers(paper_text, number):
    table = load_paper_table(f"ying2012/table{number}")
    assert table.number == number
    stored = {(r, c): table.values[r][c] for r in table.row_names for c in table.column_names}
    assert stored == parse_table(paper_text, number)


def test_table_metadata():
    table4, table5 = load_paper_table("ying2012/table4"), load_paper_table("ying2012/table5")
    assert (table4.quantity, table4.unit) == ("error", "percent")
    assert (table5.quantity, table5.unit) == ("fit_time", "seconds")
    assert list(table4.row_names) == YING2012_ROWS and table4.row_names["pima"] == "Diabetes"
    assert "Ying" in table4.paper and table4.caption.startswith("Average test error")
    assert table4.values["usps"]["xing"] is None and table4.values["usps"]["lmnn"] == (2.98, None)
    assert table5.values["wine"]["lmnn"] == (0.87, None)
    assert table5.values["wine"]["mlmnn"] == (1.01, None)
    assert "k = 3" in table4.protocol["classifier"]
    assert table4.note_for("wine", "lmnn") == ""  # no note: no known difference
    # the most specific key wins: row/col over */col
    assert table4.note_for("segment", "itml").startswith("ours 1.5 points lower")
    assert (table4.note_for("segment", "xing") == table4.notes["segment/xing"]
            != table4.notes["*/xing"])
    assert table4.note_for("pima", "dml_eig") == table4.notes["*/dml_eig"]
    assert all(key.count("/") == 1 for key in table4.notes)


def test_list_and_unknown_key():
    assert {"ying2012/table4", "ying2012/table5"} <= set(list_paper_tables())
    with pytest.raises(UnknownNameError, match="Did you mean 'ying2012/table4'") as err:
        load_paper_table("ying2012/tabel4")
    assert "ying2012/table5" in str(err.value)
