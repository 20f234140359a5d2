"""What a controller may take time for, and where netsleuth waits for it before judging.

* A switch its controller hangs up on dials again, and liveness judges it
  only after a grace. Faucet closes a switch's connection on purpose after
  some config reloads (to resynchronise its ports) and keeps closing the
  connection of a dp its config no longer has. A real switch (Open vSwitch)
  redials with backoff; netsleuth's switches do the same, and liveness
  reports a switch only when it has been turned away for longer than
  REDIAL_GRACE.
* A packet between hosts the previous config kept apart, sent just after a
  config change, may still meet the previous config while the controller
  reloads it: delivery does not count it.
"""

from __future__ import annotations

import copy
from pathlib import Path

from netsleuth.controllers.faucet import generate_config
from netsleuth.invariants import registry
from netsleuth.model.packet import icmp_echo
from netsleuth.model.topo_builders import parse_topo
from netsleuth.schedulers.config_edits import render
from netsleuth.trace import read_trace, write_trace
from netsleuth.trace import schema as ts
from netsleuth.world.clock import VirtualClock
from netsleuth.world.network import REDIAL_GRACE
from netsleuth.world.rebuild import rebuild
from netsleuth.world.records import Recorder
from netsleuth.world.world import CONFIG_SETTLE, World


def _world() -> tuple[World, VirtualClock]:
    clock = VirtualClock()
    return World(parse_topo("linear,2"), clock), clock


def _handshaken(world: World, dpid: int) -> int:
    conn = world.open_connection(dpid, "c0")
    c = world.connections[conn]
    c.features_replied, c.replied_at = True, world.clock.now()
    return conn


def _liveness(world: World) -> list[str]:
    return [f.message for f in registry.check(world.view(), registry.resolve("liveness"))]


def test_a_switch_hung_up_on_is_connected_for_the_grace_then_not() -> None:
    world, clock = _world()
    conns = {d: _handshaken(world, d) for d in (1, 2)}
    clock.advance(30.0)
    assert world.connection_lost(conns[2], "controller closed the connection")
    clock.advance(0.5)
    assert _liveness(world) == []
    assert world.wants_redial(2, "c0")
    for _ in range(4):  # each redial is turned away at once: the same episode
        clock.advance(1.0)
        conn = _handshaken(world, 2)
        clock.advance(0.01)
        assert world.connection_lost(conn, "controller closed the connection")
    clock.set(30.0 + REDIAL_GRACE + 0.1)
    assert _liveness(world) == ["1 switch(es) not connected to a controller: s2"]


def test_a_connection_that_worked_starts_a_new_episode() -> None:
    world, clock = _world()
    _handshaken(world, 1)
    conn = _handshaken(world, 2)
    clock.advance(30.0)
    world.connection_lost(conn, "controller closed the connection")
    clock.advance(1.0)
    conn = _handshaken(world, 2)  # back, and working for a while
    clock.advance(REDIAL_GRACE - 1.2)
    world.connection_lost(conn, "controller closed the connection")  # hung up again: a new episode
    clock.advance(0.5)  # more than the grace after the first hang-up, well within it after this one
    assert _liveness(world) == []


def test_a_trace_ending_while_a_switch_redials_rebuilds_to_the_live_verdict(tmp_path: Path) -> None:
    """The trace says which disconnects the switch redials after; the view rebuilt from the trace
    file judges liveness as the live World did: connected within the grace, not after it."""
    clock = VirtualClock()
    events: list[ts.Event] = []
    world = World(parse_topo("linear,2"), clock, Recorder(clock, events.append))
    conns = {}
    for dpid in (1, 2):
        conns[dpid] = _handshaken(world, dpid)
        world.record(ts.SwitchConnected, dpid=dpid, conn=conns[dpid], controller="c0")
    clock.advance(30.0)
    world.fail_switch("s1")
    assert world.connection_lost(conns[2], "controller closed the connection")
    closes = [e for e in events if isinstance(e, ts.SwitchDisconnected)]
    assert [(e.dpid, e.redial) for e in closes] == [(1, False), (2, True)]

    def rebuilt_liveness() -> list[str]:
        path = tmp_path / "trace.jsonl"
        write_trace(path, ts.Trace(ts.TraceHeader(topology=world.topology.to_json(), topology_spec="linear,2",
                                                  controller="tcp:127.0.0.1:6653", seed=None, tool_version="test"),
                                   list(events)))
        trace = read_trace(path)
        view = rebuild(trace.header, trace.events).world.view()
        return [f.message for f in registry.check(view, registry.resolve("liveness"))]

    clock.advance(0.5)
    world.record(ts.ControllerEvent, controller="c0", what="log_error", detail="")
    assert _liveness(world) == rebuilt_liveness() == []
    clock.advance(REDIAL_GRACE)
    world.record(ts.ControllerEvent, controller="c0", what="log_error", detail="")
    assert _liveness(world) == rebuilt_liveness() == ["1 switch(es) not connected to a controller: s2"]


def test_no_redial_to_a_controller_crashed_by_an_input_or_from_a_failed_switch() -> None:
    world, clock = _world()
    conns = {d: _handshaken(world, d) for d in (1, 2)}
    world.crash_controller("c0")
    assert not world.wants_redial(1, "c0")
    world.recover_controller("c0")
    world.fail_switch("s2")
    assert not world.connection_lost(conns[2], "controller closed the connection")
    assert not world.wants_redial(2, "c0")


# ---------------------------------------------------------------- which lost packets count (delivery)


def _send(world: World, src: str, dst: str) -> None:
    a, b = world.topology.host(src), world.topology.host(dst)
    world.send_from_host(src, [icmp_echo(a.mac, b.mac, a.ip, b.ip, 1, 1)])


def test_pairs_a_config_keeps_apart_count_with_the_previous_config_while_it_settles() -> None:
    world, clock = _world()
    config = generate_config(world.topology)
    world.start_config("c0", config)
    split = copy.deepcopy(config)
    split["vlans"]["other"] = {"vid": 200}
    split["dps"]["s2"]["interfaces"][1]["native_vlan"] = "other"
    world.change_config("c0", render(split), "move h2 away")
    assert ("h1", "h2") in world.view().separated
    world.change_config("c0", render(config), "move h2 back")
    clock.advance(CONFIG_SETTLE / 2)
    assert ("h1", "h2") in world.view().separated  # the controller may still apply the split config
    _send(world, "h1", "h2")
    clock.advance(CONFIG_SETTLE)
    assert ("h1", "h2") not in world.view().separated
    _send(world, "h1", "h2")
    clock.advance(1.5)
    assert [(src, dst) for _pid, src, dst, _what, _age in world.undelivered()] == [("h1", "h2")]

