"""Comparing methods over data sets: ranks, the Friedman test, the Nemenyi critical difference,
pairwise Wilcoxon signed-rank tests and the time–error Pareto front.

The procedure is Demšar (2006), "Statistical comparisons of classifiers over multiple data sets",
JMLR 7:1–30: rank the k methods on each of the N data sets (1 = lowest error, ties averaged),
test the null hypothesis that all methods are equivalent with the Friedman test (§3.2.2), and, if
it is rejected, call two methods different when their mean ranks differ by at least the critical
difference of the Nemenyi test, CD = q_α √(k(k+1)/(6N)) (Eq. in §3.2.2), with q_α the studentized
range statistic for k groups and infinite degrees of freedom divided by √2 (Demšar's Table 5a).
Pairs of methods are compared with the Wilcoxon signed-rank test on their per-data-set errors
(§3.1.3) and counted as wins, ties and losses (§3.1.4).

Input everywhere is an ``errors`` table: one row per data set, one column per method, the mean
test error of the cell; ``NaN`` marks a cell whose method did not produce an error there (over
budget, cannot run, failed). Such a cell ranks last on its data set (ties among all such cells of
the row averaged): a method that cannot solve a problem within the budget is worse there than one
that can — the convention of the papers' "–" made numeric.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats


def ranks(errors: pd.DataFrame) -> pd.DataFrame:
    """Per-data-set ranks: 1 for the lowest error, ties averaged, missing cells tied last.

    Parameters
    ----------
    errors : DataFrame
        Data sets × methods mean errors; ``NaN`` for a method without a result on the data set.

    Returns
    -------
    DataFrame
        Same shape; each row is a permutation of 1..k up to averaged ties.
    """
    values = errors.to_numpy(dtype=float, copy=True)
    values[np.isnan(values)] = np.inf  # rankdata ties the infinities and puts them last
    return pd.DataFrame(stats.rankdata(values, axis=1), index=errors.index,
                        columns=errors.columns)


@dataclass(frozen=True)
class Friedman:
    """The Friedman test over N data sets and k methods (Demšar 2006, §3.2.2).

    ``statistic`` and ``p_value`` are scipy's ``friedmanchisquare`` (χ²_F with k − 1 degrees of
    freedom, corrected for ties); ``iman_davenport`` is Iman & Davenport's
    F_F = (N − 1) χ²_F / (N (k − 1) − χ²_F) with its p-value on (k − 1, (k − 1)(N − 1)) degrees
    of freedom, which Demšar recommends as less conservative.
    """

    n_datasets: int
    n_methods: int
    statistic: float
    p_value: float
    iman_davenport: float
    iman_davenport_p: float


def friedman(errors: pd.DataFrame) -> Friedman:
    """Friedman test of ``errors`` (missing cells ranked last, see :func:`ranks`).

    Raises
    ------
    ValueError
        With fewer than 3 methods or 2 data sets (the test is not defined).
    """
    n, k = errors.shape
    if k < 3 or n < 2:
        raise ValueError(f"the Friedman test needs at least 3 methods and 2 data sets, got {k} "
                         f"methods on {n}")
    r = ranks(errors).to_numpy()
    chi2, p = stats.friedmanchisquare(*r.T)  # ranks in, ranks out: rank-invariant
    if np.isnan(chi2):  # every row one big tie: no evidence of any difference
        chi2, p = 0.0, 1.0
    denominator = n * (k - 1) - chi2
    f = (n - 1) * chi2 / denominator if denominator > 0 else math.inf
    f_p = float(stats.f.sf(f, k - 1, (k - 1) * (n - 1))) if math.isfinite(f) else 0.0
    return Friedman(n, k, float(chi2), float(p), float(f), f_p)


def nemenyi_q(k: int, alpha: float = 0.05) -> float:
    """q_α of the Nemenyi test for k methods: the studentized range quantile
    ``studentized_range.ppf(1 − α, k, ∞) / √2`` (Demšar 2006, Table 5a: 1.960 for k = 2 … 3.164
    for k = 10 at α = 0.05)."""
    if k < 2:
        raise ValueError(f"the Nemenyi test needs at least 2 methods, got {k}")
    return float(stats.studentized_range.ppf(1 - alpha, k, np.inf) / math.sqrt(2))


def critical_difference(k: int, n: int, alpha: float = 0.05) -> float:
    """Nemenyi critical difference of mean ranks, CD = q_α √(k(k + 1) / (6N)) (Demšar 2006)."""
    return nemenyi_q(k, alpha) * math.sqrt(k * (k + 1) / (6.0 * n))


def cliques(mean_ranks: pd.Series, cd: float) -> list[list[str]]:
    """Groups of methods whose mean ranks are all within ``cd`` of each other (the bars of the
    critical-difference diagram): the maximal runs of the sorted mean ranks whose span is below
    ``cd``, runs of one method left out.

    Returns
    -------
    list of list of str
        Method names, each group in rank order, groups ordered by their best member.
    """
    order = mean_ranks.sort_values(kind="stable")
    names, values = list(order.index), order.to_numpy()
    runs, end_before = [], -1
    for i in range(len(values)):
        j = i
        while j + 1 < len(values) and values[j + 1] - values[i] < cd:
            j += 1
        if j > end_before and j > i:  # not contained in the previous run
            runs.append(names[i:j + 1])
        end_before = max(end_before, j)
    return runs


def pairwise(errors: pd.DataFrame) -> pd.DataFrame:
    """Win/tie/loss counts and Wilcoxon signed-rank p-values of every ordered pair of methods.

    A *win* of A over B is a data set where A's error is below B's, or where A has an error and B
    none (over budget, cannot run); a *tie* is equal errors or neither having one. The Wilcoxon
    p-value (:func:`signed_rank_p`) is computed on the data sets where both have an error, once
    per unordered pair (it is symmetric); NaN with no such data set.

    Returns
    -------
    DataFrame
        Columns ``method, versus, wins, ties, losses, n_both, wilcoxon_p``.
    """
    rows, p_values = [], {}
    for a in errors.columns:
        for b in errors.columns:
            if a == b:
                continue
            x, y = errors[a].to_numpy(float), errors[b].to_numpy(float)
            xs, ys = np.where(np.isnan(x), np.inf, x), np.where(np.isnan(y), np.inf, y)
            both = ~np.isnan(x) & ~np.isnan(y)
            key = frozenset((a, b))
            if key not in p_values:
                p_values[key] = signed_rank_p(x[both] - y[both]) if both.any() else math.nan
            rows.append({"method": a, "versus": b, "wins": int((xs < ys).sum()),
                         "ties": int((xs == ys).sum()), "losses": int((xs > ys).sum()),
                         "n_both": int(both.sum()), "wilcoxon_p": p_values[key]})
    return pd.DataFrame(rows, columns=["method", "versus", "wins", "ties", "losses", "n_both",
                                       "wilcoxon_p"])


def signed_rank_p(differences: np.ndarray) -> float:
    """Two-sided exact p-value of Wilcoxon's signed-rank test of paired differences (Demšar 2006,
    §3.1.3), for any number of data sets and with ties.

    Zero differences are dropped (Wilcoxon's original treatment); tied absolute differences get
    their mid-ranks r_i. Under the null hypothesis each difference is positive or negative with
    probability 1/2 independently, so T+ = Σ_{d_i > 0} r_i is distributed as Σ r_i s_i over the
    2^n equally likely sign patterns s ∈ {0, 1}^n: the exact null distribution given the ranks.
    Mid-ranks are multiples of 1/2, so the distribution of the integer 2 T+ is built by
    convolving one data set at a time, O(n³) operations. ``scipy.stats.wilcoxon`` does not give
    this when ranks tie: its ``method="exact"`` ignores the ties, and its default enumerates the
    2^n patterns in Python up to n = 13 (4 s a pair at n = 12, hundreds of pairs on a board) and
    turns to a normal approximation above, with differences between scipy releases. The p-value
    here is exact, the same at every scipy version, and cheap at any n. It is
    min(1, 2 min(P(T+ <= t), P(T+ >= t))) at the observed t, 1 when every difference is zero.

    References
    ----------
    Wilcoxon, F. (1945). Individual comparisons by ranking methods. Biometrics Bulletin 1(6).
    Demšar, J. (2006). Statistical comparisons of classifiers over multiple data sets. JMLR 7.
    """
    d = np.asarray(differences, dtype=float)
    d = d[d != 0]
    if d.size == 0:
        return 1.0
    doubled = np.rint(2 * stats.rankdata(np.abs(d))).astype(np.int64)
    pmf = np.zeros(doubled.sum() + 1)
    pmf[0] = 1.0
    for width in doubled:  # one data set at a time (n is the number of data sets)
        pmf[width:] = 0.5 * (pmf[width:] + pmf[:-width])
        pmf[:width] *= 0.5
    t = doubled[d > 0].sum()
    return float(min(1.0, 2 * min(pmf[:t + 1].sum(), pmf[t:].sum())))


def pareto_front(cost: np.ndarray, loss: np.ndarray) -> np.ndarray:
    """Mask of the points not dominated when both ``cost`` and ``loss`` are minimised.

    A point is dominated when another is no worse in both and strictly better in one. Sorting by
    cost (then loss) and keeping each point whose loss is below every loss before it finds them
    in O(n log n); equal points are all kept.
    """
    cost, loss = np.asarray(cost, float), np.asarray(loss, float)
    keep = np.zeros(len(cost), dtype=bool)
    best, best_cost = math.inf, None
    for i in np.lexsort((loss, cost)):
        if loss[i] < best:
            keep[i], best, best_cost = True, loss[i], cost[i]
        elif loss[i] == best and cost[i] == best_cost:  # a duplicate of a front point
            keep[i] = True
    return keep
