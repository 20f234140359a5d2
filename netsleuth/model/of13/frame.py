"""A packet as OpenFlow 1.3 sees it: tag and label stacks, IPv4/IPv6, exact bytes.

Why a second record beside ``model.packet.Packet``: 1.3 matches and rewrites
headers the 1.0 model never needs (stacked VLAN tags after push_vlan, 802.1ad
outer tags, an MPLS label stack, IPv6, ICMPv6 Neighbor Discovery, SCTP), and
the 1.0 record, its JSON form (traces on disk) and its hot-path speed must
stay exactly as they are.  The two convert through wire bytes
(``Frame.from_packet`` / ``Frame.to_packet``), which both parse and produce
exactly, so nothing is lost between pipelines.

Layout: ``tags`` outermost first, ``eth_type`` is the ethertype after the
last tag.  When ``mpls`` is not empty, ``eth_type`` is 0x8847/0x8848 and
everything after the bottom of the label stack is opaque ``payload``: an
MPLS header does not say what it carries, so, like Open vSwitch, the model
does not look inside until pop_mpls names the ethertype.

As in the 1.0 model, ``from_bytes`` never raises (what does not parse stays
in ``payload``, bytes after the L3 datagram in ``trailer``), it stores every
checksum it reads, and stores a length only when it disagrees with the
bytes present.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass, fields, replace
from typing import Any

from netsleuth.model.addr import int_to_ip, int_to_mac, ip_to_int, mac_to_int
from netsleuth.model.of13.headers import (
    ETH_IPV6,
    ICMPV6_TYPES_ND,
    MPLS_TYPES,
    PROTO_ICMPV6,
    PROTO_SCTP,
    SCTP,
    VLAN_TPIDS,
    ICMPv6,
    IPv6,
    MplsLabel,
    VlanTag,
    crc32c,
    exthdr_chain_len,
)
from netsleuth.model.packet import (
    ETH_ARP,
    ETH_IPV4,
    ICMP,
    PROTO_ICMP,
    PROTO_TCP,
    PROTO_UDP,
    RAW,
    TCP,
    UDP,
    Arp,
    IPv4,
    Packet,
    PacketError,
)
from netsleuth.model.packet_codec import (
    arp_bytes,
    headers_to_json,
    icmp_bytes,
    internet_checksum,
    ipv4_bytes,
    parse_arp,
    parse_basic_l4,
    parse_ipv4,
    tcp_bytes,
)

_ETH = struct.Struct("!6s6sH")
_U16 = struct.Struct("!H")
_U32 = struct.Struct("!I")
_UDP = struct.Struct("!HHHH")
_SCTP = struct.Struct("!HHII")
_IP6 = struct.Struct("!IHBB16s16s")
_ICMP6 = struct.Struct("!BBHI")

L3 = Arp | IPv4 | IPv6
L4 = ICMP | TCP | UDP | SCTP | ICMPv6
_L4_PROTO: dict[type, int] = {ICMP: PROTO_ICMP, TCP: PROTO_TCP, UDP: PROTO_UDP, SCTP: PROTO_SCTP,
                              ICMPv6: PROTO_ICMPV6}
_L3_TYPE: dict[type, int] = {Arp: ETH_ARP, IPv4: ETH_IPV4, IPv6: ETH_IPV6}


@dataclass(frozen=True, slots=True)
class Frame:
    """An Ethernet frame for the OpenFlow 1.3 pipeline (see the module docstring)."""

    eth_src: int
    eth_dst: int
    eth_type: int
    tags: tuple[VlanTag, ...] = ()
    mpls: tuple[MplsLabel, ...] = ()
    l3: Arp | IPv4 | IPv6 | None = None
    l4: ICMP | TCP | UDP | SCTP | ICMPv6 | None = None
    payload: bytes = b""
    trailer: bytes = b""

    def __post_init__(self) -> None:
        l3, l4 = self.l3, self.l4
        if self.eth_type == RAW and (self.eth_src or self.eth_dst or self.tags or self.mpls or l3 or self.trailer):
            raise PacketError("a RAW (sub-Ethernet) frame with header fields",
                              "put the whole frame in payload and leave the other fields default")
        if self.mpls and (self.eth_type not in MPLS_TYPES or l3 is not None):
            raise PacketError("an MPLS label stack with a non-MPLS eth_type or a parsed L3 header",
                              "use eth_type 0x8847/0x8848 and keep what follows the labels in payload")
        if l3 is not None and _L3_TYPE[type(l3)] != self.eth_type:
            raise PacketError(f"{type(l3).__name__} header in a frame with eth_type {self.eth_type:#06x}",
                              f"use eth_type {_L3_TYPE[type(l3)]:#06x}")
        if l4 is not None:
            proto = l3.proto if isinstance(l3, (IPv4, IPv6)) else None
            if proto != _L4_PROTO[type(l4)] or (type(l4) is ICMP and type(l3) is not IPv4) or (
                    type(l4) is ICMPv6 and type(l3) is not IPv6):
                raise PacketError(f"{type(l4).__name__} header without an IP header of that protocol",
                                  "set l3 to IPv4/IPv6 with the matching protocol number")

    # -- conversions ---------------------------------------------------------

    @classmethod
    def from_packet(cls, packet: Packet) -> Frame:
        """The 1.3 view of a 1.0 packet (through its exact wire bytes)."""
        return cls.from_bytes(packet.to_bytes())

    def to_packet(self) -> Packet:
        """The 1.0 view of this frame (through its exact wire bytes)."""
        return Packet.from_bytes(self.to_bytes())

    # -- wire bytes ------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """The exact frame; checksums and lengths that are None are computed. No padding."""
        if self.eth_type == RAW:
            return self.payload
        try:
            head = self.eth_dst.to_bytes(6, "big") + self.eth_src.to_bytes(6, "big")
            for t in self.tags:
                if t.vid >> 12 or t.cfi >> 1 or t.pcp >> 3:
                    raise OverflowError(f"VLAN tag {t}")
                head += _U16.pack(t.tpid) + _U16.pack(t.tci)
            head += _U16.pack(self.eth_type)
            for m in self.mpls:
                if m.label >> 20 or m.tc >> 3 or m.bos >> 1 or m.ttl >> 8:
                    raise OverflowError(f"MPLS entry {m}")
                head += _U32.pack(m.word)
            return head + self.l3_bytes() + self.trailer
        except (struct.error, OverflowError) as exc:
            raise PacketError(f"a header field does not fit its wire width ({exc})",
                              "keep every field within its width (vid 12 bits, label 20 bits, ...)") from exc

    def l3_bytes(self) -> bytes:
        """The bytes after the Ethernet header, tags and labels, up to the trailer."""
        l3 = self.l3
        if l3 is None:
            return self.payload
        if type(l3) is Arp:
            return arp_bytes(l3, self.payload)
        if type(l3) is IPv4:
            pseudo = l3.src.to_bytes(4, "big") + l3.dst.to_bytes(4, "big")
            return ipv4_bytes(l3, lambda: self._l4_bytes(pseudo, l3.proto))
        assert type(l3) is IPv6
        return self._ipv6_bytes(l3)

    def _ipv6_bytes(self, ip: IPv6) -> bytes:
        pseudo = ip.src.to_bytes(16, "big") + ip.dst.to_bytes(16, "big")
        segment = ip.exthdrs + self._l4_bytes(pseudo, ip.proto)
        plen = ip.payload_length if ip.payload_length is not None else len(segment)
        word = (6 << 28) | (ip.tc << 20) | ip.flabel
        if ip.tc >> 8 or ip.flabel >> 20:
            raise OverflowError(f"IPv6 tc {ip.tc} / flow label {ip.flabel}")
        return _IP6.pack(word, plen, ip.nh, ip.hop_limit, ip.src.to_bytes(16, "big"),
                         ip.dst.to_bytes(16, "big")) + segment

    def _l4_bytes(self, pseudo_addrs: bytes, proto: int) -> bytes:
        l4, payload = self.l4, self.payload
        if l4 is None:
            return payload
        v6 = len(pseudo_addrs) == 32

        def pseudo_csum(seg: bytes) -> int:
            if v6:
                ph = pseudo_addrs + _U32.pack(len(seg)) + b"\0\0\0" + bytes([proto])
            else:
                ph = pseudo_addrs + struct.pack("!BBH", 0, proto, len(seg) & 0xFFFF)
            return internet_checksum(ph + seg)

        kind = type(l4)
        if kind is TCP:
            assert isinstance(l4, TCP)
            return tcp_bytes(l4, payload, pseudo_csum)
        if kind is UDP:
            assert isinstance(l4, UDP)
            length = l4.length if l4.length is not None else 8 + len(payload)
            seg = _UDP.pack(l4.src_port, l4.dst_port, length, 0) + payload
            ucsum = l4.csum
            if ucsum is None:
                ucsum = pseudo_csum(seg) or 0xFFFF  # 0 means "no checksum" in UDP
            return seg[:6] + _U16.pack(ucsum) + seg[8:]
        if kind is SCTP:
            assert isinstance(l4, SCTP)
            seg = _SCTP.pack(l4.src_port, l4.dst_port, l4.vtag, 0) + payload
            # RFC 4960 appendix B: the CRC goes on the wire least significant byte first.
            scsum = l4.csum if l4.csum is not None else int.from_bytes(crc32c(seg).to_bytes(4, "little"), "big")
            return seg[:8] + _U32.pack(scsum) + seg[12:]
        if kind is ICMPv6:
            assert isinstance(l4, ICMPv6)
            body = b""
            if l4.target is not None:
                body = l4.target.to_bytes(16, "big")
                for opt, value in l4.options:
                    if (len(value) + 2) % 8 or len(value) + 2 > 255 * 8:
                        raise PacketError(f"an ND option of {len(value)} value bytes",
                                          "ND option values are 8*n - 2 bytes long")
                    body += bytes([opt, (len(value) + 2) // 8]) + value
            seg = _ICMP6.pack(l4.type, l4.code, 0, l4.rest) + body + payload
            csum = l4.csum if l4.csum is not None else pseudo_csum(seg)
            return seg[:2] + _U16.pack(csum) + seg[4:]
        assert isinstance(l4, ICMP)
        return icmp_bytes(l4, payload)

    @classmethod
    def from_bytes(cls, data: bytes) -> Frame:
        """Parse a frame; never raises: what does not parse stays in payload.

        A frame shorter than an Ethernet header has eth_type -1 (``RAW`` of
        the 1.0 model) and all its bytes in payload.
        """
        data = bytes(data)
        n = len(data)
        if n < 14:
            return cls(0, 0, RAW, payload=data)
        dst, src, eth_type = _ETH.unpack_from(data)
        off = 14
        tags: list[VlanTag] = []
        while eth_type in VLAN_TPIDS and n - off >= 4:
            (tci,) = _U16.unpack_from(data, off)
            tags.append(VlanTag(tci & 0xFFF, tci >> 13, (tci >> 12) & 1, eth_type))
            (eth_type,) = _U16.unpack_from(data, off + 2)
            off += 4
        eth_src, eth_dst = int.from_bytes(src, "big"), int.from_bytes(dst, "big")
        if eth_type in MPLS_TYPES:
            labels: list[MplsLabel] = []
            while n - off >= 4 and not (labels and labels[-1].bos):
                (w,) = _U32.unpack_from(data, off)
                labels.append(MplsLabel(w >> 12, (w >> 9) & 7, (w >> 8) & 1, w & 0xFF))
                off += 4
            return cls(eth_src, eth_dst, eth_type, tuple(tags), tuple(labels), payload=data[off:])
        parsed = parse_l3(eth_type, data, off)
        if parsed is None:
            return cls(eth_src, eth_dst, eth_type, tuple(tags), payload=data[off:])
        l3, l4, payload, trailer = parsed
        return cls(eth_src, eth_dst, eth_type, tuple(tags), (), l3, l4, payload, trailer)

    def frame_len(self) -> int:
        return len(self.to_bytes())

    # -- JSON ------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """Lossless, readable: MACs and IPs as strings, bytes as hex."""
        d: dict[str, Any] = {"eth_src": int_to_mac(self.eth_src), "eth_dst": int_to_mac(self.eth_dst),
                             "eth_type": "raw" if self.eth_type == RAW else f"{self.eth_type:#06x}"}
        if self.tags:
            d["tags"] = [{"vid": t.vid, "pcp": t.pcp, "cfi": t.cfi, "tpid": f"{t.tpid:#06x}"} for t in self.tags]
        if self.mpls:
            d["mpls"] = [{"label": m.label, "tc": m.tc, "bos": m.bos, "ttl": m.ttl} for m in self.mpls]
        return headers_to_json(d, self.l3, self.l4, self.payload, self.trailer, _header_to_json)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Frame:
        try:
            et = d["eth_type"]
            return cls(
                mac_to_int(d["eth_src"]), mac_to_int(d["eth_dst"]), RAW if et == "raw" else int(et, 0),
                tuple(VlanTag(t["vid"], t["pcp"], t["cfi"], int(t["tpid"], 0)) for t in d.get("tags", ())),
                tuple(MplsLabel(**m) for m in d.get("mpls", ())),
                _header_from_json(d["l3"]) if "l3" in d else None,
                _header_from_json(d["l4"]) if "l4" in d else None,
                bytes.fromhex(d.get("payload", "")), bytes.fromhex(d.get("trailer", "")))
        except PacketError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PacketError(f"malformed frame JSON ({type(exc).__name__}: {exc})",
                              "use the output of Frame.to_json()") from exc

    def summary(self) -> str:
        """One line for humans."""
        parts = [f"vlan {t.vid}" + ("(ad)" if t.tpid != 0x8100 else "") for t in self.tags]
        parts += [f"mpls {m.label}" for m in self.mpls]
        l3, l4 = self.l3, self.l4
        if type(l3) is IPv6:
            parts.append(f"IPv6 {ipaddress.IPv6Address(l3.src)} > {ipaddress.IPv6Address(l3.dst)}")
        elif l3 is not None:
            parts.append(replace(self, tags=()).to_packet().summary())
            l4 = None
        elif not self.mpls:
            parts.append(f"eth {self.eth_type:#06x}")
        if l4 is not None:
            parts.append(type(l4).__name__)
        return ": ".join(parts)


# ---------------------------------------------------------------------------
# parsing (each returns (l3, l4, payload, trailer) or None)


def parse_l3(eth_type: int, data: bytes, off: int) -> tuple[Any, Any, bytes, bytes] | None:
    """The L3 (and L4) headers of ``data[off:]`` for ``eth_type``, or None if none parse."""
    if eth_type == ETH_IPV4:
        return parse_ipv4(data, off, _parse_l4_v4)
    if eth_type == ETH_IPV6:
        return _parse_ipv6(data, off)
    if eth_type == ETH_ARP:
        return parse_arp(data, off)
    return None


def _parse_ipv6(data: bytes, off: int) -> tuple[Any, Any, bytes, bytes] | None:
    n = len(data)
    if n - off < 40:
        return None
    word, plen, nh, hop, src, dst = _IP6.unpack_from(data, off)
    if word >> 28 != 6:
        return None
    end, explicit = (off + 40 + plen, None) if off + 40 + plen <= n else (n, plen)
    chain_len, proto = exthdr_chain_len(nh, data, off + 40, end)
    ip = IPv6(int.from_bytes(src, "big"), int.from_bytes(dst, "big"), nh, hop, (word >> 20) & 0xFF,
              word & 0xFFFFF, data[off + 40:off + 40 + chain_len], explicit)
    l4off = off + 40 + chain_len
    l4: Any = None
    if ip.first_fragment:
        l4, l4off = _parse_l4_v6(proto, data, l4off, end)
    return ip, l4, data[l4off:end], data[end:]


def _parse_l4_v4(proto: int, data: bytes, off: int, end: int) -> tuple[Any, int]:
    """L4 under IPv4: ICMPv6 there is not a header OpenFlow matches on, so it stays payload."""
    return (None, off) if proto == PROTO_ICMPV6 else _parse_l4(proto, data, off, end)


def _parse_l4_v6(proto: int, data: bytes, off: int, end: int) -> tuple[Any, int]:
    """L4 under IPv6: protocol 1 (ICMPv4) there is not ICMP, so it stays payload."""
    return (None, off) if proto == PROTO_ICMP else _parse_l4(proto, data, off, end)


def _parse_l4(proto: int, data: bytes, off: int, end: int) -> tuple[Any, int]:
    """(L4 header or None, offset after it) within ``data[off:end]``."""
    avail = end - off
    if proto in (PROTO_TCP, PROTO_UDP, PROTO_ICMP):
        return parse_basic_l4(proto, data, off, end)
    if proto == PROTO_SCTP and avail >= 12:
        sport, dport, vtag, csum = _SCTP.unpack_from(data, off)
        return SCTP(sport, dport, vtag, csum), off + 12
    elif proto == PROTO_ICMPV6 and avail >= 8:
        typ, code, csum, rest = _ICMP6.unpack_from(data, off)
        if typ in ICMPV6_TYPES_ND and avail >= 24:
            target = int.from_bytes(data[off + 8:off + 24], "big")
            p = off + 24
            opts: list[tuple[int, bytes]] = []
            while end - p >= 8:
                kind, units = data[p], data[p + 1]
                if not units or p + units * 8 > end:
                    break
                opts.append((kind, data[p + 2:p + units * 8]))
                p += units * 8
            return ICMPv6(typ, code, rest, target, tuple(opts), csum), p
        return ICMPv6(typ, code, rest, None, (), csum), off + 8
    return None, off


# ---------------------------------------------------------------------------
# JSON helpers

_KIND: dict[type, str] = {Arp: "arp", IPv4: "ipv4", IPv6: "ipv6", ICMP: "icmp", TCP: "tcp", UDP: "udp",
                          SCTP: "sctp", ICMPv6: "icmpv6"}
_CLASS = {v: k for k, v in _KIND.items()}
_BYTES = frozenset(("options", "exthdrs"))


def _header_to_json(h: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"kind": _KIND[type(h)]}
    for f in fields(h):
        value = getattr(h, f.name)
        if type(h) is ICMPv6 and f.name == "options":
            value = [[kind, v.hex()] for kind, v in value]
        elif type(h) is ICMPv6 and f.name == "target" and value is not None:
            value = str(ipaddress.IPv6Address(value))
        elif f.name in _BYTES:
            value = value.hex()
        elif type(h) is IPv4 and f.name in ("src", "dst"):
            value = int_to_ip(value)
        elif type(h) is IPv6 and f.name in ("src", "dst"):
            value = str(ipaddress.IPv6Address(value))
        elif type(h) is Arp and f.name in ("sha", "tha") and h.hlen == 6:
            value = int_to_mac(value)
        elif type(h) is Arp and f.name in ("spa", "tpa") and h.plen == 4:
            value = int_to_ip(value)
        d[f.name] = value
    return d


def _header_from_json(d: dict[str, Any]) -> Any:
    d = dict(d)
    cls = _CLASS[d.pop("kind")]
    if cls is ICMPv6:
        d["options"] = tuple((kind, bytes.fromhex(v)) for kind, v in d.get("options", ()))
        if d.get("target") is not None:
            d["target"] = int(ipaddress.IPv6Address(d["target"]))
    else:
        for name in _BYTES.intersection(d):
            d[name] = bytes.fromhex(d[name])
    if cls is IPv4:
        d["src"], d["dst"] = ip_to_int(d["src"]), ip_to_int(d["dst"])
    elif cls is IPv6:
        d["src"], d["dst"] = int(ipaddress.IPv6Address(d["src"])), int(ipaddress.IPv6Address(d["dst"]))
    elif cls is Arp:
        for name in ("sha", "tha", "spa", "tpa"):
            if isinstance(d[name], str):
                d[name] = mac_to_int(d[name]) if ":" in d[name] else ip_to_int(d[name])
    return cls(**d)


__all__ = ["Frame", "L3", "L4", "parse_l3"]
