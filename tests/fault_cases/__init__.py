"""The fault corpus's cases, by family; ``tests/test_fault_corpus.py`` runs them all.

A case is a fault met as a user meets it: a config, a results folder, a data file, a cache, a
process or a Python call that is wrong or damaged. :class:`Case` says what is set up, which
command runs (``dmlbench`` arguments, in-process, or a Python call), and what must follow: the
exit status and the exact one line that explains the fault. The runner also asserts, for every
case, that no traceback is printed, that nothing outside the results folder and the dataset
cache is written or changed, and that every row finished before the case is still there exactly
once (in ``runs*.csv`` or moved to ``runs_superseded.csv``).

Each module of this package holds cases (its ``CASES``) of one or more families
(:data:`FAMILIES`): ``security``, ``config`` (config and command line), ``data`` (user
data), ``logs`` (result logs), ``processes`` (processes and concurrency, dask included),
``environment`` (file system: disk full, read-only folders, permissions) and ``api`` (the Python
API).

Placeholders in ``argv`` items and in ``line``: ``{cfg}`` the config file, ``{results}`` the
results root, ``{work}`` the case's working folder (the current directory while it runs),
``{cache}`` the dataset cache, ``{outside}`` a folder outside both that must stay untouched, and
``{<key>}`` any string a case's ``setup`` put in ``ctx.extra`` (e.g. the ids of the finished rows
the line must name, read from ``runs.csv`` rather than written into the case).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FAMILIES = ("security", "config", "data", "logs", "processes", "environment", "api")

#: the experiment every case starts from; ``finished`` (the runner's fixture) holds its 2 rows
NAME = "corpus"
GOOD = {"name": NAME, "datasets": [{"name": "wine"}], "solvers": [{"name": "euclidean"}],
        "split": {"n_splits": 2}, "execution": {"backend": "sequential"}}


def changed(**changes) -> dict:
    """GOOD with top-level keys replaced (``None`` deletes one)."""
    cfg = {**GOOD, **changes}
    return {k: v for k, v in cfg.items() if v is not None}


@dataclass
class Ctx:
    """What a case's ``setup`` / ``call`` / ``invoke`` sees."""

    work: Path  # the working folder (cwd during the case); the config is written here
    results: Path  # the results root, holding ``corpus/`` with GOOD's finished rows
    cache: Path  # the dataset cache (DMLBENCH_CACHE)
    outside: Path  # a folder that no case may write into
    cfg: Path  # the config file
    monkeypatch: Any  # pytest's monkeypatch, undone after the case
    extra: dict = field(default_factory=dict)  # anything a setup wants to pass on

    @property
    def run_dir(self) -> Path:
        return self.results / NAME

    def fill(self, text: str) -> str:
        text = (text.replace("{cfg}", str(self.cfg)).replace("{results}", str(self.results))
                .replace("{work}", str(self.work)).replace("{cache}", str(self.cache))
                .replace("{outside}", str(self.outside)))
        for key, value in self.extra.items():  # what a setup recorded, e.g. finished task ids
            if isinstance(value, str):
                text = text.replace("{" + key + "}", value)
        return text


@dataclass
class Case:
    """One fault.

    Attributes
    ----------
    id : str
        Unique, used as the test id.
    family : str
        One of :data:`FAMILIES`.
    cfg : dict or str or bytes
        The config written to ``{cfg}`` (a dict as YAML; str/bytes as they are).
    argv : tuple
        ``dmlbench`` arguments (placeholders filled); ``run`` gets ``--results-dir {results}``
        appended unless it is given.
    setup : callable, optional
        ``setup(ctx)`` damages the environment before the command (files, monkeypatches).
    call : callable, optional
        A Python-API case: ``call(ctx)`` must raise; its exception's ``str`` is compared with
        ``line`` and its type with ``raises``. ``argv`` is then not used.
    invoke : callable, optional
        ``invoke(ctx) -> (exit_code, output)``: runs the command itself (a subprocess, a kill),
        instead of the in-process command line.
    code : int
        Expected exit status (0: the run goes on, and ``line`` is one line of its output).
    line : str
        The exact one line: for a non-zero ``code`` the single ``error: …`` line; for 0 one
        line of the output (a warning, a ``skipped …`` line).
    raises : type
        The exception type an API ``call`` raises.
    rows_after : int, optional
        Rows in the experiment's ``runs*.csv`` afterwards (default: the 2 finished before).
    check : callable, optional
        ``check(ctx, output)``: further assertions of the case.
    """

    id: str
    family: str
    cfg: Any = field(default_factory=lambda: dict(GOOD))
    argv: tuple = ("run", "{cfg}")
    setup: Callable | None = None
    call: Callable | None = None
    invoke: Callable | None = None
    code: int = 2
    line: str = ""
    raises: type = ValueError
    rows_after: int | None = None
    check: Callable | None = None


def all_cases() -> list[Case]:
    """Every case module's ``CASES`` (the modules of this package, by name)."""
    import importlib
    import pkgutil

    cases = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        cases.extend(importlib.import_module(f"{__name__}.{info.name}").CASES)
    return cases
