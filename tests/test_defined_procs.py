"""DEFINED with every node an OS process over loopback TCP (real asynchrony, same node code)."""

from __future__ import annotations

import pytest

from netsleuth.defined.lockstep import Lockstep
from netsleuth.defined.procs import run_processes
from netsleuth.defined.scenarios import build
from netsleuth.defined.sim import SimConfig, simulate


def _stamps(r):
    return sorted((x["node"], x["group"], x["oseq"]) for x in r.externals)


@pytest.mark.real
def test_process_nodes_under_rb_are_deterministic_and_ls_reproduces_them():
    sc = build("bgp-med")
    cfg = SimConfig(mode="rb", horizon=sc.horizon)
    in_process = simulate(sc.net, sc.factory, sc.externals, cfg)
    for fork in (True, False):
        r = run_processes(sc, cfg, fork_checkpoints=fork)
        assert len(r.externals) == 3
        # Checkpoints were forked processes (the paper's mechanism), or pickles.
        assert (r.extra["forks"] > 0) == fork
        # Given its recorded external events, the execution is fixed: LS replays it exactly.
        ls = Lockstep(sc.net, sc.factory, r.externals, horizon=sc.horizon)
        ls.run()
        assert ls.deliveries() == r.deliveries
        assert ls.routes() == r.routes
        # Events land mid-timestep, so unless the machine stalls a process for ~100 ms they get the
        # same groups as in the simulator -- and then the whole execution is the simulator's.
        if _stamps(r) == _stamps(in_process):
            assert r.deliveries == in_process.deliveries
            assert sc.bug(r.states)


@pytest.mark.real
def test_forked_checkpoints_roll_back_and_still_reproduce():
    from netsleuth.defined.protocols.linkstate import LinkStateRouter
    from netsleuth.defined.scenarios import Scenario
    from netsleuth.defined.topologies import parse_net

    # Four routers flooding their LSAs at once over jittery links: rollbacks at start-up.
    net = parse_net("mesh,4")
    sc = Scenario("ospf", net, LinkStateRouter, [], horizon=2, bug=lambda s: False, bug_words="",
                  alt_ordering="reverse")
    resumed = 0
    for _ in range(3):
        r = run_processes(sc, SimConfig(mode="rb", horizon=sc.horizon, jitter=0.9))
        ls = Lockstep(sc.net, sc.factory, r.externals, horizon=sc.horizon)
        ls.run()
        assert ls.deliveries() == r.deliveries
        assert all(len(t) == 3 for t in r.routes.values())
        resumed += r.extra["resumes"]
        if resumed:
            break
    assert resumed > 0
