"""Importing STS traces (events.trace) into netsleuth's trace format.

Fixtures in tests/data/sts (see its README): one hand-written line per STS
event class in the late STS format, and two excerpts of real STS recordings
(a 2013 two-controller handshake with raw OpenFlow bytes, and an early POX
migration-blackhole run).
"""

from __future__ import annotations

import ast
import base64
import json
from pathlib import Path

import pytest

from netsleuth.errors import TraceFormatError
from netsleuth.model.packet import Packet
from netsleuth.model.topology import Topology
from netsleuth.openflow.codec import decode, msg_to_json
from netsleuth.trace import of_fingerprint, read_trace, write_trace
from netsleuth.trace import schema as ts
from netsleuth.trace.importers import STS_CLASSES, ImportReport, import_sts

DATA = Path(__file__).parent / "data" / "sts"
ALL = DATA / "all_classes.trace"
BIGSWITCH = DATA / "bigswitch_alpha_mcs_excerpt.trace"
POX = DATA / "pox_4mesh_blackhole_excerpt.trace"
FIXTURES = [ALL, BIGSWITCH, POX]


def decode_of(data: bytes) -> dict:
    return msg_to_json(decode(data))


def imp(path: Path = ALL, **kw) -> ImportReport:
    kw.setdefault("decode_openflow", decode_of)
    return import_sts(path, **kw)


def by_kind(report: ImportReport, kind: str) -> list:
    return [e for e in report.trace.events if type(e).kind == kind]


def line(cls: str, label: str, sec: int = 100, **fields) -> str:
    return json.dumps({"class": cls, "label": label, "time": [sec, 0], "round": sec, "dependent_labels": [],
                       **fields})


def write(tmp_path: Path, *lines: str, name: str = "events.trace") -> Path:
    p = tmp_path / name
    p.write_text("".join(line + "\n" for line in lines))
    return p


# ------------------------------------------------------------------ every class
def test_every_sts_class_is_converted_or_reported():
    r = imp()
    assert r.converted == {
        "ControlMessageReceive": 1, "ControlMessageSend": 1, "TrafficInjection": 1, "SwitchFailure": 1,
        "SwitchRecovery": 1, "LinkFailure": 1, "LinkRecovery": 1, "ControllerFailure": 1,
        "ControllerRecovery": 1, "ControlChannelBlock": 1, "ControlChannelUnblock": 1, "HostMigration": 3,
        "DataplaneDrop": 1, "InvariantViolation": 1, "ConnectToControllers": 1,
    }
    assert r.skipped == {
        "ControllerStateChange": 1, "DeterministicValue": 1, "DataplanePermit": 1,
        "ProcessFlowMod": 1, "WaitTime": 1, "CheckInvariants": 1, "PolicyChange": 1, "BlockControllerPair": 1,
        "UnblockControllerPair": 1, "LinkDiscovery": 1, "TrafficInjection": 1, "FrobnicateSwitch": 1,
        "ControlMessageReceive": 1,
    }
    seen = set(r.converted) | set(r.skipped)
    assert set(STS_CLASSES) <= seen  # the fixture has a line for every class STS defines
    assert sum(r.converted.values()) + sum(r.skipped.values()) == 30  # every line accounted for
    for cls in r.skipped:  # each skip says why
        assert r.reasons[cls] and sum(r.reasons[cls].values()) == r.skipped[cls]
    assert "unknown STS event class" in next(iter(r.reasons["FrobnicateSwitch"]))
    assert "pickled dataplane trace" in next(iter(r.reasons["TrafficInjection"]))
    assert "b64_packet" in next(iter(r.reasons["ControlMessageReceive"]))
    assert [e.seq for e in r.trace.events] == list(range(len(r.trace.events)))
    inputs = [e for e in r.trace.events if e.is_input]
    assert [e.id for e in inputs] == [f"i{n}" for n in range(1, 14)]
    assert r.trace.header.extra["sts"]["input_labels"]["e9"] == "i2"
    assert r.inputs == 13


def test_times_are_seconds_since_the_first_line():
    r = imp()
    ts_ = [e.t for e in r.trace.events]
    assert ts_[0] == 0.0 and ts_ == sorted(ts_)  # ConnectToControllers, the first line
    assert [e.t for e in r.trace.events if type(e).kind != "switch_connected"][0] == pytest.approx(0.1)
    assert all(isinstance(t, float) for t in ts_)


# ------------------------------------------------------------------ dependencies
def test_recoveries_depend_on_their_failures():
    r = imp()
    ev = {type(e).kind: e for e in r.trace.events if e.is_input and type(e).kind != "host_migration"}
    assert ev["switch_failure"].switch == "s2" and ev["switch_failure"].deps == ()
    assert ev["switch_recovery"].deps == (ev["switch_failure"].id,)
    assert ev["link_recovery"].deps == (ev["link_failure"].id,)
    assert ev["controller_crash"].controller == "c1"
    assert ev["controller_recovery"].deps == (ev["controller_crash"].id,)
    assert (ev["channel_block"].switch, ev["channel_block"].controller) == ("s3", "c1")
    assert ev["channel_unblock"].deps == (ev["channel_block"].id,)
    # STS cuts one direction of a link (start -> end). This hand-written line recovers it
    # naming the far end first (s2:1 -> s1:2): it recovers the direction that was cut.
    fail, rec = ev["link_failure"], ev["link_recovery"]
    assert (fail.node1, fail.port1, fail.node2, fail.port2, fail.one_way) == ("s1", 2, "s2", 1, True)
    assert (rec.node1, rec.port1, rec.node2, rec.port2, rec.one_way) == ("s1", 2, "s2", 1, True)


def test_host_migrations_are_chained_per_host():
    r = imp()
    m1, m2, m3 = by_kind(r, "host_migration")
    assert (m1.host, m1.old_switch, m1.old_port, m1.new_switch, m1.new_port) == ("h1", "s1", 1, "s3", 3)
    assert (m2.host, m2.deps) == ("h2", ())
    assert m1.deps == ()
    assert (m3.host, m3.old_switch, m3.old_port, m3.deps) == ("h1", "s3", 3, (m1.id,))


def test_migrations_without_host_ids_follow_the_host(tmp_path):
    # The oldest STS format has no host_id: the host is whoever sits at the old location.
    p = write(tmp_path,
              line("HostMigration", "e1", 1, old_ingress_dpid=7, old_ingress_port_no=1, new_ingress_dpid=8,
                   new_ingress_port_no=99),
              line("HostMigration", "e2", 2, old_ingress_dpid=8, old_ingress_port_no=99, new_ingress_dpid=7,
                   new_ingress_port_no=101))
    r = imp(p)
    a, b = by_kind(r, "host_migration")
    assert a.host == b.host and b.deps == (a.id,)
    topo = Topology.from_json(r.trace.header.topology)
    assert topo.host_location(a.host) == ("s7", 1)


def test_dependent_labels_become_deps(tmp_path):
    # STS semantics: A.dependent_labels = [B] means pruning A prunes B.
    p = write(tmp_path,
              line("SwitchFailure", "e1", 1, dpid=1, dependent_labels=["e3", "e9", "e4"]),
              line("WaitTime", "e9", 2, wait_time=1.0),
              line("LinkFailure", "e3", 3, start_dpid=1, start_port_no=1, end_dpid=2, end_port_no=1),
              line("SwitchRecovery", "e4", 4, dpid=1),
              line("LinkRecovery", "e5", 5, start_dpid=1, start_port_no=1, end_dpid=2, end_port_no=1,
                   dependent_labels=["e1"]))
    r = imp(p)
    sf, lf, sr, lr = [e for e in r.trace.events if e.is_input]
    assert lf.deps == (sf.id,)                 # from dependent_labels
    assert sr.deps == (sf.id,)                 # inferred and listed by STS: recorded once
    assert lr.deps == (sf.id, lf.id)           # a backward label lands on the later event, in trace order
    assert any("not converted" in n for n in r.notes)      # e9 (WaitTime) has no netsleuth event
    assert any("earlier event" in n for n in r.notes)


def test_recovery_without_failure_is_noted(tmp_path):
    r = imp(write(tmp_path, line("SwitchRecovery", "e1", 1, dpid=4)))
    (ev,) = r.trace.events
    assert ev.deps == () and any("follows no matching failure" in n for n in r.notes)


def test_prunable_false_inputs_are_listed(tmp_path):
    r = imp(write(tmp_path, line("SwitchFailure", "e1", 1, dpid=1, prunable=False),
                  line("SwitchRecovery", "e2", 2, dpid=1)))
    assert r.trace.header.extra["sts"]["unprunable_inputs"] == ["i1"]


# ------------------------------------------------------------------ internal events
def test_openflow_messages_become_control_events():
    r = imp()
    (to_sw,) = by_kind(r, "of_to_switch")
    (to_ctl,) = by_kind(r, "of_to_controller")
    assert (to_sw.dpid, to_sw.controller, to_sw.msg["type"]) == (1, "c1", "FLOW_MOD")
    assert to_sw.fp == of_fingerprint(to_sw.msg)
    assert to_ctl.msg["type"] == "PACKET_IN" and to_ctl.fp[2] == ("IPv4", "00:00:00:00:00:01",
                                                                  "00:00:00:00:00:02", "10.0.0.1", "10.0.0.2")
    assert to_sw.conn == to_ctl.conn  # same switch, same controller, same connection


def test_without_a_decoder_openflow_is_reported_not_guessed():
    r = import_sts(ALL)
    assert "ControlMessageSend" not in r.converted
    assert r.skipped["ControlMessageReceive"] == 2
    assert any("no OpenFlow decoder" in why for why in r.reasons["ControlMessageReceive"])


def test_undecodable_openflow_is_reported(tmp_path):
    bad = base64.b64encode(b"\x09\x00\x00\x08\x00\x00\x00\x01").decode()  # OpenFlow version 9
    p = write(tmp_path, line("ControlMessageSend", "i1", 1, dpid=1, controller_id="c1", b64_packet=bad))
    r = imp(p)
    assert r.skipped == {"ControlMessageSend": 1}
    # no ConnectToControllers line: the switch was connected at start-up, as in STS; nothing else
    assert [type(e).kind for e in r.trace.events] == ["switch_connected"]
    assert any("no ConnectToControllers line" in n for n in r.notes)
    assert r.reasons["ControlMessageSend"] == {"the OpenFlow bytes could not be decoded": 1}
    assert any("line 1" in n and "version" in n for n in r.notes)


def test_connections_are_renumbered_after_a_switch_failure(tmp_path):
    hello = "AQAACP////8="
    p = write(tmp_path,
              line("ControlMessageReceive", "i1", 1, dpid=1, controller_id="c1", b64_packet=hello),
              line("ControlMessageReceive", "i2", 1, dpid=2, controller_id="c1", b64_packet=hello),
              line("SwitchFailure", "e3", 2, dpid=1),
              line("SwitchRecovery", "e4", 3, dpid=1),
              line("ControlMessageReceive", "i5", 4, dpid=1, controller_id="c1", b64_packet=hello),
              line("ControlMessageReceive", "i6", 4, dpid=2, controller_id="c1", b64_packet=hello))
    conns = [e.conn for e in by_kind(imp(p), "of_to_switch")]
    assert conns == [1, 2, 3, 2]


def test_traffic_drop_and_violation():
    r = imp()
    (tr,) = by_kind(r, "traffic")
    ping = Packet.from_bytes(base64.b64decode("AAAAAAACAAAAAAABCABFAAAcAAAAAEABZt8KAAABCgAAAggA9/0AAQAB"))
    assert (tr.host, tr.dst, tr.packet) == ("h1", "h2", ping.to_json())
    (drop,) = by_kind(r, "dataplane_drop")
    # STS names the sending end (s1 port 2); netsleuth the port the packet enters.
    assert (drop.node, drop.port) == ("s2", 1)
    assert drop.fp == ("IPv4", "00:00:00:00:00:01", "00:00:00:00:00:02", "10.0.0.1", "10.0.0.2")
    (v,) = by_kind(r, "violation")
    assert (v.invariant, v.persistent, v.hosts) == ("loops", True, ("h1", "h2"))
    assert v.details["sts_invariant"] == "InvariantChecker.check_loops" and v.details["sts_label"] == "i23"
    assert r.trace.header.extra["sts"]["invariant_checks"] == ["InvariantChecker.check_loops"]


# ------------------------------------------------------------------ topology
def test_topology_is_inferred_and_marked():
    r = imp()
    assert r.topology_inferred and r.trace.header.extra["sts"]["topology_inferred"] is True
    assert any("topology inferred" in n for n in r.notes)
    topo = Topology.from_json(r.trace.header.topology)  # a loadable topology
    assert [s.name for s in topo.switches] == ["s1", "s2", "s3"]
    assert [(h.name, topo.host_location(h.name)) for h in topo.hosts] == [("h1", ("s1", 1)), ("h2", ("s3", 2))]
    assert topo.host("h1").mac == 1 and topo.neighbor("s1", 2) == ("s2", 1)
    assert r.trace.header.topology_spec == "sts-inferred"


def test_given_topology_names_and_orientation():
    topo = Topology("mine")
    for n in (1, 2, 3):
        topo.add_switch(f"s{n}", n)
    topo.add_host("h1", "00:00:00:00:00:01", "10.0.0.1")
    topo.add_host("h2", "00:00:00:00:00:02", "10.0.0.2")
    topo.add_link("s2", "s1", 1, 2)  # listed s2-first; STS's failure cut s1:2 -> s2:1, and stays that way
    topo.add_link("h1", "s1", 0, 1)
    topo.add_link("h2", "s3", 0, 2)
    r = imp(topology=topo)
    assert not r.topology_inferred and r.trace.header.topology == topo.to_json()
    (lf,) = by_kind(r, "link_failure")
    assert (lf.node1, lf.port1, lf.node2, lf.port2, lf.one_way) == ("s1", 2, "s2", 1, True)
    assert not any("not in the given topology" in n for n in r.notes)


def test_real_early_pox_trace():
    r = imp(POX)
    assert r.converted == {"ConnectToControllers": 1, "HostMigration": 1, "InvariantViolation": 1}
    assert r.skipped["TrafficInjection"] == 2 and r.skipped["ControlMessageReceive"] == 3
    (m,) = by_kind(r, "host_migration")
    assert (m.old_switch, m.old_port, m.new_switch, m.new_port) == ("s1", 4, "s3", 5)
    hosts = r.trace.header.extra["sts"]["hosts"]
    assert hosts["host:[IPAddr('123.123.1.4')]"] == m.host
    topo = Topology.from_json(r.trace.header.topology)
    assert topo.host(m.host).ip == 0x7B7B0104 and topo.host(m.host).mac == 0x123456780104
    (v,) = by_kind(r, "violation")
    assert v.invariant == "sts:check_stale_entries" and v.persistent is False and v.hosts == (m.host,)
    assert r.trace.header.extra["sts"]["controllers"] == {'["127.0.0.1", 6633]': "127.0.0.1:6633"}
    assert any("imported as transient" in n for n in r.notes)


def test_real_two_controller_handshake():
    r = imp(BIGSWITCH)
    assert r.converted == {"ConnectToControllers": 1, "ControlMessageReceive": 5, "ControlMessageSend": 5}
    assert r.trace.header.controller == "c2 + c1"
    # ConnectToControllers: every switch the trace names connects to both controllers first
    connected = by_kind(r, "switch_connected")
    assert [(e.dpid, e.controller) for e in connected] == [(2, "c2"), (2, "c1"), (3, "c2"), (3, "c1")]
    of = [e for e in r.trace.events if type(e).kind.startswith("of_")]
    assert {e.conn for e in of} <= {e.conn for e in connected}
    types = [(type(e).kind, e.dpid, e.controller, e.msg["type"]) for e in of]
    assert types[:2] == [("of_to_switch", 3, "c2", "HELLO"), ("of_to_switch", 2, "c1", "HELLO")]
    reply = of[5]
    assert reply.msg["type"] == "FEATURES_REPLY" and reply.fp == ("FEATURES_REPLY", 3)
    assert len({(e.dpid, e.controller) for e in of}) == len({e.conn for e in of}) == 2


# ------------------------------------------------------------------ round trip
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_round_trips_through_trace_io(tmp_path, path):
    r = imp(path)
    out = tmp_path / "trace.jsonl"
    write_trace(out, r.trace)
    back = read_trace(out)
    assert back == r.trace
    again = tmp_path / "again.jsonl"
    write_trace(again, back)
    assert again.read_bytes() == out.read_bytes()
    # deterministic: importing twice gives the same bytes
    write_trace(again, imp(path).trace)
    assert again.read_bytes() == out.read_bytes()


def test_report_to_json_and_summary():
    r = imp()
    d = json.loads(json.dumps(r.to_json()))
    assert d["events"] == len(r.trace.events) and d["inputs"] == 13 and d["topology_inferred"] is True
    assert d["skipped"]["WaitTime"] == 1 and "WaitTime" in d["reasons"] and d["file"] == "all_classes.trace"
    text = "\n".join(r.summary())
    assert "skipped   FrobnicateSwitch: 1" in text and "converted HostMigration: 3" in text


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize("bad, lineno, problem, fix", [
    ("{not json", 2, "malformed JSON", "fix or delete this line"),
    ("[1, 2]", 2, "not an event object", "Event.to_json"),
    ('{"label": "e2", "time": [1, 0]}', 2, "lacks its \"class\"", "SwitchFailure"),
    ('{"class": "SwitchFailure", "time": [1, 0], "dpid": 1}', 2, "lacks its \"label\"", "unique label"),
    ('{"class": "SwitchFailure", "label": "e2", "time": "soon", "dpid": 1}', 2, "\"time\" must be", "microseconds"),
    ('{"class": "SwitchFailure", "label": "e1", "time": [1, 0], "dpid": 1}', 2, "already used on line 1",
     "concatenated"),
    ('{"class": "SwitchFailure", "label": "e2", "time": [1, 0]}', 2, "lacks the field 'dpid'", "replay_event.py"),
    ('{"class": "SwitchFailure", "label": "e2", "time": [1, 0], "dpid": "two"}', 2, "must be an integer",
     "as a number"),
    ('{"class": "SwitchFailure", "label": "e2", "time": [1, 0], "dpid": 1, "dependent_labels": "e1"}', 2,
     "dependent_labels", "[\"e7\"]"),
    ('{"format": "netsleuth-trace", "version": 1}', 2, "already a netsleuth trace", "read it with netsleuth"),
])
def test_malformed_lines_name_the_line_and_the_fix(tmp_path, bad, lineno, problem, fix):
    p = write(tmp_path, line("SwitchFailure", "e1", 1, dpid=1), bad)
    with pytest.raises(TraceFormatError) as err:
        import_sts(p)
    assert f"events.trace:{lineno}:" in err.value.problem and problem in err.value.problem
    assert fix in err.value.fix


def test_truncated_last_line_says_so(tmp_path):
    p = tmp_path / "events.trace"
    p.write_text(line("SwitchFailure", "e1", 1, dpid=1) + "\n" + '{"class": "SwitchRec')
    with pytest.raises(TraceFormatError, match=r"events.trace:2: malformed JSON") as err:
        import_sts(p)
    assert "cut off" in err.value.fix


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(TraceFormatError, match="does not exist"):
        import_sts(tmp_path / "nope.trace")
    with pytest.raises(TraceFormatError, match="contains no events"):
        import_sts(write(tmp_path, "", "  "))


def test_blank_lines_are_ignored_and_noted(tmp_path):
    r = imp(write(tmp_path, line("SwitchFailure", "e1", 1, dpid=1), "", line("SwitchRecovery", "e2", 2, dpid=1)))
    assert len(r.trace.events) == 2 and "ignored 1 blank line(s)" in r.notes


# ------------------------------------------------------------------ layering
def test_importer_imports_only_model_and_trace():
    pkg = Path(__file__).parents[1] / "netsleuth" / "trace" / "importers"
    allowed = ("netsleuth.model", "netsleuth.trace", "netsleuth.errors")
    for src in pkg.glob("*.py"):
        for node in ast.walk(ast.parse(src.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("netsleuth"):
                assert node.module.startswith(allowed) or (node.module == "netsleuth"
                                                           and [a.name for a in node.names] == ["__version__"]), \
                    f"{src.name} imports {node.module}"
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("netsleuth") for a in node.names)
    assert ts.EVENT_KINDS  # the schema is what the importer targets


@pytest.mark.real
def test_cli_import_writes_a_trace_netsleuth_reads(tmp_path):
    import subprocess
    import sys

    from netsleuth.trace.io import read_trace

    src = Path(__file__).parent / "data" / "sts" / "bigswitch_alpha_mcs_excerpt.trace"
    out = tmp_path / "t.jsonl"
    proc = subprocess.run([sys.executable, "-m", "netsleuth.cli", "import", "sts", str(src), "--out", str(out),
                           "--json"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    import json as _json
    report = _json.loads(proc.stdout)
    trace = read_trace(out)
    assert sum(report["converted"].values()) >= len([e for e in trace.events if e.is_input])
    # the real OpenFlow bytes in that STS recording were decoded by netsleuth's codec
    assert any(e.kind in ("of_to_switch", "of_to_controller") for e in trace.events)
