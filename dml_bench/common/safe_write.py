"""Writing output files safely: plain file names, create-temporary-then-rename, no symlinks
followed.

Every file the package writes into a results folder (the ``config.yaml`` copy, ``summary.csv``,
the LaTeX tables, the HTML pages, the figures, the leaderboard's and the experiments' outputs)
goes through this module:

- :func:`check_name` / :func:`output_path`: an output name is a plain file name (no ``/``,
  ``\\``, NUL, not ``.`` / ``..``, not empty), so a name that comes from a config (a figure's
  ``name:``, a dataset label) cannot point outside its folder;
- :func:`replacing` and the writers built on it (:func:`write_text`, :func:`write_bytes`,
  :func:`write_csv`, :func:`save_figure`): the content goes to a new temporary file in the
  destination folder, created with the mode a new file of that folder gets (``0o666`` less the
  umask, and the folder's default ACL), is flushed (and, where durable, synced), and is renamed
  over the destination. A destination that is a symlink is replaced by the new file, its target
  left as it was; a reader never sees a half-written file; a failed write leaves the old file
  and no temporary behind;
- :func:`output_dir`: a sub-folder of a results folder (``figures/``) is a real folder, never a
  symlink to elsewhere.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ..errors import DMLBenchError

#: flags of a new temporary file: created here, never an existing file or a symlink
_CREATE = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
           | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))


#: errors of a folder's fsync that mean the file system does not sync folders
_NO_FOLDER_SYNC = {errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EBADF}


class UnsafeOutputName(DMLBenchError, ValueError):
    """An output name that is not a plain file name (it would be written outside its folder)."""


def name_problem(name: Any) -> str | None:
    """Why ``name`` is not a plain file name, or None when it is one.

    A plain file name is a non-empty string without ``/``, ``\\`` or NUL, other than ``.`` and
    ``..``: joined to a folder, it names a file directly inside that folder.
    """
    if not isinstance(name, str) or not name:
        return "must be a non-empty file name"
    if {"/", "\\", "\0"} & set(name):
        return "must be a plain file name, without '/', '\\' or NUL"
    if name in (".", ".."):
        return "must be a plain file name, other than '.' and '..'"
    return None


def check_name(name: Any, what: str = "output name") -> str:
    """``name`` itself, when it is a plain file name (:func:`name_problem`).

    Raises
    ------
    UnsafeOutputName
        ``<what> <name!r>: <why>``, otherwise.
    """
    problem = name_problem(name)
    if problem is not None:
        raise UnsafeOutputName(f"{what} {name!r}: {problem}")
    return name


def output_path(folder: Path | str, name: str, what: str = "output name") -> Path:
    """``folder / name`` after :func:`check_name` (a file directly inside ``folder``)."""
    return Path(folder) / check_name(name, what)


def output_dir(folder: Path | str, name: str) -> Path:
    """The sub-folder ``folder / name``, created when missing; a symlink there is replaced by
    a real, empty folder (the link's target is left as it was).

    Raises
    ------
    UnsafeOutputName
        When ``name`` is not a plain file name.
    """
    path = output_path(folder, name, "output folder")
    if path.is_symlink():
        path.unlink()
    path.mkdir(exist_ok=True)
    return path


@contextlib.contextmanager
def replacing(path: Path | str, mode: str = "w", *, encoding: str | None = "utf-8",
              newline: str | None = None, durable: bool = True) -> Iterator[IO]:
    """Open a new temporary file beside ``path``; when the block ends without an exception, it
    replaces ``path``.

    Parameters
    ----------
    path : path-like
        The destination. Its folder must exist. If it is a symlink, the link itself is replaced
        (its target is never opened); if the block raises, ``path`` is left as it was and the
        temporary file is removed.
    mode : {"w", "wb"}
        Text or binary.
    encoding, newline : str, optional
        Of a text file (as for :func:`open`).
    durable : bool
        Sync the file's data before the rename and the folder after it, so that once the
        block has returned the new content survives a crash. Without it the rename is still
        atomic, but a crash soon after may lose the content.

    Yields
    ------
    file object
        The temporary file, open for writing.

    Raises
    ------
    OSError
        When the file cannot be created, written, synced or renamed (a full disk, no
        permission, a missing folder), with ``filename`` the destination ``path``.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    path = Path(path)
    folder = path.parent
    try:
        while True:  # like tempfile.mkstemp, but with the folder's usual mode for a new file
            tmp = folder / f".{path.name}.{secrets.token_hex(6)}.tmp"
            try:
                fd = os.open(tmp, _CREATE, 0o666)
                break
            except FileExistsError:
                continue
        try:
            with os.fdopen(fd, mode, **({} if mode == "wb" else
                                        {"encoding": encoding, "newline": newline})) as fh:
                yield fh
                fh.flush()
                if durable:
                    os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        if durable:
            _sync_folder(folder)
    except OSError as exc:  # name the file being written, not its temporary
        if exc.errno is not None and (exc.filename is None or exc.filename in (str(tmp), tmp)):
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise


def _sync_folder(folder: Path) -> None:
    """Sync a folder's entries (the rename) to disk. A folder that cannot be opened or synced
    at all (no permission to read it, a file system without folder sync) is left to the file
    system; a failed sync (EIO, ENOSPC) raises."""
    if os.name != "posix":
        return
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except PermissionError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _NO_FOLDER_SYNC:
            raise
    finally:
        os.close(fd)


def write_text(path: Path | str, text: str, *, encoding: str = "utf-8",
               durable: bool = True) -> Path:
    """Write ``text`` to ``path`` by :func:`replacing` (newlines written as they are); returns
    ``path``."""
    with replacing(path, "w", encoding=encoding, newline="", durable=durable) as fh:
        fh.write(text)
    return Path(path)


def write_bytes(path: Path | str, data: bytes, *, durable: bool = True) -> Path:
    """Write ``data`` to ``path`` by :func:`replacing`; returns ``path``."""
    with replacing(path, "wb", durable=durable) as fh:
        fh.write(data)
    return Path(path)


def write_csv(path: Path | str, frame, *, durable: bool = True, **to_csv) -> Path:
    """Write a DataFrame as CSV to ``path`` by :func:`replacing`; ``to_csv`` are the keywords of
    :meth:`pandas.DataFrame.to_csv` (``index=False`` unless given); returns ``path``."""
    to_csv.setdefault("index", False)
    with replacing(path, "w", encoding="utf-8", newline="", durable=durable) as fh:
        frame.to_csv(fh, **to_csv)
    return Path(path)


def save_figure(fig, path: Path | str, *, durable: bool = False, **savefig) -> Path:
    """Save a matplotlib figure to ``path`` by :func:`replacing`, in the format of its suffix
    (``.png``, ``.pdf``, ...); ``savefig`` are the keywords of
    :meth:`matplotlib.figure.Figure.savefig`; returns ``path``."""
    path = Path(path)
    savefig.setdefault("format", path.suffix.lstrip(".").lower() or None)
    with replacing(path, "wb", durable=durable) as fh:
        fig.savefig(fh, **savefig)
    return path
