"""The LS stepping console: scriptable commands over a :class:`Lockstep`.

``run_console(path, command_lines, out, ordering)`` is the whole interface:
it loads a recorded DEFINED run, executes one command per line and writes
plain text to ``out``. ``netsleuth defined step`` (and its alias
``netsleuth step``) feed it lines from ``--commands FILE`` or stdin.

Commands (``help`` prints them)::

  event [N]          deliver the next N events (default 1)
  phase [N]          finish the current phase / run N transmission+processing phases
  group [N]          run to the end of the current group / of N groups
  until NODE EXPR    step until EXPR holds right after an event delivered at NODE;
                     EXPR is a Python expression over `state` (the node's state
                     dict) and `msg` (kind, src, payload, name, group of the event)
  print NODE|all     print a node's state (JSON)
  routes             print every routing table
  ordering NAME      switch the ordering function (defined, hops, origin, reverse, random:SEED)
  status             group, phase, events delivered, entries pending
  run                run to the end
  deliveries NODE    the node's delivery sequence so far
  quit
"""

from __future__ import annotations

import json
import os
import shlex
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TextIO

from netsleuth.defined.lockstep import Delivered, Lockstep
from netsleuth.defined.ordering import OrderingError, by_name
from netsleuth.defined.record import load_run
from netsleuth.errors import NetsleuthError


class ConsoleError(NetsleuthError):
    pass


HELP = __doc__.split("Commands (``help`` prints them)::", 1)[1].strip("\n")


def open_lockstep(path: str | os.PathLike[str], ordering: str | None = None) -> tuple[Lockstep, Any]:
    run = load_run(path)
    ls = Lockstep(run.scenario.net, run.scenario.factory, run.externals, ordering=by_name(ordering or run.ordering),
                  horizon=run.horizon, interval=run.interval, hop_bound=run.hop_bound,
                  tiebreak=run.tiebreak)
    return ls, run


def _msg_view(d: Delivered) -> dict:
    e = d.entry
    return {"kind": e.kind, "src": e.src, "payload": e.payload, "name": e.name, "group": e.tags.group,
            "delay": e.tags.delay, "origin": e.tags.origin}


def _compile(expr: str) -> Any:
    try:
        return compile(expr, "<until>", "eval")
    except SyntaxError as exc:
        raise ConsoleError(f"bad predicate {expr!r}: {exc.msg}",
                           "write a Python expression over state and msg, "
                           "e.g. state['best'].get('p') == 'p1'") from None


def _eval(code: Any, state: dict, msg: dict) -> bool:
    # A local debugging console evaluating the user's own predicate, as gdb's
    # `condition` does; no builtins beyond a few harmless ones.
    env = {"__builtins__": {"len": len, "any": any, "all": all, "min": min, "max": max, "sorted": sorted}}
    try:
        return bool(eval(code, env, {"state": state, "msg": msg}))
    except (KeyError, IndexError, TypeError, AttributeError):
        return False


@dataclass
class _Call:
    """One parsed command line and what its handler may use."""

    ls: Lockstep
    cmd: str
    args: list[str]
    out: TextIO

    def count(self) -> int:
        try:
            return int(self.args[0]) if self.args else 1
        except ValueError:
            raise ConsoleError(f"{self.cmd}: {self.args[0]!r} is not a number",
                               f"write e.g. `{self.cmd} 3`") from None

    def node(self) -> str:
        hosts = self.ls.hosts
        if not self.args or self.args[0] not in hosts:
            raise ConsoleError(f"{self.cmd}: name a node ({', '.join(sorted(hosts)[:8])}...)",
                               f"write e.g. `{self.cmd} {sorted(hosts)[0]}`")
        return self.args[0]


def _repeat(c: _Call, step: Callable[[], Any]) -> list[Delivered]:
    """Run ``step`` up to ``count`` times, collecting what it delivered, until it delivers nothing."""
    shown: list[Delivered] = []
    for _ in range(c.count()):
        got = step()
        if not got:
            break
        shown.extend(got if isinstance(got, list) else [got])
    return shown


def _event(c: _Call) -> list[Delivered]:
    return _repeat(c, c.ls.step_event)


def _phase(c: _Call) -> list[Delivered]:
    return _repeat(c, c.ls.step_phase)


def _group(c: _Call) -> list[Delivered]:
    return _repeat(c, c.ls.step_group)


def _until(c: _Call) -> list[Delivered]:
    node = c.node()
    code = _compile(c.args[1] if len(c.args) > 1 else "False")
    host = c.ls.hosts[node]
    d = c.ls.run_until(lambda d: d.node == node and d.visible and
                       _eval(code, host.st.app.state(), _msg_view(d)))
    if d is None:
        c.out.write(f"predicate never held; run finished ({c.ls.steps} events)\n")
        return []
    c.out.write(f"predicate holds at {node} after event {c.ls.steps}\n")
    return [d]


def _print(c: _Call) -> None:
    names = sorted(c.ls.hosts) if c.args[:1] == ["all"] else [c.node()]
    for n in names:
        c.out.write(f"{n}: {json.dumps(c.ls.hosts[n].st.app.state(), sort_keys=True)}\n")


def _routes(c: _Call) -> None:
    for n, r in sorted(c.ls.routes().items()):
        c.out.write(f"{n}: {json.dumps(r, sort_keys=True)}\n")


def _deliveries(c: _Call) -> None:
    for rec in c.ls.hosts[c.node()].records:
        c.out.write(f"  g{rec[0]} {rec[1]} {rec[2]} {rec[3]} {rec[4]}\n")


def _ordering(c: _Call) -> None:
    if not c.args:
        c.out.write(f"ordering {c.ls.ordering.name}\n")
        return
    try:
        c.ls.set_ordering(c.args[0])
    except OrderingError as exc:
        raise ConsoleError(exc.problem, exc.fix) from None
    c.out.write(f"ordering is now {c.ls.ordering.name}\n")


def _status(c: _Call) -> None:
    ls = c.ls
    c.out.write(f"group {ls.group}, phase {ls.phases} (level {ls.phase_level}), {ls.steps} events delivered, "
                f"{ls.pending()} pending, ordering {ls.ordering.name}{', finished' if ls.done else ''}\n")


def _run(c: _Call) -> None:
    c.ls.run()
    c.out.write(f"finished: {c.ls.steps} events in {c.ls.phases} phases\n")


def _help(c: _Call) -> None:
    c.out.write(HELP + "\n")


#: Commands that step the run: their deliveries are listed, with the time they took.
STEPPING: dict[str, Callable[[_Call], list[Delivered]]] = {
    "event": _event, "e": _event, "step": _event, "s": _event,
    "phase": _phase, "p": _phase,
    "group": _group, "g": _group,
    "until": _until,
}
#: Commands that only look or change settings: they write their own output.
LOOKING: dict[str, Callable[[_Call], None]] = {
    "print": _print, "state": _print, "routes": _routes, "deliveries": _deliveries, "ordering": _ordering,
    "status": _status, "run": _run, "help": _help,
}
QUIT = ("quit", "exit", "q")
SHOWN_AT_MOST = 20


def _words(line: str) -> list[str]:
    if line.strip().lower().startswith("until"):
        # The predicate is Python: keep its quotes, split off only the node.
        return line.strip().split(None, 2)
    return shlex.split(line, comments=True)


def execute(ls: Lockstep, line: str, out: TextIO) -> bool:
    """Run one command; False means quit."""
    words = _words(line)
    if not words:
        return True
    c = _Call(ls, words[0].lower(), words[1:], out)
    if c.cmd in QUIT:
        return False
    look = LOOKING.get(c.cmd)
    if look is not None:
        look(c)
        return True
    step = STEPPING.get(c.cmd)
    if step is None:
        raise ConsoleError(f"unknown command {c.cmd!r}", "type help for the list of commands")
    t0 = time.perf_counter()
    shown = step(c)
    _report(c, shown, time.perf_counter() - t0)
    return True


def _report(c: _Call, shown: list[Delivered], seconds: float) -> None:
    for d in shown[-SHOWN_AT_MOST:]:
        c.out.write(d.words() + "\n")
    if len(shown) > SHOWN_AT_MOST:
        c.out.write(f"  ({len(shown) - SHOWN_AT_MOST} earlier events not shown)\n")
    if not shown and c.cmd != "until":
        c.out.write("nothing left to run\n")
    c.out.write(f"[{len(shown)} event(s), {seconds * 1000:.1f} ms]\n")


def run_console(path: str | os.PathLike[str], command_lines: Iterable[str], out: TextIO,
                ordering: str | None = None) -> int:
    """Step a recorded DEFINED run with the given commands; returns an exit code.

    A bad command prints ``error: ...`` and the console goes on (a person at
    a prompt retyping is the common case); the exit code is then 2.
    """
    ls, run = open_lockstep(path, ordering)
    out.write(f"{run.scenario.name} on {run.scenario.net.spec}: {len(run.externals)} external events, "
              f"groups 0..{run.horizon}, ordering {ls.ordering.name}\n")
    code = 0
    for line in command_lines:
        try:
            if not execute(ls, line, out):
                break
        except ConsoleError as exc:
            out.write(f"error: {exc.one_line()}\n")
            code = 2
    return code
