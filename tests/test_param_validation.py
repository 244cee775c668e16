"""Hyper-parameter validation: every solver's ``_parameter_constraints`` (scikit-learn's
parameter-constraint machinery), ``fit`` checking them before any work, and
:func:`~dml_bench.solvers.base.param_problem`, the same check without an estimator for the config
reader.

The constraints must cover exactly the constructor's parameters, refuse what the docstrings rule
out (a hand-picked sample per solver; for every registered solver and parameter, a string, a value
of no valid type and a value just outside each constraint, as scikit-learn's own
``check_param_validation``, also run), each in one line naming the parameter, and accept every
value in use: the defaults and every solver ``params`` mapping and ``tune.grid`` value of the
committed configs.
"""

import inspect
from pathlib import Path

import numpy as np
import pytest
import yaml
from sklearn.utils._param_validation import (InvalidParameterError, generate_invalid_param_val,
                                             make_constraint)
from sklearn.utils.estimator_checks import check_param_validation

from dml_bench.solvers import SOLVERS, BoostMetric, DMLEig, MDML, MetricLearner
from dml_bench.solvers.base import param_problem

NAMES = sorted(SOLVERS)
CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.yaml"))

#: a sample of bad values per solver: a string where a number is expected, a value out of the
#: documented range, an unknown option
BAD = {
    "lfda": [("k", 0), ("embedding", "bogus"), ("ridge", 0.0), ("n_components", 0)],
    "mlkr": [("init", "auto"), ("max_iter", 0), ("tol", "1e-5"), ("memory_limit_gb", 0)],
    "dml_eig": [("mu", "0.5"), ("mu", 0.0), ("stopping", "bogus"), ("weight_threshold", 2.0),
                ("max_iter", 0), ("init", "random")],
    "lmnn_eig": [("gamma", 1.0), ("mu", -1e-4), ("scale", "unit"), ("ridge", "1e-2")],
    "frobmetric": [("C", "1"), ("C", -1.0), ("stopping", "gradient"), ("max_corrections", 0)],
    "boostmetric": [("v", -1e-7), ("v", np.inf), ("update", "totally"), ("max_iter", 10.5),
                    ("tol", "0")],
    "xing": [("step", 0), ("projection", "bogus"), ("eps", "0.01"), ("max_proj", 0)],
    "lmnn": [("mu", 1.5), ("impostors", "none"), ("step_size", -1.0), ("validation", 1.0),
             ("solver", "Q"), ("random_state", -1)],
    "sdpmetric": [("loss", "hinge"), ("C", "0.1"), ("c2", 1.0), ("backtrack", 0), ("h", -1)],
    "nca": [("init", "bogus"), ("max_iter", 0), ("memory_limit_gb", 0), ("tol", "1e-5")],
    "lda": [("solver", "lsqr"), ("shrinkage", 2.0), ("n_components", 0)],
    "pca": [("n_components", -1), ("whiten", "yes")],
    "rca": [("chunk_size", 1), ("ridge", -0.1), ("n_components", 0), ("rank_tol", "0")],
    "ldml": [("learning_rate", 0), ("init_b", "median"), ("psd", "false"), ("init_b", np.nan)],
    "itml": [("gamma", -1), ("gamma", "1.0"), ("bounds", (-1.0, 2.0)), ("bounds", (1.0,)),
             ("pairs", "bogus"), ("max_iter", 0)],
    "svm": [("gamma", -1.0), ("gamma", "none"), ("scale", "zscore"), ("C", 0)],
    "elm": [("C", 0.0), ("gamma", "scale"), ("scale", "standard")],
    "pola": [("n_epochs", 1.5), ("log_every", 0), ("shuffle", "yes")],
    "mdml": [("loss", "bogus"), ("divergence", "kl"), ("eta", 0), ("rho", -1),
             ("n_epochs", 1.5), ("log_every", 7.0)],
    "sgd_incsvd": [("constraint", "nuclear"), ("tau", 0), ("max_rank", 0), ("random_state", -1),
                   ("lam", "0.1")],
    "gd": [("lam", -1), ("step", "0.1"), ("constraint", "nuclear"), ("memory_limit_gb", -1.0)],
    "sgd": [("step", -1), ("batch_size", 0), ("n_eval", 0)],
    "sgd_batch": [("tau", 0), ("log_every", 0), ("random_state", "0")],
    "fw": [("tol", -1), ("step", 0), ("constraint", "trace")],
    "sgd_one": [("gamma", -1.0), ("lam", "0.1"), ("batch_size", 2.5)],
}
CASES = [(name, param, value) for name, cases in BAD.items() for param, value in cases]


class NoValidType:
    """A value no constraint accepts."""

    def __repr__(self):
        return "NoValidType()"


def generated_bad_values(cls):
    """``(parameter, value)`` for every parameter of ``cls``: a string, a value of no valid type
    and scikit-learn's value just outside each of its constraints, those that no constraint of
    the parameter accepts."""
    for param, constraints in cls._parameter_constraints.items():
        if constraints == "no_validation":
            continue
        made = [make_constraint(c) for c in constraints]
        candidates = ["0.5", NoValidType()]
        for constraint in made:
            try:
                candidates.append(generate_invalid_param_val(constraint))
            except NotImplementedError:
                pass
        for value in candidates:
            if not any(c.is_satisfied_by(value) for c in made):
                yield param, value


GENERATED = [(name, param, value) for name in NAMES
             for param, value in generated_bad_values(SOLVERS[name])]


def labelled_data():
    X = np.random.default_rng(0).normal(size=(12, 3))
    return X, np.repeat([0, 1, 2], 4)


@pytest.mark.parametrize("name", NAMES)
def test_defaults_pass(name):
    cls = SOLVERS[name]
    assert param_problem(cls, cls().get_params()) is None


@pytest.mark.parametrize("name", NAMES)
def test_constraints_cover_exactly_the_constructor_parameters(name):
    cls = SOLVERS[name]
    assert set(cls._parameter_constraints) == set(inspect.signature(cls).parameters)


@pytest.mark.parametrize("name", NAMES)
def test_scikit_learn_check_param_validation(name):
    """A value of no valid type, and a value just outside each constraint, make ``fit`` raise
    ``InvalidParameterError`` "The 'p' parameter of C must be … Got … instead."."""
    estimator = SOLVERS[name]()
    check_param_validation(type(estimator).__name__, estimator)


@pytest.mark.parametrize("name,param,value", CASES + GENERATED,
                         ids=[f"{name}-{param}-{i}"  # StrOptions' bad value: in set order
                              for i, (name, param, _) in enumerate(CASES + GENERATED)])
def test_bad_value_is_refused_in_one_line_naming_the_parameter(name, param, value):
    cls = SOLVERS[name]
    problem = param_problem(cls, {param: value})
    assert problem is not None and problem[0] == param
    message = problem[1]
    assert "\n" not in message and message.startswith("must be ")
    assert message.endswith(f", got {value!r}")
    with pytest.raises(InvalidParameterError) as info:
        cls(**{param: value}).fit(*labelled_data())
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(f"The {param!r} parameter of {cls.__name__} must be ")
    assert message.removesuffix(f", got {value!r}") in text


@pytest.mark.parametrize("config", CONFIGS, ids=[c.stem for c in CONFIGS])
def test_config_solver_params_pass(config):
    """Every ``params`` mapping and every ``tune.grid`` value of the committed configs."""
    problems = []
    solvers = yaml.safe_load(config.read_text()).get("solvers") or []
    for i, entry in enumerate(solvers):
        if not isinstance(entry, dict):
            continue
        cls = SOLVERS[entry["name"]]
        params = entry.get("params") or {}
        trials = [(f"solvers[{i}].params", params)]
        grid = (entry.get("tune") or {}).get("grid") or {}
        for key, values in grid.items():
            trials += [(f"solvers[{i}].tune.grid.{key}[{j}]", {**params, key: value})
                       for j, value in enumerate(values)]
        for path, trial in trials:
            problem = param_problem(cls, trial)
            if problem is not None:
                problems.append(f"{path}: {problem}")
    assert problems == []


def test_configs_are_found():
    assert len(CONFIGS) >= 10


def test_fit_checks_the_parameters_before_the_data():
    X, y = labelled_data()
    X[0, 0] = np.nan
    model = DMLEig(mu="0.5")
    with pytest.raises(InvalidParameterError, match="'mu' parameter of DMLEig"):
        model.fit(X, y)
    assert not hasattr(model, "n_features_in_")


def test_an_array_value_is_reported_on_one_line():
    value = np.ones((30, 30))
    problem = param_problem(DMLEig, {"mu": value})
    assert problem[0] == "mu" and "\n" not in problem[1]
    with pytest.raises(InvalidParameterError) as info:
        DMLEig(mu=value).fit(*labelled_data())
    assert "\n" not in str(info.value)


def test_the_first_invalid_parameter_is_reported_and_unknown_names_are_passed_over():
    assert param_problem(DMLEig, {"tol": 1e-3, "muu": "x", "mu": "a", "stopping": "b"}) == \
        ("mu", "must be a float in the range (0.0, inf), got 'a'")
    assert param_problem(DMLEig, {"muu": "x"}) is None


@pytest.mark.parametrize("cls,param,value", [(BoostMetric, "max_iter", 5.0),
                                             (MDML, "n_epochs", 2.0)])
def test_integral_floats_are_taken_where_the_code_takes_them(cls, param, value):
    """``int(value) == value`` counts of BoostMetric and MDML; messages name only the int."""
    assert param_problem(cls, {param: value}) is None
    assert param_problem(cls, {param: value + 0.5}) == \
        (param, f"must be an int in the range [1, inf), got {value + 0.5!r}")
    cls(**{param: value}).fit(*labelled_data())


def test_itml_gamma_may_be_infinite():
    """``gamma=np.inf`` enforces the constraints exactly (no slack), as documented."""
    assert param_problem(SOLVERS["itml"], {"gamma": np.inf, "bounds": [1.0, 10.0]}) is None


def test_classes_without_constraints_refuse_nothing():
    class Plugin(MetricLearner):
        """A plug-in that declares no constraints."""

        def __init__(self, alpha=1.0):
            self.alpha = alpha

        def _fit(self, X, y, constraints):
            self.components_ = self.metric_ = np.eye(X.shape[1])

    assert param_problem(Plugin, {"alpha": "anything"}) is None
    assert param_problem(object, {"alpha": "anything"}) is None
    Plugin(alpha="anything").fit(labelled_data()[0])
