"""Input events applied to the World: failures, recoveries, moves, blocks, delays, drops.

Driven by the same in-test learning controller as test_world.py (real os-ken
messages through the codec), with virtual time.
"""

from __future__ import annotations

from os_ken.ofproto import ofproto_v1_0 as ofp
from os_ken.ofproto import ofproto_v1_0_parser as P
from test_world import build, ip

from netsleuth.invariants import registry
from netsleuth.model.match import Match
from netsleuth.world.events import Connect, Disconnect


def setup(spec: str):
    events: list = []
    world, ctl, clock = build(spec, sink=events.append)
    return world, ctl, clock, events


def ping(world, ctl, clock, src: str, dst: str, seq: int) -> bool:
    world.inject_ping(src, dst, 7, seq)
    ctl.run(clock)
    return world.hosts[src].got_reply(ip(world, dst), 7, seq)


def port_status(ctl, start: int):
    return [(conn, m.reason, m.desc.port_no) for conn, m in ctl.received[start:] if isinstance(m, P.OFPPortStatus)]


def test_switch_failure_and_recovery():
    world, ctl, clock, events = setup("linear,3")
    assert ping(world, ctl, clock, "h1", "h3", 1)
    assert len(world.switches["s2"].table) > 0
    mark = len(ctl.received)
    effects = world.fail_switch("s2")
    assert effects == [Disconnect(c.conn) for c in world.connections.values() if c.dpid == 2]
    assert not any(c.up for c in world.connections.values() if c.dpid == 2)
    ctl.run(clock)
    # s1 and s3 report their ports towards s2 as down
    downs = {(world.connections[c].dpid, p) for c, _, p in port_status(ctl, mark)}
    assert downs == {(1, world.topology.neighbor("s2", 2)[1]), (3, world.topology.neighbor("s2", 3)[1])}
    assert not ping(world, ctl, clock, "h1", "h3", 2)
    effects = world.recover_switch("s2")
    assert effects == [Connect(2, "c0")]
    assert len(world.switches["s2"].table) == 0, "a rebooted switch starts with an empty table"
    for e in effects:
        conn = world.open_connection(e.dpid, e.controller)
        ctl.send(conn, P.OFPFeaturesRequest(ctl_dp()))
    ctl.run(clock)
    assert ping(world, ctl, clock, "h1", "h3", 3)
    inputs = [e for e in world_inputs(events)]
    assert [k for k, _ in inputs] == ["traffic", "switch_failure", "traffic", "switch_recovery", "traffic"]


def ctl_dp():
    from netsleuth.model.ofdp import DATAPATH
    return DATAPATH


def world_inputs(events):
    return [(e.kind, e) for e in events if e.is_input]


def test_host_migration_rewires_ports_and_leaves_a_blackhole():
    world, ctl, clock, events = setup("linear,3")
    for i, (a, b) in enumerate([("h2", "h1"), ("h1", "h2")]):
        assert ping(world, ctl, clock, a, b, i + 1)
    mark = len(ctl.received)
    world.migrate_host("h1", "s3")
    new_port = max(world.switches["s3"].ports)
    assert world.host_at["h1"] == ("s3", new_port)
    ctl.run(clock)
    changes = sorted((world.connections[c].dpid, reason, port) for c, reason, port in port_status(ctl, mark))
    assert changes == [(1, ofp.OFPPR_DELETE, 1), (3, ofp.OFPPR_ADD, new_port)]
    # s2 still sends h2 -> h1 towards s1, whose flow points at the port h1 left
    found = registry.check(world.view(), registry.resolve("blackholes"))
    assert [(f.hosts, f.switches) for f in found] == [(("h2", "h1"), ("s1",))]
    world.migrate_host("h1", "s2")
    migrations = [e for k, e in world_inputs(events) if k == "host_migration"]
    assert migrations[1].deps == (migrations[0].id,) and migrations[1].old_switch == "s3"


def test_blocked_channel_holds_messages_until_unblocked():
    world, ctl, clock, events = setup("linear,2")
    world.block_channel("s1", "c0")
    world.inject_ping("h1", "h2", 7, 1)
    ctl.run(clock)
    held = [e for e in world.channels.queues.get(("to_controller", 0), [])]
    assert held, "the PACKET_IN from s1 waits in its channel"
    assert world.quiescent()
    clock.advance(2.0)
    found = registry.check(world.view(), registry.resolve("delivery"))
    # the ARP request waits behind the blocked channel: delivery follows ARP too (nothing IP was sent yet)
    assert [(f.invariant, f.hosts) for f in found] == [("delivery", ("h1", "h2"))]
    assert found[0].message.startswith("ARP")
    world.unblock_channel("s1", "c0")
    ctl.run(clock)
    assert world.hosts["h1"].got_reply(ip(world, "h2"), 7, 1)


def test_control_delay_lets_later_messages_overtake():
    world, ctl, clock, events = setup("linear,2")
    conn = next(c.conn for c in world.connections.values() if c.dpid == 1)
    world.delay_next_message("s1", "c0", "to_switch", 0.5)
    ctl.send(conn, P.OFPEchoRequest(ctl_dp(), data=b"first"))
    ctl.send(conn, P.OFPEchoRequest(ctl_dp(), data=b"second"))
    mark = len(ctl.received)
    ctl.run(clock)
    echoes = [m.data for _, m in ctl.received[mark:] if isinstance(m, P.OFPEchoReply)]
    assert echoes == [b"second"]
    clock.advance(0.6)
    ctl.run(clock)
    echoes = [m.data for _, m in ctl.received[mark:] if isinstance(m, P.OFPEchoReply)]
    assert echoes == [b"second", b"first"]


def test_dataplane_drop_loses_the_next_packet_only():
    world, ctl, clock, events = setup("linear,2")
    assert ping(world, ctl, clock, "h1", "h2", 1)
    world.drop_next_packet("s2", world.topology.neighbor("s1", 2)[1])
    assert not ping(world, ctl, clock, "h1", "h2", 2)
    assert ping(world, ctl, clock, "h1", "h2", 3)


def test_delivery_reports_packets_that_never_arrive():
    world, ctl, clock, events = setup("linear,2")
    assert ping(world, ctl, clock, "h1", "h2", 1)  # ARP caches filled, flows installed
    world.switches["s2"].table.delete(Match.catch_all(), strict=False)  # s2 forgets its flows
    world.block_channel("s2", "c0")  # the miss on s2 reaches no controller
    world.inject_ping("h1", "h2", 7, 2)
    ctl.run(clock)
    assert registry.check(world.view(), registry.resolve("delivery")) == []  # not late yet
    clock.advance(1.5)
    found = registry.check(world.view(), registry.resolve("delivery"))
    assert [f.hosts for f in found] == [("h1", "h2")]
    assert "ICMP" in found[0].message
