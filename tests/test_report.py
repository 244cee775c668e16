"""Tests of the reporting stage on a tiny hand-written results directory."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
import yaml

from dml_bench.papers import PaperTable, load_paper_table
from dml_bench.report.kind import write_report
from dml_bench.report.knn import (read_runs, status_markdown, summarize, summary_to_latex,
                                  update_readme_status)
from dml_bench.report.tables import (ReportError, compare_with_paper, comparison_to_latex, is_match,
                                     welch_verdict)

GOLDEN = Path(__file__).parent / "golden"

RUNS_HEADER = (
    "task_id,experiment,dataset,split,seed,solver,label,solver_params,preprocessing,constraints,"
    "n_train,n_test,n_features,n_classes,n_similar,n_dissimilar,n_triplets,knn_k,tie_break,error,"
    "fit_time,fit_cpu_time,constraint_time,n_iter,objective,converged,blas_threads,n_jobs,"
    "timing_mode,dmlbench_version,finished_at"
)

# (dataset row label, solver label, solver, split, error fraction, fit time s); 50 test points each
RUNS = [
    ("wine", "euclidean", "euclidean", 0, 0.02, 0.1),
    ("wine", "euclidean", "euclidean", 1, 0.04, 0.2),
    ("wine", "euclidean", "euclidean", 2, 0.06, 0.3),
    ("wine", "dml_eig", "dml_eig", 0, 0.01, 1.0),
    ("wine", "dml_eig", "dml_eig", 1, 0.02, 2.0),
    ("wine", "dml_eig", "dml_eig", 2, 0.03, 3.0),
    ("Iris", "euclidean", "euclidean", 0, 0.10, 0.1),
    ("Iris", "euclidean", "euclidean", 1, 0.12, 0.1),
    ("Iris", "euclidean", "euclidean", 2, 0.14, 0.1),
    ("Iris", "dml_eig", "dml_eig", 0, 0.03, 0.5),
]

CONFIG = {
    "name": "tiny",
    "paper_table": ["ying2012/table4", "ying2012/table5"],
    "datasets": [{"name": "wine"}, {"name": "iris", "label": "Iris"}],
    "solvers": [{"name": "euclidean", "params": {}}, {"name": "dml_eig", "params": {"mu": 1e-4}}],
}


def task_id(dataset: str, label: str, split: int) -> str:
    """A row's task id: 16 hexadecimal digits, like the runner's."""
    return hashlib.sha1(f"{dataset}-{label}-{split}".encode()).hexdigest()[:16]


def write_results(results_dir: Path, runs=RUNS, config=CONFIG) -> Path:
    """Write ``runs.csv`` (one line per ``runs`` tuple) and ``config.yaml`` into ``results_dir``."""
    results_dir.mkdir(parents=True, exist_ok=True)
    lines = [RUNS_HEADER] + [
        f"{task_id(d, lab, split)},{config['name']},{d},{split},{split},{solver},{lab},{{}},{{}},{{}},"
        f"100,50,4,3,300,300,900,3,lowest,{err},{t},{t},0.01,,,,1,1,True,0.1.0,"
        "2024-01-01T00:00:00"
        for d, lab, solver, split, err, t in runs
    ]
    (results_dir / "runs.csv").write_text("\n".join(lines) + "\n")
    (results_dir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return results_dir


def tiny_table(quantity: str = "error") -> PaperTable:
    """A 2 × 3 reported table over the tiny runs, one cell missing ("-") and one not run."""
    return PaperTable(
        key="demo/table1",
        paper="A. Author. Demo. 2024.",
        number=1,
        caption="Demo.",
        quantity=quantity,
        unit="percent" if quantity == "error" else "seconds",
        row_names={"wine": "Wine", "iris": "Iris"},
        column_names={"euclidean": "Euc.", "dml_eig": "DML-eig", "lmnn": "LMNN"},
        values={
            "wine": {"euclidean": (3.46, 3.60), "dml_eig": (2.80, 0.50), "lmnn": (3.08, 2.07)},
            "iris": {"euclidean": (5.11, 2.58), "dml_eig": (3.40, None), "lmnn": None},
        },
        notes={"iris/dml_eig": "one split only"},
    )


@pytest.fixture
def results(tmp_path) -> Path:
    return write_results(tmp_path / "results" / "tiny")


@pytest.fixture
def summary(results) -> pd.DataFrame:
    return summarize(read_runs(results), CONFIG)


def test_summary_matches_hand_computation(summary):
    cells = summary.set_index(["dataset", "label"])
    # errors 2, 4, 6 % → mean 4, sample std sqrt((4 + 0 + 4) / 2) = 2
    assert cells.loc[("wine", "euclidean"), "error_mean"] == pytest.approx(4.0)
    assert cells.loc[("wine", "euclidean"), "error_std"] == pytest.approx(2.0)
    assert cells.loc[("wine", "euclidean"), "error_n"] == 3
    # fit times 1, 2, 3 s → mean 2, std 1
    assert cells.loc[("wine", "dml_eig"), "fit_time_mean"] == pytest.approx(2.0)
    assert cells.loc[("wine", "dml_eig"), "fit_time_std"] == pytest.approx(1.0)
    assert cells.loc[("wine", "dml_eig"), "fit_cpu_time_mean"] == pytest.approx(2.0)
    assert cells.loc[("Iris", "euclidean"), "error_mean"] == pytest.approx(12.0)
    # a single split: std undefined
    assert cells.loc[("Iris", "dml_eig"), "error_n"] == 1
    assert math.isnan(cells.loc[("Iris", "dml_eig"), "error_std"])
    assert math.isnan(cells.loc[("Iris", "dml_eig"), "n_iter_mean"])
    assert (summary["n_test_mean"] == 50).all()


def test_summary_order_first_appearance_or_config(results):
    runs = read_runs(results).iloc[::-1]
    assert list(summarize(runs)["dataset"]) == ["Iris", "Iris", "wine", "wine"]
    ordered = summarize(runs, CONFIG)
    assert list(zip(ordered["dataset"], ordered["label"])) == [
        ("wine", "euclidean"), ("wine", "dml_eig"), ("Iris", "euclidean"), ("Iris", "dml_eig")]


@pytest.mark.parametrize(
    ("ours", "paper", "std", "expected"),
    [
        (4.00, 3.46, 3.60, True),   # inside the std
        (12.00, 5.11, 2.58, False),  # outside the std
        (3.40, 3.05, None, True),   # no std: within 0.5 points
        (3.60, 3.05, None, False),  # no std: beyond 0.5 points
        (3.55, 3.05, None, True),   # no std: exactly 0.5 points
        (2.55, 3.05, None, True),
        (2.90, 2.20, 0.70, True),   # exactly one std above
        (1.50, 2.20, 0.70, True),   # exactly one std below
        (2.91, 2.20, 0.70, False),
    ],
)
def test_match_rule(ours, paper, std, expected):
    assert is_match(ours, paper, std) is expected


def test_compare_with_paper(summary):
    comparison = compare_with_paper(summary, tiny_table(), CONFIG)
    cells = comparison.set_index(["dataset", "solver"])
    # paper order, "-" cell left out, "Iris" mapped back to the registry name iris
    assert list(comparison["dataset"] + "/" + comparison["solver"]) == [
        "wine/euclidean", "wine/dml_eig", "wine/lmnn", "iris/euclidean", "iris/dml_eig"]
    wine = cells.loc[("wine", "euclidean")]
    assert (wine["paper_mean"], wine["paper_std"], wine["n"]) == (3.46, 3.60, 3)
    assert wine["ours_mean"] == pytest.approx(4.0) and wine["diff"] == pytest.approx(0.54)
    assert wine["match"] is True and wine["status"] == "match"
    assert cells.loc[("wine", "dml_eig"), "match"] is False  # 2.00 vs 2.80 (0.50)
    assert cells.loc[("iris", "euclidean"), "status"] == "mismatch"
    iris_dml = cells.loc[("iris", "dml_eig")]
    # 3.00 vs 3.40 without a std: within 0.5 points
    assert iris_dml["match"] is True and iris_dml["note"] == "one split only"
    lmnn = cells.loc[("wine", "lmnn")]
    assert lmnn["status"] == "not run" and pd.isna(lmnn["ours_mean"]) and pd.isna(lmnn["match"])
    # the Welch view needs the paper's split count: none here, 10 below
    assert wine["significance"].startswith("not testable") and pd.isna(wine["welch_p"])
    tested = compare_with_paper(summary, dataclasses.replace(tiny_table(), n_splits=10), CONFIG)
    wine = tested.set_index(["dataset", "solver"]).loc[("wine", "euclidean")]
    p = welch_by_hand(wine["ours_mean"], wine["ours_std"], 3, 3.46, 3.60, 10)
    assert wine["welch_p"] == pytest.approx(p, rel=1e-9) and p >= 0.05
    assert wine["significance"] == f"no significant difference (p = {p:.2g})"
    assert cells.loc[("iris", "dml_eig"), "significance"].startswith("not testable")  # no std


def welch_by_hand(m1, s1, n1, m2, s2, n2):
    """Welch (1947): t on the unpooled standard error, Welch–Satterthwaite degrees of freedom."""
    from scipy.stats import t as student_t

    v1, v2 = s1 ** 2 / n1, s2 ** 2 / n2
    t = (m1 - m2) / math.sqrt(v1 + v2)
    df = (v1 + v2) ** 2 / (v1 ** 2 / (n1 - 1) + v2 ** 2 / (n2 - 1))
    return 2 * student_t.sf(abs(t), df)


@pytest.mark.parametrize("ours, paper, side", [
    ((3.27, 1.82, 10), (1.35, 1.30, 10), "higher"),  # Ying T4 wine DML-eig: ours worse
    ((7.08, 2.0, 10), (28.46, 8.35, 10), "lower"),  # Shen 2014 T1 wine ITML: ours better
    ((4.22, 1.95, 10), (5.11, 2.58, 10), None),  # within the spreads
    ((2.0, 1.0, 100), (2.5, 1.0, 10), None),  # many splits of ours, the paper's 10
])
def test_welch_verdict_matches_the_formula(ours, paper, side):
    p, verdict = welch_verdict(*ours, *paper)
    assert p == pytest.approx(welch_by_hand(*ours, *paper), rel=1e-9)
    if side:
        assert p < 0.05 and verdict == f"ours {side}, p = {p:.2g}"
    else:
        assert p >= 0.05 and verdict.startswith("no significant difference")


@pytest.mark.parametrize("ours, paper, reason", [
    ((3.0, 1.0, 10), (3.4, None, 10), "the paper gives no std"),
    ((3.0, 1.0, 10), (3.4, 1.0, None), "the paper gives no std or split count"),
    ((3.0, float("nan"), 1), (3.4, 1.0, 10), "one split of ours"),
    ((3.0, 0.0, 10), (3.0, 0.0, 10), "no spread"),
])
def test_welch_verdict_says_when_it_cannot_test(ours, paper, reason):
    p, verdict = welch_verdict(*ours, *paper)
    assert p is None and verdict.startswith("not testable") and reason in verdict


def test_compare_time_table_gives_ratio_not_match(summary):
    comparison = compare_with_paper(summary, tiny_table("fit_time"), CONFIG)
    wine = comparison.set_index(["dataset", "solver"]).loc[("wine", "dml_eig")]
    assert wine["ratio"] == pytest.approx(2.0 / 2.80)
    assert pd.isna(wine["match"]) and wine["status"] == "compared"


def test_label_that_is_a_paper_key_wins(results):
    runs = read_runs(results).assign(label=lambda r: r["label"].replace("dml_eig", "lmnn"))
    comparison = compare_with_paper(summarize(runs), tiny_table())
    lmnn = comparison.set_index(["dataset", "solver"]).loc[("wine", "lmnn")]
    assert lmnn["status"] != "not run" and lmnn["label"] == "lmnn"


def test_best_per_row_is_bold_including_ties():
    summary = pd.DataFrame({
        "dataset": ["a", "a", "a", "b", "b"],
        "label": ["x", "y", "z", "x", "y"],
        "error_mean": [2.004, 1.996, 3.0, 5.0, 4.0],
        "error_std": [0.1, 0.2, float("nan"), 1.0, 1.0],
    })
    rows = summary_to_latex(summary).splitlines()
    assert rows[4] == r"a & \textbf{2.00 (0.10)} & \textbf{2.00 (0.20)} & 3.00 \\"
    assert rows[5] == r"b & 5.00 (1.00) & \textbf{4.00 (1.00)} & -- \\"


def tex_parts(text: str) -> tuple[str, str]:
    """A written table's caption and its ``tabular`` (from ``\\begin{tabular}`` to its end),
    checking the ``table`` float around them."""
    lines = text.splitlines()
    assert lines[:2] == [r"\begin{table}[htbp]", r"\centering"] and lines[-1] == r"\end{table}"
    caption = re.fullmatch(r"\\caption\{(.+)\}", lines[2])
    assert caption, lines[2]
    return caption.group(1), "\n".join(lines[3:-1]) + "\n"


def test_table_tex_golden(results):
    written = write_report(results)
    caption, tabular = tex_parts(written["table.tex"].read_text())
    assert tabular == (GOLDEN / "table.tex").read_text()
    # what it shows, its unit, the split count (wine 3 splits, Iris's dml_eig 1) and the protocol
    assert caption == (r"3-NN test error (\%), mean (std) over 1--3 random 70/30 training/test "
                       "splits; the lowest of each row in bold (ties included); -- not run.")


def test_every_tex_file_has_a_caption_with_its_unit(results):
    captions = {name: tex_parts(path.read_text())[0] for name, path in write_report(results).items()
                if name.endswith(".tex")}
    assert sorted(captions) == ["comparison_ying2012_table4.tex", "comparison_ying2012_table5.tex",
                                "table.tex", "table_time.tex"]
    assert captions["table_time.tex"].startswith("Fit time (s, wall clock), mean (std) over 1--3 "
                                                 "random 70/30 training/test splits;")
    assert "ying2012, Table 4: test error (\\%), mean (std) (ours over 1--3 random 70/30" in \
        captions["comparison_ying2012_table4.tex"]
    assert "ying2012, Table 5: fit time (s)" in captions["comparison_ying2012_table5.tex"]


def test_time_table_never_marks_a_zero_time_or_a_method_without_a_fit():
    """Euclidean's "fit" (an identity) is the fastest cell of a time table, and a time that shows
    as 0.00 is no time at all: the mark goes to the fastest method that learns something; the
    error table marks its lowest error as ever."""
    summary = pd.DataFrame({
        "dataset": ["a", "a", "a", "b", "b", "b"], "label": ["euc", "x", "y"] * 2,
        "solver": ["euclidean", "dml_eig", "lmnn"] * 2,
        "fit_time_mean": [0.0003, 1.5, 0.7, 0.2, 0.004, 0.9],
        "fit_time_std": [0.0, 0.1, 0.1, 0.0, 0.001, 0.1],
        "error_mean": [5.0, 2.0, 3.0, 1.0, 4.0, 6.0], "error_std": [1.0] * 6})
    rows = summary_to_latex(summary, "fit_time").splitlines()
    assert rows[4] == r"a & 0.00 (0.00) & 1.50 (0.10) & \textbf{0.70 (0.10)} \\"
    # b: Euclidean took 0.20 s here, still no fit; x shows 0.00; y is the fastest that fits
    assert rows[5] == r"b & 0.20 (0.00) & 0.00 (0.00) & \textbf{0.90 (0.10)} \\"
    rows = summary_to_latex(summary, "error").splitlines()
    assert rows[4] == r"a & 5.00 (1.00) & \textbf{2.00 (1.00)} & 3.00 (1.00) \\"
    assert rows[5] == r"b & \textbf{1.00 (1.00)} & 4.00 (1.00) & 6.00 (1.00) \\"


def test_comparison_tex_golden(summary):
    tex = comparison_to_latex(compare_with_paper(summary, tiny_table(), CONFIG))
    assert tex == (GOLDEN / "comparison_demo_table1.tex").read_text()


def test_write_report_files(results):
    written = write_report(results)
    assert sorted(written) == sorted([
        "summary.csv", "table.tex", "table_time.tex",
        "comparison_ying2012_table4.csv", "comparison_ying2012_table4.tex",
        "comparison_ying2012_table5.csv", "comparison_ying2012_table5.tex",
    ])
    assert all(path.parent == results and path.is_file() for path in written.values())
    table4 = pd.read_csv(written["comparison_ying2012_table4.csv"])
    # only the rows of datasets in the experiment (wine, iris), every reported column
    n_reported = sum(row in ("wine", "iris") for row, *_ in load_paper_table("ying2012/table4").cells())
    assert n_reported == 14 and len(table4) == n_reported
    assert (table4["status"] != "not run").sum() == 4
    assert "0.50" in written["table_time.tex"].read_text()


def test_write_report_without_paper_table(tmp_path):
    results = write_results(tmp_path / "r", config={**CONFIG, "paper_table": None})
    assert sorted(write_report(results)) == ["summary.csv", "table.tex", "table_time.tex"]


def test_read_runs_skips_torn_line_and_keeps_last_rerun(results):
    path = results / "runs.csv"
    lines = path.read_text().splitlines()
    rerun = lines[1].replace(",0.02,0.1,0.1,", ",0.2,0.1,0.1,")
    path.write_text("\n".join([*lines, rerun, lines[2][:30]]))  # killed mid-write
    runs = read_runs(results)
    assert len(runs) == len(RUNS)
    assert runs.set_index("task_id").loc[task_id("wine", "euclidean", 0), "error"] == 0.2


def test_error_must_be_a_fraction(results):
    path = results / "runs.csv"
    path.write_text(path.read_text().replace(",0.14,", ",14,"))
    with pytest.raises(ReportError, match="fraction"):
        read_runs(results)


def test_missing_or_empty_runs_is_a_clear_error(tmp_path):
    with pytest.raises(ReportError, match="runs.csv does not exist"):
        write_report(tmp_path)
    for text in ("", RUNS_HEADER + "\n"):
        (tmp_path / "runs.csv").write_text(text)
        with pytest.raises(ReportError, match=r"runs.csv holds no finished runs"):
            write_report(tmp_path)


def test_status_markdown_and_readme(results):
    root = results.parent
    assert status_markdown(root) == "_No paper comparisons yet._"
    write_report(results)
    status = status_markdown(root)
    assert status.splitlines()[2:] == [
        "| tiny | ying2012/table4 | 4 | 3 | 10 | +6.89 pts (iris/euclidean) |",
        "| tiny | ying2012/table5 | 2 | – | 12 | ×8.70 (wine/dml_eig) |",
    ]
    readme = root / "README.md"
    readme.write_text("# Bench\n<!-- status:start -->\nold\n<!-- status:end -->\nTail.\n")
    assert update_readme_status(readme, root) is True
    assert readme.read_text() == (
        f"# Bench\n<!-- status:start -->\n{status}\n<!-- status:end -->\nTail.\n")
    assert update_readme_status(readme, root) is False


def test_readme_without_markers(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# Bench\n")
    with pytest.raises(ReportError, match="status:start"):
        update_readme_status(readme, tmp_path)


# ------------------------------------------------------------------- text reaching LaTeX / HTML


@pytest.mark.parametrize("text,expected", [
    (r"\input{/etc/passwd}", r"\textbackslash{}input\{/etc/passwd\}"),
    ("a_b & c", r"a\_b \& c"),
    ("50% of $x$", r"50\% of \$x\$"),
    ("#1 ^ ~", r"\#1 \textasciicircum{} \textasciitilde{}"),
    ("\\\\", r"\textbackslash{}\textbackslash{}"),
    ("two\nlines\r\nhere", "two lines  here"),
    ("<script>alert(1)</script>", "<script>alert(1)</script>"),  # not special to LaTeX
])
def test_tex_escapes_every_special_character(text, expected):
    from dml_bench.report.tables import tex

    assert tex(text) == expected


def test_labels_reach_table_tex_escaped(tmp_path):
    label = r"\input{/etc/passwd}<script>"
    config = {**CONFIG, "paper_table": None, "solvers": [
        {"name": "euclidean", "label": label}, {"name": "dml_eig", "params": {"mu": 1e-4}}]}
    runs = [(d, label if lab == "euclidean" else lab, s, split, err, t)
            for d, lab, s, split, err, t in RUNS]
    results = write_results(tmp_path / "r", runs=runs, config=config)
    written = write_report(results)
    header = r"Dataset & \textbackslash{}input\{/etc/passwd\}<script> & dml\_eig \\"
    for name in ("table.tex", "table_time.tex"):
        lines = tex_parts(written[name].read_text())[1].splitlines()
        assert lines[2] == header
        assert "\\input" not in written[name].read_text()


def test_dataset_names_reach_the_comparison_table_escaped():
    comparison = pd.DataFrame([{
        "paper": "p", "table": "t", "quantity": "error", "dataset": "a_b%", "solver": "x&y",
        "label": "x&y", "paper_mean": 1.0, "paper_std": float("nan"), "ours_mean": 2.0,
        "ours_std": 0.5, "n": 3, "diff": 1.0, "match": False, "status": "mismatch"}])
    row = comparison_to_latex(comparison).splitlines()[4]
    assert row == r"a\_b\% & x\&y & 1.00 & 2.00 (0.50) & +1.00 & $\times$ \\"


def test_html_page_escapes_text_and_links_only_to_pages():
    from dml_bench.report.html import render_html

    markdown = "\n".join([
        "# Notes <script>alert(1)</script>",
        "",
        "| label | note |",
        "|---|---|",
        "| <img src=x onerror=alert(1)> | a & b |",
        "",
        "- [board](../leaderboard/leaderboard.html) and [x](javascript:location=name;a.html)",
        "<script>document.cookie</script>",
        '![a"b](x.png" onerror="alert(1))',
        "![not an image <b>",
    ])
    page = render_html(markdown, "<b>board</b> & co")
    assert "<title>&lt;b&gt;board&lt;/b&gt; &amp; co</title>" in page
    body = page.split("<body>\n", 1)[1].split("\n</body>", 1)[0]
    assert body.splitlines() == [
        '<h1 id="notes-script-alert-1-script">Notes &lt;script&gt;alert(1)&lt;/script&gt;</h1>',
        '<nav class="toc" id="contents"><b>Contents</b>',
        "<ul>",
        '<li><a href="#table-notes-script-alert-1-script-table">Notes &lt;script&gt;alert(1)'
        "&lt;/script&gt; table</a>",
        "</li>",
        "</ul>",
        "</nav>",
        '<div class="table-wrap" id="table-notes-script-alert-1-script-table"><table>',
        "<tr><th>label</th><th>note</th></tr>",
        '<tr><td style="min-width:13em">&lt;img src=x onerror=alert(1)&gt;</td>'
        "<td>a &amp; b</td></tr>",
        "</table></div>",
        "<ul>",
        '<li><a href="../leaderboard/leaderboard.html">board</a> and '
        "[x](javascript:location=name;a.html)</li>",
        "</ul>",
        "<p>&lt;script&gt;document.cookie&lt;/script&gt;</p>",
        '<p><img src="x.png&quot; onerror=&quot;alert(1)" alt="a&quot;b" '
        'style="max-width:100%"></p>',
        "<p>![not an image &lt;b&gt;</p>",
    ]


# ------------------------------------------------------------------------------ HTML pages


class PageParser(HTMLParser):
    """What a test reads of a page: element ids, links, images, tables (their class, id and
    whether a scrolling container holds them) and every table cell (its style and text)."""

    def __init__(self):
        super().__init__()
        self.ids, self.links, self.images, self.tables, self.cells = [], [], [], [], []
        self.in_toc, self.toc, self.wrapper, self.cell = False, [], None, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.append(attrs["id"])
        if tag == "nav":
            self.in_toc = True
        elif tag == "a":
            (self.toc if self.in_toc else self.links).append(attrs["href"])
        elif tag == "img":
            self.images.append(attrs["src"])
        elif tag == "div" and attrs.get("class") == "table-wrap":
            self.wrapper = attrs.get("id")
        elif tag == "table":
            self.tables.append({"class": attrs.get("class"), "wrapper": self.wrapper})
        elif tag in ("td", "th"):
            self.cell = [tag, attrs.get("style", ""), ""]

    def handle_endtag(self, tag):
        if tag == "nav":
            self.in_toc = False
        elif tag == "div":
            self.wrapper = None
        elif tag in ("td", "th") and self.cell:
            self.cells.append(tuple(self.cell))
            self.cell = None

    def handle_data(self, data):
        if self.cell:
            self.cell[2] += data


def parse_page(page: str) -> PageParser:
    parser = PageParser()
    parser.feed(page)
    return parser


def test_the_page_has_contents_linking_an_anchor_of_every_section_and_table():
    from dml_bench.report.html import render_html

    markdown = "\n".join([
        "# Report", "", "Intro.", "", "## Summary", "", "| a | b |", "|---|---|", "| 1 | 2 |", "",
        "## ying2012", "", "### Table 4 — errors", "", "**ying2012/table4** (error): 3 of 4.", "",
        "| a |", "|---|", "| 1 |", "", "**Protocol** (one for every row)", "", "| c |", "|---|",
        "| 2 |", "", "### Table 4 — errors", "", "**ying2012/table4** (error): again.", "",
        "| a |", "|---|", "| 1 |"])
    page = parse_page(render_html(markdown, "t"))
    assert page.toc == ["#summary", "#table-summary-table", "#ying2012", "#table-4-errors",
                        "#table-ying2012-table4", "#table-protocol", "#table-4-errors-2",
                        "#table-ying2012-table4-2"]
    assert set(page.ids) >= {href[1:] for href in page.toc}  # every entry has its anchor
    assert len(page.ids) == len(set(page.ids))
    # every table sits in its anchored container, which scrolls sideways
    assert [t["wrapper"] for t in page.tables] == [
        "table-summary-table", "table-ying2012-table4", "table-protocol", "table-ying2012-table4-2"]
    assert ".table-wrap{max-width:100%;overflow-x:auto" in render_html(markdown, "t")


def wrapped_lines(text: str, width_em: float) -> int:
    """Lines that ``text`` takes, wrapped greedily at word boundaries in a column ``width_em``
    wide, each word measured in matplotlib's DejaVu Sans (a sans-serif as wide as any a browser
    picks for the page)."""
    from matplotlib.textpath import TextPath

    def width(s):
        return TextPath((0, 0), s, size=1).get_extents().width if s.strip() else 0.0

    space, lines, used = width("a a") - 2 * width("a"), 1, 0.0
    for word in text.split():
        w = width(word)
        if used and used + space + w > width_em:
            lines, used = lines + 1, w
        else:
            used += (space if used else 0) + w
    return lines


def test_rows_stay_short_and_a_long_note_folds():
    """A short cell is set on one line (no minimum width: it does not wrap); a longer one gets a
    minimum width that sets it in at most two lines; a note too long for that is folded, its
    summary in two lines and, opened, the whole in at most eight."""
    from dml_bench.report.html import (CELL_SUMMARY, FOLD_CELL, MAX_NOTE_LINES, ROW_LINES,
                                       SHORT_CELL, fold, render_html)

    note = ("diagnosed in results/ying2012_table4_diagnosis (see the paragraph above the table): "
            "Eq. (3)'s own optimum classifies worse than the smoothed, capped iterate on segment, "
            "waveform and faces (`python benchmarks/diagnoses/solver_optimum.py dml_eig`)")
    notes = [note[:n] for n in (20, 40, 61, 100, 150)] + [note, note * 3, note * 5]
    header = ["data set", "method", "paper", "ours", "ours − paper", "match", "Welch's t", "note"]
    markdown = "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
        f"| wine | dml_eig | 1.35 (1.30) | 2.69 (1.62) | +1.34 | **no** | n.s. | {n} |"
        for n in notes])
    page = render_html(markdown, "t")
    cells = [c for c in parse_page(page).cells if c[0] == "td"]
    for _, style, text in cells:
        assert bool(re.fullmatch(r"min-width:\d+em", style)) == (len(text) > SHORT_CELL), text
    assert "td:not([style]){white-space:nowrap}" in page
    assert page.count("<details><summary>") == sum(len(n.replace("`", "")) > FOLD_CELL
                                                   for n in notes)
    for i, n in enumerate(notes):
        _, style, text = cells[i * len(header) + len(header) - 1]
        width = int(re.fullmatch(r"min-width:(\d+)em", style).group(1)) if style else None
        parts = fold(n, FOLD_CELL, CELL_SUMMARY)
        if parts is None:
            assert text == n.replace("`", "")
            assert width is None or wrapped_lines(text, width) <= ROW_LINES, text
            continue
        summary, rest = (part.replace("`", "") for part in parts)
        assert text == summary + rest and len(summary) <= CELL_SUMMARY
        assert wrapped_lines(summary, width - 1.5) <= ROW_LINES  # beside the fold's marker
        assert wrapped_lines(summary, width) + wrapped_lines(rest, width) <= MAX_NOTE_LINES


@pytest.mark.parametrize("text,summary,rest", [
    # the first sentence when it is short enough; Eq. and Fig. end none
    ("See Eq. (3) and Fig. 2 here. " + "More words follow, " * 6 + "and end.",
     "See Eq. (3) and Fig. 2 here.", "More words follow, " * 6 + "and end."),
    # else the words that fit, marked as cut; a code span is never split
    ("a " * 30 + "`python benchmarks/x.py --long --options` and then " + "more " * 20,
     ("a " * 30).rstrip() + " …", "`python benchmarks/x.py --long --options` and then "
     + ("more " * 20).rstrip()),
])
def test_a_note_folds_after_its_first_sentence_or_its_first_words(text, summary, rest):
    from dml_bench.report.html import fold

    assert fold(text.strip(), 100, 80) == (summary, rest)
    assert fold(text[:100], 100, 80) is None  # short enough: shown whole


def test_a_long_list_item_folds_and_keeps_its_key():
    """The leaderboard's notes are list items: a long one shows its key and first sentence."""
    from dml_bench.report.html import FOLD_ITEM, render_html

    item = "`orl_faces/svm`: The SVM errs 17.0 % on ORL. " + "It is the kernel's width. " * 12
    assert len(item) > FOLD_ITEM
    page = render_html(f"# Board\n\n- {item.strip()}\n- `*/xing`: short.", "t")
    assert ("<li><details><summary><code>orl_faces/svm</code>: The SVM errs 17.0 % on ORL."
            "</summary>It is the kernel&#x27;s width.") in page
    assert "<li><code>*/xing</code>: short.</li>" in page


def test_a_wide_table_gets_a_smaller_font_and_headers_that_break_after_underscores():
    from dml_bench.report.html import WIDE_TABLE, render_html

    header = ["method", "mean_rank"] + [f"breast_cancer_{i}" for i in range(WIDE_TABLE)]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            "| " + " | ".join(["elm", "5.58"] + ["3.55"] * WIDE_TABLE) + " |", "",
            "| a | b |", "|---|---|", "| 1 | 2 |"]
    page = render_html("\n".join(rows), "t")
    assert [t["class"] for t in parse_page(page).tables] == ["wide", None]
    assert "table.wide td,table.wide th{font-size:70%;padding:1px 4px}" in page
    assert "<th>breast_<wbr>cancer_<wbr>0</th>" in page


def test_a_page_links_only_to_files_that_exist_beside_it(tmp_path):
    from dml_bench.report.html import render_html

    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "here.png").write_bytes(b"png")
    (tmp_path / "here.html").write_text("<html></html>")
    markdown = "\n".join(["[here](here.html) · [gone](gone.html) · [up](../REPRODUCTION.html)",
                          "", "![here](figures/here.png)", "", "![gone](figures/gone.png)"])
    page = parse_page(render_html(markdown, "t", root=tmp_path))
    assert page.links == ["here.html"] and page.images == ["figures/here.png"]
    assert all((tmp_path / target).is_file() for target in page.links + page.images)
    unchecked = parse_page(render_html(markdown, "t"))  # no folder given: links as written
    assert unchecked.links == ["here.html", "gone.html", "../REPRODUCTION.html"]


def test_absolute_paths_are_written_relative_to_the_working_or_results_folder(tmp_path,
                                                                               monkeypatch):
    from dml_bench.report.html import relative_paths

    work, results = tmp_path / "work", tmp_path / "elsewhere" / "results"
    work.mkdir()
    monkeypatch.chdir(work)
    home = Path.home()
    text = (f"put it at {work}/datasets/lfw/x.npz; from `{results}`; "
            f"results: `{results}/ying2012_table4`; in {work}; cache {home}/.cache/d; "
            f"/opt/x and {work}2/y stay")
    assert relative_paths(text, results) == (
        "put it at datasets/lfw/x.npz; from `results`; results: `results/ying2012_table4`; "
        f"in .; cache ~/.cache/d; /opt/x and {work}2/y stay")
    # a data place of the environment elsewhere (a temporary cache): by its variable's name
    cache = tmp_path / "tmp.cache"
    monkeypatch.setenv("DMLBENCH_CACHE", str(cache))
    assert relative_paths(f"put it at {cache}/lfw/x.npz; not {cache}2/y", results) == (
        f"put it at $DMLBENCH_CACHE/lfw/x.npz; not {cache}2/y")


@pytest.mark.slow
def test_the_reproduction_page_shows_no_absolute_path(tmp_path, monkeypatch):
    """Written from a results folder given by its absolute path, from another working folder:
    neither page shows the machine's folders (the data cache's place in a reason included)."""
    from dml_bench.reproduction.report import write_reproduction_report

    repo = Path(__file__).resolve().parent.parent
    (tmp_path / "work").mkdir()
    (tmp_path / "results").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.delenv("DMLBENCH_CACHE", raising=False)  # the cache: ./datasets, made absolute
    md, page, _ = write_reproduction_report(tmp_path / "results", root=repo)
    for text in (md.read_text(), page.read_text()):
        assert str(tmp_path) not in text
    assert "from `results`" in md.read_text()
    assert "from <code>results</code>" in page.read_text()
    assert "put it at datasets/lfw/lfw_sift_funneled.npz" in md.read_text()
    parsed = parse_page(page.read_text())
    assert parsed.toc and set(parsed.ids) >= {href[1:] for href in parsed.toc}


def test_the_verification_table_has_a_caption_with_its_unit_and_fold_count(tmp_path):
    import json

    import numpy as np

    from dml_bench.experiment.verification_tasks import VERIFICATION_COLUMNS
    from dml_bench.report.verification import write_verification_report

    (tmp_path / "scores").mkdir()
    rng, rows = np.random.default_rng(0), []
    for label in ("euclidean", "dml_eig"):
        for fold in range(3):
            tid = task_id("lfw", label, fold)
            same = rng.random(40) < 0.5
            pd.DataFrame({"first": range(40), "second": range(40), "same": same,
                          "distance": rng.random(40) + 0.2 * ~same}).to_csv(
                tmp_path / "scores" / f"{tid}.csv", index=False)
            rows.append({"task_id": tid, "experiment": "v", "dataset": "lfw", "split": fold,
                         "solver": label, "label": label, "preprocessing": json.dumps({"pca": 100}),
                         "features": "lfw_sift", "accuracy": 0.7 + 0.01 * fold, "fit_time": 1.0,
                         "fit_cpu_time": 1.0, "n_triplets": 10})
    pd.DataFrame(rows).reindex(columns=VERIFICATION_COLUMNS).to_csv(tmp_path / "runs.csv",
                                                                    index=False)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({
        "name": "v", "evaluation": {"task": "verification"},
        "datasets": [{"name": "lfw_sift", "label": "lfw"}],
        "solvers": [{"name": "euclidean"}, {"name": "dml_eig"}]}))
    caption, tabular = tex_parts(write_verification_report(tmp_path)["table.tex"].read_text())
    assert caption == (r"Pair-verification accuracy (\%), mean $\pm$ standard error over 3 test "
                       "folds; the highest of each row in bold; -- not run.")
    assert tabular.splitlines()[4] == (r"lfw & \textbf{71.00 $\pm$ 0.58} & "
                                       r"\textbf{71.00 $\pm$ 0.58} \\")
