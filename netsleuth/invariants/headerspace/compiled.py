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
lazily built sub-index otherwise.

The per-rule part of that work (packing each match, interning its key,
grouping by in_port, pattern and action list) is done by the flow table as
entries come and go (:meth:`FlowTable.pattern_index`, NetPlumber-style), so
compiling a switch whose ports each see one pattern costs time per port and
distinct action list, not per rule: the first check of a big network no
longer sorts and packs millions of rules.  Ports with several patterns, and
the general engine's structures (entry positions in canonical order), are
still built from the sorted entries, lazily, on first use.

Compiled switches are cached across checks and rebuilt when the table or
the ports change (see :func:`compiled`).
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Iterable
from typing import Any

# numpy turns the batch engine's per-class work
# into a few C loops per (switch, in_port): at FatTree K=16 a cold check moves ~5 million
# classes, and a dictionary probe per class in Python was most of its time.
import numpy as np

from netsleuth.invariants.headerspace.codes import (
    _PS_GEN,
    Emission,
    _code,
    _emissions,
    port_state,
    port_state_id,
    shared_code,
)
from netsleuth.invariants.headerspace.space import HeaderSpace, interner, pack
from netsleuth.invariants.headerspace.space import packer as _packer
from netsleuth.invariants.headerspace.terms import Term, make_term, term_empty
from netsleuth.model.flowtable import SlotMap
from netsleuth.model.headerbits import intern_new
from netsleuth.model.ofdp import ofp
from netsleuth.model.switch import Switch

_ACTIONS = operator.attrgetter("actions")
OFPFW_IN_PORT = ofp.OFPFW_IN_PORT


class PatternGroup:
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

    When they all share one pattern (``fast_mask``), ``ids`` holds the interned id of
    each key (see :func:`interner`) with an entry there, and :meth:`code` says what a
    header class fixing all the pattern's bits meets there (a fast code, see ``F_*``).
    Compiled from a table's pattern index, ``ids`` *is* that index's key id -> slot map
    and the code comes from the slot's action-list id (``act``, ``code_by_act``): nothing
    per rule is copied.  Otherwise ``ids`` maps key id -> code.  ``groups`` (the general
    engine's index, by entry position) is built on first use: the batch engine never
    needs it, and building it costs time per rule."""

    __slots__ = ("_groups", "_build", "fast_mask", "ids", "act", "code_by_act", "pat", "_key_code", "_codes",
                 "memo", "_keys", "_arrays", "_bits")

    def __init__(self) -> None:
        self._groups: list[PatternGroup] | None = []
        self._build: Any = None
        self.fast_mask: int | None = None
        self.ids: dict[int, int] | None = None
        self.act: Any = None                   # the table's slot -> action-list id column, if from its index
        self.code_by_act: dict[int, int] = {}  # action-list id -> fast code (with act)
        self.pat: Any = None                   # the table's PatternIndex, if built from it
        self._key_code: dict[int, int] | None = None
        self._codes: tuple[int, ...] | None = None
        self.memo: dict = {}   # the batch engine's memory of its last visit (see engine)
        self._keys: Any = None
        self._arrays: tuple[np.ndarray, np.ndarray] | None = None
        self._bits: int | None = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(key ids, their fast codes) as two int32 arrays, same order as ``ids`` (built on
        first use, 8 bytes per entry): the batch engine's vectorized split scatters them
        into a dense code-by-key-id scratch array and gathers its classes' codes from it."""
        if self._arrays is None:
            ids = self.ids
            assert ids is not None  # a fast port
            n = len(ids)
            if isinstance(ids, SlotMap):  # the table's own sorted arrays: nothing copied
                kids, slots = ids.arrays()
            else:
                kids = np.fromiter(ids.keys(), dtype=np.int32, count=n)
                slots = np.fromiter(ids.values(), dtype=np.int32, count=n)
            if self.act is None:
                codes = slots
            else:
                # a copy of the table's action-id column at these slots (the temporary view
                # goes at once: a live export would stop the table's array from growing)
                aids = np.frombuffer(self.act, dtype=np.uint32)[slots]
                codes = _codes_of(aids, self.code_by_act)
            self._arrays = (kids, codes)
        return self._arrays

    def key_ids(self) -> Any:
        """The key ids with an entry here, as an object of its own per compiled port (its
        identity tells a check whether the port was compiled again; ``ids`` itself may be
        the table's live map, which outlives compiled forms)."""
        if self._keys is None:
            self._keys = self.ids if self.act is None else _KeyIds(self.ids)
        return self._keys

    @property
    def groups(self) -> list[PatternGroup]:
        if self._groups is None:
            self._groups = self._build()
            self._build = None
        return self._groups

    def pattern_bits(self) -> int:
        """Every header bit some entry here tests (the union of the groups' masks)."""
        if self._bits is None:
            bits = 0
            for g in self.groups:
                bits |= g.mask
            self._bits = bits
        return self._bits

    def codes(self) -> tuple[int, ...]:
        if self._codes is None:
            self._codes = tuple(sorted(set(self.code_map().values())))
        return self._codes

    def code(self, j: int) -> int | None:
        """The fast code of key id ``j`` here (None: no entry)."""
        v = self.ids.get(j)  # type: ignore[union-attr]  # ids is set on a fast port
        if v is None or self.act is None:
            return v
        return self.code_by_act[self.act[v]]

    def code_map(self) -> dict[int, int]:
        """key id -> fast code (a dict per rule: for tests and small ports)."""
        if self.act is None:
            return self.ids  # type: ignore[return-value]  # ids is set on a fast port
        ids = self.ids
        assert ids is not None  # a fast port
        # the codes of all slots in a few numpy passes, then one C-level dict build
        kids, slots = list(ids.keys()), list(ids.values())
        aids = np.frombuffer(self.act, dtype=np.uint32)[np.array(slots, dtype=np.int64)]
        return dict(zip(kids, _codes_of(aids, self.code_by_act).tolist(), strict=True))

    def key_code(self) -> dict[int, int]:
        """packed key -> fast code (for classes of a finer pattern)."""
        if self._key_code is None:
            keys = interner(self.fast_mask)[1]  # type: ignore[arg-type]  # fast_mask is set with ids
            self._key_code = {keys[j]: c for j, c in self.code_map().items()}
        return self._key_code


class _KeyIds:
    """The key ids of a table's :class:`SlotMap`, iterated afresh each time (a list of
    them per ingress port would cost ~36 bytes per entry, kept for the life of the port)."""

    __slots__ = ("_ids",)

    def __init__(self, ids: Any) -> None:
        self._ids = ids

    def __iter__(self) -> Any:
        return iter(self._ids.keys())

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, j: object) -> bool:
        return j in self._ids


def _codes_of(aids: np.ndarray, code_by_act: dict[int, int]) -> np.ndarray:
    """Fast codes of action-list ids ``aids`` (every one a key of ``code_by_act``)."""
    if not len(aids):
        return np.zeros(0, dtype=np.int32)
    top = max(code_by_act)
    if top < 1 << 20:  # action-list ids are small process-wide counters: a lookup table
        lut = np.zeros(top + 1, dtype=np.int32)
        for a, c in code_by_act.items():
            lut[a] = c
        return lut[aids]
    uniq, inv = np.unique(aids, return_inverse=True)
    return np.array([code_by_act[int(a)] for a in uniq], dtype=np.int32)[inv]


# Compile from the tables' incrementally maintained pattern indexes (FlowTable.pattern_index)
# when possible; False forces the from-scratch path (the benchmark's baseline).
USE_TABLE_INDEX = True


class TableChanged(RuntimeError):
    """A compiled switch was asked to index a table that changed since it was compiled."""


class CompiledSwitch:
    """Transfer functions of one switch for its current table and ports.

    Compiling is cheap when the table keeps a pattern index (see
    :meth:`FlowTable.pattern_index`): single-pattern ports get the batch engine's index
    straight from it, and the general engine's structures (entries in canonical order,
    grouped by in_port and pattern) are built from the table only when first needed, which
    is valid only while the table's ``version`` is still the compiled one (checked)."""

    def __init__(self, switch: Switch, *, use_index: bool | None = None) -> None:
        # No reference to the switch itself: the cache is keyed weakly on it.
        self.ports = switch.ports
        self.table = switch.table
        self.port_state = port_state(switch)
        self._ps: tuple[int, int] | None = None  # (generation, port state id), see codes_for_aids
        self._version = getattr(switch.table, "version", None)
        if use_index is None:
            use_index = USE_TABLE_INDEX
        index = getattr(switch.table, "pattern_index", None)
        self._index = index() if use_index and index is not None and self._version is not None else None
        self._entries: list | None = None
        self._actions: list | None = None
        self._by_port: dict[int | None, dict[int, list[int]]] | None = None
        if self._index is None:
            self._load()
        self._ports: dict[int, PortIndex] = {}
        self._wc: dict[int, tuple[int, int]] = {}
        self._shadow: dict[tuple[int, int], tuple[tuple[int, int], ...]] = {}
        self._ems: dict[tuple[int, int], tuple[Emission, ...]] = {}
        self._ems_by_actions: dict[tuple[int, int], tuple[Any, tuple[Emission, ...]]] = {}
        # The batch engine's last run over the network this switch is in: (inputs, results,
        # ingresses left to the general engine); see engine._batch.
        self.last_batch: tuple | None = None

    def _load(self) -> None:
        """Entries in canonical order, their actions, and indices by in_port and pattern."""
        if self._entries is not None:
            return
        if self._index is not None and getattr(self.table, "version", None) != self._version:
            raise TableChanged("the flow table changed after this switch was compiled; "
                               "call compiled.compiled(switch) again")
        entries = self.table.entries()
        # in_port (None = wildcarded) -> wildcards pattern -> entry indices (ascending = rank order)
        by_port: dict[int | None, dict[int, list[int]]] = {}
        for i, e in enumerate(entries):
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
        self._actions = list(map(_ACTIONS, entries))
        self._by_port = by_port
        self._entries = entries

    @property
    def entries(self) -> list:
        if self._entries is None:
            self._load()
        return self._entries  # type: ignore[return-value]  # _load() set it

    table_entries = entries

    @property
    def actions(self) -> list:
        if self._entries is None:
            self._load()
        return self._actions  # type: ignore[return-value]  # _load() set it

    # ------------------------------------------------------------ validity
    def still_valid(self, switch: Switch) -> bool:
        """Whether ``switch``'s table and ports are what this was compiled from."""
        if switch.table is not self.table or switch.ports is not self.ports \
                or port_state(switch) != self.port_state:
            return False
        version = getattr(switch.table, "version", None)
        if version is not None:
            # a change counter: O(1).  A form compiled while the table had none was built by
            # scanning entries, and its ports the slow way: build it again from the counter.
            return version == self._version
        if self._entries is None:
            return False  # compiled lazily from a counter that is now gone: nothing to compare
        now = switch.table.entries()
        if now != self._entries:  # identity comparison per element first: C speed
            return False
        return list(map(_ACTIONS, now)) == self._actions  # MODIFY changes actions in place

    # ------------------------------------------------------------ indexes
    def port(self, p: int) -> PortIndex:
        pi = self._ports.get(p)
        if pi is None:
            pi = self._ports[p] = self._port_from_index(p) or self._build_port(p)
        return pi

    def _port_from_index(self, p: int) -> PortIndex | None:
        """The port's index straight from the table's pattern index, when one pattern is
        relevant at ``p`` and comes from one source (in_port ``p`` or wildcarded)."""
        index = self._index
        if index is None:
            return None
        if self.table.version != self._version:
            raise TableChanged("the flow table changed after this switch was compiled; "
                               "call compiled.compiled(switch) again")
        n, pat = port_pattern(index, p)
        if n > 1:
            return None  # several patterns (or one from both sources): the general build
        pi = PortIndex()
        if pat is None:  # nothing is relevant here: no groups either
            pi.fast_mask = 0
            pi.ids = {}
            return pi
        pi._groups = None
        pi._build = lambda: self._build_port(p, batch_index=False).groups
        cba = self.codes_for_aids(pat.act_count, p)
        pi._codes = tuple(sorted(set(cba.values())))
        pi.fast_mask = pat.mask
        pi.ids = pat.slot
        pi.act = pat.act
        pi.code_by_act = cba
        pi.pat = pat
        return pi

    def hit_entry(self, p: int, key: int):
        """The entry a header with packed bits ``key`` (all of the port's single pattern)
        hits at ``p``, or None."""
        pi = self.port(p)
        if pi.pat is not None:
            if self.table.version != self._version:
                raise TableChanged("the flow table changed after this switch was compiled; "
                                   "call compiled.compiled(switch) again")
            j = interner(pi.fast_mask)[0].get(key)  # type: ignore[arg-type]  # fast_mask is set with ids
            return None if j is None else pi.pat.winner(j)
        i = pi.groups[0].best.get(key) if pi.groups else None
        return None if i is None else self.entries[i]

    def _build_port(self, p: int, batch_index: bool = True) -> PortIndex:
        """The port's index built from the sorted entries: its pattern groups, and when one
        pattern is relevant at ``p`` and ``batch_index``, the batch engine's index too (a port
        compiled from the table's pattern index has that one already).  Each entry's wildcard
        is noted on the way: its packed values are its key in its group."""
        self._load()
        pi = PortIndex()
        pats: dict[int, list[int]] = {}
        by_port = self._by_port
        for src in (by_port.get(p), by_port.get(None)):  # type: ignore[union-attr]  # built with the switch
            if src:
                for w, lst in src.items():
                    cur = pats.get(w)
                    pats[w] = lst if cur is None else sorted(cur + lst)  # lists are never changed
        entries = self.entries
        wcs = self._wc
        single = batch_index and len(pats) == 1
        for _w, lst in sorted(pats.items()):
            masks = entries[lst[0]].match.masks
            gm = pack(masks)
            g = PatternGroup(gm)
            packer = _packer(masks)
            best = g.best
            if single:
                # One pattern: also the batch engine's index, in the same pass.
                intern = interner(gm)[0]
                actions = self.actions
                by_actions: dict[int, tuple[Any, int]] = {}
                ids: dict[int, int] = {}
                for i in lst:
                    key = packer(entries[i].match.values)
                    if key in best:
                        continue  # an identical match ranked lower: never hit here
                    best[key] = i
                    wcs[i] = (key, gm)
                    j = intern.get(key)
                    if j is None:
                        j = intern_new(gm, key)
                    acts = actions[i]
                    hit = by_actions.get(id(acts))
                    if hit is None or hit[0] is not acts:
                        hit = by_actions[id(acts)] = (acts, self.fast_code(i, p))
                    ids[j] = hit[1]
                pi.fast_mask = gm
                pi.ids = ids
            else:
                for i in lst:
                    wc = wcs.get(i)  # (an entry wildcarding in_port is in every port's groups: packed once)
                    key = packer(entries[i].match.values) if wc is None else wc[0]
                    if key not in best:
                        best[key] = i
                        wcs[i] = (key, gm)
            pi._groups.append(g)  # type: ignore[union-attr]  # a list while the port is built
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
        return _overlapping(self.port(p).groups, v, m)

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
        also returns every entry that overlaps ``hs``.

        Each term is looked up in the port's index once.  The part of it an entry takes is the
        term minus the better-ranked entries that overlap that part, and every such entry
        overlaps the term, so it is among the term's own candidates before this one: when the
        term meets few entries (the usual case, a class of one header pattern) those are its
        differences, with no look-up of the entry's shadowers; when it meets many (a wide
        term, where most of them miss each other) the entry's shadowers, cached, are fewer.
        Both give the same term (:func:`make_term` drops the differences that miss it).

        A term without differences that fixes every bit an entry at ``p`` tests (a class of
        the port's patterns, or finer) lies inside each entry it overlaps: all of it goes to
        the best-ranked one, as it is.  A set of one term that goes whole to one entry (or to
        none), the usual case past the first hop, is that piece itself (sets are read-only)."""
        pi = self.port(p)
        groups = pi.groups
        bits = pi.pattern_bits()
        wildcard = self.wildcard
        pieces: dict[int | None, list[Term]] = {}
        seen: set[int] = set()
        terms = hs.terms
        one = len(terms) == 1
        for t in terms:
            v, m, ds = t
            cands = _overlapping(groups, v, m)
            if not cands:
                if one:
                    return [(None, hs)], seen
                pieces.setdefault(None, []).append(t)
                continue
            seen.update(cands)
            if not (ds or bits & ~m):
                if one:
                    return [(cands[0], hs)], seen
                pieces.setdefault(cands[0], []).append(t)
                continue
            ws = tuple(map(wildcard, cands))
            few = len(cands) <= _FEW_CANDIDATES
            for k, i in enumerate(cands):
                ev, em = ws[k]
                nt = make_term(v | ev, m | em, ds + ws[:k] if few else ds + self.shadowers(i, p))
                if nt is None or (nt[2] and term_empty(nt)):
                    continue
                pieces.setdefault(i, []).append(nt)
            miss = make_term(v, m, ds + ws)
            if miss is not None and not (miss[2] and term_empty(miss)):
                pieces.setdefault(None, []).append(miss)
        return [(i, HeaderSpace(ts)) for i, ts in pieces.items()], seen

    # ------------------------------------------------------------ actions
    def emissions(self, i: int, p: int) -> tuple[Emission, ...]:
        key = (i, p)
        ems = self._ems.get(key)
        if ems is None:
            ems = self._ems[key] = self.emissions_for(self.actions[i], p)
        return ems

    def emissions_for(self, acts: tuple, p: int) -> tuple[Emission, ...]:
        """What action list ``acts`` does to headers arriving on ``p`` (cached per list)."""
        cached = self._ems_by_actions.get((id(acts), p))
        if cached is not None and cached[0] is acts:
            return cached[1]
        ems = _emissions(acts, p, self.ports)
        self._ems_by_actions[(id(acts), p)] = (acts, ems)
        return ems

    def fast_code(self, i: int, p: int) -> int:
        return _code(self.emissions(i, p), self.actions[i])

    def code_for_aid(self, aid: int, p: int) -> int:
        """:meth:`codes_for_aids` of one action list."""
        return self.codes_for_aids((aid,), p)[aid]

    def codes_for_aids(self, aids: Iterable[int], p: int) -> dict[int, int]:
        """:meth:`code_for` of each action list with interned id in ``aids`` (see ``FlowTable``'s
        action ids), shared by every switch with the same ports and state: the switches of a
        fat tree all ask the same few questions (one call per port: 80,000 lists at K=16)."""
        ps = self._ps
        if ps is None or ps[0] != _PS_GEN[0]:  # (ids handed out before a clear mean nothing)
            ps = self._ps = (_PS_GEN[0], port_state_id(self.port_state))
        ps_id, ports = ps[1], self.ports
        return {aid: shared_code(aid, p, ps_id, ports) for aid in aids}

    def code_for(self, acts: tuple, p: int) -> int:
        """:meth:`fast_code` of an action list."""
        return _code(self.emissions_for(acts, p), acts)

    def entry(self, i: int):
        return self.entries[i]


# A term meeting at most this many entries takes its differences from its own candidates (see
# CompiledSwitch.classify): the k-th entry then gets k - 1 of them to clip.
_FEW_CANDIDATES = 8


def _overlapping(groups: list[PatternGroup], v: int, m: int) -> list[int]:
    """Entries of ``groups`` (a port's pattern groups) that overlap ``(v, m)``, best first (a
    list to read, not to change: with one group, the group's own)."""
    if len(groups) == 1:
        return groups[0].probe(v, m) or []
    out: list[int] = []
    for g in groups:
        lst = g.probe(v, m)
        if lst:
            out.extend(lst)
    if len(out) > 1:
        out.sort()
    return out


def port_pattern(index: dict, p: int) -> tuple[int, Any]:
    """How many patterns of a table's pattern index (``FlowTable.pattern_index()``) a packet
    arriving at port ``p`` may hit (those of in_port ``p`` and those wildcarding it), and the
    :class:`PatternIndex` when there is exactly one (else None).  One pattern is what the batch
    engine takes; none means every header misses."""
    own, wild = index.get(p) or {}, index.get(None) or {}
    n = len(own) + len(wild)
    return n, (next(iter((own or wild).values())) if n == 1 else None)


_CACHE: weakref.WeakKeyDictionary[Switch, CompiledSwitch] = weakref.WeakKeyDictionary()


def compiled(switch: Switch, *, cache: bool = True) -> CompiledSwitch:
    """The compiled form of ``switch``, reused while its table and ports are unchanged."""
    if cache:
        cs = _CACHE.get(switch)
        if cs is not None and cs.still_valid(switch):
            return cs
    cs = CompiledSwitch(switch)
    if cache:
        _CACHE[switch] = cs
    return cs
