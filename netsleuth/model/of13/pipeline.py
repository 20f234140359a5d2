"""A packet through the OpenFlow 1.3 pipeline: tables, instructions, action set, groups, meters.

``Pipeline13.process(frame, in_port, now)`` is the whole forwarding
decision of one switch for one packet, as data: the copies it sends (port,
frame as sent, and for the controller the packet-in's reason, table,
cookie, metadata and max_len) and why it stopped.  It is sans-I/O like the
rest of the model: time comes in as ``now``, port liveness as ``ports``,
and the SELECT hash is seeded, so the same inputs give the same outputs.

Spec 5.1/5.9, in order, for each table from 0: look the packet up (a miss
with no table-miss entry drops it, and the action set is *not* executed);
run the entry's meter (a drop band drops), apply-actions (outputs and
groups act at once on the packet as modified so far), clear-actions,
write-actions, write-metadata; then goto-table, or execute the action set.
An output to the packet's own ingress port needs OFPP_IN_PORT; a plain
output to it sends nothing.  FLOOD skips the ingress port and ports marked
no_flood, ALL only the ingress port.  A TTL decrement that reaches zero
ends the packet (or sends it to the controller with OFPR_INVALID_TTL when
the switch is configured so, OFPC_INVALID_TTL_TO_CONTROLLER).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from os_ken.ofproto import ofproto_v1_3 as ofp

from netsleuth.model.of13.actions import Action, Group, Output, SetField, SetQueue, TtlExpired, apply
from netsleuth.model.of13.actionset import ActionSet
from netsleuth.model.of13.errors import OFError
from netsleuth.model.of13.fields import oxm_fields
from netsleuth.model.of13.flowtable import OVS_TABLES, FlowEntry13, FlowTables, RemovedFlow
from netsleuth.model.of13.frame import Frame
from netsleuth.model.of13.groups import Bucket, GroupTable
from netsleuth.model.of13.instructions import FlowContext, Instructions, check_actions
from netsleuth.model.of13.meters import Band, MeterTable, remark_dscp
from netsleuth.model.of13.oxm import OxmMatch

PACKET_OUT_COOKIE = (1 << 64) - 1
"""The cookie of a packet-in caused by a packet-out's actions (spec 7.4.1)."""
MAX_GROUP_DEPTH = 32


@dataclass(frozen=True, slots=True)
class PortState:
    """What the pipeline needs to know about a port: is it live (FAST_FAILOVER), may it flood."""

    live: bool = True
    no_flood: bool = False


@dataclass(frozen=True, slots=True)
class Emit:
    """One copy of the packet leaving the pipeline.

    ``port`` is a port number, OFPP_CONTROLLER (a packet-in), OFPP_LOCAL or
    OFPP_NORMAL; the packet-in fields are meaningful for the controller.
    """

    port: int
    frame: Frame
    reason: int = ofp.OFPR_ACTION
    max_len: int = ofp.OFPCML_NO_BUFFER
    table_id: int = 0
    cookie: int = 0
    metadata: int = 0
    tunnel_id: int = 0
    queue_id: int | None = None


@dataclass
class Result:
    """The outputs of one packet and how its trip ended."""

    outputs: list[Emit] = field(default_factory=list)
    path: list[tuple[int, FlowEntry13 | None]] = field(default_factory=list)
    lookups: list[dict[str, int]] = field(default_factory=list)
    """The OXM fields each table of ``path`` looked up (the packet as modified so far, with its metadata):
    what a flow entry added later would have had to match to change this packet's trip (race detection)."""
    groups: list[int] = field(default_factory=list)
    """The groups executed, in order (a group's buckets decided where copies went)."""
    meters: list[int] = field(default_factory=list)
    """The meters the packet passed through (a meter band can drop it)."""
    ended: str = "done"     # done | table-miss | meter-drop | invalid-ttl
    discarded: tuple[Action, ...] = ()
    """At a table miss: the action set the spec discards with the packet (for diagnosis)."""
    frame: Frame | None = None
    """The packet as it was when processing ended."""
    metadata: int = 0
    aimed: bool = False
    """Whether an output or group action ran: with no outputs, forwarding meant to send the
    packet somewhere and it went nowhere (a blackhole), rather than a rule dropping it on purpose."""


@dataclass
class _Ctx:
    frame: Frame
    in_port: int
    metadata: int = 0
    tunnel_id: int = 0
    queue_id: int | None = None
    table_id: int = 0
    entry: FlowEntry13 | None = None
    packet_out: bool = False
    miss_apply: bool = False    # running the apply-actions of a table-miss entry


class Pipeline13:
    """The flow tables, group table and meter table of one OpenFlow 1.3 switch."""

    def __init__(self, n_tables: int = OVS_TABLES, ports: Mapping[int, PortState] | Iterable[int] = (), *,
                 seed: int = 0, invalid_ttl_to_controller: bool = False, table_size: int = 0) -> None:
        self.tables = FlowTables(n_tables, max_entries=table_size)
        self.groups = GroupTable(seed)
        self.meters = MeterTable()
        self.ports: dict[int, PortState] = (dict(ports) if isinstance(ports, Mapping)
                                            else {p: PortState() for p in ports})
        self.invalid_ttl_to_controller = invalid_ttl_to_controller

    # -- state changes (flow_mod / group_mod / meter_mod) ------------------------------

    def add_flow(self, table_id: int, match: OxmMatch, priority: int, instructions: Instructions, *,
                 cookie: int = 0, idle_timeout: int = 0, hard_timeout: int = 0, flags: int = 0,
                 now: float = 0.0) -> FlowEntry13 | None:
        """OFPFC_ADD with this switch's groups and meters for the instruction checks."""
        return self.tables.add(table_id, match, priority, instructions, cookie=cookie, idle_timeout=idle_timeout,
                               hard_timeout=hard_timeout, flags=flags, now=now, group_exists=self.groups.exists,
                               meter_exists=self.meters.exists)

    def modify_flows(self, table_id: int, match: OxmMatch, instructions: Instructions, *, strict: bool,
                     priority: int = 0, cookie: int = 0, cookie_mask: int = 0, flags: int = 0) -> list[FlowEntry13]:
        """OFPFC_MODIFY(_STRICT): never adds (OpenFlow 1.3)."""
        return self.tables.modify(table_id, match, instructions, strict=strict, priority=priority, cookie=cookie,
                                  cookie_mask=cookie_mask, flags=flags, group_exists=self.groups.exists,
                                  meter_exists=self.meters.exists)

    def add_group(self, group_id: int, gtype: int, buckets: Sequence[Bucket], now: float = 0.0) -> None:
        self.groups.add(group_id, gtype, tuple(buckets), now=now)

    def modify_group(self, group_id: int, gtype: int, buckets: Sequence[Bucket], now: float = 0.0) -> None:
        self.groups.modify(group_id, gtype, tuple(buckets), now=now)

    def delete_group(self, group_id: int) -> list[RemovedFlow]:
        """OFPGC_DELETE; the flows that used the deleted group(s) go too (OFPRR_GROUP_DELETE)."""
        removed: list[RemovedFlow] = []
        for g in self.groups.delete(group_id):
            removed += self.tables.remove_group_flows(g)
        return removed

    def add_meter(self, meter_id: int, flags: int, bands: Sequence[Band], now: float = 0.0) -> None:
        self.meters.add(meter_id, flags, tuple(bands), now=now)

    def modify_meter(self, meter_id: int, flags: int, bands: Sequence[Band], now: float = 0.0) -> None:
        self.meters.modify(meter_id, flags, tuple(bands), now=now)

    def delete_meter(self, meter_id: int) -> list[RemovedFlow]:
        removed: list[RemovedFlow] = []
        for m in self.meters.delete(meter_id):
            removed += self.tables.remove_meter_flows(m)
        return removed

    # -- packets -----------------------------------------------------------------------

    def process(self, frame: Frame, in_port: int, now: float, *, tunnel_id: int = 0) -> Result:
        """Forward ``frame`` arriving on ``in_port`` through the tables from table 0."""
        result = Result()
        ctx = _Ctx(frame, in_port, tunnel_id=tunnel_id)
        try:
            self._run_tables(ctx, 0, ActionSet(), now, result)
        except TtlExpired:
            self._ttl_expired(ctx, result)
        return result

    def packet_out(self, frame: Frame, in_port: int, actions: Sequence[Action], now: float) -> Result:
        """A PACKET_OUT's action list; OFPP_TABLE submits the packet to table 0.

        Errors as for a flow entry's actions (OFPBAC_*), checked from an
        unknown packet; ``in_port`` may be OFPP_CONTROLLER.
        """
        check_actions(actions, FlowContext.of_match(OxmMatch()), group_exists=self.groups.exists, packet_out=True)
        result = Result()
        ctx = _Ctx(frame, in_port, packet_out=True)
        try:
            self._execute(list(actions), ctx, now, result, 0)
        except TtlExpired:
            self._ttl_expired(ctx, result)
        return result

    def execute_actions(self, frame: Frame, in_port: int, actions: Sequence[Action], now: float, *,
                        metadata: int = 0, table_id: int = 0) -> Result:
        """Run an action list as apply-actions would, without a flow entry and without checks.

        For tools that replay part of a pipeline (a differential test that
        needs what a discarded action set would have done, a step debugger).
        """
        result = Result()
        ctx = _Ctx(frame, in_port, metadata=metadata, table_id=table_id)
        try:
            self._execute(list(actions), ctx, now, result, 0)
        except TtlExpired:
            self._ttl_expired(ctx, result)
        result.frame, result.metadata = ctx.frame, ctx.metadata
        return result

    def _ttl_expired(self, ctx: _Ctx, result: Result) -> None:
        result.ended = "invalid-ttl"
        if self.invalid_ttl_to_controller:
            result.outputs.append(self._to_controller(ctx, ofp.OFPCML_NO_BUFFER, ofp.OFPR_INVALID_TTL))

    def _run_tables(self, ctx: _Ctx, table_id: int, aset: ActionSet, now: float, result: Result) -> None:
        while True:
            fields = oxm_fields(ctx.frame, ctx.in_port, ctx.metadata, ctx.tunnel_id)
            entry = self.tables.lookup(table_id, fields, now=now, nbytes=ctx.frame.frame_len())
            result.path.append((table_id, entry))
            result.lookups.append(fields)
            if entry is None:
                result.ended = "table-miss"
                result.discarded = tuple(aset.ordered())
                result.frame, result.metadata = ctx.frame, ctx.metadata
                return
            ctx.table_id, ctx.entry = table_id, entry
            inst = entry.instructions
            if inst.meter is not None:
                result.meters.append(inst.meter)
                verdict = self.meters.apply(inst.meter, ctx.frame.frame_len(), now)
                if verdict.drop:
                    result.ended = "meter-drop"
                    return
                if verdict.remark:
                    dscp = fields.get("ip_dscp")   # present only for IP packets
                    if dscp is not None:
                        ctx.frame = apply(ctx.frame, SetField("ip_dscp", remark_dscp(dscp, verdict.remark)))
            if inst.apply:
                ctx.miss_apply = entry.is_table_miss
                self._execute(list(inst.apply), ctx, now, result, 0)
                ctx.miss_apply = False
            aset = inst.next_action_set(aset)
            ctx.metadata = inst.next_metadata(ctx.metadata)
            if inst.goto is None:
                self._execute(aset.ordered(), ctx, now, result, 0)
                result.frame, result.metadata = ctx.frame, ctx.metadata
                return
            table_id = inst.goto

    def _execute(self, actions: list[Action], ctx: _Ctx, now: float, result: Result, depth: int) -> None:
        for a in actions:
            if isinstance(a, Output):
                self._output(a.port, a.max_len, ctx, now, result)
            elif isinstance(a, Group):
                self._group(a.group_id, ctx, now, result, depth)
            elif isinstance(a, SetQueue):
                ctx.queue_id = a.queue_id
            elif isinstance(a, SetField) and a.field == "tunnel_id":
                ctx.tunnel_id = a.value
            else:
                ctx.frame = apply(ctx.frame, a)

    def _group(self, group_id: int, ctx: _Ctx, now: float, result: Result, depth: int) -> None:
        result.aimed = True
        g = self.groups.groups.get(group_id)
        result.groups.append(group_id)
        if g is None or depth >= MAX_GROUP_DEPTH:
            return
        fields = oxm_fields(ctx.frame, ctx.in_port, ctx.metadata, ctx.tunnel_id)
        nbytes = ctx.frame.frame_len()
        g.packet_count += 1
        g.byte_count += nbytes
        for i in self.groups.choose(g, fields, self.port_live):
            assert g.bucket_counts is not None
            g.bucket_counts[i][0] += 1
            g.bucket_counts[i][1] += nbytes
            sub = replace(ctx, miss_apply=False)   # each bucket works on its own copy of the packet
            try:
                self._execute(ActionSet.of(g.buckets[i].actions).ordered(), sub, now, result, depth + 1)
            except TtlExpired:
                self._ttl_expired(sub, result)

    def port_live(self, port: int) -> bool:
        """Whether ``port`` is up (what FAST_FAILOVER and SELECT groups watch)."""
        state = self.ports.get(port)
        return state is not None and state.live

    def _output(self, port: int, max_len: int, ctx: _Ctx, now: float, result: Result) -> None:
        result.aimed = True
        if port == ofp.OFPP_CONTROLLER:
            # OFPR_NO_MATCH only for the table-miss entry's own output; an output
            # it reaches through a group or the action set was put there by
            # an action (as Open vSwitch reports it too).
            reason = ofp.OFPR_NO_MATCH if ctx.miss_apply else ofp.OFPR_ACTION
            result.outputs.append(self._to_controller(ctx, max_len, reason))
        elif port == ofp.OFPP_TABLE:
            if ctx.packet_out:
                sub = _Ctx(ctx.frame, ctx.in_port, tunnel_id=ctx.tunnel_id)
                self._run_tables(sub, 0, ActionSet(), now, result)
        else:
            for p in self.output_ports(port, ctx.in_port):
                self._emit(p, ctx, result)

    def output_ports(self, port: int, in_port: int) -> tuple[int, ...]:
        """Where an output action to ``port`` sends a packet that came in on ``in_port``
        (CONTROLLER and TABLE are the caller's: they are not ports a copy leaves by).

        A plain output to the in port sends nothing (it takes OFPP_IN_PORT); FLOOD skips
        the in port and no_flood ports, ALL only the in port; LOCAL and NORMAL are named
        as they are; a port the switch does not have sends nothing."""
        if port == ofp.OFPP_IN_PORT:
            # Back where it came from -- which for a packet-out from the
            # controller is nowhere: a packet-in needs an explicit CONTROLLER
            # output (Open vSwitch drops it too).
            return (in_port,) if in_port in self.ports or in_port == ofp.OFPP_LOCAL else ()
        if port in (ofp.OFPP_FLOOD, ofp.OFPP_ALL):
            return tuple(p for p in sorted(self.ports)
                         if p != in_port and not (port == ofp.OFPP_FLOOD and self.ports[p].no_flood))
        if port in (ofp.OFPP_LOCAL, ofp.OFPP_NORMAL):
            return (port,)
        if port != in_port and port in self.ports:
            return (port,)
        return ()

    def _emit(self, port: int, ctx: _Ctx, result: Result) -> None:
        result.outputs.append(Emit(port, ctx.frame, table_id=ctx.table_id, queue_id=ctx.queue_id,
                                   metadata=ctx.metadata, tunnel_id=ctx.tunnel_id))

    def _to_controller(self, ctx: _Ctx, max_len: int, reason: int) -> Emit:
        cookie = PACKET_OUT_COOKIE if ctx.packet_out or ctx.entry is None else ctx.entry.cookie
        return Emit(ofp.OFPP_CONTROLLER, ctx.frame, reason, max_len, ctx.table_id, cookie, ctx.metadata,
                    ctx.tunnel_id, ctx.queue_id)

    # -- time and state ----------------------------------------------------------------

    def expire(self, now: float) -> list[RemovedFlow]:
        return self.tables.expire(now)

    def canonical_key(self) -> tuple[object, ...]:
        """Hashable state (entries with counters, groups, meters, ports): equal for equal switches,
        whatever the order things were installed in -- what a model checker hashes."""
        groups = tuple((gid, g.type, g.buckets) for gid, g in sorted(self.groups.groups.items()))
        meters = tuple((mid, m.flags, m.bands) for mid, m in sorted(self.meters.meters.items()))
        ports = tuple(sorted(self.ports.items()))
        return (self.tables.canonical_key(), groups, meters, ports)

    def copy(self) -> Pipeline13:
        """An independent copy (for model-checker snapshots)."""
        return copy.deepcopy(self)


__all__ = ["Emit", "OFError", "PACKET_OUT_COOKIE", "Pipeline13", "PortState", "Result"]
