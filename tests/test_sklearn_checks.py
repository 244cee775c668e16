"""scikit-learn's own estimator checks (``parametrize_with_checks``) on every registered solver.

The metric learners are transformers (``fit(X, y)`` → ``transform``), the SVM and kernel-ELM
baselines classifiers; each must pass every check scikit-learn runs for its kind (input
validation, ``n_features_in_``, cloning, pickling, dtypes, one feature, one sample, …). Iterative
learners run with the short iteration caps of ``test_solver_contract.QUICK``: the checks are about
the API, not about convergence.

No check is skipped. A check skipped on purpose would be declared through scikit-learn's own
mechanism, ``parametrize_with_checks(..., expected_failed_checks=...)`` (a callable from the
estimator to ``{check name: one-line reason}``, the same API at scikit-learn 1.6, our floor, and
at the newest release), never by ``pytest.skip``.

``check_array_api_input`` (scikit-learn ≥ 1.7 runs it, with NumPy inputs, for estimators without
array-API support: enabling array-API dispatch must not change their results) needs SciPy's
array-API mode, which SciPy reads from ``SCIPY_ARRAY_API=1`` when it is imported; without it the
check skips itself. So these checks run, all estimators at once, in one subprocess that has it.
"""

import functools
import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import check_array_api_input, parametrize_with_checks
from test_elm import eq38, three_classes
from test_solver_contract import QUICK

from dml_bench.constraints import knn_triplets
from dml_bench.solvers import SOLVERS, SVM, DMLEig, KernelELM

#: the QUICK caps stop the iterative learners before convergence, on purpose
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

ESTIMATORS = [SOLVERS[name](**QUICK.get(name, {})) for name in sorted(SOLVERS)]
CHECKS = parametrize_with_checks(ESTIMATORS)

#: runs the pickled (estimator, check) pairs on stdin; prints {estimator: traceback or null}
RUN_CHECKS = """
import json, pickle, sys, traceback
failures = {}
for estimator, check in pickle.load(sys.stdin.buffer):
    try:
        check(estimator)
        failures[type(estimator).__name__] = None
    except Exception:  # a SkipTest too: the subprocess exists so that nothing skips
        failures[type(estimator).__name__] = traceback.format_exc()
print(json.dumps(failures))
"""


def needs_array_api_mode(check):
    return getattr(check, "func", None) is check_array_api_input


@functools.cache
def array_api_failures():
    """``check_array_api_input`` of every estimator, run under ``SCIPY_ARRAY_API=1``."""
    cases = [(est, check) for est, check in CHECKS.args[1] if needs_array_api_mode(check)]
    done = subprocess.run([sys.executable, "-c", RUN_CHECKS], input=pickle.dumps(cases),
                          capture_output=True, env={**os.environ, "SCIPY_ARRAY_API": "1"})
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout.decode().splitlines()[-1])


@CHECKS
def test_scikit_learn_estimator_checks(estimator, check):
    if needs_array_api_mode(check):
        failure = array_api_failures()[type(estimator).__name__]
        assert failure is None, failure
    else:
        check(estimator)


def test_labels_alone_give_knn_constraints_with_k_capped_by_the_smallest_class():
    """``fit(X, y)`` builds knn_triplets with k = 3, or n_c − 1 when a class has n_c ≤ 3 points
    (what check_fit2d_1feature's 10 points in 3 classes need); a class of one point is refused."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(14, 4))
    for sizes, k in (((2, 6, 6), 1), ((3, 5, 6), 2), ((4, 5, 5), 3), ((7, 7), 3)):
        y = np.repeat(np.arange(len(sizes)), sizes)
        np.testing.assert_array_equal(
            DMLEig(max_iter=30).fit(X, y).metric_,
            DMLEig(max_iter=30).fit(X, constraints=knn_triplets(X, y, k=k)).metric_)
    with pytest.raises(ValueError, match="at least 2 points in every class; class 0 has 1"):
        DMLEig().fit(X, np.repeat([0, 1], [1, 13]))


def test_decision_functions_have_scikit_learn_shapes():
    """Two classes: one column, positive for ``classes_[1]`` (libsvm's binary SVC and the ELM's
    output of class 1, Eq. (38)); more: one column per class (the SVM's one-vs-one votes, those of
    SVC's "ovr" shape without its confidence term, which lies in (−1/3, 1/3))."""
    X, y3, Z = three_classes(0)
    two = y3 != "c"
    svm = SVM(C=2.0, gamma=0.3).fit(X[two], y3[two])
    np.testing.assert_allclose(svm.decision_function(Z),
                               SVC(C=2.0, gamma=0.3).fit(X[two], y3[two]).decision_function(Z),
                               rtol=1e-6, atol=1e-6)
    votes = SVM(C=2.0, gamma=0.3).fit(X, y3).decision_function(Z)
    ovr = SVC(C=2.0, gamma=0.3, decision_function_shape="ovr").fit(X, y3).decision_function(Z)
    np.testing.assert_array_equal(votes, np.rint(ovr))
    elm = KernelELM(C=8.0, gamma=0.3).fit(X[two], y3[two])
    outputs = eq38(X[two], y3[two], Z, C=8.0, gamma=0.3)[0]
    np.testing.assert_allclose(elm.decision_function(Z), outputs[:, 1], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(outputs[:, 0], -outputs[:, 1], rtol=1e-8, atol=1e-10)
