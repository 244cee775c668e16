"""The papers' claims (dml_bench/reproduction/claims.py): the checks, the claim files, the
committed verdicts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dml_bench.papers import list_paper_tables
from dml_bench.reproduction.claims import (Claim, ClaimError, _claim, check_claims,
                                           claims_markdown, evaluate, load_claims, paper_matrix)
from dml_bench.reproduction.targets import load_targets

ROOT = Path(__file__).resolve().parents[1]

# 4 data sets × 3 methods; "-" in the paper is NaN
M = pd.DataFrame({"a": [1.0, 5.0, 2.0, np.nan], "b": [2.0, 4.0, 2.0, 3.0], "c": [3.0, 6.0, 1.0, 1.0]},
                 index=["r1", "r2", "r3", "r4"])


@pytest.mark.parametrize("check, expected", [
    # a < b on r1 only (r2: 5 > 4, r3: tie, r4: no a): 1 of 3
    ({"kind": "lower", "method": "a", "than": "b"}, (False, "1 of 3 rows")),
    ({"kind": "lower", "method": "a", "than": "b", "share": 0.3}, (True, "1 of 3 rows")),
    # with slack 1: r1 1 ≤ 3, r2 5 ≤ 5, r3 2 ≤ 3: 3 of 3
    ({"kind": "lower", "method": "a", "than": "b", "tol": 1.0}, (True, "3 of 3 rows")),
    # factor 2: b ≥ 2a on r1 (2 ≥ 2) only
    ({"kind": "lower", "method": "a", "than": "b", "factor": 2}, (False, "1 of 3 rows")),
    # a number as the bound: a < 3 on r1, r3
    ({"kind": "lower", "method": "a", "than": 3}, (False, "2 of 3 rows")),
    ({"kind": "lower", "method": "a", "than": "b", "rows": ["r1"]}, (True, "1 of 1 rows")),
    # lowest: a ≤ min(b, c) on r1 (1), r2? 5 > 4 no, r3: 2 > 1 no
    ({"kind": "lowest", "method": "a"}, (False, "1 of 3 rows")),
    ({"kind": "lowest", "method": "c", "share": 0.5}, (True, "2 of 4 rows")),
    ({"kind": "highest", "method": "c"}, (False, "2 of 4 rows")),
    ({"kind": "lowest", "method": "b", "among": ["a", "b"]}, (False, "2 of 3 rows")),
    # "most" is strictly more than half
    ({"kind": "lowest", "method": "c", "share": 0.5, "strict": True}, (False, "2 of 4 rows")),
    # |a − c| ≤ 1 on r2, r3 (r1: 2)
    ({"kind": "within", "method": "a", "than": "c", "tol": 1.0}, (False, "2 of 3 rows")),
    ({"kind": "decreasing", "columns": ["c", "b"]}, (False, "2 of 4 rows")),
    ({"kind": "decreasing", "columns": ["c", "b"], "tol": 2.0}, (True, "4 of 4 rows")),
    ({"kind": "spread", "method": "b", "tol": 2.0}, (True, "range b 2 over 4 rows")),
    ({"kind": "spread", "method": ["b", "c"], "tol": 2.0},
     (False, "range b 2, c 5 over 4 rows")),
    ({"kind": "lower", "method": "zz", "than": "b"}, (None, "no row with the numbers needed")),
])
def test_evaluate_counts_rows_by_hand(check, expected):
    assert evaluate(check, M) == expected


def test_paper_matrix_reads_the_printed_numbers():
    m = paper_matrix("ying2012/table4")
    assert m.loc["wine", "dml_eig"] == 1.35 and np.isnan(m.loc["usps", "xing"])
    # the paper's own count behind "DML-eig outperforms other algorithms on 5 out of 9 data sets"
    assert evaluate({"kind": "lowest", "method": "dml_eig"}, m) == (False, "5 of 9 rows")


@pytest.mark.parametrize("raw, message", [
    ({"id": "x", "target": "t", "claim": "c", "quote": "q"}, "lacks ['check']"),
    ({"id": "x", "target": "t", "claim": "c", "quote": "q",
      "check": {"kind": "bigger", "table": "k"}}, "kind must be one of"),
    ({"id": "x", "target": "t", "claim": "c", "quote": "q",
      "check": {"kind": "lower", "table": "k", "runs": "t"}}, "exactly one of table, runs, csv"),
    ({"id": "x", "target": "t", "claim": "c", "quote": "q",
      "check": {"kind": "lower", "runs": "t", "quantity": "speed"}}, "quantity must be one of"),
])
def test_malformed_claims_fail_in_one_line(raw, message):
    with pytest.raises(ClaimError, match=message.replace("[", r"\[").replace("]", r"\]")) as exc:
        _claim("paper", raw)
    assert "\n" not in str(exc.value)


def test_every_target_has_a_claim_and_every_claim_a_target():
    claims = load_claims()
    targets = load_targets()
    assert {c.target for c in claims} <= set(targets)
    assert set(targets) - {c.target for c in claims} == set()
    tables = set(list_paper_tables())
    assert {c.check["table"] for c in claims if "table" in c.check} <= tables


def test_claims_of_targets_not_reported_are_left_out():
    claim = Claim("p", "x", "no-such-target", "c", "q", {"kind": "lower", "runs": "t"})
    assert check_claims([], ROOT / "results", [claim]) == []


@pytest.fixture(scope="module")
def committed_verdicts():
    from dml_bench.reproduction.report import collect

    return check_claims(collect(ROOT / "results", ROOT), ROOT / "results")


def test_every_claim_that_does_not_hold_is_explained(committed_verdicts):
    unexplained = [v.claim.id for v in committed_verdicts
                   if v.holds is False and not v.claim.explanation]
    stale = [v.claim.id for v in committed_verdicts if v.holds is not False and v.claim.explanation]
    assert unexplained == [] and stale == []


def test_claims_section_counts(committed_verdicts):
    text = "\n".join(claims_markdown(committed_verdicts))
    held = sum(v.holds is True for v in committed_verdicts)
    assert f"Of {len(committed_verdicts)} claims, {held} hold" in text
