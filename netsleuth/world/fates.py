"""What became of each frame a host sent: where it was punted, dropped, lost or delivered.

A failed ping is explained from this (jobs/ping_why.py): a frame's copies share its lineage
pid, so the log keeps, per pid, what each switch did with it and which hosts got it.  It is
kept only when a job asks for it (``Network.fates``), and bounded: the oldest frames are
forgotten past ``capacity``.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from netsleuth.model import switch as sw
from netsleuth.model.packet import Packet


@dataclass(frozen=True, slots=True)
class Fate:
    """One thing that happened to a frame: ``kind`` is punted (a PACKET_IN to the controller),
    dropped (a switch sent it nowhere; ``why`` names the rule), lost (a port with no live link),
    forwarded, or delivered (to host ``node``)."""

    node: str
    kind: str
    t: float
    why: str = ""


@dataclass(slots=True)
class Sent:
    pid: int
    host: str
    packet: Packet
    t: float
    fates: list[Fate] = field(default_factory=list)


class FateLog:
    def __init__(self, capacity: int = 20_000) -> None:
        self.capacity = capacity
        self.frames: OrderedDict[int, Sent] = OrderedDict()

    def sent(self, host: str, pid: int, packet: Packet, now: float) -> None:
        self.frames[pid] = Sent(pid, host, packet, now)
        while len(self.frames) > self.capacity:
            self.frames.popitem(last=False)

    def _add(self, pid: int, fate: Fate) -> None:
        s = self.frames.get(pid)
        if s is not None:
            s.fates.append(fate)

    def delivered(self, host: str, pid: int, now: float) -> None:
        self._add(pid, Fate(host, "delivered", now))

    def lost(self, node: str, port: int, pid: int, now: float) -> None:
        self._add(pid, Fate(node, "lost", now, f"port {port} has no live link"))

    def at_switch(self, switch: sw.Switch, in_port: int, packet: Packet, pid: int, outs: list[Any],
                  now: float) -> None:
        if pid not in self.frames:
            return
        punted = any(isinstance(o, sw.ToController) and type(o.msg).__name__ == "OFPPacketIn" for o in outs)
        emitted = any(isinstance(o, sw.Emit) for o in outs)
        if punted:
            self._add(pid, Fate(switch.name, "punted", now))
        if emitted:
            self._add(pid, Fate(switch.name, "forwarded", now))
        if not punted and not emitted:
            self._add(pid, Fate(switch.name, "dropped", now, drop_reason(switch, in_port, packet, now)))

    def since(self, t: float) -> list[Sent]:
        """The frames sent at or after ``t``, oldest first."""
        return [s for s in self.frames.values() if s.t >= t]


def drop_reason(switch: sw.Switch, in_port: int, packet: Packet, now: float) -> str:
    """Which rule sent a packet nowhere, in the switch's own terms (the tables have not changed since)."""
    port = switch.ports.get(in_port)
    if port is None or not port.usable:
        return f"its port {in_port} is down"
    if switch.of13 is not None:
        return _drop_reason13(switch, in_port, packet, now)
    entry = switch.table.peek(packet.match_fields(in_port))
    if entry is None:
        return "no rule matched and no controller took the packet-in"
    acts = ",".join(str(a) for a in entry.actions) or "no actions"
    return f"rule priority={entry.priority} {entry.match or 'any'} -> {acts}" + _why_nothing(switch, entry.actions,
                                                                                             in_port)


def _drop_reason13(switch: sw.Switch, in_port: int, packet: Packet, now: float) -> str:
    from netsleuth.model.of13.frame import Frame

    assert switch.of13 is not None
    result = switch.of13.pipeline.copy().process(Frame.from_packet(packet), in_port, now)
    if not result.path:
        return "its pipeline sent it nowhere"
    table, entry = result.path[-1]
    if entry is None:
        return f"table {table} has no matching rule and no table-miss entry (dropped)"
    ins = entry.instructions
    acts = (*(getattr(ins, "apply", ()) or ()), *(getattr(ins, "write", ()) or ()))
    return (f"table {table} rule priority={entry.priority} {entry.match or 'any'} -> {_instructions(ins)}"
            + _why_nothing(switch, acts, in_port))


def _why_nothing(switch: sw.Switch, actions: Any, in_port: int) -> str:
    """Why a rule's outputs sent nothing: the packet's own in port (OpenFlow needs OFPP_IN_PORT for that),
    or ports that are down or gone."""
    ports = [p for p in (getattr(a, "port", None) for a in actions) if isinstance(p, int)]
    if in_port in ports:
        return f" (its own in port {in_port}: nothing is sent)"
    dead = [p for p in ports if p < 0xFF00 and (p not in switch.ports or not switch.ports[p].usable)]
    if dead:
        return " (" + ", ".join(f"port {p} is {'down' if p in switch.ports else 'gone'}" for p in dead) + ")"
    return ""


def _instructions(ins: Any) -> str:
    parts = []
    for name in ("apply", "write"):
        acts = getattr(ins, name, ()) or ()
        if acts:
            parts.append(f"{name}:" + ",".join(_action(a) for a in acts))
    if getattr(ins, "clear", False):
        parts.append("clear")
    if getattr(ins, "goto", None) is not None:
        parts.append(f"goto:{ins.goto}")
    return ";".join(parts) or "drop"


def _action(a: Any) -> str:
    port = getattr(a, "port", None)
    return type(a).__name__.lower() + (f":{port}" if port is not None else "")
