"""The happens-before graph, built with SDNRacer's rules exactly.

Edges (``rel``), added while the events are processed in trace order:

``pid``
    packet causality: the event whose ``pid_out`` holds x happens before the
    event whose ``pid_in`` is x (host send -> switch handle -> switch send ->
    ..., PACKET_OUT handle -> packet send, buffer put -> buffer get).
``mid``
    message causality, the same with ``mid_out``/``mid_in`` (switch handle ->
    PACKET_IN send -> controller handle -> controller send -> switch handle).
``barrier_pre``
    on a switch, every message handle since the last BARRIER_REQUEST handle
    happens before the next BARRIER_REQUEST handle.
``barrier_post``
    the last BARRIER_REQUEST handle on a switch happens before every later
    message handle on it.
``time`` (flow expiry)
    an earlier message handle whose flow-table write (or read) does not
    commute with a DELETE_STRICT of the expired entry and is more than
    ``delta`` seconds from the expiry happens before the expiry.

There is no program order on a switch.  Events of handshake, config and
statistics messages are left out (:data:`SKIP_MSG_TYPES`).  "Since", "later"
and "earlier" are in trace order, as in SDNRacer, and an id linked before its
consumer appears links only the first producer that follows it (SDNRacer's
pending-id bookkeeping).  Race detection later adds ``time`` edges for
time-filtered races and, with data dependencies, ``dep_raw`` edges.

The graph keeps every edge's relation so that per-race subgraphs (BigBug) can
be taken with or without time edges.  Reachability does not assume a DAG
(ONOS traces have cycles): strongly connected components are condensed and
reachability is propagated as bitsets in reverse topological order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any

from netsleuth.errors import TraceFormatError
from netsleuth.races.commute import CommutativityChecker, commute_ops13
from netsleuth.races.events import (
    EXPIRY,
    FLOW_EXPIRY,
    MESSAGE_HANDLE,
    READ,
    SKIP_MSG_TYPES,
    WRITE,
    FlowOp,
    HbEvent,
)
from netsleuth.races.of13.flowmod import FlowMod13
from netsleuth.races.poxmatch import OFPFC_DELETE_STRICT, PoxFlowMod, PoxMatch

PID, MID, BARRIER_PRE, BARRIER_POST, TIME, DEP_RAW = "pid", "mid", "barrier_pre", "barrier_post", "time", "dep_raw"


class HbGraph:
    """Events as nodes 0..n-1 (in trace order), edges labelled with their relation."""

    def __init__(self) -> None:
        self.events: list[HbEvent] = []
        self.node_of: dict[int, int] = {}          # eid -> node
        self.succ: list[list[int]] = []
        self.pred: list[list[int]] = []
        self.rel: dict[tuple[int, int], str] = {}  # first relation an edge was added with
        self.expiry_time_edges = 0                 # SDNRacer's rule-5 edge count (not in its report)

    # -- structure -------------------------------------------------------------
    def add_event(self, ev: HbEvent) -> int:
        if ev.eid in self.node_of:
            raise TraceFormatError(f"event id {ev.eid} appears twice", "give each event a unique eid")
        n = len(self.events)
        self.events.append(ev)
        self.node_of[ev.eid] = n
        self.succ.append([])
        self.pred.append([])
        return n

    def add_edge(self, u: int, v: int, rel: str) -> bool:
        """Add u -> v; False if it was there already (the first relation is kept)."""
        if u == v or (u, v) in self.rel:
            return False
        self.rel[(u, v)] = rel
        self.succ[u].append(v)
        self.pred[v].append(u)
        return True

    def __len__(self) -> int:
        return len(self.events)

    @property
    def n_edges(self) -> int:
        return len(self.rel)

    def edges(self, rels: Iterable[str] | None = None) -> Iterator[tuple[int, int, str]]:
        wanted = None if rels is None else set(rels)
        for (u, v), r in self.rel.items():
            if wanted is None or r in wanted:
                yield u, v, r

    def event(self, eid: int) -> HbEvent:
        return self.events[self.node_of[eid]]

    # -- queries -----------------------------------------------------------------
    def reachability(self) -> Reachability:
        """A snapshot of reachability over the current edges."""
        return Reachability(self.succ)

    def ancestors(self, nodes: Iterable[int], exclude: Iterable[str] = (TIME,)) -> set[int]:
        """``nodes`` and everything that happens before them, ignoring ``exclude`` edges."""
        skip = set(exclude)
        seen = set(nodes)
        stack = list(seen)
        rel = self.rel
        while stack:
            v = stack.pop()
            for u in self.pred[v]:
                if u not in seen and rel[(u, v)] not in skip:
                    seen.add(u)
                    stack.append(u)
        return seen

    def descendants(self, nodes: Iterable[int], exclude: Iterable[str] = ()) -> set[int]:
        skip = set(exclude)
        seen = set(nodes)
        stack = list(seen)
        rel = self.rel
        while stack:
            u = stack.pop()
            for v in self.succ[u]:
                if v not in seen and rel[(u, v)] not in skip:
                    seen.add(v)
                    stack.append(v)
        return seen

    def has_path(self, u: int, v: int) -> bool:
        """u reaches v over the current edges (BFS; for one-off questions)."""
        if u == v:
            return True
        seen = {u}
        stack = [u]
        succ = self.succ
        while stack:
            x = stack.pop()
            for y in succ[x]:
                if y == v:
                    return True
                if y not in seen:
                    seen.add(y)
                    stack.append(y)
        return False

    def subgraph(self, nodes: Iterable[int], exclude: Iterable[str] = ()):
        """A networkx DiGraph over ``nodes`` (node = eid, attrs: event, kind; edge attr: rel)."""
        import networkx as nx

        keep = set(nodes)
        skip = set(exclude)
        g = nx.DiGraph()
        for n in sorted(keep):
            ev = self.events[n]
            g.add_node(ev.eid, event=ev, kind=ev.kind)
        for (u, v), r in self.rel.items():
            if u in keep and v in keep and r not in skip:
                g.add_edge(self.events[u].eid, self.events[v].eid, rel=r)
        return g

    def to_networkx(self, exclude: Iterable[str] = ()):
        return self.subgraph(range(len(self.events)), exclude)


# ---------------------------------------------------------------------------
# reachability


def strongly_connected(succ: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    """Tarjan (iterative): (component of each node, components sinks-first)."""
    n = len(succ)
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    comp = [-1] * n
    comps: list[list[int]] = []
    stack: list[int] = []
    counter = 0
    for root in range(n):
        if index[root] != -1:
            continue
        work = [(root, 0)]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        while work:
            v, i = work[-1]
            edges = succ[v]
            if i < len(edges):
                work[-1] = (v, i + 1)
                w = edges[i]
                if index[w] == -1:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, 0))
                elif on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
                continue
            work.pop()
            if work:
                p = work[-1][0]
                if low[v] < low[p]:
                    low[p] = low[v]
            if low[v] == index[v]:
                c = len(comps)
                members = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp[w] = c
                    members.append(w)
                    if w == v:
                        break
                comps.append(members)
    return comp, comps


def reach_masks(succ: list[list[int]], bit: list[int] | None = None,
                scc: tuple[list[int], list[list[int]]] | None = None) -> list[int]:
    """For every node, a bitset of the nodes it reaches (itself and its SCC included).

    ``bit[v]`` (a list) gives the bit position of node v, or -1 to leave it
    out (to restrict masks to, say, the events with flow-table operations).
    """
    comp, comps = scc or strongly_connected(succ)
    n = len(succ)
    if bit is None:
        bit = list(range(n))
    cmask = [0] * len(comps)
    for c, members in enumerate(comps):   # sinks first: successors' masks are final
        m = 0
        for v in members:
            b = bit[v]
            if b >= 0:
                m |= 1 << b
        for v in members:
            for w in succ[v]:
                cw = comp[w]
                if cw != c:
                    m |= cmask[cw]
        cmask[c] = m
    return [cmask[comp[v]] for v in range(n)]


class Reachability:
    """Reachability between all nodes of a graph (a snapshot)."""

    def __init__(self, succ: list[list[int]]) -> None:
        self.comp, comps = strongly_connected(succ)
        self.n_components = len(comps)
        self.desc = reach_masks(succ, None, (self.comp, comps))

    def reaches(self, u: int, v: int) -> bool:
        return bool((self.desc[u] >> v) & 1)

    def ordered(self, u: int, v: int) -> bool:
        """Ordered in either direction (SDNRacer's ``has_path(..., bidirectional=True)``)."""
        return bool((self.desc[u] >> v) & 1) or bool((self.desc[v] >> u) & 1)


# ---------------------------------------------------------------------------
# building


class PacketMatches:
    """``PoxMatch.from_packet`` per (frame, in_port), computed once."""

    def __init__(self) -> None:
        self._cache: dict[tuple[bytes, int | None], PoxMatch] = {}

    def get(self, ev: HbEvent) -> PoxMatch | None:
        if ev.packet is None:
            return None
        key = (ev.packet, ev.in_port)
        m = self._cache.get(key)
        if m is None:
            m = self._cache[key] = PoxMatch.from_packet(ev.packet, ev.in_port)
        return m


def build_hb_graph(events: Iterable[HbEvent], *, delta: float = 2.0,
                   checker: CommutativityChecker | None = None,
                   packets: PacketMatches | None = None) -> HbGraph:
    """The HB graph of ``events`` (in trace order) by SDNRacer's rules (see the module doc).

    ``delta`` is the flow-expiry rule's time distance in seconds (SDNRacer's
    ww/rw deltas, which its command line sets to one value).
    """
    checker = checker or CommutativityChecker()
    packets = packets or PacketMatches()
    g = HbGraph()
    by_pid_out: dict = defaultdict(list)
    by_mid_out: dict = defaultdict(list)
    pending_pid: dict = defaultdict(list)
    pending_mid: dict = defaultdict(list)
    before_barrier: dict = defaultdict(list)
    last_barrier: dict = {}
    handles: list[int] = []   # message-handle nodes so far (for the expiry rule)

    for ev in events:
        if ev.msg_type is not None and ev.msg_type in SKIP_MSG_TYPES:
            continue
        node = g.add_event(ev)
        for x in ev.pid_out:
            by_pid_out[x].append(node)
        for x in ev.mid_out:
            by_mid_out[x].append(node)
        if ev.has_pid_in:
            pending_pid[ev.pid_in].append(node)
        if ev.has_mid_in:
            pending_mid[ev.mid_in].append(node)

        # rules 1 and 2: pid_out -> pid_in, mid_out -> mid_in (either may come first)
        _link_rule(g, node, ev.has_pid_in, ev.pid_in, ev.pid_out, by_pid_out, pending_pid, PID)
        _link_rule(g, node, ev.has_mid_in, ev.mid_in, ev.mid_out, by_mid_out, pending_mid, MID)
        # rules 3 and 4: barriers
        if ev.kind == MESSAGE_HANDLE:
            _barrier_rule(g, node, ev, before_barrier, last_barrier)
            handles.append(node)

        # rule 5: flow expiry
        if ev.kind == FLOW_EXPIRY:
            _expiry_rule(g, node, ev, handles, delta, checker, packets)
    return g


def _link_rule(g: HbGraph, node: int, has_in: bool, key_in: Any, outs: Iterable[Any], by_out: dict,
               pending: dict, rel: str) -> None:
    """Rules 1 and 2 for one id kind (pid or mid): an event's ``*_out`` ids happen before the
    events that take them as ``*_in``, whichever of the two the trace lists first."""
    if has_in and key_in in by_out:
        for other in by_out[key_in]:
            g.add_edge(other, node, rel)
            waiting = pending[key_in]
            if node in waiting:
                waiting.remove(node)
    for x in outs:
        if x in pending:
            waiting = pending[x]
            for other in list(waiting):
                g.add_edge(node, other, rel)
                waiting.remove(other)


def _barrier_rule(g: HbGraph, node: int, ev: HbEvent, before_barrier: dict, last_barrier: dict) -> None:
    """Rules 3 and 4: the messages a switch handled before a barrier request happen before it,
    and the barrier before the messages handled after it."""
    if ev.msg_type == "OFPT_BARRIER_REQUEST":
        for other in before_barrier.pop(ev.dpid, ()):
            g.add_edge(other, node, BARRIER_PRE)
        last_barrier[ev.dpid] = node
    else:
        before_barrier[ev.dpid].append(node)
        if ev.dpid in last_barrier:
            g.add_edge(last_barrier[ev.dpid], node, BARRIER_POST)


def _expiry_rule(g: HbGraph, node: int, ev: HbEvent, handles: list[int], delta: float,
                 checker: CommutativityChecker, packets: PacketMatches) -> None:
    expiry = next((op for op in ev.ops if op.kind == EXPIRY and op.flow_mod is not None), None)
    if expiry is None:
        return
    removed = expiry.flow_mod
    if isinstance(removed, FlowMod13):
        _expiry_rule13(g, node, ev, expiry, handles, delta)
        return
    # expiry was picked with a flow_mod
    dummy = PoxFlowMod(removed.match, OFPFC_DELETE_STRICT, removed.priority)  # type: ignore[union-attr]
    for h in handles:
        e = g.events[h]
        for op in e.ops:
            if op.kind != WRITE or op.flow_mod is None:
                continue
            if checker.ww(op.flow_mod, dummy):  # type: ignore[arg-type]  # 1.0 switches hold POX flow mods
                continue
            if abs(expiry.t - op.t) > delta:
                if g.add_edge(h, node, TIME):
                    g.expiry_time_edges += 1
                break
        pkt = None
        for op in e.ops:
            if op.kind != READ:
                continue
            pkt = pkt or packets.get(e)
            if pkt is None:
                break
            if checker.rw(pkt, op.flow_mod, dummy, ev.eid < e.eid):  # type: ignore[arg-type]
                continue
            if abs(expiry.t - op.t) > delta:
                if g.add_edge(h, node, TIME):
                    g.expiry_time_edges += 1
                break


def _expiry_rule13(g: HbGraph, node: int, ev: HbEvent, expiry: FlowOp, handles: list[int], delta: float) -> None:
    """Rule 5 on an OpenFlow 1.3 switch: the expiry is a DELETE_STRICT of exactly the removed entry
    (its table, match and priority); each earlier message handle's first operation that does not
    commute with it and lies more than ``delta`` before it orders the handle before the expiry."""
    removed = expiry.flow_mod
    assert isinstance(removed, FlowMod13)   # the caller dispatched on it
    dummy = FlowOp(WRITE, expiry.t, removed.strict_delete(), target=expiry.target)
    for h in handles:
        e = g.events[h]
        for kind in (WRITE, READ):
            for op in e.ops:
                if op.kind != kind or op.target is None:
                    continue
                if commute_ops13(op, dummy, ev.eid < e.eid):
                    continue
                if abs(expiry.t - op.t) > delta:
                    if g.add_edge(h, node, TIME):
                        g.expiry_time_edges += 1
                break
