"""Table views kept up to date entry by entry (``of13/tableviews.py``) equal views built anew.

Random FLOW_MODs on the two-table FatTree of the benchmark (adds at every priority, with and
without in_port; modifies; strict and non-strict deletes; OFPTT_ALL deletes), many entries at
once now and then; after each one :meth:`LiveCompiled.sync` and every view it had built (for
several current-header mappings, in_ports and metadata) must hold the very entries, in the
very order, with the very wildcards, that a freshly compiled pipeline's view holds, and
answer every probe the same.
"""

from __future__ import annotations

import importlib.util
import pathlib
import random

import pytest
from os_ken.ofproto import ofproto_v1_3 as ofp

from netsleuth.invariants.headerspace.of13 import tableviews
from netsleuth.invariants.headerspace.of13.space import HS13
from netsleuth.invariants.headerspace.of13.switch13 import Compiled13, _TableView
from netsleuth.invariants.headerspace.of13.symbolic import IDENTITY, Sym
from netsleuth.model.of13 import flowtable
from netsleuth.model.of13.actions import Output
from netsleuth.model.of13.headerbits import FULL13, SHIFT13, wc13
from netsleuth.model.of13.instructions import Instructions
from netsleuth.model.of13.oxm import OxmMatch

_SPEC = importlib.util.spec_from_file_location(
    "bench_invariants", pathlib.Path(__file__).resolve().parents[1] / "bench" / "invariants.py")
bench = importlib.util.module_from_spec(_SPEC)  # type: ignore[arg-type]
_SPEC.loader.exec_module(bench)  # type: ignore[union-attr]

_DST = FULL13["eth_dst"] << SHIFT13["eth_dst"]
_SRC = FULL13["eth_src"] << SHIFT13["eth_src"]


def _contents(tv: _TableView) -> list:
    return [(tv.entries[r], tv.ws[r]) for r in sorted(tv.ws)]


def _split(tv: _TableView, hs: HS13) -> list:
    return [(None if r is None else id(tv.entries[r]), piece.terms) for r, piece in tv.classify(hs)]


def _probes(tv: _TableView, macs: list[int]) -> list:
    """Candidates (as entries, in order) for wildcards that fix all, some or none of the
    bits the entries test (the partial ones go through the view's sub-indexes; the best of
    those that fix all of them through the short road's probe too), and how
    the headers a host sends split among the entries (a kept view remembers the pieces)."""
    out = [_split(tv, HS13.injected().intersect_wc(wc13(eth_src=mac))) for mac in macs[:3]]
    keys: list[int] = []
    best: list[int | None] = []
    out.append(_split(tv, HS13.injected()))
    for mac in macs[:6]:
        for v, m in ((mac << SHIFT13["eth_dst"], _DST), (mac << SHIFT13["eth_src"], _SRC), (0, 0),
                     ((mac << SHIFT13["eth_dst"]) | (macs[0] << SHIFT13["eth_src"]), _DST | _SRC)):
            cands = tv.candidates(v, m)
            out.append([id(tv.entries[r]) for r in cands])
            if m & tv.bits == tv.bits:   # the short road's probe, for headers that fix every tested bit
                assert tv.fixed_best((v & tv.bits) >> tv.low) == (cands[0] if cands else None)
                keys.append((v & tv.bits) >> tv.low)
                best.append(cands[0] if cands else None)
    # the probes of a wave's classes, all at once (then each rank kept per mask and value follows puts and drops)
    assert tv.fixed_best_many(keys) == best
    return out


def _change(rng: random.Random, pipe, macs: list[int]) -> int | None:
    """One random change; the table it wrote (None: maybe several)."""
    ports = sorted(pipe.ports)
    op = rng.random()
    entries = pipe.tables.entries()
    if op < 0.35 and entries:
        e = rng.choice(entries)
        strict = rng.random() < 0.5
        m = e.match if strict or rng.random() < 0.6 else OxmMatch.build(eth_dst=rng.choice(macs))
        table = e.table_id if rng.random() < 0.9 else ofp.OFPTT_ALL
        if rng.random() < 0.4 and table != ofp.OFPTT_ALL:
            pipe.modify_flows(table, m, Instructions.actions(Output(rng.choice(ports))), strict=strict,
                              priority=e.priority)
        else:
            pipe.tables.delete(table, m, strict=strict, priority=e.priority)
        return None if table == ofp.OFPTT_ALL else table
    table = rng.choice([0, 1, 1])
    for _ in range(rng.choice([1, 1, 1, 40])):   # now and then many at once, between the same neighbours
        r = rng.random()
        if r < 0.3:
            m = OxmMatch.build(eth_dst=rng.choice(macs))
        elif r < 0.5:
            m = OxmMatch.build(in_port=rng.choice(ports))
        else:
            m = OxmMatch.build(in_port=rng.choice(ports), eth_src=rng.choice(macs), eth_dst=rng.choice(macs))
        pipe.add_flow(table, m, rng.choice([0, 1, 1, 5, 20, 35]), Instructions.actions(Output(rng.choice(ports))))
    return table


@pytest.mark.parametrize(("gap", "journal"), [(tableviews.GAP, flowtable.JOURNAL), (4, flowtable.JOURNAL),
                                               (tableviews.GAP, 1)])
def test_views_follow_their_tables(gap: int, journal: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """``gap`` 4: neighbours run out of room at once, so the views are dropped and read anew;
    ``journal`` 1: the tables' journals do not reach back, so the entries are compared."""
    monkeypatch.setattr(tableviews, "GAP", gap)
    monkeypatch.setattr(flowtable, "JOURNAL", journal)
    resets: list[int] = []
    reset = tableviews.LiveCompiled._reset
    monkeypatch.setattr(tableviews.LiveCompiled, "_reset", lambda self, t: (resets.append(t), reset(self, t)))
    topo, switches10, _info = bench.build_fattree(4)
    pipes = bench.build_fattree13(4, topo, switches10)
    macs = [h.mac for h in topo.hosts]
    rng = random.Random(7)
    names = sorted(pipes)
    syms = [IDENTITY, Sym({"eth_dst": macs[1]}), Sym({"eth_src": "eth_dst"})]
    live = {n: tableviews.LiveCompiled(pipes[n]) for n in names}
    synced = 0
    for step in range(150):
        name = rng.choice(names)
        pipe, comp = pipes[name], live[name]
        for _ in range(3):   # views used before the change (some kept, some built after)
            comp.view(rng.choice([0, 1]), rng.choice(syms), rng.choice(sorted(pipe.ports)), rng.choice([0, 0, 6]), 0)
        for tv in list(comp._views.values()):
            _probes(tv, macs)   # sub-indexes built, to be kept up to date too
        table = _change(rng, pipe, macs)
        comp.sync(None if step % 3 == 0 else table)
        fresh = Compiled13(pipe)
        for (t, _key, in_port, md, tid), tv in comp._views.items():
            sym = comp._how[(t, _key, in_port, md, tid)][0]
            want = fresh.view(t, sym, in_port, md, tid)
            assert _contents(tv) == _contents(want), f"step {step}: {name} table {t} in_port {in_port}"
            assert _probes(tv, macs) == _probes(want, macs), f"step {step}: probes differ"
            synced += 1
    assert synced > 500
    assert bool(resets) == (gap == 4), "room runs out with small gaps only"


def test_journal_and_position() -> None:
    """What ``FlowTables`` tells the views: the entries in and out since a serial, in order, and
    where an entry sits."""
    tables = flowtable.FlowTables(2)
    s0 = tables.serial(1)
    m1, m2 = OxmMatch.build(eth_dst=1), OxmMatch.build(eth_dst=2)
    tables.add(1, m1, 5, Instructions())
    tables.add(1, m2, 9, Instructions())
    a, b = tables.entries(1)[1], tables.entries(1)[0]
    assert tables.changes_since(1, s0) == [(a, True), (b, True)] and tables.changes_since(0, 0) == []
    assert [tables.position(e) for e in (a, b)] == [1, 0]
    s1 = tables.serial(1)
    tables.modify(1, m1, Instructions(goto=None), strict=False)   # keeps its entries: no change
    assert tables.serial(1) == s1
    tables.add(1, m1, 5, Instructions())                          # replaces a: out, then the new one in
    c = tables.entries(1)[1]
    assert tables.changes_since(1, s1) == [(a, False), (c, True)] and tables.position(a) is None
    for n in range(3 * flowtable.JOURNAL):
        tables.add(0, OxmMatch.build(eth_dst=n + 10), 1, Instructions())
    assert tables.changes_since(0, 0) is None and len(tables.changes_since(0, tables.serial(0) - 5) or ()) == 5


def test_a_rank_given_again() -> None:
    """An entry deleted and another added at its place get the same rank: the pieces the view
    remembered for the first must not stand for the second."""
    topo, switches10, _info = bench.build_fattree(4)
    pipes = bench.build_fattree13(4, topo, switches10)
    pipe = pipes["e1"]
    comp = tableviews.LiveCompiled(pipe)
    hs = HS13.injected()
    tv = comp.view(1, IDENTITY, 1, 0, 0)
    first = _split(tv, hs)
    e = pipe.tables.entries(1)[3]
    dst = e.match.get("eth_dst")[0]
    rank = comp._tabs[1].rank[id(e)]
    pipe.tables.delete(1, e.match, strict=True, priority=e.priority)
    comp.sync(1)
    m = OxmMatch.build(in_port=1, eth_dst=dst)   # sorts where e was, takes every sender's headers
    pipe.add_flow(1, m, e.priority, Instructions.actions(Output(2)))
    comp.sync(1)
    assert comp._tabs[1].rank[id(pipe.tables.select(1, m, strict=True, priority=e.priority)[0])] == rank
    now = _split(tv, hs)
    assert now == _split(Compiled13(pipe).view(1, IDENTITY, 1, 0, 0), hs) and now != first
