"""Control-channel messages of the model checker, as small hashable values.

The switch model speaks os-ken OpenFlow 1.0 objects; those are mutable,
compare by identity and cost microseconds to build.  Messages queued on the
model's channels are part of the hashed state (NICE's original hash silently
dropped its command queues), so here they are frozen values that hash and
compare by content.  :func:`to_ofp` turns a controller->switch message into
the os-ken object the switch's ``handle_message`` takes, memoized because
messages are immutable and the same install repeats across thousands of
states.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netsleuth.model.actions import action_to_ofp
from netsleuth.model.match import Match
from netsleuth.model.ofdp import DATAPATH, ofp, ofp_parser
from netsleuth.model.packet import Packet

NO_BUFFER = 0xFFFFFFFF


# ------------------------------------------------------------- switch -> controller
@dataclass(frozen=True, slots=True)
class PacketIn:
    """A PACKET_IN: ``packet`` is what the controller sees (truncated to ``max_len``)."""

    buffer_id: int
    total_len: int
    in_port: int
    reason: int
    packet: Packet
    tag: Any = None  # lineage of the packet (property bookkeeping), hashed like the rest


@dataclass(frozen=True, slots=True)
class PortStatus:
    reason: int
    port_no: int
    link_up: bool


@dataclass(frozen=True, slots=True)
class FlowRemoved:
    match: Match
    priority: int
    reason: int
    cookie: int


@dataclass(frozen=True, slots=True)
class PortStatsReply:
    stats: tuple  # ((port_no, rx_packets, tx_packets, rx_bytes, tx_bytes), ...)


@dataclass(frozen=True, slots=True)
class OtherToController:
    """Any other switch message (errors, barrier and stats replies): type name and JSON key."""

    type_name: str
    key: tuple


# ------------------------------------------------------------- controller -> switch
@dataclass(frozen=True, slots=True)
class FlowMod:
    command: int
    match: Match
    priority: int
    actions: tuple
    idle_timeout: int = 0
    hard_timeout: int = 0
    buffer_id: int = NO_BUFFER
    flags: int = 0
    cookie: int = 0
    out_port: int = ofp.OFPP_NONE


@dataclass(frozen=True, slots=True)
class PacketOut:
    buffer_id: int
    in_port: int
    actions: tuple
    data: bytes = b""


@dataclass(frozen=True, slots=True)
class PortStatsRequest:
    port_no: int = ofp.OFPP_NONE


@dataclass(frozen=True, slots=True)
class Barrier:
    pass


_MEMO: dict[Any, Any] = {}


def to_ofp(msg: Any) -> Any:
    """The os-ken object for a controller->switch message (memoized; never mutated by the switch)."""
    obj = _MEMO.get(msg)
    if obj is not None:
        return obj
    t = type(msg)
    if t is FlowMod:
        obj = ofp_parser.OFPFlowMod(
            DATAPATH, match=msg.match.to_ofp(), cookie=msg.cookie, command=msg.command,
            idle_timeout=msg.idle_timeout, hard_timeout=msg.hard_timeout, priority=msg.priority,
            buffer_id=msg.buffer_id, out_port=msg.out_port, flags=msg.flags,
            actions=[action_to_ofp(a) for a in msg.actions])
    elif t is PacketOut:
        obj = ofp_parser.OFPPacketOut(DATAPATH, buffer_id=msg.buffer_id, in_port=msg.in_port,
                                      actions=[action_to_ofp(a) for a in msg.actions],
                                      data=msg.data or None)
    elif t is PortStatsRequest:
        obj = ofp_parser.OFPPortStatsRequest(DATAPATH, 0, msg.port_no)
    elif t is Barrier:
        obj = ofp_parser.OFPBarrierRequest(DATAPATH)
    else:
        raise TypeError(f"not a controller->switch message: {msg!r}")
    obj.xid = 0
    if len(_MEMO) > 100_000:
        _MEMO.clear()
    _MEMO[msg] = obj
    return obj


def describe(msg: Any) -> str:
    """One line for traces and reports."""
    t = type(msg)
    if t is PacketIn:
        return f"PACKET_IN in_port={msg.in_port} buffer={msg.buffer_id} {msg.packet.summary()}"
    if t is FlowMod:
        cmd = {ofp.OFPFC_ADD: "ADD", ofp.OFPFC_DELETE: "DELETE", ofp.OFPFC_DELETE_STRICT: "DELETE_STRICT",
               ofp.OFPFC_MODIFY: "MODIFY", ofp.OFPFC_MODIFY_STRICT: "MODIFY_STRICT"}.get(msg.command, msg.command)
        acts = ",".join(str(a) for a in msg.actions) or "drop"
        return f"FLOW_MOD {cmd} priority={msg.priority},{msg.match} actions={acts}"
    if t is PacketOut:
        acts = ",".join(str(a) for a in msg.actions) or "drop"
        return f"PACKET_OUT buffer={msg.buffer_id} in_port={msg.in_port} actions={acts}"
    if t is PortStatus:
        return f"PORT_STATUS port={msg.port_no} {'up' if msg.link_up else 'down'}"
    if t is FlowRemoved:
        return f"FLOW_REMOVED priority={msg.priority},{msg.match}"
    return type(msg).__name__
