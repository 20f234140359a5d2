"""Export a trace's control channel (and optionally its dataplane) as a pcap.

Why: Wireshark/tshark are what network engineers already use to read
OpenFlow, and an independent dissector is also the best check that netsleuth
records (and re-encodes) the messages it claims to. The trace stores each
message as decoded JSON; :func:`netsleuth.openflow.codec.msg_from_json` and
:func:`~netsleuth.openflow.codec.encode` give back its bytes in the version
the JSON names (OpenFlow 1.0 when it names none, 1.3 for ``"version": 4``),
so tshark shows them as ``openflow_v1`` or ``openflow_v4``.

The recording has no TCP, so the framing is synthetic but consistent, so
that tshark's TCP reassembly and OpenFlow dissector accept it as a real
capture:

* one TCP stream per recorded connection (``conn``): the switch is the TCP
  client (as in OpenFlow), the controller listens on 6653; a three-way
  handshake opens it at its first message and FIN/ACKs close it at its
  ``switch_disconnected`` event;
* sequence and acknowledgement numbers advance by the bytes each side sent,
  and messages longer than one MSS are split over several segments;
* IPv4 and TCP checksums are correct; timestamps are the trace's ``t``.

Dataplane packets (``--dataplane``) are the recorded ``packet`` hops, as the
Ethernet frames they were, each once per switch/host port it arrived at.

Sans-I/O: :func:`build_pcap` returns bytes; the CLI writes them.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

from netsleuth.errors import TraceFormatError
from netsleuth.model.packet import Packet, internet_checksum
from netsleuth.openflow.codec import encode, json_version, msg_from_json, version_name
from netsleuth.trace import schema as ts

OPENFLOW_PORT = 6653
MSS = 1448
_PCAP_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1)  # LINKTYPE_ETHERNET
_RECORD = struct.Struct("<IIII")
_IP = struct.Struct("!BBHHHBBH4s4s")
_TCP = struct.Struct("!HHIIBBHHH")
_PSEUDO = struct.Struct("!4s4sBBH")
SYN, FIN, PSH, ACK = 0x02, 0x01, 0x08, 0x10


@dataclass
class _Stream:
    """One synthetic TCP connection: the switch's and the controller's side."""

    sw_ip: bytes
    sw_mac: bytes
    sw_port: int
    ctl_ip: bytes
    ctl_mac: bytes
    sw_seq: int = 1000
    ctl_seq: int = 5000
    open: bool = True


@dataclass
class PcapExport:
    """The pcap bytes plus what went into them (for the summary and for tests)."""

    data: bytes
    frames: int
    streams: int
    messages: dict[str, int] = field(default_factory=dict)   # OpenFlow type -> count, in trace order
    packets: int = 0                                         # dataplane frames
    skipped: list[str] = field(default_factory=list)         # messages that could not be re-encoded
    versions: dict[str, int] = field(default_factory=dict)   # OpenFlow version ("1.0", "1.3") -> messages

    def to_json(self) -> dict:
        return {"frames": self.frames, "streams": self.streams, "messages": dict(self.messages),
                "versions": dict(self.versions),
                "of_messages": sum(self.messages.values()), "dataplane_frames": self.packets,
                "bytes": len(self.data), "skipped": list(self.skipped)}


class _Writer:
    def __init__(self) -> None:
        self.chunks: list[bytes] = [_PCAP_HEADER]
        self.frames = 0
        self.ip_id = 0

    def frame(self, t: float, data: bytes) -> None:
        usec_total = int(round(max(t, 0.0) * 1_000_000))
        sec, usec = divmod(usec_total, 1_000_000)
        self.chunks.append(_RECORD.pack(sec, usec, len(data), len(data)) + data)
        self.frames += 1

    def tcp(self, t: float, src_mac: bytes, dst_mac: bytes, src_ip: bytes, dst_ip: bytes, sport: int,
            dport: int, seq: int, ack: int, flags: int, payload: bytes = b"") -> None:
        header = _TCP.pack(sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0)
        csum = internet_checksum(_PSEUDO.pack(src_ip, dst_ip, 0, 6, len(header) + len(payload)) + header + payload)
        segment = header[:16] + struct.pack("!H", csum) + header[18:] + payload
        self.ip_id = (self.ip_id + 1) & 0xFFFF
        ip = _IP.pack(0x45, 0, 20 + len(segment), self.ip_id, 0x4000, 64, 6, 0, src_ip, dst_ip)
        ip = ip[:10] + struct.pack("!H", internet_checksum(ip)) + ip[12:]
        self.frame(t, dst_mac + src_mac + b"\x08\x00" + ip + segment)


def _addr(prefix: int, index: int) -> tuple[bytes, bytes]:
    """(IPv4, MAC) for the index-th controller (prefix 1) or switch (prefix 2)."""
    ip = bytes((172, 16 + prefix, (index >> 8) & 0xFF, index & 0xFF))
    mac = bytes((0x02, 0x4E, 0x53, prefix, (index >> 8) & 0xFF, index & 0xFF))  # locally administered
    return ip, mac


def build_pcap(events: Iterable[ts.Event], *, dataplane: bool = False) -> PcapExport:
    """The pcap (LINKTYPE_ETHERNET, microsecond timestamps) of a trace's events, in trace order."""
    w = _Writer()
    streams: dict[int, _Stream] = {}
    controllers: dict[str, int] = {}
    switches: dict[int, int] = {}
    messages: dict[str, int] = {}
    versions: dict[str, int] = {}
    skipped: list[str] = []
    packets = 0
    for e in events:
        if isinstance(e, (ts.ControlToSwitch, ts.ControlToController)):
            try:
                version = version_name(json_version(e.msg))
                data = encode(msg_from_json(e.msg))
            except Exception as exc:  # noqa: BLE001 -- any codec failure: report the message, keep going
                skipped.append(f"seq {e.seq}: {e.msg.get('type', '?')}: {exc}")
                continue
            s = streams.get(e.conn)
            if s is None or not s.open:
                s = streams[e.conn] = _open_stream(w, e, controllers, switches)
            _send(w, s, e.t, data, from_switch=isinstance(e, ts.ControlToController))
            mtype = e.msg.get("type", "?")
            messages[mtype] = messages.get(mtype, 0) + 1
            versions[version] = versions.get(version, 0) + 1
        elif isinstance(e, ts.SwitchDisconnected):
            s = streams.get(e.conn)
            if s is not None and s.open:
                _close(w, s, e.t)
        elif dataplane and isinstance(e, ts.PacketArrival):
            try:
                frame = Packet.from_json(e.packet).to_bytes()
            except Exception as exc:  # noqa: BLE001
                raise TraceFormatError(f"event {e.seq}: the recorded packet cannot be rebuilt ({exc})",
                                       "re-record the trace, or export without --dataplane") from None
            w.frame(e.t, frame)
            packets += 1
    return PcapExport(b"".join(w.chunks), w.frames, len(streams), messages, packets, skipped, versions)


def _open_stream(w: _Writer, e: ts.ControlToSwitch | ts.ControlToController,
                 controllers: dict[str, int], switches: dict[int, int]) -> _Stream:
    ctl_ip, ctl_mac = _addr(1, controllers.setdefault(e.controller, len(controllers) + 1))
    sw_ip, sw_mac = _addr(2, switches.setdefault(e.dpid, len(switches) + 1))
    s = _Stream(sw_ip, sw_mac, 40000 + e.conn % 20000, ctl_ip, ctl_mac)
    # The handshake: SYN and SYN-ACK each take one sequence number.
    w.tcp(e.t, s.sw_mac, s.ctl_mac, s.sw_ip, s.ctl_ip, s.sw_port, OPENFLOW_PORT, s.sw_seq, 0, SYN)
    w.tcp(e.t, s.ctl_mac, s.sw_mac, s.ctl_ip, s.sw_ip, OPENFLOW_PORT, s.sw_port, s.ctl_seq, s.sw_seq + 1, SYN | ACK)
    s.sw_seq += 1
    s.ctl_seq += 1
    w.tcp(e.t, s.sw_mac, s.ctl_mac, s.sw_ip, s.ctl_ip, s.sw_port, OPENFLOW_PORT, s.sw_seq, s.ctl_seq, ACK)
    return s


def _send(w: _Writer, s: _Stream, t: float, data: bytes, *, from_switch: bool) -> None:
    for i in range(0, len(data), MSS):
        chunk = data[i:i + MSS]
        if from_switch:
            w.tcp(t, s.sw_mac, s.ctl_mac, s.sw_ip, s.ctl_ip, s.sw_port, OPENFLOW_PORT, s.sw_seq, s.ctl_seq,
                  PSH | ACK, chunk)
            s.sw_seq += len(chunk)
        else:
            w.tcp(t, s.ctl_mac, s.sw_mac, s.ctl_ip, s.sw_ip, OPENFLOW_PORT, s.sw_port, s.ctl_seq, s.sw_seq,
                  PSH | ACK, chunk)
            s.ctl_seq += len(chunk)


def _close(w: _Writer, s: _Stream, t: float) -> None:
    w.tcp(t, s.sw_mac, s.ctl_mac, s.sw_ip, s.ctl_ip, s.sw_port, OPENFLOW_PORT, s.sw_seq, s.ctl_seq, FIN | ACK)
    s.sw_seq += 1
    w.tcp(t, s.ctl_mac, s.sw_mac, s.ctl_ip, s.sw_ip, OPENFLOW_PORT, s.sw_port, s.ctl_seq, s.sw_seq, FIN | ACK)
    s.ctl_seq += 1
    w.tcp(t, s.sw_mac, s.ctl_mac, s.sw_ip, s.ctl_ip, s.sw_port, OPENFLOW_PORT, s.sw_seq, s.ctl_seq, ACK)
    s.open = False


__all__ = ["OPENFLOW_PORT", "PcapExport", "build_pcap"]
