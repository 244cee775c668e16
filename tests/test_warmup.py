"""Kernels compiled once, before the workers: what a parallel run leaves in numba's cache is what
a worker started afterwards needs, so the worker compiles nothing.

Each check runs fresh interpreters on a private ``NUMBA_CACHE_DIR`` (numba's on-disk cache is
per process start), recording numba's own compile events for the package's functions.
"""

import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest

from dml_bench.experiment.config import parse_config
from dml_bench.run.runner import run_experiment
from dml_bench.solvers import warmup

pytestmark = pytest.mark.usefixtures("tmp_cache")

#: learners whose small-problem paths run compiled kernels of their own and of the shared
#: modules (top_eigen, linalg): the Frank-Wolfe vertex, the triplet dual, Bregman projections
LEARNERS = {"dml_eig": {"mu": 1e-4, "max_iter": 50}, "frobmetric": {}, "itml": {}}

#: the dml_bench functions that numba compiles in this process, printed as JSON at exit (an
#: object-mode block, such as DML-eig's clock read, is rebuilt whenever its kernel is loaded)
RECORD = """
import atexit, json
from numba.core import event
compiled = []
class Listener(event.Listener):
    def on_start(self, ev): pass
    def on_end(self, ev):
        dispatcher = ev.data["dispatcher"]
        if type(dispatcher).__name__ == "ObjModeLiftedWith": return  # rebuilt at load (~50 ms)
        f = dispatcher.py_func
        if f.__module__.startswith("dml_bench"): compiled.append(f.__qualname__)
event.register("numba:compile", Listener())
atexit.register(lambda: print(json.dumps(sorted(set(compiled)))))
"""

WARM_UP = RECORD + """
from dml_bench.solvers.warmup import compile_kernels
compile_kernels(json.loads({learners!r}))
"""

FIT = RECORD + """
import warnings
from dml_bench.solvers import SOLVERS
from dml_bench.solvers.warmup import tiny_problem
X, y, constraints = tiny_problem()
warnings.simplefilter("ignore")
for name, params in json.loads({learners!r}).items():
    SOLVERS[name](**params).fit(X, y, constraints=constraints)
"""


def compiled_in_fresh_process(code: str, cache_dir) -> list[str]:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)}
    out = subprocess.run([sys.executable, "-c", code.format(learners=json.dumps(LEARNERS))],
                         env=env, capture_output=True, text=True, timeout=600, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_process_started_after_the_warm_up_compiles_nothing(tmp_path):
    cache = tmp_path / "numba"
    compiled = compiled_in_fresh_process(WARM_UP, cache)
    assert {"_compiled_frank_wolfe", "_margin_terms", "_sweep"} <= set(compiled)
    assert compiled_in_fresh_process(FIT, cache) == []


def test_without_the_warm_up_the_fit_compiles_the_same_kernels(tmp_path):
    """The control: the kernels the warm-up compiled are the ones these fits need."""
    warm = compiled_in_fresh_process(WARM_UP, tmp_path / "a")
    assert compiled_in_fresh_process(FIT, tmp_path / "b") == warm


def test_plug_ins_and_failing_learners_are_passed_over():
    fitted = warmup.compile_kernels({"euclidean": {}, "itml": {"gamma": -1.0},
                                     "not.a.module:Learner": {}})
    assert fitted == ["euclidean"]  # itml's bad parameter fails its validation; no plug-in runs


QUICK = {
    "name": "quick",
    "datasets": [{"name": "wine", "normalize": "zscore"}],
    "split": {"train_fraction": 0.7, "n_splits": 2, "seed": 0, "stratify": True},
    "constraints": {"generator": "knn_triplets", "params": {"k": 3}},
    "solvers": [{"name": "euclidean"}, {"name": "dml_eig", "params": {"mu": 1e-4, "max_iter": 20}}],
    "evaluation": {"knn_k": 3, "tie_break": "nearest"},
    "execution": {"n_jobs": 2, "backend": "loky"},
}


@pytest.mark.parametrize("n_jobs,backend,warmed", [(2, "loky", True), (1, "loky", False),
                                                   (2, "sequential", False)])
def test_only_a_parallel_loky_run_warms_up_first(tmp_path, monkeypatch, n_jobs, backend, warmed):
    calls = []
    monkeypatch.setattr(warmup, "compile_kernels", lambda solvers: calls.append(dict(solvers)))
    exp = parse_config(QUICK, source="test")
    exp = replace(exp, execution=replace(exp.execution, n_jobs=n_jobs, backend=backend))
    run_experiment(exp, tmp_path, echo=lambda message: None)
    assert calls == ([{"euclidean": {}, "dml_eig": {"mu": 1e-4, "max_iter": 20}}] if warmed
                     else [])
