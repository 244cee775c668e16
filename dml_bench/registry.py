"""Name → object registries for datasets, constraint generators and solvers.

Every stage of the pipeline looks its plug-ins up by the name a YAML config uses. An unknown name
raises :class:`UnknownNameError`, whose message lists the valid names and the closest match.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Any

from .errors import DMLBenchError


class UnknownNameError(DMLBenchError, KeyError):
    """A config named a dataset / generator / solver that is not registered."""

    def __init__(self, kind: str, name: str, valid: list[str]):
        self.kind, self.name, self.valid = kind, name, sorted(valid)
        close = difflib.get_close_matches(str(name), self.valid, n=1)
        self.suggestion = close[0] if close else None
        hint = f" Did you mean {self.suggestion!r}?" if self.suggestion else ""
        super().__init__(
            f"unknown {kind} {name!r}.{hint} Valid names: {', '.join(self.valid)}"
        )

    def __str__(self) -> str:  # KeyError would quote the whole message
        return self.args[0]


class Registry(Mapping):
    """A read-mostly mapping of plug-in names with helpful errors.

    Parameters
    ----------
    kind : str
        What the registry holds ("dataset", "solver", ...), used in error messages.
    """

    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, Any] = {}

    def register(self, name: str, obj: Any = None):
        """Register ``obj`` under ``name``; without ``obj`` acts as a decorator."""
        if obj is None:
            return lambda o: self.register(name, o)
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._items[name] = obj
        return obj

    def __getitem__(self, name: str) -> Any:
        try:
            return self._items[name]
        except KeyError:
            raise UnknownNameError(self.kind, name, list(self._items)) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)
