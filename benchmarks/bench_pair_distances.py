"""The compiled row-wise pair distances against numpy's gather and ``einsum`` (issue #21).

``linalg.pair_sq_distances`` is called on every loss evaluation of LMNN, FrobMetric, SDPMetric,
Xing, ITML and POLA. This times it against the numpy formulation it replaced (difference rows
gathered ``chunk`` pairs at a time, then ``einsum``), both in this run, with one BLAS thread, on
the shapes of the solvers' pair sets: n points, rank r of the mapped points ``Z``, and the
number of pairs. Both results are compared (largest relative difference).

    python benchmarks/bench_pair_distances.py [--repeat 30] [--out results/bench]

Writes ``pair_distances.csv``: per shape the median seconds of each and their ratio.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from bench_eigen_update import median_seconds  # benchmarks/, beside this script
from dml_bench.solvers.linalg import pair_sq_distances

#: (what, n points, rank, pairs): breast cancer's LMNN pairs (targets + impostors), a USPS
#: triplet set's distinct pairs, digits at full rank, MNIST's FrobMetric pairs
SHAPES = (("breast_cancer LMNN", 398, 30, 6_000), ("USPS triplets", 5_103, 256, 61_000),
          ("digits", 1_257, 64, 30_000), ("MNIST triplets", 42_000, 784, 250_000))


def numpy_pair_sq_distances(Z, pairs, chunk=2048):
    """The numpy reference: gathered difference rows, ``chunk`` pairs at a time, and einsum."""
    out = np.empty(len(pairs))
    for s in range(0, len(pairs), chunk):
        Y = Z[pairs[s:s + chunk, 0]] - Z[pairs[s:s + chunk, 1]]
        out[s:s + chunk] = np.einsum("ij,ij->i", Y, Y)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--out", type=Path, default=Path("results/bench"))
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    rows = []
    with threadpool_limits(1):
        for what, n, rank, n_pairs in SHAPES:
            Z = rng.normal(size=(n, rank))
            pairs = rng.integers(0, n, size=(n_pairs, 2))
            ref = numpy_pair_sq_distances(Z, pairs)  # also the warm-up (the first call compiles)
            got = pair_sq_distances(Z, pairs)
            compiled = median_seconds(lambda: pair_sq_distances(Z, pairs), args.repeat)
            reference = median_seconds(lambda: numpy_pair_sq_distances(Z, pairs), args.repeat)
            rows.append({"shape": what, "n": n, "rank": rank, "pairs": n_pairs,
                         "compiled_s": compiled, "numpy_s": reference,
                         "speedup": reference / compiled,
                         "max_rel_diff": float(np.max(np.abs(got - ref)) / ref.max())})
            print(f"{what}: compiled {compiled * 1e3:.3f} ms, numpy {reference * 1e3:.3f} ms "
                  f"({reference / compiled:.1f}x)", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(args.out / "pair_distances.csv", index=False)


if __name__ == "__main__":
    main()
