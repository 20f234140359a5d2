"""What one transition of the model did: its footprint (what it read and wrote, for DPOR's
independence) and the property violations it caused.
"""

from __future__ import annotations

from collections import deque

ANY = ("*",)  # footprint object that conflicts with every other (see explore.independent)


class Effects:
    """What one transition did: footprint for DPOR, violations for the search.

    A plain slotted class rather than a dataclass with default factories: one is made
    per transition, and that constructor was a measurable share of firing one.
    """

    __slots__ = ("reads", "writes", "ft_reads", "ft_writes", "violations")

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
    # class attributes shadow the slots: the firing code adds to them unchanged
    reads = writes = ft_reads = ft_writes = _DISCARD  # type: ignore[assignment]  # a sink, not a set

    def __init__(self) -> None:  # only the violations are kept
        self.violations = []
