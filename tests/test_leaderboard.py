"""The leaderboard: its statistics against independent references (Demšar 2006's tables and
formulas, brute force, scipy) and ``dmlbench leaderboard`` end to end (resume, budget, rules)."""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.linalg
import scipy.sparse
import yaml
from click.testing import CliRunner
from scipy import stats

from dml_bench.report import ranking
from dml_bench.solvers import ITML
from dml_bench.cli import main
from dml_bench.run.budget import OVER_BUDGET

OVER_BUDGET_REASON = OVER_BUDGET.format(600.0)

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.usefixtures("tmp_cache")


# ----------------------------------------------------------------------------------- statistics

# Demšar (2006), Table 5a: critical values q_0.05 of the two-tailed Nemenyi test, k = 2..10
DEMSAR_Q05 = [1.960, 2.343, 2.569, 2.728, 2.850, 2.949, 3.031, 3.102, 3.164]


@pytest.mark.parametrize("k, q", list(zip(range(2, 11), DEMSAR_Q05)))
def test_nemenyi_q_matches_demsar_table_5a(k, q):
    # the table prints 3 decimals from older approximations of the studentized range: scipy's
    # quantile differs from it by at most 0.0011 (k = 7), so 2e-3 is the table's own accuracy
    assert ranking.nemenyi_q(k) == pytest.approx(q, abs=2e-3)


def test_critical_difference_is_demsars_formula_and_worked_example():
    # Demšar §3.2.2 worked example: k = 4 methods on N = 14 data sets, CD = 2.569·√(20/84) = 1.25
    assert ranking.critical_difference(4, 14) == pytest.approx(1.25, abs=5e-3)
    for k, n in [(3, 5), (10, 18), (24, 18)]:
        assert ranking.critical_difference(k, n) == pytest.approx(
            ranking.nemenyi_q(k) * math.sqrt(k * (k + 1) / (6 * n)), rel=1e-12)


def test_ranks_average_ties_and_put_missing_cells_last():
    errors = pd.DataFrame({"a": [0.1, 0.3, np.nan], "b": [0.2, 0.3, 0.5],
                           "c": [0.2, np.nan, np.nan]})
    expected = [[1, 2.5, 2.5], [1.5, 1.5, 3], [2.5, 1, 2.5]]
    np.testing.assert_array_equal(ranking.ranks(errors).to_numpy(), expected)


def test_friedman_statistic_is_the_textbook_formula_without_ties():
    rng = np.random.default_rng(3)
    errors = pd.DataFrame(rng.permutation(np.arange(30.0)).reshape(6, 5))  # no ties
    n, k = errors.shape
    r = errors.rank(axis=1).mean().to_numpy()
    chi2 = 12 * n / (k * (k + 1)) * (np.sum(r ** 2) - k * (k + 1) ** 2 / 4)  # Demšar Eq. §3.2.2
    f = (n - 1) * chi2 / (n * (k - 1) - chi2)
    got = ranking.friedman(errors)
    assert got.statistic == pytest.approx(chi2, rel=1e-12)
    assert got.p_value == pytest.approx(stats.chi2.sf(chi2, k - 1), rel=1e-12)
    assert got.iman_davenport == pytest.approx(f, rel=1e-12)
    assert got.iman_davenport_p == pytest.approx(stats.f.sf(f, k - 1, (k - 1) * (n - 1)), rel=1e-12)


def test_friedman_is_undefined_below_three_methods():
    with pytest.raises(ValueError, match="at least 3 methods"):
        ranking.friedman(pd.DataFrame({"a": [1.0, 2.0], "b": [2.0, 1.0]}))


def _exact_wilcoxon_p(d: np.ndarray) -> float:
    """Two-sided exact p of the signed-rank statistic by enumerating all 2^n sign patterns (zero
    differences dropped, mid-ranks for tied |differences|)."""
    d = d[d != 0]
    r = stats.rankdata(np.abs(d))
    t_obs = min(r[d > 0].sum(), r[d < 0].sum())
    ts = np.array([sum(ri for ri, s in zip(r, signs) if s)
                   for signs in itertools.product([0, 1], repeat=len(d))])
    return float(np.mean(np.minimum(ts, r.sum() - ts) <= t_obs + 1e-9))


@pytest.mark.parametrize("d", [
    [0.5, -0.3, 1.2, 0.9, -0.1, 2.0, 0.7, 1.5, -0.8],  # distinct |differences|
    [0.2, -0.2, 0.2, 0.5, -0.5, 0.0, 0.0, 1.1, 0.2, -0.7, 0.3, 0.3],  # ties and zeros
    [1.0, 1.0, 1.0, -1.0, 2.0, -2.0, 2.0, 3.0, 3.0, 3.0, -3.0, 0.5, 0.5, -0.5],
    [0.4] * 7,  # every difference one way: p = 2 / 2^7
    [0.0, 0.0, 0.0],  # no non-zero difference
])
def test_signed_rank_p_equals_enumeration_of_sign_patterns(d):
    d = np.array(d)
    expected = _exact_wilcoxon_p(d) if np.any(d != 0) else 1.0
    assert ranking.signed_rank_p(d) == pytest.approx(expected, rel=1e-12)
    assert ranking.signed_rank_p(-d) == pytest.approx(expected, rel=1e-12)


def test_signed_rank_p_equals_scipy_exact_without_ties():
    """Without ties scipy's exact distribution (every release) is the same; n up to 40."""
    rng = np.random.default_rng(3)
    for n in (5, 13, 25, 40):
        d = rng.normal(0.3, 1.0, n)
        assert ranking.signed_rank_p(d) == pytest.approx(
            stats.wilcoxon(d, method="exact").pvalue, rel=1e-10)


def test_pairwise_counts_and_wilcoxon_against_enumeration():
    rng = np.random.default_rng(0)
    a = rng.uniform(0, 10, 9)
    b = a + np.array([0.5, -0.3, 1.2, 0.9, -0.1, 2.0, 0.7, 1.5, -0.8])  # distinct |differences|
    errors = pd.DataFrame({"A": np.append(a, [np.nan, 1.0]), "B": np.append(b, [1.0, np.nan]),
                           "C": np.append(b, [np.nan, np.nan])})
    pw = ranking.pairwise(errors).set_index(["method", "versus"])
    ab = pw.loc[("A", "B")]
    # A lower on 6 of the 9 shared sets, B alone on the 10th (B wins), A alone on the 11th
    assert (ab.wins, ab.ties, ab.losses, ab.n_both) == (7, 0, 4, 9)
    assert ab.wilcoxon_p == pytest.approx(_exact_wilcoxon_p(a - b), rel=1e-12)
    bc = pw.loc[("B", "C")]
    assert (bc.ties, bc.wilcoxon_p) == (10, 1.0)  # equal errors, or neither has one
    assert pw.loc[("B", "A")].wins == ab.losses


def test_pareto_front_equals_brute_force():
    rng = np.random.default_rng(1)
    for _ in range(50):
        cost, loss = rng.integers(0, 6, 12).astype(float), rng.integers(0, 6, 12).astype(float)
        brute = [not any(cost[j] <= cost[i] and loss[j] <= loss[i]
                         and (cost[j] < cost[i] or loss[j] < loss[i]) for j in range(12))
                 for i in range(12)]
        np.testing.assert_array_equal(ranking.pareto_front(cost, loss), brute)


def test_cliques_are_the_maximal_groups_within_cd():
    rng = np.random.default_rng(2)
    for _ in range(50):
        r = pd.Series(np.round(rng.uniform(1, 8, 8), 1), index=list("abcdefgh"))
        cd = rng.uniform(0.3, 3)
        order = list(r.sort_values(kind="stable").index)
        runs = [order[i:j + 1] for i in range(8) for j in range(i + 1, 8)
                if r[order[j]] - r[order[i]] < cd]
        maximal = [g for g in runs if not any(set(g) < set(h) for h in runs)]
        assert ranking.cliques(r, cd) == maximal


# ---------------------------------------------------------------------------------- end to end


def _invoke(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def test_quick_board_runs_resumes_and_writes_its_statistics(tmp_path):
    config = REPO / "configs" / "leaderboard_quick.yaml"
    out = _invoke("leaderboard", "--quick", "--config", config, "--results-dir", tmp_path)
    board = tmp_path / "leaderboard_quick"
    assert "15 cells run, 0 already done" in out
    runs = pd.read_csv(board / "runs.csv")
    assert len(runs) == 5 * 3 * 3  # methods × data sets × splits
    logs = {name: (board / name).read_bytes() for name in ("runs.csv", "tuning.csv")}
    out = _invoke("leaderboard", "--quick", "--config", config, "--results-dir", tmp_path)
    assert "0 cells run, 15 already done" in out
    assert {name: (board / name).read_bytes() for name in logs} == logs  # no new fit
    ranks = pd.read_csv(board / "ranks.csv")
    errors = pd.read_csv(board / "board.csv").pivot(index="dataset", columns="method",
                                                     values="error").round(9)
    # the independent reference: scipy's average ranks of each data set's errors
    expected = errors.apply(lambda row: pd.Series(stats.rankdata(row), index=row.index),
                            axis=1).mean()
    for rec in ranks.itertuples():
        assert rec.mean_rank == pytest.approx(expected[rec.method], abs=1e-5)  # 6 digits in CSV
    for name in ("ranks.tex", "ranks.html", "pairwise.csv", "friedman.csv", "time_error.csv",
                 "figures/cd_diagram.png", "figures/time_error.png", "leaderboard.html"):
        assert (board / name).stat().st_size > 0
    # no reproduction report beside the board: the page does not link to one
    assert "../REPRODUCTION.html" not in (board / "leaderboard.html").read_text()
    # the times' host: every one of the 15 cells ran here, and the page says on which CPU
    cpuinfo = Path("/proc/cpuinfo")
    listed = re.search(r"^model name\s*:\s*(.+?)\s*$", cpuinfo.read_text() if cpuinfo.exists()
                       else "", re.M)
    host = listed.group(1) if listed else runs["cpu_model"].iloc[0]  # the kernel's name if any
    assert f"The final fits ran on: {host} (15 cells);" in (board / "LEADERBOARD.md").read_text()


def test_the_hosts_sentence_counts_complete_cells_per_cpu_in_words():
    """One cell is "1 cell"; cells that did not complete name no host; an empty host is "not
    recorded" (rows without a ``cpu_model``). The board's ``hosts_note`` follows the list."""
    from dml_bench.leaderboard.page import _hosts_sentence
    table = pd.DataFrame({"status": ["complete"] * 4 + ["over_budget"],
                          "hosts": ["", "", "", "CPU B", "CPU C"]})
    assert _hosts_sentence(table) == ("The final fits ran on: not recorded (3 cells), "
                                      "CPU B (1 cell).")
    assert _hosts_sentence(table, "a note.") == ("The final fits ran on: not recorded (3 cells), "
                                                 "CPU B (1 cell); a note.")


def test_the_hosts_note_is_read_from_the_board_config_and_shown_on_the_page(small_board,
                                                                            tmp_path):
    from dml_bench.experiment.config import ConfigError
    from dml_bench.leaderboard.board import load_board

    data = yaml.safe_load(small_board.read_text())
    data["leaderboard"]["hosts_note"] = "a finding\n  about   hosts (`where.csv`)."
    small_board.write_text(yaml.safe_dump(data))
    assert load_board(small_board).hosts_note == "a finding about hosts (`where.csv`)."
    _invoke("leaderboard", "--config", small_board, "--results-dir", tmp_path / "r",
            "--solver", "euclidean")
    md = (tmp_path / "r" / "leaderboard_quick" / "LEADERBOARD.md").read_text()
    assert " cells); a finding about hosts (`where.csv`).\n" in md
    data["leaderboard"]["hosts_note"] = ["not", "text"]
    small_board.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"leaderboard\.hosts_note: unexpected value"):
        load_board(small_board)
    del data["leaderboard"]["hosts_note"]
    small_board.write_text(yaml.safe_dump(data))
    assert load_board(small_board).hosts_note == ""


def test_the_committed_boards_declare_the_hosts_note():
    """The page's sentence on hosts comes from the board config, the same on both boards."""
    from dml_bench.leaderboard.board import load_board

    notes = {load_board(REPO / "configs" / name).hosts_note
             for name in ("leaderboard.yaml", "leaderboard_quick.yaml")}
    assert notes == {"hosts of one nominal size differ by up to a factor of 2 on the same fit, "
                     "in either direction by workload (`hosts.md` in `results/leaderboard_diagnosis`)."}


@pytest.fixture
def small_board(tmp_path):
    """A two-set board whose memory rule leaves DML-eig unable to run (any d×d exceeds it)."""
    data = yaml.safe_load((REPO / "configs" / "leaderboard_quick.yaml").read_text())
    data["datasets"] = [{"name": "iris"}, {"name": "wine"}]
    data["solvers"] = [{"name": "euclidean"}, {"name": "lda"},
                       {"name": "dml_eig", "params": {"max_iter": 20}}]
    data["execution"]["n_jobs"] = 1
    data["leaderboard"] = {"fit_budget_seconds": 60, "memory_gb": 1e-7,
                           "footprint": {"default": {"dd": 8}, "euclidean": {}, "lda": {}}}
    path = tmp_path / "board.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_memory_rule_marks_cells_before_running_and_ranks_them_last(small_board, tmp_path):
    _invoke("leaderboard", "--config", small_board, "--results-dir", tmp_path / "r")
    board = tmp_path / "r" / "leaderboard_quick"
    table = pd.read_csv(board / "board.csv").set_index(["dataset", "method"])
    assert table.loc[("iris", "dml_eig"), "status"] == "cannot_run"
    assert "exceeds the 1e-07 GB rule" in table.loc[("iris", "dml_eig"), "reason"]
    assert set(pd.read_csv(board / "runs.csv")["label"]) == {"euclidean", "lda"}
    ranks = pd.read_csv(board / "ranks.csv", keep_default_na=False).set_index("method")
    assert float(ranks.loc["dml_eig", "mean_rank"]) == 3.0
    assert ranks.loc["dml_eig", "iris"] == "n/a"


def test_a_cannot_run_mark_whose_rule_no_longer_holds_is_pending(small_board, tmp_path):
    _invoke("leaderboard", "--config", small_board, "--results-dir", tmp_path / "r")
    data = yaml.safe_load(small_board.read_text())
    data["leaderboard"]["footprint"]["dml_eig"] = {}  # a corrected footprint: no memory
    small_board.write_text(yaml.safe_dump(data))
    _invoke("leaderboard", "--config", small_board, "--results-dir", tmp_path / "r",
            "--stats-only")
    board = tmp_path / "r" / "leaderboard_quick"
    table = pd.read_csv(board / "board.csv").set_index(["dataset", "method"])
    assert table.loc[("iris", "dml_eig"), "status"] == "pending"
    assert table.loc[("iris", "dml_eig"), "reason"].startswith(
        "to run: an estimated 0.0 GB now meets the 1e-07 GB rule (was: memory: ")
    assert "dml_eig" not in set(pd.read_csv(board / "runs.csv")["label"])
    # a mark whose rule still holds gives the footprint's estimate as it is now, on the size
    # the rule is checked on (iris: ceil(0.7 × 150) = 105 training points, 4 features)
    data["leaderboard"]["footprint"]["dml_eig"] = {"nn": 1000}
    small_board.write_text(yaml.safe_dump(data))
    _invoke("leaderboard", "--config", small_board, "--results-dir", tmp_path / "r",
            "--stats-only")
    table = pd.read_csv(board / "board.csv").set_index(["dataset", "method"])
    assert table.loc[("iris", "dml_eig"), "status"] == "cannot_run"
    assert table.loc[("iris", "dml_eig"), "reason"] == (
        f"memory: an estimated {8 * 1000 * 105 ** 2 / 2 ** 30:.1f} GB for n_train = 105, d = 4 "
        "exceeds the 1e-07 GB rule")


def test_a_span_footprint_applies_only_with_more_features_than_points(tmp_path):
    from dml_bench.experiment.schema import ConfigError
    from dml_bench.leaderboard.board import load_board

    data = yaml.safe_load((REPO / "configs" / "leaderboard_quick.yaml").read_text())
    data["leaderboard"] = {"footprint": {"default": {"dd": 8},
                                         "lfda": {"dd": 8, "span": {"dd": 1, "nd": 6}}}}
    path = tmp_path / "board.yaml"
    path.write_text(yaml.safe_dump(data))
    board = load_board(path)
    assert board.memory_bytes("lfda", 210, 20_000) == 8 * (20_000 ** 2 + 6 * 210 * 20_000)
    assert board.memory_bytes("lfda", 1000, 100) == 8 * 8 * 100 ** 2  # d ≤ n: no span
    assert board.memory_bytes("itml", 210, 20_000) == 8 * 8 * 20_000 ** 2
    data["leaderboard"]["footprint"]["lfda"]["span"] = {"dd": 1, "span": {}}
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"leaderboard\.footprint\.lfda\.span: must be"):
        load_board(path)
    data["leaderboard"]["footprint"]["lfda"]["span"] = {"nd": -1}
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"footprint\.lfda\.span\.nd: must be a number"):
        load_board(path)


def test_a_blocked_footprint_applies_from_its_number_of_points(tmp_path):
    from dml_bench.experiment.schema import ConfigError
    from dml_bench.leaderboard.board import load_board

    data = yaml.safe_load((REPO / "configs" / "leaderboard_quick.yaml").read_text())
    data["leaderboard"] = {"footprint": {"nca": {"dd": 27, "nn": 4, "span": {"nn": 4, "nd": 6},
                                                 "blocked": {"from_n": 4096, "dd": 27, "nd": 4}}}}
    path = tmp_path / "board.yaml"
    path.write_text(yaml.safe_dump(data))
    board = load_board(path)
    assert board.memory_bytes("nca", 4095, 16) == 8 * (27 * 16 ** 2 + 4 * 4095 ** 2)
    assert board.memory_bytes("nca", 49_000, 784) == 8 * (27 * 784 ** 2 + 4 * 49_000 * 784)
    assert board.memory_bytes("nca", 210, 20_000) == 8 * (4 * 210 ** 2 + 6 * 210 * 20_000)
    for bad, message in [({"from_n": 10, "span": {}}, r"nca\.blocked: must be"),
                         ({"from_n": -1}, r"nca\.blocked\.from_n: must be a number")]:
        data["leaderboard"]["footprint"]["nca"]["blocked"] = bad
        path.write_text(yaml.safe_dump(data))
        with pytest.raises(ConfigError, match=message):
            load_board(path)
    data["leaderboard"]["footprint"]["nca"] = {"span": {"from_n": 10}}
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"nca\.span: must be"):
        load_board(path)


def test_a_landmarks_footprint_applies_where_the_kernel_is_approximated(tmp_path):
    from dml_bench.experiment.schema import ConfigError
    from dml_bench.leaderboard.board import load_board

    data = yaml.safe_load((REPO / "configs" / "leaderboard_quick.yaml").read_text())
    data["leaderboard"] = {"footprint": {"elm": {"nn": 1.2, "landmarks": {"nm": 4, "mm": 3}}}}
    path = tmp_path / "board.yaml"
    path.write_text(yaml.safe_dump(data))
    board = load_board(path)
    exact = 8 * 1.2 * 49_000 ** 2
    assert board.memory_bytes("elm", 49_000, 784) == exact  # no landmarks set
    assert board.memory_bytes("elm", 49_000, 784, {"n_landmarks": 4096}) == 8 * (
        4 * 49_000 * 4096 + 3 * 4096 ** 2)
    # at most max_exact_n points (else m) are solved exactly
    assert board.memory_bytes("elm", 49_000, 784, {"n_landmarks": 4096,
                                                   "max_exact_n": 50_000}) == exact
    assert board.memory_bytes("elm", 4096, 784, {"n_landmarks": 4096}) == 8 * 1.2 * 4096 ** 2
    data["leaderboard"]["footprint"]["elm"]["landmarks"] = {"nn": 1}
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"elm\.landmarks: must be a mapping with keys among mm"):
        load_board(path)


def test_fit_over_budget_is_marked_and_propagates_to_larger_sets(small_board, tmp_path):
    out = _invoke("leaderboard", "--config", small_board, "--results-dir", tmp_path / "r",
                  "--budget", "0.05", "--solver", "euclidean")
    board = tmp_path / "r" / "leaderboard_quick"
    cells = pd.read_csv(board / "cells.csv").set_index(["dataset", "label"])
    assert cells.loc[("iris", "euclidean"), "status"] == "over_budget"
    silent = re.fullmatch(r"a fit ran over the 0\.05 s budget \(no fit ended in ([\d.]+) s, "
                          r"data preparation included\)", cells.loc[("iris", "euclidean"), "reason"])
    assert silent and float(silent[1]) >= 0.1  # two budgets of silence
    # wine has more points and features than iris: estimated over budget without running
    assert cells.loc[("wine", "euclidean"), "reason"].startswith("estimated: over budget on iris")
    assert "0 cells run" in out and not (board / "runs.csv").exists()
    # the statistics show the cells as – and list the cells still to run
    md = (board / "LEADERBOARD.md").read_text()
    assert "Partial board" in md and "iris (lda, dml_eig)" in md
    table = pd.read_csv(board / "board.csv").set_index(["dataset", "method"])
    assert table.loc[("wine", "euclidean"), "status"] == "over_budget"
    # a rerun with the same budget does not retry them; the marks stay one per cell
    _invoke("leaderboard", "--config", small_board, "--results-dir", tmp_path / "r",
            "--budget", "0.05", "--solver", "euclidean")
    assert len(pd.read_csv(board / "cells.csv")) == 2
    # --retry runs a selected cell again (after a change to the method), under the budget
    out = _invoke("leaderboard", "--config", small_board, "--results-dir", tmp_path / "r",
                  "--solver", "euclidean", "--dataset", "iris", "--retry")
    assert "1 cells run" in out
    latest = pd.read_csv(board / "cells.csv").drop_duplicates(["dataset", "label"], keep="last")
    latest = latest.set_index(["dataset", "label"])
    assert latest.loc[("iris", "euclidean"), "reason"].startswith("run again on request (was: "
                                                                   "a fit ran over the 0.05 s")
    assert latest.loc[("wine", "euclidean"), "status"] == "over_budget"  # not selected
    first = pd.read_csv(board / "runs.csv")
    assert set(first["dataset"]) == {"iris"}
    # --retry on a complete cell moves its rows aside (nothing deleted) and runs it again
    out = _invoke("leaderboard", "--config", small_board, "--results-dir", tmp_path / "r",
                  "--solver", "euclidean", "--dataset", "iris", "--retry")
    assert "1 cells run" in out
    moved = pd.read_csv(board / "runs_superseded.csv")
    assert sorted(moved["task_id"]) == sorted(first["task_id"])
    again = pd.read_csv(board / "runs.csv")
    assert sorted(again["task_id"]) == sorted(first["task_id"])  # "1 cells run": run again


def test_each_cell_reports_its_progress_in_a_log(small_board, tmp_path):
    # a cell runs in a child process whose stderr is the board's log (no terminal): it says how
    # many of the cell's tasks (tuning fits and final fits) are done, with an ETA
    done = subprocess.run([sys.executable, "-m", "dml_bench", "leaderboard", "--config",
                           str(small_board), "--results-dir", str(tmp_path / "r"),
                           "--solver", "lda", "--dataset", "iris"],
                          capture_output=True, text=True, env=os.environ.copy(), timeout=300)
    assert done.returncode == 0, done.stderr
    n_splits = yaml.safe_load(small_board.read_text())["split"]["n_splits"]
    assert f"leaderboard_quick: iris × lda: {n_splits}/{n_splits} tasks," in done.stderr
    assert "ETA 0 s" in done.stderr


SLEEPER = """
import time

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin


class Sleeper(TransformerMixin, BaseEstimator):
    constraint_kind = "labels"

    def __init__(self, seconds=60, transform_seconds=0):
        self.seconds = seconds
        self.transform_seconds = transform_seconds

    def fit(self, X, y=None, constraints=None):
        time.sleep(self.seconds)
        self.components_ = np.eye(np.asarray(X).shape[1])
        return self

    def transform(self, X):
        time.sleep(self.transform_seconds)
        return np.asarray(X) @ self.components_.T
"""


def _processes() -> list[tuple[int, str, int, int]]:
    """(pid, state, parent pid, process group) of every process, from /proc."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():  # /proc/self, /proc/meminfo, ...
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):  # not a process, or it exited meanwhile
            continue
        out.append((int(entry.name), fields[0], int(fields[1]), int(fields[2])))
    return out


def _live_group(pgid: int) -> list[int]:
    """The processes of a process group that have not exited (zombies are not counted)."""
    return [pid for pid, state, _, group in _processes() if group == pgid and state != "Z"]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process groups in /proc")
def test_a_cell_stopped_by_a_signal_is_one_line_and_takes_its_workers_along(small_board,
                                                                             tmp_path):
    # the cell's child is signalled from outside (not by the budget's watch): the board stops at
    # once with one line, and the child's loky workers, in its process group, go with it
    site = tmp_path / "site"
    site.mkdir()
    (site / "dmlb_sleeper.py").write_text(SLEEPER)
    data = yaml.safe_load(small_board.read_text())
    data["datasets"] = [{"name": "iris"}]
    data["solvers"] = [{"name": "dmlb_sleeper:Sleeper", "label": "sleeper"}]
    data["execution"]["n_jobs"] = 2
    data["leaderboard"] = {"fit_budget_seconds": 600, "memory_gb": 8}
    small_board.write_text(yaml.safe_dump(data))
    env = {**os.environ, "DMLBENCH_ALLOW_PLUGINS": "1",  # the sleeper is a plug-in
           "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    board = subprocess.Popen([sys.executable, "-m", "dml_bench", "leaderboard", "--config",
                              str(small_board), "--results-dir", str(tmp_path / "r")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        child, workers = None, []
        for _ in range(600):  # the child, then two busy workers in its group
            time.sleep(0.1)
            child = child or next((pid for pid, _, parent, _ in _processes()
                                   if parent == board.pid), None)
            workers = [p for p in _live_group(child) if p != child] if child else []
            if len(workers) >= 2:
                break
        assert len(workers) >= 2, "the cell's workers did not start"
        # its arguments come over stdin: the config (here its data set) is not on its command line
        assert b"iris" not in Path(f"/proc/{child}/cmdline").read_bytes()
        os.kill(child, signal.SIGTERM)
        _, err = board.communicate(timeout=30)  # not the sleeping fits' minute
    finally:
        board.kill()
    assert board.returncode != 0
    assert err.decode().strip().splitlines()[-1] == (
        "error: iris × sleeper: the cell's run stopped with status -15 (its message is above)")
    assert _live_group(child) == []


def test_a_concurrent_runs_rows_do_not_hide_a_fit_over_the_budget(small_board, tmp_path,
                                                                  monkeypatch):
    # two boards on one folder, each on its own methods: the other run's LDA rows keep landing in
    # the shared log while this run's first fit sleeps for a minute, far over the 4 s budget. The
    # silence watch counts this run's cells' rows only, so the cell is marked over budget by it
    # (not a minute later, when the sleeping fit would land with its fit_time).
    import threading

    from dml_bench.leaderboard.board import experiment_of
    from dml_bench.run.results import RunStore
    from dml_bench.experiment.knn import all_tasks

    site = tmp_path / "site"
    site.mkdir()
    (site / "dmlb_sleeper.py").write_text(SLEEPER)
    monkeypatch.syspath_prepend(str(site))  # the board (here) and its cell's child process
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site),
                                                      os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("DMLBENCH_ALLOW_PLUGINS", "1")  # the sleeper is a plug-in
    data = yaml.safe_load(small_board.read_text())
    data["datasets"] = [{"name": "iris"}]
    data["solvers"] = [{"name": "dmlb_sleeper:Sleeper", "label": "sleeper"}, {"name": "lda"}]
    data["split"]["n_splits"] = 200  # the other run's tasks outlast the sleeping fit
    data["leaderboard"] = {"fit_budget_seconds": 4, "memory_gb": 8}
    small_board.write_text(yaml.safe_dump(data))
    other_tasks = [t for t in all_tasks(experiment_of(small_board)) if t.solver.label == "lda"]
    board = tmp_path / "r" / "leaderboard_quick"
    other, stop = RunStore(board), threading.Event()

    def other_run():  # the concurrent run: an LDA task lands every 0.3 s
        for task in other_tasks:
            if stop.wait(0.3):
                return
            other.append({"task_id": task.task_id, "experiment": task.experiment,
                          "dataset": "iris", "split": task.split, "label": "lda",
                          "fit_time": 0.001})

    writer = threading.Thread(target=other_run, daemon=True)
    start = time.monotonic()
    writer.start()
    try:
        _invoke("leaderboard", "--config", small_board, "--results-dir", tmp_path / "r",
                "--solver", "sleeper")
    finally:
        stop.set()
        writer.join()
    assert time.monotonic() - start < 40  # the sleeping fit takes 60 s
    cells = pd.read_csv(board / "cells.csv").set_index(["dataset", "label"])
    assert cells.loc[("iris", "sleeper"), "status"] == "over_budget"
    silent = re.fullmatch(r"a fit ran over the 4 s budget \(no fit ended in ([\d.]+) s, data "
                          r"preparation included\)", cells.loc[("iris", "sleeper"), "reason"])
    assert silent and 8 <= float(silent[1]) < 40  # two budgets of silence, at most the run


def test_a_fit_within_the_budget_passes_however_long_its_task_evaluates(small_board, tmp_path,
                                                                          monkeypatch):
    # an 8 s fit under a 10 s budget whose evaluation takes 2 × 1.5 s more (the training and the
    # test points through transform): its row lands over 11 s after the cell began, a silence the
    # length of a fit over the budget, and the cell is complete all the same, since the landed
    # fit_time is within the budget and the silence watch waits a second budget for the task's
    # preparation and evaluation
    site = tmp_path / "site"
    site.mkdir()
    (site / "dmlb_sleeper.py").write_text(SLEEPER)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site),
                                                      os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("DMLBENCH_ALLOW_PLUGINS", "1")  # the sleeper is a plug-in
    data = yaml.safe_load(small_board.read_text())
    data["datasets"] = [{"name": "iris"}]
    data["solvers"] = [{"name": "dmlb_sleeper:Sleeper", "label": "sleeper",
                        "params": {"seconds": 8, "transform_seconds": 1.5}}]
    data["split"]["n_splits"] = 1
    data["leaderboard"] = {"fit_budget_seconds": 10, "memory_gb": 8}
    small_board.write_text(yaml.safe_dump(data))
    out = _invoke("leaderboard", "--config", small_board, "--results-dir", tmp_path / "r")
    board = tmp_path / "r" / "leaderboard_quick"
    assert 8 <= float(pd.read_csv(board / "runs.csv")["fit_time"].iloc[0]) < 10
    assert "1 cells run, 0 already done, 0 over budget" in out
    assert not (board / "cells.csv").exists()


def test_the_watch_reads_each_landed_fit_whole_and_once(tmp_path):
    from dml_bench.run.budget import LandedRows
    from dml_bench.run.results import RunStore

    store = RunStore(tmp_path)
    a, b, c, d = (letter * 16 for letter in "abcd")  # task ids: 16 hexadecimal digits
    store.append({"task_id": a, "dataset": "iris", "label": "lda", "fit_time": 1.0})
    with open(tmp_path / "runs.csv", "a") as fh:  # a row torn by a killed run
        fh.write("torn,leaderboard,iris")
    watch = LandedRows(tmp_path / "runs.csv")
    assert watch.new() == []
    # the runner cuts the torn row before appending: the next rows are read whole, once
    store.append({"task_id": b, "dataset": "iris", "label": "lda", "fit_time": 700.0})
    with open(tmp_path / "runs.csv", "a") as fh:  # a row being written
        fh.write(f"{c},leaderboard,wine")
    assert [(r["task_id"], float(r["fit_time"])) for r in watch.new()] == [(b, 700.0)]
    with open(tmp_path / "runs.csv", "a") as fh:
        fh.write(",0,1,lda\n")
    assert [r["task_id"] for r in watch.new()] == [c]
    assert watch.new() == []
    # a concurrent run sets rows aside (the log is rewritten shorter): read on from its new end
    store.drop({a, b})
    assert watch.new() == []
    store.append({"task_id": d, "dataset": "iris", "label": "lda", "fit_time": 2.0})
    assert [r["task_id"] for r in watch.new()] == [d]
    assert LandedRows(tmp_path / "tuning.csv").new() == []  # no log yet


def test_the_watch_follows_the_log_into_its_next_file(tmp_path, monkeypatch):
    from dml_bench.run import results
    from dml_bench.run.budget import LandedRows
    from dml_bench.run.results import RunStore

    monkeypatch.setattr(results, "SEGMENT_BYTES", 300)
    store = RunStore(tmp_path)
    store.append({"task_id": "a" * 16, "dataset": "iris", "label": "lda", "fit_time": 1.0})
    watch = LandedRows(tmp_path / "runs.csv")
    for name in "bcde":
        store.append({"task_id": name * 16, "dataset": "iris", "label": "lda", "fit_time": 2.0})
    assert len(results.log_segments(tmp_path / "runs.csv")) > 2
    assert [r["task_id"] for r in watch.new()] == [n * 16 for n in "bcde"]
    assert watch.new() == []
    store.append({"task_id": "f" * 16, "dataset": "iris", "label": "lda", "fit_time": 700.0})
    assert [(r["task_id"], float(r["fit_time"])) for r in watch.new()] == [("f" * 16, 700.0)]


#: task ids of a finished and of an unfinished task (16 hexadecimal digits, as the runner's)
DONE, OPEN = "d0e" + "0" * 13, "0be" + "0" * 13


def test_finished_tasks_tuning_fits_leave_the_committed_log(tmp_path):
    from dml_bench.leaderboard.run import compact_tuning_log
    from dml_bench.run.results import TUNE_COLUMNS, RunStore

    runs, tuning = RunStore(tmp_path), RunStore(tmp_path, "tuning", TUNE_COLUMNS)
    runs.append({"task_id": DONE, "dataset": "iris", "label": "lda", "fit_time": 1.0})
    for i, outer in enumerate([DONE, OPEN, DONE, OPEN]):
        tuning.append({"task_id": f"{i:016x}", "outer_task_id": outer, "params": '{"C": 1}',
                       "error": 0.1 * i})
    assert compact_tuning_log(tmp_path) == 2
    # an unfinished task resumes from them
    assert list(tuning.read()["task_id"]) == [f"{i:016x}" for i in (1, 3)]
    done = RunStore(tmp_path, "tuning_done", TUNE_COLUMNS).read()
    assert list(done["task_id"]) == [f"{i:016x}" for i in (0, 2)]
    assert list(done["params"]) == ['{"C": 1}'] * 2
    assert compact_tuning_log(tmp_path) == 0


def test_two_boards_that_compact_at_once_move_each_fit_once(tmp_path, monkeypatch):
    # Two boards on one folder finished the same cell together (MNIST x SGD-batch, 2026-11-29):
    # both read tuning.csv, both appended its 270 fits to tuning_done.csv, then both dropped them.
    # Here the second board compacts while the first is between its read and its write.
    import threading

    from dml_bench.run import results
    from dml_bench.leaderboard.run import compact_tuning_log
    from dml_bench.run.results import TUNE_COLUMNS, RunStore

    RunStore(tmp_path).append({"task_id": DONE, "dataset": "iris", "label": "lda",
                               "fit_time": 1.0})
    tuning = RunStore(tmp_path, "tuning", TUNE_COLUMNS)
    for i in range(3):
        tuning.append({"task_id": f"{i:016x}", "outer_task_id": DONE, "params": "{}",
                       "error": 0.1})
    read, second, reads = results.RunStore.read, [], []

    def read_then_meet_the_other_board(store):
        frame = read(store)
        if store.runs.name == "tuning.csv" and threading.current_thread() is main:
            reads.append(1)
        if len(reads) == 2 and not second:  # the first board's read of the rows to move
            second.append(threading.Thread(target=compact_tuning_log, args=(tmp_path,)))
            second[0].start()
            second[0].join(timeout=1.0)  # it runs now, unless the first board holds the lock
        return frame

    main = threading.current_thread()
    monkeypatch.setattr(results.RunStore, "read", read_then_meet_the_other_board)
    compact_tuning_log(tmp_path)
    second[0].join()
    done = RunStore(tmp_path, "tuning_done", TUNE_COLUMNS).read()
    assert sorted(done["task_id"]) == [f"{i:016x}" for i in range(3)]
    assert len(tuning.read()) == 0


def test_a_landed_fit_over_the_budget_marks_its_cell():
    from dml_bench.run.budget import fit_over_budget

    cells = [("iris", "lda"), ("wine", "lda")]
    rows = [{"dataset": "iris", "label": "lda", "fit_time": "599.9"},
            {"dataset": "iris", "label": "nca", "fit_time": "900"},  # not a cell of this watch
            {"dataset": "wine", "label": "lda", "fit_time": ""},     # no fit time recorded
            {"dataset": "wine", "label": "lda", "fit_time": "2026-11-26T12:00"},  # not a row
            {"dataset": "wine", "label": "lda", "fit_time": "612.4"}]
    assert fit_over_budget(rows[:4], cells, 600) is None
    index, reason = fit_over_budget(rows, cells, 600)
    assert index == 1
    assert reason == "a fit ran over the 600 s budget (612 s)"
    rows[-1]["cpu_model"] = "AMD EPYC"  # a row of this version names its host
    assert fit_over_budget(rows, cells, 600)[1] == \
        "a fit ran over the 600 s budget (612 s on AMD EPYC)"


def test_a_complete_cell_marked_over_budget_shows_as_over_budget(small_board, tmp_path):
    from dml_bench.leaderboard.board import record_cell

    _invoke("leaderboard", "--config", small_board, "--results-dir", tmp_path / "r",
            "--solver", "lda")
    board = tmp_path / "r" / "leaderboard_quick"
    # its last fit landed over the budget (with -j N, while the other workers' rows landed)
    record_cell(board, "iris", "lda", "over_budget", "a fit ran over the 60 s budget (61 s, ...)",
                60)
    out = _invoke("leaderboard", "--config", small_board, "--results-dir", tmp_path / "r",
                  "--solver", "lda")
    assert "0 cells run" in out
    table = pd.read_csv(board / "board.csv").set_index(["dataset", "method"])
    assert table.loc[("iris", "lda"), "status"] == "over_budget"
    assert table.loc[("wine", "lda"), "status"] == "complete"
    # with a larger budget the mark no longer applies (the cell is not rerun: it is complete)
    _invoke("leaderboard", "--config", small_board, "--results-dir", tmp_path / "r",
            "--solver", "lda", "--budget", "120")
    table = pd.read_csv(board / "board.csv").set_index(["dataset", "method"])
    assert table.loc[("iris", "lda"), "status"] == "complete"


def test_a_changed_protocol_is_refused_until_superseded(small_board, tmp_path, capfd):
    _invoke("leaderboard", "--config", small_board, "--results-dir", tmp_path / "r",
            "--solver", "lda")
    board = tmp_path / "r" / "leaderboard_quick"
    old = pd.read_csv(board / "runs.csv")
    data = yaml.safe_load(small_board.read_text())
    data["split"]["seed"] = 1  # every task of the board changes
    small_board.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(main, ["leaderboard", "--config", str(small_board),
                                       "--results-dir", str(tmp_path / "r"), "--solver", "lda"])
    assert result.exit_code != 0
    child = capfd.readouterr().err  # the cell's run is a child process: its message is on fd 2
    assert "Rerun with --supersede" in child and "iris split 0 lda" in child
    assert "Traceback" not in result.output + child
    assert pd.read_csv(board / "runs.csv").equals(old)  # nothing run, nothing moved
    out = _invoke("leaderboard", "--config", small_board, "--results-dir", tmp_path / "r",
                  "--solver", "lda", "--supersede")
    assert "2 cells run" in out
    assert set(pd.read_csv(board / "runs_superseded.csv")["task_id"]) == set(old["task_id"])
    assert not set(pd.read_csv(board / "runs.csv")["task_id"]) & set(old["task_id"])


def test_notes_show_under_the_ranks_and_a_key_naming_nothing_is_one_line(small_board, tmp_path):
    data = yaml.safe_load(small_board.read_text())
    data["notes"] = {"wine/*": "a finding about wine, with its diagnosis"}
    small_board.write_text(yaml.safe_dump(data))
    _invoke("leaderboard", "--config", small_board, "--results-dir", tmp_path / "r",
            "--solver", "euclidean")
    md = (tmp_path / "r" / "leaderboard_quick" / "LEADERBOARD.md").read_text()
    assert "- `wine/*`: a finding about wine, with its diagnosis" in md
    assert md.index("wine/*") < md.index("## Significance")
    data["notes"] = {"wines/*": "typo"}
    small_board.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(main, ["leaderboard", "--config", str(small_board), "--stats-only",
                                       "--results-dir", str(tmp_path / "r")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "notes.wines/*: a note's key is <data set label>/<method label>" in result.output


def test_reproduction_page_links_to_the_leaderboard_page(tmp_path):
    from dml_bench.report.html import render_html
    from dml_bench.reproduction.report import _leaderboard_link

    assert _leaderboard_link(tmp_path) == []  # no board written: no link
    (tmp_path / "leaderboard").mkdir()
    (tmp_path / "leaderboard" / "leaderboard.html").write_text("<html></html>")
    page = render_html("\n".join(_leaderboard_link(tmp_path)), "dml-bench reproduction")
    assert '<a href="leaderboard/leaderboard.html">Leaderboard</a>' in page


def _page_targets(page: str) -> tuple[list[str], list[str], list[str]]:
    """The page's links (outside its contents), images and contents entries."""
    links = re.findall(r'<a href="([^"#][^"]*)"', page)
    return links, re.findall(r'<img src="([^"]+)"', page), re.findall(r'<a href="#([^"]+)"', page)


def test_the_board_page_links_only_its_own_files_and_shows_no_absolute_path(
        small_board, tmp_path, monkeypatch):
    """The board written into a folder given by its absolute path: its pages print no folder of
    the machine, every link and image names a file the board wrote (the reproduction report
    only once it is there), every section and table is in the contents with its anchor, the
    critical-difference diagram names the methods as the ranks table does and the time plot's
    legend stands beside its points."""
    from dml_bench.leaderboard import page as board_page

    data = yaml.safe_load(small_board.read_text())
    data["solvers"][1]["label"] = "LDA (Fisher)"
    small_board.write_text(yaml.safe_dump(data))
    figures = {}
    save = board_page.save_figure

    def keep(fig, out_dir, name, *args, **kw):
        fig.canvas.draw()
        figures[name] = {"texts": [t.get_text() for t in fig.texts + fig.axes[0].texts],
                         "legends": [lg.get_window_extent() for lg in fig.legends],
                         "axes": fig.axes[0].get_window_extent(), "figure": fig.bbox}
        return save(fig, out_dir, name, *args, **kw)

    monkeypatch.setattr(board_page, "save_figure", keep)
    results = tmp_path / "r"
    _invoke("leaderboard", "--config", small_board, "--results-dir", results)
    board = results / "leaderboard_quick"
    md, page = (board / "LEADERBOARD.md").read_text(), (board / "leaderboard.html").read_text()
    assert str(tmp_path) not in md and str(tmp_path) not in page
    assert "from `leaderboard_quick`" in md
    links, images, contents = _page_targets(page)
    assert images == ["figures/cd_diagram.png", "figures/time_error.png"] and links == []
    assert all((board / target).is_file() for target in links + images)
    assert {"protocol", "ranks", "table-ranks-table", "significance", "pairwise",
            "table-pairwise-table"} <= set(contents)
    assert all(f'id="{anchor}"' in page for anchor in contents)
    ranks = pd.read_csv(board / "ranks.csv")
    shown = [t.rsplit(" (", 1)[0] for t in figures["cd_diagram"]["texts"] if t.endswith(")")
             and not t.startswith("CD")]
    assert sorted(shown) == ["DML-eig", "Euclidean", "LDA (Fisher)"] and "LDA (Fisher)" in shown
    time_plot = figures["time_error"]
    assert len(time_plot["legends"]) == 1
    assert not time_plot["legends"][0].overlaps(time_plot["axes"])
    assert time_plot["legends"][0].x1 <= time_plot["figure"].x1 + 1
    # with the reproduction report written beside the board, the page links to it
    (results / "REPRODUCTION.html").write_text("<html></html>")
    _invoke("leaderboard", "--config", small_board, "--results-dir", results, "--stats-only")
    assert _page_targets((board / "leaderboard.html").read_text())[0] == ["../REPRODUCTION.html"]


def test_the_ranks_tex_and_pairwise_tex_have_captions(small_board, tmp_path):
    _invoke("leaderboard", "--config", small_board, "--results-dir", tmp_path / "r")
    board = tmp_path / "r" / "leaderboard_quick"
    for name, words in (("ranks.tex", "mean test error (\\%) over 3 random 70/30 training/test "
                                      "splits"),
                        ("pairwise.tex", "Wilcoxon signed-rank p-value")):
        lines = (board / name).read_text().splitlines()
        assert lines[:2] == ["\\begin{table}[htbp]", "\\centering"]
        assert lines[2].startswith("\\caption{") and words in lines[2], lines[2]
        assert lines[-1] == "\\end{table}"


def test_the_full_boards_ranks_table_fits_a_1400_pixel_window():
    """The ranks table of the committed board (every data set a column) in the page's smaller
    font for wide tables: its narrowest layout (headers broken after underscores, each column
    as wide as its widest word, in DejaVu Sans, wider than the sans-serifs browsers use) fits
    the page's 70 em column, well inside a 1400 px window; and a scrolling container holds it."""
    from matplotlib.textpath import TextPath

    from dml_bench.leaderboard.board import load_board
    from dml_bench.report.html import render_html

    exp = load_board(REPO / "configs" / "leaderboard.yaml").experiment
    header = ["method", "mean_rank", "n_ranked", *(d.label for d in exp.datasets)]
    rows = [[s.label, "12.31", "18", *(["n/a", "27.54"] * len(header))[:len(header) - 3]]
            for s in exp.solvers]
    markdown = "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
                         + ["| " + " | ".join(r) + " |" for r in rows])
    page = render_html(markdown, "board")
    assert '<div class="table-wrap" id="table-table"><table class="wide">' in page
    font, pad = map(int, re.search(r"table\.wide td,table\.wide th\{font-size:(\d+)%;"
                                   r"padding:\d+px (\d+)px\}", page).groups())
    px = 16 * font / 100  # the cells' font: a share of the page's 16 px

    def em(word):
        return TextPath((0, 0), word, size=1).get_extents().width

    widths = [max([em(w) for w in re.split(r"(?<=_)", h)] + [em(r[j]) for r in rows]) * px
              + 2 * pad + 1 for j, h in enumerate(header)]
    assert sum(widths) <= 70 * 16 < 1400, sum(widths)


def test_bad_input_is_one_line_not_a_traceback(tmp_path, write_yaml):
    config = REPO / "configs" / "leaderboard_quick.yaml"
    result = CliRunner().invoke(main, ["leaderboard", "--config", str(config), "--results-dir",
                                       str(tmp_path), "--dataset", "wines"])
    assert result.exit_code == 2 and "Did you mean 'wine'?" in result.output
    plain = write_yaml(REPO.joinpath("configs", "quickstart.yaml").read_text())
    result = CliRunner().invoke(main, ["leaderboard", "--config", str(plain)])
    assert result.exit_code == 2
    assert "leaderboard: a board config needs a `leaderboard:` mapping" in result.output
    assert "Traceback" not in result.output


def test_statistics_rank_finished_sets_only_with_missing_results_last():
    from dml_bench.leaderboard.stats import statistics

    def cell(d, m, status, error=np.nan, fit_time=np.nan):
        return {"dataset": d, "method": m, "status": status, "error": error,
                "fit_time": fit_time, "reason": ""}

    table = pd.DataFrame([
        cell("s1", "A", "complete", 1.0, 1.0), cell("s1", "B", "complete", 2.0, 0.1),
        cell("s1", "C", "over_budget"),
        cell("s2", "A", "complete", 3.0, 1.0), cell("s2", "B", "complete", 3.0, 0.1),
        cell("s2", "C", "complete", 1.0, 10.0),
        cell("s3", "A", "complete", 1.0, 1.0), cell("s3", "B", "pending"),
        cell("s3", "C", "complete", 0.0, 1.0),
    ])
    st = statistics(table)
    assert st.pending == [("s3", ["B"])] and list(st.errors.index) == ["s1", "s2"]
    # s1: A 1, B 2, C last (3); s2: C 1, A and B tied 2.5
    assert st.mean_ranks.to_dict() == {"A": 1.75, "B": 2.25, "C": 2.0}
    # Demšar (2006): CD = q_0.05 √(k(k+1)/(6N)) with q_0.05 = 2.343 for k = 3, here N = 2
    assert st.cd == pytest.approx(2.343 * np.sqrt(3 * 4 / (6 * 2)), abs=2e-3)
    te = st.time_error.set_index("method")
    # geometric-mean times over s1, s2: A 1, B 0.1, C 10 (s1 has none) -> front A and B
    assert te["fit_time"].to_dict() == pytest.approx({"A": 1.0, "B": 0.1, "C": 10.0})
    assert te["pareto"].to_dict() == {"A": True, "B": True, "C": False}


def test_scaling_diagnosis_rare_feature_share_against_dense_counts(benchmark_script):
    diagnosis = benchmark_script("diagnoses/leaderboard_scaling_diagnosis")
    rng = np.random.default_rng(5)
    X = rng.poisson(0.3, (12, 40)) * rng.uniform(0.5, 2.0, 40)
    dense_seen = (X != 0).sum(axis=0)
    rare = (dense_seen >= 1) & (dense_seen <= 2)
    share = np.nan_to_num((X[:, rare] ** 2).sum(axis=1) / (X ** 2).sum(axis=1))
    n_rare, got = diagnosis.rare_feature_share(scipy.sparse.csr_matrix(X))
    assert n_rare == rare.sum() and got == pytest.approx(share.mean(), rel=1e-12)


def test_class_collapse_basis_against_the_null_space_of_the_within_class_differences(
        benchmark_script):
    """More features than points: the directions in the span of the centred data on which every
    class is one point, found independently as w = X_cᵀa with a in the null space of W X_cᵀ (W the
    within-class differences); c − 1 of them, the same subspace."""
    diagnosis = benchmark_script("diagnoses/class_collapse_diagnosis")
    rng = np.random.default_rng(7)
    X = rng.normal(size=(15, 60))
    y = np.repeat([0, 1, 2], 5)
    basis, spread = diagnosis.collapse_basis(scipy.sparse.csr_matrix(X), y)
    Xc = X - X.mean(axis=0)
    W = X - np.stack([X[y == k].mean(axis=0) for k in range(3)])[y]
    # (a = 1 gives w = 0: the centred rows sum to zero; orth drops it)
    reference = scipy.linalg.orth(Xc.T @ scipy.linalg.null_space(W @ Xc.T))
    assert basis.shape == (60, 2) and reference.shape[1] == 2
    assert np.max(scipy.linalg.subspace_angles(basis, reference)) < 1e-8
    assert spread < 1e-12
    projected = X @ basis
    for k in range(3):
        assert np.ptp(projected[y == k], axis=0).max() < 1e-12


def test_experiment_of_reads_a_board_config_and_a_run_config(tmp_path):
    from dml_bench.experiment.schema import ConfigError
    from dml_bench.leaderboard.board import experiment_of

    assert experiment_of(REPO / "configs" / "leaderboard_quick.yaml").name == "leaderboard_quick"
    assert experiment_of(REPO / "configs" / "quickstart.yaml").name == "quickstart"
    with pytest.raises(ConfigError, match="file not found"):
        experiment_of(tmp_path / "missing.yaml")


def test_the_committed_board_gives_every_method_the_same_tuning_budget():
    # the declared protocol (3): 3-fold CV over at most 9 grid points, for every method
    from dml_bench.leaderboard.board import load_board

    board = load_board(REPO / "configs" / "leaderboard.yaml")
    for solver in board.experiment.solvers:
        if solver.tune:
            assert solver.tune.cv == 3, solver.label
            assert math.prod(len(values) for _, values in solver.tune.grid) <= 9, solver.label


def test_the_cells_log_is_never_written_through_a_symlink(tmp_path):
    from dml_bench.leaderboard.board import record_cell
    from dml_bench.run.results import UnsafeLog

    target = tmp_path / "elsewhere.csv"
    target.write_text("keep\n")
    board = tmp_path / "board"
    board.mkdir()
    (board / "cells.csv").symlink_to(target)
    with pytest.raises(UnsafeLog, match="cells.csv is a symbolic link"):
        record_cell(board, "wine", "lda", "over_budget", "a fit ran over", 600.0)
    assert target.read_text() == "keep\n"


def test_corrupt_lines_of_the_cells_log_are_ignored_with_one_warning(tmp_path, capsys):
    from dml_bench.leaderboard.board import read_cells, record_cell
    from dml_bench.run.budget import LandedRows

    board = tmp_path / "board"
    board.mkdir()
    record_cell(board, "wine", "lda", "over_budget", "a fit ran\nover", 600.0)
    with open(board / "cells.csv", "ab") as fh:
        fh.write(b"\xff\xfe\x00junk\n" + b"wine,lda,done,extra,field,x,y\n")
    record_cell(board, "iris", "lda", "cannot_run", "needs 9 GiB", 600.0)
    cells = read_cells(board)
    assert list(zip(cells["dataset"], cells["status"])) == [("wine", "over_budget"),
                                                            ("iris", "cannot_run")]
    assert cells["reason"].tolist() == ["a fit ran over", "needs 9 GiB"]  # one line each
    assert capsys.readouterr().err.count("corrupt line(s) ignored") == 1
    tail = LandedRows(board / "cells.csv")
    with open(board / "cells.csv", "ab") as fh:  # a watch reading binary junk goes on
        fh.write(b"\xff\x00\x01\n" + b"letter,nca,failed,,600.0,2026-01-01\n")
    assert [row["dataset"] for row in tail.new()] == ["letter"]


def test_cells_solved_in_the_span_of_the_points_are_recorded_and_named(tmp_path):
    """ITML from the identity prior solves in the span when the points are fewer than the
    features (digits, 56 training points of 64 pixels), not on iris, and not from another prior;
    Euclidean never does. The record is the learner's own rule, checked against fitted learners."""
    data = yaml.safe_load((REPO / "configs" / "leaderboard_quick.yaml").read_text())
    data["datasets"] = [{"name": "digits", "n_samples": 80, "normalize": "zscore"},
                        {"name": "iris"}]
    data["solvers"] = [{"name": "euclidean"}, {"name": "itml", "params": {"max_iter": 5}},
                       {"name": "itml", "label": "itml_cov",
                        "params": {"max_iter": 5, "prior": "covariance"}}]
    data["split"]["n_splits"] = 1
    data["execution"]["n_jobs"] = 1
    data.pop("notes", None)
    path = tmp_path / "board.yaml"
    path.write_text(yaml.safe_dump(data))
    _invoke("leaderboard", "--config", path, "--results-dir", tmp_path / "r")
    board = tmp_path / "r" / "leaderboard_quick"
    table = pd.read_csv(board / "board.csv").set_index(["dataset", "method"])
    assert table["solved_in_span"].to_dict() == {
        ("digits", "euclidean"): False, ("digits", "itml"): True, ("digits", "itml_cov"): False,
        ("iris", "euclidean"): False, ("iris", "itml"): False, ("iris", "itml_cov"): False}
    runs = pd.read_csv(board / "runs.csv")
    row = runs[(runs["dataset"] == "digits") & (runs["label"] == "itml")].iloc[0]
    X = np.random.default_rng(0).normal(size=(int(row["n_train"]), 64))
    fitted = ITML(max_iter=5).fit(X, np.arange(len(X)) % 3)
    assert fitted.span_dim_ is not None  # the fitted learner agrees with the record
    assert "Solved in the span of the training points" in (board / "LEADERBOARD.md").read_text()
    assert "digits × ITML." in (board / "LEADERBOARD.md").read_text()


def test_the_board_records_its_compute_as_the_sum_of_its_fits_wall_times(small_board, tmp_path):
    _invoke("leaderboard", "--config", small_board, "--results-dir", tmp_path / "r")
    board = tmp_path / "r" / "leaderboard_quick"
    runs = pd.read_csv(board / "runs.csv")
    table = pd.read_csv(board / "board.csv")
    assert table["final_seconds"].sum() == pytest.approx(runs["fit_time"].sum(), rel=1e-5)
    assert table["tuning_seconds"].sum() == pytest.approx(runs["tuning_time"].fillna(0).sum(),
                                                          rel=1e-5, abs=1e-6)
    hours = (runs["fit_time"].sum() + runs["tuning_time"].fillna(0).sum()) / 3600
    assert f"Compute recorded: {hours:.1f} h of fit wall time" in (
        board / "LEADERBOARD.md").read_text()


@pytest.mark.parametrize("status, reason, bound", [
    ("over_budget", OVER_BUDGET_REASON + " (1002 s on AMD EPYC)", "> 1002 s"),
    ("over_budget", OVER_BUDGET_REASON + " (no fit ended in 1200 s, data preparation included)",
     "> 1200 s"),
    ("over_budget", OVER_BUDGET_REASON, "> 600 s"),
    ("over_budget", "estimated: over budget on letter, which has no more points and features",
     "est. > 600 s"),
    ("cannot_run", "memory: an estimated 23.8 GB for n_train = 210, d = 20000 exceeds the 8 GB "
     "rule", "23.8 GB"),
    ("failed", "ValueError: x", ""),
])
def test_a_cell_without_a_result_shows_the_bound_that_decided_it(status, reason, bound):
    from dml_bench.leaderboard.board import cell_bound

    assert cell_bound(status, reason, 600.0) == bound


def test_the_board_page_shows_the_memory_estimate_beside_n_a(small_board, tmp_path):
    _invoke("leaderboard", "--config", small_board, "--results-dir", tmp_path / "r")
    board = tmp_path / "r" / "leaderboard_quick"
    table = pd.read_csv(board / "board.csv", keep_default_na=False).set_index(["dataset",
                                                                               "method"])
    # 8 d×d float64 matrices on iris (d = 4): 1024 B, 0.0 GB at one decimal
    assert table.loc[("iris", "dml_eig"), "bound"] == "0.0 GB"
    assert table.loc[("iris", "lda"), "bound"] == ""
    page = (board / "LEADERBOARD.md").read_text()
    assert "| n/a 0.0 GB |" in page
    assert "failed: the fit raised, … still to run." in page  # the legend, filled in


def test_the_span_record_follows_the_learner_s_cost_rule():
    from dml_bench.leaderboard.stats import solved_in_span

    row = {"solver": "sgd_incsvd", "solver_params": json.dumps({"max_iter": 500}),
           "n_train": 210, "n_features": 20_000}
    assert solved_in_span(row)
    # 5,000 points: the basis (n² = 2.5e7) costs more than 500 iterations of 100 triplets save
    assert not solved_in_span({**row, "n_train": 5_000, "n_features": 60_000})
    assert not solved_in_span({**row, "n_train": 30_000, "n_features": 20_000})


def test_xing_projection_diagnosis_counts_every_eigendecomposition(benchmark_script, monkeypatch):
    """Per-cycle rows of both routes: the exact route's eigendecompositions, summed over its
    cycles, are the calls of the eigensolver it makes (counted here, less the one of X_S's
    whitener), and the cycles' seconds add up to the last cycle's end."""
    from problems import random_pair_problem

    import dml_bench.solvers.xing as xing

    diagnosis = benchmark_script("diagnoses/xing_projection_diagnosis")
    X, constraints = random_pair_problem(3, d=5, n=25, n_similar=20, n_dissimilar=30)
    calls = []
    real = xing.eigh_all
    monkeypatch.setattr(xing, "eigh_all", lambda S: calls.append(1) or real(S))
    exact = pd.DataFrame(diagnosis.fit_rows(X, None, constraints,
                                            {"projection": "exact", "max_iter": 15}, "toy", 0))
    assert len(exact) == 15 and exact.eigendecompositions.sum() == len(calls) - 1
    assert exact.cycle_seconds.sum() == pytest.approx(exact.elapsed_seconds.iloc[-1])
    alternating = pd.DataFrame(diagnosis.fit_rows(X, None, constraints,
                                                  {"projection": "alternating", "max_iter": 4},
                                                  "toy", 0))
    assert list(alternating.cycle) == [1, 2, 3, 4] and (alternating.eigendecompositions >= 1).all()


def test_eigen_route_matrix_free_vertex_is_the_top_eigenvector(benchmark_script):
    """The diagnosis's matrix-free vertex is the top eigenvector of ``Σ_r w_r z_r z_rᵀ`` summed
    pair by pair (numpy's ``eigh``), for signed weights with some below the threshold, on a shape
    where :class:`GramTopEigenvector` takes its pair-Laplacian branch."""
    from dml_bench.solvers.top_eigen import GramTopEigenvector

    diagnosis = benchmark_script("diagnoses/eigen_route")
    rng = np.random.default_rng(3)
    X = rng.standard_normal((60, 40))
    pairs = np.array([(a, b) for a in range(60) for b in range(a + 1, 60)])[::3]
    w = rng.standard_normal(len(pairs))
    w[::7] = 1e-14  # left out, as the formed route leaves them out
    vertex = GramTopEigenvector(X, pairs, 1e-12, signed=True)
    assert vertex._laplacian is not None
    Z = X[pairs[:, 0]] - X[pairs[:, 1]]
    kept = np.abs(w) >= 1e-12 * np.abs(w).max()
    lams, V = np.linalg.eigh((Z[kept] * w[kept, None]).T @ Z[kept])
    free = diagnosis.matrix_free_vertex(vertex, w, None)
    assert free["lam"] == pytest.approx(lams[-1], rel=1e-9)
    assert abs(free["v"] @ V[:, -1]) == pytest.approx(1.0, abs=1e-8)
    assert free["products"] >= 1


def test_diagnosis_logs_replace_the_rows_of_the_same_key(benchmark_script, tmp_path):
    """A rerun's rows replace those of the same key (compared as text) and keep the others'
    text as written; a new column is empty in the older rows."""
    recheck = benchmark_script("diagnoses/budget_recheck")
    path = tmp_path / "log.csv"
    path.write_text("dataset,split,seconds\nwine,0,0.10\nwine,1,\niris,0,3\n")
    recheck.replace_rows(path, pd.DataFrame({"dataset": ["wine"], "split": [1], "seconds": [2.5],
                                             "note": ["again"]}), ["dataset", "split"])
    assert path.read_text().splitlines() == [
        "dataset,split,seconds,note", "wine,0,0.10,", "iris,0,3,", "wine,1,2.5,again"]
    recheck.replace_rows(tmp_path / "new" / "log.csv", pd.DataFrame({"a": [1]}), ["a"])
    assert (tmp_path / "new" / "log.csv").read_text() == "a\n1\n"
