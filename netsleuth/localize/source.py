"""The source behind ranked lines: the function each line is in, its text, the lines around it.

Reads the controller's files (they are on this machine: the controller
environments are local) and parses them with :mod:`ast`; a file that cannot
be read or parsed still gets its lines reported, without text or function.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

from netsleuth.localize.spectrum import Line, Run


@lru_cache(maxsize=256)
def _read(path: str) -> tuple[str, ...]:
    try:
        return tuple(Path(path).read_text(errors="replace").splitlines())
    except OSError:
        return ()


@lru_cache(maxsize=256)
def _functions(path: str) -> tuple[tuple[int, int, str], ...]:
    """(first line, last line, qualified name) of every function and class body, outermost first."""
    text = "\n".join(_read(path))
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return ()
    found: list[tuple[int, int, str]] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                found.append((start, child.end_lineno or child.lineno, name))
                walk(child, name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    return tuple(found)


@lru_cache(maxsize=256)
def _calls(path: str) -> dict[str, frozenset[str]]:
    """For each function of the file (qualified name), the bare names it calls (``self.f(...)``, ``f(...)``)."""
    text = "\n".join(_read(path))
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    out: dict[str, frozenset[str]] = {}
    for start, _end, name in _functions(path):
        node = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and n.lineno <= start + 64 and n.name == name.rsplit(".", 1)[-1]
                     and min([n.lineno, *(d.lineno for d in n.decorator_list)]) == start), None)
        if node is None:
            continue
        called = set()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                f = sub.func
                called.add(f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else "")
        out[name] = frozenset(called - {""})
    return out


@lru_cache(maxsize=256)
def _statement_starts(path: str) -> dict[int, int]:
    """For every line of a statement that spans several, the statement's first line.

    Python 3.11's tracer reports some continuation lines of a multi-line statement (a call's
    arguments on the next line) as lines of their own, run by exactly the runs that run its first
    line; coverage.py's reports fold them into the statement, and so does the ranking: one
    statement is one candidate, not three tied ones ahead of the next statement."""
    try:
        tree = ast.parse("\n".join(_read(path)))
    except (SyntaxError, ValueError):
        return {}
    starts: dict[int, int] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        body = getattr(node, "body", None)
        end = (min(n.lineno for n in body) - 1 if body else node.end_lineno) or node.lineno
        for n in range(node.lineno + 1, max(end, node.lineno) + 1):
            starts.setdefault(n, node.lineno)
    return starts


def statement_of(path: str, line: int) -> int:
    """The first line of the statement ``line`` belongs to (itself when it starts one, or is unknown)."""
    return _statement_starts(path).get(line, line)


def statement(line: Line) -> Line:
    """``line`` as the first line of its statement."""
    return line[0], statement_of(line[0], line[1])


def by_statement(runs: list[Run]) -> list[Run]:
    """The runs with every line (and both ends of every flow) folded into its statement's first line."""
    fold = statement
    return [Run(r.failed, frozenset(fold(x) for x in r.lines), frozenset((fold(a), fold(b)) for a, b in r.flows))
            for r in runs]


def execution_order(lines: list[tuple[str, int]]) -> dict[tuple[str, int], tuple[int, str, int]]:
    """A key per line that puts a caller's lines before its callees' (among the functions of ``lines``),
    then source order: coverage keeps no order of execution, and a handler runs before the helper it calls."""
    funcs = {(f, function_of(f, n)) for f, n in lines}
    callees: dict[tuple[str, str], set[tuple[str, str]]] = {fn: set() for fn in funcs}
    for f, name in funcs:
        called = _calls(f).get(name, frozenset())
        for g, other in funcs:
            if (g, other) != (f, name) and other.rsplit(".", 1)[-1] in called:
                callees[(f, name)].add((g, other))
    depth: dict[tuple[str, str], int] = {}
    for fn in sorted(funcs):  # longest chain of callers above each function (cycles cut where met)
        stack = [(fn, 0, frozenset([fn]))]
        while stack:
            cur, d, seen = stack.pop()
            for nxt in callees[cur]:
                if nxt not in seen and depth.get(nxt, -1) < d + 1:
                    depth[nxt] = d + 1
                    stack.append((nxt, d + 1, seen | {nxt}))
    return {(f, n): (depth.get((f, function_of(f, n)), 0), f, n) for f, n in lines}


def function_of(path: str, line: int) -> str:
    """The innermost function (or class) holding ``line``, or ``<module>``."""
    best = "<module>"
    for start, end, name in _functions(path):
        if start <= line <= end:
            best = name  # outer ones come first: the last match is the innermost
    return best


def line_text(path: str, line: int) -> str:
    lines = _read(path)
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def context(path: str, line: int, around: int = 3) -> list[tuple[int, str]]:
    """``around`` lines either side of ``line``, numbered."""
    lines = _read(path)
    lo, hi = max(1, line - around), min(len(lines), line + around)
    return [(n, lines[n - 1]) for n in range(lo, hi + 1)]


def short_path(path: str) -> str:
    """A path as people say it: from the package on inside an environment, else as given."""
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in path:
            return path.split(marker, 1)[1]
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


__all__ = ["by_statement", "context", "execution_order", "function_of", "line_text", "short_path", "statement",
           "statement_of"]
