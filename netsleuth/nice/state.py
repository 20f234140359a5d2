"""The model checker's system state: canonical, hashable, copy-on-write.

A :class:`SystemState` is never mutated once it has been reached.  Firing a
transition makes a child that *shares* every component with its parent and
copies only the components the transition writes (one switch, one host, the
app, ...); the parent stays on the DFS stack untouched.  That replaces NICE's
deep copy of the whole system per state (most of its running time).

Components cache their canonical key and its hash; the state's key is the
tuple of those keys.  The state's hash (what the search remembers) is
incremental, Zobrist style: the sum modulo 2^64 of one term per component,
a mixed ``hash((slot, component hash))`` (``interning.mix``).  A child state
starts from its parent's sum and replaces the terms of the components it
does not share with the parent (an identity check per component), so
hashing a new state costs only what changed -- hashing the nested key tuple
would walk every flow table and queued packet again, since Python caches no
tuple hashes.  Queues are interned as they are popped and pushed (``tail``,
``pushed`` of interning.py, which holds these identity caches and the hash
terms): the same pop or push of the same queue returns the same tuple, so a
queue's term, and the change of a slot's term from one queue to the next
(``queue_delta``), are computed once per search and then found by identity.
Equal keys give equal sums however the states were reached.  The key holds
everything that can affect the future -- flow tables in canonical
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
from netsleuth.nice.interning import _MASK, app_term, mix, queue_delta, queue_term, small_term
from netsleuth.nice.of13 import copy13, key13


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


class StateComponent:
    """A switch or host of the state: it always sits in its own slot (its name), and its canonical
    key, the key's hash and its term of the state hash are each computed once per object (the
    object is never mutated once it is in a reached state; a copy starts with none of them)."""

    __slots__ = ()
    slot_kind = ""  # the slot's kind in the term: "s" a switch, "h" a host
    _hash: int | None
    _term: int | None

    def key(self) -> tuple:
        raise NotImplementedError

    def slot_name(self) -> str:
        raise NotImplementedError

    def hash_value(self) -> int:
        """``hash(self.key())``, computed once per object."""
        h = self._hash
        if h is None:
            h = self._hash = hash(self.key())  # type: ignore[misc]  # a slot or attribute of the subclass
        return h

    def term(self) -> int:
        """This component's term of the state hash."""
        t = self._term
        if t is None:
            t = self._term = mix(hash((self.slot_kind, self.slot_name(), self.hash_value())))  # type: ignore[misc]  # as above
        return t


class MCSwitch(sw.Switch, StateComponent):
    """The model's switch with cheap copies and a canonical key (see the module docstring)."""

    with_counters = False  # set per switch by the System: True when the app reads statistics
    slot_kind = "s"

    def __init__(self, dpid: int, ports: Any, *, name: str = "", n_buffers: int = sw.DEFAULT_BUFFERS) -> None:
        super().__init__(dpid, ports, name=name, n_buffers=n_buffers)
        self._recent_in = _NO_RECENT  # type: ignore[assignment]  # a stand-in that remembers nothing
        self._key: tuple | None = None
        self._hash: int | None = None
        self._term: int | None = None

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
        if self.of13 is not None:  # an OpenFlow 1.3 switch: its pipeline is the table (of13.py)
            new.of13 = copy13(self.of13, new, table=table)
        new._key = None
        new._hash = None
        new._term = None
        return new

    def slot_name(self) -> str:
        return self.name

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


class HostState(StateComponent):
    """An end host of the model: the model's :class:`Host` plus the client/server program around it.

    ``to_send``: pings this host still has to start (the client's send
    transition); ``outbox``: frames the host produced (replies) waiting for
    its send transition; ``credits``: PKT-SEQ's burst counter (None: no bound).
    ``sent``: how many frames of each content this host sent, to name packets
    for the properties without a global packet counter.
    """

    __slots__ = ("host", "location", "to_send", "next_seq", "outbox", "credits", "sent", "moves_left",
                 "replies_sent", "_key", "_hash", "_term")
    slot_kind = "h"

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
        self._hash: int | None = None
        self._term: int | None = None

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
        new._hash = None
        new._term = None
        return new

    def slot_name(self) -> str:
        return self.host.name

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


_dict_setitem = dict.__setitem__


class WireQueues(dict):
    """A state's wire queues, ``(node, port) -> ((packet, tag), ...)``, remembering what was written.

    ``written`` lists every key set, popped or deleted since this dict was made (by
    :meth:`SystemState.child`), so the incremental hash visits only those queues, whoever
    wrote them.
    """

    __slots__ = ("written",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.written: list = []

    def __setitem__(self, key: Any, value: Any) -> None:
        self.written.append(key)
        _dict_setitem(self, key, value)

    def __delitem__(self, key: Any) -> None:
        self.written.append(key)
        dict.__delitem__(self, key)

    def pop(self, key: Any, *default: Any) -> Any:
        self.written.append(key)
        return dict.pop(self, key, *default)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        self.written.append(key)
        return dict.setdefault(self, key, default)

    def update(self, *args: Any, **kw: Any) -> None:
        other = dict(*args, **kw)
        self.written.extend(other)
        dict.update(self, other)

    def popitem(self) -> tuple:
        item = dict.popitem(self)
        self.written.append(item[0])
        return item

    def clear(self) -> None:
        self.written.extend(self)
        dict.clear(self)


_new_dict = dict.__new__
_dict_update = dict.update


class SystemState:
    """One global state; see the module docstring.  Treat a reached state as immutable."""

    __slots__ = ("switches", "hosts", "inq", "to_ctrl", "to_sw", "app", "appkey", "apphash", "props", "timers",
                 "extra", "step_quiet", "_key", "_hash", "_parent")

    #: Whether the controller->switch queues count in the hash.  Only NICE's hash, which
    #: dropped them, is reproduced by turning this off (bench/nice_table1.py's ablation rows):
    #: distinct states then collide.
    hash_command_queues = True
    #: False: hash the whole key tuple of every new state instead (the earlier way, kept as the
    #: baseline of bench/nice_table1.py; same counts, several times slower).
    incremental_hash = True

    def __init__(self) -> None:
        self.switches: list[MCSwitch] = []
        self.hosts: list[HostState] = []
        self.inq: WireQueues = WireQueues()             # (node, port) -> ((packet, tag), ...) arriving there
        self.to_ctrl: list[tuple] = []                  # per switch index: messages for the controller
        self.to_sw: list[tuple] = []                    # per switch index: messages for the switch
        self.app: Any = None
        self.appkey: Any = None                         # cached app.key(); None when the app changed
        self.apphash: int | None = None                 # cached hash(appkey); None when the app changed
        self.props: tuple = ()
        self.timers: tuple = ()                         # sorted timer names posted by the app
        self.extra: tuple = ()                          # strategy state (UNUSUAL's issue order)
        #: (props, whether every on_step has nothing to do on it): kept by System.fire, valid
        #: while ``props`` is that very tuple
        self.step_quiet: tuple | None = None
        self._key: tuple | None = None
        self._hash: int | None = None
        self._parent: SystemState | None = None

    def child(self) -> SystemState:
        """A new state sharing every component (the caller replaces what it changes)."""
        c = object.__new__(SystemState)
        c.switches = self.switches[:]   # slices: fewer instructions than list(...) calls
        c.hosts = self.hosts[:]
        # the parent's queues without WireQueues.__init__ (a Python frame per state)
        c.inq = inq = _new_dict(WireQueues)
        _dict_update(inq, self.inq)
        inq.written = []
        c.to_ctrl = self.to_ctrl[:]
        c.to_sw = self.to_sw[:]
        c.app = self.app
        c.appkey = self.appkey
        c.apphash = self.apphash
        c.props = self.props
        c.timers = self.timers
        c.extra = self.extra
        c.step_quiet = self.step_quiet
        c._key = None
        c._hash = None
        c._parent = self
        return c

    def key(self) -> tuple:
        k = self._key
        if k is None:
            inq = tuple(sorted(item for item in self.inq.items() if item[1]))
            ak = self.app_key()
            k = (tuple(s.key() for s in self.switches), tuple(h.key() for h in self.hosts), inq,
                 tuple(self.to_ctrl), tuple(self.to_sw), ak, self.props, self.timers, self.extra)
            self._key = k
        return k

    def app_key(self) -> Any:
        ak = self.appkey
        if ak is None:
            ak = self.appkey = self.app.key()
        return ak

    def app_hash(self) -> int:
        h = self.apphash
        if h is None:
            h = self.apphash = hash(self.app_key())
        return h

    def hash(self) -> int:
        """64-bit hash of the key, incremental from the parent's (see the module docstring)."""
        h = self._hash
        if h is None:
            p = self._parent
            self._parent = None     # do not keep ancestors alive
            if p is not None and p._hash is not None and SystemState.incremental_hash:
                return self.hash_after(p)
            if SystemState.incremental_hash:
                h = self._hash = self._full_hash() & _MASK
            else:
                h = self._hash = hash(self.key())
        return h

    def hash_after(self, p: SystemState) -> int:
        """:meth:`hash` of a child of ``p``, whose hash is known (a search's parent on its stack):
        the incremental hash without the checks.

        An unchanged component is the parent's own object (copy-on-write).  Each group is first
        compared as a whole in C (switches and host states have no __eq__, so that is identity)
        and only a group that changed is walked; the channel queues are compared one by one by
        identity (so no message's __eq__ runs); the wire queues written since the child was
        made are listed (WireQueues).
        """
        self._parent = None     # do not keep ancestors alive
        h = p._hash
        assert h is not None
        if self.switches != p.switches:
            h += _terms_delta(self.switches, p.switches)
        if self.hosts != p.hosts:
            h += _terms_delta(self.hosts, p.hosts)
        h += _channels_delta(self, p)
        if self.inq.written:
            h += _wires_delta(self.inq, p.inq)
        if self.app is not p.app:
            h += app_term(self.app_hash()) - app_term(p.app_hash())
        if self.props is not p.props or self.timers is not p.timers or self.extra is not p.extra:
            h += _small_delta(self, p)
        h = self._hash = h & _MASK
        return h

    def _full_hash(self) -> int:
        h = 0
        for s in self.switches:
            h += s.term()
        for x in self.hosts:
            h += x.term()
        for k, q in enumerate(self.to_ctrl):
            h += queue_term("c", k, q)
        if SystemState.hash_command_queues:
            for k, q in enumerate(self.to_sw):
                h += queue_term("w", k, q)
        for where, q in self.inq.items():
            h += queue_term("q", where, q)
        return h + (app_term(self.app_hash()) + mix(hash(("p", self.props)))
                    + mix(hash(("t", self.timers))) + mix(hash(("x", self.extra))))


def _small_delta(st: SystemState, p: SystemState) -> int:
    """How the terms of the property states, pending timers and strategy state of ``st`` differ
    from its parent ``p``'s (each term cached by the identity of its tuple: siblings share the
    parent's)."""
    d = 0
    if st.props is not p.props:
        d += small_term("p", st.props) - small_term("p", p.props)
    if st.timers is not p.timers:
        d += small_term("t", st.timers) - small_term("t", p.timers)
    if st.extra is not p.extra:
        d += small_term("x", st.extra) - small_term("x", p.extra)
    return d


def _terms_delta(xs: list, ys: list) -> int:
    """How the hash terms of components ``xs`` differ from their parent's ``ys`` (only the
    components that are not the parent's own object are hashed)."""
    d = 0
    for k in range(len(xs)):
        x = xs[k]
        y = ys[k]
        if x is not y:
            t = x._term
            u = y._term
            d += (x.term() if t is None else t) - (y.term() if u is None else u)
    return d


def _wires_delta(inq: WireQueues, pinq: dict) -> int:
    """How the hash terms of the wire queues ``inq`` differ from their parent's ``pinq``: only the
    queues written since the child was made (WireQueues) are visited."""
    written = inq.written
    d = 0
    for where in (set(written) if len(written) > 1 else written):
        q, r = inq.get(where, ()), pinq.get(where, ())
        if q is not r:
            d += queue_delta("q", where, q, r)
    return d


def _channels_delta(st: SystemState, p: SystemState) -> int:
    """How the hash terms of the control channel queues of ``st`` (both directions) differ from
    its parent ``p``'s: one pass over each list, queues compared by identity (no message's
    __eq__ runs), in one frame (most transitions change a channel)."""
    d = 0
    sides = ((("c", st.to_ctrl, p.to_ctrl), ("w", st.to_sw, p.to_sw)) if SystemState.hash_command_queues
             else (("c", st.to_ctrl, p.to_ctrl),))
    for tag, qs, rs in sides:
        for k in range(len(qs)):
            q = qs[k]
            r = rs[k]
            if q is not r:
                d += queue_delta(tag, k, q, r)
    return d


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
