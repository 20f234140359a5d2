"""Rebuild the network's state from a recorded trace, without any controller.

Invariants must be checkable on a trace as well as on a live network, and
the root-causing tools (headless stepping, OpenFlow reduction) need the flow
tables as they were at any point of a recording. Replaying what the
switches received (the controller's messages, exactly as recorded) and the
inputs (failures, moves) into a fresh World gives that state; what the
switches would send back is irrelevant here and is discarded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from netsleuth.errors import TraceFormatError
from netsleuth.invariants.policy.faucet import FaucetPolicy, FaucetPolicyError, policy_from_text
from netsleuth.model.switch_io import SwitchLimits
from netsleuth.model.topology import Topology
from netsleuth.openflow.codec import msg_from_json
from netsleuth.trace import schema as ts
from netsleuth.world.clock import VirtualClock
from netsleuth.world.world import World


@dataclass
class Rebuilt:
    world: World
    applied: int        # trace events that changed the rebuilt state
    last_seq: int       # seq of the last event applied


def trace_openflow(header: ts.TraceHeader) -> str:
    """The ``--openflow`` value that offers what the recorded switches spoke (auto when they differed)."""
    versions = set(header.openflow.values()) if header.openflow else {"1.0"}
    return versions.pop() if len(versions) == 1 else "auto"


def new_world(header: ts.TraceHeader) -> World:
    """A fresh World on the trace's topology, on a virtual clock, keeping no trace of its own."""
    world = World(Topology.from_json(header.topology), VirtualClock(), record_packets=False,
                  limits=SwitchLimits.from_json(header.extra.get("switch")))
    for name, version in sorted(header.openflow.items()):
        if name in world.switches:
            world.switches[name].use_version(4 if version == "1.3" else 1)
    world.faucet_policy = faucet_policy_of(header, world.topology)
    return world


def faucet_policy_of(header: ts.TraceHeader, topology: Topology) -> FaucetPolicy | None:
    """The policy of the Faucet config a trace was recorded with (kept in its header), or None."""
    record = header.extra.get("faucet_config") if isinstance(header.extra, dict) else None
    if not isinstance(record, dict) or not isinstance(record.get("text"), str):
        return None
    try:
        return policy_from_text(record["text"], topology, "the trace header's Faucet config")
    except FaucetPolicyError:
        return None   # a config the invariants cannot read is left unchecked, as in the run itself


def apply_event(world: World, conns: dict[int, int], e: ts.Event) -> None:
    """Apply one recorded event to ``world`` (``conns``: recorded conn id -> rebuilt conn id).

    Separate from :func:`replay_states` so that a stepper can interleave its
    own injected inputs between recorded events (``netsleuth step``).
    """
    clock = world.clock
    if e.t > clock.now():
        clock.set(e.t)  # type: ignore[attr-defined]  # rebuilt Worlds run on a settable clock
    if isinstance(e, (ts.ControlToSwitch, ts.SwitchConnected)) and e.conn not in conns:
        conns[e.conn] = world.open_connection(e.dpid, e.controller)
        world.controllers_alive[e.controller] = True
    if isinstance(e, ts.ControlToSwitch):
        switch = world.by_dpid.get(e.dpid)
        if switch is None:
            raise TraceFormatError(f"event {e.seq} addresses switch dpid {e.dpid}, not in the trace's topology",
                                   "the trace header's topology must be the one that was recorded")
        if world.switch_up[switch.name]:
            switch.handle_message(conns[e.conn], msg_from_json(e.msg), e.t)
    elif isinstance(e, ts.SwitchConnected):
        c = world.connections[conns[e.conn]]
        c.features_replied, c.replied_at = True, e.t
    elif isinstance(e, ts.SwitchDisconnected) and e.conn in conns:
        if e.redial:  # the controller hung up: the switch dials again, and counts as connected meanwhile
            world.connection_lost(conns.pop(e.conn), e.reason)
        else:
            world.close_connection(conns.pop(e.conn), e.reason)
    elif isinstance(e, ts.ControllerEvent) and e.what == "exited":
        # The process died on its own (an importer may know it only from the
        # recording tool's own liveness check): it is down and its switches
        # lost their connections to it.
        world.set_controller_alive(e.controller, False)
        world.disconnect_controller(e.controller, "controller exited")
    elif isinstance(e, ts.HostMigration):
        # the port the host was plugged into, as recorded: the controller's rules name it (STS kept a moved
        # host's old port, so its new port numbers run ahead of netsleuth's own choice)
        world.migrate_host(e.host, e.new_switch, e.new_port)
    elif e.is_input and not isinstance(e, ts.TrafficInjection):
        world.apply_recorded(e)  # type: ignore[arg-type]  # is_input: an InputEvent. Traffic changes no table itself
    world.tick()


def replay_states(header: ts.TraceHeader, events: Iterable[ts.Event]) -> Iterator[tuple[ts.Event, World]]:
    """Apply the trace event by event; yield (event, world) after each one."""
    world = new_world(header)
    conns: dict[int, int] = {}  # recorded conn id -> rebuilt conn id
    for e in events:
        apply_event(world, conns, e)
        yield e, world


def rebuild(header: ts.TraceHeader, events: Iterable[ts.Event],
            stop: Callable[[ts.Event], bool] | None = None) -> Rebuilt:
    """The state after the whole trace, or just before the first event ``stop`` accepts."""
    applied, last, world = 0, -1, None
    for e, w in replay_states(header, _until(events, stop)):
        world, last = w, e.seq
        applied += 1
    if world is None:
        world = World(Topology.from_json(header.topology), VirtualClock(), record_packets=False,
                  limits=SwitchLimits.from_json(header.extra.get("switch")))
    return Rebuilt(world, applied, last)


def _until(events: Iterable[ts.Event], stop: Callable[[ts.Event], bool] | None) -> Iterator[ts.Event]:
    for e in events:
        if stop is not None and stop(e):
            return
        yield e
