"""A sans-I/O OpenFlow switch: 1.0 here, 1.3 through its second pipeline.

The same switch serves a real controller over TCP, the model checker (which
copies and hashes it), replay and lockstep, so it never touches a socket or
a clock: it takes decoded messages, dataplane packets and the current time
and returns what it would send (:class:`ToController`, :class:`Emit`).
Messages are os-ken OpenFlow 1.0 objects, the vocabulary of the codec.

Which version a switch speaks is decided on its first controller connection
(the ``openflow`` option says what it offers: ``1.0``, ``1.3`` or ``auto``,
both).  The switch keeps what does not depend on the version (ports and
their counters, packet buffers, lineage tags, reboots); the 1.0 behaviour
(one :class:`FlowTable` and the 1.0 handlers) lives in this class, and a
1.3 switch hands messages and packets to its
:class:`~netsleuth.model.of13.switch.OpenFlow13` part, whose pipeline is a
:class:`~netsleuth.model.of13.pipeline.Pipeline13`.  :attr:`Switch.pipeline`
is the forwarding state of whichever version runs.

Every dataplane packet carries an opaque ``tag`` chosen by the caller (the
World uses it for packet lineage, to see a packet revisit a port); the switch
only carries it along, through its buffers and through PACKET_OUTs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from netsleuth.model.actions import Enqueue, Output, action_from_ofp
from netsleuth.model.flowtable import FlowEntry, FlowOverlapError, FlowTable
from netsleuth.model.forward import forward
from netsleuth.model.match import Match
from netsleuth.model.of13.flowtable import FlowEntry13
from netsleuth.model.of13.frame import Frame
from netsleuth.model.of13.pipeline import Pipeline13
from netsleuth.model.of13.switch import OpenFlow13
from netsleuth.model.ofdp import DATAPATH, ofp, ofp13_parser, ofp_parser
from netsleuth.model.packet import Packet
from netsleuth.model.replies import MAX_TABLE_ENTRIES, flow_removed, port_status, stats_reply
from netsleuth.model.switch_io import Buffered, Emit, Port, SwitchLimits, ToController, port_hw_addr

# Emit, ToController, Port, Buffered and port_hw_addr live in switch_io (the switch's 1.3 part
# shares them); callers may import them from here.
__all__ = ["Buffered", "Emit", "Port", "Switch", "SwitchLimits", "ToController", "forward", "port_hw_addr"]

OFP_VERSION_10 = 1
OFP_VERSION_13 = 4
# ``openflow`` switch option -> the OpenFlow wire versions the switch offers on its connections.
OPENFLOW_OFFERS: dict[str, tuple[int, ...]] = {"1.0": (OFP_VERSION_10,), "1.3": (OFP_VERSION_13,),
                                               "auto": (OFP_VERSION_10, OFP_VERSION_13)}

NO_BUFFER = 0xFFFFFFFF
DEFAULT_BUFFERS = 256
DEFAULT_MISS_SEND_LEN = 128

SUPPORTED_ACTIONS = (
    (1 << ofp.OFPAT_OUTPUT) | (1 << ofp.OFPAT_SET_VLAN_VID) | (1 << ofp.OFPAT_SET_VLAN_PCP)
    | (1 << ofp.OFPAT_STRIP_VLAN) | (1 << ofp.OFPAT_SET_DL_SRC) | (1 << ofp.OFPAT_SET_DL_DST)
    | (1 << ofp.OFPAT_SET_NW_SRC) | (1 << ofp.OFPAT_SET_NW_DST) | (1 << ofp.OFPAT_SET_NW_TOS)
    | (1 << ofp.OFPAT_SET_TP_SRC) | (1 << ofp.OFPAT_SET_TP_DST) | (1 << ofp.OFPAT_ENQUEUE)
)
CAPABILITIES = ofp.OFPC_FLOW_STATS | ofp.OFPC_TABLE_STATS | ofp.OFPC_PORT_STATS
# What a switch reports as its software version in the desc stats reply when
# whoever builds it does not say: the model cannot know the tool's release
# (that lives above it), so the World passes the package version in.
DEFAULT_SW_VERSION = "unversioned"


class Switch:
    """One OpenFlow datapath: ports, packet buffers, and the 1.0 table or the 1.3 pipeline."""

    def __init__(self, dpid: int, ports: Iterable[int], *, name: str = "",
                 n_buffers: int = DEFAULT_BUFFERS, sw_version: str = DEFAULT_SW_VERSION,
                 openflow: str = "auto", buffer_packets: int = 0, table_size: int = 0) -> None:
        if openflow not in OPENFLOW_OFFERS:
            raise ValueError(f"openflow must be one of {', '.join(OPENFLOW_OFFERS)}, not {openflow!r}")
        if buffer_packets < 0 or table_size < 0:
            raise ValueError("buffer_packets and table_size must be >= 0")
        # buffer_packets > 0: every PACKET_IN is buffered (up to that many at once), as Open vSwitch
        # did before 2.7 and controllers written then (POX's l2_multi, l3_learning) expect.
        self.buffer_packets = buffer_packets
        if buffer_packets:
            n_buffers = buffer_packets
        # table_size > 0: an ADD that would make the table hold more is refused ALL_TABLES_FULL.
        self.table_size = table_size
        self.dpid = dpid
        self.openflow = openflow
        self.negotiated: int | None = None   # wire version, once the first connection agreed on one
        self.of13: OpenFlow13 | None = None
        self.sw_version = sw_version
        self.name = name or f"s{dpid}"
        self.ports: dict[int, Port] = {
            p: Port(p, port_hw_addr(dpid, p), f"{self.name}-eth{p}") for p in sorted(ports)}
        self.table = FlowTable()
        self.n_buffers = n_buffers
        self.buffers: dict[int, Buffered] = {}
        self._next_buffer = 0
        self.miss_send_len = DEFAULT_MISS_SEND_LEN
        self.config_flags = 0
        self.lookup_count = 0
        self.matched_count = 0
        # packet_in data -> tag, so a PACKET_OUT that carries the data itself
        # (instead of a buffer id) continues the same packet's lineage.
        self._recent_in: dict[bytes, Any] = {}

    # ----------------------------------------------------------- version
    @property
    def offered_versions(self) -> tuple[int, ...]:
        """The OpenFlow wire versions this switch offers in its HELLO."""
        return OPENFLOW_OFFERS[self.openflow]

    @property
    def version(self) -> int:
        """The wire version the switch speaks: 4 (OpenFlow 1.3) or 1 (1.0, also before any negotiation)."""
        return OFP_VERSION_13 if self.of13 is not None else OFP_VERSION_10

    @property
    def pipeline(self) -> FlowTable | Pipeline13:
        """The forwarding state of the version that runs: the 1.0 FlowTable or the 1.3 Pipeline13.

        What analyses of the data plane (header space, concrete traces) read;
        on a 1.3 switch ``table`` stays an empty 1.0 table.
        """
        return self.of13.pipeline if self.of13 is not None else self.table

    @property
    def flow_count(self) -> int:
        """Flow entries installed, over every table of whichever version runs."""
        return len(self.of13.pipeline.tables) if self.of13 is not None else len(self.table)

    def flow_entries(self) -> list[FlowEntry] | list[FlowEntry13]:
        """Every flow entry of whichever version runs (1.3: table by table, each in lookup order)."""
        return self.of13.pipeline.tables.entries() if self.of13 is not None else self.table.entries()

    def lookup_recorded(self, packet: Packet, in_port: int, now: float) -> FlowEntry | None:
        """The table lookups a live switch made for ``packet`` (counters, idle timers), with no output.

        For rebuilt worlds, which re-apply recorded messages but not the traffic
        that refreshed idle timeouts.  Returns the 1.0 entry hit, as it is after the
        lookup (None on a miss and on a 1.3 switch).
        """
        if self.of13 is not None:
            self.of13.sync_ports()
            self.of13.pipeline.process(Frame.from_packet(packet), in_port, now)
            return None
        return self.table.lookup(packet.match_fields(in_port), now=now, nbytes=packet.wire_len())

    def use_version(self, version: int) -> bool:
        """Run OpenFlow ``version`` (wire number), as negotiated on the first connection.

        False when the switch already runs another version (a second
        controller negotiated differently): that connection cannot be served.
        """
        if self.negotiated is not None:
            return self.negotiated == version
        if version not in (OFP_VERSION_10, OFP_VERSION_13):
            return False
        self.negotiated = version
        if version == OFP_VERSION_13:
            self.of13 = OpenFlow13(self)
            self.of13.sync_ports()
        return True

    def next_expiry(self) -> float | None:
        """When the next flow timeout falls due, whichever version runs."""
        return self.of13.next_expiry() if self.of13 is not None else self.table.next_expiry()

    # ----------------------------------------------------------- shared with the 1.3 part
    def recent_tag(self, data: bytes) -> Any:
        """The lineage tag of a recent packet-in with exactly these bytes (a PACKET_OUT resending it)."""
        return self._recent_in.get(data)

    def remember_packet_in(self, data: bytes, tag: Any) -> None:
        self._recent_in[data] = tag
        if len(self._recent_in) > 64:
            del self._recent_in[next(iter(self._recent_in))]

    def buffer(self, packet: Packet, in_port: int, tag: Any) -> int:
        """Keep ``packet`` for a later PACKET_OUT or FLOW_MOD naming its buffer id."""
        return self._buffer(packet, in_port, tag)

    # ----------------------------------------------------------- control plane
    def handle_message(self, conn: int, msg: Any, now: float) -> list[ToController | Emit]:
        """Apply one message from the controller on connection ``conn``.

        A switch whose version was never negotiated (one rebuilt from a trace)
        takes the version of the first message it is handed.
        """
        if self.of13 is None and self.negotiated is None and type(msg).__module__ == ofp13_parser.__name__:
            self.use_version(OFP_VERSION_13)
        if self.of13 is not None:
            return self.of13.handle_message(conn, msg, now)
        handler = _HANDLERS.get(type(msg))
        if handler is None:
            return [self._error(conn, msg, ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_TYPE)]
        return handler(self, conn, msg, now)

    def _error(self, conn: int, msg: Any, err_type: int, code: int) -> ToController:
        data = b""
        buf = getattr(msg, "buf", None)
        if buf:
            data = bytes(buf[:64])
        err = ofp_parser.OFPErrorMsg(DATAPATH, type_=err_type, code=code, data=data)
        err.xid = msg.xid
        return ToController(conn, err)

    def _reply(self, conn: int, request: Any, reply: Any) -> ToController:
        reply.xid = request.xid
        return ToController(conn, reply)

    def _on_hello(self, conn: int, msg: Any, now: float) -> list[Any]:
        return []

    def _on_echo(self, conn: int, msg: Any, now: float) -> list[Any]:
        return [self._reply(conn, msg, ofp_parser.OFPEchoReply(DATAPATH, data=msg.data))]

    def _on_echo_reply(self, conn: int, msg: Any, now: float) -> list[Any]:
        return []

    def _on_error(self, conn: int, msg: Any, now: float) -> list[Any]:
        return []  # never answer an ERROR with an ERROR: the two sides could bounce them forever

    def _on_features(self, conn: int, msg: Any, now: float) -> list[Any]:
        reply = ofp_parser.OFPSwitchFeatures(DATAPATH)
        reply.datapath_id = self.dpid
        reply.n_buffers = self.n_buffers
        reply.n_tables = 1
        reply.capabilities = CAPABILITIES
        reply.actions = SUPPORTED_ACTIONS
        reply.ports = {p.port_no: p.phy() for p in self.ports.values()}
        return [self._reply(conn, msg, reply)]

    def _on_get_config(self, conn: int, msg: Any, now: float) -> list[Any]:
        reply = ofp_parser.OFPGetConfigReply(DATAPATH)
        reply.flags = self.config_flags
        reply.miss_send_len = self.miss_send_len
        return [self._reply(conn, msg, reply)]

    def _on_set_config(self, conn: int, msg: Any, now: float) -> list[Any]:
        self.config_flags = msg.flags
        self.miss_send_len = msg.miss_send_len
        return []

    def _on_barrier(self, conn: int, msg: Any, now: float) -> list[Any]:
        # Messages are applied one at a time, in order: everything before the
        # barrier is already done when it is handled.
        return [self._reply(conn, msg, ofp_parser.OFPBarrierReply(DATAPATH))]

    def _on_vendor(self, conn: int, msg: Any, now: float) -> list[Any]:
        return [self._error(conn, msg, ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BAD_VENDOR)]

    def _on_queue_config(self, conn: int, msg: Any, now: float) -> list[Any]:
        if msg.port not in self.ports:
            return [self._error(conn, msg, ofp.OFPET_QUEUE_OP_FAILED, ofp.OFPQOFC_BAD_PORT)]
        reply = ofp_parser.OFPQueueGetConfigReply(DATAPATH)
        reply.port = msg.port
        reply.queues = []
        return [self._reply(conn, msg, reply)]

    def _on_port_mod(self, conn: int, msg: Any, now: float) -> list[Any]:
        port = self.ports.get(msg.port_no)
        if port is None:
            return [self._error(conn, msg, ofp.OFPET_PORT_MOD_FAILED, ofp.OFPPMFC_BAD_PORT)]
        hw = msg.hw_addr if isinstance(msg.hw_addr, int) else int.from_bytes(_mac_bytes(msg.hw_addr), "big")
        if hw != port.hw_addr:
            return [self._error(conn, msg, ofp.OFPET_PORT_MOD_FAILED, ofp.OFPPMFC_BAD_HW_ADDR)]
        before = port.config
        port.config = (port.config & ~msg.mask) | (msg.config & msg.mask)
        if port.config != before:
            return [ToController(None, self._port_status(port, ofp.OFPPR_MODIFY))]
        return []

    def _parse_actions(self, conn: int, msg: Any) -> tuple[Any, ...] | ToController:
        """The message's actions as model actions, or the BAD_ACTION error to answer with."""
        try:
            actions = tuple(action_from_ofp(a) for a in msg.actions)
        except (ValueError, KeyError, TypeError) as exc:
            return self._error(conn, msg, ofp.OFPET_BAD_ACTION, getattr(exc, "err_code", ofp.OFPBAC_BAD_TYPE))
        bad = self._validate_actions(actions)
        if bad is not None:
            return self._error(conn, msg, ofp.OFPET_BAD_ACTION, bad)
        return actions

    def _validate_actions(self, actions: tuple[Any, ...]) -> int | None:
        """The OFPBAC_* code for the first invalid action, or None."""
        for a in actions:
            if isinstance(a, (Output, Enqueue)):
                p = a.port
                if p == 0 or (ofp.OFPP_MAX < p < ofp.OFPP_IN_PORT) or p == ofp.OFPP_NONE:
                    return ofp.OFPBAC_BAD_OUT_PORT  # type: ignore[no-any-return]  # os-ken constants: untyped ints
                if isinstance(a, Enqueue) and p > ofp.OFPP_MAX and p != ofp.OFPP_IN_PORT:
                    return ofp.OFPBAC_BAD_OUT_PORT  # type: ignore[no-any-return]  # os-ken constants: untyped ints
        return None

    def _on_flow_mod(self, conn: int, msg: Any, now: float) -> list[Any]:
        actions = self._parse_actions(conn, msg)
        if isinstance(actions, ToController):
            return [actions]
        match = Match.from_ofp(msg.match)
        cmd = msg.command
        out: list[Any] = []
        if msg.buffer_id != NO_BUFFER and not self.n_buffers:
            # A switch without buffers refuses the whole FLOW_MOD, as Open vSwitch has since 2.7; one with
            # buffers installs the flow and then reports an unknown buffer, as OVS did before (and as a
            # world rebuilt from a trace, whose buffers are empty, must).
            return [self._error(conn, msg, ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BUFFER_UNKNOWN)]
        if msg.flags & ofp.OFPFF_EMERG and (msg.idle_timeout or msg.hard_timeout):
            return [self._error(conn, msg, ofp.OFPET_FLOW_MOD_FAILED, ofp.OFPFMFC_BAD_EMERG_TIMEOUT)]
        if cmd in (ofp.OFPFC_ADD, ofp.OFPFC_MODIFY, ofp.OFPFC_MODIFY_STRICT):
            if cmd == ofp.OFPFC_ADD:
                modified: list[FlowEntry] = []
            else:
                modified = self.table.modify(match, actions, strict=cmd == ofp.OFPFC_MODIFY_STRICT,
                                             priority=msg.priority, now=now, cookie=msg.cookie)
            if not modified:
                if len(self.table) >= (self.table_size or MAX_TABLE_ENTRIES) and not self._replaces(match, msg):
                    return [self._error(conn, msg, ofp.OFPET_FLOW_MOD_FAILED, ofp.OFPFMFC_ALL_TABLES_FULL)]
                try:
                    self.table.add(match, msg.priority, actions, cookie=msg.cookie,
                                   idle_timeout=msg.idle_timeout, hard_timeout=msg.hard_timeout,
                                   flags=msg.flags, now=now)
                except FlowOverlapError:
                    return [self._error(conn, msg, ofp.OFPET_FLOW_MOD_FAILED, ofp.OFPFMFC_OVERLAP)]
            if msg.buffer_id != NO_BUFFER:
                out.extend(self._release_buffer(conn, msg, msg.buffer_id, None, now, actions_from_table=True))
        elif cmd in (ofp.OFPFC_DELETE, ofp.OFPFC_DELETE_STRICT):
            removed = self.table.delete(match, strict=cmd == ofp.OFPFC_DELETE_STRICT,
                                        priority=msg.priority, out_port=msg.out_port)
            for entry in removed:
                if entry.flags & ofp.OFPFF_SEND_FLOW_REM:
                    out.append(ToController(None, self._flow_removed(entry, ofp.OFPRR_DELETE, now)))
        else:
            return [self._error(conn, msg, ofp.OFPET_FLOW_MOD_FAILED, ofp.OFPFMFC_BAD_COMMAND)]
        return out

    def _replaces(self, match: Match, msg: Any) -> bool:
        """Whether an ADD of ``match`` at ``msg.priority`` takes the place of an entry (a full table
        still takes it: the count does not grow)."""
        return any(e.match == match and e.priority == msg.priority for e in self.table.select(match))

    def _release_buffer(self, conn: int, msg: Any, buffer_id: int, actions: tuple[Any, ...] | None,
                        now: float, actions_from_table: bool = False) -> list[Any]:
        buffered = self.buffers.pop(buffer_id, None)
        if buffered is None:
            return [self._error(conn, msg, ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BUFFER_UNKNOWN)]
        if actions_from_table:
            return self._pipeline(buffered.packet, buffered.in_port, buffered.tag, now, count_rx=False)
        return self._apply_actions(actions or (), buffered.packet, buffered.in_port, buffered.tag, now)

    def _on_packet_out(self, conn: int, msg: Any, now: float) -> list[Any]:
        actions = self._parse_actions(conn, msg)
        if isinstance(actions, ToController):
            return [actions]
        in_port = msg.in_port
        if msg.buffer_id != NO_BUFFER:
            buffered = self.buffers.pop(msg.buffer_id, None)
            if buffered is None:
                return [self._error(conn, msg, ofp.OFPET_BAD_REQUEST, ofp.OFPBRC_BUFFER_UNKNOWN)]
            packet, tag = buffered.packet, buffered.tag
        else:
            data = bytes(msg.data or b"")
            if not data:  # accepted and sends nothing, as Open vSwitch does (POX's l2_multi floods so)
                return []
            packet = Packet.from_bytes(data)
            tag = self._recent_in.get(data)
        return self._apply_actions(actions, packet, in_port, tag, now)

    def _on_stats(self, conn: int, msg: Any, now: float) -> list[Any]:
        reply = stats_reply(self, msg, now)
        if isinstance(reply, tuple):  # (err_type, code)
            return [self._error(conn, msg, *reply)]
        return [self._reply(conn, msg, reply)]

    @staticmethod
    def _flow_removed(e: FlowEntry, reason: int, now: float) -> Any:
        return flow_removed(e, reason, now)

    @staticmethod
    def _port_status(port: Port, reason: int) -> Any:
        return port_status(port, reason)

    # ----------------------------------------------------------- data plane
    def receive_packet(self, in_port: int, packet: Packet, now: float, tag: Any = None) -> list[ToController | Emit]:
        """A packet arrives on ``in_port``: match it and act."""
        port = self.ports.get(in_port)
        if port is None or not port.usable:
            if port is not None:
                port.counters.rx_dropped += 1
            return []
        if self.of13 is not None:
            # OpenFlow 1.3 has no spanning-tree exception: the controller runs STP (NO_RECV drops all).
            if port.config & ofp.OFPPC_NO_RECV:
                port.counters.rx_dropped += 1
                return []
            port.counters.rx_packets += 1
            port.counters.rx_bytes += packet.wire_len()
            return self.of13.process(packet, in_port, tag, now)
        if port.config & ofp.OFPPC_NO_RECV and not _is_stp(packet):
            port.counters.rx_dropped += 1
            return []
        return self._pipeline(packet, in_port, tag, now)

    def _pipeline(self, packet: Packet, in_port: int, tag: Any, now: float, count_rx: bool = True) -> list[Any]:
        nbytes = packet.wire_len()
        if count_rx and in_port in self.ports:
            c = self.ports[in_port].counters
            c.rx_packets += 1
            c.rx_bytes += nbytes
        self.lookup_count += 1
        entry = self.table.lookup(packet.match_fields(in_port), now=now, nbytes=nbytes)
        if entry is None:
            port = self.ports.get(in_port)
            if port is not None and port.config & ofp.OFPPC_NO_PACKET_IN:
                return []
            return [self._packet_in(packet, in_port, tag, ofp.OFPR_NO_MATCH, self.miss_send_len)]
        self.matched_count += 1
        return self._apply_actions(entry.actions, packet, in_port, tag, now)

    def _apply_actions(self, actions: tuple[Any, ...], packet: Packet, in_port: int, tag: Any, now: float) -> list[Any]:
        out: list[Any] = []
        for port, pkt, max_len in forward(actions, packet, in_port, self.ports):
            if port == ofp.OFPP_CONTROLLER:
                out.append(self._packet_in(pkt, in_port, tag, ofp.OFPR_ACTION, max_len))
            elif port == ofp.OFPP_TABLE:
                out.extend(self._pipeline(pkt, in_port, tag, now, count_rx=False))
            elif port in self.ports:
                c = self.ports[port].counters
                c.tx_packets += 1
                c.tx_bytes += pkt.wire_len()
                out.append(Emit(port, pkt, tag))
            # LOCAL, NORMAL and ports that do not exist: dropped silently.
        return out

    def _packet_in(self, packet: Packet, in_port: int, tag: Any, reason: int, max_len: int) -> ToController:
        data = packet.to_bytes()
        frame_len = len(data)
        buffer_id = NO_BUFFER
        if self.n_buffers and (self.buffer_packets or max_len < len(data)):
            buffer_id = self._buffer(packet, in_port, tag)
            data = data[:max_len]
        self.remember_packet_in(data, tag)
        # total_len is the length of the frame whose bytes ``data`` starts
        # (OF1.0: "full length of frame"); unbuffered, it equals len(data).
        msg = ofp_parser.OFPPacketIn(DATAPATH, buffer_id=buffer_id, total_len=frame_len,
                                     in_port=in_port, reason=reason, data=data)
        msg.xid = 0  # asynchronous: no request to answer
        return ToController(None, msg)

    def _buffer(self, packet: Packet, in_port: int, tag: Any) -> int:
        if len(self.buffers) >= self.n_buffers:
            del self.buffers[next(iter(self.buffers))]  # oldest first, deterministically
        buffer_id = self._next_buffer
        self._next_buffer = (self._next_buffer + 1) & 0x7FFFFFFF
        self.buffers[buffer_id] = Buffered(packet, in_port, tag)
        return buffer_id

    # ----------------------------------------------------------- ports and time
    def set_link(self, port_no: int, up: bool) -> list[ToController]:
        """The link on ``port_no`` went up or down: tell every controller."""
        port = self.ports[port_no]
        if port.link_up == up:
            return []
        port.link_up = up
        if self.of13 is not None:
            self.of13.sync_ports()
            return self.of13.port_status(port, ofp.OFPPR_MODIFY)
        return [ToController(None, self._port_status(port, ofp.OFPPR_MODIFY))]

    def add_port(self, port_no: int, link_up: bool = True) -> list[ToController]:
        """A new port appears (a host plugged in): PORT_STATUS ADD."""
        port = self.ports[port_no] = Port(port_no, port_hw_addr(self.dpid, port_no), f"{self.name}-eth{port_no}",
                                          link_up=link_up)
        self.ports = dict(sorted(self.ports.items()))
        if self.of13 is not None:
            self.of13.sync_ports()
            return self.of13.port_status(port, ofp.OFPPR_ADD)
        return [ToController(None, self._port_status(port, ofp.OFPPR_ADD))]

    def remove_port(self, port_no: int) -> list[ToController]:
        """A port disappears (a host unplugged): PORT_STATUS DELETE."""
        port = self.ports.pop(port_no)
        if self.of13 is not None:
            self.of13.sync_ports()
            return self.of13.port_status(port, ofp.OFPPR_DELETE)
        return [ToController(None, self._port_status(port, ofp.OFPPR_DELETE))]

    def rebooted(self) -> Switch:
        """The same datapath after a crash: same ports, empty table, empty buffers.

        Its version is negotiated again when it reconnects (with the same offer).
        """
        fresh = Switch(self.dpid, self.ports, name=self.name, n_buffers=self.n_buffers, sw_version=self.sw_version,
                       openflow=self.openflow, buffer_packets=self.buffer_packets, table_size=self.table_size)
        for p in fresh.ports.values():
            p.link_up = self.ports[p.port_no].link_up
        return fresh

    def expire(self, now: float) -> list[ToController]:
        """Remove flows whose idle or hard timeout passed; FLOW_REMOVED where asked."""
        if self.of13 is not None:
            return self.of13.expire(now)
        out = []
        for entry, reason in self.table.expire(now):
            if entry.flags & ofp.OFPFF_SEND_FLOW_REM:
                out.append(ToController(None, self._flow_removed(entry, reason, now)))
        return out


STP_MAC = 0x0180C2000000


def _is_stp(packet: Packet) -> bool:
    """802.1D BPDUs still pass a NO_RECV port (OF1.0 section 5.2.1)."""
    return packet.eth_dst == STP_MAC


def _mac_bytes(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    return bytes.fromhex(str(value).replace(":", ""))


_HANDLERS = {
    ofp_parser.OFPHello: Switch._on_hello,
    ofp_parser.OFPEchoRequest: Switch._on_echo,
    ofp_parser.OFPEchoReply: Switch._on_echo_reply,
    ofp_parser.OFPErrorMsg: Switch._on_error,
    ofp_parser.OFPFeaturesRequest: Switch._on_features,
    ofp_parser.OFPGetConfigRequest: Switch._on_get_config,
    ofp_parser.OFPSetConfig: Switch._on_set_config,
    ofp_parser.OFPBarrierRequest: Switch._on_barrier,
    ofp_parser.OFPVendor: Switch._on_vendor,
    ofp_parser.OFPQueueGetConfigRequest: Switch._on_queue_config,
    ofp_parser.OFPPortMod: Switch._on_port_mod,
    ofp_parser.OFPFlowMod: Switch._on_flow_mod,
    ofp_parser.OFPPacketOut: Switch._on_packet_out,
    ofp_parser.OFPDescStatsRequest: Switch._on_stats,
    ofp_parser.OFPFlowStatsRequest: Switch._on_stats,
    ofp_parser.OFPAggregateStatsRequest: Switch._on_stats,
    ofp_parser.OFPTableStatsRequest: Switch._on_stats,
    ofp_parser.OFPPortStatsRequest: Switch._on_stats,
    ofp_parser.OFPQueueStatsRequest: Switch._on_stats,
    ofp_parser.OFPVendorStatsRequest: Switch._on_stats,
}
