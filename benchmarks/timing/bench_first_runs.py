"""What a user waits for at first: ``dmlbench --help``, ``import dml_bench.solvers``, a first
DML-eig fit, and the quickstart (``dmlbench run configs/quickstart.yaml``), each as a fresh
process, on a cold and on a warm numba cache.

Cold: an empty ``NUMBA_CACHE_DIR`` (every kernel compiled in the run; the parallel quickstart
compiles them once, in the parent, before its two workers start). Warm: a cache that a previous
run has filled. The rows alternate cold and warm over ``--repeat`` rounds; the record is the
median wall and CPU seconds (the process and its children) of each, and per command the ratio of
cold to warm medians.

    python benchmarks/timing/bench_first_runs.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path("results/bench/first_runs.csv")
ROOT = Path(__file__).resolve().parents[2]

FIRST_FIT = """
import time, warnings
start = time.perf_counter()
from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler
from dml_bench.constraints import knn_triplets
from dml_bench.solvers import DMLEig
X, y = load_wine(return_X_y=True)
X = StandardScaler().fit_transform(X)
c = knn_triplets(X, y, k=3)
warnings.simplefilter("ignore")
fit = time.perf_counter()
DMLEig(mu=1e-4, max_iter=1000, tol=1e-5).fit(X, y, constraints=c)
print(time.perf_counter() - fit)
"""


def commands(out: Path) -> dict[str, list[str]]:
    return {
        "dmlbench --help": [sys.executable, "-m", "dml_bench", "--help"],
        "import dml_bench.solvers": [sys.executable, "-c", "import dml_bench.solvers"],
        "first DML-eig fit (wine)": [sys.executable, "-c", FIRST_FIT],
        "quickstart": [sys.executable, "-m", "dml_bench", "run",
                       str(ROOT / "configs" / "quickstart.yaml"), "--out", str(out)],
    }


def timed(argv: list[str], cache: Path) -> tuple[float, float, str]:
    """Wall and CPU seconds (with children) of one run, and what it printed last."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env={**os.environ, "NUMBA_CACHE_DIR": str(cache)},
                          capture_output=True, text=True, check=True, cwd=ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = done.stdout.strip().splitlines()
    return wall, cpu, lines[-1] if lines else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        warm_cache = tmp / "warm"
        for name, argv in commands(tmp / "results_fill").items():  # fill the warm cache
            timed(argv, warm_cache)
        for r in range(args.repeat):
            for cache_state in ("cold", "warm"):
                for i, (name, argv) in enumerate(commands(tmp / f"out_{cache_state}{r}").items()):
                    cache = tmp / f"cold{r}_{i}" if cache_state == "cold" else warm_cache
                    wall, cpu, last = timed(argv, cache)
                    rows.append({"command": name, "cache": cache_state, "round": r,
                                 "wall_s": wall, "cpu_s": cpu,
                                 "fit_s": float(last) if name.startswith("first") else np.nan})
                    print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    summary = df.groupby(["command", "cache"], sort=False)[["wall_s", "cpu_s", "fit_s"]].median()
    summary = summary.unstack("cache")
    summary.columns = [f"{what}_{cache}" for what, cache in summary.columns]
    summary["wall_cold_over_warm"] = summary["wall_s_cold"] / summary["wall_s_warm"]
    summary = summary.dropna(axis=1, how="all").round(3).reset_index()
    summary["repeat"] = args.repeat
    OUT.parent.mkdir(parents=True, exist_ok=True)
    summary.to_csv(OUT, index=False)
    print(summary.to_string(index=False))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
