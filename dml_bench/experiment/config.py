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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from ..common import safe_yaml
from ..constraints import GENERATORS
from ..preprocess import Preprocessing
from .sections import (ConstraintSpec, DatasetEntry, EvaluationSpec, ExecutionSpec, Experiment,
                       SolverEntry, SplitSpec, Tune)
from .entries import bare_name, expand_suites, named_path, source_entry
from .kind import ConfigRules
from .kinds import kind_named
from .schema import (
    CEILINGS,
    CONSTRAINTS,
    DATASET,
    EVALUATION,
    EXECUTION,
    FIGURE,
    FIGURE_GROUPS,
    FIGURE_KINDS,
    PROTOCOL,
    SOLVER,
    SPLIT,
    TOP,
    TUNE,
    TASKS,
    ConfigError,
    Reader,
    check_params,
    check_values,
    unique_labels,
)


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


def load_config(path: str | Path, *, check_data: bool = True,
                overrides: Sequence[str] = ()) -> Experiment:
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
    overrides : sequence of str
        ``key.path=value`` settings applied to the file's data before it is validated
        (:func:`apply_overrides`), so each is checked like the YAML.

    Raises
    ------
    ConfigError
        On the first problem found.
    """
    path = Path(path)
    data = apply_overrides(read_config_file(path), overrides, str(path))
    return parse_config(data, source=str(path), check_data=check_data)


def apply_overrides(data: Any, overrides: Sequence[str], source: str = "<config>") -> Any:
    """A copy of the config mapping ``data`` with each ``key.path=value`` of ``overrides`` set.

    The path's keys are joined by dots; in a list a key is an index (``solvers.1`` or
    ``solvers[1]``) or the ``label`` (else the ``name``) of one entry (``solvers.itml``). The
    value is read as a YAML value (:func:`parse_scalar`: ``0.1``, ``1e-6``, ``true``, ``null``,
    ``[0.1, 1]``; a quoted value is a string). A key a mapping does not have is added, and the validation that follows
    says if it is unknown.

    Raises
    ------
    ConfigError
        When an override is not ``key=value``, or its path leaves the config's structure (an
        index out of range, a label no entry has, a key under a value that is not a mapping).
    """
    import copy

    data = copy.deepcopy(data)
    for text in overrides:
        key, sep, value = text.partition("=")
        parts = [p for p in key.replace("[", ".").replace("]", "").split(".") if p]
        if not sep or not parts:
            raise ConfigError(source, "", f"override {text!r}: expected key.path=value")
        node = data
        for depth, part in enumerate(parts):
            where = ".".join(parts[:depth + 1])
            last = depth == len(parts) - 1
            value_ = (safe_yaml.safe_load(value) if value[:1] in "'\"" else parse_scalar(value))
            node = _override_step(node, part, value_ if last else None, last, (source, where))
    return data


def _override_step(node: Any, part: str, value: Any, last: bool, at: tuple[str, str]) -> Any:
    """One key of an override's path: the child of ``node`` named by ``part`` (created as a
    mapping when missing), or, at the ``last`` key, ``value`` set there."""
    if isinstance(node, list):
        index = _entry_index(node, part, at)
        if last:
            node[index] = value
        elif isinstance(node[index], str):  # a bare name entry (`- euclidean`)
            node[index] = {"name": node[index]}
        return node[index]
    if not isinstance(node, dict):
        raise ConfigError(at[0], at[1], f"cannot set a key under {type(node).__name__} {node!r}")
    if last:
        node[part] = value
    elif node.get(part) is None:
        node[part] = {}
    elif not isinstance(node[part], (dict, list)):
        raise ConfigError(at[0], at[1], f"is {node[part]!r}, not a mapping or a list")
    return node[part]


def _entry_index(entries: list, part: str, at: tuple[str, str]) -> int:
    """The position in ``entries`` of index ``part``, or of the entry labelled (else named)
    ``part``."""
    if part.lstrip("-").isdigit():
        index = int(part)
        if not -len(entries) <= index < len(entries):
            raise ConfigError(at[0], at[1], f"index {index} out of range: the list has "
                              f"{len(entries)} entries")
        return index
    def names(entry):
        return (entry,) if isinstance(entry, str) else (
            (entry.get("label"), entry.get("name")) if isinstance(entry, dict) else ())
    for field_ in (0, 1):
        found = [i for i, e in enumerate(entries) if len(names(e)) > field_
                 and names(e)[field_] == part]
        if len(found) == 1:
            return found[0]
    known = sorted({str(n) for e in entries for n in names(e) if n})
    raise ConfigError(at[0], at[1], f"no single entry labelled or named {part!r}; entries: "
                      f"{', '.join(known)}")


def read_config_file(path: str | Path) -> Any:
    """The parsed YAML of a config file (an experiment's or a board's), not yet validated.

    A path that names no file here but a shipped config (``configs/<name>.yaml``) reads the
    shipped one (:func:`~dml_bench.common.shipped.resolve_config`).

    Read with the limits of :mod:`dml_bench.common.safe_yaml` (see :func:`load_config`).

    Raises
    ------
    ConfigError
        When the file is missing or is not YAML within those limits, naming the file.
    """
    from ..common.shipped import resolve_config

    try:
        return safe_yaml.load_file(resolve_config(path))
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
    rules = kind_named(evaluation["task"]).config
    execution = _read_execution(r, top["execution"])
    datasets, data_paths = _read_datasets(r, top["datasets"], split, rules, check_data)
    solvers = _read_solvers(r, top["solvers"], split, rules)
    _check_dataset_solvers(r, datasets, solvers)
    paper = _read_paper_table(r, top["paper_table"])
    options = rules.read(r, evaluation, [d for _, d in datasets], solvers) if rules.read else {}
    exp = Experiment(
        name=top["name"], description=top["description"], datasets=tuple(d for _, d in datasets),
        solvers=tuple(solvers), paper_table=paper, data_paths=tuple(data_paths),
        split=SplitSpec(**{**split, "train_fraction": float(split["train_fraction"]),
                           "validation_fraction": float(split["validation_fraction"])}),
        constraints=ConstraintSpec(cons["generator"], tuple(sorted(cons["params"].items()))),
        evaluation=EvaluationSpec(evaluation["task"], evaluation["knn_k"],
                                  evaluation["tie_break"], evaluation["save_traces"], **options),
        execution=ExecutionSpec(**execution),
        figures=_read_figures(r, top["figures"], evaluation, [d for _, d in datasets],
                              solvers),
        notes={str(k): str(v) for k, v in top["notes"].items()},
        protocol=_read_protocol(r, top["protocol"]),
    )
    if check_data and rules.class_sizes:
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
    r.check(split["validation_fraction"] >= 0
            and split["train_fraction"] + split["validation_fraction"] < 1 - 1e-9,
            "split.validation_fraction",
            f"must be in [0, 1 - train_fraction), got {split['validation_fraction']}")
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
    """The ``evaluation:`` section: the task kind and its k-NN rule; the keys of another kind
    than the one named are refused here, the kind's own keys are read by its rules
    (:attr:`~dml_bench.experiment.kind.TaskKind.config`)."""
    evaluation = r.section(section, EVALUATION, "evaluation")
    task = evaluation["task"]
    for other in TASKS:
        stray = [k for k in kind_named(other).config.keys if evaluation[k] is not None]
        r.check(other == task or not stray or set(stray) <= set(kind_named(task).config.keys),
                "evaluation", f"{stray} apply to `task: {other}` only (this is a "
                f"{kind_named(task).config.name} experiment)")
    return evaluation


def _read_execution(r: Reader, section: Any) -> dict:
    """The ``execution:`` section: the number of workers and the backend."""
    return r.section(section, EXECUTION, "execution")


def _read_datasets(r: Reader, entries: list, split: dict, rules: ConfigRules,
                   check_data: bool) -> tuple[list, list]:
    """The ``datasets:`` section as ``(key path, DatasetEntry)`` pairs (an OpenML suite's
    datasets share its key path) and the ``(label, file)`` of named entries given a ``path:``."""
    from ..datasets import DATASETS

    r.check(len(entries) > 0, "datasets", "needs at least one dataset")
    datasets, data_paths = [], []
    for p, entry in expand_suites(r, entries):
        entry, data_path = named_path(r, bare_name(entry), p)
        d = r.section(source_entry(r, entry, p, check_data), DATASET, p)
        r.name(DATASETS, d["name"], f"{p}.name", extra=rules.extra_datasets or None)
        if data_path:
            data_paths.append((d["label"] or d["name"], data_path))
        if split["predefined"]:
            r.check(d["n_samples"] is None and (d["n_splits"] or 1) == 1, p,
                    "n_samples and n_splits > 1 do not apply with split.predefined")
        prep = Preprocessing(d["normalize"], d["pca"], d["sqrt"], d["downscale"], d["dtype"])
        for label, params in (d["solver_params"] or {}).items():
            r.check(isinstance(params, dict), f"{p}.solver_params.{label}",
                    f"expected a mapping of parameter names to values, got {params!r}")
        own = tuple((str(label), tuple(sorted(params.items())))
                    for label, params in (d["solver_params"] or {}).items())
        datasets.append((p, DatasetEntry(d["name"], d["label"] or d["name"], prep, d["n_samples"],
                                         d["n_splits"],
                                         tuple(d["solvers"]) if d["solvers"] else None, own)))
    unique_labels(r, [d.label for _, d in datasets], "datasets", "dataset label")
    return datasets, data_paths


def _read_solvers(r: Reader, entries: list, split: dict, rules: ConfigRules) -> list[SolverEntry]:
    """The ``solvers:`` section: registered (or planned) solvers, their parameters and grids."""
    from ..solvers import PLANNED, SOLVERS

    r.check(len(entries) > 0, "solvers", "needs at least one solver")
    solvers = []
    for i, entry in enumerate(entries):
        p = f"solvers[{i}]"
        s = r.section(bare_name(entry), SOLVER, p)
        r.name(SOLVERS, s["name"], f"{p}.name", extra=PLANNED)
        if s["name"] in SOLVERS:
            cls = r.plugin(SOLVERS, s["name"], f"{p}.name")
            check_params(r, cls, s["params"], f"{p}.params")
            check_values(r, cls, s["params"], f"{p}.params")
        tune = s["tune"] and _read_tune(r, s, split, f"{p}.tune", view1=rules.tune_on_view1)
        solvers.append(SolverEntry(s["name"], s["label"] or s["name"], dict(s["params"]), tune))
    unique_labels(r, [s.label for s in solvers], "solvers", "solver label")
    return solvers


def _check_dataset_solvers(r: Reader, datasets: list, solvers: list[SolverEntry]):
    """A dataset entry's ``solvers:`` and ``solver_params:`` name only solver labels of the
    experiment, and its parameters are the solver's, with values it accepts."""
    from ..solvers import SOLVERS

    labels = ", ".join(s.label for s in solvers)
    by_label = {s.label: s for s in solvers}
    for p, d in datasets:
        unknown = sorted(set(d.solvers or ()) - set(by_label))
        r.check(not unknown, f"{p}.solvers", f"unknown solver label(s) {unknown}; labels: {labels}")
        for label, own in d.solver_params:
            path = f"{p}.solver_params.{label}"
            r.check(label in by_label, path, f"unknown solver label; labels: {labels}")
            name = by_label[label].name
            if name in SOLVERS:
                check_params(r, SOLVERS[name], dict(own), path)
                check_values(r, SOLVERS[name], {**by_label[label].params, **dict(own)}, path)


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


def _read_figures(r: Reader, figures: list, evaluation: dict, datasets: Sequence = (),
                  solvers: Sequence = ()) -> tuple:
    """``figures:`` entries (plotted by ``dmlbench report``, :mod:`dml_bench.report.figures`).

    Given the experiment's ``datasets`` and ``solvers`` (entries), a sweep or bar chart that
    would average over data sets or solver labels it does not show (two of them in one point or
    bar: ``panels``, ``series`` and ``x`` do not tell them apart) is refused, at ``figures[i]``.
    """
    from ..common.safe_write import name_problem
    from ..solvers import SOLVERS

    def setting(solver, parameter: str):
        """A solver's value of ``parameter`` as ``runs.csv`` records it (the given one, else its
        default); the label where a grid tunes it (it varies per split)."""
        if solver.tune and parameter in dict(solver.tune.grid):
            return ("tuned", solver.label)
        if parameter in solver.params or solver.name not in SOLVERS:
            return solver.params.get(parameter)
        return SOLVERS[solver.name](**solver.params).get_params().get(parameter)

    def group(by: str, d, s):
        """The value by which a figure groups the runs of data set ``d`` and solver ``s``."""
        if by.startswith("dataset."):
            field = by.split(".", 1)[1]
            return getattr(d.preprocessing, field, getattr(d, field, None))
        if by.startswith("solver."):
            return setting(s, by.split(".", 1)[1])
        return {"dataset": d.label, "label": s.label, "solver": s.name}.get(by, "")

    def check_shown(p: str, f: dict):
        """The figure tells apart every data set and solver label it draws (see above)."""
        points: dict = {}
        for d in datasets:
            for s in solvers:
                key = tuple(group(f[k], d, s) for k in ("panels", "series", "x"))
                drawn = f["kind"] == "bar" or key[2] is not None  # a sweep drops x = None
                if drawn and (d.solvers is None or s.label in d.solvers):
                    points.setdefault(tuple(map(repr, key)), []).append((d.label, s.label))
        for index, noun, field in ((0, "data sets", "dataset"), (1, "solver labels", "label")):
            for cells in points.values():
                mixed = list(dict.fromkeys(cell[index] for cell in cells))
                listed = ", ".join(mixed[:4]) + (", …" if len(mixed) > 4 else "")
                r.check(len(mixed) < 2, p,
                        f"the {'bar chart' if f['kind'] == 'bar' else 'sweep'} would average "
                        f"{f['y']} over the {noun} {listed} in one "
                        f"{'bar' if f['kind'] == 'bar' else 'point'}, as neither panels, series "
                        f"nor x shows them: set panels or series to {field}")

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
        if f["kind"] != "trace":
            check_shown(p, f)
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
        if solver["name"] in SOLVERS:
            for i, value in enumerate(values):
                check_values(r, SOLVERS[solver["name"]], {name: value}, f"{path}.grid",
                             index=i)
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
    if t["cv"] is None:
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

    if "k" not in inspect.signature(GENERATORS[exp.constraints.generator]).parameters:
        return  # random generators have no k targets per point
    k = dict(exp.constraints.params).get("k", 3)
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
        smallest = math.ceil(exp.split.train_fraction * counts.min() - 1e-9)
        r.check(k < smallest, "constraints.params.k",
                f"k = {k} needs more than k training points per class, but the smallest class of "
                f"datasets[{i}] ({entry.name}) has {smallest} in the training part")
