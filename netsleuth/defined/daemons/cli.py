"""`netsleuth defined run|step --daemon bird|frr`: argument handling and summaries only."""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from netsleuth.console import out, progress_bar
from netsleuth.defined.daemons import explore
from netsleuth.defined.daemons.cli_events import emit_result
from netsleuth.defined.daemons.scenarios import DaemonScenario, scenario
from netsleuth.errors import NetsleuthError

ALIASES = {"bgp-med": "med"}


def _scenario(args: argparse.Namespace) -> DaemonScenario:
    return scenario(ALIASES.get(args.scenario, args.scenario), bool(getattr(args, "deterministic_med", False)))


def cmd_run(args: argparse.Namespace) -> int:
    from netsleuth.defined.ordering import by_name

    if args.scenario == "ospf":
        from netsleuth.defined.daemons.cli_events import cmd_run_events
        by_name(args.ordering)
        return cmd_run_events(args)
    sc = _scenario(args)
    if sc.name == "rip":
        return _run_rip(args)
    by_name(args.ordering)
    runs = args.runs or 5
    outcomes: list[explore.Outcome] = []
    interrupted = False
    t0 = time.monotonic()
    title = f"{sc.name} on {args.daemon}: " + ("every order" if args.all_orders else f"{runs} runs")
    try:
        with progress_bar() as p:
            task = p.add_task(title, total=None if args.all_orders else runs)
            if args.all_orders:
                def shown(i: int, total: int, o: explore.Outcome) -> None:
                    outcomes.append(o)
                    p.update(task, completed=i + 1, total=total)
                explore.all_orders(sc, args.daemon, shown, quiet=args.quiet)
            else:
                for i in range(runs):
                    outcomes.append(explore.one_run(sc, args.daemon, ordering=args.ordering,
                                                    hold=args.mode != "plain", quiet=args.quiet))
                    p.update(task, completed=i + 1)
    except KeyboardInterrupt:
        interrupted = True
    d = _summary(sc, args, outcomes, interrupted, time.monotonic() - t0)
    if not emit_result(args, d, interrupted):
        return 0
    _table(d, args)
    return 0


def _run_rip(args: argparse.Namespace) -> int:
    from netsleuth.defined.daemons.rip import rip_run

    runs = args.runs or 3
    outs = []
    interrupted = False
    try:
        with progress_bar() as p:
            task = p.add_task(f"rip on {args.daemon}: {runs} runs on the virtual clock", total=runs)
            for i in range(runs):
                outs.append(rip_run(args.daemon, seed=args.seed))
                p.update(task, completed=i + 1)
    except KeyboardInterrupt:
        interrupted = True
    hist = {json.dumps(o.history) for o in outs}
    d = {"scenario": "rip", "daemon": args.daemon, "runs": len(outs), "interrupted": interrupted,
         "distinct_histories": len(hist), "per_run": [o.to_json() for o in outs]}
    if not emit_result(args, d, interrupted):
        return 0
    from rich.table import Table

    t = Table(title=f"netsleuth defined run: rip on {args.daemon} (virtual clock)", show_header=False)
    t.add_row("runs", str(len(outs)))
    t.add_row("r1 learnt 192.0.2.0/24 at", ", ".join(f"{o.learned_at:.0f} s" for o in outs))
    t.add_row("r1 last heard r2 at", ", ".join(f"{o.last_update_at:.0f} s" for o in outs if o.last_update_at))
    t.add_row("withdrawn at", ", ".join(f"{o.withdrawn_at:.0f} s ({o.held_for:.0f} s later)" for o in outs
                                        if o.withdrawn_at is not None and o.held_for is not None))
    t.add_row("wall time per run", ", ".join(f"{o.wall_seconds:.1f} s" for o in outs))
    t.add_row("distinct routing-table histories", str(len(hist)))
    out.print(t)
    return 0


def _summary(sc: DaemonScenario, args: argparse.Namespace, outs: list[explore.Outcome], interrupted: bool,
             seconds: float) -> dict:
    counts = collections.Counter(o.best for o in outs)
    mode = "all-orders" if args.all_orders else \
        ("arrival order" if args.mode == "plain" else f"ordering {args.ordering}")
    verdict = explore.verdict(sc, outs, "orders" if args.all_orders else "runs") if outs else ""
    return {"scenario": sc.name, "daemon": args.daemon, "mode": mode,
            "ordering": args.ordering, "deterministic_med": sc.net.deterministic_med, "runs": len(outs),
            "interrupted": interrupted, "observer": sc.observer, "prefix": sc.prefix,
            "outcomes": dict(sorted(counts.items())), "distinct_outcomes": len(counts),
            "verdict": verdict, "seconds": round(seconds, 2),
            "per_run": [o.to_json() for o in outs]}


def _table(d: dict, args: argparse.Namespace) -> None:
    from rich.table import Table

    t = Table(title=f"netsleuth defined run: {d['scenario']} on {d['daemon']}, {d['mode']}"
                    f"{', deterministic MED' if d['deterministic_med'] else ''}", show_header=False)
    t.add_row("runs", str(d["runs"]))
    t.add_row(f"best path at {d['observer']}", ", ".join(f"{k} x{v}" for k, v in d["outcomes"].items()))
    t.add_row("distinct outcomes", str(d["distinct_outcomes"]))
    if d["mode"] == "all-orders":
        for o in d["per_run"]:
            t.add_row("  " + "-".join(o["order"]), o["best"])
    t.add_row("time", f"{d['seconds']:.1f} s")
    if args.out:
        t.add_row("result", str(Path(args.out) / "result.json"))
    out.print(t)
    out.print(d["verdict"], markup=False)


def _lines(args: argparse.Namespace) -> Iterable[str]:
    if args.commands:
        try:
            return Path(args.commands).read_text().splitlines()
        except OSError as exc:
            raise NetsleuthError(f"cannot read --commands {args.commands}: {exc.strerror}",
                                 "pass a text file with one console command per line") from None
    if sys.stdin.isatty():
        def prompt() -> Iterable[str]:
            while True:
                try:
                    yield input("(defined) ")
                except EOFError:
                    return
        return prompt()
    return (line.rstrip("\n") for line in sys.stdin)   # line by line: a driving program may wait on the output


def cmd_step(args: argparse.Namespace) -> int:
    from netsleuth.defined.daemons.console import run_daemon_console
    from netsleuth.defined.daemons.net import LiveNet
    from netsleuth.defined.ordering import by_name

    if not args.scenario:
        raise NetsleuthError("step --daemon needs a scenario", "add --scenario med")
    sc = _scenario(args)
    ordering = by_name(args.ordering or "defined")
    lines = _lines(args)
    clocked = sc.name == "rip"
    with LiveNet(sc.net, args.daemon, ordering, hold=not clocked, clocked=clocked) as n:
        assert n.host is not None
        if clocked:
            n.settle()
        print(f"run directory {n.host.rundir} (removed at exit)", flush=True)
        return run_daemon_console(n, sc, lines, sys.stdout, quiet=args.quiet)
