"""Reproduction targets (``targets.yaml`` beside this module): one per table or figure of the
papers.

``dmlbench reproduce <id>`` runs a target's config (resumable, like ``dmlbench run``) and writes
its report, or exits with the reason it cannot run here (data not available, protocol not
supported). ``--quick`` runs the target's reduced version (``quick:``: fewer data sets, splits
and solvers) into ``results/<name>_quick``, the one CI checks against
``results/baselines/<id>_quick.csv``. ``dmlbench report --all`` writes ``results/REPRODUCTION.md``
and ``REPRODUCTION.html`` from whatever results exist (:mod:`dml_bench.reproduction.report`).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from ..common.safe_write import write_text
from ..errors import DMLBenchError, warn
from ..experiment.config import ConfigError, load_config
from ..experiment.sections import DEFAULT_PLACE, DataPlace, Experiment
from ..experiment.kinds import task_kind
from ..registry import Registry, describe
from ..report.knn import PRECISE_SUFFIX, dataset_points
from ..run.results import RunStore
from ..run.runner import EVERY_TASK, Selection

TARGETS_FILE = Path(__file__).parent / "targets.yaml"
RUN_RECORD = "reproduce.json"


class TargetUnavailable(DMLBenchError, RuntimeError):
    """A target that cannot be reproduced here; the message says why."""


@dataclass(frozen=True)
class Diagnosis:
    """A committed protocol sweep that a target's report shows (``diagnoses:`` in
    ``targets.yaml``): its ``folder`` relative to the results root and two CSV files in it.

    ``cells``: one row per ``dataset``, ``solver`` label and protocol variant, with the cell's
    mean in the column ``value``; the report shows each compared cell's lowest–highest mean over
    the variants. ``variants``: one row per protocol variant, its ``axes`` columns and
    ``cells``, ``matched``, ``mean_abs_gap`` and ``headline``; the report names the headline's
    and the best variant's matches. On a figure's target, which has no numbers to match,
    ``variants`` needs only the ``axes`` columns and ``headline``, and the report shows each
    variant's mean per data set and method.
    """

    folder: str
    cells: str
    variants: str
    axes: tuple[str, ...]
    value: str = "error"


_DIAGNOSIS_KEYS = ("folder", "cells", "variants", "axes", "value")


@dataclass(frozen=True)
class Referee:
    """Another implementation of the same methods run on our splits (``referees:`` in
    ``targets.yaml``): ``summary``, a CSV in ``folder`` (relative to the results root) with one
    row per ``dataset`` and ``solver`` label: ``ours``, ``referee`` (their means), ``p`` (a paired
    test over the splits) and ``flagged`` (they disagree by more than the split noise); ``name``
    says which implementation it is."""

    name: str
    folder: str
    summary: str


_REFEREE_KEYS = ("name", "folder", "summary")


@dataclass(frozen=True)
class Target:
    """One table or figure of a paper and how it is reproduced (see ``targets.yaml``)."""

    id: str
    paper: str
    item: str
    what: str
    config: str | None = None
    same_runs: str | None = None
    tables: tuple[str, ...] = ()
    figures: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    unsupported: str | None = None
    quick: dict = field(default_factory=dict)
    notes: str = ""
    function: str | None = None
    output: str | None = None
    params: dict = field(default_factory=dict)
    precise: dict = field(default_factory=dict)
    diagnoses: tuple[Diagnosis, ...] = ()
    referees: tuple[Referee, ...] = ()


def load_targets(path: Path = TARGETS_FILE) -> Registry:
    """The targets of ``targets.yaml``, in file order, as a registry (unknown ids list the valid)."""
    registry = Registry("reproduction target")
    for tid, spec in yaml.safe_load(path.read_text(encoding="utf-8"))["targets"].items():
        spec = dict(spec)
        for key in ("tables", "figures", "requires"):
            spec[key] = tuple(spec.get(key) or ())
        spec["notes"] = " ".join(str(spec.get("notes") or "").split())
        if spec.get("unsupported"):
            spec["unsupported"] = " ".join(spec["unsupported"].split())
        spec["diagnoses"] = _diagnoses(spec.get("diagnoses"), str(path), f"targets.{tid}")
        spec["referees"] = _referees(spec.get("referees"), str(path), f"targets.{tid}")
        registry.register(tid, Target(id=tid, **spec))
    return registry


def _diagnoses(entries, source: str, where: str) -> tuple[Diagnosis, ...]:
    """A target's ``diagnoses:`` list as :class:`Diagnosis` entries.

    Raises
    ------
    ConfigError
        On an entry that is not a mapping of the keys of :class:`Diagnosis` with ``folder`` (a
        relative path), ``cells`` and ``variants`` (names of CSV files) and ``axes`` (a list of
        column names).
    """
    if entries is None:
        return ()
    if not isinstance(entries, list):
        raise ConfigError(source, f"{where}.diagnoses", "must be a list of mappings")
    diagnoses = []
    for i, entry in enumerate(entries):
        key = f"{where}.diagnoses[{i}]"
        if not isinstance(entry, dict):
            raise ConfigError(source, key, f"must be a mapping with keys "
                              f"{', '.join(_DIAGNOSIS_KEYS)}")
        unknown = sorted(set(entry) - set(_DIAGNOSIS_KEYS))
        if unknown:
            raise ConfigError(source, f"{key}.{unknown[0]}",
                              f"unknown key; valid keys: {', '.join(_DIAGNOSIS_KEYS)}")
        folder = entry.get("folder")
        if not isinstance(folder, str) or not folder or Path(folder).is_absolute():
            raise ConfigError(source, f"{key}.folder", "must be a folder relative to the results "
                              "root")
        for name in ("cells", "variants"):
            file = entry.get(name)
            if not isinstance(file, str) or not file.endswith(".csv") or Path(file).is_absolute():
                raise ConfigError(source, f"{key}.{name}", "must be the name of a CSV file in the "
                                  "diagnosis's folder")
        axes = entry.get("axes")
        if not (isinstance(axes, list) and axes and all(isinstance(a, str) for a in axes)):
            raise ConfigError(source, f"{key}.axes", "must be a list of column names")
        value = entry.get("value", "error")
        if not isinstance(value, str):
            raise ConfigError(source, f"{key}.value", "must be a column name")
        diagnoses.append(Diagnosis(folder, entry["cells"], entry["variants"], tuple(axes),
                                   value))
    return tuple(diagnoses)


def config_target(target: Target, targets: Registry) -> Target:
    """The target whose config (or ``function``) produces ``target``'s runs (itself, or its
    ``same_runs``)."""
    return targets[target.same_runs] if target.same_runs else target


def target_experiment(target: Target, targets: Registry, quick: bool = False,
                      root: Path = Path("."), precise: bool = False,
                      overrides: Sequence[str] = ()) -> Experiment | None:
    """The (validated) experiment of a target; None for targets without a config.

    ``quick``: its reduced version (:func:`quick_version`); ``precise``: its precise companion
    (:func:`precise_version`); ``overrides``: ``key.path=value`` settings of its config
    (:func:`~dml_bench.experiment.config.apply_overrides`)."""
    source = config_target(target, targets)
    if source.config is None:
        return None
    exp = load_config(root / source.config, check_data=False, overrides=overrides)
    if quick and precise:
        raise TargetUnavailable(f"{target.id}: choose one of the quick and the precise version")
    if precise:
        return precise_version(exp, source.precise)
    return quick_version(exp, source.quick) if quick else exp


def quick_version(exp: Experiment, quick: dict) -> Experiment:
    """``exp`` reduced as ``quick`` says (datasets/solvers kept by label, n_splits), renamed
    ``<name>_quick`` so its results never mix with the full run's."""
    if not quick:
        raise TargetUnavailable(f"{exp.name} has no quick version (no `quick:` in targets.yaml)")
    datasets = [d for d in exp.datasets if d.label in quick.get("datasets", [d.label])]
    solvers = [s for s in exp.solvers if s.label in quick.get("solvers", [s.label])]
    n_splits = quick.get("n_splits", exp.split.n_splits)
    datasets = [replace(d, n_splits=min(d.n_splits or n_splits, n_splits)) for d in datasets]
    return replace(exp, name=f"{exp.name}_quick", datasets=tuple(datasets),
                   solvers=tuple(solvers), split=replace(exp.split, n_splits=n_splits))


def precise_version(exp: Experiment, precise: dict) -> Experiment:
    """``exp``'s precise companion, as ``precise`` (targets.yaml) declares it.

    The same config with ``n_splits`` splits (100) on the data sets with fewer than ``max_n``
    points (2 000; their ``n_samples`` subset counts) and only the solver labels listed in
    ``solvers`` (explicitly: cheap, untuned ones), renamed ``<name>_precise``. The experiment's
    ``n_splits`` is raised and a data set entry without its own ``n_splits`` keeps none, so
    split ``i`` has the headline's seed (``splits.derive_seed(seed, data set, i)``) and splits
    0–9 are the headline's tasks, with the same task ids.
    """
    if not precise:
        raise TargetUnavailable(f"{exp.name} has no precise version (no `precise:` in "
                                "targets.yaml)")
    n_splits, max_n = int(precise.get("n_splits", 100)), int(precise.get("max_n", 2000))
    labels = list(precise.get("solvers") or [])
    unknown = sorted(set(labels) - {s.label for s in exp.solvers})
    if not labels or unknown:
        raise TargetUnavailable(f"{exp.name}: `precise: solvers:` must list solver labels of "
                                f"the config; {'unknown ' + str(unknown) if unknown else 'none'}")
    solvers = tuple(s for s in exp.solvers if s.label in labels)
    datasets = []
    for d in exp.datasets:
        if dataset_points(d.name, d.n_samples) >= max_n:
            continue
        kept = tuple(x for x in d.solvers if x in labels) if d.solvers else None
        if d.solvers and not kept:
            continue
        datasets.append(replace(d, solvers=kept or d.solvers,
                                n_splits=None if d.n_splits is None else n_splits))
    if not datasets:
        raise TargetUnavailable(f"{exp.name}: no data set with fewer than {max_n} points")
    return replace(exp, name=f"{exp.name}{PRECISE_SUFFIX}", datasets=tuple(datasets),
                   solvers=solvers, split=replace(exp.split, n_splits=n_splits))


def availability(target: Target, exp: Experiment | None, data: DataPlace = DEFAULT_PLACE,
                 fetch: bool = False) -> str | None:
    """Why ``target`` cannot run here (None when it can).

    Checks ``unsupported``, then the ``requires`` datasets and the data the experiment's task
    kind reads beyond them (:attr:`~dml_bench.experiment.kind.TaskKind.data_problem`); with
    ``fetch`` a dataset missing locally is fetched (network), otherwise only local availability
    (mirror, cache, bundled, generated) counts. Datasets of the config that are missing only
    skip their rows.
    """
    from ..datasets import DataNotAvailable, dataset_status, load_dataset

    mirror, cache_dir = data.mirror, data.cache_dir
    missing = []
    for name in target.requires:
        if fetch:
            try:
                load_dataset(name, mirror=mirror, cache_dir=cache_dir)
            except DataNotAvailable as exc:
                missing.append(f"{name} ({exc})")
        elif dataset_status(name, mirror=mirror, cache_dir=cache_dir) == "network needed":
            missing.append(f"{name} (not in the mirror or cache; {_how_to_get(name)})")
    problem = exp is not None and task_kind(exp).data_problem(exp, data, load=fetch)
    missing += [problem] if problem else []
    reasons = []
    if missing:
        reasons.append("data not available: " + "; ".join(missing))
    if target.unsupported:
        reasons.append("not supported yet: " + target.unsupported)
    # a same_runs target without an experiment reads a function target's run
    if exp is None and not (target.unsupported or target.function or target.same_runs):
        reasons.append("no config for this target")
    return "; ".join(reasons) or None


def _how_to_get(name: str) -> str:
    """``dmlbench fetch NAME``, or for files without a download source where to put them."""
    from ..datasets import DATASETS

    by_hand = [f.relpath for f in DATASETS[name].files if f.url is None]
    if not by_hand:
        return f"`dmlbench fetch {name}`"
    return (f"no download source: supply {', '.join(by_hand)} in the cache or a mirror folder; "
            f"format: docs/reproducing.md, User-supplied data, or the message of `dmlbench fetch {name}`")


def reproduce(target_id: str, *, results_root: Path | str = "results", version: str = "headline",
              data: DataPlace = DEFAULT_PLACE, select: Selection = EVERY_TASK,
              overrides: Sequence[str] = (), progress=None, echo=print) -> dict:
    """Run one target and write its report; returns the run record (also ``reproduce.json``).

    Parameters
    ----------
    target_id, results_root
        The target (``dmlbench reproduce`` lists them) and the parent of its results folder.
    version : {"headline", "quick", "precise"}
        The target's own config, its reduced version (:func:`quick_version`), or its precise
        companion (:func:`precise_version`), run into ``results/<name>_precise`` before the
        headline's report is rewritten with its columns
        (:func:`~dml_bench.report.knn.add_precise_columns`).
    data : DataPlace
        The data mirror and the datasets' cache.
    select : Selection
        The dataset and solver labels to run (the report lists the tasks still to run), and
        ``force`` / ``supersede`` as in :func:`~dml_bench.run.runner.run_experiment`.
    overrides : sequence of str
        ``key.path=value`` settings of the target's config
        (:func:`~dml_bench.experiment.config.apply_overrides`; ``execution.n_jobs=2``...).
    progress, echo
        The progress bar and the messages, as in :func:`~dml_bench.run.runner.run_experiment`.

    Raises
    ------
    TargetUnavailable
        With the reason, when the target cannot run here.
    """
    from ..report.kind import write_report
    from ..run.runner import run_experiment

    targets = load_targets()
    target = targets[target_id]
    quick, precise = version == "quick", version == "precise"
    if precise and (target.function or target.same_runs):
        raise TargetUnavailable(f"{target_id} has no precise version (it runs no splits of its "
                                "own)")
    exp = (target_experiment(target, targets, quick, precise=precise, overrides=overrides)
           if not target.unsupported else None)
    source = config_target(target, targets)
    reason = availability(target, exp, data, fetch=True) or (
        availability(source, exp, data, fetch=True)
        if source.function and source is not target else None)
    if reason:
        raise TargetUnavailable(f"{target_id}: {reason}")
    if source.function:  # the function target's run (a same_runs target reruns its source)
        if select.datasets or select.solvers:
            raise TargetUnavailable(f"{target_id} has no datasets or solvers to choose from")
        return _run_function(source, Path(results_root), quick)
    out_dir = Path(results_root) / exp.name
    prior = 0 if select.force else len(RunStore(out_dir).finished())
    # an earlier run's rows, or an interrupted run's tuning fits, are work this run continues
    resumed = not select.force and (prior > 0 or _previous(out_dir, target_id).get("interrupted", False))
    start, wall = dt.datetime.now(dt.timezone.utc), time.perf_counter()
    record = {"target": target_id, "experiment": exp.name, "quick": quick,
              **({"precise": True} if precise else {}),
              "started_at": start.isoformat(timespec="seconds"), "n_jobs": exp.execution.n_jobs,
              "cpu_count": os.cpu_count(),
              "datasets": list(select.datasets) if select.datasets else "all",
              "solvers": list(select.solvers) if select.solvers else "all"}
    try:
        summary = run_experiment(exp, results_root, data=data, select=select, progress=progress,
                                 echo=echo)
    except (KeyboardInterrupt, SystemExit):  # the rows written so far are kept: so is their time
        ran = len(RunStore(out_dir).finished()) - prior
        record.update(wall_seconds=round(time.perf_counter() - wall, 1), tasks=None, ran=ran,
                      done_before=prior, failed=None, interrupted=True, files=[])
        _update_record(out_dir / RUN_RECORD, target_id, record, resumed)
        raise
    record.update(wall_seconds=round(time.perf_counter() - wall, 1), tasks=summary.total,
                  ran=summary.ran, done_before=summary.done_before, failed=summary.failed,
                  files=sorted(write_report(out_dir)))
    _update_record(out_dir / RUN_RECORD, target_id, record, resumed)
    headline = Path(results_root) / exp.name.removesuffix(PRECISE_SUFFIX)
    if precise and (headline / "runs.csv").is_file():
        write_report(headline)  # its comparisons gain the precise columns
    return record


def _run_function(target: Target, results_root: Path, quick: bool) -> dict:
    """A target that is its own experiment (``function``): call it into ``results/<output>``."""
    import importlib

    if quick:
        raise TargetUnavailable(f"{target.id} has no quick version")
    module, name = target.function.split(":")
    out_dir = results_root / target.output
    out_dir.mkdir(parents=True, exist_ok=True)
    start, wall = dt.datetime.now(dt.timezone.utc), time.perf_counter()
    written = getattr(importlib.import_module(module), name)(out_dir, **target.params)
    record = {"target": target.id, "experiment": target.output, "quick": False,
              "started_at": start.isoformat(timespec="seconds"),
              "wall_seconds": round(time.perf_counter() - wall, 1), "tasks": 1, "ran": 1,
              "done_before": 0, "failed": 0, "n_jobs": 1, "cpu_count": os.cpu_count(),
              "files": sorted(str(p) for p in written.values() if isinstance(p, (str, Path)))}
    _update_record(out_dir / RUN_RECORD, target.id, record, resumed=False)
    return record


def _previous(out_dir: Path, target_id: str) -> dict:
    """The target's record in ``out_dir/reproduce.json`` ({} when none)."""
    path = out_dir / RUN_RECORD
    return json.loads(path.read_text()).get(target_id, {}) if path.is_file() else {}


def _update_record(path: Path, target_id: str, record: dict, resumed: bool) -> None:
    """Keep one record per target in ``reproduce.json``; a run that continued earlier results
    (``resumed``: a resumed or interrupted run, or another part of the datasets) adds its wall
    time."""
    try:
        records = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        warn(f"{path} is not a JSON record ({describe(exc)}); it is written afresh")
        records = {}
    if not isinstance(records, dict):
        records = {}
    old = records.get(target_id)
    if not isinstance(old, dict) or not isinstance(old.get("wall_seconds"), (int, float)):
        old = None
    if old and resumed:  # the work of earlier runs counts too
        record["wall_seconds"] = round(old["wall_seconds"] + record["wall_seconds"], 1)
        record["started_at"] = old.get("started_at", record["started_at"])
        for part in ("datasets", "solvers"):
            before = old.get(part, "all")
            before = before if isinstance(before, list) else "all"
            record[part] = ("all" if "all" in (before, record[part])
                            else list(dict.fromkeys(before + record[part])))
    records[target_id] = record
    write_text(path, json.dumps(records, indent=2) + "\n")  # never through a symlink


def _referees(entries, source: str, where: str) -> tuple[Referee, ...]:
    """A target's ``referees:`` list as :class:`Referee` entries (each a mapping of
    ``name``, ``folder`` and ``summary``)."""
    if entries is None:
        return ()
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ConfigError(source, f"{where}.referees", "must be a list of mappings")
    referees = []
    for i, entry in enumerate(entries):
        key = f"{where}.referees[{i}]"
        for unknown in set(entry) - set(_REFEREE_KEYS):
            raise ConfigError(source, f"{key}.{unknown}",
                              f"unknown key; valid keys: {', '.join(_REFEREE_KEYS)}")
        for name in _REFEREE_KEYS:
            if not isinstance(entry.get(name), str) or not entry[name]:
                raise ConfigError(source, f"{key}.{name}", "must be a non-empty string")
        if Path(entry["folder"]).is_absolute() or not entry["summary"].endswith(".csv"):
            raise ConfigError(source, key, "folder must be relative to the results root and "
                              "summary the name of a CSV file in it")
        referees.append(Referee(entry["name"], entry["folder"], entry["summary"]))
    return tuple(referees)
