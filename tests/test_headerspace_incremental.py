"""Incremental header-space checks: after every flow_mod, the same findings as a full check.

Random flow_mods (add, modify, delete; strict and not; simple_switch-style exact
matches and coarser ones, outputs to hosts, switches, the in port, the controller,
no output at all) on random switches of a FatTree built like the benchmark's (all
host pairs routed); after each one, :class:`IncrementalHSA` must list the very
findings a fresh full check (nothing compiled or remembered) lists.
"""

from __future__ import annotations

import importlib.util
import pathlib
import random

from os_ken.ofproto import ofproto_v1_0 as ofp

from netsleuth.invariants import hsa_checks as H
from netsleuth.invariants import hsa_compile as C
from netsleuth.invariants import hsa_engine as E
from netsleuth.invariants.hsa_incremental import KINDS, IncrementalHSA
from netsleuth.model.actions import Output
from netsleuth.model.match import Match

_SPEC = importlib.util.spec_from_file_location(
    "bench_invariants", pathlib.Path(__file__).resolve().parents[1] / "bench" / "invariants.py")
bench = importlib.util.module_from_spec(_SPEC)  # type: ignore[arg-type]
_SPEC.loader.exec_module(bench)  # type: ignore[union-attr]

EXACT = bench.WILDCARDS                                  # in_port, dl_src, dl_dst
DST_ONLY = ofp.OFPFW_ALL & ~ofp.OFPFW_DL_DST             # dl_dst alone (mixes patterns at a port)


def _full(view) -> dict[str, list[str]]:
    """A full check's findings, from scratch (no compiled switch, no memo reused)."""
    C._CACHE.clear()
    H.forget_memos()
    a = E.analyze(view, cache=False)
    got = {"loops": H.hsa_loops(view, a), "blackholes": H.hsa_blackholes(view, a),
           "reachability": H.hsa_reachability(view, a)}
    return {k: sorted(f.message for f in got[k]) for k in KINDS}


def _texts(found) -> dict[str, list[str]]:
    return {k: sorted(f.message for f in found[k]) for k in KINDS}


def _random_flow_mod(rng: random.Random, switches: dict, hosts: list) -> tuple[str, Match]:
    """Apply one random flow_mod to a random switch; return (switch, its match)."""
    name = rng.choice(sorted(switches))
    sw = switches[name]
    ports = sorted(sw.ports)
    entries = sw.table.entries()
    kind = rng.random()
    if entries and kind < 0.35:  # change an existing entry: modify or delete, strict or not
        e = rng.choice(entries)
        m = e.match
        if rng.random() < 0.5:
            acts = _actions(rng, ports)
            sw.table.modify(m, acts, strict=rng.random() < 0.5, priority=e.priority)
        else:
            sw.table.delete(m, strict=rng.random() < 0.5, priority=e.priority)
        return name, m
    src, dst = rng.choice(hosts), rng.choice(hosts)
    if kind < 0.45:  # a coarser rule: every packet to one host
        m = Match(DST_ONLY, dl_dst=dst.mac)
    elif kind < 0.5:  # a non-strict delete of everything toward one host
        m = Match(DST_ONLY, dl_dst=dst.mac)
        sw.table.delete(m, strict=False)
        return name, m
    else:
        m = Match(EXACT, in_port=rng.choice(ports), dl_src=src.mac, dl_dst=dst.mac)
    sw.table.add(m, rng.choice([1, 1, 1, 5]), _actions(rng, ports))
    return name, m


def _actions(rng: random.Random, ports: list[int]) -> tuple:
    r = rng.random()
    if r < 0.08:
        return ()                                   # a drop rule
    if r < 0.14:
        return (Output(ofp.OFPP_CONTROLLER),)
    if r < 0.18:
        return (Output(ofp.OFPP_IN_PORT),)
    return (Output(rng.choice(ports + [max(ports) + 1])),)  # sometimes a port the switch lacks


def _run(seed: int, n: int, k: int = 4) -> tuple[IncrementalHSA, int]:
    rng = random.Random(seed)
    topo, switches, _info = bench.build_fattree(k)
    hosts = list(topo.hosts)
    inc = IncrementalHSA()
    view = bench.make_view(topo, switches)
    assert _texts(inc.check(view)) == _full(view)
    violating = 0
    for step in range(n):
        name, m = _random_flow_mod(rng, switches, hosts)
        view = bench.make_view(topo, switches)
        got = _texts(inc.flow_mod(view, name, m))
        want = _full(view)
        assert got == want, f"seed {seed} step {step}: flow_mod on {name} {m}"
        violating += any(want.values())
    return inc, violating


def test_incremental_equals_full_after_every_flow_mod():
    inc, violating = _run(seed=7, n=300)
    inc2, violating2 = _run(seed=11, n=250)
    assert inc.full_checks == 1 and inc2.full_checks == 1  # never fell back to a full check
    assert inc.partial_checks + inc2.partial_checks > 100
    assert violating > 50 and violating2 > 50   # the flow_mods do break things: findings were compared


def test_flow_mod_off_every_path_reanalyses_nothing():
    topo, switches, _info = bench.build_fattree(4)
    inc = IncrementalHSA()
    inc.check(bench.make_view(topo, switches))
    # a host pair that is not routed through this aggregation switch's port 1 in this direction
    hosts = list(topo.hosts)
    m = Match(EXACT, in_port=1, dl_src=0x0A0000000001, dl_dst=0x0A0000000002)
    assert 0x0A0000000001 not in {h.mac for h in hosts}
    switches["a1"].table.add(m, 1, (Output(2),))
    before = inc.reanalysed
    found = inc.flow_mod(bench.make_view(topo, switches), "a1", m)
    assert inc.reanalysed == before and not any(found.values())


def test_check_notices_a_link_change():
    topo, switches, _info = bench.build_fattree(4)
    inc = IncrementalHSA()
    inc.check(bench.make_view(topo, switches))
    up = dict(bench.make_view(topo, switches).link_up)
    link = sorted(lk for lk in up if lk[0].startswith("e") and lk[2].startswith("a"))[0]
    up[link] = False
    view = bench.make_view(topo, switches, link_up=up)
    got = _texts(inc.check(view))
    assert got["blackholes"] and got == _full(view) and inc.full_checks == 2


def test_unreported_flow_mod_is_noticed():
    topo, switches, _info = bench.build_fattree(4)
    inc = IncrementalHSA()
    inc.check(bench.make_view(topo, switches))
    e = switches["e1"].table.entries()[0]
    switches["e1"].table.modify(e.match, (Output(99),), strict=True, priority=e.priority)   # not reported
    e2 = switches["e2"].table.entries()[0]
    switches["e2"].table.modify(e2.match, (Output(ofp.OFPP_IN_PORT),), strict=True, priority=e2.priority)
    view = bench.make_view(topo, switches)
    got = _texts(inc.flow_mod(view, "e2", e2.match))   # reported: e2 only
    assert got == _full(view) and any(got.values()) and inc.full_checks == 2
    switches["e3"].table.delete(switches["e3"].table.entries()[0].match, strict=False)
    view = bench.make_view(topo, switches)
    assert _texts(inc.check(view)) == _full(view) and inc.full_checks == 3
