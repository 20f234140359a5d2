"""netsleuth.strategies.inputs: every drawn sequence, shrunk or not, has its dependencies right."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netsleuth.model.topo_builders import parse_topo
from netsleuth.strategies import inputs
from netsleuth.testing import (
    CrashController,
    FailLink,
    FailSwitch,
    Move,
    RecoverLink,
    RecoverSwitch,
    RestartController,
    Send,
)

ALL = ("traffic", "migration", "link", "switch", "controller")


def _replay_dependencies(topo_spec: str, seq: list) -> None:
    """Walk the sequence with a state of our own and fail on the first input that makes no sense."""
    topo = parse_topo(topo_spec)
    switches = {s.name for s in topo.switches}
    at = {h.name: topo.host_location(h.name)[0] for h in topo.hosts}
    links = {tuple(sorted((lk.node1, lk.node2))) for lk in topo.links
             if lk.node1 in switches and lk.node2 in switches}
    down_links: set[tuple[str, str]] = set()
    down_switches: set[str] = set()
    crashed = False
    for k, i in enumerate(seq):
        where = f"input {k + 1} ({i!r}) of {seq!r}"
        if isinstance(i, Send):
            assert i.src in at and i.dst in at and i.src != i.dst, where
        elif isinstance(i, Move):
            assert i.switch in switches and i.switch != at[i.host] and i.switch not in down_switches, where
            at[i.host] = i.switch
        elif isinstance(i, FailLink):
            assert (i.a, i.b) in links and (i.a, i.b) not in down_links, where
            down_links.add((i.a, i.b))
        elif isinstance(i, RecoverLink):
            assert (i.a, i.b) in down_links, where
            down_links.discard((i.a, i.b))
        elif isinstance(i, FailSwitch):
            assert i.switch in switches and i.switch not in down_switches, where
            down_switches.add(i.switch)
        elif isinstance(i, RecoverSwitch):
            assert i.switch in down_switches, where
            down_switches.discard(i.switch)
        elif isinstance(i, CrashController):
            assert not crashed, where
            crashed = True
        elif isinstance(i, RestartController):
            assert crashed, where
            crashed = False
        else:
            pytest.fail(f"unexpected input {i!r}")


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_every_drawn_sequence_respects_its_dependencies(data):
    topo = data.draw(st.sampled_from(["linear,3", "ring,4", "tree,depth=2,fanout=2", "single,3"]))
    kinds = data.draw(st.lists(st.sampled_from(ALL), min_size=1, unique=True))
    seq = data.draw(inputs(topo, kinds=kinds, max_size=12))
    assert 1 <= len(seq) <= 12
    allowed = {"traffic": {Send}, "migration": {Move}, "link": {FailLink, RecoverLink},
               "switch": {FailSwitch, RecoverSwitch}, "controller": {CrashController, RestartController}}
    assert {type(i) for i in seq} <= set().union(*(allowed[k] for k in kinds))
    _replay_dependencies(topo, seq)


def test_shrinking_keeps_dependencies_and_reaches_the_minimal_sequence():
    """Find, with Hypothesis's own shrinker, the smallest sequence that recovers a link: its failure first."""
    from hypothesis import find

    seq = find(inputs("linear,3", kinds=("link", "traffic"), max_size=10),
               lambda s: any(isinstance(i, RecoverLink) for i in s), settings=settings(database=None))
    assert seq == [FailLink("s1", "s2"), RecoverLink("s1", "s2")]


def test_bad_kinds_are_refused():
    with pytest.raises(ValueError, match="unknown input kind"):
        inputs("linear,3", kinds=("traffic", "meteor"))
    with pytest.raises(ValueError, match="traffic"):
        inputs("linear,3", traffic=("udp",))
