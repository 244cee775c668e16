"""The compiled passes over pairs against the formulations they replaced.

``linalg.pair_sq_distances`` is called on every loss evaluation of LMNN, FrobMetric, SDPMetric,
Xing, ITML and POLA; it is timed against numpy's difference rows gathered ``chunk`` pairs at a
time, then ``einsum``. ``linalg.PairOuterSum`` forms every gradient of LMNN, FrobMetric,
BoostMetric, Xing, LDML and the DML-eig/LMNN-eig vertex on large sets; it is timed against the
sparse Laplacian product it replaced (scipy's CSR matrix of the pairs, built once, its values
written per call). Both in this run, with one BLAS thread, on the shapes of the solvers' pair
sets (n points, rank r or dimension d, number of pairs; the pairs listed point by point, as the
constraint generators list them), the outer sums also on the real pairs of five timing rows
where ``DMLBENCH_DATA_MIRROR`` or the cache has their data, and both results compared (largest
relative difference).

On the weights of a hinge loss (GD's, Zhang & Zhang 2017, on the leaderboard's MNIST split 0)
:class:`PairOuterSum` multiplies only the rows its nonzero weights reach; it is timed against the
CSR product over every row, at three of GD's iterations, with the share of pairs and points that
the weights reach.

``linalg.pair_quadratic_forms`` gives GD's and FW's pair distances at their dense iterate W
(every iteration, over all pairs); it is timed against the difference rows it replaced
(``einsum(D W, D)``, D built once and not timed), on the pair sets of a 3-fold tuning fit.

    python benchmarks/timing/bench_pair_distances.py [--repeat 30] [--out results/bench]
        [--part distances outer_sums sparse_outer_sums quadratic_forms]

Writes ``pair_distances.csv``, ``pair_outer_sum.csv``, ``pair_outer_sum_sparse.csv`` and
``pair_quadratic_forms.csv``: per shape the median seconds of each and their ratio.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse
from threadpoolctl import threadpool_limits

from bench_eigen_update import median_seconds  # benchmarks/timing/, beside this script
from bench_paper_times import table_cells
from dml_bench.datasets import DataNotAvailable
from dml_bench.solvers import lowrank_dense
from dml_bench.solvers.linalg import (PairOuterSum, pair_quadratic_forms, pair_sq_distances,
                                      triplet_pairs)
from dml_bench.experiment.knn import prepare_split

sys.path.append(str(Path(__file__).resolve().parents[1] / "diagnoses"))
from seed_diagnosis import tasks_for  # benchmarks/diagnoses/: a config's tasks of a label

#: (what, n points, rank, pairs): breast cancer's LMNN pairs (targets + impostors), a USPS
#: triplet set's distinct pairs, digits at full rank, MNIST's FrobMetric pairs
SHAPES = (("breast_cancer LMNN", 398, 30, 6_000), ("USPS triplets", 5_103, 256, 61_000),
          ("digits", 1_257, 64, 30_000), ("MNIST triplets", 42_000, 784, 250_000))
#: (what, n points, d, pairs) for the outer sums: letter's and digits' LMNN pairs, DML-eig's
#: USPS pairs (Ying Table 5), a USPS triplet set's distinct pairs, MNIST's FrobMetric pairs
OUTER_SUM_SHAPES = (("letter LMNN", 14_000, 16, 140_000), ("digits LMNN", 1_257, 64, 15_000),
                    ("USPS DML-eig", 6_514, 256, 19_542), ("USPS triplets", 5_103, 256, 61_000),
                    ("MNIST triplets", 42_000, 784, 250_000))
#: (what, n points, d, pairs) for the quadratic forms: the distinct pairs of the leaderboard's
#: 3 + 3 neighbour triplets (about 6 a point) in a tuning fold (2/3 of the 70 % training part)
QUADRATIC_FORM_SHAPES = (("digits fold", 838, 64, 5_000), ("letter fold", 9_333, 16, 56_000),
                         ("USPS fold", 4_339, 256, 26_000), ("Yale B fold", 1_127, 1_024, 6_800))
#: the same on the real pairs of timing rows (split 0 of their configs, where the data are here):
#: (table, solver, dataset); DML-eig's dissimilar pairs, the triplets' distinct pairs otherwise.
#: Real k-NN pairs join nearby points, which the random partners above do not
REAL_PAIR_SETS = (("ying2012/table5", "dml_eig", "usps"), ("ying2012/table5", "lmnn", "segment"),
                  ("shen2014/table1_time", "frobmetric", "letter"),
                  ("shen2014/table1_time", "frobmetric", "usps_roweis"),
                  ("shen2014/table1_time", "frobmetric", "mnist"))


def numpy_pair_sq_distances(Z, pairs, chunk=2048):
    """The numpy reference: gathered difference rows, ``chunk`` pairs at a time, and einsum."""
    out = np.empty(len(pairs))
    for s in range(0, len(pairs), chunk):
        Y = Z[pairs[s:s + chunk, 0]] - Z[pairs[s:s + chunk, 1]]
        out[s:s + chunk] = np.einsum("ij,ij->i", Y, Y)
    return out


class CsrPairOuterSum:
    """The replaced reference: ``X̄ᵀ (L_w X̄)`` with the pairs' Laplacian as a scipy CSR matrix,
    its pattern built once and its values (degrees, ``−w``, ``−w``) written per call."""

    def __init__(self, X, pairs):
        n = len(X)
        self.X, self.a, self.b = X - X.mean(axis=0), pairs[:, 0], pairs[:, 1]
        rows = np.concatenate([np.arange(n), self.a, self.b])
        cols = np.concatenate([np.arange(n), self.b, self.a])
        self.order = np.argsort(rows, kind="stable")
        self.laplacian = scipy.sparse.csr_matrix(
            (np.ones(len(rows)), cols[self.order],
             np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))])), shape=(n, n))

    def __call__(self, w):
        n = len(self.X)
        degrees = np.bincount(self.a, w, n) + np.bincount(self.b, w, n)
        self.laplacian.data = np.concatenate([degrees, -w, -w])[self.order]
        return self.X.T @ (self.laplacian @ self.X)


def time_pair_distances(rng, repeat: int) -> pd.DataFrame:
    """``pair_distances.csv``: the compiled pass against numpy's gather and einsum."""
    rows = []
    for what, n, rank, n_pairs in SHAPES:
        Z = rng.normal(size=(n, rank))
        pairs = rng.integers(0, n, size=(n_pairs, 2))
        ref = numpy_pair_sq_distances(Z, pairs)  # also the warm-up (the first call compiles)
        got = pair_sq_distances(Z, pairs)
        compiled = median_seconds(lambda: pair_sq_distances(Z, pairs), repeat)
        reference = median_seconds(lambda: numpy_pair_sq_distances(Z, pairs), repeat)
        rows.append({"shape": what, "n": n, "rank": rank, "pairs": n_pairs,
                     "compiled_s": compiled, "numpy_s": reference,
                     "speedup": reference / compiled,
                     "max_rel_diff": float(np.max(np.abs(got - ref)) / ref.max())})
        print(f"{what}: compiled {compiled * 1e3:.3f} ms, numpy {reference * 1e3:.3f} ms "
              f"({reference / compiled:.1f}x)", flush=True)
    return pd.DataFrame(rows)


def outer_sum_cases(rng):
    """``(what, X, pairs)``: the synthetic :data:`OUTER_SUM_SHAPES` (each point's pairs listed
    together, as the constraint generators list them, with random partners), then the
    :data:`REAL_PAIR_SETS` whose data are available."""
    for what, n, d, n_pairs in OUTER_SUM_SHAPES:
        per_point = -(-n_pairs // n)
        pairs = np.stack([np.repeat(np.arange(n), per_point),
                          rng.integers(0, n, size=n * per_point)], axis=1)[:n_pairs]
        yield what, rng.normal(size=(n, d)), pairs
    for table, solver, dataset in REAL_PAIR_SETS:
        cell = next(c for c in table_cells(table) if (c.solver, c.dataset) == (solver, dataset))
        if cell.task is None:
            print(f"{dataset} {solver}: skipped ({cell.reason})", flush=True)
            continue
        X, _, _, _, constraints, _, _ = prepare_split(cell.task)
        pairs = (constraints.dissimilar if solver == "dml_eig"
                 else triplet_pairs(constraints.triplets)[0])
        yield f"{dataset} {solver} (real pairs)", X, np.asarray(pairs)


def time_pair_outer_sums(rng, repeat: int) -> pd.DataFrame:
    """``pair_outer_sum.csv``: :class:`PairOuterSum`'s pass against the CSR Laplacian product,
    per call with signed weights (the fixed set-up of either is not timed), alternating."""
    rows = []
    for what, X, pairs in outer_sum_cases(rng):
        (n, d), n_pairs = X.shape, len(pairs)
        w = rng.normal(size=n_pairs)
        compiled, reference = PairOuterSum(X, pairs), CsrPairOuterSum(X, pairs)
        rows.append(alternating_comparison({"shape": what, "n": n, "d": d, "pairs": n_pairs},
                                           lambda: compiled(w), lambda: reference(w), "csr",
                                           repeat))
    return pd.DataFrame(rows)


#: GD on the leaderboard's MNIST split 0 (training part): its tuned grid's low corner, the
#: iterations whose hinge weights are timed
SPARSE_GD = {"lam": 0.01, "step": 0.01}
SPARSE_GD_ITERATIONS = (1, 10, 40)


class _RecordedOuterSum(PairOuterSum):
    """:class:`PairOuterSum` that keeps its points, its pairs and a copy of every weight vector
    it is called with (``calls``)."""

    calls: list = []

    def __init__(self, X, pairs):
        super().__init__(X, pairs)
        self.points, self.pairs = X, np.asarray(pairs)

    def __call__(self, w):
        type(self).calls.append((self, np.array(w)))
        return super().__call__(w)


def time_sparse_pair_outer_sums(rng, repeat: int) -> pd.DataFrame:
    """``pair_outer_sum_sparse.csv``: GD's hinge weights at :data:`SPARSE_GD_ITERATIONS`,
    :class:`PairOuterSum` (the rows its nonzero weights reach) against the CSR product (every
    row), alternating."""
    try:
        _, (task, *_) = tasks_for("configs/leaderboard.yaml", "gd", "mnist", splits=1)
        X, y, _, _, constraints, _, _ = prepare_split(task)
    except (DataNotAvailable, SystemExit) as exc:  # no data or no such cell: say so, as above
        print(f"mnist gd: skipped ({exc})", flush=True)
        return pd.DataFrame()
    lowrank_dense.PairOuterSum, _RecordedOuterSum.calls = _RecordedOuterSum, []
    try:
        lowrank_dense.LowRankGD(**SPARSE_GD, max_iter=max(SPARSE_GD_ITERATIONS)).fit(
            X, y, constraints=constraints)
    finally:
        lowrank_dense.PairOuterSum = PairOuterSum
    rows = []
    for t in SPARSE_GD_ITERATIONS:
        recorded, w = _RecordedOuterSum.calls[t - 1]
        compiled = PairOuterSum(recorded.points, recorded.pairs)
        reference = CsrPairOuterSum(recorded.points, recorded.pairs)
        reached = np.unique(recorded.pairs[w != 0])
        row = {"shape": f"MNIST GD iteration {t}", "n": len(X), "d": X.shape[1],
               "pairs": len(w), "nonzero_pairs": float(np.mean(w != 0)),
               "points_reached": len(reached) / len(recorded.points)}
        rows.append(alternating_comparison(row, lambda: compiled(w), lambda: reference(w),
                                           "csr_every_row", repeat))
    return pd.DataFrame(rows)


def alternating_comparison(row: dict, compiled, reference, name: str, repeat: int) -> dict:
    """``row`` with the median seconds of ``compiled()`` and ``reference()`` (``compiled_s``,
    ``<name>_s``), their ratio and the largest relative difference of their results. The two
    alternate, ``repeat`` rounds of 3 calls each, and each keeps the median of its rounds'
    medians: on a shared machine, load that comes and goes then weighs on both alike."""
    ref, got = reference(), compiled()  # also the warm-up (the first call compiles)
    rounds = [(median_seconds(compiled, 3), median_seconds(reference, 3)) for _ in range(repeat)]
    compiled_s, reference_s = np.median(rounds, axis=0)
    print(f"{row['shape']}: compiled {compiled_s * 1e3:.3f} ms, {name} {reference_s * 1e3:.3f} "
          f"ms ({reference_s / compiled_s:.2f}x)", flush=True)
    return {**row, "compiled_s": compiled_s, f"{name}_s": reference_s,
            "speedup": reference_s / compiled_s,
            "max_rel_diff": float(np.max(np.abs(got - ref)) / np.abs(ref).max())}


def time_pair_quadratic_forms(rng, repeat: int) -> pd.DataFrame:
    """``pair_quadratic_forms.csv``: the forms of a dense symmetric W from ``X W`` against the
    difference rows ``einsum(D W, D)``, alternating as the outer sums."""
    rows = []
    for what, n, d, n_pairs in QUADRATIC_FORM_SHAPES:
        X = rng.normal(size=(n, d))
        G = rng.normal(size=(d, d))
        W = G + G.T  # symmetric, indefinite (a gradient step before its projection)
        pairs = rng.integers(0, n, size=(n_pairs, 2))
        D = X[pairs[:, 0]] - X[pairs[:, 1]]
        rows.append(alternating_comparison(
            {"shape": what, "n": n, "d": d, "pairs": n_pairs},
            lambda: pair_quadratic_forms(X @ W, X, pairs),
            lambda: np.einsum("ij,ij->i", D @ W, D), "difference_rows", repeat))
    return pd.DataFrame(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--out", type=Path, default=Path("results/bench"))
    parser.add_argument("--outer-sum-repeat", type=int, default=5,
                        help="alternating rounds per outer-sum shape (MNIST's call takes seconds)")
    parser.add_argument("--part", nargs="+", choices=PARTS, default=list(PARTS),
                        help="which comparisons to run (default: all)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for part in args.part:
        rng = np.random.default_rng(0)
        timing, repeat, name = PARTS[part]
        with threadpool_limits(1):
            table = timing(rng, getattr(args, repeat))
        table.to_csv(args.out / name, index=False)


#: part: (timing function, its repeat option, output file)
PARTS = {"distances": (time_pair_distances, "repeat", "pair_distances.csv"),
         "outer_sums": (time_pair_outer_sums, "outer_sum_repeat", "pair_outer_sum.csv"),
         "sparse_outer_sums": (time_sparse_pair_outer_sums, "outer_sum_repeat",
                               "pair_outer_sum_sparse.csv"),
         "quadratic_forms": (time_pair_quadratic_forms, "outer_sum_repeat",
                             "pair_quadratic_forms.csv")}


if __name__ == "__main__":
    main()
