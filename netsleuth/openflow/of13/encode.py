"""Encoding: os-ken message objects -> the 1.3 bytes a switch (or a controller) sends.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

from netsleuth.openflow import wire
from netsleuth.openflow.of13.layout import (
    _AGG_STATS,
    _ASYNC,
    _BUCKET_COUNTER,
    _DESC,
    _FEATURES,
    _FLOW_REMOVED0,
    _FLOW_STATS0,
    _GROUP_DESC,
    _GROUP_FEATURES,
    _GROUP_STATS,
    _HELLO_ELEM,
    _METER_BAND_STATS,
    _METER_CONFIG,
    _METER_FEATURES,
    _METER_STATS,
    _MULTIPART,
    _PACKET_IN,
    _PACKET_OUT,
    _PACKET_QUEUE,
    _PORT,
    _PORT_STATS,
    _PORT_STATUS,
    _QGC_REPLY,
    _QUEUE_PROP,
    _QUEUE_STATS,
    _ROLE,
    _SWITCH_CONFIG,
    _TABLE_STATS,
    _W,
    DATAPATH,
    _round8,
)

# --------------------------------------------------------------------------
# encoding


def hello(versions: list[int] | tuple[int, ...]) -> Any:
    """A 1.3 HELLO announcing ``versions`` (wire numbers) in a version-bitmap element."""
    return parser.OFPHello(DATAPATH, [parser.OFPHelloElemVersionBitmap(sorted(versions))])


def encode(msg: Any) -> bytes:
    """Serialize an os-ken OpenFlow 1.3 message; ``msg.xid`` is kept (None -> 0).

    Controller->switch and symmetric types use os-ken's own ``serialize``;
    switch->controller types, which os-ken can only parse, are written here.
    Like os-ken's ``serialize``, this sets ``version``, ``msg_type``,
    ``msg_len``, ``xid`` and ``buf`` on ``msg``.
    """
    writer = _BODY_WRITERS.get(type(msg))
    if writer is None and isinstance(msg, parser.OFPMultipartReply):
        writer = _write_multipart_reply
    if writer is None:
        if msg.datapath is None:
            msg.datapath = DATAPATH
        msg.serialize()
        return bytes(msg.buf)
    return _W.frame(msg, writer(msg))


def _port_fields(port: Any) -> tuple[Any, ...]:
    return (port.port_no, wire.mac_bin(port.hw_addr), wire.text(port.name), port.config, port.state, port.curr,
            port.advertised, port.supported, port.peer, port.curr_speed, port.max_speed)


def _write_hello(msg: Any) -> bytes:
    out = []
    for elem in msg.elements or ():
        versions = list(elem.versions)
        words = [0] * (max(versions) // 32 + 1 if versions else 1)
        for v in versions:
            words[v // 32] |= 1 << (v % 32)
        body = struct.pack(f"!{len(words)}I", *words)
        elen = _HELLO_ELEM.size + len(body)
        out.append(_HELLO_ELEM.pack(ofp.OFPHET_VERSIONBITMAP, elen) + body + bytes(_round8(elen) - elen))
    return b"".join(out)


def _write_features(msg: Any) -> bytes:
    return _FEATURES.pack(msg.datapath_id, msg.n_buffers, msg.n_tables, msg.auxiliary_id, msg.capabilities,
                          getattr(msg, "reserved", 0) or 0)


def _write_switch_config(msg: Any) -> bytes:
    return _SWITCH_CONFIG.pack(msg.flags, msg.miss_send_len)


def _write_packet_in(msg: Any) -> bytes:
    data = wire.as_bytes(msg.data)
    total_len = len(data) if msg.total_len is None else msg.total_len
    match = wire.pack_match(msg.match if msg.match is not None else parser.OFPMatch())
    return (_PACKET_IN.pack(msg.buffer_id, total_len, msg.reason, msg.table_id, msg.cookie) + match
            + b"\0\0" + data)


def _write_flow_removed(msg: Any) -> bytes:
    return _FLOW_REMOVED0.pack(msg.cookie, msg.priority, msg.reason, msg.table_id, msg.duration_sec,
                               msg.duration_nsec, msg.idle_timeout, msg.hard_timeout, msg.packet_count,
                               msg.byte_count) + wire.pack_match(msg.match)


def _write_port_status(msg: Any) -> bytes:
    return _PORT_STATUS.pack(msg.reason, *_port_fields(msg.desc))


def _write_packet_out(msg: Any) -> bytes:
    return wire.packet_out_body(msg, _PACKET_OUT)


def _write_queue_get_config_reply(msg: Any) -> bytes:
    out = [_QGC_REPLY.pack(msg.port)]
    for queue in msg.queues or ():
        props = []
        for prop in queue.properties or ():
            if prop.property in (ofp.OFPQT_MIN_RATE, ofp.OFPQT_MAX_RATE):
                props.append(_QUEUE_PROP.pack(prop.property, 16) + struct.pack("!H6x", prop.rate))
            else:  # experimenter
                body = struct.pack("!I4x", prop.experimenter) + wire.as_bytes(prop.data)
                plen = _round8(8 + len(body))
                props.append(_QUEUE_PROP.pack(prop.property, plen) + body + bytes(plen - 8 - len(body)))
        body = b"".join(props)
        out.append(_PACKET_QUEUE.pack(queue.queue_id, queue.port, ofp.OFP_PACKET_QUEUE_SIZE + len(body)) + body)
    return b"".join(out)


def _write_role_reply(msg: Any) -> bytes:
    return _ROLE.pack(msg.role, msg.generation_id)


def _write_get_async_reply(msg: Any) -> bytes:
    return _ASYNC.pack(*msg.packet_in_mask, *msg.port_status_mask, *msg.flow_removed_mask)


def _as_list(body: Any) -> list[Any]:
    return list(body) if isinstance(body, list) else [body]


def _write_flow_stats(s: Any) -> bytes:
    rest = wire.pack_match(s.match) + wire.serialize_list(s.instructions)
    length = _FLOW_STATS0.size + len(rest)
    return _FLOW_STATS0.pack(length, s.table_id, s.duration_sec, s.duration_nsec, s.priority, s.idle_timeout,
                             s.hard_timeout, s.flags, s.cookie, s.packet_count, s.byte_count) + rest


def _write_group_stats(s: Any) -> bytes:
    counters = b"".join(_BUCKET_COUNTER.pack(c.packet_count, c.byte_count) for c in s.bucket_stats or ())
    return _GROUP_STATS.pack(_GROUP_STATS.size + len(counters), s.group_id, s.ref_count, s.packet_count,
                             s.byte_count, s.duration_sec, s.duration_nsec) + counters


def _write_group_desc(s: Any) -> bytes:
    buckets = wire.serialize_list(s.buckets)
    return _GROUP_DESC.pack(_GROUP_DESC.size + len(buckets), s.type, s.group_id) + buckets


def _write_meter_stats(s: Any) -> bytes:
    bands = b"".join(_METER_BAND_STATS.pack(b.packet_band_count, b.byte_band_count) for b in s.band_stats or ())
    return _METER_STATS.pack(s.meter_id, _METER_STATS.size + len(bands), s.flow_count, s.packet_in_count,
                             s.byte_in_count, s.duration_sec, s.duration_nsec) + bands


def _write_meter_config(s: Any) -> bytes:
    bands = wire.serialize_list(s.bands)
    return _METER_CONFIG.pack(_METER_CONFIG.size + len(bands), s.flags, s.meter_id) + bands


def _write_group_features(s: Any) -> bytes:
    return _GROUP_FEATURES.pack(s.types, s.capabilities, *s.max_groups, *s.actions)


def _write_multipart_body(mtype: int, body: Any) -> bytes:
    if mtype in _SINGLE_RECORD and isinstance(body, list):
        (body,) = body  # os-ken parses some single-record bodies (meter features) as a list of one
    if mtype == ofp.OFPMP_DESC:
        return _DESC.pack(*(wire.text(getattr(body, f)) for f in parser.OFPDescStats._fields))
    if mtype == ofp.OFPMP_AGGREGATE:
        return _AGG_STATS.pack(body.packet_count, body.byte_count, body.flow_count)
    if mtype == ofp.OFPMP_GROUP_FEATURES:
        return _write_group_features(body)
    if mtype == ofp.OFPMP_METER_FEATURES:
        return _METER_FEATURES.pack(*body)
    if mtype == ofp.OFPMP_EXPERIMENTER:
        return bytes(body.serialize())
    items = _as_list(body)
    if mtype == ofp.OFPMP_TABLE:
        return b"".join(_TABLE_STATS.pack(*t) for t in items)
    if mtype == ofp.OFPMP_PORT_STATS:
        return b"".join(_PORT_STATS.pack(*p) for p in items)
    if mtype == ofp.OFPMP_QUEUE:
        return b"".join(_QUEUE_STATS.pack(*q) for q in items)
    if mtype == ofp.OFPMP_PORT_DESC:
        return b"".join(_PORT.pack(*_port_fields(p)) for p in items)
    if mtype == ofp.OFPMP_TABLE_FEATURES:
        return b"".join(bytes(t.serialize()) for t in items)
    writer: dict[int, Callable[[Any], bytes]] = {
        ofp.OFPMP_FLOW: _write_flow_stats, ofp.OFPMP_GROUP: _write_group_stats,
        ofp.OFPMP_GROUP_DESC: _write_group_desc, ofp.OFPMP_METER: _write_meter_stats,
        ofp.OFPMP_METER_CONFIG: _write_meter_config}
    if mtype not in writer:
        raise ValueError(f"cannot encode multipart reply of type {mtype}")
    return b"".join(writer[mtype](s) for s in items)


_SINGLE_RECORD = (ofp.OFPMP_DESC, ofp.OFPMP_AGGREGATE, ofp.OFPMP_GROUP_FEATURES, ofp.OFPMP_METER_FEATURES,
                  ofp.OFPMP_EXPERIMENTER)


def _write_multipart_reply(msg: Any) -> bytes:
    mtype = msg.type if getattr(msg, "type", None) is not None else msg.cls_stats_type
    return _MULTIPART.pack(mtype, msg.flags or 0) + _write_multipart_body(mtype, msg.body)


_BODY_WRITERS: dict[type, Callable[[Any], bytes]] = {
    parser.OFPHello: _write_hello,
    parser.OFPSwitchFeatures: _write_features,
    parser.OFPGetConfigReply: _write_switch_config,
    parser.OFPPacketIn: _write_packet_in,
    parser.OFPFlowRemoved: _write_flow_removed,
    parser.OFPPortStatus: _write_port_status,
    parser.OFPPacketOut: _write_packet_out,
    parser.OFPQueueGetConfigReply: _write_queue_get_config_reply,
    parser.OFPRoleReply: _write_role_reply,
    parser.OFPGetAsyncReply: _write_get_async_reply,
}

_MP_REQUESTS = (
    parser.OFPDescStatsRequest, parser.OFPFlowStatsRequest, parser.OFPAggregateStatsRequest,
    parser.OFPTableStatsRequest, parser.OFPPortStatsRequest, parser.OFPQueueStatsRequest,
    parser.OFPGroupStatsRequest, parser.OFPGroupDescStatsRequest, parser.OFPGroupFeaturesStatsRequest,
    parser.OFPMeterStatsRequest, parser.OFPMeterConfigStatsRequest, parser.OFPMeterFeaturesStatsRequest,
    parser.OFPTableFeaturesStatsRequest, parser.OFPPortDescStatsRequest, parser.OFPExperimenterStatsRequest)
_MP_REPLIES = tuple(parser.OFPMultipartReply._STATS_MSG_TYPES.values())

# Every class decode() can return.
DECODED_CLASSES = frozenset({
    parser.OFPHello, parser.OFPErrorMsg, parser.OFPEchoRequest, parser.OFPEchoReply, parser.OFPExperimenter,
    parser.OFPFeaturesRequest, parser.OFPSwitchFeatures, parser.OFPGetConfigRequest, parser.OFPGetConfigReply,
    parser.OFPSetConfig, parser.OFPPacketIn, parser.OFPFlowRemoved, parser.OFPPortStatus, parser.OFPPacketOut,
    parser.OFPFlowMod, parser.OFPGroupMod, parser.OFPPortMod, parser.OFPTableMod, parser.OFPMeterMod,
    parser.OFPBarrierRequest, parser.OFPBarrierReply, parser.OFPQueueGetConfigRequest,
    parser.OFPQueueGetConfigReply, parser.OFPRoleRequest, parser.OFPRoleReply, parser.OFPGetAsyncRequest,
    parser.OFPGetAsyncReply, parser.OFPSetAsync, *_MP_REQUESTS, *_MP_REPLIES,
})
