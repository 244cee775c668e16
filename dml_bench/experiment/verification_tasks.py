"""Pair verification as an experiment: the tasks of ``evaluation: {task: verification}``.

The protocol itself (folds, restricted training part, preprocessing, constraints, threshold, ROC)
is :mod:`dml_bench.experiment.verification`'s; this module plans it as tasks (see docs/config.md).
One :class:`VerificationTask` per (dataset entry, solver, test fold)
(:func:`verification_tasks`), fitted and scored by :func:`fit_and_score`, each a row of
``runs.csv`` (:data:`VERIFICATION_COLUMNS`); :mod:`dml_bench.run.verification` runs them
(:func:`~dml_bench.run.verification.run_verification_experiment`: resumable, shared between
concurrent runs, a ``tune:`` grid tuned on View 1 first) and :mod:`dml_bench.report.verification`
writes their report (:func:`~dml_bench.report.verification.write_verification_report`: accuracy
mean, std and SEM over the folds, merged-ROC AUC and EER, LaTeX table, ROC figures and the paper
comparisons). The data of an entry are the LFW-SIFT file (``lfw_sift``,
:func:`~dml_bench.datasets.lfw.load_lfw_table`), raw LFW pixels (``lfw_pixels``,
:func:`~dml_bench.datasets.lfw.load_lfw_pixels`: not the papers' features, flagged in the
summary), or any labelled registered dataset with drawn folds
(``folds: drawn``, :func:`draw_pair_folds`).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

import numpy as np

from .kind import ConfigRules, TaskKind
from .schema import VERIFICATION_KEYS
from .sections import (DEFAULT_PLACE, FOLD_SOURCES, IDENTITY_SOURCES, LFW_TABLES, DataPlace,
                       VerificationSpec)
from .verification import (RestrictedSplit, accuracy, best_threshold, draw_pair_folds,
                           fit_pair_solver, lfw_pair_folds, local_pairs, merged_roc,
                           preprocess_fold, project_fold, restricted_split, squared_distances)

#: ``runs.csv`` of a verification experiment: one row per (dataset entry, solver, test fold);
#: ``split`` is the test fold, ``accuracy`` / ``auc`` / ``eer`` are of that fold's test pairs,
#: ``error`` = 1 − accuracy and ``n_test`` = test pairs (the columns every report reads)
VERIFICATION_COLUMNS = [
    "task_id", "experiment", "dataset", "split", "seed", "solver", "label", "solver_params",
    "preprocessing", "features", "folds", "n_train_pairs", "n_train_images", "n_test_pairs",
    "n_similar", "n_dissimilar", "n_triplets", "accuracy", "error", "n_test", "threshold",
    "train_accuracy", "auc", "eer", "fit_time", "fit_cpu_time", "n_iter", "converged", "tuned_params", "tuning_accuracy",
    "tuning_time", "blas_threads", "n_jobs", "dmlbench_version", "finished_at",
]
#: View 2's folds in pairs.txt
LFW_FOLDS = 10


@dataclass(frozen=True)
class VerificationTask:
    """One (dataset entry, solver, test fold) of a verification experiment; ``fold`` is
    ``"view1"`` for a View 1 tuning fit of grid point ``point``."""

    experiment: str
    dataset: object  # config.DatasetEntry
    solver: object  # config.SolverEntry
    fold: int | str
    spec: VerificationSpec
    seed: int
    path: str | None = None  # the entry's data file (location, not part of the id)
    data: DataPlace = DEFAULT_PLACE
    point: tuple = ()  # tuning: the grid point fitted
    tuned: tuple = ()  # final: the grid point View 1 chose
    tuning_accuracy: float | None = None
    tuning_time: float | None = None

    @property
    def split(self):
        """The test fold (the name the run machinery's error rows use)."""
        return self.fold

    def params(self) -> dict:
        """The solver's parameters as it runs (config values, then the tuned or tried point)."""
        return {**self.solver.params, **dict(self.tuned), **dict(self.point)}

    def full_params(self) -> dict:
        """:meth:`params` over the solver's defaults."""
        from ..solvers import SOLVERS

        return SOLVERS[self.solver.name](**self.params()).get_params()

    @functools.cached_property
    def data_digest(self) -> str | None:
        """sha256 of the entry's data when its name does not fix it: the user's LFW-SIFT file,
        a user's file or OpenML data with drawn folds (None for the catalogue's datasets and
        LFW's pixels; see :func:`~dml_bench.datasets.loader.dataset_digest`). Computed once per
        task object and pickled with it, as :attr:`dml_bench.experiment.knn.Task.data_digest`."""
        return data_digest(self.dataset.name, self.path, self.data)

    @property
    def task_id(self) -> str:
        """Hash of every setting that changes the row (not paths, not the tuned values, which
        follow from the ``tune:`` block); data whose name does not fix it enters by its content
        (:attr:`data_digest`)."""
        import hashlib

        from ..solvers import SOLVERS
        from ..solvers.base import identifying_params

        solver = {"name": self.solver.name, "label": self.solver.label,
                  "params": identifying_params(SOLVERS[self.solver.name](
                      **{**self.solver.params, **dict(self.point)}))}
        if self.solver.tune:
            solver["tune"] = self.solver.tune.to_dict()
        spec = self.spec.to_dict()
        spec["n_triplets"] = self.spec.triplets_for(self.dataset.label)
        key = {"task": "verification", "dataset": {"name": self.dataset.name,
                                                   "label": self.dataset.label,
                                                   **self.dataset.preprocessing.to_dict()},
               "solver": solver, "fold": self.fold, "spec": spec, "seed": self.seed}
        digest = self.data_digest
        if digest is not None:
            key["data_sha256"] = digest
        return hashlib.sha1(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]


def verification_tasks(exp, data: DataPlace = DEFAULT_PLACE) -> list[VerificationTask]:
    """Every final task of ``exp``: per dataset entry, solver and test fold (the first
    ``n_splits`` folds: the entry's own, else the experiment's; all ten by default)."""
    spec = exp.evaluation.verification
    n_available = spec.n_folds if spec.folds == "drawn" else LFW_FOLDS
    tasks = []
    for entry in exp.datasets:
        for solver in exp.solvers:
            if entry.solvers and solver.label not in entry.solvers:
                continue
            for fold in range(min(entry.n_splits or exp.split.n_splits, n_available)):
                tasks.append(VerificationTask(exp.name, entry, entry.params_of(solver), fold, spec,
                                              exp.split.seed, entry_path(exp, entry), data))
    return tasks


def tuning_tasks(task: VerificationTask) -> list[VerificationTask]:
    """The View 1 fits of ``task``'s ``tune:`` grid (none without a grid)."""
    if not task.solver.tune:
        return []
    from dataclasses import replace

    return [replace(task, fold="view1", point=tuple(sorted(point.items())))
            for point in task.solver.tune.points()]


def entry_path(exp, entry) -> str | None:
    """The data file a dataset entry names (``path:``), if any."""
    return dict(getattr(exp, "data_paths", ()) or ()).get(entry.label)


def data_problem(exp, data: DataPlace = DEFAULT_PLACE, load: bool = True) -> str | None:
    """Why the data of a verification experiment cannot be had (None when they can).

    ``load``: load and verify every entry's table (the LFW-SIFT file's dimension and images);
    otherwise only look for the files.
    """
    from ..datasets import DataNotAvailable

    reasons = []
    for entry in exp.datasets:
        try:
            source = data_source(entry.name, entry_path(exp, entry), data)
            if load:
                _table(entry.name, source, exp.evaluation.verification, exp.split.seed, data)
        except DataNotAvailable as exc:
            reasons.append(str(exc))
    return "; ".join(dict.fromkeys(reasons)) or None


def data_source(name: str, path=None, data: DataPlace = DEFAULT_PLACE) -> tuple | None:
    """The key of the per-worker table cache: for ``lfw_sift`` the file it reads
    (:func:`~dml_bench.datasets.lfw.lfw_sift_path`) and its content digest; for data outside the
    catalogue (a user's file, OpenML) its content digest; None for other data."""
    from ..datasets.lfw import lfw_sift_path

    if name != "lfw_sift":
        digest = data_digest(name, path, data)
        return None if digest is None else (None, digest)
    file = lfw_sift_path(path, mirror=data.mirror, cache_dir=data.cache_dir)
    return str(file.absolute()), data_digest(name, str(file), data)


def data_digest(name: str, path=None, data: DataPlace = DEFAULT_PLACE) -> str | None:
    """sha256 of a verification entry's data when its name does not fix it: the LFW-SIFT file
    (the user's, :func:`~dml_bench.datasets.lfw.lfw_sift_path`), or a dataset outside the
    catalogue (:func:`~dml_bench.datasets.loader.dataset_digest`); None for the catalogue's
    datasets and LFW's pixels. A LFW-SIFT file that cannot be found or read has the digest last
    recorded for it, else :data:`~dml_bench.datasets.content.UNAVAILABLE`."""
    from ..datasets import DataNotAvailable
    from ..datasets.content import UNAVAILABLE, file_digest, recorded_file_digest
    from ..datasets.loader import dataset_digest
    from ..datasets.lfw import lfw_sift_path

    mirror, cache_dir = data.mirror, data.cache_dir
    if name == "lfw_pixels":
        return None
    if name != "lfw_sift":
        return dataset_digest(name, mirror=mirror, cache_dir=cache_dir)
    try:
        file = lfw_sift_path(path, mirror=mirror, cache_dir=cache_dir)
    except DataNotAvailable:
        return recorded_file_digest(path, cache_dir=cache_dir) if path else UNAVAILABLE
    try:
        return file_digest(file, cache_dir=cache_dir)
    except OSError:
        return recorded_file_digest(file, cache_dir=cache_dir)


@functools.lru_cache(maxsize=2)
def _table(name, source, spec: VerificationSpec, seed, data: DataPlace):
    """``(X, folds, view1, identity)`` of a dataset entry: the descriptor table, the View 2 (or
    drawn) folds as :class:`~.verification.PairFold`, View 1 as ``(train, test)`` PairFolds (None for drawn
    folds), and each row's identity."""
    from ..datasets import load_dataset
    from ..datasets.lfw import load_lfw_pairs, load_lfw_pixels, load_lfw_table
    from ..datasets.parsers import LFW_IMAGE_NAME

    mirror, cache_dir = data.mirror, data.cache_dir
    if spec.folds == "drawn":
        X, y, _ = load_dataset(name, mirror=mirror, cache_dir=cache_dir)
        folds = draw_pair_folds(y, spec.n_folds, spec.n_matched, spec.n_mismatched, seed)
        return np.asarray(X, dtype=float), folds, None, np.asarray(y)
    view2 = load_lfw_pairs("view2", mirror=mirror, cache_dir=cache_dir)
    view1 = load_lfw_pairs("view1", mirror=mirror, cache_dir=cache_dir)
    if name == "lfw_pixels":
        parts = [load_lfw_pixels(f) for f in ("pairs.txt", "pairsDevTrain.txt", "pairsDevTest.txt")]
        seen = {}
        for X_part, names_part in parts:
            for row, image in zip(X_part, names_part):
                seen.setdefault(image, row)
        names = list(seen)
        X = np.array(list(seen.values()))
    else:
        X, names = load_lfw_table([*view2, *view1], source[0], mirror=mirror, cache_dir=cache_dir)
    identity = np.array([LFW_IMAGE_NAME.fullmatch(n)[1] for n in names])
    return (X, lfw_pair_folds(view2, names), tuple(lfw_pair_folds(view1, names)), identity)


@functools.lru_cache(maxsize=2)
def _prepared(name, source, task: VerificationTask, sqrt, normalize, project):
    """Preprocessed training and test images of one fold (``"view1"``: DevTrain / DevTest) —
    with ``project`` their projections on every principal component (:func:`project_fold`),
    which every PCA dimension slices —, the pairs as positions in them, and the training
    images' identities; cached per worker, so the solvers and PCA dimensions of a fold share
    one decomposition (the experiment runs its tasks fold by fold for that)."""
    X, folds, view1, identity = _table(name, source, task.spec, task.seed, task.data)
    fold = task.fold
    if fold == "view1":
        if view1 is None:
            raise ValueError("tune: needs LFW's View 1 (evaluation.folds: lfw)")
        train, test = view1
        split = RestrictedSplit(train.images(), train, test)
    else:
        split = restricted_split(folds, fold)
    Z_train, Z_test, test_images = (project_fold(X, split, sqrt, normalize) if project else
                                    preprocess_fold(X, split, None, sqrt, normalize))
    return (Z_train, Z_test, local_pairs(split.train, split.train_images),
            local_pairs(split.test, test_images), identity[split.train_images])


def _fold_key(task: VerificationTask) -> VerificationTask:
    """``task`` reduced to what a fold's preprocessing depends on (the cache key of
    :func:`_prepared`: the solvers and PCA dimensions of a fold share one decomposition)."""
    return VerificationTask("", None, None, task.fold, task.spec, task.seed, None, task.data)


def fit_and_score(task: VerificationTask) -> dict:
    """Fit ``task``'s solver on its training pairs, threshold them, score the test pairs.

    Returns a dict of the fold's numbers and ``distances`` / ``same`` of the test pairs.
    """
    source = data_source(task.dataset.name, task.path, task.data)
    prep = task.dataset.preprocessing
    Z_train, Z_test, train, test, identity = _prepared(
        task.dataset.name, source, _fold_key(task), prep.sqrt, prep.normalize, bool(prep.pca))
    if prep.pca:
        Z_train, Z_test = (np.ascontiguousarray(Z[:, :prep.pca]) for Z in (Z_train, Z_test))
    model, constraints, wall, cpu = fit_pair_solver(
        task.solver.name, task.params(), Z_train, train,
        identity if task.spec.identities == "names" else None, task.spec.triplet_k,
        task.spec.triplets_for(task.dataset.label), task.seed)
    threshold, train_accuracy = best_threshold(squared_distances(model, Z_train, train), train.same)
    distances = squared_distances(model, Z_test, test)
    roc = merged_roc([distances], [test.same])
    return {"accuracy": accuracy(distances, test.same, threshold), "threshold": threshold,
            "train_accuracy": train_accuracy, "auc": roc["auc"], "eer": roc["eer"],
            "fit_time": wall, "fit_cpu_time": cpu, "n_train_pairs": len(train.same),
            "n_train_images": len(Z_train), "n_test_pairs": len(test.same),
            "n_iter": getattr(model, "n_iter_", None), "converged": getattr(model, "converged_", None),
            **constraints.counts(), "distances": distances, "same": test.same,
            "pairs": (test.first, test.second)}


def _missing_data(exp, data: DataPlace = DEFAULT_PLACE) -> list[str]:
    """Every dataset label of ``exp`` when its files are not here (the experiment reads them
    all: LFW's pair lists and descriptor table), else none."""
    return [d.label for d in exp.datasets] if data_problem(exp, data, load=False) else []


def _read_verification(r, evaluation: dict, datasets: list, solvers: list) -> dict:
    """The ``evaluation:`` options of ``task: verification`` as a :class:`VerificationSpec`
    (docs/config.md), checked with the config's reader ``r``."""
    from dataclasses import replace

    from ..datasets import DATASETS
    from ..solvers import SOLVERS

    given = {k: evaluation[k] for k in VERIFICATION_KEYS if evaluation[k] is not None}
    spec = VerificationSpec(**{k: v for k, v in given.items() if k != "n_triplets"})
    r.check(spec.folds in FOLD_SOURCES, "evaluation.folds",
            f"must be one of {', '.join(FOLD_SOURCES)}, got {spec.folds!r}")
    r.check(spec.identities in IDENTITY_SOURCES, "evaluation.identities",
            f"must be one of {', '.join(IDENTITY_SOURCES)}, got {spec.identities!r}")
    if spec.folds == "lfw":
        extra = sorted(set(given) & {"n_folds", "n_matched", "n_mismatched"})
        r.check(not extra, "evaluation", f"{extra} apply to drawn folds only (folds: drawn); "
                "LFW's folds are those of pairs.txt")
    r.check(spec.n_folds >= 2, "evaluation.n_folds", "needs at least 2 folds (train on the others)")
    triplets = given.get("n_triplets")
    labels = [d.label for d in datasets]
    if isinstance(triplets, dict):
        unknown = sorted(set(triplets) - set(labels))
        r.check(not unknown, "evaluation.n_triplets",
                f"unknown dataset label(s) {unknown}; labels: {', '.join(labels)}")
        bad = [k for k, v in triplets.items() if not isinstance(v, int) or isinstance(v, bool) or v < 1]
        r.check(not bad, "evaluation.n_triplets", f"must map dataset labels to positive counts: {bad}")
        for label, count in triplets.items():
            r.within(f"evaluation.n_triplets.{label}", count, "evaluation.n_triplets")
        spec = replace(spec, n_triplets_by_dataset=tuple(triplets.items()))
    elif triplets is not None:
        r.check(triplets >= 1, "evaluation.n_triplets", "must be at least 1")
        spec = replace(spec, n_triplets=triplets)
    for i, d in enumerate(datasets):
        lfw = d.name in LFW_TABLES
        r.check(lfw == (spec.folds == "lfw"), f"datasets[{i}].name",
                f"{d.name!r} with folds: {spec.folds}: LFW descriptors ({', '.join(LFW_TABLES)}) "
                "take LFW's folds (folds: lfw), any other labelled dataset drawn folds (folds: drawn)")
        r.check(lfw or d.name in DATASETS, f"datasets[{i}].name", f"unknown dataset {d.name!r}")
        r.check(d.preprocessing.downscale is None and d.preprocessing.dtype == "float64",
                f"datasets[{i}]", "downscale and dtype do not apply to verification (normalize, "
                "sqrt and pca do)")
    for i, s in enumerate(solvers):
        if s.name in SOLVERS:
            kind = SOLVERS[s.name](**s.params).constraint_kind
            r.check(kind != "labels", f"solvers[{i}].name",
                    f"{s.name} needs class labels, which the restricted verification setting has "
                    "not (pair and triplet solvers, or euclidean)")
            r.check(getattr(SOLVERS[s.name], "evaluation", "knn") == "knn", f"solvers[{i}].name",
                    f"{s.name} learns no global map (transform), which verification scores "
                    "pairs in: k-NN experiments only")
        r.check(not s.tune or spec.folds == "lfw", f"solvers[{i}].tune",
                "tuning uses LFW's View 1, which drawn folds have not")
    return {"verification": spec}


#: the pair-verification task kind (:class:`~dml_bench.experiment.kind.TaskKind`)
KIND = TaskKind(all_tasks=verification_tasks, missing_data=_missing_data, data_problem=data_problem,
                config=ConfigRules("verification", VERIFICATION_KEYS, _read_verification,
                                   LFW_TABLES, tune_on_view1=True, class_sizes=False))
