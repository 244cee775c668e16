"""SDML against an independent convex solver (cvxpy) on the paper's ℓ1-penalised log-det problem,
its optimality facts (the dual bound, the diagonal solution for a large λ, λ = 0), the refusals,
a 3-NN sanity check on wine and scikit-learn's estimator checks.

Also the helpers the LSML and SCML tests share: the wine 3-NN comparison and one
``parametrize_with_checks`` case run as the project's harness runs it.
"""

import json
import os
import pickle
import subprocess
import sys
import warnings

import cvxpy as cp
import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks
from test_sklearn_checks import RUN_CHECKS, needs_array_api_mode

from dml_bench.constraints import Constraints
from dml_bench.solvers.sdml import SDML
from problems import diffs, random_pair_problem

NO_TRIPLETS = np.zeros((0, 3), dtype=int)


def signed_scatter(X, c):
    """``Σ_S d dᵀ − Σ_D d dᵀ`` written out pair by pair (the K = XᵀLX of the signed graph)."""
    K = np.zeros((X.shape[1], X.shape[1]))
    for pairs, sign in ((c.similar, 1.0), (c.dissimilar, -1.0)):
        for v in diffs(X, pairs):
            K += sign * np.outer(v, v)
    return K


def cvx_sdml(P, lam):
    """argmin over M ≻ 0 of tr(P M) − log det M + λ Σ_{i≠j} |M_ij| (Clarabel), and the optimum."""
    d = len(P)
    M = cp.Variable((d, d), PSD=True)
    off = cp.sum(cp.abs(cp.multiply(1 - np.eye(d), M)))
    problem = cp.Problem(cp.Minimize(cp.trace(P @ M) - cp.log_det(M) + lam * off))
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert problem.status == "optimal"
    return M.value, problem.value


def precise(**params):
    return SDML(tol=1e-10, max_iter=1000, **params)


@pytest.mark.parametrize("seed,lam,prior", [(0, 0.05, "identity"), (1, 0.2, "identity"),
                                            (2, 0.02, "covariance"), (3, 0.5, "identity")])
def test_reaches_the_cvxpy_optimum(seed, lam, prior):
    X, c = random_pair_problem(seed, d=4, n=12, n_similar=10, n_dissimilar=8)
    model = precise(sparsity_param=lam, prior=prior).fit(X, constraints=c)
    Xc = X - X.mean(axis=0)
    A = np.eye(4) if prior == "identity" else Xc.T @ Xc / len(X)
    P = A + model.balance_ * signed_scatter(X, c)
    M_ref, best = cvx_sdml(P, lam)
    np.testing.assert_allclose(model.metric_, M_ref, rtol=1e-4, atol=1e-5 * np.abs(M_ref).max())
    assert model.objective_ == pytest.approx(best, rel=1e-7, abs=1e-7)
    # the dual bound is a certificate: objective − optimum ≤ gap, and tiny at this tolerance
    assert model.objective_ - best <= model.duality_gap_ + 1e-8
    assert model.optimality_ < 1e-6
    np.testing.assert_allclose(model.components_.T @ model.components_, model.metric_,
                               atol=1e-10)


def test_balance_bound_is_where_p_stops_being_positive_definite():
    X, c = random_pair_problem(4, d=4, n=12, n_similar=6, n_dissimilar=12)
    K = signed_scatter(X, c)
    model = SDML().fit(X, constraints=c)
    eta_max = model.balance_max_
    assert np.isfinite(eta_max)
    assert np.linalg.eigvalsh(np.eye(4) + 0.999 * eta_max * K)[0] > 0
    assert np.linalg.eigvalsh(np.eye(4) + 1.001 * eta_max * K)[0] < 0
    assert model.balance_ == pytest.approx(min(1.0, eta_max / 2))
    with pytest.raises(ValueError) as info:
        SDML(balance_param=1.01 * eta_max).fit(X, constraints=c)
    message = str(info.value)
    assert "\n" not in message and "balance_param" in message and f"{eta_max:.4g}" in message
    assert "balance_param='auto'" in message
    with warnings.catch_warnings():  # P is nearly singular there: slow, which is not the point
        warnings.simplefilter("ignore", ConvergenceWarning)
        near = SDML(balance_param=0.99 * eta_max).fit(X, constraints=c)
    assert near.balance_ == 0.99 * eta_max


def test_only_similar_pairs_have_no_balance_bound():
    X, c = random_pair_problem(5, d=3, n=10, n_similar=8, n_dissimilar=0)
    c = Constraints(c.similar, np.zeros((0, 2), dtype=int), NO_TRIPLETS)
    model = SDML().fit(X, constraints=c)
    assert model.balance_max_ == np.inf and model.balance_ == 1.0


def test_zero_sparsity_gives_the_inverse_of_p_and_large_sparsity_a_diagonal_metric():
    """λ = 0: M = P⁻¹. λ ≥ max_{i≠j} |P_ij|: M = diag(1/P_ii) (W = diag P is then dual feasible
    and M = W⁻¹, so the gap is 0)."""
    X, c = random_pair_problem(6, d=4, n=12, n_similar=10, n_dissimilar=8)
    model = precise(sparsity_param=0.0).fit(X, constraints=c)
    P = np.eye(4) + model.balance_ * signed_scatter(X, c)
    np.testing.assert_allclose(model.metric_, np.linalg.inv(P), rtol=1e-10)
    lam = np.abs(P - np.diag(np.diag(P))).max() * 1.01
    model = precise(sparsity_param=lam).fit(X, constraints=c)
    np.testing.assert_allclose(model.metric_, np.diag(1 / np.diag(P)), rtol=1e-8, atol=1e-12)
    assert model.duality_gap_ < 1e-10


def test_refuses_triplets_only_and_a_singular_covariance_prior_in_one_line():
    X, _ = random_pair_problem(7)
    only_triplets = Constraints(np.zeros((0, 2), dtype=int), np.zeros((0, 2), dtype=int),
                                np.array([[0, 1, 2], [3, 4, 5]]))
    with pytest.raises(ValueError, match="^SDML needs similar or dissimilar pairs; got only "
                                         "triplets$"):
        SDML().fit(X, constraints=only_triplets)
    wide = np.random.default_rng(0).normal(size=(5, 8))  # n < d: singular covariance
    pairs = Constraints(np.array([[0, 1]]), np.array([[2, 3]]), NO_TRIPLETS)
    with pytest.raises(ValueError, match="^SDML: prior='covariance' needs a nonsingular "
                                         "covariance of X .*; use prior='identity'$"):
        SDML(prior="covariance").fit(wide, constraints=pairs)


def test_every_parameter_is_declared_and_checked():
    check_parameter_constraints(SDML, {"balance_param": -1.0, "sparsity_param": -0.1,
                                       "prior": "bogus", "tol": 0.0, "max_iter": 0})


def check_parameter_constraints(cls, bad_values):
    """``_parameter_constraints`` covers exactly the constructor's parameters, the defaults pass
    it, and each value of ``bad_values`` is refused by scikit-learn's validation."""
    model = cls()
    assert set(cls._parameter_constraints) == set(model.get_params())
    model._validate_params()
    for name, value in bad_values.items():
        with pytest.raises(InvalidParameterError, match=f"The '{name}' parameter of "
                                                        f"{cls.__name__} must be"):
            cls(**{name: value})._validate_params()


def wine_knn_errors(make_model, seeds=(0, 1, 2)):
    """Mean 3-NN test error on z-scored wine (70/30 stratified splits): Euclidean, learned."""
    X, y = load_wine(return_X_y=True)
    errors = []
    for seed in seeds:
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)
        scaler = StandardScaler().fit(Xtr)
        Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = make_model().fit(Xtr, ytr)
        knn = KNeighborsClassifier(n_neighbors=3)
        errors.append((1 - knn.fit(Xtr, ytr).score(Xte, yte),
                       1 - knn.fit(model.transform(Xtr), ytr).score(model.transform(Xte), yte)))
    return np.mean(errors, axis=0)


def test_lowers_the_3nn_error_on_wine():
    euclidean, learned = wine_knn_errors(SDML)
    assert learned < euclidean


def run_estimator_check(estimator, check):
    """A ``parametrize_with_checks`` case as ``test_sklearn_checks`` runs it: the array-API
    check in a subprocess with ``SCIPY_ARRAY_API=1`` (without it, it would skip itself)."""
    if not needs_array_api_mode(check):
        check(estimator)
        return
    done = subprocess.run([sys.executable, "-c", RUN_CHECKS], check=False,
                          input=pickle.dumps([(estimator, check)]), capture_output=True,
                          env={**os.environ, "SCIPY_ARRAY_API": "1"})
    assert done.returncode == 0, done.stderr.decode()
    failure = json.loads(done.stdout.decode().splitlines()[-1])[type(estimator).__name__]
    assert failure is None, failure


@parametrize_with_checks([SDML()])
def test_scikit_learn_estimator_checks(estimator, check):
    run_estimator_check(estimator, check)
