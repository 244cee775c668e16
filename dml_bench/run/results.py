"""``results/<name>/runs.csv``: one row per finished task, written so a killed run loses at most
the tasks in flight, and read so that no damaged line stops a run.

Rows are appended by the parent process only, each batch written in full (``os.write`` again
after a short write) on an ``O_APPEND | O_NOFOLLOW`` file under an exclusive file lock (so two
runs of the same experiment cannot interleave lines), then ``fsync``: a row is on disk when
:meth:`RunStore.append` returns. A write that fails part-way (a full disk) is cut back to the
size the file had, and raises :class:`LogWriteFailed`. A half-written last line left by a killed
run is cut before the next append. Rewrites (``--force``, superseded rows, set-aside lines) go to
a temporary file that is renamed over the original (:mod:`dml_bench.common.safe_write`). A log
is never written through a symbolic link (:class:`UnsafeLog`).

A log is committed with the results, so it is kept in files of at most about
:data:`SEGMENT_BYTES`: once ``runs.csv`` has reached that size, rows go on in ``runs.2.csv``, then
``runs.3.csv``, … (each with its header), and every reader reads them in that order as one log.

A line that is not a row of the log (binary junk, text that is not UTF-8, the wrong number of
fields, a second header, a ``task_id`` that is not 16 hexadecimal digits) is set aside: appended,
with its file name and line number, to ``<log>.corrupt`` beside the log (``runs.csv.corrupt`` for
every file of ``runs.csv``), and removed from the log, under the store's lock, with a one-line
warning. Readers skip such lines; the first reader or writer that meets them sets them aside.

Runs on one folder share its task list through :class:`TaskClaims`: a task is run by the run
that holds its claim, and the operating system releases the claims of a run that dies.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import os
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from filelock import FileLock, Timeout

from ..common.safe_write import write_bytes, write_text
from ..errors import DMLBenchError, warn

RUN_COLUMNS = [
    "task_id", "experiment", "dataset", "split", "seed", "solver", "label", "solver_params",
    "preprocessing", "constraints", "n_train", "n_test", "n_features", "n_classes", "n_similar",
    "n_dissimilar", "n_triplets", "knn_k", "tie_break", "error", "fit_time", "fit_cpu_time",
    "constraint_time", "n_iter", "objective", "converged", "optimality", "optimality_measure",
    "n_nonzero_eigenvalues", "n_features_90_energy", "tuned_params", "tuning_error",
    "tuning_time", "blas_threads", "n_jobs", "timing_mode", "dmlbench_version", "cpu_model",
    "finished_at",
]
#: ``tuning.csv``: one row per (task, grid point, fold) fit of a ``tune:`` block
TUNE_COLUMNS = ["task_id", "outer_task_id", "experiment", "dataset", "split", "label", "fold",
                "params", "error", "fit_time", "n_fit", "n_eval", "cpu_model", "finished_at"]
#: ``errors.csv``: one row per failed attempt; ``message`` is the exception's one line, ``where``
#: the last frames of its traceback
ERROR_COLUMNS = ["task_id", "experiment", "dataset", "split", "label", "error_type", "message",
                 "where", "finished_at"]


#: the size after which a log goes on in its next file (``runs.csv`` → ``runs.2.csv``): the
#: logs are committed, and the project commits no file above 2 MB (the full leaderboard's
#: ``runs.csv`` holds about 4,000 rows of 600 bytes)
SEGMENT_BYTES = 1_000_000

#: a row's ``task_id``: 16 hexadecimal digits (the start of a SHA-1, see ``Task.task_id``)
TASK_ID = re.compile(r"[0-9a-f]{16}")

#: flags of a log opened for appending: never through a symbolic link
_APPEND = (os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
           | getattr(os, "O_CLOEXEC", 0))


class UnsafeLog(DMLBenchError):
    """A log of a results folder (or its ``traces/`` folder) is a symbolic link: rows are never
    written through one, since its target may lie outside the results folder."""


class LogWriteFailed(OSError):
    """Rows could not be written to a log (a full disk, a quota, an I/O error, no permission).

    ``errno``, ``strerror`` and ``filename`` (the log's file) are those of the failed call; the
    file is left as it was before the write.
    """


def log_segments(path: Path) -> list[Path]:
    """The files of the log ``path`` in order: ``path`` itself, then the existing
    ``<stem>.2<suffix>``, ``<stem>.3<suffix>``, … by number."""
    path = Path(path)
    pattern = re.compile(rf"{re.escape(path.stem)}\.([2-9]|[1-9]\d+){re.escape(path.suffix)}")
    numbered = [(int(m.group(1)), p) for p in path.parent.glob(f"{path.stem}.*{path.suffix}")
                if (m := pattern.fullmatch(p.name))]
    return [path] + [p for _, p in sorted(numbered)]


def log_stamp(path: Path) -> tuple:
    """``(name, mtime, size)`` of each file of the log ``path``: changes whenever it does."""
    stamps = []
    for seg in log_segments(path):
        with contextlib.suppress(FileNotFoundError):
            stat = seg.stat()
            stamps.append((seg.name, stat.st_mtime_ns, stat.st_size))
    return tuple(stamps)


def corrupt_path(path: Path) -> Path:
    """Where the corrupt lines of the log ``path`` (any of its files) are set aside:
    ``<log>.corrupt`` beside it."""
    path = Path(path)
    return path.with_name(f"{path.name}.corrupt")


class RunStore:
    """Append-only task log of one experiment (``runs.csv``, failures in ``errors.csv``).

    ``name``/``columns`` select another log of the same folder (``tuning.csv`` with
    :data:`TUNE_COLUMNS`). A log written by an older version with other columns is rewritten
    with the current columns (missing ones empty) before the next row is appended. Each log
    may span several files (:func:`log_segments`); ``runs`` is its first. Corrupt lines are set
    aside as the module's docstring says.
    """

    def __init__(self, directory: str | Path, name: str = "runs", columns: list[str] = RUN_COLUMNS):
        self.dir = Path(directory)
        self.columns = list(columns)
        self.runs = self.dir / f"{name}.csv"
        self.errors = self.dir / "errors.csv"
        self.superseded = self.dir / f"{name}_superseded.csv"
        self._lock_path = self.dir / ".runs.lock"
        # one lock object per store, so that a method holding it may call another that takes it
        # (filelock counts the nested acquisitions of one object)
        self._lock = FileLock(self._lock_path, thread_local=False)
        # (size, mtime) of each file as this store last wrote or checked it: a file unchanged
        # since is not scanned again before the next append
        self._clean: dict[Path, tuple[int, int]] = {}
        # (length, crc32) of the start of each file found to hold only rows: a file that still
        # starts with it (a log grows at its end) has only its new lines checked again
        self._scanned: dict[Path, tuple[int, int]] = {}

    @contextlib.contextmanager
    def _locked(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        with self._lock:
            yield

    def read(self) -> pd.DataFrame:
        """All complete rows, over the log's files in order (a half-written last line from a
        killed run is ignored, corrupt lines are set aside)."""
        return self._read_log(self.runs)

    def _read_log(self, log: Path) -> pd.DataFrame:
        frames = [frame for frame in (_frame(self._scan_file(seg, log, self.columns))
                                      for seg in log_segments(log)) if len(frame)]
        if not frames:
            return pd.DataFrame(columns=self.columns)
        return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)

    def check(self) -> None:
        """Check the logs before a run writes to them: every file of ``runs``, of its
        superseded log and of ``errors.csv``.

        Raises :class:`UnsafeLog` when one of them (or ``<log>.corrupt``) is a symbolic link,
        and sets aside their corrupt lines (a log that a run only appends to, such as
        ``errors.csv``, is otherwise never read whole).
        """
        for log, columns in ((self.runs, self.columns), (self.superseded, self.columns),
                             (self.errors, ERROR_COLUMNS)):
            segments = log_segments(log)
            for path in [*segments, corrupt_path(log)]:
                _refuse_link(path)
            for seg in segments:
                self._scan_file(seg, log, columns)

    def stamp(self) -> tuple:
        """Changes whenever the log does (:func:`log_stamp`)."""
        return log_stamp(self.runs)

    def finished(self, require_timing: bool = False) -> set[str]:
        """Task ids already in ``runs.csv`` (with ``require_timing``: only sequential-timing rows)."""
        runs = self.read()
        if require_timing:
            runs = runs[runs["timing_mode"].astype(str) == "True"]
        return set(runs["task_id"])

    def drop(self, task_ids: set[str]) -> None:
        """Remove rows of ``task_ids`` and any half-written last line (an atomic rewrite of each
        file of the log that changes)."""
        with self._locked():
            for seg in log_segments(self.runs):
                _refuse_link(seg)
                scan = self._scan_file(seg, self.runs, self.columns)
                runs = _frame(scan)
                keep = runs[~runs["task_id"].isin(task_ids)] if len(runs) else runs
                if len(keep) == len(runs) and not scan.torn:
                    continue
                write_bytes(seg, keep.reindex(columns=self.columns).to_csv(
                    index=False, lineterminator="\n").encode())

    def archive(self, task_ids: set[str], into: Path | None = None) -> None:
        """Move rows of ``task_ids`` to ``into``: by default ``<name>_superseded.csv`` (tasks no
        longer in the config). They are appended there in one write, then dropped here, all
        under the store's lock: two runs that archive the same rows move them once.

        A row already in ``into`` (same ``task_id`` and ``finished_at``: an archive killed
        between its two steps) is not appended again, so a rerun completes the move without
        duplicating or losing a row.
        """
        into = Path(into) if into is not None else self.superseded
        with self._locked():
            moved = self.read()
            moved = moved[moved["task_id"].isin(task_ids)]
            moved = moved.reindex(columns=self.columns).astype(object)
            if len(moved):
                key = [c for c in ("task_id", "finished_at") if c in self.columns]
                there = self._read_log(into)
                if len(there):
                    have = set(map(tuple, there.reindex(columns=key).astype(str).to_numpy()))
                    keys = map(tuple, moved[key].astype(str).to_numpy())
                    moved = moved[[k not in have for k in keys]]
            if len(moved):
                self._append(into, moved.where(moved.notna(), "").to_dict("records"),
                             self.columns)
            self.drop(task_ids)

    def append(self, row: dict) -> None:
        """Append one finished task; once this returns, the row is on disk (``fsync``).

        Raises
        ------
        LogWriteFailed
            When the row cannot be written whole (the log is left as it was).
        UnsafeLog
            When the log is a symbolic link.
        """
        self._append(self.runs, [row], self.columns)

    def write_trace(self, task_id: str, trace: dict) -> Path:
        """``traces/<task_id>.csv``: a solver's per-iteration ``trace_`` (one column per key,
        plus ``iteration`` from 1 unless the trace has its own), written atomically."""
        frame = pd.DataFrame({k: pd.Series(np.asarray(v).ravel()) for k, v in trace.items()})
        if "iteration" not in frame:  # solvers that log every few iterations say which
            frame.insert(0, "iteration", np.arange(1, len(frame) + 1))
        path = self.dir / "traces" / f"{task_id}.csv"
        _refuse_link(path.parent)
        path.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(path, frame.to_csv(index=False, lineterminator="\n"))
        return path

    def read_trace(self, task_id: str) -> pd.DataFrame:
        """The trace written by :meth:`write_trace`."""
        return pd.read_csv(self.dir / "traces" / f"{task_id}.csv")

    def append_error(self, row: dict) -> None:
        """Record a failed task (it stays unfinished and is retried by the next run)."""
        self._append(self.errors, [row], ERROR_COLUMNS)

    def _scan_file(self, seg: Path, log: Path, columns: list[str]) -> _Scan:
        """The rows of one file of ``log``, its corrupt lines set aside first (if any)."""
        scan = _scan(seg, columns, self._scanned.get(seg))
        if scan.corrupt:
            scan = self._set_aside(seg, log, columns, scan)
        if not scan.corrupt and scan.headed:
            self._scanned[seg] = (len(scan.body), zlib.crc32(scan.body))
        return scan

    def _set_aside(self, seg: Path, log: Path, columns: list[str], scan: _Scan) -> _Scan:
        """Move the corrupt lines of ``seg`` to ``<log>.corrupt`` (each as ``<file>:<line>:
        <line as it was>``) and rewrite ``seg`` without them, under the lock, with a warning.

        A folder that cannot be written (read-only) keeps its lines; they are skipped, with one
        warning per state of the file.
        """
        target = corrupt_path(log)
        try:
            with self._locked():
                scan = _scan(seg, columns)  # again: another run may have set them aside already
                if not scan.corrupt:
                    return scan
                _refuse_link(target)
                _refuse_link(seg)
                append_bytes(target, b"".join(b"%s:%d: %s\n" % (seg.name.encode(), number, line)
                                               for number, line in scan.corrupt))
                write_bytes(seg, scan.body)
        except UnsafeLog:
            raise
        except OSError as exc:
            with contextlib.suppress(OSError):
                stat = seg.stat()
                state = (str(seg), stat.st_size, stat.st_mtime_ns)
                if state not in _SKIPPED:
                    _SKIPPED.add(state)
                    them = "it" if len(scan.corrupt) == 1 else "them"
                    warn(f"{seg}: {_lines(len(scan.corrupt))} skipped (cannot set {them} aside "
                         f"into {target.name}: {exc.strerror or exc})")
            return scan
        warn(f"{seg}: {_lines(len(scan.corrupt))} set aside into {target.name}")
        return _Scan(scan.body, [], b"", True)

    def _repair(self, last: Path, log: Path, columns: list[str]) -> None:
        """Before appending to ``last`` (under the lock): set its corrupt lines aside, cut a
        half-written last line, bring its header to ``columns``; skipped for a file unchanged
        since this store last wrote it."""
        stat = _stat(last)
        if stat is None or self._clean.get(last) == stat:
            return
        scan = self._scan_file(last, log, columns)
        if scan.torn:
            _cut_torn_line(last)
        _upgrade_columns(last, columns)

    def _append(self, path: Path, rows: list[dict], columns: list[str]) -> None:
        """Append ``rows`` to the log ``path``, in its last file until that holds
        :data:`SEGMENT_BYTES`, then in a new one (a row is never split): one write per file."""
        with self._locked():
            segments = log_segments(path)
            for seg in segments:
                _refuse_link(seg)
            last = segments[-1]
            self._repair(last, path, columns)
            size = last.stat().st_size if last.exists() else 0
            pending = []
            for row in rows:
                line = _to_csv([row], columns, header=False).encode()
                if size and size + len(line) > SEGMENT_BYTES and (pending or _has_rows(last)):
                    self._write_rows(last, pending, columns)
                    segments.append(_next_segment(path, len(segments)))
                    last, size, pending = segments[-1], 0, []
                    _refuse_link(last)
                if size == 0:
                    size = len(_to_csv([], columns, header=True).encode())
                pending.append(line)
                size += len(line)
            self._write_rows(last, pending, columns)

    def _write_rows(self, path: Path, lines: list[bytes], columns: list[str]) -> None:
        """Append the encoded rows ``lines`` to ``path`` (with the header if it is new or
        empty), durably (:func:`append_bytes`)."""
        if not lines:
            return
        header = not path.exists() or path.stat().st_size == 0
        data = (_to_csv([], columns, header=True).encode() if header else b"") + b"".join(lines)
        append_bytes(path, data)
        self._clean[path] = _stat(path)


class TaskClaims:
    """Which run of a results folder runs which task: one lock file per task id.

    ``claim(task_id)`` returns the held lock (release it once the task's row is written), or
    ``None`` when another process holds it; ``blocking=True`` waits for that process instead. A
    claim is an OS file lock (filelock), so a run killed with ``kill -9`` loses its claims with
    its life and another run can take its tasks over.
    """

    def __init__(self, directory: str | Path):
        self.dir = Path(directory) / ".claims"

    def claim(self, task_id: str, blocking: bool = False) -> FileLock | None:
        self.dir.mkdir(parents=True, exist_ok=True)
        lock = FileLock(self.dir / f"{task_id}.lock", thread_local=False)
        try:
            lock.acquire(blocking=blocking)
        except Timeout:
            return None
        return lock


#: (file, size, mtime) of log files whose corrupt lines could not be set aside and were reported
_SKIPPED: set[tuple] = set()


@dataclass
class _Scan:
    """One file of a log, read: ``body`` its header and good rows (each line with its newline),
    ``corrupt`` the (line number, line) of the lines that are not rows of the log, ``torn`` a
    last line without its newline; ``headed`` when ``body`` is the file's own start (its header
    line is its first)."""

    body: bytes
    corrupt: list[tuple[int, bytes]] = field(default_factory=list)
    torn: bytes = b""
    headed: bool = False


def _scan(path: Path, columns: list[str], known: tuple[int, int] | None = None) -> _Scan:
    """Split one file of a log into its header and rows, corrupt lines and a torn last line.

    The first line is the header when its first field is ``task_id`` (an older version's
    columns are kept); otherwise the file has none and ``columns`` stands for it. A row is a
    UTF-8 line without NUL that parses as one CSV record of as many fields as the header, whose
    first is a task id (:data:`TASK_ID`): anything else is corrupt. ``known``, the (length,
    crc32) of a start of the file found to hold only rows before, spares checking its lines
    again while the file starts with it.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return _Scan(b"")
    end = data.rfind(b"\n") + 1
    whole, torn = data[:end], data[end:]
    if not whole:
        return _Scan(b"", [], torn)
    lines = whole.split(b"\n")[:-1]
    first = _record(lines[0])
    if first and first[0] == "task_id":
        header, fields, rows, offset = lines[0] + b"\n", len(first), lines[1:], 2
    else:
        header, fields, rows, offset = (_to_csv([], columns, header=True).encode(), len(columns),
                                        lines, 1)
    skip = 0
    if offset == 2 and known and known[0] <= len(whole) \
            and zlib.crc32(whole[:known[0]]) == known[1]:
        skip = max(whole.count(b"\n", 0, known[0]) - 1, 0)  # its rows, header excluded
    bad = {i + skip for i in _bad_rows(rows[skip:], fields)}
    if not bad and offset == 2:
        return _Scan(whole, [], torn, True)
    body = header + b"".join(line + b"\n" for i, line in enumerate(rows) if i not in bad)
    return _Scan(body, [(i + offset, rows[i]) for i in sorted(bad)], torn, offset == 2)


def _bad_rows(rows: list[bytes], fields: int) -> set[int]:
    """Indices of the lines of ``rows`` that are not rows of ``fields`` fields (:func:`_scan`).

    All lines are parsed at once by the csv module when the text is clean UTF-8 and each line
    is one record; otherwise line by line.
    """
    if not rows:
        return set()
    try:
        text = b"\n".join(rows).decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and "\x00" not in text and "\r" not in text:
        lines = text.split("\n")
        try:
            records = list(csv.reader(lines, strict=True))
        except csv.Error:
            records = None
        if records is not None and len(records) == len(lines):
            return {i for i, r in enumerate(records)
                    if len(r) != fields or not TASK_ID.fullmatch(r[0])}
    bad = set()
    for i, line in enumerate(rows):
        record = _record(line)
        if record is None or len(record) != fields or not TASK_ID.fullmatch(record[0]):
            bad.add(i)
    return bad


def _record(line: bytes) -> list[str] | None:
    """The fields of one line of a log, or None when it is not one UTF-8 CSV record without
    NUL."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\x00" in text:
        return None
    try:
        records = list(csv.reader([text], strict=True))
    except csv.Error:
        return None
    return records[0] if len(records) == 1 else None


def _frame(scan: _Scan) -> pd.DataFrame:
    """The rows of a scanned file (empty when it has none)."""
    if not scan.body:  # no file, or only a half-written header line (killed in its first write)
        return pd.DataFrame()
    return pd.read_csv(io.BytesIO(scan.body), dtype={"task_id": str})


def _lines(n: int) -> str:
    return f"{n} corrupt line{'' if n == 1 else 's'}"


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_size, stat.st_mtime_ns


def _refuse_link(path: Path) -> None:
    """Raise :class:`UnsafeLog` when ``path`` is a symbolic link."""
    if path.is_symlink():
        raise UnsafeLog(f"{path} is a symbolic link: a results folder's logs are written only as "
                        "regular files (replace the link by a copy of its target)")


def _has_rows(path: Path) -> bool:
    """Whether the file holds a row after its header."""
    with open(path, "rb") as fh:
        fh.readline()
        return bool(fh.read(1))


def _next_segment(path: Path, number: int) -> Path:
    """The file of the log ``path`` after its ``number`` existing ones: ``<stem>.<number + 1>``."""
    return path.with_name(f"{path.stem}.{number + 1}{path.suffix}")


def append_bytes(path: Path, data: bytes) -> None:
    """Append ``data`` to ``path`` whole, then ``fsync``: ``os.write`` again after a short
    write; a failed write is cut back to the size the file had (a file it created is removed).

    Raises
    ------
    UnsafeLog
        When ``path`` is a symbolic link (it is opened with ``O_NOFOLLOW``).
    LogWriteFailed
        When the file cannot be opened or ``data`` cannot be written whole and synced.
    """
    new = not os.path.lexists(path)
    try:
        fd = os.open(path, _APPEND, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            _refuse_link(path)
        raise LogWriteFailed(exc.errno, exc.strerror, str(path)) from exc
    try:
        before = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                if written <= 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                view = view[written:]
            os.fsync(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):  # no partial line is left behind
                os.ftruncate(fd, before)
                os.fsync(fd)
                if new:  # nor a file this write created
                    os.unlink(path)
            raise LogWriteFailed(exc.errno, exc.strerror, str(path)) from exc
    finally:
        os.close(fd)


def _cut_torn_line(path: Path) -> None:
    """Cut a last line without its newline (a write interrupted by a kill) before appending."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with open(path, "rb+") as fh:
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) == b"\n":
            return
        fh.seek(0)
        fh.truncate(fh.read().rfind(b"\n") + 1)
        fh.flush()
        os.fsync(fh.fileno())


def _upgrade_columns(path: Path, columns: list[str]) -> None:
    """Rewrite a log whose header is not ``columns`` (older version) with ``columns``."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with open(path, "rb") as fh:
        header = fh.readline().rstrip(b"\n")
    if header == ",".join(columns).encode():
        return
    old = _frame(_scan(path, columns)).reindex(columns=columns)
    write_bytes(path, old.to_csv(index=False, lineterminator="\n").encode())


def _to_csv(rows: list[dict], columns: list[str], header: bool) -> str:
    """Rows as CSV lines; a line break inside a value is written as a space, so that a row is
    one line."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="raise", lineterminator="\n")
    if header:
        writer.writeheader()
    writer.writerows({k: _one_line(v) for k, v in row.items()} for row in rows)
    return buf.getvalue()


def _one_line(value):
    if isinstance(value, str) and ("\n" in value or "\r" in value):
        return value.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    return value


def _atomic_write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` by create-temporary-then-rename
    (:func:`dml_bench.common.safe_write.write_text`)."""
    write_text(path, text)
