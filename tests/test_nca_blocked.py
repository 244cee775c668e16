"""NCA's blocked loss and gradient against scikit-learn's n×n ones, and the blocked fit against
scikit-learn's NeighborhoodComponentsAnalysis."""

import tracemalloc
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.neighbors import NeighborhoodComponentsAnalysis

from dml_bench.solvers import SOLVERS, baselines, nca_blocked
from dml_bench.solvers.nca_blocked import block_rows, nca_loss_grad


def sklearn_loss_grad(L, X, y):
    nca = NeighborhoodComponentsAnalysis()
    nca.n_iter_, nca.verbose = 1, 0  # past its header
    return nca._loss_grad_lbfgs(L.ravel(), X, y[:, None] == y[None, :], -1.0)


@pytest.mark.parametrize("n, d, k, block", [(300, 7, 7, None), (301, 7, 3, 64), (500, 12, 5, 77),
                                            (200, 4, 4, 200)])
def test_the_blocked_loss_and_gradient_are_scikit_learns(n, d, k, block):
    rng = np.random.default_rng(n)
    X = rng.standard_normal((n, d))
    X[1] = X[0]  # a duplicate point: a zero distance off the diagonal
    y = rng.integers(0, 4, n)
    L = 0.5 * rng.standard_normal((k, d))
    loss, grad = sklearn_loss_grad(L, X, y)
    loss_b, grad_b = nca_loss_grad(L.ravel(), X, y, -1.0, block=block)
    # the same sums in another order: rounding of n-term sums, n ε relative
    assert loss_b == pytest.approx(loss, rel=n * np.finfo(float).eps)
    np.testing.assert_allclose(grad_b, grad, atol=n * np.finfo(float).eps * np.abs(grad).max())


def test_block_rows_keep_a_block_to_its_byte_budget():
    assert block_rows(100) == 100
    assert block_rows(14_000) == 16 * 2**20 // (8 * 14_000)
    assert block_rows(10**7) == 64


def test_the_blocked_fit_is_scikit_learns_fit(monkeypatch):
    monkeypatch.setattr(baselines, "BLOCKED_FROM_N", 100)
    rng = np.random.default_rng(0)
    n, d = 240, 5
    y = np.arange(n) % 3
    X = rng.standard_normal((n, d)) + np.eye(3, d)[y]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ours = SOLVERS["nca"](max_iter=20, init="pca", random_state=0).fit(X, y)
        ref = NeighborhoodComponentsAnalysis(max_iter=20, init="pca", random_state=0).fit(X, y)
    # L-BFGS-B on gradients that differ by rounding (1e-15): the same iterations, and iterates
    # that differ by rounding amplified over 20 steps
    assert ours.n_iter_ == ref.n_iter_ - 1
    np.testing.assert_allclose(ours.components_, ref.components_,
                               atol=1e-8 * np.abs(ref.components_).max())
    loss, grad = sklearn_loss_grad(ref.components_, X, y)
    assert ours.objective_ == pytest.approx(-loss, rel=1e-8)
    assert ours.optimality_ == pytest.approx(np.abs(grad).max(), rel=1e-4, abs=1e-10)
    np.testing.assert_allclose(ours.transform(X), ours.estimator_.transform(X))


def test_the_blocked_fit_forms_no_n_by_n_array(monkeypatch):
    monkeypatch.setattr(baselines, "BLOCKED_FROM_N", 1000)
    monkeypatch.setattr(nca_blocked, "BLOCK_BYTES", 2**20)  # 64-row blocks: 2 MB each
    rng = np.random.default_rng(1)
    n, d = 4000, 3  # one n×n float64 array: 128 MB
    y = np.arange(n) % 2
    X = rng.standard_normal((n, d)) + y[:, None]
    learner = SOLVERS["nca"](max_iter=2)
    tracemalloc.start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        learner.fit(X, y)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < n * n * 8 / 16  # a few blocks, the points and the map: not one n×n array


def test_the_blocked_fit_reports_each_evaluation(monkeypatch, capsys):
    monkeypatch.setattr(baselines, "BLOCKED_FROM_N", 100)
    losses = []

    def counted(*args, **kwargs):
        loss, grad = nca_loss_grad(*args, **kwargs)
        losses.append((loss, np.abs(grad).max()))
        return loss, grad

    monkeypatch.setattr(baselines, "nca_loss_grad", counted)
    rng = np.random.default_rng(2)
    y = np.arange(150) % 3
    X = rng.standard_normal((150, 4)) + np.eye(3, 4)[y]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        learner = SOLVERS["nca"](max_iter=3, init="pca", verbose=2).fit(X, y)
    lines = [line for line in capsys.readouterr().out.splitlines() if "evaluations" in line]
    assert len(lines) == len(losses) >= 3  # one per evaluation, the closing one included
    first = lines[0].split(": ", 1)[1].split(", ")
    assert lines[0].startswith("[NCA] iteration 0:") and first[0] == "evaluations 1"
    assert float(first[1].split()[1]) == pytest.approx(-losses[0][0], rel=1e-5)
    assert float(first[2].split()[1]) == pytest.approx(losses[0][1], rel=1e-5)
    # the L-BFGS-B iterations completed when each evaluation came: from 0 up to the fit's count
    done = [int(line.split()[2].rstrip(":")) for line in lines]
    assert done == sorted(done) and done[0] == 0 and done[-1] <= learner.n_iter_
