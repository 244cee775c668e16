"""scikit-learn API beyond the estimator checks: ``set_output(transform="pandas")`` and
``get_feature_names_out`` on every learner that transforms, against the NumPy ``transform``."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn import config_context
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from test_solver_contract import QUICK

from dml_bench.solvers import LMNN, NCA, SOLVERS

TRANSFORMERS = sorted(name for name in SOLVERS if hasattr(SOLVERS[name], "transform"))


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True, as_frame=True)
    X.index = X.index + 1000  # an index that is not 0 … n − 1, to see it carried through
    return X, y


def quick(name):
    return SOLVERS[name](**QUICK.get(name, {}))


def test_the_transformers_are_the_metric_learners():
    assert set(SOLVERS) - set(TRANSFORMERS) == {"svm", "elm", "scml_local"}  # classifiers, a local metric


@pytest.mark.parametrize("name", TRANSFORMERS)
def test_set_output_pandas_gives_a_dataframe_named_by_the_class(name, iris):
    X, y = iris
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        plain = quick(name).fit(X, y)
        framed = quick(name).set_output(transform="pandas").fit(X, y)
        with config_context(transform_output="pandas"):  # scikit-learn's global switch
            glob = quick(name).fit(X, y)
            out_glob = glob.transform(X)
    out = framed.transform(X)
    assert isinstance(out, pd.DataFrame)
    k = framed.components_.shape[0]
    prefix = type(framed).__name__.lower()
    assert list(out.columns) == [f"{prefix}{i}" for i in range(k)]
    np.testing.assert_array_equal(framed.get_feature_names_out(), out.columns)
    assert out.index.equals(X.index)
    np.testing.assert_allclose(out.to_numpy(), plain.transform(X), rtol=1e-12, atol=1e-12)
    # the global switch changes the output, not the fit (a wrapped scikit-learn estimator's own
    # transform, used inside fit, must not turn into a DataFrame there)
    assert isinstance(out_glob, pd.DataFrame) and list(out_glob.columns) == list(out.columns)
    np.testing.assert_allclose(out_glob.to_numpy(), out.to_numpy(), rtol=1e-12, atol=1e-12)
    assert isinstance(framed.set_output(transform="default").transform(X), np.ndarray)


def test_feature_names_follow_the_number_of_components(iris):
    X, y = iris
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        nca = NCA(n_components=2, max_iter=5).set_output(transform="pandas").fit(X, y)
        lmnn = LMNN(n_components=3, max_iter=20).set_output(transform="pandas").fit(X, y)
    assert list(nca.transform(X).columns) == ["nca0", "nca1"]
    assert list(lmnn.transform(X).columns) == ["lmnn0", "lmnn1", "lmnn2"]
    with pytest.raises(NotFittedError):
        NCA().get_feature_names_out()


def test_a_pipeline_set_to_pandas_passes_frames_through_the_learner(iris):
    X, y = iris
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pipe = make_pipeline(StandardScaler(), LMNN(max_iter=20)).set_output(transform="pandas")
        Z = pipe.fit_transform(X, y)
        assert isinstance(Z, pd.DataFrame) and list(Z.columns) == [f"lmnn{i}" for i in range(4)]
        knn = make_pipeline(StandardScaler(), LMNN(max_iter=20), KNeighborsClassifier(3))
        knn.set_output(transform="pandas").fit(X, y)
    assert knn.score(X, y) > 0.9
