"""The in-process controller app API (NOX style) the model checker drives.

An app is a subclass of :class:`App`.  Its handlers are the NOX events
NICE's apps were written against; it acts on the network only through the
calls below (``install_rule``, ``send_packet_out``, ``flood``, ...), which
queue OpenFlow messages on the model's control channels -- they take effect
when the model checker lets the switch process them, which is where the
races live.

**All app state lives in the app object's attributes.**  The model checker
copies the app before running a handler in a new state (copy-on-write: the
parent state's app is never mutated) and hashes :meth:`App.key` as part of
the system state.  The defaults (deep copy of ``__dict__``, a canonical
freeze of it with dicts sorted by key) work for plain data; an app on a hot
path overrides :meth:`copy` and :meth:`key` (see ``apps/pyswitch.py``).
Attributes whose names start with ``_`` are not state (the engine's handle).

**Time and randomness come from netsleuth**: :meth:`App.now` reads the
model's clock and :meth:`App.random` draws from a generator whose state is
part of the app's hashed state, so a handler is a deterministic function of
the state it runs in -- what replaying a counterexample relies on.
"""

from __future__ import annotations

import copy as _copy
from typing import Any

from netsleuth.model.actions import Output
from netsleuth.model.freeze import freeze
from netsleuth.model.match import Match
from netsleuth.model.ofdp import ofp
from netsleuth.model.packet import Packet
from netsleuth.nice import messages as m
from netsleuth.nice.errors import AppError

NO_BUFFER = m.NO_BUFFER
OFPP_FLOOD = ofp.OFPP_FLOOD
DEFAULT_PRIORITY = 0x8000


class ControllerAPI:
    """What one handler invocation may do; the engine reads ``out`` and ``timers`` afterwards."""

    __slots__ = ("out", "timers", "now_value", "links_value", "uses_stats")

    def __init__(self, now: float, links: tuple, uses_stats: bool) -> None:
        self.out: list[tuple[int, Any]] = []      # (dpid, controller->switch message), in issue order
        self.timers: list[str] = []
        self.now_value = now
        self.links_value = links
        self.uses_stats = uses_stats


class App:
    """Base class of in-process controller apps (see the module docstring)."""

    #: The name used in ``app:NAME`` specs and reports.
    name = "app"
    #: Set True if the app requests statistics: counters then become part of the hashed state.
    uses_stats = False
    #: The OpenFlow wire version the switches speak to the app: 1 (1.0).  Hosted os-ken apps that
    #: speak only 1.3 say 4 and take the 1.3 events below; this API's calls build 1.0 messages.
    openflow_version = 1

    _api: ControllerAPI | None = None

    # ------------------------------------------------------------------ handlers
    def datapath_join(self, dpid: int, ports: tuple[int, ...]) -> None:
        """A switch connected (its FEATURES_REPLY arrived); ``ports`` are its port numbers."""

    def datapath_leave(self, dpid: int) -> None:
        """A switch disconnected."""

    def packet_in(self, dpid: int, in_port: int, reason: int, total_len: int, buffer_id: int,
                  packet: Packet) -> None:
        """A PACKET_IN: the switch buffered the frame as ``buffer_id`` (or NO_BUFFER)."""

    def port_status(self, dpid: int, reason: int, port_no: int, link_up: bool) -> None:
        """A port was added, removed or changed state."""

    def flow_removed(self, dpid: int, match: Match, priority: int, reason: int, cookie: int) -> None:
        """A flow with OFPFF_SEND_FLOW_REM expired or was deleted."""

    def port_stats_in(self, dpid: int, stats: tuple) -> None:
        """Reply to :meth:`request_port_stats`: ((port_no, rx_pkts, tx_pkts, rx_bytes, tx_bytes), ...)."""

    def timer(self, name: str) -> None:
        """A timer posted with :meth:`post_timer` fired."""

    def packet_in13(self, dpid: int, msg: m.PacketIn) -> None:
        """OpenFlow 1.3: a PACKET_IN, whole (its table id, cookie and lineage too)."""
        raise AppError(f"app {self.name} got an OpenFlow 1.3 event but speaks 1.0",
                       "leave openflow_version at 1 for apps written against this API")

    def message13(self, dpid: int, data: bytes) -> None:
        """OpenFlow 1.3: any other switch message, as the bytes the switch sent."""
        raise AppError(f"app {self.name} got an OpenFlow 1.3 event but speaks 1.0",
                       "leave openflow_version at 1 for apps written against this API")

    def is_same_flow(self, a: Packet, b: Packet) -> bool:
        """FLOW-IR's predicate: do two packets belong to one group?  Default: same MAC pair."""
        return {a.eth_src, a.eth_dst} == {b.eth_src, b.eth_dst}

    # ------------------------------------------------------------------ state
    def copy(self) -> App:
        """An independent copy of the app's state (override for speed)."""
        new = object.__new__(type(self))
        for k, v in self.__dict__.items():
            if not k.startswith("_") or k == "_rng":
                new.__dict__[k] = _copy.deepcopy(v)
        return new

    def key(self) -> Any:
        """A canonical hashable summary of everything that affects the app's future."""
        return freeze({k: v for k, v in self.__dict__.items() if not k.startswith("_") or k == "_rng"})

    # ------------------------------------------------------------------ calls
    def _a(self) -> ControllerAPI:
        api = self._api
        if api is None:
            raise AppError(f"app {self.name} called the API outside a handler",
                           "only call install_rule/send_packet_out/... from inside a handler")
        return api

    def install_rule(self, dpid: int, match: Match, actions: tuple | list, *, priority: int = DEFAULT_PRIORITY,
                     idle_timeout: int = 0, hard_timeout: int = 0, buffer_id: int = NO_BUFFER,
                     flags: int = 0, cookie: int = 0) -> None:
        """Queue an OFPFC_ADD; with ``buffer_id`` the switch then runs the buffered packet through it."""
        self._a().out.append((dpid, m.FlowMod(ofp.OFPFC_ADD, match, priority, tuple(actions), idle_timeout,
                                              hard_timeout, buffer_id, flags, cookie)))

    def delete_rules(self, dpid: int, match: Match, *, strict: bool = False, priority: int = 0,
                     out_port: int = ofp.OFPP_NONE) -> None:
        """Queue an OFPFC_DELETE(_STRICT)."""
        cmd = ofp.OFPFC_DELETE_STRICT if strict else ofp.OFPFC_DELETE
        self._a().out.append((dpid, m.FlowMod(cmd, match, priority, (), out_port=out_port)))

    def send_packet_out(self, dpid: int, buffer_id: int, actions: tuple | list, in_port: int,
                        data: bytes = b"") -> None:
        """Queue a PACKET_OUT of a buffered packet (or of ``data`` when buffer_id is NO_BUFFER)."""
        self._a().out.append((dpid, m.PacketOut(buffer_id, in_port, tuple(actions), data)))

    def flood(self, dpid: int, buffer_id: int, in_port: int, data: bytes = b"") -> None:
        """PACKET_OUT to OFPP_FLOOD."""
        self.send_packet_out(dpid, buffer_id, (Output(OFPP_FLOOD),), in_port, data)

    def request_port_stats(self, dpid: int) -> None:
        """Queue a port stats request; the reply arrives in :meth:`port_stats_in`."""
        api = self._a()
        if not api.uses_stats:
            raise AppError(f"app {self.name} requested port stats but does not declare uses_stats",
                           "set uses_stats = True on the app class (counters then become part of the state)")
        api.out.append((dpid, m.PortStatsRequest()))

    def barrier(self, dpid: int) -> None:
        self._a().out.append((dpid, m.Barrier()))

    def post_timer(self, name: str) -> None:
        """Ask for :meth:`timer` (``name``) to run later; when is a nondeterministic choice."""
        self._a().timers.append(name)

    def now(self) -> float:
        return self._a().now_value

    def links(self) -> tuple[tuple[int, int, int, int], ...]:
        """Switch-to-switch links (dpid1, port1, dpid2, port2), as a discovery module would report."""
        return self._a().links_value

    def random(self) -> float:
        """A float in [0, 1) from a generator whose state is part of the app state (splitmix64)."""
        x = (getattr(self, "_rng", 0x9E3779B97F4A7C15) + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        self._rng = x
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        return ((z ^ (z >> 31)) >> 11) / float(1 << 53)
