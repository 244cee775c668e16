"""Python-API faults: a solver's ``fit`` given wrong data or constraints raises one
``ValueError`` in one line naming the argument, before any work (no silent fit, no raw
``IndexError``); ``pair_distances`` checks its pairs the same way."""

from __future__ import annotations

import numpy as np

from dml_bench.constraints import Constraints, knn_pairs, knn_triplets, random_triplets
from dml_bench.solvers import SOLVERS

from . import Case

N = 30  # rows of the training set below
BOUNDS = f"indices must be rows of X, in [0, {N})"
NO_PAIRS = np.empty((0, 2), dtype=np.intp)
NO_TRIPLETS = np.empty((0, 3), dtype=np.intp)


def data():
    """30 points in 4 dimensions, two classes, and their 2-NN constraints (all valid)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 4))
    y = np.arange(N) % 2
    return X, y, knn_triplets(X, y, k=2)


def fit(solver: str, constraints=None, X=None, y=None, **params):
    """A ``call``: ``SOLVERS[solver](**params).fit(X, y, constraints)`` on :func:`data` (with
    ``constraints(c)`` made from its valid constraints ``c``, and ``X`` / ``y`` replaced by
    ``X(X)`` / ``y(y)`` when given)."""
    def call(ctx):
        X0, y0, c = data()
        cls = SOLVERS[solver]
        quick = {"max_iter": 5} if "max_iter" in cls().get_params() else {}
        cls(**quick, **params).fit(
            X0 if X is None else X(X0), None if y is None else y(y0),
            constraints=None if constraints is None else constraints(c, X0, y0))
    return call


def with_row(array, row, value, dtype=None):
    """A copy of ``array`` (as ``dtype``) with ``row`` replaced by ``value``."""
    out = np.array(array, dtype=dtype or array.dtype)
    out[row] = value
    return out


def pair_distances(pairs):
    """A ``call``: ``pair_distances(X, pairs)`` of a fitted Euclidean learner."""
    def call(ctx):
        X, y, _ = data()
        SOLVERS["euclidean"]().fit(X, y).pair_distances(X, np.asarray(pairs))
    return call


def _case(id, call, line):
    return Case(id, "api", call=call, line=line)


CASES = [
    _case("api-pairs-of-three-columns",
          fit("dml_eig", lambda c, X, y: Constraints(np.c_[c.similar[:5], c.similar[:5, :1]],
                                                     c.dissimilar, c.triplets)),
          "constraints.similar: pairs must have shape (n, 2), got (5, 3)"),
    _case("api-triplets-of-two-columns",
          fit("lmnn_eig", lambda c, X, y: Constraints(c.similar, c.dissimilar,
                                                      c.triplets[:7, :2])),
          "constraints.triplets: triplets must have shape (n, 3), got (7, 2)"),
    _case("api-pairs-index-minus-one",
          fit("dml_eig", lambda c, X, y: Constraints(c.similar,
                                                     with_row(c.dissimilar, 4, [0, -1]),
                                                     c.triplets)),
          f"constraints.dissimilar: index -1 at row 4 is negative; {BOUNDS}"),
    _case("api-triplets-index-minus-one",
          fit("frobmetric", lambda c, X, y: Constraints(NO_PAIRS, NO_PAIRS,
                                                        with_row(c.triplets, 2, [-1, 3, 5]))),
          f"constraints.triplets: index -1 at row 2 is negative; {BOUNDS}"),
    _case("api-index-n-samples",
          fit("itml", lambda c, X, y: Constraints(with_row(c.similar, 0, [7, N]), c.dissimilar,
                                                  NO_TRIPLETS)),
          f"constraints.similar: index {N} at row 0 is out of range; {BOUNDS}"),
    _case("api-triplets-index-n-samples",
          fit("lmnn", lambda c, X, y: Constraints(c.similar, c.dissimilar,
                                                  with_row(c.triplets, 9, [1, 3, N + 5]))),
          f"constraints.triplets: index {N + 5} at row 9 is out of range; {BOUNDS}"),
    _case("api-nan-in-float-pairs",
          fit("xing", lambda c, X, y: Constraints(with_row(c.similar, 3, [2, np.nan], float),
                                                  c.dissimilar, NO_TRIPLETS)),
          f"constraints.similar: nan at row 3 is not an integer index; {BOUNDS}"),
    _case("api-fractional-index",
          fit("mdml", lambda c, X, y: Constraints(c.similar,
                                                  with_row(c.dissimilar, 1, [2.5, 4], float),
                                                  NO_TRIPLETS)),
          f"constraints.dissimilar: 2.5 at row 1 is not an integer index; {BOUNDS}"),
    _case("api-text-indices",
          fit("sdpmetric", lambda c, X, y: Constraints(NO_PAIRS, NO_PAIRS,
                                                       c.triplets[:4].astype("U2"))),
          "constraints.triplets: indices must be integers, got dtype <U2"),
    _case("api-no-pairs-at-all",
          fit("itml", lambda c, X, y: Constraints(NO_PAIRS, NO_PAIRS, NO_TRIPLETS)),
          "constraints: ITML learns from pairs, but constraints.similar and "
          "constraints.dissimilar are empty"),
    _case("api-no-triplets-at-all",
          fit("boostmetric", lambda c, X, y: Constraints(c.similar, c.dissimilar, NO_TRIPLETS)),
          "constraints: BoostMetric learns from triplets, but constraints.triplets is empty"),
    _case("api-triplets-for-a-pairs-solver",
          fit("dml_eig", lambda c, X, y: random_triplets(X, y, n_triplets=20)),
          "constraints: DMLEig learns from pairs, but constraints.similar and "
          "constraints.dissimilar are empty"),
    _case("api-pairs-for-a-triplets-solver",
          fit("lmnn", lambda c, X, y: knn_pairs(X, y, k=2)),
          "constraints: LMNN learns from triplets, but constraints.triplets is empty"),
    _case("api-dml-eig-without-dissimilar-pairs",
          fit("dml_eig", lambda c, X, y: Constraints(c.similar, NO_PAIRS, NO_TRIPLETS)),
          "constraints.dissimilar: DMLEig needs dissimilar pairs, got none"),
    _case("api-lmnn-eig-without-similar-pairs",
          fit("lmnn_eig", lambda c, X, y: Constraints(NO_PAIRS, c.dissimilar, c.triplets)),
          "constraints.similar: LMNNEig needs similar pairs, got none"),
    _case("api-constraints-not-an-object",
          fit("dml_eig", lambda c, X, y: c.similar),
          "constraints: expected a Constraints with similar, dissimilar and triplets arrays, "
          "got ndarray"),
    _case("api-X-with-nan",
          fit("lmnn_eig", X=lambda X: with_row(X, 6, [0.1, np.nan, 0.2, 0.3]),
              y=lambda y: y),
          "X: holds NaN at row 6, column 1; the features must be finite"),
    _case("api-X-with-inf",
          fit("itml", lambda c, X, y: c, X=lambda X: with_row(X, 11, [np.inf, 0, 0, 0])),
          "X: holds inf at row 11, column 0; the features must be finite"),
    _case("api-X-one-dimensional",
          fit("dml_eig", X=lambda X: X[:, 0], y=lambda y: y),
          f"X: expected a 2-D array of shape (n_samples, n_features), got 1-D input of shape "
          f"({N},)"),
    _case("api-y-length-mismatch",
          fit("frobmetric", X=lambda X: X, y=lambda y: y[:-1]),
          f"Found input variables with inconsistent numbers of samples: [{N}, {N - 1}]"),
    _case("api-pair-distances-index-minus-one", pair_distances([[0, 1], [2, -1]]),
          f"pairs: index -1 at row 1 is negative; {BOUNDS}"),
]
