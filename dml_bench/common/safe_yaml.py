"""Bounded YAML: the files a user or a colleague supplies (configs, board configs, settings, a
results folder's ``config.yaml``) parsed with limits, so that a few bytes cannot hang or crash
the reader.

Built on PyYAML's :class:`yaml.SafeLoader` (no tag runs code: ``!!python/...`` tags are refused as
there), with four limits:

- the file's size (:data:`MAX_FILE_BYTES`, 1 MiB), read no further than the limit;
- its encoding: UTF-8 (a byte that is not is reported with its offset);
- the nesting depth of the composed document (:data:`MAX_DEPTH` levels, a level being a node on
  the path from the root: a scalar inside the 100th nested collection is at level 101), so that
  thousands of nested brackets are a one-line error instead of a ``RecursionError``;
- the number of nodes of the document with every alias expanded (:data:`MAX_NODES`): an alias
  counts as the whole subtree it names, so that a "billion laughs" document (anchors of lists of
  aliases of lists of aliases …), whose values are tiny as shared Python objects but enormous as
  soon as anything walks them (``str``, ``yaml.safe_dump``), is refused while it is composed. An
  alias to a node that contains it (a recursive document) is refused too.

Values that PyYAML resolves but Python cannot build (an integer of more than 4300 digits, a date
``2020-99-99``) are reported as YAML errors too, with their line and column.

Every problem is a :class:`yaml.YAMLError` (so callers that catch those keep working), and
:func:`describe` gives its one-line report; :class:`YAMLLimitError` (a limit exceeded),
:class:`YAMLEncodingError` (not UTF-8) and :class:`YAMLFileTooLarge` (the file's size) tell them
apart.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.events import AliasEvent

#: the largest YAML file read, in bytes (a config is a few KB)
MAX_FILE_BYTES = 2**20
#: the most nodes on a path from the root (a config nests about 5 levels)
MAX_DEPTH = 100
#: the most nodes a document may have, with every alias counted as the nodes it stands for
MAX_NODES = 100_000


class YAMLLimitError(yaml.error.MarkedYAMLError):
    """A document beyond :data:`MAX_DEPTH` or :data:`MAX_NODES`, or with a recursive alias."""


class YAMLEncodingError(yaml.YAMLError):
    """A file that is not UTF-8 text; ``str()`` names the offset of the first bad byte."""


class YAMLFileTooLarge(yaml.YAMLError):
    """A file larger than the limit it is read with."""


class BoundedLoader(yaml.SafeLoader):
    """:class:`yaml.SafeLoader` that counts the nodes it composes (aliases at their expanded size)
    and the nesting depth, and raises :class:`YAMLLimitError` past ``max_nodes`` / ``max_depth``.
    """

    max_nodes = MAX_NODES
    max_depth = MAX_DEPTH

    def __init__(self, stream):
        super().__init__(stream)
        self._expanded = 0  # nodes composed so far, each alias counted as its anchor's subtree
        self._depth = 0
        self._sizes: dict[int, int] = {}  # id(node) → its expanded size, once composed

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            node = self.anchors.get(event.anchor)
            if node is not None:  # an undefined alias is PyYAML's own error
                size = self._sizes.get(id(node))
                if size is None:
                    raise YAMLLimitError(None, None, f"the alias *{event.anchor} refers to a node "
                                         "that contains it (a recursive document)",
                                         event.start_mark)
                self._count(size, event)
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > self.max_depth:
            raise YAMLLimitError(None, None, f"nested deeper than {self.max_depth} levels",
                                 event.start_mark)
        start = self._expanded
        self._count(1, event)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        self._sizes[id(node)] = self._expanded - start
        return node

    def _count(self, n: int, event) -> None:
        self._expanded += n
        if self._expanded > self.max_nodes:
            raise YAMLLimitError(None, None, f"more than {self.max_nodes} nodes with its aliases "
                                 "expanded", event.start_mark)

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:  # e.g. a 5000-digit int, a date 2020-99-99
            problem = f"cannot read the value: {' '.join(str(exc).split())}"
            raise ConstructorError(None, None, problem, node.start_mark) from None


def safe_load(text: str | bytes) -> Any:
    """Parse one YAML document with the limits of :class:`BoundedLoader`.

    Parameters
    ----------
    text : str or bytes
        The document; bytes must be UTF-8.

    Returns
    -------
    data : Any
        What :func:`yaml.safe_load` returns for it.

    Raises
    ------
    yaml.YAMLError
        Not valid YAML, or beyond a limit (:class:`YAMLLimitError`), or bytes that are not UTF-8
        (:class:`YAMLEncodingError`).
    """
    if isinstance(text, bytes):
        text = decode_utf8(text)
    loader = BoundedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def decode_utf8(data: bytes) -> str:
    """``data`` as UTF-8 text (a leading byte-order mark dropped), or :class:`YAMLEncodingError`
    naming the offset of the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        offset = exc.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
        raise YAMLEncodingError(f"not UTF-8 text: byte 0x{data[offset]:02x} at offset {offset} "
                                "is not valid UTF-8 (save the file as UTF-8)") from None


def read_file(path: str | os.PathLike, max_bytes: int = MAX_FILE_BYTES) -> str:
    """A YAML file's text: at most ``max_bytes`` bytes (:class:`YAMLFileTooLarge` beyond), UTF-8
    (:class:`YAMLEncodingError` otherwise). ``OSError`` (a missing file) propagates."""
    with open(path, "rb") as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        size = os.stat(path).st_size
        raise YAMLFileTooLarge(f"the file has {size} bytes, more than the {_mib(max_bytes)} "
                               f"({max_bytes} bytes) accepted for a YAML file")
    return decode_utf8(data)


def load_file(path: str | os.PathLike, max_bytes: int = MAX_FILE_BYTES) -> Any:
    """Read and parse a YAML file with every limit of this module (:func:`read_file`,
    :func:`safe_load`)."""
    return safe_load(read_file(Path(path), max_bytes))


def problem(exc: yaml.YAMLError) -> str:
    """A YAML error as one line: ``line L, column C: <problem> (<context>)`` where PyYAML gives a
    position, else its message on one line."""
    mark, what = getattr(exc, "problem_mark", None), getattr(exc, "problem", None)
    if what is None:
        return " ".join(str(exc).split())
    context = getattr(exc, "context", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return where + " ".join(what.split()) + (f" ({' '.join(context.split())})" if context else "")


def describe(exc: yaml.YAMLError) -> str:
    """The one-line report of a YAML error, as the config errors give it: ``not valid YAML: …``
    for a syntax error, ``YAML beyond the limits: …`` for a limit, and the encoding or size
    problem as it is."""
    if isinstance(exc, (YAMLEncodingError, YAMLFileTooLarge)):
        return " ".join(str(exc).split())
    if isinstance(exc, YAMLLimitError):
        return f"YAML beyond the limits: {problem(exc)}"
    return f"not valid YAML: {problem(exc)}"


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"
