"""Atoms: the units delta debugging prunes, and turning a set of atoms back into valid inputs.

Inputs are grouped by their explicit ``deps`` (never by fingerprints):

* an input that depends on another joins its atom, transitively -- a link
  recovery with its failure, a channel unblock with its block, a controller
  recovery with its crash -- so a pair is kept or pruned as one unit;
* a host migration's dependency on the host's previous migration is the one
  exception: migrations stay separate atoms and, when some are pruned, the
  next surviving migration of the host is **rewritten** to start where the
  host really is (A->B->C minus A->B becomes A->C): a new event with
  ``old_switch``/``old_port`` fixed and ``deps`` re-pointed at the previous
  surviving migration (or none). ``seq``, ``t``, ``id`` and the target are kept.

A dependency on an id that is not among the inputs is ignored (listed in
``Atoms.dangling``). Atoms holding an input the caller marks as not prunable
are *fixed*: part of every candidate, never searched.

A candidate is named by its **key**: the sorted tuple of the indices of its
prunable atoms. Keys are canonical (cache keys) and ordered shortlex
(shorter first, then lexicographically) -- the strict total order that makes
shrinking terminate.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from netsleuth.trace.schema import HostMigration, InputEvent

Key = tuple[int, ...]


def shortlex(key: Key) -> tuple[int, Key]:
    """Sort key of the strict total order on candidates: size first, then atom indices."""
    return (len(key), key)


@dataclass(frozen=True, slots=True)
class Atom:
    """Inputs kept or pruned together; ``index`` orders atoms by their first input."""

    index: int
    events: tuple[InputEvent, ...]
    prunable: bool = True

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(e.id for e in self.events)

    def describe(self) -> str:
        return " + ".join(f"{type(e).kind}:{e.id}" for e in self.events)


class Atoms:
    """The atoms of a sequence of inputs, and :meth:`materialize` from a key back to inputs."""

    def __init__(self, inputs: Sequence[InputEvent], fixed_ids: Iterable[str] = ()) -> None:
        inputs = tuple(inputs)
        self.inputs = inputs
        pos: dict[str, int] = {}
        for i, ev in enumerate(inputs):
            if not isinstance(ev, InputEvent):
                raise TypeError(f"not an input event: {ev!r}")
            if ev.id in pos:
                raise ValueError(f"two inputs share the id {ev.id!r} (positions {pos[ev.id]} and {i})")
            pos[ev.id] = i
        self._pos = pos

        # Migration chains, per host, in input order; the host starts where its first migration left from.
        self._chain: dict[str, frozenset[str]] = {}
        self._initial: dict[str, tuple[str, int]] = {}
        for ev in inputs:
            if isinstance(ev, HostMigration):
                self._initial.setdefault(ev.host, (ev.old_switch, ev.old_port))
        for host in self._initial:
            self._chain[host] = frozenset(e.id for e in inputs if isinstance(e, HostMigration) and e.host == host)

        # Union-find over deps, except a migration's deps on its own host's chain (rewritten instead).
        parent = list(range(len(inputs)))

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        dangling: list[tuple[str, str]] = []
        for i, ev in enumerate(inputs):
            for dep in ev.deps:
                j = pos.get(dep)
                if j is None:
                    dangling.append((ev.id, dep))
                    continue
                if isinstance(ev, HostMigration) and dep in self._chain[ev.host]:
                    continue
                a, b = find(i), find(j)
                if a != b:
                    parent[max(a, b)] = min(a, b)
        self.dangling: tuple[tuple[str, str], ...] = tuple(dangling)

        groups: dict[int, list[int]] = {}
        for i in range(len(inputs)):
            groups.setdefault(find(i), []).append(i)
        fixed = frozenset(fixed_ids)
        atoms = []
        for n, members in enumerate(sorted(groups.values(), key=lambda m: m[0])):
            evs = tuple(inputs[i] for i in members)
            atoms.append(Atom(n, evs, prunable=not any(e.id in fixed for e in evs)))
        self.all: tuple[Atom, ...] = tuple(atoms)
        self.prunable: Key = tuple(a.index for a in atoms if a.prunable)
        self.fixed: Key = tuple(a.index for a in atoms if not a.prunable)
        self._memo: dict[Key, tuple[InputEvent, ...]] = {}

    def __len__(self) -> int:
        return len(self.all)

    def inputs_in(self, key: Key) -> int:
        """How many inputs the candidate ``key`` replays (fixed atoms included)."""
        return sum(len(self.all[i].events) for i in (*self.fixed, *key))

    def materialize(self, key: Key) -> tuple[InputEvent, ...]:
        """The inputs of the prunable atoms in ``key`` plus all fixed atoms, in original order,
        with each host's surviving migrations rewritten into a consistent chain."""
        got = self._memo.get(key)
        if got is not None:
            return got
        chosen = sorted((self._pos[e.id], e) for i in (*self.fixed, *key) for e in self.all[i].events)
        out: list[InputEvent] = []
        where: dict[str, tuple[str, int]] = {}
        last: dict[str, str] = {}
        for _, ev in chosen:
            if isinstance(ev, HostMigration):
                host = ev.host
                cur = where.get(host, self._initial[host])
                prev = last.get(host)
                chain = self._chain[host]
                deps = ((prev,) if prev else ()) + tuple(d for d in ev.deps if d not in chain)
                if (ev.old_switch, ev.old_port) != cur or deps != ev.deps:
                    ev = dataclasses.replace(ev, old_switch=cur[0], old_port=cur[1], deps=deps)
                where[host] = (ev.new_switch, ev.new_port)
                last[host] = ev.id
            out.append(ev)
        result = tuple(out)
        if len(self._memo) < 4096:
            self._memo[key] = result
        return result

    def describe(self, key: Key) -> list[str]:
        return [self.all[i].describe() for i in key]


def fixed_ids_of(inputs: Iterable[InputEvent], keep: Callable[[InputEvent], bool] | None) -> frozenset[str]:
    """Ids of the inputs ``keep`` says must never be pruned."""
    return frozenset(e.id for e in inputs if keep is not None and keep(e))


__all__ = ["Key", "Atom", "Atoms", "shortlex", "fixed_ids_of"]
