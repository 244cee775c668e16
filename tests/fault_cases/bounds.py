"""Bounded input: a few bytes of a config or a data file that declare something enormous (an
alias bomb, thousands of nesting levels, a billion splits, a 25 TiB array) end at once in one
line: a config error (exit 2), or the dataset skipped with its reason (exit 0).

The array cases fix the budget with ``DMLBENCH_MAX_ARRAY_BYTES`` (1 GiB), so that their line does
not depend on the memory of the machine. The helpers that craft the files are used by
``tests/test_bounded_input.py`` too.
"""

from __future__ import annotations

import gzip
import io
import struct
import zipfile
from pathlib import Path

import numpy as np
from numpy.lib import format as npy_format

from . import GOOD, Case, changed

# --- crafted files ------------------------------------------------------------------------------


def npy_header(shape: tuple, descr: str = "<f8", version: int = 1) -> bytes:
    """The header of a ``.npy`` array of ``shape`` (and no data)."""
    out = io.BytesIO()
    header = {"descr": descr, "fortran_order": False, "shape": tuple(shape)}
    (npy_format.write_array_header_1_0 if version == 1 else npy_format.write_array_header_2_0)(
        out, header)
    return out.getvalue()


def write_npz_header(path: Path, members: dict) -> Path:
    """A ``.npz`` whose members (``{name: (shape, descr)}``) are headers without data."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, (shape, descr) in members.items():
            archive.writestr(f"{name}.npy", npy_header(shape, descr))
    return path


def write_h5_unallocated(path: Path, members: dict) -> Path:
    """An HDF5 file whose datasets (``{name: (shape, dtype)}``) are chunked and never written: a
    few KB on disk, whatever their shape."""
    import h5py

    with h5py.File(path, "w") as fh:
        for name, (shape, dtype) in members.items():
            fh.create_dataset(name, shape=shape, dtype=dtype, chunks=True)
    return path


def write_mat_declaring(path: Path, rows: int, cols: int) -> Path:
    """A MAT v5 file whose variable ``X`` declares ``rows`` × ``cols`` doubles but holds one:
    scipy writes ``X`` as a 1 × 1 matrix, whose dimensions sub-element is patched."""
    import scipy.io

    buffer = io.BytesIO()
    scipy.io.savemat(buffer, {"X": np.zeros((1, 1)), "names": np.array(["Aaron_Eckhart_0001"])})
    raw = buffer.getvalue()
    dims = struct.pack("<IIii", 5, 8, 1, 1)  # miINT32, 8 bytes, (1, 1): X's, the first variable
    at = raw.index(dims)
    path.write_bytes(raw[:at] + struct.pack("<IIii", 5, 8, rows, cols) + raw[at + len(dims):])
    return path


def write_libsvm_huge_index(path: Path, index: int = 2_000_000_000) -> Path:
    """Four LIBSVM lines, one with feature ``index``."""
    path.write_text(f"1 1:0.5\n2 {index}:1\n1 3:1\n2 4:2\n")
    return path


def write_idx_gz_declaring(path: Path, shape: tuple) -> Path:
    """A gzipped IDX (uint8) header declaring ``shape``, with no data."""
    head = b"\0\0\x08" + bytes([len(shape)]) + struct.pack(f">{len(shape)}I", *shape)
    path.write_bytes(gzip.compress(head))
    return path


#: X of 1,000,000,000 LFW-SIFT rows (3456 float64 each): 25.1 TiB
BIG_ROWS = 1_000_000_000
LFW_BIG = {"X": ((BIG_ROWS, 3456), "<f8"), "names": ((BIG_ROWS,), "<U24")}

# --- configs ------------------------------------------------------------------------------------

_BASE = ("name: corpus\ndatasets: [wine]\nsolvers: [euclidean]\nsplit: {n_splits: 2}\n"
         "execution: {backend: sequential}\n")
_LEVELS = "abcdefghi"



def _level(i: int) -> str:
    """Level ``i`` of the bomb: 9 strings, or 9 aliases of level ``i - 1``."""
    item = f"*{_LEVELS[i - 1]}" if i else '"lol"'
    return f"  {_LEVELS[i]}: &{_LEVELS[i]} [{', '.join([item] * 9)}]\n"


#: the "billion laughs": 9 levels of 9 aliases of the level above, 9^9 strings under notes:
ALIAS_BOMB = _BASE + "notes:\n" + "".join(_level(i) for i in range(len(_LEVELS)))
DEEP = _BASE + "notes: {deep: " + "[" * 5000 + "]" * 5000 + "}\n"
NOT_UTF8 = _BASE.encode() + "description: caf\u00e9 au lait\n".encode("latin-1")
OVERSIZED = _BASE + "description: '" + "x" * 2**20 + "'\n"
RECURSIVE = _BASE + "notes: &loop {again: *loop}\n"
#: the offset of the Latin-1 é in NOT_UTF8
_E_OFFSET = len(_BASE.encode()) + len("description: caf")

#: the array budget of the data cases: 1 GiB
ONE_GIB = str(2**30)
BUDGET = "the declared maximum of 1.0 GiB (DMLBENCH_MAX_ARRAY_BYTES)"


def _budget(ctx):
    ctx.monkeypatch.setenv("DMLBENCH_MAX_ARRAY_BYTES", ONE_GIB)


def _in_work(write, name, *args):
    """A setup writing ``name`` in the working folder with ``write``, under the 1 GiB budget."""
    def setup(ctx):
        _budget(ctx)
        write(ctx.work / name, *args)
    return setup


def write_arff_distinct_nominal(path: Path, n: int) -> Path:
    """An ARFF file of ``n`` rows: a numeric column, a nominal one with a distinct value in
    every row (``n`` one-hot columns), and the class ``c`` (p / q)."""
    lines = ["@relation r", "@attribute x numeric",
             "@attribute a {" + ",".join(f"v{i}" for i in range(n)) + "}", "@attribute c {p,q}",
             "@data", *(f"{i},v{i},{'pq'[i % 2]}" for i in range(n))]
    path.write_text("\n".join(lines) + "\n")
    return path


def _arff_400_values(ctx):
    """400 rows × (1 + 400) one-hot columns: 1.2 MiB, over a budget of 1 MiB."""
    ctx.monkeypatch.setenv("DMLBENCH_MAX_ARRAY_BYTES", str(2**20))
    write_arff_distinct_nominal(ctx.work / "nominal.arff", 400)


def _lfw_cache_npz(ctx):
    """A colleague's dataset cache holding a crafted LFW-SIFT file where ``lfw_sift`` looks."""
    _budget(ctx)
    (ctx.cache / "lfw").mkdir(parents=True)
    write_npz_header(ctx.cache / "lfw" / "lfw_sift_funneled.npz", LFW_BIG)


def _lfw(path: str | None) -> dict:
    """A verification experiment of LFW-SIFT (LFW's folds), from ``path`` or from the cache."""
    entry = {"name": "lfw_sift", **({"path": path} if path else {})}
    return {"name": "corpus_lfw", "datasets": [entry], "solvers": ["euclidean"],
            "evaluation": {"task": "verification", "folds": "lfw"},
            "execution": {"backend": "sequential"}}


SKIPPED_LFW = "skipped euclidean (all datasets): data not available: "
LFW_X = f"declares an array of 25.1 TiB (1000000000 × 3456 float64), more than {BUDGET}"
LIBSVM = (f"dataset 'big' (big.libsvm): the file declares a dense array of 59.6 GiB "
          f"(4 × 2000000000 float64), more than {BUDGET}; its largest feature index is "
          "2000000000, on 4 lines")


def _config(id, cfg, line, argv=("run", "{cfg}"), **kw):
    return Case(id, "config", cfg, argv=argv, line=line, **kw)


VALIDATE = ("validate", "{cfg}")

CASES = [
    _config("alias-bomb-validate", ALIAS_BOMB, "{cfg}: <top>: YAML beyond the limits: line 12, "
            "column 10: more than 100000 nodes with its aliases expanded", VALIDATE),
    _config("alias-bomb-run", ALIAS_BOMB, "{cfg}: <top>: YAML beyond the limits: line 12, "
            "column 10: more than 100000 nodes with its aliases expanded"),
    _config("recursive-alias", RECURSIVE, "{cfg}: <top>: YAML beyond the limits: line 6, column "
            "22: the alias *loop refers to a node that contains it (a recursive document)",
            VALIDATE),
    _config("nesting-5000-levels", DEEP, "{cfg}: <top>: YAML beyond the limits: line 6, column "
            "113: nested deeper than 100 levels", VALIDATE),
    _config("nesting-5000-levels-run", DEEP, "{cfg}: <top>: YAML beyond the limits: line 6, "
            "column 113: nested deeper than 100 levels"),
    _config("config-not-utf8", NOT_UTF8, f"{{cfg}}: <top>: not UTF-8 text: byte 0xe9 at offset "
            f"{_E_OFFSET} is not valid UTF-8 (save the file as UTF-8)"),
    _config("config-over-1-MiB", OVERSIZED, f"{{cfg}}: <top>: the file has "
            f"{len(OVERSIZED.encode())} bytes, more than the 1.0 MiB (1048576 bytes) accepted "
            "for a YAML file", VALIDATE),
    _config("integer-of-5000-digits", _BASE + "split: {n_splits: " + "9" * 5000 + "}\n",
            "{cfg}: <top>: not valid YAML: line 6, column 19: cannot read the value: Exceeds the "
            "limit (4300 digits) for integer string conversion: value has 5000 digits; use "
            "sys.set_int_max_str_digits() to increase the limit", VALIDATE),
    _config("impossible-date", _BASE + "notes: {when: 2024-13-45}\n",
            "{cfg}: <top>: not valid YAML: line 6, column 15: cannot read the value: month must "
            "be in 1..12", VALIDATE),
    _config("n_splits-billion-validate", changed(split={"n_splits": 1_000_000_000}),
            "{cfg}: split.n_splits: must be at most 1000, got 1000000000", VALIDATE),
    _config("n_splits-billion-run", changed(split={"n_splits": 1_000_000_000}),
            "{cfg}: split.n_splits: must be at most 1000, got 1000000000"),
    _config("dataset-n_splits-billion", changed(datasets=[{"name": "wine",
                                                           "n_splits": 1_000_000_000}]),
            "{cfg}: datasets[0].n_splits: must be at most 1000, got 1000000000"),
    _config("grid-of-a-million-points", changed(solvers=[{"name": "dml_eig", "tune": {
        "cv": 3, "grid": {"mu": [10.0 ** -i for i in range(100)],
                          "max_iter": list(range(1, 101)), "tol": [1e-3] * 100}}}]),
            "{cfg}: solvers[0].tune.grid: has 1000000 points (the product of its value lists), "
            "more than the 10000 a grid may have", VALIDATE),
    _config("tune-cv-billion", changed(solvers=[{"name": "dml_eig", "tune": {
        "cv": 1_000_000_000, "grid": {"mu": [0.1, 1.0]}}}]),
            "{cfg}: solvers[0].tune.cv: must be at most 100, got 1000000000"),
    _config("knn_k-billion", changed(evaluation={"knn_k": 1_000_000_000}),
            "{cfg}: evaluation.knn_k: must be at most 1000, got 1000000000"),
    _config("constraints-k-billion", changed(constraints={"params": {"k": 1_000_000_000}}),
            "{cfg}: constraints.params.k: must be at most 1000, got 1000000000"),
    _config("n_samples-huge", changed(datasets=[{"name": "wine", "n_samples": 10**12}]),
            "{cfg}: datasets[0].n_samples: must be at most 100000000, got 1000000000000",
            VALIDATE),
    _config("verification-n_folds-huge", {**GOOD, "evaluation": {
        "task": "verification", "folds": "drawn", "n_folds": 10**9}},
            "{cfg}: evaluation.n_folds: must be at most 100, got 1000000000", VALIDATE),
    _config("negative-seed", changed(split={"n_splits": 2, "seed": -1}),
            "{cfg}: split.seed: must be at least 0, got -1"),
    Case("lfw-sift-npz-25-TiB", "data", _lfw("big.npz"), code=0, rows_after=2,
         setup=_in_work(write_npz_header, "big.npz", LFW_BIG),
         line=f"{SKIPPED_LFW}{{work}}/big.npz: X {LFW_X}"),
    Case("lfw-sift-h5-25-TiB", "data", _lfw("big.h5"), code=0, rows_after=2,
         setup=_in_work(write_h5_unallocated, "big.h5",
                        {"X": ((BIG_ROWS, 3456), "f8"), "names": ((BIG_ROWS,), "S24")}),
         line=f"{SKIPPED_LFW}{{work}}/big.h5: /X {LFW_X}"),
    Case("lfw-sift-mat-25-TiB", "data", _lfw("big.mat"), code=0, rows_after=2,
         setup=_in_work(write_mat_declaring, "big.mat", BIG_ROWS, 3456),
         line=f"{SKIPPED_LFW}{{work}}/big.mat: X declares an array of 25.1 TiB (1000000000 × "
              f"3456 MATLAB double), more than {BUDGET}"),
    Case("lfw-sift-npz-in-a-colleagues-cache", "data", _lfw(None), code=0, rows_after=2,
         setup=_lfw_cache_npz,
         line=f"{SKIPPED_LFW}{{cache}}/lfw/lfw_sift_funneled.npz: X {LFW_X}"),
    Case("libsvm-feature-index-2e9", "data",
         changed(datasets=[{"path": "big.libsvm"}, {"name": "wine"}]),
         setup=_in_work(write_libsvm_huge_index, "big.libsvm"), code=0,
         line=f"skipped big × euclidean: data not available: {LIBSVM}"),
    Case("arff-one-hot-beyond-the-budget", "data",
         changed(datasets=[{"path": "nominal.arff", "label_column": "c"}, {"name": "wine"}]),
         setup=_arff_400_values, code=0,
         line="skipped nominal × euclidean: data not available: dataset 'nominal' (nominal.arff): "
              "the one-hot encoded table declares a dense array of 1.2 MiB (400 × 401 float64), "
              "more than the declared maximum of 1.0 MiB (DMLBENCH_MAX_ARRAY_BYTES)"),
]
