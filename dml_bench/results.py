"""``results/<name>/runs.csv``: one row per finished task, written so a killed run loses at most
the tasks in flight.

Rows are appended by the parent process only, each as one ``write`` on an ``O_APPEND`` file under
an exclusive file lock (so two runs of the same experiment cannot interleave lines), followed by
``fsync``. A half-written last line left by a killed run is cut before the next append. Rewrites
(``--force``, superseded rows) go to a temporary file that is renamed over the original.

A log is committed with the results, so it is kept in files of at most about
:data:`SEGMENT_BYTES`: once ``runs.csv`` has reached that size, rows go on in ``runs.2.csv``, then
``runs.3.csv``, … (each with its header), and every reader reads them in that order as one log.

Runs on one folder share its task list through :class:`TaskClaims`: a task is run by the run
that holds its claim, and the operating system releases the claims of a run that dies.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import re
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from filelock import FileLock, Timeout

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


class RunStore:
    """Append-only task log of one experiment (``runs.csv``, failures in ``errors.csv``).

    ``name``/``columns`` select another log of the same folder (``tuning.csv`` with
    :data:`TUNE_COLUMNS`). A log written by an older version with other columns is rewritten
    with the current columns (missing ones empty) before the next row is appended. Each log
    may span several files (:func:`log_segments`); ``runs`` is its first.
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

    @contextlib.contextmanager
    def _locked(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        with self._lock:
            yield

    def read(self) -> pd.DataFrame:
        """All complete rows, over the log's files in order (a half-written last line from a
        killed run is ignored)."""
        frames = [frame for frame in map(_read_log, log_segments(self.runs)) if len(frame)]
        if not frames:
            return pd.DataFrame(columns=self.columns)
        return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)

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
                runs = _read_log(seg)
                keep = runs[~runs["task_id"].isin(task_ids)] if len(runs) else runs
                if len(keep) == len(runs) and (not seg.exists()
                                               or seg.read_bytes().endswith(b"\n")):
                    continue
                _atomic_write(seg, keep.reindex(columns=self.columns).to_csv(
                    index=False, lineterminator="\n"))

    def archive(self, task_ids: set[str], into: Path | None = None) -> None:
        """Move rows of ``task_ids`` to ``into``: by default ``<name>_superseded.csv`` (tasks no
        longer in the config). They are appended there in one write, then dropped here, all
        under the store's lock: two runs that archive the same rows move them once."""
        with self._locked():
            moved = self.read()
            moved = moved[moved["task_id"].isin(task_ids)]
            moved = moved.reindex(columns=self.columns).astype(object)
            if len(moved):
                self._append(into or self.superseded,
                             moved.where(moved.notna(), "").to_dict("records"), self.columns)
            self.drop(task_ids)

    def append(self, row: dict) -> None:
        """Append one finished task."""
        self._append(self.runs, [row], self.columns)

    def write_trace(self, task_id: str, trace: dict) -> Path:
        """``traces/<task_id>.csv``: a solver's per-iteration ``trace_`` (one column per key,
        plus ``iteration`` from 1 unless the trace has its own), written atomically."""
        frame = pd.DataFrame({k: pd.Series(np.asarray(v).ravel()) for k, v in trace.items()})
        if "iteration" not in frame:  # solvers that log every few iterations say which
            frame.insert(0, "iteration", np.arange(1, len(frame) + 1))
        path = self.dir / "traces" / f"{task_id}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(path, frame.to_csv(index=False, lineterminator="\n"))
        return path

    def read_trace(self, task_id: str) -> pd.DataFrame:
        """The trace written by :meth:`write_trace`."""
        return pd.read_csv(self.dir / "traces" / f"{task_id}.csv")

    def append_error(self, row: dict) -> None:
        """Record a failed task (it stays unfinished and is retried by the next run)."""
        self._append(self.errors, [row], ERROR_COLUMNS)

    def _append(self, path: Path, rows: list[dict], columns: list[str]) -> None:
        """Append ``rows`` to the log ``path``, in its last file until that holds
        :data:`SEGMENT_BYTES`, then in a new one (a row is never split): one write per file."""
        with self._locked():
            segments = log_segments(path)
            last = segments[-1]
            _cut_torn_line(last)
            _upgrade_columns(last, columns)
            size = last.stat().st_size if last.exists() else 0
            pending = []
            for row in rows:
                line = _to_csv([row], columns, header=False).encode()
                if size and size + len(line) > SEGMENT_BYTES and (pending or _has_rows(last)):
                    _write_rows(last, pending, columns)
                    segments.append(_next_segment(path, len(segments)))
                    last, size, pending = segments[-1], 0, []
                if size == 0:
                    size = len(_to_csv([], columns, header=True).encode())
                pending.append(line)
                size += len(line)
            _write_rows(last, pending, columns)


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


def _read_log(path: Path) -> pd.DataFrame:
    """The complete rows of one file of a log (empty when it has none)."""
    if not path.exists() or path.stat().st_size == 0:
        return pd.DataFrame()
    text = path.read_text()
    if not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    if not text:  # only a half-written header line (killed during the first write)
        return pd.DataFrame()
    return pd.read_csv(io.StringIO(text), dtype={"task_id": str})


def _has_rows(path: Path) -> bool:
    """Whether the file holds a row after its header."""
    with open(path, "rb") as fh:
        fh.readline()
        return bool(fh.read(1))


def _next_segment(path: Path, number: int) -> Path:
    """The file of the log ``path`` after its ``number`` existing ones: ``<stem>.<number + 1>``."""
    return path.with_name(f"{path.stem}.{number + 1}{path.suffix}")


def _write_rows(path: Path, lines: list[bytes], columns: list[str]) -> None:
    """Append the encoded rows ``lines`` to ``path`` (with the header if it is new or empty) in
    one ``write``, then ``fsync``."""
    if not lines:
        return
    header = not path.exists() or path.stat().st_size == 0
    data = (_to_csv([], columns, header=True).encode() if header else b"") + b"".join(lines)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
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
    with open(path) as fh:
        header = fh.readline().rstrip("\n")
    if header.split(",") == columns:
        return
    old = pd.read_csv(path, dtype={"task_id": str}).reindex(columns=columns)
    _atomic_write(path, old.to_csv(index=False, lineterminator="\n"))


def _to_csv(rows: list[dict], columns: list[str], header: bool) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="raise", lineterminator="\n")
    if header:
        writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
