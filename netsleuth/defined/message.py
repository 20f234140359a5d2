"""Message tags and deliverable entries.

Every event a node's software sees -- its start, an external event, a timer
firing or a message from a neighbour -- is an :class:`Entry` carrying
:class:`Tags`. The tags are the paper's annotations (section 2.2): the
*group* (timestep, from beacons), the *estimated delay* from the origin
(sum of the configured mean link delays along the causal chain, in integer
microseconds so that RB and LS add them up bit-identically), the *origin*
node and its *sequence number*, plus what this implementation needs for a
strict total order: the causal chain length (``hops``), the immediate
*sender* and ``sidx``, a hash of the parent entry's tags and the send's
index within that delivery.

Why ``sender``/``sidx``: two messages can share (group, delay, origin, oseq)
-- the same external event reaching a node along two equal-delay paths, or
one delivery emitting two messages. The sender and ``sidx`` break those ties
deterministically, and ``sidx`` depends only on what caused the send, so a
replay after a rollback regenerates the very same tags for every message it
sends again (see lazy cancellation in :mod:`netsleuth.defined.rollback`).
Its low bits are the send's index within the delivery, so one delivery's
sends to a neighbour sort in the order the FIFO link delivers them
(:meth:`netsleuth.defined.node_runtime.NodeRuntime._child_sidx`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

START_OSEQ = -2
TIMER_OSEQ = -1


@dataclass(frozen=True, slots=True)
class Tags:
    group: int
    delay: int
    hops: int
    origin: str
    oseq: int
    root: str  # "start" | "ext" | "timer": what began the causal chain
    sender: str
    sidx: int

    def child(self, sender: str, sidx: int, link_delay: int, hop_bound: int) -> Tags:
        """Tags of a message sent while processing an entry tagged ``self``.

        Same group, origin and sequence; delay grows by the link's mean delay.
        A chain longer than ``hop_bound`` continues in the next group (the
        paper bounds causal chains per timestep to avoid long rollback chains).
        """
        if self.hops + 1 > hop_bound:
            return Tags(self.group + 1, link_delay, 1, self.origin, self.oseq, self.root, sender, sidx)
        return Tags(self.group, self.delay + link_delay, self.hops + 1, self.origin, self.oseq, self.root,
                    sender, sidx)

    def to_json(self) -> list:
        return [self.group, self.delay, self.hops, self.origin, self.oseq, self.root, self.sender, self.sidx]

    @staticmethod
    def from_json(v: list) -> Tags:
        g, d, h, o, s, r, snd, i = v
        return Tags(int(g), int(d), int(h), str(o), int(s), str(r), str(snd), int(i))


@dataclass(frozen=True, slots=True)
class Entry:
    """One deliverable event at node ``dst``.

    ``uid`` identifies this incarnation of a message (for "unsend" after a
    rollback); it is run-specific and never part of the ordering.
    ``kind``: "start", "ext" (payload: the external event dict), "timer"
    (``name``; payload: the timer's data) or "msg" (payload from ``src``).
    """

    uid: int
    kind: str
    dst: str
    src: str
    tags: Tags
    payload: Any = None
    name: str = ""

    def record(self) -> tuple:
        """What the software saw, run-independently: compared across runs."""
        return (self.tags.group, self.kind, self.src, self.name, canon(self.payload))


def canon(v: Any) -> str:
    """Canonical JSON text of a payload (sorted keys) so records compare as strings."""
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def groups_for(seconds: float, interval: float) -> int:
    """Whole beacon intervals a timer of ``seconds`` waits (at least one)."""
    return max(1, math.ceil(seconds / interval - 1e-9))


@dataclass(slots=True)
class Counters:
    """Per-node cost counters (the bench's figures)."""

    deliveries: int = 0
    sends: int = 0
    rollbacks: int = 0
    rolled_back_deliveries: int = 0
    unsent: int = 0          # messages sent and later cancelled by a rollback
    anti_sent: int = 0       # rollback notices sent to neighbours
    beacons: int = 0
    dropped: int = 0         # sends over a link the node knows is down

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in self.__slots__}


__all__ = ["Tags", "Entry", "Counters", "canon", "groups_for", "START_OSEQ", "TIMER_OSEQ"]
