"""Loops, blackholes and all-pairs reachability from the flow tables and live links.

For every ordered pair of hosts the packet the first would send to the
second is pushed through the flow tables (every FLOOD copy followed) without
running anything: this is what the data plane does *now*, independent of
what traffic happened to be sent. A table miss hands the packet to the
controller; for a reactive controller that is the normal path, so it counts
as "delegated", not as a drop, as long as that controller is alive and
connected. Host pairs that are physically partitioned (no live path) are
excluded. The header-space versions that cover every header are in
``headerspace.checks`` (``check_headerspace_loops`` ...); these, ``check_packet_*``,
check the headers hosts really use.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from netsleuth.invariants.finding import Finding
from netsleuth.invariants.view import NetworkView
from netsleuth.model.actions import Enqueue, Output
from netsleuth.model.ofdp import ofp
from netsleuth.model.packet import Packet, icmp_echo
from netsleuth.model.switch import forward


@dataclass(slots=True)
class PathOutcome:
    """Where one packet ends up when pushed through the current tables."""

    delivered: list[str] = field(default_factory=list)             # hosts that receive a copy
    punted: list[str] = field(default_factory=list)                # switches that send it to the controller
    drops: list[tuple[str, str]] = field(default_factory=list)     # (switch, why): blackholes
    filtered: list[tuple[str, str]] = field(default_factory=list)  # (switch, why): drop rules, on purpose
    loops: list[list[str]] = field(default_factory=list)           # hop lists "s1:2" that revisit a port
    hops: int = 0


def trace_packet(view: NetworkView, switch: str, in_port: int, packet: Packet,
                 max_copies: int = 10_000) -> PathOutcome:
    """Follow ``packet`` entering ``switch`` on ``in_port`` through the tables, every copy."""
    out = PathOutcome()
    work: list[tuple[str, int, Packet, tuple[tuple[str, int], ...]]] = [(switch, in_port, packet, ())]
    while work and out.hops < max_copies:
        node, port, pkt, hops = work.pop()
        out.hops += 1
        here = (node, port)
        if here in hops:
            out.loops.append([f"{n}:{p}" for n, p in hops + (here,)])
            continue
        hops = hops + (here,)
        s = view.switches[node]
        if not view.is_switch_up(node):
            out.drops.append((node, "switch is down"))
            continue
        entry = s.table.peek(pkt.match_fields(port))
        if entry is None:
            out.punted.append(node)
            continue
        outputs = forward(entry.actions, pkt, port, s.ports)
        if not outputs:
            lost = out.filtered if is_drop_rule(entry.actions) else out.drops
            lost.append((node, why_sends_nothing(entry, port)))
        for out_port, out_pkt, _ in outputs:
            if out_port == ofp.OFPP_CONTROLLER:
                out.punted.append(node)
                continue
            if out_port > ofp.OFPP_MAX:
                out.drops.append((node, f"output to special port {out_port:#x}"))
                continue
            peer = view.peer(node, out_port)
            if peer is None:
                out.drops.append((node, f"port {out_port} has no live link"))
                continue
            nxt, nxt_port = peer
            if nxt in view.switches:
                work.append((nxt, nxt_port, out_pkt, hops))
            else:
                out.delivered.append(nxt)
    # Follow copies in a stable order regardless of stack discipline.
    out.delivered.sort()
    return out


def is_drop_rule(actions: tuple) -> bool:
    """Whether an action list sends nowhere on purpose: it has no output at all.

    That is the controller *choosing* to drop (an ACL deny, a filter of some
    ethertype), not a blackhole.  A blackhole is a packet delivered nowhere
    although forwarding meant to deliver it: an output to a port with nothing
    attached, a down port or link, a switch that is down, its own in port."""
    return not any(isinstance(a, (Output, Enqueue)) for a in actions)


def why_sends_nothing(entry, in_port: int) -> str:
    rule = f"rule {entry.match or 'catch-all'} priority {entry.priority}"
    if not entry.actions:
        return f"{rule} has no actions (drop)"
    if is_drop_rule(entry.actions):
        return f"{rule} has no output ({','.join(str(a) for a in entry.actions)}: drop)"
    acts = ",".join(str(a) for a in entry.actions)
    if any(getattr(a, "port", None) == in_port for a in entry.actions):
        return f"{rule} outputs to its own in port {in_port} ({acts}), which OpenFlow 1.0 drops"
    return f"{rule} forwards to no live port ({acts})"


def _pair_packet(view: NetworkView, src: str, dst: str) -> Packet:
    a = view.topology.host(src)
    b = view.topology.host(dst)
    return icmp_echo(a.mac, b.mac, a.ip, b.ip, 1, 1)


def pair_outcomes(view: NetworkView) -> list[tuple[str, str, PathOutcome]]:
    """Trace the ICMP echo every host would send to every other, physically connected host."""
    component = view.live_components()
    results = []
    hosts = [h.name for h in view.topology.hosts]
    for src in hosts:
        sw_name, sw_port = view.host_location(src)
        for dst in hosts:
            if src == dst or component.get(src) != component.get(dst):
                continue
            if view.peer(sw_name, sw_port) is None:
                continue
            outcome = trace_packet(view, sw_name, sw_port, _pair_packet(view, src, dst))
            results.append((src, dst, outcome))
    return results


def controller_ok(view: NetworkView, switch: str) -> bool:
    dpid = view.topology.switch(switch).dpid
    if dpid not in view.connected_dpids:
        return False
    names = view.controllers_of.get(dpid)
    if names:
        return any(view.controllers_alive.get(n, False) for n in names)
    return any(view.controllers_alive.values())


def check_packet_loops(view: NetworkView, outcomes=None) -> list[Finding]:
    found: dict[tuple[str, ...], Finding] = {}
    for src, dst, o in (pair_outcomes(view) if outcomes is None else outcomes):
        for path in o.loops:
            cycle_switches = tuple(dict.fromkeys(h.split(":")[0] for h in path))
            if cycle_switches in found:
                continue
            found[cycle_switches] = Finding(
                "loops", f"packets {src} -> {dst} loop: {' -> '.join(path)}",
                hosts=(src, dst), switches=cycle_switches, details={"path": path})
    return list(found.values())


def check_packet_blackholes(view: NetworkView, outcomes=None) -> list[Finding]:
    findings = []
    for src, dst, o in (pair_outcomes(view) if outcomes is None else outcomes):
        if dst in o.delivered or o.punted or not o.drops:
            continue
        where, why = o.drops[0]
        findings.append(Finding(
            "blackholes", f"packets {src} -> {dst} are dropped at {where}: {why}",
            hosts=(src, dst), switches=tuple(dict.fromkeys(w for w, _ in o.drops)),
            details={"drops": [list(d) for d in o.drops]}))
    return findings


def check_packet_reachability(view: NetworkView, outcomes=None) -> list[Finding]:
    findings = []
    for src, dst, o in (pair_outcomes(view) if outcomes is None else outcomes):
        if dst in o.delivered:
            continue
        # Punted to a live controller, or dropped on purpose by a rule: the controller's choice.
        if (o.punted or o.filtered) and all(controller_ok(view, s) for s in o.punted):
            continue
        if o.loops:
            why = "they loop"
        elif o.punted:
            why = f"they go to a controller that is not connected ({', '.join(o.punted)})"
        elif o.drops:
            why = f"they are dropped at {o.drops[0][0]}"
        else:
            why = f"they are delivered to {', '.join(o.delivered) or 'nobody'}"
        findings.append(Finding("reachability", f"{src} cannot reach {dst}: {why}",
                                hosts=(src, dst), switches=tuple(dict.fromkeys(o.punted))))
    return findings


def check_isolation(view: NetworkView, outcomes=None) -> list[Finding]:
    """Host pairs the policy isolates must not reach each other through the tables."""
    if not view.isolation:
        return []
    banned = set()
    for a, b in view.isolation:
        banned.add((a, b))
        banned.add((b, a))
    findings = []
    for src, dst, o in (pair_outcomes(view) if outcomes is None else outcomes):
        if (src, dst) in banned and dst in o.delivered:
            findings.append(Finding("isolation", f"{src} reaches {dst}, which the isolation policy forbids",
                                    hosts=(src, dst)))
    return findings


def check_delivery(view: NetworkView, outcomes=None) -> list[Finding]:
    """Real packets between connected hosts that never arrived (observed, not computed)."""
    if not view.undelivered:
        return []
    component = view.live_components()
    return [Finding("delivery", f"{summary} from {src} never reached {dst} ({age:.1f}s)",
                    hosts=(src, dst), details={"pid": pid})
            for pid, src, dst, summary, age in view.undelivered
            if component.get(src) is not None and component.get(src) == component.get(dst)]
