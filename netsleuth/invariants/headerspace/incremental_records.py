"""What an incremental header-space check (OpenFlow 1.0) keeps per switch and per (switch, in_port)
cell, each in one record: a flow_mod's re-trace then probes one dictionary per switch or cell it
meets, not one per map, each probe a cache miss of its own when a flow_mod comes (the tracker's
state is out of the CPU's caches between flow_mods).  ``incremental_classes.py`` uses them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from netsleuth.invariants.headerspace.batch import _FAST_ROUNDS, _IDM
from netsleuth.invariants.headerspace.general import HsaNet, Port

_UNREAD = -1           # (the status of a cell never read: no pattern is negative)


class _Cell:
    """One cell: its port's pattern when last seen (``stat``: None, several patterns or a switch
    that is down; ``_UNREAD``), the full check's classes that came in there (``base``: class
    pattern -> the classes as :func:`~netsleuth.invariants.headerspace.cellsearch.keyed_cell` keeps
    them), the classes re-traced since (``keys``: class pattern -> key id -> the ingress numbers
    whose class of that key came in, a number or a list; None while the cell has no classes
    indexed) and the last hop number at which the full check's classes came in (``depth``)."""

    __slots__ = ("stat", "base", "keys", "depth")

    def __init__(self) -> None:
        self.stat: int | None = _UNREAD
        self.base: dict[int, memoryview] | None = None
        self.keys: dict[int, dict[int, Any]] | None = None
        self.depth = _FAST_ROUNDS


class _Switch:
    """What a class's re-trace reads of one switch at each hop, in one object: a hop then probes
    one dictionary for its switch, not one per map (up-ness, tables, port states, links), each a
    cache miss of its own when a flow_mod comes (the check of which tables changed reads it
    too, and so does the look for the switch's ingresses).  Made at the full check: a flow_mod
    changes tables' contents (and ``version``, as read after it), none of the rest."""

    __slots__ = ("up", "table", "index", "ps", "next", "host", "ingresses", "version")

    def __init__(self, up: bool, table: Any) -> None:
        self.up = up
        self.table = table
        get = getattr(table, "pattern_index", None)
        self.index: dict | None = get() if get is not None else None   # the table's own, kept up to date
        self.ps: tuple[int, int, dict] | None = None   # (generation, port state id, ports), when first asked
        self.next: dict[int, Port] = {}   # port -> the switch cell it links to
        self.host: dict[int, str] = {}    # port -> the host (or other node) it links to
        self.ingresses: dict[int, Port] = {}   # port -> the check's ingress there, on the switch
        self.version: Any = None          # the table's change counter when last read (see IncrementalHSA)


def switch_records(net: HsaNet, peers: dict[Port, Port | None]) -> dict[str, _Switch]:
    """A :class:`_Switch` per switch of ``net`` (links from the view's ``peers``)."""
    switches = net.switches
    recs = {s: _Switch(net.up(s), sw.table) for s, sw in switches.items()}
    for (s, port), peer in peers.items():
        rec = recs.get(s)
        if rec is None or peer is None:
            continue
        if peer[0] in switches:
            rec.next[port] = peer
        else:
            rec.host[port] = peer[0]
    return recs


class KeySet:
    """The key ids with an entry at one batch ingress port, as an incremental check keeps them: the
    full check's as the port's own int32 array of key ids (``base``, in the port's order; the
    table's sorted array when the port is compiled from its pattern index, which the table
    never writes in place), with the flow_mods' changes beside it (``gone``: keys of ``base``
    removed; ``new``: keys added since, in order).  A dict per ingress made at the full check
    cost a tenth of a second and some 60 MB at FatTree K=16 (a million key ids) for maps of
    which a flow_mod reads one or two entries.

    Iteration: ``base`` without ``gone``, then ``new`` (what a dict would list after the same
    deletions and additions); membership: a bisection of ``base`` (sorted, or a sorted copy)."""

    __slots__ = ("_base", "_sorted", "_gone", "_new")

    def __init__(self, base: Any) -> None:
        self._base = base
        ordered = len(base) < 2 or bool((base[1:] > base[:-1]).all())
        self._sorted = memoryview(base if ordered else np.sort(base))  # type: ignore[arg-type]  # (numpy arrays are buffers)
        # (None while empty: a flow_mod's probe then reads no more objects than it needs)
        self._gone: set[int] | None = None
        self._new: dict[int, None] | None = None

    def __contains__(self, j: object) -> bool:
        return self._has(j)

    def having(self, xs: Iterable[int]) -> list[int]:
        """Those of the classes ``xs`` whose key id (the low 32 bits) is in the set, in order: a
        flow_mod asks this of its one or two classes, and ``in`` per class would be a call from C
        into :meth:`__contains__` each, dearer than these direct calls."""
        has = self._has
        return [x for x in xs if has(x & _IDM)]

    def _has(self, j: object) -> bool:
        new, gone = self._new, self._gone
        if new is not None and j in new:
            return True
        if gone is not None and j in gone:
            return False
        s = self._sorted
        i = bisect_left(s, j)  # type: ignore[call-overload]  # (key ids are ints)
        return i < len(s) and s[i] == j

    def __iter__(self) -> Iterator[int]:
        # (a list's iterator: the checks iterate an ingress's thousand keys at C speed)
        keys: list[int] = self._base.tolist()
        gone = self._gone
        if gone:
            keys = [j for j in keys if j not in gone]
        if self._new:
            keys.extend(self._new)
        return iter(keys)

    def __len__(self) -> int:
        return len(self._base) - len(self._gone or ()) + len(self._new or ())

    def add(self, j: int) -> None:
        """Note that key ``j`` (not in the set) has an entry now."""
        if self._new is None:
            self._new = {}
        self._new[j] = None

    def discard(self, j: int) -> None:
        """Note that key ``j`` (in the set) has no entry any more."""
        if self._new is not None and j in self._new:
            del self._new[j]
            return
        if self._gone is None:
            self._gone = set()
        self._gone.add(j)
