"""DEFINED on real BIRD 2 and FRR daemons: the MED case under every order, and under DEFINED's ordering.

Each run starts four unmodified daemons in their own network namespaces
behind netsleuth's relay (root and the Debian packages bird2, frr,
libfaketime, ethtool: `make debs`). Expected outcomes come from how the
two daemons pick a best path without deterministic MED: FRR 8.4 runs the
pairwise comparison over its path list newest first, so the first UPDATE
to arrive wins the cycle; BIRD 2.0.12 compares each new route with the
current best, so the last one wins.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from netsleuth.defined.daemons import explore
from netsleuth.defined.daemons.net import LiveNet
from netsleuth.defined.daemons.scenarios import scenario

pytestmark = [pytest.mark.real, pytest.mark.slow]

WINNER = {"frr": 0, "bird": -1}   # which arrival wins the MED cycle without deterministic MED


@pytest.mark.parametrize("daemon", ["bird", "frr"])
def test_every_order_of_the_med_group_gives_the_daemons_own_outcome(daemon):
    sc = scenario("med")
    outs = explore.all_orders(sc, daemon)
    orders = [tuple(o.order) for o in outs]
    assert sorted(orders) == sorted([("p1", "p2", "p3"), ("p1", "p3", "p2"), ("p2", "p1", "p3"),
                                     ("p2", "p3", "p1"), ("p3", "p1", "p2"), ("p3", "p2", "p1")])
    for o in outs:
        assert o.best == o.order[WINNER[daemon]], (daemon, o.order, o.best)
    assert "depends on the delivery order: p1 / p2 / p3" in explore.verdict(sc, outs)


@pytest.mark.parametrize("daemon", ["bird", "frr"])
def test_deterministic_med_gives_p3_in_every_order(daemon):
    sc = scenario("med", deterministic_med=True)
    outs = explore.all_orders(sc, daemon)
    assert len(outs) == 6
    assert {o.best for o in outs} == {"p3"}


@pytest.mark.parametrize("daemon", ["bird", "frr"])
def test_defined_ordering_gives_one_outcome_run_after_run(daemon):
    sc = scenario("med")
    outs = [explore.one_run(sc, daemon, ordering="defined") for _ in range(5)]
    # DEFINED's order: equal link delays, so by origin: s1 (p1), s2 (p2), s3 (p3)
    assert {tuple(o.order) for o in outs} == {("p1", "p2", "p3")}
    assert {o.best for o in outs} == {("p1", "p2", "p3")[WINNER[daemon]]}


@pytest.mark.parametrize("daemon", ["bird", "frr"])
def test_a_session_that_closes_while_the_group_gathers_is_named_by_its_new_session(daemon):
    """A speaker's BGP session closes after its UPDATE is held, before any delivery (as a busy machine
    can make happen): the daemon announces again on a new session, and the run delivers that message
    under the lost one's name, in the order asked for, with the outcome of every other run."""
    sc = scenario("med", deterministic_med=True)
    with LiveNet(sc.net, daemon) as n:
        assert n.host is not None
        first = n.collect(quiet=0.0, expect=1)[0]
        # abort the speaker's TCP connection in its own namespace (the kernel resets it)
        subprocess.run(n.host.ns[first.src].argv("ss", "-K", "-t", "dport", "=", ":179"), check=True,
                       capture_output=True)
        pending = n.collect(quiet=0.5, expect=3)
        assert {"reset": first.id, "src": first.src, "dst": first.dst, "group": 0} in n.log
        assert first.identity() in {h.identity() for h in pending} and first not in pending
        order = sorted(h.identity() for h in pending)[::-1]
        out = explore._deliver_all(n, sc, explore._by_identity(n, pending, order, 0.5), time.monotonic())
    assert sorted(out.order) == ["p1", "p2", "p3"] and out.best == "p3"
