"""OpenFlow 1.0 bytes <-> os-ken message objects, in both directions.

Why this module exists: netsleuth plays the *switch* to real controllers, so
it must read what a controller sends (FLOW_MOD, PACKET_OUT, STATS_REQUEST,
...) and write what a switch sends (FEATURES_REPLY, PACKET_IN, STATS_REPLY,
...).  os-ken, being a controller library, does exactly the opposite: it
parses switch->controller messages and serializes controller->switch ones.
This module fills in the two missing halves for OpenFlow 1.0 with os-ken's
own vocabulary (its pack strings, ``OFPMatch.parse``, ``OFPAction.parser``
and message classes), so every other part of netsleuth sees one kind of
object, os-ken's, whichever way a message travels.

It is sans-I/O: :func:`decode` takes exactly one complete message and either
returns an object or raises :class:`~netsleuth.errors.CodecError` carrying
the OFPT_ERROR type/code a switch should answer with.  Every structure is
checked *before* os-ken's parsers see it, because those parsers assume
well-formed input (``assert``, silent truncation) and malformed input is
precisely what a fuzzer or a buggy controller produces.

Callers normally go through :mod:`netsleuth.openflow.codec`, which picks
this module or :mod:`netsleuth.openflow.of13` by version.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from os_ken.lib import addrconv
from os_ken.ofproto import ofproto_v1_0 as ofp
from os_ken.ofproto import ofproto_v1_0_parser as parser

from netsleuth.errors import CodecError
from netsleuth.model.ofdp import DATAPATH
from netsleuth.openflow import wire

__all__ = ["DATAPATH", "DECODED_CLASSES", "ERROR_DATA_LEN", "OFP_VERSION", "TYPE_NAME", "decode",
           "encode", "msg_type_name"]

OFP_VERSION = ofp.OFP_VERSION
ERROR_DATA_LEN = wire.ERROR_DATA_LEN
_W = wire.Framing(OFP_VERSION, "1.0", DATAPATH)

_TYPE_NAMES = (
    "HELLO", "ERROR", "ECHO_REQUEST", "ECHO_REPLY", "VENDOR", "FEATURES_REQUEST",
    "FEATURES_REPLY", "GET_CONFIG_REQUEST", "GET_CONFIG_REPLY", "SET_CONFIG",
    "PACKET_IN", "FLOW_REMOVED", "PORT_STATUS", "PACKET_OUT", "FLOW_MOD", "PORT_MOD",
    "STATS_REQUEST", "STATS_REPLY", "BARRIER_REQUEST", "BARRIER_REPLY",
    "QUEUE_GET_CONFIG_REQUEST", "QUEUE_GET_CONFIG_REPLY",
)
TYPE_NAME: dict[int, str] = {getattr(ofp, "OFPT_" + n): n for n in _TYPE_NAMES}

# Compiled forms of os-ken's pack strings (see ofproto_v1_0).
_ERROR = struct.Struct(ofp.OFP_ERROR_MSG_PACK_STR)
_VENDOR = struct.Struct(ofp.OFP_VENDOR_HEADER_PACK_STR)
_SWITCH_CONFIG = struct.Struct(ofp.OFP_SWITCH_CONFIG_PACK_STR)
_FEATURES = struct.Struct(ofp.OFP_SWITCH_FEATURES_PACK_STR)
_PHY_PORT = struct.Struct(ofp.OFP_PHY_PORT_PACK_STR)
_PORT_STATUS = struct.Struct(ofp.OFP_PORT_STATUS_PACK_STR)
_PACKET_IN = struct.Struct(ofp.OFP_PACKET_IN_PACK_STR)
_PACKET_OUT = struct.Struct(ofp.OFP_PACKET_OUT_PACK_STR)
_FLOW_REMOVED0 = struct.Struct(ofp.OFP_FLOW_REMOVED_PACK_STR0)
_PORT_MOD = struct.Struct(ofp.OFP_PORT_MOD_PACK_STR)
_STATS = struct.Struct(ofp.OFP_STATS_MSG_PACK_STR)
_FLOW_STATS_REQ = struct.Struct(ofp.OFP_FLOW_STATS_REQUEST_ID_PORT_STR)
_PORT_STATS_REQ = struct.Struct(ofp.OFP_PORT_STATS_REQUEST_PACK_STR)
_QUEUE_STATS_REQ = struct.Struct(ofp.OFP_QUEUE_STATS_REQUEST_PACK_STR)
_VENDOR_STATS = struct.Struct(ofp.OFP_VENDOR_STATS_MSG_PACK_STR)
_FLOW_STATS0 = struct.Struct(ofp.OFP_FLOW_STATS_0_PACK_STR)
_FLOW_STATS1 = struct.Struct(ofp.OFP_FLOW_STATS_1_PACK_STR)
_DESC_STATS = struct.Struct(ofp.OFP_DESC_STATS_PACK_STR)
_AGG_STATS = struct.Struct(ofp.OFP_AGGREGATE_STATS_REPLY_PACK_STR)
_TABLE_STATS = struct.Struct(ofp.OFP_TABLE_STATS_PACK_STR)
_PORT_STATS = struct.Struct(ofp.OFP_PORT_STATS_PACK_STR)
_QUEUE_STATS = struct.Struct(ofp.OFP_QUEUE_STATS_PACK_STR)
_QGC_REQUEST = struct.Struct(ofp.OFP_QUEUE_GET_CONFIG_REQUEST_PACK_STR)
_QGC_REPLY = struct.Struct(ofp.OFP_QUEUE_GET_CONFIG_REPLY_PACK_STR)
_PACKET_QUEUE = struct.Struct(ofp.OFP_PACKET_QUEUE_PQCK_STR)
_QUEUE_PROP = struct.Struct(ofp.OFP_QUEUE_PROP_HEADER_PACK_STR)
_MIN_RATE = struct.Struct(ofp.OFP_QUEUE_PROP_MIN_RATE_PACK_STR)

_HDR = wire.HEADER_SIZE
_STATS_HDR = ofp.OFP_STATS_MSG_SIZE  # header + type + flags
_MATCH = ofp.OFP_MATCH_SIZE
_FLOW_STATS_FIXED = ofp.OFP_FLOW_STATS_SIZE
_QUEUE_PROP_LEN = {ofp.OFPQT_NONE: ofp.OFP_QUEUE_PROP_HEADER_SIZE,
                   ofp.OFPQT_MIN_RATE: ofp.OFP_QUEUE_PROP_MIN_RATE_SIZE}
# Fixed length of every non-vendor action type, as os-ken registers them.
_NX_ACTION = getattr(parser, "NXAction", parser.OFPActionVendor)
_ACTION_LEN = {t: c.cls_action_len for t, c in parser.OFPAction._ACTION_TYPES.items()
               if t != ofp.OFPAT_VENDOR}


# --------------------------------------------------------------------------
# errors


def _bad_action(code: int, problem: str, data: bytes, xid: int) -> CodecError:
    return _W.error(ofp.OFPET_BAD_ACTION, code, problem, data, xid)


# --------------------------------------------------------------------------
# decoding


def decode(data: bytes) -> Any:
    """Decode exactly one complete OpenFlow 1.0 message (header included).

    Returns an os-ken ``ofproto_v1_0_parser`` message object with ``xid``,
    ``version``, ``msg_type``, ``msg_len`` and ``buf`` set.  Raises
    :class:`CodecError` (with the OFPT_ERROR type/code, the xid and the first
    64 bytes) when the bytes are not a valid message.
    """
    return _W.decode(data, _DECODERS)


def _check_actions(data: bytes, start: int, end: int, xid: int) -> None:
    """Walk an action list so that os-ken's asserting parsers only see good ones."""
    bad_len = _W.raiser(ofp.OFPET_BAD_ACTION, ofp.OFPBAC_BAD_LEN, data, xid)
    unknown = _W.raiser(ofp.OFPET_BAD_ACTION, ofp.OFPBAC_BAD_TYPE, data, xid)

    for atype, off, alen in wire.walk_tl(data, start, end, what="action", head=ofp.OFP_ACTION_HEADER_SIZE,
                                         bad_len=bad_len):
        if atype == ofp.OFPAT_VENDOR:
            try:  # os-ken's Nicira action parsers reject unknown subtypes and short bodies
                parser.OFPAction.parser(data[off:off + alen], 0)
            except Exception as exc:
                raise _bad_action(ofp.OFPBAC_BAD_VENDOR_TYPE, f"unparseable vendor action: {exc!r}",
                                  data, xid) from exc
        else:
            wire.check_fixed_len(_ACTION_LEN, atype, alen, what="action", unknown=unknown, bad_len=bad_len)


def _parse_actions(data: bytes, start: int, end: int, xid: int) -> list[Any]:
    _check_actions(data, start, end, xid)
    return wire.parse_tl_list(data, start, end, parser.OFPAction.parser)


_Decoder = wire.Decoder


def _decode_vendor(data: bytes, xid: int) -> Any:
    # os-ken would turn Nicira payloads into objects it cannot serialize again;
    # keep every vendor message opaque (vendor id + bytes) so it round-trips.
    _W.need(data, xid, ofp.OFP_VENDOR_HEADER_SIZE, exact=False, what="VENDOR")
    msg = parser.OFPVendor(DATAPATH)
    (msg.vendor,) = _VENDOR.unpack_from(data, _HDR)
    msg.data = data[ofp.OFP_VENDOR_HEADER_SIZE:]
    return _W.stamp(msg, data, xid)


def _decode_set_config(data: bytes, xid: int) -> Any:
    flags, miss_send_len = _SWITCH_CONFIG.unpack_from(data, _HDR)
    return _W.stamp(parser.OFPSetConfig(DATAPATH, flags, miss_send_len), data, xid)


def _decode_packet_out(data: bytes, xid: int) -> Any:
    _W.need(data, xid, ofp.OFP_PACKET_OUT_SIZE, exact=False, what="PACKET_OUT")
    buffer_id, in_port, actions_len = _PACKET_OUT.unpack_from(data, _HDR)
    end = ofp.OFP_PACKET_OUT_SIZE + actions_len
    if end > len(data):
        raise _W.bad_request(ofp.OFPBRC_BAD_LEN, f"PACKET_OUT actions_len {actions_len} runs past the message",
                             data, xid)
    actions = _parse_actions(data, ofp.OFP_PACKET_OUT_SIZE, end, xid)
    payload = data[end:] or None
    return _W.stamp(parser.OFPPacketOut(DATAPATH, buffer_id, in_port, actions, payload), data, xid)


def _decode_flow_mod(data: bytes, xid: int) -> Any:
    _W.need(data, xid, ofp.OFP_FLOW_MOD_SIZE, exact=False, what="FLOW_MOD")
    _check_actions(data, ofp.OFP_FLOW_MOD_SIZE, len(data), xid)
    return _W.osken(parser.OFPFlowMod)(data, xid)


def _decode_port_mod(data: bytes, xid: int) -> Any:
    port_no, hw_addr, config, mask, advertise = _PORT_MOD.unpack_from(data, _HDR)
    msg = parser.OFPPortMod(DATAPATH, port_no, addrconv.mac.bin_to_text(hw_addr), config, mask, advertise)
    return _W.stamp(msg, data, xid)


def _decode_queue_get_config_request(data: bytes, xid: int) -> Any:
    (port,) = _QGC_REQUEST.unpack_from(data, _HDR)
    return _W.stamp(parser.OFPQueueGetConfigRequest(DATAPATH, port), data, xid)


def _decode_stats_request(data: bytes, xid: int) -> Any:
    _W.need(data, xid, _STATS_HDR, exact=False, what="STATS_REQUEST")
    stype, flags = _STATS.unpack_from(data, _HDR)
    body = len(data) - _STATS_HDR

    def body_len(size: int, exact: bool = True) -> None:
        if body < size or (exact and body != size):
            raise _W.bad_request(ofp.OFPBRC_BAD_LEN, f"stats request type {stype} body is {body} bytes", data, xid)

    if stype in (ofp.OFPST_DESC, ofp.OFPST_TABLE):
        body_len(0)
        cls = parser.OFPDescStatsRequest if stype == ofp.OFPST_DESC else parser.OFPTableStatsRequest
        msg = cls(DATAPATH, 0)
    elif stype in (ofp.OFPST_FLOW, ofp.OFPST_AGGREGATE):
        body_len(_MATCH + _FLOW_STATS_REQ.size)
        match = parser.OFPMatch.parse(data, _STATS_HDR)
        table_id, out_port = _FLOW_STATS_REQ.unpack_from(data, _STATS_HDR + _MATCH)
        cls = parser.OFPFlowStatsRequest if stype == ofp.OFPST_FLOW else parser.OFPAggregateStatsRequest
        msg = cls(DATAPATH, 0, match, table_id, out_port)
    elif stype == ofp.OFPST_PORT:
        body_len(_PORT_STATS_REQ.size)
        (port_no,) = _PORT_STATS_REQ.unpack_from(data, _STATS_HDR)
        msg = parser.OFPPortStatsRequest(DATAPATH, 0, port_no)
    elif stype == ofp.OFPST_QUEUE:
        body_len(_QUEUE_STATS_REQ.size)
        port_no, queue_id = _QUEUE_STATS_REQ.unpack_from(data, _STATS_HDR)
        msg = parser.OFPQueueStatsRequest(DATAPATH, 0, port_no, queue_id)
    elif stype == ofp.OFPST_VENDOR:
        body_len(_VENDOR_STATS.size, exact=False)
        (vendor,) = _VENDOR_STATS.unpack_from(data, _STATS_HDR)
        msg = parser.OFPVendorStatsRequest(DATAPATH, 0, vendor, data[ofp.OFP_VENDOR_STATS_MSG_SIZE:])
    else:
        raise _W.bad_request(ofp.OFPBRC_BAD_STAT, f"unknown stats type {stype}", data, xid)
    msg.flags = flags  # os-ken's constructors insist on 0; the wire may say otherwise
    return _W.stamp(msg, data, xid)


def _decode_features_reply(data: bytes, xid: int) -> Any:
    _W.need(data, xid, ofp.OFP_SWITCH_FEATURES_SIZE, exact=False, what="FEATURES_REPLY")
    if (len(data) - ofp.OFP_SWITCH_FEATURES_SIZE) % ofp.OFP_PHY_PORT_SIZE:
        raise _W.bad_request(ofp.OFPBRC_BAD_LEN, "FEATURES_REPLY ports are not whole ofp_phy_port records", data, xid)
    return _W.osken(parser.OFPSwitchFeatures)(data, xid)


def _decode_queue_get_config_reply(data: bytes, xid: int) -> Any:
    _W.need(data, xid, ofp.OFP_QUEUE_GET_CONFIG_REPLY_SIZE, exact=False, what="QUEUE_GET_CONFIG_REPLY")
    off, end = ofp.OFP_QUEUE_GET_CONFIG_REPLY_SIZE, len(data)
    while off < end:
        if end - off < ofp.OFP_PACKET_QUEUE_SIZE:
            raise _W.bad_request(ofp.OFPBRC_BAD_LEN, "truncated ofp_packet_queue", data, xid)
        _, qlen = _PACKET_QUEUE.unpack_from(data, off)
        if qlen < ofp.OFP_PACKET_QUEUE_SIZE or off + qlen > end:
            raise _W.bad_request(ofp.OFPBRC_BAD_LEN, f"ofp_packet_queue has bad length {qlen}", data, xid)
        poff, pend = off + ofp.OFP_PACKET_QUEUE_SIZE, off + qlen
        while poff < pend:
            if pend - poff < ofp.OFP_QUEUE_PROP_HEADER_SIZE:
                raise _W.bad_request(ofp.OFPBRC_BAD_LEN, "truncated queue property", data, xid)
            prop, plen = _QUEUE_PROP.unpack_from(data, poff)
            if _QUEUE_PROP_LEN.get(prop) != plen or poff + plen > pend:
                raise _W.bad_request(ofp.OFPBRC_BAD_LEN, f"queue property {prop} has bad length {plen}", data, xid)
            poff += plen
        off += qlen
    return _W.osken(parser.OFPQueueGetConfigReply)(data, xid)


def _decode_stats_reply(data: bytes, xid: int) -> Any:
    _W.need(data, xid, _STATS_HDR, exact=False, what="STATS_REPLY")
    stype, flags = _STATS.unpack_from(data, _HDR)
    body = len(data) - _STATS_HDR

    def bad(why: str) -> CodecError:
        return _W.bad_request(ofp.OFPBRC_BAD_LEN, f"stats reply type {stype}: {why}", data, xid)

    if stype == ofp.OFPST_DESC and body != _DESC_STATS.size:
        raise bad(f"body is {body} bytes, expected {_DESC_STATS.size}")
    if stype == ofp.OFPST_AGGREGATE and body != _AGG_STATS.size:
        raise bad(f"body is {body} bytes, expected {_AGG_STATS.size}")
    record = {ofp.OFPST_TABLE: _TABLE_STATS.size, ofp.OFPST_PORT: _PORT_STATS.size,
              ofp.OFPST_QUEUE: _QUEUE_STATS.size}.get(stype)
    if record is not None and body % record:
        raise bad(f"body is {body} bytes, not whole {record}-byte records")
    if stype == ofp.OFPST_FLOW:
        off = _STATS_HDR
        while off < len(data):
            if len(data) - off < _FLOW_STATS_FIXED:
                raise bad("truncated ofp_flow_stats")
            (flen, _table) = _FLOW_STATS0.unpack_from(data, off)
            if flen < _FLOW_STATS_FIXED or off + flen > len(data):
                raise bad(f"ofp_flow_stats has bad length {flen}")
            _check_actions(data, off + _FLOW_STATS_FIXED, off + flen, xid)
            off += flen
    elif stype == ofp.OFPST_VENDOR:
        # Opaque, like VENDOR messages: os-ken's Nicira stats parsers do not serialize back.
        if body < _VENDOR_STATS.size:
            raise bad("missing vendor id")
        msg = parser.OFPVendorStatsReply(DATAPATH)
        msg.type, msg.flags = stype, flags
        msg.body = parser.OFPVendorStats.parser(data, _STATS_HDR)
        return _W.stamp(msg, data, xid)
    elif stype not in (ofp.OFPST_DESC, ofp.OFPST_AGGREGATE, ofp.OFPST_TABLE, ofp.OFPST_PORT, ofp.OFPST_QUEUE):
        raise _W.bad_request(ofp.OFPBRC_BAD_STAT, f"unknown stats type {stype}", data, xid)
    return _W.osken(parser.OFPStatsReply)(data, xid)


_DECODERS: dict[int, Callable[[bytes, int], Any]] = {
    ofp.OFPT_HELLO: _W.fixed(_HDR, _W.osken(parser.OFPHello), "HELLO", exact=False),
    ofp.OFPT_ERROR: _W.fixed(ofp.OFP_ERROR_MSG_SIZE, _W.osken(parser.OFPErrorMsg), "ERROR", exact=False),
    ofp.OFPT_ECHO_REQUEST: _W.fixed(_HDR, _W.osken(parser.OFPEchoRequest), "ECHO_REQUEST", exact=False),
    ofp.OFPT_ECHO_REPLY: _W.fixed(_HDR, _W.osken(parser.OFPEchoReply), "ECHO_REPLY", exact=False),
    ofp.OFPT_VENDOR: _decode_vendor,
    ofp.OFPT_FEATURES_REQUEST: _W.header_only(parser.OFPFeaturesRequest),
    ofp.OFPT_FEATURES_REPLY: _decode_features_reply,
    ofp.OFPT_GET_CONFIG_REQUEST: _W.header_only(parser.OFPGetConfigRequest),
    ofp.OFPT_GET_CONFIG_REPLY: _W.fixed(ofp.OFP_SWITCH_CONFIG_SIZE, _W.osken(parser.OFPGetConfigReply),
                                        "GET_CONFIG_REPLY"),
    ofp.OFPT_SET_CONFIG: _W.fixed(ofp.OFP_SWITCH_CONFIG_SIZE, _decode_set_config, "SET_CONFIG"),
    ofp.OFPT_PACKET_IN: _W.fixed(ofp.OFP_PACKET_IN_SIZE, _W.osken(parser.OFPPacketIn), "PACKET_IN", exact=False),
    ofp.OFPT_FLOW_REMOVED: _W.fixed(ofp.OFP_FLOW_REMOVED_SIZE, _W.osken(parser.OFPFlowRemoved), "FLOW_REMOVED"),
    ofp.OFPT_PORT_STATUS: _W.fixed(ofp.OFP_PORT_STATUS_SIZE, _W.osken(parser.OFPPortStatus), "PORT_STATUS"),
    ofp.OFPT_PACKET_OUT: _decode_packet_out,
    ofp.OFPT_FLOW_MOD: _decode_flow_mod,
    ofp.OFPT_PORT_MOD: _W.fixed(ofp.OFP_PORT_MOD_SIZE, _decode_port_mod, "PORT_MOD"),
    ofp.OFPT_STATS_REQUEST: _decode_stats_request,
    ofp.OFPT_STATS_REPLY: _decode_stats_reply,
    ofp.OFPT_BARRIER_REQUEST: _W.header_only(parser.OFPBarrierRequest),
    ofp.OFPT_BARRIER_REPLY: _W.header_only(parser.OFPBarrierReply),
    ofp.OFPT_QUEUE_GET_CONFIG_REQUEST: _W.fixed(ofp.OFP_QUEUE_GET_CONFIG_REQUEST_SIZE, _decode_queue_get_config_request,
                                                "QUEUE_GET_CONFIG_REQUEST"),
    ofp.OFPT_QUEUE_GET_CONFIG_REPLY: _decode_queue_get_config_reply,
}


# --------------------------------------------------------------------------
# encoding


def encode(msg: Any) -> bytes:
    """Serialize an os-ken OpenFlow 1.0 message; ``msg.xid`` is kept (None -> 0).

    Controller->switch and symmetric types use os-ken's own ``serialize``;
    switch->controller types, which os-ken can only parse, are written here.
    Like os-ken's ``serialize``, this sets ``version``, ``msg_type``,
    ``msg_len``, ``xid`` and ``buf`` on ``msg``.
    """
    writer = _BODY_WRITERS.get(type(msg))
    if writer is None:
        msg.serialize()
        return bytes(msg.buf)
    return _W.frame(msg, writer(msg))


def _phy_port_fields(port: Any) -> tuple[Any, ...]:
    return (port.port_no, wire.mac_bin(port.hw_addr), wire.text(port.name), port.config, port.state,
            port.curr, port.advertised, port.supported, port.peer)


def _write_features(msg: Any) -> bytes:
    ports = msg.ports or {}
    ports = ports.values() if isinstance(ports, dict) else ports
    head = _FEATURES.pack(msg.datapath_id, msg.n_buffers, msg.n_tables, msg.capabilities, msg.actions)
    return head + b"".join(_PHY_PORT.pack(*_phy_port_fields(p)) for p in ports)


def _write_port_status(msg: Any) -> bytes:
    return _PORT_STATUS.pack(msg.reason, *_phy_port_fields(msg.desc))


def _write_packet_in(msg: Any) -> bytes:
    data = wire.as_bytes(msg.data)
    total_len = len(data) if msg.total_len is None else msg.total_len
    return _PACKET_IN.pack(msg.buffer_id, total_len, msg.in_port, msg.reason) + data


def _write_get_config_reply(msg: Any) -> bytes:
    return _SWITCH_CONFIG.pack(msg.flags, msg.miss_send_len)


def _write_flow_removed(msg: Any) -> bytes:
    return wire.pack_match(msg.match) + _FLOW_REMOVED0.pack(
        msg.cookie, msg.priority, msg.reason, msg.duration_sec, msg.duration_nsec,
        msg.idle_timeout, msg.packet_count, msg.byte_count)


def _write_queue_get_config_reply(msg: Any) -> bytes:
    out = [_QGC_REPLY.pack(msg.port)]
    for queue in msg.queues or ():
        props = []
        for prop in queue.properties or ():
            if prop.property == ofp.OFPQT_MIN_RATE:
                props.append(_QUEUE_PROP.pack(prop.property, ofp.OFP_QUEUE_PROP_MIN_RATE_SIZE)
                             + _MIN_RATE.pack(prop.rate))
            else:
                props.append(_QUEUE_PROP.pack(prop.property, ofp.OFP_QUEUE_PROP_HEADER_SIZE))
        body = b"".join(props)
        out.append(_PACKET_QUEUE.pack(queue.queue_id, ofp.OFP_PACKET_QUEUE_SIZE + len(body)) + body)
    return b"".join(out)


def _as_list(body: Any, single: type) -> list[Any]:
    return [body] if isinstance(body, single) else list(body or ())


def _write_flow_stats(stats: Any) -> bytes:
    actions = wire.serialize_list(stats.actions)
    return (_FLOW_STATS0.pack(_FLOW_STATS_FIXED + len(actions), stats.table_id) + wire.pack_match(stats.match)
            + _FLOW_STATS1.pack(stats.duration_sec, stats.duration_nsec, stats.priority, stats.idle_timeout,
                                stats.hard_timeout, stats.cookie, stats.packet_count, stats.byte_count)
            + actions)


def _write_stats_body(stype: int, body: Any) -> bytes:
    if stype == ofp.OFPST_DESC:
        d = body[0] if isinstance(body, list) else body
        return _DESC_STATS.pack(*(wire.text(getattr(d, f)) for f in parser.OFPDescStats._fields))
    if stype == ofp.OFPST_FLOW:
        return b"".join(_write_flow_stats(s) for s in _as_list(body, parser.OFPFlowStats))
    if stype == ofp.OFPST_AGGREGATE:
        return b"".join(_AGG_STATS.pack(*a) for a in _as_list(body, parser.OFPAggregateStats))
    if stype == ofp.OFPST_TABLE:
        return b"".join(_TABLE_STATS.pack(t.table_id, wire.text(t.name), *t[2:])
                        for t in _as_list(body, parser.OFPTableStats))
    if stype == ofp.OFPST_PORT:
        return b"".join(_PORT_STATS.pack(*p) for p in _as_list(body, parser.OFPPortStats))
    if stype == ofp.OFPST_QUEUE:
        return b"".join(_QUEUE_STATS.pack(*q) for q in _as_list(body, parser.OFPQueueStats))
    if stype == ofp.OFPST_VENDOR:
        v = body[0] if isinstance(body, list) else body
        return bytes(v.specific_data)
    raise ValueError(f"cannot encode stats reply of type {stype}")


def _write_stats_reply(msg: Any) -> bytes:
    stype = msg.type if msg.type is not None else msg.cls_stats_type
    return _STATS.pack(stype, msg.flags or 0) + _write_stats_body(stype, msg.body)


def _write_packet_out(msg: Any) -> bytes:
    return wire.packet_out_body(msg, _PACKET_OUT)


_BODY_WRITERS: dict[type, Callable[[Any], bytes]] = {
    parser.OFPSwitchFeatures: _write_features,
    parser.OFPPortStatus: _write_port_status,
    parser.OFPPacketIn: _write_packet_in,
    parser.OFPGetConfigReply: _write_get_config_reply,
    parser.OFPFlowRemoved: _write_flow_removed,
    parser.OFPQueueGetConfigReply: _write_queue_get_config_reply,
    parser.OFPPacketOut: _write_packet_out,
    **{cls: _write_stats_reply for cls in (
        parser.OFPDescStatsReply, parser.OFPFlowStatsReply, parser.OFPAggregateStatsReply,
        parser.OFPTableStatsReply, parser.OFPPortStatsReply, parser.OFPQueueStatsReply,
        parser.OFPVendorStatsReply)},
}


# --------------------------------------------------------------------------
# names


def msg_type_name(msg: Any) -> str:
    """``"FLOW_MOD"`` for an OFPFlowMod: the OFPT_* name without the prefix."""
    return TYPE_NAME[msg.cls_msg_type]


# Every class decode() can return; their os-ken JSON (with json_view's builders) reads back exactly.
DECODED_CLASSES = frozenset({
    parser.OFPHello, parser.OFPErrorMsg, parser.OFPEchoRequest, parser.OFPEchoReply, parser.OFPVendor,
    parser.OFPFeaturesRequest, parser.OFPSwitchFeatures, parser.OFPGetConfigRequest, parser.OFPGetConfigReply,
    parser.OFPSetConfig, parser.OFPPacketIn, parser.OFPFlowRemoved, parser.OFPPortStatus, parser.OFPPacketOut,
    parser.OFPFlowMod, parser.OFPPortMod, parser.OFPBarrierRequest, parser.OFPBarrierReply,
    parser.OFPQueueGetConfigRequest, parser.OFPQueueGetConfigReply,
    parser.OFPDescStatsRequest, parser.OFPFlowStatsRequest, parser.OFPAggregateStatsRequest,
    parser.OFPTableStatsRequest, parser.OFPPortStatsRequest, parser.OFPQueueStatsRequest,
    parser.OFPVendorStatsRequest,
    parser.OFPDescStatsReply, parser.OFPFlowStatsReply, parser.OFPAggregateStatsReply,
    parser.OFPTableStatsReply, parser.OFPPortStatsReply, parser.OFPQueueStatsReply, parser.OFPVendorStatsReply,
})
