"""`netsleuth defined run|step`: argument parsing and summaries only.

Output goes through netsleuth.console (a progress bar while the runs go, a
table at the end), the rich output every command's front end shares.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from netsleuth.console import out, progress_bar
from netsleuth.options import at_least, out_dir


def _interactive_lines() -> Iterator[str]:
    while True:
        try:
            yield input("(defined) ")
        except EOFError:
            return


def _daemon_check(args: argparse.Namespace) -> None:
    """Which scenarios run where: the daemon scenarios need --daemon, the node scenarios do not take it."""
    from netsleuth.defined.daemons.cli import ALIASES
    from netsleuth.defined.daemons.scenarios import NAMES as DAEMON_NAMES
    from netsleuth.errors import NetsleuthError

    if args.daemon and ALIASES.get(args.scenario, args.scenario) not in DAEMON_NAMES:
        raise NetsleuthError(f"--scenario {args.scenario} runs netsleuth's own nodes, not daemons",
                             f"with --daemon use --scenario {' or '.join(DAEMON_NAMES)}")
    if not args.daemon and args.scenario in DAEMON_NAMES and args.scenario not in ("bgp-med", "rip-timer", "ospf"):
        raise NetsleuthError(f"--scenario {args.scenario} runs on real routing daemons",
                             "add --daemon bird or --daemon frr")


def cmd_run(args: argparse.Namespace) -> int:
    from rich.table import Table

    _daemon_check(args)
    if args.daemon:
        from netsleuth.defined.daemons.cli import cmd_run as daemon_run
        return daemon_run(args)
    if args.all_orders:
        from netsleuth.errors import NetsleuthError
        raise NetsleuthError("--all-orders runs on daemons", "add --daemon bird|frr, or use `defined step` "
                                                             "with `ordering` to explore orders of nodes")
    args.runs = args.runs or 50

    from netsleuth.defined.ordering import by_name
    from netsleuth.defined.runs import DefinedRunOptions, run_many

    by_name(args.ordering)  # validate before running anything
    opts = DefinedRunOptions(scenario=args.scenario, runs=args.runs, mode=args.mode, ordering=args.ordering,
                      seed=args.seed, topo=args.topo, variant=args.variant,
                      out=Path(args.out) if args.out else None, jitter=args.jitter,
                      scenario_seed=args.scenario_seed, processes=args.processes)
    with progress_bar() as p:
        task = p.add_task(f"{args.scenario} ({args.mode})", total=args.runs)
        d = run_many(opts, lambda i, r: p.update(task, completed=i + 1))
    if args.json:
        d = {k: v for k, v in d.items() if k != "first_run"}
        print(json.dumps(d, sort_keys=True))
        return 0
    t = Table(title=f"netsleuth defined run: {d['scenario']} ({d['variant'] or 'default'}) on {d['topology']}, "
                    f"mode {d['mode']}", show_header=False)
    t.add_row("runs", f"{d['runs']}" + (" (interrupted)" if d["interrupted"] else ""))
    t.add_row("distinct_delivery_sequences", f"{d['distinct_delivery_sequences']} (max over "
                                             f"{d['nodes']} nodes)")
    t.add_row("distinct routing tables", str(d["distinct_routing_tables"]))
    t.add_row("bug_runs", f"{d['bug_runs']} ({d['bug']})")
    m = d["per_run_mean"]
    if args.mode == "rb":
        t.add_row("rollbacks per run", f"{m.get('rollbacks', 0):.1f}")
        t.add_row("LS reproduces run 0", str(d.get("ls_reproduces_first_run")))
    if args.out:
        t.add_row("trace (run 0)", str(Path(args.out) / "trace.jsonl"))
        t.add_row("result", str(Path(args.out) / "result.json"))
    out.print(t)
    return 0


def cmd_step(args: argparse.Namespace) -> int:
    from netsleuth.defined.console import run_console

    if args.daemon:
        from netsleuth.defined.daemons.cli import cmd_step as daemon_step
        return daemon_step(args)
    if not args.trace:
        from netsleuth.errors import NetsleuthError
        raise NetsleuthError("step needs a trace or a daemon network",
                             "pass DIR/trace.jsonl from `defined run --out DIR`, or --daemon bird|frr --scenario med")

    if args.commands:
        try:
            lines: Iterable[str] = Path(args.commands).read_text().splitlines()
        except OSError as exc:
            from netsleuth.errors import NetsleuthError
            raise NetsleuthError(f"cannot read --commands {args.commands}: {exc.strerror}",
                                 "pass a text file with one console command per line") from None
    elif sys.stdin.isatty():
        lines = _interactive_lines()
    else:
        lines = sys.stdin.read().splitlines()
    return run_console(args.trace, lines, sys.stdout, args.ordering)


def _daemon_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--daemon", choices=["bird", "frr"],
                   help="run every router as a real BIRD 2 or FRR daemon in its own network namespace (root)")
    p.add_argument("--deterministic-med", action="store_true", help="daemons: turn BGP deterministic MED on")
    p.add_argument("--quiet", type=float, default=1.0,
                   help="daemons: a group closes after this many seconds without a new message (default 1)")


def add_commands(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("defined", help="DEFINED: deterministic runs of distributed control planes (RB) "
                                       "and lockstep stepping (LS)")
    dsub = d.add_subparsers(dest="defined_command", required=True)

    r = dsub.add_parser("run", help="run a scenario N times with random link delays and compare the runs")
    r.add_argument("--scenario", required=True, choices=["bgp-med", "rip-timer", "ospf", "med", "rip"],
                   help="nodes: bgp-med | rip-timer | ospf; daemons (--daemon): med (bgp-med is an alias) | rip | "
                        "ospf (BIRD on --topo, with recorded link events)")
    r.add_argument("--topo", help="ospf only: topozoo/NAME (e.g. topozoo/Sprint) | brite,N[,SEED] | "
                                  "a netsleuth topology (ring,N, mesh,N, linear,N, ...; its switches are the routers)")
    r.add_argument("--variant", help="bgp-med: xorp (default) | correct; rip-timer: quagga (default) | correct; "
                                          "ospf: cold (default) | warm")
    r.add_argument("--runs", type=at_least(1), help="how many runs (default 50; 5 with --daemon)")
    r.add_argument("--mode", choices=["plain", "rb"], default="rb",
                   help="plain: arrival order (no DEFINED); rb: DEFINED-RB (default)")
    r.add_argument("--ordering", default="defined", help="rb ordering: defined | hops | origin | reverse | random:SEED")
    r.add_argument("--seed", type=int, default=0, help="run i draws link delays with seed SEED+i")
    r.add_argument("--scenario-seed", type=int, default=0, help="ospf: seed of the link-failure workload")
    r.add_argument("--jitter", type=float, default=0.9, help="link delays are the mean times a uniform draw "
                                                                "from [1-J, 1+J] (default 0.9)")
    r.add_argument("--processes", action="store_true",
                   help="run every node as an OS process over loopback TCP (real time: horizon x 0.25 s per run)")
    r.add_argument("--json", action="store_true", help="print the summary as JSON")
    r.add_argument("--out", type=out_dir(), help="directory for trace.jsonl (run 0's external events) and result.json")
    _daemon_args(r)
    r.add_argument("--all-orders", action="store_true",
                   help="daemons: deliver the held messages of group 0 in every order, one fresh run each")
    r.add_argument("--events", help="daemons, ospf: replay this events.jsonl (from a run, fuzz or minimize --out DIR)")
    r.add_argument("--link-events", type=at_least(1), default=10,
                   help="daemons, ospf without --events: this many link failures, each recovered 6 s later "
                        "(seeded by --scenario-seed; default 10)")
    r.add_argument("--static-route", action="append", metavar="ROUTER:DEST",
                   help="daemons, ospf: ROUTER routes DEST's loopback statically over their link (a seeded "
                        "misconfiguration: a blackhole once that link fails); repeatable")
    r.add_argument("--persist", type=float, default=10.0,
                   help="daemons, ospf: virtual seconds a violation must hold to be reported (default 10)")
    r.set_defaults(func=cmd_run)

    s = dsub.add_parser("step", help="step a recorded run in lockstep (LS) from its external events")
    s.add_argument("trace", nargs="?", help="trace.jsonl written by `netsleuth defined run --out DIR` "
                                            "(not with --daemon)")
    s.add_argument("--scenario", choices=["med", "bgp-med", "rip"],
                   help="with --daemon: the daemon scenario (med; rip runs on the virtual clock: advance, crash)")
    _daemon_args(s)
    s.add_argument("--commands", help="file of console commands, one per line (default: stdin / prompt)")
    s.add_argument("--ordering", help="ordering function to start with (default: the one RB used)")
    s.set_defaults(func=cmd_step)

    from netsleuth.defined.daemons.cli_events import add_commands as add_daemon_commands
    add_daemon_commands(dsub, _daemon_args)
