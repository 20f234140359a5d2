"""The in-process substrate: simulated links, an event heap and virtual time.

One seeded ``random.Random`` draws every link delay, so a run is a pure
function of (network, scenario, mode, ordering, seed). Links are FIFO per
direction (as TCP is) with each message's delay drawn uniformly from
``mean * [1 - jitter, 1 + jitter]``. Nodes take ``proc_time`` per delivery
and ``restore_time`` per rollback, so rollbacks cost time as they would in
a real network.

Modes:

``plain``  deliver in arrival order; timers fire at simulated time.
           The nondeterministic baseline ("without DEFINED").
``rb``     DEFINED-RB (:mod:`.rollback`): beacons from one node advance
           groups every ``interval`` seconds, timers fire in virtual time,
           deliveries follow the ordering function, misorders roll back.

A run stops once no event is left: timers beyond the horizon group are never
released (RB) or scheduled (plain), beacons stop at the horizon.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from netsleuth.defined.message import START_OSEQ, Counters, Entry, Tags
from netsleuth.defined.node import Node
from netsleuth.defined.node_runtime import NodeRuntime
from netsleuth.defined.ordering import by_name
from netsleuth.defined.rollback import RBRuntime
from netsleuth.defined.topologies import Net

NodeFactory = Callable[[str], Node]


@dataclass
class SimConfig:
    mode: str = "rb"
    ordering: str = "defined"
    seed: int = 0
    interval: float = 0.25        # beacon interval = one unit of virtual time (the paper's 250 ms)
    horizon: int = 40             # last group (virtual time horizon * interval)
    jitter: float = 0.9
    proc_time: float = 0.00002    # 20 us per delivery
    restore_time: float = 0.00005
    hop_bound: int = 64
    window: int = 64              # groups kept for rollback
    checkpoint_every: int = 4     # deliveries between checkpoints
    tiebreak: str = "send-order"  # sidx scheme (node_runtime.TIEBREAKS); "hash" is the original, a baseline
    batch_rollback: bool = True   # a rollback's notices + re-sends to a neighbour travel as one packet
    beacon_source: str | None = None


@dataclass
class External:
    t: float
    node: str
    event: dict


@dataclass
class RunResult:
    mode: str
    ordering: str
    seed: int
    deliveries: dict[str, list[tuple]]
    routes: dict[str, dict]
    states: dict[str, dict]
    counters: dict[str, Counters]
    externals: list[dict]
    last_activity: float
    first_external: float | None
    events: int
    bug: bool | None = None
    extra: dict = field(default_factory=dict)

    def totals(self) -> dict:
        out: dict[str, int] = {}
        for c in self.counters.values():
            for k, v in c.to_json().items():
                out[k] = out.get(k, 0) + v
        return out


class PlainRuntime(NodeRuntime):
    """Arrival-order delivery: what the software does without DEFINED."""

    def __init__(self, *args, sim: Simulation, **kw) -> None:
        super().__init__(*args, **kw)
        self.sim = sim
        self.clock = 0.0
        self.records: list[tuple] = []

    def virtual_now(self, entry: Entry) -> float:
        return self.clock

    def _out_msg(self, e: Entry) -> Entry:
        self.counters.sends += 1
        self.sim.transmit(e, self.clock)
        return e

    def _out_timer(self, e: Entry, seconds: float) -> Entry:
        self.sim.schedule_timer(self, e, self.clock + seconds)
        return e

    def deliver(self, e: Entry) -> None:
        rec = self.dispatch(e)
        if rec is not None:
            self.records.append(rec)
        self.clock += self.sim.cfg.proc_time

    def delivery_sequence(self) -> list[tuple]:
        return list(self.records)


class Simulation:
    def __init__(self, net: Net, factory: NodeFactory, externals: list[External], cfg: SimConfig) -> None:
        if cfg.mode not in ("plain", "rb"):
            raise ValueError(f"mode must be plain or rb, not {cfg.mode!r}")
        self.net = net
        self.cfg = cfg
        self.rng = random.Random(cfg.seed)
        self.heap: list[tuple] = []
        self._seq = itertools.count()
        self._uid = itertools.count(1)
        self.now = 0.0
        self.last_arrival: dict[tuple[str, str], float] = {}
        self.externals = sorted(externals, key=lambda x: (x.t, x.node))
        self.recorded: list[dict] = []
        self.last_activity = 0.0
        self.events = 0
        delays = net.delays()
        self.mean = delays
        new_uid = self._uid.__next__
        common = dict(interval=cfg.interval, hop_bound=cfg.hop_bound, new_uid=new_uid, tiebreak=cfg.tiebreak)
        # PlainRuntime or RBRuntime by mode; the heap only holds the event kinds that mode's runtime takes
        self.hosts: dict[str, Any] = {}
        ordering = by_name(cfg.ordering)
        for n in net.nodes:
            if cfg.mode == "plain":
                h: NodeRuntime = PlainRuntime(n, factory(n), delays[n], rng_seed=f"{cfg.seed}:{n}", sim=self, **common)
            else:
                h = RBRuntime(n, factory(n), delays[n], rng_seed=f"defined:{n}", ordering=ordering, transport=self,
                           horizon=cfg.horizon, window=cfg.window, proc_time=cfg.proc_time,
                           restore_time=cfg.restore_time,
                           checkpoint_every=cfg.checkpoint_every, batch_rollback=cfg.batch_rollback, **common)
            self.hosts[n] = h
        self.beacon_seen = {n: 0 for n in net.nodes}
        self.baseline: dict[str, int] | None = None
        self.baseline_activity = 0.0
        self.beacon_source = cfg.beacon_source or net.nodes[0]

    # ----------------------------------------------------------- transport
    def _push(self, t: float, kind: str, *args) -> None:
        heapq.heappush(self.heap, (t, next(self._seq), kind, args))

    def _arrival(self, src: str, dst: str, depart: float) -> float:
        mean_s = self.mean[src][dst] / 1e6
        j = self.cfg.jitter
        t = depart + mean_s * self.rng.uniform(1 - j, 1 + j)
        t = max(t, self.last_arrival.get((src, dst), 0.0) + 1e-9)  # FIFO per direction
        self.last_arrival[(src, dst)] = t
        return t

    def transmit(self, e: Entry, depart: float) -> None:
        self._push(self._arrival(e.src, e.dst, depart), "msg", e)

    def transmit_anti(self, src: str, dst: str, uid: int, depart: float) -> None:
        self._push(self._arrival(src, dst, depart), "anti", dst, uid)

    def transmit_batch(self, src: str, dst: str, uids: list[int], entries: list[Entry], depart: float) -> None:
        self._push(self._arrival(src, dst, depart), "batch", dst, uids, entries)

    def schedule_timer(self, host: PlainRuntime, e: Entry, at: float) -> None:
        if at <= (self.cfg.horizon + 0.999) * self.cfg.interval:
            self._push(at, "timer", host.name, e)

    # ----------------------------------------------------------------- run
    def run(self) -> RunResult:
        cfg = self.cfg
        for x in self.externals:
            self._push(x.t, "ext", x.node, x.event)
        if cfg.mode == "rb":
            for g in range(1, cfg.horizon + 1):
                self._push(g * cfg.interval, "emit", g)
        for n, h in self.hosts.items():
            if isinstance(h, RBRuntime):
                h.start()
            else:
                h.deliver(Entry(next(self._uid), "start", n, n, Tags(0, 0, 0, n, START_OSEQ, "start", n, 0)))
        first_ext = self.externals[0].t if self.externals else None
        while self.heap:
            t, _, kind, args = heapq.heappop(self.heap)
            if first_ext is not None and t >= first_ext and self.baseline is None:
                # Costs so far belong to start-up; the bench reports what the events add.
                self.baseline = self._totals()
                self.baseline_activity = self.last_activity
            self.now = t
            self.events += 1
            if kind == "emit":
                self._beacon(self.beacon_source, args[0], None)
                continue
            if kind == "beacon":
                self._beacon(args[1], args[2], args[0])
                continue
            name = args[0].dst if kind == "msg" else args[0]
            h = self.hosts[name]
            h.clock = max(h.clock, t)
            if kind == "msg":
                h.arrive(args[0]) if isinstance(h, RBRuntime) else h.deliver(args[0])
            elif kind == "anti":
                h.anti(args[1])
            elif kind == "batch":
                h.receive_batch(args[1], args[2])
            elif kind == "timer":
                h.deliver(args[1])
            elif kind == "ext":
                self._external(h, args[1])
            self.last_activity = max(self.last_activity, h.clock)
        return self._result()

    def _beacon(self, node: str, g: int, frm: str | None) -> None:
        h = self.hosts[node]
        if frm is not None:
            h.counters.beacons += 1
        if g <= self.beacon_seen[node]:
            return
        self.beacon_seen[node] = g
        for nb in h.neighbors:
            if nb != frm and nb not in h.st.down:
                self._push(self._arrival(node, nb, self.now), "beacon", node, nb, g)
        h.clock = max(h.clock, self.now)
        before = h.counters.deliveries
        h.advance(g)
        if h.counters.deliveries != before:
            self.last_activity = max(self.last_activity, h.clock)

    def _external(self, h: PlainRuntime | RBRuntime, event: dict) -> None:
        if isinstance(h, RBRuntime):
            rec = h.external(event)
        else:
            g = int(self.now / self.cfg.interval)
            rec = {"node": h.name, "group": g, "oseq": len(self.recorded), "event": event}
            h.deliver(Entry(next(self._uid), "ext", h.name, h.name, Tags(g, 0, 0, h.name, rec["oseq"], "ext",
                                                                            h.name, 0), event))
        rec["t"] = round(self.now, 6)
        self.recorded.append(rec)

    def _totals(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for h in self.hosts.values():
            for k, v in h.counters.to_json().items():
                out[k] = out.get(k, 0) + v
        return out

    def _result(self) -> RunResult:
        hs = self.hosts
        return RunResult(
            mode=self.cfg.mode, ordering=self.cfg.ordering if self.cfg.mode == "rb" else "arrival",
            seed=self.cfg.seed,
            deliveries={n: h.delivery_sequence() for n, h in hs.items()},
            routes={n: h.st.app.routes() for n, h in hs.items()},
            states={n: h.st.app.state() for n, h in hs.items()},
            counters={n: h.counters for n, h in hs.items()},
            externals=self.recorded, last_activity=self.last_activity,
            first_external=self.externals[0].t if self.externals else None, events=self.events,
            extra={"baseline": self.baseline or self._totals(), "baseline_activity": self.baseline_activity})


def simulate(net: Net, factory: NodeFactory, externals: list[External], cfg: SimConfig) -> RunResult:
    return Simulation(net, factory, externals, cfg).run()
