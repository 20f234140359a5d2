"""Reachability for every packet header: each pair of hosts of one connected component must reach each
other with their whole pair space (their MACs, and for IPv4 their addresses), judged in bulk from
the batch engine's classes (:class:`PairJudge`), one pair at a time only where the bulk judgement
finds a suspect (:func:`judge_pair`).
"""

from __future__ import annotations

import weakref
from collections.abc import Collection, Iterable, Iterator
from functools import lru_cache

import numpy as np

from netsleuth.gcpause import gc_paused
from netsleuth.invariants.forwarding import Finding
from netsleuth.invariants.headerspace import report as R
from netsleuth.invariants.headerspace.batch import TAG_SHIFT
from netsleuth.invariants.headerspace.compiled import interner
from netsleuth.invariants.headerspace.engine import Analysis
from netsleuth.invariants.headerspace.general import Port, Reach, reachable
from netsleuth.invariants.headerspace.paths import (
    _DL_DST_FULL,
    _DL_DST_SHIFT,
    _DL_SRC_SHIFT,
    _IDM,
    _MAC,
    _analysis,
    walk,
)
from netsleuth.invariants.headerspace.report import components, controller_checker, host_location, hosts_by_component
from netsleuth.invariants.headerspace.space import (
    HeaderSpace,
    describe_headerspace,
    field_wildcard,
)
from netsleuth.invariants.headerspace.terms import Term, term_contains
from netsleuth.invariants.view import NetworkView
from netsleuth.model.headerbits import key_field
from netsleuth.model.topology import HostSpec

PAIR_FIXED = field_wildcard(dl_src=0, dl_dst=0)[1]


@lru_cache(maxsize=1 << 12)  # a check judges each pair once or twice, a few dozen per ingress in a row
def pair_space(src_mac: int, dst_mac: int, src_ip: int | None = None, dst_ip: int | None = None) -> HeaderSpace:
    """A host pair's traffic: their dl_src/dl_dst and, for IPv4, their nw_src/nw_dst (the same
    object for the same pair: read-only, as every header space is)."""
    eth = field_wildcard(dl_src=src_mac, dl_dst=dst_mac)
    if src_ip is None or dst_ip is None:
        return HeaderSpace.wildcard(*eth)
    ip = field_wildcard(dl_src=src_mac, dl_dst=dst_mac, dl_type=0x0800, nw_src=src_ip, nw_dst=dst_ip)
    return HeaderSpace.wildcard(*ip) | HeaderSpace.wildcard(*eth).minus_wc(field_wildcard(dl_type=0x0800))


def hsa_reachability(view: NetworkView, analysis: Analysis | None = None) -> list[Finding]:
    """For every ordered pair of physically connected hosts, all of the pair's traffic
    (:func:`pair_space`) from the source's port reaches the destination, is punted to a
    live, connected controller or is dropped on purpose by a rule with no output (the
    controller's choice, as a policy check would judge it); a finding names the header
    space that does not."""
    a = _analysis(view, analysis)
    if not isinstance(a, Analysis):  # a network of OpenFlow 1.3 pipelines
        from netsleuth.invariants.headerspace.of13.checks import reachability13
        return reachability13(view, a)
    return R.group_unreachable(view, a, unreachable_pairs(view, a), describe_headerspace)


def senders(view: NetworkView, a: Analysis, comp: dict[str, int]) -> list[tuple[HostSpec, Port, list[HostSpec]]]:
    """(source host, its ingress, the hosts it should reach) for every host whose pairs
    :func:`hsa_reachability` judges, in topology order."""
    members = hosts_by_component(view, comp)
    out = []
    for src in view.topology.hosts:
        loc = host_location(view, src.name)
        if loc not in a.tags or view.peer(*loc) is None:
            continue
        peers = members[comp.get(src.name, -1)]
        if len(peers) >= 2:
            out.append((src, loc, peers))
    return out


def unreachable_pairs(view: NetworkView, a: Analysis) -> list[Finding]:
    """One finding per host pair whose traffic does not arrive (before grouping by cause)."""
    comp = components(view)
    ok = controller_checker(view)

    judge = PairJudge(a, ok, comp)
    out: list[Finding] = []
    bulk: list[tuple[Port, object]] = []
    for src, loc, peers in senders(view, a, comp):
        if judge.bulk_ok(loc):
            bulk.append((loc, src))
        else:
            out.extend(judge.pairs(loc, src, peers))
    if bulk:
        out.extend(judge.bulk(bulk))
    return out


def pair_macs(mask: int = PAIR_FIXED) -> tuple[np.ndarray, np.ndarray]:
    """(dl_src, dl_dst) of every interned key of ``mask`` (which fixes both), by key id, as
    two int64 arrays (read-only)."""
    return key_field(mask, "dl_src"), key_field(mask, "dl_dst")


_MEMO_SETS: dict = {}


def _memo_set(key, xs: list[int]) -> set[int]:
    """``set(xs)``, reused when ``xs`` equals the list it was built from last time."""
    hit = _MEMO_SETS.get(key)
    if hit is not None and (hit[0] is xs or hit[0] == xs):
        return hit[1]
    st = set(xs)
    _MEMO_SETS[key] = (xs, st)
    return st


_FEW = 16  # pair_keys looks at this many classes or fewer one by one


def pair_dst_mac(x: int) -> int:
    """The dl_dst of class (or key id) ``x`` of :data:`PAIR_FIXED` (the key id is the low bits),
    read off its interned key: what an incremental check asks of the one class a flow_mod
    moved, to see whether it still ends at its destination."""
    return (interner(PAIR_FIXED)[1][x & _IDM] >> _DL_DST_SHIFT) & _MAC


def _few_pairs(xs: Iterable[int], src_mac: int) -> list[tuple[int, int]]:
    """(x, dl_dst) of each of a few classes ``xs`` of :data:`PAIR_FIXED` whose dl_src is ``src_mac``,
    read off the interned keys themselves (what :func:`pair_macs` holds as columns)."""
    keys = interner(PAIR_FIXED)[1]
    out = []
    for x in xs:
        k = keys[x & _IDM]
        if (k >> _DL_SRC_SHIFT) & _MAC == src_mac:
            out.append((x, (k >> _DL_DST_SHIFT) & _MAC))
    return out


def pair_keys(xs: Iterable[int], src: HostSpec, by_mac: dict[int, HostSpec],
              comp: dict[str, int]) -> Iterator[tuple[int, HostSpec]]:
    """(x, destination) for each of ``xs`` (key ids of :data:`PAIR_FIXED`, or classes of it: the
    key id is the low bits) that is a pair of ``src``'s: its dl_src is the source's, its dl_dst a
    host's other than the source, in the source's component."""
    here = comp.get(src.name, -1)
    pairs: Iterable[tuple[int, int]]
    if not isinstance(xs, (list, tuple)) or len(xs) > _FEW:
        src_mac, dst_mac = pair_macs(PAIR_FIXED)
        arr = np.fromiter(xs, dtype=np.int64)
        arr = arr[src_mac[arr & _IDM] == src.mac]
        pairs = zip(arr.tolist(), dst_mac[arr & _IDM].tolist(), strict=True)
    else:  # a flow_mod's one or two classes: numpy's per-call overhead would be most of the cost
        pairs = _few_pairs(xs, src.mac)
    for x, dm in pairs:
        d = by_mac.get(dm)
        if d is not None and d is not src and comp.get(d.name, -2) == here:
            yield x, d


class _HostMacs:
    """The hosts by MAC address as sorted arrays, to look up a million destination MACs at
    once."""

    def __init__(self, by_mac: dict[int, HostSpec], comp: dict[str, int]) -> None:
        order = sorted(by_mac)
        self.macs = np.array(order, dtype=np.int64)
        self.hosts = [by_mac[m] for m in order]
        self.comp = np.array([comp.get(h.name, -2) for h in self.hosts], dtype=np.int64)
        self.pos = {id(h): n for n, h in enumerate(self.hosts)}

    def find(self, macs: np.ndarray) -> np.ndarray:
        """Per MAC, the position of its host, or -1."""
        if not len(self.macs):
            return np.full(len(macs), -1, dtype=np.int64)
        pos = np.searchsorted(self.macs, macs)
        np.minimum(pos, len(self.macs) - 1, out=pos)
        return np.where(self.macs[pos] == macs, pos, -1)


# The last bulk judgement: (batch results it read, everything else it read, its findings).
# A check of an unchanged network gets the very same batch results back from the engine
# (see engine._batch), and then the same findings from here.
_LAST_BULK: list = []


def forget_memos() -> None:
    """Drop what the reachability check keeps between checks, so the next check runs cold (benchmarks)."""
    _MEMO_SETS.clear()
    _LAST_BULK.clear()


class PairJudge:
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
        for xs in b.filtered.values():  # a drop rule's: dropped on purpose, the controller's choice
            self._punt_ok.update(xs)

    def bulk_ok(self, ing: Port) -> bool:
        """Whether this ingress's pairs can be judged in bulk: one class per pair (pattern
        dl_src+dl_dst exactly) and a live controller behind its switch for table misses."""
        tag = self.a.tags[ing]
        return (self.b.ids_at.get(tag) is not None and self.b.masks[tag] == PAIR_FIXED
                and self.ok(ing[0]))

    def bulk(self, sources: list[tuple[Port, object]]) -> list[Finding]:
        """Judge the pairs of many ingresses at once: the pairs whose class ends neither at
        the destination, nor at a live controller, nor at a drop rule, are judged one by one
        (:func:`judge_pair`); pairs with no class at their first switch are punted there (a
        live controller).  See :meth:`_suspects`."""
        a, b = self.a, self.b
        net = a.net
        read = (a.view.topology.hosts, [(ing, id(src)) for ing, src in sources], dict(self.comp),
                [self.ok(s) for s in net.switches])
        if _LAST_BULK and _LAST_BULK[0]() is b and _LAST_BULK[1] == read:
            return list(_LAST_BULK[2])
        with gc_paused():  # numpy arrays and a few findings: no cycles to collect
            slow = self._suspects(sources)
        out: list[Finding] = []
        for ing, src, dsts in slow:
            idx = ReachIndex(a.reach(ing))
            for d in dsts:
                f = judge_pair(a, idx, ing, src, d, self.ok)
                if f is not None:
                    out.append(f)
        _LAST_BULK[:] = [weakref.ref(b), read, out]
        return list(out)

    def _suspects(self, sources: list[tuple[Port, object]]) -> list[tuple[Port, object, list]]:
        """Per bulk source (its ingress, itself, the destinations whose pair needs a closer look).

        With numpy over key ids, no Python object per pair: a pair's key id (its dl_src and
        dl_dst) is wanted by one source only, the host with that dl_src (a topology refuses
        two hosts with one MAC; hosts sharing an ingress port have their own), so one array
        over key ids says which source wants each key (``owner``) and another whether that
        source's class of it ended well (``good``)."""
        a, b = self.a, self.b
        net, tags = a.net, a.tags
        src_mac, dst_mac = pair_macs(PAIR_FIXED)
        nk = len(src_mac)
        hm = _HostMacs(self.by_mac, self.comp)
        owner = np.full(nk, -1, dtype=np.int64)  # key id -> the source (number in sources) wanting it
        src_tag = np.array([tags[ing] for ing, _src in sources] + [-1], dtype=np.int64)  # [-1]: nobody
        wanted: list[np.ndarray] = []
        for n, (ing, src) in enumerate(sources):
            kids = net.compiled(ing[0]).port(ing[1]).arrays()[0]
            kids = kids[src_mac[kids] == src.mac]  # type: ignore[attr-defined]  # a Host
            where = hm.find(dst_mac[kids])
            me = hm.pos.get(id(src), -1) if self.by_mac.get(src.mac) is src else -1  # type: ignore[attr-defined]
            keep = (where >= 0) & (where != me)
            keep &= hm.comp[np.maximum(where, 0)] == self.comp.get(src.name, -1)  # type: ignore[attr-defined]
            kids = kids[keep]
            owner[kids] = n
            wanted.append(kids.astype(np.int64))
        good = np.zeros(nk, dtype=bool)

        def ended_well(xs: Collection[int], mac: int | None = None) -> None:
            x = np.asarray(xs, dtype=np.int64)
            j = x & _IDM
            inside = j < nk
            x, j = x[inside], j[inside]
            mine = src_tag[owner[j]] == (x >> TAG_SHIFT)  # the class of that pair its source sends
            if mac is not None:
                mine &= dst_mac[j] == mac  # delivered to the pair's destination
            good[j[mine]] = True

        hosts = {h.name: h for h in a.view.topology.hosts}
        for hname, xs in b.delivered.items():
            h = hosts.get(hname)
            if h is not None and self.by_mac.get(h.mac) is h and len(xs):
                ended_well(xs, h.mac)
        for sw, xs in b.punted.items():
            if self.ok(sw) and len(xs):
                ended_well(xs)
        for xs in b.filtered.values():  # a drop rule's: dropped on purpose, the controller's choice
            if len(xs):
                ended_well(xs)
        slow: list[tuple[Port, object, list]] = []
        for (ing, src), kids in zip(sources, wanted, strict=True):
            bad = kids[~good[kids]]
            if len(bad):
                slow.append((ing, src, [self.by_mac[dm] for dm in dst_mac[bad].tolist()]))
        return slow

    def pairs(self, ing: Port, src, peers: list) -> list[Finding]:
        a, b = self.a, self.b
        tag = a.tags[ing]
        ids = b.ids_at.get(tag)
        mask = b.masks[tag]
        slow: list = []
        out: list[Finding] = []
        if ids is None or mask & ~PAIR_FIXED:
            slow = [d for d in peers if d is not src]
        else:
            if self._dlv is None:
                self._sets()
            dlv, punt_ok = self._dlv, self._punt_ok
            empty: set[int] = set()
            shifted = tag << TAG_SHIFT
            s0_ok = self.ok(ing[0])
            if mask == PAIR_FIXED and s0_ok:
                # Only pairs with an entry at the first switch need a look.
                for j, d in pair_keys(ids, src, self.by_mac, self.comp):
                    x = j | shifted
                    # computed before the checks
                    if x in dlv.get(d.name, empty) or x in punt_ok:  # type: ignore[union-attr]
                        continue
                    slow.append(d)
            else:
                intern = interner(mask)[0]
                sk = (src.mac << _DL_SRC_SHIFT) & mask
                for d in peers:
                    if d is src:
                        continue
                    kid = intern.get(sk | ((d.mac << _DL_DST_SHIFT) & mask))
                    if kid is None or kid not in ids:  # the first switch misses on all of it
                        if not s0_ok:
                            out.append(_unreachable(
                                ing, src, d, pair_space(src.mac, d.mac, src.ip, d.ip),
                                f"they go to a controller that is not connected ({ing[0]})", (ing[0],)))
                        continue
                    x = kid | shifted
                    # computed before the checks
                    if x in dlv.get(d.name, empty) or x in punt_ok:  # type: ignore[union-attr]
                        continue
                    slow.append(d)
        if slow:
            r = a.reach(ing)
            idx = ReachIndex(r)
            for d in slow:
                f = judge_pair(a, idx, ing, src, d, self.ok)
                if f is not None:
                    out.append(f)
        return out


class ReachIndex:
    """A Reach's terms bucketed by fixed dl_dst, to find the ones a host pair can touch."""

    def __init__(self, r: Reach) -> None:
        self.r = r
        self.delivered = {h: self._index(lst) for h, lst in r.delivered.items()}
        self.punted = {s: self._index(lst) for s, lst in r.punted.items()}
        self.filtered = [self._index(lst) for _s, lst in sorted(r.filtered.items())]

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
        for terms in (fixed.get(dst_mac, ()), loose):
            for t in terms:
                v, m, _ = t
                for pv, pm in bases:  # (a loop, not any() over a generator: a few bases per term)
                    if not ((v ^ pv) & m & pm):
                        out.append(t)
                        break
        return HeaderSpace(out)


def judge_pair(a: Analysis, idx: ReachIndex, ing: Port, src, dst, ok) -> Finding | None:
    """The finding for the pair ``src`` -> ``dst`` entering at ``ing``: the part of its traffic
    neither delivered to ``dst``, nor punted to a live controller, nor dropped by a drop rule,
    or None when there is none."""
    P = pair_space(src.mac, dst.mac, src.ip, dst.ip)
    bases = [(v, m) for v, m, _ in P.terms]
    dlv = idx.terms(idx.delivered[dst.name], dst.mac, bases) if dst.name in idx.delivered else HeaderSpace()
    lost = P - dlv
    if lost.is_empty():
        return None  # all of it delivered (the usual case): what is punted or filtered cannot matter
    good = HeaderSpace()
    for index in idx.filtered:  # dropped on purpose by a rule: the controller's choice
        good = good | idx.terms(index, dst.mac, bases)
    bad_p = HeaderSpace()
    for sw, index in idx.punted.items():
        hs = idx.terms(index, dst.mac, bases)
        if ok(sw):
            good = good | hs
        else:
            bad_p = bad_p | hs
    bad = (lost - good) | ((P & bad_p) - dlv)
    if bad.is_empty():
        return None
    why, where, path = _why_unreached(a, ing, bad.witness(), ok)
    return _unreachable(ing, src, dst, bad.compact(), why, where, path)


def _why_unreached(a: Analysis, ing: Port, w: int | None, ok) -> tuple[str, tuple[str, ...], list[str]]:
    """Why one header of the pair's traffic (``w``) fails: (reason, switches, path)."""
    if w is None:
        return "they are lost", (), []
    walked = walk(a, ing, w)
    if walked is not None:
        (kind, *rest), hops = walked
        text = [f"{s}:{p}" for s, p in hops]
        if kind == "loop":
            return "they loop", R.cycle_of(hops), text
        if kind == "punt" and not ok(rest[0]):
            return f"they go to a controller that is not connected ({rest[0]})", (rest[0],), []
        if kind == "drop":
            return f"they are dropped at {rest[0]} ({rest[1]})", (rest[0],), text
        return f"they are delivered to {rest[0] if kind == 'deliver' else 'nobody'}", (), []
    r = _traced(a, ing, w) or reachable(a.view, ing[0], ing[1], HeaderSpace.wildcard(w, (1 << 248) - 1), _net=a.net)
    if r.loops:
        path = r.loops[0][0]
        return ("they loop", R.cycle_of(path),
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


def _traced(a: Analysis, ing: Port, w: int) -> Reach | None:
    """Where the one header ``w`` entering at ``ing`` goes, read off the general engine's results
    for ``ing`` when :func:`walk` cannot follow it (its class was then traced there, from
    ``ing``): the loops, drops (with their paths), switches punting it and hosts it reaches,
    of those results the ones holding ``w``.  They come in the order a search from ``w``
    alone finds them: the search is depth-first, and what travels with ``w`` does not change
    the order of ``w``'s own branches.  None when the results cannot tell: none kept, cut
    short, or ``w`` punted at several switches (which comes first is not kept)."""
    g = a.reaches.get(ing)
    if g is None or g.truncated:
        return None
    idx = a.held.get(ing)
    if idx is None:
        idx = a.held[ing] = _Held(g)
    held = idx.holding(w)
    punted = [sw for k, sw in idx.punted if k in held]
    if len(punted) > 1:
        return None
    r = Reach(ing)
    r.punted = {sw: [] for sw in punted}
    r.delivered = {h: [] for k, h in idx.delivered if k in held}
    r.loops = [lp for k, lp in enumerate(g.loops, idx.loops) if k in held]
    for k, drop, path in zip(range(idx.drops, idx.n), g.drops, g.drop_paths, strict=True):
        if k in held:
            r.drops.append(drop)
            r.drop_paths.append(path)
    return r


class _Held:
    """One ingress's general-engine results (punted, delivered, loops, drops: items numbered in
    that order) with their terms bucketed by fixed dl_dst, to tell which items hold one header
    by testing only the terms that can: :func:`_traced` asks for every unreachable pair of the
    ingress, and a pair's header fixes its destination's MAC."""

    def __init__(self, g: Reach) -> None:
        self.fixed: dict[int, list[tuple[int, Term]]] = {}
        self.loose: list[tuple[int, Term]] = []
        k = 0
        self.punted: list[tuple[int, str]] = []
        for sw, spaces in g.punted.items():
            self._add(k, spaces)
            self.punted.append((k, sw))
            k += 1
        self.delivered: list[tuple[int, str]] = []
        for h, spaces in g.delivered.items():
            self._add(k, spaces)
            self.delivered.append((k, h))
            k += 1
        self.loops = k
        for _path, hs in g.loops:
            self._add(k, (hs,))
            k += 1
        self.drops = k
        for _sw, _why, hs in g.drops:
            self._add(k, (hs,))
            k += 1
        self.n = k

    def _add(self, k: int, spaces: Iterable[HeaderSpace]) -> None:
        for hs in spaces:
            for t in hs.terms:
                if t[1] & _DL_DST_FULL == _DL_DST_FULL:
                    self.fixed.setdefault((t[0] >> _DL_DST_SHIFT) & _MAC, []).append((k, t))
                else:
                    self.loose.append((k, t))

    def holding(self, w: int) -> set[int]:
        """The numbers of the items one of whose spaces holds the header ``w``."""
        out: set[int] = set()
        for terms in (self.fixed.get((w >> _DL_DST_SHIFT) & _MAC, ()), self.loose):
            for k, t in terms:
                if k not in out and term_contains(t, w):
                    out.add(k)
        return out


def _unreachable(ing: Port, src, dst, hs: HeaderSpace, why: str, where: tuple[str, ...],
                 path: list[str] | None = None) -> Finding:
    text = _pair_text(hs, src, dst)
    via = f" (path {' -> '.join(path)})" if path else ""
    return Finding("reachability", f"{src.name} cannot reach {dst.name}: {text}: {why}{via}",
                   hosts=(src.name, dst.name), switches=where,
                   details={"ingress": f"{ing[0]}:{ing[1]}", "header_space": describe_headerspace(hs),
                            "path": path or [], "cause": why, "all": text == "all their traffic",
                            "witness": R.witness_dict(hs), R.SPACE: hs})


def _pair_text(hs: HeaderSpace, src, dst) -> str:
    """"all their traffic" when ``hs`` is the whole pair space, else the header space."""
    whole = pair_space(src.mac, dst.mac, src.ip, dst.ip)
    # The same terms (every such finding on the incremental test's FatTree) need no subtraction.
    if hs.terms == whole.terms or (whole - hs).is_empty():
        return "all their traffic"
    return f"headers {describe_headerspace(hs)}"
