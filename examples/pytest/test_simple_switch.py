"""Testing a controller with netsleuth from pytest: copy this file next to your own tests.

The controller is os-ken's simple_switch (OpenFlow 1.0), real and unmodified,
started in its own process for each network. Run these with plain `pytest`;
`pytest --netsleuth-controller osken:os_ken.app.simple_switch_13` runs the
same tests against another controller (every test that names one).

simple_switch learns where each MAC address is and installs flows towards
it, and never forgets them: when a host moves, the flows that lead to its
old port stay, and traffic to it is dropped there (a blackhole). The second
test lets Hypothesis find that on its own, from random sequences of pings
and moves, and shrink it to the few inputs that cause it.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.database import InMemoryExampleDatabase

from netsleuth.strategies import inputs
from netsleuth.testing import InvariantViolated, Move, Send, check_inputs

SIMPLE_SWITCH = "osken:os_ken.app.simple_switch"


@pytest.mark.netsleuth(controller=SIMPLE_SWITCH, topo="linear,3")
def test_pingall_on_linear_3(netsleuth_network):
    net = netsleuth_network()          # the marker's controller and topology
    assert net.pingall()               # 6/6: every host reaches every other
    assert net.check() == []           # no loop, blackhole or unreachable pair, every switch connected


def test_a_moved_host_is_blackholed(netsleuth_network):
    """The bug written by hand: learn h2's place, move h2, and the old flows now drop its traffic."""
    net = netsleuth_network(controller=SIMPLE_SWITCH, topo="linear,3")
    assert net.ping("h1", "h2").ok
    net.migrate("h2", "s3")
    found = net.check("blackholes", rounds=3)
    assert found and all(v.invariant == "blackholes" for v in found)
    assert any("h2" in v.message or "00:00:00:00:00:02" in v.message for v in found)


def test_hypothesis_finds_and_shrinks_the_migration_blackhole(netsleuth_controller, tmp_path):
    """Hypothesis drives the network; netsleuth's live run is the oracle of every sequence it tries.

    The property "no invariant breaks, whatever hosts send and however they move"
    is false for simple_switch. Hypothesis finds a failing sequence, shrinks it
    to a minimal one (a ping that teaches the switches where a host is, then that
    host's move) and reports it with the `netsleuth replay` command. The failure
    is saved in Hypothesis's example database and tried first on the next run.
    """
    controller = netsleuth_controller or SIMPLE_SWITCH
    database = InMemoryExampleDatabase()  # your own tests: leave the default (.hypothesis/ beside them)
    tried: list[tuple] = []
    memo: dict = {}  # outcomes known from earlier runs are not run again (see check_inputs)

    @settings(max_examples=25, deadline=None, database=database, report_multiple_bugs=False,
              suppress_health_check=[HealthCheck.too_slow], phases=[Phase.reuse, Phase.generate, Phase.shrink])
    @given(seq=inputs("linear,3", kinds=("traffic", "migration"), max_size=6))
    def no_violation(seq):
        tried.append(tuple(seq))
        check_inputs(seq, controller, "linear,3", invariants=("blackholes",), out=tmp_path / "runs",
                     memo=memo)

    with pytest.raises(InvariantViolated) as found:
        no_violation()
    minimal = found.value.inputs
    print(found.value.netsleuth_report())
    assert len(minimal) <= 4
    assert any(isinstance(i, Send) for i in minimal) and isinstance(minimal[-1], Move)
    assert found.value.trace.exists()

    # Next run (against a fresh controller, nothing remembered but the database):
    # the saved failure is the first sequence tried, and it fails again.
    tried.clear()
    memo.clear()
    with pytest.raises(InvariantViolated) as again:
        no_violation()
    assert tried[0] == minimal
    assert again.value.inputs == minimal
