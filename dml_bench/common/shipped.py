"""The experiment configs the package ships (``dml_bench/configs/``: the papers' tables, the
leaderboard, the quickstart), found from any folder.

A config path is read as given when that file exists, so a local config of the same name comes
first (``configs/ying2012_table4.yaml`` in the working folder, a copy the user edited). Otherwise
a path ``configs/<name>`` (or a bare ``<name>.yaml``) is the shipped config of that name.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

#: the folder the shipped configs are named under (``configs/<name>.yaml``)
CONFIG_FOLDER = "configs"


def shipped_configs() -> Path:
    """The folder of the shipped configs, inside the installed package."""
    return Path(str(resources.files("dml_bench") / CONFIG_FOLDER))


def resolve_config(path: str | Path) -> Path:
    """The file a config path names: ``path`` itself when it exists, else the shipped config
    it names (``configs/<name>`` or ``<name>``), else ``path`` unchanged (whose reading then
    says that it is not found)."""
    path = Path(path)
    if path.exists() or path.is_absolute():
        return path
    parts = path.parts[1:] if path.parts[:1] == (CONFIG_FOLDER,) else path.parts
    shipped = shipped_configs().joinpath(*parts) if parts else None
    return shipped if shipped is not None and shipped.is_file() else path


#: the starter config of ``dmlbench init`` (``{name}`` and ``{dataset}`` filled in)
STARTER = """\
# A dml-bench experiment: every dataset x solver x split is one task; `dmlbench run {file}`
# runs them (resumably) into results/{name}/ and prints the error table. docs/config.md lists
# every key; `dmlbench validate {file}` checks the file without running anything, and
# `dmlbench run {file} split.n_splits=2` changes a value for one run.
name: {name}
description: my data, k-NN error of a few metric learners against the Euclidean distance

datasets:
  # a CSV of yours: one row per point, a header row, the class in `label_column`
  # (also .npz with X and y, .npy pairs, LIBSVM .svm; or a registered name such as wine)
  {dataset}

split:            # random stratified 70/30 splits, the same for every solver
  train_fraction: 0.7
  n_splits: 10
  seed: 0

constraints:      # from the training part only: k nearest same-class targets and impostors
  generator: knn_triplets
  params: {{k: 3}}

solvers:          # `dmlbench solvers` lists them; params and a `tune:` grid are optional
  - name: euclidean
  - name: dml_eig
  - name: lmnn
  - name: itml
    tune: {{grid: {{gamma: [0.1, 1.0, 10.0]}}, cv: 3}}   # chosen by 3-fold CV on the training part

evaluation:       # 3-NN classification error on the test part
  knn_k: 3

execution:        # parallel tasks (-j on the command line)
  n_jobs: 2
"""


def starter_config(name: str, data: str | None = None, label_column: str | None = None) -> str:
    """The text of a commented starter config for the data file ``data`` (a CSV with its class
    in ``label_column``), or for scikit-learn's wine data when no file is given."""
    if data is None:
        dataset = "- wine          # replace by your file: - {path: data/my.csv, label_column: label}"
    else:
        label = f", label_column: {label_column}" if label_column else ""
        dataset = f"- {{path: {data}{label}}}"
    return STARTER.format(name=name, dataset=dataset, file=f"{name}.yaml")
