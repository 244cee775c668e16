"""Data faults end in one line, not a traceback.

The contract (``dml_bench/datasets/errors.py``): every data fault raised by ``load_dataset`` /
``fetch_dataset`` is a ``DataNotAvailable`` whose ``str()`` is one line naming the dataset, the
file and the problem. The runner catches ``DataNotAvailable`` alone to skip a dataset's tasks with
the reason, so anything else escaping would end a run in a traceback.

Every faulty file is built in ``tmp_path`` (real files are copied from the read-only mirror and
damaged there; nothing is written into the mirror). No test uses the network: downloads are
either disabled or replaced by a stub that fails like an unreachable host.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import os
import shutil
import urllib.error
import warnings
from http.client import IncompleteRead
from pathlib import Path

import numpy as np
import pytest
import sklearn.datasets  # noqa: F401  (its slow first import here, not inside a test)

from dml_bench.experiment.sections import DataPlace
from dml_bench.datasets import (
    DATASETS,
    DataIntegrityError,
    DataNotAvailable,
    DataParseError,
    DatasetSpec,
    FileSpec,
    Parsed,
    bincache,
    checksums,
    fetch_dataset,
    files,
    load_dataset,
    loader,
    parsers,
    save_lfw_sift,
)

SHARED = Path(os.environ.get("DMLBENCH_DATA_MIRROR") or Path(__file__).parents[2] / "shared" / "datasets")
FILE_DATASETS = [name for name in DATASETS if DATASETS[name].kind == "files"]


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """An empty cache, no mirror from the environment, and no memoised loads."""
    monkeypatch.setenv("DMLBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("DMLBENCH_DATA_MIRROR", raising=False)
    loader._load.cache_clear()
    yield
    loader._load.cache_clear()


@pytest.fixture
def cache(tmp_path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def no_network(monkeypatch):
    """Downloads fail at once, like an unreachable host; records the timeouts asked for."""
    calls = []

    def urlopen(request, timeout=None, **kwargs):
        calls.append((request.full_url, timeout))
        raise urllib.error.URLError(OSError(-2, "Name or service not known"))

    monkeypatch.setattr(files.urllib.request, "urlopen", urlopen)
    return calls


def require_shared(name: str) -> None:
    for fspec in DATASETS[name].files:
        if not (SHARED / fspec.relpath).is_file():
            pytest.skip(f"{fspec.relpath} not in the data mirror {SHARED} (set DMLBENCH_DATA_MIRROR)")


def copy_to(root: Path, relpath: str, data: bytes | None = None) -> Path:
    """Copy a mirror file (or write ``data``) to ``root / relpath``."""
    target = root / relpath
    target.parent.mkdir(parents=True, exist_ok=True)
    if data is None:
        shutil.copyfile(SHARED / relpath, target)
    else:
        target.write_bytes(data)
    return target


def flip_byte(path: Path, offset: int = 100) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fault(call, *args, expected=DataNotAvailable, **kwargs) -> str:
    """Run ``call``, which must raise ``expected`` (a DataNotAvailable); return its one line."""
    with pytest.raises(expected) as err:
        call(*args, **kwargs)
    assert isinstance(err.value, DataNotAvailable)
    message = str(err.value)
    assert message and "\n" not in message and "\r" not in message, message
    return message


PIMA = "pima/pima-indians-diabetes.csv"


# --------------------------------------------------------------------------- 1, 2: damaged mirror file


def test_mirror_file_with_one_byte_changed(tmp_path, cache):
    require_shared("pima")
    mirror = tmp_path / "mirror"
    flip_byte(copy_to(mirror, PIMA))
    message = fault(load_dataset, "pima", mirror=mirror, allow_network=False, expected=DataIntegrityError)
    assert message.startswith("dataset 'pima': sha256 mismatch for ")
    assert str(mirror / PIMA) in message and "(from the mirror)" in message
    assert f"expected {DATASETS['pima'].files[0].sha256}" in message
    assert "repair the mirror" in message and "dmlbench fetch pima" in message
    assert not (cache / PIMA).exists()  # nothing unverified enters the cache
    # fetch_dataset (`dmlbench fetch`) reports the same line
    assert fault(fetch_dataset, "pima", mirror=mirror, allow_network=False) == message


def test_truncated_mirror_file(tmp_path, cache):
    require_shared("pima")
    mirror = tmp_path / "mirror"
    data = (SHARED / PIMA).read_bytes()
    copy_to(mirror, PIMA, data[: len(data) // 2])
    message = fault(load_dataset, "pima", mirror=mirror, allow_network=False)
    assert "dataset 'pima': sha256 mismatch" in message and str(mirror / PIMA) in message
    assert f"({len(data) // 2} bytes)" in message
    assert not (cache / PIMA).exists()


def test_truncated_compressed_mirror_file(tmp_path, cache):
    """MNIST's labels, gzip cut short: refused as a truncated stream, before any parse."""
    require_shared("mnist_test")
    mirror = tmp_path / "mirror"
    images, labels = (f.relpath for f in DATASETS["mnist_test"].files)
    copy_to(mirror, images)
    data = (SHARED / labels).read_bytes()
    copy_to(mirror, labels, data[:-10])
    message = fault(load_dataset, "mnist_test", mirror=mirror, allow_network=False)
    assert "dataset 'mnist_test'" in message and str(mirror / labels) in message
    assert "truncated gzip stream" in message and "repair the mirror" in message


# --------------------------------------------------------------------------- 3: wrong shape, unparseable


def test_wrong_shape_file_reaches_the_shape_check(tmp_path):
    """lfw_sift has no registered sha256 (trust on first use): a well-formed file of the wrong
    shape passes the file checks and is refused by the shape check."""
    mirror = tmp_path / "mirror"
    X = np.zeros((2, 3456))
    save_lfw_sift(mirror / "lfw/lfw_sift_funneled.npz", X, ["Aaron_Peirsol_0001", "Zico_0001"])
    message = fault(load_dataset, "lfw_sift", mirror=mirror, allow_network=False, expected=DataIntegrityError)
    assert message.startswith("dataset 'lfw_sift': data parsed from ")
    assert "lfw/lfw_sift_funneled.npz" in message
    assert "has shape (2, 3456), expected (13233, 3456)" in message
    # no download source: the message says how to supply a corrected file, not to re-fetch it
    assert "Supply a corrected file (the SIFT descriptors of Guillaumin" in message
    assert "delete the cached copy and its .sha256 record first" in message
    assert "dmlbench fetch" not in message


def test_wrong_shape_cached_csv(registry, tmp_path, cache):
    """A cached copy of an unpinned CSV with a row missing: the shape check names both shapes."""
    spec = dataclasses.replace(DATASETS["pima"], files=(FileSpec(PIMA, None),))
    registry.register("pima", spec)
    rows = b"".join(b"1,2,3,4,5,6,7,8,%d\n" % (i % 2) for i in range(767))
    copy_to(cache, PIMA, rows)
    message = fault(load_dataset, "pima", mirror=None, allow_network=False, expected=DataIntegrityError)
    assert str(cache / PIMA) in message and "has shape (767, 8), expected (768, 8)" in message


def test_unparseable_file(tmp_path):
    """usps_roweis (unpinned MAT file): junk is refused by the parser, as a DataParseError,
    which is also the ValueError parsers raise."""
    mirror = tmp_path / "mirror"
    copy_to(mirror, "usps_roweis/usps_all.mat", b"MATLAB 5.0 MAT-file, but cut short")
    message = fault(load_dataset, "usps_roweis", mirror=mirror, allow_network=False, expected=DataParseError)
    assert message.startswith("dataset 'usps_roweis': cannot parse ")
    assert "usps_roweis/usps_all.mat" in message and "dmlbench fetch usps_roweis" in message
    with pytest.raises(ValueError):
        load_dataset("usps_roweis", mirror=mirror, allow_network=False)


def test_parse_errors_keep_their_cause_and_bugs_propagate(registry, tmp_path):
    """The parser's own exception is the ``__cause__``; a programming error is not converted."""
    csv = b"1,2,a\n3,4,b\n"

    def buggy(paths):
        raise TypeError("a bug in the parser")

    spec = DatasetSpec("toy", "two rows", 2, 2, 2, (), (FileSpec("toy/toy.csv", sha(csv)),),
                       parsers.delimited_text(label_column=5))  # the file has 3 columns
    registry.register("toy", spec)
    registry.register("bug", dataclasses.replace(spec, name="bug", parser=buggy))
    copy_to(tmp_path / "mirror", "toy/toy.csv", csv)
    with pytest.raises(DataParseError) as err:
        load_dataset("toy", mirror=tmp_path / "mirror", allow_network=False)
    assert isinstance(err.value.__cause__, IndexError) and "\n" not in str(err.value)
    with pytest.raises(TypeError, match="a bug in the parser"):
        load_dataset("bug", mirror=tmp_path / "mirror", allow_network=False)


# --------------------------------------------------------------------------- 4, 5: no mirror, no download


def test_missing_mirror_folder_without_cache_or_network(tmp_path):
    mirror = tmp_path / "no-such-mirror"
    message = fault(load_dataset, "pima", mirror=mirror, allow_network=False)
    assert message.startswith("dataset 'pima': file 'pima/pima-indians-diabetes.csv' is not available: ")
    assert f"mirror folder {mirror} does not exist" in message
    assert "network access disabled" in message and "dmlbench fetch pima" in message


def test_missing_mirror_folder_from_the_environment(tmp_path, monkeypatch, no_network):
    mirror = tmp_path / "no-such-mirror"
    monkeypatch.setenv("DMLBENCH_DATA_MIRROR", str(mirror))
    message = fault(load_dataset, "pima")
    url = DATASETS["pima"].files[0].url
    assert f"downloading {url} failed (<urlopen error" in message
    assert f"mirror folder {mirror} does not exist" in message


def test_failed_download(cache, no_network):
    message = fault(load_dataset, "pima", mirror=None)
    url = DATASETS["pima"].files[0].url
    assert message.startswith(f"dataset 'pima': downloading {url} failed (<urlopen error")
    assert "Name or service not known" in message and str(cache / PIMA) in message
    assert "mirror: none configured" in message
    assert no_network == [(url, files.DOWNLOAD_TIMEOUT)] and 0 < files.DOWNLOAD_TIMEOUT <= 60


@pytest.mark.parametrize(
    "error",
    [
        TimeoutError("timed out"),
        ConnectionResetError(104, "Connection reset by peer"),
        urllib.error.HTTPError("https://x", 404, "Not Found", None, None),
        IncompleteRead(b"partial"),
    ],
    ids=["timeout", "reset", "http 404", "incomplete read"],
)
def test_every_download_failure_is_one_line(cache, monkeypatch, error):
    def urlopen(request, timeout=None):
        raise error

    monkeypatch.setattr(files.urllib.request, "urlopen", urlopen)
    message = fault(load_dataset, "pima", mirror=None)
    assert "downloading" in message and "failed" in message
    assert not (cache / PIMA).exists()


@pytest.mark.parametrize("name", FILE_DATASETS)
def test_every_registered_dataset_missing_is_one_line(name, tmp_path, no_network):
    """No mirror folder, empty cache, download failing: one line for every file dataset."""
    message = fault(load_dataset, name, mirror=tmp_path / "none")
    assert message.startswith(f"dataset {name!r}: ")
    assert "not available" in message or "failed" in message
    message = fault(load_dataset, name, mirror=tmp_path / "none", allow_network=False)
    assert message.startswith(f"dataset {name!r}: ")


# --------------------------------------------------------------------------- 6: unreadable or corrupt cache


def test_folder_in_place_of_the_cached_file(tmp_path, cache):
    require_shared("pima")
    (cache / PIMA).mkdir(parents=True)
    for mirror in (SHARED, None):  # with and without a mirror holding the file
        message = fault(load_dataset, "pima", mirror=mirror, allow_network=False)
        assert message == (
            f"dataset 'pima': cannot read cache file {cache / PIMA}: it is a folder, not the data "
            "file. Remove it and run `dmlbench fetch pima` to fetch the file again."
        )


def test_unreadable_cached_file(cache, monkeypatch):
    """A cached file that cannot be opened (as with chmod 000, which root ignores: simulated)."""
    copy_to(cache, PIMA, b"anything")

    def denied(path, compression=None):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(files, "content_sha256", denied)
    message = fault(load_dataset, "pima", mirror=None, allow_network=False)
    assert message.startswith(f"dataset 'pima': cannot read cache file {cache / PIMA}: Permission denied.")
    assert "dmlbench fetch pima" in message


def test_unreadable_mirror_file(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    copy_to(mirror, PIMA, b"anything")
    real_open = open

    def guarded(path, *args, **kwargs):
        if str(path).startswith(str(mirror)):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(files, "open", guarded, raising=False)
    message = fault(load_dataset, "pima", mirror=mirror, allow_network=False)
    assert message.startswith(f"dataset 'pima': cannot read mirror file {mirror / PIMA}: Permission denied.")


def test_unwritable_cache(tmp_path):
    require_shared("pima")
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    message = fault(load_dataset, "pima", mirror=SHARED, cache_dir=blocker / "cache", allow_network=False)
    assert message.startswith(f"dataset 'pima': cannot write cache file {blocker / 'cache' / PIMA}: ")
    assert "writable" in message


def test_corrupt_cached_copy_with_a_good_mirror(cache):
    """The cache is trusted first: a damaged cached copy is refused with the remedy (deleting it
    lets the next load copy the mirror's verified file again), never parsed."""
    require_shared("pima")
    flip_byte(copy_to(cache, PIMA))
    message = fault(load_dataset, "pima", mirror=SHARED, allow_network=False, expected=DataIntegrityError)
    assert f"sha256 mismatch for {cache / PIMA} (from the cache)" in message
    assert "Delete the cached file and run `dmlbench fetch pima`" in message
    (cache / PIMA).unlink()  # the remedy
    loader._load.cache_clear()
    assert load_dataset("pima", mirror=SHARED, allow_network=False)[2]["source"] == "mirror"
    assert checksums.sha256_file(cache / PIMA) == DATASETS["pima"].files[0].sha256


def test_truncated_cached_copy(cache):
    require_shared("pima")
    data = (SHARED / PIMA).read_bytes()
    copy_to(cache, PIMA, data[:-50])
    message = fault(load_dataset, "pima", mirror=SHARED, allow_network=False)
    assert "sha256 mismatch" in message and "(from the cache)" in message


def test_corrupt_sha256_record_of_an_unpinned_file(tmp_path, cache):
    """A damaged trust-on-first-use record (binary junk) is a mismatch, not a decode error."""
    X = np.zeros((2, 3456))
    save_lfw_sift(cache / "lfw/lfw_sift_funneled.npz", X, ["Aaron_Peirsol_0001", "Zico_0001"])
    (cache / "lfw/lfw_sift_funneled.npz.sha256").write_bytes(b"\xff\xfe\x00junk\nmore\n")
    message = fault(load_dataset, "lfw_sift", mirror=None, expected=DataIntegrityError)
    assert "sha256 mismatch" in message and "(from the cache)" in message


# --------------------------------------------------------------------------- 7: binary parse cache

CSV = b"1,2,a\n3,4,b\n5,6.5,b\n"


def binary_spec(**changes) -> DatasetSpec:
    spec = DatasetSpec("toy", "three rows", 3, 2, 2, (), (FileSpec("toy/toy.csv", sha(CSV)),),
                       parsers.delimited_text(label_column=-1), binary_cache=True)
    return dataclasses.replace(spec, **changes)


def test_corrupt_binary_cache_is_rebuilt(registry, tmp_path, cache):
    spec = registry.register("toy", binary_spec())
    copy_to(tmp_path / "mirror", "toy/toy.csv", CSV)
    X, y, _ = load_dataset("toy", mirror=tmp_path / "mirror")
    npz, info = bincache.entry_paths(spec, cache, bincache.cache_key(spec, cache))
    assert npz.is_file() and info.is_file()
    flip_byte(npz, len(npz.read_bytes()) // 2)
    loader._load.cache_clear()
    with pytest.warns(RuntimeWarning, match="damaged binary cache"):
        X2, y2, meta = load_dataset("toy", mirror=None, allow_network=False)
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(y2, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bincache.load(spec, cache) is not None  # rebuilt


def test_junk_binary_cache_entry_is_rebuilt(registry, tmp_path, cache):
    spec = registry.register("toy", binary_spec())
    copy_to(tmp_path / "mirror", "toy/toy.csv", CSV)
    load_dataset("toy", mirror=tmp_path / "mirror")
    npz, info = bincache.entry_paths(spec, cache, bincache.cache_key(spec, cache))
    npz.write_bytes(b"not a zip")
    info.write_text("{not json")
    loader._load.cache_clear()
    with pytest.warns(RuntimeWarning, match="damaged binary cache"):
        assert load_dataset("toy", allow_network=False)[0].shape == (3, 2)


def test_binary_cache_entry_of_the_wrong_shape_is_rebuilt(registry, tmp_path, cache):
    """A consistent (checksummed) entry whose arrays do not fit the spec is not served."""
    spec = registry.register("toy", binary_spec())
    copy_to(tmp_path / "mirror", "toy/toy.csv", CSV)
    X, _, _ = load_dataset("toy", mirror=tmp_path / "mirror")
    bincache.save(spec, cache, Parsed(np.zeros((2, 2)), np.array(["a", "b"]), {}))
    loader._load.cache_clear()
    with pytest.warns(RuntimeWarning, match=r"ignoring the binary cache .*shape \(2, 2\), expected \(3, 2\)"):
        X2, _, meta = load_dataset("toy", allow_network=False)
    np.testing.assert_array_equal(X2, X)
    assert meta["source"] == "cache"


def test_binary_cache_folder_blocked_only_warns(registry, tmp_path, cache):
    registry.register("toy", binary_spec())
    copy_to(tmp_path / "mirror", "toy/toy.csv", CSV)
    (cache / "toy").mkdir(parents=True)
    (cache / "toy/.parsed").write_text("a file where the binary cache folder should be")
    with pytest.warns(RuntimeWarning, match="could not write the binary cache"):
        assert load_dataset("toy", mirror=tmp_path / "mirror")[0].shape == (3, 2)


# --------------------------------------------------------------------------- every registered parser on junk


JUNK = {
    "empty": b"",
    "text": b"garbage\n1,2\n",
    "binary": bytes(range(256)) * 4,
}


def unpinned_junk_spec(name: str, junk: bytes, root: Path) -> DatasetSpec:
    """``DATASETS[name]`` with every file replaced by ``junk`` under ``root`` and its checksum
    pinned to the junk (so that the junk reaches the dataset's own parser)."""
    spec = DATASETS[name]
    new_files = []
    for fspec in spec.files:
        if fspec.members is not None:  # a listing: one junk member, listed
            member = "s1/1.pgm"
            copy_to(root, f"{fspec.folder}/{member}", junk)
            listing = files._listing_text({member: sha(junk)}).encode()
            copy_to(root, fspec.relpath, listing)
            new_files.append(dataclasses.replace(fspec, sha256=sha(listing), url=None))
            continue
        data = junk
        if fspec.compression == "gzip":
            data = gzip.compress(junk)
        elif fspec.compression == "bz2":
            import bz2

            data = bz2.compress(junk)
        copy_to(root, fspec.relpath, data)
        new_files.append(dataclasses.replace(fspec, sha256=sha(junk), url=None))
    return dataclasses.replace(spec, files=tuple(new_files))


@pytest.mark.filterwarnings("ignore:loadtxt. input contained no data")
@pytest.mark.parametrize("junk", list(JUNK))
@pytest.mark.parametrize("name", FILE_DATASETS)
def test_every_registered_parser_refuses_junk_in_one_line(registry, tmp_path, name, junk):
    """Junk with a matching checksum (as a damaged trust-on-first-use file would be) reaches each
    dataset's real parser: the result is a one-line DataIntegrityError, never a traceback."""
    registry.register(name, unpinned_junk_spec(name, JUNK[junk], tmp_path / "mirror"))
    message = fault(load_dataset, name, mirror=tmp_path / "mirror", allow_network=False,
                    expected=DataIntegrityError)
    assert message.startswith(f"dataset {name!r}: ")
    assert "cannot parse" in message or "data parsed from" in message or "not numeric" in message


@pytest.mark.parametrize("name", [n for n in FILE_DATASETS if all(
    (SHARED / f.relpath).is_file() for f in DATASETS[n].files)])
def test_every_mirrored_dataset_with_a_truncated_mirror_is_one_line(name, tmp_path):
    """Each mirrored dataset, its mirror files cut to their first 64 bytes: refused in one line."""
    mirror = tmp_path / "mirror"
    for fspec in DATASETS[name].files:
        copy_to(mirror, fspec.relpath, (SHARED / fspec.relpath).read_bytes()[:64])
    message = fault(load_dataset, name, mirror=mirror, allow_network=False, expected=DataIntegrityError)
    assert message.startswith(f"dataset {name!r}: ") and str(mirror) in message


# --------------------------------------------------------------------------- the runner's view


def test_runner_skips_a_corrupt_dataset_with_a_one_line_reason(tmp_path):
    """``tasks._data_problem`` (how a run decides skips) turns the fault into a reason."""
    require_shared("pima")
    from dml_bench.experiment import knn as tasks

    mirror = tmp_path / "mirror"
    flip_byte(copy_to(mirror, PIMA))
    reason = tasks._data_problem("pima", DataPlace(str(mirror), str(tmp_path / "c")))
    assert reason.startswith("data not available: dataset 'pima': sha256 mismatch") and "\n" not in reason
