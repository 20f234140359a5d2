"""Loops, blackholes and reachability over OpenFlow 1.3 pipelines, as findings.

The same invariants and the same reading as the 1.0 checks
(:mod:`netsleuth.invariants.headerspace.checks`): a finding names the header space
(a wildcard expression over the injected headers), where those headers
entered, the path, and the rules they took with the table of each
(``s1 table 1: rule ...``), plus one concrete witness header.

* loops: headers that come back to a (switch, in_port) they crossed, for
  some choice of every SELECT group;
* blackholes: headers that forwarding meant to deliver and that go nowhere
  (an output to a port without a live link, one the switch does not have
  or its own in port, a group whose buckets lead nowhere, a switch that is
  down) for some SELECT choice; headers for a host cut off from the
  ingress, or for the sender itself, do not count (as for 1.0).  A drop on
  purpose (an entry with no output, a table miss with no table-miss entry:
  see :mod:`netsleuth.invariants.headerspace.of13.engine`) is the controller's choice
  and no blackhole, and a table-miss entry to the controller is no drop;
* reachability: for every physically connected host pair, all of the
  pair's traffic reaches the destination, a live, connected controller or
  a drop on purpose *whatever* the SELECT groups choose.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from netsleuth.gcpause import gc_paused
from netsleuth.invariants.forwarding import Finding
from netsleuth.invariants.headerspace import report as R
from netsleuth.invariants.headerspace.of13.engine import (
    Analysis13,
    HsaEvent13,
    Reach13,
    analyze13,
    must_hold,
    rule_text,
)
from netsleuth.invariants.headerspace.of13.lonepiece import (
    Shape,
    as_pair,
    based_terms,
    based_terms_many,
    diffs_may_repeat,
    plan_of,
)
from netsleuth.invariants.headerspace.of13.space import HS13, describe13, union13
from netsleuth.invariants.headerspace.terms import Term, term_covers
from netsleuth.invariants.view import NetworkView
from netsleuth.model.of13.flowtable import FlowEntry13
from netsleuth.model.of13.headerbits import FULL13, SHIFT13, wc13

_DST_SH = SHIFT13["eth_dst"]
_SRC_SH = SHIFT13["eth_src"]
_IPS_SH, _IPD_SH = SHIFT13["ipv4_src"], SHIFT13["ipv4_dst"]
_DST_FULL = FULL13["eth_dst"] << _DST_SH
_MAC = FULL13["eth_dst"]


def _analysis(view: NetworkView, a: object) -> Analysis13:
    if isinstance(a, Analysis13) and a.view is view:
        return a
    return analyze13(view)


class Describer:
    """:func:`describe13` of each header set object once within one check: a finding's space is
    read by its own text, by its group's entries and by the group's details (held while the
    check runs, so an id stands for one object)."""

    __slots__ = ("_got",)

    def __init__(self) -> None:
        self._got: dict[int, tuple[HS13, str]] = {}

    def __call__(self, hs: HS13) -> str:
        got = self._got.get(id(hs))
        if got is None or got[0] is not hs:
            got = self._got[id(hs)] = (hs, describe13(hs))
        return got[1]


class RuleTexts:
    """:func:`~netsleuth.invariants.headerspace.of13.engine.rule_text` of each (switch, table,
    entry) once within one check: the drops of many ingresses name one dropping rule, and the
    findings list the rules of their events (the entries are held while the check runs)."""

    __slots__ = ("_got",)

    def __init__(self) -> None:
        self._got: dict[tuple[str, int, int], tuple[FlowEntry13, str]] = {}

    def __call__(self, sw: str, table_id: int, entry: FlowEntry13) -> str:
        key = (sw, table_id, id(entry))
        got = self._got.get(key)
        if got is None or got[0] is not entry:
            got = self._got[key] = (entry, rule_text(sw, table_id, entry))
        return got[1]

    def of(self, e: HsaEvent13) -> list[str]:
        """The texts of ``e``'s rules (``HsaEvent13.rule_texts``)."""
        return [self(*r) for r in e.rules]


def _rules_text(e: HsaEvent13) -> str:
    return "; ".join(e.rule_texts()) or "none"


# --------------------------------------------------------------------------- loops
def loops13(view: NetworkView, analysis: object = None,
            describe: Callable[[HS13], str] = describe13) -> list[Finding]:
    """One finding per distinct cycle, whichever ingress enters it (as for 1.0)."""
    a = _analysis(view, analysis)
    macs = R.mac_hosts(view)
    found: dict[tuple[R.Port, ...], dict[R.Port, tuple[HsaEvent13, list[HS13]]]] = {}
    for ing in a.ingresses:
        for e in a.reaches[ing].loops:
            per = found.setdefault(R.canonical_cycle(e.path), {})
            if ing in per:
                per[ing][1].append(e.hs)
            else:
                per[ing] = (e, [e.hs])
    out = []
    for cycle, per in sorted(found.items()):
        entries = [(ing, union13(spaces).prune()) for ing, (_e, spaces) in per.items()]
        entries = [(ing, hs) for ing, hs in entries if hs.terms]
        if not entries:
            continue
        e = per[entries[0][0]][0]
        hosts = tuple(dict.fromkeys(h for ing, hs in entries for h in R.hosts_of(a, ing, hs, macs)))
        extra = {"rules": list(e.rule_texts()), "select": bool(e.choices)}
        f = R.loop_finding(view, a, cycle, entries, e.path, hosts, describe, extra)  # type: ignore[arg-type]
        if e.choices:
            f = Finding(f.invariant, f.message + " for one choice of a SELECT group", f.hosts, f.switches, f.details)
        out.append(f)
    return out


# --------------------------------------------------------------------------- blackholes
def blackholes13(view: NetworkView, analysis: object = None, comp: dict[str, int] | None = None,
                 memo: dict[str, dict] | None = None, describe: Callable[[HS13], str] = describe13) -> list[Finding]:
    """One finding per dropping rule (switch, table, rule), whichever hosts send into it.
    ``comp``: :func:`R.components` of ``view``, when the caller has it.  ``memo`` (the
    incremental engine's, kept while only flow tables and groups change): per ingress, the
    drops of its reach (the same reach object: the same drops), and per dropping rule, its
    finding and the very ingresses, events and instructions of their rules it was built from."""
    a = _analysis(view, analysis)
    macs = R.mac_hosts(view)
    comp = R.components(view) if comp is None else comp
    by_ing = {} if memo is None else memo.setdefault("ingress", {})
    texts = RuleTexts()
    groups: dict[tuple[str, str], dict[R.Port, tuple[list[str], list[HS13], list[HsaEvent13]]]] = {}
    for ing in a.ingresses:
        r = a.reaches[ing]
        if not r.drops:
            continue
        hit = by_ing.get(ing)
        items = hit[1] if hit is not None and hit[0] is r else _drops13(a, ing, comp, macs, texts)
        if memo is not None:
            by_ing[ing] = (r, items)
        for key, hs, e in items:
            whys, spaces, evs = groups.setdefault(key, {}).setdefault(ing, ([], [], []))
            if e.why not in whys:
                whys.append(e.why)
            spaces.append(hs)
            evs.append(e)
    old = {} if memo is None else memo.get("rule", {})
    kept: dict = {}
    out = []
    for (sw, rule), per in groups.items():
        if memo is None:
            out.append(_drop_finding13(view, a, sw, rule, per, macs, describe, texts))
            continue
        # the finding reads its events' rules as text: a MODIFY gives a rule new instructions
        # in place, so they are part of what it was built from
        used = [x for ing, (_w, _s, evs) in per.items()
                for x in (ing, *(y for e in evs for y in (e, *(r[2].instructions for r in e.rules))))]
        f = R.memo_hit(old, (sw, rule), used)
        if f is None:
            f = _drop_finding13(view, a, sw, rule, per, macs, describe, texts)
        kept[(sw, rule)] = (used, f)
        out.append(f)
    if memo is not None:
        memo["rule"] = kept
    return out


def _drops13(a: Analysis13, ing: R.Port, comp: dict[str, int], macs: dict[int, str],
             texts: Callable[[str, int, FlowEntry13], str] = rule_text,
             ) -> list[tuple[tuple[str, str], HS13, HsaEvent13]]:
    """An ingress's drops that count, as ((switch, rule), headers that count, event)."""
    cut_off = R.need_not_reach(a, ing, comp, macs)
    out = []
    for e in a.reaches[ing].drops:
        hs = e.hs.minus_values("eth_dst", cut_off).prune()
        if not hs.terms:
            continue
        out.append(((e.where, texts(*e.rules[-1]) if e.rules else e.why), hs, e))
    return out


def _drop_finding13(view: NetworkView, a: Analysis13, sw: str, rule: str,
                    per: dict[R.Port, tuple[list[str], list[HS13], list[HsaEvent13]]],
                    macs: dict[int, str], describe: Callable[[HS13], str] = describe13,
                    texts: RuleTexts | None = None) -> Finding:
    entries = [(ing, union13(spaces)) for ing, (_w, spaces, _e) in per.items()]
    whys = list(dict.fromkeys(w for ws, _s, _e in per.values() for w in ws))
    e = per[entries[0][0]][2][0]
    hops = [f"{s}:{p}" for s, p in e.path]
    hosts = tuple(dict.fromkeys(h for ing, hs in entries for h in R.hosts_of(a, ing, hs, macs)))
    hs = union13(h for _i, h in entries)
    shown_rule = rule.split(": ", 1)[1] if rule.startswith(f"{sw} ") and ": " in rule else rule
    return R.drop_finding(view, a, sw, shown_rule, whys, entries, hops, hosts, describe,  # type: ignore[arg-type]
                          {"rules": list(e.rule_texts()) if texts is None else texts.of(e), "terms": len(hs.terms),
                           "rule_text": rule})


# --------------------------------------------------------------------------- reachability
_INJECTED = HS13.injected()
_NOTHING = HS13()


_IPV4 = wc13(eth_type=0x0800)
_ETH_M = wc13(eth_src=0, eth_dst=0)[1]
_IP_M = wc13(eth_type=0x0800, ipv4_src=0, ipv4_dst=0)[1]
_IP4 = FULL13["ipv4_src"]


def eth_space13(src_mac: int, dst_mac: int) -> HS13:
    """Every header a host can send from ``src_mac`` to ``dst_mac``: a pair's traffic without
    its addresses, of which each term of :func:`pair_space13` is a part of one term.

    ``_INJECTED.intersect_wc`` of the pair's MACs, its terms put together from
    :data:`_ETH_SHAPES` (this runs once per host pair of a check)."""
    w = ((src_mac & _MAC) << _SRC_SH) | ((dst_mac & _MAC) << _DST_SH)
    if _ETH_PLAN is None:
        return _INJECTED.intersect_wc((w, _ETH_M))
    return HS13(based_terms(_ETH_PLAN, w))


def eth_terms13(src_mac: int, dst_macs: Sequence[int]) -> list[tuple[Term, ...]]:
    """``eth_space13(src_mac, d).terms`` of each ``d`` of ``dst_macs`` (a source's peers), built in
    one :func:`based_terms_many` for them all: a full check asks for every pair's, and a call or
    two per pair would cost more than putting its terms together."""
    if _ETH_PLAN is None:
        return [eth_space13(src_mac, d).terms for d in dst_macs]
    s = (src_mac & _MAC) << _SRC_SH
    flat = based_terms_many(_ETH_PLAN, [s | ((d & _MAC) << _DST_SH) for d in dst_macs])
    n = len(_ETH_PLAN[1])   # (one term per shape and pair)
    return [tuple(flat[j:j + n]) for j in range(0, len(flat), n)]


def _eth_shapes() -> list[Shape] | None:
    """The injected terms as ``make_term`` clips them to any pair's MACs: (base value, base mask
    with the MACs', the differences as (value, mask with the base's and the MACs'), whether two
    of them can become equal with some pair's MACs (make_term then keeps the first), and
    the differences as a pair when they are two that cannot (:func:`as_pair`)).  The
    injected headers fix no MAC and their differences test none (they are about tags and
    ethertypes), so every difference meets every pair's part of its term and clips the same
    way; None (the general intersection) if that ever stops being so."""
    out: list[Shape] = []
    for v, m, ds in _INJECTED.terms:
        if v & ~m or m & _ETH_M:
            return None
        nm = m | _ETH_M
        kept = []
        for dv, dm in ds:
            if (dv ^ v) & dm & m:
                continue   # misses the base: misses every part of it
            cm = dm | nm
            if dm & _ETH_M & ~m or cm == nm:
                return None
            kept.append((dv, cm))
        repeat = len(kept) > 1 and diffs_may_repeat(kept, v | _ETH_M)
        out.append((v, nm, tuple(kept), repeat, None if repeat else as_pair(kept)))
    return out


_ETH_SHAPES = _eth_shapes()
_ETH_PLAN = None if _ETH_SHAPES is None else plan_of(_ETH_SHAPES)


def pair_space13(src_mac: int, dst_mac: int, src_ip: int | None = None, dst_ip: int | None = None,
                 eth: HS13 | None = None) -> HS13:
    """A host pair's traffic (as for 1.0): their MACs and, for IPv4, their addresses (the
    wildcards ``wc13`` would make, put together here: this runs once per pair).  ``eth``:
    :func:`eth_space13` of the pair, when the caller has it."""
    if eth is None:
        eth = eth_space13(src_mac, dst_mac)
    if src_ip is None or dst_ip is None:
        return eth
    ip = eth.intersect_wc((_IPV4[0] | ((src_ip & _IP4) << _IPS_SH) | ((dst_ip & _IP4) << _IPD_SH), _IP_M))
    return ip | eth.minus_wc(_IPV4)


class _ByDst:
    """The terms of some events indexed by the eth_dst they fix (most do, past the first
    rule), so each destination looks only at its own and at the unfixed ones."""

    def __init__(self, events: list[HsaEvent13]) -> None:
        self.fixed: dict[int, list[tuple[int, Term]]] = defaultdict(list)
        self.loose: list[tuple[int, Term]] = []
        self._loose: list[tuple[Term, list, dict[int, list]]] | None = None   # see narrowed
        self.events = events
        for n, e in enumerate(events):
            for t in e.hs.terms:
                if t[1] & _DST_FULL == _DST_FULL:
                    self.fixed[(t[0] >> _DST_SH) & _MAC].append((n, t))
                else:
                    self.loose.append((n, t))

    def hits(self, dst_mac: int) -> list[tuple[int, Term]]:
        return self.fixed.get(dst_mac, []) + self.loose

    def hit_terms(self, dst_mac: int) -> list[Term]:
        """The terms of :meth:`hits`."""
        return [t for _n, t in self.fixed.get(dst_mac, ())] + [t for _n, t in self.loose]

    def narrowed(self, dst_mac: int) -> list[Term]:
        """The terms of :meth:`hits`, each unfixed one without the differences that fix another
        eth_dst: meeting a space that fixes ``dst_mac`` drops them anyway (``make_term``), and
        an unfixed term (a table's misses, say) can carry one per destination of the table."""
        out = [t for _n, t in self.fixed.get(dst_mac, ())]
        if self._loose is None:
            self._loose = [_split_diffs(t) for _n, t in self.loose]
        for t, other, by in self._loose:
            mine = by.get(dst_mac)
            if mine is None:
                out.append(t)   # (the term without the differences that fix an eth_dst, when it has any)
            else:
                out.append((t[0], t[1], tuple(d for _i, d in sorted(other + mine))))
        return out

    def events_for(self, dst_mac: int) -> list[HsaEvent13]:
        """The events cut down to their terms that can hold headers sent to ``dst_mac``."""
        by_event: dict[int, list[Term]] = defaultdict(list)
        for n, t in self.hits(dst_mac):
            by_event[n].append(t)
        out = []
        for n, terms in by_event.items():
            e = self.events[n]
            out.append(HsaEvent13(HS13(terms), e.where, e.path, e.rules, e.choices, e.why))
        return out


def _split_diffs(t: Term) -> tuple[Term, list[tuple[int, Any]], dict[int, list[tuple[int, Any]]]]:
    """The term without its differences that fix an eth_dst (``t`` itself when it has none), its
    differences (numbered, to keep their order) that fix no eth_dst, and the others by the
    eth_dst they fix."""
    other: list[tuple[int, Any]] = []
    by: dict[int, list[tuple[int, Any]]] = {}
    for i, d in enumerate(t[2]):
        if d[1] & _DST_FULL == _DST_FULL:
            by.setdefault((d[0] >> _DST_SH) & _MAC, []).append((i, d))
        else:
            other.append((i, d))
    return (t[0], t[1], tuple(d for _i, d in other)) if by else t, other, by


def _good(indexes: tuple[_ByDst, ...], dst_mac: int, alts: dict[int, int]) -> HS13:
    """Headers to ``dst_mac`` for which some indexed event happens whatever SELECT chooses
    (without SELECT groups, as far as the pair's space, which fixes ``dst_mac``, is concerned)."""
    if not alts:
        return HS13(t for idx in indexes for t in idx.narrowed(dst_mac))
    return must_hold([e for idx in indexes for e in idx.events_for(dst_mac)], alts)


def reachability13(view: NetworkView, analysis: object = None, comp: dict[str, int] | None = None,
                   describe: Callable[[HS13], str] = describe13) -> list[Finding]:
    """Unreachable host pairs, grouped by cause.  ``comp``: :func:`R.components` of ``view``,
    when the caller has it."""
    a = _analysis(view, analysis)
    comp = R.components(view) if comp is None else comp
    members = R.hosts_by_component(view, comp)
    ok = R.controller_checker(view)

    out: list[Finding] = []
    with gc_paused():   # a header set per host pair and a few findings: no cycles to collect
        for src in view.topology.hosts:
            loc = R.host_location(view, src.name)
            r = a.reaches.get(loc)
            if r is None or view.peer(*loc) is None:
                continue
            # pairs the controller's own config keeps apart on purpose (policy/intent.py) are not asked to reach
            peers = [d for d in members[comp.get(src.name, -1)] if (src.name, d.name) not in view.separated]
            # The findings of one source depend on its reach, its peers and which of the switches
            # it punts at have a live controller: a repeated check on unchanged tables reuses them.
            key = (loc, src.name, src.mac, src.ip, tuple((d.name, d.mac, d.ip) for d in peers),
                   tuple((sw, ok(sw)) for sw in sorted(r.punted)))
            hit = r.memo.get(key)
            if hit is None:
                hit = r.memo[key] = source_pairs13(r, loc, src, peers, ok, describe=describe)
            out.extend(hit)
        return R.group_unreachable(view, a, out, describe)  # type: ignore[arg-type]


def source_pairs13(r: Reach13, loc: R.Port, src: Any, peers: list[Any], ok: Callable[[str], bool],
                   memo: dict[str, Any] | None = None, only: set[str] | None = None,
                   describe: Callable[[HS13], str] = describe13) -> list[Finding]:
    """The unreachable pairs of one source (before grouping), judged from its reach ``r``.

    ``memo`` (the incremental engine's, kept per source between calls): without SELECT
    groups a pair's verdict depends only on the terms of its deliveries and of the punts
    and drops on purpose that can hold its headers, so a pair that reached last time and
    whose terms are equal now is not judged again; a pair that failed is, since its
    reason reads the whole reach.  ``only``: the destinations whose terms may have changed
    since the memo was written (None: any); the others that reached still do."""
    punts = _ByDst([e for sw, evs in sorted(r.punted.items()) if ok(sw) for e in evs]
                   + [e for _sw, evs in sorted(r.filtered.items()) for e in evs])
    mine: list[Finding] = []
    loose = tuple(t for _n, t in punts.loose)
    fixed = punts.fixed
    # every pair's terms at once in a full check (with a memo, most pairs are not judged again)
    eths = eth_terms13(src.mac, [d.mac for d in peers]) if memo is None else None
    for j, dst in enumerate(peers):
        if dst is src:
            continue
        key = None
        if memo is not None and not r.alts:
            if only is not None and dst.name not in only:
                last = memo.get(dst.name)
                if last is not None and last[1] is None:
                    continue
            key = (tuple(t for e in r.delivered.get(dst.name, ()) for t in e.hs.terms),
                   tuple(t for _n, t in fixed.get(dst.mac, ())), loose)
            last = memo.get(dst.name)
            if last is not None and last[0] == key:
                if last[1] is None:
                    continue  # reached last time, and its headers end as they did
                f, w, why = last[1]  # the same headers fail: the same finding if their reason is too
                if _why_unreached(r, w, ok) == why:
                    mine.append(f)
                    continue
        # the usual verdict first, on the pair's MACs alone: the pair's space lies in them, term
        # by term, so what covers them covers it (and the exact subtraction would find nothing)
        terms = eth_space13(src.mac, dst.mac).terms if eths is None else eths[j]
        if _delivered_whole(r, dst.name, terms):
            bad = _NOTHING
        else:
            P = pair_space13(src.mac, dst.mac, src.ip, dst.ip, HS13(terms))
            bad = _NOTHING if _delivered_whole(r, dst.name, P.terms) else _unreached(r, dst, P, punts)
        if not bad.terms:
            if memo is not None:
                memo[dst.name] = (key, None)
            continue
        w = bad.witness()
        reason = _why_unreached(r, w, ok)
        why, where, path = reason
        bad_text = describe(bad)
        # (bad with P's very terms: all of P, without the subtraction)
        every = bad.terms == P.terms or (P - bad).prune().terms == ()
        text = "all their traffic" if every else f"headers {bad_text}"
        via = f" (path {' -> '.join(path)})" if path else ""
        f = Finding("reachability", f"{src.name} cannot reach {dst.name}: {text}: {why}{via}",
                    hosts=(src.name, dst.name), switches=where,
                    details={"ingress": f"{loc[0]}:{loc[1]}", "header_space": bad_text,
                             "path": path, "cause": why, "all": text == "all their traffic",
                             "witness": None if w is None else bad.header_fields(w), R.SPACE: bad})
        if memo is not None:
            memo[dst.name] = (key, (f, w, reason))
        mine.append(f)
    return mine


def _delivered_whole(r: Reach13, dst: str, P: Sequence[Term]) -> bool:
    """Whether, without SELECT groups, every term of the pair's space ``P`` (its terms) lies in one term
    delivered to ``dst`` (the usual verdict, which then costs neither the index of what
    reaches nor a subtraction: what :func:`_good` gathers holds those terms, or wider ones)."""
    if r.alts:
        return False
    evs = r.delivered.get(dst)
    if not evs:
        return False
    if len(evs) == 1:   # (one delivery, most often of the very terms of P: one comparison of them all)
        got = evs[0].hs.terms
        return bool(got) and (got == P or _covered(P, got))
    terms = [t for e in evs for t in e.hs.terms]
    return bool(terms) and _covered(P, terms)


def _unreached(r: Reach13, dst: Any, P: HS13, punts: _ByDst) -> HS13:
    """The headers of the pair's space ``P`` that reach ``dst`` for no choice of SELECT groups
    (nor go to a live controller or a drop on purpose); empty terms left out."""
    evs = r.delivered.get(dst.name, [])
    if r.alts:
        good = _good((_ByDst(evs), punts), dst.mac, r.alts)
        if _covered(P.terms, good.terms):
            return _NOTHING
    else:
        # the usual verdict, every pair's header in one term of what reaches, costs no subtraction
        # nor the narrowed terms of _good: P's terms fix dst_mac, so a difference that fixes another
        # eth_dst misses them and term_covers passes over it, as if it were narrowed away
        if _covered(P.terms, [t for e in evs for t in e.hs.terms] + punts.hit_terms(dst.mac)):
            return _NOTHING
        good = _good((_ByDst(evs), punts), dst.mac, r.alts)
    return (P - good.clip_to(P)).prune()


def _covered(P: Sequence[Term], terms: Sequence[Term]) -> bool:
    """Whether each term of ``P`` (a space's terms) lies in one of ``terms``, as :func:`term_covers`
    tells (True is right).  A term equal to one of ``terms`` is found by comparing first: a pair's
    class of headers, split off at its first hop and delivered whole, has the very terms of the
    pair's space."""
    for t in P:   # (a loop, not all() of a generator: this runs for every host pair)
        if t in terms:
            continue
        for g in terms:
            if term_covers(g, t):
                break
        else:
            return False
    return True


def _why_unreached(r: Reach13, w: int | None, ok: Callable[[str], bool]) -> tuple[str, tuple[str, ...], list[str]]:
    """Why one header of the pair's traffic (``w``) fails: (reason, switches, path)."""
    if w is None:
        return "they are lost", (), []

    def has(e: HsaEvent13) -> bool:
        return e.hs.contains(w)

    for e in r.loops:
        if has(e):
            return ("they loop", R.cycle_of(e.path),
                    [f"{s}:{p}" for s, p in e.path])
    for e in r.drops:
        if has(e):
            sel = " for some choice of a SELECT group" if e.choices else ""
            return (f"they are dropped at {e.where}{sel} ({e.why})", (e.where,), [f"{s}:{p}" for s, p in e.path])
    bad = [sw for sw, evs in sorted(r.punted.items()) if not ok(sw) and any(has(e) for e in evs)]
    if bad:
        return f"they go to a controller that is not connected ({', '.join(bad)})", tuple(bad), []
    if r.truncated:
        return "the analysis gave up (too many hops)", (), []
    hosts = sorted(h for h, evs in r.delivered.items() if any(has(e) for e in evs))
    return f"they are delivered to {', '.join(hosts) or 'nobody'}", (), []


def check_all13(view: NetworkView, **kw: Any) -> dict[str, list[Finding]]:
    with gc_paused():   # the checks make many small objects too (see gc_paused)
        a = analyze13(view, **kw)
        comp = R.components(view)
        describe = Describer()
        return {"loops": loops13(view, a, describe), "blackholes": blackholes13(view, a, comp, describe=describe),
                "reachability": reachability13(view, a, comp, describe)}
