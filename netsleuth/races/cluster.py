"""BigBug's clustering: isomorphism classes, then complete-linkage agglomeration.

**Isomorphism.**  Two per-race graphs are in one initial cluster when they are
isomorphic with event types as node labels and HB relations as edge labels
(the original's ``node_match``/``edge_match``).  The original compared each
graph with one graph of every existing group under a 10 s timeout per check
(graphs that timed out became singleton clusters), ~990 s on the Floodlight
load balancer.  Here graphs are first bucketed by a certificate (a
Weisfeiler-Lehman style colour refinement over in-edges, computed once on
the pruned HB graph, see :func:`upward_colours`): graphs with different
certificates cannot be isomorphic.  Within one bucket the colours are refined
per graph by what each node leads to (see :class:`_Refiner`); when that
makes every node's colour distinct, equal refined certificates are already
a proof of isomorphism, and only the rare graph with repeated colours goes
to an exact VF2 check restricted to nodes of equal colour.  (Running VF2 on
every pair, the earlier path, took ~45 s on the 2,214 races of the
Floodlight load balancer on a star: networkx's VF2 rebuilds its state in
time linear in the graph at every one of its ~180 levels.)  No timeout: the
partition is exactly the isomorphism classes, and deterministic.

**Agglomeration.**  Each isomorphism class gets its mean features
(:func:`netsleuth.races.features.mean_features`); distances between classes
are BigBug's weighted distance (exact rationals); complete linkage merges the
closest pair as long as the distance is <= ``threshold`` (2.0, inclusive: the
original cut scipy's linkage with ``fcluster(t=2.0, criterion='distance')``).
Classes with identical mean features are at distance 0 and merge first; ties
between equal distances are broken by the classes' order (largest first, then
by their largest graph), the order the original handed to scipy.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from netsleuth.races.features import WEIGHTS, Features, distance, mean_features
from netsleuth.races.hb import strongly_connected
from netsleuth.races.subgraph import PrunedGraph, RaceGraph

# ---------------------------------------------------------------------------
# isomorphism classes


def upward_colours(pg: PrunedGraph) -> dict[int, int]:
    """A colour per node from its event type and, recursively, everything that happens before it.

    Colour refinement over in-edges only (1-dimensional Weisfeiler-Lehman),
    computed once on the pruned HB graph, strongly connected component by
    component in topological order: a node outside cycles gets
    (type, sorted (relation, colour) of its predecessors) in one pass; the
    nodes of a cycle (ONOS) are refined together until their partition is
    stable.  Every per-race graph is closed under ancestors (and so contains
    whole cycles), so a node has the same in-edges there as in the pruned
    graph: its colour is valid in every race graph, and any isomorphism
    between race graphs maps nodes to nodes of the same colour.
    """
    events = pg.graph.events
    nodes = sorted(pg.succ)
    index = {v: i for i, v in enumerate(nodes)}
    comp, comps = strongly_connected([[index[w] for w in sorted(pg.succ[v])] for v in nodes])
    palette: dict = {}

    def pid(key) -> int:
        c = palette.get(key)
        if c is None:
            c = palette[key] = len(palette)
        return c

    colour: dict[int, int] = {}
    for members in reversed(comps):       # sources first
        vs = [nodes[i] for i in members]
        if len(vs) == 1 and vs[0] not in pg.pred[vs[0]]:
            v = vs[0]
            colour[v] = pid((events[v].kind, tuple(sorted((pg.rel[(u, v)], colour[u]) for u in pg.pred[v]))))
            continue
        inside = set(vs)
        local = {v: pid(("cycle", events[v].kind,
                         tuple(sorted((pg.rel[(u, v)], colour[u]) for u in pg.pred[v] if u not in inside))))
                 for v in vs}
        k = len(set(local.values()))
        rounds = 0
        while True:
            rounds += 1
            local = {v: pid((local[v], tuple(sorted((pg.rel[(u, v)], local[u]) for u in pg.pred[v] if u in inside))))
                     for v in vs}
            k2 = len(set(local.values()))
            if k2 == k:
                break
            k = k2
        for v in vs:
            colour[v] = pid(("cycle-done", rounds, local[v]))
    return colour


def certificate(rg: RaceGraph, colour: dict[int, int]) -> tuple:
    """An isomorphism invariant of a race graph: its coloured nodes and coloured edges (as multisets)."""
    return (tuple(sorted(Counter(colour[n] for n in rg.nodes).items())),
            tuple(sorted(Counter((colour[u], r, colour[v]) for u, v, r in rg.edges).items())))


def _nx(rg: RaceGraph, colour: dict[int, int]):
    import networkx as nx

    d = nx.DiGraph()
    for n in rg.nodes:
        d.add_node(n, c=colour[n])
    for u, v, r in rg.edges:
        d.add_edge(u, v, rel=r)
    return d


class _Timeout(Exception):
    pass


def _isomorphic(a, b, deadline: float | None = None) -> bool:
    from networkx.algorithms.isomorphism import DiGraphMatcher

    if deadline is None:
        def node_match(x, y):
            return x["c"] == y["c"]
    else:
        def node_match(x, y):
            if time.perf_counter() > deadline:
                raise _Timeout
            return x["c"] == y["c"]

    m = DiGraphMatcher(a, b, node_match=node_match, edge_match=lambda x, y: x["rel"] == y["rel"])
    return m.is_isomorphic()


@dataclass
class IsoStats:
    buckets: int = 0
    exact_checks: int = 0
    timeouts: int = 0
    vf2_checks: int = 0     # exact checks that the refined colouring left to VF2


ISO_METHODS = ("refined", "vf2")


class _Refiner:
    """Per race graph: the upward colours refined by what each node leads to inside that graph.

    The upward colour of a node depends only on its ancestors, which every
    race graph holds in full; two nodes of one graph share it when they
    happened in the same way (say, two host sends, or two handles of
    equal-looking messages), and VF2 then has to try both ways round.
    Almost always the two differ in what follows them *within the race's
    graph*: the downward colour of a node is its upward colour plus the
    multiset of (relation, downward colour) of its successors in the graph,
    one pass sinks first.  Edges inside a cycle (ONOS) are left out of that
    pass, which keeps it well defined; whether an edge lies on a cycle is
    itself preserved by isomorphism (a race graph holds every cycle it
    touches), so the colouring is an isomorphism invariant.  Colours come
    from one palette shared by all graphs, so equal colours in two graphs
    mean equal structure.

    When the downward colours of a graph are all distinct, two graphs with
    equal coloured certificates are isomorphic (the colour-preserving map is
    the only candidate and it maps coloured edges onto coloured edges); in
    the rare graph where some colours still repeat, exact VF2 decides,
    restricted to nodes of equal downward colour.
    """

    def __init__(self, pg: PrunedGraph, colour: dict[int, int]) -> None:
        nodes = sorted(pg.succ)
        index = {v: i for i, v in enumerate(nodes)}
        comp, _ = strongly_connected([[index[w] for w in sorted(pg.succ[v])] for v in nodes])
        # Tarjan lists components sinks first: a smaller component number is further down
        self.comp = {v: comp[index[v]] for v in nodes}
        self.up = colour
        self.palette: dict[tuple, int] = {}
        self.done: dict[int, tuple[dict[int, int], tuple, bool]] = {}

    def colouring(self, key: int, rg: RaceGraph) -> tuple[dict[int, int], tuple, bool]:
        """(downward colour per node, certificate, all colours distinct) of ``rg``, cached under ``key``."""
        hit = self.done.get(key)
        if hit is not None:
            return hit
        comp, up, palette = self.comp, self.up, self.palette
        outs: dict[int, list[tuple[str, int]]] = {n: [] for n in rg.nodes}
        for u, v, r in rg.edges:
            if comp[u] != comp[v]:
                outs[u].append((r, v))
        down: dict[int, int] = {}
        for v in sorted(rg.nodes, key=comp.__getitem__):
            k = (up[v], tuple(sorted((r, down[w]) for r, w in outs[v])))
            c = palette.get(k)
            if c is None:
                c = palette[k] = len(palette)
            down[v] = c
        hit = (down, certificate(rg, down), len(set(down.values())) == len(rg.nodes))
        self.done[key] = hit
        return hit


def isomorphism_classes(pg: PrunedGraph, graphs: Sequence[RaceGraph], stats: IsoStats | None = None,
                        timeout: float | None = None, method: str = "refined") -> list[list[int]]:
    """Indices into ``graphs`` grouped by isomorphism (event types, HB relations).

    Classes are listed by their first member; members keep the input order.
    Exact: graphs are bucketed by :func:`certificate`, and within a bucket
    each graph is compared with the first graph of every class found so
    far.  ``method="refined"`` (default) compares the graphs' downward
    colourings (:class:`_Refiner`) and runs VF2 only where those leave a
    choice; ``"vf2"`` runs VF2 on upward colours for every comparison (the
    earlier path, kept as a baseline: same classes, tens of seconds on
    traces with thousands of long race graphs).  ``timeout`` (seconds per
    VF2 check, default none) restores the original's behaviour: a graph
    whose check times out becomes a class of its own (and the result depends
    on timing); it implies ``"vf2"``.
    """
    if method not in ISO_METHODS:
        raise ValueError(f"method must be one of {ISO_METHODS}")
    stats = stats if stats is not None else IsoStats()
    colour = upward_colours(pg)
    refiner = _Refiner(pg, colour) if method == "refined" and timeout is None else None
    buckets: dict[tuple, list[list[int]]] = defaultdict(list)   # certificate -> classes
    nxs: dict[int, object] = {}
    order: list[list[int]] = []
    for i, rg in enumerate(graphs):
        classes = buckets[certificate(rg, colour)]
        # all colours distinct: equal certificates force the colour-preserving
        # bijection and equal coloured edges, so the graphs are isomorphic
        distinct = len({colour[n] for n in rg.nodes}) == len(rg.nodes)
        placed = False
        for cls in classes:
            j = cls[0]
            if distinct:
                cls.append(i)
                placed = True
                break
            stats.exact_checks += 1
            if refiner is not None:
                same = _same_refined(refiner, graphs, j, i, stats)
            else:
                if j not in nxs:
                    nxs[j] = _nx(graphs[j], colour)
                deadline = None if timeout is None else time.perf_counter() + timeout
                try:
                    same = _isomorphic(nxs[j], _nx(rg, colour), deadline)
                except _Timeout:
                    stats.timeouts += 1
                    order.append([i])
                    placed = True
                    break
            if same:
                cls.append(i)
                placed = True
                break
        if not placed:
            cls = [i]
            classes.append(cls)
            order.append(cls)
    stats.buckets = len(buckets)
    return order


def _same_refined(refiner: _Refiner, graphs: Sequence[RaceGraph], j: int, i: int, stats: IsoStats) -> bool:
    """Exact isomorphism of ``graphs[j]`` and ``graphs[i]`` through their downward colourings."""
    dj, cert_j, discrete = refiner.colouring(j, graphs[j])
    di, cert_i, _ = refiner.colouring(i, graphs[i])
    if cert_j != cert_i:
        return False
    if discrete:
        return True
    stats.vf2_checks += 1
    return _isomorphic(_nx(graphs[j], dj), _nx(graphs[i], di))


# ---------------------------------------------------------------------------
# agglomeration


def complete_linkage(points: Sequence[dict[str, Fraction]], threshold: Fraction,
                     weights: dict[str, Fraction] = WEIGHTS) -> list[list[int]]:
    """Flat complete-linkage clusters of ``points`` cut at ``threshold`` (inclusive).

    Returns groups of indices into ``points``.  Identical points merge first
    (distance 0); then the closest pair of groups (maximum pairwise distance)
    merges while it is within the threshold, ties broken by group order.
    """
    n = len(points)
    if n == 0:
        return []
    # collapse identical points: they are at distance 0 from each other and
    # at the same distance from everything else, so merging them first is exact
    key_of = [tuple(sorted(p.items())) for p in points]
    first: dict[tuple, int] = {}
    groups: list[list[int]] = []
    reps: list[int] = []
    for i, k in enumerate(key_of):
        if k in first:
            groups[first[k]].append(i)
        else:
            first[k] = len(groups)
            groups.append([i])
            reps.append(i)
    m = len(groups)
    d = [[distance(points[reps[a]], points[reps[b]], weights) for b in range(m)] for a in range(m)]
    alive = list(range(m))
    while len(alive) > 1:
        best = None
        for x in range(len(alive)):
            a = alive[x]
            for y in range(x + 1, len(alive)):
                b = alive[y]
                if best is None or d[a][b] < best[0]:
                    best = (d[a][b], a, b)
        if best is None or best[0] > threshold:
            break
        _, a, b = best
        for c in alive:
            if c != a and c != b:
                d[a][c] = d[c][a] = max(d[a][c], d[b][c])
        groups[a].extend(groups[b])
        alive.remove(b)
    return [sorted(groups[a]) for a in alive]


@dataclass
class Clustering:
    iso: list[list[int]]           # isomorphism classes (indices of race graphs), in linkage order
    final: list[list[int]]         # final clusters (indices of race graphs), largest first
    iso_of_final: list[list[int]]  # per final cluster: its isomorphism classes (indices into ``iso``)
    stats: IsoStats


def cluster_graphs(pg: PrunedGraph, graphs: Sequence[RaceGraph], features: Sequence[Features], *,
                   key: Callable[[int], tuple] | None = None, threshold: Fraction | float = Fraction(2),
                   weights: dict[str, Fraction] = WEIGHTS, iso_timeout: float | None = None,
                   iso_method: str = "refined") -> Clustering:
    """Isomorphism classes, then complete linkage between them (see the module doc).

    ``key(i)`` orders races canonically (default: their index); with a key
    that does not depend on the order of ``graphs`` (say, the races' event
    ids) the result does not either.  The order, as in the original: graphs
    by size, largest first, then by key; classes in order of their first
    graph, then by number of graphs, largest first.  Members of every
    cluster are listed in that graph order.
    """
    key = key or (lambda i: (i,))
    order = sorted(range(len(graphs)), key=lambda i: (-len(graphs[i]), key(i)))
    stats = IsoStats()
    classes = [[order[j] for j in c]
               for c in isomorphism_classes(pg, [graphs[i] for i in order], stats, iso_timeout,
                                               iso_method)]
    classes.sort(key=lambda c: -len(c))
    t = threshold if isinstance(threshold, Fraction) else Fraction(str(threshold))
    if len(classes) <= 1:
        merged = [list(range(len(classes)))]
    else:
        points = [mean_features([features[i] for i in c]) for c in classes]
        merged = complete_linkage(points, t, weights)
    finals = [([i for k in grp for i in classes[k]], sorted(grp)) for grp in merged if grp]
    position = {i: p for p, i in enumerate(order)}
    for members, _ in finals:
        members.sort(key=position.__getitem__)
    finals.sort(key=lambda x: (-len(x[0]), position[x[0][0]]))
    return Clustering(classes, [f for f, _ in finals], [k for _, k in finals], stats)


__all__ = ["isomorphism_classes", "ISO_METHODS", "upward_colours", "certificate", "complete_linkage", "cluster_graphs",
           "Clustering", "IsoStats"]
