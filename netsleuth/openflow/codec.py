"""OpenFlow 1.0 bytes <-> os-ken message objects, in both directions.

Why this module exists: netsleuth plays the *switch* to real controllers, so
it must read what a controller sends (FLOW_MOD, PACKET_OUT, STATS_REQUEST,
...) and write what a switch sends (FEATURES_REPLY, PACKET_IN, STATS_REPLY,
...).  os-ken, being a controller library, does exactly the opposite: it
parses switch->controller messages and serializes controller->switch ones.
This module fills in the two missing halves with os-ken's own vocabulary (its
pack strings, ``OFPMatch.parse``, ``OFPAction.parser`` and message classes),
so every other part of netsleuth sees one kind of object, os-ken's, whichever
way a message travels.

It is sans-I/O: :func:`decode` takes exactly one complete message and either
returns an object or raises :class:`~netsleuth.errors.CodecError` carrying
the OFPT_ERROR type/code a switch should answer with.  Every structure is
checked *before* os-ken's parsers see it, because those parsers assume
well-formed input (``assert``, silent truncation) and malformed input is
precisely what a fuzzer or a buggy controller produces.

:func:`msg_to_json` / :func:`msg_from_json` give traces a lossless JSON form
built on os-ken's ``to_jsondict``, repaired where os-ken cannot read back
what it wrote (stats messages, vendor messages, switch->controller types).
"""

from __future__ import annotations

import base64
import contextlib
import io
import struct
from collections.abc import Callable
from typing import Any

from os_ken.lib import addrconv
from os_ken.lib.packet import packet as oslib_packet
from os_ken.ofproto import ofproto_v1_0 as ofp
from os_ken.ofproto import ofproto_v1_0_parser as parser

from netsleuth.errors import CodecError, TraceFormatError
from netsleuth.model.ofdp import DATAPATH

__all__ = ["DATAPATH", "decode", "encode", "msg_type_name", "msg_to_json", "msg_from_json"]

OFP_VERSION = ofp.OFP_VERSION
ERROR_DATA_LEN = 64  # OF1.0: an error carries at least the first 64 bytes of the offending request

_TYPE_NAMES = (
    "HELLO", "ERROR", "ECHO_REQUEST", "ECHO_REPLY", "VENDOR", "FEATURES_REQUEST",
    "FEATURES_REPLY", "GET_CONFIG_REQUEST", "GET_CONFIG_REPLY", "SET_CONFIG",
    "PACKET_IN", "FLOW_REMOVED", "PORT_STATUS", "PACKET_OUT", "FLOW_MOD", "PORT_MOD",
    "STATS_REQUEST", "STATS_REPLY", "BARRIER_REQUEST", "BARRIER_REPLY",
    "QUEUE_GET_CONFIG_REQUEST", "QUEUE_GET_CONFIG_REPLY",
)
TYPE_NAME: dict[int, str] = {getattr(ofp, "OFPT_" + n): n for n in _TYPE_NAMES}

# Compiled forms of os-ken's pack strings (see ofproto_v1_0).
_HEADER = struct.Struct(ofp.OFP_HEADER_PACK_STR)
_ACTION_HEADER = struct.Struct("!HH")
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

_HDR = ofp.OFP_HEADER_SIZE
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


def _bad_request(code: int, problem: str, data: bytes, xid: int) -> CodecError:
    return CodecError(problem, ofp.OFPET_BAD_REQUEST, code, xid, bytes(data[:ERROR_DATA_LEN]))


def _bad_action(code: int, problem: str, data: bytes, xid: int) -> CodecError:
    return CodecError(problem, ofp.OFPET_BAD_ACTION, code, xid, bytes(data[:ERROR_DATA_LEN]))


def _need(data: bytes, xid: int, size: int, *, exact: bool, what: str) -> None:
    n = len(data)
    if n < size or (exact and n != size):
        want = f"{size}" if exact else f"at least {size}"
        raise _bad_request(ofp.OFPBRC_BAD_LEN, f"{what} is {n} bytes, expected {want}", data, xid)


# --------------------------------------------------------------------------
# decoding


def decode(data: bytes) -> Any:
    """Decode exactly one complete OpenFlow 1.0 message (header included).

    Returns an os-ken ``ofproto_v1_0_parser`` message object with ``xid``,
    ``version``, ``msg_type``, ``msg_len`` and ``buf`` set.  Raises
    :class:`CodecError` (with the OFPT_ERROR type/code, the xid and the first
    64 bytes) when the bytes are not a valid message.
    """
    data = bytes(data)
    if len(data) < _HDR:
        raise _bad_request(ofp.OFPBRC_BAD_LEN, f"message is {len(data)} bytes, shorter than the OpenFlow header",
                           data, 0)
    version, msg_type, length, xid = _HEADER.unpack_from(data)
    if version != OFP_VERSION:
        raise _bad_request(ofp.OFPBRC_BAD_VERSION, f"OpenFlow version {version} is not 1 (OpenFlow 1.0)", data, xid)
    if length != len(data):
        raise _bad_request(ofp.OFPBRC_BAD_LEN, f"header length {length} but {len(data)} bytes given", data, xid)
    decoder = _DECODERS.get(msg_type)
    if decoder is None:
        raise _bad_request(ofp.OFPBRC_BAD_TYPE, f"unknown OpenFlow 1.0 message type {msg_type}", data, xid)
    return decoder(data, xid)


def _stamp(msg: Any, data: bytes, xid: int) -> Any:
    msg.set_headers(OFP_VERSION, msg.cls_msg_type, len(data), xid)
    msg.set_buf(data)
    return msg


def _check_actions(data: bytes, start: int, end: int, xid: int) -> None:
    """Walk an action list so that os-ken's asserting parsers only see good ones."""
    off = start
    while off < end:
        if end - off < ofp.OFP_ACTION_HEADER_SIZE:
            raise _bad_action(ofp.OFPBAC_BAD_LEN, f"{end - off} trailing bytes are not an action", data, xid)
        atype, alen = _ACTION_HEADER.unpack_from(data, off)
        if alen < ofp.OFP_ACTION_HEADER_SIZE or alen % 8 or off + alen > end:
            raise _bad_action(ofp.OFPBAC_BAD_LEN, f"action type {atype} has bad length {alen}", data, xid)
        if atype == ofp.OFPAT_VENDOR:
            try:  # os-ken's Nicira action parsers reject unknown subtypes and short bodies
                parser.OFPAction.parser(data[off:off + alen], 0)
            except Exception as exc:
                raise _bad_action(ofp.OFPBAC_BAD_VENDOR_TYPE, f"unparseable vendor action: {exc!r}",
                                  data, xid) from exc
        else:
            want = _ACTION_LEN.get(atype)
            if want is None:
                raise _bad_action(ofp.OFPBAC_BAD_TYPE, f"unknown action type {atype}", data, xid)
            if alen != want:
                raise _bad_action(ofp.OFPBAC_BAD_LEN, f"action type {atype} has length {alen}, expected {want}",
                                  data, xid)
        off += alen


def _parse_actions(data: bytes, start: int, end: int, xid: int) -> list[Any]:
    _check_actions(data, start, end, xid)
    actions = []
    off = start
    while off < end:
        actions.append(parser.OFPAction.parser(data, off))
        off += _ACTION_HEADER.unpack_from(data, off)[1]
    return actions


def _osken(cls: Any) -> Callable[[bytes, int], Any]:
    """Decode with os-ken's own parser for ``cls`` (lengths already checked)."""

    def run(data: bytes, xid: int) -> Any:
        try:
            return cls.parser(DATAPATH, OFP_VERSION, cls.cls_msg_type, len(data), xid, data)
        except (struct.error, AssertionError, KeyError, IndexError, TypeError, ValueError) as exc:
            raise _bad_request(ofp.OFPBRC_BAD_LEN, f"os-ken could not parse {cls.__name__}: {exc!r}",
                               data, xid) from exc

    return run


_Decoder = Callable[[bytes, int], Any]


def _fixed(size: int, then: _Decoder, what: str, *, exact: bool = True) -> _Decoder:
    def run(data: bytes, xid: int) -> Any:
        _need(data, xid, size, exact=exact, what=what)
        return then(data, xid)

    return run


def _header_only(cls: Any) -> Callable[[bytes, int], Any]:
    return _fixed(_HDR, lambda data, xid: _stamp(cls(DATAPATH), data, xid), cls.__name__)


def _decode_vendor(data: bytes, xid: int) -> Any:
    # os-ken would turn Nicira payloads into objects it cannot serialize again;
    # keep every vendor message opaque (vendor id + bytes) so it round-trips.
    _need(data, xid, ofp.OFP_VENDOR_HEADER_SIZE, exact=False, what="VENDOR")
    msg = parser.OFPVendor(DATAPATH)
    (msg.vendor,) = _VENDOR.unpack_from(data, _HDR)
    msg.data = data[ofp.OFP_VENDOR_HEADER_SIZE:]
    return _stamp(msg, data, xid)


def _decode_set_config(data: bytes, xid: int) -> Any:
    flags, miss_send_len = _SWITCH_CONFIG.unpack_from(data, _HDR)
    return _stamp(parser.OFPSetConfig(DATAPATH, flags, miss_send_len), data, xid)


def _decode_packet_out(data: bytes, xid: int) -> Any:
    _need(data, xid, ofp.OFP_PACKET_OUT_SIZE, exact=False, what="PACKET_OUT")
    buffer_id, in_port, actions_len = _PACKET_OUT.unpack_from(data, _HDR)
    end = ofp.OFP_PACKET_OUT_SIZE + actions_len
    if end > len(data):
        raise _bad_request(ofp.OFPBRC_BAD_LEN, f"PACKET_OUT actions_len {actions_len} runs past the message",
                           data, xid)
    actions = _parse_actions(data, ofp.OFP_PACKET_OUT_SIZE, end, xid)
    payload = data[end:] or None
    return _stamp(parser.OFPPacketOut(DATAPATH, buffer_id, in_port, actions, payload), data, xid)


def _decode_flow_mod(data: bytes, xid: int) -> Any:
    _need(data, xid, ofp.OFP_FLOW_MOD_SIZE, exact=False, what="FLOW_MOD")
    _check_actions(data, ofp.OFP_FLOW_MOD_SIZE, len(data), xid)
    return _osken(parser.OFPFlowMod)(data, xid)


def _decode_port_mod(data: bytes, xid: int) -> Any:
    port_no, hw_addr, config, mask, advertise = _PORT_MOD.unpack_from(data, _HDR)
    msg = parser.OFPPortMod(DATAPATH, port_no, addrconv.mac.bin_to_text(hw_addr), config, mask, advertise)
    return _stamp(msg, data, xid)


def _decode_queue_get_config_request(data: bytes, xid: int) -> Any:
    (port,) = _QGC_REQUEST.unpack_from(data, _HDR)
    return _stamp(parser.OFPQueueGetConfigRequest(DATAPATH, port), data, xid)


def _decode_stats_request(data: bytes, xid: int) -> Any:
    _need(data, xid, _STATS_HDR, exact=False, what="STATS_REQUEST")
    stype, flags = _STATS.unpack_from(data, _HDR)
    body = len(data) - _STATS_HDR

    def body_len(size: int, exact: bool = True) -> None:
        if body < size or (exact and body != size):
            raise _bad_request(ofp.OFPBRC_BAD_LEN, f"stats request type {stype} body is {body} bytes", data, xid)

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
        raise _bad_request(ofp.OFPBRC_BAD_STAT, f"unknown stats type {stype}", data, xid)
    msg.flags = flags  # os-ken's constructors insist on 0; the wire may say otherwise
    return _stamp(msg, data, xid)


def _decode_features_reply(data: bytes, xid: int) -> Any:
    _need(data, xid, ofp.OFP_SWITCH_FEATURES_SIZE, exact=False, what="FEATURES_REPLY")
    if (len(data) - ofp.OFP_SWITCH_FEATURES_SIZE) % ofp.OFP_PHY_PORT_SIZE:
        raise _bad_request(ofp.OFPBRC_BAD_LEN, "FEATURES_REPLY ports are not whole ofp_phy_port records", data, xid)
    return _osken(parser.OFPSwitchFeatures)(data, xid)


def _decode_queue_get_config_reply(data: bytes, xid: int) -> Any:
    _need(data, xid, ofp.OFP_QUEUE_GET_CONFIG_REPLY_SIZE, exact=False, what="QUEUE_GET_CONFIG_REPLY")
    off, end = ofp.OFP_QUEUE_GET_CONFIG_REPLY_SIZE, len(data)
    while off < end:
        if end - off < ofp.OFP_PACKET_QUEUE_SIZE:
            raise _bad_request(ofp.OFPBRC_BAD_LEN, "truncated ofp_packet_queue", data, xid)
        _, qlen = _PACKET_QUEUE.unpack_from(data, off)
        if qlen < ofp.OFP_PACKET_QUEUE_SIZE or off + qlen > end:
            raise _bad_request(ofp.OFPBRC_BAD_LEN, f"ofp_packet_queue has bad length {qlen}", data, xid)
        poff, pend = off + ofp.OFP_PACKET_QUEUE_SIZE, off + qlen
        while poff < pend:
            if pend - poff < ofp.OFP_QUEUE_PROP_HEADER_SIZE:
                raise _bad_request(ofp.OFPBRC_BAD_LEN, "truncated queue property", data, xid)
            prop, plen = _QUEUE_PROP.unpack_from(data, poff)
            if _QUEUE_PROP_LEN.get(prop) != plen or poff + plen > pend:
                raise _bad_request(ofp.OFPBRC_BAD_LEN, f"queue property {prop} has bad length {plen}", data, xid)
            poff += plen
        off += qlen
    return _osken(parser.OFPQueueGetConfigReply)(data, xid)


def _decode_stats_reply(data: bytes, xid: int) -> Any:
    _need(data, xid, _STATS_HDR, exact=False, what="STATS_REPLY")
    stype, flags = _STATS.unpack_from(data, _HDR)
    body = len(data) - _STATS_HDR

    def bad(why: str) -> CodecError:
        return _bad_request(ofp.OFPBRC_BAD_LEN, f"stats reply type {stype}: {why}", data, xid)

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
        return _stamp(msg, data, xid)
    elif stype not in (ofp.OFPST_DESC, ofp.OFPST_AGGREGATE, ofp.OFPST_TABLE, ofp.OFPST_PORT, ofp.OFPST_QUEUE):
        raise _bad_request(ofp.OFPBRC_BAD_STAT, f"unknown stats type {stype}", data, xid)
    return _osken(parser.OFPStatsReply)(data, xid)


_DECODERS: dict[int, Callable[[bytes, int], Any]] = {
    ofp.OFPT_HELLO: _fixed(_HDR, _osken(parser.OFPHello), "HELLO", exact=False),
    ofp.OFPT_ERROR: _fixed(ofp.OFP_ERROR_MSG_SIZE, _osken(parser.OFPErrorMsg), "ERROR", exact=False),
    ofp.OFPT_ECHO_REQUEST: _fixed(_HDR, _osken(parser.OFPEchoRequest), "ECHO_REQUEST", exact=False),
    ofp.OFPT_ECHO_REPLY: _fixed(_HDR, _osken(parser.OFPEchoReply), "ECHO_REPLY", exact=False),
    ofp.OFPT_VENDOR: _decode_vendor,
    ofp.OFPT_FEATURES_REQUEST: _header_only(parser.OFPFeaturesRequest),
    ofp.OFPT_FEATURES_REPLY: _decode_features_reply,
    ofp.OFPT_GET_CONFIG_REQUEST: _header_only(parser.OFPGetConfigRequest),
    ofp.OFPT_GET_CONFIG_REPLY: _fixed(ofp.OFP_SWITCH_CONFIG_SIZE, _osken(parser.OFPGetConfigReply), "GET_CONFIG_REPLY"),
    ofp.OFPT_SET_CONFIG: _fixed(ofp.OFP_SWITCH_CONFIG_SIZE, _decode_set_config, "SET_CONFIG"),
    ofp.OFPT_PACKET_IN: _fixed(ofp.OFP_PACKET_IN_SIZE, _osken(parser.OFPPacketIn), "PACKET_IN", exact=False),
    ofp.OFPT_FLOW_REMOVED: _fixed(ofp.OFP_FLOW_REMOVED_SIZE, _osken(parser.OFPFlowRemoved), "FLOW_REMOVED"),
    ofp.OFPT_PORT_STATUS: _fixed(ofp.OFP_PORT_STATUS_SIZE, _osken(parser.OFPPortStatus), "PORT_STATUS"),
    ofp.OFPT_PACKET_OUT: _decode_packet_out,
    ofp.OFPT_FLOW_MOD: _decode_flow_mod,
    ofp.OFPT_PORT_MOD: _fixed(ofp.OFP_PORT_MOD_SIZE, _decode_port_mod, "PORT_MOD"),
    ofp.OFPT_STATS_REQUEST: _decode_stats_request,
    ofp.OFPT_STATS_REPLY: _decode_stats_reply,
    ofp.OFPT_BARRIER_REQUEST: _header_only(parser.OFPBarrierRequest),
    ofp.OFPT_BARRIER_REPLY: _header_only(parser.OFPBarrierReply),
    ofp.OFPT_QUEUE_GET_CONFIG_REQUEST: _fixed(ofp.OFP_QUEUE_GET_CONFIG_REQUEST_SIZE, _decode_queue_get_config_request,
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
    body = writer(msg)
    msg.version, msg.msg_type = OFP_VERSION, msg.cls_msg_type
    msg.msg_len = _HDR + len(body)
    if msg.xid is None:
        msg.xid = 0
    out = _HEADER.pack(OFP_VERSION, msg.cls_msg_type, msg.msg_len, msg.xid) + body
    msg.buf = out
    return out


def _mac_bin(mac: Any) -> bytes:
    return addrconv.mac.text_to_bin(mac) if isinstance(mac, str) else bytes(mac)


def _text(value: Any) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def _pack_actions(actions: Any) -> bytes:
    buf = bytearray()
    off = 0
    for action in actions or ():
        action.serialize(buf, off)
        off += action.len
    if len(buf) < off:  # os-ken leaves a vendor action's trailing padding unwritten
        buf += bytes(off - len(buf))
    return bytes(buf)


def _pack_match(match: Any) -> bytes:
    buf = bytearray()
    match.serialize(buf, 0)
    return bytes(buf)


def _phy_port_fields(port: Any) -> tuple[Any, ...]:
    return (port.port_no, _mac_bin(port.hw_addr), _text(port.name), port.config, port.state,
            port.curr, port.advertised, port.supported, port.peer)


def _write_features(msg: Any) -> bytes:
    ports = msg.ports or {}
    ports = ports.values() if isinstance(ports, dict) else ports
    head = _FEATURES.pack(msg.datapath_id, msg.n_buffers, msg.n_tables, msg.capabilities, msg.actions)
    return head + b"".join(_PHY_PORT.pack(*_phy_port_fields(p)) for p in ports)


def _write_port_status(msg: Any) -> bytes:
    return _PORT_STATUS.pack(msg.reason, *_phy_port_fields(msg.desc))


def _write_packet_in(msg: Any) -> bytes:
    data = bytes(msg.data or b"")
    total_len = len(data) if msg.total_len is None else msg.total_len
    return _PACKET_IN.pack(msg.buffer_id, total_len, msg.in_port, msg.reason) + data


def _write_get_config_reply(msg: Any) -> bytes:
    return _SWITCH_CONFIG.pack(msg.flags, msg.miss_send_len)


def _write_flow_removed(msg: Any) -> bytes:
    return _pack_match(msg.match) + _FLOW_REMOVED0.pack(
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
    actions = _pack_actions(stats.actions)
    return (_FLOW_STATS0.pack(_FLOW_STATS_FIXED + len(actions), stats.table_id) + _pack_match(stats.match)
            + _FLOW_STATS1.pack(stats.duration_sec, stats.duration_nsec, stats.priority, stats.idle_timeout,
                                stats.hard_timeout, stats.cookie, stats.packet_count, stats.byte_count)
            + actions)


def _write_stats_body(stype: int, body: Any) -> bytes:
    if stype == ofp.OFPST_DESC:
        d = body[0] if isinstance(body, list) else body
        return _DESC_STATS.pack(*(_text(getattr(d, f)) for f in parser.OFPDescStats._fields))
    if stype == ofp.OFPST_FLOW:
        return b"".join(_write_flow_stats(s) for s in _as_list(body, parser.OFPFlowStats))
    if stype == ofp.OFPST_AGGREGATE:
        return b"".join(_AGG_STATS.pack(*a) for a in _as_list(body, parser.OFPAggregateStats))
    if stype == ofp.OFPST_TABLE:
        return b"".join(_TABLE_STATS.pack(t.table_id, _text(t.name), *t[2:])
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
    # Not os-ken's serialize: it writes data over the fixed part when there are
    # no actions, and refuses data together with a buffer_id (which the wire allows).
    data = msg.data
    if isinstance(data, oslib_packet.Packet):
        data.serialize()
        data = data.data
    actions = _pack_actions(msg.actions)
    return _PACKET_OUT.pack(msg.buffer_id, msg.in_port, len(actions)) + actions + bytes(data or b"")


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
# names and JSON


def msg_type_name(msg: Any) -> str:
    """``"FLOW_MOD"`` for an OFPFlowMod: the OFPT_* name without the prefix."""
    return TYPE_NAME[msg.cls_msg_type]


def msg_to_json(msg: Any) -> dict[str, Any]:
    """``{"type": "FLOW_MOD", "xid": 7, "body": {"OFPFlowMod": {...}}}``: plain JSON values.

    ``body`` is os-ken's ``to_jsondict()`` (bytes as base64), so it can be
    read by os-ken tools too; :func:`msg_from_json` inverts it exactly.  The
    rare message os-ken cannot describe exactly (a port, table or switch
    name that is not text) also gets ``"raw"``: the base64 of its bytes.
    """
    if type(msg) not in _DECODED_CLASSES or (
            isinstance(msg, parser.OFPPacketOut) and isinstance(msg.data, oslib_packet.Packet)):
        # Nicira helpers, os-ken Packet objects...: os-ken cannot read their
        # JSON back, so describe the bytes they serialize to instead.
        xid = msg.xid
        msg = decode(encode(msg))
        msg.xid = xid
    if not _text_fields_ok(msg):
        # os-ken's JSON holds these names as text; for bytes that are not text
        # (a fuzzed switch description...) the body shows them with U+FFFD and
        # "raw" keeps the exact message, which msg_from_json prefers.
        xid = msg.xid
        raw = encode(msg)
        readable = _with_text_fields_replaced(decode(raw))
        return {"type": msg_type_name(msg), "xid": xid, "body": readable.to_jsondict(),
                "raw": base64.b64encode(raw).decode("ascii")}
    return {"type": msg_type_name(msg), "xid": msg.xid, "body": msg.to_jsondict()}


def _decodes(value: Any, encoding: str) -> bool:
    if isinstance(value, str):
        return True
    try:
        bytes(value).decode(encoding)
    except UnicodeDecodeError:
        return False
    return True


def _text_fields_ok(msg: Any) -> bool:
    if isinstance(msg, parser.OFPSwitchFeatures):
        ports = msg.ports.values() if isinstance(msg.ports, dict) else (msg.ports or ())
        return all(_decodes(port.name, "utf-8") for port in ports)
    if isinstance(msg, parser.OFPPortStatus):
        return _decodes(msg.desc.name, "utf-8")
    if isinstance(msg, parser.OFPDescStatsReply):
        desc = msg.body[0] if isinstance(msg.body, list) else msg.body
        return all(_decodes(field, "ascii") for field in desc)
    if isinstance(msg, parser.OFPTableStatsReply):
        return all(_decodes(table.name, "utf-8") for table in msg.body or ())
    return True


def _as_text(value: bytes, encoding: str) -> bytes:
    return bytes(value).decode(encoding, "replace").encode(encoding, "replace")


def _with_text_fields_replaced(msg: Any) -> Any:
    """``msg`` (freshly decoded) with undecodable names made text, for display only."""
    if isinstance(msg, parser.OFPSwitchFeatures):
        msg.ports = {no: port._replace(name=_as_text(port.name, "utf-8")) for no, port in msg.ports.items()}
    elif isinstance(msg, parser.OFPPortStatus):
        msg.desc = msg.desc._replace(name=_as_text(msg.desc.name, "utf-8"))
    elif isinstance(msg, parser.OFPDescStatsReply):
        msg.body = parser.OFPDescStats(*(_as_text(field, "ascii") for field in msg.body))
    elif isinstance(msg, parser.OFPTableStatsReply):
        msg.body = [table._replace(name=_as_text(table.name, "utf-8")) for table in msg.body]
    return msg


def msg_from_json(d: dict[str, Any]) -> Any:
    """Rebuild the message :func:`msg_to_json` described (``encode`` gives the same bytes)."""
    if "raw" in d:
        msg = decode(base64.b64decode(d["raw"]))
        msg.xid = d.get("xid", msg.xid)
        return msg
    ((cls_name, attrs),) = d["body"].items()
    cls = getattr(parser, cls_name, None)
    if cls not in _DECODED_CLASSES:
        raise TraceFormatError(f"{cls_name!r} is not an OpenFlow 1.0 message class netsleuth records",
                               "record messages with netsleuth.openflow.codec.msg_to_json")
    builder = _JSON_BUILDERS.get(cls)
    if builder is not None:
        msg = builder(cls, dict(attrs))
    elif issubclass(cls, parser.OFPStatsReply):  # type: ignore[arg-type]  # a class: cls is in _DECODED_CLASSES
        msg = _stats_reply_from_json(cls, dict(attrs))
    else:
        msg = _osken_from_jsondict(cls, dict(attrs), datapath=DATAPATH)
    msg.xid = d.get("xid")
    return msg


def _osken_from_jsondict(cls: Any, attrs: dict[str, Any], **extra: Any) -> Any:
    # os-ken prints its arguments to stdout before re-raising a TypeError; keep stdout clean.
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return cls.from_jsondict(attrs, **extra)
    except (TypeError, ValueError, KeyError) as exc:
        raise TraceFormatError(f"cannot rebuild {cls.__name__} from JSON: {exc}",
                               "record messages with netsleuth.openflow.codec.msg_to_json") from exc


def _action_from_json(entry: dict[str, Any]) -> Any:
    ((name, fields),) = entry.items()
    cls = getattr(parser, name, None)
    if not (isinstance(cls, type) and issubclass(cls, parser.OFPAction)):
        raise TraceFormatError(f"{name!r} is not an OpenFlow 1.0 action class",
                               "record messages with netsleuth.openflow.codec.msg_to_json")
    fields = dict(fields)
    if issubclass(cls, _NX_ACTION):
        # os-ken writes these two but its Nicira constructors set them themselves
        # (except the catch-all NXActionUnknown, which takes the subtype).
        fields.pop("vendor", None)
        if cls.__name__ != "NXActionUnknown":
            fields.pop("subtype", None)
    return _osken_from_jsondict(cls, fields)


def _with_actions_from_json(cls: Any, attrs: dict[str, Any]) -> Any:
    actions = [_action_from_json(a) for a in attrs.pop("actions", None) or ()]
    msg = _osken_from_jsondict(cls, attrs, datapath=DATAPATH)
    msg.actions = actions
    return msg


def _b64(value: Any) -> bytes:
    return base64.b64decode(value) if isinstance(value, str) else bytes(value or b"")


def _stats_request_from_json(cls: Any, attrs: dict[str, Any]) -> Any:
    attrs.pop("type", None)  # implied by the class; os-ken's constructors do not take it
    flags = attrs.pop("flags", 0)
    msg = _osken_from_jsondict(cls, dict(attrs, flags=0), datapath=DATAPATH)
    msg.flags = flags
    return msg


def _vendor_from_json(cls: Any, attrs: dict[str, Any]) -> Any:
    msg = cls(DATAPATH)
    msg.vendor = attrs["vendor"]
    msg.data = _b64(attrs["data"])
    return msg


def _bag_from_json(cls: Any, attrs: dict[str, Any]) -> Any:
    """For classes whose constructor takes only the datapath: set attributes directly."""
    msg = cls(DATAPATH)
    for key, value in attrs.items():
        setattr(msg, key, cls._decode_value(key, value))
    return msg


def _flow_removed_from_json(cls: Any, attrs: dict[str, Any]) -> Any:
    msg = cls(DATAPATH)
    for key, value in attrs.items():
        setattr(msg, key, value)
    msg.match = parser.OFPMatch.from_jsondict(attrs["match"]["OFPMatch"])
    return msg


def _queue_get_config_reply_from_json(cls: Any, attrs: dict[str, Any]) -> Any:
    msg = cls(DATAPATH)
    msg.port = attrs["port"]
    msg.queues = []
    for entry in attrs["queues"]:
        (q,) = entry.values()
        queue = parser.OFPPacketQueue(q["queue_id"], q["len"])
        queue.properties = []
        for prop_entry in q["properties"]:
            ((prop_cls_name, prop),) = prop_entry.items()
            if prop_cls_name == "OFPQueuePropMinRate":
                queue.properties.append(parser.OFPQueuePropMinRate(prop["rate"]))
            else:
                queue.properties.append(parser.OFPQueuePropNone())
        msg.queues.append(queue)
    return msg


def _flow_stats_from_json(value: dict[str, Any]) -> Any:
    (fields,) = value.values()
    stats = parser.OFPFlowStats()
    for key, v in fields.items():
        setattr(stats, key, v)
    stats.match = parser.OFPMatch.from_jsondict(fields["match"]["OFPMatch"])
    stats.actions = [_action_from_json(a) for a in fields["actions"]]
    return stats


def _record_from_json(cls: Any, value: dict[str, Any]) -> Any:
    (fields,) = value.values()
    text = {f for fields_ in getattr(cls, "_TYPE", {}).values() for f in fields_}
    record = cls(**{f: (fields[f].encode("utf-8") if f in text else fields[f]) for f in cls._fields})
    return record


def _stats_reply_from_json(cls: Any, attrs: dict[str, Any]) -> Any:
    msg = cls(DATAPATH)
    msg.type, msg.flags = attrs.get("type"), attrs.get("flags")
    body: Any = attrs.get("body")
    stype = cls.cls_stats_type
    if stype == ofp.OFPST_VENDOR:
        entry = body[0] if isinstance(body, list) else body
        (fields,) = entry.values()
        msg.body = parser.OFPVendorStats(_b64(fields["specific_data"]))
    elif stype == ofp.OFPST_FLOW:
        msg.body = [_flow_stats_from_json(e) for e in body]
    elif stype == ofp.OFPST_DESC:
        msg.body = _record_from_json(parser.OFPDescStats, body)
    else:
        msg.body = [_record_from_json(cls.cls_stats_body_cls, e) for e in body]
    return msg


_JSON_BUILDERS: dict[Any, Callable[[Any, dict[str, Any]], Any]] = {
    parser.OFPVendor: _vendor_from_json,
    parser.OFPFlowMod: _with_actions_from_json,
    parser.OFPPacketOut: _with_actions_from_json,
    parser.OFPGetConfigReply: _bag_from_json,
    parser.OFPFlowRemoved: _flow_removed_from_json,
    parser.OFPQueueGetConfigReply: _queue_get_config_reply_from_json,
    **{cls: _stats_request_from_json for cls in (
        parser.OFPDescStatsRequest, parser.OFPFlowStatsRequest, parser.OFPAggregateStatsRequest,
        parser.OFPTableStatsRequest, parser.OFPPortStatsRequest, parser.OFPQueueStatsRequest,
        parser.OFPVendorStatsRequest)},
}

# Every class decode() can return; their os-ken JSON (with the builders above) reads back exactly.
_DECODED_CLASSES = frozenset({
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
