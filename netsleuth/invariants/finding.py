"""One invariant violation, as every check reports it (:class:`Finding`).

A module of its own, importing nothing of netsleuth: checks that work on
other data than a :class:`~netsleuth.invariants.view.NetworkView` (the
kernel tables of routing daemons, :mod:`netsleuth.defined.daemons.routecheck`)
word their violations the same way without importing the OpenFlow model
that :mod:`.forwarding` walks (os-ken's codecs: most of a second of a
command-line process's start).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Finding:
    """One invariant violation, in the terms a user needs to act on it."""

    invariant: str
    message: str
    hosts: tuple[str, ...] = ()
    switches: tuple[str, ...] = ()
    details: dict = field(default_factory=dict)
