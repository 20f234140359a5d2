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
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

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


def of_fingerprint(msg: dict[str, Any]) -> tuple[Any, ...]:
    """(type, *allowed fields) of an OpenFlow message in the codec's JSON form.

    Masked: xid, buffer_id, cookie, lengths, packet_in reason, stats values
    and every field of types without an allow-list entry.
    """
    try:
        mtype = _get(msg, "type")
        body = _get(msg, "body")
        if not isinstance(mtype, str) or not isinstance(body, dict) or len(body) != 1:
            raise _Missing("type/body")
        keep = ALLOW_LIST.get(mtype)
        if keep is None:
            return (mtype,)
        ((_, fields),) = body.items()
        if not isinstance(fields, dict):
            raise _Missing("body")
        # hashable even if a garbled trace nests lists; freeze returns a tuple for a tuple
        return freeze((mtype, *keep(fields)))  # type: ignore[no-any-return]
    except _Missing as exc:
        raise TraceFormatError(f"OpenFlow message JSON lacks or garbles {exc.args[0]!r}: {msg!r:.200}",
                               _FIX) from None
    except (ValueError, AttributeError) as exc:  # e.g. a malformed hw_addr
        raise TraceFormatError(f"bad OpenFlow message JSON ({exc}): {msg!r:.200}", _FIX) from None


__all__ = ["of_fingerprint", "packet_fingerprint", "ALLOW_LIST"]
