"""The concolic engine (netsleuth/nice/concolic): proxies, path exploration, domain, pyswitch discovery."""

from __future__ import annotations

import linecache
import random

import pytest
import z3

from netsleuth.model.addr import BROADCAST_MAC
from netsleuth.model.packet import ETH_ARP, ETH_IPV4, TCP, Arp, IPv4, Packet
from netsleuth.model.topo_builders import parse_topo
from netsleuth.nice import messages as m
from netsleuth.nice.app import App, ControllerAPI
from netsleuth.nice.apps.pyswitch import PySwitch, PySwitchFixed
from netsleuth.nice.concolic import Domain, SymInt, Tracer, discover_packets, discover_stats, explore, instrument
from netsleuth.nice.concolic.containers import SymDict, SymSet
from netsleuth.nice.concolic.coverage import ArcTracer

HOSTS = list(parse_topo("linear,3").hosts)  # h1..h3: MAC 1..3, IP 10.0.0.1..3
H1, H2, H3 = HOSTS


def _eval(expr, assignment: dict) -> int | bool:
    """Evaluate a z3 expression with its variables bound to concrete values."""
    subs = [(z3.BitVec(n, w), z3.BitVecVal(v, w)) for n, (v, w) in assignment.items()]
    r = z3.simplify(z3.substitute(expr, *subs))
    return z3.is_true(r) if z3.is_bool(r) else r.as_long()


# --------------------------------------------------------------------------- proxies


OPS = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
    "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
    "lshift": lambda a, b: a << (b % 10), "rshift": lambda a, b: a >> (b % 10),
}
CMPS = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
        "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}


@pytest.mark.parametrize("width", [8, 16])
def test_arithmetic_wraps_unsigned_and_the_expression_agrees(width):
    rng = random.Random(width)
    mask = (1 << width) - 1
    tr = Tracer()
    for _ in range(60):
        xv, yv = rng.randrange(1 << width), rng.randrange(1, 1 << width)
        x, y = SymInt(xv, z3.BitVec("x", width), tr), SymInt(yv, z3.BitVec("y", width), tr)
        env = {"x": (xv, width), "y": (yv, width)}
        for name, op in OPS.items():
            for res, expect in ((op(x, y), op(xv, yv) & mask), (op(x, yv), op(xv, yv) & mask),
                                (op(xv, y), op(xv, yv) & mask)):
                assert isinstance(res, SymInt), name
                assert res.value == expect, (name, xv, yv)
                # the symbolic side computes the same thing for these inputs
                assert _eval(res.expr, env) == expect, (name, xv, yv)
    # Arithmetic alone never branches, except that a symbolic divisor must be non-zero.
    assert tr.log and {str(b.cond) for b in tr.log} == {"Not(y == 0)"}


def test_wrap_examples_and_unsigned_comparisons():
    tr = Tracer()
    x = SymInt(250, z3.BitVec("x", 8), tr)
    assert (x + 10).value == 4 and (x - 251).value == 255 and (-x).value == 6 and (~x).value == 5
    y = SymInt(0x80, z3.BitVec("y", 8), tr)
    # 0x80 is 128 unsigned (not -128): above 1, and a constant outside 0..255 decides without a branch
    assert bool(y > 1) and bool(y < 300) is True and (y >= -1) is True
    assert len(tr.log) == 1 and z3.is_true(z3.simplify(z3.substitute(
        tr.log[0].cond, (z3.BitVec("y", 8), z3.BitVecVal(0x80, 8)))))


def test_comparisons_record_the_taken_condition():
    rng = random.Random(3)
    for _ in range(40):
        xv, yv = rng.randrange(256), rng.randrange(256)
        for _name, cmp in CMPS.items():
            tr = Tracer()
            x, y = SymInt(xv, z3.BitVec("x", 8), tr), SymInt(yv, z3.BitVec("y", 8), tr)
            taken = bool(cmp(x, y))
            assert taken == cmp(xv, yv)
            (b,) = tr.log
            assert b.taken == taken
            # the recorded condition holds exactly on the inputs that take the same branch
            for xo, yo in ((xv, yv), (rng.randrange(256), rng.randrange(256)), (yv, xv)):
                assert _eval(b.cond, {"x": (xo, 8), "y": (yo, 8)}) == (cmp(xo, yo) == taken)


def test_in_dict_records_the_disjunction_and_lookup_is_an_ite():
    table = {3: 7, 9: 1, 200: 7}
    for xv in (3, 9, 50):
        tr = Tracer()
        x = SymInt(xv, z3.BitVec("x", 8), tr)
        d = SymDict(table)
        found = x in d
        assert found == (xv in table)
        (b,) = tr.log
        assert b.kind == "member"
        for other in range(256):
            assert _eval(b.cond, {"x": (other, 8)}) == ((other in table) == found)
        if found:
            v = d[x]
            assert v.value == table[xv]
            for k, val in table.items():
                assert _eval(v.expr, {"x": (k, 8)}) == val
    tr = Tracer()
    s = SymSet({1, 2})
    assert SymInt(2, z3.BitVec("x", 8), tr) in s and len(tr.log) == 1


def test_hash_and_int_concretize_with_an_equality_constraint():
    tr = Tracer()
    x = SymInt(42, z3.BitVec("x", 16), tr)
    plain = {42: "a"}
    assert plain[x] == "a"      # a plain dict hashes: x is pinned to 42
    assert tr.log[0].kind == "concretize"
    n = len(tr.log)
    assert int(x) == 42 and len(tr.log) == n + 1 and tr.log[-1].kind == "concretize"
    assert hash(x) == hash(42) and len(tr.log) == n + 2
    for b in tr.log:
        assert _eval(b.cond, {"x": (42, 16)}) and not _eval(b.cond, {"x": (43, 16)})


def test_instrument_replaces_the_apps_containers():
    app = PySwitch()
    app.st = {1: {5: 2}}
    work = instrument(app.copy())
    assert type(work.st) is SymDict and type(work.st[1]) is SymDict
    assert type(app.st[1]) is dict  # the original is untouched


# --------------------------------------------------------------------------- exploration


def _handler(x, y):
    if x > 100:
        if y == x + 1:
            return "a"
        return "b"
    if x & 1:
        return "c"
    if x > 200:          # infeasible here: x <= 100 on this path
        return "never"
    return "d"


def _lookup_handler(x, table):
    if x in table:
        if table[x] == 2:
            return "two"
        return "other"
    return "missing"


def _run_vars(fn, *extra):
    def run(values, tr):
        return fn(SymInt(values["x"], z3.BitVec("x", 8), tr), SymInt(values["y"], z3.BitVec("y", 8), tr), *extra)
    return run


def test_exploration_reaches_every_feasible_branch_of_a_handler():
    variables = {"x": z3.BitVec("x", 8), "y": z3.BitVec("y", 8)}
    cov = ArcTracer({__name__})

    def run(values, tr):
        with cov:
            return _run_vars(_handler)(values, tr)

    ex = explore(run, variables, [], max_runs=32, observer=cov)
    assert sorted(p.outcome for p in ex.paths) == ["a", "b", "c", "d"]
    assert ex.generated == ex.kept == ex.runs == 4 and ex.duplicates == 0 and not ex.truncated
    report = cov.coverage(ex.infeasible())
    assert {a.function for a in report.total} == {"_handler"}
    assert len(report.total) == 8 and len(report.reached) == 7
    assert report.missed == set()                     # the 8th arc is proven infeasible, not missed
    (inf,) = report.infeasible
    assert inf.line == _handler.__code__.co_firstlineno + 7   # `if x > 200:` taken
    # each representative really drives its path when run concretely
    for p in ex.paths:
        assert _handler(p.values["x"], p.values["y"]) == p.outcome


def test_exploration_respects_domain_constraints_and_bfs_finds_the_same_paths():
    x, y = z3.BitVec("x", 8), z3.BitVec("y", 8)
    domain = [z3.ULT(x, 150), z3.Or(x == 120, x == 7, x == 8)]
    got = {}
    for strategy in ("dfs", "bfs"):
        ex = explore(_run_vars(_handler), {"x": x, "y": y}, domain, strategy=strategy,
                     accept=lambda v: v["x"] in (120, 7, 8))
        assert ex.generated == ex.kept and all(p.values["x"] in (120, 7, 8) for p in ex.paths)
        got[strategy] = sorted(p.outcome for p in ex.paths)
    assert got["dfs"] == got["bfs"] == ["a", "b", "c", "d"]


def test_member_branches_and_ite_lookups_are_explored():
    table = SymDict({3: 2, 9: 1})
    ex = explore(lambda v, tr: _lookup_handler(SymInt(v["x"], z3.BitVec("x", 8), tr), table),
                 {"x": z3.BitVec("x", 8)}, [])
    assert sorted(p.outcome for p in ex.paths) == ["missing", "other", "two"]


def test_max_runs_bounds_the_search():
    ex = explore(_run_vars(_handler), {"x": z3.BitVec("x", 8), "y": z3.BitVec("y", 8)}, [], max_runs=2)
    assert ex.runs == 2 and ex.truncated


# --------------------------------------------------------------------------- packets and pyswitch


def _independent_domain_ok(p: Packet, sender) -> bool:
    """The domain rules, restated without the engine's code."""
    others = {h.mac for h in HOSTS if h is not sender}
    if p.eth_src != sender.mac or p.eth_dst not in others | {BROADCAST_MAC}:
        return False
    if p.eth_type == ETH_ARP:
        return isinstance(p.l3, Arp) and p.l3.spa == sender.ip and p.l3.sha == sender.mac
    if p.eth_type == ETH_IPV4:
        return isinstance(p.l3, IPv4) and p.l3.src == sender.ip and p.l3.dst in {h.ip for h in HOSTS} - {sender.ip}
    return False


STATES = [{}, {H2.mac: 2}, {H2.mac: 2, H3.mac: 1}, {H1.mac: 1, H2.mac: 1, H3.mac: 3}]


@pytest.mark.parametrize("cls", [PySwitch, PySwitchFixed])
def test_pyswitch_discovery_keeps_every_generated_packet(cls):
    for table in STATES:
        for sender, port in ((H1, 1), (H2, 2)):
            app = cls()
            app.st = {1: dict(table)}
            d = discover_packets(app, sender, HOSTS, dpid=1, in_port=port)
            assert d.inputs and d.generated == d.kept == len(d.exploration.paths)
            assert d.exploration.duplicates == 0 and d.exploration.divergences == 0
            for p in d.inputs:
                assert _independent_domain_ok(p, sender), p
            assert app.st == {1: table}  # discovery never touches the state it explores


def _concrete_outputs(app: App, pkt: Packet, in_port: int) -> tuple:
    work = app.copy()
    api = ControllerAPI(0.0, (), False)
    work._api = api
    work.packet_in(1, in_port, 0, pkt.frame_len(), 0, pkt)
    work._api = None
    return tuple((type(msg).__name__, getattr(msg, "actions", None)) for _, msg in api.out)


def test_pyswitch_packet_in_branch_coverage():
    app = PySwitch()
    app.st = {1: {H2.mac: 2, H3.mac: 1}}  # h3 was learned on h1's port: forwarding there must not happen
    d = discover_packets(app, H1, HOSTS, dpid=1, in_port=1, coverage=True)
    cov = d.coverage
    packet_in = {a for a in cov.total if a.function == "PySwitch.packet_in"}
    assert len(packet_in) == 8 and cov.missed == set()
    assert cov.reached | cov.infeasible == cov.total
    # What the solver proved impossible: a multicast source (the source is h1) and a unicast
    # destination missing from the table (every other host is in it).
    lines = {linecache.getline(PySwitch.packet_in.__code__.co_filename, a.line) for a in cov.infeasible}
    assert len(cov.infeasible) == 2 and len(lines) == 2
    assert any("src >> 40" in x for x in lines) and any("dst in mactable" in x for x in lines)
    # The representatives drive three different behaviours of the real handler.
    dsts = sorted(p.eth_dst for p in d.inputs)
    assert dsts == [H2.mac, H3.mac, BROADCAST_MAC]
    outs = {p.eth_dst: _concrete_outputs(app, p, 1) for p in d.inputs}
    assert outs[H2.mac][0][0] == "FlowMod" and outs[H3.mac][0][0] == "PacketOut"
    # Concrete replay of the representatives reaches exactly the arcs the engine reported.
    tracer = ArcTracer({PySwitch.__module__})
    for p in d.inputs:
        work = app.copy()
        work._api = ControllerAPI(0.0, (), False)
        with tracer:
            work.packet_in(1, 1, 0, p.frame_len(), 0, p)
    assert tracer.coverage().reached == cov.reached


def test_pyswitch_every_branch_reached_without_domain_constraints():
    app = PySwitch()
    app.st = {1: {H2.mac: 2, H3.mac: 1}}
    free = Domain(src_is_sender=False, dst_is_known=False)
    d = discover_packets(app, H1, HOSTS, dpid=1, in_port=1, coverage=True, domain=free)
    packet_in = {a for a in d.coverage.total if a.function == "PySwitch.packet_in"}
    assert packet_in <= d.coverage.reached and len(packet_in) == 8
    assert d.generated == d.kept
    assert any(p.eth_src >> 40 & 1 for p in d.inputs)  # found a multicast source to skip learning


class _L4App(App):
    """A handler that looks at ARP and TCP headers (layout is chosen by branches on eth_type)."""

    def __init__(self) -> None:
        self.seen = {80: "web"}

    def packet_in(self, dpid, in_port, reason, total_len, buffer_id, packet):
        if packet.eth_type == ETH_ARP:
            if packet.l3.op == 1:
                self.flood(dpid, buffer_id, in_port)
            return
        l4 = packet.l4
        if isinstance(l4, TCP) and l4.dst_port in self.seen:
            if l4.flags & 0x02:
                self.flood(dpid, buffer_id, in_port)


def test_header_layout_follows_the_symbolic_ethertype():
    d = discover_packets(_L4App(), H1, HOSTS, dpid=1, in_port=1, coverage=True)
    assert d.coverage.missed == set() and d.generated == d.kept
    kinds = {(p.eth_type, type(p.l3).__name__, type(p.l4).__name__ if p.l4 else None) for p in d.inputs}
    assert (ETH_ARP, "Arp", None) in kinds and (ETH_IPV4, "IPv4", "TCP") in kinds
    assert any(isinstance(p.l4, TCP) and p.l4.dst_port == 80 and p.l4.flags & 2 for p in d.inputs)
    assert any(isinstance(p.l3, Arp) and p.l3.op == 2 for p in d.inputs)


class _LoadApp(App):
    uses_stats = True

    def __init__(self) -> None:
        self.table = "always-on"

    def port_stats_in(self, dpid, stats):
        for port, _rx_p, _tx_p, _rx_b, tx_b in stats:
            if port == 2 and tx_b > 1_000_000:
                self.table = "on-demand"
                return
        if stats[0][1] > 10:
            self.table = "busy"


class _StoresLoad(App):
    """Stores the comparison instead of branching on it (as energy_te does)."""

    uses_stats = True

    def __init__(self) -> None:
        self.high = False

    def port_stats_in(self, dpid, stats):
        self.high = stats[0][2] - 100 >= 5


def test_discover_stats_splits_on_the_state_the_handler_leaves():
    d = discover_stats(_StoresLoad(), 1, (1,), baseline={1: (0, 100, 0, 6000)})
    assert len(d.inputs) == 2 and d.generated == d.kept
    assert sorted(stats[0][2] - 100 >= 5 for stats in d.inputs) == [False, True]


def test_discover_stats_finds_each_load_regime():
    d = discover_stats(_LoadApp(), 1, (1, 2), baseline={1: (5, 5, 300, 300)})
    assert d.generated == d.kept and len(d.inputs) == 3
    regimes = set()
    for stats in d.inputs:
        for port, _rx_p, tx_p, _rx_b, tx_b in stats:
            assert 60 * (tx_p - (5 if port == 1 else 0)) <= tx_b - (300 if port == 1 else 0)
        app = _LoadApp()
        app.port_stats_in(1, stats)
        regimes.add(app.table)
    assert regimes == {"always-on", "on-demand", "busy"}


def test_discover_packets_transition_in_the_model_checker():
    from netsleuth.nice.concolic.discover import attach
    from netsleuth.nice.explore import Explorer, SearchOptions
    from netsleuth.nice.loading import make_system
    from netsleuth.nice.scenarios import build_config

    system = make_system(build_config("app:pyswitch", scenario="pings", pings=0))
    disc = attach(system, {"h1": 1, "h2": 1})
    st = system.initial()
    ts = [t for t in system.enabled(st) if t[0] == "sendpkt"]
    known = [hs.host for hs in st.hosts]
    assert {t[1] for t in ts} == {0, 1}
    for t in ts:
        sender = known[t[1]]
        assert Domain().accepts(t[2], sender, known) and t[2].eth_src == sender.mac != t[2].eth_dst
    misses = disc.misses
    assert system.enabled(st) == system.enabled(st) and disc.misses == misses  # memoized per state
    # h1 sends one discovered packet: the app did not change, so h2's packets come from the cache
    nxt, _ = system.fire(st, next(t for t in ts if t[1] == 0))
    assert [t for t in system.enabled(nxt) if t[0] == "sendpkt" and t[1] == 1] == \
        [t for t in ts if t[1] == 1]
    assert disc.misses == misses
    # h2's budget is one frame: once sent, it proposes nothing more
    nxt2, _ = system.fire(nxt, next(t for t in ts if t[1] == 1))
    assert not [t for t in system.enabled(nxt2) if t[0] == "sendpkt" and t[1] == 1]
    # the bounded model is finite: an exhaustive search completes and meets new controller states
    r = Explorer(system, SearchOptions()).run()
    assert r.completed and r.unique_states > 10
    assert disc.misses > misses


class _Crashy(App):
    def packet_in(self, dpid, in_port, reason, total_len, buffer_id, packet):
        if packet.eth_type == ETH_ARP:
            raise RuntimeError("no ARP support")
        self.flood(dpid, buffer_id, in_port)


def test_a_crashing_path_is_still_discovered_and_discovery_is_deterministic():
    d = discover_packets(_Crashy(), H1, HOSTS, dpid=1, in_port=1)
    by_type = {p.eth_type: o for p, o in zip(d.inputs, d.outcomes, strict=True)}
    assert by_type[ETH_ARP].startswith("raised: RuntimeError") and by_type[ETH_IPV4] == "1 msgs"
    app = PySwitch()
    app.st = {1: {H2.mac: 2, H3.mac: 1}}
    runs = [discover_packets(app, H1, HOSTS, dpid=1, in_port=1).inputs for _ in range(2)]
    assert runs[0] == runs[1]


def test_stats_discoverer_proposes_one_reply_per_load_regime():
    from netsleuth.nice.concolic.discover import StatsDiscoverer
    from netsleuth.nice.scenarios import build_config
    from netsleuth.nice.system import System

    system = System(build_config("app:pyswitch", scenario="pings", pings=0), _StoresLoad, [])
    st = system.initial()
    gen = StatsDiscoverer()
    assert gen(system, st) == []  # no stats reply queued: nothing to propose
    st = st.child()
    model_stats = ((1, 3, 100, 180, 6000), (2, 0, 0, 0, 0))
    st.to_ctrl[0] = (m.PortStatsReply(model_stats),)
    ts = gen(system, st)
    assert {t[0] for t in ts} == {"stats"} and {t[1] for t in ts} == {0} and len(ts) == 2
    highs = set()
    for _, _, stats in ts:
        for row, base in zip(stats, model_stats, strict=False):
            assert row[0] == base[0]
            assert all(v >= b for v, b in zip(row[1:], base[1:], strict=True))  # counters only grow
        highs.add(stats[0][2] - 100 >= 5)
    assert highs == {False, True}
    assert gen(system, st) == ts and gen.misses == 1 and gen.hits == 1


def test_kept_is_measured_domain_as_a_filter_keeps_less():
    app = PySwitch()
    app.st = {1: {H2.mac: 2}}
    free = Domain(src_is_sender=False, dst_is_known=False)
    d = discover_packets(app, H1, HOSTS, dpid=1, in_port=1, domain=free, filter_domain=Domain())
    assert d.generated > d.kept and len(d.exploration.paths) > len(d.inputs)
    assert all(_independent_domain_ok(p, H1) for p in d.inputs)


def test_branches_behind_an_infeasible_branch_are_not_reported_missed():
    app = PySwitch()
    app.st = {1: {}}  # nothing learned: `dst in mactable` can only be false for h1's packets
    cov = discover_packets(app, H1, HOSTS, dpid=1, in_port=1, coverage=True).coverage
    assert cov.missed == set() and cov.reached | cov.infeasible == cov.total
    behind = {linecache.getline(PySwitch.packet_in.__code__.co_filename, a.line) for a in cov.behind}
    assert len(cov.behind) == 2 and all("outport != in_port" in x for x in behind)
