"""``benchmarks/timing/bench_lmnn_search.py``: LMNN's active set against the exhaustive search, on
a small board run here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from dml_bench.cli import main as cli

REPO = Path(__file__).resolve().parents[1]


def test_both_routes_on_the_board_s_splits_with_the_committed_tuning(benchmark_script, tmp_path):
    data = yaml.safe_load((REPO / "configs" / "leaderboard_quick.yaml").read_text())
    data["datasets"] = [{"name": "wine"}]
    data["solvers"] = [{"name": "lmnn", "params": {"max_iter": 30},
                        "tune": {"grid": {"mu": [0.25, 0.75]}, "cv": 3}}]
    data["execution"]["n_jobs"] = 1
    data["leaderboard"] = {"fit_budget_seconds": 60}
    config = tmp_path / "board.yaml"
    config.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(cli, ["leaderboard", "--config", str(config), "--results-dir",
                                      str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    bench = benchmark_script("timing/bench_lmnn_search")
    bench.main(["--dataset", "wine", "--splits", "2", "--config", str(config), "--results",
                str(tmp_path / "r"), "--out", str(tmp_path / "bench")])
    rows = pd.read_csv(tmp_path / "bench" / "lmnn_search.csv")
    splits = rows[rows.split != "pooled"]
    assert len(splits) == 4 and set(splits.route) == {"active_set", "exhaustive"}
    assert set(splits.update_every) == {10, 1}
    assert set(splits.mu) <= {0.25, 0.75}
    pooled = rows[rows.split == "pooled"].set_index("route")
    for route in ("active_set", "exhaustive"):  # splits of equal test size: the mean error
        assert pooled.loc[route, "error"] == pytest.approx(
            splits[splits.route == route].error.mean(), rel=1e-12)
    assert 0 < pooled.loc["active_set", "mcnemar_p"] <= 1


def test_mcnemar_p_is_the_exact_binomial_test_of_the_discordant_points(benchmark_script):
    bench = benchmark_script("timing/bench_float32")
    a = np.array([1, 1, 1, 0, 1, 0, 1, 1], bool)  # right only under a: 3 points; only b: 1
    b = np.array([0, 0, 1, 0, 0, 1, 1, 1], bool)
    assert bench.mcnemar_p(a, b) == pytest.approx(2 * (1 + 4) / 2 ** 4)  # two-sided, n = 4
    assert bench.mcnemar_p(a, a) == 1.0
