"""The World: the Network plus the inputs that change it.

Inputs are failures, recoveries, migrations, traffic, drops and delays.
Each method changes the network the way the real event would (a failed
switch tears down its control connections and darkens its links; a migrated
host unplugs from one port and plugs into a new one), records one typed
input event with its dependencies made explicit (a recovery depends on its
failure; a host's migration on that host's previous one), and returns the
effects the runtime must carry out at the edge (close or open TCP
connections).

The World sits on top of :class:`~netsleuth.world.network.Network`, which
owns channels, delivery and connections; the inputs read its public state
and change it only through its public operations, so what an input means
(its record, its dependencies) stays apart from how the network carries
it out.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from netsleuth import __version__
from netsleuth.invariants.policy.intent import separated_by
from netsleuth.invariants.view import NetworkView
from netsleuth.model.addr import BROADCAST_MAC
from netsleuth.model.packet import ICMP, IPv4, Packet, arp_request, icmp_echo, tcp_syn
from netsleuth.model.switch_io import SwitchLimits
from netsleuth.model.topology import Topology
from netsleuth.trace import schema as ts
from netsleuth.trace.validate import config_sha256
from netsleuth.world.clock import Clock
from netsleuth.world.events import Connect, Effect
from netsleuth.world.network import Network
from netsleuth.world.records import Connection, Recorder, Stats

__all__ = ["CONFIG_SETTLE", "Connection", "Recorder", "Stats", "World"]

CONFIG_SETTLE = 2.0
"""Seconds after a config change during which traffic may still meet the previous configuration: the
controller reloads its file and reprograms the switches only some time after being told to (Faucet,
after SIGHUP, in about 0.3 s on an idle machine)."""


class World(Network):
    """The Network, plus the inputs that fail, recover, move and drive it, each recorded with its dependencies."""

    def __init__(self, topology: Topology, clock: Clock, record: Recorder | None = None,
                 *, record_packets: bool = True, sw_version: str = __version__, openflow: str = "auto",
                 limits: SwitchLimits | None = None) -> None:
        super().__init__(topology, clock, record, record_packets=record_packets, sw_version=sw_version,
                         openflow=openflow, limits=limits)
        self._next_input = 0
        self._open_failure: dict[tuple[Any, ...], str] = {}   # what failed -> id of the failure input
        self._last_migration: dict[str, str] = {}   # host -> id of its latest migration
        self._traffic_seq = 0
        # controller -> its configuration file as data (the latest config change, or the file it started
        # with): what it was told to do, so the invariants do not flag the operator's intent as a bug
        self.configs: dict[str, dict[str, Any]] = {}
        # (until when, pairs the config before the latest change kept apart): see separated()
        self._settling: tuple[float, frozenset[tuple[str, str]]] = (0.0, frozenset())
        self._config_version = 0
        self._separated_memo: tuple[Any, frozenset[tuple[str, str]]] = (None, frozenset())

    def next_input_id(self) -> str:
        self._next_input += 1
        return f"i{self._next_input}"

    def _input(self, cls: type, deps: tuple[str, ...] = (), **fields: Any) -> Any:
        if cls is not ts.TrafficInjection:
            self.note_disruption()
        return self.record(cls, id=self.next_input_id(), deps=deps, **fields)

    def view(self, crashed_by_input: frozenset[str] | None = None) -> NetworkView:
        """The Network's view, naming the controllers that a recorded crash input killed."""
        if crashed_by_input is None:
            crashed_by_input = frozenset(k[1] for k in self._open_failure if k[0] == "controller")
        view = super().view(crashed_by_input)
        if not self.configs:
            return view
        return dataclasses.replace(view, separated=self.separated())

    def separated(self) -> frozenset[tuple[str, str]]:
        """Host pairs the controllers' configs keep apart; for CONFIG_SETTLE seconds after a config change
        also those the previous config kept apart (the controller may not have applied the new one yet)."""
        now = self.clock.now()
        key = (self._config_version, tuple(sorted(self.host_at.items())))
        if self._separated_memo[0] != key:  # hosts move and configs change rarely; packets are many
            self._separated_memo = (key, separated_by([self.configs[c] for c in sorted(self.configs)],
                                                      self.topology, self.host_at))
        pairs = self._separated_memo[1]
        if now < self._settling[0]:
            pairs |= self._settling[1]
        return pairs

    def expects_delivery(self, src: str, dst: str) -> bool:
        return not self.configs or (src, dst) not in self.separated()

    # ------------------------------------------------------------ switches
    def fail_switch(self, name: str) -> list[Effect]:
        if not self.switch_up[name]:
            return []
        ev = self._input(ts.SwitchFailure, switch=name)
        self._open_failure[("switch", name)] = ev.id
        return self.power_off_switch(name)

    def recover_switch(self, name: str) -> list[Effect]:
        if self.switch_up[name]:
            return []
        dep = self._open_failure.pop(("switch", name), None)
        self._input(ts.SwitchRecovery, deps=(dep,) if dep else (), switch=name)
        self.power_on_switch(name)
        dpid = self.switches[name].dpid
        return [Connect(dpid, c) for c, alive in self.controllers_alive.items() if alive]

    # ------------------------------------------------------------ links
    def fail_link(self, node1: str, port1: int, one_way: bool = False) -> list[Effect]:
        if one_way:
            return self._fail_direction(node1, port1)
        key = self.link_key(node1, port1)
        if not self.link_up[key]:
            return []
        ev = self._input(ts.LinkFailure, node1=key[0], port1=key[1], node2=key[2], port2=key[3])
        self._open_failure[("link",) + key] = ev.id
        self.set_link(node1, port1, False)
        return []

    def _fail_direction(self, node1: str, port1: int) -> list[Effect]:
        if (node1, port1) in self.cut_from:
            return []
        node2, port2 = self.peer[(node1, port1)]
        ev = self._input(ts.LinkFailure, node1=node1, port1=port1, node2=node2, port2=port2, one_way=True)
        self._open_failure[("link-from", node1, port1)] = ev.id
        self.set_link_direction(node1, port1, False)
        return []

    def _recover_direction(self, node1: str, port1: int) -> list[Effect]:
        if (node1, port1) not in self.cut_from:
            return []
        node2, port2 = self.peer[(node1, port1)]
        dep = self._open_failure.pop(("link-from", node1, port1), None)
        self._input(ts.LinkRecovery, deps=(dep,) if dep else (), node1=node1, port1=port1, node2=node2,
                    port2=port2, one_way=True)
        self.set_link_direction(node1, port1, True)
        return []

    def recover_link(self, node1: str, port1: int, one_way: bool = False) -> list[Effect]:
        if one_way:
            return self._recover_direction(node1, port1)
        key = self.link_key(node1, port1)
        if self.link_up[key]:
            return []
        dep = self._open_failure.pop(("link",) + key, None)
        self._input(ts.LinkRecovery, deps=(dep,) if dep else (), node1=key[0], port1=key[1], node2=key[2],
                    port2=key[3])
        self.set_link(node1, port1, True)
        return []

    # ------------------------------------------------------------ controllers
    def crash_controller(self, name: str) -> list[Effect]:
        """Record the crash and drop its connections; the caller kills the process."""
        if not self.controllers_alive.get(name, False):
            return []
        ev = self._input(ts.ControllerCrash, controller=name)
        self._open_failure[("controller", name)] = ev.id
        self.set_controller_alive(name, False)
        return self.disconnect_controller(name, "controller crash")

    def recover_controller(self, name: str) -> list[Effect]:
        """Record the recovery; the caller restarts the process first. Live switches reconnect."""
        if self.controllers_alive.get(name, True):
            return []
        dep = self._open_failure.pop(("controller", name), None)
        self._input(ts.ControllerRecovery, deps=(dep,) if dep else (), controller=name)
        self.set_controller_alive(name, True)
        return [Connect(self.switches[s].dpid, name) for s, up in self.switch_up.items() if up]

    def start_config(self, name: str, config: dict[str, Any]) -> None:
        """The configuration controller ``name`` starts from (not an input: nothing is recorded)."""
        self.configs[name] = config
        self._config_version += 1

    def change_config(self, name: str, config: str, edit: str) -> list[Effect]:
        """Record that ``name``'s configuration file now holds ``config`` (the whole YAML text).

        Writing the file and telling the controller to reload it (SIGHUP) is the
        caller's, which owns the process; a crashed controller reads it when it restarts.
        """
        import yaml  # here: only configs (Faucet's) need YAML; importing it costs every command

        data = yaml.safe_load(config)
        if not isinstance(data, dict):
            raise ValueError(f"a config change must be a YAML mapping, not {type(data).__name__}")
        before = self.separated() if self.configs else frozenset()
        self._input(ts.ConfigChange, controller=name, edit=edit, config=config, sha256=config_sha256(config))
        self.configs[name] = data
        self._config_version += 1
        self._settling = (self.clock.now() + CONFIG_SETTLE, before)
        return []

    def block_channel(self, switch: str, controller: str) -> list[Effect]:
        dpid = self.switches[switch].dpid
        if (dpid, controller) in self.blocked:
            return []
        ev = self._input(ts.ChannelBlock, switch=switch, controller=controller)
        self._open_failure[("channel", switch, controller)] = ev.id
        self.set_channel_blocked(dpid, controller, True)
        return []

    def unblock_channel(self, switch: str, controller: str) -> list[Effect]:
        dpid = self.switches[switch].dpid
        if (dpid, controller) not in self.blocked:
            return []
        dep = self._open_failure.pop(("channel", switch, controller), None)
        self._input(ts.ChannelUnblock, deps=(dep,) if dep else (), switch=switch, controller=controller)
        self.set_channel_blocked(dpid, controller, False)
        return []

    # ------------------------------------------------------------ hosts and traffic
    def migrate_host(self, host: str, new_switch: str, port: int | None = None) -> list[Effect]:
        """Unplug ``host`` and plug it into a new port of ``new_switch`` (PORT_STATUS DELETE/ADD).

        ``port``: the port number to use when it is free (a recorded move rebuilt as it happened);
        by default the switch's next port number.
        """
        old_switch, old_port = self.host_at[host]
        new_port = port if port is not None and (new_switch, port) not in self.peer \
            and port not in self.switches[new_switch].ports else self.free_port(new_switch)
        deps = (self._last_migration[host],) if host in self._last_migration else ()
        ev = self._input(ts.HostMigration, deps=deps, host=host, old_switch=old_switch, old_port=old_port,
                         new_switch=new_switch, new_port=new_port)
        self._last_migration[host] = ev.id
        self.move_host(host, new_switch, new_port)
        return []

    def inject_ping(self, src: str, dst: str, ident: int, seq: int) -> str:
        """Host ``src`` pings ``dst`` (ARP first if needed); returns the input id."""
        host = self.hosts[src]
        dst_ip = self.topology.host(dst).ip
        frames = host.ping(dst_ip, ident, seq)
        input_id = self.next_input_id()
        echo = icmp_echo(host.mac, self.topology.host(dst).mac, host.ip, dst_ip, ident, seq)
        self.record(ts.TrafficInjection, id=input_id, deps=(), host=src, packet=echo.to_json(), dst=dst)
        self.send_from_host(src, frames)
        return input_id

    def inject_traffic(self, src: str, dst: str, what: str = "icmp") -> str:
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
        return ev.id  # type: ignore[no-any-return]  # an InputEvent id: a str

    def connect_to_service(self, src: str, ip: str, port: int = 80) -> str:
        """Host ``src`` opens a TCP connection to ``ip``, an address no host has (a load balancer's
        virtual IP): a SYN from a fresh source port, after ARP resolves the address. No host is its
        destination, so ``delivery`` does not follow it."""
        host = self.hosts[src]
        self._traffic_seq += 1
        packet = tcp_syn(host.mac, BROADCAST_MAC, host.ip, ip, 20000 + self._traffic_seq % 40000, port)
        frames = host.send_ip(packet)
        ev = self._input(ts.TrafficInjection, host=src, packet=packet.to_json(), dst=None)
        self.send_from_host(src, frames)
        return ev.id  # type: ignore[no-any-return]  # an InputEvent id: a str

    def apply_recorded(self, e: ts.InputEvent) -> list[Effect]:
        """Apply an input event recorded in a trace (replay, minimization, rebuilt state).

        Controller crashes and recoveries change only the World; killing and
        restarting the process is the caller's (it owns the process).
        """
        if isinstance(e, ts.SwitchFailure):
            return self.fail_switch(e.switch)
        if isinstance(e, ts.SwitchRecovery):
            return self.recover_switch(e.switch)
        if isinstance(e, ts.LinkFailure):
            return self.fail_link(e.node1, e.port1, e.one_way)
        if isinstance(e, ts.LinkRecovery):
            return self.recover_link(e.node1, e.port1, e.one_way)
        if isinstance(e, ts.HostMigration):
            return self.migrate_host(e.host, e.new_switch)
        if isinstance(e, ts.ControllerCrash):
            return self.crash_controller(e.controller)
        if isinstance(e, ts.ControllerRecovery):
            return self.recover_controller(e.controller)
        if isinstance(e, ts.ConfigChange):
            return self.change_config(e.controller, e.config, e.edit)
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

    def send_recorded_packet(self, host: str, packet: Packet, dst: str | None) -> str:
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
        return ev.id  # type: ignore[no-any-return]  # an InputEvent id: a str

    # ------------------------------------------------------------ drops and delays
    def drop_next_packet(self, node: str, port: int) -> list[Effect]:
        self._input(ts.DataplaneDrop, node=node, port=port, fp=())
        self.arm_packet_drop(node, port)
        return []

    def delay_next_packet(self, node: str, port: int, seconds: float) -> list[Effect]:
        self._input(ts.DataplaneDelay, node=node, port=port, fp=(), seconds=seconds)
        self.arm_packet_delay(node, port, seconds)
        return []

    def delay_next_message(self, switch: str, controller: str, direction: str,
                           seconds: float) -> list[Effect]:
        if direction not in ("to_switch", "to_controller"):
            raise ValueError(f"direction must be to_switch or to_controller, not {direction!r}")
        self._input(ts.ControlDelay, switch=switch, controller=controller, direction=direction, fp=(),
                    seconds=seconds)
        self.arm_message_delay(self.switches[switch].dpid, controller, direction, seconds)
        return []
