"""The stepping console over a live daemon network (``netsleuth defined step --daemon``).

Commands (``help`` prints them)::

  event [N]        deliver the next N held messages, in the ordering function's order
  group [N]        deliver the rest of the current group (N groups), then gather the next
  held             list the held messages of the current group, in delivery order
  routes NODE      NODE's routing table, read from its daemon
  best NODE PREFIX NODE's best path to PREFIX
  orders           run every order of the current group's held messages (fresh runs)
                   and say whether the outcome depends on it
  ordering [NAME]  show or switch the ordering function (defined, hops, origin, reverse, random:SEED)
  status           group, messages delivered, messages held
  advance SECONDS  (virtual clock) move the clock on one second at a time; show the observer's route changes
  crash NODE       kill NODE's daemons (its links stay up, silent)
  quit
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Iterable
from typing import TextIO

from netsleuth.defined.daemons import explore
from netsleuth.defined.daemons.net import LiveNet
from netsleuth.defined.daemons.scenarios import DaemonScenario
from netsleuth.defined.ordering import OrderingError, by_name
from netsleuth.errors import NetsleuthError

HELP = __doc__.split("Commands (``help`` prints them)::", 1)[1].strip("\n")


class DaemonConsoleError(NetsleuthError):
    pass


class DaemonConsole:
    def __init__(self, n: LiveNet, sc: DaemonScenario, out: TextIO, quiet: float = 1.0) -> None:
        self.n = n
        self.sc = sc
        self.out = out
        self.quiet = quiet
        self.delivered: list[tuple] = []   # identities, in delivery order (what `orders` replays first)
        self.gathered = False

    def _gather(self) -> None:
        if not self.gathered:
            got = self.n.collect(quiet=self.quiet, expect=self.sc.expect if self.n.group == 0 else None)
            self.gathered = True
            self.out.write(f"group {self.n.group}: {len(got)} message(s) held\n")

    def _deliver(self, count: int) -> int:
        done = 0
        for _ in range(count):
            self._gather()
            pending = self.n.pending()
            if not pending:
                break
            h = self.n.deliver(pending[0].id)
            self.delivered.append(h.identity())
            self.out.write(f"  delivered {h.words()}\n")
            done += 1
        return done

    def event(self, args: list[str]) -> None:
        self._deliver(_count(args))

    def group(self, args: list[str]) -> None:
        for _ in range(_count(args)):
            self._gather()
            self._deliver(len(self.n.pending()))
            self.n.next_group()
            self.gathered = False

    def held(self, args: list[str]) -> None:
        self._gather()
        for h in self.n.pending():
            self.out.write(f"  {h.words()}\n")
        if not self.n.pending():
            self.out.write("  nothing held\n")

    def routes(self, args: list[str]) -> None:
        node = self._node(args)
        assert self.n.reader is not None
        self.out.write(f"{node}:\n")
        for prefix, rs in sorted(self.n.reader.routes(node).items()):
            for r in rs:
                self.out.write(f"  {prefix:18} {'*' if r.get('best') else ' '} {self.n.reader.label(r):4} "
                               f"{json.dumps({k: v for k, v in r.items() if k != 'best'}, sort_keys=True)}\n")

    def best(self, args: list[str]) -> None:
        node = self._node(args)
        prefix = args[1] if len(args) > 1 else self.sc.prefix
        assert self.n.reader is not None
        self.out.write(f"  {node}: best path to {prefix} is {self.n.reader.best(node, prefix)}\n")

    def orders(self, args: list[str]) -> None:
        self._gather()
        ids = [h.identity() for h in self.n.pending()]
        if not ids:
            self.out.write("  nothing held: no order to explore\n")
            return
        n_orders = _fact(len(ids))
        first = f", after the {len(self.delivered)} delivered so far" if self.delivered else ""
        self.out.write(f"  running {n_orders} order(s) of {len(ids)} message(s), each from a fresh start{first}\n")

        def shown(i: int, total: int, o: explore.Outcome) -> None:
            self.out.write(f"  order {i + 1}/{total}: {'-'.join(o.order)} -> {o.best} ({o.seconds:.1f} s)\n")

        outs = explore.all_orders(self.sc, self.n.daemon, shown, quiet=self.quiet, ids=ids, before=self.delivered)
        self.out.write(explore.verdict(self.sc, outs) + "\n")

    def ordering(self, args: list[str]) -> None:
        if args:
            try:
                self.n.ordering = by_name(args[0])
            except OrderingError as exc:
                raise DaemonConsoleError(exc.problem, exc.fix) from None
        self.out.write(f"ordering {self.n.ordering.name}\n")

    def status(self, args: list[str]) -> None:
        held = len(self.n.pending()) if self.gathered else 0
        self.out.write(f"group {self.n.group}, {len(self.delivered)} message(s) delivered, {held} held, "
                       f"ordering {self.n.ordering.name}, daemon {self.n.daemon}\n")

    def advance(self, args: list[str]) -> None:
        if self.n.clock is None:
            raise DaemonConsoleError("this network runs on the wall clock", "use --scenario rip")
        assert self.n.reader is not None
        from netsleuth.defined.daemons.rip import _view

        seconds = _count(args)
        before = _view(self.n.reader.routes(self.sc.observer), self.sc.prefix)
        for _ in range(seconds):
            self.n.advance(self.n.clock.now + 1)
            now = _view(self.n.reader.routes(self.sc.observer), self.sc.prefix)
            if now != before:
                shown = ", ".join(f"via {v} metric {m}" for v, m in now) or "no route"
                self.out.write(f"  t={self.n.clock.now:.0f} s: {self.sc.observer} {self.sc.prefix}: {shown}\n")
                before = now
        self.out.write(f"virtual time {self.n.clock.now:.0f} s\n")

    def crash(self, args: list[str]) -> None:
        node = self._node(args)
        self.n.crash(node)
        t = f" at virtual time {self.n.clock.now:.0f} s" if self.n.clock else ""
        self.out.write(f"  {node} crashed{t}\n")

    def help(self, args: list[str]) -> None:
        self.out.write(HELP + "\n")

    def _node(self, args: list[str]) -> str:
        names = [r.name for r in self.n.net.routers]
        if not args or args[0] not in names:
            raise DaemonConsoleError(f"name a router ({', '.join(names)})", f"write e.g. `routes {self.sc.observer}`")
        return args[0]


COMMANDS = {"event": "event", "e": "event", "step": "event", "s": "event", "group": "group", "g": "group",
            "held": "held", "routes": "routes", "best": "best", "orders": "orders", "ordering": "ordering",
            "status": "status", "help": "help", "advance": "advance", "crash": "crash"}


def _count(args: list[str]) -> int:
    try:
        return int(args[0]) if args else 1
    except ValueError:
        raise DaemonConsoleError(f"{args[0]!r} is not a number", "write e.g. `event 2`") from None


def _fact(k: int) -> int:
    f = 1
    for i in range(2, k + 1):
        f *= i
    return f


def run_daemon_console(n: LiveNet, sc: DaemonScenario, lines: Iterable[str], out: TextIO,
                       quiet: float = 1.0) -> int:
    """Execute console commands on a started LiveNet; a bad command prints ``error: ...`` (exit code 2)."""
    c = DaemonConsole(n, sc, out, quiet)
    out.write(f"{sc.name} on {n.daemon}: routers {', '.join(r.name for r in sc.net.routers)}; "
              f"observing {sc.prefix} at {sc.observer}; ordering {n.ordering.name}\n")
    code = 0
    for line in lines:
        words = shlex.split(line, comments=True)
        if not words:
            continue
        if words[0].lower() in ("quit", "exit", "q"):
            break
        name = COMMANDS.get(words[0].lower())
        try:
            if name is None:
                raise DaemonConsoleError(f"unknown command {words[0]!r}", "type help for the list of commands")
            t0 = time.perf_counter()
            getattr(c, name)(words[1:])
            if name in ("event", "group", "orders", "advance"):
                out.write(f"[{(time.perf_counter() - t0) * 1000:.1f} ms]\n")
        except DaemonConsoleError as exc:
            out.write(f"error: {exc.one_line()}\n")
            code = 2
        out.flush()
    return code
