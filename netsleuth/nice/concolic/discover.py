"""NICE's discover_packets and discover_stats: the inputs worth sending, from the app's own code.

:func:`discover_packets` runs an app's ``packet_in`` concolically from one
controller state, as the switch a host is attached to would deliver that
host's packet: on a *copy* of the app (instrumented, see
:func:`~netsleuth.nice.concolic.sym.instrument`) with a fresh
:class:`ControllerAPI` whose captured messages are discarded.  It returns
one concrete packet per feasible path of the handler.  Because the handler
is a deterministic function of the app's state (the App API guarantees
it), the result depends only on ``App.key()`` and where the host is, which
is what :class:`PacketDiscoverer` memoizes on.

:func:`discover_stats` does the same for ``port_stats_in`` with symbolic
packet and byte counters, for apps that choose routes from load.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3

from netsleuth.model.ofdp import ofp
from netsleuth.model.packet import Packet
from netsleuth.nice.app import App, ControllerAPI
from netsleuth.nice.concolic.containers import instrument
from netsleuth.nice.concolic.coverage import ArcTracer, Coverage
from netsleuth.nice.concolic.engine import Exploration, explore
from netsleuth.nice.concolic.packet import Domain, HostLike, SymPacket, concrete_packet, header_vars
from netsleuth.nice.concolic.sym import SymInt, Tracer
from netsleuth.nice.errors import ScenarioError
from netsleuth.nice.state import pids_in_flight
from netsleuth.nice.transitions import SENDPKT, STATS

DEFAULT_MAX_RUNS = 64


@dataclass
class Discovery:
    """The packets (or stats) discover_* found, one per feasible path, and how."""

    inputs: tuple                      # Packets (discover_packets) or stats tuples (discover_stats)
    exploration: Exploration
    coverage: Coverage | None = None
    outcomes: tuple = ()               # per input: what the handler did ("3 msgs", "raised: ...")

    @property
    def generated(self) -> int:
        return self.exploration.generated

    @property
    def kept(self) -> int:
        return self.exploration.kept

    def to_json(self) -> dict:
        ex = self.exploration
        d: dict[str, Any] = {"paths": len(self.inputs), "generated": ex.generated, "kept": ex.kept, "runs": ex.runs,
             "duplicates": ex.duplicates, "divergences": ex.divergences, "solver_calls": ex.solver_calls,
             "truncated": ex.truncated}
        if self.coverage is not None:
            d["coverage"] = self.coverage.to_json()
        return d


def _app_modules(app: App) -> set[str]:
    """The modules whose code counts as the app's (its class hierarchy minus the API base)."""
    mods = set()
    for cls in type(app).__mro__:
        mod = cls.__module__
        if cls is App or cls is object or mod == App.__module__:
            continue
        mods.add(mod)
    return mods


def _run_handler(app: App, call: Callable[[App], None], now: float, links: tuple, tr: Tracer) -> str:
    """Run ``call`` on an instrumented copy of ``app``; the messages it issues go nowhere."""
    work = instrument(app.copy())
    api = ControllerAPI(now, links, bool(getattr(type(app), "uses_stats", False)))
    work._api = api
    try:
        if tr.observer is not None:
            with tr.observer:  # coverage: trace the handler only, not the copy above
                call(work)
        else:
            call(work)
    finally:
        work._api = None
    # A handler may store a symbolic value without branching on it (``self.high = tx > T``):
    # hashing the canonical state it leaves behind turns a stored SymBool into a branch, so
    # inputs that leave different controller states are different paths.  A stored SymInt is
    # not pinned (kind "state" is not recorded): that would enumerate counter values.
    tr.pin_kind = "state"
    try:
        hash(work.key())
    except Exception:  # noqa: BLE001 -- a key() that fails is the model checker's to report, not ours
        pass
    return f"{len(api.out)} msgs"


def _explore(run: Callable, variables: dict, domain: list, accept: Callable | None, app: App,
             max_runs: int, coverage: bool, strategy: str,
             preferences: Sequence[Any] = ()) -> tuple[Exploration, Coverage | None]:
    tracer = ArcTracer(_app_modules(app)) if coverage else None
    ex = explore(run, variables, domain, accept=accept, max_runs=max_runs, strategy=strategy, observer=tracer,
                 preferences=preferences)
    if tracer is None:
        return ex, None
    return ex, tracer.coverage(ex.infeasible())


def discover_packets(app: App, host: HostLike, known_hosts: Sequence[HostLike], *, dpid: int, in_port: int,
                     domain: Domain | None = None, links: tuple = (), now: float = 0.0,
                     max_runs: int = DEFAULT_MAX_RUNS, coverage: bool = False, strategy: str = "dfs",
                     reason: int = ofp.OFPR_NO_MATCH, buffer_id: int = 0,
                     filter_domain: Domain | None = None) -> Discovery:
    """One concrete packet per feasible path of ``app.packet_in`` for a packet ``host`` sends.

    ``app`` is the app *in the controller state to explore* (it is copied,
    never mutated).  ``dpid``/``in_port``: where ``host`` is attached, so
    where its packet reaches the controller.  ``known_hosts`` (including
    ``host``) bound the destinations through ``domain``.  ``coverage``
    measures branch coverage of the app's code (slower: opcode tracing).
    ``filter_domain`` (default: ``domain``) is the independent check each
    generated input must pass to be kept and run; giving a looser ``domain``
    than ``filter_domain`` reproduces NICE's generate-then-filter ablation.
    """
    dom = domain or Domain()
    variables = header_vars(z3.Context())  # a fresh context per exploration: see engine.explore
    constraints = dom.constraints(variables, host, known_hosts)

    def run(values: dict[str, int], tr: Tracer) -> str:
        pkt = SymPacket.make(tr, variables, values)
        total = concrete_packet(values).frame_len()
        return _run_handler(app, lambda a: a.packet_in(dpid, in_port, reason, total, buffer_id, pkt),
                            now, links, tr)

    check = filter_domain or dom

    def accept(values: dict[str, int]) -> bool:
        return check.accepts(concrete_packet(values), host, known_hosts)

    ex, cov = _explore(run, variables, constraints, accept, app, max_runs, coverage, strategy,
                       dom.preferences(variables))
    packets = []
    seen = set()
    outcomes = []
    for p in ex.paths:
        if not p.kept:
            continue
        pkt = concrete_packet(p.values)
        if pkt not in seen:  # two paths can share a representative only through imprecision
            seen.add(pkt)
            packets.append(pkt)
            outcomes.append(p.outcome)
    return Discovery(tuple(packets), ex, cov, tuple(outcomes))


STAT_FIELDS = ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes")
MIN_FRAME, MAX_FRAME = 60, 1518


def discover_stats(app: App, dpid: int, ports: Sequence[int], *, baseline: dict[int, tuple[int, ...]] | None = None,
                   max_delta: int = 1 << 20, links: tuple = (), now: float = 0.0,
                   max_runs: int = DEFAULT_MAX_RUNS, coverage: bool = False,
                   strategy: str = "dfs") -> Discovery:
    """One concrete port-stats reply per feasible path of ``app.port_stats_in``.

    Counters are symbolic 64-bit values (OpenFlow 1.0 port counters).  The
    domain: each counter is at least its ``baseline`` (counters only grow;
    ``{port: (rx_packets, tx_packets, rx_bytes, tx_bytes)}``, default 0) and
    at most ``max_delta`` packets above it, and bytes lie between 60 and
    1518 per packet counted.  The result's inputs are stats tuples in
    ``port_stats_in``'s format: ((port_no, rx_pkts, tx_pkts, rx_bytes, tx_bytes), ...).
    """
    ports = tuple(sorted(ports))
    base = baseline or {}
    variables: dict[str, z3.BitVecRef] = {}
    ctx = z3.Context()  # a fresh context per exploration: see engine.explore
    constraints = []
    bounds: dict[str, tuple[int, int]] = {}
    for p in ports:
        b = base.get(p, (0, 0, 0, 0))
        for k, name in enumerate(STAT_FIELDS):
            v = variables[f"p{p}_{name}"] = z3.BitVec(f"p{p}_{name}", 64, ctx)
            lo = b[k]
            hi = lo + (max_delta if k < 2 else max_delta * MAX_FRAME)
            bounds[f"p{p}_{name}"] = (lo, hi)
            constraints += [z3.UGE(v, lo), z3.ULE(v, hi)]
        for d in ("rx", "tx"):
            pk, by = variables[f"p{p}_{d}_packets"], variables[f"p{p}_{d}_bytes"]
            k = STAT_FIELDS.index(f"{d}_packets")
            dp, db = pk - b[k], by - b[k + 2]
            constraints += [z3.UGE(db, dp * MIN_FRAME), z3.ULE(db, dp * MAX_FRAME)]

    def stats_of(values: dict[str, int], tr: Tracer | None) -> tuple:
        rows = []
        for p in ports:
            row = [p]
            for name in STAT_FIELDS:
                key = f"p{p}_{name}"
                row.append(values[key] if tr is None else SymInt(values[key], variables[key], tr))
            rows.append(tuple(row))
        return tuple(rows)

    def run(values: dict[str, int], tr: Tracer) -> str:
        stats = stats_of(values, tr)
        return _run_handler(app, lambda a: a.port_stats_in(dpid, stats), now, links, tr)

    def accept(values: dict[str, int]) -> bool:
        for p in ports:
            b = base.get(p, (0, 0, 0, 0))
            for d, k in (("rx", 0), ("tx", 1)):
                pk, by = values[f"p{p}_{d}_packets"] - b[k], values[f"p{p}_{d}_bytes"] - b[k + 2]
                if not pk * MIN_FRAME <= by <= pk * MAX_FRAME:
                    return False
        return all(lo <= values[n] <= hi for n, (lo, hi) in bounds.items())

    # Prefer counters that did not move: what the path does not force stays at the baseline.
    prefs = [variables[n] == lo for n, (lo, _hi) in bounds.items()]
    ex, cov = _explore(run, variables, constraints, accept, app, max_runs, coverage, strategy, prefs)
    return Discovery(tuple(stats_of(p.values, None) for p in ex.paths), ex, cov,
                     tuple(p.outcome for p in ex.paths))


# --------------------------------------------------------------------------- model-checker hook


@dataclass
class PacketDiscoverer:
    """NICE's discover_packets transition: a :attr:`System.generators` entry.

    In every state, every host with budget left may send any of the packets
    discovered for it: one ``("sendpkt", host index, packet)`` per feasible
    path of ``packet_in`` from the current controller state, for a packet
    entering at the host's current attachment point.  Discovery is memoized
    per (canonical controller state ``App.key()``, host, dpid, in_port).

    **Budget.**  A generator may keep no state of its own (the search
    backtracks), so the bound is read from the hashed host state:
    ``HostState.sent``, the multiset of frames the host put on the wire
    (kept when packet lineage is on, which :func:`attach` forces).  A host
    may send while it has sent fewer than ``budget[host]`` frames in all
    (pings and replies included).  With PKT-SEQ (``pkt_seq_burst``) a host
    may also send only while fewer than ``burst`` of its frames are in flight.
    """

    budget: dict[str, int]
    domain: Domain = field(default_factory=Domain)
    max_runs: int = DEFAULT_MAX_RUNS
    max_cache: int = 100_000
    cache: dict = field(default_factory=dict)
    hits: int = 0
    misses: int = 0

    def packets(self, app: App, app_key: Any, host: HostLike, known: Sequence[HostLike], dpid: int,
                in_port: int, links: tuple = (), now: float = 0.0) -> tuple[Packet, ...]:
        key = (app_key, host.name, dpid, in_port)
        got = self.cache.get(key)
        if got is not None:
            self.hits += 1
            return got
        self.misses += 1
        got = discover_packets(app, host, known, dpid=dpid, in_port=in_port, domain=self.domain,
                               links=links, now=now, max_runs=self.max_runs).inputs
        if len(self.cache) >= self.max_cache:
            self.cache.clear()  # deterministic: a full cache is simply rebuilt
        self.cache[key] = got
        return got

    def may_send(self, system: Any, st: Any, i: int) -> bool:
        hs = st.hosts[i]
        limit = self.budget.get(hs.host.name, 0)
        if limit <= 0 or sum(n for _, n in hs.sent) >= limit:
            return False
        burst = getattr(system.config, "pkt_seq_burst", None)
        if burst is not None:
            if len(pids_in_flight(st, hs.host.name)) >= burst:  # PKT-SEQ's bound, as for scripts
                return False
        return True

    def __call__(self, system: Any, st: Any) -> list[tuple]:
        out: list[tuple] = []
        known = [hs.host for hs in st.hosts]
        app_key = None
        for i, hs in enumerate(st.hosts):
            if not self.may_send(system, st, i):
                continue
            if app_key is None:
                app_key = st.appkey
                if app_key is None:
                    app_key = st.appkey = st.app.key()
            sw_name, port = hs.location
            dpid = system.dpid_of[system.sw_index[sw_name]]
            for pkt in self.packets(st.app, app_key, hs.host, known, dpid, port, system.links, system.now):
                out.append((SENDPKT, i, pkt))
        return out


def attach(system: Any, budget: dict[str, int] | int, *, domain: Domain | None = None,
           max_runs: int = DEFAULT_MAX_RUNS) -> PacketDiscoverer:
    """Add discover_packets to ``system`` (before its initial state is built); turns lineage on.

    ``budget``: frames each host may put on the wire (an int: the same for every host).
    """
    if isinstance(budget, int):
        budget = {h: budget for h in system.host_names}
    for host in budget:
        if host not in system.host_index:
            raise ScenarioError(f"discovery budget for {host!r}, which is not a host of the topology",
                                f"use hosts {', '.join(system.host_names)}")
    system.lineage = True  # HostState.sent is the budget counter (see PacketDiscoverer)
    # Which packets are enabled depends on the controller state: for DPOR a discovered send must
    # conflict with controller handlers (System.fire adds a ("ctl",) read when this is set).
    system.sendpkt_reads_ctl = True
    gen = PacketDiscoverer(dict(budget), domain or Domain(), max_runs)
    system.generators.append(gen)
    return gen


@dataclass
class StatsDiscoverer:
    """NICE's discover_stats transition: a :attr:`System.generators` entry.

    Wherever a port-stats reply is at the head of a switch's channel to the
    controller, it proposes ``("stats", switch index, stats)`` -- the
    controller handles that reply with the discovered counters ``stats``
    instead of the model's -- once per feasible path of ``port_stats_in``.
    The model's own counters are the baseline (counters only grow), so each
    proposal is a reply the switch could have sent after more traffic.
    Memoized per (canonical controller state, dpid, baseline counters).
    Firing ``"stats"`` needs the System hook given in the integration notes.
    """

    max_delta: int = 1 << 20
    max_runs: int = DEFAULT_MAX_RUNS
    max_cache: int = 100_000
    cache: dict = field(default_factory=dict)
    hits: int = 0
    misses: int = 0

    def replies(self, app: App, app_key: Any, dpid: int, reply_stats: tuple, links: tuple = (),
                now: float = 0.0) -> tuple:
        key = (app_key, dpid, reply_stats)
        got = self.cache.get(key)
        if got is not None:
            self.hits += 1
            return got
        self.misses += 1
        baseline = {row[0]: tuple(row[1:5]) for row in reply_stats}
        got = discover_stats(app, dpid, tuple(baseline), baseline=baseline, max_delta=self.max_delta,
                             links=links, now=now, max_runs=self.max_runs).inputs
        if len(self.cache) >= self.max_cache:
            self.cache.clear()
        self.cache[key] = got
        return got

    def __call__(self, system: Any, st: Any) -> list[tuple]:
        from netsleuth.nice.messages import PortStatsReply

        out: list[tuple] = []
        for i, q in enumerate(st.to_ctrl):
            if not q or type(q[0]) is not PortStatsReply:
                continue
            app_key = st.appkey
            if app_key is None:
                app_key = st.appkey = st.app.key()
            for stats in self.replies(st.app, app_key, system.dpid_of[i], q[0].stats, system.links, system.now):
                out.append((STATS, i, stats))
        return out
