"""Frames on links and to and from hosts: the data plane of the Network.

A frame a switch outputs or a host sends goes on the wire of the link at
that port (an ``OnWire`` event in the channels), and when that event fires
it arrives at a switch (which forwards it, and may loop it) or at a host
(which may answer). Links fail in one or both directions, packets may be
armed to be lost, and what a host sent to another host is followed until
it arrives, so the checks can say which packets never did.

:class:`Delivery` is the part of :class:`~netsleuth.world.network.Network`
that does this: the Network inherits it and gives it what it shares with
the control plane (the switches, the channels, the clock, the recorder).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from netsleuth.model import switch as sw
from netsleuth.model.host import Host
from netsleuth.model.packet import Packet
from netsleuth.model.topology import Topology
from netsleuth.trace import schema as ts
from netsleuth.trace.fingerprint import packet_fingerprint
from netsleuth.world.clock import Clock
from netsleuth.world.events import Lineage, OnWire, PendingEvent
from netsleuth.world.fates import FateLog
from netsleuth.world.records import Recorder, Stats


class Delivery:
    """The wiring of the topology and the frames on it; the rest of the Network is in network.py."""

    # what the Network holds and this part uses
    switches: dict[str, sw.Switch]
    switch_up: dict[str, bool]
    clock: Clock
    record: Recorder
    record_packets: bool
    stats: Stats
    fates: FateLog | None
    observing: bool
    observed_violations: list[Any]
    epoch: int

    def _wire(self, topology: Topology) -> None:
        """The hosts, the links between ports and the state of the frames on them."""
        self.hosts: dict[str, Host] = {h.name: Host(h.name, h.mac, h.ip) for h in topology.hosts}
        self.host_by_ip: dict[int, str] = {h.ip: h.name for h in topology.hosts}
        self.host_by_mac: dict[int, str] = {h.mac: h.name for h in topology.hosts}
        self.peer: dict[tuple[str, int], tuple[str, int]] = {}
        self.link_up: dict[tuple[str, int, str, int], bool] = {}
        # sending ends (node, port) of links cut in that direction only (STS's one-way link failures)
        self.cut_from: set[tuple[str, int]] = set()
        for link in topology.links:
            self.peer[(link.node1, link.port1)] = (link.node2, link.port2)
            self.peer[(link.node2, link.port2)] = (link.node1, link.port1)
            self.link_up[(link.node1, link.port1, link.node2, link.port2)] = True
        self.host_iface: dict[str, int] = {}
        for (node, port) in self.peer:
            if node in self.hosts:
                self.host_iface[node] = port
        self.host_at: dict[str, tuple[str, int]] = {h.name: topology.host_location(h.name) for h in topology.hosts}
        self._next_pid = 0
        self._loop_seen: set[tuple[int, str, int]] = set()
        self.drop_next: dict[tuple[str, int], int] = {}      # (node, port) -> packets to lose
        self._in_flight: dict[int, tuple[str, str, str, float, int]] = {}  # pid -> (src, dst, what, t, epoch)

    # ------------------------------------------------------------ what the Network provides
    def _enqueue(self, make: Callable[[int], PendingEvent]) -> PendingEvent:
        raise NotImplementedError  # the Network's channels

    def _apply_outputs(self, switch: sw.Switch, outputs: Iterable[Any], conn: int | None) -> None:
        raise NotImplementedError  # frames back here, messages to the controllers

    # ------------------------------------------------------------ data plane
    def _emit(self, node: str, port: int, packet: Packet, lineage: Lineage | None) -> None:
        peer = self.peer.get((node, port))
        if peer is None or not self.link_is_up(node, port) or (node, port) in self.cut_from:
            self.stats.dropped_packets += 1
            if self.fates is not None and lineage is not None:
                self.fates.lost(node, port, lineage.pid, self.clock.now())
            return
        if lineage is None:
            lineage = self._new_lineage()
        self._enqueue(lambda i: OnWire(i, node, port, peer[0], peer[1], packet, lineage))

    def _new_lineage(self) -> Lineage:
        self._next_pid += 1
        return Lineage(self._next_pid)

    def link_key(self, node: str, port: int) -> tuple[str, int, str, int]:
        """The key of the link at (node, port) in ``link_up``, whichever end was named."""
        peer = self.peer[(node, port)]
        key = (node, port, peer[0], peer[1])
        return key if key in self.link_up else (peer[0], peer[1], node, port)

    def link_is_up(self, node: str, port: int) -> bool:
        """Up means: not failed, and neither end is a failed switch."""
        if (node, port) not in self.peer:
            return False
        n1, _, n2, _ = key = self.link_key(node, port)
        return self.link_up[key] and self.switch_up.get(n1, True) and self.switch_up.get(n2, True)

    def _fire_wire(self, ev: OnWire) -> None:
        self.stats.packets += 1
        if (self.peer.get((ev.src, ev.src_port)) != (ev.node, ev.port) or not self.link_is_up(ev.src, ev.src_port)
                or (ev.src, ev.src_port) in self.cut_from):
            self.stats.dropped_packets += 1  # the link failed or was rewired while the packet was on it
            return
        if self.drop_next.get((ev.node, ev.port)):
            self.drop_next[(ev.node, ev.port)] -= 1
            self.stats.dropped_packets += 1
            return
        if self.record_packets and self.record.sink is not None:
            pj = ev.packet.to_json()
            self.record(ts.PacketArrival, node=ev.node, port=ev.port, pid=ev.lineage.pid, packet=pj,
                        fp=packet_fingerprint(ev.packet))
        now = self.clock.now()
        switch = self.switches.get(ev.node)
        if switch is not None:
            here = (ev.node, ev.port)
            if here in ev.lineage.hops:
                self._report_loop(ev)
                return
            tag = Lineage(ev.lineage.pid, ev.lineage.hops + (here,))
            outs = switch.receive_packet(ev.port, ev.packet, now, tag)
            if self.fates is not None:
                self.fates.at_switch(switch, ev.port, ev.packet, ev.lineage.pid, outs, now)
            self._apply_outputs(switch, outs, None)
            return
        host = self.hosts[ev.node]
        if self.fates is not None:
            self.fates.delivered(host.name, ev.lineage.pid, now)
        sent = self._in_flight.get(ev.lineage.pid)
        if sent is not None and sent[1] == ev.node:
            del self._in_flight[ev.lineage.pid]
        replies = host.receive(ev.packet)
        if replies:
            self.send_from_host(host.name, replies)

    def _report_loop(self, ev: OnWire) -> None:
        self.stats.loop_drops += 1
        if not self.observing:
            return
        key = (ev.lineage.pid, ev.node, ev.port)
        if key in self._loop_seen:
            return
        self._loop_seen.add(key)
        path = [f"{n}:{p}" for n, p in ev.lineage.hops] + [f"{ev.node}:{ev.port}"]
        switches = tuple(dict.fromkeys(n for n, _ in ev.lineage.hops + ((ev.node, ev.port),)))
        v = self.record(ts.Violation, invariant="dataplane-loops",
                        message=f"{ev.packet.summary()} revisited {ev.node} port {ev.port}",
                        persistent=True, hosts=(), switches=switches,
                        details={"pid": ev.lineage.pid, "path": path})
        self.observed_violations.append(v)

    # ------------------------------------------------------------ hosts
    def send_from_host(self, host: str, frames: Iterable[Packet]) -> None:
        _, port = self.host_port(host)
        for frame in frames:
            lineage = self._new_lineage()
            dst = self.addressee(frame)
            if dst is not None and dst != host and self.expects_delivery(host, dst):
                self._in_flight[lineage.pid] = (host, dst, frame.summary(), self.clock.now(), self.epoch)
            if self.fates is not None:
                self.fates.sent(host, lineage.pid, frame, self.clock.now())
            self._emit(host, port, frame, lineage)

    def addressee(self, frame: Packet) -> str | None:
        """The host a frame is meant for: an IPv4 packet's destination, the host an ARP asks for or
        answers, else the host whose MAC it is sent to (broadcasts of other kinds are for nobody)."""
        l3 = frame.l3
        if frame.eth_type == 0x0800:
            return self.host_by_ip.get(getattr(l3, "dst", -1))
        if frame.eth_type == 0x0806:
            return self.host_by_ip.get(getattr(l3, "tpa", -1))
        return self.host_by_mac.get(frame.eth_dst)

    def expects_delivery(self, src: str, dst: str) -> bool:
        """Whether a packet ``src`` sends to ``dst`` now must arrive (the World knows of exceptions)."""
        return True

    def undelivered(self, grace: float = 1.0) -> tuple[tuple[int, str, str, str, float], ...]:
        """Packets hosts sent to other hosts that have not arrived after ``grace`` seconds.

        A packet sent before the last topology-changing input (a failure, a move,
        a drop, ...) may legitimately be lost; those are forgotten.
        """
        now = self.clock.now()
        out = []
        for pid, (src, dst, summary, t, epoch) in list(self._in_flight.items()):
            if epoch != self.epoch:
                del self._in_flight[pid]
            elif now - t >= grace:
                out.append((pid, src, dst, summary, round(now - t, 3)))
        return tuple(out)

    def host_port(self, host: str) -> tuple[str, int]:
        """(host, its port) of the host's single interface."""
        return host, self.host_iface[host]

    def set_link(self, node1: str, port1: int, up: bool) -> None:
        """Bring the link at (node1, port1) up or down; PORT_STATUS from both ends."""
        key = self.link_key(node1, port1)
        if self.link_up[key] == up:
            return
        self.link_up[key] = up
        self._sync_ports(key)

    def set_link_direction(self, node1: str, port1: int, up: bool) -> None:
        """Cut (or restore) only the direction out of (node1, port1); only node1's port changes state."""
        if ((node1, port1) not in self.cut_from) == up:
            return
        if up:
            self.cut_from.discard((node1, port1))
        else:
            self.cut_from.add((node1, port1))
        self._sync_ports(self.link_key(node1, port1))

    def _sync_ports(self, key: tuple[str, int, str, int]) -> None:
        """Make the switches' port state match the link's effective state (PORT_STATUS on change)."""
        up = self.link_is_up(key[0], key[1])
        for node, port in ((key[0], key[1]), (key[2], key[3])):
            s = self.switches.get(node)
            if s is not None and self.switch_up[node] and port in s.ports:
                self._apply_outputs(s, s.set_link(port, up and (node, port) not in self.cut_from), None)


__all__ = ["Delivery"]
