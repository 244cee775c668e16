"""HTML pages of the Markdown reports (the reproduction report and the leaderboard's page).

A page opens with a table of contents: a link to every section (``##``, ``###``) and every
table, each of which has an anchor. Every table sits in a container that scrolls sideways, so
that a wide table never widens the page, and a table of more than :data:`WIDE_TABLE` columns
(the leaderboard's ranks) gets a smaller font. Rows stay short: a cell of more than
:data:`FOLD_CELL` characters, and a list item of more than :data:`FOLD_ITEM` (a long note), is
folded (:func:`fold`): its first sentence (or first words) shows, the rest opens on a click; a
short cell is set on one line, and any other cell gets a minimum width (:func:`cell_width`) that
sets what it shows in at most :data:`ROW_LINES` lines (opened, a note takes about
:data:`MAX_NOTE_LINES`). :func:`relative_paths` writes the absolute paths of a text relative to
the working folder, the results folder or a data place, so that no page shows where it was made.
"""

from __future__ import annotations

import html
import math
import os
import re
from pathlib import Path

#: the most lines a table cell takes in its row (a folded note: its summary)
ROW_LINES = 2
#: cells of at most this many characters are set on one line (they never wrap)
SHORT_CELL = 24
#: about the most lines an opened note wraps over (its cell at least :func:`note_width` wide)
MAX_NOTE_LINES = 8
#: the width of an average character of the page's sans-serif text, in em (DejaVu Sans and
#: Helvetica/Arial set prose at 0.48–0.53 em a character)
CHAR_EM = 0.55
#: tables of more columns than this are set in a smaller font
WIDE_TABLE = 12
#: table cells longer than this many characters are folded: a summary, the rest on a click
FOLD_CELL = 100
#: the most characters of a folded cell's summary (its first sentence, else its first words)
CELL_SUMMARY = 80
#: list items longer than this many characters are folded (the leaderboard's notes)
FOLD_ITEM = 250
#: the most characters of a folded list item's summary (about a line of the page)
ITEM_SUMMARY = 160
#: words whose full stop ends no sentence (``Eq. (3)``, ``Fig. 2``, ``et al.``)
ABBREVIATIONS = frozenset({"eq", "eqs", "fig", "figs", "sec", "tab", "al", "vs", "cf", "e.g",
                           "i.e", "approx", "resp", "alg", "no", "p", "pp", "ref", "ch"})

_STYLE = ("body{font-family:sans-serif;max-width:70em;margin:auto;padding:0 1em}"
          "details>summary{cursor:pointer}"
          ".table-wrap{max-width:100%;overflow-x:auto;margin:1em 0}"
          "table{border-collapse:collapse}"
          "td,th{border:1px solid #ccc;padding:2px 6px;font-size:90%;vertical-align:top}"
          "td:not([style]){white-space:nowrap}"
          "table.wide td,table.wide th{font-size:70%;padding:1px 4px}"
          "nav.toc{font-size:90%}nav.toc ul{margin:0.2em 0}")


def render_html(markdown: str, title: str, root: Path | str | None = None) -> str:
    """A standalone HTML page of a Markdown report.

    Parameters
    ----------
    markdown : str
        The report: headings, ``|`` tables, ``- `` lists, images (``![alt](src)``) and paragraphs,
        with bold, code and links to relative ``.html`` pages inline.
    title : str
        The page's ``<title>``.
    root : path-like, optional
        The folder the page is written to: a link or an image whose file is not there (relative
        to it) is shown as plain text, so the page never links to a file it does not have.

    Returns
    -------
    str
        The page, every text HTML-escaped, with a table of contents after its first heading.
    """
    blocks = _anchored(_blocks(markdown))
    root = Path(root) if root is not None else None
    out = [_render(block, root) for block in blocks]
    at = next((i + 1 for i, b in enumerate(blocks) if b[0] == "h" and b[1] == 1), 0)
    out.insert(at, _contents(blocks))  # after the page's title
    body = "\n".join(line for part in out for line in part)
    # an empty icon of its own: the browser asks the server for no /favicon.ico
    return (f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}"
            f"</title><link rel='icon' href='data:,'><style>{_STYLE}</style></head><body>\n"
            f"{body}\n</body></html>\n")


def _blocks(markdown: str) -> list[list]:
    """The Markdown's blocks in order: ``["h", level, text]``, ``["table", rows]``,
    ``["ul", items]``, ``["img", alt, src]`` and ``["p", text]``; a table or a list runs over
    its consecutive lines."""
    blocks: list[list] = []
    open_kind = None  # the table or list that the next line of its kind continues
    for line in markdown.splitlines():
        kind = "table" if line.startswith("|") else "ul" if line.startswith("- ") else None
        if kind == "table":
            cells = [c.strip() for c in line.strip("|").split("|")]
            if set("".join(cells)) <= set("-:"):  # the header's rule
                continue
            item = cells
        elif kind == "ul":
            item = line[2:]
        if kind:
            if open_kind != kind:
                blocks.append([kind, []])
            blocks[-1][1].append(item)
            open_kind = kind
            continue
        open_kind = None
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            blocks.append(["h", level, line[level:].strip()])
        elif line.startswith("![") and "](" in line:
            alt, src = line[2:].split("](", 1)
            blocks.append(["img", alt, src[:-1]])
        elif line.strip():
            blocks.append(["p", line])
    return blocks


def _plain(text: str) -> str:
    """Markdown inline text without its marks (bold, code, link targets)."""
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)
    return text.replace("**", "").replace("`", "")


def _anchored(blocks: list[list]) -> list[list]:
    """The blocks with an anchor (a unique id) and a contents entry added to every heading and
    table: a table is named by the bold lead of the paragraph just before it, else by its
    section's heading."""
    used = {"contents"}  # the contents' own anchor
    section, out = "", []
    for i, block in enumerate(blocks):
        if block[0] == "h":
            section = _plain(block[2])
            name = section
        elif block[0] == "table":
            before = blocks[i - 1] if i else None
            lead = re.match(r"\*\*(.+?)\*\*", before[1]) if before and before[0] == "p" else None
            name = _plain(lead.group(1)) if lead else f"{section} table".strip()
        else:
            out.append(block)
            continue
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower())[:60].strip("-") or "section"
        slug = f"table-{slug}" if block[0] == "table" else slug
        anchor, n = slug, 2
        while anchor in used:
            anchor, n = f"{slug}-{n}", n + 1
        used.add(anchor)
        out.append([*block, anchor, name])
    return out


def _contents(blocks: list[list]) -> list[str]:
    """The table of contents: a nested list of links to the sections (``##`` and below) and
    to the tables, each table under its section."""
    entries, level = [], 1
    for block in blocks:
        if block[0] == "h" and block[1] >= 2:
            level = block[1]
            entries.append((level - 1, block[-2], block[-1]))
        elif block[0] == "table":
            entries.append((level, block[-2], block[-1]))
    if not entries:
        return []
    out, depth = ['<nav class="toc" id="contents"><b>Contents</b>'], 0
    for entry_depth, anchor, name in entries:
        if entry_depth > depth:  # a sublist inside the open item
            out += ["<ul>"] * (entry_depth - depth)
        else:
            out += ["</li>"] + ["</ul></li>"] * (depth - entry_depth)
        depth = entry_depth
        out.append(f'<li><a href="#{anchor}">{html.escape(name)}</a>')
    return out + ["</li>"] + ["</ul></li>"] * (depth - 1) + ["</ul>", "</nav>"]


def _render(block: list, root: Path | None) -> list[str]:
    kind = block[0]
    if kind == "h":
        level, text, anchor = block[1], block[2], block[3]
        return [f'<h{level} id="{anchor}">{_inline(text, root)}</h{level}>']
    if kind == "table":
        return _table(block[1], block[2], root)
    if kind == "ul":
        return ["<ul>", *(f"<li>{_folded(item, root, FOLD_ITEM, ITEM_SUMMARY)}</li>"
                          for item in block[1]), "</ul>"]
    if kind == "img":
        alt, src = block[1], block[2]
        if root is not None and not _exists(root, src):
            return [f"<p>{html.escape(alt)} (figure not written)</p>"]
        return [f'<p><img src="{html.escape(src)}" alt="{html.escape(alt)}" '
                'style="max-width:100%"></p>']
    return [f"<p>{_inline(block[1], root)}</p>"]


def _table(rows: list[list[str]], anchor: str, root: Path | None) -> list[str]:
    """A table in its sideways-scrolling container (the anchor): header cells may break after an
    underscore, body cells get :func:`cell_width` (a short cell none: it does not wrap) and
    long ones fold (:func:`fold`), wide tables the class ``wide``."""
    wide = ' class="wide"' if max(len(r) for r in rows) > WIDE_TABLE else ""
    out = [f'<div class="table-wrap" id="{anchor}"><table{wide}>']
    for i, cells in enumerate(rows):
        if i == 0:
            out.append("<tr>" + "".join(
                f"<th>{re.sub(r'_(?![^<>]*>)', '_<wbr>', _inline(c, root))}</th>" for c in cells)
                       + "</tr>")
            continue
        tds = []
        for c in cells:
            width = cell_width(c)
            style = f' style="min-width:{width}em"' if width else ""
            tds.append(f"<td{style}>{_folded(c, root, FOLD_CELL, CELL_SUMMARY)}</td>")
        out.append("<tr>" + "".join(tds) + "</tr>")
    return out + ["</table></div>"]


def note_width(text: str) -> int:
    """The width (em) that sets the plain ``text`` of a note in at most :data:`MAX_NOTE_LINES`
    − 1 lines at :data:`CHAR_EM` a character (a line spare for the ragged ends of word
    wrapping)."""
    return math.ceil(len(text) * CHAR_EM / (MAX_NOTE_LINES - 1))


def row_width(text: str, extra: int = 0) -> int:
    """The width (em) that sets the plain ``text`` in at most :data:`ROW_LINES` lines at
    :data:`CHAR_EM` a character, wrapped at spaces (a line can end short by its next word),
    with ``extra`` characters' room on the first line."""
    longest = max(map(len, text.split()), default=0)
    return math.ceil((len(text) + extra + (ROW_LINES - 1) * (longest + 1)) * CHAR_EM / ROW_LINES)


def cell_width(text: str) -> int:
    """The minimum width (em) of a table cell holding the Markdown ``text``: 0 (none: it is set
    on one line) for at most :data:`SHORT_CELL` characters; else :func:`row_width` of what it
    shows (its summary when :func:`fold` folds it, with room for the fold's marker), and, for
    a folded note, at least :func:`note_width` of the whole, for when it is opened."""
    plain = _plain(text)
    if len(plain) <= SHORT_CELL:
        return 0
    parts = fold(text, FOLD_CELL, CELL_SUMMARY)
    if parts is None:
        return row_width(plain)
    return max(row_width(_plain(parts[0]), extra=3), note_width(plain))


def fold(text: str, longest: int, summary: int) -> tuple[str, str] | None:
    """The Markdown ``text`` split into what a folded note shows and what opens on a click, or
    None when it is not folded (at most ``longest`` characters as text, or nowhere to split).

    The summary is the first sentence when it has at most ``summary`` characters, else the
    words that fit in ``summary`` characters followed by " …"; the rest is what follows it. Both
    parts are split between words outside code, bold and links, so each renders on its own.
    """
    if len(_plain(text)) <= longest:
        return None
    kept = [m.span() for m in re.finditer(r"`[^`]*`|\*\*.+?\*\*|\[[^\]]+\]\([^)]*\)", text)]
    cuts = [m.start() for m in re.finditer(r"\s+", text)
            if not any(a < m.start() < b for a, b in kept)]
    fits = [i for i in cuts if len(_plain(text[:i])) <= summary - 2 and text[i:].strip()]
    ends = [i for i in cuts if _ends_sentence(text[:i], text[i:])
            and len(_plain(text[:i])) <= summary and text[i:].strip()]
    if ends:
        return text[:ends[0]], text[ends[0]:].strip()
    if fits:
        return text[:fits[-1]] + " …", text[fits[-1]:].strip()
    return None


def _ends_sentence(before: str, after: str) -> bool:
    """Whether a sentence ends at the space between ``before`` and ``after``: a full stop (or
    ! or ?, a closing bracket or quote after it) after a word that is no abbreviation or
    initial, and no lower-case letter next."""
    found = re.search(r"(\S*?)[.!?][)\]\"'”’]*$", before)
    if not found or re.match(r"\s*[a-z]", after):
        return False
    word = found.group(1).lstrip("(\"'“‘*`").lower()
    return word not in ABBREVIATIONS and not re.fullmatch(r"[a-z]", word)


def _folded(text: str, root: Path | None, longest: int, summary: int) -> str:
    """The Markdown ``text`` as HTML, in ``<details>`` when :func:`fold` folds it."""
    parts = fold(text, longest, summary)
    if parts is None:
        return _inline(text, root)
    return (f"<details><summary>{_inline(parts[0], root)}</summary>{_inline(parts[1], root)}"
            "</details>")


def _exists(root: Path, target: str) -> bool:
    """Whether the relative link ``target`` (no anchor) names a file under ``root``."""
    return (root / target.split("#", 1)[0]).is_file()


def _inline(text: str, root: Path | None = None) -> str:
    """One line of Markdown as HTML: escaped, with bold, code and links to relative pages (only
    to pages that exist under ``root`` when it is given)."""
    text = html.escape(text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)

    def link(match):
        label, target = match.group(1), match.group(2)
        if root is not None and not _exists(root, html.unescape(target)):
            return label
        return f'<a href="{target}">{label}</a>'

    # links to the report's own pages: a relative path to an .html file, no scheme (javascript:)
    text = re.sub(r"\[([^\]]+)\]\(([^)\s:]+\.html)\)", link, text)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", text)


def relative_paths(text: str, *folders: Path | str) -> str:
    """``text`` with the absolute paths in it written relative: a path under the working folder
    relative to it, else one under the parent of one of ``folders`` (a results folder, e.g.
    ``/elsewhere/results/x`` as ``results/x``) relative to that, else one under a data place
    of the environment (the datasets' cache or mirror, e.g. a temporary folder) as
    ``$DMLBENCH_CACHE/...`` or ``$DMLBENCH_DATA_MIRROR/...``, else one under the home folder as
    ``~/...``. A page made from the text then shows no path of the machine that made it."""
    from ..datasets.files import ENV_CACHE, ENV_MIRROR

    bases = {str(Path.cwd().resolve())}
    for folder in folders:
        bases |= {str(Path(folder).resolve().parent), str(Path(folder).absolute().parent)}
    bases = sorted((b for b in bases if b not in (os.sep, "")), key=len, reverse=True)
    for base in bases:
        text = re.sub(rf"(?<![\w./-]){re.escape(base)}(?:{re.escape(os.sep)}|(?![\w.-]))",
                      lambda m: "" if m.group(0).endswith(os.sep) else ".", text)
    for name in (ENV_CACHE, ENV_MIRROR):
        place = os.environ.get(name, "").rstrip(os.sep)
        for path in {place, str(Path(place).resolve())} if os.path.isabs(place) else ():
            text = re.sub(rf"(?<![\w./-]){re.escape(path)}(?=/|(?![\w.-]))",
                          lambda m, name=name: f"${name}", text)
    home = str(Path.home())
    if home not in (os.sep, ""):
        text = re.sub(rf"(?<![\w./-]){re.escape(home)}(?=/|(?![\w.-]))", "~", text)
    return text
