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
  one hashable int.  All ingresses advance together, one hop per round, and
  a round costs one dictionary probe per class.  No set algebra is needed.
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

from netsleuth.invariants.forwarding import Finding
from netsleuth.invariants.hsa_compile import (CTRL, F_COMPLEX, F_NOTHING, F_PUNT, PORT, SPECIAL,
                                              CompiledSwitch, compiled)
from netsleuth.invariants.hsa_space import (ALL_BITS, SHIFT_BY_NAME, WIDTH, HeaderSpace, Rewrite,
                                            describe, field_wildcard, image, preimage, unpack)
from netsleuth.invariants.view import NetworkView
from netsleuth.model.addr import int_to_ip, int_to_mac

try:  # the message for a rule that emits nothing, shared with the concrete check
    from netsleuth.invariants.forwarding import _why_nothing
except ImportError:  # pragma: no cover
    def _why_nothing(entry, in_port: int) -> str:
        return f"rule {entry.match or 'catch-all'} priority {entry.priority} sends nothing"

Port = tuple[str, int]
DEFAULT_BUDGET = 2_000_000  # general-engine branches per ingress before giving up


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


# --------------------------------------------------------------------------- general engine
def reachable(view: NetworkView, src_switch: str, src_port: int,
              header_space: HeaderSpace | None = None, *, budget: int = DEFAULT_BUDGET,
              _net: _Net | None = None) -> Reach:
    """Push ``header_space`` (default: every header) in at ``src_switch:src_port``."""
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
            continue
        cs = net.compiled(s)
        for i, cpiece in cs.classify(p, cur):
            opiece = (orig & preimage(cpiece, chain)) if chain else cpiece
            if i is None:
                reach.punted.setdefault(s, []).append(opiece)
                continue
            ems = cs.emissions(i, p)
            if not ems:
                reach.drops.append((s, _why_nothing(cs.entry(i), p), opiece))
                continue
            for kind, q, rws in ems:
                if kind == CTRL:
                    reach.punted.setdefault(s, []).append(opiece)
                elif kind == SPECIAL:
                    reach.drops.append((s, f"output to special port {q:#x}", opiece))
                else:
                    peer = net.peer(s, q)
                    if peer is None:
                        reach.drops.append((s, f"port {q} has no live link", opiece))
                    elif peer[0] in switches:
                        nxt = image(cpiece, rws) if rws else cpiece
                        stack.append((peer[0], peer[1], nxt, opiece, chain + rws, path))
                    else:
                        reach.delivered.setdefault(peer[0], []).append(opiece)
    reach.branches += n


# --------------------------------------------------------------------------- batch engine
# A class is an int: the packed header bits its pattern fixes, plus the
# ingress number shifted above the header bits.  Its header space is the
# wildcard (class & ALL_BITS, pattern mask of its ingress port).
_TAG_SHIFT = WIDTH
_DL_DST_SHIFT = SHIFT_BY_NAME["dl_dst"]
_DL_SRC_SHIFT = SHIFT_BY_NAME["dl_src"]
_MAC = (1 << 48) - 1
_FAST_ROUNDS = 32   # classes still moving after this many hops go to the general engine
_F_MISS = -4        # no entry at all: table miss
_DOWN = -100        # drop code: the switch is down


@dataclass
class _Batch:
    """Results of the batch engine: per outcome, the classes (tagged ints) that end there."""

    masks: list[int] = field(default_factory=list)      # per ingress number: its class pattern
    delivered: dict[str, list[int]] = field(default_factory=dict)   # host -> classes
    punted: dict[str, list[int]] = field(default_factory=dict)      # switch -> classes
    drops: dict[tuple[str, int, int], list[int]] = field(default_factory=dict)  # (switch, in_port, code)
    general: list[int] = field(default_factory=list)    # classes handed to the general engine
    keys_at: dict[int, dict[int, int]] = field(default_factory=dict)  # ingress number -> its port's keys
    rounds: int = 0
    hops: int = 0


def _batch(net: _Net, ingresses: list[Port], tags: dict[Port, int]) -> tuple[_Batch, list[Port]]:
    """Run the batch engine from every ingress whose port has a single-pattern index.

    Returns its results and the ingresses it could not take (for the general engine)."""
    out = _Batch(masks=[0] * len(ingresses))
    rest: list[Port] = []
    frontier: dict[Port, list[int]] = {}
    for ing in ingresses:
        s, p = ing
        pi = net.compiled(s).port(p) if net.up(s) else None
        if pi is None or pi.fast is None:
            rest.append(ing)
            continue
        tag = tags[ing]
        out.masks[tag] = pi.fast_mask
        out.keys_at[tag] = pi.fast
        if pi.fast:
            shifted = tag << _TAG_SHIFT
            frontier[ing] = [k | shifted for k in pi.fast]
    fast_masks = {out.masks[tags[i]] for i in ingresses if i not in rest}
    one_mask = next(iter(fast_masks)) if len(fast_masks) == 1 else None
    switches = net.switches
    targets: dict[tuple[str, int], tuple[int, object]] = {}  # (switch, port) -> (kind, where)

    def target(s: str, q: int) -> tuple[int, object]:
        peer = net.peer(s, q)
        if peer is None:
            t: tuple[int, object] = (2, None)
        elif peer[0] in switches:
            t = (0, peer)
        else:
            t = (1, peer[0])
        targets[(s, q)] = t
        return t

    delivered, punted, drops, general = out.delivered, out.punted, out.drops, out.general
    masks = out.masks
    rounds = 0
    while frontier:
        rounds += 1
        if rounds > _FAST_ROUNDS:
            for xs in frontier.values():
                general.extend(xs)
            break
        nxt: dict[Port, list[int]] = {}
        for cell, xs in frontier.items():
            out.hops += len(xs)
            s, p = cell
            if not net.up(s):
                drops.setdefault((s, p, _DOWN), []).extend(xs)
                continue
            pi = net.compiled(s).port(p)
            fast = pi.fast
            if fast is None:
                general.extend(xs)
                continue
            fm = pi.fast_mask
            # A class must fix every bit of the pattern, or it may span several entries.
            if one_mask is not None:
                if fm & ~one_mask:
                    general.extend(xs)
                    continue
            else:
                bad = [x for x in xs if fm & ~masks[x >> _TAG_SHIFT]]
                if bad:
                    general.extend(bad)
                    xs = [x for x in xs if not fm & ~masks[x >> _TAG_SHIFT]]
            get = fast.get
            groups: dict[int, list[int]] = {}
            for x in xs:
                code = get(x & fm, _F_MISS)
                lst = groups.get(code)
                if lst is None:
                    groups[code] = [x]
                else:
                    lst.append(x)
            for code, lst in groups.items():
                if code >= 0:
                    kind, where = targets.get((s, code)) or target(s, code)
                    if kind == 0:
                        cur = nxt.get(where)  # type: ignore[call-overload]
                        if cur is None:
                            nxt[where] = lst  # type: ignore[index]
                        else:
                            cur.extend(lst)
                    elif kind == 1:
                        d = delivered.get(where)  # type: ignore[call-overload]
                        if d is None:
                            delivered[where] = lst  # type: ignore[index]
                        else:
                            d.extend(lst)
                    else:
                        drops.setdefault((s, p, code), []).extend(lst)
                elif code == F_PUNT or code == _F_MISS:
                    punted.setdefault(s, []).extend(lst)
                elif code == F_NOTHING:
                    drops.setdefault((s, p, F_NOTHING), []).extend(lst)
                else:
                    general.extend(lst)
        frontier = nxt
    out.rounds = rounds
    return out, rest


def ingress_points(view: NetworkView, which: str = "hosts") -> dict[Port, str | None]:
    """(switch, port) -> attached host (None for switch-facing ports with ``which="all"``)."""
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
    """Propagate every header from every ingress point through the network once."""
    net = _Net(view, cache=cache)
    points = ingress_points(view, ingress)
    ingresses = list(points)
    tags = {ing: n for n, ing in enumerate(ingresses)}
    if batch:
        b, rest = _batch(net, ingresses, tags)
    else:
        b, rest = _Batch(masks=[0] * len(ingresses)), ingresses
    reaches: dict[Port, Reach] = {}
    truncated: list[Port] = []
    for ing in rest:
        r = reaches[ing] = Reach(ing)
        _explore(net, ing[0], ing[1], HeaderSpace.all(), r, budget)
        if r.truncated:
            truncated.append(ing)
    # Classes the batch engine gave up on: re-trace each from its ingress with the general engine.
    if b.general:
        by_tag: dict[int, list[int]] = defaultdict(list)
        for x in b.general:
            by_tag[x >> _TAG_SHIFT].append(x)
        for tag, xs in sorted(by_tag.items()):
            ing = ingresses[tag]
            r = reaches.setdefault(ing, Reach(ing))
            m = b.masks[tag]
            hs = HeaderSpace((x & ALL_BITS, m, ()) for x in dict.fromkeys(xs))
            _explore(net, ing[0], ing[1], hs, r, budget)
            if r.truncated and ing not in truncated:
                truncated.append(ing)
    return Analysis(view, ingresses, {k: v for k, v in points.items() if v is not None}, reaches, b, tags,
                    net, truncated)


# --------------------------------------------------------------------------- helpers for reports
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


def _witness_text(hs: HeaderSpace) -> dict | None:
    w = hs.witness()
    if w is None:
        return None
    f = unpack(w)
    return {"dl_src": int_to_mac(f[1]), "dl_dst": int_to_mac(f[2]), "dl_vlan": f[3], "dl_vlan_pcp": f[4],
            "dl_type": f[5], "nw_tos": f[6], "nw_proto": f[7], "nw_src": int_to_ip(f[8]),
            "nw_dst": int_to_ip(f[9]), "tp_src": f[10], "tp_dst": f[11]}


def _components(view: NetworkView) -> dict[str, int]:
    comp: dict[str, int] = {}
    for i, c in enumerate(nx.connected_components(view.live_graph())):
        for n in c:
            comp[n] = i
    return comp


def _host_location(view: NetworkView, host: str) -> Port:
    loc = getattr(view, "host_location", None)
    return loc(host) if loc is not None else view.topology.host_location(host)


def _controller_ok(view: NetworkView, switch: str) -> bool:
    dpid = view.topology.switch(switch).dpid
    if dpid not in view.connected_dpids:
        return False
    names = view.controllers_of.get(dpid)
    if names:
        return any(view.controllers_alive.get(n, False) for n in names)
    return any(view.controllers_alive.values())


def _analysis(view: NetworkView, outcomes: object) -> Analysis:
    return outcomes if isinstance(outcomes, Analysis) and outcomes.view is view else analyze(view)


# --------------------------------------------------------------------------- loops
def hsa_loops(view: NetworkView, analysis: Analysis | None = None) -> list[Finding]:
    """Header spaces that come back to a (switch, in_port) they already crossed."""
    a = _analysis(view, analysis)
    macs = _mac_hosts(view)
    found: dict[tuple[Port, tuple[str, ...]], list] = {}
    for ing in a.ingresses:
        r = a.reaches.get(ing)
        if r is None:
            continue
        for path, hs in r.loops:
            back = path[-1]
            start = path.index(back)
            cycle = tuple(dict.fromkeys(s for s, _p in path[start:]))
            key = (ing, cycle)
            if key in found:
                found[key][1].append(hs)
            else:
                found[key] = [path, [hs]]
    out = []
    for (ing, cycle), (path, spaces) in found.items():
        hs = _union(spaces).compact()
        if not hs.terms:
            continue
        hops = [f"{s}:{p}" for s, p in path]
        src = a.ingress_host.get(ing)
        hosts = tuple(dict.fromkeys(([src] if src else []) + _dst_hosts(hs, macs)))
        text = describe(hs)
        out.append(Finding(
            "loops", f"headers {text} entering {_ingress_text(a, ing)} loop: {' -> '.join(hops)}",
            hosts=hosts, switches=cycle,
            details={"ingress": f"{ing[0]}:{ing[1]}", "header_space": text, "path": hops,
                     "witness": _witness_text(hs)}))
    return out


# --------------------------------------------------------------------------- blackholes
def hsa_blackholes(view: NetworkView, analysis: Analysis | None = None) -> list[Finding]:
    """Header spaces dropped inside the network (a rule that sends nothing, an output to a port
    without a live link, a switch that is down), per ingress and drop point.  Headers for a
    host that is physically cut off from the ingress are not counted: nothing could deliver them."""
    a = _analysis(view, analysis)
    macs = _mac_hosts(view)
    comp = _components(view)
    out = []
    for ing in a.ingresses:
        drops = _ingress_drops(a, ing)
        if not drops:
            continue
        src_comp = comp.get(ing[0])
        cut_off = [mac for mac, h in macs.items() if comp.get(h) != src_comp]
        by_where: dict[str, tuple[list[str], list[HeaderSpace]]] = {}
        for sw, why, hs in drops:
            hs = _minus_hosts(hs, cut_off)
            if not hs.terms or hs.is_empty():
                continue
            whys, spaces = by_where.setdefault(sw, ([], []))
            if why not in whys:
                whys.append(why)
            spaces.append(hs)
        for sw, (whys, spaces) in by_where.items():
            hs = _union(spaces)
            src = a.ingress_host.get(ing)
            hosts = tuple(dict.fromkeys(([src] if src else []) + _dst_hosts(hs, macs)))
            text = describe(hs)
            out.append(Finding(
                "blackholes", f"headers {text} entering {_ingress_text(a, ing)} are dropped at {sw}: "
                f"{'; '.join(whys)}",
                hosts=hosts, switches=(sw,),
                details={"ingress": f"{ing[0]}:{ing[1]}", "header_space": text, "where": sw,
                         "why": whys, "terms": len(hs.terms), "witness": _witness_text(hs)}))
    return out


def _ingress_drops(a: Analysis, ing: Port) -> list[tuple[str, str, HeaderSpace]]:
    drops = list(a.reaches[ing].drops) if ing in a.reaches else []
    tag = a.tags[ing]
    for (sw, p, code), xs in a.batch.drops.items():
        mine = [x for x in xs if x >> _TAG_SHIFT == tag]
        if mine:
            for why, group in a._drop_reasons(sw, p, code, mine):
                drops.append((sw, why, a._hs(group)))
    return drops


_DL_DST_FULL = field_wildcard(dl_dst=0)[1]


def _minus_hosts(hs: HeaderSpace, macs: list[int]) -> HeaderSpace:
    """``hs`` without headers whose dl_dst is one of ``macs``."""
    if not macs:
        return hs
    mset = set(macs)
    terms = []
    for t in hs.terms:
        v, m, ds = t
        if m & _DL_DST_FULL == _DL_DST_FULL:
            if (v >> _DL_DST_SHIFT) & _MAC not in mset:
                terms.append(t)
            continue
        terms.extend(HeaderSpace((t,)).minus_wc(field_wildcard(dl_dst=mac)).terms[0:0] or [t])
        # subtract each cut-off host's address
        cur = HeaderSpace((t,))
        for mac in macs:
            cur = cur.minus_wc(field_wildcard(dl_dst=mac))
        terms[-1:] = list(cur.terms)
    return HeaderSpace(terms)


# --------------------------------------------------------------------------- reachability
def pair_space(src_mac: int, dst_mac: int, src_ip: int | None, dst_ip: int | None) -> HeaderSpace:
    """A host pair's traffic: dl_src/dl_dst are theirs and, for IPv4, nw_src/nw_dst too."""
    eth = field_wildcard(dl_src=src_mac, dl_dst=dst_mac)
    if src_ip is None or dst_ip is None:
        return HeaderSpace.wildcard(*eth)
    ip = field_wildcard(dl_src=src_mac, dl_dst=dst_mac, dl_type=0x0800, nw_src=src_ip, nw_dst=dst_ip)
    return HeaderSpace.wildcard(*ip) | HeaderSpace.wildcard(*eth).minus_wc(field_wildcard(dl_type=0x0800))


def hsa_reachability(view: NetworkView, analysis: Analysis | None = None) -> list[Finding]:
    """Every physically connected host pair: all of the pair's traffic from the source's port
    reaches the destination, or is punted to a live, connected controller."""
    a = _analysis(view, analysis)
    comp = _components(view)
    hosts = [h for h in view.topology.hosts]
    ctl_ok: dict[str, bool] = {}

    def ok(sw: str) -> bool:
        v = ctl_ok.get(sw)
        if v is None:
            v = ctl_ok[sw] = _controller_ok(view, sw)
        return v

    out = []
    by_ingress: dict[Port, list] = defaultdict(list)
    for src in hosts:
        loc = _host_location(view, src.name)
        if view.peer(*loc) is None or loc not in a.tags:
            continue
        for dst in hosts:
            if dst.name == src.name or comp.get(src.name) != comp.get(dst.name):
                continue
            by_ingress[loc].append((src, dst))
    for ing, pairs in by_ingress.items():
        out.extend(_reach_pairs(a, ing, pairs, ok))
    return out


def _reach_pairs(a: Analysis, ing: Port, pairs: list, ok) -> list[Finding]:
    tag = a.tags[ing]
    b = a.batch
    general = a.reaches.get(ing)
    fm = b.masks[tag]
    fast_keys = b.keys_at.get(tag)
    findings = []
    need_general = []
    if fast_keys is not None:
        # Batch classes of this ingress: its pairs whose traffic is one class (the pattern fixes
        # only bits the pair fixes in both its parts) are judged by where that class ends.
        pair_fixed = field_wildcard(dl_src=0, dl_dst=0)[1]
        simple = not (fm & ~pair_fixed)
        if simple:
            shifted = tag << _TAG_SHIFT
            keyset = set(fast_keys)
            dlv = {h: set(xs) for h, xs in b.delivered.items()}
            punted_ok = set()
            punted_bad: dict[int, str] = {}
            for sw, xs in b.punted.items():
                if ok(sw):
                    punted_ok.update(xs)
                else:
                    for x in xs:
                        punted_bad[x] = sw
            s0 = ing[0]
            for src, dst in pairs:
                x = (((src.mac << _DL_SRC_SHIFT) | (dst.mac << _DL_DST_SHIFT)) & fm) | shifted
                if x not in keyset:
                    # the first switch has no entry for any of it: table miss there
                    if general is None or not _general_touches(general, src, dst):
                        if ok(s0):
                            continue
                        findings.append(_unreachable(a, ing, src, dst, pair_space(
                            src.mac, dst.mac, src.ip, dst.ip),
                            f"they go to a controller that is not connected ({s0})", (s0,)))
                        continue
                    need_general.append((src, dst))
                    continue
                if x in dlv.get(dst.name, ()) or (x in punted_ok and x not in punted_bad):
                    if general is None or not _general_touches(general, src, dst):
                        continue
                need_general.append((src, dst))
        else:
            need_general = list(pairs)
    else:
        need_general = list(pairs)
    if need_general:
        r = a.reach(ing)
        for src, dst in need_general:
            f = _judge_pair(a, r, ing, src, dst, ok)
            if f is not None:
                findings.append(f)
    return findings


def _general_touches(r: Reach, src, dst) -> bool:
    """Whether the general engine's results for this ingress may hold some of the pair's traffic."""
    return bool(r.delivered or r.punted or r.drops or r.loops)


def _judge_pair(a: Analysis, r: Reach, ing: Port, src, dst, ok) -> Finding | None:
    P = pair_space(src.mac, dst.mac, src.ip, dst.ip)
    P_bases = [(v, m) for v, m, _ in P.terms]

    def rel(spaces: Iterable[HeaderSpace]) -> HeaderSpace:
        terms = []
        for hs in spaces:
            for t in hs.terms:
                v, m, _ = t
                if any(not ((v ^ pv) & m & pm) for pv, pm in P_bases):
                    terms.append(t)
        return HeaderSpace(terms)

    dlv = rel(r.delivered.get(dst.name, ()))
    good_sw = [sw for sw in r.punted if ok(sw)]
    bad_sw = [sw for sw in r.punted if not ok(sw)]
    p_ok = rel(hs for sw in good_sw for hs in r.punted[sw])
    p_bad = rel(hs for sw in bad_sw for hs in r.punted[sw])
    bad = ((P - dlv) - p_ok) | ((P & p_bad) - dlv)
    if bad.is_empty():
        return None
    w = bad.witness()
    why, where = _why_unreached(r, w, dst.name, ok)
    return _unreachable(a, ing, src, dst, bad.compact(), why, where)


def _why_unreached(r: Reach, w: int | None, dst: str, ok) -> tuple[str, tuple[str, ...]]:
    if w is None:
        return "they are lost", ()
    loops = [path for path, hs in r.loops if hs.contains(w)]
    if loops:
        return "they loop", tuple(dict.fromkeys(s for s, _ in loops[0]))
    bad = [sw for sw, lst in r.punted.items() if not ok(sw) and any(hs.contains(w) for hs in lst)]
    if bad:
        return f"they go to a controller that is not connected ({', '.join(bad)})", tuple(bad)
    drops = [(sw, why) for sw, why, hs in r.drops if hs.contains(w)]
    if drops:
        return f"they are dropped at {drops[0][0]} ({drops[0][1]})", tuple(dict.fromkeys(s for s, _ in drops))
    hosts = [h for h, lst in r.delivered.items() if any(hs.contains(w) for hs in lst)]
    return f"they are delivered to {', '.join(sorted(hosts)) or 'nobody'}", ()


def _unreachable(a: Analysis, ing: Port, src, dst, hs: HeaderSpace, why: str,
                 where: tuple[str, ...]) -> Finding:
    text = describe(hs)
    return Finding("reachability", f"{src.name} cannot reach {dst.name}: headers {text}: {why}",
                   hosts=(src.name, dst.name), switches=where,
                   details={"ingress": f"{ing[0]}:{ing[1]}", "header_space": text,
                            "witness": _witness_text(hs)})


# --------------------------------------------------------------------------- registry adapters
def check_loops(view: NetworkView, outcomes: object = None) -> list[Finding]:
    """Registry signature: ``outcomes`` may be an :class:`Analysis` of this view (shared)."""
    return hsa_loops(view, _analysis(view, outcomes))


def check_blackholes(view: NetworkView, outcomes: object = None) -> list[Finding]:
    return hsa_blackholes(view, _analysis(view, outcomes))


def check_reachability(view: NetworkView, outcomes: object = None) -> list[Finding]:
    return hsa_reachability(view, _analysis(view, outcomes))
