"""Stopping netsleuth: SIGTERM, SIGHUP and SIGKILL of a real `netsleuth fuzz` against the real simple_switch.

CI systems stop jobs with SIGTERM, a closed terminal sends SIGHUP, and an
out-of-memory killer or a timeout sends SIGKILL.  Each test starts the real
command line as a subprocess, lets it fuzz for a few seconds, signals it,
and then checks what a user is left with: the trace (every event up to the
signal for SIGTERM/SIGHUP, at most about a second lost for SIGKILL, readable
by `netsleuth invariants`), result.json (for the catchable signals:
``completed: false`` and the signal's name), the exit code, and that no
controller process survives -- looked up in the process table by the port
the trace says the controller listened on.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from netsleuth.cli import main
from netsleuth.trace.io import read_trace

NETSLEUTH = [sys.executable, "-m", "netsleuth.cli"]
SIMPLE_SWITCH = "osken:os_ken.app.simple_switch"

pytestmark = [pytest.mark.real, pytest.mark.slow]  # real `netsleuth` processes and controllers, seconds each


def start_fuzz(out: Path) -> tuple[subprocess.Popen, float, float]:
    """A long fuzz run with steady traffic; returns it and two moments its trace's clock started between:
    before the process (it cannot start earlier) and when the trace file was seen (nor later)."""
    launched = time.monotonic()
    proc = subprocess.Popen([*NETSLEUTH, "fuzz", "--controller", SIMPLE_SWITCH, "--topo", "linear,3",
                             "--steps", "100000", "--seed", "1", "--rate", "traffic=0.6", "--rate",
                             "host_migration=0", "--keep-going", "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (out / "trace.jsonl").exists():
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "netsleuth fuzz never opened its trace"
        time.sleep(0.005)
    return proc, launched, time.monotonic()


def trace_time(trace: Path) -> float:
    """The time of the last event on disk (the trace is flushed about every 0.2 s); 0 before any."""
    with trace.open("rb") as f:
        f.seek(max(0, trace.stat().st_size - 8192))
        times = re.findall(rb'"t":([0-9.]+)', f.read())
    return float(times[-1]) if times else 0.0


def wait_until(ready: Callable[[], bool], proc: subprocess.Popen, what: str, timeout: float = 60.0) -> None:
    """Poll ``ready`` while ``proc`` runs; the readiness signals below replace fixed sleeps."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, f"netsleuth ended before {what}: {proc.communicate()[1]}"
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(0.02)


def controller_ports(trace: Path) -> set[str]:
    """The ports the run's controllers listened on, from the trace's controller events."""
    text = trace.read_text()
    return set(re.findall(r'"detail":"[^"]* on 127\.0\.0\.1:(\d+)"', text))


def survivors(out: Path, ports: set[str], grace: float = 5.0) -> list[str]:
    """Processes still running whose command line names the run's controller port or out dir."""
    deadline = time.monotonic() + grace
    while True:
        found = []
        for p in psutil.process_iter(["pid", "cmdline"]):
            cmd = " ".join(p.info["cmdline"] or [])
            if str(out) in cmd or any(re.search(rf"\b{port}\b", cmd) for port in ports):
                found.append(f"{p.info['pid']}: {cmd}")
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_stop_signal_writes_partial_results_and_stops_the_controller(sig: signal.Signals, tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc, _launched, _seen = start_fuzz(out)
    # ready: over 4 s of events on disk, and at least 7 traffic inputs (one a round at most: round 7
    # was planned, so 6 steps were done)
    wait_until(lambda: trace_time(out / "trace.jsonl") > 4.05
               and (out / "trace.jsonl").read_bytes().count(b'"kind":"traffic"') >= 7, proc,
               "4 s and 6 steps of fuzzing on disk")
    proc.send_signal(sig)
    stderr = proc.communicate(timeout=60)[1]
    assert proc.returncode == 128 + sig, stderr
    assert f"stopped by {sig.name}" in stderr

    result = json.loads((out / "result.json").read_text())
    assert result["completed"] is False and result["stopped_by"] == sig.name
    assert result["steps"] > 5
    trace = read_trace(out / "trace.jsonl")
    # every event up to the signal is on disk: as many as the run counted, the last one close to the end
    assert len(trace.events) == result["stats"]["trace_events"]
    assert trace.events[-1].t > 4.0
    ports = controller_ports(out / "trace.jsonl")
    assert ports
    assert main(["invariants", str(out / "trace.jsonl")]) in (0, 1)
    assert survivors(out, ports) == []


def test_sigkill_loses_at_most_a_second_and_leaves_no_controller(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc, launched, seen = start_fuzz(out)
    # fuzzing under way and its trace flushed more than once: then the kill
    wait_until(lambda: trace_time(out / "trace.jsonl") > 2.0, proc, "2 s of fuzzing on disk")
    killed = time.monotonic()
    proc.kill()
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert not (out / "result.json").exists()  # nothing ran after the kill...
    trace = read_trace(out / "trace.jsonl")    # ...yet the trace is whole, line by line
    last_t = trace.events[-1].t
    assert killed - seen - 1.3 <= last_t <= killed - launched, (killed - seen, killed - launched, last_t)
    assert main(["invariants", str(out / "trace.jsonl")]) in (0, 1)
    ports = controller_ports(out / "trace.jsonl")
    assert ports
    assert survivors(out, ports) == []


def test_controller_children_die_with_a_killed_netsleuth(tmp_path: Path) -> None:
    """A cmd: controller that starts a child of its own: both go when netsleuth is SIGKILLed."""
    marker = f"netsleuth-child-{os.getpid()}"
    script = tmp_path / "ctl.sh"
    # the child sleeps under a name the test can find; the controller itself is os-ken
    script.write_text(f"#!/bin/sh\n{sys.executable} -c 'import time; time.sleep(300)' {marker} &\n"
                      f"exec {sys.executable} -c \"import os,sys; os.execv(sys.argv[1], sys.argv[1:])\" "
                      f"\"$@\"\n")
    script.chmod(0o755)
    from netsleuth.controllers.external import OSKEN_MAIN, find_controller_python
    spec = (f"cmd:{script} {find_controller_python()} {OSKEN_MAIN} --ofp-tcp-listen-port {{port}} "
            "os_ken.app.simple_switch")
    out = tmp_path / "run"
    proc = subprocess.Popen([*NETSLEUTH, "fuzz", "--controller", spec, "--topo", "linear,2", "--out", str(out),
                             "--steps", "100000", "--keep-going"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 60
    def child_running() -> bool:
        return any(marker in " ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"]))
    while not child_running():
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.poll() else ""
        time.sleep(0.05)
    # the controller is up and fuzzing: its switches connected, on disk
    wait_until(lambda: '"kind":"switch_connected"' in (out / "trace.jsonl").read_text()
               if (out / "trace.jsonl").exists() else False, proc, "the switches' handshakes")
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.monotonic() + 6
    while child_running() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not child_running()


def _stop_after(argv: list[str], wait_for: Path, seconds: float, sig: signal.Signals = signal.SIGTERM
                ) -> subprocess.CompletedProcess:
    """Run netsleuth, send ``sig`` ``seconds`` after ``wait_for`` appears, and collect it."""
    proc = subprocess.Popen([*NETSLEUTH, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not wait_for.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{wait_for} never appeared"
        time.sleep(0.01)
    time.sleep(seconds)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_sigterm_stops_replay_with_partial_results(migration_blackhole_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "replay"
    r = _stop_after(["replay", str(migration_blackhole_trace), "--out", str(out), "--times", "20"],
                    out / "replay-2" / "trace.jsonl", 1.5)
    assert r.returncode == 143, r.stderr
    d = json.loads((out / "replay.json").read_text())
    assert d["completed"] is False and d["stopped_by"] == "SIGTERM"
    assert len(d["replays"]) < 20
    # by number: replay-10 comes after replay-9
    runs = sorted(out.glob("replay-*/result.json"), key=lambda p: int(p.parent.name.rsplit("-", 1)[1]))
    last = json.loads(runs[-1].read_text())
    assert last["stopped_by"] == "SIGTERM" and last["completed"] is False
    ports = set().union(*(controller_ports(t) for t in out.glob("replay-*/trace.jsonl")))
    assert ports and survivors(out, ports) == []


def test_sigterm_stops_minimize_with_the_best_result_so_far(migration_blackhole_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "min"
    r = _stop_after(["minimize", str(migration_blackhole_trace), "--out", str(out), "--executor", "serial"],
                    out / "replays" / "w0" / "replays.jsonl", 1.0)
    assert r.returncode == 143, r.stderr
    d = json.loads((out / "result.json").read_text())
    assert d["completed"] is False and d["stopped_by"] == "SIGTERM" and d["stop_reason"] == "interrupted"
    assert (out / "mcs.jsonl").exists()
    assert main(["invariants", str(out / "mcs.jsonl")]) in (0, 1)
    ports = set().union(*(controller_ports(t) for t in out.glob("replays/w0/replay-*/trace.jsonl")))
    assert ports and survivors(out, ports) == []


def test_sigterm_stops_a_long_model_check_with_partial_results(tmp_path: Path) -> None:
    out = tmp_path / "check"
    proc = subprocess.Popen([*NETSLEUTH, "check", "pyswitch", "--pings", "6", "--json", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # the search is running once the imports are done and it has used some CPU (time under load
    # would say nothing: CPU time is the work done)
    cpu = psutil.Process(proc.pid)
    wait_until(lambda: sum(cpu.cpu_times()[:2]) > 3.0, proc, "3 s of CPU in the search")
    assert proc.poll() is None, "the search ended before the signal: make it longer"
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    d = json.loads((out / "result.json").read_text())
    assert d["completed"] is False and d["interrupted"] and d["signal"] == "SIGTERM" and d["transitions"] > 0


def test_model_checker_handler_server_dies_with_a_killed_netsleuth(tmp_path: Path) -> None:
    """`check osken:...` hosts the real app in a handler server: SIGKILL of netsleuth takes it down too."""
    proc = subprocess.Popen([*NETSLEUTH, "check", "osken:os_ken.app.simple_switch", "--scenario", "pings",
                             "--pings", "6", "--json"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def servers() -> list[int]:
        found = []
        for p in psutil.process_iter(["pid", "cmdline"]):
            cmd = " ".join(p.info["cmdline"] or [])
            if "osken_handler_server.py" in cmd and "guard.py" not in cmd:
                try:
                    if any(a.pid == proc.pid for a in p.parents()):
                        found.append(p.info["pid"])
                except psutil.Error:
                    pass
        return found

    deadline = time.monotonic() + 60
    while not (mine := servers()):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.poll() else ""
        time.sleep(0.05)
    time.sleep(1)
    assert proc.poll() is None, "the search ended before the kill: make it longer"
    proc.kill()
    proc.wait(timeout=30)
    def running(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:  # gone between the look-up and the question
            return False

    deadline = time.monotonic() + 6
    while any(running(pid) for pid in mine) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(running(pid) for pid in mine)


@pytest.mark.timeout(180)
def test_a_bug_inside_the_running_network_is_an_internal_error_not_a_silent_stall(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A fault injected into the network's event pump (standing in for a bug in a switch model)
    must end the run with exit 3, the trace and result.json written, and no controller left --
    not a run that carries on while the network has silently stopped moving."""
    from netsleuth.world.world import World

    real_fire_next = World.fire_next
    calls = {"n": 0}

    def failing_fire_next(self: World):  # noqa: ANN202 - the real method's signature
        calls["n"] += 1
        if calls["n"] == 400:
            raise RuntimeError("injected fault in the event pump")
        return real_fire_next(self)

    monkeypatch.setattr(World, "fire_next", failing_fire_next)
    out = tmp_path / "run"
    rc = main(["fuzz", "--controller", SIMPLE_SWITCH, "--topo", "linear,3", "--steps", "300", "--seed", "1",
               "--rate", "traffic=0.6", "--keep-going", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 3, err
    assert "internal error: RuntimeError: injected fault in the event pump" in err
    result = json.loads((out / "result.json").read_text())
    assert result["completed"] is False
    assert read_trace(out / "trace.jsonl").events
    assert survivors(out, controller_ports(out / "trace.jsonl")) == []
