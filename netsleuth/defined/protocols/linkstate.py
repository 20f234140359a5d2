"""A link-state (OSPF-like) router for the overhead experiments.

Each router originates an LSA (sequence number, up neighbours with costs)
at start and whenever an adjacent link changes; LSAs are flooded: a router
stores and forwards an LSA only if it is newer than the one it holds. The
routing table is computed on demand with Dijkstra over the LSDB (as OSPF
delays SPF runs), considering a link only if both ends advertise it.
"""

from __future__ import annotations

import heapq
from typing import Any

from netsleuth.defined.node import Context, Node


class LinkStateRouter(Node):
    def __init__(self, name: str, lsdb: dict[str, dict] | None = None) -> None:
        """``lsdb``: a database to start from (a warm start, as after graceful restart)."""
        super().__init__(name)
        self.lsdb: dict[str, dict] = dict(lsdb or {})
        self.seq = self.lsdb.get(name, {}).get("seq", 0)

    def _originate(self, ctx: Context) -> None:
        self.seq += 1
        lsa = {"router": self.name, "seq": self.seq,
               "links": {nb: ctx.link_cost(nb) for nb in ctx.neighbors}}
        self.lsdb[self.name] = lsa
        for nb in ctx.neighbors:
            ctx.send(nb, {"type": "lsa", "lsa": lsa})

    def on_start(self, ctx: Context) -> None:
        if self.name not in self.lsdb:
            self._originate(ctx)

    def on_external(self, ctx: Context, event: dict) -> None:
        if event.get("type") in ("link_down", "link_up"):
            self._originate(ctx)
            if event["type"] == "link_up":  # database exchange with the new neighbour
                for r in sorted(self.lsdb):
                    ctx.send(event["peer"], {"type": "lsa", "lsa": self.lsdb[r]})

    def on_message(self, ctx: Context, src: str, payload: Any) -> None:
        lsa = payload["lsa"]
        cur = self.lsdb.get(lsa["router"])
        if cur is not None and cur["seq"] >= lsa["seq"]:
            return
        self.lsdb[lsa["router"]] = lsa
        for nb in ctx.neighbors:
            if nb != src:
                ctx.send(nb, {"type": "lsa", "lsa": lsa})

    def routes(self) -> dict:
        return spf(self.name, self.lsdb)

    def state(self) -> dict:
        return {"seq": self.seq, "lsdb": {r: self.lsdb[r]["seq"] for r in sorted(self.lsdb)},
                "routes": self.routes()}


def spf(root: str, lsdb: dict[str, dict]) -> dict[str, list]:
    """destination -> [distance, first hop], over two-way links only."""
    def adj(r: str) -> list[tuple[str, int]]:
        links = lsdb.get(r, {}).get("links", {})
        return sorted((n, c) for n, c in links.items() if r in lsdb.get(n, {}).get("links", {}))

    dist: dict[str, int] = {root: 0}
    first: dict[str, str | None] = {root: None}
    heap: list[tuple[int, str, str | None]] = [(0, root, None)]
    done: set[str] = set()
    while heap:
        d, r, fh = heapq.heappop(heap)
        if r in done:
            continue
        done.add(r)
        for n, c in adj(r):
            nd = d + c
            nfh = n if r == root else fh
            if n not in dist or (nd, nfh or "") < (dist[n], first[n] or ""):
                dist[n] = nd
                first[n] = nfh
                heapq.heappush(heap, (nd, n, nfh))
    return {n: [dist[n], first[n]] for n in sorted(dist) if n != root}


def tables_match_spf(net, states: dict[str, dict]) -> bool:
    """Every router's distances equal shortest paths on the topology its LSDB converged to."""
    import networkx as nx

    lsdb_seqs = [s["lsdb"] for s in states.values()]
    if any(x != lsdb_seqs[0] for x in lsdb_seqs):
        return False
    g = net.graph()
    for n, s in states.items():
        want = nx.single_source_dijkstra_path_length(g, n, weight="delay")
        got = {d: v[0] for d, v in s["routes"].items()}
        if got != {d: w for d, w in want.items() if d != n}:
            return False
    return True
