"""A leaderboard's config and its cells log.

A board config (``configs/leaderboard.yaml``) is an experiment config plus a ``leaderboard:``
section: ``fit_budget_seconds`` (every fit's wall-clock budget), ``memory_gb`` and per-solver
``footprint`` (the "cannot run" rule), and ``hosts_note``, a finding about the fit times across
hosts that the page adds to its list of the hosts the final fits ran on. The experiment's
``notes:`` (keys ``<data set>/<method>``, ``*`` for any) are shown under the ranks: a finding
about a row, with its diagnosis.
:func:`load_board` reads it as a :class:`Board`.

A board is run cell by cell (:mod:`dml_bench.leaderboard.run`): one (data set, method) cell is
the method's tuning and final fits on the data set's splits. ``cells.csv`` in the board's folder
records the cells that the run marked, each with its status (:data:`STATUS_TEXT`) and reason
(:func:`record_cell`, :func:`read_cells`).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..errors import BoardError, warn
from ..experiment.config import parse_config, read_config_file
from ..experiment.sections import Experiment
from ..experiment.schema import ConfigError
from ..run.results import append_bytes

CELLS = "cells.csv"
CELL_COLUMNS = ["dataset", "label", "status", "reason", "budget_seconds", "finished_at"]
_SECTION = {"fit_budget_seconds": (int, float), "memory_gb": (int, float), "footprint": dict,
            "hosts_note": str}
#: a cell's status (other than complete) and its mark in the board's tables
STATUS_TEXT = {"over_budget": "–", "cannot_run": "n/a", "failed": "failed", "pending": "…",
               "no_data": "no data"}
_SECONDS = re.compile(r"(?:budget \(|no fit ended in )([0-9.]+) s")
_GB = re.compile(r"an estimated ([0-9.]+) GB")


@dataclass(frozen=True)
class Board:
    """A validated board config: the experiment and the ``leaderboard:`` rules."""

    experiment: Experiment
    budget: float = 600.0
    memory_gb: float = 8.0
    footprint: dict = field(default_factory=dict)  # solver → {"dd": c, "nn": c, "nd": c, ...}
    source: str = ""  # the config file (named in the cells' child processes' errors)
    hosts_note: str = ""  # shown after the hosts of the final fits (one line)

    def memory_bytes(self, solver: str, n_train: int, d: int, params: dict | None = None
                     ) -> float:
        """Estimated peak memory of one fit: 8 B × (dd·d² + nn·n_train² + nd·n_train·d),
        from the solver's ``span`` entry instead when d > n_train and it has one (a solver that
        then fits in the span of the training points), from its ``blocked`` entry when
        n_train reaches that entry's ``from_n`` (a solver that then works by blocks of rows),
        or from its ``landmarks`` entry, 8 B × (nm·n_train·m + mm·m²), when its ``params`` set
        ``n_landmarks`` = m and n_train exceeds ``max_exact_n`` (m when unset): a kernel
        replaced by its Nyström approximation on m landmarks."""
        f = self.footprint.get(solver, self.footprint.get("default", {}))
        m = (params or {}).get("n_landmarks")
        if d > n_train and "span" in f:
            f = f["span"]
        elif "landmarks" in f and m and n_train > ((params or {}).get("max_exact_n") or m):
            f = f["landmarks"]
            return 8.0 * (f.get("nm", 0) * n_train * m + f.get("mm", 0) * m ** 2)
        elif "blocked" in f and n_train >= f["blocked"].get("from_n", math.inf):
            f = f["blocked"]
        return 8.0 * (f.get("dd", 0) * d ** 2 + f.get("nn", 0) * n_train ** 2
                      + f.get("nd", 0) * n_train * d)


def memory_reason(need: float, n_train: int, d: int, memory_gb: float) -> str:
    """The reason of a cell the memory rule marks *cannot run*."""
    return (f"memory: an estimated {need / 2 ** 30:.1f} GB for n_train = {n_train}, d = {d} "
            f"exceeds the {memory_gb:g} GB rule")


def planned_sizes(exp: Experiment, no_data=()) -> dict[str, tuple[int, int]]:
    """(n_train, d) per data-set label from the catalogue (no loading; an ``openml:`` data set's
    spec is its loaded data), the labels in ``no_data`` left out: the sizes the memory rule and
    the size rule are checked on."""
    from ..datasets import DATASETS

    out = {}
    for entry in (e for e in exp.datasets if e.label not in no_data):
        spec = DATASETS[entry.name]
        n = min(entry.n_samples or spec.n_samples, spec.n_samples)
        d = entry.preprocessing.pca or spec.n_features
        out[entry.label] = (math.ceil(exp.split.train_fraction * n), min(d, spec.n_features))
    return out


def load_board(path: str | Path) -> Board:
    """Read a board config: ``leaderboard:`` plus an experiment config (see the module doc).

    Raises
    ------
    ConfigError
        On any problem, naming the key.
    """
    source = str(path)
    data = read_config_file(path)
    if not isinstance(data, dict) or not isinstance(data.get("leaderboard"), dict):
        raise ConfigError(source, "leaderboard", "a board config needs a `leaderboard:` mapping "
                          f"with {', '.join(_SECTION)}")
    rules = data.pop("leaderboard")
    for key, value in rules.items():
        if key not in _SECTION:
            raise ConfigError(source, f"leaderboard.{key}",
                              f"unknown key; valid keys: {', '.join(_SECTION)}")
        if isinstance(value, bool) or not isinstance(value, _SECTION[key]):
            raise ConfigError(source, f"leaderboard.{key}", f"unexpected value {value!r}")
    for key in ("fit_budget_seconds", "memory_gb"):
        if rules.get(key, 1) <= 0:
            raise ConfigError(source, f"leaderboard.{key}", "must be positive")
    footprint = rules.get("footprint", {})
    for name, f in footprint.items():
        _check_footprint(source, f"leaderboard.footprint.{name}", f, nested=True)
    exp = parse_config(data, source=source)
    _check_note_keys(exp, source)
    return Board(exp, float(rules.get("fit_budget_seconds", 600)),
                 float(rules.get("memory_gb", 8)), footprint, str(Path(path).resolve()),
                 hosts_note=" ".join(rules.get("hosts_note", "").split()))


def _check_footprint(source: str, key: str, f, nested: bool) -> None:
    """A footprint entry: numbers of d×d, n_train×n_train and n_train×d float64 matrices
    (``dd``, ``nn``, ``nd``) and, at the top level, a ``span`` entry of the same kind for
    d > n_train, a ``blocked`` entry for n_train ≥ its ``from_n`` and a ``landmarks`` entry of
    n_train×m and m×m matrices (``nm``, ``mm``) for a Nyström kernel on m landmarks."""
    allowed = ({"nm", "mm"} if key.endswith(".landmarks") else
               {"dd", "nn", "nd"} | ({"span", "blocked", "landmarks"} if nested else set())
               | ({"from_n"} if key.endswith(".blocked") else set()))
    if not isinstance(f, dict) or set(f) - allowed:
        raise ConfigError(source, key, "must be a mapping with keys among "
                          f"{', '.join(sorted(allowed))} (numbers of d×d, n_train×n_train "
                          "and n_train×d float64 matrices"
                          + ("; span: the same for d > n_train; blocked: the same with "
                             "from_n, for n_train ≥ from_n; landmarks: nm and mm, n_train×m "
                             "and m×m matrices" if nested else "") + ")")
    for term, value in f.items():
        if term in ("span", "blocked", "landmarks"):
            _check_footprint(source, f"{key}.{term}", value, nested=False)
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ConfigError(source, f"{key}.{term}", f"must be a number ≥ 0, not {value!r}")


def experiment_of(path: str | Path) -> Experiment:
    """The experiment of a config file: a board config's (one with a ``leaderboard:`` mapping) or
    an ordinary run config's, for tools that take either
    (``benchmarks/diagnoses/seed_diagnosis.py``)."""
    data = read_config_file(Path(path))
    if isinstance(data, dict) and isinstance(data.get("leaderboard"), dict):
        return load_board(path).experiment
    return parse_config(data, source=str(Path(path)))


def _check_note_keys(exp: Experiment, source: str) -> None:
    """A board's ``notes:`` keys are ``<data set>/<method>`` labels of the board, or ``*``: the
    page shows each note under the ranks, so a key that names nothing is a typo."""
    datasets = {e.label for e in exp.datasets} | {"*"}
    methods = {s.label for s in exp.solvers} | {"*"}
    for key in exp.notes:
        d, _, m = key.partition("/")
        if d not in datasets or m not in methods:
            raise ConfigError(source, f"notes.{key}", "a note's key is <data set label>/<method "
                              "label> of this board, either part may be *")


def cell_bound(status: str, reason: str, budget: float) -> str:
    """The bound that decided a cell that did not run to its end, from its ``cells.csv`` reason:
    for an over-budget cell the longest wall time a fit was seen to run (``> 1002 s``; the
    budget itself when the record holds no time, and marked ``est.`` when the size rule only
    extrapolated from a smaller data set), for a cell that cannot run the footprint's memory estimate of one fit
    (``23.8 GB``); empty otherwise."""
    reason = str(reason)
    if status == "over_budget":
        seconds = _SECONDS.search(reason)
        if seconds:
            return f"> {float(seconds.group(1)):.0f} s"
        return f"{'est. ' * reason.startswith('estimated')}> {budget:g} s"
    if status == "cannot_run":
        gb = _GB.search(reason)
        return f"{gb.group(1)} GB" if gb else ""
    return ""


def read_cells(board_dir: Path) -> pd.DataFrame:
    """The latest ``cells.csv`` record of every (data set, method) cell (empty if none)."""
    path = Path(board_dir) / CELLS
    if not path.exists():
        return pd.DataFrame(columns=CELL_COLUMNS)
    bad = []
    cells = pd.read_csv(path, engine="python", encoding_errors="replace", dtype=str,
                        on_bad_lines=lambda line: bad.append(line))
    if list(cells.columns) != CELL_COLUMNS:
        raise BoardError(f"{path}: not a cells log of a board (its header is not "
                         f"{','.join(CELL_COLUMNS)}); move it aside to run the board afresh")
    whole = (cells["status"].isin(STATUS_TEXT)
             & pd.to_numeric(cells["budget_seconds"], errors="coerce").notna())
    if len(bad) + (~whole).sum():
        warn(f"{path}: {len(bad) + (~whole).sum()} corrupt line(s) ignored")
    return cells[whole].drop_duplicates(["dataset", "label"], keep="last")


def record_cell(board_dir: Path, dataset: str, label: str, status: str, reason: str,
                budget: float) -> None:
    """Append a cell's mark to ``cells.csv`` (its header first in a new log): its status, its
    reason in one line, the budget it holds for and the time."""
    path = board_dir / CELLS
    line = io.StringIO()
    writer = csv.writer(line, lineterminator="\n")
    if not os.path.lexists(path):
        writer.writerow(CELL_COLUMNS)
    writer.writerow([dataset, label, status, " ".join(str(reason).split()), budget,
                     dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")])
    append_bytes(path, line.getvalue().encode())  # whole, synced, never through a symlink
