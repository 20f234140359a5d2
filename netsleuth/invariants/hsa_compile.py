"""Per-switch transfer functions for header-space analysis, compiled from the flow table.

A :class:`CompiledSwitch` answers, for a header set arriving on ``in_port``,
which entry each part of it hits, with OpenFlow 1.0 priority semantics:
entries are taken in :meth:`FlowTable.entries` order (exact entries first,
then priority, then the table's tie-break) and an entry sees only the
headers no better-ranked entry matched (its *shadowers* are subtracted).
What the entry then does with the headers (its emissions: output ports,
CONTROLLER, set-field rewrites before each output) is computed with
:func:`netsleuth.model.switch.forward` itself, so FLOOD/ALL/IN_PORT, the
"never back out the in port" rule and down or NO_FWD ports behave exactly
as they do for real packets.

Rules are indexed by their exact fields: for each in_port, entries are
grouped by wildcard pattern and hashed on their values, so finding the
entries a header set can hit is a dictionary probe when the set fixes the
pattern's fields (the usual case after the first hop), and a scan of a
lazily built sub-index otherwise.  Nothing is packed or compared until a
port is first used.

Compiled switches are cached across checks and rebuilt when the table or
the ports change (see :func:`compiled`).
"""

from __future__ import annotations

import operator
import weakref
from typing import Any

from netsleuth.model.actions import Enqueue, Output
from netsleuth.model.ofdp import ofp
from netsleuth.model.switch import Switch, forward

from netsleuth.invariants.hsa_space import (SHIFT, HeaderSpace, Rewrite, Term, make_term, pack, rewrite_for,
                                            term_empty)

_ACTIONS = operator.attrgetter("actions")
OFPFW_IN_PORT = ofp.OFPFW_IN_PORT
CONTROLLER = ofp.OFPP_CONTROLLER
OFPP_MAX = ofp.OFPP_MAX

# Emission kinds.
PORT, CTRL, SPECIAL = 0, 1, 2
# Fast codes (values of PortIndex.fast): >= 0 a plain output port, else:
F_PUNT = -1      # only CONTROLLER emissions
F_NOTHING = -2   # no emission at all (a drop rule, or outputs that go nowhere)
F_COMPLEX = -3   # several emissions, rewrites before an output, or a special port

Emission = tuple[int, int, tuple[Rewrite, ...]]  # (kind, port, rewrites applied before it)

_PACKERS: dict[tuple[int, ...], Any] = {}


def _packer(masks: tuple[int, ...]):
    """A fast ``values -> packed int`` for one wildcard pattern (only its matched fields)."""
    key = tuple(1 if masks[i] else 0 for i in range(1, 12))
    fn = _PACKERS.get(key)
    if fn is None:
        idx = [i for i in range(1, 12) if masks[i]]
        if not idx:
            fn = _PACKERS[key] = lambda vals: 0
        else:
            terms = " | ".join(f"(v[{i}] << {SHIFT[i]})" for i in idx)
            fn = _PACKERS[key] = eval(f"lambda v: {terms}")  # noqa: S307 - built from constants only
    return fn


class Group:
    """Entries relevant at one in_port that share one wildcard pattern."""

    __slots__ = ("mask", "best", "subs")

    def __init__(self, mask: int) -> None:
        self.mask = mask
        self.best: dict[int, int] = {}        # packed values -> best-ranked entry index
        self.subs: dict[int, dict[int, list[int]]] = {}  # sub-mask -> sub-key -> indices (ascending)

    def probe(self, v: int, m: int) -> list[int] | None:
        """Indices of entries overlapping the wildcard ``(v, m)`` (ascending), or None."""
        gm = self.mask
        if not (gm & ~m):
            i = self.best.get(v & gm)
            return None if i is None else [i]
        common = gm & m
        sub = self.subs.get(common)
        if sub is None:
            sub = {}
            for key, i in self.best.items():
                sub.setdefault(key & common, []).append(i)
            for lst in sub.values():
                lst.sort()
            self.subs[common] = sub
        return sub.get(v & common)


class PortIndex:
    """The entries an in_port sees, grouped by pattern.

    When they all share one pattern (``fast_mask``), ``ids`` maps the interned id of
    each key (see :func:`interner`) to a fast code (see ``F_*``): what a header class
    fixing all the pattern's bits meets there, in one probe."""

    __slots__ = ("groups", "fast_mask", "ids", "_key_code", "_codes", "memo")

    def __init__(self) -> None:
        self.groups: list[Group] = []
        self.fast_mask: int | None = None
        self.ids: dict[int, int] | None = None
        self._key_code: dict[int, int] | None = None
        self._codes: tuple[int, ...] | None = None
        self.memo: dict = {}   # the batch engine's memory of its last visit (see headerspace)

    def codes(self) -> tuple[int, ...]:
        if self._codes is None:
            self._codes = tuple(sorted(set(self.ids.values())))  # type: ignore[union-attr]
        return self._codes

    def key_code(self) -> dict[int, int]:
        """packed key -> fast code (for classes of a finer pattern)."""
        if self._key_code is None:
            keys = interner(self.fast_mask)[1]  # type: ignore[arg-type]
            self._key_code = {keys[j]: c for j, c in self.ids.items()}  # type: ignore[union-attr]
        return self._key_code


# Interned keys, per pattern mask: key -> small id, and id -> key.  Ids are stable for the
# life of the process, so compiled switches built at different times agree on them.
_INTERN: dict[int, tuple[dict[int, int], list[int]]] = {}


def interner(mask: int) -> tuple[dict[int, int], list[int]]:
    t = _INTERN.get(mask)
    if t is None:
        t = _INTERN[mask] = ({}, [])
    return t


class CompiledSwitch:
    """Transfer functions of one switch for its current table and ports."""

    def __init__(self, switch: Switch) -> None:
        # No reference to the switch itself: the cache is keyed weakly on it.
        self.ports = switch.ports
        self.table = switch.table
        self.table_entries = switch.table.entries()
        self.entries = self.table_entries
        self.actions = list(map(_ACTIONS, self.entries))
        self.port_state = _port_state(switch)
        # in_port (None = wildcarded) -> wildcards pattern -> entry indices (ascending = rank order)
        by_port: dict[int | None, dict[int, list[int]]] = {}
        for i, e in enumerate(self.entries):
            m = e.match
            w = m.wildcards
            ip = None if w & OFPFW_IN_PORT else m.in_port
            d = by_port.get(ip)
            if d is None:
                d = by_port[ip] = {}
            lst = d.get(w | OFPFW_IN_PORT)
            if lst is None:
                d[w | OFPFW_IN_PORT] = [i]
            else:
                lst.append(i)
        self._by_port = by_port
        self._ports: dict[int, PortIndex] = {}
        self._wc: dict[int, tuple[int, int]] = {}
        self._shadow: dict[tuple[int, int], tuple[tuple[int, int], ...]] = {}
        self._ems: dict[tuple[int, int], tuple[Emission, ...]] = {}
        self._ems_by_actions: dict[tuple[int, int], tuple[Any, tuple[Emission, ...]]] = {}

    # ------------------------------------------------------------ validity
    def still_valid(self, switch: Switch) -> bool:
        """Whether ``switch``'s table and ports are what this was compiled from."""
        if switch.table is not self.table or switch.ports is not self.ports \
                or _port_state(switch) != self.port_state:
            return False
        version = getattr(switch.table, "version", None)
        if version is not None and self._version is not None:
            return version == self._version  # a change counter: O(1)
        now = switch.table.entries()
        if now != self.table_entries:  # identity comparison per element first: C speed
            return False
        if list(map(_ACTIONS, now)) != self.actions:  # MODIFY changes actions in place
            return False
        self._version = version
        return True

    _version: Any = None

    # ------------------------------------------------------------ indexes
    def port(self, p: int) -> PortIndex:
        pi = self._ports.get(p)
        if pi is None:
            pi = self._ports[p] = self._build_port(p)
        return pi

    def _build_port(self, p: int) -> PortIndex:
        pi = PortIndex()
        pats: dict[int, list[int]] = {}
        for src in (self._by_port.get(p), self._by_port.get(None)):
            if src:
                for w, lst in src.items():
                    cur = pats.get(w)
                    pats[w] = lst if cur is None else sorted(cur + lst)  # lists are never changed
        entries = self.entries
        single = len(pats) == 1
        for w, lst in sorted(pats.items()):
            masks = entries[lst[0]].match.masks
            gm = pack(masks)
            g = Group(gm)
            packer = _packer(masks)
            best = g.best
            if single:
                # One pattern: also the batch engine's index, in the same pass.
                intern, keys = interner(gm)
                actions = self.actions
                by_actions: dict[int, tuple[Any, int]] = {}
                ids: dict[int, int] = {}
                for i in lst:
                    key = packer(entries[i].match.values)
                    if key in best:
                        continue  # an identical match ranked lower: never hit here
                    best[key] = i
                    j = intern.get(key)
                    if j is None:
                        j = intern[key] = len(keys)
                        keys.append(key)
                    acts = actions[i]
                    hit = by_actions.get(id(acts))
                    if hit is None or hit[0] is not acts:
                        hit = by_actions[id(acts)] = (acts, self.fast_code(i, p))
                    ids[j] = hit[1]
                pi.fast_mask = gm
                pi.ids = ids
            else:
                for i in lst:
                    key = packer(entries[i].match.values)
                    if key not in best:
                        best[key] = i
            pi.groups.append(g)
        if not pats:
            pi.fast_mask = 0
            pi.ids = {}
        return pi

    def wildcard(self, i: int) -> tuple[int, int]:
        wc = self._wc.get(i)
        if wc is None:
            m = self.entries[i].match
            wc = self._wc[i] = (pack(m.values), pack(m.masks))
        return wc

    def candidates(self, p: int, v: int, m: int) -> list[int]:
        """Entries relevant at ``p`` that overlap ``(v, m)``, best first."""
        out: list[int] = []
        for g in self.port(p).groups:
            lst = g.probe(v, m)
            if lst:
                out.extend(lst)
        if len(out) > 1:
            out.sort()
        return out

    def shadowers(self, i: int, p: int) -> tuple[tuple[int, int], ...]:
        """Wildcards of better-ranked entries relevant at ``p`` overlapping entry ``i``."""
        key = (i, p)
        sh = self._shadow.get(key)
        if sh is None:
            v, m = self.wildcard(i)
            sh = self._shadow[key] = tuple(self.wildcard(j) for j in self.candidates(p, v, m) if j < i)
        return sh

    # ------------------------------------------------------------ classification
    def classify(self, p: int, hs: HeaderSpace) -> tuple[list[tuple[int | None, HeaderSpace]], set[int]]:
        """Split ``hs`` arriving on ``p`` by the entry each part hits (None: table miss);
        also returns every entry that overlaps ``hs``."""
        pieces: dict[int | None, list[Term]] = {}
        seen: set[int] = set()
        for t in hs.terms:
            v, m, ds = t
            cands = self.candidates(p, v, m)
            seen.update(cands)
            if not cands:
                pieces.setdefault(None, []).append(t)
                continue
            for i in cands:
                ev, em = self.wildcard(i)
                nv, nm = v | ev, m | em
                diffs = ds + self.shadowers(i, p)
                nt = make_term(nv, nm, diffs)
                if nt is None or (nt[2] and term_empty(nt)):
                    continue
                pieces.setdefault(i, []).append(nt)
            miss = make_term(v, m, ds + tuple(self.wildcard(i) for i in cands))
            if miss is not None and not (miss[2] and term_empty(miss)):
                pieces.setdefault(None, []).append(miss)
        return [(i, HeaderSpace(ts)) for i, ts in pieces.items()], seen

    # ------------------------------------------------------------ actions
    def emissions(self, i: int, p: int) -> tuple[Emission, ...]:
        key = (i, p)
        ems = self._ems.get(key)
        if ems is None:
            acts = self.actions[i]
            cached = self._ems_by_actions.get((id(acts), p))
            if cached is not None and cached[0] is acts:
                ems = cached[1]
            else:
                ems = _emissions(acts, p, self.ports)
                self._ems_by_actions[(id(acts), p)] = (acts, ems)
            self._ems[key] = ems
        return ems

    def fast_code(self, i: int, p: int) -> int:
        ems = self.emissions(i, p)
        if not ems:
            return F_NOTHING
        if len(ems) == 1:
            kind, port, rws = ems[0]
            if kind == PORT and not rws:
                return port
            if kind == CTRL:
                return F_PUNT
            return F_COMPLEX
        if all(k == CTRL for k, _p, _r in ems):
            return F_PUNT
        return F_COMPLEX

    def entry(self, i: int):
        return self.entries[i]


def _emissions(actions: tuple, in_port: int, ports: dict) -> tuple[Emission, ...]:
    """What an action list does to a packet arriving on ``in_port``: (kind, port, rewrites)."""
    out: list[Emission] = []
    chain: list[Rewrite] = []
    for a in actions:
        if isinstance(a, (Output, Enqueue)):
            for port, _pkt, _len in forward((a,), None, in_port, ports):
                if port == CONTROLLER:
                    kind = CTRL
                elif port > OFPP_MAX:
                    kind = SPECIAL
                else:
                    kind = PORT
                out.append((kind, port, tuple(chain)))
        else:
            chain.append(rewrite_for(a))
    return tuple(out)


def _port_state(switch: Switch) -> tuple:
    return tuple((p.port_no, p.link_up, p.config) for p in switch.ports.values())


_CACHE: "weakref.WeakKeyDictionary[Switch, CompiledSwitch]" = weakref.WeakKeyDictionary()


def compiled(switch: Switch, *, cache: bool = True) -> CompiledSwitch:
    """The compiled form of ``switch``, reused while its table and ports are unchanged."""
    if cache:
        cs = _CACHE.get(switch)
        if cs is not None and cs.still_valid(switch):
            return cs
    cs = CompiledSwitch(switch)
    cs._version = getattr(switch.table, "version", None)
    if cache:
        _CACHE[switch] = cs
    return cs
