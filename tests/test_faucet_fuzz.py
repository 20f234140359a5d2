"""Config changes and restarts of the real Faucet (.venv-faucet) as fuzz inputs.

A config change rewrites Faucet's YAML as an operator does and sends SIGHUP;
the trace records the whole new file with its hash. These tests run real
Faucet: a recorded change replays to the same file and Faucet reloads it
(its log says so, its flow tables and the hosts' reachability change), the
minimizer drops a change that does not matter, a trace whose change is not a
bounded YAML mapping is refused up front, and a crashed Faucet restarts on
its latest config with every switch reconnected.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_process import cli

from netsleuth.controllers.faucet import generate_config
from netsleuth.invariants import registry
from netsleuth.invariants.persistence import PersistenceTracker
from netsleuth.jobs.fuzz import FuzzOptions, fuzz
from netsleuth.jobs.minimize import MinimizeOptions, run_minimize
from netsleuth.jobs.replay import ReplayOptions, replay
from netsleuth.live.driver import Runtime
from netsleuth.live.session import Session
from netsleuth.model.topo_builders import parse_topo
from netsleuth.schedulers.config_edits import render
from netsleuth.schedulers.fuzz import Rates
from netsleuth.trace import schema as ts
from netsleuth.trace.io import read_trace
from netsleuth.trace.validate import MAX_CONFIG_BYTES, config_sha256

pytestmark = [pytest.mark.real, pytest.mark.slow]

CHANGED = "changed, analyzing differences"  # Faucet's log line for every (re)load of a changed file
RELOADING = "Reloading configuration"  # at its start and on every SIGHUP it handles (SIGHUPs close together
# may find the file already loaded: "configuration is unchanged")


def config_change(config: dict[str, Any], edit: str) -> ts.ConfigChange:
    text = render(config)
    return ts.ConfigChange(seq=0, t=0.0, id="planned", controller="c0", edit=edit, config=text,
                           sha256=config_sha256(text))


def test_fuzzed_config_changes_replay_to_the_same_file_and_faucet_reloads_them(tmp_path: Path) -> None:
    rates = Rates({"config_change": 0.15})
    result = fuzz(FuzzOptions(controller="faucet:auto", topo="linear,2", out=tmp_path / "fuzz", steps=25, seed=4,
                              rates=rates, checks="liveness", warmup=1.0))
    assert result.exit_code == 0, result.data["violations"]
    changes = [e for e in read_trace(tmp_path / "fuzz" / "trace.jsonl").events if isinstance(e, ts.ConfigChange)]
    assert len(changes) >= 2
    for e in changes:
        assert e.sha256 == config_sha256(e.config) and e.edit
        assert isinstance(yaml.safe_load(e.config), dict)
    recorded_log = (tmp_path / "fuzz" / "faucet.log").read_text()
    assert recorded_log.count(RELOADING) >= 2 and recorded_log.count(CHANGED) >= 2  # its start, then SIGHUPs

    data = replay(ReplayOptions(trace=tmp_path / "fuzz" / "trace.jsonl", out=tmp_path / "replay"))
    assert data["completed"]
    replayed = [e for e in read_trace(tmp_path / "replay" / "trace.jsonl").events if isinstance(e, ts.ConfigChange)]
    assert [(e.sha256, e.edit) for e in replayed] == [(e.sha256, e.edit) for e in changes]
    # The file Faucet reads after the replay is, byte for byte, the last recorded one, and it reloaded each.
    assert (tmp_path / "replay" / "faucet.yaml").read_text() == changes[-1].config
    replayed_log = (tmp_path / "replay" / "faucet.log").read_text()
    assert replayed_log.count(RELOADING) >= 2 and replayed_log.count(CHANGED) >= 2


def _vlan_pushed(session: Session, switch: str, in_port: int) -> set[int]:
    """The VLAN ids Faucet's VLAN table (table 0) pushes on untagged frames arriving on ``in_port``."""
    pipeline = session.world.switches[switch].pipeline
    vids = set()
    for entry in pipeline.tables.entries(0):  # type: ignore[union-attr]  # a 1.3 switch
        text = str(entry)  # ovs-ofctl syntax
        if f",in_port={in_port},vlan_vid=0," in text:
            vids |= {vid for vid in (100, 200) if f"set_field:{0x1000 | vid}->vlan_vid" in text}
    return vids


def _loaded_hash(session: Session) -> str:
    """The sha256 of the config file Faucet has loaded, from its own Prometheus metric faucet_config_hash_info."""
    faucet = session.controllers[0].faucet
    assert faucet is not None
    with urllib.request.urlopen(f"http://127.0.0.1:{faucet.prometheus_port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    found = re.search(r'^faucet_config_hash_info\{[^}]*hashes="([0-9a-f]+)"', text, re.M)
    assert found, text[-2000:]
    return found.group(1)


def test_moving_a_port_to_another_vlan_cuts_the_pair_off(tmp_path: Path) -> None:
    topo = parse_topo("single,2")
    config = generate_config(topo)
    moved = copy.deepcopy(config)
    moved["vlans"]["vlan200"] = {"vid": 200, "description": "h1 alone"}
    moved["dps"]["s1"]["interfaces"][1]["native_vlan"] = "vlan200"
    change = config_change(moved, "move s1 port 1 to vlan200")
    seen: dict[str, Any] = {}

    async def body(s: Session, rt: Runtime) -> None:
        await rt.settle(0.2)
        seen["before"] = (await rt.ping("h1", "h2", 1, timeout=3.0)).ok
        seen["vids_before"] = _vlan_pushed(s, "s1", 1)
        rt.apply(await s.apply_input(change))
        for _ in range(100):  # Faucet reloads within a second or two; its new VLAN table entry shows it
            await asyncio.sleep(0.1)
            if 200 in _vlan_pushed(s, "s1", 1):
                break
        await rt.settle(0.3)
        seen["hash"] = await asyncio.to_thread(_loaded_hash, s)
        seen["vids_after"] = _vlan_pushed(s, "s1", 1)
        # these two must go unanswered: the wait is all timeout, and a ping Faucet forwards is answered
        # within about 10 ms (the one before the move, for one), so 1 s tells them apart
        seen["after"] = (await rt.ping("h1", "h2", 2, timeout=1.0)).ok
        seen["h2_still"] = (await rt.ping("h2", "h1", 3, timeout=1.0)).ok
        seen["separated"] = s.world.view().separated
        findings = registry.check(s.world.view(), registry.resolve("liveness"))
        seen["liveness"] = [f.message for f in findings]

    session = Session("test", "single,2", "faucet:auto", tmp_path / "out", warmup=2.0)
    session.execute(body)
    assert seen["hash"] == change.sha256, "Faucet did not load exactly the recorded file"
    assert seen["before"] and seen["vids_before"] == {100}
    assert seen["vids_after"] == {200}, "Faucet's VLAN table did not change"
    assert not seen["after"] and not seen["h2_still"]
    assert ("h1", "h2") in seen["separated"] and ("h2", "h1") in seen["separated"]
    assert seen["liveness"] == []
    assert yaml.safe_load((tmp_path / "out" / "faucet.yaml").read_text()) == moved
    assert (tmp_path / "out" / "faucet.log").read_text().count(CHANGED) == 2


def _record_liveness_trace(out: Path) -> list[ts.ConfigChange]:
    """A fuzz-shaped trace on linear,2: an irrelevant change (a new VLAN), then one that deletes dp s2 from the
    config -- Faucet then turns s2 away, a persistent liveness violation."""
    topo = parse_topo("linear,2")
    base = generate_config(topo)
    extra = copy.deepcopy(base)
    extra["vlans"]["vlan200"] = {"vid": 200, "description": "unused"}
    no_s2 = copy.deepcopy(extra)
    del no_s2["dps"]["s2"]
    s1 = no_s2["dps"]["s1"]
    s1.pop("stack", None)
    s1["interfaces"] = {1: s1["interfaces"][1]}
    changes = [config_change(extra, "add VLAN vlan200"), config_change(no_s2, "delete dp s2")]

    async def body(s: Session, rt: Runtime) -> None:
        await rt.settle(0.2)
        tracker = PersistenceTracker(3)
        for change in changes:
            rt.apply(await s.apply_input(change))
            await asyncio.sleep(1.0)
        for step in range(1, 200):
            await asyncio.sleep(0.1)
            await rt.settle(quiet=0.03, timeout=1.0)
            outcome = tracker.update(step, registry.check(s.world.view(), registry.resolve("liveness")))
            for t in outcome.new_persistent:
                s.record_finding(t.finding, persistent=True, details={"round": t.first_round})
            if outcome.new_persistent:
                return

    Session("fuzz", "linear,2", "faucet:auto", out, checks=["liveness"], header_extra={"persist": 3}).execute(body)
    return changes


def test_minimize_drops_an_irrelevant_config_change(tmp_path: Path) -> None:
    changes = _record_liveness_trace(tmp_path / "fuzz")
    trace = read_trace(tmp_path / "fuzz" / "trace.jsonl")
    violations = [e for e in trace.events if isinstance(e, ts.Violation) and e.persistent]
    assert violations and "s2" in violations[0].switches
    data = run_minimize(MinimizeOptions(trace=tmp_path / "fuzz" / "trace.jsonl", out=tmp_path / "min",
                                        controller=None, budget=150))
    mcs = [e for e in data["mcs"] if e["kind"] == "config_change"]
    assert [e["edit"] for e in mcs] == ["delete dp s2"], data["mcs_in_words"]
    assert mcs[0]["sha256"] == changes[1].sha256
    assert len(data["mcs"]) == 1


def _trace_with(tmp_path: Path, config: str, sha: str | None = None) -> Path:
    topo = parse_topo("linear,2")
    header = {"format": "netsleuth-trace", "version": 1, "topology": topo.to_json(), "topology_spec": "linear,2",
              "controller": "faucet:auto", "seed": 1, "tool_version": "0", "command": "fuzz", "extra": {},
              "openflow": {"s1": "1.3", "s2": "1.3"}}
    event = {"kind": "config_change", "seq": 1, "t": 1.0, "id": "i1", "deps": [], "controller": "c0",
             "edit": "by hand", "config": config, "sha256": sha or config_sha256(config)}
    path = tmp_path / "trace.jsonl"
    path.write_text(json.dumps(header) + "\n" + json.dumps(event) + "\n")
    return path


@pytest.mark.parametrize("config, problem", [
    ("- just\n- a list\n", "is not a YAML mapping"),
    ("vlans: {a: [unclosed\n", "is not valid YAML"),
    ("vlans:\n  v: {vid: 100}\n" + "# padding\n" * (MAX_CONFIG_BYTES // 10), "more than"),
])
def test_a_bad_config_change_is_refused_with_exit_2(tmp_path: Path, config: str, problem: str) -> None:
    proc = cli("replay", str(_trace_with(tmp_path, config)), "--out", str(tmp_path / "r"))
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and problem in lines[0] and " -- fix: " in lines[0], proc.stderr
    assert not (tmp_path / "r" / "faucet.yaml").exists()  # refused before anything was written or started


def test_a_config_change_whose_hash_does_not_match_is_refused(tmp_path: Path) -> None:
    proc = cli("replay", str(_trace_with(tmp_path, "vlans: {}\n", sha="0" * 64)), "--out", str(tmp_path / "r"))
    assert proc.returncode == 2 and "is not the hash of its config" in proc.stderr, proc.stderr


def test_config_change_rate_needs_faucet(tmp_path: Path) -> None:
    proc = cli("fuzz", "--controller", "osken:os_ken.app.simple_switch_13", "--topo", "linear,2", "--steps", "5",
               "--rate", "config_change=0.1", "--out", str(tmp_path / "f"))
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "config_change" in lines[0] and "faucet:" in lines[0], proc.stderr
    assert not (tmp_path / "f" / "trace.jsonl").exists()


def test_faucet_crash_and_recovery_reconnect_every_switch_on_the_latest_config(tmp_path: Path) -> None:
    rates = Rates({"controller_crash": 0.08, "controller_recovery": 0.4, "config_change": 0.15})
    result = fuzz(FuzzOptions(controller="faucet:auto", topo="linear,2", out=tmp_path, steps=45, seed=2,
                              rates=rates, checks="liveness"))
    assert result.exit_code == 0, result.data["violations"]
    events = read_trace(tmp_path / "trace.jsonl").events
    recoveries = [e for e in events if isinstance(e, ts.ControllerRecovery)]
    assert recoveries and any(isinstance(e, ts.ConfigChange) and e.seq < recoveries[-1].seq for e in events)
    for rec in recoveries:  # every switch handshakes with the restarted Faucet
        after = {e.dpid for e in events if isinstance(e, ts.SwitchConnected) and e.seq > rec.seq}
        assert after == {1, 2}
    last_change = [e for e in events if isinstance(e, ts.ConfigChange)][-1]
    assert (tmp_path / "faucet.yaml").read_text() == last_change.config
    assert result.data["controllers"][0]["alive"]
    final = registry.check(_rebuilt_view(tmp_path / "trace.jsonl"), registry.resolve("liveness"))
    assert final == []


def _rebuilt_view(trace: Path) -> Any:
    from netsleuth.world.rebuild import rebuild

    t = read_trace(trace)
    return rebuild(t.header, t.events).world.view()
