"""The Network's small records: a control connection, delivery counters, and the trace event recorder.

The recorder numbers every trace event and stamps it with the injected
clock, so the same inputs give the same trace; observers (a replay matching
what happens, a warm-up's ready condition) see each event as it is made.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from netsleuth.world.clock import Clock


@dataclass(slots=True)
class Connection:
    """One control connection between a switch and a controller."""

    conn: int
    dpid: int
    controller: str
    up: bool = True
    # the HELLO exchange of a live connection is under way: no version is agreed yet, so the switch
    # sends nothing unasked on it (Open vSwitch sends asynchronous messages only once it has one)
    awaiting_hello: bool = False
    features_replied: bool = False
    replied_at: float = 0.0  # when the handshake completed (the FEATURES_REPLY reached the controller)


@dataclass(slots=True)
class Stats:
    fired: int = 0
    to_switch: int = 0
    to_controller: int = 0
    packets: int = 0
    dropped_packets: int = 0
    loop_drops: int = 0


class Recorder:
    """Numbers trace events, stamps them with the clock and hands them to a sink."""

    def __init__(self, clock: Clock, sink: Callable[[Any], None] | None = None) -> None:
        self.clock = clock
        self.sink = sink
        self.seq = 0
        self.observers: list[Callable[[Any], None]] = []  # e.g. a replay matching what happens

    def __call__(self, cls: type, **fields: Any) -> Any:
        event = cls(seq=self.seq, t=round(self.clock.now(), 6), **fields)
        self.seq += 1
        if self.sink is not None:
            self.sink(event)
        for observe in self.observers:
            observe(event)
        return event


__all__ = ["Connection", "Recorder", "Stats"]
