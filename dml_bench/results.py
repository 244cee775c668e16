"""``results/<name>/runs.csv``: one row per finished task, written so a killed run loses at most
the tasks in flight.

Rows are appended by the parent process only, each as one ``write`` on an ``O_APPEND`` file under
an exclusive ``flock`` (so two runs of the same experiment cannot interleave lines), followed by
``fsync``. Rewrites (``--force``, dropping a half-written last line) go to a temporary file that
is renamed over the original.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import io
import os
import tempfile
from pathlib import Path

import pandas as pd

RUN_COLUMNS = [
    "task_id", "experiment", "dataset", "split", "seed", "solver", "label", "solver_params",
    "preprocessing", "constraints", "n_train", "n_test", "n_features", "n_classes", "n_similar",
    "n_dissimilar", "n_triplets", "knn_k", "tie_break", "error", "fit_time", "fit_cpu_time",
    "constraint_time", "n_iter", "objective", "converged", "blas_threads", "n_jobs",
    "timing_mode", "dmlbench_version", "finished_at",
]
ERROR_COLUMNS = ["task_id", "experiment", "dataset", "split", "label", "error_type", "message",
                 "finished_at"]


class RunStore:
    """Append-only task log of one experiment (``runs.csv``, failures in ``errors.csv``)."""

    def __init__(self, directory: str | Path):
        self.dir = Path(directory)
        self.runs = self.dir / "runs.csv"
        self.errors = self.dir / "errors.csv"
        self.superseded = self.dir / "runs_superseded.csv"
        self._lock_path = self.dir / ".runs.lock"

    @contextlib.contextmanager
    def _locked(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self._lock_path, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def read(self) -> pd.DataFrame:
        """All complete rows (a half-written last line from a killed run is ignored)."""
        if not self.runs.exists() or self.runs.stat().st_size == 0:
            return pd.DataFrame(columns=RUN_COLUMNS)
        text = self.runs.read_text()
        if not text.endswith("\n"):
            text = text[: text.rfind("\n") + 1]
        if not text:  # only a half-written header line (killed during the first write)
            return pd.DataFrame(columns=RUN_COLUMNS)
        return pd.read_csv(io.StringIO(text), dtype={"task_id": str})

    def finished(self, require_timing: bool = False) -> set[str]:
        """Task ids already in ``runs.csv`` (with ``require_timing``: only sequential-timing rows)."""
        runs = self.read()
        if require_timing:
            runs = runs[runs["timing_mode"].astype(str) == "True"]
        return set(runs["task_id"])

    def drop(self, task_ids: set[str]) -> None:
        """Remove rows of ``task_ids`` and any half-written last line (atomic rewrite)."""
        with self._locked():
            runs = self.read()
            keep = runs[~runs["task_id"].isin(task_ids)]
            if len(keep) == len(runs) and (not self.runs.exists()
                                           or self.runs.read_bytes().endswith(b"\n")):
                return
            _atomic_write(self.runs, keep.reindex(columns=RUN_COLUMNS).to_csv(index=False,
                                                                               lineterminator="\n"))

    def archive(self, task_ids: set[str]) -> None:
        """Move rows of ``task_ids`` (tasks no longer in the config) to ``runs_superseded.csv``."""
        moved = self.read()
        moved = moved[moved["task_id"].isin(task_ids)]
        moved = moved.reindex(columns=RUN_COLUMNS).astype(object)
        for row in moved.where(moved.notna(), "").to_dict("records"):
            self._append(self.superseded, row, RUN_COLUMNS)
        self.drop(task_ids)

    def append(self, row: dict) -> None:
        """Append one finished task."""
        self._append(self.runs, row, RUN_COLUMNS)

    def append_error(self, row: dict) -> None:
        """Record a failed task (it stays unfinished and is retried by the next run)."""
        self._append(self.errors, row, ERROR_COLUMNS)

    def _append(self, path: Path, row: dict, columns: list[str]) -> None:
        with self._locked():
            header = not path.exists() or path.stat().st_size == 0
            data = _to_csv([row], columns, header).encode()
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)


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
