"""The house's layers, as the "Writing a plugin" page draws them, are the layers the imports make.

The page lists archzoo's layers from the top down, each with the modules it holds; a module may import from its
own layer and the layers below, never from one above, and no set of modules imports itself round in a circle.
This test reads every ``import`` of src/ and plugins/ (those under ``if TYPE_CHECKING:`` excepted: they are never
run) and holds the code to the drawing: a new module must be placed on the page, and an import that climbs or
closes a circle fails here with the modules named.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "src" / "archzoo" / "site" / "docs" / "writing-plugins.md"
SOURCES = (ROOT / "src", ROOT / "plugins")


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for base in SOURCES:
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            if parts and not any(p.startswith(".") or p == "__pycache__" for p in parts):
                found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports (at any depth of its code, function bodies included)."""
    named: set[str] = set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]

    class Visitor(ast.NodeVisitor):
        def visit_If(self, node: ast.If) -> None:
            if _is_type_checking(node.test):
                for child in node.orelse:
                    self.visit(child)
            else:
                self.generic_visit(node)

        def visit_Import(self, node: ast.Import) -> None:
            named.update(alias.name for alias in node.names)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            named.add(base)
            named.update(f"{base}.{alias.name}" for alias in node.names)

    Visitor().visit(ast.parse(path.read_text(), str(path)))
    # ``from archzoo import hookspecs`` imports the module archzoo.hookspecs; the package is named only when one of
    # the names is not a module of its own (``from archzoo import __version__``)
    for target in list(named):
        package_part, _, _ = target.rpartition(".")
        if (
            target in modules
            and package_part in named
            and not any(other.startswith(package_part + ".") and other not in modules for other in named)
        ):
            named.discard(package_part)
    found = set()
    for target in named:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _layers() -> list[tuple[str, list[str]]]:
    """(layer, module patterns) from the page's drawing, top layer first."""
    text = PAGE.read_text()
    block = re.search(r"<!-- layers -->\s*```text\n(.*?)```\s*<!-- /layers -->", text, re.S)
    assert block, f"{PAGE.name} has no drawing of the layers between <!-- layers --> and <!-- /layers -->"
    layers = []
    for line in block.group(1).splitlines():
        if not line.strip() or set(line.strip()) <= set("|v^-"):
            continue
        label, sep, modules = line.partition(":")
        assert sep, f"a layer's line reads 'name: module module ...', got {line!r}"
        layers.append((label.strip(), modules.split()))
    return layers


def _layer_of(module: str, layers: list[tuple[str, list[str]]]) -> list[int]:
    return [i for i, (_, patterns) in enumerate(layers) if any(fnmatch.fnmatchcase(module, p) for p in patterns)]


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected sets of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1:
                    circles.append(sorted(members))
    return circles


def test_the_circle_finder_finds_a_circle():
    # the finder itself, on a graph with one circle of three and a module outside it
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle():
    circles = _circles(_graph())
    assert not circles, "modules that import each other round in a circle: " + "; ".join(
        " <-> ".join(c) for c in circles
    )


def test_every_module_is_on_exactly_one_layer():
    layers = _layers()
    wrong = {m: [layers[i][0] for i in _layer_of(m, layers)] for m in _graph()}
    wrong = {m: found for m, found in wrong.items() if len(found) != 1}
    assert not wrong, f"each module must be on one layer of {PAGE.name}'s drawing: " + ", ".join(
        f"{m} on {found or 'none'}" for m, found in sorted(wrong.items())
    )


def test_no_import_climbs_a_layer():
    layers = _layers()
    graph = _graph()
    climbs = []
    for module, targets in sorted(graph.items()):
        (own,) = _layer_of(module, layers) or (None,)
        for target in sorted(targets):
            (theirs,) = _layer_of(target, layers) or (None,)
            # layers are listed from the top down: a lower layer has a larger index
            if own is not None and theirs is not None and theirs < own:
                climbs.append(f"{module} ({layers[own][0]}) imports {target} ({layers[theirs][0]})")
    assert not climbs, "imports from a lower layer up to a higher one:\n" + "\n".join(climbs)
