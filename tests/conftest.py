"""Fixtures shared by several test files: real traces recorded against real controllers."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

# On CI, property tests draw the same examples every run, so a red build is
# reproducible from its log and never depends on the luck of one run; on a
# developer's machine they keep exploring new examples each time.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

SIMPLE_SWITCH = "osken:os_ken.app.simple_switch"


@pytest.fixture(scope="session")
def migration_blackhole_trace(built_once: Callable[[str, Callable[[Path], Path]], Path]) -> Path:
    """A fuzz trace of simple_switch on linear,3 ending in the migration blackhole (recorded once per run).

    Same rates and seeds as tests/test_replay.py's fixture: a host moves, the
    learned flow still points at its old port. Seed 1 usually finds it in ~3 s.
    Short rounds, as in the other fuzz runs of timer-free apps: simple_switch
    sets no timeout and no timer, so a round needs no wall time beyond the
    network settling (nothing pending, the controller quiet), which every
    round still waits for.
    """
    from netsleuth.jobs.fuzz import FuzzOptions, fuzz
    from netsleuth.schedulers.fuzz import Rates

    def record(out: Path) -> Path:
        rates = Rates({"host_migration": 0.03, "traffic": 0.3})
        for seed in range(1, 6):
            result = fuzz(FuzzOptions(SIMPLE_SWITCH, "linear,3", out / str(seed), steps=400, seed=seed,
                                      rates=rates, round_seconds=0.02))
            if any(v["persistent"] and v["invariant"] == "blackholes" for v in result.violations):
                return out / str(seed) / "trace.jsonl"
        pytest.fail("fuzzing found no migration blackhole")

    return built_once("migration_blackhole_trace", record)


@pytest.fixture(scope="session")
def tools_fuzz_trace(built_once: Callable[[str, Callable[[Path], Path]], Path]) -> Path:
    """A mixed fuzz trace of simple_switch on linear,3 for pcap/diff/reduce/trace-packet (~7 s).

    Seeded inputs of every kind that shapes flow tables and packet paths:
    traffic (ICMP, ARP, TCP SYN), host moves (the blackhole), switch failures
    and recoveries (tables lost), link failures. Short rounds keep it fast;
    --keep-going so it runs all its steps (several hundred events).
    """
    from netsleuth.jobs.fuzz import FuzzOptions, fuzz
    from netsleuth.schedulers.fuzz import Rates

    def record(out: Path) -> Path:
        rates = Rates({"traffic": 0.5, "host_migration": 0.03, "switch_failure": 0.03, "switch_recovery": 0.3,
                       "link_failure": 0.03, "link_recovery": 0.3})
        fuzz(FuzzOptions(SIMPLE_SWITCH, "linear,3", out / "run", steps=100, seed=1, rates=rates, keep_going=True,
                         round_seconds=0.02))
        return out / "run" / "trace.jsonl"

    return built_once("tools_fuzz_trace", record)


@pytest.fixture(scope="session")
def pox_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """POX gar, unmodified (tests/pox_checkout.py): one checkout shared by the session's workers."""
    from pox_checkout import pox_checkout

    return pox_checkout(tmp_path_factory.getbasetemp().parent)


@pytest.fixture
def pox_env(pox_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``pox:`` controllers run from that checkout ($NETSLEUTH_POX)."""
    monkeypatch.setenv("NETSLEUTH_POX", str(pox_home))
    return pox_home
