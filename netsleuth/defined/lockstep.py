"""DEFINED-LS: lockstep replay of the recorded external events, one step at a time.

The coordinator runs the whole network in virtual time, one group at a
time. Within a group it alternates, across all nodes at once:

* a **transmission phase**: every message produced by the last processing
  phase moves from the senders' send buffers into the receivers' receive
  buffers;
* a **processing phase**: among the buffered entries of the current group,
  the smallest ordering *level* is chosen (see
  :mod:`netsleuth.defined.ordering`) and every node delivers its entries of
  that level, in key order, to its software.

Because a level strictly grows along causal chains, nothing that arrives
later can sort before what a phase delivers, so each node sees exactly the
key-sorted order DEFINED-RB converged to: LS reproduces RB from the external
events alone, without checkpoints or rollbacks. Switching the ordering
function mid-run explores other orders (the paper's section 4 discussion).

This module is sans-I/O: :class:`Lockstep` is a state machine with
``step_event``/``step_phase``/``step_group``/``run_until``; the console in
:mod:`netsleuth.defined.console` drives it.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from netsleuth.defined.message import START_OSEQ, Entry, Tags
from netsleuth.defined.node import Node
from netsleuth.defined.node_runtime import NodeRuntime
from netsleuth.defined.ordering import Ordering, by_name
from netsleuth.defined.topologies import Net


class LSRuntime(NodeRuntime):
    def __init__(self, *args: Any, coord: Lockstep, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.coord = coord
        self.records: list[tuple] = []
        self.last: Entry | None = None

    def _out_msg(self, e: Entry) -> Entry:
        self.counters.sends += 1
        self.coord.send_buffer.append(e)
        return e

    def _out_timer(self, e: Entry, seconds: float) -> Entry:
        if e.tags.group <= self.coord.horizon:
            self.coord.timers.append(e)
        return e

    def delivery_sequence(self) -> list[tuple]:
        return list(self.records)


@dataclass
class Delivered:
    node: str
    entry: Entry
    visible: bool

    def words(self) -> str:
        e = self.entry
        what = {"msg": f"message from {e.src}", "timer": f"timer {e.name}", "ext": "external event",
                "start": "start"}[e.kind]
        body = "" if e.kind in ("start", "timer") else f": {e.payload}"
        hidden = "" if self.visible else " (stale timer, not delivered)"
        return f"g{e.tags.group} {self.node} <- {what}{body}{hidden}"


class Lockstep:
    def __init__(self, net: Net, factory: Callable[[str], Node], externals: list[dict], *,
                 ordering: Ordering | str = "defined", horizon: int, interval: float = 0.25,
                 hop_bound: int = 64, tiebreak: str = "send-order") -> None:
        self.net = net
        self.horizon = horizon
        self.interval = interval
        self.ordering = by_name(ordering) if isinstance(ordering, str) else ordering
        self._uid = itertools.count(1)
        delays = net.delays()
        self.hosts: dict[str, LSRuntime] = {
            n: LSRuntime(n, factory(n), delays[n], interval=interval, hop_bound=hop_bound, tiebreak=tiebreak,
                      rng_seed=f"defined:{n}", new_uid=self._uid.__next__, coord=self)
            for n in net.nodes}
        # The receive buffers of all nodes, as one heap ordered by (level, node, key): a phase
        # pops the smallest level, so a step costs O(log n) per entry, not a scan of every buffer.
        self.heap: list[tuple] = []
        self._tie = itertools.count()
        self.send_buffer: list[Entry] = []
        self.timers: list[Entry] = []
        self.externals: list[Entry] = []
        for x in externals:
            n = x["node"]
            if n not in self.hosts:
                raise ValueError(f"external event at unknown node {n!r}")
            tags = Tags(int(x["group"]), 0, 0, n, int(x["oseq"]), "ext", n, 0)
            self.externals.append(Entry(next(self._uid), "ext", n, n, tags, x["event"]))
        for n in net.nodes:
            self._push(Entry(next(self._uid), "start", n, n, Tags(0, 0, 0, n, START_OSEQ, "start", n, 0)))
        self.group = 0
        self.queue: list[tuple[str, Entry]] = []
        self.phase_level: tuple | None = None
        self.phases = 0
        self.steps = 0
        self._release(0)

    # ------------------------------------------------------------ planning
    def _push(self, e: Entry) -> None:
        o = self.ordering
        heapq.heappush(self.heap, (o.level(e.tags), e.dst, o.key(e.tags), next(self._tie), e))

    def _release(self, g: int) -> None:
        for pool in (self.timers, self.externals):
            due = [e for e in pool if e.tags.group <= g]
            if due:
                pool[:] = [e for e in pool if e.tags.group > g]
                for e in due:
                    self._push(e)

    def _transmit(self) -> None:
        for e in self.send_buffer:
            self._push(e)
        self.send_buffer = []

    def _plan(self) -> bool:
        """Transmission phase, then choose the next processing phase. False when the run is over."""
        self._transmit()
        heap = self.heap
        while not heap or heap[0][0][0] > self.group:
            nxt = [e.tags.group for e in self.timers + self.externals]
            if heap:
                nxt.append(heap[0][0][0])
            if not nxt:
                self.phase_level = None
                return False
            self.group = max(self.group + 1, min(nxt))
            self._release(self.group)
        lam = heap[0][0]
        chosen = []
        while heap and heap[0][0] == lam:
            chosen.append(heapq.heappop(heap))
        chosen.sort(key=lambda x: (x[1], x[2]))
        self.queue = [(x[1], x[4]) for x in chosen]
        self.phase_level = lam
        self.phases += 1
        return True

    # ------------------------------------------------------------- stepping
    @property
    def done(self) -> bool:
        return not self.queue and not self.send_buffer and not self.timers and not self.externals and \
            not self.heap

    def step_event(self) -> Delivered | None:
        """Deliver one entry at one node; None when the run is over."""
        if not self.queue and not self._plan():
            return None
        n, e = self.queue.pop(0)
        h = self.hosts[n]
        rec = h.dispatch(e)
        if rec is not None:
            h.records.append(rec)
            h.last = e
        self.steps += 1
        return Delivered(n, e, rec is not None)

    def step_phase(self) -> list[Delivered]:
        """Finish the current processing phase (or run the next whole one)."""
        out: list[Delivered] = []
        if not self.queue and not self._plan():
            return out
        while self.queue:
            d = self.step_event()
            assert d is not None
            out.append(d)
        return out

    def step_group(self) -> list[Delivered]:
        """Run until every entry of the current group is delivered."""
        out: list[Delivered] = []
        g = None
        while True:
            if not self.queue:
                if not self._plan():
                    return out
                if g is None:
                    g = self.group
                elif self.group != g:
                    # The next group's first phase is planned but not run: undo nothing, just stop.
                    return out
            if g is None:
                g = self.group
            d = self.step_event()
            if d is None:
                return out
            out.append(d)

    def run_until(self, pred: Callable[[Delivered], bool], limit: int | None = None) -> Delivered | None:
        """Step events until ``pred(delivered)`` holds; returns that delivery or None at the end."""
        n = 0
        while limit is None or n < limit:
            d = self.step_event()
            if d is None:
                return None
            n += 1
            if pred(d):
                return d
        return None

    def run(self) -> None:
        while self.step_event() is not None:
            pass

    def set_ordering(self, ordering: Ordering | str) -> None:
        """Switch the ordering function; the current phase is re-planned with it."""
        self.ordering = by_name(ordering) if isinstance(ordering, str) else ordering
        entries = [e for _, e in self.queue] + [x[4] for x in self.heap]
        self.queue = []
        self.heap = []
        for e in entries:
            self._push(e)

    # ------------------------------------------------------------------ views
    def deliveries(self) -> dict[str, list[tuple]]:
        return {n: h.delivery_sequence() for n, h in self.hosts.items()}

    def routes(self) -> dict[str, dict]:
        return {n: h.st.app.routes() for n, h in self.hosts.items()}

    def states(self) -> dict[str, dict]:
        return {n: h.st.app.state() for n, h in self.hosts.items()}

    def pending(self) -> int:
        return len(self.queue) + len(self.send_buffer) + len(self.heap)
