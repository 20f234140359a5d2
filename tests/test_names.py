"""One name per concept: no two classes of ``netsleuth/`` share a name.

Two classes called the same thing (two ``FlowMod``s, two ``Event``s) make a
reader -- and an import line -- guess which one is meant. The check reads every
module with :mod:`ast` (nothing is imported) and collects the classes defined
anywhere in it, nested ones included. A true re-export (``from a import X`` in
``b``) defines no class and never trips it; only a second ``class X`` does.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "netsleuth"

# Names allowed to be defined more than once, each with why. A class defined
# twice is a different concept by construction, so this stays empty unless a
# name is genuinely shared by design (say, one module re-defining another's
# class for a version switch); add an entry only with that reason beside it.
ALLOWED: dict[str, str] = {
    # The OpenFlow 1.3 pipeline (model/of13/) mirrors the 1.0 model's vocabulary on purpose:
    # the same concept, one class per protocol version, told apart by its package.
    "Output": "the output action, model.actions (1.0) and model.of13.actions (1.3)",
    "Emit": "a frame leaving the pipeline, model.switch (1.0) and model.of13.pipeline (1.3, with table id and cookie)",
}


def class_definitions(pkg: Path) -> dict[str, list[str]]:
    """Every class name defined under ``pkg``, with the ``file:line`` places that define it."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(pkg.rglob("*.py")):
        rel = path.relative_to(pkg.parent)
        for node in ast.walk(ast.parse(path.read_text(), filename=str(rel))):
            if isinstance(node, ast.ClassDef):
                where[node.name].append(f"{rel}:{node.lineno}")
    return where


def duplicates(pkg: Path, defs: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    return {name: places for name, places in sorted((class_definitions(pkg) if defs is None else defs).items())
            if len(places) > 1 and name not in ALLOWED}


@pytest.fixture(scope="module")
def netsleuth_classes() -> dict[str, list[str]]:
    """The package's class definitions, parsed once for the two tests that read them (a few CPU-seconds)."""
    return class_definitions(PACKAGE)


def test_no_two_classes_of_netsleuth_share_a_name(netsleuth_classes: dict[str, list[str]]) -> None:
    dups = duplicates(PACKAGE, netsleuth_classes)
    assert not dups, "classes sharing a name (rename one, for what it is):\n" + "\n".join(
        f"  {name}: {', '.join(places)}" for name, places in dups.items())


def test_allow_list_names_only_classes_still_defined_twice(netsleuth_classes: dict[str, list[str]]) -> None:
    defs = netsleuth_classes
    stale = [name for name in ALLOWED if len(defs.get(name, [])) < 2]
    assert not stale, f"allow-list entries no longer needed: {stale}"


def test_the_check_finds_a_duplicate_and_ignores_a_re_export(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("class Event:\n    pass\n")
    (pkg / "b.py").write_text("from pkg.a import Event\n\n\nclass Other:\n    pass\n")
    assert duplicates(pkg) == {}
    (pkg / "sub" / "c.py").write_text("def f():\n    class Event:\n        pass\n")
    assert duplicates(pkg) == {"Event": ["pkg/a.py:1", "pkg/sub/c.py:2"]}
