"""`netsleuth minimize` on a real fuzz trace of the os-ken simple_switch migration blackhole."""

from __future__ import annotations

from pathlib import Path

import pytest

from netsleuth.jobs.fuzz import FuzzOptions, fuzz
from netsleuth.jobs.minimize import MinimizeOptions, run_minimize
from netsleuth.jobs.replay import ReplayOptions, replay
from netsleuth.schedulers.fuzz import Rates
from netsleuth.trace.io import read_trace

pytestmark = [pytest.mark.real, pytest.mark.slow]

SIMPLE_SWITCH = "osken:os_ken.app.simple_switch"
NOISY = Rates({"host_migration": 0.01, "traffic": 0.9, "link_failure": 0.02, "link_recovery": 0.2})


@pytest.fixture(scope="module")
def long_blackhole_trace(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fuzz")
    for seed in range(1, 12):
        result = fuzz(FuzzOptions(SIMPLE_SWITCH, "linear,3", out / str(seed), steps=400, seed=seed, rates=NOISY,
                                  record_packets=False, round_seconds=0.02))
        inputs = sum(result.data["inputs"].values())
        if inputs >= 60 and any(v["persistent"] and v["invariant"] == "blackholes" for v in result.violations):
            return out / str(seed) / "trace.jsonl"
    pytest.fail("no seed gave a migration blackhole after >= 60 inputs")


def test_minimize_real_migration_blackhole(long_blackhole_trace: Path, tmp_path: Path) -> None:
    d = run_minimize(MinimizeOptions(trace=long_blackhole_trace, out=tmp_path, jobs=2))
    assert d["inputs_before"] >= 60
    assert d["inputs_after"] <= 4 and d["one_minimal"], d["mcs_in_words"]
    kinds = [e["kind"] for e in d["mcs"]]
    assert "host_migration" in kinds  # the bug needs the move
    # mcs.jsonl is a trace netsleuth replay accepts, and it reproduces at least 4 of 5 times
    mcs = read_trace(tmp_path / "mcs.jsonl")
    assert [e.id for e in mcs.events if e.is_input] == [e["id"] for e in d["mcs"]]
    r = replay(ReplayOptions(trace=tmp_path / "mcs.jsonl", out=tmp_path / "check", times=5, epsilon=0.1))
    assert r["reproduction_rate"] >= 0.8, r["replays"]
    assert d["sizes"][0] == d["inputs_before"] and d["sizes"][-1] == d["inputs_after"]
