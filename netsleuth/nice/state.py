"""The model checker's system state: canonical, hashable, copy-on-write.

A :class:`SystemState` is never mutated once it has been reached.  Firing a
transition makes a child that *shares* every component with its parent and
copies only the components the transition writes (one switch, one host, the
app, ...); the parent stays on the DFS stack untouched.  That replaces NICE's
deep copy of the whole system per state (most of its running time).

Components cache their canonical key; the state's key is the tuple of those
keys, so hashing a new state costs only the components that changed.  The
key holds everything that can affect the future -- flow tables in canonical
order, switch buffers, every queued packet and every queued control message
in both directions (NICE's hash dropped the command queues), host and app
state, property state -- and nothing that cannot: packet and byte counters
unless the app reads statistics, buffer ids are small (lowest free id, as a
real switch's buffer pool), and packets carry no global packet ids.

The switch is the model's sans-I/O :class:`~netsleuth.model.switch.Switch`;
:class:`MCSwitch` only adds copying and a canonical key, allocates the
lowest free buffer id, and buffers every PACKET_IN like Open vSwitch (the
base class buffers only truncated ones), handing the controller a light
:class:`~netsleuth.nice.messages.PacketIn` instead of an os-ken object.
"""

from __future__ import annotations

from typing import Any

from netsleuth.model import switch as sw
from netsleuth.model.host import Host
from netsleuth.model.packet import Packet
from netsleuth.nice import messages as m
from netsleuth.nice.state13 import copy13, key13


class _NoRecent:
    """Stands in for the switch's packet_in-data -> lineage cache.

    The base switch uses it to continue a packet's lineage when a PACKET_OUT
    carries bytes instead of a buffer id.  In the model checker that cache
    would be unhashed state steering the future, so it is disabled: such a
    packet is a new packet (lineage None).
    """

    __slots__ = ()

    def __setitem__(self, k: Any, v: Any) -> None:
        pass

    def get(self, k: Any, default: Any = None) -> Any:
        return default

    def __len__(self) -> int:
        return 0


_NO_RECENT = _NoRecent()
_TRUNC: dict[tuple[Packet, int], Packet] = {}


def truncated(packet: Packet, max_len: int) -> Packet:
    """What a controller sees of ``packet`` when the switch sends ``max_len`` bytes."""
    if max_len >= packet.frame_len():
        return packet
    key = (packet, max_len)
    p = _TRUNC.get(key)
    if p is None:
        p = Packet.from_bytes(packet.to_bytes()[:max_len])
        if len(_TRUNC) > 50_000:
            _TRUNC.clear()
        _TRUNC[key] = p
    return p


class MCSwitch(sw.Switch):
    """The model's switch with cheap copies and a canonical key (see the module docstring)."""

    with_counters = False  # set per switch by the System: True when the app reads statistics

    def __init__(self, dpid: int, ports: Any, *, name: str = "", n_buffers: int = sw.DEFAULT_BUFFERS) -> None:
        super().__init__(dpid, ports, name=name, n_buffers=n_buffers)
        self._recent_in = _NO_RECENT  # type: ignore[assignment]  # a stand-in that remembers nothing
        self._key: tuple | None = None

    def copy(self, *, table: bool, ports: bool) -> MCSwitch:
        """A copy sharing what the caller promises not to mutate (the table and ports unless asked)."""
        new = object.__new__(MCSwitch)
        d = new.__dict__
        d.update(self.__dict__)
        new.buffers = dict(self.buffers)
        if table:
            new.table = self.table.copy()
        if ports:
            new.ports = {n: p.copy() for n, p in self.ports.items()}
        if self.of13 is not None:  # an OpenFlow 1.3 switch: its pipeline is the table (state13.py)
            new.of13 = copy13(self.of13, new, table=table)
        new._key = None
        return new

    def key(self) -> tuple:
        k = self._key
        if k is None:
            wc = self.with_counters
            bufs = tuple(sorted((i, b.packet, b.in_port, b.tag) for i, b in self.buffers.items()))
            if wc:
                ports: tuple[tuple[int, ...], ...] = tuple((p.port_no, p.link_up, p.config, p.counters.rx_packets,
                                                            p.counters.tx_packets,
                               p.counters.rx_bytes, p.counters.tx_bytes, p.counters.rx_dropped,
                               p.counters.tx_dropped) for p in self.ports.values())
            else:
                ports = tuple((p.port_no, p.link_up, p.config) for p in self.ports.values())
            k = (self.table.canonical_key(with_counters=wc), bufs, ports, self.miss_send_len, self.config_flags)
            if wc:
                k += (self.lookup_count, self.matched_count)
            if self.of13 is not None:
                k += (key13(self.of13, wc),)
            self._key = k
        return k

    # --- OVS-like buffering: every PACKET_IN is buffered while buffers last.
    def _packet_in(self, packet: Packet, in_port: int, tag: Any, reason: int, max_len: int) -> sw.ToController:
        buffer_id = m.NO_BUFFER
        if self.n_buffers:
            buffer_id = self._buffer(packet, in_port, tag)
        view = truncated(packet, max_len) if buffer_id != m.NO_BUFFER else packet
        return sw.ToController(None, m.PacketIn(buffer_id, packet.frame_len(), in_port, reason, view, tag))

    def _buffer(self, packet: Packet, in_port: int, tag: Any) -> int:
        bufs = self.buffers
        if len(bufs) >= self.n_buffers:
            del bufs[min(bufs)]
        i = 0
        while i in bufs:
            i += 1
        bufs[i] = sw.Buffered(packet, in_port, tag)
        return i


class HostState:
    """An end host of the model: the model's :class:`Host` plus the client/server program around it.

    ``to_send``: pings this host still has to start (the client's send
    transition); ``outbox``: frames the host produced (replies) waiting for
    its send transition; ``credits``: PKT-SEQ's burst counter (None: no bound).
    ``sent``: how many frames of each content this host sent, to name packets
    for the properties without a global packet counter.
    """

    __slots__ = ("host", "location", "to_send", "next_seq", "outbox", "credits", "sent", "moves_left",
                 "replies_sent", "_key")

    def __init__(self, host: Host, location: tuple[str, int]) -> None:
        self.host = host
        self.location = location
        self.to_send: tuple = ()          # (dst host name, ...) one per ping left
        self.next_seq = 1
        self.outbox: tuple = ()
        self.credits: int | None = None
        self.sent: frozenset = frozenset()  # {(frame, count)}
        self.moves_left: tuple = ()       # ((switch, port), ...) where the host will move next
        self.replies_sent = 0
        self._key: tuple | None = None

    def copy(self) -> HostState:
        new = object.__new__(HostState)
        new.host = self.host.copy()
        new.location = self.location
        new.to_send = self.to_send
        new.next_seq = self.next_seq
        new.outbox = self.outbox
        new.credits = self.credits
        new.sent = self.sent
        new.moves_left = self.moves_left
        new.replies_sent = self.replies_sent
        new._key = None
        return new

    def key(self) -> tuple:
        k = self._key
        if k is None:
            h = self.host
            # ``received`` only counts frames; nothing reads it, so it is not state.
            k = (self.location, self.to_send, self.next_seq, self.outbox, self.credits, self.sent,
                 self.moves_left, self.replies_sent, tuple(sorted(h.arp_cache.items())),
                 tuple(sorted((ip, tuple(v)) for ip, v in h.pending.items())), tuple(sorted(h.echo_replies)))
            self._key = k
        return k


class SystemState:
    """One global state; see the module docstring.  Treat a reached state as immutable."""

    __slots__ = ("switches", "hosts", "inq", "to_ctrl", "to_sw", "app", "appkey", "props", "timers", "extra",
                 "_key", "_hash")

    def __init__(self) -> None:
        self.switches: list[MCSwitch] = []
        self.hosts: list[HostState] = []
        self.inq: dict[tuple[str, int], tuple] = {}    # (node, port) -> ((packet, tag), ...) arriving there
        self.to_ctrl: list[tuple] = []                  # per switch index: messages for the controller
        self.to_sw: list[tuple] = []                    # per switch index: messages for the switch
        self.app: Any = None
        self.appkey: Any = None                         # cached app.key(); None when the app changed
        self.props: tuple = ()
        self.timers: tuple = ()                         # sorted timer names posted by the app
        self.extra: tuple = ()                          # strategy state (UNUSUAL's issue order)
        self._key: tuple | None = None
        self._hash: int | None = None

    def child(self) -> SystemState:
        """A new state sharing every component (the caller replaces what it changes)."""
        c = object.__new__(SystemState)
        c.switches = list(self.switches)
        c.hosts = list(self.hosts)
        c.inq = dict(self.inq)
        c.to_ctrl = list(self.to_ctrl)
        c.to_sw = list(self.to_sw)
        c.app = self.app
        c.appkey = self.appkey
        c.props = self.props
        c.timers = self.timers
        c.extra = self.extra
        c._key = None
        c._hash = None
        return c

    def key(self) -> tuple:
        k = self._key
        if k is None:
            inq = tuple(sorted(item for item in self.inq.items() if item[1]))
            ak = self.appkey
            if ak is None:
                ak = self.appkey = self.app.key()
            k = (tuple(s.key() for s in self.switches), tuple(h.key() for h in self.hosts), inq,
                 tuple(self.to_ctrl), tuple(self.to_sw), ak, self.props, self.timers, self.extra)
            self._key = k
        return k

    def hash(self) -> int:
        h = self._hash
        if h is None:
            h = self._hash = hash(self.key())
        return h


def pids_in_flight(st: SystemState, host: str) -> frozenset:
    """Packet ids of frames ``host`` sent that are still in the network: on wires, in switch buffers,
    queued for the controller or, resent by it, for a switch (a pid is (host, frame, count); flooded
    copies share it)."""
    out = set()
    for q in st.inq.values():
        for _, tag in q:
            if tag is not None and tag[0] is not None and tag[0][0] == host:
                out.add(tag[0])
    for s in st.switches:
        for b in s.buffers.values():
            if b.tag is not None and b.tag[0] is not None and b.tag[0][0] == host:
                out.add(b.tag[0])
    for qs in (st.to_ctrl, st.to_sw):  # to_sw: an OpenFlow 1.3 PACKET_OUT carrying the packet's bytes
        for q in qs:
            for msg in q:
                tag = getattr(msg, "tag", None)
                if tag is not None and tag[0] is not None and tag[0][0] == host:
                    out.add(tag[0])
    return frozenset(out)
