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
from typing import Any, Iterable, TextIO

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
                           "write a Python expression over state and msg, e.g. state['best'].get('p') == 'p1'") from None


def _eval(code: Any, state: dict, msg: dict) -> bool:
    # A local debugging console evaluating the user's own predicate, as gdb's
    # `condition` does; no builtins beyond a few harmless ones.
    env = {"__builtins__": {"len": len, "any": any, "all": all, "min": min, "max": max, "sorted": sorted}}
    try:
        return bool(eval(code, env, {"state": state, "msg": msg}))
    except (KeyError, IndexError, TypeError, AttributeError):
        return False


def execute(ls: Lockstep, line: str, out: TextIO) -> bool:
    """Run one command; False means quit."""
    if line.strip().lower().startswith("until"):
        # The predicate is Python: keep its quotes, split off only the node.
        words = line.strip().split(None, 2)
    else:
        words = shlex.split(line, comments=True)
    if not words:
        return True
    cmd, args = words[0].lower(), words[1:]

    def count() -> int:
        try:
            return int(args[0]) if args else 1
        except ValueError:
            raise ConsoleError(f"{cmd}: {args[0]!r} is not a number", f"write e.g. `{cmd} 3`") from None

    def node_arg() -> str:
        if not args or args[0] not in ls.hosts:
            raise ConsoleError(f"{cmd}: name a node ({', '.join(sorted(ls.hosts)[:8])}...)",
                               f"write e.g. `{cmd} {sorted(ls.hosts)[0]}`")
        return args[0]

    t0 = time.perf_counter()
    shown: list[Delivered] = []
    if cmd in ("event", "e", "step", "s"):
        for _ in range(count()):
            d = ls.step_event()
            if d is None:
                break
            shown.append(d)
    elif cmd in ("phase", "p"):
        for _ in range(count()):
            got = ls.step_phase()
            if not got:
                break
            shown.extend(got)
    elif cmd in ("group", "g"):
        for _ in range(count()):
            got = ls.step_group()
            if not got:
                break
            shown.extend(got)
    elif cmd == "until":
        node = node_arg()
        code = _compile(args[1] if len(args) > 1 else "False")
        host = ls.hosts[node]
        d = ls.run_until(lambda d: d.node == node and d.visible and
                         _eval(code, host.st.app.state(), _msg_view(d)))
        if d is None:
            out.write(f"predicate never held; run finished ({ls.steps} events)\n")
        else:
            shown.append(d)
            out.write(f"predicate holds at {node} after event {ls.steps}\n")
    elif cmd in ("print", "state"):
        names = sorted(ls.hosts) if args[:1] == ["all"] else [node_arg()]
        for n in names:
            out.write(f"{n}: {json.dumps(ls.hosts[n].st.app.state(), sort_keys=True)}\n")
        return True
    elif cmd == "routes":
        for n, r in sorted(ls.routes().items()):
            out.write(f"{n}: {json.dumps(r, sort_keys=True)}\n")
        return True
    elif cmd == "deliveries":
        n = node_arg()
        for rec in ls.hosts[n].records:
            out.write(f"  g{rec[0]} {rec[1]} {rec[2]} {rec[3]} {rec[4]}\n")
        return True
    elif cmd == "ordering":
        if not args:
            out.write(f"ordering {ls.ordering.name}\n")
            return True
        try:
            ls.set_ordering(args[0])
        except OrderingError as exc:
            raise ConsoleError(exc.problem, exc.fix) from None
        out.write(f"ordering is now {ls.ordering.name}\n")
        return True
    elif cmd == "status":
        out.write(f"group {ls.group}, phase {ls.phases} (level {ls.phase_level}), {ls.steps} events delivered, "
                  f"{ls.pending()} pending, ordering {ls.ordering.name}{', finished' if ls.done else ''}\n")
        return True
    elif cmd == "run":
        ls.run()
        out.write(f"finished: {ls.steps} events in {ls.phases} phases\n")
        return True
    elif cmd == "help":
        out.write(HELP + "\n")
        return True
    elif cmd in ("quit", "exit", "q"):
        return False
    else:
        raise ConsoleError(f"unknown command {cmd!r}", "type help for the list of commands")
    for d in shown[-20:]:
        out.write(d.words() + "\n")
    if len(shown) > 20:
        out.write(f"  ({len(shown) - 20} earlier events not shown)\n")
    if not shown and cmd != "until":
        out.write("nothing left to run\n")
    out.write(f"[{len(shown)} event(s), {(time.perf_counter() - t0) * 1000:.1f} ms]\n")
    return True


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
