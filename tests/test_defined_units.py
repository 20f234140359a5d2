"""DEFINED building blocks: orderings, rollback mechanics, lockstep stepping, topologies."""

from __future__ import annotations

import random

import pytest

from netsleuth.defined.lockstep import Lockstep
from netsleuth.defined.message import Entry, Tags
from netsleuth.defined.node import Node
from netsleuth.defined.node_runtime import NodeCheckpoint
from netsleuth.defined.ordering import OrderingError, by_name
from netsleuth.defined.rollback import RBRuntime
from netsleuth.defined.scenarios import DefinedScenarioError, build
from netsleuth.defined.topologies import parse_net
from netsleuth.errors import UnknownTopologyError

ORDERINGS = ["defined", "hops", "origin", "reverse", "random:0", "random:9"]


def _random_tags(rng: random.Random) -> Tags:
    return Tags(rng.randrange(5), rng.randrange(0, 50000), rng.randrange(0, 6), rng.choice("ABCD"),
                rng.randrange(-2, 4), "ext", rng.choice("ABCD"), rng.randrange(1 << 62))


@pytest.mark.parametrize("name", ORDERINGS)
def test_every_ordering_is_causal_and_its_level_prefixes_its_key(name):
    o = by_name(name)
    rng = random.Random(1)
    for _ in range(2000):
        t = _random_tags(rng)
        c = t.child(rng.choice("ABCD"), rng.randrange(1 << 62), rng.randrange(1, 20000), hop_bound=4)
        assert o.level(c) > o.level(t)
        assert o.key(c) > o.key(t)
        assert o.key(t)[:len(o.level(t))] == o.level(t)


def test_the_paper_ordering_sorts_by_delay_then_origin_then_sequence():
    o = by_name("defined")
    a = Tags(1, 10, 1, "B", 0, "ext", "X", 5)
    b = Tags(1, 20, 1, "A", 0, "ext", "X", 1)
    c = Tags(1, 10, 1, "A", 3, "ext", "X", 9)
    d = Tags(1, 10, 1, "A", 2, "ext", "X", 9)
    e = Tags(0, 99, 9, "Z", 9, "ext", "Z", 9)
    assert sorted([a, b, c, d, e], key=o.key) == [e, d, c, a, b]


def test_every_ordering_keeps_one_origins_external_events_in_sequence():
    for name in ORDERINGS:
        o = by_name(name)
        first = Tags(3, 0, 0, "A", 4, "ext", "A", 0)
        then = Tags(3, 0, 0, "A", 5, "ext", "A", 0)
        assert o.key(first) < o.key(then), name


def test_bad_ordering_names_raise_with_a_fix():
    with pytest.raises(OrderingError) as e:
        by_name("fastest")
    assert "defined" in e.value.fix
    with pytest.raises(OrderingError):
        by_name("random:x")


class Recorder(Node):
    """Sends one message to its peer per message it gets, so rollbacks have something to unsend."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.seen: list[str] = []

    def on_message(self, ctx, src, payload):
        self.seen.append(payload)
        ctx.send("peer", f"after {payload} I had {len(self.seen)}")


class Echo(Node):
    def on_message(self, ctx, src, payload):
        ctx.send("peer", payload)  # independent of earlier messages


class FakeTransport:
    def __init__(self) -> None:
        self.sent: list[Entry] = []
        self.anti: list[int] = []

    def transmit(self, e, depart):
        self.sent.append(e)

    def transmit_anti(self, src, dst, uid, depart):
        self.anti.append(uid)


def _rb_host(tr: FakeTransport, every: int = 1) -> RBRuntime:
    uid = iter(range(1000, 10**6))
    return RBRuntime("X", Recorder("X"), {"peer": 100, "a": 100}, interval=0.25, hop_bound=64, rng_seed="x",
                  new_uid=uid.__next__, ordering=by_name("defined"), transport=tr, horizon=10, window=8,
                  proc_time=0.0, restore_time=0.0, checkpoint_every=every)


def _msg(uid: int, delay: int, payload: str) -> Entry:
    return Entry(uid, "msg", "X", "a", Tags(0, delay, 1, "a", 0, "ext", "a", uid), payload)


def test_rollback_restores_state_replays_in_order_and_unsends_what_changed():
    tr = FakeTransport()
    h = _rb_host(tr)
    h.arrive(_msg(1, 100, "m1"))
    h.arrive(_msg(3, 300, "m3"))
    assert h.st.app.seen == ["m1", "m3"] and h.counters.rollbacks == 0
    h.arrive(_msg(2, 200, "m2"))  # arrives late: belongs between m1 and m3
    assert h.st.app.seen == ["m1", "m2", "m3"]
    assert h.counters.rollbacks == 1 and h.counters.rolled_back_deliveries == 1
    # m3's reply changed ("I had 3" instead of "I had 2"): the old one is unsent.
    old = [e for e in tr.sent if e.payload == "after m3 I had 2"]
    assert [e.uid for e in old] == tr.anti
    assert [e.payload for e in tr.sent][-2:] == ["after m2 I had 2", "after m3 I had 3"]
    assert [r[4] for r in h.delivery_sequence()] == ['"m1"', '"m2"', '"m3"']


def test_rollback_keeps_messages_the_replay_sends_again_lazy_cancellation():
    tr = FakeTransport()
    uid = iter(range(1000, 10**6))
    h = RBRuntime("X", Echo("X"), {"peer": 100, "a": 100}, interval=0.25, hop_bound=64, rng_seed="x",
               new_uid=uid.__next__, ordering=by_name("defined"), transport=tr, horizon=10, window=8,
               proc_time=0.0, restore_time=0.0)
    h.arrive(_msg(1, 100, "m1"))
    h.arrive(_msg(3, 300, "m3"))
    h.arrive(_msg(2, 200, "m2"))
    assert h.counters.rollbacks == 1
    assert tr.anti == [] and [e.payload for e in tr.sent] == ["m1", "m3", "m2"]


def test_sparse_checkpoints_replay_from_further_back_with_the_same_outcome():
    trs = []
    for every in (1, 3):
        tr = FakeTransport()
        h = _rb_host(tr, every)
        for uid, d in ((1, 100), (2, 200), (4, 400), (5, 500), (3, 300)):
            h.arrive(_msg(uid, d, f"m{uid}"))
        assert h.st.app.seen == ["m1", "m2", "m3", "m4", "m5"]
        assert sum(c is not None for c in h.ckpts) == (5 if every == 1 else 2)
        trs.append((tr, h.counters.rolled_back_deliveries))
    (dense, dense_rb), (sparse, sparse_rb) = trs
    assert sparse_rb > dense_rb  # restored an earlier checkpoint ...
    assert len(sparse.anti) == len(dense.anti) == 2  # ... but unsent only what really changed
    assert [e.payload for e in sparse.sent] == [e.payload for e in dense.sent]


def test_rollback_notice_for_a_delivered_message_rolls_the_receiver_back():
    tr = FakeTransport()
    h = _rb_host(tr)
    for uid, d in ((1, 100), (2, 200), (3, 300)):
        h.arrive(_msg(uid, d, f"m{uid}"))
    h.anti(2)
    assert h.st.app.seen == ["m1", "m3"]
    assert h.counters.rollbacks == 1


def test_a_checkpoint_is_a_deep_copy():
    st = NodeCheckpoint(app=Recorder("X"))
    blob = st.snapshot()
    st.app.seen.append("later")
    assert NodeCheckpoint.restore(blob).app.seen == []


def test_lockstep_stepping_api():
    sc = build("bgp-med")
    ext = [{"node": x.node, "group": 2, "oseq": i, "event": x.event} for i, x in enumerate(sc.externals)]
    ext[2]["oseq"] = 1  # R2's second event
    ext[1]["oseq"] = 0
    ls = Lockstep(sc.net, sc.factory, ext, horizon=sc.horizon)
    d = ls.step_event()
    assert d.node == "R1" and d.entry.kind == "start"
    rest = ls.step_phase()
    assert [x.node for x in rest] == ["R2", "R3"]
    g = ls.step_group()
    assert {x.entry.tags.group for x in g} == {2}
    assert ls.done
    # run_until stops right where the predicate first holds.
    ls2 = Lockstep(sc.net, sc.factory, ext, horizon=sc.horizon)
    hit = ls2.run_until(lambda d: d.node == "R3" and ls2.hosts["R3"].st.app.best.get(
        "203.0.113.0/24") == "p1")
    assert hit is not None and hit.entry.src == "R1"
    assert ls2.step_event() is None  # it was the last event
    # Switching the ordering mid-run changes what comes next.
    ls3 = Lockstep(sc.net, sc.factory, ext, horizon=sc.horizon)
    ls3.step_group()
    ls3.set_ordering("origin")
    ls3.run()
    assert ls3.routes()["R3"] == {"203.0.113.0/24": "p3"}


def test_topologies():
    sprint = parse_net("topozoo/Sprint")
    assert len(sprint.nodes) == 11 and len(sprint.links) == 18
    assert all(us > 100 for _, _, us in sprint.links)
    assert parse_net("brite,40,3") == parse_net("brite,40,3")
    b = parse_net("brite,40,3")
    g = b.graph()
    assert len(b.nodes) == 40 and min(d for _, d in g.degree()) >= 2
    for bad in ("brite,x", "topozoo/Atlantis", "torus"):
        with pytest.raises(UnknownTopologyError):
            parse_net(bad)


def test_scenario_errors_name_the_fix():
    with pytest.raises(DefinedScenarioError) as e:
        build("bgp-med", topo="brite,20")
    assert "ospf" in e.value.fix
    with pytest.raises(DefinedScenarioError):
        build("isis")
    with pytest.raises(DefinedScenarioError):
        build("rip-timer", variant="cisco")


def test_ospf_warm_start_floods_only_the_events():
    from netsleuth.defined.sim import SimConfig, simulate

    cold, warm = build("ospf", topo="brite,12,2"), build("ospf", topo="brite,12,2", variant="warm")
    rc = simulate(cold.net, cold.factory, cold.externals, SimConfig(mode="rb", seed=1, horizon=cold.horizon))
    rw = simulate(warm.net, warm.factory, warm.externals, SimConfig(mode="rb", seed=1, horizon=warm.horizon))
    assert not warm.bug(rw.states) and not cold.bug(rc.states)
    assert rw.routes == rc.routes
    assert rw.totals()["sends"] < rc.totals()["sends"]
