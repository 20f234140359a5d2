"""Table views that follow their tables entry by entry (for the incremental 1.3 engine).

A :class:`~netsleuth.invariants.headerspace.of13.switch13.Compiled13` builds a view of a table
(its entries as wildcards over the injected headers, for one current-header mapping) once and
keeps it while the table is unchanged.  After a FLOW_MOD the incremental engine needs the
views of the changed table again; building them anew reads every entry of the table (a
thousand and more on a FatTree switch) for the one or two a message changes.

:class:`LiveCompiled` keeps, per table, the entries it last saw and a *rank* per entry: ints
in the table's order with gaps between them.  :meth:`LiveCompiled.sync` compares the table
with what it saw (by identity: a MODIFY keeps the entry, whose instructions the views read
when they are used), gives each new entry a rank between its neighbours' and puts it in every
view of the table (translated for that view); an entry gone is taken out of them.  When two
neighbours leave no room, the table's views are dropped and built anew at the next lookup.
A view kept this way holds the same entries in the same order as one built from scratch,
so every lookup answers the same (``tests/test_headerspace13_tableviews.py`` checks it).
"""

from __future__ import annotations

from typing import Any

from netsleuth.invariants.headerspace.of13.switch13 import Compiled13, _TableView, _translate, translated_view
from netsleuth.invariants.headerspace.of13.symbolic import Sym
from netsleuth.model.of13.flowtable import FlowEntry13
from netsleuth.model.of13.pipeline import Pipeline13

GAP = 1 << 32   # between the ranks of neighbouring entries when a table is read whole


class _Table:
    """What a :class:`LiveCompiled` last saw of one table: its entries by rank, the rank of each
    (by id; the entries are held, so an id is not reused while it is here), each entry's
    in_port (None: any) and the ranks per in_port."""

    __slots__ = ("entries", "rank", "port", "by", "serial")

    def __init__(self, entries: list[FlowEntry13], serial: int) -> None:
        self.serial = serial   # the table's FlowTables.serial when last read
        self.entries: dict[int, FlowEntry13] = {}
        self.rank: dict[int, int] = {}
        self.port: dict[int, int | None] = {}
        self.by: dict[int | None, dict[int, None]] = {}
        rank, port, by = self.rank, self.port, self.by
        for i, e in enumerate(entries):   # add() for each, inline: a table is read whole at a cold check
            r = (i + 1) * GAP
            m = e.match.get("in_port")
            p = None if m is None else m[0]
            self.entries[r] = e
            rank[id(e)] = r
            port[r] = p
            got = by.get(p)
            if got is None:
                by[p] = {r: None}
            else:
                got[r] = None

    def add(self, r: int, e: FlowEntry13) -> None:
        m = e.match.get("in_port")
        p = None if m is None else m[0]
        self.entries[r] = e
        self.rank[id(e)] = r
        self.port[r] = p
        self.by.setdefault(p, {})[r] = None

    def remove(self, r: int) -> None:
        e = self.entries.pop(r)
        del self.rank[id(e)]
        p = self.port.pop(r)
        del self.by[p][r]


class LiveCompiled(Compiled13):
    """A compiled pipeline whose table views are updated entry by entry (:meth:`sync`)."""

    def __init__(self, pipe: Pipeline13) -> None:
        super().__init__(pipe, signed=False)   # kept up to date by sync, never checked against its pipeline
        self._tabs: dict[int, _Table] = {}
        self._how: dict[tuple[Any, ...], tuple[Sym, int, int, int]] = {}   # view key -> how it was built

    def _tab(self, t: int) -> _Table:
        tab = self._tabs.get(t)
        if tab is None:
            tables = self.pipe.tables
            tab = self._tabs[t] = _Table(tables.entries(t), tables.serial(t))
        return tab

    def _build(self, t: int, sym: Sym, in_port: int, md: int, tid: int) -> _TableView:
        tab = self._tab(t)
        tv = translated_view(sorted([*tab.by.get(in_port, ()), *tab.by.get(None, ())]), tab.entries, sym, in_port,
                             md, tid)
        self._how[(t, sym.key, in_port, md, tid)] = (sym, in_port, md, tid)
        tv.memo = {}   # ranks are kept: pieces of terms can be remembered
        return tv

    def sync(self, t: int | None = None) -> None:
        """Bring the views of table ``t`` (None: of every table) up to the table's entries."""
        for tt in sorted(self._tabs) if t is None else [t]:
            if tt in self._tabs:
                self._sync(tt)

    def _sync(self, t: int) -> None:
        tab = self._tabs[t]
        tables = self.pipe.tables
        now = tables.entries(t)
        got = self._changes(tab, t, now)
        tab.serial = tables.serial(t)
        if got is None:
            return
        gone, came = got
        views = [(k, tv) for k, tv in self._views.items() if k[0] == t]
        for r in gone:
            tab.remove(r)
            for _k, tv in views:
                tv.drop(r)
        new: dict[int, int] = {}
        for i, j in _runs(came):   # each run of new neighbours spread evenly between the old ones around it
            lo = tab.rank[id(now[i - 1])] if i else 0
            hi = tab.rank[id(now[j + 1])] if j + 1 < len(now) else lo + (j - i + 2) * GAP
            step = (hi - lo) // (j - i + 2)
            if step < 1:   # no room left between the neighbours: read the table whole again
                self._reset(t)
                return
            for n in range(i, j + 1):
                new[n] = lo + (n - i + 1) * step
        for i in came:
            e, r = now[i], new[i]
            tab.add(r, e)
            p = tab.port[r]
            for k, tv in views:
                sym, in_port, md, tid = self._how[k]
                if p is None or p == in_port:
                    w = _translate(e, sym, in_port, md, tid)
                    if w is not None:
                        tv.put(r, e, w)

    def _changes(self, tab: _Table, t: int, now: list[FlowEntry13]) -> tuple[list[int], list[int]] | None:
        """What changed in table ``t`` since ``tab`` was last brought up to it: the ranks of
        the entries gone (ascending) and the indexes in ``now`` of the entries that came
        (ascending); None for nothing.  From the table's journal when it reaches back that far,
        else by comparing the entries."""
        journal = self.pipe.tables.changes_since(t, tab.serial)
        if journal is not None:
            net: dict[int, tuple[FlowEntry13, bool]] = {}
            for e, added in journal:
                if not added and id(e) in net:   # came and went since: nothing
                    del net[id(e)]
                else:
                    net[id(e)] = (e, added)
            gone = sorted(tab.rank[x] for x, (_e, added) in net.items() if not added)
            pos = [self.pipe.tables.position(e) for e, added in net.values() if added]
            came = sorted(i for i in pos if i is not None)
        else:
            ids = list(map(id, now))
            cur = set(ids)
            gone = sorted(tab.rank[x] for x in tab.rank.keys() - cur)
            came = sorted(ids.index(x) for x in cur - tab.rank.keys())
        return (gone, came) if gone or came else None

    def _reset(self, t: int) -> None:
        self._tabs.pop(t, None)
        for k in [k for k in self._views if k[0] == t]:
            del self._views[k]
            del self._how[k]


def _runs(idx: list[int]) -> list[tuple[int, int]]:
    """Sorted indices as maximal runs of consecutive ones, (first, last)."""
    out: list[tuple[int, int]] = []
    for i in idx:
        if out and out[-1][1] == i - 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return out
