"""SDNRacer race detection and BigBug clustering on OpenFlow 1.3 traces, natively.

The commutativity rules are pinned on the model's own OXM matches and
instructions (no stand-ins): masks, metadata, per-table targets, OFPTT_ALL,
cookies under masks, out_port/out_group filters, 1.3's MODIFY that never
adds, priorities without 1.0's exact-match rule.  Hand-made 1.3 traces then
show races only a multi-table pipeline has (a packet's goto into table 1, a
group's buckets), and real controllers give races that are checked against
the trace itself and clustered: os-ken's ``simple_switch_13`` fuzzed with
host migrations and link failures (one table), and Faucet, whose pipeline
reaches tables 1-3 by goto-table.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

from netsleuth.model.of13.actions import Output
from netsleuth.model.of13.instructions import Instructions
from netsleuth.model.of13.oxm import OxmMatch
from netsleuth.model.packet import icmp_echo
from netsleuth.model.topo_builders import parse_topo
from netsleuth.openflow.codec import DATAPATH13, msg_to_json
from netsleuth.races.detect import COMMUTE, HARMFUL, TIME_FILTERED
from netsleuth.races.events import MESSAGE_HANDLE, PACKET_HANDLE, READ, WRITE
from netsleuth.races.job import detect_races
from netsleuth.races.of13.commute import commute_rw13, commute_rw_gm, commute_stats13, commute_ww13, commute_ww_gm
from netsleuth.races.of13.flowmod import GROUP, TABLE, FlowMod13, GroupMeterMod
from netsleuth.trace import schema as ts
from netsleuth.trace.io import read_trace, write_trace

H1, H2 = "00:00:00:00:00:01", "00:00:00:00:00:02"


# =============================================================================== commutativity


def fm(command: int = ofp.OFPFC_ADD, table: int = 0, priority: int = 10, out: int = 2, **kw) -> FlowMod13:
    """A flow mod of the model's own match and instructions (cookie, out_port... as keywords)."""
    match = kw.pop("match", OxmMatch.build(eth_dst=H2))
    inst = kw.pop("inst", Instructions.actions(Output(out)))
    return FlowMod13(command, table, match, priority, inst, **kw)


def fields(**kw: int) -> dict[str, int]:
    """OXM fields of an IPv4 packet from h1 to h2 on port 1 at some table (metadata etc. as keywords)."""
    f = {"in_port": 1, "in_phy_port": 1, "metadata": 0, "tunnel_id": 0, "eth_src": 1, "eth_dst": 2,
         "eth_type": 0x800, "vlan_vid": 0, "ipv4_src": 0x0A000001, "ipv4_dst": 0x0A000002, "ip_proto": 1}
    f.update(kw)
    return f


def test_write_write_follows_13_selection() -> None:
    add = fm(cookie=0x12)
    # cookies under a mask: the delete selects the added entry only when (cookie ^ c) & mask == 0
    assert not commute_ww13(add, fm(ofp.OFPFC_DELETE, cookie=0x10, cookie_mask=0xF0))
    assert commute_ww13(add, fm(ofp.OFPFC_DELETE, cookie=0x20, cookie_mask=0xF0))
    # out_port / out_group filters look at the added entry's instructions
    assert commute_ww13(add, fm(ofp.OFPFC_DELETE, out_port=3))
    assert not commute_ww13(add, fm(ofp.OFPFC_DELETE, out_port=2))
    assert commute_ww13(add, fm(ofp.OFPFC_DELETE, out_group=7))
    # one table each; OFPTT_ALL deletes reach every table
    assert commute_ww13(fm(table=5), fm(ofp.OFPFC_DELETE, table=1))
    assert not commute_ww13(fm(table=5), fm(ofp.OFPFC_DELETE, table=ofp.OFPTT_ALL))
    # non-strict selection is OXM cover: a delete of 10.0.0.0/8 selects a /24 entry, not the reverse
    m8, m24 = OxmMatch.build(eth_type=0x800, ipv4_dst="10.0.0.0/8"), OxmMatch.build(eth_type=0x800,
                                                                                     ipv4_dst="10.1.2.0/24")
    assert not commute_ww13(fm(match=m24), fm(ofp.OFPFC_DELETE, match=m8))
    assert commute_ww13(fm(match=m8), fm(ofp.OFPFC_DELETE, match=m24))
    # 1.3's MODIFY never adds: against a DELETE without out_port/out_group it commutes...
    assert commute_ww13(fm(ofp.OFPFC_MODIFY, out=3), fm(ofp.OFPFC_DELETE))
    # ... unless the delete filters on instructions the modify changes
    assert not commute_ww13(fm(ofp.OFPFC_MODIFY, out=3), fm(ofp.OFPFC_DELETE, out_port=2))
    # a modify that selects the added entry with other instructions does not commute; same ones do
    assert not commute_ww13(add, fm(ofp.OFPFC_MODIFY, out=3))
    assert commute_ww13(fm(), fm(ofp.OFPFC_MODIFY))
    # two ADDs of one (table, match, priority): the entries left must be the same, cookie included
    assert not commute_ww13(fm(cookie=1), fm(cookie=2))
    assert commute_ww13(fm(), fm())
    # disjoint matches on one table commute; CHECK_OVERLAP at equal priority does not
    other = OxmMatch.build(eth_dst=H1)
    assert commute_ww13(fm(), fm(match=other))
    assert not commute_ww13(fm(match=OxmMatch()), fm(flags=ofp.OFPFF_CHECK_OVERLAP))


def test_read_write_uses_the_fields_at_that_table() -> None:
    # the ADD's match against the packet as the table saw it, metadata included
    on_meta = fm(table=1, match=OxmMatch.build(metadata=(0x5, 0xF)))
    assert not commute_rw13(fields(metadata=0x15), None, on_meta, write_first=False)
    assert commute_rw13(fields(metadata=0x6), None, on_meta, write_first=False)
    masked = fm(match=OxmMatch.build(eth_type=0x800, ipv4_dst="10.0.0.0/8"))
    assert not commute_rw13(fields(), None, masked, write_first=False)
    assert commute_rw13(fields(ipv4_dst=0x0B000002), None, masked, write_first=False)
    # priorities: a hit of higher priority shields the packet; an equal one does not (no exact-match rule)
    hit = fm(priority=20, out=1, match=OxmMatch.build(eth_type=0x800))
    assert commute_rw13(fields(), hit, fm(priority=10), write_first=False)
    assert not commute_rw13(fields(), hit, fm(priority=20), write_first=False)
    # written first: an ADD conflicts only with the read of exactly its entry
    assert not commute_rw13(fields(), fm(), fm(), write_first=True)
    assert commute_rw13(fields(), hit, fm(), write_first=True)
    # a DELETE read first conflicts when it selects the entry read (cookie filter included)
    assert not commute_rw13(fields(), fm(cookie=0x12), fm(ofp.OFPFC_DELETE), write_first=False)
    assert commute_rw13(fields(), fm(cookie=0x12), fm(ofp.OFPFC_DELETE, cookie=0x3, cookie_mask=0xF),
                        write_first=False)
    # a MODIFY against a table miss commutes (it never adds)
    assert commute_rw13(fields(), None, fm(ofp.OFPFC_MODIFY), write_first=False)
    assert not commute_rw13(fields(), fm(), fm(ofp.OFPFC_MODIFY, out=3), write_first=False)
    # flow statistics read what they select
    request = fm(ofp.OFPFC_DELETE, match=OxmMatch())
    assert not commute_stats13(request, fm())
    assert commute_stats13(fm(ofp.OFPFC_DELETE, table=3, match=OxmMatch()), fm())


def test_groups_commute_by_content() -> None:
    a = GroupMeterMod(GROUP, ofp.OFPGC_ADD, 1, (ofp.OFPGT_ALL, ("b1",)))
    m = GroupMeterMod(GROUP, ofp.OFPGC_MODIFY, 1, (ofp.OFPGT_ALL, ("b2",)))
    d = GroupMeterMod(GROUP, ofp.OFPGC_DELETE, 1, None)
    seen = GroupMeterMod(GROUP, None, 1, (ofp.OFPGT_ALL, ("b1",)))
    assert not commute_ww_gm(a, m) and commute_ww_gm(m, d) and not commute_ww_gm(a, d) and commute_ww_gm(d, d)
    assert not commute_rw_gm(seen, m, write_first=False)        # the packet would have used the new buckets
    assert commute_rw_gm(seen, a, write_first=False)            # the group existed: the ADD fails either way
    assert not commute_rw_gm(seen, d, write_first=False)


# =============================================================================== hand-made 1.3 traces


def _header() -> ts.TraceHeader:
    spec = "single,2"
    return ts.TraceHeader(topology=parse_topo(spec).to_json(), topology_spec=spec, controller="c0", seed=0,
                          tool_version="test", openflow={"s1": "1.3"})


def _to_switch(seq: int, t: float, msg, xid: int) -> ts.ControlToSwitch:
    msg.xid = xid
    return ts.ControlToSwitch(seq=seq, t=t, conn=0, controller="c0", dpid=1, msg=msg_to_json(msg), fp=("x",))


def _flow_mod(table: int, priority: int, instructions: list, command: int = ofp.OFPFC_ADD, **match) -> object:
    return parser.OFPFlowMod(DATAPATH13, table_id=table, command=command, priority=priority,
                             match=parser.OFPMatch(**match), instructions=instructions)


def _apply(*actions) -> list:
    return [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, list(actions))]


def _ping_events(seq: int, t: float) -> list[ts.Event]:
    pkt = icmp_echo(H1, H2, "10.0.0.1", "10.0.0.2", 1, 1)
    return [ts.TrafficInjection(seq=seq, t=t, id=f"i{seq}", host="h1", packet=pkt.to_json(), dst="h2"),
            ts.PacketArrival(seq=seq + 1, t=t, node="s1", port=1, pid=seq, packet=pkt.to_json(), fp=("x",))]


def _save(tmp_path: Path, events: list[ts.Event]) -> Path:
    p = tmp_path / "trace.jsonl"
    write_trace(p, ts.Trace(_header(), events))
    return p


def _goto_trace(tmp_path: Path) -> Path:
    to_table1 = [parser.OFPInstructionWriteMetadata(0x5, 0xFF), parser.OFPInstructionGotoTable(1)]
    events: list[ts.Event] = [_to_switch(0, 0.0, _flow_mod(0, 0, to_table1), 1)]
    events += _ping_events(1, 3.0)
    events += [_to_switch(3, 3.1, _flow_mod(1, 10, _apply(parser.OFPActionOutput(2)), metadata=(0x5, 0xFF)), 2),
               _to_switch(4, 3.2, _flow_mod(1, 10, _apply(parser.OFPActionOutput(2)), metadata=(0x6, 0xFF)), 3)]
    return _save(tmp_path, events)


def test_a_race_only_through_goto_table_into_table_1(tmp_path: Path) -> None:
    """Table 0 sends everything to table 1 with metadata 5; a packet misses table 1, and an unordered
    ADD into table 1 that matches metadata 5 races with that read (a twin matching metadata 6 does not)."""
    report = detect_races(_goto_trace(tmp_path))
    g = report.graph
    (read_ev,) = [e for e in g.events if e.kind == PACKET_HANDLE]
    # the packet read both tables: hit in 0 (the goto entry), miss in 1 with the metadata it wrote
    assert [(op.target, op.flow_mod is not None) for op in read_ev.reads] == [((TABLE, 0), True),
                                                                             ((TABLE, 1), False)]
    assert read_ev.reads[1].fields["metadata"] == 0x5
    by_status = {(r.status, r.k_op.flow_mod.match.get("metadata")) for r in report.races if r.kind == "r/w"}
    # table 0's ADD races with the read of table 0 only (3 s before: time-filtered); table 1's two ADDs
    # race with the read of table 1 only, and only the one matching metadata 5 conflicts
    assert by_status == {(TIME_FILTERED, None), (HARMFUL, (0x5, 0xFF)), (COMMUTE, (0x6, 0xFF))}
    assert all(r.i_op.target == r.k_op.target or r.kind == "w/w" for r in report.races)
    (harmful,) = report.harmful_races()
    assert harmful.i_op.target == (TABLE, 1) and harmful.i_op.flow_mod is None
    d = report.to_json()
    assert [e.get("target") for e in d["race_list"][0]["events"]] == ["table 1", "table 1"]
    assert "missed table 1 (no entry)" in d["race_list"][0]["events"][0]["text"]


@pytest.mark.real
def test_races_and_cluster_name_the_table_a_13_race_is_on(tmp_path: Path) -> None:
    trace = _goto_trace(tmp_path)
    for command in ("races", "cluster"):
        proc = subprocess.run([sys.executable, "-m", "netsleuth.cli", command, str(trace)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert "(reads table 1" in proc.stdout and "(writes table 1" in proc.stdout, proc.stdout


def test_a_group_modify_races_with_a_packet_through_the_group(tmp_path: Path) -> None:
    bucket = [parser.OFPBucket(actions=[parser.OFPActionOutput(2)])]
    events: list[ts.Event] = [
        _to_switch(0, 0.0, parser.OFPGroupMod(DATAPATH13, ofp.OFPGC_ADD, ofp.OFPGT_ALL, 1, bucket), 1),
        _to_switch(1, 0.0, _flow_mod(0, 1, _apply(parser.OFPActionGroup(1))), 2),
    ]
    events += _ping_events(2, 3.0)
    new = [parser.OFPBucket(actions=[parser.OFPActionOutput(1)])]
    events += [_to_switch(4, 3.1, parser.OFPGroupMod(DATAPATH13, ofp.OFPGC_MODIFY, ofp.OFPGT_ALL, 1, new), 3)]
    trace = _save(tmp_path, events)
    report = detect_races(trace)
    (read_ev,) = [e for e in report.graph.events if e.kind == PACKET_HANDLE]
    assert [op.target for op in read_ev.reads] == [(TABLE, 0), (GROUP, 1)]
    (harmful,) = report.harmful_races()
    assert harmful.i_op.target == harmful.k_op.target == (GROUP, 1)
    assert harmful.k_op.flow_mod.describe().startswith("GROUP_MOD MODIFY group=1 type=all,bucket=actions=output:1")
    # a group delete also removes the flows using it: a write of every table
    events += [_to_switch(5, 3.2, parser.OFPGroupMod(DATAPATH13, ofp.OFPGC_DELETE, ofp.OFPGT_ALL, 1, []), 4)]
    report = detect_races(_save(tmp_path, events))
    g = report.graph
    (delete,) = [n for n, e in enumerate(g.events) if e.kind == MESSAGE_HANDLE
                 and any(op.kind == WRITE and op.flow_mod.is_del() for op in e.ops)]
    assert [op.target for op in g.events[delete].writes] == [(GROUP, 1), (TABLE, ofp.OFPTT_ALL)]
    # the flow the packet hit in table 0 used group 1: the delete takes it away too
    assert {(r.i_op.target, r.k_op.target) for r in report.harmful_races() if r.k == delete} == {
        ((TABLE, 0), (TABLE, ofp.OFPTT_ALL)), ((GROUP, 1), (GROUP, 1))}


@pytest.mark.real
def test_a_13_trace_without_races_says_so_in_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    write_trace(empty / "trace.jsonl", ts.Trace(_header(), []))
    quiet = tmp_path / "quiet"
    quiet.mkdir()
    write_trace(quiet / "trace.jsonl", ts.Trace(_header(), [_to_switch(0, 0.0, _flow_mod(0, 0, []), 1)]))
    for trace in (empty / "trace.jsonl", quiet / "trace.jsonl"):
        for command in ("races", "cluster"):
            proc = subprocess.run([sys.executable, "-m", "netsleuth.cli", command, str(trace)], capture_output=True,
                                  text=True, timeout=120)
            assert proc.returncode == 0, proc.stderr
            assert proc.stderr == "" and len(proc.stdout.strip().splitlines()) == 1, proc.stdout
            assert ("no races" if command == "races" else "0 harmful races") in proc.stdout


# =============================================================================== a real controller


@pytest.fixture(scope="module")
def fuzzed13(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """os-ken's simple_switch_13 fuzzed with host migrations and link failures (a 1.3 trace with races)."""
    from netsleuth.jobs.fuzz import FuzzOptions, fuzz
    from netsleuth.schedulers.fuzz import Rates

    out = tmp_path_factory.mktemp("ss13fuzz")
    rates = Rates().with_overrides(["host_migration=0.03", "traffic=0.3", "link_failure=0.02", "link_recovery=0.1"])
    fuzz(FuzzOptions("osken:os_ken.app.simple_switch_13", "linear,3", out, steps=300, seed=1, rates=rates,
                     checks="delivery,dataplane-loops", keep_going=True, round_seconds=0.02))
    return out / "trace.jsonl"


@pytest.mark.real
@pytest.mark.slow
def test_simple_switch_13_packet_vs_flow_mod_races_and_clusters(fuzzed13: Path) -> None:
    from netsleuth.openflow.codec import msg_from_json
    from netsleuth.races.cluster_job import cluster_races
    from netsleuth.races.from_trace import events_from_trace

    trace = read_trace(fuzzed13)
    assert set(trace.header.openflow.values()) == {"1.3"}
    by_seq = {e.seq: e for e in trace.events}
    names = {s["dpid"]: s["name"] for s in trace.header.topology["switches"]}
    built = events_from_trace(fuzzed13)
    report = detect_races(fuzzed13)
    s = report.summary()
    # simple_switch_13 uses table 0 only: one read per packet a switch received, one write per FLOW_MOD
    flow_mods = [e for e in trace.events if e.kind == "of_to_switch" and e.msg["type"] == "FLOW_MOD"]
    arrivals = [e for e in trace.events if e.kind == "packet" and e.node in names.values()]
    dropped = [t for t in built.labels.values() if "dropped (port down or NO_RECV)" in t]   # before any table
    assert s["writes"] == len(flow_mods) and s["read"] == len(arrivals) - len(dropped)
    # causality is found for every PACKET_IN and every arrival; the only proactive sends are the
    # table-miss entries the app installs when a switch (re)connects
    packet_ins = [e for e in trace.events if e.kind == "of_to_controller" and e.msg["type"] == "PACKET_IN"]
    table_miss = [e for e in flow_mods if e.msg["body"]["OFPFlowMod"]["priority"] == 0]
    assert built.stats["packet_ins_linked"] == len(packet_ins) and built.stats.get("unlinked_arrivals", 0) == 0
    assert built.stats.get("ctl_sends_root", 0) == len(table_miss)
    assert s["races"] == s["commuting"] + s["time_filtered_races"] + s["covered"] + s["harmful"]
    g = report.graph
    reach = g.reachability()
    reactive = []
    for r in report.harmful_races():
        assert r.kind == "r/w" and r.i_op.kind == READ and r.k_op.kind == WRITE
        assert r.i_op.target == r.k_op.target == (TABLE, 0)
        assert not reach.ordered(r.i, r.k)
        read_ev, write_ev = g.events[r.i], g.events[r.k]
        assert read_ev.dpid == write_ev.dpid
        # the write is that switch's recorded FLOW_MOD, exactly
        src = by_seq[built.origin[write_ev.eid]]
        assert src.kind == "of_to_switch" and src.dpid == write_ev.dpid
        recorded = FlowMod13.from_msg(msg_from_json(src.msg))
        assert (recorded.match, recorded.priority, recorded.instructions) == (
            r.k_op.flow_mod.match, r.k_op.flow_mod.priority, r.k_op.flow_mod.instructions)
        # the read is a packet arrival at that switch, and the FLOW_MOD's match covers it there
        arrival = by_seq[built.origin[read_ev.eid]]
        assert arrival.kind == "packet" and arrival.node == names[read_ev.dpid] and arrival.port == read_ev.in_port
        if r.k_op.flow_mod.priority == 1:        # a learned entry: sent in reply to a PACKET_IN
            assert r.k_op.flow_mod.match.matches(r.i_op.fields) or r.i_op.flow_mod == r.k_op.flow_mod \
                or r.i_op.flow_mod.match == r.k_op.flow_mod.match
            reactive.append(r)
    assert reactive, "a learned FLOW_MOD must race with a packet on its table"
    # a migration race: the packet used the old entry for a host, the new FLOW_MOD sends it elsewhere
    moved = [r for r in reactive if r.i_op.flow_mod is not None and r.i_op.flow_mod.match == r.k_op.flow_mod.match
             and r.i_op.flow_mod.instructions != r.k_op.flow_mod.instructions]
    assert moved, "a host migration makes the learned output port of a (in_port, src, dst) entry change"
    # BigBug groups the harmful races into fewer root causes, and every race is in one cluster
    c = cluster_races(fuzzed13)
    assert c.n_races == s["harmful"]
    assert 1 <= c.final_clusters < c.n_races
    assert sorted(i for cl in c.clusters for i in cl.members) == list(range(c.n_races))
    texts = [cl["representative"]["text"] for cl in c.to_json()["clusters"]]
    assert all("race on switch" in t and "table=0" in t for t in texts)


def _to_controller(seq: int, t: float, msg, xid: int = 0) -> ts.ControlToController:
    msg.xid = xid
    return ts.ControlToController(seq=seq, t=t, conn=0, controller="c0", dpid=1, msg=msg_to_json(msg), fp=("x",))


def test_expiry_stats_reads_and_a_slave_connection(tmp_path: Path) -> None:
    """A 1.3 FLOW_REMOVED (hard timeout) is an expiry ordered after the FLOW_MOD by SDNRacer's rule 5; a
    flow-statistics request reads what it selects; a connection made slave by ROLE_REQUEST writes nothing."""
    out2 = _apply(parser.OFPActionOutput(2))
    add = _flow_mod(0, 10, out2, eth_dst=H2)
    add.hard_timeout, add.flags = 5, ofp.OFPFF_SEND_FLOW_REM
    removed = parser.OFPFlowRemoved(DATAPATH13, 0, 10, ofp.OFPRR_HARD_TIMEOUT, 0, 5, 0, 0, 5, 0, 0,
                                    parser.OFPMatch(eth_dst=H2))
    events: list[ts.Event] = [
        _to_switch(0, 0.0, add, 1),
        _to_switch(1, 0.1, parser.OFPFlowStatsRequest(DATAPATH13, table_id=0, match=parser.OFPMatch()), 2),
        _to_switch(2, 0.2, parser.OFPFlowStatsRequest(DATAPATH13, table_id=3, match=parser.OFPMatch()), 3),
        _to_controller(3, 5.0, removed),
        _to_switch(4, 5.1, parser.OFPRoleRequest(DATAPATH13, ofp.OFPCR_ROLE_SLAVE, 1), 4),
        _to_switch(5, 5.2, _flow_mod(0, 20, out2), 5),
    ]
    report = detect_races(_save(tmp_path, events))
    g = report.graph
    fm_node = next(n for n, e in enumerate(g.events) if e.kind == MESSAGE_HANDLE and e.writes)
    expiry = next(n for n, e in enumerate(g.events) if e.kind == "HbAsyncFlowExpiry")
    assert g.events[expiry].ops[0].target == (TABLE, 0)
    assert g.rel[(fm_node, expiry)] == "time"
    stats = [n for n, e in enumerate(g.events) if e.msg_type == "OFPT_MULTIPART_REQUEST"]
    assert [g.events[n].ops[0].target for n in stats] == [(TABLE, 0), (TABLE, 3)]
    # the table-0 request selects the added entry: a race (0.1 s apart); the table-3 one touches nothing it wrote
    assert [(r.i, r.status) for r in report.races if r.k == fm_node] == [(stats[0], HARMFUL)]
    slave_fm = next(n for n, e in enumerate(g.events) if e.kind == MESSAGE_HANDLE and "priority=20" in
                    report.labels[e.eid])
    assert g.events[slave_fm].writes == [] and g.events[slave_fm].ops[0].name == "TraceSwitchRefusedFromSlave"
    assert report.summary()["writes"] == 1


def test_meter_reads_and_a_packet_out_through_the_tables(tmp_path: Path) -> None:
    """A packet through a metered entry reads the meter (a MODIFY of its bands races with it); a
    PACKET_OUT to OFPP_TABLE reads the tables its packet goes through, like an arrival."""
    band = [parser.OFPMeterBandDrop(rate=1000, burst_size=0)]
    metered = [parser.OFPInstructionMeter(1), *_apply(parser.OFPActionOutput(2))]
    pkt = icmp_echo(H1, H2, "10.0.0.1", "10.0.0.2", 1, 1)
    events: list[ts.Event] = [
        _to_switch(0, 0.0, parser.OFPMeterMod(DATAPATH13, ofp.OFPMC_ADD, ofp.OFPMF_KBPS, 1, band), 1),
        _to_switch(1, 0.0, _flow_mod(0, 1, metered), 2),
    ]
    events += _ping_events(2, 3.0)
    slower = [parser.OFPMeterBandDrop(rate=10, burst_size=0)]
    events += [
        _to_switch(4, 3.1, parser.OFPMeterMod(DATAPATH13, ofp.OFPMC_MODIFY, ofp.OFPMF_KBPS, 1, slower), 3),
        _to_switch(5, 3.2, parser.OFPPacketOut(DATAPATH13, ofp.OFP_NO_BUFFER, ofp.OFPP_CONTROLLER,
                                               [parser.OFPActionOutput(ofp.OFPP_TABLE)], pkt.to_bytes()), 4),
    ]
    report = detect_races(_save(tmp_path, events))
    g = report.graph
    (read_ev,) = [e for e in g.events if e.kind == PACKET_HANDLE]
    assert [op.target for op in read_ev.reads] == [(TABLE, 0), ("meter", 1)]
    # the meter ADD 3 s before is time-filtered; the MODIFY 0.1 s after changes the bands the packet met
    assert sorted((r.k_op.flow_mod.command_name, r.status) for r in report.races
                  if r.i_op is read_ev.reads[1]) == [("ADD", TIME_FILTERED), ("MODIFY", HARMFUL)]
    out = next(e for e in g.events if e.msg_type == "OFPT_PACKET_OUT")
    assert [op.target for op in out.reads] == [(TABLE, 0), ("meter", 1)]
    assert out.reads[0].flow_mod is not None and out.reads[0].fields["in_port"] == ofp.OFPP_CONTROLLER


def test_packet_in_vs_flow_mod_on_table_0(tmp_path: Path) -> None:
    """The learning switch's race on 1.3: a second packet reaches the table-miss entry (and goes to the
    controller) while the FLOW_MOD answering the first packet's PACKET_IN is on its way."""
    first = icmp_echo(H1, H2, "10.0.0.1", "10.0.0.2", 1, 1)
    second = icmp_echo(H1, H2, "10.0.0.1", "10.0.0.2", 1, 2)

    def packet_in(pkt) -> object:
        data = pkt.to_bytes()
        return parser.OFPPacketIn(DATAPATH13, ofp.OFP_NO_BUFFER, len(data), ofp.OFPR_NO_MATCH, 0, 0,
                                  parser.OFPMatch(in_port=1), data)

    learned = _flow_mod(0, 1, _apply(parser.OFPActionOutput(2)), in_port=1, eth_dst=H2)
    events: list[ts.Event] = [_to_switch(0, 0.0, _flow_mod(0, 0, _apply(parser.OFPActionOutput(
        ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER))), 1)]
    events += _ping_events(1, 3.0)                                       # seq 1, 2: the first packet
    events += [_to_controller(3, 3.01, packet_in(first)),
               ts.TrafficInjection(seq=4, t=3.02, id="i4", host="h1", packet=second.to_json(), dst="h2"),
               ts.PacketArrival(seq=5, t=3.02, node="s1", port=1, pid=4, packet=second.to_json(), fp=("x",)),
               _to_controller(6, 3.03, packet_in(second)),
               _to_switch(7, 3.04, learned, 2)]
    report = detect_races(_save(tmp_path, events))
    g = report.graph
    arrivals = [n for n, e in enumerate(g.events) if e.kind == PACKET_HANDLE]
    fm_node = next(n for n, e in enumerate(g.events) if e.kind == MESSAGE_HANDLE and "priority=1" in
                   report.labels[e.eid])
    reach = g.reachability()
    # the FLOW_MOD answers the latest PACKET_IN whose packet it covers: the second packet's, so it is
    # ordered after that arrival, and races with the first one, which went to the controller too
    assert reach.reaches(arrivals[1], fm_node) and not reach.ordered(arrivals[0], fm_node)
    (race,) = report.harmful_races()
    assert (race.i, race.k) == (arrivals[0], fm_node)
    assert race.i_op.flow_mod.priority == 0 and race.i_op.target == race.k_op.target == (TABLE, 0)
    assert any(g.events[s].msg_type == "OFPT_PACKET_IN" for s in g.succ[arrivals[0]])


def test_a_10_packet_in_on_a_13_switch_is_read_in_the_switch_version(tmp_path: Path) -> None:
    """A trace may carry a 1.0 PACKET_IN from a switch that runs 1.3 (recorded while its HELLO exchange
    was under way, or written by hand): its packet is compared with the switch's 1.3 FLOW_MODs in 1.3
    form, not raised on."""
    from os_ken.ofproto import ofproto_v1_0 as ofp10
    from os_ken.ofproto import ofproto_v1_0_parser as parser10

    from netsleuth.openflow.codec import DATAPATH
    from netsleuth.races.from_trace import events_from_trace

    pkt = icmp_echo(H1, H2, "10.0.0.1", "10.0.0.2", 1, 1)
    data = pkt.to_bytes()
    old_form = parser10.OFPPacketIn(DATAPATH, ofp10.OFP_NO_BUFFER, len(data), 1, ofp10.OFPR_NO_MATCH, data)
    learned = _flow_mod(0, 1, _apply(parser.OFPActionOutput(2)), in_port=1, eth_dst=H2)
    events: list[ts.Event] = [*_ping_events(0, 3.0), _to_controller(2, 3.01, old_form), _to_switch(3, 3.04, learned, 2)]
    built = events_from_trace(_save(tmp_path, events))
    assert built.stats["packet_ins_linked"] == 1 and built.stats["ctl_by_match"] == 1
    assert built.stats.get("ctl_sends_root", 0) == 0


@pytest.mark.real
@pytest.mark.slow
def test_faucet_multi_table_races_through_goto_table(tmp_path: Path) -> None:
    """Faucet's pipeline (VLAN table 0, eth_src learning table 1, eth_dst table 2, flood table 3): packets
    read tables 1-3 only through goto-table, and races are found there; its connect-time DELETE of all
    tables races with the entries it adds without a barrier (OFPTT_ALL meets every table)."""
    from netsleuth.jobs.run import RunOptions, run
    from netsleuth.live.ready import faucet_stack_up
    from netsleuth.races.cluster_job import cluster_races

    result = run(RunOptions(controller="faucet:auto", topo="linear,3", out=tmp_path, pingall=True, warmup=15.0,
                            warmup_ready=faucet_stack_up(), checks="liveness,loops,dataplane-loops"))
    assert result.data["pingall"]["ok"] == 6, result.data["pingall"]
    trace = tmp_path / "trace.jsonl"
    report = detect_races(trace)
    g = report.graph
    reads = [op for e in g.events if e.kind == PACKET_HANDLE for op in e.reads]
    assert {op.target[1] for op in reads} >= {0, 1, 2, 3}
    deeper = []
    for r in report.harmful_races():
        assert r.k_op.target[1] in (r.i_op.target[1], ofp.OFPTT_ALL) or r.i_op.target[1] == ofp.OFPTT_ALL
        if r.kind == "r/w" and r.i_op.target[1] > 0:
            # the read of table n > 0: the same packet's read of the table before it went there by goto
            ev = g.events[r.i]
            before = ev.reads[ev.reads.index(r.i_op) - 1]
            assert before.flow_mod is not None and before.flow_mod.instructions.goto == r.i_op.target[1]
            deeper.append(r)
    assert deeper, "a race on a table a packet reaches only through goto-table"
    delete_all = [r for r in report.harmful_races() if r.kind == "w/w"
                  and ofp.OFPTT_ALL in (r.i_op.target[1], r.k_op.target[1])]
    assert delete_all and all(r.k_op.flow_mod.is_del() or r.i_op.flow_mod.is_del() for r in delete_all)
    c = cluster_races(trace)
    assert c.n_races == len(report.harmful_races()) and 1 <= c.final_clusters < c.n_races
