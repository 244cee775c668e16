"""A user's data file changed in place between two runs: its tasks are new (the task id carries
the file's sha256), so the finished rows of the old content are not reused. The run refuses,
naming them, until ``--supersede`` moves them aside; then the tasks rerun on the new content,
each row once. A file touched without a change in content keeps its rows."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
from click.testing import CliRunner

from dml_bench.cli import main

from . import Case, changed

CSV = "data.csv"
CSV_RUN = changed(datasets=[{"name": "wine"}, {"path": CSV, "label_column": "label"}])  # GOOD + CSV


def csv_lines(shuffled: bool) -> str:
    """40 rows ``a,b,label``, separable by ``a`` (2-NN error 0); ``shuffled``: the same feature
    fields over the rows in another order, so the labels no longer follow them (same size)."""
    rng = np.random.default_rng(0)
    labels = np.arange(40) % 2
    features = [f"{5 * c + rng.uniform():.4f},{rng.uniform():.4f}" for c in labels]
    if shuffled:
        features = [features[i] for i in rng.permutation(40)]
    return "a,b,label\n" + "".join(f"{x},{c}\n" for x, c in zip(features, labels))


def _run(ctx, *extra):
    result = CliRunner().invoke(main, ["run", str(ctx.cfg), "--results-dir", str(ctx.results),
                                       *extra])
    assert result.exit_code == 0, result.output


def edited(change_content: bool):
    """Write the CSV, run the config once (its 2 tasks land beside GOOD's 2 rows), then rewrite
    the file in place (the same bytes, or the shuffled content of the same size) and move its
    mtime 10 s on, past any file system's timestamp resolution."""
    def setup(ctx):
        path = ctx.work / CSV
        path.write_text(csv_lines(shuffled=False))
        _run(ctx)
        ctx.extra["old"] = old = _csv_rows(ctx)
        for split, task_id in zip(old["split"], old["task_id"]):
            ctx.extra[f"id{split}"] = task_id
        path.write_text(csv_lines(shuffled=change_content))
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000_000))
    return setup


def _csv_rows(ctx) -> pd.DataFrame:
    runs = pd.read_csv(ctx.run_dir / "runs.csv", dtype={"task_id": str})
    return runs[runs["dataset"] == "data"].reset_index(drop=True)


def _rerun_on_new_content(ctx, output):
    old, new = ctx.extra["old"], _csv_rows(ctx)
    moved = pd.read_csv(ctx.run_dir / "runs_superseded.csv", dtype={"task_id": str})
    assert sorted(moved["task_id"]) == sorted(old["task_id"])
    assert len(new) == 2 and not set(new["task_id"]) & set(old["task_id"])
    assert (old["error"] == 0).all() and (new["error"] > 0.2).all()  # the new content was read


def _rows_kept(ctx, output):
    assert _csv_rows(ctx).equals(ctx.extra["old"])


OLD_IDS = "data split 0 euclidean [{id0}]; data split 1 euclidean [{id1}]"  # the rows run

CASES = [
    Case("csv-changed-in-place-refused", "data", CSV_RUN, setup=edited(True), rows_after=4,
         line="corpus: the config no longer contains the tasks of 2 finished rows of runs.csv (a "
              f"changed setting, default or data file changes a task's id): e.g. {OLD_IDS}. Rerun with "
              "--supersede to move them to runs_superseded.csv and run the new tasks (or --force "
              "to recompute everything), or restore the config that made them"),
    Case("csv-changed-in-place-superseded", "data", CSV_RUN, argv=("run", "{cfg}", "--supersede"),
         setup=edited(True), code=0, rows_after=4, check=_rerun_on_new_content,
         line="moved 2 rows of tasks no longer in corpus's config (changed settings or data) to "
              "{results}/corpus/runs_superseded.csv"),
    Case("csv-touched-same-content-kept", "data", CSV_RUN, setup=edited(False), code=0,
         rows_after=4, check=_rows_kept,
         line="corpus: 0 tasks run, 4 already done, 0 failed, 0 dataset×solver skipped"),
]
