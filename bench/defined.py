"""DEFINED overheads (the paper's Fig. 8): rollbacks and extra messages, convergence, LS step time.

1. Control overhead vs network size (Fig. 8a): OSPF-like flooding on
   BRITE-like graphs (BA, m=2) of 20..100 nodes and the Topology Zoo Sprint
   and AttMpls maps; a seeded series of 4 link failures + 4 recoveries.
   Routers start from the converged database (variant ``warm``) and counting
   starts at the first external event, so only what the link events cause
   is counted -- the paper replays the events of its OSPF trace against
   running routers and reports overhead per node per event.

   What is counted, per node and per link event (a failure or recovery of
   one link, seen at both ends, is one event):

   ``extra msgs``  the paper's Fig. 8a figure: control messages DEFINED-RB
                   put on the wire (data messages sent, including ones a
                   rollback later cancelled, plus rollback notices) minus
                   the messages the unmodified protocol sends for the same
                   events (``plain`` mode, arrival order, same seed). Paper:
                   "at most 2 additional packets per node on average" with
                   the optimized ordering. Beacons are not in it: they are
                   per beacon interval, not per event (column ``beacons/s``).
   ``cancelled``   the same from DEFINED's own books: messages sent and then
                   unsent by a rollback, plus the rollback notices; equals
                   ``extra msgs`` up to the small difference in what the
                   final (ordering-order) execution sends vs arrival order.
   ``rollbacks``   rollbacks per node per event.
   ``extra deliv`` deliveries to the software beyond plain's (replays after
                   rollbacks, up to ``checkpoint_every - 1`` per rollback
                   from sparse checkpoints): processing, not messages.

   Rows: OO = the paper's ordering (``defined``), RO = a seeded random
   causal ordering (``random:1``), and ``defined/original`` = OO as first
   implemented, the "before" figure: send tie-breaker ``tiebreak="hash"``
   (one delivery's sends sorted randomly although a FIFO link delivers them
   in send order, see ``netsleuth.defined.node_runtime.NodeRuntime._child_sidx``) and
   ``batch_rollback=False`` (rollback notices not in one packet with the
   re-sent messages, see ``netsleuth.defined.rollback``).
   ``--no-baseline`` drops it. ``max seed`` is the worst seed's figure.
2. Convergence time after one link failure: plain (no DEFINED) vs RB (OO)
   vs RB (RO), simulated seconds, mean over seeds.
3. LS response time per step (one transmission + one processing phase
   across all nodes) vs network size up to 100 nodes, wall-clock ms.
   Paper: below 0.8 s at 80 nodes; goal here: below 50 ms.

Links: delay = mean * U(1-j, 1+j) with ``--jitter`` (default 0.05: WAN
links are propagation-dominated); 20 us processing per delivery.
Not covered here: a cold start (every router flooding at once) under the
CLI's default jitter of +-90%, where arrival order hardly correlates with
estimated delay; at 40 nodes start-up still costs ~180 rollbacks and ~45
rollback notices per node (a misordered copy at a node re-tags everything
it forwards, because a child's estimated delay is its parent's plus the link).
4. ``--parts daemons`` (root, `make debs`; not in the default parts): the MED
   case on real BIRD 2 and FRR, ``--daemon-runs`` runs each in arrival order
   (``plain``, nothing held) and under DEFINED's ordering: how many distinct
   best paths r3 ends with, the wall time per run, and the time from
   releasing one UPDATE to the daemon reporting it processed; and the RIP
   timeout on the virtual clock (virtual seconds the route outlived the
   last update, wall seconds per run).
5. ``--parts ospf-daemons`` (root, `make debs`; not in the default parts): OSPF on real BIRD on a
   Topology Zoo map (``--ospf-topo``, default topozoo/Belnet2009, 21 routers) with 10 link failures
   and recoveries on the virtual clock, every OSPF message held at the relay and delivered in
   DEFINED's order, the kernel tables read and the invariants checked after every delivery:
   wall time per delivered message and per virtual second (start-up apart), and whether
   ``--ospf-runs`` runs give one delivery sequence and one routing-table history. Beside it the
   Python-node OSPF of part 1 on the same map (DEFINED-RB, simulated): wall time per delivered
   message and per simulated second.
Writes bench/results/defined.json (``--parts daemons`` or ``ospf-daemons`` alone: defined-daemons.json).
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from netsleuth.defined.lockstep import Lockstep
from netsleuth.defined.scenarios import build
from netsleuth.defined.sim import SimConfig, simulate

RESULTS = Path(__file__).resolve().parent / "results" / "defined.json"


def overhead(topo: str, ordering: str, seed: int, jitter: float, original: bool = False) -> dict:
    """One run's Fig. 8a figures; ``original``: the hash tie-breaker and one rollback per late arrival
    (no batching), as first implemented."""
    sc = build("ospf", topo=topo, variant="warm", seed=seed)
    t0 = time.perf_counter()
    cfg = dict(seed=seed, horizon=sc.horizon, jitter=jitter, ordering=ordering)
    if original:
        cfg.update(tiebreak="hash", batch_rollback=False)
    r = simulate(sc.net, sc.factory, sc.externals, SimConfig(mode="rb", **cfg))
    wall = time.perf_counter() - t0
    p = simulate(sc.net, sc.factory, sc.externals, SimConfig(mode="plain", **cfg))
    n = len(sc.net.nodes)
    events = len(sc.externals) // 2  # a link failure or recovery is one event seen at both ends

    def since_first_event(res) -> dict:
        tot, base = res.totals(), res.extra["baseline"]
        return {k: tot[k] - base[k] for k in tot}

    d, dp = since_first_event(r), since_first_event(p)
    per = n * events
    seconds = (sc.horizon + 1) * SimConfig().interval
    return {"topology": sc.net.spec, "nodes": n, "ordering": f"{ordering}/original" if original else ordering,
            "seed": seed, "link_events": events,
            "rollbacks_per_node_event": d["rollbacks"] / per,
            "extra_msgs_per_node_event": (d["sends"] + d["anti_sent"] - dp["sends"]) / per,
            "cancelled_msgs_per_node_event": (d["unsent"] + d["anti_sent"]) / per,
            "plain_msgs_per_node_event": dp["sends"] / per,
            "extra_deliveries_per_node_event": (d["deliveries"] - dp["deliveries"]) / per,
            "beacons_per_node_s": r.totals()["beacons"] / n / seconds,
            "startup_rollbacks_per_node": r.extra["baseline"]["rollbacks"] / n,
            "correct_tables": not sc.bug(r.states), "wall_s": round(wall, 2)}


def convergence(topo: str, mode: str, ordering: str, seed: int, jitter: float) -> float:
    sc = build("ospf", topo=topo, variant="warm", seed=seed)
    first_down = [x for x in sc.externals if x.event["type"] == "link_down"][:2]
    horizon = int(first_down[0].t / 0.25) + 8
    r = simulate(sc.net, sc.factory, first_down,
                 SimConfig(mode=mode, seed=seed, horizon=horizon, jitter=jitter, ordering=ordering))
    return r.last_activity - first_down[0].t


def ls_step_times(topo: str, seed: int) -> dict:
    sc = build("ospf", topo=topo, variant="cold", seed=seed)  # cold start: every LSA floods at once
    per_node: dict[str, int] = {}
    ext = []
    for x in sc.externals:  # groups as the beacons would stamp them (events are mid-interval)
        ext.append({"node": x.node, "group": int(x.t / 0.25), "oseq": per_node.get(x.node, 0), "event": x.event})
        per_node[x.node] = per_node.get(x.node, 0) + 1
    ls = Lockstep(sc.net, sc.factory, ext, horizon=sc.horizon)
    times = []
    while True:
        t0 = time.perf_counter()
        got = ls.step_phase()
        dt = time.perf_counter() - t0
        if not got:
            break
        times.append(dt * 1000)
    times.sort()
    ls = Lockstep(sc.net, sc.factory, ext, horizon=sc.horizon)
    gtimes = []
    while True:  # coarser steps: one whole group (timestep) per command
        t0 = time.perf_counter()
        got = ls.step_group()
        dt = time.perf_counter() - t0
        if not got:
            break
        gtimes.append(dt * 1000)
    return {"topology": sc.net.spec, "nodes": len(sc.net.nodes), "steps": len(times),
            "mean_ms": statistics.fmean(times), "p95_ms": times[int(0.95 * (len(times) - 1))],
            "max_ms": times[-1], "group_steps": len(gtimes), "group_mean_ms": statistics.fmean(gtimes),
            "group_max_ms": max(gtimes)}


def daemon_figures(runs: int, console: Console) -> list[dict]:
    """The MED case and the RIP timeout on the real daemons (section 4 of the docstring)."""
    from netsleuth.defined.daemons import explore
    from netsleuth.defined.daemons.rip import rip_run
    from netsleuth.defined.daemons.scenarios import scenario

    sc = scenario("med")
    rows = []
    for daemon in ("bird", "frr"):
        row: dict = {"daemon": daemon, "runs": runs}
        for mode, hold in (("plain", False), ("defined", True)):
            outs = [explore.one_run(sc, daemon, hold=hold) for _ in range(runs)]
            row[mode] = {"outcomes": dict(sorted(collections.Counter(o.best for o in outs).items())),
                         "wall_s_mean": round(statistics.fmean(o.seconds for o in outs), 2)}
            ms = [x for o in outs for x in o.deliver_ms]
            if ms:
                row[mode]["deliver_ms_mean"] = round(statistics.fmean(ms), 2)
                row[mode]["deliver_ms_max"] = round(max(ms), 2)
        rips = [rip_run(daemon) for _ in range(3)]
        row["rip"] = {"held_for_virtual_s": sorted({o.held_for for o in rips if o.held_for is not None}),
                      "wall_s_mean": round(statistics.fmean(o.wall_seconds for o in rips), 2),
                      "distinct_histories": len({json.dumps(o.history) for o in rips})}
        console.print(f"daemons {daemon}: {row}")
        rows.append(row)
    return rows


def ospf_daemon_figures(topo: str, runs: int, console: Console) -> dict:
    """Section 5 of the docstring: real BIRD on ``topo`` beside the Python-node OSPF on the same map."""
    from netsleuth.defined.daemons.events import NetSpec, link_workload
    from netsleuth.defined.daemons.replay import run_events

    spec = NetSpec(topo)
    net = spec.build()
    events = link_workload(net, 10, 0, down_for=6, gap=2)
    outs = []
    for i in range(runs):
        r = run_events(net, events, tail=8)
        outs.append(r)
        console.print(f"ospf on bird, {topo}: run {i + 1}: {len(r.deliveries)} messages, "
                      f"{r.virtual_seconds:.0f} virtual s, {r.wall_seconds:.1f} s (boot {r.boot_seconds:.1f} s)")
    steady = [r.wall_seconds - r.boot_seconds for r in outs]
    row = {"topology": topo, "routers": len(net.routers), "links": len(net.links), "link_events": len(events),
           "runs": runs, "deliveries": len(outs[0].deliveries), "virtual_s": outs[0].virtual_seconds,
           "table_changes": sum(len(h) for h in outs[0].history.values()), "checks": outs[0].checks,
           "wall_s_mean": round(statistics.fmean(r.wall_seconds for r in outs), 2),
           "boot_s_mean": round(statistics.fmean(r.boot_seconds for r in outs), 2),
           "ms_per_message": round(1000 * statistics.fmean(steady) / len(outs[0].deliveries), 3),
           "ms_per_virtual_s": round(1000 * statistics.fmean(steady) / outs[0].virtual_seconds, 1),
           "distinct_delivery_sequences": len({json.dumps(r.deliveries) for r in outs}),
           "distinct_histories": len({json.dumps(r.history, sort_keys=True) for r in outs})}
    sc = build("ospf", topo=topo, variant="warm", seed=0)
    t0 = time.perf_counter()
    res = simulate(sc.net, sc.factory, sc.externals, SimConfig(mode="rb", seed=0, horizon=sc.horizon, jitter=0.05))
    wall = time.perf_counter() - t0
    deliveries = res.totals()["deliveries"]
    sim_s = (sc.horizon + 1) * SimConfig().interval
    row["python_nodes"] = {"deliveries": deliveries, "simulated_s": sim_s, "wall_s": round(wall, 3),
                           "ms_per_message": round(1000 * wall / max(1, deliveries), 4),
                           "ms_per_simulated_s": round(1000 * wall / sim_s, 2)}
    return row


def _ospf_table(console: Console, r: dict) -> None:
    t = Table(title=f"OSPF on {r['topology']} ({r['routers']} routers, {r['link_events']} link events): "
                    "real BIRD on the virtual clock vs Python nodes (DEFINED-RB, simulated)")
    for c in ("", "messages", "virtual s", "wall s", "ms/message", "ms/virtual s", "runs", "distinct seq/hist"):
        t.add_column(c)
    t.add_row("BIRD (relay, kernel tables, invariants)", str(r["deliveries"]), str(r["virtual_s"]),
              f"{r['wall_s_mean']} (boot {r['boot_s_mean']})", str(r["ms_per_message"]), str(r["ms_per_virtual_s"]),
              str(r["runs"]), f"{r['distinct_delivery_sequences']}/{r['distinct_histories']}")
    p = r["python_nodes"]
    t.add_row("Python nodes", str(p["deliveries"]), str(p["simulated_s"]), str(p["wall_s"]), str(p["ms_per_message"]),
              str(p["ms_per_simulated_s"]), "1", "")
    console.print(t)


def _tables(console: Console, res: dict, jitter: float) -> None:
    """The tables of the simulated parts (overhead, convergence, LS step)."""
    t = Table(title=f"DEFINED-RB control overhead per node per link event vs plain (jitter {jitter}); "
                    "paper Fig. 8a: OO <= ~2 extra msgs")
    for c in ("topology", "ordering", "plain msgs", "extra msgs", "max seed", "cancelled", "rollbacks",
              "extra deliv", "beacons/s", "tables ok", "wall s"):
        t.add_column(c, no_wrap=True)
    for r in res["overhead"]:
        t.add_row(r["topology"], r["ordering"], f"{r['plain_msgs_per_node_event']:.2f}",
                  f"{r['extra_msgs_per_node_event']:.2f}", f"{r['max_extra_msgs_per_node_event']:.2f}",
                  f"{r['cancelled_msgs_per_node_event']:.2f}", f"{r['rollbacks_per_node_event']:.2f}",
                  f"{r['extra_deliveries_per_node_event']:.2f}", f"{r['beacons_per_node_s']:.1f}",
                  str(r["correct_tables"]), str(r["wall_s"]))
    console.print(t)
    t = Table(title="convergence after one link failure (simulated s)")
    for c in ("nodes", "plain", "RB optimized", "RB random"):
        t.add_column(c)
    for r in res["convergence"]:
        t.add_row(str(r["nodes"]), str(r["plain_s"]), str(r["rb_oo_s"]), str(r["rb_ro_s"]))
    console.print(t)
    t = Table(title="DEFINED-LS response time per step (transmission + processing phase), ms")
    for c in ("nodes", "steps", "mean", "p95", "max", "group steps", "group mean", "group max"):
        t.add_column(c)
    for r in res["ls_step"]:
        t.add_row(str(r["nodes"]), str(r["steps"]), str(r["mean_ms"]), str(r["p95_ms"]), str(r["max_ms"]),
                  str(r["group_steps"]), str(r["group_mean_ms"]), str(r["group_max_ms"]))
    t.add_row("paper (80)", "", "< 800", "", "", "", "", "")
    console.print(t)


def _daemon_table(console: Console, rows: list[dict]) -> None:
    t = Table(title="the MED case on real daemons: r3's best path over runs; RIP timeout on the virtual clock")
    for c in ("daemon", "runs", "arrival order", "DEFINED order", "s/run", "deliver ms (mean/max)",
              "RIP held for (virtual s)", "RIP wall s", "RIP histories"):
        t.add_column(c)
    for r in rows:
        d = r["defined"]
        t.add_row(r["daemon"], str(r["runs"]), " ".join(f"{k}x{v}" for k, v in r["plain"]["outcomes"].items()),
                  " ".join(f"{k}x{v}" for k, v in d["outcomes"].items()), str(d["wall_s_mean"]),
                  f"{d.get('deliver_ms_mean', '-')}/{d.get('deliver_ms_max', '-')}",
                  ",".join(str(x) for x in r["rip"]["held_for_virtual_s"]), str(r["rip"]["wall_s_mean"]),
                  str(r["rip"]["distinct_histories"]))
    console.print(t)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="20,40,60,80,100")
    ap.add_argument("--random-sizes", default="20,40,60,80,100", help="sizes for the random ordering")
    ap.add_argument("--parts", default="overhead,convergence,ls", help="which figures to measure")
    ap.add_argument("--seeds", type=int, default=2, help="seeds per configuration")
    ap.add_argument("--jitter", type=float, default=0.05)
    ap.add_argument("--no-baseline", dest="baseline", action="store_false",
                    help="skip the defined/original rows (the implementation before the fixes)")
    ap.add_argument("--daemon-runs", type=int, default=20, help="runs per mode and daemon for --parts daemons")
    ap.add_argument("--ospf-topo", default="topozoo/Belnet2009", help="map for --parts ospf-daemons")
    ap.add_argument("--ospf-runs", type=int, default=3, help="runs of the recorded events for --parts ospf-daemons")
    ap.add_argument("--out", type=Path, help="default bench/results/defined.json "
                                             "(defined-daemons.json for --parts daemons or ospf-daemons alone)")
    args = ap.parse_args()
    if args.out is None:
        alone = set(args.parts.split(",")) <= {"daemons", "ospf-daemons"}
        args.out = RESULTS.with_name("defined-daemons.json") if alone else RESULTS
    console = Console(width=160)  # wide enough for the overhead table when piped
    sizes = [int(s) for s in args.sizes.split(",") if s]
    rsizes = [int(s) for s in args.random_sizes.split(",") if s]
    res: dict = {"jitter": args.jitter, "overhead": [], "convergence": [], "ls_step": [], "interrupted": False}
    try:
        parts = set(args.parts.split(","))
        configs = [("defined", False)] + [("defined", True)] * args.baseline + [("random:1", False)]
        for topo in (["topozoo/Sprint", "topozoo/AttMpls"] + [f"brite,{n}" for n in sizes]) * ("overhead" in parts):
            n = int(topo.split(",")[1]) if topo.startswith("brite") else None
            for ordering, original in configs:
                if ordering != "defined" and n is not None and n not in rsizes:
                    continue
                rows = [overhead(topo, ordering, s, args.jitter, original) for s in range(args.seeds)]
                row = dict(rows[0])
                for k in ("rollbacks_per_node_event", "extra_msgs_per_node_event", "cancelled_msgs_per_node_event",
                          "plain_msgs_per_node_event", "extra_deliveries_per_node_event", "beacons_per_node_s",
                          "startup_rollbacks_per_node", "wall_s"):
                    row[k] = round(statistics.fmean(r[k] for r in rows), 3)
                row["max_extra_msgs_per_node_event"] = round(max(r["extra_msgs_per_node_event"] for r in rows), 3)
                row["correct_tables"] = all(r["correct_tables"] for r in rows)
                row["seeds"] = args.seeds
                res["overhead"].append(row)
                console.print(f"overhead {topo} {row['ordering']}: {row['extra_msgs_per_node_event']} extra "
                              f"msgs/node/event ({row['wall_s']} s)")
        for n in sizes * ("convergence" in parts):
            topo = f"brite,{n}"
            row = {"nodes": n}
            for label, mode, ordering in (("plain", "plain", "defined"), ("rb_oo", "rb", "defined"),
                                          ("rb_ro", "rb", "random:1")):
                vals = [convergence(topo, mode, ordering, s, args.jitter) for s in range(args.seeds * 2)]
                row[label + "_s"] = round(statistics.fmean(vals), 4)
            res["convergence"].append(row)
            console.print(f"convergence {topo}: {row}")
        for n in sizes * ("ls" in parts):
            res["ls_step"].append({k: (round(v, 3) if isinstance(v, float) else v)
                                   for k, v in ls_step_times(f"brite,{n}", 0).items()})
            console.print(f"ls step brite,{n}: {res['ls_step'][-1]}")
        if "daemons" in parts:
            res["daemons"] = daemon_figures(args.daemon_runs, console)
        if "ospf-daemons" in parts:
            res["ospf_daemons"] = ospf_daemon_figures(args.ospf_topo, args.ospf_runs, console)
    except KeyboardInterrupt:
        res["interrupted"] = True
    if res["overhead"] or res["convergence"] or res["ls_step"]:
        _tables(console, res, args.jitter)
    if res.get("daemons"):
        _daemon_table(console, res["daemons"])
    if res.get("ospf_daemons"):
        _ospf_table(console, res["ospf_daemons"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
