"""Per-iteration time of DML-eig, FrobMetric and SGD-IncSVD against a floor measured in the run.

The floor of one iteration is ``max(flops / GEMM rate, bytes / memory bandwidth)``: the work the
iteration must do at the best rate this machine reaches, both rates measured here, on one thread.
``gemm_rate``: best of a few 2000×2000 float64 matrix products
(2·2000³ flops each); ``bandwidth``: the best of streaming a ~400 MB array (a sum: bytes read per
second) and copying it (bytes read plus written per second).

What an iteration must do (n training points, d features, the solvers' own notation):

DML-eig (``solvers/dml_eig.py``), n_D whitened dissimilar differences Z̃ (n_D×d):

- flops: ``n_D·d·(d+1)`` for ∇f_μ = Z̃ᵀ diag(w) Z̃ (symmetric: one triangle, a SYRK; every
  pair counted as kept, i.e. no weight under the 1e-12 threshold), ``2·n_D·d`` for Z̃v, the top
  eigenvector (``(4/3)·d³`` for a dense tridiagonal reduction when d ≤ 64, else one Lanczos
  product ``2·d²``: a lower bound) and ``10·n_D`` element-wise (softmax, q update);
- bytes: Z̃ streamed twice, ``2·8·n_D·d`` (∇f_μ needs this iterate's weights, Z̃v the eigenvector
  of ∇f_μ: two dependent passes), plus five passes over the n_D-vectors q, w, p, ``5·8·n_D``.

FrobMetric (``solvers/frobmetric.py``), per L-BFGS-B iteration counted as one evaluation of the
dual (its line search may evaluate more: ``evals_per_iter`` in floor.csv), m triplets over n_p
distinct pairs, r positive eigenvalues of the returned metric, L-BFGS-B memory k = ``max_corrections``:

- flops: ``2·n·d²`` for X̄ᵀ(L_w X̄), ``8·n_p·d`` for L_w X̄ (4 non-zeros per pair), ``9·d³`` for
  the eigendecomposition of the d×d matrix (symmetric QR with vectors), ``2·n·d·r`` for the mapped
  points Z = X̄F, ``3·n_p·r`` for the pair distances and ``4·k·m`` for L-BFGS-B's two-loop update;
- bytes: X̄ read twice ``2·8·n·d`` (the mapping needs the eigendecomposition of the first
  product), Z written once ``8·n·r``, the pairs and their weights ``24·n_p``, six passes over
  m-vectors (v, the target and impostor indices, margins, gradient, bounds) ``6·8·m`` and the
  k correction pairs of L-BFGS-B read once ``2·8·k·m``.

SGD-IncSVD (``solvers/lowrank_sgd.py``), mini-batch b, W_t = U diag(s) Uᵀ of rank r before and
r' after the step (``trace_["rank"]``), a active triplets of the batch (recorded at each call of
``incsvd_step``), c = 2a update columns, p = min(c, d − r) new directions; the small dense
factorisations are counted by their unavoidable reduction only (a lower bound):

- flops: ``4·b·d·r`` for the batch's distances, and when a > 0: ``8·d·r·c`` for the two
  Gram-Schmidt passes against U, ``4·d·c²`` for the Householder QR of the residual with Q formed,
  ``2·(r+p)²·c`` for the small matrix K, ``(4/3)·(r+p)³`` for the tridiagonal reduction of K
  (eigh) and ``2·d·(r+p)·r'`` for U' = [U P]V; the objective of ``trace_`` every ``log_every``
  iterations and at the last (``2·n_e·d·r'`` on the n_e points of the evaluation triplets) is
  part of the fit, so it is counted at those iterations, and so is the final objective over all
  triplets when the evaluation triplets are a subset (otherwise it is the last one logged);
- bytes: the batch's 3b rows of X ``8·3·b·d``, and when a > 0 U read and U' written
  ``8·d·(r + r')`` and Q written and read ``2·8·d·p`` (and the evaluation points ``8·n_e·d`` when
  evaluated).

The measured seconds per iteration are the fit's wall time over its iterations, setup included
(nothing is subtracted), at ``--iters`` iterations (20), on split 0 of the config protocols below,
with the parameters of the committed split-0 run where the config tunes them. Rows go to
``<out>/floor.csv`` (a row of the same solver and data set is replaced).

    DMLBENCH_DATA_MIRROR=../shared/datasets python benchmarks/timing/hardware_floor.py [--mnist]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from dml_bench.experiment.config import load_config
from dml_bench.errors import DMLBenchError
from dml_bench.run.execution import cpu_model
from dml_bench.run.results import RunStore
from dml_bench.solvers import frobmetric, lowrank_sgd
from dml_bench.solvers.linalg import triplet_pairs
from dml_bench.solvers.top_eigen import DENSE_EIGH_MAX_DIM, uses_pair_laplacian
from dml_bench.experiment.knn import Task, all_tasks, fit_task_solver, prepare_split

ROOT = Path(__file__).resolve().parents[2]
FLOAT = 8  # bytes of a float64 (and of an int64 index)
COLUMNS = ["solver", "dataset", "n", "d", "n_constraints", "rank", "n_iter", "flops_per_iter",
           "bytes_per_iter", "gemm_rate", "bandwidth", "floor_seconds", "bound", "evals_per_iter",
           "measured_seconds_per_iter", "ratio_to_floor", "measured_at", "hostname", "cpu_model"]


@dataclasses.dataclass(frozen=True)
class FloorCase:
    """A solver timed on a data set: the ``solver_label`` of ``config`` on the dataset entry
    ``dataset_label`` of ``dataset_config``, loaded as registry ``rename`` when given (the same
    protocol on another data set)."""

    solver: str
    dataset: str
    config: str
    solver_label: str
    dataset_config: str
    dataset_label: str
    rename: str | None = None


# USPS: each solver's own paper protocol (FrobMetric: Shen et al.'s 9 298-image USPS, PCA 60).
# MNIST: DML-eig and SGD-IncSVD on the 10 000 test digits (mnist_test) with their USPS protocol,
# FrobMetric on Shen et al.'s own MNIST entry (70 000 digits, PCA 164).
USPS_CASES = (
    FloorCase("dml_eig", "usps", "ying2012_table4", "dml_eig", "ying2012_table4", "usps"),
    FloorCase("frobmetric", "usps", "shen2014_table1", "frobmetric", "shen2014_table1",
              "usps_roweis"),
    FloorCase("sgd_incsvd", "usps", "zhang2017_fig2", "sgd_incsvd", "zhang2017_fig2", "usps"),
)
MNIST_CASES = (
    FloorCase("dml_eig", "mnist", "ying2012_table4", "dml_eig", "ying2012_table4", "usps",
              rename="mnist_test"),
    FloorCase("frobmetric", "mnist", "shen2014_table1", "frobmetric", "shen2014_table1", "mnist"),
    FloorCase("sgd_incsvd", "mnist", "zhang2017_fig2", "sgd_incsvd", "zhang2017_fig2", "usps",
              rename="mnist_test"),
)


# ------------------------------------------------------------------------------------------
# machine rates
# ------------------------------------------------------------------------------------------

def gemm_rate(size: int = 2000, repeats: int = 3) -> float:
    """Flops per second of a ``size``×``size`` float64 matrix product (best of ``repeats``)."""
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((size, size)), rng.standard_normal((size, size))
    return 2.0 * size ** 3 / _best(lambda: A @ B, repeats)


def memory_bandwidth(nbytes: float = 4e8, repeats: int = 3) -> float:
    """Bytes per second streamed from memory: the best of a sum (bytes read) and a copy (bytes
    read plus written) of a ``nbytes`` float64 array, each the best of ``repeats``."""
    a = np.ones(int(nbytes) // FLOAT)
    b = np.empty_like(a)
    read = a.nbytes / _best(a.sum, repeats)
    copy = 2 * a.nbytes / _best(lambda: np.copyto(b, a), repeats)
    return max(read, copy)


def _best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


# ------------------------------------------------------------------------------------------
# per-iteration work (the formulas of the module docstring)
# ------------------------------------------------------------------------------------------

def dml_eig_work(n: int, n_dissimilar: int, d: int) -> tuple[float, float]:
    """``(flops, bytes)`` of one DML-eig iteration on ``n_dissimilar`` whitened pairs of ``n``
    points in ``d``, with the gradient ``Σ_τ w_τ z̃_τ z̃_τᵀ`` formed as
    ``top_eigen.GramTopEigenvector`` forms it: one ``syrk`` over the pairs' difference rows, or,
    where ``top_eigen.uses_pair_laplacian``, ``X̄ᵀ L_w X̄`` with the pairs' Laplacian, an n×d×d
    GEMM."""
    eig = 4.0 / 3.0 * d ** 3 if d <= DENSE_EIGH_MAX_DIM else 2.0 * d ** 2
    per_pair = eig + 10.0 * n_dissimilar  # softmax, q update, gap
    rows = (n_dissimilar * d * (d + 1) + 2.0 * n_dissimilar * d + per_pair,
            FLOAT * (2.0 * n_dissimilar * d + 5.0 * n_dissimilar))
    nnz = n + 2 * n_dissimilar
    laplacian = (2.0 * n * d ** 2 + 2.0 * nnz * d + 2.0 * n * d + per_pair,
                 FLOAT * (3.0 * n * d + 2.0 * nnz + 5.0 * n_dissimilar))
    return laplacian if uses_pair_laplacian(n, n_dissimilar, d, signed=False) else rows


def frobmetric_work(n: int, d: int, n_pairs: int, n_triplets: int, rank: int,
                    max_corrections: int = 10) -> tuple[float, float]:
    """``(flops, bytes)`` of one FrobMetric (L-BFGS-B) iteration, counted as one evaluation."""
    k, m = max_corrections, n_triplets
    flops = (2.0 * n * d ** 2 + 8.0 * n_pairs * d + 9.0 * d ** 3 + 2.0 * n * d * rank
             + 3.0 * n_pairs * rank + 4.0 * k * m)
    nbytes = FLOAT * (2.0 * n * d + n * rank + 3.0 * n_pairs + 6.0 * m + 2.0 * k * m)
    return flops, nbytes


def sgd_incsvd_work(d: int, rank_before: int, rank_after: int, batch_size: int, n_active: int,
                    n_eval_points: int = 0) -> tuple[float, float]:
    """``(flops, bytes)`` of one SGD-IncSVD iteration from rank ``rank_before`` to
    ``rank_after`` with ``n_active`` active triplets; ``n_eval_points`` > 0 when the iteration
    also evaluates the objective."""
    r, r2, b = rank_before, rank_after, batch_size
    flops = 4.0 * b * d * r + 2.0 * n_eval_points * d * r2
    nbytes = FLOAT * (3.0 * b * d + n_eval_points * d)
    if n_active:
        c = 2 * n_active
        p = min(c, d - r)
        flops += (8.0 * d * r * c + 4.0 * d * c ** 2 + 2.0 * (r + p) ** 2 * c
                  + 4.0 / 3.0 * (r + p) ** 3 + 2.0 * d * (r + p) * r2)
        nbytes += FLOAT * (d * (r + r2) + 2.0 * d * p)
    return flops, nbytes


def floor_seconds(flops: float, nbytes: float, gemm: float, bandwidth: float) -> tuple[float, str]:
    """``max(flops / gemm, bytes / bandwidth)`` and which of the two bounds it is."""
    compute, memory = flops / gemm, nbytes / bandwidth
    return (compute, "compute") if compute >= memory else (memory, "memory")


# ------------------------------------------------------------------------------------------
# the fits
# ------------------------------------------------------------------------------------------

def case_task(case: FloorCase, iters: int, results_root: Path = ROOT / "results") -> Task:
    """Split 0 of the case's protocol, its solver capped at ``iters`` iterations, with the tuned
    values of the committed split-0 run where the config tunes the solver."""
    exp = load_config(ROOT / "configs" / f"{case.config}.yaml", check_data=False)
    source = load_config(ROOT / "configs" / f"{case.dataset_config}.yaml", check_data=False)
    entry = next(d for d in source.datasets if d.label == case.dataset_label)
    if case.rename:
        entry = dataclasses.replace(entry, name=case.rename, label=case.rename, solvers=None)
    exp = dataclasses.replace(exp, datasets=(entry,))
    task = next(t for t in all_tasks(exp) if t.split == 0 and t.solver.label == case.solver_label)
    tuned = {}
    runs = RunStore(results_root / source.name).read() if task.solver.tune else []
    if len(runs):
        hit = runs[(runs["split"] == 0) & (runs["dataset"] == case.dataset_label)
                   & (runs["label"] == case.solver_label)]
        if len(hit) and isinstance(hit["tuned_params"].iloc[-1], str):
            tuned = json.loads(hit["tuned_params"].iloc[-1])
    solver = dataclasses.replace(task.solver, params={**task.solver.params, "max_iter": iters})
    return dataclasses.replace(task, solver=solver, tuned=tuple(sorted(tuned.items())))


def measure_case(case: FloorCase, iters: int, gemm: float, bandwidth: float) -> dict:
    """Fit the case (1 BLAS thread), count its per-iteration work and return its floor row."""
    task = case_task(case, iters)
    with threadpool_limits(limits=1):
        X, y, _, _, constraints, _, _ = prepare_split(task)
        # the active triplets of each SGD-IncSVD step and FrobMetric's dual evaluations
        with (_recording(lowrank_sgd, "incsvd_step", lambda U, s, D_target, *_: len(D_target))
              as active, _recording(frobmetric._TripletDual, "_evaluate", lambda *_: 1) as evals):
            model, wall, _ = fit_task_solver(task, X, y, constraints)
    n, d = X.shape
    n_iter = int(model.n_iter_)
    if case.solver == "dml_eig":
        n_cons, rank = len(constraints.dissimilar), None
        flops, nbytes = dml_eig_work(n, n_cons, d)
    elif case.solver == "frobmetric":
        n_cons = len(constraints.triplets)
        rank = int(np.sum(np.linalg.norm(model.components_, axis=1) > 0))
        pairs = triplet_pairs(constraints.triplets)[0]
        flops, nbytes = frobmetric_work(n, d, len(pairs), n_cons, rank, model.max_corrections)
    else:
        flops, nbytes, rank, n_cons = _sgd_incsvd_total(model, constraints.triplets, d, active)
        flops, nbytes = flops / n_iter, nbytes / n_iter
    floor, bound = floor_seconds(flops, nbytes, gemm, bandwidth)
    per_iter = wall / n_iter
    return {"solver": case.solver, "dataset": case.dataset, "n": n, "d": d,
            "n_constraints": n_cons, "rank": rank, "n_iter": n_iter, "flops_per_iter": flops,
            "bytes_per_iter": nbytes, "gemm_rate": gemm, "bandwidth": bandwidth,
            "floor_seconds": floor, "bound": bound,
            "evals_per_iter": len(evals) / n_iter if evals else None,
            "measured_seconds_per_iter": per_iter,
            "ratio_to_floor": per_iter / floor,
            "measured_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "hostname": platform.node(), "cpu_model": cpu_model()}


@contextlib.contextmanager
def _recording(owner, name: str, record):
    """Wrap ``owner.<name>`` so that every call first appends ``record(*args)`` to the list
    yielded; the original is restored on exit."""
    original = getattr(owner, name)
    calls = []

    def wrapper(*args, **kwargs):
        calls.append(record(*args, **kwargs))
        return original(*args, **kwargs)

    setattr(owner, name, wrapper)
    try:
        yield calls
    finally:
        setattr(owner, name, original)


def _sgd_incsvd_total(model, triplets, d: int, active: list[int]) -> tuple[float, float, int, int]:
    """Total ``(flops, bytes)`` of a fitted SGD-IncSVD over its iterations (rank sequence from
    ``trace_``, ``active`` triplets per iteration), its final rank and its number of triplets."""
    ranks = [0, *model.trace_["rank"].astype(int)]
    n_eval = len(np.unique(np.asarray(triplets)))  # the evaluation triplets' points (≤)
    total = np.zeros(2)
    for t in range(1, len(ranks)):
        evaluated = t % model.log_every == 0 or t == len(ranks) - 1
        total += sgd_incsvd_work(d, ranks[t - 1], ranks[t], model.batch_size, active[t - 1],
                                 n_eval if evaluated else 0)
    if model.n_eval is not None and model.n_eval < len(triplets):  # final objective, all triplets
        total += (2.0 * n_eval * d * ranks[-1], FLOAT * n_eval * d)
    return float(total[0]), float(total[1]), ranks[-1], len(triplets)


def write_rows(path: Path, rows: list[dict]) -> pd.DataFrame:
    """Rewrite ``path`` with ``rows``, replacing earlier rows of the same (solver, dataset)."""
    new = pd.DataFrame(rows, columns=COLUMNS)
    if path.is_file():
        old = pd.read_csv(path)
        keep = ~old.set_index(["solver", "dataset"]).index.isin(
            new.set_index(["solver", "dataset"]).index)
        new = pd.concat([old[keep], new], ignore_index=True).reindex(columns=COLUMNS)
    tmp = path.with_suffix(".csv.tmp")
    new.to_csv(tmp, index=False)
    os.replace(tmp, path)
    return new


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mnist", action="store_true", help="also MNIST (minutes longer)")
    parser.add_argument("--iters", type=int, default=20, help="iterations per fit (default 20)")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench")
    args = parser.parse_args(argv)
    if args.iters < 1:
        raise DMLBenchError(f"--iters must be >= 1, got {args.iters}")
    args.out.mkdir(parents=True, exist_ok=True)
    with threadpool_limits(limits=1):
        gemm, bandwidth = gemm_rate(), memory_bandwidth()
    print(f"GEMM {gemm / 1e9:.1f} Gflop/s, memory {bandwidth / 1e9:.1f} GB/s (1 thread)",
          flush=True)
    rows = []
    for case in USPS_CASES + (MNIST_CASES if args.mnist else ()):
        rows.append(measure_case(case, args.iters, gemm, bandwidth))
        r = rows[-1]
        print(f"{case.solver} on {case.dataset}: {r['measured_seconds_per_iter'] * 1e3:.2f} ms "
              f"per iteration, floor {r['floor_seconds'] * 1e3:.2f} ms ({r['bound']}): "
              f"ratio to the floor {r['ratio_to_floor']:.2f}", flush=True)
    table = write_rows(args.out / "floor.csv", rows)
    print(table[["solver", "dataset", "n", "d", "n_constraints", "floor_seconds",
                 "measured_seconds_per_iter", "ratio_to_floor"]].to_string(index=False))
    print(f"wrote {args.out / 'floor.csv'}")
    return 0


def script_status(main) -> int | str:
    """A benchmark script's exit status: ``main()``'s, or one ``error:`` line (status 1) for a
    data or file problem instead of a traceback."""
    try:
        return main()
    except (DMLBenchError, OSError) as exc:
        return f"error: {exc}"


if __name__ == "__main__":
    sys.exit(script_status(main))
