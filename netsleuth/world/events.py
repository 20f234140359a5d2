"""Pending events: every nondeterministic choice the World exposes.

Each message on a control channel and each packet on a link is one pending
event with a stable id (the order it was enqueued in). A policy picks which
enabled event fires next; nothing else reorders anything. Events on one
channel are FIFO, so only a channel's head is enabled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from netsleuth.model.match import Match
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


@dataclass(frozen=True, slots=True)
class FlowModApplied:
    """A switch has applied a FLOW_MOD (or, on OpenFlow 1.3, a GROUP_MOD): its forwarding state may differ now.

    What an observer needs to re-check only what the message can change and to name the
    message: the switch, the trace ``seq`` of the recorded message (None when no trace is
    kept), the command and priority, and the match as the 1.0 model reads it (None on 1.3,
    whose OXM match the 1.0 engine cannot take; ``msg`` has it).  A message the switch
    rejected with an ERROR changed nothing and is not reported.
    """

    switch: str
    seq: int | None
    kind: str                # "FLOW_MOD" or "GROUP_MOD"
    command: str             # "ADD", "MODIFY", "MODIFY_STRICT", "DELETE", "DELETE_STRICT"
    priority: int | None     # None for a GROUP_MOD
    match: Match | None      # the OpenFlow 1.0 match; None on 1.3
    version: int             # the wire version: 1 or 4
    msg: Any                 # the os-ken message itself


@dataclass(frozen=True, slots=True)
class Rejection:
    """A switch answered a controller's message with an OpenFlow ERROR (the `openflow-errors` invariant):
    the message (an os-ken object, or None when it did not even decode), the ERROR's type and code, the
    trace seq of the recorded message (None without a trace) and when."""

    switch: str
    controller: str
    version: int
    msg: Any
    err_type: int
    err_code: int
    xid: int
    seq: int | None
    t: float


class TableObserver(Protocol):
    """Told of every FLOW_MOD/GROUP_MOD a switch applies, once just before and once just after.

    ``before_flow_mod`` lets an observer settle whatever else changed since it last looked
    (links, ports, connections, flows that timed out) while the table is still as it was,
    so that ``flow_mod_applied`` blames the message only for what the message changed.
    The core calls both synchronously from ``Network.fire`` and knows nothing of what
    the observer checks (the invariants live above the core's callers)."""

    def before_flow_mod(self, switch: str) -> None: ...

    def flow_mod_applied(self, event: FlowModApplied) -> None: ...
