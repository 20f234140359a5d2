"""Loops, blackholes and reachability for every packet header (Header Space Analysis).

``netsleuth.invariants.forwarding`` pushes the one packet each host pair
would send through the flow tables; this module pushes *sets* of headers
(:class:`~netsleuth.invariants.hsa_space.HeaderSpace`) instead, so a
violation is found for any header, sent or not, and is reported as the
header space it affects, the ingress port and the path.

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
  that follow them): CONTROLLER punts; an entry that emits nothing drops; an
  output to a port without a live link drops; to a host delivers; to a
  switch continues.

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

Checks (registered by the names ``loops``, ``blackholes``,
``reachability``): :func:`hsa_loops`, :func:`hsa_blackholes`,
:func:`hsa_reachability`; :func:`analyze` computes what all three need once.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Mapping

import networkx as nx

from netsleuth.invariants.forwarding import Finding, controller_ok
from netsleuth.invariants.hsa_compile import (CTRL, F_NOTHING, F_PUNT, SPECIAL, CompiledSwitch, compiled,
                                              interner)
from netsleuth.invariants.hsa_space import (SHIFT_BY_NAME, HeaderSpace, Rewrite,
                                            describe, field_wildcard, image, make_term, preimage,
                                            term_empty, unpack)
from netsleuth.invariants.view import NetworkView
from netsleuth.model.addr import int_to_ip, int_to_mac

try:  # the message for a rule that emits nothing, shared with the concrete check
    from netsleuth.invariants.forwarding import _why_nothing
except ImportError:  # pragma: no cover
    def _why_nothing(entry, in_port: int) -> str:
        return f"rule {entry.match or 'catch-all'} priority {entry.priority} sends nothing"

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
    truncated: bool = False
    branches: int = 0

    def delivered_to(self, host: str) -> HeaderSpace:
        return _union(self.delivered.get(host, ()))

    def punted_at(self, switch: str) -> HeaderSpace:
        return _union(self.punted.get(switch, ()))

    def dropped(self) -> HeaderSpace:
        return _union(hs for _s, _w, hs in self.drops)

    def looping(self) -> HeaderSpace:
        return _union(hs for _p, hs in self.loops)

    def merge(self, other: Reach) -> None:
        for h, lst in other.delivered.items():
            self.delivered.setdefault(h, []).extend(lst)
        for s, lst in other.punted.items():
            self.punted.setdefault(s, []).extend(lst)
        self.drops.extend(other.drops)
        self.drop_paths.extend(other.drop_paths)
        self.drop_paths.extend([()] * (len(self.drops) - len(self.drop_paths)))
        self.loops.extend(other.loops)
        self.truncated |= other.truncated
        self.branches += other.branches


def _union(spaces: Iterable[HeaderSpace]) -> HeaderSpace:
    terms = []
    for hs in spaces:
        terms.extend(hs.terms)
    return HeaderSpace(terms)


class _Net:
    """What the engines need from a view, looked up once per check."""

    def __init__(self, view: NetworkView, cache: bool = True) -> None:
        self.view = view
        self.switches = view.switches
        self.cache = cache
        self._compiled: dict[str, CompiledSwitch] = {}
        self._up: dict[str, bool] = {}
        self._pre: dict = {}

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
              _net: _Net | None = None) -> Reach:
    """Push ``header_space`` (default: every header) in at ``src_switch:src_port`` and
    return where it goes: the part delivered to each host, punted at each switch, dropped
    (with where, why and the path) and looping (with the path that revisits a port), all
    as sets of the headers injected.  Uses the general engine only."""
    net = _net or _Net(view)
    hs = HeaderSpace.all() if header_space is None else header_space
    reach = Reach((src_switch, src_port))
    _explore(net, src_switch, src_port, hs, reach, budget)
    return reach


def _explore(net: _Net, s0: str, p0: int, hs: HeaderSpace, reach: Reach, budget: int,
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
                reach.drops.append((s, _why_nothing(cs.entry(i), p), opiece))
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
_TAG_SHIFT = 32
_IDM = (1 << 32) - 1
_DL_DST_SHIFT = SHIFT_BY_NAME["dl_dst"]
_DL_SRC_SHIFT = SHIFT_BY_NAME["dl_src"]
_MAC = (1 << 48) - 1
_FAST_ROUNDS = 32   # classes still moving after this many hops go to the general engine
_F_MISS = -4        # no entry at all: table miss
_DOWN = -100        # drop code: the switch is down


@dataclass
class _Batch:
    """Results of the batch engine: per outcome, the classes (tagged ids) that end there."""

    masks: list[int] = field(default_factory=list)      # per ingress number: its pattern T
    delivered: dict[str, list[int]] = field(default_factory=dict)   # host -> classes
    punted: dict[str, list[int]] = field(default_factory=dict)      # switch -> classes
    drops: dict[tuple[str, int, int], list[int]] = field(default_factory=dict)  # (switch, in_port, code)
    general: list[int] = field(default_factory=list)    # classes handed to the general engine
    ids_at: dict[int, dict[int, int]] = field(default_factory=dict)  # ingress number -> its port's ids
    rounds: int = 0
    hops: int = 0

    def key(self, x: int) -> int:
        """The packed header bits of class ``x``."""
        return interner(self.masks[x >> _TAG_SHIFT])[1][x & _IDM]


def _batch(net: _Net, ingresses: list[Port], tags: dict[Port, int]) -> tuple[_Batch, list[Port]]:
    """Run the batch engine from every ingress whose port has a single-pattern index.

    Returns its results and the ingresses it could not take (for the general engine)."""
    out = _Batch(masks=[0] * len(ingresses))
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
        out.masks[tag] = mask  # type: ignore[assignment]
        out.ids_at[tag] = pi.ids
        if pi.ids:
            xs = pi.memo.get(("ingress", tag))
            if xs is None:
                shifted = tag << _TAG_SHIFT
                xs = pi.memo[("ingress", tag)] = [j | shifted for j in pi.ids]
            by_mask.setdefault(mask, {})[ing] = xs  # type: ignore[arg-type]
    for mask, frontier in by_mask.items():
        _run_batch(net, out, mask, frontier)
    return out, rest


def _run_batch(net: _Net, out: _Batch, mask: int, frontier: dict[Port, list[int]]) -> None:
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
            if ids is None or fm & ~mask:  # mixed patterns here, or finer than the classes
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
                        local[kc(keys[x & _IDM] & fm, _F_MISS)].append(x)
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
                        cur = nxt.get(where)  # type: ignore[call-overload]
                        if cur is None:
                            nxt[where] = list(lst)  # type: ignore[index]
                        else:
                            cur.extend(lst)
                    elif kind == 1:
                        cur = delivered.get(where)  # type: ignore[call-overload]
                        if cur is None:
                            delivered[where] = list(lst)  # type: ignore[index]
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
                elif code == F_NOTHING:
                    drops.setdefault((s, p, F_NOTHING), []).extend(lst)
                else:
                    general.extend(lst)
        frontier = nxt
    out.rounds = max(out.rounds, rounds)


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
    net: _Net
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
                    d = by.get(x >> _TAG_SHIFT)
                    if d is None:
                        d = by[x >> _TAG_SHIFT] = {}
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
        for host, xs in self._tagged("delivered").get(tag, {}).items():
            r.delivered.setdefault(host, []).append(self._hs(xs))
        for sw, xs in self._tagged("punted").get(tag, {}).items():
            r.punted.setdefault(sw, []).append(self._hs(xs))
        for (sw, p, code), xs in self._tagged("drops").get(tag, {}).items():
            for why, group in self._drop_reasons(sw, p, code, xs):
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
            for (sw, p, code), xs in self._tagged("drops").get(self.tags[ingress], {}).items():
                for why, group in self._drop_reasons(sw, p, code, xs):
                    out.append((sw, why, self._hs(group)))
        return out

    def loops(self, ingress: Port) -> list[tuple[tuple[Port, ...], HeaderSpace]]:
        r = self.reaches.get(ingress)
        return list(r.loops) if r is not None else []

    def _hs(self, xs: list[int]) -> HeaderSpace:
        masks = self.batch.masks
        key = self.batch.key
        return HeaderSpace((key(x), masks[x >> _TAG_SHIFT], ()) for x in xs)

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
            by.setdefault(_why_nothing(cs.hit_entry(p, key(x) & fm), p), []).append(x)  # type: ignore[operator]
        return list(by.items())


def ingress_points(view: NetworkView, which: str = "hosts") -> dict[Port, str | None]:
    """(switch, port) -> attached host, for host-facing ports with a live link on live
    switches; ``which="all"`` adds switch-facing ports with a live link (host None)."""
    out: dict[Port, str | None] = {}
    switches = view.switches
    for (n1, p1, n2, p2), up in view.link_up.items():
        if not up:
            continue
        for a, pa, b in ((n1, p1, n2), (n2, p2, n1)):
            if a in switches and view.is_switch_up(a):
                if b not in switches:
                    out[(a, pa)] = b
                elif which == "all":
                    out.setdefault((a, pa), None)
    return dict(sorted(out.items()))


def analyze(view: NetworkView, *, ingress: str = "hosts", batch: bool = True, cache: bool = True,
            budget: int = DEFAULT_BUDGET) -> Analysis:
    """Push every header in at every ingress point, once for all three checks.

    ``batch=False`` uses only the general engine (slower; the tests compare both);
    ``cache=False`` recompiles every switch instead of reusing unchanged ones."""
    net = _Net(view, cache=cache)
    points = ingress_points(view, ingress)
    ingresses = list(points)
    tags = {ing: n for n, ing in enumerate(ingresses)}
    if batch:
        b, rest = _batch(net, ingresses, tags)
    else:
        b, rest = _Batch(masks=[0] * len(ingresses)), list(ingresses)
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
            by_tag[x >> _TAG_SHIFT].append(x)
        for tag, xs in sorted(by_tag.items()):
            ing = ingresses[tag]
            r = reaches.setdefault(ing, Reach(ing))
            m = b.masks[tag]
            hs = HeaderSpace((b.key(x), m, ()) for x in dict.fromkeys(xs))
            _explore(net, ing[0], ing[1], hs, r, budget)
            if r.truncated and ing not in truncated:
                truncated.append(ing)
    return Analysis(view, ingresses, {k: v for k, v in points.items() if v is not None}, reaches, b, tags,
                    net, truncated)


# --------------------------------------------------------------------------- report helpers
def _mac_hosts(view: NetworkView) -> dict[int, str]:
    return {h.mac: h.name for h in view.topology.hosts}


def _ingress_text(a: Analysis, ing: Port) -> str:
    host = a.ingress_host.get(ing)
    return f"{ing[0]}:{ing[1]}" + (f" (from {host})" if host else "")


def _dst_hosts(hs: HeaderSpace, macs: Mapping[int, str]) -> list[str]:
    vals = hs.fixed_field("dl_dst")
    if not vals:
        return []
    return sorted({macs[v] for v in vals if v in macs})


def header_dict(header: int) -> dict:
    """A packed header as readable fields."""
    f = unpack(header)
    return {"dl_src": int_to_mac(f[1]), "dl_dst": int_to_mac(f[2]), "dl_vlan": f[3], "dl_vlan_pcp": f[4],
            "dl_type": f[5], "nw_tos": f[6], "nw_proto": f[7], "nw_src": int_to_ip(f[8]),
            "nw_dst": int_to_ip(f[9]), "tp_src": f[10], "tp_dst": f[11]}


def _witness(hs: HeaderSpace) -> dict | None:
    w = hs.witness()
    return None if w is None else header_dict(w)


def _components(view: NetworkView) -> dict[str, int]:
    comp: dict[str, int] = {}
    for i, c in enumerate(nx.connected_components(view.live_graph())):
        for n in c:
            comp[n] = i
    return comp


def _host_location(view: NetworkView, host: str) -> Port:
    loc = getattr(view, "host_location", None)
    return loc(host) if loc is not None else view.topology.host_location(host)


def _analysis(view: NetworkView, outcomes: object) -> Analysis:
    if isinstance(outcomes, Analysis) and outcomes.view is view:
        return outcomes
    return analyze(view)


def _hosts_of(a: Analysis, ing: Port, hs: HeaderSpace, macs: Mapping[int, str]) -> tuple[str, ...]:
    src = a.ingress_host.get(ing)
    return tuple(dict.fromkeys(([src] if src else []) + _dst_hosts(hs, macs)))


# --------------------------------------------------------------------------- loops
def hsa_loops(view: NetworkView, analysis: Analysis | None = None) -> list[Finding]:
    """Header spaces that come back to a (switch, in_port) they already crossed; one finding
    per ingress and cycle, with the header space, the ingress and one looping path."""
    a = _analysis(view, analysis)
    macs = _mac_hosts(view)
    out = []
    for ing in a.ingresses:
        found: dict[tuple[str, ...], tuple[tuple[Port, ...], list[HeaderSpace]]] = {}
        for path, hs in a.loops(ing):
            start = path.index(path[-1])
            cycle = tuple(dict.fromkeys(s for s, _p in path[start:]))
            if cycle in found:
                found[cycle][1].append(hs)
            else:
                found[cycle] = (path, [hs])
        for cycle, (path, spaces) in found.items():
            hs = _union(spaces).compact()
            if not hs.terms:
                continue
            hops = [f"{s}:{p}" for s, p in path]
            text = describe(hs)
            out.append(Finding(
                "loops", f"headers {text} entering {_ingress_text(a, ing)} loop: {' -> '.join(hops)}",
                hosts=_hosts_of(a, ing, hs, macs), switches=cycle,
                details={"ingress": f"{ing[0]}:{ing[1]}", "header_space": text, "path": hops,
                         "witness": _witness(hs)}))
    return out


# --------------------------------------------------------------------------- blackholes
def hsa_blackholes(view: NetworkView, analysis: Analysis | None = None) -> list[Finding]:
    """Header spaces dropped inside the network: by a rule that sends nothing, an output to a
    port without a live link, or a switch that is down; one finding per ingress and drop
    point.  Headers for a host physically cut off from the ingress, or for the very host
    that sends them, do not count (the network could not or need not deliver them)."""
    a = _analysis(view, analysis)
    macs = _mac_hosts(view)
    comp: dict[str, int] | None = None
    out = []
    for ing in a.ingresses:
        drops = a.drops(ing)
        if not drops:
            continue
        if comp is None:
            comp = _components(view)
        here = comp.get(ing[0])
        src = a.ingress_host.get(ing)
        cut_off = {mac for mac, h in macs.items() if comp.get(h) != here or h == src}
        by_where: dict[str, tuple[list[str], list[HeaderSpace]]] = {}
        for sw, why, hs in drops:
            hs = _minus_dl_dst(hs, cut_off)
            if not hs.terms or hs.is_empty():
                continue
            whys, spaces = by_where.setdefault(sw, ([], []))
            if why not in whys:
                whys.append(why)
            spaces.append(hs)
        for sw, (whys, spaces) in by_where.items():
            hs = _union(spaces)
            text = describe(hs)
            w = hs.witness()
            path = _drop_path(a, ing, w, sw)
            via = f" (path {' -> '.join(path)})" if path else ""
            out.append(Finding(
                "blackholes",
                f"headers {text} entering {_ingress_text(a, ing)} are dropped at {sw}: {'; '.join(whys)}{via}",
                hosts=_hosts_of(a, ing, hs, macs), switches=(sw,),
                details={"ingress": f"{ing[0]}:{ing[1]}", "header_space": text, "where": sw, "why": whys,
                         "path": path, "terms": len(hs.terms),
                         "witness": None if w is None else header_dict(w)}))
    return out


def _drop_path(a: Analysis, ing: Port, w: int | None, where: str) -> list[str]:
    """The hops one header (``w``, packed) takes from ``ing`` to a drop at ``where``."""
    if w is None:
        return []
    r = reachable(a.view, ing[0], ing[1], HeaderSpace.wildcard(w, (1 << 248) - 1), _net=a.net)
    for (sw, _why, _hs), path in zip(r.drops, r.drop_paths):
        if sw == where:
            return [f"{s}:{p}" for s, p in path]
    return []


_DL_DST_FULL = field_wildcard(dl_dst=0)[1]


def _minus_dl_dst(hs: HeaderSpace, macs: set[int]) -> HeaderSpace:
    """``hs`` without the headers whose dl_dst is in ``macs``."""
    if not macs:
        return hs
    terms = []
    for t in hs.terms:
        if t[1] & _DL_DST_FULL == _DL_DST_FULL:
            if (t[0] >> _DL_DST_SHIFT) & _MAC not in macs:
                terms.append(t)
            continue
        cur = HeaderSpace((t,))
        for mac in sorted(macs):
            cur = cur.minus_wc(field_wildcard(dl_dst=mac))
        terms.extend(cur.terms)
    return HeaderSpace(terms)


# --------------------------------------------------------------------------- reachability
_PAIR_FIXED = field_wildcard(dl_src=0, dl_dst=0)[1]


def pair_space(src_mac: int, dst_mac: int, src_ip: int | None = None, dst_ip: int | None = None) -> HeaderSpace:
    """A host pair's traffic: their dl_src/dl_dst and, for IPv4, their nw_src/nw_dst."""
    eth = field_wildcard(dl_src=src_mac, dl_dst=dst_mac)
    if src_ip is None or dst_ip is None:
        return HeaderSpace.wildcard(*eth)
    ip = field_wildcard(dl_src=src_mac, dl_dst=dst_mac, dl_type=0x0800, nw_src=src_ip, nw_dst=dst_ip)
    return HeaderSpace.wildcard(*ip) | HeaderSpace.wildcard(*eth).minus_wc(field_wildcard(dl_type=0x0800))


def hsa_reachability(view: NetworkView, analysis: Analysis | None = None) -> list[Finding]:
    """For every ordered pair of physically connected hosts, all of the pair's traffic
    (:func:`pair_space`) from the source's port reaches the destination or is punted to a
    live, connected controller; a finding names the header space that does not."""
    a = _analysis(view, analysis)
    comp = _components(view)
    members: dict[int, list] = defaultdict(list)
    for h in view.topology.hosts:
        members[comp.get(h.name, -1)].append(h)
    ok_cache: dict[str, bool] = {}

    def ok(sw: str) -> bool:
        v = ok_cache.get(sw)
        if v is None:
            v = ok_cache[sw] = controller_ok(view, sw)
        return v

    judge = _PairJudge(a, ok, comp)
    out: list[Finding] = []
    bulk: list[tuple[Port, object]] = []
    for src in view.topology.hosts:
        loc = _host_location(view, src.name)
        if loc not in a.tags or view.peer(*loc) is None:
            continue
        peers = members[comp.get(src.name, -1)]
        if len(peers) < 2:
            continue
        if judge.bulk_ok(loc):
            bulk.append((loc, src))
        else:
            out.extend(judge.pairs(loc, src, peers))
    if bulk:
        out.extend(judge.bulk(bulk))
    return out


_PAIR_MACS: dict[int, list[tuple[int, int]]] = {}


def _pair_macs(mask: int) -> list[tuple[int, int]]:
    """(dl_src, dl_dst) of every interned key of ``mask`` (which fixes both), by id."""
    keys = interner(mask)[1]
    lst = _PAIR_MACS.setdefault(mask, [])
    for k in keys[len(lst):]:
        lst.append(((k >> _DL_SRC_SHIFT) & _MAC, (k >> _DL_DST_SHIFT) & _MAC))
    return lst


_MEMO_SETS: dict = {}


def _memo_set(key, xs: list[int]) -> set[int]:
    """``set(xs)``, reused when ``xs`` equals the list it was built from last time."""
    hit = _MEMO_SETS.get(key)
    if hit is not None and (hit[0] is xs or hit[0] == xs):
        return hit[1]
    st = set(xs)
    _MEMO_SETS[key] = (xs, st)
    return st


class _Wanted:
    """Per destination host, the batch classes that are some source's traffic to it, and the
    (ingress, source) of each class.  Kept between checks and patched per ingress: only
    ingresses whose entries (or number) changed are recomputed."""

    def __init__(self) -> None:
        self.by_ingress: dict = {}   # ingress -> (signature, {dst name: [classes]})
        self.wanted: dict[str, set[int]] = defaultdict(set)
        self.owner: dict[int, tuple[Port, object]] = {}
        self.hosts: object = None

    def update(self, a: Analysis, sources: list[tuple[Port, object]], by_mac) -> None:
        b = a.batch
        hosts = a.view.topology.hosts
        if hosts is not self.hosts:
            self.__init__()  # type: ignore[misc]
            self.hosts = hosts
        live = set()
        for ing, src in sources:
            tag = a.tags[ing]
            sig = (tag, b.ids_at[tag], src)
            live.add(ing)
            old = self.by_ingress.get(ing)
            if old is not None:
                if old[0][0] == tag and old[0][1] is sig[1] and old[0][2] is src:
                    continue
                self._drop(ing)
            self._add(ing, src, sig, by_mac)
        for ing in [i for i in self.by_ingress if i not in live]:
            self._drop(ing)

    def _drop(self, ing: Port) -> None:
        _sig, contrib = self.by_ingress.pop(ing)
        for dname, xs in contrib.items():
            self.wanted[dname].difference_update(xs)
            for x in xs:
                self.owner.pop(x, None)

    def _add(self, ing: Port, src, sig, by_mac) -> None:
        tag, ids, _src = sig
        macs = _pair_macs(_PAIR_FIXED)
        shifted = tag << _TAG_SHIFT
        amac = src.mac
        contrib: dict[str, list[int]] = {}
        for j in ids:
            sm, dm = macs[j]
            if sm != amac:
                continue
            d = by_mac.get(dm)
            if d is None or d is src:
                continue
            lst = contrib.get(d.name)
            if lst is None:
                contrib[d.name] = [j | shifted]
            else:
                lst.append(j | shifted)
        owner = self.owner
        pair = (ing, src)
        for dname, xs in contrib.items():
            self.wanted[dname].update(xs)
            for x in xs:
                owner[x] = pair
        self.by_ingress[ing] = (sig, contrib)


_WANTED = _Wanted()


class _PairJudge:
    """Decides host pairs quickly from batch classes, exactly with header spaces otherwise.

    A batch ingress whose pattern fixes only dl_src/dl_dst bits holds each pair's traffic
    in one class (or in none: then the first switch misses on all of it and punts it), so
    the pair is fine iff that class ends at the destination or at a live controller."""

    def __init__(self, a: Analysis, ok, comp: dict[str, int]) -> None:
        if _MEMO_SETS.get("hosts") is not a.view.topology.hosts:  # another network: forget
            _MEMO_SETS.clear()
            _MEMO_SETS["hosts"] = a.view.topology.hosts
        self.a = a
        self.b = a.batch
        self.ok = ok
        self.comp = comp
        self.by_mac = {h.mac: h for h in a.view.topology.hosts}
        self._dlv: dict[str, set[int]] | None = None
        self._punt_ok: set[int] = set()

    def _sets(self) -> None:
        b = self.b
        self._dlv = {h: _memo_set(("dlv", h), xs) for h, xs in b.delivered.items()}
        for sw, xs in b.punted.items():
            if self.ok(sw):
                self._punt_ok.update(xs)

    def bulk_ok(self, ing: Port) -> bool:
        """Whether this ingress's pairs can be judged in bulk: one class per pair (pattern
        dl_src+dl_dst exactly) and a live controller behind its switch for table misses."""
        tag = self.a.tags[ing]
        return (self.b.ids_at.get(tag) is not None and self.b.masks[tag] == _PAIR_FIXED
                and self.ok(ing[0]))

    def bulk(self, sources: list[tuple[Port, object]]) -> list[Finding]:
        """Judge the pairs of many ingresses at once with set differences: per destination,
        the pair classes that are neither delivered there nor punted to a live controller.
        Pairs with no class at their first switch are punted there (a live controller)."""
        a = self.a
        if self._dlv is None:
            self._sets()
        _WANTED.update(a, sources, self.by_mac)
        wanted, owner = _WANTED.wanted, _WANTED.owner
        empty: set[int] = set()
        slow: dict[Port, tuple[object, list]] = {}
        comp = self.comp
        hosts = {h.name: h for h in a.view.topology.hosts}
        for dname, want in wanted.items():
            missing = want - self._dlv.get(dname, empty)  # type: ignore[union-attr]
            if missing and self._punt_ok:
                missing -= self._punt_ok
            if not missing:
                continue
            d = hosts[dname]
            for x in sorted(missing):
                ing, src = owner[x]
                if comp.get(src.name, -1) != comp.get(dname, -2):  # type: ignore[attr-defined]
                    continue
                slow.setdefault(ing, (src, []))[1].append(d)
        out: list[Finding] = []
        for ing, (src, dsts) in slow.items():
            idx = _ReachIndex(a.reach(ing))
            for d in dsts:
                f = _judge_pair(a, idx, ing, src, d, self.ok)
                if f is not None:
                    out.append(f)
        return out

    def pairs(self, ing: Port, src, peers: list) -> list[Finding]:
        a, b = self.a, self.b
        tag = a.tags[ing]
        ids = b.ids_at.get(tag)
        mask = b.masks[tag]
        slow: list = []
        out: list[Finding] = []
        if ids is None or mask & ~_PAIR_FIXED:
            slow = [d for d in peers if d is not src]
        else:
            if self._dlv is None:
                self._sets()
            dlv, punt_ok = self._dlv, self._punt_ok
            empty: set[int] = set()
            shifted = tag << _TAG_SHIFT
            s0_ok = self.ok(ing[0])
            if mask == _PAIR_FIXED and s0_ok:
                # Only pairs with an entry at the first switch need a look.
                macs = _pair_macs(mask)
                amac = src.mac
                here = self.comp.get(src.name, -1)
                by_mac, comp = self.by_mac, self.comp
                for j in ids:
                    sm, dm = macs[j]
                    if sm != amac:
                        continue
                    d = by_mac.get(dm)
                    if d is None or d is src or comp.get(d.name, -2) != here:
                        continue
                    x = j | shifted
                    if x in dlv.get(d.name, empty) or x in punt_ok:  # type: ignore[union-attr]
                        continue
                    slow.append(d)
            else:
                intern = interner(mask)[0]
                sk = (src.mac << _DL_SRC_SHIFT) & mask
                for d in peers:
                    if d is src:
                        continue
                    j = intern.get(sk | ((d.mac << _DL_DST_SHIFT) & mask))
                    if j is None or j not in ids:  # the first switch misses on all of it
                        if not s0_ok:
                            out.append(_unreachable(
                                ing, src, d, pair_space(src.mac, d.mac, src.ip, d.ip),
                                f"they go to a controller that is not connected ({ing[0]})", (ing[0],)))
                        continue
                    x = j | shifted
                    if x in dlv.get(d.name, empty) or x in punt_ok:  # type: ignore[union-attr]
                        continue
                    slow.append(d)
        if slow:
            r = a.reach(ing)
            idx = _ReachIndex(r)
            for d in slow:
                f = _judge_pair(a, idx, ing, src, d, self.ok)
                if f is not None:
                    out.append(f)
        return out


class _ReachIndex:
    """A Reach's terms bucketed by fixed dl_dst, to find the ones a host pair can touch."""

    def __init__(self, r: Reach) -> None:
        self.r = r
        self.delivered = {h: self._index(lst) for h, lst in r.delivered.items()}
        self.punted = {s: self._index(lst) for s, lst in r.punted.items()}

    @staticmethod
    def _index(spaces: list[HeaderSpace]) -> tuple[dict[int, list], list]:
        fixed: dict[int, list] = {}
        loose: list = []
        for hs in spaces:
            for t in hs.terms:
                if t[1] & _DL_DST_FULL == _DL_DST_FULL:
                    fixed.setdefault((t[0] >> _DL_DST_SHIFT) & _MAC, []).append(t)
                else:
                    loose.append(t)
        return fixed, loose

    @staticmethod
    def terms(index: tuple[dict[int, list], list], dst_mac: int, bases: list) -> HeaderSpace:
        fixed, loose = index
        out = []
        for t in fixed.get(dst_mac, []) + loose:
            v, m, _ = t
            if any(not ((v ^ pv) & m & pm) for pv, pm in bases):
                out.append(t)
        return HeaderSpace(out)


def _judge_pair(a: Analysis, idx: _ReachIndex, ing: Port, src, dst, ok) -> Finding | None:
    P = pair_space(src.mac, dst.mac, src.ip, dst.ip)
    bases = [(v, m) for v, m, _ in P.terms]
    dlv = idx.terms(idx.delivered[dst.name], dst.mac, bases) if dst.name in idx.delivered else HeaderSpace()
    good = HeaderSpace()
    bad_p = HeaderSpace()
    for sw, index in idx.punted.items():
        hs = idx.terms(index, dst.mac, bases)
        if ok(sw):
            good = good | hs
        else:
            bad_p = bad_p | hs
    bad = ((P - dlv) - good) | ((P & bad_p) - dlv)
    if bad.is_empty():
        return None
    why, where, path = _why_unreached(a, ing, bad.witness(), ok)
    return _unreachable(ing, src, dst, bad.compact(), why, where, path)


def _why_unreached(a: Analysis, ing: Port, w: int | None, ok) -> tuple[str, tuple[str, ...], list[str]]:
    """Why one header of the pair's traffic (``w``) fails: (reason, switches, path)."""
    if w is None:
        return "they are lost", (), []
    r = reachable(a.view, ing[0], ing[1], HeaderSpace.wildcard(w, (1 << 248) - 1), _net=a.net)
    if r.loops:
        path = r.loops[0][0]
        start = path.index(path[-1])
        return ("they loop", tuple(dict.fromkeys(s for s, _ in path[start:])),
                [f"{s}:{p}" for s, p in path])
    bad = [sw for sw in r.punted if not ok(sw)]
    if bad:
        return f"they go to a controller that is not connected ({', '.join(bad)})", tuple(bad), []
    if r.drops:
        (sw, why, _hs), path = r.drops[0], r.drop_paths[0]
        return (f"they are dropped at {sw} ({why})", tuple(dict.fromkeys(s for s, _w, _h in r.drops)),
                [f"{s}:{p}" for s, p in path])
    if r.truncated:
        return "the analysis gave up (too many branches)", (), []
    return f"they are delivered to {', '.join(sorted(r.delivered)) or 'nobody'}", (), []


def _unreachable(ing: Port, src, dst, hs: HeaderSpace, why: str, where: tuple[str, ...],
                 path: list[str] | None = None) -> Finding:
    text = _pair_text(hs, src, dst)
    via = f" (path {' -> '.join(path)})" if path else ""
    return Finding("reachability", f"{src.name} cannot reach {dst.name}: {text}: {why}{via}",
                   hosts=(src.name, dst.name), switches=where,
                   details={"ingress": f"{ing[0]}:{ing[1]}", "header_space": describe(hs), "path": path or [],
                            "witness": _witness(hs)})


def _pair_text(hs: HeaderSpace, src, dst) -> str:
    """"all their traffic" when ``hs`` is the whole pair space, else the header space."""
    whole = pair_space(src.mac, dst.mac, src.ip, dst.ip)
    if (whole - hs).is_empty():
        return "all their traffic"
    return f"headers {describe(hs)}"


# --------------------------------------------------------------------------- registry adapters
def check_loops(view: NetworkView, outcomes: object = None) -> list[Finding]:
    """Registry signature; ``outcomes`` may be an :class:`Analysis` of this view (shared)."""
    return hsa_loops(view, _analysis(view, outcomes))


def check_blackholes(view: NetworkView, outcomes: object = None) -> list[Finding]:
    return hsa_blackholes(view, _analysis(view, outcomes))


def check_reachability(view: NetworkView, outcomes: object = None) -> list[Finding]:
    return hsa_reachability(view, _analysis(view, outcomes))


def check_all(view: NetworkView, **kw) -> dict[str, list[Finding]]:
    """The three checks on one shared analysis."""
    a = analyze(view, **kw)
    return {"loops": hsa_loops(view, a), "blackholes": hsa_blackholes(view, a),
            "reachability": hsa_reachability(view, a)}
