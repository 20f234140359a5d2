"""The topology of a minimization report, drawn as inline SVG with the target violation in red.

A developer who opens ``report.html`` first wants to see *where* the
network went wrong: which switches, hosts and links the violation's path or
cycle crosses, and which port it dies on. This module draws the trace's
topology (its header's topology, with the host moves the trace records
applied: a moved host is drawn at its new place and its old attachment as a
dashed line) and marks in red what the target violation names:

* its switches and hosts (``switches``, ``hosts``);
* the links its hops enter by (``details.path``, ``details.cycle``,
  ``details.ingress`` and each of ``details.pairs``' ingress, each
  ``switch:in_port``): the path of a blackhole, the ring of a loop, where an
  unreachable pair's traffic enters;
* for a blackhole, the port its dropping rule outputs to (``output:N`` in
  ``details.why``): the link there, or a stub when no live link is there.

The SVG is plain markup (no script, no CDN) so the page opens offline, and
the layout is a networkx spring layout with a fixed seed over the nodes in
topology order, rounded to 0.1 px: the same trace gives the same bytes.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from typing import Any

from netsleuth.model.topology import Topology
from netsleuth.trace import schema as ts

WIDTH, HEIGHT, MARGIN = 720, 420, 40
HIGHLIGHT = "#e01e1e"
SEED = 7
MIN_GAP = 44  # px between two nodes' centres: a switch box is 32 px wide
SPREAD = 2.5  # spring length over networkx's default (1/sqrt(n)): room between a core's switches


@dataclass(frozen=True)
class Edge:
    """A link to draw: ``moved`` is a host's attachment before it moved (dashed)."""

    a: str
    pa: int
    b: str
    pb: int
    moved: bool = False

    def ends(self) -> tuple[tuple[str, int], tuple[str, int]]:
        return (self.a, self.pa), (self.b, self.pb)


def edges_of(topo: Topology, events: list[ts.Event]) -> list[Edge]:
    """The topology's links with the trace's host moves applied, in a fixed order.

    Each move turns the host's current link into a dashed ``moved`` edge and
    adds its new attachment; a host moved twice keeps only its last old place.
    """
    edges = [Edge(lk.node1, lk.port1, lk.node2, lk.port2) for lk in topo.links]
    for e in events:
        if not isinstance(e, ts.HostMigration):
            continue
        old = [x for x in edges if not x.moved and e.host in (x.a, x.b)]
        edges = [x for x in edges if e.host not in (x.a, x.b)]
        edges += [Edge(x.a, x.pa, x.b, x.pb, moved=True) for x in old]
        edges.append(Edge(e.host, 0, e.new_switch, e.new_port))
    return edges


def layout(nodes: list[str], edges: list[Edge], seed: int = SEED) -> dict[str, tuple[float, float]]:
    """Deterministic positions in SVG pixels: a spring layout with a fixed seed, scaled into the frame,
    then nodes closer than a box's width pushed apart (switches with the same neighbours, a fat tree's
    core, settle on top of each other otherwise)."""
    if len(nodes) < 2:
        return {n: (WIDTH / 2, HEIGHT / 2) for n in nodes}
    import networkx as nx  # here, not at the top: only a report draws; every minimization imports this module

    g: nx.Graph = nx.Graph()
    g.add_nodes_from(nodes)
    g.add_edges_from((x.a, x.b) for x in edges if x.a in g and x.b in g)
    raw = nx.spring_layout(g, seed=seed, iterations=500, k=SPREAD / math.sqrt(len(nodes)))
    xs, ys = [float(raw[n][0]) for n in nodes], [float(raw[n][1]) for n in nodes]
    span_x, span_y = (max(xs) - min(xs)) or 1.0, (max(ys) - min(ys)) or 1.0
    pts = [[MARGIN + (x - min(xs)) / span_x * (WIDTH - 2 * MARGIN),
            MARGIN + (y - min(ys)) / span_y * (HEIGHT - 2 * MARGIN)] for x, y in zip(xs, ys, strict=True)]
    _separate(pts)
    return {n: (round(p[0], 1), round(p[1], 1)) for n, p in zip(nodes, pts, strict=True)}


def _separate(pts: list[list[float]], gap: float = MIN_GAP, rounds: int = 60) -> None:
    """Push apart, in place and in a fixed order, every two points closer than ``gap``; keep them in the frame."""
    for _ in range(rounds):
        moved = False
        for i in range(len(pts)):
            for j in range(i + 1, len(pts)):
                dx, dy = pts[j][0] - pts[i][0], pts[j][1] - pts[i][1]
                d = math.hypot(dx, dy)
                if d >= gap:
                    continue
                ux, uy = (dx / d, dy / d) if d > 1e-6 else (math.cos(i + j), math.sin(i + j))
                push = (gap - d) / 2 + 0.5
                pts[i][0], pts[i][1] = pts[i][0] - ux * push, pts[i][1] - uy * push
                pts[j][0], pts[j][1] = pts[j][0] + ux * push, pts[j][1] + uy * push
                moved = True
        for p in pts:
            p[0], p[1] = min(max(p[0], MARGIN), WIDTH - MARGIN), min(max(p[1], MARGIN), HEIGHT - MARGIN)
        if not moved:
            return


def _hop(text: object) -> tuple[str, int] | None:
    """``"s2:1"`` -> ("s2", 1); anything else None."""
    if not isinstance(text, str) or ":" not in text:
        return None
    node, _, port = text.rpartition(":")
    return (node, int(port)) if port.isdigit() else None


def highlights(target: dict[str, Any]) -> tuple[set[str], set[tuple[str, int]], set[tuple[str, int]]]:
    """(nodes, hop ports, drop ports) the target violation names."""
    details = target.get("details") or {}
    nodes = {str(n) for n in (target.get("switches") or [])} | {str(n) for n in (target.get("hosts") or [])}
    entries = [p.get("ingress") for p in details.get("pairs") or [] if isinstance(p, dict)]  # reachability
    hops = {h for h in (_hop(t) for t in [*(details.get("path") or []), *(details.get("cycle") or []),
                                          details.get("ingress"), *entries]) if h is not None}
    drops: set[tuple[str, int]] = set()
    where = details.get("where")
    if target.get("invariant") == "blackholes" and isinstance(where, str):
        for why in details.get("why") or []:
            drops |= {(where, int(p)) for p in re.findall(r"output:(\d+)", str(why))}
    return nodes, hops, drops


def _edge_class(x: Edge, hops: set[tuple[str, int]], drops: set[tuple[str, int]]) -> str:
    cls = "link moved" if x.moved else "link"
    if set(x.ends()) & drops:
        return cls + " hl drop"
    if not x.moved and set(x.ends()) & hops:
        return cls + " hl"
    return cls


def _port_label(pos: tuple[float, float], toward: tuple[float, float], port: int, cls: str) -> str:
    """The port number a quarter of the way along a link, next to its node."""
    x, y = pos[0] + (toward[0] - pos[0]) * 0.22, pos[1] + (toward[1] - pos[1]) * 0.22
    return f'<text class="port{cls}" x="{x:.1f}" y="{y - 4:.1f}">{port}</text>'


def _stubs(drops: set[tuple[str, int]], edges: list[Edge], pos: dict[str, tuple[float, float]]) -> list[str]:
    """A red stub for each drop port with no link drawn at it (nothing plugged in there)."""
    drawn = {end for x in edges for end in x.ends()}
    out = []
    for k, (sw, port) in enumerate(sorted(d for d in drops if d not in drawn and d[0] in pos)):
        x, y = pos[sw]
        angle = math.pi / 4 + k * math.pi / 3
        x2, y2 = x + 38 * math.cos(angle), y + 38 * math.sin(angle)
        out.append(f'<line class="stub hl drop" data-port="{html.escape(sw)}:{port}" x1="{x:.1f}" y1="{y:.1f}" '
                   f'x2="{x2:.1f}" y2="{y2:.1f}"><title>{html.escape(sw)} port {port}: the dropping rule outputs '
                   f'here, no live link</title></line>'
                   f'<text class="port hl" x="{x2 + 3:.1f}" y="{y2 + 4:.1f}">{port} &#10007;</text>')
    return out


def _links_svg(topo: Topology, edges: list[Edge], pos: dict[str, tuple[float, float]],
               hops: set[tuple[str, int]], drops: set[tuple[str, int]]) -> list[str]:
    """One ``<line>`` per link (class ``hl`` when the violation crosses it), its switch ports labelled."""
    e = html.escape
    hosts = {h.name for h in topo.hosts}
    parts = []
    for link in edges:
        if link.a not in pos or link.b not in pos:
            continue
        cls = _edge_class(link, hops, drops)
        (ax, ay), (bx, by) = pos[link.a], pos[link.b]
        host = link.a if link.a in hosts else link.b
        what = f"{link.a}:{link.pa} - {link.b}:{link.pb}" + (f" ({host} was here before it moved)" if link.moved
                                                             else "")
        parts.append(f'<line class="{cls}" data-link="{e(link.a)}:{link.pa}-{e(link.b)}:{link.pb}" x1="{ax}" '
                     f'y1="{ay}" x2="{bx}" y2="{by}"><title>{e(what)}</title></line>')
        for (n, p), other in ((link.ends()[0], pos[link.b]), (link.ends()[1], pos[link.a])):
            if topo.is_switch(n):
                parts.append(_port_label(pos[n], other, p, " hl" if (n, p) in hops | drops else ""))
    return parts


def topology_svg(topo: Topology, events: list[ts.Event], target: dict[str, Any]) -> str:
    """The ``<svg id="topology">`` of the report: nodes, links, ports, the violation in red."""
    e = html.escape
    edges = edges_of(topo, events)
    nodes = [s.name for s in topo.switches] + [h.name for h in topo.hosts]
    pos = layout(nodes, edges)
    hl_nodes, hops, drops = highlights(target)
    parts = [f'<svg id="topology" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="topology with the violation in red">']
    parts += _links_svg(topo, edges, pos, hops, drops)
    parts += _stubs(drops, edges, pos)
    for n in nodes:
        x, y = pos[n]
        role = "switch" if topo.is_switch(n) else "host"
        cls = f"node {role}" + (" hl" if n in hl_nodes else "")
        shape = (f'<rect x="{x - 16:.1f}" y="{y - 11:.1f}" width="32" height="22" rx="4"/>' if role == "switch"
                 else f'<circle cx="{x}" cy="{y}" r="11"/>')
        parts.append(f'<g class="{cls}" data-node="{e(n)}">{shape}'
                     f'<text x="{x}" y="{y + 4:.1f}">{e(n)}</text><title>{e(n)}</title></g>')
    parts.append("</svg>")
    return "\n".join(parts)


TOPOLOGY_CSS = f"""#topology{{border:1px solid #ddd;background:#fcfcfc;max-width:100%;height:auto}}
#topology .link{{stroke:#9aa3ad;stroke-width:2}}#topology .link.moved{{stroke-dasharray:6 4}}
#topology line.hl{{stroke:{HIGHLIGHT};stroke-width:4}}#topology .link.hl.drop,#topology .stub{{stroke-dasharray:3 3}}
#topology .node rect{{fill:#2f6fbf;stroke:#1d4f8f;stroke-width:1.5}}
#topology .node circle{{fill:#2e9e5b;stroke:#1e6e3b;stroke-width:1.5}}
#topology .node.hl rect,#topology .node.hl circle{{stroke:{HIGHLIGHT};stroke-width:4}}
#topology .node text{{fill:#fff;font:bold 11px system-ui,sans-serif;text-anchor:middle}}
#topology text.port{{fill:#555;font:10px system-ui,sans-serif;text-anchor:middle}}
#topology text.port.hl{{fill:{HIGHLIGHT};font-weight:bold;stroke:none}}"""


def topology_section(topo: Topology, events: list[ts.Event], target: dict[str, Any]) -> str:
    """The report's "Where" section: a sentence on what is red, then the SVG."""
    e = html.escape
    _nodes, hops, drops = highlights(target)
    details = target.get("details") or {}
    path = " &rarr; ".join(e(str(h)) for h in details.get("path") or [])
    cycle = [e(str(h)) for h in details.get("cycle") or []]
    if cycle:
        path += ("; " if path else "") + "the cycle " + " &rarr; ".join([*cycle, cycle[0]])
    said = []
    if target.get("switches") or target.get("hosts"):
        said.append("the switches and hosts the violation names (red outline)")
    if hops:
        said.append(f"the links its path enters by{f' ({path})' if path else ''}")
    if drops:
        ports = ", ".join(f"{e(s)} port {p}" for s, p in sorted(drops))
        said.append(f"the port its dropping rule outputs to ({ports}, dashed red)")
    what = "; ".join(said) if said else "nothing: the violation names no node of this topology"
    moved = any(isinstance(ev, ts.HostMigration) for ev in events)
    note = " A dashed grey line is a host's attachment before it moved." if moved else ""
    return (f'<h2 id="where">Where</h2><p>Switches are blue boxes, hosts green dots, each link labelled with '
            f"its switch ports. In red: {what}.{note}</p>\n{topology_svg(topo, events, target)}")
