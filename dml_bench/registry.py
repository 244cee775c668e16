"""Name → object registries for datasets, constraint generators and solvers, and their plug-ins.

Every stage of the pipeline looks its plug-ins up by the name a YAML config uses. A name is, in
the order tried:

1. a built-in entry, registered by the package (``SOLVERS.register("lmnn", LMNN)``);
2. a source reference ``scheme:rest`` of a scheme the registry's owner registered
   (:meth:`Registry.register_source`; the datasets' ``openml:<id or name>`` and
   ``file:<path>[?label_column=<column>]``), which names data, never code;
3. the name of a Python entry point of the registry's ``group`` (``dml_bench.solvers``,
   ``dml_bench.datasets``), declared by any installed distribution and loaded lazily, the first
   time a config names it;
4. (registries with a group) a reference ``module.path:Attribute`` to an object in an
   importable module.

The constraint generators' registry has no group: it takes no plug-ins, and a reference there is
an unknown name.

**Consent.** Entry points and references (3, 4) are plug-ins: importing one runs its module's
code, and a config, a results folder or a cache may come from someone else. So a plug-in is
imported only with the consent of the user running it (:mod:`dml_bench.common.settings`: the option
``--allow-plugins``, ``DMLBENCH_ALLOW_PLUGINS=1``, or a ``plugins:`` list in the user-level
settings file). Consent is checked at every lookup, also of a plug-in resolved earlier in the
process; without it a lookup is a :class:`PluginConsentError` naming the plug-in and the ways to
consent, and nothing is imported. :meth:`Registry.check_consent` makes the same check without
looking the name up, and :meth:`Registry.check_plugin` both (a config's check reports either
at the key that names the plug-in).

**Only classes.** A plug-in is a class, never a function, a builtin, a module or another object:
looking one up imports its module and checks the class, and does not call it. Then the
registry's ``adapt`` function checks it and makes what the registry holds, again without calling
the plug-in's code:

- a solver (:func:`check_solver`) is a scikit-learn-style estimator class, used as it is;
- a dataset (``datasets.spec.as_dataset_spec``) is a class with the interface of a
  ``DatasetSpec`` as class attributes: ``n_samples``, ``n_features``, ``n_classes`` (the shape
  its data must have) and, optionally, ``description`` (default: its docstring's first line),
  ``papers``, ``files`` (``FileSpec`` s, fetched and verified like a catalogue dataset's),
  ``image_shape``, ``class_names``, ``notes``, ``sparse``, ``binary_cache``; and a method
  ``load(self, paths)`` returning ``(X, y)`` (``paths``: its verified files, empty without
  files). The class is instantiated without arguments and ``load`` called only when the data is
  loaded for a run (never by ``dmlbench validate`` or the listings), and the data is then checked
  against the declared shape like any dataset's.

An object that does not fit, or a module that does not import, is a :class:`PluginError` with a
one-line message naming the entry point or the module. An unknown name raises
:class:`UnknownNameError`, whose message lists the valid names (entry points included) and the
closest match. :meth:`Registry.plugins` lists the installed entry points, each loaded (with
consent) or with the one-line reason it cannot be used (``dmlbench solvers`` / ``dmlbench
datasets``); without consent none is imported, each is listed as not loaded.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from .common.settings import ENV_ALLOW, consent_hint, plugin_allowed, settings_path
from .errors import DMLBenchError

#: what a solver's ``constraint_kind`` may be (see :mod:`dml_bench.solvers.base`)
CONSTRAINT_KINDS = ("pairs", "triplets", "labels", "none")

_REFERENCE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


class UnknownNameError(DMLBenchError, KeyError):
    """A config named a dataset / generator / solver that is not registered."""

    def __init__(self, kind: str, name: str, valid: list[str]):
        self.kind, self.name, self.valid = kind, name, sorted(valid)
        close = difflib.get_close_matches(str(name), self.valid, n=1)
        self.suggestion = close[0] if close else None
        hint = f" Did you mean {self.suggestion!r}?" if self.suggestion else ""
        super().__init__(
            f"unknown {kind} {name!r}.{hint} Valid names: {', '.join(self.valid)}"
        )

    def __str__(self) -> str:  # KeyError would quote the whole message
        return self.args[0]


class PluginError(DMLBenchError, ValueError):
    """A plug-in that cannot be used: its module does not import, its entry point does not load,
    or the object is not what the registry holds (one-line message naming it)."""


class PluginConsentError(PluginError):
    """A config or a call names a plug-in that the user did not consent to import (see
    :mod:`dml_bench.common.settings`); one line naming it and the ways to consent."""


class Registry(Mapping):
    """A read-mostly mapping of names with helpful errors, extended by plug-ins.

    Iteration and ``len`` cover the built-in entries; lookup (``registry[name]``) also resolves
    entry points of the kind's group and ``module:Attribute`` references (see the module
    docstring), with the user's consent, once per process (later lookups return the same object
    after checking the consent again). ``name in registry`` tells whether a name can be looked up
    without loading it (a built-in, an entry point's name, a well-formed reference).

    Parameters
    ----------
    kind : str
        What the registry holds ("dataset", "solver", ...), used in error messages.
    group : str, optional
        The entry-point group of its plug-ins; without one the registry takes no plug-ins (entry
        points or ``module:Attribute`` references).
    adapt : callable, optional
        ``adapt(name, obj, what)``: checks a plug-in object and returns what the registry holds
        (raising :class:`PluginError`); ``what`` names the plug-in for the message.
    """

    def __init__(self, kind: str, group: str | None = None,
                 adapt: Callable[[str, Any, str], Any] | None = None):
        self.kind, self.group, self.adapt = kind, group, adapt
        self._items: dict[str, Any] = {}
        self._plugins: dict[str, Any] = {}
        self._origins: dict[str, tuple[str, str]] = {}  # plug-in name → (consent name, module)
        self._sources: dict[str, Callable[[str], Any]] = {}

    def register(self, name: str, obj: Any = None):
        """Register ``obj`` under ``name``; without ``obj`` acts as a decorator."""
        if obj is None:
            return lambda o: self.register(name, o)
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._items[name] = obj
        return obj

    def register_source(self, scheme: str, resolve: Callable[[str], Any]) -> None:
        """Resolve names ``scheme:rest`` by ``resolve(rest)`` (once per process and name)."""
        if scheme in self._sources:
            raise ValueError(f"{self.kind} source {scheme!r} is registered twice")
        self._sources[scheme] = resolve

    def __getitem__(self, name: str) -> Any:
        if name in self._items:
            return self._items[name]
        if name in self._plugins and self._scheme(name) is None:
            self.check_consent(name)  # at every lookup, not only the first
        if name not in self._plugins:
            self._plugins[name] = self._resolve(name)
        return self._plugins[name]

    def check_consent(self, name: str) -> None:
        """Refuse a name that is a plug-in (an entry point of the group, a ``module:Attribute``
        reference) the user did not consent to import; nothing is imported here.

        Raises
        ------
        PluginConsentError
            ``name`` is a plug-in, and neither ``--allow-plugins`` / ``DMLBENCH_ALLOW_PLUGINS=1``
            nor the settings' ``plugins:`` list allows it (see :mod:`dml_bench.common.settings`).
        SettingsError
            The settings file cannot be read or is not valid.
        """
        origin = self._origin(name)
        if origin is None:
            return
        allow, module = origin
        if not plugin_allowed((name, allow), module):
            raise PluginConsentError(f"{self._consent_what(name)} is a plug-in: importing it runs "
                                     f"its code, so it needs your consent: {consent_hint(allow)}")

    def check_plugin(self, name: str) -> None:
        """Check a name that is a plug-in as far as it can be without running it: the user's
        consent (:meth:`check_consent`), then the lookup (import, the class check, ``adapt``),
        which never calls the plug-in. Nothing for other names (built-ins, source references,
        unknown names).

        Raises
        ------
        PluginConsentError, PluginError, SettingsError
            As :meth:`check_consent` and a lookup.
        """
        if self._origin(name) is not None:
            self[name]

    def _origin(self, name: str) -> tuple[str, str] | None:
        """``(what a plugins: list names to allow it, its module)`` for a plug-in name; ``None``
        for a built-in, a source reference or an unknown name."""
        if name in self._items or self._scheme(name) is not None:
            return None
        if name in self._origins:
            return self._origins[name]
        entry_points = self.entry_points()
        if name in entry_points:
            return name, entry_points[name][0].module
        if self._is_reference(name):
            return name.partition(":")[0], name.partition(":")[0]
        return None

    def _consent_what(self, name: str) -> str:
        entry_points = self.entry_points()
        if name in entry_points:
            return self._entry_point_what(name, entry_points[name][0])
        return f"{self.kind} {name!r} (a reference to module {name.partition(':')[0]!r})"

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        return (name in self._items or name in self._plugins or name in self.entry_points()
                or self._scheme(name) is not None or self._is_reference(name))

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def entry_points(self) -> dict[str, list[metadata.EntryPoint]]:
        """The installed entry points of the registry's group, by name (empty without one)."""
        found: dict[str, list[metadata.EntryPoint]] = {}
        if self.group is not None:
            for ep in metadata.entry_points(group=self.group):
                found.setdefault(ep.name, []).append(ep)
        return found

    def _is_reference(self, name: str) -> bool:
        return self.group is not None and _REFERENCE.fullmatch(name) is not None

    def _scheme(self, name: str) -> str | None:
        scheme = name.partition(":")[0]
        return scheme if ":" in name and scheme in self._sources else None

    def _resolve(self, name: str) -> Any:
        what = f"{self.kind} {name!r}"
        if (scheme := self._scheme(name)) is not None:
            return self._sources[scheme](name.partition(":")[2])
        entry_points = self.entry_points()
        if name in entry_points:
            self._check_declared_once(name, entry_points[name])
            self.check_consent(name)
            obj, what = self._load_entry_point(name, entry_points[name])
        elif self._is_reference(name):
            self.check_consent(name)
            obj = import_reference(name, what)
        else:
            raise UnknownNameError(self.kind, name, list(self._items) + list(entry_points))
        obj = self._checked(name, obj, what)
        self._origins[name] = self._origin(name)
        return obj

    def _checked(self, name: str, obj: Any, what: str) -> Any:
        """A loaded plug-in object as the registry holds it: a class (else a
        :class:`PluginError`), checked and adapted by ``adapt`` (without calling it)."""
        if not inspect.isclass(obj):
            raise PluginError(f"{what}: is a {type(obj).__name__}, not a {self.kind} class "
                              "(plug-ins are classes; see dml_bench.registry)")
        return obj if self.adapt is None else self.adapt(name, obj, what)

    def _check_declared_once(self, name: str, eps: list[metadata.EntryPoint]) -> None:
        if len({ep.value for ep in eps}) > 1:
            origins = [f"{ep.value} ({_distribution(ep)})" for ep in eps]
            raise PluginError(f"{self.kind} {name!r}: entry point of group {self.group} is "
                              f"declared more than once: {'; '.join(origins)}; uninstall one")

    def _load_entry_point(self, name: str, eps: list[metadata.EntryPoint]) -> tuple[Any, str]:
        """The object entry point ``name`` (declared by ``eps``) loads, and how messages name
        it; a :class:`PluginError` when it is declared twice or does not load. The caller has
        checked the user's consent."""
        self._check_declared_once(name, eps)
        what = self._entry_point_what(name, eps[0])
        try:
            return eps[0].load(), what
        except Exception as exc:  # noqa: BLE001 - any import failure is the plug-in's fault
            raise PluginError(f"{what}: cannot load it: {describe(exc)}") from exc

    def _entry_point_what(self, name: str, ep: metadata.EntryPoint) -> str:
        return (f"{self.kind} {name!r} (entry point {name} = {ep.value} ({_distribution(ep)}) "
                f"of group {self.group})")

    def plugins(self) -> list[Plugin]:
        """The installed entry points of the registry's group, by name, as ``dmlbench solvers``
        / ``dmlbench datasets`` list them. With the user's consent each is loaded, checked to be
        a class, and checked and adapted as a lookup would (and then cached like one; neither
        calls it); without it none is imported, and each is listed as not loaded. One that
        cannot be used (no consent, does not import, is declared twice, is not what the registry
        holds, or is hidden by a built-in of the same name) carries its one-line reason instead
        of raising."""
        listed = []
        for name, eps in sorted(self.entry_points().items()):
            source = "; ".join(f"{ep.value} ({_distribution(ep)})" for ep in eps)
            if name in self._items:
                listed.append(Plugin(name, source, problem=f"not used: the built-in {self.kind} "
                                                           f"{name!r} has this name"))
                continue
            try:
                self._check_declared_once(name, eps)
                try:
                    self.check_consent(name)
                except PluginConsentError:
                    listed.append(Plugin(name, source, problem=(
                        f"not loaded: needs --allow-plugins, {ENV_ALLOW}=1 or {name!r} under "
                        f"plugins: in {settings_path()}")))
                    continue
                obj = self._plugins.get(name)
                if obj is None:
                    obj, what = self._load_entry_point(name, eps)
                    obj = self._plugins[name] = self._checked(name, obj, what)
                    self._origins[name] = self._origin(name)
            except DMLBenchError as exc:  # the message without the name, which the list shows
                problem = str(exc)
                for what in (self._entry_point_what(name, eps[0]), f"{self.kind} {name!r}"):
                    problem = problem.removeprefix(f"{what}: ")
                listed.append(Plugin(name, source, problem=problem))
            else:
                listed.append(Plugin(name, source, obj))
        return listed


@dataclass(frozen=True)
class Plugin:
    """An installed entry point as listed by :meth:`Registry.plugins`.

    Attributes
    ----------
    name : str
        The entry point's name, which configs use.
    source : str
        ``module:object (from distribution version)``; several, ``;``-separated, when declared
        more than once.
    obj : object or None
        What a lookup gives (the class, adapted), None when it cannot be used.
    problem : str or None
        Why it cannot be used, in one line (None when it can).
    """

    name: str
    source: str
    obj: Any = None
    problem: str | None = None


def import_reference(reference: str, what: str | None = None) -> Any:
    """The object a ``module.path:Attribute`` reference names (importing the module runs its
    code: :class:`Registry` calls this only with the user's consent).

    Raises
    ------
    PluginError
        The module does not import (with the import error) or has no such attribute.
    """
    what = what or repr(reference)
    module_name, _, attribute = reference.partition(":")
    try:
        obj = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - ImportError, or whatever the module raises
        raise PluginError(f"{what}: cannot import module {module_name!r}: {describe(exc)}") from exc
    for part in attribute.split("."):
        if not hasattr(obj, part):
            raise PluginError(f"{what}: module {module_name!r} has no attribute {attribute!r}")
        obj = getattr(obj, part)
    return obj


def check_solver(name: str, obj: Any, what: str | None = None) -> type:
    """``obj`` if it is a solver class the runner can use, else a :class:`PluginError`.

    A solver is a scikit-learn-style estimator class: constructed from keyword hyper-parameters
    only, with ``get_params``, ``fit(X, y, constraints=...)`` and ``transform`` (or ``predict``
    when its ``evaluation`` is ``"predict"``, ``kneighbors`` when it is ``"local_knn"``), and a
    ``constraint_kind`` among
    :data:`CONSTRAINT_KINDS` saying what ``fit`` consumes (like the built-in
    :class:`~dml_bench.solvers.base.MetricLearner`, which a plug-in may subclass).
    """
    what = what or f"solver {name!r}"
    if not inspect.isclass(obj):
        raise PluginError(f"{what}: is a {type(obj).__name__}, not a solver class")
    problems = []
    evaluated_by = {"predict": "predict", "local_knn": "kneighbors"}
    for method in ("get_params", "fit",
                   evaluated_by.get(getattr(obj, "evaluation", "knn"), "transform")):
        if not callable(getattr(obj, method, None)):
            problems.append(f"has no {method}() method")
    fit = getattr(obj, "fit", None)
    if callable(fit):
        params = inspect.signature(fit).parameters
        if "constraints" not in params and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            problems.append("its fit() takes no `constraints` argument")
    kind = getattr(obj, "constraint_kind", None)
    if kind not in CONSTRAINT_KINDS:
        problems.append(f"its constraint_kind is {kind!r}, not one of {', '.join(CONSTRAINT_KINDS)}")
    if problems:
        raise PluginError(f"{what}: {obj.__module__}.{obj.__qualname__} is not a scikit-learn-style "
                          f"solver: {'; '.join(problems)} (see dml_bench.solvers.base.MetricLearner)")
    return obj


def describe(exc: BaseException, limit: int = 300) -> str:
    """``Type: message`` of an exception, on one line, at most ``limit`` characters."""
    text = " ".join(str(exc).split()).rstrip(".") or "(no message)"
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{type(exc).__name__}: {text}"


def _distribution(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return f"from {dist.name} {dist.version}" if dist is not None else "from an unknown distribution"
