"""The OpenFlow 1.3 flow tables: flow_mod semantics, lookup, timeouts, counters.

What differs from 1.0 (``model/flowtable.py``) and why this is its own module:

* N tables (``n_tables``; Open vSwitch offers 254 usable tables, 0..253,
  as ``ovs-ofctl -O OpenFlow13 dump-tables`` shows), OFPTT_ALL for
  delete and stats (not add or modify);
* entries carry instructions, not actions;
* priority is the only order: there is no "exact match outranks wildcards"
  rule in 1.3;
* modify/modify_strict never add (1.3 dropped that 1.0 behaviour) and filter
  on cookie/cookie_mask; delete filters on out_port, out_group and cookie;
* a table miss with no table-miss entry drops the packet: the table-miss
  entry (priority 0, empty match) is an ordinary entry, recognized only to
  give its packet-ins the reason OFPR_NO_MATCH;
* replacing an identical entry (same match and priority) keeps its counters
  unless OFPFF_RESET_COUNTS;
* removal reasons include OFPRR_DELETE and OFPRR_GROUP_DELETE.

Entries within a table are kept sorted by (priority desc, match order,
install order), so lookup is a scan that stops at the first hit and the
table's canonical form does not depend on install order.  Same-priority
overlapping entries are undefined in the spec; this model returns the one
with the smaller match in the total order, deterministically.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from os_ken.ofproto import ofproto_v1_3 as ofp

from netsleuth.model.of13.errors import OFError
from netsleuth.model.of13.instructions import Instructions, check_instructions
from netsleuth.model.of13.oxm import OxmMatch

OVS_TABLES = 254
"""Tables Open vSwitch offers to OpenFlow 1.3 controllers (0..253; 254 is hidden)."""
JOURNAL = 64   # changes kept per table (see FlowTables.changes_since)
FULL64 = (1 << 64) - 1


def _flow_mod_failed(code: int, problem: str, fix: str) -> OFError:
    return OFError(ofp.OFPET_FLOW_MOD_FAILED, code, problem, fix)


@dataclass(eq=False)
class FlowEntry13:
    """One flow entry; counters and ``last_used`` change as packets hit it."""

    table_id: int
    match: OxmMatch
    priority: int
    instructions: Instructions
    cookie: int = 0
    idle_timeout: int = 0
    hard_timeout: int = 0
    flags: int = 0
    installed_at: float = 0.0
    last_used: float = 0.0
    packet_count: int = 0
    byte_count: int = 0

    @property
    def is_table_miss(self) -> bool:
        """Priority 0 and an empty match (spec 5.4): its packet-ins say OFPR_NO_MATCH."""
        return self.priority == 0 and not self.match.entries

    def sort_key(self) -> tuple[int, tuple[tuple[int, int, int], ...]]:
        return (-self.priority, self.match.sort_key())

    def expiry_reason(self, now: float) -> int | None:
        if self.hard_timeout and now >= self.installed_at + self.hard_timeout:
            return int(ofp.OFPRR_HARD_TIMEOUT)
        if self.idle_timeout and now >= self.last_used + self.idle_timeout:
            return int(ofp.OFPRR_IDLE_TIMEOUT)
        return None

    def deadline(self) -> float | None:
        times = []
        if self.hard_timeout:
            times.append(self.installed_at + self.hard_timeout)
        if self.idle_timeout:
            times.append(self.last_used + self.idle_timeout)
        return min(times) if times else None

    def duration(self, now: float) -> float:
        return now - self.installed_at

    def key(self) -> tuple[Any, ...]:
        """Hashable value of the entry, counters included."""
        return (self.table_id, self.priority, self.match.sort_key(), self.instructions, self.cookie,
                self.idle_timeout, self.hard_timeout, self.flags, self.packet_count, self.byte_count)

    def __str__(self) -> str:
        m = str(self.match)
        return (f"table={self.table_id},priority={self.priority}" + (f",{m}" if m else "")
                + f",actions={self.instructions.render()}")


@dataclass
class RemovedFlow:
    """An entry that left its table, with the OFPRR_* reason a FLOW_REMOVED would carry."""

    entry: FlowEntry13
    reason: int


@dataclass
class TableCounters:
    lookup_count: int = 0
    matched_count: int = 0


class FlowTables:
    """``n_tables`` flow tables with the flow_mod operations of OpenFlow 1.3."""

    def __init__(self, n_tables: int = OVS_TABLES, max_entries: int = 0) -> None:
        if not 1 <= n_tables <= 255:
            raise ValueError(f"n_tables={n_tables}: OpenFlow 1.3 allows 1..255 tables")
        if max_entries < 0:
            raise ValueError(f"max_entries={max_entries}: give 0 (no limit) or more")
        self.n_tables = n_tables
        # > 0: an ADD that would grow a table past it is refused TABLE_FULL, as Open vSwitch
        # refuses it for a table with a flow limit and overflow policy "refuse".
        self.max_entries = max_entries
        self._tables: list[list[FlowEntry13]] = [[] for _ in range(n_tables)]
        self._keys: list[list[tuple[Any, ...]]] = [[] for _ in range(n_tables)]
        self.counters = [TableCounters() for _ in range(n_tables)]
        # per table: how many entries went in or out so far, and the last of them (the
        # incremental checks read them instead of comparing whole tables after a flow_mod)
        self._serial = [0] * n_tables
        self._journal: dict[int, list[tuple[FlowEntry13, bool]]] = {}

    # -- flow_mod ----------------------------------------------------------------

    def _check_table(self, table_id: int, *, allow_all: bool) -> None:
        if table_id == ofp.OFPTT_ALL and allow_all:
            return
        if not 0 <= table_id < self.n_tables:
            raise _flow_mod_failed(ofp.OFPFMFC_BAD_TABLE_ID, f"table {table_id} does not exist",
                                   f"use a table 0..{self.n_tables - 1}")

    def _tables_for(self, table_id: int) -> range:
        return range(self.n_tables) if table_id == ofp.OFPTT_ALL else range(table_id, table_id + 1)

    def add(self, table_id: int, match: OxmMatch, priority: int, instructions: Instructions, *, cookie: int = 0,
            idle_timeout: int = 0, hard_timeout: int = 0, flags: int = 0, now: float = 0.0,
            group_exists: Callable[[int], bool] = lambda g: False,
            meter_exists: Callable[[int], bool] = lambda m: False) -> FlowEntry13 | None:
        """OFPFC_ADD; returns the entry it replaced (same match and priority), if any.

        Errors: OFPFMFC_BAD_TABLE_ID, the instruction checks, OFPFMFC_OVERLAP
        when OFPFF_CHECK_OVERLAP, no identical entry is replaced, and an
        entry of the same priority overlaps.
        """
        self._check_table(table_id, allow_all=False)
        if not 0 <= priority <= 0xFFFF:
            raise _flow_mod_failed(ofp.OFPFMFC_UNKNOWN, f"priority {priority}", "use a priority 0..65535")
        check_instructions(instructions, match, table_id, self.n_tables, group_exists=group_exists,
                           meter_exists=meter_exists)
        table = self._tables[table_id]
        old = self._find_strict(table_id, match, priority)
        # An identical entry is replaced, not a conflict: the overlap check is
        # for entries the new one would have to share packets with (OVS reads
        # spec 6.4 the same way and checks only when nothing is replaced).
        if self.max_entries and old is None and len(table) >= self.max_entries:
            raise _flow_mod_failed(ofp.OFPFMFC_TABLE_FULL, f"table {table_id} is full ({self.max_entries} entries)",
                                   "delete entries first, or run the switches with a larger --table-size")
        if flags & ofp.OFPFF_CHECK_OVERLAP and old is None:
            for e in table:
                if e.priority == priority and e.match.overlaps(match):
                    raise _flow_mod_failed(ofp.OFPFMFC_OVERLAP, f"overlaps {e} at the same priority",
                                           "change the priority or the match, or drop OFPFF_CHECK_OVERLAP")
        entry = FlowEntry13(table_id, match, priority, instructions, cookie, idle_timeout, hard_timeout, flags,
                            now, now)
        if old is not None:
            if not flags & ofp.OFPFF_RESET_COUNTS:
                entry.packet_count, entry.byte_count = old.packet_count, old.byte_count
            self._remove(old)
        self._insert(entry)
        return old

    def modify(self, table_id: int, match: OxmMatch, instructions: Instructions, *, strict: bool,
               priority: int = 0, cookie: int = 0, cookie_mask: int = 0, flags: int = 0,
               group_exists: Callable[[int], bool] = lambda g: False,
               meter_exists: Callable[[int], bool] = lambda m: False) -> list[FlowEntry13]:
        """OFPFC_MODIFY(_STRICT): new instructions for the selected entries; never adds.

        The instructions are checked against the message's own match (as
        Open vSwitch does, even when nothing is selected) and, with the
        groups and meters they name, against each selected entry, before
        anything changes: a rejected modify changes nothing.
        """
        # OFPTT_ALL names every table only for deletes (spec 7.3.4.1; OVS agrees).
        self._check_table(table_id, allow_all=False)
        # Consistency with the message's match and goto are checked always;
        # that groups and meters exist only for entries actually modified
        # (as Open vSwitch does: a modify that selects nothing changes nothing).
        check_instructions(instructions, match, table_id, self.n_tables, group_exists=lambda g: True,
                           meter_exists=lambda m: True)
        chosen = self.select(table_id, match, strict=strict, priority=priority, cookie=cookie,
                             cookie_mask=cookie_mask)
        for e in chosen:
            check_instructions(instructions, e.match, e.table_id, self.n_tables, group_exists=group_exists,
                               meter_exists=meter_exists)
        for e in chosen:
            e.instructions = instructions
            if flags & ofp.OFPFF_RESET_COUNTS:
                e.packet_count = e.byte_count = 0
        return chosen

    def delete(self, table_id: int, match: OxmMatch, *, strict: bool, priority: int = 0,
               out_port: int = ofp.OFPP_ANY, out_group: int = ofp.OFPG_ANY, cookie: int = 0,
               cookie_mask: int = 0) -> list[RemovedFlow]:
        """OFPFC_DELETE(_STRICT): the removed entries, reason OFPRR_DELETE."""
        chosen = self.select(table_id, match, strict=strict, priority=priority, out_port=out_port,
                             out_group=out_group, cookie=cookie, cookie_mask=cookie_mask)
        for e in chosen:
            self._remove(e)
        return [RemovedFlow(e, ofp.OFPRR_DELETE) for e in chosen]

    def remove_group_flows(self, group_id: int) -> list[RemovedFlow]:
        """Entries that use a deleted group go too (spec 6.5), reason OFPRR_GROUP_DELETE."""
        gone = [e for t in self._tables for e in t if e.instructions.uses_group(group_id)]
        for e in gone:
            self._remove(e)
        return [RemovedFlow(e, ofp.OFPRR_GROUP_DELETE) for e in gone]

    def remove_meter_flows(self, meter_id: int) -> list[RemovedFlow]:
        """Entries that use a deleted meter go too (spec 6.6); 1.3 has no reason of its own: OFPRR_DELETE."""
        gone = [e for t in self._tables for e in t if e.instructions.meter == meter_id]
        for e in gone:
            self._remove(e)
        return [RemovedFlow(e, ofp.OFPRR_DELETE) for e in gone]

    def select(self, table_id: int, match: OxmMatch, *, strict: bool = False, priority: int = 0,
               out_port: int = ofp.OFPP_ANY, out_group: int = ofp.OFPG_ANY, cookie: int = 0,
               cookie_mask: int = 0) -> list[FlowEntry13]:
        """Entries a modify/delete/stats request names: non-strict = the match covers the entry's."""
        self._check_table(table_id, allow_all=True)
        found = []
        for t in self._tables_for(table_id):
            for e in self._tables[t]:
                if strict:
                    if e.priority != priority or e.match != match:
                        continue
                elif not match.covers(e.match):
                    continue
                if cookie_mask and (e.cookie ^ cookie) & cookie_mask:
                    continue
                if out_port != ofp.OFPP_ANY and not e.instructions.outputs_to(out_port):
                    continue
                if out_group != ofp.OFPG_ANY and not e.instructions.uses_group(out_group):
                    continue
                found.append(e)
        return found

    def _find_strict(self, table_id: int, match: OxmMatch, priority: int) -> FlowEntry13 | None:
        for e in self._tables[table_id]:
            if e.priority == priority and e.match == match:
                return e
        return None

    def _insert(self, entry: FlowEntry13) -> None:
        keys = self._keys[entry.table_id]
        k = entry.sort_key()
        i = bisect.bisect_right(keys, k)
        keys.insert(i, k)
        self._tables[entry.table_id].insert(i, entry)
        self._note(entry, True)

    def _remove(self, entry: FlowEntry13) -> None:
        table = self._tables[entry.table_id]
        i = self.position(entry)   # by its sort key, not a scan of the table
        assert i is not None, "only an entry of the table is removed"
        del table[i]
        del self._keys[entry.table_id][i]
        self._note(entry, False)

    def _note(self, entry: FlowEntry13, added: bool) -> None:
        t = entry.table_id
        self._serial[t] += 1
        j = self._journal.setdefault(t, [])
        j.append((entry, added))
        if len(j) > 2 * JOURNAL:
            del j[:-JOURNAL]

    def serial(self, table_id: int) -> int:
        """How many entries went into or out of table ``table_id`` so far (a MODIFY, which
        keeps its entries, counts none)."""
        return self._serial[table_id]

    def changes_since(self, table_id: int, serial: int) -> list[tuple[FlowEntry13, bool]] | None:
        """The entries that went into (True) or out of (False) table ``table_id`` since its
        :meth:`serial` was ``serial``, in order; None when that is too long ago to tell."""
        n = self._serial[table_id] - serial
        j = self._journal.get(table_id, [])
        if n < 0 or n > len(j):
            return None
        return j[len(j) - n:] if n else []

    def position(self, entry: FlowEntry13) -> int | None:
        """The index of ``entry`` in its table (:meth:`entries` order), None when not there."""
        keys, table = self._keys[entry.table_id], self._tables[entry.table_id]
        k = entry.sort_key()
        i = bisect.bisect_left(keys, k)
        while i < len(table) and keys[i] == k:
            if table[i] is entry:
                return i
            i += 1
        return None

    # -- packets -----------------------------------------------------------------

    def peek(self, table_id: int, fields: Mapping[str, int]) -> FlowEntry13 | None:
        """The highest-priority entry of ``table_id`` matching ``fields``; no side effects."""
        for e in self._tables[table_id]:
            if e.match.matches(fields):
                return e
        return None

    def lookup(self, table_id: int, fields: Mapping[str, int], *, now: float, nbytes: int) -> FlowEntry13 | None:
        """``peek`` that also counts: table lookups/matches, entry packets/bytes, last use."""
        counters = self.counters[table_id]
        counters.lookup_count += 1
        e = self.peek(table_id, fields)
        if e is not None:
            counters.matched_count += 1
            e.packet_count += 1
            e.byte_count += nbytes
            e.last_used = now
        return e

    # -- time --------------------------------------------------------------------

    def expire(self, now: float) -> list[RemovedFlow]:
        """Remove timed-out entries; hard timeout wins when both are due."""
        gone: list[RemovedFlow] = []
        for table in self._tables:
            for e in list(table):
                reason = e.expiry_reason(now)
                if reason is not None:
                    self._remove(e)
                    gone.append(RemovedFlow(e, reason))
        return gone

    def next_expiry(self) -> float | None:
        times = [d for e in self for d in (e.deadline(),) if d is not None]
        return min(times) if times else None

    # -- views -------------------------------------------------------------------

    def entries(self, table_id: int | None = None) -> list[FlowEntry13]:
        if table_id is None:
            return [e for t in self._tables for e in t]
        return list(self._tables[table_id])

    def active_count(self, table_id: int) -> int:
        return len(self._tables[table_id])

    def canonical_key(self) -> tuple[Any, ...]:
        return tuple(e.key() for e in self)

    def __iter__(self) -> Iterator[FlowEntry13]:
        return itertools.chain.from_iterable(self._tables)   # (no generator step per entry)

    def __len__(self) -> int:
        return sum(len(t) for t in self._tables)


__all__ = ["FULL64", "FlowEntry13", "FlowTables", "OVS_TABLES", "RemovedFlow", "TableCounters"]
