"""The notes' claims about an exact optimum against Euclidean agree with the diagnosis CSVs.

A note that says where a paper's problem solved exactly (cvxpy) classifies against Euclidean
writes it in one form: "Eq. (N)'s optimum (cvxpy, split S) classifies better|worse than
Euclidean on DATASET (OPTIMUM against EUCLIDEAN %)". Every such claim, in the paper files, the
targets and the configs, is checked here against the committed rows of the diagnosis
(``solver_optimum.py --cvxpy``): both errors to the printed digits, and the direction.
A sentence that compares an optimum with Euclidean in any other form is refused, so that no
such claim escapes the check.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [*sorted((ROOT / "dml_bench" / "papers").glob("*.yaml")),
           ROOT / "dml_bench" / "reproduction" / "targets.yaml",
           *sorted((ROOT / "configs").glob("*.yaml"))]
#: the equation a claim is about → the diagnosis rows of its exact optimum
OPTIMA = {"3": ROOT / "results" / "ying2012_table4_diagnosis" / "dml_eig_optimum.csv",
          "1": ROOT / "results" / "ying2012_table4_diagnosis" / "xing_optimum.csv"}
CLAIM = re.compile(r"(better|worse) than Euclidean on ([a-z_]+) \((\d+\.\d+) against "
                   r"(\d+\.\d+) %\)")
EQUATION = re.compile(r"Eq\. \((\d+)\)'s optimum")
SPLIT = re.compile(r"split (\d+)")


def strings(node):
    """Every string in a parsed YAML document."""
    if isinstance(node, str):
        yield " ".join(node.split())
    elif isinstance(node, dict):
        for value in node.values():
            yield from strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value)


def claims():
    """``(source, equation, split, direction, dataset, optimum, euclidean)`` of every claim."""
    found = []
    for path in SOURCES:
        for text in strings(yaml.safe_load(path.read_text(encoding="utf-8"))):
            for match in CLAIM.finditer(text):
                before = text[:match.start()]
                equations, splits = EQUATION.findall(before), SPLIT.findall(before)
                assert equations and splits, f"{path.name}: {match.group(0)!r} names no equation or split"
                found.append((path.name, equations[-1], int(splits[-1]), *match.groups()))
    return found


def test_every_optimum_against_euclidean_sentence_is_a_checked_claim():
    for path in SOURCES:
        for text in strings(yaml.safe_load(path.read_text(encoding="utf-8"))):
            for sentence in re.split(r"(?<=[.;:])\s", text):
                if "optimum" in sentence and "than Euclidean" in sentence:
                    loose = CLAIM.sub("", sentence)
                    assert "than Euclidean" not in loose, (
                        f"{path.name}: an optimum compared with Euclidean outside the checked "
                        f"form: {sentence!r}")


def test_there_are_claims_to_check():
    datasets = {(eq, ds) for _, eq, _, _, ds, _, _ in claims()}
    assert {("3", "segment"), ("3", "waveform"), ("3", "orl_faces"), ("1", "segment")} <= datasets


@pytest.mark.parametrize("claim", claims(), ids=lambda c: f"{c[0]}:eq{c[1]}:{c[4]}")
def test_claim_agrees_with_the_diagnosis_rows(claim):
    source, equation, split, direction, dataset, optimum, euclidean = claim
    rows = pd.read_csv(OPTIMA[equation])
    rows = rows[(rows["dataset"] == dataset) & (rows["split"] == split)]
    exact = rows.loc[rows["method"] == "cvxpy optimum", "error"].unique()
    plain = rows.loc[rows["method"] == "euclidean", "error"].unique()
    assert len(exact) == 1 and len(plain) == 1, f"{source}: no single row for {dataset}, split {split}"
    digits = len(optimum.split(".")[1])
    assert round(exact[0], digits) == float(optimum), (source, dataset, exact[0])
    assert round(plain[0], digits) == float(euclidean), (source, dataset, plain[0])
    assert direction == ("better" if exact[0] < plain[0] else "worse"), (source, dataset)
