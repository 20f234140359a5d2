"""IPv6 Neighbor Discovery as a host answers it (RFC 4861): solicitation in, advertisement out.

Faucet resolves IPv6 neighbours with Neighbor Solicitations (for the
hosts behind its routed VLANs, and when it probes a host it learned), so a
host of the mock network must answer them as a real IPv6 stack does, the
way it answers ARP for IPv4. Hosts carry no configured IPv6 address; like a
Linux interface they own the link-local address formed from their MAC
(modified EUI-64). Frames are read and built with the OpenFlow 1.3 frame
model (``of13.frame``), which parses ICMPv6 ND with its target and options.
"""

from __future__ import annotations

from netsleuth.model.of13.frame import Frame
from netsleuth.model.of13.headers import ETH_IPV6, ICMPv6, IPv6
from netsleuth.model.packet import Packet

ND_SOLICIT = 135
ND_ADVERT = 136
OPT_SLL = 1
OPT_TLL = 2
ALL_NODES = 0xFF02 << 112 | 1
LINK_LOCAL = 0xFE80 << 112
ND_HOP_LIMIT = 255              # ND messages from off-link (hop limit < 255) are ignored
FLAG_SOLICITED = 0x40000000
FLAG_OVERRIDE = 0x20000000


def link_local(mac: int) -> int:
    """fe80::/64 with the modified EUI-64 interface id of ``mac`` (the universal/local bit flipped)."""
    eui = ((mac >> 24) << 40) | (0xFFFE << 24) | (mac & 0xFFFFFF)
    return LINK_LOCAL | (eui ^ (0x02 << 56))


def solicited_node(addr: int) -> tuple[int, int]:
    """(IPv6 address, MAC) of the solicited-node multicast group of ``addr``."""
    low = addr & 0xFFFFFF
    return (0xFF02 << 112) | (1 << 32) | (0xFF << 24) | low, 0x3333FF000000 | low


def solicitation(src_mac: int, src_ip: int, target: int) -> Packet:
    """A Neighbor Solicitation for ``target`` from ``src_ip``/``src_mac`` (to its solicited-node group)."""
    group, group_mac = solicited_node(target)
    options = () if src_ip == 0 else ((OPT_SLL, src_mac.to_bytes(6, "big")),)
    frame = Frame(src_mac, group_mac, ETH_IPV6, l3=IPv6(src_ip, group, 58, hop_limit=ND_HOP_LIMIT),
                  l4=ICMPv6(ND_SOLICIT, 0, 0, target, options))
    return frame.to_packet()


def answer(mac: int, addresses: tuple[int, ...], packet: Packet) -> tuple[tuple[int, int] | None, Packet | None]:
    """A host's reaction to ``packet`` if it is a Neighbor Solicitation for one of its ``addresses``:
    (the sender's (IPv6, MAC) to remember, or None; the advertisement to send, or None)."""
    if packet.eth_type != ETH_IPV6:
        return None, None
    frame = Frame.from_packet(packet)
    ip6, nd = frame.l3, frame.l4
    if not (isinstance(ip6, IPv6) and isinstance(nd, ICMPv6) and nd.type == ND_SOLICIT and nd.code == 0
            and ip6.hop_limit == ND_HOP_LIMIT and nd.target in addresses):
        return None, None
    _target, sll, _tll = nd.nd_fields()
    if ip6.src == 0:   # duplicate address detection: tell every node, unsolicited
        dst_ip, dst_mac, flags = ALL_NODES, 0x333300000001, FLAG_OVERRIDE
    else:
        dst_ip, dst_mac, flags = ip6.src, sll or frame.eth_src, FLAG_SOLICITED | FLAG_OVERRIDE
    reply = Frame(mac, dst_mac, ETH_IPV6, l3=IPv6(nd.target, dst_ip, 58, hop_limit=ND_HOP_LIMIT),
                  l4=ICMPv6(ND_ADVERT, 0, flags, nd.target, ((OPT_TLL, mac.to_bytes(6, "big")),)))
    learned = (ip6.src, sll or frame.eth_src) if ip6.src else None
    return learned, reply.to_packet()
