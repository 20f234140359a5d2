"""`netsleuth step`: a recorded migration blackhole of os-ken simple_switch, stepped headlessly.

The trace comes from a real fuzz run (tests/conftest.py). Stepping through
it with a command file must reach the recorded violation (same invariant,
same host pair) right after the host's move; injecting one input that was
not in the trace (the sender's link fails before the move) must change
that outcome.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from netsleuth.cli import main
from netsleuth.rootcause.step import run_step
from netsleuth.trace import schema as ts
from netsleuth.trace.io import read_trace
from netsleuth.world.rebuild import rebuild

pytestmark = pytest.mark.real


def _run(trace: Path, tmp_path: Path, commands: str) -> str:
    script = tmp_path / "commands.txt"
    script.write_text(commands)
    buf = io.StringIO()
    assert run_step(trace, commands=script, out=Console(file=buf, width=200, highlight=False)) == 0
    return buf.getvalue()


def _target(trace: ts.Trace) -> tuple[ts.Violation, ts.HostMigration]:
    v = next(e for e in trace.events if isinstance(e, ts.Violation) and e.persistent)
    move = [e for e in trace.events if isinstance(e, ts.HostMigration) and e.host == v.hosts[1] and e.seq < v.seq][-1]
    return v, move


def test_stepping_reaches_the_recorded_violation(migration_blackhole_trace: Path, tmp_path: Path) -> None:
    trace = read_trace(migration_blackhole_trace)
    v, move = _target(trace)
    out = _run(migration_blackhole_trace, tmp_path,
               "# reach the bug\nstep 5\nuntil violation\nshow hosts\nshow tables\nshow buffered\ncheck blackholes\n")
    src, dst = v.hosts
    # stopped right after the move, with the recorded pair blackholed
    assert f"violation after [{move.seq}]" in out, out
    assert f"blackholes: traffic {src} → {dst}" in out
    # host table: the moved host at its new switch and port
    assert any(line.split("│")[1:4] == [f" {dst:<4} ", f" {move.new_switch:<6} ", f" {move.new_port:<4} "]
               for line in out.splitlines() if line.startswith("│")), out
    # what the moved port's switches told the (absent) controller is buffered
    assert "PORT_STATUS" in out.split("show buffered")[1]
    # the flow tables shown are the rebuilt state's: each switch's entry count after the move
    state = rebuild(trace.header, trace.events, stop=lambda e: e.seq > move.seq).world
    for name, s in state.switches.items():
        assert out.count(f"│ {name} ") >= max(1, len(s.table)), name


def test_injecting_one_input_changes_the_outcome(migration_blackhole_trace: Path, tmp_path: Path) -> None:
    trace = read_trace(migration_blackhole_trace)
    v, move = _target(trace)
    src, dst = v.hosts
    before = rebuild(trace.header, trace.events, stop=lambda e: e.seq >= move.seq).world
    sw, _ = before.host_at[src]
    out = _run(migration_blackhole_trace, tmp_path,
               f"until seq {move.seq}\ncheck blackholes\ninject link_failure {src} {sw}\n"
               f"until violation blackholes\nshow injected\n")
    assert f"stopped before [{move.seq}]" in out
    assert "check blackholes at" in out and ": ok" in out  # no blackhole before the move
    assert re.search(rf"injected: input i\d+: link {src}:\d+-{sw}:\d+ fails", out), out
    # the sender is cut off before the move: the recorded violation never happens
    assert f"blackholes: traffic {src} → {dst}" not in out
    assert "end of trace: no violation of blackholes" in out, out


def test_injected_traffic_is_followed_through_the_tables(migration_blackhole_trace: Path, tmp_path: Path) -> None:
    trace = read_trace(migration_blackhole_trace)
    v, move = _target(trace)
    src, dst = v.hosts
    out = _run(migration_blackhole_trace, tmp_path,
               f"until violation\ninject traffic {src} {dst} tcp_syn\nshow buffered\n")
    injected = [line for line in out.splitlines() if "injected:" in line]
    assert re.match(rf"  injected: input i\d+: {src} sends TCP", injected[0]), injected
    # the packet really moved: at least one hop reported through the rebuilt tables
    assert any("reaches" in line for line in injected[1:]), out


def test_bad_command_is_one_clear_error(migration_blackhole_trace: Path, tmp_path: Path, capsys) -> None:
    script = tmp_path / "bad.txt"
    script.write_text("step 2\nfrobnicate now\n")
    assert main(["step", str(migration_blackhole_trace), "--headless", "--commands", str(script)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: commands line 2: unknown command 'frobnicate'")
    assert "fix:" in err[0]
    script.write_text("inject migration h1 s99\n")
    assert main(["step", str(migration_blackhole_trace), "--headless", "--commands", str(script)]) == 2
    assert "unknown switch 's99'" in capsys.readouterr().err


def test_live_controller_step_reaches_the_violation_and_injection_changes_it(
        migration_blackhole_trace: Path, tmp_path: Path) -> None:
    """Without --headless: a fresh simple_switch, the trace's inputs injected one step at a time."""
    trace = read_trace(migration_blackhole_trace)
    v, move = _target(trace)
    src, dst = v.hosts
    script = tmp_path / "live.txt"
    script.write_text("step 1\nuntil violation\nshow tables\n")
    buf = io.StringIO()
    assert run_step(migration_blackhole_trace, commands=script, headless=False, live_out=tmp_path / "live",
                    out=Console(file=buf, width=200, highlight=False)) == 0
    out = buf.getvalue()
    assert f"violation after [{move.seq}]" in out and f"blackholes: traffic {src} → {dst}" in out, out
    # the steps' events are the live controller's: its FLOW_MODs, recorded in the live run's trace
    live = read_trace(tmp_path / "live" / "trace.jsonl")
    assert live.header.command == "step"
    assert any(e.kind == "of_to_switch" and e.msg["type"] == "FLOW_MOD" for e in live.events)
    assert "-> c0: PACKET_IN" in out and "c0 -> s" in out

    before = rebuild(trace.header, trace.events, stop=lambda e: e.seq >= move.seq).world
    sw, _ = before.host_at[src]
    script.write_text(f"until seq {move.seq}\ninject link_failure {src} {sw}\nuntil violation blackholes\n")
    buf = io.StringIO()
    assert run_step(migration_blackhole_trace, commands=script, headless=False, live_out=tmp_path / "live2",
                    out=Console(file=buf, width=200, highlight=False)) == 0
    out = buf.getvalue()
    assert f"stopped before [{move.seq}]" in out
    assert "end of trace: no violation of blackholes" in out, out
    live = read_trace(tmp_path / "live2" / "trace.jsonl")
    assert [e.kind for e in live.events if e.is_input].count("link_failure") == 1
    # every recorded input was still injected after the what-if one, the move included
    assert sum(1 for e in live.events if isinstance(e, ts.HostMigration)) == 1
