"""Header records OpenFlow 1.3 needs beyond the 1.0 packet model.

The 1.0 records (``Arp``, ``IPv4``, ``ICMP``, ``TCP``, ``UDP`` in
``model/packet.py``) are reused as they are; these are the headers 1.3
matches on or rewrites that 1.0 never saw: stacked VLAN tags (802.1Q and
802.1ad), MPLS label stack entries, IPv6 with its extension-header chain,
ICMPv6 with Neighbor Discovery, and SCTP.  Like the 1.0 records they are
frozen and hold ints, so frames stay cheap to hash and compare; a checksum
of ``None`` means "compute it on the wire", a stored one is written as is.
"""

from __future__ import annotations

from dataclasses import dataclass

from os_ken.ofproto import ofproto_v1_3 as ofp

ETH_VLAN = 0x8100
ETH_QINQ = 0x88A8
ETH_IPV6 = 0x86DD
ETH_MPLS = 0x8847
ETH_MPLS_MC = 0x8848
ETH_PBB = 0x88E7
PROTO_ICMPV6 = 58
PROTO_SCTP = 132
VLAN_TPIDS = (ETH_VLAN, ETH_QINQ)
MPLS_TYPES = (ETH_MPLS, ETH_MPLS_MC)

# IPv6 extension headers whose length is (byte 1 + 1) * 8; fragment is 8 fixed,
# AH is (byte 1 + 2) * 4.  ESP hides everything behind it.
EXT_HOP, EXT_ROUTING, EXT_FRAG, EXT_ESP, EXT_AH, EXT_NONE, EXT_DEST = 0, 43, 44, 50, 51, 59, 60
_EXT_BITS = {EXT_HOP: ofp.OFPIEH_HOP, EXT_ROUTING: ofp.OFPIEH_ROUTER, EXT_FRAG: ofp.OFPIEH_FRAG,
             EXT_ESP: ofp.OFPIEH_ESP, EXT_AH: ofp.OFPIEH_AUTH, EXT_DEST: ofp.OFPIEH_DEST,
             EXT_NONE: ofp.OFPIEH_NONEXT}
ND_NS, ND_NA = 135, 136
ICMPV6_TYPES_ND = (ND_NS, ND_NA)
ND_OPT_SLL, ND_OPT_TLL = 1, 2


@dataclass(frozen=True, slots=True)
class VlanTag:
    """One VLAN tag; ``tpid`` 0x8100 (802.1Q) or 0x88a8 (802.1ad service tag)."""

    vid: int
    pcp: int = 0
    cfi: int = 0
    tpid: int = ETH_VLAN

    @property
    def tci(self) -> int:
        return (self.pcp << 13) | (self.cfi << 12) | self.vid


@dataclass(frozen=True, slots=True)
class MplsLabel:
    """One MPLS label stack entry (RFC 3032): label 20 bits, tc 3, bos 1, ttl 8."""

    label: int
    tc: int = 0
    bos: int = 1
    ttl: int = 64

    @property
    def word(self) -> int:
        return (self.label << 12) | (self.tc << 9) | (self.bos << 8) | self.ttl


@dataclass(frozen=True, slots=True)
class IPv6:
    """IPv6 fixed header plus the raw extension-header chain.

    ``nh`` is the fixed header's Next Header; ``exthdrs`` the complete
    extension headers that follow (kept as bytes: the model only needs to
    walk them, and bytes round-trip exactly).  ``payload_length`` None:
    computed; set only when it disagrees with the bytes present.
    """

    src: int
    dst: int
    nh: int
    hop_limit: int = 64
    tc: int = 0
    flabel: int = 0
    exthdrs: bytes = b""
    payload_length: int | None = None

    @property
    def proto(self) -> int:
        """The upper-layer protocol: the last Next Header of the chain."""
        return walk_exthdrs(self.nh, self.exthdrs)[0]

    @property
    def first_fragment(self) -> bool:
        """False for a non-first fragment (fragment offset != 0): no L4 header there."""
        return walk_exthdrs(self.nh, self.exthdrs)[2]

    @property
    def exthdr_bits(self) -> int:
        """The OFPIEH_* bits of ``ipv6_exthdr`` for this chain."""
        return walk_exthdrs(self.nh, self.exthdrs)[1]


def walk_exthdrs(nh: int, chain: bytes) -> tuple[int, int, bool]:
    """(final Next Header, OFPIEH_* bits, first fragment) of an extension-header chain."""
    bits, off, first = 0, 0, True
    n = len(chain)
    while nh in _EXT_BITS and nh not in (EXT_ESP, EXT_NONE) and off + 2 <= n:
        bits |= _EXT_BITS[nh]
        if nh == EXT_FRAG:
            length = 8
            if off + 4 <= n and int.from_bytes(chain[off + 2:off + 4], "big") >> 3:
                first = False
        elif nh == EXT_AH:
            length = (chain[off + 1] + 2) * 4
        else:
            length = (chain[off + 1] + 1) * 8
        if off + length > n:
            break
        nh = chain[off]
        off += length
    if nh in (EXT_ESP, EXT_NONE):
        bits |= _EXT_BITS[nh]
    return nh, bits, first


def exthdr_chain_len(nh: int, data: bytes, off: int, end: int) -> tuple[int, int]:
    """(bytes of complete extension headers from ``off``, final Next Header)."""
    start = off
    while nh in (EXT_HOP, EXT_ROUTING, EXT_FRAG, EXT_AH, EXT_DEST) and off + 2 <= end:
        if nh == EXT_FRAG:
            length = 8
        elif nh == EXT_AH:
            length = (data[off + 1] + 2) * 4
        else:
            length = (data[off + 1] + 1) * 8
        if off + length > end:
            break
        nh = data[off]
        off += length
    return off - start, nh


@dataclass(frozen=True, slots=True)
class ICMPv6:
    """ICMPv6; ``rest`` is the 32 bits after the checksum whatever the type.

    Neighbor Solicitation/Advertisement (types 135/136) also carry
    ``target`` and their options as (type, value) pairs in wire order (the
    value excludes the two type/length bytes and is a multiple of 8 minus 2
    long); other types keep their body in the frame's payload.
    """

    type: int
    code: int
    rest: int = 0
    target: int | None = None
    options: tuple[tuple[int, bytes], ...] = ()
    csum: int | None = None

    def nd_fields(self) -> tuple[int, int, int]:
        """(nd_target, nd_sll, nd_tll) as Open vSwitch extracts them.

        A link-layer option counts only with length 1 (a MAC); a second
        option of the same kind makes the message invalid, and OVS then
        reports all three as zero.
        """
        if self.target is None:
            return 0, 0, 0
        sll = tll = None
        for kind, value in self.options:
            if len(value) != 6 or kind not in (ND_OPT_SLL, ND_OPT_TLL):
                continue
            mac = int.from_bytes(value, "big")
            if kind == ND_OPT_SLL:
                if sll:
                    return 0, 0, 0
                sll = mac
            else:
                if tll:
                    return 0, 0, 0
                tll = mac
        return self.target, sll or 0, tll or 0


@dataclass(frozen=True, slots=True)
class SCTP:
    """SCTP common header; ``csum`` None means compute the CRC32c."""

    src_port: int
    dst_port: int
    vtag: int = 0
    csum: int | None = None


def _crc32c_table() -> tuple[int, ...]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


_CRC32C = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC32c (Castagnoli), the SCTP checksum (RFC 4960 appendix B)."""
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC32C[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF
