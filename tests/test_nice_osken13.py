"""The model checker on unmodified OpenFlow 1.3 os-ken apps (``osken:os_ken.app.simple_switch_13``).

The app is the real ``simple_switch_13`` of os-ken 1.4.1 in the controller
environment; the switches are the model's own OpenFlow 1.3 part (its
multi-table pipeline).  Every assertion about the app is about what that
code did with real 1.3 messages: its own EventOFPSwitchFeatures handler
installs the table-miss entry, its packet-in handler reads
``msg.match['in_port']`` and answers unbuffered packet-ins with the data.
"""

from __future__ import annotations

import json

import pytest
from handler_calls import run

from netsleuth.model.of13.actions import Output
from netsleuth.model.of13.instructions import Instructions
from netsleuth.model.of13.oxm import OxmMatch
from netsleuth.model.ofdp import ofp13
from netsleuth.model.packet import arp_request, icmp_echo
from netsleuth.nice import messages as m
from netsleuth.nice.explore import Explorer, SearchOptions
from netsleuth.nice.of13 import copy_pipeline, speak13
from netsleuth.nice.osken_host import load_osken_app, shutdown_servers
from netsleuth.nice.property_registry import resolve
from netsleuth.nice.scenarios import build_config
from netsleuth.nice.state import MCSwitch
from netsleuth.nice.system import System
from netsleuth.nice.transitions import CTL

pytestmark = pytest.mark.real

SPEC = "osken:os_ken.app.simple_switch_13"
H1, H2 = 0x000000000001, 0x000000000002
TABLE_MISS = "FLOW_MOD ADD table=0 priority=0 actions=CONTROLLER:65535"


@pytest.fixture(scope="module")
def app_cls():
    cls = load_osken_app(SPEC)
    yield cls
    shutdown_servers()


def mac_to_port(app):
    ((name, attrs),) = app.skey
    assert name == "SimpleSwitch13"
    fields = dict(attrs[1])
    return {dpid: dict(table[1]) for dpid, table in fields["mac_to_port"][1]}


def test_the_app_is_served_in_openflow_13_and_installs_its_table_miss_entry(app_cls):
    srv = app_cls._server
    assert srv.apps == ["os_ken.app.simple_switch_13.SimpleSwitch13"] and srv.version == 4
    assert app_cls.openflow_version == 4
    app, out = run(app_cls(), lambda a: a.datapath_join(1, (1, 2, 3)))
    # The app's own EventOFPSwitchFeatures handler ran: one FLOW_MOD, the table-miss entry;
    # os-ken's PORT_DESC request of the handshake is not part of the model.
    ((dpid, fm),) = out
    assert dpid == 1 and type(fm) is m.ToSwitch13 and fm.type_name == "FLOW_MOD"
    assert m.describe(fm) == TABLE_MISS
    obj = m.of13_message(fm.data)
    assert obj.priority == 0 and OxmMatch.from_ofp(obj.match) == OxmMatch()
    assert Instructions.from_ofp(obj.instructions) == Instructions.actions(
        Output(ofp13.OFPP_CONTROLLER, ofp13.OFPCML_NO_BUFFER))
    # os-ken's ofp_handler took the ports from the PORT_DESC reply (1.3 OFPPort: 11 fields) and
    # moved the datapath to MAIN_DISPATCHER
    assert app.joined() == (1,)
    assert [(no, len(fields)) for no, fields in app.dps[0][1]] == [(1, 11), (2, 11), (3, 11)]
    assert mac_to_port(app) == {} and srv.handler_errors == []


def test_packet_in_13_is_read_from_the_match_and_answered_with_the_data(app_cls):
    app, _ = run(app_cls(), lambda a: a.datapath_join(1, (1, 2)))
    req = icmp_echo(H1, H2, "10.0.0.1", "10.0.0.2", 1, 1)
    tag = (("h1", req, 0), ())
    pi = m.PacketIn(m.NO_BUFFER, req.frame_len(), 1, ofp13.OFPR_NO_MATCH, req, tag)
    a1, out = run(app, lambda a: a.packet_in13(1, pi))
    assert mac_to_port(a1) == {1: {"00:00:00:00:00:01": 1}}  # in_port from msg.match['in_port']
    ((_, po),) = out
    assert m.describe(po) == "PACKET_OUT buffer=4294967295 in_port=1 actions=FLOOD"
    obj = m.of13_message(po.data)
    assert obj.buffer_id == ofp13.OFP_NO_BUFFER and bytes(obj.data) == req.to_bytes()
    assert po.tag == tag  # the packet's own bytes go out again: its lineage continues
    rep = icmp_echo(H2, H1, "10.0.0.2", "10.0.0.1", 1, 1, reply=True)
    pi2 = m.PacketIn(m.NO_BUFFER, rep.frame_len(), 2, ofp13.OFPR_NO_MATCH, rep, None)
    a2, out = run(a1, lambda a: a.packet_in13(1, pi2))
    assert [m.describe(x) for _, x in out] == [
        "FLOW_MOD ADD table=0 priority=1,in_port=2,eth_dst=00:00:00:00:00:01,eth_src=00:00:00:00:00:02 "
        "actions=output:1",
        "PACKET_OUT buffer=4294967295 in_port=2 actions=output:1"]
    assert all(x.tag is None for _, x in out)
    # a buffered packet-in: the app installs the rule with the buffer id and sends no PACKET_OUT
    garp = arp_request(H2, "10.0.0.2", "10.0.0.2")
    pi3 = m.PacketIn(5, garp.frame_len(), 2, ofp13.OFPR_NO_MATCH, garp, None)
    _, out = run(a2, lambda a: a.packet_in13(1, m.PacketIn(5, req.frame_len(), 1, ofp13.OFPR_NO_MATCH, req)))
    ((_, fm),) = out
    assert m.of13_message(fm.data).buffer_id == 5
    _, out = run(a2, lambda a: a.packet_in13(1, pi3))
    assert m.of13_message(out[0][1].data).buffer_id == 5  # broadcast: flood the buffered packet


def _switch(n_buffers=256):
    s = MCSwitch(1, [1, 2, 3], name="s1", n_buffers=n_buffers)
    speak13(s)
    return s


def _flow_mod(match, priority, actions, table_id=0, command=ofp13.OFPFC_ADD):
    from netsleuth.model.ofdp import DATAPATH13, ofp13_parser
    return ofp13_parser.OFPFlowMod(DATAPATH13, table_id=table_id, command=command, priority=priority,
                                   match=match.to_ofp(), instructions=Instructions.actions(*actions).to_ofp())


def test_the_switch_follows_openflow_13_semantics():
    s = _switch()
    pkt = icmp_echo(H1, H2, "10.0.0.1", "10.0.0.2", 1, 1)
    assert s.receive_packet(1, pkt, 0.0, "t") == []  # no table-miss entry: dropped, no packet-in
    s.handle_message(0, _flow_mod(OxmMatch(), 0, [Output(ofp13.OFPP_CONTROLLER, ofp13.OFPCML_NO_BUFFER)]), 0.0)
    (out,) = s.receive_packet(1, pkt, 0.0, "t")
    pi = out.msg
    assert (pi.buffer_id, pi.total_len, pi.in_port, pi.reason, pi.tag, pi.table_id, pi.cookie) == (
        m.NO_BUFFER, pkt.frame_len(), 1, ofp13.OFPR_NO_MATCH, "t", 0, 0)
    assert pi.packet.to_bytes() == pkt.to_bytes()
    assert s.buffers == {}  # OFPCML_NO_BUFFER: the whole frame, nothing buffered
    # an output to the controller with a max_len shorter than the frame: buffered (lowest free id), truncated
    s.handle_message(0, _flow_mod(OxmMatch.build(in_port=2), 5, [Output(ofp13.OFPP_CONTROLLER, 20)]), 0.0)
    (out,) = s.receive_packet(2, pkt, 0.0, "u")
    assert out.msg.buffer_id == 0 and out.msg.reason == ofp13.OFPR_ACTION and out.msg.total_len == pkt.frame_len()
    assert out.msg.packet.to_bytes() == pkt.to_bytes()[:20] and s.buffers[0].tag == "u"
    # a later table: goto_table 1 with nothing there drops (no table-miss entry in table 1)
    goto = ofp13_goto(1)
    s.handle_message(0, goto, 0.0)
    assert s.receive_packet(3, pkt, 0.0, "v") == []


def ofp13_goto(table):
    from netsleuth.model.ofdp import DATAPATH13, ofp13_parser
    return ofp13_parser.OFPFlowMod(DATAPATH13, table_id=0, priority=9, match=OxmMatch.build(in_port=3).to_ofp(),
                                   instructions=[ofp13_parser.OFPInstructionGotoTable(table)])


def test_the_state_key_covers_every_table_and_the_groups_canonically():
    from netsleuth.model.ofdp import DATAPATH13, ofp13_parser

    a, b = _switch(), _switch()
    mods = [_flow_mod(OxmMatch.build(eth_dst=H2), 1, [Output(2)]),
            _flow_mod(OxmMatch.build(eth_dst=H1), 1, [Output(1)], table_id=3),
            ofp13_parser.OFPGroupMod(DATAPATH13, ofp13.OFPGC_ADD, ofp13.OFPGT_ALL, 7,
                                     [ofp13_parser.OFPBucket(actions=[ofp13_parser.OFPActionOutput(2)])])]
    for msg in mods:
        a.handle_message(0, msg, 0.0)
    for msg in reversed(mods):
        b.handle_message(0, msg, 0.0)
    assert a.key() == b.key()  # install order does not matter
    c = a.copy(table=True, ports=False)
    c.handle_message(0, _flow_mod(OxmMatch.build(eth_dst=H1), 1, [Output(3)], table_id=3), 0.0)
    assert c.key() != a.key() and a.key() == b.key()  # a rule in table 3 is state; the copy is independent
    d = a.copy(table=True, ports=False)
    d.handle_message(0, ofp13_parser.OFPGroupMod(DATAPATH13, ofp13.OFPGC_DELETE, ofp13.OFPGT_ALL, 7, []), 0.0)
    assert d.key() != a.key() and 7 in a.of13.pipeline.groups.groups
    # the search's copy is what the model's own (deep) copy is
    pa = a.of13.pipeline
    assert copy_pipeline(pa).canonical_key() == pa.copy().canonical_key() == pa.canonical_key()


def _search(app_cls, scenario, strategy, properties=None, **opts):
    config = build_config(SPEC, scenario=scenario, properties=properties)
    if strategy == "pkt-seq":
        config.pkt_seq_burst = 1
    system = System(config, app_cls, resolve(config.properties))
    return system, Explorer(system, SearchOptions(strategy=strategy, **opts)).run()


def _replay(system, path):
    st = system.initial()
    lines = []
    for t in path:
        lines.append(system.describe(st, t))
        st, fx = system.fire(st, t)
    return st, fx, lines


def test_the_handshake_configures_the_switches_before_the_search(app_cls):
    system, _ = _search(app_cls, "pings", "full", max_transitions=1)
    st = system.initial()
    assert system.of13 and all(q == () for q in st.to_sw)
    for s in st.switches:
        (entry,) = s.of13.pipeline.tables
        assert entry.is_table_miss and str(entry) == "table=0,priority=0,actions=CONTROLLER:65535"


def test_host_migration_blackhole_found_in_simple_switch_13(app_cls):
    system, r = _search(app_cls, "mobile", "pkt-seq", stop_at_first=True)
    assert r.found, "the migration blackhole was not found"
    f = r.found[0]
    assert f.violation.prop == "NoBlackHolesMobile" and f.at_end
    assert "from h1 to h2" in f.violation.message
    st, _, lines = _replay(system, f.path)
    move = lines.index("h2 moves from s2:1 to s2:3")
    stale = [ln for ln in lines[:move] if ln.startswith("s2 applies FLOW_MOD")
             and "eth_dst=00:00:00:00:00:02" in ln and "actions=output:1" in ln]
    assert stale
    # the stale rule is still in s2's table 0 at the end, though the app learned the new port
    entries = [str(e) for e in st.switches[1].of13.pipeline.tables]
    assert any("eth_dst=00:00:00:00:00:02" in e and e.endswith("actions=output:1") for e in entries)
    assert mac_to_port(st.app)[2]["00:00:00:00:00:02"] == 3
    assert system.at_end(st)
    assert app_cls._server.handler_errors == [] and app_cls._server.unmodelled == {}


def test_flooding_loop_found_on_a_cycle(app_cls):
    system, r = _search(app_cls, "loop", "full", stop_at_first=True)
    assert r.found
    f = r.found[0]
    assert f.violation.prop == "NoForwardingLoops" and "loops:" in f.violation.message
    _, fx, lines = _replay(system, f.path)
    assert any("PACKET_OUT" in ln and "actions=FLOOD" in ln for ln in lines)
    assert [v.prop for v in fx.violations] == ["NoForwardingLoops"]


def test_no_violation_where_simple_switch_13_is_right(app_cls):
    """Two hosts that stay put: every ping is delivered, nothing loops, over the whole state space
    (packets the controller resends keep their identity, or every one would count as lost)."""
    system, r = _search(app_cls, "pings", "full", properties=("NoBlackHoles", "NoForwardingLoops"))
    assert r.completed and not r.found and r.violation_counts == {}
    assert r.unique_states > 100
    # the same search finds the blackhole as soon as h2 may move
    _, r2 = _search(app_cls, "mobile", "pkt-seq", properties=("NoBlackHoles",), stop_at_first=True)
    assert r2.found


def test_search_is_deterministic_and_order_independent(app_cls):
    _, a = _search(app_cls, "pings", "full")
    _, b = _search(app_cls, "pings", "full")
    _, c = _search(app_cls, "pings", "full", order="reverse")
    assert (a.transitions, a.unique_states) == (b.transitions, b.unique_states)
    assert a.unique_states == c.unique_states


def test_sleep_sets_on_a_13_app_reach_every_state(app_cls):
    """NoBlackHolesMobile watches every step, so --dpor runs sleep sets over the footprints the
    switches record; a 1.3 packet reads the whole pipeline (not a 1.0 field tuple), memoized or not."""
    _, plain = _search(app_cls, "mobile", "pkt-seq")
    _, r = _search(app_cls, "mobile", "pkt-seq", dpor=True)
    assert r.completed and "sleep sets only" in r.dpor_note
    assert r.unique_states == plain.unique_states and r.transitions < plain.transitions
    assert set(r.violation_counts) == set(plain.violation_counts) == {"NoBlackHolesMobile"}


def test_check_cli_and_model_replay(app_cls, tmp_path, capsys):
    from netsleuth.cli import main

    out = tmp_path / "cex"
    assert main(["check", SPEC, "--scenario", "mobile", "--strategy", "pkt-seq", "--out", str(out), "--json"]) == 1
    d = json.loads(capsys.readouterr().out)
    (v,) = d["violations"]
    assert d["app"] == "app:" + SPEC and v["property"] == "NoBlackHolesMobile" and d["completed"]
    assert main(["replay", v["counterexample"], "--out", str(tmp_path / "r")]) == 0
    rep = json.loads((tmp_path / "r" / "replay.json").read_text())
    assert rep["mode"] == "in-process model" and rep["reproduced"] is True
    capsys.readouterr()
    assert main(["check", SPEC, "--scenario", "loop", "--stop-at-first", "--json"]) == 1
    (loop,) = json.loads(capsys.readouterr().out)["violations"]
    assert loop["property"] == "NoForwardingLoops" and "loops: s1:1 -> " in loop["message"]


def test_the_apps_version_decides(tmp_path, monkeypatch):
    """An app that speaks 1.0 and 1.3 stays on 1.0 (as before); a 1.4-only app is one clear error."""
    (tmp_path / "both_app.py").write_text(
        "from os_ken.app.simple_switch import SimpleSwitch\n"
        "from os_ken.ofproto import ofproto_v1_0, ofproto_v1_3\n"
        "class Both(SimpleSwitch):\n"
        "    OFP_VERSIONS = [ofproto_v1_0.OFP_VERSION, ofproto_v1_3.OFP_VERSION]\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    cls = load_osken_app("osken:both_app")
    try:
        assert cls.openflow_version == 1
        app, out = run(cls(), lambda a: a.datapath_join(1, (1, 2)))
        assert out == [] and [len(f) for _, f in app.dps[0][1]] == [9, 9]  # 1.0 OFPPhyPort
    finally:
        cls._server.close()


IDLE_APP = '''
from os_ken.app.simple_switch_13 import SimpleSwitch13
from os_ken.controller import ofp_event
from os_ken.controller.handler import MAIN_DISPATCHER, set_ev_cls


class IdleSwitch13(SimpleSwitch13):
    """simple_switch_13 whose learned rules time out and say so."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.removed = []

    def add_flow(self, datapath, priority, match, actions, buffer_id=None):
        ofp, parser = datapath.ofproto, datapath.ofproto_parser
        inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]
        learned = priority > 0
        datapath.send_msg(parser.OFPFlowMod(datapath=datapath, priority=priority, match=match, instructions=inst,
                                            idle_timeout=10 if learned else 0,
                                            flags=ofp.OFPFF_SEND_FLOW_REM if learned else 0))

    @set_ev_cls(ofp_event.EventOFPFlowRemoved, MAIN_DISPATCHER)
    def _flow_removed(self, ev):
        self.removed.append((ev.msg.datapath.id, ev.msg.table_id, ev.msg.match['eth_dst'], ev.msg.reason))
'''


def test_rule_expiry_reaches_the_app_as_a_13_flow_removed(tmp_path, monkeypatch):
    (tmp_path / "idle_switch13.py").write_text(IDLE_APP)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    spec = "osken:idle_switch13"
    cls = load_osken_app(spec)
    try:
        config = build_config(spec, scenario="pings", pings=1, faults=("expiry",),
                              properties=("NoBlackHoles", "NoForwardingLoops"))
        system = System(config, cls, resolve(config.properties))
        st = system.initial()
        expiry = None
        while expiry is None:  # the first interleaving, until a learned rule may expire
            en = system.enabled(st)
            expiry = next((t for t in en if system.is_fault(t)), None)
            if expiry is None:
                st, _ = system.fire(st, en[0])
        what = system.describe(st, expiry)
        assert what.startswith("s") and "rule table=0 priority=1,in_port=" in what and what.endswith("expires")
        i = expiry[1]
        before = len(list(st.switches[i].of13.pipeline.tables))
        st2, _ = system.fire(st, expiry)
        assert len(list(st2.switches[i].of13.pipeline.tables)) == before - 1
        assert len(list(st.switches[i].of13.pipeline.tables)) == before  # the parent state is untouched
        (msg,) = st2.to_ctrl[i][-1:]
        assert type(msg) is m.FromSwitch13 and msg.type_name == "FLOW_REMOVED"
        while st2.to_ctrl[i]:
            st2, _ = system.fire(st2, (CTL, i))
        removed = dict(dict(st2.app.skey)["IdleSwitch13"][1])["removed"]
        assert [(r[0], r[1], r[3]) for r in removed] == [(i + 1, 0, ofp13.OFPRR_IDLE_TIMEOUT)]
        # the whole search with expiries: still no lost packet and no loop (a miss goes to the controller)
        r = Explorer(system, SearchOptions(strategy="full")).run()
        config.faults = ()
        plain = Explorer(System(config, cls, resolve(config.properties)), SearchOptions(strategy="full")).run()
        assert r.completed and not r.found and r.unique_states > plain.unique_states
        assert cls._server.handler_errors == []
    finally:
        cls._server.close()


@pytest.mark.slow
def test_counterexample_inputs_reproduce_against_the_real_simple_switch_13(app_cls, tmp_path, capsys):
    """The 1.3 must-show: the blackhole `check` finds converts to inputs that reproduce it against the
    real os-ken process on OpenFlow 1.3 switches, and not without the migration."""
    from netsleuth.cli import main
    from netsleuth.nice.cex_inputs import convert_counterexample
    from netsleuth.trace import schema as ts
    from netsleuth.trace.io import read_trace, write_trace

    assert main(["check", SPEC, "--scenario", "mobile", "--strategy", "pkt-seq", "--stop-at-first",
                 "--out", str(tmp_path / "check"), "--json"]) == 1
    (v,) = json.loads(capsys.readouterr().out)["violations"]
    conv = tmp_path / "inputs.jsonl"
    rep = convert_counterexample(v["counterexample"], conv, gap=0.2)
    assert rep["kinds"] == ["traffic", "traffic", "host_migration", "traffic", "traffic"]
    assert rep["target"]["invariant"] == "blackholes" and rep["target"]["switches"] == ["s2"]
    assert "port 1 has no live link" in rep["target"]["message"]
    header = read_trace(conv).header
    assert header.controller == SPEC and header.openflow == {"s1": "1.3", "s2": "1.3"}
    assert main(["replay", str(conv), "--out", str(tmp_path / "replay")]) == 0
    r = json.loads((tmp_path / "replay" / "replay.json").read_text())
    assert r["reproduced"] is True and "mode" not in r  # a real run, not the in-model re-execution
    # every learned-rule FLOW_MOD the hosted app sent, the real controller sent again (1.3 fingerprints)
    assert rep["expected_flow_mods"] > 0
    assert r["replays"][0]["expected"] == r["replays"][0]["matched"] == rep["expected_flow_mods"]
    assert any(f["invariant"] == "blackholes" and f["switches"] == ["s2"] for f in r["replays"][0]["findings"])
    trace = read_trace(conv)
    kept = [e for e in trace.events if not isinstance(e, ts.HostMigration)]
    write_trace(tmp_path / "no-move.jsonl", ts.Trace(trace.header, kept))
    assert main(["replay", str(tmp_path / "no-move.jsonl"), "--out", str(tmp_path / "replay2")]) == 1
    assert json.loads((tmp_path / "replay2" / "replay.json").read_text())["reproduced"] is False


PIPELINE_APP = '''
from os_ken.app.simple_switch_13 import SimpleSwitch13
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, set_ev_cls


class PipelineSwitch13(SimpleSwitch13):
    """simple_switch_13 spread over two tables and a group: table 0 sends everything on to table 1,
    whose table-miss entry hands packets to the controller through an indirect group."""

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def switch_features_handler(self, ev):
        dp = ev.msg.datapath
        ofp, parser = dp.ofproto, dp.ofproto_parser
        dp.send_msg(parser.OFPGroupMod(dp, ofp.OFPGC_ADD, ofp.OFPGT_INDIRECT, 1, [parser.OFPBucket(
            actions=[parser.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)])]))
        dp.send_msg(parser.OFPFlowMod(datapath=dp, table_id=0, priority=0, match=parser.OFPMatch(),
                                      instructions=[parser.OFPInstructionGotoTable(1)]))
        dp.send_msg(parser.OFPFlowMod(datapath=dp, table_id=1, priority=0, match=parser.OFPMatch(),
                                      instructions=[parser.OFPInstructionActions(
                                          ofp.OFPIT_APPLY_ACTIONS, [parser.OFPActionGroup(1)])]))

    def add_flow(self, datapath, priority, match, actions, buffer_id=None):
        ofp, parser = datapath.ofproto, datapath.ofproto_parser
        inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]
        datapath.send_msg(parser.OFPFlowMod(datapath=datapath, table_id=1, priority=priority, match=match,
                                            instructions=inst))
'''


def test_an_app_using_two_tables_and_a_group_explores_like_simple_switch_13(app_cls, tmp_path, monkeypatch):
    """The same forwarding spread over tables 0 and 1 and a group has the same state space, state
    for state: the pipeline is the model's own, and the state key covers every table and the group."""
    (tmp_path / "pipeline_switch13.py").write_text(PIPELINE_APP)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    spec = "osken:pipeline_switch13"
    cls = load_osken_app(spec)
    try:
        config = build_config(spec, scenario="mobile")
        config.pkt_seq_burst = 1
        system = System(config, cls, resolve(config.properties))
        st = system.initial()
        p = st.switches[0].of13.pipeline
        assert [str(e) for e in p.tables] == ["table=0,priority=0,actions=goto_table:1",
                                              "table=1,priority=0,actions=group:1"]
        assert list(p.groups.groups) == [1]
        r = Explorer(system, SearchOptions(strategy="pkt-seq")).run()
        _, plain = _search(app_cls, "mobile", "pkt-seq")
        assert (r.transitions, r.unique_states) == (plain.transitions, plain.unique_states)
        assert r.violation_counts == plain.violation_counts != {}
        (f,) = r.found
        final, _, lines = _replay(system, f.path)
        assert any(ln.startswith("s2 applies FLOW_MOD ADD table=1 priority=1,in_port=2,eth_dst=00:00:00:00:00:02")
                   for ln in lines)
        assert any("s2 applies PACKET_OUT" in ln for ln in lines)  # packet-ins came through the group
        assert cls._server.handler_errors == [] and cls._server.unmodelled == {}
    finally:
        cls._server.close()
