"""``benchmarks/timing/bench_paper_times.py`` on one cheap cell and the floor formulas of
``benchmarks/timing/hardware_floor.py`` on tiny cases."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.usefixtures("tmp_cache")


@pytest.fixture(scope="module")
def scripts():
    """Import ``benchmarks/timing/`` scripts as modules, with the folder on the path as when they
    run (bench_paper_times imports its sibling hardware_floor)."""
    folder = str(ROOT / "benchmarks" / "timing")
    sys.path.insert(0, folder)
    try:
        yield importlib.import_module
    finally:
        sys.path.remove(folder)


@pytest.fixture(scope="module")
def bench(scripts):
    return scripts("bench_paper_times")


@pytest.fixture(scope="module")
def floor(scripts):
    return scripts("hardware_floor")


def test_one_cell_row_summary_and_resume(bench, floor, tmp_path, capsys, monkeypatch):
    args = ["--table", "ying2012/table5", "--dataset", "wine", "--solver", "dml_eig",
            "--out", str(tmp_path)]
    monkeypatch.setattr(bench, "machine_rates", lambda: (1e9, 1e10))  # flop/s, byte/s
    assert bench.main(args) == 0
    times = pd.read_csv(tmp_path / "paper_times.csv")
    assert list(times.columns) == bench.COLUMNS
    (row,) = times.to_dict("records")
    assert (row["table"], row["dataset"], row["solver"], row["label"]) == (
        "ying2012/table5", "wine", "dml_eig", "dml_eig")
    assert row["paper_seconds"] == 0.23  # dml_bench/papers/ying2012.yaml, Table 5
    assert row["ratio"] == pytest.approx(row["ours_wall_seconds"] / row["paper_seconds"])
    assert row["seconds_per_iter"] == pytest.approx(row["ours_wall_seconds"] / row["n_iter"])
    assert row["blas_threads"] == 1 and row["n_iter"] == 1000  # the committed max_iter
    # the floor of 1000 iterations on wine's split 0: 126 training points, 3 · 126 dissimilar
    # pairs (k = 3), 13 features, at the patched rates
    flops, nbytes = floor.dml_eig_work(126, 378, 13)
    assert row["floor_seconds"] == pytest.approx(1000 * max(flops / 1e9, nbytes / 1e10))
    assert row["floor_ratio"] == pytest.approx(row["floor_seconds"] / 0.23)
    summary = pd.read_csv(tmp_path / "paper_times_summary.csv")
    assert summary.loc[0, "geomean_floor_ratio"] == pytest.approx(row["floor_ratio"])
    assert summary.loc[0, "geomean_ratio"] == pytest.approx(row["ratio"])
    assert bool(summary.loc[0, "seed"]) and summary.loc[0, "worst_dataset"] == "wine"
    assert (tmp_path / "paper_times.png").is_file()
    assert "wine × mlmnn, iris × mlmnn" in (tmp_path / "paper_times_summary.md").read_text()
    capsys.readouterr()
    assert bench.main(args) == 0  # resumable: the cell is not timed again
    assert "already timed" in capsys.readouterr().out
    assert len(pd.read_csv(tmp_path / "paper_times.csv")) == 1


def test_unknown_table_is_a_one_line_error(bench, tmp_path):
    from dml_bench.registry import UnknownNameError

    with pytest.raises(UnknownNameError, match="unknown timing table 'nope/t1'"):
        bench.main(["--table", "nope/t1", "--out", str(tmp_path)])


def test_floor_formulas_on_tiny_cases(floor):
    # DML-eig, 10 pairs of 8 points in d = 4 (dense eigh): SYRK 10·4·5, Z̃v 2·10·4, (4/3)·4³,
    # 10·10 (not more than twice as many pairs as points: no Laplacian)
    flops, nbytes = floor.dml_eig_work(8, 10, 4)
    assert flops == pytest.approx(200 + 80 + 4 / 3 * 64 + 100)
    assert nbytes == 8 * (2 * 10 * 4 + 5 * 10)
    # 1000 pairs of 100 points in d = 70 (the Laplacian saves 3.9 Mflop): X̄ᵀ(L X̄) 2·100·70²
    # + 2·2100·70, X̄v 2·100·70, Lanczos 2·70², 10·1000
    flops, nbytes = floor.dml_eig_work(100, 1000, 70)
    assert flops == pytest.approx(980000 + 294000 + 14000 + 9800 + 10000)
    assert nbytes == 8 * (3 * 100 * 70 + 2 * 2100 + 5 * 1000)
    # FrobMetric, n = 5, d = 2, 4 pairs, 6 triplets, rank 1, k = 10
    flops, nbytes = floor.frobmetric_work(5, 2, 4, 6, 1, 10)
    assert flops == 2 * 5 * 4 + 8 * 4 * 2 + 9 * 8 + 2 * 5 * 2 + 3 * 4 + 4 * 10 * 6
    assert nbytes == 8 * (2 * 5 * 2 + 5 + 3 * 4 + 6 * 6 + 2 * 10 * 6)
    # SGD-IncSVD from W = 0 (r = 0) in d = 3, one active triplet of one: c = 2, p = 2
    flops, nbytes = floor.sgd_incsvd_work(3, 0, 2, 1, 1)
    assert flops == pytest.approx(4 * 3 * 4 + 2 * 4 * 2 + 4 / 3 * 8 + 2 * 3 * 2 * 2)
    assert nbytes == 8 * (3 * 3 + 3 * 2 + 2 * 3 * 2)
    # no active triplet: only the batch's distances (r = 2 here) and its rows
    assert floor.sgd_incsvd_work(3, 2, 2, 1, 0) == (4 * 3 * 2, 8 * 3 * 3)
    assert floor.floor_seconds(2e9, 1e9, 1e9, 1e10) == (2.0, "compute")
    assert floor.floor_seconds(1e9, 1e10, 1e9, 1e9) == (10.0, "memory")


def test_machine_rates_are_positive(floor):
    assert floor.gemm_rate(size=64, repeats=1) > 0
    assert floor.memory_bandwidth(nbytes=1e6, repeats=1) > 0
    assert np.isfinite(floor.memory_bandwidth(nbytes=1e6, repeats=1))


def test_seconds_to_gap_reads_the_first_crossing_of_the_relative_gap(bench):
    """Hand-made traces: gap/|objective| = 0.5, 0.02, 0.005, 0.0005 at t = 1, 2, 3, 4 s; FrobMetric's
    trace scales by |primal|; no gap recorded (or never reached) gives NaN."""
    class Fitted:
        optimality_measure = "relative_duality_gap"

        def __init__(self, trace):
            self.trace_ = {k: np.asarray(v, dtype=float) for k, v in trace.items()}

    trace = {"gap": [1.0, 0.04, 0.01, 0.001], "objective": [-2.0] * 4, "time": [1, 2, 3, 4]}
    assert bench.seconds_to_gap(Fitted(trace), 1e-2) == 3.0
    assert bench.seconds_to_gap(Fitted(trace), 1e-3) == 4.0
    assert np.isnan(bench.seconds_to_gap(Fitted(trace), 1e-4))
    frob = {**trace, "objective": [1e9] * 4, "primal": [2.0] * 4}
    assert bench.seconds_to_gap(Fitted(frob), 1e-2) == 3.0
    assert np.isnan(bench.seconds_to_gap(Fitted({"objective": [1.0], "time": [1.0]}), 1e-2))
    other = Fitted(trace)
    other.optimality_measure = "relative_dual_infeasibility"  # BoostMetric: no duality gap
    assert np.isnan(bench.seconds_to_gap(other, 1e-2))
