"""SDNRacer race detection on netsleuth's own traces (netsleuth.races.from_trace).

The main test records a real trace of os-ken 1.4.1 ``simple_switch`` (the
controller process from .venv-controller, real TCP) and checks that the
learning switch's PACKET_OUT vs FLOW_MOD race is found, with facts taken
from the trace itself.  Small hand-made traces then pin the individual
causality rules (buffer put/get, barriers, replies by xid, expiry via
FLOW_REMOVED) without a controller.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from os_ken.ofproto import ofproto_v1_0 as ofp
from os_ken.ofproto import ofproto_v1_0_parser as parser

from netsleuth.jobs.run import RunOptions, run
from netsleuth.model.packet import icmp_echo
from netsleuth.model.topo_builders import parse_topo
from netsleuth.openflow.codec import DATAPATH, encode, msg_to_json
from netsleuth.races.detect import HARMFUL
from netsleuth.races.events import (
    CONTROLLER_HANDLE,
    CONTROLLER_SEND,
    EXPIRY,
    FLOW_EXPIRY,
    HOST_HANDLE,
    HOST_SEND,
    MESSAGE_HANDLE,
    MESSAGE_SEND,
    PACKET_HANDLE,
    PACKET_SEND,
    READ,
    WRITE,
)
from netsleuth.races.from_trace import events_from_trace, is_netsleuth_trace, race_text
from netsleuth.races.job import detect_races
from netsleuth.races.poxmatch import PoxFlowMod, PoxMatch
from netsleuth.trace import schema as ts
from netsleuth.trace.io import read_trace, write_trace

SIMPLE_SWITCH = "osken:os_ken.app.simple_switch"


# =============================================================================== real controller


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("simple_switch")
    result = run(RunOptions(controller=SIMPLE_SWITCH, topo="single,3", pingall=True, out=out))
    assert result.data["pingall"]["ok"] == 6
    return out / "trace.jsonl"


def _parents(g, node: int) -> list[int]:
    return list(g.pred[node])


def _controller_handle_of(g, handle: int) -> int | None:
    """MessageHandle <- ControllerSend <- ControllerHandle (None for a proactive send)."""
    sends = [p for p in _parents(g, handle) if g.events[p].kind == CONTROLLER_SEND]
    assert len(sends) == 1
    hs = [p for p in _parents(g, sends[0]) if g.events[p].kind == CONTROLLER_HANDLE]
    return hs[0] if hs else None


@pytest.mark.real
def test_learning_switch_packet_out_vs_flow_mod_race(recorded: Path) -> None:
    trace = read_trace(recorded)
    by_seq = {e.seq: e for e in trace.events}
    names = {s["dpid"]: s["name"] for s in trace.header.topology["switches"]}
    built = events_from_trace(recorded)
    report = detect_races(recorded)
    g = report.graph
    reach = g.reachability()
    harmful = report.harmful_races()
    assert harmful, "the learning switch's flow_mod/packet race must be reported"

    found = []
    for r in harmful:
        read_ev, write_ev = g.events[r.i], g.events[r.k]
        assert r.i_op.kind == READ and r.k_op.kind == WRITE
        # the write is a FLOW_MOD recorded in the trace, on that switch, with exactly that flow mod
        w_src = by_seq[built.origin[write_ev.eid]]
        assert isinstance(w_src, ts.ControlToSwitch) and w_src.msg["type"] == "FLOW_MOD"
        assert w_src.dpid == write_ev.dpid
        from netsleuth.openflow.codec import msg_from_json
        recorded_fm = PoxFlowMod.from_wire(encode(msg_from_json(w_src.msg)))
        assert recorded_fm.match == r.k_op.flow_mod.match and recorded_fm.actions == r.k_op.flow_mod.actions
        # the read is a packet arrival at the same switch, which hit exactly that entry
        r_src = by_seq[built.origin[read_ev.eid]]
        assert isinstance(r_src, ts.PacketArrival) and r_src.node == names[write_ev.dpid]
        assert r_src.port == read_ev.in_port
        assert r.i_op.flow_mod is not None and r.i_op.flow_mod.match == recorded_fm.match
        assert PoxMatch.from_packet(read_ev.packet, read_ev.in_port) is not None
        # unordered in the HB graph
        assert not reach.ordered(r.i, r.k)
        # the two messages are named in plain words
        text = race_text(report.labels, g, r)
        sw = names[write_ev.dpid]
        in_port = w_src.msg['body']['OFPFlowMod']['match']['OFPMatch']['in_port']
        assert f"FLOW_MOD ADD priority=32768,in_port={in_port}" in text and text.endswith(f"on {sw}")
        from netsleuth.model.packet import Packet
        summary = Packet.from_json(r_src.packet).summary()
        assert f"packet {summary} in port {r_src.port} matched " in text and "  vs  " in text
        # packet_out vs flow_mod: the FLOW_MOD's PACKET_IN handling also sent a PACKET_OUT
        # whose packet (or its consequences) led to the racing read
        h = _controller_handle_of(g, r.k)
        assert h is not None
        siblings = [s for s in g.succ[h] if g.events[s].kind == CONTROLLER_SEND]
        outs = [m for s in siblings for m in g.succ[s]
                if g.events[m].kind == MESSAGE_HANDLE and g.events[m].msg_type == "OFPT_PACKET_OUT"]
        if any(reach.reaches(p, r.i) for p in outs):
            found.append(r)
    assert found, "a read caused by the PACKET_OUT sibling of the FLOW_MOD must race with it"

    d = report.to_json()
    for rd in d["race_list"]:
        texts = [e["text"] for e in rd["events"]]
        assert texts[0].startswith("packet ") and texts[1].startswith("FLOW_MOD ")


@pytest.mark.real
def test_race_counts_are_deterministic_and_consistent(recorded: Path) -> None:
    a = detect_races(recorded)
    b = detect_races(recorded.parent)            # a run directory works too
    assert a.summary() == b.summary()
    key = [(r.kind, r.status, a.graph.events[r.i].eid, a.graph.events[r.k].eid) for r in a.races]
    assert key == [(r.kind, r.status, b.graph.events[r.i].eid, b.graph.events[r.k].eid) for r in b.races]
    s = a.summary()
    assert s["races"] == s["commuting"] + s["time_filtered_races"] + s["covered"] + s["harmful"]
    trace = read_trace(recorded)
    n_flow_mods = sum(1 for e in trace.events if e.kind == "of_to_switch" and e.msg["type"] == "FLOW_MOD")
    n_switch_arrivals = sum(1 for e in trace.events if e.kind == "packet" and e.node.startswith("s"))
    assert s["writes"] == n_flow_mods and s["read"] == n_switch_arrivals


@pytest.mark.real
def test_causality_inferred_for_every_message_of_simple_switch(recorded: Path) -> None:
    trace = read_trace(recorded)
    built = events_from_trace(recorded)
    n_pi = sum(1 for e in trace.events if e.kind == "of_to_controller" and e.msg["type"] == "PACKET_IN")
    n_ctl = sum(1 for e in trace.events if e.kind == "of_to_switch" and e.msg["type"] in ("FLOW_MOD", "PACKET_OUT"))
    assert built.stats["packet_ins_linked"] == n_pi
    assert built.stats.get("ctl_sends_root", 0) == 0
    assert built.stats["ctl_by_data"] + built.stats["ctl_by_match"] == n_ctl
    assert built.stats.get("unlinked_arrivals", 0) == 0
    g = detect_races(recorded).graph
    for n, ev in enumerate(g.events):
        if ev.kind == MESSAGE_HANDLE and ev.msg_type == "OFPT_FLOW_MOD":
            # rule (c): the FLOW_MOD's match covers the packet of the PACKET_IN it answers
            h = _controller_handle_of(g, n)
            (send,) = [p for p in g.pred[h] if g.events[p].kind == MESSAGE_SEND]
            (arrival,) = [p for p in g.pred[send] if g.events[p].kind == PACKET_HANDLE]
            a = g.events[arrival]
            assert ev.ops[0].flow_mod.match.matches_with_wildcards(PoxMatch.from_packet(a.packet, a.in_port))
            assert a.dpid == ev.dpid
        if ev.kind in (PACKET_HANDLE, HOST_HANDLE):
            assert any(g.events[p].kind in (PACKET_SEND, HOST_SEND) for p in g.pred[n])


# =============================================================================== hand-made traces


def _header(spec: str = "single,2") -> ts.TraceHeader:
    return ts.TraceHeader(topology=parse_topo(spec).to_json(), topology_spec=spec, controller="c0", seed=0,
                          tool_version="test")


def _to_switch(seq: int, t: float, msg, xid: int) -> ts.ControlToSwitch:
    msg.xid = xid
    return ts.ControlToSwitch(seq=seq, t=t, conn=0, controller="c0", dpid=1, msg=msg_to_json(msg), fp=("x",))


def _to_controller(seq: int, t: float, msg, xid: int = 0) -> ts.ControlToController:
    msg.xid = xid
    return ts.ControlToController(seq=seq, t=t, conn=0, controller="c0", dpid=1, msg=msg_to_json(msg), fp=("x",))


def _ping():
    return icmp_echo("00:00:00:00:00:01", "00:00:00:00:00:02", "10.0.0.1", "10.0.0.2", 1, 1)


def _flow_mod(**kw):
    match = parser.OFPMatch(wildcards=ofp.OFPFW_ALL & ~ofp.OFPFW_IN_PORT & ~ofp.OFPFW_DL_DST, in_port=1,
                            dl_dst="00:00:00:00:00:02")
    return parser.OFPFlowMod(DATAPATH, match, 0, ofp.OFPFC_ADD, actions=[parser.OFPActionOutput(2)], **kw)


def _save(tmp_path: Path, events: list) -> Path:
    p = tmp_path / "trace.jsonl"
    write_trace(p, ts.Trace(_header(), events))
    return p


def test_barrier_reply_and_expiry_rules(tmp_path: Path) -> None:
    pkt = _ping()
    removed = parser.OFPFlowRemoved(DATAPATH)
    removed.match, removed.cookie, removed.priority = _flow_mod().match, 0, ofp.OFP_DEFAULT_PRIORITY
    removed.reason, removed.duration_sec, removed.duration_nsec = ofp.OFPRR_HARD_TIMEOUT, 5, 0
    removed.idle_timeout, removed.packet_count, removed.byte_count = 0, 1, 42
    events = [
        _to_switch(0, 0.0, _flow_mod(hard_timeout=5, flags=ofp.OFPFF_SEND_FLOW_REM), 11),
        _to_switch(1, 0.1, parser.OFPBarrierRequest(DATAPATH), 12),
        _to_controller(2, 0.2, parser.OFPBarrierReply(DATAPATH), 12),
        ts.TrafficInjection(seq=3, t=0.3, id="i1", host="h1", packet=pkt.to_json(), dst="h2"),
        ts.PacketArrival(seq=4, t=0.3, node="s1", port=1, pid=1, packet=pkt.to_json(), fp=("x",)),
        ts.PacketArrival(seq=5, t=0.31, node="h2", port=0, pid=1, packet=pkt.to_json(), fp=("x",)),
        _to_controller(6, 5.0, removed),
    ]
    path = _save(tmp_path, events)
    assert is_netsleuth_trace(path)
    report = detect_races(path)
    g = report.graph
    kinds = [e.kind for e in g.events]
    fm = kinds.index(MESSAGE_HANDLE)
    barrier = next(n for n, e in enumerate(g.events) if e.msg_type == "OFPT_BARRIER_REQUEST")
    assert g.rel[(fm, barrier)] == "barrier_pre"
    reply = next(n for n, e in enumerate(g.events) if e.msg_type == "OFPT_BARRIER_REPLY")
    assert g.rel[(barrier, reply)] == "mid"
    read = next(n for n, e in enumerate(g.events) if e.kind == PACKET_HANDLE)
    assert g.events[read].ops[0].flow_mod is not None            # hit the entry the FLOW_MOD installed
    host = kinds.index(HOST_HANDLE)
    assert g.has_path(read, host) and kinds[g.pred[read][0]] == HOST_SEND
    expiry = kinds.index(FLOW_EXPIRY)
    assert g.events[expiry].ops[0].kind == EXPIRY
    assert g.rel[(fm, expiry)] == "time"                           # SDNRacer's rule 5 (> delta before)
    (race,) = [r for r in report.races if r.status == HARMFUL]     # root FLOW_MOD vs root ping
    assert {race.i, race.k} == {read, fm}


def test_buffer_put_get_links_packet_in_packet_out_and_next_hop(tmp_path: Path) -> None:
    pkt = _ping()
    frame = pkt.to_bytes()
    pin = parser.OFPPacketIn(DATAPATH, buffer_id=7, total_len=len(frame), in_port=1, reason=ofp.OFPR_NO_MATCH,
                             data=frame[:20])
    pout = parser.OFPPacketOut(DATAPATH, buffer_id=7, in_port=1, actions=[parser.OFPActionOutput(2)], data=b"")
    events = [
        ts.TrafficInjection(seq=0, t=0.0, id="i1", host="h1", packet=pkt.to_json(), dst="h2"),
        ts.PacketArrival(seq=1, t=0.01, node="s1", port=1, pid=1, packet=pkt.to_json(), fp=("x",)),
        _to_controller(2, 0.02, pin),
        _to_switch(3, 0.03, pout, 5),
        ts.PacketArrival(seq=4, t=0.04, node="h2", port=0, pid=1, packet=pkt.to_json(), fp=("x",)),
    ]
    built = events_from_trace(_save(tmp_path, events))
    assert built.stats["ctl_by_buffer"] == 1 and built.stats["packet_ins_linked"] == 1
    report = detect_races(tmp_path / "trace.jsonl")
    g = report.graph
    arrival = next(n for n, e in enumerate(g.events) if e.kind == PACKET_HANDLE)
    out = next(n for n, e in enumerate(g.events) if e.msg_type == "OFPT_PACKET_OUT")
    host = next(n for n, e in enumerate(g.events) if e.kind == HOST_HANDLE)
    assert g.rel[(arrival, out)] == "pid"                          # buffer put -> buffer get
    assert g.has_path(out, host)
    assert "missed (no entry) on s1" in built.labels[g.events[arrival].eid]
    assert json.dumps(report.to_json())                            # serializable
