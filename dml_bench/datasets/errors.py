"""Errors raised when a dataset's files cannot be found or fail verification."""


class DataNotAvailable(RuntimeError):
    """A dataset file is neither in the cache nor in the mirror, and cannot be downloaded."""


class DataIntegrityError(RuntimeError):
    """A dataset file (or the data parsed from it) differs from what the registry expects."""
