"""The library's own text (code, docstrings and its YAML data) names no lab file and no work
item: what a report shows is declared by a target or a board config, and findings live in the
results."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dml_bench"
FORBIDDEN = {"_diagnosis/": "a diagnosis folder of results/ (declare it in a target or board "
                            "config)",
             "issue #": "a work item (state what the code or result is)"}


def _library_files() -> list[Path]:
    """Every text file of the package: its modules and its data (papers, targets)."""
    return sorted(p for p in PACKAGE.rglob("*") if p.is_file() and p.suffix in (".py", ".yaml")
                  and "__pycache__" not in p.parts)


def test_the_package_has_text_files_to_check():
    names = {p.relative_to(PACKAGE).as_posix() for p in _library_files()}
    assert {"cli/base.py", "reproduction/report.py", "reproduction/targets.yaml",
            "leaderboard/page.py", "papers/ying2012.yaml", "configs/leaderboard.yaml"} <= names


@pytest.mark.parametrize("text", sorted(FORBIDDEN))
def test_no_library_file_names_a_lab_file_or_a_work_item(text):
    found = [f"{path.relative_to(PACKAGE)}:{n}: {line.strip()}"
             for path in _library_files()
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if text in line.lower()]
    assert not found, f"{FORBIDDEN[text]}:\n" + "\n".join(found)


def test_the_check_sees_a_planted_line(tmp_path, monkeypatch):
    """The scan finds the strings in any case (``Issue #``) and on any line of a file."""
    planted = tmp_path / "dml_bench"
    (planted / "sub").mkdir(parents=True)
    (planted / "sub" / "m.py").write_text('"""Doc."""\n\n# see Issue #12\n')
    (planted / "notes.yaml").write_text("a: results/x_diagnosis/y.csv\n")
    monkeypatch.setitem(globals(), "PACKAGE", planted)
    for text in FORBIDDEN:
        with pytest.raises(AssertionError, match=re.escape(FORBIDDEN[text])):
            test_no_library_file_names_a_lab_file_or_a_work_item(text)
