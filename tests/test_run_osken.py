"""`netsleuth run` end to end against the real os-ken 1.4.1 controller.

These tests start the real controller process from .venv-controller (made
by `make setup`), connect real TCP sockets and check what the network and
the trace show. Nothing here is a stand-in for the controller.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_process import cli

from netsleuth.controllers.external import OSKEN_MAIN, find_controller_python
from netsleuth.jobs.invariants_on_trace import invariants_on_trace
from netsleuth.jobs.run import RunOptions, run
from netsleuth.trace.io import read_trace, write_trace

pytestmark = pytest.mark.real

SIMPLE_SWITCH = "osken:os_ken.app.simple_switch"


def kinds(trace) -> dict[str, int]:
    counts: dict[str, int] = {}
    for e in trace.events:
        counts[e.kind] = counts.get(e.kind, 0) + 1
    return counts


@pytest.mark.parametrize("topo,hosts", [("linear,3", 3), ("tree,depth=2,fanout=2", 4)])
def test_pingall_clean_with_simple_switch(tmp_path: Path, topo: str, hosts: int) -> None:
    result = run(RunOptions(controller=SIMPLE_SWITCH, topo=topo, out=tmp_path, pingall=True))
    d = json.loads((tmp_path / "result.json").read_text())
    assert d == result.data
    assert d["pingall"] == {"ok": hosts * (hosts - 1), "failed": 0, "failed_pairs": [], "pairs": hosts * (hosts - 1),
                             "failed_why": {}, "failed_on_purpose": []}
    assert d["violations"] == []
    assert result.exit_code == 0
    assert [(c["alive"], c["logged_errors"]) for c in d["controllers"]] == [(True, [])]

    trace = read_trace(tmp_path / "trace.jsonl")
    assert trace.header.topology_spec == topo
    counts = kinds(trace)
    n_switches = d["switches"]
    assert counts["switch_connected"] == n_switches
    assert counts["ping"] == hosts * (hosts - 1)
    # The learning switch really installed flows, and they went through the switch model.
    flow_mods = [e for e in trace.events if e.kind == "of_to_switch" and e.msg["type"] == "FLOW_MOD"]
    assert flow_mods, "simple_switch installs a flow per learned pair"
    assert all(e.fp[0] == "FLOW_MOD" for e in flow_mods)
    packet_ins = [e for e in trace.events if e.kind == "of_to_controller" and e.msg["type"] == "PACKET_IN"]
    assert packet_ins
    # The tables rebuilt from the trace alone equal the live switches' (same flows, same checks).
    offline = invariants_on_trace(tmp_path / "trace.jsonl")
    assert offline["violations"] == []
    assert sum(offline["flow_entries"].values()) == len({(e.dpid, json.dumps(e.fp)) for e in flow_mods})
    # Lossless: writing what was read gives the same bytes.
    copy = tmp_path / "copy.jsonl"
    write_trace(copy, trace)
    assert copy.read_bytes() == (tmp_path / "trace.jsonl").read_bytes()


@pytest.mark.slow
def test_ring_flood_loop_is_detected_not_hung(tmp_path: Path) -> None:
    proc = cli("run", "--controller", SIMPLE_SWITCH, "--topo", "ring,4", "--pingall", "--ping-timeout", "0.5",
               "--out", str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    d = json.loads((tmp_path / "result.json").read_text())
    loops = [v for v in d["violations"] if v["invariant"] == "dataplane-loops"]
    assert loops, d["violations"]
    for v in loops:
        path = v["details"]["path"]
        # the last hop is a (switch, port) the packet had already visited
        assert path[-1] in path[:-1]
    assert "dataplane-loops" in proc.stdout
    trace = read_trace(tmp_path / "trace.jsonl")
    assert any(e.kind == "violation" and e.invariant == "dataplane-loops" for e in trace.events)


@pytest.mark.slow
def test_cmd_controller_runs_any_command(tmp_path: Path) -> None:
    py = find_controller_python()
    spec = f'cmd:{py} {OSKEN_MAIN} --ofp-tcp-listen-port {{port}} os_ken.app.simple_switch'
    proc = cli("run", "--controller", spec, "--topo", "single,3", "--pingall", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    d = json.loads((tmp_path / "result.json").read_text())
    assert d["pingall"]["ok"] == 6 and d["pingall"]["failed"] == 0


def _one_error_line(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, proc.stderr
    assert " -- fix: " in lines[0]
    return lines[0]


def test_controller_that_cannot_start(tmp_path: Path) -> None:
    proc = cli("run", "--controller", "osken:no_such_app_module", "--topo", "linear,2", "--out", str(tmp_path))
    assert proc.returncode == 2
    line = _one_error_line(proc)
    # found as the controller starts, not left in its log as a traceback
    assert "cannot import os-ken app module 'no_such_app_module': No module named 'no_such_app_module'" in line
    assert (tmp_path / "result.json").exists() and (tmp_path / "trace.jsonl").exists()


def test_controller_without_openflow_1_0(tmp_path: Path) -> None:
    proc = cli("run", "--controller", "osken:os_ken.app.simple_switch_13", "--topo", "linear,2", "--openflow", "1.0",
               "--out", str(tmp_path), timeout=90)
    assert proc.returncode == 2
    line = _one_error_line(proc)
    assert "OpenFlow version mismatch" in line and "offered OpenFlow 1.0" in line
    assert "--openflow" in line.split(" -- fix: ")[1]
    d = json.loads((tmp_path / "result.json").read_text())
    assert d["completed"] is False and d["bootstrap"]["connected"] == 0


def test_controller_command_that_exits(tmp_path: Path) -> None:
    spec = f'cmd:{sys.executable} -c "import sys; print(\'bad config\'); sys.exit(3)" {{port}}'
    proc = cli("run", "--controller", spec, "--topo", "linear,2", "--out", str(tmp_path))
    assert proc.returncode == 2
    assert "exited with code 3" in _one_error_line(proc)
    assert "bad config" in proc.stderr


@pytest.mark.slow
def test_nothing_listening_and_bad_topology(tmp_path: Path) -> None:
    proc = cli("run", "--controller", "tcp:127.0.0.1:1", "--topo", "linear,2", "--out", str(tmp_path / "a"))
    assert proc.returncode == 2
    assert "no controller answers at 127.0.0.1:1" in _one_error_line(proc)
    proc = cli("run", "--controller", SIMPLE_SWITCH, "--topo", "hypercube,3", "--out", str(tmp_path / "b"))
    assert proc.returncode == 2
    assert "unknown topology" in _one_error_line(proc)
    proc = cli("run", "--controller", "nox:forwarding", "--topo", "linear,2", "--out", str(tmp_path / "c"))
    assert proc.returncode == 2
    assert "controller kind" in _one_error_line(proc)


def test_attach_to_running_controller(tmp_path: Path) -> None:
    from netsleuth.controllers.external import ControllerProcess
    from netsleuth.controllers.spec import parse_controller

    ctl = ControllerProcess(parse_controller(SIMPLE_SWITCH), tmp_path / "own.log")
    host, port = ctl.start()
    try:
        proc = cli("run", "--controller", f"tcp:{host}:{port}", "--topo", "linear,2", "--pingall",
                   "--out", str(tmp_path / "out"))
        assert proc.returncode == 0, proc.stderr
        d = json.loads((tmp_path / "out" / "result.json").read_text())
        assert d["pingall"]["ok"] == 2
        assert ctl.alive(), "attaching must not stop a controller netsleuth did not start"
        assert "packet in" in (tmp_path / "own.log").read_text()  # it really served our switches
    finally:
        ctl.stop()


def test_ctrl_c_keeps_partial_results(tmp_path: Path) -> None:
    import signal
    import time

    from netsleuth.trace.io import read_trace as read

    proc = subprocess.Popen([sys.executable, "-m", "netsleuth.cli", "run", "--controller", SIMPLE_SWITCH,
                             "--topo", "ring,5", "--pingall", "--out", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # as from a terminal: a suite started in the background (``make test &``)
                            # hands its children SIGINT ignored, which netsleuth rightly respects
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    trace = tmp_path / "trace.jsonl"
    while time.monotonic() < deadline:  # wait until pings are under way
        if trace.exists() and '"kind":"ping"' in trace.read_text():
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    d = json.loads((tmp_path / "result.json").read_text())
    assert d["interrupted"] is True and d["completed"] is False
    assert d["pingall"]["ok"] + d["pingall"]["failed"] >= 1
    events = read(trace).events  # still a valid trace
    assert any(e.kind == "ping" for e in events)


@pytest.mark.slow
def test_two_controllers_every_switch_connects_to_both(tmp_path: Path) -> None:
    proc = cli("run", "--controller", SIMPLE_SWITCH, "--controller", SIMPLE_SWITCH, "--topo", "linear,2",
               "--pingall", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    d = json.loads((tmp_path / "result.json").read_text())
    assert d["bootstrap"]["connected"] == 4
    assert [c["name"] for c in d["controllers"]] == ["c0", "c1"] and all(c["alive"] for c in d["controllers"])
    trace = read_trace(tmp_path / "trace.jsonl")
    # PACKET_INs go to both controllers (OpenFlow 1.0 has no roles)
    pins = {e.controller for e in trace.events if e.kind == "of_to_controller" and e.msg["type"] == "PACKET_IN"}
    assert pins == {"c0", "c1"}
    assert d["pingall"]["ok"] == 2
