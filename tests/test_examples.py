"""Every script in ``examples/`` runs as a user would run it: its own process, an empty working
directory, and what it prints ends in the result it promises."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parents[1] / "examples").glob("*.py"))

#: a line each script must print (its result), checked after it exits cleanly
PRINTS = {"pipeline_knn.py": "DML-eig    3-NN test error",
          "grid_search.py": "best {'metric__gamma'",
          "constraints.py": "ordered as asked by the learned metric", "trace.py": "iterations"}
#: scripts run, the same way, by a test of their own (so not twice): script → that test file
OWN_TEST = {"metric_learn_workflow.py": "test_migration_workflow.py"}


def test_every_example_is_checked():
    assert sorted(p.name for p in EXAMPLES) == sorted({**PRINTS, **OWN_TEST})
    assert all((Path(__file__).parent / test).is_file() for test in OWN_TEST.values())


@pytest.mark.parametrize("script", [p for p in EXAMPLES if p.name not in OWN_TEST],
                         ids=lambda p: p.name)
def test_example_runs(script, tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert PRINTS[script.name] in done.stdout, done.stdout
    assert not list(tmp_path.iterdir())  # writes nothing into the working directory
