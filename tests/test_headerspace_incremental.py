"""Incremental header-space checks: after every flow_mod, the same findings as a full check.

Random flow_mods (add, modify, delete; strict and not; simple_switch-style exact
matches and coarser ones, outputs to hosts, switches, the in port, the controller,
no output at all) on random switches of a FatTree built like the benchmark's (all
host pairs routed); after each one, :class:`IncrementalHSA` must list the very
findings a fresh full check (nothing compiled or remembered) lists.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import pathlib
import random

import numpy as np
import pytest
from os_ken.ofproto import ofproto_v1_0 as ofp

from netsleuth.invariants.headerspace import cellsearch, codes
from netsleuth.invariants.headerspace import checks as H
from netsleuth.invariants.headerspace import compiled as C
from netsleuth.invariants.headerspace import engine as E
from netsleuth.invariants.headerspace import incremental_classes as IC
from netsleuth.invariants.headerspace import reachability as HR
from netsleuth.invariants.headerspace.incremental import KINDS, IncrementalHSA
from netsleuth.invariants.headerspace.incremental_records import KeySet
from netsleuth.model.actions import Output
from netsleuth.model.flowindex import action_id
from netsleuth.model.headerbits import intern_new, interner
from netsleuth.model.match import Match

_SPEC = importlib.util.spec_from_file_location(
    "bench_invariants", pathlib.Path(__file__).resolve().parents[1] / "bench" / "invariants.py")
bench = importlib.util.module_from_spec(_SPEC)  # type: ignore[arg-type]
_SPEC.loader.exec_module(bench)  # type: ignore[union-attr]

EXACT = bench.WILDCARDS                                  # in_port, dl_src, dl_dst
DST_ONLY = ofp.OFPFW_ALL & ~ofp.OFPFW_DL_DST             # dl_dst alone (mixes patterns at a port)


def _full(view) -> dict[str, list]:
    """A full check's findings, from scratch (no compiled switch, no memo reused)."""
    C._CACHE.clear()
    HR.forget_memos()
    a = E.analyze(view, cache=False)
    got = {"loops": H.hsa_loops(view, a), "blackholes": H.hsa_blackholes(view, a),
           "reachability": HR.hsa_reachability(view, a)}
    return _texts(got)


def _texts(found) -> dict[str, list]:
    """Every finding in full (message, hosts, switches, every detail), in the order listed."""
    return {k: [(f.message, f.hosts, f.switches, repr(sorted(f.details.items()))) for f in found[k]]
            for k in KINDS}


OPS = ("add", "add coarse", "modify strict", "modify", "delete strict", "delete", "restore", "loop")


def _random_flow_mod(rng: random.Random, switches: dict, hosts: list, links: list, original: dict,
                     pending: list) -> tuple[str, Match, str]:
    """Apply one random flow_mod to a random switch; return (switch, its match, which kind).

    Modifies and deletes mostly hit the routes the network was built with (so blackholes
    appear); "restore" puts one of a switch's original routes back (so they go away again);
    "loop" sends everything to one host across one link, from both ends (two flow_mods, the
    second on the next step), above the routes.  Non-strict ones take every entry inside
    their match: a coarse match (every packet to one host) or an existing entry's exact match."""
    if pending:
        name, m, port = pending.pop()  # the rest of a loop
        switches[name].table.add(m, 5, (Output(port),))
        return name, m, "loop"
    name = rng.choice(sorted(switches))
    sw = switches[name]
    ports = sorted(sw.ports)
    entries = sw.table.entries()
    op = rng.choice(OPS)
    dst = rng.choice(hosts)
    coarse = Match(DST_ONLY, dl_dst=dst.mac)
    if op in ("modify strict", "modify", "delete strict", "delete") and entries:
        e = rng.choice(entries)
        m = coarse if op in ("modify", "delete") and rng.random() < 0.3 else e.match
        strict = op.endswith("strict")
        if op.startswith("modify"):
            sw.table.modify(m, _actions(rng, ports), strict=strict, priority=e.priority)
        else:
            sw.table.delete(m, strict=strict, priority=e.priority)
        return name, m, op
    if op == "loop":  # around a 4-cycle edge -> agg -> edge -> agg -> edge, one hop per flow_mod
        hops = _square(rng, links)
        for s_, port in hops[1:]:
            pending.insert(0, (s_, coarse, port))
        switches[hops[0][0]].table.add(coarse, 5, (Output(hops[0][1]),))
        return hops[0][0], coarse, op
    if op == "restore" and original[name]:
        m, prio, acts = rng.choice(original[name])
        sw.table.add(m, prio, acts)  # an add of an existing match replaces its actions
        return name, m, op
    if op == "add coarse":
        m = coarse
    else:  # an add (or a restore on a switch that had no routes)
        src = rng.choice(hosts)
        m = Match(EXACT, in_port=rng.choice(ports), dl_src=src.mac, dl_dst=dst.mac)
        op = "add"
    sw.table.add(m, rng.choice([1, 1, 1, 5]), _actions(rng, ports))
    return name, m, op


def _square(rng: random.Random, links: list) -> list[tuple[str, int]]:
    """(switch, output port) around a random cycle e -> a -> e' -> a' -> e of a FatTree pod."""
    port: dict[tuple[str, str], int] = {}
    for a, pa, b, pb in links:
        port[(a, b)], port[(b, a)] = pa, pb
    nbs: dict[str, list[str]] = {}
    for a, b in sorted(port):
        nbs.setdefault(a, []).append(b)
    e = rng.choice(sorted(n for n in nbs if n.startswith("e")))
    a1, a2 = rng.sample([n for n in nbs[e] if n.startswith("a")], 2)
    e2 = rng.choice([n for n in nbs[a1] if n.startswith("e") and n != e and a2 in nbs[n]])
    cycle = [e, a1, e2, a2, e]
    return [(x, port[(x, y)]) for x, y in zip(cycle, cycle[1:], strict=False)]


def _actions(rng: random.Random, ports: list[int]) -> tuple:
    r = rng.random()
    if r < 0.08:
        return ()                                   # a drop rule
    if r < 0.14:
        return (Output(ofp.OFPP_CONTROLLER),)
    if r < 0.18:
        return (Output(ofp.OFPP_IN_PORT),)
    return (Output(rng.choice(ports + [max(ports) + 1])),)  # sometimes a port the switch lacks


def _run(seed: int, n: int, k: int = 4) -> tuple[IncrementalHSA, dict]:
    """``n`` random flow_mods, each compared with a full check; returns counts: flow_mods per
    kind, and per check how many flow_mods changed its findings and after how many it had any."""
    rng = random.Random(seed)
    topo, switches, _info = bench.build_fattree(k)
    original = {n: [(e.match, e.priority, e.actions) for e in sw.table.entries()] for n, sw in switches.items()}
    hosts = list(topo.hosts)
    links = [(lk.node1, lk.port1, lk.node2, lk.port2) for lk in topo.links
             if lk.node1 in switches and lk.node2 in switches]
    pending: list = []
    inc = IncrementalHSA()
    view = bench.make_view(topo, switches)
    before = _full(view)
    assert _texts(inc.check(view)) == before and not any(before.values())
    counts: dict = {op: 0 for op in OPS}
    counts.update({f"{k} changed": 0 for k in KINDS})
    counts.update({f"{k} present": 0 for k in KINDS})
    for step in range(n):
        name, m, op = _random_flow_mod(rng, switches, hosts, links, original, pending)
        counts[op] += 1
        view = bench.make_view(topo, switches)
        got = _texts(inc.flow_mod(view, name, m))
        want = _full(view)
        assert got == want, f"seed {seed} step {step}: {op} on {name} {m}"
        for kind in KINDS:
            counts[f"{kind} changed"] += want[kind] != before[kind]
            counts[f"{kind} present"] += bool(want[kind])
        before = want
    return inc, counts


@pytest.mark.slow
def test_incremental_equals_full_after_every_flow_mod():
    """550 random flow_mods of every kind; after each, every finding (message, hosts, switches,
    details) equals a full check's, in the same order."""
    total: dict = {}
    for seed, n in ((7, 300), (11, 250)):
        inc, counts = _run(seed, n)
        assert inc.full_checks == 1  # never fell back to a full check
        assert inc.partial_checks == n
        for key, v in counts.items():
            total[key] = total.get(key, 0) + v
    assert all(total[op] >= 40 for op in OPS), total   # every kind of flow_mod was exercised
    # the flow_mods do make (and unmake) loops, blackholes and unreachable pairs
    for kind in KINDS:
        assert total[f"{kind} changed"] >= 20 and total[f"{kind} present"] >= 20, total


def test_incremental_equals_full_on_a_few_dozen_flow_mods():
    """The fast twin of the test above: 40 random flow_mods, each compared with a full check; the
    flow_mods make and unmake findings, so an engine that reports nothing cannot pass."""
    inc, counts = _run(3, 40)
    assert inc.partial_checks == 40
    assert sum(counts[f"{k} changed"] for k in KINDS) >= 5, counts
    assert sum(counts[f"{k} present"] for k in KINDS) >= 10, counts


def _run_exact(seed: int, n: int) -> IncrementalHSA:
    """``n`` strict modifies and deletes of random entries (an exact match: one cell, a class or
    two) and adds of new routes between random hosts, each compared with a full check."""
    rng = random.Random(seed)
    topo, switches, _info = bench.build_fattree(4)
    hosts = list(topo.hosts)
    inc = IncrementalHSA()
    inc.check(bench.make_view(topo, switches))
    for step in range(n):
        name = rng.choice(sorted(switches))
        sw = switches[name]
        ports = sorted(sw.ports)
        entries = sw.table.entries()
        op = rng.choice(("modify", "delete", "add")) if entries else "add"
        e = rng.choice(entries) if entries else None
        if e is not None and op == "modify":
            sw.table.modify(e.match, _actions(rng, ports), strict=True, priority=e.priority)
            m = e.match
        elif e is not None and op == "delete":
            sw.table.delete(e.match, strict=True, priority=e.priority)
            m = e.match
        else:
            src, dst = rng.sample(hosts, 2)
            m = Match(EXACT, in_port=rng.choice(ports), dl_src=src.mac, dl_dst=dst.mac)
            sw.table.add(m, 1, _actions(rng, ports))
        view = bench.make_view(topo, switches)
        assert _texts(inc.flow_mod(view, name, m)) == _full(view), f"seed {seed} step {step}: {op} on {name} {m}"
    assert inc.partial_checks == n and inc.full_checks == 1
    return inc


def test_classes_traced_from_the_flow_mods_cell_equal_a_full_check():
    """A class of the full check's index that a flow_mod with a fixed in_port moves is traced from
    the flow_mod's cell on (its earlier hops cannot have changed), and its next re-trace starts
    from its ingress: after each of these flow_mods (most move a class not moved before, as on
    large networks) the findings equal a full check's."""
    inc = _run_exact(5, 40)
    assert inc.resumed >= 10, (inc.resumed, inc.reanalysed)
    assert inc.reanalysed > inc.resumed   # (some classes were moved a second time, or from their ingress)


def test_classes_out_of_hops_from_the_flow_mods_cell_start_from_their_ingress(monkeypatch):
    """The batch engine gives up on a class after ``_FAST_ROUNDS`` hops; a class traced from a
    flow_mod's cell on has only the hops left after the latest it can have come in there.  With
    a budget of 5 hops (a FatTree route between pods takes all 5) some of those walks run out and
    start over from the ingress, some classes go to the general engine, and the findings still
    equal a full check's (which gives up after 5 hops too)."""
    from netsleuth.invariants.headerspace import batch
    monkeypatch.setattr(batch, "_FAST_ROUNDS", 5)
    monkeypatch.setattr(IC, "_FAST_ROUNDS", 5)
    walks: list[bool] = []
    walk = IC._ClassTracker._walk

    def counted(self, ing, mask, x, start=None, hops=5):
        key, path = walk(self, ing, mask, x, start, hops)
        if start is not None:
            walks.append(key is None)
        return key, path

    monkeypatch.setattr(IC._ClassTracker, "_walk", counted)
    _run_exact(11, 60)
    assert any(walks) and not all(walks), walks   # some ran out of hops, some did not


def _clear_shared_codes() -> None:
    """Start the process-wide code maps afresh, as they do themselves when full."""
    codes._PORT_STATES.clear()
    codes._CODES.clear()
    codes._PS_GEN[0] += 1


def test_codes_stay_right_when_the_shared_code_maps_are_cleared(monkeypatch):
    """What an action list does is shared by (action list, in_port, port state id), and the
    maps are cleared when full, ids then handed out again: a compiled switch or the incremental
    check that kept a port state id from before a clear must not read another state's codes.
    a1 and a2 differ in port 3 only (a1's forwards nothing); a2's id is kept, then the maps are
    cleared and a1's state gets the very id a2 had, with its codes."""
    topo, switches, _info = bench.build_fattree(4)
    switches["a1"].ports[3].config |= ofp.OFPPC_NO_FWD
    aid = action_id((Output(3),))
    inc = IncrementalHSA()
    inc.check(bench.make_view(topo, switches))
    for code_of in (C.CompiledSwitch(switches["a2"]).code_for_aid, lambda a, p: inc._code_of("a2", a, p)):
        _clear_shared_codes()
        assert code_of(aid, 1) == 3  # a2's state: id 0 (the first question either asks)
        monkeypatch.setattr(codes, "_SHARED_MAX", 1)   # the next new state clears the maps
        assert C.CompiledSwitch(switches["a1"]).code_for_aid(aid, 1) == codes.F_NOTHING  # a1's state: id 0 now
        assert code_of(aid, 1) == 3
        monkeypatch.undo()


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


# a small cell to one bigger than any of a K=8 fat tree; 200: more than a fence stride, no fences
@pytest.mark.parametrize("n", [3, 40, 200, 3000])
def test_classes_of_a_key_at_a_cell_are_found_exactly(n):
    """A cell's classes of one key: every one (several ingresses may share a key, and a class that
    came in twice is listed twice), ascending, and none whose ingress number merely equals the key
    id; every class of the cell read back as it went in."""
    mask = (1 << 200) - (1 << 152)   # a pattern of one field (dl_dst's bits)
    intern, keys = interner(mask)
    ids = [intern[k] if k in intern else intern_new(mask, k) for k in (0xa1 << 152, 0xa2 << 152, 0xa3 << 152)]
    rng = random.Random(n)
    xs = [(rng.choice(ids + [ids[0] + 1]) << 32) | rng.choice(ids) for _ in range(n)]
    xs[0] = (ids[1] << 32) | ids[0]   # ingress number = another key's id
    cell = cellsearch.keyed_cell([np.array(xs[:n // 3], dtype=np.int64), np.array(xs[n // 3:], dtype=np.int64)])
    assert sorted(cellsearch.cell_classes(cell)) == sorted(xs)
    for j in ids:
        want = sorted(x for x in xs if x & 0xFFFFFFFF == j)
        assert want and cellsearch.overlapping_classes(cell, mask, keys[j], mask) == want
        # a match fixing fewer bits than the pattern takes the other path: the same classes
        half = mask & ~(1 << 152)
        assert sorted(cellsearch.overlapping_classes(cell, mask, keys[j], half)) == sorted(
            x for x in xs if keys[x & 0xFFFFFFFF] & half == keys[j] & half)
    assert cellsearch.overlapping_classes(cell, mask, 0xa4 << 152, mask) == []


def test_a_big_cell_finds_each_of_many_keys():
    """A cell with fences (thousands of classes of hundreds of keys): each key's classes exactly,
    whether its run starts at a fence item, between two, before the first or after the last."""
    mask = (1 << 200) - (1 << 152)
    intern, keys = interner(mask)
    ids = [intern[k] if k in intern else intern_new(mask, k) for k in ((0xb000 + i) << 152 for i in range(700))]
    rng = random.Random(7)
    xs = [(rng.randrange(1, 50) << 32) | rng.choice(ids) for _ in range(5000)]
    cell = cellsearch.keyed_cell([np.array(xs, dtype=np.int64)])
    assert sorted(cellsearch.cell_classes(cell)) == sorted(xs)
    for j in ids:
        want = sorted(x for x in xs if x & 0xFFFFFFFF == j)
        assert cellsearch.overlapping_classes(cell, mask, keys[j], mask) == want


@pytest.mark.parametrize("ordered", [True, False])
def test_an_ingress_key_set_lists_and_finds_what_a_dict_would(ordered):
    """An ingress's key ids kept as its port's array plus the flow_mods' changes: after random
    removals and additions (a key removed and added again included), membership, length and
    iteration order are a dict's after the same deletions and insertions."""
    rng = random.Random(3)
    base = sorted(rng.sample(range(10_000), 300))
    if not ordered:  # (a port compiled from its entries lists its keys in its own order)
        rng.shuffle(base)
    ks = KeySet(np.array(base, dtype=np.int32))
    want = dict.fromkeys(base)
    for _ in range(400):
        j = rng.choice(base) if rng.random() < 0.7 else rng.randrange(10_000)
        if j in want:
            del want[j]
            ks.discard(j)
        else:
            want[j] = None
            ks.add(j)
        assert (j in ks) == (j in want)
    assert list(ks) == list(want) and len(ks) == len(want)
    assert all((j in ks) == (j in want) for j in range(10_000))


def _batch_results(traced: bool, view) -> dict:
    """Every outcome of one batch run over ``view`` (each outcome's classes sorted)."""
    from netsleuth.invariants.headerspace import batch as EB
    from netsleuth.invariants.headerspace.general import HsaNet
    from netsleuth.invariants.headerspace.ingress import ingress_points

    net = HsaNet(view)
    ings = list(ingress_points(view))
    tags = {ing: t for t, ing in enumerate(ings)}
    trace: dict = {}
    b, rest = EB._batch(net, ings, tags, len(ings), trace if traced else None, {} if traced else None)
    got = {name: {k: sorted(v) for k, v in getattr(b, name).items()}
           for name in ("delivered", "punted", "filtered", "drops")}
    got["general"] = sorted(b.general)
    got["rest"] = rest
    got["hops"] = b.hops
    return got


def test_a_traced_batch_run_moving_rounds_at_once_ends_every_class_where_the_cell_by_cell_run_does():
    """The first check's batch run (every cell of a round moved at once, batch._Rounds) against the
    cell-by-cell rounds of a full check, on a network with every kind of end: a switch down, a
    link down, controller outputs, output to the in port, to a port the switch lacks, drop rules."""
    rng = random.Random(7)
    topo, switches, _info = bench.build_fattree(4)
    for name in sorted(switches)[::3]:
        sw = switches[name]
        ports = sorted(sw.ports)
        entries = sw.table.entries()
        for e in rng.sample(entries, min(6, len(entries))):
            acts = rng.choice([(), (Output(ofp.OFPP_CONTROLLER),), (Output(ofp.OFPP_IN_PORT),),
                               (Output(max(ports) + 1),), (Output(rng.choice(ports)),)])
            sw.table.modify(e.match, acts, strict=True, priority=e.priority)
    up = dict(bench.make_view(topo, switches).link_up)
    up[sorted(lk for lk in up if lk[0].startswith("e") and lk[2].startswith("a"))[1]] = False
    view = bench.make_view(topo, switches, link_up=up)
    view = dataclasses.replace(view, switch_up={sorted(n for n in switches if n.startswith("a"))[0]: False})
    cell_by_cell = _batch_results(False, view)
    at_once = _batch_results(True, view)
    assert at_once == cell_by_cell
    assert all(cell_by_cell[k] for k in ("delivered", "punted", "filtered", "drops"))
    assert any(k[2] == -100 for k in cell_by_cell["drops"])   # (the switch that is down)
