"""Whether SGD-One's two subgradient rules take different steps on the board's fits.

SGD-One steps along a subgradient of −λ_min(W): ``"eigenvector"`` one unit eigenvector of
λ_min, ``"eigenspace"`` the average over its eigenspace (``dml_bench.solvers.lowrank_sgd_one``).
The two differ only at a step where λ_min is multiple while the multiplier μ > 0, which, with
more features than training points, is a step where λ_min lies off the span of the points.
This script refits the committed final fit of every split of a data set (the runner's
``all_tasks`` + ``prepare_split``, the tuned parameters of the split's ``runs.csv`` row),
counts those steps, and checks that the refit reproduces the committed error. Rows go to
``results/leaderboard_diagnosis/<dataset>_sgd_one_subgradient.csv``.

    DMLBENCH_DATA_MIRROR=../shared/datasets \\
        python benchmarks/diagnoses/sgd_one_subgradient_diagnosis.py dexter
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from unittest import mock

import pandas as pd

from dml_bench.evaluate import model_error
from dml_bench.experiment.knn import all_tasks, prepare_split
from dml_bench.leaderboard.board import load_board
from dml_bench.run.results import RunStore
from dml_bench.solvers import SOLVERS

OUT = Path("results/leaderboard_diagnosis")


def diagnose(dataset: str, config: str, label: str = "sgd_one") -> pd.DataFrame:
    """One row per split: the steps with μ > 0, those where λ_min's eigenspace held the
    complement of the span (where the rules differ), and the refit's and committed errors."""
    exp = load_board(config).experiment
    runs = RunStore(Path("results") / exp.name).read()
    runs = runs[(runs.dataset == dataset) & (runs.label == label)].set_index("split")
    cls = SOLVERS["sgd_one"]
    plain = cls._min_eigenspace
    rows = []
    for task in all_tasks(exp):
        if task.dataset.label != dataset or task.solver.label != label or task.split not in runs.index:
            continue
        X_fit, y_fit, X_eval, y_eval, constraints, *_ = prepare_split(task)
        params = json.loads(runs.loc[task.split, "solver_params"])
        steps = []

        def counted(self, W):
            out = plain(self, W)
            steps.append((self._mu > 0, self._mu > 0 and out[3]))
            return out

        with mock.patch.object(cls, "_min_eigenspace", counted):
            model = cls(**params).fit(X_fit, y_fit, constraints=constraints)
        rows.append({
            "dataset": dataset, "split": task.split, "subgradient": params["subgradient"],
            "lam": params["lam"], "step": params["step"], "span_dim": model.span_dim_,
            "steps": len(steps), "steps_mu_positive": sum(a for a, _ in steps),
            "steps_off_span": sum(o for _, o in steps),
            "refit_error": model_error(model, X_fit, y_fit, X_eval, y_eval,
                                       task.evaluation.knn_k, task.evaluation.tie_break),
            "committed_error": float(runs.loc[task.split, "error"])})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--config", default="configs/leaderboard.yaml")
    args = parser.parse_args()
    rows = diagnose(args.dataset, args.config)
    if not len(rows):
        raise SystemExit(f"no committed sgd_one row on {args.dataset!r}")
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{args.dataset}_sgd_one_subgradient.csv"
    rows.to_csv(path, index=False)
    same = int((rows.refit_error == rows.committed_error).sum())
    print(f"{args.dataset}: {int(rows.steps_off_span.sum())} of {int(rows.steps_mu_positive.sum())}"
          f" steps with mu > 0 had lambda_min off the span, over {len(rows)} splits; the refit "
          f"reproduces the committed error on {same}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
