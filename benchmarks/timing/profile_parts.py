"""Where a running fit spends its time, by part, from a py-spy sample of the process.

The board's fits run in loky workers; a sampling profiler attached to one (``py-spy record``,
``--native`` to see into BLAS, LAPACK and numba's compiled code) perturbs it little at 10–20 Hz,
so the profile is of the fit on the board itself, beside the other board, as its rows are timed.
Each sample is charged to the innermost frame of ``dml_bench`` code (file and line: one
statement) and to the class of its native leaf: ``gemm`` (a BLAS ``dgemm`` kernel or its
packing), ``lapack/blas`` (another routine of an OpenBLAS library), ``libc`` (``memcpy``,
``memset`` and the page faults of fresh allocations), ``jit`` (code without a symbol: numba's),
``python`` (no native leaf). One row per (statement, class) with its share of the samples.

    py-spy record -p <worker pid> -r 10 -d 600 --native -f raw -o gd.txt
    python benchmarks/timing/profile_parts.py gd.txt \\
        --out results/leaderboard_diagnosis/hosts/gd_profile.csv
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pandas as pd

_PY_FRAME = re.compile(r"^(?P<func>\S+) \((?P<file>[^:]+\.py):(?P<line>\d+)\)$")


def native_class(leaf: str) -> str:
    """The class of a stack's innermost (native) frame, as named in the module docstring."""
    if _PY_FRAME.match(leaf):
        return "python"
    if "dgemm" in leaf:
        return "gemm"
    if "openblas" in leaf:
        return "lapack/blas"
    if "libc.so" in leaf:
        return "libc"
    if "(?)" in leaf:
        return "jit"
    return "other"


def statement(frames: list[str], package: str = "dml_bench") -> str:
    """The innermost frame of ``package`` code, as ``func (package/…/file.py:line)``."""
    for frame in reversed(frames):
        m = _PY_FRAME.match(frame)
        path = "/" + m["file"] if m else ""   # py-spy names files relative to sys.path or whole
        if f"/{package}/" in path:
            return f"{m['func']} ({package}/{path.split(f'/{package}/', 1)[1]}:{m['line']})"
    return "(outside the package)"


def parts(raw: Path) -> pd.DataFrame:
    """Shares of the samples of a py-spy ``raw`` (collapsed stacks) file by statement and class."""
    rows = []
    for line in raw.read_text().splitlines():
        stack, count = line.rsplit(" ", 1)
        frames = stack.split(";")
        rows.append((statement(frames), native_class(frames[-1]), int(count)))
    df = pd.DataFrame(rows, columns=["statement", "native", "samples"])
    df = df.groupby(["statement", "native"], as_index=False).samples.sum()
    df["share"] = (df.samples / df.samples.sum()).round(4)
    return df.sort_values("samples", ascending=False, ignore_index=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", type=Path, help="py-spy record -f raw output")
    ap.add_argument("--out", type=Path, help="CSV to write (default: print only)")
    args = ap.parse_args(argv)
    df = parts(args.raw)
    print(f"{df.samples.sum()} samples")
    print(df.head(15).to_string(index=False))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
