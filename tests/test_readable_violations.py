"""Violations a person can read, from real runs of real controllers.

Each test runs a real os-ken app against the mock network (through the
``netsleuth`` command, as a user would) and reads what it prints and what it
writes: one violation per distinct defect (a loop per cycle, a blackhole per
dropping rule, unreachable pairs per cause), header classes in words, every
printed line under 160 characters, and the exact header space still in
``result.json``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_process import cli as run_cli

from netsleuth.invariants.forwarding import Finding
from netsleuth.invariants.persistence import PersistenceTracker
from netsleuth.jobs.replay import find_target
from netsleuth.trace.io import read_trace

pytestmark = [pytest.mark.real, pytest.mark.slow]

HUB = Path(__file__).parent / "data" / "osken_apps" / "proactive_hub.py"
WIDTH = 160


def cli(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, timeout=600, env={"COLUMNS": "200"})


def assert_short(text: str) -> None:
    long = [line for line in text.splitlines() if len(line) >= WIDTH]
    assert not long, long


def headlines(text: str) -> list[str]:
    """The first line of each printed violation."""
    return [line for line in text.splitlines() if line.startswith("  - ")]


def violations(out: Path, invariant: str) -> list[dict]:
    d = json.loads((out / "result.json").read_text())
    return [v for v in d["violations"] if v["invariant"] == invariant]


@pytest.fixture(scope="module")
def hub_ring(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    """A proactive hub (a FLOOD catch-all, and TCP port 22 sent out of a port no switch has) on ring,4."""
    out = tmp_path_factory.mktemp("hub") / "run"
    proc = cli("run", "--controller", f"osken:{HUB}", "--topo", "ring,4", "--out", str(out))
    assert proc.returncode == 1, proc.stderr
    return out, proc


def test_hub_on_a_ring_is_one_loop_per_cycle(hub_ring: tuple[Path, subprocess.CompletedProcess]) -> None:
    out, proc = hub_ring
    loops = violations(out, "loops")
    # Flooding around a ring closes two cycles (one each way); every host's port enters both, and
    # each entry point sees the cycle from another hop: 8 (ingress, rotation) pairs, 2 defects.
    assert len(loops) == 2, [v["message"] for v in loops]
    cycles = [tuple(v["details"]["cycle"]) for v in loops]
    assert len({frozenset(c) for c in cycles}) == 2
    for v in loops:
        entered = [s["at"] for s in v["details"]["header_spaces"]]
        assert sorted(entered) == ["s1:1", "s2:1", "s3:1", "s4:1"]
        assert v["details"]["group"][0] == "loop"
        assert v["message"].startswith("all traffic except TCP to port 22 loops ")
        # the exact header space stays in result.json
        assert v["details"]["header_space"] == "* except [dl_type=0x0800,nw_proto=6,tp_dst=22]"
    assert "all traffic except TCP to port 22 loops s1 -> " in proc.stdout
    assert not [h for h in headlines(proc.stdout) if "dl_type=" in h]  # wildcard expressions: --verbose
    assert "header space at" not in proc.stdout
    assert "no recorded packet of h1 for netsleuth trace-packet to follow" in proc.stdout  # the run sent none
    assert_short(proc.stdout)


def test_wildcard_drop_is_one_blackhole_per_rule(hub_ring: tuple[Path, subprocess.CompletedProcess]) -> None:
    out, proc = hub_ring
    holes = violations(out, "blackholes")
    assert sorted(v["details"]["where"] for v in holes) == ["s1", "s2", "s3", "s4"]
    for v in holes:
        sw = v["details"]["where"]
        assert v["details"]["group"] == ["blackhole", sw, "rule dl_type=0x0800,nw_proto=6,tp_dst=22 priority 100"]
        assert v["message"].startswith("TCP to port 22 except to h")
        assert "dropped at" in v["message"] and "output:99" in v["message"]
        assert "tp_dst=22" in v["details"]["header_space"]
    unreach = violations(out, "reachability")
    # one cause per switch's rule: each cuts its host off from the three others
    assert len(unreach) == 4
    for v in unreach:
        assert len(v["details"]["pairs"]) == 3
        assert "cannot reach" in v["message"] and ":22" in v["message"]
    assert_short(proc.stdout)


def test_verbose_prints_the_exact_space_in_short_lines(hub_ring: tuple[Path, subprocess.CompletedProcess]) -> None:
    out, _proc = hub_ring
    plain = cli("invariants", str(out / "trace.jsonl"))
    verbose = cli("invariants", str(out / "trace.jsonl"), "--verbose")
    assert plain.returncode == verbose.returncode == 1
    assert "header space at s1:1: * except [dl_type=0x0800,nw_proto=6,tp_dst=22]" in verbose.stdout
    assert "header space at" not in plain.stdout
    assert_short(plain.stdout)
    assert_short(verbose.stdout)


def test_fuzzed_simple_switch_migration_blackhole(tmp_path: Path) -> None:
    zero = ["--rate", "switch_failure=0", "--rate", "switch_recovery=0", "--rate", "link_failure=0",
            "--rate", "link_recovery=0"]
    found = None
    for seed in (1, 2, 3):
        out = tmp_path / f"seed{seed}"
        proc = cli("fuzz", "--controller", "osken:os_ken.app.simple_switch", "--topo", "linear,3", "--steps", "400",
                   "--seed", str(seed), "--rate", "host_migration=0.03", "--rate", "traffic=0.3", *zero,
                   "--check", "blackholes", "--round-seconds", "0.02", "--out", str(out))
        holes = [v for v in violations(out, "blackholes") if v["persistent"]]
        if holes:
            found = (out, proc, holes[0])
            break
    assert found is not None, "simple_switch's migration blackhole in 3 seeds"
    out, proc, v = found
    assert proc.returncode == 1
    src, dst = v["hosts"]
    # a simple_switch rule matches one host pair exactly: the class is that pair's traffic, in words
    assert v["message"].startswith(f"traffic {src} → {dst} dropped at "), v["message"]
    assert "dl_src=" in v["details"]["header_space"] and "header space at" not in proc.stdout
    assert not [h for h in headlines(proc.stdout) if "dl_src=" in h]
    assert f"blackholes: traffic {src} → {dst}" in proc.stdout
    assert "example: ICMP echo request" in proc.stdout and "netsleuth trace-packet" in proc.stdout
    assert_short(proc.stdout)
    # the trace's violation event keeps the exact space and the grouped identity the minimizer matches
    target = find_target(read_trace(out / "trace.jsonl").events)
    assert target is not None and target.group[0] == "blackhole"
    assert "dl_src=" in target.details["header_space"]


def test_simple_switch_13_on_a_ring(tmp_path: Path) -> None:
    out = tmp_path / "r13"
    proc = cli("run", "--controller", "osken:os_ken.app.simple_switch_13", "--topo", "ring,4", "--pingall",
               "--ping-timeout", "0.5", "--out", str(out))
    assert proc.returncode == 1, proc.stderr
    holes = violations(out, "blackholes")
    assert holes
    groups = [tuple(v["details"]["group"]) for v in holes]
    assert len(groups) == len(set(groups))  # one violation per dropping rule
    for v in holes:
        assert " table 0: rule " in v["details"]["rule_text"]
        assert v["message"].startswith("traffic h") and "eth_src" not in v["message"]
        assert "eth_src=" in v["details"]["header_space"]
    assert_short(proc.stdout)
    verbose = cli("invariants", str(out / "trace.jsonl"), "--verbose")
    assert "header space at" in verbose.stdout
    assert_short(verbose.stdout)


def test_persistence_keys_on_the_grouped_identity(hub_ring: tuple[Path, subprocess.CompletedProcess]) -> None:
    """A loop whose entry hosts change between checks is still the same loop: it persists."""
    out, _proc = hub_ring
    v = violations(out, "loops")[0]
    t = PersistenceTracker(3)
    for r, hosts in enumerate((("h1",), ("h2",), ("h1", "h3"))):
        outcome = t.update(r, [Finding("loops", v["message"], hosts, tuple(v["switches"]), v["details"])])
    assert len(outcome.new_persistent) == 1
