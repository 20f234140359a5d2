"""`netsleuth step TRACE`: an interactive console that replays a trace one event at a time.

Like OFRewind, and like STS's interactive replayer: step through what was
recorded, look at the flow tables, ports, buffered messages and host
locations after each step, check invariants, and inject inputs that never
happened to see whether the outcome changes. Built on Python's ``cmd`` so
the same commands work typed at a prompt or read from a file
(``--commands FILE``, one per line, ``#`` comments), which is how it is
tested. Output goes to stdout through rich (tables).

Two engines with the same interface: rootcause/stepper.py (``--headless``: the
recorded OpenFlow commands go to the switches, no controller; a step is one
recorded event) and rootcause/live_stepper.py (a fresh controller; a step
injects the trace's next input). ``open_console`` picks one per kind of
trace and mode, so other trace kinds (e.g. distributed control planes) can
plug in their own.
"""

from __future__ import annotations

import cmd
import json
import shlex
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from netsleuth.console import stdout_console
from netsleuth.errors import NetsleuthError
from netsleuth.invariants.policy.faucet import FaucetPolicy
from netsleuth.rootcause.describe import describe
from netsleuth.rootcause.stack_state import root_text
from netsleuth.rootcause.stepper import EventFilter, StepError, Stepper
from netsleuth.trace import schema as ts
from netsleuth.trace.io import read_header, read_trace

if TYPE_CHECKING:  # pragma: no cover
    from netsleuth.rootcause.live_stepper import LiveStepper

HELP = """commands:
  step [N]                 apply the next N events (that the filter accepts; default 1)
  until violation [INV,..] step until the state violates an invariant (default: the trace's target's)
  until FILTER             step up to (not including) the next event FILTER accepts, e.g. kind=host_migration
  until seq N              step up to (not including) event N
  filter FILTER | off      which events `step N` counts and prints: kind=K,.. switch=S,.. host=H,..
  show tables [SWITCH..]   flow tables            show ports [SWITCH..]  port states
  show hosts               host locations         show buffered          messages/packets not yet delivered
  show next [N]            the next N events      show event SEQ         one event as JSON
  show state               tables, ports, hosts and buffered at once
  check [INV,..]           run invariants on the current state
  inject KIND ARGS         link_failure A B | link_recovery A B | switch_failure S | switch_recovery S |
                           migration HOST SWITCH | traffic SRC DST [icmp|arp|tcp_syn]
  where                    the position in the trace
  restart                  back to the start (injected inputs are forgotten; headless only)
  quit
With a live controller (no --headless) a step is the trace's next input: `step` prints what the live run
did in response (its own seqs), while `until` and `show next` name the recorded inputs (the trace's seqs)."""


class CommandError(NetsleuthError):
    """An unknown or malformed console command."""


class StepConsole(cmd.Cmd):
    """The console; ``onecmd`` raises StepError/CommandError, ``run_script`` turns them into exit 2."""

    prompt = "(netsleuth step) "

    def __init__(self, stepper: Stepper | LiveStepper, out: Console, stdin: IO[str] | None = None) -> None:
        super().__init__(stdin=stdin)
        self.s = stepper
        self.out = out
        self.lineno = 0

    # ------------------------------------------------------------ plumbing
    def emptyline(self) -> bool:  # an empty line does nothing (cmd's default repeats the last command)
        return False

    def default(self, line: str) -> bool:  # type: ignore[override]  # never returns: raises for run_script
        raise CommandError(f"unknown command {line.split()[0]!r}",
                           "type `help` for the commands (step, until, filter, show, check, inject, where, quit)")

    def _print(self, text: str) -> None:
        self.out.print(text, markup=False, highlight=False, soft_wrap=True)

    def _line(self, e: ts.Event) -> str:
        return f"[{e.seq}] t={e.t:.3f} {describe(e)}"

    def _status(self) -> None:
        """The compact state after each step: entries per switch, host locations, what is buffered."""
        w = self.s.world
        tables = ", ".join(f"{n} {sw.flow_count}" for n, sw in sorted(w.switches.items()))
        moved = ", ".join(f"{h}@{s}:{p}" for h, (s, p) in sorted(w.host_at.items()))
        self._print(f"  at {self.s.pos}/{self.s.total} {self.s.unit} | flow entries: {tables} | hosts: {moved} | "
                    f"buffered: {len(self.s.pending())}")

    def run_script(self, lines: list[str]) -> None:
        """Run commands from a file; the first failing one is an error naming its line."""
        for self.lineno, raw in enumerate(lines, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            self._print(f"{self.prompt}{line}")
            try:
                if self.onecmd(line):
                    return
            except NetsleuthError as exc:
                raise CommandError(f"commands line {self.lineno}: {exc.problem}", exc.fix, exc.details) from None

    def cmdloop_safe(self) -> None:
        """Interactive loop: errors print one line and the console carries on."""
        while True:
            try:
                self.cmdloop()
                return
            except NetsleuthError as exc:
                self._print(f"error: {exc.one_line()}")
                self.intro = None
            except KeyboardInterrupt:
                self._print("")
                return

    # ------------------------------------------------------------ commands
    def do_help(self, arg: str) -> bool:
        self._print(HELP)
        return False

    def do_quit(self, arg: str) -> bool:
        return True

    do_exit = do_quit
    do_EOF = do_quit

    def do_where(self, arg: str) -> bool:
        nxt = self.s.peek(1)
        self._print(f"at {self.s.pos} of {self.s.total} {self.s.unit}; next: "
                    + (self._line(nxt[0]) if nxt else "end of trace") + f"; filter: {self.s.filter}")
        return False

    def do_restart(self, arg: str) -> bool:
        self.s.restart()
        self._print("restarted at the beginning of the trace")
        return False

    def do_step(self, arg: str) -> bool:
        n = _int(arg or "1", "step N")
        shown = self.s.step_n(n)
        for e in shown:
            self._print(self._line(e))
        if self.s.done:
            self._print(f"end of trace ({self.s.total} {self.s.unit})")
        self.s.read(self._status)
        return False

    do_s = do_step

    def do_until(self, arg: str) -> bool:
        words = arg.split()
        if not words:
            raise CommandError("until needs a condition", "use `until violation`, `until seq N` or `until kind=K`")
        if words[0] == "violation":
            invariants = self.s.resolve_invariants(words[1] if len(words) > 1 else None)
            last, findings = self.s.until_violation(invariants)
            names = ",".join(i.name for i in invariants)
            if findings:
                where = self._line(last) if last else "the start"
                self._print(f"violation after {where}")
                for f in findings:
                    self._print(f"  {_finding(f)}")
            else:
                self._print(f"end of trace: no violation of {names}")
            self.s.read(self._status)
            return False
        if words[0] == "seq":
            seq = _int(words[1] if len(words) > 1 else "", "until seq N")
            nxt = self.s.run_until(lambda e: e.seq >= seq)
        else:
            filt = EventFilter.parse(words)
            nxt = self.s.run_until(filt.matches)
        self._print(f"stopped before {self._line(nxt)}" if nxt else "end of trace")
        self.s.read(self._status)
        return False

    def do_filter(self, arg: str) -> bool:
        self.s.filter = EventFilter() if arg.strip() in ("", "off") else EventFilter.parse(arg.split())
        self._print(f"filter: {self.s.filter}")
        return False

    def do_check(self, arg: str) -> bool:
        invariants = self.s.resolve_invariants(arg.strip() or None)
        findings = self.s.check(invariants)
        self._print(f"check {','.join(i.name for i in invariants)} at {self.s.pos}: "
                    + ("ok" if not findings else f"{len(findings)} violation(s)"))
        for f in findings:
            self._print(f"  {_finding(f)}")
        return False

    def do_inject(self, arg: str) -> bool:
        words = shlex.split(arg)
        if not words:
            raise CommandError("inject needs a kind", "e.g. `inject link_failure s1 s2` (see `help`)")
        got = self.s.inject(words[0], words[1:])
        if not got.events:
            self._print(f"inject {arg}: nothing changed (already in that state)")
        for e in got.events:
            self._print(f"  injected: {describe(e)}")
        self.s.read(self._status)
        return False

    def do_show(self, arg: str) -> bool:
        words = arg.split()
        what, rest = (words[0], words[1:]) if words else ("state", [])
        read = self.s.read  # world state is read where the network runs (a live one has its own thread)
        if what == "tables":
            read(self._tables, rest)
        elif what == "ports":
            read(self._ports, rest)
        elif what == "hosts":
            read(self._hosts)
        elif what == "buffered":
            read(self._buffered)
        elif what == "state":
            read(self._tables, [])
            read(self._ports, [])
            read(self._hosts)
            read(self._buffered)
        elif what == "next":
            for e in self.s.peek(_int(rest[0] if rest else "5", "show next N"), self.s.filter):
                self._print(self._line(e))
        elif what == "event":
            seq = _int(rest[0] if rest else "", "show event SEQ")
            found = next((e for e in self.s.events if e.seq == seq), None)
            if found is None:
                last = self.s.events[-1].seq if self.s.events else -1
                raise CommandError(f"no event with seq {seq}", f"the trace's seqs run from 0 to {last}")
            self._print(json.dumps(ts.event_to_json(found), sort_keys=True))
        elif what == "injected":
            for pos, e in self.s.injected:
                self._print(f"at {pos}: {describe(e)}")
        else:
            raise CommandError(f"cannot show {what!r}",
                               "show tables|ports|hosts|buffered|state|next [N]|event SEQ|injected")
        return False

    # ------------------------------------------------------------ views
    def _switches(self, names: list[str]) -> list[str]:
        known = self.s.world.switches
        for n in names:
            if n not in known:
                raise StepError(f"unknown switch {n!r}", f"use one of: {', '.join(sorted(known))}")
        return names or sorted(known)

    def _tables(self, names: list[str]) -> None:
        w = self.s.world
        t = Table(title=f"flow tables at {self.s.pos}", show_lines=False)
        for col in ("switch", "priority", "match", "actions", "packets", "timeouts"):
            t.add_column(col, overflow="fold")
        names = self._switches(names)
        if any(w.switches[n].of13 is not None for n in names):
            self._tables13(names)
            return
        for name in names:
            entries = w.switches[name].table.entries()
            if not w.switch_up[name]:
                t.add_row(name, "", "(switch down)", "", "", "")
            elif not entries:
                t.add_row(name, "", "(empty)", "", "", "")
            for e in entries:
                acts = ",".join(str(a) for a in e.actions) or "drop"
                t.add_row(name, str(e.priority), str(e.match) or "*", acts, str(e.packet_count),
                          f"idle={e.idle_timeout} hard={e.hard_timeout}")
        self.out.print(t)

    def _tables13(self, names: list[str]) -> None:
        """OpenFlow 1.3 switches: the pipeline table by table, then its groups and meters."""
        w = self.s.world
        t = Table(title=f"flow tables at {self.s.pos}", show_lines=False)
        for col in ("switch", "table", "priority", "match", "instructions", "packets", "timeouts"):
            t.add_column(col, overflow="fold")
        extra: list[str] = []
        for name in names:
            sw = w.switches[name]
            if not w.switch_up[name]:
                t.add_row(name, "", "", "(switch down)", "", "", "")
                continue
            if sw.of13 is None:
                for e in sw.table.entries():
                    t.add_row(name, "0", str(e.priority), str(e.match) or "*",
                              ",".join(str(a) for a in e.actions) or "drop", str(e.packet_count),
                              f"idle={e.idle_timeout} hard={e.hard_timeout}")
                continue
            pipeline = sw.of13.pipeline
            entries = pipeline.tables.entries()
            if not entries:
                t.add_row(name, "", "", "(empty)", "", "", "")
            for e13 in entries:
                t.add_row(name, str(e13.table_id), str(e.priority), str(e13.match) or "*", e13.instructions.render(),
                          str(e13.packet_count), f"idle={e13.idle_timeout} hard={e13.hard_timeout}")
            for gid, g in sorted(pipeline.groups.groups.items()):
                extra.append(f"{name} group {gid} type={g.type} " + " ".join(b.render() for b in g.buckets))
            for mid, m in sorted(pipeline.meters.meters.items()):
                bands = ", ".join(f"type={b.type} rate={b.rate} burst={b.burst_size}" for b in m.bands)
                extra.append(f"{name} meter {mid} flags={m.flags} bands: {bands}")
        self.out.print(t)
        for line in extra:
            self._print(line)

    def _ports(self, names: list[str]) -> None:
        w = self.s.world
        switches = self._switches(names)
        policy = w.faucet_policy if isinstance(w.faucet_policy, FaucetPolicy) and w.faucet_policy.stack else None
        stack: dict[tuple[str, int], str] = {}
        if policy is not None:
            watch = self.s.stack_watch()
            rows = self.s.read(lambda: watch.rows(policy, w.clock.now(), switches))
            stack = {(r.switch, r.port): f"{r.state} (peer {r.peer}; LLDP {r.last_seen})" for r in rows}
        t = Table(title=f"ports at {self.s.pos}")
        for col in ("switch", "port", "link", "peer", "config") + (("faucet stack",) if policy else ()):
            t.add_column(col)
        for name in switches:
            for no, port in sorted(w.switches[name].ports.items()):
                peer = w.peer.get((name, no))
                t.add_row(name, str(no), "up" if port.usable else "down",
                          f"{peer[0]}:{peer[1]}" if peer else "-", str(port.config),
                          *((stack.get((name, no), ""),) if policy else ()))
        self.out.print(t)
        if policy is not None:
            self._print(f"faucet: {root_text(policy)}; a stack port is up while LLDP from its configured peer "
                        "came within max_lldp_lost x send_interval (15 s by default)")

    def _hosts(self) -> None:
        w = self.s.world
        t = Table(title=f"hosts at {self.s.pos}")
        for col in ("host", "switch", "port", "moved"):
            t.add_column(col)
        for h, (s, p) in sorted(w.host_at.items()):
            t.add_row(h, s, str(p), "yes" if (s, p) != w.topology.host_location(h) else "")
        self.out.print(t)

    def _buffered(self) -> None:
        pending = self.s.pending()
        self._print(f"buffered at {self.s.pos}: {len(pending)} message(s)/packet(s) not yet delivered"
                    + (" (no controller answers in headless mode)" if pending and self.s.unit == "events" else ""))
        for line in pending:
            self._print(f"  {line}")
        held = {n: k for n, k in self.s.switch_buffers().items() if k}
        if held:
            self._print("  packets in switch buffers: " + ", ".join(f"{n} {k}" for n, k in held.items()))


def _finding(f) -> str:
    """A violation as every command prints it (:func:`~netsleuth.invariants.violation_text.violation_lines`)."""
    from netsleuth.invariants.violation_text import violation_lines

    return "\n  ".join(violation_lines(f))


def _int(text: str, usage: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise CommandError(f"{usage}: {text or 'nothing'!r} is not a number", f"e.g. `{usage.replace('N', '3')}`")\
            from None
    if n < 0:
        raise CommandError(f"{usage}: {n} is negative", "give a number >= 0")
    return n


def open_console(trace_path: str | Path, out: Console, *, headless: bool = True, live_out: str | Path | None = None,
                 controller: list[str] | None = None, trust_trace_controller: bool = False,
                 openflow: str | None = None) -> StepConsole:
    """The console for a trace: one engine per kind of trace and mode.

    A netsleuth trace steps headlessly (rootcause/stepper.py) or against a live
    controller (rootcause/live_stepper.py); other kinds of trace can add theirs here.
    """
    trace = read_trace(trace_path)
    if headless:
        return StepConsole(Stepper(trace), out)
    from netsleuth.rootcause.live_stepper import LiveStepper

    target = Path(live_out) if live_out else Path(tempfile.mkdtemp(prefix="netsleuth-step-"))
    return StepConsole(LiveStepper(trace, target, controller, trust_trace_controller=trust_trace_controller,
                                   openflow=openflow), out)


def _prompt_lines() -> Iterator[str]:
    """Lines typed at a ``(step)`` prompt, until end of input or ``quit``."""
    while True:
        try:
            line = input("(step) ")
        except EOFError:
            return
        if line.strip() in ("quit", "exit", "q"):
            return
        yield line


def run_step(trace_path: str | Path, *, commands: str | Path | None = None, out: Console | None = None,
             headless: bool = True, live_out: str | Path | None = None, controller: list[str] | None = None,
             ordering: str | None = None, trust_trace_controller: bool = False,
             openflow: str | None = None) -> int:
    """``netsleuth step``: interactive, or the commands of a file with output to ``out``."""
    lines = None
    if commands is not None:
        try:
            lines = Path(commands).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise CommandError(f"cannot read commands file {commands}: {exc.strerror or exc}",
                               "pass a readable text file, one command per line") from None
    if "defined" in read_header(trace_path).extra:
        # A recorded DEFINED run: lockstep over its external events (netsleuth/defined/console.py).
        from netsleuth.defined.console import run_console
        return run_console(trace_path, lines if lines is not None else _prompt_lines(), sys.stdout, ordering)
    # Not a terminal (a file, a pipe, a test): wide enough that flow matches are not cut.
    out = out or stdout_console(pipe_width=160)
    console = open_console(trace_path, out, headless=headless, live_out=live_out, controller=controller,
                           trust_trace_controller=trust_trace_controller, openflow=openflow)
    try:
        if not headless:
            live_out_dir = console.s.out  # type: ignore[union-attr]  # live mode: a LiveStepper
            out.print(f"controller started; the live run is recorded in {live_out_dir}", markup=False,
                      highlight=False, soft_wrap=True)
        if lines is not None:
            console.run_script(lines)
            return 0
        console.intro = (f"stepping through {trace_path} ({console.s.total} {console.s.unit}"
                         f"{', headless' if headless else ', live controller'}); type help")
        console.cmdloop_safe()
        return 0
    finally:
        console.s.close()
