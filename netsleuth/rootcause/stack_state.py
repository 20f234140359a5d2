"""Faucet's stack as Faucet sees it: per stack port, whether LLDP from the configured peer came in lately.

Faucet brings a stack port up only once it has received, on that port, the
LLDP beacon its peer dp sends out of the other end (as a PACKET_IN), and
takes it down again when no beacon came for ``max_lldp_lost`` beacon
intervals (3 x 5 s unless the config says otherwise). A beacon naming
another dp or port than the config's ``stack: {dp, port}`` means wrong
cabling. Traffic across the stack before the ports are up is lost, which
is why a Faucet run needs a warm-up; this module lets ``step``'s
``show ports`` say where the stack stands at any point of a trace, from
the PACKET_INs the trace recorded and the config kept in its header.

Pure: events in (``observe``), rows out (``rows``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from netsleuth.invariants.policy.faucet import FaucetPolicy
from netsleuth.model.packet import LLDP, Packet
from netsleuth.openflow.codec import msg_from_json
from netsleuth.trace import schema as ts

TLV_SYSTEM_NAME = 5


@dataclass(frozen=True, slots=True)
class Beacon:
    """One LLDP beacon a switch handed to the controller: when, and which dp/port sent it."""

    t: float
    dp: str | None
    port: int | None


@dataclass(frozen=True, slots=True)
class StackPortState:
    switch: str
    port: int
    peer: str              # "s2:3" as configured
    state: str             # up | down | bad | init (Faucet's words for: fine, timed out, miscabled, never seen)
    last_seen: str         # "2.4 s ago from s2:3" or "never"


def _system_name(tlvs: bytes) -> str | None:
    off = 0
    while off + 2 <= len(tlvs):
        kind, length = tlvs[off] >> 1, ((tlvs[off] & 1) << 8) | tlvs[off + 1]
        if kind == TLV_SYSTEM_NAME:
            return tlvs[off + 2:off + 2 + length].decode(errors="replace")
        if kind == 0:
            break
        off += 2 + length
    return None


def _port_id(raw: bytes) -> int | None:
    """Faucet's port id TLV: subtype 5 (interface name) with the port number as text."""
    if len(raw) > 1 and raw[0] == 5 and raw[1:].isdigit():
        return int(raw[1:])
    return None


@dataclass
class StackWatch:
    """The last LLDP beacon each (switch, port) passed to a controller."""

    last: dict[tuple[str, int], Beacon] = field(default_factory=dict)
    by_dpid: dict[int, str] = field(default_factory=dict)

    def observe(self, e: ts.Event) -> None:
        if not isinstance(e, ts.ControlToController) or e.msg.get("type") != "PACKET_IN":
            return
        sw = self.by_dpid.get(e.dpid)
        if sw is None:
            return
        msg = msg_from_json(e.msg)
        match = getattr(msg, "match", None)     # OpenFlow 1.3 carries in_port in the match, 1.0 in the message
        in_port = match.get("in_port") if match is not None else getattr(msg, "in_port", None)
        pkt = Packet.from_bytes(bytes(msg.data or b""))
        if not isinstance(pkt.l3, LLDP) or not isinstance(in_port, int):
            return
        self.last[(sw, in_port)] = Beacon(e.t, _system_name(pkt.l3.extra_tlvs), _port_id(pkt.l3.port_id))

    def rows(self, policy: FaucetPolicy, now: float, switches: list[str] | None = None) -> list[StackPortState]:
        out = []
        for (sw, port), sp in policy.stack.items():
            if switches and sw not in switches:
                continue
            peer = f"{sp.peer[0]}:{sp.peer[1]}" if sp.peer else "? (not in the topology)"
            b = self.last.get((sw, port))
            if b is None:
                out.append(StackPortState(sw, port, peer, "init", "never"))
                continue
            sender_sw = policy.dp_switch.get(b.dp or "", b.dp or "?")
            sender = f"{sender_sw}:{b.port if b.port is not None else '?'}"
            age = now - b.t
            if sp.peer is None or (sender_sw, b.port) != sp.peer:
                state = "bad"
            elif age >= sp.timeout:
                state = "down"
            else:
                state = "up"
            out.append(StackPortState(sw, port, peer, state, f"{age:.1f} s ago from {sender}"))
        return out


def watch_events(events: list[ts.Event], by_dpid: dict[int, str]) -> StackWatch:
    w = StackWatch(by_dpid=by_dpid)
    for e in events:
        w.observe(e)
    return w


def root_text(policy: FaucetPolicy) -> str:
    if policy.stack_root is None:
        return "no dp has a stack priority: no stack root"
    return f"stack root {policy.stack_root} (the best stack priority in the config)"


__all__ = ["StackPortState", "StackWatch", "root_text", "watch_events"]
