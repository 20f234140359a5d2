"""Pending events: every nondeterministic choice the World exposes.

Each message on a control channel and each packet on a link is one pending
event with a stable id (the order it was enqueued in). A policy picks which
enabled event fires next; nothing else reorders anything. Events on one
channel are FIFO, so only a channel's head is enabled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netsleuth.model.packet import Packet


@dataclass(frozen=True, slots=True)
class Lineage:
    """Which injected packet a dataplane copy descends from and the (node, in_port) hops it took."""

    pid: int
    hops: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class ToSwitch:
    """A controller's message waiting to be applied by the switch."""

    id: int
    conn: int
    msg: Any
    held: int = -1  # >= 0: taken out of its FIFO by a delay, in a channel of its own

    @property
    def channel(self) -> tuple[Any, ...]:
        return ("held", self.held) if self.held >= 0 else ("to_switch", self.conn)


@dataclass(frozen=True, slots=True)
class PendingToController:
    """A switch's message waiting to be handed to the controller."""

    id: int
    conn: int
    msg: Any
    held: int = -1

    @property
    def channel(self) -> tuple[Any, ...]:
        return ("held", self.held) if self.held >= 0 else ("to_controller", self.conn)


@dataclass(frozen=True, slots=True)
class OnWire:
    """A packet travelling over a link towards ``node``'s ``port``."""

    id: int
    src: str
    src_port: int
    node: str
    port: int
    packet: Packet
    lineage: Lineage
    held: int = -1

    @property
    def channel(self) -> tuple[Any, ...]:
        return ("held", self.held) if self.held >= 0 else ("wire", self.src, self.src_port)


PendingEvent = ToSwitch | PendingToController | OnWire


@dataclass(frozen=True, slots=True)
class Deliver:
    """Effect for the runtime: write ``msg`` to the controller on ``conn``."""

    conn: int
    msg: Any


@dataclass(frozen=True, slots=True)
class Disconnect:
    """Effect for the runtime: tear down the TCP connection ``conn`` (switch failure)."""

    conn: int


@dataclass(frozen=True, slots=True)
class Connect:
    """Effect for the runtime: open a new connection from switch ``dpid`` to ``controller``."""

    dpid: int
    controller: str


Effect = Deliver | Disconnect | Connect
