"""Re-time the papers' timing rows: each (data set, method) cell as a ratio to the paper's time.

The performance record of ``make bench``. Every paper table with ``quantity:
fit_time`` (``ying2012/table5``, ``kunapuli2012/table3_time``, ``shen2010/table3``,
``shen2014/table1_time``, ...) is read with the reproduction target that holds it
(``dml_bench/reproduction/targets.yaml``) and that target's config. A paper cell maps onto the
config's tasks as the report maps it (``tables.compare_with_paper``): a dataset or solver label
that is a key of the table is used as is, else its registry name. Each cell with a number is
re-timed on split 0 of the config's protocol, built by the runner's own code
(``experiment.knn.all_tasks``, ``experiment.knn.prepare_split``: split, preprocessing, constraints)
and fitted by ``experiment.knn.fit_task_solver`` (a short row after an untimed warm-up fit, which
loads the compiled kernels, and the fastest of three fits) with the solver parameters of the
committed split-0 run of ``results/<experiment>/runs.csv`` (its ``solver_params``, which hold the
values its ``tune:`` block chose: no re-tuning), with one BLAS thread, warnings silenced.

One row per measurement is added to ``<out>/paper_times.csv`` (atomic rewrite under a file lock);
a cell already there is skipped unless ``--force``. Then ``paper_times_summary.csv`` / ``.md``
(per table and method: geometric-mean ratio, worst row, rows slower than the paper, and the cells
not timed with the reason) and ``paper_times.png`` (ratio per row, log scale, lines at 0.1 and 1)
are rewritten from the whole CSV.

    DMLBENCH_DATA_MIRROR=../shared/datasets python benchmarks/timing/bench_paper_times.py \\
        [--table ying2012/table5 ...] [--solver dml_eig ...] [--dataset wine ...] \\
        [--max-seconds 120] [--force] [--out results/bench]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import functools
import json
import os
import platform
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from filelock import FileLock
from threadpoolctl import threadpool_limits

from dml_bench.run.execution import cpu_model
from dml_bench.papers import PaperTable, list_paper_tables, load_paper_table
from dml_bench.registry import UnknownNameError
from dml_bench.run.results import RunStore
from dml_bench.reproduction.targets import availability, target_experiment, load_targets
from dml_bench.solvers import SOLVERS
from dml_bench.experiment.knn import Task, all_tasks, fit_task_solver, prepare_split
from hardware_floor import (dml_eig_work, floor_seconds, gemm_rate,  # benchmarks/timing/
                            memory_bandwidth, script_status)

ROOT = Path(__file__).resolve().parents[2]
BLAS_THREADS = 1
#: one CSV row per (table, dataset, solver, label); a later measurement of a key replaces it
KEY = ["table", "dataset", "solver", "label"]
COLUMNS = [*KEY, "dataset_label", "split", "paper_seconds", "ours_wall_seconds",
           "ours_cpu_seconds", "ratio", "cpu_ratio", "n_iter", "seconds_per_iter",
           "floor_seconds", "floor_ratio", "converged",
           "optimality", "optimality_measure", "seconds_to_gap_1e-2", "seconds_to_gap_1e-3",
           "committed_wall_seconds", "solver_params", "blas_threads", "load_avg_1min",
           "measured_at", "hostname", "cpu_model"]
#: relative duality gaps whose first crossing is timed from the solver's trace
GAP_TOLERANCES = (1e-2, 1e-3)
#: the methods each paper proposes (its "seed" methods; the other columns are baselines)
SEED_METHODS = {"ying2012": {"dml_eig", "lmnn_eig"}, "kunapuli2012": {"mdml_hf", "mdml_lv"},
                "shen2010": {"sdpmetric_squared_hinge", "sdpmetric_huber"},
                "shen2014": {"frobmetric"}}


@dataclasses.dataclass
class Cell:
    """One timing cell of a paper table and the config task that re-times it.

    ``task`` is None when the cell cannot be timed here, with ``reason`` saying why;
    ``committed`` is the split-0 fit time of ``runs.csv`` (NaN when there is no run).
    """

    table: str
    dataset: str
    solver: str
    paper_seconds: float
    task: Task | None = None
    label: str = ""
    committed: float = float("nan")
    reason: str = ""


def timing_tables() -> list[str]:
    """Keys of every paper table reporting ``fit_time``."""
    return [key for key in list_paper_tables() if load_paper_table(key).quantity == "fit_time"]


def table_cells(key: str, results_root: Path = ROOT / "results") -> list[Cell]:
    """The cells of timing table ``key`` with a number, each with its split-0 task or the reason
    it has none (target unsupported, data unavailable, not in the config, never run)."""
    table = load_paper_table(key)
    targets = load_targets()
    # the target comparing the table, else the paper item's own (e.g. an unsupported one)
    item = key.replace("/", "-").split("_")[0]
    target = next((t for t in targets.values() if key in t.tables),
                  targets[item] if item in set(targets) else None)
    exp = target_experiment(target, targets, root=ROOT) if target else None
    why = "no reproduction target holds it" if target is None else availability(target, exp)
    cells = [Cell(key, row, col, mean) for row, col, mean, _ in table.cells()]
    if why or exp is None:
        return [dataclasses.replace(c, reason=why or "no config") for c in cells]
    runs = RunStore(results_root / exp.name).read()
    tasks = {}
    for task in all_tasks(exp):
        if task.split == 0:
            tasks.setdefault(_paper_key(task, table), []).append(task)
    out = []
    for cell in cells:
        found = tasks.get((cell.dataset, cell.solver))
        if not found:
            out.append(dataclasses.replace(cell, reason=f"not run by config {exp.name}"))
        for task in found or ():
            out.append(_with_committed(cell, task, runs, exp.name))
    return out


def _paper_key(task: Task, table: PaperTable) -> tuple[str, str]:
    """The (row, column) of ``table`` a task fills, as ``tables.compare_with_paper`` maps it."""
    row = task.dataset.label if task.dataset.label in table.row_names else task.dataset.name
    col = task.solver.label if task.solver.label in table.column_names else task.solver.name
    return row, col


def _with_committed(cell: Cell, task: Task, runs: pd.DataFrame, experiment: str) -> Cell:
    """``cell`` timed by ``task`` with the committed split-0 run's solver parameters."""
    from dml_bench.datasets import dataset_status

    cell = dataclasses.replace(cell, label=task.solver.label)
    if dataset_status(task.dataset.name) == "network needed":
        return dataclasses.replace(cell, reason=f"data not available ({task.dataset.name})")
    hits = runs[(runs["split"] == 0) & (runs["dataset"] == task.dataset.label)
                & (runs["label"] == task.solver.label)] if len(runs) else runs
    if hits.empty:
        return dataclasses.replace(cell, reason=f"no split-0 run in results/{experiment}/runs.csv")
    row = hits.sort_values("finished_at").iloc[-1]
    known = SOLVERS[task.solver.name]().get_params()
    params = {k: v for k, v in json.loads(row["solver_params"]).items() if k in known}
    tuned = json.loads(row["tuned_params"]) if isinstance(row["tuned_params"], str) else {}
    task = dataclasses.replace(task, solver=dataclasses.replace(task.solver, params=params),
                               tuned=tuple(sorted(tuned.items())))
    return dataclasses.replace(cell, task=task, committed=float(row["fit_time"]))


#: per-iteration work models of ``hardware_floor.py``, (flops, bytes) from the split's shape:
#: ``floor_seconds`` = iterations × max(flops / GEMM rate, bytes / bandwidth), both measured once
#: per run, a lower bound on the fit's time at its iteration count
WORK_MODELS = {"dml_eig": lambda X, constraints: dml_eig_work(len(X), len(constraints.dissimilar),
                                                              X.shape[1])}


@functools.cache
def machine_rates() -> tuple[float, float]:
    """The GEMM rate (flop/s) and memory bandwidth (byte/s) of one thread, measured once."""
    with threadpool_limits(limits=BLAS_THREADS):
        return gemm_rate(), memory_bandwidth()


def fit_floor(solver: str, X, constraints, n_iter) -> float:
    """The hardware floor of ``n_iter`` iterations of ``solver`` on the split (NaN without a
    work model)."""
    if solver not in WORK_MODELS or not n_iter:
        return np.nan
    return n_iter * floor_seconds(*WORK_MODELS[solver](X, constraints), *machine_rates())[0]


#: cells whose committed fit took less than this many seconds are fitted once untimed first: the
#: first fit of a solver in a process loads its compiled kernels from numba's on-disk cache
#: (0.1–0.5 s), which would dominate a sub-second row; the papers' times exclude MATLAB's
#: start-up likewise
WARM_UP_BELOW_SECONDS = 10.0
#: a short cell is then timed this many times and the fastest fit kept (as ``timeit`` does: on a
#: shared machine the other processes only ever add time; sub-second rows varied by 1.5× between
#: single runs at load 1.6)
SHORT_REPEATS = 3


def measure(cell: Cell) -> dict:
    """Fit the cell's task (1 BLAS thread; a short cell, :data:`WARM_UP_BELOW_SECONDS`, after an
    untimed warm-up fit and :data:`SHORT_REPEATS` times, keeping the fastest) and return its
    ``paper_times.csv`` row (``load_avg_1min``: the
    machine's load after the fit; above the core count, other processes competed and the wall
    time exceeds the CPU time)."""
    with threadpool_limits(limits=BLAS_THREADS):
        X_train, y_train, _, _, constraints, _, _ = prepare_split(cell.task)
        short = not cell.committed >= WARM_UP_BELOW_SECONDS  # NaN: no committed time, short
        if short:
            fit_task_solver(cell.task, X_train, y_train, constraints)
        fits = [fit_task_solver(cell.task, X_train, y_train, constraints)
                for _ in range(SHORT_REPEATS if short else 1)]
        solver, wall, cpu = min(fits, key=lambda fit: fit[1])
    n_iter = getattr(solver, "n_iter_", None)
    floor = fit_floor(cell.task.solver.name, X_train, constraints, n_iter)
    to_gap = {f"seconds_to_gap_{tol:.0e}".replace("e-0", "e-"): seconds_to_gap(solver, tol)
              for tol in GAP_TOLERANCES}
    return {"table": cell.table, "dataset": cell.dataset, "solver": cell.solver,
            "label": cell.label, "dataset_label": cell.task.dataset.label,
            "split": cell.task.split, "paper_seconds": cell.paper_seconds,
            "ours_wall_seconds": wall, "ours_cpu_seconds": cpu,
            "ratio": wall / cell.paper_seconds, "cpu_ratio": cpu / cell.paper_seconds,
            "n_iter": n_iter, "seconds_per_iter": wall / n_iter if n_iter else np.nan,
            "floor_seconds": floor, "floor_ratio": floor / cell.paper_seconds,
            "converged": getattr(solver, "converged_", None),
            "optimality": getattr(solver, "optimality_", np.nan),
            "optimality_measure": getattr(solver, "optimality_measure", ""), **to_gap,
            "committed_wall_seconds": cell.committed,
            "solver_params": json.dumps(cell.task.solver_params(), sort_keys=True, default=str),
            "blas_threads": BLAS_THREADS, "load_avg_1min": os.getloadavg()[0],
            "measured_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "hostname": platform.node(), "cpu_model": cpu_model()}


def seconds_to_gap(solver, tol: float) -> float:
    """Fit seconds until the solver's relative duality gap first fell to ``tol``: the first
    ``trace_["time"]`` whose ``gap / |objective|`` (``|primal|`` where the trace has it:
    FrobMetric) is ≤ ``tol``. NaN when the gap never got there, or the solver's optimality
    measure is no relative duality gap (the trace's clock starts inside ``fit``, after input
    validation)."""
    if getattr(solver, "optimality_measure", "") != "relative_duality_gap":
        return np.nan  # a trace "gap" of another kind (BoostMetric's) is no duality gap
    trace = getattr(solver, "trace_", {})
    scale = trace.get("primal", trace.get("objective"))
    if "gap" not in trace or "time" not in trace or scale is None:
        return np.nan
    reached = np.flatnonzero(np.asarray(trace["gap"]) <= tol * np.abs(np.asarray(scale)))
    return float(np.asarray(trace["time"])[reached[0]]) if len(reached) else np.nan


def read_times(path: Path) -> pd.DataFrame:
    """The measurements of ``paper_times.csv`` (empty with :data:`COLUMNS` when absent)."""
    if not path.is_file():
        return pd.DataFrame(columns=COLUMNS)
    times = pd.read_csv(path)  # rows measured before a column existed read it as empty
    return times.reindex(columns=list(dict.fromkeys([*COLUMNS, *times.columns])))


def record(path: Path, row: dict) -> None:
    """Add ``row`` to ``path``, replacing an earlier row of its key: the file is rewritten to a
    temporary file and renamed, under a lock, so concurrent runs and kills never corrupt it."""
    with FileLock(str(path) + ".lock"):
        old = read_times(path)
        same = np.logical_and.reduce([old[k].astype(str) == str(row[k]) for k in KEY])
        new = pd.concat([old[~same], pd.DataFrame([row])], ignore_index=True)
        tmp = path.with_suffix(".csv.tmp")
        new.reindex(columns=list(dict.fromkeys([*COLUMNS, *new.columns]))).to_csv(tmp, index=False)
        os.replace(tmp, path)


def summarize(times: pd.DataFrame) -> pd.DataFrame:
    """Per (table, solver label): rows timed, geometric-mean ratio (wall, and CPU seconds over
    the paper's), worst row and its (wall) ratio, rows slower than the paper, whether the
    method is the paper's own (``seed``), and the rows whose relative duality gap reached 1e-3
    with the geometric-mean ratio of the seconds it took; and, for a solver with a work model
    measured on every row, the geometric mean of its hardware floor over the paper's time (above
    0.1, a geometric mean of 0.1 × the paper is out of reach at the iterations run)."""
    out = []
    for (table, label), part in times.groupby(["table", "label"], sort=False):
        worst = part.loc[part["ratio"].idxmax()]
        floors = part["floor_ratio"].astype(float).dropna()
        to_gap = (part["seconds_to_gap_1e-3"].astype(float).where(
            part["optimality_measure"] == "relative_duality_gap") / part["paper_seconds"].astype(float))
        out.append({"table": table, "solver": label,
                    "seed": label in SEED_METHODS.get(table.split("/")[0], ()),
                    "n_rows": len(part), "geomean_ratio": _geomean(part["ratio"]),
                    "geomean_cpu_ratio": _geomean(part["cpu_ratio"]),
                    "worst_dataset": worst["dataset"], "worst_ratio": float(worst["ratio"]),
                    "n_slower_than_paper": int((part["ratio"] > 1).sum()),
                    "n_reached_gap_1e-3": int(to_gap.notna().sum()),
                    "geomean_ratio_to_gap_1e-3": (_geomean(to_gap.dropna()) if to_gap.notna().any()
                                                  else np.nan),
                    "geomean_floor_ratio": _geomean(floors) if len(floors) == len(part) else np.nan})
    return pd.DataFrame(out, columns=["table", "solver", "seed", "n_rows", "geomean_ratio",
                                      "geomean_cpu_ratio", "worst_dataset", "worst_ratio",
                                      "n_slower_than_paper", "n_reached_gap_1e-3",
                                      "geomean_ratio_to_gap_1e-3", "geomean_floor_ratio"])


def _geomean(values: pd.Series) -> float:
    return float(np.exp(np.log(values.astype(float)).mean()))


def untimed(times: pd.DataFrame, tables: list[str]) -> dict[tuple[str, str], list[str]]:
    """The cells of ``tables`` without a measurement, ``"dataset × method"`` per (table, reason)."""
    done = set(zip(times["table"], times["dataset"], times["label"]))
    groups = {}
    for key in tables:
        for c in table_cells(key):
            if (c.table, c.dataset, c.label) in done:
                continue
            reason = c.reason or f"not timed yet (committed split-0 fit {c.committed:.0f} s)"
            groups.setdefault((c.table, reason), []).append(f"{c.dataset} × {c.label or c.solver}")
    return groups


def in_paper_order(times: pd.DataFrame, tables: list[str]) -> pd.DataFrame:
    """``times`` sorted by table (``tables``' order), then the paper's columns and rows."""
    rank = {}
    for key in set(times["table"]):
        table = load_paper_table(key)
        rank[key] = ({c: i for i, c in enumerate(table.column_names)},
                     {r: i for i, r in enumerate(table.row_names)})
    order = [(tables.index(t) if t in tables else len(tables), rank[t][0].get(s, -1),
              rank[t][1].get(d, -1)) for t, s, d in zip(times["table"], times["solver"],
                                                         times["dataset"])]
    return times.iloc[sorted(range(len(times)), key=order.__getitem__)]


def write_summary(out: Path, tables: list[str]) -> pd.DataFrame:
    """Rewrite ``paper_times_summary.csv`` / ``.md`` and ``paper_times.png`` from the CSV."""
    times = in_paper_order(read_times(out / "paper_times.csv"), tables)
    summary = summarize(times)
    summary.to_csv(out / "paper_times_summary.csv", index=False)
    lines = ["# Fit time against the papers' timing tables", "",
             "`python benchmarks/timing/bench_paper_times.py` (`make bench`): split 0 of each "
             "config, the committed run's parameters, 1 BLAS thread; ratio = our wall seconds / "
             "the paper's seconds (its own, older hardware and MATLAB); the CPU ratio uses our CPU "
             "seconds, which other processes on a shared machine do not inflate. Machine: "
             f"{', '.join(sorted(set(times['cpu_model'].astype(str)))) or '-'}.", "",
             "Time to a stated tolerance: the seconds until the relative duality gap first fell to "
             "1e-3 (from the solver's trace; solvers that record a gap), over the paper's "
             "seconds, for the rows that got there.", "",
             "Floor: the hardware floor of the iterations our fit ran (`hardware_floor.py`'s work "
             "model of one iteration, at this machine's GEMM rate and memory bandwidth measured "
             "in the run), over the paper's seconds: no implementation of those iterations on "
             "this machine is faster. Where its geometric mean exceeds 0.1, a geometric mean of "
             "0.1 × the paper is out of reach at that number of iterations (solvers with a work "
             "model).", "",
             "| table | method | seed | rows | geomean ratio | geomean CPU ratio | worst row | "
             "worst ratio | slower than paper | rows at gap 1e-3 | geomean ratio to gap 1e-3 | "
             "geomean floor ratio |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r.table} | {r.solver} | {'yes' if r.seed else ''} | {r.n_rows} | "
              f"{r.geomean_ratio:.3g} | {r.geomean_cpu_ratio:.3g} | {r.worst_dataset} | "
              f"{r.worst_ratio:.3g} | {r.n_slower_than_paper} | {r[9]} | "
              f"{r[10]:.3g} | {r[11]:.3g} |".replace("nan", "–")
              for r in summary.itertuples(index=False)]
    missing = untimed(times, tables)
    if missing:
        lines += ["", "## Cells not timed", "", "| table | cells | why |", "|---|---|---|"]
        lines += [f"| {t} | {', '.join(cells)} | {why} |" for (t, why), cells in missing.items()]
    (out / "paper_times_summary.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if len(times):
        plot(times, out)
    return summary


def plot(times: pd.DataFrame, out: Path) -> None:
    """``paper_times.png``: one panel per table, ratio per row (log scale), lines at 0.1 and 1;
    the paper's own methods as stars, one colour per method across panels."""
    from dml_bench.report.figures import pyplot, save_figure

    plt = pyplot()

    tables = list(dict.fromkeys(times["table"]))
    colours = {label: plt.cm.tab20(i % 20) for i, label in enumerate(dict.fromkeys(times["label"]))}
    fig, axes = plt.subplots(1, len(tables), figsize=(4.6 * len(tables), 4.2), squeeze=False)
    for ax, key in zip(axes[0], tables):
        part = times[times["table"] == key]
        rows = list(dict.fromkeys(part["dataset"]))
        seeds = SEED_METHODS.get(key.split("/")[0], ())
        for label, line in part.groupby("label", sort=False):
            ax.plot([rows.index(d) for d in line["dataset"]], line["ratio"],
                    "*" if label in seeds else "o", markersize=9 if label in seeds else 6,
                    color=colours[label], label=label + (" (seed)" if label in seeds else ""))
        for level, style in ((1.0, "-"), (0.1, "--")):
            ax.axhline(level, color="grey", linestyle=style, linewidth=1)
        ax.set_yscale("log")
        ax.set_xticks(range(len(rows)), rows, rotation=60, fontsize="small")
        ax.set_title(key)
        ax.set_ylabel("our time / paper's time")
        ax.legend(fontsize="x-small")
    fig.tight_layout()
    save_figure(fig, out, "paper_times")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", nargs="+", help="timing tables (default: all of them)")
    parser.add_argument("--solver", nargs="+", help="paper columns or our solver labels")
    parser.add_argument("--dataset", nargs="+", help="paper rows or our dataset labels")
    parser.add_argument("--max-seconds", type=float,
                        help="skip cells whose committed split-0 fit took longer")
    parser.add_argument("--force", action="store_true", help="re-time cells already measured")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "bench")
    args = parser.parse_args(argv)
    tables = timing_tables()
    for key in args.table or ():
        if key not in tables:
            raise UnknownNameError("timing table", key, tables)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "paper_times.csv"
    for key in args.table or tables:
        cells = [c for c in table_cells(key)
                 if (not args.solver or {c.solver, c.label} & set(args.solver))
                 and (not args.dataset or {c.dataset, c.task and c.task.dataset.label}
                      & set(args.dataset))]
        if not cells:
            print(f"{key}: no cell matches --solver/--dataset")
        done = set(zip(*[read_times(path)[k].astype(str) for k in KEY]))
        for cell in cells:
            name = f"{key} {cell.dataset} × {cell.label or cell.solver}"
            if cell.task is None:
                print(f"{name}: skipped, {cell.reason}")
            elif not args.force and (key, cell.dataset, cell.solver, cell.label) in done:
                print(f"{name}: already timed (--force re-times)")
            elif args.max_seconds is not None and cell.committed > args.max_seconds:
                print(f"{name}: skipped, committed fit {cell.committed:.0f} s > --max-seconds")
            else:
                try:
                    row = measure(cell)
                except Exception as exc:  # a broken solver must not stop the other cells
                    print(f"{name}: failed, {type(exc).__name__}: {exc}", flush=True)
                    continue
                record(path, row)
                print(f"{name}: {row['ours_wall_seconds']:.3g} s (cpu {row['ours_cpu_seconds']:.3g}"
                      f" s, {row['n_iter']} iterations) vs paper {cell.paper_seconds:g} s: "
                      f"ratio {row['ratio']:.3g}", flush=True)
    summary = write_summary(args.out, tables)
    print(summary.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    print(f"wrote {path}, {args.out / 'paper_times_summary.csv'} (.md), "
          f"{args.out / 'paper_times.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(script_status(main))
