"""What a switch and its per-version parts share: ports, buffered packets, and what they hand back.

A :class:`~netsleuth.model.switch.Switch` keeps what does not depend on the
OpenFlow version (its ports and their counters, packet buffers, lineage
tags) and hands version-specific work to a part such as
:class:`~netsleuth.model.of13.switch.OpenFlow13`.  That part needs only the
small surface :class:`SwitchCore` describes, so the two modules meet here
and neither imports the other's types: the switch builds the part, the part
sees its switch through the protocol.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from netsleuth.errors import TraceFormatError
from netsleuth.model.addr import int_to_mac
from netsleuth.model.ofdp import ofp, ofp_parser
from netsleuth.model.packet import Packet

PORT_FEATURES = ofp.OFPPF_1GB_FD | ofp.OFPPF_COPPER
"""The features every port reports in OpenFlow 1.0 (a 1 Gb/s copper port)."""


@dataclass(frozen=True, slots=True)
class ToController:
    """A message for the controller on connection ``conn`` (None: every connection)."""

    conn: int | None
    msg: Any


@dataclass(frozen=True, slots=True)
class Emit:
    """A packet leaving the switch on ``port``."""

    port: int
    packet: Packet
    tag: Any = None


def port_hw_addr(dpid: int, port_no: int) -> int:
    """A stable, locally administered MAC for a switch port."""
    return 0x020000000000 | ((dpid & 0xFFFFFF) << 16) | (port_no & 0xFFFF)


@dataclass(slots=True)
class PortCounters:
    rx_packets: int = 0
    tx_packets: int = 0
    rx_bytes: int = 0
    tx_bytes: int = 0
    rx_dropped: int = 0
    tx_dropped: int = 0


@dataclass(slots=True)
class Port:
    """One switch port: version-independent (its config bits are the same numbers in 1.0 and 1.3)."""

    port_no: int
    hw_addr: int
    name: str
    link_up: bool = True
    config: int = 0
    counters: PortCounters = field(default_factory=PortCounters)

    def copy(self) -> Port:
        """An independent port (its counters too), for state snapshots."""
        c = self.counters
        return Port(self.port_no, self.hw_addr, self.name, self.link_up, self.config,
                    PortCounters(c.rx_packets, c.tx_packets, c.rx_bytes, c.tx_bytes, c.rx_dropped, c.tx_dropped))

    @property
    def usable(self) -> bool:
        """Forwarding works only on a port whose link is up and that is not administratively down."""
        return self.link_up and not (self.config & ofp.OFPPC_PORT_DOWN)

    @property
    def state(self) -> int:
        return 0 if self.link_up else ofp.OFPPS_LINK_DOWN

    def phy(self) -> Any:
        """The port as OpenFlow 1.0 describes it (features reply, port status)."""
        return ofp_parser.OFPPhyPort(
            # hw_addr as text, the form os-ken's own parser gives (and its JSON expects)
            self.port_no, int_to_mac(self.hw_addr), self.name.encode()[:15], self.config,
            self.state, PORT_FEATURES, PORT_FEATURES, PORT_FEATURES, 0)


@dataclass(slots=True)
class Buffered:
    """A packet kept in a switch buffer until a PACKET_OUT or FLOW_MOD names its id."""

    packet: Packet
    in_port: int
    tag: Any


@dataclass(frozen=True, slots=True)
class SwitchLimits:
    """How the switches of a network differ from today's Open vSwitch, where controllers depend on it.

    ``buffer_packets`` > 0: every PACKET_IN is buffered, up to that many at
    once (Open vSwitch before 2.7; POX's l2_multi and l3_learning expect
    it).  ``table_size`` > 0: a FLOW_MOD ADD that would grow a table past it
    is refused with ALL_TABLES_FULL.  0 means off.  A trace header records
    the limits (``extra["switch"]``) so replays run the same switches.
    """

    buffer_packets: int = 0
    table_size: int = 0

    def to_json(self) -> dict[str, int]:
        return {k: v for k, v in (("buffer_packets", self.buffer_packets), ("table_size", self.table_size)) if v}

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> SwitchLimits:
        """The limits a trace header recorded (untrusted: anything but counts >= 0 is refused)."""
        d = d or {}
        values = [d.get(k, 0) if isinstance(d, dict) else None for k in ("buffer_packets", "table_size")]
        if not isinstance(d, dict) or set(d) - {"buffer_packets", "table_size"} or not all(
                isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**31 for v in values):
            raise TraceFormatError(f"the trace header's switch limits {d!r} are not counts >= 0 of "
                                   "buffer_packets and table_size",
                                   "record the trace again, or fix 'switch' in its first line")
        return cls(*values)

    def overridden(self, buffer_packets: int | None = None, table_size: int | None = None) -> SwitchLimits:
        """These limits with the values given (not None) replaced."""
        return SwitchLimits(self.buffer_packets if buffer_packets is None else buffer_packets,
                            self.table_size if table_size is None else table_size)


class SwitchCore(Protocol):
    """The switch as a per-version part sees it: identity, ports, buffers and lineage tags."""

    dpid: int
    name: str
    n_buffers: int
    buffer_packets: int
    table_size: int
    sw_version: str
    ports: dict[int, Port]
    buffers: dict[int, Buffered]

    def recent_tag(self, data: bytes) -> Any:
        """The lineage tag of a recent packet-in with exactly these bytes."""

    def remember_packet_in(self, data: bytes, tag: Any) -> None:
        """Note a packet-in's bytes and tag, for a PACKET_OUT that resends them."""

    def buffer(self, packet: Packet, in_port: int, tag: Any) -> int:
        """Keep ``packet`` for a later PACKET_OUT or FLOW_MOD naming the returned buffer id."""


__all__ = ["Buffered", "Emit", "Port", "PortCounters", "SwitchCore", "SwitchLimits", "ToController",
           "port_hw_addr"]
