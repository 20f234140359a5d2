"""Traffic to a service address: clients opening TCP connections to a load balancer's virtual IP.

POX's ``misc.ip_loadbalancer`` answers ARP for its virtual IP and installs
one rule per client connection; STS found its missing error handling by
opening many connections until the switch's table was full. ``fuzz
--service IP --rate service_traffic=P`` draws such connections from the
seeded RNG like every other input (the real run is in test_pox_loadbalancer).
"""

from __future__ import annotations

import contextlib
import io
import random
from pathlib import Path

import pytest

from netsleuth.cli import main
from netsleuth.schedulers.fuzz import Fuzzer, FuzzState, Rates


def state(services: tuple[str, ...]) -> FuzzState:
    return FuzzState(live_switches=("s1",), failed_switches=(), live_links=(), failed_links=(),
                     alive_controllers=("c0",), crashed_controllers=(), open_channels=(), blocked_channels=(),
                     hosts=("h1", "h2", "h3"), host_switch={"h1": "s1", "h2": "s1", "h3": "s1"}, switches=("s1",),
                     services=services)


def planned(seed: int, services: tuple[str, ...], rounds: int = 40) -> list[tuple]:
    fuzzer = Fuzzer(random.Random(seed), Rates({"service_traffic": 0.5}))
    return [p.args for _ in range(rounds) for p in fuzzer.plan_round(state(services))]


def test_connections_to_the_service_come_from_the_seeded_rng() -> None:
    plan = planned(3, ("10.0.1.1", "10.0.1.2"))
    assert 10 < len(plan) < 30  # about half of the 40 rounds
    assert all(dict(a)["what"] == "tcp_syn" and dict(a)["dst_ip"] in ("10.0.1.1", "10.0.1.2") for a in plan)
    assert {dict(a)["host"] for a in plan} == {"h1", "h2", "h3"}
    assert plan == planned(3, ("10.0.1.1", "10.0.1.2"))
    assert plan != planned(4, ("10.0.1.1", "10.0.1.2"))
    assert planned(3, ()) == []  # no service, no such traffic


@pytest.mark.parametrize("flags, words", [
    (["--rate", "service_traffic=0.3"], "needs an address to connect to"),
    (["--service", "123.123.2.3", "--rate", "service_traffic=0.3"], "h2's own"),
    (["--service", "10.0.1.300"], "not an IPv4 address"),
    (["--rate", "service_trafic=0.3"], "unknown rate 'service_trafic'"),
])
def test_a_service_that_cannot_work_is_refused_in_one_line(tmp_path: Path, flags: list[str], words: str) -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["fuzz", "--controller", "osken:os_ken.app.simple_switch", "--topo", "sts-mesh,3",
                     "--out", str(tmp_path / "out"), *flags])
    assert code == 2
    assert err.getvalue().count("\n") == 1 and words in err.getvalue() and " -- fix: " in err.getvalue()
    assert not (tmp_path / "out").exists()


def test_a_violation_names_the_service_address_not_the_mac_in_front_of_it() -> None:
    """A class headed to the load balancer's MAC (the switch's, no host's) is named by its IP and port."""
    from netsleuth.invariants.headerspace.space import HeaderSpace
    from netsleuth.invariants.violation_text import Hosts, phrase
    from netsleuth.model.topology import parse_topo

    topo = parse_topo("sts-mesh,3")
    h2 = topo.host("h2")
    hs = HeaderSpace.fields(dl_src=h2.mac, dl_dst=1, dl_type=0x800, nw_proto=6, nw_src=h2.ip, nw_dst=0x0A000101,
                            tp_src=20033, tp_dst=80)
    v, m, _ = hs.terms[0]
    assert phrase(hs, v, m, Hosts(topo.hosts)) == "TCP h2 → 10.0.1.1:80 with source port 20033"
    to_mac = HeaderSpace.fields(dl_dst=1)  # with no address behind it, the MAC is all there is to say
    assert phrase(to_mac, *to_mac.terms[0][:2], Hosts(topo.hosts)) == "traffic to 00:00:00:00:00:01"
