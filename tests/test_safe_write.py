"""Writing outputs (:mod:`dml_bench.common.safe_write`): plain file names only,
create-temporary-then-rename in the destination folder, no symlink followed, the folder's usual
mode for a new file, no temporary file left behind on failure; and ``dmlbench run`` on a results
folder whose outputs are symlinks to files elsewhere."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from dml_bench.cli import main
from dml_bench.common import safe_write
from dml_bench.common.safe_write import (UnsafeOutputName, check_name, name_problem,
                                         output_dir, output_path, replacing, save_figure,
                                         write_bytes, write_csv, write_text)

@pytest.fixture
def umask():
    """Set the process's umask for the test; the old one is restored after it."""
    old = os.umask(0o022)
    os.umask(old)
    yield lambda mask: os.umask(mask)
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


# ------------------------------------------------------------------------------- plain names


@pytest.mark.parametrize("name", ["table.tex", "fig 1.png", "überblick_α.csv", ".hidden",
                                  "a..b", "...", "-x"])
def test_plain_names_pass(name, tmp_path):
    assert name_problem(name) is None
    assert check_name(name) == name
    assert output_path(tmp_path, name) == tmp_path / name


@pytest.mark.parametrize("name,message", [
    ("", "output name '': must be a non-empty file name"),
    ("/tmp/x", "output name '/tmp/x': must be a plain file name, without '/', '\\' or NUL"),
    ("../x", "output name '../x': must be a plain file name, without '/', '\\' or NUL"),
    ("a/b", "output name 'a/b': must be a plain file name, without '/', '\\' or NUL"),
    ("..\\x", "output name '..\\\\x': must be a plain file name, without '/', '\\' or NUL"),
    ("x\0y", "output name 'x\\x00y': must be a plain file name, without '/', '\\' or NUL"),
    (".", "output name '.': must be a plain file name, other than '.' and '..'"),
    ("..", "output name '..': must be a plain file name, other than '.' and '..'"),
    (None, "output name None: must be a non-empty file name"),
])
def test_names_that_leave_the_folder_are_refused(name, message, tmp_path):
    with pytest.raises(UnsafeOutputName) as info:
        output_path(tmp_path, name)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)


# ------------------------------------------------------------------------- writes and symlinks


def test_write_through_a_symlink_replaces_the_link_not_its_target(tmp_path):
    outside, folder = tmp_path / "outside", tmp_path / "results"
    outside.mkdir()
    folder.mkdir()
    target = outside / "precious.txt"
    target.write_text("keep me\n")
    for name in ("a.txt", "b.bin", "c.csv", "d.png"):
        (folder / name).symlink_to(target)
    write_text(folder / "a.txt", "new text\n")
    write_bytes(folder / "b.bin", b"\x00\x01")
    write_csv(folder / "c.csv", pd.DataFrame({"x": [1, 2]}))
    save_figure(_figure(), folder / "d.png")
    assert target.read_text() == "keep me\n"
    assert sorted(p.name for p in outside.iterdir()) == ["precious.txt"]
    for name in ("a.txt", "b.bin", "c.csv", "d.png"):
        assert not (folder / name).is_symlink() and (folder / name).is_file()
    assert (folder / "a.txt").read_text() == "new text\n"
    assert (folder / "b.bin").read_bytes() == b"\x00\x01"
    assert (folder / "c.csv").read_text() == "x\n1\n2\n"
    assert (folder / "d.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_dangling_symlink_is_replaced_and_nothing_is_created_at_its_target(tmp_path):
    target = tmp_path / "elsewhere" / "created.txt"
    (tmp_path / "elsewhere").mkdir()
    link = tmp_path / "out.txt"
    link.symlink_to(target)
    write_text(link, "x")
    assert not target.exists() and link.read_text() == "x" and not link.is_symlink()


def test_output_dir_replaces_a_symlinked_folder(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("k")
    results = tmp_path / "results"
    results.mkdir()
    (results / "figures").symlink_to(outside, target_is_directory=True)
    figures = output_dir(results, "figures")
    assert figures == results / "figures" and figures.is_dir() and not figures.is_symlink()
    assert list(figures.iterdir()) == []
    assert [p.name for p in outside.iterdir()] == ["keep.txt"]
    assert output_dir(results, "figures") == figures  # an existing folder is kept
    with pytest.raises(UnsafeOutputName):
        output_dir(results, "../figures")


@pytest.mark.parametrize("mask,expected", [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664),
                                           (0o077, 0o600)])
def test_new_files_get_the_usual_mode_not_mkstemps(mask, expected, tmp_path, umask):
    umask(mask)
    old = tmp_path / "old.csv"
    old.write_text("a\n")
    old.chmod(0o600)  # an existing file's mode is not kept: the file is a new one
    write_text(tmp_path / "new.txt", "x")
    write_csv(old, pd.DataFrame({"a": [1]}))
    save_figure(_figure(), tmp_path / "f.pdf")
    assert mode(tmp_path / "new.txt") == expected
    assert mode(old) == expected
    assert mode(tmp_path / "f.pdf") == expected


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "summary.csv"
    path.write_text("old\n")
    with pytest.raises(RuntimeError, match="disk on fire"):
        with replacing(path) as fh:
            fh.write("half of the new")
            raise RuntimeError("disk on fire")
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.csv"]


def test_a_failed_figure_leaves_no_temporary(tmp_path, monkeypatch):
    fig = _figure()

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fig, "savefig", broken)
    with pytest.raises(OSError, match="No space left"):
        save_figure(fig, tmp_path / "x.png")
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_at_the_sync_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "table.tex"
    path.write_text("old")

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(safe_write.os, "fsync", full)
    with pytest.raises(OSError) as info:
        write_text(path, "new")
    assert str(info.value) == f"[Errno 28] No space left on device: '{path}'"
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["table.tex"]


def test_a_missing_folder_is_named_by_the_destination(tmp_path):
    path = tmp_path / "gone" / "summary.csv"
    with pytest.raises(FileNotFoundError) as info:
        write_text(path, "x")
    assert info.value.filename == str(path) and info.value.filename2 is None


def test_durable_writes_sync_the_file_before_the_rename_and_the_folder_after(tmp_path,
                                                                            monkeypatch):
    calls = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        calls.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    def replace(src, dst):
        calls.append("rename")
        real_replace(src, dst)

    monkeypatch.setattr(safe_write.os, "fsync", fsync)
    monkeypatch.setattr(safe_write.os, "replace", replace)
    write_text(tmp_path / "a", "x")
    assert calls == ["file", "rename", "dir"]
    calls.clear()
    write_text(tmp_path / "b", "x", durable=False)
    assert calls == ["rename"]


def test_text_is_written_as_given(tmp_path):
    text = "α,β\r\nline two\n"
    assert write_text(tmp_path / "t.txt", text).read_bytes() == text.encode("utf-8")


def test_replacing_takes_text_or_binary_only(tmp_path):
    with pytest.raises(ValueError, match="mode must be 'w' or 'wb', got 'a'"):
        with replacing(tmp_path / "x", "a"):
            pass
    assert list(tmp_path.iterdir()) == []


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    return fig


# -------------------------------------------------------------------------------- end to end


def test_run_replaces_symlinked_outputs_and_leaves_their_targets(tmp_path, monkeypatch,
                                                                  tmp_cache):
    monkeypatch.chdir(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    results = tmp_path / "results"
    run_dir = results / "tiny"
    run_dir.mkdir(parents=True)
    names = ("config.yaml", "summary.csv", "table.tex", "table_time.tex")
    for name in names:
        (outside / name).write_text(f"the colleague's {name}\n")
        (run_dir / name).symlink_to(outside / name)
    config = {"name": "tiny", "datasets": [{"name": "wine"}], "solvers": [{"name": "euclidean"}],
              "split": {"n_splits": 2}, "execution": {"backend": "sequential"}}
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(config))
    result = CliRunner().invoke(main, ["run", "tiny.yaml", "--results-dir", str(results)])
    assert result.exit_code == 0, result.output
    assert "tiny: 2 tasks run, 0 already done, 0 failed, 0 dataset×solver skipped" in (
        result.output.splitlines())
    for name in names:  # the targets are as they were, the links are the run's own files
        assert (outside / name).read_text() == f"the colleague's {name}\n"
        assert not (run_dir / name).is_symlink() and (run_dir / name).is_file()
    assert sorted(p.name for p in outside.iterdir()) == sorted(names)
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["name"] == "tiny"
    summary = pd.read_csv(run_dir / "summary.csv")
    assert list(summary["dataset"]) == ["wine"] and list(summary["label"]) == ["euclidean"]
    assert "\\begin{tabular}{lr}\n" in (run_dir / "table.tex").read_text()
    assert [p.name for p in run_dir.iterdir() if p.name.endswith(".tmp")] == []
