"""The direct L-BFGS-B driver against ``scipy.optimize.minimize(method="L-BFGS-B")``.

The driver must visit the very iterates of scipy's own loop (same compiled routine, same calls),
so every comparison here is exact: iterates, values, iteration and evaluation counts, status and
message.
"""

import numpy as np
import pytest
import scipy
from scipy.optimize import Bounds, minimize
from threadpoolctl import threadpool_limits

from dml_bench.constraints import Constraints
from dml_bench.solvers import lbfgsb
from dml_bench.solvers.frobmetric import FrobMetric, solve_frobenius_sdp
from dml_bench.solvers.lbfgsb import direct_available, minimize_box

#: The path under test: the direct driver where this scipy has the routine it was written for
#: (scipy 1.15–1.17), else the fallback, which these tests then check against itself.
DIRECT = direct_available()


def quadratic(n, seed=0):
    """½ xᵀQx − bᵀx with Q positive definite, and value-and-gradient."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, n))
    Q = A @ A.T / n + np.eye(n)
    b = rng.normal(size=n) * 3

    def fun(x):
        Qx = Q @ x
        return 0.5 * x @ Qx - b @ x, Qx - b
    return fun


def mixed_bounds(n):
    """A quarter free, a quarter lower-only, a quarter boxed and a quarter upper-only."""
    lower = np.tile([-np.inf, -0.5, -0.2, -np.inf], n // 4)
    upper = np.tile([np.inf, np.inf, 0.3, 0.4], n // 4)
    return lower, upper


def run(direct, fun, x0, lower, upper, stop_at=None, **options):
    iterates = []

    def callback(intermediate_result):
        iterates.append(intermediate_result.x.copy())
        if stop_at is not None and len(iterates) >= stop_at:
            raise StopIteration
    res = minimize_box(fun, x0, lower, upper, callback=callback, direct=direct, **options)
    return res, np.array(iterates)


def assert_same_run(a, b):
    (ra, ia), (rb, ib) = a, b
    np.testing.assert_array_equal(ia, ib)
    np.testing.assert_array_equal(ra.x, rb.x)
    assert ra.fun == rb.fun
    assert (ra.nit, ra.nfev, ra.status, ra.success) == (rb.nit, rb.nfev, rb.status, rb.success)
    assert ra.message == rb.message


@pytest.mark.parametrize("options", [{}, {"maxiter": 7}, {"maxcor": 3, "gtol": 0.0, "ftol": 0.0},
                                     {"maxfun": 5}])
def test_direct_loop_is_scipys_loop_bit_for_bit(options):
    n = 40
    fun = quadratic(n)
    lower, upper = mixed_bounds(n)
    x0 = np.linspace(-1, 1, n)  # partly outside the box: both clip it first
    assert_same_run(run(DIRECT, fun, x0, lower, upper, **options),
                    run(False, fun, x0, lower, upper, **options))


def test_a_callback_that_stops_ends_both_at_the_same_iterate():
    fun = quadratic(24, seed=1)
    runs = [run(direct, fun, np.zeros(24), 0.0, 1.0, stop_at=4) for direct in (DIRECT, False)]
    assert len(runs[0][1]) == 4
    assert_same_run(*runs)


def test_direct_path_reaches_the_same_box_optimum_as_scipy_minimize_itself():
    """The reference here is scipy's public call, not the driver's fallback branch."""
    n = 32
    fun = quadratic(n, seed=2)
    lower, upper = mixed_bounds(n)
    res = minimize_box(fun, np.zeros(n), lower, upper, direct=DIRECT)
    ref = minimize(fun, np.zeros(n), jac=True, method="L-BFGS-B", bounds=Bounds(lower, upper))
    np.testing.assert_array_equal(res.x, ref.x)
    assert res.nit == ref.nit and res.status == ref.status == 0


def test_the_direct_driver_is_used_by_the_scipy_versions_it_was_written_for():
    """scipy 1.15–1.17 have the C routine and signature the driver calls (read from their
    sources); older ones the Fortran routine, with another signature, so minimize is called."""
    version = tuple(int(p) for p in scipy.__version__.split(".")[:2])
    if (1, 15) <= version <= (1, 17):
        assert DIRECT
    elif version < (1, 15):
        assert not DIRECT


@pytest.mark.parametrize("direct", [DIRECT, False])
def test_inverted_bounds_are_refused_with_one_message_on_either_path(direct):
    with pytest.raises(ValueError, match="lower bound is greater"):
        minimize_box(quadratic(4), np.zeros(4), 1.0, 0.0, direct=direct)


def frobmetric_problem(seed=0, n=60, d=6, m=900):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    triplets = np.array([rng.choice(n, 3, replace=False) for _ in range(m)])
    empty = np.zeros((0, 2), dtype=int)
    return X, Constraints(empty, empty, triplets)


@pytest.mark.parametrize("stopping", ["gap", "lbfgsb"])
def test_frobmetric_fit_is_identical_through_either_path(monkeypatch, stopping):
    X, c = frobmetric_problem()
    fits = []
    for direct in (DIRECT, False):
        monkeypatch.setattr(lbfgsb, "direct_available", lambda direct=direct: direct)
        with threadpool_limits(1):
            fits.append(FrobMetric(C=10.0, stopping=stopping).fit(X, constraints=c))
    a, b = fits
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    np.testing.assert_array_equal(a.get_mahalanobis_matrix(), b.get_mahalanobis_matrix())
    np.testing.assert_array_equal(a.trace_["objective"], b.trace_["objective"])
    assert a.n_iter_ == b.n_iter_ > 1


def test_frobenius_sdp_with_free_equality_duals_is_identical_through_either_path(monkeypatch):
    """Equality constraints give free (unbounded) dual variables: bound code 0 beside code 1."""
    rng = np.random.default_rng(3)
    d, m = 5, 12
    C = rng.normal(size=(d, d))
    A = rng.normal(size=(m, d, d))
    A = A + A.transpose(0, 2, 1)
    b = rng.normal(size=m)
    equality = np.arange(m) % 3 == 0
    results = []
    for direct in (DIRECT, False):
        monkeypatch.setattr(lbfgsb, "direct_available", lambda direct=direct: direct)
        results.append(solve_frobenius_sdp(C, A, b, equality=equality, sigma=1.0, tol=1e-6))
    np.testing.assert_array_equal(results[0].u, results[1].u)
    np.testing.assert_array_equal(results[0].X, results[1].X)
    assert results[0].n_iter == results[1].n_iter


def test_fixed_variables_go_through_minimize_which_removes_them():
    n = 8
    fun = quadratic(n, seed=4)
    lower, upper = np.zeros(n), np.ones(n)
    lower[2] = upper[2] = 0.5
    res = minimize_box(fun, np.zeros(n), lower, upper, direct=DIRECT)
    ref = minimize(fun, np.zeros(n), jac=True, method="L-BFGS-B", bounds=Bounds(lower, upper))
    np.testing.assert_array_equal(res.x, ref.x)
    assert res.x[2] == 0.5
