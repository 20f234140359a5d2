"""Every command of the README and the tutorials runs, and reaches the finding the page promises.

A page's commands are the lines of its ```sh blocks that start with ``netsleuth`` or ``pytest`` (a
line ending in ``\\`` continues on the next). They run in order, in one temporary directory per page,
with ``netsleuth`` and ``pytest`` being this checkout's. What a page promises is written in it as HTML comments,
which the rendered page does not show:

* ``<!-- exit 0 1 0 -->`` right after a block: the exit codes of its commands, in order
  (without it, every command must exit 0);
* ``<!-- expect FILE PATH OP VALUE -->``: a JSON file the commands wrote holds the finding.
  PATH is dotted keys, ``[*]`` for every item of a list; OP is ``==``, ``>=``, ``<=`` or
  ``contains`` (the values found include VALUE);
* ``<!-- says TEXT -->``: the output of the last command so far contains TEXT;
* ``<!-- seeds 1 2 3 -->``: a command with ``--seed`` that does not exit as promised is run
  again with the next seed (real timing varies from machine to machine; the page says so).

A code block whose info string is ``{code-block} LANG`` with a ``:caption: NAME`` line is a
file the reader writes: it is written to NAME before the next command runs.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("*.md"))
FIRST_FINDING = ROOT / "docs" / "tutorials" / "app-developer.md"   # the README's three commands, explained
_FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```[ \t]*\n", re.S | re.M)
_COMMENT = re.compile(r"<!--\s*(exit|expect|seeds|says)\s+(.*?)\s*-->", re.S)


@dataclass
class Step:
    kind: str                       # "command" or "file"
    text: str                       # the command line, or the file's content
    name: str = ""                  # the file's name
    exit: int = 0
    says: list[str] = field(default_factory=list)


@dataclass
class Page:
    steps: list[Step] = field(default_factory=list)
    expects: list[tuple[str, str, str, str]] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)


def parse(text: str) -> Page:
    page = Page()
    pos = 0
    last_block: list[Step] = []
    for m in _FENCE.finditer(text):
        _comments(text[pos:m.start()], page, last_block)
        info, body = m.group(1).strip(), m.group(2)
        last_block = []
        if info == "sh":
            for command in _commands(body):
                last_block.append(Step("command", command))
        elif info.startswith("{code-block}"):
            cap = re.search(r"^:caption:\s*(\S+)\s*$", body, re.M)
            if cap:
                content = re.sub(r"\A(:\w+:.*\n)+\n?", "", body)
                last_block.append(Step("file", content, name=cap.group(1)))
        page.steps += last_block
        pos = m.end()
    _comments(text[pos:], page, last_block)
    return page


def _commands(body: str) -> list[str]:
    out, current = [], ""
    for raw in body.splitlines():
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        current += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            if current.strip().startswith(("netsleuth ", "pytest ")):
                out.append(" ".join(current.split()))
            current = ""
    return out


def _comments(chunk: str, page: Page, last_block: list[Step]) -> None:
    for kind, args in _COMMENT.findall(chunk):
        if kind == "exit":
            codes = [int(x) for x in args.split()]
            commands = [s for s in last_block if s.kind == "command"]
            assert len(codes) == len(commands), f"<!-- exit {args} --> after a block of {len(commands)} commands"
            for s, c in zip(commands, codes, strict=True):
                s.exit = c
        elif kind == "says":
            commands = [s for s in last_block if s.kind == "command"]
            assert commands, f"<!-- says {args} --> after no command"
            commands[-1].says.append(args)
        elif kind == "expect":
            file, path, op, value = args.split(None, 3)
            page.expects.append((file, path, op, value))
        else:
            page.seeds = [int(x) for x in args.split()]


def values(data: Any, path: str) -> list[Any]:
    found = [data]
    for part in re.findall(r"[^.\[\]]+|\[\*\]", path):
        nxt: list[Any] = []
        for d in found:
            if part == "[*]":
                nxt += list(d) if isinstance(d, list) else []
            elif isinstance(d, dict) and part in d:
                nxt.append(d[part])
        found = nxt
    return found


def _holds(found: list[Any], op: str, value: str) -> bool:
    want: Any = json.loads(value) if re.fullmatch(r"-?\d+(\.\d+)?|true|false|null", value) else value
    if op == "contains":
        return want in found
    if not found:
        return False
    return all({"==": lambda a: a == want, ">=": lambda a: a >= want, "<=": lambda a: a <= want}[op](a)
               for a in found)


def _run(command: str, cwd: Path, env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    argv = shlex.split(command)
    argv = [sys.executable, "-m", "netsleuth.cli" if argv[0] == "netsleuth" else "pytest", *argv[1:]]
    env = {**os.environ, "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ.get('PATH', '')}", **env_extra}
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=900, env=env)


@pytest.mark.real
@pytest.mark.slow
@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_page_s_commands_reach_its_finding(path: Path, tmp_path: Path,
                                               tmp_path_factory: pytest.TempPathFactory) -> None:
    page = parse(path.read_text())
    env: dict[str, str] = {}
    if path.name == "pox.md":   # the POX page's reader exported NETSLEUTH_POX, as it says
        from pox_checkout import pox_checkout

        env["NETSLEUTH_POX"] = str(pox_checkout(tmp_path_factory.getbasetemp().parent))
    commands = [s for s in page.steps if s.kind == "command"]
    assert commands, f"{path.name}: no netsleuth command to run"
    for step in page.steps:
        if step.kind == "file":
            (tmp_path / step.name).write_text(step.text)
            continue
        tries = [step.text]
        if "--seed " in step.text:
            tries += [re.sub(r"--seed \d+", f"--seed {s}", step.text) for s in page.seeds[1:]]
        for attempt in tries:
            proc = _run(attempt, tmp_path, env)
            if proc.returncode == step.exit:
                break
        assert proc.returncode == step.exit, (
            f"{path.name}: `{attempt}` exited {proc.returncode}, the page says {step.exit}\n"
            f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        for text in step.says:
            assert text in proc.stdout + proc.stderr, f"{path.name}: `{attempt}` does not say {text!r}"
    for file, jpath, op, value in page.expects:
        data = json.loads((tmp_path / file).read_text())
        found = values(data, jpath)
        assert _holds(found, op, value), f"{path.name}: {file} {jpath} {op} {value}: found {found[:10]}"


def test_the_readme_s_commands_are_the_first_tutorial_s() -> None:
    """The README's first finding is the first tutorial's, command for command and exit for exit, so
    running the tutorial (above) runs the README's commands too."""
    readme = [(s.text, s.exit) for s in parse(README.read_text()).steps if s.kind == "command"]
    tutorial = [(s.text, s.exit) for s in parse(FIRST_FINDING.read_text()).steps if s.kind == "command"]
    assert readme == tutorial and len(readme) == 3


def test_the_parser_reads_commands_exits_files_and_promises() -> None:
    page = parse(
        "text\n```sh\nnetsleuth run --out a   # a comment\nnetsleuth fuzz --seed 1 \\\n    --out b\nls\n```\n"
        "<!-- exit 0 1 -->\n<!-- seeds 1 2 -->\n<!-- says found it -->\n"
        "```{code-block} yaml\n:caption: x.yaml\n\nk: 1\n```\n"
        "<!-- expect b/result.json violations[*].invariant contains blackholes -->\n")
    assert [(s.kind, s.text, s.exit) for s in page.steps] == [
        ("command", "netsleuth run --out a", 0), ("command", "netsleuth fuzz --seed 1 --out b", 1),
        ("file", "k: 1\n", 0)]
    assert page.steps[2].name == "x.yaml" and page.steps[1].says == ["found it"]
    assert page.expects == [("b/result.json", "violations[*].invariant", "contains", "blackholes")]
    assert page.seeds == [1, 2]
    doc = {"violations": [{"invariant": "loops"}, {"invariant": "blackholes"}], "mcs": {"size": 2}}
    assert _holds(values(doc, "violations[*].invariant"), "contains", "blackholes")
    assert not _holds(values(doc, "violations[*].invariant"), "contains", "liveness")
    assert _holds(values(doc, "mcs.size"), "==", "2") and not _holds(values(doc, "mcs.size"), ">=", "3")
    assert not _holds(values(doc, "nothing.here"), "==", "2")
