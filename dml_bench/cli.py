"""The ``dmlbench`` command line: run, report, reproduce, check, validate, datasets, fetch, solvers."""

from __future__ import annotations

import inspect
import os
import signal
import sys
from dataclasses import replace
from pathlib import Path

import click

from . import __version__
from .run.progress import task_progress


def _fail(message: str, code: int = 2):
    click.secho(f"error: {message}", fg="red", err=True)
    sys.exit(code)


_TERMINATED: list[int] = []  # the SIGTERM received, if any


def _exit_on_sigterm():
    """Turn SIGTERM (``kill``, a scheduler's time limit) into ``SystemExit`` so that a long run
    stops like on Ctrl-C: finished rows are already on disk and the wall-time record is kept.

    The signal is also remembered: raised inside C code that calls back into Python (pandas'
    CSV tokenizer), the ``SystemExit`` can surface as another exception, which
    :class:`_OneLineErrors` then turns back into the same exit status; raised inside a ctypes
    callback (threadpoolctl's scan of the loaded libraries), it is printed and dropped, so the
    row loop (``execution.STOP_SIGNALS``) stops after the row in progress."""

    def terminate(signum, frame):
        _TERMINATED.append(signum)
        execution = sys.modules.get("dml_bench.run.execution")  # loaded when rows are being run
        if execution is not None:
            execution.STOP_SIGNALS.append(signum)
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, terminate)


_FORCE_SUPERSEDE = ("--force and --supersede contradict each other: --force recomputes every "
                    "task, --supersede keeps the finished ones (both move the rows of tasks the "
                    "config no longer has aside); give one")


def _check_jobs(n_jobs: int | None) -> None:
    """Refuse ``-j`` values that are no number of workers (``-1`` is all cores)."""
    if n_jobs is not None and n_jobs < 1 and n_jobs != -1:
        _fail(f"-j {n_jobs}: must be a positive number of workers or -1 (all cores)")


def _check_run_options(exp, *, n_jobs, backend, scheduler, timing, force, supersede) -> None:
    """Refuse contradictory options of ``run``, in one line, before any work: ``--force`` with
    ``--supersede``, ``--scheduler`` without the dask backend, timing mode (``--timing`` or the
    config's ``execution.timing``) with ``-j`` other than 1 or ``--backend dask``."""
    if force and supersede:
        _fail(_FORCE_SUPERSEDE)
    if scheduler and exp.backend != "dask":
        _fail(f"--scheduler {scheduler} needs --backend dask (the config's backend is "
              f"{exp.backend})")
    if exp.timing and n_jobs not in (None, 1):
        _fail(f"--timing runs one task at a time so that fit times compare: it cannot be "
              f"combined with -j {n_jobs}")
    if exp.timing and backend == "dask":
        _fail("--timing runs one task at a time in this process so that fit times compare: it "
              "cannot be combined with --backend dask")


def _load(config_path: str, **overrides):
    from .experiment.config import load_config

    exp = load_config(config_path)  # a ConfigError is one line (_OneLineErrors)
    return replace(exp, **{k: v for k, v in overrides.items() if v is not None})


class _OneLineErrors(click.Group):
    """Every fault of the input or the environment ends in one line and an exit status, never a
    traceback: the project's own errors (:class:`~dml_bench.errors.DMLBenchError`) with status
    2, file-system errors (disk full, permissions) with 1. ``DMLBENCH_DEBUG=1`` re-raises."""

    def invoke(self, ctx):
        from .errors import DMLBenchError

        try:
            out = super().invoke(ctx)
        except Exception as exc:
            if _TERMINATED and not os.environ.get("DMLBENCH_DEBUG"):
                sys.exit(128 + _TERMINATED[0])  # an exception the SIGTERM caused mid-call
            if not isinstance(exc, (DMLBenchError, OSError)):
                raise
            if os.environ.get("DMLBENCH_DEBUG"):
                raise
            if isinstance(exc, DMLBenchError):
                _fail(" ".join(str(exc).split()))
            where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
            _fail(" ".join(f"{where}{exc.strerror or exc}".split()), code=1)
        if _TERMINATED:  # a SIGTERM whose SystemExit was dropped (see _exit_on_sigterm)
            sys.exit(128 + _TERMINATED[0])
        return out


#: ``--force`` of the commands that resume a results log
_FORCE = click.option("--force", is_flag=True, help="Recompute tasks already in runs.csv.")


def _label_options(config: str, rest: str):
    """The repeatable ``--dataset`` and ``--solver`` options that run only some dataset and solver
    labels of ``config``; ``rest`` says what becomes of the labels not run."""
    def add(command):
        command = click.option(
            "--solver", "solvers", multiple=True, metavar="LABEL",
            help=f"Run only this solver label of {config} (repeatable), likewise.")(command)
        return click.option(
            "--dataset", "datasets", multiple=True, metavar="LABEL",
            help=f"Run only this dataset label of {config} (repeatable); {rest}")(command)
    return add


@click.group(cls=_OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dmlbench")
@click.option("--data-mirror", type=click.Path(file_okay=False), envvar="DMLBENCH_DATA_MIRROR",
              help="Read-only folder of dataset files tried before the network "
                   "(env DMLBENCH_DATA_MIRROR).")
@click.option("--cache-dir", type=click.Path(file_okay=False), envvar="DMLBENCH_CACHE",
              help="Where fetched datasets are stored (env DMLBENCH_CACHE; default ./datasets).")
@click.option("--allow-plugins", is_flag=True,
              help="Import the plug-ins a config names (entry points, module:Class references): "
                   "they run code. Without it only a plugins: list in the user settings file, or "
                   "env DMLBENCH_ALLOW_PLUGINS=1, allows them.")
@click.pass_context
def main(ctx, data_mirror, cache_dir, allow_plugins):
    """Reproduce, compare and extend Mahalanobis distance-metric-learning results.

    A YAML config names datasets, a constraint generator and solvers; `dmlbench run` runs
    randomised train/test splits in parallel and writes runs.csv, summary tables and the
    comparison with the numbers the papers reported.
    """
    # exported so worker processes and every loader see the same locations
    for var, value in (("DMLBENCH_DATA_MIRROR", data_mirror), ("DMLBENCH_CACHE", cache_dir)):
        if value:
            os.environ[var] = str(Path(value).resolve())
    if allow_plugins:  # the user's consent, exported to workers (dml_bench.common.settings)
        os.environ["DMLBENCH_ALLOW_PLUGINS"] = "1"
    ctx.obj = {"mirror": os.environ.get("DMLBENCH_DATA_MIRROR"),
               "cache_dir": os.environ.get("DMLBENCH_CACHE")}


@main.command()
@click.argument("config", type=click.Path(dir_okay=False))
@click.option("-j", "--n-jobs", type=int, help="Parallel tasks (overrides execution.n_jobs).")
@click.option("--backend", type=click.Choice(["loky", "dask", "sequential"]),
              help="joblib backend (overrides execution.backend).")
@click.option("--scheduler", help="dask scheduler address (with --backend dask); "
                                  "default: a local loopback cluster.")
@click.option("--timing", is_flag=True, default=None,
              help="Run tasks one at a time so fit times are comparable (timing tables).")
@_FORCE
@click.option("--supersede", is_flag=True,
              help="Move finished rows of tasks the config no longer has (changed settings or "
                   "data) to runs_superseded.csv; without it such a run stops and lists them.")
@click.option("--results-dir", default="results", show_default=True, type=click.Path(),
              help="Parent folder of the experiment's results folder.")
@_label_options("the config", "the others stay to be run later into the same results.")
@click.pass_obj
def run(obj, config, n_jobs, backend, scheduler, timing, force, supersede, results_dir,
        datasets, solvers):
    """Run CONFIG: every (dataset, split, solver) task not yet in runs.csv, then report.

    Finished tasks are appended to RESULTS_DIR/<name>/runs.csv one by one, so an interrupted run
    resumes where it stopped when the same command is given again. Runs started together on the
    same folder share the tasks: each runs once. Contradictory options (-j 0, --scheduler
    without --backend dask, --timing with -j > 1 or dask, --force with --supersede) are refused
    before any work; a run stopped by a full disk or a lost dask scheduler says how many rows it
    saved (exit 1).
    """
    from .report.knn import write_report
    from .report.tables import ReportError
    from .run.runner import run_experiment

    _exit_on_sigterm()
    _check_jobs(n_jobs)
    exp = _load(config, n_jobs=n_jobs, backend=backend, scheduler=scheduler, timing=timing)
    _check_run_options(exp, n_jobs=n_jobs, backend=backend, scheduler=scheduler, timing=timing,
                       force=force, supersede=supersede)
    summary = run_experiment(exp, results_dir, mirror=obj["mirror"], cache_dir=obj["cache_dir"],
                             force=force, progress=task_progress(exp.name),
                             echo=lambda m: click.echo(m, err=True), datasets=datasets,
                             solvers=solvers, supersede=supersede)
    elsewhere = f", {summary.elsewhere} run by another process" if summary.elsewhere else ""
    click.echo(f"{exp.name}: {summary.ran} tasks run, {summary.done_before} already done, "
               f"{summary.failed} failed, {len(summary.skipped)} dataset×solver skipped"
               f"{elsewhere}")
    try:
        for kind, path in write_report(Path(results_dir) / exp.name).items():
            click.echo(f"  {kind}: {path}")
    except ReportError as exc:
        click.echo(f"  no report: {exc}", err=True)
    if summary.failed:
        _fail(f"{summary.failed} task(s) failed; see {Path(results_dir) / exp.name / 'errors.csv'}"
              " (they are retried by the next run)", code=1)


@main.command()
@click.argument("results_dirs", nargs=-1, type=click.Path(file_okay=False, exists=True))
@click.option("--all", "all_targets", is_flag=True,
              help="Write RESULTS_ROOT/REPRODUCTION.md and .html over every reproduction target.")
@click.option("--results-root", type=click.Path(file_okay=False), default="results",
              show_default=True, help="With --all: where the targets' results are.")
@click.option("--readme", type=click.Path(dir_okay=False, exists=True),
              help="Also regenerate the status table between the markers of this README.")
def report(results_dirs, all_targets, results_root, readme):
    """Write summary.csv, table.tex, figures and paper comparisons for RESULTS_DIRS.

    With --all, also the reproduction report of every target (dml_bench/reproduction/targets.yaml).
    """
    from .report.knn import update_readme_status, write_report
    from .report.tables import ReportError

    for directory in results_dirs:
        try:
            for kind, path in write_report(Path(directory)).items():
                click.echo(f"{kind}: {path}")
        except ReportError as exc:
            _fail(str(exc), code=1)
    table = None
    if all_targets:
        from .reproduction.report import summary_markdown, write_reproduction_report

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
@click.argument("targets", nargs=-1)
@click.option("--all", "all_targets", is_flag=True, help="Every target that can run here.")
@click.option("--quick", is_flag=True,
              help="The reduced version (targets.yaml `quick:`), into results/<name>_quick.")
@click.option("--precise", is_flag=True,
              help="The precise companion (targets.yaml `precise:`: 100 splits on the small "
                   "sets, the declared cheap solvers), into results/<name>_precise.")
@click.option("--check", "check_baseline", is_flag=True,
              help="With --quick: compare each result with results/baselines/<id>_quick.csv.")
@click.option("-j", "--n-jobs", type=int, help="Parallel tasks (overrides the config).")
@_FORCE
@click.option("--supersede", is_flag=True,
              help="Move finished rows of tasks the config no longer has to *_superseded.csv.")
@click.option("--results-dir", type=click.Path(file_okay=False), default="results",
              show_default=True)
@_label_options("the target's config", "the report lists the tasks still to run.")
@click.pass_obj
def reproduce(obj, targets, all_targets, quick, precise, check_baseline, n_jobs, force,
              supersede, results_dir, datasets, solvers):
    """Reproduce paper TARGETS (ids as `dmlbench reproduce --list`; e.g. ying2012-table4).

    Each target runs its config (resuming earlier runs) and writes its report; one that cannot
    run here (data not available, protocol not supported) says why and makes the command exit
    with status 3 — unless --all, which skips it.
    """
    from .experiment.schema import ConfigError
    from .reproduction.targets import TargetUnavailable, load_targets, reproduce as run_target

    _exit_on_sigterm()
    _check_jobs(n_jobs)
    if force and supersede:
        _fail(_FORCE_SUPERSEDE)
    registry = load_targets()
    if all_targets:
        targets = [t.id for t in registry.values() if not t.same_runs
                   and (not quick or t.quick) and (not precise or t.precise)]
    if not targets:
        for t in registry.values():
            click.echo(f"{t.id:22s} {t.item}: {t.what}")
        return
    from .registry import UnknownNameError

    for tid in targets:
        if tid not in registry:
            _fail(str(UnknownNameError("reproduction target", tid, list(registry))))
    unavailable, failed = [], []
    for tid in targets:
        try:
            record = run_target(tid, quick=quick, results_root=results_dir, mirror=obj["mirror"],
                                cache_dir=obj["cache_dir"], n_jobs=n_jobs, force=force,
                                progress=task_progress(tid), echo=lambda m: click.echo(m, err=True),
                                datasets=datasets, solvers=solvers, supersede=supersede,
                                precise=precise)
        except UnknownNameError as exc:
            _fail(f"{tid}: {exc}")
        except TargetUnavailable as exc:
            click.secho(str(exc), fg="yellow", err=True)
            unavailable.append(tid)
            continue
        except ConfigError as exc:
            _fail(f"{tid}: {exc}")
        click.echo(f"{tid}: {record['ran']} tasks run, {record['done_before']} already done, "
                   f"{record['failed']} failed; {record['wall_seconds']} s → "
                   f"{Path(results_dir) / record['experiment']}")
        if record["failed"]:
            failed.append(tid)
        if check_baseline:
            from .report.check import check_against_baseline

            baseline = Path(results_dir) / "baselines" / f"{tid}_quick.csv"
            if not baseline.is_file():
                _fail(f"baseline {baseline} does not exist (create it with `dmlbench check "
                      f"{Path(results_dir) / record['experiment']} --baseline {baseline} --update`)")
            ok, table = check_against_baseline(Path(results_dir) / record["experiment"], baseline)
            click.echo(table.to_string(index=False))
            if not ok:
                failed.append(tid)
    if failed:
        _fail(f"failed or regressed: {', '.join(failed)}", code=1)
    if unavailable and not all_targets:
        sys.exit(3)


@main.command()
@click.option("--quick", is_flag=True,
              help="The CI tier (configs/leaderboard_quick.yaml: bundled sets, 3 splits, few "
                   "methods) into RESULTS_DIR/leaderboard_quick.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="Board config (default configs/leaderboard.yaml, or _quick with --quick).")
@click.option("--dataset", "datasets", multiple=True, metavar="LABEL",
              help="Run only this data set (repeatable); the statistics list what is left.")
@click.option("--solver", "solvers", multiple=True, metavar="LABEL",
              help="Run only this method (repeatable), likewise.")
@click.option("-j", "--n-jobs", type=int, help="Parallel tasks within a cell.")
@click.option("--backend", type=click.Choice(["loky", "dask", "sequential"]),
              help="joblib backend (overrides execution.backend). dask without --scheduler: a "
                   "loopback-only LocalCluster of -j single-threaded workers (with -j 1, joblib "
                   "runs the tasks in the cell's process itself).")
@click.option("--scheduler", metavar="ADDR",
              help="dask scheduler address, e.g. tcp://host:8786 (needs --backend dask or "
                   "execution.backend: dask); the cluster runs as many tasks at once as its "
                   "workers have threads, whatever -j says.")
@click.option("--budget", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Per-fit wall-clock budget (overrides leaderboard.fit_budget_seconds).")
@click.option("--stats-only", is_flag=True,
              help="Only write the statistics of what has run (and move finished tasks' tuning "
                   "fits to tuning_done.csv).")
@click.option("--supersede", is_flag=True,
              help="Move finished rows of tasks the board no longer has (a changed protocol "
                   "setting) to *_superseded.csv; without it such a run stops and lists them.")
@click.option("--results-dir", type=click.Path(file_okay=False), default="results",
              show_default=True)
@click.pass_obj
def leaderboard(obj, quick, config_path, datasets, solvers, n_jobs, backend, scheduler, budget,
                stats_only, supersede, results_dir):
    """Run the leaderboard (every method, every data set, one protocol), then its statistics.

    Cells run through the ordinary runner (resumable, in parts, shared by concurrent runs); a
    fit over the budget marks its cell over budget (–) and a cell that breaks the memory rule is
    marked cannot run. Writes ranks, Friedman/Nemenyi, pairwise Wilcoxon, the critical-difference
    diagram, the time–rank plot and leaderboard.html into RESULTS_DIR/<board name>.
    """
    from .leaderboard.board import load_board
    from .leaderboard.page import write_board_report
    from .leaderboard.run import compact_tuning_log, run_board
    from .run.execution import check_labels

    _exit_on_sigterm()
    _check_jobs(n_jobs)
    config_path = config_path or f"configs/leaderboard{'_quick' if quick else ''}.yaml"
    board = load_board(config_path)
    board = replace(board, budget=budget or board.budget,
                    experiment=replace(board.experiment, **{k: v for k, v in (
                        ("n_jobs", n_jobs), ("backend", backend), ("scheduler", scheduler))
                        if v is not None}))
    if scheduler and board.experiment.backend != "dask":
        _fail(f"--scheduler {scheduler} needs --backend dask (the board's backend is "
              f"{board.experiment.backend})")
    check_labels(board.experiment, datasets, solvers)  # labels that select nothing: one line
    if not stats_only:
        s = run_board(board, results_dir, mirror=obj["mirror"], cache_dir=obj["cache_dir"],
                      datasets=datasets, solvers=solvers, supersede=supersede,
                      echo=lambda m: click.echo(m, err=True))
        click.echo(f"{board.experiment.name}: {s.ran} cells run, {s.done_before} already done, "
                   f"{s.over_budget} over budget, {s.cannot_run} cannot run, {s.failed} failed, "
                   f"{s.no_data} without data")
    board_dir = Path(results_dir) / board.experiment.name
    board_dir.mkdir(parents=True, exist_ok=True)
    if stats_only:
        compact_tuning_log(board_dir)
    for name, path in write_board_report(board, board_dir, obj["mirror"],
                                         obj["cache_dir"]).items():
        click.echo(f"  {name}: {path}")


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
    from .report.check import check_against_baseline, write_baseline

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


@main.command()
@click.argument("config", type=click.Path(dir_okay=False))
def validate(config):
    """Check CONFIG without running anything."""
    exp = _load(config)
    from .experiment.knn import all_tasks

    n = sum(1 for _ in all_tasks(exp))
    click.echo(f"{config}: ok ({len(exp.datasets)} datasets × {len(exp.solvers)} solvers, "
               f"{n} tasks)")


@main.command()
@click.pass_obj
def datasets(obj):
    """List known datasets, their size, the papers using them and where they would load from.

    Installed plug-ins (entry points of group dml_bench.datasets) follow, marked `plug-in` with
    their source and the size their class declares (its code is not run here); without
    --allow-plugins none is imported. A plug-in that cannot be used shows why.
    """
    from .datasets import DATASETS, dataset_status

    def row(name, s, where):
        return (name, f"{s.n_samples}×{s.n_features}", str(s.n_classes), ", ".join(s.papers),
                where or dataset_status(name, mirror=obj["mirror"], cache_dir=obj["cache_dir"]))

    rows = [row(name, s, None) for name, s in DATASETS.items()]
    for plugin in DATASETS.plugins():
        where = f"plug-in {plugin.name} = {plugin.source}"
        if plugin.problem:
            rows.append((plugin.name, "?", "?", "", f"{where}: cannot be used: {plugin.problem}"))
        else:
            rows.append(row(plugin.name, plugin.obj, f"{where}: "
                            + dataset_status(plugin.name, mirror=obj["mirror"],
                                             cache_dir=obj["cache_dir"])))
    _print_table(("name", "n×d", "classes", "papers", "availability"), rows)


@main.command()
@click.argument("names", nargs=-1, required=True)
@click.pass_obj
def fetch(obj, names):
    """Download (or copy from the mirror) and verify datasets NAMES into the cache."""
    from .datasets import DataIntegrityError, DataNotAvailable, dataset_status, fetch_dataset
    from .registry import UnknownNameError

    for name in names:
        try:
            path = fetch_dataset(name, mirror=obj["mirror"], cache_dir=obj["cache_dir"])
        except (UnknownNameError, DataNotAvailable, DataIntegrityError) as exc:
            _fail(str(exc), code=1)
        where = path or f"nothing to fetch ({dataset_status(name)})"
        click.echo(f"{name}: {where}")


@main.command()
def solvers():
    """List solvers, the constraints they consume and their parameters with defaults.

    Installed plug-ins (entry points of group dml_bench.solvers) follow, marked `plug-in` with
    their source (module:object and distribution); one that cannot be used shows why, in one
    line. Planned, not yet implemented methods come last.
    """
    from .solvers import PLANNED, SOLVERS

    def show(name, cls, origin=""):
        # signature of the class, not of cls.__init__: a solver without its own __init__ would
        # list object.__init__'s (*args, **kwargs)
        params = [f"{p.name}={p.default!r}" for p in inspect.signature(cls).parameters.values()]
        summary = (cls.__doc__ or "").strip().splitlines()[:1]
        click.echo(f"{name} [{cls.constraint_kind}]{origin} — {''.join(summary)}")
        click.echo(f"    {', '.join(params) or '(no parameters)'}")

    for name, cls in SOLVERS.items():
        show(name, cls)
    for plugin in SOLVERS.plugins():
        origin = f" plug-in {plugin.name} = {plugin.source}"
        if plugin.problem:
            click.echo(f"{plugin.name}{origin} — cannot be used: {plugin.problem}")
        else:
            show(plugin.name, plugin.obj, origin)
    for name, reason in PLANNED.items():
        click.echo(f"{name} — {reason}")


def _print_table(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for row in (header, *rows):
        click.echo("  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip())


if __name__ == "__main__":  # pragma: no cover
    main()
