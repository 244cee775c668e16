"""Fit metric-learn's ITML, MMC and LMNN on prepared problems; run by ``referee_metric_learn.py``.

Runs in the metric-learn virtual environment (numpy, metric-learn, threadpoolctl only: no
``dml_bench``). Reads ``<job>.npz`` (per split ``<i>``: ``X_train_<i>``, ``y_train_<i>``,
``X_test_<i>``, the pairs ``pairs_<i>`` as row indices into ``X_train_<i>`` and their labels
``pair_y_<i>`` in {−1, +1}) and ``<job>.json`` (``{"fits": [{"split", "method", "params"}]}``).
ITML and MMC are fitted on the given pairs (``fit(pairs, y)`` with ``preprocessor=X_train``),
LMNN on the labels; each under one BLAS thread, with the given parameters on top of the class's
defaults. Writes the transformed training and test points to ``<out>.npz``
(``<method>_<i>_train`` / ``_test``) and per fit its seconds and iterations to ``<out>.json``.

    python referee_worker.py JOB OUT
"""

import json
import sys
import time
import warnings

import metric_learn
import numpy as np
from threadpoolctl import threadpool_limits

CLASSES = {"itml": metric_learn.ITML, "xing": metric_learn.MMC, "lmnn": metric_learn.LMNN}


def main(job: str, out: str) -> None:
    data = np.load(f"{job}.npz")
    spec = json.load(open(f"{job}.json"))
    arrays, records = {}, []
    for fit in spec["fits"]:
        split, method = fit["split"], fit["method"]
        X_train = data[f"X_train_{split}"]
        record = {"split": split, "method": method}
        try:
            with warnings.catch_warnings(), threadpool_limits(1):
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                if method == "lmnn":
                    model = CLASSES[method](**fit["params"]).fit(X_train,
                                                                 data[f"y_train_{split}"])
                else:
                    model = CLASSES[method](preprocessor=X_train, **fit["params"])
                    model.fit(data[f"pairs_{split}"], data[f"pair_y_{split}"])
                record["fit_time"] = time.perf_counter() - start
            record["n_iter"] = int(getattr(model, "n_iter_", -1))
            arrays[f"{method}_{split}_train"] = model.transform(X_train)
            arrays[f"{method}_{split}_test"] = model.transform(data[f"X_test_{split}"])
        except Exception as exc:  # recorded per fit; the others go on
            record["failed"] = f"{type(exc).__name__}: {exc}"
        records.append(record)
    np.savez(f"{out}.npz", **arrays)
    with open(f"{out}.json", "w") as fh:
        json.dump({"fits": records, "version": metric_learn.__version__}, fh)


if __name__ == "__main__":
    main(*sys.argv[1:3])
