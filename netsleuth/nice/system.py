"""The transition relation: which transitions are enabled in a state, and firing one.

Transitions are NICE's: a switch's process_pkt takes the head of every
input port at once, process_of applies one controller message, the
controller handles one message per transition per switch channel, and hosts
send, receive and reply in separate transitions.  Their kinds and arguments
are in ``transitions.py``; firing them is in ``fire_hosts.py``, ``fire_switches.py``
and ``fire_controller.py`` (one function per kind, taking the System), while this
module holds the model's configuration, the enabled list and the property calls.

Channels are FIFO, so only heads are enabled; the enabled list is built in
one fixed order (hosts, switches, controller, timers, faults) so a search is
reproducible, and ``--order reverse`` simply reverses it.

:meth:`System.fire` returns a new state (copy-on-write, see state.py) and an
:class:`~netsleuth.nice.effects.Effects` record: what the transition read and wrote (the footprint
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
looked up by the identity of the two (``interning.remember``: the entry holds both, so
their ids cannot be reused while it is cached), and only then by content.
``System.memo = False`` turns both off; the counts do not depend on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from netsleuth.model.host import Host
from netsleuth.model.match import Match
from netsleuth.model.of13.oxm import OxmMatch
from netsleuth.model.ofdp import ofp13
from netsleuth.model.topology import Topology
from netsleuth.nice import fire_controller, fire_hosts, fire_switches
from netsleuth.nice import messages as m
from netsleuth.nice.app import App
from netsleuth.nice.effects import ANY, Effects, ViolationsOnly
from netsleuth.nice.of13 import speak13
from netsleuth.nice.properties import Property
from netsleuth.nice.scripted import scripts_from_json, scripts_to_json
from netsleuth.nice.state import (
    HostState,
    MCSwitch,
    SystemState,
    pids_in_flight,
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
        self._wire_of_host = [self._host_wire[n] for n in self.host_names]  # by host index
        # per switch index: the keys of its input wire queues, ((name, port), ...) in port order
        # (made from the first state's switch: a switch's ports are fixed during a search)
        self._inputs: list[tuple] = [() for _ in self.sw_names]
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
        self._on_step = self._cb["on_step"]
        self._ctx = _PropertyContext(self, Effects(), SystemState())
        self._prop_slot = [("prop", i) for i in range(len(properties))]  # each property's footprint object
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
        # memoized components are shared, so the same objects recur; see interning.remember)
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

            fire_controller.run_handler(self, st, join, Effects(), i)
        if self.of13 or getattr(self.app_factory, "configure_on_join", False):
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
        start-up drop that is no bug of the app's packet handling.  Apps that
        say ``configure_on_join`` (POX components, whose ConnectionUp handlers
        install rules such as forwarding.hub's flood rule) get the same on 1.0.
        """
        fx = Effects()
        while any(st.to_sw):
            for i, q in enumerate(st.to_sw):
                if q:
                    fire_switches.fire_of(self, st, (OF, i), fx)

    # ------------------------------------------------------------------ enabled
    def enabled(self, st: SystemState) -> list[Transition]:
        out: list[Transition] = []
        inq_get = st.inq.get
        wires = self._wire_of_host
        move_after = self.config.move_after
        for i, hs in enumerate(st.hosts):
            if hs.to_send:
                out.append((SEND, i))
            if hs.outbox:
                out.append((OUT, i))
            if inq_get(wires[i]):
                out.append((RECV, i))
            if hs.moves_left and hs.replies_sent >= move_after:
                out.append((MOVE, i))
        inputs = self._inputs
        for i, s in enumerate(st.switches):
            keys = inputs[i]
            if len(keys) != len(s.ports):
                keys = inputs[i] = tuple((s.name, p) for p in s.ports)
            if any(map(inq_get, keys)):
                out.append((PKT, i))
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
            self._expiry_transitions(st, out)
        if st.extra[0] <= 0:
            return  # the fault budget is spent: no link, drop or duplicate fault any more
        if "link" in self.faults:
            for d1, p1, _d2, _p2 in self.links:
                i = self.index_of_dpid[d1]
                if st.switches[i].ports[p1].link_up:
                    out.append((LINKDOWN, i, p1))
        drop, dup = "drop" in self.faults, "duplicate" in self.faults
        if drop or dup:
            for (node, port), q in sorted(st.inq.items()):
                if q:
                    if drop:
                        out.append((DROP, node, port))
                    if dup:
                        out.append((DUP, node, port))

    @staticmethod
    def _expiry_transitions(st: SystemState, out: list) -> None:
        """One EXPIRE per entry with a timeout: (EXPIRE, switch, wildcards, values, priority) on 1.0,
        (EXPIRE, switch, table, OXM entries, priority) on 1.3."""
        for i, s in enumerate(st.switches):
            if s.of13 is not None:
                for e13 in s.of13.pipeline.tables:
                    if e13.idle_timeout or e13.hard_timeout:
                        out.append((EXPIRE, i, e13.table_id, e13.match.entries, e13.priority))
                continue
            for e in s.table.entries():
                if e.idle_timeout or e.hard_timeout:
                    out.append((EXPIRE, i, e.match.wildcards, e.match.values, e.priority))

    def is_fault(self, t: Transition) -> bool:
        return t[0] in FAULT_KINDS

    # ------------------------------------------------------------------ firing
    def fire(self, st: SystemState, t: Transition, footprint: bool = True) -> tuple[SystemState, Effects]:
        """The state ``t`` leads to from ``st``, and what it did (``footprint=False``: only the
        violations are recorded, for a search that needs no footprints)."""
        c = st.child()
        if footprint:
            fx = Effects()
        else:   # ViolationsOnly() without its __init__ frame
            fx = _new_effects(ViolationsOnly)
            fx.violations = []
        fire_kind = _FIRE.get(t[0])
        if fire_kind is None:
            raise ValueError(f"unknown transition {t!r}")
        fire_kind(self, c, t, fx)
        cbs = self._on_step
        if cbs:
            if footprint:
                self._props(c, cbs, fx, c)
            else:
                # without footprints a quiet property state needs no call (Property.quiet_step)
                e = c.step_quiet
                if e is None or e[0] is not c.props:
                    e = c.step_quiet = self._quiet_entry(c.props)
                if not e[1]:
                    self._props_only(c, cbs, fx, (c,))
        return c, fx

    def _quiet_entry(self, props: tuple) -> tuple[tuple, bool]:
        """(props, whether every on_step callback is quiet on it): a state keeps it, and its
        children inherit it with the property states' tuple until a callback changes that."""
        for i, _ in self._on_step:
            if not self.props[i].quiet_step(props[i]):
                return (props, False)
        return (props, True)

    def at_end(self, st: SystemState) -> list[PropertyViolation]:
        """Violations of end-of-execution properties at a state where only faults could happen."""
        fx = Effects()
        cbs = self._cb["on_end"]
        if cbs:
            self._props(st.child(), cbs, fx, st)
        return fx.violations

    def _props(self, st: SystemState, cbs: list, fx: Effects, *args: Any) -> None:
        """Call each callback of ``cbs`` as ``f(property state, context, *args)`` on the state
        ``st`` being built, and keep what they return as the new property states."""
        # Every callback sees the property states as they were (st.props is set at the end); a
        # new tuple is made only when one changes, so an unchanged tuple stays the parent's
        # object and the incremental hash skips it.
        if type(fx) is ViolationsOnly:
            self._props_only(st, cbs, fx, args)
            return
        old = st.props
        props: list | None = None
        ctx = self._ctx     # one context per System, pointed at this call's effects and state
        ctx.fx, ctx.state = fx, st
        for i, f in cbs:
            cur = old[i] if props is None else props[i]
            new = f(cur, ctx, *args)
            commutes = self.props[i].commutes
            if not commutes:
                fx.reads.add(self._prop_slot[i])
            if new is not cur and new != cur:
                if props is None:
                    props = list(old)
                props[i] = new
                if not commutes:
                    fx.writes.add(self._prop_slot[i])
                    if f.__name__ == "on_step":
                        # on_step may look at anything in the state: a change it makes
                        # depends on everything, so it commutes with nothing (DPOR).
                        fx.writes.add(ANY)
        if props is not None:
            st.props = tuple(props)

    def _props_only(self, st: SystemState, cbs: list, fx: Effects, args: tuple) -> None:
        """:meth:`_props` for a search that records no footprints: the same calls and property
        states, without the reads and writes nobody will look at."""
        old = st.props
        props: list | None = None
        ctx = self._ctx
        ctx.fx, ctx.state = fx, st
        for i, f in cbs:
            cur = old[i] if props is None else props[i]
            new = f(cur, ctx, *args)
            if new is not cur and new != cur:
                if props is None:
                    props = list(old)
                props[i] = new
        if props is not None:
            st.props = tuple(props)































        # errors and other replies: nothing to run (NOX apps rarely handle them)


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




_new_effects = object.__new__

#: What fires each kind: ``fire_<kind>(system, state, transition, effects)`` of the hosts',
#: switches' or controller's module.
_FIRE: dict[str, Callable[[System, SystemState, Transition, Effects], None]] = {
    SEND: fire_hosts.fire_send, OUT: fire_hosts.fire_out, RECV: fire_hosts.fire_recv,
    MOVE: fire_hosts.fire_move, SENDPKT: fire_hosts.fire_sendpkt,
    PKT: fire_switches.fire_pkt, OF: fire_switches.fire_of, EXPIRE: fire_switches.fire_expire,
    DROP: fire_switches.fire_fault, DUP: fire_switches.fire_fault, LINKDOWN: fire_switches.fire_linkdown,
    CTL: fire_controller.fire_ctl, TIMER: fire_controller.fire_timer, STATS: fire_controller.fire_stats,
}


