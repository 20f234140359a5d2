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
it crossed, and an index cell -> class pattern -> key -> ingress numbers.
After a flow_mod it re-traces just the classes the index names (each from its
ingress, a handful of dictionary probes), plus, at the flow_mod's own switch,
the classes an ingress port gains or loses.  Ingresses the general engine
traces (classes that loop, rewrite or meet mixed patterns; whole ingresses
whose port has mixed patterns) are re-explored when the flow_mod's switch is
one their exploration visited, or when their set of such classes changed.

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
import operator
from collections.abc import Iterable
from typing import Any

from netsleuth.invariants.forwarding import Finding
from netsleuth.invariants.headerspace import checks as H
from netsleuth.invariants.headerspace import compiled as hsa_compile
from netsleuth.invariants.headerspace import reachability as HR
from netsleuth.invariants.headerspace import report as R
from netsleuth.invariants.headerspace.compiled import F_DROP, F_NOTHING, F_PUNT, interner, port_state
from netsleuth.invariants.headerspace.engine import (
    _DOWN,
    _F_MISS,
    _FAST_ROUNDS,
    _IDM,
    DEFAULT_BUDGET,
    TAG_SHIFT,
    Analysis,
    HsaNet,
    Port,
    Reach,
    _Batch,
    _batch,
    _explore,
    _has_of13,
)
from netsleuth.invariants.headerspace.ingress import ingress_points
from netsleuth.invariants.headerspace.space import HeaderSpace, describe_headerspace, match_wildcard, unpack
from netsleuth.invariants.view import NetworkView
from netsleuth.model.match import Match

KINDS = ("loops", "blackholes", "reachability")
_VERSION = operator.attrgetter("version")
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


def _steady(view: NetworkView) -> _SteadyView:
    return _SteadyView(**{f.name: getattr(view, f.name) for f in dataclasses.fields(view) if f.init})


class _RecordingNet(HsaNet):
    """An :class:`HsaNet` that notes every switch the general engine visits while ``seen``
    is a set: a general-engine ingress depends on the tables of those switches only."""

    def __init__(self, view: NetworkView) -> None:
        super().__init__(view)
        self.seen: set[str] | None = None

    def up(self, name: str) -> bool:
        if self.seen is not None:
            self.seen.add(name)
        return super().up(name)


def _overlapping(mask: int, v: int, m: int, js: Iterable[int]) -> list[int]:
    """The key ids among ``js`` (of pattern ``mask``) whose classes overlap the wildcard (v, m)."""
    intern, keys = interner(mask)
    if not (mask & ~m):  # the match fixes every bit of the classes: one key at most
        j = intern.get(v & mask)
        return [] if j is None or j not in js else [j]
    cm = mask & m
    cv = v & cm
    return [j for j in js if keys[j] & cm == cv]


@dataclasses.dataclass
class _Touched:
    """What changed for one ingress during a flow_mod."""

    classes: set[int] = dataclasses.field(default_factory=set)   # classes re-traced or gone
    drops: bool = False      # some class ended (or stopped ending) in a blackhole
    general: bool = False    # the general engine must explore the ingress again
    ids: bool = False        # its port's entries changed (its table-miss headers too)


class IncrementalHSA:
    """The three header-space checks of one network, updated per flow_mod.

    Use :meth:`check` for a view (a full check the first time, whenever something
    other than flow tables changed, and when a table changed without :meth:`flow_mod`
    hearing of it: ``FlowTable.version`` tells) and :meth:`flow_mod` after each flow_mod
    the network applied (its switch and match); both return the findings of the three
    checks, as a full check lists them."""

    def __init__(self) -> None:
        self.view: NetworkView | None = None   # the view of the last full check
        self._state: tuple | None = None
        self._versions: dict[str, object] = {}
        self._steady: _SteadyView | None = None
        self._net: _RecordingNet | None = None
        self._of13 = False
        self._found: dict[str, list[Finding]] = {k: [] for k in KINDS}
        self._tables: list | None = None
        self._table_at: dict[str, int] = {}
        self._vlist: list = []
        self.full_checks = 0
        self.partial_checks = 0
        self.reanalysed = 0      # classes re-traced, over all flow_mods
        self.reexplored = 0      # general-engine ingress explorations, over all flow_mods

    # ------------------------------------------------------------------ public
    def check(self, view: NetworkView) -> dict[str, list[Finding]]:
        """The findings for ``view``: a full check unless only flow tables changed since the
        last call and every flow_mod was reported through :meth:`flow_mod`."""
        if self.view is None or self._state_of(view) != self._state or self._versions_of(view) != self._versions:
            self._full(view)
        else:
            self.view = view
        return self.findings()

    def flow_mod(self, view: NetworkView, switch: str, match: Match) -> dict[str, list[Finding]]:
        """The findings after a flow_mod with ``match`` was applied to ``switch``'s table.

        Only flow tables may have changed since the last call (every flow_mod reported
        here); :meth:`check` is the call that notices anything else."""
        steady = self._steady
        if self.view is None or steady is None or self._of13 \
                or view.switches.get(switch) is not steady.switches.get(switch):
            self._full(view)
            return self.findings()
        if not self._only_changed(switch, view):
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
        return {k: list(v) for k, v in self._found.items()}

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

    def _only_changed(self, switch: str, view: NetworkView) -> bool:
        """Whether no table but ``switch``'s changed since the last call (and note its version)."""
        tables = self._tables
        if tables is None:  # some table keeps no change counter
            versions = self._versions_of(view)
            if any(v != self._versions.get(n) for n, v in versions.items() if n != switch):
                return False
            self._versions = versions
            return True
        now = list(map(_VERSION, tables))
        i = self._table_at[switch]
        self._vlist[i] = now[i]
        if now != self._vlist:
            return False
        self._versions[switch] = now[i]
        return True

    def _full(self, view: NetworkView) -> None:
        self.full_checks += 1
        self.view = view
        self._versions = self._versions_of(view)
        self._state = self._state_of(view)
        names = sorted(view.switches)
        tables = [view.switches[n].table for n in names]
        # every table's change counter, read in one pass per flow_mod (None: some table has none)
        self._tables = tables if all(hasattr(t, "version") for t in tables) else None
        self._table_at = {n: i for i, n in enumerate(names)}
        self._vlist = [self._versions[n] for n in names]
        steady = self._steady = _steady(view)
        self._of13 = _has_of13(view)
        if self._of13:  # OpenFlow 1.3 pipelines: the 1.3 engine, a full check every time
            self._found = H.check_all(view)
            return
        net = self._net = _RecordingNet(steady)
        points = ingress_points(steady)
        self._ingresses: list[Port] = list(points)
        n = len(self._ingresses)
        self._tag: dict[Port, int] = {ing: t for t, ing in enumerate(self._ingresses)}
        self._at_switch: dict[str, list[Port]] = {}
        for ing in self._ingresses:
            self._at_switch.setdefault(ing[0], []).append(ing)
        ingress_host = {k: v for k, v in points.items() if v is not None}
        # per class: where it ended (an interned tuple) and the cells it crossed
        self._out: dict[int, tuple] = {}
        self._outcomes: dict[tuple, tuple] = {}
        self._path: dict[int, tuple[Port, ...]] = {}
        # cell -> class pattern -> key id -> ingress numbers whose class of that key came in
        self._cells: dict[Port, dict[int, dict[int, Any]]] = {}   # ... -> a number, or a list of them
        self._cells_of: dict[str, list[Port]] = {}
        self._stat: dict[Port, int | None] = {}   # cell -> its port's pattern when last seen
        # per ingress number
        self._dropx: dict[int, set[int]] = {}
        self._genx: dict[int, set[int]] = {}
        self._susp: dict[int, dict[int, Any]] = {}
        # per ingress
        self._reach: dict[Port, Reach] = {}
        self._seen: dict[Port, set[str]] = {}
        self._seen_at: dict[str, set[Port]] = {}
        self._loops: dict[Port, list] = {}
        self._holes: dict[Port, list] = {}
        self._pairs: dict[Port, list[Finding]] = {}
        self._memo: dict[str, dict] = {k: {} for k in KINDS}
        trace: dict[Port, list[list[int]]] = {}
        b, rest = _batch(net, self._ingresses, self._tag, n, trace)
        self._masks: list[int] = b.masks
        # key id -> fast code per ingress (a compiled port's ids may be its table's key id ->
        # slot map, which the table changes in place: this index keeps codes of its own)
        self._ids: list[dict[int, int] | None] = [
            None if b.ids_at.get(t) is None else self._code_map(net, self._ingresses[t]) for t in range(n)]
        self._index(trace)
        self._absorb(b, None)
        # reports read the view, the compiled switches and the host behind each ingress
        self._A = Analysis(steady, list(self._ingresses), ingress_host, {}, _Batch(masks=self._masks),
                           dict(self._tag), net)
        self._comp = R.components(steady)
        self._macs = R.mac_hosts(steady)
        self._ok = R.controller_checker(steady)
        self._by_mac = {h.mac: h for h in steady.topology.hosts}
        self._senders: dict[Port, list[tuple[Any, list]]] = {}
        for src, loc, peers in HR.senders(steady, self._A, self._comp):
            self._senders.setdefault(loc, []).append((src, peers))
        restset = set(rest)
        touched = {}
        for t, ing in enumerate(self._ingresses):
            tc = touched[t] = _Touched(ids=True, drops=True)
            tc.general = ing in restset or bool(self._genx.get(t))
            ids = self._ids[t]
            if ids is not None:
                shifted = t << TAG_SHIFT
                tc.classes = {j | shifted for j in ids}
        self._refresh(touched)
        self._assemble()

    # ------------------------------------------------------------------ classes
    def _index(self, trace: dict[Port, list[list[int]]]) -> None:
        """Record the cells each traced class came in at (``trace``: cell -> lists of classes)."""
        cells, cells_of, masks = self._cells, self._cells_of, self._masks
        paths: dict[int, list[Port]] = {}
        for cell, lists in trace.items():
            by_mask = cells.get(cell)
            if by_mask is None:
                by_mask = cells[cell] = {}
                cells_of.setdefault(cell[0], []).append(cell)
                if cell not in self._stat:  # (a re-traced class's walk may have read it already)
                    self._stat[cell] = self._status(cell)
            for xs in lists:
                for x in xs:
                    p = paths.get(x)
                    if p is None:
                        paths[x] = [cell]
                    elif cell in p:
                        continue
                    else:
                        p.append(cell)
                    t = x >> TAG_SHIFT
                    mask = masks[t]
                    by_key = by_mask.get(mask)
                    if by_key is None:
                        by_key = by_mask[mask] = {}
                    j = x & _IDM
                    ts = by_key.get(j)
                    if ts is None:
                        by_key[j] = t
                    elif ts.__class__ is int:
                        by_key[j] = [ts, t]
                    else:
                        ts.append(t)
        # tuples: once the cyclic GC has seen them hold only cells, it stops tracking them
        self._path.update((x, tuple(p)) for x, p in paths.items())

    def _status(self, cell: Port) -> int | None:
        """How the batch engine meets classes at ``cell``: the port's one pattern, or None
        (several patterns: general engine; or a switch that is down)."""
        net = self._net
        assert net is not None
        s, p = cell
        if not net.up(s):
            return None
        index = getattr(net.switches[s].table, "pattern_index", None)
        if index is not None and hsa_compile.USE_TABLE_INDEX:
            # read off the table's pattern index: building the port's index costs time per rule
            n, pat = hsa_compile.port_pattern(index(), p)
            if n <= 1:
                return 0 if pat is None else pat.mask
        pi = net.compiled(s).port(p)
        return pi.fast_mask if pi.ids is not None else None

    def _unindex(self, x: int) -> None:
        p = self._path.pop(x, None)
        if not p:
            return
        t = x >> TAG_SHIFT
        j = x & _IDM
        mask = self._masks[t]
        cells = self._cells
        for cell in p:
            by_key = cells[cell][mask]
            ts = by_key[j]
            if ts.__class__ is int:
                del by_key[j]
            else:
                ts.remove(t)
                if len(ts) == 1:
                    by_key[j] = ts[0]

    def _absorb(self, b: _Batch, touched: dict[int, _Touched] | None) -> None:
        """Note where each class of the batch run ``b`` ended."""
        out, outcomes = self._out, self._outcomes
        groups: list[tuple[tuple, list[int]]] = []
        groups.extend((("d", h), xs) for h, xs in b.delivered.items())
        groups.extend((("p", s), xs) for s, xs in b.punted.items())
        groups.extend((("f", s), xs) for s, xs in b.filtered.items())
        groups.extend((("x", *k), xs) for k, xs in b.drops.items())
        groups.append((("g",), b.general))
        dropx, genx = self._dropx, self._genx
        for key, xs in groups:
            o = outcomes.get(key)
            if o is None:
                o = outcomes[key] = key
            kind = o[0]
            for x in xs:
                old = out.get(x)
                out[x] = o
                if touched is None and kind not in "xg":
                    continue
                t = x >> TAG_SHIFT
                if old is not None and old[0] in "xg":
                    (dropx if old[0] == "x" else genx)[t].discard(x)
                    if touched is not None:
                        tc = touched[t]
                        if old[0] == "x":
                            tc.drops = True
                        else:
                            tc.general = True
                if kind in "xg":
                    (dropx if kind == "x" else genx).setdefault(t, set()).add(x)
                    if touched is not None:
                        tc = touched[t]
                        if kind == "x":
                            tc.drops = True
                        else:
                            tc.general = True

    def _purge(self, x: int, tc: _Touched) -> None:
        """Forget class ``x`` (its key left its ingress port's entries)."""
        self._unindex(x)
        o = self._out.pop(x, None)
        t = x >> TAG_SHIFT
        if o is not None and o[0] == "x":
            self._dropx[t].discard(x)
            tc.drops = True
        elif o is not None and o[0] == "g":
            self._genx[t].discard(x)
            tc.general = True
        tc.classes.add(x)

    def _update(self, switch: str, match: Match) -> dict[int, _Touched]:
        """Re-trace every class the flow_mod can have moved; what changed, per ingress number."""
        net = self._net
        assert net is not None
        ip, v, m = match_wildcard(match)
        masks, ids_of = self._masks, self._ids
        touched: dict[int, _Touched] = {}
        redo: dict[int, set[int]] = {}
        # classes that crossed the switch with a key the match overlaps; all those that came
        # in at a port whose patterns changed (the batch engine may no longer take them there)
        for cell in self._cells_of.get(switch, ()):
            if ip is not None and cell[1] != ip:
                continue
            stat = self._status(cell)
            every = stat != self._stat.get(cell)
            self._stat[cell] = stat
            for mask, by_key in self._cells[cell].items():
                for j in (by_key if every else _overlapping(mask, v, m, by_key)):
                    ts = by_key[j]
                    for t in ((ts,) if ts.__class__ is int else ts):
                        redo.setdefault(t, set()).add(j | (t << TAG_SHIFT))
        # ingress ports on the switch: their entries (so their classes) may have changed
        for ing in self._at_switch.get(switch, ()):
            if ip is not None and ing[1] != ip:
                continue
            self._ingress_port(ing, v, m, touched, redo)
        # general-engine ingresses whose exploration went through the switch
        for ing in self._seen_at.get(switch, ()):
            touched.setdefault(self._tag[ing], _Touched()).general = True
        if redo:
            todo: list[tuple[int, list[int]]] = []
            for t, xs in redo.items():
                tc = touched.setdefault(t, _Touched())
                ids = ids_of[t]
                if ids is None:
                    continue
                live = sorted(x for x in xs if (x & _IDM) in ids)
                tc.classes.update(live)
                for x in live:
                    self._unindex(x)
                self.reanalysed += len(live)
                if live:
                    todo.append((t, live))
            trace: dict[Port, list[list[int]]] = {}
            b = _Batch(masks=masks)
            for t, live in todo:  # one class at a time (see _walk)
                for x in live:
                    self._walk(self._ingresses[t], masks[t], x, b, trace)
            self._index(trace)
            self._absorb(b, touched)
        return touched

    def _walk(self, ing: Port, mask: int, x: int, b: _Batch, trace: dict[Port, list[list[int]]]) -> None:
        """Re-trace one class from its ingress as the batch engine's rounds would move it
        (:func:`engine._run_batch`: same outcomes, same cells, the same give-up after
        ``_FAST_ROUNDS`` hops), but asking each table for the entry the class hits
        (``FlowTable.peek`` of one of its headers) instead of building the port's whole
        index: after a flow_mod its switch's ports would each cost time per rule."""
        net = self._net
        assert net is not None
        switches = net.switches
        head = unpack(interner(mask)[1][x & _IDM])[1:]
        cell = ing
        rounds = 0
        while True:
            rounds += 1
            if rounds > _FAST_ROUNDS:
                b.general.append(x)
                return
            trace.setdefault(cell, []).append([x])
            s, p = cell
            if not net.up(s):
                b.drops.setdefault((s, p, _DOWN), []).append(x)
                return
            stat = self._stat[cell] if cell in self._stat else self._stat.setdefault(cell, self._status(cell))
            if stat is None or stat & ~mask:  # mixed patterns, or finer than the class
                b.general.append(x)
                return
            entry = switches[s].table.peek((p, *head))
            code = _F_MISS if entry is None else net.compiled(s).code_for(entry.actions, p)
            if code >= 0:
                peer = net.peer(s, code)
                if peer is None:
                    b.drops.setdefault((s, p, code), []).append(x)
                elif peer[0] in switches:
                    cell = peer
                    continue
                else:
                    b.delivered.setdefault(peer[0], []).append(x)
            elif code == _F_MISS or code == F_PUNT:
                b.punted.setdefault(s, []).append(x)
            elif code == F_NOTHING:
                b.drops.setdefault((s, p, code), []).append(x)
            elif code == F_DROP:
                b.filtered.setdefault(s, []).append(x)
            else:
                b.general.append(x)
            return

    def _ingress_port(self, ing: Port, v: int, m: int, touched: dict[int, _Touched],
                      redo: dict[int, set[int]]) -> None:
        """A flow_mod on an ingress's own port: classes come and go with its entries."""
        net = self._net
        assert net is not None
        t = self._tag[ing]
        tc = touched.setdefault(t, _Touched())
        tc.ids = True
        old = self._ids[t]
        shifted = t << TAG_SHIFT
        mask = self._masks[t]
        # the loop over the switch's cells has just read this cell's status when classes come in here
        stat = self._stat[ing] if ing in self._cells else self._status(ing)
        if old is not None and stat == mask:
            # Same single pattern: only keys inside the match can have come or gone; ask the
            # table about each (one of its headers hits an entry iff the key has one).
            intern, keys = interner(mask)
            cand = set(_overlapping(mask, v, m, old))
            if not (mask & ~m) and (v & mask) in intern:
                cand.add(intern[v & mask])
            table = net.switches[ing[0]].table
            ids = None
            for j in sorted(cand):
                entry = table.peek((ing[1], *unpack(keys[j])[1:]))
                if (entry is not None) == (j in old):
                    if entry is not None:
                        redo.setdefault(t, set()).add(j | shifted)
                    continue
                if ids is None:
                    ids = dict(old)  # a copy: the dict may be a compiled port's
                if entry is None:
                    del ids[j]
                    self._purge(j | shifted, tc)
                else:
                    ids[j] = net.compiled(ing[0]).code_for(entry.actions, ing[1])
                    redo.setdefault(t, set()).add(j | shifted)
            if ids is not None:
                self._ids[t] = ids
            return
        pi = net.compiled(ing[0]).port(ing[1]) if net.up(ing[0]) else None
        new = pi.code_map() if pi is not None and pi.ids is not None else None
        # the port's pattern changed: the ingress starts over
        for j in old or ():
            self._purge(j | shifted, tc)
        self._ids[t] = new
        redo.pop(t, None)
        tc.general = True
        if new is not None and pi is not None:
            self._masks[t] = pi.fast_mask  # type: ignore[assignment]  # set with ids
            redo[t] = {j | shifted for j in new}

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

    @staticmethod
    def _code_map(net: HsaNet, ing: Port) -> dict[int, int]:
        # not copied: it may be the compiled port's own map, and flow_mod copies before it writes
        return net.compiled(ing[0]).port(ing[1]).code_map()

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
                a1 = self._analysis(ing, xs)
                self._set(self._holes, ing, H.drop_items(a1, ing, self._comp, self._macs)
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
        srcs = self._senders.get(ing)
        if not srcs:
            return []
        ids = self._ids[t]
        ok = self._ok
        if len(srcs) != 1 or ids is None or self._masks[t] != HR.PAIR_FIXED or not ok(ing[0]):
            # not one class per pair: judge the ingress as a full check does
            self._susp.pop(t, None)
            shifted = t << TAG_SHIFT
            a1 = self._analysis(ing, [j | shifted for j in ids or ()])
            judge = HR.PairJudge(a1, ok, self._comp)
            return [f for src, peers in srcs for f in judge.pairs(ing, src, peers)]
        # One class per pair: a pair needs a look iff its class does not end at the
        # destination, at a live controller or at a drop rule (what a full check's bulk
        # pass decides); only pairs whose class moved are looked at again.
        src = srcs[0][0]
        susp = self._susp.get(t)
        changed: Iterable[int] = tc.classes
        if susp is None:
            susp = self._susp[t] = {}
            shifted = t << TAG_SHIFT
            changed = [j | shifted for j in ids]
        out = self._out
        changed = list(changed)
        for x in changed:
            susp.pop(x, None)
        for x, d in HR.pair_keys(changed, src, self._by_mac, self._comp):
            o = out.get(x)
            if o is None:
                continue
            kind = o[0]
            if (kind == "d" and o[1] == d.name) or (kind == "p" and ok(o[1])) or kind == "f":
                continue
            susp[x] = None
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
        self._found = {"loops": loops, "blackholes": holes, "reachability": reach}
