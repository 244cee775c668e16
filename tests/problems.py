"""Tiny random constraint problems shared by the solver tests (compared against cvxpy)."""

import numpy as np

from dml_bench.constraints import Constraints


def random_pair_problem(seed, d=4, n=10, n_similar=8, n_dissimilar=15, scale=1.0):
    """``n`` Gaussian points in ``d`` dimensions and random similar / dissimilar index pairs."""
    rng = np.random.default_rng(seed)
    X = scale * rng.normal(size=(n, d))
    similar = np.array([rng.choice(n, 2, replace=False) for _ in range(n_similar)])
    dissimilar = np.array([rng.choice(n, 2, replace=False) for _ in range(n_dissimilar)])
    return X, Constraints(similar, dissimilar, np.zeros((0, 3), dtype=int))


def diffs(X, pairs):
    """Difference rows ``x_i − x_j`` of index pairs, written out independently of the package."""
    return X[pairs[:, 0]] - X[pairs[:, 1]]
