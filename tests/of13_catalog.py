"""One OpenFlow 1.3 message of every type a switch sends or receives, built with os-ken.

Controller->switch messages are built the way os-ken apps build them (its
constructors, as in ``simple_switch_13``); switch->controller ones the way a
switch model would.  Shared by the codec, fingerprint and pcap tests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as p

from netsleuth.model.packet import arp_request, icmp_echo
from netsleuth.openflow.codec import DATAPATH13 as DP

MAC1, MAC2 = "00:00:00:00:00:01", "00:00:00:00:00:02"
ARP = arp_request(0x000000000001, 0x0A000001, 0x0A000002).to_bytes()
PING = icmp_echo(0x000000000001, 0x000000000002, 0x0A000001, 0x0A000002, ident=1, seq=1).to_bytes()


def with_xid(m: Any, xid: int) -> Any:
    m.xid = xid
    return m


def _attrs(m: Any, **attrs: Any) -> Any:
    for k, v in attrs.items():
        setattr(m, k, v)
    return m


def _match() -> p.OFPMatch:
    return p.OFPMatch(in_port=1, eth_dst=MAC2, eth_src=MAC1)


def _rich_match() -> p.OFPMatch:
    return p.OFPMatch(in_port=2, eth_type=0x0800, ipv4_src=("10.0.0.0", "255.0.0.0"), ipv4_dst="10.0.0.2",
                      ip_proto=6, tcp_dst=80, vlan_vid=(0x1000 | 10))


def _actions() -> list[Any]:
    return [p.OFPActionSetField(eth_src=MAC1), p.OFPActionPushVlan(0x8100), p.OFPActionSetField(vlan_vid=0x1000 | 7),
            p.OFPActionSetQueue(3), p.OFPActionGroup(5), p.OFPActionDecNwTtl(), p.OFPActionPopVlan(),
            p.OFPActionOutput(2, 0xffe5), p.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)]


def _instructions() -> list[Any]:
    return [p.OFPInstructionMeter(1), p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, _actions()),
            p.OFPInstructionActions(ofp.OFPIT_WRITE_ACTIONS, [p.OFPActionOutput(3)]),
            p.OFPInstructionWriteMetadata(0xABCD, 0xFFFF), p.OFPInstructionGotoTable(1)]


def table_miss_flow_mod() -> p.OFPFlowMod:
    """What simple_switch_13 installs on connect: priority 0, match all, output to controller."""
    actions = [p.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)]
    inst = [p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]
    return p.OFPFlowMod(datapath=DP, priority=0, match=p.OFPMatch(), instructions=inst)


def simple_switch_flow_mod() -> p.OFPFlowMod:
    actions = [p.OFPActionOutput(2)]
    inst = [p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]
    return p.OFPFlowMod(datapath=DP, priority=1, match=_match(), instructions=inst, buffer_id=7)


def rich_flow_mod() -> p.OFPFlowMod:
    return p.OFPFlowMod(DP, cookie=0x1234, cookie_mask=0xFFFF, table_id=0, command=ofp.OFPFC_MODIFY_STRICT,
                        idle_timeout=10, hard_timeout=30, priority=100, buffer_id=ofp.OFP_NO_BUFFER,
                        out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY,
                        flags=ofp.OFPFF_SEND_FLOW_REM | ofp.OFPFF_CHECK_OVERLAP,
                        match=_rich_match(), instructions=_instructions())


def group_mod() -> p.OFPGroupMod:
    buckets = [p.OFPBucket(50, ofp.OFPP_ANY, ofp.OFPG_ANY, [p.OFPActionOutput(1)]),
               p.OFPBucket(50, 2, ofp.OFPG_ANY, [p.OFPActionSetField(eth_dst=MAC2), p.OFPActionOutput(2)])]
    return p.OFPGroupMod(DP, ofp.OFPGC_ADD, ofp.OFPGT_SELECT, 5, buckets)


def meter_mod() -> p.OFPMeterMod:
    bands = [p.OFPMeterBandDrop(rate=1000, burst_size=100), p.OFPMeterBandDscpRemark(rate=500, burst_size=50,
                                                                                      prec_level=1)]
    return p.OFPMeterMod(DP, ofp.OFPMC_ADD, ofp.OFPMF_KBPS | ofp.OFPMF_BURST, 1, bands)


def packet_out() -> p.OFPPacketOut:
    return p.OFPPacketOut(DP, ofp.OFP_NO_BUFFER, 1, [p.OFPActionOutput(ofp.OFPP_FLOOD)], ARP)


def table_features_request() -> p.OFPTableFeaturesStatsRequest:
    props = [p.OFPTableFeaturePropInstructions(type_=ofp.OFPTFPT_INSTRUCTIONS, instruction_ids=[
                 p.OFPInstructionId(ofp.OFPIT_GOTO_TABLE), p.OFPInstructionId(ofp.OFPIT_APPLY_ACTIONS)]),
             p.OFPTableFeaturePropNextTables(type_=ofp.OFPTFPT_NEXT_TABLES, table_ids=[1, 2]),
             p.OFPTableFeaturePropActions(type_=ofp.OFPTFPT_APPLY_ACTIONS, action_ids=[
                 p.OFPActionId(ofp.OFPAT_OUTPUT), p.OFPActionId(ofp.OFPAT_SET_FIELD)]),
             p.OFPTableFeaturePropOxm(type_=ofp.OFPTFPT_MATCH, oxm_ids=[
                 p.OFPOxmId(type_="in_port"), p.OFPOxmId(type_="eth_dst", hasmask=True)]),
             # the rest of what a switch must describe (Open vSwitch refuses table features without them)
             p.OFPTableFeaturePropActions(type_=ofp.OFPTFPT_WRITE_ACTIONS, action_ids=[
                 p.OFPActionId(ofp.OFPAT_OUTPUT)]),
             p.OFPTableFeaturePropOxm(type_=ofp.OFPTFPT_WILDCARDS, oxm_ids=[p.OFPOxmId(type_="eth_dst")]),
             p.OFPTableFeaturePropOxm(type_=ofp.OFPTFPT_WRITE_SETFIELD, oxm_ids=[p.OFPOxmId(type_="eth_src")]),
             p.OFPTableFeaturePropOxm(type_=ofp.OFPTFPT_APPLY_SETFIELD, oxm_ids=[p.OFPOxmId(type_="eth_src")])]
    tf = p.OFPTableFeaturesStats(table_id=0, name=b"table0", metadata_match=0xFFFFFFFFFFFFFFFF,
                                 metadata_write=0xFFFFFFFFFFFFFFFF, config=0, max_entries=1000, properties=props)
    return p.OFPTableFeaturesStatsRequest(DP, 0, [tf])


CONTROLLER_TO_SWITCH: dict[str, Callable[[], Any]] = {
    "hello": lambda: p.OFPHello(DP, [p.OFPHelloElemVersionBitmap([1, 4])]),
    "echo_request": lambda: p.OFPEchoRequest(DP, b"ping"),
    "echo_reply": lambda: p.OFPEchoReply(DP, b"pong"),
    "experimenter": lambda: p.OFPExperimenter(DP, 0x00ABCDEF, 17, b"\x00\x01\x02\x03"),
    "features_request": lambda: p.OFPFeaturesRequest(DP),
    "get_config_request": lambda: p.OFPGetConfigRequest(DP),
    "set_config": lambda: p.OFPSetConfig(DP, ofp.OFPC_FRAG_NORMAL, 128),
    "packet_out": packet_out,
    "packet_out_buffered": lambda: p.OFPPacketOut(DP, 42, 2, [p.OFPActionOutput(1)], None),
    "table_miss_flow_mod": table_miss_flow_mod,
    "simple_switch_flow_mod": simple_switch_flow_mod,
    "rich_flow_mod": rich_flow_mod,
    "delete_flow_mod": lambda: p.OFPFlowMod(DP, command=ofp.OFPFC_DELETE, table_id=ofp.OFPTT_ALL,
                                            out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY, match=p.OFPMatch()),
    "group_mod": group_mod,
    "port_mod": lambda: p.OFPPortMod(DP, 1, MAC1, ofp.OFPPC_NO_FWD, ofp.OFPPC_NO_FWD, 0),
    "table_mod": lambda: p.OFPTableMod(DP, 0, 3),
    "meter_mod": meter_mod,
    "mp_desc": lambda: p.OFPDescStatsRequest(DP, 0),
    "mp_flow": lambda: p.OFPFlowStatsRequest(DP, 0, ofp.OFPTT_ALL, ofp.OFPP_ANY, ofp.OFPG_ANY, 0, 0, _match()),
    "mp_aggregate": lambda: p.OFPAggregateStatsRequest(DP, 0, 0, 2, ofp.OFPG_ANY, 5, 0xFF, p.OFPMatch()),
    "mp_table": lambda: p.OFPTableStatsRequest(DP, 0),
    "mp_port_stats": lambda: p.OFPPortStatsRequest(DP, 0, ofp.OFPP_ANY),
    "mp_queue": lambda: p.OFPQueueStatsRequest(DP, 0, 1, ofp.OFPQ_ALL),
    "mp_group": lambda: p.OFPGroupStatsRequest(DP, 0, ofp.OFPG_ALL),
    "mp_group_desc": lambda: p.OFPGroupDescStatsRequest(DP, 0),
    "mp_group_features": lambda: p.OFPGroupFeaturesStatsRequest(DP, 0),
    "mp_meter": lambda: p.OFPMeterStatsRequest(DP, 0, ofp.OFPM_ALL),
    "mp_meter_config": lambda: p.OFPMeterConfigStatsRequest(DP, 0, 1),
    "mp_meter_features": lambda: p.OFPMeterFeaturesStatsRequest(DP, 0),
    "mp_table_features_empty": lambda: p.OFPTableFeaturesStatsRequest(DP, 0),
    "mp_table_features": table_features_request,
    "mp_port_desc": lambda: p.OFPPortDescStatsRequest(DP, 0),
    "mp_experimenter": lambda: p.OFPExperimenterStatsRequest(DP, 0, 0x00ABCDEF, 3, b"abcd"),
    "barrier_request": lambda: p.OFPBarrierRequest(DP),
    "queue_get_config_request": lambda: p.OFPQueueGetConfigRequest(DP, 1),
    "role_request": lambda: p.OFPRoleRequest(DP, ofp.OFPCR_ROLE_MASTER, 7),
    "get_async_request": lambda: p.OFPGetAsyncRequest(DP),
    "set_async": lambda: p.OFPSetAsync(DP, [3, 1], [7, 0], [15, 0]),
}


def _port(no: int, name: str = "") -> p.OFPPort:
    return p.OFPPort(port_no=no, hw_addr=f"00:00:00:00:01:{no:02x}", name=(name or f"s1-eth{no}").encode(),
                     config=0, state=ofp.OFPPS_LIVE, curr=ofp.OFPPF_10GB_FD | ofp.OFPPF_COPPER, advertised=0,
                     supported=0, peer=0, curr_speed=10_000_000, max_speed=0)


def _reply(cls: type, body: Any, flags: int = 0) -> Any:
    m = cls(DP, body=body, flags=flags)
    m.type = cls.cls_stats_type
    return m


def _flow_stats() -> p.OFPFlowStats:
    return p.OFPFlowStats(table_id=0, duration_sec=3, duration_nsec=500, priority=1, idle_timeout=0, hard_timeout=0,
                          flags=0, cookie=0, packet_count=4, byte_count=400, match=_match(),
                          instructions=[p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, [p.OFPActionOutput(2)])])


def _table_features_reply() -> Any:
    return _reply(p.OFPTableFeaturesStatsReply, table_features_request().body)


SWITCH_TO_CONTROLLER: dict[str, Callable[[], Any]] = {
    "error": lambda: p.OFPErrorMsg(DP, ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_TYPE, b"\x04\x99\x00\x08\x00\x00\x00\x01"),
    "features_reply": lambda: _attrs(p.OFPSwitchFeatures(DP), datapath_id=1, n_buffers=256, n_tables=254,
                                     auxiliary_id=0, capabilities=ofp.OFPC_FLOW_STATS | ofp.OFPC_PORT_STATS),
    "get_config_reply": lambda: p.OFPGetConfigReply(DP, 0, 128),
    "packet_in": lambda: p.OFPPacketIn(DP, ofp.OFP_NO_BUFFER, len(ARP), ofp.OFPR_NO_MATCH, 0, 0,
                                       p.OFPMatch(in_port=1), ARP),
    "packet_in_action": lambda: p.OFPPacketIn(DP, 12, 1500, ofp.OFPR_ACTION, 1, 0xAB,
                                              p.OFPMatch(in_port=3), PING),
    "flow_removed": lambda: p.OFPFlowRemoved(DP, 0x1234, 1, ofp.OFPRR_IDLE_TIMEOUT, 0, 10, 20, 30, 0, 5, 500,
                                             _match()),
    "port_status": lambda: p.OFPPortStatus(DP, ofp.OFPPR_MODIFY, _port(1)),
    "barrier_reply": lambda: p.OFPBarrierReply(DP),
    "queue_get_config_reply": lambda: p.OFPQueueGetConfigReply(DP, [
        _attrs(p.OFPPacketQueue(1, 1, [p.OFPQueuePropMinRate(100), p.OFPQueuePropMaxRate(900)]))], 1),
    "role_reply": lambda: p.OFPRoleReply(DP, ofp.OFPCR_ROLE_MASTER, 7),
    "get_async_reply": lambda: p.OFPGetAsyncReply(DP, [3, 1], [7, 0], [15, 0]),
    "mp_desc_reply": lambda: _reply(p.OFPDescStatsReply, p.OFPDescStats(b"netsleuth", b"mock", b"0.1", b"1",
                                                                         b"s1")),
    "mp_flow_reply": lambda: _reply(p.OFPFlowStatsReply, [_flow_stats(), _flow_stats()]),
    "mp_aggregate_reply": lambda: _reply(p.OFPAggregateStatsReply, p.OFPAggregateStats(8, 800, 2)),
    "mp_table_reply": lambda: _reply(p.OFPTableStatsReply, [p.OFPTableStats(0, 2, 10, 8)]),
    "mp_port_stats_reply": lambda: _reply(p.OFPPortStatsReply, [p.OFPPortStats(1, *range(1, 13), 5, 6)]),
    "mp_queue_reply": lambda: _reply(p.OFPQueueStatsReply, [p.OFPQueueStats(1, 0, 10, 20, 0, 3, 4)]),
    "mp_group_reply": lambda: _reply(p.OFPGroupStatsReply, [p.OFPGroupStats(
        group_id=5, ref_count=1, packet_count=3, byte_count=300, duration_sec=1, duration_nsec=2,
        bucket_stats=[p.OFPBucketCounter(1, 100), p.OFPBucketCounter(2, 200)])]),
    "mp_group_desc_reply": lambda: _reply(p.OFPGroupDescStatsReply, [p.OFPGroupDescStats(
        ofp.OFPGT_SELECT, 5, group_mod().buckets)]),
    "mp_group_features_reply": lambda: _reply(p.OFPGroupFeaturesStatsReply, p.OFPGroupFeaturesStats(
        15, 0, [16, 16, 16, 16], [1, 1, 1, 1])),
    "mp_meter_reply": lambda: _reply(p.OFPMeterStatsReply, [p.OFPMeterStats(
        meter_id=1, flow_count=1, packet_in_count=10, byte_in_count=1000, duration_sec=1, duration_nsec=0,
        band_stats=[p.OFPMeterBandStats(2, 200)])]),
    "mp_meter_config_reply": lambda: _reply(p.OFPMeterConfigStatsReply, [p.OFPMeterConfigStats(
        flags=ofp.OFPMF_KBPS, meter_id=1, bands=meter_mod().bands)]),
    "mp_meter_features_reply": lambda: _reply(p.OFPMeterFeaturesStatsReply, [p.OFPMeterFeaturesStats(
        100, 3, 3, 2, 0)]),
    "mp_table_features_reply": _table_features_reply,
    "mp_port_desc_reply": lambda: _reply(p.OFPPortDescStatsReply, [_port(1), _port(2)]),
    "mp_experimenter_reply": lambda: _reply(p.OFPExperimenterStatsReply, p.OFPExperimenterMultipart(
        0x00ABCDEF, 3, b"wxyz")),
}

ALL: dict[str, Callable[[], Any]] = {**CONTROLLER_TO_SWITCH, **SWITCH_TO_CONTROLLER}
