"""Config and command-line faults: each ends in the one ``error:`` line naming the key."""

from __future__ import annotations

import pandas as pd

from . import GOOD, Case, changed


def _case(id, cfg=None, line="", argv=("run", "{cfg}"), **kw):
    return Case(id, "config", dict(GOOD) if cfg is None else cfg, argv=argv, line=line, **kw)


def finished_ids(ctx):
    """``{id0}``, ``{id1}``: the task ids of the finished rows of splits 0 and 1."""
    runs = pd.read_csv(ctx.run_dir / "runs.csv", dtype={"task_id": str})
    for split, task_id in zip(runs["split"], runs["task_id"]):
        ctx.extra[f"id{split}"] = task_id


NAME_RULE = ("name: must be a non-empty name without '/', '\\' and other than '.' and '..' (it "
             "names the results folder)")

CASES = [
    _case("unknown-top-key", {**GOOD, "solver": []},
          "{cfg}: solver: unknown key (did you mean 'solvers'?); valid keys: name, description, "
          "paper_table, datasets, split, constraints, solvers, evaluation, execution, figures, "
          "notes, protocol"),
    _case("unknown-dataset-key", changed(datasets=[{"name": "wine", "normalise": "zscore"}]),
          "{cfg}: datasets[0].normalise: unknown key (did you mean 'normalize'?); valid keys: "
          "name, label, normalize, pca, sqrt, downscale, dtype, n_samples, n_splits, solvers, "
          "solver_params"),
    _case("unknown-solver-key", changed(solvers=[{"name": "euclidean", "param": {}}]),
          "{cfg}: solvers[0].param: unknown key (did you mean 'params'?); valid keys: name, "
          "label, params, tune"),
    _case("n_splits-wrong-type", changed(split={"n_splits": "ten"}),
          "{cfg}: split.n_splits: expected int, got str 'ten'"),
    _case("n_splits-zero", changed(split={"n_splits": 0}),
          "{cfg}: split.n_splits: must be at least 1"),
    _case("n_splits-negative", changed(split={"n_splits": -3}),
          "{cfg}: split.n_splits: must be at least 1"),
    _case("dataset-n_splits-zero", changed(datasets=[{"name": "wine", "n_splits": 0}]),
          "{cfg}: datasets[0].n_splits: must be at least 1"),
    _case("train_fraction-zero", changed(split={"train_fraction": 0}),
          "{cfg}: split.train_fraction: must be in (0, 1), got 0"),
    _case("train_fraction-one", changed(split={"train_fraction": 1.0}),
          "{cfg}: split.train_fraction: must be in (0, 1), got 1.0"),
    _case("train_fraction-negative", changed(split={"train_fraction": -0.2}),
          "{cfg}: split.train_fraction: must be in (0, 1), got -0.2"),
    _case("train_fraction-string", changed(split={"train_fraction": "70%"}),
          "{cfg}: split.train_fraction: expected int or float, got str '70%'"),
    _case("unknown-solver", changed(solvers=["dml_eigg"]),
          "{cfg}: solvers[0].name: unknown solver 'dml_eigg'. Did you mean 'dml_eig'? Valid "
          "names: boostmetric, covariance, dml_eig, elm, euclidean, frobmetric, fw, gd, itml, "
          "lda, ldml, lfda, lmnn, lmnn_eig, lsml, mdml, mlkr, nca, pca, pola, rca, scml, scml_local, sdml, "
          "sdpmetric, sgd, sgd_batch, sgd_incsvd, sgd_one, svm, xing"),
    _case("unknown-generator", changed(constraints={"generator": "knn_triplet"}),
          "{cfg}: constraints.generator: unknown constraint generator 'knn_triplet'. Did you "
          "mean 'knn_triplets'? Valid names: knn_pairs, knn_triplets, random_triplets"),
    _case("unknown-solver-parameter", changed(solvers=[{"name": "dml_eig", "params": {"muu": 1}}]),
          "{cfg}: solvers[0].params.muu: unknown parameter (did you mean 'mu'?); valid: mu, "
          "tol, max_iter, stopping, output, ridge, ridge_mode, scale, weight_threshold, init, verbose"),
    _case("name-with-slash", changed(name="../elsewhere"), "{cfg}: " + NAME_RULE),
    _case("name-dot-dot", changed(name=".."), "{cfg}: " + NAME_RULE),
    _case("name-with-backslash", changed(name="a\\b"), "{cfg}: " + NAME_RULE),
    _case("empty-yaml", "", "{cfg}: <top>: expected a mapping, got NoneType"),
    _case("yaml-list", "- wine\n- iris\n", "{cfg}: <top>: expected a mapping, got list"),
    _case("yaml-scalar", "just words\n", "{cfg}: <top>: expected a mapping, got str"),
    _case("not-yaml", "name: t\nkey: value: other\n",
          "{cfg}: <top>: not valid YAML: line 2, column 11: mapping values are not allowed here"),
    _case("no-datasets", changed(datasets=[]), "{cfg}: datasets: needs at least one dataset"),
    _case("solvers-not-list", changed(solvers="euclidean"),
          "{cfg}: solvers: expected list, got str 'euclidean'"),
    _case("dataset-entry-number", changed(datasets=[7]),
          "{cfg}: datasets[0]: expected a mapping, got int"),
    _case("k-too-large", changed(constraints={"params": {"k": 40}}),
          "{cfg}: constraints.params.k: k = 40 needs more than k training points per class, but "
          "the smallest class of datasets[0] (wine) has 34 in the training part"),
    _case("missing-config-file", argv=("run", "{work}/missing.yaml"),
          line="{work}/missing.yaml: <top>: file not found"),
    _case("unknown-dataset-label", argv=("run", "{cfg}", "--dataset", "wien"),
          line="unknown dataset label of corpus 'wien'. Did you mean 'wine'? Valid names: wine"),
    _case("unknown-solver-label", argv=("run", "{cfg}", "--solver", "euclidian"),
          line="unknown solver label of corpus 'euclidian'. Did you mean 'euclidean'? Valid "
               "names: euclidean"),
    _case("changed-config-would-supersede", changed(evaluation={"knn_k": 5}), setup=finished_ids,
          line="corpus: the config no longer contains the tasks of 2 finished rows of runs.csv (a "
          "changed setting, default or data file changes a task's id): e.g. wine split 0 euclidean "
          "[{id0}]; wine split 1 euclidean [{id1}]. Rerun with --supersede "
          "to move them to runs_superseded.csv and run the new tasks (or --force to recompute "
          "everything), or restore the config that made them"),
    _case("validate-unknown-key", {**GOOD, "solver": []}, argv=("validate", "{cfg}"),
          line="{cfg}: solver: unknown key (did you mean 'solvers'?); valid keys: name, "
               "description, paper_table, datasets, split, constraints, solvers, evaluation, "
               "execution, figures, notes, protocol"),
]
