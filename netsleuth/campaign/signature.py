"""Bug signatures: what a persistent violation says about the bug, without what varies between seeds.

Eighty seeds that hit the same bug must make one bucket, not eighty.  Two
recordings of one bug differ in everything incidental -- sequence numbers,
xids, times, which host moved where, the MACs, IPs and port numbers in the
offending rule -- and agree on what the bug is: which invariant broke, the
*shape* of the rule at fault (which fields it matches, whether it outputs to
one port or floods), the class of headers it mishandles (unicast, broadcast),
and why the packets die (the rule's port is where a host no longer is, a link
that failed, a switch that is down).  A signature keeps exactly those, read
from the violation and from the network state rebuilt at the moment of the
violation (world/rebuild.py), and names them in a sentence such as::

    blackholes: a rule matching in_port,dl_src,dl_dst outputs unicast headers to a
    port a host left (inputs: host_migration)

Its id is a hash of the parts, so equal parts are one bucket, on any machine.

A fuzz run that stops at its first persistent violation often records
several at once, all consequences of the same bug (a blackhole also makes a
pair of hosts unreachable).  The run's bug is the one of its first
persistent round that explains the others best: a controller's traceback or a
refused message first (what the controller then failed to install follows from it),
then loops, then blackholes, then the rest (:data:`PRECEDENCE`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from netsleuth.model.addr import int_to_mac, ip_to_int, mac_to_int
from netsleuth.model.packet import Packet
from netsleuth.trace import schema as ts
from netsleuth.world.rebuild import rebuild
from netsleuth.world.world import World

PRECEDENCE = ("exceptions", "openflow-errors", "loops", "dataplane-loops", "blackholes", "reachability", "isolation",
              "delivery", "liveness")
OFPP_FLOOD, OFPP_ALL, OFPP_CONTROLLER = 0xFFFB, 0xFFFC, 0xFFFD
_RULE = re.compile(r"rule (?P<match>\S+) priority \d+ (?P<rest>.*)$")
_DROPPED_AT = re.compile(r"dropped at (?P<sw>\S+) \((?P<why>.*?)\)(?: \(path [^)]*\))?$")
_OUTPUT = re.compile(r"output:(\d+)")


@dataclass(frozen=True)
class Signature:
    """What identifies one bug; ``id`` is the bucket key."""

    invariant: str
    parts: tuple[tuple[str, str], ...]   # (name, value) in a fixed order
    text: str

    @property
    def id(self) -> str:
        blob = json.dumps([self.invariant, list(self.parts)])
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "invariant": self.invariant, "parts": dict(self.parts), "text": self.text}


@dataclass(frozen=True)
class JobBug:
    """A run's bug: its signature, which persistent violation it is (for minimize --violation), and
    the other signatures of the same round."""

    signature: Signature
    violation_index: int
    message: str
    others: tuple[Signature, ...]


def job_bug(header: ts.TraceHeader, events: list[ts.Event]) -> JobBug | None:
    """The bug of a fuzz run's trace, or None when it recorded no persistent violation."""
    persistent = [e for e in events if isinstance(e, ts.Violation) and e.persistent]
    if not persistent:
        return None
    first_round = persistent[0].details.get("confirmed_round", persistent[0].details.get("round"))
    same_round = [(i, v) for i, v in enumerate(persistent)
                  if v.details.get("confirmed_round", v.details.get("round")) == first_round]
    state = _StateAt(header, events)
    sigs = [(i, v, signature_of(v, state)) for i, v in same_round]
    sigs.sort(key=lambda t: (_rank(t[1].invariant), t[0]))
    index, violation, sig = sigs[0]
    others = tuple(dict.fromkeys(s for _i, _v, s in sigs[1:] if s != sig))
    return JobBug(sig, index, violation.message, others)


def _rank(invariant: str) -> int:
    return PRECEDENCE.index(invariant) if invariant in PRECEDENCE else len(PRECEDENCE)


class _StateAt:
    """The network rebuilt just before a violation, and what the trace says happened before it."""

    def __init__(self, header: ts.TraceHeader, events: list[ts.Event]) -> None:
        self.header, self.events = header, events
        self._cache: dict[int, World] = {}

    def world(self, seq: int) -> World:
        if seq not in self._cache:
            self._cache[seq] = rebuild(self.header, self.events, lambda e: e.seq >= seq).world
        return self._cache[seq]

    def host_ports_before(self, seq: int, world: World) -> set[tuple[str, int]]:
        """Every (switch, port) a host was plugged into at some time before ``seq``."""
        ports = {world.topology.host_location(h.name) for h in world.topology.hosts}
        for e in self.events:
            if e.seq >= seq:
                break
            if isinstance(e, ts.HostMigration):
                ports |= {(e.old_switch, e.old_port), (e.new_switch, e.new_port)}
        return ports


def signature_of(v: ts.Violation, state: _StateAt) -> Signature:
    if v.invariant == "dataplane-loops":
        return _observed_loop(v, state)
    if v.invariant == "loops":
        return _rule_loop(v, state)
    if v.invariant in ("blackholes", "reachability"):
        return _drop(v, state)
    if v.invariant in ("exceptions", "openflow-errors") and v.details.get("group"):
        return _observed(v)
    return _generic(v)


def _observed(v: ts.Violation) -> Signature:
    """A traceback (type and the app's frame) or a refused message (error and message type): its identity
    is already free of names, so one bug found on any switch, with any MAC in the message, is one bucket."""
    group = [str(g) for g in v.details["group"]]
    if v.invariant == "exceptions":
        kind, *frame = group
        text = f"{kind} in " + (f"{frame[1]} ({frame[0]}:{frame[2]})" if len(frame) == 3 else "the controller")
        parts = (("exception", kind), ("frame", ":".join(frame)))
    else:
        text = f"ERROR {group[0]}/{group[1]} answering {group[2]}"
        parts = (("error", f"{group[0]}/{group[1]}"), ("request", group[2]))
    return Signature(v.invariant, parts, f"{v.invariant}: {text}")


# --------------------------------------------------------------------------- drops
def _drop(v: ts.Violation, state: _StateAt) -> Signature:
    if v.invariant == "blackholes":
        where = str(v.details.get("where", ""))
        whys = [str(w) for w in v.details.get("why", [])]
    elif v.details.get("dropped_at"):  # a grouped reachability violation names where and why
        where, whys = str(v.details["dropped_at"]), [str(w) for w in v.details.get("why", [])]
    else:
        m = _DROPPED_AT.search(v.message)
        if m is None:  # unreachable for another reason (no path, punted): its wording without names
            return _generic(v)
        where, whys = m.group("sw"), [m.group("why")]
    world = state.world(v.seq)
    had_host = state.host_ports_before(v.seq, world)
    reasons, kinds, shapes = set(), set(), set()
    for why in whys:
        shape, reason, kind = _drop_reason(why, where, world, had_host)
        shapes.add(shape)
        reasons.add(reason)
        kinds |= kind
    header = _header_class(v.details.get("witness"), v.details.get("header_space"))
    parts = (("rule", " / ".join(sorted(shapes))), ("headers", header), ("cause", " / ".join(sorted(reasons))),
             ("inputs", ",".join(sorted(kinds))))
    verb = "drops" if v.invariant == "blackholes" else "cuts hosts off:"
    text = f"{v.invariant}: {parts[0][1]} {verb} {header} headers: {parts[2][1]}"
    return Signature(v.invariant, parts, text + (f" (inputs: {parts[3][1]})" if kinds else ""))


def _drop_reason(why: str, where: str, world: World, had_host: set[tuple[str, int]]) -> tuple[str, str, set[str]]:
    """(rule shape, why its packets die, the input kinds that made it so) for one drop reason."""
    if why == "switch is down":
        return "no rule", "the switch is down", {"switch_failure"}
    m = _RULE.match(why)
    if m is None:  # "output to special port ...", "port N has no live link": the wording is already generic
        ports = [int(p) for p in re.findall(r"port (\d+)", why)]
        found = {_port_cause(where, p, world, had_host) for p in ports}
        return "no rule", re.sub(r"\d+", "N", why), {k for _c, ks in found for k in ks}
    shape = _rule_shape(m.group("match"), m.group("rest"))
    rest = m.group("rest")
    if "has no actions" in rest:
        return shape, "the rule drops them (no actions)", set()
    if "own in port" in rest:
        return shape, "the rule outputs to the port they came in on", set()
    causes = [_port_cause(where, int(p), world, had_host) for p in _OUTPUT.findall(rest)]
    text = " and ".join(sorted({c for c, _k in causes})) or "no live port"
    return shape, f"the rule outputs to {text}", {k for _c, ks in causes for k in ks}


def _port_cause(switch: str, port: int, world: World, had_host: set[tuple[str, int]]) -> tuple[str, tuple[str, ...]]:
    """What is (not) behind a switch port now, in words, and the input kinds that explain it."""
    peer = world.peer.get((switch, port))
    if peer is not None and peer[0] in world.switches:
        if not world.link_up.get(world.link_key(switch, port), True):
            return "a port whose link failed", ("link_failure",)
        if not world.switch_up.get(peer[0], True):
            return "a port towards a failed switch", ("switch_failure",)
        return "a port with a live link", ()
    if peer is not None:
        return "a host's port", ()
    if (switch, port) in had_host:
        return "a port a host left", ("host_migration",)
    return "a port with nothing attached", ()


def _rule_shape(match: str, rest: str) -> str:
    """``a rule matching in_port,dl_src,dl_dst`` (or ``an exact-match rule``), field names only."""
    fields = [f.split("=", 1)[0] for f in match.split(",") if "=" in f] if match != "catch-all" else []
    if len(fields) >= 12:
        return "an exact-match rule"
    return f"a rule matching {','.join(fields)}" if fields else "a catch-all rule"


def _header_class(witness: Any, space: Any) -> str:
    """unicast / broadcast / multicast by the destination MAC the violation is about (no addresses)."""
    dst = witness.get("dl_dst") if isinstance(witness, dict) else None
    if dst is None and isinstance(space, str):
        m = re.search(r"dl_dst=([0-9a-f:]{17})", space)
        dst = m.group(1) if m else None
    return _mac_class(dst)


def _mac_class(mac: str | None) -> str:
    if not mac:
        return "any"
    value = mac_to_int(mac)
    if value == 0xFFFFFFFFFFFF:
        return "broadcast"
    return "multicast" if (value >> 40) & 1 else "unicast"


# --------------------------------------------------------------------------- loops
def _observed_loop(v: ts.Violation, state: _StateAt) -> Signature:
    """A packet seen twice at one (switch, port): how each hop of the cycle forwarded it."""
    hops = [str(h) for h in v.details.get("path", [])]
    cycle = _cycle(hops)
    packet = _looping_packet(v, state.events)
    world = state.world(v.seq)
    ways = sorted({_forwarding(h, packet, world, state.events) for h in cycle}) or ["unknown"]
    header = _mac_class(int_to_mac(packet.eth_dst)) if packet is not None else "any"
    parts = (("forwarding", " + ".join(ways)), ("headers", header), ("inputs", "traffic"))
    text = (f"dataplane-loops: {header} packets forwarded by {parts[0][1]} come back to a port they passed "
            "(a forwarding cycle; inputs: traffic)")
    return Signature(v.invariant, parts, text)


def _rule_loop(v: ts.Violation, state: _StateAt) -> Signature:
    """Header space that loops over the flow tables: the rules' actions along the cycle."""
    cycle = _cycle([str(h) for h in v.details.get("path", [])])
    witness = v.details.get("witness") if isinstance(v.details.get("witness"), dict) else None
    world = state.world(v.seq)
    ways = sorted({_rule_kind(world, h, witness) for h in cycle}) or ["unknown"]
    header = _header_class(witness, v.details.get("header_space"))
    parts = (("forwarding", " + ".join(ways)), ("headers", header))
    return Signature(v.invariant, parts, f"loops: {header} headers cycle through {parts[0][1]}")


def _cycle(hops: list[str]) -> list[str]:
    """The hops from the first one that repeats to the end (the path's lead-in dropped)."""
    seen: dict[str, int] = {}
    for i, h in enumerate(hops):
        if h in seen:
            return hops[seen[h]:i]
        seen[h] = i
    return hops


def _split_hop(hop: str) -> tuple[str, int] | None:
    node, _, port = hop.rpartition(":")
    return (node, int(port)) if node and port.isdigit() else None


def _looping_packet(v: ts.Violation, events: list[ts.Event]) -> Packet | None:
    pid = v.details.get("pid")
    for e in events:
        if e.seq >= v.seq:
            break
        if isinstance(e, ts.PacketArrival) and e.pid == pid:
            return Packet.from_json(e.packet)
    return None


def _forwarding(hop: str, packet: Packet | None, world: World, events: list[ts.Event]) -> str:
    """How the switch at ``hop`` sent the packet on: a rule (flooding or not) or the controller's packet-out.

    The packet-out is looked for in the whole trace: the loop is recorded when a copy comes back,
    which may be before the controller has answered for every switch the other copies passed."""
    where = _split_hop(hop)
    if where is None or packet is None or where[0] not in world.switches:
        return "unknown"
    switch, in_port = where
    table = world.switches[switch].table
    entry = table.peek(packet.match_fields(in_port)) if len(table) else None
    if entry is not None:
        return _actions_kind([getattr(a, "port", None) for a in entry.actions], "rule")
    data = base64.b64encode(packet.to_bytes()).decode()
    dpid = world.switches[switch].dpid
    for e in events:
        if isinstance(e, ts.ControlToSwitch) and e.dpid == dpid and e.msg.get("type") == "PACKET_OUT":
            body = e.msg.get("body", {}).get("OFPPacketOut", {})
            if body.get("in_port") == in_port and body.get("data") == data:
                ports = [a.get("OFPActionOutput", {}).get("port") for a in body.get("actions", [])]
                return _actions_kind(ports, "packet-out")
    return "a packet-in never answered"


def _rule_kind(world: World, hop: str, witness: dict | None) -> str:
    where = _split_hop(hop)
    if where is None or witness is None or where[0] not in world.switches:
        return "unknown"
    try:
        fields = (where[1], mac_to_int(witness["dl_src"]), mac_to_int(witness["dl_dst"]), witness["dl_vlan"],
                  witness["dl_vlan_pcp"], witness["dl_type"], witness["nw_tos"], witness["nw_proto"],
                  ip_to_int(witness["nw_src"]), ip_to_int(witness["nw_dst"]), witness["tp_src"], witness["tp_dst"])
    except (KeyError, TypeError, ValueError):
        return "unknown"
    entry = world.switches[where[0]].table.peek(fields)
    if entry is None:
        return "unknown"
    return _actions_kind([getattr(a, "port", None) for a in entry.actions], "rule")


def _actions_kind(ports: list[Any], via: str) -> str:
    if any(p in (OFPP_FLOOD, OFPP_ALL) for p in ports):
        return f"flooding {via}"
    outs = [p for p in ports if isinstance(p, int)]
    return f"{via} to {'one port' if len(outs) == 1 else 'several ports'}" if outs else f"{via} without output"


# --------------------------------------------------------------------------- the rest
def _generic(v: ts.Violation) -> Signature:
    """Other invariants: the message with every name, address and number taken out."""
    text = re.sub(r"\b[hs]\d+\b", "X", v.message)
    text = re.sub(r"([0-9a-f]{2}:){5}[0-9a-f]{2}", "MAC", text)
    text = re.sub(r"\d+\.\d+\.\d+\.\d+", "IP", text)
    text = re.sub(r"\d+(\.\d+)?", "N", text)
    return Signature(v.invariant, (("message", text),), f"{v.invariant}: {text}")


__all__ = ["Signature", "JobBug", "job_bug", "signature_of", "PRECEDENCE"]
