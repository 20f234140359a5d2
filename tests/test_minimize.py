"""Delta debugging to a minimal causal sequence (netsleuth.minimize), on a simulated network.

The oracle is :class:`netsleuth.minimize.synthetic.SimOracle`: 200 seeded
random inputs of every kind (failure/recovery pairs, migration chains,
traffic, drops, delays) replayed through a tiny simulated network that
rejects impossible input sequences, with an injected bug that needs exactly
two inputs. Both strategies must find exactly those, 1-minimal; a local pool
must give the same search as a serial run; a flaky oracle still minimizes
with K replays; a budget returns the best so far.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netsleuth.minimize import (
    Atoms,
    ExecutorSpecError,
    MinimizationError,
    NotReproducibleError,
    RayUnavailableError,
    ReplayVerdict,
    WorkerLostError,
    make_executor,
    minimize,
)
from netsleuth.minimize.ddmin import binary_split, ddmin, one_minimal
from netsleuth.minimize.executors import import_ray
from netsleuth.minimize.synthetic import (
    TARGET_HOST,
    TARGET_LINK,
    SimNetwork,
    SimOracle,
    SimOracleFactory,
    synthetic_inputs,
)
from netsleuth.trace import schema as ts

STRATEGIES = ("ddmin", "binary")


def search_path(r) -> list:
    """Everything about a run that must not depend on the executor (not timings, not speculative work)."""
    return [r.mcs, r.mcs_atoms, r.one_minimal, r.candidates,
            [(p.name, p.candidates, p.reproduced, p.sizes) for p in r.passes],
            [{k: v for k, v in it.items() if k != "seconds"} for it in r.iterations]]


def reproduces(events, bug: str = "link_then_host") -> bool:
    return SimOracle(bug).reproduces(tuple(events)).reproduced


def assert_one_minimal(r, bug: str) -> None:
    assert reproduces(r.mcs, bug)
    atoms = Atoms(r.mcs)
    for drop in atoms.prunable:
        assert not reproduces(atoms.materialize(tuple(i for i in atoms.prunable if i != drop)), bug)


# ------------------------------------------------------------------ atoms
def test_atoms_pair_failures_with_recoveries_and_keep_migrations_apart() -> None:
    inputs = synthetic_inputs(200, seed=1, recover_target=True)
    atoms = Atoms(inputs)
    atom_of = {e.id: a.index for a in atoms.all for e in a.events}
    pairs = 0
    for e in inputs:
        if isinstance(e, (ts.LinkRecovery, ts.SwitchRecovery, ts.ControllerRecovery, ts.ChannelUnblock)):
            assert atom_of[e.id] == atom_of[e.deps[0]]
            pairs += 1
        if isinstance(e, ts.HostMigration):
            assert len(atoms.all[atom_of[e.id]].events) == 1
    assert pairs > 20
    assert len(atoms) == len(inputs) - pairs
    assert atoms.materialize(atoms.prunable) == tuple(inputs)  # nothing pruned: nothing rewritten


def _chain() -> list[ts.InputEvent]:
    hops = [("s1", 1, "s2", 5), ("s2", 5, "s3", 6), ("s3", 6, "s4", 7), ("s4", 7, "s1", 8)]
    evs: list[ts.InputEvent] = []
    for n, (a, ap, b, bp) in enumerate(hops):
        evs.append(ts.HostMigration(seq=2 * n, t=float(n), id=f"m{n}", deps=(f"m{n - 1}",) if n else (),
                                    host="h1", old_switch=a, old_port=ap, new_switch=b, new_port=bp))
        evs.append(ts.TrafficInjection(seq=2 * n + 1, t=n + 0.5, id=f"t{n}", host="h2", packet={}, dst="h1"))
    evs.append(ts.HostMigration(seq=9, t=9.0, id="x0", host="h9", old_switch="s1", old_port=9, new_switch="s2",
                                new_port=9))
    return evs


def test_pruned_migration_rewrites_the_next_surviving_one() -> None:
    evs = _chain()
    atoms = Atoms(evs)
    assert len(atoms) == len(evs)  # migrations are not grouped by their chain deps
    idx = {a.events[0].id: a.index for a in atoms.all}

    def keep(*ids: str) -> dict[str, ts.InputEvent]:
        return {e.id: e for e in atoms.materialize(tuple(sorted(idx[i] for i in ids)))}

    # A->B->C minus A->B becomes A->C
    got = keep("m1", "m2")
    assert (got["m1"].old_switch, got["m1"].old_port, got["m1"].deps) == ("s1", 1, ())
    assert (got["m1"].new_switch, got["m1"].new_port) == ("s3", 6)
    assert (got["m2"].old_switch, got["m2"].old_port, got["m2"].deps) == ("s3", 6, ("m1",))
    assert got["m2"] is evs[4]  # already consistent: the original object
    # a hole in the middle re-points deps at the previous *surviving* migration
    got = keep("m0", "m3", "t1", "x0")
    assert (got["m3"].old_switch, got["m3"].old_port, got["m3"].deps) == ("s2", 5, ("m0",))
    assert (got["m3"].seq, got["m3"].t, got["m3"].new_switch, got["m3"].new_port) == (6, 3.0, "s1", 8)
    assert got["m0"] is evs[0] and got["t1"] is evs[3] and got["x0"] is evs[8]
    # only the last one left: it starts where the host started
    got = keep("m3")
    assert (got["m3"].old_switch, got["m3"].old_port, got["m3"].deps) == ("s1", 1, ())
    # the originals are untouched, and every materialized chain is consistent
    assert evs[6].old_switch == "s4" and evs[6].deps == ("m2",)
    for mask in range(1, 16):
        chosen = [f"m{i}" for i in range(4) if mask >> i & 1]
        net = SimNetwork("none")
        net.host_at["h1"] = ("s1", 1)
        for e in atoms.materialize(tuple(sorted(idx[i] for i in chosen))):
            if isinstance(e, ts.HostMigration) and e.host == "h1":
                net.apply(e)  # raises InvalidCandidate if the chain is inconsistent
        last = max(chosen, key=lambda i: int(i[1:]))
        assert net.host_at["h1"] == (evs[2 * int(last[1:])].new_switch, evs[2 * int(last[1:])].new_port)


def test_unknown_deps_and_duplicate_ids() -> None:
    ev = ts.LinkRecovery(seq=0, t=0.0, id="r", deps=("gone",), node1="s1", port1=1, node2="s2", port2=1)
    assert Atoms([ev]).dangling == (("r", "gone"),)
    with pytest.raises(MinimizationError, match="share the id"):
        minimize([ev, ev], SimOracle(), executor="serial")


# ------------------------------------------------------------------ the algorithms, on plain sets
@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 80), data=st.data())
def test_algorithms_find_the_unique_minimum_of_a_monotone_predicate(n: int, data) -> None:
    needed = set(data.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=min(n, 4))))
    full = tuple(range(n))

    def first(cands):
        for i, c in enumerate(cands):
            if needed <= set(c):
                return i
        return None

    for algo in (ddmin, binary_split):
        got = one_minimal(algo(full, first), first)
        assert set(got) == needed and got == tuple(sorted(needed))


# ------------------------------------------------------------------ end to end, serial
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_finds_exactly_the_two_inputs_out_of_200(strategy: str) -> None:
    inputs = synthetic_inputs(200, seed=7)
    r = minimize(inputs, SimOracleFactory(), strategy=strategy, executor="serial")
    assert r.inputs_before == 200 and r.inputs_after == 2
    link, send = r.mcs
    assert isinstance(link, ts.LinkFailure) and (link.node1, link.port1, link.node2, link.port2) == TARGET_LINK
    assert isinstance(send, ts.TrafficInjection) and send.host == TARGET_HOST
    assert r.one_minimal and r.stop_reason == "done" and r.reproduction_rate == 1.0
    assert_one_minimal(r, "link_then_host")
    assert [p.name for p in r.passes] == ["initial", strategy, "one-minimal", "confirm"]
    assert r.iterations[0]["inputs"] == 200 and r.iterations[-1]["inputs"] == 2
    assert r.replays < 120  # ~50 for ddmin, ~30 for the binary split on this trace


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_failure_and_recovery_stay_together(strategy: str) -> None:
    r = minimize(synthetic_inputs(200, seed=3, recover_target=True), SimOracleFactory(), strategy=strategy,
                 executor="serial")
    assert [type(e) for e in r.mcs] == [ts.LinkFailure, ts.TrafficInjection, ts.LinkRecovery]
    assert r.atoms_after == 2 and len(r.mcs_atoms) == 2
    assert r.mcs[2].deps == (r.mcs[0].id,)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_migration_chain_is_rewritten_in_the_mcs(strategy: str) -> None:
    inputs = synthetic_inputs(200, seed=5, scenario="migration")
    r = minimize(inputs, SimOracleFactory("migration"), strategy=strategy, executor="serial")
    mig, send = r.mcs
    original = next(e for e in inputs if e.id == mig.id)
    assert (original.old_switch, original.new_switch) == ("s5", "s4") and original.deps
    assert (mig.old_switch, mig.old_port, mig.deps) == ("s2", 10, ())  # where h2 really is
    assert (mig.new_switch, mig.new_port, mig.seq, mig.t) == (original.new_switch, original.new_port,
                                                              original.seq, original.t)
    assert send.dst == "h2"
    assert_one_minimal(r, "migration")
    json.dumps(r.to_json())
    assert ts.event_from_json(r.to_json()["mcs"][0]) == mig


def test_non_prunable_inputs_are_kept() -> None:
    inputs = synthetic_inputs(200, seed=7)
    kept = next(e for e in inputs if isinstance(e, ts.DataplaneDrop))
    r = minimize(inputs, SimOracleFactory(), executor="serial", keep=lambda e: e.id == kept.id)
    assert kept in r.mcs and r.inputs_after == 3 and r.atoms_after == 2


# ------------------------------------------------------------------ parallel == serial
@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.real
def test_local_pool_gives_the_serial_result(strategy: str) -> None:
    inputs = synthetic_inputs(200, seed=11)
    serial = minimize(inputs, SimOracleFactory(), strategy=strategy, executor="serial")
    pooled = minimize(inputs, SimOracleFactory(), strategy=strategy, executor="local", jobs=2)
    assert pooled.workers == 2 and pooled.executor.startswith("local")
    assert search_path(pooled) == search_path(serial)
    assert pooled.replays >= serial.replays  # speculative replays are counted, not used


@pytest.mark.slow
@pytest.mark.real
def test_ray_gives_the_serial_result() -> None:
    try:
        import_ray()
    except RayUnavailableError:
        pytest.skip("ray is not installed (pip install 'netsleuth[ray]')")
    inputs = synthetic_inputs(200, seed=11)
    serial = minimize(inputs, SimOracleFactory(), strategy="ddmin", executor="serial")
    on_ray = minimize(inputs, SimOracleFactory(), strategy="ddmin", executor="ray", jobs=2)
    assert on_ray.executor.startswith("ray") and on_ray.workers == 2
    assert search_path(on_ray) == search_path(serial)


def test_missing_ray_is_a_typed_error_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(RayUnavailableError) as info:
        minimize(synthetic_inputs(20, seed=1), SimOracleFactory(), executor="ray")
    assert "pip install 'netsleuth[ray]'" in info.value.fix


def test_executor_specs() -> None:
    assert make_executor("serial").name == "serial"
    assert make_executor(None, 3).workers == 3
    ray = make_executor("ray:ray://head:10001", 4)
    assert (ray.name, ray.address, ray.workers) == ("ray", "ray://head:10001", 4)
    with pytest.raises(ExecutorSpecError, match="unknown executor"):
        make_executor("threads")


# ------------------------------------------------------------------ nondeterminism, budget, cache, errors
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_flaky_oracle_still_minimizes_with_k_replays(strategy: str) -> None:
    inputs = synthetic_inputs(200, seed=7)
    r = minimize(inputs, SimOracleFactory(p=0.5, seed=2), strategy=strategy, replays=10, executor="serial")
    assert [e.id for e in r.mcs] == ["i60", "i120"] and r.one_minimal
    assert r.reproduction["replays"] == 10 and 0.2 <= r.reproduction_rate <= 0.8
    assert r.replays > r.candidates  # candidates that did not reproduce cost K replays each


def test_budget_expiry_returns_the_best_so_far() -> None:
    inputs = synthetic_inputs(200, seed=7)
    # 52 replays of 50 ms finish the search; the budget stops it after about 20 (a loaded machine's
    # pauses come on top of the sleeps, so the budget is not so short that it ends before the first cut)
    r = minimize(inputs, SimOracleFactory(sleep=0.05), executor="serial", budget_seconds=1.0)
    assert r.stop_reason == "budget" and not r.one_minimal
    assert 2 <= r.inputs_after < 200 and reproduces(r.mcs)
    assert r.reproduction_rate == 1.0
    assert r.seconds < 4.0
    assert r.iterations[-1]["inputs"] >= r.inputs_after


def test_cache_hits_are_counted_and_save_replays() -> None:
    inputs = synthetic_inputs(200, seed=7)
    oracle = SimOracle()
    r = minimize(inputs, oracle, executor="serial")  # the serial executor uses this very object
    calls = sum(oracle.attempts.values())
    assert r.cache_hits > 10 and calls == r.replays
    search = [p for p in r.passes if p.name != "confirm"]
    assert sum(p.candidates - p.cache_hits for p in search) == sum(p.replays for p in search)
    assert r.cache_hits == sum(p.cache_hits for p in r.passes)


def test_trace_that_does_not_reproduce() -> None:
    with pytest.raises(NotReproducibleError) as info:
        minimize(synthetic_inputs(50, seed=1), SimOracleFactory("none"), replays=3, executor="serial")
    assert info.value.result.stop_reason == "not-reproduced" and info.value.result.replays == 3
    assert "3 replays" in info.value.problem


@dataclass
class DiesAfter:
    calls: int
    exc: type = RuntimeError

    def reproduces(self, candidate):
        self.calls -= 1
        if self.calls < 0:
            raise self.exc("controller died")
        return ReplayVerdict(SimOracle().reproduces(candidate).reproduced, {})


def test_oracle_failure_keeps_the_partial_result() -> None:
    with pytest.raises(MinimizationError) as info:
        minimize(synthetic_inputs(200, seed=7), DiesAfter(10), executor="serial")
    r = info.value.result
    assert "controller died" in info.value.problem and r.stop_reason == "error"
    assert r.inputs_after < 200 and reproduces(r.mcs)


@dataclass
class ExitsOnSmall:
    """Kills its worker process outright once candidates get small."""

    def reproduces(self, candidate):
        if len(candidate) < 30:
            os._exit(3)
        return SimOracle().reproduces(candidate)


@pytest.mark.real
def test_a_dead_worker_process_is_a_clear_error_with_the_partial_result() -> None:
    with pytest.raises(WorkerLostError) as info:
        minimize(synthetic_inputs(200, seed=7), ExitsOnSmall(), executor="local", jobs=2)
    r = info.value.result
    assert "worker process died" in info.value.problem and r.stop_reason == "error"
    assert 30 <= r.inputs_after < 200 and reproduces(r.mcs)


def test_ctrl_c_ends_with_the_best_so_far() -> None:
    r = minimize(synthetic_inputs(200, seed=7), DiesAfter(10, KeyboardInterrupt), executor="serial")
    assert r.stop_reason == "interrupted" and r.inputs_after < 200 and reproduces(r.mcs)


def test_progress_and_json() -> None:
    seen = []
    r = minimize(synthetic_inputs(200, seed=7), SimOracleFactory(), executor="serial", progress=seen.append)
    assert seen and seen[-1].atoms == 2 and seen[0].atoms_before == r.atoms_before
    out = r.to_json()
    assert out["inputs_before"] == 200 and out["inputs_after"] == 2 and out["reproduction_rate"] == 1.0
    assert out["sizes"][0] == 200 and out["sizes"][-1] == 2
    assert {p["name"] for p in out["passes"]} == {"initial", "ddmin", "one-minimal", "confirm"}
    assert out["mcs_in_words"] == ["i60: link s2:2-s3:1 fails", "i120: host h3 sends to h1"]
    json.dumps(out)


# ------------------------------------------------------------------ the focus pass
def _is_target(e: ts.InputEvent) -> bool:
    if isinstance(e, ts.LinkFailure):
        return (e.node1, e.port1, e.node2, e.port2) == TARGET_LINK
    return isinstance(e, ts.TrafficInjection) and e.host == TARGET_HOST


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_focus_that_reproduces_gives_the_same_mcs_in_fewer_replays(strategy: str) -> None:
    inputs = synthetic_inputs(200, seed=7)
    plain = minimize(inputs, SimOracleFactory(), strategy=strategy, executor="serial")
    r = minimize(inputs, SimOracleFactory(), strategy=strategy, executor="serial", focus=_is_target)
    assert r.mcs == plain.mcs and r.one_minimal
    assert_one_minimal(r, "link_then_host")
    assert [p.name for p in r.passes] == ["initial", "focus", strategy, "one-minimal", "confirm"]
    focus = r.passes[1]
    assert focus.reproduced == 1 and focus.size_after < focus.size_before
    assert r.replays < plain.replays


def test_a_focus_that_misses_costs_one_replay_and_changes_nothing_else() -> None:
    inputs = synthetic_inputs(200, seed=7)
    plain = minimize(inputs, SimOracleFactory(), executor="serial")
    # every input but the link failure the bug needs: that candidate cannot reproduce
    miss = minimize(inputs, SimOracleFactory(), executor="serial",
                    focus=lambda e: not (isinstance(e, ts.LinkFailure) and _is_target(e)))
    assert miss.mcs == plain.mcs and miss.one_minimal
    assert miss.passes[1].name == "focus" and miss.passes[1].reproduced == 0
    assert miss.passes[1].size_after == miss.passes[1].size_before
    assert miss.replays == plain.replays + 1
    assert [it for it in miss.iterations if it["pass"] == "ddmin"] == \
        [{**it, "seconds": miss_it["seconds"]} for it, miss_it in
         zip([it for it in plain.iterations if it["pass"] == "ddmin"],
             [it for it in miss.iterations if it["pass"] == "ddmin"], strict=True)]


@pytest.mark.real
def test_a_focus_on_the_local_pool_gives_the_serial_search() -> None:
    inputs = synthetic_inputs(200, seed=7)
    serial = minimize(inputs, SimOracleFactory(), executor="serial", focus=_is_target)
    pool = minimize(inputs, SimOracleFactory(), executor="local", jobs=2, focus=_is_target)
    assert search_path(pool)[:3] == search_path(serial)[:3]
