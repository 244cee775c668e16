"""Scaling curves of DML-eig, FrobMetric, LMNN and SGD-IncSVD: cost against n, d and constraints.

Four sweeps, each at a fixed small number of iterations (``--max-iter``, default
20; the iterative solvers' stopping tolerance set to 0 so every fit runs them all):

- ``n``: stratified subsets of the MNIST training part (60 000 × 784), 1k … 60k rows, d = 784;
- ``d``: n = 4000 MNIST rows, PCA to d = 16 … 784;
- ``constraints``: n = 4000, d = 64, the constraint generator's size varied (k of
  ``knn_triplets``, ``n_triplets`` of ``random_triplets``);
- ``sparse``: DEXTER (300 × 20 000, sparse; Zhang & Zhang's set), nested random column subsets
  d = 1250 … 20 000, kept sparse for SGD-IncSVD (the only solver here that accepts CSR) and
  densified for the others, which first pass a memory check: at least ``DXD_COPIES`` d×d float64
  arrays must fit in ``--memory-limit-gb``, else the row says "infeasible" with the sizes.

Data and constraints are built the package's way: ``Preprocessing`` (MNIST ``global_maxabs`` as
``configs/shen2014_table1.yaml``, DEXTER ``maxabs`` as ``configs/zhang2017_fig2.yaml``) and the
generator of each solver's own configs from ``constraints.GENERATORS`` (``knn_triplets`` k = 3 for
DML-eig, FrobMetric and LMNN; ``random_triplets`` 10 000 for SGD-IncSVD, with the DEXTER
parameters λ = 0.1, c = 0.1). Constraint generation is timed separately (``constraint_seconds``,
shared by the solvers that use the same constraints).

Each fit runs in its own fresh process (``experiment.knn.fit_task_solver``, one BLAS thread),
forked by a ``multiprocessing`` fork server with ``dml_bench`` preloaded: no import cost, no
earlier fit's memory, and none of this process's state (fits forked straight from it after its
OpenMP k-NN search ran up to 10× slower). Memory: the peak resident set of the fit, i.e. the
kernel's high-water mark ``VmHWM`` after the fit minus ``VmRSS`` before it, with the mark reset
(``/proc/self/clear_refs``) just before the fit — every allocation (numpy, BLAS/LAPACK workspace,
Python objects) counts, with no tracing overhead on the timing (tracemalloc was not used: it slows
the Python-level loops). The fit is interrupted after ``--budget`` seconds (SIGALRM in the child);
its row is "over budget" and the larger sizes of that (solver, sweep) are not tried.

Outputs in ``--out`` (default ``results/bench``), resumable (rows already in ``scaling.csv`` are
kept unless ``--force``): ``scaling.csv`` (one row per fit), ``scaling_slopes.csv`` (per solver and
sweep: least-squares log-log slope of ``seconds_per_iter`` against the swept quantity on the fits
that ran, beside the paper's claim from ``benchmarks/timing/scaling_claims.yaml``) and
``scaling.png``.

    DMLBENCH_DATA_MIRROR=../shared/datasets python benchmarks/timing/bench_scaling.py \\
        [--solver dml_eig ...] [--sweep d ...] [--budget 120] [--max-iter 20] [--quick] [--force]
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import os
import signal
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import scipy.sparse
import yaml
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[2]
CLAIMS = Path(__file__).with_name("scaling_claims.yaml")
BLAS_THREADS = 1
SOLVER_NAMES = ("dml_eig", "frobmetric", "lmnn", "sgd_incsvd")
SWEEP_NAMES = ("d", "constraints", "sparse", "n")  # run order: the cheap sweeps first
#: lower bound on the d×d float64 arrays a dense solver holds at once (DML-eig: X_S, its Cholesky
#: factor, M; FrobMetric: Σ u_r A_r, its eigenvectors, workspace; LMNN: L, G, the trial L)
DXD_COPIES = 3
#: each solver's constraint generator and parameters (its configs) and solver parameters
SETUP = {
    "dml_eig": ("knn_triplets", {"k": 3}, {}),
    "frobmetric": ("knn_triplets", {"k": 3}, {}),
    "lmnn": ("knn_triplets", {"k": 3}, {}),
    "sgd_incsvd": ("random_triplets", {"n_triplets": 10000}, {"lam": 0.1, "step": 0.1}),
}
#: the generator parameter the ``constraints`` sweep varies
SIZE_PARAM = {"knn_triplets": "k", "random_triplets": "n_triplets"}
COLUMNS = ["solver", "sweep", "dataset", "n", "d", "constraint_param", "n_constraints", "max_iter",
           "n_iter", "fit_seconds", "fit_cpu_seconds", "seconds_per_iter", "constraint_seconds",
           "peak_memory_mb", "rank", "status", "measured_at"]
KEY = ["solver", "sweep", "dataset", "n", "d", "constraint_param"]
SLOPE_COLUMNS = ["solver", "sweep", "x", "n_points", "x_range", "slope", "claimed_exponent",
                 "claim_note", "claim", "source", "memory_claim", "peak_memory_mb_at_largest",
                 "largest_x"]
X_OF_SWEEP = {"n": "n", "d": "d", "sparse": "d", "constraints": "n_constraints"}


class Point(NamedTuple):
    """One size of a sweep: data set, rows, dimension and (constraints sweep) generator sizes."""

    sweep: str
    dataset: str
    n: int
    d: int
    sizes: dict | None = None  # generator → value of SIZE_PARAM (constraints sweep only)

    def constraint_param(self, generator: str) -> int:
        """The size parameter of ``generator`` at this point (the solver default elsewhere)."""
        if self.sizes is None:
            return next(p[SIZE_PARAM[g]] for g, p, _ in SETUP.values() if g == generator)
        return self.sizes[generator]


def sweeps(quick: bool) -> dict[str, list[Point]]:
    """The points of every sweep (``quick``: tiny sizes for tests)."""
    if quick:
        return {"n": [Point("n", "mnist", n, 32) for n in (300, 600)],
                "d": [Point("d", "mnist", 300, d) for d in (8, 16)],
                "constraints": [Point("constraints", "mnist", 300, 16,
                                      {"knn_triplets": k, "random_triplets": t})
                                for k, t in ((1, 500), (2, 2000))],
                "sparse": [Point("sparse", "dexter", 300, d) for d in (500, 1000)]}
    return {"n": [Point("n", "mnist", n, 784)
                  for n in (1000, 2000, 4000, 8000, 16000, 32000, 60000)],
            "d": [Point("d", "mnist", 4000, d) for d in (16, 32, 64, 128, 256, 512, 784)],
            "constraints": [Point("constraints", "mnist", 4000, 64,
                                  {"knn_triplets": k, "random_triplets": t})
                            for k, t in ((1, 2500), (2, 10000), (3, 40000), (5, 160000),
                                         (8, 640000))],
            "sparse": [Point("sparse", "dexter", 300, d) for d in (1250, 2500, 5000, 10000, 20000)]}


# ------------------------------------------------------------------------------------------------
# data and constraints (the package's preprocessing and generators)
# ------------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=2)
def _raw(dataset: str):
    from dml_bench.datasets import load_dataset

    X, y, meta = load_dataset(dataset)
    n_train = (meta.get("parts") or {}).get("train", len(y))  # MNIST: its 60 000 training rows
    return X[:n_train], y[:n_train]


@functools.lru_cache(maxsize=4)
def point_data(dataset: str, n: int, d: int):
    """Preprocessed training data of a point: MNIST rows (stratified subset, ``global_maxabs``,
    PCA to d < 784) or DEXTER (``maxabs``, a nested random subset of d columns, CSR)."""
    from dml_bench.preprocess import Preprocessing
    from dml_bench.splits import derive_seed, subsample_indices

    X, y = _raw(dataset)
    keep = subsample_indices(y, n, derive_seed(0, f"{dataset}:scaling", 0))
    X, y = X[keep], y[keep]
    if scipy.sparse.issparse(X):
        cols = np.sort(np.random.default_rng(0).permutation(X.shape[1])[:d])
        X, _ = Preprocessing(normalize="maxabs").apply(X[:, cols], X[:1, cols])
        return X.tocsr(), y
    pca = d if d < X.shape[1] else None
    X, _ = Preprocessing(normalize="global_maxabs", pca=pca).apply(X, X[:1])
    return X, y


@functools.lru_cache(maxsize=8)
def point_constraints(dataset: str, n: int, d: int, generator: str, value: int):
    """``(constraints, seconds)`` of ``generator`` (size parameter ``value``) on a point's data."""
    from dml_bench.constraints import GENERATORS

    X, y = point_data(dataset, n, d)
    if generator == "knn_triplets" and scipy.sparse.issparse(X):
        X = X.toarray()  # its neighbour search takes dense rows only
    t0 = time.perf_counter()
    constraints = GENERATORS[generator](X, y, **{SIZE_PARAM[generator]: value})
    return constraints, time.perf_counter() - t0


def n_constraints(solver: str, constraints) -> int:
    """The number of constraints ``solver`` consumes: pairs or triplets (``constraint_kind``)."""
    from dml_bench.solvers import SOLVERS

    counts = constraints.counts()
    if SOLVERS[solver].constraint_kind == "pairs":
        return counts["n_similar"] + counts["n_dissimilar"]
    return counts["n_triplets"]


def memory_problem(solver: str, d: int, limit_gb: float) -> str | None:
    """Why a dense d×d solver cannot run at dimension ``d`` within ``limit_gb``, or None."""
    from dml_bench.solvers import SOLVERS

    if SOLVERS[solver].accepts_sparse:
        return None
    one = d * d * 8 / 1e9
    if DXD_COPIES * one <= limit_gb:
        return None
    return (f"infeasible: d x d matrix of {one:.2f} GB (>= {DXD_COPIES} of them: "
            f"{DXD_COPIES * one:.1f} GB > --memory-limit-gb {limit_gb:g})")


# ------------------------------------------------------------------------------------------------
# one fit in a fresh process
# ------------------------------------------------------------------------------------------------

def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


class _OverBudget(Exception):
    pass


def _alarm(signum, frame):
    raise _OverBudget


def fit_child(job: dict, conn) -> None:
    """In the child process: fit the job (SIGALRM at its budget) and send its result fields."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=BLAS_THREADS):
        _fit_and_send(job, conn)


def _fit_and_send(job: dict, conn) -> None:
    from dml_bench.experiment.sections import SolverEntry
    from dml_bench.experiment.knn import fit_task_solver

    task = argparse.Namespace(solver=SolverEntry(job["solver"], job["solver"], job["params"]),
                              tuned=())
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    before = _status_kb("VmRSS")
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, job["budget"])
    try:
        solver, wall, cpu = fit_task_solver(task, job["X"], job["y"], job["constraints"])
    except _OverBudget:
        conn.send({"status": f"over budget (> {job['budget']:g} s)"})
        return
    except Exception as exc:  # a failing fit is a row, not the end of the sweep
        conn.send({"status": f"failed: {type(exc).__name__}: {exc}"})
        return
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    peak = (_status_kb("VmHWM") - before) / 1024
    rank = getattr(solver, "eigenvalues_", None)
    conn.send({"status": "ok", "n_iter": int(solver.n_iter_), "fit_seconds": wall,
               "fit_cpu_seconds": cpu, "seconds_per_iter": wall / solver.n_iter_,
               "peak_memory_mb": peak, "rank": None if rank is None else len(rank)})


def run_fit(solver: str, X, y, constraints, max_iter: int, budget: float) -> dict:
    """Fit ``solver`` in a fresh child process; its result fields (a failure as a status)."""
    import multiprocessing

    from dml_bench.solvers import SOLVERS

    cls = SOLVERS[solver]
    params = {**SETUP[solver][2], "max_iter": max_iter}
    if "tol" in cls().get_params():
        params["tol"] = 0.0  # run all max_iter iterations
    X = X if cls.accepts_sparse or not scipy.sparse.issparse(X) else X.toarray()
    job = {"solver": solver, "params": params, "X": X, "y": y, "constraints": constraints,
           "budget": budget}
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["dml_bench.experiment.knn", "dml_bench.solvers"])
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=fit_child, args=(job, send))
    child.start()
    send.close()
    # the child's alarm fires at the budget, but only between Python bytecodes: a long LAPACK
    # call (eigh at d = 10 000) is killed a minute later
    if not receive.poll(budget + 60):
        child.kill()
        child.join()
        return {"status": f"over budget (> {budget:g} s, killed)"}
    try:
        result = receive.recv()
    except EOFError:  # the child died without a result (e.g. killed for memory)
        result = None
    child.join()
    return result or {"status": f"failed: the fit's process exited with code {child.exitcode}"}


# ------------------------------------------------------------------------------------------------
# the sweeps, resumable
# ------------------------------------------------------------------------------------------------

def read_rows(path: Path) -> pd.DataFrame:
    """The rows of ``scaling.csv`` (empty with :data:`COLUMNS` when absent)."""
    return pd.read_csv(path) if path.is_file() else pd.DataFrame(columns=COLUMNS)


def record(path: Path, row: dict) -> None:
    """Add ``row`` to ``path``, replacing an earlier row of its key (atomic rewrite)."""
    old = read_rows(path)
    same = np.logical_and.reduce([old[k].astype(str) == str(row[k]) for k in KEY]) if len(old) \
        else np.zeros(0, dtype=bool)
    new = pd.concat([old[~same], pd.DataFrame([row])], ignore_index=True)
    tmp = path.with_suffix(".csv.tmp")
    new.reindex(columns=COLUMNS).to_csv(tmp, index=False)
    os.replace(tmp, path)


def _key(row: dict) -> tuple:
    return tuple(str(row[k]) for k in KEY)


def run_sweeps(solvers, sweep_names, points, out: Path, args) -> None:
    """Run every (sweep, size, solver) fit not yet in ``scaling.csv`` (all with ``args.force``),
    size by size so the solvers advance together; a (solver, sweep) stops at its first fit over
    budget (its larger sizes are recorded as not run)."""
    path = out / "scaling.csv"
    done = read_rows(path)
    done = {} if args.force else {_key(r): r["status"] for r in done.to_dict("records")}
    for sweep in sweep_names:
        stopped = set()
        for point in points[sweep]:
            for solver in solvers:
                generator = SETUP[solver][0]
                row = {"solver": solver, "sweep": sweep, "dataset": point.dataset, "n": point.n,
                       "d": point.d, "constraint_param": point.constraint_param(generator),
                       "max_iter": args.max_iter}
                if _key(row) in done:
                    if str(done[_key(row)]).startswith("over budget"):
                        stopped.add(solver)
                    continue
                row.update(measure(solver, point, generator, row, stopped, args))
                if str(row["status"]).startswith("over budget"):
                    stopped.add(solver)
                row["measured_at"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
                record(path, row)
                print(f"{sweep:11s} {solver:10s} n={point.n:<6d} d={point.d:<6d} "
                      f"{row.get('seconds_per_iter', float('nan')):.4g} s/iter "
                      f"{row.get('peak_memory_mb', float('nan')):.4g} MB  {row['status']}",
                      flush=True)


def measure(solver: str, point: Point, generator: str, row: dict, stopped: set, args) -> dict:
    """The result fields of one (solver, point): its fit, or why it did not run."""
    problem = memory_problem(solver, point.d, args.memory_limit_gb)
    if problem:
        return {"status": problem}
    if solver in stopped:
        return {"status": "not run (a smaller size was over budget)"}
    X, y = point_data(point.dataset, point.n, point.d)
    constraints, seconds = point_constraints(point.dataset, point.n, point.d, generator,
                                             row["constraint_param"])
    return {"n_constraints": n_constraints(solver, constraints), "constraint_seconds": seconds,
            **run_fit(solver, X, y, constraints, args.max_iter, args.budget)}


# ------------------------------------------------------------------------------------------------
# slopes and figure
# ------------------------------------------------------------------------------------------------

def loglog_slope(x, t) -> float:
    """Least-squares slope of ``log t`` against ``log x`` (NaN with fewer than two distinct x)."""
    x, t = np.asarray(x, dtype=float), np.asarray(t, dtype=float)
    if len(np.unique(x)) < 2:
        return float("nan")
    return float(np.polyfit(np.log(x), np.log(t), 1)[0])


def slopes(rows: pd.DataFrame, claims: dict) -> pd.DataFrame:
    """Per (solver, sweep): the measured slope of seconds per iteration beside the claim."""
    out = []
    for (solver, sweep), part in rows.groupby(["solver", "sweep"], sort=False):
        ran = part[part["status"] == "ok"]
        x = ran[X_OF_SWEEP[sweep]].astype(float)
        claim = claims.get(solver, {})
        largest = ran.loc[x.idxmax()] if len(ran) else None
        out.append({"solver": solver, "sweep": sweep, "x": X_OF_SWEEP[sweep],
                    "n_points": len(ran),
                    "x_range": f"{x.min():g}-{x.max():g}" if len(ran) else "",
                    "slope": loglog_slope(x, ran["seconds_per_iter"]),
                    "claimed_exponent": claim.get("exponents", {}).get(sweep),
                    "claim_note": claim.get("notes", {}).get(sweep, ""),
                    "claim": claim.get("quote", ""), "source": claim.get("source", ""),
                    "memory_claim": claim.get("memory", ""),
                    "peak_memory_mb_at_largest":
                        None if largest is None else largest["peak_memory_mb"],
                    "largest_x": None if largest is None else largest[X_OF_SWEEP[sweep]]})
    return pd.DataFrame(out, columns=SLOPE_COLUMNS)


def plot(rows: pd.DataFrame, table: pd.DataFrame, out: Path) -> None:
    """``scaling.png``/``.pdf``: one log-log panel per sweep, one line per solver."""
    from matplotlib.ticker import NullFormatter

    from dml_bench.report.figures import pyplot, save_figure

    plt = pyplot()

    names = [s for s in SWEEP_NAMES if s in set(rows["sweep"])]
    fig, axes = plt.subplots(1, max(len(names), 1), figsize=(4.2 * max(len(names), 1), 3.8),
                             squeeze=False)
    for ax, sweep in zip(axes[0], names):
        for solver, part in rows[(rows["sweep"] == sweep) & (rows["status"] == "ok")].groupby(
                "solver"):
            part = part.sort_values(X_OF_SWEEP[sweep])
            fit = table[(table["solver"] == solver) & (table["sweep"] == sweep)].iloc[0]
            claimed = fit["claimed_exponent"]
            label = (f"{solver}: slope {fit['slope']:.2f}"
                     f" (claim {'?' if pd.isna(claimed) else f'{claimed:g}'})")
            ax.loglog(part[X_OF_SWEEP[sweep]], part["seconds_per_iter"], "o-", label=label)
        title = {"sparse": "d (DEXTER, sparse)", "constraints": "number of constraints"}
        ax.set_title(f"sweep: {title.get(sweep, sweep)}")
        ax.set_xlabel(X_OF_SWEEP[sweep])
        ax.xaxis.set_minor_formatter(NullFormatter())  # no overlapping 2×10², 3×10², … labels
        ax.set_ylabel("seconds per iteration")
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    save_figure(fig, out, "scaling")


def write_outputs(out: Path) -> pd.DataFrame:
    """``scaling_slopes.csv`` and ``scaling.png`` from the whole ``scaling.csv``."""
    rows = read_rows(out / "scaling.csv")
    table = slopes(rows, yaml.safe_load(CLAIMS.read_text()))
    table.to_csv(out / "scaling_slopes.csv", index=False)
    plot(rows, table, out)
    return table


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solver", nargs="+", default=list(SOLVER_NAMES))
    parser.add_argument("--sweep", nargs="+", default=list(SWEEP_NAMES))
    parser.add_argument("--budget", type=float, default=120.0, help="seconds per fit")
    parser.add_argument("--max-iter", type=int, default=20)
    parser.add_argument("--memory-limit-gb", type=float, default=4.0)
    parser.add_argument("--quick", action="store_true", help="tiny sizes (tests)")
    parser.add_argument("--force", action="store_true", help="recompute rows already there")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench")
    args = parser.parse_args(argv)
    for name, given, allowed in (("solver", args.solver, SOLVER_NAMES),
                                 ("sweep", args.sweep, SWEEP_NAMES)):
        bad = sorted(set(given) - set(allowed))
        if bad:
            parser.error(f"unknown --{name} {', '.join(bad)} (choose from {', '.join(allowed)})")
    if args.budget <= 0 or args.max_iter < 1 or args.memory_limit_gb <= 0:
        parser.error("need --budget > 0, --max-iter >= 1 and --memory-limit-gb > 0")
    args.out.mkdir(parents=True, exist_ok=True)
    solvers = [s for s in SOLVER_NAMES if s in args.solver]
    sweep_names = [s for s in SWEEP_NAMES if s in args.sweep]
    with threadpool_limits(limits=BLAS_THREADS):  # constraints and PCA; each fit sets its own
        run_sweeps(solvers, sweep_names, sweeps(args.quick), args.out, args)
    table = write_outputs(args.out)
    print(table[["solver", "sweep", "n_points", "slope", "claimed_exponent",
                 "peak_memory_mb_at_largest"]].to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
