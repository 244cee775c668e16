"""``benchmarks/diagnoses/protocol_sweep.py``: the variant grids, merging reruns, and the protocol
ranking."""

from __future__ import annotations

import pandas as pd
import pytest

from dml_bench.solvers import ITML as SOLVERS_ITML

DML_EIG, SDP = "ying2012_table4/dml_eig", "shen2010_table2/sdpmetric_squared_hinge"


@pytest.fixture(scope="module")
def sweep(benchmark_script):
    return benchmark_script("diagnoses/protocol_sweep")


def test_variant_grid_and_restriction(sweep):
    # the grid, then Table 1 taken literally: 4 ridges × 2 outputs, of which 2 are in the grid
    assert len(sweep.variants(DML_EIG)) == 2 * 2 * 2 * 2 * 2 + 4 * 2 - 2
    assert len(sweep.variants("ying2012_table4/lmnn_eig")) == 2 * 2 * 2 * 2  # config's norm only
    picked = sweep.variants(DML_EIG, {"ridge": 1e-6, "max_iter": 100, "scale": "none"})
    assert len(picked) == 4
    assert all(v["ridge"] == 1e-6 and v["max_iter"] == 100 for v in picked)
    literal = sweep.variants(DML_EIG, {"stopping": "objective", "scale": "none",
                                       "normalize": "config", "max_iter": 1000})
    assert {(v["ridge"], v["ridge_mode"], v["output"]) for v in literal} == {
        (r, m, o) for r, m in ((1e-2, "relative"), (1e-6, "relative"), (1e-8, "relative"),
                               (1e-8, "absolute")) for o in ("last", "previous")}
    assert sweep.headline(DML_EIG) in sweep.variants(DML_EIG)
    assert sweep.headline(DML_EIG) == {"stopping": "gap", "scale": "none", "ridge": 1e-2,
                                       "normalize": "config", "max_iter": 1000,
                                       "ridge_mode": "relative", "output": "last"}
    assert sweep.parse_scalar("1e-6") == 1e-6 and sweep.parse_scalar("100") == 100
    assert sweep.parse_scalar("none") == "none"


def test_every_sweep_names_its_configs_label(sweep):
    from dml_bench.experiment.config import load_config

    for name, entry in sweep.SWEEPS.items():
        exp = load_config(entry["config"])
        assert entry["label"] in {s.label for s in exp.solvers}, name
        assert set(entry["skip"]) <= {d.label for d in exp.datasets}, name
        assert sweep.headline(name) in sweep.variants(name), name


def test_a_preset_axis_builds_the_parameters_it_names(sweep):
    """ITML's cap axis: the headline is the runner's ITML (its rule, 1000 sweeps), the variant
    the authors' cap of 10⁵ projections without a sweep cap."""
    from dml_bench.experiment.config import load_config
    from dml_bench.experiment.knn import all_tasks

    name = "ying2012_table4/itml"
    entry = sweep.SWEEPS[name]
    task = next(t for t in all_tasks(load_config(entry["config"])) if t.solver.label == "itml")
    head, authors = sweep.variants(name)
    model = sweep.build_solver(task, {"gamma": 0.1}, head, entry["presets"])
    assert (model.max_iter, model.max_proj, model.gamma) == (1000, None, 0.1)
    assert model.get_params() == SOLVERS_ITML(gamma=0.1).get_params()  # the runner's defaults
    model = sweep.build_solver(task, {"gamma": 0.1}, authors, entry["presets"])
    assert (model.max_iter, model.max_proj) == (None, 100000)


def test_the_sdpmetric_sweep_builds_its_solver_as_the_runner(sweep):
    from dml_bench.experiment.config import load_config
    from dml_bench.experiment.knn import all_tasks

    variants = sweep.variants(SDP)
    assert len(variants) == 8 and sweep.headline(SDP) == variants[0]
    task = next(t for t in all_tasks(load_config(sweep.SWEEPS[SDP]["config"]))
                if t.solver.label == "sdpmetric_squared_hinge")
    model = sweep.build_solver(task, {"C": 1.0}, dict(variants[0], stopping="objective"))
    assert model.get_params()["loss"] == "squared_hinge" and model.C == 1.0
    assert model.stopping == "objective" and model.max_iter == 1000
    spec = sweep._normalized(task.dataset, "zscore")
    assert spec.preprocessing.normalize == "zscore"
    assert task.dataset.preprocessing.normalize == "none"
    assert sweep._normalized(task.dataset, "swapped").preprocessing.normalize == "zscore"


def test_the_sdpmetric_ranking_uses_table_ii(sweep):
    """Shen et al. Table II prints SDPMetric-S wine 3.46 (2.69) and usps_pca 5.28 (no std)."""
    head, other = sweep.headline(SDP), dict(sweep.headline(SDP), normalize="zscore")
    summary = pd.DataFrame([{"dataset": "wine", **head, "error": 4.17},      # 0.71 off: match
                            {"dataset": "usps_pca", **head, "error": 5.5},   # no std: 0.22 ≤ 0.5
                            {"dataset": "wine", **other, "error": 9.0},
                            {"dataset": "usps_pca", **other, "error": 5.28}])
    ranking = sweep.protocol_ranking(summary, SDP)
    assert ranking["headline"].tolist() == [True, False]
    assert ranking["matched"].tolist() == [2, 1]
    assert ranking["cells"].tolist() == [2, 2]


def test_a_rerun_replaces_only_its_own_rows(sweep, tmp_path):
    variant = sweep.headline(DML_EIG)
    other = dict(variant, max_iter=100)
    old = pd.DataFrame([{"dataset": "wine", "split": s, **v, "error": 9.0}
                        for s in (0, 1) for v in (variant, other)])
    path = tmp_path / "fits.csv"
    old.to_csv(path, index=False)
    new = pd.DataFrame([{"dataset": "wine", "split": 1, **variant, "error": 1.0},
                        {"dataset": "iris", "split": 0, **variant, "error": 2.0}])
    merged = sweep.merge_fits(path, new, sweep.axes(DML_EIG))
    assert len(merged) == 5 and pd.read_csv(path).shape == merged.shape
    errors = merged.set_index(["dataset", "split", "max_iter"])["error"]
    assert errors[("wine", 1, 1000)] == 1.0 and errors[("wine", 0, 1000)] == 9.0
    assert errors[("wine", 1, 100)] == 9.0 and errors[("iris", 0, 1000)] == 2.0


def test_rows_from_before_an_axis_get_the_headlines_value(sweep, tmp_path):
    """A CSV written before ``output`` and ``ridge_mode`` were axes: its rows were fitted at the
    headline's values, and a new literal-Table-1 row is kept beside them."""
    head = sweep.headline(DML_EIG)
    before = {k: v for k, v in head.items() if k not in ("output", "ridge_mode")}
    path = tmp_path / "fits.csv"
    pd.DataFrame([{"dataset": "wine", "split": 0, **before, "error": 9.0}]).to_csv(path, index=False)
    literal = dict(head, stopping="objective", output="previous")
    new = pd.DataFrame([{"dataset": "wine", "split": 0, **literal, "error": 3.0}])
    merged = sweep.merge_fits(path, new, sweep.axes(DML_EIG), head)
    assert len(merged) == 2
    assert merged.set_index("output").loc["last", "ridge_mode"] == "relative"
    assert merged.set_index("output").loc["previous", "error"] == 3.0


def test_ranking_counts_cells_within_the_papers_std(sweep):
    """Ying & Li Table 4 prints DML-eig wine 1.35 (1.30) and iris 3.11 (1.15)."""
    headline, other = sweep.headline(DML_EIG), dict(sweep.headline(DML_EIG), scale="unit_mean")
    summary = pd.DataFrame([{"dataset": "wine", **headline, "error": 2.60},   # 1.25 off: match
                            {"dataset": "iris", **headline, "error": 4.30},   # 1.19 off: no
                            {"dataset": "wine", **other, "error": 1.40},
                            {"dataset": "iris", **other, "error": 3.00}])
    ranking = sweep.protocol_ranking(summary, DML_EIG)
    assert ranking["matched"].tolist() == [2, 1] and ranking["cells"].tolist() == [2, 2]
    assert ranking["headline"].tolist() == [False, True]
    assert ranking["mean_abs_gap"].iloc[1] == pytest.approx((1.25 + 1.19) / 2, abs=1e-3)


def test_a_figures_sweep_lists_its_variants_without_a_match_count(sweep):
    """Kunapuli Fig. 3 prints no numbers: its ranking lists the variants in the sweep's order,
    the headline first, with no matched column to count."""
    name = "kunapuli2012_fig3/mdml_hf"
    summary = pd.DataFrame({"dataset": ["iris"] * 4 + ["wine"] * 4,
                            "shrinkage": ["soft", "soft", "hard", "hard"] * 2,
                            "pairs_k": [3, 4, 3, 4] * 2, "error": range(8)})
    ranking = sweep.protocol_ranking(summary, name)
    assert "matched" not in ranking and ranking["cells"].tolist() == [2, 2, 2, 2]
    assert ranking["headline"].tolist() == [True, False, False, False]
    assert ranking.iloc[0][["shrinkage", "pairs_k"]].tolist() == ["soft", 3]


def test_the_frobmetric_sweep_builds_dlibs_rule_beside_the_headline(sweep):
    """dlib's rule at the run's C, and at its default C = 1; the headline is the runner's."""
    from dml_bench.experiment.config import load_config
    from dml_bench.experiment.knn import all_tasks

    name = "shen2014_table1/frobmetric"
    entry = sweep.SWEEPS[name]
    task = next(t for t in all_tasks(load_config(entry["config"]))
                if t.solver.label == "frobmetric")
    built = {v.get("code"): sweep.build_solver(task, {"C": 10.0}, v, entry["presets"])
             for v in sweep.variants(name) if v["max_iter"] == 1000
             and v["normalize"] == "config" and v["stopping"] in ("gap", "free_gradient")}
    assert (built["paper"].stopping, built["paper"].tol, built["paper"].C) == ("gap", 1e-5, 10.0)
    assert (built["dlib"].stopping, built["dlib"].tol, built["dlib"].C) == (
        "free_gradient", 0.1, 10.0)
    assert (built["dlib, C = 1"].tol, built["dlib, C = 1"].C) == (0.1, 1.0)
