"""The relay's logic (sans-I/O): frames in, frames to send and events out.

Every link is two veths whose middle ends the relay holds; a frame read on
one end goes out the other. BGP is where delivery order matters, so while
``hold`` is on, a TCP segment that begins a BGP UPDATE (other than an
End-of-RIB marker) is not forwarded: it becomes a *unit*, a DEFINED message
the controller releases when the ordering function says so. A segment
that carries several whole BGP messages is first cut into one segment per
message (:func:`~.wire.split_segment`: same bytes, own sequence number and
checksums), so a KEEPALIVE never waits behind an UPDATE and each UPDATE is
a unit of its own. A segment that begins or ends inside a message is held
whole, with every message that starts in it (a first version: with UPDATEs
far below the MTU this does not happen in the scenarios here).

Within one TCP flow delivery stays FIFO: once a unit is held, everything
later on that flow (keepalives, acknowledgements, further UPDATEs) queues
behind it; retransmissions of queued bytes are dropped rather than queued
twice. Other flows and non-TCP frames (ARP, RIP, OSPF) pass straight
through. A unit is *acked* when the receiver's acknowledgement covers it:
the bytes are in the receiving daemon's socket, the first of the two facts
the controller waits for before the next delivery (the second, that the
daemon has read and processed them, comes from its control socket).
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

from netsleuth.defined.daemons.wire import (
    FIN,
    RST,
    BgpStream,
    Segment,
    datagram_flow,
    describe,
    describe_datagram,
    is_datagram,
    is_eor,
    is_rip,
    seq_after,
    split_segment,
    tcp_of,
)

UPDATE = 2
ACK = 0x10


@dataclass
class Unit:
    """One held segment: the DEFINED message the controller orders."""

    id: int
    src: str                 # sending router
    dst: str                 # receiving router
    flow: tuple                # the TCP flow, or ("dgram", relay interface, "", 0)
    end: int                 # sequence number just after the segment
    arrival: int             # arrival index among all units (arrival order = what the daemons would see)
    messages: list[dict] = field(default_factory=list)
    state: str = "held"      # held -> released -> acked

    def to_json(self) -> dict:
        return {"id": self.id, "src": self.src, "dst": self.dst, "arrival": self.arrival,
                "messages": self.messages, "state": self.state}


@dataclass
class _Queued:
    out: str
    frame: bytes
    seg: Segment
    unit: Unit | None


class RelayCore:
    """Frame forwarding between link ends, holding BGP UPDATE segments as units.

    ``ends``: relay interface -> (the interface at the other end of the link, router reached through it).
    ``owner``: router interface address -> router name (to name a unit's sender and receiver).
    """

    def __init__(self, ends: dict[str, tuple[str, str]], owner: dict[str, str], hold: bool = True,
                 hold_datagrams: bool = False) -> None:
        self.ends = ends
        self.owner = owner
        self.hold = hold
        self.hold_datagrams = hold_datagrams
        self.down: set[str] = set()       # relay interfaces of links that are cut: frames on them are lost
        self.lost = 0
        self.streams: dict[tuple, BgpStream] = {}
        self.queues: dict[tuple, collections.deque[_Queued]] = {}
        self.units: dict[int, Unit] = {}
        self.events: list[dict] = []
        self.frames = 0
        self.rip: dict[str, int] = {}     # "src>dst" -> RIP frames carried (when a router last heard a neighbour)

    def _stream(self, flow: tuple) -> BgpStream:
        s = self.streams.get(flow)
        if s is None:
            s = self.streams[flow] = BgpStream()
        return s

    def on_frame(self, iface: str, frame: bytes) -> list[tuple[str, bytes]]:
        """A frame read on relay interface ``iface``: what to send now, as (interface, frame)."""
        self.frames += 1
        out = self.ends[iface][0]
        if iface in self.down or out in self.down:
            self.lost += 1
            return []
        seg = tcp_of(frame)
        if seg is None or not seg.bgp:
            if is_datagram(frame):
                src, dst = self.ends[out][1], self.ends[iface][1]
                if is_rip(frame):
                    key = f"{src}>{dst}"
                    self.rip[key] = self.rip.get(key, 0) + 1
                if self.hold_datagrams:
                    return self._hold_datagram(iface, out, frame, src, dst)
            return [(out, frame)]
        self._acks(seg)
        flushed = self._closing(seg) if seg.flags & (FIN | RST) else []
        return flushed + self._bgp_frame(out, frame, seg)

    def _closing(self, seg: Segment) -> list[tuple[str, bytes]]:
        """A BGP connection closes: what is held on it will never be read, so it is let go.

        A daemon closes a session's socket whole (BGP never half-closes), so a FIN or RST
        from the receiver of held units, or an RST from their sender, means the receiver
        will not process them: the session is gone, and the daemons announce again on the
        next one (two speakers that connect at once keep one connection and close the other).
        Each such unit gets a "reset" event instead of staying pending for ever, and the
        flow's queue goes out as it stands, so both ends see the connection end.
        """
        rev = (seg.dst, seg.dport, seg.src, seg.sport)
        flows = [rev, seg.flow] if seg.flags & RST else [rev]
        sent: list[tuple[str, bytes]] = []
        for flow in flows:
            q = self.queues.pop(flow, None)
            for x in q or ():
                if x.unit is not None and x.unit.state == "held":
                    x.unit.state = "reset"
                    self.events.append({"ev": "reset", "id": x.unit.id})
                sent.append((x.out, x.frame))
        return sent

    def _bgp_frame(self, out: str, frame: bytes, seg: Segment) -> list[tuple[str, bytes]]:
        q = self.queues.get(seg.flow)
        stream = self._stream(seg.flow)
        aligned = stream.aligned(seg)
        old = bool(seg.payload) and stream.next_seq is not None and not seq_after(seg.end, stream.next_seq)
        starts = stream.feed(seg)
        if q and old:
            return []   # a retransmission while the flow is held: the queued copies carry these bytes
        if self.hold and aligned and len(starts) > 1 and not stream.buf and \
                any(t == UPDATE for t, _ in starts) and all(m is not None for _, m in starts):
            # several whole BGP messages in one segment: one segment each, so that a KEEPALIVE
            # is not held behind an UPDATE and every UPDATE is a DEFINED message of its own
            sent: list[tuple[str, bytes]] = []
            for (t, m), piece in zip(starts, split_segment(frame, [len(m or b"") for _, m in starts]), strict=True):
                ps = tcp_of(piece)
                assert ps is not None
                sent += self._place(out, piece, ps, [(t, m)])
            return sent
        return self._place(out, frame, seg, starts)

    def _place(self, out: str, frame: bytes, seg: Segment, starts: list[tuple[int, bytes | None]]
               ) -> list[tuple[str, bytes]]:
        q = self.queues.get(seg.flow)
        unit = self._unit(seg, starts) if self.hold else None
        if unit is None and not q:
            return [(out, frame)]
        self.queues.setdefault(seg.flow, collections.deque()).append(_Queued(out, frame, seg, unit))
        return []

    def _unit(self, seg: Segment, starts: list[tuple[int, bytes | None]]) -> Unit | None:
        updates = [m for t, m in starts if t in (UPDATE, -1)]
        if not updates or all(m is not None and is_eor(m) for m in updates):
            return None
        u = Unit(len(self.units) + 1, self.owner.get(seg.src, seg.src), self.owner.get(seg.dst, seg.dst),
                 seg.flow, seg.end, len(self.units),
                 [describe(m) for _, m in starts if m is not None])
        self.units[u.id] = u
        self.events.append({"ev": "held", "unit": u.to_json()})
        return u

    def _hold_datagram(self, iface: str, out: str, frame: bytes, src: str, dst: str) -> list[tuple[str, bytes]]:
        """Every RIP or OSPF frame is a unit of its own, FIFO per link direction (nothing acknowledges it)."""
        flow = ("dgram", iface, "", 0)
        u = Unit(len(self.units) + 1, src, dst, flow, 0, len(self.units), [describe_datagram(frame)])
        self.units[u.id] = u
        self.events.append({"ev": "held", "unit": u.to_json()})
        seg = Segment(*datagram_flow(frame), 0, 0, 0, b"")
        self.queues.setdefault(flow, collections.deque()).append(_Queued(out, frame, seg, u))
        return []

    def _acks(self, seg: Segment) -> None:
        if not seg.flags & ACK:
            return
        rev = (seg.dst, seg.dport, seg.src, seg.sport)
        for u in self.units.values():
            if u.state == "released" and u.flow == rev and not seq_after(u.end, seg.ack):
                u.state = "acked"
                self.events.append({"ev": "acked", "id": u.id})

    def release(self, uid: int) -> list[tuple[str, bytes]]:
        """Deliver unit ``uid``: its flow's queue up to and including it, then up to the next held unit."""
        u = self.units.get(uid)
        if u is None or u.state != "held":
            return []
        q = self.queues.get(u.flow, collections.deque())
        sent: list[tuple[str, bytes]] = []
        done = False
        while q:
            x = q[0]
            if x.unit is not None and x.unit.state == "held":
                if done:
                    break
                x.unit.state = "released"
                self.events.append({"ev": "released", "id": x.unit.id})
                done = x.unit is u
            q.popleft()
            sent.append((x.out, x.frame))
        return sent

    def set_link(self, ifaces: list[str], up: bool) -> None:
        """Cut (``up`` false) or mend the link whose relay interfaces are ``ifaces``.

        A cut link loses every frame, as a broken wire does: what it held is dropped (a "dropped"
        event per unit), and nothing reaches either end until it is mended. The routers' own
        interfaces stay up, so they notice only when their protocol's timers say so.
        """
        if up:
            self.down -= set(ifaces)
            return
        self.down |= set(ifaces)
        for flow, q in self.queues.items():
            keep: collections.deque[_Queued] = collections.deque()
            for x in q:
                if x.out not in self.down:
                    keep.append(x)
                    continue
                if x.unit is not None and x.unit.state == "held":
                    x.unit.state = "dropped"
                    self.events.append({"ev": "dropped", "id": x.unit.id})
            self.queues[flow] = keep

    def set_hold(self, on: bool) -> list[tuple[str, bytes]]:
        """Turn holding on or off; turning it off releases everything held, in arrival order."""
        self.hold = on
        sent: list[tuple[str, bytes]] = []
        if not on:
            for u in sorted(self.units.values(), key=lambda u: u.arrival):
                sent += self.release(u.id)
        return sent

    def dump(self) -> dict:
        """What the relay holds, for an error report: units by state, queue lengths per flow."""
        return {"units": {u.id: f"{u.src}->{u.dst} {u.state}" for u in self.units.values()},
                "queues": {" ".join(map(str, f)): len(q) for f, q in self.queues.items() if q}}

    def take_events(self) -> list[dict]:
        out, self.events = self.events, []
        return out
