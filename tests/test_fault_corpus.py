"""The fault corpus: every fault a user, or a colleague's config, results folder, data file or
cache, can bring ends in one line and an exit status, never a traceback, writes nothing outside
the results folder and the dataset cache, and loses or duplicates no finished row.

The cases live in ``tests/fault_cases/`` (one module per family, see its docstring); this file
runs them all through one parametrised test. Each case starts from a results folder holding the
finished rows of ``fault_cases.GOOD`` (2 tasks), a working folder that is the current directory,
an empty dataset cache, and a folder ``outside`` that must stay untouched.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from dml_bench.experiment import knn as tasks
from dml_bench.cli import main
from dml_bench.datasets import DATASETS, DatasetSpec, Parsed, loader
from dml_bench.datasets.generators import generated
from dml_bench.run.results import log_segments
from fault_cases import FAMILIES, GOOD, Ctx, all_cases

CASES = all_cases()


def toy(name, transform=None, n_classes=2):
    """A generated 40×3 dataset registered under ``name``; ``transform(X, y)`` damages it."""
    def make():
        rng = np.random.default_rng(0)
        X, y = rng.normal(size=(40, 3)), np.arange(40) % n_classes
        if transform:
            X, y = transform(X, y)
        return Parsed(X, y, {})
    return DatasetSpec(name=name, description="fault corpus toy", n_samples=40, n_features=3,
                       n_classes=n_classes, papers=(), files=(), parser=generated(make),
                       generated=True)


def _set(X, y, where, value):
    X[where] = value
    return X, y


TOYS = (toy("toy_nan", lambda X, y: _set(X, y, (3, 1), np.nan)),
        toy("toy_inf", lambda X, y: _set(X, y, (5, 0), np.inf)),
        toy("toy_constant", lambda X, y: _set(X, y, (slice(None), 2), 7.0)),
        toy("toy_one_class", n_classes=1))


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A results folder with GOOD's two finished rows, made once and copied per case."""
    root = tmp_path_factory.mktemp("finished")
    cfg = root / "good.yaml"
    cfg.write_text(yaml.safe_dump(GOOD))
    old = os.environ.get("DMLBENCH_CACHE")
    os.environ["DMLBENCH_CACHE"] = str(root / "cache")
    try:
        result = CliRunner().invoke(main, ["run", str(cfg), "--results-dir", str(root / "results")])
    finally:
        if old is None:
            os.environ.pop("DMLBENCH_CACHE")
        else:
            os.environ["DMLBENCH_CACHE"] = old
    assert result.exit_code == 0, result.output
    return root / "results"


@pytest.fixture
def toys(monkeypatch):
    """The generated toy datasets of the corpus, registered for the test only."""
    for spec in TOYS:
        monkeypatch.setitem(DATASETS._items, spec.name, spec)
    _clear_caches()
    yield
    _clear_caches()


def _clear_caches():
    loader._load.cache_clear()
    tasks._load.cache_clear()
    tasks._prepare_split.cache_clear()


def snapshot(*folders: Path, skip: tuple[Path, ...] = ()) -> dict:
    """``{path: (kind, size, mtime, sha256)}`` of everything under ``folders`` but ``skip``."""
    seen = {}
    for folder in folders:
        for dirpath, dirnames, filenames in os.walk(folder):
            here = Path(dirpath)
            dirnames[:] = [d for d in dirnames if here / d not in skip]
            for name in dirnames + filenames:
                path = here / name
                st = path.lstat()
                if path.is_symlink():
                    seen[path] = ("link", os.readlink(path))
                elif path.is_file():
                    seen[path] = ("file", st.st_size, st.st_mtime_ns,
                                  hashlib.sha256(path.read_bytes()).hexdigest())
                else:
                    seen[path] = ("dir", st.st_mode)
    return seen


def finished_rows(run_dir: Path) -> list[tuple]:
    """``(task_id, finished_at)`` of every row in the experiment's runs log and its superseded
    rows."""
    rows = []
    for log in (run_dir / "runs.csv", run_dir / "runs_superseded.csv"):
        for seg in log_segments(log):
            if seg.is_file() and not seg.is_symlink() and seg.stat().st_size:
                frame = pd.read_csv(seg, dtype={"task_id": str, "finished_at": str})
                rows += list(zip(frame["task_id"], frame["finished_at"]))
    return rows


def run_rows(run_dir: Path) -> pd.DataFrame:
    frames = [pd.read_csv(s, dtype={"task_id": str}) for s in log_segments(run_dir / "runs.csv")
              if s.is_file() and s.stat().st_size]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["task_id"])


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fault(case, finished, tmp_path, monkeypatch, toys):
    assert case.family in FAMILIES
    work, results, cache, outside = (tmp_path / n for n in ("work", "results", "cache", "outside"))
    for folder in (work, cache, outside):
        folder.mkdir()
    (outside / "keep.txt").write_text("must stay\n")
    shutil.copytree(finished, results)
    monkeypatch.chdir(work)
    monkeypatch.setenv("DMLBENCH_CACHE", str(cache))
    monkeypatch.delenv("DMLBENCH_DEBUG", raising=False)
    monkeypatch.delenv("DMLBENCH_ALLOW_PLUGINS", raising=False)
    ctx = Ctx(work, results, cache, outside, work / "corpus.yaml", monkeypatch)
    cfg = case.cfg
    ctx.cfg.write_bytes(cfg if isinstance(cfg, bytes) else
                        (cfg if isinstance(cfg, str) else yaml.safe_dump(cfg)).encode())
    before_rows = finished_rows(ctx.run_dir)
    if case.setup:
        case.setup(ctx)
    before = snapshot(tmp_path, skip=(results, cache))
    expected_line = ctx.fill(case.line)

    if case.call is not None:
        with pytest.raises(case.raises) as info:
            case.call(ctx)
        message = str(info.value)
        assert "\n" not in message
        assert message == expected_line
        output = message
    else:
        if case.invoke is not None:
            code, output = case.invoke(ctx)
        else:
            argv = [ctx.fill(a) for a in case.argv]
            if argv[0] == "run" and "--results-dir" not in argv:
                argv += ["--results-dir", str(results)]
            result = CliRunner().invoke(main, argv)
            code, output = result.exit_code, result.output
            assert result.exception is None or isinstance(result.exception, SystemExit), (
                repr(result.exception), output)
        assert code == case.code, output
        assert "Traceback" not in output, output
        lines = output.splitlines()
        errors = [line for line in lines if line.startswith("error:")]
        if case.code:
            assert errors == [f"error: {expected_line}"], lines
        else:
            assert not errors, lines
            assert expected_line in lines, f"{expected_line!r} not in {lines}"

    assert snapshot(tmp_path, skip=(results, cache)) == before  # nothing written outside
    after_rows = finished_rows(ctx.run_dir) if ctx.run_dir.is_dir() else before_rows
    for row in before_rows:  # every finished row is still there, exactly once
        assert after_rows.count(row) == 1, (row, after_rows)
    if ctx.run_dir.is_dir() and (ctx.run_dir / "runs.csv").is_file():
        rows = run_rows(ctx.run_dir)
        assert rows["task_id"].is_unique
        assert len(rows) == (len(before_rows) if case.rows_after is None else case.rows_after)
    if case.check:
        case.check(ctx, output)


def test_corpus_covers_every_family():
    assert len(CASES) >= 60
    assert len({c.id for c in CASES}) == len(CASES)
    assert {c.family for c in CASES} == set(FAMILIES)
