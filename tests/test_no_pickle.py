"""Nothing a user or a colleague can supply is unpickled or loaded as code.

The package's sources (``dml_bench/`` and ``benchmarks/``) hold no call that deserialises Python
objects (``pickle.load``, ``joblib.load``, ``joblib.Memory``, ``allow_pickle=True``,
``yaml.load`` and its unsafe variants, ...): the caches store ``.npy`` arrays with a checksum,
and YAML is read by the safe loader. And a crafted pickle planted in the dataset cache, where a
pickle-based cache (``joblib.Memory``'s) or this one would look, with its checksum rewritten to
match, is never executed by a run: the constraints are recomputed with a one-line warning, and
the rows equal those of a run on a clean cache; a pickle planted as a dataset's binary parse
cache is likewise refused and the entry rebuilt from the verified file.
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import re
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from dml_bench.experiment import knn as tasks
from dml_bench.cli import main
from fault_cases.security_code import Planted

ROOT = Path(__file__).resolve().parents[1]

#: calls that turn bytes into arbitrary Python objects (or code), as they are spelled in source
UNSAFE = re.compile(
    r"pickle\.loads?\b|\bUnpickler\b|joblib\.load\b|from\s+joblib\s+import[^\n#]*\b(load|Memory)\b"
    r"|\bMemory\(|allow_pickle\s*=\s*True|yaml\.(load|unsafe_load|full_load|load_all|"
    r"unsafe_load_all|full_load_all)\(|yaml\.(Unsafe|Full)?Loader\b|read_pickle|\bshelve\b"
    r"|marshal\.loads?\b|\bdill\b|cloudpickle\.loads?\b|torch\.load\b")


def unsafe_uses(root: Path = ROOT) -> list[str]:
    """``path:line: text`` of every line of the package's Python sources matching
    :data:`UNSAFE`."""
    found = []
    for folder in ("dml_bench", "benchmarks"):
        for path in sorted((root / folder).rglob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if UNSAFE.search(line):
                    found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return found


def test_the_sources_deserialise_no_python_objects():
    assert (ROOT / "dml_bench" / "constraints.py").is_file()
    assert unsafe_uses() == []


@pytest.mark.parametrize("line", [
    "data = pickle.load(f)", "obj = pickle.loads(blob)", "joblib.load(path)",
    "from joblib import Memory, Parallel", "cache = Memory(location)",
    "np.load(path, allow_pickle=True)", "yaml.load(text, Loader=yaml.Loader)",
    "yaml.unsafe_load(text)", "yaml.full_load(text)", "pd.read_pickle(path)",
    "pickle.Unpickler(f).load()",
])
def test_the_pattern_finds_each_unsafe_call(tmp_path, line):
    """The check itself: each spelling is found (in a package laid out in tmp_path), and the
    safe calls the package makes are not."""
    (tmp_path / "dml_bench").mkdir()
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "dml_bench" / "m.py").write_text(
        "import numpy as np\nnp.load(path, allow_pickle=False)\nyaml.safe_load(text)\n"
        "from joblib import Parallel, delayed\n" + line + "\n")
    assert unsafe_uses(tmp_path) == [f"dml_bench/m.py:5: {line}"]



def test_a_crafted_pickle_in_the_cache_never_runs_on_a_run(tmp_cache, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("name: p\ndatasets: [{name: wine, normalize: zscore}]\nsolvers: [euclidean]\n"
                   "split: {n_splits: 1}\nexecution: {backend: sequential}\n")
    run = CliRunner().invoke(main, ["run", str(cfg), "--results-dir", str(tmp_path / "clean")])
    assert run.exit_code == 0, run.output
    store, marker = tmp_cache / "constraints", tmp_path / "unpickled"
    (npz,) = store.glob("knn_triplets-*.npz")
    npz.write_bytes(pickle.dumps(Planted(marker)))
    meta = npz.with_suffix(".json")  # rewritten to match, as whoever planted it would
    meta.write_text(json.dumps({**json.loads(meta.read_text()),
                                "sha256": hashlib.sha256(npz.read_bytes()).hexdigest()}))
    old = store / "joblib" / "dml_bench" / "constraints" / "_timed" / ("0" * 32)
    old.mkdir(parents=True)  # where joblib.Memory kept its pickles
    (old / "output.pkl").write_bytes(pickle.dumps(Planted(marker)))
    tasks._prepare_split.cache_clear()
    run = CliRunner().invoke(main, ["run", str(cfg), "--results-dir", str(tmp_path / "planted")])
    assert run.exit_code == 0, run.output
    assert not marker.exists()
    assert (f"warning: constraint cache entry {npz} is damaged (not a readable .npz: File is not "
            "a zip file); recomputed") in run.output.splitlines()
    columns = ["task_id", "error", "n_similar", "n_dissimilar", "n_triplets"]
    clean = pd.read_csv(tmp_path / "clean" / "p" / "runs.csv")[columns]
    planted = pd.read_csv(tmp_path / "planted" / "p" / "runs.csv")[columns]
    pd.testing.assert_frame_equal(planted, clean)


def test_the_planted_pickle_runs_when_unpickled(tmp_path):
    """The proof the run test relies on: unpickling a ``Planted`` creates its marker."""
    marker = tmp_path / "unpickled"
    blob = pickle.dumps(Planted(marker))
    assert not marker.exists()
    pickle.loads(blob)
    assert marker.exists()


CSV = b"1,2,a\n3,4,b\n5,6.5,b\n"


@pytest.mark.parametrize("plant, reason", [
    ("pickle", "not a readable .npz: File is not a zip file"),
    ("object array", "member 'X.npy' holds Python objects (a pickle), which are never loaded"),
])
def test_a_crafted_binary_cache_entry_is_rebuilt_not_unpickled(registry, tmp_path, capsys,
                                                                plant, reason):
    """The datasets' binary parse cache: a planted pickle (or an object array) whose checksum
    file was rewritten to match is refused with one line and rebuilt from the verified file,
    and the data equals the file's parse."""
    from dml_bench.datasets import DatasetSpec, FileSpec, bincache, loader, load_dataset, parsers

    spec = registry.register("toy", DatasetSpec(
        "toy", "three rows", 3, 2, 2, (), (FileSpec("toy/toy.csv", hashlib.sha256(CSV).hexdigest()),),
        parsers.delimited_text(label_column=-1), binary_cache=True))
    mirror, cache = tmp_path / "mirror", tmp_path / "cache"
    (mirror / "toy").mkdir(parents=True)
    (mirror / "toy" / "toy.csv").write_bytes(CSV)
    X, y, _ = load_dataset("toy", mirror=mirror, cache_dir=cache)
    np.testing.assert_array_equal(X, [[1, 2], [3, 4], [5, 6.5]])
    npz, meta = bincache.entry_paths(spec, cache, bincache.cache_key(spec, cache))
    marker = tmp_path / "unpickled"
    if plant == "pickle":
        npz.write_bytes(pickle.dumps(Planted(marker)))
    else:
        member = io.BytesIO()
        np.lib.format.write_array_header_1_0(member, {"descr": "|O", "fortran_order": False,
                                                      "shape": (1,)})
        member.write(pickle.dumps(np.array([Planted(marker), None])[:1]))
        with zipfile.ZipFile(npz) as zf:  # the entry's members, X.npy an object array
            members = {i.filename: zf.read(i) for i in zf.infolist()}
        members["X.npy"] = member.getvalue()
        with zipfile.ZipFile(npz, "w") as zf:
            for name, data in members.items():
                zf.writestr(name, data)
    meta.write_text(json.dumps({**json.loads(meta.read_text()),
                                "sha256": hashlib.sha256(npz.read_bytes()).hexdigest()}))
    loader._load.cache_clear()
    capsys.readouterr()
    X2, y2, meta_out = load_dataset("toy", mirror=None, cache_dir=cache, allow_network=False)
    assert capsys.readouterr().err.splitlines() == [
        f"warning: dataset 'toy': ignoring the damaged binary cache {npz} ({reason}); it is "
        "rebuilt from the verified files"]
    assert not marker.exists()
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(y2, y)
    assert bincache.load(spec, cache) is not None  # rebuilt
