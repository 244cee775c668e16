"""Sparse data (DEXTER, CSR) through the pipeline: preprocessing and the neighbour search keep it
sparse; a solver gets CSR rows only when it takes them (``accepts_sparse``), dense rows otherwise."""

import numpy as np
import scipy.sparse

from dml_bench.experiment.config import parse_config
from dml_bench.experiment.sections import DataPlace
from dml_bench.run.knn import run_task
from dml_bench.experiment.knn import all_tasks, prepare_split


def test_dense_and_sparse_solvers_run_on_dexter(mirror, monkeypatch):
    monkeypatch.setenv("DMLBENCH_DATA_MIRROR", str(mirror))
    exp = parse_config({
        "name": "sparse_check",
        "datasets": [{"name": "dexter", "normalize": "std", "n_samples": 120}],
        "split": {"n_splits": 1},
        "solvers": [{"name": "pca"},
                    {"name": "sgd_incsvd", "params": {"max_iter": 20, "batch_size": 10}}],
    })
    tasks = {t.solver.name: t for t in all_tasks(exp, DataPlace(str(mirror)))}
    dense = prepare_split(tasks["pca"])
    sparse = prepare_split(tasks["sgd_incsvd"])
    assert isinstance(dense[0], np.ndarray) and isinstance(dense[2], np.ndarray)
    assert scipy.sparse.issparse(sparse[0]) and scipy.sparse.issparse(sparse[2])
    np.testing.assert_array_equal(dense[0], sparse[0].toarray())
    np.testing.assert_array_equal(dense[2], sparse[2].toarray())
    # the same neighbour constraints for both (found once, on the sparse rows)
    np.testing.assert_array_equal(dense[4].triplets, sparse[4].triplets)
    for task in tasks.values():
        row = run_task(task)
        assert "error_type" not in row or not row.get("error_type"), row
        assert row["n_features"] == 20_000 and 0 <= row["error"] <= 1

