"""Writes outside the results folder: a figure name that is a path, outputs that are symlinks to
files elsewhere, text that would run as LaTeX or HTML, and a disk that fills while the report is
written. Names that leave the folder end in one line; a symlinked output is replaced by the
run's own file and its target stays as it was (the runner asserts ``{outside}`` unchanged)."""

from __future__ import annotations

import errno
import os

import yaml

from . import GOOD, NAME, Case, changed

#: the ``dmlbench run`` line of GOOD once its 2 tasks are finished
ALREADY_DONE = f"{NAME}: 0 tasks run, 2 already done, 0 failed, 0 dataset×solver skipped"
PLAIN = "must be a plain file name, without '/', '\\' or NUL"
LABEL = "\\input{/etc/passwd}<script>alert(1)</script>"


def _figure(name):
    return changed(figures=[{"name": name, "kind": "bar", "x": "label", "y": "error"}])


def _linked(*names):
    """Setup: each output of the results folder is a symlink to a file in ``{outside}``."""
    def setup(ctx):
        for name in names:
            target = ctx.outside / f"target_{name}"
            target.write_text(f"the colleague's {name}\n")
            link = ctx.run_dir / name
            link.unlink(missing_ok=True)
            link.symlink_to(target)
    return setup


def _replaced(*names):
    """Check: each output is now a regular file of the run, its target as it was."""
    def check(ctx, output):
        for name in names:
            path = ctx.run_dir / name
            assert path.is_file() and not path.is_symlink(), name
            assert (ctx.outside / f"target_{name}").read_text() == f"the colleague's {name}\n"
            assert "the colleague's" not in path.read_text()
        assert not [p for p in ctx.run_dir.rglob(".*.tmp")]
    return check


def _linked_figures(ctx):
    (ctx.outside / "figures").mkdir()
    (ctx.outside / "figures" / "bars.png").write_bytes(b"the colleague's figure")
    (ctx.run_dir / "figures").symlink_to(ctx.outside / "figures", target_is_directory=True)


def _figures_replaced(ctx, output):
    figures = ctx.run_dir / "figures"
    assert figures.is_dir() and not figures.is_symlink()
    assert sorted(p.name for p in figures.iterdir()) == ["bars.csv", "bars.pdf", "bars.png"]
    assert (figures / "bars.png").read_bytes()[:4] == b"\x89PNG"
    assert (ctx.outside / "figures" / "bars.png").read_bytes() == b"the colleague's figure"


def _escaped(ctx, output):
    header = ("Dataset & euclidean & \\textbackslash{}input\\{/etc/passwd\\}"
              "<script>alert(1)</script> \\\\")
    for name in ("table.tex", "table_time.tex"):
        lines = (ctx.run_dir / name).read_text().splitlines()
        assert header in lines, lines


def _colleague_config(figure_name):
    """Setup: the results folder's ``config.yaml`` (a colleague's) names a figure by a path."""
    def setup(ctx):
        ctx.extra["before"] = {p.name: p.read_bytes() for p in ctx.run_dir.iterdir()
                               if p.is_file() and p.name != "config.yaml"}
        config = yaml.safe_load((ctx.run_dir / "config.yaml").read_text())
        config["figures"] = [{"name": figure_name, "kind": "bar", "x": "label", "y": "error",
                              "panels": "dataset", "series": "label"}]
        (ctx.run_dir / "config.yaml").write_text(yaml.safe_dump(config))
    return setup


def _nothing_reported(ctx, output):
    """Check: the report stopped before writing anything."""
    assert {p.name: p.read_bytes() for p in ctx.run_dir.iterdir()
            if p.is_file() and p.name != "config.yaml"} == ctx.extra["before"]
    assert not (ctx.run_dir / "figures").exists()


def _disk_full_at(name):
    """Setup: the disk is full when ``name``'s new content is synced (an injected ENOSPC)."""
    def setup(ctx):
        real = os.fsync
        ctx.extra["before"] = {p.name: p.read_bytes() for p in ctx.run_dir.iterdir()
                               if p.is_file()}

        def fsync(fd):
            if f".{name}." in os.path.basename(os.readlink(f"/proc/self/fd/{fd}")):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real(fd)
        ctx.monkeypatch.setattr(os, "fsync", fsync)
    return setup


def _kept(name):
    """Check: ``name`` holds its old content, and no temporary file is left."""
    def check(ctx, output):
        path = ctx.run_dir / name
        assert path.read_bytes() == ctx.extra["before"][name]
        assert not [p for p in ctx.run_dir.rglob(".*.tmp")]
    return check


CASES = [
    Case("figure-name-absolute", "security", _figure("/tmp/x"),
         line=f"{{cfg}}: figures[0].name: {PLAIN}, got '/tmp/x'"),
    Case("figure-name-dot-dot", "security", _figure("../../outside/x"),
         line=f"{{cfg}}: figures[0].name: {PLAIN}, got '../../outside/x'"),
    Case("figure-name-backslash", "security", _figure("..\\x"),
         line=f"{{cfg}}: figures[0].name: {PLAIN}, got '..\\\\x'"),
    Case("figure-name-is-dot-dot", "security", _figure(".."),
         line="{cfg}: figures[0].name: must be a plain file name, other than '.' and '..', "
              "got '..'"),
    Case("figure-name-absolute-validate", "security", _figure("/etc/cron.daily/x"),
         argv=("validate", "{cfg}"),
         line=f"{{cfg}}: figures[0].name: {PLAIN}, got '/etc/cron.daily/x'"),
    Case("symlinked-config-yaml", "security", setup=_linked("config.yaml"), code=0,
         line=ALREADY_DONE, check=_replaced("config.yaml")),
    Case("symlinked-summary-csv", "security", setup=_linked("summary.csv"), code=0,
         line=ALREADY_DONE, check=_replaced("summary.csv")),
    Case("symlinked-table-tex", "security", setup=_linked("table.tex"), code=0,
         line=ALREADY_DONE, check=_replaced("table.tex")),
    Case("symlinked-table-time-tex", "security", setup=_linked("table_time.tex"), code=0,
         line=ALREADY_DONE, check=_replaced("table_time.tex")),
    Case("symlinked-every-output", "security",
         setup=_linked("config.yaml", "summary.csv", "table.tex", "table_time.tex"), code=0,
         line=ALREADY_DONE,
         check=_replaced("config.yaml", "summary.csv", "table.tex", "table_time.tex")),
    Case("symlinked-figures-folder", "security",
         {**GOOD, "figures": [{"name": "bars", "kind": "bar", "x": "label", "y": "error"}]},
         setup=_linked_figures, code=0, line=ALREADY_DONE, check=_figures_replaced),
    Case("label-with-latex-and-script", "security",
         changed(solvers=[{"name": "euclidean"}, {"name": "euclidean", "label": LABEL}]),
         code=0, line=f"{NAME}: 2 tasks run, 2 already done, 0 failed, 0 dataset×solver skipped",
         rows_after=4, check=_escaped),
    Case("report-symlinked-output", "security", argv=("report", "{results}/corpus"),
         setup=_linked("summary.csv", "table.tex"), code=0,
         line="summary.csv: {results}/corpus/summary.csv",
         check=_replaced("summary.csv", "table.tex")),
    Case("report-colleague-figure-name-outside", "security",
         argv=("report", "{results}/corpus"), setup=_colleague_config("../../outside/x"),
         line=f"figure name '../../outside/x': {PLAIN}", check=_nothing_reported),
    Case("report-colleague-figure-name-absolute", "security",
         argv=("report", "{results}/corpus"), setup=_colleague_config("/tmp/x"),
         line=f"figure name '/tmp/x': {PLAIN}", check=_nothing_reported),
    Case("disk-full-writing-config-yaml", "environment", setup=_disk_full_at("config.yaml"),
         code=1, line="{results}/corpus/config.yaml: No space left on device",
         check=_kept("config.yaml")),
    Case("disk-full-writing-table-tex", "environment", setup=_disk_full_at("table.tex"),
         code=1, line="{results}/corpus/table.tex: No space left on device",
         check=_kept("table.tex")),
]
