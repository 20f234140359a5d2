"""Header Space Analysis: where every header a host could send goes, through the flow tables.

``netsleuth.invariants.forwarding`` pushes the one packet each host pair
would send through the flow tables; this engine pushes *sets* of headers
(:class:`~netsleuth.invariants.hsa_space.HeaderSpace`) instead, so a
violation is found for any header, sent or not (the checks that turn its
results into findings are in :mod:`netsleuth.invariants.hsa_checks`).

Semantics are those of :func:`netsleuth.invariants.forwarding.trace_packet`
for each header in the set, which a property test checks header by header
against it:

* a header enters a switch on (switch, in_port); entering a (switch,
  in_port) already on its path is a loop (that copy stops there);
* at a switch that is down it is dropped;
* the best-ranked entry matching it (OpenFlow 1.0: exact entries first,
  then priority, ties in ``FlowTable.entries()`` order) acts on it; no entry:
  it is punted to the controller (table miss);
* the entry's actions, as :func:`netsleuth.model.switch.forward` applies
  them (FLOOD/ALL never to the in port, plain output to the in port sends
  nothing, unusable ports send nothing, set-field actions rewrite the copies
  that follow them): CONTROLLER punts; an entry with no output action at all
  is a drop rule, the controller's choice (``filtered``, not a blackhole);
  an entry whose outputs all send nothing drops; an output to a port without
  a live link drops; to a host delivers; to a switch continues.

Injection points are the host-facing ports with a live link (``ingress=
"all"`` adds every switch port with a live link).  The work is split in two
engines with the same semantics:

* a *batch* engine for the common shape of controller tables: at each
  (switch, in_port) all entries share one wildcard pattern (say in_port,
  dl_src, dl_dst as os-ken's simple_switch installs), so the headers split
  into disjoint classes keyed by that pattern's bits and each class moves as
  one small int (an interned key id plus the ingress number).  All ingresses
  advance together, one hop per round, one dictionary probe per class; no
  set algebra is needed.  Each (switch, in_port) remembers on its compiled
  index which classes came in last time and how they split, so a check after
  no or few changes redoes only the cells whose input or table changed.
* the general engine (:func:`reachable`), a depth-first search over header
  spaces with lazy differences, set-field transfer functions and exact
  preimages back to the injected headers; it takes every class the batch
  engine cannot keep (a rule that floods, rewrites or mixes patterns, a
  class that revisits a port) and re-traces it from its ingress.

:func:`analyze` runs both from every ingress once, and its :class:`Analysis`
is what all three checks read.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from netsleuth.invariants.forwarding import is_drop_rule, why_sends_nothing
from netsleuth.invariants.hsa_compile import (
    CTRL,
    F_DROP,
    F_NOTHING,
    F_PUNT,
    SPECIAL,
    CompiledSwitch,
    compiled,
    interner,
)
from netsleuth.invariants.hsa_ingress import ingress_points
from netsleuth.invariants.hsa_space import HeaderSpace, Rewrite, image, make_term, preimage, term_empty
from netsleuth.invariants.view import NetworkView

Port = tuple[str, int]
DEFAULT_BUDGET = 200_000  # general-engine branches per ingress before giving up (Analysis.truncated)


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

    def forget(self, name: str) -> None:
        """Compile switch ``name`` again when next asked (its table changed)."""
        self._compiled.pop(name, None)

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
    stack: list[tuple[str, int, HeaderSpace, HeaderSpace, tuple[Rewrite, ...], tuple[Port, ...]]]
    stack = [(s0, p0, hs, hs, (), path0)]
    switches = net.switches
    n = 0
    while stack:
        s, p, cur, orig, chain, path = stack.pop()
        n += 1
        if n > budget:
            reach.truncated = True
            break
        here = (s, p)
        if here in path:
            reach.loops.append((path + (here,), orig))
            continue
        path = path + (here,)
        if not net.up(s):
            reach.drops.append((s, "switch is down", orig))
            reach.drop_paths.append(path)
            continue
        cs = net.compiled(s)
        pieces, cands = cs.classify(p, cur)
        for i, cpiece in pieces:
            if not chain:
                opiece = cpiece
            elif i is None:  # the injected headers whose rewritten form no entry matches
                opiece = orig
                for j in sorted(cands):
                    opiece = opiece - net.pre(chain, cs.wildcard(j))
                opiece = opiece.prune()
            else:
                opiece = orig & net.pre(chain, cs.wildcard(i))
                for w in cs.shadowers(i, p):
                    opiece = opiece - net.pre(chain, w)
                opiece = opiece.prune()
            if i is None:
                reach.punted.setdefault(s, []).append(opiece)
                continue
            ems = cs.emissions(i, p)
            if not ems:
                entry = cs.entry(i)
                if is_drop_rule(entry.actions):
                    reach.filtered.setdefault(s, []).append(opiece)
                    continue
                reach.drops.append((s, why_sends_nothing(entry, p), opiece))
                reach.drop_paths.append(path)
                continue
            for kind, q, rws in ems:
                if kind == CTRL:
                    reach.punted.setdefault(s, []).append(opiece)
                elif kind == SPECIAL:
                    reach.drops.append((s, f"output to special port {q:#x}", opiece))
                    reach.drop_paths.append(path)
                else:
                    peer = net.peer(s, q)
                    if peer is None:
                        reach.drops.append((s, f"port {q} has no live link", opiece))
                        reach.drop_paths.append(path)
                    elif peer[0] in switches:
                        nxt = image(cpiece, rws) if rws else cpiece
                        stack.append((peer[0], peer[1], nxt, opiece, chain + rws, path))
                    else:
                        reach.delivered.setdefault(peer[0], []).append(opiece)
    reach.branches += n


# --------------------------------------------------------------------------- batch engine
# A class is a small int: the interned id of the packed bits its ingress pattern T fixes
# (hsa_compile.interner(T)), plus the ingress number above bit 32.  Its header space is
# the wildcard (key, T).  Classes of one pattern move together, one hop per round.
TAG_SHIFT = 32      # a class is (ingress number << TAG_SHIFT) | key id; the checks read classes too
_IDM = (1 << 32) - 1
_FAST_ROUNDS = 32   # classes still moving after this many hops go to the general engine
_F_MISS = -4        # no entry at all: table miss
_DOWN = -100        # drop code: the switch is down


@dataclass
class _Batch:
    """Results of the batch engine: per outcome, the classes (tagged ids) that end there."""

    masks: list[int] = field(default_factory=list)      # per ingress number: its pattern T
    delivered: dict[str, list[int]] = field(default_factory=dict)   # host -> classes
    punted: dict[str, list[int]] = field(default_factory=dict)      # switch -> classes
    filtered: dict[str, list[int]] = field(default_factory=dict)    # switch -> classes a drop rule drops
    drops: dict[tuple[str, int, int], list[int]] = field(default_factory=dict)  # (switch, in_port, code)
    general: list[int] = field(default_factory=list)    # classes handed to the general engine
    ids_at: dict[int, dict[int, int]] = field(default_factory=dict)  # ingress number -> its port's ids
    rounds: int = 0
    hops: int = 0

    def key(self, x: int) -> int:
        """The packed header bits of class ``x``."""
        return interner(self.masks[x >> TAG_SHIFT])[1][x & _IDM]


def _batch(net: HsaNet, ingresses: list[Port], tags: dict[Port, int], n_tags: int | None = None,
           trace: dict[Port, list[list[int]]] | None = None) -> tuple[_Batch, list[Port]]:
    """Run the batch engine from every ingress whose port has a single-pattern index.

    ``n_tags``: how many ingress numbers there are (``ingresses`` may be some of them);
    ``trace``: when given, gets, per (switch, in_port), the lists of classes that came in
    there (what an incremental check needs to know which ingresses a flow_mod can touch).
    Returns its results and the ingresses it could not take (for the general engine)."""
    out = _Batch(masks=[0] * (len(ingresses) if n_tags is None else n_tags))
    rest: list[Port] = []
    by_mask: dict[int, dict[Port, list[int]]] = {}
    for ing in ingresses:
        s, p = ing
        pi = net.compiled(s).port(p) if net.up(s) else None
        if pi is None or pi.ids is None:
            rest.append(ing)
            continue
        tag = tags[ing]
        mask = pi.fast_mask
        out.masks[tag] = mask  # type: ignore[assignment]  # fast_mask is set with ids
        out.ids_at[tag] = pi.ids
        if pi.ids:
            xs = pi.memo.get(("ingress", tag))
            if xs is None:
                shifted = tag << TAG_SHIFT
                xs = pi.memo[("ingress", tag)] = [j | shifted for j in pi.ids]
            by_mask.setdefault(mask, {})[ing] = xs  # type: ignore[arg-type]  # fast_mask is set with ids
    for mask, frontier in by_mask.items():
        _run_batch(net, out, mask, frontier, trace)
    return out, rest


def _run_batch(net: HsaNet, out: _Batch, mask: int, frontier: dict[Port, list[int]],
               trace: dict[Port, list[list[int]]] | None = None) -> None:
    """Advance all classes of pattern ``mask`` one hop per round until they end.

    Each (switch, in_port) remembers, on its compiled port index, the classes that came in
    last time and how they split; when the same classes come in again (the usual case
    between two checks) the split is reused and only the (view-dependent) destinations of
    its parts are looked up again.  Lists are never changed after they are built."""
    switches = net.switches
    keys = interner(mask)[1]
    delivered, punted, drops, general = out.delivered, out.punted, out.drops, out.general
    targets: dict[tuple[str, int], tuple[int, object]] = {}
    rounds = 0
    while frontier:
        rounds += 1
        if rounds > _FAST_ROUNDS:
            # Still moving: (almost surely) a loop.  The general engine re-traces these from
            # their ingress and reports the loop with its path.
            for xs in frontier.values():
                general.extend(xs)
            break
        _record(trace, frontier)
        nxt: dict[Port, list[int]] = {}
        for cell, xs in frontier.items():
            if not xs:
                continue
            out.hops += len(xs)
            s, p = cell
            if not net.up(s):
                drops.setdefault((s, p, _DOWN), []).extend(xs)
                continue
            pi = net.compiled(s).port(p)
            ids = pi.ids
            fm = pi.fast_mask
            # mixed patterns here, or finer than the classes (fast_mask is set whenever ids is)
            if ids is None or fm & ~mask:  # type: ignore[operator]
                general.extend(xs)
                continue
            memo = pi.memo.get((mask, rounds))  # a cell may be visited in several rounds
            if memo is not None and (memo[0] is xs or memo[0] == xs):
                parts = memo[1]
            else:
                local: dict[int, list[int]] = {c: [] for c in pi.codes()}
                local[_F_MISS] = []
                get = ids.get
                if fm == mask:
                    for x in xs:
                        local[get(x & _IDM, _F_MISS)].append(x)
                else:  # the classes fix more bits than this port's pattern: project them
                    kc = pi.key_code().get
                    for x in xs:
                        # fast_mask is set when ids is
                        local[kc(keys[x & _IDM] & fm, _F_MISS)].append(x)  # type: ignore[operator]
                parts = [(c, lst) for c, lst in local.items() if lst]
                pi.memo[(mask, rounds)] = (xs, parts)
            for code, lst in parts:
                if code >= 0:
                    t = targets.get((s, code))
                    if t is None:
                        peer = net.peer(s, code)
                        if peer is None:
                            t = (2, None)
                        elif peer[0] in switches:
                            t = (0, peer)
                        else:
                            t = (1, peer[0])
                        targets[(s, code)] = t
                    kind, where = t
                    if kind == 0:
                        cur = nxt.get(where)  # type: ignore[call-overload]  # kind 0: a (switch, port)
                        if cur is None:
                            nxt[where] = list(lst)  # type: ignore[index]  # kind 0: a (switch, port)
                        else:
                            cur.extend(lst)
                    elif kind == 1:
                        cur = delivered.get(where)  # type: ignore[call-overload]  # kind 1: a host name
                        if cur is None:
                            delivered[where] = list(lst)  # type: ignore[index]  # kind 1: a host name
                        else:
                            cur.extend(lst)
                    else:
                        drops.setdefault((s, p, code), []).extend(lst)
                elif code == _F_MISS or code == F_PUNT:
                    cur = punted.get(s)
                    if cur is None:
                        punted[s] = list(lst)
                    else:
                        cur.extend(lst)
                elif code == F_NOTHING or code == F_DROP:  # outputs that go nowhere / a drop rule's
                    lost = drops.setdefault((s, p, code), []) if code == F_NOTHING else out.filtered.setdefault(s, [])
                    lost.extend(lst)
                else:
                    general.extend(lst)
        frontier = nxt
    out.rounds = max(out.rounds, rounds)


def _record(trace: dict[Port, list[list[int]]] | None, frontier: dict[Port, list[int]]) -> None:
    """Note the classes coming in at each cell of this round (the lists are never changed)."""
    if trace is None:
        return
    for cell, xs in frontier.items():
        seen = trace.get(cell)
        if seen is None:
            trace[cell] = [xs]
        else:
            seen.append(xs)


# --------------------------------------------------------------------------- analysis
@dataclass
class Analysis:
    """Everything the three checks need, computed once per view (see :func:`analyze`)."""

    view: NetworkView
    ingresses: list[Port]
    ingress_host: dict[Port, str]
    reaches: dict[Port, Reach]        # general-engine results per ingress
    batch: _Batch
    tags: dict[Port, int]
    net: HsaNet
    truncated: list[Port] = field(default_factory=list)
    _by_tag: dict | None = None
    _reach_cache: dict = field(default_factory=dict)

    def _tagged(self, kind: str) -> dict[int, dict]:
        """Batch results of one kind ("delivered", "punted", "drops") bucketed by ingress
        number, built on first use."""
        if self._by_tag is None:
            self._by_tag = {}
        by = self._by_tag.get(kind)
        if by is None:
            by = self._by_tag[kind] = {}
            for where, xs in getattr(self.batch, kind).items():
                for x in xs:
                    d = by.get(x >> TAG_SHIFT)
                    if d is None:
                        d = by[x >> TAG_SHIFT] = {}
                    lst = d.get(where)
                    if lst is None:
                        d[where] = [x]
                    else:
                        lst.append(x)
        return by

    def reach(self, ingress: Port) -> Reach:
        """All results for one ingress, batch classes turned into header spaces."""
        r = self._reach_cache.get(ingress)
        if r is not None:
            return r
        r = self._reach_cache[ingress] = Reach(ingress)
        g = self.reaches.get(ingress)
        if g is not None:
            r.merge(g)
        tag = self.tags.get(ingress)
        if tag is None or tag not in self.batch.ids_at:
            return r
        miss = self.ingress_miss(tag)
        if miss.terms:
            r.punted.setdefault(ingress[0], []).append(miss)
        # Sorted, here and in drops(): the batch engine's lists follow its traversal, and an
        # incremental check that re-traces a few classes must list them the same way.
        for host, xs in sorted(self._tagged("delivered").get(tag, {}).items()):
            r.delivered.setdefault(host, []).append(self._hs(sorted(xs)))
        for sw, xs in sorted(self._tagged("punted").get(tag, {}).items()):
            r.punted.setdefault(sw, []).append(self._hs(sorted(xs)))
        for sw, xs in sorted(self._tagged("filtered").get(tag, {}).items()):
            r.filtered.setdefault(sw, []).append(self._hs(sorted(xs)))
        for (sw, p, code), xs in sorted(self._tagged("drops").get(tag, {}).items()):
            for why, group in self._drop_reasons(sw, p, code, sorted(xs)):
                r.drops.append((sw, why, self._hs(group)))
                r.drop_paths.append(())
        return r

    def ingress_miss(self, tag: int) -> HeaderSpace:
        """Headers no entry of a batch ingress port matches: punted at its switch."""
        fm = self.batch.masks[tag]
        keys = interner(fm)[1]
        t = make_term(0, 0, [(keys[j], fm) for j in self.batch.ids_at[tag]])
        if t is None or (t[2] and term_empty(t)):
            return HeaderSpace()
        return HeaderSpace((t,))

    def drops(self, ingress: Port) -> list[tuple[str, str, HeaderSpace]]:
        """(switch, why, header space) dropped for headers injected at ``ingress``."""
        out = list(self.reaches[ingress].drops) if ingress in self.reaches else []
        if self.batch.drops:
            for (sw, p, code), xs in sorted(self._tagged("drops").get(self.tags[ingress], {}).items()):
                for why, group in self._drop_reasons(sw, p, code, sorted(xs)):
                    out.append((sw, why, self._hs(group)))
        return out

    def loops(self, ingress: Port) -> list[tuple[tuple[Port, ...], HeaderSpace]]:
        r = self.reaches.get(ingress)
        return list(r.loops) if r is not None else []

    def _hs(self, xs: list[int]) -> HeaderSpace:
        masks = self.batch.masks
        key = self.batch.key
        return HeaderSpace((key(x), masks[x >> TAG_SHIFT], ()) for x in xs)

    def _drop_reasons(self, sw: str, p: int, code: int, xs: list[int]) -> list[tuple[str, list[int]]]:
        if code == _DOWN:
            return [("switch is down", xs)]
        if code >= 0:
            return [(f"port {code} has no live link", xs)]
        cs = self.net.compiled(sw)
        fm = cs.port(p).fast_mask
        by: dict[str, list[int]] = {}
        key = self.batch.key
        for x in xs:
            # fast_mask is set with ids
            by.setdefault(why_sends_nothing(cs.hit_entry(p, key(x) & fm), p), []).append(x)  # type: ignore[operator]
        return list(by.items())


def _has_of13(view: NetworkView) -> bool:
    """Whether some switch runs an OpenFlow 1.3 pipeline; free when no 1.3 pipeline exists
    in this process (the 1.3 model is then not even imported)."""
    mod = sys.modules.get("netsleuth.model.of13.pipeline")
    if mod is None:
        return False
    p13 = mod.Pipeline13
    get = getattr(view, "pipeline", None)  # NetworkView.pipeline(switch): FlowTable | Pipeline13
    for name, sw in view.switches.items():
        if isinstance(sw, p13) or (get is not None and isinstance(get(name), p13)):
            return True
    return False


def analyze(view: NetworkView, *, ingress: str = "hosts", batch: bool = True, cache: bool = True,
            budget: int = DEFAULT_BUDGET, only: Collection[Port] | None = None,
            trace: dict[Port, list[list[int]]] | None = None, net: HsaNet | None = None,
            points: dict[Port, str | None] | None = None) -> Analysis:
    """Push every header in at every ingress point, once for all three checks.

    ``batch=False`` uses only the general engine (slower; the tests compare both);
    ``cache=False`` recompiles every switch instead of reusing unchanged ones.
    ``only``: analyse just these ingresses (the others' results are left out of the
    :class:`Analysis`, whose ``ingresses`` and ``tags`` then hold these alone; ingress
    numbers stay those of the whole network, so results of several calls can be
    combined); ``trace``: see :func:`_batch` (batch engine only).  ``net`` and ``points``:
    the switches compiled and the ingress points of an earlier analysis of the same network,
    when the caller knows that only the flow tables it dropped from ``net`` changed since.

    A network of OpenFlow 1.3 pipelines is analysed by the 1.3 engine instead
    (:func:`netsleuth.invariants.hsa13_engine.analyze13`, a wider header layout
    that 1.0 networks never pay for); its checks accept either result."""
    if _has_of13(view):
        from netsleuth.invariants.hsa13_engine import analyze13
        return analyze13(view, ingress=ingress, budget=budget, cache=cache)  # type: ignore[return-value]
    if net is None:
        net = HsaNet(view, cache=cache)
    else:
        net.view, net.switches = view, view.switches
    if points is None:
        points = ingress_points(view, ingress)
    ingresses = list(points)
    tags = {ing: n for n, ing in enumerate(ingresses)}
    run = ingresses if only is None else [ing for ing in ingresses if ing in only]
    if batch:
        b, rest = _batch(net, run, tags, len(ingresses), trace)
    else:
        b, rest = _Batch(masks=[0] * len(ingresses)), list(run)
    reaches: dict[Port, Reach] = {}
    truncated: list[Port] = []
    for ing in rest:
        r = reaches[ing] = Reach(ing)
        _explore(net, ing[0], ing[1], HeaderSpace.all(), r, budget)
        if r.truncated:
            truncated.append(ing)
    # Classes the batch engine gave up on: re-trace each from its ingress, generally.
    if b.general:
        by_tag: dict[int, list[int]] = defaultdict(list)
        for x in b.general:
            by_tag[x >> TAG_SHIFT].append(x)
        for tag, xs in sorted(by_tag.items()):
            ing = ingresses[tag]
            r = reaches.setdefault(ing, Reach(ing))
            m = b.masks[tag]
            hs = HeaderSpace((b.key(x), m, ()) for x in sorted(set(xs)))  # in class order, as re-traced
            _explore(net, ing[0], ing[1], hs, r, budget)
            if r.truncated and ing not in truncated:
                truncated.append(ing)
    if only is not None:
        tags = {ing: tags[ing] for ing in run}
    return Analysis(view, run, {k: v for k, v in points.items() if v is not None}, reaches, b, tags,
                    net, truncated)
