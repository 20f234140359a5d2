"""`netsleuth trace-packet`: every injected packet of a real fuzz run, checked against the trace's own record.

The report is built from the rebuilt tables and the recorded hops; each
claim is checked here against the raw trace: the hops are all of the
packet's recorded arrivals, the matched rule's flow_mod really matches the
packet, each PACKET_IN came from that switch and port, a delivered packet
really arrived at its destination, a blackholed one was sent to a port its
switch no longer had.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from netsleuth.model.match import Match
from netsleuth.model.packet import Packet
from netsleuth.openflow.codec import msg_from_json
from netsleuth.rootcause.trace_packet import trace_packet
from netsleuth.trace import schema as ts
from netsleuth.trace.io import read_trace, write_trace
from netsleuth.world.rebuild import rebuild

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def traced(tools_fuzz_trace: Path) -> tuple[ts.Trace, list]:
    trace = read_trace(tools_fuzz_trace)
    inputs = [e for e in trace.events if isinstance(e, ts.TrafficInjection)]
    return trace, [(e, trace_packet(trace, e.id)) for e in inputs]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netsleuth.cli", "trace-packet", *args], capture_output=True,
                          text=True, timeout=60)


def test_every_packet_report_agrees_with_the_recorded_hops(traced) -> None:
    trace, reports = traced
    assert len(reports) >= 20
    by_seq = {e.seq: e for e in trace.events}
    dpid_of = {s["name"]: s["dpid"] for s in trace.header.topology["switches"]}
    outcomes: dict[str, int] = {}
    for inj, r in reports:
        outcomes[r.outcome] = outcomes.get(r.outcome, 0) + 1
        if r.pid is None:
            assert r.outcome == "never sent" and r.hops == []
            continue
        arrivals = [e for e in trace.events if isinstance(e, ts.PacketArrival) and e.pid == r.pid]
        assert [h.seq for h in r.hops] == [e.seq for e in arrivals] and arrivals[0].seq > inj.seq
        first = Packet.from_json(arrivals[0].packet)
        if r.followed == "packet":
            assert first.to_bytes() == Packet.from_json(inj.packet).to_bytes()
        else:
            assert first.eth_type == 0x0806 and first.eth_src == Packet.from_json(inj.packet).eth_src
        for h in r.hops:
            pkt = Packet.from_json(by_seq[h.seq].packet)
            if h.rule is not None:
                fm = by_seq[h.rule_flow_mods[0]]
                assert fm.kind == "of_to_switch" and fm.msg["type"] == "FLOW_MOD" and fm.seq < h.seq
                assert fm.dpid == dpid_of[h.node]
                assert Match.from_ofp(msg_from_json(fm.msg).match).matches(pkt.match_fields(h.port))
            if h.packet_in is not None:
                pin = by_seq[h.packet_in["seq"]]
                body = pin.msg["body"]["OFPPacketIn"]
                assert pin.kind == "of_to_controller" and pin.dpid == dpid_of[h.node] and pin.seq > h.seq
                assert body["in_port"] == h.port and pkt.to_bytes().startswith(base64.b64decode(body["data"]))
            if h.reply is not None:
                reply = by_seq[h.reply["seq"]]
                assert reply.kind == "of_to_switch" and reply.dpid == dpid_of[h.node] and reply.seq > h.seq
            if h.parent is not None:
                assert h.index in r.hops[h.parent].children and r.hops[h.parent].node == h.from_node
        if r.outcome == "delivered":
            assert any(e.node == inj.dst for e in arrivals)
            assert any(h.end and h.end["outcome"] == "delivered" and h.node == inj.dst for h in r.hops)
        elif r.outcome == "dropped" and r.followed == "packet":
            assert not any(e.node == inj.dst for e in arrivals)
            assert any(h.end and h.end["outcome"] == "dropped" for h in r.hops)
    # simple_switch on a network where hosts move: most packets arrive, some are lost
    assert outcomes.get("delivered", 0) >= 5 and outcomes.get("dropped", 0) >= 1, outcomes


def test_blackholed_packets_name_the_missing_port(traced) -> None:
    trace, reports = traced
    blackholed = [(inj, r) for inj, r in reports if "blackholed" in r.why]
    if not blackholed:
        pytest.fail("no packet of the fuzz run hit the migration blackhole; the fixture should have some")
    for _inj, r in blackholed:
        leaf = next(h for h in r.hops if h.end and "blackholed" in h.end["why"])
        assert leaf.end["dead_ports"] and leaf.rule is not None
        # the switch's state when the packet got there, rebuilt independently
        world = rebuild(trace.header, trace.events, stop=lambda e, leaf=leaf: e.seq >= leaf.seq).world
        switch, links = world.switches[leaf.node], world.view().link_up
        for port in leaf.end["dead_ports"]:
            assert f"output:{port}" in leaf.rule
            up = [ok for k, ok in links.items() if (leaf.node, port) in ((k[0], k[1]), (k[2], k[3]))]
            # gone (a host moved away), link down, or its own in port (OF1.0 needs IN_PORT for that)
            assert port not in switch.ports or up == [False] or port == leaf.port, (port, leaf)


def test_cli_text_and_json(traced, tools_fuzz_trace: Path) -> None:
    _, reports = traced
    inj, r = next((inj, r) for inj, r in reports if r.outcome == "delivered" and any(h.rule for h in r.hops))
    text = _cli(str(tools_fuzz_trace), inj.id)
    assert text.returncode == 0, text.stderr
    assert f"input {inj.id}" in text.stdout and "outcome: delivered" in text.stdout and "matched" in text.stdout
    by_seq = _cli(str(tools_fuzz_trace), str(inj.seq), "--json")
    d = json.loads(by_seq.stdout)
    assert d["outcome"] == "delivered" and d["input"]["id"] == inj.id and len(d["hops"]) == len(r.hops)


def test_bad_event_and_trace_without_hops_are_clear_errors(tools_fuzz_trace: Path, tmp_path: Path) -> None:
    proc = _cli(str(tools_fuzz_trace), "i99999")
    assert proc.returncode == 2 and proc.stderr.startswith("error: the trace has no traffic input 'i99999'")
    assert "fix: give a traffic input's id or seq, e.g. i" in proc.stderr
    proc = _cli(str(tools_fuzz_trace), "1")  # seq 1 is a control message
    assert proc.returncode == 2 and "not a traffic input" in proc.stderr

    trace = read_trace(tools_fuzz_trace)
    bare = tmp_path / "nohops.jsonl"
    write_trace(bare, ts.Trace(trace.header, [e for e in trace.events if not isinstance(e, ts.PacketArrival)]))
    first = next(e for e in trace.events if isinstance(e, ts.TrafficInjection))
    proc = _cli(str(bare), first.id)
    assert proc.returncode == 2 and "--no-packet-events" in proc.stderr


def test_flooding_on_a_ring_is_reported_as_a_loop(tmp_path_factory) -> None:
    """simple_switch floods ARP forever on a cycle (as in tests/test_fuzz.py's ring test)."""
    from netsleuth.jobs.fuzz import FuzzOptions, fuzz
    from netsleuth.schedulers.fuzz import Rates

    out = tmp_path_factory.mktemp("ring")
    fuzz(FuzzOptions("osken:os_ken.app.simple_switch", "ring,4", out, steps=60, seed=3, rates=Rates({"traffic": 0.3}),
                     round_seconds=0.02))
    trace = read_trace(out / "trace.jsonl")
    loops = {e.details["pid"]: e for e in trace.events if isinstance(e, ts.Violation)
             and e.invariant == "dataplane-loops"}
    assert loops, "simple_switch on a ring must loop"
    reports = [trace_packet(trace, e.id) for e in trace.events if isinstance(e, ts.TrafficInjection)]
    looped = [r for r in reports if r.outcome == "looped"]
    assert looped and all(r.pid in loops for r in looped)
    for r in looped:
        arrivals = [(e.node, e.port) for e in trace.events if isinstance(e, ts.PacketArrival) and e.pid == r.pid]
        for h in r.hops:
            if h.end and h.end["outcome"] == "looped":  # a genuine revisit of a port this lineage passed
                assert arrivals.index((h.node, h.port)) < h.index and h.rule is None and not h.children
    assert not [r for r in reports if r.pid in loops and r.outcome != "looped"]
