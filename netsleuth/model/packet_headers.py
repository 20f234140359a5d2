"""The header records a packet is made of (Ethernet tag, ARP, IPv4, ICMP, TCP, UDP, LLDP),
their protocol numbers and wire layouts.

Frozen records of ints: the switch model matches, rewrites and hashes
packets millions of times inside the model checker, and such a record is
cheap to compare, hash and copy.  ``None`` in a derived field (a checksum,
a length) means: compute it on the wire.
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass
from typing import final

from netsleuth.errors import NetsleuthError

ETH_IPV4 = 0x0800
ETH_ARP = 0x0806
ETH_VLAN = 0x8100
ETH_LLDP = 0x88CC
PROTO_ICMP = 1
PROTO_TCP = 6
PROTO_UDP = 17
RAW = -1
"""``Packet.eth_type`` of a frame too short (< 14 bytes) for an Ethernet header;
its bytes are all in ``payload``."""
DL_TYPE_NOT_ETH_TYPE = 0x05FF
"""OpenFlow 1.0 ``dl_type`` of an 802.3 frame without an LLC/SNAP header."""
LLDP_MULTICAST = 0x0180C200000E
MIN_FRAME_LEN = 60
"""Shortest Ethernet frame on the wire, FCS excluded."""

TCP_FIN, TCP_SYN, TCP_RST, TCP_PSH, TCP_ACK, TCP_URG, TCP_ECE, TCP_CWR = (1 << i for i in range(8))

_ETH = struct.Struct("!6s6sH")
_TAG = struct.Struct("!HH")
_ARP_HEAD = struct.Struct("!HHBBH")
_IP = struct.Struct("!BBHHHBBH4s4s")
_IP_ADDRS = struct.Struct("!II")
_ICMP = struct.Struct("!BBHHH")
_TCP = struct.Struct("!HHIIBBHHH")
_UDP = struct.Struct("!HHHH")
_PSEUDO = struct.Struct("!IIBBH")
_U16 = struct.Struct("!H")
_LITTLE = sys.byteorder == "little"


class PacketError(NetsleuthError, ValueError):
    """A packet record that cannot be put on the wire, or malformed packet JSON."""


# ---------------------------------------------------------------------------
# header records


@final  # no subclasses: lets `type(x) is C` checks narrow the header unions
@dataclass(frozen=True, slots=True)
class Vlan:
    """An 802.1Q tag (TPID 0x8100); the inner ethertype is ``Packet.eth_type``."""

    vid: int
    pcp: int = 0
    cfi: int = 0


@final  # no subclasses: lets `type(x) is C` checks narrow the header unions
@dataclass(frozen=True, slots=True)
class Arp:
    """ARP; ``sha``/``tha`` are ``hlen`` bytes wide and ``spa``/``tpa`` ``plen`` bytes wide."""

    op: int
    sha: int
    spa: int
    tha: int
    tpa: int
    htype: int = 1
    ptype: int = ETH_IPV4
    hlen: int = 6
    plen: int = 4

    def is_ethernet_ipv4(self) -> bool:
        return self.htype == 1 and self.ptype == ETH_IPV4 and self.hlen == 6 and self.plen == 4


@final  # no subclasses: lets `type(x) is C` checks narrow the header unions
@dataclass(frozen=True, slots=True)
class IPv4:
    """IPv4 header.  ``total_length`` None: computed; set only when it disagrees with the bytes."""

    src: int
    dst: int
    proto: int
    tos: int = 0
    ttl: int = 64
    ident: int = 0
    flags: int = 0
    frag: int = 0
    options: bytes = b""
    csum: int | None = None
    total_length: int | None = None


@final  # no subclasses: lets `type(x) is C` checks narrow the header unions
@dataclass(frozen=True, slots=True)
class ICMP:
    """ICMP header; ``ident``/``seq`` are the 4 bytes after the checksum whatever the type."""

    type: int
    code: int
    ident: int = 0
    seq: int = 0
    csum: int | None = None


@final  # no subclasses: lets `type(x) is C` checks narrow the header unions
@dataclass(frozen=True, slots=True)
class TCP:
    """TCP header; ``flags`` holds the 12 bits after the data offset (NS..FIN and reserved)."""

    src_port: int
    dst_port: int
    seq: int = 0
    ack: int = 0
    flags: int = 0
    window: int = 65535
    urg: int = 0
    options: bytes = b""
    csum: int | None = None


@final  # no subclasses: lets `type(x) is C` checks narrow the header unions
@dataclass(frozen=True, slots=True)
class UDP:
    """UDP header.  ``length`` None: computed; set only when it disagrees with the bytes."""

    src_port: int
    dst_port: int
    csum: int | None = None
    length: int | None = None


@final  # no subclasses: lets `type(x) is C` checks narrow the header unions
@dataclass(frozen=True, slots=True)
class LLDP:
    """LLDPDU.  ``chassis_id``/``port_id`` are whole TLV values, subtype byte first;
    ``extra_tlvs`` are the encoded TLVs between TTL and the End TLV (always written)."""

    chassis_id: bytes
    port_id: bytes
    ttl: int = 120
    extra_tlvs: bytes = b""


L3 = Arp | IPv4 | LLDP
L4 = ICMP | TCP | UDP
_ETH_OF_L3 = {Arp: ETH_ARP, IPv4: ETH_IPV4, LLDP: ETH_LLDP}
_PROTO_OF_L4 = {ICMP: PROTO_ICMP, TCP: PROTO_TCP, UDP: PROTO_UDP}
