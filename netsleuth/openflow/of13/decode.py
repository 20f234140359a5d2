"""Decoding: 1.3 bytes a controller (or a switch) sends -> os-ken message objects.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from os_ken.lib import addrconv
from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

from netsleuth.openflow.of13.checks import (
    _check_bands,
    _check_buckets,
    _check_instructions,
    _check_match,
    _check_table_features,
    _parse_actions,
    _parse_bands,
    _parse_buckets,
    _parse_table_features,
)
from netsleuth.openflow.of13.layout import (
    _AGG_STATS,
    _ASYNC,
    _BUCKET_COUNTER,
    _DESC,
    _EXP_MP,
    _EXPERIMENTER,
    _FLOW_STATS_REQ0,
    _GROUP_DESC,
    _GROUP_FEATURES,
    _GROUP_MOD,
    _GROUP_STATS,
    _GROUP_STATS_REQ,
    _HDR,
    _HELLO_ELEM,
    _METER_BAND_STATS,
    _METER_CONFIG,
    _METER_FEATURES,
    _METER_MOD,
    _METER_MP_REQ,
    _METER_STATS,
    _MP_HDR,
    _MULTIPART,
    _PACKET_IN,
    _PACKET_OUT,
    _PACKET_QUEUE,
    _PORT,
    _PORT_MOD,
    _PORT_STATS,
    _PORT_STATS_REQ,
    _QGC_REQUEST,
    _QUEUE_PROP,
    _QUEUE_STATS,
    _QUEUE_STATS_REQ,
    _ROLE,
    _SWITCH_CONFIG,
    _TABLE_MOD,
    _TABLE_STATS,
    _W,
    DATAPATH,
    _Decoder,
    _round8,
)

# --------------------------------------------------------------------------
# decoding


def decode(data: bytes) -> Any:
    """Decode exactly one complete OpenFlow 1.3 message (header included).

    Returns an os-ken ``ofproto_v1_3_parser`` message object with ``xid``,
    ``version``, ``msg_type``, ``msg_len`` and ``buf`` set.  Raises
    :class:`CodecError` (the 1.3 error type/code, the xid and the first 64
    bytes) when the bytes are not a valid message.
    """
    return _W.decode(data, _DECODERS)


def _decode_hello(data: bytes, xid: int) -> Any:
    # os-ken's HELLO parser loops forever on a zero-length element; walk them here.
    elements = []
    off, end = _HDR, len(data)
    while off < end:
        if end - off < _HELLO_ELEM.size:
            raise _W.bad_len("truncated HELLO element", data, xid)
        etype, elen = _HELLO_ELEM.unpack_from(data, off)
        if elen < _HELLO_ELEM.size or off + elen > end:
            raise _W.bad_len(f"HELLO element type {etype} has bad length {elen}", data, xid)
        if etype == ofp.OFPHET_VERSIONBITMAP:
            elements.append(parser.OFPHelloElemVersionBitmap.parser(data, off))
        off += min(_round8(elen), end - off)  # elements are padded to 8 bytes
    msg = parser.OFPHello(DATAPATH, elements)
    return _W.stamp(msg, data, xid)


def _decode_error(data: bytes, xid: int) -> Any:
    _W.need(data, xid, ofp.OFP_ERROR_MSG_SIZE, exact=False, what="ERROR")
    (etype,) = struct.unpack_from("!H", data, _HDR)
    if etype == ofp.OFPET_EXPERIMENTER:
        _W.need(data, xid, ofp.OFP_ERROR_EXPERIMENTER_MSG_SIZE, exact=False, what="experimenter ERROR")
    return _W.osken(parser.OFPErrorMsg)(data, xid)


def _decode_experimenter(data: bytes, xid: int) -> Any:
    # Kept opaque (experimenter, exp_type, bytes): os-ken turns some Nicira
    # payloads into classes it cannot serialize back.
    _W.need(data, xid, ofp.OFP_EXPERIMENTER_HEADER_SIZE, exact=False, what="EXPERIMENTER")
    experimenter, exp_type = _EXPERIMENTER.unpack_from(data, _HDR)
    msg = parser.OFPExperimenter(DATAPATH, experimenter, exp_type, data[ofp.OFP_EXPERIMENTER_HEADER_SIZE:])
    return _W.stamp(msg, data, xid)


def _decode_set_config(data: bytes, xid: int) -> Any:
    flags, miss_send_len = _SWITCH_CONFIG.unpack_from(data, _HDR)
    return _W.stamp(parser.OFPSetConfig(DATAPATH, flags, miss_send_len), data, xid)


def _decode_packet_in(data: bytes, xid: int) -> Any:
    _W.need(data, xid, ofp.OFP_PACKET_IN_SIZE, exact=False, what="PACKET_IN")
    mlen = _check_match(data, _HDR + _PACKET_IN.size, len(data), xid)
    if _HDR + _PACKET_IN.size + mlen + 2 > len(data):
        raise _W.bad_len("PACKET_IN lacks the 2 pad bytes after its match", data, xid)
    return _W.osken(parser.OFPPacketIn)(data, xid)


def _decode_flow_removed(data: bytes, xid: int) -> Any:
    _W.need(data, xid, ofp.OFP_FLOW_REMOVED_SIZE, exact=False, what="FLOW_REMOVED")
    start = ofp.OFP_FLOW_REMOVED_SIZE - ofp.OFP_MATCH_SIZE
    mlen = _check_match(data, start, len(data), xid)
    if start + mlen != len(data):
        raise _W.bad_len("FLOW_REMOVED has bytes after its match", data, xid)
    return _W.osken(parser.OFPFlowRemoved)(data, xid)


def _decode_port_status(data: bytes, xid: int) -> Any:
    return _W.osken(parser.OFPPortStatus)(data, xid)


def _decode_packet_out(data: bytes, xid: int) -> Any:
    _W.need(data, xid, ofp.OFP_PACKET_OUT_SIZE, exact=False, what="PACKET_OUT")
    buffer_id, in_port, actions_len = _PACKET_OUT.unpack_from(data, _HDR)
    end = ofp.OFP_PACKET_OUT_SIZE + actions_len
    if end > len(data):
        raise _W.bad_len(f"PACKET_OUT actions_len {actions_len} runs past the message", data, xid)
    actions = _parse_actions(data, ofp.OFP_PACKET_OUT_SIZE, end, xid)
    payload = data[end:] or None
    return _W.stamp(parser.OFPPacketOut(DATAPATH, buffer_id, in_port, actions, payload), data, xid)


def _decode_flow_mod(data: bytes, xid: int) -> Any:
    _W.need(data, xid, ofp.OFP_FLOW_MOD_SIZE, exact=False, what="FLOW_MOD")
    start = ofp.OFP_FLOW_MOD_SIZE - ofp.OFP_MATCH_SIZE
    mlen = _check_match(data, start, len(data), xid)
    _check_instructions(data, start + mlen, len(data), xid)
    return _W.osken(parser.OFPFlowMod)(data, xid)


def _decode_group_mod(data: bytes, xid: int) -> Any:
    _W.need(data, xid, ofp.OFP_GROUP_MOD_SIZE, exact=False, what="GROUP_MOD")
    command, gtype, group_id = _GROUP_MOD.unpack_from(data, _HDR)
    buckets = _parse_buckets(data, ofp.OFP_GROUP_MOD_SIZE, len(data), xid)
    return _W.stamp(parser.OFPGroupMod(DATAPATH, command, gtype, group_id, buckets), data, xid)


def _decode_port_mod(data: bytes, xid: int) -> Any:
    port_no, hw_addr, config, mask, advertise = _PORT_MOD.unpack_from(data, _HDR)
    msg = parser.OFPPortMod(DATAPATH, port_no, addrconv.mac.bin_to_text(hw_addr), config, mask, advertise)
    return _W.stamp(msg, data, xid)


def _decode_meter_mod(data: bytes, xid: int) -> Any:
    _W.need(data, xid, ofp.OFP_METER_MOD_SIZE, exact=False, what="METER_MOD")
    command, flags, meter_id = _METER_MOD.unpack_from(data, _HDR)
    bands = _parse_bands(data, ofp.OFP_METER_MOD_SIZE, len(data), xid,
                         err_type=ofp.OFPET_METER_MOD_FAILED, bad_band=ofp.OFPMMFC_BAD_BAND)
    return _W.stamp(parser.OFPMeterMod(DATAPATH, command, flags, meter_id, bands), data, xid)


def _decode_table_mod(data: bytes, xid: int) -> Any:
    table_id, config = _TABLE_MOD.unpack_from(data, _HDR)
    return _W.stamp(parser.OFPTableMod(DATAPATH, table_id, config), data, xid)


def _decode_multipart_request(data: bytes, xid: int) -> Any:
    _W.need(data, xid, _MP_HDR, exact=False, what="MULTIPART_REQUEST")
    mtype, flags = _MULTIPART.unpack_from(data, _HDR)
    body = len(data) - _MP_HDR

    def body_len(size: int) -> None:
        if body != size:
            raise _W.bad_len(f"multipart request type {mtype} body is {body} bytes, expected {size}", data, xid)

    msg: Any
    empty = {ofp.OFPMP_DESC: parser.OFPDescStatsRequest, ofp.OFPMP_TABLE: parser.OFPTableStatsRequest,
             ofp.OFPMP_GROUP_DESC: parser.OFPGroupDescStatsRequest,
             ofp.OFPMP_GROUP_FEATURES: parser.OFPGroupFeaturesStatsRequest,
             ofp.OFPMP_METER_FEATURES: parser.OFPMeterFeaturesStatsRequest,
             ofp.OFPMP_PORT_DESC: parser.OFPPortDescStatsRequest}
    if mtype in empty:
        body_len(0)
        msg = empty[mtype](DATAPATH, flags)
    elif mtype in (ofp.OFPMP_FLOW, ofp.OFPMP_AGGREGATE):
        if body < _FLOW_STATS_REQ0.size + 4:
            raise _W.bad_len(f"multipart request type {mtype} body is {body} bytes", data, xid)
        table_id, out_port, out_group, cookie, cookie_mask = _FLOW_STATS_REQ0.unpack_from(data, _MP_HDR)
        moff = _MP_HDR + _FLOW_STATS_REQ0.size
        mlen = _check_match(data, moff, len(data), xid)
        body_len(_FLOW_STATS_REQ0.size + mlen)
        match = parser.OFPMatch.parser(data, moff)
        cls = parser.OFPFlowStatsRequest if mtype == ofp.OFPMP_FLOW else parser.OFPAggregateStatsRequest
        msg = cls(DATAPATH, flags, table_id, out_port, out_group, cookie, cookie_mask, match)
    elif mtype == ofp.OFPMP_PORT_STATS:
        body_len(_PORT_STATS_REQ.size)
        msg = parser.OFPPortStatsRequest(DATAPATH, flags, _PORT_STATS_REQ.unpack_from(data, _MP_HDR)[0])
    elif mtype == ofp.OFPMP_QUEUE:
        body_len(_QUEUE_STATS_REQ.size)
        port_no, queue_id = _QUEUE_STATS_REQ.unpack_from(data, _MP_HDR)
        msg = parser.OFPQueueStatsRequest(DATAPATH, flags, port_no, queue_id)
    elif mtype == ofp.OFPMP_GROUP:
        body_len(_GROUP_STATS_REQ.size)
        msg = parser.OFPGroupStatsRequest(DATAPATH, flags, _GROUP_STATS_REQ.unpack_from(data, _MP_HDR)[0])
    elif mtype in (ofp.OFPMP_METER, ofp.OFPMP_METER_CONFIG):
        body_len(_METER_MP_REQ.size)
        cls = parser.OFPMeterStatsRequest if mtype == ofp.OFPMP_METER else parser.OFPMeterConfigStatsRequest
        msg = cls(DATAPATH, flags, _METER_MP_REQ.unpack_from(data, _MP_HDR)[0])
    elif mtype == ofp.OFPMP_TABLE_FEATURES:
        msg = parser.OFPTableFeaturesStatsRequest(DATAPATH, flags,
                                                  _parse_table_features(data, _MP_HDR, len(data), xid))
    elif mtype == ofp.OFPMP_EXPERIMENTER:
        if body < _EXP_MP.size:
            raise _W.bad_len("experimenter multipart request lacks its experimenter id and type", data, xid)
        experimenter, exp_type = _EXP_MP.unpack_from(data, _MP_HDR)
        msg = parser.OFPExperimenterStatsRequest(DATAPATH, flags, experimenter, exp_type,
                                                 data[_MP_HDR + _EXP_MP.size:])
    else:
        raise _W.error(ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_MULTIPART, f"unknown multipart type {mtype}", data, xid)
    return _W.stamp(msg, data, xid)


def _check_records(data: bytes, xid: int, mtype: int, *, len_at: int, minimum: int,
                   inner: Callable[[int, int], None] | None = None) -> None:
    """Variable-length multipart reply records: a 16-bit length at ``len_at`` of each."""
    off, end = _MP_HDR, len(data)
    while off < end:
        if end - off < minimum:
            raise _W.bad_len(f"multipart reply type {mtype}: truncated record", data, xid)
        (rlen,) = struct.unpack_from("!H", data, off + len_at)
        if rlen < minimum or off + rlen > end:
            raise _W.bad_len(f"multipart reply type {mtype}: record has bad length {rlen}", data, xid)
        if inner is not None:
            inner(off, off + rlen)
        off += rlen


def _decode_multipart_reply(data: bytes, xid: int) -> Any:
    _W.need(data, xid, _MP_HDR, exact=False, what="MULTIPART_REPLY")
    mtype, _ = _MULTIPART.unpack_from(data, _HDR)
    body = len(data) - _MP_HDR
    fixed = {ofp.OFPMP_DESC: _DESC.size, ofp.OFPMP_AGGREGATE: _AGG_STATS.size,
             ofp.OFPMP_GROUP_FEATURES: _GROUP_FEATURES.size, ofp.OFPMP_METER_FEATURES: _METER_FEATURES.size}
    records = {ofp.OFPMP_TABLE: _TABLE_STATS.size, ofp.OFPMP_PORT_STATS: _PORT_STATS.size,
               ofp.OFPMP_QUEUE: _QUEUE_STATS.size, ofp.OFPMP_PORT_DESC: _PORT.size}

    def flow_stats(off: int, end: int) -> None:
        start = off + ofp.OFP_FLOW_STATS_SIZE - ofp.OFP_MATCH_SIZE
        if start + 4 > end:
            raise _W.bad_len("truncated ofp_flow_stats", data, xid)
        mlen = _check_match(data, start, end, xid)
        _check_instructions(data, start + mlen, end, xid)

    def group_stats(off: int, end: int) -> None:
        if (end - off - _GROUP_STATS.size) % _BUCKET_COUNTER.size:
            raise _W.bad_len("ofp_group_stats bucket counters are not whole", data, xid)

    def group_desc(off: int, end: int) -> None:
        _check_buckets(data, off + _GROUP_DESC.size, end, xid)

    def meter_stats(off: int, end: int) -> None:
        if (end - off - _METER_STATS.size) % _METER_BAND_STATS.size:
            raise _W.bad_len("ofp_meter_stats band stats are not whole", data, xid)

    def meter_config(off: int, end: int) -> None:
        _check_bands(data, off + _METER_CONFIG.size, end, xid, err_type=ofp.OFPET_BAD_REQUEST,
                     bad_band=ofp.OFPBRC_BAD_LEN)

    if mtype in fixed:
        if body != fixed[mtype]:
            raise _W.bad_len(f"multipart reply type {mtype} body is {body} bytes, expected {fixed[mtype]}", data, xid)
    elif mtype in records:
        if body % records[mtype]:
            raise _W.bad_len(f"multipart reply type {mtype} body is not whole {records[mtype]}-byte records",
                             data, xid)
    elif mtype == ofp.OFPMP_FLOW:
        _check_records(data, xid, mtype, len_at=0, minimum=ofp.OFP_FLOW_STATS_SIZE, inner=flow_stats)
    elif mtype == ofp.OFPMP_GROUP:
        _check_records(data, xid, mtype, len_at=0, minimum=_GROUP_STATS.size, inner=group_stats)
    elif mtype == ofp.OFPMP_GROUP_DESC:
        _check_records(data, xid, mtype, len_at=0, minimum=_GROUP_DESC.size, inner=group_desc)
    elif mtype == ofp.OFPMP_METER:
        _check_records(data, xid, mtype, len_at=4, minimum=_METER_STATS.size, inner=meter_stats)
    elif mtype == ofp.OFPMP_METER_CONFIG:
        _check_records(data, xid, mtype, len_at=0, minimum=_METER_CONFIG.size, inner=meter_config)
    elif mtype == ofp.OFPMP_TABLE_FEATURES:
        _check_table_features(data, _MP_HDR, len(data), xid)
    elif mtype == ofp.OFPMP_EXPERIMENTER:
        if body < _EXP_MP.size:
            raise _W.bad_len("experimenter multipart reply lacks its experimenter id and type", data, xid)
        # os-ken reads the rest of the message as one record (a list of one, like its other bodies).
    else:
        raise _W.error(ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_MULTIPART, f"unknown multipart type {mtype}", data, xid)
    if body == 0 and mtype in fixed:
        raise _W.bad_len(f"multipart reply type {mtype} has no body", data, xid)
    return _W.osken(parser.OFPMultipartReply)(data, xid)


def _decode_queue_get_config_reply(data: bytes, xid: int) -> Any:
    _W.need(data, xid, ofp.OFP_QUEUE_GET_CONFIG_REPLY_SIZE, exact=False, what="QUEUE_GET_CONFIG_REPLY")
    off, end = ofp.OFP_QUEUE_GET_CONFIG_REPLY_SIZE, len(data)
    while off < end:
        if end - off < ofp.OFP_PACKET_QUEUE_SIZE:
            raise _W.bad_len("truncated ofp_packet_queue", data, xid)
        _qid, _port, qlen = _PACKET_QUEUE.unpack_from(data, off)
        if qlen < ofp.OFP_PACKET_QUEUE_SIZE or off + qlen > end:
            raise _W.bad_len(f"ofp_packet_queue has bad length {qlen}", data, xid)
        poff, pend = off + ofp.OFP_PACKET_QUEUE_SIZE, off + qlen
        while poff < pend:
            if pend - poff < ofp.OFP_QUEUE_PROP_HEADER_SIZE:
                raise _W.bad_len("truncated queue property", data, xid)
            prop, plen = _QUEUE_PROP.unpack_from(data, poff)
            if prop not in (ofp.OFPQT_MIN_RATE, ofp.OFPQT_MAX_RATE, ofp.OFPQT_EXPERIMENTER):
                # os-ken's queue parser loops forever on a property type it does not know
                raise _W.bad_len(f"unknown queue property type {prop}", data, xid)
            want = 16 if prop != ofp.OFPQT_EXPERIMENTER else None
            if (want is not None and plen != want) or plen < 16 or plen % 8 or poff + plen > pend:
                raise _W.bad_len(f"queue property {prop} has bad length {plen}", data, xid)
            poff += plen
        off += qlen
    return _W.osken(parser.OFPQueueGetConfigReply)(data, xid)


def _decode_queue_get_config_request(data: bytes, xid: int) -> Any:
    (port,) = _QGC_REQUEST.unpack_from(data, _HDR)
    return _W.stamp(parser.OFPQueueGetConfigRequest(DATAPATH, port), data, xid)


def _decode_role_request(data: bytes, xid: int) -> Any:
    role, generation_id = _ROLE.unpack_from(data, _HDR)
    return _W.stamp(parser.OFPRoleRequest(DATAPATH, role, generation_id), data, xid)


def _decode_set_async(data: bytes, xid: int) -> Any:
    v = _ASYNC.unpack_from(data, _HDR)
    msg = parser.OFPSetAsync(DATAPATH, [v[0], v[1]], [v[2], v[3]], [v[4], v[5]])
    return _W.stamp(msg, data, xid)


_DECODERS: dict[int, _Decoder] = {
    ofp.OFPT_HELLO: _decode_hello,
    ofp.OFPT_ERROR: _decode_error,
    ofp.OFPT_ECHO_REQUEST: _W.osken(parser.OFPEchoRequest),
    ofp.OFPT_ECHO_REPLY: _W.osken(parser.OFPEchoReply),
    ofp.OFPT_EXPERIMENTER: _decode_experimenter,
    ofp.OFPT_FEATURES_REQUEST: _W.header_only(parser.OFPFeaturesRequest),
    ofp.OFPT_FEATURES_REPLY: _W.fixed(ofp.OFP_SWITCH_FEATURES_SIZE, _W.osken(parser.OFPSwitchFeatures),
                                      "FEATURES_REPLY"),
    ofp.OFPT_GET_CONFIG_REQUEST: _W.header_only(parser.OFPGetConfigRequest),
    ofp.OFPT_GET_CONFIG_REPLY: _W.fixed(ofp.OFP_SWITCH_CONFIG_SIZE, _W.osken(parser.OFPGetConfigReply),
                                        "GET_CONFIG_REPLY"),
    ofp.OFPT_SET_CONFIG: _W.fixed(ofp.OFP_SWITCH_CONFIG_SIZE, _decode_set_config, "SET_CONFIG"),
    ofp.OFPT_PACKET_IN: _decode_packet_in,
    ofp.OFPT_FLOW_REMOVED: _decode_flow_removed,
    ofp.OFPT_PORT_STATUS: _W.fixed(ofp.OFP_PORT_STATUS_SIZE, _decode_port_status, "PORT_STATUS"),
    ofp.OFPT_PACKET_OUT: _decode_packet_out,
    ofp.OFPT_FLOW_MOD: _decode_flow_mod,
    ofp.OFPT_GROUP_MOD: _decode_group_mod,
    ofp.OFPT_PORT_MOD: _W.fixed(ofp.OFP_PORT_MOD_SIZE, _decode_port_mod, "PORT_MOD"),
    ofp.OFPT_TABLE_MOD: _W.fixed(ofp.OFP_TABLE_MOD_SIZE, _decode_table_mod, "TABLE_MOD"),
    ofp.OFPT_MULTIPART_REQUEST: _decode_multipart_request,
    ofp.OFPT_MULTIPART_REPLY: _decode_multipart_reply,
    ofp.OFPT_BARRIER_REQUEST: _W.header_only(parser.OFPBarrierRequest),
    ofp.OFPT_BARRIER_REPLY: _W.header_only(parser.OFPBarrierReply),
    ofp.OFPT_QUEUE_GET_CONFIG_REQUEST: _W.fixed(ofp.OFP_QUEUE_GET_CONFIG_REQUEST_SIZE,
                                                _decode_queue_get_config_request, "QUEUE_GET_CONFIG_REQUEST"),
    ofp.OFPT_QUEUE_GET_CONFIG_REPLY: _decode_queue_get_config_reply,
    ofp.OFPT_ROLE_REQUEST: _W.fixed(ofp.OFP_ROLE_REQUEST_SIZE, _decode_role_request, "ROLE_REQUEST"),
    ofp.OFPT_ROLE_REPLY: _W.fixed(ofp.OFP_ROLE_REQUEST_SIZE, _W.osken(parser.OFPRoleReply), "ROLE_REPLY"),
    ofp.OFPT_GET_ASYNC_REQUEST: _W.header_only(parser.OFPGetAsyncRequest),
    ofp.OFPT_GET_ASYNC_REPLY: _W.fixed(ofp.OFP_ASYNC_CONFIG_SIZE, _W.osken(parser.OFPGetAsyncReply), "GET_ASYNC_REPLY"),
    ofp.OFPT_SET_ASYNC: _W.fixed(ofp.OFP_ASYNC_CONFIG_SIZE, _decode_set_async, "SET_ASYNC"),
    ofp.OFPT_METER_MOD: _decode_meter_mod,
}
