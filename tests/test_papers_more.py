"""The stored numbers of Shen et al. (2010, 2014) and Kunapuli & Shavlik (2012) against an
independent parse of the paper texts.

Each table is read from the paper text with its own small parser (tab-separated or
space-separated lines, as the text has them), never from the YAML; the test then asserts that every
stored cell, display name and protocol count equals what is printed. Extra data the loader ignores
(``setup``, ``printed``, ``protocol_only``) is read from the raw YAML and checked the same way.
"""

from __future__ import annotations

import re
from collections import Counter
from decimal import Decimal

import pytest
import yaml

from dml_bench.datasets import DATASETS
from dml_bench.papers import PAPERS_DIR, list_paper_tables, load_paper_table
from conftest import papers_dir

PAPERS = papers_dir()
TEXTS = {"shen2014": "shen2014_frobmetric_dual.txt", "shen2010": "shen2010_sdpmetric.txt",
         "kunapuli2012": "kunapuli2012_mdml_comid.txt"}

# Solver registry names, existing or planned, and keys invented for methods we do not have
SOLVER_KEYS = {"euclidean", "dml_eig", "lmnn_eig", "frobmetric", "sdpmetric_squared_hinge",
               "sdpmetric_huber", "boostmetric", "lmnn", "mlmnn", "itml", "xing", "nca", "rca",
               "lda", "pca", "svm", "elm", "ldml", "mdml_hf", "mdml_lv", "pola"}
INVENTED_SOLVER_KEYS: set[str] = {"mvu", "isomap", "lle"}  # Shen 2014 T. V–VI: embeddings
# Row keys that are not dataset registry names (documented in the YAML files)
NON_REGISTRY_ROWS = re.compile(r"^(usps_pca|mnist_test_pca|face_background|pca\d+_triplets\d+)$")

CELL = re.compile(r"^(\d+\.\d+)(?: \((\d+\.\d+)\)(\d?))?$")   # "2.32 (0.31)", "3.46 (3.82)1"
TIME = re.compile(r"^(\d[\d,]*(?:\.\d+)?)([smh])$")            # "1249s", "9.5h", "16m"
SECONDS = {"s": 1, "m": 60, "h": 3600}
LESS_THAN_1S = "less than 1s"


# ---------------------------------------------------------------------------------- helpers


def count(text: str) -> int:
    """A printed count, with thousands separators: "70,000" -> 70000."""
    assert re.fullmatch(r"\d{1,3}(,\d{3})*", text), text
    return int(text.replace(",", ""))


def error_cell(text: str) -> tuple[tuple[float, float | None] | None, str]:
    """A printed error cell -> ((mean, std) or None for "-" / "_", footnote mark)."""
    if text in ("-", "_"):
        return None, ""
    mean, std, footnote = CELL.match(text).groups()
    return (float(mean), None if std is None else float(std)), footnote or ""


def time_cell(text: str) -> tuple[float, float | None] | None:
    """A printed time -> (seconds, None); "less than 1s" (an upper bound) -> None."""
    if text == LESS_THAN_1S:
        return None
    value, unit = TIME.match(text).groups()
    return float(Decimal(value.replace(",", "")) * SECONDS[unit]), None


def plain_seconds(text: str) -> bool:
    """Whether a printed time is a plain number of seconds (so needs no ``printed`` entry)."""
    return TIME.match(text) is not None and text.endswith("s")


def stored(key: str) -> dict[tuple[str, str], tuple[float, float | None] | None]:
    table = load_paper_table(key)
    return {(r, c): table.values[r][c] for r in table.row_names for c in table.column_names}


def raw_yaml(paper: str) -> dict:
    with open(PAPERS_DIR / f"{paper}.yaml", encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def numbers_in(text: str) -> list[int]:
    return [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*\d|\d", text)]


def line_index(lines: list[str], predicate, start: int = 0) -> int:
    return next(i for i in range(start, len(lines)) if predicate(lines[i]))


def paper_text(paper: str) -> str:
    path = PAPERS / TEXTS[paper]
    if not path.is_file():
        pytest.skip(f"paper text not found at {path} (set DMLBENCH_PAPERS to its folder)")
    return path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def shen2014() -> list[str]:
    return paper_text("shen2014").splitlines()


@pytest.fixture(scope="module")
def shen2010() -> list[str]:
    return paper_text("shen2010").splitlines()


@pytest.fixture(scope="module")
def kunapuli2012() -> list[str]:
    return paper_text("kunapuli2012").splitlines()


# ------------------------------------------------------------------ Shen et al. (2014), Table I

SHEN2014_DATASETS = {"MNIST": "mnist", "USPS": "usps_roweis", "letters": "letter",
                     "Yale faces": "yale_b", "Bal": "balance_scale", "Wine": "wine", "Iris": "iris"}
SHEN2014_METHODS = {"Euclidean": "euclidean", "PCA": "pca", "LDA": "lda", "SVM": "svm",
                    "ELM [17]": "elm", "RCA [6]": "rca", "NCA [5]": "nca", "LMNN [1]": "lmnn",
                    "ITML [7]": "itml", "BoostMetric [8]": "boostmetric",
                    "FrobMetric (this work)": "frobmetric", "RCA": "rca", "LMNN": "lmnn",
                    "ITML": "itml", "BoostMetric": "boostmetric", "FrobMetric": "frobmetric"}
SETUP_LABELS = {"# samples": "n_samples", "# triplets": "n_triplets", "dimension": "dimension",
                "dimension after PCA": "dimension_after_pca", "# training": "n_train",
                "# validation": "n_validation", "# test": "n_test", "test": "n_test",
                "# classes": "n_classes", "# runs": "n_runs"}


def parse_shen2014_table1(lines: list[str]) -> dict:
    """Table I: tab-separated, data sets as columns; header rows (setting), then the blocks
    "Error Rates %" and "Computational Time" with one method per line."""
    first = line_index(lines, lambda s: s == "TABLE I")
    header = line_index(lines, lambda s: s.startswith("\tMNIST\t"), first)
    names = lines[header].split("\t")[1:]
    out = {"datasets": names, "setup": {}, "error": {}, "time": {},
           "methods": {"error": [], "time": []}, "footnotes": {}, "printed": {}}
    block = "setup"
    for line in lines[header + 1:]:
        if not line.strip():
            break
        label, *fields = line.split("\t")
        if label in ("Error Rates %", "Computational Time"):
            block = "error" if label.startswith("Error") else "time"
            assert not any(fields)
            continue
        if not label:     # the garbled last line: stray "-" and bullets, no numbers
            assert not re.search(r"\d", line)
            continue
        assert len(fields) == len(names), line
        rows = [SHEN2014_DATASETS[n] for n in names]
        if block == "setup":
            for row, field in zip(rows, fields):
                value = count(field) if field else None
                out["setup"].setdefault(row, {})[SETUP_LABELS[label]] = value
            continue
        col = SHEN2014_METHODS[label]
        out["methods"][block].append((col, label))
        for row, field in zip(rows, fields):
            if block == "error":
                out["error"][row, col], mark = error_cell(field)
                if mark:
                    out["footnotes"][row, col] = mark
            else:
                out["time"][row, col] = time_cell(field)
                if not plain_seconds(field):
                    out["printed"][f"{row}/{col}"] = field
    return out


@pytest.fixture(scope="module")
def shen2014_table1(shen2014):
    return parse_shen2014_table1(shen2014)


def test_shen2014_table1_errors(shen2014_table1):
    table = load_paper_table("shen2014/table1")
    assert (table.number, table.quantity, table.unit) == (1, "error", "percent")
    assert stored("shen2014/table1") == shen2014_table1["error"]
    assert list(table.row_names.values()) == shen2014_table1["datasets"]
    assert list(table.column_names.items()) == shen2014_table1["methods"]["error"]
    # the one footnoted cell (LMNN on Wine, footnote 1) carries the footnote as a note
    assert shen2014_table1["footnotes"] == {("wine", "lmnn"): "1"}
    assert "20.77" in table.note_for("wine", "lmnn")
    assert table.values["mnist"]["elm"] is None and "memory" in table.note_for("mnist", "elm")


def test_shen2014_table1_times(shen2014_table1):
    table = load_paper_table("shen2014/table1_time")
    assert (table.number, table.quantity, table.unit) == (1, "fit_time", "seconds")
    assert stored("shen2014/table1_time") == shen2014_table1["time"]
    assert list(table.row_names.values()) == shen2014_table1["datasets"]
    assert list(table.column_names.items()) == shen2014_table1["methods"]["time"]
    assert table.values["mnist"]["lmnn"] == (39600.0, None)   # printed "11h"
    assert raw_yaml("shen2014")["tables"]["table1_time"]["printed"] == shen2014_table1["printed"]


def test_shen2014_table1_setup(shen2014_table1):
    tables = raw_yaml("shen2014")["tables"]
    for key in ("table1", "table1_time"):
        assert tables[key]["setup"] == shen2014_table1["setup"]
        protocol = load_paper_table(f"shen2014/{key}").protocol
        for row, setup in shen2014_table1["setup"].items():
            printed = [v for v in setup.values() if v is not None]
            assert Counter(numbers_in(protocol[row])) == Counter(printed), row


# ----------------------------------------------------------------- Shen et al. (2014), Table II


def parse_shen2014_table2(lines: list[str]) -> dict:
    """Table II: rows = number of triplets, columns = PCA dimension, blocks "Accuracy" and
    "CPU Time"."""
    first = line_index(lines, lambda s: s == "TABLE II")
    header = line_index(lines, lambda s: s.startswith("# triplets\t"), first)
    dims = [int(re.fullmatch(r"(\d+)D", d).group(1)) for d in lines[header].split("\t")[1:]]
    out = {"accuracy": {}, "time": {}, "names": {}}
    block = None
    for line in lines[header + 1:]:
        if not line.strip():
            break
        label, *fields = line.split("\t")
        if label in ("Accuracy", "CPU Time"):
            block = "accuracy" if label == "Accuracy" else "time"
            continue
        triplets = count(label)
        assert len(fields) == len(dims)
        for dim, field in zip(dims, fields):
            row = f"pca{dim}_triplets{triplets}"
            out["names"][row] = f"{dim}D, {label} triplets"
            if block == "accuracy":
                cell, mark = error_cell(field)
                assert cell[1] is not None and not mark
                out["accuracy"][row, "frobmetric"] = cell
            else:
                assert plain_seconds(field)
                out["time"][row, "frobmetric"] = time_cell(field)
    return out


def test_shen2014_table2(shen2014):
    parsed = parse_shen2014_table2(shen2014)
    assert len(parsed["accuracy"]) == len(parsed["time"]) == 24
    for key, quantity, unit, cells in (("table2", "accuracy", "percent", parsed["accuracy"]),
                                       ("table2_time", "fit_time", "seconds", parsed["time"])):
        table = load_paper_table(f"shen2014/{key}")
        assert (table.number, table.quantity, table.unit) == (2, quantity, unit)
        assert stored(f"shen2014/{key}") == cells
        assert table.row_names == parsed["names"]
        assert table.column_names == {"frobmetric": "FrobMetric"}


# ---------------------------------------------------------------- Shen et al. (2014), Table IV


def parse_shen2014_table4(lines: list[str]) -> dict:
    """Table IV: two leading tab fields (block label, method), data sets KTH and Weizmann."""
    first = line_index(lines, lambda s: s == "TABLE IV")
    header = line_index(lines, lambda s: s == "\t\tKTH\tWeizmann", first)
    out = {"setup": {}, "error": {}, "fit_time": {}}
    block = "error"
    for line in lines[header + 1:]:
        if not line.strip():
            break
        label, method, *fields = line.split("\t")
        assert len(fields) == 2, line
        if not method:
            for row, field in zip(("kth", "weizmann"), fields):
                out["setup"].setdefault(row, {})[SETUP_LABELS[label]] = count(field)
            continue
        col = SHEN2014_METHODS[method]
        if label.startswith("Comp") or col in out[block].get("kth", {}):   # a method again
            block = "fit_time"
        for row, field in zip(("kth", "weizmann"), fields):
            if block == "error":
                cell, mark = error_cell(field)
                assert cell[1] is not None and not mark
            else:   # KTH BoostMetric is printed "4048.67" without its "s"
                cell = (float(re.fullmatch(r"(\d+\.\d+)s?", field).group(1)), None)
            out[block].setdefault(row, {})[col] = list(cell)
    return out


def test_shen2014_table4(shen2014):
    parsed = parse_shen2014_table4(shen2014)
    rows = {"kth": "kth_actions", "weizmann": "weizmann_actions"}
    raw = raw_yaml("shen2014")["tables"]
    error, time = load_paper_table("shen2014/table4"), load_paper_table("shen2014/table4_time")
    assert error.number == time.number == 4
    assert {rows[r]: s for r, s in parsed["setup"].items()} == raw["table4"]["setup"]
    for table, block in ((error, "error"), (time, "fit_time")):
        for row, cells in parsed[block].items():
            assert {c: list(v) for c, v in table.values[rows[row]].items()} == cells, (block, row)
    assert list(error.column_names) == ["euclidean", "rca", "lmnn", "itml", "boostmetric",
                                        "frobmetric"]
    for row, setup in parsed["setup"].items():
        assert set(setup.values()) <= set(numbers_in(error.protocol[rows[row]])), row


# ------------------------------------------------------------------ Shen et al. (2010), I - III

SHEN2010_DATASETS = {"USPSPCA": "usps_pca", "USPS": "usps", "MNISTPCA": "mnist_test_pca",
                     "MNIST": "mnist_test", "Letter": "letter", "ORLface": "orl_faces",
                     "Twin-Peaks": "twin_peaks", "Twin-peakes": "twin_peaks", "Wine": "wine",
                     "Balance": "balance_scale", "Bal": "balance_scale", "Vehicle": "vehicle",
                     "Breast-Cancer": "breast_cancer_original", "Diabetes": "pima",
                     "Face-Background": "face_background"}
SHEN2010_METHODS = {"Euclidean": "euclidean", "LMNN": "lmnn",
                    "SDPMetric-S": "sdpmetric_squared_hinge", "SDPMetric-H": "sdpmetric_huber"}
SHEN2010_TABLE1 = ["n_train", "n_validation", "n_test", "dimension", "dimension_after_pca",
                   "n_classes", "n_runs", "n_triplets"]


def shen2010_block(lines: list[str], caption: str) -> tuple[list[str], list[str]]:
    """The header tokens and body lines of the table whose caption line starts with ``caption``
    (space-separated; the body ends at a blank line or the next caption)."""
    first = line_index(lines, lambda s: s.startswith(caption))
    body = []
    for line in lines[first + 2:]:
        if not line.strip() or line.startswith(("TABLE", "Refer to caption")):
            break
        body.append(line)
    return lines[first + 1].split(), body


def split_name(line: str) -> tuple[str, str]:
    """"Twin-Peaks 1.03 (0.21) ..." -> ("Twin-Peaks", "1.03 (0.21) ..."); splits on any
    whitespace, the non-breaking spaces of the text included."""
    name, rest = line.split(maxsplit=1)
    return name, " ".join(rest.split())


def test_shen2010_table1_setup(shen2010):
    header, body = shen2010_block(shen2010, "TABLE I:")
    assert " ".join(header).startswith("# training # validation # test dimension")
    parsed, with_pca = {}, []
    for line in body:
        name, rest = split_name(line)
        values = [count(v) for v in rest.split()]
        if len(values) == 8:
            with_pca.append(name)
        else:   # a blank "dimension after PCA": no PCA (the caption)
            assert len(values) == 7, line
            values.insert(4, None)
        parsed[SHEN2010_DATASETS[name]] = dict(zip(SHEN2010_TABLE1, values))
    assert with_pca == ["USPSPCA", "MNISTPCA", "ORLface"]
    tables = raw_yaml("shen2010")["tables"]
    for key in ("table2", "table3"):
        assert tables[key]["setup"] == parsed
        assert list(tables[key]["rows"]) == list(parsed)
        protocol = load_paper_table(f"shen2010/{key}").protocol
        for row, setup in parsed.items():
            printed = [v for v in setup.values() if v is not None]
            assert Counter(numbers_in(protocol[row])) == Counter(printed), row


def test_shen2010_table2_errors(shen2010):
    header, body = shen2010_block(shen2010, "TABLE II:")
    cols = [SHEN2010_METHODS[h] for h in header]
    cells, names = {}, []
    for line in body:
        name, rest = split_name(line)
        names.append(name)
        found = re.findall(r"(\d+\.\d+)(?: \((\d+\.\d+)\))?", rest)
        assert len(found) == len(cols) and re.sub(r"[\d.() ]", "", rest) == "", line
        for col, (mean, std) in zip(cols, found):
            cells[SHEN2010_DATASETS[name], col] = (float(mean), float(std) if std else None)
    table = load_paper_table("shen2010/table2")
    assert (table.number, table.quantity, table.unit) == (2, "error", "percent")
    assert stored("shen2010/table2") == cells
    assert list(table.row_names.values()) == names
    assert list(table.column_names.values()) == header


def test_shen2010_table3_times(shen2010):
    header, body = shen2010_block(shen2010, "TABLE III:")
    cols = [SHEN2010_METHODS[h] for h in header]
    cells, names, printed = {}, [], {}
    for line in body:
        name, rest = split_name(line)
        names.append(name)
        found = re.findall(rf"{LESS_THAN_1S}|\d+(?:\.\d+)?[smh]", rest)
        assert len(found) == len(cols) and " ".join(found) == rest, line
        for col, field in zip(cols, found):
            row = SHEN2010_DATASETS[name]
            cells[row, col] = time_cell(field)
            if not plain_seconds(field):
                printed[f"{row}/{col}"] = field
    table = load_paper_table("shen2010/table3")
    assert (table.number, table.quantity, table.unit) == (3, "fit_time", "seconds")
    assert stored("shen2010/table3") == cells
    assert list(table.row_names.values()) == names
    assert list(table.column_names.values()) == header
    assert raw_yaml("shen2010")["tables"]["table3"]["printed"] == printed
    assert table.values["usps"]["lmnn"] == (5760.0, None)   # printed "1.6h"


# ------------------------------------------------------------ Kunapuli & Shavlik (2012), Table 3

KUNAPULI2012_METHODS = {"LMNN": "lmnn", "ITML": "itml", "POLA": "pola",
                        "BoostMetric": "boostmetric", "MDML H+F": "mdml_hf",
                        "MDML L+V": "mdml_lv"}
KUNAPULI2012_COLUMNS = {"Test Error (%)": ("table3", "error", "percent"),
                        "Run Time (seconds)": ("table3_time", "fit_time", "seconds"),
                        "Non-zero features": ("table3_nonzero", "n_nonzero_eigenvalues", "count"),
                        "Num. feats. for 90% energy": ("table3_energy90", "n_features_90_energy",
                                                       "count")}


def test_kunapuli2012_table3(kunapuli2012):
    caption = line_index(kunapuli2012, lambda s: s.startswith("**Table 3.**"))
    header = line_index(kunapuli2012, lambda s: s.startswith("Data set\t"), caption)
    quantities = [KUNAPULI2012_COLUMNS[h] for h in kunapuli2012[header].split("\t")[1:]]
    cells = {key: {} for key, *_ in quantities}
    methods = []
    for line in kunapuli2012[header + 1:]:
        if not line.strip():
            break
        method, *fields = line.split("\t")
        methods.append(method)
        assert len(fields) == len(quantities)
        for (key, quantity, _), field in zip(quantities, fields):
            pattern = r"\d+" if quantity.startswith("n_") else r"\d+\.\d+"
            assert re.fullmatch(pattern, field), field
            cells[key]["optdigits", KUNAPULI2012_METHODS[method]] = (float(field), None)
    assert len(methods) == 6
    for key, quantity, unit in quantities:
        table = load_paper_table(f"kunapuli2012/{key}")
        assert (table.number, table.quantity, table.unit) == (3, quantity, unit)
        assert stored(f"kunapuli2012/{key}") == cells[key]
        assert list(table.column_names.values()) == methods
        assert table.row_names == {"optdigits": "optdigits"}
        assert "34,407" in table.protocol["constraints"]


# ------------------------------------------------------------------------------ all the tables

NEW_TABLES = ["kunapuli2012/table3", "kunapuli2012/table3_time", "kunapuli2012/table3_nonzero",
              "kunapuli2012/table3_energy90", "shen2010/table2", "shen2010/table3",
              "shen2014/table1", "shen2014/table1_time", "shen2014/table2", "shen2014/table2_time",
              "shen2014/table3",
              "shen2014/table4", "shen2014/table4_time", "shen2014/table5_alstd",
              "shen2014/table5_aled", "shen2014/table6_alcd", "shen2014/table6_gscd"]


def test_new_tables_listed():
    listed = list_paper_tables()
    assert set(NEW_TABLES) <= set(listed)
    assert [k for k in listed if k.split("/")[0] in ("shen2014", "shen2010", "kunapuli2012")] \
        == NEW_TABLES


@pytest.mark.parametrize("key", NEW_TABLES)
def test_keys_notes_and_printed_are_consistent(key):
    table = load_paper_table(key)
    paper, name = key.split("/")
    spec = raw_yaml(paper)["tables"][name]
    for row in table.row_names:
        assert row in DATASETS or NON_REGISTRY_ROWS.match(row), row
    for col in table.column_names:
        assert col in SOLVER_KEYS | INVENTED_SOLVER_KEYS, col
    for note in table.notes:
        row, col = note.split("/")
        assert row == "*" or row in table.row_names, note
        assert col == "*" or col in table.column_names, note
    for cell, text in (spec.get("printed") or {}).items():
        row, col = cell.split("/")
        value = table.values[row][col]
        if text == LESS_THAN_1S:
            assert value is None, cell
        else:
            assert value == time_cell(text), cell
    assert table.cells() and all(isinstance(v, str) for v in table.protocol.values())
