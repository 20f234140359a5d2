"""`netsleuth replay` against the real os-ken simple_switch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from netsleuth.jobs.replay import ReplayOptions, replay
from netsleuth.jobs.run import RunOptions, run
from netsleuth.trace.io import read_trace

pytestmark = pytest.mark.real

SIMPLE_SWITCH = "osken:os_ken.app.simple_switch"


@pytest.fixture(scope="module")
def blackhole_trace(migration_blackhole_trace: Path) -> Path:
    return migration_blackhole_trace  # recorded once per session (tests/conftest.py)


@pytest.mark.slow
def test_replay_reproduces_the_migration_blackhole(blackhole_trace: Path, tmp_path: Path) -> None:
    d = replay(ReplayOptions(trace=blackhole_trace, out=tmp_path, times=3))
    assert d["target"]["invariant"] == "blackholes"
    assert d["reproduction_rate"] >= 2 / 3, d["replays"]
    original = read_trace(blackhole_trace)
    n_inputs = sum(1 for e in original.events if e.is_input)
    for i, r in enumerate(d["replays"], 1):
        assert r["matched"] > 0 and r["expected"] == r["matched"] + r["timed_out"] + r["unreached"]
        replayed = read_trace(tmp_path / f"replay-{i}" / "trace.jsonl")
        kinds = [e.kind for e in replayed.events if e.is_input]
        assert kinds == [e.kind for e in original.events if e.is_input] and len(kinds) == n_inputs
    assert json.loads((tmp_path / "replay.json").read_text())["reproduction_rate"] == d["reproduction_rate"]


@pytest.mark.slow
def test_replay_of_a_clean_run_matches_its_messages(tmp_path: Path) -> None:
    run(RunOptions(controller=SIMPLE_SWITCH, topo="linear,3", out=tmp_path / "rec", pingall=True))
    d = replay(ReplayOptions(trace=tmp_path / "rec" / "trace.jsonl", out=tmp_path / "rep"))
    assert d["target"] is None and d["reproduced"] is None
    r = d["replays"][0]
    # the same pings against the same controller: nearly every control message comes back
    assert r["matched"] >= 0.9 * r["expected"], r
    assert r["findings"] == []


def test_truncated_trace_is_a_clear_error(blackhole_trace: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.jsonl"
    data = blackhole_trace.read_bytes()
    cut.write_bytes(data[: len(data) - 20])
    proc = subprocess.run([sys.executable, "-m", "netsleuth.cli", "replay", str(cut), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    line = proc.stderr.splitlines()[0]
    assert line.startswith("error: ") and "cut.jsonl line " in line and "fix:" in line


def test_controller_that_dies_during_replay_is_reported(blackhole_trace: Path, tmp_path: Path) -> None:
    import os
    import signal
    import threading
    import time

    import psutil

    def kill_once_inputs_flow() -> None:
        log = tmp_path / "controller.log"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # simple_switch logs every PACKET_IN: traffic is flowing
            if log.exists() and "packet in" in log.read_text(errors="replace"):
                break
            time.sleep(0.02)
        for p in psutil.Process().children(recursive=True):
            try:
                cmd = p.cmdline()
            except psutil.Error:   # a child that exited meanwhile (a zombie until reaped): not the controller
                continue
            if any("osken_main.py" in part for part in cmd):
                os.kill(p.pid, signal.SIGKILL)  # the controller dies on its own, as far as netsleuth knows

    killer = threading.Thread(target=kill_once_inputs_flow)
    killer.start()
    d = replay(ReplayOptions(trace=blackhole_trace, out=tmp_path))
    killer.join()
    r = d["replays"][0]
    assert any("exited with code" in line for line in r["controller_died"])
    assert any(f["invariant"] == "liveness" for f in r["findings"])
    assert (tmp_path / "trace.jsonl").exists() and (tmp_path / "replay.json").exists()
