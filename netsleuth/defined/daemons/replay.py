"""A daemon network driven by recorded external events on the virtual clock, every delivery watched.

:func:`run_events` starts the network (every OSPF, RIP message held at the
relay), boots it, then walks the virtual clock one second at a time: the
events of that second happen (a link is cut or mended at the relay, a
router's daemons are killed or started), then every daemon runs its timers
and every held message is delivered, one at a time, in the ordering
function's order, until the network is idle at that second.

A :class:`Watch` sees everything: after each delivery it reads the
receiver's kernel table (after each round of timers, every router's), keeps
the *delivery sequence* (time, sender, receiver, per-link number, kind and
a digest of the bytes) and every router's *routing-table history*, and
checks loops, blackholes and reachability (:mod:`.routecheck`) whenever a
table changed. Two runs of the same events are the same run when both
lists are equal -- what DEFINED promises, and what the tests measure.
A violation is *persistent* once it has held for ``persist`` virtual
seconds: shorter ones are the protocol converging (OSPF notices a cut link
only when its dead interval runs out).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from netsleuth.defined.daemons.events import ExtEvent
from netsleuth.defined.daemons.kroutes import KRoute, NetlinkTable, with_news
from netsleuth.defined.daemons.net import Held, LiveNet, LiveNetError
from netsleuth.defined.daemons.routecheck import Fibs, check
from netsleuth.defined.daemons.spec import DaemonNet
from netsleuth.defined.ordering import by_name
from netsleuth.invariants.finding import Finding
from netsleuth.invariants.persistence import finding_key


@dataclass
class Seen:
    """A violation's life: when it appeared, after which delivery, and when it went (None: still there)."""

    finding: Finding
    since: float
    after_delivery: int
    until: float | None = None
    startup: bool = False      # seen before the network first converged (counts only if it never clears)

    def lasted(self, now: float) -> float:
        return (self.until if self.until is not None else now) - self.since

    def to_json(self, now: float) -> dict:
        return {"invariant": self.finding.invariant, "message": self.finding.message, "since": self.since,
                "after_delivery": self.after_delivery, "until": self.until, "lasted": self.lasted(now),
                "startup": self.startup,
                "details": self.finding.details}


@dataclass
class DaemonRun:
    """What one run did: the comparison lists, the violations, and what it cost."""

    deliveries: list[list] = field(default_factory=list)
    history: dict[str, list[list]] = field(default_factory=dict)
    violations: list[Seen] = field(default_factory=list)
    virtual_seconds: float = 0.0
    wall_seconds: float = 0.0
    boot_seconds: float = 0.0           # wall time of the start-up (namespaces, daemons, first hellos)
    checks: int = 0
    stopped_early: bool = False
    converged_at: float | None = None   # virtual second of the first check with no violation

    def persistent(self, persist: float) -> list[Seen]:
        """Violations that held ``persist`` virtual seconds; the start-up's only if they never cleared."""
        return [v for v in self.violations if v.lasted(self.virtual_seconds) >= persist
                and (not v.startup or v.until is None)]

    def to_json(self, persist: float, full: bool = False) -> dict:
        d: dict = {"deliveries": len(self.deliveries), "virtual_seconds": self.virtual_seconds,
             "wall_seconds": round(self.wall_seconds, 3), "boot_seconds": round(self.boot_seconds, 3),
             "table_changes": sum(len(h) for h in self.history.values()), "checks": self.checks,
             "violations": len(self.violations), "converged_at": self.converged_at,
             "persistent": [v.to_json(self.virtual_seconds) for v in self.persistent(persist)]}
        if full:
            d["delivery_sequence"] = self.deliveries
            d["history"] = self.history
        return d


class Watch:
    """Kernel tables, the delivery sequence, the histories and the invariants of one run."""

    def __init__(self, n: LiveNet, check_invariants: bool = True) -> None:
        assert n.host is not None and n.clock is not None
        self.n = n
        self.clock = n.clock
        self.check_invariants = check_invariants
        self.tables = {r.name: NetlinkTable(n.host.ns[r.name].path) for r in n.net.routers}
        self.current: dict[str, list[KRoute]] = {}
        self.fibs: Fibs = {}     # the checks' lookup orders of the tables, kept while a table stays the same
        self.down: set[frozenset[str]] = set()
        self.run = DaemonRun(history={r.name: [] for r in n.net.routers})
        self.open: dict[tuple, Seen] = {}
        self.dirty = True
        self.converged_at: float | None = None

    def close(self) -> None:
        for t in self.tables.values():
            t.close()

    def _read(self, router: str) -> None:
        routes = self.tables[router].routes()
        if routes != self.current.get(router):
            self.current[router] = routes
            self.run.history[router].append([self.clock.now, len(self.run.deliveries), [r.words() for r in routes]])
            self.dirty = True

    def delivered(self, h: Held) -> None:
        m = h.messages[0] if h.messages else {}
        self.run.deliveries.append([self.clock.now, h.src, h.dst, h.tags.oseq, m.get("kind") or m.get("type", "?"),
                                    m.get("digest", "")])
        self._read(h.dst)
        self._check()

    def timers_ran(self) -> None:
        # only the tables the kernel has sent news of can have changed: one poll finds them
        news = with_news(self.tables)
        for r in self.n.net.routers:
            if r.name in news:
                self._read(r.name)
        self._check()

    def _check(self) -> None:
        if not self.check_invariants or not self.dirty:
            return
        self.dirty = False
        self.run.checks += 1
        now = self.clock.now
        found = {finding_key(f): f for f in check(self.n.net, self.current, self.down, self.fibs)}
        if not found and self.converged_at is None:
            self.converged_at = now
        for key in [k for k in self.open if k not in found]:
            self.open.pop(key).until = now
        for key, f in found.items():
            if key not in self.open:
                seen = Seen(f, now, len(self.run.deliveries), startup=self.converged_at is None)
                self.open[key] = seen
                self.run.violations.append(seen)

    def oldest_open(self) -> Seen | None:
        """The longest-standing violation since the network first converged."""
        return min((s for s in self.open.values() if not s.startup), key=lambda s: s.since, default=None)


def _apply(n: LiveNet, w: Watch, e: ExtEvent) -> None:
    if e.kind in ("link_down", "link_up"):
        up = e.kind == "link_up"
        n.set_link(e.a, e.b, up)
        (w.down.discard if up else w.down.add)(frozenset((e.a, e.b)))
        w.dirty = True
    elif e.kind == "crash" and e.a not in n.dead:
        n.crash(e.a)
    elif e.kind == "restart" and e.a in n.dead:
        n.restart(e.a)


def run_events(net: DaemonNet, events: list[ExtEvent], daemon: str = "bird", *, seed: int = 0,
               ordering: str = "defined", tail: int = 12, persist: float | None = None,
               check_invariants: bool = True, on_second: object = None) -> DaemonRun:
    """Replay ``events`` on a fresh network; run ``tail`` virtual seconds past the last one.

    With ``persist``, stop as soon as a violation has held that long (what ``fuzz`` looks for).
    ``on_second(t)`` is called after each virtual second (a progress bar).
    """
    if daemon != "bird":
        raise LiveNetError("external events on the virtual clock run on BIRD", "use --daemon bird")
    t0 = time.monotonic()
    todo = sorted(events)
    with LiveNet(net, daemon, by_name(ordering), hold=False, clocked=True, seed=seed) as n:
        assert n.clock is not None
        w = Watch(n, check_invariants)
        try:
            w.run.boot_seconds = time.monotonic() - t0
            n.on_delivery, n.on_poke = w.delivered, w.timers_ran
            n.settle()
            start = int(n.clock.now)
            end = max([start, *(e.t for e in todo)]) + tail
            for t in range(start + 1, end + 1):
                # The second's events first, while the clock still reads the last one: the network is
                # idle there, so no daemon runs a timer of this second before an event of it. (With the
                # clock moved first, a Hello due now went out before or after its link was cut as the
                # machine's load decided, and the link's later messages were numbered one apart.)
                while todo and todo[0].t <= t:   # an event before the boot ended happens right after it
                    _apply(n, w, todo.pop(0))
                n.clock.set(t)
                n.settle()
                if callable(on_second):
                    on_second(t)
                old = w.oldest_open()
                if persist is not None and old is not None and t - old.since >= persist:
                    w.run.stopped_early = True
                    break
            w.run.virtual_seconds = n.clock.now
            w.run.converged_at = w.converged_at
        finally:
            w.close()
    w.run.wall_seconds = time.monotonic() - t0
    return w.run
