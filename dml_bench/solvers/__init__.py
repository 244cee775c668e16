"""The metric learners (scikit-learn estimators), registered by config name.

``SOLVERS`` maps a config's solver names to the estimator classes, each in the module of its
paper (``dml_eig``, ``lmnn_eig``, ``sdpmetric``, ``boostmetric``, ``frobmetric``, ``xing``,
``lmnn``, ``itml``, ``mdml``, ``pola``, ``lowrank_sgd`` and its dense comparators
``lowrank_dense`` and ``lowrank_sgd_one``; ``baselines``, ``euclidean``, ``svm`` and ``elm`` the papers' baselines) on
the base class of :mod:`.base`. What they share: the constraint algebra and the projections onto
the PSD cone (:mod:`.linalg`), the Frank–Wolfe vertices (:mod:`.top_eigen`) and the eigen-updates
(:mod:`.eigen_update`, :mod:`.incremental_eigen`).

``PLANNED`` lists the methods of the papers' tables that are not implemented yet; configs may name
them and ``dmlbench run`` reports their tasks as skipped with the reason.

The solver stage: after the datasets, splits and constraints, before the evaluation.
"""

from ..registry import Registry, check_solver
from .base import MetricLearner
from .baselines import LDA, NCA, RCA, PCAMetric
from .boostmetric import BoostMetric
from .covariance import Covariance
from .dml_eig import DMLEig
from .elm import KernelELM
from .euclidean import Euclidean
from .frobmetric import FrobMetric, solve_frobenius_sdp
from .itml import ITML
from .ldml import LDML
from .lfda import LFDA
from .lmnn import LMNN
from .lmnn_eig import LMNNEig
from .lowrank_dense import LowRankFW, LowRankGD, LowRankSGD, LowRankSGDBatch
from .lowrank_sgd_one import LowRankSGDOne
from .lowrank_sgd import SGDIncSVD
from .lsml import LSML
from .mdml import MDML
from .mlkr import MLKR
from .pola import POLA
from .scml import SCML
from .scml_local import SCMLLocal
from .sdml import SDML
from .sdpmetric import SDPMetric
from .svm import SVM
from .xing import Xing

#: the solvers by name; plug-ins (classes of the entry-point group ``dml_bench.solvers`` or
#: ``module:Class`` references, imported only with the user's consent) checked by
#: ``registry.check_solver``
SOLVERS = Registry("solver", group="dml_bench.solvers", adapt=check_solver)
SOLVERS.register("euclidean", Euclidean)
SOLVERS.register("dml_eig", DMLEig)
SOLVERS.register("frobmetric", FrobMetric)
SOLVERS.register("boostmetric", BoostMetric)
SOLVERS.register("lmnn_eig", LMNNEig)
SOLVERS.register("xing", Xing)
SOLVERS.register("lmnn", LMNN)
SOLVERS.register("sdpmetric", SDPMetric)
SOLVERS.register("nca", NCA)
SOLVERS.register("lda", LDA)
SOLVERS.register("pca", PCAMetric)
SOLVERS.register("rca", RCA)
SOLVERS.register("ldml", LDML)
SOLVERS.register("itml", ITML)
SOLVERS.register("svm", SVM)
SOLVERS.register("elm", KernelELM)
SOLVERS.register("pola", POLA)
SOLVERS.register("mdml", MDML)
SOLVERS.register("sgd_incsvd", SGDIncSVD)
SOLVERS.register("gd", LowRankGD)
SOLVERS.register("sgd", LowRankSGD)
SOLVERS.register("sgd_batch", LowRankSGDBatch)
SOLVERS.register("fw", LowRankFW)
SOLVERS.register("sgd_one", LowRankSGDOne)
SOLVERS.register("lfda", LFDA)
SOLVERS.register("covariance", Covariance)
SOLVERS.register("mlkr", MLKR)
SOLVERS.register("sdml", SDML)
SOLVERS.register("lsml", LSML)
SOLVERS.register("scml", SCML)
SOLVERS.register("scml_local", SCMLLocal)  # a metric per point: evaluated by k-NN in it

PLANNED: dict[str, str] = {}

__all__ = ["SOLVERS", "PLANNED", "MetricLearner", "BoostMetric", "Covariance", "DMLEig", "Euclidean", "FrobMetric",
           "ITML", "KernelELM", "LDA", "LDML", "LFDA", "LMNN", "LSML", "LowRankFW", "LowRankGD", "LowRankSGD", "LowRankSGDBatch",
           "LowRankSGDOne", "MDML", "MLKR", "NCA", "PCAMetric", "POLA", "RCA", "LMNNEig", "SCML", "SCMLLocal", "SDML", "SDPMetric", "SGDIncSVD", "SVM", "Xing", "solve_frobenius_sdp"]
