"""BigBug's seven SDN features of a per-race subgraph, and their weights.

Boolean features (present or not):

``bouncing``
    controller/switch ping-pong: the chain MessageSend -> ControllerHandle ->
    ControllerSend -> PACKET_OUT handle -> MessageSend -> ControllerHandle ->
    ControllerSend appears as an induced subgraph, both MessageSends from the
    same switch (a PACKET_OUT came back as a new PACKET_IN).  The middle
    event must be a PACKET_OUT: with any message handle allowed, a
    PACKET_IN answered by a BARRIER_REQUEST (whose BARRIER_REPLY goes back
    to the controller) would count as bouncing, and the POX EEL l2_multi
    trace would not cluster as the original did (3 clusters, not 2);
``reply``
    reply packets: the graph contains a host receiving a packet (HostHandle),
    so a host answered a packet it got;
``flow_expiry``
    a root event is a flow expiry;
``flooding``
    a PACKET_OUT in the graph outputs to FLOOD (port 65531).

Counts: ``roots`` (events without predecessors), ``host_sends`` (roots that
are host sends), ``proactive`` (how many of the two race events are
proactive: switch handles of controller messages that no switch-to-
controller message other than a BARRIER_REPLY led to over message edges).

Weights (paper, section 6): bouncing, flooding, flow expiry 2; proactive 1.5;
host sends 1; roots and reply packets 0.5.
"""

from __future__ import annotations

import struct
from dataclasses import asdict, dataclass
from fractions import Fraction

from netsleuth.races.events import (
    CONTROLLER_HANDLE,
    CONTROLLER_SEND,
    FLOW_EXPIRY,
    HOST_HANDLE,
    HOST_SEND,
    MESSAGE_HANDLE,
    MESSAGE_SEND,
)
from netsleuth.races.hb import MID, HbGraph
from netsleuth.races.subgraph import RaceGraph

BOOLEAN = ("bouncing", "reply", "flow_expiry", "flooding")
NUMERIC = ("roots", "host_sends", "proactive")
FEATURES = BOOLEAN + NUMERIC
WEIGHTS: dict[str, Fraction] = {
    "bouncing": Fraction(2), "flooding": Fraction(2), "flow_expiry": Fraction(2),
    "proactive": Fraction(3, 2), "host_sends": Fraction(1), "roots": Fraction(1, 2), "reply": Fraction(1, 2),
}
# what the original code called them
ORIGINAL_NAMES = {"bouncing": "pingpong", "reply": "return", "flow_expiry": "flowexpiry", "flooding": "flood",
                  "roots": "num_roots", "host_sends": "num_hostsends", "proactive": "num_proactive"}
OFPP_FLOOD = 0xFFFB
_BOUNCE = (MESSAGE_SEND, CONTROLLER_HANDLE, CONTROLLER_SEND, MESSAGE_HANDLE,
           MESSAGE_SEND, CONTROLLER_HANDLE, CONTROLLER_SEND)


@dataclass(frozen=True, slots=True)
class Features:
    bouncing: bool
    reply: bool
    flow_expiry: bool
    flooding: bool
    roots: int
    host_sends: int
    proactive: int

    def to_json(self) -> dict:
        return asdict(self)


def proactive_nodes(g: HbGraph) -> frozenset[int]:
    """Message handles no switch-to-controller message (BARRIER_REPLY aside) leads to over ``mid`` edges."""
    events = g.events
    reactive: set[int] = set()
    seen: set[int] = set()
    for s, ev in enumerate(events):
        if ev.kind != MESSAGE_SEND or ev.msg_type == "OFPT_BARRIER_REPLY" or s in seen:
            continue
        stack = [s]
        seen.add(s)
        while stack:
            u = stack.pop()
            for v in g.succ[u]:
                if v in seen or g.rel[(u, v)] != MID:
                    continue
                seen.add(v)
                stack.append(v)
                if events[v].kind == MESSAGE_HANDLE:
                    reactive.add(v)
    # (a BARRIER_REPLY reached from another message is walked through, as in the original)
    return frozenset(n for n, ev in enumerate(events) if ev.kind == MESSAGE_HANDLE and n not in reactive)


def packet_out_ports(msg: bytes | None) -> list[int]:
    """Output ports of a PACKET_OUT's actions (1.3's reserved ports as 1.0 numbers: FLOOD is 0xfffb)."""
    if msg and msg[0] == 4:
        from netsleuth.races.describe import packet_out_actions13

        return [p & 0xFFFF if p > 0xFFFFFF00 else p
                for a in packet_out_actions13(msg) if (p := getattr(a, "port", None)) is not None]
    if not msg or len(msg) < 16:
        return []
    (actions_len,) = struct.unpack_from("!H", msg, 14)
    off, end = 16, min(16 + actions_len, len(msg))
    ports = []
    while off + 8 <= end:
        atype, alen = struct.unpack_from("!HH", msg, off)
        if alen < 8:
            break
        if atype == 0:
            ports.append(struct.unpack_from("!H", msg, off + 4)[0])
        off += alen
    return ports


def has_bouncing(g: HbGraph, rg: RaceGraph) -> bool:
    """The ping-pong chain (PACKET_OUT in the middle) as an induced subgraph, MessageSends of one switch."""
    events = g.events
    succ = rg.succs()
    edges = {(u, v) for u, v, _ in rg.edges}
    kind = {n: events[n].kind for n in rg.nodes}

    def extend(path: list[int]) -> bool:
        if len(path) == len(_BOUNCE):
            if events[path[0]].dpid != events[path[4]].dpid:
                return False
            chain = set(zip(path, path[1:], strict=False))
            return not any((a, b) in edges and (a, b) not in chain for a in path for b in path if a != b)
        want = _BOUNCE[len(path)]
        for v in succ[path[-1]]:
            if len(path) == 3 and events[v].msg_type != "OFPT_PACKET_OUT":
                continue
            if kind[v] == want and v not in path and extend(path + [v]):
                return True
        return False

    return any(kind[n] == MESSAGE_SEND and extend([n]) for n in rg.nodes)


def compute_features(g: HbGraph, rg: RaceGraph, proactive: frozenset[int]) -> Features:
    events = g.events
    roots = rg.roots()
    flooding = any(events[n].kind == MESSAGE_HANDLE and events[n].msg_type == "OFPT_PACKET_OUT"
                   and OFPP_FLOOD in packet_out_ports(events[n].msg) for n in rg.nodes)
    return Features(
        bouncing=has_bouncing(g, rg),
        reply=any(events[n].kind == HOST_HANDLE for n in rg.nodes),
        flow_expiry=any(events[n].kind == FLOW_EXPIRY for n in roots),
        flooding=flooding,
        roots=len(roots),
        host_sends=sum(1 for n in roots if events[n].kind == HOST_SEND),
        proactive=sum(1 for n in rg.race_nodes if n in proactive),
    )


def mean_features(fs: list[Features]) -> dict[str, Fraction]:
    """Per feature: the fraction of graphs having it (booleans) or the mean count."""
    n = len(fs)
    return {name: Fraction(sum(int(getattr(f, name)) for f in fs), n) for name in FEATURES}


def distance(a: dict[str, Fraction], b: dict[str, Fraction], weights: dict[str, Fraction] = WEIGHTS) -> Fraction:
    """BigBug's distance between two clusters' mean features (exact arithmetic).

    Boolean features: weight x |difference of the fractions|; counts: the
    weight when the means differ, else 0.
    """
    d = Fraction(0)
    for name in BOOLEAN:
        d += weights[name] * abs(a[name] - b[name])
    for name in NUMERIC:
        if a[name] != b[name]:
            d += weights[name]
    return d


__all__ = ["Features", "FEATURES", "BOOLEAN", "NUMERIC", "WEIGHTS", "compute_features", "proactive_nodes",
           "mean_features", "distance", "packet_out_ports", "has_bouncing"]
