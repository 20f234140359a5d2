"""An OpenFlow 1.0 flow table: the semantics controllers are tested against.

Controllers' bugs hide in the corners of flow_mod semantics (identical-match
replacement, strict vs non-strict, out_port filters, exact-match precedence,
timeouts), so this table implements those corners as the 1.0 specification
states them, and says plainly where it had to choose:

* Ties.  Overlapping entries of equal priority are undefined in 1.0; here
  the entry that comes first in :meth:`FlowTable.entries` order wins: exact
  entries first, then higher priority, then the more specific match (more
  matched bits), then :meth:`Match.sort_key`.  The rule depends only on the
  table's contents, never on install order, so two tables with equal
  :meth:`FlowTable.canonical_key` forward identically (the model checker
  relies on this).
* MODIFY changes the actions and, as 1.0 specifies (and OVS documents), the
  cookie of every entry it selects; counters, timeouts, flags and the
  install time stay.  (OVS also restarts the hard timeout on modify; the
  specification counts it from installation, and so does this table.)
  When nothing is selected MODIFY returns ``[]`` and the caller performs the
  ADD, because only the caller holds the flow_mod's timeouts and flags.
* out_port filtering accepts Output and Enqueue actions to the port (OVS
  treats an enqueue as an output to its port).
* Time is whatever ``now`` the caller passes (an injected clock).  An entry
  expires when ``now >= deadline``; :meth:`lookup` never expires anything by
  itself, because expiry is an event the core must schedule and record.

Storage.  Entries live in columns grouped by in_port and wildcard pattern
(:mod:`netsleuth.model.flowindex`), about 80 bytes per rule; :class:`FlowEntry`
objects (:mod:`netsleuth.model.flowentry`) are snapshots made when asked for.
The same groups are header-space analysis' index of the table
(:meth:`FlowTable.pattern_index`).

Lookup is the hot path (model checking, thousand-switch networks): the
groups a packet's in_port can hit, exact ones first then by descending
maximum priority, one dict probe each, stopping as soon as no remaining group
can win.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator
from typing import Any

from os_ken.ofproto import ofproto_v1_0 as ofp

from netsleuth.model.actions import Action, Enqueue, Output
from netsleuth.model.flowentry import FlowEntry, FlowOverlapError, FlowTableError
from netsleuth.model.flowindex import (
    MATCH_CACHE_MAX,
    MISS_ACTIONS,
    PatternIndex,
    SlotMap,
    action_id,
    actions_of,
)
from netsleuth.model.headerbits import intern_new, pack
from netsleuth.model.match import Match

OFPP_NONE = ofp.OFPP_NONE
OFPFW_IN_PORT = ofp.OFPFW_IN_PORT
_INF = float("inf")
_and = operator.and_

# The entry, its errors and the storage live in their own modules (see __all__): importable from here too.


Handle = tuple[PatternIndex, int]


def _rank_of(h: Handle) -> tuple[Any, ...]:
    pat, s = h
    return (0 if pat.exact else 1, -pat.prio[s], -pat.bits, pat.wildcards, pat.in_port or 0, pat.keys[pat.kid[s]])


class FlowTable:
    """A single OpenFlow 1.0 flow table (see the module docstring for the rules)."""

    __slots__ = ("_hs", "_n", "_order", "_sorted", "_serial", "version")
    # every table's ``version`` bumps in this process, summed: "did any table but this one
    # change?" is then two reads instead of one per table (see :meth:`changes`)
    _changes = 0

    # Tables up to this size keep their materialized, sorted entries between changes
    # (model checking asks for them at every state); bigger ones make them on request.
    SORTED_CACHE_MAX = 4096

    def __init__(self) -> None:
        # Bumped by every change of entries or actions (not counters): lets analyses
        # cache per table and tell "unchanged" in O(1) (see invariants/headerspace/compiled.py).
        self.version = 0
        # in_port (None: wildcarded) -> pattern (wildcards with OFPFW_IN_PORT) -> PatternIndex:
        # the entries themselves (see PatternIndex), grouped as header-space analysis wants them.
        self._hs: dict[int | None, dict[int, PatternIndex]] = {}
        self._n = 0
        self._order: dict[int, list[PatternIndex]] = {}  # in_port -> the patterns a lookup visits, in order
        self._sorted: list[FlowEntry] | None = None
        self._serial = 0  # the last FlowEntry.serial given out

    # ------------------------------------------------------------ flow_mod
    def add(self, match: Match, priority: int, actions: Iterable[Action], *, cookie: int = 0,
            idle_timeout: int = 0, hard_timeout: int = 0, flags: int = 0, now: float = 0.0) -> FlowEntry | None:
        """OFPFC_ADD.  Returns the entry with identical match and priority it replaced
        (whose counters are thereby discarded), or None."""
        for name, value in (("priority", priority), ("idle_timeout", idle_timeout), ("hard_timeout", hard_timeout)):
            if not isinstance(value, int) or not 0 <= value <= 0xFFFF:
                raise FlowTableError(f"flow {name}={value!r} is out of range", f"give {name} as an int in 0..65535")
        if flags & ofp.OFPFF_CHECK_OVERLAP:
            clashes = [e for e in self._all() if e.priority == priority and e.match.overlaps(match)]
            if clashes:
                raise FlowOverlapError(match, priority, min(clashes, key=FlowEntry.rank))
        pat, kid, old = self._claim(match, priority, want_old=True)
        self._put(pat, kid, priority, action_id(tuple(actions)), cookie, idle_timeout, hard_timeout, flags, now)
        return old

    def _claim(self, match: Match, priority: int, want_old: bool) -> tuple[PatternIndex, int, FlowEntry | None]:
        """Where an ADD of (``match``, ``priority``) goes: its pattern index and key id, with
        the entry of identical match and priority removed (returned when ``want_old``)."""
        pat = self._pattern(match, create=True)
        assert pat is not None  # created
        key = pat.packer(match._values)
        kid = pat.intern.get(key)
        old: FlowEntry | None = None
        if kid is None:
            kid = intern_new(pat.mask, key)
        else:
            for s in pat.slots_of(kid):
                if pat.prio[s] == priority:
                    if want_old:
                        old = pat.entry(s, match)
                    self._drop(pat, s, keep_pattern=True)
                    break
        return pat, kid, old

    def add_many(self, flows: Iterable[tuple[Match, int, tuple[Action, ...]]], *, now: float = 0.0) -> int:
        """ADD each (match, priority, actions) in turn (no cookie, timeouts or flags): the
        same table as calling :meth:`add` for each, without its per-call overhead (building
        big tables).  Returns how many were added."""
        n = 0
        last_acts: tuple[Action, ...] | None = None
        aid = 0
        for match, priority, actions in flows:
            if not isinstance(priority, int) or not 0 <= priority <= 0xFFFF:
                raise FlowTableError(f"flow priority={priority!r} is out of range",
                                     "give priority as an int in 0..65535")
            if actions is not last_acts:
                last_acts = actions
                aid = action_id(tuple(actions))
            pat, kid, _old = self._claim(match, priority, want_old=False)
            self._put(pat, kid, priority, aid, 0, 0, 0, 0, now)
            n += 1
        return n

    def modify(self, match: Match, actions: Iterable[Action], *, strict: bool, priority: int = 0,
               now: float = 0.0, cookie: int | None = None) -> list[FlowEntry]:
        """OFPFC_MODIFY(_STRICT): new actions (and ``cookie`` unless None) for the selected
        entries, in canonical order.  Non-strict selects every entry ``match`` covers
        (priority ignored); strict the entry with identical match and priority.  Returns
        ``[]`` (the entries as modified) when nothing is selected: the caller then ADDs.
        ``now`` is accepted for symmetry; modifying restarts no timer."""
        aid = action_id(tuple(actions))
        selected = self._select(match, strict, priority)
        for pat, s in selected:
            pat.set_actions(s, aid)
            if cookie is not None:
                if cookie:
                    pat.cookie[s] = cookie
                else:
                    pat.cookie.pop(s, None)
        if selected:
            self.version += 1
            FlowTable._changes += 1
            self._sorted = None
        return [pat.entry(s) for pat, s in selected]

    def delete(self, match: Match, *, strict: bool, priority: int = 0, out_port: int = OFPP_NONE) -> list[FlowEntry]:
        """OFPFC_DELETE(_STRICT): remove and return (canonical order) the selected entries
        that output to ``out_port`` (any entry when out_port is OFPP_NONE)."""
        selected = self._filter_out_port(self._select(match, strict, priority), out_port)
        out = [pat.entry(s) for pat, s in selected]
        for pat, s in selected:
            self._drop(pat, s)
        return out

    def select(self, match: Match, out_port: int = OFPP_NONE) -> list[FlowEntry]:
        """Entries for flow/aggregate stats: covered by ``match``, filtered by ``out_port``."""
        return [pat.entry(s) for pat, s in self._filter_out_port(self._select(match, False, 0), out_port)]

    def refresh(self, entry: FlowEntry, now: float) -> None:
        """Note that ``entry`` (as :meth:`peek` returned it) saw traffic at ``now`` when no
        later use is recorded: its idle timer restarts, its counters stay."""
        h = self._find(entry.match, entry.priority)
        if h is not None:
            pat, s = h
            if now > pat.used.get(s, pat.installed[s]):
                pat.used[s] = now
                self._sorted = None

    @staticmethod
    def _filter_out_port(selected: list[Handle], out_port: int) -> list[Handle]:
        if out_port == OFPP_NONE:
            return selected
        return [(pat, s) for pat, s in selected
                if any(isinstance(a, (Output, Enqueue)) and a.port == out_port for a in pat.actions(s))]

    def _select(self, match: Match, strict: bool, priority: int) -> list[Handle]:
        """Handles of the selected entries, canonical order."""
        if strict:
            h = self._find(match, priority)
            return [] if h is None else [h]
        if match.wildcards == 0:  # an exact match covers only identical matches
            pat = self._pattern(match)
            kid = None if pat is None else pat.key_id(match._values)
            return [] if pat is None or kid is None else [(pat, s) for s in pat.slots_of(kid)]
        mk, mv = pack(match.masks), pack(match.values)
        port_fixed = not match.wildcards & OFPFW_IN_PORT
        mmasks = match.masks[1:]
        out: list[Handle] = []
        for ip, by_pat in self._hs.items():
            if port_fixed and ip != match.in_port:
                continue  # the entry wildcards in_port, or fixes another one: not covered
            for pat in by_pat.values():
                if not all(a & b == a for a, b in zip(mmasks, pat.masks[1:], strict=True)):
                    continue  # the entry wildcards bits the match fixes
                keys, kids = pat.keys, pat.kid
                if mk:
                    out.extend((pat, s) for s in pat.live() if keys[kids[s]] & mk == mv)
                else:
                    out.extend((pat, s) for s in pat.live())
        if len(out) > 1:
            out.sort(key=_rank_of)
        return out

    def _find(self, match: Match, priority: int) -> Handle | None:
        pat = self._pattern(match)
        if pat is None:
            return None
        kid = pat.key_id(match._values)
        if kid is None:
            return None
        for s in pat.slots_of(kid):
            if pat.prio[s] == priority:
                return pat, s
        return None

    # ------------------------------------------------------------ data plane
    def _hit(self, fields: tuple[int, ...]) -> Handle | None:
        order = self._order.get(fields[0])
        if order is None:
            order = self._order_for(fields[0])
        best: Handle | None = None
        brank: tuple[int, int, int, int] = (2, 0, 0, 0)
        for pat in order:
            if best is not None and (0 if pat.exact else 1, -pat.top) > brank[:2]:
                break
            kid = pat.intern.get(pat.packer(tuple(map(_and, fields, pat.masks))))
            if kid is None:
                continue
            s = pat.slot.get(kid)
            if s is None:
                continue
            r = (0 if pat.exact else 1, -pat.prio[s], -pat.bits, pat.wildcards)
            if r < brank:
                best, brank = (pat, s), r
        return best

    def peek(self, fields: tuple[int, ...]) -> FlowEntry | None:
        """The entry a packet with this 12-tuple would hit; no side effects."""
        h = self._hit(fields)
        return None if h is None else h[0].entry(h[1])

    @staticmethod
    def changes() -> int:
        """How many times any table's ``version`` has been bumped in this process: when it rose
        by as much as one table's version did, no other table changed meanwhile."""
        return FlowTable._changes

    def peek_action_id(self, fields: tuple[int, ...]) -> int | None:
        """The interned id (``flowindex.actions_of``) of the action list of the entry :meth:`peek`
        would return, None on a miss: what forwarding needs, without making the entry."""
        h = self._hit(fields)
        return None if h is None else h[0].act[h[1]]

    def lookup(self, fields: tuple[int, ...], *, now: float, nbytes: int) -> FlowEntry | None:
        """:meth:`peek`, then count the packet on the entry and refresh its idle timer."""
        h = self._hit(fields)
        if h is None:
            return None
        pat, s = h
        pkts, nb = pat.counts.get(s, (0, 0))
        pat.counts[s] = (pkts + 1, nb + nbytes)
        pat.used[s] = now
        self._sorted = None
        return pat.entry(s)

    # ------------------------------------------------------------ time
    def expire(self, now: float) -> list[tuple[FlowEntry, int]]:
        """Remove entries whose deadline is <= now; (entry, OFPRR_*) by deadline, then canonical order."""
        expired: list[tuple[float, tuple[Any, ...], FlowEntry, int, Handle]] = []
        for pat in self._patterns():
            if not pat.idle and not pat.hard:
                continue
            for s in sorted(set(pat.idle) | set(pat.hard)):
                idle, hard = pat.deadline(s)
                if min(idle, hard) > now:
                    continue
                e = pat.entry(s)
                reason = ofp.OFPRR_HARD_TIMEOUT if hard <= idle else ofp.OFPRR_IDLE_TIMEOUT
                expired.append((min(idle, hard), e.rank(), e, reason, (pat, s)))
        expired.sort(key=lambda t: (t[0], t[1]))
        for t in expired:
            self._drop(*t[4])
        return [(e, reason) for _, _, e, reason, _ in expired]

    def next_expiry(self) -> float | None:
        """The earliest deadline (``expire`` at that time removes something), or None."""
        best = _INF
        for pat in self._patterns():
            for s in set(pat.idle) | set(pat.hard):
                d = min(pat.deadline(s))
                if d < best:
                    best = d
        return None if best == _INF else best

    # ------------------------------------------------------------ views
    def entries(self) -> list[FlowEntry]:
        """All entries in canonical order: exact first, then priority descending, then match."""
        srt = self._sorted
        if srt is None:
            srt = sorted(self._all(), key=FlowEntry.rank)
            if len(srt) <= self.SORTED_CACHE_MAX:
                self._sorted = srt
            else:
                return srt
        return list(srt)

    def canonical_key(self, *, with_counters: bool = True) -> tuple[Any, ...]:
        """A hashable summary independent of install order.  ``with_counters=False`` drops
        packet/byte counts, which never change forwarding (timers stay: they do)."""
        return tuple(e.key(with_counters) for e in self.entries())

    def copy(self) -> FlowTable:
        """An independent table with the same entries (for state snapshots)."""
        t = FlowTable()
        t._hs = {ip: {w: pat.clone() for w, pat in by.items()} for ip, by in self._hs.items()}
        t._n = self._n
        t._serial = self._serial
        t.version = self.version
        return t

    def pattern_index(self) -> dict[int | None, dict[int, PatternIndex]]:
        """in_port (None: entries wildcarding it) -> wildcards pattern (with OFPFW_IN_PORT
        set) -> :class:`PatternIndex`.  The table's own storage, so header-space analysis
        (invariants/headerspace/compiled.py) can compile a switch in time proportional to its ports,
        patterns and action lists instead of its rules.  Read-only for callers."""
        return self._hs

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[FlowEntry]:
        return iter(self.entries())

    def __repr__(self) -> str:
        return f"<FlowTable {len(self)} entries>"

    # ------------------------------------------------------------ storage
    def _patterns(self) -> Iterator[PatternIndex]:
        for by_pat in self._hs.values():
            yield from by_pat.values()

    def _all(self) -> Iterator[FlowEntry]:
        for pat in self._patterns():
            for s in pat.live():
                yield pat.entry(s)

    def _pattern(self, m: Match, create: bool = False) -> PatternIndex | None:
        w = m.wildcards
        ip = None if w & OFPFW_IN_PORT else m.in_port
        by_pat = self._hs.get(ip)
        if by_pat is None:
            if not create:
                return None
            by_pat = self._hs[ip] = {}
        pw = w | OFPFW_IN_PORT
        pat = by_pat.get(pw)
        if pat is None and create:
            pat = by_pat[pw] = PatternIndex(ip, w, m.masks)
            self._order.clear()
        return pat

    def _put(self, pat: PatternIndex, kid: int, priority: int, aid: int, cookie: int, idle: int, hard: int,
             flags: int, now: float) -> None:
        self._serial += 1
        _s, rose = pat.put(kid, priority, aid, cookie, idle, hard, flags, now, self._serial)
        if rose:
            self._order.clear()
        self._n += 1
        self.version += 1
        FlowTable._changes += 1
        self._sorted = None

    def _drop(self, pat: PatternIndex, s: int, keep_pattern: bool = False) -> None:
        if pat.drop(s):
            self._order.clear()
        self._n -= 1
        self.version += 1
        FlowTable._changes += 1
        self._sorted = None
        if not pat.slot and not keep_pattern:
            by_pat = self._hs[pat.in_port]
            del by_pat[pat.wildcards | OFPFW_IN_PORT]
            if not by_pat:
                del self._hs[pat.in_port]
            self._order.clear()

    def _order_for(self, in_port: int) -> list[PatternIndex]:
        """The patterns a packet arriving on ``in_port`` may hit, best-ranked first."""
        pats = [pat for ip in (in_port, None) for pat in self._hs.get(ip, {}).values() if pat.slot]
        pats.sort(key=lambda p: (0 if p.exact else 1, -p.top, -p.bits, p.wildcards))
        self._order[in_port] = pats
        return pats


__all__ = ["MATCH_CACHE_MAX", "MISS_ACTIONS", "FlowEntry", "FlowOverlapError", "FlowTable", "FlowTableError",
           "PatternIndex", "SlotMap", "action_id", "actions_of"]
