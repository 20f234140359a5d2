"""The 1.3 exploration kept as a tree of hops, with what each hop read (for the incremental engine).

:func:`~netsleuth.invariants.headerspace.of13.engine.explore13` walks an ingress
with a stack: it pops a hop, runs the switch's pipeline on the hop's header
set, files the events the hop ends in and pushes the hops it sends on.  The
events of an ingress therefore come out in depth-first order, a hop's own
events first, then the subtrees of the hops it pushed, the last pushed first.

:class:`ExplorationHop` is one such hop kept alive: its input (switch, in_port, injected headers,
current header, path, rules, SELECT choices), its own events, the hops it pushed, and
what its run read from the switch: every table lookup (table id, the injected headers
that reached it, the current-header mapping, in_port, metadata, tunnel_id) and every
group it executed or that an entry it hit names. A message that changes a table can
change a hop's run only through a lookup whose headers its match overlaps (an add, a
modify or a delete, strict or not, touches only entries inside its match); a GROUP_MOD
only through a hop that executed that group or hit an entry naming it (a DELETE removes
those entries). Such a hop is run again and its subtree rebuilt; every other subtree
keeps its events, the very same objects, so the checks can tell what did not move by
identity. :meth:`ExplorationHop.flat` lists a subtree's events in explore13's order, so an
ingress's :class:`Reach13` rebuilt from the tree is the one explore13 would return (the
shared :func:`hop13`, or the short road of ``road.py`` before it, runs every hop either way).
"""

from __future__ import annotations

from typing import Any

from netsleuth.invariants.headerspace.of13.engine import Event13, Hop13, Net13, Reach13, add_event, hop13
from netsleuth.invariants.headerspace.of13.road import road_hop
from netsleuth.invariants.headerspace.of13.switch13 import Compiled13, _Switch13
from netsleuth.model.of13.actions import Group
from netsleuth.model.of13.headerbits import FULL13, SHIFT13

_DST_SH = SHIFT13["eth_dst"]
_DST_FULL = FULL13["eth_dst"] << _DST_SH
_MAC = FULL13["eth_dst"]

# a lookup a hop made: (table id, injected headers, current-header mapping, in_port, metadata, tunnel_id)
Lookup = tuple[int, Any, Any, int, int, int]


class _Recording(_Switch13):
    """A pipeline run that notes its table lookups and the groups it executes."""

    def __init__(self, comp: Compiled13, node_ids: Any, alts: dict[int, int], lookups: list[Lookup],
                 groups: list[int]) -> None:
        super().__init__(comp, node_ids, alts)
        self.lookups = lookups
        self.groups = groups

    def _tables(self, br: Any, in_port: int, table_id: int, aset: Any, out: list[Any]) -> None:
        st = br.st
        self.lookups.append((table_id, st.orig, st.sym, in_port, st.metadata, st.tunnel_id))
        super()._tables(br, in_port, table_id, aset, out)

    def _noted(self, lookups: list[Lookup]) -> None:
        self.lookups.extend(lookups)

    def _group(self, group_id: int, b: Any, in_port: int, depth: int) -> list[Any]:
        self.groups.append(group_id)
        return super()._group(group_id, b, in_port, depth)


class ExplorationHop:
    """One hop of an ingress's exploration, kept with its subtree (see the module docstring)."""

    __slots__ = ("item", "ing", "parent", "own", "kids", "lookups", "groups", "alive", "_flat", "size")

    def __init__(self, item: Hop13, ing: int, parent: ExplorationHop | None) -> None:
        self.item = item
        self.ing = ing                 # the ingress number it belongs to
        self.parent = parent
        self.own: list[Event13] = []
        self.kids: list[ExplorationHop] = []
        self.lookups: list[Lookup] = []
        self.groups: list[int] = []
        self.alive = True
        self._flat: list[Event13] | None = None
        self.size = 0                  # hops in the subtree (explore13's count), set by flat()

    @property
    def switch(self) -> str:
        return self.item[0]

    def run(self, net: Net13, alts: dict[int, int]) -> list[ExplorationHop]:
        """Run this hop (its switch's pipeline on its headers): its events and new child hops."""
        lookups: list[Lookup] = []
        got = road_hop(net, self.item, lookups)
        if got is not None:   # the short road's entries only output: they name no group
            self.own, pushes = got
            self.groups = []
        else:
            self.own, pushes, self.groups = _general(net, self.item, alts, lookups)
        self.lookups = lookups
        ing = self.ing
        self.kids = [ExplorationHop(p, ing, self) for p in pushes]
        self._flat = None
        return self.kids

    def grow(self, net: Net13, alts: dict[int, int], budget: int) -> list[ExplorationHop]:
        """Run this hop and every hop below it; the hops run (:class:`OverBudget` past ``budget``)."""
        done: list[ExplorationHop] = []
        stack = [self]
        while stack:
            h = stack.pop()
            done.append(h)
            if len(done) > budget:
                raise OverBudget
            stack.extend(h.run(net, alts))
        return done

    def kill(self) -> list[ExplorationHop]:
        """Mark every hop below this one dead (their index entries are dropped lazily)."""
        dead: list[ExplorationHop] = []
        stack = list(self.kids)
        while stack:
            h = stack.pop()
            h.alive = False
            dead.append(h)
            stack.extend(h.kids)
        return dead

    def dirty(self) -> None:
        """Forget the flattened events of this hop and of every hop above it."""
        h: ExplorationHop | None = self
        while h is not None:
            h._flat = None
            h = h.parent

    def flat(self) -> list[Event13]:
        """This subtree's events in explore13's order (cached until :meth:`dirty`)."""
        if self._flat is not None:
            return self._flat
        # post-order without recursion: a hop is flattened once its kids are
        stack: list[tuple[ExplorationHop, bool]] = [(self, False)]
        while stack:
            h, ready = stack.pop()
            if h._flat is not None:
                continue
            if not ready:
                stack.append((h, True))
                stack.extend((k, False) for k in h.kids if k._flat is None)
                continue
            out = list(h.own)
            size = 1
            for k in reversed(h.kids):
                out += k._flat  # type: ignore[arg-type]
                size += k.size
            h._flat = out
            h.size = size
        return self._flat  # type: ignore[return-value]


def _general(net: Net13, item: Hop13, alts: dict[int, int], lookups: list[Lookup],
             ) -> tuple[list[Event13], list[Hop13], list[int]]:
    """A hop run the general way, noting its table lookups in ``lookups``: its events, pushed
    hops, and the groups it ran or that the entries it hit name, run or not (deleting a group
    removes those entries)."""
    groups: list[int] = []

    def make(comp: Compiled13, node_ids: Any, alts_: dict[int, int]) -> _Switch13:
        return _Recording(comp, node_ids, alts_, lookups, groups)

    events, pushes = hop13(net, item, alts, make)
    n0 = len(item[5])
    for _c, _k, ev in events:
        for _s, _t, e in ev.rules[n0:]:
            groups.extend(_groups_of(e))
    for p in pushes:
        for _s, _t, e in p[5][n0:]:
            groups.extend(_groups_of(e))
    return events, pushes, list(dict.fromkeys(groups))


def _groups_of(entry: Any) -> list[int]:
    """The groups an entry's apply- and write-actions name."""
    inst = entry.instructions
    acts = inst.apply or ()
    if inst.write:
        acts = (*acts, *inst.write)
    return [a.group_id for a in acts if type(a) is Group]


class OverBudget(Exception):
    """An ingress needs more hops than the budget: explore13 would truncate it."""


def reach_of(root: ExplorationHop, ing: tuple[str, int], alts: dict[int, int]) -> Reach13:
    """The :class:`Reach13` explore13 returns for the ingress whose tree is ``root``."""
    r = Reach13(ing)
    for cat, key, ev in root.flat():
        add_event(r, cat, key, ev)
    r.hops = root.size
    r.alts = alts
    return r


def dst_of(lk: Lookup) -> int | None:
    """The one injected eth_dst a lookup's headers all have, when the current header still
    carries it; else None.  The index files lookups under it, so a message whose match fixes
    eth_dst looks only at lookups of that destination and at those filed under None."""
    orig, sym = lk[1], lk[2]
    if sym.view("eth_dst") != "eth_dst":
        return None
    val = None
    for v, m, _d in orig.terms:
        if m & _DST_FULL != _DST_FULL:
            return None
        x = (v >> _DST_SH) & _MAC
        if val is None:
            val = x
        elif x != val:
            return None
    return val
