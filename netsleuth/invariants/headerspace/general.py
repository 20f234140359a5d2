"""The general header-space engine: a depth-first search over header spaces, with lazy
differences, set-field transfer functions and exact preimages back to the headers injected
(:func:`reachable`), and what it finds (:class:`Reach`).  It takes every class the batch engine
(``batch.py``) cannot keep.  :class:`HsaNet`, the view as both engines read it (switches compiled
once per check), is here too.  The semantics of both are in ``engine.py``'s docstring.
"""


from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from netsleuth.invariants.forwarding import is_drop_rule, why_sends_nothing
from netsleuth.invariants.headerspace.codes import CTRL, SPECIAL
from netsleuth.invariants.headerspace.compiled import CompiledSwitch, compiled
from netsleuth.invariants.headerspace.rewrite import Rewrite, image, preimage
from netsleuth.invariants.headerspace.space import HeaderSpace
from netsleuth.invariants.view import NetworkView

Port = tuple[str, int]
DEFAULT_BUDGET = 200_000  # general-engine branches per ingress before giving up (Analysis.truncated)
# Classifications an HsaNet remembers (see HsaNet.classify), all switches together: a few
# hundred bytes each, the few hops of every class an incremental check re-traces on a small
# network; a big network's cold check goes past it and starts again, as good as no memo.
CLASSIFIED_MAX = 1 << 13
Pieces = tuple[list[tuple[int | None, HeaderSpace]], set[int]]


# --------------------------------------------------------------------------- results
@dataclass
class Reach:
    """Where the headers injected at ``ingress`` go.  Header spaces are in terms of the
    headers as injected (set-field actions are undone with exact preimages)."""

    ingress: Port
    delivered: dict[str, list[HeaderSpace]] = field(default_factory=dict)
    punted: dict[str, list[HeaderSpace]] = field(default_factory=dict)
    drops: list[tuple[str, str, HeaderSpace]] = field(default_factory=list)     # (switch, why, hs)
    loops: list[tuple[tuple[Port, ...], HeaderSpace]] = field(default_factory=list)  # (path, hs)
    drop_paths: list[tuple[Port, ...]] = field(default_factory=list)  # the path to each of drops
    filtered: dict[str, list[HeaderSpace]] = field(default_factory=dict)  # switch -> dropped by a drop rule
    truncated: bool = False
    branches: int = 0

    def delivered_to(self, host: str) -> HeaderSpace:
        return union_of(self.delivered.get(host, ()))

    def punted_at(self, switch: str) -> HeaderSpace:
        return union_of(self.punted.get(switch, ()))

    def dropped(self) -> HeaderSpace:
        return union_of(hs for _s, _w, hs in self.drops)

    def looping(self) -> HeaderSpace:
        return union_of(hs for _p, hs in self.loops)

    def merge(self, other: Reach) -> None:
        for h, lst in other.delivered.items():
            self.delivered.setdefault(h, []).extend(lst)
        for s, lst in other.punted.items():
            self.punted.setdefault(s, []).extend(lst)
        for s, lst in other.filtered.items():
            self.filtered.setdefault(s, []).extend(lst)
        self.drops.extend(other.drops)
        self.drop_paths.extend(other.drop_paths)
        self.drop_paths.extend([()] * (len(self.drops) - len(self.drop_paths)))
        self.loops.extend(other.loops)
        self.truncated |= other.truncated
        self.branches += other.branches


def union_of(spaces: Iterable[HeaderSpace]) -> HeaderSpace:
    """One header space holding every term of ``spaces`` (no simplification)."""
    return HeaderSpace.union(spaces)


class HsaNet:
    """What the engines need from a view, looked up once per check."""

    def __init__(self, view: NetworkView, cache: bool = True) -> None:
        self.view = view
        self.switches = view.switches
        self.cache = cache
        self._compiled: dict[str, CompiledSwitch] = {}
        self._up: dict[str, bool] = {}
        self._pre: dict = {}
        self._classified: dict[str, dict[tuple[int, tuple], Pieces]] = {}
        self._n_classified = 0

    def forget(self, name: str) -> None:
        """Compile switch ``name`` again when next asked (its table changed)."""
        self._compiled.pop(name, None)
        memo = self._classified.pop(name, None)
        if memo:
            self._n_classified -= len(memo)

    def classify(self, name: str, p: int, hs: HeaderSpace) -> Pieces:
        """:meth:`CompiledSwitch.classify` at switch ``name``, remembered until the switch is
        forgotten (the results are shared: read-only).  An incremental check re-traces an
        ingress's classes after each flow_mod that may move them, through tables that mostly
        did not change: the same header spaces at the same ports, classified once.  A net
        that compiles afresh (``cache=False``) remembers nothing."""
        if not self.cache:
            return self.compiled(name).classify(p, hs)
        memo = self._classified.get(name)
        if memo is None:
            memo = self._classified[name] = {}
        key = (p, hs.terms)
        hit = memo.get(key)
        if hit is None:
            if self._n_classified >= CLASSIFIED_MAX:
                for m in self._classified.values():
                    m.clear()
                self._n_classified = 0
            hit = memo[key] = self.compiled(name).classify(p, hs)
            self._n_classified += 1
        return hit

    def compiled(self, name: str) -> CompiledSwitch:
        cs = self._compiled.get(name)
        if cs is None:
            cs = self._compiled[name] = compiled(self.switches[name], cache=self.cache)
        return cs

    def up(self, name: str) -> bool:
        u = self._up.get(name)
        if u is None:
            u = self._up[name] = self.view.is_switch_up(name)
        return u

    def peer(self, node: str, port: int) -> Port | None:
        return self.view.peer(node, port)

    def pre(self, chain: tuple[Rewrite, ...], w: tuple[int, int]) -> HeaderSpace:
        """The headers that ``chain`` rewrites into the wildcard ``w`` (memoized)."""
        key = (chain, w)
        hs = self._pre.get(key)
        if hs is None:
            hs = self._pre[key] = preimage(HeaderSpace.wildcard(*w), chain).prune()
        return hs


# --------------------------------------------------------------------------- general engine
def reachable(view: NetworkView, src_switch: str, src_port: int,
              header_space: HeaderSpace | None = None, *, budget: int = DEFAULT_BUDGET,
              _net: HsaNet | None = None) -> Reach:
    """Push ``header_space`` (default: every header) in at ``src_switch:src_port`` and
    return where it goes: the part delivered to each host, punted at each switch, dropped
    (with where, why and the path) and looping (with the path that revisits a port), all
    as sets of the headers injected.  Uses the general engine only."""
    net = _net or HsaNet(view)
    hs = HeaderSpace.all() if header_space is None else header_space
    reach = Reach((src_switch, src_port))
    _explore(net, src_switch, src_port, hs, reach, budget)
    return reach


def _explore(net: HsaNet, s0: str, p0: int, hs: HeaderSpace, reach: Reach, budget: int,
             path0: tuple[Port, ...] = ()) -> None:
    # The net's methods and the reach's lists are bound once: this loop runs for every hop of
    # every class the batch engine cannot keep (a full check of a changed FatTree: all of them).
    stack: list[tuple[str, int, HeaderSpace, HeaderSpace, tuple[Rewrite, ...], tuple[Port, ...]]]
    stack = [(s0, p0, hs, hs, (), path0)]
    switches = net.switches
    up, compiled_at, classify = net.up, net.compiled, net.classify
    peers = net.view.peers()  # HsaNet.peer's answers, as one map
    punted, delivered, drops, drop_paths = reach.punted, reach.delivered, reach.drops, reach.drop_paths
    pop, push = stack.pop, stack.append
    n = 0
    while stack:
        s, p, cur, orig, chain, path = pop()
        n += 1
        if n > budget:
            reach.truncated = True
            break
        here = (s, p)
        if here in path:
            reach.loops.append((path + (here,), orig))
            continue
        path = path + (here,)
        if not up(s):
            drops.append((s, "switch is down", orig))
            drop_paths.append(path)
            continue
        cs = compiled_at(s)
        pieces, cands = classify(s, p, cur)
        for i, cpiece in pieces:
            opiece = _injected(net, cs, p, chain, orig, cpiece, i, cands) if chain else cpiece
            if i is None:
                punted.setdefault(s, []).append(opiece)
                continue
            ems = cs.emissions(i, p)
            if not ems:
                entry = cs.entry(i)
                if is_drop_rule(entry.actions):
                    reach.filtered.setdefault(s, []).append(opiece)
                    continue
                drops.append((s, why_sends_nothing(entry, p), opiece))
                drop_paths.append(path)
                continue
            for kind, q, rws in ems:
                if kind == CTRL:
                    punted.setdefault(s, []).append(opiece)
                elif kind == SPECIAL:
                    drops.append((s, f"output to special port {q:#x}", opiece))
                    drop_paths.append(path)
                else:
                    peer = peers.get((s, q))
                    if peer is None:
                        drops.append((s, f"port {q} has no live link", opiece))
                        drop_paths.append(path)
                    elif peer[0] in switches:
                        nxt = image(cpiece, rws) if rws else cpiece
                        push((peer[0], peer[1], nxt, opiece, chain + rws, path))
                    else:
                        delivered.setdefault(peer[0], []).append(opiece)
    reach.branches += n


def _injected(net: HsaNet, cs: CompiledSwitch, p: int, chain: tuple[Rewrite, ...], orig: HeaderSpace,
              cpiece: HeaderSpace, i: int | None, cands: Collection[int]) -> HeaderSpace:
    """The injected headers (of ``orig``) whose form rewritten by ``chain`` is the piece ``cpiece``
    that entry ``i`` takes at port ``p`` (``i`` None: that no candidate entry ``cands`` matches)."""
    if i is None:
        opiece = orig
        for j in sorted(cands):
            opiece = opiece - net.pre(chain, cs.wildcard(j))
        return opiece.prune()
    opiece = orig & net.pre(chain, cs.wildcard(i))
    for w in cs.shadowers(i, p):
        opiece = opiece - net.pre(chain, w)
    return opiece.prune()
