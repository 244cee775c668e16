"""The package's imports point one way: no cycle, and no stage imports a later stage.

The graph is built from the source (``ast``), not by importing: an edge ``a → b`` for every
``import dml_bench.b`` / ``from dml_bench.b import …`` / ``from .b import …`` / ``from . import b``
in module ``a``. ``from package import name`` points at the submodule ``package.name`` when there
is one, else at the package's ``__init__``. Both graphs are asserted acyclic (``graphlib``):
the one of every import, those deferred into function bodies included (a deferred import still
ties two modules together, only later), and the one of the imports that run when a module is
imported (module level, including ``if``/``try`` blocks and class bodies).

The stages are declared once, first to last (:data:`STAGES`), each with the module prefixes it
holds; every module of the package belongs to exactly one. In both graphs a module imports only
modules of its own stage or of earlier ones (:data:`KNOWN_EXCEPTIONS` lists the edges that do
otherwise, each with its reason). Within a stage the modules form layers too: e.g.
``run.tuning`` and ``run.verification`` use ``experiment.knn`` / ``run.execution`` and never
``run.runner``, which dispatches to them; ``report.verification`` uses ``report.tables``, never
``report.knn``.
"""

import ast
import graphlib
from pathlib import Path

import pytest

import dml_bench

ROOT = Path(dml_bench.__file__).parent

#: the stages, first to last, each with the module prefixes it holds (a prefix holds the module of
#: that name and the modules under it; ``dml_bench`` itself holds only the package's ``__init__``)
STAGES = [
    ("ground", ("dml_bench", "dml_bench.errors", "dml_bench.registry", "dml_bench.common",
                "dml_bench.papers")),
    ("dataset", ("dml_bench.datasets",)),
    ("split", ("dml_bench.splits", "dml_bench.preprocess")),
    ("constraints", ("dml_bench.constraints",)),
    ("solver", ("dml_bench.solvers",)),
    ("evaluation", ("dml_bench.evaluate",)),
    ("experiment", ("dml_bench.experiment",)),
    ("run", ("dml_bench.run",)),
    ("report", ("dml_bench.report",)),
    ("reproduction", ("dml_bench.reproduction",)),
    ("leaderboard", ("dml_bench.leaderboard",)),
    ("cli", ("dml_bench.cli", "dml_bench.__main__")),
]

#: imports of a later stage that the package has on purpose: (importer, imported) → why
KNOWN_EXCEPTIONS = {
    ("dml_bench.solvers.lmnn", "dml_bench.evaluate"):
        "LMNN's validation stop scores the held-out k-NN error by the evaluation stage's rule",
}

#: at most this many modules at the package's top level (the ground and the early stages)
MAX_TOP_LEVEL = 10


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.AST, deferred: bool):
    """The import statements of a module: all of them, or (``deferred=False``) those that run
    when it is imported (module level, class bodies, ``if``/``try`` blocks; not function bodies)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif deferred or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stack.extend(ast.iter_child_nodes(node))


def import_graph(root: Path = ROOT, deferred: bool = True) -> dict[str, set[str]]:
    """``{module: {package modules it imports}}`` for every ``.py`` file under ``root``; with
    ``deferred=False`` only the imports that run when the module is imported."""
    files = {module_name(path, root): path for path in sorted(root.rglob("*.py"))}
    graph = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in _imports(ast.parse(path.read_text(), filename=str(path)), deferred):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: strip one package level per dot beyond the first
                    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = ".".join(filter(None, [base, node.module]))
                else:
                    base = node.module
                for alias in node.names:  # a submodule if there is one, else the package
                    sub = f"{base}.{alias.name}"
                    targets.add(sub if sub in files else base)
        graph[name] = {t for t in targets if t in files and t != name}
    return graph


def stage_of(module: str, stages=STAGES) -> int | None:
    """The index in ``stages`` of the stage holding ``module`` (its longest matching prefix), or
    None. The root package's prefix holds only itself."""
    best = None
    for index, (_, prefixes) in enumerate(stages):
        for prefix in prefixes:
            root = "." not in prefix
            if module == prefix or (not root and module.startswith(prefix + ".")):
                if best is None or len(prefix) > best[1]:
                    best = (index, len(prefix))
    return None if best is None else best[0]


def later_stage_imports(graph: dict[str, set[str]], stages=STAGES) -> list[tuple[str, str]]:
    """The edges ``(a, b)`` of ``graph`` where ``b`` belongs to a later stage than ``a``."""
    return sorted((a, b) for a, targets in graph.items() for b in targets
                  if stage_of(b, stages) > stage_of(a, stages))


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as err:
        return err.args[1]
    return None


def write_package(root: Path, files: dict[str, str]) -> Path:
    """A package laid out from ``{relative path: source}`` under ``root``."""
    for name, source in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(source)
    return root


@pytest.mark.parametrize("deferred", [True, False], ids=["with-deferred", "at-import"])
def test_the_package_has_no_import_cycle(deferred):
    graph = import_graph(deferred=deferred)
    assert {"dml_bench.run.runner", "dml_bench.run.tuning", "dml_bench.experiment.knn",
            "dml_bench.run.execution", "dml_bench.run.verification",
            "dml_bench.solvers.base"} <= set(graph)
    cycle = find_cycle(graph)
    assert cycle is None, f"import cycle: {' → '.join(cycle)}"


def test_the_graph_sees_relative_absolute_and_deferred_imports(tmp_path):
    pkg = write_package(tmp_path / "pkg", {
        "__init__.py": "", "a.py": "from .sub import c\n",
        "b.py": "import typing\n\ndef f():\n    from . import a\n",
        "sub/__init__.py": "from .c import X\nfrom ..a import name\n", "sub/c.py": "import pkg.b\n"})
    graph = import_graph(pkg)
    assert graph == {"pkg": set(), "pkg.a": {"pkg.sub.c"}, "pkg.b": {"pkg.a"},
                     "pkg.sub": {"pkg.sub.c", "pkg.a"}, "pkg.sub.c": {"pkg.b"}}
    assert set(find_cycle(graph)) == {"pkg.a", "pkg.b", "pkg.sub.c"}
    at_import = import_graph(pkg, deferred=False)  # b's import of a runs only when f is called
    assert at_import == {**graph, "pkg.b": set()}
    assert find_cycle(at_import) is None


def test_every_module_belongs_to_one_stage():
    graph = import_graph()
    assert [m for m in graph if stage_of(m) is None] == []
    prefixes = [p for _, group in STAGES for p in group]
    assert len(prefixes) == len(set(prefixes))
    assert all(p in graph for p in prefixes), "a declared prefix that names no module"


@pytest.mark.parametrize("deferred", [True, False], ids=["with-deferred", "at-import"])
def test_no_module_imports_a_later_stage(deferred):
    later = later_stage_imports(import_graph(deferred=deferred))
    names = [name for name, _ in STAGES]
    unexpected = [f"{a} ({names[stage_of(a)]}) → {b} ({names[stage_of(b)]})"
                  for a, b in later if (a, b) not in KNOWN_EXCEPTIONS]
    assert unexpected == []
    # an exception the code no longer needs is taken off the list
    assert set(KNOWN_EXCEPTIONS) <= set(later_stage_imports(import_graph()))


def test_the_stage_check_sees_an_import_of_a_later_stage(tmp_path):
    pkg = write_package(tmp_path / "pkg", {
        "__init__.py": "", "early.py": "def f():\n    from .late import x\n",
        "middle.py": "from . import early\n", "late/__init__.py": "",
        "late/x.py": "from ..middle import early\n"})
    stages = [("first", ("pkg", "pkg.early")), ("second", ("pkg.middle",)),
              ("third", ("pkg.late",))]
    graph = import_graph(pkg)
    assert [stage_of(m, stages) for m in sorted(graph)] == [0, 0, 2, 2, 1]
    assert later_stage_imports(graph, stages) == [("pkg.early", "pkg.late.x")]
    assert later_stage_imports(import_graph(pkg, deferred=False), stages) == []
    assert stage_of("pkg.other", stages) is None  # the root's prefix holds only itself


def test_the_top_level_holds_few_modules():
    top = sorted(path.name for path in ROOT.glob("*.py"))
    assert "__init__.py" in top and len(top) <= MAX_TOP_LEVEL, top


def test_every_subpackage_docstring_names_its_stage():
    names = [name for name, _ in STAGES]
    inits = sorted(ROOT.glob("*/__init__.py"))
    assert {"experiment", "run", "report", "solvers"} <= {init.parent.name for init in inits}
    for init in inits:
        module = module_name(init, ROOT)
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        stage = names[stage_of(module)]
        assert f"{stage} stage" in doc.lower(), f"{module}: its docstring names no {stage!r} stage"


#: the longest module, in lines, of the package
MAX_MODULE_LINES = 600
#: the longest function, in lines from its ``def`` to its end (docstring included)
MAX_FUNCTION_LINES = 80
#: the solvers' numerical kernels allowed to be longer: (module path, qualified name) → why
LONG_KERNELS = {
    ("solvers/lmnn.py", "LMNN._fit"):
        "the gradient loop of LMNN, whose steps share its step size and active set",
    ("solvers/eigen_update.py", "_secular_roots"):
        "a numba kernel: one compiled loop over the secular equation's roots",
}


def functions(source: str) -> dict[str, ast.AST]:
    """``{qualified name: node}`` of every function of ``source``, the nested ones and methods
    included (``Class.method``, ``outer.inner``)."""
    out = {}

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    out[name] = child
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return out


def function_lengths(source: str) -> dict[str, int]:
    """``{qualified name: lines from its def to its end}`` of every function of ``source``."""
    return {name: f.end_lineno - f.lineno + 1 for name, f in functions(source).items()}


def test_function_lengths_count_from_def_to_end_with_docstring_and_nesting():
    source = ('import x\n\n\n@decorator\ndef f(a,\n      b):\n    """Doc.\n\n    More.\n    """\n'
              '    def g():\n        return 1\n    return g\n\n\nclass C:\n    def m(self):\n'
              '        pass\n')
    assert function_lengths(source) == {"f": 9, "f.g": 2, "C.m": 2}


def test_no_module_or_function_is_too_long():
    modules, functions = [], []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        source = path.read_text()
        if len(source.splitlines()) > MAX_MODULE_LINES:
            modules.append(f"{rel}: {len(source.splitlines())} lines")
        functions += [f"{rel}:{name}: {length} lines"
                      for name, length in function_lengths(source).items()
                      if length > MAX_FUNCTION_LINES and (rel, name) not in LONG_KERNELS]
    assert modules == [], f"modules over {MAX_MODULE_LINES} lines"
    assert functions == [], f"functions over {MAX_FUNCTION_LINES} lines"
    # an exemption the code no longer needs is taken off the list
    for rel, name in LONG_KERNELS:
        assert function_lengths((ROOT / rel).read_text()).get(name, 0) > MAX_FUNCTION_LINES, \
            f"{rel}:{name} is no longer over {MAX_FUNCTION_LINES} lines: drop its exemption"


#: the most parameters a function takes (``self`` and ``cls`` not counted): a function that needs
#: more takes the config's sections, a :class:`~dml_bench.run.runner.Selection` or a
#: :class:`~dml_bench.experiment.sections.DataPlace` instead of their fields
MAX_PARAMETERS = 8
#: functions allowed more, by kind: (module path, qualified name) → why
MANY_PARAMETERS = {
    ("reproduction/studies/mvu.py", "run_mvu_experiment"):
        "a study's settings, given one by one as its target's `params:` in targets.yaml",
    ("reproduction/studies/mvu_study.py", "run_embedding_quality_study"):
        "a study's settings, given one by one as its target's `params:` in targets.yaml",
}


def parameter_counts(source: str) -> dict[str, int]:
    """``{qualified name: number of parameters}`` of every function of ``source`` (``self``,
    ``cls``, ``*args`` and ``**kwargs`` not counted)."""
    return {name: sum(x.arg not in ("self", "cls")
                      for x in (*f.args.posonlyargs, *f.args.args, *f.args.kwonlyargs))
            for name, f in functions(source).items()}


def _exempt(rel: str, name: str, source: str) -> bool:
    """A solver's constructor (its hyper-parameters, as scikit-learn wants them) or numerical
    kernel (a compiled or inner loop given its arrays), a CLI command (one parameter per
    option, as click calls it), or a listed study."""
    if rel.startswith("solvers/"):
        return True
    if rel.startswith("cli/"):
        return True
    return (rel, name) in MANY_PARAMETERS


def test_no_function_takes_too_many_parameters():
    assert parameter_counts("def f(a, b=1, *c, d, **e):\n    pass\nclass C:\n"
                            "    def m(self, x):\n        pass\n") == {"f": 3, "C.m": 1}
    over = []
    for path in sorted(ROOT.rglob("*.py")):
        rel, source = path.relative_to(ROOT).as_posix(), path.read_text()
        over += [f"{rel}:{name}: {count} parameters"
                 for name, count in parameter_counts(source).items()
                 if count > MAX_PARAMETERS and not _exempt(rel, name, source)]
    assert over == [], f"functions over {MAX_PARAMETERS} parameters"
