"""Hosts answer IPv6 Neighbor Discovery as a real stack does, checked with os-ken's own packet library."""

from __future__ import annotations

import ipaddress

from os_ken.lib.packet import ethernet, icmpv6, ipv6
from os_ken.lib.packet import packet as osken_packet

from netsleuth.model.host import Host
from netsleuth.model.host_nd import link_local, solicitation
from netsleuth.model.packet import Packet

H1_MAC, H2_MAC = 0x000000000001, 0x000000000002
ROUTER_MAC = "0e:00:00:00:00:01"
ROUTER_IP = "fe80::c00:ff:fe00:1"


def ns_from_osken(target: str, src: str = ROUTER_IP, hop_limit: int = 255, sll: str | None = ROUTER_MAC) -> Packet:
    """A Neighbor Solicitation built by os-ken (as Faucet builds them), to the target's solicited-node group."""
    low = int(ipaddress.IPv6Address(target)) & 0xFFFFFF
    group = str(ipaddress.IPv6Address((0xFF02 << 112) | (1 << 32) | (0xFF << 24) | low))
    group_mac = ":".join(f"{b:02x}" for b in (0x3333FF000000 | low).to_bytes(6, "big"))
    option = icmpv6.nd_option_sla(hw_src=sll) if sll else None
    p = osken_packet.Packet()
    p.add_protocol(ethernet.ethernet(dst=group_mac, src=ROUTER_MAC, ethertype=0x86DD))
    p.add_protocol(ipv6.ipv6(src=src, dst=group, nxt=58, hop_limit=hop_limit))
    p.add_protocol(icmpv6.icmpv6(type_=icmpv6.ND_NEIGHBOR_SOLICIT,
                                 data=icmpv6.nd_neighbor(dst=target, option=option)))
    p.serialize()
    return Packet.from_bytes(bytes(p.data))


def parsed(reply: Packet) -> tuple[ethernet.ethernet, ipv6.ipv6, icmpv6.icmpv6]:
    pkt = osken_packet.Packet(reply.to_bytes())
    return pkt.get_protocol(ethernet.ethernet), pkt.get_protocol(ipv6.ipv6), pkt.get_protocol(icmpv6.icmpv6)


def icmpv6_checksum_ok(data: bytes) -> bool:
    ip = data[14:54]
    body = data[54:]
    pseudo = ip[8:40] + len(body).to_bytes(4, "big") + b"\x00\x00\x00" + bytes([58])
    blob = pseudo + body + (b"\x00" if len(body) % 2 else b"")
    total = sum(int.from_bytes(blob[i:i + 2], "big") for i in range(0, len(blob), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total == 0xFFFF


def test_link_local_address_is_modified_eui64() -> None:
    assert str(ipaddress.IPv6Address(link_local(0x0A1B2C3D4E5F))) == "fe80::81b:2cff:fe3d:4e5f"
    assert str(ipaddress.IPv6Address(link_local(H2_MAC))) == "fe80::200:ff:fe00:2"


def test_solicitation_for_the_host_gets_a_solicited_advertisement() -> None:
    h2 = Host("h2", H2_MAC, 0x0A000002)
    mine = str(ipaddress.IPv6Address(h2.ipv6[0]))
    replies = h2.receive(ns_from_osken(mine))
    assert len(replies) == 1
    eth, ip6, icmp = parsed(replies[0])
    assert (eth.src, eth.dst, eth.ethertype) == ("00:00:00:00:00:02", ROUTER_MAC, 0x86DD)
    assert (ip6.src, ip6.dst, ip6.hop_limit, ip6.nxt) == (mine, ROUTER_IP, 255, 58)
    assert icmp.type_ == icmpv6.ND_NEIGHBOR_ADVERT and icmp.code == 0
    assert icmp.data.dst == mine and icmp.data.res == 0b011   # solicited, override; not a router
    assert icmp.data.option.hw_src == "00:00:00:00:00:02"     # target link-layer address
    assert icmpv6_checksum_ok(replies[0].to_bytes())
    assert h2.nd_cache == {int(ipaddress.IPv6Address(ROUTER_IP)): 0x0E0000000001}


def test_solicitations_for_others_or_from_off_link_are_ignored() -> None:
    h2 = Host("h2", H2_MAC, 0x0A000002)
    assert h2.receive(ns_from_osken(str(ipaddress.IPv6Address(link_local(H1_MAC))))) == []
    assert h2.receive(ns_from_osken(str(ipaddress.IPv6Address(h2.ipv6[0])), hop_limit=64)) == []
    assert h2.nd_cache == {}


def test_duplicate_address_detection_is_answered_to_all_nodes() -> None:
    h2 = Host("h2", H2_MAC, 0x0A000002)
    mine = str(ipaddress.IPv6Address(h2.ipv6[0]))
    (reply,) = h2.receive(ns_from_osken(mine, src="::", sll=None))
    eth, ip6, icmp = parsed(reply)
    assert (eth.dst, ip6.dst) == ("33:33:00:00:00:01", "ff02::1")
    assert icmp.data.res == 0b001   # override only: nobody solicited it


def test_our_own_solicitation_reaches_a_host_and_round_trips() -> None:
    h1, h2 = Host("h1", H1_MAC, 0x0A000001), Host("h2", H2_MAC, 0x0A000002)
    ns = solicitation(h1.mac, h1.ipv6[0], h2.ipv6[0])
    _eth, ip6, icmp = parsed(ns)
    assert icmp.type_ == icmpv6.ND_NEIGHBOR_SOLICIT and ip6.dst == "ff02::1:ff00:2"
    (reply,) = h2.receive(ns)
    assert parsed(reply)[1].dst == str(ipaddress.IPv6Address(h1.ipv6[0]))
    assert h1.receive(reply) == []   # an advertisement needs no answer
