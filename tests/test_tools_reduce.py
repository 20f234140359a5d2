"""`netsleuth reduce`: only the flow_mods in force at the violation, checked against rebuilt state.

The trace is a real simple_switch fuzz run with switch failures (tables
lost) and repeated learning (identical matches overridden). The switches'
state is rebuilt headlessly with netsleuth.world.rebuild, independently of
the reduction's own bookkeeping, and compared with what reduce kept.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from netsleuth.jobs.invariants_on_trace import invariants_on_trace
from netsleuth.model.actions import action_from_ofp
from netsleuth.model.match import Match
from netsleuth.openflow.codec import msg_from_json
from netsleuth.trace import schema as ts
from netsleuth.trace.io import read_trace, write_trace
from netsleuth.world.rebuild import rebuild


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netsleuth.cli", *args], capture_output=True, text=True, timeout=120)


def _tables(world) -> dict[str, set[tuple]]:
    """What forwarding depends on, per switch that is up (counters and traffic-moved timers left out)."""
    return {name: {(e.match, e.priority, e.actions, e.cookie, e.idle_timeout, e.hard_timeout, e.flags,
                    e.installed_at) for e in s.table.entries()}
            for name, s in world.switches.items() if world.switch_up[name]}


def _rule(e: ts.ControlToSwitch) -> tuple:
    m = msg_from_json(e.msg)
    return Match.from_ofp(m.match), m.priority, tuple(action_from_ofp(a) for a in m.actions)


@pytest.fixture(scope="module")
def trace300(tools_fuzz_trace: Path, tmp_path_factory) -> Path:
    """The first 300 events of the fuzz trace: a 300-event fuzz trace of simple_switch."""
    full = read_trace(tools_fuzz_trace)
    assert len(full.events) >= 300
    path = tmp_path_factory.mktemp("reduce") / "trace300.jsonl"
    write_trace(path, ts.Trace(full.header, full.events[:300]))
    return path


@pytest.mark.real
def test_reduce_keeps_exactly_the_flow_mods_in_the_final_tables(trace300: Path, tmp_path: Path) -> None:
    out = tmp_path / "reduced.jsonl"
    proc = _cli("reduce", str(trace300), "--end", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    trace = read_trace(trace300)
    dpid_name = {s["dpid"]: s["name"] for s in trace.header.topology["switches"]}
    flow_mods = [e for e in trace.events if isinstance(e, ts.ControlToSwitch) and e.msg["type"] == "FLOW_MOD"]
    assert d["flow_mods"] == len(flow_mods) >= 10
    assert len(d["kept"]) + len(d["dropped"]) == len(flow_mods)
    assert d["dropped"], "a fuzz run with failures and relearning must leave flow_mods that no longer matter"

    # The switches' state at the end, rebuilt headlessly from the whole trace.
    final = _tables(rebuild(trace.header, trace.events).world)
    entries = sum(len(t) for t in final.values())
    reduced = read_trace(out)
    kept = [e for e in reduced.events if isinstance(e, ts.ControlToSwitch)]
    assert sorted(e.seq for e in kept) == sorted(k["seq"] for k in d["kept"])
    # simple_switch only ADDs: each kept flow_mod is one entry of the final tables, and each entry has one
    assert len(kept) == entries > 0
    for e in kept:
        assert any(r[:3] == _rule(e) and r[7] == e.t for r in final[dpid_name[e.dpid]]), e.seq
    # every dropped one is no longer in force: its entry is gone or was installed later by another
    by_seq = {e.seq: e for e in flow_mods}
    for dr in d["dropped"]:
        e = by_seq[dr["seq"]]
        table = final.get(dpid_name[e.dpid], set())
        assert not any(r[:3] == _rule(e) and r[7] == e.t for r in table), dr
        assert dr["reason"] in ("overridden", "deleted", "expired", "lost in switch failure"), dr
        assert dr["by_seq"] is None or dr["by_seq"] > dr["seq"]

    # Re-applying only the reduced flow_mods yields the same tables ...
    only = rebuild(trace.header, kept).world
    assert _tables(only) == final
    # ... and so does the reduced trace with its context (connections, failures, moves).
    assert _tables(rebuild(reduced.header, reduced.events).world) == final
    assert d["reduced_events"] == len(reduced.events) < len(trace.events)


@pytest.mark.real
def test_reduce_at_a_violation_keeps_the_violation(tools_fuzz_trace: Path, tmp_path: Path) -> None:
    trace = read_trace(tools_fuzz_trace)
    violations = [e for e in trace.events if isinstance(e, ts.Violation) and e.persistent]
    if not violations:
        pytest.fail("the fuzz fixture found no persistent violation (simple_switch has the migration blackhole)")
    target = violations[-1]
    out = tmp_path / "at_violation.jsonl"
    proc = _cli("reduce", str(tools_fuzz_trace), "--violation", "-1", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["violation"]["seq"] == target.seq
    reduced = read_trace(out)
    assert reduced.events[-1] == target and reduced.header.extra["violation_seq"] == target.seq
    # the rebuilt tables just before the violation equal those of the reduced trace
    before = rebuild(trace.header, trace.events, stop=lambda e: e.seq >= target.seq).world
    assert _tables(rebuild(reduced.header, reduced.events[:-1]).world) == _tables(before)
    # and the invariants find the same static violations on both
    full = invariants_on_trace(tools_fuzz_trace, at=target.seq)
    small = invariants_on_trace(out)
    assert small["violations"] == full["violations"] and full["violations"]


@pytest.mark.real
def test_reduce_bad_violation_index_is_one_clear_error(tools_fuzz_trace: Path, tmp_path: Path) -> None:
    proc = _cli("reduce", str(tools_fuzz_trace), "--violation", "999", "--out", str(tmp_path / "r.jsonl"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and "--violation" in proc.stderr and "fix:" in proc.stderr


def test_reduction_reasons_for_deletes_modifies_and_expiry() -> None:
    """The corners simple_switch never exercises, as flow_mods a controller could send (codec JSON)."""
    from os_ken.ofproto import ofproto_v1_0 as ofp
    from os_ken.ofproto import ofproto_v1_0_parser as P

    from netsleuth.model.topo_builders import parse_topo
    from netsleuth.openflow.codec import DATAPATH, msg_to_json
    from netsleuth.rootcause.reduce import reduce_trace
    from netsleuth.trace.fingerprint import of_fingerprint

    topo = parse_topo("linear,2")
    header = ts.TraceHeader(topology=topo.to_json(), topology_spec="linear,2", controller="test", seed=None,
                            tool_version="test")
    events: list[ts.Event] = [ts.SwitchConnected(seq=0, t=0.0, dpid=1, conn=0, controller="c0")]

    def fm(t: float, dst: str, command: int, port: int = 2, idle: int = 0) -> ts.ControlToSwitch:
        msg = P.OFPFlowMod(DATAPATH, match=P.OFPMatch(dl_dst=dst), cookie=0, command=command, idle_timeout=idle,
                           hard_timeout=0, priority=10, buffer_id=0xFFFFFFFF, out_port=ofp.OFPP_NONE, flags=0,
                           actions=[P.OFPActionOutput(port)] if command != ofp.OFPFC_DELETE_STRICT else [])
        msg.xid = len(events)
        js = msg_to_json(msg)
        e = ts.ControlToSwitch(seq=len(events), t=t, conn=0, controller="c0", dpid=1, msg=js, fp=of_fingerprint(js))
        events.append(e)
        return e

    a = fm(1.0, "00:00:00:00:00:0a", ofp.OFPFC_ADD, idle=1)           # expires at t=2 (no traffic)
    b1 = fm(1.1, "00:00:00:00:00:0b", ofp.OFPFC_ADD, port=1)
    b2 = fm(1.2, "00:00:00:00:00:0b", ofp.OFPFC_ADD, port=2)          # same match+priority: overrides b1
    c = fm(1.3, "00:00:00:00:00:0c", ofp.OFPFC_ADD)
    c_del = fm(1.4, "00:00:00:00:00:0c", ofp.OFPFC_DELETE_STRICT)     # removes c
    d = fm(1.5, "00:00:00:00:00:0d", ofp.OFPFC_ADD, port=1)
    d_mod1 = fm(1.6, "00:00:00:00:00:0d", ofp.OFPFC_MODIFY_STRICT, port=2)
    d_mod2 = fm(1.7, "00:00:00:00:00:0d", ofp.OFPFC_MODIFY_STRICT, port=1)  # the one in force
    events.append(ts.ControllerEvent(seq=len(events), t=3.0, controller="c0", what="log_error", detail="tick"))
    trace = ts.Trace(header, events)

    r = reduce_trace(trace, at_end=True)
    kept = {k.seq: k.role for k in r.kept}
    assert kept == {b2.seq: "installed", d.seq: "installed", d_mod2.seq: "modified"}
    why = {x.seq: (x.reason, x.by_seq) for x in r.dropped}
    assert why[a.seq] == ("expired", events[-1].seq)
    assert why[b1.seq] == ("overridden", b2.seq)
    assert why[c.seq] == ("deleted", c_del.seq)
    assert why[d_mod1.seq] == ("overridden", d_mod2.seq)
    assert why[c_del.seq][0].startswith("delete")
    # re-applying only the kept flow_mods gives the same table
    only = rebuild(header, [e for e in events if e.seq in kept] + [events[-1]]).world
    assert _tables(only) == _tables(rebuild(header, events).world)
