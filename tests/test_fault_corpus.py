"""The fault corpus: bad input met by `dmlbench run`, each ending in one line, never a traceback.

Every case runs the command line on a results folder that already holds finished rows, and
asserts the exit status, the one line that explains the fault (``error: …`` or the dataset's
``skipped … : <reason>`` line, after which the run goes on) and that no finished row was lost.
Killing a run with ``kill -9`` and rerunning it (every task exactly once) is
``test_runner.py::test_killed_run_resumes_each_task_once``; two runs started together on one
folder, ``test_runner.py::test_two_runs_on_one_folder_share_the_tasks``.
"""

from __future__ import annotations

import os
import shutil
import urllib.error
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from dml_bench import tasks
from dml_bench.cli import main
from dml_bench.datasets import DATASETS, DatasetSpec, Parsed, files, loader
from dml_bench.datasets.generators import generated

pytestmark = pytest.mark.usefixtures("tmp_cache")

NAME = "corpus"
GOOD = {"name": NAME, "datasets": [{"name": "wine"}], "solvers": [{"name": "euclidean"}],
        "split": {"n_splits": 2}, "execution": {"backend": "sequential"}}


def config(**changes):
    """GOOD with top-level keys replaced (``None`` deletes one)."""
    cfg = {**GOOD, **changes}
    return {k: v for k, v in cfg.items() if v is not None}


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


def with_nan(X, y):
    X[3, 1] = np.nan
    return X, y


def with_inf(X, y):
    X[5, 0] = np.inf
    return X, y


def with_constant_column(X, y):
    X[:, 2] = 7.0
    return X, y


@dataclass
class Case:
    """One fault: the config (dict or raw text), extra CLI arguments, what to damage first."""

    id: str
    cfg: object = field(default_factory=lambda: dict(GOOD))
    args: tuple = ()
    setup: str = ""  # a fault applied to the environment (see apply_setup)
    code: int = 2
    line: str = ""  # a fragment of the one line that explains the fault
    rows_after: int | None = None  # rows in runs.csv afterwards (default: the 2 kept)


PIMA_RUN = config(datasets=[{"name": "pima"}, {"name": "wine"}])
SKIPPED = "skipped pima × euclidean: data not available: dataset 'pima'"
CASES = [
    # --- bad configs
    Case("unknown-top-key", {**GOOD, "solver": []}, line="corpus.yaml: solver: unknown key"),
    Case("unknown-dataset-key", config(datasets=[{"name": "wine", "normalise": "zscore"}]),
         line="datasets[0].normalise: unknown key (did you mean 'normalize'?)"),
    Case("unknown-solver-key", config(solvers=[{"name": "euclidean", "param": {}}]),
         line="solvers[0].param: unknown key (did you mean 'params'?)"),
    Case("n_splits-wrong-type", config(split={"n_splits": "ten"}),
         line="split.n_splits: expected int, got str 'ten'"),
    Case("n_splits-zero", config(split={"n_splits": 0}), line="split.n_splits: must be at least 1"),
    Case("n_splits-negative", config(split={"n_splits": -3}),
         line="split.n_splits: must be at least 1"),
    Case("dataset-n_splits-zero", config(datasets=[{"name": "wine", "n_splits": 0}]),
         line="datasets[0].n_splits: must be at least 1"),
    Case("train_fraction-zero", config(split={"train_fraction": 0}),
         line="split.train_fraction: must be in (0, 1), got 0"),
    Case("train_fraction-one", config(split={"train_fraction": 1.0}),
         line="split.train_fraction: must be in (0, 1), got 1.0"),
    Case("train_fraction-negative", config(split={"train_fraction": -0.2}),
         line="split.train_fraction: must be in (0, 1), got -0.2"),
    Case("train_fraction-string", config(split={"train_fraction": "70%"}),
         line="split.train_fraction: expected int or float, got str '70%'"),
    Case("unknown-dataset", config(datasets=["wne"]),
         line="datasets[0].name: unknown dataset 'wne'. Did you mean 'wine'?"),
    Case("unknown-solver", config(solvers=["dml_eigg"]),
         line="solvers[0].name: unknown solver 'dml_eigg'. Did you mean 'dml_eig'?"),
    Case("unknown-generator", config(constraints={"generator": "knn_triplet"}),
         line="unknown constraint generator 'knn_triplet'. Did you mean 'knn_triplets'?"),
    Case("unknown-solver-parameter", config(solvers=[{"name": "dml_eig", "params": {"muu": 1}}]),
         line="solvers[0].params.muu: unknown parameter (did you mean 'mu'?)"),
    Case("name-with-slash", config(name="../elsewhere"), line="name: must be a non-empty name"),
    Case("name-dot-dot", config(name=".."), line="other than '.' and '..'"),
    Case("name-with-backslash", config(name="a\\b"), line="name: must be a non-empty name"),
    Case("empty-yaml", "", line="<top>: expected a mapping, got NoneType"),
    Case("yaml-list", "- wine\n- iris\n", line="<top>: expected a mapping, got list"),
    Case("yaml-scalar", "just words\n", line="<top>: expected a mapping, got str"),
    Case("not-yaml", "name: t\nkey: value: other\n",
         line="not valid YAML: line 2, column 11: mapping values are not allowed here"),
    Case("no-datasets", config(datasets=[]), line="datasets: needs at least one dataset"),
    Case("solvers-not-list", config(solvers="euclidean"),
         line="solvers: expected list, got str 'euclidean'"),
    Case("dataset-entry-number", config(datasets=[7]),
         line="datasets[0]: expected a mapping, got int"),
    Case("k-too-large", config(constraints={"params": {"k": 40}}),
         line="constraints.params.k: k = 40 needs more than k training points per class"),
    Case("missing-config-file", args=("--missing",), line="missing.yaml: <top>: file not found"),
    Case("unknown-dataset-label", args=("--dataset", "wien"),
         line="unknown dataset label of corpus 'wien'. Did you mean 'wine'?"),
    Case("unknown-solver-label", args=("--solver", "euclidian"),
         line="unknown solver label of corpus 'euclidian'. Did you mean 'euclidean'?"),
    # --- results folder
    Case("changed-config-would-supersede", config(evaluation={"knn_k": 5}),
         line="the config no longer contains the tasks of 2 finished rows of runs.csv"),
    Case("torn-last-line-in-runs-csv", setup="torn-runs-line", code=0, line="corpus: 0 tasks run, "
         "2 already done"),
    Case("results-dir-is-a-file", setup="results-dir-file", code=1, line="results/corpus: Not a directory"),
    # --- data faults: the dataset is skipped with the reason, the run goes on (exit 0)
    Case("corrupt-mirror-file", PIMA_RUN, setup="flip-byte", code=0,
         line=f"{SKIPPED}: sha256 mismatch"),
    Case("truncated-mirror-file", PIMA_RUN, setup="truncate", code=0,
         line=f"{SKIPPED}: sha256 mismatch"),
    Case("missing-mirror-folder", PIMA_RUN, setup="no-mirror-folder", code=0,
         line="(missing pima/pima-indians-diabetes.csv); mirror folder "),
    Case("nan-features", config(datasets=[{"name": "toy_nan"}, {"name": "wine"}]), code=0,
         line="skipped toy_nan × euclidean: data not available: dataset 'toy_nan': data parsed "
              "from the generator has non-finite feature values"),
    Case("inf-features", config(datasets=[{"name": "toy_inf"}, {"name": "wine"}]), code=0,
         line="skipped toy_inf × euclidean: data not available: dataset 'toy_inf'"),
    # --- data that runs, or fails task by task with the reason in errors.csv
    Case("constant-feature", config(datasets=[{"name": "toy_constant"}, {"name": "wine"}],
                                    solvers=["euclidean", "dml_eig"]), code=0,
         line="corpus: 6 tasks run, 2 already done, 0 failed", rows_after=8),
    Case("one-class-training-split", config(datasets=[{"name": "toy_one_class"}, "wine"],
                                            constraints={"params": {"k": 3}}),
         setup="", code=1, line="error: 2 task(s) failed; see"),
]
SETUPS = {"torn-runs-line", "results-dir-file", "flip-byte", "truncate", "no-mirror-folder", ""}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A results folder with GOOD's two finished rows, made once and copied per case."""
    root = tmp_path_factory.mktemp("finished") / "results"
    cfg = root.parent / "good.yaml"
    cfg.write_text(yaml.safe_dump(GOOD))
    result = CliRunner().invoke(main, ["run", str(cfg), "--results-dir", str(root)])
    assert result.exit_code == 0, result.output
    return root


@pytest.fixture
def toys(monkeypatch):
    """The generated toy datasets of the corpus, registered for the test only."""
    for spec in (toy("toy_nan", with_nan), toy("toy_inf", with_inf),
                 toy("toy_constant", with_constant_column), toy("toy_one_class", n_classes=1)):
        monkeypatch.setitem(DATASETS._items, spec.name, spec)
    loader._load.cache_clear()
    tasks._load.cache_clear()
    tasks._prepare_split.cache_clear()
    yield
    loader._load.cache_clear()
    tasks._load.cache_clear()
    tasks._prepare_split.cache_clear()


def apply_setup(setup: str, tmp_path: Path, results: Path, monkeypatch) -> None:
    """Damage the environment: the results folder, or a copy of the mirror's pima file."""
    runs = results / NAME / "runs.csv"
    if setup == "torn-runs-line":  # a run killed in the middle of writing its last row
        with open(runs, "a") as fh:
            fh.write("deadbeefdeadbeef,corpus,wine,0,12")
    elif setup == "results-dir-file":
        shutil.rmtree(results)
        results.write_text("not a folder\n")
    elif setup in ("flip-byte", "truncate", "no-mirror-folder"):
        mirror = tmp_path / "mirror"
        monkeypatch.setenv("DMLBENCH_DATA_MIRROR", str(mirror))
        if setup == "no-mirror-folder":  # and no network, wherever the test runs
            def unreachable(request, timeout=None, **kwargs):
                raise urllib.error.URLError(OSError(-2, "Name or service not known"))
            monkeypatch.setattr(files.urllib.request, "urlopen", unreachable)
            return
        source = Path(os.environ["DMLBENCH_REAL_MIRROR"])
        data = (source / "pima" / "pima-indians-diabetes.csv").read_bytes()
        (mirror / "pima").mkdir(parents=True)
        damaged = (data[:100] + bytes([data[100] ^ 1]) + data[101:] if setup == "flip-byte"
                   else data[: len(data) // 2])
        (mirror / "pima" / "pima-indians-diabetes.csv").write_bytes(damaged)


@pytest.fixture
def real_mirror(monkeypatch):
    """The read-only mirror's folder, for copying pima (its damaged copy goes to tmp_path)."""
    value = os.environ.get("DMLBENCH_DATA_MIRROR")
    if not value or not (Path(value) / "pima").is_dir():
        pytest.skip("needs the offline dataset mirror with pima: set DMLBENCH_DATA_MIRROR")
    monkeypatch.setenv("DMLBENCH_REAL_MIRROR", value)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fault_ends_in_one_line_and_keeps_finished_rows(case, finished, tmp_path, monkeypatch,
                                                        request, toys):
    assert case.setup in SETUPS
    if case.setup in ("flip-byte", "truncate"):
        request.getfixturevalue("real_mirror")
    results = tmp_path / "results"
    shutil.copytree(finished, results)
    before = pd.read_csv(results / NAME / "runs.csv", dtype={"task_id": str})
    apply_setup(case.setup, tmp_path, results, monkeypatch)
    cfg = tmp_path / "corpus.yaml"
    cfg.write_text(case.cfg if isinstance(case.cfg, str) else yaml.safe_dump(case.cfg))
    args = ["run", str(tmp_path / "missing.yaml") if "--missing" in case.args else str(cfg),
            *[a for a in case.args if a != "--missing"], "--results-dir", str(results)]

    result = CliRunner().invoke(main, args)

    assert result.exit_code == case.code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    lines = result.output.splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == (case.code != 0), lines  # a failure is exactly one error line
    assert any(case.line in line for line in lines), f"{case.line!r} not in {lines}"
    if results.is_dir():
        after = pd.read_csv(results / NAME / "runs.csv", dtype={"task_id": str})
        assert set(before["task_id"]) <= set(after["task_id"])  # nothing finished is lost
        assert after["task_id"].is_unique
        assert len(after) == (case.rows_after or len(before))


def test_corpus_is_large_enough():
    assert len(CASES) >= 30 and len({c.id for c in CASES}) == len(CASES)
