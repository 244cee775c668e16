"""The ``dmlbench`` group and what its commands share: one-line errors, SIGTERM handling, the
options and the config loading of the commands that run experiments."""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import replace
from pathlib import Path

import click

from .. import __version__


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
    if scheduler and exp.execution.backend != "dask":
        _fail(f"--scheduler {scheduler} needs --backend dask (the config's backend is "
              f"{exp.execution.backend})")
    if exp.execution.timing and n_jobs not in (None, 1):
        _fail(f"--timing runs one task at a time so that fit times compare: it cannot be "
              f"combined with -j {n_jobs}")
    if exp.execution.timing and backend == "dask":
        _fail("--timing runs one task at a time in this process so that fit times compare: it "
              "cannot be combined with --backend dask")


def _load(config_path: str, overrides=(), **execution):
    """The validated config, with its ``key.path=value`` ``overrides`` and the ``execution``
    options given on the command line."""
    from ..experiment.config import load_config

    # a ConfigError is one line (_OneLineErrors)
    exp = load_config(config_path, overrides=_overrides(overrides))
    given = {k: v for k, v in execution.items() if v is not None}
    return replace(exp, execution=replace(exp.execution, **given))


def _overrides(words) -> list[str]:
    """``key.path=value`` words, each checked for its ``=`` (one line otherwise)."""
    for word in words:
        if "=" not in word or word.startswith("="):
            _fail(f"{word!r}: expected an override key.path=value (e.g. split.n_splits=2)")
    return list(words)


#: the overrides argument of the commands that read a config
_OVERRIDES = click.argument("overrides", nargs=-1, metavar="[KEY.PATH=VALUE]...")


class _OneLineErrors(click.Group):
    """Every fault of the input or the environment ends in one line and an exit status, never a
    traceback: a bad option or argument (click's usage errors) and the project's own errors
    (:class:`~dml_bench.errors.DMLBenchError`) with status 2, file-system errors (disk full,
    permissions) with 1. ``DMLBENCH_DEBUG=1`` re-raises."""

    def main(self, *args, **kwargs):
        if not kwargs.get("standalone_mode", True):
            return super().main(*args, **kwargs)
        try:
            code = super().main(*args, **{**kwargs, "standalone_mode": False})
        except click.exceptions.NoArgsIsHelpError as exc:  # the help text, not an error
            click.echo(exc.ctx.get_help() if exc.ctx else exc.format_message())
            sys.exit(0)
        except click.UsageError as exc:
            command = exc.ctx.command_path if exc.ctx else "dmlbench"
            _fail(f"{' '.join(exc.format_message().split())} (see `{command} --help`)",
                  code=exc.exit_code)
        except click.ClickException as exc:
            _fail(" ".join(exc.format_message().split()), code=exc.exit_code)
        except click.Abort:
            click.echo("aborted", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx):
        from ..errors import DMLBenchError

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
    from ..experiment.sections import DataPlace

    place = DataPlace(os.environ.get("DMLBENCH_DATA_MIRROR"), os.environ.get("DMLBENCH_CACHE"))
    ctx.obj = {"mirror": place.mirror, "cache_dir": place.cache_dir, "data": place}
