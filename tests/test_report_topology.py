"""The minimization report's topology drawing (jobs/report_topology.py): layout and highlight, no browser.

The rendered page is checked in headless Chromium by tests/test_minimize_report.py; here, the
parts that must hold for any topology: the same input gives the same coordinates and the same
SVG bytes, every node sits inside the frame on a place of its own, a moved host's old link is
dashed and its new one drawn, and a loop's hops' links are the red ones.
"""

from __future__ import annotations

import math
import re

from netsleuth.jobs.report_topology import HEIGHT, MARGIN, MIN_GAP, WIDTH, edges_of, layout, topology_svg
from netsleuth.model.topology import parse_topo
from netsleuth.trace import schema as ts


def test_layout_is_deterministic_and_inside_the_frame() -> None:
    """Same topology and moves, same coordinates and same SVG bytes; every node in the frame, none on another."""
    topo = parse_topo("tree,depth=2,fanout=3")
    move = ts.HostMigration(seq=0, t=0.0, id=0, host="h1", old_switch="s2", old_port=1, new_switch="s4",
                            new_port=9)
    nodes = [s.name for s in topo.switches] + [h.name for h in topo.hosts]
    first = layout(nodes, edges_of(topo, [move]))
    assert first == layout(list(nodes), edges_of(parse_topo("tree,depth=2,fanout=3"), [move]))
    assert list(first) == nodes
    assert all(MARGIN <= x <= WIDTH - MARGIN and MARGIN <= y <= HEIGHT - MARGIN for x, y in first.values())
    assert len(set(first.values())) == len(nodes)
    loop = {"invariant": "loops", "switches": ["s2", "s3"], "hosts": ["h1"],
            "details": {"path": ["s2:1"], "cycle": ["s1:1", "s2:4"]}}
    svg = topology_svg(topo, [move], loop)
    assert svg == topology_svg(parse_topo("tree,depth=2,fanout=3"), [move], loop)
    # the moved host: its old link dashed, its new one plain; the loop's hops' links red
    assert re.search(r'class="link moved" data-link="h1:0-s2:1"', svg) or \
        re.search(r'class="link moved" data-link="s2:1-h1:0"', svg)
    assert 'data-link="h1:0-s4:9"' in svg
    red = re.findall(r'class="link hl" data-link="([^"]+)"', svg)
    assert sorted(red) == sorted(k for k in re.findall(r'data-link="([^"]+)"', svg)
                                 if {"s1:1", "s2:4"} & set(k.split("-")))


def test_reachability_pairs_mark_where_their_traffic_enters() -> None:
    """An unreachable pair names no path: the links its traffic enters by (each pair's ingress) are red."""
    topo = parse_topo("linear,3")
    target = {"invariant": "reachability", "switches": ["s2"], "hosts": ["h1", "h3"],
              "details": {"pairs": [{"hosts": ["h1", "h3"], "ingress": "s1:1"},
                                    {"hosts": ["h3", "h1"], "ingress": "s3:1"}]}}
    svg = topology_svg(topo, [], target)
    red = sorted(re.findall(r'class="link hl" data-link="([^"]+)"', svg))
    assert red == sorted(k for k in re.findall(r'data-link="([^"]+)"', svg) if {"s1:1", "s3:1"} & set(k.split("-")))
    assert len(red) == 2
    assert sorted(re.findall(r'<g class="node \w+ hl" data-node="(\w+)"', svg)) == ["h1", "h3", "s2"]


def test_nodes_with_the_same_neighbours_do_not_overlap() -> None:
    """A fat tree's core switches all share their neighbours: the spring layout alone stacks them."""
    topo = parse_topo("fattree,4")
    nodes = [s.name for s in topo.switches] + [h.name for h in topo.hosts]
    pos = list(layout(nodes, edges_of(topo, [])).values())
    closest = min(math.dist(a, b) for i, a in enumerate(pos) for b in pos[i + 1:])
    assert closest >= MIN_GAP - 1
    svg = topology_svg(topo, [], {"invariant": "loops", "switches": ["a1", "c1"], "hosts": [],
                                  "details": {"path": ["e1:1"], "cycle": ["a1:1", "c1:1"]}})
    assert len(re.findall(r'<g class="node ', svg)) == len(nodes)
