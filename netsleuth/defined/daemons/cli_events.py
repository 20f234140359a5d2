"""`netsleuth defined run --daemon bird --scenario ospf`, `defined fuzz` and `defined minimize`: options and summaries.

All three run OSPF on BIRD on the virtual clock, driven by recorded external
events (:mod:`.events`), every message in the ordering function's order,
the invariants checked after every delivery (:mod:`.replay`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from netsleuth.console import out, progress_bar
from netsleuth.errors import NetsleuthError


def _statics(values: list[str] | None) -> tuple[tuple[str, str], ...]:
    out_: list[tuple[str, str]] = []
    for v in values or []:
        a, sep, b = v.partition(":")
        if not sep or not a or not b:
            raise NetsleuthError(f"--static-route {v!r} is not ROUTER:DEST", "write e.g. --static-route s1:s2")
        out_.append((a, b))
    return tuple(out_)


def _write(args: argparse.Namespace, d: dict) -> None:
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "result.json").write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")


def emit_result(args: argparse.Namespace, d: dict, interrupted: bool) -> bool:
    """Write result.json (with --out), then stop as Ctrl-C did once it is written, or print the JSON
    (with --json); True when the command should still print its table."""
    _write(args, d)
    if interrupted:
        raise KeyboardInterrupt
    if args.json:
        print(json.dumps(d, sort_keys=True))
        return False
    return True


def _violations(items: list[dict]) -> None:
    from netsleuth.invariants.violation_text import violation_lines  # the header-space engine: not for --help

    for v in items[:5]:
        for line in violation_lines(v):
            out.print(f"  {line}", markup=False)
        out.print(f"    from t={v['since']} s (after delivery {v['after_delivery']}), for {v['lasted']} virtual s",
                  markup=False)
    if len(items) > 5:
        out.print(f"  and {len(items) - 5} more (result.json)", markup=False)


def cmd_run_events(args: argparse.Namespace) -> int:
    """Replay recorded (or generated) link events ``--runs`` times; compare deliveries and table histories."""
    from netsleuth.defined.daemons import events as ev
    from netsleuth.defined.daemons.replay import run_events

    if args.events:
        spec, events = ev.read(Path(args.events))
    else:
        spec = ev.NetSpec(args.topo or "topozoo/Belnet2009", args.daemon, args.seed, _statics(args.static_route))
        events = ev.link_workload(spec.build(), args.link_events, args.scenario_seed, down_for=6, gap=2)
    net = spec.build()
    ev.validate(net, events)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        ev.write(Path(args.out) / "events.jsonl", spec, events)
    runs, interrupted = [], False
    try:
        with progress_bar() as p:
            task = p.add_task(f"{net.name} on {spec.daemon}: {len(events)} events, {args.runs or 5} runs",
                              total=args.runs or 5)
            for i in range(args.runs or 5):
                runs.append(run_events(net, events, spec.daemon, seed=spec.seed, ordering=args.ordering))
                p.update(task, completed=i + 1)
    except KeyboardInterrupt:
        interrupted = True
    d = {"scenario": "ospf", "network": spec.to_json(), "routers": len(net.routers), "links": len(net.links),
         "events": len(events), "runs": len(runs), "interrupted": interrupted, "ordering": args.ordering,
         "distinct_delivery_sequences": len({json.dumps(r.deliveries) for r in runs}),
         "distinct_histories": len({json.dumps(r.history, sort_keys=True) for r in runs}),
         "per_run": [r.to_json(args.persist) for r in runs]}
    if not emit_result(args, d, interrupted):
        return 0
    from rich.table import Table

    t = Table(title=f"netsleuth defined run: OSPF on {spec.daemon}, {net.name} ({len(net.routers)} routers), "
                    f"{len(events)} external events, ordering {args.ordering}", show_header=False)
    t.add_row("runs", str(len(runs)))
    if runs:
        r0 = runs[0]
        t.add_row("messages delivered per run", str(len(r0.deliveries)))
        t.add_row("virtual seconds per run", f"{r0.virtual_seconds:.0f}")
        t.add_row("wall time per run", ", ".join(f"{r.wall_seconds:.1f} s" for r in runs))
    t.add_row("distinct delivery sequences", str(d["distinct_delivery_sequences"]))
    t.add_row("distinct routing-table histories", str(d["distinct_histories"]))
    if args.out:
        t.add_row("events", str(Path(args.out) / "events.jsonl"))
    out.print(t)
    if runs and d["per_run"][0]["persistent"]:
        out.print(f"violations that held for {args.persist:.0f} virtual seconds or more (run 1):")
        _violations(d["per_run"][0]["persistent"])
    return 0


def cmd_fuzz(args: argparse.Namespace) -> int:
    from netsleuth.defined.daemons import events as ev
    from netsleuth.defined.daemons.fuzz import fuzz

    if args.daemon != "bird":
        raise NetsleuthError("fuzz on daemons runs OSPF on BIRD", "add --daemon bird")
    if args.persist is None:   # a restarted BIRD needs ~10 virtual s to relearn its routes: not a bug
        args.persist = 20.0 if args.restart_rate > 0 else 10.0
    spec = ev.NetSpec(args.topo, args.daemon, 0, _statics(args.static_route), {"persist": args.persist})
    spec.build()
    try:
        with progress_bar() as p:
            task = p.add_task(f"fuzz {spec.topo} on {args.daemon} (seed {args.seed})", total=None)
            res = fuzz(spec, args.steps, args.seed, persist=args.persist, ordering=args.ordering,
                       rates={"link": 1.0 - args.restart_rate, "restart": args.restart_rate},
                       on_second=lambda t: p.update(task, description=f"fuzz {spec.topo}: virtual t={t} s"))
    except KeyboardInterrupt:   # the network is down by now; say what was being run, then stop
        _write(args, {"network": spec.to_json(), "seed": args.seed, "steps": args.steps, "interrupted": True})
        raise
    d = {"network": spec.to_json(), "seed": args.seed, "steps": args.steps, "persist": args.persist,
         **res.to_json(args.persist)}
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        ev.write(Path(args.out) / "events.jsonl", spec, res.events)
    _write(args, d)
    if args.json:
        print(json.dumps(d, sort_keys=True))
    else:
        out.print(f"fuzz: {len(res.events)} external events, {len(res.run.deliveries)} messages delivered, "
                  f"{res.run.virtual_seconds:.0f} virtual s in {res.run.wall_seconds:.1f} s")
        if res.found:
            out.print(f"persistent violation (held {args.persist:.0f} virtual s):")
            _violations([d["violation"]])
            if args.out:
                out.print(f"minimize it: netsleuth defined minimize {Path(args.out) / 'events.jsonl'}")
        else:
            out.print("no violation held for long enough")
    return 1 if res.found else 0


def cmd_minimize(args: argparse.Namespace) -> int:
    from netsleuth.defined.daemons import events as ev
    from netsleuth.defined.daemons.fuzz import minimize

    spec, events = ev.read(Path(args.events))
    ev.validate(spec.build(), events)
    if args.persist is None:   # the threshold fuzz used, recorded in the file's header
        args.persist = float(spec.extra.get("persist", 10.0))
    with progress_bar() as p:
        task = p.add_task(f"minimize {len(events)} events", total=None)
        tests = [0]

        def shown(key: tuple, ok: bool) -> None:
            tests[0] += 1
            p.update(task, description=f"minimize: test {tests[0]}, {len(key)} events: "
                                       f"{'reproduces' if ok else 'does not'}")
        res = minimize(spec, events, persist=args.persist, ordering=args.ordering, on_test=shown)
    d = {"network": spec.to_json(), **res.to_json()}
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        ev.write(Path(args.out) / "events.jsonl", spec, res.kept)
    _write(args, d)
    if res.interrupted:
        out.print(f"interrupted: the smallest reproducing subset so far has {len(res.kept)} events (result.json)"
                  if res.reproduced else "interrupted before the first replay ended")
        raise KeyboardInterrupt
    if args.json:
        print(json.dumps(d, sort_keys=True))
    elif not res.reproduced:
        out.print("the recorded events show no persistent violation: nothing to minimize")
    else:
        out.print(f"minimized {len(events)} external events to {len(res.kept)} in {d['tests']} replays:")
        for e in res.kept:
            out.print(f"  {e.words()}", markup=False)
        for ps in res.passes:
            out.print(f"  pass {ps.name}: {ps.tests} replays, {ps.kept} events kept, {ps.seconds:.1f} s")
        if res.violation:
            _violations([res.violation])
    return 0 if res.reproduced else 1


def add_commands(dsub: argparse._SubParsersAction, daemon_args) -> None:
    f = dsub.add_parser("fuzz", help="daemons: random link failures, recoveries and restarts on OSPF (BIRD) until "
                                     "a loop, blackhole or unreachable prefix holds for --persist virtual seconds")
    f.add_argument("--topo", default="ring,4", help="the network: ring,N | mesh,N | topozoo/NAME | brite,N | a file")
    f.add_argument("--steps", type=int, default=12, help="external events to draw (default 12)")
    f.add_argument("--seed", type=int, default=0, help="seed of the event sequence")
    f.add_argument("--restart-rate", type=float, default=0.0,
                   help="chance that a step crashes a router and restarts it 2 s later instead of a link event")
    add_common(f)
    daemon_args(f)
    f.set_defaults(func=cmd_fuzz, daemon="bird")
    m = dsub.add_parser("minimize", help="daemons: cut recorded external events (events.jsonl from fuzz) down to "
                                         "the fewest that still give the same persistent violation")
    m.add_argument("events", help="events.jsonl written by `defined fuzz|run --daemon --out DIR`")
    m.add_argument("--persist", type=float,
                   help="virtual seconds a violation must hold (default: the one fuzz used, from the file; else 10)")
    m.add_argument("--ordering", default="defined", help="ordering function of the replays (default defined)")
    m.add_argument("--json", action="store_true", help="print the result as JSON")
    m.add_argument("--out", help="directory for the minimal events.jsonl and result.json")
    m.set_defaults(func=cmd_minimize)


def add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--static-route", action="append", metavar="ROUTER:DEST",
                   help="seed a misconfiguration: ROUTER routes DEST's loopback statically over their link "
                        "(BIRD prefers it to OSPF), a blackhole once that link fails; repeatable")
    p.add_argument("--persist", type=float,
                   help="virtual seconds a violation must hold to count (default 10, past OSPF's dead interval; "
                        "20 with --restart-rate: a restarted router takes ~10 s to relearn its routes)")
    p.add_argument("--ordering", default="defined", help="ordering function (default defined)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--out", help="directory for events.jsonl and result.json")
