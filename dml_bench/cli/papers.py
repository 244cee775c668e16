"""``dmlbench reproduce``: the papers' tables and figures (the reproduction targets)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..run.progress import task_progress
from .base import (_FORCE, _FORCE_SUPERSEDE, _check_jobs, _exit_on_sigterm, _fail, _label_options,
                   _overrides, main)


@main.command()
@click.argument("targets", nargs=-1)
@click.option("--all", "all_targets", is_flag=True, help="Every target that can run here.")
@click.option("--list", "list_targets", is_flag=True, help="List the targets and exit.")
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
@click.option("--results-dir", "--out", type=click.Path(file_okay=False), default="results",
              show_default=True)
@_label_options("the target's config", "the report lists the tasks still to run.")
@click.pass_obj
def reproduce(obj, targets, all_targets, list_targets, quick, precise, check_baseline, n_jobs,
              force, supersede, results_dir, datasets, solvers):
    """Reproduce paper TARGETS (ids as `dmlbench reproduce --list`; e.g. ying2012-table4).

    Each target runs its config (resuming earlier runs) and writes its report; one that cannot
    run here (data not available, protocol not supported) says why and makes the command exit
    with status 3 — unless --all, which skips it. KEY.PATH=VALUE words among the targets set
    config values of every target run, as for `dmlbench run`.
    """
    from ..experiment.schema import ConfigError
    from ..report.kind import comparison_lines
    from ..reproduction.targets import TargetUnavailable, load_targets, reproduce as run_target
    from ..run.runner import Selection

    _exit_on_sigterm()
    _check_jobs(n_jobs)
    if force and supersede:
        _fail(_FORCE_SUPERSEDE)
    registry = load_targets()
    overrides = _overrides([t for t in targets if "=" in t])
    overrides += [f"execution.n_jobs={n_jobs}"] if n_jobs is not None else []
    targets = [t for t in targets if "=" not in t]
    if all_targets:
        targets = [t.id for t in registry.values() if not t.same_runs
                   and (not quick or t.quick) and (not precise or t.precise)]
    if not targets or list_targets:
        for t in registry.values():
            click.echo(f"{t.id:22s} {t.item}: {t.what}")
        return
    from ..registry import UnknownNameError

    for tid in targets:
        if tid not in registry:
            _fail(str(UnknownNameError("reproduction target", tid, list(registry))))
    unavailable, failed = [], []
    version = "quick" if quick else "precise" if precise else "headline"
    for tid in targets:
        try:
            record = run_target(tid, results_root=results_dir, version=version,
                                data=obj["data"], overrides=overrides,
                                select=Selection(datasets, solvers, force, supersede),
                                progress=task_progress(tid),
                                echo=lambda m: click.echo(m, err=True))
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
        for line in comparison_lines(Path(results_dir) / record["experiment"]):
            click.echo(f"  {line}")
        if record["failed"]:
            failed.append(tid)
        if check_baseline:
            from ..report.check import check_against_baseline

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
