"""The short road of the 1.3 exploration (``of13/road.py``) gives every hop it takes the very events
and pushed hops of the general run (``engine.hop13``), and leaves it the hops it cannot take; so
does its batch of the hops into one port (``road_wave``).

Every hop of every ingress of the two-table FatTree of the benchmark, as built and with its
entries changed at random (outputs to a port the switch lacks, to the in port, to the
controller, two outputs, no output, write-metadata before the goto and entries that match
the metadata, a rewrite, a group), is run both ways.
"""

from __future__ import annotations

import importlib.util
import pathlib
import random
from typing import Any

from os_ken.ofproto import ofproto_v1_3 as ofp

from netsleuth.invariants.headerspace.of13 import engine as E13
from netsleuth.invariants.headerspace.of13.road import road_hop, road_wave
from netsleuth.model.of13.actions import Group, Output, SetField
from netsleuth.model.of13.groups import Bucket
from netsleuth.model.of13.instructions import Instructions
from netsleuth.model.of13.oxm import OxmMatch

_SPEC = importlib.util.spec_from_file_location(
    "bench_invariants", pathlib.Path(__file__).resolve().parents[1] / "bench" / "invariants.py")
bench = importlib.util.module_from_spec(_SPEC)  # type: ignore[arg-type]
_SPEC.loader.exec_module(bench)  # type: ignore[union-attr]


def _wave(net: Any, s: str, p: int, items: list) -> list[Any]:
    """``road_wave`` of ``items`` (all into ``s:p``), each result in its hop's place as ``road_hop``
    gives it: None, or (events, pushed hops); a hop the wave files on to the next one is ([], [hop])."""
    out: list[Any] = [None] * len(items)
    nxt: dict[Any, list[Any]] = {}

    def other(k: int, _item: Any, _node: Any, got: Any) -> None:
        out[k] = got

    road_wave(net, s, p, [(k, item, None) for k, item in enumerate(items)], nxt, other)
    for filed in nxt.values():
        for k, hop, _node in filed:
            out[k] = ([], [hop])
    return out


def _norm(got: tuple[list, list]) -> tuple:
    """Events and pushed hops, every field by value (entries and header sets by identity)."""
    events, pushes = got
    evs = [(cat, key, id(e.hs), e.where, e.path, [(s, t, id(x)) for s, t, x in e.rules], e.choices, e.why,
            None if e.sym is None else e.sym.key) for cat, key, e in events]
    ps = [(s, p, id(o), sym.key, path, [(a, t, id(x)) for a, t, x in rules], ch)
          for s, p, o, sym, path, rules, ch in pushes]
    return evs, ps


def _both_ways(view: Any) -> tuple[int, int]:
    """Run every hop of every ingress both ways (the general run's pushes lead on): (hops, on the road)."""
    net = E13.Net13(view, {})
    hops = road = 0
    for s0, p0 in E13.ingress_points(view, "hosts"):
        stack: list = [(s0, p0, E13.HS13.injected(), E13.IDENTITY, (), (), ())]
        while stack:
            item = stack.pop()
            ref = E13.hop13(net, item, {})
            got = road_hop(net, item)
            many = _wave(net, item[0], item[1], [item, item])   # the wave's batch of one port
            assert [None if x is None else _norm(x) for x in many] == [None if got is None else _norm(got)] * 2
            hops += 1
            if got is not None:
                road += 1
                assert _norm(got) == _norm(ref), f"hop {item[:2]} after {item[4]}"
            stack.extend(ref[1])
    return hops, road


def _pipes(seed: int) -> tuple[Any, dict]:
    topo, switches10, _info = bench.build_fattree(4)
    pipes = bench.build_fattree13(4, topo, switches10)
    rng = random.Random(seed)
    for name in sorted(pipes):
        pipe = pipes[name]
        ports = sorted(pipe.ports)
        pipe.add_group(1, ofp.OFPGT_ALL, [Bucket((Output(p),)) for p in ports[:2]])
        if rng.random() < 0.5:   # write-metadata on the way to table 1, and entries that read it
            pipe.add_flow(0, OxmMatch(), 1, Instructions(metadata=(7, 0xff), goto=1))
        for e in pipe.tables.entries(1):
            r = rng.random()
            if r < 0.05:
                inst = Instructions.actions(Output(99))
            elif r < 0.1:
                inst = Instructions.actions(Output(ofp.OFPP_IN_PORT))
            elif r < 0.15:
                inst = Instructions.actions(Output(ofp.OFPP_CONTROLLER))
            elif r < 0.2:
                inst = Instructions.actions(Output(99), Output(rng.choice(ports)))
            elif r < 0.25:
                inst = Instructions()
            elif r < 0.28:
                inst = Instructions.actions(SetField("eth_dst", 0x0a0000000001), Output(rng.choice(ports)))
            elif r < 0.31:
                inst = Instructions.actions(Group(1))
            elif r < 0.34:
                m = OxmMatch.build(in_port=rng.choice(ports), metadata=7)
                pipe.add_flow(1, m, 5, Instructions.actions(Output(rng.choice(ports))))
                continue
            else:
                continue
            pipe.modify_flows(1, e.match, inst, strict=True, priority=e.priority)
    return bench.make_view13(topo, pipes), pipes


def test_the_fattree_goes_by_the_road() -> None:
    topo, switches10, _info = bench.build_fattree(4)
    view = bench.make_view13(topo, bench.build_fattree13(4, topo, switches10))
    hops, road = _both_ways(view)
    assert hops > 800 and hops - road == 16   # only each ingress's first hop splits its headers


def test_changed_tables_give_the_general_runs_results() -> None:
    for seed in range(3):
        view, _pipes_ = _pipes(seed)
        hops, road = _both_ways(view)
        assert 0 < road < hops
