"""The package's layout: its modules import one another without a cycle.

Every module of ``python/toolfilter_fast`` is parsed with :mod:`ast` (nothing is
imported), and its imports of the package's own modules are drawn as a graph. A
cycle in that graph fails the test, named module by module.

Every import is drawn: those that run as a module loads and those inside a
function body, which run when the function is called. So no cycle stands, not
even one put off until a call: there is no exception. A late import of the
package's own modules is there to put off a cost (FastMCP, which only the
gateway extra installs; the benchmark's modules; cel-python for the
reference), and says why it waits in a comment.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from pathlib import Path

PACKAGE = "toolfilter_fast"
SOURCE = Path(__file__).resolve().parents[1] / "python"


def _modules() -> dict[str, Path | None]:
    """Every module of the package by dotted name; the path of its source, None for
    a stub (the Rust extension's ``_core.pyi``), which names a module but runs nothing."""
    modules: dict[str, Path | None] = {}
    for path in sorted((SOURCE / PACKAGE).rglob("*.py*")):
        if path.suffix not in (".py", ".pyi"):
            continue
        parts = list(path.relative_to(SOURCE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        if path.suffix == ".py":
            modules[name] = path
        else:
            modules.setdefault(name, None)
    return modules


def _imports(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement, and whether it is late (inside a function body)."""
    todo: list[tuple[ast.AST, bool]] = [(tree, False)]
    while todo:
        node, late = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, late
            continue
        inner = late or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        todo.extend((child, inner) for child in ast.iter_child_nodes(node))


def _says_why(lines: list[str], node: ast.stmt) -> bool:
    """A comment on the import's own line or on the line just above it."""
    own = lines[node.lineno - 1]
    above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
    return "#" in own or above.startswith("#")


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts))]


def _targets(modules: dict[str, Path | None], name: str, path: Path,
             node: ast.Import | ast.ImportFrom) -> set[str]:
    """The package's modules that one import statement of module ``name`` loads."""
    targets: set[str] = set()
    if isinstance(node, ast.Import):
        for alias in node.names:
            dotted = alias.name
            while dotted and dotted not in modules:
                dotted = dotted.rpartition(".")[0]
            if dotted:
                targets.add(dotted)
    else:
        if node.level:
            here = name if path.name == "__init__.py" else name.rpartition(".")[0]
            parts = here.split(".")
            parts = parts[: len(parts) - (node.level - 1)]
            base = ".".join([*parts, *([node.module] if node.module else [])])
        else:
            base = node.module or ""
        if base in modules:
            for alias in node.names:
                # `from X import Y`: the module X.Y when there is one, else a name X defines.
                submodule = f"{base}.{alias.name}"
                targets.add(submodule if submodule in modules else base)
    # Loading `a.b.c` loads the packages `a` and `a.b` first, but for this module's
    # own packages: those are loading already (they are how it was reached), or loaded.
    own = set(_ancestors(name))
    for target in list(targets):
        targets.update(package for package in _ancestors(target) if package not in own)
    targets.discard(name)
    return targets


def _graph(modules: dict[str, Path | None]) -> tuple[dict[str, set[str]], list[str]]:
    """Module -> the package's modules it imports, late imports too; and the late
    imports that do not say why they wait, as ``file:line``."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    unexplained: list[str] = []
    for name, path in modules.items():
        if path is None:
            continue
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node, late in _imports(ast.parse(text, str(path))):
            targets = _targets(modules, name, path, node)
            if late and targets and not _says_why(lines, node):
                unexplained.append(f"{path.relative_to(SOURCE)}:{node.lineno}")
            graph[name] |= targets
    return graph, sorted(unexplained)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The cycles of ``graph``: in each strongly connected part (Tarjan's algorithm),
    a shortest cycle through each of its modules, each cycle once."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    parts: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            part = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                part.append(member)
                if member == node:
                    break
            if len(part) > 1:
                parts.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    cycles: list[list[str]] = []
    seen: set[frozenset[tuple[str, str]]] = set()
    for part in sorted(parts):
        for start in part:
            cycle = _cycle_within(graph, set(part), start)
            edges = frozenset(itertools.pairwise(cycle))
            if edges not in seen:
                seen.add(edges)
                cycles.append(cycle)
    return cycles


def _cycle_within(graph: dict[str, set[str]], part: set[str], start: str) -> list[str]:
    """A shortest path from ``start`` back to itself inside one strongly connected part."""
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph[node] & part):
                if target == start:
                    return [*paths[node], start]
                if target not in paths:
                    paths[target] = [*paths[node], target]
                    following.append(target)
        frontier = following
    raise AssertionError(f"{start} is in no cycle")


def test_the_graph_sees_the_package():
    modules = _modules()
    graph, _ = _graph(modules)
    assert f"{PACKAGE}._core" in modules
    assert f"{PACKAGE}.reference" in modules
    assert f"{PACKAGE}.filter" in graph[PACKAGE], "the package's __init__ imports its parts"


def test_no_import_cycle():
    graph, _ = _graph(_modules())
    cycles = _cycles(graph)
    message = "\n".join("import cycle: " + " -> ".join(cycle) for cycle in cycles)
    assert not cycles, message


def test_a_late_import_is_drawn_too(tmp_path, monkeypatch):
    """A cycle closed by an import inside a function is a cycle: no comment
    lets it stand."""
    package = tmp_path / PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("def f():\n    # Late: a imports this module.\n"
                                  "    from . import a\n")
    monkeypatch.setitem(globals(), "SOURCE", tmp_path)
    graph, unexplained = _graph(_modules())
    assert unexplained == []
    assert _cycles(graph) == [[f"{PACKAGE}.a", f"{PACKAGE}.b", f"{PACKAGE}.a"]]


def test_a_late_import_says_why_it_waits():
    _, unexplained = _graph(_modules())
    assert not unexplained, (
        "a late import of the package's own modules without a comment saying why it "
        "waits: " + ", ".join(unexplained)
    )
