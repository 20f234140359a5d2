"""The byte and JSON codec of packet headers: checksums, writing and parsing each
header, and the text and JSON forms of their fields.

Parsing keeps whatever it cannot parse as payload or trailer, so a packet
re-serialises byte for byte (see :mod:`netsleuth.model.packet`).  Only
``struct`` is used: this is on the model checker's hot path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any

from netsleuth.model.addr import int_to_ip, ip_to_int
from netsleuth.model.packet_headers import (
    _ARP_HEAD,
    _ICMP,
    _IP,
    _IP_ADDRS,
    _LITTLE,
    _PSEUDO,
    _TCP,
    _U16,
    _UDP,
    DL_TYPE_NOT_ETH_TYPE,
    ICMP,
    L4,
    LLDP,
    PROTO_ICMP,
    PROTO_TCP,
    PROTO_UDP,
    TCP,
    TCP_ACK,
    TCP_CWR,
    TCP_ECE,
    TCP_FIN,
    TCP_PSH,
    TCP_RST,
    TCP_SYN,
    TCP_URG,
    UDP,
    Arp,
    IPv4,
    PacketError,
)

# ---------------------------------------------------------------------------
# checksums


def internet_checksum(data: bytes) -> int:
    """RFC 1071 ones'-complement checksum of ``data`` (odd lengths zero-padded)."""
    if len(data) & 1:
        data += b"\0"
    # Summing native-order words and swapping the folded result is RFC 1071's
    # byte-order independence; it lets memoryview do the word split in C.
    s = sum(memoryview(data).cast("H"))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    if _LITTLE:
        s = ((s & 0xFF) << 8) | (s >> 8)
    return ~s & 0xFFFF


def _l4_csum(ip: IPv4, length: int, segment: bytes) -> int:
    return internet_checksum(_PSEUDO.pack(ip.src, ip.dst, 0, ip.proto, length & 0xFFFF) + segment)


# ---------------------------------------------------------------------------
# header bytes (shared with the OpenFlow 1.3 frame, which writes these headers alike)


def headers_to_json(d: dict[str, Any], l3: Any, l4: Any, payload: bytes, trailer: bytes,
                    header_to_json: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    """``d`` (a frame's Ethernet part in JSON) with its L3/L4 headers, payload and trailer added."""
    if l3 is not None:
        d["l3"] = header_to_json(l3)
    if l4 is not None:
        d["l4"] = header_to_json(l4)
    d["payload"] = payload.hex()
    if trailer:
        d["trailer"] = trailer.hex()
    return d


def arp_bytes(arp: Arp, payload: bytes) -> bytes:
    """An ARP header, addresses at their declared widths, then ``payload``."""
    return (_ARP_HEAD.pack(arp.htype, arp.ptype, arp.hlen, arp.plen, arp.op)
            + arp.sha.to_bytes(arp.hlen, "big") + arp.spa.to_bytes(arp.plen, "big")
            + arp.tha.to_bytes(arp.hlen, "big") + arp.tpa.to_bytes(arp.plen, "big") + payload)


def ipv4_bytes(ip: IPv4, segment_of: Callable[[], bytes]) -> bytes:
    """An IPv4 datagram around the segment ``segment_of`` writes (the header is checked first).

    A None total length or checksum is computed; raises OverflowError for a
    flags/fragment field wider than its bits (callers turn it into a PacketError).
    """
    opts = ip.options
    if len(opts) % 4 or len(opts) > 40:
        raise PacketError(f"IPv4 options of {len(opts)} bytes", "pad options to a multiple of 4, at most 40")
    if ip.frag >> 13 or ip.flags >> 3:
        raise OverflowError(f"IPv4 flags {ip.flags} / fragment offset {ip.frag}")
    segment = segment_of()
    hlen = 20 + len(opts)
    total = ip.total_length if ip.total_length is not None else hlen + len(segment)
    header = _IP.pack(0x40 | (hlen >> 2), ip.tos, total, ip.ident, (ip.flags << 13) | ip.frag,
                      ip.ttl, ip.proto, 0, ip.src.to_bytes(4, "big"), ip.dst.to_bytes(4, "big")) + opts
    csum = ip.csum if ip.csum is not None else internet_checksum(header)
    return header[:10] + _U16.pack(csum) + header[12:] + segment


def tcp_bytes(tcp: TCP, payload: bytes, checksum: Callable[[bytes], int]) -> bytes:
    """A TCP segment; a None checksum is ``checksum(segment)`` (the pseudo-header is the caller's)."""
    opts = tcp.options
    if len(opts) % 4 or len(opts) > 40:
        raise PacketError(f"TCP options of {len(opts)} bytes", "pad options to a multiple of 4, at most 40")
    if tcp.flags >> 12:
        raise OverflowError(f"TCP flags {tcp.flags:#x}")
    doff = 5 + len(opts) // 4
    seg = _TCP.pack(tcp.src_port, tcp.dst_port, tcp.seq, tcp.ack, (doff << 4) | (tcp.flags >> 8),
                    tcp.flags & 0xFF, tcp.window, 0, tcp.urg) + opts + payload
    csum = tcp.csum if tcp.csum is not None else checksum(seg)
    return seg[:16] + _U16.pack(csum) + seg[18:]


def icmp_bytes(icmp: ICMP, payload: bytes) -> bytes:
    """An ICMP message (echo layout: ident and sequence); a None checksum is computed."""
    seg = _ICMP.pack(icmp.type, icmp.code, 0, icmp.ident, icmp.seq) + payload
    csum = icmp.csum if icmp.csum is not None else internet_checksum(seg)
    return seg[:2] + _U16.pack(csum) + seg[4:]


# ---------------------------------------------------------------------------
# parsing helpers (each returns (l3, l4, payload, trailer) or None)


def parse_ipv4(data: bytes, off: int,
               parse_l4: Callable[[int, bytes, int, int], tuple[Any, int]] | None = None) -> tuple[Any, ...] | None:
    """An IPv4 datagram at ``off``: its header, the L4 header ``parse_l4`` finds (TCP/UDP/ICMP when None),
    the payload and the trailer after the datagram; None when no IPv4 header parses.

    The OpenFlow 1.3 frame reads IPv4 the same way and passes its own L4
    reader (which also knows SCTP), so both models agree on every IPv4 byte.
    """
    n = len(data)
    if n - off < 20:
        return None
    vihl, tos, total, ident, ff, ttl, proto, csum, src, dst = _IP.unpack_from(data, off)
    hlen = (vihl & 0xF) * 4
    if vihl >> 4 != 4 or hlen < 20 or n - off < hlen or total < hlen:
        return None
    if off + total <= n:
        end, explicit_total = off + total, None
    else:
        end, explicit_total = n, total
    frag = ff & 0x1FFF
    src_i, dst_i = _IP_ADDRS.unpack_from(data, off + 12)
    ip = IPv4(src_i, dst_i, proto, tos, ttl, ident, ff >> 13, frag, data[off + 20:off + hlen], csum, explicit_total)
    l4off = off + hlen
    l4: Any = None
    if not frag:
        l4, l4off = (parse_l4 or parse_basic_l4)(proto, data, l4off, end)
    return ip, l4, data[l4off:end], data[end:]


def parse_basic_l4(proto: int, data: bytes, off: int, end: int) -> tuple[TCP | UDP | ICMP | None, int]:
    """(TCP, UDP or ICMP header or None, offset after it) within ``data[off:end]``."""
    avail = end - off
    if proto == PROTO_TCP and avail >= 20:
        sport, dport, seq, ack, b12, b13, win, tcsum, urg = _TCP.unpack_from(data, off)
        tlen = (b12 >> 4) * 4
        if tlen >= 20 and avail >= tlen:
            return TCP(sport, dport, seq, ack, ((b12 & 0xF) << 8) | b13, win, urg,
                       data[off + 20:off + tlen], tcsum), off + tlen
    elif proto == PROTO_UDP and avail >= 8:
        sport, dport, ulen, ucsum = _UDP.unpack_from(data, off)
        return UDP(sport, dport, ucsum, None if ulen == avail else ulen), off + 8
    elif proto == PROTO_ICMP and avail >= 8:
        typ, code, icsum, iid, iseq = _ICMP.unpack_from(data, off)
        return ICMP(typ, code, iid, iseq, icsum), off + 8
    return None, off


def parse_arp(data: bytes, off: int) -> tuple[Any, ...] | None:
    """An ARP header at ``off`` (any hardware/protocol address widths), or None."""
    if len(data) - off < 8:
        return None
    htype, ptype, hlen, plen, op = _ARP_HEAD.unpack_from(data, off)
    end = off + 8 + 2 * (hlen + plen)
    if end > len(data):
        return None
    p = off + 8
    sha = int.from_bytes(data[p:p + hlen], "big")
    p += hlen
    spa = int.from_bytes(data[p:p + plen], "big")
    p += plen
    tha = int.from_bytes(data[p:p + hlen], "big")
    p += hlen
    tpa = int.from_bytes(data[p:p + plen], "big")
    return Arp(op, sha, spa, tha, tpa, htype, ptype, hlen, plen), None, b"", data[end:]


def _parse_lldp(data: bytes, off: int) -> tuple[Any, ...] | None:
    n = len(data)
    values = []
    p = off
    for want in (1, 2, 3):
        if n - p < 2:
            return None
        (h,) = _U16.unpack_from(data, p)
        length = h & 0x1FF
        if h >> 9 != want or n - p - 2 < length or (want == 3 and length != 2):
            return None
        values.append(data[p + 2:p + 2 + length])
        p += 2 + length
    extra_start = p
    while True:
        if n - p < 2:
            return None
        (h,) = _U16.unpack_from(data, p)
        length = h & 0x1FF
        if h >> 9 == 0:
            if length:
                return None
            break
        if n - p - 2 < length:
            return None
        p += 2 + length
    lldp = LLDP(values[0], values[1], _U16.unpack(values[2])[0], data[extra_start:p])
    return lldp, None, b"", data[p + 2:]


def _tlv(kind: int, value: bytes) -> bytes:
    if len(value) > 0x1FF:
        raise PacketError(f"an LLDP TLV value of {len(value)} bytes", "keep LLDP TLV values at most 511 bytes")
    return _U16.pack((kind << 9) | len(value)) + value


def _snap_type(payload: bytes) -> int:
    if len(payload) >= 8 and payload[:6] == b"\xaa\xaa\x03\x00\x00\x00":
        t: int = _U16.unpack_from(payload, 6)[0]
        if t >= 0x600:
            return t
    return DL_TYPE_NOT_ETH_TYPE


def _pseudo_header_changed(l4: L4 | None) -> L4 | None:
    """The L4 header after an IP address rewrite: TCP/UDP checksums cover the addresses."""
    if type(l4) is TCP:
        return TCP(l4.src_port, l4.dst_port, l4.seq, l4.ack, l4.flags, l4.window, l4.urg, l4.options, None)
    if type(l4) is UDP and l4.csum != 0:  # a UDP checksum of 0 means "none" and stays so
        return UDP(l4.src_port, l4.dst_port, None, l4.length)
    return l4


# ---------------------------------------------------------------------------
# text helpers

_ICMP_NAMES = {0: "echo-reply", 3: "unreachable", 5: "redirect", 8: "echo-request", 11: "time-exceeded"}
_TCP_FLAG_TEXT = ((TCP_FIN, "F"), (TCP_SYN, "S"), (TCP_RST, "R"), (TCP_PSH, "P"), (TCP_ACK, "."),
                  (TCP_URG, "U"), (TCP_ECE, "E"), (TCP_CWR, "W"))


def _tcp_flags(flags: int) -> str:
    return "".join(c for bit, c in _TCP_FLAG_TEXT if flags & bit) or "none"


def _hexcolon(value: int, width: int) -> str:
    return ":".join(f"{b:02x}" for b in value.to_bytes(width, "big"))


def _dotted(value: int, width: int) -> str:
    return ".".join(str(b) for b in value.to_bytes(width, "big"))


def _arp_ip(arp: Arp, value: int) -> str:
    return _dotted(value, arp.plen)


def _from_hexcolon(text: str) -> int:
    return int.from_bytes(bytes.fromhex(text.replace(":", "")), "big")


def _from_dotted(text: str) -> int:
    return int.from_bytes(bytes(int(x) for x in text.split(".")), "big") if text else 0


_KIND = {Arp: "arp", IPv4: "ipv4", LLDP: "lldp", ICMP: "icmp", TCP: "tcp", UDP: "udp"}
_CLASS = {v: k for k, v in _KIND.items()}
_BYTE_FIELDS = frozenset(("options", "chassis_id", "port_id", "extra_tlvs"))


# How each field of a header class is written: (name, form), forms "" (as it is), "hex" (bytes),
# "ip" (an IPv4 address), "mac"/"dotted" (an ARP address at its declared width). Worked out once per
# class: a trace writes a packet's headers at every hop, and reading the class's fields each time
# cost more than writing them.
_FORMS = {cls: tuple((f.name, "hex" if f.name in _BYTE_FIELDS
                      else "ip" if cls is IPv4 and f.name in ("src", "dst")
                      else "mac" if cls is Arp and f.name in ("sha", "tha")
                      else "dotted" if cls is Arp and f.name in ("spa", "tpa") else "")
                     for f in fields(cls))
          for cls in _KIND}


def _header_to_json(h: Any) -> dict[str, Any]:
    cls = type(h)
    d: dict[str, Any] = {"kind": _KIND[cls]}
    for name, form in _FORMS[cls]:
        value = getattr(h, name)
        if not form:
            d[name] = value
        elif form == "hex":
            d[name] = value.hex()
        elif form == "ip":
            d[name] = int_to_ip(value)
        elif form == "mac":
            d[name] = _hexcolon(value, h.hlen)
        else:
            d[name] = _dotted(value, h.plen)
    return d


def _header_from_json(d: dict[str, Any]) -> Any:
    d = dict(d)
    cls = _CLASS[d.pop("kind")]
    for name in _BYTE_FIELDS.intersection(d):
        d[name] = bytes.fromhex(d[name])
    if cls is IPv4:
        d["src"], d["dst"] = ip_to_int(d["src"]), ip_to_int(d["dst"])
    elif cls is Arp:
        for name in ("sha", "tha"):
            d[name] = _from_hexcolon(d[name])
        for name in ("spa", "tpa"):
            d[name] = _from_dotted(d[name])
    return cls(**d)
