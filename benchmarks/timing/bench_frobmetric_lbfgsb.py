"""FrobMetric's L-BFGS-B: ``scipy.optimize.minimize`` against the direct driver
(``solvers.lbfgsb.minimize_box``), timed in one run with one BLAS thread.

``minimize`` converts the dual's box bounds (one variable per triplet: 126,000 on letter) with
three per-variable Python passes before its first iteration; the driver builds the same bound
codes with array operations and runs the same loop. Per data set: the leaderboard's
preprocessing (z-scored letter; USPS projected on its 60 leading principal components, as Shen
et al. 2014 Table I) on a stratified 70 % training part, its 3-NN triplets, and FrobMetric at
C = 10 fitted through each path, alternated over ``--repeat`` rounds. The record is the median
CPU seconds of a fit per path, their ratio, the iterations, and whether the two fits' dual
variables are bit-identical (they must be: the same compiled routine visits the same iterates).

    python benchmarks/timing/bench_frobmetric_lbfgsb.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.decomposition import PCA
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from dml_bench.constraints import knn_triplets
from dml_bench.datasets.loader import load_dataset
from dml_bench.solvers import lbfgsb
from dml_bench.solvers.frobmetric import FrobMetric

OUT = Path("results/bench/frobmetric_lbfgsb.csv")


def training_part(name: str, pca: int | None):
    X, y, _ = load_dataset(name)
    X_train, _, y_train, _ = train_test_split(X, y, train_size=0.7, stratify=y, random_state=0)
    if pca:
        X_train = PCA(pca, random_state=0).fit_transform(X_train)
    else:
        X_train = (X_train - X_train.mean(0)) / np.where(X_train.std(0) > 0, X_train.std(0), 1)
    return X_train, y_train


def fit_cpu(X, c, direct: bool):
    """CPU seconds of one fit through one path, and the fitted learner."""
    lbfgsb.direct_available = (lambda: direct)
    start = time.process_time()
    model = FrobMetric(C=10.0).fit(X, constraints=c)
    return time.process_time() - start, model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    available = lbfgsb.direct_available()
    if not available:
        raise SystemExit("this scipy's setulb is not the one the direct driver calls: nothing to "
                         "compare (minimize is used)")
    rows = []
    with threadpool_limits(1):
        for label, name, pca in [("letter", "letter", None), ("usps_pca60", "usps", 60)]:
            X, y = training_part(name, pca)
            c = knn_triplets(X, y, k=3)
            times = {"minimize": [], "direct": []}
            fits = {}
            for _ in range(args.repeat):
                for path in times:
                    seconds, fits[path] = fit_cpu(X, c, path == "direct")
                    times[path].append(seconds)
            old, new = (float(np.median(times[p])) for p in ("minimize", "direct"))
            rows.append({
                "dataset": label, "n_train": len(X), "d": X.shape[1], "n_triplets": len(c.triplets),
                "n_iter": fits["direct"].n_iter_, "cpu_minimize_s": round(old, 3),
                "cpu_direct_s": round(new, 3), "ratio_direct_over_minimize": round(new / old, 3),
                "identical_iterates": bool(
                    np.array_equal(fits["direct"].dual_coef_, fits["minimize"].dual_coef_)
                    and np.array_equal(fits["direct"].trace_["objective"],
                                       fits["minimize"].trace_["objective"])),
                "repeat": args.repeat})
            print(rows[-1], flush=True)
    lbfgsb.direct_available = lambda: available
    OUT.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(OUT, index=False)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
