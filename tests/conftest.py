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


def pytest_configure(config):
    """Under pytest-xdist (``-n auto`` in pyproject.toml) each worker's BLAS/OpenMP gets its share
    of the cores, so that N workers do not run N × cores threads; an OMP_NUM_THREADS already set
    stays, and subprocesses (CLI runs, loky workers) inherit it."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")  # set in the workers only
    if workers:
        os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // int(workers))))


def pytest_sessionfinish(session, exitstatus):
    # under xdist this counts in the controller, whose terminal reporter gets every worker's report
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


class DriverLog(list):
    """The drivers called, in order; a call to a driver in ``failing`` runs, then raises
    ``LinAlgError`` as LAPACK does when it fails to converge (info > 0)."""

    failing: frozenset = frozenset()


@pytest.fixture
def eigh_drivers(monkeypatch) -> DriverLog:
    """The LAPACK driver (``"evd"``, ``"evr"``, …) of every ``scipy.linalg.eigh`` call that the
    solvers' ``linalg`` module makes (and of its direct ``syevd`` calls), in order; the calls themselves are unchanged, except that
    those to the drivers of ``.failing`` raise after running."""
    import numpy as np
    import scipy.linalg

    from dml_bench.solvers import linalg
    drivers = DriverLog()
    eigh = scipy.linalg.eigh

    def logged(*args, **kwargs):
        drivers.append(kwargs.get("driver"))
        result = eigh(*args, **kwargs)
        if drivers[-1] in drivers.failing:
            raise np.linalg.LinAlgError(f"simulated: {drivers[-1]} failed to converge")
        return result

    monkeypatch.setattr(linalg.scipy.linalg, "eigh", logged)
    syevd = linalg._syevd  # "evd" without scipy's wrapper: logged and failed the same way

    def logged_syevd(A, lower):
        drivers.append("evd")
        result = syevd(A, lower)
        return None if "evd" in drivers.failing else result

    monkeypatch.setattr(linalg, "_syevd", logged_syevd)
    return drivers


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
    """Import a script of ``benchmarks/`` (not a package) by its path in that folder without the
    suffix, e.g. ``diagnoses/seed_diagnosis``, with the script's own folder on ``sys.path`` as
    when it runs (the scripts import their siblings)."""
    import importlib.util

    root = Path(__file__).resolve().parents[1] / "benchmarks"

    with pytest.MonkeyPatch.context() as patch:
        def load(name: str):
            path = root / f"{name}.py"
            patch.syspath_prepend(str(path.parent))
            spec = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[path.stem] = module  # dataclasses resolve string annotations through it
            spec.loader.exec_module(module)
            return module

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



#: the OpenML id under which :func:`lay_out_openml` lays out wine by default (its real id)
OPENML_WINE_ID = 187


@pytest.fixture
def openml_cache(tmp_path, monkeypatch) -> Path:
    """An empty openml root cache (``$DMLBENCH_OPENML_CACHE``), openml unable to connect."""
    import openml

    from dml_bench.datasets import DATASETS
    from dml_bench.datasets.openml_source import ENV_OPENML_CACHE

    root = tmp_path / "openml-cache"
    root.mkdir()
    monkeypatch.setenv(ENV_OPENML_CACHE, str(root))
    # restored after the test, whatever the code under test sets
    monkeypatch.setattr(openml.config, "_root_cache_directory", openml.config._root_cache_directory)
    monkeypatch.setattr(openml.config, "server", "http://127.0.0.1:9/api/v1/xml")
    monkeypatch.setattr(openml.config, "connection_n_retries", 1)
    monkeypatch.setattr(DATASETS, "_plugins", {})
    return root


def lay_out_openml(root: Path, did: int = OPENML_WINE_ID, name: str = "wine",
                   target: str = "class") -> Path:
    """Wine as OpenML dataset ``did`` in openml's on-disk cache format under ``root``
    (``description.xml``, ``features.xml``, ``dataset.arff`` whose md5 the description holds);
    returns its folder."""
    import hashlib
    from xml.sax.saxutils import escape

    import openml
    from sklearn.datasets import load_wine

    oml = 'xmlns:oml="http://openml.org/openml"'
    openml.config.set_root_cache_directory(str(root))
    folder = Path(openml.config.get_cache_directory()) / "datasets" / str(did)
    folder.mkdir(parents=True)
    data = load_wine()
    classes = [str(c) for c in data.target_names]
    features = [f"f{i}" for i in range(data.data.shape[1])]
    lines = [f"@RELATION {name}", *(f"@ATTRIBUTE {f} REAL" for f in features),
             "@ATTRIBUTE class {" + ",".join(classes) + "}", "@DATA"]
    lines += [",".join([*(repr(float(v)) for v in row), classes[c]])
              for row, c in zip(data.data, data.target)]
    arff = ("\n".join(lines) + "\n").encode()
    (folder / "dataset.arff").write_bytes(arff)
    description = {
        "id": did, "name": name, "version": 1, "description": "Wine recognition data",
        "format": "ARFF", "upload_date": "2014-04-23T13:15:43", "licence": "Public",
        "url": f"http://127.0.0.1:9/data/v1/download/{did}/{name}.arff", "file_id": did,
        "default_target_attribute": target, "visibility": "public", "status": "active",
        "md5_checksum": hashlib.md5(arff).hexdigest(),
    }
    body = "".join(f"<oml:{k}>{escape(str(v))}</oml:{k}>" for k, v in description.items())
    (folder / "description.xml").write_text(
        f"<oml:data_set_description {oml}>{body}</oml:data_set_description>\n")
    feature_xml = []
    for i, feature in enumerate([*features, "class"]):
        nominal = feature == "class"
        values = "".join(f"<oml:nominal_value>{c}</oml:nominal_value>" for c in classes) if nominal else ""
        feature_xml.append(
            f"<oml:feature><oml:index>{i}</oml:index><oml:name>{feature}</oml:name>"
            f"<oml:data_type>{'nominal' if nominal else 'numeric'}</oml:data_type>{values}"
            f"<oml:is_target>{str(feature == target).lower()}</oml:is_target>"
            "<oml:is_ignore>false</oml:is_ignore><oml:is_row_identifier>false</oml:is_row_identifier>"
            "<oml:number_of_missing_values>0</oml:number_of_missing_values></oml:feature>")
    (folder / "features.xml").write_text(
        f"<oml:data_features {oml}>{''.join(feature_xml)}</oml:data_features>\n")
    return folder
