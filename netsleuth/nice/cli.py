"""`netsleuth check`: the command line of the model checker (thin: logic is in job.py)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from netsleuth.console import err, out, progress_bar
from netsleuth.nice.names import SCENARIOS, STRATEGIES
from netsleuth.options import at_least, out_dir


def cmd_check(args: argparse.Namespace) -> int:
    from netsleuth.nice.job import CheckOptions, check

    props = None
    if args.property:
        props = tuple(p for item in args.property for p in item.split(",") if p and p.lower() != "none")
    faults = tuple(f for item in (args.faults or []) for f in item.split(",") if f)
    app = args.app if args.variant in (None, "fixed") else f"{args.app}-{args.variant}"
    opts = CheckOptions(app=app, scenario=args.scenario, topo=args.topo, hosts=args.hosts, pings=args.pings,
                        strategy=args.strategy, dpor=args.dpor, order=args.order, max_depth=args.max_depth,
                        max_transitions=args.max_transitions, properties=props, faults=faults,
                        burst=args.burst, discover=args.discover, discover_stats=args.discover_stats,
                        seed=args.seed, stop_at_first=args.stop_at_first, localize=args.localize,
                        out=Path(args.out) if args.out else None)
    quiet = args.json or not err.is_terminal
    if quiet:
        data = check(opts)
    else:
        with progress_bar(counted=False) as p:
            task = p.add_task("exploring", total=None)

            def show(r) -> None:
                p.update(task, description=f"{r.transitions:,} transitions, {r.unique_states or 0:,} states, "
                                           f"{r.rate():,.0f}/s, {sum(r.violation_counts.values())} violations")

            opts.progress = show
            data = check(opts)
    if args.json:
        print(json.dumps(data, sort_keys=True))
    else:
        _summary(data)
    if data.get("interrupted"):  # the search so far is reported (and in result.json with --out)
        from netsleuth.live.stop import exit_code
        return exit_code()
    return 1 if data["violations"] else 0


def _summary(d: dict) -> None:
    state = "complete" if d["completed"] else f"stopped ({d['stopped_by'] or 'bound'})"
    out.print(f"{d['app']} on {d['topology']} [{d['strategy']}{' + DPOR' if d['dpor'] else ''}]: "
              f"{d['transitions']:,} transitions, {d['unique_states']:,} unique states in {d['seconds']} s "
              f"({d['transitions_per_second']:,}/s), search {state}", highlight=False, markup=False)
    if d.get("dpor_note"):
        out.print(d["dpor_note"], highlight=False, markup=False)
    if not d["violations"]:
        out.print(f"no violations of {', '.join(d['properties']) or '(no properties checked)'}", highlight=False)
    for v in d["violations"]:
        where = v.get("counterexample") or f"{v['path_length']} transitions (use --out to save the trace)"
        out.print(f"[red]{v['property']}[/red]: {v['message']} -- found after {v['transitions_to_find']:,} "
                  f"transitions, {v['seconds_to_find']} s; counterexample: {where}", soft_wrap=True)
    for name, n in d["violation_counts"].items():
        out.print(f"{name}: violated on {n} path(s)", highlight=False)
    if d.get("localize"):
        _localization(d["localize"])


def _localization(loc: dict) -> None:
    out.print(f"suspicious lines ({loc['formula']}, the counterexample and {loc['runs'] - 1} random walks: "
              f"{loc['failing']} violate {loc['property']}, {loc['passing']} do not):", highlight=False, markup=False)
    if loc["message"]:
        out.print(f"  {loc['message']}", highlight=False, markup=False)
    for t in loc["top"]:
        out.print(f"  #{t['rank']:<3} {t['short']}:{t['line']:<5} {t['score']!s:>8}  "
                  f"{t['failing']}/{t['passing']:<4} {t['function']}: {t['source']}",
                  highlight=False, markup=False, soft_wrap=True)


def add_commands(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("check", help="model-check an in-process controller app (NICE): search, strategies, DPOR")
    c.add_argument("app", help="pyswitch, pyswitch-fixed, loadbalancer, energy-te, app:NAME or package.module:Class "
                   "(a netsleuth.nice App), osken:APP[,APP] (an unmodified os-ken 1.4.1 OpenFlow 1.0 app) "
                   "or ryu:APP[,APP] (an unmodified Ryu app); APP is a module name or a .py file; "
                   "'pox:COMPONENTS' runs unmodified POX components (POX's command line, e.g. "
                   "pox:forwarding.l2_learning) on a real POX core from the checkout --pox names")
    c.add_argument("--pox", metavar="DIR",
                   help="the POX checkout pox: components are loaded from ($NETSLEUTH_POX)")
    c.add_argument("--variant", help="app variant: fixed (default); bug-iv..bug-ix for loadbalancer, "
                                     "bug-x..bug-xiii for energy-te")
    c.add_argument("--scenario", choices=SCENARIOS,
                   help="pings (Table 1, default), direct (StrictDirectPaths), mobile (a host moves), "
                        "loop (triangle)")
    c.add_argument("--topo", help="topology (Mininet syntax; default linear,2, or ring,3 for --scenario loop)")
    c.add_argument("--hosts", help="traffic: SRC>DST:N items, e.g. h1>h2:3 (default: first host pings the second)")
    c.add_argument("--pings", type=at_least(0), help="pings the first host sends (default depends on the scenario)")
    c.add_argument("--strategy", default="full",
                   help=f"search strategy: {', '.join(STRATEGIES)}; combine with + (e.g. pkt-seq+no-delay)")
    c.add_argument("--dpor", action="store_true", help="partial-order reduction (sleep sets on run-time footprints)")
    c.add_argument("--order", choices=("forward", "reverse"), default="forward",
                   help="explore the enabled set in this order (counts must not change)")
    c.add_argument("--max-depth", type=at_least(1), help="bound on path length")
    c.add_argument("--max-transitions", type=at_least(1), help="stop after this many transitions")
    c.add_argument("--property", action="append",
                   help="property to check (repeat or comma-separate; 'none' for none); default: the scenario's")
    c.add_argument("--faults", action="append", help="optional faults: expiry, drop, duplicate, link (comma-separated)")
    c.add_argument("--burst", type=at_least(1), default=1, help="PKT-SEQ: outstanding packets per host (default 1)")
    c.add_argument("--discover", type=at_least(0), default=0, metavar="N",
                   help="concolic discover_packets: each host may send N frames the app's packet_in "
                        "handler tells apart (z3; default 0: only the scenario's traffic)")
    c.add_argument("--discover-stats", action="store_true",
                   help="concolic discover_stats: port-stats replies with counters the app's handler tells apart")
    c.add_argument("--seed", type=int, default=0, help="seed of the random walk")
    c.add_argument("--stop-at-first", action="store_true", help="stop at the first violation")
    c.add_argument("--localize", type=at_least(1), nargs="?", const=40, default=0, metavar="WALKS",
                   help="rank the app's source lines behind the first violation: its counterexample (failing) "
                        "against WALKS seeded random walks of the model (default 40), each failing if it violates "
                        "the same property (spectrum-based, Ochiai); needs an app the model checker runs in-process")
    c.add_argument("--json", action="store_true", help="print the result as one JSON object")
    c.add_argument("--out", type=out_dir(), help="directory for result.json and one counterexample trace per violation")
    c.set_defaults(func=cmd_check)
