"""NICE's application-specific properties: FlowAffinity and UseCorrectRoutingTable.

They are ordinary ``properties.Property`` subclasses, listed by name in
``property_registry.LIBRARY``: checks that know what the application is
supposed to do, the way NICE let a programmer add them.

**FlowAffinity** (load balancer): every packet of one TCP connection that
reaches a server reaches the *same* server.  A connection is (client IP,
client port, service port): the destination address is rewritten to the
replica's, so it cannot be part of the key.

**UseCorrectRoutingTable** (energy-efficient traffic engineering): when the
controller handles a packet of a new flow from its ingress switch and
installs rules, it installs them at all and only the switches of the path
the *measured load* calls for -- the always-on path under low load; under
high load the always-on path for flows of class 0 and the on-demand path
for flows of class 1 (the app's even, deterministic split, see
``apps/energy_te.py``).  The paths are computed here from the topology, not
taken from the app: always-on is the shortest switch path, on-demand the
shortest one that avoids the always-on path's links.  The measured load is
the controller's own measurement (``app.load_high``, set from port
statistics): the property checks the routing decision against it, which is
what NICE's property checked.
"""

from __future__ import annotations

from typing import Any

import networkx as nx

from netsleuth.model.packet import TCP, UDP, IPv4
from netsleuth.nice import messages as m
from netsleuth.nice.properties import Property


class FlowAffinity(Property):
    """All packets of one TCP connection reach one replica (see the module docstring)."""

    name = "FlowAffinity"
    needs_pid = True

    def initial(self, system: Any) -> Any:
        return frozenset()  # {(connection, host that received it)}

    def on_host_receive(self, ps, ctx, host, pid, frame):
        l3, l4 = frame.l3, frame.l4
        if not (isinstance(l3, IPv4) and isinstance(l4, TCP)) or frame.eth_dst != ctx.mac_of(host):
            return ps
        conn = (l3.src, l4.src_port, l4.dst_port)
        if (conn, host) in ps:
            return ps
        for c, other in ps:
            if c == conn and other != host:
                ctx.violation(self.name, f"TCP connection {frame.summary()} reached both {other} and {host}",
                              hosts=tuple(sorted((other, host))), switches=())
                break
        return ps | {(conn, host)}


def flow_class(frame: Any) -> int:
    """The traffic engineering app's even split of flows under high load (0: always-on, 1: on-demand)."""
    l3, l4 = frame.l3, frame.l4
    return (l3.src ^ l3.dst ^ l4.src_port ^ l4.dst_port) & 1


class _Paths:
    """Always-on and on-demand switch paths between two switches of a topology (memoized)."""

    def __init__(self, topology: Any) -> None:
        g = nx.Graph()
        for link in topology.links:
            if topology.is_switch(link.node1) and topology.is_switch(link.node2):
                g.add_edge(link.node1, link.node2)
        self.g = g
        self.memo: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...] | None]] = {}

    def get(self, a: str, b: str) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
        k = (a, b)
        if k not in self.memo:
            always = tuple(min(nx.all_shortest_paths(self.g, a, b)))
            h = self.g.copy()
            h.remove_edges_from(zip(always, always[1:], strict=False))
            try:
                demand = tuple(min(nx.all_shortest_paths(h, a, b)))
            except nx.NetworkXNoPath:
                demand = None
            self.memo[k] = (always, demand)
        return self.memo[k]


class UseCorrectRoutingTable(Property):
    """Rules for a new flow go to all and only the switches of the path the load calls for."""

    name = "UseCorrectRoutingTable"

    def __init__(self) -> None:
        self._paths: _Paths | None = None

    def initial(self, system: Any) -> Any:
        self._paths = _Paths(system.topology)
        return None  # between transitions: nothing pending

    def on_packet_in(self, ps, ctx, switch, pid, msg):
        f = msg.packet
        if not (isinstance(f.l3, IPv4) and isinstance(f.l4, (TCP, UDP))):
            return ps
        system = ctx.system
        src, dst = ctx.host_of_mac(f.eth_src), None
        for h in system.topology.hosts:
            if h.ip == f.l3.dst:
                dst = h.name
        if src is None or dst is None:
            return ps
        topo = system.topology
        if (switch, msg.in_port) != topo.host_location(src):
            return ps  # not at the flow's ingress: packets met on the way are another matter
        load_high = getattr(ctx.state.app, "load_high", None)
        if load_high is None:
            return ps
        always, demand = self._paths.get(topo.host_location(src)[0], topo.host_location(dst)[0])
        want = demand if (load_high and flow_class(f) == 1 and demand is not None) else always
        # Checked in on_step of this same transition, once the handler's messages are queued.
        return ("pending", f.summary(), want, tuple(len(q) for q in ctx.state.to_sw))

    def quiet_step(self, ps):
        return ps is None   # nothing pending: on_step returns None at once

    def on_step(self, ps, ctx, state):
        if ps is None:
            return ps
        _, what, want, before = ps
        system = ctx.system
        got = set()
        for i, q in enumerate(state.to_sw):
            for msg in q[before[i]:] if len(q) >= before[i] else q:
                if type(msg) is m.FlowMod and msg.command == 0:  # OFPFC_ADD
                    got.add(system.sw_names[i])
        if got and got != set(want):
            ctx.violation(self.name, f"rules for {what} went to {', '.join(sorted(got))}, but the measured load "
                          f"calls for the path {' -> '.join(want)}", hosts=(), switches=tuple(sorted(got)))
        return None
