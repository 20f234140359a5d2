"""Controller-to-switch messages (rule 4 of the package docstring): each is tied to the PACKET_IN it
answers (buffer id, PACKET_OUT data, or a FLOW_MOD covering the packet) and handled by the switch
with its flow-table WRITE (1.0) or its table, group and meter operations (1.3).
"""

from __future__ import annotations

from typing import Any

from os_ken.ofproto import ofproto_v1_0 as ofp
from os_ken.ofproto import ofproto_v1_3 as ofp13

from netsleuth.races.events import (
    CONTROLLER_SEND,
    MESSAGE_HANDLE,
    OTHER,
    READ,
    SKIP_MSG_TYPES,
    SKIP_MSG_TYPES_13,
    WRITE,
    FlowOp,
    HbEvent,
)
from netsleuth.races.from_trace.records import (
    _ROLE_MASTER,
    _ROLE_SLAVE,
    NO_BUFFER,
    _Emitter,
    _msg_name,
    _summary,
)
from netsleuth.races.from_trace.to_controller import _ToControllerRules
from netsleuth.races.of13 import from_trace as of13
from netsleuth.races.poxmatch import PoxFlowMod
from netsleuth.trace import schema as ts


class _Builder(_ToControllerRules):
    """Rule 4 (controller causality): which PACKET_IN each controller message answers; the whole builder."""

    def on_to_switch(self, e: ts.ControlToSwitch, world: Any) -> None:
        from netsleuth.model.actions import action_from_ofp
        from netsleuth.model.match import Match
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
        if mtype == "PACKET_OUT":
            self.dataplane10(e, switch, node, handle, packet, tuple(action_from_ofp(a) for a in msg.actions),
                             in_port, lineage)
        elif mtype == "FLOW_MOD" and buffered is not None:
            self.dataplane10(e, switch, node, handle, buffered[1].frame, None, in_port, lineage)

    def dataplane10(self, e: ts.ControlToSwitch, switch: Any, node: str, handle: HbEvent, frame: bytes | None,
                    actions: tuple | None, in_port: int | None, lineage: int | None) -> None:
        """What a 1.0 PACKET_OUT (its ``actions``) or a FLOW_MOD releasing a buffered packet (``actions``
        None: the table's, now with the new entry) sends into the dataplane: an emitter of ``handle`` on
        the ports it reaches, and a READ when the packet goes through the table (OFPP_TABLE)."""
        from netsleuth.model.packet import Packet
        from netsleuth.model.switch import forward

        if not frame:
            return
        try:
            pkt = Packet.from_bytes(frame)
        except Exception:  # pragma: no cover - odd frames: no dataplane link
            return
        port_in = in_port if in_port is not None else ofp.OFPP_NONE
        if actions is None:       # the released packet goes through the table (now with the new entry)
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
