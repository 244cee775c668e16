"""Tests of dataset loading: the registered datasets read from the offline mirror, and the
refusal paths (checksum, truncation, shape, missing files) on small temporary files."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest

from dml_bench.datasets import (
    DATASETS,
    DataIntegrityError,
    DataNotAvailable,
    DatasetSpec,
    FileSpec,
    dataset_status,
    fetch_dataset,
    load_dataset,
    loader,
    parsers,
)
from dml_bench.datasets.checksums import sha256_file
from dml_bench.datasets.files import _listing_text
from dml_bench.registry import Registry, UnknownNameError

MIRROR = Path(os.environ.get("DMLBENCH_DATA_MIRROR") or Path(__file__).parents[2] / "shared" / "datasets")


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """Each test gets an empty cache and, unless it sets one, the offline mirror."""
    monkeypatch.setenv("DMLBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DMLBENCH_DATA_MIRROR", str(MIRROR))
    return tmp_path / "cache"


def require_mirror(name):
    for fspec in DATASETS[name].files:
        if not (MIRROR / fspec.relpath).is_file():
            pytest.skip(f"{fspec.relpath} not in the data mirror {MIRROR} (set DMLBENCH_DATA_MIRROR)")


# --------------------------------------------------------------------------- registered datasets

# name: (shape, per-class counts, {row: (first feature values, label)}, extra meta)
EXPECTED = {
    "wine": ((178, 13), [59, 71, 48], {0: ([14.23, 1.71, 2.43], 0)}, {}),
    "iris": ((150, 4), [50, 50, 50], {0: ([5.1, 3.5, 1.4, 0.2], 0)}, {}),
    # scikit-learn's copy of optdigits.tes: its first row is optdigits row 3823 above
    "digits": ((1797, 64), [178, 182, 177, 183, 181, 182, 181, 179, 174, 180],
               {0: ([0, 0, 5, 13, 9, 1, 0, 0], 0)}, {}),
    "breast_cancer": ((569, 30), [212, 357], {0: ([17.99, 10.38, 122.8, 1001], 0)}, {}),
    "pima": ((768, 8), [500, 268], {0: ([6, 148, 72, 35, 0, 33.6, 0.627, 50], 1)}, {}),
    "waveform": ((5000, 21), [1657, 1647, 1696], {0: ([-1.23, -1.56, -1.75, -0.28], 2)}, {}),
    "segment": (
        (2310, 19),
        [330] * 7,
        {0: ([140.0, 125.0, 9, 0.0], 0), 210: ([110.0, 189.0, 9, 0.0], 3)},  # BRICKFACE, GRASS
        {"parts": {"data": 210, "test": 2100}},
    ),
    "segment_train": ((210, 19), [30] * 7, {0: ([140.0, 125.0, 9, 0.0], 0)}, {}),
    "optdigits": (
        (5620, 64),
        [554, 571, 557, 572, 568, 558, 558, 566, 554, 562],  # optdigits.names: train + test
        {0: ([0, 1, 6, 15, 12, 1, 0, 0], 0), 3823: ([0, 0, 5, 13, 9, 1, 0, 0], 0)},
        {"parts": {"train": 3823, "test": 1797}, "image_shape": (8, 8)},
    ),
    "optdigits_train": (
        (3823, 64),
        [376, 389, 380, 389, 387, 376, 377, 387, 380, 382],
        {0: ([0, 1, 6, 15, 12, 1, 0, 0], 0)},
        {"image_shape": (8, 8)},
    ),
    "orl_faces": (
        (400, 10304),
        [10] * 40,
        {0: ([48, 49, 45, 47], 0), 399: (None, 39)},  # s1/1.pgm raster starts "01-/"
        {"image_shape": (112, 92)},
    ),
    "usps": (
        (9298, 256),
        None,
        {0: ([0, 0, 0, 0, 0, 0, 0, 0.1845], 6), 1: (None, 5), 7291: (None, None)},
        {"parts": {"train": 7291, "test": 2007}, "image_shape": (16, 16)},
    ),
}


def test_every_registered_dataset_is_tested():
    assert set(EXPECTED) <= set(DATASETS)  # the five papers' datasets: tests/test_datasets_more.py


def test_the_catalogue_keeps_its_order():
    """``dmlbench datasets`` lists the catalogue in this order, whichever module of the catalogue
    registers an entry."""
    assert list(DATASETS) == [
        "wine", "iris", "breast_cancer", "digits", "pima", "waveform", "segment", "segment_train",
        "optdigits", "optdigits_train", "orl_faces", "usps", "breast_cancer_original", "letter",
        "balance_scale", "ionosphere", "vehicle", "mnist", "mnist_test", "yale_b", "usps_roweis",
        "lfw_pairs", "lfw_sift", "kth_actions", "weizmann_actions", "teapot", "frey_faces",
        "dexter", "dexter_train_valid", "gisette", "news20", "twin_peaks", "swiss_roll",
        "waveform_generated", "face_background"]


@pytest.mark.parametrize("name", list(EXPECTED))
def test_registered_dataset(name):
    require_mirror(name)
    shape, counts, rows, extra = EXPECTED[name]
    spec = DATASETS[name]
    X, y, meta = load_dataset(name)
    assert X.shape == shape and X.dtype == np.float64
    assert y.shape == shape[:1] and y.dtype == np.int64
    assert meta["n_classes"] == spec.n_classes == len(meta["class_names"]) == y.max() + 1
    assert (meta["name"], meta["n_samples"], meta["n_features"]) == (name, *shape)
    assert meta["source"] == ("bundled" if spec.bundled else "mirror")
    assert meta["papers"] == list(spec.papers)
    if counts is not None:
        assert np.bincount(y).tolist() == counts
    for row, (values, label) in rows.items():
        if values is not None:
            np.testing.assert_allclose(X[row, : len(values)], values, rtol=1e-6)
        if label is not None:
            assert y[row] == label
    for key, value in extra.items():
        assert meta[key] == value
    assert np.isfinite(X).all()


def test_class_names_follow_sorted_original_labels():
    require_mirror("segment")
    assert load_dataset("segment")[2]["class_names"] == [
        "BRICKFACE", "CEMENT", "FOLIAGE", "GRASS", "PATH", "SKY", "WINDOW"
    ]
    assert load_dataset("breast_cancer")[2]["class_names"] == ["malignant", "benign"]


def test_usps_values_and_orl_images():
    require_mirror("usps")
    require_mirror("orl_faces")
    X, _, _ = load_dataset("usps")
    assert X.min() == 0 and X.max() == 1
    X, y, meta = load_dataset("orl_faces")
    assert meta["class_names"][:3] == ["1", "2", "3"]  # numeric order of subjects s1, s2, s3
    raw = (MIRROR / "orl_faces/s40/10.pgm").read_bytes()
    image = X[-1].reshape(meta["image_shape"])  # rows of the raster, top to bottom
    np.testing.assert_array_equal(image, np.frombuffer(raw[-10304:], np.uint8).reshape(112, 92))


def test_orl_listing_is_rebuilt_from_its_members():
    """The network path verifies the AT&T zip by rebuilding SHA256SUMS from the extracted files."""
    require_mirror("orl_faces")
    folder = MIRROR / "orl_faces"
    hashes = {p.relative_to(folder).as_posix(): sha256_file(p) for p in folder.glob("s*/*.pgm")}
    assert _listing_text(hashes) == (folder / "SHA256SUMS").read_text()
    assert hashlib.sha256(_listing_text(hashes).encode()).hexdigest() == DATASETS["orl_faces"].files[0].sha256


def test_second_load_is_memoised_and_read_only():
    require_mirror("pima")
    X, y, meta = load_dataset("pima")
    meta["class_names"].append("oops")
    X2, y2, meta2 = load_dataset("pima")
    assert X2 is X and y2 is y and meta2["source"] == "mirror" and meta2["class_names"] == ["0", "1"]
    with pytest.raises(ValueError, match="read-only"):
        X[0, 0] = 1.0


def test_status_and_fetch(cache, monkeypatch):
    require_mirror("pima")
    assert dataset_status("wine") == "bundled"
    assert fetch_dataset("wine") is None
    assert dataset_status("pima") == "mirror"
    assert dataset_status("pima", mirror=cache / "nowhere") == "network needed"
    monkeypatch.delenv("DMLBENCH_DATA_MIRROR")
    assert dataset_status("pima") == "network needed"
    assert fetch_dataset("pima", mirror=MIRROR) == cache / "pima"
    assert dataset_status("pima") == "cached"
    assert load_dataset("pima", allow_network=False)[2]["source"] == "cache"


def test_default_cache_is_datasets_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("DMLBENCH_CACHE")
    monkeypatch.chdir(tmp_path)
    assert dataset_status("pima", mirror=tmp_path / "none") == "network needed"
    with pytest.raises(DataNotAvailable, match=re.escape(str(tmp_path / "datasets" / "pima"))):
        load_dataset("pima", mirror=tmp_path / "none", allow_network=False)


@pytest.mark.parametrize("call", [load_dataset, dataset_status, fetch_dataset])
def test_unknown_name(call):
    with pytest.raises(UnknownNameError) as err:
        call("optdigit")
    assert err.value.suggestion == "optdigits"
    assert "Did you mean 'optdigits'?" in str(err.value) and "usps" in str(err.value)


# --------------------------------------------------------------------------- refusal paths

TOY_CSV = b"1,2,a\n3,4,b\n5,6.5,b\n"


def toy_spec(*, n_samples=3, url=None):
    return DatasetSpec(
        name="toy",
        description="three rows",
        n_samples=n_samples,
        n_features=2,
        n_classes=2,
        papers=(),
        files=(FileSpec("toy/toy.csv", hashlib.sha256(TOY_CSV).hexdigest(), url),),
        parser=parsers.delimited_text(label_column=-1),
    )


@pytest.fixture
def registry(monkeypatch):
    """A temporary registry seen by the loaders, for synthetic specs."""
    reg = Registry("dataset")
    monkeypatch.setattr(loader, "DATASETS", reg)
    return reg


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    root = tmp_path / "mirror"
    (root / "toy").mkdir(parents=True)
    (root / "toy/toy.csv").write_bytes(TOY_CSV)
    monkeypatch.setenv("DMLBENCH_DATA_MIRROR", str(root))
    return root


def test_toy_loads_from_mirror_then_cache(registry, mirror, cache):
    registry.register("toy", toy_spec())
    assert dataset_status("toy") == "mirror"
    X, y, meta = load_dataset("toy")
    np.testing.assert_array_equal(X, [[1, 2], [3, 4], [5, 6.5]])
    assert y.tolist() == [0, 1, 1] and meta["class_names"] == ["a", "b"] and meta["source"] == "mirror"
    assert (cache / "toy/toy.csv").read_bytes() == TOY_CSV
    assert dataset_status("toy") == "cached"
    assert load_dataset("toy", mirror=mirror / "other")[2]["source"] == "cache"


@pytest.mark.parametrize("bad", [TOY_CSV.replace(b"6.5", b"6.6"), TOY_CSV[:-5]], ids=["corrupt", "truncated"])
def test_bad_cached_file_is_refused(registry, mirror, cache, bad):
    registry.register("toy", toy_spec())
    (cache / "toy").mkdir(parents=True)
    (cache / "toy/toy.csv").write_bytes(bad)
    with pytest.raises(DataIntegrityError) as err:
        load_dataset("toy")
    msg = str(err.value)
    expected, got = hashlib.sha256(TOY_CSV).hexdigest(), hashlib.sha256(bad).hexdigest()
    assert str(cache / "toy/toy.csv") in msg and f"expected {expected}" in msg and f"got {got}" in msg
    assert "Delete the cached file" in msg and "`dmlbench fetch toy`" in msg


@pytest.mark.parametrize("bad", [TOY_CSV.replace(b"6.5", b"6.6"), TOY_CSV[:-5]], ids=["corrupt", "truncated"])
def test_bad_mirror_file_is_refused_and_not_cached(registry, mirror, cache, bad):
    registry.register("toy", toy_spec())
    (mirror / "toy/toy.csv").write_bytes(bad)
    with pytest.raises(DataIntegrityError) as err:
        load_dataset("toy")
    msg = str(err.value)
    assert str(mirror / "toy/toy.csv") in msg and hashlib.sha256(bad).hexdigest() in msg
    assert "DMLBENCH_DATA_MIRROR" in msg
    assert not (cache / "toy").exists() or not any((cache / "toy").iterdir())


def test_wrong_shape_is_refused(registry, mirror):
    registry.register("toy", toy_spec(n_samples=4))
    with pytest.raises(DataIntegrityError, match=r"shape \(3, 2\), expected \(4, 2\)"):
        load_dataset("toy")


def test_wrong_class_count_is_refused(registry, mirror):
    spec = toy_spec()
    registry.register("toy", dataclasses.replace(spec, n_classes=3))
    with pytest.raises(DataIntegrityError, match="2 classes, expected 3"):
        load_dataset("toy")


def test_missing_everywhere_without_network(registry, tmp_path, cache, monkeypatch):
    monkeypatch.delenv("DMLBENCH_DATA_MIRROR")
    registry.register("toy", toy_spec(url="https://example.org/toy.csv"))
    assert dataset_status("toy") == "network needed"
    with pytest.raises(DataNotAvailable) as err:
        load_dataset("toy", allow_network=False)
    msg = str(err.value)
    assert str(cache / "toy/toy.csv") in msg and "DMLBENCH_DATA_MIRROR" in msg
    assert "https://example.org/toy.csv" in msg and "network access disabled" in msg
    assert "`dmlbench fetch toy`" in msg


def test_download_is_verified_then_cached(registry, tmp_path, cache, monkeypatch):
    monkeypatch.delenv("DMLBENCH_DATA_MIRROR")
    source = tmp_path / "served.csv"
    source.write_bytes(TOY_CSV)
    registry.register("toy", toy_spec(url=source.as_uri()))
    assert load_dataset("toy")[2]["source"] == "network"
    assert (cache / "toy/toy.csv").read_bytes() == TOY_CSV and dataset_status("toy") == "cached"


def test_bad_download_is_refused_and_not_cached(registry, tmp_path, cache, monkeypatch):
    monkeypatch.delenv("DMLBENCH_DATA_MIRROR")
    source = tmp_path / "served.csv"
    source.write_bytes(TOY_CSV[:-5])
    registry.register("toy", toy_spec(url=source.as_uri()))
    with pytest.raises(DataIntegrityError, match="nothing was saved"):
        load_dataset("toy")
    assert list((cache / "toy").iterdir()) == []


def test_failed_download_is_not_available(registry, tmp_path, monkeypatch):
    monkeypatch.delenv("DMLBENCH_DATA_MIRROR")
    url = (tmp_path / "gone.csv").as_uri()
    registry.register("toy", toy_spec(url=url))
    with pytest.raises(DataNotAvailable, match=f"downloading {url} failed"):
        load_dataset("toy")


# --------------------------------------------------------------------------- listings and PGM images


def pgm(width, height, pixels, maxval=255):
    """A binary PGM with comments and irregular whitespace in its header."""
    header = f"P5\n# made by a test\n{width}  {height}\n#c\n {maxval}\n".encode()
    return header + np.asarray(pixels, ">u2" if maxval > 255 else "u1").tobytes()


def faces_mirror(root):
    """A 2-subject x 2-image set in the ORL layout; returns the listing's FileSpec."""
    hashes = {}
    for subject in (1, 2):
        for image in (1, 2):
            rel = f"s{subject}/{image}.pgm"
            data = pgm(3, 2, np.full(6, 10 * subject + image))
            (root / "faces" / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / "faces" / rel).write_bytes(data)
            hashes[rel] = hashlib.sha256(data).hexdigest()
    listing = _listing_text(hashes).encode()
    (root / "faces/SHA256SUMS").write_bytes(listing)
    return FileSpec("faces/SHA256SUMS", hashlib.sha256(listing).hexdigest(), members=r"(?:^|/)(s\d+/\d+\.pgm)$")


def faces_spec(listing):
    return DatasetSpec(
        name="faces",
        description="toy faces",
        n_samples=4,
        n_features=6,
        n_classes=2,
        papers=(),
        files=(listing,),
        parser=parsers.pgm_images(r"/s(\d+)/(\d+)\.pgm$"),
        image_shape=(2, 3),
    )


def test_listing_members_from_mirror(registry, tmp_path, cache, monkeypatch):
    monkeypatch.setenv("DMLBENCH_DATA_MIRROR", str(tmp_path / "m"))
    registry.register("faces", faces_spec(faces_mirror(tmp_path / "m")))
    X, y, meta = load_dataset("faces")
    assert X[:, 0].tolist() == [11, 12, 21, 22] and y.tolist() == [0, 0, 1, 1]
    assert meta["image_shape"] == (2, 3) and dataset_status("faces") == "cached"


def test_corrupt_listing_member_is_refused(registry, tmp_path):
    registry.register("faces", faces_spec(faces_mirror(tmp_path / "m")))
    (tmp_path / "m/faces/s2/1.pgm").write_bytes(pgm(3, 2, np.zeros(6)))
    with pytest.raises(DataIntegrityError, match="s2/1.pgm"):
        load_dataset("faces", mirror=tmp_path / "m")


def test_listing_members_from_zip_archive(registry, tmp_path, cache, monkeypatch):
    monkeypatch.delenv("DMLBENCH_DATA_MIRROR")
    listing = faces_mirror(tmp_path / "m")
    archive = tmp_path / "faces.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("README", "not a face")
        for path in (tmp_path / "m/faces").glob("s*/*.pgm"):
            zf.write(path, f"att_faces/{path.relative_to(tmp_path / 'm/faces').as_posix()}")
    registry.register("faces", faces_spec(dataclasses.replace(listing, url=archive.as_uri())))
    assert load_dataset("faces")[2]["source"] == "network"
    assert (cache / "faces/SHA256SUMS").read_bytes() == (tmp_path / "m/faces/SHA256SUMS").read_bytes()
    assert not (cache / "faces/README").exists()


def test_tampered_zip_archive_is_refused(registry, tmp_path, cache, monkeypatch):
    monkeypatch.delenv("DMLBENCH_DATA_MIRROR")
    listing = faces_mirror(tmp_path / "m")
    archive = tmp_path / "faces.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in (tmp_path / "m/faces").glob("s*/*.pgm"):
            zf.writestr(path.relative_to(tmp_path / "m/faces").as_posix(), pgm(3, 2, np.ones(6)))
    registry.register("faces", faces_spec(dataclasses.replace(listing, url=archive.as_uri())))
    with pytest.raises(DataIntegrityError, match="do not match the registered ones"):
        load_dataset("faces")
    assert sorted(p.name for p in (cache / "faces").iterdir()) == []


def test_read_pgm_16_bit(tmp_path):
    path = tmp_path / "deep.pgm"
    path.write_bytes(pgm(2, 1, [1000, 65535], maxval=65535))
    np.testing.assert_array_equal(parsers.read_pgm(path), [[1000, 65535]])


@pytest.mark.parametrize("data", [b"P2\n1 1\n255\n0", b"P5\n2 2\n255\n" + bytes(3), b"P5\n2"])
def test_read_pgm_refuses_malformed(tmp_path, data):
    path = tmp_path / "bad.pgm"
    path.write_bytes(data)
    with pytest.raises(ValueError):
        parsers.read_pgm(path)
