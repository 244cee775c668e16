"""The project's own errors: faults of the user's input or environment, never of the code.

Each is raised with a one-line message that names what is wrong and, where there is one, the
remedy; the command line prints that line and exits with status 2, without a traceback
(:func:`dml_bench.cli.main`). Stage modules subclass :class:`DMLBenchError` for their faults
(``ConfigError``, ``UnknownNameError``, ``DataNotAvailable``, ``ReportError``, …). A fault
the code recovers from is reported by :func:`warn`, also in one line.
"""

import sys
import warnings


class DMLBenchError(Exception):
    """A fault of the input or the environment, reported as its one-line message."""


class RunRefused(DMLBenchError):
    """A run that would lose finished work without being told to (e.g. superseding rows)."""


class BoardError(DMLBenchError):
    """A cell of a board (one data set × one method) could not be run or recorded for a reason
    outside its budget: its run stopped with an error, or the board's cells log is not one."""


class DMLBenchWarning(RuntimeWarning):
    """The warning :func:`warn` also issues, for callers that catch warnings
    (``pytest.warns``, ``warnings.simplefilter("error", DMLBenchWarning)``). Ignored unless a
    filter says otherwise, as its line is on standard error already."""


def warn(message: str) -> None:
    """Report a fault that the code recovered from (a damaged cache entry recomputed, a cache
    that cannot be written) as one line ``warning: <message>`` on standard error, and as a
    :class:`DMLBenchWarning`.

    The line goes to ``sys.stderr`` as it is at the call (the command line's, or a test runner's
    capture); whitespace runs, newlines included, become single spaces.
    """
    line = " ".join(str(message).split())
    sys.stderr.write(f"warning: {line}\n")
    sys.stderr.flush()
    # last in the filters: any filter the caller set (pytest.warns' "always", an "error") wins
    warnings.filterwarnings("ignore", category=DMLBenchWarning, append=True)
    warnings.warn(line, DMLBenchWarning, stacklevel=2)
