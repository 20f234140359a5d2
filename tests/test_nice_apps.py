"""NICE's load balancer and energy-efficient TE apps: BUG-IV..XIII found, fixed variants clean.

Every bug is searched for in its scenario (concrete scripted packets, see
bug_scenarios.py); the counterexample is re-executed on a fresh model and
checked to show *that* bug (several bugs violate the same property on the
same traffic -- NICE's "only a detailed analysis of event sequences
distinguishes BUG-VII from BUG-V" -- so each has a signature on the path);
the fixed variant is searched completely under the same bounds.
"""

from __future__ import annotations

import pytest

from netsleuth.model.ofdp import ofp
from netsleuth.nice import bug_scenarios as bs
from netsleuth.nice import messages as m
from netsleuth.nice.apps import energy_te as te
from netsleuth.nice.apps import loadbalancer as lb
from netsleuth.nice.errors import ScenarioError
from netsleuth.nice.property_registry import LIBRARY, resolve

BUGS = list(bs.SCENARIOS)


def _reexecute(system, path):
    """Fire ``path`` on a fresh initial state; returns (final state, violations, handled packet_ins,
    transition descriptions).

    Each handled packet_in is (switch name, PacketIn, app before the handler, messages the handler queued).
    """
    st = system.initial()
    violations, handled, what = [], [], []
    for k, t in enumerate(path):
        assert t in system.enabled(st), f"step {k} {t!r} is not enabled on re-execution"
        what.append(system.describe(st, t))
        info = None
        if t[0] == "ctl" and type(st.to_ctrl[t[1]][0]) is m.PacketIn:
            info = (system.sw_names[t[1]], st.to_ctrl[t[1]][0], st.app, len(st.to_sw[t[1]]))
        nxt, fx = system.fire(st, t)
        if info is not None:
            name, msg, app, before = info
            issued = [x for q in nxt.to_sw for x in q]  # a single-switch handler: new messages are the tail
            i = system.sw_names.index(name)
            handled.append((name, msg, app, nxt.to_sw[i][before:] if len(nxt.to_sw[i]) >= before else issued))
        violations += fx.violations
        st = nxt
    if not violations:
        assert all(system.is_fault(x) for x in system.enabled(st)), "an end-state violation must be at an end state"
        violations = system.at_end(st)
    return st, violations, handled, what


def _forgotten(st):
    """(switch name, buffered frame) of every packet left in a switch buffer."""
    return [(s.name, b.packet) for s in st.switches for b in s.buffers.values()]


def _handling_of(handled, frame):
    return [h for h in handled if h[1].packet == frame or h[1].total_len == frame.frame_len()]


@pytest.mark.parametrize("bug", BUGS)
def test_bug_found_with_a_counterexample_that_reexecutes(bug):
    sc = bs.get(bug)
    system, r = bs.run(sc)
    found = [f for f in r.found if f.violation.prop == sc.expected]
    assert found, f"BUG-{bug} not found ({r.transitions} transitions, completed={r.completed})"
    f = found[0]
    assert f.path and f.transitions <= r.transitions
    fresh = bs.build_system(sc)
    st, violations, handled, what = _reexecute(fresh, f.path)
    assert sc.expected in {v.prop for v in violations}
    lost = _forgotten(st)

    # --- the signature of this particular bug on the counterexample
    if bug == "IV":
        assert [p.eth_type for _, p in lost] == [0x0806]
        # the controller did answer: the reply to the client is in the path's handler output
        (_, msg, _, out), = _handling_of(handled, lost[0][1])
        assert any(type(x) is m.PacketOut and x.data and x.buffer_id == m.NO_BUFFER for x in out)
        assert not any(type(x) is m.PacketOut and x.buffer_id == msg.buffer_id for x in out)
    elif bug in ("V", "VI", "VII", "VIII"):
        (name, frame), = lost
        assert name == "s1" and frame == bs.LB_SYN
        (_, msg, app, out), = _handling_of(handled, frame)
        syn_in = next(k for k, w in enumerate(what) if w.startswith("s1 processes"))
        mods = [k for k, w in enumerate(what) if w.startswith("s1 applies FLOW_MOD")]
        if bug == "V":
            # the SYN came before the first policy's rule for the client's block was in
            block_rule = next(k for k in mods if "nw_src=10.0.0.64/26" in what[k])
            assert msg.reason == ofp.OFPR_NO_MATCH and syn_in < block_rule and out == ()
        elif bug == "VI":
            assert msg.reason == ofp.OFPR_ACTION and app.policy is not None
            micro = [x for x in out if type(x) is m.FlowMod and x.priority == lb.PRIO_MICRO]
            assert micro and all(x.buffer_id == m.NO_BUFFER for x in micro)
            assert not any(type(x) is m.PacketOut for x in out)
        elif bug == "VII":
            # the SYN came between the transition's delete and its install
            assert msg.reason == ofp.OFPR_NO_MATCH and app.moving and out == ()
            last = max(k for k in mods if k < syn_in)
            assert "DELETE_STRICT" in what[last] and "nw_src=10.0.0.64/26" in what[last]
            assert any("CONTROLLER" in what[k] for k in mods if k > syn_in)
        else:
            assert msg.reason == ofp.OFPR_ACTION and msg.packet.eth_type < 0 and out == ()
    elif bug == "IX":
        assert f.path.count(("sendpkt", 0, bs.LB_SYN)) == 2        # the duplicate SYN was needed
        assert set(f.violation.hosts) == {"h2", "h3"}
    elif bug == "X":
        (name, frame), = lost
        assert name == "s1"
        (_, msg, _, out), = _handling_of(handled, frame)
        assert all(x.buffer_id == m.NO_BUFFER for x in out) and not any(type(x) is m.PacketOut for x in out)
    elif bug == "XI":
        (name, frame), = lost
        assert name == "s2"                                       # the second switch, before its rule
        ((_, msg, _, out),) = [h for h in handled if h[0] == "s2"]
        assert out == ()
    elif bug == "XII":
        assert "s3" in f.violation.switches and "s1 -> s2" in f.violation.message
    elif bug == "XIII":
        (name, frame), = lost
        assert name == "s3" and frame == bs.TE_FLOW_B1
        ((_, msg, app, out),) = [h for h in handled if h[0] == "s3"]
        assert app.load_high is False and out == ()               # the load dropped before s3 asked


@pytest.mark.parametrize("bug", BUGS)
def test_fixed_variant_is_clean_in_the_whole_space(bug):
    sc = bs.get(bug)
    system, r = bs.run(sc, "fixed", stop_at_first=False)
    assert r.completed and not r.violation_counts
    assert r.transitions > 100 and r.unique_states > 50


@pytest.mark.parametrize("bug,strategy,dpor", [("VII", "pkt-seq", True), ("IX", "pkt-seq", False),
                                               ("XIII", "unusual", True), ("XII", "no-delay", False)])
def test_strategies_find_the_bug_and_the_fix_stays_clean(bug, strategy, dpor):
    sc = bs.get(bug)
    _, r = bs.run(sc, strategy=strategy, dpor=dpor)
    assert r.violation_counts.get(sc.expected)
    _, rf = bs.run(sc, "fixed", strategy=strategy, dpor=dpor, stop_at_first=False)
    assert rf.completed and not rf.violation_counts


@pytest.mark.parametrize("bug", ["VII", "XI", "XIII"])
def test_no_delay_misses_the_rule_install_races(bug):
    """As in NICE's Table 4: with atomic controller<->switch exchanges these races cannot happen."""
    sc = bs.get(bug)
    _, r = bs.run(sc, strategy="no-delay")
    assert r.completed and sc.expected not in r.violation_counts


def test_each_variant_has_only_its_own_bug():
    # the ARP, duplicate-SYN and routing-table scenarios are violated by their variant alone
    for bug, variants in (("IV", lb.VARIANTS), ("IX", lb.VARIANTS), ("XII", te.VARIANTS)):
        sc = bs.get(bug)
        for v in variants:
            _, r = bs.run(sc, v, stop_at_first=False)
            assert bool(r.violation_counts) == (v == sc.variant), (bug, v, r.violation_counts)


def test_scripted_sends_respect_the_pkt_seq_burst():
    sc = bs.get("IX")
    for strategy, offered in (("pkt-seq", False), ("full", True)):
        system = bs.build_system(sc, strategy=strategy)
        st = system.initial()
        assert ("sendpkt", 0, bs.LB_SYN) in system.enabled(st)
        st, _ = system.fire(st, ("sendpkt", 0, bs.LB_SYN))
        # the SYN is still on the wire: under PKT-SEQ (burst 1) the duplicate must wait
        assert any(t[0] == "sendpkt" for t in system.enabled(st)) is offered


def test_fixed_load_balancer_answers_arp_and_keeps_connections_on_one_replica():
    system = bs.build_system(bs.get("IX"), "fixed")
    st = system.initial()
    # run to the end taking the first enabled transition each time
    while True:
        en = [t for t in system.enabled(st) if not system.is_fault(t)]
        if not en:
            break
        st, fx = system.fire(st, en[0])
        assert not fx.violations
    h2 = st.hosts[system.host_index["h2"]].host
    assert h2.received == 3 and not _forgotten(st)   # SYN, duplicate SYN, ACK: all at replica A
    arp = bs.build_system(bs.get("IV"), "fixed")
    st = arp.initial()
    while True:
        en = [t for t in arp.enabled(st) if not arp.is_fault(t)]
        if not en:
            break
        st, _ = arp.fire(st, en[0])
    assert st.hosts[0].host.arp_cache[lb.VIP] == lb.VMAC and not _forgotten(st)


def test_app_properties_are_registered_and_flow_classes_split():
    assert {"FlowAffinity", "UseCorrectRoutingTable"} <= set(LIBRARY)
    assert [p.name for p in resolve(["flowaffinity", "usecorrectroutingtable"])] == [
        "FlowAffinity", "UseCorrectRoutingTable"]
    assert te.flow_class(te.flow_key(bs.TE_FLOW_B0)) == 0 and te.flow_class(te.flow_key(bs.TE_FLOW_B1)) == 1
    assert lb.block_of(lb.CLIENT[1]) == 1
    assert lb.assignment(lb.POLICIES[0])[1] != lb.assignment(lb.POLICIES[1])[1]  # the reweighting moves the client


def test_bad_scenario_and_variant_names_are_clear_errors():
    with pytest.raises(ScenarioError) as e:
        bs.get("BUG-XIV")
    assert "IV" in e.value.fix
    with pytest.raises(ScenarioError):
        bs.get("IV").spec("bug-x")
    assert bs.get("bug-iv").spec("fixed").endswith("loadbalancer:LoadBalancer")
    from netsleuth.nice.scripted import attach

    with pytest.raises(ScenarioError) as e:
        attach(bs.build_system(bs.get("IV")), (("h9", (bs.LB_ARP,)),))
    assert "h1" in e.value.fix


def test_server_generated_arp_is_forgotten_by_bug_iv_only():
    """BUG-IV's second half: a replica's ARP for the client is flooded as a copy, the original kept."""
    from netsleuth.model.packet import arp_request

    name, ip, mac, _ = lb.REPLICAS[0]
    server_arp = arp_request(mac, ip, lb.CLIENT[1])
    sc = bs.BugScenario("IV", "loadbalancer", "bug-iv", "server ARP", lb.topology, (("h2", (server_arp,)),),
                        ("NoForgottenPackets",), "NoForgottenPackets")
    system, r = bs.run(sc)
    st, violations, _, _ = _reexecute(bs.build_system(sc), r.found[0].path)
    lost = [p for _, p in _forgotten(st)]
    assert server_arp in lost and all(p.eth_type == 0x0806 for p in lost)  # (h1's answer too, once flooded)
    _, rf = bs.run(sc, "fixed", stop_at_first=False)
    assert rf.completed and not rf.violation_counts and rf.unique_states > 10  # h1 answers h2 through s1


def test_counterexample_is_a_trace_and_scripts_round_trip(tmp_path):
    from netsleuth.nice.job import write_counterexample
    from netsleuth.trace import schema as ts
    from netsleuth.trace.io import read_trace

    sc = bs.get("IX")
    system, r = bs.run(sc)
    write_counterexample(tmp_path / "ix.jsonl", system, r.found[0])
    trace = read_trace(tmp_path / "ix.jsonl")
    steps = [e for e in trace.events if isinstance(e, ts.McStep)]
    assert len(steps) == len(r.found[0].path)
    assert sum(1 for e in steps if e.transition["kind"] == "sendpkt") == 2  # SYN and its duplicate
    assert trace.header.controller.endswith("loadbalancer:LoadBalancerBugIX")
    assert bs.scripts_from_json(bs.scripts_to_json(sc.scripts)) == sc.scripts


def test_fixed_te_passes_every_property_while_routing_on_demand():
    """Under high load the class-1 flow legitimately takes s1-s3-s2: no property may object."""
    base = bs.get("XIII")
    props = ("NoForgottenPackets", "NoBlackHoles", "UseCorrectRoutingTable")
    sc = bs.BugScenario("XIII", "energy-te", "bug-xiii", "all properties", te.topology, base.scripts, props,
                        "UseCorrectRoutingTable")
    _, r = bs.run(sc, "fixed", stop_at_first=False)
    assert r.completed and not r.violation_counts
    # ... and the search did reach a state where s3 carries the flow's rule
    system = bs.build_system(sc, "fixed")
    _, rb = bs.run(base)   # bug-xiii's counterexample path: on demand, then the load drops
    st = system.initial()
    for t in rb.found[0].path:
        assert t in system.enabled(st)
        st, fx = system.fire(st, t)
        assert not fx.violations
    s3 = st.switches[system.sw_names.index("s3")]
    assert len(s3.table.entries()) == 1


def test_check_names_map_to_scenarios_and_apps():
    from netsleuth.nice.loading import load_app

    for name, target in bs.APP_SPECS.items():
        cls = load_app(target)
        assert cls.name == name
    assert bs.scenario_for("loadbalancer-bug-vii").bug == "VII"
    assert bs.scenario_for("app:energy-te-bug-xi").bug == "XI"
    assert bs.scenario_for("loadbalancer", "bug-iv").bug == "IV"
    assert bs.scenario_for("energy-te").bug == "XIII"
    assert bs.scenario_for("pyswitch") is None and bs.scenario_for("pyswitch", "mobile") is None
    for app, scenario in (("pyswitch", "bug-iv"), ("loadbalancer", "bug-xii"), ("energy-te", "pings")):
        with pytest.raises(ScenarioError):
            bs.scenario_for(app, scenario)
    sc = bs.scenario_for("loadbalancer-bug-ix")
    cfg = bs.config_for(sc, spec="app:" + bs.APP_SPECS["loadbalancer-bug-ix"], strategy="pkt-seq+unusual")
    assert cfg.pkt_seq_burst == 1 and cfg.track_issue_order and cfg.properties == ("FlowAffinity",)
