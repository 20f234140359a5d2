"""`netsleuth defined run|step`: summaries, the recorded trace, the stepping console."""

from __future__ import annotations

import io
import json

from netsleuth.cli import main
from netsleuth.defined.console import run_console
from netsleuth.trace.io import read_trace
from netsleuth.trace.schema import DefinedExternal


def test_run_json_summary_and_trace(tmp_path, capsys):
    rc = main(["defined", "run", "--scenario", "bgp-med", "--runs", "20", "--mode", "plain", "--json"])
    assert rc == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["runs"] == 20 and plain["distinct_delivery_sequences"] > 1 and 0 < plain["bug_runs"] < 20
    out = tmp_path / "rb"
    rc = main(["defined", "run", "--scenario", "bgp-med", "--runs", "20", "--json", "--out", str(out)])
    assert rc == 0
    rb = json.loads(capsys.readouterr().out)
    assert rb["distinct_delivery_sequences"] == 1 and rb["bug_runs"] == 20 and rb["ls_reproduces_first_run"]
    tr = read_trace(out / "trace.jsonl")
    assert tr.header.extra["defined"]["scenario"] == "bgp-med"
    assert [type(e) for e in tr.events] == [DefinedExternal] * 3
    assert {e.group for e in tr.events} == {2}
    assert json.loads((out / "result.json").read_text())["runs"] == 20


def test_step_console_commands(tmp_path, capsys):
    out = tmp_path / "rip"
    assert main(["defined", "run", "--scenario", "rip-timer", "--runs", "1", "--out", str(out), "--json"]) == 0
    capsys.readouterr()
    buf = io.StringIO()
    rc = run_console(out / "trace.jsonl", [
        "status",
        "event",
        "phase",
        'until R1 msg["kind"] == "timer" and msg["name"] == "expire:N"',
        "print R1",
        "group",
        "routes",
    ], buf, None)
    text = buf.getvalue()
    assert rc == 0, text
    assert "predicate holds at R1" in text
    assert '"N": [3, "R3"]' in text  # expired, then the backup's announcement in the same group
    # Same recording, alternative ordering: the backup's announcement comes first -> black hole.
    buf = io.StringIO()
    run_console(out / "trace.jsonl", ["run", "print R1"], buf, "reverse")
    assert '"N": [2, "R2"]' in buf.getvalue()
    # Bad commands: one error line each, the console goes on, exit code 2.
    buf = io.StringIO()
    rc = run_console(out / "trace.jsonl", ["frobnicate", "ordering nope", "print R9", "status"], buf, None)
    lines = buf.getvalue().splitlines()
    assert rc == 2
    assert sum(line.startswith("error: ") for line in lines) == 3
    assert lines[-1].startswith("group 0")


def test_step_cli_reads_a_commands_file(tmp_path, capsys):
    out = tmp_path / "bgp"
    main(["defined", "run", "--scenario", "bgp-med", "--runs", "1", "--out", str(out), "--json"])
    capsys.readouterr()
    cmds = tmp_path / "cmds.txt"
    cmds.write_text("run\nroutes\n")
    assert main(["defined", "step", str(out / "trace.jsonl"), "--commands", str(cmds), "--ordering", "origin"]) == 0
    assert 'R3: {"203.0.113.0/24": "p3"}' in capsys.readouterr().out


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["defined", "run", "--scenario", "ospf", "--topo", "nowhere", "--runs", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown DEFINED topology") and "fix:" in err
    assert main(["defined", "run", "--scenario", "bgp-med", "--ordering", "sideways", "--runs", "1"]) == 2
    assert "unknown ordering" in capsys.readouterr().err
    assert main(["defined", "run", "--scenario", "bgp-med", "--jitter", "1.5", "--runs", "1"]) == 2
    assert "--jitter must be in [0, 1)" in capsys.readouterr().err
    not_defined = tmp_path / "t.jsonl"
    not_defined.write_text('{"format":"netsleuth-trace","version":1,"topology":{},"topology_spec":"x",'
                           '"controller":"c","seed":0,"tool_version":"0"}\n')
    assert main(["defined", "step", str(not_defined), "--commands", str(not_defined)]) == 2
    assert "not a DEFINED run" in capsys.readouterr().err


def test_netsleuth_step_routes_a_defined_run_to_lockstep(tmp_path, capsys):
    """`netsleuth step` is the one stepping command: a DEFINED run opens the lockstep console."""
    out = tmp_path / "rip"
    assert main(["defined", "run", "--scenario", "rip-timer", "--runs", "1", "--out", str(out), "--json"]) == 0
    capsys.readouterr()
    cmds = tmp_path / "cmds.txt"
    cmds.write_text("run\nprint R1\n")
    assert main(["step", str(out / "trace.jsonl"), "--commands", str(cmds)]) == 0
    assert '"N": [3, "R3"]' in capsys.readouterr().out
    assert main(["step", str(out / "trace.jsonl"), "--commands", str(cmds), "--ordering", "reverse"]) == 0
    assert '"N": [2, "R2"]' in capsys.readouterr().out
