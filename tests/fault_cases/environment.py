"""Environment faults: a full disk, a quota, an I/O error, a results folder that cannot be
written, data files that cannot be read.

A full disk is injected where the kernel reports it: ``os.write`` on ``runs.csv`` first writes
part of the data (as a write that meets a full disk does), then fails with ``ENOSPC``. The run
stops with one line that says how many rows it saved, exit 1; no partial line stays in the log,
and the rows written before are kept. Tests run as root, where file modes do not stop a read or
a write, so "permission denied" is injected too (``PermissionError`` from the calls that open
the file), as a mode would make the kernel answer.
"""

from __future__ import annotations

import builtins
import errno
import io
import os

import numpy as np

from . import NAME, Case, changed

#: GOOD with a second dataset: its 2 tasks are run, wine's 2 are done
TWO_NEW = changed(datasets=["wine", "iris"])


def _fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


def _failing_write(name: str, after: int, code: int = errno.ENOSPC, partial: bool = True):
    """``os.write`` on ``<experiment>/<name>``: the first ``after`` calls write, the next writes
    half of its data (when ``partial``), then every call fails with ``code``."""
    def setup(ctx):
        real, state = os.write, {"calls": 0}

        def write(fd, data):
            if not _fd_path(fd).endswith(f"/{NAME}/{name}"):
                return real(fd, data)
            state["calls"] += 1
            if state["calls"] <= after:
                return real(fd, data)
            if partial and state["calls"] == after + 1:
                return real(fd, bytes(data)[: len(data) // 2])
            raise OSError(code, os.strerror(code))

        ctx.monkeypatch.setattr(os, "write", write)
    return setup


def _failing_fsync(name: str, code: int = errno.EIO):
    def setup(ctx):
        real, state = os.fsync, {"failed": False}

        def fsync(fd):
            if _fd_path(fd).endswith(f"/{NAME}/{name}") and not state["failed"]:
                state["failed"] = True
                raise OSError(code, os.strerror(code))
            return real(fd)

        ctx.monkeypatch.setattr(os, "fsync", fsync)
    return setup


def _whole_lines(rows: int):
    """``runs.csv`` holds its header and ``rows`` whole rows, no partial line."""
    def check(ctx, output):
        data = (ctx.run_dir / "runs.csv").read_bytes()
        assert data.endswith(b"\n") and data.count(b"\n") == 1 + rows
        assert "tasks run" not in output  # the run reports no tasks it did not save
    return check


def _read_only(ctx):
    """The results folder answers every write with EACCES, as a folder of mode 0o555 owned by
    another user does."""
    folder = str(ctx.results)
    real_open, real_os_open = builtins.open, os.open
    writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

    def inside(path) -> bool:
        return isinstance(path, (str, os.PathLike)) and \
            os.path.abspath(os.fspath(path)).startswith(folder + os.sep)

    def os_open(path, flags, mode=0o777, *, dir_fd=None):
        if flags & writes and inside(path):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real_os_open(path, flags, mode, dir_fd=dir_fd)

    def open_(file, mode="r", *args, **kwargs):
        if set(mode) & set("wax+") and inside(file):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(file))
        return real_open(file, mode, *args, **kwargs)

    ctx.monkeypatch.setattr(os, "open", os_open)
    ctx.monkeypatch.setattr(builtins, "open", open_)
    ctx.monkeypatch.setattr(io, "open", open_)


def _user_file(name: str, damage):
    """``{work}/<name>``: a user's CSV data file (40 rows, 3 features, ``target``), damaged by
    ``damage(ctx, path)`` after the config names it."""
    def setup(ctx):
        path = (ctx.work / name).resolve()
        path.parent.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(0)
        rows = [",".join(f"{v:.6f}" for v in rng.normal(size=3)) + f",{i % 2}" for i in range(40)]
        path.write_text("a,b,c,target\n" + "\n".join(rows) + "\n")
        damage(ctx, path)
    return setup


def _unreadable(ctx, path):
    """No read permission: every open of the file is refused."""
    real_open = builtins.open

    def open_(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and \
                os.path.abspath(os.fspath(file)) == str(path):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(file))
        return real_open(file, mode, *args, **kwargs)

    ctx.monkeypatch.setattr(builtins, "open", open_)
    ctx.monkeypatch.setattr(io, "open", open_)


def _folder(ctx, path):
    path.unlink()
    path.mkdir()


#: a user's file beside the working folder, in the dataset cache (which the corpus does not
#: snapshot: a file that refuses to be read cannot be compared)
UNREADABLE = "../cache/user/secret.csv"


def _user_data(name: str) -> dict:
    return changed(datasets=[{"path": name, "label_column": "target"}, "wine"])


def _corrupt_line_and_full_disk(ctx):
    with open(ctx.run_dir / "runs.csv", "ab") as fh:
        fh.write(b"junk\n")
    _failing_write("runs.csv.corrupt", after=0, partial=False)(ctx)


def _kept_junk(ctx, output):
    assert b"\njunk\n" in (ctx.run_dir / "runs.csv").read_bytes()  # not lost: not set aside
    assert not (ctx.run_dir / "runs.csv.corrupt").exists()


def _skipped(name: str, reason: str) -> str:
    return f"skipped {name} × euclidean: data not available: dataset '{name}' {reason}"


SAVED = "rerun to finish"

CASES = [
    Case("disk-full-before-the-first-row", "environment", TWO_NEW,
         setup=_failing_write("runs.csv", after=0), code=1,
         line=f"{{results}}/{NAME}/runs.csv: No space left on device; 0 of 2 rows saved, {SAVED}",
         check=_whole_lines(2)),
    Case("disk-full-after-one-row", "environment", TWO_NEW,
         setup=_failing_write("runs.csv", after=1), code=1,
         line=f"{{results}}/{NAME}/runs.csv: No space left on device; 1 of 2 rows saved, {SAVED}",
         rows_after=3, check=_whole_lines(3)),
    Case("disk-quota-exceeded-after-one-row", "environment", TWO_NEW,
         setup=_failing_write("runs.csv", after=1, code=errno.EDQUOT, partial=False), code=1,
         line=f"{{results}}/{NAME}/runs.csv: Disk quota exceeded; 1 of 2 rows saved, {SAVED}",
         rows_after=3, check=_whole_lines(3)),
    Case("io-error-on-fsync-of-a-row", "environment", TWO_NEW,
         setup=_failing_fsync("runs.csv"), code=1,
         line=f"{{results}}/{NAME}/runs.csv: Input/output error; 0 of 2 rows saved, {SAVED}",
         check=_whole_lines(2)),
    Case("disk-full-setting-corrupt-lines-aside", "environment",
         setup=_corrupt_line_and_full_disk, code=0,
         line=f"warning: {{results}}/{NAME}/runs.csv: 1 corrupt line skipped (cannot set it "
              "aside into runs.csv.corrupt: No space left on device)",
         rows_after=3, check=_kept_junk),  # the junk line is still in runs.csv, read as a row
    Case("read-only-results-folder", "environment", setup=_read_only, code=1,
         line=f"{{results}}/{NAME}/config.yaml: Permission denied"),
    Case("unreadable-dataset-file", "environment", _user_data(UNREADABLE),
         setup=_user_file(UNREADABLE, _unreadable), code=0,
         line=_skipped("secret", f"({UNREADABLE}): cannot parse it as CSV: PermissionError: "
                       f"[Errno 13] Permission denied: '{UNREADABLE}'")),
    Case("dataset-file-is-a-folder", "environment", _user_data("data.csv"),
         setup=_user_file("data.csv", _folder), code=0,
         line=_skipped("data", "(data.csv): the file is a folder (relative paths are read from "
                       "the working directory {work})")),
]
