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

from netsleuth.invariants.headerspace.of13.switch13 import Compiled13, _TableView, _translate
from netsleuth.invariants.headerspace.of13.symbolic import Sym
from netsleuth.model.of13.flowtable import FlowEntry13
from netsleuth.model.of13.pipeline import Pipeline13

GAP = 1 << 32   # between the ranks of neighbouring entries when a table is read whole


class _Table:
    """What a :class:`LiveCompiled` last saw of one table: its entries by rank, the rank of each
    (by id; the entries are held, so an id is not reused while it is here), each entry's
    in_port (None: any) and the ranks per in_port."""

    __slots__ = ("entries", "rank", "port", "by")

    def __init__(self, entries: list[FlowEntry13]) -> None:
        self.entries: dict[int, FlowEntry13] = {}
        self.rank: dict[int, int] = {}
        self.port: dict[int, int | None] = {}
        self.by: dict[int | None, dict[int, None]] = {}
        for i, e in enumerate(entries):
            self.add((i + 1) * GAP, e)

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
        super().__init__(pipe)
        self._tabs: dict[int, _Table] = {}
        self._how: dict[tuple[Any, ...], tuple[Sym, int, int, int]] = {}   # view key -> how it was built

    def _tab(self, t: int) -> _Table:
        tab = self._tabs.get(t)
        if tab is None:
            tab = self._tabs[t] = _Table(self.pipe.tables.entries(t))
        return tab

    def _build(self, t: int, sym: Sym, in_port: int, md: int, tid: int) -> _TableView:
        tab = self._tab(t)
        ranked = []
        for r in sorted([*tab.by.get(in_port, ()), *tab.by.get(None, ())]):
            e = tab.entries[r]
            w = _translate(e, sym, in_port, md, tid)
            if w is not None:
                ranked.append((r, e, w))
        self._how[(t, sym.key, in_port, md, tid)] = (sym, in_port, md, tid)
        return _TableView(ranked)

    def sync(self, t: int | None = None) -> None:
        """Bring the views of table ``t`` (None: of every table) up to the table's entries."""
        for tt in sorted(self._tabs) if t is None else [t]:
            if tt in self._tabs:
                self._sync(tt)

    def _sync(self, t: int) -> None:
        tab = self._tabs[t]
        now = self.pipe.tables.entries(t)
        ids = list(map(id, now))
        cur = set(ids)
        gone = tab.rank.keys() - cur
        came_ids = cur - tab.rank.keys()
        if not gone and not came_ids:
            return
        came = sorted(ids.index(x) for x in came_ids)
        views = [(k, tv) for k, tv in self._views.items() if k[0] == t]
        for x in sorted(tab.rank[x] for x in gone):
            tab.remove(x)
            for _k, tv in views:
                tv.drop(x)
        new: dict[int, int] = {}
        for i, j in _runs(came):   # each run of new neighbours spread evenly between the old ones around it
            lo = tab.rank[ids[i - 1]] if i else 0
            hi = tab.rank[ids[j + 1]] if j + 1 < len(ids) else lo + (j - i + 2) * GAP
            step = (hi - lo) // (j - i + 2)
            if step < 1:   # no room left between the neighbours: read the table whole again
                self._reset(t)
                return
            for n in range(i, j + 1):
                new[ids[n]] = lo + (n - i + 1) * step
        for i in came:
            e, r = now[i], new[ids[i]]
            tab.add(r, e)
            p = tab.port[r]
            for k, tv in views:
                sym, in_port, md, tid = self._how[k]
                if p is None or p == in_port:
                    w = _translate(e, sym, in_port, md, tid)
                    if w is not None:
                        tv.put(r, e, w)

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
