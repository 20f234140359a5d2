"""The OpenFlow 1.3 pipeline against the spec: actions, action set, instructions, tables, groups, meters.

What Open vSwitch cannot judge (OVS lacks copy_ttl_in/out and DSCP remark
bands, meters run on its wall clock, TTL expiry needs a controller that
asked for it) is checked here against the spec's text; the rest is also in
the differential tests.
"""

from __future__ import annotations

from collections import Counter

import pytest
from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

from netsleuth.model.of13 import stats
from netsleuth.model.of13.actions import (CopyTtlIn, CopyTtlOut, DecMplsTtl, DecNwTtl, Group, Output, PopMpls,
                                          PopVlan, PushMpls, PushVlan, SetField, SetMplsTtl, SetNwTtl, SetQueue,
                                          action_from_ofp, action_to_ofp, apply)
from netsleuth.model.of13.actionset import ActionSet
from netsleuth.model.of13.errors import OFError
from netsleuth.model.of13.frame import Frame
from netsleuth.model.of13.groups import Bucket
from netsleuth.model.of13.headers import MplsLabel, VlanTag
from netsleuth.model.of13.instructions import Instructions
from netsleuth.model.of13.meters import Band, remark_dscp
from netsleuth.model.of13.oxm import OxmMatch
from netsleuth.model.of13.pipeline import PACKET_OUT_COOKIE, Pipeline13, PortState
from netsleuth.model.packet import TCP, IPv4, arp_request

CTL = ofp.OFPP_CONTROLLER


def tcp(tags: tuple[VlanTag, ...] = (), ttl: int = 64, tos: int = 0, sport: int = 1000) -> Frame:
    return Frame(0x1, 0x2, 0x0800, tags, (), IPv4(0x0A000001, 0x0A000002, 6, tos=tos, ttl=ttl), TCP(sport, 80, flags=2))


def pipe(n_tables: int = 4, ports: int = 4, **kw: object) -> Pipeline13:
    return Pipeline13(n_tables, range(1, ports + 1), **kw)  # type: ignore[arg-type]


def outs(result: object) -> list[int]:
    return sorted(e.port for e in result.outputs)  # type: ignore[attr-defined]


def err(fn: object) -> str:
    with pytest.raises(OFError) as exc:
        fn()  # type: ignore[operator]
    return exc.value.name


# ---------------------------------------------------------------- actions
def test_push_vlan_copies_the_outer_tag_and_pop_removes_it() -> None:
    f = apply(tcp(), PushVlan())
    assert f.tags == (VlanTag(0, 0, 0, 0x8100),)
    f = apply(apply(f, SetField("vlan_vid", 0x1000 | 7)), SetField("vlan_pcp", 5))
    g = apply(f, PushVlan(0x88A8))
    assert g.tags == (VlanTag(7, 5, 0, 0x88A8), VlanTag(7, 5))  # spec 7.2.5: VID and PCP copied
    assert apply(g, PopVlan()).tags == (VlanTag(7, 5),)
    assert Frame.from_bytes(g.to_bytes()).tags == g.tags


def test_push_and_pop_mpls() -> None:
    f = apply(tcp(ttl=33, tos=0xB8), PushMpls(0x8847))
    assert f.mpls == (MplsLabel(0, 0, 1, 33),) and f.l3 is None  # TTL from IP; label and TC 0
    f2 = apply(f, PushMpls(0x8847))
    assert f2.mpls == (MplsLabel(0, 0, 0, 33), MplsLabel(0, 0, 1, 33))
    back = apply(apply(f2, PopMpls(0x8847)), PopMpls(0x0800))
    assert back.to_bytes() == tcp(ttl=33, tos=0xB8).to_bytes()
    non_ip = apply(Frame(1, 2, 0x88B5, payload=b"xyz"), PushMpls(0x8847))
    assert non_ip.mpls[0].ttl == 0


def test_ttl_actions() -> None:
    assert apply(tcp(ttl=5), DecNwTtl()).l3.ttl == 4  # type: ignore[union-attr]
    assert apply(tcp(), SetNwTtl(9)).l3.ttl == 9  # type: ignore[union-attr]
    m = apply(tcp(ttl=20), PushMpls(0x8847))
    assert apply(m, SetMplsTtl(7)).mpls[0].ttl == 7
    assert apply(m, DecMplsTtl()).mpls[0].ttl == 19
    # copy_ttl_in: outermost -> next (the IP header under the last label); copy_ttl_out the other way.
    inner = apply(apply(m, SetMplsTtl(9)), CopyTtlIn())
    assert apply(inner, PopMpls(0x0800)).l3.ttl == 9  # type: ignore[union-attr]
    out = apply(apply(m, SetMplsTtl(3)), CopyTtlOut())
    assert out.mpls[0].ttl == 20


def test_ttl_expiry() -> None:
    from netsleuth.model.of13.actions import TtlExpired
    for ttl in (0, 1):
        with pytest.raises(TtlExpired):
            apply(tcp(ttl=ttl), DecNwTtl())
    with pytest.raises(TtlExpired):
        apply(apply(apply(tcp(), PushMpls()), SetMplsTtl(1)), DecMplsTtl())
    assert apply(tcp(ttl=2), DecNwTtl()).l3.ttl == 1  # type: ignore[union-attr]


def test_set_field_recomputes_checksums() -> None:
    f = apply(tcp(), SetField("ipv4_dst", 0x0A0000FE))
    parsed = Frame.from_bytes(f.to_bytes())
    assert parsed.l3.dst == 0x0A0000FE  # type: ignore[union-attr]
    fresh = Frame(1, 2, 0x0800, (), (), IPv4(0x0A000001, 0x0A0000FE, 6), TCP(1000, 80, flags=2)).to_bytes()
    assert f.to_bytes() == fresh
    assert apply(tcp(tos=0x03), SetField("ip_dscp", 0x2E)).l3.tos == 0xBB  # type: ignore[union-attr]


def test_action_os_ken_round_trip() -> None:
    actions = [Output(3, 128), CopyTtlOut(), CopyTtlIn(), SetMplsTtl(4), DecMplsTtl(), PushVlan(0x88A8), PopVlan(),
               PushMpls(0x8848), PopMpls(0x86DD), SetQueue(2), Group(5), SetNwTtl(6), DecNwTtl(),
               SetField("eth_dst", 0x0200000000AB), SetField("ipv6_src", 1), SetField("vlan_vid", 0x1003)]
    for a in actions:
        assert action_from_ofp(action_to_ofp(a)) == a


# ---------------------------------------------------------------- action set
def test_action_set_order_and_replacement() -> None:
    s = ActionSet.of([Output(1), SetField("eth_dst", 5), PushVlan(), DecNwTtl(), PopVlan(), CopyTtlIn(),
                      PushMpls(0x8847), CopyTtlOut(), SetQueue(1), SetField("eth_src", 6), SetNwTtl(9)])
    kinds = [type(a).__name__ for a in s.ordered()]
    assert kinds == ["CopyTtlIn", "PopVlan", "PushMpls", "PushVlan", "CopyTtlOut", "DecNwTtl", "SetField", "SetField",
                     "SetNwTtl", "SetQueue", "Output"]
    s = s.write([Output(2), SetField("eth_dst", 7)])
    assert Output(2) in s.ordered() and Output(1) not in s.ordered() and SetField("eth_dst", 7) in s.ordered()
    assert [a for a in s.write([Group(3)]).ordered() if type(a) in (Group, Output)] == [Group(3)]  # group wins
    assert not s.clear()


# ---------------------------------------------------------------- instructions
def test_instruction_checks() -> None:
    p = pipe()
    ip = OxmMatch.build(eth_type=0x800)
    assert err(lambda: p.add_flow(1, ip, 1, Instructions(goto=1))) == "OFPBIC_BAD_TABLE_ID"
    assert err(lambda: p.add_flow(1, ip, 1, Instructions(goto=0))) == "OFPBIC_BAD_TABLE_ID"
    assert err(lambda: p.add_flow(1, ip, 1, Instructions(goto=4))) == "OFPBIC_BAD_TABLE_ID"
    assert err(lambda: p.add_flow(4, ip, 1, Instructions())) == "OFPFMFC_BAD_TABLE_ID"
    assert err(lambda: p.add_flow(0, OxmMatch(), 1, Instructions.actions(PopVlan()))) == "OFPBAC_MATCH_INCONSISTENT"
    assert err(lambda: p.add_flow(0, OxmMatch(), 1, Instructions.actions(SetField("ipv4_src", 1)))) \
        == "OFPBAC_MATCH_INCONSISTENT"
    assert err(lambda: p.add_flow(0, ip, 1, Instructions.actions(PushMpls(), SetField("ipv4_src", 1)))) \
        == "OFPBAC_MATCH_INCONSISTENT"
    assert err(lambda: p.add_flow(0, ip, 1, Instructions.actions(Group(9)))) == "OFPBAC_BAD_OUT_GROUP"
    assert err(lambda: p.add_flow(0, ip, 1, Instructions.actions(Output(ofp.OFPP_TABLE)))) == "OFPBAC_BAD_OUT_PORT"
    assert err(lambda: p.add_flow(0, ip, 1, Instructions.actions(SetField("in_port", 1)))) == "OFPBAC_BAD_SET_ARGUMENT"
    assert err(lambda: p.add_flow(0, ip, 1, Instructions(meter=1))) == "OFPMMFC_INVALID_METER"
    p.add_flow(0, ip, 1, Instructions(apply=(PushVlan(), SetField("vlan_vid", 0x1001), PopVlan()), goto=3))
    dup = [parser.OFPInstructionGotoTable(1), parser.OFPInstructionGotoTable(2)]
    assert err(lambda: Instructions.from_ofp(dup)) == "OFPBIC_UNSUP_INST"
    inst = Instructions(meter=None, apply=(Output(1),), clear=True, write=(Group(1),), metadata=(1, 3), goto=2)
    assert Instructions.from_ofp(inst.to_ofp()) == inst


# ---------------------------------------------------------------- flow tables
def test_add_replaces_identical_and_keeps_counters_unless_reset() -> None:
    p = pipe()
    m = OxmMatch.build(in_port=1)
    p.add_flow(0, m, 5, Instructions.actions(Output(2)))
    p.process(tcp(), 1, 0.0)
    old = p.add_flow(0, m, 5, Instructions.actions(Output(3)), now=1.0)
    assert old is not None and len(p.tables) == 1
    [e] = p.tables.entries()
    assert e.packet_count == 1 and e.installed_at == 1.0
    p.add_flow(0, m, 5, Instructions.actions(Output(3)), flags=ofp.OFPFF_RESET_COUNTS)
    assert p.tables.entries()[0].packet_count == 0


def test_check_overlap_only_at_the_same_priority() -> None:
    p = pipe()
    p.add_flow(0, OxmMatch.build(in_port=1), 5, Instructions())
    flags = ofp.OFPFF_CHECK_OVERLAP
    assert err(lambda: p.add_flow(0, OxmMatch.build(eth_type=0x800), 5, Instructions(), flags=flags)) \
        == "OFPFMFC_OVERLAP"
    p.add_flow(0, OxmMatch.build(eth_type=0x800), 6, Instructions(), flags=flags)
    p.add_flow(0, OxmMatch.build(in_port=2), 5, Instructions(), flags=flags)


def test_modify_never_adds_and_filters_by_cookie() -> None:
    p = pipe()
    assert p.modify_flows(0, OxmMatch(), Instructions.actions(Output(1)), strict=False) == []
    assert len(p.tables) == 0
    p.add_flow(0, OxmMatch.build(in_port=1), 5, Instructions(), cookie=0x11)
    p.add_flow(0, OxmMatch.build(in_port=2), 5, Instructions(), cookie=0x22)
    changed = p.modify_flows(0, OxmMatch(), Instructions.actions(Output(3)), strict=False, cookie=0x20, cookie_mask=0xF0)
    assert [e.cookie for e in changed] == [0x22]
    assert p.modify_flows(0, OxmMatch(), Instructions(), strict=True, priority=5) == []  # strict: exact match only


def test_delete_filters_and_all_tables() -> None:
    p = pipe()
    p.add_group(1, ofp.OFPGT_ALL, [Bucket((Output(1),))])
    p.add_flow(0, OxmMatch.build(in_port=1), 5, Instructions.actions(Output(2)))
    p.add_flow(1, OxmMatch.build(in_port=1), 5, Instructions(write=(Output(3),)))
    p.add_flow(2, OxmMatch.build(in_port=2), 5, Instructions.actions(Group(1)))
    assert [r.entry.table_id for r in p.tables.delete(ofp.OFPTT_ALL, OxmMatch(), strict=False, out_port=3)] == [1]
    assert [r.entry.table_id for r in p.tables.delete(ofp.OFPTT_ALL, OxmMatch(), strict=False, out_group=1)] == [2]
    removed = p.tables.delete(ofp.OFPTT_ALL, OxmMatch(), strict=False)
    assert [r.reason for r in removed] == [ofp.OFPRR_DELETE]


def test_timeouts_use_the_injected_clock() -> None:
    p = pipe()
    p.add_flow(0, OxmMatch.build(in_port=1), 5, Instructions(), idle_timeout=10, now=0.0)
    p.add_flow(0, OxmMatch.build(in_port=2), 5, Instructions(), hard_timeout=15, idle_timeout=10, now=0.0)
    p.process(tcp(), 2, 8.0)
    assert p.tables.next_expiry() == 10.0
    assert [(r.entry.match.exact_value("in_port"), r.reason) for r in p.expire(10.0)] == [(1, ofp.OFPRR_IDLE_TIMEOUT)]
    assert [r.reason for r in p.expire(15.0)] == [ofp.OFPRR_HARD_TIMEOUT]


# ---------------------------------------------------------------- pipeline
def test_goto_metadata_and_the_action_set() -> None:
    p = pipe()
    p.add_flow(0, OxmMatch(), 1, Instructions(apply=(SetField("eth_dst", 9),), write=(Output(2),),
                                             metadata=(0xAB, 0xF0), goto=2))
    p.add_flow(2, OxmMatch.build(metadata=(0xA0, 0xF0)), 1, Instructions(write=(SetField("eth_src", 7), Output(3))))
    r = p.process(tcp(), 1, 0.0)
    [e] = r.outputs
    assert (e.port, e.frame.eth_dst, e.frame.eth_src, e.metadata) == (3, 9, 7, 0xA0)
    assert [t for t, _ in r.path] == [0, 2]


def test_a_table_miss_drops_the_packet_and_its_action_set() -> None:
    p = pipe()
    p.add_flow(0, OxmMatch(), 1, Instructions(write=(Output(2),), goto=1))
    r = p.process(tcp(), 1, 0.0)
    assert r.outputs == [] and r.ended == "table-miss" and r.discarded == (Output(2),)
    assert p.process(tcp(), 1, 0.0).outputs == []
    assert stats.table_stats(p)[1].lookup_count == 2 and stats.table_stats(p)[1].matched_count == 0


def test_packet_in_reasons_and_fields() -> None:
    p = pipe()
    p.add_flow(0, OxmMatch(), 0, Instructions(apply=(Output(CTL, 128),), write=(Output(CTL, 64),)), cookie=7)
    r = p.process(tcp(), 1, 0.0)
    reasons = sorted((e.reason, e.max_len, e.cookie) for e in r.outputs)
    assert reasons == [(ofp.OFPR_NO_MATCH, 128, 7), (ofp.OFPR_ACTION, 64, 7)]
    p.add_flow(0, OxmMatch.build(in_port=2), 10, Instructions.actions(Output(CTL)))
    assert [e.reason for e in p.process(tcp(), 2, 0.0).outputs] == [ofp.OFPR_ACTION]


def test_outputs_in_port_flood_all() -> None:
    p = Pipeline13(2, {1: PortState(), 2: PortState(no_flood=True), 3: PortState(), 4: PortState(live=False)})
    p.add_flow(0, OxmMatch.build(in_port=1), 1, Instructions.actions(Output(1), Output(ofp.OFPP_IN_PORT)))
    p.add_flow(0, OxmMatch.build(in_port=3), 1, Instructions.actions(Output(ofp.OFPP_FLOOD)))
    p.add_flow(0, OxmMatch.build(in_port=4), 1, Instructions.actions(Output(ofp.OFPP_ALL), Output(9)))
    assert outs(p.process(tcp(), 1, 0.0)) == [1]  # a plain output to the ingress port sends nothing
    assert outs(p.process(tcp(), 3, 0.0)) == [1, 4]  # FLOOD skips no_flood ports
    assert outs(p.process(tcp(), 4, 0.0)) == [1, 2, 3]


def test_ttl_expiry_ends_the_packet() -> None:
    for to_ctl, want in ((False, []), (True, [(CTL, ofp.OFPR_INVALID_TTL)])):
        p = pipe(invalid_ttl_to_controller=to_ctl)
        p.add_flow(0, OxmMatch.build(eth_type=0x800), 1, Instructions(apply=(Output(2), DecNwTtl(), Output(3)),
                                                                     write=(Output(4),)))
        r = p.process(tcp(ttl=1), 1, 0.0)
        assert r.ended == "invalid-ttl"
        assert [(e.port, e.reason) for e in r.outputs if e.port == CTL] == want
        assert [e.port for e in r.outputs if e.port != CTL] == [2]


def test_packet_out_to_table() -> None:
    p = pipe()
    p.add_flow(0, OxmMatch.build(in_port=ofp.OFPP_CONTROLLER), 1, Instructions.actions(Output(3)))
    r = p.packet_out(tcp(), ofp.OFPP_CONTROLLER, [SetField("eth_dst", 4), Output(ofp.OFPP_TABLE), Output(CTL)], 0.0)
    assert [(e.port, e.frame.eth_dst) for e in r.outputs] == [(3, 4), (CTL, 4)]
    assert r.outputs[1].cookie == PACKET_OUT_COOKIE
    assert err(lambda: p.packet_out(tcp(), 1, [Output(0)], 0.0)) == "OFPBAC_BAD_OUT_PORT"


# ---------------------------------------------------------------- groups
def test_group_types() -> None:
    p = Pipeline13(2, {1: PortState(), 2: PortState(live=False), 3: PortState(), 4: PortState()})
    p.add_group(1, ofp.OFPGT_ALL, [Bucket((Output(2),)), Bucket((SetField("eth_dst", 5), Output(3)))])
    p.add_group(2, ofp.OFPGT_FF, [Bucket((Output(2),), watch_port=2), Bucket((Output(3),), watch_port=3)])
    p.add_group(3, ofp.OFPGT_INDIRECT, [Bucket((Group(1),))])
    p.add_group(4, ofp.OFPGT_FF, [Bucket((Output(4),), watch_group=2)])
    for gid, want in ((1, [(2, 2), (3, 5)]), (2, [(3, 2)]), (3, [(2, 2), (3, 5)]), (4, [(4, 2)])):
        p.add_flow(0, OxmMatch.build(in_port=1), 1, Instructions.actions(Group(gid)))
        assert sorted((e.port, e.frame.eth_dst) for e in p.process(tcp(), 1, 0.0).outputs) == want
    g = stats.group_stats(p, 1.0, 1)[0]
    assert g.packet_count == 2 and [b.packet_count for b in g.bucket_stats] == [2, 2]


def test_select_is_seeded_deterministic_and_weighted() -> None:
    def run(seed: int) -> Counter[int]:
        p = pipe(seed=seed)
        p.add_group(1, ofp.OFPGT_SELECT, [Bucket((Output(2),), weight=3), Bucket((Output(3),), weight=1),
                                          Bucket((Output(4),), weight=0)])
        p.add_flow(0, OxmMatch(), 1, Instructions.actions(Group(1)))
        return Counter(p.process(tcp(sport=s), 1, 0.0).outputs[0].port for s in range(2000))
    a = run(1)
    assert a == run(1) and a != run(2)
    assert a[4] == 0 and 0.68 < a[2] / 2000 < 0.82


def test_group_mod_errors_and_flow_removal() -> None:
    p = pipe()
    p.add_group(1, ofp.OFPGT_ALL, [Bucket((Output(1),))])
    assert err(lambda: p.add_group(1, ofp.OFPGT_ALL, [])) == "OFPGMFC_GROUP_EXISTS"
    assert err(lambda: p.modify_group(2, ofp.OFPGT_ALL, [])) == "OFPGMFC_UNKNOWN_GROUP"
    assert err(lambda: p.add_group(2, ofp.OFPGT_INDIRECT, [])) == "OFPGMFC_INVALID_GROUP"
    assert err(lambda: p.add_group(2, 9, [])) == "OFPGMFC_BAD_TYPE"
    assert err(lambda: p.add_group(2, ofp.OFPGT_ALL, [Bucket((Group(3),))])) == "OFPBAC_BAD_OUT_GROUP"
    p.add_group(2, ofp.OFPGT_ALL, [Bucket((Group(1),))])
    assert err(lambda: p.modify_group(1, ofp.OFPGT_ALL, [Bucket((Group(2),))])) == "OFPGMFC_LOOP"
    assert err(lambda: p.delete_group(1)) == "OFPGMFC_CHAINED_GROUP"
    p.add_flow(0, OxmMatch.build(in_port=1), 1, Instructions.actions(Group(2)))
    p.add_flow(0, OxmMatch.build(in_port=2), 1, Instructions(write=(Group(2),)))
    p.add_flow(0, OxmMatch.build(in_port=3), 1, Instructions.actions(Output(1)))
    removed = p.delete_group(2)
    assert sorted(r.entry.match.exact_value("in_port") or 0 for r in removed) == [1, 2]
    assert {r.reason for r in removed} == {ofp.OFPRR_GROUP_DELETE}
    assert len(p.tables) == 1 and p.delete_group(99) == []
    assert [d.group_id for d in stats.group_desc(p)] == [1]


# ---------------------------------------------------------------- meters
def test_meter_drop_band_is_a_token_bucket_over_injected_time() -> None:
    p = pipe()
    p.add_meter(1, ofp.OFPMF_PKTPS | ofp.OFPMF_BURST, [Band(ofp.OFPMBT_DROP, rate=10, burst_size=5)])
    p.add_flow(0, OxmMatch(), 1, Instructions(meter=1, apply=(Output(2),)))
    sent = [bool(p.process(tcp(), 1, 0.0).outputs) for _ in range(8)]
    assert sent == [True] * 5 + [False] * 3  # the burst, then drops at the same instant
    assert bool(p.process(tcp(), 1, 0.1).outputs)  # 0.1 s at 10 pkt/s refills one token
    assert not p.process(tcp(), 1, 0.1).outputs
    [m] = stats.meter_stats(p, 1.0)
    assert m.packet_in_count == 10 and m.band_stats[0].packet_band_count == 4 and m.flow_count == 1


def test_meter_dscp_remark_and_errors() -> None:
    p = pipe()
    p.add_meter(1, ofp.OFPMF_PKTPS | ofp.OFPMF_BURST, [Band(ofp.OFPMBT_DSCP_REMARK, 1, 1, prec_level=1)])
    p.add_flow(0, OxmMatch(), 1, Instructions(meter=1, apply=(Output(2),)))
    af11 = 10 << 2
    first, second = (p.process(tcp(tos=af11), 1, 0.0).outputs[0].frame for _ in range(2))
    assert first.l3.tos >> 2 == 10 and second.l3.tos >> 2 == 12  # type: ignore[union-attr]  # AF11 -> AF12
    assert remark_dscp(46, 1) == 46  # EF has no drop precedence
    arp = Frame.from_packet(arp_request(1, "10.0.0.1", "10.0.0.2"))
    assert p.process(arp, 1, 0.0).outputs[0].frame == arp  # over the rate, but nothing to remark
    drop = [Band(ofp.OFPMBT_DROP, 100)]
    assert err(lambda: p.add_meter(1, ofp.OFPMF_KBPS, drop)) == "OFPMMFC_METER_EXISTS"
    assert err(lambda: p.add_meter(0, ofp.OFPMF_KBPS, drop)) == "OFPMMFC_INVALID_METER"
    assert err(lambda: p.add_meter(2, ofp.OFPMF_KBPS | ofp.OFPMF_PKTPS, drop)) == "OFPMMFC_BAD_FLAGS"
    assert err(lambda: p.add_meter(2, ofp.OFPMF_KBPS, [Band(ofp.OFPMBT_DROP, 0)])) == "OFPMMFC_BAD_RATE"
    assert err(lambda: p.add_meter(2, ofp.OFPMF_KBPS, [Band(7, 10)])) == "OFPMMFC_BAD_BAND"
    assert err(lambda: p.add_meter(2, ofp.OFPMF_KBPS, [Band(ofp.OFPMBT_DROP, 10, 5)])) == "OFPMMFC_BAD_BURST"
    assert err(lambda: p.modify_meter(3, ofp.OFPMF_KBPS, drop)) == "OFPMMFC_UNKNOWN_METER"
    assert [r.entry.instructions.meter for r in p.delete_meter(1)] == [1] and len(p.tables) == 0


def test_stats_bodies() -> None:
    p = pipe()
    p.add_flow(0, OxmMatch.build(in_port=1), 3, Instructions.actions(Output(2)), cookie=5, now=1.0)
    p.add_flow(1, OxmMatch.build(in_port=1), 3, Instructions.actions(Output(3)), now=1.0)
    p.process(tcp(), 1, 2.0)
    [fs] = stats.flow_stats(p, 3.5, table_id=0)
    assert (fs.duration_sec, fs.duration_nsec, fs.packet_count, fs.cookie) == (2, 500_000_000, 1, 5)
    assert OxmMatch.from_ofp(fs.match) == OxmMatch.build(in_port=1)
    agg = stats.aggregate_stats(p)
    assert (agg.flow_count, agg.packet_count) == (2, 1)
    assert len(stats.table_features(p)) == 4 and stats.group_features().types == 0b1111
    assert stats.meter_features().band_types == (1 << ofp.OFPMBT_DROP) | (1 << ofp.OFPMBT_DSCP_REMARK)


def test_canonical_key_ignores_install_order_and_copy_is_independent() -> None:
    a, b = pipe(), pipe()
    rules = [(OxmMatch.build(in_port=1), 5, Instructions.actions(Output(2))),
             (OxmMatch.build(eth_type=0x800), 5, Instructions(goto=1)),
             (OxmMatch(), 0, Instructions.actions(Output(CTL)))]
    for m, prio, inst in rules:
        a.add_flow(0, m, prio, inst)
    for m, prio, inst in reversed(rules):
        b.add_flow(0, m, prio, inst)
    assert a.canonical_key() == b.canonical_key()
    c = a.copy()
    c.process(tcp(), 1, 0.0)
    assert c.canonical_key() != a.canonical_key()  # counters moved in the copy only
    assert sum(e.packet_count for e in a.tables) == 0
