"""The transition relation: which transitions are enabled in a state, and firing one.

Transitions are NICE's: a switch's process_pkt takes the head of every
input port at once, process_of applies one controller message, the
controller handles one message per transition per switch channel, and hosts
send, receive and reply in separate transitions.  Their kinds and arguments
are in ``transitions.py``.

Channels are FIFO, so only heads are enabled; the enabled list is built in
one fixed order (hosts, switches, controller, timers, faults) so a search is
reproducible, and ``--order reverse`` simply reverses it.

:meth:`System.fire` returns a new state (copy-on-write, see state.py) and an
:class:`Effects` record: what the transition read and wrote (the footprint
DPOR uses) and the property violations it caused.

The switches speak the OpenFlow version of the app (``App.openflow_version``):
1.0, or 1.3 for an os-ken app that speaks only 1.3.  On 1.3 the switch's
1.3 part runs its pipeline (of13.py), controller->switch messages travel
as their bytes (:class:`~netsleuth.nice.messages.ToSwitch13`), and every
switch message reaches the app as it was sent.

**Memoized components.**  A switch applying a controller message, a switch
taking the heads of its input queues, and the controller running a handler
are functions of the component's canonical key and the input: that is what
state matching already relies on (two states with equal keys are one state),
and the app's contract (app.py) makes a handler a deterministic function of
the app's state.  In a search the same (component, input) pair recurs in
thousands of states, so the resulting component and its outputs are
remembered per System, keyed by the component's hash and the input and
checked against the full key (a collision is computed afresh, never
shared).  A memoized result is shared by every state that reaches it, like
any unchanged component (nothing mutates a component once it is in a
reached state).  Because results are shared, the very same component object
meets the very same message object again and again: each step is first
looked up by the identity of the two (``_remember``: the entry holds both, so
their ids cannot be reused while it is cached), and only then by content.
``System.memo = False`` turns both off; the counts do not depend on it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from netsleuth.errors import NetsleuthError
from netsleuth.model import switch as sw
from netsleuth.model.freeze import freeze
from netsleuth.model.host import Host
from netsleuth.model.match import Match
from netsleuth.model.of13.oxm import OxmMatch
from netsleuth.model.ofdp import ofp, ofp13
from netsleuth.model.packet import Packet, arp_request
from netsleuth.model.topology import Topology
from netsleuth.nice import messages as m
from netsleuth.nice.app import App, ControllerAPI
from netsleuth.nice.of13 import packets_change_pipeline, speak13
from netsleuth.nice.properties import Property
from netsleuth.nice.scripted import scripts_from_json, scripts_to_json
from netsleuth.nice.state import (
    HostState,
    MCSwitch,
    SystemState,
    obj_hash,
    pids_in_flight,
    pushed,
    pushed_frame,
    remember,
    tail,
)
from netsleuth.nice.transitions import (
    CTL,
    DROP,
    DUP,
    EXPIRE,
    FAULT_KINDS,
    LINKDOWN,
    MOVE,
    OF,
    OUT,
    PKT,
    RECV,
    SEND,
    SENDPKT,
    STATS,
    TIMER,
    Transition,
)
from netsleuth.nice.violation import PropertyViolation

ANY = ("*",)  # footprint object that conflicts with every other (see explore.independent)


@dataclass
class Config:
    """Everything that defines the model (recorded in a counterexample's header)."""

    topology: Topology
    app_spec: str
    pings: tuple[tuple[str, str, int], ...] = ()      # (src host, dst host, count): non-sequential pings
    reply: bool = True                                 # hosts answer echo requests
    moves: tuple[tuple[str, str, int], ...] = ()       # (host, switch, port) it moves to, in order
    move_after: int = 1                                # replies a host sends before it may move
    spare_ports: int = 0                               # extra unconnected ports per switch (move targets)
    miss_send_len: int = 128
    faults: tuple[str, ...] = ()                       # of "expiry", "drop", "duplicate", "link"
    fault_budget: int = 1                              # drop/duplicate/link faults per path
    properties: tuple[str, ...] = ()
    pkt_seq_burst: int | None = None                   # PKT-SEQ: outstanding packets per host
    track_issue_order: bool = False                    # UNUSUAL needs the last handler's issue order
    scripts: tuple = ()                                # ((host, (frame, ...)), ...): scripted sends (scripted.py)
    discover: int = 0                                  # concolic discover_packets: frames per host (0: off)
    discover_stats: bool = False                       # concolic discover_stats for port-stats replies

    def to_json(self) -> dict:
        return {"app": self.app_spec, "pings": [list(p) for p in self.pings], "reply": self.reply,
                "moves": [list(x) for x in self.moves], "move_after": self.move_after,
                "spare_ports": self.spare_ports, "miss_send_len": self.miss_send_len,
                "faults": list(self.faults), "fault_budget": self.fault_budget,
                "properties": list(self.properties), "pkt_seq_burst": self.pkt_seq_burst,
                "track_issue_order": self.track_issue_order, "scripts": scripts_to_json(self.scripts),
                "discover": self.discover, "discover_stats": self.discover_stats}

    @classmethod
    def from_json(cls, d: dict, topology: Topology) -> Config:
        return cls(topology=topology, app_spec=d["app"], pings=tuple(tuple(p) for p in d["pings"]),
                   reply=d["reply"], moves=tuple(tuple(x) for x in d["moves"]), move_after=d["move_after"],
                   spare_ports=d["spare_ports"], miss_send_len=d["miss_send_len"], faults=tuple(d["faults"]),
                   fault_budget=d["fault_budget"], properties=tuple(d["properties"]),
                   pkt_seq_burst=d["pkt_seq_burst"], track_issue_order=d["track_issue_order"],
                   scripts=scripts_from_json(d.get("scripts", [])), discover=d.get("discover", 0),
                   discover_stats=d.get("discover_stats", False))


class Effects:
    """What one transition did: footprint for DPOR, violations for the search.

    A plain slotted class rather than a dataclass with default factories: one is made
    per transition, and that constructor was a measurable share of firing one.
    """

    __slots__ = ("reads", "writes", "ft_reads", "ft_writes", "violations")

    def __init__(self) -> None:
        self.reads: set = set()
        self.writes: set = set()
        self.ft_reads: list = []        # (switch idx, packet fields) flow-table lookups
        self.ft_writes: list = []       # (switch idx, Match) flow-table changes
        self.violations: list = []


class _Discard(deque):
    """A footprint set or list nobody will read: ``add`` and ``append`` drop the item (a deque
    of length 0, so both stay calls into C)."""

    add = deque.append


_DISCARD = _Discard(maxlen=0)


class ViolationsOnly(Effects):
    """Effects of a search that reads only the violations (no sleep sets): the footprint is
    dropped as it is recorded, which spares four containers per transition."""

    __slots__ = ()
    # class attributes shadow the slots: the firing code adds to them unchanged
    reads = writes = ft_reads = ft_writes = _DISCARD  # type: ignore[assignment]  # a sink, not a set

    def __init__(self) -> None:  # only the violations are kept
        self.violations = []


class _PropertyContext:
    """What property callbacks may ask and do."""

    __slots__ = ("system", "fx", "state")

    def __init__(self, system: System, fx: Effects, state: SystemState) -> None:
        self.system = system
        self.fx = fx
        self.state = state  # the state being built (read-only for properties)

    def in_flight(self, host: str) -> frozenset:
        """pids of packets ``host`` sent that are still in the network (wires, buffers, controller queues)."""
        return pids_in_flight(self.state, host)

    def violation(self, prop: str, message: str, hosts: tuple = (), switches: tuple = ()) -> None:
        self.fx.violations.append(PropertyViolation(prop, message, tuple(hosts), tuple(switches)))

    def host_of_mac(self, mac: int) -> str | None:
        return self.system.host_by_mac.get(mac)

    def mac_of(self, host: str) -> int:
        return self.system.mac_of[host]


class System:
    """The model: topology, app, hosts' programs, properties; builds and fires transitions."""

    def __init__(self, config: Config, app_factory: Callable[[], App], properties: list[Property]) -> None:
        self.config = config
        self.app_factory = app_factory
        self.props = properties
        topo = config.topology
        self.topology = topo
        self.sw_names = [s.name for s in topo.switches]
        self.sw_index = {n: i for i, n in enumerate(self.sw_names)}
        self.dpid_of = [s.dpid for s in topo.switches]
        self.index_of_dpid = {s.dpid: i for i, s in enumerate(topo.switches)}
        self.host_names = [h.name for h in topo.hosts]
        self.host_index = {n: i for i, n in enumerate(self.host_names)}
        self.host_by_mac = {h.mac: h.name for h in topo.hosts}
        # one (host, 0) tuple per host: the key of its wire queue, the same object every time
        self._host_wire = {h.name: (h.name, 0) for h in topo.hosts}
        self.mac_of = {h.name: h.mac for h in topo.hosts}
        self.ip_of = {h.name: h.ip for h in topo.hosts}
        # static switch<->switch wiring; host wiring is state (hosts move)
        self.peer: dict[tuple[str, int], tuple[str, int]] = {}
        links = []
        for link in topo.links:
            a, b = (link.node1, link.port1), (link.node2, link.port2)
            if topo.is_switch(link.node1) and topo.is_switch(link.node2):
                self.peer[a] = b
                self.peer[b] = a
                links.append((topo.switch(link.node1).dpid, link.port1, topo.switch(link.node2).dpid, link.port2))
        self.links = tuple(sorted(links))
        self.need_pid = any(p.needs_pid for p in properties)
        self.need_hops = any(p.needs_hops for p in properties)
        self.lineage = self.need_pid or self.need_hops
        self.uses_stats = bool(getattr(app_factory, "uses_stats", False))
        #: The switches run OpenFlow 1.3 (the app speaks only 1.3) rather than 1.0.
        self.of13 = getattr(app_factory, "openflow_version", 1) == ofp13.OFP_VERSION
        self._cb: dict[str, list[tuple[int, Any]]] = {}
        for ev in ("on_host_send", "on_host_receive", "on_switch_receive", "on_packet_in", "on_host_move",
                   "on_step", "on_end"):
            self._cb[ev] = [(i, getattr(p, ev)) for i, p in enumerate(properties) if hasattr(p, ev)]
        self.faults = set(config.faults)
        self.now = 0.0
        #: Extra transition generators: ``gen(system, state) -> [("sendpkt", host index, Packet), ...]``.
        #: The seam for input discovery (e.g. concolic execution of packet_in proposing the
        #: packets a host should send next, NICE's discover_packets); each proposed send is an
        #: ordinary transition (hashable, replayable: the packet travels in the trace as JSON).
        self.generators: list[Callable[[System, SystemState], list]] = []
        self.sendpkt_reads_ctl = False  # set when sends come from concolic discovery (concolic.attach)
        #: Memoize switch and controller steps (module docstring).  Set before the search starts.
        self.memo = True
        self._of_memo: dict[tuple, tuple] = {}
        self._pkt_memo: dict[tuple, tuple] = {}
        self._ctl_memo: dict[tuple, tuple] = {}
        self._host_memo: dict[tuple, tuple] = {}    # a host receiving a frame or starting a ping
        # The same steps keyed by the identity of the component and the input (checked first:
        # memoized components are shared, so the same objects recur; see _remember)
        self._of_seen: dict[tuple, tuple] = {}
        self._pkt_seen: dict[tuple, tuple] = {}
        self._ctl_seen: dict[tuple, tuple] = {}
        self._recv_seen: dict[tuple, tuple] = {}
        # A switch cabled to itself could receive its own output within one process_pkt: not memoized.
        self._self_linked = frozenset(self.sw_index[a[0]] for a, b in self.peer.items() if a[0] == b[0])

    # ------------------------------------------------------------------ initial state
    def initial(self) -> SystemState:
        cfg, topo = self.config, self.topology
        st = SystemState()
        for spec in topo.switches:
            ports = list(topo.ports(spec.name))
            top = max(ports, default=0)
            ports += [top + k for k in range(1, cfg.spare_ports + 1)]
            s = MCSwitch(spec.dpid, ports, name=spec.name)
            s.miss_send_len = cfg.miss_send_len
            s.with_counters = self.uses_stats
            if self.of13:
                speak13(s)
            st.switches.append(s)
            st.to_ctrl.append(())
            st.to_sw.append(())
        for h in topo.hosts:
            host = Host(h.name, h.mac, h.ip)
            # Layer-2 pings as in NICE: every host knows every other host's MAC (no ARP).
            for other in topo.hosts:
                if other.name != h.name:
                    host.arp_cache[other.ip] = other.mac
            hs = HostState(host, topo.host_location(h.name))
            hs.to_send = tuple(dst for src, dst, n in cfg.pings if src == h.name for _ in range(n))
            hs.moves_left = tuple((s, p) for hh, s, p in cfg.moves if hh == h.name)
            if cfg.pkt_seq_burst is not None:
                hs.credits = cfg.pkt_seq_burst
            st.hosts.append(hs)
        app = self.app_factory()
        st.app = app
        st.props = tuple(p.initial(self) for p in self.props)
        st.extra = (cfg.fault_budget if ({"drop", "duplicate", "link"} & self.faults) else 0, ())
        # Switches join at start, as in NICE (the handshake is not part of the search).
        for i, s in enumerate(st.switches):
            def join(app: Any, s: Any = s) -> Any:  # s=s binds this switch, not the loop's last
                return app.datapath_join(s.dpid, tuple(s.ports))

            self._run_handler(st, join, Effects(), i)
        if self.of13:
            self._configure13(st)
        return st

    def _configure13(self, st: SystemState) -> None:
        """Apply what the app sent in answer to the handshakes before the search starts.

        In OpenFlow 1.3 a switch drops what matches nothing: it sends packets
        to the controller only once the app has installed its table-miss
        entry, which os-ken apps do from their EventOFPSwitchFeatures
        handler, during the handshake.  The switches join before the search
        (the handshake is not part of it, as in NICE), and so does the
        configuration the app gives them there; otherwise every search would
        start with a host whose first packet races the table-miss entry, a
        start-up drop that is no bug of the app's packet handling.
        """
        fx = Effects()
        while any(st.to_sw):
            for i, q in enumerate(st.to_sw):
                if q:
                    self._fire_of13(st, (OF, i), fx)

    # ------------------------------------------------------------------ enabled
    def enabled(self, st: SystemState) -> list[Transition]:
        out: list[Transition] = []
        inq = st.inq
        for i, hs in enumerate(st.hosts):
            if hs.to_send:
                out.append((SEND, i))
            if hs.outbox:
                out.append((OUT, i))
            if inq.get((hs.host.name, 0)):
                out.append((RECV, i))
            if hs.moves_left and hs.replies_sent >= self.config.move_after:
                out.append((MOVE, i))
        for i, s in enumerate(st.switches):
            name = s.name
            for p in s.ports:
                if inq.get((name, p)):
                    out.append((PKT, i))
                    break
            if st.to_sw[i]:
                out.append((OF, i))
        for i, q in enumerate(st.to_ctrl):
            if q:
                out.append((CTL, i))
        for name in st.timers:
            out.append((TIMER, name))
        for gen in self.generators:
            out.extend(gen(self, st))
        if self.faults:
            self._fault_transitions(st, out)
        return out

    def _fault_transitions(self, st: SystemState, out: list) -> None:
        if "expiry" in self.faults:
            for i, s in enumerate(st.switches):
                if s.of13 is not None:  # (EXPIRE, switch, table, OXM entries, priority)
                    for e13 in s.of13.pipeline.tables:
                        if e13.idle_timeout or e13.hard_timeout:
                            out.append((EXPIRE, i, e13.table_id, e13.match.entries, e13.priority))
                    continue
                for e in s.table.entries():
                    if e.idle_timeout or e.hard_timeout:
                        out.append((EXPIRE, i, e.match.wildcards, e.match.values, e.priority))
        if "link" in self.faults and st.extra[0] > 0:
            for d1, p1, _d2, _p2 in self.links:
                i = self.index_of_dpid[d1]
                if st.switches[i].ports[p1].link_up:
                    out.append((LINKDOWN, i, p1))
        if st.extra[0] > 0:
            for (node, port), q in sorted(st.inq.items()):
                if q:
                    if "drop" in self.faults:
                        out.append((DROP, node, port))
                    if "duplicate" in self.faults:
                        out.append((DUP, node, port))

    def is_fault(self, t: Transition) -> bool:
        return t[0] in FAULT_KINDS

    # ------------------------------------------------------------------ firing
    def fire(self, st: SystemState, t: Transition, footprint: bool = True) -> tuple[SystemState, Effects]:
        """The state ``t`` leads to from ``st``, and what it did (``footprint=False``: only the
        violations are recorded, for a search that needs no footprints)."""
        c = st.child()
        fx = Effects() if footprint else ViolationsOnly()
        fire_kind = _FIRE.get(t[0])
        if fire_kind is None:
            raise ValueError(f"unknown transition {t!r}")
        fire_kind(self, c, t, fx)
        cbs = self._cb["on_step"]
        if cbs:
            self._props(c, cbs, fx, lambda f, ps, ctx: f(ps, ctx, c))
        return c, fx

    def at_end(self, st: SystemState) -> list[PropertyViolation]:
        """Violations of end-of-execution properties at a state where only faults could happen."""
        fx = Effects()
        cbs = self._cb["on_end"]
        if cbs:
            c = st.child()
            self._props(c, cbs, fx, lambda f, ps, ctx: f(ps, ctx, st))
        return fx.violations

    def _props(self, st: SystemState, cbs: list, fx: Effects, call: Callable) -> None:
        props = list(st.props)
        ctx = _PropertyContext(self, fx, st)
        for i, f in cbs:
            new = call(f, props[i], ctx)
            commutes = self.props[i].commutes
            if not commutes:
                fx.reads.add(("prop", i))
            if new is not props[i] and new != props[i]:
                props[i] = new
                if not commutes:
                    fx.writes.add(("prop", i))
                    if f.__name__ == "on_step":
                        # on_step may look at anything in the state: a change it makes
                        # depends on everything, so it commutes with nothing (DPOR).
                        fx.writes.add(ANY)
        st.props = tuple(props)

    # --- hosts
    def _mut_host(self, st: SystemState, i: int) -> HostState:
        hs = st.hosts[i].copy()
        st.hosts[i] = hs
        return hs

    def _host_emit(self, st: SystemState, hs: HostState, frame: Packet, fx: Effects) -> None:
        pid = None
        if self.lineage:
            # ``sent`` is a multiset {(frame, count)} as a frozenset: hashing it never depends on order.
            count = 0
            for f, n in hs.sent:
                if f == frame:
                    count = n
                    break
            hs.sent = (hs.sent - {(frame, count)}) | {(frame, count + 1)}
            pid = (hs.host.name, frame, count)
        tag = (pid, ()) if self.lineage else None
        where = hs.location
        self._push(st, where, frame, tag, fx)
        cbs = self._cb["on_host_send"]
        if cbs:
            name = hs.host.name
            self._props(st, cbs, fx, lambda f, ps, ctx: f(ps, ctx, name, pid, frame))

    def _push(self, st: SystemState, where: tuple[str, int], frame: Packet, tag: Any, fx: Effects) -> None:
        fx.writes.add(("q",) + where)
        st.inq[where] = pushed_frame(st.inq.get(where, ()), frame, tag, where)

    def _fire_sendpkt(self, st: SystemState, t: Transition, fx: Effects) -> None:
        _, i, frame = t
        hs = self._mut_host(st, i)
        fx.writes.add(("host", i))
        if self.sendpkt_reads_ctl:
            fx.reads.add(("ctl",))  # discovered packets depend on the controller state (DPOR)
        self._host_emit(st, hs, frame, fx)

    def _fire_send(self, st: SystemState, t: Transition, fx: Effects) -> None:
        i = t[1]
        fx.writes.add(("host", i))
        if self.memo and not self.lineage:     # (with lineage, emitting counts frames in the host)
            old = st.hosts[i]
            # ``received`` is not state (nothing in the model reads it) but callers may: keyed too
            mk = (old.hash_value(), SEND, i, old.host.received)
            hit = self._host_memo.get(mk)
            if hit is not None and (hit[0] is old._key or hit[0] == old._key):
                hs, frames = hit[1], hit[2]
            else:
                hs = old.copy()
                frames = self._start_ping(hs, i)
                if hit is None:
                    self._host_memo[mk] = (old.key(), hs, frames)
            st.hosts[i] = hs
        else:
            hs = self._mut_host(st, i)
            frames = self._start_ping(hs, i)
        for frame in frames:
            self._host_emit(st, hs, frame, fx)

    def _start_ping(self, hs: HostState, i: int) -> list[Packet]:
        dst = hs.to_send[0]
        hs.to_send = hs.to_send[1:]
        seq = hs.next_seq
        hs.next_seq += 1
        if hs.credits is not None:
            hs.credits -= 1
        return hs.host.ping(self.ip_of[dst], i + 1, seq)

    def _fire_out(self, st: SystemState, t: Transition, fx: Effects) -> None:
        i = t[1]
        hs = self._mut_host(st, i)
        fx.writes.add(("host", i))
        frame = hs.outbox[0]
        hs.outbox = hs.outbox[1:]
        hs.replies_sent += 1
        self._host_emit(st, hs, frame, fx)

    def _fire_recv(self, st: SystemState, t: Transition, fx: Effects) -> None:
        i = t[1]
        old = st.hosts[i]
        name = old.host.name
        where = (name, 0)
        fx.writes.add(("host", i))
        fx.writes.add(("q",) + where)
        q = st.inq[where]
        (frame, tag), st.inq[where] = q[0], tail(q)
        if self.memo:
            ik = (id(old), id(frame))   # by identity first (see _fire_pkt)
            seen = self._recv_seen.get(ik)
            if seen is not None:
                hs = seen[2]
            else:
                hs = self._recv_step(old, frame)
                remember(self._recv_seen, ik, (old, frame, hs))
            st.hosts[i] = hs
        else:
            self._host_receive(self._mut_host(st, i), frame)
        cbs = self._cb["on_host_receive"]
        if cbs:
            pid = tag[0] if tag is not None else None
            self._props(st, cbs, fx, lambda f, ps, ctx: f(ps, ctx, name, pid, frame))

    def _recv_step(self, old: HostState, frame: Packet) -> HostState:
        """Host ``old`` receiving ``frame``, memoized by content."""
        mk = (old.hash_value(), RECV, obj_hash(frame), old.host.received)
        hit = self._host_memo.get(mk)
        if hit is not None and (hit[0] is old._key or hit[0] == old._key) and (hit[2] is frame or hit[2] == frame):
            return hit[1]
        hs = old.copy()
        self._host_receive(hs, frame)
        if hit is None:
            self._host_memo[mk] = (old.key(), hs, frame)
        return hs

    def _host_receive(self, hs: HostState, frame: Packet) -> None:
        replies = hs.host.receive(frame)
        if hs.credits is not None and frame.eth_dst == hs.host.mac:
            hs.credits += 1
        if replies and self.config.reply:
            hs.outbox = hs.outbox + tuple(replies)

    def _fire_move(self, st: SystemState, t: Transition, fx: Effects) -> None:
        i = t[1]
        hs = self._mut_host(st, i)
        fx.writes.add(("host", i))
        fx.writes.add(("wiring",))
        old = hs.location
        hs.location = hs.moves_left[0]
        hs.moves_left = hs.moves_left[1:]
        name = hs.host.name
        cbs = self._cb["on_host_move"]
        if cbs:
            new = hs.location
            self._props(st, cbs, fx, lambda f, ps, ctx: f(ps, ctx, name, old, new))
        # Tell the network where we are now (NICE's "mobility inform"): a gratuitous ARP.
        h = hs.host
        self._host_emit(st, hs, arp_request(h.mac, h.ip, h.ip), fx)

    # --- switches
    def _peer_of(self, st: SystemState, node: str, port: int) -> tuple[str, int] | None:
        p = self.peer.get((node, port))
        if p is not None:
            return p
        for hs in st.hosts:
            if hs.location == (node, port):
                return self._host_wire[hs.host.name]
        return None

    def _switch_outputs(self, st: SystemState, i: int, s: MCSwitch, outputs: list, fx: Effects) -> None:
        for o in outputs:
            if type(o) is sw.Emit:
                peer = self._peer_of(st, s.name, o.port)
                if peer is None:
                    continue  # nothing attached: the packet is dropped
                if peer[1] == 0:
                    fx.reads.add(("wiring",))
                tag = o.tag
                if tag is None and self.lineage:
                    tag = (None, ())
                self._push(st, peer, o.packet, tag, fx)
            else:
                msg = o.msg
                if type(msg) is not m.PacketIn:
                    msg = _from_ofp(msg)
                fx.writes.add(("toctl", i))
                st.to_ctrl[i] = pushed(st.to_ctrl[i], msg, i)

    def _fire_pkt(self, st: SystemState, t: Transition, fx: Effects) -> None:
        i = t[1]
        cbs = self._cb["on_switch_receive"]
        if not self.memo or cbs or i in self._self_linked:
            self._fire_pkt_direct(st, t, fx)
            return
        old = st.switches[i]
        name = old.name
        inq = st.inq
        heads: list[tuple[int, Any, Any]] = []
        # the heads as queued: with lineage each tag is rebuilt below (a new object every time,
        # though a function of the queued tag, this switch and the port), so identity goes by these
        queued = [] if self.lineage else heads
        for p in old.ports:
            where = (name, p)
            fx.reads.add(("q",) + where)
            q = inq.get(where)
            if not q:
                continue
            fx.writes.add(("q",) + where)
            (frame, tag), inq[where] = q[0], tail(q)
            if self.lineage:
                queued.append((p, frame, tag))
                pid, hops = tag
                tag = (pid, hops + ((name, p),) if self.need_hops else hops)
            heads.append((p, frame, tag))
        # first by identity (the entry keeps the switch and the queued heads alive, so equal ids
        # are the same objects), then by content
        ik = (id(old), tuple([(p, id(frame), id(tag)) for p, frame, tag in queued]))
        seen = self._pkt_seen.get(ik)
        if seen is not None:
            s, per_port = seen[2], seen[3]
        else:
            s, per_port = self._pkt_step(old, heads)
            remember(self._pkt_seen, ik, (old, queued, s, per_port))
        st.switches[i] = s
        for fields, outputs in per_port:
            fx.ft_reads.append((i, fields))
            self._switch_outputs(st, i, s, outputs, fx)
        fx.writes.add(("buf", i))
        fx.reads.add(("ports", i))

    def _pkt_step(self, old: MCSwitch, heads: list) -> tuple[MCSwitch, tuple]:
        """Switch ``old`` taking the head packets ``heads``, memoized by content: (switch, per port
        (fields read, outputs))."""
        mk = (old.hash_value(), tuple([(p, obj_hash(frame), hash(tag)) for p, frame, tag in heads]))
        hit = self._pkt_memo.get(mk)
        if hit is not None and (hit[0] is old._key or hit[0] == old._key) and hit[3] == heads:
            s, per_port = hit[1], hit[2]
        else:
            s = self._copy_for_packets(old)
            per_port = tuple((self._fields_read(frame, p), s.receive_packet(p, frame, self.now, tag))
                             for p, frame, tag in heads)
            if hit is None:
                self._pkt_memo[mk] = (old.key(), s, per_port, heads)
        return s, per_port

    def _fields_read(self, frame: Any, p: int) -> tuple | None:
        """What a packet's lookup reads of the flow table (the footprint sleep sets compare): its
        1.0 match fields, or None (the whole pipeline) on OpenFlow 1.3, where later tables see
        rewritten headers and metadata."""
        return None if self.of13 else frame.match_fields(p)

    def _copy_for_packets(self, s: MCSwitch) -> MCSwitch:
        """The copy of switch ``s`` that takes packets: its table and ports are copied only if packets
        change them (counters the app reads; a 1.3 pipeline whose meters or counters packets move)."""
        wc = self.uses_stats
        return s.copy(table=wc or (s.of13 is not None and packets_change_pipeline(s.of13)), ports=wc)

    def _fire_pkt_direct(self, st: SystemState, t: Transition, fx: Effects) -> None:
        i = t[1]
        s = st.switches[i] = self._copy_for_packets(st.switches[i])
        name = s.name
        inq = st.inq
        cbs = self._cb["on_switch_receive"]
        for p in s.ports:
            where = (name, p)
            fx.reads.add(("q",) + where)
            q = inq.get(where)
            if not q:
                continue
            fx.writes.add(("q",) + where)
            (frame, tag), inq[where] = q[0], tail(q)
            if self.lineage:
                pid, hops = tag
                if cbs:
                    # _props calls the lambda before the loop moves on, so the loop variables are the current ones
                    self._props(st, cbs, fx, lambda f, ps, ctx: f(ps, ctx, name, p, pid, hops, frame))  # noqa: B023
                tag = (pid, hops + ((name, p),) if self.need_hops else hops)
            fx.ft_reads.append((i, self._fields_read(frame, p)))
            outputs = s.receive_packet(p, frame, self.now, tag)
            self._switch_outputs(st, i, s, outputs, fx)
        fx.writes.add(("buf", i))
        fx.reads.add(("ports", i))

    def _fire_of(self, st: SystemState, t: Transition, fx: Effects) -> None:
        if self.of13:
            self._fire_of13(st, t, fx)
            return
        i = t[1]
        q = st.to_sw[i]
        msg, st.to_sw[i] = q[0], tail(q)
        fx.writes.add(("tosw", i))
        is_mod = type(msg) is m.FlowMod
        old = st.switches[i]
        if self.memo:
            ik = (id(old), id(msg))     # by identity first (see _fire_pkt)
            seen = self._of_seen.get(ik)
            if seen is not None:
                s, outputs = seen[2], seen[3]
            else:
                mk = (old.hash_value(), obj_hash(msg))
                hit = self._of_memo.get(mk)
                if hit is not None and (hit[0] is old._key or hit[0] == old._key) and (hit[3] is msg or hit[3] == msg):
                    s, outputs = hit[1], hit[2]
                else:
                    s = old.copy(table=is_mod, ports=self.uses_stats)
                    outputs = s.handle_message(0, m.to_ofp(msg), self.now)
                    if hit is None:
                        self._of_memo[mk] = (old.key(), s, outputs, msg)
                remember(self._of_seen, ik, (old, msg, s, outputs))
            st.switches[i] = s
            self._of_footprint(i, msg, is_mod, fx)
            self._of_outputs(st, i, s, outputs, fx)
            return
        s = old.copy(table=is_mod, ports=self.uses_stats)
        st.switches[i] = s
        self._of_footprint(i, msg, is_mod, fx)
        outputs = s.handle_message(0, m.to_ofp(msg), self.now)
        self._of_outputs(st, i, s, outputs, fx)

    @staticmethod
    def _of_footprint(i: int, msg: Any, is_mod: bool, fx: Effects) -> None:
        if is_mod:
            fx.ft_writes.append((i, msg.match))
            if msg.buffer_id != m.NO_BUFFER:
                fx.writes.add(("buf", i))
        elif type(msg) is m.PacketOut:
            fx.writes.add(("buf", i))
        else:
            fx.writes.add(("counters", i))
        fx.reads.add(("ports", i))

    def _of_outputs(self, st: SystemState, i: int, s: MCSwitch, outputs: list, fx: Effects) -> None:
        for o in outputs:
            if type(o) is sw.Emit:
                fx.ft_reads.append((i, None))  # a released packet may be matched again: be conservative
                break
        self._switch_outputs(st, i, s, outputs, fx)

    def _fire_of13(self, st: SystemState, t: Transition, fx: Effects) -> None:
        """An OpenFlow 1.3 message applied by the switch's 1.3 part (the app's bytes, decoded)."""
        i = t[1]
        q = st.to_sw[i]
        msg, st.to_sw[i] = q[0], tail(q)
        fx.writes.add(("tosw", i))
        kind = msg.type_name
        obj = m.of13_message(msg.data)
        changes_table = kind in ("FLOW_MOD", "GROUP_MOD", "METER_MOD")
        s = st.switches[i]
        part = s.of13
        assert part is not None
        # a PACKET_OUT to OFPP_TABLE runs the pipeline, whose meters spend tokens
        copy_table = changes_table or (kind == "PACKET_OUT" and packets_change_pipeline(part))
        s = s.copy(table=copy_table, ports=self.uses_stats or kind == "PORT_MOD")
        st.switches[i] = s
        if changes_table:
            # groups and meters act on any packet of any entry (the empty match conflicts with all),
            # and so does a FLOW_MOD whose match the switch will refuse
            written = OxmMatch()
            if kind == "FLOW_MOD":
                try:
                    written = OxmMatch.from_ofp(obj.match)
                except NetsleuthError:
                    pass
            fx.ft_writes.append((i, written))
        if kind == "PORT_MOD":
            fx.writes.add(("ports", i))
        if kind == "PACKET_OUT" or (kind == "FLOW_MOD" and obj.buffer_id != ofp13.OFP_NO_BUFFER):
            fx.writes.add(("buf", i))
        elif not changes_table:
            fx.writes.add(("counters", i))
        fx.reads.add(("ports", i))
        recent = s._recent_in
        if msg.tag is not None:
            # The PACKET_OUT resends the bytes of a packet-in: the switch continues its lineage
            # (what the live switch's packet-in cache does), for this message only.
            s._recent_in = {bytes(obj.data or b""): msg.tag}
        try:
            outputs = s.handle_message(0, obj, self.now)
        finally:
            s._recent_in = recent  # the stand-in that remembers nothing (state.py)
        for o in outputs:
            if type(o) is sw.Emit:
                fx.ft_reads.append((i, None))  # a released packet may be matched again: be conservative
                break
        self._switch_outputs(st, i, s, outputs, fx)

    def _fire_expire(self, st: SystemState, t: Transition, fx: Effects) -> None:
        if self.of13:
            self._fire_expire13(st, t, fx)
            return
        _, i, wildcards, values, priority = t
        s = st.switches[i].copy(table=True, ports=self.uses_stats)
        st.switches[i] = s
        match = Match(wildcards, *values)
        fx.ft_writes.append((i, match))
        removed = s.table.delete(match, strict=True, priority=priority)
        out = []
        for e in removed:
            if e.flags & ofp.OFPFF_SEND_FLOW_REM:
                out.append(sw.ToController(None, s._flow_removed(e, ofp.OFPRR_IDLE_TIMEOUT if e.idle_timeout
                                                                 else ofp.OFPRR_HARD_TIMEOUT, self.now)))
        self._switch_outputs(st, i, s, out, fx)

    def _fire_expire13(self, st: SystemState, t: Transition, fx: Effects) -> None:
        """A 1.3 entry times out: removed as the pipeline's own expiry removes it (FLOW_REMOVED if flagged)."""
        _, i, table_id, entries, priority = t
        s = st.switches[i].copy(table=True, ports=self.uses_stats)
        st.switches[i] = s
        match = OxmMatch.from_entries(entries)
        fx.ft_writes.append((i, match))
        part = s.of13
        assert part is not None
        removed = part.pipeline.tables.delete(table_id, match, strict=True, priority=priority)
        for r in removed:
            r.reason = ofp13.OFPRR_IDLE_TIMEOUT if r.entry.idle_timeout else ofp13.OFPRR_HARD_TIMEOUT
        self._switch_outputs(st, i, s, part.flows_removed(removed, self.now), fx)

    def _fire_fault(self, st: SystemState, t: Transition, fx: Effects) -> None:
        kind, node, port = t
        where = (node, port)
        fx.writes.add(("q",) + where)
        q = st.inq[where]
        st.extra = (st.extra[0] - 1,) + st.extra[1:]
        fx.writes.add(("faults",))
        if kind == DROP:
            st.inq[where] = tail(q)
        else:
            st.inq[where] = q + (q[0],)

    def _fire_linkdown(self, st: SystemState, t: Transition, fx: Effects) -> None:
        """A switch-to-switch link fails: both ports go down (PORT_STATUS to the controller) and
        the packets on it are lost."""
        _, i, port = t
        name = self.sw_names[i]
        peer = self.peer[(name, port)]
        st.extra = (st.extra[0] - 1,) + st.extra[1:]
        fx.writes.add(("faults",))
        for node, p in ((name, port), peer):
            j = self.sw_index[node]
            s = st.switches[j].copy(table=False, ports=True)
            st.switches[j] = s
            fx.writes.add(("ports", j))
            fx.writes.add(("q", node, p))
            st.inq.pop((node, p), None)
            self._switch_outputs(st, j, s, s.set_link(p, False), fx)

    # --- controller
    def _fire_stats(self, st: SystemState, t: Transition, fx: Effects) -> None:
        """discover_stats: the controller handles the PortStatsReply at the head of switch i's
        channel with discovered counters ``stats`` (a reply the switch could send after more traffic)."""
        _, i, stats = t
        q = st.to_ctrl[i]
        st.to_ctrl[i] = tail(q)
        fx.writes.add(("toctl", i))
        dpid = self.dpid_of[i]
        self._run_handler(st, lambda a: a.port_stats_in(dpid, stats), fx, i)

    def _run_handler(self, st: SystemState, call: Callable[[App], None], fx: Effects, i: int | None,
                     event: Any = None) -> None:
        """Run a handler on a copy of the app; ``event`` (hashable, naming the call) memoizes it."""
        if event is not None and self.memo:
            # by identity first (see _fire_pkt): the app object and the message or timer name
            parent = st.app
            ik = (id(parent), event[0], event[1], id(event[-1]))
            seen = self._ctl_seen.get(ik)
            if seen is not None:
                _, _, app, out, timers, st.appkey, st.apphash = seen
                st.app = app
                self._handler_effects(st, out, timers, fx)
                return
            ak = st.app_key()
            # the event's last item is the message (hashed once per object), the rest is small
            mk = (st.app_hash(), *event[:-1], obj_hash(event[-1]))
            hit = self._ctl_memo.get(mk)
            if hit is not None and (hit[0] is ak or hit[0] == ak) and hit[6] == event:
                _, app, out, timers, new_key, new_hash, _ = hit
            else:
                app, out, timers = self._call_app(st.app, call)
                new_key = app.key()
                new_hash = hash(new_key)
                if hit is None:
                    self._ctl_memo[mk] = (ak, app, out, timers, new_key, new_hash, event)
            remember(self._ctl_seen, ik, (parent, event[-1], app, out, timers, new_key, new_hash))
            st.app, st.appkey, st.apphash = app, new_key, new_hash
        else:
            st.app, out, timers = self._call_app(st.app, call)
            st.appkey = st.apphash = None
        self._handler_effects(st, out, timers, fx)

    def _call_app(self, parent: App, call: Callable[[App], None]) -> tuple[App, list, list]:
        app = parent.copy()
        api = ControllerAPI(self.now, self.links, self.uses_stats)
        app._api = api
        try:
            call(app)
        finally:
            app._api = None
        return app, api.out, api.timers

    def _handler_effects(self, st: SystemState, out: list, timers: list, fx: Effects) -> None:
        fx.writes.add(("ctl",))
        order = []
        for dpid, msg in out:
            j = self.index_of_dpid.get(dpid)
            if j is None:
                continue  # a switch the network does not have: the message goes nowhere
            st.to_sw[j] = pushed(st.to_sw[j], msg, j)
            fx.writes.add(("tosw", j))
            if j not in order:
                order.append(j)
        if timers:
            st.timers = tuple(sorted(set(st.timers) | set(timers)))
        if self.config.track_issue_order:
            # Only a handler that addressed several switches gives UNUSUAL something to reverse;
            # remembering single-switch orders would only split states.
            new = tuple(order) if len(order) > 1 else ()
            if new != st.extra[1]:
                st.extra = (st.extra[0], new)

    def _fire_ctl(self, st: SystemState, t: Transition, fx: Effects) -> None:
        i = t[1]
        q = st.to_ctrl[i]
        msg, st.to_ctrl[i] = q[0], tail(q)
        fx.writes.add(("toctl", i))
        dpid = self.dpid_of[i]
        mtype = type(msg)
        if mtype is m.PacketIn:
            cbs = self._cb["on_packet_in"]
            if cbs:
                pid = msg.tag[0] if msg.tag is not None else None
                name = self.sw_names[i]
                self._props(st, cbs, fx, lambda f, ps, ctx: f(ps, ctx, name, pid, msg))
            if self.of13:  # the hosted app gets the whole 1.3 PACKET_IN (table, cookie, lineage)
                self._run_handler(st, lambda a: a.packet_in13(dpid, msg), fx, i)
                return
            self._run_handler(st, lambda a: a.packet_in(dpid, msg.in_port, msg.reason, msg.total_len,
                                                        msg.buffer_id, msg.packet), fx, i, (CTL, dpid, msg))
        elif mtype is m.FromSwitch13:
            self._run_handler(st, lambda a: a.message13(dpid, msg.data), fx, i)
        elif mtype is m.PortStatus:
            self._run_handler(st, lambda a: a.port_status(dpid, msg.reason, msg.port_no, msg.link_up), fx, i,
                              (CTL, dpid, msg))
        elif mtype is m.FlowRemoved:
            self._run_handler(st, lambda a: a.flow_removed(dpid, msg.match, msg.priority, msg.reason,
                                                           msg.cookie), fx, i, (CTL, dpid, msg))
        elif mtype is m.PortStatsReply:
            self._run_handler(st, lambda a: a.port_stats_in(dpid, msg.stats), fx, i)
        # errors and other replies: nothing to run (NOX apps rarely handle them)

    def _fire_timer(self, st: SystemState, t: Transition, fx: Effects) -> None:
        name = t[1]
        st.timers = tuple(x for x in st.timers if x != name)
        self._run_handler(st, lambda a: a.timer(name), fx, None, (TIMER, name))

    # ------------------------------------------------------------------ descriptions
    def describe(self, st: SystemState, t: Transition) -> str:
        """A human line for transition ``t`` at state ``st`` (before it fires)."""
        kind = t[0]
        if kind in (SEND, SENDPKT, OUT, RECV, MOVE):
            hs = st.hosts[t[1]]
            name = hs.host.name
            if kind == SEND:
                return f"{name} sends ping {hs.next_seq} to {hs.to_send[0]}"
            if kind == SENDPKT:
                return f"{name} sends {t[2].summary()}"
            if kind == OUT:
                return f"{name} sends {hs.outbox[0].summary()}"
            if kind == RECV:
                return f"{name} receives {st.inq[(name, 0)][0][0].summary()}"
            return f"{name} moves from {hs.location[0]}:{hs.location[1]} to {hs.moves_left[0][0]}:{hs.moves_left[0][1]}"
        if kind == PKT:
            s = st.switches[t[1]]
            parts = [f"port {p}: {st.inq[(s.name, p)][0][0].summary()}" for p in s.ports if st.inq.get((s.name, p))]
            return f"{s.name} processes packets ({'; '.join(parts)})"
        if kind == OF:
            return f"{self.sw_names[t[1]]} applies {m.describe(st.to_sw[t[1]][0])}"
        if kind == CTL:
            return f"controller handles {m.describe(st.to_ctrl[t[1]][0])} from {self.sw_names[t[1]]}"
        if kind == TIMER:
            return f"controller timer {t[1]} fires"
        if kind == EXPIRE:
            if self.of13:
                match = str(OxmMatch.from_entries(t[3]))
                return f"{self.sw_names[t[1]]}: rule table={t[2]} priority={t[4]}{',' + match if match else ''} expires"
            return f"{self.sw_names[t[1]]}: rule priority={t[4]},{Match(t[2], *t[3])} expires"
        if kind == LINKDOWN:
            return f"fault: the link at {self.sw_names[t[1]]}:{t[2]} fails"
        if kind == STATS:
            return f"controller handles a discovered port-stats reply from {self.sw_names[t[1]]}: {t[2]}"
        return f"fault: {kind} the head packet arriving at {t[1]}:{t[2]}"




#: What fires each kind: ``System._fire_<kind>(state, transition, effects)``.
_FIRE: dict[str, Callable[[System, SystemState, Transition, Effects], None]] = {
    SEND: System._fire_send, OUT: System._fire_out, RECV: System._fire_recv, MOVE: System._fire_move,
    SENDPKT: System._fire_sendpkt, PKT: System._fire_pkt, OF: System._fire_of, CTL: System._fire_ctl,
    TIMER: System._fire_timer, STATS: System._fire_stats, EXPIRE: System._fire_expire,
    DROP: System._fire_fault, DUP: System._fire_fault, LINKDOWN: System._fire_linkdown,
}


def _from_ofp(msg: Any) -> Any:
    """A switch's os-ken message as a light channel message."""
    from netsleuth.openflow.codec import encode, msg_type_name, msg_version
    if msg_version(msg) == ofp13.OFP_VERSION:  # kept as sent: the hosted 1.3 app reads the bytes
        return m.FromSwitch13(msg_type_name(msg), encode(msg))
    name = type(msg).__name__
    if name == "OFPFlowRemoved":
        return m.FlowRemoved(Match.from_ofp(msg.match), msg.priority, msg.reason, msg.cookie)
    if name == "OFPPortStatus":
        return m.PortStatus(msg.reason, msg.desc.port_no, not (msg.desc.state & ofp.OFPPS_LINK_DOWN))
    if name == "OFPPortStatsReply":
        return m.PortStatsReply(tuple((b.port_no, b.rx_packets, b.tx_packets, b.rx_bytes, b.tx_bytes)
                                      for b in msg.body))
    from netsleuth.openflow.codec import msg_to_json
    js = msg_to_json(msg)
    js.pop("xid", None)
    return m.OtherToController(js.get("type", name), freeze(js))
