"""The config schema: each section's keys, types, defaults and ceilings, and the reader that
checks a mapping against them.

A section's schema maps each key to ``(accepted types, default)`` or ``(accepted types, default,
rule)``: a default of ``...`` makes the key required, ``None`` optional, and a rule
(:class:`AtLeast`, :class:`OpenInterval`, :class:`OneOf`, :class:`Workers`) returns the problem
of a given value, or None. :class:`Reader` checks a mapping against one, reporting every
problem as a :class:`ConfigError` naming the file, the key path and the problem, with the valid
keys and a close match for an unknown key.
"""

from __future__ import annotations

import difflib
import inspect
import re
from dataclasses import dataclass
from typing import Any

from ..errors import DMLBenchError
from ..evaluate import TIE_BREAKS
from ..preprocess import DTYPES, NORMALIZATIONS
from ..registry import UnknownNameError


class ConfigError(DMLBenchError, ValueError):
    """A config that cannot run: ``"<file>: <key.path>: <problem>"``."""

    def __init__(self, source: str, path: str, problem: str):
        self.source, self.path, self.problem = source, path, problem
        super().__init__(f"{source}: {path or '<top>'}: {problem}")


# --- the rules a value must keep, declared beside its key ------------------------------------
@dataclass(frozen=True)
class AtLeast:
    """A number at least ``low``; ``show`` adds the value given to the message."""

    low: float
    show: bool = False
    unit: str = ""

    def __call__(self, value) -> str | None:
        if value >= self.low:
            return None
        got = f", got {value}" if self.show else ""
        return f"must be at least {self.low}{self.unit}{got}"


@dataclass(frozen=True)
class OpenInterval:
    """A number strictly between ``low`` and ``high``."""

    low: float
    high: float

    def __call__(self, value) -> str | None:
        ok = self.low < value < self.high
        return None if ok else f"must be in ({self.low}, {self.high}), got {value}"


@dataclass(frozen=True)
class OneOf:
    """One of ``options``."""

    options: tuple

    def __call__(self, value) -> str | None:
        ok = value in self.options
        return None if ok else f"must be one of {', '.join(self.options)}, got {value!r}"


@dataclass(frozen=True)
class Workers:
    """A positive number of workers, or -1 for all cores."""

    def __call__(self, value) -> str | None:
        ok = value >= 1 or value == -1
        return None if ok else "must be a positive number of workers or -1 (all cores)"


# --- the sections' keys: key → (accepted types, default[, rule]); ... required, None optional ----
POSITIVE = AtLeast(1)
TASKS = ("knn", "verification", "retrieval")
BACKENDS = ("loky", "dask", "sequential")
TOP = {"name": (str, ...), "description": (str, ""), "paper_table": ((str, list), None),
       "datasets": (list, ...), "split": (dict, {}), "constraints": (dict, {}),
       "solvers": (list, ...), "evaluation": (dict, {}), "execution": (dict, {}),
       "figures": (list, []), "notes": (dict, {}), "protocol": (list, [])}
DATASET = {"name": (str, ...), "label": (str, None),
           "normalize": (str, "zscore", OneOf(NORMALIZATIONS)),
           "pca": (int, None, POSITIVE), "sqrt": (bool, False), "downscale": (int, None, POSITIVE),
           "dtype": (str, "float64", OneOf(DTYPES)), "n_samples": (int, None, POSITIVE),
           "n_splits": (int, None, POSITIVE), "solvers": (list, None),
           "solver_params": (dict, None)}
SPLIT = {"train_fraction": ((int, float), 0.7, OpenInterval(0, 1)),
         "validation_fraction": ((int, float), 0.0), "n_splits": (int, 10, POSITIVE),
         "seed": (int, 0, AtLeast(0, show=True)), "stratify": (bool, True),
         "predefined": (bool, False)}
CONSTRAINTS = {"generator": (str, "knn_triplets"), "params": (dict, {"k": 3})}
SOLVER = {"name": (str, ...), "label": (str, None), "params": (dict, {}), "tune": (dict, None)}
TUNE = {"grid": (dict, ...), "cv": (int, None, AtLeast(2, show=True, unit=" folds")),
        "validation": ((int, float), None)}
#: ``evaluation:`` keys of ``task: verification`` only
VERIFICATION_KEYS = ("folds", "n_folds", "n_matched", "n_mismatched", "triplet_k", "n_triplets",
                     "identities")
EVALUATION = {"knn_k": (int, 3, POSITIVE), "tie_break": (str, "nearest", OneOf(TIE_BREAKS)),
              "save_traces": (bool, False), "task": (str, "knn", OneOf(TASKS)),
              "folds": (str, None), "n_folds": (int, None, POSITIVE),
              "n_matched": (int, None, POSITIVE), "n_mismatched": (int, None, POSITIVE),
              "triplet_k": (int, None, POSITIVE), "n_triplets": ((int, dict), None),
              "identities": (str, None), "query_class": (str, None),
              "top": (int, None, POSITIVE)}
#: ``evaluation:`` keys of ``task: retrieval`` only
RETRIEVAL_KEYS = ("query_class", "top")
FIGURE = {"name": (str, ...), "kind": (str, ...), "x": (str, ...), "y": (str, ...),
          "panels": (str, "dataset"), "series": (str, "label"), "logx": (bool, False),
          "logy": (bool, False), "title": (str, "")}
FIGURE_KINDS = ("trace", "sweep", "bar")
FIGURE_GROUPS = ("dataset", "label", "solver", "none")
PROTOCOL = {"choice": (str, ...), "ours": (str, ...), "paper": (str, None), "why": (str, None)}
EXECUTION = {"n_jobs": (int, 1, Workers()), "backend": (str, "loky", OneOf(BACKENDS)),
             "scheduler": (str, None), "timing": (bool, False)}

#: the declared ceilings of the config's counts: key path (``[]`` for any list index) → the
#: largest value accepted. Each is far above what an experiment uses and low enough that a run
#: or a validation it allows starts at once (a billion splits would plan a billion tasks first).
#: :meth:`Reader.section` checks every key of a section that has one; ``constraints.params.*``
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
    "evaluation.top": 10_000,
    "solvers[].tune.cv": 100,
    "solvers[].tune.grid": 10_000,  # grid points
}


class Reader:
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
                self.fail(join_path(path, key),
                          f"unknown key{hint}; valid keys: {', '.join(schema)}")
        out = {}
        for key, (types, default, *rule) in schema.items():
            if key not in data or data[key] is None:
                if default is ...:
                    self.fail(join_path(path, key), "required key is missing")
                out[key] = default
                continue
            value = data[key]
            wanted = types if isinstance(types, tuple) else (types,)
            if isinstance(value, bool) and bool not in wanted or not isinstance(value, wanted):
                names = " or ".join(t.__name__ for t in wanted)
                self.fail(join_path(path, key),
                          f"expected {names}, got {type(value).__name__} {value!r}")
            self.within(join_path(path, key), value)
            problem = rule[0](value) if rule else None
            if problem:
                self.fail(join_path(path, key), problem)
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


def join_path(path: str, key) -> str:
    """``path.key``, or ``key`` at the top."""
    return f"{path}.{key}" if path else str(key)


_INDEX = re.compile(r"\[\d+\]")  # a list index in a key path


def check_params(r: Reader, target, params: dict, path: str):
    """Parameter names must exist in the solver's / generator's signature."""
    sig = inspect.signature(target)
    valid = [n for n in sig.parameters if n not in ("self", "X", "y")]
    for key in params:
        if key not in valid:
            close = difflib.get_close_matches(str(key), valid, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            r.fail(f"{path}.{key}", f"unknown parameter{hint}; valid: {', '.join(valid)}")


def check_values(r: Reader, target, params: dict, path: str, index: int | None = None):
    """The values of ``params`` keep the solver's declared parameter constraints
    (scikit-learn's ``_parameter_constraints``, :func:`~dml_bench.solvers.base.param_problem`);
    the problem is reported at ``path.<name>`` (``path.<name>[index]`` for a grid value)."""
    from ..solvers.base import param_problem

    problem = param_problem(target, params)
    if problem:
        name, message = problem
        r.fail(f"{path}.{name}" + ("" if index is None else f"[{index}]"), message)


def unique_labels(r: Reader, labels: list[str], path: str, what: str):
    """No two entries of a list share a label."""
    dup = sorted({x for x in labels if labels.count(x) > 1})
    r.check(not dup, path, f"duplicate {what}s {dup}: give each entry a distinct `label`")
