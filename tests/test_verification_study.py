"""The face-verification stand-in (dml_bench.reproduction.studies.verification_standin): files,
summary statistics, CLI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dml_bench.reproduction.studies.verification_standin import (main, run_verification_standin,
                                                                 thin_roc)

pytestmark = pytest.mark.usefixtures("tmp_cache")


def test_standin_on_orl_writes_folds_summary_roc_and_figure(mirror, tmp_path):
    solvers = (("euclidean", {}), ("itml", {"max_iter": 3}))
    result = run_verification_standin(tmp_path, "orl_faces", solvers, n_folds=2, n_matched=20,
                                      n_mismatched=20, pca=10)
    for name in ("verification_folds.csv", "verification_summary.csv", "verification_roc.csv",
                 "fig_verification_roc.png", "fig_verification_roc.pdf"):
        assert (tmp_path / name).stat().st_size > 0
    folds = pd.read_csv(tmp_path / "verification_folds.csv")
    summary = pd.read_csv(tmp_path / "verification_summary.csv").set_index("solver")
    roc = pd.read_csv(tmp_path / "verification_roc.csv")
    assert list(summary.index) == ["euclidean", "itml"]
    assert list(roc.columns) == ["solver", "fpr", "tpr"]
    assert len(folds) == 4 and (folds[["n_test_pairs", "n_train_pairs"]] == 40).all().all()
    for name, part in folds.groupby("solver"):
        acc = part["accuracy"].to_numpy()
        assert summary.loc[name, "accuracy_mean"] == pytest.approx(acc.mean())
        assert summary.loc[name, "accuracy_sem"] == pytest.approx(acc.std(ddof=1) / np.sqrt(2))
        assert summary.loc[name, "fit_time_mean"] == pytest.approx(part["fit_time"].mean())
        curve = roc[roc["solver"] == name]
        assert curve[["fpr", "tpr"]].iloc[[0, -1]].to_numpy().tolist() == [[0, 0], [1, 1]]
        assert 0 <= summary.loc[name, "auc"] <= 1 and 0 <= summary.loc[name, "eer"] <= 1
    pd.testing.assert_frame_equal(result["summary"].set_index("solver"), summary, check_dtype=False)


def test_thin_roc_keeps_the_ends_and_at_most_n_points():
    roc = pd.DataFrame({"fpr": np.linspace(0, 1, 1001), "tpr": np.linspace(0, 1, 1001)})
    thin = thin_roc(roc, 50)
    assert len(thin) == 50 and thin.index[0] == 0 and thin.index[-1] == 1000
    assert thin_roc(roc.head(10), 50).equals(roc.head(10))


@pytest.mark.parametrize("argv, message", [
    (["--folds", "1"], "need --folds >= 2"),
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["--dataset", "orl_faces", "--pairs", "300"], "180 distinct matched pairs"),
])
def test_bad_options_end_in_one_line(mirror, tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["--out", str(tmp_path / "out"), *argv])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and message in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()
