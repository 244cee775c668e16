"""User-data faults: a dataset that cannot be used is skipped with its reason and the run goes
on (exit 0); data that runs but fails task by task is recorded in ``errors.csv``."""

from __future__ import annotations

import hashlib
import os
import urllib.error
from pathlib import Path

from dml_bench.datasets import files

from . import Case, changed


def _pima_copy(damage):
    """Point the mirror at a copy of the real mirror's pima file, damaged by ``damage(bytes)``
    (None: no mirror folder and no network)."""
    def setup(ctx):
        mirror = ctx.work / "mirror"
        real = Path(os.environ.get("DMLBENCH_DATA_MIRROR") or "")
        ctx.monkeypatch.setenv("DMLBENCH_DATA_MIRROR", str(mirror))
        if damage is None:
            def unreachable(request, timeout=None, **kwargs):
                raise urllib.error.URLError(OSError(-2, "Name or service not known"))
            ctx.monkeypatch.setattr(files.urllib.request, "urlopen", unreachable)
            return
        source = real / "pima" / "pima-indians-diabetes.csv"
        assert source.is_file(), f"needs the offline dataset mirror with {source}"
        damaged = damage(source.read_bytes())
        (mirror / "pima").mkdir(parents=True)
        (mirror / "pima" / "pima-indians-diabetes.csv").write_bytes(damaged)
        ctx.extra["got"] = f"{hashlib.sha256(damaged).hexdigest()} ({len(damaged)} bytes)"
    return setup


PIMA_RUN = changed(datasets=[{"name": "pima"}, {"name": "wine"}])
SKIPPED = "skipped pima × euclidean: data not available: dataset 'pima': "
MISMATCH = (SKIPPED + "sha256 mismatch for {work}/mirror/pima/pima-indians-diabetes.csv (from "
            "the mirror): expected 6bfe5d0f379d17a0e0819b996407e3c09bf80febd4287f2ed212190dfff154af"
            ", got %s. The mirror copy is corrupt or another version: repair the mirror, or unset "
            "DMLBENCH_DATA_MIRROR / --data-mirror and run `dmlbench fetch pima` to download it.")
NON_FINITE = ("skipped {0} × euclidean: data not available: dataset '{0}': data parsed from the "
              "generator has non-finite feature values. To re-fetch, delete the dataset's cached "
              "files and run `dmlbench fetch {0}`; if that fails again, the registry entry does not"
              " match the data.")

CASES = [
    Case("corrupt-mirror-file", "data", PIMA_RUN, code=0, line=MISMATCH % "{got}",
         setup=_pima_copy(lambda d: d[:100] + bytes([d[100] ^ 1]) + d[101:])),
    Case("truncated-mirror-file", "data", PIMA_RUN, code=0, line=MISMATCH % "{got}",
         setup=_pima_copy(lambda d: d[: len(d) // 2])),
    Case("missing-mirror-folder", "data", PIMA_RUN, code=0, setup=_pima_copy(None),
         line=SKIPPED + "downloading https://raw.githubusercontent.com/robintux/"
              "Datasets4StackOverFlowQuestions/f52993bfda077e6ebe17201b1a7394068d0ad6c2/"
              "pima-indians-diabetes.csv failed (<urlopen error [Errno -2] Name or service not "
              "known>); cache: {cache}/pima/pima-indians-diabetes.csv (missing "
              "pima/pima-indians-diabetes.csv); mirror folder {work}/mirror does not exist (check "
              "DMLBENCH_DATA_MIRROR / --data-mirror). To provide it: run `dmlbench fetch pima` on "
              "a machine with network access (it downloads into the cache), copy the file to the "
              "cache path named, or set DMLBENCH_DATA_MIRROR / --data-mirror to a folder holding "
              "pima/pima-indians-diabetes.csv."),
    Case("nan-features", "data", changed(datasets=[{"name": "toy_nan"}, {"name": "wine"}]), code=0,
         line=NON_FINITE.format("toy_nan")),
    Case("inf-features", "data", changed(datasets=[{"name": "toy_inf"}, {"name": "wine"}]), code=0,
         line=NON_FINITE.format("toy_inf")),
    Case("constant-feature", "data",
         changed(datasets=[{"name": "toy_constant"}, {"name": "wine"}],
                 solvers=["euclidean", "dml_eig"]), code=0,
         line="corpus: 6 tasks run, 2 already done, 0 failed, 0 dataset×solver skipped",
         rows_after=8),
    Case("one-class-training-split", "data",
         changed(datasets=[{"name": "toy_one_class"}, "wine"], constraints={"params": {"k": 3}}),
         code=1, line="2 task(s) failed; see {results}/corpus/errors.csv (they are retried by the next run)"),
]
