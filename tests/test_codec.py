"""Tests for netsleuth.openflow.codec and netsleuth.openflow.connection.

Messages are built the way controllers and os-ken apps build them (os-ken
constructors); wire layouts are checked against struct formats written out
here from the OpenFlow 1.0 spec, not against os-ken's own pack strings.
"""

from __future__ import annotations

import base64
import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from os_ken.lib.packet import ethernet, packet
from os_ken.ofproto import ofproto_v1_0 as ofp
from os_ken.ofproto import ofproto_v1_0_parser as p
from os_ken.ofproto import ofproto_v1_3 as ofp13
from os_ken.ofproto import ofproto_v1_3_parser as p13

from netsleuth.errors import CodecError, TraceFormatError
from netsleuth.openflow.codec import DATAPATH, decode, encode, msg_from_json, msg_to_json, msg_type_name
from netsleuth.openflow.connection import (
    Connected,
    ConnectionStateError,
    ErrorEvent,
    State,
    SwitchConnection,
    VersionMismatch,
)

DP = DATAPATH
MAC1, MAC2 = "00:00:00:00:00:01", "00:00:00:00:00:02"


def hdr(msg_type: int, length: int, xid: int, version: int = 1) -> bytes:
    return struct.pack("!BBHI", version, msg_type, length, xid)


def msg(type_: int, body: bytes = b"", xid: int = 0, version: int = 1) -> bytes:
    return hdr(type_, 8 + len(body), xid, version) + body


# ----------------------------------------------------------------------------- message catalogue


def _with_xid(m, xid):
    m.xid = xid
    return m


def _port(no: int, name: bytes = b"") -> p.OFPPhyPort:
    return p.OFPPhyPort(no, "00:00:00:00:01:%02x" % (no & 0xFF), name or b"s1-eth%d" % no, 0, 0, 0xC0, 0, 0xC0, 0)


def _flow_stats(table_id=0, actions=None) -> p.OFPFlowStats:
    s = p.OFPFlowStats()
    s.table_id, s.match = table_id, p.OFPMatch(in_port=1, dl_dst=MAC2)
    s.duration_sec, s.duration_nsec, s.priority = 10, 500, 100
    s.idle_timeout, s.hard_timeout, s.cookie = 30, 60, 0xABCDEF
    s.packet_count, s.byte_count = 7, 700
    s.actions = [p.OFPActionOutput(2)] if actions is None else actions
    return s


def _stats_reply(cls, body, flags=0):
    m = cls(DP)
    m.type, m.flags, m.body = cls.cls_stats_type, flags, body
    return m


def _attrs(cls, **attrs):
    m = cls(DP)
    for k, v in attrs.items():
        setattr(m, k, v)
    return m


def _queue_reply():
    q1 = p.OFPPacketQueue(1, 0)
    q1.properties = [p.OFPQueuePropMinRate(500)]
    q2 = p.OFPPacketQueue(2, 0)
    q2.properties = [p.OFPQueuePropNone()]
    return _attrs(p.OFPQueueGetConfigReply, port=3, queues=[q1, q2])


def _simple_switch_flow_mod():
    # exactly what os-ken's simple_switch (OF1.0) sends
    match = p.OFPMatch(in_port=1, dl_dst=MAC2, dl_src=MAC1)
    actions = [p.OFPActionOutput(2)]
    return p.OFPFlowMod(DP, match=match, cookie=0, command=ofp.OFPFC_ADD, idle_timeout=0, hard_timeout=0,
                        priority=ofp.OFP_DEFAULT_PRIORITY, flags=ofp.OFPFF_SEND_FLOW_REM, actions=actions)


def _all_actions():
    return [p.OFPActionOutput(3, 128), p.OFPActionVlanVid(10), p.OFPActionVlanPcp(5), p.OFPActionStripVlan(),
            p.OFPActionSetDlSrc(b"\x00\x00\x00\x00\x00\x09"), p.OFPActionSetDlDst(b"\x00\x00\x00\x00\x00\x0a"),
            p.OFPActionSetNwSrc(0x0A000001), p.OFPActionSetNwDst(0x0A000002), p.OFPActionSetNwTos(0x10),
            p.OFPActionSetTpSrc(80), p.OFPActionSetTpDst(8080), p.OFPActionEnqueue(1, 7),
            p.OFPActionVendorUnknown(0x00ABCDEF, b"12345678"), p.NXActionResubmit(in_port=4)]


CONTROLLER_TO_SWITCH = {
    "hello": lambda: p.OFPHello(DP),
    "error": lambda: p.OFPErrorMsg(DP, ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_TYPE, b"\x01\x63\x00\x08"),
    "echo_request": lambda: p.OFPEchoRequest(DP, b"ping"),
    "echo_request_empty": lambda: p.OFPEchoRequest(DP, b""),
    "echo_reply": lambda: p.OFPEchoReply(DP, b"pong"),
    "vendor": lambda: _attrs(p.OFPVendor, vendor=0x2320, data=b"\x00\x00\x00\x0c\x00\x00\x00\x01"),
    "features_request": lambda: p.OFPFeaturesRequest(DP),
    "get_config_request": lambda: p.OFPGetConfigRequest(DP),
    "set_config": lambda: p.OFPSetConfig(DP, ofp.OFPC_FRAG_NORMAL, 128),
    "packet_out_buffered": lambda: p.OFPPacketOut(DP, 0x101, 1, [p.OFPActionOutput(ofp.OFPP_FLOOD)], None),
    "packet_out_data": lambda: p.OFPPacketOut(DP, ofp.OFP_NO_BUFFER, 1, [p.OFPActionOutput(2)], b"\xaa" * 60),
    "packet_out_buffered_with_data": lambda: p.OFPPacketOut(DP, 9, 1, [p.OFPActionOutput(2)], b"extra"),
    "packet_out_no_actions": lambda: p.OFPPacketOut(DP, ofp.OFP_NO_BUFFER, ofp.OFPP_NONE, [], b"\x01" * 14),
    "flow_mod_simple_switch": _simple_switch_flow_mod,
    "flow_mod_delete": lambda: p.OFPFlowMod(DP, p.OFPMatch(), command=ofp.OFPFC_DELETE, out_port=3),
    "flow_mod_all_actions": lambda: p.OFPFlowMod(
        DP, p.OFPMatch(in_port=1, dl_type=0x0800, nw_src="10.0.0.0", nw_src_mask=8, nw_proto=6, tp_dst=80),
        cookie=2**63 + 5, idle_timeout=10, hard_timeout=20, priority=7, buffer_id=33, actions=_all_actions()),
    "port_mod": lambda: p.OFPPortMod(DP, 3, "fa:c8:e8:76:1d:7e", ofp.OFPPC_PORT_DOWN, ofp.OFPPC_PORT_DOWN, 0),
    "desc_stats_request": lambda: p.OFPDescStatsRequest(DP, 0),
    "flow_stats_request": lambda: p.OFPFlowStatsRequest(DP, 0, p.OFPMatch(in_port=1), 0xFF, ofp.OFPP_NONE),
    "aggregate_stats_request": lambda: p.OFPAggregateStatsRequest(DP, 0, p.OFPMatch(), 0xFF, 2),
    "table_stats_request": lambda: p.OFPTableStatsRequest(DP, 0),
    "port_stats_request": lambda: p.OFPPortStatsRequest(DP, 0, ofp.OFPP_NONE),
    "queue_stats_request": lambda: p.OFPQueueStatsRequest(DP, 0, ofp.OFPP_ALL, ofp.OFPQ_ALL),
    "vendor_stats_request": lambda: p.OFPVendorStatsRequest(DP, 0, 0x00ABCDEF, b"question"),
    "barrier_request": lambda: p.OFPBarrierRequest(DP),
    "queue_get_config_request": lambda: p.OFPQueueGetConfigRequest(DP, 2),
}

SWITCH_TO_CONTROLLER = {
    "features_reply": lambda: p.OFPSwitchFeatures(
        DP, 0x1, 256, 1, 0xC7, 0xFFF, {1: _port(1), 2: _port(2), ofp.OFPP_LOCAL: _port(ofp.OFPP_LOCAL, b"s1")}),
    "features_reply_no_ports": lambda: p.OFPSwitchFeatures(DP, 2**64 - 1, 0, 1, 0, 0, {}),
    "get_config_reply": lambda: _attrs(p.OFPGetConfigReply, flags=0, miss_send_len=128),
    "packet_in": lambda: p.OFPPacketIn(DP, 0x100, 60, 1, ofp.OFPR_NO_MATCH, b"\x00" * 60),
    "packet_in_truncated": lambda: p.OFPPacketIn(DP, 0x100, 1500, 3, ofp.OFPR_ACTION, b"\x01" * 128),
    "flow_removed": lambda: _attrs(p.OFPFlowRemoved, match=p.OFPMatch(in_port=1, dl_dst=MAC2), cookie=9, priority=100,
                                   reason=ofp.OFPRR_IDLE_TIMEOUT, duration_sec=3, duration_nsec=4, idle_timeout=5,
                                   packet_count=6, byte_count=7),
    "port_status": lambda: p.OFPPortStatus(DP, ofp.OFPPR_MODIFY, _port(2)),
    "desc_stats_reply": lambda: _stats_reply(p.OFPDescStatsReply,
                                             p.OFPDescStats(b"netsleuth", b"mock", b"0.1", b"None", b"s1")),
    "flow_stats_reply": lambda: _stats_reply(p.OFPFlowStatsReply, [_flow_stats(), _flow_stats(0, _all_actions())]),
    "flow_stats_reply_empty": lambda: _stats_reply(p.OFPFlowStatsReply, []),
    "aggregate_stats_reply": lambda: _stats_reply(p.OFPAggregateStatsReply, [p.OFPAggregateStats(10, 1000, 2)]),
    "table_stats_reply": lambda: _stats_reply(p.OFPTableStatsReply,
                                              [p.OFPTableStats(0, b"classifier", 0x3FFFFF, 10000, 2, 50, 40)]),
    "port_stats_reply": lambda: _stats_reply(p.OFPPortStatsReply,
                                             [p.OFPPortStats(1, *range(2, 14)), p.OFPPortStats(2, *range(20, 32))],
                                             flags=ofp.OFPSF_REPLY_MORE),
    "queue_stats_reply": lambda: _stats_reply(p.OFPQueueStatsReply, [p.OFPQueueStats(1, 2, 3, 4, 5)]),
    "vendor_stats_reply": lambda: _stats_reply(p.OFPVendorStatsReply, p.OFPVendorStats(b"\x00\xab\xcd\xefanswer")),
    "barrier_reply": lambda: p.OFPBarrierReply(DP),
    "queue_get_config_reply": _queue_reply,
}

ALL = {**CONTROLLER_TO_SWITCH, **SWITCH_TO_CONTROLLER}

EXPECTED_NAME = {
    p.OFPHello: "HELLO", p.OFPErrorMsg: "ERROR", p.OFPEchoRequest: "ECHO_REQUEST", p.OFPEchoReply: "ECHO_REPLY",
    p.OFPVendor: "VENDOR", p.OFPFeaturesRequest: "FEATURES_REQUEST", p.OFPSwitchFeatures: "FEATURES_REPLY",
    p.OFPGetConfigRequest: "GET_CONFIG_REQUEST", p.OFPGetConfigReply: "GET_CONFIG_REPLY",
    p.OFPSetConfig: "SET_CONFIG", p.OFPPacketIn: "PACKET_IN", p.OFPFlowRemoved: "FLOW_REMOVED",
    p.OFPPortStatus: "PORT_STATUS", p.OFPPacketOut: "PACKET_OUT", p.OFPFlowMod: "FLOW_MOD",
    p.OFPPortMod: "PORT_MOD", p.OFPBarrierRequest: "BARRIER_REQUEST", p.OFPBarrierReply: "BARRIER_REPLY",
    p.OFPQueueGetConfigRequest: "QUEUE_GET_CONFIG_REQUEST", p.OFPQueueGetConfigReply: "QUEUE_GET_CONFIG_REPLY",
}


def expected_name(m) -> str:
    if isinstance(m, p.OFPStatsRequest):
        return "STATS_REQUEST"
    if isinstance(m, p.OFPStatsReply):
        return "STATS_REPLY"
    return EXPECTED_NAME[type(m)]


def test_catalogue_covers_every_message_type():
    def wire_type(b: bytes) -> int:
        return b[1]

    seen = {wire_type(encode(_with_xid(f(), 1))) for f in ALL.values()}
    assert seen == set(range(22))
    stats_types = {struct.unpack_from("!H", encode(f()), 8)[0] for f in ALL.values()
                   if isinstance(f(), (p.OFPStatsRequest, p.OFPStatsReply))}
    assert stats_types == {0, 1, 2, 3, 4, 5, 0xFFFF}


# ----------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("name", sorted(ALL))
def test_round_trip_bytes_and_xid(name):
    original = _with_xid(ALL[name](), 0x01020304)
    wire = encode(original)
    assert struct.unpack("!BBHI", wire[:8]) == (1, wire[1], len(wire), 0x01020304)
    decoded = decode(wire)
    assert type(decoded) is type(original)
    assert decoded.xid == 0x01020304 and decoded.msg_len == len(wire) and decoded.version == 1
    assert encode(decoded) == wire
    assert decoded.to_jsondict() == decode(encode(ALL[name]())).to_jsondict()


@pytest.mark.parametrize("name", sorted(ALL))
def test_json_round_trip_is_lossless(name):
    original = _with_xid(ALL[name](), 7)
    wire = encode(original)
    for m in (original, decode(wire)):
        d = msg_to_json(m)
        assert d["type"] == expected_name(m) == msg_type_name(m)
        assert d["xid"] == 7
        text = json.dumps(d)  # plain JSON values only
        back = msg_from_json(json.loads(text))
        assert back.xid == 7
        assert encode(back) == wire
        assert msg_to_json(back) == json.loads(text)


def test_xid_none_encodes_as_zero_and_set_xid_is_kept():
    m = p.OFPBarrierRequest(DP)
    assert encode(m)[4:8] == b"\x00\x00\x00\x00"
    assert encode(_with_xid(p.OFPBarrierRequest(DP), 0xFFFFFFFF))[4:8] == b"\xff\xff\xff\xff"


def test_json_of_packet_object_data_records_the_bytes():
    pkt = packet.Packet()
    pkt.add_protocol(ethernet.ethernet(MAC2, MAC1, 0x88CC))
    po = _with_xid(p.OFPPacketOut(DP, ofp.OFP_NO_BUFFER, 1, [p.OFPActionOutput(2)], pkt), 3)
    wire = encode(po)
    d = json.loads(json.dumps(msg_to_json(po)))
    data = base64.b64decode(d["body"]["OFPPacketOut"]["data"])
    assert data[:14] == bytes.fromhex("000000000002" "000000000001" "88cc")
    assert encode(msg_from_json(d)) == wire


def test_json_of_nicira_helper_message_goes_through_the_wire():
    m = _with_xid(p.NXTSetFlowFormat(DP, ofp.NXFF_NXM), 5)
    d = json.loads(json.dumps(msg_to_json(m)))
    assert d["type"] == "VENDOR" and list(d["body"]) == ["OFPVendor"]
    assert encode(msg_from_json(d)) == encode(m)


def test_json_keeps_non_text_names_as_raw_bytes():
    wire = encode(_with_xid(p.OFPPortStatus(DP, 0, _port(1, b"\xff\xfe")), 4))
    d = json.loads(json.dumps(msg_to_json(decode(wire))))
    assert base64.b64decode(d["raw"]) == wire
    assert d["body"]["OFPPortStatus"]["desc"]["OFPPhyPort"]["name"] == "\ufffd\ufffd"
    assert encode(msg_from_json(d)) == wire
    desc = _stats_reply(p.OFPDescStatsReply, p.OFPDescStats(b"caf\xe9", b"", b"", b"", b""))
    d = json.loads(json.dumps(msg_to_json(desc)))
    assert d["body"]["OFPDescStatsReply"]["body"]["OFPDescStats"]["mfr_desc"] == "caf?"
    assert encode(msg_from_json(d)) == encode(desc)


def test_unknown_nicira_action_round_trips_through_json():
    unknown_subtype = struct.pack("!HHIH6x", 0xFFFF, 16, 0x2320, 0xEA)
    wire = flow_mod_with(unknown_subtype)
    fm = decode(wire)
    assert type(fm.actions[0]).__name__ == "NXActionUnknown"
    assert encode(fm) == wire
    assert encode(msg_from_json(json.loads(json.dumps(msg_to_json(fm))))) == wire


def test_packet_out_with_packet_object_and_no_actions():
    pkt = packet.Packet()
    pkt.add_protocol(ethernet.ethernet(MAC2, MAC1, 0x0800))
    wire = encode(p.OFPPacketOut(DP, ofp.OFP_NO_BUFFER, 1, [], pkt))
    assert wire[8:16] == struct.pack("!IHH", 0xFFFFFFFF, 1, 0)
    assert wire[16:30] == bytes.fromhex("000000000002" "000000000001" "0800")


def test_msg_from_json_rejects_unknown_class():
    with pytest.raises(TraceFormatError):
        msg_from_json({"type": "HELLO", "xid": 1, "body": {"OFPMatch": {}}})


# ----------------------------------------------------------------------------- wire layouts (spec oracle)

MATCH_FMT = "!IH6s6sHBxHBB2xIIHH"  # ofp_match, 40 bytes
WILDCARD_ALL_BUT = 0x3FFFFF


def test_simple_switch_flow_mod_layout_and_fields():
    wire = encode(_with_xid(_simple_switch_flow_mod(), 42))
    assert len(wire) == 72 + 8
    wc = WILDCARD_ALL_BUT & ~(ofp.OFPFW_IN_PORT | ofp.OFPFW_DL_SRC | ofp.OFPFW_DL_DST)
    expected = (hdr(14, 80, 42)
                + struct.pack(MATCH_FMT, wc, 1, bytes.fromhex("000000000001"), bytes.fromhex("000000000002"),
                              0, 0, 0, 0, 0, 0, 0, 0, 0)
                + struct.pack("!QHHHHIHH", 0, 0, 0, 0, 0x8000, 0xFFFFFFFF, 0xFFFF, 1)
                + struct.pack("!HHHH", 0, 8, 2, 0xFFE5))
    assert wire == expected
    fm = decode(expected)
    assert isinstance(fm, p.OFPFlowMod)
    assert (fm.match["in_port"], fm.match["dl_src"], fm.match["dl_dst"]) == (1, MAC1, MAC2)
    assert "dl_type" not in fm.match
    assert (fm.command, fm.priority, fm.buffer_id, fm.flags) == (0, 0x8000, 0xFFFFFFFF, 1)
    assert [(type(a), a.port, a.max_len) for a in fm.actions] == [(p.OFPActionOutput, 2, 0xFFE5)]


def test_packet_out_fields_from_spec_bytes():
    actions = struct.pack("!HHHH", 0, 8, 0xFFFB, 0)  # output to FLOOD
    body = struct.pack("!IHH", 0xFFFFFFFF, 3, len(actions)) + actions + b"frame!"
    po = decode(msg(13, body, xid=9))
    assert (po.buffer_id, po.in_port, po.data, po.xid) == (0xFFFFFFFF, 3, b"frame!", 9)
    assert [(a.port, a.max_len) for a in po.actions] == [(ofp.OFPP_FLOOD, 0)]
    po = decode(msg(13, struct.pack("!IHH", 77, 3, 0)))
    assert (po.buffer_id, po.actions, po.data) == (77, [], None)


@pytest.mark.parametrize("body,cls,attrs", [
    (struct.pack("!HH", 0, 0), p.OFPDescStatsRequest, {}),
    (struct.pack("!HH", 3, 0), p.OFPTableStatsRequest, {}),
    (struct.pack("!HH", 4, 0) + struct.pack("!H6x", 5), p.OFPPortStatsRequest, {"port_no": 5}),
    (struct.pack("!HH", 5, 0) + struct.pack("!H2xI", 6, 9), p.OFPQueueStatsRequest, {"port_no": 6, "queue_id": 9}),
    (struct.pack("!HH", 1, 0) + struct.pack(MATCH_FMT, WILDCARD_ALL_BUT, 0, bytes(6), bytes(6), *([0] * 9))
     + struct.pack("!BxH", 0xFF, 0xFFFF), p.OFPFlowStatsRequest, {"table_id": 0xFF, "out_port": 0xFFFF}),
    (struct.pack("!HH", 2, 0) + bytes(40) + struct.pack("!BxH", 1, 2), p.OFPAggregateStatsRequest,
     {"table_id": 1, "out_port": 2}),
    (struct.pack("!HH", 0xFFFF, 0) + struct.pack("!I", 0x2320) + b"abc", p.OFPVendorStatsRequest,
     {"vendor": 0x2320, "specific_data": b"abc"}),
])
def test_stats_requests_from_spec_bytes(body, cls, attrs):
    m = decode(msg(16, body, xid=3))
    assert type(m) is cls and m.flags == 0
    for k, v in attrs.items():
        assert getattr(m, k) == v
    assert encode(m) == msg(16, body, xid=3)


def test_stats_request_nonzero_flags_survive():
    wire = msg(16, struct.pack("!HH", 0, 0x8000), xid=3)
    m = decode(wire)
    assert m.flags == 0x8000 and encode(m) == wire
    assert encode(msg_from_json(json.loads(json.dumps(msg_to_json(m))))) == wire


def test_set_config_port_mod_queue_request_fields():
    assert (lambda m: (m.flags, m.miss_send_len))(decode(msg(9, struct.pack("!HH", 1, 0xFFFF)))) == (1, 0xFFFF)
    pm = decode(msg(15, struct.pack("!H6sIII4x", 4, bytes.fromhex("0a0b0c0d0e0f"), 1, 3, 0x20)))
    assert (pm.port_no, pm.hw_addr, pm.config, pm.mask, pm.advertise) == (4, "0a:0b:0c:0d:0e:0f", 1, 3, 0x20)
    assert decode(msg(20, struct.pack("!H2x", 7))).port == 7


PORT_FMT = "!H6s16sIIIIII"  # ofp_phy_port, 48 bytes


def _port_bytes(no: int, name: bytes) -> bytes:
    return struct.pack(PORT_FMT, no, bytes.fromhex("0000000001%02x" % (no & 0xFF)), name, 0, 0, 0xC0, 0, 0xC0, 0)


def test_features_reply_layout():
    wire = encode(_with_xid(SWITCH_TO_CONTROLLER["features_reply"](), 5))
    expected = (hdr(6, 32 + 3 * 48, 5) + struct.pack("!QIB3xII", 1, 256, 1, 0xC7, 0xFFF)
                + _port_bytes(1, b"s1-eth1") + _port_bytes(2, b"s1-eth2") + _port_bytes(0xFFFE, b"s1"))
    assert wire == expected
    fr = decode(expected)
    assert sorted(fr.ports) == [1, 2, 0xFFFE]
    assert fr.ports[2].name == b"s1-eth2" and fr.ports[2].hw_addr == "00:00:00:00:01:02"


def test_switch_message_layouts():
    assert encode(_with_xid(SWITCH_TO_CONTROLLER["packet_in"](), 1)) == (
        hdr(10, 18 + 60, 1) + struct.pack("!IHHBx", 0x100, 60, 1, 0) + bytes(60))
    assert encode(_with_xid(SWITCH_TO_CONTROLLER["port_status"](), 2)) == (
        hdr(12, 64, 2) + struct.pack("!B7x", 2) + _port_bytes(2, b"s1-eth2"))
    assert encode(SWITCH_TO_CONTROLLER["get_config_reply"]()) == hdr(8, 12, 0) + struct.pack("!HH", 0, 128)
    match = encode(p.OFPFlowMod(DP, p.OFPMatch(in_port=1, dl_dst=MAC2)))[8:48]
    assert encode(SWITCH_TO_CONTROLLER["flow_removed"]()) == (
        hdr(11, 88, 0) + match + struct.pack("!QHBxIIH2xQQ", 9, 100, 0, 3, 4, 5, 6, 7))
    assert encode(SWITCH_TO_CONTROLLER["queue_get_config_reply"]()) == (
        hdr(21, 16 + 24 + 16, 0) + struct.pack("!H6x", 3)
        + struct.pack("!IH2x", 1, 24) + struct.pack("!HH4x", 1, 16) + struct.pack("!H6x", 500)
        + struct.pack("!IH2x", 2, 16) + struct.pack("!HH4x", 0, 8))


def test_stats_reply_layouts():
    desc = encode(SWITCH_TO_CONTROLLER["desc_stats_reply"]())
    assert desc == hdr(17, 12 + 1056, 0) + struct.pack("!HH", 0, 0) + struct.pack(
        "!256s256s256s32s256s", b"netsleuth", b"mock", b"0.1", b"None", b"s1")
    match = encode(p.OFPFlowMod(DP, p.OFPMatch(in_port=1, dl_dst=MAC2)))[8:48]
    flow = encode(_stats_reply(p.OFPFlowStatsReply, [_flow_stats()]))
    assert flow == hdr(17, 12 + 96, 0) + struct.pack("!HH", 1, 0) + struct.pack("!HBx", 96, 0) + match + struct.pack(
        "!IIHHH6xQQQ", 10, 500, 100, 30, 60, 0xABCDEF, 7, 700) + struct.pack("!HHHH", 0, 8, 2, 0xFFE5)
    assert encode(SWITCH_TO_CONTROLLER["aggregate_stats_reply"]()) == (
        hdr(17, 36, 0) + struct.pack("!HH", 2, 0) + struct.pack("!QQI4x", 10, 1000, 2))
    assert encode(SWITCH_TO_CONTROLLER["table_stats_reply"]()) == (
        hdr(17, 76, 0) + struct.pack("!HH", 3, 0) + struct.pack("!B3x32sIIIQQ", 0, b"classifier", 0x3FFFFF,
                                                                10000, 2, 50, 40))
    assert encode(SWITCH_TO_CONTROLLER["port_stats_reply"]()) == (
        hdr(17, 12 + 208, 0) + struct.pack("!HH", 4, 1) + struct.pack("!H6x12Q", 1, *range(2, 14))
        + struct.pack("!H6x12Q", 2, *range(20, 32)))
    assert encode(SWITCH_TO_CONTROLLER["queue_stats_reply"]()) == (
        hdr(17, 44, 0) + struct.pack("!HH", 5, 0) + struct.pack("!H2xIQQQ", 1, 2, 3, 4, 5))
    assert encode(SWITCH_TO_CONTROLLER["vendor_stats_reply"]()) == (
        hdr(17, 22, 0) + struct.pack("!HH", 0xFFFF, 0) + b"\x00\xab\xcd\xefanswer")


def test_flow_stats_vendor_action_is_padded_to_8_bytes():
    reply = _stats_reply(p.OFPFlowStatsReply, [_flow_stats(0, [p.OFPActionVendorUnknown(0xABCDEF, b"abc")])])
    wire = encode(reply)
    assert len(wire) == 12 + 88 + 16
    assert wire[-16:] == struct.pack("!HHI", 0xFFFF, 16, 0xABCDEF) + b"abc" + bytes(5)
    assert decode(wire).body[0].actions[0].data == b"abc" + bytes(5)


def test_flow_stats_reply_decodes_entries_and_actions():
    fs = decode(encode(SWITCH_TO_CONTROLLER["flow_stats_reply"]())).body
    assert [len(s.actions) for s in fs] == [1, len(_all_actions())]
    assert [type(a) for a in fs[1].actions] == [type(a) for a in _all_actions()]
    assert fs[1].actions[-1].in_port == 4 and fs[1].actions[-2].data == b"12345678"
    assert (fs[0].cookie, fs[0].byte_count, fs[0].match["dl_dst"]) == (0xABCDEF, 700, MAC2)


@pytest.mark.parametrize("m", [f() for f in ALL.values()], ids=sorted(ALL, key=list(ALL).index))
def test_msg_type_name(m):
    assert msg_type_name(m) == expected_name(m)


# ----------------------------------------------------------------------------- malformed input

BRQ, BAC = ofp.OFPET_BAD_REQUEST, ofp.OFPET_BAD_ACTION
FLOW_MOD_FIXED = encode(p.OFPFlowMod(DP, p.OFPMatch()))[8:72]


def flow_mod_with(actions: bytes, xid: int = 77) -> bytes:
    return msg(14, FLOW_MOD_FIXED + actions, xid)


MALFORMED = {
    "shorter_than_header": (b"\x01\x00\x00", BRQ, ofp.OFPBRC_BAD_LEN),
    "wrong_version": (msg(5, xid=77, version=4), BRQ, ofp.OFPBRC_BAD_VERSION),
    "version_zero": (msg(0, xid=77, version=0), BRQ, ofp.OFPBRC_BAD_VERSION),
    "length_says_more": (hdr(5, 16, 77), BRQ, ofp.OFPBRC_BAD_LEN),
    "length_says_less": (hdr(2, 8, 77) + b"xx", BRQ, ofp.OFPBRC_BAD_LEN),
    "unknown_type_22": (msg(22, xid=77), BRQ, ofp.OFPBRC_BAD_TYPE),
    "unknown_type_255": (msg(255, b"abc", xid=77), BRQ, ofp.OFPBRC_BAD_TYPE),
    "features_request_with_body": (msg(5, b"\x00" * 4, xid=77), BRQ, ofp.OFPBRC_BAD_LEN),
    "truncated_flow_mod": (msg(14, FLOW_MOD_FIXED[:40], xid=77), BRQ, ofp.OFPBRC_BAD_LEN),
    "truncated_set_config": (msg(9, b"\x00\x00", xid=77), BRQ, ofp.OFPBRC_BAD_LEN),
    "long_port_mod": (msg(15, bytes(25), xid=77), BRQ, ofp.OFPBRC_BAD_LEN),
    "truncated_error": (msg(1, b"\x00", xid=77), BRQ, ofp.OFPBRC_BAD_LEN),
    "truncated_vendor": (msg(4, b"\x00\x00", xid=77), BRQ, ofp.OFPBRC_BAD_LEN),
    "truncated_packet_out": (msg(13, b"\xff" * 7, xid=77), BRQ, ofp.OFPBRC_BAD_LEN),
    "packet_out_actions_len_past_end": (msg(13, struct.pack("!IHH", 1, 1, 16) + struct.pack("!HHHH", 0, 8, 1, 0),
                                            xid=77), BRQ, ofp.OFPBRC_BAD_LEN),
    "stats_request_no_type": (msg(16, b"\x00", xid=77), BRQ, ofp.OFPBRC_BAD_LEN),
    "stats_request_unknown_type": (msg(16, struct.pack("!HH", 6, 0), xid=77), BRQ, ofp.OFPBRC_BAD_STAT),
    "stats_request_truncated_flow": (msg(16, struct.pack("!HH", 1, 0) + bytes(40), xid=77), BRQ,
                                     ofp.OFPBRC_BAD_LEN),
    "stats_request_desc_with_body": (msg(16, struct.pack("!HH", 0, 0) + bytes(8), xid=77), BRQ, ofp.OFPBRC_BAD_LEN),
    "stats_reply_unknown_type": (msg(17, struct.pack("!HH", 9, 0), xid=77), BRQ, ofp.OFPBRC_BAD_STAT),
    "stats_reply_short_desc": (msg(17, struct.pack("!HH", 0, 0) + bytes(100), xid=77), BRQ, ofp.OFPBRC_BAD_LEN),
    "stats_reply_partial_port": (msg(17, struct.pack("!HH", 4, 0) + bytes(103), xid=77), BRQ, ofp.OFPBRC_BAD_LEN),
    "stats_reply_flow_entry_too_long": (msg(17, struct.pack("!HH", 1, 0) + struct.pack("!HBx", 200, 0) + bytes(84),
                                            xid=77), BRQ, ofp.OFPBRC_BAD_LEN),
    "features_reply_partial_port": (msg(6, bytes(24 + 47), xid=77), BRQ, ofp.OFPBRC_BAD_LEN),
    "queue_reply_bad_property_len": (msg(21, struct.pack("!H6x", 1) + struct.pack("!IH2x", 1, 16)
                                         + struct.pack("!HH4x", 1, 8), xid=77), BRQ, ofp.OFPBRC_BAD_LEN),
    "queue_reply_queue_past_end": (msg(21, struct.pack("!H6x", 1) + struct.pack("!IH2x", 1, 64), xid=77), BRQ,
                                   ofp.OFPBRC_BAD_LEN),
    "action_len_zero": (flow_mod_with(struct.pack("!HH4x", 0, 0)), BAC, ofp.OFPBAC_BAD_LEN),
    "action_len_not_multiple_of_8": (flow_mod_with(struct.pack("!HHHH4x", 0, 12, 1, 0)), BAC, ofp.OFPBAC_BAD_LEN),
    "vendor_action_len_not_multiple_of_8": (flow_mod_with(struct.pack("!HHI4x", 0xFFFF, 12, 0xABCDEF)), BAC,
                                            ofp.OFPBAC_BAD_LEN),
    "action_output_len_16": (flow_mod_with(struct.pack("!HHHH8x", 0, 16, 1, 0)), BAC, ofp.OFPBAC_BAD_LEN),
    "action_past_end": (flow_mod_with(struct.pack("!HHHH", 11, 16, 1, 0)), BAC, ofp.OFPBAC_BAD_LEN),
    "action_trailing_bytes": (flow_mod_with(struct.pack("!HHHH", 0, 8, 1, 0) + b"\x00\x00"), BAC, ofp.OFPBAC_BAD_LEN),
    "action_unknown_type": (flow_mod_with(struct.pack("!HH4x", 13, 8)), BAC, ofp.OFPBAC_BAD_TYPE),
    "packet_out_action_unknown_type": (msg(13, struct.pack("!IHH", 1, 1, 8) + struct.pack("!HH4x", 99, 8), xid=77),
                                       BAC, ofp.OFPBAC_BAD_TYPE),
    "nicira_action_too_short": (flow_mod_with(struct.pack("!HHI", 0xFFFF, 8, 0x2320)), BAC,
                                ofp.OFPBAC_BAD_VENDOR_TYPE),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_input_raises_codec_error(name):
    data, err_type, err_code = MALFORMED[name]
    with pytest.raises(CodecError) as info:
        decode(data)
    err = info.value
    assert (err.err_type, err.err_code) == (err_type, err_code), err.problem
    assert err.xid == (77 if len(data) >= 8 else 0)
    assert err.data == data[:64]


def test_error_data_is_first_64_bytes():
    data = flow_mod_with(struct.pack("!HH4x", 13, 8))
    with pytest.raises(CodecError) as info:
        decode(data)
    assert len(data) > 64 and info.value.data == data[:64]


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=0, max_size=200))
def test_arbitrary_bytes_only_ever_raise_codec_error(data):
    try:
        decode(data)
    except CodecError:
        pass


MUTATION_BASE = [encode(f()) for f in ALL.values()]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(MUTATION_BASE), st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 255)), max_size=4))
def test_mutated_messages_decode_to_a_stable_fixpoint(base, edits):
    data = bytearray(base)
    for pos, val in edits:
        data[8 + pos % max(1, len(data) - 8) if len(data) > 8 else pos % len(data)] = val
    try:
        m = decode(bytes(data))
    except CodecError:
        return
    canonical = encode(m)  # may differ from data only in pad bytes / ignored trailing data
    assert encode(decode(canonical)) == canonical
    assert encode(msg_from_json(json.loads(json.dumps(msg_to_json(m))))) == canonical


# ----------------------------------------------------------------------------- connection


def peer_hello(version=1, xid=1, body=b"") -> bytes:
    return msg(0, body, xid, version)


def bitmap_hello(versions, version=4) -> bytes:
    bits = sum(1 << v for v in versions)
    return peer_hello(version, body=struct.pack("!HHI", 1, 8, bits))


def of13_bytes(m) -> bytes:
    class Dp13:
        ofproto = ofp13
        ofproto_parser = p13

    m.datapath = Dp13()
    m.serialize()
    return bytes(m.buf)


def connected() -> SwitchConnection:
    c = SwitchConnection()
    c.initiate()
    assert c.receive_data(peer_hello()) == [Connected(1, 1)]
    return c


def test_initiate_sends_of10_hello_once():
    c = SwitchConnection()
    assert c.state is State.AWAIT_HELLO
    assert c.initiate() == hdr(0, 8, 1)
    with pytest.raises(ConnectionStateError):
        c.initiate()


def test_hello_exchange_v1():
    c = SwitchConnection()
    c.initiate()
    assert c.receive_data(peer_hello(1)) == [Connected(version=1, peer_version=1)]
    assert (c.state, c.version, c.peer_version) == (State.CONNECTED, 1, 1)


def test_hello_from_osken_of13_controller_negotiates_1():
    c = SwitchConnection()
    c.initiate()
    assert c.receive_data(of13_bytes(p13.OFPHello(None))) == [Connected(version=1, peer_version=4)]
    assert c.state is State.CONNECTED


def test_osken_rejecting_version_1_is_a_version_mismatch():
    c = SwitchConnection()
    c.initiate()
    c.receive_data(of13_bytes(p13.OFPHello(None)))
    err = p13.OFPErrorMsg(None, type_=ofp13.OFPET_HELLO_FAILED, code=ofp13.OFPHFC_INCOMPATIBLE,
                          data=b"unsupported version 0x1")
    err.xid = 12
    events = c.receive_data(of13_bytes(err) + encode(p.OFPEchoRequest(DP, b"late")))
    assert len(events) == 1 and isinstance(events[0], VersionMismatch)
    ev = events[0]
    assert ev.peer_version == 4 and "unsupported version 0x1" in ev.reason
    reply = decode(ev.reply)
    assert (reply.type, reply.code, reply.xid) == (ofp.OFPET_HELLO_FAILED, ofp.OFPHFC_INCOMPATIBLE, 12)
    assert c.state is State.CLOSED and c.receive_data(peer_hello()) == []


def test_peer_continuing_in_higher_version_is_a_version_mismatch():
    c = SwitchConnection()
    c.receive_data(peer_hello(4))
    (ev,) = c.receive_data(msg(5, xid=3, version=4))
    assert isinstance(ev, VersionMismatch) and c.state is State.CLOSED
    assert decode(ev.reply).xid == 3


def test_hello_bitmap_without_1_is_a_version_mismatch():
    c = SwitchConnection()
    c.initiate()
    (ev,) = c.receive_data(bitmap_hello([4, 5], version=5))
    assert isinstance(ev, VersionMismatch) and ev.peer_version == 5
    assert "[4, 5]" in ev.reason
    r = decode(ev.reply)
    assert (r.type, r.code) == (ofp.OFPET_HELLO_FAILED, ofp.OFPHFC_INCOMPATIBLE)
    assert c.state is State.CLOSED


def test_hello_bitmap_with_1_connects():
    c = SwitchConnection()
    assert c.receive_data(bitmap_hello([1, 4])) == [Connected(1, 4)]


def test_hello_version_0_is_an_error_event():
    c = SwitchConnection()
    (ev,) = c.receive_data(peer_hello(0, xid=5))
    assert isinstance(ev, ErrorEvent) and ev.fatal
    assert (ev.error.err_type, ev.error.err_code) == (ofp.OFPET_HELLO_FAILED, ofp.OFPHFC_INCOMPATIBLE)
    r = decode(ev.reply)
    assert (r.type, r.code, r.xid) == (ofp.OFPET_HELLO_FAILED, ofp.OFPHFC_INCOMPATIBLE, 5)
    assert c.state is State.CLOSED


def test_first_message_not_hello_is_fatal():
    c = SwitchConnection()
    (ev,) = c.receive_data(encode(_with_xid(p.OFPFeaturesRequest(DP), 2)))
    assert isinstance(ev, ErrorEvent) and ev.fatal and c.state is State.CLOSED
    assert decode(ev.reply).type == ofp.OFPET_HELLO_FAILED


def test_hello_with_of10_body_is_accepted():
    c = SwitchConnection()
    assert c.receive_data(peer_hello(1, body=b"ignored body")) == [Connected(1, 1)]


def _stream() -> tuple[bytes, list[bytes]]:
    parts = [peer_hello(1, xid=1)] + [encode(_with_xid(f(), i + 10)) for i, f in
                                      enumerate(CONTROLLER_TO_SWITCH.values()) if f().cls_msg_type != 0]
    return b"".join(parts), parts[1:]


def _messages(events):
    return [encode(e) for e in events if not isinstance(e, (Connected, ErrorEvent, VersionMismatch))]


def test_many_messages_in_one_chunk():
    stream, parts = _stream()
    c = SwitchConnection()
    events = c.receive_data(stream)
    assert events[0] == Connected(1, 1)
    assert _messages(events[1:]) == parts


def test_byte_at_a_time():
    stream, parts = _stream()
    c = SwitchConnection()
    events = []
    for i in range(len(stream)):
        events += c.receive_data(stream[i:i + 1])
    assert _messages(events) == parts and c._buf == bytearray()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 400), min_size=1, max_size=40))
def test_any_chunking_gives_the_same_messages(sizes):
    stream, parts = _stream()
    c = SwitchConnection()
    events, off, i = [], 0, 0
    while off < len(stream):
        n = sizes[i % len(sizes)]
        events += c.receive_data(stream[off:off + n])
        off, i = off + n, i + 1
    assert events[0] == Connected(1, 1)
    assert _messages(events[1:]) == parts


def test_malformed_message_yields_error_event_and_connection_goes_on():
    c = connected()
    bad = flow_mod_with(struct.pack("!HH4x", 13, 8), xid=31)
    good = encode(_with_xid(p.OFPBarrierRequest(DP), 32))
    ev, barrier = c.receive_data(bad + good)
    assert isinstance(ev, ErrorEvent) and not ev.fatal
    assert (ev.error.err_type, ev.error.err_code) == (ofp.OFPET_BAD_ACTION, ofp.OFPBAC_BAD_TYPE)
    reply = decode(ev.reply)
    assert (reply.type, reply.code, reply.xid, reply.data) == (ofp.OFPET_BAD_ACTION, ofp.OFPBAC_BAD_TYPE, 31, bad[:64])
    assert isinstance(barrier, p.OFPBarrierRequest) and barrier.xid == 32
    assert c.state is State.CONNECTED


def test_wrong_version_after_v1_hello_is_bad_version_not_mismatch():
    c = connected()
    (ev,) = c.receive_data(msg(5, xid=4, version=2))
    assert isinstance(ev, ErrorEvent) and ev.error.err_code == ofp.OFPBRC_BAD_VERSION
    assert decode(ev.reply).xid == 4 and c.state is State.CONNECTED


def test_malformed_error_message_gets_no_reply():
    c = connected()
    (ev,) = c.receive_data(msg(1, b"\x00", xid=4))
    assert isinstance(ev, ErrorEvent) and ev.reply == b""


def test_header_length_below_8_closes():
    c = connected()
    (ev,) = c.receive_data(hdr(2, 4, 9) + encode(p.OFPBarrierRequest(DP)))
    assert isinstance(ev, ErrorEvent) and ev.fatal and ev.error.err_code == ofp.OFPBRC_BAD_LEN
    assert decode(ev.reply).xid == 9
    assert c.state is State.CLOSED and c.receive_data(encode(p.OFPBarrierRequest(DP))) == []


def test_send_assigns_increasing_xids_and_keeps_given_ones():
    c = SwitchConnection()
    assert c.initiate()[4:8] == struct.pack("!I", 1)
    a, b = p.OFPBarrierReply(DP), p.OFPEchoReply(DP, b"")
    assert decode(c.send(a)).xid == 2 and a.xid == 2
    assert decode(c.send(b)).xid == 3
    assert decode(c.send(_with_xid(p.OFPEchoReply(DP, b"x"), 99))).xid == 99
    assert decode(c.send(p.OFPBarrierReply(DP))).xid == 4


def test_xid_counter_wraps():
    c = SwitchConnection(first_xid=0xFFFFFFFF)
    assert decode(c.send(p.OFPBarrierReply(DP))).xid == 0xFFFFFFFF
    assert decode(c.send(p.OFPBarrierReply(DP))).xid == 0


def test_send_after_close_raises():
    c = connected()
    c.close()
    with pytest.raises(ConnectionStateError):
        c.send(p.OFPBarrierReply(DP))
