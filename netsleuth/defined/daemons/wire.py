"""Frames and BGP messages as the relay sees them (sans-I/O).

:func:`tcp_of` pulls the IPv4/TCP header fields the relay needs out of an
Ethernet frame; :class:`BgpStream` reassembles one direction of a BGP
session from its TCP segments into whole BGP messages (the relay sees every
segment, in order, because it carries them), and :func:`describe` turns an
UPDATE into the few words a person reads (prefixes, AS path, MED, next hop),
decoded by :mod:`.bgpupdate` (or, for an UPDATE of a form it does not read, os-ken's BGP parser).
"""

from __future__ import annotations

import socket
import struct
import zlib
from dataclasses import dataclass

from netsleuth.defined.daemons import bgpupdate

ETH_IPV4 = 0x0800
PROTO_TCP = 6
BGP_PORT = 179
RIP_PORT = 520
MARKER = b"\xff" * 16
HEADER = 19
TYPES = {1: "OPEN", 2: "UPDATE", 3: "NOTIFICATION", 4: "KEEPALIVE", 5: "ROUTE-REFRESH"}
SYN, FIN, RST = 0x02, 0x01, 0x04


@dataclass(frozen=True, slots=True)
class Segment:
    """The TCP facts of one frame: its flow (src, sport, dst, dport), sequence range, flags, payload."""

    src: str
    sport: int
    dst: str
    dport: int
    seq: int
    ack: int
    flags: int
    payload: bytes

    @property
    def flow(self) -> tuple[str, int, str, int]:
        return (self.src, self.sport, self.dst, self.dport)

    @property
    def bgp(self) -> bool:
        return BGP_PORT in (self.sport, self.dport)

    @property
    def end(self) -> int:
        """Sequence number just after this segment (SYN and FIN take one)."""
        return (self.seq + len(self.payload) + (1 if self.flags & (SYN | FIN) else 0)) & 0xFFFFFFFF


def _csum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def split_segment(frame: bytes, sizes: list[int]) -> list[bytes]:
    """Cut a TCP segment's payload into consecutive pieces of ``sizes`` bytes, one frame each.

    Each piece keeps the headers (options included) with its own sequence
    number, lengths and checksums; a FIN stays on the last piece, PSH is set
    on all. The receiver's TCP sees the same bytes in the same order.
    """
    ihl = (frame[14] & 0x0F) * 4
    t = 14 + ihl
    doff = (frame[t + 12] >> 4) * 4
    head_ip, head_tcp = bytearray(frame[14:t]), bytearray(frame[t: t + doff])
    total = struct.unpack_from("!H", frame, 16)[0]
    payload = frame[t + doff: 14 + total]
    seq = struct.unpack_from("!I", head_tcp, 4)[0]
    flags = head_tcp[13]
    out, pos = [], 0
    for i, n in enumerate(sizes):
        ip, tcp = bytearray(head_ip), bytearray(head_tcp)
        body = payload[pos: pos + n]
        struct.pack_into("!H", ip, 2, ihl + doff + len(body))
        struct.pack_into("!H", ip, 10, 0)
        struct.pack_into("!H", ip, 10, _csum(bytes(ip)))
        struct.pack_into("!I", tcp, 4, (seq + pos) & 0xFFFFFFFF)
        tcp[13] = (flags | 0x08) & ~(FIN if i < len(sizes) - 1 else 0)
        struct.pack_into("!H", tcp, 16, 0)
        pseudo = bytes(ip[12:20]) + struct.pack("!BBH", 0, PROTO_TCP, doff + len(body))
        struct.pack_into("!H", tcp, 16, _csum(pseudo + bytes(tcp) + body))
        out.append(frame[:14] + bytes(ip) + bytes(tcp) + body)
        pos += n
    return out


def _ip(b: bytes) -> str:
    return socket.inet_ntoa(b)


def tcp_of(frame: bytes) -> Segment | None:
    """The TCP segment an untagged Ethernet/IPv4 frame carries, or None."""
    if len(frame) < 34 or struct.unpack_from("!H", frame, 12)[0] != ETH_IPV4:
        return None
    ihl = (frame[14] & 0x0F) * 4
    if frame[23] != PROTO_TCP or len(frame) < 14 + ihl + 20:
        return None
    total = struct.unpack_from("!H", frame, 16)[0]
    t = 14 + ihl
    sport, dport, seq, ack, off_flags = struct.unpack_from("!HHIIH", frame, t)
    doff = (off_flags >> 12) * 4
    payload = frame[t + doff: 14 + total]
    return Segment(_ip(frame[26:30]), sport, _ip(frame[30:34]), dport, seq, ack, off_flags & 0x3F, payload)


def is_rip(frame: bytes) -> bool:
    """An IPv4/UDP frame to or from RIP's port 520."""
    if len(frame) < 38 or struct.unpack_from("!H", frame, 12)[0] != ETH_IPV4 or frame[23] != 17:
        return False
    t = 14 + (frame[14] & 0x0F) * 4
    return len(frame) >= t + 4 and RIP_PORT in struct.unpack_from("!HH", frame, t)


PROTO_OSPF = 89
OSPF_TYPES = {1: "Hello", 2: "DD", 3: "LSR", 4: "LSU", 5: "LSAck"}


def is_ospf(frame: bytes) -> bool:
    """An IPv4 frame carrying OSPF (IP protocol 89)."""
    return len(frame) >= 34 and struct.unpack_from("!H", frame, 12)[0] == ETH_IPV4 and frame[23] == PROTO_OSPF


def is_datagram(frame: bytes) -> bool:
    """A routing message with no transport to acknowledge it: RIP or OSPF."""
    return is_rip(frame) or is_ospf(frame)


def describe_ospf(frame: bytes) -> dict:
    """An OSPF packet as a small dict: its kind, sender's router id, LSAs carried, and a digest of the bytes.

    The digest (CRC-32 of the OSPF packet) lets two runs compare what was delivered, not just to whom.
    """
    t = 14 + (frame[14] & 0x0F) * 4
    body = frame[t:]
    if len(body) < 24:
        return {"type": "OSPF"}
    kind = OSPF_TYPES.get(body[1], str(body[1]))
    out: dict = {"type": "OSPF", "kind": kind, "router": _ip(body[4:8]),
                 "digest": f"{zlib.crc32(body[:struct.unpack_from('!H', body, 2)[0]]):08x}"}
    if kind == "LSU" and len(body) >= 28:
        out["lsas"] = struct.unpack_from("!I", body, 24)[0]
    return out


def datagram_flow(frame: bytes) -> tuple[str, int, str, int]:
    """The (src, sport, dst, dport) of a RIP or OSPF frame (ports 0 for OSPF)."""
    if is_ospf(frame):
        return (_ip(frame[26:30]), 0, _ip(frame[30:34]), 0)
    return rip_flow(frame)


def describe_datagram(frame: bytes) -> dict:
    return describe_ospf(frame) if is_ospf(frame) else describe_rip(frame)


def rip_flow(frame: bytes) -> tuple[str, int, str, int]:
    """The (src, sport, dst, dport) of a RIP frame (is_rip must hold)."""
    t = 14 + (frame[14] & 0x0F) * 4
    sport, dport = struct.unpack_from("!HH", frame, t)
    return (_ip(frame[26:30]), sport, _ip(frame[30:34]), dport)


def describe_rip(frame: bytes) -> dict:
    """A RIP message as a small dict: request or response, and its (prefix, metric) entries."""
    t = 14 + (frame[14] & 0x0F) * 4 + 8
    body = frame[t:]
    if len(body) < 4:
        return {"type": "RIP"}
    out: dict = {"type": "RIP", "command": {1: "request", 2: "response"}.get(body[0], str(body[0])),
                 "version": body[1], "entries": []}
    for i in range(4, len(body) - 19, 20):
        afi, _tag, addr, mask, _nh, metric = struct.unpack_from("!HH4s4s4sI", body, i)
        if afi == 0 and metric == 16:
            out["entries"].append(["*", 16])   # a request for the whole table
            continue
        plen = bin(int.from_bytes(mask, "big")).count("1")
        out["entries"].append([f"{_ip(addr)}/{plen}", metric])
    return out


def seq_after(a: int, b: int) -> bool:
    """a comes after b in TCP's 32-bit sequence space."""
    return 0 < ((a - b) & 0xFFFFFFFF) < 0x80000000


class BgpStream:
    """One direction of a BGP session: bytes in by sequence number, messages out.

    ``feed(seg)`` returns the message types whose header starts in this
    segment's new bytes (what the relay decides on) and keeps whole
    messages in ``messages``. Retransmitted bytes are ignored.
    """

    def __init__(self) -> None:
        self.next_seq: int | None = None
        self.buf = b""
        self.messages: list[bytes] = []

    def aligned(self, seg: Segment) -> bool:
        """This segment brings new bytes that begin exactly at a message boundary."""
        return self.next_seq == seg.seq and not self.buf and bool(seg.payload)

    def feed(self, seg: Segment) -> list[tuple[int, bytes | None]]:
        """Take a segment's new bytes; return (type, whole message or None) for each message starting in them.

        The type is -1 when not even the header's type byte has arrived yet.
        """
        if seg.flags & SYN:
            self.next_seq = (seg.seq + 1) & 0xFFFFFFFF
            return []
        if self.next_seq is None or not seg.payload:
            return []
        skip = (self.next_seq - seg.seq) & 0xFFFFFFFF
        if skip >= len(seg.payload):
            return []   # a retransmission of bytes already seen
        data = seg.payload[skip:]
        self.next_seq = (self.next_seq + len(data)) & 0xFFFFFFFF
        start = len(self.buf)
        self.buf += data
        starts: list[tuple[int, bytes | None]] = []
        pos = 0
        while pos < len(self.buf):
            here = pos >= start   # this message's header begins in this segment
            if len(self.buf) - pos < HEADER:
                if here:
                    starts.append((self.buf[pos + 18] if len(self.buf) - pos > 18 else -1, None))
                break
            length = struct.unpack_from("!H", self.buf, pos + 16)[0]
            if length < HEADER:   # not BGP framing: stop reading this stream
                self.buf, pos = b"", 0
                break
            whole = self.buf[pos: pos + length] if len(self.buf) - pos >= length else None
            if here:
                starts.append((self.buf[pos + 18], whole))
            if whole is None:
                break
            self.messages.append(whole)
            pos += length
        self.buf = self.buf[pos:]
        return starts

    def take(self) -> list[bytes]:
        out, self.messages = self.messages, []
        return out


def is_eor(msg: bytes) -> bool:
    """An UPDATE with no withdrawn routes, no attributes and no NLRI: End-of-RIB."""
    return len(msg) == 23 and msg[18] == 2


def describe(msg: bytes) -> dict:
    """A BGP message as a small dict: type, and for an UPDATE its prefixes and attributes.

    An UPDATE made of the common attributes only is decoded by :mod:`.bgpupdate` (the relay
    then never imports os-ken, a third of a second per run); any other goes to os-ken's parser.
    """
    kind = TYPES.get(msg[18], str(msg[18])) if len(msg) >= HEADER else "?"
    out: dict = {"type": kind}
    if kind != "UPDATE":
        return out
    if is_eor(msg):
        out["eor"] = True
        return out
    fast = bgpupdate.decode(msg)
    out.update(fast if fast is not None else describe_with_os_ken(msg))
    return out


def describe_with_os_ken(msg: bytes) -> dict:
    """An UPDATE's words as os-ken's parser reads it: what :mod:`.bgpupdate` must agree with."""
    from os_ken.lib.packet import bgp

    try:
        m = bgp.BGPMessage.parser(msg)[0]
    except Exception as exc:  # a daemon sent bytes os-ken cannot read: show that, do not stop the run
        return {"unparsed": f"{type(exc).__name__}"}
    out: dict = {"nlri": [f"{p.prefix}" for p in m.nlri], "withdrawn": [f"{p.prefix}" for p in m.withdrawn_routes]}
    for a in m.path_attributes:
        if isinstance(a, bgp.BGPPathAttributeAsPath):
            out["as_path"] = [x for seg in a.value for x in (seg if isinstance(seg, list) else sorted(seg))]
        elif isinstance(a, bgp.BGPPathAttributeMultiExitDisc):
            out["med"] = a.value
        elif isinstance(a, bgp.BGPPathAttributeNextHop):
            out["next_hop"] = a.value
    return out
