"""Embedding-quality criteria (dml_bench.reproduction.studies.embedding_quality) and the Shen
2014 §IV-B study.

References: hand-computed scaling factors, scikit-learn's NearestNeighbors (Q_NX as overlapping
K-neighbourhoods) and PCA (the principal spread directions), invariances the definitions imply,
and the paper's Tables V–VI as printed in its text.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import papers_dir

from dml_bench.reproduction.studies.embedding_quality import (
    data_neighbours, embedding_criteria, local_criteria, neighbourhood_preservation,
    principal_spread_directions, scaling_factors)
from dml_bench.papers import load_paper_table

#: X = 0, 1, 3, 7 on a line, embedded at 0, 2, 4, 8; k = 2 (no ties). By hand: neighbours
#: 0:{1, 3}, 1:{0, 3}, 3:{1, 0}, 7:{3, 1}; ratios ‖Δy‖/‖Δx‖ [2, 4/3], [2, 1], [1, 4/3], [1, 1],
#: mean 4/3; per-point std of the normalised ratios (1/3, 1/2, 1/6, 0)·3/4
LINE_X = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0], [7.0, 0.0]])
LINE_Y = np.array([[0.0, 0.0], [2.0, 0.0], [4.0, 0.0], [8.0, 0.0]])


def rotation(angle):
    return np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])


def test_scaling_factors_and_criteria_by_hand():
    nbrs = data_neighbours(LINE_X, 2)
    assert [set(r) for r in nbrs] == [{1, 2}, {0, 2}, {1, 0}, {2, 1}]
    s = scaling_factors(LINE_X, LINE_Y, nbrs)
    by_point = {i: dict(zip(nbrs[i], s[i])) for i in range(4)}
    c = 3 / 4
    assert by_point[0] == pytest.approx({1: 2 * c, 2: 4 / 3 * c})
    assert by_point[1] == pytest.approx({0: 2 * c, 2: 1 * c})
    assert by_point[2] == pytest.approx({1: 1 * c, 0: 4 / 3 * c})
    assert by_point[3] == pytest.approx({2: 1 * c, 1: 1 * c})
    crit = embedding_criteria(LINE_X, LINE_Y, k=2)
    assert crit["alstd"] == pytest.approx(3 / 16)  # mean of (1/3, 1/2, 1/6, 0)·3/4
    assert crit["aled"] == pytest.approx(3 / 8)  # two values: range = 2·std
    assert crit["alcd"] == pytest.approx(1.0)  # every neighbourhood spreads along the line
    assert crit["gscd"] == pytest.approx(3 / 16)  # LCD_i = 1: GSCD = ALSTD


def test_criteria_are_invariant_to_similarities_of_either_space():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    Y = np.column_stack([X[:, 0] ** 2 + X[:, 1], np.sin(X[:, 2]) + 0.3 * X[:, 0]])
    ref = embedding_criteria(X, Y, k=6)
    moved = (3.7 * Y @ rotation(0.8) + [5.0, -2.0]) * [1.0, -1.0]  # scale, rotate, shift, reflect
    q3 = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    for X2, Y2 in ((X, moved), (0.01 * X @ q3 + 4.0, Y)):
        assert embedding_criteria(X2, Y2, k=6) == pytest.approx(ref, rel=1e-9)


def test_a_similarity_embedding_has_zero_deviation():
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(80, 2)) * [4.0, 1.0]
    crit = embedding_criteria(X, 0.5 * X @ rotation(1.1) - 3.0, k=6)
    assert crit["alstd"] == pytest.approx(0.0, abs=1e-12)
    assert crit["aled"] == pytest.approx(0.0, abs=1e-12)
    assert crit["gscd"] == pytest.approx(0.0, abs=1e-12)
    # a strip 4 × 1 with uniform density: a neighbourhood's spread has no favoured direction, the
    # PSDs of neighbours agree only partly; squashing it along y makes them all point along x
    assert embedding_criteria(X, X * [1.0, 1e-3], k=6)["alcd"] > 0.999
    lcd = local_criteria(X, X * [1.0, 1e-3], k=6)["lcd"]
    assert lcd.shape == (80,) and (lcd <= 1 + 1e-12).all()


def test_principal_spread_directions_match_scikit_learn_pca():
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 3))
    Y = rng.normal(size=(40, 2)) * [2.0, 0.5]
    nbrs = data_neighbours(X, 6)
    directions, variances = principal_spread_directions(Y, nbrs)
    for i in (0, 17, 39):
        patch = np.vstack([Y[i], Y[nbrs[i]]])
        pca = PCA(2).fit(patch)
        assert abs(directions[i, :, 0] @ pca.components_[0]) == pytest.approx(1.0)
        assert abs(directions[i, :, 1] @ pca.components_[1]) == pytest.approx(1.0)
        # scikit-learn's variances divide by k (ddof = 1), ours by k + 1 points
        np.testing.assert_allclose(variances[i] * 7 / 6, pca.explained_variance_)
    assert np.allclose(np.einsum("nd,nd->n", directions[:, :, 0], directions[:, :, 1]), 0.0)


def test_q_nx_is_the_mean_overlap_of_scikit_learn_neighbourhoods():
    from sklearn.neighbors import NearestNeighbors

    rng = np.random.default_rng(3)
    X = rng.normal(size=(50, 3))
    Y = X[:, :2] + 0.3 * rng.normal(size=(50, 2))
    Q, B = neighbourhood_preservation(X, Y, 20)
    for K in (1, 5, 20):
        nx = NearestNeighbors(n_neighbors=K + 1).fit(X).kneighbors(X)[1][:, 1:]
        ny = NearestNeighbors(n_neighbors=K + 1).fit(Y).kneighbors(Y)[1][:, 1:]
        overlap = np.mean([len(set(a) & set(b)) for a, b in zip(nx, ny)]) / K
        assert Q[K - 1] == pytest.approx(overlap)
    # an isometry (up to scale) keeps every rank: Q_NX = 1, B_NX = 0
    Q_iso, B_iso = neighbourhood_preservation(X, 2.5 * X @ np.linalg.qr(rng.normal(size=(3, 3)))[0],
                                              49)
    np.testing.assert_allclose(Q_iso, 1.0)
    np.testing.assert_allclose(B_iso, 0.0)
    assert np.all(np.abs(B) <= 1.0)


def test_tables_v_and_vi_match_the_paper_text():
    path = papers_dir() / "shen2014_frobmetric_dual.txt"
    if not path.is_file():
        pytest.skip(f"paper text not found at {path} (set DMLBENCH_PAPERS to its folder)")
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("TABLE V "))
    printed, criterion = {}, None
    for line in lines[start:start + 20]:
        cells = line.split("\t")
        if cells[0] in ("ALSTD", "ALED", "ALCD", "GSCD"):
            criterion = cells[0].lower()
        elif cells[0] in ("Swiss roll", "Teapot") and criterion:
            row = "swiss_roll" if cells[0] == "Swiss roll" else "teapot"
            numbers = [float(c) for c in cells[1:] if re.fullmatch(r"\d+(\.\d+)?", c.strip())]
            printed[criterion, row] = numbers
    assert len(printed) == 8
    for key in ("table5_alstd", "table5_aled", "table6_alcd", "table6_gscd"):
        table = load_paper_table(f"shen2014/{key}")
        assert list(table.column_names) == ["frobmetric", "mvu", "isomap", "lle"]
        for row in ("swiss_roll", "teapot"):
            ours = [table.values[row][c][0] for c in table.column_names]
            assert ours == printed[table.quantity, row], (key, row)


def test_study_writes_every_file(tmp_path):
    from dml_bench.reproduction.studies.mvu_study import run_embedding_quality_study

    pytest.importorskip("cvxpy")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = run_embedding_quality_study(tmp_path, n=20, k=4,
                                          interior_point_solver="CLARABEL", K_max=5,
                                          frobenius_kw={"max_iter": 100})
    for key in ("summary_csv", "quality_csv", "embedding_csv", "fig7_png", "fig7_pdf",
                "fig9_png", "fig9_pdf"):
        assert out[key].is_file() and out[key].stat().st_size > 0, key
    summary = pd.read_csv(out["summary_csv"])
    assert list(summary["solver"]) == ["isomap", "lle", "frobmetric", "mvu"]
    assert summary[["alstd", "aled", "alcd", "gscd"]].notna().all().all()
    assert summary["alcd"].between(0, 1).all() and (summary["aled"] >= summary["alstd"]).all()
    assert len(pd.read_csv(out["quality_csv"])) == 4 * 5
    psd = pd.read_csv(out["embedding_csv"])
    assert len(psd) == 4 * 20 and np.allclose(np.hypot(psd["u1x"], psd["u1y"]), 1.0)


def test_same_runs_targets_read_and_rerun_the_study(tmp_path, monkeypatch):
    from dml_bench.reproduction import targets as reproduction
    from dml_bench.reproduction.report import function_comparisons

    summary = pd.DataFrame({"dataset": "swiss_roll", "label": ["FrobMetric", "MVU (SCS)"],
                            "solver": ["frobmetric", "mvu"], "alstd": [0.2, 0.05]})
    summary.to_csv(tmp_path / "summary.csv", index=False)
    comparisons = dict(function_comparisons(tmp_path, ["shen2014/table5_alstd"]))
    alstd = comparisons["shen2014/table5_alstd"].set_index(["dataset", "solver"])
    assert len(alstd) == 8 and (alstd["status"] == "not run").sum() == 6  # 4 teapot, 2 unrun
    assert alstd.loc[("swiss_roll", "mvu"), ["paper_mean", "ours_mean"]].tolist() == [0.038, 0.05]
    assert alstd.loc[("swiss_roll", "mvu"), "ratio"] == pytest.approx(0.05 / 0.038)
    assert alstd.loc["teapot", "note"].str.contains("not in the mirror").all()

    # a same_runs target of the study reruns it (once, into its output) under the study's id
    calls = []

    def fake(out_dir, **params):
        calls.append(params)
        return {"summary_csv": tmp_path / "summary.csv"}

    monkeypatch.setattr(
        "dml_bench.reproduction.studies.mvu_study.run_embedding_quality_study", fake)
    record = reproduction.reproduce("shen2014-table5", results_root=tmp_path / "results")
    assert record["target"] == "shen2014-fig7" and calls and calls[0]["n"] == 300
    records = json.loads((tmp_path / "results" / "shen2014_fig7" / "reproduce.json").read_text())
    assert list(records) == ["shen2014-fig7"]


# ------------------------------------------------------------------ the study on supplied images

REPO = Path(__file__).resolve().parents[1]


def supply_images(mirror: Path, name: str, shape: tuple[int, int], y) -> Path:
    """A generated file of the registered format (small random pixel values), at the mirror
    path of data set ``name``."""
    path = mirror / name / f"{name}.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, X=np.random.default_rng(0).random(shape), y=np.asarray(y, dtype=np.int64))
    return mirror


@pytest.fixture
def teapot_targets(tmp_path, monkeypatch):
    """targets.yaml with shen2014-fig5 kept but made quick (SDP comparator off, 5 L-BFGS-B
    steps, K ≤ 10), and a generated 200 × 23028 teapot file in a mirror folder."""
    from dml_bench.reproduction import targets as reproduction

    monkeypatch.chdir(REPO)
    targets = yaml.safe_load((REPO / "dml_bench/reproduction/targets.yaml").read_text())
    targets["targets"]["shen2014-fig5"]["params"].update(
        interior_point_max_n=0, K_max=10, frobenius_kw={"max_iter": 5})
    (tmp_path / "targets.yaml").write_text(yaml.safe_dump(targets, sort_keys=False))
    monkeypatch.setattr(reproduction, "TARGETS_FILE", tmp_path / "targets.yaml")
    monkeypatch.setattr(reproduction.load_targets, "__defaults__", (tmp_path / "targets.yaml",))
    monkeypatch.setenv("DMLBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DMLBENCH_DATA_MIRROR", str(supply_images(
        tmp_path / "mirror", "teapot", (200, 23028), np.arange(200))))
    return tmp_path


def test_teapot_targets_run_end_to_end_on_a_generated_file(teapot_targets):
    from click.testing import CliRunner

    from dml_bench.reproduction.claims import check_claims
    from dml_bench.cli import main
    from dml_bench.reproduction.studies.mvu_study import run_embedding_quality_study as run_study
    from dml_bench.reproduction.report import collect

    results = teapot_targets / "results"
    run = CliRunner().invoke(main, ["reproduce", "shen2014-fig8", "--results-dir", str(results)])
    assert run.exit_code == 0, run.output
    out = results / "shen2014_fig5"  # fig8 reads (and reruns) fig5's teapot run
    for name in ("summary.csv", "quality_curves.csv", "embedding_psd.csv", "fig5_embedding.png",
                 "fig5_embedding.pdf", "fig8_quality.png", "fig8_quality.pdf", "reproduce.json"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    assert list(json.loads((out / "reproduce.json").read_text())) == ["shen2014-fig5"]
    summary = pd.read_csv(out / "summary.csv")
    assert summary["dataset"].eq("teapot").all() and summary["n"].eq(200).all()
    assert list(summary["solver"]) == ["isomap", "lle", "frobmetric"]  # comparator off
    assert np.isfinite(summary[["alstd", "aled", "alcd", "gscd", "seconds"]]).all().all()
    assert "knn_edges_across_turns" not in summary  # a swiss-roll diagnostic
    quality = pd.read_csv(out / "quality_curves.csv")
    assert len(quality) == 3 * 10 and np.isfinite(quality[["Q_nx", "B_nx"]]).all().all()
    points = pd.read_csv(out / "embedding_psd.csv")
    assert {"y", "y1", "y2"} <= set(points) and "t" not in points  # coloured by y
    np.testing.assert_array_equal(points.loc[points["method"] == "FrobMetric", "y"],
                                  np.arange(200))

    # the report: fig8 compares the teapot rows of Tables V–VI; the claims evaluate
    entries = {e["target"].id: e for e in collect(results)
               if e["target"].id in ("shen2014-fig5", "shen2014-fig8")}
    assert entries["shen2014-fig5"]["status"] == entries["shen2014-fig8"]["status"] == "ran"
    assert [f.name for f in entries["shen2014-fig8"]["figures"]] == ["fig8_quality.png"]
    comparisons = dict(entries["shen2014-fig8"]["comparisons"])
    assert set(comparisons) == {"shen2014/table5_alstd", "shen2014/table5_aled",
                                "shen2014/table6_alcd", "shen2014/table6_gscd"}
    alstd = comparisons["shen2014/table5_alstd"].set_index(["dataset", "solver"])
    assert alstd.loc[("teapot", "frobmetric"), "ours_mean"] == pytest.approx(
        summary.set_index("solver").loc["frobmetric", "alstd"])
    assert alstd.loc[("teapot", "mvu"), "status"] == "not run"
    assert (alstd.loc["swiss_roll", "status"] == "not run").all()  # shen2014-table5's rows
    verdicts = {v.claim.id: v for v in check_claims(list(entries.values()), results)}
    assert verdicts["teapot_q_on_par"].holds is not None  # Q_nx of FrobMetric and Isomap
    assert verdicts["teapot_q_on_par"].ours.endswith("of 10 rows")
    for claim in ("teapot_order_of_magnitude", "teapot_alstd_above_isomap"):  # need MVU
        assert verdicts[claim].holds is None and "no row" in verdicts[claim].ours

    with pytest.raises(ValueError, match=r"unknown figure kinds \['fig8'\]; choose from"):
        run_study(teapot_targets / "unused", figures={"fig8": "fig8_quality"})
    assert not (teapot_targets / "unused").exists()


@pytest.mark.slow
def test_faces_study_runs_end_to_end_on_a_generated_file(tmp_path, monkeypatch):
    """The fig6 target's function with its own parameters, at the registered size (1965 × 560:
    the loader checks it), made quick: one L-BFGS-B step, K ≤ 10."""
    from dml_bench.reproduction.targets import load_targets

    monkeypatch.setenv("DMLBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DMLBENCH_DATA_MIRROR", str(supply_images(
        tmp_path / "mirror", "frey_faces", (1965, 560), np.zeros(1965))))
    target = load_targets()["shen2014-fig6"]
    module, name = target.function.split(":")
    study = getattr(__import__(module, fromlist=[name]), name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = study(tmp_path / target.output, **target.params, K_max=10,
                    frobenius_kw={"max_iter": 1})
    for key in ("summary_csv", "quality_csv", "embedding_csv", "fig6_png", "fig6_pdf"):
        assert out[key].is_file() and out[key].stat().st_size > 0, key
    summary = pd.read_csv(out["summary_csv"])
    # interior_point_max_n: the SDP comparator is out of reach at n = 1965
    assert list(summary["solver"]) == ["isomap", "lle", "frobmetric"]
    assert summary["n"].eq(1965).all() and summary["k"].eq(5).all()
    assert np.isfinite(summary[["alstd", "aled", "alcd", "gscd", "seconds"]]).all().all()
