"""The 1.3 exploration run in waves, switch by switch (``engine.explore_all13``), gives every ingress
the very reach of the walk ingress by ingress (``engine.explore13``): the same events in the same
order, field by field, the same hop counts and cuts.

On the two-table FatTree of the benchmark as built, with its entries changed at random (outputs
to a port the switch lacks, to the in port, to the controller, no output, a rewrite, an ALL group,
metadata), with links and a switch down, with a budget that cuts some ingresses short, with a
SELECT group (walked ingress by ingress) and with an action the engine cannot analyse (the
same error).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import pathlib
from typing import Any

import pytest
from os_ken.ofproto import ofproto_v1_3 as ofp

from netsleuth.invariants.headerspace.of13 import engine as E13
from netsleuth.model.of13.actions import DecNwTtl, Group, Output
from netsleuth.model.of13.groups import Bucket
from netsleuth.model.of13.instructions import Instructions
from netsleuth.model.of13.oxm import OxmMatch

_SPEC = importlib.util.spec_from_file_location(
    "test_headerspace13_road", pathlib.Path(__file__).resolve().parent / "test_headerspace13_road.py")
road_tests = importlib.util.module_from_spec(_SPEC)  # type: ignore[arg-type]
_SPEC.loader.exec_module(road_tests)  # type: ignore[union-attr]
bench = road_tests.bench


def _events(evs: list[Any]) -> list[tuple]:
    return [(e.hs.terms, e.where, e.path, [(s, t, id(x)) for s, t, x in e.rules], e.choices, e.why,
             None if e.sym is None else e.sym.key) for e in evs]


def _reach(r: E13.Reach13) -> tuple:
    """A reach by value (entries by identity), its lists and keys in order."""
    return (r.ingress, [(k, _events(v)) for k, v in r.delivered.items()],
            [(k, _events(v)) for k, v in r.punted.items()], _events(r.drops), _events(r.loops),
            [(k, _events(v)) for k, v in r.filtered.items()], list(r.alts.items()), r.truncated, r.hops)


def _both(view: Any, budget: int = E13.DEFAULT_BUDGET13) -> tuple[list[tuple], list[tuple]]:
    ings = list(E13.ingress_points(view, "hosts"))
    one = E13.Net13(view, {})
    alone = [_reach(E13.explore13(one, s, p, budget=budget)) for s, p in ings]
    waves = E13.explore_all13(E13.Net13(view, {}), ings, budget)
    assert list(waves) == ings
    return alone, [_reach(waves[i]) for i in ings]


def test_the_fattree_as_built() -> None:
    topo, switches10, _info = bench.build_fattree(4)
    view = bench.make_view13(topo, bench.build_fattree13(4, topo, switches10))
    alone, waves = _both(view)
    assert waves == alone
    assert sum(r[-1] for r in waves) > 800 and all(len(r[1]) == 15 for r in waves)


@pytest.mark.parametrize("seed", range(3))
def test_changed_tables_links_and_switches(seed: int) -> None:
    view, _pipes = road_tests._pipes(seed)
    alone, waves = _both(view)
    assert waves == alone
    assert any(r[3] for r in waves) and any(r[5] for r in waves)   # blackholes and drops on purpose
    down = set(sorted(view.link_up)[seed::5])
    view = dataclasses.replace(view, link_up={lk: lk not in down for lk in view.link_up},
                               switch_up={sorted(view.switches)[seed]: False})
    alone, waves = _both(view)
    assert waves == alone
    assert any("switch is down" in e[5] for r in waves for e in r[3])


def test_a_loop_and_a_budget() -> None:
    topo, switches10, _info = bench.build_fattree(4)
    pipes = bench.build_fattree13(4, topo, switches10)
    for name in ("e1", "e2", "a1", "a2"):   # one pod's table misses flood: loops
        pipe = pipes[name]
        pipe.modify_flows(1, OxmMatch(), Instructions.actions(Output(ofp.OFPP_FLOOD)), strict=True, priority=0)
    view = bench.make_view13(topo, pipes)
    alone, waves = _both(view)
    assert waves == alone and any(r[4] for r in waves)
    alone, waves = _both(view, budget=60)
    assert waves == alone and any(r[-2] for r in waves) and not all(r[-2] for r in waves)


def test_select_groups_and_errors() -> None:
    view, pipes = road_tests._pipes(0)
    name = "e1"   # the first hop of its hosts
    ports = sorted(pipes[name].ports)
    pipes[name].add_group(2, ofp.OFPGT_SELECT, [Bucket((Output(p),), 1) for p in ports[:2]])
    pipes[name].add_flow(0, OxmMatch.build(eth_type=0x0800), 40, Instructions.actions(Group(2)))
    alone, waves = _both(view)
    assert waves == alone and any(r[6] for r in waves)   # choice points numbered as ingress by ingress
    view, pipes = road_tests._pipes(1)
    name = sorted(pipes)[-1]
    pipes[name].add_flow(0, OxmMatch.build(eth_type=0x86DD), 40,
                         Instructions.actions(DecNwTtl(), Output(sorted(pipes[name].ports)[0])))
    ings = list(E13.ingress_points(view, "hosts"))
    with pytest.raises(E13.Unsupported13, match="DecNwTtl"):
        E13.explore_all13(E13.Net13(view, {}), ings)
