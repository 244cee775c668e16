"""The project's own errors: faults of the user's input or environment, never of the code.

Each is raised with a one-line message that names what is wrong and, where there is one, the
remedy; the command line prints that line and exits with status 2, without a traceback
(:func:`dml_bench.cli.main`). Stage modules subclass :class:`DMLBenchError` for their faults
(``ConfigError``, ``UnknownNameError``, ``DataNotAvailable``, ``ReportError``, …).
"""


class DMLBenchError(Exception):
    """A fault of the input or the environment, reported as its one-line message."""


class RunRefused(DMLBenchError):
    """A run that would lose finished work without being told to (e.g. superseding rows)."""
