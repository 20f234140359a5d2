"""Ordering functions: the paper's, and alternatives for exploring orders in LS.

An ordering maps an entry's :class:`~netsleuth.defined.message.Tags` to a
sort ``key``; every node delivers its entries in key order. ``level`` is a
prefix of the key that strictly grows along every causal chain (a child's
level is larger than its parent's). That property is what makes both modes
well defined:

* RB: a rollback can never need to undo the message that caused it, so
  cascading rollbacks terminate (the paper's footnote 1: "never rolling back
  messages with lesser d_i values").
* LS: the lockstep coordinator processes one level at a time across all
  nodes; everything with that level is already in the receive buffers when
  the processing phase starts, so LS delivers exactly RB's per-node order.

Orderings (``by_name``):

``defined``   the paper's: group, estimated delay, origin, origin sequence
              (then sender, send index). Matches the common arrival order.
``hops``      group, causal chain length, origin, ... (delay-agnostic).
``origin``    group, origin, sequence, then delay: one origin's whole causal
              chain before the next origin's.
``reverse``   like ``origin`` with origins and senders descending.
``random[:SEED]``  group, chain length, then a seeded hash: the paper's
              "random ordering" baseline, still causal.

Every ordering keeps one origin's external events in their sequence order:
a node's link going down and then up again within one timestep must not be
seen the other way round.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from netsleuth.defined.message import Tags
from netsleuth.errors import NetsleuthError


class OrderingError(NetsleuthError):
    pass


def _desc(s: str) -> tuple[int, ...]:
    """A key for strings in descending order (prefixes sort after extensions)."""
    return tuple(-ord(c) for c in s) + (1,)


@dataclass(frozen=True)
class Ordering:
    name: str
    key: Callable[[Tags], tuple]
    level: Callable[[Tags], tuple]

    def __repr__(self) -> str:
        return f"Ordering({self.name})"


def _defined() -> Ordering:
    return Ordering("defined",
                    lambda t: (t.group, t.delay, t.origin, t.oseq, t.sender, t.sidx),
                    lambda t: (t.group, t.delay))


def _hops() -> Ordering:
    return Ordering("hops",
                    lambda t: (t.group, t.hops, t.origin, t.oseq, t.sender, t.sidx),
                    lambda t: (t.group, t.hops))


def _origin() -> Ordering:
    return Ordering("origin",
                    lambda t: (t.group, t.origin, t.oseq, t.delay, t.sender, t.sidx),
                    lambda t: (t.group, t.origin, t.oseq, t.delay))


def _reverse() -> Ordering:
    return Ordering("reverse",
                    lambda t: (t.group, _desc(t.origin), t.oseq, t.delay, _desc(t.sender), -t.sidx),
                    lambda t: (t.group, _desc(t.origin), t.oseq, t.delay))


def _random(seed: int) -> Ordering:
    salt = str(seed).encode()

    def h(s: str) -> bytes:
        return hashlib.blake2b(s.encode(), digest_size=8, key=salt).digest()

    return Ordering(f"random:{seed}",
                    lambda t: (t.group, t.hops, h(t.origin), t.oseq, h(f"{t.sender}|{t.sidx}")),
                    lambda t: (t.group, t.hops))


NAMES = ("defined", "hops", "origin", "reverse", "random[:SEED]")


def by_name(name: str) -> Ordering:
    """Parse an ordering name; unknown names raise :class:`OrderingError`."""
    base, _, arg = name.partition(":")
    if base == "random":
        try:
            return _random(int(arg or 0))
        except ValueError:
            raise OrderingError(f"bad ordering {name!r}: the seed must be an integer",
                                "use random or random:SEED, e.g. random:3") from None
    table = {"defined": _defined, "hops": _hops, "origin": _origin, "reverse": _reverse}
    if base not in table or arg:
        raise OrderingError(f"unknown ordering {name!r}", f"use one of: {', '.join(NAMES)}")
    return table[base]()
