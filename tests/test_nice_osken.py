"""Unmodified os-ken 1.4.1 apps inside the model checker (``osken:MODULE``), via the handler server.

The app under test is the real ``os_ken.app.simple_switch`` running in the
controller environment (.venv-controller); every assertion about its state
or its messages is about what that code did.
"""

from __future__ import annotations

import pytest
from handler_calls import run

from netsleuth.errors import NetsleuthError
from netsleuth.model.actions import Output
from netsleuth.model.match import Match
from netsleuth.model.ofdp import ofp
from netsleuth.model.packet import arp_request, icmp_echo
from netsleuth.nice import messages as m
from netsleuth.nice import osken_host
from netsleuth.nice.app import ControllerAPI
from netsleuth.nice.explore import Explorer, SearchOptions
from netsleuth.nice.osken_host import HandlerServer, OsKenApp, OsKenHostError, load_osken_app, shutdown_servers
from netsleuth.nice.property_registry import resolve
from netsleuth.nice.scenarios import build_config
from netsleuth.nice.system import System

pytestmark = pytest.mark.real

SPEC = "osken:os_ken.app.simple_switch"
H1, H2 = 0x0A0000000001, 0x0A0000000002


@pytest.fixture(scope="module")
def app_cls():
    cls = load_osken_app(SPEC)
    yield cls
    shutdown_servers()
    assert not cls._server.alive()


def mac_to_port(app):
    """SimpleSwitch.mac_to_port as the server read it off the real app instance."""
    ((name, attrs),) = app.skey
    assert name == "SimpleSwitch"
    fields = dict(attrs[1])
    return {dpid: dict(table[1]) for dpid, table in fields["mac_to_port"][1]}


def test_server_starts_in_the_controller_env_and_hosts_the_real_app(app_cls):
    srv = app_cls._server
    assert srv.alive() and srv.apps == ["os_ken.app.simple_switch.SimpleSwitch"]
    assert ".venv-controller" in srv.python or "NETSLEUTH_CONTROLLER_PYTHON" in __import__("os").environ
    app = app_cls()
    assert mac_to_port(app) == {}  # SimpleSwitch.__init__: self.mac_to_port = {}


def test_packet_ins_learn_like_simple_switch_and_flow_mods_decode(app_cls):
    app = app_cls()
    app, out = run(app, lambda a: a.datapath_join(1, (1, 2, 3)))
    assert out == [] and app.joined() == (1,)
    assert [p for p, _ in app.dps[0][1]] == [1, 2, 3]  # datapath.ports, from the FEATURES_REPLY
    req = icmp_echo(H1, H2, "10.0.0.1", "10.0.0.2", 1, 1)
    a1, out = run(app, lambda a: a.packet_in(1, 1, ofp.OFPR_NO_MATCH, req.frame_len(), 0, req))
    # unknown destination: flood the buffered packet, no rule
    assert out == [(1, m.PacketOut(0, 1, (Output(ofp.OFPP_FLOOD, 65509),), b""))]
    assert mac_to_port(a1) == {1: {"0a:00:00:00:00:01": 1}}
    assert mac_to_port(app) == {}  # copy-on-write: the parent state's app is untouched
    rep = icmp_echo(H2, H1, "10.0.0.2", "10.0.0.1", 1, 1, reply=True)
    a2, out = run(a1, lambda a: a.packet_in(1, 2, ofp.OFPR_NO_MATCH, rep.frame_len(), 3, rep))
    assert mac_to_port(a2) == {1: {"0a:00:00:00:00:01": 1, "0a:00:00:00:00:02": 2}}
    assert [type(msg) for _, msg in out] == [m.FlowMod, m.PacketOut]
    fm = out[0][1]
    assert fm.command == ofp.OFPFC_ADD and fm.priority == ofp.OFP_DEFAULT_PRIORITY
    assert fm.match == Match.build(in_port=2, dl_src=H2, dl_dst=H1)  # simple_switch's exact L2 match
    assert fm.actions == (Output(1, 65509),)
    assert fm.flags == ofp.OFPFF_SEND_FLOW_REM and fm.idle_timeout == fm.hard_timeout == 0
    assert fm.buffer_id == m.NO_BUFFER
    assert out[1][1] == m.PacketOut(3, 2, (Output(1, 65509),), b"")
    # the same handler call in an equal state is answered from the memo, not the server
    calls = app_cls._server.calls
    a3, out3 = run(a1, lambda a: a.packet_in(1, 2, ofp.OFPR_NO_MATCH, rep.frame_len(), 3, rep))
    assert app_cls._server.calls == calls and out3 == out and a3.key() == a2.key()
    # a switch that leaves: simple_switch keeps what it learned (it has no handler for it)
    a4, out4 = run(a2, lambda a: a.datapath_leave(1))
    assert out4 == [] and a4.joined() == () and mac_to_port(a4) == mac_to_port(a2)
    assert app_cls._server.handler_errors == []


def test_broadcast_and_unbuffered_packet_in(app_cls):
    app, _ = run(app_cls(), lambda a: a.datapath_join(7, (1, 2)))
    garp = arp_request(H2, "10.0.0.2", "10.0.0.2")
    a, out = run(app, lambda x: x.packet_in(7, 2, ofp.OFPR_NO_MATCH, garp.frame_len(), m.NO_BUFFER, garp))
    # no buffer: simple_switch sends the frame's bytes back in the PACKET_OUT
    assert out == [(7, m.PacketOut(m.NO_BUFFER, 2, (Output(ofp.OFPP_FLOOD, 65509),), garp.to_bytes()))]
    assert mac_to_port(a) == {7: {"0a:00:00:00:00:02": 2}}
    # PORT_STATUS reaches the app's handler (it only logs); os-ken's ofp_handler updates datapath.ports
    b, out = run(a, lambda x: x.port_status(7, ofp.OFPPR_MODIFY, 2, False))
    assert out == [] and b.skey == a.skey
    state_of = {no: fields[4] for no, fields in b.dps[0][1]}
    assert state_of == {1: 0, 2: ofp.OFPPS_LINK_DOWN}
    c, _ = run(b, lambda x: x.port_status(7, ofp.OFPPR_DELETE, 2, False))
    assert [no for no, _ in c.dps[0][1]] == [1]


def _search(app_cls, scenario, strategy):
    config = build_config(SPEC, scenario=scenario)
    if strategy == "pkt-seq":
        config.pkt_seq_burst = 1
    system = System(config, app_cls, resolve(config.properties))
    return system, Explorer(system, SearchOptions(strategy=strategy, stop_at_first=True)).run()


def _replay(system, path):
    st = system.initial()
    lines = []
    for t in path:
        lines.append(system.describe(st, t))
        st, fx = system.fire(st, t)
    return st, fx, lines


def test_host_migration_blackhole_found_in_simple_switch(app_cls):
    system, r = _search(app_cls, "mobile", "pkt-seq")
    assert r.found, "the migration blackhole was not found"
    f = r.found[0]
    assert f.violation.prop == "NoBlackHolesMobile" and f.at_end
    assert "from h1 to h2" in f.violation.message
    st, _, lines = _replay(system, f.path)
    assert "h2 moves from s2:1 to s2:3" in lines
    move = lines.index("h2 moves from s2:1 to s2:3")
    # the cause: simple_switch's permanent rule at s2 still sends h1->h2 to h2's old port
    stale = [ln for ln in lines[:move] if ln.startswith("s2 applies FLOW_MOD")
             and "dl_dst=00:00:00:00:00:02" in ln and "actions=output:1" in ln]
    assert stale
    h2 = system.mac_of["h2"]
    assert any(e.match.dl_dst == h2 and e.actions == (Output(1, 65509),) for e in st.switches[1].table.entries())
    # ...although the app has learned the new port (from the moved host's gratuitous ARP)
    assert mac_to_port(st.app)[2]["00:00:00:00:00:02"] == 3
    assert system.at_end(st)  # the counterexample replays to the same violation


def test_flooding_loop_found_on_a_cycle(app_cls):
    system, r = _search(app_cls, "loop", "full")
    assert r.found
    f = r.found[0]
    assert f.violation.prop == "NoForwardingLoops" and "loops:" in f.violation.message
    _, fx, lines = _replay(system, f.path)
    assert any("actions=FLOOD" in ln for ln in lines)
    assert [v.prop for v in fx.violations] == ["NoForwardingLoops"]


def test_counterexample_trace_replays_in_the_model(app_cls, tmp_path):
    """The in-model replay of a check counterexample re-runs it against the hosted app and
    reproduces the violation (what `netsleuth replay` does with a counterexample)."""
    from netsleuth.nice import job
    from netsleuth.trace.io import read_trace

    system, r = _search(app_cls, "mobile", "pkt-seq")
    path = tmp_path / "cex.jsonl"
    job.write_counterexample(path, system, r.found[0])
    data = job.replay_counterexample(read_trace(path), times=2)
    assert data["controller"] == SPEC and data["reproduced"] is True and data["reproduction_rate"] == 1.0
    assert data["replays"][0]["matched"] == len(r.found[0].path)
    assert data["replays"][0]["findings"] == data["replays"][1]["findings"]  # deterministic


def test_bad_module_is_one_clear_error(app_cls):
    with pytest.raises(OsKenHostError) as e:
        load_osken_app("osken:os_ken.app.no_such_app")
    assert "no_such_app" in e.value.problem and e.value.fix and e.value.exit_code == 2
    assert "\n" not in e.value.one_line()
    with pytest.raises(OsKenHostError) as e:
        load_osken_app("osken:")
    assert "osken:<app module>" in e.value.fix
    with pytest.raises(OsKenHostError) as e:
        load_osken_app("osken:os_ken.lib.mac")  # importable, but no app in it
    assert "no OSKenApp" in e.value.problem
    with pytest.raises(OsKenHostError) as e:  # 1.0 and 1.3 are modelled, 1.4 is not
        load_osken_app("osken:os_ken.app.simple_switch_14")
    assert "speaks OpenFlow 1.4, and the model checker models 1.0 and 1.3" in e.value.problem


def test_missing_controller_env_and_crashed_server(tmp_path, monkeypatch):
    monkeypatch.setenv("NETSLEUTH_CONTROLLER_PYTHON", str(tmp_path / "nope" / "python"))
    with pytest.raises(NetsleuthError) as e:
        HandlerServer(("os_ken.app.simple_switch",))
    assert "NETSLEUTH_CONTROLLER_PYTHON" in e.value.problem and e.value.exit_code == 2
    monkeypatch.delenv("NETSLEUTH_CONTROLLER_PYTHON")
    srv = HandlerServer(("os_ken.app.simple_switch",)).start()
    try:
        srv.proc.kill()
        srv.proc.wait()
        with pytest.raises(OsKenHostError) as e:
            srv.call({"op": "event", "state": srv.initial_state, "datapaths": {}, "event": ("leave", 1, b"")})
        assert "handler server" in e.value.problem and "make setup" in e.value.fix
    finally:
        srv.close()
        srv.log_path.unlink(missing_ok=True)  # kept for the user because an error named it
    assert srv.proc is None
    bad = HandlerServer(("os_ken.app.simple_switch",), python="/bin/false")
    with pytest.raises(OsKenHostError) as e:  # a "Python" that dies at once
        bad.start()
    assert "handler server" in e.value.problem and "(exit code 1)" in e.value.problem
    assert str(bad.log_path) in e.value.fix
    bad.log_path.unlink(missing_ok=True)


def test_stuck_handler_times_out_and_the_server_is_killed(tmp_path, monkeypatch):
    (tmp_path / "stuck_app.py").write_text(
        "import time\n"
        "from os_ken.base import app_manager\n"
        "from os_ken.controller import ofp_event\n"
        "from os_ken.controller.handler import MAIN_DISPATCHER, set_ev_cls\n"
        "class Stuck(app_manager.OSKenApp):\n"
        "    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)\n"
        "    def _pi(self, ev):\n"
        "        time.sleep(60)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    srv = HandlerServer(("stuck_app",)).start()
    try:
        cls = type("StuckApp", (OsKenApp,), {"_server": srv, "_memo": {}})
        app, _ = run(cls(), lambda a: a.datapath_join(1, (1, 2)))
        pkt = icmp_echo(H1, H2, "10.0.0.1", "10.0.0.2", 1, 1)
        monkeypatch.setattr(osken_host, "CALL_TIMEOUT", 0.5)
        proc = srv.proc
        with pytest.raises(OsKenHostError) as e:
            run(app, lambda x: x.packet_in(1, 1, 0, pkt.frame_len(), 0, pkt))
        assert "did not answer within" in e.value.problem and "stuck" in e.value.fix
        assert proc.poll() is not None and not srv.alive()
    finally:
        srv.close()
        srv.log_path.unlink(missing_ok=True)


def test_app_exceptions_are_swallowed_like_os_ken_and_reported(tmp_path, monkeypatch):
    (tmp_path / "crashy_app.py").write_text(
        "from os_ken.base import app_manager\n"
        "from os_ken.controller import ofp_event\n"
        "from os_ken.controller.handler import MAIN_DISPATCHER, set_ev_cls\n"
        "from os_ken.ofproto import ofproto_v1_0\n"
        "class Crashy(app_manager.OSKenApp):\n"
        "    OFP_VERSIONS = [ofproto_v1_0.OFP_VERSION]\n"
        "    def __init__(self, *a, **k):\n"
        "        super().__init__(*a, **k)\n"
        "        self.seen = 0\n"
        "    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)\n"
        "    def _pi(self, ev):\n"
        "        self.seen += 1\n"
        "        raise ValueError('boom %d' % self.seen)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    cls = load_osken_app("osken:crashy_app")
    try:
        app, _ = run(cls(), lambda a: a.datapath_join(1, (1, 2)))
        pkt = icmp_echo(H1, H2, "10.0.0.1", "10.0.0.2", 1, 1)
        a, out = run(app, lambda x: x.packet_in(1, 1, 0, pkt.frame_len(), 0, pkt))
        assert out == []
        assert dict(dict(a.skey)["Crashy"][1]) == {"seen": 1}  # mutations before the raise stay, as in os-ken
        assert cls._server.handler_errors == ["Crashy._pi: ValueError: boom 1"]
    finally:
        cls._server.close()


def _cex_inputs(argv):
    import argparse

    from netsleuth.nice import cex_inputs_cli

    p = argparse.ArgumentParser()
    cex_inputs_cli.add_commands(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(["cex-inputs", *argv])
    return args.func(args)


@pytest.mark.slow
def test_check_blackhole_converts_to_inputs_that_reproduce_against_the_real_controller(
        app_cls, tmp_path, capsys):
    """The must-show: `check` finds the migration blackhole in the real simple_switch; its counterexample,
    converted to inputs, reproduces against the real os-ken process with `netsleuth replay`."""
    import json

    from netsleuth.cli import main
    from netsleuth.trace import schema as ts
    from netsleuth.trace.io import read_trace, write_trace

    assert main(["check", SPEC, "--scenario", "mobile", "--strategy", "pkt-seq", "--stop-at-first",
                 "--out", str(tmp_path / "check"), "--json"]) == 1
    d = json.loads(capsys.readouterr().out)
    (v,) = d["violations"]
    assert d["app"] == "app:" + SPEC and v["property"] == "NoBlackHolesMobile"
    assert read_trace(v["counterexample"]).header.controller == "app:" + SPEC
    # `netsleuth replay` of the counterexample itself re-executes it in the model, deterministically
    assert main(["replay", v["counterexample"], "--out", str(tmp_path / "mc-replay")]) == 0
    mc = json.loads((tmp_path / "mc-replay" / "replay.json").read_text())
    assert mc["mode"] == "in-process model" and mc["reproduced"] is True
    capsys.readouterr()
    conv = tmp_path / "inputs.jsonl"
    assert _cex_inputs([v["counterexample"], "--out", str(conv), "--json", "--gap", "0.2"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["kinds"] == ["traffic", "traffic", "host_migration", "traffic", "traffic"]
    assert rep["controller"] == "app:" + SPEC and read_trace(conv).header.controller == SPEC
    assert rep["target"] == {"invariant": "blackholes", "hosts": ["h1", "h2"], "switches": ["s2"],
                             "message": rep["target"]["message"]}
    assert main(["replay", str(conv), "--out", str(tmp_path / "replay")]) == 0
    r = json.loads((tmp_path / "replay" / "replay.json").read_text())
    assert r["reproduced"] is True and "mode" not in r  # a real run, not the in-model re-execution
    # every FLOW_MOD the hosted app sent in the counterexample, the real controller sent again
    assert rep["expected_flow_mods"] > 0
    assert r["replays"][0]["expected"] == r["replays"][0]["matched"] == rep["expected_flow_mods"]
    assert any(f["invariant"] == "blackholes" and f["switches"] == ["s2"] for f in r["replays"][0]["findings"])
    # Without the migration the real app keeps h1 -> h2 working: the replay must say so.
    trace = read_trace(conv)
    kept = [e for e in trace.events if not isinstance(e, ts.HostMigration)]
    write_trace(tmp_path / "no-move.jsonl", ts.Trace(trace.header, kept))
    assert main(["replay", str(tmp_path / "no-move.jsonl"), "--out", str(tmp_path / "replay2")]) == 1
    assert json.loads((tmp_path / "replay2" / "replay.json").read_text())["reproduced"] is False


def test_check_cli_bad_osken_module_is_exit_code_2(capsys):
    from netsleuth.cli import main

    assert main(["check", "osken:os_ken.app.nope", "--scenario", "mobile"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot import os-ken app module 'os_ken.app.nope'") and "-- fix:" in err


def test_cex_inputs_refuses_what_a_real_run_cannot_express(app_cls, tmp_path):
    from netsleuth.nice import job
    from netsleuth.nice.cex_inputs import ConversionError, counterexample_inputs

    system, r = _search(app_cls, "loop", "full")
    with pytest.raises(ConversionError) as e:
        counterexample_inputs(system, r.found[0].path, r.found[0].violation)
    assert "NoForwardingLoops" in e.value.problem and e.value.fix
    path = tmp_path / "loop.jsonl"
    job.write_counterexample(path, system, r.found[0])
    with pytest.raises(ConversionError):  # the same through the command, from the counterexample file
        _cex_inputs([str(path), "--out", str(tmp_path / "x.jsonl")])
    with pytest.raises(NetsleuthError) as e:
        _cex_inputs([str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "x.jsonl")])
    assert e.value.exit_code == 2
    assert not (tmp_path / "x.jsonl").exists()


def test_events_carry_the_model_clock_not_the_wall_clock(tmp_path, monkeypatch):
    (tmp_path / "stamp_app.py").write_text(
        "from os_ken.base import app_manager\n"
        "from os_ken.controller import ofp_event\n"
        "from os_ken.controller.handler import MAIN_DISPATCHER, set_ev_cls\n"
        "class Stamp(app_manager.OSKenApp):\n"
        "    def __init__(self, *a, **k):\n"
        "        super().__init__(*a, **k)\n"
        "        self.stamps = []\n"
        "    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)\n"
        "    def _pi(self, ev):\n"
        "        self.stamps.append(ev.timestamp)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    cls = load_osken_app("osken:stamp_app")
    try:
        app, _ = run(cls(), lambda a: a.datapath_join(1, (1, 2)))
        pkt = icmp_echo(H1, H2, "10.0.0.1", "10.0.0.2", 1, 1)
        new = app.copy()
        new._api = ControllerAPI(2.5, (), False)
        new.packet_in(1, 1, 0, pkt.frame_len(), 0, pkt)
        assert dict(dict(new.skey)["Stamp"][1]) == {"stamps": (2.5,)}
    finally:
        cls._server.close()
