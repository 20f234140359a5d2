"""RestJudge: a replay may stop waiting only after a whole window of a quiet network and idle controllers."""

from __future__ import annotations

from netsleuth.live.rest import RestJudge, Sample


def feed(judge: RestJudge, samples: list[tuple[float, Sample | None, bool]]) -> list[bool]:
    return [judge.update(t, s, quiet) for t, s, quiet in samples]


def test_at_rest_after_a_whole_window_of_idle_samples() -> None:
    idle = Sample(cpu=1.0, runnable=False)
    got = feed(RestJudge(window=0.3), [(0.0, idle, True), (0.1, idle, True), (0.2, idle, True), (0.3, idle, True)])
    assert got == [False, False, False, True]


def test_cpu_use_restarts_the_window() -> None:
    j = RestJudge(window=0.3, idle_cpu=0.011)
    got = feed(j, [(0.0, Sample(1.0, False), True), (0.2, Sample(1.05, False), True),
                   (0.4, Sample(1.05, False), True), (0.5, Sample(1.06, False), True),
                   (0.6, Sample(1.06, False), True)])
    # 50 ms of CPU at 0.2 s: the window starts again there and is whole at 0.5 s (10 ms more is one tick)
    assert got == [False, False, False, True, True]


def test_a_runnable_controller_is_never_idle_even_without_cpu() -> None:
    """A controller starved of CPU on a loaded machine uses none, but it is runnable: not at rest."""
    starved = Sample(cpu=2.0, runnable=True)
    assert not any(feed(RestJudge(window=0.2), [(t / 10, starved, True) for t in range(10)]))


def test_network_activity_or_an_unwatchable_controller_is_never_at_rest() -> None:
    idle = Sample(cpu=0.5, runnable=False)
    assert not any(feed(RestJudge(window=0.2), [(t / 10, idle, t % 3 != 0) for t in range(10)]))
    assert not any(feed(RestJudge(window=0.2), [(t / 10, None, True) for t in range(10)]))


def test_a_break_in_quiet_starts_the_window_again() -> None:
    idle = Sample(cpu=0.5, runnable=False)
    got = feed(RestJudge(window=0.2), [(0.0, idle, True), (0.1, idle, True), (0.15, idle, False),
                                       (0.2, idle, True), (0.3, idle, True), (0.4, idle, True)])
    assert got == [False, False, False, False, False, True]


# ------------------------------------------------------------------ the World's side
def test_a_world_with_a_flow_timing_out_is_settled_only_before_it_falls_due() -> None:
    from os_ken.ofproto import ofproto_v1_0 as ofp
    from os_ken.ofproto import ofproto_v1_0_parser as P
    from test_world import build

    from netsleuth.model.ofdp import DATAPATH as DP

    world, ctl, clock = build("linear,2")
    now = clock.now()
    assert world.settled_until(now + 100.0)
    conn = next(iter(ctl.dpid))
    ctl.send(conn, P.OFPFlowMod(DP, match=P.OFPMatch(in_port=1), command=ofp.OFPFC_ADD, priority=5, hard_timeout=5,
                                actions=[P.OFPActionOutput(2)]))
    assert not world.settled_until(now), "the FLOW_MOD is still on its way: something can fire now"
    ctl.run(clock)
    now = clock.now()
    assert world.settled_until(now + 4.0)
    assert not world.settled_until(now + 6.0), "the flow times out within the horizon"


def test_a_switch_redialing_a_controller_that_hung_up_is_never_settled() -> None:
    from test_world import build

    world, ctl, clock = build("linear,2")
    conn = next(iter(ctl.dpid))
    assert world.connection_lost(conn, "controller closed the connection")
    assert not world.settled_until(clock.now())
