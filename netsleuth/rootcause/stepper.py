"""Headless stepping through a trace: the state after each event, plus what-if inputs.

This is the engine of ``netsleuth step --headless`` (OFRewind's replay, STS's
"interactive replayer" without a controller): the switches get exactly the
OpenFlow commands the controller sent in the recording (via
:func:`netsleuth.world.rebuild.apply_event`), and the recorded inputs are
applied to the mock network, one event at a time. Between two recorded
events the user may inject inputs that never happened (a link failure, a
move, some traffic) and see what the tables would have done with them;
since no controller answers in this mode, whatever the switches send it
stays buffered and is shown as such.

No I/O here: the console (rootcause/step.py) renders what this returns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from netsleuth.errors import NetsleuthError
from netsleuth.invariants import registry
from netsleuth.invariants.forwarding import Finding
from netsleuth.rootcause.describe import nodes_of
from netsleuth.rootcause.stack_state import StackWatch, watch_events
from netsleuth.trace import schema as ts
from netsleuth.world.events import Effect, OnWire
from netsleuth.world.rebuild import apply_event, new_world
from netsleuth.world.world import World


class StepError(NetsleuthError):
    """A stepper command that cannot be carried out (bad argument, unknown node, ...)."""


@dataclass(frozen=True)
class EventFilter:
    """Which events a ``step N`` counts and prints: by kind, and by a switch or host they involve."""

    kinds: tuple[str, ...] = ()
    switches: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()

    @classmethod
    def parse(cls, words: list[str]) -> EventFilter:
        """``kind=host_migration,traffic switch=s3 host=h3`` (all optional; empty = everything)."""
        values: dict[str, tuple[str, ...]] = {"kind": (), "switch": (), "host": ()}
        for w in words:
            key, sep, val = w.partition("=")
            if not sep or key not in values or not val:
                raise StepError(f"bad filter term {w!r}", "use kind=K[,K...] switch=S[,S...] host=H[,H...]")
            values[key] = tuple(v for v in val.split(",") if v)
        unknown = [k for k in values["kind"] if k not in ts.EVENT_KINDS]
        if unknown:
            raise StepError(f"unknown event kind(s) {', '.join(unknown)}",
                            f"use one of: {', '.join(sorted(ts.EVENT_KINDS))}")
        return cls(values["kind"], values["switch"], values["host"])

    @property
    def empty(self) -> bool:
        return not (self.kinds or self.switches or self.hosts)

    def matches(self, e: ts.Event) -> bool:
        if self.kinds and e.kind not in self.kinds:
            return False
        if self.switches or self.hosts:
            nodes = set(nodes_of(e))
            if self.switches and not nodes & set(self.switches):
                return False
            if self.hosts and not nodes & set(self.hosts):
                return False
        return True

    def __str__(self) -> str:
        parts = [f"{k}={','.join(v)}" for k, v in (("kind", self.kinds), ("switch", self.switches),
                                                    ("host", self.hosts)) if v]
        return " ".join(parts) or "all events"


@dataclass
class Injected:
    """What one injected input caused: the input event and what the network then did."""

    events: list[ts.Event] = field(default_factory=list)


class StepperBase:
    """What the headless and the live stepper share: the trace, its target, the network's state."""

    trace: ts.Trace
    target: ts.Violation | None
    world: World

    @property
    def events(self) -> list[ts.Event]:
        return self.trace.events

    def resolve_invariants(self, names: str | None) -> list[registry.Invariant]:
        return resolve_invariants(self.target, names)

    def pending(self) -> list[str]:
        """Messages and packets in the mock network's channels, waiting to be delivered."""
        return self.world.describe_pending()

    def stack_watch(self) -> StackWatch:
        """The LLDP beacons the switches passed to the controller so far (Faucet's stack state)."""
        by_dpid = {sw.dpid: sw.name for sw in self.world.topology.switches}
        return watch_events(self.events[:getattr(self, "pos", 0)], by_dpid)

    def switch_buffers(self) -> dict[str, int]:
        """Packets each switch holds in its buffers (for a controller's PACKET_OUT by buffer id)."""
        return {name: len(s.buffers) for name, s in sorted(self.world.switches.items())}


class Stepper(StepperBase):
    """A trace, a position in it, and the mock network's state at that position."""

    unit = "events"

    def __init__(self, trace: ts.Trace, *, drain_limit: int = 10_000) -> None:
        self.trace = trace
        self.drain_limit = drain_limit
        self.filter = EventFilter()
        self.restart()

    def restart(self) -> None:
        """Back to before the first event; injected inputs are forgotten."""
        self.world = new_world(self.trace.header)
        self.conns: dict[int, int] = {}
        self.pos = 0
        self.injected: list[tuple[int, ts.Event]] = []  # (position, event) for `show injected`
        target = next((e for e in self.trace.events if isinstance(e, ts.Violation) and e.persistent), None)
        self.target = target

    # ------------------------------------------------------------ position
    @property
    def total(self) -> int:
        return len(self.events)

    @property
    def done(self) -> bool:
        return self.pos >= len(self.events)

    def read(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn`` on the state (the live stepper runs it on its network's loop)."""
        return fn(*args)

    def close(self) -> None:
        """Nothing to stop: no controller, no network running."""

    def peek(self, n: int = 1, filt: EventFilter | None = None) -> list[ts.Event]:
        """The next ``n`` events (that ``filt`` accepts) without applying them."""
        filt = filt or EventFilter()
        out = []
        for e in self.events[self.pos:]:
            if filt.matches(e):
                out.append(e)
                if len(out) >= n:
                    break
        return out

    def step(self) -> ts.Event:
        """Apply the next recorded event."""
        if self.done:
            raise StepError("the trace has no more events", "use `restart` to step through it again")
        e = self.events[self.pos]
        apply_event(self.world, self.conns, e)
        self.pos += 1
        return e

    def step_n(self, n: int, filt: EventFilter | None = None) -> list[ts.Event]:
        """Apply events until ``n`` that ``filt`` accepts have been applied; return those."""
        filt = filt or self.filter
        shown: list[ts.Event] = []
        while len(shown) < n and not self.done:
            e = self.step()
            if filt.matches(e):
                shown.append(e)
        return shown

    def run_until(self, stop_before: Callable[[ts.Event], bool]) -> ts.Event | None:
        """Apply events until the next one ``stop_before`` accepts (left unapplied); return it."""
        while not self.done:
            e = self.events[self.pos]
            if stop_before(e):
                return e
            self.step()
        return None

    def until_violation(self, invariants: list[registry.Invariant]) -> tuple[ts.Event | None, list[Finding]]:
        """Apply events until the rebuilt state violates one of ``invariants``.

        The state is checked before the first event too, so a violation an
        injected input caused is reported at once. Returns (the last event
        applied, findings); no findings means the trace ended without one.
        """
        last: ts.Event | None = self.events[self.pos - 1] if self.pos else None
        findings = self.check(invariants)
        while not findings and not self.done:
            last = self.step()
            # Only events that can change tables, ports or hosts need a new check.
            if isinstance(last, (ts.ControlToSwitch, ts.SwitchDisconnected, ts.SwitchConnected)) or (
                    last.is_input and not isinstance(last, ts.TrafficInjection)):
                findings = self.check(invariants)
        return last, findings

    # ------------------------------------------------------------ state
    def check(self, invariants: list[registry.Invariant]) -> list[Finding]:
        """The view-based invariants on the current state (observed ones need live packets)."""
        return registry.check(self.world.view(), [i for i in invariants if i.check is not None])

    # ------------------------------------------------------------ what-if inputs
    def inject(self, kind: str, args: list[str]) -> Injected:
        """Apply an input that is not in the trace (see :func:`inject_into`), then let the data plane run."""
        w = self.world
        got = Injected()
        sink, record_packets = w.record.sink, w.record_packets
        w.record.sink, w.record_packets = got.events.append, True
        try:
            inject_into(w, kind, args)  # effects (reconnects) need a controller: none here
            self._drain_dataplane()
        finally:
            w.record.sink, w.record_packets = sink, record_packets
        self.injected.extend((self.pos, e) for e in got.events if e.is_input)
        return got

    def _drain_dataplane(self) -> None:
        """Move packets until none is on a wire; control messages stay buffered (no controller)."""
        for _ in range(self.drain_limit):
            wire = next((ev for ev in self.world.enabled() if isinstance(ev, OnWire)), None)
            if wire is None:
                return
            self.world.fire(wire)


def resolve_invariants(target: ts.Violation | None, names: str | None) -> list[registry.Invariant]:
    """Named invariants; by default the trace's target violation's, else the static defaults."""
    if not names:
        inv = registry.REGISTRY.get(target.invariant) if target is not None else None
        if inv is not None and inv.check is not None:
            return [inv]
        return [i for i in registry.resolve(None) if i.check is not None]
    return registry.resolve(names)


def inject_into(w: World, kind: str, args: list[str]) -> list[Effect]:
    """Apply one what-if input named on the console to ``w``; the effects are for a live runtime.

    Kinds: link_failure A B | link_recovery A B (adjacent nodes, or NODE:PORT),
    switch_failure S | switch_recovery S, migration H S (or host_migration),
    traffic SRC DST [icmp|arp|tcp_syn].
    """
    if kind in ("link_failure", "link_recovery"):
        node, port = _link_end(w, args)
        return (w.fail_link if kind == "link_failure" else w.recover_link)(node, port)
    if kind in ("switch_failure", "switch_recovery"):
        s = _one(args, "SWITCH", w.switches)
        return (w.fail_switch if kind == "switch_failure" else w.recover_switch)(s)
    if kind in ("migration", "host_migration"):
        if len(args) != 2:
            raise StepError(f"{kind} takes HOST SWITCH", "e.g. `inject migration h3 s1`")
        host = _one(args[:1], "HOST", w.hosts)
        switch = _one(args[1:], "SWITCH", w.switches)
        return w.migrate_host(host, switch)
    if kind == "traffic":
        if len(args) not in (2, 3):
            raise StepError("traffic takes SRC DST [icmp|arp|tcp_syn]", "e.g. `inject traffic h1 h3`")
        src = _one(args[:1], "HOST", w.hosts)
        dst = _one(args[1:2], "HOST", w.hosts)
        what = args[2] if len(args) == 3 else "icmp"
        if what not in ("icmp", "arp", "tcp_syn"):
            raise StepError(f"unknown traffic kind {what!r}", "use icmp, arp or tcp_syn")
        w.inject_traffic(src, dst, what)
        return []
    raise StepError(f"cannot inject {kind!r}", "inject one of link_failure, link_recovery, switch_failure, "
                    "switch_recovery, migration, traffic")


def _one(args: list[str], what: str, known: dict[str, Any]) -> str:
    if len(args) != 1:
        raise StepError(f"expected one {what}, got {' '.join(args) or 'nothing'}",
                        f"name one {what.lower()}: {', '.join(sorted(known))}")
    if args[0] not in known:
        raise StepError(f"unknown {what.lower()} {args[0]!r}", f"use one of: {', '.join(sorted(known))}")
    return args[0]


def _link_end(w: World, args: list[str]) -> tuple[str, int]:
    """``A B`` (two adjacent nodes) or ``NODE:PORT`` -> one end of that link."""
    peer = w.peer
    if len(args) == 1 and ":" in args[0]:
        node, _, port = args[0].partition(":")
        if port.isdigit() and (node, int(port)) in peer:
            return node, int(port)
    elif len(args) == 2:
        for (end, end_port), (other, _) in sorted(peer.items()):
            if end == args[0] and other == args[1]:
                return end, end_port
    links = sorted(f"{a}:{p}-{b}" for (a, p), (b, _) in peer.items() if a < b)
    raise StepError(f"no link {' '.join(args)}", f"name two adjacent nodes (e.g. `s1 s2`) or NODE:PORT; "
                    f"links: {', '.join(links)}")
