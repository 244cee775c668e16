"""Shen et al. (2010) Fig. 2 experiment: the interior-point comparator solves the same Eq. (8).

References recomputed here: Eq. (8) with the Huber loss (16) written out piecewise on dense A_r
matrices (Eq. (5)), the best ρ by a bounded scalar search, and the optimum bracketed by SDPMetric's
Frank-Wolfe certificate ``f_t ≤ max f ≤ f_t + gap_t`` (a different algorithm from the conic
solver). No timing is asserted.
"""

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize_scalar

from dml_bench.reproduction.studies.sdpmetric_timing import (
    eq8_objective, interior_point_sdpmetric, random_triplets, run_sdpmetric_timing)
from dml_bench.solvers.sdpmetric import SDPMetric

cp = pytest.importorskip("cvxpy")
C, H = 0.1, 0.5


def dense_objective(X, triplets, M, rho):
    """f(M, ρ) of Eq. (8): ρ − C Σ_r λ(⟨A_r, M⟩ − ρ), λ of Eq. (16) case by case."""
    total = 0.0
    for i, j, k in triplets:
        a, b = X[i] - X[k], X[i] - X[j]
        z = np.sum((np.outer(a, a) - np.outer(b, b)) * M) - rho
        total += 0.0 if z >= H else (-z if z <= -H else (H - z) ** 2 / (4 * H))
    return rho - C * total


def best_value(X, triplets, M):
    res = minimize_scalar(lambda r: -dense_objective(X, triplets, M, r), bounds=(-20, 20),
                          method="bounded", options={"xatol": 1e-12})
    return -res.fun


def test_random_triplets_are_disjoint_standard_normal_points():
    X, cons = random_triplets(7, n_triplets=50, seed=3)
    assert X.shape == (150, 7)
    assert sorted(cons.triplets.ravel()) == list(range(150))  # each point in one triplet
    assert len(cons.similar) == len(cons.dissimilar) == 0
    np.testing.assert_array_equal(X, random_triplets(7, n_triplets=50, seed=3)[0])


def test_eq8_objective_matches_the_paper_with_the_best_rho():
    X, cons = random_triplets(4, n_triplets=25, seed=1)
    rng = np.random.default_rng(0)
    G = rng.normal(size=(4, 4))
    M = G @ G.T / np.trace(G @ G.T)
    f, rho = eq8_objective(X, cons.triplets, M, C, H)
    assert f == pytest.approx(dense_objective(X, cons.triplets, M, rho), rel=1e-12)
    assert f == pytest.approx(best_value(X, cons.triplets, M), rel=1e-9)


def test_interior_point_reaches_the_optimum_certified_by_sdpmetric():
    X, cons = random_triplets(3, n_triplets=30, seed=0)  # converges in a few hundred steps
    model = SDPMetric(loss="huber", C=C, h=H, tol=1e-4, max_iter=5000).fit(X, constraints=cons)
    assert model.converged_
    f_sdp = dense_objective(X, cons.triplets, model.metric_, model.rho_)
    gap = model.trace_["gap"][-1]
    assert gap <= 1e-4 * abs(f_sdp)  # a tight bracket: f_sdp ≤ max f ≤ f_sdp + gap
    M, seconds, info = interior_point_sdpmetric(X, cons.triplets, C, H)
    assert info["status"] == "optimal" and seconds > 0
    # feasible: trace one, PSD (to Clarabel's feasibility tolerance 1e-8)
    assert np.trace(M) == pytest.approx(1.0, abs=1e-7)
    assert np.linalg.eigvalsh(M).min() >= -1e-7
    f_ip = best_value(X, cons.triplets, M)
    assert eq8_objective(X, cons.triplets, M, C, H)[0] == pytest.approx(f_ip, rel=1e-9)
    # Clarabel's default relative duality gap is 1e-8: its value sits in the certified bracket
    slack = 1e-6 * abs(f_sdp)
    assert f_sdp - slack <= f_ip <= f_sdp + gap + slack
    assert info["value"] == pytest.approx(f_ip, rel=1e-6)


def test_run_keeps_and_marks_a_solve_over_the_time_limit(tmp_path):
    out = run_sdpmetric_timing(tmp_path, dims=(3, 5), n_triplets=20, max_iter=200,
                               time_limit=1e-6, accuracies=(1e-2,))
    for key in ("times_csv", "fig2_png", "fig2_pdf"):
        assert out[key].exists() and out[key].stat().st_size > 0, key
    times = pd.read_csv(out["times_csv"])
    assert set(zip(times["d"], times["method"])) == {
        (d, m) for d in (3, 5) for m in ("SDPMetric-H", "cvxpy/Clarabel")}
    ip = times[times["method"] == "cvxpy/Clarabel"]
    assert ip["over_limit"].all()  # marked, not dropped
    assert not times.loc[times["method"] == "SDPMetric-H", "over_limit"].any()
    assert {"seconds_to_0.01", "rel_objective_diff", "ip_over_sdpmetric"} <= set(times.columns)
