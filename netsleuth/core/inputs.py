"""Input events applied to the World: failures, recoveries, migrations, traffic, delays.

Each method changes the network the way the real event would (a failed
switch tears down its control connections and darkens its links; a migrated
host unplugs from one port and plugs into a new one), records one typed
input event with its dependencies made explicit (a recovery depends on its
failure; a host's migration on that host's previous one), and returns the
effects the runtime must carry out at the edge (close or open TCP
connections). Kept apart from world.py, which is about channels and
delivery; this mixin is only ever used as part of World.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from netsleuth.core.events import Connect, Disconnect, Effect, OnWire, PendingEvent, ToSwitch
from netsleuth.model.packet import ICMP, IPv4, Packet, arp_request, tcp_syn
from netsleuth.trace import schema as ts

if TYPE_CHECKING:  # pragma: no cover
    from netsleuth.core.world import World


class InputsMixin:
    def _init_inputs(self: "World") -> None:
        self._open_failure: dict[tuple, str] = {}   # what failed -> id of the failure input
        self._last_migration: dict[str, str] = {}   # host -> id of its latest migration
        self._traffic_seq = 0

    def _input(self: "World", cls: type, deps: tuple[str, ...] = (), **fields: Any) -> Any:
        if cls is not ts.TrafficInjection:
            self.epoch += 1
        return self.record(cls, id=self.next_input_id(), deps=deps, **fields)

    # ------------------------------------------------------------ switches
    def fail_switch(self: "World", name: str) -> list[Effect]:
        if not self.switch_up[name]:
            return []
        ev = self._input(ts.SwitchFailure, switch=name)
        self._open_failure[("switch", name)] = ev.id
        self.switch_up[name] = False
        effects: list[Effect] = []
        s = self.switches[name]
        for c in list(self._conns_of.get(s.dpid, [])):
            if c.up:
                self.close_connection(c.conn, "switch failure")
                effects.append(Disconnect(c.conn))
        for port in s.ports:
            if (name, port) in self.peer:
                self._sync_ports(self._link_key(name, port))
        return effects

    def recover_switch(self: "World", name: str) -> list[Effect]:
        if self.switch_up[name]:
            return []
        dep = self._open_failure.pop(("switch", name), None)
        self._input(ts.SwitchRecovery, deps=(dep,) if dep else (), switch=name)
        fresh = self.switches[name].rebooted()
        self.switches[name] = fresh
        self.by_dpid[fresh.dpid] = fresh
        self.switch_up[name] = True
        for port in fresh.ports:
            if (name, port) in self.peer:
                self._sync_ports(self._link_key(name, port))
        return [Connect(fresh.dpid, c) for c, alive in self.controllers_alive.items() if alive]

    # ------------------------------------------------------------ links
    def fail_link(self: "World", node1: str, port1: int) -> list[Effect]:
        key = self._link_key(node1, port1)
        if not self.link_up[key]:
            return []
        ev = self._input(ts.LinkFailure, node1=key[0], port1=key[1], node2=key[2], port2=key[3])
        self._open_failure[("link",) + key] = ev.id
        self.set_link(node1, port1, False)
        return []

    def recover_link(self: "World", node1: str, port1: int) -> list[Effect]:
        key = self._link_key(node1, port1)
        if self.link_up[key]:
            return []
        dep = self._open_failure.pop(("link",) + key, None)
        self._input(ts.LinkRecovery, deps=(dep,) if dep else (), node1=key[0], port1=key[1], node2=key[2],
                    port2=key[3])
        self.set_link(node1, port1, True)
        return []

    # ------------------------------------------------------------ controllers
    def crash_controller(self: "World", name: str) -> list[Effect]:
        """Record the crash and drop its connections; the caller kills the process."""
        if not self.controllers_alive.get(name, False):
            return []
        ev = self._input(ts.ControllerCrash, controller=name)
        self._open_failure[("controller", name)] = ev.id
        self.controllers_alive[name] = False
        effects: list[Effect] = []
        for c in self.connections.values():
            if c.up and c.controller == name:
                self.close_connection(c.conn, "controller crash")
                effects.append(Disconnect(c.conn))
        return effects

    def recover_controller(self: "World", name: str) -> list[Effect]:
        """Record the recovery; the caller restarts the process first. Live switches reconnect."""
        if self.controllers_alive.get(name, True):
            return []
        dep = self._open_failure.pop(("controller", name), None)
        self._input(ts.ControllerRecovery, deps=(dep,) if dep else (), controller=name)
        self.controllers_alive[name] = True
        return [Connect(self.switches[s].dpid, name) for s, up in self.switch_up.items() if up]

    def block_channel(self: "World", switch: str, controller: str) -> list[Effect]:
        key = (self.switches[switch].dpid, controller)
        if key in self.blocked:
            return []
        ev = self._input(ts.ChannelBlock, switch=switch, controller=controller)
        self._open_failure[("channel", switch, controller)] = ev.id
        self.blocked.add(key)
        return []

    def unblock_channel(self: "World", switch: str, controller: str) -> list[Effect]:
        key = (self.switches[switch].dpid, controller)
        if key not in self.blocked:
            return []
        dep = self._open_failure.pop(("channel", switch, controller), None)
        self._input(ts.ChannelUnblock, deps=(dep,) if dep else (), switch=switch, controller=controller)
        self.blocked.discard(key)
        return []

    # ------------------------------------------------------------ hosts
    def migrate_host(self: "World", host: str, new_switch: str) -> list[Effect]:
        """Unplug ``host`` and plug it into a new port of ``new_switch`` (PORT_STATUS DELETE/ADD)."""
        old_switch, old_port = self.host_at[host]
        target = self.switches[new_switch]
        new_port = max(target.ports, default=0) + 1
        deps = (self._last_migration[host],) if host in self._last_migration else ()
        ev = self._input(ts.HostMigration, deps=deps, host=host, old_switch=old_switch, old_port=old_port,
                         new_switch=new_switch, new_port=new_port)
        self._last_migration[host] = ev.id
        hport = self.host_iface[host]
        old_key = self._link_key(host, hport)
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
        status = target.add_port(new_port)
        if self.switch_up[new_switch]:
            self._apply_outputs(target, status, None)
        return []

    def inject_traffic(self: "World", src: str, dst: str, what: str = "icmp") -> str:
        """Host ``src`` sends to ``dst``: an ICMP echo, an ARP request or a TCP SYN."""
        host = self.hosts[src]
        peer = self.topology.host(dst)
        if what == "icmp":
            self._traffic_seq += 1
            return self.inject_ping(src, dst, 0x4E53, self._traffic_seq)
        if what == "arp":
            frames = [arp_request(host.mac, host.ip, peer.ip)]
            packet = frames[0]
        elif what == "tcp_syn":
            self._traffic_seq += 1
            packet = tcp_syn(host.mac, peer.mac, host.ip, peer.ip, 20000 + self._traffic_seq % 40000, 80)
            frames = host.send_ip(packet)
        else:
            raise ValueError(f"unknown traffic kind {what!r}")
        ev = self._input(ts.TrafficInjection, host=src, packet=packet.to_json(), dst=dst)
        self.send_from_host(src, frames)
        return ev.id

    def apply_recorded(self: "World", e: ts.InputEvent) -> list[Effect]:
        """Apply an input event recorded in a trace (replay, minimization, rebuilt state).

        Controller crashes and recoveries change only the World; killing and
        restarting the process is the caller's (it owns the process).
        """
        if isinstance(e, ts.SwitchFailure):
            return self.fail_switch(e.switch)
        if isinstance(e, ts.SwitchRecovery):
            return self.recover_switch(e.switch)
        if isinstance(e, ts.LinkFailure):
            return self.fail_link(e.node1, e.port1)
        if isinstance(e, ts.LinkRecovery):
            return self.recover_link(e.node1, e.port1)
        if isinstance(e, ts.HostMigration):
            return self.migrate_host(e.host, e.new_switch)
        if isinstance(e, ts.ControllerCrash):
            return self.crash_controller(e.controller)
        if isinstance(e, ts.ControllerRecovery):
            return self.recover_controller(e.controller)
        if isinstance(e, ts.ChannelBlock):
            return self.block_channel(e.switch, e.controller)
        if isinstance(e, ts.ChannelUnblock):
            return self.unblock_channel(e.switch, e.controller)
        if isinstance(e, ts.DataplaneDrop):
            return self.drop_next_packet(e.node, e.port)
        if isinstance(e, ts.DataplaneDelay):
            return self.delay_next_packet(e.node, e.port, e.seconds)
        if isinstance(e, ts.ControlDelay):
            return self.delay_next_message(e.switch, e.controller, e.direction, e.seconds)
        if isinstance(e, ts.TrafficInjection):
            self.send_recorded_packet(e.host, Packet.from_json(e.packet), e.dst)
            return []
        raise ValueError(f"no way to apply input kind {e.kind!r}")

    def send_recorded_packet(self: "World", host: str, packet: Packet, dst: str | None) -> str:
        """Host ``host`` sends a recorded packet (IPv4 resolves the next hop with ARP first)."""
        ev = self._input(ts.TrafficInjection, host=host, packet=packet.to_json(), dst=dst)
        h = self.hosts[host]
        if isinstance(packet.l3, IPv4):
            if isinstance(packet.l4, ICMP) and packet.l4.type == 8:
                frames = h.ping(packet.l3.dst, packet.l4.ident, packet.l4.seq)
            else:
                frames = h.send_ip(packet)
        else:
            frames = [packet]
        self.send_from_host(host, frames)
        return ev.id

    # ------------------------------------------------------------ drops and delays
    def drop_next_packet(self: "World", node: str, port: int) -> list[Effect]:
        self._input(ts.DataplaneDrop, node=node, port=port, fp=())
        self.drop_next[(node, port)] = self.drop_next.get((node, port), 0) + 1
        return []

    def delay_next_packet(self: "World", node: str, port: int, seconds: float) -> list[Effect]:
        self._input(ts.DataplaneDelay, node=node, port=port, fp=(), seconds=seconds)
        self.delay_next[(node, port)] = seconds
        return []

    def delay_next_message(self: "World", switch: str, controller: str, direction: str,
                           seconds: float) -> list[Effect]:
        if direction not in ("to_switch", "to_controller"):
            raise ValueError(f"direction must be to_switch or to_controller, not {direction!r}")
        self._input(ts.ControlDelay, switch=switch, controller=controller, direction=direction, fp=(),
                    seconds=seconds)
        self.control_delay_next[(self.switches[switch].dpid, controller, direction)] = seconds
        return []

    def _take_delay(self: "World", ev: PendingEvent) -> bool:
        """If a delay is armed for this event's path, hold it (later events may overtake it)."""
        if isinstance(ev, OnWire):
            key: tuple = (ev.node, ev.port)
            table: dict = self.delay_next
        else:
            if not self.control_delay_next:
                return False
            c = self.connections[ev.conn]
            key = (c.dpid, c.controller, "to_switch" if isinstance(ev, ToSwitch) else "to_controller")
            table = self.control_delay_next
        seconds = table.pop(key, None) if table else None
        if seconds is None:
            return False
        release = self.clock.now() + seconds
        held = self._enqueue(lambda i: replace(ev, id=i, held=i))
        self._release_at[held.id] = release
        return True

