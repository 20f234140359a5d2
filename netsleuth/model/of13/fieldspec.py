"""The OXM basic fields of OpenFlow 1.3.5: width, maskability, prerequisites, settability.

One table drives validation, matching, set_field and rendering, so the
spec's rules live in one place.  Values are ints everywhere in the model
(MACs 48 bits, IPv6 addresses 128 bits); ``vlan_vid`` carries the
OFPVID_PRESENT bit (0x1000) as on the wire, so "untagged" is the exact value
0 (OFPVID_NONE) and "any tagged" is 0x1000/0x1000.

Prerequisites are conjunctions of "field F is matched exactly with one of
these values" (spec table 12).  vlan_pcp's prerequisite, VLAN_VID != NONE,
is met when the match requires the present bit (``0x1000/0x1000`` or an
exact tagged vid), which is how Open vSwitch reads it too.
"""

from __future__ import annotations

from dataclasses import dataclass

from os_ken.ofproto import ofproto_v1_3 as ofp

ETH_IP_TYPES = (0x0800, 0x86DD)
VID_PRESENT = ofp.OFPVID_PRESENT


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One OXM basic field."""

    name: str
    code: int            # OFPXMT_OFB_*
    bits: int            # width of the value
    maskable: bool
    prereqs: tuple[tuple[str, tuple[int, ...]], ...] = ()
    settable: bool = True
    kind: str = "int"    # rendering: int, mac, ipv4, ipv6, hex

    @property
    def full(self) -> int:
        return (1 << self.bits) - 1


def _ip(*protos: int) -> tuple[tuple[str, tuple[int, ...]], ...]:
    return (("eth_type", ETH_IP_TYPES), ("ip_proto", protos))


_V4 = (("eth_type", (0x0800,)),)
_V6 = (("eth_type", (0x86DD,)),)
_ARP = (("eth_type", (0x0806,)),)
_MPLS = (("eth_type", (0x8847, 0x8848)),)

SPECS: tuple[FieldSpec, ...] = (
    FieldSpec("in_port", ofp.OFPXMT_OFB_IN_PORT, 32, False, settable=False),
    FieldSpec("in_phy_port", ofp.OFPXMT_OFB_IN_PHY_PORT, 32, False, (("in_port", ()),), settable=False),
    FieldSpec("metadata", ofp.OFPXMT_OFB_METADATA, 64, True, settable=False, kind="hex"),
    FieldSpec("eth_dst", ofp.OFPXMT_OFB_ETH_DST, 48, True, kind="mac"),
    FieldSpec("eth_src", ofp.OFPXMT_OFB_ETH_SRC, 48, True, kind="mac"),
    FieldSpec("eth_type", ofp.OFPXMT_OFB_ETH_TYPE, 16, False, settable=False, kind="hex"),
    FieldSpec("vlan_vid", ofp.OFPXMT_OFB_VLAN_VID, 13, True),
    FieldSpec("vlan_pcp", ofp.OFPXMT_OFB_VLAN_PCP, 3, False, (("vlan_vid", (VID_PRESENT,)),)),
    FieldSpec("ip_dscp", ofp.OFPXMT_OFB_IP_DSCP, 6, False, (("eth_type", ETH_IP_TYPES),)),
    FieldSpec("ip_ecn", ofp.OFPXMT_OFB_IP_ECN, 2, False, (("eth_type", ETH_IP_TYPES),)),
    FieldSpec("ip_proto", ofp.OFPXMT_OFB_IP_PROTO, 8, False, (("eth_type", ETH_IP_TYPES),), settable=False),
    FieldSpec("ipv4_src", ofp.OFPXMT_OFB_IPV4_SRC, 32, True, _V4, kind="ipv4"),
    FieldSpec("ipv4_dst", ofp.OFPXMT_OFB_IPV4_DST, 32, True, _V4, kind="ipv4"),
    FieldSpec("tcp_src", ofp.OFPXMT_OFB_TCP_SRC, 16, False, _ip(6)),
    FieldSpec("tcp_dst", ofp.OFPXMT_OFB_TCP_DST, 16, False, _ip(6)),
    FieldSpec("udp_src", ofp.OFPXMT_OFB_UDP_SRC, 16, False, _ip(17)),
    FieldSpec("udp_dst", ofp.OFPXMT_OFB_UDP_DST, 16, False, _ip(17)),
    FieldSpec("sctp_src", ofp.OFPXMT_OFB_SCTP_SRC, 16, False, _ip(132)),
    FieldSpec("sctp_dst", ofp.OFPXMT_OFB_SCTP_DST, 16, False, _ip(132)),
    FieldSpec("icmpv4_type", ofp.OFPXMT_OFB_ICMPV4_TYPE, 8, False, (("eth_type", (0x0800,)), ("ip_proto", (1,)))),
    FieldSpec("icmpv4_code", ofp.OFPXMT_OFB_ICMPV4_CODE, 8, False, (("eth_type", (0x0800,)), ("ip_proto", (1,)))),
    FieldSpec("arp_op", ofp.OFPXMT_OFB_ARP_OP, 16, False, _ARP),
    FieldSpec("arp_spa", ofp.OFPXMT_OFB_ARP_SPA, 32, True, _ARP, kind="ipv4"),
    FieldSpec("arp_tpa", ofp.OFPXMT_OFB_ARP_TPA, 32, True, _ARP, kind="ipv4"),
    FieldSpec("arp_sha", ofp.OFPXMT_OFB_ARP_SHA, 48, True, _ARP, kind="mac"),
    FieldSpec("arp_tha", ofp.OFPXMT_OFB_ARP_THA, 48, True, _ARP, kind="mac"),
    FieldSpec("ipv6_src", ofp.OFPXMT_OFB_IPV6_SRC, 128, True, _V6, kind="ipv6"),
    FieldSpec("ipv6_dst", ofp.OFPXMT_OFB_IPV6_DST, 128, True, _V6, kind="ipv6"),
    FieldSpec("ipv6_flabel", ofp.OFPXMT_OFB_IPV6_FLABEL, 20, True, _V6, kind="hex"),
    FieldSpec("icmpv6_type", ofp.OFPXMT_OFB_ICMPV6_TYPE, 8, False, (("eth_type", (0x86DD,)), ("ip_proto", (58,)))),
    FieldSpec("icmpv6_code", ofp.OFPXMT_OFB_ICMPV6_CODE, 8, False, (("eth_type", (0x86DD,)), ("ip_proto", (58,)))),
    FieldSpec("ipv6_nd_target", ofp.OFPXMT_OFB_IPV6_ND_TARGET, 128, False,
              (("eth_type", (0x86DD,)), ("ip_proto", (58,)), ("icmpv6_type", (135, 136))), kind="ipv6"),
    FieldSpec("ipv6_nd_sll", ofp.OFPXMT_OFB_IPV6_ND_SLL, 48, False,
              (("eth_type", (0x86DD,)), ("ip_proto", (58,)), ("icmpv6_type", (135,))), kind="mac"),
    FieldSpec("ipv6_nd_tll", ofp.OFPXMT_OFB_IPV6_ND_TLL, 48, False,
              (("eth_type", (0x86DD,)), ("ip_proto", (58,)), ("icmpv6_type", (136,))), kind="mac"),
    FieldSpec("mpls_label", ofp.OFPXMT_OFB_MPLS_LABEL, 20, False, _MPLS),
    FieldSpec("mpls_tc", ofp.OFPXMT_OFB_MPLS_TC, 3, False, _MPLS),
    FieldSpec("mpls_bos", ofp.OFPXMT_OFB_MPLS_BOS, 1, False, _MPLS, settable=False),
    FieldSpec("pbb_isid", ofp.OFPXMT_OFB_PBB_ISID, 24, True, (("eth_type", (0x88E7,)),)),
    FieldSpec("tunnel_id", ofp.OFPXMT_OFB_TUNNEL_ID, 64, True, kind="hex"),
    FieldSpec("ipv6_exthdr", ofp.OFPXMT_OFB_IPV6_EXTHDR, 9, True, _V6, settable=False, kind="hex"),
)
"""Every OXM basic field of OpenFlow 1.3.5, in OXM field-number order.

``settable`` follows spec section 7.2.5: set_field may not rewrite in_port,
in_phy_port, metadata (write_metadata does), eth_type, ip_proto (both would
change what the packet is), mpls_bos or ipv6_exthdr (structure, not value).
"""

BY_NAME: dict[str, FieldSpec] = {s.name: s for s in SPECS}
BY_CODE: dict[int, FieldSpec] = {s.code: s for s in SPECS}

OVS_NAMES: dict[str, str] = {
    "ipv4_src": "ip_src", "ipv4_dst": "ip_dst", "icmpv4_type": "icmp_type", "icmpv4_code": "icmp_code",
    "ipv6_flabel": "ipv6_label", "ipv6_nd_target": "nd_target", "ipv6_nd_sll": "nd_sll", "ipv6_nd_tll": "nd_tll",
    "tunnel_id": "tun_id",
}
"""ovs-ofctl's spelling where it differs from the OXM name (ovs-fields(7)); it rejects the OXM one."""


def ovs_name(name: str) -> str:
    return OVS_NAMES.get(name, name)
