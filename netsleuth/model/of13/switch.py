"""The OpenFlow 1.3 part of a switch: its messages and its packet processing.

A :class:`~netsleuth.model.switch.Switch` keeps what does not depend on the
protocol version (ports and their counters, packet buffers, the lineage
tags it carries, reboots) and hands the rest to a per-version part.  This
is the 1.3 part: it holds a :class:`~netsleuth.model.of13.pipeline.Pipeline13`
(N flow tables, groups, meters) and answers 1.3 messages (os-ken
``ofproto_v1_3_parser`` objects) with 1.3 messages.  Like the switch it is
sans-I/O: messages, packets and ``now`` in; :class:`ToController` and
:class:`Emit` out.

What is per connection here and not in 1.0: each controller connection has
a role (equal, master or slave; a slave may not modify the switch) and its
own asynchronous-message masks (SET_ASYNC), so the 1.3 part addresses every
asynchronous message (packet-in, port-status, flow-removed) to the
connections whose masks ask for it rather than broadcasting it.

Port configuration is honoured as Open vSwitch does, which is what os-ken's
spanning tree (stplib) relies on: NO_RECV drops what arrives, NO_FWD drops
what would leave (flooding included), NO_PACKET_IN drops table-miss
packet-ins from that port but not the packet-ins a flow entry asks for
explicitly (BPDUs still reach the controller from a blocked port).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from netsleuth.model.addr import int_to_mac
from netsleuth.model.of13 import messages as of13_messages
from netsleuth.model.of13 import stats as of13_stats
from netsleuth.model.of13.actions import action_from_ofp
from netsleuth.model.of13.errors import OFError
from netsleuth.model.of13.flowtable import OVS_TABLES, FlowEntry13, RemovedFlow
from netsleuth.model.of13.frame import Frame
from netsleuth.model.of13.oxm import OxmMatch
from netsleuth.model.of13.pipeline import Pipeline13, PortState, Result
from netsleuth.model.ofdp import DATAPATH13 as DP
from netsleuth.model.ofdp import ofp13 as ofp
from netsleuth.model.ofdp import ofp13_parser as parser
from netsleuth.model.packet import Packet
from netsleuth.model.switch_io import Emit, Port, SwitchCore, ToController

Out = ToController | Emit
"""What handling a message or a packet produces."""

NO_BUFFER = ofp.OFP_NO_BUFFER
CAPABILITIES = (ofp.OFPC_FLOW_STATS | ofp.OFPC_TABLE_STATS | ofp.OFPC_PORT_STATS | ofp.OFPC_GROUP_STATS
                | ofp.OFPC_QUEUE_STATS)
PORT_FEATURES = ofp.OFPPF_1GB_FD | ofp.OFPPF_COPPER
PORT_SPEED_KBPS = 1_000_000
# Multipart replies are split so that no message comes near OpenFlow's 64 KiB limit.
MULTIPART_CHUNK = 64

# Asynchronous-message masks a connection starts with (spec 1.3.5, 7.3.10, as Open vSwitch sets them):
# index 0 applies to a master or equal connection, index 1 to a slave.
DEFAULT_PACKET_IN_MASK = ((1 << ofp.OFPR_NO_MATCH) | (1 << ofp.OFPR_ACTION) | (1 << ofp.OFPR_INVALID_TTL), 0)
DEFAULT_PORT_STATUS_MASK = ((1 << ofp.OFPPR_ADD) | (1 << ofp.OFPPR_DELETE) | (1 << ofp.OFPPR_MODIFY),) * 2
DEFAULT_FLOW_REMOVED_MASK = ((1 << ofp.OFPRR_IDLE_TIMEOUT) | (1 << ofp.OFPRR_HARD_TIMEOUT)
                             | (1 << ofp.OFPRR_DELETE) | (1 << ofp.OFPRR_GROUP_DELETE), 0)

# Requests a slave connection may not send (spec 6.3.5): they change the switch.
_MODIFYING = (parser.OFPFlowMod, parser.OFPGroupMod, parser.OFPPortMod, parser.OFPTableMod, parser.OFPMeterMod,
              parser.OFPPacketOut)


@dataclass(slots=True)
class ConnState:
    """What the switch remembers about one controller connection."""

    role: int = ofp.OFPCR_ROLE_EQUAL
    packet_in_mask: tuple[int, int] = DEFAULT_PACKET_IN_MASK
    port_status_mask: tuple[int, int] = DEFAULT_PORT_STATUS_MASK
    flow_removed_mask: tuple[int, int] = DEFAULT_FLOW_REMOVED_MASK

    def wants(self, masks: tuple[int, int], bit: int) -> bool:
        mask = masks[1] if self.role == ofp.OFPCR_ROLE_SLAVE else masks[0]
        return bool(mask >> bit & 1)


def port13(port: Port) -> Any:
    """A port as OpenFlow 1.3 describes it (PORT_DESC, PORT_STATUS)."""
    state = ofp.OFPPS_LIVE if port.link_up else ofp.OFPPS_LINK_DOWN
    return parser.OFPPort(port.port_no, int_to_mac(port.hw_addr), port.name.encode()[:15], port.config, state,
                          PORT_FEATURES, PORT_FEATURES, PORT_FEATURES, 0, PORT_SPEED_KBPS, PORT_SPEED_KBPS)


class OpenFlow13:
    """The 1.3 message handlers and packet path of one switch, over its :class:`Pipeline13`."""

    version = 4

    def __init__(self, switch: SwitchCore, n_tables: int = OVS_TABLES) -> None:
        self.switch = switch
        self.pipeline = Pipeline13(n_tables, seed=switch.dpid, table_size=switch.table_size)
        self.conns: dict[int, ConnState] = {}
        self.generation_id: int | None = None
        self.miss_send_len = ofp.OFPCML_NO_BUFFER
        self.config_flags = 0

    # ------------------------------------------------------------------ helpers
    def _error(self, conn: int, msg: Any, err_type: int, code: int) -> Any:
        buf = getattr(msg, "buf", None)
        err = parser.OFPErrorMsg(DP, err_type, code, bytes(buf[:64]) if buf else b"")
        err.xid = msg.xid
        return ToController(conn, err)

    def _reply(self, conn: int, request: Any, reply: Any) -> Any:
        reply.xid = request.xid
        return ToController(conn, reply)

    def _async(self, msg: Any, masks: Callable[[ConnState], tuple[int, int]], bit: int) -> list[ToController]:
        """``msg`` for every connection whose asynchronous mask of that kind has ``bit`` set."""
        msg.xid = 0  # asynchronous: no request to answer
        return [ToController(c, msg) for c, st in sorted(self.conns.items()) if st.wants(masks(st), bit)]

    def sync_ports(self) -> None:
        """Tell the pipeline which ports exist and are live (FLOOD, ALL, fast-failover watch ports)."""
        self.pipeline.ports = {p.port_no: PortState(live=p.usable, no_flood=False)
                               for p in self.switch.ports.values()}

    def forget_connection(self, conn: int) -> None:
        self.conns.pop(conn, None)

    # ------------------------------------------------------------------ control plane
    def handle_message(self, conn: int, msg: Any, now: float) -> list[Out]:
        st = self.conns.get(conn)
        if st is None:
            st = self.conns[conn] = ConnState()
        handler = _HANDLERS.get(type(msg))
        if handler is None:
            return [self._error(conn, msg, ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_TYPE)]
        if st.role == ofp.OFPCR_ROLE_SLAVE and isinstance(msg, _MODIFYING):
            return [self._error(conn, msg, ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_IS_SLAVE)]
        try:
            return handler(self, conn, msg, now)
        except OFError as err:
            return [self._error(conn, msg, err.err_type, err.err_code)]

    def _ignore(self, conn: int, msg: Any, now: float) -> list[Out]:
        return []  # HELLO, ECHO_REPLY, and ERROR (answering an error with an error could bounce forever)

    def _on_echo(self, conn: int, msg: Any, now: float) -> list[Out]:
        return [self._reply(conn, msg, parser.OFPEchoReply(DP, data=msg.data))]

    def _on_features(self, conn: int, msg: Any, now: float) -> list[Out]:
        # OpenFlow 1.3 lists no ports here: the controller asks for PORT_DESC.
        reply = parser.OFPSwitchFeatures(DP, self.switch.dpid, self.switch.n_buffers,
                                         self.pipeline.tables.n_tables, 0, CAPABILITIES)
        reply.reserved = 0
        return [self._reply(conn, msg, reply)]

    def _on_get_config(self, conn: int, msg: Any, now: float) -> list[Out]:
        return [self._reply(conn, msg, parser.OFPGetConfigReply(DP, self.config_flags, self.miss_send_len))]

    def _on_set_config(self, conn: int, msg: Any, now: float) -> list[Out]:
        self.config_flags = msg.flags
        self.miss_send_len = msg.miss_send_len
        return []

    def _on_barrier(self, conn: int, msg: Any, now: float) -> list[Out]:
        # Messages are applied one at a time, in order: everything before the barrier is done.
        return [self._reply(conn, msg, parser.OFPBarrierReply(DP))]

    def _on_experimenter(self, conn: int, msg: Any, now: float) -> list[Out]:
        return [self._error(conn, msg, ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_EXPERIMENTER)]

    def _on_queue_config(self, conn: int, msg: Any, now: float) -> list[Out]:
        if msg.port not in self.switch.ports and msg.port != ofp.OFPP_ANY:
            return [self._error(conn, msg, ofp.OFPET_QUEUE_OP_FAILED, ofp.OFPQOFC_BAD_PORT)]
        return [self._reply(conn, msg, parser.OFPQueueGetConfigReply(DP, [], msg.port))]

    def _on_role(self, conn: int, msg: Any, now: float) -> list[Out]:
        st = self.conns[conn]
        role = msg.role
        if role in (ofp.OFPCR_ROLE_MASTER, ofp.OFPCR_ROLE_SLAVE):
            if self.generation_id is not None:
                # "stale" is defined modulo 2^64: distance as a signed 64-bit number (spec 6.3.5)
                if (msg.generation_id - self.generation_id) & (1 << 64) - 1 >= 1 << 63:
                    return [self._error(conn, msg, ofp.OFPET_ROLE_REQUEST_FAILED, ofp.OFPRRFC_STALE)]
            self.generation_id = msg.generation_id
            if role == ofp.OFPCR_ROLE_MASTER:
                for other, ost in self.conns.items():
                    if other != conn and ost.role == ofp.OFPCR_ROLE_MASTER:
                        ost.role = ofp.OFPCR_ROLE_SLAVE
            st.role = role
        elif role == ofp.OFPCR_ROLE_EQUAL:
            st.role = role
        elif role != ofp.OFPCR_ROLE_NOCHANGE:
            return [self._error(conn, msg, ofp.OFPET_ROLE_REQUEST_FAILED, ofp.OFPRRFC_BAD_ROLE)]
        gen = self.generation_id if self.generation_id is not None else 0
        return [self._reply(conn, msg, parser.OFPRoleReply(DP, st.role, gen))]

    def _on_get_async(self, conn: int, msg: Any, now: float) -> list[Out]:
        st = self.conns[conn]
        reply = parser.OFPGetAsyncReply(DP, list(st.packet_in_mask), list(st.port_status_mask),
                                        list(st.flow_removed_mask))
        return [self._reply(conn, msg, reply)]

    def _on_set_async(self, conn: int, msg: Any, now: float) -> list[Out]:
        st = self.conns[conn]
        st.packet_in_mask = (msg.packet_in_mask[0], msg.packet_in_mask[1])
        st.port_status_mask = (msg.port_status_mask[0], msg.port_status_mask[1])
        st.flow_removed_mask = (msg.flow_removed_mask[0], msg.flow_removed_mask[1])
        return []

    def _on_port_mod(self, conn: int, msg: Any, now: float) -> list[Out]:
        port = self.switch.ports.get(msg.port_no)
        if port is None:
            return [self._error(conn, msg, ofp.OFPET_PORT_MOD_FAILED, ofp.OFPPMFC_BAD_PORT)]
        if msg.hw_addr is not None and str(msg.hw_addr).lower() != int_to_mac(port.hw_addr):
            return [self._error(conn, msg, ofp.OFPET_PORT_MOD_FAILED, ofp.OFPPMFC_BAD_HW_ADDR)]
        before = port.config
        port.config = (port.config & ~msg.mask) | (msg.config & msg.mask)
        self.sync_ports()
        if port.config != before:
            return [*self.port_status(port, ofp.OFPPR_MODIFY)]
        return []

    def _on_table_mod(self, conn: int, msg: Any, now: float) -> list[Out]:
        # Table configuration is deprecated in 1.3 (the miss behaviour is a flow entry); only the id is checked.
        if msg.table_id != ofp.OFPTT_ALL and msg.table_id >= self.pipeline.tables.n_tables:
            return [self._error(conn, msg, ofp.OFPET_TABLE_MOD_FAILED, ofp.OFPTMFC_BAD_TABLE)]
        return []

    def _on_flow_mod(self, conn: int, msg: Any, now: float) -> list[Out]:
        removed = of13_messages.apply_flow_mod(self.pipeline, msg, now)
        out: list[Out] = [*self.flows_removed(removed, now)]
        if msg.command in (ofp.OFPFC_ADD, ofp.OFPFC_MODIFY, ofp.OFPFC_MODIFY_STRICT) and msg.buffer_id != NO_BUFFER:
            buffered = self.switch.buffers.pop(msg.buffer_id, None)
            if buffered is None:
                out.append(self._error(conn, msg, ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BUFFER_UNKNOWN))
            else:
                out.extend(self.process(buffered.packet, buffered.in_port, buffered.tag, now))
        return out

    def _on_group_mod(self, conn: int, msg: Any, now: float) -> list[Out]:
        return [*self.flows_removed(of13_messages.apply_group_mod(self.pipeline, msg, now), now)]

    def _on_meter_mod(self, conn: int, msg: Any, now: float) -> list[Out]:
        return [*self.flows_removed(of13_messages.apply_meter_mod(self.pipeline, msg, now), now)]

    def _on_packet_out(self, conn: int, msg: Any, now: float) -> list[Out]:
        actions = [action_from_ofp(a) for a in msg.actions]
        sw = self.switch
        if msg.buffer_id != NO_BUFFER:
            buffered = sw.buffers.pop(msg.buffer_id, None)
            if buffered is None:
                return [self._error(conn, msg, ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BUFFER_UNKNOWN)]
            packet, tag = buffered.packet, buffered.tag
            frame = Frame.from_packet(packet)
        else:
            data = bytes(msg.data or b"")
            if not data:
                return [self._error(conn, msg, ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_LEN)]
            frame = Frame.from_bytes(data)
            packet, tag = None, sw.recent_tag(data)
        if msg.in_port not in sw.ports and msg.in_port not in (ofp.OFPP_CONTROLLER, ofp.OFPP_LOCAL, ofp.OFPP_ANY):
            return [self._error(conn, msg, ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_PORT)]
        self.sync_ports()
        result = self.pipeline.packet_out(frame, msg.in_port, actions, now)
        return self._outputs(result, frame, packet, msg.in_port, tag)

    # ------------------------------------------------------------------ multipart
    def _on_multipart(self, conn: int, msg: Any, now: float) -> list[Out]:
        p = self.pipeline
        kind = type(msg)
        body: Any
        if kind is parser.OFPDescStatsRequest:
            sw = self.switch
            body = parser.OFPDescStats(b"netsleuth", b"netsleuth mock OpenFlow 1.3 switch", sw.sw_version.encode(),
                                       str(sw.dpid).encode(), sw.name.encode())
        elif kind in (parser.OFPFlowStatsRequest, parser.OFPAggregateStatsRequest):
            select = dict(table_id=msg.table_id, match=OxmMatch.from_ofp(msg.match), out_port=msg.out_port,
                          out_group=msg.out_group, cookie=msg.cookie, cookie_mask=msg.cookie_mask)
            if msg.table_id != ofp.OFPTT_ALL and msg.table_id >= p.tables.n_tables:
                return [self._error(conn, msg, ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_TABLE_ID)]
            if kind is parser.OFPFlowStatsRequest:
                body = of13_stats.flow_stats(p, now, **select)
            else:
                body = of13_stats.aggregate_stats(p, **select)
        elif kind is parser.OFPTableStatsRequest:
            body = of13_stats.table_stats(p)
        elif kind is parser.OFPTableFeaturesStatsRequest:
            body = of13_stats.table_features(p)
            for t in body:  # os-ken serializes the name only as bytes
                if isinstance(t.name, str):
                    t.name = t.name.encode()
        elif kind is parser.OFPPortStatsRequest:
            body = [self._port_stats(port, now) for port in self.switch.ports.values()
                    if msg.port_no in (ofp.OFPP_ANY, port.port_no)]
            if not body and msg.port_no != ofp.OFPP_ANY:
                return [self._error(conn, msg, ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_PORT)]
        elif kind is parser.OFPPortDescStatsRequest:
            body = [port13(port) for port in self.switch.ports.values()]
        elif kind is parser.OFPQueueStatsRequest:
            body = []  # the model has no queues
        elif kind is parser.OFPGroupStatsRequest:
            body = of13_stats.group_stats(p, now, msg.group_id)
        elif kind is parser.OFPGroupDescStatsRequest:
            body = of13_stats.group_desc(p)
        elif kind is parser.OFPGroupFeaturesStatsRequest:
            body = of13_stats.group_features()
        elif kind is parser.OFPMeterStatsRequest:
            body = of13_stats.meter_stats(p, now, msg.meter_id)
        elif kind is parser.OFPMeterConfigStatsRequest:
            body = of13_stats.meter_config(p, msg.meter_id)
        elif kind is parser.OFPMeterFeaturesStatsRequest:
            body = [of13_stats.meter_features()]
        elif kind is parser.OFPExperimenterStatsRequest:
            return [self._error(conn, msg, ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_EXPERIMENTER)]
        else:
            return [self._error(conn, msg, ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_MULTIPART)]
        reply_cls = _REPLY_OF[kind]
        if not isinstance(body, list) or len(body) <= MULTIPART_CHUNK:
            return [self._reply(conn, msg, _multipart(reply_cls, body, 0))]
        chunks = [body[i:i + MULTIPART_CHUNK] for i in range(0, len(body), MULTIPART_CHUNK)]
        return [self._reply(conn, msg, _multipart(reply_cls, chunk,
                                                  ofp.OFPMPF_REPLY_MORE if i < len(chunks) - 1 else 0))
                for i, chunk in enumerate(chunks)]

    def _port_stats(self, port: Port, now: float) -> Any:
        c = port.counters
        sec = int(max(0.0, now))
        return parser.OFPPortStats(port.port_no, c.rx_packets, c.tx_packets, c.rx_bytes, c.tx_bytes, c.rx_dropped,
                                   c.tx_dropped, 0, 0, 0, 0, 0, 0, sec, 0)

    # ------------------------------------------------------------------ asynchronous messages
    def port_status(self, port: Port, reason: int) -> list[ToController]:
        return self._async(parser.OFPPortStatus(DP, reason, port13(port)), lambda st: st.port_status_mask, reason)

    def flows_removed(self, removed: list[RemovedFlow], now: float) -> list[ToController]:
        out: list[ToController] = []
        for r in removed:
            if r.entry.flags & ofp.OFPFF_SEND_FLOW_REM:
                out.extend(self._async(self._flow_removed(r.entry, r.reason, now),
                                       lambda st: st.flow_removed_mask, r.reason))
        return out

    def _flow_removed(self, e: FlowEntry13, reason: int, now: float) -> Any:
        age = max(0.0, now - e.installed_at)
        sec = int(age)
        return parser.OFPFlowRemoved(DP, e.cookie, e.priority, reason, e.table_id, sec, int((age - sec) * 1e9),
                                     e.idle_timeout, e.hard_timeout, e.packet_count, e.byte_count, e.match.to_ofp())

    def expire(self, now: float) -> list[ToController]:
        return self.flows_removed(self.pipeline.expire(now), now)

    def next_expiry(self) -> float | None:
        return self.pipeline.tables.next_expiry()

    # ------------------------------------------------------------------ data plane
    def process(self, packet: Packet, in_port: int, tag: Any, now: float) -> list[Out]:
        """A packet that arrived on ``in_port`` (counted by the switch) through the pipeline."""
        self.sync_ports()
        frame = Frame.from_packet(packet)
        return self._outputs(self.pipeline.process(frame, in_port, now), frame, packet, in_port, tag)

    def _outputs(self, result: Result, frame: Frame, packet: Packet | None, in_port: int, tag: Any) -> list[Out]:
        sw = self.switch
        out: list[Out] = []
        for e in result.outputs:
            if e.port == ofp.OFPP_CONTROLLER:
                out.extend(self._packet_in(e.frame, in_port, tag, e))
                continue
            port = sw.ports.get(e.port)
            if port is None or not port.usable or port.config & ofp.OFPPC_NO_FWD:
                continue  # LOCAL, NORMAL, unknown, down and no-forward ports: dropped
            pkt = packet if (e.frame is frame and packet is not None) else e.frame.to_packet()
            port.counters.tx_packets += 1
            port.counters.tx_bytes += pkt.wire_len()
            out.append(Emit(e.port, pkt, tag))
        return out

    def _packet_in(self, frame: Frame, in_port: int, tag: Any, e: Any) -> list[Out]:
        sw = self.switch
        port = sw.ports.get(in_port)
        if e.reason == ofp.OFPR_NO_MATCH and port is not None and port.config & ofp.OFPPC_NO_PACKET_IN:
            return []
        wanted = [(c, st) for c, st in sorted(self.conns.items()) if st.wants(st.packet_in_mask, e.reason)]
        if not wanted:
            return []
        data = frame.to_bytes()
        total_len = len(data)
        buffer_id = NO_BUFFER
        if e.max_len != ofp.OFPCML_NO_BUFFER and sw.n_buffers and (sw.buffer_packets or e.max_len < len(data)):
            buffer_id = sw.buffer(frame.to_packet(), in_port, tag)
            data = data[:e.max_len]
        sw.remember_packet_in(data, tag)
        fields: dict[str, int] = {"in_port": in_port}
        if e.metadata:
            fields["metadata"] = e.metadata
        if e.tunnel_id:
            fields["tunnel_id"] = e.tunnel_id
        msg = parser.OFPPacketIn(DP, buffer_id, total_len, e.reason, e.table_id, e.cookie,
                                 parser.OFPMatch(**fields), data)
        return [*self._async(msg, lambda st: st.packet_in_mask, e.reason)]


def _multipart(cls: type, body: Any, flags: int) -> Any:
    reply = cls(DP, body=body, flags=flags)
    reply.type = cls.cls_stats_type  # type: ignore[attr-defined]
    return reply


_REPLY_OF: dict[type, type] = {
    parser.OFPDescStatsRequest: parser.OFPDescStatsReply,
    parser.OFPFlowStatsRequest: parser.OFPFlowStatsReply,
    parser.OFPAggregateStatsRequest: parser.OFPAggregateStatsReply,
    parser.OFPTableStatsRequest: parser.OFPTableStatsReply,
    parser.OFPTableFeaturesStatsRequest: parser.OFPTableFeaturesStatsReply,
    parser.OFPPortStatsRequest: parser.OFPPortStatsReply,
    parser.OFPPortDescStatsRequest: parser.OFPPortDescStatsReply,
    parser.OFPQueueStatsRequest: parser.OFPQueueStatsReply,
    parser.OFPGroupStatsRequest: parser.OFPGroupStatsReply,
    parser.OFPGroupDescStatsRequest: parser.OFPGroupDescStatsReply,
    parser.OFPGroupFeaturesStatsRequest: parser.OFPGroupFeaturesStatsReply,
    parser.OFPMeterStatsRequest: parser.OFPMeterStatsReply,
    parser.OFPMeterConfigStatsRequest: parser.OFPMeterConfigStatsReply,
    parser.OFPMeterFeaturesStatsRequest: parser.OFPMeterFeaturesStatsReply,
}

_HANDLERS: dict[type, Callable[[OpenFlow13, int, Any, float], list[Out]]] = {
    parser.OFPHello: OpenFlow13._ignore,
    parser.OFPEchoRequest: OpenFlow13._on_echo,
    parser.OFPEchoReply: OpenFlow13._ignore,
    parser.OFPErrorMsg: OpenFlow13._ignore,
    parser.OFPExperimenter: OpenFlow13._on_experimenter,
    parser.OFPFeaturesRequest: OpenFlow13._on_features,
    parser.OFPGetConfigRequest: OpenFlow13._on_get_config,
    parser.OFPSetConfig: OpenFlow13._on_set_config,
    parser.OFPBarrierRequest: OpenFlow13._on_barrier,
    parser.OFPQueueGetConfigRequest: OpenFlow13._on_queue_config,
    parser.OFPRoleRequest: OpenFlow13._on_role,
    parser.OFPGetAsyncRequest: OpenFlow13._on_get_async,
    parser.OFPSetAsync: OpenFlow13._on_set_async,
    parser.OFPPortMod: OpenFlow13._on_port_mod,
    parser.OFPTableMod: OpenFlow13._on_table_mod,
    parser.OFPFlowMod: OpenFlow13._on_flow_mod,
    parser.OFPGroupMod: OpenFlow13._on_group_mod,
    parser.OFPMeterMod: OpenFlow13._on_meter_mod,
    parser.OFPPacketOut: OpenFlow13._on_packet_out,
    **{req: OpenFlow13._on_multipart for req in (*_REPLY_OF, parser.OFPExperimenterStatsRequest)},
}

__all__ = ["ConnState", "OpenFlow13", "port13"]
