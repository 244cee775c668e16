"""User-level settings, and the user's consent to import plug-ins.

A plug-in (an entry point of a registry's group, or a ``module:Class`` reference in a config) is
Python code: importing it runs its module. A config, a results folder or a dataset cache can come
from someone else, so plug-ins are imported only with the consent of the user running
``dmlbench``, given in one of these ways:

- ``dmlbench --allow-plugins …`` (which sets ``DMLBENCH_ALLOW_PLUGINS=1`` for the worker
  processes), or the environment variable ``DMLBENCH_ALLOW_PLUGINS=1`` (``true``, ``yes``,
  ``on`` too; ``0``, ``false``, ``no``, ``off`` or empty: not every plug-in): every plug-in;
- a ``plugins:`` list in the user-level settings file: the plug-ins it names, each entry a module
  (``mypkg.learners``, which also allows its submodules, so ``mypkg`` allows the whole
  package), a whole reference (``mypkg.learners:MyLearner``) or an entry point's name
  (``my_learner``; its target module allows it too)::

      plugins: [mypkg, my_learner]

The settings file is ``$DMLBENCH_SETTINGS``, else ``$XDG_CONFIG_HOME/dmlbench/settings.yaml``,
else ``~/.config/dmlbench/settings.yaml``; a missing file means no settings. It is read with the
limits of :mod:`dml_bench.common.safe_yaml` (PyYAML's safe loader: no tag builds an object), again
whenever it changes. A file that cannot be read or is not of this form is a
:class:`SettingsError`, one line naming the file and the problem.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import yaml

from ..errors import DMLBenchError
from . import safe_yaml

#: the environment variable that gives consent to every plug-in (set by ``--allow-plugins``)
ENV_ALLOW = "DMLBENCH_ALLOW_PLUGINS"
#: the environment variable naming the settings file
ENV_SETTINGS = "DMLBENCH_SETTINGS"
#: the keys a settings file may hold
KEYS = ("plugins",)

_YES = ("1", "true", "yes", "on")
_NO = ("", "0", "false", "no", "off")


class SettingsError(DMLBenchError, ValueError):
    """The settings file, or ``DMLBENCH_ALLOW_PLUGINS``, cannot be used (one-line message)."""


def settings_path() -> Path:
    """The user-level settings file (which need not exist): ``$DMLBENCH_SETTINGS``, else
    ``$XDG_CONFIG_HOME/dmlbench/settings.yaml``, else ``~/.config/dmlbench/settings.yaml``."""
    if os.environ.get(ENV_SETTINGS):
        return Path(os.environ[ENV_SETTINGS]).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "dmlbench" / "settings.yaml"


def load_settings() -> dict:
    """The settings as ``{key: value}`` for every key of :data:`KEYS` (``plugins``: a tuple of
    names, empty without a file).

    Raises
    ------
    SettingsError
        The file cannot be read, is not YAML (or beyond the limits of
        :mod:`~dml_bench.common.safe_yaml`), is not a mapping, has an unknown key or a
        ``plugins:`` that is not a list of names.
    """
    path = settings_path()
    try:
        st = path.stat()
    except FileNotFoundError:
        return {"plugins": ()}
    except OSError as exc:
        raise SettingsError(f"settings file {path}: cannot be read: {exc.strerror or exc}") from exc
    return dict(_read(str(path), st.st_size, st.st_mtime_ns, st.st_ino))


def plugins_allowed() -> bool:
    """Whether every plug-in may be imported: ``DMLBENCH_ALLOW_PLUGINS`` is set to a yes.

    Raises
    ------
    SettingsError
        ``DMLBENCH_ALLOW_PLUGINS`` is set to something that is neither a yes nor a no.
    """
    value = os.environ.get(ENV_ALLOW, "").strip().lower()
    if value in _YES:
        return True
    if value in _NO:
        return False
    raise SettingsError(f"{ENV_ALLOW}={os.environ[ENV_ALLOW]!r}: expected 1 (import plug-ins) "
                        "or 0 (do not)")


def plugin_allowed(names: tuple[str, ...], module: str) -> bool:
    """Whether the user consents to import a plug-in: :func:`plugins_allowed`, or the settings'
    ``plugins:`` list names one of ``names`` (the reference, or the entry point's name), or
    ``module`` or a package holding it."""
    if plugins_allowed():
        return True
    allowed = set(load_settings()["plugins"])
    parts = module.split(".")
    modules = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    return bool(allowed & (set(names) | modules))


def consent_hint(name: str) -> str:
    """How to give consent to a plug-in called ``name`` (the end of a one-line message)."""
    return (f"pass --allow-plugins, set {ENV_ALLOW}=1, or list {name!r} under plugins: in "
            f"{settings_path()}")


@functools.lru_cache(maxsize=4)
def _read(path: str, size: int, mtime_ns: int, inode: int) -> dict:
    """The checked content of the settings file ``path`` (read again when its size, time or inode
    change)."""
    def fail(problem: str, exc: BaseException | None = None):
        raise SettingsError(f"settings file {path}: {problem}") from exc

    try:
        data = safe_yaml.load_file(path)
    except OSError as exc:
        fail(f"cannot be read: {exc.strerror or exc}", exc)
    except yaml.YAMLError as exc:
        fail(safe_yaml.describe(exc), exc)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        fail(f"expected a mapping (plugins: [...]), got {type(data).__name__}")
    unknown = [str(key) for key in data if key not in KEYS]
    if unknown:
        fail(f"unknown key {unknown[0]!r}; valid keys: {', '.join(KEYS)}")
    plugins = data.get("plugins") or []
    if not isinstance(plugins, list) or not all(isinstance(p, str) and p.strip() for p in plugins):
        got = " ".join(f"{type(plugins).__name__} {plugins!r}".split())
        fail("plugins: expected a list of module or entry-point names, got "
             + (got if len(got) <= 200 else got[:197] + "..."))
    return {"plugins": tuple(p.strip() for p in plugins)}
