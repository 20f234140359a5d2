"""Per-node runtime (:class:`NodeRuntime`) every substrate shares, its checkpointable state and ``ctx``.

:class:`NodeCheckpoint` is everything a rollback must restore -- the software's
own object, the timer table, the node's random generator and the links it
believes are down -- so a checkpoint is one ``pickle.dumps`` of it (the
in-process analogue of the paper's ``fork()``).
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from netsleuth.defined.message import TIMER_OSEQ, Counters, Entry, Tags, groups_for
from netsleuth.defined.node import Node

TIEBREAKS = ("send-order", "hash")
_K_BITS = 24  # sends per delivery told apart by the send-order tie-breaker (16M)


class CounterRandom:
    """A deterministic generator with a two-field state: draw i is a hash of (seed, i).

    ``random.Random`` would do, but its 2.5 KB state dominated every checkpoint.
    """

    __slots__ = ("seed", "n")

    def __init__(self, seed: str) -> None:
        self.seed = seed
        self.n = 0

    def random(self) -> float:
        self.n += 1
        h = hashlib.blake2b(f"{self.seed}|{self.n}".encode(), digest_size=8).digest()
        return (int.from_bytes(h, "big") >> 11) / float(1 << 53)

    def __getstate__(self) -> tuple[str, int]:
        return (self.seed, self.n)

    def __setstate__(self, st: tuple[str, int]) -> None:
        self.seed, self.n = st


@dataclass
class NodeCheckpoint:
    app: Node
    timers: dict[str, int] = field(default_factory=dict)  # name -> sidx of the live timer entry
    rng: CounterRandom = field(default_factory=lambda: CounterRandom(""))
    down: set[str] = field(default_factory=set)

    def snapshot(self) -> bytes:
        return pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL)

    @staticmethod
    def restore(blob: bytes) -> NodeCheckpoint:
        return pickle.loads(blob)


class Ctx:
    """The handle given to a handler while one entry is being delivered."""

    __slots__ = ("_host", "_entry", "node")

    def __init__(self, host: NodeRuntime, entry: Entry) -> None:
        self._host = host
        self._entry = entry
        self.node = host.name

    @property
    def now(self) -> float:
        return self._host.virtual_now(self._entry)

    @property
    def neighbors(self) -> list[str]:
        down = self._host.st.down
        return [n for n in self._host.neighbors if n not in down]

    def send(self, dst: str, payload: Any) -> None:
        self._host.send(self._entry, dst, payload)

    def set_timer(self, name: str, seconds: float, data: Any = None) -> None:
        self._host.set_timer(self._entry, name, seconds, data)

    def cancel_timer(self, name: str) -> None:
        self._host.st.timers.pop(name, None)

    def random(self) -> float:
        return self._host.st.rng.random()

    def link_cost(self, peer: str) -> int:
        return self._host.link_delay[peer]


class NodeRuntime:
    """One node's substrate: delivery dispatch, tagging, counters.

    Subclasses decide *when* entries are delivered (plain, RB, LS) and how
    sends and timers leave the node (``_out_msg``, ``_out_timer``).
    """

    def __init__(self, name: str, app: Node, link_delay: dict[str, int], *, interval: float,
                 hop_bound: int, rng_seed: str, new_uid: Callable[[], int], tiebreak: str = "send-order") -> None:
        if tiebreak not in TIEBREAKS:
            raise ValueError(f"tiebreak must be one of {TIEBREAKS}, not {tiebreak!r}")
        self.tiebreak = tiebreak
        self.name = name
        self.neighbors = sorted(link_delay)
        self.link_delay = link_delay
        self.interval = interval
        self.hop_bound = hop_bound
        self.new_uid = new_uid
        self.st = NodeCheckpoint(app=app, rng=CounterRandom(rng_seed))
        self.counters = Counters()
        self._sent_now: list[Entry] | None = None
        self._k = 0  # sends and timers so far in the current delivery

    def _child_sidx(self, parent: Entry) -> int:
        """A send's tie-breaker: a hash of its parent's tags, then its index in that delivery.

        Not a per-node counter: with a counter, replaying after a rollback
        renumbers every later send, so every rollback would cascade to every
        neighbour. This depends only on what caused the send.

        ``send-order`` (default) puts the send index ``k`` in the low bits, so
        the sends of one delivery to one neighbour -- which share every other
        key field -- sort in the order they were sent, which is the order a
        FIFO link delivers them in. ``hash`` (the original scheme, kept as a
        bench baseline) hashes ``k`` in with the parent, permuting them: an
        OSPF database exchange of N LSAs then arrived in a random order
        relative to the ordering, cost ~N/2 rollbacks at the receiver, and
        the ~N^2/4 replayed deliveries delayed its floods by tens of ms,
        which misordered them downstream (the cascade seen at 100 nodes).
        """
        self._k += 1
        if self._k >= 1 << _K_BITS:
            raise ValueError(f"{self.name} sent more than {1 << _K_BITS} messages in one delivery")
        t = parent.tags
        raw = f"{t.group}|{t.delay}|{t.hops}|{t.origin}|{t.oseq}|{t.root}|{t.sender}|{t.sidx}"
        if self.tiebreak == "hash":
            raw += f"|{self._k}"
        h = int.from_bytes(hashlib.blake2b(raw.encode(), digest_size=8).digest(), "big") >> 1
        return h if self.tiebreak == "hash" else (h << _K_BITS) | self._k

    # ----------------------------------------------------------- used by ctx
    def virtual_now(self, entry: Entry) -> float:
        return entry.tags.group * self.interval

    def send(self, parent: Entry, dst: str, payload: Any) -> None:
        if dst not in self.link_delay:
            raise ValueError(f"{self.name} has no link to {dst!r}")
        st = self.st
        sidx = self._child_sidx(parent)
        if dst in st.down:
            self.counters.dropped += 1
            return
        tags = parent.tags.child(self.name, sidx, self.link_delay[dst], self.hop_bound)
        e = self._out_msg(Entry(self.new_uid(), "msg", dst, self.name, tags, payload))
        if self._sent_now is not None:
            self._sent_now.append(e)

    def set_timer(self, parent: Entry, name: str, seconds: float, data: Any) -> None:
        st = self.st
        sidx = self._child_sidx(parent)
        tags = Tags(parent.tags.group + groups_for(seconds, self.interval), 0, 0, self.name, TIMER_OSEQ,
                    "timer", self.name, sidx)
        e = Entry(self.new_uid(), "timer", self.name, self.name, tags, data, name)
        st.timers[name] = sidx
        e = self._out_timer(e, seconds)
        if self._sent_now is not None:
            self._sent_now.append(e)

    def _out_msg(self, e: Entry) -> Entry:
        """Transmit ``e`` (count it in ``counters.sends``); return the entry that stands for it."""
        raise NotImplementedError

    def _out_timer(self, e: Entry, seconds: float) -> Entry:
        raise NotImplementedError

    # --------------------------------------------------------------- dispatch
    def dispatch(self, e: Entry) -> tuple | None:
        """Hand one entry to the software; return its record, or None if invisible (stale timer)."""
        st = self.st
        app = st.app
        ctx = Ctx(self, e)
        self._k = 0
        self.counters.deliveries += 1
        if e.kind == "msg":
            app.on_message(ctx, e.src, e.payload)
        elif e.kind == "timer":
            if st.timers.get(e.name) != e.tags.sidx:
                return None
            del st.timers[e.name]
            app.on_timer(ctx, e.name, e.payload)
        elif e.kind == "ext":
            ev = e.payload
            if ev.get("type") == "link_down":
                st.down.add(ev["peer"])
            elif ev.get("type") == "link_up":
                st.down.discard(ev["peer"])
            app.on_external(ctx, ev)
        elif e.kind == "start":
            app.on_start(ctx)
        else:  # pragma: no cover - entries are built here only
            raise ValueError(f"unknown entry kind {e.kind}")
        return e.record()
