"""DEFINED must-shows: determinism under RB, exact LS reproduction, the two case-study bugs."""

from __future__ import annotations

import json

import pytest

from netsleuth.defined.lockstep import Lockstep
from netsleuth.defined.scenarios import build
from netsleuth.defined.sim import SimConfig, Simulation, simulate

RUNS = 50


def _runs(name: str, mode: str, variant: str | None = None, ordering: str = "defined", runs: int = RUNS):
    sc = build(name, variant=variant)
    out = [simulate(sc.net, sc.factory, sc.externals,
                    SimConfig(mode=mode, seed=s, horizon=sc.horizon, ordering=ordering)) for s in range(runs)]
    return sc, out


def _distinct(results, attr: str) -> int:
    return len({json.dumps(getattr(r, attr), sort_keys=True) for r in results})


@pytest.mark.parametrize("name", ["bgp-med", "rip-timer"])
def test_rb_runs_are_identical_although_arrival_orders_differ(name):
    sc, plain = _runs(name, "plain")
    # Without DEFINED the random link delays really do change what nodes see.
    assert _distinct(plain, "deliveries") > 1
    sc, rb = _runs(name, "rb")
    assert _distinct(rb, "deliveries") == 1
    assert _distinct(rb, "routes") == 1
    # ... and RB got there by rolling back, not because nothing was reordered.
    assert sum(r.totals()["rollbacks"] for r in rb) > 0
    # The link delays (and so the times things happened) differed between the RB runs.
    assert len({r.last_activity for r in rb}) > 1


@pytest.mark.parametrize("name", ["bgp-med", "rip-timer"])
def test_ls_from_external_events_reproduces_rb_exactly(name):
    sc, rb = _runs(name, "rb", runs=5)
    for r in rb:
        ls = Lockstep(sc.net, sc.factory, r.externals, horizon=sc.horizon)
        ls.run()
        assert ls.deliveries() == r.deliveries
        assert ls.routes() == r.routes
        assert sc.bug(ls.states()) == sc.bug(r.states)


def test_ls_reproduces_rb_on_a_flooding_protocol_with_random_ordering():
    sc = build("ospf", topo="brite,10,1")
    for ordering in ("defined", "random:4"):
        r = simulate(sc.net, sc.factory, sc.externals,
                     SimConfig(mode="rb", seed=7, horizon=sc.horizon, ordering=ordering, jitter=0.5))
        assert r.totals()["rollbacks"] > 0
        ls = Lockstep(sc.net, sc.factory, r.externals, horizon=sc.horizon, ordering=ordering)
        ls.run()
        assert ls.deliveries() == r.deliveries
        assert not sc.bug(r.states)


def test_xorp_med_bug_depends_on_order_without_defined_and_is_deterministic_under_it():
    sc, plain = _runs("bgp-med", "plain")
    bugs = sum(sc.bug(r.states) for r in plain)
    assert 0 < bugs < RUNS
    sc, rb = _runs("bgp-med", "rb")
    assert {sc.bug(r.states) for r in rb} == {True}
    # LS with an alternative ordering function shows the other outcome.
    r = rb[0]
    alt = Lockstep(sc.net, sc.factory, r.externals, horizon=sc.horizon, ordering="origin")
    alt.run()
    assert not sc.bug(alt.states())
    assert alt.routes()["R3"] == {"203.0.113.0/24": "p3"}
    assert r.routes["R3"] == {"203.0.113.0/24": "p1"}


def test_correct_bgp_picks_p3_in_every_order():
    sc, plain = _runs("bgp-med", "plain", variant="correct", runs=20)
    assert not any(sc.bug(r.states) for r in plain)
    assert {json.dumps(r.routes, sort_keys=True) for r in plain} == {
        json.dumps({n: {"203.0.113.0/24": "p3"} for n in ("R1", "R2", "R3")}, sort_keys=True)}


def test_quagga_rip_black_hole_depends_on_timing_without_defined_and_is_deterministic_under_it():
    sc, plain = _runs("rip-timer", "plain")
    bugs = sum(sc.bug(r.states) for r in plain)
    assert 0 < bugs < RUNS
    sc, rb = _runs("rip-timer", "rb")
    assert {sc.bug(r.states) for r in rb} == {False}
    assert rb[0].routes["R1"]["N"] == [3, "R3"]
    alt = Lockstep(sc.net, sc.factory, rb[0].externals, horizon=sc.horizon, ordering="reverse")
    alt.run()
    assert sc.bug(alt.states())
    assert alt.routes()["R1"]["N"] == [2, "R2"]


def test_correct_rip_never_black_holes_even_in_the_bad_order():
    sc = build("rip-timer", variant="correct")
    r = simulate(sc.net, sc.factory, sc.externals, SimConfig(mode="rb", seed=1, horizon=sc.horizon))
    alt = Lockstep(sc.net, sc.factory, r.externals, horizon=sc.horizon, ordering="reverse")
    alt.run()
    assert not sc.bug(alt.states())
    assert alt.routes()["R1"]["N"][1] == "R3"


def test_timers_run_in_virtual_time():
    """Under RB a timer of 6 s fires exactly 24 beacon groups after it was set, whatever the delays."""
    sc, rb = _runs("rip-timer", "rb", runs=3)
    for r in rb:
        r1 = [rec for rec in r.deliveries["R1"] if rec[1] == "timer" and rec[3] == "expire:N"]
        assert [rec[0] for rec in r1] == [32]


def test_committing_old_groups_and_sparse_checkpoints_do_not_change_the_execution():
    sc = build("rip-timer")
    base = simulate(sc.net, sc.factory, sc.externals, SimConfig(mode="rb", seed=2, horizon=sc.horizon))
    for window, every in ((6, 1), (6, 5), (3, 2)):
        sim = Simulation(sc.net, sc.factory, sc.externals,
                         SimConfig(mode="rb", seed=2, horizon=sc.horizon, window=window, checkpoint_every=every))
        r = sim.run()
        assert sum(len(h.committed) for h in sim.hosts.values()) > 0
        assert r.deliveries == base.deliveries and r.routes == base.routes
