"""Why a ping failed, on a World driven by the in-test learning controller (test_world.py: real
os-ken messages through the codec, virtual time): a cut link, a controller that is gone, a frame a
controller never answers."""

from __future__ import annotations

from test_world import build, ip

from netsleuth.jobs.ping_why import explain
from netsleuth.world.fates import FateLog


def ping(world, ctl, clock, src: str, dst: str, seq: int) -> tuple[bool, float]:
    since = clock.now()
    world.inject_ping(src, dst, 7, seq)
    ctl.run(clock)
    return world.hosts[src].got_reply(ip(world, dst), 7, seq), since


def test_a_cut_link_loses_the_echo_request() -> None:
    world, ctl, clock = build("linear,3")
    world.fates = FateLog()
    assert ping(world, ctl, clock, "h1", "h3", 1)[0]   # ARP resolved, flows installed
    s1_to_s2 = world.topology.neighbor("s2", 2)[1]
    world.fail_link("s1", s1_to_s2)
    ctl.run(clock)
    ok, since = ping(world, ctl, clock, "h1", "h3", 2)
    assert not ok
    why = explain(world, "h1", "h3", since)
    assert why.frame == "echo request", why
    assert why.cause == "dropped" and "at s1 by rule" in why.text, why
    assert why.text.endswith(f"(port {s1_to_s2} is down)"), why
    assert why.text.startswith("h1's echo request never reached h3: "), why


def test_the_controller_down_is_named_first() -> None:
    world, ctl, clock = build("linear,2")
    world.fates = FateLog()
    world.set_controller_alive("c0", False)
    ok, since = ping(world, ctl, clock, "h1", "h2", 1)
    why = explain(world, "h1", "h2", since)
    assert why.cause == "controller-down" and why.text == "the controller is down (c0 not running)", why


def test_an_unanswered_packet_in_is_named() -> None:
    world, ctl, clock = build("linear,2")
    world.fates = FateLog()
    world.block_channel("s1", "c0")   # the PACKET_IN waits in its channel: the controller never sees it
    ok, since = ping(world, ctl, clock, "h1", "h2", 1)
    assert not ok
    why = explain(world, "h1", "h2", since)
    assert (why.cause, why.frame) == ("punted-unanswered", "ARP request"), why
    assert why.text == ("ARP never answered: h1's ARP request never reached h2: punted to the controller at s1 "
                        "(PACKET_IN), which never sent it on")
