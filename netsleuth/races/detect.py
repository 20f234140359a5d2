"""Race detection on an HB graph, classified the way SDNRacer classifies races.

A race is a pair of flow-table operations on one switch, at least one a
write, whose events are unordered in the HB graph.  Pairs are counted per
operation: write/write (every pair of write operations of different events)
and read/write (every read operation against every write operation of a
different event).  Each race then gets exactly one status:

``commute``
    the two operations commute (:mod:`netsleuth.races.commute`);
``time_filtered``
    (time edges on) the operations are more than ``delta`` seconds apart;
    each such race adds a ``time`` edge from the earlier to the later event;
``covered``
    (data dependencies on) the race became ordered once read-after-write
    dependency edges were added;
``harmful``
    everything else.

So ``races == commute + time_filtered + covered + harmful`` always.
Reachability is taken once, before any time edge is added (as SDNRacer does:
a time edge does not order other races).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from dataclasses import dataclass, field, replace
from itertools import compress
from typing import Any

from netsleuth.gcpause import gc_paused
from netsleuth.races.commute import CommutativityChecker, commute_ops13
from netsleuth.races.events import EXPIRY, HOST_SEND, READ, WRITE, FlowOp, HbEvent
from netsleuth.races.hb import DEP_RAW, TIME, HbGraph, PacketMatches, reach_masks, strongly_connected
from netsleuth.races.of13.flowmod import FlowMod13, targets_meet
from netsleuth.races.poxmatch import (
    OFPFC_ADD,
    OFPFC_DELETE,
    OFPFC_DELETE_STRICT,
    OFPFC_MODIFY,
    OFPFC_MODIFY_STRICT,
    PoxFlowMod,
)

COMMUTE, TIME_FILTERED, COVERED, HARMFUL = "commute", "time_filtered", "covered", "harmful"
WW, RW = "w/w", "r/w"
_BIT_VALUES = bytes.maketrans(b"01", b"\x00\x01")   # a mask's binary digits as bytes 0 and 1


@dataclass(slots=True)
class Race:
    """Two racing operations: ``i`` is the read for r/w races; nodes index ``HbGraph.events``."""

    kind: str          # WW or RW
    i: int             # node of the first event
    i_op: FlowOp
    k: int             # node of the second event
    k_op: FlowOp
    status: str = HARMFUL


@dataclass
class Detection:
    races: list[Race]
    read_ops: int
    write_ops: int
    time_edges: int = 0
    counts: dict[str, int] = field(default_factory=dict)


def detect_races(g: HbGraph, *, delta: float = 2.0, time_edges: bool = True, data_deps: bool = False,
                 checker: CommutativityChecker | None = None,
                 packets: PacketMatches | None = None) -> Detection:
    """Find and classify the races of ``g`` (adds time / dep_raw edges to ``g``)."""
    with gc_paused():   # up to millions of races, and no cycle among them
        return _detect(g, delta, time_edges, data_deps, checker, packets)


def _detect(g: HbGraph, delta: float, time_edges: bool, data_deps: bool, checker: CommutativityChecker | None,
            packets: PacketMatches | None) -> Detection:
    checker = checker or CommutativityChecker()
    packets = packets or PacketMatches()
    events = g.events

    # Events with flow-table reads or writes, in trace order, and their operations.
    op_nodes = [n for n, ev in enumerate(events)
                if any(op.kind in (READ, WRITE) for op in ev.ops)]
    pos = [-1] * len(events)
    for p, n in enumerate(op_nodes):
        pos[n] = p
    n_reads = sum(1 for n in op_nodes for op in events[n].ops if op.kind == READ)
    n_writes = sum(1 for n in op_nodes for op in events[n].ops if op.kind == WRITE)

    # Ordered-with masks over op-event positions: descendants | ancestors (self included).
    scc = strongly_connected(g.succ)
    desc = reach_masks(g.succ, pos, scc)
    anc = reach_masks(g.pred, pos, strongly_connected(g.pred))
    related = [desc[n] | anc[n] for n in op_nodes]

    writers_by_dpid: dict = defaultdict(int)
    for p, n in enumerate(op_nodes):
        if any(op.kind == WRITE for op in events[n].ops):
            writers_by_dpid[events[n].dpid] |= 1 << p
    statuses = _Statuses(events, checker, packets)
    writes = [[(op, statuses.column(op)) for op in events[n].ops if op.kind == WRITE] for n in op_nodes]

    races: list[Race] = []
    _pair_with_writers(events, op_nodes, related, writers_by_dpid, writes, races, WW, statuses)
    _pair_with_writers(events, op_nodes, related, writers_by_dpid, writes, races, RW, statuses)
    n_time_edges = _time_filter(g, races, delta) if time_edges else 0

    if data_deps:
        _cover_with_data_deps(g, races, op_nodes)

    counts = {COMMUTE: 0, TIME_FILTERED: 0, COVERED: 0, HARMFUL: 0}
    for r in races:
        counts[r.status] += 1
    return Detection(races, n_reads, n_writes, n_time_edges, counts)


class _Statuses:
    """Whether two racing operations commute, decided once per row and column rather than per race.

    A trace has up to a million races but a few thousand pairs of flow mods: on the 1.0 flow table
    the status of a race is a function of the first operation's flow mod (and, for a read, of the
    packet), the write's flow mod and which event came first.  A row holds, for one first
    operation and one order of the events, the status by :meth:`column` of the write.
    """

    def __init__(self, events: list[HbEvent], checker: CommutativityChecker, packets: PacketMatches) -> None:
        self.events = events
        self.checker = checker
        self.packets = packets
        # Rows are shared between first operations alike in all that decides (1.0 only: a 1.3
        # operation's other fields take part), so a trace with any 1.3 operation keeps a row per operation.
        self.shared = all(op.target is None for ev in events for op in ev.ops)
        self._rows: dict[tuple, tuple[dict[int, str], dict[int, str]]] = {}
        self._columns: dict[int, int] = {}

    def column(self, w: FlowOp) -> int:
        """Which write a row tells apart, numbered from 0 (small numbers: cheap dict keys): on the
        1.0 flow table (no target) only the flow mod decides, on a 1.3 table, group or meter the
        operation itself."""
        key = id(w.flow_mod) if w.target is None else id(w)
        return self._columns.setdefault(key, len(self._columns))

    def rows(self, kind: str, ev: HbEvent, a: FlowOp) -> tuple[dict[int, str], dict[int, str]]:
        """The rows of first operation ``a`` of event ``ev``: (the write's event later, earlier)."""
        if not self.shared:
            key: tuple = (id(a),)
        elif kind == WW:
            key = (kind, id(a.flow_mod))
        else:
            key = (kind, id(a.flow_mod), ev.packet, ev.in_port)
        rows = self._rows.get(key)
        if rows is None:
            rows = self._rows[key] = ({}, {})
        return rows

    def status(self, kind: str, n: int, a: FlowOp, m: int, b: FlowOp) -> str:
        """COMMUTE or HARMFUL for the race of op ``a`` of node ``n`` with write ``b`` of node ``m``."""
        events = self.events
        write_first = events[m].eid < events[n].eid
        if b.target is not None:   # OpenFlow 1.3
            c = commute_ops13(a, b, write_first)
        elif b.flow_mod is None or (kind == WW and a.flow_mod is None):
            c = False   # a write without its flow mod: assume the worst
        elif kind == WW:
            c = self.checker.ww(a.flow_mod, b.flow_mod)  # type: ignore[arg-type]  # both checked non-None above
        else:
            pkt = self.packets.get(events[n])
            c = pkt is not None and self.checker.rw(pkt, a.flow_mod, b.flow_mod,  # type: ignore[arg-type]
                                                    write_first)   # 1.0: POX flow mods
        return COMMUTE if c else HARMFUL


def _pair_with_writers(events: list[HbEvent], op_nodes: list[int], related: list[int], writers_by_dpid: dict,
                       writes: list[list[tuple[FlowOp, int]]], races: list[Race], kind: str,
                       statuses: _Statuses) -> None:
    """Add to ``races`` every write (``kind`` WW) or read (RW) op against every unrelated write on the
    same switch, each with its status COMMUTE or HARMFUL (for write/write only the later write of
    each pair, so no race is counted twice); ``related``: per op-event position, the mask of the
    positions ordered with it; ``writes``: per position, the writes with their :meth:`_Statuses.column`."""
    later_only = kind == WW
    for p, n in enumerate(op_nodes):
        ev = events[n]
        ops = [w for w, _ in writes[p]] if later_only else [op for op in ev.ops if op.kind == READ]
        if not ops:
            continue
        cand = writers_by_dpid[ev.dpid] & ~related[p]
        if later_only:
            cand &= ~((2 << p) - 1)
        rows = [(a, *statuses.rows(kind, ev, a)) for a in ops]
        eid = ev.eid
        # Byte q is bit q of the mask (0 or 1): the set bits come out of compress in C, instead of
        # three big-int operations (or a str.find call, which parses its arguments) per race.
        bits = bin(cand)[:1:-1].encode().translate(_BIT_VALUES)
        for q in compress(range(len(bits)), bits):
            m = op_nodes[q]
            write_first = events[m].eid < eid
            for a, later, first in rows:
                ta = a.target     # 1.0: None, the one table; 1.3: a table, group or meter in common
                row = first if write_first else later
                for b, col in writes[q]:
                    if ta is not None and not targets_meet(ta, b.target):
                        continue
                    st = row.get(col)
                    if st is None:
                        st = row[col] = statuses.status(kind, n, a, m, b)
                    races.append(Race(kind, n, a, m, b, st))


def _time_filter(g: HbGraph, races: list[Race], delta: float) -> int:
    """Each non-commuting race more than ``delta`` apart is time-filtered and adds a time edge
    (the earlier operation's event before the later one's); how many edges were added."""
    n = 0
    for r in races:
        if r.status == HARMFUL and abs(r.i_op.t - r.k_op.t) > delta:
            r.status = TIME_FILTERED
            first, second = (r.i, r.k) if r.i_op.t < r.k_op.t else (r.k, r.i)
            g.add_edge(first, second, TIME)
            n += 1
    return n


def packets_with_races(g: HbGraph, races: list[Race]) -> list[tuple[int, list[Race]]]:
    """SDNRacer's per-packet view ("packet coherence violations").

    For every host send (by eid), its packet trace is what it causes without
    time edges and without passing through another host send; the trace
    counts when one of its reads takes part in a harmful (or covered) r/w
    race.  Returns (host-send node, those races) per such packet.
    """
    bad = [r for r in races if r.status in (HARMFUL, COVERED)]
    racing = {x for r in bad for x in (r.i, r.k)}
    rw_by_read: dict[int, list[Race]] = defaultdict(list)
    for r in bad:
        if r.kind == RW:
            rw_by_read[r.i].append(r)
    sends = sorted((n for n, ev in enumerate(g.events) if ev.kind == HOST_SEND), key=lambda n: g.events[n].eid)
    send_set = set(sends)
    out = []
    for h in sends:
        seen = {h}
        stack = [h]
        while stack:
            u = stack.pop()
            for v in g.succ[u]:
                if v in seen or v in send_set or g.rel[(u, v)] == TIME:
                    continue
                seen.add(v)
                stack.append(v)
        hits = [r for n in sorted(seen & racing) for r in rw_by_read.get(n, ())]
        if hits:
            out.append((h, hits))
    return out


# ---------------------------------------------------------------------------
# data dependencies ("covered" races)


class _ShadowTable:
    """Which event wrote the entry a read hit (SDNRacer's shadow flow table, by match+priority).

    SDNRacer replays the switch's table with POX and asserts it agrees with
    the trace; since the trace records the entry each read hit, tracking
    entries by (match, priority) gives the same writers.
    """

    def __init__(self) -> None:
        self._next = 0
        self.entries: dict[tuple, int] = {}             # (match, priority) -> entry id
        self.fm_of: dict[int, Any] = {}                 # PoxFlowMod (1.3: FlowMod13)
        self.adding: dict[int, int] = {}                # entry id -> eid
        self.modifying: dict[int, list[int]] = defaultdict(list)

    def _add(self, fm: PoxFlowMod, eid: int) -> None:
        eid_key = (fm.match, fm.priority)
        old = self.entries.pop(eid_key, None)
        if old is not None:
            self.fm_of.pop(old, None)
        entry = self._next
        self._next += 1
        self.entries[eid_key] = entry
        self.fm_of[entry] = fm
        self.adding[entry] = eid

    def write(self, fm: Any, eid: int) -> None:
        cmd = fm.command
        if cmd == OFPFC_ADD:
            self._add(fm, eid)
        elif cmd in (OFPFC_MODIFY, OFPFC_MODIFY_STRICT):
            if cmd == OFPFC_MODIFY_STRICT:
                hit = [e for k, e in self.entries.items() if k == (fm.match, fm.priority)]
            else:
                hit = [e for (m, _), e in self.entries.items() if fm.match.matches_with_wildcards(m)]
            if not hit:
                self._add(fm, eid)
            for e in hit:
                self.modifying[e].append(eid)
        elif cmd in (OFPFC_DELETE, OFPFC_DELETE_STRICT):
            if cmd == OFPFC_DELETE_STRICT:
                gone = [k for k in self.entries if k == (fm.match, fm.priority)]
            else:
                gone = [k for k in self.entries if fm.match.matches_with_wildcards(k[0])]
            for k in gone:
                self.fm_of.pop(self.entries.pop(k), None)

    def expire(self, fm: Any) -> None:
        e = self.entries.pop((fm.match, fm.priority), None)
        if e is not None:
            self.fm_of.pop(e, None)

    def writers_of_read(self, fm: Any, eid: int) -> list[int]:
        if fm is None:
            return []
        return self._writers(self.entries.get((fm.match, fm.priority)), eid)

    def _writers(self, e: int | None, eid: int) -> list[int]:
        if e is None:
            return []
        mods = self.modifying.get(e)
        if mods:
            i = bisect_left(mods, eid)
            return [mods[i - 1]] if i else []
        add = self.adding[e]
        return [add] if add < eid else []


class _ShadowTable13(_ShadowTable):
    """The same bookkeeping for an OpenFlow 1.3 switch: entries by (table, match, priority), selection by
    ``FlowMod13.selects`` (cookies, out_port/out_group, a group's or meter's users); a MODIFY never adds.
    Reads of groups and meters, and statistics reads, get no dependency edge."""

    def write(self, fm: Any, eid: int) -> None:
        if not isinstance(fm, FlowMod13):
            return
        if fm.is_add():
            key = (fm.table_id, fm.match, fm.priority)
            old = self.entries.pop(key, None)
            if old is not None:
                self.fm_of.pop(old, None)
            entry = self._next
            self._next += 1
            self.entries[key] = entry
            self.fm_of[entry] = fm
            self.adding[entry] = eid
            return
        hit = [k for k, e in self.entries.items() if fm.selects(self.fm_of[e])]
        for k in hit:
            if fm.is_mod():
                e = self.entries[k]
                self.modifying[e].append(eid)
                self.fm_of[e] = replace(self.fm_of[e], instructions=fm.instructions)
            else:
                self.fm_of.pop(self.entries.pop(k), None)

    def expire(self, fm: Any) -> None:
        if isinstance(fm, FlowMod13):
            e = self.entries.pop((fm.table_id, fm.match, fm.priority), None)
            if e is not None:
                self.fm_of.pop(e, None)

    def writers_of_read(self, fm: Any, eid: int) -> list[int]:
        if not isinstance(fm, FlowMod13):
            return []
        return self._writers(self.entries.get((fm.table_id, fm.match, fm.priority)), eid)


def _cover_with_data_deps(g: HbGraph, races: list[Race], op_nodes: list[int]) -> None:
    """Add read-after-write edges in trace order; races they order become ``covered``.

    As SDNRacer: races already ordered once the time edges are in stay
    harmful and are not candidates; a race between the read and the very
    write it depends on is not "covered" (the dependency is that race).
    """
    events = g.events
    reach = g.reachability()   # includes the time edges
    remaining = [r for r in races if r.status == HARMFUL and not reach.ordered(r.i, r.k)]
    by_node: dict[int, list[Race]] = defaultdict(list)
    for r in remaining:
        by_node[r.i].append(r)
        by_node[r.k].append(r)
    direct: set[int] = set()
    tables: dict = {}
    # every switch-table event in trace order (expiries too: they remove entries)
    for n, ev in enumerate(events):
        if ev.dpid is None or not any(op.kind in (READ, WRITE, EXPIRY) for op in ev.ops):
            continue
        table = tables.get(ev.dpid)
        if table is None:
            of13 = any(op.target is not None for op in ev.ops if op.kind in (READ, WRITE, EXPIRY))
            table = tables[ev.dpid] = _ShadowTable13() if of13 else _ShadowTable()
        for w_eid in _shadow_step(table, ev):
            w = g.node_of.get(w_eid)
            if w is not None:
                g.add_edge(w, n, DEP_RAW)
                _cover(g, by_node, direct, w, n)


def _shadow_step(table: Any, ev: HbEvent) -> list[int]:
    """Apply event ``ev``'s operations to its switch's shadow table; the eids of the writes its
    reads depend on."""
    deps: list[int] = []
    for op in ev.ops:
        if op.kind == READ:
            deps.extend(table.writers_of_read(op.flow_mod, ev.eid))
        elif op.kind == WRITE and op.flow_mod is not None:
            table.write(op.flow_mod, ev.eid)
        elif op.kind == EXPIRY and op.flow_mod is not None:
            table.expire(op.flow_mod)
    return deps


def _cover(g: HbGraph, by_node: dict[int, list[Race]], direct: set[int], w: int, n: int) -> None:
    """Mark covered the harmful races the new edge ``w -> n`` orders (``direct``: the races between a
    read and the very write it depends on, which stay races)."""
    after_w = g.descendants([w])
    before_w = None
    after_n = None
    for x in list(by_node):
        if x not in after_w:
            continue
        for r in list(by_node[x]):
            if r.status != HARMFUL or id(r) in direct:
                continue
            if {r.i, r.k} == {n, w}:
                direct.add(id(r))
                continue
            if before_w is None:
                before_w = g.ancestors([w], exclude=())
                after_n = g.descendants([n])
            # r was unordered before this edge (else an earlier edge covered it),
            # so it is ordered now iff a path runs through w -> n.
            assert before_w is not None and after_n is not None  # computed just above
            if (r.i in before_w and r.k in after_n) or (r.k in before_w and r.i in after_n):
                r.status = COVERED
