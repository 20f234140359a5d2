"""Forwarding invariants (loops, blackholes, reachability) and liveness on hand-built tables.

Flow entries are installed as a controller would: os-ken FLOW_MODs, encoded
and decoded by the codec, applied by the switch model.
"""

from __future__ import annotations

import pytest
from os_ken.ofproto import ofproto_v1_0 as ofp
from os_ken.ofproto import ofproto_v1_0_parser as P

from netsleuth.invariants import registry
from netsleuth.invariants.forwarding import (
    check_packet_blackholes,
    check_packet_loops,
    check_packet_reachability,
    pair_outcomes,
    trace_packet,
)
from netsleuth.invariants.view import NetworkView
from netsleuth.model.ofdp import DATAPATH as DP
from netsleuth.model.packet import icmp_echo
from netsleuth.model.switch import Switch
from netsleuth.model.topo_builders import parse_topo
from netsleuth.model.topology import Topology
from netsleuth.openflow import codec


class Net:
    """A topology, its switch models and live links, from which views are made."""

    def __init__(self, spec: str) -> None:
        self.topo: Topology = parse_topo(spec)
        self.switches = {s.name: Switch(s.dpid, self.topo.ports(s.name), name=s.name)
                         for s in self.topo.switches}
        self.link_up = {(lk.node1, lk.port1, lk.node2, lk.port2): True for lk in self.topo.links}

    def port(self, a: str, b: str) -> int:
        """The port of ``a`` whose link goes to ``b``."""
        (p,) = [p for p in self.topo.ports(a) if self.topo.neighbor(a, p)[0] == b]
        return p

    def mac(self, host: str) -> bytes:
        return self.topo.host(host).mac.to_bytes(6, "big")

    def install(self, switch: str, actions, *, priority: int = 100, **match) -> None:
        msg = P.OFPFlowMod(DP, match=P.OFPMatch(**match), command=ofp.OFPFC_ADD, priority=priority,
                           actions=[P.OFPActionOutput(a) if isinstance(a, int) else a for a in actions])
        msg.xid = 1
        out = self.switches[switch].handle_message(0, codec.decode(codec.encode(msg)), 0.0)
        assert out == []

    def to_host(self, switch: str, host: str, toward: str | None = None) -> None:
        """``switch`` sends traffic for ``host`` to its neighbour ``toward`` (or to the host itself)."""
        self.install(switch, [self.port(switch, toward or host)], dl_dst=self.mac(host))

    def set_link(self, a: str, b: str, up: bool) -> None:
        for key in self.link_up:
            if {key[0], key[2]} == {a, b}:
                self.link_up[key] = up

    def view(self, *, alive=None, connected=None, switch_up=None, controllers_of=None) -> NetworkView:
        dpids = {s.dpid for s in self.topo.switches}
        return NetworkView(topology=self.topo, switches=self.switches, link_up=dict(self.link_up),
                           controllers_alive={"c0": True} if alive is None else alive,
                           connected_dpids=frozenset(dpids if connected is None else connected),
                           switch_up=switch_up or {}, controllers_of=controllers_of or {})


def route_linear3(net: Net) -> None:
    """Correct static routes on linear,3 (s1 - s2 - s3, host hi on si)."""
    for host, home in (("h1", "s1"), ("h2", "s2"), ("h3", "s3")):
        for sw in ("s1", "s2", "s3"):
            if sw == home:
                net.to_host(sw, host)
            else:
                nxt = "s2" if sw != "s2" else home
                net.to_host(sw, host, nxt)


def pairs(findings) -> set[tuple[str, ...]]:
    return {f.hosts for f in findings}


# ------------------------------------------------------------------ baseline
def test_correct_static_routes_have_no_findings():
    net = Net("linear,3")
    route_linear3(net)
    view = net.view(connected=set())  # no controller needed: the tables do everything
    outcomes = pair_outcomes(view)
    assert len(outcomes) == 6
    for _src, dst, o in outcomes:
        assert o.delivered == [dst] and not o.loops and not o.drops and not o.punted
    assert check_packet_loops(view) == [] and check_packet_blackholes(view) == []
    assert check_packet_reachability(view) == []
    assert registry.check(view, registry.resolve(["loops", "blackholes", "reachability"])) == []


# ------------------------------------------------------------------ loops
def test_static_forwarding_loop_is_found_and_names_the_switches():
    net = Net("ring,3")
    for host, home in (("h1", "s1"), ("h2", "s2")):
        for sw in ("s1", "s2", "s3"):
            net.to_host(sw, host, None if sw == home else home)
    # traffic for h3 goes round the ring and never reaches h3: s1 -> s2 -> s3 -> s1
    for sw, nxt in (("s1", "s2"), ("s2", "s3"), ("s3", "s1")):
        net.to_host(sw, "h3", nxt)
    view = net.view()
    loops = check_packet_loops(view)
    assert loops
    assert all(f.invariant == "loops" for f in loops)
    assert all(set(f.switches) == {"s1", "s2", "s3"} for f in loops)
    assert {f.hosts[1] for f in loops} == {"h3"}
    path = loops[0].details["path"]
    assert path[-1] in path[:-1]
    # the looping pairs cannot reach h3; h1 <-> h2 are fine
    unreachable = pairs(check_packet_reachability(view))
    assert unreachable == {("h1", "h3"), ("h2", "h3")}
    assert "loop" in next(f.message for f in check_packet_reachability(view) if f.hosts == ("h1", "h3"))
    by_name = registry.check(view, registry.resolve("loops"))  # header space: one finding per ingress and cycle
    assert by_name and all(f.invariant == "loops" and set(f.switches) == {"s1", "s2", "s3"} for f in by_name)


def test_ring_without_loop_is_clean():
    net = Net("ring,3")
    for host in ("h1", "h2", "h3"):
        home = "s" + host[1:]
        for sw in ("s1", "s2", "s3"):
            net.to_host(sw, host, None if sw == home else home)
    view = net.view()
    assert check_packet_loops(view) == [] and check_packet_reachability(view) == []
    assert check_packet_blackholes(view) == []


# ------------------------------------------------------------------ blackholes
def test_rule_with_no_actions_is_no_blackhole_but_an_output_to_a_missing_port_is():
    net = Net("linear,3")
    route_linear3(net)
    net.install("s2", [], priority=200, dl_dst=net.mac("h3"))  # drop everything for h3 at s2: on purpose
    view = net.view()
    assert check_packet_blackholes(view) == [] and check_packet_reachability(view) == []
    net.install("s2", [9], priority=200, dl_dst=net.mac("h3"))  # s2 has no port 9: meant to forward, lost
    view = net.view()
    holes = check_packet_blackholes(view)
    assert pairs(holes) == {("h1", "h3"), ("h2", "h3")}
    for f in holes:
        assert f.invariant == "blackholes" and f.switches == ("s2",)
        assert "dropped at s2" in f.message and "priority 200" in f.message
    assert pairs(check_packet_reachability(view)) == {("h1", "h3"), ("h2", "h3")}
    assert check_packet_loops(view) == []


def test_output_to_a_down_link_is_a_blackhole():
    net = Net("ring,3")
    for host in ("h1", "h2", "h3"):
        home = "s" + host[1:]
        for sw in ("s1", "s2", "s3"):
            net.to_host(sw, host, None if sw == home else home)
    net.set_link("s1", "s2", False)  # h1 and h2 still connected through s3
    view = net.view()
    holes = check_packet_blackholes(view)
    assert pairs(holes) == {("h1", "h2"), ("h2", "h1")}
    f = next(f for f in holes if f.hosts == ("h1", "h2"))
    assert f.switches == ("s1",) and "no live link" in f.message
    assert pairs(check_packet_reachability(view)) == {("h1", "h2"), ("h2", "h1")}


def test_output_to_a_down_port_is_a_blackhole():
    net = Net("linear,2")
    net.to_host("s1", "h2", "s2")
    net.to_host("s2", "h2")
    net.to_host("s2", "h1", "s1")
    net.to_host("s1", "h1")
    sw = net.switches["s2"]
    sw.ports[net.port("s2", "h2")].config |= ofp.OFPPC_PORT_DOWN  # administratively down
    view = net.view()
    assert pairs(check_packet_blackholes(view)) == {("h1", "h2")}


# ------------------------------------------------------------------ reachability and the controller
def test_table_miss_is_delegated_when_the_controller_is_connected():
    net = Net("linear,3")  # empty tables: every packet goes to the controller
    view = net.view()
    for _, _, o in pair_outcomes(view):
        assert o.punted and not o.drops
    assert check_packet_reachability(view) == [] and check_packet_blackholes(view) == []

    not_connected = net.view(connected={1, 3})
    found = check_packet_reachability(not_connected)
    assert pairs(found) == {("h2", "h1"), ("h2", "h3")}  # only s2's hosts punt to a missing controller
    assert all(f.switches == ("s2",) and "not connected" in f.message for f in found)

    dead = check_packet_reachability(net.view(alive={"c0": False}))
    assert len(dead) == 6
    assert check_packet_blackholes(net.view(alive={"c0": False})) == []  # a miss is not a drop


def test_delegation_needs_the_switch_s_own_controller_alive():
    net = Net("linear,2")
    # s1 talks only to c0 (dead), s2 only to c1 (alive)
    view = net.view(alive={"c0": False, "c1": True}, controllers_of={1: ("c0",), 2: ("c1",)})
    assert pairs(check_packet_reachability(view)) == {("h1", "h2")}
    both = net.view(alive={"c0": False, "c1": True}, controllers_of={1: ("c0", "c1"), 2: ("c1",)})
    assert check_packet_reachability(both) == []


def test_controller_action_counts_as_delegation():
    net = Net("linear,2")
    net.install("s1", [P.OFPActionOutput(ofp.OFPP_CONTROLLER, 128)], dl_dst=net.mac("h2"))
    view = net.view()
    (o,) = [o for s, d, o in pair_outcomes(view) if (s, d) == ("h1", "h2")]
    assert o.punted == ["s1"]
    assert check_packet_reachability(view) == []
    assert pairs(check_packet_reachability(net.view(connected={2}))) >= {("h1", "h2")}


def test_physically_partitioned_hosts_are_not_reported():
    net = Net("linear,3")
    net.set_link("s1", "s2", False)
    view = net.view(connected=set())  # nobody is connected: every connected pair fails
    found = pairs(check_packet_reachability(view))
    assert found == {("h2", "h3"), ("h3", "h2")}
    traced = {(s, d) for s, d, _ in pair_outcomes(view)}
    assert traced == {("h2", "h3"), ("h3", "h2")}
    # the same pairs with the link up are reported too
    net.set_link("s1", "s2", True)
    assert len(check_packet_reachability(net.view(connected=set()))) == 6


def test_host_with_its_access_link_down_is_partitioned():
    net = Net("linear,2")
    net.set_link("h1", "s1", False)
    view = net.view(connected=set())
    assert pairs(check_packet_reachability(view)) == set()
    assert check_packet_blackholes(view) == []


def test_down_switch_partitions_and_drops():
    net = Net("ring,3")
    for host in ("h1", "h2", "h3"):
        home = "s" + host[1:]
        for sw in ("s1", "s2", "s3"):
            # everything for h2 from s1 goes through s3
            nxt = "s3" if (sw, host) == ("s1", "h2") else home
            net.to_host(sw, host, None if sw == home else nxt)
    view = net.view(switch_up={"s3": False})
    out = trace_packet(view, "s1", net.port("s1", "h1"),
                       icmp_echo(1, 2, "10.0.0.1", "10.0.0.2", 1, 1))
    assert out.drops and out.drops[0][0] == "s3" and not out.delivered
    # s3 is down: h3 is physically cut off and never reported
    assert all("h3" not in f.hosts for f in check_packet_reachability(view))
    assert pairs(check_packet_reachability(view)) == {("h1", "h2")}


# ------------------------------------------------------------------ liveness
def test_liveness_reports_dead_controller_and_unconnected_switches():
    net = Net("linear,3")
    inv = registry.resolve("liveness")
    assert registry.check(net.view(), inv) == []
    found = registry.check(net.view(alive={"c0": False, "c1": True}, connected={1}), inv)
    assert all(f.invariant == "liveness" for f in found)
    dead = [f for f in found if f.details.get("controller")]
    assert [f.details["controller"] for f in dead] == ["c0"] and "c0" in dead[0].message
    (missing,) = [f for f in found if f.switches]
    assert missing.switches == ("s2", "s3")
    assert "s2" in missing.message and "s3" in missing.message
    # a switch that is down is not expected to be connected
    found = registry.check(net.view(connected={1, 2}, switch_up={"s3": False}), inv)
    assert found == []
    # every controller down: the dead controllers are the finding, not the switches left with nobody to talk to
    found = registry.check(net.view(alive={"c0": False}, connected=set()), inv)
    assert [f.details.get("controller") for f in found] == ["c0"] and not any(f.switches for f in found)


def test_registry_names_and_defaults():
    names = [i.name for i in registry.resolve(None)]
    assert names == list(registry.DEFAULT)
    assert [i.name for i in registry.resolve("loops, reachability")] == ["loops", "reachability"]
    with pytest.raises(registry.UnknownInvariantError):
        registry.resolve("loops,nonsense")
    assert registry.REGISTRY["dataplane-loops"].observed and registry.REGISTRY["dataplane-loops"].check is None


@pytest.mark.parametrize("seed", range(6))
def test_live_components_number_components_as_networkx_does(seed):
    """The view's own search numbers the components of the live graph as networkx's does, with
    links and switches cut at random (it replaced a networkx call that cost its import)."""
    import random

    import networkx as nx

    rng = random.Random(seed)
    topo = parse_topo(rng.choice(["fattree,4", "ring,6", "linear,5", "tree,depth=2,fanout=3"]))
    link_up = {(lk.node1, lk.port1, lk.node2, lk.port2): rng.random() < 0.6 for lk in topo.links}
    switch_up = {s.name: rng.random() < 0.8 for s in topo.switches}
    view = NetworkView(topology=topo, switches={}, link_up=link_up, switch_up=switch_up)
    want = {n: i for i, comp in enumerate(nx.connected_components(view.live_graph())) for n in comp}
    got = view.live_components()
    assert got == want
    assert len(set(got.values())) > 1
