"""Under CI (``DMLBENCH_FAIL_ON_SKIP=1``, set by .ci/run) a skipped test fails the session."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SKIPPING = '''
import pytest

def test_passes():
    pass

def test_needs_something():
    pytest.skip("needs something that is not installed")
'''


# workers "2": the skip happens in a pytest-xdist worker (`make test` runs with -n auto)
@pytest.mark.parametrize("fail_on_skip, code, workers", [("", 0, "0"), ("1", 1, "0"), ("1", 1, "2")])
def test_a_skip_fails_only_under_ci(tmp_path, fail_on_skip, code, workers):
    shutil.copy(Path(__file__).parent / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_skipping.py").write_text(SKIPPING)
    env = {**os.environ, "DMLBENCH_FAIL_ON_SKIP": fail_on_skip}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           "-n", workers, str(tmp_path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == code, done.stdout
    assert "needs something that is not installed" in done.stdout  # -rs names the reason
    assert ("a skip here hides a missing install step" in done.stdout) == bool(fail_on_skip)
