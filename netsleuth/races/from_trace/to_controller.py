"""Switch-to-controller messages (rules 2 and 3 of the package docstring): a PACKET_IN is caused by
the arrival it carries, a reply by the handle of the message with its xid, a FLOW_REMOVED by its
expiry or by the DELETE that removed the entry.
"""

from __future__ import annotations

from typing import Any

from os_ken.ofproto import ofproto_v1_0 as ofp

from netsleuth.races.events import (
    CONTROLLER_HANDLE,
    EXPIRY,
    FLOW_EXPIRY,
    MESSAGE_SEND,
    OTHER,
    SKIP_MSG_TYPES,
    SKIP_MSG_TYPES_13,
    FlowOp,
)
from netsleuth.races.from_trace.packets import _PacketRules
from netsleuth.races.from_trace.records import (
    _RECENT,
    _REPLY_TYPES,
    NO_BUFFER,
    _Arrival,
    _covers_packet,
    _flow_mod_wire,
    _msg_name,
    _packet_match,
    _PacketIn,
    _summary,
)
from netsleuth.races.of13 import from_trace as of13
from netsleuth.races.poxmatch import PoxFlowMod
from netsleuth.trace import schema as ts


class _ToControllerRules(_PacketRules):
    """Rules 2 (PACKET_IN) and 3 (replies): what caused each message a switch sent."""

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
            # the form the switch's flow mods are compared in: its negotiated version's, whatever
            # version this one message claims (an untrusted trace may mix them)
            as13 = v13 or e.dpid in self.dpids13
            match = of13.packet_fields(data, in_port) if as13 else _packet_match(data, in_port)
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
