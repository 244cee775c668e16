"""Every captioned table and figure of the five papers is a reproduction target or is declared
as reporting no result (``not_results:`` of its paper file): issue #20's "every table and figure
is a target", checked against the paper texts themselves."""

from __future__ import annotations

import re

import pytest

from conftest import papers_dir
from dml_bench.papers import non_result_items
from dml_bench.reproduction.targets import load_targets

TEXTS = {"ying2012": "ying2012_dml_eig_lmnn_eig.txt", "shen2014": "shen2014_frobmetric_dual.txt",
         "shen2010": "shen2010_sdpmetric.txt", "kunapuli2012": "kunapuli2012_mdml_comid.txt",
         "zhang2017": "zhang2017_lowrank_sgd_incsvd.txt"}
# a caption starts a line: "Table 4:", "TABLE IV", "**Fig. 2.**", "Figure 1:"
CAPTION = re.compile(r"^\**(Table|TABLE|Fig\.|Figure|FIGURE)\** ?\**([0-9]+|[IVX]+)\b", re.M)


def captions(text: str) -> set[str]:
    return {f"{'Table' if kind.lower().startswith('tab') else 'Figure'} {number}"
            for kind, number in CAPTION.findall(text)}


def target_items(paper: str) -> set[str]:
    """The items the paper's targets reproduce ("Figure 4 / Figure 10" is two; "Figure 2
    (right)" is Figure 2)."""
    return {re.sub(r" \(.*\)$", "", item) for t in load_targets().values() if t.paper == paper
            for item in t.item.split(" / ")}


def test_caption_pattern():
    assert captions("Table 4: Average\n**Fig. 2.** (left)\nTABLE IV\nsee Table 5 below\n") == {
        "Table 4", "Figure 2", "Table IV"}


@pytest.mark.parametrize("paper", sorted(TEXTS))
def test_every_caption_is_a_target_or_reports_no_result(paper):
    path = papers_dir() / TEXTS[paper]
    if not path.is_file():
        pytest.skip(f"paper text not found: {path}")
    found = captions(path.read_text(encoding="utf-8"))
    targets, skipped = target_items(paper), set(non_result_items(paper))
    assert found == targets | skipped
    assert not targets & skipped
