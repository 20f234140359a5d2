"""Loops, blackholes and reachability kept up to date flow_mod by flow_mod (OpenFlow 1.0).

A full check (:func:`~netsleuth.invariants.headerspace.engine.analyze` and the three
checks of :mod:`~netsleuth.invariants.headerspace.checks`) pushes every header in at
every ingress.  After one flow_mod almost all of that work is the same as
before: a flow_mod changes what its switch does only for the headers its
match accepts (an add, a modify or a delete, strict or not, touches only
entries inside that match), so the only results that can change are those of
the batch engine's header classes that crossed that switch with a key the
match overlaps (Delta-net's and APKeep's idea: re-check the classes a rule
overlaps, not the network).

:class:`IncrementalHSA` keeps, per class (ingress number and interned key,
the batch engine's small int), where it ended and the (switch, in_port) cells
it crossed, indexed by cell and class pattern: the full check's classes as one int64 array
per cell and pattern (a class re-traced since then leaves it by joining a set of gone
classes), the re-traced ones as cell -> pattern -> key -> ingress numbers.
After a flow_mod it re-traces just the classes the index names (each from its
ingress, a handful of dictionary probes, or from the flow_mod's cell on when the hops
before it cannot have changed), plus, at the flow_mod's own switch,
the classes an ingress port gains or loses.  Ingresses the general engine
traces (classes that loop, rewrite or meet mixed patterns; whole ingresses
whose port has mixed patterns) are re-explored when the flow_mod's switch is
one their exploration visited, or when their set of such classes changed.
(The classes, their index and their re-tracing are in ``incremental_classes.py``.)

The checks are split into what one ingress contributes (its "items", see
:mod:`~netsleuth.invariants.headerspace.checks`) and the grouping of all items into
findings.  Items are kept per ingress and recomputed only for the ingresses
whose classes changed; reachability is kept per class (a host pair of a
pair-pattern ingress is one class, judged again only when its class moved).
The grouping then runs over the few ingresses that have items at all, reusing
every finding whose group is made of the same items as last time.  Anything but
a flow_mod (links, switches, controllers, ports) makes :meth:`IncrementalHSA.check`
start over with a full check.  The property test checks that the findings,
in order and in every detail, equal a full check's after every flow_mod.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import numpy as np

from netsleuth.gcpause import gc_paused
from netsleuth.invariants.forwarding import Finding
from netsleuth.invariants.headerspace import checks as H
from netsleuth.invariants.headerspace import reachability as HR
from netsleuth.invariants.headerspace import report as R
from netsleuth.invariants.headerspace.batch import _IDM, TAG_SHIFT, _Batch, _batch
from netsleuth.invariants.headerspace.codes import port_state
from netsleuth.invariants.headerspace.compiled import interner
from netsleuth.invariants.headerspace.engine import Analysis, _has_of13
from netsleuth.invariants.headerspace.general import DEFAULT_BUDGET, HsaNet, Port, Reach, _explore
from netsleuth.invariants.headerspace.incremental_classes import _ClassTracker, _RecordingNet, _Touched
from netsleuth.invariants.headerspace.incremental_records import KeySet, _Switch, switch_records
from netsleuth.invariants.headerspace.ingress import ingress_points
from netsleuth.invariants.headerspace.space import HeaderSpace, describe_headerspace
from netsleuth.invariants.view import NetworkView
from netsleuth.model.flowtable import FlowTable
from netsleuth.model.headerbits import key_field
from netsleuth.model.match import Match

KINDS = ("loops", "blackholes", "reachability")   # the kinds of findings, in the order every result lists them
_FINE = object()   # a judged host pair that turned out fine (its traffic arrives after all)


class _SteadyView(NetworkView):
    """A view whose links, switches and controllers stay as they are while flow tables
    change (what :meth:`IncrementalHSA.flow_mod` is told): the checks' graph of live links
    is built once, not once per flow_mod."""

    def live_graph(self) -> Any:
        g = self.__dict__.get("_live_graph")
        if g is None:
            g = super().live_graph()
            object.__setattr__(self, "_live_graph", g)
        return g

    def live_components(self) -> dict[str, int]:
        c = self.__dict__.get("_live_components")
        if c is None:
            c = super().live_components()
            object.__setattr__(self, "_live_components", c)
        return c


def _steady(view: NetworkView) -> _SteadyView:
    return _SteadyView(**{f.name: getattr(view, f.name) for f in dataclasses.fields(view) if f.init})


class IncrementalHSA(_ClassTracker):
    """The three header-space checks of one network, updated per flow_mod.

    Use :meth:`check` for a view (a full check the first time, whenever something
    other than flow tables changed, and when a table changed without :meth:`flow_mod`
    hearing of it: ``FlowTable.version`` tells) and :meth:`flow_mod` after each flow_mod
    the network applied (its switch and match); both return the findings of the three
    checks, as a full check lists them."""

    # (slots, as the tracker's: see there)
    __slots__ = ("view", "_state", "_versions", "_steady", "_of13", "_found", "_vrec", "_changes", "full_checks",
                 "partial_checks", "reexplored", "_reach", "_seen", "_loops", "_holes", "_pairs", "_memo",
                 "_suspect0", "_susp", "_A", "_comp", "_macs", "_ok", "_okd", "_by_mac", "_senders", "_one_src",
                 "_changed")

    def __init__(self) -> None:
        self.view: NetworkView | None = None   # the view of the last full check
        self._state: tuple | None = None
        self._versions: dict[str, object] = {}
        self._steady: _SteadyView | None = None
        self._net = None
        self._of13 = False
        self._found: dict[str, list[Finding]] = {k: [] for k in KINDS}
        # switch -> its record (the tracker's ``_sws``: its table, the table's version when last
        # read); None: some table has no version (``_versions`` then holds what was read), or 1.3
        self._vrec: dict[str, _Switch] | None = None
        self._changes = 0        # FlowTable.changes() when the versions above were read
        self.full_checks = 0
        self.partial_checks = 0
        self.reanalysed = 0      # classes re-traced, over all flow_mods
        self.resumed = 0         # of those, traced from the flow_mod's cell on (not from their ingress)
        self.reexplored = 0      # general-engine ingress explorations, over all flow_mods

    # ------------------------------------------------------------------ public
    def check(self, view: NetworkView) -> dict[str, list[Finding]]:
        """The findings for ``view``: a full check unless only flow tables changed since the
        last call and every flow_mod was reported through :meth:`flow_mod`."""
        if self.view is None or self._state_of(view) != self._state or self._versions_of(view) != self._read():
            self._full(view)
        else:
            self.view = view
        return self.findings()

    def flow_mod(self, view: NetworkView, switch: str, match: Match) -> dict[str, list[Finding]]:
        """The findings after a flow_mod with ``match`` was applied to ``switch``'s table.

        Only flow tables may have changed since the last call (every flow_mod reported
        here); :meth:`check` is the call that notices anything else."""
        steady = self._steady
        sws = view.switches
        sw = sws.get(switch)
        if self.view is None or steady is None or self._of13 or sw is None \
                or (sws is not steady.switches and sw is not steady.switches.get(switch)):
            self._full(view)
            return self.findings()
        if not self._only_changed(switch, sw.table, view):
            self._full(view)  # another table changed behind our back: start over
            return self.findings()
        assert self._net is not None
        self._net.forget(switch)
        self.partial_checks += 1
        touched = self._update(switch, match)
        if touched and self._refresh(touched):
            self._assemble()
        return self.findings()

    def findings(self) -> dict[str, list[Finding]]:
        found = self._found
        # (spelled out, not a comprehension over KINDS: a flow_mod's fixed cost)
        return {"loops": found["loops"][:], "blackholes": found["blackholes"][:],
                "reachability": found["reachability"][:]}

    # ------------------------------------------------------------------ state
    @staticmethod
    def _state_of(view: NetworkView) -> tuple:
        """Everything but the flow tables that the results depend on."""
        return (id(view.topology), tuple(sorted(view.link_up.items())),
                tuple(sorted(view.controllers_alive.items())), tuple(sorted(view.connected_dpids)),
                tuple(sorted((n, view.is_switch_up(n)) for n in view.switches)),
                tuple(sorted((k, tuple(v)) for k, v in view.controllers_of.items())),
                tuple(sorted(view.host_at.items())), view.isolation,
                tuple((n, id(sw), id(sw.table), port_state(sw)) for n, sw in sorted(view.switches.items())))

    @staticmethod
    def _versions_of(view: NetworkView) -> dict[str, object]:
        """Each switch's flow-table change counter (``FlowTable.version``)."""
        return {n: getattr(sw.table, "version", id(sw.table)) for n, sw in view.switches.items()}

    def _read(self) -> dict[str, object]:
        """Each switch's table version as last read (what :meth:`_versions_of` said then)."""
        vrec = self._vrec
        return self._versions if vrec is None else {n: r.version for n, r in vrec.items()}

    def _only_changed(self, switch: str, table: Any, view: NetworkView) -> bool:
        """Whether no table but ``switch``'s (``table``, the one it had at the full check) changed
        since the last call (and note its version)."""
        vrec = self._vrec
        if vrec is None:  # some table keeps no change counter
            versions = self._versions_of(view)
            if any(v != self._versions.get(n) for n, v in versions.items() if n != switch):
                return False
            self._versions = versions
            return True
        # (the switch's record, which the re-trace reads next: one dictionary entry per flow_mod)
        rec = vrec.get(switch)
        if rec is None or rec.table is not table:
            return False
        own, seen = table.version, FlowTable.changes()
        if seen - self._changes != own - rec.version:  # not only this table's bumps: look at each
            # (tables of other networks may have changed)
            if any(r.table.version != r.version for n, r in vrec.items() if n != switch):
                return False
        rec.version = own
        self._changes = seen
        return True

    def _full(self, view: NetworkView) -> None:
        self.full_checks += 1
        self.view = view
        self._changes = FlowTable.changes()
        self._versions = self._versions_of(view)
        self._state = self._state_of(view)
        self._vrec = None
        steady = self._steady = _steady(view)
        self._of13 = _has_of13(view)
        if self._of13:  # OpenFlow 1.3 pipelines: the 1.3 engine, a full check every time
            self._found = H.check_all(view)
            return
        # The index is millions of classes in a few big maps and arrays, and makes no cycle: with
        # the cyclic GC running, its young collections would each traverse the maps made so far
        # (the class -> outcome map alone holds 5 M entries at FatTree K=16), a tenth of the build.
        with gc_paused():
            self._build(view, steady)

    def _build(self, view: NetworkView, steady: _SteadyView) -> None:
        """The full check's index and findings (see :meth:`_full`)."""
        net = self._net = _RecordingNet(steady)
        points = ingress_points(steady)
        self._ingresses = list(points)
        n = len(self._ingresses)
        self._tag = {ing: t for t, ing in enumerate(self._ingresses)}
        ingress_host = {k: v for k, v in points.items() if v is not None}
        # per class: where it ended (an interned tuple) and the cells it crossed
        self._out = {}
        self._outcomes = {}
        self._path = {}
        self._gone = set()
        self._stale = set()
        self._cell = {}
        self._cells_of = {}
        # ports, links and switches stay as they are till the next full check:
        self._sws = switch_records(net, steady.peers())
        for ing in self._ingresses:
            self._sws[ing[0]].ingresses[ing[1]] = ing
        if all(hasattr(sw.table, "version") for sw in view.switches.values()):
            # every table's change counter, kept in its switch's record (see _only_changed)
            for name, rec in self._sws.items():
                rec.version = self._versions[name]
            self._vrec = self._sws
        # per ingress number
        self._dropx = {}
        self._genx = {}
        self._susp: dict[int, dict[int, Any]] = {}
        # per ingress
        self._reach: dict[Port, Reach] = {}
        self._seen: dict[Port, set[str]] = {}
        self._seen_at = {}
        self._loops: dict[Port, list] = {}
        self._holes: dict[Port, list] = {}
        self._pairs: dict[Port, list[Finding]] = {}
        self._memo: dict[str, dict] = {k: {} for k in KINDS}
        self._suspect0: dict[int, list[int]] | None = None
        trace: dict[Port, list] = {}
        depth: dict[Port, int] = {}   # cell -> the last hop number at which the full check's classes came in
        b, rest = _batch(net, self._ingresses, self._tag, n, trace, depth)
        self._masks = b.masks
        # the key ids per ingress (a compiled port's ids may be its table's key id -> slot map,
        # which the table changes in place: this index keeps its own)
        self._ids_of(net, b, n)
        self._index_base(trace, depth)
        del trace, depth
        self._absorb(b)
        # reports read the view, the compiled switches and the host behind each ingress
        self._A = Analysis(steady, list(self._ingresses), ingress_host, {}, _Batch(masks=self._masks),
                           dict(self._tag), net)
        self._comp = R.components(steady)
        self._macs = R.mac_hosts(steady)
        self._ok = R.controller_checker(steady)
        # (asked per flow_mod: a dictionary probe, not a call)
        self._okd = {name: self._ok(name) for name in steady.switches}
        self._by_mac = {h.mac: h for h in steady.topology.hosts}
        self._senders: dict[Port, list[tuple[Any, list]]] = {}
        for src, loc, peers in HR.senders(steady, self._A, self._comp):
            self._senders.setdefault(loc, []).append((src, peers))
        # the ingresses of one sender whose switch's controller is live: one class per pair when
        # the port's pattern is the pair's (see _pair_findings), by far the usual ingress
        self._one_src = {loc: srcs[0][0] for loc, srcs in self._senders.items()
                         if len(srcs) == 1 and self._okd[loc[0]]}
        restset = set(rest)
        self._suspect0 = self._suspect_pairs(b)
        touched = {}
        for t, ing in enumerate(self._ingresses):
            # (``ids``: every class counts as changed, and a first look at an ingress reads
            # its classes from its key ids, not from a set of them per ingress)
            tc = touched[t] = _Touched(ids=True, drops=True)
            tc.general = ing in restset or bool(self._genx.get(t))
        self._refresh(touched)
        self._suspect0 = None  # true of the first batch run only
        self._assemble()

    def _suspect_pairs(self, b: _Batch) -> dict[int, list[int]]:
        """Per ingress number, the classes of one-pair ingresses (pattern ``PAIR_FIXED``) that the
        batch run ``b`` did not end where a full check's bulk pass calls fine (at the pair's
        destination, at a live controller, at a drop rule), ascending: the first look at every
        pair looks at these only (a few thousand at most), found in a few numpy passes over the
        outcomes instead of a dictionary probe per class or a sort of the million fine ones."""
        pairt = np.array([m == HR.PAIR_FIXED for m in self._masks] + [False], dtype=bool)
        ok = self._ok

        def pairs_of(arr: np.ndarray) -> np.ndarray:
            return arr[pairt[np.minimum(arr >> TAG_SHIFT, len(pairt) - 1)]]

        # delivered: every host's classes in one array (with the host's number beside each),
        # suspect where the class's destination MAC is not one of that host's
        hosts = list(b.delivered)
        got = [b.delivered_arrays[h] for h in hosts]
        lens = [len(xs) for xs in got]
        arr = np.concatenate(got) if got else np.zeros(0, dtype=np.int64)
        who = np.repeat(np.arange(len(hosts), dtype=np.int64), lens)
        keep = pairt[np.minimum(arr >> TAG_SHIFT, len(pairt) - 1)]
        arr, who = arr[keep], who[keep]
        if len(arr) and self._by_mac:
            num = {h: i for i, h in enumerate(hosts)}
            macs = sorted(self._by_mac)
            mac_arr = np.array(macs, dtype=np.int64)
            owner = np.array([num.get(self._by_mac[mac].name, -1) for mac in macs], dtype=np.int64)
            # (the destination column alone: the sources' is not needed here)
            dm = key_field(HR.PAIR_FIXED, "dl_dst")[arr & _IDM]
            at = np.minimum(np.searchsorted(mac_arr, dm), len(macs) - 1)
            arr = arr[(mac_arr[at] != dm) | (owner[at] != who)]
        parts = [arr, pairs_of(np.array(b.general, dtype=np.int64))]
        parts.extend(pairs_of(np.array(xs, dtype=np.int64)) for s, xs in b.punted.items() if not ok(s))
        parts.extend(pairs_of(np.array(xs, dtype=np.int64)) for xs in b.drops.values())
        # sorted and made unique by hand: np.unique's first call imports numpy.ma (0.05 s of a
        # fresh process's first check)
        allx = np.sort(np.concatenate(parts))
        if len(allx) > 1:
            allx = allx[np.concatenate(([True], allx[1:] != allx[:-1]))]
        found: dict[int, list[int]] = {}
        for x in allx.tolist():
            found.setdefault(x >> TAG_SHIFT, []).append(x)
        return found

    # ------------------------------------------------------------------ items
    def _explore_general(self, ing: Port) -> None:
        """Explore ``ing`` with the general engine, as :func:`analyze` does: the whole ingress
        when its port has no single pattern, else its classes the batch engine gave up on."""
        net = self._net
        assert net is not None
        t = self._tag[ing]
        old = self._seen.pop(ing, set())
        for s in old:
            self._seen_at[s].discard(ing)
        self._reach.pop(ing, None)
        ids = self._ids[t]
        xs = sorted(self._genx.get(t, ()))
        if ids is not None and not xs:
            return
        self.reexplored += 1
        r = Reach(ing)
        seen: set[str] = set()
        net.seen = seen
        try:
            if ids is None:
                _explore(net, ing[0], ing[1], HeaderSpace.all(), r, DEFAULT_BUDGET)
            else:
                mask = self._masks[t]
                keys = interner(mask)[1]
                hs = HeaderSpace((keys[x & _IDM], mask, ()) for x in xs)
                _explore(net, ing[0], ing[1], hs, r, DEFAULT_BUDGET)
        finally:
            net.seen = None
        self._reach[ing] = r
        self._seen[ing] = seen
        for s in seen:
            self._seen_at.setdefault(s, set()).add(ing)

    def _ids_of(self, net: HsaNet, b: _Batch, n: int) -> None:
        """Each batch ingress's key ids (``_ids``), as a :class:`KeySet` over the array of them the
        batch run just read (the table's own sorted array: nothing copied per key)."""
        self._ids = []
        for t in range(n):
            if b.ids_at.get(t) is None:
                self._ids.append(None)
                continue
            ing = self._ingresses[t]
            self._ids.append(KeySet(net.compiled(ing[0]).port(ing[1]).arrays()[0]))

    def _analysis(self, ing: Port, xs: Iterable[int]) -> Analysis:
        """An :class:`Analysis` of ``ing`` alone holding the classes ``xs`` of it (and its
        general-engine results): what a full check's analysis says of those classes."""
        t = self._tag[ing]
        b = _Batch(masks=self._masks)
        ids = self._ids[t]
        if ids is not None:
            b.ids_at[t] = ids
            out = self._out
            for x in xs:
                o = out[x]
                kind = o[0]
                if kind == "d":
                    b.delivered.setdefault(o[1], []).append(x)
                elif kind == "p":
                    b.punted.setdefault(o[1], []).append(x)
                elif kind == "f":
                    b.filtered.setdefault(o[1], []).append(x)
                elif kind == "x":
                    b.drops.setdefault(o[1:], []).append(x)
                else:
                    b.general.append(x)
        r = self._reach.get(ing)
        return Analysis(self._A.view, [ing], self._A.ingress_host, {ing: r} if r is not None else {}, b,
                        {ing: t}, self._A.net)

    def _refresh(self, touched: dict[int, _Touched]) -> bool:
        """Recompute the items of every ingress something changed for; whether any changed."""
        self._changed = False
        for t, tc in touched.items():
            ing = self._ingresses[t]
            if tc.general:
                self._explore_general(ing)
                r = self._reach.get(ing)
                self._set(self._loops, ing, H.loop_items(self._analysis(ing, ()), ing) if r is not None else [])
            if tc.general or tc.drops:
                xs = self._dropx.get(t, ())
                # (the analysis only when there is something to judge: the first look asks at every ingress)
                self._set(self._holes, ing, H.drop_items(self._analysis(ing, xs), ing, self._comp, self._macs)
                          if xs or ing in self._reach else [])
            if tc.general or tc.ids or tc.classes:
                self._set(self._pairs, ing, self._pair_findings(ing, t, tc))
        return self._changed

    def _set(self, where: dict[Port, list], ing: Port, items: list) -> None:
        old = where.get(ing)
        if items:
            if old is not None and R.same_objects(old, items):
                return  # the very same items (pair findings kept per class): nothing to regroup
            where[ing] = items
            self._changed = True
        elif old is not None:
            del where[ing]
            self._changed = True

    def _pair_findings(self, ing: Port, t: int, tc: _Touched) -> list[Finding]:
        """The unreachable host pairs whose traffic enters at ``ing`` (before grouping)."""
        src = self._one_src.get(ing)
        ids = self._ids[t]
        ok = self._ok
        if src is None or ids is None or self._masks[t] != HR.PAIR_FIXED:
            srcs = self._senders.get(ing)
            if not srcs:
                return []
            # not one class per pair: judge the ingress as a full check does
            self._susp.pop(t, None)
            shifted = t << TAG_SHIFT
            a1 = self._analysis(ing, [j | shifted for j in ids or ()])
            judge = HR.PairJudge(a1, ok, self._comp)
            return [f for src, peers in srcs for f in judge.pairs(ing, src, peers)]
        # One class per pair: a pair needs a look iff its class does not end at the
        # destination, at a live controller or at a drop rule (what a full check's bulk
        # pass decides); only pairs whose class moved are looked at again.
        susp = self._susp.get(t)
        changed: Iterable[int] = tc.classes
        if susp is None:
            susp = self._susp[t] = {}
            shifted = t << TAG_SHIFT
            first = self._suspect0
            # the first look: only the classes the bulk pass does not call fine
            changed = [j | shifted for j in ids] if first is None else first.get(t, [])
        out = self._out
        maybe = self._maybe_unreachable(changed, susp)
        for x, d in HR.pair_keys(maybe, src, self._by_mac, self._comp) if maybe else ():
            o = out[x]
            if o[0] == "d" and o[1] == d.name:
                continue
            susp[x] = None
        if not susp:  # (the usual outcome: every pair of the ingress is fine)
            return []
        if tc.general or tc.ids:
            for x in susp:
                susp[x] = None
        todo = sorted(x for x, f in susp.items() if f is None)
        if todo:
            a1 = self._analysis(ing, todo)
            idx = HR.ReachIndex(a1.reach(ing))
            dst_mac = HR.pair_macs()[1]
            for x in todo:
                d = self._by_mac[int(dst_mac[x & _IDM])]
                f = HR.judge_pair(a1, idx, ing, src, d, ok)
                susp[x] = _FINE if f is None else f
        return [f for _x, f in sorted(susp.items()) if f is not _FINE]

    def _maybe_unreachable(self, xs: Iterable[int], susp: dict[int, Any]) -> list[int]:
        """Those of the classes ``xs`` of a one-pair-per-class ingress that may be an unreachable
        pair now (each dropped from ``susp``, its ingress's suspects, first)."""
        out, okd, by_mac = self._out, self._okd, self._by_mac
        maybe = []
        for x in xs:
            susp.pop(x, None)
            o = out.get(x)
            if o is None:
                continue
            kind = o[0]
            if kind == "d":
                # delivered to the host its destination MAC names (the usual end of a class a
                # flow_mod moved): fine, whichever pair it is
                d = by_mac.get(HR.pair_dst_mac(x))
                if d is not None and d.name == o[1]:
                    continue
            elif kind == "f" or (kind == "p" and okd[o[1]]):
                # (dropped by a drop rule or punted to a live controller: fine whichever pair it is)
                continue
            maybe.append(x)
        return maybe

    # ------------------------------------------------------------------ findings
    def _assemble(self) -> None:
        """Group the items of every ingress into findings, as a full check does."""
        tag, view, a, memo = self._tag, self._A.view, self._A, self._memo
        order = sorted(self._loops, key=tag.__getitem__)
        loops = H.group_loops(view, a, [(ing, self._loops[ing]) for ing in order], memo["loops"], self._macs)
        order = sorted(self._holes, key=tag.__getitem__)
        holes = H.group_blackholes(view, a, [(ing, self._holes[ing]) for ing in order], memo["blackholes"],
                                   self._macs)
        pairs = [f for ing in sorted(self._pairs, key=tag.__getitem__) for f in self._pairs[ing]]
        reach = R.group_unreachable(view, a, pairs, describe_headerspace, memo["reachability"])
        self._found = dict(zip(KINDS, (loops, holes, reach), strict=True))
