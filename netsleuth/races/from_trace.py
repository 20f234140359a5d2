"""SDNRacer-style happens-before events from a netsleuth trace (no controller instrumentation).

SDNRacer records its events inside an instrumented controller and switch, so
causality is explicit there.  A netsleuth trace (:mod:`netsleuth.trace.schema`)
records what crossed the control channels (``of_to_switch``: a controller
message delivered to and applied by a switch; ``of_to_controller``: a switch
message delivered to the controller), every dataplane arrival (``packet``,
with ``pid`` = the lineage shared by all copies of one emitted frame) and the
inputs.  This module turns it into :class:`netsleuth.races.events.HbEvent`
objects for :func:`netsleuth.races.job.detect_races`, replaying the trace with
:func:`netsleuth.world.rebuild.replay_states` so each switch's flow table is
known at every point.

Events made (SDNRacer's kinds) and the operations they carry:

* ``packet`` at a switch -> ``HbPacketHandle`` with one flow-table READ: the
  entry the packet hits in the rebuilt table at that point
  (``FlowTable.peek`` on ``packet.match_fields(port)``; the hit refreshes the
  entry's idle timer so rebuilt idle timeouts follow the traffic), or a miss.
* ``packet`` at a host -> ``HbHostHandle``.  A frame first seen on the switch
  port that faces a host is that host's ``HbHostSend``.
* Each hop gets an ``HbPacketSend`` between the emitter and the arrival.
* ``of_to_controller`` -> ``HbMessageSend`` (switch side) followed by
  ``HbControllerHandle``.  ``of_to_switch`` -> ``HbControllerSend`` followed
  by ``HbMessageHandle``; a FLOW_MOD handle carries its WRITE.
* ``FLOW_REMOVED`` with reason idle/hard timeout -> ``HbAsyncFlowExpiry``
  (EXPIRY of the removed entry) before the message send it causes.
* Handshake, config and statistics messages (SDNRacer's skip list) are
  left out.  Barrier ordering and the expiry rule are then
  :func:`netsleuth.races.hb.build_hb_graph`'s, exactly as for hb.json.

On an OpenFlow 1.3 switch (:mod:`netsleuth.races.of13.from_trace`) the same
events carry 1.3 operations, each naming the table, group or meter it
touches: a packet goes through the rebuilt switch's pipeline
(``Pipeline13.process``) and READs every table it passes through
(goto-table), with the OXM fields that table looked up and the entry it
hit, and every group and meter it used; a FLOW_MOD WRITEs its table (a
DELETE of ``OFPTT_ALL`` all of them), a GROUP_MOD or METER_MOD its group or
meter (a DELETE also every table: the flows using it go too); a PACKET_OUT
READs what its actions reach (OFPP_TABLE, groups), a FLOW_MOD releasing a
buffered packet the tables from table 0; flow, aggregate, group and meter
MULTIPART requests READ what they name (other MULTIPART messages,
EXPERIMENTER and the async configuration are left out like 1.0's STATS and
VENDOR); FLOW_REMOVED by timeout is an expiry, by a flow, group or meter
delete caused by that delete; a connection made slave by ROLE_REQUEST
writes nothing (the switch refuses it whatever the order); a lost
connection takes its unanswered PACKET_INs and the switch's buffers with
it (rule 4 below then never ties a FLOW_MOD sent on the next connection,
such as the table-miss entry installed again, to a PACKET_IN of the old one).

Causality rules (each an ``pid``/``mid`` link; no program order is added):

1. Packet hops.  An arrival at (N, P) with lineage x was emitted by the link
   peer (N', P') (topology links, updated by host migrations).  If N' is a
   host it is a host send.  If N' is a switch the emitter is the latest
   earlier event on N' that sent lineage x out of P': an arrival of x on N'
   whose hit entry's actions output to P' (FLOOD/ALL/IN_PORT expanded with
   the switch's ports), a PACKET_OUT whose packet is of lineage x (known
   from its buffer or from the PACKET_IN it answers, rule 4), or a FLOW_MOD
   releasing a buffered packet of x.  Failing the port check, the latest
   emitter of x on N'; failing that, a PACKET_OUT of unknown lineage on N'
   carrying the same frame bytes.
2. PACKET_IN.  Caused by the latest arrival on that switch and in_port whose
   frame starts with the PACKET_IN's data and that has no PACKET_IN yet
   (fallback: the latest such arrival that missed).  With a buffer id the
   arrival also "puts" the packet in the buffer: a later message using that
   buffer id on that switch gets it (buffer put -> buffer get).
3. Replies.  A switch message with a non-zero xid (BARRIER_REPLY, ERROR,
   ECHO_REPLY) is caused by the handle of the controller message with that
   xid on that switch; FLOW_REMOVED(delete) by the latest DELETE flow_mod
   handled there; FLOW_REMOVED(timeout) by its expiry event.
4. Controller causality, inferred from what the controller sent.  A
   controller message to switch S is the output of handling S's PACKET_IN p
   when (a) its buffer_id equals p's buffer_id, else (b) a PACKET_OUT's data
   equals p's data (latest such p), else (c) a FLOW_MOD's match covers
   (POX semantics) the packet of the most recent PACKET_IN on S; if it does
   not, the most recent still unanswered PACKET_IN on S whose packet it
   covers.  All messages so attributed to p are siblings under p's
   ``HbControllerHandle`` (unordered among themselves, as in SDNRacer).
5. Hosts.  A host send is caused by a reception at that host when it
   answers it: an ARP reply to a received request (spa/tpa swapped), an ICMP
   echo reply to a received echo request (same ident/seq, addresses
   swapped), or an IPv4 packet queued for ARP resolution and released by a
   received ARP reply for its destination, provided no ``traffic`` input of
   that host came after that reply.  Other host sends are roots (the
   ``traffic`` input that started them is kept in their label).

Limits of the inference (all make the graph *less* ordered, so they can add
races, never hide one): controller causality is only inferred from
PACKET_INs on the same switch, so a controller reacting to a PACKET_IN of
another switch (e.g. path installation by l2_multi), to PORT_STATUS,
FLOW_REMOVED or BARRIER_REPLY, or to its own timers, yields root sends
(proactive events); rule (c) can attribute a proactive FLOW_MOD to an
unrelated PACKET_IN whose packet it happens to cover, and an app that
rewrites the packet before its PACKET_OUT (or sends it to another switch)
loses rules (b)/1.  Expiries are only seen through FLOW_REMOVED, i.e. for
entries installed with OFPFF_SEND_FLOW_REM.  Times are the trace's ``t``
(for runs against a real controller, seconds of the recording).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from os_ken.ofproto import ofproto_v1_0 as ofp
from os_ken.ofproto import ofproto_v1_3 as ofp13

from netsleuth.races.events import (
    CONTROLLER_HANDLE,
    CONTROLLER_SEND,
    EXPIRY,
    FLOW_EXPIRY,
    HOST_HANDLE,
    HOST_SEND,
    MESSAGE_HANDLE,
    MESSAGE_SEND,
    OTHER,
    PACKET_HANDLE,
    PACKET_SEND,
    READ,
    SKIP_MSG_TYPES,
    SKIP_MSG_TYPES_13,
    WRITE,
    FlowOp,
    HbEvent,
)
from netsleuth.races.of13 import from_trace as of13
from netsleuth.races.poxmatch import OFPFC_ADD, PoxFlowMod, PoxMatch
from netsleuth.trace import schema as ts

NO_BUFFER = 0xFFFFFFFF
_REPLY_TYPES = frozenset({"BARRIER_REPLY", "ERROR", "ECHO_REPLY", "MULTIPART_REPLY", "ROLE_REPLY"})
_ROLE_SLAVE = ofp13.OFPCR_ROLE_SLAVE      # the switch refuses this connection's modifications
_ROLE_MASTER = ofp13.OFPCR_ROLE_MASTER
_RECENT = 256          # records kept per switch / host for the look-ups above


@dataclass
class TraceEvents:
    """The events of one netsleuth trace, with where each came from and what it was.

    ``origin``: eid -> seq of the trace event it was made from; ``labels``:
    eid -> the event in plain words (switch names, messages, packets);
    ``stats``: how many links each rule made and how many arrivals stayed
    unexplained.
    """

    events: list[HbEvent]
    origin: dict[int, int]
    labels: dict[int, str]
    stats: dict[str, int] = field(default_factory=dict)


# ------------------------------------------------------------------ helpers


def trace_file(path: str | Path) -> Path:
    """``path`` itself, or ``path/trace.jsonl`` for a run directory."""
    p = Path(path)
    if p.is_dir() and (p / "trace.jsonl").is_file():
        return p / "trace.jsonl"
    return p


def is_netsleuth_trace(path: str | Path) -> bool:
    """Whether the file's first line is a netsleuth trace header (cheap sniff)."""
    p = trace_file(path)
    try:
        with p.open("rb") as f:
            first = f.readline(1 << 20)
    except OSError:
        return False
    if ts.FORMAT.encode() not in first:  # not even mentioned: no need to parse (which may be deep garbage)
        return False
    try:
        d = json.loads(first)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False
    return isinstance(d, dict) and d.get("format") == ts.FORMAT


def _msg_name(msg_json: dict) -> str:
    return "OFPT_" + str(msg_json.get("type", "?"))


@dataclass
class _Arrival:
    ev: HbEvent
    node: str
    port: int
    pid: int
    frame: bytes
    hit: bool
    to_controller: bool
    has_packet_in: bool = False


@dataclass
class _PacketIn:
    handle: HbEvent
    mid: int            # the id its ControllerSends take as mid_in
    buffer_id: int
    data: bytes
    match: PoxMatch | dict[str, int] | None     # 1.3: the OXM fields table 0 sees
    arrival: _Arrival | None
    answered: bool = False


@dataclass
class _Emitter:
    ev: HbEvent
    ports: frozenset[int]
    frame: bytes | None = None


@dataclass
class _Reception:
    ev: HbEvent
    seq: int
    packet: Any


class _Builder:
    def __init__(self, header: ts.TraceHeader) -> None:
        from netsleuth.model.topology import Topology

        self.topo = Topology.from_json(header.topology)
        self.peer: dict[tuple[str, int], tuple[str, int]] = {}
        for link in self.topo.links:
            self.peer[(link.node1, link.port1)] = (link.node2, link.port2)
            self.peer[(link.node2, link.port2)] = (link.node1, link.port1)
        self.hid = {h.name: i + 1 for i, h in enumerate(self.topo.hosts)}
        self.host_ip = {h.name: h.ip for h in self.topo.hosts}
        self.name_of = {s.dpid: s.name for s in self.topo.switches}
        self.dpid_of = {s.name: s.dpid for s in self.topo.switches}
        self.events: list[HbEvent] = []
        self.origin: dict[int, int] = {}
        self.labels: dict[int, str] = {}
        self.stats: dict[str, int] = defaultdict(int)
        self._next_id = 0
        self.arrivals: dict[int, list[_Arrival]] = defaultdict(list)
        self.emitters: dict[tuple[str, int], list[_Emitter]] = defaultdict(list)
        self.unknown_emitters: dict[str, list[_Emitter]] = defaultdict(list)
        self.packet_ins: dict[int, list[_PacketIn]] = defaultdict(list)
        self.buffers: dict[tuple[int, int], tuple[int, _Arrival]] = {}
        self.by_xid: dict[tuple[int, int], HbEvent] = {}
        self.last_delete: dict[int, HbEvent] = {}
        # serial -> (the entry as last seen, the flow mod that made it)
        self.entry_fm: dict[int, dict[int, tuple[Any, PoxFlowMod]]] = defaultdict(dict)
        self.receptions: dict[str, list[_Reception]] = defaultdict(list)
        self.last_traffic: dict[str, ts.TrafficInjection] = {}
        self.views13: dict[int, of13.EntryViews] = defaultdict(of13.EntryViews)
        self.roles: dict[tuple[int, int], int] = {}     # (dpid, recorded conn) -> 1.3 role
        self.dpids13 = {self.dpid_of[n] for n, v in header.openflow.items() if v == "1.3" and n in self.dpid_of}
        self.seq = -1

    # -- basics ------------------------------------------------------------
    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def add(self, kind: str, label: str, **kw: Any) -> HbEvent:
        ev = HbEvent(eid=len(self.events) + 1, kind=kind, **kw)
        self.events.append(ev)
        self.origin[ev.eid] = self.seq
        self.labels[ev.eid] = label
        return ev

    def link_out(self, ev: HbEvent, pid: bool = True) -> int:
        """A fresh id appended to ``ev``'s pid_out (or mid_out)."""
        x = self.new_id()
        if pid:
            ev.pid_out = ev.pid_out + (x,)
        else:
            ev.mid_out = ev.mid_out + (x,)
        return x

    def sw(self, dpid: int | None) -> str:
        return self.name_of.get(dpid, f"dpid {dpid}") if dpid is not None else "?"

    # -- flow entries as POX flow mods ---------------------------------------
    def note_flow_mod(self, dpid: int, world: Any, fm: PoxFlowMod) -> None:
        """After a FLOW_MOD was applied: remember which flow mod each (new or changed) entry reflects."""
        switch = world.by_dpid.get(dpid)
        if switch is None:
            return
        known = self.entry_fm[dpid]
        live = {}
        for entry in switch.table.entries():
            k = entry.serial  # one installation (the table hands out snapshots)
            old = known.get(k)
            if old is not None and old[0].actions == entry.actions:  # snapshots: the actions then
                live[k] = old
                continue
            if old is not None:                            # modified: new actions
                live[k] = (entry, replace(old[1], actions=fm.actions))
            else:                                          # installed by this flow mod
                live[k] = (entry, replace(fm, command=OFPFC_ADD) if fm.command != OFPFC_ADD else fm)
        self.entry_fm[dpid] = live

    def fm_of_entry(self, dpid: int, entry: Any) -> PoxFlowMod:
        rec = self.entry_fm[dpid].get(entry.serial)
        if rec is not None:
            return rec[1]
        return _entry_to_fm(entry)

    # -- packet causality ------------------------------------------------------
    def link_arrival(self, node: str, port: int, pid: int, frame: bytes, pkt: Any, t: float) -> int | None:
        """Make the host/packet send that delivered this arrival; the id its handle takes as pid_in."""
        peer = self.peer.get((node, port))
        if peer is None:
            self.stats["unlinked_arrivals"] += 1
            return None
        pnode, pport = peer
        if pnode in self.hid:
            cause = self.host_cause(pnode, pkt)
            pid_in = self.link_out(cause.ev) if cause is not None else None
            self.stats["host_sends_caused" if cause is not None else "host_sends_root"] += 1
            out = self.new_id()
            why = ""
            if cause is None and pnode in self.last_traffic:
                inj = self.last_traffic[pnode]
                why = f" (input {inj.id}: traffic to {inj.dst})"
            self.add(HOST_SEND, f"{pnode} sends {pkt.summary()}{why}", hid=self.hid[pnode],
                     pid_in=pid_in, has_pid_in=pid_in is not None, pid_out=(out,), packet=frame,
                     out_port=pport)
            return out
        em = self.find_emitter(pnode, pport, pid, frame)
        if em is None:
            self.stats["unlinked_arrivals"] += 1
            return None
        x = self.link_out(em.ev)
        out = self.new_id()
        self.add(PACKET_SEND, f"{pnode} sends {pkt.summary()} out of port {pport}",
                 dpid=self.dpid_of.get(pnode), pid_in=x, has_pid_in=True, pid_out=(out,), packet=frame,
                 out_port=pport)
        self.stats["packet_hops"] += 1
        return out

    def find_emitter(self, node: str, port: int, pid: int, frame: bytes) -> _Emitter | None:
        cands = self.emitters.get((node, pid), ())
        for em in reversed(cands):
            if port in em.ports:
                return em
        if cands:
            return cands[-1]
        for em in reversed(self.unknown_emitters.get(node, ())):
            if em.frame == frame and port in em.ports:
                return em
        return None

    def add_emitter(self, node: str, pid: int | None, em: _Emitter) -> None:
        lst = self.emitters[(node, pid)] if pid is not None else self.unknown_emitters[node]
        lst.append(em)
        if len(lst) > _RECENT:
            del lst[0]

    def host_cause(self, host: str, pkt: Any) -> _Reception | None:
        from netsleuth.model.packet import ICMP, Arp, IPv4

        recs = self.receptions.get(host, ())
        l3, l4 = pkt.l3, pkt.l4
        if type(l3) is Arp and l3.op == 2:
            for r in reversed(recs):
                a = r.packet.l3
                if type(a) is Arp and a.op == 1 and a.tpa == l3.spa and a.spa == l3.tpa:
                    return r
            return None
        if type(l3) is IPv4 and type(l4) is ICMP and l4.type == 0:
            for r in reversed(recs):
                b, c = r.packet.l3, r.packet.l4
                if (type(b) is IPv4 and type(c) is ICMP and c.type == 8 and c.ident == l4.ident
                        and c.seq == l4.seq and b.src == l3.dst and b.dst == l3.src):
                    return r
            return None
        if type(l3) is IPv4:
            inj = self.last_traffic.get(host)
            for r in reversed(recs):
                a = r.packet.l3
                if type(a) is Arp and a.op == 2 and a.tpa == l3.src and a.spa == l3.dst:
                    if inj is not None and inj.seq > r.seq:
                        return None
                    return r
        return None

    # -- trace events -----------------------------------------------------------
    def on_packet(self, e: ts.PacketArrival, world: Any) -> None:
        from netsleuth.model.packet import Packet
        from netsleuth.model.switch import forward

        pkt = Packet.from_json(e.packet)
        frame = pkt.to_bytes()
        pid_in = self.link_arrival(e.node, e.port, e.pid, frame, pkt, e.t)
        if e.node in self.hid:
            ev = self.add(HOST_HANDLE, f"{e.node} receives {pkt.summary()}", hid=self.hid[e.node],
                          pid_in=pid_in, has_pid_in=pid_in is not None, packet=frame, in_port=e.port)
            recs = self.receptions[e.node]
            recs.append(_Reception(ev, e.seq, pkt))
            if len(recs) > _RECENT:
                del recs[0]
            return
        switch = world.switches.get(e.node)
        dpid = self.dpid_of.get(e.node)
        if switch is None or dpid is None:
            self.stats["arrivals_elsewhere"] += 1
            return
        if switch.of13 is not None:
            self.on_packet13(e, switch, dpid, pkt, frame, pid_in)
            return
        entry = switch.table.peek(pkt.match_fields(e.port))
        fm = None
        ports: frozenset[int] = frozenset()
        to_ctl = entry is None
        if entry is not None:
            switch.table.refresh(entry, e.t)   # the live switch refreshed its idle timer
            fm = self.fm_of_entry(dpid, entry)
            outs = forward(entry.actions, pkt, e.port, switch.ports)
            ports = frozenset(p for p, _, _ in outs if p <= ofp.OFPP_MAX)
            to_ctl = any(p == ofp.OFPP_CONTROLLER for p, _, _ in outs)
            what = f"matched {_entry_text(entry)}"
        else:
            what = "missed (no entry)"
        ev = self.add(PACKET_HANDLE, f"packet {pkt.summary()} in port {e.port} {what} on {e.node}",
                      dpid=dpid, pid_in=pid_in, has_pid_in=pid_in is not None,
                      ops=[FlowOp(READ, e.t, fm, None, "TraceSwitchFlowTableRead")], packet=frame,
                      in_port=e.port)
        arr = _Arrival(ev, e.node, e.port, e.pid, frame, entry is not None, to_ctl)
        lst = self.arrivals[dpid]
        lst.append(arr)
        if len(lst) > _RECENT:
            del lst[0]
        if ports:
            self.add_emitter(e.node, e.pid, _Emitter(ev, ports))

    def note_arrival(self, dpid: int, arr: _Arrival) -> None:
        lst = self.arrivals[dpid]
        lst.append(arr)
        if len(lst) > _RECENT:
            del lst[0]

    def on_packet13(self, e: ts.PacketArrival, switch: Any, dpid: int, pkt: Any, frame: bytes,
                    pid_in: int | None) -> None:
        """A packet through a 1.3 switch's pipeline, as the live switch forwarded it (counters and idle
        timers follow the traffic): a READ of every table it went through, group and meter it used."""
        from netsleuth.model.of13.frame import Frame

        port = switch.ports.get(e.port)
        if port is None or not port.usable or port.config & ofp.OFPPC_NO_RECV:
            # the switch dropped it before any table (Switch.receive_packet): no read (same bit in 1.3)
            self.add(PACKET_HANDLE, f"packet {pkt.summary()} in port {e.port} dropped (port down or NO_RECV) "
                     f"on {e.node}", dpid=dpid, pid_in=pid_in, has_pid_in=pid_in is not None, packet=frame,
                     in_port=e.port)
            return
        switch.of13.sync_ports()
        pipeline = switch.of13.pipeline
        result = pipeline.process(Frame.from_packet(pkt), e.port, e.t)
        ops = of13.pipeline_reads(result, pipeline, e.t, self.views13[dpid])
        ev = self.add(PACKET_HANDLE, f"packet {pkt.summary()} in port {e.port} {of13.trip_text(result)} on {e.node}",
                      dpid=dpid, pid_in=pid_in, has_pid_in=pid_in is not None, ops=ops, packet=frame,
                      in_port=e.port)
        hit = bool(result.path) and result.path[0][1] is not None
        # a PACKET_IN carries the packet as the pipeline left it (set-fields applied): match on that
        to_ctl = of13.controller_frame(result)
        self.note_arrival(dpid, _Arrival(ev, e.node, e.port, e.pid, to_ctl if to_ctl is not None else frame, hit,
                                         to_ctl is not None))
        ports = of13.output_ports(result, switch.ports)
        if ports:
            self.add_emitter(e.node, e.pid, _Emitter(ev, ports))

    def on_to_controller(self, e: ts.ControlToController, world: Any) -> None:
        from netsleuth.openflow.codec import encode, msg_from_json

        name = _msg_name(e.msg)
        if name in SKIP_MSG_TYPES:
            return
        v13 = e.msg.get("version") == 4
        if v13 and name in SKIP_MSG_TYPES_13:
            return
        mtype = e.msg.get("type")
        msg = msg_from_json(e.msg)
        if mtype == "MULTIPART_REPLY" and not of13.reads_state(msg):
            return
        raw = encode(msg_from_json(e.msg))
        sw = self.sw(e.dpid)
        mid_in = None
        label = f"{mtype} from {sw}"
        arrival = None
        in_port: int = of13.packet_in_port(msg) if v13 and mtype == "PACKET_IN" else getattr(msg, "in_port", 0)
        if mtype == "PACKET_IN":
            data = bytes(msg.data or b"")
            arrival = self.packet_in_source(e.dpid, in_port, data)
            if arrival is not None:
                arrival.has_packet_in = True
                mid_in = self.link_out(arrival.ev, pid=False)
                self.stats["packet_ins_linked"] += 1
                if msg.buffer_id != NO_BUFFER:
                    b = self.link_out(arrival.ev)
                    arrival.ev.ops.append(FlowOp(OTHER, e.t, None, None, "TraceSwitchBufferPut"))
                    self.buffers[(e.dpid, msg.buffer_id)] = (b, arrival)
            label = f"PACKET_IN from {sw} (in_port {in_port}, {_summary(data)})"
        elif mtype == "FLOW_REMOVED" and v13:
            mid_in, label = self.flow_removed13(e, msg, sw)
        elif mtype == "FLOW_REMOVED":
            from netsleuth.model.match import Match

            text = f"priority={msg.priority},{Match.from_ofp(msg.match)}"
            if msg.reason in (ofp.OFPRR_IDLE_TIMEOUT, ofp.OFPRR_HARD_TIMEOUT):
                fm = self.removed_fm(e.dpid, msg)
                x = self.new_id()
                why = "idle" if msg.reason == ofp.OFPRR_IDLE_TIMEOUT else "hard"
                self.add(FLOW_EXPIRY, f"flow {text} expires ({why} timeout) on {sw}", dpid=e.dpid,
                         ops=[FlowOp(EXPIRY, e.t, fm, None, "TraceSwitchFlowTableEntryExpiry")], mid_out=(x,))
                mid_in = x
                self.stats["expiries"] += 1
            elif e.dpid in self.last_delete:
                mid_in = self.link_out(self.last_delete[e.dpid], pid=False)
            label = f"FLOW_REMOVED {text} from {sw}"
        elif mtype in _REPLY_TYPES and msg.xid:
            req = self.by_xid.get((e.dpid, msg.xid))
            if req is not None:
                mid_in = self.link_out(req, pid=False)
        y = self.new_id()
        self.add(MESSAGE_SEND, f"{sw} sends {label}", dpid=e.dpid, msg_type=name, mid_in=mid_in,
                 has_mid_in=mid_in is not None, mid_out=(y,), msg=raw)
        z = self.new_id()
        handle = self.add(CONTROLLER_HANDLE, f"controller handles {label}", mid_in=y, has_mid_in=True,
                          mid_out=(z,), msg_type=None)
        if mtype == "PACKET_IN":
            data = bytes(msg.data or b"")
            match = of13.packet_fields(data, in_port) if v13 else _packet_match(data, in_port)
            pis = self.packet_ins[e.dpid]
            pis.append(_PacketIn(handle, z, msg.buffer_id, data, match, arrival))
            if len(pis) > _RECENT:
                del pis[0]

    def flow_removed13(self, e: ts.ControlToController, msg: Any, sw: str) -> tuple[int | None, str]:
        """A 1.3 FLOW_REMOVED: an expiry event for a timeout (the id its send takes as mid_in), or
        caused by the latest flow, group or meter delete on that switch; and its label."""
        from netsleuth.model.of13.oxm import OxmMatch

        match = OxmMatch.from_ofp(msg.match)
        m = str(match)
        text = f"table={msg.table_id},priority={msg.priority}" + (f",{m}" if m else "")
        label = f"FLOW_REMOVED {text} from {sw}"
        if msg.reason in (ofp.OFPRR_IDLE_TIMEOUT, ofp.OFPRR_HARD_TIMEOUT):
            from netsleuth.model.of13.instructions import Instructions
            from netsleuth.races.of13.flowmod import FlowMod13

            known = self.views13[e.dpid].last_known(msg.table_id, match, msg.priority)
            fm = known if known is not None else FlowMod13(0, msg.table_id, match, msg.priority, Instructions(),
                                                           msg.cookie)
            x = self.new_id()
            why = "idle" if msg.reason == ofp.OFPRR_IDLE_TIMEOUT else "hard"
            self.add(FLOW_EXPIRY, f"flow {text} expires ({why} timeout) on {sw}", dpid=e.dpid,
                     ops=[FlowOp(EXPIRY, e.t, fm, None, "TraceSwitchFlowTableEntryExpiry", target=fm.target)],
                     mid_out=(x,))
            self.stats["expiries"] += 1
            return x, label
        if e.dpid in self.last_delete:
            return self.link_out(self.last_delete[e.dpid], pid=False), label
        return None, label

    def packet_in_source(self, dpid: int, in_port: int, data: bytes) -> _Arrival | None:
        lst = self.arrivals.get(dpid, ())
        for a in reversed(lst):
            if a.port == in_port and not a.has_packet_in and a.to_controller and data and a.frame.startswith(data):
                return a
        for a in reversed(lst):
            if a.port == in_port and not a.has_packet_in and data and a.frame.startswith(data):
                return a
        for a in reversed(lst):
            if a.port == in_port and not a.has_packet_in and not a.hit:
                return a
        self.stats["packet_ins_unlinked"] += 1
        return None

    def removed_fm(self, dpid: int, msg: Any) -> PoxFlowMod:
        from netsleuth.model.match import Match

        m = Match.from_ofp(msg.match)
        for entry, fm in reversed(list(self.entry_fm[dpid].values())):
            if entry.match == m and entry.priority == msg.priority:
                return fm
        return _flow_mod_wire(msg.match, msg.priority, (), msg.cookie)

    def answered_packet_in(self, dpid: int, msg: Any, mtype: str, fm: Any) -> _PacketIn | None:
        pis = self.packet_ins.get(dpid)
        if not pis:
            return None
        bid = getattr(msg, "buffer_id", NO_BUFFER)
        if bid not in (None, NO_BUFFER):
            for p in reversed(pis):
                if p.buffer_id == bid:
                    self.stats["ctl_by_buffer"] += 1
                    return p
        if mtype == "PACKET_OUT":
            data = bytes(msg.data or b"")
            if data:
                for p in reversed(pis):
                    if p.data == data:
                        self.stats["ctl_by_data"] += 1
                        return p
            return None
        if mtype == "FLOW_MOD" and fm is not None:
            last = pis[-1]
            if _covers_packet(fm, last.match):
                self.stats["ctl_by_match"] += 1
                return last
            for p in reversed(pis):
                if not p.answered and _covers_packet(fm, p.match):
                    self.stats["ctl_by_match"] += 1
                    return p
        return None

    def on_to_switch(self, e: ts.ControlToSwitch, world: Any) -> None:
        from netsleuth.model.actions import action_from_ofp
        from netsleuth.model.match import Match
        from netsleuth.model.packet import Packet
        from netsleuth.model.switch import forward
        from netsleuth.openflow.codec import encode, msg_from_json

        if e.msg.get("version") == 4:
            self.on_to_switch13(e, world)
            return
        name = _msg_name(e.msg)
        if name in SKIP_MSG_TYPES:
            return
        mtype = e.msg.get("type")
        msg = msg_from_json(e.msg)
        raw = encode(msg_from_json(e.msg))
        sw = self.sw(e.dpid)
        node = self.name_of.get(e.dpid)
        switch = world.by_dpid.get(e.dpid)
        fm = PoxFlowMod.from_wire(raw) if mtype == "FLOW_MOD" else None
        # OpenFlow message JSON always has a type
        pi = self.answered_packet_in(e.dpid, msg, mtype, fm)  # type: ignore[arg-type]
        if pi is not None:
            pi.answered = True
        else:
            self.stats["ctl_sends_root"] += 1
        ops: list[FlowOp] = []
        label = f"{mtype} to {sw}"
        packet = None
        in_port = None
        buffered = self._buffered(e.dpid, msg)
        if mtype == "FLOW_MOD":
            ops.append(FlowOp(WRITE, e.t, fm, None, "TraceSwitchFlowTableWrite"))
            acts = ",".join(str(action_from_ofp(a)) for a in msg.actions) or "drop"
            assert fm is not None  # parsed for every FLOW_MOD
            label = (f"FLOW_MOD {fm.command_name} priority={msg.priority},{Match.from_ofp(msg.match)} "
                     f"actions={acts} on {sw}")
            if switch is not None:
                self.note_flow_mod(e.dpid, world, fm)
        elif mtype == "PACKET_OUT":
            data = bytes(msg.data or b"")
            if buffered is not None:
                data = buffered[1].frame
            acts = ",".join(str(action_from_ofp(a)) for a in msg.actions) or "drop"
            label = f"PACKET_OUT {_summary(data)} actions={acts} on {sw}"
            packet, in_port = data or None, msg.in_port
        elif mtype == "BARRIER_REQUEST":
            ops.append(FlowOp(OTHER, e.t, None, None, "TraceSwitchBarrier"))
        handle, lineage, in_port = self._send_and_handle(e, name, str(mtype), label, pi, buffered, ops, raw,
                                                         packet, in_port, msg.xid)
        if mtype == "FLOW_MOD" and fm.is_del():  # type: ignore[union-attr]  # fm is parsed for every FLOW_MOD
            self.last_delete[e.dpid] = handle
        if switch is None or node is None:
            return
        # what this message sends into the dataplane
        frame = None
        actions: tuple = ()
        if mtype == "PACKET_OUT":
            frame = packet
            actions = tuple(action_from_ofp(a) for a in msg.actions)
        elif mtype == "FLOW_MOD" and buffered is not None:
            frame = buffered[1].frame
        if not frame:
            return
        try:
            pkt = Packet.from_bytes(frame)
        except Exception:  # pragma: no cover - odd frames: no dataplane link
            return
        port_in = in_port if in_port is not None else ofp.OFPP_NONE
        if mtype == "FLOW_MOD":       # the released packet goes through the table (now with the new entry)
            entry = switch.table.peek(pkt.match_fields(port_in))
            actions = entry.actions if entry is not None else ()
        outs = forward(actions, pkt, port_in, switch.ports)
        ports = {p for p, _, _ in outs if p <= ofp.OFPP_MAX}
        if any(p == ofp.OFPP_TABLE for p, _, _ in outs):
            entry = switch.table.peek(pkt.match_fields(port_in))
            handle.ops.append(FlowOp(READ, e.t, self.fm_of_entry(e.dpid, entry) if entry else None, None,
                                     "TraceSwitchFlowTableRead"))
            if entry is not None:
                ports |= {p for p, _, _ in forward(entry.actions, pkt, port_in, switch.ports)
                          if p <= ofp.OFPP_MAX}
        if ports:
            self.add_emitter(node, lineage, _Emitter(handle, frozenset(ports), frame))

    def note_role(self, dpid: int, conn: int, role: int) -> None:
        """A 1.3 ROLE_REQUEST: a new master makes the switch's other masters slaves (NOCHANGE: nothing)."""
        if role == _ROLE_MASTER:
            for key, r in list(self.roles.items()):
                if key[0] == dpid and key[1] != conn and r == _ROLE_MASTER:
                    self.roles[key] = _ROLE_SLAVE
        if role in (_ROLE_MASTER, _ROLE_SLAVE, ofp13.OFPCR_ROLE_EQUAL):
            self.roles[(dpid, conn)] = role

    def ops13(self, e: ts.ControlToSwitch, msg: Any, mtype: str, pipeline: Any) -> tuple[list[FlowOp], str]:
        """The operations a 1.3 controller message performs on the switch, and its label (no switch name).

        A connection in the slave role may not modify the switch (the switch answers IS_SLAVE whatever
        the order), so its modifications are no writes."""
        slave = self.roles.get((e.dpid, e.conn)) == _ROLE_SLAVE
        refused = [FlowOp(OTHER, e.t, None, None, "TraceSwitchRefusedFromSlave")]
        if mtype == "FLOW_MOD":
            w = of13.flow_mod_write(msg, e.t)
            what = w.flow_mod.describe() if w.flow_mod is not None else "(refused: a bad match or instruction)"
            return (refused if slave else [w]), f"FLOW_MOD {what}"
        if mtype in ("GROUP_MOD", "METER_MOD"):
            ws = of13.group_meter_writes(msg, e.t)
            assert ws[0].flow_mod is not None   # group_meter_writes always names the group or meter
            return (refused if slave else ws), ws[0].flow_mod.describe()
        if mtype == "MULTIPART_REQUEST":
            kind = type(msg).__name__.removeprefix("OFP").removesuffix("StatsRequest")
            return of13.stats_reads(msg, pipeline, e.t), f"MULTIPART_REQUEST {kind}"
        if mtype == "ROLE_REQUEST":
            self.note_role(e.dpid, e.conn, msg.role)
        elif mtype == "BARRIER_REQUEST":
            return [FlowOp(OTHER, e.t, None, None, "TraceSwitchBarrier")], "BARRIER_REQUEST"
        return [], str(mtype)

    def _buffered(self, dpid: int, msg: Any) -> Any:
        """The buffered packet a message names by buffer id (taken out of the switch's buffers), or None."""
        bid = getattr(msg, "buffer_id", NO_BUFFER)
        return None if bid in (None, NO_BUFFER) else self.buffers.pop((dpid, bid), None)

    def _send_and_handle(self, e: ts.ControlToSwitch, name: str, mtype: str, label: str, pi: Any, buffered: Any,
                         ops: list[FlowOp], raw: bytes, packet: bytes | None, in_port: int | None,
                         xid: int | None) -> tuple[HbEvent, int | None, int | None]:
        """The controller's send of a message and the switch's handling of it (either OpenFlow version):
        the two HB events, the buffered packet it takes (rule 4), and the lineage of the packet it
        puts into the dataplane.  Returns (handle, lineage, in_port)."""
        lineage: int | None = None
        m = self.new_id()
        self.add(CONTROLLER_SEND, f"controller sends {label}", mid_in=pi.mid if pi else None,
                 has_mid_in=pi is not None, mid_out=(m,))
        pid_in = None
        if buffered is not None:
            pid_in = buffered[0]
            ops.append(FlowOp(OTHER, e.t, None, None, "TraceSwitchBufferGet"))
            lineage = buffered[1].pid
            if mtype == "FLOW_MOD":
                in_port = buffered[1].port
        elif pi is not None and pi.arrival is not None and mtype == "PACKET_OUT":
            lineage = pi.arrival.pid
        handle = self.add(MESSAGE_HANDLE, label, dpid=e.dpid, msg_type=name, mid_in=m, has_mid_in=True,
                          pid_in=pid_in, has_pid_in=pid_in is not None, ops=ops, msg=raw, packet=packet,
                          in_port=in_port)
        if xid:
            self.by_xid[(e.dpid, xid)] = handle
        return handle, lineage, in_port

    def on_to_switch13(self, e: ts.ControlToSwitch, world: Any) -> None:
        """A controller message to a 1.3 switch: its operations (see :mod:`netsleuth.races.of13.from_trace`),
        the controller causality of rule 4, buffers, and what it sends into the dataplane."""
        from netsleuth.model.of13.actions import action_from_ofp, render_action
        from netsleuth.openflow.codec import encode, msg_from_json

        name = _msg_name(e.msg)
        if name in SKIP_MSG_TYPES or name in SKIP_MSG_TYPES_13:
            return
        mtype = str(e.msg.get("type"))
        msg = msg_from_json(e.msg)
        if mtype == "MULTIPART_REQUEST" and not of13.reads_state(msg):
            return
        raw = encode(msg_from_json(e.msg))
        sw = self.sw(e.dpid)
        switch = world.by_dpid.get(e.dpid)
        pipeline = switch.of13.pipeline if switch is not None and switch.of13 is not None else None
        ops, label = self.ops13(e, msg, mtype, pipeline)
        fm = ops[0].flow_mod if mtype == "FLOW_MOD" and ops and ops[0].kind == WRITE else None
        pi = self.answered_packet_in(e.dpid, msg, mtype, fm)
        if pi is not None:
            pi.answered = True
        else:
            self.stats["ctl_sends_root"] += 1
        packet = None
        in_port = None
        buffered = self._buffered(e.dpid, msg)
        if mtype == "PACKET_OUT":
            data = buffered[1].frame if buffered is not None else bytes(msg.data or b"")
            acts = ",".join(render_action(action_from_ofp(a)) for a in msg.actions) or "drop"
            label = f"PACKET_OUT {_summary(data)} actions={acts}"
            packet, in_port = data or None, msg.in_port
        label = f"{label} on {sw}"
        handle, lineage, in_port = self._send_and_handle(e, name, str(mtype), label, pi, buffered, ops, raw,
                                                         packet, in_port, msg.xid)
        if any(op.kind == WRITE and op.flow_mod is not None and op.flow_mod.is_del() for op in ops):
            self.last_delete[e.dpid] = handle
        released = mtype == "FLOW_MOD" and buffered is not None and fm is not None and not fm.is_del()
        if self.roles.get((e.dpid, e.conn)) == _ROLE_SLAVE:
            return      # the switch refuses a slave's PACKET_OUT too: nothing enters the dataplane
        if switch is not None and pipeline is not None and (mtype == "PACKET_OUT" or released):
            frame = buffered[1].frame if released and buffered is not None else packet
            self.dataplane13(e, switch, handle, msg, frame, in_port, lineage)

    def dataplane13(self, e: ts.ControlToSwitch, switch: Any, handle: HbEvent, msg: Any, frame: bytes | None,
                    in_port: int | None, lineage: int | None) -> None:
        """A PACKET_OUT's packet (its actions) or a buffered packet a FLOW_MOD releases (the pipeline from
        table 0, with the new entry): the tables, groups and meters it reads, the ports it leaves by."""
        from netsleuth.model.of13.actions import Group, Output, action_from_ofp
        from netsleuth.model.of13.errors import OFError
        from netsleuth.model.of13.frame import Frame

        node = self.name_of.get(e.dpid)
        if not frame or node is None:
            return
        pipeline = switch.of13.pipeline
        switch.of13.sync_ports()
        port_in = in_port if in_port is not None else ofp13.OFPP_CONTROLLER
        try:
            if handle.msg_type == "OFPT_PACKET_OUT":
                actions = [action_from_ofp(a) for a in msg.actions]
                # The rebuilt switch ran a PACKET_OUT carrying its packet already (not a buffered one: the
                # rebuild buffers nothing); one whose actions reach the tables or a group is asked again
                # of a copy, so that counters, idle timers and meters do not see the packet twice.
                if msg.buffer_id == NO_BUFFER and any(isinstance(a, Group) or isinstance(a, Output)
                                                      and a.port == ofp13.OFPP_TABLE for a in actions):
                    pipeline = pipeline.copy()
                result = pipeline.packet_out(Frame.from_bytes(frame), port_in, actions, e.t)
            else:
                result = pipeline.process(Frame.from_bytes(frame), port_in, e.t)
        except OFError:
            return      # the switch refused the PACKET_OUT's actions: nothing sent
        handle.ops.extend(of13.pipeline_reads(result, pipeline, e.t, self.views13[e.dpid]))
        ports = of13.output_ports(result, switch.ports)
        if ports:
            self.add_emitter(node, lineage, _Emitter(handle, ports, frame))

    def on_disconnect(self, e: ts.SwitchDisconnected) -> None:
        """A 1.3 switch lost a control connection: what the controller handled on it cannot be answered
        any more (os-ken's datapath of that connection is gone), and a switch that comes back has empty
        buffers.  So rule 4 does not pin a FLOW_MOD on the new connection (a table-miss entry the app
        installs again) on a PACKET_IN of the old one.  (The 1.0 inference keeps SDNRacer-era behaviour.)"""
        if e.dpid not in self.dpids13:
            return
        self.packet_ins.pop(e.dpid, None)
        for key in [k for k in self.buffers if k[0] == e.dpid]:
            del self.buffers[key]
        self.roles.pop((e.dpid, e.conn), None)

    def on_input(self, e: ts.Event) -> None:
        if isinstance(e, ts.TrafficInjection):
            self.last_traffic[e.host] = e
        elif isinstance(e, ts.HostMigration):
            old = self.peer.pop((e.old_switch, e.old_port), None)
            if old is not None:
                self.peer.pop(old, None)
            for key, value in list(self.peer.items()):
                if key[0] == e.host:
                    self.peer.pop(key, None)
                    self.peer.pop(value, None)
            self.peer[(e.new_switch, e.new_port)] = (e.host, 0)
            self.peer[(e.host, 0)] = (e.new_switch, e.new_port)


def _covers_packet(fm: Any, packet: PoxMatch | dict[str, int] | None) -> bool:
    """Does a flow mod's match cover a PACKET_IN's packet (1.0: POX semantics; 1.3: its OXM fields)?"""
    if packet is None:
        return False
    if isinstance(packet, dict):
        return bool(fm.match.matches(packet))
    return bool(fm.match.matches_with_wildcards(packet))


def _summary(frame: bytes) -> str:
    from netsleuth.model.packet import Packet

    try:
        return Packet.from_bytes(frame).summary()
    except Exception:  # pragma: no cover - best effort
        return f"{len(frame)} bytes"


def _packet_match(frame: bytes, in_port: int) -> PoxMatch | None:
    try:
        return PoxMatch.from_packet(frame, in_port)
    except Exception:  # pragma: no cover - truncated or odd frames
        return None


def _entry_text(entry: Any) -> str:
    acts = ",".join(str(a) for a in entry.actions) or "drop"
    m = str(entry.match)
    return f"priority={entry.priority}{',' + m if m else ''} actions={acts}"


def _flow_mod_wire(ofmatch: Any, priority: int, ofactions: Iterable[Any], cookie: int = 0) -> PoxFlowMod:
    from os_ken.ofproto import ofproto_v1_0_parser as parser

    from netsleuth.openflow.codec import DATAPATH, encode

    msg = parser.OFPFlowMod(DATAPATH, ofmatch, cookie, ofp.OFPFC_ADD, 0, 0, priority, NO_BUFFER,
                            ofp.OFPP_NONE, 0, list(ofactions))
    msg.xid = 0
    return PoxFlowMod.from_wire(encode(msg))


def _entry_to_fm(entry: Any) -> PoxFlowMod:
    from netsleuth.model.actions import action_to_ofp

    return _flow_mod_wire(entry.match.to_ofp(), entry.priority, [action_to_ofp(a) for a in entry.actions],
                          entry.cookie)


# ------------------------------------------------------------------ entry points


def events_from_trace(trace: str | Path | ts.Trace) -> TraceEvents:
    """The HB events of a netsleuth trace (a path, a run directory or a :class:`Trace`)."""
    from netsleuth.trace.io import read_trace
    from netsleuth.world.rebuild import replay_states

    where = str(trace) if not isinstance(trace, ts.Trace) else "the trace"
    if not isinstance(trace, ts.Trace):
        trace = read_trace(trace_file(trace))
    _need_openflow_bodies(trace, where)
    b = _Builder(trace.header)
    for e, world in replay_states(trace.header, trace.events):
        b.seq = e.seq
        if isinstance(e, ts.PacketArrival):
            b.on_packet(e, world)
        elif isinstance(e, ts.ControlToSwitch):
            b.on_to_switch(e, world)
        elif isinstance(e, ts.ControlToController):
            b.on_to_controller(e, world)
        elif isinstance(e, ts.SwitchDisconnected):
            b.on_disconnect(e)
        elif e.is_input:
            b.on_input(e)
    return TraceEvents(b.events, b.origin, b.labels, dict(b.stats))


def _need_openflow_bodies(trace: ts.Trace, where: str) -> None:
    """Races are between the OpenFlow messages a switch handled: a trace without them has nothing to race.

    STS before mid-2013 recorded each OpenFlow message only as a fingerprint
    (its type and a few fields), so a trace imported from such a run keeps
    the inputs but no message bodies; say that instead of "no events".
    """
    from netsleuth.errors import TraceFormatError

    if not trace.events or any(isinstance(e, (ts.ControlToSwitch, ts.ControlToController)) for e in trace.events):
        return  # an empty trace simply has no races
    if trace.header.extra.get("imported_from") == "sts":
        raise TraceFormatError(
            f"{where} holds no OpenFlow message bodies: the STS run recorded its OpenFlow messages only as "
            "fingerprints, and races are between the messages a switch handled",
            "race an STS trace whose ControlMessage lines carry b64_packet (STS from mid-2013 on), "
            "or record the controller with netsleuth run/fuzz")
    raise TraceFormatError(f"{where} holds no OpenFlow message bodies, and races are between the messages a "
                           "switch handled", "give a trace recorded by netsleuth run/fuzz, or an SDNRacer hb.json")


def race_text(labels: dict[int, str], graph: Any, race: Any) -> str:
    """A race in plain words: the two events' labels (``graph`` is the report's HbGraph)."""
    a, k = graph.events[race.i], graph.events[race.k]
    return f"{race.kind} race: {labels.get(a.eid, a.kind)}  vs  {labels.get(k.eid, k.kind)}"


__all__ = ["TraceEvents", "events_from_trace", "is_netsleuth_trace", "race_text", "trace_file"]
