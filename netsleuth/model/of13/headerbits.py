"""The OpenFlow 1.3 header a host can send, packed into one int (header-space analysis).

The 1.0 layout (``headerbits``) packs the 12-tuple into 248 bits and stays
as it is: the 1.0 engine's speed depends on those small ints.  OpenFlow 1.3
matches many more fields (IPv6, ARP, SCTP, ICMPv6, PBB, two VLAN tags), so
networks with 1.3 switches use this second, wider layout and only they pay
for it.

A packed header holds one slot per OXM header field, with the value
``fields.oxm_fields`` gives the frame (0 where the frame lacks the header,
as a 1.3 match reads it), plus the inner VLAN tag (``vlan1_vid`` with
OFPVID_PRESENT, ``vlan1_pcp``): a pop_vlan can bring it to the top.  Frames
with more than two tags, MPLS labels or a non-parsing L3 header are not in
the space (hosts send none; MPLS labels only appear inside the network by
push_mpls, and the engine tracks those symbolically).  Pipeline state
(in_port, metadata, tunnel_id) is not header: the engine knows it per hop.
"""

from __future__ import annotations

from netsleuth.model.of13.fields import oxm_fields
from netsleuth.model.of13.fieldspec import BY_NAME, VID_PRESENT
from netsleuth.model.of13.frame import Frame
from netsleuth.model.of13.headers import MPLS_TYPES

# Header fields, packed from the last (eth_dst at bit 0) to the first (tcp_dst at the top); widths
# from the OXM table.  The fields controllers match most (Ethernet addresses and type, VLAN tags) sit
# at the low end, so the wildcards, header sets and table keys of a network that matches only them
# are ints of about 150 bits instead of the whole header's 1,061 (every operation on an int costs
# per 30 bits of it).
# SHIFT13 keeps this tuple's order (what reads fields "in the layout's order" sees).
FIELDS13: tuple[str, ...] = (
    "tcp_dst", "tcp_src", "udp_dst", "udp_src", "sctp_dst", "sctp_src", "icmpv4_type", "icmpv4_code",
    "icmpv6_type", "icmpv6_code", "ip_proto", "ip_ecn", "ip_dscp", "ipv4_dst", "ipv4_src",
    "arp_op", "arp_spa", "arp_tpa", "arp_sha", "arp_tha",
    "ipv6_flabel", "ipv6_exthdr", "ipv6_src", "ipv6_dst", "ipv6_nd_target", "ipv6_nd_sll", "ipv6_nd_tll",
    "pbb_isid", "vlan1_pcp", "vlan1_vid", "vlan_pcp", "vlan_vid", "eth_type", "eth_src", "eth_dst",
)
BITS13: dict[str, int] = {n: BY_NAME[n].bits for n in FIELDS13 if n in BY_NAME}
BITS13["vlan1_vid"] = BITS13["vlan_vid"]
BITS13["vlan1_pcp"] = BITS13["vlan_pcp"]
_offsets: dict[str, int] = {}
_off = 0
for _n in reversed(FIELDS13):
    _offsets[_n] = _off
    _off += BITS13[_n]
SHIFT13: dict[str, int] = {n: _offsets[n] for n in FIELDS13}
WIDTH13 = _off
FULL13: dict[str, int] = {n: (1 << BITS13[n]) - 1 for n in FIELDS13}
FIELD_MASK13: dict[str, int] = {n: FULL13[n] << SHIFT13[n] for n in FIELDS13}
ALL_BITS13 = (1 << WIDTH13) - 1


def pack13(frame: Frame) -> int:
    """The packed header of a frame a host sends (see the module docstring for what fits)."""
    if frame.mpls or frame.eth_type in MPLS_TYPES or len(frame.tags) > 2 or frame.eth_type < 0:
        raise ValueError("frames with MPLS labels, more than two VLAN tags or no Ethernet header "
                         "are outside the 1.3 header space")
    f = oxm_fields(frame, 0)
    h = 0
    for n in FIELDS13:
        v = f.get(n, 0)
        if v:
            h |= v << SHIFT13[n]
    if len(frame.tags) > 1:
        inner = frame.tags[1]
        h |= (VID_PRESENT | inner.vid) << SHIFT13["vlan1_vid"] | inner.pcp << SHIFT13["vlan1_pcp"]
    return h


def field13(h: int, name: str) -> int:
    """One field's value in a packed header."""
    return (h >> SHIFT13[name]) & FULL13[name]


def wc13(**fields: int | tuple[int, int]) -> tuple[int, int]:
    """A wildcard fixing fields of the 1.3 layout: ``eth_type=0x800`` or ``ipv4_src=(v, mask)``."""
    v = m = 0
    for name, spec in fields.items():
        sh, full = SHIFT13[name], FULL13[name]
        val, fm = spec if isinstance(spec, tuple) else (spec, full)
        fm &= full
        v |= (val & fm) << sh
        m |= fm << sh
    return v, m


# The injected space: zero, one or two well-formed tags (an absent tag reads 0), no MPLS.
UNTAGGED = wc13(vlan_vid=0, vlan_pcp=0, vlan1_vid=0, vlan1_pcp=0)
ONE_TAG = wc13(vlan_vid=(VID_PRESENT, VID_PRESENT), vlan1_vid=0, vlan1_pcp=0)
TWO_TAGS = wc13(vlan_vid=(VID_PRESENT, VID_PRESENT), vlan1_vid=(VID_PRESENT, VID_PRESENT))
TAG_SHAPES: tuple[tuple[int, tuple[int, int]], ...] = ((0, UNTAGGED), (1, ONE_TAG), (2, TWO_TAGS))
NOT_INJECTED: tuple[tuple[int, int], ...] = tuple(wc13(eth_type=t) for t in MPLS_TYPES)
