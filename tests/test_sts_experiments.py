"""Real STS experiments, imported as STS ran them, checked against STS's own verdicts.

Fixtures: folders of ``tests/data/sts/`` copied unchanged from the public STS
experiments repository (its README names the repository, paths and commit):
each experiment's trace with the config file that names its topology and
invariant check.

* ``new_pyretic_loop``: Pyretic's hub on STS's 3-switch mesh; one link
  failure (STS cuts only the s1:1 -> s3:2 direction) and STS's loop check
  fires.
* ``fuzz_pyretic_mesh_proactive_firewall_no_close_check_loop``: Pyretic's
  firewall; host migrations and link flaps, three recorded loop violations.
* ``onos_controller_id_bug``: two ONOS instances on a 2-mesh; the fuzzer
  crashes and restarts them, and STS's liveness check finally finds c1's
  process gone (no input crashed it then). Its config is Python 2.
* ``pox_broken_floyd``: POX's l2_multi with a broken Floyd-Warshall on a
  3-mesh; STS's loop check fires.
* ``retrigger_debug_branch_loop``: POX's l2_multi on a 2-mesh; STS's
  blackhole check reports host h2's own port, where the tables deliver.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from netsleuth.cli import main
from netsleuth.invariants import registry
from netsleuth.jobs.invariants_on_trace import invariants_on_trace
from netsleuth.jobs.sts_agreement import sts_agreement
from netsleuth.model.topology import parse_topo
from netsleuth.openflow.codec import decode, msg_to_json
from netsleuth.trace import schema as ts
from netsleuth.trace.importers import import_sts
from netsleuth.trace.importers.sts_config import read_sts_config, sts_topology_spec
from netsleuth.trace.io import read_trace, write_trace
from netsleuth.world.rebuild import rebuild

DATA = Path(__file__).parent / "data" / "sts"
PYRETIC_LOOP = DATA / "new_pyretic_loop"
FIREWALL = DATA / "fuzz_pyretic_mesh_proactive_firewall_no_close_check_loop"
ONOS = DATA / "onos_controller_id_bug"
FLOYD = DATA / "pox_broken_floyd"
EXPERIMENTS = [PYRETIC_LOOP, FIREWALL, ONOS, FLOYD]
RETRIGGER = DATA / "retrigger_debug_branch_loop"
POX_EXCERPT = DATA / "pox_4mesh_blackhole_excerpt.trace"  # early STS: OpenFlow only as fingerprints


def imported(src: Path, tmp_path: Path) -> Path:
    report = import_sts(src, decode_openflow=lambda b: msg_to_json(decode(b)))
    out = tmp_path / f"{src.name}.jsonl"
    write_trace(out, report.trace)
    return out


# ------------------------------------------------------------------ STS's topologies
def test_sts_mesh_numbers_ports_as_sts_fully_meshed_links():
    t = parse_topo("sts-mesh,3")
    links = {(lk.node1, lk.port1, lk.node2, lk.port2) for lk in t.links}
    # the host on each switch's last port; switch pairs take their highest free ports
    assert links == {("h1", 0, "s1", 3), ("h2", 0, "s2", 3), ("h3", 0, "s3", 3),
                     ("s1", 2, "s2", 2), ("s1", 1, "s3", 2), ("s2", 1, "s3", 1)}
    h1 = t.host("h1")
    assert (h1.mac, h1.ip) == (0x123456780103, 0x7B7B0103)  # 12:34:56:78:01:03, 123.123.1.3
    assert [lk.port2 for lk in parse_topo("sts-mesh,num_switches=2").links] == [2, 2, 1]
    with pytest.raises(Exception, match="at most 255"):
        parse_topo("sts-mesh,300")


def test_sts_fattree_numbers_switches_bottom_up_with_portland_hosts():
    t = parse_topo("sts-fattree,4")
    assert (len(t.switches), len(t.hosts), len(t.links)) == (20, 16, 48)
    # edges s1..s8 (hosts on ports 1..2), aggregations s9..s16, cores s17..s20
    assert t.host_location("h3") == ("s2", 1)
    assert t.neighbor("s1", 3) == ("s9", 1) and t.neighbor("s2", 4) == ("s10", 2)
    assert t.neighbor("s9", 3) == ("s17", 1) and t.neighbor("s10", 4) == ("s20", 1)
    assert t.neighbor("s11", 3) == ("s17", 2)  # pod 1's first aggregation: core port = pod + 1
    h = t.host("h5")  # pod 1, position 0, port 1
    assert (h.mac, h.ip) == (0x000000010001, 0x7B010001)


# ------------------------------------------------------------------ config files
def test_configs_are_parsed_never_run(tmp_path):
    marker = tmp_path / "ran"
    (tmp_path / "orig_config.py").write_text(
        "import os\n"
        f"open({str(marker)!r}, 'w').write('x')\n"
        'print "python 2"\n'
        "topology_class = FatTree\n"
        'topology_params = "num_pods=2, gui=False"\n'
        "controllers = [ControllerConfig('./pox.py'), ControllerConfig('x', label='backup')]\n"
        "simulation_config = SimulationConfig(controller_configs=controllers, topology_class=topology_class,\n"
        "                                     topology_params=topology_params)\n"
        "control_flow = Fuzzer(simulation_config, invariant_check_name='check_for_blackholes_or_connectivity')\n"
        "raise RuntimeError('do not run me')\n")
    cfg = read_sts_config(tmp_path)
    assert not marker.exists()
    assert (cfg.topology_class, cfg.invariant_check, cfg.controllers) == (
        "FatTree", "check_for_blackholes_or_connectivity", ["c1", "backup"])
    assert sts_topology_spec(cfg) == ("sts-fattree,2", [])
    assert cfg.notes == ["orig_config.py: left out Python 2 line(s) 3 to parse it"]


def test_the_onos_config_is_python_2_and_still_read():
    cfg = read_sts_config(ONOS)
    assert sts_topology_spec(cfg)[0] == "sts-mesh,2"
    assert cfg.invariant_check == "InvariantChecker.check_liveness" and cfg.controllers == ["c1", "c2"]
    assert any("Python 2" in n for n in cfg.notes)


@pytest.mark.parametrize("src", EXPERIMENTS, ids=lambda p: p.name)
def test_folder_and_trace_file_import_the_same(src):
    by_dir = import_sts(src)
    by_file = import_sts(src / "events.trace")
    assert by_dir.trace.header.topology == by_file.trace.header.topology
    assert not by_dir.topology_inferred and by_dir.trace.header.topology_spec.startswith("sts-mesh,")


# ------------------------------------------------------------------ liveness as STS meant it
@pytest.mark.parametrize("src", EXPERIMENTS, ids=lambda p: p.name)
def test_no_liveness_false_positive(src, tmp_path):
    trace = imported(src, tmp_path)
    d = invariants_on_trace(trace, "liveness")
    messages = [v["message"] for v in d["violations"]]
    assert not any("not connected" in m for m in messages), messages
    # the only liveness finding is the one STS itself recorded: ONOS's c1 exited
    assert messages == (["controller c1 is not running"] if src == ONOS else [])


def test_connect_to_controllers_connects_every_switch_to_every_controller(tmp_path):
    t = read_trace(imported(ONOS, tmp_path))
    first = [e for e in t.events if isinstance(e, ts.SwitchConnected)][:4]
    assert [(e.dpid, e.controller) for e in first] == [(1, "c1"), (1, "c2"), (2, "c1"), (2, "c2")]


def test_controller_crashes_are_not_liveness_findings_and_recoveries_reconnect(tmp_path):
    t = read_trace(imported(ONOS, tmp_path))
    crash = next(e for e in t.events if isinstance(e, ts.ControllerCrash))
    recovery = next(e for e in t.events if isinstance(e, ts.ControllerRecovery) and crash.id in e.deps)
    during = rebuild(t.header, t.events, lambda e: e.seq > crash.seq).world
    assert not during.controllers_alive[crash.controller]
    assert registry.check(during.view(), registry.resolve(["liveness"])) == []  # crashed by an input, on purpose
    after = rebuild(t.header, t.events, lambda e: e.seq > recovery.seq + 2).world
    assert after.controllers_alive[crash.controller]
    assert {c.dpid for c in after.connections.values() if c.up and c.controller == crash.controller} == {1, 2}
    exited = [e for e in t.events if isinstance(e, ts.ControllerEvent)]
    assert [(e.controller, e.what) for e in exited] == [("c1", "exited")] and "e785" in exited[0].detail


# ------------------------------------------------------------------ agreement with STS's verdicts
@pytest.mark.parametrize("src, check, n", [
    (PYRETIC_LOOP, "loops", 1), (FIREWALL, "loops", 3), (ONOS, "liveness", 1), (FLOYD, "loops", 1)],
    ids=lambda x: x.name if isinstance(x, Path) else str(x))
def test_every_recorded_violation_is_confirmed(src, check, n, tmp_path):
    d = sts_agreement(imported(src, tmp_path))
    assert d["sts_violations"] == n and d["all_agree"] and d["disagree"] == 0
    for r in d["violations"]:
        assert r["status"] == "agrees" and r["netsleuth_checks"] == [check]
        assert r["netsleuth_findings"] and r["netsleuth_findings"][0]["invariant"] == check
        # a loop is judged over the rebuilt tables, at the place STS named when it named one; ONOS's
        # controller is down only through the exit the import read off STS's own check
        assert r["basis"] == ("recording" if check == "liveness" else "tables")
        assert r.get("same_place") is (True if src in (PYRETIC_LOOP, FIREWALL) else None)
    assert d["agree_independent"] + d["agree_from_recording"] == d["agree"] == n


def test_a_loop_found_elsewhere_is_no_agreement(tmp_path):
    """STS's loop moved (its visits rewritten to s1 alone): netsleuth's loop through s1, s2, s3 is not
    at that place, so the verdict is a disagreement that names both places."""
    path = imported(PYRETIC_LOOP, tmp_path)
    t = read_trace(path)
    events = [dataclasses.replace(e, details={**e.details, "violations": [
        re.sub(r"'visits': \[[\d, ]+\]", "'visits': [100001, 100002]", x) for x in e.details["violations"]]})
        if isinstance(e, ts.Violation) and "sts_label" in e.details else e for e in t.events]
    moved = tmp_path / "moved.jsonl"
    write_trace(moved, ts.Trace(t.header, events))
    (r,) = sts_agreement(moved)["violations"]
    assert r["sts_loop_switches"] == ["s1"] and r["netsleuth_findings"]
    assert (r["status"], r["same_place"]) == ("disagrees", False)
    assert "looping through s1, s2, s3" in r["reason"] and "a loop through s1" in r["reason"], r["reason"]


def test_pyretic_loop_runs_over_the_direction_sts_left_up(tmp_path):
    path = imported(PYRETIC_LOOP, tmp_path)
    t = read_trace(path)
    (lf,) = [e for e in t.events if isinstance(e, ts.LinkFailure)]
    assert (lf.node1, lf.port1, lf.node2, lf.port2, lf.one_way) == ("s1", 1, "s3", 2, True)
    (r,) = sts_agreement(path)["violations"]
    assert r["sts_loop_switches"] == ["s1", "s2", "s3"]  # STS's visits: s1:1, s2:2, s3:1
    assert any(set(f["switches"]) == {"s1", "s2", "s3"} for f in r["netsleuth_findings"])
    at_violation = lambda e: isinstance(e, ts.Violation)  # noqa: E731
    world = rebuild(t.header, t.events, at_violation).world
    view = world.view()
    assert view.peer("s1", 1) is None and view.peer("s3", 2) == ("s1", 1)  # one way cut, the other up
    assert not world.switches["s1"].ports[1].link_up and world.switches["s3"].ports[2].link_up
    # cutting both directions (netsleuth's own link failure) leaves no cycle: the loop needs STS's semantics
    both = [dataclasses.replace(e, one_way=False) if isinstance(e, ts.LinkFailure) else e for e in t.events]
    assert registry.check(rebuild(t.header, both, at_violation).world.view(), registry.resolve(["loops"])) == []


def test_one_way_is_written_only_when_true(tmp_path):
    t = read_trace(imported(PYRETIC_LOOP, tmp_path))
    line = next(json.loads(x) for x in (tmp_path / "new_pyretic_loop.jsonl").read_text().splitlines()
                if '"link_failure"' in x)
    assert line["one_way"] is True
    two_way = ts.event_to_json(ts.LinkFailure(seq=0, t=0.0, id="i1", node1="s1", port1=1, node2="s3", port2=2))
    assert "one_way" not in two_way and ts.event_from_json(two_way).one_way is False
    assert t.events


def test_cli_at_sts_violation_writes_result_json(tmp_path, capsys):
    trace = imported(FIREWALL, tmp_path)
    assert main(["invariants", str(trace), "--at-sts-violation", "--out", str(tmp_path / "o")]) == 0
    text = capsys.readouterr().out
    assert "3 violation(s) recorded by STS; netsleuth agrees with 3" in text
    d = json.loads((tmp_path / "o" / "result.json").read_text())
    assert [(r["sts_label"], r["status"], r["persistent"]) for r in d["violations"]] == [
        ("e372", "agrees", False), ("e634", "agrees", False), ("e635", "agrees", True)]


def test_a_disagreement_says_why(tmp_path, capsys):
    trace = imported(RETRIGGER, tmp_path)
    assert main(["invariants", str(trace), "--at-sts-violation", "--json"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert d["sts_violations"] == 8 and d["by_status"] == {"disagrees": 8}
    r = d["violations"][0]
    assert r["sts_check"] == "check_for_blackholes_or_connectivity" and r["netsleuth_checks"] == ["blackholes"]
    assert r["sts_blackhole_ports"] == [["s2", 2, "h2"]] and r["netsleuth_finding_count"] == 0
    assert "s2:2 (host h2's port), where the rebuilt tables output to the host" in r["reason"]


def test_cli_says_why_it_cannot_agree(tmp_path, capsys):
    trace = imported(POX_EXCERPT, tmp_path)
    assert main(["invariants", str(trace), "--at-sts-violation", "--json"]) == 1
    d = json.loads(capsys.readouterr().out)
    (r,) = d["violations"]
    assert r["status"] == "no-counterpart" and "check_stale_entries" in r["reason"]
    assert main(["invariants", str(trace), "--at-sts-violation", "--at", "3"]) == 2
    assert capsys.readouterr().err.startswith("error: --at-sts-violation")


def test_a_trace_not_from_sts_is_refused(tmp_path, capsys):
    t = read_trace(imported(FLOYD, tmp_path))
    plain = tmp_path / "plain.jsonl"
    header = ts.TraceHeader(**{f: getattr(t.header, f) for f in t.header.__dataclass_fields__ if f != "extra"})
    write_trace(plain, ts.Trace(header, [e for e in t.events if not isinstance(e, ts.Violation)]))
    assert main(["invariants", str(plain), "--at-sts-violation"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "was not imported from STS" in err and "-- fix: import" in err


# ------------------------------------------------------------------ races without OpenFlow bodies
@pytest.mark.parametrize("command", ["races", "cluster"])
def test_races_on_fingerprint_only_traces_say_so(command, tmp_path, capsys):
    trace = imported(POX_EXCERPT, tmp_path)
    assert main([command, str(trace)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds no OpenFlow message bodies" in err and "fingerprints" in err
    assert "-- fix: race an STS trace whose ControlMessage lines carry b64_packet" in err


def test_moved_hosts_sit_on_the_ports_sts_recorded(tmp_path):
    t = read_trace(imported(FIREWALL, tmp_path))
    moves = [e for e in t.events if isinstance(e, ts.HostMigration)]
    # STS keeps a moved host's old port (down), so h3 goes s3:3 -> s3:4 -> s3:5 -> s1:4
    assert [(e.host, e.new_switch, e.new_port) for e in moves[:3]] == [("h3", "s3", 4), ("h3", "s3", 5),
                                                                         ("h3", "s1", 4)]
    for move in moves[:3]:
        world = rebuild(t.header, t.events, lambda e, m=move: e.seq > m.seq).world
        assert world.host_at["h3"] == (move.new_switch, move.new_port)
