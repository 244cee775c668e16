"""How a fit reports on itself: one ConvergenceWarning when it stops short (naming the rule, the
cap and the optimality reached), ``verbose`` on every learner, and ``verbose`` left out of a
result's identity."""

import inspect
import re
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from dml_bench.solvers import SOLVERS, LMNN, MetricLearner
from dml_bench.solvers.base import ANY_VALUE, identifying_params, param_problem


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def fit_recording(name, params, X, y):
    """The fitted model and the ConvergenceWarnings of its fit."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = SOLVERS[name](**params).fit(X, y)
    return model, [w for w in caught if issubclass(w.category, ConvergenceWarning)]


#: a cap each iterative learner reaches on wine, and how the message names it
CAPPED = {
    "dml_eig": ({"max_iter": 5}, "max_iter = 5 iterations"),
    "lmnn_eig": ({"max_iter": 5}, "max_iter = 5 iterations"),
    "sdpmetric": ({"max_iter": 5}, "max_iter = 5 iterations"),
    "boostmetric": ({"max_iter": 3}, "max_iter = 3 base learners"),
    "frobmetric": ({"max_iter": 3}, "max_iter = 3 L-BFGS-B iterations"),
    "xing": ({"max_iter": 2}, "max_iter = 2 cycles"),
    "lmnn": ({"max_iter": 3}, "max_iter = 3 iterations"),
    "ldml": ({"max_iter": 3}, "max_iter = 3 iterations"),
    "nca": ({"max_iter": 2}, "max_iter = 2 L-BFGS-B iterations"),
    "mlkr": ({"max_iter": 2}, "max_iter = 2 L-BFGS-B iterations"),
    "itml": ({"max_proj": 100}, "max_proj = 100 projections"),
    "lsml": ({"max_iter": 3}, "max_iter = 3 steps"),
    "scml": ({"max_iter": 100, "check_every": 50, "tol": 1e-6}, "max_iter = 100 steps"),
    "sdml": ({"max_iter": 1}, "max_iter = 1 sweeps"),
    "fw": ({"max_iter": 3, "tol": 1e-6}, "max_iter = 3 iterations"),
}


@pytest.mark.parametrize("name", sorted(CAPPED))
def test_a_capped_fit_warns_once_naming_rule_cap_and_optimality(name, wine):
    params, cap = CAPPED[name]
    model, caught = fit_recording(name, params, *wine)
    assert len(caught) == 1, [str(w.message) for w in caught]
    message = str(caught[0].message)
    assert "\n" not in message
    assert message.startswith(f"{type(model).__name__} did not converge: ")
    assert f"reached the cap {cap}" in message
    assert re.search(r"before its stopping rule \(.*tol.*\) held, at .*\d", message), message
    assert not model.converged_


@pytest.mark.parametrize("name", ["dml_eig", "frobmetric", "lmnn", "lsml", "mlkr", "nca", "sdml",
                                  "xing"])
def test_a_converging_fit_does_not_warn(name, wine):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = SOLVERS[name]().fit(*wine)
    assert getattr(model, "converged_", True)


def test_no_fit_warns_twice_where_scikit_learn_warns_more():
    """SDML's graphical lasso may warn in its outer and its inner solves: one warning is said."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 12))
    y = np.repeat([0, 1, 2], 20)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        SOLVERS["sdml"](max_iter=1, tol=1e-12, sparsity_param=0.1).fit(X, y)
    assert sum(issubclass(w.category, ConvergenceWarning) for w in caught) == 1


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_every_learner_takes_verbose_last(name):
    cls = SOLVERS[name]
    parameters = list(inspect.signature(cls).parameters.values())
    assert parameters[-1].name == "verbose" and parameters[-1].default == 0
    assert "verbose" in cls._parameter_constraints
    assert param_problem(cls, {"verbose": 2}) is None
    assert param_problem(cls, {"verbose": -1})[0] == "verbose"
    docs = "".join(klass.__doc__ or "" for klass in cls.__mro__)
    assert "verbose : int, default=0" in docs


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_identifying_params_leave_verbose_out(name):
    model = SOLVERS[name](verbose=2)
    kept = identifying_params(model)
    assert "verbose" not in kept
    # besides verbose, only a learner's own declared neutral options, at their default, are left out
    declared = set()
    for klass in type(model).__mro__:
        declared |= set(vars(klass).get("neutral_params", {}))
    defaults = {p.name: p.default for p in inspect.signature(type(model)).parameters.values()}
    left_out = set(model.get_params()) - set(kept) - {"verbose"}
    assert left_out <= declared
    assert all(model.get_params()[k] is defaults[k] or model.get_params()[k] == defaults[k]
               for k in left_out)


def test_a_subclass_with_its_own_neutral_params_keeps_verbose_neutral():
    class Sub(LMNN):
        neutral_params = {"mu": 0.5}  # no merge with the bases' dict

    kept = identifying_params(Sub(verbose=1))
    assert "verbose" not in kept and "mu" not in kept and "n_components" not in kept
    assert MetricLearner.neutral_params["verbose"] is ANY_VALUE


@pytest.mark.parametrize("name, params", [("dml_eig", {"max_iter": 50}), ("lda", {}),
                                          ("euclidean", {}), ("svm", {}), ("elm", {}),
                                          ("frobmetric", {"max_iter": 5}),
                                          ("itml", {"max_proj": 2000})])
def test_verbose_one_prints_one_line_and_zero_nothing(name, params, wine, capsys):
    fit_recording(name, {**params, "verbose": 0}, *wine)
    assert capsys.readouterr().out == ""
    model, _ = fit_recording(name, {**params, "verbose": 1}, *wine)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"[{type(model).__name__}] fit: ")
    assert "converged" in lines[0] and lines[0].endswith(" s")


@pytest.mark.parametrize("name, params", [("dml_eig", {"max_iter": 20}),
                                          ("lmnn_eig", {"max_iter": 20}),
                                          ("lsml", {"max_iter": 20}), ("ldml", {"max_iter": 20})])
def test_verbose_two_prints_progress_and_does_not_change_the_fit(name, params, wine, capsys):
    quiet, _ = fit_recording(name, params, *wine)
    capsys.readouterr()
    chatty, _ = fit_recording(name, {**params, "verbose": 2}, *wine)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == chatty.n_iter_ + 1
    assert lines[0].startswith(f"[{type(chatty).__name__}] iteration 1: ")
    np.testing.assert_array_equal(chatty.metric_, quiet.metric_)
