"""The World core: channels, a controller loop, link failures, loops and traces.

The "controller" here is a few lines of a learning switch (or a hub) that
reads what the World delivers through the codec and answers with real os-ken
OF1.0 objects, encoded and decoded before they enter the World, the same
path a TCP controller's bytes take.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from os_ken.ofproto import ofproto_v1_0 as ofp
from os_ken.ofproto import ofproto_v1_0_parser as P
from wire import round_trip

from netsleuth import __version__
from netsleuth.model.ofdp import DATAPATH as DP
from netsleuth.model.packet import Packet
from netsleuth.model.switch import NO_BUFFER
from netsleuth.model.topo_builders import parse_topo
from netsleuth.openflow import codec
from netsleuth.trace import schema as ts
from netsleuth.trace.io import TraceWriter, read_trace
from netsleuth.world.clock import VirtualClock
from netsleuth.world.events import OnWire, PendingToController, ToSwitch
from netsleuth.world.world import Recorder, World

STEP = 0.001  # virtual seconds per fired event


class Controller:
    """A reactive learning switch (``mode="learning"``) or a hub (``"hub"``, ``"hub-flows"``)."""

    def __init__(self, world: World, mode: str = "learning", name: str = "c0") -> None:
        self.world = world
        self.mode = mode
        self.name = name
        self.xid = 0
        self.dpid: dict[int, int] = {}
        self.macs: dict[int, dict[int, int]] = {}
        self.received: list[tuple[int, object]] = []

    def connect_all(self) -> None:
        for spec in self.world.topology.switches:
            conn = self.world.open_connection(spec.dpid, self.name)
            self.send(conn, P.OFPFeaturesRequest(DP))

    def send(self, conn: int, msg) -> None:
        self.xid += 1
        msg.xid = self.xid
        self.world.from_controller(conn, round_trip(msg))

    def deliver(self, conn: int, raw) -> None:
        msg = round_trip(raw)
        self.received.append((conn, msg))
        if isinstance(msg, P.OFPSwitchFeatures):
            self.dpid[conn] = msg.datapath_id
            self.macs[conn] = {}
            if self.mode == "hub-flows":
                self.send(conn, P.OFPFlowMod(DP, match=P.OFPMatch(), command=ofp.OFPFC_ADD, priority=1,
                                             actions=[P.OFPActionOutput(ofp.OFPP_FLOOD)]))
        elif isinstance(msg, P.OFPPacketIn):
            self.packet_in(conn, msg)

    def packet_in(self, conn: int, msg) -> None:
        pkt = Packet.from_bytes(msg.data)
        port = None
        if self.mode == "learning":
            table = self.macs[conn]
            table[pkt.eth_src] = msg.in_port
            port = table.get(pkt.eth_dst)
        if port is None:
            actions = [P.OFPActionOutput(ofp.OFPP_FLOOD)]
        else:
            actions = [P.OFPActionOutput(port)]
            # as Ryu's simple_switch: in_port, dl_src and dl_dst
            match = P.OFPMatch(in_port=msg.in_port, dl_src=pkt.eth_src.to_bytes(6, "big"),
                               dl_dst=pkt.eth_dst.to_bytes(6, "big"))
            self.send(conn, P.OFPFlowMod(DP, match=match, command=ofp.OFPFC_ADD, priority=10,
                                         buffer_id=msg.buffer_id, actions=actions))
            if msg.buffer_id != NO_BUFFER:
                return
        if msg.buffer_id != NO_BUFFER:
            self.send(conn, P.OFPPacketOut(DP, buffer_id=msg.buffer_id, in_port=msg.in_port, actions=actions))
        else:
            self.send(conn, P.OFPPacketOut(DP, buffer_id=NO_BUFFER, in_port=msg.in_port, actions=actions,
                                           data=msg.data))

    def run(self, clock: VirtualClock | None = None, limit: int = 50_000) -> int:
        """Fire events oldest first, answering deliveries, until nothing is pending."""
        n = 0
        while (ev := self.world.next_event()) is not None:
            if clock is not None:
                clock.advance(STEP)
            for d in self.world.fire(ev):
                self.deliver(d.conn, d.msg)
            n += 1
            assert n < limit, "the network never went quiet"
        return n

    def of_type(self, cls) -> list:
        return [m for _, m in self.received if isinstance(m, cls)]


def build(spec: str, mode: str = "learning", sink=None):
    clock = VirtualClock()
    world = World(parse_topo(spec), clock, Recorder(clock, sink))
    ctl = Controller(world, mode)
    ctl.connect_all()
    ctl.run(clock)
    return world, ctl, clock


def ip(world: World, host: str) -> int:
    return world.topology.host(host).ip


# ------------------------------------------------------------------ pings
def test_learning_controller_pings_succeed_on_linear3():
    world, ctl, clock = build("linear,3")
    assert sorted(ctl.dpid.values()) == [1, 2, 3]
    assert world.view().connected_dpids == frozenset({1, 2, 3})
    hosts = [h.name for h in world.topology.hosts]
    seq = 0
    for src in hosts:
        for dst in hosts:
            if src != dst:
                seq += 1
                world.inject_ping(src, dst, 1, seq)
                ctl.run(clock)
                assert world.hosts[src].got_reply(ip(world, dst), 1, seq), (src, dst)
    assert ctl.of_type(P.OFPPacketIn)
    assert all(len(s.table) > 0 for s in world.switches.values())
    assert world.observed_violations == []
    # once learned, a second round goes through the flow tables alone
    before = len(ctl.of_type(P.OFPPacketIn))
    world.inject_ping("h1", "h3", 2, 1)
    ctl.run(clock)
    assert world.hosts["h1"].got_reply(ip(world, "h3"), 2, 1)
    assert len(ctl.of_type(P.OFPPacketIn)) == before


def test_without_controller_answers_ping_fails():
    clock = VirtualClock()
    world = World(parse_topo("linear,3"), clock)
    for spec in world.topology.switches:
        world.open_connection(spec.dpid, "c0")
    world.inject_ping("h1", "h3", 1, 1)
    delivered = world.drain()
    assert world.quiescent()
    assert delivered and all(isinstance(round_trip(d.msg), P.OFPPacketIn) for d in delivered)
    assert not world.hosts["h1"].got_reply(ip(world, "h3"), 1, 1)


def test_nothing_unasked_goes_out_before_the_hello_exchange_ends_then_in_the_agreed_version():
    """A packet reaching a switch whose connection still negotiates makes no PACKET_IN (a 1.0 one,
    from the table the switch runs before any version is agreed, would reach a 1.3 controller)."""
    from os_ken.ofproto import ofproto_v1_3_parser as P13

    clock = VirtualClock()
    world = World(parse_topo("linear,2"), clock, openflow="1.3")
    conns = {spec.dpid: world.open_connection(spec.dpid, "c0", hello=True) for spec in world.topology.switches}
    world.inject_ping("h1", "h2", 1, 1)
    assert world.drain() == []
    for conn in conns.values():
        assert world.negotiated(conn, 4)
        to_controller = P13.OFPInstructionActions(4, [P13.OFPActionOutput(0xfffffffd, 0xffff)])  # APPLY_ACTIONS
        miss = P13.OFPFlowMod(codec.datapath_for(4), priority=0, match=P13.OFPMatch(), instructions=[to_controller])
        miss.xid = 1
        world.from_controller(conn, round_trip(miss))
    world.inject_ping("h2", "h1", 1, 1)   # h1's ARP request is still waiting for an answer
    delivered = world.drain()
    assert delivered and all(isinstance(round_trip(d.msg), P13.OFPPacketIn) for d in delivered)


# ------------------------------------------------------------------ channels
def test_enabled_lists_channel_heads_oldest_first_and_fire_refuses_non_heads():
    clock = VirtualClock()
    world = World(parse_topo("linear,2"), clock)
    c1 = world.open_connection(1, "c0")
    c2 = world.open_connection(2, "c0")
    for conn, xid in ((c1, 1), (c2, 2), (c1, 3)):
        msg = P.OFPEchoRequest(DP, data=bytes([xid]))
        msg.xid = xid
        world.from_controller(conn, round_trip(msg))
    world.inject_ping("h2", "h1", 1, 1)  # an ARP request on the wire h2 -> s2
    assert world.pending_count() == 4
    heads = world.enabled()
    assert [type(e) for e in heads] == [ToSwitch, ToSwitch, OnWire]
    assert [e.id for e in heads] == sorted(e.id for e in heads)
    assert [(e.conn, e.msg.xid) for e in heads[:2]] == [(c1, 1), (c2, 2)]
    assert (heads[2].node, heads[2].src) == ("s2", "h2")
    assert len({e.channel for e in heads}) == 3

    # the second message on c1's channel is queued behind the first
    (queued,) = [e for e in world.channels.queues[("to_switch", c1)] if e.msg.xid == 3]
    with pytest.raises(ValueError):
        world.fire(queued)
    # channels are independent: the wire event may go first
    assert world.fire(heads[2]) == []
    with pytest.raises(ValueError):
        world.fire(heads[2])  # already fired
    world.fire(heads[1])
    assert [(e.conn, getattr(e.msg, "xid", None)) for e in world.enabled() if isinstance(e, ToSwitch)] == [(c1, 1)]
    world.fire(heads[0])
    assert queued in world.enabled()
    world.fire(queued)
    # replies queue on the to_controller channels in the order they were made:
    # on c2 the PACKET_IN of the ARP (fired first) is ahead of the echo reply
    replies = {e.conn: e.msg for e in world.enabled() if isinstance(e, PendingToController)}
    assert isinstance(replies[c1], P.OFPEchoReply) and replies[c1].xid == 1
    assert isinstance(replies[c2], P.OFPPacketIn) and replies[c2].in_port == heads[2].port
    out = world.drain()
    echoes = [(d.conn, round_trip(d.msg).xid, round_trip(d.msg).data) for d in out
              if isinstance(d.msg, P.OFPEchoReply)]
    assert [e for e in echoes if e[0] == c1] == [(c1, 1, b"\x01"), (c1, 3, b"\x03")]
    assert [e for e in echoes if e[0] == c2] == [(c2, 2, b"\x02")]
    assert [type(round_trip(d.msg)) for d in out if d.conn == c2] == [P.OFPPacketIn, P.OFPEchoReply]
    assert world.quiescent() and world.enabled() == []


# ------------------------------------------------------------------ loops
@pytest.mark.parametrize("mode", ["hub", "hub-flows"])
def test_flooding_hub_on_ring_is_a_dataplane_loop_and_terminates(mode):
    world, ctl, clock = build("ring,4", mode)
    world.inject_ping("h1", "h3", 1, 1)
    if mode == "hub":
        ctl.run(clock, limit=20_000)
    else:
        assert all(len(s.table) == 1 for s in world.switches.values())
        world.drain(limit=20_000)
    assert world.quiescent()
    loops = [v for v in world.observed_violations if v.invariant == "dataplane-loops"]
    assert loops
    assert world.stats.loop_drops >= len(loops)
    ring = {"s1", "s2", "s3", "s4"}
    assert any(set(v.switches) == ring for v in loops)
    for v in loops:
        assert v.persistent and set(v.switches) <= ring
        path = v.details["path"]
        assert path[-1] in path[:-1]  # the last hop revisits an earlier (switch, port)


def test_learning_switch_on_tree_has_no_loops():
    world, ctl, clock = build("tree,depth=2,fanout=2")
    world.inject_ping("h1", "h4", 1, 1)
    ctl.run(clock)
    assert world.hosts["h1"].got_reply(ip(world, "h4"), 1, 1)
    assert world.observed_violations == [] and world.stats.loop_drops == 0


# ------------------------------------------------------------------ link failures
def test_link_down_drops_packets_in_flight_and_sends_port_status_on_both_ends():
    world, ctl, clock = build("linear,2")
    # s1 port 2 <-> s2 port 2 in Mininet's linear numbering
    assert world.peer[("s2", 2)] == ("s1", 2)
    world.inject_ping("h1", "h2", 1, 1)
    # run until a packet is on the inter-switch link
    while not any(isinstance(e, OnWire) and {e.src, e.node} == {"s1", "s2"} for e in world.enabled()):
        ev = world.next_event()
        assert ev is not None
        for d in world.fire(ev):
            ctl.deliver(d.conn, d.msg)
    in_flight = [e for e in world.enabled() if isinstance(e, OnWire) and {e.src, e.node} == {"s1", "s2"}]
    target = in_flight[0]
    rx_before = world.switches[target.node].ports[target.port].counters.rx_packets
    dropped_before = world.stats.dropped_packets

    world.set_link("s1", 2, False)
    status = [(world.connections[e.conn].dpid, round_trip(e.msg)) for e in world.enabled()
              if isinstance(e, PendingToController) and isinstance(e.msg, P.OFPPortStatus)]
    assert sorted(d for d, _ in status) == [1, 2]
    for _, st in status:
        assert st.desc.port_no == 2 and st.desc.state & ofp.OFPPS_LINK_DOWN
    assert world.view().peer("s1", 2) is None
    world.set_link("s2", 2, False)  # already down, from the other end: nothing new
    assert len([e for e in world.enabled() if isinstance(e, PendingToController)]) == 2

    world.fire(target)
    assert world.stats.dropped_packets == dropped_before + 1
    assert world.switches[target.node].ports[target.port].counters.rx_packets == rx_before
    ctl.run(clock)
    assert not world.hosts["h1"].got_reply(ip(world, "h2"), 1, 1)
    got = [m for m in ctl.of_type(P.OFPPortStatus)]
    assert len(got) == 2 and all(m.desc.state & ofp.OFPPS_LINK_DOWN for m in got)

    # back up: PORT_STATUS without LINK_DOWN, and pings work again
    world.set_link("s2", 2, True)
    ctl.run(clock)
    up = ctl.of_type(P.OFPPortStatus)[2:]
    assert len(up) == 2 and not any(m.desc.state & ofp.OFPPS_LINK_DOWN for m in up)
    world.inject_ping("h1", "h2", 1, 2)
    ctl.run(clock)
    assert world.hosts["h1"].got_reply(ip(world, "h2"), 1, 2)


# ------------------------------------------------------------------ traces
def _scenario(path: Path) -> list:
    topo = parse_topo("linear,3")
    header = ts.TraceHeader(topology=topo.to_json(), topology_spec="linear,3", controller="in-test learning",
                            seed=7, tool_version=__version__, command="test")
    events: list = []
    with TraceWriter(path, header, flush_every=7) as writer:
        def sink(ev):
            events.append(ev)
            writer.write(ev)

        clock = VirtualClock()
        world = World(topo, clock, Recorder(clock, sink))
        ctl = Controller(world)
        ctl.connect_all()
        ctl.run(clock)
        for seq, (src, dst) in enumerate([("h1", "h3"), ("h3", "h2"), ("h2", "h1")]):
            world.inject_ping(src, dst, 9, seq)
            clock.advance(0.5)
            ctl.run(clock)
        world.set_link("s1", 2, False)
        ctl.run(clock)
    return events


def test_trace_round_trips_and_is_deterministic(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    events = _scenario(a)
    trace = read_trace(a)
    assert trace.events == events
    assert trace.header.topology_spec == "linear,3"
    assert parse_topo(trace.header.topology_spec).to_json() == trace.header.topology
    assert [e.seq for e in events] == list(range(len(events)))
    assert [e.t for e in events] == sorted(e.t for e in events) and events[-1].t > 1.0
    kinds = {type(e) for e in events}
    assert {ts.ControlToSwitch, ts.ControlToController, ts.SwitchConnected, ts.PacketArrival,
            ts.TrafficInjection} <= kinds
    assert sum(isinstance(e, ts.SwitchConnected) for e in events) == 3
    # OpenFlow messages in the trace rebuild the very bytes that travelled
    for e in events:
        if isinstance(e, (ts.ControlToSwitch, ts.ControlToController)):
            assert codec.msg_to_json(codec.msg_from_json(e.msg)) == e.msg
    types = [e.msg["type"] for e in events if isinstance(e, ts.ControlToController)]
    assert "PACKET_IN" in types and "PORT_STATUS" in types
    _scenario(b)
    assert a.read_bytes() == b.read_bytes()
