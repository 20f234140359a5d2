"""A switch that recovered from a failure and has not heard a controller's HELLO yet, in a 1.3 network.

Until a controller connects it speaks no OpenFlow version and holds nothing;
the 1.3 checks read it as an empty 1.3 pipeline instead of stopping the run
("a 1.0 table in a network of 1.3 pipelines"), which a fuzz that fails and
recovers switches met whenever a check fell in that window.
"""

from __future__ import annotations

from netsleuth.invariants import registry
from netsleuth.model.of13.actions import Output
from netsleuth.model.of13.instructions import Instructions
from netsleuth.model.of13.oxm import OxmMatch
from netsleuth.model.topo_builders import parse_topo
from netsleuth.world.clock import VirtualClock
from netsleuth.world.world import World

CHECKS = registry.resolve("loops,blackholes,reachability")


def _world(version: int) -> World:
    w = World(parse_topo("linear,3"), VirtualClock())
    for s in w.switches.values():
        assert s.use_version(version)
    return w


def _tables(w: World) -> None:
    """s1 floods all it gets (traffic reaches s2 whatever s2 holds); s3 sends everything to port 1,
    h3's own: a blackhole for h3's traffic, so the checks have something to report."""
    w.switches["s1"].of13.pipeline.add_flow(0, OxmMatch(), 0, Instructions(apply=(Output(0xfffffffb),)))
    w.switches["s3"].of13.pipeline.add_flow(0, OxmMatch(), 0, Instructions(apply=(Output(1),)))


def test_a_rebooted_switch_checks_as_an_empty_13_pipeline() -> None:
    rebooted = _world(4)
    _tables(rebooted)
    rebooted.fail_switch("s2")
    rebooted.recover_switch("s2")
    assert rebooted.switches["s2"].negotiated is None  # no HELLO since it came back
    found = registry.check(rebooted.view(), CHECKS)

    empty = _world(4)  # the same network with s2 connected, on 1.3, holding nothing
    _tables(empty)
    want = registry.check(empty.view(), CHECKS)
    assert [f.switches for f in want if f.invariant == "blackholes"] == [("s3",)]
    assert [(f.invariant, f.message) for f in found] == [(f.invariant, f.message) for f in want]


def test_a_rebooted_switch_does_not_make_a_10_network_13() -> None:
    w = _world(1)
    w.fail_switch("s2")
    w.recover_switch("s2")
    assert registry.check(w.view(), CHECKS) == registry.check(_world(1).view(), CHECKS)
