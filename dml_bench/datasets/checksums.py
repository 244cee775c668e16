"""The sha256 of a data file's content: its bytes, or its decompressed gzip / bz2 stream.

A compressed file is verified by the sha256 of its decompressed content, computed while it is
read (:class:`ContentDigest`), so that the same data verifies whether a copy was recompressed or
not; a truncated or corrupt stream is refused (:class:`CorruptStream`).
"""

from __future__ import annotations

import bz2
import hashlib
import zlib
from pathlib import Path

CHUNK = 1 << 20  # bytes read at a time


def sha256_file(path: Path) -> str:
    """Hex sha256 digest of a file."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def content_sha256(path: Path, compression: str | None = None) -> str:
    """Hex sha256 of a file's content: its bytes, or its decompressed stream.

    Raises
    ------
    CorruptStream
        ``compression`` is set and the file is not a complete, valid stream of that kind.
    """
    digest = ContentDigest(compression)
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class CorruptStream(ValueError):
    """A compressed file is truncated or not a valid stream."""


class ContentDigest:
    """Incremental sha256 of a file's content, decompressing gzip / bz2 on the fly.

    Multi-member gzip and multi-stream bz2 files are read to their end, as ``gzip`` and ``bz2``
    do; anything after the last complete member is an error.

    Parameters
    ----------
    compression : {"gzip", "bz2"} or None
    """

    def __init__(self, compression: str | None = None):
        self.compression = compression
        self.size = 0  # raw (compressed) bytes seen
        self._sha = hashlib.sha256()
        self._decoder = self._new_decoder() if compression else None

    def _new_decoder(self):
        if self.compression == "gzip":
            return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        return bz2.BZ2Decompressor()

    def update(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self._decoder is None:
            self._sha.update(chunk)
            return
        try:
            while chunk:
                if self._decoder.eof:  # the next gzip member / bz2 stream
                    self._decoder = self._new_decoder()
                self._sha.update(self._decoder.decompress(chunk))
                chunk = self._decoder.unused_data if self._decoder.eof else b""
        except (zlib.error, OSError, EOFError, ValueError) as exc:
            raise CorruptStream(f"not a valid {self.compression} stream ({exc})") from exc

    def hexdigest(self) -> str:
        if self._decoder is not None and not self._decoder.eof:
            raise CorruptStream(f"truncated {self.compression} stream (it ends inside a member)")
        return self._sha.hexdigest()
