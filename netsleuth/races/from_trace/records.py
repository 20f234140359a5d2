"""The builder's records and state: arrivals, PACKET_INs, emitters and host receptions it looks
back on, kept per switch or host (the latest ``_RECENT``), and the ids, events and flow mods
every causality rule of the package docstring uses.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from os_ken.ofproto import ofproto_v1_0 as ofp
from os_ken.ofproto import ofproto_v1_3 as ofp13

from netsleuth.races.events import (
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


def _covers_packet(fm: Any, packet: PoxMatch | dict[str, int] | None) -> bool:
    """Does a flow mod's match cover a PACKET_IN's packet (1.0: POX semantics; 1.3: its OXM fields)?

    A packet and a flow mod of different versions never cover each other.
    """
    if packet is None:
        return False
    if isinstance(packet, dict):
        return not isinstance(fm, PoxFlowMod) and bool(fm.match.matches(packet))
    return isinstance(fm, PoxFlowMod) and bool(fm.match.matches_with_wildcards(packet))


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


class _BuilderBase:
    """The builder's state and what every rule uses: ids, events, the flow mod behind each entry."""

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
