"""A k-NN task and its data: the split, preprocessing and constraints of one (dataset, split).

A task is one (dataset, split, solver) of an experiment (:class:`Task`, :func:`plan`). Its
data flow up to the fit: dataset (+ subsample) → split → preprocessing fitted on the training
part → constraints from the training part only (:func:`prepare_split`), then the solver fit
(:func:`fit_task_solver`). Seeds derive from (experiment seed, dataset, split) only, so results
do not depend on ``n_jobs`` or task order. Used by the runner (:mod:`dml_bench.run.runner`), the
tuning fits (:mod:`dml_bench.run.tuning`) and the benchmarks.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import scipy.sparse

from ..constraints import generate as generate_constraints
from ..splits import derive_seed, split_indices, subsample_indices, tuning_parts
from .kind import ConfigRules, TaskKind
from .schema import RETRIEVAL_KEYS
from .sections import RetrievalSpec, ConstraintSpec, DEFAULT_PLACE, DataPlace, DatasetEntry, EvaluationSpec, Experiment, SolverEntry, SplitSpec


@dataclass(frozen=True)
class Task:
    """One (dataset, split, solver) of an experiment, with the config sections it depends on;
    everything one worker needs, hashable so prepared splits can be cached per worker."""

    experiment: str
    dataset: DatasetEntry
    split: int
    solver: SolverEntry
    splitting: SplitSpec
    constraints: ConstraintSpec
    evaluation: EvaluationSpec
    data: DataPlace = DEFAULT_PLACE
    # filled in from tuning.csv once the task's ``tune:`` fits are done (not part of task_id)
    tuned: tuple = ()
    tuning_error: float | None = None
    tuning_time: float | None = None

    @functools.cached_property
    def data_digest(self) -> str | None:
        """sha256 of the task's data when its name does not fix it: a user's file, OpenML data,
        a plug-in's arrays (None for the catalogue's datasets; see
        :func:`~dml_bench.datasets.loader.dataset_digest`). Computed once per task object and
        pickled with it, so a worker reports the id under which the run planned and claimed the
        task."""
        from ..datasets.loader import dataset_digest

        return dataset_digest(self.dataset.name, mirror=self.data.mirror,
                              cache_dir=self.data.cache_dir)

    @property
    def task_id(self) -> str:
        """Hash of every setting that changes the task's result (not paths or n_jobs).

        The solver enters with all its effective parameters (defaults included), so changing a
        default recomputes the tasks that relied on it; a ``tune:`` block enters as given (the
        values it chooses follow from it). Data whose name does not fix it enters by its content
        (:attr:`data_digest`), so a file changed in place makes new tasks; the ids of tasks on
        the catalogue's datasets carry no digest.
        """
        solver = {"name": self.solver.name, "label": self.solver.label,
                  "params": self.solver_params(tuned=False, identifying=True)}
        if self.solver.tune:
            solver["tune"] = self.solver.tune.to_dict()
        dataset = {**asdict(self.dataset), "preprocessing": self.dataset.preprocessing.to_dict()}
        if dataset["solvers"] is None:  # keep the ids of configs without the restriction
            del dataset["solvers"]
        del dataset["solver_params"]  # they enter as the solver's own (DatasetEntry.params_of)
        splitting, evaluation = self.splitting, self.evaluation
        key = {"dataset": dataset, "split": self.split, "solver": solver,
               "seed": splitting.seed, "train_fraction": splitting.train_fraction,
               "validation_fraction": splitting.validation_fraction,
               **({"predefined": True} if splitting.predefined else {}),
               "stratify": splitting.stratify, "generator": self.constraints.generator,
               "generator_params": self.constraints.params, "knn_k": evaluation.knn_k,
               "tie_break": evaluation.tie_break}
        if evaluation.retrieval is not None:  # k-NN ids carry none
            key["retrieval"] = evaluation.retrieval.to_dict()
        digest = self.data_digest
        if digest is not None:
            key["data_sha256"] = digest
        return hashlib.sha1(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def solver_params(self, tuned: bool = True, identifying: bool = False) -> dict:
        """The solver's parameters as it runs: tuned and config values over the defaults
        (``identifying``: without those that do not change the fit, as the task id takes them,
        :func:`~dml_bench.solvers.base.identifying_params`)."""
        from ..solvers import SOLVERS
        from ..solvers.base import identifying_params

        params = {**self.solver.params, **dict(self.tuned)} if tuned else dict(self.solver.params)
        if self.solver.name not in SOLVERS:  # a planned solver: only the config's values exist
            return params
        solver = SOLVERS[self.solver.name](**params)
        return identifying_params(solver) if identifying else solver.get_params()


def all_tasks(exp: Experiment, data: DataPlace = DEFAULT_PLACE):
    """Every (dataset, split, solver) task of ``exp``, runnable or not."""
    for entry in exp.datasets:
        for solver in exp.solvers:
            if entry.solvers and solver.label not in entry.solvers:
                continue  # the dataset entry restricts its solvers
            own = entry.params_of(solver)
            for split in range(entry.n_splits or exp.split.n_splits):
                yield Task(exp.name, entry, split, own, exp.split, exp.constraints,
                           exp.evaluation, data)


def plan(exp: Experiment, data: DataPlace = DEFAULT_PLACE,
         check_data: Callable[[str], str | None] | None = None) -> tuple[list[Task], list]:
    """All tasks of ``exp`` and the (dataset, solver, reason) combinations that cannot run.

    ``check_data(name)`` returns a reason when a dataset cannot be loaded (default: try to load it,
    fetching into the cache if needed).
    """
    from ..solvers import PLANNED

    check_data = check_data or functools.partial(_data_problem, data=data)
    problems = {entry.name: check_data(entry.name) for entry in exp.datasets}
    tasks, skipped = [], {}
    for task in all_tasks(exp, data):
        reason = problems[task.dataset.name] or PLANNED.get(task.solver.name)
        if reason:
            skipped.setdefault((task.dataset.label, task.solver.label), reason)
        else:
            tasks.append(task)
    return tasks, [(d, s, reason) for (d, s), reason in skipped.items()]


def _data_problem(name: str, data: DataPlace) -> str | None:
    """Why the dataset ``name`` cannot be loaded (``data not available: …``), or None.

    A fault of the data is a reason, not an error of the run: the loaders' own
    (:class:`~dml_bench.datasets.DataNotAvailable`), a file that cannot be read (an
    ``OSError``: no permission, a folder in place of a file) and content that cannot be read as
    data (``ValueError``, ``EOFError``, ``MemoryError``, named by their type), so that the run
    skips the dataset and goes on. Other exceptions are bugs and propagate.
    """
    from ..datasets import DataNotAvailable, load_dataset
    from ..registry import describe

    try:
        load_dataset(name, mirror=data.mirror, cache_dir=data.cache_dir)
    except DataNotAvailable as exc:
        return f"data not available: {exc}"
    except OSError as exc:
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        return f"data not available: dataset {name!r}: {where}{exc.strerror or describe(exc)}"
    except (ValueError, EOFError, MemoryError) as exc:  # content that is not data
        return f"data not available: dataset {name!r}: {describe(exc)}"
    return None


def prepare_split(task: Task, fold: tuple | None = None):
    """Preprocessed fit/evaluation parts and the constraints of the task's (dataset, split).

    Without ``fold``: the outer training and test parts. With a tuning ``fold``
    (:func:`splits.tuning_parts`): that fold's fit and held-out parts, both inside the outer
    training (or validation) part. Preprocessing and constraints are fitted on the fit part only.

    Returns ``(X_fit, y_fit, X_eval, y_eval, constraints, constraint_time, split_seed)``;
    cached per worker, so every solver of the same (dataset, split, fold) reuses them, and the
    constraints also on disk in the datasets' cache (``<cache>/constraints``, see
    :func:`~dml_bench.constraints.generate`), so a new worker or run loads them. Sparse
    data (DEXTER) stay sparse through the preprocessing and the neighbour search; the two X
    parts are returned dense unless the task's solver takes CSR input (``accepts_sparse``).
    """
    X_fit, y_fit, X_eval, y_eval, *rest = _prepare_split(
        _SplitKey(task.dataset, task.split, task.splitting, task.data, task.data_digest),
        task.constraints, fold)
    if scipy.sparse.issparse(X_fit) and not _accepts_sparse(task.solver.name):
        X_fit, X_eval = X_fit.toarray(), X_eval.toarray()
    return X_fit, y_fit, X_eval, y_eval, *rest


def _accepts_sparse(solver: str) -> bool:
    from ..solvers import SOLVERS

    return getattr(SOLVERS.get(solver), "accepts_sparse", False)  # a planned solver: dense


def split_parts(task: Task) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Indices ``(train, validation, test, split_seed)`` of the task's outer split."""
    return _outer_split(_SplitKey(task.dataset, task.split, task.splitting, task.data,
                                  task.data_digest))


@dataclass(frozen=True)
class _SplitKey:
    """What a task's outer split depends on (a cache key of the worker's prepared splits);
    ``digest`` (:attr:`Task.data_digest`) makes a file changed in place load again."""

    entry: DatasetEntry
    split: int
    splitting: SplitSpec
    data: DataPlace
    digest: str | None


def _outer_split(key: _SplitKey) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``(train, validation, test, split_seed)`` indices: random (:func:`split_indices`), or the
    dataset's own train/test parts (``split.predefined``: e.g. optdigits' 3823/1797)."""
    s, name = key.splitting, key.entry.name
    _, y, meta = _load(key.entry, s.seed, key.data, key.digest)
    split_seed = derive_seed(s.seed, name, key.split)
    if not s.predefined:
        return (*split_indices(y, s.train_fraction, split_seed, s.stratify,
                               s.validation_fraction), split_seed)
    parts = meta.get("parts")
    if not parts or set(parts) != {"train", "test"}:
        raise ValueError(f"split.predefined: dataset {name!r} has no predefined train/test "
                         "parts (datasets with them: see `dmlbench datasets`)")
    n_train = parts["train"]
    return np.arange(n_train), np.arange(0), np.arange(n_train, len(y)), split_seed


@functools.lru_cache(maxsize=2)
def _load(entry, seed, data: DataPlace, digest=None):
    """The entry's data (subsampled); ``digest`` (:attr:`Task.data_digest`) keys the cache only,
    so that a file changed in place is loaded again."""
    from ..datasets import load_dataset

    X, y, meta = load_dataset(entry.name, mirror=data.mirror, cache_dir=data.cache_dir)
    if entry.n_samples:
        keep = subsample_indices(y, entry.n_samples, derive_seed(seed, entry.name + ":subset", 0))
        X, y = X[keep], y[keep]
    return X, y, meta


@functools.lru_cache(maxsize=4)
def _prepare_split(key: _SplitKey, constraints: ConstraintSpec, fold):
    X, y, meta = _load(key.entry, key.splitting.seed, key.data, key.digest)
    # the validation part (if any) is held out of both: parameter choice uses it
    train, validation, test, split_seed = _outer_split(key)
    if fold is not None:
        train, test = tuning_parts(y, train, validation, split_seed, fold, key.splitting.stratify)
    X_train, X_test = key.entry.preprocessing.apply(X[train], X[test], meta.get("image_shape"))
    constraints, seconds = generate_constraints(constraints.generator, X_train, y[train],
                                                dict(constraints.params),
                                                _constraint_cache(key.data.cache_dir))
    return X_train, y[train], X_test, y[test], constraints, seconds, split_seed


def _constraint_cache(cache_dir):
    """The folder of stored constraints: ``constraints/`` in the datasets' cache."""
    from ..datasets.files import resolve_cache_dir

    return resolve_cache_dir(cache_dir) / "constraints"


def fit_task_solver(task: Task, X_train, y_train, constraints):
    """The task's solver (its params and tuned values) fitted on the training part, with the
    fit's wall and CPU seconds; warnings are silenced (convergence is recorded in the row)."""
    from ..solvers import SOLVERS

    solver = SOLVERS[task.solver.name](**{**task.solver.params, **dict(task.tuned)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wall, cpu = time.perf_counter(), time.process_time()
        solver.fit(X_train, y_train, constraints=constraints)
        return solver, time.perf_counter() - wall, time.process_time() - cpu


def _missing_data(exp: Experiment, data: DataPlace = DEFAULT_PLACE) -> list[str]:
    """The dataset labels of ``exp`` whose data would need the network."""
    from ..datasets import dataset_status

    return [d.label for d in exp.datasets
            if dataset_status(d.name, mirror=data.mirror, cache_dir=data.cache_dir)
            == "network needed"]


def _no_extra_data(exp: Experiment, data: DataPlace = DEFAULT_PLACE, load: bool = False) -> None:
    """A k-NN experiment reads the catalogue's datasets only (a missing one skips its rows)."""
    return None


def _read_retrieval(r, evaluation: dict, datasets: list, solvers: list) -> dict:
    """The :class:`~dml_bench.experiment.sections.RetrievalSpec` of ``task: retrieval``
    (``top`` defaults to 20): its query class is required."""
    from ..solvers import SOLVERS

    r.check(evaluation["query_class"] is not None, "evaluation.query_class",
            "a retrieval experiment names the class whose test points are the queries")
    for i, s in enumerate(solvers):
        r.check(s.name not in SOLVERS or getattr(SOLVERS[s.name], "evaluation", "knn") == "knn",
                f"solvers[{i}].name", f"{s.name} learns no global map (transform), which "
                "retrieval ranks in: k-NN experiments only")
    return {"retrieval": RetrievalSpec(evaluation["query_class"], evaluation["top"] or 20)}


#: the k-NN classification task kind (:class:`~dml_bench.experiment.kind.TaskKind`)
KIND = TaskKind(all_tasks=lambda exp, data=DEFAULT_PLACE: list(all_tasks(exp, data)),
             missing_data=_missing_data, data_problem=_no_extra_data)

#: the retrieval task kind: the k-NN kind's tasks, with the retrieval keys of ``evaluation:``
RETRIEVAL = dataclasses.replace(KIND, config=ConfigRules("retrieval", RETRIEVAL_KEYS,
                                                         _read_retrieval))
