"""Fit metric-learn's supervised learners on prepared splits; run by ``bench_metric_learn.py``.

Runs in the metric-learn virtual environment (numpy, metric-learn, threadpoolctl only: no
``dml_bench``). Reads ``<job>.npz`` (``X_train_<i>``, ``y_train_<i>``, ``X_test_<i>``,
``y_test_<i>``) and ``<job>.json`` (``{"classes": [...], "seeds": {"<i>": seed}}``); fits each
class with its defaults (``random_state`` = the split's seed where it takes one) under one BLAS
thread and writes the transformed points to ``<out>.npz`` (``<class>_<i>_train`` / ``_test``)
and per fit the wall and CPU seconds (the median of repeats for a fit under half a second:
``repeat_timing.timed``), iterations and convergence to ``<out>.json``. For ``ITML_Supervised`` it also writes
the problem it solved: its pairs (``ITML_Supervised_<i>_pairs``, similar rows first; the draw of
its ``fit``, repeated with the same seed), their number of similar pairs and its ``bounds_``, so
that ``bench_metric_learn.py`` can fit our ITML on the same problem (and the pairs of
``MMC_Supervised``, the same draw, for our Xing); for ``LSML_Supervised``
its quadruplets (``LSML_Supervised_<i>_quadruplets``, the draw of its ``fit`` repeated).

    python metric_learn_worker.py JOB OUT
"""

import json
import sys
import warnings

import metric_learn
import numpy as np
from metric_learn.constraints import Constraints
from threadpoolctl import threadpool_limits

from repeat_timing import timed  # beside this script: the same rule as bench_metric_learn.py


def converged(model):
    """The convergence flag where the class keeps one (MMC), else ``n_iter_`` below the
    iteration cap (LMNN and ITML count from their loop index, NCA and MLKR from L-BFGS); None for
    the closed forms and the classes without ``n_iter_``."""
    if hasattr(model, "converged_"):
        return bool(model.converged_)
    if not hasattr(model, "n_iter_"):
        return None
    last = model.max_iter - (0 if isinstance(model, (metric_learn.NCA, metric_learn.MLKR)) else 1)
    return bool(model.n_iter_ < last)


def itml_pairs(y, seed):
    """The pairs ``ITML_Supervised(random_state=seed).fit(X, y)`` draws (metric-learn 0.7.0: 20·c²
    constraints of ``Constraints(y).positive_negative_pairs``), as one (m, 2) index array with
    the similar pairs first, and their number; ``MMC_Supervised`` draws the same pairs."""
    a, b, c, d = Constraints(y).positive_negative_pairs(20 * len(np.unique(y)) ** 2,
                                                        random_state=seed)
    return np.vstack([np.column_stack([a, b]), np.column_stack([c, d])]), len(a)


def lsml_quadruplets(y, seed):
    """The quadruplets ``LSML_Supervised(random_state=seed).fit(X, y)`` learns from (metric-learn
    0.7.0: 20·c² of ``Constraints(y).positive_negative_pairs(..., same_length=True)``, each a
    similar pair (a, b) and a dissimilar one (c, d)), as one (m, 4) index array."""
    a, b, c, d = Constraints(y).positive_negative_pairs(20 * len(np.unique(y)) ** 2,
                                                        same_length=True, random_state=seed)
    return np.column_stack([a, b, c, d])


def main(job: str, out: str) -> None:
    data = np.load(f"{job}.npz")
    spec = json.load(open(f"{job}.json"))
    arrays, records = {}, []
    for split, seed in spec["seeds"].items():
        X_train, y_train = data[f"X_train_{split}"], data[f"y_train_{split}"]
        for name in spec["classes"]:
            cls = getattr(metric_learn, name)
            seeded = "random_state" in cls().get_params()  # LFDA and Covariance draw nothing
            model = cls(random_state=seed) if seeded else cls()
            record = {"class": name, "split": int(split)}
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    wall, cpu, repeats = timed(lambda: model.fit(X_train, y_train))
                record.update(fit_time=wall, fit_cpu_time=cpu, repeats=repeats)
                points = model.transform(X_train), model.transform(data[f"X_test_{split}"])
                if not all(np.isfinite(p).all() for p in points):
                    raise FloatingPointError("non-finite transformed points")
                arrays[f"{name}_{split}_train"], arrays[f"{name}_{split}_test"] = points
                if name in ("ITML_Supervised", "MMC_Supervised"):
                    arrays[f"{name}_{split}_pairs"], record["n_similar"] = itml_pairs(
                        y_train, seed)
                if name == "ITML_Supervised":
                    record["bounds"] = [float(b) for b in model.bounds_]
                if name == "LSML_Supervised":
                    arrays[f"{name}_{split}_quadruplets"] = lsml_quadruplets(y_train, seed)
                n_iter = int(model.n_iter_) if hasattr(model, "n_iter_") else None
                record.update(n_iter=n_iter, converged=converged(model))
            except Exception as exc:  # one failing fit is reported, the others still run
                record["failed"] = f"{type(exc).__name__}: {exc}".splitlines()[0]
            records.append(record)
    np.savez(f"{out}.npz", **arrays)
    with open(f"{out}.json", "w") as fh:
        json.dump({"version": metric_learn.__version__, "fits": records}, fh)


if __name__ == "__main__":
    with threadpool_limits(1):
        main(*sys.argv[1:])
