"""The validated config's types: one frozen object per section (:class:`SplitSpec`,
:class:`ConstraintSpec`, :class:`EvaluationSpec` with its :class:`VerificationSpec`,
:class:`ExecutionSpec`), the dataset and solver entries, and the :class:`Experiment` that holds
them (built by :func:`~dml_bench.experiment.config.parse_config`). A task refers to the sections
it depends on (:class:`~dml_bench.experiment.knn.Task`), so its id is computed from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..preprocess import Preprocessing


@dataclass(frozen=True)
class DatasetEntry:
    name: str
    label: str
    preprocessing: Preprocessing
    n_samples: int | None = None
    n_splits: int | None = None
    solvers: tuple[str, ...] | None = None  # solver labels run on this dataset (None: all)
    #: ``((solver label, ((parameter, value), ...)), ...)``: a solver's parameters on this
    #: dataset, over its entry's ``params`` (:meth:`params_of`)
    solver_params: tuple = ()

    def params_of(self, solver: "SolverEntry") -> "SolverEntry":
        """``solver`` with this dataset's own parameters for it over its ``params``."""
        own = dict(self.solver_params).get(solver.label)
        if not own:
            return solver
        return SolverEntry(solver.name, solver.label, {**solver.params, **dict(own)},
                           solver.tune)


@dataclass(frozen=True)
class Tune:
    """A solver's hyper-parameter search: a grid, chosen by k-NN error on nested folds.

    ``grid`` is ``((parameter, (values, ...)), ...)``; exactly one of ``cv`` (k-fold on the
    training part) and ``validation`` (the held-out validation part) is set.
    """

    grid: tuple
    cv: int | None = None
    validation: float | None = None

    def points(self) -> list[dict]:
        """Every grid point, in grid order (the first parameter varies slowest)."""
        import itertools

        names = [name for name, _ in self.grid]
        return [dict(zip(names, values))
                for values in itertools.product(*(values for _, values in self.grid))]

    def folds(self) -> list[tuple]:
        """The evaluation folds of one outer split (see :func:`splits.tuning_parts`)."""
        if self.cv:
            return [("cv", self.cv, i) for i in range(self.cv)]
        return [("validation",)]

    def to_dict(self) -> dict:
        out = {"grid": {name: list(values) for name, values in self.grid}}
        return {**out, "cv": self.cv} if self.cv else {**out, "validation": self.validation}


@dataclass(frozen=True)
class SolverEntry:
    name: str
    label: str
    params: dict = field(default_factory=dict)
    tune: Tune | None = None


#: fold sources of a verification experiment: LFW's own pair lists (View 2 folds, View 1 for
#: tuning) or folds drawn on a labelled set
#: (:func:`~dml_bench.experiment.verification.draw_pair_folds`)
FOLD_SOURCES = ("lfw", "drawn")
#: where triplet solvers get identities: the matched-pair components (restricted) or the names
IDENTITY_SOURCES = ("pairs", "names")
#: the LFW descriptor tables a ``folds: lfw`` entry can name, and what they are
LFW_TABLES = {"lfw_sift": "SIFT at 9 facial points x 3 scales (Guillaumin et al. 2009)",
              "lfw_pixels": "raw LFW pixels (scikit-learn fetch_lfw_pairs): not the paper's features"}


@dataclass(frozen=True)
class VerificationSpec:
    """The ``evaluation:`` options of a verification experiment (docs/config.md).

    The protocol they set is :mod:`dml_bench.experiment.verification`'s.

    Attributes
    ----------
    folds : {"lfw", "drawn"}
        ``lfw``: View 2's ten folds of ``pairs.txt`` (and View 1 for ``tune:``); ``drawn``:
        :func:`~dml_bench.experiment.verification.draw_pair_folds` on a labelled dataset
        (``n_folds`` folds of ``n_matched`` + ``n_mismatched`` pairs, disjoint identities).
    triplet_k : int
        Neighbours per pair for triplet solvers
        (:func:`~dml_bench.experiment.verification.pair_triplets`' ``k``).
    n_triplets : int or None
        Triplets kept per fold (None: all); ``n_triplets_by_dataset`` overrides it per dataset
        label (Shen et al. Table II varies it).
    identities : {"pairs", "names"}
        Identities for the triplet rule:
        :func:`~dml_bench.experiment.verification.matched_components` of the training pairs
        (restricted) or the people's names (what Shen et al. describe).
    """

    folds: str = "lfw"
    n_folds: int = 10
    n_matched: int = 300
    n_mismatched: int = 300
    triplet_k: int = 5
    n_triplets: int | None = None
    n_triplets_by_dataset: tuple = ()
    identities: str = "pairs"

    def triplets_for(self, label: str) -> int | None:
        """Triplets per fold for the dataset entry ``label``."""
        return dict(self.n_triplets_by_dataset).get(label, self.n_triplets)

    def to_dict(self) -> dict:
        """The options as a config's ``evaluation:`` keys."""
        out = {"task": "verification", "folds": self.folds, "triplet_k": self.triplet_k,
               "n_triplets": (dict(self.n_triplets_by_dataset) if self.n_triplets_by_dataset
                              else self.n_triplets), "identities": self.identities}
        if self.folds == "drawn":
            out.update(n_folds=self.n_folds, n_matched=self.n_matched, n_mismatched=self.n_mismatched)
        return out


@dataclass(frozen=True)
class DataPlace:
    """Where a task's data are read from: the data mirror and the datasets' cache (paths only;
    not part of any task id)."""

    mirror: str | None = None
    cache_dir: str | None = None


#: the environment's data places (``DMLBENCH_DATA_MIRROR``, ``DMLBENCH_CACHE`` or their defaults)
DEFAULT_PLACE = DataPlace()


@dataclass(frozen=True)
class SplitSpec:
    """The ``split:`` section: how each dataset is split into training, validation and test parts
    (docs/config.md)."""

    train_fraction: float = 0.7
    validation_fraction: float = 0.0
    n_splits: int = 10
    seed: int = 0
    stratify: bool = True
    predefined: bool = False

    def to_dict(self) -> dict:
        out = {"train_fraction": self.train_fraction,
               "validation_fraction": self.validation_fraction, "n_splits": self.n_splits,
               "seed": self.seed, "stratify": self.stratify}
        return {**out, "predefined": True} if self.predefined else out


@dataclass(frozen=True)
class ConstraintSpec:
    """The ``constraints:`` section: a registered generator and its parameters, kept as sorted
    ``(name, value)`` pairs so that the section is hashable."""

    generator: str = "knn_triplets"
    params: tuple = (("k", 3),)

    def to_dict(self) -> dict:
        return {"generator": self.generator, "params": dict(self.params)}


@dataclass(frozen=True)
class RetrievalSpec:
    """The ``evaluation:`` options of a retrieval experiment (Shen, Kim & Wang 2010, Fig. 3):
    every test point of class ``query_class`` queries the other test points, and the precision
    of its ``top`` nearest is measured (:func:`~dml_bench.evaluate.retrieval_precision`)."""

    query_class: str
    top: int = 20

    def to_dict(self) -> dict:
        return {"query_class": self.query_class, "top": self.top}


@dataclass(frozen=True)
class EvaluationSpec:
    """The ``evaluation:`` section: the task kind (``task``) and its options: the k-NN rule of a
    classification or retrieval experiment (with its :class:`RetrievalSpec`), or the
    :class:`VerificationSpec` of a verification one."""

    task: str = "knn"
    knn_k: int = 3
    tie_break: str = "nearest"
    save_traces: bool = False
    verification: VerificationSpec | None = None
    retrieval: RetrievalSpec | None = None

    def to_dict(self) -> dict:
        if self.verification is not None:
            return self.verification.to_dict()
        out = {"knn_k": self.knn_k, "tie_break": self.tie_break, "save_traces": self.save_traces}
        if self.retrieval is not None:
            return {"task": "retrieval", **out, **self.retrieval.to_dict()}
        return out


@dataclass(frozen=True)
class ExecutionSpec:
    """The ``execution:`` section: workers, backend, and timing mode (tasks one at a time)."""

    n_jobs: int = 1
    backend: str = "loky"
    scheduler: str | None = None
    timing: bool = False

    def to_dict(self) -> dict:
        return {"n_jobs": self.n_jobs, "backend": self.backend, "scheduler": self.scheduler,
                "timing": self.timing}


@dataclass(frozen=True)
class Experiment:
    """A validated experiment config (see ``docs/config.md``): its datasets and solvers, and one
    object per section (:class:`SplitSpec`, :class:`ConstraintSpec`, :class:`EvaluationSpec`,
    :class:`ExecutionSpec`)."""

    name: str
    datasets: tuple[DatasetEntry, ...]
    solvers: tuple[SolverEntry, ...]
    split: SplitSpec = SplitSpec()
    constraints: ConstraintSpec = ConstraintSpec()
    evaluation: EvaluationSpec = EvaluationSpec()
    execution: ExecutionSpec = ExecutionSpec()
    paper_table: tuple[str, ...] = ()
    description: str = ""
    figures: tuple = ()
    notes: dict = field(default_factory=dict)
    protocol: tuple = ()  # the table's protocol choices, each with its basis (not in task ids)
    data_paths: tuple = ()  # (dataset label, file) of named entries given a `path:` (lfw_sift)

    @property
    def kind(self) -> str:
        """The task kind (``evaluation.task``): ``"knn"``, ``"verification"`` or ``"retrieval"``."""
        return self.evaluation.task

    def to_dict(self) -> dict[str, Any]:
        """The resolved config as plain YAML-able data (written next to the results)."""
        paths = dict(self.data_paths)
        return {
            "name": self.name, "description": self.description,
            "paper_table": list(self.paper_table) or None,
            "datasets": [{"name": d.name, "label": d.label, **d.preprocessing.to_dict(),
                          "n_samples": d.n_samples, "n_splits": d.n_splits,
                          **({"solvers": list(d.solvers)} if d.solvers else {}),
                          **({"solver_params": {label: dict(own)
                                                for label, own in d.solver_params}}
                             if d.solver_params else {}),
                          **({"path": paths[d.label]} if d.label in paths else {})}
                         for d in self.datasets],
            "split": self.split.to_dict(),
            "constraints": self.constraints.to_dict(),
            "solvers": [{"name": s.name, "label": s.label, "params": dict(s.params),
                         **({"tune": s.tune.to_dict()} if s.tune else {})}
                        for s in self.solvers],
            "evaluation": self.evaluation.to_dict(),
            "figures": [dict(f) for f in self.figures],
            "notes": dict(self.notes),
            "protocol": [dict(p) for p in self.protocol],
            "execution": self.execution.to_dict(),
        }
