"""OSPF on real BIRD and FRR through the relay: a DEFINED network (here ring,4) as a daemon network.

The groundwork for OSPF on Topology Zoo maps: every router reaches every other router's loopback,
learnt by its own daemon over point-to-point adjacencies that the relay carries.
"""

from __future__ import annotations

import time

import pytest

from netsleuth.defined.daemons import config
from netsleuth.defined.daemons.control import wait_for
from netsleuth.defined.daemons.net import LiveNet
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
