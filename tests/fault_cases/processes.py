"""Process faults: execution options that contradict each other, runs that meet other runs' locks
and claims, and a dask scheduler that dies mid-run.

Contradictory options are refused in one line before any work (exit 2). A run that finds a task
claimed by another process says so once and waits for it; stale lock files of dead runs are no
obstacle. A dask scheduler killed mid-run ends the run with one line that says how many rows it
saved (exit 1), and the same results folder then resumes with ``dmlbench run``.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pandas as pd
from click.testing import CliRunner
from filelock import FileLock

from dml_bench.cli import main
from dml_bench.experiment.config import load_config
from dml_bench.experiment.knn import all_tasks

from . import NAME, Case, changed

TWO_NEW = changed(datasets=["wine", "iris"])
JOBS = "must be a positive number of workers or -1 (all cores)"


def _new_ids(ctx) -> list[str]:
    """Task ids of the config that the results folder does not hold yet."""
    done = set(pd.read_csv(ctx.run_dir / "runs.csv", dtype={"task_id": str})["task_id"])
    return [t.task_id for t in all_tasks(load_config(ctx.cfg)) if t.task_id not in done]


def _stale_locks(ctx):
    """Lock files left by runs that died: the store's lock and a claim of every task to run."""
    (ctx.run_dir / ".runs.lock").write_text("4242\n")
    claims = ctx.run_dir / ".claims"
    claims.mkdir(exist_ok=True)
    for task_id in _new_ids(ctx):
        (claims / f"{task_id}.lock").write_text("4242\n")


def _another_run_holds_a_task(ctx):
    """Another run (a thread here, with its own lock) holds the claim of one task to run, and
    releases it 1.5 s later without having run it (it failed, or was stopped): this run waits
    for it, then runs it."""
    (ctx.run_dir / ".claims").mkdir(exist_ok=True)
    held = FileLock(ctx.run_dir / ".claims" / f"{_new_ids(ctx)[0]}.lock", thread_local=False)
    acquired = threading.Event()

    def other_run():
        with held:
            acquired.set()
            time.sleep(1.5)

    thread = threading.Thread(target=other_run)
    thread.start()
    acquired.wait(10)
    ctx.extra["other"] = thread


def _waited(ctx, output):
    ctx.extra["other"].join()
    assert output.count("waiting for") == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rows(ctx) -> int:
    path = ctx.run_dir / "runs.csv"
    return max(path.read_bytes().count(b"\n") - 1, 0) if path.exists() else 0


#: wine's finished tasks, and 10 more: DML-eig on wine, both methods on 4 splits of breast cancer
DASK = changed(datasets=["wine", {"name": "breast_cancer", "n_splits": 4}],
               solvers=["euclidean", {"name": "dml_eig", "params": {"max_iter": 1000, "tol": 0.0}}],
               execution={"backend": "dask"})
N_DASK = 10


def _dask_scheduler_killed(ctx):
    """A scheduler and a worker of two threads (``dask scheduler``, ``dask worker``: two threads,
    so that joblib sends the tasks to the cluster); the run on them; ``kill -9`` of the scheduler
    once a row has landed. Then the rerun, sequential,
    resumes. Returns the first run's status and output, its port and row count written as
    ``PORT`` and ``K`` once checked against the folder."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    # a lost connection is given up after 3 s (not 30); the processes' scratch folders go to
    # the case's cache, which is removed with it
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "3s",
           "DASK_TEMPORARY_DIRECTORY": str(ctx.cache / "dask-scratch"),
           "DMLBENCH_CACHE": str(ctx.cache)}
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env,
             "start_new_session": True}
    dask = [sys.executable, "-m", "dask"]
    started = []
    try:
        scheduler = subprocess.Popen([*dask, "scheduler", "--host", "127.0.0.1", "--port",
                                      str(port), "--no-dashboard"], **quiet)
        started.append(scheduler)
        started.append(subprocess.Popen([*dask, "worker", address, "--nthreads", "2",
                                         "--no-nanny", "--no-dashboard"], **quiet))
        before = _rows(ctx)
        run = subprocess.Popen([sys.executable, "-m", "dml_bench", "run", str(ctx.cfg),
                                "--scheduler", address, "--results-dir", str(ctx.results)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=env, cwd=ctx.work, start_new_session=True)
        started.append(run)
        deadline = time.monotonic() + 60
        while _rows(ctx) <= before:
            assert run.poll() is None, run.communicate()[0]
            assert time.monotonic() < deadline, "no row landed on the cluster"
            time.sleep(0.01)
        os.kill(scheduler.pid, signal.SIGKILL)
        output = run.communicate(timeout=60)[0]
    finally:
        for proc in reversed(started):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    saved = _rows(ctx) - before
    assert 0 < saved < N_DASK, output
    output = output.replace(f"; {saved} of {N_DASK} rows saved", f"; K of {N_DASK} rows saved")
    output = output.replace(address, "tcp://127.0.0.1:PORT")

    resumed = CliRunner().invoke(main, ["run", str(ctx.cfg), "--backend", "sequential",
                                        "--results-dir", str(ctx.results)])
    assert resumed.exit_code == 0, resumed.output
    assert (f"{NAME}: {N_DASK - saved} tasks run, {2 + saved} already done, 0 failed, "
            "0 dataset×solver skipped") in resumed.output.splitlines()
    return run.returncode, output


TIMING_JOBS = ("--timing runs one task at a time so that fit times compare: it cannot be "
               "combined with -j %d")

CASES = [
    Case("jobs-zero", "processes", argv=("run", "{cfg}", "-j", "0"), line=f"-j 0: {JOBS}"),
    Case("jobs-minus-two", "processes", argv=("run", "{cfg}", "-j", "-2"), line=f"-j -2: {JOBS}"),
    Case("leaderboard-jobs-zero", "processes",
         argv=("leaderboard", "--config", "{cfg}", "-j", "0"), line=f"-j 0: {JOBS}"),
    Case("reproduce-jobs-zero", "processes",
         argv=("reproduce", "ying2012-table4", "-j", "0"), line=f"-j 0: {JOBS}"),
    Case("scheduler-without-dask", "processes",
         argv=("run", "{cfg}", "--scheduler", "tcp://127.0.0.1:8786"),
         line="--scheduler tcp://127.0.0.1:8786 needs --backend dask (the config's backend is "
              "sequential)"),
    Case("timing-with-two-jobs", "processes", argv=("run", "{cfg}", "--timing", "-j", "2"),
         line=TIMING_JOBS % 2),
    Case("timing-config-with-all-cores", "processes",
         changed(execution={"backend": "sequential", "timing": True}),
         argv=("run", "{cfg}", "-j", "-1"), line=TIMING_JOBS % -1),
    Case("timing-with-dask", "processes", argv=("run", "{cfg}", "--timing", "--backend", "dask"),
         line="--timing runs one task at a time in this process so that fit times compare: it "
              "cannot be combined with --backend dask"),
    Case("force-with-supersede", "processes", argv=("run", "{cfg}", "--force", "--supersede"),
         line="--force and --supersede contradict each other: --force recomputes every task, "
              "--supersede keeps the finished ones (both move the rows of tasks the config no "
              "longer has aside); give one"),
    Case("reproduce-force-with-supersede", "processes",
         argv=("reproduce", "ying2012-table4", "--force", "--supersede"),
         line="--force and --supersede contradict each other: --force recomputes every task, "
              "--supersede keeps the finished ones (both move the rows of tasks the config no "
              "longer has aside); give one"),
    Case("filters-select-nothing", "processes",
         changed(datasets=[{"name": "wine", "solvers": ["euclidean"]}, "iris"],
                 solvers=["euclidean", "lda"]),
         argv=("run", "{cfg}", "--dataset", "wine", "--solver", "lda"),
         line=f"--dataset wine --solver lda select no task of {NAME}: the chosen datasets' "
              "entries restrict their solvers (`solvers:`) to others"),
    Case("stale-lock-files", "processes", TWO_NEW, setup=_stale_locks, code=0,
         line=f"{NAME}: 2 tasks run, 2 already done, 0 failed, 0 dataset×solver skipped",
         rows_after=4),
    Case("another-run-holds-a-task", "processes", TWO_NEW, setup=_another_run_holds_a_task,
         code=0, line="waiting for 1 task that another run on this folder is running",
         rows_after=4, check=_waited),
    Case("dask-scheduler-killed-mid-run", "processes", DASK, invoke=_dask_scheduler_killed,
         code=1, line=f"the dask scheduler at tcp://127.0.0.1:PORT was lost mid-run; K of "
                      f"{N_DASK} rows saved, rerun the same command to resume",
         rows_after=2 + N_DASK),
]

