"""The Network: channels, delivery and connections, the lower layer of the World.

It holds the topology, the switches, the hosts and the interposed channels
(each controller<->switch direction and each link direction is a FIFO
buffer). ``enabled()`` lists the pending events, ``fire(event)`` applies one
and returns what the edge must do (hand a message to a real controller).
Fuzzing, replay, model checking and lockstep differ only in the policy that
picks the next event, so this module does no I/O and reads time only from
the injected clock.

The inputs (failures, recoveries, migrations, traffic) live one layer up in
``world.py``: they decide what happened and record it, then change the
network only through the public operations below (power a switch off or on,
set a link, drop a controller's connections, move a host, arm a drop or a
delay), so the delivery machinery stays private to this module and to
``delivery.py``, which holds the frames on links and to and from hosts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from netsleuth.invariants.view import NetworkView
from netsleuth.model import switch as sw
from netsleuth.model.topology import Topology
from netsleuth.openflow.codec import msg_to_json, msg_type_name
from netsleuth.trace import schema as ts
from netsleuth.trace.fingerprint import of_fingerprint
from netsleuth.world.channels import Channels
from netsleuth.world.clock import Clock
from netsleuth.world.delivery import Delivery
from netsleuth.world.events import (
    Deliver,
    Disconnect,
    Effect,
    OnWire,
    PendingEvent,
    PendingToController,
    Rejection,
    TableObserver,
    ToSwitch,
)
from netsleuth.world.fates import FateLog
from netsleuth.world.records import Connection, Recorder, Stats
from netsleuth.world.table_changes import TABLE_CHANGING, flow_mod_applied, rejected

REDIAL_GRACE = 5.0
"""Seconds a switch whose controller closed its connection counts as connected while it dials again:
Open vSwitch redials after 1 s, then 2, 4 and 8 s; a switch still refused after this is not connected."""

TURNED_AWAY = 1.0
"""A connection the controller closes within this many seconds of its handshake was turned away (the
switch keeps redialing in the same episode); one that lasted longer had been working."""


class Network(Delivery):
    """Topology + switch and host state + interposed channels + clock; frames on links and hosts in Delivery."""

    def __init__(self, topology: Topology, clock: Clock, record: Recorder | None = None,
                 *, record_packets: bool = True, sw_version: str = sw.DEFAULT_SW_VERSION,
                 openflow: str = "auto", limits: sw.SwitchLimits | None = None) -> None:
        self.topology = topology
        self.limits = limits or sw.SwitchLimits()
        self.clock = clock
        self.record = record or Recorder(clock)
        self.record_packets = record_packets
        self.switches: dict[str, sw.Switch] = {}
        self.by_dpid: dict[int, sw.Switch] = {}
        for spec in topology.switches:
            s = sw.Switch(spec.dpid, topology.ports(spec.name), name=spec.name, sw_version=sw_version,
                          openflow=openflow, buffer_packets=self.limits.buffer_packets,
                          table_size=self.limits.table_size)
            self.switches[spec.name] = s
            self.by_dpid[spec.dpid] = s
        self._wire(topology)
        self.connections: dict[int, Connection] = {}
        self._conns_of: dict[int, list[Connection]] = {}  # dpid -> its connections, in open order
        self.controllers_alive: dict[str, bool] = {}
        self.channels = Channels()
        self.stats = Stats()
        self.observed_violations: list[Any] = []
        self.switch_up: dict[str, bool] = {name: True for name in self.switches}
        self.blocked: set[tuple[int, str]] = set()           # (dpid, controller) channels held
        self.delay_next: dict[tuple[str, int], float] = {}   # (node, port) -> seconds to hold the next
        self.control_delay_next: dict[tuple[int, str, str], float] = {}  # (dpid, controller, direction)
        self.isolation: tuple[tuple[str, str], ...] = ()
        self.faucet_policy: object | None = None   # the Faucet config's VLANs and ACLs (invariants/faucet_policy)
        self.epoch = 0  # bumped by every input that changes what the network can deliver
        # (dpid, controller) -> when the controller closed that switch's connection; the switch dials again
        # (as Open vSwitch does, with backoff) and counts as connected for REDIAL_GRACE seconds meanwhile
        self.redialing: dict[tuple[int, str], float] = {}
        self.observing = True  # False during a warm-up: looping packets are dropped but not reported
        # told of every FLOW_MOD/GROUP_MOD a switch applies (see TableObserver): a check per message
        self.table_observers: list[TableObserver] = []
        # ERRORs switches answered controllers' messages with, kept when a job checks openflow-errors
        self.rejections: list[Rejection] | None = None
        # what became of each frame a host sent, kept when a job explains failed pings
        self.fates: FateLog | None = None

    # ------------------------------------------------------------ channels
    def _enqueue(self, make: Callable[[int], PendingEvent]) -> PendingEvent:
        return self.channels.push(make)

    def enabled(self) -> list[PendingEvent]:
        """The head of every non-empty channel that is not blocked or held, oldest first."""
        now = self.clock.now()
        heads = [ev for ev in self.channels.heads() if self._may_fire(ev, now)]
        heads.sort(key=lambda e: e.id)
        return heads

    def _may_fire(self, ev: PendingEvent, now: float) -> bool:
        if ev.held >= 0:
            return self.channels.released(ev, now)
        if self.blocked and not isinstance(ev, OnWire):
            c = self.connections[ev.conn]
            return (c.dpid, c.controller) not in self.blocked
        return True

    def pending_count(self) -> int:
        return len(self.channels)

    def quiescent(self) -> bool:
        """Nothing can fire now (blocked or held messages may still be waiting)."""
        return self.next_event() is None

    def settled_until(self, until: float) -> bool:
        """Nothing can fire now, nor by ``until`` (this World's clock) of itself: no held message is
        released, no flow times out, no switch is dialing a controller that hung up on it."""
        if (not self.quiescent() or self.redialing
                or any(t <= until for t in self.channels.release_at.values())):
            return False
        for s in self.switches.values():
            nxt = s.next_expiry()
            if nxt is not None and nxt <= until:
                return False
        return True

    def next_event(self) -> PendingEvent | None:
        """The oldest event that may fire now."""
        ev = self.channels.oldest()
        if ev is None:
            return None
        if not (self.blocked or self.channels.release_at) or self._may_fire(ev, self.clock.now()):
            return ev
        # Rare path: some channels are blocked or held; look past them.
        enabled = self.enabled()
        return enabled[0] if enabled else None

    def fire_next(self) -> list[Effect] | None:
        """Fire the oldest enabled event (the prompt, in-order policy); None when nothing is pending."""
        ev = self.next_event()
        if ev is None:
            return None
        return self.fire(ev)

    def fire(self, ev: PendingEvent) -> list[Effect]:
        """Apply one enabled event; return the messages the runtime must hand to controllers."""
        self.channels.pop(ev)
        self.stats.fired += 1
        if ev.held < 0 and self._take_delay(ev):
            return []
        if isinstance(ev, ToSwitch):
            return self._fire_to_switch(ev)
        if isinstance(ev, PendingToController):
            return self._fire_to_controller(ev)
        self._fire_wire(ev)
        return []

    def drain(self, limit: int | None = None) -> list[Effect]:
        """Fire events in order until nothing can fire (or ``limit`` events fired)."""
        out: list[Effect] = []
        n = 0
        while limit is None or n < limit:
            effects = self.fire_next()
            if effects is None:
                break
            out.extend(effects)
            n += 1
        return out

    # ------------------------------------------------------------ control plane
    def open_connection(self, dpid: int, controller: str, *, hello: bool = False) -> int:
        """A new control connection; ``hello``: its version is still to be negotiated (see :meth:`negotiated`)."""
        conn = len(self.connections)
        c = self.connections[conn] = Connection(conn, dpid, controller, awaiting_hello=hello)
        self._conns_of.setdefault(dpid, []).append(c)
        self.controllers_alive.setdefault(controller, True)
        return conn

    def offered_versions(self, dpid: int) -> tuple[int, ...]:
        """The OpenFlow wire versions switch ``dpid`` offers when it connects."""
        return self.by_dpid[dpid].offered_versions

    def negotiated(self, conn: int, version: int) -> bool:
        """Connection ``conn`` agreed on OpenFlow wire ``version`` (its HELLO exchange finished).

        The switch's first connection decides the version it runs; False when
        the switch already runs another one (the caller closes ``conn``).
        """
        c = self.connections[conn]
        c.awaiting_hello = False
        return self.by_dpid[c.dpid].use_version(version)

    def openflow_versions(self) -> dict[str, str]:
        """Each switch's negotiated OpenFlow version ("1.0"/"1.3"), for the switches that negotiated one."""
        names = {1: "1.0", 4: "1.3"}
        return {name: names[s.negotiated] for name, s in self.switches.items() if s.negotiated in names}

    def close_connection(self, conn: int, reason: str, redial: bool = False) -> None:
        c = self.connections[conn]
        if not c.up:
            return
        c.up = False
        for channel in (("to_switch", conn), ("to_controller", conn)):
            self.channels.clear(channel)
        self.record(ts.SwitchDisconnected, dpid=c.dpid, conn=conn, controller=c.controller, reason=reason,
                    redial=redial)

    def connection_lost(self, conn: int, reason: str) -> bool:
        """The controller's end of ``conn`` closed (no input of ours did it): a real switch then dials the
        controller again, so this one will (the edge does). True when it should: the switch is up, the
        controller is not known dead, and no other connection of the pair is up."""
        c = self.connections[conn]
        redial = self.switch_up[self.by_dpid[c.dpid].name] and self.controllers_alive.get(c.controller, False) \
            and not self.has_connection(c.dpid, c.controller, besides=conn)
        self.close_connection(conn, reason, redial=redial)
        if not redial:
            self.redialing.pop((c.dpid, c.controller), None)
            return False
        now = self.clock.now()
        # Turned away (before the handshake, or at once after it) continues the episode of redials;
        # a connection that had been working starts a new one.
        worked = c.features_replied and now - c.replied_at >= TURNED_AWAY
        if worked or (c.dpid, c.controller) not in self.redialing:
            self.redialing[(c.dpid, c.controller)] = now
        return True

    def has_connection(self, dpid: int, controller: str, besides: int | None = None) -> bool:
        """Whether switch ``dpid`` has an open connection to ``controller`` (handshaken or not), other
        than connection ``besides``."""
        return any(c.up and c.controller == controller and c.conn != besides for c in self._conns_of.get(dpid, []))

    def wants_redial(self, dpid: int, controller: str) -> bool:
        """Whether a switch that lost its connection should still dial ``controller``."""
        name = self.by_dpid[dpid].name
        if not self.switch_up[name] or not self.controllers_alive.get(controller, False):
            self.redialing.pop((dpid, controller), None)
            return False
        return (dpid, controller) in self.redialing and not self.has_connection(dpid, controller)

    def redialing_dpids(self, grace: float = REDIAL_GRACE) -> frozenset[int]:
        """Switches whose controller hung up on them less than ``grace`` seconds ago and that are dialing it
        again (or have just got through). A pair counts until its new connection has stayed up ``grace``
        seconds: a controller that accepts a switch only to hang up again at once (Faucet turning away a
        dp it no longer has) leaves it flapping, which after the grace is as good as not connected."""
        now = self.clock.now()
        out = set()
        for (dpid, controller), since in list(self.redialing.items()):
            up = [c.replied_at for c in self._conns_of.get(dpid, [])
                  if c.up and c.features_replied and c.controller == controller]
            if up and now - max(up) >= grace:
                del self.redialing[(dpid, controller)]  # stable again: the episode is over
            elif now - since < grace:
                out.add(dpid)
        return frozenset(out)

    def from_controller(self, conn: int, msg: Any) -> None:
        """A message the controller sent on ``conn`` enters the interposition buffer."""
        if self.connections[conn].up:
            self._enqueue(lambda i: ToSwitch(i, conn, msg))

    def send_to_controller(self, conn: int, msg: Any) -> None:
        if self.connections[conn].up:
            self._enqueue(lambda i: PendingToController(i, conn, msg))

    def _record_message(self, cls: type, c: Connection, msg: Any) -> Any:
        """Record a control message as delivered (JSON and fingerprint only when a trace is kept);
        the trace event, or None without a trace."""
        if self.record.sink is None:
            return None
        js = msg_to_json(msg)
        return self.record(cls, conn=c.conn, controller=c.controller, dpid=c.dpid, msg=js, fp=of_fingerprint(js))

    def _fire_to_switch(self, ev: ToSwitch) -> list[Effect]:
        c = self.connections[ev.conn]
        switch = self.by_dpid[c.dpid]
        self.stats.to_switch += 1
        recorded = self._record_message(ts.ControlToSwitch, c, ev.msg)
        observers = self.table_observers
        kind = msg_type_name(ev.msg) if observers else ""
        watched = kind in TABLE_CHANGING
        if watched:
            for o in list(observers):
                o.before_flow_mod(switch.name)
        outputs = switch.handle_message(ev.conn, ev.msg, self.clock.now())
        if self.rejections is not None:
            self._note_rejection(switch, c, ev.msg, outputs, None if recorded is None else recorded.seq)
        if watched and not rejected(ev.msg, outputs):
            applied = flow_mod_applied(switch, kind, ev.msg, None if recorded is None else recorded.seq)
            for o in list(observers):
                o.flow_mod_applied(applied)
        self._apply_outputs(switch, outputs, ev.conn)
        return []

    def _note_rejection(self, switch: sw.Switch, c: Connection, msg: Any, outputs: Iterable[Any],
                        seq: int | None) -> None:
        assert self.rejections is not None
        for out in outputs:
            reply = getattr(out, "msg", None)
            if reply is not None and getattr(reply, "xid", None) == msg.xid and msg_type_name(reply) == "ERROR":
                self.rejections.append(Rejection(switch.name, c.controller, switch.version, msg, reply.type,
                                                 reply.code, msg.xid, seq, self.clock.now()))

    def note_undecodable(self, conn: int, err_type: int, err_code: int, xid: int, version: int) -> None:
        """The edge answered bytes from a controller that did not decode with an ERROR (a malformed message)."""
        if self.rejections is None:
            return
        c = self.connections[conn]
        self.rejections.append(Rejection(self.by_dpid[c.dpid].name, c.controller, version, None, err_type, err_code,
                                         xid, None, self.clock.now()))

    def _fire_to_controller(self, ev: PendingToController) -> list[Effect]:
        c = self.connections[ev.conn]
        self.stats.to_controller += 1
        self._record_message(ts.ControlToController, c, ev.msg)
        if not c.features_replied and msg_type_name(ev.msg) == "FEATURES_REPLY":
            c.features_replied = True
            c.replied_at = self.clock.now()
            self.record(ts.SwitchConnected, dpid=c.dpid, conn=ev.conn, controller=c.controller)
        return [Deliver(ev.conn, ev.msg)]

    def _apply_outputs(self, switch: sw.Switch, outputs: Iterable[Any], conn: int | None) -> None:
        for out in outputs:
            if isinstance(out, sw.Emit):
                self._emit(switch.name, out.port, out.packet, out.tag)
            else:
                targets = [out.conn] if out.conn is not None else [
                    c.conn for c in self._conns_of.get(switch.dpid, ()) if c.up and not c.awaiting_hello]
                for t in targets:
                    self.send_to_controller(t, out.msg)

    def tick(self) -> None:
        """Expire flows whose timeouts passed (FLOW_REMOVED where asked)."""
        now = self.clock.now()
        for s in self.switches.values():
            nxt = s.next_expiry()
            if nxt is not None and nxt <= now:
                self._apply_outputs(s, s.expire(now), None)

    def set_controller_alive(self, controller: str, alive: bool) -> None:
        self.controllers_alive[controller] = alive

    # ------------------------------------------------------------ what inputs change
    # The World's inputs record an event first, then change the network
    # through these operations, so each recorded disconnect follows its cause.
    def note_disruption(self) -> None:
        """Start a new epoch: packets in flight before it may legitimately be lost."""
        self.epoch += 1

    def power_off_switch(self, name: str) -> list[Effect]:
        """Switch ``name`` goes dark: its connections close and its links stop carrying packets."""
        self.switch_up[name] = False
        effects: list[Effect] = []
        s = self.switches[name]
        for c in list(self._conns_of.get(s.dpid, [])):
            if c.up:
                self.close_connection(c.conn, "switch failure")
                effects.append(Disconnect(c.conn))
        self._sync_switch_ports(name)
        return effects

    def power_on_switch(self, name: str) -> None:
        """Switch ``name`` boots again with the same ports and an empty table (it reconnects by itself)."""
        fresh = self.switches[name].rebooted()
        self.switches[name] = fresh
        self.by_dpid[fresh.dpid] = fresh
        self.switch_up[name] = True
        self._sync_switch_ports(name)

    def _sync_switch_ports(self, name: str) -> None:
        for port in self.switches[name].ports:
            if (name, port) in self.peer:
                self._sync_ports(self.link_key(name, port))

    def disconnect_controller(self, controller: str, reason: str) -> list[Effect]:
        """Close every open connection of ``controller``; the edge must close the sockets."""
        effects: list[Effect] = []
        for c in self.connections.values():
            if c.up and c.controller == controller:
                self.close_connection(c.conn, reason)
                effects.append(Disconnect(c.conn))
        return effects

    def set_channel_blocked(self, dpid: int, controller: str, blocked: bool) -> None:
        """Hold (or release) every message between switch ``dpid`` and ``controller``."""
        if blocked:
            self.blocked.add((dpid, controller))
        else:
            self.blocked.discard((dpid, controller))

    def free_port(self, switch: str) -> int:
        """The port number a newly plugged host gets on ``switch``."""
        return max(self.switches[switch].ports, default=0) + 1

    def move_host(self, host: str, new_switch: str, new_port: int) -> None:
        """Unplug ``host`` and plug it into ``new_port`` of ``new_switch`` (PORT_STATUS DELETE/ADD)."""
        old_switch, old_port = self.host_at[host]
        hport = self.host_iface[host]
        old_key = self.link_key(host, hport)
        del self.link_up[old_key]
        del self.peer[(old_switch, old_port)]
        old = self.switches[old_switch]
        if old_port in old.ports:
            status = old.remove_port(old_port)
            if self.switch_up[old_switch]:  # a failed switch tells nobody
                self._apply_outputs(old, status, None)
        self.peer[(host, hport)] = (new_switch, new_port)
        self.peer[(new_switch, new_port)] = (host, hport)
        self.link_up[(new_switch, new_port, host, hport)] = True
        self.host_at[host] = (new_switch, new_port)
        target = self.switches[new_switch]
        status = target.add_port(new_port)
        if self.switch_up[new_switch]:
            self._apply_outputs(target, status, None)

    def arm_packet_drop(self, node: str, port: int) -> None:
        """Lose the next packet that arrives at (node, port)."""
        self.drop_next[(node, port)] = self.drop_next.get((node, port), 0) + 1

    def arm_packet_delay(self, node: str, port: int, seconds: float) -> None:
        """Hold the next packet that arrives at (node, port) for ``seconds``."""
        self.delay_next[(node, port)] = seconds

    def arm_message_delay(self, dpid: int, controller: str, direction: str, seconds: float) -> None:
        """Hold the next control message on one direction of a channel for ``seconds``."""
        self.control_delay_next[(dpid, controller, direction)] = seconds

    def _take_delay(self, ev: PendingEvent) -> bool:
        """If a delay is armed for this event's path, hold it (later events may overtake it)."""
        if isinstance(ev, OnWire):
            key: tuple[Any, ...] = (ev.node, ev.port)
            table: dict[Any, Any] = self.delay_next
        else:
            if not self.control_delay_next:
                return False
            c = self.connections[ev.conn]
            key = (c.dpid, c.controller, "to_switch" if isinstance(ev, ToSwitch) else "to_controller")
            table = self.control_delay_next
        seconds = table.pop(key, None) if table else None
        if seconds is None:
            return False
        self.channels.hold(ev, self.clock.now() + seconds)
        return True

    # ------------------------------------------------------------ views
    def view(self, crashed_by_input: frozenset[str] = frozenset()) -> NetworkView:
        """What the invariants read; ``crashed_by_input``: controllers an input killed."""
        connected = {c.dpid for c in self.connections.values() if c.up and c.features_replied}
        controllers_of: dict[int, tuple[str, ...]] = {}
        for c in self.connections.values():
            if c.up and c.features_replied:
                controllers_of[c.dpid] = controllers_of.get(c.dpid, ()) + (c.controller,)
        return NetworkView(
            topology=self.topology,
            switches=self.switches,
            link_up={key: self.link_is_up(key[0], key[1]) for key in self.link_up},
            cut_from=frozenset(self.cut_from),
            controllers_alive=dict(self.controllers_alive),
            connected_dpids=frozenset(connected),
            controllers_of=controllers_of,
            switch_up=dict(self.switch_up),
            host_at=dict(self.host_at),
            isolation=self.isolation,
            faucet=self.faucet_policy,
            crashed_by_input=crashed_by_input,
            undelivered=self.undelivered(),
            redialing=self.redialing_dpids(),
        )

    def describe_pending(self) -> list[str]:
        out = []
        for ev in self.enabled():
            if isinstance(ev, OnWire):
                out.append(f"#{ev.id} {ev.src}:{ev.src_port} -> {ev.node}:{ev.port} {ev.packet.summary()}")
            else:
                c = self.connections[ev.conn]
                arrow = "->" if isinstance(ev, ToSwitch) else "<-"
                out.append(f"#{ev.id} {c.controller} {arrow} s{c.dpid} {msg_type_name(ev.msg)}")
        return out
