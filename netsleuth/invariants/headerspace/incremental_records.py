"""What an incremental header-space check (OpenFlow 1.0) keeps per switch and per (switch, in_port)
cell, each in one record: a flow_mod's re-trace then probes one dictionary per switch or cell it
meets, not one per map, each probe a cache miss of its own when a flow_mod comes (the tracker's
state is out of the CPU's caches between flow_mods).  ``incremental_classes.py`` uses them.
"""

from __future__ import annotations

from typing import Any

from netsleuth.invariants.headerspace.batch import _FAST_ROUNDS
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
    cache miss of its own when a flow_mod comes.  Made at the full check: a flow_mod changes
    tables' contents, none of these."""

    __slots__ = ("up", "table", "index", "ps", "next", "host")

    def __init__(self, up: bool, table: Any) -> None:
        self.up = up
        self.table = table
        get = getattr(table, "pattern_index", None)
        self.index: dict | None = get() if get is not None else None   # the table's own, kept up to date
        self.ps: tuple[int, int, dict] | None = None   # (generation, port state id, ports), when first asked
        self.next: dict[int, Port] = {}   # port -> the switch cell it links to
        self.host: dict[int, str] = {}    # port -> the host (or other node) it links to


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
