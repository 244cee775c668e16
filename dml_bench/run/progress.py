"""Progress of a run's tasks on stderr: a bar on a terminal, a line per tenth in a log.

The runner takes ``progress(total)`` (see :func:`dml_bench.run.runner.run_experiment`); the command
line's runs and the leaderboard's cells (which run in a child process, often for hours, with
their stderr in a log file) build it here.
"""

from __future__ import annotations

import sys
import time

import click


def task_progress(name: str):
    """``progress(total)`` for the runner, labelled ``name``: a bar when stderr is a terminal,
    else a :class:`LogProgress`."""
    def progress(total):
        if sys.stderr.isatty():
            return click.progressbar(length=total, label=f"{name}: tasks", show_eta=True,
                                     show_pos=True, file=sys.stderr)
        return LogProgress(name, total)
    return progress


class LogProgress:
    """Progress for logs (no terminal): a line at every tenth of the tasks, with an ETA."""

    def __init__(self, name: str, total: int):
        self.name, self.total, self.done = name, total, 0

    def __enter__(self):
        self.start = time.monotonic()
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n: int):
        step = max(1, self.total // 10)
        before, self.done = self.done, self.done + n
        if self.done // step > before // step or self.done == self.total:
            elapsed = time.monotonic() - self.start
            eta = elapsed / self.done * (self.total - self.done)
            click.echo(f"{self.name}: {self.done}/{self.total} tasks, {elapsed:.0f} s elapsed, "
                       f"ETA {eta:.0f} s", err=True)
