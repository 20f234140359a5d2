"""Benchmark: one header-space loops+blackholes+reachability check vs rules and switches.

For each FatTree K (``netsleuth.model.topo_builders.parse_topo("fattree,K")``), in
a fresh subprocess of this script (``--one K``) so that memory is per K:

* flows: for every ordered host pair, the exact flows os-ken's simple_switch
  would end up with (``in_port, dl_src, dl_dst -> output``, priority 1)
  along one shortest path (a BFS tree toward each destination host), built
  directly into each switch's ``FlowTable``.  When all pairs would exceed
  ``--max-rules`` (K >= 24: tens of millions of rules), flows are built for all
  sources toward the first D destinations that fit the budget, and the row says so
  (``pairs_with_flows``); ``--max-rules 0`` builds every destination;
* build: seconds to build the tables (reported apart from the checks), and per
  flow_mod: up to 50,000 flows of the busiest switch re-added to a fresh table with
  ``add`` one by one and with the bulk path ``add_many`` (same table);
* cold: the first ``analyze`` + three checks on a fresh view, nothing compiled
  or remembered yet (every switch is compiled from its table's pattern index;
  the batch engine visits every class without any memory of a previous check);
* cold, old path (up to ``--old-path-max-rules``: it makes an object per rule): the same
  after forgetting every compiled switch and the checks' memories, compiling from scratch
  (sorting each table, grouping and packing every rule) as before the pattern indexes;
* warm: the same check again on a new view, tables unchanged (compiled
  switches are validated by ``FlowTable.version`` and reused, and so is the
  batch engine's last run, whose inputs are then unchanged);
* warm, entry scan: the baseline for that counter, measured in the same run
  with ``version`` hidden, so "is this table unchanged?" compares every entry;
* incremental: after one flow_mod-like change on one edge switch (a full check: the
  tables' compiled forms and the batch engine's memories make it cheaper than cold);
* per flow_mod (``--updates``, last, as it changes the tables; ``--updates-only``: this
  alone): ``IncrementalHSA``, which re-traces only the header classes that crossed the
  flow_mod's switch with a key its match overlaps, over random flow_mods (adds, modifies,
  deletes, strict and not): median, p99 and max CPU ms per flow_mod, beside the CPU time of
  a full check of the same network every 100 flow_mods (and of one before any flow_mod),
  whose findings must equal the incremental ones in order and in every detail;
* general: the general engine alone (no batch classes), small K only;
* every run must report no violation (the routes are correct);
* memory: the tables' bytes per rule (RSS after building minus before), and the
  child's peak RSS (``ru_maxrss``) and bytes per rule all-in (the whole process: tables,
  compiled switches, the checks' memories) after the cold, warm and incremental checks,
  before the per-rule baselines; also after them and after the per-flow_mod phase;
* before (``--before GIT_REF``, K <= ``--before-max-k``): the same phases and memory
  figures measured by this script run inside ``GIT_REF``'s netsleuth package (extracted
  with ``git archive``), in the same run: the storage before beside the storage now;
* two tables (OpenFlow 1.3, K <= ``--two-table-max-k``): the same flows as
  ``Pipeline13``s, table 1 holding them (``in_port, eth_src, eth_dst ->
  output``, priority 1, a table-miss entry to the controller) behind table 0,
  an ACL: anti-spoofing per host port (the host's own eth_src goes on to table
  1, anything else from that port is dropped), drops for the link-local
  multicast destinations of STP and LLDP, and goto table 1 for everything
  else.  Cold (nothing compiled) and warm (same tables, new view) seconds of
  the same three checks through the 1.3 engine, beside the one-table rows;
  the ACL's drops are drop rules, the controller's choice, so no run reports
  a violation here either.

The parent prints a rich table and writes ``bench/results/invariants.json``.

    .venv/bin/python bench/invariants.py                   # K = 4,8,16,24,32
    .venv/bin/python bench/invariants.py --ks 4,8 --repeat 5
    .venv/bin/python bench/invariants.py --ks 12,16 --before main   # before/after, K=12 both
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from os_ken.ofproto import ofproto_v1_0 as ofp  # noqa: E402
from os_ken.ofproto import ofproto_v1_3 as ofp13  # noqa: E402

from netsleuth.invariants.headerspace import checks as H  # noqa: E402
from netsleuth.invariants.headerspace import compiled as C  # noqa: E402
from netsleuth.invariants.headerspace import engine as E  # noqa: E402
from netsleuth.invariants.headerspace import reachability as HR  # noqa: E402
from netsleuth.invariants.view import NetworkView  # noqa: E402
from netsleuth.model.actions import Output  # noqa: E402
from netsleuth.model.flowtable import FlowTable  # noqa: E402
from netsleuth.model.match import Match  # noqa: E402
from netsleuth.model.switch import Switch  # noqa: E402
from netsleuth.model.topo_builders import parse_topo  # noqa: E402

DEFAULT_KS = "4,8,16,24,32"
RESULTS = ROOT / "bench" / "results" / "invariants.json"
WILDCARDS = ofp.OFPFW_ALL & ~(ofp.OFPFW_IN_PORT | ofp.OFPFW_DL_SRC | ofp.OFPFW_DL_DST)
GENERAL_MAX_RULES = 100_000
OLD_PATH_MAX_RULES = 1_000_000  # the compile-from-entries baselines make an object per rule
SKIP_REACHABILITY = False  # --skip-reachability: tables and analysis alone (memory at K=24)


# --------------------------------------------------------------------------- building
def build_fattree(k: int, max_rules: int | None = None):
    """(topology, switches, info): simple_switch-style exact flows along shortest paths."""
    topo = parse_topo(f"fattree,{k}")
    switches = {s.name: Switch(s.dpid, topo.ports(s.name), name=s.name) for s in topo.switches}
    adj: dict[str, list[tuple[int, str, int]]] = {s: [] for s in switches}
    loc: dict[str, tuple[str, int]] = {}
    for lk in topo.links:
        a, pa, b, pb = lk.node1, lk.port1, lk.node2, lk.port2
        if a in switches and b in switches:
            adj[a].append((pa, b, pb))
            adj[b].append((pb, a, pa))
        elif a in switches:
            loc[b] = (a, pa)
        else:
            loc[a] = (b, pb)
    for lst in adj.values():
        lst.sort()
    hosts = list(topo.hosts)
    n_sw = {name: 0 for name in switches}
    total_pairs = len(hosts) * (len(hosts) - 1)
    dsts = hosts
    if max_rules is not None and hosts:
        # every destination needs the same number of flows in a fat tree: count one
        toward, depth = _bfs(adj, loc[hosts[0].name])
        per_dst = sum(depth[loc[h.name][0]] + 1 for h in hosts[1:])
        if per_dst * len(hosts) > max_rules:
            dsts = hosts[:max(1, max_rules // per_dst)]
    actions = {p: (Output(p),) for s in switches for p in topo.ports(s)}
    rules = 0
    pairs = 0
    for n, d in enumerate(dsts):
        home = loc[d.name][0]
        toward, _depth = _bfs(adj, loc[d.name], spread=n)
        dmac = d.mac
        for src in hosts:
            if src is d:
                continue
            s, inp = loc[src.name]
            smac = src.mac
            pairs += 1
            while True:
                out = toward[s]
                switches[s].table.add(Match(WILDCARDS, in_port=inp, dl_src=smac, dl_dst=dmac), 1, actions[out])
                rules += 1
                n_sw[s] += 1
                if s == home:
                    break
                s, inp = _neighbor(adj, s, out)
    info = {"rules": rules, "pairs_with_flows": pairs, "all_pairs": pairs == total_pairs,
            "host_pairs": total_pairs, "dst_hosts_with_flows": len(dsts),
            "max_rules_per_switch": max(n_sw.values())}
    return topo, switches, info


def _bfs(adj, home: tuple[str, int], spread: int = 0) -> tuple[dict[str, int], dict[str, int]]:
    """Toward a host attached at ``home``: the output port at every switch, and its distance.
    ``spread`` rotates every neighbour list, so different destinations use different
    (equally short) paths, as ECMP would."""
    sw, port = home
    toward = {sw: port}
    depth = {sw: 0}
    q = deque([sw])
    while q:
        s = q.popleft()
        nbs = adj[s]
        r = spread % len(nbs) if nbs else 0
        for _port, nb, nb_port in nbs[r:] + nbs[:r]:
            if nb not in toward:
                toward[nb] = nb_port
                depth[nb] = depth[s] + 1
                q.append(nb)
    return toward, depth


def _neighbor(adj, s: str, port: int) -> tuple[str, int]:
    for p, nb, nb_port in adj[s]:
        if p == port:
            return nb, nb_port
    raise KeyError((s, port))


STP_MAC, LLDP_MAC = 0x0180C2000000, 0x0180C200000E


def build_fattree13(k: int, topo, switches10: dict):
    """Two-table Pipeline13s carrying the flows of the one-table build (see the module docstring)."""
    from netsleuth.model.of13.actions import Output as Output13
    from netsleuth.model.of13.instructions import Instructions
    from netsleuth.model.of13.oxm import OxmMatch
    from netsleuth.model.of13.pipeline import Pipeline13, PortState

    pipes = {name: Pipeline13(2, {p: PortState() for p in topo.ports(name)}) for name in switches10}
    host_port = {}
    for lk in topo.links:
        if lk.node1 in pipes and lk.node2 not in pipes:
            host_port[lk.node2] = (lk.node1, lk.port1)
        elif lk.node2 in pipes and lk.node1 not in pipes:
            host_port[lk.node1] = (lk.node2, lk.port2)
    to_table1 = Instructions(goto=1)
    drop = Instructions()
    for h in topo.hosts:
        sw, port = host_port[h.name]
        pipes[sw].add_flow(0, OxmMatch.build(in_port=port, eth_src=h.mac), 20, to_table1)
        pipes[sw].add_flow(0, OxmMatch.build(in_port=port), 10, drop)
    outs: dict[int, Instructions] = {}
    for name, pipe in pipes.items():
        for mac in (STP_MAC, LLDP_MAC):
            pipe.add_flow(0, OxmMatch.build(eth_dst=mac), 30, drop)
        pipe.add_flow(0, OxmMatch(), 0, to_table1)
        pipe.add_flow(1, OxmMatch(), 0, Instructions.actions(Output13(ofp13.OFPP_CONTROLLER)))
        for e in switches10[name].table.entries():
            m = e.match
            port = e.actions[0].port
            inst = outs.get(port)
            if inst is None:
                inst = outs[port] = Instructions.actions(Output13(port))
            pipe.add_flow(1, OxmMatch.build(in_port=m.in_port, eth_src=m.dl_src, eth_dst=m.dl_dst), 1, inst)
    return pipes


def make_view13(topo, pipes) -> NetworkView:
    dpids = frozenset(s.dpid for s in topo.switches)
    link_up = {(lk.node1, lk.port1, lk.node2, lk.port2): True for lk in topo.links}
    return NetworkView(topology=topo, switches=pipes, link_up=link_up, controllers_alive={"c0": True},
                       connected_dpids=dpids)


def run_two_table(k: int, topo, switches10: dict, repeat: int) -> dict:
    """Cold and warm seconds of the three checks on the two-table (OpenFlow 1.3) fat tree."""
    from netsleuth.invariants.headerspace.of13 import engine as E13
    t0 = time.perf_counter()
    pipes = build_fattree13(k, topo, switches10)
    out: dict = {"build_s": round(time.perf_counter() - t0, 2), "tables": 2,
                 "rules": sum(len(p.tables) for p in pipes.values())}
    E13.forget13()
    gc.collect()
    cold, counts = check(make_view13(topo, pipes))
    out["cold"] = _round(cold)
    out["findings"] = counts
    warm = []
    for _ in range(repeat):
        t, c = check(make_view13(topo, pipes))
        assert c == counts
        warm.append(t)
    out["warm"] = _round(min(warm, key=lambda t: t["total_s"]))
    return out


def make_view(topo, switches, link_up=None) -> NetworkView:
    dpids = frozenset(s.dpid for s in topo.switches)
    if link_up is None:
        link_up = {(lk.node1, lk.port1, lk.node2, lk.port2): True for lk in topo.links}
    return NetworkView(topology=topo, switches=switches, link_up=link_up, controllers_alive={"c0": True},
                       connected_dpids=dpids)


def check(view: NetworkView, **kw) -> tuple[dict, dict]:
    """One analyze + the three checks; (timings, finding counts)."""
    t0 = time.perf_counter()
    c0 = time.process_time()
    a = E.analyze(view, **kw)
    t1 = time.perf_counter()
    c1 = time.process_time()
    loops = H.hsa_loops(view, a)
    t2 = time.perf_counter()
    holes = H.hsa_blackholes(view, a)
    t3 = time.perf_counter()
    unreach = [] if SKIP_REACHABILITY else HR.hsa_reachability(view, a)
    t4 = time.perf_counter()
    c4 = time.process_time()
    # CPU seconds beside the wall ones: on a shared machine they are what compares across runs
    times = {"total_s": t4 - t0, "analyze_s": t1 - t0, "loops_s": t2 - t1, "blackholes_s": t3 - t2,
             "reachability_s": t4 - t3, "total_cpu_s": c4 - c0, "analyze_cpu_s": c1 - c0}
    if isinstance(a, E.Analysis):
        times.update({"batch_hops": a.batch.hops, "general_classes": len(a.batch.general),
                      "general_ingresses": len(a.reaches)})
    else:  # the OpenFlow 1.3 engine
        times.update({"hops": sum(r.hops for r in a.reaches.values()), "general_ingresses": len(a.reaches)})
    counts = {"loops": len(loops), "blackholes": len(holes),
              "reachability": None if SKIP_REACHABILITY else len(unreach)}
    return times, counts


# --------------------------------------------------------------------------- one K (child)
def install_cost(switches: dict, max_flows: int = 50_000) -> dict:
    """µs per flow_mod (ADD) re-adding up to ``max_flows`` flows of the busiest switch to a
    fresh table: one ``add`` per flow, and the bulk path (``add_many``, same table)."""
    busiest = min(switches.values(), key=lambda s: (-len(s.table), s.name))
    flows = []
    for by_pat in busiest.table.pattern_index().values():
        for pat in by_pat.values():
            for s in list(pat.slot.values())[:max_flows - len(flows)]:
                flows.append((pat.match_of(pat.kid[s]), int(pat.prio[s]), pat.actions(s)))
    out = {"flows": len(flows)}
    for name in ("add", "add_many"):
        best = float("inf")
        for _ in range(2):
            t = FlowTable()
            t0 = time.perf_counter()
            if name == "add":
                add = t.add
                for m, prio, acts in flows:
                    add(m, prio, acts)
            else:
                t.add_many(flows)
            best = min(best, time.perf_counter() - t0)
            del t
        out[f"{name}_us_per_flow"] = round(best / max(1, len(flows)) * 1e6, 3)
    return out


def per_flow_mod(topo, switches: dict, n: int, seed: int = 1) -> dict:
    """Milliseconds of CPU time per flow_mod of the incremental check (``IncrementalHSA.flow_mod``)
    over ``n`` random flow_mods on random switches, in turn: an add of a simple_switch-style
    rule (random host pair, in_port and output), a modify of a random entry (a random output;
    strict and non-strict in turn) and a delete of a random entry (strict and non-strict in
    turn).  Every 100 flow_mods and after the last, a full check (``analyze`` and the three
    checks, switches compiled as the incremental check left them) runs on the same view: its
    CPU time is the figure the incremental one is set beside (``full_median_ms``, ``speedup``),
    and its findings must equal the incremental check's, in order and in every detail.
    CPU time (``time.process_time``), not wall time: the machine is shared."""
    import random

    from netsleuth.invariants.headerspace.incremental import KINDS, IncrementalHSA
    rng = random.Random(seed)
    hosts = list(topo.hosts)
    names = sorted(switches)
    inc = IncrementalHSA()
    t0 = time.process_time()
    inc.check(make_view(topo, switches))
    first = time.process_time() - t0
    view = make_view(topo, switches)
    t0 = time.process_time()
    _full_check(view)
    clean = time.process_time() - t0   # a full check with nothing broken yet, for scale
    times: list[float] = []
    full: list[float] = []
    kinds = {"add": 0, "modify": 0, "delete": 0}
    for step in range(1, n + 1):
        name = rng.choice(names)
        sw = switches[name]
        ports = sorted(sw.ports)
        kind = ("add", "modify", "delete")[step % 3] if len(sw.table) else "add"
        kinds[kind] += 1
        if kind == "add":
            src, dst = rng.sample(hosts, 2)
            m = Match(WILDCARDS, in_port=rng.choice(ports), dl_src=src.mac, dl_dst=dst.mac)
            sw.table.add(m, 1, (Output(rng.choice(ports)),))
        else:
            e = _random_entry(rng, sw.table)
            m = e.match
            strict = step % 2 == 0
            if kind == "modify":
                sw.table.modify(m, (Output(rng.choice(ports)),), strict=strict, priority=e.priority)
            else:
                sw.table.delete(m, strict=strict, priority=e.priority)
        view = make_view(topo, switches)
        t0 = time.process_time()
        got = inc.flow_mod(view, name, m)
        times.append(time.process_time() - t0)
        if step % 100 == 0 or step == n:
            t0 = time.process_time()
            want = _full_check(view)
            full.append(time.process_time() - t0)
            assert _same(got, want), f"flow_mod {step}: the incremental findings differ from a full check's"
    times.sort()
    full.sort()
    median = times[len(times) // 2]
    full_median = full[len(full) // 2]
    return {"updates": n, "kinds": kinds, "first_check_s": round(first, 3),
            "median_ms": round(median * 1e3, 3),
            "p99_ms": round(times[min(len(times) - 1, int(len(times) * 0.99))] * 1e3, 3),
            "max_ms": round(times[-1] * 1e3, 3), "mean_ms": round(sum(times) / len(times) * 1e3, 3),
            "full_median_ms": round(full_median * 1e3, 3), "full_max_ms": round(full[-1] * 1e3, 3),
            "full_clean_ms": round(clean * 1e3, 3),
            "speedup": round(full_median / max(median, 1e-9), 1),
            "classes_retraced": inc.reanalysed, "general_explorations": inc.reexplored,
            "classes_resumed": getattr(inc, "resumed", None),   # (traced from the flow_mod's cell on)
            "partial_checks": inc.partial_checks, "full_checks": inc.full_checks, "compared_with_full": len(full),
            "findings_at_end": {k: len(got[k]) for k in KINDS}}


def _full_check(view: NetworkView) -> dict:
    a = E.analyze(view)
    return {"loops": H.hsa_loops(view, a), "blackholes": H.hsa_blackholes(view, a),
            "reachability": HR.hsa_reachability(view, a)}


def _same(got: dict, want: dict) -> bool:
    """Whether two checks' findings are the same, in order and in every detail."""
    def key(found: dict) -> dict:
        return {k: [(f.message, f.hosts, f.switches, repr(sorted(f.details.items()))) for f in v]
                for k, v in found.items()}
    return key(got) == key(want)


def _random_entry(rng, table: FlowTable):
    """A random entry, without materializing the whole table (``entries()`` would make an
    object per rule: a switch of a K=16 fat tree holds 120,000)."""
    pats = [pat for by_pat in table.pattern_index().values() for pat in by_pat.values()]
    pat = rng.choice(pats)
    return pat.entry(rng.choice(list(pat.slot.values())))


def _rss_mb() -> float:
    import psutil
    return psutil.Process().memory_info().rss / 2**20


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _forget(switches: dict) -> None:
    """Forget every compiled switch, the checks' memories and the tables' sorted orders."""
    C._CACHE.clear()
    HR.forget_memos()
    for sw in switches.values():
        sw.table._sorted = None


def run_one(k: int, max_rules: int, repeat: int, two_table_max_k: int = 8, updates: int = 1000,
            baseline: bool = False, old_path_max_rules: int = OLD_PATH_MAX_RULES,
            updates_only: bool = False) -> dict:
    """One K.  ``baseline``: this script runs inside an older tree (``--before``): only the
    phases both storages support (build, cold, warm, incremental), and the memory figures.
    ``updates_only``: build the tables and run only the per-flow_mod phase."""
    gc.collect()
    rss0 = _rss_mb()
    t0 = time.perf_counter()
    topo, switches, info = build_fattree(k, max_rules or None)
    build_s = time.perf_counter() - t0
    gc.freeze()  # millions of long-lived objects (older storage): keep the cyclic GC from rescanning them
    rss_tables = _rss_mb() - rss0
    view = make_view(topo, switches)
    row = {"k": k, "switches": len(switches), "hosts": len(topo.hosts), **info, "build_s": round(build_s, 2),
           "rss_start_mb": round(rss0, 1), "tables_mb": round(rss_tables, 1),
           "tables_bytes_per_rule": round(rss_tables * 2**20 / max(1, info["rules"]))}
    if updates_only:
        row["per_flow_mod"] = per_flow_mod(topo, switches, updates)
        row["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        row["bytes_per_rule"] = round(row["peak_rss_mb"] * 2**20 / max(1, info["rules"]))
        return row
    cold, counts = check(view)
    row["cold"] = _round(cold)
    row["findings"] = counts
    if not baseline:
        row["install"] = install_cost(switches)
    check(make_view(topo, switches))  # the warm checks below start from a warmed-up memory
    warm = []
    for _ in range(repeat):
        t, c = check(make_view(topo, switches))
        assert c == counts
        warm.append(t)
    best = min(warm, key=lambda t: t["total_s"])
    row["warm"] = _round(best)
    row["warm_all_s"] = [round(t["total_s"], 3) for t in warm]
    # incremental: one more flow on one edge switch (a flow_mod between two checks)
    e = next(s for s in switches if s.startswith("e"))
    switches[e].table.add(Match(WILDCARDS, in_port=1, dl_src=0x0A0000000001, dl_dst=0x0A0000000002), 1,
                          (Output(2),))
    t, _c = check(make_view(topo, switches))
    row["incremental"] = _round(t)
    # All-in memory of the checks as a user runs them: tables, compiled switches, the checks'
    # memories (the baselines below make per-rule objects on purpose, so they come after).
    row["peak_rss_mb"] = round(_peak_mb(), 1)
    row["bytes_per_rule"] = round(row["peak_rss_mb"] * 2**20 / max(1, info["rules"]))
    if baseline:
        return row
    if info["rules"] <= old_path_max_rules:
        _old_paths(row, topo, switches, counts, repeat)
    if info["rules"] <= GENERAL_MAX_RULES:
        t, c = check(make_view(topo, switches), batch=False, cache=False)
        row["general"] = _round(t)
        row["general_findings"] = c
    if k <= two_table_max_k and info["all_pairs"]:
        row["two_table"] = run_two_table(k, topo, switches, repeat)
    row["peak_rss_mb_with_baselines"] = round(_peak_mb(), 1)
    if updates:
        row["per_flow_mod"] = per_flow_mod(topo, switches, updates)
        row["peak_rss_mb_with_incremental"] = round(_peak_mb(), 1)
    return row


def _old_paths(row: dict, topo, switches: dict, counts: dict, repeat: int) -> None:
    """Baselines of the compiled forms (they build per-rule structures, so only up to
    ``--old-path-max-rules``): compiling every switch from its sorted entries instead of its
    pattern index, and telling "unchanged?" by comparing every entry instead of the version."""
    _forget(switches)
    C.USE_TABLE_INDEX = False
    gc.collect()
    t, c = check(make_view(topo, switches))
    assert c == counts
    row["cold_old_path"] = _round(t)
    # hide FlowTable.version, so "unchanged?" scans entries (the switches were just compiled
    # the old way, which keeps the entries to compare)
    versions = {n: sw.table.version for n, sw in switches.items()}
    for sw in switches.values():
        sw.table.version = None
    scan = [check(make_view(topo, switches))[0] for _ in range(repeat)]
    row["warm_entry_scan"] = _round(min(scan, key=lambda t: t["total_s"]))
    for n, sw in switches.items():
        sw.table.version = versions[n]
    C.USE_TABLE_INDEX = True
    # (the switches compiled while versions were hidden are compiled again from the tables'
    # indexes on their next use: a form built without a change counter is not kept)


def _round(t: dict) -> dict:
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in t.items()}


# --------------------------------------------------------------------------- parent
def _child(script: str, k: int, args, baseline: bool) -> dict:
    cmd = [sys.executable, script, "--one", str(k), "--max-rules", str(args.max_rules),
           "--repeat", str(args.repeat), "--two-table-max-k", str(args.two_table_max_k),
           "--updates", str(args.updates), "--old-path-max-rules", str(args.old_path_max_rules)]
    if baseline:
        cmd.append("--baseline")
    if args.skip_reachability:
        cmd.append("--skip-reachability")
    if args.updates_only:
        cmd.append("--updates-only")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"k": k, "error": f"timeout after {args.timeout:.0f} s"}
    if proc.returncode != 0:
        return {"k": k, "error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else
                f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _before_tree(ref: str, tmp: Path) -> str:
    """``ref``'s netsleuth package with this script beside it (so the same phases are timed
    and measured the same way on the older storage); returns the script's path."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "netsleuth"], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
    (tmp / "bench").mkdir()
    script = tmp / "bench" / "invariants.py"
    script.write_text(Path(__file__).read_text())
    return str(script)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ks", default=DEFAULT_KS, help=f"FatTree K values (default {DEFAULT_KS})")
    ap.add_argument("--max-rules", type=int, default=6_000_000,
                    help="flow budget per K; beyond it only some destinations get flows "
                         "(default 6M; 0: every destination, e.g. K=24's ~59M rules)")
    ap.add_argument("--repeat", type=int, default=3, help="warm checks per K (best is reported)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per K")
    ap.add_argument("--two-table-max-k", type=int, default=8,
                    help="largest K for the two-table OpenFlow 1.3 rows (default 8)")
    ap.add_argument("--updates", type=int, default=1000,
                    help="random flow_mods for the per-flow_mod incremental figures (0: skip; default 1000)")
    ap.add_argument("--old-path-max-rules", type=int, default=OLD_PATH_MAX_RULES,
                    help="largest rule count for the compile-from-entries baselines (default 1M)")
    ap.add_argument("--before", metavar="GIT_REF",
                    help="also measure the same K on GIT_REF's netsleuth (the storage before), same phases")
    ap.add_argument("--before-max-k", type=int, default=12,
                    help="largest K measured on --before (the old storage needs ~1.2 kB per rule; default 12)")
    ap.add_argument("--skip-reachability", action="store_true",
                    help="run analyze, loops and blackholes only (the tables' and the analysis' memory "
                         "without the reachability check's)")
    ap.add_argument("--updates-only", action="store_true",
                    help="build the tables and run only the per-flow_mod phase (with its full checks)")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--baseline", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    global SKIP_REACHABILITY
    SKIP_REACHABILITY = args.skip_reachability
    if args.one is not None:
        print(json.dumps(run_one(args.one, args.max_rules, args.repeat, args.two_table_max_k, args.updates,
                                 args.baseline, args.old_path_max_rules, args.updates_only)))
        return 0
    from rich.console import Console
    from rich.table import Table
    console = Console(stderr=True, width=170)
    rows = []
    befores: dict[int, dict] = {}
    with tempfile.TemporaryDirectory(prefix="netsleuth-before-") as tmp:
        before_script = _before_tree(args.before, Path(tmp)) if args.before else None
        for k in [int(x) for x in args.ks.split(",") if x.strip()]:
            if before_script is not None and k <= args.before_max_k:
                console.print(f"[bold]fattree,{k}[/bold] on {args.before} (before) ...")
                befores[k] = _child(before_script, k, args, baseline=True)
            console.print(f"[bold]fattree,{k}[/bold] ...")
            rows.append(_child(__file__, k, args, baseline=False))
    mem = Table(title=f"memory and check time, before ({args.before or '-'}) and after, same run")
    for col in ("K", "rules", "build s", "tables B/rule", "peak RSS MB", "B/rule all-in", "cold s",
                "cold CPU s (analyze)", "warm s"):
        mem.add_column(col, justify="right")
    for r in rows:
        if "error" in r:
            continue
        for label, x in (("before", befores.get(r["k"])), ("after", r)):
            if x is None:
                continue
            if "error" in x:
                mem.add_row(f"{r['k']} {label}", "", "", "", "", "", "", "", x["error"])
                continue
            if "cold" not in x:  # --updates-only
                continue
            mem.add_row(f"{r['k']} {label}", f"{x['rules']:,}", f"{x['build_s']:.1f}", str(x["tables_bytes_per_rule"]),
                        f"{x['peak_rss_mb']:.0f}", str(x["bytes_per_rule"]), f"{x['cold']['total_s']:.3f}",
                        f"{x['cold']['total_cpu_s']:.3f} ({x['cold']['analyze_cpu_s']:.3f})",
                        f"{x['warm']['total_s']:.3f}")
    console.print(mem)
    table = Table(title="header-space check (loops + blackholes + reachability), simple_switch-style flows")
    for col in ("K", "switches", "hosts", "rules", "all pairs", "build s", "flow_mod µs (bulk)", "cold s",
                "cold s (old)", "warm s",
                "warm: analyze/loops/holes/reach s", "warm (entry scan) s", "incr. s",
                "general s", "findings", "RSS MB"):
        table.add_column(col, justify="right")
    for r in rows:
        if "error" in r:
            table.add_row(str(r["k"]), *[""] * 13, r["error"], "")
            continue
        if "cold" not in r:  # --updates-only
            continue
        w = r["warm"]
        table.add_row(
            str(r["k"]), str(r["switches"]), str(r["hosts"]), f"{r['rules']:,}",
            "yes" if r["all_pairs"] else f"{r['dst_hosts_with_flows']} dsts",
            f"{r['build_s']:.1f}",
            f"{r['install']['add_us_per_flow']:.2f} ({r['install']['add_many_us_per_flow']:.2f})",
            f"{r['cold']['total_s']:.3f}",
            f"{r['cold_old_path']['total_s']:.3f}" if "cold_old_path" in r else "-", f"{w['total_s']:.3f}",
            f"{w['analyze_s']:.3f}/{w['loops_s']:.3f}/{w['blackholes_s']:.3f}/{w['reachability_s']:.3f}",
            f"{r['warm_entry_scan']['total_s']:.3f}" if "warm_entry_scan" in r else "-",
            f"{r['incremental']['total_s']:.3f}",
            f"{r['general']['total_s']:.3f}" if "general" in r else "-",
            str(sum(v or 0 for v in r["findings"].values())), f"{r['peak_rss_mb']:.0f}")
    console.print(table)
    two = Table(title="the same check on two tables (OpenFlow 1.3 pipelines: ACL table 0, goto, forwarding "
                      "table 1), beside the one-table figures")
    for col in ("K", "rules (2 tables)", "build s", "cold s", "warm s", "warm: analyze/loops/holes/reach s",
                "findings (loops/holes/reach)", "1 table: cold s", "1 table: warm s"):
        two.add_column(col, justify="right")
    for r in rows:
        t2 = r.get("two_table")
        if not t2:
            continue
        w, f = t2["warm"], t2["findings"]
        two.add_row(str(r["k"]), f"{t2['rules']:,}", f"{t2['build_s']:.1f}", f"{t2['cold']['total_s']:.3f}",
                    f"{w['total_s']:.3f}",
                    f"{w['analyze_s']:.3f}/{w['loops_s']:.3f}/{w['blackholes_s']:.3f}/{w['reachability_s']:.3f}",
                    f"{f['loops']}/{f['blackholes']}/{f['reachability']}", f"{r['cold']['total_s']:.3f}",
                    f"{r['warm']['total_s']:.3f}")
    if table.row_count:
        console.print(table)
    if two.row_count:
        console.print(two)
    inc = Table(title="per flow_mod (CPU ms): incremental check (IncrementalHSA.flow_mod) vs a full check "
                      "after a flow_mod, same run")
    for col in ("K", "rules", "updates (add/mod/del)", "first check s", "incr. median ms", "incr. p99 ms",
                "incr. max ms", "full check median ms (clean)", "full / incr. median", "classes re-traced",
                "equal to full (times)", "RSS MB (bytes/rule)"):
        inc.add_column(col, justify="right")
    for r in rows:
        u = r.get("per_flow_mod")
        if not u:
            continue
        kinds = u["kinds"]
        inc.add_row(str(r["k"]), f"{r['rules']:,}",
                    f"{u['updates']} ({kinds['add']}/{kinds['modify']}/{kinds['delete']})",
                    f"{u['first_check_s']:.1f}", f"{u['median_ms']:.3f}", f"{u['p99_ms']:.3f}", f"{u['max_ms']:.1f}",
                    f"{u['full_median_ms']:.1f} ({u['full_clean_ms']:.1f})", f"{u['speedup']:.0f}x",
                    str(u["classes_retraced"]),
                    str(u["compared_with_full"]), f"{r['peak_rss_mb']:.0f} ({r['bytes_per_rule']})")
    if inc.row_count:
        console.print(inc)
    out = {"benchmark": "invariants", "check": "loops+blackholes+reachability (header space)",
           "flows": "in_port,dl_src,dl_dst -> output along BFS shortest paths, every ordered host pair",
           "max_rules": args.max_rules, "repeat": args.repeat, "before_ref": args.before,
           "before": [befores[k] for k in sorted(befores)],
           "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                       "python": platform.python_version()},
           "results": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
