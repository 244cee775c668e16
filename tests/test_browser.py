"""The two generated pages in a real browser: the reproduction report and the leaderboard's page,
written from a copy of the committed results, served by a local HTTP server on 127.0.0.1 and
opened in headless Chromium (Debian's ``chromium``, driven by Playwright).

On each page: every internal link (a file of the output folder, an ``#anchor``) resolves and
every image loads; the console shows no error and the page asks for nothing it lacks (no 404);
its text shows no folder of the machine; rows stay short, long notes folded in ``<details>``
and readable when opened; every section (a paper, a target) has an anchor in the contents; and
its screenshot is a real picture, not a blank or uniform image. The browser must be installed:
without it the test fails, with the line that installs it (``.ci/run`` runs it).
"""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import numpy as np
import pytest

import dml_bench

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
#: headless, and nothing that reaches beyond the machine (updates, sync, QUIC)
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
PAGES = ["REPRODUCTION.html", "leaderboard/leaderboard.html"]
#: the machine's folders that no page may show
ABSOLUTE = ("/work/", "/root/", "/tmp/", "/home/")
#: the browser window (the committed board's ranks table is checked to fit 1400 px)
VIEWPORT = {"width": 1400, "height": 1000}


def _board_config() -> Path:
    """The full board's config (the committed ``results/leaderboard``'s)."""
    bundled = Path(dml_bench.__file__).parent / "configs" / "leaderboard.yaml"
    return bundled if bundled.is_file() else REPO / "configs" / "leaderboard.yaml"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A copy of the committed results (less what no page uses: PDF, LaTeX, the old report) with
    both pages written into it: the reproduction report (which links to the committed board's
    page, there in the copy), then the board's page from its runs (which links back)."""
    from dml_bench.leaderboard.board import load_board
    from dml_bench.leaderboard.page import write_board_report
    from dml_bench.reproduction.report import write_reproduction_report

    root = tmp_path_factory.mktemp("site") / "results"
    shutil.copytree(REPO / "results", root,
                    ignore=shutil.ignore_patterns("*.pdf", "*.tex", "REPRODUCTION.*"))
    write_reproduction_report(root, root=REPO)
    write_board_report(load_board(_board_config()), root / "leaderboard")
    return root


@pytest.fixture(scope="module")
def server(site):
    """The results folder served on 127.0.0.1 (an unused port): its base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium; the test fails (never skips) when it or Playwright is missing."""
    if not CHROMIUM.is_file():
        pytest.fail(f"{CHROMIUM} not found: install it with `apt-get install -y chromium`",
                    pytrace=False)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the browser test needs Playwright: `python3 -m pip install playwright` "
                    "(the `test` extra)", pytrace=False)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class Ids(HTMLParser):
    """The ids of a page's elements."""

    def __init__(self):
        super().__init__()
        self.ids = set()

    def handle_starttag(self, tag, attrs):
        self.ids |= {value for name, value in attrs if name == "id"}


def _ids(path: Path) -> set[str]:
    parser = Ids()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser.ids


#: what the test reads of a page, in the browser: links and images as written and as resolved,
#: ids, the contents' targets, headings, the text (folded notes included) and, per table body
#: cell, its text height and font size, folded or not
READ_PAGE = """() => {
  const height = td => {  // of the text: a folded note's summary, or all of an opened one
    const details = td.querySelector('details');
    if (details) return (details.open ? details : details.querySelector('summary'))
      .getBoundingClientRect().height;
    const r = document.createRange(); r.selectNodeContents(td);
    return r.getBoundingClientRect().height; };
  const cells = () => [...document.querySelectorAll('td')].map(td => ({
      height: height(td), font: parseFloat(getComputedStyle(td).fontSize),
      folded: td.querySelector('details') !== null, text: td.textContent.slice(0, 80)}));
  const page = {
    links: [...document.querySelectorAll('a[href]')].map(a => [a.getAttribute('href'), a.href]),
    images: [...document.images].map(i => [i.getAttribute('src'),
                                            i.complete && i.naturalWidth > 0]),
    ids: [...document.querySelectorAll('[id]')].map(e => e.id),
    contents: [...document.querySelectorAll('nav.toc a')].map(a => a.getAttribute('href')),
    headings: [...document.querySelectorAll('h2, h3')].map(h => [h.tagName, h.id, h.textContent]),
    text: document.body.textContent,
    details: document.querySelectorAll('details').length,
    closed: cells(),
  };
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  page.opened = cells().filter(c => c.folded);
  page.openText = document.body.innerText;
  document.querySelectorAll('details').forEach(d => { d.open = false; });
  return page;
}"""


@pytest.fixture(scope="module")
def visits(browser, server, site, tmp_path_factory):
    """Each page opened once: what :data:`READ_PAGE` reads, the console's errors, the responses
    with an error status, the requests that left the local server (refused) and a screenshot."""
    shots = tmp_path_factory.mktemp("screenshots")
    out = {}
    for name in PAGES:
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        seen = {"console": [], "bad": [], "outside": []}
        page.on("console", lambda m, s=seen: m.type == "error" and s["console"].append(m.text))
        page.on("pageerror", lambda e, s=seen: s["console"].append(str(e)))
        page.on("response", lambda r, s=seen: r.status >= 400 and s["bad"].append(
            f"{r.status} {r.url}"))

        def local_only(route, s=seen):
            if route.request.url.startswith(server) or route.request.url.startswith("data:"):
                route.continue_()
            else:
                s["outside"].append(route.request.url)
                route.abort()

        page.route("**/*", local_only)
        page.goto(server + name, wait_until="load")
        read = page.evaluate(READ_PAGE)
        shot = shots / (name.replace("/", "_") + ".png")
        page.screenshot(path=str(shot))
        context.close()
        out[name] = {**read, **seen, "url": server + name, "screenshot": shot}
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", PAGES)
def test_every_internal_link_and_image_of_the_page_resolves(name, visits, site, server):
    visit = visits[name]
    assert visit["links"] or visit["contents"], "a page without links"
    ids = set(visit["ids"])
    broken = []
    for written, resolved in visit["links"]:
        if written.startswith("#"):  # an anchor of the page
            if unquote(written[1:]) not in ids:
                broken.append(written)
            continue
        assert resolved.startswith(server), f"a link leaves the output folder: {written}"
        parts = urlsplit(resolved)
        target = site / unquote(parts.path.lstrip("/"))
        if not target.is_file():
            broken.append(written)
        elif parts.fragment and unquote(parts.fragment) not in _ids(target):
            broken.append(written)
    assert not broken, f"{name}: links to no file or anchor: {broken}"
    images = visit["images"]
    assert all(urljoin(visit["url"], src).startswith(server) for src, _ in images)
    assert [src for src, loaded in images if not loaded] == [], "images that did not load"
    for src, _ in images:
        assert (site / Path(name).parent / unquote(src)).is_file()


@pytest.mark.slow
@pytest.mark.parametrize("name", PAGES)
def test_the_console_shows_no_error_and_nothing_is_missing(name, visits):
    visit = visits[name]
    assert visit["console"] == [], f"{name}: console errors: {visit['console']}"
    assert visit["bad"] == [], f"{name}: responses with an error: {visit['bad']}"
    assert visit["outside"] == [], f"{name}: requests beyond the local server: {visit['outside']}"


@pytest.mark.slow
@pytest.mark.parametrize("name", PAGES)
def test_the_page_shows_no_folder_of_the_machine(name, visits):
    visit = visits[name]
    for text in (visit["text"], visit["openText"], " ".join(w for w, _ in visit["links"])):
        shown = [folder for folder in ABSOLUTE if folder in text]
        assert not shown, f"{name} shows {shown}: " + "; ".join(
            text[max(0, text.find(f) - 60):text.find(f) + 60] for f in shown)


@pytest.mark.slow
@pytest.mark.parametrize("name", PAGES)
def test_rows_stay_short_with_long_notes_folded(name, visits):
    """Folded, no body cell wraps over more than :data:`~dml_bench.report.html.ROW_LINES` lines;
    opened, a note wraps over about :data:`~dml_bench.report.html.MAX_NOTE_LINES`. A line is
    at most 1.3 times the font size (Chromium's ``normal`` line height is about 1.15)."""
    from dml_bench.report.html import MAX_NOTE_LINES, ROW_LINES

    visit = visits[name]
    tall = [c["text"] for c in visit["closed"] if c["height"] > ROW_LINES * 1.3 * c["font"]]
    assert not tall, f"{name}: cells taller than {ROW_LINES} lines: {tall[:5]}"
    long = [c["text"] for c in visit["opened"]
            if c["height"] > (MAX_NOTE_LINES + ROW_LINES) * 1.3 * c["font"]]
    assert not long, f"{name}: opened notes taller than {MAX_NOTE_LINES} lines: {long[:5]}"
    assert visit["details"] > 0, "no note folded"  # both pages hold long notes


@pytest.mark.slow
def test_every_paper_and_target_has_an_anchor_in_the_contents(visits):
    from dml_bench.reproduction.targets import load_targets

    for name in PAGES:
        visit = visits[name]
        contents = set(visit["contents"])
        for tag, anchor, text in visit["headings"]:
            assert anchor and f"#{anchor}" in contents, f"{name}: {tag} {text!r} not in contents"
        assert all(href[1:] in set(visit["ids"]) for href in contents)
    headings = {text for _, _, text in visits["REPRODUCTION.html"]["headings"]}
    papers = {target.paper for target in load_targets().values()}
    assert papers <= headings, f"papers without a section: {sorted(papers - headings)}"
    items = [f"{t.item} — {t.what}" for t in load_targets().values()]
    assert [item for item in items if item not in headings] == []


@pytest.mark.slow
@pytest.mark.parametrize("name", PAGES)
def test_the_screenshot_is_a_picture(name, visits):
    """Saved, of the window's size, and not blank: many colours and a spread of grey levels."""
    from matplotlib import image

    shot = visits[name]["screenshot"]
    assert shot.stat().st_size > 0
    pixels = image.imread(shot)[..., :3]
    assert pixels.shape[:2] == (VIEWPORT["height"], VIEWPORT["width"])
    grey = pixels.mean(axis=2)
    assert grey.std() > 0.02, f"{shot}: a uniform image (grey std {grey.std():.3f})"
    colours = np.unique((pixels.reshape(-1, 3) * 255).round().astype(np.uint8), axis=0)
    assert len(colours) > 16, f"{shot}: {len(colours)} colours"
