"""LFW restricted-protocol verification (dml_bench.experiment.verification): folds, threshold,
ROC, driver."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import sem
from sklearn.metrics import roc_auc_score, roc_curve

import pandas as pd

from dml_bench.datasets import load_dataset
from dml_bench.experiment.config import ConfigError, parse_config
from dml_bench.run.runner import run_experiment
from dml_bench.datasets.lfw import lfw_image_name, load_lfw_pairs, load_lfw_sift, save_lfw_sift
from dml_bench.experiment.verification import (
    PairFold,
    accuracy,
    best_threshold,
    draw_pair_folds,
    equal_error_rate,
    lfw_pair_folds,
    matched_components,
    mean_sem,
    merged_roc,
    pair_constraints,
    pair_triplets,
    preprocess_fold,
    restricted_split,
)
from dml_bench.experiment.verification import _k_nearest

pytestmark = pytest.mark.usefixtures("tmp_cache")


@pytest.fixture
def view2(mirror):
    return load_lfw_pairs("view2", mirror=mirror, allow_network=False)


def _names(folds) -> list[str]:
    return sorted({lfw_image_name(n, i) for fold in folds for p in fold
                   for n, i in ((p.name1, p.idx1), (p.name2, p.idx2))})


def _person(image_name: str) -> str:
    return image_name.rsplit("_", 1)[0]


def test_restricted_split_of_real_view2_leaks_no_pair_image_or_person(view2):
    names = _names(view2)
    rows = np.random.default_rng(0).permutation(len(names))  # table rows in some other order
    table = [names[r] for r in np.argsort(rows)]
    folds = lfw_pair_folds(view2, table)
    assert [len(f.same) for f in folds] == [600] * 10 and all(f.same.sum() == 300 for f in folds)
    for f in range(10):
        split = restricted_split(folds, f)
        train, test = split.train, split.test
        assert len(train.same) == 5400 and train.same.sum() == 2700
        # the training images are exactly the images of the training pairs
        assert set(split.train_images) == set(train.first) | set(train.second)
        test_images = set(test.first) | set(test.second)
        assert not test_images & set(split.train_images)
        assert not set(zip(test.first, test.second)) & set(zip(train.first, train.second))
        # View 2 folds have disjoint people (Ying & Li 2012 §5.2): no identity leaks either
        people = {_person(table[i]) for i in split.train_images}
        assert not {_person(table[i]) for i in test_images} & people


def test_drawn_folds_have_disjoint_identities_and_the_asked_pairs():
    X, y, _ = load_dataset("orl_faces")
    folds = draw_pair_folds(y, n_folds=10, n_matched=60, n_mismatched=60, seed=3)
    ids = [set(y[f.images()]) for f in folds]
    assert all(not a & b for a, b in itertools.combinations(ids, 2))
    assert set().union(*ids) == set(y)
    for f in folds:
        assert len(f.same) == 120 and f.same[:60].all() and not f.same[60:].any()
        np.testing.assert_array_equal(y[f.first] == y[f.second], f.same)
        assert len(set(zip(f.first, f.second))) == 120 and (f.first < f.second).all()
    again = draw_pair_folds(y, n_folds=10, n_matched=60, n_mismatched=60, seed=3)
    assert all((a.first == b.first).all() and (a.second == b.second).all() for a, b in zip(folds, again))
    with pytest.raises(ValueError, match="distinct matched pairs"):
        draw_pair_folds(y, n_folds=10, n_matched=300, n_mismatched=300)  # 4 people x 45 pairs


def _brute_threshold(d, same):
    values = np.unique(d)
    candidates = [-np.inf, *((values[:-1] + values[1:]) / 2), np.inf]
    scores = [np.mean((d <= t) == same) for t in candidates]
    return candidates, scores


@pytest.mark.parametrize("seed", range(5))
def test_best_threshold_is_the_first_brute_force_maximiser(seed):
    rng = np.random.default_rng(seed)
    same = rng.random(200) < 0.5
    d = np.round(rng.normal(np.where(same, 1.0, 2.0), 0.8), 1)  # rounded: ties across classes
    threshold, acc = best_threshold(d, same)
    candidates, scores = _brute_threshold(d, same)
    assert acc == pytest.approx(max(scores))
    assert threshold == candidates[int(np.argmax(scores))]
    assert accuracy(d, same, threshold) == pytest.approx(acc)


def test_best_threshold_extremes_and_midpoint():
    assert best_threshold([1.0, 2.0, 3.0], [True, True, False]) == (2.5, 1.0)
    assert best_threshold([1.0, 2.0], [False, False]) == (-np.inf, 1.0)
    assert best_threshold([1.0, 2.0], [True, True]) == (np.inf, 1.0)


def _brute_eer(d, same):
    """ROC points from a loop over thresholds (no sklearn), then the segment crossing FPR = FNR."""
    points = [(np.mean(d[~same] <= t), np.mean(d[same] <= t)) for t in [-np.inf, *np.unique(d)]]
    for (f0, t0), (f1, t1) in zip(points, points[1:]):
        g0, g1 = f0 - (1 - t0), f1 - (1 - t1)
        if g0 <= 0 <= g1:
            return f0 if g1 == g0 else f0 + (f1 - f0) * (-g0) / (g1 - g0)
    raise AssertionError("no crossing")


def test_merged_roc_against_sklearn_and_brute_force():
    rng = np.random.default_rng(7)
    same = [rng.random(n) < 0.5 for n in (60, 80, 70)]
    dist = [np.round(rng.normal(np.where(s, 1.0, 1.8), 0.7), 2) for s in same]
    out = merged_roc(dist, same)
    d, s = np.concatenate(dist), np.concatenate(same)
    fpr, tpr, thr = roc_curve(s, -d, drop_intermediate=False)
    np.testing.assert_allclose(out["roc"]["fpr"], fpr)
    np.testing.assert_allclose(out["roc"]["tpr"], tpr)
    np.testing.assert_allclose(out["roc"]["threshold"], -thr)
    assert out["auc"] == pytest.approx(roc_auc_score(s, -d))
    # AUC = P(matched distance < mismatched distance) + ties / 2 (Mann-Whitney), by brute force
    pairs = d[s][:, None] - d[~s][None, :]
    assert out["auc"] == pytest.approx(np.mean(pairs < 0) + 0.5 * np.mean(pairs == 0))
    assert out["eer"] == pytest.approx(_brute_eer(d, s))


def test_equal_error_rate_known_value():
    same = np.array([True] * 4 + [False] * 4)
    d = np.array([1.0, 2, 3, 6, 4, 5, 7, 8])  # at threshold 4: FPR = FNR = 1/4
    fpr, tpr, _ = roc_curve(same, -d, drop_intermediate=False)
    assert equal_error_rate(fpr, tpr) == pytest.approx(0.25)
    assert merged_roc([d], [same])["eer"] == pytest.approx(0.25)


def test_mean_sem_is_std_ddof1_over_sqrt_n():
    acc = np.random.default_rng(1).uniform(0.7, 0.85, 10)
    mean, err = mean_sem(acc)
    assert mean == pytest.approx(np.mean(acc))
    assert err == pytest.approx(np.std(acc, ddof=1) / np.sqrt(10)) and err == pytest.approx(sem(acc))
    assert np.isnan(mean_sem([0.8])[1])


def test_pair_constraints_and_shen_triplets():
    rng = np.random.default_rng(0)
    identity = np.repeat(np.arange(6), 4)
    Z = rng.normal(identity[:, None], 0.5, (24, 3))
    pairs = PairFold(np.array([0, 4, 8, 1, 5]), np.array([1, 5, 9, 12, 20]),
                     np.array([True, True, True, False, False]))
    c = pair_constraints(pairs)
    np.testing.assert_array_equal(c.similar, [[0, 1], [4, 5], [8, 9]])
    np.testing.assert_array_equal(c.dissimilar, [[1, 12], [5, 20]])
    t = pair_triplets(Z, pairs, identity, k=2)
    assert len(t.triplets) == 5 * 2
    dist = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    for a, other, same in zip(pairs.first, pairs.second, pairs.same):
        rows = t.triplets[t.triplets[:, 0] == a]
        if same:  # (a, b, c): c the 2 nearest of another identity
            assert (rows[:, 1] == other).all()
            others = np.flatnonzero(identity != identity[a])
            assert set(rows[:, 2]) == set(others[np.argsort(dist[a, others])[:2]])
        else:  # (a, b, c): b the 2 nearest of a's identity, c the pair's other image
            assert (rows[:, 2] == other).all()
            own = np.flatnonzero((identity == identity[a]) & (np.arange(24) != a))
            assert set(rows[:, 1]) == set(own[np.argsort(dist[a, own])[:2]])
    assert len(pair_triplets(Z, pairs, identity, k=2, n_triplets=4).triplets) == 4
    # pseudo-identities from matched pairs only: 0-1, 4-5, 8-9 linked, the rest alone
    comp = matched_components(pairs, 24)
    assert comp[0] == comp[1] and comp[4] == comp[5] and comp[0] != comp[4] and len(set(comp)) == 21


def _synthetic_lfw(names, dim=32, seed=0):
    """Non-negative descriptors whose mean depends on the person: better than chance."""
    rng = np.random.default_rng(seed)
    people = sorted({_person(n) for n in names})
    centre = dict(zip(people, rng.gamma(2.0, 1.0, (len(people), dim))))
    return np.abs(np.array([centre[_person(n)] for n in names]) + rng.normal(0, 0.6, (len(names), dim)))


def _verify(tmp_path, datasets: list, solvers: list, evaluation: dict, n_splits: int = 2):
    """Run a verification experiment through the runner; its ``runs.csv`` and summary."""
    exp = parse_config({"name": "verify", "datasets": datasets, "solvers": solvers,
                        "split": {"n_splits": n_splits, "seed": 0},
                        "evaluation": {"task": "verification", **evaluation}}, check_data=False)
    messages = []
    summary = run_experiment(exp, tmp_path, echo=messages.append)
    assert summary.failed == 0 and not summary.skipped, messages
    return pd.read_csv(tmp_path / "verify" / "runs.csv"), exp


def test_synthetic_lfw_file_loads_with_its_names(view2, tmp_path):
    """A descriptor file of View 2's images loads as written (the protocol on View 2's folds
    through the runner: tests/test_lfw_targets.py)."""
    names = _names(view2)
    path = tmp_path / "lfw_synthetic.npz"
    save_lfw_sift(path, _synthetic_lfw(names).astype(np.float32), names)
    X, table = load_lfw_sift(path, n_features=32)
    assert X.shape == (7701, 32) and table == names


def test_drawn_folds_run_a_triplet_solver_and_refuse_label_solvers(tmp_path):
    runs, _ = _verify(tmp_path, [{"name": "orl_faces", "normalize": "none", "pca": 20}],
                      [{"name": "frobmetric", "params": {"max_iter": 20}}],
                      {"folds": "drawn", "n_folds": 10, "n_matched": 60, "n_mismatched": 60,
                       "n_triplets": 1000})
    assert (runs["n_triplets"] == 1000).all() and (runs["auc"] > 0.6).all()
    with pytest.raises(ConfigError, match="class labels"):
        _verify(tmp_path, [{"name": "orl_faces", "pca": 20}], [{"name": "lda"}],
                {"folds": "drawn", "n_folds": 10, "n_matched": 60, "n_mismatched": 60})


@pytest.mark.parametrize("seed", range(3))
def test_k_nearest_equals_a_stable_argsort_with_ties_and_excluded_entries(seed):
    """The partition-based neighbour search of pair_triplets against the full stable sort it
    replaces: nearest first, ties to the lower column, excluded (inf) entries never chosen."""
    rng = np.random.default_rng(seed)
    for _ in range(100):
        n, m, k = rng.integers(1, 8), rng.integers(0, 12), int(rng.integers(1, 6))
        dist = rng.integers(0, 4, (n, m)).astype(float)  # many ties
        dist[rng.random((n, m)) < 0.3] = np.inf
        order = np.argsort(dist, axis=1, kind="stable")[:, :k]
        found = np.isfinite(np.take_along_axis(dist, order, axis=1))
        expected = np.full((n, k), -1)
        expected[:, :order.shape[1]][found] = order[found]
        np.testing.assert_array_equal(_k_nearest(dist, k), expected)


@pytest.mark.parametrize("sqrt", [False, True])
def test_fold_pca_is_scikit_learns_on_the_training_images(sqrt):
    """preprocess_fold(pca=k) slices the projection on every component (shared by all k) and
    drops columns constant on the training images: against scikit-learn's PCA(k) fitted on the
    training images alone, without the constant columns (the same up to round-off)."""
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(20), 6)
    informative = np.abs(rng.normal(y[:, None] % 5, 1.0, (120, 8)))
    padded = np.hstack([informative, np.full((120, 30), 2.5), np.zeros((120, 5))])
    split = restricted_split(draw_pair_folds(y, n_folds=4, n_matched=10, n_mismatched=10), 0)
    test_images = split.test.images()
    prep = np.sqrt if sqrt else (lambda X: X)
    for k in (3, 5):
        pca = PCA(n_components=k, svd_solver="full").fit(prep(informative[split.train_images]))
        Z_train, Z_test, images = preprocess_fold(padded, split, pca=k, sqrt=sqrt)
        np.testing.assert_array_equal(images, test_images)
        np.testing.assert_allclose(Z_train, pca.transform(prep(informative[split.train_images])),
                                   atol=1e-10)
        np.testing.assert_allclose(Z_test, pca.transform(prep(informative[test_images])), atol=1e-10)


def test_drawn_folds_experiment_runs_resumes_and_reports(tmp_path, write_yaml):
    """`dmlbench run` of `evaluation: {task: verification, folds: drawn}` on ORL: rows per
    (solver, test fold) with the test pairs' scores, a summary whose AUC is scikit-learn's on
    the concatenated scores, and a second run that does no work."""
    import pandas as pd
    from click.testing import CliRunner

    from dml_bench.cli import main

    config = write_yaml({
        "name": "orl_pairs", "split": {"n_splits": 2},
        "datasets": [{"name": "orl_faces", "normalize": "none", "pca": 20}],
        "solvers": ["euclidean", {"name": "itml", "params": {"max_iter": 20}}],
        "evaluation": {"task": "verification", "folds": "drawn", "n_folds": 5, "n_matched": 60,
                       "n_mismatched": 60}})
    results = tmp_path / "results"
    first = CliRunner().invoke(main, ["run", str(config), "--results-dir", str(results)])
    assert first.exit_code == 0, first.output
    folder = results / "orl_pairs"
    runs = pd.read_csv(folder / "runs.csv")
    assert len(runs) == 4 and (runs["n_test_pairs"] == 120).all() and (runs["n_train_pairs"] == 480).all()
    summary = pd.read_csv(folder / "summary.csv")
    for _, row in summary.iterrows():
        ids = runs.loc[runs["label"] == row["label"], "task_id"]
        scores = pd.concat([pd.read_csv(folder / "scores" / f"{t}.csv") for t in ids])
        assert row["auc"] == pytest.approx(roc_auc_score(scores["same"], -scores["distance"]))
        assert row["accuracy_mean"] > 60
    second = CliRunner().invoke(main, ["run", str(config), "--results-dir", str(results)])
    assert second.exit_code == 0 and "0 tasks run, 4 already done" in second.output
