"""Incremental 1.3 header-space checks: after every message, the same findings as a full check.

Random FLOW_MODs (add, modify, delete; strict and not; in table 0, the ACL, and table 1,
the forwarding; outputs to hosts, switches, the in port, the controller, a group, no
output at all; an OFPTT_ALL delete now and then) and GROUP_MODs (add, modify, delete of
ALL, INDIRECT and FAST_FAILOVER groups) on the two-table FatTree of the benchmark and on
the tables a real Faucet installed; after each one, :class:`IncrementalHSA13` must list
the very findings a fresh full check (nothing compiled or remembered) lists.
"""

from __future__ import annotations

import importlib.util
import pathlib
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from os_ken.ofproto import ofproto_v1_3 as ofp

from netsleuth.invariants.headerspace.of13 import engine as E13
from netsleuth.invariants.headerspace.of13.checks import check_all13
from netsleuth.invariants.headerspace.of13.incremental import KINDS, IncrementalHSA13
from netsleuth.model.of13.actions import Group, Output
from netsleuth.model.of13.errors import OFError
from netsleuth.model.of13.groups import Bucket
from netsleuth.model.of13.instructions import Instructions
from netsleuth.model.of13.oxm import OxmMatch

_SPEC = importlib.util.spec_from_file_location(
    "bench_invariants", pathlib.Path(__file__).resolve().parents[1] / "bench" / "invariants.py")
bench = importlib.util.module_from_spec(_SPEC)  # type: ignore[arg-type]
_SPEC.loader.exec_module(bench)  # type: ignore[union-attr]

GROUP_TYPES = (ofp.OFPGT_ALL, ofp.OFPGT_INDIRECT, ofp.OFPGT_FF)


def _texts(found: dict) -> dict[str, list]:
    """Every finding in full (message, hosts, switches, every detail), in the order listed."""
    return {k: [(f.message, f.hosts, f.switches, repr(sorted(f.details.items()))) for f in found[k]]
            for k in KINDS}


def _full(view: Any) -> dict[str, list]:
    E13.forget13()
    return _texts(check_all13(view, cache=False))


def _outputs(rng: random.Random, ports: list[int], groups: list[int]) -> Instructions:
    r = rng.random()
    if r < 0.08:
        return Instructions()                                     # a drop rule
    if r < 0.14:
        return Instructions.actions(Output(ofp.OFPP_CONTROLLER))
    if r < 0.18:
        return Instructions.actions(Output(ofp.OFPP_IN_PORT))
    if r < 0.3 and groups:
        return Instructions.actions(Group(rng.choice(groups)))
    return Instructions.actions(Output(rng.choice(ports + [max(ports) + 1])))


def _random_message(rng: random.Random, pipes: dict, macs: list[int], links: list,
                    pending: list) -> tuple[str, str, Any] | None:
    """Apply one random message to a random pipeline; (switch, kind, what the engine is told),
    or None when the switch refused it (nothing changed).  Now and then the first of four
    that send every header to one host around a cycle of four switches (a loop); the others
    are the next messages."""
    if pending:
        name, m, port = pending.pop()
        pipes[name].add_flow(1, m, 30, Instructions.actions(Output(port)))
        return name, "flow", (1, m)
    hops = _cycle(rng, links) if links and rng.random() < 0.03 else None
    if hops:
        m = OxmMatch.build(eth_dst=rng.choice(macs))
        for sw, port in hops[1:]:
            pending.insert(0, (sw, m, port))
        pipes[hops[0][0]].add_flow(1, m, 30, Instructions.actions(Output(hops[0][1])))
        return hops[0][0], "flow", (1, m)
    name = rng.choice(sorted(pipes))
    pipe = pipes[name]
    ports = sorted(pipe.ports)
    groups = sorted(pipe.groups.groups)
    op = rng.random()
    try:
        if op < 0.12:   # GROUP_MOD
            gid = rng.choice([1, 2, 3])
            cmd = rng.choice(["add", "modify", "delete"])
            if cmd == "delete":
                pipe.delete_group(gid)
                return name, "group", (gid, True)
            buckets = [Bucket((Output(p),), watch_port=p) for p in rng.sample(ports, rng.choice([1, 2]))]
            gtype = rng.choice(GROUP_TYPES)
            if gtype == ofp.OFPGT_INDIRECT:
                buckets = buckets[:1]
            (pipe.add_group if cmd == "add" else pipe.modify_group)(gid, gtype, buckets)
            return name, "group", (gid, False)
        entries = pipe.tables.entries()
        if op < 0.5 and entries:   # modify or delete an entry (its own match, or every flow to one host)
            e = rng.choice(entries)
            strict = rng.random() < 0.5
            m = e.match if strict or rng.random() < 0.7 else OxmMatch.build(eth_dst=rng.choice(macs))
            table = e.table_id if rng.random() < 0.95 else ofp.OFPTT_ALL
            if rng.random() < 0.5 and table != ofp.OFPTT_ALL:
                pipe.modify_flows(table, m, _outputs(rng, ports, groups), strict=strict, priority=e.priority)
            else:
                pipe.tables.delete(table, m, strict=strict, priority=e.priority)
            return name, "flow", (table, m)
        table = 1 if rng.random() < 0.85 else 0
        if rng.random() < 0.3:
            m = OxmMatch.build(eth_dst=rng.choice(macs))
        else:
            m = OxmMatch.build(in_port=rng.choice(ports), eth_src=rng.choice(macs), eth_dst=rng.choice(macs))
        inst = Instructions(goto=1) if table == 0 and rng.random() < 0.5 else _outputs(rng, ports, groups)
        pipe.add_flow(table, m, rng.choice([1, 1, 5, 20]), inst)
        return name, "flow", (table, m)
    except OFError:
        return None


def _cycle(rng: random.Random, links: list) -> list[tuple[str, int]] | None:
    """(switch, output port) around a random cycle of four switches, when the network has one."""
    port: dict[tuple[str, str], int] = {}
    for a, pa, b, pb in links:
        port[(a, b)], port[(b, a)] = pa, pb
    nbs: dict[str, list[str]] = {}
    for a, b in sorted(port):
        nbs.setdefault(a, []).append(b)
    starts = sorted(nbs)
    rng.shuffle(starts)
    for x in starts:
        for y1 in nbs[x]:
            for z in nbs[y1]:
                for y2 in nbs[z]:
                    if z != x and y2 != y1 and y2 != x and x in nbs[y2]:
                        cycle = [x, y1, z, y2, x]
                        return [(u, port[(u, v)]) for u, v in zip(cycle, cycle[1:], strict=False)]
    return None


def _tell(inc: IncrementalHSA13, view: Any, name: str, kind: str, what: Any) -> dict:
    if kind == "flow":
        return inc.flow_mod(view, name, *what)
    return inc.group_mod(view, name, *what)


def _run(view_of: Callable[[], Any], pipes: dict, macs: list[int], seed: int, n: int) -> dict[str, int]:
    """``n`` random messages, each followed by a comparison with a full check; counts of what ran."""
    rng = random.Random(seed)
    inc = IncrementalHSA13()
    view = view_of()
    links = sorted((lk.node1, lk.port1, lk.node2, lk.port2) for lk in view.topology.links
                   if lk.node1 in pipes and lk.node2 in pipes)
    pending: list = []
    assert _texts(inc.check(view)) == _full(view)
    counts = {"messages": 0, "refused": 0, "group": 0, "flow": 0}
    counts.update({f"{k} present": 0 for k in KINDS})
    while counts["messages"] < n:
        got = _random_message(rng, pipes, macs, links, pending)
        if got is None:
            counts["refused"] += 1
            continue
        name, kind, what = got
        counts["messages"] += 1
        counts[kind] += 1
        view = view_of()
        found = _texts(_tell(inc, view, name, kind, what))
        want = _full(view)
        assert found == want, f"message {counts['messages']} ({kind} on {name}: {what}): not a full check's findings"
        for k in KINDS:
            counts[f"{k} present"] += bool(want[k])
    assert inc.full_checks == 1 and inc.partial_checks == n, "every message went through the incremental path"
    return counts


def _fattree(k: int) -> tuple[Callable[[], Any], dict, list[int]]:
    topo, switches10, _info = bench.build_fattree(k)
    pipes = bench.build_fattree13(k, topo, switches10)
    return (lambda: bench.make_view13(topo, pipes)), pipes, [h.mac for h in topo.hosts]


def test_fattree_two_tables_fast() -> None:
    counts = _run(*_fattree(4), seed=3, n=45)
    assert counts["group"] and counts["flow"] and counts["blackholes present"] and counts["reachability present"]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_fattree_two_tables_500(seed: int) -> None:
    counts = _run(*_fattree(4), seed=seed, n=500)
    assert counts["group"] > 20 and counts["blackholes present"] > 50 and counts["reachability present"] > 50
    assert counts["loops present"] > 10


@pytest.fixture(scope="session")
def faucet_trace(built_once: Callable[[str, Callable[[Path], Path]], Path]) -> Path:
    """A real Faucet run (its stack on a depth-2 tree, pingall), recorded once per test run."""
    from netsleuth.jobs.run import RunOptions, run
    from netsleuth.live.ready import faucet_stack_up

    def record(out: Path) -> Path:
        run(RunOptions(controller="faucet:auto", topo="tree,depth=2,fanout=2", out=out / "run", pingall=True,
                       warmup=15.0, warmup_ready=faucet_stack_up()))
        return out / "run" / "trace.jsonl"

    return built_once("faucet_stack_trace", record)


@pytest.mark.real
@pytest.mark.slow
def test_faucet_tables_500(faucet_trace: Path) -> None:
    """Faucet's own multi-table pipeline (VLAN, ACL, ETH_SRC, ETH_DST, FLOOD tables, metadata,
    push/pop VLAN, its flooding), rebuilt from the recorded run, under the same messages."""
    from netsleuth.invariants.headerspace.of13.engine import pipeline13_of
    from netsleuth.trace.io import read_trace
    from netsleuth.world.rebuild import rebuild

    t = read_trace(faucet_trace)
    world = rebuild(t.header, t.events, None).world
    view0 = world.view()
    pipes = {n: pipeline13_of(view0, n) for n in sorted(view0.switches)}
    assert all(p is not None and len(p.tables) > 10 for p in pipes.values()), "Faucet installed its pipeline"
    counts = _run(world.view, pipes, [h.mac for h in view0.topology.hosts], seed=5, n=500)
    assert counts["group"] > 20 and counts["reachability present"] > 50


def test_anything_but_a_message_starts_over() -> None:
    """A link going down, an entry expiring: ``check`` notices and runs a full check, whose
    findings then stand for the next messages."""
    view_of, pipes, macs = _fattree(4)
    inc = IncrementalHSA13()
    view = view_of()
    inc.check(view)
    link = sorted(k for k in view.link_up if k[0] in pipes and k[2] in pipes)[0]
    down = bench.make_view13(view.topology, pipes)
    down.link_up[link] = False
    assert _texts(inc.check(down)) == _full(down) and inc.full_checks == 2
    sw = link[0]
    e = next(e for e in pipes[sw].tables.entries(1) if e.priority == 1)
    pipes[sw].tables.delete(1, e.match, strict=True, priority=e.priority)   # as if it expired: not reported
    assert _texts(inc.check(down)) == _full(down) and inc.full_checks == 3
    assert _texts(inc.check(down)) == _full(down) and inc.full_checks == 3   # nothing changed: no new check
    m = OxmMatch.build(eth_dst=macs[0])
    pipes[sw].add_flow(1, m, 40, Instructions())
    assert _texts(inc.flow_mod(down, sw, 1, m)) == _full(down) and inc.partial_checks == 1


def test_a_modify_upstream_of_a_blackhole() -> None:
    """A MODIFY that gives an entry new instructions with the same forwarding (a queue, then
    the same output) re-runs the hops that hit it but keeps what lies downstream; a blackhole
    further on lists that entry among its rules, so its finding must read the new instructions."""
    from netsleuth.model.of13.actions import SetQueue

    view_of, pipes, macs = _fattree(4)
    inc = IncrementalHSA13()
    inc.check(view_of())
    src, dst = macs[0], macs[-1]
    up = next(e for e in pipes["e1"].tables.entries(1)
              if e.match.get("eth_src") == (src, 0xFFFFFFFFFFFF) and e.match.get("eth_dst") == (dst, 0xFFFFFFFFFFFF))
    out = up.instructions.apply[0].port
    nxt = bench.make_view13(view_of().topology, pipes).peer("e1", out)[0]
    far = next(e for e in pipes[nxt].tables.entries(1) if e.match.get("eth_dst") == (dst, 0xFFFFFFFFFFFF))
    pipes[nxt].modify_flows(1, far.match, Instructions.actions(Output(99)), strict=True, priority=far.priority)
    view = view_of()
    assert _texts(inc.flow_mod(view, nxt, 1, far.match)) == _full(view)
    assert any("99" in f[0] for f in _full(view)["blackholes"]), "a blackhole downstream of e1"
    pipes["e1"].modify_flows(1, up.match, Instructions.actions(SetQueue(1), Output(out)), strict=True,
                             priority=up.priority)
    view = view_of()
    assert _texts(inc.flow_mod(view, "e1", 1, up.match)) == _full(view)
