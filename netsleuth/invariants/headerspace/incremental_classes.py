"""The classes an incremental header-space check keeps between flow_mods (OpenFlow 1.0): per batch
class, where it ended and the (switch, in_port) cells it crossed (compactly: one int64 array of classes
per cell and pattern for the full check's classes), indexed by cell so that a flow_mod
finds the classes whose key its match overlaps, and their re-tracing one class at a time.
:class:`~netsleuth.invariants.headerspace.incremental.IncrementalHSA` builds on it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from itertools import repeat
from typing import Any

import numpy as np

from netsleuth.invariants.headerspace import compiled as hsa_compile
from netsleuth.invariants.headerspace.batch import _DOWN, _F_MISS, _FAST_ROUNDS, _IDM, TAG_SHIFT, _Batch
from netsleuth.invariants.headerspace.cellsearch import cell_classes, keyed_cells, overlapping_classes, overlapping_keys
from netsleuth.invariants.headerspace.codes import (
    _PS_GEN,
    F_DROP,
    F_NOTHING,
    F_PUNT,
    port_state,
    port_state_id,
    shared_code,
)
from netsleuth.invariants.headerspace.compiled import interner
from netsleuth.invariants.headerspace.general import HsaNet, Port
from netsleuth.invariants.headerspace.incremental_records import _UNREAD, KeySet, _Cell, _Switch
from netsleuth.invariants.headerspace.space import match_wildcard, unpack
from netsleuth.invariants.view import NetworkView
from netsleuth.model.match import Match


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


_GENERAL = ("g",)      # the outcome of classes handed to the general engine


@dataclasses.dataclass(slots=True)
class _Touched:
    """What changed for one ingress during a flow_mod."""

    classes: set[int] = dataclasses.field(default_factory=set)   # classes re-traced or gone
    drops: bool = False      # some class ended (or stopped ending) in a blackhole
    general: bool = False    # the general engine must explore the ingress again
    ids: bool = False        # its port's entries changed (its table-miss headers too)


class _ClassTracker:
    """The batch engine's classes, kept between flow_mods: where each ended, the cells it crossed, an
    index cell -> pattern -> key -> ingress numbers, and the re-tracing of the classes a flow_mod
    can have moved (:meth:`_update`)."""

    # Slots, not an instance dictionary: a flow_mod reads some forty attributes, and with the
    # tracker's state out of the CPU's caches between flow_mods (the usual case: a network's
    # other work runs in between), each read of a big instance dictionary is a cache miss of
    # its own, where slots sit side by side in the object.
    __slots__ = ("_net", "_ingresses", "_tag", "_masks", "_ids", "_out", "_outcomes",
                 "_path", "_gone", "_stale", "_from", "_cell", "_cells_of", "_sws",
                 "_dropx", "_genx", "_seen_at", "reanalysed", "resumed")

    # What the tracker keeps (set by IncrementalHSA's full check, see there):
    _net: _RecordingNet | None
    _ingresses: list[Port]                       # ingress number -> ingress
    _tag: dict[Port, int]                        # ingress -> its number
    _masks: list[int]                            # ingress number -> its class pattern
    _ids: list[KeySet | None]                    # ingress number -> the key ids its port has entries for
    # per class: where it ended (an interned tuple); the cells a re-traced class crossed
    _out: dict[int, tuple]
    _outcomes: dict[tuple, tuple]
    _path: dict[int, tuple[Port, ...]]
    # The full check's classes are stored compactly (_Cell.base); a class that has been re-traced
    # or purged since is in ``_gone`` and its entries there no longer count.
    _gone: set[int]
    # Classes re-traced from the cell of a flow_mod's switch on (see _retrace): their entries in
    # the cells' ``base`` still stand for the cells before it (the rest may be stale: a superset),
    # their cells from it on are in the cells' ``keys``; the next re-trace of one starts from its ingress.
    _stale: set[int]
    _from: Port | None                           # the flow_mod's cell when its in_port is fixed (see _retrace)
    _cell: dict[Port, _Cell]                     # what the tracker keeps per cell (see _Cell)
    _cells_of: dict[str, list[Port]]             # switch -> its cells with classes indexed (_Cell.keys)
    _sws: dict[str, _Switch]                     # switch -> what a re-trace reads of it
    # per ingress number: classes that end in a drop, classes the general engine takes
    _dropx: dict[int, set[int]]
    _genx: dict[int, set[int]]
    _seen_at: dict[str, set[Port]]               # switch -> general-engine ingresses that visited it
    reanalysed: int                              # classes re-traced, over all flow_mods
    resumed: int                                 # of those, traced from the flow_mod's cell on

    def _index_base(self, trace: dict[Port, list[np.ndarray]], depth: dict[Port, int]) -> None:
        """Record the cells each class of the full check's batch run came in at (``trace``: cell ->
        arrays of classes, each of one pattern), as one array per cell and pattern: a few
        bytes per (cell, class) instead of dictionary entries, and no per-class path (a class
        leaves this index by joining ``_gone``); ``depth``: the batch run's last hop number per cell."""
        masks = self._masks
        made: list[tuple[_Cell, int]] = []
        parts: list[list[np.ndarray]] = []
        for cell, arrays in trace.items():
            by_mask: dict[int, list[np.ndarray]] = {}
            for xs in arrays:
                if len(xs):
                    by_mask.setdefault(masks[int(xs[0]) >> TAG_SHIFT], []).append(xs)
            if not by_mask:
                continue
            rec = self._keys_at(cell)
            rec.depth = depth.get(cell, _FAST_ROUNDS)
            rec.base = {}
            for mask, xss in by_mask.items():
                made.append((rec, mask))
                parts.append(xss)
        # (a class that came in twice, a loop, is listed twice: harmless, the readers make sets)
        for (rec, mask), got in zip(made, keyed_cells(parts), strict=True):
            rec.base[mask] = got  # type: ignore[index]  # (set just above)

    def _index(self, x: int, mask: int, path: list[Port]) -> None:
        """Record the cells the re-traced class ``x`` (of pattern ``mask``) came in at, in order."""
        recs = self._cell
        t = x >> TAG_SHIFT
        j = x & _IDM
        p: list[Port] = []
        for cell in path:
            if cell in p:  # (a loop: once is enough)
                continue
            p.append(cell)
            rec = recs.get(cell)
            by_mask = rec.keys if rec is not None else None
            if by_mask is None:
                by_mask = self._keys_at(cell).keys
                assert by_mask is not None
            by_key = by_mask.get(mask)
            if by_key is None:
                by_key = by_mask[mask] = {}
            ts = by_key.get(j)
            if ts is None:
                by_key[j] = t
            elif ts.__class__ is int:
                by_key[j] = [ts, t]
            else:
                ts.append(t)
        # a tuple: once the cyclic GC has seen it hold only cells, it stops tracking it
        self._path[x] = tuple(p)

    def _keys_at(self, cell: Port) -> _Cell:
        """The record of ``cell``, made one whose classes are indexed (and its status read) if it
        is not yet."""
        rec = self._cell.get(cell)
        if rec is None:
            rec = self._cell[cell] = _Cell()
        if rec.keys is None:
            rec.keys = {}
            self._cells_of.setdefault(cell[0], []).append(cell)
            if rec.stat == _UNREAD:  # (a re-traced class's walk may have read it already)
                rec.stat = self._status(cell)
        return rec

    def _status(self, cell: Port) -> int | None:
        """How the batch engine meets classes at ``cell``: the port's one pattern, or None
        (several patterns: general engine; or a switch that is down)."""
        s, p = cell
        rec = self._sws[s]
        if not rec.up:
            return None
        by_port = rec.index
        if by_port is not None and hsa_compile.USE_TABLE_INDEX:
            # read off the table's pattern index: building the port's index costs time per rule
            # (hsa_compile.port_pattern, inline: a flow_mod asks once)
            own, wild = by_port.get(p), by_port.get(None)
            if not wild:
                if not own:
                    return 0
                if len(own) == 1:
                    return next(iter(own.values())).mask
            elif not own and len(wild) == 1:
                return next(iter(wild.values())).mask
        net = self._net
        assert net is not None
        pi = net.compiled(s).port(p)
        return pi.fast_mask if pi.ids is not None else None

    def _unindex(self, x: int) -> None:
        self._gone.add(x)  # its entries in the full check's index no longer count
        self._stale.discard(x)
        p = self._path.pop(x, None)
        if not p:
            return
        t = x >> TAG_SHIFT
        j = x & _IDM
        mask = self._masks[t]
        recs = self._cell
        for cell in p:
            by_key = recs[cell].keys[mask]  # type: ignore[index]  # (a cell of a path is indexed)
            ts = by_key[j]
            if ts.__class__ is int:
                del by_key[j]
            else:
                ts.remove(t)
                if len(ts) == 1:
                    by_key[j] = ts[0]

    def _absorb(self, b: _Batch) -> None:
        """Note where each class of the full check's batch run ``b`` ended."""
        out, outcomes = self._out, self._outcomes
        groups: list[tuple[tuple, list[int]]] = []
        groups.extend((("d", h), xs) for h, xs in b.delivered.items())
        groups.extend((("p", s), xs) for s, xs in b.punted.items())
        groups.extend((("f", s), xs) for s, xs in b.filtered.items())
        groups.extend((("x", *k), xs) for k, xs in b.drops.items())
        groups.append((("g",), b.general))
        for key, xs in groups:
            o = outcomes.get(key)
            if o is None:
                o = outcomes[key] = key
            if o[0] not in "xg":
                # nothing known before, nothing to note but the outcome (one C-level update
                # instead of a Python step per class: a million at K=16; from pairs, not
                # from a dict made for it, which would cost a second insertion per class)
                out.update(zip(xs, repeat(o)))
                continue
            for x in xs:
                self._note(x, o, None)

    def _note(self, x: int, key: tuple, touched: dict[int, _Touched] | None) -> None:
        """Note that class ``x`` ended at outcome ``key`` (and, in ``touched``, whether that
        moved it into or out of a blackhole or the general engine's hands)."""
        o = self._outcomes.get(key)
        if o is None:
            o = self._outcomes[key] = key
        out = self._out
        old = out.get(x)
        out[x] = o
        t = x >> TAG_SHIFT
        if old is not None and old[0] in "xg":
            (self._dropx if old[0] == "x" else self._genx)[t].discard(x)
            if touched is not None:
                if old[0] == "x":
                    touched[t].drops = True
                else:
                    touched[t].general = True
        kind = o[0]
        if kind in "xg":
            (self._dropx if kind == "x" else self._genx).setdefault(t, set()).add(x)
            if touched is not None:
                if kind == "x":
                    touched[t].drops = True
                else:
                    touched[t].general = True

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
        ip, v, m = match_wildcard(match)
        touched: dict[int, _Touched] = {}
        redo = self._crossed(switch, ip, v, m)
        # ingress ports on the switch: their entries (so their classes) may have changed
        ins = self._sws[switch].ingresses
        if ip is None:
            for ing in ins.values():
                self._ingress_port(ing, v, m, touched, redo)
        elif ip in ins:  # (a fixed in_port: one probe, not a look at each of the switch's)
            self._ingress_port(ins[ip], v, m, touched, redo)
        # general-engine ingresses whose exploration went through the switch
        seen_at = self._seen_at
        for ing in seen_at.get(switch, ()) if seen_at else ():  # (none in the usual network)
            touched.setdefault(self._tag[ing], _Touched()).general = True
        if redo:
            self._retrace(redo, touched)
        return touched

    def _crossed(self, switch: str, ip: int | None, v: int, m: int) -> dict[int, set[int]]:
        """Per ingress number, the classes that crossed ``switch`` (at in_port ``ip``, None: any)
        with a key the match (v, m) overlaps, and all those that came in at a port whose
        patterns changed (the batch engine may no longer take them there)."""
        redo: dict[int, set[int]] = {}
        self._from = None
        recs = self._cell
        if ip is None:
            at: Iterable[Port] = self._cells_of.get(switch, ())
        else:  # (the usual flow_mod: one cell, no walk over the switch's)
            cell = (switch, ip)
            rec = recs.get(cell)
            at = (cell,) if rec is not None and rec.keys is not None else ()
        for cell in at:
            rec = recs[cell]
            stat = self._status(cell)
            every = stat != rec.stat
            rec.stat = stat
            gone = self._gone
            for mask, got in (rec.base or {}).items():
                xs = cell_classes(got) if every else overlapping_classes(got, mask, v, m)
                for x in xs:
                    if x not in gone:
                        redo.setdefault(x >> TAG_SHIFT, set()).add(x)
            if ip is not None and not every:
                self._from = cell   # (see _retrace: what these classes may skip)
            for mask, by_key in rec.keys.items():  # type: ignore[union-attr]  # (at: indexed cells)
                for j in (by_key if every else overlapping_keys(mask, v, m, by_key)):
                    ts = by_key[j]
                    for t in ((ts,) if ts.__class__ is int else ts):
                        redo.setdefault(t, set()).add(j | (t << TAG_SHIFT))
        return redo

    def _retrace(self, redo: dict[int, set[int]], touched: dict[int, _Touched]) -> None:
        """Forget the classes ``redo`` names and trace them again, one class at a time (see _walk).

        A class of the full check's index found at the flow_mod's cell (``_from``, a fixed
        in_port) is traced from that cell on, not from its ingress: a flow_mod whose match fixes
        the in_port changes only entries of that in_port, and ports and links stay as they are
        between full checks, so every hop before the class first came in there (the index is
        exact for a class never re-traced: nothing on its path has changed) still leads where it
        led.  Those earlier cells keep their entries in the index (the cells after may now be
        stale: a superset, which only costs a needless re-trace later); the class is noted
        ``_stale`` so its next re-trace starts from its ingress again.  The batch engine gives
        up after ``_FAST_ROUNDS`` hops: the class came in at the cell at hop the cell's ``depth`` at
        the latest, and a walk from there that needs more hops than the rest of the budget
        starts over from the ingress."""
        start = self._from
        for t, xs in redo.items():
            tc = touched.get(t)
            if tc is None:
                tc = touched[t] = _Touched()
            ids = self._ids[t]
            live = ids.having(xs) if ids is not None else None
            if not live:
                continue
            if len(live) > 1:
                live.sort()
            tc.classes.update(live)
            self.reanalysed += len(live)
            # (each class touches only its own entries of the index: one class at a time)
            skip = self._skippable(start[0], t, live) if start is not None else ()
            ing, mask = self._ingresses[t], self._masks[t]
            for x in live:
                if x in skip:
                    assert start is not None
                    key, path = self._walk(ing, mask, x, start, _FAST_ROUNDS + 1 - self._cell[start].depth)
                    if key is not None:
                        self.resumed += 1
                        self._index(x, mask, path)
                        self._stale.add(x)
                        self._note(x, key, touched)
                        continue
                    # (out of hops: from the ingress)
                self._unindex(x)
                key, path = self._walk(ing, mask, x)
                assert key is not None  # (from the ingress: an outcome within the whole budget)
                self._index(x, mask, path)
                self._note(x, key, touched)

    def _skippable(self, s: str, t: int, xs: list[int]) -> list[int]:
        """The classes of ``xs`` (of ingress number ``t``) that may be traced from the flow_mod's
        cell on (see _retrace): in the full check's index and never re-traced since, not given
        to the general engine, from an ingress on another switch than the flow_mod's ``s``."""
        if self._ingresses[t][0] == s:
            return []  # (its ingress port is on the switch: classes may come and go there)
        # (a class re-traced since the full check is in ``_gone`` or, traced from a cell on, in
        # ``_stale``: no need to probe ``_path`` too, one more cold map)
        stale, gone, out = self._stale, self._gone, self._out
        skip = []
        for x in xs:
            if x in stale or x in gone:
                continue
            o = out.get(x)
            if o is not None and o[0] != "g":
                skip.append(x)
        return skip

    def _walk(self, ing: Port, mask: int, x: int, start: Port | None = None,
              hops: int = _FAST_ROUNDS) -> tuple[tuple | None, list[Port]]:
        """Re-trace one class from its ingress as the batch engine's rounds would move it
        (:func:`engine._run_batch`: same outcomes, same cells, the same give-up after
        ``_FAST_ROUNDS`` hops), but asking each table for the entry the class hits instead
        of building the port's whole index (after a flow_mod its switch's ports would each
        cost time per rule): see :meth:`_hit`.  Returns where it ended (an outcome key, as the
        full check's batch run's) and the cells it came in at.  (One or two classes per
        flow_mod, a few hops each: the loop reads the switches' up-ness and the links from
        maps, not through the view's methods.)  ``start``: walk from that cell, at most ``hops``
        cells (None instead of an outcome when that is not enough)."""
        recs, cells = self._sws, self._cell
        j = x & _IDM
        path: list[Port] = []
        cell = ing if start is None else start
        for _round in range(hops):
            path.append(cell)
            s, p = cell
            rec = recs[s]
            if not rec.up:
                return ("x", s, p, _DOWN), path
            crec = cells.get(cell)
            if crec is None:
                crec = cells[cell] = _Cell()
            stat = crec.stat
            if stat == _UNREAD:
                stat = crec.stat = self._status(cell)
            if stat is None or stat & ~mask:  # mixed patterns, or finer than the class
                return _GENERAL, path
            # (_probe and _code_of inline for the usual port, one pattern, the class's own)
            by_port = rec.index if stat == mask else None
            own = wild = None
            if by_port is not None:
                own, wild = by_port.get(p), by_port.get(None)
            if own and not wild and len(own) == 1 and (pat := next(iter(own.values()))).mask == mask:
                slot = pat.slot.get(j)
                if slot is None:
                    code = _F_MISS
                else:
                    ps = rec.ps
                    code = shared_code(pat.act[slot], p, ps[1], ps[2]) if ps is not None and ps[0] == _PS_GEN[0] \
                        else self._code_of(s, pat.act[slot], p)
            else:
                code = self._hit(rec.table, s, p, mask, j)
            if code >= 0:
                nxt = rec.next.get(code)
                if nxt is not None:
                    cell = nxt
                    continue
                host = rec.host.get(code)
                if host is None:
                    return ("x", s, p, code), path
                return ("d", host), path
            if code == _F_MISS or code == F_PUNT:
                return ("p", s), path
            if code == F_NOTHING:
                return ("x", s, p, code), path
            if code == F_DROP:
                return ("f", s), path
            return _GENERAL, path
        return (_GENERAL if start is None else None), path

    def _hit(self, table: Any, s: str, p: int, mask: int, j: int) -> int:
        """The fast code (``_F_MISS``: no entry) of the entry that headers of key id ``j`` (of
        pattern ``mask``) arriving on port ``p`` hit in switch ``s``'s ``table``: :meth:`_probe`,
        else ``FlowTable.peek_action_id`` of one of the headers (no entry made), else the entry
        ``FlowTable.peek`` makes."""
        probed, got = self._probe(table, s, p, mask, j)
        if probed:
            return _F_MISS if got is None else got
        key = (p, *unpack(interner(mask)[1][j])[1:])
        if hasattr(table, "peek_action_id"):
            aid = table.peek_action_id(key)
            return _F_MISS if aid is None else self._code_of(s, aid, p)
        entry = table.peek(key)
        net = self._net
        assert net is not None
        return _F_MISS if entry is None else net.compiled(s).code_for(entry.actions, p)

    def _code_of(self, s: str, aid: int, p: int) -> int:
        """The fast code of the action list with id ``aid`` for headers arriving on ``p`` at
        switch ``s`` (:meth:`CompiledSwitch.codes_for_aids`, without compiling the switch again
        after each flow_mod: only its table changes between full checks, not its ports)."""
        rec = self._sws[s]
        ps = rec.ps
        if ps is None or ps[0] != _PS_GEN[0]:
            net = self._net
            assert net is not None
            sw = net.switches[s]
            ps = rec.ps = (_PS_GEN[0], port_state_id(port_state(sw)), sw.ports)
        return shared_code(aid, p, ps[1], ps[2])

    def _probe(self, table: Any, s: str, p: int, mask: int, j: int) -> tuple[bool, int | None]:
        """(True, the fast code, None for a miss) of the entry key id ``j`` of pattern ``mask`` hits
        at port ``p`` of switch ``s`` when the table's pattern index decides it in one probe: no
        pattern at the port (a miss), or one, the key's own (the key id is the table's: keys are
        interned process-wide per pattern, so its winning slot is one probe away); else (False, None)."""
        index = getattr(table, "pattern_index", None)
        if index is None:
            return False, None
        by_port = index()
        own, wild = by_port.get(p), by_port.get(None)
        n = (len(own) if own else 0) + (len(wild) if wild else 0)
        if n == 0:
            return True, None
        if n == 1:  # (hsa_compile.port_pattern, inline)
            pat = next(iter((own or wild).values()))  # (one of them holds it)
            if pat.mask == mask:
                slot = pat.slot.get(j)
                return True, None if slot is None else self._code_of(s, pat.act[slot], p)
        return False, None

    def _code_at(self, table: Any, ing: Port, mask: int, j: int, key: int) -> int | None:
        """The fast code of the entry key ``j`` (of pattern ``mask``, packed ``key``) hits at
        ingress ``ing`` (None: a miss): :meth:`_probe`, else the entry ``FlowTable.peek`` makes."""
        net = self._net
        assert net is not None
        probed, code = self._probe(table, ing[0], ing[1], mask, j)
        if probed:
            return code
        entry = table.peek((ing[1], *unpack(key)[1:]))
        return None if entry is None else net.compiled(ing[0]).code_for(entry.actions, ing[1])

    def _ingress_port(self, ing: Port, v: int, m: int, touched: dict[int, _Touched],
                      redo: dict[int, set[int]]) -> None:
        """A flow_mod on an ingress's own port: classes come and go with its entries."""
        net = self._net
        assert net is not None
        t = self._tag[ing]
        tc = touched.get(t)
        if tc is None:
            tc = touched[t] = _Touched()
        tc.ids = True
        old = self._ids[t]
        shifted = t << TAG_SHIFT
        mask = self._masks[t]
        # the loop over the switch's cells has just read this cell's status when classes come in here
        rec = self._cell.get(ing)
        stat = rec.stat if rec is not None and rec.keys is not None else self._status(ing)
        if old is not None and stat == mask:
            # Same single pattern: only keys inside the match can have come or gone; ask the
            # table about each (one of its headers hits an entry iff the key has one).
            intern, keys = interner(mask)
            cand = set(overlapping_keys(mask, v, m, old))
            if not (mask & ~m) and (v & mask) in intern:
                cand.add(intern[v & mask])
            table = net.switches[ing[0]].table
            for j in sorted(cand):
                code = self._code_at(table, ing, mask, j, keys[j])
                if (code is not None) == (j in old):
                    if code is not None:
                        redo.setdefault(t, set()).add(j | shifted)
                    continue
                if code is None:
                    old.discard(j)
                    self._purge(j | shifted, tc)
                else:
                    old.add(j)
                    redo.setdefault(t, set()).add(j | shifted)
            return
        pi = net.compiled(ing[0]).port(ing[1]) if net.up(ing[0]) else None
        new = KeySet(pi.arrays()[0]) if pi is not None and pi.ids is not None else None
        # the port's pattern changed: the ingress starts over
        for j in old or ():
            self._purge(j | shifted, tc)
        self._ids[t] = new
        redo.pop(t, None)
        tc.general = True
        if new is not None and pi is not None:
            self._masks[t] = pi.fast_mask  # type: ignore[assignment]  # set with ids
            redo[t] = {j | shifted for j in new}
