"""Config validation: every bad config is one ConfigError naming the file, the key path and the
problem; valid configs round-trip; ``dmlbench validate`` prints one line instead of a traceback."""

from __future__ import annotations

import copy

import pytest
import yaml
from click.testing import CliRunner

from dml_bench.cli import main
from dml_bench.experiment.config import load_config, parse_config
from dml_bench.experiment.sections import Experiment
from dml_bench.experiment.schema import ConfigError

pytestmark = pytest.mark.usefixtures("tmp_cache")

BASE = {
    "name": "unit",
    "description": "two bundled datasets, two solvers",
    "datasets": [{"name": "wine", "normalize": "zscore"}, {"name": "iris"}],
    "split": {"train_fraction": 0.7, "n_splits": 2, "seed": 0, "stratify": True},
    "constraints": {"generator": "knn_triplets", "params": {"k": 3}},
    "solvers": [{"name": "euclidean"}, {"name": "dml_eig", "params": {"mu": 1e-4, "max_iter": 50}}],
    "evaluation": {"knn_k": 3, "tie_break": "nearest"},
    "execution": {"n_jobs": 1, "backend": "loky"},
}


def edited(**changes):
    """BASE with ``changes``: ``{"a.b": value}`` sets nested keys, ``value=DELETE`` removes one."""

    def apply(cfg):
        for dotted, value in changes.items():
            *parents, last = dotted.split("__")
            node = cfg
            for key in parents:
                node = node[int(key)] if isinstance(node, list) else node[key]
            if value is DELETE:
                del node[last]
            elif isinstance(node, list):
                node[int(last)] = value
            else:
                node[last] = value
        return cfg

    return apply(copy.deepcopy(BASE))


DELETE = object()


def renamed(old: str, new: str) -> dict:
    cfg = copy.deepcopy(BASE)
    cfg[new] = cfg.pop(old)
    return cfg


# (id, config data or raw YAML text, expected key path, fragments of the message)
BAD = [
    ("unknown-top-key", renamed("solvers", "solver"), "solver",
     ["unknown key", "did you mean 'solvers'"]),
    ("unknown-top-key-no-match", {**BASE, "zzz_qqq": 1}, "zzz_qqq",
     ["unknown key", "valid keys: name, description"]),
    ("unknown-split-key", edited(split__n_split=3), "split.n_split",
     ["unknown key", "did you mean 'n_splits'"]),
    ("unknown-dataset-key", edited(datasets__0__normalise="zscore"), "datasets[0].normalise",
     ["unknown key", "did you mean 'normalize'"]),
    ("unknown-solver-key", edited(solvers__1__param={"mu": 1.0}), "solvers[1].param",
     ["unknown key", "did you mean 'params'"]),
    ("n_splits-str", edited(split__n_splits="ten"), "split.n_splits",
     ["expected int, got str 'ten'"]),
    ("n_splits-bool", edited(split__n_splits=True), "split.n_splits",
     ["expected int, got bool True"]),
    ("n_jobs-bool", edited(execution__n_jobs=False), "execution.n_jobs", ["expected int, got bool"]),
    ("train_fraction-bool", edited(split__train_fraction=True), "split.train_fraction",
     ["expected int or float, got bool"]),
    ("stratify-str", edited(split__stratify="yes please"), "split.stratify", ["expected bool"]),
    ("datasets-not-list", edited(datasets={"name": "wine"}), "datasets", ["expected list"]),
    ("dataset-entry-not-mapping", edited(datasets=[3]), "datasets[0]",
     ["expected a mapping, got int"]),
    ("solver-entry-not-mapping", edited(solvers=[["euclidean"]]), "solvers[0]",
     ["expected a mapping, got list"]),
    ("bare-unknown-dataset", edited(datasets=["wne"]), "datasets[0].name",
     ["unknown dataset 'wne'", "Did you mean 'wine'?"]),
    ("bare-unknown-solver", edited(solvers=["dml_eigg"]), "solvers[0].name",
     ["unknown solver 'dml_eigg'", "Did you mean 'dml_eig'?"]),
    ("missing-name", edited(name=DELETE), "name", ["required key is missing"]),
    ("missing-datasets", edited(datasets=DELETE), "datasets", ["required key is missing"]),
    ("missing-solver-name", edited(solvers__0={"label": "x"}), "solvers[0].name",
     ["required key is missing"]),
    ("empty-datasets", edited(datasets=[]), "datasets", ["needs at least one dataset"]),
    ("name-with-slash", edited(name="a/b"), "name", ["without '/'"]),
    ("unknown-dataset", edited(datasets__0__name="wne"), "datasets[0].name",
     ["unknown dataset 'wne'", "Did you mean 'wine'?", "Valid names:", "breast_cancer", "iris",
      "pima", "wine"]),
    ("unknown-solver", edited(solvers__1__name="dml_eigg"), "solvers[1].name",
     ["unknown solver 'dml_eigg'", "Did you mean 'dml_eig'?", "euclidean", "lmnn"]),
    ("unknown-generator", edited(constraints__generator="knn_triplet"), "constraints.generator",
     ["unknown constraint generator 'knn_triplet'", "Did you mean 'knn_triplets'?"]),
    ("unknown-generator-param", edited(constraints__params={"kk": 3}), "constraints.params.kk",
     ["unknown parameter", "did you mean 'k'"]),
    ("unknown-solver-param", edited(solvers__1__params={"muu": 1e-4}), "solvers[1].params.muu",
     ["unknown parameter", "did you mean 'mu'", "max_iter"]),
    ("train_fraction-0", edited(split__train_fraction=0), "split.train_fraction",
     ["must be in (0, 1)"]),
    ("train_fraction-1", edited(split__train_fraction=1), "split.train_fraction",
     ["must be in (0, 1)"]),
    ("train_fraction-1.5", edited(split__train_fraction=1.5), "split.train_fraction",
     ["must be in (0, 1)", "1.5"]),
    ("validation-too-large", edited(split__validation_fraction=0.3), "split.validation_fraction",
     ["must be in [0, 1 - train_fraction)", "0.3"]),
    ("n_splits-0", edited(split__n_splits=0), "split.n_splits", ["at least 1"]),
    ("knn_k-0", edited(evaluation__knn_k=0), "evaluation.knn_k", ["at least 1"]),
    ("n_jobs-0", edited(execution__n_jobs=0), "execution.n_jobs", ["-1"]),
    ("pca-0", edited(datasets__1__pca=0), "datasets[1].pca", ["at least 1"]),
    # iris: 50 points per class, ceil(0.7 * 50) = 35 training points per class -> k must be < 35
    ("k-too-large-iris", edited(datasets=[{"name": "iris"}], constraints__params={"k": 35}),
     "constraints.params.k", ["k = 35", "datasets[0] (iris)", "has 35 in the training part"]),
    # wine: smallest class 48, ceil(0.7 * 48) = ceil(33.6) = 34 -> k = 34 is one too many
    ("k-too-large-wine", edited(constraints__params={"k": 34}), "constraints.params.k",
     ["k = 34", "datasets[0] (wine)", "has 34"]),
    # iris with train_fraction 0.5: 25 training points per class
    ("k-too-large-half", edited(datasets=[{"name": "iris"}], split__train_fraction=0.5,
                                constraints__params={"k": 25}),
     "constraints.params.k", ["has 25"]),
    ("tie_break", edited(evaluation__tie_break="random"), "evaluation.tie_break",
     ["must be one of nearest, lowest", "'random'"]),
    ("backend", edited(execution__backend="ray"), "execution.backend",
     ["must be one of loky, dask, sequential", "'ray'"]),
    ("normalize", edited(datasets__0__normalize="l2"), "datasets[0].normalize",
     ["must be one of none, zscore, std, minmax", "'l2'"]),
    ("duplicate-solver-labels", edited(solvers=[{"name": "euclidean"}, {"name": "euclidean"}]),
     "solvers", ["duplicate solver labels", "'euclidean'", "label"]),
    ("duplicate-explicit-labels",
     edited(solvers=[{"name": "euclidean", "label": "A"}, {"name": "dml_eig", "label": "A"}]),
     "solvers", ["duplicate solver labels", "'A'"]),
    ("duplicate-dataset-labels", edited(datasets=[{"name": "wine"}, {"name": "wine"}]),
     "datasets", ["duplicate dataset labels", "'wine'"]),
    ("not-yaml", "name: t\nkey: value: other\n", "", [
        "not valid YAML: line 2, column 11: mapping values are not allowed here"]),
    ("not-yaml-unclosed", "name: [unclosed\n", "", ["not valid YAML", "flow sequence"]),
    ("yaml-not-mapping", "- just\n- a list\n", "", ["expected a mapping, got list"]),
    ("empty-file", "", "", ["expected a mapping"]),
    ("protocol-without-basis", edited(protocol=[{"choice": "splits", "ours": "10 × 70/30"}]),
     "protocol[0]", ["give its basis: `paper:`", "`why:`"]),
    ("protocol-unknown-key", edited(protocol=[{"choice": "c", "ours": "o", "source": "s"}]),
     "protocol[0].source", ["unknown key", "valid keys: choice, ours, paper, why"]),
    ("unknown-paper-table", edited(paper_table="ying2012/table99"), "paper_table",
     ["unknown paper table 'ying2012/table99'", "ying2012/table4"]),
    ("unknown-paper-table-in-list", edited(paper_table=["ying2012/table4", "nopaper/t1"]),
     "paper_table[1]", ["unknown paper table 'nopaper/t1'"]),
]


@pytest.mark.parametrize("data, path, fragments", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_config(write_yaml, data, path, fragments):
    file = write_yaml(data, "bad_config.yaml")
    with pytest.raises(ConfigError) as info:
        load_config(file)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.path == path
    message = str(err)
    assert "bad_config.yaml" in message
    assert f": {path or '<top>'}: " in message
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    assert "\n" not in message  # one line for the CLI


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="does_not_exist.yaml.*file not found"):
        load_config(tmp_path / "does_not_exist.yaml")


@pytest.mark.parametrize("k, dataset", [(34, "iris"), (33, "wine")])
def test_largest_valid_k_is_accepted(write_yaml, k, dataset):
    # iris: 35 training points per class, wine: 34 in its smallest class -> k = 34 / 33 is fine
    exp = load_config(write_yaml(edited(datasets=[{"name": dataset}], constraints__params={"k": k})))
    assert dict(exp.constraints.params) == {"k": k}


def test_k_check_can_be_skipped(write_yaml):
    # the class-size check needs the data; check_data=False validates the config alone
    cfg = edited(datasets=[{"name": "iris"}], constraints__params={"k": 35})
    assert dict(load_config(write_yaml(cfg), check_data=False).constraints.params) == {"k": 35}


def test_bare_names_are_entries_with_their_defaults(write_yaml):
    """`datasets: [wine]` and `solvers: [dml_eig, euclidean]`: what a user writes first."""
    bare = load_config(write_yaml("name: bare\ndatasets: [wine, iris]\n"
                                  "solvers: [dml_eig, euclidean]\n"))
    full = load_config(write_yaml({"name": "bare", "datasets": [{"name": "wine"}, {"name": "iris"}],
                                   "solvers": [{"name": "dml_eig"}, {"name": "euclidean"}]},
                                  "full.yaml"))
    assert bare == full
    assert [d.label for d in bare.datasets] == ["wine", "iris"]
    assert [(s.name, s.label, s.params) for s in bare.solvers] == [
        ("dml_eig", "dml_eig", {}), ("euclidean", "euclidean", {})]
    mixed = load_config(write_yaml({"name": "mixed", "datasets": ["wine", {"name": "iris",
                                                                           "label": "I"}],
                                    "solvers": ["euclidean"]}, "mixed.yaml"))
    assert [d.label for d in mixed.datasets] == ["wine", "I"]


def test_valid_config_values_and_defaults(write_yaml):
    cfg = {"name": "minimal", "datasets": [{"name": "wine"}], "solvers": [{"name": "euclidean"}]}
    exp = load_config(write_yaml(cfg))
    assert isinstance(exp, Experiment)
    assert [d.name for d in exp.datasets] == ["wine"] and exp.datasets[0].label == "wine"
    assert exp.datasets[0].preprocessing.normalize == "zscore"
    assert [s.label for s in exp.solvers] == ["euclidean"]
    # documented defaults (Ying & Li 2012 protocol: 70 % training, k = 3 targets, 3-NN)
    assert exp.split.train_fraction == 0.7 and exp.split.stratify is True
    assert exp.constraints.generator == "knn_triplets" and dict(exp.constraints.params) == {"k": 3}
    assert exp.evaluation.knn_k == 3 and exp.evaluation.tie_break == "nearest"
    assert (exp.execution.backend, exp.execution.n_jobs, exp.execution.timing) == ("loky", 1, False)
    assert exp.paper_table == ()


@pytest.mark.parametrize("cfg", [
    BASE,
    {**BASE, "paper_table": "ying2012/table4",
     "datasets": [{"name": "wine", "label": "wine-pca", "normalize": "minmax", "pca": 5,
                   "n_splits": 4},
                  {"name": "iris", "normalize": "none", "sqrt": True, "n_samples": 120}],
     "execution": {"n_jobs": -1, "backend": "dask", "scheduler": "tcp://127.0.0.1:8786",
                   "timing": True}},
], ids=["base", "everything-set"])
def test_round_trip(write_yaml, cfg):
    exp = load_config(write_yaml(cfg))
    assert parse_config(exp.to_dict(), source="round-trip") == exp
    # and through the YAML written next to the results
    again = load_config(write_yaml(yaml.safe_dump(exp.to_dict(), sort_keys=False), "again.yaml"))
    assert again == exp


def test_round_trip_keeps_settings(write_yaml):
    cfg = {**BASE, "datasets": [{"name": "wine", "label": "w", "pca": 5, "n_splits": 4}]}
    exp = load_config(write_yaml(cfg))
    entry = exp.datasets[0]
    assert (entry.label, entry.preprocessing.pca, entry.n_splits) == ("w", 5, 4)
    assert exp.solvers[1].params == {"mu": 1e-4, "max_iter": 50}


def test_planned_solver_is_accepted(write_yaml, planned):
    cfg = edited(solvers=[{"name": "euclidean"}, {"name": planned, "params": {"anything": 1}}])
    exp = load_config(write_yaml(cfg))
    assert [s.name for s in exp.solvers] == ["euclidean", planned]


def test_quickstart_config_is_valid():
    from pathlib import Path

    exp = load_config(Path(__file__).parents[1] / "configs" / "quickstart.yaml")
    assert {d.name for d in exp.datasets} >= {"wine", "iris"}


# --------------------------------------------------------------------------- dmlbench validate


def test_cli_validate_bad_config(write_yaml):
    bad = write_yaml(edited(solvers__1__params={"muu": 1e-4}), "bad.yaml")
    result = CliRunner().invoke(main, ["validate", str(bad)])
    assert result.exit_code == 2
    assert isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: ")
    assert "bad.yaml" in lines[0] and "solvers[1].params.muu" in lines[0]
    assert "Traceback" not in result.output
    assert result.stdout == ""


@pytest.mark.parametrize("text", ["name: [unclosed\n", "name: x\n"], ids=["yaml", "missing"])
def test_cli_validate_other_errors(write_yaml, text):
    result = CliRunner().invoke(main, ["validate", str(write_yaml(text, "broken.yaml"))])
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("error: ") and "broken.yaml" in result.stderr
    assert "Traceback" not in result.output


def test_cli_validate_missing_file(tmp_path):
    result = CliRunner().invoke(main, ["validate", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and "file not found" in result.stderr


def test_cli_validate_ok(write_yaml):
    # wine (4 splits) + iris (default 2 splits) = 6 (dataset, split) pairs × 2 solvers = 12 tasks
    cfg = edited(datasets__0__n_splits=4)
    result = CliRunner().invoke(main, ["validate", str(write_yaml(cfg, "good.yaml"))])
    assert result.exit_code == 0, result.output
    assert "ok (2 datasets × 2 solvers, 12 tasks)" in result.stdout


def test_dataset_entries_can_restrict_their_solvers():
    from dml_bench.experiment.knn import all_tasks

    cfg = edited(datasets=[{"name": "wine", "solvers": ["dml"]}, {"name": "iris"}],
                 solvers=[{"name": "euclidean"}, {"name": "dml_eig", "label": "dml"}])
    exp = parse_config(cfg, source="t")
    pairs = {(t.dataset.label, t.solver.label) for t in all_tasks(exp)}
    assert pairs == {("wine", "dml"), ("iris", "euclidean"), ("iris", "dml")}
    bad = edited(datasets=[{"name": "wine", "solvers": ["nope"]}])
    with pytest.raises(ConfigError, match=r"datasets\[0\].solvers: unknown solver label"):
        parse_config(bad, source="t")


def test_a_dataset_entry_can_set_a_solver_s_parameters_there():
    from dml_bench.experiment.knn import all_tasks

    solvers = [{"name": "euclidean"}, {"name": "sgd_one", "params": {"step": 0.1}}]
    plain = parse_config(edited(datasets=[{"name": "wine"}, {"name": "iris"}], solvers=solvers),
                         source="t")
    own = parse_config(edited(datasets=[
        {"name": "wine", "solver_params": {"sgd_one": {"subgradient": "eigenspace"}}},
        {"name": "iris"}], solvers=solvers), source="t")
    before = {(t.dataset.label, t.solver.label, t.split): t for t in all_tasks(plain)}
    after = {(t.dataset.label, t.solver.label, t.split): t for t in all_tasks(own)}
    assert before.keys() == after.keys()
    for key, task in after.items():
        changed = key[:2] == ("wine", "sgd_one")
        assert task.solver_params() == {**before[key].solver_params(),
                                        **({"subgradient": "eigenspace"} if changed else {})}
        # only that solver's tasks on that dataset are new ones
        assert (task.task_id != before[key].task_id) == changed
    assert after["wine", "sgd_one", 0].solver.params == {"step": 0.1, "subgradient": "eigenspace"}
    assert own.to_dict()["datasets"][0]["solver_params"] == {
        "sgd_one": {"subgradient": "eigenspace"}}
    for entry, match in [({"sgd_1": {"step": 1.0}}, r"solver_params.sgd_1: unknown solver label"),
                         ({"sgd_one": {"stepp": 1.0}}, r"solver_params.sgd_one.stepp: unknown "
                                                       r"parameter \(did you mean 'step'\?\)"),
                         ({"sgd_one": {"subgradient": "all"}}, r"sgd_one.subgradient: "),
                         ({"sgd_one": 3}, r"solver_params.sgd_one: expected a mapping")]:
        with pytest.raises(ConfigError, match=match):
            parse_config(edited(datasets=[{"name": "wine", "solver_params": entry}],
                                solvers=solvers), source="t")


def test_random_generators_skip_the_k_class_size_check():
    # k = 3 targets would need 4 training points per class; random triplets need labels only
    cfg = edited(datasets=[{"name": "iris", "n_samples": 9}],
                 constraints={"generator": "random_triplets", "params": {"n_triplets": 50}})
    assert parse_config(cfg, source="t").constraints.generator == "random_triplets"
    with pytest.raises(ConfigError, match="needs more than k training points"):
        parse_config(edited(datasets=[{"name": "iris", "n_samples": 9}]), source="t")


@pytest.mark.parametrize("text, value", [
    ("1e-6", 1e-6), ("1.0e-4", 1e-4), ("0.01", 0.01), ("1000", 1000), ("true", True),
    ("none", "none"), ("unit_mean", "unit_mean"), ("null", None)])
def test_parse_scalar_reads_exponents_without_a_dot_as_numbers(text, value):
    from dml_bench.experiment.config import parse_scalar

    parsed = parse_scalar(text)
    assert parsed == value and type(parsed) is type(value)
