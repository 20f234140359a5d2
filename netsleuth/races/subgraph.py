"""BigBug's per-race subgraphs ("per-violation graphs").

Steps, in the order of the original implementation (SDNRacer's
``reduce/preprocessor.py`` and ``reduce/subgraph.py``):

1. drop the edges that only served to filter races (``time``, ``dep_raw``);
2. prune, repeatedly, every leaf that is not an event of a harmful race
   (events that lead to no race);
3. drop redundant edges: by default (``reduction="transitive"``, the
   paper's "removes any redundant HB edges") every edge implied by a longer
   path (edges within a cycle are kept); ``"sdnracer"`` does only what the
   original code did: an event whose only two successors are a PACKET_IN
   (``mid``) and the event its packet reaches (``pid``), while the
   controller's reply (MessageSend -> ControllerHandle -> ControllerSend ->
   that same event) also reaches it, loses the ``pid`` edge; ``"none"``
   keeps all.  On the reference corpus all three give the same counts.
   Taking ancestor-closed subgraphs afterwards is the same as reducing each
   race's subgraph: a path between two events of a race graph only runs
   through their ancestors;
4. remove the controllers' initialisation chains at the roots: Floodlight's
   BARRIER_REQUEST -> FLOW_MOD (delete all) -> BARRIER_REQUEST and POX's
   FLOW_MOD -> BARRIER_REQUEST (as the original: a root BARRIER_REQUEST or
   FLOW_MOD handle goes, and so does the rest of the chain when it is a
   single successor of the right type).  Unlike the original, a chain with
   an event that takes part in a race is left whole;
5. per race: the two race events and all their ancestors, induced subgraph.

Cycles (ONOS) are fine throughout: nothing here assumes a DAG (the original
refused graphs with cycles).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from netsleuth.races.detect import Race
from netsleuth.races.events import (
    CONTROLLER_HANDLE,
    CONTROLLER_SEND,
    MESSAGE_HANDLE,
    MESSAGE_SEND,
)
from netsleuth.races.hb import DEP_RAW, MID, PID, TIME, HbGraph, strongly_connected

REDUCTIONS = ("transitive", "sdnracer", "none")
BARRIER_REQUEST = "OFPT_BARRIER_REQUEST"
FLOW_MOD = "OFPT_FLOW_MOD"


@dataclass
class PrunedGraph:
    """The HB graph after steps 1-4 (node ids are :class:`HbGraph` nodes)."""

    graph: HbGraph
    succ: dict[int, set[int]]
    pred: dict[int, set[int]]
    rel: dict[tuple[int, int], str]
    race_nodes: frozenset[int]
    pruned_leaves: int = 0
    removed_edges: int = 0
    removed_init: list[int] = field(default_factory=list)

    def __contains__(self, node: int) -> bool:
        return node in self.succ

    def remove_node(self, n: int) -> None:
        for v in self.succ.pop(n):
            self.pred[v].discard(n)
            del self.rel[(n, v)]
        for u in self.pred.pop(n):
            self.succ[u].discard(n)
            del self.rel[(u, n)]

    def remove_edge(self, u: int, v: int) -> None:
        self.succ[u].discard(v)
        self.pred[v].discard(u)
        del self.rel[(u, v)]

    def ancestors(self, nodes: Iterable[int]) -> set[int]:
        seen = set(nodes)
        stack = list(seen)
        pred = self.pred
        while stack:
            for u in pred[stack.pop()]:
                if u not in seen:
                    seen.add(u)
                    stack.append(u)
        return seen


@dataclass
class RaceGraph:
    """One race's subgraph: nodes (sorted) and labelled edges, in HbGraph node ids."""

    index: int                  # position of the race in the harmful list
    race: Race
    nodes: tuple[int, ...]
    edges: tuple[tuple[int, int, str], ...]

    def __len__(self) -> int:
        return len(self.nodes)

    @property
    def race_nodes(self) -> tuple[int, int]:
        return (self.race.i, self.race.k)

    def preds(self) -> dict[int, list[int]]:
        p: dict[int, list[int]] = {n: [] for n in self.nodes}
        for u, v, _ in self.edges:
            p[v].append(u)
        return p

    def succs(self) -> dict[int, list[int]]:
        s: dict[int, list[int]] = {n: [] for n in self.nodes}
        for u, v, _ in self.edges:
            s[u].append(v)
        return s

    def roots(self) -> list[int]:
        has_pred = {v for _, v, _ in self.edges}
        return [n for n in self.nodes if n not in has_pred]

    def to_networkx(self, g: HbGraph):
        """DiGraph with node attribute ``kind`` (event type) and edge attribute ``rel``."""
        import networkx as nx

        d = nx.DiGraph()
        for n in self.nodes:
            d.add_node(n, kind=g.events[n].kind)
        for u, v, r in self.edges:
            d.add_edge(u, v, rel=r)
        return d


def prune_hb_graph(g: HbGraph, races: Sequence[Race], *, reduction: str = "transitive") -> PrunedGraph:
    """Steps 1-4 of the module doc on a copy of ``g``'s structure."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}")
    n = len(g)
    succ: dict[int, set[int]] = {v: set() for v in range(n)}
    pred: dict[int, set[int]] = {v: set() for v in range(n)}
    rel: dict[tuple[int, int], str] = {}
    for (u, v), r in g.rel.items():
        if r in (TIME, DEP_RAW):
            continue
        succ[u].add(v)
        pred[v].add(u)
        rel[(u, v)] = r
    race_nodes = frozenset(x for r in races for x in (r.i, r.k))
    pg = PrunedGraph(g, succ, pred, rel, race_nodes)

    # 2. non-race leaves, repeatedly
    stack = [v for v in range(n) if not succ[v] and v not in race_nodes]
    while stack:
        v = stack.pop()
        if v not in pg or pg.succ[v] or v in race_nodes:
            continue
        ps = list(pg.pred[v])
        pg.remove_node(v)
        pg.pruned_leaves += 1
        for u in ps:
            if not pg.succ[u] and u not in race_nodes:
                stack.append(u)

    # 3. redundant edges
    if reduction == "sdnracer":
        _drop_packet_shortcuts(pg)
    elif reduction == "transitive":
        _transitive_reduction(pg)

    # 4. initialisation chains at the roots
    _drop_init_chains(pg)
    return pg


def _drop_packet_shortcuts(pg: PrunedGraph) -> None:
    events = pg.graph.events
    for u in sorted(pg.succ):
        s = pg.succ[u]
        if len(s) != 2:
            continue
        a, b = sorted(s)
        ra, rb = pg.rel[(u, a)], pg.rel[(u, b)]
        if (ra, rb) == (MID, PID):
            mid_node, pid_node = a, b
        elif (ra, rb) == (PID, MID):
            mid_node, pid_node = b, a
        else:
            continue
        if events[mid_node].kind != MESSAGE_SEND:
            continue
        ms = pg.succ[mid_node]
        if len(ms) != 1:
            continue
        (ch,) = ms
        if events[ch].kind != CONTROLLER_HANDLE:
            continue
        for cs in pg.succ[ch]:
            if events[cs].kind == CONTROLLER_SEND and pg.succ[cs] == {pid_node}:
                pg.remove_edge(u, pid_node)
                pg.removed_edges += 1
                break


def _transitive_reduction(pg: PrunedGraph) -> None:
    """Remove u -> v when another path u -> ... -> v exists (edges inside a cycle are kept)."""
    nodes = sorted(pg.succ)
    index = {v: i for i, v in enumerate(nodes)}
    succ_list = [[index[w] for w in sorted(pg.succ[v])] for v in nodes]
    comp, comps = strongly_connected(succ_list)
    # reachability between components, sinks first
    reach = [0] * len(comps)
    csucc: list[set[int]] = [set() for _ in comps]
    for v, ws in enumerate(succ_list):
        for w in ws:
            if comp[w] != comp[v]:
                csucc[comp[v]].add(comp[w])
    for c in range(len(comps)):
        m = 1 << c
        for d in csucc[c]:
            m |= reach[d]
        reach[c] = m
    for v, ws in enumerate(succ_list):
        cv = comp[v]
        for w in ws:
            cw = comp[w]
            if cw == cv:
                continue
            # implied if some other successor component reaches cw
            if any(d != cw and (reach[d] >> cw) & 1 for d in csucc[cv]):
                pg.remove_edge(nodes[v], nodes[w])
                pg.removed_edges += 1


def _drop_init_chains(pg: PrunedGraph) -> None:
    events = pg.graph.events

    def handle(v: int, msg_type: str) -> bool:
        ev = events[v]
        return ev.kind == MESSAGE_HANDLE and ev.msg_type == msg_type

    def single_successor(v: int) -> int | None:
        s = pg.succ[v]
        return next(iter(s)) if len(s) == 1 else None

    chains: list[list[int]] = []
    for root in sorted(v for v in pg.succ if not pg.pred[v]):
        chain: list[int] = []
        if handle(root, BARRIER_REQUEST):          # Floodlight: barrier, delete-all, barrier
            chain.append(root)
            s = single_successor(root)
            if s is not None and handle(s, FLOW_MOD):
                chain.append(s)
                t = single_successor(s)
                if t is not None and handle(t, BARRIER_REQUEST):
                    chain.append(t)
        elif handle(root, FLOW_MOD):               # POX: delete-all, barrier
            chain.append(root)
            s = single_successor(root)
            if s is not None and handle(s, BARRIER_REQUEST):
                chain.append(s)
        # A chain with a race event stays whole: the original removed it and
        # then failed on the race (or, in the version the reference numbers
        # come from, evidently kept it: with it kept all iso counts agree).
        if chain and not any(v in pg.race_nodes for v in chain):
            chains.append(chain)
    for chain in chains:
        for v in chain:
            if v in pg:
                pg.remove_node(v)
                pg.removed_init.append(v)


def race_subgraph(pg: PrunedGraph, race: Race, index: int = 0) -> RaceGraph:
    """Step 5: the race's two events and their ancestors in the pruned graph."""
    nodes = pg.ancestors((race.i, race.k))
    edges = sorted((u, v, pg.rel[(u, v)]) for v in nodes for u in pg.pred[v] if u in nodes)
    return RaceGraph(index, race, tuple(sorted(nodes)), tuple(edges))


def race_subgraphs(g: HbGraph, races: Sequence[Race], *,
                   reduction: str = "transitive") -> tuple[PrunedGraph, list[RaceGraph]]:
    pg = prune_hb_graph(g, races, reduction=reduction)
    return pg, [race_subgraph(pg, r, i) for i, r in enumerate(races)]


__all__ = ["PrunedGraph", "RaceGraph", "prune_hb_graph", "race_subgraph", "race_subgraphs", "REDUCTIONS"]
