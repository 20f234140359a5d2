"""Control-channel messages of the model checker, as small hashable values.

The switch model speaks os-ken OpenFlow 1.0 objects; those are mutable,
compare by identity and cost microseconds to build.  Messages queued on the
model's channels are part of the hashed state (NICE's original hash silently
dropped its command queues), so here they are frozen values that hash and
compare by content.  :func:`to_ofp` turns a controller->switch message into
the os-ken object the switch's ``handle_message`` takes, memoized because
messages are immutable and the same install repeats across thousands of
states.

OpenFlow 1.3 (an app that speaks only 1.3, hosted by the handler server) adds
two kinds: :class:`ToSwitch13` and :class:`FromSwitch13` carry a 1.3
message as its wire bytes, which are canonical, hashable and exactly what
the app sent or will receive; :func:`of13_message` decodes them (memoized)
into the os-ken 1.3 object the switch's 1.3 part takes.  PACKET_INs of
either version are :class:`PacketIn` values, because properties read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netsleuth.model.actions import action_to_ofp
from netsleuth.model.match import Match
from netsleuth.model.of13.actions import action_from_ofp as action13_from_ofp
from netsleuth.model.of13.actions import render_action as render_action13
from netsleuth.model.of13.instructions import Instructions
from netsleuth.model.of13.oxm import OxmMatch
from netsleuth.model.ofdp import DATAPATH, ofp, ofp13, ofp_parser
from netsleuth.model.packet import Packet
from netsleuth.openflow import codec

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
    table_id: int = 0  # OpenFlow 1.3: the table and cookie of the entry that sent it
    cookie: int = 0


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


@dataclass(frozen=True, slots=True)
class FromSwitch13:
    """An OpenFlow 1.3 switch message other than PACKET_IN, as the bytes the switch sends."""

    type_name: str
    data: bytes


# ------------------------------------------------------------- controller -> switch
@dataclass(frozen=True, slots=True)
class ToSwitch13:
    """An OpenFlow 1.3 controller->switch message as the app's bytes.

    ``tag`` is the lineage of the packet a PACKET_OUT carries in its data:
    the controller resent the bytes of the PACKET_IN it was handling (what
    the live switch recognizes by those bytes; the model checker's switch
    keeps no such cache, so the lineage travels with the message).
    """

    type_name: str
    data: bytes
    tag: Any = None


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


_MEMO13: dict[bytes, Any] = {}


def of13_message(data: bytes) -> Any:
    """The os-ken OpenFlow 1.3 object of a message's bytes (memoized; never mutated by the switch)."""
    obj = _MEMO13.get(data)
    if obj is None:
        obj = codec.decode(data, version=ofp13.OFP_VERSION)
        if len(_MEMO13) > 100_000:
            _MEMO13.clear()
        _MEMO13[data] = obj
    return obj


_COMMANDS13 = {ofp13.OFPFC_ADD: "ADD", ofp13.OFPFC_DELETE: "DELETE", ofp13.OFPFC_DELETE_STRICT: "DELETE_STRICT",
               ofp13.OFPFC_MODIFY: "MODIFY", ofp13.OFPFC_MODIFY_STRICT: "MODIFY_STRICT"}


def _describe13(msg: ToSwitch13 | FromSwitch13) -> str:
    o = of13_message(msg.data)
    if msg.type_name == "FLOW_MOD":
        match = str(OxmMatch.from_ofp(o.match))
        acts = Instructions.from_ofp(o.instructions).render()
        return (f"FLOW_MOD {_COMMANDS13.get(o.command, o.command)} table={o.table_id} priority={o.priority}"
                f"{',' + match if match else ''} actions={acts}")
    if msg.type_name == "PACKET_OUT":
        acts = ",".join(render_action13(action13_from_ofp(a)) for a in o.actions) or "drop"
        return f"PACKET_OUT buffer={o.buffer_id} in_port={o.in_port} actions={acts}"
    if msg.type_name == "PORT_STATUS":
        up = not o.desc.state & ofp13.OFPPS_LINK_DOWN
        return f"PORT_STATUS port={o.desc.port_no} {'up' if up else 'down'}"
    return msg.type_name


def describe(msg: Any) -> str:
    """One line for traces and reports."""
    t = type(msg)
    if t is ToSwitch13 or t is FromSwitch13:
        return _describe13(msg)
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
