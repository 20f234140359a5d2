"""NICE's pyswitch bugs: found in pyswitch, absent from the fixed variant, replayable."""

from __future__ import annotations

import json

import pytest

from netsleuth.cli import main
from netsleuth.jobs.replay import ReplayOptions, replay
from netsleuth.nice.job import CheckOptions, check
from netsleuth.trace import schema as ts
from netsleuth.trace.io import read_trace, write_trace

# (bug, scenario, property, strategy) -- PKT-SEQ as in NICE's Table 4 where the space is large
BUGS = [
    ("BUG-I", "mobile", "NoBlackHolesMobile", "pkt-seq"),
    ("BUG-II", "direct", "StrictDirectPaths", "full"),
    ("BUG-III", "loop", "NoForwardingLoops", "full"),
]


@pytest.mark.parametrize("bug,scenario,prop,strategy", BUGS)
def test_bug_found_in_pyswitch_with_a_replayable_counterexample(tmp_path, bug, scenario, prop, strategy):
    d = check(CheckOptions(app="pyswitch", scenario=scenario, strategy=strategy, stop_at_first=True,
                           out=tmp_path / "check"))
    assert d["violations"], bug
    v = d["violations"][0]
    assert v["property"] == prop
    saved = json.loads((tmp_path / "check" / "result.json").read_text())
    assert saved["violations"][0]["counterexample"] == v["counterexample"]
    trace = read_trace(v["counterexample"])
    assert trace.header.controller == "app:pyswitch"
    steps = [e for e in trace.events if isinstance(e, ts.McStep)]
    assert len(steps) == v["path_length"] > 0
    r = replay(ReplayOptions(trace=v["counterexample"], out=tmp_path / "replay", times=2))
    assert r["reproduced"] is True and r["reproduction_rate"] == 1.0
    assert all(x["matched"] == len(steps) for x in r["replays"])
    assert r["replays"][0]["findings"] == r["replays"][1]["findings"]  # deterministic


@pytest.mark.parametrize("bug,scenario,prop,strategy", BUGS)
def test_fixed_pyswitch_has_no_violation_in_the_whole_space(bug, scenario, prop, strategy):
    d = check(CheckOptions(app="pyswitch-fixed", scenario=scenario, strategy=strategy))
    assert d["completed"], bug
    assert d["violations"] == [] and d["transitions"] > 50


def test_replay_cli_reports_a_tampered_counterexample_as_not_reproduced(tmp_path):
    d = check(CheckOptions(app="pyswitch", scenario="direct", stop_at_first=True, out=tmp_path / "c"))
    cex = d["violations"][0]["counterexample"]
    assert main(["replay", cex, "--out", str(tmp_path / "r1")]) == 0
    trace = read_trace(cex)
    steps = [e for e in trace.events if isinstance(e, ts.McStep)]
    # drop the transition that delivers the reply: the violation cannot happen any more
    drop = next(i for i, e in enumerate(steps) if e.what.startswith("h1 receives"))
    kept = [e for e in trace.events if e is not steps[drop]]
    bad = tmp_path / "bad.jsonl"
    write_trace(bad, ts.Trace(trace.header, kept))
    assert main(["replay", str(bad), "--out", str(tmp_path / "r2")]) == 1
    r = json.loads((tmp_path / "r2" / "replay.json").read_text())
    assert r["reproduced"] is False


def test_check_cli_json_and_bad_input(capsys):
    assert main(["check", "pyswitch", "--scenario", "pings", "--pings", "2", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert {"transitions", "unique_states", "seconds", "violations"} <= set(d)
    assert d["violations"] == [] and d["completed"]
    assert main(["check", "no-such-app"]) == 2
    assert "error:" in capsys.readouterr().err
    assert main(["check", "pyswitch", "--hosts", "h1>h9:2"]) == 2
    assert main(["check", "pyswitch", "--property", "NoSuchProperty"]) == 2


def test_interrupted_check_keeps_partial_results(tmp_path):
    calls = []

    def interrupt(result):
        calls.append(result.transitions)
        raise KeyboardInterrupt  # what Ctrl-C does in the middle of the search

    opts = CheckOptions(app="pyswitch", scenario="pings", pings=4, out=tmp_path)
    opts.progress = interrupt
    d = check(opts)
    assert calls and d["interrupted"] and not d["completed"] and d["stopped_by"] == "interrupt"
    assert d["transitions"] >= calls[0] > 0 and d["unique_states"] > 0
    assert json.loads((tmp_path / "result.json").read_text())["interrupted"] is True


def test_property_library_on_apps_that_break_them():
    import sys
    import types

    from netsleuth.nice.app import App
    from netsleuth.nice.explore import Explorer, SearchOptions
    from netsleuth.nice.loading import make_system
    from netsleuth.nice.scenarios import build_config

    class Hub(App):
        """Floods everything and never installs a rule: every packet goes to the controller."""

        name = "hub"

        def packet_in(self, dpid, in_port, reason, total_len, buffer_id, packet):
            self.flood(dpid, buffer_id, in_port)

    class Forgets(Hub):
        """Floods packets from port 1 only; the rest stay buffered forever (NICE's BUG-V kind)."""

        name = "forgets"

        def packet_in(self, dpid, in_port, reason, total_len, buffer_id, packet):
            if in_port == 1:
                self.flood(dpid, buffer_id, in_port)

    mod = types.ModuleType("nice_test_apps")
    mod.Hub, mod.Forgets = Hub, Forgets
    sys.modules["nice_test_apps"] = mod
    props = ("NoForgottenPackets", "NoBlackHoles", "DirectPaths", "NoForwardingLoops")

    def run(app):
        cfg = build_config(f"app:nice_test_apps:{app}", scenario="pings", pings=2, properties=props)
        return Explorer(make_system(cfg), SearchOptions()).run()

    hub = run("Hub")
    assert hub.completed
    assert set(hub.violation_counts) == {"DirectPaths"}     # delivered, but never a direct path
    forgets = run("Forgets")
    assert {"NoForgottenPackets", "NoBlackHoles"} <= set(forgets.violation_counts)
    assert "NoForwardingLoops" not in forgets.violation_counts
