"""The OXM field values of a frame: what an OpenFlow 1.3 match is compared with.

A field the frame does not have is absent from the dict; the match side
reads an absent field as 0, which is the spec's value where one is defined
(``vlan_vid`` of an untagged frame is OFPVID_NONE = 0) and harmless
elsewhere because every match on such a field also carries its
prerequisites, which the frame then fails.  Where the spec leaves room,
Open vSwitch's choices are taken: ARP fields only for Ethernet/IPv4 ARP,
no L3/L4 fields of a truncated IPv4 datagram, no ports in a non-first
fragment, the outermost VLAN tag and the top MPLS label.
"""

from __future__ import annotations

from netsleuth.model.of13.frame import Frame
from netsleuth.model.of13.headers import ETH_PBB, SCTP, ICMPv6, IPv6
from netsleuth.model.packet import ICMP, RAW, TCP, UDP, Arp, IPv4

VID_PRESENT = 0x1000


def oxm_fields(frame: Frame, in_port: int, metadata: int = 0, tunnel_id: int = 0) -> dict[str, int]:
    """{OXM field name: value} of ``frame`` arriving on ``in_port`` with the pipeline's metadata."""
    f: dict[str, int] = {"in_port": in_port, "in_phy_port": in_port, "metadata": metadata,
                         "tunnel_id": tunnel_id}
    if frame.eth_type == RAW:
        return f
    f["eth_dst"] = frame.eth_dst
    f["eth_src"] = frame.eth_src
    f["eth_type"] = frame.eth_type
    if frame.tags:
        outer = frame.tags[0]
        f["vlan_vid"] = VID_PRESENT | outer.vid
        f["vlan_pcp"] = outer.pcp
    else:
        f["vlan_vid"] = 0
    if frame.mpls:
        top = frame.mpls[0]
        f["mpls_label"], f["mpls_tc"], f["mpls_bos"] = top.label, top.tc, top.bos
        return f
    if frame.eth_type == ETH_PBB and len(frame.payload) >= 4:
        f["pbb_isid"] = int.from_bytes(frame.payload[1:4], "big")
    l3, l4 = frame.l3, frame.l4
    if type(l3) is IPv4:
        if l3.total_length is not None and l3.total_length > len(frame.l3_bytes()):
            return f
        f["ip_dscp"], f["ip_ecn"], f["ip_proto"] = l3.tos >> 2, l3.tos & 3, l3.proto
        f["ipv4_src"], f["ipv4_dst"] = l3.src, l3.dst
    elif type(l3) is IPv6:
        f["ip_dscp"], f["ip_ecn"], f["ip_proto"] = l3.tc >> 2, l3.tc & 3, l3.proto
        f["ipv6_src"], f["ipv6_dst"], f["ipv6_flabel"] = l3.src, l3.dst, l3.flabel
        f["ipv6_exthdr"] = l3.exthdr_bits
    elif type(l3) is Arp:
        if l3.is_ethernet_ipv4():
            f["arp_op"], f["arp_spa"], f["arp_tpa"] = l3.op, l3.spa, l3.tpa
            f["arp_sha"], f["arp_tha"] = l3.sha, l3.tha
        return f
    else:
        return f
    if l4 is None:
        return f
    kind = type(l4)
    if kind is TCP:
        assert isinstance(l4, TCP)
        f["tcp_src"], f["tcp_dst"] = l4.src_port, l4.dst_port
    elif kind is UDP:
        assert isinstance(l4, UDP)
        f["udp_src"], f["udp_dst"] = l4.src_port, l4.dst_port
    elif kind is SCTP:
        assert isinstance(l4, SCTP)
        f["sctp_src"], f["sctp_dst"] = l4.src_port, l4.dst_port
    elif kind is ICMP:
        assert isinstance(l4, ICMP)
        f["icmpv4_type"], f["icmpv4_code"] = l4.type, l4.code
    elif kind is ICMPv6:
        assert isinstance(l4, ICMPv6)
        f["icmpv6_type"], f["icmpv6_code"] = l4.type, l4.code
        if l4.target is not None:
            f["ipv6_nd_target"], f["ipv6_nd_sll"], f["ipv6_nd_tll"] = l4.nd_fields()
    return f
