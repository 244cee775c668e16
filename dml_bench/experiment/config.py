"""Experiment configs: YAML → validated :class:`Experiment` (datasets × solvers × splits).

Validation happens before any work. Every problem is a :class:`ConfigError` naming the file, the
key path and the problem (unknown keys and names come with the valid list and a close match), so
the CLI can print one clear line instead of a traceback.
"""

from __future__ import annotations

import difflib
import inspect
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from ..common import safe_yaml
from ..constraints import GENERATORS
from ..errors import DMLBenchError
from ..evaluate import TIE_BREAKS
from ..preprocess import DTYPES, NORMALIZATIONS, Preprocessing
from ..registry import UnknownNameError

BACKENDS = ("loky", "dask", "sequential")


class ConfigError(DMLBenchError, ValueError):
    """A config that cannot run: ``"<file>: <key.path>: <problem>"``."""

    def __init__(self, source: str, path: str, problem: str):
        self.source, self.path, self.problem = source, path, problem
        super().__init__(f"{source}: {path or '<top>'}: {problem}")


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
    """The ``evaluation:`` options of a verification experiment (README § Config reference).

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
    """A validated experiment config (see ``README.md`` § Config reference)."""

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


# --- schema -------------------------------------------------------------------------------------
# key → (accepted types, default); None default with no type check means "optional"
_TOP = {"name": (str, ...), "description": (str, ""), "paper_table": ((str, list), None),
        "datasets": (list, ...), "split": (dict, {}), "constraints": (dict, {}),
        "solvers": (list, ...), "evaluation": (dict, {}), "execution": (dict, {}),
        "figures": (list, []), "notes": (dict, {}), "protocol": (list, [])}
_DATASET = {"name": (str, ...), "label": (str, None), "normalize": (str, "zscore"),
            "pca": (int, None), "sqrt": (bool, False), "downscale": (int, None),
            "dtype": (str, "float64"), "n_samples": (int, None), "n_splits": (int, None), "solvers": (list, None)}
_SPLIT = {"train_fraction": ((int, float), 0.7), "validation_fraction": ((int, float), 0.0),
          "n_splits": (int, 10), "seed": (int, 0), "stratify": (bool, True),
          "predefined": (bool, False)}
_CONSTRAINTS = {"generator": (str, "knn_triplets"), "params": (dict, {"k": 3})}
_SOLVER = {"name": (str, ...), "label": (str, None), "params": (dict, {}), "tune": (dict, None)}
_TUNE = {"grid": (dict, ...), "cv": (int, None), "validation": ((int, float), None)}
_EVALUATION = {"knn_k": (int, 3), "tie_break": (str, "nearest"), "save_traces": (bool, False),
               "task": (str, "knn"), **{key: value for key, value in (
                   ("folds", (str, None)), ("n_folds", (int, None)), ("n_matched", (int, None)),
                   ("n_mismatched", (int, None)), ("triplet_k", (int, None)),
                   ("n_triplets", ((int, dict), None)), ("identities", (str, None)))}}
#: ``evaluation:`` keys of ``task: verification`` only (see :func:`_read_verification`)
_VERIFICATION_KEYS = ("folds", "n_folds", "n_matched", "n_mismatched", "triplet_k", "n_triplets",
                      "identities")
TASKS = ("knn", "verification")
_FIGURE = {"name": (str, ...), "kind": (str, ...), "x": (str, ...), "y": (str, ...),
           "panels": (str, "dataset"), "series": (str, "label"), "logx": (bool, False),
           "logy": (bool, False), "title": (str, "")}
FIGURE_KINDS = ("trace", "sweep", "bar")
FIGURE_GROUPS = ("dataset", "label", "solver", "none")
_PROTOCOL = {"choice": (str, ...), "ours": (str, ...), "paper": (str, None), "why": (str, None)}
_EXECUTION = {"n_jobs": (int, 1), "backend": (str, "loky"), "scheduler": (str, None),
              "timing": (bool, False)}

#: the declared ceilings of the config's counts: key path (``[]`` for any list index) → the
#: largest value accepted. Each is far above what an experiment uses and low enough that a run
#: or a validation it allows starts at once (a billion splits would plan a billion tasks first).
#: :meth:`_Reader.section` checks every key of a section that has one; ``constraints.params.*``
#: and the grid's number of points (the product of its value lists) are checked where they are
#: read.
CEILINGS = {
    "split.n_splits": 1000,
    "datasets[].n_splits": 1000,
    "datasets[].n_samples": 100_000_000,
    "datasets[].pca": 100_000,
    "datasets[].downscale": 64,
    "constraints.params.k": 1000,
    "constraints.params.n_triplets": 10_000_000,
    "evaluation.knn_k": 1000,
    "evaluation.n_folds": 100,
    "evaluation.n_matched": 1_000_000,
    "evaluation.n_mismatched": 1_000_000,
    "evaluation.n_triplets": 10_000_000,
    "evaluation.triplet_k": 1000,
    "solvers[].tune.cv": 100,
    "solvers[].tune.grid": 10_000,  # grid points
}


class _Reader:
    """Checks one mapping against a schema, reporting errors with their key path."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, path: str, problem: str):
        raise ConfigError(self.source, path, problem)

    def section(self, data: Any, schema: dict, path: str) -> dict:
        if not isinstance(data, dict):
            self.fail(path, f"expected a mapping, got {type(data).__name__}")
        for key in data:
            if key not in schema:
                close = difflib.get_close_matches(str(key), schema, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                self.fail(_join(path, key), f"unknown key{hint}; valid keys: {', '.join(schema)}")
        out = {}
        for key, (types, default) in schema.items():
            if key not in data or data[key] is None:
                if default is ...:
                    self.fail(_join(path, key), "required key is missing")
                out[key] = default
                continue
            value = data[key]
            wanted = types if isinstance(types, tuple) else (types,)
            if isinstance(value, bool) and bool not in wanted or not isinstance(value, wanted):
                names = " or ".join(t.__name__ for t in wanted)
                self.fail(_join(path, key), f"expected {names}, got {type(value).__name__} {value!r}")
            self.within(_join(path, key), value)
            out[key] = value
        return out

    def within(self, path: str, value: Any, ceiling_key: str | None = None):
        """An integer ``value`` at ``path`` is at most its declared ceiling (:data:`CEILINGS`,
        looked up by ``ceiling_key`` or by ``path`` with its list indices as ``[]``)."""
        ceiling = CEILINGS.get(ceiling_key or _INDEX.sub("[]", path))
        if ceiling is not None and isinstance(value, int) and not isinstance(value, bool):
            self.check(value <= ceiling, path, f"must be at most {ceiling}, got {value}")

    def name(self, registry, name: str, path: str, extra: dict | None = None):
        if name not in registry and name not in (extra or {}):  # plug-ins: see registry.py
            valid = list(registry) + list(registry.entry_points()) + list(extra or {})
            self.fail(path, str(UnknownNameError(registry.kind, name, valid)))
        try:  # a plug-in: the user's consent before any import, then its class (never called)
            registry.check_plugin(name)
        except DMLBenchError as exc:
            self.fail(path, str(exc))

    def plugin(self, registry, name: str, path: str):
        """``registry[name]``, a plug-in's load or check failure reported at ``path``."""
        try:
            return registry[name]
        except DMLBenchError as exc:
            self.fail(path, str(exc))

    def check(self, ok: bool, path: str, problem: str):
        if not ok:
            self.fail(path, problem)


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


def _join(path: str, key) -> str:
    return f"{path}.{key}" if path else str(key)


_INDEX = re.compile(r"\[\d+\]")  # a list index in a key path


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
    """Validate an already-parsed config mapping; see :func:`load_config`."""
    from ..datasets import DATASETS
    from ..solvers import PLANNED, SOLVERS

    r = _Reader(source)
    top = r.section(data, _TOP, "")
    r.check(bool(top["name"].strip()) and not {"/", "\\", "\0"} & set(top["name"])
            and top["name"].strip() not in (".", ".."), "name",
            "must be a non-empty name without '/', '\\' and other than '.' and '..' (it names "
            "the results folder)")
    split = r.section(top["split"], _SPLIT, "split")
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
    cons = r.section(top["constraints"], _CONSTRAINTS, "constraints")
    r.name(GENERATORS, cons["generator"], "constraints.generator")
    _check_params(r, GENERATORS[cons["generator"]], cons["params"], "constraints.params")
    for key, value in cons["params"].items():
        r.within(f"constraints.params.{key}", value)
    evaluation = r.section(top["evaluation"], _EVALUATION, "evaluation")
    r.check(evaluation["knn_k"] >= 1, "evaluation.knn_k", "must be at least 1")
    r.check(evaluation["tie_break"] in TIE_BREAKS, "evaluation.tie_break",
            f"must be one of {', '.join(TIE_BREAKS)}, got {evaluation['tie_break']!r}")
    r.check(evaluation["task"] in TASKS, "evaluation.task",
            f"must be one of {', '.join(TASKS)}, got {evaluation['task']!r}")
    verifying = evaluation["task"] == "verification"
    stray = [k for k in _VERIFICATION_KEYS if evaluation[k] is not None]
    r.check(verifying or not stray, "evaluation",
            f"{stray} apply to `task: verification` only (this is a k-NN experiment)")
    execution = r.section(top["execution"], _EXECUTION, "execution")
    r.check(execution["n_jobs"] >= 1 or execution["n_jobs"] == -1, "execution.n_jobs",
            "must be a positive number of workers or -1 (all cores)")
    r.check(execution["backend"] in BACKENDS, "execution.backend",
            f"must be one of {', '.join(BACKENDS)}, got {execution['backend']!r}")

    r.check(len(top["datasets"]) > 0, "datasets", "needs at least one dataset")
    datasets, data_paths = [], []
    entries = _expand_suites(r, top["datasets"])  # (key path, entry), a suite's per dataset
    for p, entry in entries:
        entry, data_path = _named_path(r, _bare_name(entry), p)
        d = r.section(_source_entry(r, entry, p, check_data), _DATASET, p)
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
        datasets.append(DatasetEntry(d["name"], d["label"] or d["name"], prep, d["n_samples"],
                                     d["n_splits"], tuple(d["solvers"]) if d["solvers"] else None))
    _unique(r, [d.label for d in datasets], "datasets", "dataset label")

    r.check(len(top["solvers"]) > 0, "solvers", "needs at least one solver")
    solvers = []
    for i, entry in enumerate(top["solvers"]):
        p = f"solvers[{i}]"
        s = r.section(_bare_name(entry), _SOLVER, p)
        r.name(SOLVERS, s["name"], f"{p}.name", extra=PLANNED)
        if s["name"] in SOLVERS:
            _check_params(r, r.plugin(SOLVERS, s["name"], f"{p}.name"), s["params"], f"{p}.params")
        tune = s["tune"] and _read_tune(r, s, split, f"{p}.tune", view1=verifying)
        solvers.append(SolverEntry(s["name"], s["label"] or s["name"], dict(s["params"]), tune))
    _unique(r, [s.label for s in solvers], "solvers", "solver label")
    for (p, _), d in zip(entries, datasets):
        unknown = sorted(set(d.solvers or ()) - {s.label for s in solvers})
        r.check(not unknown, f"{p}.solvers",
                f"unknown solver label(s) {unknown}; labels: {', '.join(s.label for s in solvers)}")

    paper = top["paper_table"]
    paper = tuple([paper] if isinstance(paper, str) else paper or [])
    if paper:
        from ..papers import load_paper_table

        for i, key in enumerate(paper):
            try:
                load_paper_table(key)
            except (KeyError, ValueError) as exc:
                r.fail(f"paper_table[{i}]" if len(paper) > 1 else "paper_table", str(exc))

    exp = Experiment(
        name=top["name"], description=top["description"], datasets=tuple(datasets),
        solvers=tuple(solvers), paper_table=paper, train_fraction=float(split["train_fraction"]),
        validation_fraction=float(split["validation_fraction"]),
        n_splits=split["n_splits"], seed=split["seed"], stratify=split["stratify"],
        predefined=split["predefined"],
        generator=cons["generator"], generator_params=dict(cons["params"]),
        knn_k=evaluation["knn_k"], tie_break=evaluation["tie_break"], task=evaluation["task"],
        verification=_read_verification(r, evaluation, datasets, solvers) if verifying else None,
        data_paths=tuple(data_paths),
        save_traces=evaluation["save_traces"], figures=_read_figures(r, top["figures"], evaluation),
        notes={str(k): str(v) for k, v in top["notes"].items()},
        protocol=_read_protocol(r, top["protocol"]), n_jobs=execution["n_jobs"],
        backend=execution["backend"], scheduler=execution["scheduler"], timing=execution["timing"],
    )
    if check_data and not verifying:
        _check_class_sizes(r, exp)
    return exp


def _read_protocol(r: _Reader, entries: list) -> tuple:
    """``protocol:`` entries: a choice, our value, and its basis: the paper's own words
    (``paper``), the argument for it where the paper is silent or departed from (``why``), or
    both. Reported beside the table (REPRODUCTION.md), not part of any task id."""
    out = []
    for i, entry in enumerate(entries):
        p = r.section(entry, _PROTOCOL, f"protocol[{i}]")
        r.check(bool(p["paper"] or p["why"]), f"protocol[{i}]",
                "give its basis: `paper:` (the sentence it rests on) and/or `why:` (the argument "
                "where the paper is silent)")
        out.append({k: " ".join(v.split()) for k, v in p.items() if v})
    return tuple(out)


_SOURCES = ("path", "openml")
#: the options of an ``openml_suite:`` entry that select its datasets (see :func:`_expand_suites`)
_SUITE_LIMITS = ("max_datasets", "max_instances", "max_features")


def _expand_suites(r: _Reader, entries: list) -> list[tuple[str, Any]]:
    """The ``datasets:`` entries as ``(key path, entry)``, each ``openml_suite:`` entry (an
    OpenML benchmark suite's alias or id, e.g. ``OpenML-CC18``) replaced by one ``openml: <id>``
    entry per dataset of the suite, smallest first, each with the suite entry's other options
    (normalize, pca, ...; ``max_datasets`` / ``max_instances`` / ``max_features`` select the
    datasets, see :func:`~dml_bench.datasets.openml_source.openml_suite_datasets`). Listing the
    suite needs the network: without it the suite is a one-line ``DataNotAvailable`` naming it.
    """
    out = []
    for i, entry in enumerate(entries):
        p = f"datasets[{i}]"
        if not isinstance(entry, dict) or "openml_suite" not in entry:
            out.append((p, entry))
            continue
        from ..datasets import DataNotAvailable
        from ..datasets.openml_source import openml_suite_datasets

        entry = dict(entry)
        suite = entry.pop("openml_suite")
        r.check(isinstance(suite, (int, str)) and not isinstance(suite, bool)
                and bool(str(suite).strip()), f"{p}.openml_suite",
                f"expected an OpenML suite alias or id, got {suite!r}")
        clash = [key for key in ("name", "label", *_SOURCES) if key in entry]
        r.check(not clash, p, f"{', '.join(clash)} cannot go with `openml_suite:` (each of its "
                "datasets is an `openml: <id>` entry labelled openml_<id>)")
        limits = {key: entry.pop(key) for key in _SUITE_LIMITS if key in entry}
        for key, value in limits.items():
            r.check(isinstance(value, int) and not isinstance(value, bool) and value >= 1,
                    f"{p}.{key}", f"expected a positive integer, got {value!r}")
        r.section({**entry, "name": "-"}, _DATASET, p)  # the copied options, before the network
        try:
            ids = openml_suite_datasets(suite, **limits)
        except DataNotAvailable as exc:
            raise DataNotAvailable(f"{r.source}: {p}.openml_suite: {exc}") from exc
        within = ", ".join(f"{key} = {value}" for key, value in limits.items())
        r.check(bool(ids), f"{p}.openml_suite",
                f"OpenML suite {suite!r} has no dataset" + (f" within {within}" if within else ""))
        out += [(p, {**entry, "openml": did}) for did in ids]
    return out


def _source_entry(r: _Reader, entry: Any, path: str, check_data: bool) -> Any:
    """A nameless dataset entry whose data is a user's file (``path:`` a CSV / ARFF / LIBSVM file,
    with ``label_column:`` for CSV and ARFF) or an OpenML dataset (``openml:`` an id or name) is
    the entry of the registry name that resolves it (``file:<path>?label_column=<column>``,
    ``openml:<id>``), labelled by default after the file's stem / ``openml_<id>``; other options
    (normalize, dtype, ...) as for any dataset. With ``check_data`` a file is read here, so that
    a missing column or an unparseable file is a config error. Anything else is returned as is.
    """
    if not isinstance(entry, dict) or "name" in entry or not set(_SOURCES) & set(entry):
        return entry
    from ..datasets.loader import FILE_FORMATS, file_reference

    entry = dict(entry)
    r.check(len(set(_SOURCES) & set(entry)) == 1, path,
            "give one of `path:` (a data file) and `openml:` (an OpenML dataset), not both")
    if "openml" in entry:
        ref = entry.pop("openml")
        r.check(isinstance(ref, (int, str)) and not isinstance(ref, bool) and bool(str(ref).strip()),
                f"{path}.openml", f"expected an OpenML dataset id or name, got {ref!r}")
        return {**entry, "name": f"openml:{ref}", "label": entry.get("label") or f"openml_{ref}"}
    file, label_column = entry.pop("path"), entry.pop("label_column", None)
    r.check(isinstance(file, str) and bool(file), f"{path}.path", f"expected a file path, got {file!r}")
    r.check(label_column is None or isinstance(label_column, str), f"{path}.label_column",
            f"expected a column name, got {label_column!r}")
    suffix = Path(file).suffix.lower()
    r.check(suffix in FILE_FORMATS, f"{path}.path",
            f"unknown file type {suffix!r} of {file}; supported: {', '.join(FILE_FORMATS)}")
    if FILE_FORMATS[suffix] == "libsvm":
        r.check(label_column is None, f"{path}.label_column",
                "a LIBSVM file holds its labels in each line's first field: drop label_column")
    else:
        r.check(label_column is not None, path,
                f"a {suffix} file needs `label_column:` (the column holding the class)")
    r.check(Path(file).exists(), f"{path}.path", f"file {file} not found (relative paths are "
            f"read from the working directory, {Path.cwd()})")
    name = file_reference(file, label_column)
    if check_data:
        from ..datasets import DATASETS, DataIntegrityError, DataNotAvailable

        try:
            DATASETS[name]  # reads the file: a bad column or format is reported here
        except DMLBenchError as exc:  # but a file that cannot be read is skipped by the run
            if not (isinstance(exc, DataNotAvailable) and (not isinstance(exc, DataIntegrityError)
                                                           or isinstance(exc.__cause__, OSError))):
                r.fail(path, str(exc))
    return {**entry, "name": name, "label": entry.get("label") or Path(file).stem}


def _named_path(r: _Reader, entry: Any, path: str) -> tuple[Any, str | None]:
    """A NAMED entry with ``path:`` (``{name: lfw_sift, path: /my/lfw_sift.mat}``): the file
    that replaces the registered dataset's own, for ``lfw_sift`` only (the entry without it,
    and the path). A nameless ``path:`` entry is a user's data file (:func:`_source_entry`)."""
    if not isinstance(entry, dict) or "name" not in entry or "path" not in entry:
        return entry, None
    entry = dict(entry)
    file = entry.pop("path")
    r.check(entry["name"] == "lfw_sift", f"{path}.path",
            f"a named dataset takes `path:` only for lfw_sift (the user's LFW-SIFT file), not "
            f"{entry['name']!r}; for a data file of your own drop `name:`")
    r.check(isinstance(file, str) and bool(file), f"{path}.path", f"expected a file path, got {file!r}")
    return entry, file


def _read_verification(r: _Reader, evaluation: dict, datasets: list, solvers: list):
    """The ``evaluation:`` options of ``task: verification`` as a :class:`VerificationSpec`
    (README § Config reference)."""
    from ..datasets import DATASETS
    from ..solvers import SOLVERS

    given = {k: evaluation[k] for k in _VERIFICATION_KEYS if evaluation[k] is not None}
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


def _bare_name(entry: Any) -> Any:
    """A dataset or solver entry given as a bare name (``datasets: [wine]``) is that entry with
    its defaults, ``{name: wine}``; anything else is checked as it is."""
    return {"name": entry} if isinstance(entry, str) else entry


def _read_figures(r: _Reader, figures: list, evaluation: dict) -> tuple:
    """``figures:`` entries (plotted by ``dmlbench report``, :mod:`dml_bench.report.figures`)."""
    from ..common.safe_write import name_problem

    out = []
    for i, entry in enumerate(figures):
        p = f"figures[{i}]"
        f = r.section(entry, _FIGURE, p)
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
    _unique(r, [f["name"] for f in out], "figures", "figure name")
    return tuple(out)


def _read_tune(r: _Reader, solver: dict, split: dict, path: str, view1: bool = False) -> Tune:
    """A solver's ``tune:`` block: ``grid`` plus ``cv: k`` or ``validation: fraction``; with
    ``view1`` (verification) the grid alone: LFW's View 1 chooses."""
    from ..solvers import SOLVERS

    t = r.section(solver["tune"], _TUNE, path)
    r.check(bool(t["grid"]), f"{path}.grid", "needs at least one parameter")
    if solver["name"] in SOLVERS:
        _check_params(r, SOLVERS[solver["name"]], t["grid"], f"{path}.grid")
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


def _check_params(r: _Reader, target, params: dict, path: str):
    """Parameter names must exist in the solver's / generator's signature."""
    sig = inspect.signature(target)
    valid = [n for n in sig.parameters if n not in ("self", "X", "y")]
    for key in params:
        if key not in valid:
            close = difflib.get_close_matches(str(key), valid, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            r.fail(f"{path}.{key}", f"unknown parameter{hint}; valid: {', '.join(valid)}")


def _unique(r: _Reader, labels: list[str], path: str, what: str):
    dup = sorted({x for x in labels if labels.count(x) > 1})
    r.check(not dup, path, f"duplicate {what}s {dup}: give each entry a distinct `label`")


def _check_class_sizes(r: _Reader, exp: Experiment):
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
