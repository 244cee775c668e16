"""Bounded input: YAML parsed with limits (size, encoding, nesting, alias expansion), declared
ceilings of the config's counts, and array headers checked against the memory before anything is
allocated. Every file here is generated; every fault is one line, asserted exactly, and fast (the
cases that hung before run in a subprocess with a timeout)."""

from __future__ import annotations

import subprocess
import sys
import tracemalloc
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest
import yaml

from dml_bench.common import resources, safe_yaml
from dml_bench.experiment.config import load_config, parse_config
from dml_bench.experiment.schema import ConfigError
from dml_bench.datasets import DataNotAvailable
from dml_bench.datasets.errors import DataTooLarge
from dml_bench.datasets.loader import file_spec
from dml_bench.datasets.parsers import (hdf5_groups, idx_files, npz_arrays, read_descriptor_table,
                                        read_idx)
from fault_cases.bounds import (ALIAS_BOMB, DEEP, NOT_UTF8, npy_header, write_arff_distinct_nominal,
                                write_h5_unallocated, write_idx_gz_declaring,
                                write_libsvm_huge_index, write_mat_declaring, write_npz_header)

REPO = Path(__file__).parents[1]
GIB = 2**30
#: an available memory of 20.1 GiB, as the fake of :func:`resources.available_memory_bytes`
MEMORY = int(20.1 * GIB)


@pytest.fixture
def memory(monkeypatch):
    """20.1 GiB available, no declared maximum from the environment."""
    monkeypatch.setattr(resources, "available_memory_bytes", lambda: MEMORY)
    monkeypatch.delenv(resources.MAX_ARRAY_BYTES_ENV, raising=False)


def run_cli(*argv, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """``dmlbench *argv`` in a subprocess, killed after ``timeout`` seconds (a hang fails)."""
    code = "import sys; from dml_bench.cli import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


# --- YAML ---------------------------------------------------------------------------------------


def test_alias_bomb_is_refused_while_composed():
    assert len(ALIAS_BOMB.encode()) < 600  # 9^9 strings once expanded
    tracemalloc.start()  # refused while composed: far below the 9^9 strings of the expansion
    try:
        with pytest.raises(safe_yaml.YAMLLimitError) as info:
            safe_yaml.safe_load(ALIAS_BOMB)
        assert tracemalloc.get_traced_memory()[1] < 200 * 2**20
    finally:
        tracemalloc.stop()
    assert safe_yaml.describe(info.value) == (
        "YAML beyond the limits: line 12, column 10: more than 100000 nodes with its aliases "
        "expanded")


@pytest.mark.parametrize("command", ["validate", "run"])
def test_alias_bomb_ends_validate_and_run_in_one_line(tmp_path, command):
    """Before, the 9^9 notes were expanded by ``str()`` while validating: a hang (hence the
    subprocess and its timeout)."""
    (tmp_path / "bomb.yaml").write_text(ALIAS_BOMB)
    extra = ["--results-dir", str(tmp_path / "results")] if command == "run" else []
    done = run_cli(command, "bomb.yaml", *extra, cwd=tmp_path, timeout=60)
    assert done.returncode == 2
    assert (done.stdout + done.stderr).splitlines() == [
        "error: bomb.yaml: <top>: YAML beyond the limits: line 12, column 10: more than 100000 "
        "nodes with its aliases expanded"]
    assert not (tmp_path / "results").exists()


def test_an_alias_may_be_used_within_the_limit():
    text = "a: &x {k: [1, 2, 3]}\nb: *x\nc: [*x, *x]\n"
    assert safe_yaml.safe_load(text) == {"a": {"k": [1, 2, 3]}, "b": {"k": [1, 2, 3]},
                                         "c": [{"k": [1, 2, 3]}, {"k": [1, 2, 3]}]}


def test_the_node_count_includes_each_alias_expansion(monkeypatch):
    """The root list (1), ``&x`` (a list of 10 scalars: 11) and 10 aliases of it (110): 122."""
    text = "[&x [" + ", ".join("1" * 10) + "], " + ", ".join(["*x"] * 10) + "]"
    monkeypatch.setattr(safe_yaml.BoundedLoader, "max_nodes", 122)
    assert len(safe_yaml.safe_load(text)) == 11
    monkeypatch.setattr(safe_yaml.BoundedLoader, "max_nodes", 121)
    with pytest.raises(safe_yaml.YAMLLimitError) as info:
        safe_yaml.safe_load(text)
    assert safe_yaml.describe(info.value) == (
        "YAML beyond the limits: line 1, column 73: more than 121 nodes with its aliases expanded")


def test_recursive_alias_is_refused():
    with pytest.raises(safe_yaml.YAMLLimitError) as info:
        safe_yaml.safe_load("&a [1, *a]")
    assert safe_yaml.describe(info.value) == (
        "YAML beyond the limits: line 1, column 8: the alias *a refers to a node that contains it "
        "(a recursive document)")


@pytest.mark.parametrize("text, column", [("[" * 5000 + "]" * 5000, 101),
                                          ("{a: " * 5000 + "1" + "}" * 5000, 398)])
def test_5000_levels_of_nesting_are_one_line_not_a_recursion_error(text, column):
    """A level is a node on the path from the root: the 101st is the 101st ``[``, or the key
    ``a`` of the 100th mapping."""
    with pytest.raises(safe_yaml.YAMLLimitError) as info:
        safe_yaml.safe_load(text)
    assert safe_yaml.describe(info.value) == (
        f"YAML beyond the limits: line 1, column {column}: nested deeper than 100 levels")


def test_100_levels_are_accepted():
    value = safe_yaml.safe_load("[" * 100 + "]" * 100)
    for _ in range(99):
        (value,) = value
    assert value == []


def test_block_nesting_is_limited_too():
    """Line i holds the key of the i-th mapping: the key of the 100th is the 101st level."""
    text = "".join(" " * i + "k:\n" for i in range(200))
    with pytest.raises(safe_yaml.YAMLLimitError) as info:
        safe_yaml.safe_load(text)
    assert safe_yaml.problem(info.value) == "line 100, column 100: nested deeper than 100 levels"


def test_deep_config_is_a_config_error(tmp_path):
    (tmp_path / "deep.yaml").write_text(DEEP)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "deep.yaml")
    assert str(info.value) == (f"{tmp_path / 'deep.yaml'}: <top>: YAML beyond the limits: line 6, "
                               "column 113: nested deeper than 100 levels")


def test_config_that_is_not_utf8_names_the_byte_offset(tmp_path):
    (tmp_path / "latin1.yaml").write_bytes(NOT_UTF8)
    offset = NOT_UTF8.index(b"\xe9")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "latin1.yaml")
    assert str(info.value) == (f"{tmp_path / 'latin1.yaml'}: <top>: not UTF-8 text: byte 0xe9 at "
                               f"offset {offset} is not valid UTF-8 (save the file as UTF-8)")


def test_utf8_with_a_byte_order_mark_is_read():
    assert safe_yaml.safe_load("\ufeffname: café".encode()) == {"name": "café"}
    with pytest.raises(safe_yaml.YAMLEncodingError, match="byte 0xff at offset 9 "):
        safe_yaml.safe_load(b"\xef\xbb\xbfname: \xff")


def test_file_over_the_size_limit_is_refused_without_reading_it_all(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_bytes(b"a: 1\n" + b"#" * (2**20))
    with pytest.raises(safe_yaml.YAMLFileTooLarge) as info:
        safe_yaml.load_file(path)
    assert str(info.value) == (f"the file has {2**20 + 5} bytes, more than the 1.0 MiB "
                               "(1048576 bytes) accepted for a YAML file")
    path.write_bytes(b"a: 1\n" + b"#" * (2**20 - 5))  # exactly 1 MiB
    assert safe_yaml.load_file(path) == {"a": 1}


@pytest.mark.parametrize("text, problem", [
    ("n: " + "7" * 5000, "line 1, column 4: cannot read the value: Exceeds the limit (4300 "
     "digits) for integer string conversion: value has 5000 digits; use "
     "sys.set_int_max_str_digits() to increase the limit"),
    ("when: 2024-02-30", "line 1, column 7: cannot read the value: day is out of range for month"),
])
def test_values_python_cannot_build_are_yaml_errors(text, problem):
    with pytest.raises(yaml.YAMLError) as info:
        safe_yaml.safe_load(text)
    assert safe_yaml.describe(info.value) == f"not valid YAML: {problem}"


def test_python_tags_stay_refused(tmp_path):
    marker = tmp_path / "ran"
    text = ("a: !!python/object/apply:pathlib.Path.touch "
            f"[!!python/object/apply:pathlib.Path [{str(marker)!r}]]")
    with pytest.raises(yaml.constructor.ConstructorError, match="could not determine a construct"):
        safe_yaml.safe_load(text)
    assert not marker.exists()


def test_safe_load_matches_pyyaml_on_ordinary_documents():
    for path in sorted((REPO / "configs").glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        assert safe_yaml.safe_load(text) == yaml.safe_load(text), path


def test_board_config_and_results_config_are_read_with_the_limits(tmp_path):
    from dml_bench.leaderboard.board import load_board
    from dml_bench.report.tables import ReportError, read_config

    (tmp_path / "board.yaml").write_text(ALIAS_BOMB)
    with pytest.raises(ConfigError) as info:
        load_board(tmp_path / "board.yaml")
    assert str(info.value).endswith("<top>: YAML beyond the limits: line 12, column 10: more "
                                    "than 100000 nodes with its aliases expanded")
    (tmp_path / "config.yaml").write_text(DEEP)
    with pytest.raises(ReportError) as info:
        read_config(tmp_path)
    assert str(info.value) == (f"{tmp_path / 'config.yaml'}: YAML beyond the limits: line 6, "
                               "column 113: nested deeper than 100 levels")


# --- ceilings -----------------------------------------------------------------------------------

BASE = {"name": "t", "datasets": [{"name": "wine"}], "solvers": [{"name": "euclidean"}],
        "split": {"n_splits": 2}}


def _with(section, value):
    cfg = {**BASE}
    if section == "datasets":
        cfg["datasets"] = [{"name": "wine", **value}]
    elif section == "solvers":
        cfg["solvers"] = [{"name": "dml_eig", **value}]
    else:
        cfg[section] = value
    return cfg


# (config, key path, largest accepted, hand-written)
CEILED = [
    (lambda v: _with("split", {"n_splits": v}), "split.n_splits", 1000),
    (lambda v: _with("datasets", {"n_splits": v}), "datasets[0].n_splits", 1000),
    (lambda v: _with("datasets", {"n_samples": v}), "datasets[0].n_samples", 100_000_000),
    (lambda v: _with("datasets", {"pca": v}), "datasets[0].pca", 100_000),
    (lambda v: _with("datasets", {"downscale": v}), "datasets[0].downscale", 64),
    (lambda v: _with("constraints", {"params": {"k": v}}), "constraints.params.k", 1000),
    (lambda v: _with("constraints", {"generator": "random_triplets",
                                     "params": {"n_triplets": v}}),
     "constraints.params.n_triplets", 10_000_000),
    (lambda v: _with("evaluation", {"knn_k": v}), "evaluation.knn_k", 1000),
    (lambda v: _with("solvers", {"tune": {"cv": v, "grid": {"mu": [0.1]}}}),
     "solvers[0].tune.cv", 100),
    *[(lambda v, key=key: _with("evaluation", {"task": "verification", "folds": "drawn", key: v}),
       f"evaluation.{key}", ceiling)
      for key, ceiling in (("n_folds", 100), ("n_matched", 1_000_000),
                           ("n_mismatched", 1_000_000), ("n_triplets", 10_000_000),
                           ("triplet_k", 1000))],
]


@pytest.mark.parametrize("make, path, ceiling", CEILED, ids=[c[1] for c in CEILED])
def test_counts_have_declared_ceilings(make, path, ceiling):
    for value in (ceiling + 1, 10**9 + ceiling):
        with pytest.raises(ConfigError) as info:
            parse_config(make(value), "c.yaml", check_data=False)
        assert str(info.value) == f"c.yaml: {path}: must be at most {ceiling}, got {value}"


@pytest.mark.parametrize("make, path, ceiling", CEILED[:4], ids=[c[1] for c in CEILED[:4]])
def test_a_count_at_its_ceiling_is_accepted(make, path, ceiling):
    parse_config(make(ceiling), "c.yaml", check_data=False)


def test_n_triplets_per_dataset_have_the_ceiling():
    cfg = _with("evaluation", {"task": "verification", "folds": "drawn",
                               "n_triplets": {"wine": 10_000_001}})
    with pytest.raises(ConfigError) as info:
        parse_config(cfg, "c.yaml", check_data=False)
    assert str(info.value) == ("c.yaml: evaluation.n_triplets.wine: must be at most 10000000, got "
                               "10000001")


def test_grid_size_is_the_product_of_its_lists():
    grid = {"mu": list(range(1, 101)), "max_iter": list(range(1, 101))}  # 10,000 points: accepted
    exp = parse_config(_with("solvers", {"tune": {"cv": 3, "grid": grid}}), "c.yaml",
                       check_data=False)
    assert len(exp.solvers[0].tune.points()) == 10_000
    grid["tol"] = [1e-3, 1e-4]
    with pytest.raises(ConfigError) as info:
        parse_config(_with("solvers", {"tune": {"cv": 3, "grid": grid}}), "c.yaml",
                     check_data=False)
    assert str(info.value) == ("c.yaml: solvers[0].tune.grid: has 20000 points (the product of "
                               "its value lists), more than the 10000 a grid may have")


def test_negative_seed_is_refused():
    with pytest.raises(ConfigError) as info:
        parse_config(_with("split", {"n_splits": 2, "seed": -1}), "c.yaml", check_data=False)
    assert str(info.value) == "c.yaml: split.seed: must be at least 0, got -1"


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_billion_splits_end_at_once(tmp_path, command):
    """Before, ``run`` and ``validate`` planned 10^9 tasks without a word (a hang)."""
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({**BASE, "split": {"n_splits": 10**9}}))
    extra = ["--results-dir", str(tmp_path / "results")] if command == "run" else []
    done = run_cli(command, "c.yaml", *extra, cwd=tmp_path, timeout=60)
    assert done.returncode == 2
    assert (done.stdout + done.stderr).splitlines() == [
        "error: c.yaml: split.n_splits: must be at most 1000, got 1000000000"]


def test_shipped_and_committed_configs_are_within_every_limit():
    paths = (sorted((REPO / "configs").glob("*.yaml"))
             + sorted((REPO / "results").glob("**/config.yaml")))
    assert len(paths) > 20
    for path in paths:
        data = safe_yaml.load_file(path)
        data.pop("leaderboard", None)  # a board config's own section
        parse_config(data, str(path), check_data=False)


# --- array headers ------------------------------------------------------------------------------


def test_npy_header_reads_shape_and_dtype_of_saved_arrays(tmp_path):
    for array in (np.zeros((3, 4)), np.arange(5, dtype=np.int32), np.array(["ab", "c"]),
                  np.zeros((2, 2), dtype=np.float32, order="F")):
        np.save(tmp_path / "a.npy", array)
        with open(tmp_path / "a.npy", "rb") as fh:
            assert resources.npy_header(fh) == (array.shape, array.dtype)
    for version in (1, 2):
        header = npy_header((3_000_000, 1_200_000), "<f8", version)
        (tmp_path / "h.npy").write_bytes(header)
        with open(tmp_path / "h.npy", "rb") as fh:
            assert resources.npy_header(fh) == ((3_000_000, 1_200_000), np.dtype("<f8"))


def test_npz_headers_of_members(tmp_path):
    np.savez(tmp_path / "a.npz", X=np.zeros((7, 2)), y=np.arange(7))
    assert resources.npz_headers(tmp_path / "a.npz") == {
        "X": ((7, 2), np.dtype(np.float64)), "y": ((7,), np.dtype(np.int64))}
    assert resources.npz_headers(tmp_path / "a.npz", ["y"]) == {"y": ((7,), np.dtype(np.int64))}


def test_oversize_against_memory_and_declared_maximum(memory, monkeypatch):
    assert resources.oversize((1000, 1000), np.float64) is None
    assert resources.oversize((3_000_000, 1_200_000), np.float64) == (
        "declares an array of 26.2 TiB (3000000 × 1200000 float64), more than the 20.1 GiB of "
        "memory available")
    monkeypatch.setenv("DMLBENCH_MAX_ARRAY_BYTES", str(8 * 2**20))
    assert resources.oversize((1000, 1000), np.float64) is None  # 7.6 MiB
    assert resources.oversize((1100, 1000), np.uint8) is None
    assert resources.oversize((1024, 1025), np.float64) == (
        "declares an array of 8.0 MiB (1024 × 1025 float64), more than the declared maximum of "
        "8.0 MiB (DMLBENCH_MAX_ARRAY_BYTES)")
    monkeypatch.setenv("DMLBENCH_MAX_ARRAY_BYTES", "lots")
    with pytest.raises(resources.LimitSettingError) as info:
        resources.oversize((1,), np.float64)
    assert str(info.value) == "DMLBENCH_MAX_ARRAY_BYTES='lots' is not a positive number of bytes"


def test_linalg_keeps_the_memory_helper_name():
    from dml_bench.solvers import linalg

    assert linalg.available_memory_bytes is resources.available_memory_bytes


def test_npz_declaring_25_tib_is_refused_before_allocation(tmp_path, memory):
    path = write_npz_header(tmp_path / "big.npz", {"X": ((3_000_000, 1_200_000), "<f8"),
                                                    "y": ((3_000_000,), "<i8")})
    assert path.stat().st_size < 600
    with pytest.raises(DataTooLarge) as info:
        npz_arrays()([path])
    assert str(info.value) == (f"{path}: X declares an array of 26.2 TiB (3000000 × 1200000 "
                               "float64), more than the 20.1 GiB of memory available")
    assert isinstance(info.value, DataNotAvailable)


def test_npz_within_the_budget_is_read(tmp_path, memory):
    np.savez(tmp_path / "ok.npz", X=np.arange(6.0).reshape(3, 2), y=np.array([0, 1, 1]))
    parsed = npz_arrays()([tmp_path / "ok.npz"])
    assert parsed.X.tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    assert parsed.labels.tolist() == [0, 1, 1]


@pytest.mark.parametrize("make, where, kind", [
    (lambda p: write_npz_header(p.with_suffix(".npz"), {"X": ((10**9, 3456), "<f8"),
                                                        "names": ((10**9,), "<U24")}),
     "X", "float64"),
    (lambda p: write_h5_unallocated(p.with_suffix(".h5"), {"X": ((10**9, 3456), "f8"),
                                                          "names": ((10**9,), "S24")}),
     "/X", "float64"),
    (lambda p: write_mat_declaring(p.with_suffix(".mat"), 10**9, 3456), "X", "MATLAB double"),
], ids=["npz", "h5", "mat-v5"])
def test_descriptor_table_declaring_25_tib_is_refused(tmp_path, memory, make, where, kind):
    path = make(tmp_path / "big")
    assert path.stat().st_size < 8192
    tracemalloc.start()  # refused from the header: nothing near the declared size allocated
    try:
        with pytest.raises(DataTooLarge) as info:
            read_descriptor_table(path)
        assert tracemalloc.get_traced_memory()[1] < 200 * 2**20
    finally:
        tracemalloc.stop()
    assert str(info.value) == (f"{path}: {where} declares an array of 25.1 TiB (1000000000 × 3456 "
                               f"{kind}), more than the 20.1 GiB of memory available")


def test_descriptor_table_names_are_checked_too(tmp_path, memory):
    path = write_h5_unallocated(tmp_path / "names.h5", {"X": ((2, 3456), "f8"),
                                                         "names": ((10**9,), "S24")})
    with pytest.raises(DataTooLarge) as info:
        read_descriptor_table(path)
    assert str(info.value) == (f"{path}: /names declares an array of 22.4 GiB (1000000000 |S24), "
                               "more than the 20.1 GiB of memory available")


def test_damaged_descriptor_npz_is_a_value_error(tmp_path):
    path = tmp_path / "broken.npz"
    np.savez(path, X=np.zeros((2, 3456)), names=np.array(["A_0001", "B_0001"]))
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(ValueError, match=r"broken.npz: damaged or unreadable \(BadZipFile: "):
        read_descriptor_table(path)


def test_hdf5_groups_parser_checks_each_dataset(tmp_path, memory):
    path = tmp_path / "usps.h5"
    with h5py.File(path, "w") as fh:
        fh.create_dataset("train/data", data=np.ones((3, 2)))
        fh.create_dataset("train/target", data=np.array([0, 1, 0]))
        fh.create_dataset("test/data", shape=(10**9, 4096), dtype="f4", chunks=True)
        fh.create_dataset("test/target", data=np.array([1]))
    with pytest.raises(DataTooLarge) as info:
        hdf5_groups(["train", "test"])([path])
    assert str(info.value) == (f"{path}: /test/data declares an array of 14.9 TiB (1000000000 × "
                               "4096 float32), more than the 20.1 GiB of memory available")


def test_gzipped_idx_header_is_checked_before_decompressing(tmp_path, memory):
    path = write_idx_gz_declaring(tmp_path / "images.idx3-ubyte.gz", (10**9, 28, 28))
    with pytest.raises(DataTooLarge) as info:
        read_idx(path)
    assert str(info.value) == (f"{path} declares an array of 730.2 GiB (1000000000 × 28 × 28 "
                               "uint8), more than the 20.1 GiB of memory available")


def test_idx_reading_is_unchanged(tmp_path, memory):
    import gzip
    import struct

    images = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    raw = b"\0\0\x08\x03" + struct.pack(">3I", 2, 3, 4) + images.tobytes()
    labels = b"\0\0\x08\x01" + struct.pack(">I", 2) + bytes([7, 9])
    (tmp_path / "i.gz").write_bytes(gzip.compress(raw))
    (tmp_path / "l").write_bytes(labels)
    assert np.array_equal(read_idx(tmp_path / "i.gz"), images)
    parsed = idx_files()([tmp_path / "i.gz", tmp_path / "l"])
    assert parsed.X.tolist() == images.reshape(2, 12).tolist()
    (tmp_path / "short").write_bytes(raw[:-1])
    with pytest.raises(ValueError, match=r"short: 23 data bytes for shape \(2, 3, 4\) of uint8"):
        read_idx(tmp_path / "short")
    (tmp_path / "long").write_bytes(raw + b"\0")
    with pytest.raises(ValueError, match=r"long: 25\+ data bytes for shape \(2, 3, 4\) of uint8"):
        read_idx(tmp_path / "long")


def test_libsvm_with_feature_index_2e9_is_refused_before_densifying(tmp_path, memory):
    path = write_libsvm_huge_index(tmp_path / "big.libsvm")
    with pytest.raises(DataTooLarge) as info:
        file_spec(path)
    assert str(info.value) == (
        f"dataset 'big' ({path}): the file declares a dense array of 59.6 GiB (4 × 2000000000 "
        "float64), more than the 20.1 GiB of memory available; its largest feature index is "
        "2000000000, on 4 lines")


def test_arff_whose_one_hot_encoding_would_not_fit_is_refused(tmp_path, memory, monkeypatch):
    """A nominal attribute of n distinct values becomes n columns: 300 rows of 300 values and a
    numeric column are 300 × 301 float64 (705.5 KiB), over a budget of 700 KiB."""
    path = write_arff_distinct_nominal(tmp_path / "nominal.arff", 300)
    monkeypatch.setenv("DMLBENCH_MAX_ARRAY_BYTES", str(700 * 1024))
    with pytest.raises(DataTooLarge) as info:
        file_spec(path, "c")
    assert str(info.value) == (
        f"dataset 'nominal' ({path}): the one-hot encoded table declares a dense array of 705.5 "
        "KiB (300 × 301 float64), more than the declared maximum of 700.0 KiB "
        "(DMLBENCH_MAX_ARRAY_BYTES)")
    monkeypatch.setenv("DMLBENCH_MAX_ARRAY_BYTES", str(301 * 300 * 8))
    X, y, _ = file_spec(path, "c").parser([])
    assert X.shape == (300, 301) and sorted(set(np.asarray(y).tolist())) == ["p", "q"]


def test_small_libsvm_still_reads(tmp_path, memory):
    path = tmp_path / "small.libsvm"
    path.write_text("1 1:0.5 3:2\n2 2:1\n1 1:1\n")
    X, y, _ = file_spec(path).parser([])
    assert np.asarray(X).tolist() == [[0.5, 0.0, 2.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    assert np.asarray(y).tolist() == [1, 2, 1]


def test_libsvm_in_a_run_is_a_data_fault(tmp_path, memory):
    """What the runner catches to skip the dataset with its reason."""
    from dml_bench.datasets import load_dataset
    from dml_bench.datasets.loader import file_reference

    path = write_libsvm_huge_index(tmp_path / "big.libsvm")
    with pytest.raises(DataNotAvailable) as info:
        load_dataset(file_reference(path))
    assert str(info.value) == (
        f"dataset 'big' ({path}): the file declares a dense array of 59.6 GiB (4 × 2000000000 "
        "float64), more than the 20.1 GiB of memory available; its largest feature index is "
        "2000000000, on 4 lines")


def test_registered_dataset_refusal_names_the_dataset(tmp_path, memory):
    from dml_bench.datasets.loader import _run_parser
    from dml_bench.datasets.spec import DatasetSpec

    path = write_npz_header(tmp_path / "fb.npz", {"X": ((10**9, 3456), "<f8"),
                                                   "y": ((10**9,), "<i8")})
    spec = DatasetSpec(name="fb", description="", n_samples=1, n_features=1, n_classes=2,
                       papers=(), files=(), parser=npz_arrays())
    with pytest.raises(DataTooLarge) as info:
        _run_parser(spec, [path])
    assert str(info.value) == (f"dataset 'fb': {path}: X declares an array of 25.1 TiB "
                               "(1000000000 × 3456 float64), more than the 20.1 GiB of memory "
                               "available")


def test_no_array_is_loaded_with_pickle(tmp_path):
    """A header-checked ``.npz`` member holding objects is refused by ``allow_pickle=False``."""
    np.savez(tmp_path / "obj.npz", X=np.array([{"a": 1}], dtype=object), y=np.array([0]))
    with zipfile.ZipFile(tmp_path / "obj.npz") as archive:
        assert sorted(archive.namelist()) == ["X.npy", "y.npy"]
    with pytest.raises(ValueError, match="allow_pickle=False"):
        npz_arrays()([tmp_path / "obj.npz"])
