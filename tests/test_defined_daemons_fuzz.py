"""Invariants over the daemons' kernel tables, and fuzz + minimize on real BIRD routers.

The checks are pure (tables in, netsleuth's findings out) and tested on tables written out here;
the fuzz test runs OSPF on BIRD with a seeded misconfiguration -- s1 routes s2's loopback
statically over the s1-s2 link, which BIRD prefers to OSPF's route -- and expects fuzz to find
the blackhole that link's failure leaves, and minimize to cut the events down to that failure.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from netsleuth.defined.daemons.events import NetSpec
from netsleuth.defined.daemons.kroutes import KRoute, parse_routes
from netsleuth.defined.daemons.routecheck import check
from netsleuth.invariants.violation_text import violation_lines

ROOT = Path(__file__).resolve().parents[1]
RING = NetSpec("ring,4").build()   # s1-s2 (10.0.1.0/30), s1-s4 (10.0.2.0/30), s2-s3 (10.0.3.0/30), s3-s4 (10.0.4.0/30)


def _r(prefix: str, *hops: tuple[str, str], kind: str = "unicast") -> KRoute:
    return KRoute(prefix, kind, "bird", tuple(sorted(hops)))


def _converged() -> dict[str, list[KRoute]]:
    """Every router reaches every loopback the short way round the ring (s1 and s3 by s2)."""
    return {
        "s1": [_r("10.255.0.2/32", ("10.0.1.2", "s1-s2")), _r("10.255.0.3/32", ("10.0.1.2", "s1-s2")),
               _r("10.255.0.4/32", ("10.0.2.2", "s1-s4"))],
        "s2": [_r("10.255.0.1/32", ("10.0.1.1", "s2-s1")), _r("10.255.0.3/32", ("10.0.3.2", "s2-s3")),
               _r("10.255.0.4/32", ("10.0.3.2", "s2-s3"))],
        "s3": [_r("10.255.0.1/32", ("10.0.3.1", "s3-s2")), _r("10.255.0.2/32", ("10.0.3.1", "s3-s2")),
               _r("10.255.0.4/32", ("10.0.4.2", "s3-s4"))],
        "s4": [_r("10.255.0.1/32", ("10.0.2.1", "s4-s1")), _r("10.255.0.2/32", ("10.0.2.1", "s4-s1")),
               _r("10.255.0.3/32", ("10.0.4.1", "s4-s3"))],
    }


def test_converged_tables_have_no_violation():
    assert check(RING, _converged()) == []


def test_a_route_into_a_cut_link_is_a_blackhole_in_netsleuths_words():
    found = check(RING, _converged(), down=[frozenset(("s1", "s2"))])
    holes = [f for f in found if f.invariant == "blackholes"]
    assert "packets s1 -> 10.255.0.2 (s2) are dropped at s1: route 10.255.0.2/32 leaves by link s1-s2, " \
           "which is down" in [f.message for f in holes]
    unreach = {f.message for f in found if f.invariant == "reachability"}
    assert "s1 cannot reach 10.255.0.2 (s2): they are dropped at s1" in unreach
    assert violation_lines(holes[0])[0].startswith("blackholes: packets ")


def test_two_routers_pointing_at_each_other_loop_and_a_missing_route_is_a_blackhole():
    t = _converged()
    t["s2"] = [r for r in t["s2"] if r.prefix != "10.255.0.4/32"] + [_r("10.255.0.4/32", ("10.0.1.1", "s2-s1"))]
    t["s1"] = [r for r in t["s1"] if r.prefix != "10.255.0.4/32"] + [_r("10.255.0.4/32", ("10.0.1.2", "s1-s2"))]
    t["s3"] = [r for r in t["s3"] if r.prefix != "10.255.0.1/32"]
    found = check(RING, t)
    assert "packets s1 -> 10.255.0.4 (s4) loop: s1 -> s2 -> s1" in [f.message for f in found]
    assert "packets s3 -> 10.255.0.1 (s1) are dropped at s3: no route to 10.255.0.1" in [f.message for f in found]


def test_a_check_with_a_memo_sorts_only_the_tables_that_changed_and_finds_the_same():
    t = _converged()
    memo: dict = {}
    assert check(RING, t, memo=memo) == [] and set(memo) == {"s1", "s2", "s3", "s4"}
    kept = {k: v[1] for k, v in memo.items()}
    t["s3"] = [r for r in t["s3"] if r.prefix != "10.255.0.1/32"]   # a new table object for s3 only
    assert check(RING, t, memo=memo) == check(RING, t) != []
    assert all(memo[k][1] is kept[k] for k in ("s1", "s2", "s4")) and memo["s3"][1] is not kept["s3"]


def test_a_partitioned_pair_is_not_judged_and_multipath_follows_every_branch():
    t = _converged()
    t["s1"][1] = _r("10.255.0.3/32", ("10.0.1.2", "s1-s2"), ("10.0.2.2", "s1-s4"))
    assert check(RING, t) == []
    # s1-s2 down: one branch of s1's route to s3 dies but the other delivers, so no blackhole there
    found = check(RING, t, down=[frozenset(("s1", "s2"))])
    assert not [f for f in found if f.hosts == ("s1", "s3")]
    cut = check(RING, t, down=[frozenset(("s1", "s2")), frozenset(("s3", "s4"))])
    assert not [f for f in cut if f.hosts in {("s1", "s2"), ("s4", "s3"), ("s2", "s1")}]


def test_netlink_route_dumps_parse_into_routes():
    def attr(kind: int, data: bytes) -> bytes:
        ln = 4 + len(data)
        return struct.pack("=HH", ln, kind) + data + b"\0" * ((4 - ln % 4) % 4)

    def msg(body: bytes) -> bytes:
        return struct.pack("=IHHII", 16 + len(body), 24, 2, 1, 0) + body

    one = msg(struct.pack("=8BI", 2, 32, 0, 0, 254, 12, 0, 1, 0) + attr(1, bytes([10, 255, 0, 3]))
              + attr(5, bytes([10, 0, 1, 2])) + attr(4, struct.pack("=i", 7)))
    nh = lambda gw, oif: struct.pack("=HBBi", 16, 0, 0, oif) + attr(5, bytes(gw))  # noqa: E731
    multi = msg(struct.pack("=8BI", 2, 32, 0, 0, 254, 12, 0, 1, 0) + attr(1, bytes([10, 255, 0, 4]))
                + attr(9, nh([10, 0, 1, 2], 7) + nh([10, 0, 2, 2], 8)))
    hole = msg(struct.pack("=8BI", 2, 24, 0, 0, 254, 4, 0, 6, 0) + attr(1, bytes([192, 0, 2, 0])))
    local = msg(struct.pack("=8BI", 2, 32, 0, 0, 255, 2, 0, 2, 0) + attr(1, bytes([10, 0, 1, 1])))
    got = parse_routes(one + multi + hole + local, {7: "s1-s2", 8: "s1-s4"})
    assert [r.words() for r in got] == [
        "10.255.0.3/32 via 10.0.1.2 dev s1-s2 proto bird",
        "10.255.0.4/32 via 10.0.1.2 dev s1-s2, via 10.0.2.2 dev s1-s4 proto bird",
        "192.0.2.0/24 blackhole proto static"]


@pytest.mark.real
@pytest.mark.slow
def test_fuzz_finds_the_seeded_blackhole_and_minimize_cuts_it_to_the_link_failure(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "netsleuth.cli", "defined", *args], capture_output=True,
                              text=True, env=env, cwd=ROOT, timeout=600)

    f = cli("fuzz", "--daemon", "bird", "--topo", "ring,4", "--static-route", "s1:s2", "--seed", "8", "--steps", "12",
            "--json", "--out", str(tmp_path / "fuzz"))
    assert f.returncode == 1, f.stderr
    d = json.loads(f.stdout)
    assert len(d["events"]) >= 5 and d["violation"]["invariant"] == "blackholes"
    assert "dropped at s1: route 10.255.0.2/32 leaves by link s1-s2, which is down" in d["violation"]["message"]
    m = cli("minimize", str(tmp_path / "fuzz" / "events.jsonl"), "--json", "--out", str(tmp_path / "min"))
    assert m.returncode == 0, m.stderr
    r = json.loads(m.stdout)
    down = [e for e in d["events"] if e["type"] == "link_down" and {e["a"], e["b"]} == {"s1", "s2"}]
    assert r["reproduced"] and r["kept"] == down[:1], r
    assert [p["pass"] for p in r["passes"]] == ["check", "ddmin", "1-minimal"] and r["tests"] >= 3
    assert r["violation"]["message"] == d["violation"]["message"]
    # the same minimization again: the same replays, the same answer (deterministic under the ordering)
    again = json.loads(cli("minimize", str(tmp_path / "fuzz" / "events.jsonl"), "--json").stdout)
    assert [p["tests"] for p in again["passes"]] == [p["tests"] for p in r["passes"]] and again["kept"] == r["kept"]


@pytest.mark.real
@pytest.mark.slow
def test_a_link_that_flaps_while_ospf_starts_leaves_bird_looping_after_it_is_back():
    """A finding on BIRD 2.0.12, the same in every run: s3-s4 fails while OSPF starts (t=5), recovers
    (11), fails again (13) and recovers (19). s3 and s4 are adjacent again and their LSAs list the link,
    but neither reruns its route calculation, so s4 keeps reaching s3 the long way through s1 while s1
    splits its traffic to s3 over s2 and s4 (equal cost): half of it loops s4 -> s1 -> s4, for good."""
    from netsleuth.defined.daemons.events import ExtEvent
    from netsleuth.defined.daemons.replay import run_events

    ev = [ExtEvent(5, "link_down", "s3", "s4"), ExtEvent(11, "link_up", "s3", "s4"),
          ExtEvent(13, "link_down", "s3", "s4"), ExtEvent(19, "link_up", "s3", "s4")]
    runs = [run_events(RING, ev, tail=16) for _ in range(2)]
    r = runs[0]
    assert runs[1].deliveries == r.deliveries and runs[1].history == r.history
    loops = {v.finding.message: v for v in r.persistent(10.0)}
    loop = loops["packets s4 -> 10.255.0.3 (s3) loop: s4 -> s1 -> s4"]
    assert loop.until is None and loop.since < 19 and r.converged_at is not None and loop.since > r.converged_at
    assert r.virtual_seconds - 19 >= 15          # the link has been up for 15 s and more
    last = r.history["s4"][-1]
    assert last[0] < 19 and "10.255.0.3/32 via 10.0.2.1 dev s4-s1 proto bird" in last[2]


@pytest.mark.real
@pytest.mark.slow
def test_a_restarted_router_relearns_its_routes_the_same_way_every_run():
    from netsleuth.defined.daemons.events import ExtEvent
    from netsleuth.defined.daemons.replay import run_events

    ev = [ExtEvent(15, "crash", "s2"), ExtEvent(17, "restart", "s2")]
    runs = [run_events(RING, ev, tail=20) for _ in range(2)]
    assert runs[0].deliveries == runs[1].deliveries and runs[0].history == runs[1].history
    t, _, table = runs[0].history["s2"][-1]
    assert t > 17 and {f"10.255.0.{i}/32" for i in (1, 3, 4)} <= {w.split()[0] for w in table}
    # BIRD starts afresh: s2 forwards nothing until OSPF has its neighbours again, then all clears
    gaps = [v for v in runs[0].violations if v.finding.hosts[:1] == ("s2",) and v.since == 17]
    assert gaps and all(v.until is not None and v.until <= t for v in gaps)
