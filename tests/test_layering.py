"""The layering rules of docs/CONTRACTS.md, checked on the import graph of ``netsleuth/``.

The graph is read with :mod:`ast`, never by importing anything: every
``import`` and ``from ... import`` statement counts, module level or inside a
function, relative ones (``from . import x``, ``from ..model import y``)
resolved against the importing module's package. ``from P import name``
points at the module ``P.name`` when that is a module of the tree, else at
``P``. Imports guarded by ``if TYPE_CHECKING:`` never run, so they are left
out of the circle checks; they still count for the layer order, since a
type-only dependency on a higher layer is a design dependency all the same.
Imports made from strings at run time (``importlib.import_module``) are not
seen.

The layer order is data: the fenced ``layers`` block of docs/CONTRACTS.md,
parsed here, so the document and the check cannot drift apart. A module's
*unit* is its top-level subpackage (``netsleuth.world.world`` -> ``core``) or,
for a top-level module, its name (``errors``, ``cli``, ``__init__`` for the
package itself). A unit may import itself and any unit of a lower line of the
block; units on the same line are peers and may not import one another.

Three checks, each failing with the offending edges (file:line):

* no circle between modules (strongly connected components of the module graph);
* no circle between units;
* no import of a unit from a higher line, or of a peer.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "netsleuth"
CONTRACTS = ROOT / "docs" / "CONTRACTS.md"


# ------------------------------------------------------------------ the checker
@dataclass(frozen=True, order=True)
class Edge:
    """One import statement of module ``src`` naming module ``dst``."""

    src: str
    dst: str
    file: str
    line: int
    type_checking: bool

    def where(self) -> str:
        return f"{self.file}:{self.line}: {self.src} -> {self.dst}"


def parse_layers(text: str) -> list[list[str]]:
    """The fenced ``layers`` block of a markdown text: one line per layer, lowest first; ``#`` starts a comment."""
    m = re.search(r"^```layers[ \t]*\n(.*?)^```", text, re.S | re.M)
    if m is None:
        raise AssertionError("no ```layers block in the contracts document")
    layers = []
    for raw in m.group(1).splitlines():
        names = raw.split("#", 1)[0].split()
        if names:
            layers.append(names)
    return layers


def _module_name(pkg_dir: Path, path: Path) -> str:
    parts = list(path.relative_to(pkg_dir.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement of the tree, with whether it sits under ``if TYPE_CHECKING:``."""
    out: list[tuple[ast.Import | ast.ImportFrom, bool]] = []

    def visit(node: ast.AST, guarded: bool) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append((node, guarded))
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, guarded)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, guarded)

    visit(tree, False)
    return out


def import_graph(pkg_dir: Path) -> tuple[set[str], list[Edge]]:
    """Modules of the package at ``pkg_dir`` and the import edges between them (to itself only)."""
    root = pkg_dir.name
    files = sorted(pkg_dir.rglob("*.py"))
    modules = {_module_name(pkg_dir, f): f for f in files}
    packages = {_module_name(pkg_dir, f) for f in files if f.name == "__init__.py"}
    edges: list[Edge] = []
    for mod, path in sorted(modules.items()):
        rel = str(path.relative_to(pkg_dir.parent))
        tree = ast.parse(path.read_text(), filename=rel)
        here = mod if mod in packages else mod.rpartition(".")[0]
        for node, guarded in _imports(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base_parts = here.split(".")
                    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                    base = ".".join(base_parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                for a in node.names:
                    full = f"{base}.{a.name}"
                    targets.append(full if full in modules else base)
            for t in targets:
                if t != root and not t.startswith(root + "."):
                    continue
                # The most specific module of the tree that the name designates.
                while t not in modules and "." in t:
                    t = t.rpartition(".")[0]
                if t in modules and t != mod:
                    edges.append(Edge(mod, t, rel, node.lineno, guarded))
    return set(modules), sorted(set(edges))


def unit_of(module: str) -> str:
    """``pkg.core.world`` -> ``core``; ``pkg.errors`` -> ``errors``; ``pkg`` -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _sccs(nodes: set[str], succ: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative, deterministic order)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(succ.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(succ.get(nxt, ())))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def module_circles(modules: set[str], edges: list[Edge]) -> list[list[Edge]]:
    """For each import circle between modules, the edges inside it (``TYPE_CHECKING`` imports left out)."""
    live = [e for e in edges if not e.type_checking]
    succ: dict[str, set[str]] = {}
    for e in live:
        succ.setdefault(e.src, set()).add(e.dst)
    return [[e for e in live if e.src in comp and e.dst in comp] for comp in _sccs(modules, succ)]


def unit_circles(edges: list[Edge], layers: list[list[str]]) -> list[list[Edge]]:
    """For each import circle between units (packages), the edges that close it.

    A circle cannot go only downward, so the edges named are its imports of a
    higher or peer unit (or of a unit the layers do not place): the ones to remove.
    """
    rank = {u: i for i, line in enumerate(layers) for u in line}
    live = [e for e in edges if not e.type_checking and unit_of(e.src) != unit_of(e.dst)]
    succ: dict[str, set[str]] = {}
    for e in live:
        succ.setdefault(unit_of(e.src), set()).add(unit_of(e.dst))
    units = {unit_of(e.src) for e in live} | {unit_of(e.dst) for e in live}

    def closing(e: Edge) -> bool:
        a, b = rank.get(unit_of(e.src)), rank.get(unit_of(e.dst))
        return a is None or b is None or b >= a

    return [[e for e in live if unit_of(e.src) in comp and unit_of(e.dst) in comp and closing(e)]
            for comp in _sccs(units, succ)]


def layer_violations(modules: set[str], edges: list[Edge], layers: list[list[str]]) -> list[str]:
    """Edges from a unit to a higher or peer unit, and units the layer block does not place."""
    rank = {u: i for i, line in enumerate(layers) for u in line}
    problems = [f"unit {u!r} (e.g. {m}) is on no line of the layers block"
                for u, m in sorted({unit_of(m): m for m in sorted(modules, reverse=True)}.items()) if u not in rank]
    for e in edges:
        a, b = unit_of(e.src), unit_of(e.dst)
        if a == b or a not in rank or b not in rank:
            continue
        if rank[b] > rank[a]:
            problems.append(f"{e.where()}  ({a} imports the higher layer {b})")
        elif rank[b] == rank[a]:
            problems.append(f"{e.where()}  ({a} imports its peer {b})")
    return problems


def _by_place(e: Edge) -> tuple[str, int]:
    return e.file, e.line


def check(pkg_dir: Path, layers: list[list[str]],
          graph: tuple[set[str], list[Edge]] | None = None) -> list[str]:
    """Every problem found, one line each (an empty list when the package keeps the rules);
    ``graph``: the package's :func:`import_graph`, when the caller has it already."""
    modules, edges = import_graph(pkg_dir) if graph is None else graph
    problems = []
    for circle in module_circles(modules, edges):
        mods = sorted({e.src for e in circle})
        problems.append(f"import circle between modules {', '.join(mods)}:")
        problems += [f"    {e.where()}" for e in sorted(circle, key=_by_place)]
    for circle in unit_circles(edges, layers):
        units = sorted({unit_of(e.src) for e in circle} | {unit_of(e.dst) for e in circle})
        problems.append(f"import circle between packages {', '.join(units)}, closed by:")
        problems += [f"    {e.where()}" for e in sorted(circle, key=_by_place)]
    problems += layer_violations(modules, edges, layers)
    return problems


# ------------------------------------------------------------------ the rules, on netsleuth
@pytest.fixture(scope="module")
def netsleuth_graph() -> tuple[set[str], list[Edge]]:
    """The package's import graph, parsed once for the tests that read it (a few CPU-seconds each time)."""
    return import_graph(PACKAGE)


def test_netsleuth_keeps_the_layering_rules(netsleuth_graph: tuple[set[str], list[Edge]]) -> None:
    problems = check(PACKAGE, parse_layers(CONTRACTS.read_text()), netsleuth_graph)
    assert not problems, "netsleuth breaks the layering rules of docs/CONTRACTS.md:\n" + "\n".join(problems)


def test_layers_block_names_each_unit_once() -> None:
    layers = parse_layers(CONTRACTS.read_text())
    names = [u for line in layers for u in line]
    assert len(names) == len(set(names)), f"a unit appears twice in the layers block: {names}"
    assert names[0] in ("errors", "__init__"), "the bottom line should hold errors and the package __init__"


# ------------------------------------------------------------------ the checker, on fake packages
def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    pkg = tmp_path / "pkg"
    for rel, text in files.items():
        p = pkg / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for d in [pkg, *[p for p in pkg.rglob("*") if p.is_dir()]]:
        (d / "__init__.py").touch()
    return pkg


FAKE_LAYERS = parse_layers("```layers\nerrors __init__\nlow\nmid1 mid2  # peers\nhigh\n```\n")


def test_checker_passes_a_package_that_keeps_the_rules(tmp_path: Path) -> None:
    pkg = _package(tmp_path, {
        "errors.py": "",
        "low/a.py": "from pkg.errors import X\nfrom . import b\n",
        "low/b.py": "import pkg\n",
        "mid1/m.py": "from ..low import a\n",
        "high/h.py": "def f():\n    from pkg.mid1.m import y\n    from pkg.mid2 import z\n",
    })
    assert check(pkg, FAKE_LAYERS) == []


def test_checker_reports_a_module_circle_with_file_and_line(tmp_path: Path) -> None:
    pkg = _package(tmp_path, {
        "low/a.py": "import os\nfrom pkg.low import b\n",
        "low/b.py": "def f():\n    from . import c\n",
        "low/c.py": "\n\nfrom .a import thing\n",
    })
    problems = check(pkg, FAKE_LAYERS)
    assert problems[0] == "import circle between modules pkg.low.a, pkg.low.b, pkg.low.c:"
    assert problems[1:] == ["    pkg/low/a.py:2: pkg.low.a -> pkg.low.b", "    pkg/low/b.py:2: pkg.low.b -> pkg.low.c",
                            "    pkg/low/c.py:3: pkg.low.c -> pkg.low.a"]


def test_checker_leaves_type_checking_imports_out_of_circles(tmp_path: Path) -> None:
    pkg = _package(tmp_path, {
        "low/a.py": "from pkg.low import b\n",
        "low/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.low import a\n",
    })
    assert check(pkg, FAKE_LAYERS) == []


def test_checker_reports_an_upward_import_and_a_peer_import(tmp_path: Path) -> None:
    pkg = _package(tmp_path, {
        "low/a.py": "def f():\n    import pkg.high.h\n",
        "mid1/m.py": "from pkg.mid2.n import q\n",
        "mid2/n.py": "",
        "high/h.py": "",
    })
    problems = check(pkg, FAKE_LAYERS)
    assert "pkg/low/a.py:2: pkg.low.a -> pkg.high.h  (low imports the higher layer high)" in problems
    assert "pkg/mid1/m.py:1: pkg.mid1.m -> pkg.mid2.n  (mid1 imports its peer mid2)" in problems
    assert len(problems) == 2


def test_checker_reports_a_circle_between_packages(tmp_path: Path) -> None:
    pkg = _package(tmp_path, {
        "mid1/m.py": "from pkg.mid2 import n\n",
        "mid2/n.py": "",
        "mid2/o.py": "from pkg.mid1.m import x\n",
    })
    problems = check(pkg, FAKE_LAYERS)
    assert problems[:3] == ["import circle between packages mid1, mid2, closed by:",
                            "    pkg/mid1/m.py:1: pkg.mid1.m -> pkg.mid2.n",
                            "    pkg/mid2/o.py:1: pkg.mid2.o -> pkg.mid1.m"]


def test_checker_names_the_upward_edge_that_closes_a_package_circle(tmp_path: Path) -> None:
    pkg = _package(tmp_path, {
        "high/h.py": "from pkg.low import a\n",
        "low/a.py": "",
        "low/b.py": "\n\nimport pkg.high.h\n",
    })
    problems = check(pkg, FAKE_LAYERS)
    assert problems[:2] == ["import circle between packages high, low, closed by:",
                            "    pkg/low/b.py:3: pkg.low.b -> pkg.high.h"]
    assert problems[2:] == ["pkg/low/b.py:3: pkg.low.b -> pkg.high.h  (low imports the higher layer high)"]


def test_checker_reports_a_unit_missing_from_the_layers(tmp_path: Path) -> None:
    pkg = _package(tmp_path, {"extra/x.py": "", "low/a.py": ""})
    assert check(pkg, FAKE_LAYERS) == ["unit 'extra' (e.g. pkg.extra) is on no line of the layers block"]


def test_world_takes_only_the_view_and_the_policies_from_invariants(
        netsleuth_graph: tuple[set[str], list[Edge]]) -> None:
    """The world builds NetworkViews and records the operator's policies; it runs no check itself."""
    _, edges = netsleuth_graph
    allowed = ("netsleuth.invariants.view", "netsleuth.invariants.policy.faucet", "netsleuth.invariants.policy.intent")
    wrong = [e.where() for e in edges
             if unit_of(e.src) == "world" and unit_of(e.dst) == "invariants" and e.dst not in allowed]
    assert not wrong, "the world imports checks of the invariants layer:\n" + "\n".join(wrong)
