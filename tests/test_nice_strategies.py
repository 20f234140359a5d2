"""Strategies as filters, DPOR against full search, random walks, the app API, user properties."""

from __future__ import annotations

import pytest

from netsleuth.model.actions import Output
from netsleuth.model.match import Match
from netsleuth.nice.app import App, ControllerAPI
from netsleuth.nice.errors import AppError
from netsleuth.nice.explore import Explorer, SearchOptions
from netsleuth.nice.loading import load_app, make_system
from netsleuth.nice.properties import Property
from netsleuth.nice.property_registry import LIBRARY, register, resolve
from netsleuth.nice.scenarios import build_config


def _run(app="pyswitch", strategy="full", dpor=False, burst=None, **kw):
    cfg = build_config(f"app:{app}", **kw)
    if burst is not None:
        cfg.pkt_seq_burst = burst
    if strategy == "unusual":
        cfg.track_issue_order = True
    system = make_system(cfg)
    return Explorer(system, SearchOptions(strategy=strategy, dpor=dpor)).run(), system


SMALL = [
    dict(scenario="direct", pings=2),
    dict(scenario="pings", pings=3, properties=("NoBlackHoles", "NoForgottenPackets")),
    dict(scenario="mobile", strategy="pkt-seq", burst=1),
    dict(scenario="loop", app="pyswitch-fixed"),
    dict(scenario="direct", pings=3, app="pyswitch-fixed", properties=("StrictDirectPaths", "DirectPaths")),
]


@pytest.mark.parametrize("case", SMALL, ids=lambda c: "-".join(str(v) for v in c.values()))
def test_dpor_explores_no_more_states_and_finds_the_same_violations(case):
    full, _ = _run(**case)
    red, _ = _run(dpor=True, **case)
    assert full.completed and red.completed
    assert red.unique_states <= full.unique_states
    assert set(red.violation_counts) == set(full.violation_counts)
    assert red.transitions < full.transitions


def test_dpor_finds_the_loop_of_bug_iii():
    cfg = build_config("app:pyswitch", scenario="loop")
    for dpor in (False, True):
        r = Explorer(make_system(cfg), SearchOptions(dpor=dpor, stop_at_first=True)).run()
        assert r.found and r.found[0].violation.prop == "NoForwardingLoops"


def test_pkt_seq_bounds_outstanding_packets():
    full, _ = _run(scenario="pings", pings=3)
    seq, system = _run(scenario="pings", pings=3, strategy="pkt-seq", burst=1)
    assert seq.completed and seq.unique_states < full.unique_states
    # with a burst of one, h1 never has two pings in flight: check every state of a walk
    st = system.initial()
    while True:
        en = [t for t in system.enabled(st) if not (t[0] == "send" and st.hosts[t[1]].credits == 0)]
        if not en:
            break
        assert st.hosts[0].credits in (0, 1)
        st, _ = system.fire(st, en[0])
    assert st.hosts[0].to_send == ()


def test_no_delay_makes_controller_exchanges_atomic():
    full, _ = _run(scenario="pings", pings=2)
    nd, system = _run(scenario="pings", pings=2, strategy="no-delay")
    assert nd.completed and nd.unique_states < full.unique_states
    from netsleuth.nice.filters import _filter_no_delay
    st = system.initial()
    for t in [("send", 0), ("pkt", 0)]:
        st, _ = system.fire(st, t)
    en = _filter_no_delay(system, st, system.enabled(st))
    assert en == [("ctl", 0)]
    st, _ = system.fire(st, ("ctl", 0))
    assert _filter_no_delay(system, st, system.enabled(st)) == [("of", 0)]


class InstallEverywhere(App):
    """On every packet_in, installs the same forwarding rule on every switch, in dpid order."""

    name = "install-everywhere"

    def __init__(self):
        self.done = False

    def packet_in(self, dpid, in_port, reason, total_len, buffer_id, packet):
        if not self.done:
            self.done = True
            for d in (1, 2, 3):
                self.install_rule(d, Match.build(dl_dst=packet.eth_dst), (Output(0xFFFB),))  # FLOOD
        self.flood(dpid, buffer_id, in_port)


def test_unusual_applies_a_handlers_messages_in_reverse_order():
    full, _ = _run(scenario="pings", pings=2)
    un, _ = _run(scenario="pings", pings=2, strategy="unusual")
    assert un.completed and un.unique_states < full.unique_states
    case = dict(app="tests.test_nice_strategies:InstallEverywhere", topo="linear,3", hosts="h1>h3:1")
    full, _ = _run(**case)
    un, system = _run(strategy="unusual", **case)
    assert un.completed and un.unique_states < full.unique_states
    from netsleuth.nice.filters import _filter_unusual
    st = system.initial().child()
    from netsleuth.nice import messages as m
    st.to_sw[0] = (m.Barrier(),)
    st.to_sw[2] = (m.Barrier(),)
    st.extra = (0, (0, 1, 2))               # the handler addressed s1, s2, s3
    en = _filter_unusual(system, st, system.enabled(st))
    assert ("of", 2) in en and ("of", 0) not in en
    # while a packet can move, control-plane work waits
    st.inq[("s2", 1)] = ((st.hosts[0].host.ping(1, 1, 1)[0], None),)
    en = _filter_unusual(system, st, system.enabled(st))
    assert en == [("send", 0), ("pkt", 1)]   # sends stay enabled, as in NICE


def test_flow_ir_interleaves_only_within_a_flow():
    case = dict(topo="single,4", hosts="h1>h2:1,h3>h4:1")
    full, _ = _run(**case)
    fir, _ = _run(strategy="flow-ir", **case)
    assert full.completed and fir.completed
    assert fir.unique_states < full.unique_states


def test_random_walk_is_seeded_and_finds_bug_iii():
    cfg = build_config("app:pyswitch", scenario="loop")
    runs = []
    for _ in range(2):
        r = Explorer(make_system(cfg), SearchOptions(strategy="random", seed=7, walks=30, stop_at_first=True)).run()
        runs.append((r.transitions, r.found[0].path if r.found else None))
    assert runs[0] == runs[1] and runs[0][1] is not None
    other = Explorer(make_system(cfg), SearchOptions(strategy="random", seed=8, walks=30, stop_at_first=True)).run()
    assert other.found and other.found[0].path != runs[0][1]


class Counter(App):
    """A plain app using the default copy/key: counts packet_ins per switch, floods."""

    name = "counter"

    def __init__(self):
        self.seen = {}
        self.log = []

    def packet_in(self, dpid, in_port, reason, total_len, buffer_id, packet):
        self.seen[dpid] = self.seen.get(dpid, 0) + 1
        self.log.append(round(self.random(), 6))
        self.flood(dpid, buffer_id, in_port)


def test_default_app_state_copy_and_key():
    a = Counter()
    a._api = ControllerAPI(0.0, (), False)
    a.packet_in(1, 1, 0, 60, 0, None)
    b = a.copy()
    assert b.key() == a.key() and b.seen == {1: 1} and b.seen is not a.seen
    b._api = ControllerAPI(0.0, (), False)
    b.packet_in(1, 1, 0, 60, 0, None)
    assert b.key() != a.key() and a.seen == {1: 1}
    # randomness comes from state: the same state draws the same number
    c = a.copy()
    c._api = ControllerAPI(0.0, (), False)
    c.packet_in(1, 1, 0, 60, 0, None)
    assert c.log == b.log and c.key() == b.key()
    with pytest.raises(AppError):
        a.request_port_stats(1)
    a._api = None
    with pytest.raises(AppError):
        a.install_rule(1, Match.build(dl_dst=1), (Output(1),))


def test_user_app_by_module_path_runs():
    cls = load_app("tests.test_nice_strategies:Counter")
    assert cls.__name__ == "Counter" and issubclass(cls, App)
    cfg = build_config("app:tests.test_nice_strategies:Counter", scenario="pings", pings=1,
                       properties=("NoBlackHoles",))
    r = Explorer(make_system(cfg), SearchOptions()).run()
    assert r.completed and r.unique_states > 10 and not r.violation_counts


@register
class NeverFlood(Property):
    """A user property: no switch ever emits a packet back towards h1's switch port 2 (a toy)."""

    name = "NoPacketInAtS2"
    needs_pid = True

    def on_packet_in(self, ps, ctx, switch, pid, msg):
        if switch == "s2":
            ctx.violation(self.name, f"packet_in at s2: {msg.packet.summary()}", switches=("s2",))
        return ps


def test_user_property_written_as_a_small_class():
    assert "NoPacketInAtS2" in LIBRARY
    r, _ = _run(scenario="pings", pings=1, properties=("NoPacketInAtS2",))
    assert r.violation_counts.get("NoPacketInAtS2", 0) > 0
    assert resolve(["tests.test_nice_strategies:NeverFlood"])[0].name == "NoPacketInAtS2"


def test_faults_are_optional_transitions():
    plain, _ = _run(scenario="pings", pings=1, properties=("NoBlackHoles",))
    assert not plain.violation_counts
    drop, _ = _run(scenario="pings", pings=1, properties=("NoBlackHoles",), faults=("drop",))
    assert drop.violation_counts.get("NoBlackHoles", 0) > 0          # a dropped ping never arrives
    dup, _ = _run(scenario="pings", pings=1, properties=("NoForgottenPackets",), faults=("duplicate",))
    assert dup.completed and dup.unique_states > plain.unique_states
    exp, _ = _run(scenario="pings", pings=2, faults=("expiry",))
    full, _ = _run(scenario="pings", pings=2)
    assert exp.completed and exp.unique_states > full.unique_states


def test_generator_seam_adds_host_sends_that_replay(tmp_path):
    """The seam input discovery plugs into: generators add extra ("sendpkt", host, packet) transitions."""
    from netsleuth.model.packet import icmp_echo
    from netsleuth.nice.explore import Found
    from netsleuth.nice.job import write_counterexample
    from netsleuth.nice.violation import PropertyViolation
    from netsleuth.trace.io import read_trace

    system = make_system(build_config("app:pyswitch", scenario="pings", pings=0, properties=("NoBlackHoles",)))
    h1, h2 = system.topology.host("h1"), system.topology.host("h2")
    pkt = icmp_echo(h1.mac, h2.mac, h1.ip, h2.ip, 9, 9)

    def gen(sys_, st):
        return [("sendpkt", 0, pkt)] if not st.hosts[0].sent else []

    system.generators.append(gen)
    r = Explorer(system, SearchOptions()).run()
    assert r.completed and r.unique_states > 10 and not r.violation_counts
    st = system.initial()
    path = []
    for _ in range(3):
        t = system.enabled(st)[0]
        path.append(t)
        st, _ = system.fire(st, t)
    assert path[0] == ("sendpkt", 0, pkt)
    f = Found(PropertyViolation("NoBlackHoles", "test"), path, 3, 0.0, False)
    write_counterexample(tmp_path / "c.jsonl", system, f)
    trace = read_trace(tmp_path / "c.jsonl")
    from netsleuth.trace import schema as ts
    step0 = next(e for e in trace.events if isinstance(e, ts.McStep))
    assert step0.transition["kind"] == "sendpkt" and "ICMP" in step0.what


def test_link_failure_fault_tells_the_controller_and_loses_packets():
    plain, _ = _run(scenario="pings", pings=1, properties=("NoBlackHoles",))
    link, system = _run(scenario="pings", pings=1, properties=("NoBlackHoles",), faults=("link",))
    assert link.completed and link.unique_states > plain.unique_states
    assert link.violation_counts.get("NoBlackHoles", 0) > 0   # a ping on the failed link is lost
    st = system.initial()
    t = next(t for t in system.enabled(st) if t[0] == "linkdown")
    st, _ = system.fire(st, t)
    assert all(not s.ports[2].link_up for s in st.switches)
    from netsleuth.nice import messages as m
    assert all(q and isinstance(q[-1], m.PortStatus) and not q[-1].link_up for q in st.to_ctrl)
    assert not any(x[0] == "linkdown" for x in system.enabled(st))   # budget of one fault per path


class StatsWatcher(App):
    """Floods, and asks s1 for port stats on every packet_in; remembers the last rx total."""

    name = "stats-watcher"
    uses_stats = True

    def __init__(self):
        self.rx = {}

    def packet_in(self, dpid, in_port, reason, total_len, buffer_id, packet):
        self.flood(dpid, buffer_id, in_port)
        self.request_port_stats(dpid)

    def port_stats_in(self, dpid, stats):
        self.rx[dpid] = sum(s[1] for s in stats)


def test_statistics_reach_the_app_and_counters_become_state():
    cfg = build_config("app:tests.test_nice_strategies:StatsWatcher", scenario="pings", pings=1)
    system = make_system(cfg)
    r = Explorer(system, SearchOptions()).run()
    assert r.completed
    st = system.initial()
    while True:  # run in canonical order to the end
        en = system.enabled(st)
        if not en:
            break
        st, _ = system.fire(st, en[0])
    assert st.app.rx and all(v >= 1 for v in st.app.rx.values())
    assert st.switches[0].with_counters and len(st.switches[0].key()) == 7


class TimerApp(App):
    """Posts a timer when s1 joins; the timer installs a drop-everything rule on s1."""

    name = "timer-app"

    def __init__(self):
        self.fired = 0

    def datapath_join(self, dpid, ports):
        if dpid == 1:
            self.post_timer("cleanup")

    def timer(self, name):
        self.fired += 1
        self.install_rule(1, Match.build(), ())

    def packet_in(self, dpid, in_port, reason, total_len, buffer_id, packet):
        self.flood(dpid, buffer_id, in_port)


def test_timers_are_transitions_of_the_controller():
    cfg = build_config("app:tests.test_nice_strategies:TimerApp", scenario="pings", pings=1,
                       properties=("NoBlackHoles",))
    system = make_system(cfg)
    st = system.initial()
    assert ("timer", "cleanup") in system.enabled(st)
    st, _ = system.fire(st, ("timer", "cleanup"))
    assert st.app.fired == 1 and ("timer", "cleanup") not in system.enabled(st)
    st, _ = system.fire(st, ("of", 0))
    assert len(st.switches[0].table) == 1
    r = Explorer(make_system(cfg), SearchOptions()).run()
    # the ping is lost on the paths where the drop rule is in place before it reaches s1
    assert r.completed and r.violation_counts.get("NoBlackHoles", 0) > 0


def test_dpor_is_not_applied_where_sleep_sets_would_miss_a_bug() -> None:
    """Under NO-DELAY the load balancer's BUG-IX is found; sleep sets on top of that
    state-wide filter once pruned the interleaving it needs, so DPOR must not."""
    from netsleuth.nice.job import CheckOptions, check

    found = []
    for dpor in (False, True):
        d = check(CheckOptions(app="loadbalancer-bug-ix", scenario="bug-ix", strategy="pkt-seq+no-delay", dpor=dpor,
                               properties=("FlowAffinity",)))
        found.append(d["violation_counts"].get("FlowAffinity", 0) > 0)
        assert d["scenario"] == "bug-ix"
        if dpor:
            assert "no-delay" in d["dpor_note"]
    assert found == [True, True]
