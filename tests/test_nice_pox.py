"""Unmodified POX components inside the model checker (``check pox:COMPONENTS``), on a real POX core.

The components are POX gar's own (tests/pox_checkout.py), run by the POX
handler server; every assertion about their state or their messages is
about what POX's code did: its Connection objects parsed the model
switches' bytes, its l2_learning decided, its libopenflow packed the reply.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from handler_calls import call, run

from netsleuth.model.actions import Output
from netsleuth.model.ofdp import ofp
from netsleuth.model.packet import Packet, icmp_echo
from netsleuth.nice import messages as m
from netsleuth.nice.pox_host import load_pox_app, shutdown_servers

pytestmark = pytest.mark.real

SPEC = "pox:forwarding.l2_learning"
DATA = Path(__file__).parent / "data" / "pox_ext"
H1, H2 = 0x0A0000000001, 0x0A0000000002


@pytest.fixture
def with_ext(pox_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The checkout with a component of the tests' own in ext/ (POX's files linked, not copied)."""
    home = tmp_path / "pox"
    (home / "ext").mkdir(parents=True)
    (home / "pox.py").symlink_to(pox_home / "pox.py")
    (home / "pox").symlink_to(pox_home / "pox", target_is_directory=True)
    (home / "ext" / "moving_l2.py").write_text((DATA / "moving_l2.py").read_text())
    monkeypatch.setenv("NETSLEUTH_POX", str(home))
    return home


@pytest.fixture
def l2(pox_env: Path):
    cls = load_pox_app(SPEC)
    yield cls
    shutdown_servers()
    assert not cls._server.alive()


def find(key, name):
    """The frozen value of the first attribute ``name`` anywhere in a state key."""
    if isinstance(key, tuple):
        if len(key) == 2 and key[0] == name:
            return key[1]
        for part in key:
            hit = find(part, name)
            if hit is not None:
                return hit
    return None


def mac_to_port(app) -> dict:
    """l2_learning's LearningSwitch.macToPort, as the server froze it off the real object."""
    table = find(app.skey, "macToPort")
    return {} if table is None else {mac: port for (_, mac), port in table[2]}


def test_the_real_l2_learning_learns_floods_and_installs(l2):
    srv = l2._server
    assert srv.alive() and srv.apps == ["l2_learning"]
    app = l2()
    app, out = run(app, lambda a: a.datapath_join(1, (1, 2, 3)))
    assert out == [] and mac_to_port(app) == {}  # ConnectionUp: a LearningSwitch listens, nothing sent
    req = icmp_echo(H1, H2, "10.0.0.1", "10.0.0.2", 1, 1)
    a1, out = run(app, lambda a: a.packet_in(1, 1, ofp.OFPR_NO_MATCH, req.frame_len(), m.NO_BUFFER, req))
    # unknown destination: POX floods the packet it was given back out, with its bytes
    assert out == [(1, m.PacketOut(m.NO_BUFFER, 1, (Output(ofp.OFPP_FLOOD, 0),), req.to_bytes()))]
    assert mac_to_port(a1) == {"0a:00:00:00:00:01": 1}
    assert mac_to_port(app) == {}  # copy-on-write: the parent state's POX world is untouched
    rep = icmp_echo(H2, H1, "10.0.0.2", "10.0.0.1", 1, 1, reply=True)
    a2, out = run(a1, lambda a: a.packet_in(1, 2, ofp.OFPR_NO_MATCH, rep.frame_len(), m.NO_BUFFER, rep))
    # known destination: a flow for the exact packet, then (libopenflow packs a FLOW_MOD's unbuffered data so)
    # a barrier and the packet itself through the table
    ((d1, fm), (d2, barrier), (d3, po)) = out
    assert (d1, d2, d3) == (1, 1, 1) and isinstance(fm, m.FlowMod) and fm.command == ofp.OFPFC_ADD
    assert fm.actions == (Output(1, 0),) and fm.idle_timeout == 10 and fm.hard_timeout == 30
    assert (fm.match.dl_src, fm.match.dl_dst, fm.match.in_port, fm.match.wildcards) == (H2, H1, 2, 0)
    assert barrier == m.Barrier()
    assert po == m.PacketOut(m.NO_BUFFER, 2, (Output(ofp.OFPP_TABLE, 0),), rep.to_bytes())
    assert mac_to_port(a2) == {"0a:00:00:00:00:01": 1, "0a:00:00:00:00:02": 2}
    # the same handler call in an equal state is memoized: it does not cross the pipe again
    calls = srv.calls
    again, out2 = run(a1, lambda a: a.packet_in(1, 2, ofp.OFPR_NO_MATCH, rep.frame_len(), m.NO_BUFFER, rep))
    assert srv.calls == calls and again.key() == a2.key() and out2 == out


def test_recoco_timers_are_the_models_timers_and_fire_the_real_discovery(pox_env):
    """openflow.discovery's LLDP sender and l2_multi's expiry are recoco timers: pending model timers, and firing
    the sender's runs discovery's own code, which sends the next port's LLDP frame (round robin, as recoco would)."""
    cls = load_pox_app("pox:openflow.discovery forwarding.l2_multi")
    app = cls()
    app, api = call(app, lambda a: a.datapath_join(1, (1, 2)))
    timers = ["Discovery._expire_links", "LLDPSender._timer_handler", "WaitingPath.expire_waiting_paths"]
    assert api.timers == timers
    # on ConnectionUp discovery installs its LLDP-to-controller rule and sends one LLDP frame per port
    fm = api.out[0][1]
    assert isinstance(fm, m.FlowMod) and fm.match.dl_type == 0x88CC
    assert fm.actions == (Output(ofp.OFPP_CONTROLLER, 0xFFFF),)
    assert [(type(x).__name__, x.actions) for _, x in api.out[1:]] == [
        ("PacketOut", (Output(1, 0),)), ("PacketOut", (Output(2, 0),))]
    sent = []
    for _ in range(4):
        app, api = call(app, lambda a: a.timer("LLDPSender._timer_handler"))
        ((dpid, po),) = api.out
        assert Packet.from_bytes(po.data).eth_type == 0x88CC and api.timers == timers  # recurring: still pending
        sent.append(po.actions[0].port)
    assert sent == [2, 1, 2, 1]
    shutdown_servers()


def check(main, capsys, *args: str) -> tuple[int, dict]:
    code = main(["check", SPEC, *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


COUNTS = ("transitions", "unique_states", "revisits", "violation_counts", "completed")


@pytest.mark.slow
def test_mobile_finds_the_migration_blackhole_with_equal_counts_in_both_orders(pox_env, tmp_path, capsys):
    """NICE's BUG-I in POX's l2_learning: after h2 moves, s2's entry for h2 still outputs to the old port."""
    from netsleuth.cli import main

    runs = {}
    for order in ("forward", "reverse"):
        code, d = check(main, capsys, "--scenario", "mobile", "--order", order, "--out", str(tmp_path / order))
        assert code == 1 and d["completed"], d
        runs[order] = d
    fwd, rev = runs["forward"], runs["reverse"]
    assert {k: fwd[k] for k in COUNTS} == {k: rev[k] for k in COUNTS}
    assert fwd["violation_counts"]["NoBlackHolesMobile"] >= 1 and fwd["unique_states"] > 1000
    v = fwd["violations"][0]
    assert v["property"] == "NoBlackHolesMobile" and "never delivered" in v["message"] and v["hosts"] == ["h1", "h2"]
    steps = [json.loads(line) for line in Path(v["counterexample"]).read_text().splitlines()[1:]]
    whats = [s.get("what", "") for s in steps if s.get("kind") == "mc_step"]
    assert any("h2 moves" in w for w in whats) and any("controller handles" in w for w in whats)
    # the counterexample re-executes on a fresh POX core and violates the property again
    assert main(["replay", v["counterexample"], "--out", str(tmp_path / "replay")]) == 0
    r = json.loads((tmp_path / "replay" / "replay.json").read_text())
    assert r["mode"] == "in-process model" and r["reproduced"] is True


def test_without_migration_l2_learning_explores_clean(pox_env, capsys):
    from netsleuth.cli import main

    props = "NoBlackHoles,NoForwardingLoops,NoBlackHolesMobile"
    code, fwd = check(main, capsys, "--scenario", "pings", "--property", props)
    assert code == 0 and fwd["completed"] and fwd["violations"] == [] and fwd["unique_states"] > 100
    code, rev = check(main, capsys, "--scenario", "pings", "--property", props, "--order", "reverse")
    assert code == 0 and {k: fwd[k] for k in COUNTS} == {k: rev[k] for k in COUNTS}


def test_a_hub_configured_on_connection_up_explores_the_move_clean(pox_env, capsys):
    """forwarding.hub installs its flood rule on ConnectionUp: applied with the handshake, before the search,
    the moved host is still reached (every switch floods), and both switches keep their own identity."""
    from netsleuth.cli import main

    assert main(["check", "pox:forwarding.hub", "--scenario", "mobile", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["completed"] and d["violations"] == [] and d["unique_states"] > 10
    shutdown_servers()


@pytest.mark.parametrize(("spec", "problem"), [
    ("pox:forwarding.l2_lernin", "error: POX component 'forwarding.l2_lernin' does not exist in "),
    ("pox:forwarding.l2_learning --no-such-option", "error: POX component 'forwarding.l2_learning' does not "
                                                    "take these options: "),
])
def test_a_bad_component_is_one_line_and_exit_2(pox_env, capsys, spec, problem):
    from netsleuth.cli import main

    assert main(["check", spec, "--scenario", "mobile"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(problem) and "-- fix: " in err and len(err.strip().splitlines()) == 1, err
    shutdown_servers()


@pytest.mark.slow
def test_a_component_that_forgets_a_moved_host_explores_clean_in_both_orders(with_ext, capsys):
    """l2_learning plus NICE's fix (delete the flows towards a MAC that shows up on a new port), from ext/."""
    from netsleuth.cli import main

    runs = []
    for order in ("forward", "reverse"):
        assert main(["check", "pox:moving_l2", "--scenario", "mobile", "--order", order, "--json"]) == 0
        runs.append(json.loads(capsys.readouterr().out))
    fwd, rev = runs
    assert fwd["completed"] and fwd["violations"] == [] and fwd["properties"] == ["NoBlackHolesMobile"]
    assert {k: fwd[k] for k in COUNTS} == {k: rev[k] for k in COUNTS} and fwd["unique_states"] > 1000
    shutdown_servers()


@pytest.mark.slow
def test_the_blackhole_as_inputs_reproduces_against_the_real_pox(pox_env, tmp_path, capsys):
    """The model's counterexample, turned into inputs, makes the real POX process install the same rules
    and blackhole h1 -> h2 at s2; without the move, the real l2_learning delivers."""
    import argparse

    from netsleuth.cli import main
    from netsleuth.nice import cex_inputs_cli
    from netsleuth.trace import schema as ts
    from netsleuth.trace.io import read_trace, write_trace

    code, d = check(main, capsys, "--scenario", "mobile", "--strategy", "pkt-seq", "--stop-at-first",
                    "--out", str(tmp_path / "check"))
    assert code == 1
    p = argparse.ArgumentParser()
    cex_inputs_cli.add_commands(p.add_subparsers(dest="command", required=True))
    conv = tmp_path / "inputs.jsonl"
    args = p.parse_args(["cex-inputs", d["violations"][0]["counterexample"], "--out", str(conv), "--json"])
    assert args.func(args) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["kinds"] == ["traffic", "traffic", "host_migration", "traffic", "traffic"]
    assert read_trace(conv).header.controller == SPEC and rep["expected_flow_mods"] > 0
    assert main(["replay", str(conv), "--out", str(tmp_path / "replay")]) == 0
    r = json.loads((tmp_path / "replay" / "replay.json").read_text())
    assert r["reproduced"] is True and "mode" not in r  # the real POX, not the model
    assert r["replays"][0]["expected"] == r["replays"][0]["matched"] == rep["expected_flow_mods"]
    trace = read_trace(conv)
    kept = [e for e in trace.events if not isinstance(e, ts.HostMigration)]
    write_trace(tmp_path / "no-move.jsonl", ts.Trace(trace.header, kept))
    assert main(["replay", str(tmp_path / "no-move.jsonl"), "--out", str(tmp_path / "replay2")]) == 1
    assert json.loads((tmp_path / "replay2" / "replay.json").read_text())["reproduced"] is False
