"""Errors raised when a dataset's files cannot be found, read or verified.

Contract: every data fault raised by :func:`~dml_bench.datasets.load_dataset` and
:func:`~dml_bench.datasets.fetch_dataset` (for any registered dataset) is a
:class:`DataNotAvailable`, and its ``str()`` is ONE line (no newline) that names the dataset, the
file (path) and the problem, and where it can the remedy, e.g.::

    dataset 'pima': sha256 mismatch for /m/pima/pima-indians-diabetes.csv (from the mirror): ...
    dataset 'pima': file 'pima/pima-indians-diabetes.csv' is not available: cache: ... (missing
        ...); mirror folder /x does not exist (...); network: ... (network access disabled). ...
    dataset 'pima': downloading https://... failed (<urlopen error ...>); cache: ...; mirror: ...
    dataset 'pima': cannot read cache file /c/pima/...: Permission denied. Fix its permissions, ...
    dataset 'usps_roweis': cannot parse /c/usps_roweis/usps_all.mat: MatReadError: ...
    dataset 'lfw_sift': data parsed from /c/lfw/... has shape (2, 3456), expected (13233, 3456) ...

(each example is one line, wrapped here).

Data faults are: a file missing from cache and mirror that cannot be downloaded (a missing mirror
folder, no network, a failed download), a file that cannot be read or written (permissions, a
folder in place of a file), a file whose sha256 or compressed stream is wrong (corrupt, truncated,
another version), and a file that does not parse or parses to the wrong shape / class count.
Callers (the runner) catch ``DataNotAvailable`` alone to skip a dataset with the reason and go on.
:class:`DataIntegrityError` (verification failures) is a subclass, so it is caught too, and
keeps its own name and messages for callers that distinguish it; so is :class:`DataParseError`
(a file its parser refuses), which is also a ``ValueError`` as the parser errors it replaces
(the parser's exception is kept as ``__cause__``).

Errors that are not data faults (programming errors: ``TypeError``, ``AttributeError``, an
unknown name, ...) are not converted and propagate as they are.

The one-line form is enforced here: a message given with line breaks is joined into one line.
"""

from __future__ import annotations

from ..errors import DMLBenchError


def one_line(message: str) -> str:
    """``message`` with its lines (and surrounding blanks) joined by single spaces."""
    return " ".join(part.strip() for part in str(message).splitlines() if part.strip())


class DataNotAvailable(DMLBenchError, RuntimeError):
    """A dataset cannot be provided: a file is missing everywhere and cannot be downloaded,
    cannot be read, or (subclass :class:`DataIntegrityError`) fails verification.

    The message is always one line (line breaks in the given message are joined).
    """

    def __init__(self, message: object = "", *args):
        super().__init__(one_line(message) if isinstance(message, str) else message, *args)


class DataIntegrityError(DataNotAvailable):
    """A dataset file (or the data parsed from it) differs from what the registry expects:
    wrong sha256, corrupt or truncated stream, unparseable content, wrong shape or class count.

    A :class:`DataNotAvailable` (the data cannot be used), with a one-line message.
    """


class DataParseError(DataIntegrityError, ValueError):
    """A dataset file does not parse (not in the format its parser reads, e.g. a damaged file
    first trusted by an unpinned checksum).

    A :class:`DataIntegrityError` (hence a :class:`DataNotAvailable`, one-line message), and a
    ``ValueError`` like the parser errors it replaces (the original is its ``__cause__``).
    """


class DataTooLarge(DataNotAvailable):
    """A dataset file declares an array larger than the memory available or the declared maximum
    (:mod:`dml_bench.common.resources`, ``DMLBENCH_MAX_ARRAY_BYTES``): refused from its header,
    before anything is allocated.

    A :class:`DataNotAvailable` (the dataset is skipped with this reason), with a one-line message
    naming the file, the array, its declared size and the budget it exceeds.
    """
