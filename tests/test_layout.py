"""The import graph of memwiki's own modules: no cycles, and the design's direction (the core never imports the site;
builders read the store through `memwiki.source`, never `memwiki.store.store`).

Every import counts: module level, inside a function, under `if TYPE_CHECKING:`, and `importlib.import_module` of a
literal name. A cycle hidden in a function or behind TYPE_CHECKING is still two modules that cannot be understood,
tested or moved one without the other.
"""

from __future__ import annotations

import ast
import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "memwiki"
PACKAGE_DIR = Path(__file__).resolve().parents[1] / PACKAGE

STORE_MODULES = (
    "memwiki.store.store",
    "memwiki.store.reader",
    "memwiki.agents.store_thread",
)  # the store, and what holds one

# Edges of known cycles whose fix waits for files others are editing: (importer, imported as an fnmatch pattern) ->
# why it is a cycle and what ends it. Each must still close its cycle (test_pending_cycle_edges_are_still_needed).
PENDING_CYCLE_EDGES: dict[tuple[str, str], str] = {}  # cycles allowed for now, each with why and how it ends


@dataclass(frozen=True)
class Import:
    """One import statement of one module: where it is and how it is guarded."""

    line: int
    where: str  # "module", "function" or "TYPE_CHECKING"

    def __str__(self) -> str:
        return f"line {self.line} ({self.where})"


Graph = Mapping[str, Mapping[str, list[Import]]]  # importer -> imported -> the statements


def module_names(package_dir: Path = PACKAGE_DIR) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name, not `x.__init__`)."""
    names = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The dotted name `from .x import y` means inside `module`."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(module: str, source: str, known: Iterable[str], is_package: bool = False) -> dict[str, list[Import]]:
    """The modules among `known` that `source` (the text of `module`) imports, each with its statements.

    `from a.b import c` is an import of `a.b.c` when that is a module, else of `a.b`; `import a.b` is an import of
    `a.b` (the parent packages it runs on the way are not counted: every package importing its own submodules would be
    a cycle)."""
    known = set(known)
    found: dict[str, list[Import]] = {}

    def add(target: str, node: ast.AST, where: str) -> None:
        stmts = found.setdefault(target, []) if target in known and target != module else None
        if stmts is not None and Import(node.lineno, where) not in stmts:  # once per statement, not per name
            stmts.append(Import(node.lineno, where))

    def visit(node: ast.AST, where: str) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node, where)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, is_package, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                add(sub if sub in known else base, node, where)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            add(node.args[0].value, node, where)
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, "TYPE_CHECKING")
            for child in node.orelse:
                visit(child, where)
            return
        inner = "function" if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) else where
        for child in ast.iter_child_nodes(node):
            visit(child, inner if where == "module" else where)

    visit(ast.parse(source), "module")
    return found


def import_graph(package_dir: Path = PACKAGE_DIR) -> dict[str, dict[str, list[Import]]]:
    """Importer -> imported -> statements, over every module of the package."""
    names = module_names(package_dir)
    return {
        name: imports_of(name, path.read_text(encoding="utf-8"), names, is_package=path.name == "__init__.py")
        for name, path in names.items()
    }


def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted, in name order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph.get(node, {}):
            if succ not in index:
                connect(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(found)


def describe(graph: Graph, component: list[str]) -> str:
    """A cycle as the edges between its members, each with where its import statements are."""
    members = set(component)
    edges = [
        f"    {src} -> {dst}: {', '.join(map(str, stmts))}"
        for src in component
        for dst, stmts in sorted(graph[src].items())
        if dst in members
    ]
    return "\n".join([" <-> ".join(component), *edges])


def without(graph: Graph, edges: Iterable[tuple[str, str]]) -> dict[str, dict[str, list[Import]]]:
    """`graph` less the edges matching (importer, imported pattern)."""
    edges = list(edges)
    return {
        src: {
            dst: stmts
            for dst, stmts in targets.items()
            if not any(src == e_src and fnmatch.fnmatchcase(dst, e_dst) for e_src, e_dst in edges)
        }
        for src, targets in graph.items()
    }


# The house, from the ground up: a module may import its own floor and the floors below, never one above. The store
# folder has two floors: what every layer reads of the folder (settings, file names, limits) is below the layers;
# the `Store` that runs operations on them, its reader and the door that opens sources are above recall.
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("primitives", ("memwiki", "memwiki.errors", "memwiki.source", "memwiki.common")),
    ("store folder", ("memwiki.store.config", "memwiki.store.layout", "memwiki.store.limits",
                      "memwiki.store.damage", "memwiki.store.generation")),
    ("text", ("memwiki.text",)),
    ("layers", ("memwiki.layers",)),
    ("readers", ("memwiki.readers",)),
    ("recall", ("memwiki.recall",)),
    ("store", ("memwiki.store", "memwiki.store.store", "memwiki.store.reader", "memwiki.store.open_sources",
               "memwiki.store.demo")),  # (`memwiki.store` itself lends `Store` when asked: see its __init__)
    ("agents", ("memwiki.agents", "memwiki.hermes_provider")),
)  # fmt: skip


def floor(module: str) -> int:
    """The floor of a core module: its own name's or its closest package's (`memwiki.layers.hot.files`: layers)."""
    parts = module.split(".")
    for n in range(len(parts), 1 if len(parts) > 1 else 0, -1):  # (the package's own name holds only itself)
        name = ".".join(parts[:n])
        for level, (_, prefixes) in enumerate(FLOORS):
            if name in prefixes:
                return level
    raise AssertionError(f"{module}: on no floor of FLOORS (add its folder there)")


def is_core(module: str) -> bool:
    return not (module == f"{PACKAGE}.site" or module.startswith(f"{PACKAGE}.site."))


@pytest.fixture(scope="module")
def graph() -> dict[str, dict[str, list[Import]]]:
    return import_graph()


def test_the_graph_sees_every_module_and_known_imports(graph: Graph) -> None:
    """The walk finds the package (a wrong path would make every other test here pass on an empty graph)."""
    assert len(graph) > 40
    assert "memwiki.site.builders" in graph and "memwiki.store.store" in graph
    assert "memwiki.store.config" in graph["memwiki.store.store"]


def test_no_import_cycles(graph: Graph) -> None:
    found = cycles(without(graph, PENDING_CYCLE_EDGES))
    assert not found, "import cycles among memwiki's modules:\n" + "\n".join(describe(graph, c) for c in found)


def test_pending_cycle_edges_are_still_needed(graph: Graph) -> None:
    """An allowance for a cycle that is gone is a door left open: remove it."""
    stale = [edge for edge in PENDING_CYCLE_EDGES if not cycles(without(graph, set(PENDING_CYCLE_EDGES) - {edge}))]
    assert not stale


def test_core_does_not_import_the_site(graph: Graph) -> None:
    """memwiki/* outside site/ is the memory store; the wiki depends on it, never the reverse (the CLI does not build
    the wiki: `mkdocs build` runs the plugin, which imports the core)."""
    edges = [
        f"{src} -> {dst}: {', '.join(map(str, stmts))}"
        for src, targets in sorted(graph.items())
        if is_core(src)
        for dst, stmts in sorted(targets.items())
        if not is_core(dst)
    ]
    assert not edges, "the core imports the site:\n" + "\n".join(edges)


def test_builders_read_through_the_source_not_the_store(graph: Graph) -> None:
    """Builders see the store only through the read-only interface `memwiki.source`, never the store itself or what
    holds one."""
    edges = [
        f"{src} -> {dst}: {', '.join(map(str, stmts))}"
        for src, targets in sorted(graph.items())
        if src == "memwiki.site.builders" or src.startswith("memwiki.site.builders.")
        for dst, stmts in sorted(targets.items())
        if dst in STORE_MODULES
    ]
    assert not edges, "builders import the store:\n" + "\n".join(edges)


# The checker itself, on made-up modules: each of these would let a real cycle through if it were wrong.


def test_cycle_finder_on_a_made_up_graph() -> None:
    made_up = {
        "a": {"b": []},
        "b": {"c": []},
        "c": {"a": [], "d": []},  # a -> b -> c -> a
        "d": {"e": []},
        "e": {"d": []},  # d <-> e, reached from the first cycle
        "f": {"a": [], "f": []},  # into a cycle, and itself (not a cycle of modules)
        "g": {},
    }
    assert cycles(made_up) == [["a", "b", "c"], ["d", "e"]]
    assert cycles({"a": {"b": []}, "b": {}}) == []
    assert cycles(without(made_up, [("c", "?")])) == [["d", "e"]]  # c -> a and c -> d gone


def test_imports_in_functions_type_checking_and_submodules_all_count() -> None:
    known = {"p", "p.a", "p.b", "p.c", "p.d", "p.sub", "p.sub.e", "p.sub.f", "p.g"}
    source = """
from __future__ import annotations
from typing import TYPE_CHECKING
import importlib
from p.a import name
if TYPE_CHECKING:
    from p.b import Type
else:
    import os
def f():
    from p.sub import e, helper
    import p.c
class K:
    def m(self):
        from ..d import x
        return importlib.import_module("p.g")
from . import e
"""
    found = imports_of("p.sub.f", source, known)
    assert {target: [s.where for s in stmts] for target, stmts in found.items()} == {
        "p.a": ["module"],
        "p.b": ["TYPE_CHECKING"],
        "p.sub.e": ["function", "module"],  # `from p.sub import e` is the submodule p.sub.e
        "p.sub": ["function"],  # `helper` is a name in p.sub
        "p.c": ["function"],
        "p.d": ["function"],
        "p.g": ["function"],
    }
    assert [s.line for s in found["p.sub.e"]] == [11, 17]


def test_every_core_module_is_on_a_floor(graph: Graph) -> None:
    """A new folder or module outside every floor fails here, not silently outside the rules below."""
    for module in graph:
        if is_core(module):
            floor(module)


def test_core_imports_go_down_the_house_never_up(graph: Graph) -> None:
    """Layers below recall below the store below agents (FLOORS): recall never reaches for an agent, a layer never
    for recall, the primitives never for a layer."""
    edges = [
        f"{src} ({FLOORS[floor(src)][0]}) -> {dst} ({FLOORS[floor(dst)][0]}): {', '.join(map(str, stmts))}"
        for src, targets in sorted(graph.items())
        if is_core(src)
        for dst, stmts in sorted(targets.items())
        if is_core(dst) and floor(dst) > floor(src)
    ]
    assert not edges, "imports up the house:\n" + "\n".join(edges)


# What opens memory in place (a store, a hermes home, a palace, Chroma's file): the site's pipeline opens it through
# the one door, and everything else of the site reads what the gate lets through.
OPENERS = (
    "memwiki.store.open_sources",
    "memwiki.store.demo",
    "memwiki.readers.hermes",
    "memwiki.readers.mempalace",
    "memwiki.readers.combined",
    "memwiki.readers.chroma_file",
    "memwiki.readers.sqlite_ro",
)


def test_the_site_reads_memory_only_through_the_source_interface(graph: Graph) -> None:
    """The site never holds a `Store` nor calls an agent, and only its pipeline opens memory (`open_sources`, the
    demo): the rest reads a `memwiki.source.MemorySource` through the gate. (Helpers of the layers, text and recall
    are shared code, not reads: the entity types, the tokens, the ranking the browser mirrors.)"""
    edges = [
        f"{src} -> {dst}: {', '.join(map(str, stmts))}"
        for src, targets in sorted(graph.items())
        if not is_core(src)
        for dst, stmts in sorted(targets.items())
        if is_core(dst)
        and (
            dst in STORE_MODULES or floor(dst) == len(FLOORS) - 1 or (dst in OPENERS and src != "memwiki.site.pipeline")
        )
    ]
    assert not edges, "the site reads around the source interface:\n" + "\n".join(edges)


def test_the_floor_check_catches_an_import_up_the_house() -> None:
    """The rule itself, on a made-up edge: a layer importing recall is caught, recall importing a layer is not."""
    made_up = {"memwiki.layers.graph": {"memwiki.recall.cascade": [Import(1, "module")]}, "memwiki.recall.cascade": {}}
    up = [(s, d) for s, t in made_up.items() for d in t if floor(d) > floor(s)]
    assert up == [("memwiki.layers.graph", "memwiki.recall.cascade")]
    assert floor("memwiki.store.layout") < floor("memwiki.layers.hot.files") < floor("memwiki.store.store")
    with pytest.raises(AssertionError, match="on no floor"):
        floor("memwiki.kitchen")  # a new folder must be given a floor
