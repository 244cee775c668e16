"""No import cycle inside ``dml_bench``: the modules' imports of each other point one way.

The graph is built from the source (``ast``), not by importing: an edge ``a → b`` for every
``import dml_bench.b`` / ``from dml_bench.b import …`` / ``from .b import …`` / ``from . import b``
in module ``a``. ``from package import name`` points at the submodule ``package.name`` when there
is one, else at the package's ``__init__``. Both graphs are asserted acyclic (``graphlib``):
the one of every import, those deferred into function bodies included (a deferred import still
ties two modules together, only later), and the one of the imports that run when a module is
imported (module level, including ``if``/``try`` blocks and class bodies). So the stage modules
form layers: e.g. ``tuning`` and ``verification_run`` use ``tasks`` / ``execution`` and never
``runner``, which dispatches to them; ``verification_report`` uses ``tables``, never ``report``.
"""

import ast
import graphlib
from pathlib import Path

import pytest

import dml_bench

ROOT = Path(dml_bench.__file__).parent


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


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as err:
        return err.args[1]
    return None


@pytest.mark.parametrize("deferred", [True, False], ids=["with-deferred", "at-import"])
def test_the_package_has_no_import_cycle(deferred):
    graph = import_graph(deferred=deferred)
    assert {"dml_bench.runner", "dml_bench.tuning", "dml_bench.tasks", "dml_bench.execution",
            "dml_bench.verification_run", "dml_bench.solvers.base"} <= set(graph)
    cycle = find_cycle(graph)
    assert cycle is None, f"import cycle: {' → '.join(cycle)}"


def test_the_graph_sees_relative_absolute_and_deferred_imports(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import c\n")
    (pkg / "b.py").write_text("import typing\n\ndef f():\n    from . import a\n")
    (pkg / "sub" / "__init__.py").write_text("from .c import X\nfrom ..a import name\n")
    (pkg / "sub" / "c.py").write_text("import pkg.b\n")
    graph = import_graph(pkg)
    assert graph == {"pkg": set(), "pkg.a": {"pkg.sub.c"}, "pkg.b": {"pkg.a"},
                     "pkg.sub": {"pkg.sub.c", "pkg.a"}, "pkg.sub.c": {"pkg.b"}}
    assert set(find_cycle(graph)) == {"pkg.a", "pkg.b", "pkg.sub.c"}
    at_import = import_graph(pkg, deferred=False)  # b's import of a runs only when f is called
    assert at_import == {**graph, "pkg.b": set()}
    assert find_cycle(at_import) is None
