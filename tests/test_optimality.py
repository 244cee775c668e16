"""``optimality_`` / ``optimality_measure``: every solver says how far from optimal it stopped, the
duality gaps are recomputed independently at the returned metric, and ``runs.csv`` records both
(old files without the columns still resume)."""

import warnings

import cvxpy as cp
import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning

from dml_bench.constraints import knn_triplets
from dml_bench.run.results import RUN_COLUMNS
from dml_bench.solvers import SOLVERS, DMLEig, FrobMetric, SDPMetric, Xing
from problems import diffs, random_pair_problem
from test_runner import experiment, planned_ids, quiet_run, runs_of
from test_solver_contract import QUICK

pytestmark = pytest.mark.usefixtures("tmp_cache")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (20, 5)), rng.normal(0.7, 1, (20, 5))])
    return X, np.repeat([0, 1], 20)


def quiet_fit(model, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(*args, **kw)


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_every_solver_reports_its_optimality(name, data):
    if name == "mdml" and not hasattr(SOLVERS[name], "optimality_measure"):
        pytest.skip("MDML gets optimality_ with its eigen-update rewrite")
    model = quiet_fit(SOLVERS[name](**QUICK.get(name, {})), *data)
    measure, value = type(model).optimality_measure, model.optimality_
    assert isinstance(measure, str) and measure and isinstance(value, float)
    if measure == "closed_form":
        assert value == 0.0
    elif measure.startswith("none"):
        assert np.isnan(value)
    else:
        assert np.isfinite(value) and value >= 0


def smoothed_min(q, mu):
    """``f_μ = −μ ln Σ exp(−q/μ)`` and its softmax weights, written out independently."""
    e = np.exp(-(q - q.min()) / mu)
    return q.min() - mu * np.log(e.sum()), e / e.sum()


@pytest.mark.parametrize("max_iter", [3, 1000])
def test_dml_eig_gap_is_the_papers_gap_at_the_returned_metric(max_iter):
    X, cons = random_pair_problem(1)
    mu = 1e-2
    model = quiet_fit(DMLEig(mu=mu, max_iter=max_iter, tol=1e-3), X, constraints=cons)
    assert model.converged_ == (max_iter == 1000)
    XS = diffs(X, cons.similar).T @ diffs(X, cons.similar)
    d = len(XS)
    L = np.linalg.cholesky(XS + 1e-2 * np.trace(XS) / d * np.eye(d))  # default relative ridge
    Z = np.linalg.solve(L, diffs(X, cons.dissimilar).T).T
    S = L.T @ model.metric_ @ L  # M = L⁻ᵀ S L⁻¹, S in the spectrahedron
    assert np.trace(S) == pytest.approx(1.0)
    f_mu, w = smoothed_min(np.einsum("ij,jk,ik->i", Z, S, Z), mu)
    grad = Z.T @ (w[:, None] * Z)
    gap = np.linalg.eigvalsh(grad)[-1] - np.vdot(grad, S)
    assert model.optimality_ == pytest.approx(gap / abs(f_mu), rel=1e-6, abs=1e-12)
    # and it bounds the true sub-optimality of f_μ (cvxpy's optimum of Eq. (19))
    Sv = cp.Variable((d, d), PSD=True)
    q = cp.sum(cp.multiply(Z @ Sv, Z), axis=1)
    best = cp.Problem(cp.Maximize(-mu * cp.log_sum_exp(-q / mu)), [cp.trace(Sv) == 1]).solve(
        solver=cp.CLARABEL)
    assert best - f_mu <= gap + 1e-6


def test_frobmetric_gap_is_primal_minus_dual_at_the_returned_point(data):
    X, y = data
    T = knn_triplets(X, y, k=2)
    model = quiet_fit(FrobMetric(max_iter=5), X, constraints=T)
    a, b = X[T.triplets[:, 0]] - X[T.triplets[:, 2]], X[T.triplets[:, 0]] - X[T.triplets[:, 1]]
    A = np.einsum("ri,rj->rij", a, a) - np.einsum("ri,rj->rij", b, b)
    M, u, c = model.metric_, model.dual_coef_, 1.0 / len(A)
    primal = 0.5 * np.vdot(M, M) + c * np.maximum(0, 1 - np.einsum("rij,ij->r", A, M)).sum()
    lam = np.linalg.eigvalsh(np.einsum("r,rij->ij", u, A))
    dual = u.sum() - 0.5 * np.sum(np.maximum(lam, 0) ** 2)
    assert model.optimality_ == pytest.approx((primal - dual) / primal, rel=1e-6)


def test_sdpmetric_gap_is_the_frank_wolfe_gap_at_the_returned_metric(data):
    X, y = data
    T = knn_triplets(X, y, k=2)
    model = quiet_fit(SDPMetric(max_iter=5, C=0.1), X, constraints=T)
    a, b = X[T.triplets[:, 0]] - X[T.triplets[:, 2]], X[T.triplets[:, 0]] - X[T.triplets[:, 1]]
    A = np.einsum("ri,rj->rij", a, a) - np.einsum("ri,rj->rij", b, b)
    m = np.einsum("rij,ij->r", A, model.metric_)
    c = 2 * 0.1 * np.maximum(model.rho_ - m, 0)  # −C λ′(m − ρ) of the squared hinge
    grad = np.einsum("r,rij->ij", c, A)
    gap = np.linalg.eigvalsh(grad)[-1] - c @ m
    assert model.optimality_ == pytest.approx(gap / abs(model.objective_), rel=1e-6)


def test_xing_gap_is_the_frank_wolfe_gap_at_the_returned_metric():
    X, cons = random_pair_problem(2)
    model = quiet_fit(Xing(max_iter=5), X, constraints=cons)
    XS = diffs(X, cons.similar).T @ diffs(X, cons.similar)
    D = diffs(X, cons.dissimilar)
    dist = np.sqrt(np.einsum("ij,jk,ik->i", D, model.metric_, D))
    grad = (D / (2 * dist[:, None])).T @ D  # ∇g(M) = Σ X_τ / (2 d_τ)
    s, U = np.linalg.eigh(XS)
    W = U / np.sqrt(s)  # X_S^{-1/2} up to a rotation
    gap = np.linalg.eigvalsh(W.T @ grad @ W)[-1] - dist.sum() / 2
    assert model.optimality_ == pytest.approx(gap / dist.sum(), rel=1e-6)


def test_runs_csv_records_optimality_and_old_files_resume(tmp_path):
    exp = experiment(split={"n_splits": 1},
                     execution={"n_jobs": 1, "backend": "sequential"})
    ids = planned_ids(exp)
    quiet_run(exp, tmp_path)
    runs = runs_of(tmp_path)
    assert list(runs.columns) == RUN_COLUMNS
    assert RUN_COLUMNS.index("optimality") == RUN_COLUMNS.index("converged") + 1
    by_solver = runs.set_index("solver")
    assert (by_solver.loc["euclidean", "optimality"] == 0).all()
    assert set(by_solver.loc["dml_eig", "optimality_measure"]) == {"relative_duality_gap"}
    assert (by_solver.loc["dml_eig", "optimality"] > 0).all()  # 50 iterations: not finished
    # a runs.csv of an older version: without the two columns and with one task still to run
    old = runs[runs["task_id"] != ids[-1]].drop(columns=["optimality", "optimality_measure"])
    runs_csv = tmp_path / "quick" / "runs.csv"
    old.to_csv(runs_csv, index=False)
    summary, _ = quiet_run(exp, tmp_path)
    assert (summary.ran, summary.done_before) == (1, len(ids) - 1)
    resumed = runs_of(tmp_path)
    assert list(resumed.columns) == RUN_COLUMNS and sorted(resumed["task_id"]) == sorted(ids)
    earlier = resumed["task_id"] != ids[-1]
    assert resumed.loc[earlier, ["optimality", "optimality_measure"]].isna().all().all()
    assert resumed.loc[~earlier, "optimality_measure"].notna().all()
    pd.testing.assert_frame_equal(resumed[earlier].drop(columns=["optimality",
                                                                 "optimality_measure"]),
                                  old.reset_index(drop=True), check_exact=True)
