"""OSPF on real BIRD and FRR through the relay: a DEFINED network (here ring,4) as a daemon network.

The groundwork for OSPF on Topology Zoo maps: every router reaches every other router's loopback,
learnt by its own daemon over point-to-point adjacencies that the relay carries.
"""

from __future__ import annotations

import os
import signal
import struct
import threading
import time

import pytest

from netsleuth.defined.daemons import config
from netsleuth.defined.daemons.control import wait_for
from netsleuth.defined.daemons.events import EventsError, NetSpec, link_workload, read, spare_links, write
from netsleuth.defined.daemons.net import LiveNet
from netsleuth.defined.daemons.replay import run_events
from netsleuth.defined.daemons.spec import ospf_net
from netsleuth.defined.topologies import parse_net


def test_ospf_configs_name_every_link_with_its_cost():
    net = ospf_net(parse_net("ring,4"))
    assert [r.name for r in net.routers] == ["s1", "s2", "s3", "s4"] and len(net.links) == 4
    bird = config.configs(net, "bird")["s1"]["bird.conf"]
    assert 'interface "s1-s2" { type ptp; cost 10; hello 1; dead 4; };' in bird
    frr = config.configs(net, "frr")["s1"]
    assert " network 10.0.1.0/30 area 0" in frr["ospfd.conf"] and config.frr_daemons(net, net.router("s1")) == [
        "zebra", "ospfd"]


@pytest.mark.real
@pytest.mark.slow
@pytest.mark.parametrize("daemon", ["bird", "frr"])
def test_ospf_converges_through_the_relay(daemon):
    net = ospf_net(parse_net("ring,4"))
    loops = {f"{r.loopback}/32" for r in net.routers}
    t0 = time.monotonic()
    with LiveNet(net, daemon, hold=False) as n:
        reader = n.reader
        assert reader is not None

        def converged() -> bool:
            for r in net.routers:
                have = {p for p, rs in reader.routes(r.name).items() if any(x.get("best") for x in rs)}
                if not loops <= have:
                    return False
            return True

        wait_for(converged, 30.0, "OSPF to converge", step=0.1)
        # s1 reaches s3 (opposite corner of the ring) over two links: cost 20 in either direction
        s3 = [x for x in reader.routes("s1")["10.255.0.3/32"] if x.get("best")]
        assert s3 and s3[0]["via"] in ("10.0.1.2", "10.0.2.2"), s3
    assert time.monotonic() - t0 < 30


@pytest.mark.real
@pytest.mark.slow
def test_a_receiver_that_does_not_run_for_a_while_reads_its_message_before_the_next_delivery():
    """On a busy machine a daemon may not run for a while after its kernel queued a message for it; the
    next delivery must still find it read (else the daemon reads both in one turn, in whatever order its
    sockets come up). Here the receiver is stopped while the message reaches its socket, then let go."""
    net = ospf_net(parse_net("ring,4"))
    with LiveNet(net, "bird", hold=False, clocked=True) as n:
        host = n.host
        assert host is not None and n.pending()
        h = n.pending()[0]
        bird = host.daemons[h.dst][0].pid
        waiting: list[int] = []

        def let_go() -> None:
            try:
                waiting.append(wait_for(lambda: host.routing_queued(h.dst), 5.0, "the message in the socket"))
            finally:
                os.kill(bird, signal.SIGCONT)

        os.kill(bird, signal.SIGSTOP)
        resume = threading.Thread(target=let_go)
        resume.start()
        try:
            n.deliver(h.id)
        finally:
            os.kill(bird, signal.SIGCONT)
            resume.join()
        assert waiting and waiting[0] > 0          # the kernel queued it while the daemon could not read it
        assert host.routing_queued(h.dst) == 0     # and deliver returned only once the daemon had read it
        n.settle()                                 # the run goes on from there
        assert not n.pending() and n.clock is not None and n.clock.now == n.boot_seconds


# ---------------------------------------------------------------- recorded link events on the virtual clock

ZOO = "topozoo/Belnet2009"   # 21 routers, 24 links (the largest connected part of the map)


def _ospf_frame(src: str, kind: int) -> bytes:
    from netsleuth.model.addr import ip_to_int
    from netsleuth.model.packet import IPv4, Packet

    body = bytes([2, kind]) + struct.pack("!H", 44) + bytes([10, 255, 0, 1]) + b"\0" * 36
    return Packet(0x1, 0x01005E000005, 0x0800, l3=IPv4(ip_to_int(src), ip_to_int("224.0.0.5"), 89),
                  payload=body).to_bytes()


def test_a_cut_link_drops_what_the_relay_held_on_it_and_everything_after():
    from netsleuth.defined.daemons.relaycore import RelayCore

    c = RelayCore({"a": ("b", "s1"), "b": ("a", "s2")}, {}, hold=False, hold_datagrams=True)
    hello = _ospf_frame("10.0.1.2", 1)
    assert c.on_frame("b", hello) == []
    ev = c.take_events()
    assert ev[0]["unit"]["messages"][0]["kind"] == "Hello" and ev[0]["unit"]["src"] == "s1"
    c.set_link(["a", "b"], up=False)
    assert c.take_events() == [{"ev": "dropped", "id": 1}] and c.release(1) == []
    assert c.on_frame("a", hello) == [] and c.take_events() == [] and c.lost == 1
    c.set_link(["a", "b"], up=True)
    assert c.on_frame("b", hello) == [] and c.release(2) == [("a", hello)]


def test_events_files_round_trip_and_the_workload_fails_only_spare_links(tmp_path):
    spec = NetSpec(ZOO, statics=(("n00", "n01"),))
    net = spec.build()
    assert len(net.routers) >= 20
    ev = link_workload(net, 10, seed=3)
    assert len(ev) == 20 and [e.kind for e in ev[:2]] == ["link_down", "link_up"]
    spare = set(spare_links(net))
    assert all((e.a, e.b) in spare for e in ev)
    write(tmp_path / "events.jsonl", spec, ev)
    assert read(tmp_path / "events.jsonl") == (spec, ev)
    with pytest.raises(EventsError, match="no network header"):
        (tmp_path / "bad.jsonl").write_text('{"t": 1, "type": "link_down", "a": "n00", "b": "n01"}\n')
        read(tmp_path / "bad.jsonl")


def test_a_seeded_static_route_is_in_the_routers_bird_config():
    net = NetSpec("ring,4", statics=(("s1", "s2"),)).build()
    bird = config.configs(net, "bird")["s1"]["bird.conf"]
    assert "protocol static seeded {" in bird and "route 10.255.0.2/32 via 10.0.1.2;" in bird
    assert "seeded" not in config.configs(net, "bird")["s2"]["bird.conf"]


@pytest.mark.real
@pytest.mark.slow
def test_ten_link_failures_on_a_zoo_map_replay_identically_five_times_out_of_five(tmp_path):
    """21 BIRD routers, every OSPF message held and ordered; the same recorded events, five fresh runs."""
    spec = NetSpec(ZOO)
    net = spec.build()
    write(tmp_path / "events.jsonl", spec, link_workload(net, 10, seed=0, down_for=6, gap=2))
    spec2, events = read(tmp_path / "events.jsonl")
    runs = [run_events(spec2.build(), events, tail=8) for _ in range(5)]
    first = runs[0]
    assert len(first.deliveries) > 3000 and {d[4] for d in first.deliveries} >= {"Hello", "DD", "LSU", "LSAck"}
    # the cut links changed the tables: some router's table went through many versions
    assert sum(len(h) for h in first.history.values()) > 2 * len(net.routers)
    for r in runs[1:]:
        assert r.deliveries == first.deliveries
        assert r.history == first.history
    # every failure was of a spare link and every link recovered: in the end all reach all
    end = first.virtual_seconds
    assert not [v.finding.message for v in first.violations if v.until is None], end
    assert all(r.wall_seconds < 120 for r in runs), [r.wall_seconds for r in runs]   # ~15 s on an idle machine
