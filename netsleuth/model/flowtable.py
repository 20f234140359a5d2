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

Lookup is the hot path (model checking, thousand-switch networks), so it is
a dict probe for exact entries plus a tuple-space search over wildcard
entries grouped by mask, visiting groups in descending maximum priority and
stopping as soon as no remaining group can win.

The table also keeps, per in_port and wildcard pattern, the header-space
analysis' index of its entries (:meth:`FlowTable.pattern_index`): a few
dictionary operations per flow_mod, so that the first invariant check of a
network with millions of rules need not sort and pack them all at once.
"""

from __future__ import annotations

import operator
from bisect import bisect_left, insort
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from os_ken.ofproto import ofproto_v1_0 as ofp

from netsleuth.errors import NetsleuthError
from netsleuth.model.actions import Action, Enqueue, Output, action_from_json, action_key, action_to_json
from netsleuth.model.headerbits import interner, pack, packer
from netsleuth.model.match import FULL_MASKS, Match

OFPP_NONE = ofp.OFPP_NONE
OFPFW_IN_PORT = ofp.OFPFW_IN_PORT
_INF = float("inf")
_and = operator.and_


class FlowTableError(NetsleuthError):
    """A flow_mod the table refuses; ``err_type``/``err_code`` say which OpenFlow ERROR to reply with."""

    err_type = ofp.OFPET_FLOW_MOD_FAILED
    err_code = ofp.OFPFMFC_UNSUPPORTED


class FlowOverlapError(FlowTableError):
    """ADD with OFPFF_CHECK_OVERLAP hit an overlapping entry of the same priority."""

    err_code = ofp.OFPFMFC_OVERLAP

    def __init__(self, match: Match, priority: int, existing: FlowEntry) -> None:
        super().__init__(
            f"flow priority={priority},{match} overlaps installed flow {existing}",
            "give the new flow a different priority or a disjoint match, or drop OFPFF_CHECK_OVERLAP")
        self.existing = existing


@dataclass(slots=True)
class FlowEntry:
    """One installed flow: identity is (match, priority); counters change in place."""

    match: Match
    priority: int
    actions: tuple[Action, ...]
    cookie: int = 0
    idle_timeout: int = 0
    hard_timeout: int = 0
    flags: int = 0
    installed_at: float = 0.0
    last_used: float = 0.0
    packet_count: int = 0
    byte_count: int = 0

    def rank(self) -> tuple[Any, ...]:
        """Position in canonical order; smaller wins a lookup."""
        return (0 if self.match.wildcards == 0 else 1, -self.priority, self.match.sort_key())

    def deadline(self) -> float | None:
        """When this entry expires if it sees no more traffic (None: never)."""
        d = min(self._idle_deadline(), self._hard_deadline())
        return None if d == _INF else d

    def expiry_reason(self, now: float) -> int | None:
        """OFPRR_HARD_TIMEOUT / OFPRR_IDLE_TIMEOUT if expired at ``now``; the earlier deadline
        decides (hard on a tie)."""
        idle, hard = self._idle_deadline(), self._hard_deadline()
        if min(idle, hard) > now:
            return None
        # os-ken's constants are untyped ints
        return ofp.OFPRR_HARD_TIMEOUT if hard <= idle else ofp.OFPRR_IDLE_TIMEOUT  # type: ignore[no-any-return]

    def _idle_deadline(self) -> float:
        return self.last_used + self.idle_timeout if self.idle_timeout else _INF

    def _hard_deadline(self) -> float:
        return self.installed_at + self.hard_timeout if self.hard_timeout else _INF

    def has_output(self, port: int) -> bool:
        """Whether an Output or Enqueue action sends to ``port`` (the out_port filter)."""
        return any(isinstance(a, (Output, Enqueue)) and a.port == port for a in self.actions)

    def duration(self, now: float) -> float:
        return max(0.0, now - self.installed_at)

    def key(self, with_counters: bool = True) -> tuple[Any, ...]:
        """Everything that makes this entry behave as it does, as plain ints and floats."""
        m = self.match
        base = (m.wildcards, m.values, self.priority, tuple(action_key(a) for a in self.actions),
                self.cookie, self.idle_timeout, self.hard_timeout, self.flags, self.installed_at, self.last_used)
        if with_counters:
            return base + (self.packet_count, self.byte_count)
        return base

    def copy(self) -> FlowEntry:
        return FlowEntry(self.match, self.priority, self.actions, self.cookie, self.idle_timeout,
                         self.hard_timeout, self.flags, self.installed_at, self.last_used,
                         self.packet_count, self.byte_count)

    def to_json(self) -> dict[str, Any]:
        return {"match": self.match.to_json(), "priority": self.priority,
                "actions": [action_to_json(a) for a in self.actions], "cookie": self.cookie,
                "idle_timeout": self.idle_timeout, "hard_timeout": self.hard_timeout, "flags": self.flags,
                "installed_at": self.installed_at, "last_used": self.last_used,
                "packet_count": self.packet_count, "byte_count": self.byte_count}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> FlowEntry:
        try:
            return cls(Match.from_json(d["match"]), d["priority"],
                       tuple(action_from_json(a) for a in d["actions"]), d["cookie"], d["idle_timeout"],
                       d["hard_timeout"], d["flags"], d["installed_at"], d["last_used"],
                       d["packet_count"], d["byte_count"])
        except (KeyError, TypeError) as exc:
            raise FlowTableError(f"bad flow entry JSON: missing or malformed {exc}",
                                 "produce it with FlowEntry.to_json()") from None

    def __str__(self) -> str:
        """ovs-ofctl dump-flows style."""
        parts = [f"cookie={self.cookie:#x}", f"n_packets={self.packet_count}", f"n_bytes={self.byte_count}"]
        if self.idle_timeout:
            parts.append(f"idle_timeout={self.idle_timeout}")
        if self.hard_timeout:
            parts.append(f"hard_timeout={self.hard_timeout}")
        match = str(self.match)
        head = f"priority={self.priority}" + (f",{match}" if match else "")
        acts = ",".join(str(a) for a in self.actions) or "drop"
        return ", ".join(parts) + f", {head} actions={acts}"


class _Group:
    """Wildcard entries sharing one mask tuple, bucketed by masked values."""

    __slots__ = ("masks", "buckets", "max_priority")

    def __init__(self, masks: tuple[int, ...]) -> None:
        self.masks = masks
        self.buckets: dict[tuple[int, ...], list[FlowEntry]] = {}  # each list: priority descending
        self.max_priority = -1


class PatternIndex:
    """Entries of one table sharing one in_port (or all wildcarding it) and one wildcards
    pattern, keyed by their matched bits packed as header-space analysis packs them.

    ``buckets`` maps the interned id of a packed key (see
    :func:`netsleuth.model.headerbits.interner`: ids are process-wide per pattern, so
    every table agrees on them) to the table's own list of entries with that match,
    priority descending: ``bucket[0]`` is the entry that wins there.  ``by_actions``
    groups the ids by the action list of their winning entry (``id(actions)`` ->
    (actions, ids)), so a compiler can give every id its outcome with one C-level pass
    per distinct action list instead of one Python step per rule."""

    __slots__ = ("mask", "masks", "packer", "intern", "keys", "buckets", "acts", "by_actions")

    def __init__(self, masks: tuple[int, ...]) -> None:
        self.masks = masks
        self.mask = pack(masks)
        self.packer = packer(masks)
        self.intern, self.keys = interner(self.mask)
        self.buckets: dict[int, list[FlowEntry]] = {}
        self.acts: dict[int, tuple[Action, ...]] = {}  # id -> actions of bucket[0]
        self.by_actions: dict[int, tuple[tuple[Action, ...], dict[int, None]]] = {}

    def intern_key(self, key: int) -> int:
        j = self.intern.get(key)
        if j is None:
            j = self.intern[key] = len(self.keys)
            self.keys.append(key)
        return j

    def regroup(self, j: int, old: tuple[Action, ...] | None, acts: tuple[Action, ...]) -> None:
        """Id ``j``'s winning entry now has action list ``acts`` (was ``old``)."""
        if old is not None:
            self._ungroup(j, old)
        self.acts[j] = acts
        grp = self.by_actions.get(id(acts))
        if grp is None:
            self.by_actions[id(acts)] = (acts, {j: None})
        else:
            grp[1][j] = None

    def drop(self, j: int) -> None:
        del self.buckets[j]
        self._ungroup(j, self.acts.pop(j))

    def _ungroup(self, j: int, acts: tuple[Action, ...]) -> None:
        ids = self.by_actions[id(acts)][1]
        del ids[j]
        if not ids:
            del self.by_actions[id(acts)]


def _neg_priority(e: FlowEntry) -> int:
    return -e.priority


def _remove_identical(lst: list[FlowEntry], entry: FlowEntry) -> None:
    for i, e in enumerate(lst):
        if e is entry:
            del lst[i]
            return


class FlowTable:
    """A single OpenFlow 1.0 flow table (see the module docstring for the rules)."""

    __slots__ = ("_entries", "_exact", "_groups", "_group_order", "_sorted", "_timed", "_hs", "version")

    def __init__(self) -> None:
        # Bumped by every change of entries or actions (not counters): lets analyses
        # cache per table and tell "unchanged" in O(1) (see invariants/hsa_compile.py).
        self.version = 0
        self._entries: dict[tuple[Match, int], FlowEntry] = {}
        self._exact: dict[tuple[int, ...], list[FlowEntry]] = {}  # each list: priority descending
        self._groups: dict[tuple[int, ...], _Group] = {}
        self._group_order: list[_Group] | None = None
        self._sorted: list[FlowEntry] | None = None
        self._timed: dict[tuple[Match, int], FlowEntry] = {}
        # in_port (None: wildcarded) -> pattern -> PatternIndex: the header-space compiler's
        # per-rule work, done here as entries come and go (see pattern_index).
        self._hs: dict[int | None, dict[int, PatternIndex]] = {}

    # ------------------------------------------------------------ flow_mod
    def add(self, match: Match, priority: int, actions: Iterable[Action], *, cookie: int = 0,
            idle_timeout: int = 0, hard_timeout: int = 0, flags: int = 0, now: float = 0.0) -> FlowEntry | None:
        """OFPFC_ADD.  Returns the entry with identical match and priority it replaced
        (whose counters are thereby discarded), or None."""
        for name, value in (("priority", priority), ("idle_timeout", idle_timeout), ("hard_timeout", hard_timeout)):
            if not isinstance(value, int) or not 0 <= value <= 0xFFFF:
                raise FlowTableError(f"flow {name}={value!r} is out of range", f"give {name} as an int in 0..65535")
        if flags & ofp.OFPFF_CHECK_OVERLAP:
            clashes = [e for e in self._entries.values() if e.priority == priority and e.match.overlaps(match)]
            if clashes:
                raise FlowOverlapError(match, priority, min(clashes, key=FlowEntry.rank))
        old = self._entries.get((match, priority))
        if old is not None:
            self._remove(old)
        self._insert(FlowEntry(match, priority, tuple(actions), cookie, idle_timeout, hard_timeout, flags,
                               now, now))
        return old

    def modify(self, match: Match, actions: Iterable[Action], *, strict: bool, priority: int = 0,
               now: float = 0.0, cookie: int | None = None) -> list[FlowEntry]:
        """OFPFC_MODIFY(_STRICT): new actions (and ``cookie`` unless None) for the selected
        entries, in canonical order.  Non-strict selects every entry ``match`` covers
        (priority ignored); strict the entry with identical match and priority.  Returns
        ``[]`` when nothing is selected: the caller then ADDs.  ``now`` is accepted for
        symmetry; modifying restarts no timer."""
        actions = tuple(actions)
        selected = self._select(match, strict, priority)
        for e in selected:
            e.actions = actions
            if cookie is not None:
                e.cookie = cookie
            m = e.match
            self._hs_note(m, self._exact[m.values] if m.wildcards == 0 else self._groups[m.masks].buckets[m.values])
        if selected:
            self.version += 1
        return selected

    def delete(self, match: Match, *, strict: bool, priority: int = 0, out_port: int = OFPP_NONE) -> list[FlowEntry]:
        """OFPFC_DELETE(_STRICT): remove and return (canonical order) the selected entries
        that output to ``out_port`` (any entry when out_port is OFPP_NONE)."""
        selected = self._select(match, strict, priority)
        if out_port != OFPP_NONE:
            selected = [e for e in selected if e.has_output(out_port)]
        for e in selected:
            self._remove(e)
        return selected

    def select(self, match: Match, out_port: int = OFPP_NONE) -> list[FlowEntry]:
        """Entries for flow/aggregate stats: covered by ``match``, filtered by ``out_port``."""
        selected = self._select(match, False, 0)
        if out_port != OFPP_NONE:
            selected = [e for e in selected if e.has_output(out_port)]
        return selected

    def _select(self, match: Match, strict: bool, priority: int) -> list[FlowEntry]:
        if strict:
            e = self._entries.get((match, priority))
            return [] if e is None else [e]
        if match.wildcards == 0:  # an exact match covers only identical matches
            return list(self._exact.get(match.values, ()))  # already canonical: priority descending
        return [e for e in self.entries() if match.covers(e.match)]

    # ------------------------------------------------------------ data plane
    def peek(self, fields: tuple[int, ...]) -> FlowEntry | None:
        """The entry a packet with this 12-tuple would hit; no side effects."""
        if self._exact:
            bucket = self._exact.get(tuple(map(_and, fields, FULL_MASKS)))
            if bucket:
                return bucket[0]
        best: FlowEntry | None = None
        order = self._group_order
        if order is None:
            order = self._order_groups()
        for g in order:
            if best is not None and g.max_priority < best.priority:
                break
            bucket = g.buckets.get(tuple(map(_and, fields, g.masks)))
            if bucket is not None:
                cand = bucket[0]
                if (best is None or cand.priority > best.priority
                        or (cand.priority == best.priority and cand.match.sort_key() < best.match.sort_key())):
                    best = cand
        return best

    def lookup(self, fields: tuple[int, ...], *, now: float, nbytes: int) -> FlowEntry | None:
        """:meth:`peek`, then count the packet on the entry and refresh its idle timer."""
        entry = self.peek(fields)
        if entry is not None:
            entry.packet_count += 1
            entry.byte_count += nbytes
            entry.last_used = now
        return entry

    # ------------------------------------------------------------ time
    def expire(self, now: float) -> list[tuple[FlowEntry, int]]:
        """Remove entries whose deadline is <= now; (entry, OFPRR_*) by deadline, then canonical order."""
        expired: list[tuple[float, tuple[Any, ...], FlowEntry, int]] = []
        for e in self._timed.values():
            reason = e.expiry_reason(now)
            if reason is not None:
                # an expiring entry has a deadline
                expired.append((e.deadline(), e.rank(), e, reason))  # type: ignore[arg-type]
        expired.sort(key=lambda t: (t[0], t[1]))
        for _, _, e, _ in expired:
            self._remove(e)
        return [(e, reason) for _, _, e, reason in expired]

    def next_expiry(self) -> float | None:
        """The earliest deadline (``expire`` at that time removes something), or None."""
        best = _INF
        for e in self._timed.values():
            d = min(e._idle_deadline(), e._hard_deadline())
            if d < best:
                best = d
        return None if best == _INF else best

    # ------------------------------------------------------------ views
    def entries(self) -> list[FlowEntry]:
        """All entries in canonical order: exact first, then priority descending, then match."""
        if self._sorted is None:
            self._sorted = sorted(self._entries.values(), key=FlowEntry.rank)
        return list(self._sorted)

    def canonical_key(self, *, with_counters: bool = True) -> tuple[Any, ...]:
        """A hashable summary independent of install order.  ``with_counters=False`` drops
        packet/byte counts, which never change forwarding (timers stay: they do)."""
        if self._sorted is None:
            self._sorted = sorted(self._entries.values(), key=FlowEntry.rank)
        return tuple(e.key(with_counters) for e in self._sorted)

    def copy(self) -> FlowTable:
        """An independent table with copied entries (for state snapshots)."""
        t = FlowTable()
        for e in self.entries():
            t._insert(e.copy())
        return t

    def pattern_index(self) -> dict[int | None, dict[int, PatternIndex]]:
        """in_port (None: entries wildcarding it) -> wildcards pattern (with OFPFW_IN_PORT
        set) -> :class:`PatternIndex`.  Kept up to date by every insertion and removal, so
        header-space analysis (invariants/hsa_compile.py) can compile a switch in time
        proportional to its ports and patterns instead of its rules.  Read-only for callers."""
        return self._hs

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[FlowEntry]:
        return iter(self.entries())

    def __repr__(self) -> str:
        return f"<FlowTable {len(self)} entries>"

    # ------------------------------------------------------------ indexes
    def _insert(self, entry: FlowEntry) -> None:
        m = entry.match
        key = (m, entry.priority)
        self._entries[key] = entry
        self.version += 1
        if entry.idle_timeout or entry.hard_timeout:
            self._timed[key] = entry
        srt = self._sorted
        if srt is not None:  # kept in order: a check after a flow_mod need not sort the table again
            insort(srt, entry, key=FlowEntry.rank)
        if m.wildcards == 0:
            bucket = self._exact.get(m.values)
            if bucket is None:  # a list of one, allocated to size (most buckets stay so)
                bucket = self._exact[m.values] = [entry]
            else:
                insort(bucket, entry, key=_neg_priority)
            self._hs_note(m, bucket)
            return
        g = self._groups.get(m.masks)
        if g is None:
            g = self._groups[m.masks] = _Group(m.masks)
        bucket = g.buckets.get(m.values)
        if bucket is None:
            bucket = g.buckets[m.values] = [entry]
        else:
            insort(bucket, entry, key=_neg_priority)
        self._hs_note(m, bucket)
        if entry.priority > g.max_priority:
            g.max_priority = entry.priority
            self._group_order = None

    def _remove(self, entry: FlowEntry) -> None:
        m = entry.match
        key = (m, entry.priority)
        del self._entries[key]
        self.version += 1
        self._timed.pop(key, None)
        srt = self._sorted
        if srt is not None:
            i = bisect_left(srt, entry.rank(), key=FlowEntry.rank)
            if i < len(srt) and srt[i] is entry:
                del srt[i]
            else:
                self._sorted = None
        if m.wildcards == 0:
            bucket = self._exact[m.values]
            _remove_identical(bucket, entry)
            if not bucket:
                del self._exact[m.values]
                self._hs_remove(m)
            else:
                self._hs_note(m, bucket)
            return
        g = self._groups[m.masks]
        bucket = g.buckets[m.values]
        _remove_identical(bucket, entry)
        if not bucket:
            del g.buckets[m.values]
            self._hs_remove(m)
        else:
            self._hs_note(m, bucket)
        if not g.buckets:
            del self._groups[m.masks]
            self._group_order = None
        elif entry.priority == g.max_priority:
            g.max_priority = max(b[0].priority for b in g.buckets.values())
            self._group_order = None

    def _hs_note(self, m: Match, bucket: list[FlowEntry]) -> None:
        """Record (again) the bucket of entries matching exactly ``m`` after a change to it.
        Runs on every insertion, so it is written for speed (no properties, one call)."""
        w = m.wildcards
        pw = w | OFPFW_IN_PORT
        ip = None if w & OFPFW_IN_PORT else m.in_port
        by_pat = self._hs.get(ip)
        if by_pat is None:
            by_pat = self._hs[ip] = {}
        pat = by_pat.get(pw)
        if pat is None:
            pat = by_pat[pw] = PatternIndex(m.masks)
        key = pat.packer(m._values)
        j = pat.intern.get(key)
        if j is None:
            j = pat.intern_key(key)
        pat.buckets[j] = bucket
        acts = bucket[0].actions
        old = pat.acts.get(j)
        if old is not acts:
            pat.regroup(j, old, acts)

    def _hs_remove(self, m: Match) -> None:
        w = m.wildcards
        ip = None if w & OFPFW_IN_PORT else m.values[0]
        by_pat = self._hs[ip]
        pat = by_pat[w | OFPFW_IN_PORT]
        pat.drop(pat.intern[pat.packer(m._values)])
        if not pat.buckets:
            del by_pat[w | OFPFW_IN_PORT]
            if not by_pat:
                del self._hs[ip]

    def _order_groups(self) -> list[_Group]:
        order = sorted(self._groups.values(), key=lambda g: (-g.max_priority, g.masks))
        self._group_order = order
        return order
