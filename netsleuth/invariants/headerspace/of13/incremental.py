"""Loops, blackholes and reachability on OpenFlow 1.3 pipelines, kept up to date message by message.

A full 1.3 check (:func:`~netsleuth.invariants.headerspace.of13.checks.check_all13`)
pushes every header a host can send in at every ingress and follows it
through tables, goto-table chains, action sets and groups.  After one
FLOW_MOD, GROUP_MOD or METER_MOD almost all of that is as before: a message
changes what one switch does, and only for some headers.  So, as the 1.0
:class:`~netsleuth.invariants.headerspace.incremental.IncrementalHSA` does with its
header classes, :class:`IncrementalHSA13` keeps each ingress's exploration as a
tree of hops (``tree.py``) with what every hop read, and after a message
re-runs only the hops it can change:

* a FLOW_MOD (table T, match M; any table for OFPTT_ALL): the hops at its
  switch with a lookup in T whose injected headers, seen through the hop's
  current-header mapping, in_port, metadata and tunnel_id, overlap M.  Every
  entry an add, modify or delete (strict or not) touches lies inside M, so
  no other header's lookup can come out differently;
* a GROUP_MOD: the hops at its switch that executed the group (a missing
  group is noted too: adding it changes them) or hit an entry naming it (a
  DELETE removes such entries);
* anything the engine cannot bound this way (a METER_MOD, whose DELETE removes
  the flows that use the meter; a message whose table or match is not known):
  every hop at the switch.

A re-run hop's subtree is rebuilt; every other subtree keeps its events (the
same objects), and an ingress's results are its tree read in explore13's
order.  The checks are then redone only where they can change: loops and
blackholes when a changed ingress has some before or after, reachability per
source (and, within a source, per destination whose deliveries and punts are
not the same objects as before).  Anything but a flow table or a group
changing (links, switches, ports, controllers, hosts) makes :meth:`check`
start over; so do a SELECT group (its choices are numbered across the whole
analysis) and an ingress past the hop budget, for which every message runs a
full check.  The property test holds the findings, in order and in every
detail, to a full check's after every message.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from os_ken.ofproto import ofproto_v1_3 as ofp

from netsleuth.gcpause import gc_paused
from netsleuth.invariants.forwarding import Finding
from netsleuth.invariants.headerspace import report as R
from netsleuth.invariants.headerspace.ingress import ingress_points
from netsleuth.invariants.headerspace.of13 import checks as C13
from netsleuth.invariants.headerspace.of13.engine import (
    DEFAULT_BUDGET13,
    Analysis13,
    Net13,
    Reach13,
    pipeline13_of,
)
from netsleuth.invariants.headerspace.of13.space import HS13
from netsleuth.invariants.headerspace.of13.switch13 import Compiled13, _translate
from netsleuth.invariants.headerspace.of13.symbolic import IDENTITY
from netsleuth.invariants.headerspace.of13.tableviews import LiveCompiled
from netsleuth.invariants.headerspace.of13.tree import ExplorationHop, Lookup, OverBudget, dst_of, reach_of
from netsleuth.invariants.view import NetworkView
from netsleuth.model.of13.headerbits import FULL13, SHIFT13
from netsleuth.model.of13.oxm import OxmMatch

KINDS = ("loops", "blackholes", "reachability")
_DST_SH = SHIFT13["eth_dst"]
_DST_FULL = FULL13["eth_dst"] << _DST_SH
_MAC = FULL13["eth_dst"]
ALL_TABLES = ofp.OFPTT_ALL


class _Net(Net13):
    """The engine's compiled pipelines, kept across messages: a FLOW_MOD brings the views of
    the tables it wrote up to date (see :class:`LiveCompiled`), nothing else is recompiled."""

    def compiled(self, name: str) -> Compiled13:
        c = self._comp.get(name)
        if c is None:
            pipe = pipeline13_of(self.view, name)
            if pipe is None:
                return super().compiled(name)  # raises the engine's error for a 1.0 switch
            c = self._comp[name] = LiveCompiled(pipe)
        return c

    def forget(self, name: str, table_id: int | None) -> None:
        """Bring what was compiled of ``name``'s table ``table_id`` (None or OFPTT_ALL: of every
        table) up to its entries."""
        c = self._comp.get(name)
        if not isinstance(c, LiveCompiled):
            return
        c.sync(None if table_id is None or table_id == ALL_TABLES else table_id)


class _Match:
    """A match where ``_translate`` expects a flow entry."""

    __slots__ = ("match",)

    def __init__(self, match: OxmMatch) -> None:
        self.match = match


def _punts(r: Reach13, ok: Any) -> list[Any]:
    """The events reachability13 counts as punted or dropped on purpose, in its order."""
    return ([e for sw, evs in sorted(r.punted.items()) if ok(sw) for e in evs]
            + [e for _sw, evs in sorted(r.filtered.items()) for e in evs])


def _moved_dsts(old: Reach13, new: Reach13, ok: Any, by_mac: dict[int, list[str]]) -> set[str] | None:
    """The hosts whose pair verdicts from this source may differ between two reaches of one
    ingress (None: any).  Events of subtrees that were not re-run are the same objects, so a
    delivery list that is not the same objects moved; the punts (and drops on purpose) moved
    where their terms differ, and a term tells which destinations it concerns: the eth_dst it
    fixes, or, for a term that fixes none (the headers a table misses, say), the eth_dst of
    each difference it gained or lost (any, when a difference fixes none)."""
    p_old, p_new = _punts(old, ok), _punts(new, ok)
    macs: set[int] = set()
    if not _same(p_old, p_new):
        # the terms of the events only one side has: a superset of the terms only one side has
        # (an event kept is the same object on both sides), at a fraction of the hashing
        i_old, i_new = {id(e) for e in p_old}, {id(e) for e in p_new}
        t_old = {t for e in p_old if id(e) not in i_new for t in e.hs.terms}
        t_new = {t for e in p_new if id(e) not in i_old for t in e.hs.terms}
        loose: dict[tuple[int, int], list[Any]] = {}
        for t in t_old ^ t_new:
            if t[1] & _DST_FULL == _DST_FULL:
                macs.add((t[0] >> _DST_SH) & _MAC)
            else:
                loose.setdefault((t[0], t[1]), []).append(t)
        for ts in loose.values():
            if len(ts) != 2:
                return None   # headers appeared or went, not just a difference
            for d in set(ts[0][2]) ^ set(ts[1][2]):
                if d[1] & _DST_FULL != _DST_FULL:
                    return None
                macs.add((d[0] >> _DST_SH) & _MAC)
    out = {d for d in set(old.delivered) | set(new.delivered) if not _same(old.delivered.get(d), new.delivered.get(d))}
    for mac in macs:
        out.update(by_mac.get(mac, ()))
    return out


def _same(a: list | None, b: list | None) -> bool:
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _depth(h: ExplorationHop) -> int:
    return len(h.item[4])


def _item_key(item: tuple) -> tuple:
    """A pushed hop's input, compared by value (entries by identity: a MODIFY keeps the entry)."""
    s, p, orig, sym, path, rules, choices = item
    return (s, p, tuple(orig.terms), sym.key, path, tuple((sw, t, id(e)) for sw, t, e in rules), choices)


class IncrementalHSA13:
    """The three header-space checks of a network of 1.3 pipelines, updated per message.

    :meth:`check` for a view (a full check the first time and whenever anything but flow
    tables and groups changed); :meth:`flow_mod`, :meth:`group_mod` and :meth:`meter_mod`
    after each message a switch applied.  All return the findings as ``check_all13`` lists
    them."""

    def __init__(self, budget: int = DEFAULT_BUDGET13) -> None:
        self.budget = budget
        self.view: NetworkView | None = None
        self._state: tuple | None = None
        self._counts: dict[str, tuple[int, int]] | None = None
        self._pipe_ids: dict[str, int] = {}
        self._whole = False               # SELECT groups or a truncated ingress: full checks
        self._found: dict[str, list[Finding]] = {k: [] for k in KINDS}
        self.full_checks = 0
        self.partial_checks = 0
        self.rerun = 0                    # hops run again, over all messages

    # ------------------------------------------------------------------ public
    def check(self, view: NetworkView) -> dict[str, list[Finding]]:
        """The findings for ``view``: a full check unless only the messages reported here
        changed the network since the last call."""
        if self.view is None or self._state_of(view) != self._state or self._counts_of(view) != self._counts:
            with gc_paused():   # the trees' hops point to their parents: the collector would scan them all, often
                self._full(view)
        elif self._whole:
            self._found = C13.check_all13(view)
        return self.findings()

    def flow_mod(self, view: NetworkView, switch: str, table_id: int | None,
                 match: OxmMatch | None) -> dict[str, list[Finding]]:
        """After a FLOW_MOD on ``switch`` (its table, OFPTT_ALL, or None when not known, and its
        match, None when not known)."""
        if table_id is not None and table_id != ALL_TABLES and match is not None:
            return self._message(view, switch, table_id, lambda: self._overlapping(switch, table_id, match))
        return self._message(view, switch, None, lambda: self._all_at(switch))

    def group_mod(self, view: NetworkView, switch: str, group_id: int | None, delete: bool) -> dict[str, list[Finding]]:
        """After a GROUP_MOD on ``switch``: the hops that ran the group or hit an entry naming it
        (a DELETE also removes those entries, so the switch's tables are read again)."""
        if group_id is None:
            return self._message(view, switch, None, lambda: self._all_at(switch))
        return self._message(view, switch, None if delete else -1, lambda: self._using_group(switch, group_id))

    def meter_mod(self, view: NetworkView, switch: str) -> dict[str, list[Finding]]:
        """After a METER_MOD on ``switch``: meters are not modelled, but a DELETE removes the
        flows that use the meter, so every hop at the switch is re-examined."""
        return self._message(view, switch, None, lambda: self._all_at(switch))

    def findings(self) -> dict[str, list[Finding]]:
        return {k: list(v) for k, v in self._found.items()}

    def analysis(self, view: NetworkView) -> Analysis13 | None:
        """The current analysis for ``view`` (what the other 1.3 checks read), or None in the
        full-check mode."""
        if self._whole or self.view is None:
            return None
        return Analysis13(view, list(self._ingresses), dict(self._ingress_host),
                          dict(zip(self._ingresses, self._reaches, strict=True)))

    # ------------------------------------------------------------------ state
    @staticmethod
    def _state_of(view: NetworkView) -> tuple:
        """Everything but flow tables and groups that the results depend on."""
        pipes = []
        for n in sorted(view.switches):
            p = pipeline13_of(view, n)
            pipes.append((n, id(p), None if p is None else tuple(sorted(p.ports.items()))))
        return (id(view.topology), tuple(sorted(view.link_up.items())),
                tuple(sorted(view.controllers_alive.items())), tuple(sorted(view.connected_dpids)),
                tuple(sorted((n, view.is_switch_up(n)) for n in view.switches)),
                tuple(sorted((k, tuple(v)) for k, v in view.controllers_of.items())),
                tuple(sorted(view.host_at.items())), tuple(sorted(view.separated)), tuple(sorted(view.cut_from)),
                tuple(pipes))

    @staticmethod
    def _counts_of(view: NetworkView) -> dict[str, tuple[int, int]]:
        """Entries and groups per switch: between two messages reported here a table changes only
        by entries expiring (fewer of them), which a full check then takes in."""
        out = {}
        for n in sorted(view.switches):
            p = pipeline13_of(view, n)
            out[n] = (0, 0) if p is None else (len(p.tables), len(p.groups.groups))
        return out

    def _note_counts(self, view: NetworkView, switch: str) -> None:
        p = pipeline13_of(view, switch)
        assert self._counts is not None and p is not None
        self._counts[switch] = (len(p.tables), len(p.groups.groups))

    def _full(self, view: NetworkView) -> None:
        self.full_checks += 1
        self.view = view
        self._state = self._state_of(view)
        self._counts = self._counts_of(view)
        self._pipe_ids = {n: id(pipeline13_of(view, n)) for n in view.switches}
        self._whole = False
        points = ingress_points(view, "hosts")
        self._ingresses = list(points)
        self._ingress_host = {k: v for k, v in points.items() if v is not None}
        net = self._net = _Net(view)
        self._alts: list[dict[int, int]] = []
        self._roots: list[ExplorationHop] = []
        # per switch, per (table, injected eth_dst or None), per in_port: the lookups made there
        self._at: dict[str, dict[tuple[int, int | None], dict[int, list[tuple[ExplorationHop, Lookup]]]]] = {}
        self._hops_at: dict[str, list[ExplorationHop]] = {}
        self._groups_at: dict[str, dict[int, list[ExplorationHop]]] = {}
        self._filed: dict[str, int] = {}
        self._dead: dict[str, int] = {}
        try:
            for n, ing in enumerate(self._ingresses):
                root = ExplorationHop((ing[0], ing[1], HS13.injected(), IDENTITY, (), (), ()), n, None)
                alts: dict[int, int] = {}
                self._index(root.grow(net, alts, self.budget))
                self._roots.append(root)
                self._alts.append(alts)
                if alts:
                    raise OverBudget  # SELECT choices are numbered across ingresses: check whole
        except OverBudget:
            self._whole = True
            self._found = C13.check_all13(view)
            return
        self._reaches = [reach_of(root, ing, alts) for root, ing, alts
                         in zip(self._roots, self._ingresses, self._alts, strict=True)]
        a = self.analysis(view)
        comp = R.components(view)
        members = R.hosts_by_component(view, comp)
        self._ok = R.controller_checker(view)
        at = {ing: n for n, ing in enumerate(self._ingresses)}
        # per source of reachability13: (host, ingress, ingress number, peers), its memo and its pairs
        self._sources: list[tuple[Any, tuple[str, int], int, list[Any]]] = []
        for src in view.topology.hosts:
            loc = R.host_location(view, src.name)
            if loc not in at or view.peer(*loc) is None:
                continue
            peers = [d for d in members[comp.get(src.name, -1)] if (src.name, d.name) not in view.separated]
            self._sources.append((src, loc, at[loc], peers))
        self._memos: list[dict] = [{} for _ in self._sources]
        self._pairs: list[list[Finding]] = [[] for _ in self._sources]
        self._group_memo: dict = {}
        self._by_mac: dict[int, list[str]] = {}
        for h in view.topology.hosts:
            self._by_mac.setdefault(h.mac, []).append(h.name)
        assert a is not None
        self._comp = comp
        self._bh_memo: dict[str, dict] = {}
        self._found = {"loops": C13.loops13(view, a), "blackholes": C13.blackholes13(view, a, comp, self._bh_memo),
                       "reachability": []}
        self._recheck_pairs(view, a, range(len(self._sources)))

    # ------------------------------------------------------------------ the index
    def _index(self, hops: Iterable[ExplorationHop]) -> None:
        """File the lookups and groups of freshly run hops by switch."""
        dsts: dict[int, tuple[Any, Any, int | None]] = {}   # per header set (a class keeps it from hop to hop)
        for h in hops:
            if not h.lookups and not h.groups:
                continue
            s = h.switch
            self._hops_at.setdefault(s, []).append(h)
            by = self._at.get(s)
            if by is None:
                by = self._at[s] = {}
            for lk in h.lookups:
                got = dsts.get(id(lk[1]))
                if got is None or got[0] is not lk[1] or got[1] is not lk[2]:
                    got = dsts[id(lk[1])] = (lk[1], lk[2], dst_of(lk))
                key = (lk[0], got[2])
                per_port = by.get(key)
                if per_port is None:
                    per_port = by[key] = {}
                filed = per_port.get(lk[3])
                if filed is None:
                    per_port[lk[3]] = [(h, lk)]
                else:
                    filed.append((h, lk))
            for g in h.groups:
                self._groups_at.setdefault(s, {}).setdefault(g, []).append(h)
            self._filed[s] = self._filed.get(s, 0) + 1

    def _compact(self, s: str) -> None:
        """Drop the dead hops' entries at ``s`` once they outnumber the live ones."""
        if self._dead.get(s, 0) * 2 <= self._filed.get(s, 0) + 64:
            return
        live = [h for h in self._hops_at.get(s, ()) if h.alive]
        self._dead[s] = 0
        self._hops_at.pop(s, None)
        self._at.pop(s, None)
        self._groups_at.pop(s, None)
        self._filed[s] = 0
        self._index(live)

    def _died(self, hops: list[ExplorationHop]) -> None:
        """Mark hops dead and count the index entries they leave behind, per switch.  A dead hop
        lets go of its parent, so the hops cut off make no parent/kids cycle: they are freed when
        the index lets go of them, not left to a full garbage collection."""
        dead = self._dead
        for h in hops:
            h.alive = False
            h.parent = None
            if h.lookups or h.groups:
                dead[h.switch] = dead.get(h.switch, 0) + 1

    def _all_at(self, s: str) -> list[ExplorationHop]:
        return [h for h in self._hops_at.get(s, ()) if h.alive]

    def _using_group(self, s: str, group_id: int) -> list[ExplorationHop]:
        return [h for h in self._groups_at.get(s, {}).get(group_id, ()) if h.alive]

    def _overlapping(self, s: str, table_id: int, match: OxmMatch) -> list[ExplorationHop]:
        """The live hops at ``s`` with a lookup in ``table_id`` whose headers ``match`` can take."""
        by = self._at.get(s)
        if not by:
            return []
        dst, port = match.exact_value("eth_dst"), match.exact_value("in_port")
        keys = [(table_id, dst), (table_id, None)] if dst is not None else [k for k in by if k[0] == table_id]
        lists: list[Iterable[tuple[ExplorationHop, Lookup]]] = []
        for k in keys:
            per_port = by.get(k)
            if per_port:   # a match with an in_port takes only the lookups on that port
                lists.extend(per_port.values() if port is None else [per_port.get(port, ())])
        entry = _Match(match)
        seen: dict[tuple, tuple[int, int] | None] = {}
        out: list[ExplorationHop] = []
        marked: set[int] = set()
        for lst in lists:
            for h, lk in lst:
                if not h.alive or id(h) in marked:
                    continue
                _t, orig, sym, in_port, md, tid = lk
                key = (sym.key, in_port, md, tid)
                if key in seen:
                    w = seen[key]
                else:
                    w = seen[key] = _translate(entry, sym, in_port, md, tid)  # type: ignore[arg-type]
                if w is None:
                    continue
                wv, wm = w
                if any(not ((v ^ wv) & m & wm) for v, m, _d in orig.terms):
                    marked.add(id(h))
                    out.append(h)
        return out

    # ------------------------------------------------------------------ one message
    def _message(self, view: NetworkView, switch: str, table_id: int | None,
                 affected: Any) -> dict[str, list[Finding]]:
        # the caller reports every message; anything else is for check() (one cheap guard here)
        if self.view is None or id(pipeline13_of(view, switch)) != self._pipe_ids.get(switch):
            self._full(view)
            return self.findings()
        self._note_counts(view, switch)
        if self._whole:
            self._found = C13.check_all13(view)
            return self.findings()
        self.view = view
        self.partial_checks += 1
        self._net.renew(view)
        if table_id != -1:
            self._net.forget(switch, table_id)
        hops: list[ExplorationHop] = affected()
        changed = self._rerun(hops)
        if changed is None:   # past the budget or a SELECT group: full checks from now on
            self._whole = True
            self._found = C13.check_all13(view)
            return self.findings()
        self._compact(switch)
        if changed:
            self._recheck(view, changed)
        return self.findings()

    def _rerun(self, hops: list[ExplorationHop]) -> list[int] | None:
        """Run ``hops`` again, ancestors first; the ingress numbers whose results may have
        changed (None: an ingress went past the budget or met a SELECT group)."""
        ings: dict[int, None] = {}
        try:
            for old in sorted(hops, key=_depth):
                if old.alive:   # not in a subtree an ancestor's re-run replaced
                    self._rerun_one(old)
                    ings[old.ing] = None
        except OverBudget:
            return None
        changed = sorted(ings)
        for n in changed:
            root = self._roots[n]
            root.flat()
            if self._alts[n] or root.size > self.budget:
                return None
        return changed

    def _rerun_one(self, old: ExplorationHop) -> None:
        """Replace ``old`` by a fresh run of the same hop.  A hop it pushes that equals one the
        old run pushed keeps that hop's subtree (whatever in it the message can change is
        among the hops being re-run too); the others are grown anew."""
        h = ExplorationHop(old.item, old.ing, old.parent)
        if old.parent is None:
            self._roots[old.ing] = h
        else:
            kids = old.parent.kids
            kids[next(i for i, k in enumerate(kids) if k is old)] = h
        self._died([old])
        alts = self._alts[h.ing]
        h.run(self._net, alts)
        reuse: dict[tuple, list[ExplorationHop]] = {}
        for k in old.kids:
            reuse.setdefault(_item_key(k.item), []).append(k)
        ran = [h]
        for i, k in enumerate(h.kids):
            same = reuse.get(_item_key(k.item))
            if same:
                kept = h.kids[i] = same.pop(0)
                kept.parent = h
                continue
            ran += k.grow(self._net, alts, self.budget)
        for left in reuse.values():
            for k in left:
                self._died([k, *k.kill()])
        self.rerun += len(ran)
        self._index(ran)
        h.dirty()

    def _recheck(self, view: NetworkView, changed: list[int]) -> None:
        """Redo the checks where the re-run ingresses can change them."""
        old = {n: self._reaches[n] for n in changed}
        for n in changed:
            self._reaches[n] = reach_of(self._roots[n], self._ingresses[n], self._alts[n])
        a = self.analysis(view)
        assert a is not None
        if any(old[n].loops or self._reaches[n].loops for n in changed):
            self._found["loops"] = C13.loops13(view, a)
        if any(old[n].drops or self._reaches[n].drops for n in changed):
            self._found["blackholes"] = C13.blackholes13(view, a, self._comp, self._bh_memo)
        want = set(changed)
        self._recheck_pairs(view, a, [i for i, s in enumerate(self._sources) if s[2] in want], old)

    def _recheck_pairs(self, view: NetworkView, a: Analysis13, which: Iterable[int],
                       old: dict[int, Reach13] | None = None) -> None:
        """Judge the pairs of the sources ``which`` again and group every source's, as
        reachability13 does (``old``: the reaches before, to tell which destinations moved)."""
        moved = False
        for i in which:
            src, loc, n, peers = self._sources[i]
            r: Reach13 = self._reaches[n]
            only = None if old is None else _moved_dsts(old[n], r, self._ok, self._by_mac)
            got = C13.source_pairs13(r, loc, src, peers, self._ok, self._memos[i], only)
            if got or self._pairs[i]:
                moved = True
            self._pairs[i] = got
        if moved:
            out = [f for lst in self._pairs for f in lst]
            self._found["reachability"] = R.group_unreachable(view, a, out, C13.describe13,  # type: ignore[arg-type]
                                                              self._group_memo)


def message_target(msg: Any) -> tuple[str, int | None, Any]:
    """What an os-ken 1.3 message tells the engine: ("flow", table_id, OxmMatch | None),
    ("group", group_id, is_delete) or ("meter", None, None)."""
    name = type(msg).__name__
    if name == "OFPFlowMod":
        try:
            match = OxmMatch.from_ofp(msg.match)
        except Exception:  # noqa: BLE001 -- a match the model cannot read: every hop at the switch
            match = None
        return ("flow", getattr(msg, "table_id", None), match)
    if name == "OFPGroupMod":
        return ("group", getattr(msg, "group_id", None), getattr(msg, "command", None) == ofp.OFPGC_DELETE)
    return ("meter", None, None)


def apply_message(inc: IncrementalHSA13, view: NetworkView, switch: str, msg: Any) -> dict[str, list[Finding]]:
    """Feed one applied 1.3 message to ``inc`` (see :func:`message_target`)."""
    kind, x, y = message_target(msg)
    if kind == "flow":
        return inc.flow_mod(view, switch, x, y)
    if kind == "group":
        return inc.group_mod(view, switch, x, bool(y))
    return inc.meter_mod(view, switch)

