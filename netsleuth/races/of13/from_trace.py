"""The OpenFlow 1.3 operations of a netsleuth trace's events, for :mod:`netsleuth.races.from_trace`.

A packet on a 1.3 switch goes through the model's pipeline
(``Pipeline13.process`` on the switch rebuilt from the trace), and every
table it passes through (goto-table) is a READ of that table with the OXM
fields that table looked up (the packet as modified so far, with its
metadata) and the entry it hit; every group it executed and every meter it
passed is a READ of that group or meter as it was.  A FLOW_MOD is a WRITE of
its table (a DELETE of ``OFPTT_ALL``: of all of them); a GROUP_MOD or
METER_MOD a WRITE of its group or meter, and a DELETE of one also a WRITE
of every table (the flows that used it go with it); a MULTIPART request
for flow or aggregate statistics, group or meter statistics or
descriptions a READ of what it names.  The commutativity of these
operations is :mod:`netsleuth.races.of13.commute`'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

from netsleuth.model.of13.errors import OFError
from netsleuth.model.of13.flowtable import FlowEntry13
from netsleuth.model.of13.instructions import Instructions
from netsleuth.model.of13.oxm import OxmMatch
from netsleuth.model.of13.pipeline import Pipeline13, Result
from netsleuth.races.events import READ, STATS_READ, WRITE, FlowOp
from netsleuth.races.of13.flowmod import GROUP, METER, TABLE, FlowMod13, GroupMeterMod

FLOW_READ = "TraceSwitchFlowTableRead"
FLOW_WRITE = "TraceSwitchFlowTableWrite"
GROUP_READ = "TraceSwitchGroupRead"
METER_READ = "TraceSwitchMeterRead"

# MULTIPART requests that read flow tables, groups or meters (the others are left out, as 1.0's STATS)
_STATS_KINDS = (parser.OFPFlowStatsRequest, parser.OFPAggregateStatsRequest, parser.OFPGroupStatsRequest,
                parser.OFPGroupDescStatsRequest, parser.OFPMeterStatsRequest, parser.OFPMeterConfigStatsRequest)
_STATS_REPLIES = (parser.OFPFlowStatsReply, parser.OFPAggregateStatsReply, parser.OFPGroupStatsReply,
                  parser.OFPGroupDescStatsReply, parser.OFPMeterStatsReply, parser.OFPMeterConfigStatsReply)


def reads_state(msg: Any) -> bool:
    """Is this MULTIPART request or reply about flow tables, groups or meters (kept in the analysis)?"""
    return isinstance(msg, _STATS_KINDS + _STATS_REPLIES)


class EntryViews:
    """``FlowMod13.of_entry`` per flow entry of one switch, made once per (entry, instructions).

    The commutativity checks compare entries by value, but a view that
    stays the same object while the entry is unchanged keeps the reports
    small and lets a FLOW_REMOVED find the instructions its entry had.
    """

    def __init__(self) -> None:
        self._views: dict[int, tuple[FlowEntry13, Instructions, FlowMod13]] = {}

    def of(self, e: FlowEntry13) -> FlowMod13:
        rec = self._views.get(id(e))
        if rec is not None and rec[0] is e and rec[1] is e.instructions:
            return rec[2]
        view = FlowMod13.of_entry(e)
        self._views[id(e)] = (e, e.instructions, view)
        return view

    def last_known(self, table_id: int, match: OxmMatch, priority: int) -> FlowMod13 | None:
        """The latest view of an entry with this (table, match, priority): a removed entry's instructions."""
        for _, _, view in reversed(list(self._views.values())):
            if view.table_id == table_id and view.priority == priority and view.match == match:
                return view
        return None


def _group_content(p: Pipeline13, gid: int) -> tuple[Any, ...] | None:
    g = p.groups.groups.get(gid)
    return None if g is None else (g.type, g.buckets)


def _meter_content(p: Pipeline13, mid: int) -> tuple[Any, ...] | None:
    m = p.meters.meters.get(mid)
    return None if m is None else (m.flags, m.bands)


def pipeline_reads(result: Result, pipeline: Pipeline13, t: float, views: EntryViews) -> list[FlowOp]:
    """The READs of one trip through the pipeline: each table looked up, each group and meter used."""
    ops = [FlowOp(READ, t, views.of(entry) if entry is not None else None, None, FLOW_READ,
                  target=(TABLE, table_id), fields=fields)
           for (table_id, entry), fields in zip(result.path, result.lookups, strict=True)]
    for gid in dict.fromkeys(result.groups):
        ops.append(FlowOp(READ, t, GroupMeterMod(GROUP, None, gid, _group_content(pipeline, gid)), None, GROUP_READ,
                          target=(GROUP, gid)))
    for mid in dict.fromkeys(result.meters):
        ops.append(FlowOp(READ, t, GroupMeterMod(METER, None, mid, _meter_content(pipeline, mid)), None, METER_READ,
                          target=(METER, mid)))
    return ops


def trip_text(result: Result) -> str:
    """Which entry each table matched, in words: ``matched table=0,priority=1,... actions=goto_table:1; ...``."""
    parts = [f"matched {entry}" if entry is not None else f"missed table {table_id} (no entry)"
             for table_id, entry in result.path]
    return "; then ".join(parts) or "was not looked up"


def flow_mod_write(msg: Any, t: float) -> FlowOp:
    """A FLOW_MOD's WRITE (``flow_mod`` None when the switch rejects its match or instructions)."""
    try:
        fm: FlowMod13 | None = FlowMod13.from_msg(msg)
    except OFError:
        fm = None
    return FlowOp(WRITE, t, fm, None, FLOW_WRITE, target=(TABLE, msg.table_id))


def group_meter_writes(msg: Any, t: float) -> list[FlowOp]:
    """A GROUP_MOD's or METER_MOD's WRITE, and for a DELETE the removal of the flows that use it."""
    is_group = isinstance(msg, parser.OFPGroupMod)
    try:
        gm = GroupMeterMod.group_mod(msg) if is_group else GroupMeterMod.meter_mod(msg)
    except OFError:
        kind, oid = (GROUP, msg.group_id) if is_group else (METER, msg.meter_id)
        gm = GroupMeterMod(kind, msg.command, oid, None)
    ops = [FlowOp(WRITE, t, gm, None, f"TraceSwitch{gm.kind.capitalize()}Write", target=gm.target)]
    if gm.is_del():
        users = FlowMod13(ofp.OFPFC_DELETE, ofp.OFPTT_ALL, OxmMatch(), 0, Instructions(), users_of=gm.target)
        ops.append(FlowOp(WRITE, t, users, None, FLOW_WRITE, target=(TABLE, ofp.OFPTT_ALL)))
    return ops


def stats_reads(msg: Any, pipeline: Pipeline13 | None, t: float) -> list[FlowOp]:
    """A state-reading MULTIPART request's READ: the entries, groups or meters it names."""
    if isinstance(msg, (parser.OFPFlowStatsRequest, parser.OFPAggregateStatsRequest)):
        try:
            match = OxmMatch.from_ofp(msg.match)
        except OFError:
            return []
        request = FlowMod13(ofp.OFPFC_DELETE, msg.table_id, match, 0, Instructions(), msg.cookie, msg.cookie_mask,
                            msg.out_port, msg.out_group)
        return [FlowOp(READ, t, request, None, STATS_READ, target=(TABLE, msg.table_id))]
    if isinstance(msg, (parser.OFPGroupStatsRequest, parser.OFPGroupDescStatsRequest)):
        gid = getattr(msg, "group_id", ofp.OFPG_ALL)
        content = _group_content(pipeline, gid) if pipeline is not None and gid != ofp.OFPG_ALL else None
        return [FlowOp(READ, t, GroupMeterMod(GROUP, None, gid, content), None, GROUP_READ, target=(GROUP, gid))]
    if isinstance(msg, (parser.OFPMeterStatsRequest, parser.OFPMeterConfigStatsRequest)):
        mid = msg.meter_id
        content = _meter_content(pipeline, mid) if pipeline is not None and mid != ofp.OFPM_ALL else None
        return [FlowOp(READ, t, GroupMeterMod(METER, None, mid, content), None, METER_READ, target=(METER, mid))]
    return []


def output_ports(result: Result, ports: Iterable[int]) -> frozenset[int]:
    """The switch ports a trip sent copies out of (reserved ports and unknown ones aside)."""
    known = set(ports)
    return frozenset(e.port for e in result.outputs if e.port <= ofp.OFPP_MAX and e.port in known)


def controller_frame(result: Result) -> bytes | None:
    """The bytes of the first copy a trip sent to the controller (a PACKET_IN's data), or None."""
    return next((e.frame.to_bytes() for e in result.outputs if e.port == ofp.OFPP_CONTROLLER), None)


def packet_in_port(msg: Any) -> int:
    """A 1.3 PACKET_IN's ingress port (from its match; 0 when the switch left it out)."""
    try:
        return int(msg.match["in_port"])
    except (KeyError, TypeError):
        return 0


def packet_fields(frame: bytes, in_port: int) -> dict[str, int] | None:
    """The OXM fields table 0 sees for ``frame`` arriving on ``in_port`` (rule (c) of from_trace)."""
    from netsleuth.model.of13.fields import oxm_fields
    from netsleuth.model.of13.frame import Frame

    try:
        return oxm_fields(Frame.from_bytes(frame), in_port)
    except Exception:  # pragma: no cover - Frame.from_bytes keeps odd bytes as payload
        return None


__all__ = ["EntryViews", "flow_mod_write", "group_meter_writes", "output_ports", "packet_fields", "packet_in_port",
           "pipeline_reads", "reads_state", "stats_reads", "controller_frame", "trip_text"]
