"""Result-log faults: a damaged ``runs.csv`` or results folder ends in one line, and every
finished row is kept.

A line that is not a row of its log (junk, binary, not UTF-8, a second header, the wrong number
of fields, a foreign ``task_id``), in any file of any log, is set aside into ``<log>.corrupt``
with one warning and the run goes on; a log that is a symbolic link is refused before any work;
a ``--supersede`` killed between its two steps is completed by the rerun, each row once.
"""

from __future__ import annotations

import shutil

import pandas as pd

from dml_bench.run.results import ERROR_COLUMNS, RUN_COLUMNS, TUNE_COLUMNS

from . import NAME, Case, changed

ALREADY_DONE = f"{NAME}: 0 tasks run, 2 already done, 0 failed, 0 dataset×solver skipped"
LINK = ("is a symbolic link: a results folder's logs are written only as regular files (replace "
        "the link by a copy of its target)")


def _torn_line(ctx):
    """A run killed in the middle of writing its last row."""
    with open(ctx.run_dir / "runs.csv", "a") as fh:
        fh.write("deadbeefdeadbeef,corpus,wine,0,12")


def _results_is_file(ctx):
    shutil.rmtree(ctx.results)
    ctx.results.write_text("not a folder\n")


def _lines(path) -> list[bytes]:
    return path.read_bytes().split(b"\n")[:-1]


def _insert(name: str, junk: bytes, at: int = 2, header: list[str] | None = None):
    """Put ``junk`` (one line) at line ``at`` of the log file ``name`` (made with ``header`` and
    no rows when missing); the file's own lines are kept around it."""
    def setup(ctx):
        path = ctx.run_dir / name
        if not path.exists():
            path.write_text(",".join(header) + "\n")
        lines = _lines(path)
        ctx.extra["junk"], ctx.extra["before"] = junk, list(lines)
        lines.insert(at - 1, junk)
        path.write_bytes(b"".join(line + b"\n" for line in lines))
    return setup


def _set_aside(name: str, log: str, at: int = 2):
    """The junk line is in ``<log>.corrupt`` with its file and line number, and ``name`` holds
    its own lines again, unchanged."""
    def check(ctx, output):
        corrupt = (ctx.run_dir / f"{log}.corrupt").read_bytes()
        assert corrupt == f"{name}:{at}: ".encode() + ctx.extra["junk"] + b"\n"
        assert _lines(ctx.run_dir / name) == ctx.extra["before"]
    return check


def _real_row(change) -> bytes:
    """A finished row of the results folder changed by ``change(fields) -> bytes``."""
    def make(ctx):
        row = _lines(ctx.run_dir / "runs.csv")[1].decode().split(",")
        return change(row)
    return make


def _insert_made(name: str, make, at: int = 2):
    def setup(ctx):
        _insert(name, make(ctx), at)(ctx)
    return setup


def _with_latin1_label(row: list[str]) -> bytes:
    row[6] = "caf\xe9"  # the label, in Latin-1: a line that is not UTF-8
    return ",".join(row).encode("latin-1")


def _with_foreign_id(row: list[str]) -> bytes:
    row[0] = "wine-euclidean-0"
    return ",".join(row).encode()


def _segment(junk: bytes):
    """``runs.2.csv``: the log's second file, with its header and ``junk`` after it."""
    def setup(ctx):
        path = ctx.run_dir / "runs.2.csv"
        path.write_bytes(",".join(RUN_COLUMNS).encode() + b"\n" + junk + b"\n")
        ctx.extra["junk"], ctx.extra["before"] = junk, [",".join(RUN_COLUMNS).encode()]
    return setup


def _linked(name: str, text: str = ""):
    """``name`` in the results folder is a symlink to a file in ``{outside}``."""
    def setup(ctx):
        target = ctx.outside / f"stolen-{name}"
        target.write_text(text)
        (ctx.run_dir / name).symlink_to(target)
    return setup


def _archive_killed_between_its_steps(ctx):
    """What ``RunStore.archive`` leaves when killed after appending the rows to
    ``runs_superseded.csv`` and before dropping them from ``runs.csv``: both hold them."""
    shutil.copy(ctx.run_dir / "runs.csv", ctx.run_dir / "runs_superseded.csv")
    ctx.extra["old"] = sorted(_ids(ctx.run_dir / "runs.csv"))


def _ids(path) -> list[str]:
    return list(pd.read_csv(path, dtype={"task_id": str})["task_id"])


def _moved_once(ctx, output):
    assert sorted(_ids(ctx.run_dir / "runs_superseded.csv")) == ctx.extra["old"]
    assert set(_ids(ctx.run_dir / "runs.csv")).isdisjoint(ctx.extra["old"])


def _warning(name: str, n: int = 1, log: str = "runs.csv") -> str:
    return (f"warning: {{results}}/{NAME}/{name}: {n} corrupt line{'' if n == 1 else 's'} set "
            f"aside into {log}.corrupt")


BINARY = b"\x00\xff\xfe\x89PNG\r\x1a\x00\x00garbage\x07"
HEADER = ",".join(RUN_COLUMNS).encode()

CASES = [
    Case("torn-last-line-in-runs-csv", "logs", setup=_torn_line, code=0, line=ALREADY_DONE),
    Case("results-dir-is-a-file", "logs", setup=_results_is_file, code=1,
         line="{results}/corpus: Not a directory"),
    Case("corrupt-middle-line-in-runs-csv", "logs", setup=_insert("runs.csv", b"half a row,12"),
         code=0, line=_warning("runs.csv"), check=_set_aside("runs.csv", "runs.csv")),
    Case("binary-junk-line-in-runs-csv", "logs", setup=_insert("runs.csv", BINARY, at=3),
         code=0, line=_warning("runs.csv"), check=_set_aside("runs.csv", "runs.csv", at=3)),
    Case("non-utf8-line-in-runs-csv", "logs",
         setup=_insert_made("runs.csv", _real_row(_with_latin1_label)), code=0,
         line=_warning("runs.csv"), check=_set_aside("runs.csv", "runs.csv")),
    Case("duplicated-header-mid-runs-csv", "logs", setup=_insert("runs.csv", HEADER, at=3),
         code=0, line=_warning("runs.csv"), check=_set_aside("runs.csv", "runs.csv", at=3)),
    Case("wrong-field-count-in-runs-csv", "logs",
         setup=_insert("runs.csv", b"0123456789abcdef,corpus,wine,0,0,euclidean"), code=0,
         line=_warning("runs.csv"), check=_set_aside("runs.csv", "runs.csv")),
    Case("foreign-task-id-in-runs-csv", "logs",
         setup=_insert_made("runs.csv", _real_row(_with_foreign_id)), code=0,
         line=_warning("runs.csv"), check=_set_aside("runs.csv", "runs.csv")),
    Case("corrupt-line-in-runs-segment", "logs", setup=_segment(BINARY), code=0,
         line=_warning("runs.2.csv"), check=_set_aside("runs.2.csv", "runs.csv")),
    Case("corrupt-line-in-tuning-csv", "logs",
         setup=_insert("tuning.csv", b"not,a,tuning,fit", header=TUNE_COLUMNS), code=0,
         line=_warning("tuning.csv", log="tuning.csv"),
         check=_set_aside("tuning.csv", "tuning.csv")),
    Case("corrupt-line-in-errors-csv", "logs",
         setup=_insert("errors.csv", BINARY, header=ERROR_COLUMNS), code=0,
         line=_warning("errors.csv", log="errors.csv"),
         check=_set_aside("errors.csv", "errors.csv")),
    Case("corrupt-line-in-runs-superseded-csv", "logs",
         setup=_insert("runs_superseded.csv", b"\xc3\x28 not utf-8", header=RUN_COLUMNS),
         code=0, line=_warning("runs_superseded.csv", log="runs_superseded.csv"),
         check=_set_aside("runs_superseded.csv", "runs_superseded.csv")),
    Case("symlinked-errors-csv", "logs", setup=_linked("errors.csv", "precious\n"),
         line=f"{{results}}/{NAME}/errors.csv {LINK}"),
    Case("symlinked-tuning-csv", "logs", setup=_linked("tuning.csv"),
         line=f"{{results}}/{NAME}/tuning.csv {LINK}"),
    Case("symlinked-runs-segment", "logs", setup=_linked("runs.2.csv"),
         line=f"{{results}}/{NAME}/runs.2.csv {LINK}"),
    Case("symlinked-runs-superseded-csv", "logs", setup=_linked("runs_superseded.csv"),
         line=f"{{results}}/{NAME}/runs_superseded.csv {LINK}"),
    Case("symlinked-corrupt-file", "logs", setup=_linked("runs.csv.corrupt"),
         line=f"{{results}}/{NAME}/runs.csv.corrupt {LINK}"),
    Case("supersede-killed-between-its-steps", "logs",
         changed(evaluation={"knn_k": 5}), argv=("run", "{cfg}", "--supersede"),
         setup=_archive_killed_between_its_steps, code=0,
         line=f"moved 2 rows of tasks no longer in {NAME}'s config (changed settings or data) to "
              f"{{results}}/{NAME}/runs_superseded.csv", rows_after=2, check=_moved_once),
]
