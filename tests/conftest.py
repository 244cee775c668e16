"""Shared fixtures of the pipeline tests (config → split → constraints → solver → runs.csv).

Nothing here is autouse: the pipeline test modules opt in with
``pytestmark = pytest.mark.usefixtures("tmp_cache")`` so other test modules are unaffected.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

MIRROR_ENV = "DMLBENCH_DATA_MIRROR"


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch) -> Path:
    """A fresh, empty dataset cache (``DMLBENCH_CACHE``) for the test."""
    cache = tmp_path / "dataset-cache"
    cache.mkdir()
    monkeypatch.setenv("DMLBENCH_CACHE", str(cache))
    return cache


@pytest.fixture
def mirror() -> Path:
    """The offline dataset mirror (``DMLBENCH_DATA_MIRROR``); skips the test when absent."""
    value = os.environ.get(MIRROR_ENV)
    if not value:
        pytest.skip(f"needs the offline dataset mirror: set {MIRROR_ENV}")
    path = Path(value)
    if not path.is_dir():
        pytest.skip(f"needs the offline dataset mirror: {MIRROR_ENV}={value} is not a folder")
    return path


@pytest.fixture
def write_yaml(tmp_path):
    """``write_yaml(data, name)`` dumps ``data`` (or writes it as-is if it is a str) to tmp_path."""

    def write(data, name: str = "config.yaml") -> Path:
        path = tmp_path / name
        path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
        return path

    return write


@pytest.fixture
def planned(monkeypatch) -> str:
    """A solver name that configs may use but that is not implemented (``solvers.PLANNED``)."""
    from dml_bench.solvers import PLANNED

    monkeypatch.setitem(PLANNED, "future_dml", "not implemented yet (a test's planned method)")
    return "future_dml"
