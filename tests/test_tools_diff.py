"""`netsleuth diff`: events in one trace and not the other, by fingerprint, on a real fuzz trace."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from netsleuth.rootcause.diff import diff_events, event_key
from netsleuth.trace import schema as ts
from netsleuth.trace.io import read_trace, write_trace

pytestmark = pytest.mark.real


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netsleuth.cli", "diff", *args], capture_output=True, text=True,
                          timeout=60)


def _as_another_run(events: list[ts.Event]) -> list[ts.Event]:
    """The same events as another run would record them: other seqs, times, xids and input ids."""
    out = []
    for i, e in enumerate(events):
        changes: dict = {"seq": 1000 + 2 * i, "t": round(e.t + 0.25, 6)}
        if isinstance(e, (ts.ControlToSwitch, ts.ControlToController)):
            changes["msg"] = {**e.msg, "xid": (e.msg["xid"] or 0) + 77}
        if e.is_input:
            changes["id"] = "x" + e.id
            changes["deps"] = tuple("x" + d for d in e.deps)
        out.append(dataclasses.replace(e, **changes))
    return out


def test_identical_traces_have_no_difference(tools_fuzz_trace: Path) -> None:
    proc = _cli(str(tools_fuzz_trace), str(tools_fuzz_trace), "--json")
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["identical"] and d["only_in_a"] == d["only_in_b"] == [] and d["common"] == d["events_a"] > 300


def test_fingerprints_match_across_runs_and_differences_are_located(tools_fuzz_trace: Path, tmp_path: Path) -> None:
    a = read_trace(tools_fuzz_trace)
    b_events = _as_another_run(a.events)
    flow_mods = [i for i, e in enumerate(a.events) if isinstance(e, ts.ControlToSwitch) and e.msg["type"] == "FLOW_MOD"]
    packet_ins = [i for i, e in enumerate(a.events) if isinstance(e, ts.ControlToController)
                  and e.msg["type"] == "PACKET_IN"]
    gone, dup = flow_mods[2], packet_ins[5]
    extra = dataclasses.replace(b_events[dup], seq=b_events[dup].seq + 1)   # the controller saw it twice
    b_events = b_events[:dup + 1] + [extra] + b_events[dup + 1:]
    b_events.remove(b_events[gone if gone < dup else gone + 1])             # and one flow_mod never happened
    b = tmp_path / "b.jsonl"
    write_trace(b, ts.Trace(a.header, b_events))

    proc = _cli(str(tools_fuzz_trace), str(b), "--json")
    assert proc.returncode == 1, proc.stderr  # as diff(1): they differ
    d = json.loads(proc.stdout)
    assert [u["seq"] for u in d["only_in_a"]] == [a.events[gone].seq]
    # the surplus PACKET_IN: occurrences are paired in order, so B's last one of that key is unpaired
    assert len(d["only_in_b"]) == 1
    surplus = next(e for e in b_events if e.seq == d["only_in_b"][0]["seq"])
    assert event_key(surplus) == event_key(extra) and surplus.seq >= extra.seq
    assert d["common"] == len(a.events) - 1 and d["only_in_a_by_kind"] == {"of_to_switch": 1}
    # where: the B event paired with the A event just before the missing flow_mod
    assert d["only_in_a"][0]["after_other_seq"] == 1000 + 2 * (gone - 1)
    assert "FLOW_MOD" in d["only_in_a"][0]["what"] and "PACKET_IN" in d["only_in_b"][0]["what"]
    # multiset: it is the one occurrence more than A has of that key
    key = event_key(a.events[dup])
    n_a = sum(1 for e in a.events if event_key(e) == key)
    assert d["only_in_b"][0]["occurrence"] == n_a + 1

    text = _cli(str(tools_fuzz_trace), str(b))
    assert text.returncode == 1
    assert f"A seq {a.events[gone].seq}" in text.stdout and f"B seq {surplus.seq}" in text.stdout
    assert "only in A: 1 (of_to_switch 1)" in text.stdout


def test_a_changed_input_parameter_is_a_difference(tools_fuzz_trace: Path) -> None:
    a = read_trace(tools_fuzz_trace).events
    traffic = [i for i, e in enumerate(a) if isinstance(e, ts.TrafficInjection)]
    b = list(a)
    i = traffic[0]
    b[i] = dataclasses.replace(a[i], dst="h9" if a[i].dst != "h9" else "h8")
    d = diff_events(a, b)
    assert [u.seq for u in d.only_a] == [a[i].seq] and [u.seq for u in d.only_b] == [a[i].seq]
    assert d.only_a[0].kind == "traffic" and d.only_b[0].what.endswith(f" to {b[i].dst}")


def test_subset_trace_only_differs_on_one_side(tools_fuzz_trace: Path, tmp_path: Path) -> None:
    a = read_trace(tools_fuzz_trace)
    part = [e for e in a.events if e.is_input or isinstance(e, ts.SwitchConnected)]
    small = tmp_path / "inputs.jsonl"
    write_trace(small, ts.Trace(a.header, part))
    d = json.loads(_cli(str(tools_fuzz_trace), str(small), "--json").stdout)
    assert d["only_in_b"] == [] and len(d["only_in_a"]) == len(a.events) - len(part)
    assert "traffic" not in d["only_in_a_by_kind"] and d["only_in_a_by_kind"]["packet"] > 0


def test_unreadable_trace_is_one_clear_error(tools_fuzz_trace: Path, tmp_path: Path) -> None:
    proc = _cli(str(tools_fuzz_trace), str(tmp_path / "missing.jsonl"))
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and "missing.jsonl" in proc.stderr
    assert "fix:" in proc.stderr
