"""``benchmarks/timing/bench_scaling.py``: a ``--quick`` run on tiny sizes and the slope fit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.usefixtures("tmp_cache")


@pytest.fixture(scope="module")
def bench(benchmark_script):
    return benchmark_script("timing/bench_scaling")


def test_quick_run_writes_rows_slopes_and_figure(bench, mirror, tmp_path):
    # DEXTER (300 rows) at d = 500 and 1000: the smallest data set of the four sweeps
    script = ROOT / "benchmarks" / "timing" / "bench_scaling.py"
    subprocess.run([sys.executable, str(script), "--quick",
                    "--solver", "sgd_incsvd", "--sweep", "sparse", "--out", str(tmp_path)],
                   check=True, capture_output=True, text=True)
    rows = pd.read_csv(tmp_path / "scaling.csv")
    assert list(rows.columns) == bench.COLUMNS
    assert list(rows["d"]) == [500, 1000] and set(rows["status"]) == {"ok"}
    assert set(rows["n_constraints"]) == {10000} and (rows["n_iter"] == 20).all()
    assert np.allclose(rows["seconds_per_iter"], rows["fit_seconds"] / rows["n_iter"])
    assert (rows["peak_memory_mb"] > 0).all() and (rows["constraint_seconds"] > 0).all()
    (slope,) = pd.read_csv(tmp_path / "scaling_slopes.csv").to_dict("records")
    assert (slope["solver"], slope["sweep"], slope["n_points"]) == ("sgd_incsvd", "sparse", 2)
    assert slope["claimed_exponent"] == 1 and "O(dr^2)" in slope["claim"]
    assert slope["slope"] == pytest.approx(bench.loglog_slope(rows["d"], rows["seconds_per_iter"]))
    assert slope["peak_memory_mb_at_largest"] == rows["peak_memory_mb"].iloc[1]
    assert (tmp_path / "scaling.png").is_file()


def test_slope_recovers_a_known_exponent(bench):
    n = np.array([1000, 2000, 4000, 8000, 16000])
    t = 3e-9 * n ** 2.0  # t = c n²: least squares on log t = log c + 2 log n is exact
    assert bench.loglog_slope(n, t) == pytest.approx(2.0, rel=1e-12)
    assert np.isnan(bench.loglog_slope([1000], [1.0]))


def test_slope_table_uses_the_rows_that_ran(bench):
    rows = pd.DataFrame({"solver": "frobmetric", "sweep": "d", "n": 100,
                         "d": [16, 32, 64, 128], "n_constraints": 900,
                         "seconds_per_iter": [1e-3, 8e-3, 6.4e-2, np.nan],
                         "peak_memory_mb": [1.0, 2.0, 3.0, np.nan],
                         "status": ["ok", "ok", "ok", "over budget (> 1 s)"]})
    claims = {"frobmetric": {"exponents": {"d": 3}, "quote": "O(t D^3)", "source": "§I"}}
    (row,) = bench.slopes(rows, claims).to_dict("records")
    assert row["slope"] == pytest.approx(3.0) and row["claimed_exponent"] == 3
    assert (row["n_points"], row["largest_x"], row["peak_memory_mb_at_largest"]) == (3, 64, 3.0)


def test_dense_solvers_are_infeasible_at_dexter_dimension(bench):
    assert bench.memory_problem("sgd_incsvd", 20000, 4.0) is None
    assert bench.memory_problem("frobmetric", 784, 4.0) is None
    assert bench.memory_problem("dml_eig", 20000, 4.0).startswith(
        "infeasible: d x d matrix of 3.20 GB")


def test_bad_option_is_a_one_line_error(bench, capsys):
    with pytest.raises(SystemExit) as exc:
        bench.main(["--sweep", "m"])
    assert exc.value.code == 2
    assert "unknown --sweep m" in capsys.readouterr().err
