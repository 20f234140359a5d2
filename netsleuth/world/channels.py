"""The interposed channels: a FIFO per direction of every control connection and link, and held events.

Every message and frame in flight waits in the channel of its direction
(``PendingEvent.channel``) until the scheduler fires it; channels are FIFO,
so only heads may fire.  A delay armed on a path holds its next event in a
channel of its own (the event's ``held`` is its id) until a release time, so
later events on the path may overtake it, as on a real network.

Why a heap of heads: the prompt in-order policy fires the oldest event that
may fire, thousands of times a second in a fuzz run, and a heap of each
non-empty channel's head finds it without scanning every channel.  What may
fire (a held event's release time, a blocked control channel) is the
Network's to say; this module only keeps the order.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from netsleuth.world.events import PendingEvent

Channel = tuple[Any, ...]


class Channels:
    """The pending events, per channel in FIFO order, and the release times of held ones."""

    def __init__(self) -> None:
        self.queues: dict[Channel, deque[PendingEvent]] = {}
        self.release_at: dict[int, float] = {}  # held event id -> when it may fire
        self._heads: list[tuple[int, Channel]] = []
        self._next_id = 0

    def push(self, make: Callable[[int], PendingEvent]) -> PendingEvent:
        """Append the event ``make(id)`` (ids number the events in the order they were sent)."""
        ev = make(self._next_id)
        self._next_id += 1
        q = self.queues.get(ev.channel)
        if q is None:
            q = self.queues[ev.channel] = deque()
        if not q:
            heapq.heappush(self._heads, (ev.id, ev.channel))
        q.append(ev)
        return ev

    def hold(self, ev: PendingEvent, release: float) -> PendingEvent:
        """``ev`` again, as a held event of its own that may fire from ``release`` on."""
        held = self.push(lambda i: replace(ev, id=i, held=i))
        self.release_at[held.id] = release
        return held

    def released(self, ev: PendingEvent, now: float) -> bool:
        return self.release_at.get(ev.id, 0.0) <= now

    def heads(self) -> list[PendingEvent]:
        """The head of every non-empty channel (in no particular order)."""
        return [q[0] for q in self.queues.values() if q]

    def oldest(self) -> PendingEvent | None:
        """The head with the smallest id, whether or not it may fire."""
        heads = self._heads
        while heads:
            eid, channel = heads[0]
            q = self.queues.get(channel)
            if q and q[0].id == eid:
                return q[0]
            heapq.heappop(heads)
        return None

    def pop(self, ev: PendingEvent) -> None:
        """Take ``ev`` off its channel; it must be the head (channels are FIFO)."""
        q = self.queues.get(ev.channel)
        if not q or q[0].id != ev.id:
            raise ValueError(f"event {ev.id} is not enabled (channels are FIFO)")
        q.popleft()
        if q:
            heapq.heappush(self._heads, (q[0].id, ev.channel))
        elif ev.held >= 0:
            del self.queues[ev.channel]
            self.release_at.pop(ev.id, None)

    def clear(self, channel: Channel) -> None:
        """Lose everything waiting on ``channel`` (its connection closed)."""
        q = self.queues.get(channel)
        if q:
            q.clear()

    def __len__(self) -> int:
        return sum(len(q) for q in self.queues.values())


__all__ = ["Channel", "Channels"]
