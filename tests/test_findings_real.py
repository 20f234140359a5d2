"""The findings users of real controllers expect: a traceback in the controller's log, a message the
switch refuses, and a failed ping that says why -- each against a real os-ken app.

The apps are in tests/data/osken_apps/: keyerror_on_move.py (simple_switch with a seeded KeyError
when a port nothing was learned on goes away: a host moves before sending), bad_flowmod.py (a hub
that sends a FLOW_MOD with output port 0 once per switch), arp_filter_hub.py (a hub whose s1 drops
every ARP) and deaf.py (takes packet-ins, answers none).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from netsleuth.jobs.fuzz import FuzzOptions, fuzz
from netsleuth.jobs.minimize import MinimizeOptions, run_minimize
from netsleuth.jobs.replay import ReplayOptions, replay
from netsleuth.jobs.run import RunOptions, run
from netsleuth.schedulers.fuzz import Rates
from netsleuth.trace import schema as ts
from netsleuth.trace.io import read_trace

pytestmark = [pytest.mark.real, pytest.mark.slow]

APPS = Path(__file__).parent / "data" / "osken_apps"
KEYERROR = f"osken:{APPS / 'keyerror_on_move.py'}"
MOVES = Rates({**dict.fromkeys(("switch_failure", "switch_recovery", "link_failure", "link_recovery"), 0.0),
               "host_migration": 0.03, "traffic": 0.5})


def test_seeded_keyerror_is_found_under_fuzz_and_minimized_to_the_move(tmp_path: Path) -> None:
    d = fuzz(FuzzOptions(KEYERROR, "linear,3", tmp_path / "fuzz", steps=150, seed=2, rates=MOVES,
                         checks="exceptions"))
    assert d.exit_code == 1
    [v] = [v for v in d.violations if v["persistent"]]
    assert v["invariant"] == "exceptions"
    det = v["details"]
    assert det["exception"] == "KeyError"
    assert det["group"][:3] == ["KeyError", "keyerror_on_move.py", "forget_port"]
    assert "macs_on.pop" in det["frame_text"] and "handling EventOFPPortStatus" in det["handler_text"]
    trace = read_trace(tmp_path / "fuzz" / "trace.jsonl")
    inputs = [e for e in trace.events if e.is_input]
    # the inputs before it, as recorded: among them the move whose PORT_STATUS the handler crashed on
    before = [e for e in inputs if e.id in det["after_inputs"]]
    mover = next(e for e in before if isinstance(e, ts.HostMigration))
    assert f"{mover.id}: host {mover.host} moves" in det["after_text"]
    assert "; the controller had last got s" in det["after_text"] and "PORT_STATUS (trace seq" in det["after_text"]
    assert len(inputs) >= 10   # traffic and moves before it: something to minimize

    m = run_minimize(MinimizeOptions(trace=tmp_path / "fuzz" / "trace.jsonl", out=tmp_path / "min", jobs=1,
                                     controller=[KEYERROR], executor="serial"))
    assert m["one_minimal"] and m["inputs_after"] == 1, m["mcs_in_words"]
    assert [e["kind"] for e in m["mcs"]] == ["host_migration"]
    r = replay(ReplayOptions(trace=tmp_path / "min" / "mcs.jsonl", out=tmp_path / "check", epsilon=0.1,
                               controller=KEYERROR))
    assert r["reproduced"] is True


def test_a_refused_flow_mod_is_an_openflow_error(tmp_path: Path) -> None:
    d = run(RunOptions(f"osken:{APPS / 'bad_flowmod.py'}", "linear,3", tmp_path, pingall=True))
    assert d.exit_code == 1
    [v] = [v for v in d.violations if v["invariant"] == "openflow-errors"]
    det = v["details"]
    assert (det["error_type"], det["error_code"], det["request"]) == ("BAD_ACTION", "BAD_OUT_PORT", "FLOW_MOD")
    assert det["request_text"].startswith(f"FLOW_MOD xid {det['xid']} (trace seq {det['seq']}): ADD priority=100")
    assert "dl_type=0x88cc -> output:0" in det["request_text"]
    assert det["count"] == 3   # once per switch, one violation
    assert v["message"].endswith("refused c0's FLOW_MOD with ERROR BAD_ACTION/BAD_OUT_PORT")
    # the recorded message is the one named
    trace = read_trace(tmp_path / "trace.jsonl")
    sent = next(e for e in trace.events if e.seq == det["seq"])
    assert isinstance(sent, ts.ControlToSwitch) and sent.msg["type"] == "FLOW_MOD" and sent.msg["xid"] == det["xid"]
    # replay recognises it (the same error on the same kind of message), whatever xid it has this time
    persistent = [e for e in trace.events if isinstance(e, ts.Violation) and e.persistent]
    index = next(i for i, e in enumerate(persistent) if e.invariant == "openflow-errors")
    r = replay(ReplayOptions(trace=tmp_path / "trace.jsonl", out=tmp_path / "replay", violation=index,
                             controller=f"osken:{APPS / 'bad_flowmod.py'}"))
    assert r["reproduced"] is True
    # os-ken 1.4.1 itself crashes on an OpenFlow 1.0 ERROR (it looks up OFPET_EXPERIMENTER, which 1.0 lacks):
    # a framework traceback, named as such
    [e] = [v for v in d.violations if v["invariant"] == "exceptions"]
    assert e["details"]["exception"] == "AttributeError"
    assert "in the framework" in e["details"]["frame_text"]


def test_failed_pings_say_why_dropped_by_a_rule(tmp_path: Path) -> None:
    d = run(RunOptions(f"osken:{APPS / 'arp_filter_hub.py'}", "linear,3", tmp_path, pingall=True))
    pa = d.data["pingall"]
    assert d.exit_code == 1 and d.violations == []    # no invariant objects: only the pings tell
    assert sorted(pa["failed_pairs"]) == ["h1->h2", "h1->h3", "h2->h1", "h3->h1"]
    for pair in pa["failed_pairs"]:
        why = pa["failed_why"][pair]
        assert (why["cause"], why["frame"]) == ("dropped", "ARP request"), why
        assert why["why"].startswith("ARP never answered: ")
        assert "dropped at s1 by rule priority=200 dl_type=0x0806 -> no actions" in why["why"]


def test_failed_pings_say_why_punted_and_never_answered(tmp_path: Path) -> None:
    d = run(RunOptions(f"osken:{APPS / 'deaf.py'}", "linear,2", tmp_path, pingall=True))
    pa = d.data["pingall"]
    assert d.exit_code == 1 and pa["failed"] == 2
    assert pa["failed_why"]["h1->h2"] == {
        "cause": "punted-unanswered", "frame": "ARP request",
        "why": "ARP never answered: h1's ARP request never reached h2: punted to the controller at s1 (PACKET_IN), "
               "which never sent it on"}


def test_delivery_follows_arp(tmp_path: Path) -> None:
    """An ARP request nobody forwards is undelivered (delivery used to follow IPv4 frames only)."""
    d = run(RunOptions(f"osken:{APPS / 'deaf.py'}", "linear,2", tmp_path, pingall=True, checks="delivery"))
    found = [v for v in d.violations if v["invariant"] == "delivery"]
    assert found and all(v["message"].startswith("ARP") for v in found), found
