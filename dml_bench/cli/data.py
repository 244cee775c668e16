"""What there is to run on and with: ``datasets``, ``fetch``, ``solvers``."""

from __future__ import annotations

import inspect

import click

from .base import _fail, main


@main.command()
@click.pass_obj
def datasets(obj):
    """List known datasets, their size, the papers using them and where they would load from.

    Installed plug-ins (entry points of group dml_bench.datasets) follow, marked `plug-in` with
    their source and the size their class declares (its code is not run here); without
    --allow-plugins none is imported. A plug-in that cannot be used shows why.
    """
    from ..datasets import DATASETS, dataset_status

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
    from ..datasets import DataIntegrityError, DataNotAvailable, dataset_status, fetch_dataset
    from ..registry import UnknownNameError

    for name in names:
        try:
            path = fetch_dataset(name, mirror=obj["mirror"], cache_dir=obj["cache_dir"])
        except (UnknownNameError, DataNotAvailable, DataIntegrityError) as exc:
            _fail(str(exc), code=1)
        where = path or f"nothing to fetch ({dataset_status(name)})"
        click.echo(f"{name}: {where}")


@main.command()
def solvers():
    """List solvers, the constraints they consume and their parameters with defaults
    (``verbose``, which every learner takes, is said once at the end).

    Installed plug-ins (entry points of group dml_bench.solvers) follow, marked `plug-in` with
    their source (module:object and distribution); one that cannot be used shows why, in one
    line. Planned, not yet implemented methods come last.
    """
    from ..solvers import PLANNED, SOLVERS

    def show(name, cls, origin=""):
        # signature of the class, not of cls.__init__: a solver without its own __init__ would
        # list object.__init__'s (*args, **kwargs)
        params = [f"{p.name}={p.default!r}" for p in inspect.signature(cls).parameters.values()
                  if p.name != "verbose"]  # every learner takes it: said once, at the end
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
    click.echo("Every learner also takes verbose=0 (1: one line per fit; 2: progress too).")


def _print_table(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for row in (header, *rows):
        click.echo("  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip())


if __name__ == "__main__":  # pragma: no cover
    main()
