"""`netsleuth races`: happens-before race detection on a trace (SDNRacer).

:func:`detect_races` reads an SDNRacer ``hb.json``, builds the HB graph,
detects and classifies the races and returns a :class:`RaceReport`.  It
prints nothing.  The defaults are SDNRacer's reference settings (time edges
on, delta 2 s for read/write and write/write, no data dependencies).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netsleuth.errors import TraceFormatError
from netsleuth.races.commute import CommutativityChecker
from netsleuth.races.detect import COMMUTE, COVERED, HARMFUL, TIME_FILTERED, Race, packets_with_races
from netsleuth.races.detect import detect_races as _detect
from netsleuth.races.events import READ, FlowOp, HbEvent
from netsleuth.races.hb import HbGraph, PacketMatches, build_hb_graph

DETAIL_LEVELS = ("none", "harmful", "all")


@dataclass
class RaceReport:
    """Counts, the races with their status, and the HB graph they were found on."""

    path: str
    graph: HbGraph
    races: list[Race]
    read_ops: int
    write_ops: int
    time_edges: int
    counts: dict[str, int]
    settings: dict[str, Any]
    seconds: dict[str, float] = field(default_factory=dict)
    racing_packets: list[tuple[int, list[Race]]] = field(default_factory=list)
    labels: dict[int, str] = field(default_factory=dict)   # eid -> the event in plain words (netsleuth traces)

    # counts, named as in SDNRacer's summary
    @property
    def n_races(self) -> int:
        return len(self.races)

    @property
    def commute(self) -> int:
        return self.counts[COMMUTE]

    @property
    def time_filtered(self) -> int:
        return self.counts[TIME_FILTERED]

    @property
    def covered(self) -> int:
        return self.counts[COVERED]

    @property
    def harmful(self) -> int:
        return self.counts[HARMFUL]

    def harmful_races(self) -> list[Race]:
        return [r for r in self.races if r.status == HARMFUL]

    def race_subgraph_nodes(self, race: Race, exclude: Iterable[str] = ("time",)) -> set[int]:
        """The two race events and all their ancestors, ignoring ``exclude`` edges (BigBug's input)."""
        return self.graph.ancestors([race.i, race.k], exclude=exclude)

    def summary(self) -> dict[str, Any]:
        return {
            "events": len(self.graph),
            "edges": self.graph.n_edges,
            "read": self.read_ops,
            "writes": self.write_ops,
            "races": self.n_races,
            "commuting": self.commute,
            "time_filtered_races": self.time_filtered,
            "covered": self.covered,
            "harmful": self.harmful,
            "time_edges": self.time_edges,
            "per_pkt_races": len(self.racing_packets),
        }

    def to_json(self, detail: str = "harmful") -> dict[str, Any]:
        """Counts plus races with their two events.

        ``detail``: "harmful" lists the harmful races, "all" every race (large:
        hundreds of thousands on the load-balancer trace), "none" only counts.
        """
        if detail not in DETAIL_LEVELS:
            raise ValueError(f"detail must be one of {DETAIL_LEVELS}")
        out: dict[str, Any] = {"trace": self.path, **self.summary(), "settings": dict(self.settings),
                               "seconds": {k: round(v, 4) for k, v in self.seconds.items()}}
        if detail != "none":
            chosen = self.races if detail == "all" else self.harmful_races()
            cache: dict = {}
            out["race_list"] = [race_to_json(self.graph, r, cache) for r in chosen]
            if self.labels:
                for rd in out["race_list"]:
                    for ed in rd["events"]:
                        text = self.labels.get(ed["eid"])
                        if text:
                            ed["text"] = text
        return out


_ALL_IDS = (0xFF, 0xFFFFFFFC, 0xFFFFFFFF)   # OFPTT_ALL, OFPG_ALL, OFPM_ALL


def _op_json(op: FlowOp) -> dict[str, Any]:
    d: dict[str, Any] = {"op": op.kind, "t": op.t}
    if op.op_id is not None:
        d["op_id"] = op.op_id
    if op.target is not None:       # OpenFlow 1.3: which table, group or meter
        d["target"] = f"{op.target[0]} {'all' if op.target[1] in _ALL_IDS else op.target[1]}"
    if op.flow_mod is not None:
        d["flow_entry" if op.kind == READ else "flow_mod"] = op.flow_mod.describe()
    elif op.kind == READ:
        d["flow_entry"] = None   # table miss
    return d


def event_to_json(ev: HbEvent) -> dict[str, Any]:
    d: dict[str, Any] = {"eid": ev.eid, "type": ev.kind}
    if ev.dpid is not None:
        d["dpid"] = ev.dpid
    if ev.msg_type:
        d["msg_type"] = ev.msg_type
    if ev.in_port is not None:
        d["in_port"] = ev.in_port
    if ev.packet:
        d["packet"] = packet_summary(ev.packet)
    return d


def packet_summary(frame: bytes) -> str:
    from netsleuth.model.packet import Packet

    try:
        return Packet.from_bytes(frame).summary()
    except Exception:  # pragma: no cover - summary of odd frames is best effort
        return f"{len(frame)} bytes"


def race_to_json(g: HbGraph, r: Race, cache: dict | None = None) -> dict[str, Any]:
    """A race with its two events (``cache`` shares event/operation texts between races)."""
    cache = {} if cache is None else cache

    def part(node: int, op: FlowOp) -> dict[str, Any]:
        key = (node, id(op))
        d = cache.get(key)
        if d is None:
            d = cache[key] = {**event_to_json(g.events[node]), **_op_json(op)}
        return d

    return {"type": r.kind, "status": r.status, "dpid": g.events[r.i].dpid,
            "events": [part(r.i, r.i_op), part(r.k, r.k_op)]}


def detect_races(path: str | Path, *, delta: float = 2.0, time_edges: bool = True,
                 data_deps: bool = False, events: list[HbEvent] | None = None,
                 labels: dict[int, str] | None = None) -> RaceReport:
    """Races of an SDNRacer ``hb.json`` trace (or of ``events`` already read, in trace order).

    ``path`` may also be a netsleuth trace (or a run directory holding
    ``trace.jsonl``): its header line is sniffed and the events are built by
    :mod:`netsleuth.races.from_trace`, whose plain-words ``labels`` end up in
    the report.

    ``delta``: seconds beyond which two operations are considered ordered in
    time (SDNRacer's rw/ww delta; also the flow-expiry rule's delta).
    ``time_edges``: apply the time filter.  ``data_deps``: add read-after-write
    dependency edges and report the races they order as ``covered``.
    """
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    if events is None:
        from netsleuth.races.from_trace import events_from_trace, is_netsleuth_trace

        # A .jsonl whose header is damaged still goes to the netsleuth reader,
        # whose error names the broken header instead of hb.json's fields.
        netsleuth_trace = is_netsleuth_trace(path) or Path(path).suffix == ".jsonl"
        if netsleuth_trace:
            built = events_from_trace(path)
            events, labels = built.events, built.labels
        else:
            from netsleuth.races.hbtrace import read_hb_json

            events = read_hb_json(path)
    else:
        netsleuth_trace = labels is not None
    # A netsleuth trace may well record nothing to order (no OpenFlow message reached a switch, no
    # packet): that is a trace without races, not a broken one.  An hb.json holds events by definition.
    if not events and not netsleuth_trace:
        raise TraceFormatError(f"{path}: no events",
                               "give a trace with events: an SDNRacer hb.json or a netsleuth trace.jsonl")
    t1 = time.perf_counter()
    seconds["load"] = t1 - t0
    checker = CommutativityChecker()
    packets = PacketMatches()
    g = build_hb_graph(events, delta=delta, checker=checker, packets=packets)
    t2 = time.perf_counter()
    seconds["graph"] = t2 - t1
    det = _detect(g, delta=delta, time_edges=time_edges, data_deps=data_deps, checker=checker, packets=packets)
    racing_packets = packets_with_races(g, det.races)
    t3 = time.perf_counter()
    seconds["detect"] = t3 - t2
    seconds["total"] = t3 - t0
    settings = {"delta": delta, "time_edges": time_edges, "data_deps": data_deps}
    return RaceReport(str(path), g, det.races, det.read_ops, det.write_ops, det.time_edges,
                      det.counts, settings, seconds, racing_packets, dict(labels or {}))


__all__ = ["RaceReport", "detect_races", "race_to_json", "event_to_json"]
