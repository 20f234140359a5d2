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

    races: list[Race] = []

    _pair_with_writers(events, op_nodes, related, writers_by_dpid, races, WW, WRITE, later_only=True)
    _pair_with_writers(events, op_nodes, related, writers_by_dpid, races, RW, READ, later_only=False)
    _mark_commuting(races, events, checker, packets)
    n_time_edges = _time_filter(g, races, delta) if time_edges else 0

    if data_deps:
        _cover_with_data_deps(g, races, op_nodes)

    counts = {COMMUTE: 0, TIME_FILTERED: 0, COVERED: 0, HARMFUL: 0}
    for r in races:
        counts[r.status] += 1
    return Detection(races, n_reads, n_writes, n_time_edges, counts)


def _pair_with_writers(events: list[HbEvent], op_nodes: list[int], related: list[int], writers_by_dpid: dict,
                       races: list[Race], kind: str, op_kind: str, later_only: bool) -> None:
    """Add to ``races`` every ``op_kind`` op against every unrelated write on the same switch
    (for write/write only the later write of each pair, so no race is counted twice);
    ``related``: per op-event position, the mask of the positions ordered with it."""
    for p, n in enumerate(op_nodes):
        ev = events[n]
        ops = [op for op in ev.ops if op.kind == op_kind]
        if not ops:
            continue
        cand = writers_by_dpid[ev.dpid] & ~related[p]
        if later_only:
            cand &= ~((2 << p) - 1)
        while cand:
            low = cand & -cand
            q = low.bit_length() - 1
            cand ^= low
            m = op_nodes[q]
            for a in ops:
                ta = a.target     # 1.0: None, the one table; 1.3: a table, group or meter in common
                for b in events[m].ops:
                    if b.kind == WRITE and (ta is None or targets_meet(ta, b.target)):
                        races.append(Race(kind, n, a, m, b))


def _mark_commuting(races: list[Race], events: list[HbEvent], checker: CommutativityChecker,
                    packets: PacketMatches) -> None:
    """Races whose two operations commute are no races: their status becomes COMMUTE.

    One loop here rather than a call per race: a trace has up to a million of them."""
    ww = checker.ww
    rw = checker.rw
    for r in races:
        i_op, k_op = r.i_op, r.k_op
        if k_op.target is not None:   # OpenFlow 1.3
            c = commute_ops13(i_op, k_op, events[r.k].eid < events[r.i].eid)
        elif k_op.flow_mod is None or (r.kind == WW and i_op.flow_mod is None):
            c = False   # a write without its flow mod: assume the worst
        elif r.kind == WW:
            c = ww(i_op.flow_mod, k_op.flow_mod)  # type: ignore[arg-type]  # both checked non-None above
        else:
            pkt = packets.get(events[r.i])
            c = pkt is not None and rw(pkt, i_op.flow_mod, k_op.flow_mod,  # type: ignore[arg-type]
                                       events[r.k].eid < events[r.i].eid)   # 1.0: POX flow mods
        if c:
            r.status = COMMUTE


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
