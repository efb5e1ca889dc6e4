"""The package's modules import each other without a cycle: each module holds one concept and
depends only on those below it. Every import counts, those inside functions too (an import
moved into a function to dodge a cycle is still a cycle)."""

import ast
from pathlib import Path

import rawarray


def package_imports(folder: Path) -> dict[str, set[str]]:
    """``{module: modules of the same package it imports}`` for the ``.py`` files in
    ``folder`` (a package): relative imports and absolute ones of the package's name, at any
    depth of the module's code. ``__init__`` is the package itself."""
    name = folder.name
    modules = {p.stem for p in folder.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in folder.glob("*.py"):
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                if node.level == 1 or (node.level == 0 and node.module and
                                       node.module.split(".")[0] == name):
                    parts = (node.module or "").split(".")
                    target = parts[0] if node.level == 1 else (parts[1] if len(parts) > 1 else "")
                    if target:
                        deps.add(target)
                    else:   # `from . import x`: the module x, or a name of __init__
                        deps.update(a.name if a.name in modules else "__init__"
                                    for a in node.names)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    parts = a.name.split(".")
                    if parts[0] == name:
                        deps.add(parts[1] if len(parts) > 1 else "__init__")
        graph[path.stem] = {d for d in deps if d in modules and d != path.stem}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as the modules along it (the first repeated at the end), or
    None."""
    state: dict[str, int] = {}          # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                return path[path.index(d):] + [d]
            if d not in state and (found := visit(d)):
                return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_the_package_has_no_import_cycle():
    folder = Path(rawarray.__file__).parent
    graph = package_imports(folder)
    # The split modules are there and seen importing each other (the parse found the edges).
    assert {"_api", "_file", "_dtype", "_writers", "_ragged"} <= graph.keys()
    assert "_file" in graph["_writers"] and "_dtype" in graph["_ragged"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_check_finds_a_cycle_through_a_lazy_import(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("from . import b\n\ndef f():\n    return b\n")
    (pkg / "b.py").write_text("def g():\n    from pkg.c import h\n    return h\n")
    (pkg / "c.py").write_text("import pkg.a\n")
    cycle = find_cycle(package_imports(pkg))
    assert cycle == ["a", "b", "c", "a"]
    (pkg / "c.py").write_text("import numpy\n")
    assert find_cycle(package_imports(pkg)) is None
