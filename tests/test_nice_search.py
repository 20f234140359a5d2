"""The model checker's search: canonical states, order independence, copy-on-write."""

from __future__ import annotations

from collections import deque

import pytest

from netsleuth.model.actions import Output
from netsleuth.model.match import Match
from netsleuth.model.ofdp import ofp
from netsleuth.nice import messages as m
from netsleuth.nice.app import App
from netsleuth.nice.explore import Explorer, SearchOptions
from netsleuth.nice.loading import make_system
from netsleuth.nice.scenarios import build_config
from netsleuth.nice.system import System


def _system(app="pyswitch", **kw) -> System:
    return make_system(build_config(f"app:{app}", **kw))


@pytest.mark.parametrize("n", [2, 3])
def test_table1_counts_do_not_depend_on_exploration_order(n):
    fwd = Explorer(_system(scenario="pings", pings=n), SearchOptions(order="forward")).run()
    rev = Explorer(_system(scenario="pings", pings=n), SearchOptions(order="reverse")).run()
    assert fwd.completed and rev.completed
    assert (fwd.transitions, fwd.unique_states) == (rev.transitions, rev.unique_states)
    assert (fwd.transitions, fwd.unique_states) == {2: (492, 288), 3: (10_616, 4_474)}[n]


def test_dfs_agrees_with_a_breadth_first_search_on_full_keys():
    """An independent BFS that matches states by their full canonical key (no hashing)."""
    system = _system(scenario="pings", pings=2)
    s0 = system.initial()
    seen = {s0.key()}
    todo = deque([s0])
    transitions = 0
    while todo:
        st = todo.popleft()
        for t in system.enabled(st):
            child, _ = system.fire(st, t)
            transitions += 1
            k = child.key()
            if k not in seen:
                seen.add(k)
                todo.append(child)
    r = Explorer(_system(scenario="pings", pings=2), SearchOptions()).run()
    assert (r.transitions, r.unique_states) == (transitions, len(seen))


def test_firing_never_mutates_the_parent_state():
    system = _system(scenario="pings", pings=2)
    st = system.initial()
    # walk a few steps in, so switches have rules and queues are non-empty
    for _ in range(12):
        en = system.enabled(st)
        key_before = st.key()
        hash_before = hash(key_before)
        children = [system.fire(st, t)[0] for t in en]
        st._key = None  # recompute from the components
        for s in st.switches:
            s._key = None
        for h in st.hosts:
            h._key = None
        st.appkey = None
        assert st.key() == key_before and hash(st.key()) == hash_before
        st = children[-1]


def test_queued_controller_messages_are_part_of_the_state():
    """NICE's hash dropped the switches' command queues; here they must split states."""
    system = _system(scenario="pings", pings=1)
    st = system.initial()
    st, _ = system.fire(st, ("send", 0))
    st, _ = system.fire(st, ("pkt", 0))        # s1 buffers the ping, PACKET_IN queued
    st, _ = system.fire(st, ("ctl", 0))        # pyswitch floods: a PACKET_OUT queued for s1
    assert st.to_sw[0] and isinstance(st.to_sw[0][0], m.PacketOut)
    twin = st.child()
    twin.to_sw[0] = ()
    assert twin.key() != st.key()
    # ... and the buffer it refers to is state too
    assert st.switches[0].buffers
    applied, _ = system.fire(st, ("of", 0))
    assert not applied.switches[0].buffers and applied.key() != st.key()


def test_flow_tables_are_canonical_whatever_the_install_order():
    system = _system(scenario="pings", pings=1)
    st = system.initial()
    from netsleuth.model.actions import Output
    from netsleuth.model.match import Match
    a = m.FlowMod(0, Match.build(dl_dst=1), 10, (Output(1),))
    b = m.FlowMod(0, Match.build(dl_dst=2), 10, (Output(2),))
    one, two = st.child(), st.child()
    one.to_sw[0] = (a, b)
    two.to_sw[0] = (b, a)
    for _ in range(2):
        one, _ = system.fire(one, ("of", 0))
        two, _ = system.fire(two, ("of", 0))
    assert one.key() == two.key()


def test_max_depth_bounds_the_search_and_reexplores_shallower_visits():
    full = Explorer(_system(scenario="pings", pings=2), SearchOptions()).run()
    bounded = Explorer(_system(scenario="pings", pings=2), SearchOptions(max_depth=8)).run()
    assert bounded.max_depth <= 8
    assert bounded.unique_states < full.unique_states
    # every state within 8 steps is found whatever the order
    rev = Explorer(_system(scenario="pings", pings=2), SearchOptions(max_depth=8, order="reverse")).run()
    assert rev.unique_states == bounded.unique_states


def test_max_transitions_stops_with_partial_results():
    r = Explorer(_system(scenario="pings", pings=3), SearchOptions(max_transitions=2048)).run()
    assert not r.completed and r.stopped_by == "max-transitions"
    assert 2048 <= r.transitions < 4096 and r.unique_states > 0


@pytest.mark.parametrize("kw", [
    {"scenario": "pings", "pings": 2},
    {"scenario": "pings", "pings": 1, "faults": ("drop", "duplicate", "link", "expiry")},
    {"scenario": "mobile", "pings": 1, "properties": ("NoBlackHolesMobile",)},
    {"scenario": "loop", "app": "pyswitch-fixed", "pings": 1},
], ids=["pings2", "faults", "mobile", "loop"])
def test_incremental_hash_equals_the_hash_computed_from_scratch(kw):
    """A child's hash starts from its parent's; every state of these models must get the same value
    as hashing all its components afresh, and equal keys must get equal hashes."""
    from netsleuth.nice import state as state_mod

    system = _system(**kw)
    s0 = system.initial()
    hashes = {s0.key(): s0.hash()}
    todo = [s0]
    while todo:
        st = todo.pop()
        for t in system.enabled(st):
            child, fx = system.fire(st, t)
            h = child.hash()
            assert h == child._full_hash() & state_mod._MASK, t
            k = child.key()
            if k in hashes:
                assert hashes[k] == h
            elif not fx.violations:
                hashes[k] = h
                todo.append(child)
    assert len(hashes) > 50
    assert len(set(hashes.values())) == len(hashes)     # no collision on these models


def _bug(name, variant=None):
    from netsleuth.nice import bug_scenarios as bs

    return lambda: bs.build_system(bs.get(name), variant)


@pytest.mark.parametrize("make", [
    lambda: _system(scenario="pings", pings=3),
    lambda: _system(scenario="mobile", pings=2, properties=("NoBlackHolesMobile",)),
    _bug("IX"), _bug("IX", "fixed"), _bug("XII"),
], ids=["pings3", "mobile2", "bug-ix", "bug-ix-fixed", "bug-xii"])
def test_memoized_steps_give_the_same_search(make):
    """Switch, host and controller steps memoized per (component, input) or run every time: same search."""
    runs = []
    for memo in (True, False):
        system = make()
        system.memo = memo
        r = Explorer(system, SearchOptions()).run()
        assert r.completed
        runs.append((r.transitions, r.unique_states, sorted(r.violation_counts.items())))
    assert runs[0] == runs[1]
    assert runs[0][0] > 100


def test_the_hash_follows_writes_made_outside_fire():
    """A child's queues written directly (not by System.fire) still change its incremental hash."""
    from netsleuth.nice import state as state_mod

    system = _system(scenario="pings", pings=1)
    st = system.initial()
    st.hash()
    st, _ = system.fire(st, ("send", 0))
    st.hash()
    where = next(w for w, q in st.inq.items() if q)
    emptied, same = st.child(), st.child()
    emptied.inq.pop(where)
    same.inq[where] = st.inq[where]
    assert emptied.hash() == emptied._full_hash() & state_mod._MASK != st.hash()
    assert same.hash() == st.hash()
    drained = st.child()
    drained.to_sw[0] = ()
    assert drained.hash() == drained._full_hash() & state_mod._MASK


class FloodOnJoin(App):
    """Every switch gets the same flood rule when it joins: equal switches meet an equal message."""

    name = "flood-on-join"

    def datapath_join(self, dpid: int, ports: tuple[int, ...]) -> None:
        self.install_rule(dpid, Match.catch_all(), [Output(ofp.OFPP_FLOOD)])


def test_two_switches_with_equal_state_keep_their_own_identity_through_the_memo():
    """The memo of a switch step is keyed by the switch's content, which leaves its name and dpid out: s2
    applying what s1 applied from an equal state must still be s2 (it once came back as s1's result)."""
    system = System(build_config("app:flood-on-join", scenario="pings"), FloodOnJoin, [])
    st = system.initial()
    assert st.switches[0].key() == st.switches[1].key()
    for i in (0, 1):
        st, _ = system.fire(st, ("of", i))
    assert [(s.name, s.dpid) for s in st.switches] == [("s1", 1), ("s2", 2)]
    assert all(len(s.table.entries()) == 1 for s in st.switches)
