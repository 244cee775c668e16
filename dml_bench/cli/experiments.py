"""Commands on one experiment config and its results: ``init``, ``validate``, ``run``, ``report``,
``check``."""

from __future__ import annotations

from pathlib import Path

import click

from ..run.progress import task_progress
from .base import (_FORCE, _OVERRIDES, _check_jobs, _check_run_options, _exit_on_sigterm, _fail,
                   _label_options, _load, main)


@main.command()
@click.argument("config", type=click.Path(dir_okay=False), default="experiment.yaml")
@click.option("--data", type=click.Path(dir_okay=False), help="Your data file (e.g. a CSV).")
@click.option("--label-column", help="The CSV column holding the class of each row.")
def init(config, data, label_column):
    """Write CONFIG (default experiment.yaml), a commented starter config for your data.

    Without --data it runs on scikit-learn's wine data; an existing file is never replaced.
    """
    from ..common.safe_write import write_text
    from ..common.shipped import starter_config
    from ..experiment.config import load_config

    path = Path(config)
    if path.exists():
        _fail(f"{path} exists: give another name (init never replaces a file)")
    if data is not None and Path(data).suffix.lower() == ".csv" and not label_column:
        _fail("--data with a CSV needs --label-column (the column holding each row's class)")
    write_text(path, starter_config(path.stem, data, label_column))
    load_config(path, check_data=False)  # the file it wrote is a valid config
    click.echo(f"wrote {path}: edit it, then `dmlbench validate {path}` and `dmlbench run {path}`")


@main.command()
@click.argument("config", type=click.Path(dir_okay=False))
@_OVERRIDES
def validate(config, overrides):
    """Check CONFIG (with its KEY.PATH=VALUE overrides) without running anything."""
    exp = _load(config, overrides)
    from ..experiment.kinds import task_kind

    n = len(task_kind(exp).all_tasks(exp))
    click.echo(f"{config}: ok ({len(exp.datasets)} datasets × {len(exp.solvers)} solvers, "
               f"{n} tasks)")


@main.command()
@click.argument("config", type=click.Path(dir_okay=False))
@_OVERRIDES
@click.option("-j", "--n-jobs", type=int, help="Parallel tasks (overrides execution.n_jobs).")
@click.option("--backend", type=click.Choice(["loky", "dask", "sequential"]),
              help="Where the tasks run (overrides execution.backend): loky processes, this "
                   "process, or dask workers.")
@click.option("--scheduler", help="dask scheduler address (with --backend dask); "
                                  "default: a local loopback cluster.")
@click.option("--timing", is_flag=True, default=None,
              help="Run tasks one at a time so fit times are comparable (timing tables).")
@_FORCE
@click.option("--supersede", is_flag=True,
              help="Move finished rows of tasks the config no longer has (changed settings or "
                   "data) to runs_superseded.csv; without it such a run stops and lists them.")
@click.option("--results-dir", "--out", default="results", show_default=True, type=click.Path(),
              help="Parent folder of the experiment's results folder.")
@_label_options("the config", "the others stay to be run later into the same results.")
@click.pass_obj
def run(obj, config, overrides, n_jobs, backend, scheduler, timing, force, supersede,
        results_dir, datasets, solvers):
    """Run CONFIG: every (dataset, split, solver) task not yet in runs.csv, then report.

    KEY.PATH=VALUE sets a config value by its dotted path before validation, e.g.
    `split.n_splits=2` or `solvers.itml.params.gamma=0.1` (a list entry by index or label);
    the results folder's config.yaml records it.

    Finished tasks are appended to RESULTS_DIR/<name>/runs.csv one by one, so an interrupted run
    resumes where it stopped when the same command is given again. Runs started together on the
    same folder share the tasks: each runs once. Contradictory options (-j 0, --scheduler
    without --backend dask, --timing with -j > 1 or dask, --force with --supersede) are refused
    before any work; a run stopped by a full disk or a lost dask scheduler says how many rows it
    saved (exit 1).
    """
    from ..report.kind import screen_tables, write_report
    from ..report.tables import ReportError
    from ..run.runner import Selection, run_experiment

    _exit_on_sigterm()
    _check_jobs(n_jobs)
    exp = _load(config, overrides, n_jobs=n_jobs, backend=backend, scheduler=scheduler,
                timing=timing)
    _check_run_options(exp, n_jobs=n_jobs, backend=backend, scheduler=scheduler, timing=timing,
                       force=force, supersede=supersede)
    summary = run_experiment(exp, results_dir, data=obj["data"],
                             select=Selection(datasets, solvers, force, supersede),
                             progress=task_progress(exp.name),
                             echo=lambda m: click.echo(m, err=True))
    elsewhere = f", {summary.elsewhere} run by another process" if summary.elsewhere else ""
    click.echo(f"{exp.name}: {summary.ran} tasks run, {summary.done_before} already done, "
               f"{summary.failed} failed, {len(summary.skipped)} dataset×solver skipped"
               f"{elsewhere}")
    try:
        for kind, path in write_report(Path(results_dir) / exp.name).items():
            click.echo(f"  {kind}: {path}")
        click.echo(f"\n{screen_tables(Path(results_dir) / exp.name)}")
    except ReportError as exc:
        click.echo(f"  no report: {exc}", err=True)
    if summary.failed:
        _fail(f"{summary.failed} task(s) failed; see {Path(results_dir) / exp.name / 'errors.csv'}"
              " (they are retried by the next run)", code=1)


@main.command()
@click.argument("results_dirs", nargs=-1, type=click.Path(file_okay=False, exists=True))
@click.option("--all", "all_targets", is_flag=True,
              help="Write RESULTS_ROOT/REPRODUCTION.md and .html over every reproduction target.")
@click.option("--results-root", "--out", type=click.Path(file_okay=False), default="results",
              show_default=True, help="With --all: where the targets' results are.")
@click.option("--readme", type=click.Path(dir_okay=False, exists=True),
              help="Also regenerate the status table between the markers of this README.")
def report(results_dirs, all_targets, results_root, readme):
    """Write summary.csv, table.tex, figures and paper comparisons for RESULTS_DIRS.

    With --all, also the reproduction report of every target (dml_bench/reproduction/targets.yaml).
    """
    from ..report.kind import write_report
    from ..report.knn import update_readme_status
    from ..report.tables import ReportError

    for directory in results_dirs:
        try:
            for kind, path in write_report(Path(directory)).items():
                click.echo(f"{kind}: {path}")
        except ReportError as exc:
            _fail(str(exc), code=1)
    table = None
    if all_targets:
        from ..reproduction.report import summary_markdown, write_reproduction_report

        Path(results_root).mkdir(parents=True, exist_ok=True)
        md, page, entries = write_reproduction_report(results_root)
        click.echo(f"{md}\n{page}")
        table = summary_markdown(entries)
    elif not results_dirs:
        _fail("give RESULTS_DIRS or --all")
    if readme:
        root = Path(results_dirs[0]).parent if results_dirs else Path(results_root)
        changed = update_readme_status(Path(readme), root, table)
        click.echo(f"{readme}: status table {'updated' if changed else 'unchanged'}")


@main.command()
@click.argument("results_dir", type=click.Path(file_okay=False, exists=True))
@click.option("--baseline", required=True, type=click.Path(dir_okay=False),
              help="Baseline CSV (summary.csv format).")
@click.option("--update", is_flag=True,
              help="Write BASELINE from RESULTS_DIR instead of checking (after a deliberate change).")
def check(results_dir, baseline, update):
    """Fail (exit 1) when a mean error is worse than BASELINE by more than its tolerance.

    The tolerance of each (dataset, solver) cell is two standard errors of the baseline mean (from
    its split-to-split std; both runs use the same splits), at least one misclassified test point
    on one split.
    """
    from ..report.check import check_against_baseline, write_baseline

    if update:
        click.echo(f"baseline written: {write_baseline(Path(results_dir), Path(baseline))}")
        return
    if not Path(baseline).is_file():
        _fail(f"baseline {baseline} does not exist (create it with --update)")

    ok, table = check_against_baseline(Path(results_dir), Path(baseline))
    click.echo(table.to_string(index=False))
    if not ok:
        offenders = table[table["status"].isin(["worse", "missing"])]
        _fail(f"{len(offenders)} cell(s) regressed against {baseline}:\n"
              + offenders.to_string(index=False), code=1)
    click.echo(f"ok: no cell worse than {baseline} beyond its tolerance")
