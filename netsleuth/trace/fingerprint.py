"""Masked fingerprints: what makes two events "functionally the same".

Replay and minimization must recognise a recorded message in a new run even
though its xid, cookie or buffer id differ (STS, "Fingerprints"). So each
OpenFlow type keeps an allow-list of fields and everything else is masked;
packets collapse to the few header fields that identify a flow.

Fingerprints are computed from the JSON forms the trace stores (the codec's
``{"type", "xid", "body"}`` and ``Packet.to_json()``), so any tool can compute
them from a trace alone. They are tuples of str/int/bool/tuples: hashable,
and equal after a round trip through JSON (lists are read back as tuples).

Matches are normalized with :class:`netsleuth.model.match.Match` and shown
in ovs-ofctl syntax: two matches the flow table treats as one rule (garbage
in wildcarded fields, host bits under a prefix) get one fingerprint.

OpenFlow 1.3 messages (JSON with ``"version": 4``) have their own allow-list
(:data:`ALLOW_LIST_13`) in the same spirit: xid, cookie (and cookie_mask),
buffer_id and the role generation_id are masked; matches become their OXM
fields sorted by name with masked-off value bits cleared and all-ones masks
dropped; instructions are sorted into the order the pipeline runs them in
(meter, apply-actions, clear-actions, write-actions, write-metadata,
goto-table), write-actions (an action *set*) are sorted too, and apply-action
lists keep their order.  1.0 fingerprints are unchanged.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
from collections.abc import Callable
from typing import Any

from os_ken.ofproto import ofproto_v1_3 as ofp13

from netsleuth.errors import NetsleuthError, TraceFormatError
from netsleuth.model.addr import int_to_ip, int_to_mac, mac_to_int
from netsleuth.model.freeze import freeze
from netsleuth.model.match import Match
from netsleuth.model.packet import LLDP, Arp, IPv4, Packet

NO_BUFFER = 0xFFFFFFFF
ETH_TYPE_ARP = 0x0806
ETH_TYPE_LLDP = 0x88CC

_FIX = "record OpenFlow messages with netsleuth.openflow.codec.msg_to_json"


class _Missing(Exception):
    pass


def _get(fields: dict[str, Any], key: str) -> Any:
    try:
        return fields[key]
    except (KeyError, TypeError):
        raise _Missing(key) from None


# ------------------------------------------------------------------- packets
def packet_fingerprint(packet: dict[str, Any] | Packet) -> tuple[Any, ...]:
    """IPv4: ("IPv4", eth src, eth dst, ip src, ip dst); ("ARP",); ("LLDP",);
    anything else ("eth", eth_type, eth src, eth dst). Addresses as strings.

    ARP and LLDP collapse to their type because controllers (re)send them on
    their own schedule; matching them individually would make replay wait for
    chatter rather than for the behaviour under test.
    """
    if not isinstance(packet, Packet):
        try:
            packet = Packet.from_json(packet)
        except (NetsleuthError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise TraceFormatError(f"not a packet JSON object ({exc}): {packet!r:.200}",
                                   "store packets with Packet.to_json()") from None
    l3 = packet.l3
    if isinstance(l3, IPv4):
        return ("IPv4", int_to_mac(packet.eth_src), int_to_mac(packet.eth_dst), int_to_ip(l3.src), int_to_ip(l3.dst))
    if isinstance(l3, Arp) or packet.eth_type == ETH_TYPE_ARP:
        return ("ARP",)
    if isinstance(l3, LLDP) or packet.eth_type == ETH_TYPE_LLDP:
        return ("LLDP",)
    return ("eth", packet.eth_type, int_to_mac(packet.eth_src), int_to_mac(packet.eth_dst))


def _data_fingerprint(data: Any) -> tuple[Any, ...]:
    """A packet fingerprint of a base64 ``data`` field; () when there is none."""
    if not data:
        return ()
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, TypeError, ValueError):
        raise TraceFormatError(f"OpenFlow message data is not base64: {data!r:.80}", _FIX) from None
    return packet_fingerprint(Packet.from_bytes(raw)) if raw else ()


# ------------------------------------------------------------------ openflow
def _match(value: Any) -> str:
    inner = _get(value, "OFPMatch")
    try:
        return str(Match.from_json(inner))
    except (NetsleuthError, TypeError, ValueError, AttributeError) as exc:
        raise TraceFormatError(f"bad OpenFlow match in message JSON: {exc}", _FIX) from None


def _action(value: Any) -> tuple[Any, ...]:
    if not isinstance(value, dict) or len(value) != 1:
        raise _Missing("actions")
    ((name, attrs),) = value.items()
    return (name.removeprefix("OFPAction"), *freeze(attrs))


def _actions(value: Any) -> tuple[Any, ...]:
    if not isinstance(value, list):
        raise _Missing("actions")
    return tuple(_action(a) for a in value)


def _flow_mod(f: dict[str, Any]) -> tuple[Any, ...]:
    return (_get(f, "command"), _match(_get(f, "match")), _get(f, "idle_timeout"), _get(f, "hard_timeout"),
            _get(f, "priority"), _get(f, "out_port"), _get(f, "flags"), _actions(_get(f, "actions")))


def _packet_in(f: dict[str, Any]) -> tuple[Any, ...]:
    return (_get(f, "in_port"), _data_fingerprint(_get(f, "data")))


def _packet_out(f: dict[str, Any]) -> tuple[Any, ...]:
    # With a buffer id the switch ignores ``data``: the packet is the buffered one.
    buffered = _get(f, "buffer_id") != NO_BUFFER
    data = () if buffered else _data_fingerprint(_get(f, "data"))
    return (data, _get(f, "in_port"), _actions(_get(f, "actions")))


def _flow_removed(f: dict[str, Any]) -> tuple[Any, ...]:
    return (_match(_get(f, "match")), _get(f, "reason"), _get(f, "priority"))


def _port_status(f: dict[str, Any]) -> tuple[Any, ...]:
    desc = _get(_get(f, "desc"), "OFPPhyPort")
    return (_get(f, "reason"), _get(desc, "port_no"), int_to_mac(mac_to_int(_get(desc, "hw_addr"))))


def _error(f: dict[str, Any]) -> tuple[Any, ...]:
    return (_get(f, "type"), _get(f, "code"))


def _stats(f: dict[str, Any]) -> tuple[Any, ...]:
    return (_get(f, "type"), _get(f, "flags"))


def _features_reply(f: dict[str, Any]) -> tuple[Any, ...]:
    return (_get(f, "datapath_id"),)


# Message type -> kept fields. Types not listed (HELLO, ECHO_*, BARRIER_*,
# FEATURES_REQUEST, GET_CONFIG_*, SET_CONFIG, PORT_MOD, VENDOR, QUEUE_*) keep
# only their type.
ALLOW_LIST: dict[str, Callable[[dict[str, Any]], tuple[Any, ...]]] = {
    "FLOW_MOD": _flow_mod,
    "PACKET_IN": _packet_in,
    "PACKET_OUT": _packet_out,
    "FLOW_REMOVED": _flow_removed,
    "PORT_STATUS": _port_status,
    "ERROR": _error,
    "STATS_REQUEST": _stats,
    "STATS_REPLY": _stats,
    "FEATURES_REPLY": _features_reply,
}


# ------------------------------------------------------------- openflow 1.3
_OXM_BITS: dict[str, int] = {f.name: f.type.size * 8 for f in ofp13.oxm_types}
# The order in which an OpenFlow 1.3 pipeline runs a flow entry's instructions (spec 5.9).
_INSTRUCTION_ORDER = {"OFPInstructionMeter": 0, "OFPInstructionActions": 1, "OFPInstructionWriteMetadata": 4,
                      "OFPInstructionGotoTable": 5}
_ACTIONS_ORDER = {ofp13.OFPIT_APPLY_ACTIONS: 1, ofp13.OFPIT_CLEAR_ACTIONS: 2, ofp13.OFPIT_WRITE_ACTIONS: 3}
_ACTIONS_NAME = {ofp13.OFPIT_APPLY_ACTIONS: "APPLY_ACTIONS", ofp13.OFPIT_CLEAR_ACTIONS: "CLEAR_ACTIONS",
                 ofp13.OFPIT_WRITE_ACTIONS: "WRITE_ACTIONS"}


def _oxm_int(value: Any) -> Any:
    """An OXM value as an int where os-ken wrote it as text (MAC, IPv4, IPv6); else as given."""
    if isinstance(value, bool) or not isinstance(value, str):
        return value
    try:
        if value.count(":") == 5 and len(value) == 17:
            return mac_to_int(value)
        return int(ipaddress.ip_address(value))
    except ValueError:
        return value


def _oxm(value: Any) -> tuple[Any, ...]:
    tlv = _get(value, "OXMTlv")
    name = _get(tlv, "field")
    v, m = _oxm_int(_get(tlv, "value")), _oxm_int(tlv.get("mask"))
    if isinstance(v, int) and isinstance(m, int):
        bits = _OXM_BITS.get(name)
        if bits is not None and m == (1 << bits) - 1:
            m = None
        else:
            v &= m
    return (name, v, m)


def _match13(value: Any) -> tuple[Any, ...]:
    fields = _get(_get(value, "OFPMatch"), "oxm_fields")
    if not isinstance(fields, list):
        raise _Missing("oxm_fields")
    return tuple(sorted((_oxm(f) for f in fields), key=repr))


def _action13(value: Any) -> tuple[Any, ...]:
    if not isinstance(value, dict) or len(value) != 1:
        raise _Missing("actions")
    ((name, attrs),) = value.items()
    if not isinstance(attrs, dict):
        raise _Missing("actions")
    short = name.removeprefix("OFPAction")
    if short == "SetField":
        return (short, *_oxm(_get(attrs, "field"))[:2])
    return (short, *freeze({k: v for k, v in attrs.items() if k not in ("len", "type")}))


def _actions13(value: Any) -> tuple[Any, ...]:
    if not isinstance(value, list):
        raise _Missing("actions")
    return tuple(_action13(a) for a in value)


def _instruction13(value: Any) -> tuple[int, tuple[Any, ...]]:
    if not isinstance(value, dict) or len(value) != 1:
        raise _Missing("instructions")
    ((name, attrs),) = value.items()
    if name == "OFPInstructionActions":
        itype = _get(attrs, "type")
        actions = _actions13(_get(attrs, "actions"))
        if itype == ofp13.OFPIT_WRITE_ACTIONS:
            actions = tuple(sorted(actions, key=repr))  # an action set: the pipeline orders it itself
        return _ACTIONS_ORDER.get(itype, 9), (_ACTIONS_NAME.get(itype, itype), actions)
    if name == "OFPInstructionGotoTable":
        return _INSTRUCTION_ORDER[name], ("GOTO_TABLE", _get(attrs, "table_id"))
    if name == "OFPInstructionWriteMetadata":
        return _INSTRUCTION_ORDER[name], ("WRITE_METADATA", _get(attrs, "metadata"), _get(attrs, "metadata_mask"))
    if name == "OFPInstructionMeter":
        return _INSTRUCTION_ORDER[name], ("METER", _get(attrs, "meter_id"))
    raise _Missing("instructions")


def _instructions13(value: Any) -> tuple[Any, ...]:
    if not isinstance(value, list):
        raise _Missing("instructions")
    return tuple(inst for _, inst in sorted((_instruction13(i) for i in value), key=lambda p: (p[0], repr(p[1]))))


def _flow_mod13(f: dict[str, Any]) -> tuple[Any, ...]:
    return (_get(f, "command"), _get(f, "table_id"), _match13(_get(f, "match")), _get(f, "idle_timeout"),
            _get(f, "hard_timeout"), _get(f, "priority"), _get(f, "out_port"), _get(f, "out_group"),
            _get(f, "flags"), _instructions13(_get(f, "instructions")))


def _packet_in13(f: dict[str, Any]) -> tuple[Any, ...]:
    in_port = [v for name, v, _ in _match13(_get(f, "match")) if name == "in_port"]
    return (in_port[0] if in_port else None, _get(f, "table_id"), _data_fingerprint(_get(f, "data")))


def _packet_out13(f: dict[str, Any]) -> tuple[Any, ...]:
    buffered = _get(f, "buffer_id") != NO_BUFFER
    data = () if buffered else _data_fingerprint(_get(f, "data"))
    return (data, _get(f, "in_port"), _actions13(_get(f, "actions")))


def _flow_removed13(f: dict[str, Any]) -> tuple[Any, ...]:
    return (_match13(_get(f, "match")), _get(f, "reason"), _get(f, "priority"), _get(f, "table_id"))


def _port_status13(f: dict[str, Any]) -> tuple[Any, ...]:
    desc = _get(_get(f, "desc"), "OFPPort")
    return (_get(f, "reason"), _get(desc, "port_no"), int_to_mac(mac_to_int(_get(desc, "hw_addr"))))


def _bucket13(value: Any) -> tuple[Any, ...]:
    b = _get(value, "OFPBucket")
    return (_get(b, "weight"), _get(b, "watch_port"), _get(b, "watch_group"), _actions13(_get(b, "actions")))


def _group_mod13(f: dict[str, Any]) -> tuple[Any, ...]:
    buckets = _get(f, "buckets")
    if not isinstance(buckets, list):
        raise _Missing("buckets")
    return (_get(f, "command"), _get(f, "type"), _get(f, "group_id"), tuple(_bucket13(b) for b in buckets))


def _band13(value: Any) -> tuple[Any, ...]:
    if not isinstance(value, dict) or len(value) != 1:
        raise _Missing("bands")
    ((name, attrs),) = value.items()
    return (name.removeprefix("OFPMeterBand"), *freeze({k: v for k, v in attrs.items() if k != "len"}))


def _meter_mod13(f: dict[str, Any]) -> tuple[Any, ...]:
    bands = _get(f, "bands")
    if not isinstance(bands, list):
        raise _Missing("bands")
    return (_get(f, "command"), _get(f, "flags"), _get(f, "meter_id"), tuple(_band13(b) for b in bands))


def _multipart13(f: dict[str, Any]) -> tuple[Any, ...]:
    return (_get(f, "type"), _get(f, "flags"))


def _role13(f: dict[str, Any]) -> tuple[Any, ...]:
    return (_get(f, "role"),)


# OpenFlow 1.3 message type -> kept fields; types not listed keep only their type.
ALLOW_LIST_13: dict[str, Callable[[dict[str, Any]], tuple[Any, ...]]] = {
    "FLOW_MOD": _flow_mod13,
    "PACKET_IN": _packet_in13,
    "PACKET_OUT": _packet_out13,
    "FLOW_REMOVED": _flow_removed13,
    "PORT_STATUS": _port_status13,
    "ERROR": _error,
    "MULTIPART_REQUEST": _multipart13,
    "MULTIPART_REPLY": _multipart13,
    "FEATURES_REPLY": _features_reply,
    "GROUP_MOD": _group_mod13,
    "METER_MOD": _meter_mod13,
    "ROLE_REQUEST": _role13,
    "ROLE_REPLY": _role13,
}


def of_fingerprint(msg: dict[str, Any]) -> tuple[Any, ...]:
    """(type, *allowed fields) of an OpenFlow message in the codec's JSON form.

    Masked: xid, buffer_id, cookie, lengths, packet_in reason, stats values
    and every field of types without an allow-list entry; for OpenFlow 1.3
    also cookie_mask and the role generation_id (see the module doc).
    """
    try:
        mtype = _get(msg, "type")
        body = _get(msg, "body")
        if not isinstance(mtype, str) or not isinstance(body, dict) or len(body) != 1:
            raise _Missing("type/body")
        version = msg.get("version", 1) if isinstance(msg, dict) else 1
        keep = (ALLOW_LIST_13 if version == ofp13.OFP_VERSION else ALLOW_LIST).get(mtype)
        if keep is None:
            return (mtype,)
        ((_, fields),) = body.items()
        if not isinstance(fields, dict):
            raise _Missing("body")
        frozen: tuple[Any, ...] = freeze((mtype, *keep(fields)))  # hashable even if a garbled trace nests lists
        return frozen
    except _Missing as exc:
        raise TraceFormatError(f"OpenFlow message JSON lacks or garbles {exc.args[0]!r}: {msg!r:.200}",
                               _FIX) from None
    except (ValueError, AttributeError) as exc:  # e.g. a malformed hw_addr
        raise TraceFormatError(f"bad OpenFlow message JSON ({exc}): {msg!r:.200}", _FIX) from None


__all__ = ["of_fingerprint", "packet_fingerprint", "ALLOW_LIST", "ALLOW_LIST_13"]
