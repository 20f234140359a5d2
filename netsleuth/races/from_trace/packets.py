"""Packet causality (rules 1 and 5 of the package docstring): each arrival gets the packet or host
send that delivered it, from the link peer's emitters of the same lineage or the host reception
it answers; an arrival at a switch READs the entry it hits (1.0) or the tables, groups and meters
of the pipeline it goes through (1.3).
"""

from __future__ import annotations

from typing import Any

from os_ken.ofproto import ofproto_v1_0 as ofp

from netsleuth.races.events import (
    HOST_HANDLE,
    HOST_SEND,
    PACKET_HANDLE,
    PACKET_SEND,
    READ,
    FlowOp,
)
from netsleuth.races.from_trace.records import (
    _RECENT,
    _Arrival,
    _BuilderBase,
    _Emitter,
    _entry_text,
    _Reception,
)
from netsleuth.races.of13 import from_trace as of13
from netsleuth.trace import schema as ts


class _PacketRules(_BuilderBase):
    """Rules 1 (packet hops) and 5 (hosts): which event sent each arrival."""

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
