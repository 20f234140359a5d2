"""What one transition of the model did: its footprint (what it read and wrote, for DPOR's
independence) and the property violations it caused.
"""

from __future__ import annotations

from collections import deque

ANY = ("*",)  # footprint object that conflicts with every other (see independent)


class Effects:
    """What one transition did: footprint for DPOR, violations for the search.

    A plain slotted class rather than a dataclass with default factories: one is made
    per transition, and that constructor was a measurable share of firing one.
    """

    __slots__ = ("reads", "writes", "ft_reads", "ft_writes", "violations")
    #: Whether the footprint is kept: the firing code skips building what a search without
    #: footprints would only drop (ViolationsOnly).
    footprint = True

    def __init__(self) -> None:
        self.reads: set = set()
        self.writes: set = set()
        self.ft_reads: list = []        # (switch idx, packet fields) flow-table lookups
        self.ft_writes: list = []       # (switch idx, Match) flow-table changes
        self.violations: list = []


class _Discard(deque):
    """A footprint set or list nobody will read: ``add`` and ``append`` drop the item (a deque
    of length 0, so both stay calls into C)."""

    add = deque.append


_DISCARD = _Discard(maxlen=0)


class ViolationsOnly(Effects):
    """Effects of a search that reads only the violations (no sleep sets): the footprint is
    dropped as it is recorded, which spares four containers per transition."""

    __slots__ = ()
    footprint = False
    # class attributes shadow the slots: the firing code adds to them unchanged
    reads = writes = ft_reads = ft_writes = _DISCARD  # type: ignore[assignment]  # a sink, not a set

    def __init__(self) -> None:  # only the violations are kept
        self.violations = []


def independent(a: Effects, b: Effects) -> bool:
    """Whether two transitions fired from the same state commute (by their footprints)."""
    aw, bw = a.writes, b.writes
    if ANY in aw or ANY in bw:
        return False
    if aw and (not aw.isdisjoint(bw) or not aw.isdisjoint(b.reads)):
        return False
    if bw and not bw.isdisjoint(a.reads):
        return False
    for i, wm in a.ft_writes:
        for j, fields in b.ft_reads:
            if i == j and (fields is None or wm.matches(fields)):
                return False
        for j, wm2 in b.ft_writes:
            if i == j and wm.overlaps(wm2):
                return False
    for i, wm in b.ft_writes:
        for j, fields in a.ft_reads:
            if i == j and (fields is None or wm.matches(fields)):
                return False
    return True
