"""Networks for DEFINED runs: fixed case-study figures, real ISP maps, BRITE-like graphs.

A :class:`Net` is nodes plus undirected links with a *mean delay* in integer
microseconds: the paper's "average link delay l_ij measured before
launching", used both by the ordering function (estimated delay) and as the
mean of the simulated delay distribution.

Specs (``parse_net``):

``topozoo/NAME``  a Topology Zoo map shipped in the ``topohub`` package
                  (e.g. ``topozoo/Sprint``, ``topozoo/Geant2012``,
                  ``topozoo/AttMpls``); delay = fibre distance at 5 us/km
                  plus 100 us, read from the package data (no network).
``brite,N[,SEED]``  a BRITE-like router-level graph: Barabasi-Albert
                  preferential attachment (BRITE's "BA" model, m=2) on N
                  nodes placed uniformly in a 1000x1000 plane, delay from
                  Euclidean distance (1 unit = 10 us) plus 100 us.

Anything else is a netsleuth topology spec in the model's (Mininet) grammar
-- ``linear,N``, ``ring,N``, ``mesh,N``, ``tree,depth=D,fanout=F``,
``torus,X,Y``, ``fattree,K``, a ``.json``/``.graphml`` file -- parsed by
:func:`netsleuth.model.topo_builders.parse_topo`; its *switches* become the
DEFINED nodes (hosts are not routers and are left out) and every
switch-to-switch link a 1 ms link (:func:`net_from_topology`).  The two
extras above are DEFINED's own: they need link delays, which the model's
topologies do not carry.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from netsleuth.errors import UnknownTopologyError
from netsleuth.model.topo_builders import parse_topo
from netsleuth.model.topology import Topology

if TYPE_CHECKING:
    import networkx as nx

# networkx is imported by the functions that build graphs, not here: it is most of the import time of a
# `netsleuth defined` command (~0.13 s of CPU), and a scenario's network needs no graph.

SWITCH_LINK_US = 1000  # delay of a link taken from a model topology (it carries none)


@dataclass(frozen=True)
class Net:
    spec: str
    nodes: tuple[str, ...]
    links: tuple[tuple[str, str, int], ...]  # (a, b, mean delay us) with a < b, sorted

    def delays(self) -> dict[str, dict[str, int]]:
        d: dict[str, dict[str, int]] = {n: {} for n in self.nodes}
        for a, b, us in self.links:
            d[a][b] = us
            d[b][a] = us
        return d

    def graph(self) -> nx.Graph:
        import networkx as nx

        g = nx.Graph()
        g.add_nodes_from(self.nodes)
        for a, b, us in self.links:
            g.add_edge(a, b, delay=us)
        return g

    def to_json(self) -> dict:
        return {"spec": self.spec, "nodes": list(self.nodes), "links": [list(x) for x in self.links]}

    @staticmethod
    def from_json(d: dict) -> Net:
        return Net(d["spec"], tuple(d["nodes"]), tuple((a, b, int(us)) for a, b, us in d["links"]))


def make_net(spec: str, nodes: list[str], links: list[tuple[str, str, int]]) -> Net:
    norm = sorted((min(a, b), max(a, b), max(1, int(us))) for a, b, us in links)
    return Net(spec, tuple(sorted(nodes)), tuple(norm))


def _names(n: int) -> list[str]:
    w = max(2, len(str(n - 1)))
    return [f"n{i:0{w}d}" for i in range(n)]


def brite(n: int, seed: int = 0) -> Net:
    if n < 3:
        raise UnknownTopologyError(f"brite needs at least 3 nodes, got {n}", "use brite,N with N >= 3")
    import networkx as nx

    rng = random.Random(seed)
    # Seeded with a triangle (BRITE's BA starts from m+1 connected nodes), so no node is a leaf.
    g = nx.barabasi_albert_graph(n, 2, seed=rng.randrange(2**31), initial_graph=nx.complete_graph(3))
    pos = {i: (rng.uniform(0, 1000), rng.uniform(0, 1000)) for i in range(n)}
    names = _names(n)
    links = [(names[a], names[b], 100 + int(10 * math.dist(pos[a], pos[b]))) for a, b in sorted(g.edges())]
    return make_net(f"brite,{n},{seed}", names, links)


def topozoo(name: str) -> Net:
    try:
        import topohub
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise UnknownTopologyError("the topohub package is not installed", "pip install topohub") from exc
    try:
        d = topohub.get(f"topozoo/{name}")
    except KeyError:
        raise UnknownTopologyError(f"no Topology Zoo map named {name!r} in topohub",
                                   "try topozoo/Sprint, topozoo/Geant2012 or topozoo/AttMpls") from None
    import networkx as nx

    g = nx.node_link_graph(d, edges="edges")
    g = g.subgraph(max(nx.connected_components(g), key=len)).copy()
    ids = sorted(g.nodes, key=lambda x: int(x) if str(x).isdigit() else str(x))
    names = dict(zip(ids, _names(len(ids)), strict=True))
    links = [(names[a], names[b], 100 + int(5 * float(g.edges[a, b].get("dist", 0.0))))
             for a, b in g.edges() if a != b]
    return make_net(f"topozoo/{name}", list(names.values()), links)


def net_from_topology(topo: Topology) -> Net:
    """The switch graph of a model topology as a DEFINED network (1 ms links; hosts left out)."""
    nodes = [sw.name for sw in topo.switches]
    pairs = {tuple(sorted((link.node1, link.node2))) for link in topo.links
             if topo.is_switch(link.node1) and topo.is_switch(link.node2) and link.node1 != link.node2}
    if len(nodes) < 2 or not pairs:
        raise UnknownTopologyError(f"topology {topo.spec!r} has fewer than two connected switches, "
                                   "so no routers to run a control plane on",
                                   "use e.g. ring,N, mesh,N, linear,N or a topozoo/brite network")
    return make_net(topo.spec, nodes, [(a, b, SWITCH_LINK_US) for a, b in sorted(pairs)])


def parse_net(spec: str) -> Net:
    """A topology spec (see the module doc) to a :class:`Net`."""
    s = spec.strip()
    if s.startswith("topozoo/"):
        return topozoo(s.split("/", 1)[1])
    head, _, rest = s.partition(",")
    if head == "brite":
        args = [a for a in rest.split(",") if a]
        try:
            nums = [int(a) for a in args]
        except ValueError:
            nums = []
        if not 1 <= len(nums) <= 2:
            raise UnknownTopologyError(f"bad brite topology {spec!r}", "write brite,N or brite,N,SEED (integers)")
        return brite(nums[0], nums[1] if len(nums) > 1 else 0)
    try:
        topo = parse_topo(s)
    except UnknownTopologyError as exc:
        raise UnknownTopologyError(f"unknown DEFINED topology {spec!r} ({exc.problem})",
                                   f"use topozoo/NAME (e.g. topozoo/Sprint), brite,N[,SEED], or a netsleuth "
                                   f"topology: {exc.fix}") from None
    return net_from_topology(topo)
