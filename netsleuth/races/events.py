"""The small event model the happens-before graph is built from.

Independent of any file format: :mod:`netsleuth.races.hbtrace` fills it from
SDNRacer's ``hb.json``; an importer of netsleuth's own traces can fill it the
same way.  An event is one atomic step of one entity (switch, controller,
host); causality is explicit through message ids (``mid_*``) and packet ids
(``pid_*``): the event whose ``*_out`` holds x happens before the event whose
``*_in`` is x.  Flow-table operations carry what race detection needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from netsleuth.races.poxmatch import PoxFlowMod

if TYPE_CHECKING:
    from netsleuth.races.of13.flowmod import FlowMod13, GroupMeterMod, Target

# Event kinds (SDNRacer's names).
MESSAGE_SEND = "HbMessageSend"          # switch -> controller message sent
MESSAGE_HANDLE = "HbMessageHandle"      # switch handles a controller message
CONTROLLER_HANDLE = "HbControllerHandle"
CONTROLLER_SEND = "HbControllerSend"
PACKET_HANDLE = "HbPacketHandle"        # switch handles a dataplane packet
PACKET_SEND = "HbPacketSend"            # switch forwards a dataplane packet
HOST_HANDLE = "HbHostHandle"
HOST_SEND = "HbHostSend"
FLOW_EXPIRY = "HbAsyncFlowExpiry"
KINDS = (MESSAGE_SEND, MESSAGE_HANDLE, CONTROLLER_HANDLE, CONTROLLER_SEND, PACKET_HANDLE,
         PACKET_SEND, HOST_HANDLE, HOST_SEND, FLOW_EXPIRY)

# Operation kinds.
READ = "read"        # a packet matched against the flow table (flow_mod: entry hit, or None)
WRITE = "write"      # a flow mod applied to the table
EXPIRY = "expiry"    # an entry expired (flow_mod: the entry removed)
OTHER = "other"      # buffer put/get, barrier, drop, no-op

# OpenFlow message types left out of the analysis (handshake, config, stats), as SDNRacer does.
SKIP_MSG_TYPES = frozenset({
    "OFPT_HELLO", "OFPT_VENDOR", "OFPT_FEATURES_REQUEST", "OFPT_FEATURES_REPLY",
    "OFPT_SET_CONFIG", "OFPT_GET_CONFIG_REQUEST", "OFPT_GET_CONFIG_REPLY",
    "OFPT_STATS_REQUEST", "OFPT_STATS_REPLY",
})
# OpenFlow 1.3's own handshake and configuration messages, left out the same way.  A
# MULTIPART request that reads flow tables, groups or meters is kept (its handle reads
# them); the others (descriptions, port and table statistics) are left out when read.
SKIP_MSG_TYPES_13 = frozenset({
    "OFPT_EXPERIMENTER", "OFPT_GET_ASYNC_REQUEST", "OFPT_GET_ASYNC_REPLY", "OFPT_SET_ASYNC",
    "OFPT_QUEUE_GET_CONFIG_REQUEST", "OFPT_QUEUE_GET_CONFIG_REPLY",
})
STATS_READ = "TraceSwitchStatsRead"   # FlowOp.name of a flow/aggregate statistics request's read


@dataclass(slots=True)
class FlowOp:
    """One switch-internal operation of an event."""

    kind: str                      # READ / WRITE / EXPIRY / OTHER
    t: float                       # seconds (wall clock of the recording)
    flow_mod: PoxFlowMod | FlowMod13 | GroupMeterMod | None = None
    op_id: int | None = None       # the operation's own id in the trace
    name: str = ""                 # original operation type, e.g. TraceSwitchFlowTableRead
    target: Target | None = None   # OpenFlow 1.3: ("table"|"group"|"meter", id); None: the 1.0 flow table
    fields: Mapping[str, int] | None = None   # 1.3 table read: the OXM fields that table looked up


@dataclass(slots=True)
class HbEvent:
    """One happens-before event.

    ``pid_in``/``mid_in`` are None when the event has no such link and
    ``has_pid_in``/``has_mid_in`` say whether the event type has the field at
    all (SDNRacer links a ``None`` id like any other value; keeping the
    distinction keeps its rules exact).
    """

    eid: int
    kind: str
    dpid: int | None = None
    hid: int | None = None
    msg_type: str | None = None
    pid_in: int | None = None
    pid_out: tuple[int, ...] = ()
    mid_in: int | None = None
    mid_out: tuple[int, ...] = ()
    has_pid_in: bool = False
    has_mid_in: bool = False
    ops: list[FlowOp] = field(default_factory=list)
    packet: bytes | None = None    # the frame handled/sent (hb.json: base64-decoded)
    in_port: int | None = None
    out_port: int | None = None
    msg: bytes | None = None       # OpenFlow message bytes, when there is one

    @property
    def reads(self) -> list[FlowOp]:
        return [op for op in self.ops if op.kind == READ]

    @property
    def writes(self) -> list[FlowOp]:
        return [op for op in self.ops if op.kind == WRITE]

    def has_reads_or_writes(self) -> bool:
        return any(op.kind in (READ, WRITE) for op in self.ops)

    @property
    def t(self) -> float | None:
        """Time of the first operation, if any."""
        return self.ops[0].t if self.ops else None
