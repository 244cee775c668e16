"""Finding a dataset's files: local cache → mirror → network, each file checked by sha256.

The cache (``DMLBENCH_CACHE``, default ``./datasets``) and the mirror (``DMLBENCH_DATA_MIRROR``,
a read-only folder with the same layout) hold files at ``ROOT/<relpath>``. Whatever is read from
the mirror or downloaded is written into the cache through a temporary file that is renamed into
place only once its sha256 matches, so the cache never holds a partial or unverified file.
Files are hashed on every load (:mod:`.checksums`), except where a dataset's verified parse is
already in the binary cache (``bincache``: MNIST).

Two kinds of files differ from the plain case (see :class:`FileSpec`):

- compressed files (``compression="gzip"`` / ``"bz2"``) are stored as obtained, but their sha256
  is that of the decompressed content, computed while streaming; a truncated or corrupt stream
  is refused like a mismatch;
- unpinned files (``sha256=None``: sources that could not be reached when they were registered)
  are verified against the sha256 recorded in ``<relpath>.sha256`` when their first copy entered
  the cache (trust on first use).

Every fault is raised as a :class:`~.errors.DataNotAvailable` (or its subclass
:class:`~.errors.DataIntegrityError`) with a one-line message naming the dataset, the file and
the problem (see :mod:`.errors`): a file missing everywhere (including a mirror folder that does
not exist), a failed download (``DOWNLOAD_TIMEOUT`` seconds per connection attempt / read), a
cache or mirror file that cannot be read or written (``OSError``: permissions, a folder where the
file should be), a wrong sha256 or a corrupt compressed stream.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import urllib.request
import zipfile
from contextlib import contextmanager
from http.client import HTTPException
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from .checksums import CHUNK, ContentDigest, CorruptStream, content_sha256
from .errors import DataIntegrityError, DataNotAvailable
from .spec import DatasetSpec, FileSpec

ENV_CACHE = "DMLBENCH_CACHE"
ENV_MIRROR = "DMLBENCH_DATA_MIRROR"
DEFAULT_CACHE = "datasets"
_SOURCES = ("cache", "mirror", "network")  # in order of preference
_USER_AGENT = "dml-bench"
_RECORD_SUFFIX = ".sha256"  # next to an unpinned file: the sha256 of its first cached copy
DOWNLOAD_TIMEOUT = 60  # seconds: socket timeout of a download (connect, and each read)


def resolve_cache_dir(cache_dir: str | os.PathLike | None = None) -> Path:
    """``cache_dir``, else ``$DMLBENCH_CACHE``, else ``./datasets``, as an absolute path."""
    return Path(cache_dir or os.environ.get(ENV_CACHE) or DEFAULT_CACHE).absolute()


def resolve_mirror(mirror: str | os.PathLike | None = None) -> Path | None:
    """``mirror``, else ``$DMLBENCH_DATA_MIRROR``, else ``None`` (no mirror)."""
    mirror = mirror or os.environ.get(ENV_MIRROR)
    return Path(mirror).absolute() if mirror else None


def files_status(spec: DatasetSpec, cache_dir: Path, mirror: Path | None) -> str:
    """Where :func:`ensure_files` would read the files from, without hashing them.

    Returns
    -------
    status : {"cached", "mirror", "network needed"}
        ``"mirror"`` when every file is in the cache or the mirror and some only in the mirror.
    """
    status = "cached"
    for fspec in spec.files:
        if _first_missing(fspec, cache_dir) is None:
            continue
        if mirror is not None and _first_missing(fspec, mirror) is None:
            status = "mirror"
            continue
        return "network needed"
    return status


def ensure_files(
    spec: DatasetSpec, cache_dir: Path, mirror: Path | None, allow_network: bool
) -> tuple[list[Path], str]:
    """Make every file of ``spec`` present and verified in the cache.

    Parameters
    ----------
    spec : DatasetSpec
        Dataset whose ``files`` are resolved.
    cache_dir : Path
        Cache root.
    mirror : Path or None
        Mirror root (read only).
    allow_network : bool
        Whether files missing from cache and mirror may be downloaded.

    Returns
    -------
    paths : list of Path
        Cached paths in ``spec.files`` order, a listing replaced by its members.
    source : {"cache", "mirror", "network"}
        The farthest place any file came from.

    Raises
    ------
    DataNotAvailable
        A file is missing from cache and mirror and cannot be downloaded, or a cache / mirror
        file cannot be read or written (one-line message; see :mod:`.errors`).
    DataIntegrityError
        A file (in the cache, the mirror or downloaded) has the wrong sha256 (a subclass of
        ``DataNotAvailable``).
    """
    paths, sources = [], []
    for fspec in spec.files:
        try:
            relpaths, source = _ensure_unit(spec.name, fspec, cache_dir, mirror, allow_network)
        except OSError as exc:  # unreadable / unwritable cache or mirror file
            raise DataNotAvailable(_os_error_message(spec.name, fspec, exc, cache_dir, mirror)) from exc
        paths += [cache_dir / relpath for relpath in relpaths]
        sources.append(source)
    return paths, max(sources, key=_SOURCES.index)


def _ensure_unit(
    name: str, fspec: FileSpec, cache_dir: Path, mirror: Path | None, allow_network: bool
) -> tuple[list[str], str]:
    """``(relpaths, source)`` of one unit (a file, or a listing and its members)."""
    _check_cache_path(name, cache_dir / fspec.relpath)
    if _first_missing(fspec, cache_dir) is None:
        return _verify_unit(name, fspec, cache_dir), "cache"
    if mirror is not None and _first_missing(fspec, mirror) is None:
        return _copy_from_mirror(name, fspec, mirror, cache_dir), "mirror"
    if allow_network and fspec.url is not None:
        return _download(name, fspec, cache_dir, mirror), "network"
    raise DataNotAvailable(_not_available_message(name, fspec, cache_dir, mirror, allow_network))


def _check_cache_path(name: str, path: Path) -> None:
    """Refuse a cache path that exists but is not a regular file (e.g. a folder)."""
    if os.path.lexists(path) and not path.is_file():
        kind = "a folder" if path.is_dir() else "not a regular file (a broken link?)"
        raise DataNotAvailable(
            f"dataset {name!r}: cannot read cache file {path}: it is {kind}, not the data file. "
            f"Remove it and run `dmlbench fetch {name}` to fetch the file again."
        )


class CacheWriteError(OSError):
    """Writing a file into the cache failed (``filename`` is the cache path)."""


def _os_error_message(
    name: str, fspec: FileSpec, exc: OSError, cache_dir: Path, mirror: Path | None
) -> str:
    """One line for an ``OSError`` met while reading or writing the files of ``fspec``."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    if not exc.filename:
        where = f"cache {cache_dir}" + (f", mirror {mirror}" if mirror is not None else "")
        return (f"dataset {name!r}: I/O error on {fspec.relpath} ({where}): {reason}. Check the "
                f"files' permissions and the disk, then run `dmlbench fetch {name}`.")
    path = Path(exc.filename)
    if isinstance(exc, CacheWriteError):
        return (
            f"dataset {name!r}: cannot write cache file {path}: {reason}. Make the cache folder "
            f"{cache_dir} writable, or point {ENV_CACHE} / --cache-dir at a writable folder."
        )
    if mirror is not None and path.is_relative_to(mirror):
        return (
            f"dataset {name!r}: cannot read mirror file {path}: {reason}. Repair the mirror's "
            f"permissions, or unset {ENV_MIRROR} / --data-mirror."
        )
    if path.is_relative_to(cache_dir):
        return (
            f"dataset {name!r}: cannot read cache file {path}: {reason}. Fix its permissions, or "
            f"delete it and run `dmlbench fetch {name}` to fetch it again."
        )
    return f"dataset {name!r}: cannot read {path}: {reason}."


def expected_sha256(fspec: FileSpec, cache_dir: Path) -> str | None:
    """The registered sha256, or for an unpinned file the one recorded in the cache (if any)."""
    if fspec.pinned:
        return fspec.sha256
    record = _record_path(fspec, cache_dir)
    # binary junk in a damaged record becomes a hash that matches nothing: refused as a mismatch
    return record.read_text(errors="replace").strip() if record.is_file() else None


# --------------------------------------------------------------------------- listings


def _listing_entries(fspec: FileSpec, root: Path) -> list[tuple[str, str]]:
    """``(relpath, sha256)`` of the members named in the listing ``fspec`` under ``root``."""
    folder = PurePosixPath(fspec.relpath).parent
    entries = []
    text = (root / fspec.relpath).read_text(errors="replace")  # binary junk: refused below
    for lineno, line in enumerate(text.splitlines(), 1):
        match = re.fullmatch(r"([0-9a-f]{64}) [ *](?:\./)?(\S.*)", line)
        if match is None:
            raise DataIntegrityError(f"{root / fspec.relpath}:{lineno}: not a sha256sum line: {line[:80]!r}")
        entries.append((str(folder / match[2]), match[1]))
    return entries


def _listing_text(member_hashes: dict[str, str]) -> str:
    """A listing in the canonical ``sha256sum`` layout (``HASH  ./relpath``, natural order)."""
    names = sorted(member_hashes, key=_natural_key)
    return "".join(f"{member_hashes[name]}  ./{name}\n" for name in names)


def _natural_key(text: str) -> list:
    return [int(tok) if tok.isdigit() else tok for tok in re.split(r"(\d+)", text)]


# --------------------------------------------------------------------------- checks


def _first_missing(fspec: FileSpec, root: Path) -> str | None:
    """First file of the unit (a file, or a listing and its members) absent under ``root``."""
    if not (root / fspec.relpath).is_file():
        return fspec.relpath
    if fspec.members is not None:
        try:
            entries = _listing_entries(fspec, root)
        except DataIntegrityError:
            return None  # present but malformed: loading reports the checksum mismatch
        return next((rel for rel, _ in entries if not (root / rel).is_file()), None)
    return None


def _verify_unit(name: str, fspec: FileSpec, cache_dir: Path) -> list[str]:
    """Check sha256 of a cached file (and of a listing's members); returns the relpaths the
    parser reads (the file itself, or the listing's members)."""
    if not fspec.pinned:
        _check_recorded(name, fspec, cache_dir)
        return [fspec.relpath]
    _check(name, cache_dir / fspec.relpath, fspec.sha256, "cache", fspec.compression)
    if fspec.members is None:
        return [fspec.relpath]
    entries = _listing_entries(fspec, cache_dir)
    for relpath, digest in entries:
        _check(name, cache_dir / relpath, digest, "cache")
    return [relpath for relpath, _ in entries]


def _check(name: str, path: Path, expected: str, where: str, compression: str | None = None) -> str:
    try:
        got = content_sha256(path, compression)
    except CorruptStream as exc:
        raise DataIntegrityError(_corrupt_message(name, path, exc, path.stat().st_size, where)) from exc
    if got != expected:
        raise DataIntegrityError(
            _mismatch_message(name, path, expected, got, path.stat().st_size, where, compression)
        )
    return got


def _check_recorded(name: str, fspec: FileSpec, cache_dir: Path) -> None:
    """Verify an unpinned cached file against its recorded sha256, recording it if absent."""
    path = cache_dir / fspec.relpath
    recorded = expected_sha256(fspec, cache_dir)
    if recorded is not None:
        _check(name, path, recorded, "cache", fspec.compression)
        return
    try:
        got = content_sha256(path, fspec.compression)
    except CorruptStream as exc:
        raise DataIntegrityError(_corrupt_message(name, path, exc, path.stat().st_size, "cache")) from exc
    _record(fspec, cache_dir, got)


def _record_path(fspec: FileSpec, cache_dir: Path) -> Path:
    return cache_dir / (fspec.relpath + _RECORD_SUFFIX)


def _record(fspec: FileSpec, cache_dir: Path, digest: str) -> None:
    with _staged(_record_path(fspec, cache_dir)) as out:
        out.write(f"{digest}\n".encode())


def _corrupt_message(name: str, path: Path | str, exc: Exception, size: int, where: str) -> str:
    return (
        f"dataset {name!r}: {path} (from the {where}, {size} bytes) is corrupt: {exc}. "
        + _FIXES[where].format(name=name)
    )


_FIXES = {
    "cache": "Delete the cached file and run `dmlbench fetch {name}` to fetch it again.",
    "mirror": (
        f"The mirror copy is corrupt or another version: repair the mirror, or unset "
        f"{ENV_MIRROR} / --data-mirror and run `dmlbench fetch {{name}}` to download it."
    ),
    "network": "The source now serves different bytes; nothing was saved. Provide the file "
    f"through a mirror ({ENV_MIRROR} / --data-mirror) holding a verified copy.",
}


def _mismatch_message(
    name: str,
    path: Path | str,
    expected: str,
    got: str,
    size: int,
    where: str,
    compression: str | None = None,
) -> str:
    what = f"sha256 of the {compression}-decompressed content" if compression else "sha256"
    return (
        f"dataset {name!r}: {what} mismatch for {path} (from the {where}): expected {expected}, "
        f"got {got} ({size} bytes). {_FIXES[where].format(name=name)}"
    )


def _not_available_message(
    name: str, fspec: FileSpec, cache_dir: Path, mirror: Path | None, allow_network: bool
) -> str:
    """One line: where the file was looked for, and how to provide it."""
    what = f"{fspec.relpath!r}" + (" and the files it lists" if fspec.members else "")
    if fspec.url is None:
        network = "network: no download source registered"
    else:
        network = f"network: {fspec.url}" + ("" if allow_network else " (network access disabled)")
    return (
        f"dataset {name!r}: file {what} is not available: {_where_missing(fspec, cache_dir, mirror)}; "
        f"{network}{_obtain(fspec)}. {_provide_hint(name, fspec)}"
    )


def _where_missing(fspec: FileSpec, cache_dir: Path, mirror: Path | None) -> str:
    """``cache: ... (missing ...); mirror: ...`` for a unit absent from cache and mirror."""
    cache = f"cache: {cache_dir / fspec.relpath} (missing {_first_missing(fspec, cache_dir)})"
    if mirror is None:
        mirror_text = f"mirror: none configured (set {ENV_MIRROR} or pass --data-mirror)"
    elif not mirror.is_dir():
        state = "is not a folder" if mirror.exists() else "does not exist"
        mirror_text = f"mirror folder {mirror} {state} (check {ENV_MIRROR} / --data-mirror)"
    else:
        mirror_text = f"mirror: {mirror / fspec.relpath} (missing {_first_missing(fspec, mirror)})"
    return f"{cache}; {mirror_text}"


def _obtain(fspec: FileSpec) -> str:
    return f"; obtain: {fspec.obtain.rstrip('.')}" if fspec.obtain else ""


def _provide_hint(name: str, fspec: FileSpec) -> str:
    fetch = (f"run `dmlbench fetch {name}` on a machine with network access (it downloads into "
             "the cache), " if fspec.url else "")
    return (
        f"To provide it: {fetch}copy the file to the cache path named, or set {ENV_MIRROR} / "
        f"--data-mirror to a folder holding {fspec.relpath}."
    )


# --------------------------------------------------------------------------- writing the cache


def _cache_write_error(exc: OSError, target: Path) -> CacheWriteError:
    """``exc``, met while writing ``target`` into the cache, as a :class:`CacheWriteError`."""
    return CacheWriteError(exc.errno, exc.strerror or str(exc), str(target))


class _StagedFile:
    """A binary file open for writing; its write errors are raised as :class:`CacheWriteError`
    naming ``target`` (errors reading the source stay what they are)."""

    def __init__(self, fd: int, target: Path):
        self._file = os.fdopen(fd, "wb")
        self._target = target

    def write(self, data: bytes) -> int:
        try:
            return self._file.write(data)
        except OSError as exc:
            raise _cache_write_error(exc, self._target) from exc

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        try:
            self._file.close()
        except OSError as exc:
            if exc_info[0] is None:
                raise _cache_write_error(exc, self._target) from exc
        return False


@contextmanager
def _staged(target: Path):
    """Yield a temporary file next to ``target``; it is renamed onto ``target`` on success."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    except OSError as exc:
        raise _cache_write_error(exc, target) from exc
    try:
        with _StagedFile(fd, target) as out:
            yield out
        try:
            os.replace(tmp, target)
        except OSError as exc:
            raise _cache_write_error(exc, target) from exc
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _write_verified(
    name: str,
    src: BinaryIO,
    target: Path,
    expected: str | None,
    origin: Path | str,
    where: str,
    compression: str | None = None,
) -> str:
    """Copy ``src`` into ``target`` atomically if its content hashes to ``expected`` (any
    complete stream when ``expected`` is None); returns the content sha256."""
    digest = ContentDigest(compression)
    with _staged(target) as out:
        try:
            while chunk := src.read(CHUNK):
                digest.update(chunk)
                out.write(chunk)
            got = digest.hexdigest()
        except CorruptStream as exc:
            raise DataIntegrityError(_corrupt_message(name, origin, exc, digest.size, where)) from exc
        if expected is not None and got != expected:
            raise DataIntegrityError(
                _mismatch_message(name, origin, expected, got, digest.size, where, compression)
            )
    return got


def _install_file(
    name: str, fspec: FileSpec, src: BinaryIO, cache_dir: Path, origin: Path | str, where: str
) -> None:
    """Write one (non-listing) file into the cache, verified; record the hash if unpinned."""
    got = _write_verified(
        name, src, cache_dir / fspec.relpath, fspec.sha256, origin, where, fspec.compression
    )
    if not fspec.pinned:
        _record(fspec, cache_dir, got)


def _copy_from_mirror(name: str, fspec: FileSpec, mirror: Path, cache_dir: Path) -> list[str]:
    """Copy a file (or a listing and its members) into the cache, verifying the bytes copied;
    returns the relpaths the parser reads."""
    if fspec.members is None:
        with open(mirror / fspec.relpath, "rb") as src:
            _install_file(name, fspec, src, cache_dir, mirror / fspec.relpath, "mirror")
        return [fspec.relpath]
    _check(name, mirror / fspec.relpath, fspec.sha256, "mirror")
    entries = _listing_entries(fspec, mirror)
    members = entries + [(fspec.relpath, fspec.sha256)]  # listing last: marks completion
    for relpath, digest in members:
        with open(mirror / relpath, "rb") as src:
            _write_verified(name, src, cache_dir / relpath, digest, mirror / relpath, "mirror")
    return [relpath for relpath, _ in entries]


def _download(name: str, fspec: FileSpec, cache_dir: Path, mirror: Path | None) -> list[str]:
    """Download a file (or a listing's archive) into the cache, verifying it; returns the
    relpaths the parser reads."""
    request = urllib.request.Request(fspec.url, headers={"User-Agent": _USER_AGENT})
    try:
        with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT) as response:
            if fspec.members is not None:
                return _install_archive(name, fspec, response, cache_dir)
            _install_file(name, fspec, response, cache_dir, fspec.url, "network")
            return [fspec.relpath]
    except CacheWriteError:
        raise  # the download worked, the cache is not writable: reported as such
    except (OSError, HTTPException) as exc:  # URLError, timeouts and resets are OSErrors
        reason = str(exc) or type(exc).__name__
        raise DataNotAvailable(
            f"dataset {name!r}: downloading {fspec.url} failed ({reason}); "
            f"{_where_missing(fspec, cache_dir, mirror)}{_obtain(fspec)}. {_provide_hint(name, fspec)}"
        ) from exc


def _install_archive(name: str, fspec: FileSpec, response: BinaryIO, cache_dir: Path) -> list[str]:
    """Extract a listing's members from a zip download; keep them only if the listing rebuilt
    from their hashes matches ``fspec.sha256``."""
    folder = cache_dir / PurePosixPath(fspec.relpath).parent
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".download.") as tmp:
        archive = Path(tmp) / "archive.zip"
        with open(archive, "wb") as out:
            shutil.copyfileobj(response, out, CHUNK)
        extracted = Path(tmp) / "members"
        try:
            hashes = _extract_members(archive, fspec.members, extracted, name)
        except zipfile.BadZipFile as exc:
            raise DataIntegrityError(f"dataset {name!r}: {fspec.url} is not a zip archive ({exc}).") from exc
        listing = _listing_text(hashes).encode()
        got = hashlib.sha256(listing).hexdigest()
        if got != fspec.sha256:
            raise DataIntegrityError(
                f"dataset {name!r}: the {len(hashes)} files extracted from {fspec.url} do not match "
                f"the registered ones: their sha256 listing hashes to {got}, expected {fspec.sha256} "
                f"(the hash of {fspec.relpath}). Nothing was saved. Provide the files through a "
                f"mirror ({ENV_MIRROR} / --data-mirror) holding a verified copy."
            )
        for member in hashes:
            (folder / member).parent.mkdir(parents=True, exist_ok=True)
            os.replace(extracted / member, folder / member)
        with _staged(cache_dir / fspec.relpath) as out:
            out.write(listing)
    return [str(PurePosixPath(fspec.relpath).parent / m) for m in sorted(hashes, key=_natural_key)]


def _extract_members(archive: Path, pattern: str, dest: Path, name: str = "?") -> dict[str, str]:
    """Extract archive entries matching ``pattern`` to ``dest / group(1)``; returns their sha256."""
    hashes = {}
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            if info.is_dir() or not (match := re.search(pattern, info.filename)):
                continue
            relpath = match[1]
            if ".." in PurePosixPath(relpath).parts or PurePosixPath(relpath).is_absolute():
                raise DataIntegrityError(f"dataset {name!r}: the downloaded archive has an unsafe member "
                                         f"path {info.filename!r}; nothing was saved.")
            target = dest / relpath
            target.parent.mkdir(parents=True, exist_ok=True)
            digest = hashlib.sha256()
            with zf.open(info) as src, open(target, "wb") as out:
                while chunk := src.read(CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
            hashes[relpath] = digest.hexdigest()
    return hashes
