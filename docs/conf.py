"""Sphinx configuration of the dml-bench documentation (``make docs``).

The site is the Markdown user guide of this folder (MyST), an API reference generated from the
docstrings (autosummary + numpydoc, ``api/``), a gallery of examples executed at build time
(sphinx-gallery, ``../examples/gallery``), and two generated result pages read from ``results/``
at build time (:func:`insert_result_page`), so that no copy of them is ever kept under ``docs/``.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# document (and run the gallery against) the package of this working tree, installed or not
sys.path.insert(0, str(ROOT))

import dml_bench  # noqa: E402

# -- project -----------------------------------------------------------------------------------

project = "dml-bench"
author = "the dml-bench developers"
copyright = "the dml-bench developers"
version = release = dml_bench.__version__

# -- general -----------------------------------------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "_templates", "Thumbs.db", ".DS_Store"]
# Docstrings of the package write set sizes as |S|, |D|, |T| (Ying & Li's notation) and an
# absolute value as |Σ_τ ±w_τ|; reStructuredText reads |name| as a substitution. These
# definitions make exactly those references print as written (and nothing else).
rst_epilog = "\n".join(f".. |{name}| replace:: \\|{name}\\|"
                        for name in ("S", "D", "T", "Σ_τ ±w_τ"))

# -- MyST (the Markdown pages) -------------------------------------------------------------------

myst_enable_extensions = ["colon_fence", "deflist"]
# links such as [tuning](config.md#hyper-parameter-tuning) resolve to the headings of a page
myst_heading_anchors = 3

# -- autodoc / autosummary / numpydoc -----------------------------------------------------------

autosummary_generate = True
# the stubs are regenerated from the package on every build; starting from an empty folder keeps
# the page of a name that left a module's __all__ from lingering as an orphan (a -W failure)
shutil.rmtree(DOCS / "api" / "generated", ignore_errors=True)
# a module's __all__ decides what its page lists (dml_bench.solvers, dml_bench.datasets)
autosummary_ignore_module_all = False
autodoc_typehints = "none"  # the numpydoc "Parameters" sections give the types
autodoc_default_options = {"member-order": "bysource"}
numpydoc_show_class_members = False  # the class template lists the members through autodoc
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# -- sphinx-gallery ----------------------------------------------------------------------------

sphinx_gallery_conf = {
    "examples_dirs": [str(ROOT / "examples" / "gallery")],
    "gallery_dirs": ["auto_examples"],
    "filename_pattern": r"/plot_",  # every gallery script is executed at build time
    "abort_on_example_error": True,
    "remove_config_comments": True,
    "download_all_examples": False,
    "show_signature": False,
    "min_reported_time": 1,
    "within_subsection_order": "FileNameSortKey",
}

# -- HTML ----------------------------------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = f"dml-bench {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_show_sourcelink = False


# -- the generated result pages ------------------------------------------------------------------

#: page of the site → the generated Markdown file of results/ shown there
RESULT_PAGES = {
    "reproduction-report": ROOT / "results" / "REPRODUCTION.md",
    "leaderboard-results": ROOT / "results" / "leaderboard" / "LEADERBOARD.md",
}
#: links of the generated files to their HTML twins, pointed at the site's pages instead
SITE_LINKS = {"REPRODUCTION.html": "reproduction-report.md",
              "leaderboard.html": "leaderboard-results.md"}
_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
_CODE = re.compile(r"(`+)(?:.|\n)*?\1")
#: "<cache>", "<data set>": placeholders of the generated text, not HTML (real tags are kept)
_PLACEHOLDER = re.compile(r"<(?!/?(?:a|b|i|p|br|em|hr|img|sub|sup|div|span|code|strong|details|"
                          r"summary|table|tr|td|th)\b)(?=[A-Za-z][^>\n]*>)")


def _site_markdown(text: str, source: Path) -> str:
    """``source``'s Markdown as a page of this folder: relative images re-rooted at ``source``'s
    folder, links to the generated HTML twins sent to the site's pages, links to other Markdown
    files of the repository (not pages of the site) given as their paths, and placeholders such
    as ``<cache>`` outside code spans kept as text."""

    def link(match: re.Match) -> str:
        bang, label, target = match.groups()
        path, _, anchor = target.partition("#")
        if re.match(r"^[a-z][a-z0-9+.-]*:|^/", target) or not path:  # a URL, an anchor, a root
            return match.group(0)
        if not bang and Path(path).name in SITE_LINKS:
            return f"[{label}]({SITE_LINKS[Path(path).name]})"
        resolved = (source.parent / path).resolve()
        if not resolved.is_relative_to(ROOT):
            return match.group(0)
        relative = resolved.relative_to(ROOT).as_posix()
        if not bang and resolved.suffix == ".md":
            return f"{label} (`{relative}`)"
        return f"{bang}[{label}](../{relative}{'#' * bool(anchor)}{anchor})"

    def prose(part: str) -> str:
        return _PLACEHOLDER.sub(r"\\<", _LINK.sub(link, part))

    out, last = [], 0
    for code in _CODE.finditer(text):  # rewrite the prose between code spans only
        out += [prose(text[last:code.start()]), code.group(0)]
        last = code.end()
    return "".join(out + [prose(text[last:])])


def insert_result_page(app, docname: str, source: list[str]) -> None:
    """Give the pages of :data:`RESULT_PAGES` the current content of their generated file.

    The page under ``docs/`` is a stub that links to the file (what a reader of the repository
    sees); the build reads the file itself, so the site always shows the committed results, and
    the file is a dependency of the page (an incremental build rereads it when it changes).
    """
    if docname not in RESULT_PAGES:
        return
    path = RESULT_PAGES[docname]
    app.env.note_dependency(str(path))
    if not path.is_file():
        source[0] = (f"# {docname.replace('-', ' ').capitalize()}\n\n"
                     f"`{path.relative_to(ROOT)}` has not been generated in this working tree.\n")
        return
    source[0] = _site_markdown(path.read_text(encoding="utf-8"), path)


#: pages another part of the project writes; listed in the index only when present
OPTIONAL_PAGES = ("results-files",)


def drop_missing_pages(app, docname: str, source: list[str]) -> None:
    """Leave an optional page out of the index's tables of contents while it does not exist."""
    if docname != root_doc:
        return
    for page in OPTIONAL_PAGES:
        if not (DOCS / f"{page}.md").is_file():
            source[0] = re.sub(rf"(?m)^{re.escape(page)}\s*$\n?", "", source[0])


def skip_foreign_member(app, what, name, obj, skip, options):
    """Document dml-bench's own members only: the estimator API that scikit-learn defines
    (``get_params``, ``set_params``, ``fit_transform``, ``set_output``, the metadata-routing
    ``set_*_request`` methods) is scikit-learn's to document, and the methods of Python's own
    bases (exceptions, named tuples) are Python's."""
    owner = getattr(obj, "__objclass__", None)  # methods of built-in types (tuple.count)
    module = getattr(owner if owner is not None else obj, "__module__", None) or ""
    if module == "builtins" or module.split(".")[0] == "sklearn":
        return True
    if (getattr(obj, "__doc__", None) or "").startswith("Alias for field number"):
        return True  # a named tuple's fields: its docstring's Attributes section documents them
    return None


def setup(app):
    app.connect("autodoc-skip-member", skip_foreign_member)
    app.connect("source-read", insert_result_page)
    app.connect("source-read", drop_missing_pages)
