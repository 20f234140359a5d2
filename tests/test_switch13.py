"""The OpenFlow 1.3 part of the switch, message by message.

Every request is built with os-ken's 1.3 classes (what a controller sends),
encoded and decoded by netsleuth's codec as the runtime does; every answer
is encoded and parsed back with os-ken's own parser (what the controller
reads), so the exchange is checked at the wire, not on our own objects.
"""

from __future__ import annotations

from typing import Any

import pytest
from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as p
from os_ken.ofproto.ofproto_parser import msg as osken_parse

from netsleuth.model.addr import mac_to_int
from netsleuth.model.packet import arp_request, icmp_echo
from netsleuth.model.switch import Emit, Switch, ToController
from netsleuth.openflow.codec import DATAPATH13 as DP
from netsleuth.openflow.codec import decode, encode

H1, H2 = mac_to_int("00:00:00:00:00:01"), mac_to_int("00:00:00:00:00:02")
IP1, IP2 = 0x0A000001, 0x0A000002


class _Datapath:
    """What os-ken's parser needs to read a message as a controller does."""

    ofproto = ofp
    ofproto_parser = p
    id = 1


def wire(msg: Any) -> Any:
    """``msg`` as the switch receives it: encoded by os-ken and decoded by netsleuth's codec."""
    if msg.xid is None:
        msg.xid = 7
    msg.serialize()
    return decode(bytes(msg.buf), None)


def controller_reads(out: ToController) -> Any:
    """What the controller's os-ken parser makes of a message the switch sends."""
    data = encode(out.msg)
    version, msg_type, msg_len, xid = data[0], data[1], int.from_bytes(data[2:4], "big"), int.from_bytes(data[4:8],
                                                                                                          "big")
    return osken_parse(_Datapath(), version, msg_type, msg_len, xid, data)


def switch13(ports: tuple[int, ...] = (1, 2, 3)) -> Switch:
    s = Switch(1, ports)
    assert s.use_version(4)
    return s


def send(s: Switch, msg: Any, conn: int = 0, now: float = 0.0) -> list[Any]:
    return s.handle_message(conn, wire(msg), now)


def replies(outs: list[Any]) -> list[Any]:
    return [controller_reads(o) for o in outs if isinstance(o, ToController)]


def flow(s: Switch, match: Any, actions: list[Any], *, priority: int = 1, conn: int = 0, **kw: Any) -> list[Any]:
    inst = [p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]
    return send(s, p.OFPFlowMod(DP, priority=priority, match=match, instructions=inst, **kw), conn)


def table_miss(s: Switch, conn: int = 0) -> None:
    assert flow(s, p.OFPMatch(), [p.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)], priority=0,
                conn=conn) == []


def test_features_without_ports_then_port_desc() -> None:
    s = switch13()
    (features,) = replies(send(s, p.OFPFeaturesRequest(DP)))
    assert isinstance(features, p.OFPSwitchFeatures)
    assert (features.datapath_id, features.n_tables, features.xid) == (1, 254, 7)
    (desc,) = replies(send(s, p.OFPPortDescStatsRequest(DP, 0)))
    assert [port.port_no for port in desc.body] == [1, 2, 3]
    assert all(port.state == ofp.OFPPS_LIVE for port in desc.body)


@pytest.mark.parametrize("request_, reply_cls", [
    (lambda: p.OFPDescStatsRequest(DP, 0), p.OFPDescStatsReply),
    (lambda: p.OFPFlowStatsRequest(DP), p.OFPFlowStatsReply),
    (lambda: p.OFPAggregateStatsRequest(DP, 0, ofp.OFPTT_ALL, ofp.OFPP_ANY, ofp.OFPG_ANY, 0, 0, p.OFPMatch()),
     p.OFPAggregateStatsReply),
    (lambda: p.OFPTableStatsRequest(DP, 0), p.OFPTableStatsReply),
    (lambda: p.OFPPortStatsRequest(DP, 0, ofp.OFPP_ANY), p.OFPPortStatsReply),
    (lambda: p.OFPQueueStatsRequest(DP, 0, ofp.OFPP_ANY, ofp.OFPQ_ALL), p.OFPQueueStatsReply),
    (lambda: p.OFPGroupStatsRequest(DP, 0, ofp.OFPG_ALL), p.OFPGroupStatsReply),
    (lambda: p.OFPGroupDescStatsRequest(DP, 0), p.OFPGroupDescStatsReply),
    (lambda: p.OFPGroupFeaturesStatsRequest(DP, 0), p.OFPGroupFeaturesStatsReply),
    (lambda: p.OFPMeterStatsRequest(DP, 0, ofp.OFPM_ALL), p.OFPMeterStatsReply),
    (lambda: p.OFPMeterConfigStatsRequest(DP, 0, ofp.OFPM_ALL), p.OFPMeterConfigStatsReply),
    (lambda: p.OFPMeterFeaturesStatsRequest(DP, 0), p.OFPMeterFeaturesStatsReply),
    (lambda: p.OFPTableFeaturesStatsRequest(DP, 0, []), p.OFPTableFeaturesStatsReply),
    (lambda: p.OFPPortDescStatsRequest(DP, 0), p.OFPPortDescStatsReply),
])
def test_every_multipart_type_is_answered(request_: Any, reply_cls: type) -> None:
    s = switch13()
    table_miss(s)
    got = replies(send(s, request_()))
    assert got and all(isinstance(r, reply_cls) for r in got), got
    assert got[-1].flags & ofp.OFPMPF_REPLY_MORE == 0


def test_large_flow_stats_are_split_with_reply_more() -> None:
    s = switch13()
    for i in range(150):
        flow(s, p.OFPMatch(eth_type=0x0800, ipv4_dst=0x0A000000 + i), [p.OFPActionOutput(2)])
    got = replies(send(s, p.OFPFlowStatsRequest(DP)))
    assert len(got) == 3
    assert [bool(r.flags & ofp.OFPMPF_REPLY_MORE) for r in got] == [True, True, False]
    assert sum(len(r.body) for r in got) == 150


def test_table_miss_packet_in_carries_reason_table_cookie_and_oxm_in_port() -> None:
    s = switch13()
    flow(s, p.OFPMatch(), [p.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)], priority=0,
         cookie=0xC0FFEE)
    pkt = arp_request(H1, IP1, IP2)
    (pin,) = replies(s.receive_packet(2, pkt, 1.0))
    assert isinstance(pin, p.OFPPacketIn)
    assert (pin.reason, pin.table_id, pin.cookie, pin.buffer_id) == (ofp.OFPR_NO_MATCH, 0, 0xC0FFEE,
                                                                       ofp.OFP_NO_BUFFER)
    assert pin.match["in_port"] == 2
    assert bytes(pin.data) == pkt.to_bytes() and pin.total_len == len(pin.data)


def test_buffered_packet_in_then_packet_out_by_buffer_id() -> None:
    s = switch13()
    flow(s, p.OFPMatch(), [p.OFPActionOutput(ofp.OFPP_CONTROLLER, 20)], priority=0)
    pkt = icmp_echo(H1, H2, IP1, IP2, 1, 1)
    (pin,) = replies(s.receive_packet(1, pkt, 1.0, tag="t1"))
    assert pin.buffer_id != ofp.OFP_NO_BUFFER and len(pin.data) == 20 and pin.total_len == len(pkt.to_bytes())
    outs = send(s, p.OFPPacketOut(DP, pin.buffer_id, 1, [p.OFPActionOutput(ofp.OFPP_FLOOD)], None))
    assert [(o.port, o.tag) for o in outs if isinstance(o, Emit)] == [(2, "t1"), (3, "t1")]
    # the buffer is used up
    (err,) = replies(send(s, p.OFPPacketOut(DP, pin.buffer_id, 1, [p.OFPActionOutput(2)], None)))
    assert (err.type, err.code) == (ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BUFFER_UNKNOWN)


def test_packet_out_to_table_runs_the_pipeline() -> None:
    s = switch13()
    flow(s, p.OFPMatch(eth_dst="00:00:00:00:00:02"), [p.OFPActionOutput(3)])
    pkt = icmp_echo(H1, H2, IP1, IP2, 1, 1)
    outs = send(s, p.OFPPacketOut(DP, ofp.OFP_NO_BUFFER, ofp.OFPP_CONTROLLER, [p.OFPActionOutput(ofp.OFPP_TABLE)],
                                  pkt.to_bytes()))
    assert [(o.port, o.packet.to_bytes()) for o in outs] == [(3, pkt.to_bytes())]


def test_roles_generation_ids_and_slaves() -> None:
    s = switch13()
    (r,) = replies(send(s, p.OFPRoleRequest(DP, ofp.OFPCR_ROLE_MASTER, 5), conn=0))
    assert (r.role, r.generation_id) == (ofp.OFPCR_ROLE_MASTER, 5)
    (r,) = replies(send(s, p.OFPRoleRequest(DP, ofp.OFPCR_ROLE_SLAVE, 5), conn=1))
    assert r.role == ofp.OFPCR_ROLE_SLAVE
    (err,) = replies(send(s, p.OFPRoleRequest(DP, ofp.OFPCR_ROLE_MASTER, 4), conn=1))
    assert (err.type, err.code) == (ofp.OFPET_ROLE_REQUEST_FAILED, ofp.OFPRRFC_STALE)
    # a slave may read but not modify
    (err,) = replies(flow(s, p.OFPMatch(), [p.OFPActionOutput(2)], conn=1))
    assert (err.type, err.code) == (ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_IS_SLAVE)
    assert isinstance(replies(send(s, p.OFPFlowStatsRequest(DP), conn=1))[0], p.OFPFlowStatsReply)
    # a new master demotes the old one
    (r,) = replies(send(s, p.OFPRoleRequest(DP, ofp.OFPCR_ROLE_MASTER, 6), conn=1))
    assert r.role == ofp.OFPCR_ROLE_MASTER
    (r,) = replies(send(s, p.OFPRoleRequest(DP, ofp.OFPCR_ROLE_NOCHANGE, 0), conn=0))
    assert (r.role, r.generation_id) == (ofp.OFPCR_ROLE_SLAVE, 6)
    # and the slave gets no packet-ins by default
    table_miss(s, conn=1)
    pins = [o for o in s.receive_packet(1, arp_request(H1, IP1, IP2), 1.0) if isinstance(o, ToController)]
    assert [o.conn for o in pins] == [1]


def test_async_masks_are_honoured_and_reported() -> None:
    s = switch13()
    send(s, p.OFPFeaturesRequest(DP), conn=1)
    table_miss(s)
    send(s, p.OFPSetAsync(DP, [1 << ofp.OFPR_ACTION, 0], [0, 0], [0, 0]), conn=0)
    (got,) = replies(send(s, p.OFPGetAsyncRequest(DP), conn=0))
    assert (got.packet_in_mask, got.port_status_mask, got.flow_removed_mask) == ([2, 0], [0, 0], [0, 0])
    pins = [o for o in s.receive_packet(1, arp_request(H1, IP1, IP2), 1.0) if isinstance(o, ToController)]
    assert [o.conn for o in pins] == [1]   # NO_MATCH masked off on conn 0
    status = [o.conn for o in s.set_link(2, False)]
    assert status == [1]                    # port-status masked off on conn 0


def test_port_config_no_fwd_and_no_packet_in() -> None:
    s = switch13()
    table_miss(s)
    flow(s, p.OFPMatch(eth_dst="01:80:c2:00:00:00"), [p.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)],
         priority=10)
    flow(s, p.OFPMatch(eth_dst="ff:ff:ff:ff:ff:ff"), [p.OFPActionOutput(ofp.OFPP_FLOOD)], priority=5)
    hw = s.ports[3].hw_addr
    mask = ofp.OFPPC_NO_FWD | ofp.OFPPC_NO_PACKET_IN
    (status,) = replies(send(s, p.OFPPortMod(DP, 3, "02:00:00:01:00:03", mask, mask, 0)))
    assert isinstance(status, p.OFPPortStatus) and status.desc.config == mask and hw == 0x020000010003
    flood = [o.port for o in s.receive_packet(1, arp_request(H1, IP1, IP2), 1.0) if isinstance(o, Emit)]
    assert flood == [2]
    # table-miss packet-ins from a NO_PACKET_IN port are dropped, an entry's explicit ones are not (BPDUs)
    assert s.receive_packet(3, icmp_echo(H1, H2, IP1, IP2, 1, 1), 1.0) == []
    bpdu = icmp_echo(H1, 0x0180C2000000, IP1, IP2, 1, 1)
    (pin,) = replies(s.receive_packet(3, bpdu, 1.0))
    assert pin.reason == ofp.OFPR_ACTION
    (err,) = replies(send(s, p.OFPPortMod(DP, 9, "02:00:00:01:00:09", 0, 0, 0)))
    assert (err.type, err.code) == (ofp.OFPET_PORT_MOD_FAILED, ofp.OFPPMFC_BAD_PORT)


def test_flow_removed_on_delete_and_timeouts_and_group_errors() -> None:
    s = switch13()
    flow(s, p.OFPMatch(in_port=1), [p.OFPActionOutput(2)], flags=ofp.OFPFF_SEND_FLOW_REM, cookie=3)
    flow(s, p.OFPMatch(in_port=2), [p.OFPActionOutput(1)], flags=ofp.OFPFF_SEND_FLOW_REM, hard_timeout=5)
    (removed,) = replies(send(s, p.OFPFlowMod(DP, command=ofp.OFPFC_DELETE, table_id=ofp.OFPTT_ALL,
                                              out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY,
                                              match=p.OFPMatch(in_port=1)), now=2.0))
    assert isinstance(removed, p.OFPFlowRemoved)
    assert (removed.reason, removed.cookie, removed.match["in_port"]) == (ofp.OFPRR_DELETE, 3, 1)
    assert s.next_expiry() == 5.0
    (expired,) = replies(s.expire(6.0))
    assert expired.reason == ofp.OFPRR_HARD_TIMEOUT
    group = p.OFPGroupMod(DP, ofp.OFPGC_ADD, ofp.OFPGT_ALL, 1, [p.OFPBucket(actions=[p.OFPActionOutput(2)])])
    assert send(s, group) == []
    (err,) = replies(send(s, p.OFPGroupMod(DP, ofp.OFPGC_ADD, ofp.OFPGT_ALL, 1, [])))
    assert (err.type, err.code) == (ofp.OFPET_GROUP_MOD_FAILED, ofp.OFPGMFC_GROUP_EXISTS)
    (err,) = replies(flow(s, p.OFPMatch(), [p.OFPActionGroup(9)]))
    assert (err.type, err.code) == (ofp.OFPET_BAD_ACTION, ofp.OFPBAC_BAD_OUT_GROUP)


def test_barrier_echo_config_and_bad_requests() -> None:
    s = switch13()
    assert isinstance(replies(send(s, p.OFPBarrierRequest(DP)))[0], p.OFPBarrierReply)
    assert bytes(replies(send(s, p.OFPEchoRequest(DP, b"hi")))[0].data) == b"hi"
    send(s, p.OFPSetConfig(DP, 0, 200))
    (cfg,) = replies(send(s, p.OFPGetConfigRequest(DP)))
    assert cfg.miss_send_len == 200
    (err,) = replies(send(s, p.OFPExperimenter(DP, 0x1234, 1, b"")))
    assert (err.type, err.code) == (ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_EXPERIMENTER)


def test_version_is_chosen_once_and_a_rebuilt_switch_follows_its_messages() -> None:
    s = Switch(1, (1, 2))
    assert s.version == 1 and s.pipeline is s.table
    assert s.use_version(4) and not s.use_version(1)
    assert s.pipeline is s.of13.pipeline  # type: ignore[union-attr]
    assert s.rebooted().negotiated is None
    fresh = Switch(1, (1, 2))
    fresh.handle_message(0, wire(p.OFPFeaturesRequest(DP)), 0.0)
    assert fresh.version == 4
