"""The ``dtype: float32`` option (issue #21 item 5): preprocessing, the estimator contract, and
DML-eig's optimality certified in double precision when its passes over the pairs run in single."""

import warnings

import cvxpy as cp
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from dml_bench.cli import main
from dml_bench.experiment.config import load_config
from dml_bench.constraints import knn_triplets
from dml_bench.preprocess import Preprocessing
from dml_bench.solvers import SOLVERS, DMLEig
from dml_bench.solvers.base import MetricLearner
from dml_bench.experiment.knn import all_tasks

EPS32 = np.finfo(np.float32).eps


def test_preprocessing_casts_last_and_keeps_old_records():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 4))
    a, b = Preprocessing(normalize="zscore", dtype="float32").apply(X[:15], X[15:])
    assert a.dtype == b.dtype == np.float32
    ref = (X - X[:15].mean(0)) / X[:15].std(0)
    np.testing.assert_allclose(b, ref[15:], rtol=10 * EPS32)
    assert "dtype" not in Preprocessing().to_dict()  # float64 records look as before the option
    assert Preprocessing(dtype="float32").to_dict()["dtype"] == "float32"
    with pytest.raises(ValueError, match="dtype must be one of"):
        Preprocessing(dtype="float16")


def test_task_ids_of_committed_runs_are_unchanged():
    """The option must not re-key the committed results: every committed row is a task of the
    config (a row still to be run, such as a long cell in progress, is no re-keying)."""
    exp = load_config("configs/ying2012_table4.yaml")
    runs = set(pd.read_csv("results/ying2012_table4/runs.csv")["task_id"])
    assert runs and runs <= {t.task_id for t in all_tasks(exp)}


def test_config_rejects_an_unknown_dtype_in_one_line(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("name: t\ndatasets: [{name: wine, dtype: float16}]\nsolvers: [euclidean]\n")
    res = CliRunner().invoke(main, ["run", str(cfg), "--results-dir", str(tmp_path)])
    assert res.exit_code == 2
    assert "datasets[0].dtype: must be one of float64, float32" in res.stderr
    assert "Traceback" not in res.output + res.stderr


@pytest.mark.parametrize("name", sorted(n for n, c in SOLVERS.items()
                                         if issubclass(c, MetricLearner)))
def test_transform_dtype_follows_preserves_float32(name):
    """float32 stays float32 through the solvers that declare it, others compute in float64
    (scikit-learn's ``preserves_dtype`` tag says which)."""
    cls = SOLVERS[name]
    est = cls()
    assert est.__sklearn_tags__().transformer_tags.preserves_dtype == (
        ["float64", "float32"] if cls.preserves_float32 else ["float64"])


def test_dml_eig_float32_fit_transforms_to_float32():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 5)).astype(np.float32)
    y = np.repeat([0, 1], 20)
    X[y == 1, 0] += 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 50 iterations: not converged, which is not the point
        model = DMLEig(max_iter=50).fit(X, y)
    assert model.transform(X).dtype == np.float32
    assert model.metric_.dtype == np.float64


def test_dml_eig_float32_reaches_the_double_precision_optimum():
    """With Z in float32, the returned metric's f_μ — evaluated in float64 from the data — is
    within tol·|f_μ| of cvxpy's optimum of Eq. (19), up to the float32 rounding of q
    (|Δq_τ| ≤ 4 d ε₃₂ max q, which moves f_μ, a soft minimum of q, by at most as much)."""
    rng = np.random.default_rng(2)
    n, d, mu, tol = 30, 4, 1e-2, 1e-3
    X = rng.normal(size=(n, d))
    y = np.repeat([0, 1, 2], 10)
    X[:, 0] += y
    cons = knn_triplets(X, y, k=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DMLEig(mu=mu, tol=tol, max_iter=5000).fit(X.astype(np.float32), y,
                                                          constraints=cons)
    assert model.converged_
    sim = X[cons.similar[:, 0]] - X[cons.similar[:, 1]]
    XS = sim.T @ sim
    L = np.linalg.cholesky(XS + 1e-2 * np.trace(XS) / d * np.eye(d))  # default relative ridge
    Z = np.linalg.solve(L, (X[cons.dissimilar[:, 0]] - X[cons.dissimilar[:, 1]]).T).T
    S = L.T @ model.metric_ @ L
    q = np.einsum("ij,jk,ik->i", Z, S, Z)
    f_mu = q.min() - mu * np.log(np.exp(-(q - q.min()) / mu).sum())
    Sv = cp.Variable((d, d), PSD=True)
    qv = cp.sum(cp.multiply(Z @ Sv, Z), axis=1)
    best = cp.Problem(cp.Maximize(-mu * cp.log_sum_exp(-qv / mu)), [cp.trace(Sv) == 1]).solve(
        solver=cp.CLARABEL)
    assert best - f_mu <= tol * abs(f_mu) + 4 * d * EPS32 * q.max() + 1e-7  # + cvxpy's accuracy
