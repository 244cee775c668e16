"""The ``dmlbench`` command line, by command family: experiments (``init``, ``validate``, ``run``,
``report``, ``check``), papers (``reproduce``), board (``leaderboard``) and data (``datasets``,
``fetch``, ``solvers``); the group and what they share in :mod:`.base`.

The cli stage, the last: it reads what the user types and calls every other stage.
"""

from . import board, data, experiments, papers  # noqa: F401  (each registers its commands)
from .base import _TERMINATED, _OneLineErrors, main

__all__ = ["main", "_OneLineErrors", "_TERMINATED"]
