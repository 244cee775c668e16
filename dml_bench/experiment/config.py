"""Experiment configs: YAML → validated :class:`Experiment` (datasets × solvers × splits).

Validation happens before any work. Every problem is a :class:`~.schema.ConfigError` naming the
file, the key path and the problem (unknown keys and names come with the valid list and a close
match), so the CLI can print one clear line instead of a traceback. The sections' keys and
ceilings are declared in :mod:`dml_bench.experiment.schema`, the dataset entries' forms are read
by :mod:`dml_bench.experiment.entries`; :func:`parse_config` reads the sections one by one.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from ..common import safe_yaml
from ..constraints import GENERATORS
from ..evaluate import TIE_BREAKS
from ..preprocess import DTYPES, NORMALIZATIONS, Preprocessing
from .entries import bare_name, expand_suites, named_path, source_entry
from .schema import (BACKENDS, CEILINGS, CONSTRAINTS, DATASET, EVALUATION, EXECUTION, FIGURE,
                     FIGURE_GROUPS, FIGURE_KINDS, PROTOCOL, SOLVER, SPLIT, TASKS, TOP, TUNE,
                     VERIFICATION_KEYS, ConfigError, Reader, check_params, unique_labels)

@dataclass(frozen=True)
class DatasetEntry:
    name: str
    label: str
    preprocessing: Preprocessing
    n_samples: int | None = None
    n_splits: int | None = None
    solvers: tuple[str, ...] | None = None  # solver labels run on this dataset (None: all)


@dataclass(frozen=True)
class Tune:
    """A solver's hyper-parameter search: a grid, chosen by k-NN error on nested folds.

    ``grid`` is ``((parameter, (values, ...)), ...)``; exactly one of ``cv`` (k-fold on the
    training part) and ``validation`` (the held-out validation part) is set.
    """

    grid: tuple
    cv: int | None = None
    validation: float | None = None

    def points(self) -> list[dict]:
        """Every grid point, in grid order (the first parameter varies slowest)."""
        import itertools

        names = [name for name, _ in self.grid]
        return [dict(zip(names, values))
                for values in itertools.product(*(values for _, values in self.grid))]

    def folds(self) -> list[tuple]:
        """The evaluation folds of one outer split (see :func:`splits.tuning_parts`)."""
        if self.cv:
            return [("cv", self.cv, i) for i in range(self.cv)]
        return [("validation",)]

    def to_dict(self) -> dict:
        out = {"grid": {name: list(values) for name, values in self.grid}}
        return {**out, "cv": self.cv} if self.cv else {**out, "validation": self.validation}


@dataclass(frozen=True)
class SolverEntry:
    name: str
    label: str
    params: dict = field(default_factory=dict)
    tune: Tune | None = None


#: fold sources of a verification experiment: LFW's own pair lists (View 2 folds, View 1 for
#: tuning) or folds drawn on a labelled set
#: (:func:`~dml_bench.experiment.verification.draw_pair_folds`)
FOLD_SOURCES = ("lfw", "drawn")
#: where triplet solvers get identities: the matched-pair components (restricted) or the names
IDENTITY_SOURCES = ("pairs", "names")
#: the LFW descriptor tables a ``folds: lfw`` entry can name, and what they are
LFW_TABLES = {"lfw_sift": "SIFT at 9 facial points x 3 scales (Guillaumin et al. 2009)",
              "lfw_pixels": "raw LFW pixels (scikit-learn fetch_lfw_pairs): not the paper's features"}


@dataclass(frozen=True)
class VerificationSpec:
    """The ``evaluation:`` options of a verification experiment (docs/config.md).

    The protocol they set is :mod:`dml_bench.experiment.verification`'s.

    Attributes
    ----------
    folds : {"lfw", "drawn"}
        ``lfw``: View 2's ten folds of ``pairs.txt`` (and View 1 for ``tune:``); ``drawn``:
        :func:`~dml_bench.experiment.verification.draw_pair_folds` on a labelled dataset
        (``n_folds`` folds of ``n_matched`` + ``n_mismatched`` pairs, disjoint identities).
    triplet_k : int
        Neighbours per pair for triplet solvers
        (:func:`~dml_bench.experiment.verification.pair_triplets`' ``k``).
    n_triplets : int or None
        Triplets kept per fold (None: all); ``n_triplets_by_dataset`` overrides it per dataset
        label (Shen et al. Table II varies it).
    identities : {"pairs", "names"}
        Identities for the triplet rule:
        :func:`~dml_bench.experiment.verification.matched_components` of the training pairs
        (restricted) or the people's names (what Shen et al. describe).
    """

    folds: str = "lfw"
    n_folds: int = 10
    n_matched: int = 300
    n_mismatched: int = 300
    triplet_k: int = 5
    n_triplets: int | None = None
    n_triplets_by_dataset: tuple = ()
    identities: str = "pairs"

    def triplets_for(self, label: str) -> int | None:
        """Triplets per fold for the dataset entry ``label``."""
        return dict(self.n_triplets_by_dataset).get(label, self.n_triplets)

    def to_dict(self) -> dict:
        """The options as a config's ``evaluation:`` keys."""
        out = {"task": "verification", "folds": self.folds, "triplet_k": self.triplet_k,
               "n_triplets": (dict(self.n_triplets_by_dataset) if self.n_triplets_by_dataset
                              else self.n_triplets), "identities": self.identities}
        if self.folds == "drawn":
            out.update(n_folds=self.n_folds, n_matched=self.n_matched, n_mismatched=self.n_mismatched)
        return out


@dataclass(frozen=True)
class Experiment:
    """A validated experiment config (see ``docs/config.md``)."""

    name: str
    datasets: tuple[DatasetEntry, ...]
    solvers: tuple[SolverEntry, ...]
    paper_table: tuple[str, ...] = ()
    description: str = ""
    train_fraction: float = 0.7
    validation_fraction: float = 0.0
    n_splits: int = 10
    seed: int = 0
    stratify: bool = True
    predefined: bool = False
    generator: str = "knn_triplets"
    generator_params: dict = field(default_factory=lambda: {"k": 3})
    knn_k: int = 3
    tie_break: str = "nearest"
    save_traces: bool = False
    figures: tuple = ()
    notes: dict = field(default_factory=dict)
    protocol: tuple = ()  # the table's protocol choices, each with its basis (not in task ids)
    n_jobs: int = 1
    backend: str = "loky"
    scheduler: str | None = None
    timing: bool = False
    task: str = "knn"  # evaluation.task: "knn" (classification) or "verification" (pairs)
    verification: VerificationSpec | None = None  # when task == "verification"
    data_paths: tuple = ()  # (dataset label, file) of named entries given a `path:` (lfw_sift)

    def to_dict(self) -> dict[str, Any]:
        """The resolved config as plain YAML-able data (written next to the results)."""
        return {
            "name": self.name, "description": self.description,
            "paper_table": list(self.paper_table) or None,
            "datasets": [{"name": d.name, "label": d.label, **d.preprocessing.to_dict(),
                          "n_samples": d.n_samples, "n_splits": d.n_splits,
                          **({"solvers": list(d.solvers)} if d.solvers else {}),
                          **({"path": dict(self.data_paths)[d.label]}
                             if d.label in dict(self.data_paths) else {})}
                         for d in self.datasets],
            "split": {"train_fraction": self.train_fraction,
                      "validation_fraction": self.validation_fraction, "n_splits": self.n_splits,
                      "seed": self.seed, "stratify": self.stratify,
                      **({"predefined": True} if self.predefined else {})},
            "constraints": {"generator": self.generator, "params": dict(self.generator_params)},
            "solvers": [{"name": s.name, "label": s.label, "params": dict(s.params),
                         **({"tune": s.tune.to_dict()} if s.tune else {})}
                        for s in self.solvers],
            "evaluation": (self.verification.to_dict() if self.task == "verification" else
                           {"knn_k": self.knn_k, "tie_break": self.tie_break,
                            "save_traces": self.save_traces}),
            "figures": [dict(f) for f in self.figures],
            "notes": dict(self.notes),
            "protocol": [dict(p) for p in self.protocol],
            "execution": {"n_jobs": self.n_jobs, "backend": self.backend,
                          "scheduler": self.scheduler, "timing": self.timing},
        }


def parse_scalar(text: str):
    """A command-line value as a config would read it: a YAML scalar (``true``, ``0.1``, ``null``,
    ``none`` stays a string), with ``1e-6`` a float too (YAML 1.1 reads exponents without a dot
    as strings)."""
    value = safe_yaml.safe_load(text)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def load_config(path: str | Path, *, check_data: bool = True) -> Experiment:
    """Read and validate a YAML experiment config.

    The file is read with the limits of :mod:`dml_bench.common.safe_yaml` (at most 1 MiB of
    UTF-8 text, 100 levels of nesting, 100,000 nodes with every alias expanded), and its counts
    are checked against :data:`CEILINGS`, so that a few bytes cannot hang the validation or a run.

    Parameters
    ----------
    path : str or Path
        The YAML file.
    check_data : bool
        Also check value constraints that need the data (``k`` against the smallest class of the
        training part) for datasets available without network.

    Raises
    ------
    ConfigError
        On the first problem found.
    """
    path = Path(path)
    return parse_config(read_config_file(path), source=str(path), check_data=check_data)


def read_config_file(path: str | Path) -> Any:
    """The parsed YAML of a config file (an experiment's or a board's), not yet validated.

    Read with the limits of :mod:`dml_bench.common.safe_yaml` (see :func:`load_config`).

    Raises
    ------
    ConfigError
        When the file is missing or is not YAML within those limits, naming the file.
    """
    try:
        return safe_yaml.load_file(path)
    except FileNotFoundError:
        raise ConfigError(str(path), "", "file not found") from None
    except yaml.YAMLError as exc:
        raise ConfigError(str(path), "", safe_yaml.describe(exc)) from None


def parse_config(data: Any, source: str = "<config>", check_data: bool = True) -> Experiment:
    """Validate an already-parsed config mapping; see :func:`load_config`.

    The sections are read in a fixed order (top level, split, constraints, evaluation, execution,
    datasets, solvers, paper tables, verification, figures, protocol), so the problem reported is
    the first one in that order.
    """
    r = Reader(source)
    top = _read_top(r, data)
    split = _read_split(r, top["split"])
    cons = _read_constraints(r, top["constraints"])
    evaluation = _read_evaluation(r, top["evaluation"])
    verifying = evaluation["task"] == "verification"
    execution = _read_execution(r, top["execution"])
    datasets, data_paths = _read_datasets(r, top["datasets"], split, verifying, check_data)
    solvers = _read_solvers(r, top["solvers"], split, verifying)
    _check_dataset_solvers(r, datasets, solvers)
    paper = _read_paper_table(r, top["paper_table"])
    exp = Experiment(
        name=top["name"], description=top["description"], datasets=tuple(d for _, d in datasets),
        solvers=tuple(solvers), paper_table=paper, train_fraction=float(split["train_fraction"]),
        validation_fraction=float(split["validation_fraction"]),
        n_splits=split["n_splits"], seed=split["seed"], stratify=split["stratify"],
        predefined=split["predefined"],
        generator=cons["generator"], generator_params=dict(cons["params"]),
        knn_k=evaluation["knn_k"], tie_break=evaluation["tie_break"], task=evaluation["task"],
        verification=(_read_verification(r, evaluation, [d for _, d in datasets], solvers)
                      if verifying else None),
        data_paths=tuple(data_paths),
        save_traces=evaluation["save_traces"], figures=_read_figures(r, top["figures"], evaluation),
        notes={str(k): str(v) for k, v in top["notes"].items()},
        protocol=_read_protocol(r, top["protocol"]), n_jobs=execution["n_jobs"],
        backend=execution["backend"], scheduler=execution["scheduler"], timing=execution["timing"],
    )
    if check_data and not verifying:
        _check_class_sizes(r, exp)
    return exp


def _read_top(r: Reader, data: Any) -> dict:
    """The top-level mapping (:data:`~.schema.TOP`), its ``name`` a valid results-folder name."""
    top = r.section(data, TOP, "")
    r.check(bool(top["name"].strip()) and not {"/", "\\", "\0"} & set(top["name"])
            and top["name"].strip() not in (".", ".."), "name",
            "must be a non-empty name without '/', '\\' and other than '.' and '..' (it names "
            "the results folder)")
    return top


def _read_split(r: Reader, section: Any) -> dict:
    """The ``split:`` section: fractions in range, at least one split, a predefined split alone."""
    split = r.section(section, SPLIT, "split")
    r.check(0 < split["train_fraction"] < 1, "split.train_fraction",
            f"must be in (0, 1), got {split['train_fraction']}")
    r.check(split["validation_fraction"] >= 0
            and split["train_fraction"] + split["validation_fraction"] < 1 - 1e-9,
            "split.validation_fraction",
            f"must be in [0, 1 - train_fraction), got {split['validation_fraction']}")
    r.check(split["n_splits"] >= 1, "split.n_splits", "must be at least 1")
    r.check(split["seed"] >= 0, "split.seed", f"must be at least 0, got {split['seed']}")
    if split["predefined"]:
        r.check(split["n_splits"] == 1, "split.n_splits",
                "must be 1 with split.predefined (the dataset's own train/test parts)")
        r.check(split["validation_fraction"] == 0, "split.validation_fraction",
                "must be 0 with split.predefined (tune with `cv:` on the training part instead)")
    return split


def _read_constraints(r: Reader, section: Any) -> dict:
    """The ``constraints:`` section: a registered generator and its parameters."""
    cons = r.section(section, CONSTRAINTS, "constraints")
    r.name(GENERATORS, cons["generator"], "constraints.generator")
    check_params(r, GENERATORS[cons["generator"]], cons["params"], "constraints.params")
    for key, value in cons["params"].items():
        r.within(f"constraints.params.{key}", value)
    return cons


def _read_evaluation(r: Reader, section: Any) -> dict:
    """The ``evaluation:`` section: the task kind and its k-NN rule; the verification keys are
    only checked for being given to a k-NN experiment here (see :func:`_read_verification`)."""
    evaluation = r.section(section, EVALUATION, "evaluation")
    r.check(evaluation["knn_k"] >= 1, "evaluation.knn_k", "must be at least 1")
    r.check(evaluation["tie_break"] in TIE_BREAKS, "evaluation.tie_break",
            f"must be one of {', '.join(TIE_BREAKS)}, got {evaluation['tie_break']!r}")
    r.check(evaluation["task"] in TASKS, "evaluation.task",
            f"must be one of {', '.join(TASKS)}, got {evaluation['task']!r}")
    stray = [k for k in VERIFICATION_KEYS if evaluation[k] is not None]
    r.check(evaluation["task"] == "verification" or not stray, "evaluation",
            f"{stray} apply to `task: verification` only (this is a k-NN experiment)")
    return evaluation


def _read_execution(r: Reader, section: Any) -> dict:
    """The ``execution:`` section: the number of workers and the backend."""
    execution = r.section(section, EXECUTION, "execution")
    r.check(execution["n_jobs"] >= 1 or execution["n_jobs"] == -1, "execution.n_jobs",
            "must be a positive number of workers or -1 (all cores)")
    r.check(execution["backend"] in BACKENDS, "execution.backend",
            f"must be one of {', '.join(BACKENDS)}, got {execution['backend']!r}")
    return execution


def _read_datasets(r: Reader, entries: list, split: dict, verifying: bool,
                   check_data: bool) -> tuple[list, list]:
    """The ``datasets:`` section as ``(key path, DatasetEntry)`` pairs (an OpenML suite's
    datasets share its key path) and the ``(label, file)`` of named entries given a ``path:``."""
    from ..datasets import DATASETS

    r.check(len(entries) > 0, "datasets", "needs at least one dataset")
    datasets, data_paths = [], []
    for p, entry in expand_suites(r, entries):
        entry, data_path = named_path(r, bare_name(entry), p)
        d = r.section(source_entry(r, entry, p, check_data), DATASET, p)
        r.name(DATASETS, d["name"], f"{p}.name", extra=LFW_TABLES if verifying else None)
        if data_path:
            data_paths.append((d["label"] or d["name"], data_path))
        r.check(d["normalize"] in NORMALIZATIONS, f"{p}.normalize",
                f"must be one of {', '.join(NORMALIZATIONS)}, got {d['normalize']!r}")
        for key in ("pca", "downscale", "n_samples", "n_splits"):
            r.check(d[key] is None or d[key] >= 1, f"{p}.{key}", "must be at least 1")
        if split["predefined"]:
            r.check(d["n_samples"] is None and (d["n_splits"] or 1) == 1, p,
                    "n_samples and n_splits > 1 do not apply with split.predefined")
        r.check(d["dtype"] in DTYPES, f"{p}.dtype",
                f"must be one of {', '.join(DTYPES)}, got {d['dtype']!r}")
        prep = Preprocessing(d["normalize"], d["pca"], d["sqrt"], d["downscale"], d["dtype"])
        datasets.append((p, DatasetEntry(d["name"], d["label"] or d["name"], prep, d["n_samples"],
                                         d["n_splits"],
                                         tuple(d["solvers"]) if d["solvers"] else None)))
    unique_labels(r, [d.label for _, d in datasets], "datasets", "dataset label")
    return datasets, data_paths


def _read_solvers(r: Reader, entries: list, split: dict, verifying: bool) -> list[SolverEntry]:
    """The ``solvers:`` section: registered (or planned) solvers, their parameters and grids."""
    from ..solvers import PLANNED, SOLVERS

    r.check(len(entries) > 0, "solvers", "needs at least one solver")
    solvers = []
    for i, entry in enumerate(entries):
        p = f"solvers[{i}]"
        s = r.section(bare_name(entry), SOLVER, p)
        r.name(SOLVERS, s["name"], f"{p}.name", extra=PLANNED)
        if s["name"] in SOLVERS:
            check_params(r, r.plugin(SOLVERS, s["name"], f"{p}.name"), s["params"], f"{p}.params")
        tune = s["tune"] and _read_tune(r, s, split, f"{p}.tune", view1=verifying)
        solvers.append(SolverEntry(s["name"], s["label"] or s["name"], dict(s["params"]), tune))
    unique_labels(r, [s.label for s in solvers], "solvers", "solver label")
    return solvers


def _check_dataset_solvers(r: Reader, datasets: list, solvers: list[SolverEntry]):
    """A dataset entry's ``solvers:`` names only solver labels of the experiment."""
    for p, d in datasets:
        unknown = sorted(set(d.solvers or ()) - {s.label for s in solvers})
        r.check(not unknown, f"{p}.solvers",
                f"unknown solver label(s) {unknown}; labels: {', '.join(s.label for s in solvers)}")


def _read_paper_table(r: Reader, paper: Any) -> tuple[str, ...]:
    """``paper_table:``, one key or a list, each a table of :mod:`dml_bench.papers`."""
    paper = tuple([paper] if isinstance(paper, str) else paper or [])
    if paper:
        from ..papers import load_paper_table

        for i, key in enumerate(paper):
            try:
                load_paper_table(key)
            except (KeyError, ValueError) as exc:
                r.fail(f"paper_table[{i}]" if len(paper) > 1 else "paper_table", str(exc))
    return paper


def _read_protocol(r: Reader, entries: list) -> tuple:
    """``protocol:`` entries: a choice, our value, and its basis: the paper's own words
    (``paper``), the argument for it where the paper is silent or departed from (``why``), or
    both. Reported beside the table (REPRODUCTION.md), not part of any task id."""
    out = []
    for i, entry in enumerate(entries):
        p = r.section(entry, PROTOCOL, f"protocol[{i}]")
        r.check(bool(p["paper"] or p["why"]), f"protocol[{i}]",
                "give its basis: `paper:` (the sentence it rests on) and/or `why:` (the argument "
                "where the paper is silent)")
        out.append({k: " ".join(v.split()) for k, v in p.items() if v})
    return tuple(out)


def _read_verification(r: Reader, evaluation: dict, datasets: list, solvers: list):
    """The ``evaluation:`` options of ``task: verification`` as a :class:`VerificationSpec`
    (docs/config.md)."""
    from ..datasets import DATASETS
    from ..solvers import SOLVERS

    given = {k: evaluation[k] for k in VERIFICATION_KEYS if evaluation[k] is not None}
    spec = VerificationSpec(**{k: v for k, v in given.items() if k != "n_triplets"})
    r.check(spec.folds in FOLD_SOURCES, "evaluation.folds",
            f"must be one of {', '.join(FOLD_SOURCES)}, got {spec.folds!r}")
    r.check(spec.identities in IDENTITY_SOURCES, "evaluation.identities",
            f"must be one of {', '.join(IDENTITY_SOURCES)}, got {spec.identities!r}")
    for key in ("n_folds", "n_matched", "n_mismatched", "triplet_k"):
        r.check(getattr(spec, key) >= 1, f"evaluation.{key}", "must be at least 1")
    if spec.folds == "lfw":
        extra = sorted(set(given) & {"n_folds", "n_matched", "n_mismatched"})
        r.check(not extra, "evaluation", f"{extra} apply to drawn folds only (folds: drawn); "
                "LFW's folds are those of pairs.txt")
    r.check(spec.n_folds >= 2, "evaluation.n_folds", "needs at least 2 folds (train on the others)")
    triplets = given.get("n_triplets")
    labels = [d.label for d in datasets]
    if isinstance(triplets, dict):
        unknown = sorted(set(triplets) - set(labels))
        r.check(not unknown, "evaluation.n_triplets",
                f"unknown dataset label(s) {unknown}; labels: {', '.join(labels)}")
        bad = [k for k, v in triplets.items() if not isinstance(v, int) or isinstance(v, bool) or v < 1]
        r.check(not bad, "evaluation.n_triplets", f"must map dataset labels to positive counts: {bad}")
        for label, count in triplets.items():
            r.within(f"evaluation.n_triplets.{label}", count, "evaluation.n_triplets")
        spec = replace(spec, n_triplets_by_dataset=tuple(triplets.items()))
    elif triplets is not None:
        r.check(triplets >= 1, "evaluation.n_triplets", "must be at least 1")
        spec = replace(spec, n_triplets=triplets)
    for i, d in enumerate(datasets):
        lfw = d.name in LFW_TABLES
        r.check(lfw == (spec.folds == "lfw"), f"datasets[{i}].name",
                f"{d.name!r} with folds: {spec.folds}: LFW descriptors ({', '.join(LFW_TABLES)}) "
                "take LFW's folds (folds: lfw), any other labelled dataset drawn folds (folds: drawn)")
        r.check(lfw or d.name in DATASETS, f"datasets[{i}].name", f"unknown dataset {d.name!r}")
        r.check(d.preprocessing.downscale is None and d.preprocessing.dtype == "float64",
                f"datasets[{i}]", "downscale and dtype do not apply to verification (normalize, "
                "sqrt and pca do)")
    for i, s in enumerate(solvers):
        if s.name in SOLVERS:
            kind = SOLVERS[s.name](**s.params).constraint_kind
            r.check(kind != "labels", f"solvers[{i}].name",
                    f"{s.name} needs class labels, which the restricted verification setting has "
                    "not (pair and triplet solvers, or euclidean)")
        r.check(not s.tune or spec.folds == "lfw", f"solvers[{i}].tune",
                "tuning uses LFW's View 1, which drawn folds have not")
    return spec


def _read_figures(r: Reader, figures: list, evaluation: dict) -> tuple:
    """``figures:`` entries (plotted by ``dmlbench report``, :mod:`dml_bench.report.figures`)."""
    from ..common.safe_write import name_problem

    out = []
    for i, entry in enumerate(figures):
        p = f"figures[{i}]"
        f = r.section(entry, FIGURE, p)
        problem = name_problem(f["name"])  # it names figures/<name>.png, .pdf and .csv
        r.check(problem is None, f"{p}.name", f"{problem}, got {f['name']!r}")
        r.check(f["kind"] in FIGURE_KINDS, f"{p}.kind",
                f"must be one of {', '.join(FIGURE_KINDS)}, got {f['kind']!r}")
        for key in ("panels", "series"):
            r.check(f[key] in FIGURE_GROUPS or f[key].startswith("solver."), f"{p}.{key}",
                    f"must be one of {', '.join(FIGURE_GROUPS)} or solver.<parameter>, "
                    f"got {f[key]!r}")
        if f["kind"] == "trace":
            r.check(evaluation["save_traces"], f"{p}.kind",
                    "trace figures need `evaluation: {save_traces: true}`")
        elif f["kind"] == "bar":
            r.check(f["x"] in FIGURE_GROUPS or f["x"].startswith("solver."), f"{p}.x",
                    f"a bar chart's x is one of {', '.join(FIGURE_GROUPS)} or solver.<parameter>")
        else:
            r.check(f["x"].split(".")[0] in ("dataset", "solver") and "." in f["x"], f"{p}.x",
                    "a sweep's x is `dataset.<preprocessing field>` or `solver.<parameter>`, "
                    f"got {f['x']!r}")
        out.append(f)
    unique_labels(r, [f["name"] for f in out], "figures", "figure name")
    return tuple(out)


def _read_tune(r: Reader, solver: dict, split: dict, path: str, view1: bool = False) -> Tune:
    """A solver's ``tune:`` block: ``grid`` plus ``cv: k`` or ``validation: fraction``; with
    ``view1`` (verification) the grid alone: LFW's View 1 chooses."""
    from ..solvers import SOLVERS

    t = r.section(solver["tune"], TUNE, path)
    r.check(bool(t["grid"]), f"{path}.grid", "needs at least one parameter")
    if solver["name"] in SOLVERS:
        check_params(r, SOLVERS[solver["name"]], t["grid"], f"{path}.grid")
    for name, values in t["grid"].items():
        r.check(isinstance(values, list) and len(values) > 0, f"{path}.grid.{name}",
                f"must be a non-empty list of values, got {values!r}")
        r.check(name not in solver["params"], f"{path}.grid.{name}",
                "is also fixed in params: give it in one place")
    points = math.prod(len(values) for values in t["grid"].values())
    ceiling = CEILINGS["solvers[].tune.grid"]
    r.check(points <= ceiling, f"{path}.grid", f"has {points} points (the product of its value "
            f"lists), more than the {ceiling} a grid may have")
    if view1:
        r.check(t["cv"] is None and t["validation"] is None, path,
                "a verification experiment tunes on LFW's View 1 (fit on pairsDevTrain, chosen on "
                "pairsDevTest): give the grid alone, without cv or validation")
        return Tune(tuple((name, tuple(values)) for name, values in t["grid"].items()))
    r.check((t["cv"] is None) != (t["validation"] is None), path,
            "give exactly one of `cv: <folds>` (k-fold on the training part) and "
            "`validation: <fraction>` (the held-out validation part)")
    if t["cv"] is not None:
        r.check(t["cv"] >= 2, f"{path}.cv", f"must be at least 2 folds, got {t['cv']}")
    else:
        r.check(t["validation"] > 0, f"{path}.validation", "must be a fraction in (0, 1)")
        r.check(math.isclose(t["validation"], split["validation_fraction"]), f"{path}.validation",
                f"is {t['validation']} but split.validation_fraction is "
                f"{split['validation_fraction']}: every solver of an experiment shares one "
                "train/validation/test split, so set split.validation_fraction to the same value")
    grid = tuple((name, tuple(values)) for name, values in t["grid"].items())
    return Tune(grid, t["cv"], None if t["cv"] else float(t["validation"]))


def _check_class_sizes(r: Reader, exp: Experiment):
    """``k`` targets need more than k training points in every class (data available locally)."""
    import numpy as np

    from ..datasets import DataNotAvailable, dataset_status, load_dataset

    if "k" not in inspect.signature(GENERATORS[exp.generator]).parameters:
        return  # random generators have no k targets per point
    k = exp.generator_params.get("k", 3)
    for i, entry in enumerate(exp.datasets):
        try:
            if dataset_status(entry.name) == "network needed":
                continue
            _, y, _ = load_dataset(entry.name, allow_network=False)
        except DataNotAvailable:
            continue  # a data fault: the run reports the dataset as skipped, with the reason
        counts = np.unique(y, return_counts=True)[1]
        if entry.n_samples:
            counts = counts * min(1.0, entry.n_samples / len(y))
        smallest = math.ceil(exp.train_fraction * counts.min() - 1e-9)
        r.check(k < smallest, "constraints.params.k",
                f"k = {k} needs more than k training points per class, but the smallest class of "
                f"datasets[{i}] ({entry.name}) has {smallest} in the training part")
