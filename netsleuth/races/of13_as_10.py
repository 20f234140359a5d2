"""OpenFlow 1.3 messages of a trace seen as their OpenFlow 1.0 equivalents, for race detection.

The happens-before builder (:mod:`netsleuth.races.from_trace`) and the
commutativity rules (:mod:`netsleuth.races.commute`) reason about 1.0 flow
mods (POX-style matches and action lists), as SDNRacer does.  Most of what a
learning or routing controller sends over 1.3 has a 1.0 equivalent: a
single-table flow mod whose match uses fields 1.0 has and whose one
apply-actions instruction only outputs; packet-ins, packet-outs,
flow-removed, barriers.  Those are translated here and the trace is
analysed as a 1.0 one.  A message with no such equivalent (a goto-table,
groups, meters, set-field, a match on a 1.3-only field) is left out and
counted: the race report on such a trace covers only the translated part,
and says how much was left out.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from os_ken.ofproto import ofproto_v1_3 as ofp13

from netsleuth.model.match import Match
from netsleuth.model.ofdp import DATAPATH, ofp_parser
from netsleuth.openflow.codec import msg_from_json, msg_to_json
from netsleuth.trace import schema as ts

# OXM field -> the 1.0 match field of the same meaning
_FIELDS = {"in_port": "in_port", "eth_src": "dl_src", "eth_dst": "dl_dst", "eth_type": "dl_type",
           "vlan_pcp": "dl_vlan_pcp", "ip_proto": "nw_proto", "ipv4_src": "nw_src", "ipv4_dst": "nw_dst",
           "tcp_src": "tp_src", "tcp_dst": "tp_dst", "udp_src": "tp_src", "udp_dst": "tp_dst",
           "arp_spa": "nw_src", "arp_tpa": "nw_dst", "arp_op": "nw_proto"}


class NoEquivalent(Exception):
    """The 1.3 message has no OpenFlow 1.0 equivalent."""


def _port(p: int) -> int:
    """1.3 port numbers: the reserved ones (above 0xffffff00) become 1.0's (above 0xff00)."""
    return p & 0xFFFF if p > 0xFFFFFF00 else p


def _match(m: Any) -> Any:
    fields: dict[str, Any] = {}
    for key, value in m.items():
        target = _FIELDS.get(key)
        if target is None:
            if key == "vlan_vid" and isinstance(value, int):
                fields["dl_vlan"] = value & 0x0FFF
                continue
            raise NoEquivalent(f"match on {key}")
        if isinstance(value, tuple):  # masked
            if target in ("nw_src", "nw_dst"):
                addr, mask = value
                fields[target] = (addr, bin(_ip_int(mask)).count("1"))
                continue
            raise NoEquivalent(f"masked match on {key}")
        if target == "in_port":
            value = _port(value)
        fields[target] = value
    return Match.build(**fields).to_ofp()


def _ip_int(v: Any) -> int:
    if isinstance(v, int):
        return v
    parts = [int(x) for x in str(v).split(".")]
    return (parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]


def _actions(actions: Any) -> list[Any]:
    out = []
    for a in actions or []:
        if type(a).__name__ != "OFPActionOutput":
            raise NoEquivalent(type(a).__name__)
        out.append(ofp_parser.OFPActionOutput(_port(a.port), a.max_len & 0xFFFF))
    return out


def _flow_actions(instructions: Any) -> list[Any]:
    if not instructions:
        return []
    if len(instructions) != 1 or type(instructions[0]).__name__ != "OFPInstructionActions" \
            or instructions[0].type not in (ofp13.OFPIT_APPLY_ACTIONS, ofp13.OFPIT_WRITE_ACTIONS):
        raise NoEquivalent("instructions other than one action list")
    return _actions(instructions[0].actions)


def downgrade(msg_json: dict) -> dict | None:
    """The OpenFlow 1.0 JSON of a 1.3 message, or None when it has no equivalent."""
    try:
        msg = msg_from_json(msg_json)
        out = _downgrade(msg_json.get("type", ""), msg)
    except (NoEquivalent, ValueError, KeyError, TypeError, AttributeError):
        return None
    if out is None:
        return None
    out.xid = msg.xid
    return msg_to_json(out)


def _downgrade(mtype: str, m: Any) -> Any:
    if mtype == "FLOW_MOD":
        if m.table_id not in (0, ofp13.OFPTT_ALL):
            raise NoEquivalent("a table other than 0")
        return ofp_parser.OFPFlowMod(DATAPATH, _match(m.match), m.cookie, m.command, m.idle_timeout,
                                     m.hard_timeout, m.priority, m.buffer_id, _port(m.out_port), m.flags & 0x3,
                                     _flow_actions(m.instructions))
    if mtype == "PACKET_OUT":
        return ofp_parser.OFPPacketOut(DATAPATH, m.buffer_id, _port(m.in_port), _actions(m.actions),
                                       bytes(m.data or b""))
    if mtype == "PACKET_IN":
        if m.reason not in (ofp13.OFPR_NO_MATCH, ofp13.OFPR_ACTION):
            raise NoEquivalent("packet-in reason")
        return ofp_parser.OFPPacketIn(DATAPATH, buffer_id=m.buffer_id, total_len=m.total_len,
                                      in_port=_port(m.match["in_port"]), reason=m.reason, data=bytes(m.data or b""))
    if mtype == "FLOW_REMOVED":
        if m.reason not in (ofp13.OFPRR_IDLE_TIMEOUT, ofp13.OFPRR_HARD_TIMEOUT, ofp13.OFPRR_DELETE):
            raise NoEquivalent("flow-removed reason")
        fr = ofp_parser.OFPFlowRemoved(DATAPATH)
        fr.match, fr.cookie, fr.priority, fr.reason = _match(m.match), m.cookie, m.priority, m.reason
        fr.duration_sec, fr.duration_nsec, fr.idle_timeout = m.duration_sec, m.duration_nsec, m.idle_timeout
        fr.packet_count, fr.byte_count = m.packet_count, m.byte_count
        return fr
    if mtype == "BARRIER_REQUEST":
        return ofp_parser.OFPBarrierRequest(DATAPATH)
    if mtype == "BARRIER_REPLY":
        return ofp_parser.OFPBarrierReply(DATAPATH)
    return None


def as_openflow10(trace: ts.Trace) -> tuple[ts.Trace, int]:
    """``trace`` with each 1.3 message replaced by its 1.0 equivalent; how many had none (left out)."""
    if not trace.header.openflow or set(trace.header.openflow.values()) == {"1.0"}:
        return trace, 0
    events: list[ts.Event] = []
    left_out = 0
    for e in trace.events:
        if isinstance(e, (ts.ControlToSwitch, ts.ControlToController)) and e.msg.get("version") == 4:
            msg = downgrade(e.msg)
            if msg is None:
                left_out += 1
                continue
            e = replace(e, msg=msg)
        events.append(e)
    return ts.Trace(replace(trace.header, openflow={}), events), left_out


__all__ = ["as_openflow10", "downgrade"]
