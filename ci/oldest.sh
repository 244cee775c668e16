#!/usr/bin/env bash
# The test suite with every dependency at its floor: a fresh venv in a temporary folder, the project
# installed with `-c ci/oldest.txt -e '.[test]'` (each direct dependency pinned to the floor that
# pyproject.toml declares), then pytest as `make test` runs it. A floor that the code outgrew (an
# API it now uses, a fix it relies on) fails here. Run from anywhere: `bash ci/oldest.sh` or
# `make test-oldest`. PYTHON picks the interpreter (default python3; the pins pass on 3.10, 3.11).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
export DMLBENCH_DATA_MIRROR="${DMLBENCH_DATA_MIRROR:-$(cd .. && pwd)/shared/datasets}"
export PYTHONUNBUFFERED=1
work="$(mktemp -d "${TMPDIR:-/tmp}/dmlbench-oldest.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export DMLBENCH_CACHE="${DMLBENCH_CACHE:-$work/cache}"
# numba's compile cache (cache=True) of its own: by default it sits in the checkout's __pycache__,
# where the newest-package run (`make test`, just before in .ci/run) has left its files. numba
# writes a function's index before its data file, so while two workers here compile the same
# function, one can read the other's new index beside the newest numba's old data file:
# "LLVM bitcode parsing error ... Producer: 'LLVM22.1.0' Reader: 'LLVM 14.0.6'" at import
# (reproduced by pairing the two files), the likely cause of the worker that CI lost right after
# collection on 2026-11-26.
export NUMBA_CACHE_DIR="$work/numba-cache"

start=$SECONDS
echo "oldest: $("$PYTHON" --version 2>&1), venv in $work"
"$PYTHON" -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install -q -c ci/oldest.txt -e '.[test]'
# what was installed, for each pinned name: a pin that did not take would show here
"$py" - <<'EOF'
import re
from importlib.metadata import version
names = [re.split(r"[=<>!~\[ ;]", line.strip())[0] for line in open("ci/oldest.txt")
         if line.strip() and not line.lstrip().startswith("#")]
print("oldest:", " ".join(f"{n}=={version(n)}" for n in names))
EOF
installed=$SECONDS

status=0
"$py" -m pytest -q "$@" 2>&1 | tee "$work/pytest.log" || status=$?
echo "oldest: install $((installed - start)) s, tests $((SECONDS - installed)) s, total $((SECONDS - start)) s"
tail -n 1 "$work/pytest.log"
exit "$status"
