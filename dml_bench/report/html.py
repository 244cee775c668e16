"""HTML pages of the Markdown reports (the reproduction report and the leaderboard's page)."""

from __future__ import annotations

import html
import re


def render_html(markdown: str, title: str) -> str:
    """A standalone HTML page of a Markdown report.

    Parameters
    ----------
    markdown : str
        The report: headings, ``|`` tables, ``- `` lists, images (``![alt](src)``) and paragraphs,
        with bold, code and links to relative ``.html`` pages inline.
    title : str
        The page's ``<title>``.

    Returns
    -------
    str
        The page, every text HTML-escaped.
    """
    out, in_table, in_list = [], False, False
    for line in markdown.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if set("".join(cells)) <= set("-:"):
                continue
            if not in_table:
                out.append("<table>")
                in_table, tag = True, "th"
            else:
                tag = "td"
            out.append("<tr>" + "".join(f"<{tag}>{_inline(c)}</{tag}>" for c in cells) + "</tr>")
            continue
        if in_table:
            out.append("</table>")
            in_table = False
        if line.startswith("- "):
            if not in_list:
                out.append("<ul>")
                in_list = True
            out.append(f"<li>{_inline(line[2:])}</li>")
            continue
        if in_list:
            out.append("</ul>")
            in_list = False
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(f"<h{level}>{_inline(line[level:].strip())}</h{level}>")
        elif line.startswith("![") and "](" in line:
            alt, src = line[2:].split("](", 1)
            out.append(f'<p><img src="{html.escape(src[:-1])}" alt="{html.escape(alt)}" '
                       'style="max-width:100%"></p>')
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
    if in_table:
        out.append("</table>")
    style = ("body{font-family:sans-serif;max-width:70em;margin:auto}table{border-collapse:"
             "collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:2px 6px;font-size:90%}")
    return (f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}"
            f"</title><style>{style}</style></head><body>\n" + "\n".join(out) + "\n</body></html>\n")


def _inline(text: str) -> str:
    """One line of Markdown as HTML: escaped, with bold, code and links to relative pages."""
    text = html.escape(text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    # links to the report's own pages: a relative path to an .html file, no scheme (javascript:)
    text = re.sub(r"\[([^\]]+)\]\(([^)\s:]+\.html)\)", r'<a href="\2">\1</a>', text)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", text)
