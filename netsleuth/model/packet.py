"""Packets as immutable header records that convert exactly to and from wire bytes.

Why records and not byte strings: the switch model matches, rewrites and
hashes packets millions of times inside the model checker, and a frozen
record of ints is cheap to compare, hash and copy.  Why *exact* bytes: the
controllers under test are real programs that receive our PACKET_INs and send
us PACKET_OUTs, so whatever a controller sends (padded, truncated, odd
ethertypes, IPv4 options, bad checksums) must come back out byte for byte.
Anything that does not parse stays in ``payload`` (or, for bytes after the end
of an L3 datagram such as Ethernet padding, in ``trailer``) so
``Packet.from_bytes(b).to_bytes() == b`` for every ``b``.

Derived fields (checksums, IPv4 total length, UDP length) are ``None`` when
they should be computed.  ``from_bytes`` stores every checksum it reads (so a
controller's wrong checksum survives), but stores a length only when it
disagrees with the bytes present (truncated PACKET_IN data, malformed input):
a length that agrees documents nothing.

Only ``struct`` is used: this module is on the model checker's hot path.

The header records are in :mod:`netsleuth.model.packet_headers`, their byte
and JSON codec in :mod:`netsleuth.model.packet_codec`; every name stays
importable from here.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from netsleuth.model.addr import int_to_ip, int_to_mac, ip_to_int, mac_to_int
from netsleuth.model.packet_codec import (
    _ICMP_NAMES,
    _arp_ip,
    _header_from_json,
    _header_to_json,
    _hexcolon,
    _l4_csum,
    _parse_lldp,
    _pseudo_header_changed,
    _snap_type,
    _tcp_flags,
    _tlv,
    arp_bytes,
    headers_to_json,
    icmp_bytes,
    internet_checksum,
    ipv4_bytes,
    parse_arp,
    parse_ipv4,
    tcp_bytes,
)
from netsleuth.model.packet_headers import (
    _ETH,
    _ETH_OF_L3,
    _PROTO_OF_L4,
    _TAG,
    _U16,
    _UDP,
    DL_TYPE_NOT_ETH_TYPE,
    ETH_ARP,
    ETH_IPV4,
    ETH_LLDP,
    ETH_VLAN,
    ICMP,
    L4,
    LLDP,
    LLDP_MULTICAST,
    MIN_FRAME_LEN,
    PROTO_ICMP,
    PROTO_TCP,
    PROTO_UDP,
    RAW,
    TCP,
    TCP_ACK,
    TCP_SYN,
    UDP,
    Arp,
    IPv4,
    PacketError,
    Vlan,
)

# ---------------------------------------------------------------------------
# the packet


class _HashSlot:
    """The slot a :class:`Packet` keeps its hash in (a dataclass's slots are its fields only)."""

    __slots__ = ("_hash",)
    _hash: int


@dataclass(frozen=True, slots=True)
class Packet(_HashSlot):
    """An Ethernet frame: Ethernet fields here, deeper headers in ``vlan``/``l3``/``l4``.

    ``payload``: bytes after the innermost parsed header, up to the end of the
    L3 datagram (all of the frame after Ethernet when nothing else parsed).
    ``trailer``: bytes after the end of the L3 datagram (Ethernet padding).

    The hash is the fields' (what the dataclass would compute) and is computed
    once per packet: the model checker hashes the same shared packets in
    every state that queues them, and a header's hash is a Python call per
    header record.  It is not a field, so equality, ``repr``, pickling, copies
    and ``dataclasses.replace`` never see it.
    """

    eth_src: int
    eth_dst: int
    eth_type: int
    vlan: Vlan | None = None
    l3: Arp | IPv4 | LLDP | None = None
    l4: ICMP | TCP | UDP | None = None
    payload: bytes = b""
    trailer: bytes = b""

    def fields_hash(self) -> int:
        """``hash`` of the fields, computed now (what :meth:`__hash__` keeps)."""
        return hash((self.eth_src, self.eth_dst, self.eth_type, self.vlan, self.l3, self.l4, self.payload,
                     self.trailer))

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:   # the first hash of this packet
            h = self.fields_hash()
            object.__setattr__(self, "_hash", h)
            return h

    def __post_init__(self) -> None:
        l3, l4 = self.l3, self.l4
        if l3 is not None and _ETH_OF_L3.get(type(l3)) != self.eth_type:
            raise PacketError(f"{type(l3).__name__} header in a frame with eth_type {self.eth_type:#06x}",
                              f"use eth_type {_ETH_OF_L3.get(type(l3), 0):#06x}")
        if l4 is not None:
            if type(l3) is not IPv4 or l3.proto != _PROTO_OF_L4.get(type(l4)):
                raise PacketError(f"{type(l4).__name__} header without an IPv4 header of that protocol",
                                  "set l3 to IPv4(proto=1/6/17 for ICMP/TCP/UDP)")
            if l3.frag:
                raise PacketError("an L4 header in a non-first IPv4 fragment",
                                  "put the fragment's bytes in payload, not in l4")
        if self.eth_type == RAW and (self.eth_src or self.eth_dst or self.vlan or l3 or self.trailer):
            raise PacketError("a RAW (sub-Ethernet) frame with header fields",
                              "put the whole frame in payload and leave the other fields default")

    # -- wire bytes ---------------------------------------------------------

    def to_bytes(self) -> bytes:
        """The exact frame; checksums and lengths that are None are computed. No padding."""
        if self.eth_type == RAW:
            return self.payload
        try:
            head = self.eth_dst.to_bytes(6, "big") + self.eth_src.to_bytes(6, "big")
            v = self.vlan
            if v is not None:
                if v.vid >> 12 or v.cfi >> 1:
                    raise OverflowError(f"VLAN vid {v.vid} / cfi {v.cfi}")
                head += _TAG.pack(ETH_VLAN, (v.pcp << 13) | (v.cfi << 12) | v.vid)
            head += _U16.pack(self.eth_type)
            return head + self._l3_bytes() + self.trailer
        except (struct.error, OverflowError) as exc:
            raise PacketError(f"a header field does not fit its wire width ({exc})",
                              "keep every field within its width (ports 16 bits, vid 12 bits, ...)") from exc

    def _l3_bytes(self) -> bytes:
        l3 = self.l3
        if l3 is None:
            return self.payload
        if type(l3) is IPv4:
            return self._ipv4_bytes(l3)
        if type(l3) is Arp:
            return arp_bytes(l3, self.payload)
        return (_tlv(1, l3.chassis_id) + _tlv(2, l3.port_id) + _tlv(3, _U16.pack(l3.ttl))
                + l3.extra_tlvs + b"\0\0" + self.payload)

    def _ipv4_bytes(self, ip: IPv4) -> bytes:
        return ipv4_bytes(ip, lambda: self._l4_bytes(ip))

    def _l4_bytes(self, ip: IPv4) -> bytes:
        l4, payload = self.l4, self.payload
        if l4 is None:
            return payload
        if type(l4) is TCP:
            return tcp_bytes(l4, payload, lambda seg: _l4_csum(ip, len(seg), seg))
        if type(l4) is UDP:
            length = l4.length if l4.length is not None else 8 + len(payload)
            seg = _UDP.pack(l4.src_port, l4.dst_port, length, 0) + payload
            # 0 means "no checksum" in UDP
            csum = l4.csum if l4.csum is not None else (_l4_csum(ip, length, seg) or 0xFFFF)
            return seg[:6] + _U16.pack(csum) + seg[8:]
        return icmp_bytes(l4, payload)

    @classmethod
    def from_bytes(cls, data: bytes) -> Packet:
        """Parse a frame; never raises: what does not parse stays in payload."""
        data = bytes(data)
        n = len(data)
        if n < 14:
            return cls(0, 0, RAW, payload=data)
        dst, src, eth_type = _ETH.unpack_from(data)
        off = 14
        vlan = None
        if eth_type == ETH_VLAN and n >= 18:
            tci, eth_type = _TAG.unpack_from(data, 14)
            vlan = Vlan(tci & 0xFFF, tci >> 13, (tci >> 12) & 1)
            off = 18
        eth_src = int.from_bytes(src, "big")
        eth_dst = int.from_bytes(dst, "big")
        parsed = None
        if eth_type == ETH_IPV4:
            parsed = parse_ipv4(data, off)
        elif eth_type == ETH_ARP:
            parsed = parse_arp(data, off)
        elif eth_type == ETH_LLDP:
            parsed = _parse_lldp(data, off)
        if parsed is None:
            return cls(eth_src, eth_dst, eth_type, vlan, payload=data[off:])
        l3, l4, payload, trailer = parsed
        return cls(eth_src, eth_dst, eth_type, vlan, l3, l4, payload, trailer)

    def frame_len(self) -> int:
        """``len(self.to_bytes())`` without building the bytes."""
        if self.eth_type == RAW:
            return len(self.payload)
        n = 14 + (4 if self.vlan is not None else 0) + len(self.payload) + len(self.trailer)
        l3 = self.l3
        if l3 is None:
            return n
        if type(l3) is IPv4:
            return n - len(self.payload) + self._datagram_len(l3)
        if type(l3) is Arp:
            return n + 8 + 2 * (l3.hlen + l3.plen)
        return n + 2 + len(l3.chassis_id) + 2 + len(l3.port_id) + 4 + len(l3.extra_tlvs) + 2

    def _datagram_len(self, ip: IPv4) -> int:
        n = 20 + len(ip.options) + len(self.payload)
        l4 = self.l4
        if l4 is not None:
            n += 20 + len(l4.options) if type(l4) is TCP else 8
        return n

    def wire_len(self) -> int:
        """Length on the wire (FCS excluded): the frame padded to 60 bytes."""
        n = self.frame_len()
        return n if n > MIN_FRAME_LEN else MIN_FRAME_LEN

    # -- OpenFlow 1.0 view --------------------------------------------------

    def match_fields(self, in_port: int) -> tuple[int, ...]:
        """The OpenFlow 1.0 12-tuple in ``match.FIELDS`` order.

        Where OpenFlow 1.0 leaves room, Open vSwitch's choices: 802.3 frames
        get the LLC/SNAP ethertype or 0x05ff (no L3 parsing behind SNAP); ARP
        fills nw_* only for Ethernet/IPv4 ARP; a truncated IPv4 datagram
        (total length beyond the bytes present) fills no nw_*/tp_*; later
        fragments have no ports.  One VLAN tag only (0x88a8 is not a tag).
        """
        et = self.eth_type
        if et == RAW:
            return (in_port, 0, 0, 0xFFFF, 0, 0, 0, 0, 0, 0, 0, 0)
        v = self.vlan
        if v is None:
            dl_vlan, pcp = 0xFFFF, 0
        else:
            dl_vlan, pcp = v.vid, v.pcp
        tos = proto = nw_src = nw_dst = tp_src = tp_dst = 0
        l3 = self.l3
        if type(l3) is IPv4:
            if l3.total_length is not None and l3.total_length > self._datagram_len(l3):
                # Truncated datagram: Open vSwitch extracts nothing past dl_type.
                return (in_port, self.eth_src, self.eth_dst, dl_vlan, pcp, et, 0, 0, 0, 0, 0, 0)
            tos, proto, nw_src, nw_dst = l3.tos & 0xFC, l3.proto, l3.src, l3.dst
            l4 = self.l4
            if l4 is not None:
                if type(l4) is ICMP:
                    tp_src, tp_dst = l4.type, l4.code
                else:
                    tp_src, tp_dst = l4.src_port, l4.dst_port
        elif type(l3) is Arp:
            if l3.is_ethernet_ipv4():
                proto, nw_src, nw_dst = l3.op & 0xFF, l3.spa, l3.tpa
        elif et < 0x600:
            et = _snap_type(self.payload)
        return (in_port, self.eth_src, self.eth_dst, dl_vlan, pcp, et, tos, proto, nw_src, nw_dst, tp_src, tp_dst)

    # -- set-field actions (OpenFlow 1.0: a missing header makes them no-ops) --

    def set_dl_src(self, mac: int) -> Packet:
        return self if self.eth_type == RAW else self._with(mac, self.eth_dst, self.vlan, self.l3, self.l4)

    def set_dl_dst(self, mac: int) -> Packet:
        return self if self.eth_type == RAW else self._with(self.eth_src, mac, self.vlan, self.l3, self.l4)

    def set_vlan_vid(self, vid: int) -> Packet:
        """Rewrite the VLAN id, pushing a tag (pcp 0) when the frame has none."""
        if self.eth_type == RAW:
            return self
        v = self.vlan
        tag = Vlan(vid & 0xFFF) if v is None else Vlan(vid & 0xFFF, v.pcp, v.cfi)
        return self._with(self.eth_src, self.eth_dst, tag, self.l3, self.l4)

    def set_vlan_pcp(self, pcp: int) -> Packet:
        """Rewrite the VLAN priority, pushing a tag (vid 0) when the frame has none."""
        if self.eth_type == RAW:
            return self
        v = self.vlan
        tag = Vlan(0, pcp & 7) if v is None else Vlan(v.vid, pcp & 7, v.cfi)
        return self._with(self.eth_src, self.eth_dst, tag, self.l3, self.l4)

    def strip_vlan(self) -> Packet:
        return self if self.vlan is None else self._with(self.eth_src, self.eth_dst, None, self.l3, self.l4)

    def set_nw_src(self, ip: int) -> Packet:
        l3 = self.l3
        if type(l3) is not IPv4:
            return self
        return self._with_ip(l3, ip, l3.dst, l3.tos, _pseudo_header_changed(self.l4))

    def set_nw_dst(self, ip: int) -> Packet:
        l3 = self.l3
        if type(l3) is not IPv4:
            return self
        return self._with_ip(l3, l3.src, ip, l3.tos, _pseudo_header_changed(self.l4))

    def set_nw_tos(self, tos: int) -> Packet:
        """Rewrite DSCP; the ECN bits (low two) are kept."""
        l3 = self.l3
        if type(l3) is not IPv4:
            return self
        return self._with_ip(l3, l3.src, l3.dst, (tos & 0xFC) | (l3.tos & 3), self.l4)

    def set_tp_src(self, port: int) -> Packet:
        l4 = self.l4
        if type(l4) is TCP:
            l4 = TCP(port, l4.dst_port, l4.seq, l4.ack, l4.flags, l4.window, l4.urg, l4.options, None)
        elif type(l4) is UDP:
            l4 = UDP(port, l4.dst_port, 0 if l4.csum == 0 else None, l4.length)
        else:
            return self
        return self._with(self.eth_src, self.eth_dst, self.vlan, self.l3, l4)

    def set_tp_dst(self, port: int) -> Packet:
        l4 = self.l4
        if type(l4) is TCP:
            l4 = TCP(l4.src_port, port, l4.seq, l4.ack, l4.flags, l4.window, l4.urg, l4.options, None)
        elif type(l4) is UDP:
            l4 = UDP(l4.src_port, port, 0 if l4.csum == 0 else None, l4.length)
        else:
            return self
        return self._with(self.eth_src, self.eth_dst, self.vlan, self.l3, l4)

    # Positional construction: dataclasses.replace costs several times more,
    # and set-field actions run for every packet the model checker forwards.
    def _with(self, eth_src: int, eth_dst: int, vlan: Vlan | None, l3: Any, l4: Any) -> Packet:
        return Packet(eth_src, eth_dst, self.eth_type, vlan, l3, l4, self.payload, self.trailer)

    def _with_ip(self, ip: IPv4, src: int, dst: int, tos: int, l4: Any) -> Packet:
        new = IPv4(src, dst, ip.proto, tos, ip.ttl, ip.ident, ip.flags, ip.frag, ip.options, None, ip.total_length)
        return self._with(self.eth_src, self.eth_dst, self.vlan, new, l4)

    # -- human and JSON views -----------------------------------------------

    def summary(self) -> str:
        """One line for humans, tcpdump-like."""
        if self.eth_type == RAW:
            return f"truncated frame ({len(self.payload)} bytes)"
        text = self._l3_summary()
        return text if self.vlan is None else f"vlan {self.vlan.vid}: {text}"

    def _l3_summary(self) -> str:
        l3, l4 = self.l3, self.l4
        if type(l3) is Arp:
            if l3.op == 1:
                return f"ARP who-has {_arp_ip(l3, l3.tpa)} tell {_arp_ip(l3, l3.spa)}"
            if l3.op == 2:
                return f"ARP {_arp_ip(l3, l3.spa)} is-at {_hexcolon(l3.sha, l3.hlen)}"
            return f"ARP op={l3.op} {_arp_ip(l3, l3.spa)} > {_arp_ip(l3, l3.tpa)}"
        if type(l3) is LLDP:
            return "LLDP"
        if type(l3) is not IPv4:
            return f"eth {self.eth_type:#06x}"
        src, dst = int_to_ip(l3.src), int_to_ip(l3.dst)
        if type(l4) is ICMP:
            name = _ICMP_NAMES.get(l4.type)
            if l4.type in (0, 8):
                return f"ICMP {name} {src} > {dst} id={l4.ident} seq={l4.seq}"
            what = name if name else f"type={l4.type}"
            return f"ICMP {what} code={l4.code} {src} > {dst}"
        if type(l4) is TCP:
            return f"TCP {src}:{l4.src_port} > {dst}:{l4.dst_port} [{_tcp_flags(l4.flags)}]"
        if type(l4) is UDP:
            return f"UDP {src}:{l4.src_port} > {dst}:{l4.dst_port}"
        frag = f" frag={l3.frag * 8}" if l3.frag else ""
        return f"IPv4 {src} > {dst} proto={l3.proto}{frag}"

    def to_json(self) -> dict[str, Any]:
        """Lossless, readable: MACs and IPs as strings, bytes as hex."""
        d: dict[str, Any] = {
            "eth_src": int_to_mac(self.eth_src),
            "eth_dst": int_to_mac(self.eth_dst),
            "eth_type": "raw" if self.eth_type == RAW else f"{self.eth_type:#06x}",
        }
        if self.vlan is not None:
            d["vlan"] = {"vid": self.vlan.vid, "pcp": self.vlan.pcp, "cfi": self.vlan.cfi}
        return headers_to_json(d, self.l3, self.l4, self.payload, self.trailer, _header_to_json)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Packet:
        try:
            et = d["eth_type"]
            vlan = d.get("vlan")
            l3, l4 = d.get("l3"), d.get("l4")
            return cls(
                mac_to_int(d["eth_src"]), mac_to_int(d["eth_dst"]),
                RAW if et == "raw" else (int(et, 0) if isinstance(et, str) else int(et)),
                Vlan(**vlan) if vlan is not None else None,
                _header_from_json(l3) if l3 is not None else None,
                _header_from_json(l4) if l4 is not None else None,
                bytes.fromhex(d.get("payload", "")), bytes.fromhex(d.get("trailer", "")))
        except PacketError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PacketError(f"malformed packet JSON ({type(exc).__name__}: {exc})",
                              "use the output of Packet.to_json()") from exc


# ---------------------------------------------------------------------------
# constructors (addresses as ints or strings; checksums computed on the wire)


def arp_request(src_mac: int | str, src_ip: int | str, dst_ip: int | str) -> Packet:
    mac = mac_to_int(src_mac)
    return Packet(mac, 0xFFFFFFFFFFFF, ETH_ARP, l3=Arp(1, mac, ip_to_int(src_ip), 0, ip_to_int(dst_ip)))


def arp_reply(src_mac: int | str, src_ip: int | str, dst_mac: int | str, dst_ip: int | str) -> Packet:
    mac, dmac = mac_to_int(src_mac), mac_to_int(dst_mac)
    return Packet(mac, dmac, ETH_ARP, l3=Arp(2, mac, ip_to_int(src_ip), dmac, ip_to_int(dst_ip)))


def _ip_packet(src_mac: int | str, dst_mac: int | str, src_ip: int | str, dst_ip: int | str,
               proto: int, l4: L4, payload: bytes) -> Packet:
    ip = IPv4(ip_to_int(src_ip), ip_to_int(dst_ip), proto)
    return Packet(mac_to_int(src_mac), mac_to_int(dst_mac), ETH_IPV4, l3=ip, l4=l4, payload=payload)


def icmp_echo(src_mac: int | str, dst_mac: int | str, src_ip: int | str, dst_ip: int | str,
              ident: int = 0, seq: int = 0, reply: bool = False, payload: bytes = b"") -> Packet:
    return _ip_packet(src_mac, dst_mac, src_ip, dst_ip, PROTO_ICMP, ICMP(0 if reply else 8, 0, ident, seq), payload)


def tcp_syn(src_mac: int | str, dst_mac: int | str, src_ip: int | str, dst_ip: int | str,
            src_port: int, dst_port: int) -> Packet:
    return _ip_packet(src_mac, dst_mac, src_ip, dst_ip, PROTO_TCP, TCP(src_port, dst_port, flags=TCP_SYN), b"")


def udp_packet(src_mac: int | str, dst_mac: int | str, src_ip: int | str, dst_ip: int | str,
               src_port: int, dst_port: int, payload: bytes = b"") -> Packet:
    return _ip_packet(src_mac, dst_mac, src_ip, dst_ip, PROTO_UDP, UDP(src_port, dst_port), payload)


def lldp_frame(src_mac: int | str, chassis_id: bytes | str, port_id: bytes | str | int) -> Packet:
    """LLDP to the nearest-bridge group.  ``bytes`` ids are TLV values (subtype
    first); a ``str`` becomes subtype 7 (locally assigned); an ``int`` port
    becomes subtype 2 (port component) with 4 big-endian bytes."""
    if isinstance(chassis_id, str):
        chassis_id = b"\x07" + chassis_id.encode()
    if isinstance(port_id, str):
        port_id = b"\x07" + port_id.encode()
    elif isinstance(port_id, int):
        port_id = b"\x02" + port_id.to_bytes(4, "big")
    return Packet(mac_to_int(src_mac), LLDP_MULTICAST, ETH_LLDP, l3=LLDP(chassis_id, port_id))


__all__ = [
    "Arp", "DL_TYPE_NOT_ETH_TYPE", "ETH_ARP", "ETH_IPV4", "ETH_LLDP", "ETH_VLAN", "ICMP", "IPv4", "LLDP",
    "LLDP_MULTICAST", "MIN_FRAME_LEN", "PROTO_ICMP", "PROTO_TCP", "PROTO_UDP", "Packet", "PacketError", "RAW",
    "TCP", "TCP_ACK", "TCP_SYN", "UDP", "Vlan", "arp_reply", "arp_request", "icmp_echo", "internet_checksum",
    "lldp_frame", "tcp_syn", "udp_packet",
]
