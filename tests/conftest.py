"""Shared fixtures of the pipeline tests (config → split → constraints → solver → runs.csv).

Nothing here is autouse: the pipeline test modules opt in with
``pytestmark = pytest.mark.usefixtures("tmp_cache")`` so other test modules are unaffected.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml

MIRROR_ENV = "DMLBENCH_DATA_MIRROR"
#: set by .ci/run: there a skipped test is a missing install step (cvxpy, dask, the mirror, the
#: papers), so any skip fails the session; on a user's machine a skip stays a skip
FAIL_ON_SKIP_ENV = "DMLBENCH_FAIL_ON_SKIP"


def pytest_sessionfinish(session, exitstatus):
    if not os.environ.get(FAIL_ON_SKIP_ENV):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if skipped and session.exitstatus == 0:
        reporter.write_line(f"{len(skipped)} test(s) skipped under {FAIL_ON_SKIP_ENV}=1: a skip "
                            "here hides a missing install step (reasons above, -rs)", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


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


@pytest.fixture
def registry(monkeypatch):
    """A temporary, empty dataset registry seen by the loaders (and the LFW API), for modified
    or synthetic specs."""
    from dml_bench.datasets import loader
    from dml_bench.registry import Registry

    reg = Registry("dataset")
    monkeypatch.setattr(loader, "DATASETS", reg)
    monkeypatch.setattr("dml_bench.datasets.lfw.DATASETS", reg)
    return reg


@pytest.fixture(scope="module")
def benchmark_script():
    """Import a script of ``benchmarks/`` (not a package) by its name, e.g. ``seed_diagnosis``."""
    import importlib.util

    folder = Path(__file__).resolve().parents[1] / "benchmarks"

    def load(name: str):
        spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses resolve their string annotations through it
        spec.loader.exec_module(module)
        return module

    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(folder))  # the scripts import their siblings, as when run
        yield load


def papers_dir() -> Path:
    """The folder of the five papers' texts: ``DMLBENCH_PAPERS``, else ``shared/papers`` beside
    the checkout, else ``papers`` beside the data mirror (``DMLBENCH_DATA_MIRROR``)."""
    if os.environ.get("DMLBENCH_PAPERS"):
        return Path(os.environ["DMLBENCH_PAPERS"])
    beside = Path(__file__).resolve().parents[2] / "shared" / "papers"
    mirror = os.environ.get("DMLBENCH_DATA_MIRROR")
    if not beside.is_dir() and mirror and (Path(mirror).parent / "papers").is_dir():
        return Path(mirror).parent / "papers"
    return beside

