"""End hosts that behave like the hosts of a Mininet network.

A controller under test learns locations from ARP and IP traffic, so hosts
must answer ARP requests, IPv6 Neighbor Solicitations (``host_nd``) and ICMP
echo requests the way a real stack does, and resolve a neighbour before they
send IP to it. Like the switch, a host is sans-I/O: packets in, packets out;
the caller decides when they travel.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from netsleuth.model.addr import BROADCAST_MAC
from netsleuth.model.host_nd import answer as nd_answer
from netsleuth.model.host_nd import link_local
from netsleuth.model.packet import ICMP, Arp, IPv4, Packet, arp_reply, arp_request, icmp_echo

ETH_ARP = 0x0806
ETH_IPV4 = 0x0800
ETH_IPV6 = 0x86DD
ARP_REQUEST = 1
ARP_REPLY = 2
ICMP_ECHO_REPLY = 0
ICMP_ECHO_REQUEST = 8


@dataclass(slots=True)
class Host:
    """A host with one interface, an ARP cache and a record of echo replies."""

    name: str
    mac: int
    ip: int
    arp_cache: dict[int, int] = field(default_factory=dict)
    # IP packets waiting for ARP resolution, by next-hop IP, in send order.
    pending: dict[int, list[Packet]] = field(default_factory=dict)
    echo_replies: set[tuple[int, int, int]] = field(default_factory=set)  # (from ip, ident, seq)
    received: int = 0
    nd_cache: dict[int, int] = field(default_factory=dict)   # IPv6 neighbours learned from solicitations

    @property
    def ipv6(self) -> tuple[int, ...]:
        """The IPv6 addresses this host answers Neighbor Discovery for: its link-local one."""
        return (link_local(self.mac),)

    def copy(self) -> Host:
        """An independent host (cache, pending packets and replies copied), for state snapshots."""
        return Host(self.name, self.mac, self.ip, dict(self.arp_cache),
                    {k: list(v) for k, v in self.pending.items()}, set(self.echo_replies), self.received,
                    dict(self.nd_cache))

    def receive(self, packet: Packet) -> list[Packet]:
        """Handle a frame from the wire; return the frames this host sends in reply."""
        if packet.eth_dst not in (self.mac, BROADCAST_MAC) and not packet.eth_dst & (1 << 40):
            return []  # not for us (NICs filter unicast to other MACs)
        self.received += 1
        l3 = packet.l3
        if isinstance(l3, Arp):
            return self._on_arp(l3)
        if packet.eth_type == ETH_IPV6:
            learned, reply = nd_answer(self.mac, self.ipv6, packet)
            if learned is not None:
                self.nd_cache[learned[0]] = learned[1]
            return [reply] if reply is not None else []
        if isinstance(l3, IPv4) and l3.dst == self.ip and isinstance(packet.l4, ICMP):
            icmp = packet.l4
            self.arp_cache.setdefault(l3.src, packet.eth_src)
            if icmp.type == ICMP_ECHO_REQUEST:
                return [icmp_echo(self.mac, packet.eth_src, self.ip, l3.src, icmp.ident, icmp.seq,
                                  reply=True, payload=packet.payload)]
            if icmp.type == ICMP_ECHO_REPLY:
                self.echo_replies.add((l3.src, icmp.ident, icmp.seq))
        return []

    def _on_arp(self, arp: Arp) -> list[Packet]:
        out: list[Packet] = []
        if arp.tpa != self.ip:
            return out
        self.arp_cache[arp.spa] = arp.sha
        if arp.op == ARP_REQUEST:
            out.append(arp_reply(self.mac, self.ip, arp.sha, arp.spa))
        for queued in self.pending.pop(arp.spa, []):
            out.append(_set_dst(queued, arp.sha))
        return out

    def send_ip(self, packet: Packet) -> list[Packet]:
        """Send an IPv4 packet, resolving the destination MAC with ARP first if needed."""
        assert isinstance(packet.l3, IPv4)
        dst_ip = packet.l3.dst
        mac = self.arp_cache.get(dst_ip)
        if mac is not None:
            return [_set_dst(packet, mac)]
        # Every send to an unresolved neighbour (re)sends the ARP request: the
        # host has no timers, and a request lost in the network must not
        # leave the neighbour unreachable forever (Linux retries too).
        self.pending.setdefault(dst_ip, []).append(packet)
        return [arp_request(self.mac, self.ip, dst_ip)]

    def ping(self, dst_ip: int, ident: int, seq: int) -> list[Packet]:
        """Start one ICMP echo to ``dst_ip``; the frames to put on the wire now."""
        return self.send_ip(icmp_echo(self.mac, BROADCAST_MAC, self.ip, dst_ip, ident, seq))

    def got_reply(self, dst_ip: int, ident: int, seq: int) -> bool:
        return (dst_ip, ident, seq) in self.echo_replies


def _set_dst(packet: Packet, mac: int) -> Packet:
    return packet.set_dl_dst(mac)
