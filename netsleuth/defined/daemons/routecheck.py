"""Forwarding loops, blackholes and reachability from the routers' kernel tables (pure).

The daemons' real forwarding state is the kernel's main table in each
router's namespace (:mod:`.kroutes`). From every router, a packet to every
announced prefix (each router's loopback) is followed hop by hop: a
longest-prefix match, every next hop of a multipath route, across the link
the outgoing interface names. It is *delivered* at the router that owns the
address, *dropped* where no route matches, where the route is a blackhole
or unreachable, or where the link it leaves by is cut, and *loops* when it
returns to a router it has passed. Pairs the cut links partition are not
judged. The findings are netsleuth's own :class:`~netsleuth.invariants.forwarding.Finding`,
worded as for an OpenFlow network ("packets A -> B are dropped at C: why"),
so ``violation_lines`` prints them as it prints every other violation.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping

from netsleuth.defined.daemons.kroutes import KRoute
from netsleuth.defined.daemons.spec import DaemonNet
from netsleuth.invariants.finding import Finding
from netsleuth.model.components import components

Tables = Mapping[str, Iterable[KRoute]]


@functools.lru_cache(maxsize=8192)   # a network's few hundred addresses, looked up after every table change
def _int(addr: str) -> int:
    a, b, c, d = (int(x) for x in addr.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def _fib(routes: Iterable[KRoute]) -> list[tuple[int, int, KRoute]]:
    """(network, mask, route), longest prefix first: the order a lookup tries them in."""
    out = []
    for r in routes:
        addr, _, plen = r.prefix.partition("/")
        mask = (0xFFFFFFFF << (32 - int(plen))) & 0xFFFFFFFF
        out.append((int(plen), _int(addr) & mask, mask, r))
    out.sort(key=lambda x: -x[0])
    return [(n, m, r) for _, n, m, r in out]


def _lookup(fib: list[tuple[int, int, KRoute]], addr: str) -> KRoute | None:
    a = _int(addr)
    for net, mask, r in fib:
        if a & mask == net:
            return r
    return None


Fibs = dict[str, tuple[Iterable[KRoute], list[tuple[int, int, KRoute]]]]
# what a walk finds from a router on: (routers it is delivered at, (router, why) drops, paths followed)
_Tree = tuple[tuple[str, ...], tuple[tuple[str, str], ...], int]
MAX_PATHS = 10_000   # paths a walk follows at most (each multipath route multiplies them)
MAX_DEPTH = 400      # routers _tree recurses through at most (past them, walk goes path by path)


def _fibs(tables: Tables, memo: Fibs | None) -> dict[str, list[tuple[int, int, KRoute]]]:
    """Each table's lookup order; with ``memo`` (router -> the table object last seen and its order, kept
    by the caller from one check to the next), a table that is the very object seen last time is not sorted
    again: a run checks after each table change, and one change leaves the other tables as they were."""
    if memo is None:
        return {k: _fib(v) for k, v in tables.items()}
    out = {}
    for k, v in tables.items():
        hit = memo.get(k)
        if hit is None or hit[0] is not v:
            hit = memo[k] = (v, _fib(v))
        out[k] = hit[1]
    return out


class Forwarding:
    """One snapshot: the tables, which links are cut, and the walk of a packet through them."""

    def __init__(self, net: DaemonNet, tables: Tables, down: Iterable[frozenset[str]] = (),
                 memo: Fibs | None = None) -> None:
        self.net = net
        self.fibs = _fibs(tables, memo)
        self.down = set(down)
        self.addrs: dict[str, str] = {}
        for r in net.routers:
            self.addrs[r.loopback] = r.name
        for ln in net.links:
            self.addrs[ln.addr(ln.a)] = ln.a
            self.addrs[ln.addr(ln.b)] = ln.b
        self.ifs = {(end, ln.ifname(end)): ln for ln in net.links for end in (ln.a, ln.b)}
        self._steps: dict[tuple[str, str], tuple[bool, tuple[tuple[str, str], ...], tuple[str, ...]]] = {}
        self._trees: dict[str, dict[str, _Tree | None]] = {}   # address -> router -> what a walk from it finds

    def walk(self, src: str, addr: str) -> tuple[list[str], list[tuple[str, str]], list[list[str]]]:
        """(routers it is delivered at, (router, why) drops, loops as router paths) for src -> addr.

        Where no loop can be reached from ``src``, the answer is put together from what each router
        on the way contributes, worked out once per address (:meth:`_tree`): a check walks from every
        router to every address, and those walks run into the same routers over and over.
        """
        tree = self._tree(src, addr, self._trees.setdefault(addr, {}), set())
        if tree is not None and tree[2] <= MAX_PATHS:
            return list(tree[0]), list(tree[1]), []
        return self._walk_paths(src, addr)

    def _tree(self, node: str, addr: str, trees: dict[str, _Tree | None], active: set[str]) -> _Tree | None:
        """What a walk from ``node`` to ``addr`` finds: (delivered, drops, paths it follows), each in the
        walk's order; None when a loop can be reached from ``node`` (where a walk then meets the loop
        depends on the path that led to it) or the routers on the way are too many to recurse through.

        The walk is depth first, a router's next hops taken last first: what it finds from a router is
        the router's own drops, then what it finds from each next hop in that order.
        """
        if node in trees:
            return trees[node]
        if node in active or len(active) > MAX_DEPTH:
            return None
        active.add(node)
        here, dropped, peers = self._step(node, addr)
        tree: _Tree | None = ((node,), (), 1)
        if not here:
            delivered: tuple[str, ...] = ()
            drops, paths = dropped, 1
            for peer in reversed(peers):
                sub = self._tree(peer, addr, trees, active)
                if sub is None:
                    tree = None
                    break
                delivered, drops, paths = delivered + sub[0], drops + sub[1], paths + sub[2]
            else:
                tree = (delivered, drops, paths)
        active.discard(node)
        trees[node] = tree
        return tree

    def _walk_paths(self, src: str, addr: str) -> tuple[list[str], list[tuple[str, str]], list[list[str]]]:
        """:meth:`walk` path by path (at most MAX_PATHS of them): loops are found on the path that meets them."""
        delivered: list[str] = []
        drops: list[tuple[str, str]] = []
        loops: list[list[str]] = []
        work: list[tuple[str, tuple[str, ...]]] = [(src, ())]
        seen_paths = 0
        while work and seen_paths < MAX_PATHS:
            node, path = work.pop()
            seen_paths += 1
            if node in path:
                loops.append([*path[path.index(node):], node])
                continue
            path = (*path, node)
            here, dropped, peers = self._step(node, addr)
            if here:
                delivered.append(node)
                continue
            drops.extend(dropped)
            for peer in peers:
                work.append((peer, path))
        return delivered, drops, loops

    def _step(self, node: str, addr: str) -> tuple[bool, tuple[tuple[str, str], ...], tuple[str, ...]]:
        """What ``node`` does with a packet to ``addr``: (delivered here, drops, routers it sends it on to).

        Remembered per snapshot: a check walks from every router to every address, and the walks
        towards one address meet at the same routers again and again."""
        key = (node, addr)
        step = self._steps.get(key)
        if step is None:
            step = self._steps[key] = self._decide(node, addr)
        return step

    def _decide(self, node: str, addr: str) -> tuple[bool, tuple[tuple[str, str], ...], tuple[str, ...]]:
        if self.addrs.get(addr) == node:
            return True, (), ()
        r = _lookup(self.fibs.get(node, []), addr)
        if r is None:
            return False, ((node, f"no route to {addr}"),), ()
        if r.kind != "unicast" or not r.nexthops:
            return False, ((node, f"{r.kind} route {r.prefix}"),), ()
        drops: list[tuple[str, str]] = []
        peers: list[str] = []
        for _gw, dev in r.nexthops:
            ln = self.ifs.get((node, dev))
            if ln is None:
                drops.append((node, f"route {r.prefix} leaves by {dev}, which is no link"))
                continue
            peer = ln.peer(node)
            if frozenset((ln.a, ln.b)) in self.down:
                drops.append((node, f"route {r.prefix} leaves by link {node}-{peer}, which is down"))
                continue
            peers.append(peer)
        return False, tuple(drops), tuple(peers)

    def components(self) -> dict[str, int]:
        """Router -> a number that exactly the routers the live links connect share."""
        return components([r.name for r in self.net.routers],
                          [(ln.a, ln.b) for ln in self.net.links if frozenset((ln.a, ln.b)) not in self.down])


def check(net: DaemonNet, tables: Tables, down: Iterable[frozenset[str]] = (), memo: Fibs | None = None
          ) -> list[Finding]:
    """Every loop, blackhole and unreachable announced prefix, from every router (``memo``: see :func:`_fibs`)."""
    fw = Forwarding(net, tables, down, memo)
    comp = fw.components()
    out: list[Finding] = []
    for src in sorted(fw.fibs):
        for dst in net.routers:
            if dst.name == src or comp.get(src) != comp.get(dst.name):
                continue
            target = f"{dst.loopback} ({dst.name})"
            delivered, drops, loops = fw.walk(src, dst.loopback)
            if loops:
                cyc = tuple(dict.fromkeys(loops[0]))
                out.append(Finding("loops", f"packets {src} -> {target} loop: {' -> '.join(loops[0])}",
                                   hosts=(src, dst.name), switches=cyc,
                                   details={"path": loops[0], "group": ["loop", *sorted(cyc), dst.name]}))
            if drops and not delivered:
                where, why = drops[0]
                out.append(Finding("blackholes", f"packets {src} -> {target} are dropped at {where}: {why}",
                                   hosts=(src, dst.name), switches=tuple(dict.fromkeys(w for w, _ in drops)),
                                   details={"drops": [list(d) for d in drops], "group": ["drop", where, dst.name]}))
            if not delivered:
                why = "they loop" if loops and not drops else f"they are dropped at {drops[0][0]}" if drops else "?"
                out.append(Finding("reachability", f"{src} cannot reach {target}: {why}",
                                   hosts=(src, dst.name), details={"group": ["unreach", src, dst.name]}))
    return out
