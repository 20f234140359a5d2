"""The `netsleuth` command: argument parsing, progress, summaries. No logic.

It prints through netsleuth.console, like every command-line module.  Exit codes never overlap, so a script
(or CI) can tell a finding from a failure:

* 0: clean; 1: a violation or difference was found;
* 2: usage or input error -- every NetsleuthError and every argparse error
  becomes one line ``error: <problem> -- fix: <fix>`` (plus the controller's
  last log lines when there are any);
* 3: an unexpected exception inside netsleuth -- one line naming it and the
  log file that holds its traceback (on the terminal only with ``--debug``);
* 128 + N: stopped by signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP), after
  the partial results were written (live/stop.py).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import textwrap
import time
import traceback
from pathlib import Path
from typing import Any

from rich.table import Table

from netsleuth import __version__
from netsleuth.console import JobProgressBar, err, out, progress_bar
from netsleuth.errors import NetsleuthError
from netsleuth.jobs.switch_options import add_switch_options, limits_of
from netsleuth.live import stop
from netsleuth.openflow.osken_versions import defer_ofproto_init
from netsleuth.options import at_least, out_dir, out_file, seconds
from netsleuth.races import cli as races_cli

# A command's process (and every worker it spawns, which imports this module first) loads os-ken's
# OpenFlow 1.0 and 1.3 modules, not every version os-ken has: see openflow/osken_versions.py.
defer_ofproto_init()


class Parser(argparse.ArgumentParser):
    """argparse with netsleuth's error form: one line with the fix, exit code 2.

    Subcommand parsers are made with the parser's own class, so every level
    of ``netsleuth ... --help`` reports errors this way."""

    def error(self, message: str) -> None:  # type: ignore[override]  # self.exit never returns
        line = " ".join(message.split())
        if " -- fix: " not in line:
            line += f" -- fix: see `{self.prog} --help`"
        self.exit(2, f"error: {self.prog}: {line}\n")


VERBOSE_HELP = "print each violation's exact header space, path and rules (they are always in result.json)"


def cmd_run(args: argparse.Namespace) -> int:
    from netsleuth.jobs.run import RunOptions, run

    opts = RunOptions(controller=args.controller, topo=args.topo, out=Path(args.out), pingall=args.pingall,
                      checks=args.check, handshake_timeout=args.handshake_timeout,
                      ping_timeout=args.ping_timeout, seed=args.seed,
                      record_packets=not args.no_packet_events, isolation=args.isolation,
                      openflow=args.openflow, warmup=args.warmup, limits=limits_of(args))
    with progress_bar() as p:
        result = run(opts, JobProgressBar(p))
    d = result.data
    table = Table(title=f"netsleuth run: {d['controller']} on {d['topology']}", show_header=False)
    table.add_row("switches / hosts", f"{d['switches']} / {d['hosts']}")
    b = d.get("bootstrap") or {}
    table.add_row("handshakes", f"{b.get('connected', 0)}/{b.get('expected', 0)} in {b.get('seconds', 0)} s")
    if d.get("pingall") is not None:
        pa = d["pingall"]
        total = pa["ok"] + pa["failed"]
        table.add_row("pingall", f"{pa['ok']}/{total} ok" + (f", {pa['failed']} failed" if pa["failed"] else ""))
    table.add_row("invariants", ", ".join(d["checks"]))
    table.add_row("violations", str(len(d["violations"])))
    for cs in d.get("controllers", []):
        table.add_row(f"controller {cs['name']}",
                      ("alive" if cs["alive"] else f"exited ({cs['exit_code']})")
                      + (f", {len(cs['logged_errors'])} logged exception(s)" if cs["logged_errors"] else ""))
    table.add_row("trace", str(Path(args.out) / "trace.jsonl"))
    table.add_row("result", str(Path(args.out) / "result.json"))
    out.print(table)
    _print_failed_pings(d.get("pingall"))
    _print_violations(d["violations"], trace=Path(args.out) / "trace.jsonl", verbose=args.verbose)
    return result.exit_code


def _print_failed_pings(pingall: dict | None, shown: int = 10) -> None:
    """Each failed ping of ``run --pingall`` and why, one line each (all of them in result.json)."""
    if not pingall or not pingall.get("failed"):
        return
    on_purpose = len(pingall.get("failed_on_purpose", []))
    out.print(f"[red]{pingall['failed']} ping(s) failed[/red]" + (f" ({on_purpose} kept apart by the controller's "
                                                                   "configuration)" if on_purpose else ""))
    why = pingall.get("failed_why") or {}
    for pair in pingall["failed_pairs"][:shown]:
        line = f"  - {pair.replace('->', ' → ')}: {why.get(pair, {}).get('why', 'no answer')}"
        for part in textwrap.wrap(line, width=158, subsequent_indent="      "):
            out.print(part, markup=False, highlight=False, soft_wrap=True)
    if len(pingall["failed_pairs"]) > shown:
        out.print(f"  ... {len(pingall['failed_pairs']) - shown} more in result.json", markup=False)


def _print_violations(violations: list[dict], examples: int = 3, trace: Path | str | None = None,
                      verbose: bool = False) -> None:
    """Violations grouped by invariant: a count and the first few, each in the words of
    :func:`~netsleuth.jobs.violations.violation_block` (the exact header space with ``--verbose``)."""
    from netsleuth.jobs.violations import by_invariant, violation_block

    for name, vs in by_invariant(violations).items():
        out.print(f"[red]{len(vs)} violation(s) of {name}[/red]")
        for line in violation_block(vs, trace=trace, verbose=verbose, limit=None if verbose else examples):
            out.print(line, markup=False, highlight=False, soft_wrap=True)


def cmd_fuzz(args: argparse.Namespace) -> int:
    from netsleuth.jobs.fuzz import FuzzOptions, fuzz
    from netsleuth.schedulers.fuzz import Rates

    rates = Rates.from_toml(args.rates) if args.rates else Rates()
    rates = rates.with_overrides(args.rate or [])
    opts = FuzzOptions(controller=args.controller, topo=args.topo, out=Path(args.out), steps=args.steps,
                       seed=args.seed, rates=rates, checks=args.check, persist=args.persist,
                       keep_going=args.keep_going, round_seconds=args.round_seconds,
                       check_every=args.check_every, record_packets=not args.no_packet_events,
                       isolation=args.isolation, openflow=args.openflow, warmup=args.warmup,
                       check_every_flowmod=args.check_every_flowmod, limits=limits_of(args),
                       services=tuple(args.service or ()))
    with progress_bar() as p:
        result = fuzz(opts, JobProgressBar(p))
    d = result.data
    table = Table(title=f"netsleuth fuzz: {d['controller']} on {d['topology']} (seed {d['seed']})",
                  show_header=False)
    table.add_row("steps", f"{d['steps']} of {args.steps}")
    table.add_row("inputs", ", ".join(f"{k} {v}" for k, v in sorted(d["inputs"].items())) or "none")
    persistent = [v for v in d["violations"] if v["persistent"]]
    table.add_row("violations", f"{len(persistent)} persistent, {len(d['violations']) - len(persistent)} transient")
    ef = d.get("every_flowmod")
    if ef:
        table.add_row("checked per FLOW_MOD", f"{ef['flow_mods']} messages in {ef['check_seconds']} s; "
                      f"{ef['cleared_within_round']} finding(s) cleared before their round's check")
    table.add_row("trace", str(Path(args.out) / "trace.jsonl"))
    table.add_row("result", str(Path(args.out) / "result.json"))
    out.print(table)
    _print_violations(persistent, trace=Path(args.out) / "trace.jsonl", verbose=args.verbose)
    return result.exit_code


def cmd_invariants(args: argparse.Namespace) -> int:
    import json

    from netsleuth.jobs.invariants_on_trace import invariants_on_trace

    if args.at_sts_violation:
        return _invariants_at_sts_violation(args)
    d = invariants_on_trace(args.trace, args.check, args.at, args.isolation, args.faucet_policy)
    if args.out:
        _write_result(Path(args.out), d)
    if args.json:
        out.print_json(json.dumps(d))
    else:
        out.print(f"{args.trace}: state after event {d['at_seq']} ({d['events_applied']} events applied), "
                  f"{sum(d['flow_entries'].values())} flow entries;\n  checked {', '.join(d['checks'])}",
                  soft_wrap=True)
        if not d["violations"]:
            out.print("no violations")
        _print_violations(d["violations"], examples=10, trace=args.trace, verbose=args.verbose)
    return 1 if d["violations"] else 0


def _write_result(out_dir: Path, d: dict) -> None:
    import json

    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "result.json").write_text(json.dumps(d, indent=2, sort_keys=True) + "\n")


def _invariants_at_sts_violation(args: argparse.Namespace) -> int:
    """Per violation STS recorded: does netsleuth's matching invariant agree (exit 0 all do, 1 any does not)?"""
    import json

    from netsleuth.jobs.sts_agreement import StsAgreementError, sts_agreement

    if args.at is not None or args.check or args.isolation:
        raise StsAgreementError("--at-sts-violation chooses the points and the invariants itself; "
                                "--at, --check and --isolation do not go with it",
                                "drop --at/--check/--isolation, or drop --at-sts-violation")
    d = sts_agreement(args.trace)
    if args.out:
        _write_result(Path(args.out), d)
    if args.json:
        out.print_json(json.dumps(d))
        return 0 if d["all_agree"] else 1
    circular = (f" ({d['agree_from_recording']} of them only from the recording's own record of the check)"
                if d["agree_from_recording"] else "")
    out.print(f"{args.trace}: {d['sts_violations']} violation(s) recorded by STS; netsleuth agrees with "
              f"{d['agree']}{circular}, not with {d['disagree']}", soft_wrap=True, markup=False, highlight=False)
    for r in d["violations"]:
        where = f"STS {r['sts_label']} (round {r['sts_round']}, {r['sts_check']}"
        where += ", persistent)" if r["persistent"] else ", transient)"
        shown = r.get("netsleuth_findings") or []
        said = f": {shown[0]['message']}" if shown else ""
        line = f"  {r['status']}: {where} -> netsleuth {'/'.join(r.get('netsleuth_checks') or ['-'])}{said}"
        if r.get("basis") == "recording":
            line += " [from the recording's own record]"
        if r["reason"]:
            line += f" -- {r['reason']}"
        out.print(line, soft_wrap=True, markup=False, highlight=False)
    return 0 if d["all_agree"] else 1


def cmd_import(args: argparse.Namespace) -> int:
    import json

    from netsleuth.model.topo_builders import parse_topo
    from netsleuth.openflow.codec import decode, msg_to_json
    from netsleuth.trace.importers.sts import import_sts
    from netsleuth.trace.io import write_trace

    topo = parse_topo(args.topo) if args.topo else None
    report = import_sts(args.file, topology=topo, decode_openflow=lambda b: msg_to_json(decode(b)))
    write_trace(args.out, report.trace)
    if args.json:
        print(json.dumps(report.to_json(), sort_keys=True))
    else:
        for line in report.summary():
            out.print(line, markup=False, highlight=False, soft_wrap=True)
        out.print(f"wrote {args.out}")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from netsleuth.jobs.replay import ReplayOptions, replay

    opts = ReplayOptions(trace=Path(args.trace), out=Path(args.out), controller=args.controller, times=args.times,
                         epsilon=args.epsilon / 1000.0, violation=args.violation,
                         record_packets=not args.no_packet_events, openflow=args.openflow,
                         trust_trace_controller=args.trust_trace_controller,
                         buffer_packets=args.buffer_packets, table_size=args.table_size, coverage=args.coverage)
    with progress_bar() as p:
        d = replay(opts, JobProgressBar(p))
    table = Table(title=f"netsleuth replay of {args.trace}", show_header=False)
    t = d["target"]
    table.add_row("target",
                  f"{t['invariant']}: {t['message']}" if t else "none (the trace has no persistent violation)")
    for i, r in enumerate(d["replays"], 1):
        table.add_row(f"replay {i}", f"{'reproduced' if r['reproduced'] else 'not reproduced'}: "
                      f"{r['matched']} matched, {r['timed_out']} timed out, {r['new']} new internal events, "
                      f"{r['seconds']} s")
    if d["reproduction_rate"] is not None:
        table.add_row("reproduction rate", f"{d['reproduction_rate']:.0%}")
    table.add_row("result", str(Path(args.out) / "replay.json"))
    out.print(table)
    _print_target(args)
    for r in d["replays"]:
        for line in r.get("controller_died", []):
            out.print(f"[red]warning[/red]: {line}", soft_wrap=True)
    return 0 if d["reproduced"] in (True, None) else 1


def _print_target(args: argparse.Namespace) -> None:
    """With ``--verbose``: the violation replay or minimize aims at, its exact header space too."""
    if not getattr(args, "verbose", False):
        return
    from netsleuth.jobs.violations import target_lines

    for line in target_lines(args.trace, args.violation, verbose=True):
        out.print(line, markup=False, highlight=False, soft_wrap=True)


def cmd_minimize(args: argparse.Namespace) -> int:
    from netsleuth.jobs.localize_cli import localize_kwargs, print_mcs
    from netsleuth.jobs.minimize import MinimizeOptions, run_minimize

    opts = MinimizeOptions(trace=Path(args.trace), out=Path(args.out), controller=args.controller,
                           replays=args.replays, jobs=args.jobs, executor=args.executor, budget=args.budget,
                           strategy=args.strategy, violation=args.violation, epsilon=args.epsilon / 1000.0,
                           max_gap=None if args.keep_spacing else 0.05, peek=args.peek, openflow=args.openflow,
                           trust_trace_controller=args.trust_trace_controller,
                           buffer_packets=args.buffer_packets, table_size=args.table_size,
                           focus=args.focus, prestart=args.prestart, early_end=args.early_end, **localize_kwargs(args))
    with progress_bar() as p:
        task = p.add_task("minimizing", total=None)

        def on_progress(pr) -> None:
            p.update(task, description=f"{pr.pass_name}: {pr.inputs} inputs left, {pr.replays} replays")

        d = run_minimize(opts, on_progress)
    table = Table(title=f"netsleuth minimize {args.trace}", show_header=False)
    t = d["target"]
    table.add_row("target", f"{t['invariant']}: {t['message']}")
    table.add_row("inputs", f"{d['inputs_before']} -> {d['inputs_after']}"
                  + (" (1-minimal)" if d["one_minimal"] else f" (stopped: {d['stop_reason']})"))
    table.add_row("replays", f"{d['replays']} ({d['inputs_replayed']} inputs replayed)")
    if d["reproduction_rate"] is not None:
        table.add_row("MCS reproduces", f"{d['reproduction_rate']:.0%} of {d['reproduction']['replays']} replays")
    table.add_row("seconds", str(d["seconds"]))
    if d.get("peek"):
        pk = d["peek"]
        table.add_row("PEEK", f"{pk['prefixes_replayed']} prefix replays, {pk['memo_hits']} memo hits, "
                              f"{pk['seconds']} s")
    table.add_row("MCS trace", str(Path(args.out) / "mcs.jsonl"))
    if d.get("report"):
        table.add_row("report", d["report"]["html"])
    out.print(table)
    _print_target(args)
    print_mcs(d)  # and the suspicious lines of --localize
    if d.get("stop_reason") == "interrupted":  # the best result so far is written; say how it ended
        err.print(f"stopped by {d.get('stopped_by', 'SIGINT')}: the best result so far is written",
                      markup=False)
        return stop.exit_code()
    return 0


def _add_openflow(p: argparse.ArgumentParser, default: str | None = "auto") -> None:
    p.add_argument("--openflow", choices=["auto", "1.0", "1.3"], default=default,
                   help="OpenFlow versions the switches offer: 1.0, 1.3 or auto (both; the controller picks)"
                        + ("" if default else "; default: what the trace's switches negotiated"))


def _warmup(text: str) -> Any:
    from netsleuth.live.ready import Warmup, WarmupError

    try:
        return Warmup.parse(text)
    except WarmupError as e:
        raise argparse.ArgumentTypeError(e.problem) from None


def _add_common(p: argparse.ArgumentParser, warmup: str = "0") -> None:
    p.add_argument("--controller", required=True, action="append",
                   help='osken:<app>[,<app>...] | ryu:<app or app.py>[,...] [--observe-links] | faucet:auto | '
                        'pox:"<components and options>" | cmd:"<command with {port}>" | tcp:HOST:PORT; '
                        'repeat it and every switch connects to every controller')
    p.add_argument("--topo", required=True,
                   help="single,N | linear,N | tree,depth=D,fanout=F | torus,X,Y | mesh,N | ring,N | "
                        "fattree,K | FILE.json | FILE.graphml")
    p.add_argument("--out", required=True, type=out_dir(),
                   help="directory for trace.jsonl, result.json, controller.log")
    p.add_argument("--check", default=None, help="comma-separated invariants (default: "
                   "liveness,loops,blackholes,reachability,dataplane-loops,isolation; also: delivery)")
    p.add_argument("--isolation", type=Path, help='policy of host pairs that must not reach each other: '
                   'JSON {"isolate": [["h1","h3"]]} or TOML isolate = [["h1","h3"]]')
    p.add_argument("--seed", type=int, default=0)
    _add_openflow(p)
    p.add_argument("--warmup", type=_warmup, default=warmup, metavar="SECONDS|auto[:SECONDS]",
                   help="after the handshakes, wait with no traffic and no invariant checks: SECONDS, or "
                        "auto: until the controllers stop changing tables, their link discovery has seen every "
                        "link, their spanning tree converged and a Faucet stack is up (at most 60 s, or "
                        f"auto:SECONDS); replays warm up the same way (default: {warmup})")
    p.add_argument("--no-packet-events", action="store_true", help="do not record each dataplane hop")
    p.add_argument("--verbose", action="store_true", help=VERBOSE_HELP)
    add_switch_options(p)


# Further command groups live beside the code they drive; each module has
# ``add_commands(sub)`` that adds its subparsers (with ``func`` set as above).
COMMAND_MODULES: tuple[str, ...] = (
    "netsleuth.rootcause.cli",
    "netsleuth.nice.cli",
    "netsleuth.nice.cex_inputs_cli",
    "netsleuth.defined.cli",
    "netsleuth.controllers.faucet_cli",
    "netsleuth.jobs.localize_cli",
    "netsleuth.campaign.cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="netsleuth", description="Test and troubleshoot SDN control software.")
    parser.add_argument("--version", action="version", version=f"netsleuth {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="on an internal error (exit code 3) also print the traceback here, not only in "
                             "the log file (may be given anywhere on the command line)")
    sub = parser.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="bootstrap a mock network against a controller, ping, check invariants")
    _add_common(r, warmup="auto")
    r.add_argument("--pingall", action="store_true", help="every host pings every other host")
    r.add_argument("--handshake-timeout", type=seconds(), default=60.0, help="seconds (default 60)")
    r.add_argument("--ping-timeout", type=seconds(), default=2.0, help="seconds (default 2)")
    r.set_defaults(func=cmd_run)

    f = sub.add_parser("fuzz", help="inject random failures, migrations and traffic; stop on a persistent violation")
    _add_common(f)
    f.add_argument("--steps", type=at_least(1), default=200, help="rounds to run (default 200)")
    f.add_argument("--service", action="append", metavar="IP",
                   help="an address no host has that hosts open TCP connections to (a load balancer's virtual "
                        "IP), at the service_traffic rate: each a SYN to port 80 from a fresh source port, "
                        "after ARP; repeat for several")
    f.add_argument("--rates", help="TOML file of per-round probabilities, e.g. host_migration = 0.05")
    f.add_argument("--rate", action="append", metavar="NAME=P",
                   help="override one rate (switch_failure, switch_recovery, link_failure, link_recovery, "
                        "controller_crash, controller_recovery, channel_block, channel_unblock, "
                        "host_migration, traffic, dataplane_drop, dataplane_delay, control_delay, "
                        "config_change: faucet: controllers only)")
    f.add_argument("--persist", type=at_least(1), default=3, help="rounds a violation must last to be reported")
    f.add_argument("--keep-going", action="store_true", help="do not stop at the first persistent violation")
    f.add_argument("--round-seconds", type=seconds(), default=0.1,
                   help="seconds each round lets pass before it waits for the network to settle (default 0.1); "
                   "controllers' timers and flow timeouts run in that time: shorter rounds (0.02) only for apps "
                   "with neither, such as simple_switch")
    f.add_argument("--check-every", type=at_least(1), default=1, help="check invariants every N rounds")
    f.add_argument("--check-every-flowmod", action="store_true",
                   help="also check loops, blackholes, reachability, isolation and acl after every FLOW_MOD "
                        "(and 1.3 GROUP_MOD) a switch applies, so each reported violation names the message "
                        "that first produced it (its trace seq, switch and rule). Persistence still decides "
                        "what is reported. OpenFlow 1.0 re-checks only what the message can change; 1.3 "
                        "re-runs its checks per message (fine on small networks, slow on large ones: see "
                        "bench/fuzz_every_flowmod.py). Only fuzz takes it: replay and minimize judge the end "
                        "state, which per-message checks do not change")
    f.set_defaults(func=cmd_fuzz)

    i = sub.add_parser("invariants", help="check invariants on the network state rebuilt from a trace")
    i.add_argument("trace", help="a netsleuth trace.jsonl")
    i.add_argument("--check", default=None, help="comma-separated invariants (default: the static ones)")
    i.add_argument("--at", type=at_least(0), help="check the state right after the event with this seq")
    i.add_argument("--isolation", type=Path, help="isolation policy file (see run --help)")
    i.add_argument("--faucet-policy", type=Path, metavar="FAUCET.yaml",
                   help="hold the tables to this Faucet config's VLANs, routers and ACLs (isolation, acl) "
                        "instead of the config the trace was recorded with")
    i.add_argument("--json", action="store_true", help="print the result as JSON")
    i.add_argument("--out", type=out_dir(), help="also write the result to OUT/result.json")
    i.add_argument("--at-sts-violation", action="store_true",
                   help="for a trace imported from STS: at each InvariantViolation STS recorded, run netsleuth's "
                        "matching invariant and say whether it agrees (exit 0: all agree, 1: some do not)")
    i.add_argument("--verbose", action="store_true", help=VERBOSE_HELP)
    i.set_defaults(func=cmd_invariants)

    races_cli.add_races(sub)

    rp = sub.add_parser("replay", help="re-run a trace's inputs against a fresh controller, respecting happens-before")
    rp.add_argument("trace", help="a netsleuth trace.jsonl")
    rp.add_argument("--out", required=True, type=out_dir(),
                    help="directory for the replay's trace, result.json and replay.json")
    rp.add_argument("--controller", action="append", help="override the trace's controller spec")
    rp.add_argument("--trust-trace-controller", action="store_true",
                    help="run the controller the trace's header names even when it is a cmd: command")
    rp.add_argument("--times", type=at_least(1), default=1, help="replays to run; reports the reproduction rate")
    rp.add_argument("--epsilon", type=seconds(allow_zero=True), default=500.0,
                    help="ms to wait past the recorded gap (default 500)")
    rp.add_argument("--violation", type=at_least(0), default=0,
                    help="which persistent violation to reproduce (0: first)")
    rp.add_argument("--no-packet-events", action="store_true", help="do not record each dataplane hop")
    rp.add_argument("--verbose", action="store_true", help=VERBOSE_HELP)
    _add_openflow(rp, None)
    add_switch_options(rp, None)
    rp.set_defaults(func=cmd_replay)

    mn = sub.add_parser("minimize", help="delta-debug a failing trace down to a minimal causal sequence (MCS)")
    mn.add_argument("trace", help="a netsleuth trace.jsonl that ends in a persistent violation")
    mn.add_argument("--out", required=True, type=out_dir(),
                    help="directory for mcs.jsonl, result.json and every replay")
    mn.add_argument("--controller", action="append", help="override the trace's controller spec")
    mn.add_argument("--trust-trace-controller", action="store_true",
                    help="run the controller the trace's header names even when it is a cmd: command")
    mn.add_argument("--replays", type=at_least(1), default=1, help="replays per candidate; it reproduces if any does")
    mn.add_argument("--jobs", type=at_least(1), help="parallel replays (local process pool; default: CPU count)")
    mn.add_argument("--executor", help="serial | local | ray[:ADDRESS] (default local)")
    mn.add_argument("--budget", type=seconds(), help="seconds; then stop with the best result so far")
    mn.add_argument("--strategy", choices=["ddmin", "binary"], default="ddmin")
    mn.add_argument("--violation", type=at_least(0), default=0, help="which persistent violation (0: first)")
    mn.add_argument("--epsilon", type=seconds(allow_zero=True), default=100.0,
                    help="ms to wait for an expected event (default 100)")
    mn.add_argument("--keep-spacing", action="store_true", help="replay with the recorded idle gaps")
    mn.add_argument("--no-focus", dest="focus", action="store_false",
                    help="do not try the inputs on the violation's own hosts alone before the search")
    mn.add_argument("--no-prestart", dest="prestart", action="store_false",
                    help="start each replay's controller when the replay begins, not while the one before runs")
    mn.add_argument("--full-wait", dest="early_end", action="store_false",
                    help="judge a candidate that has not shown the violation only at the deadline (recorded "
                         "reaction time + 3 s), even once the network and controller are at rest")
    _add_openflow(mn, None)
    add_switch_options(mn, None)
    mn.add_argument("--verbose", action="store_true", help=VERBOSE_HELP)
    mn.add_argument("--peek", action="store_true",
                    help="infer each candidate's expected internal events by replaying its prefixes (STS PEEK)")
    mn.set_defaults(func=cmd_minimize)

    races_cli.add_cluster(sub)

    im = sub.add_parser("import", help="convert another tool's trace into netsleuth's format")
    im.add_argument("format", choices=["sts"], help="the source format (sts: an STS events.trace)")
    im.add_argument("file", help="the trace to convert: an STS experiment folder (its config files give the "
                                 "topology and the invariant check), or its events.trace / mcs.trace")
    im.add_argument("--out", required=True, type=out_file(), help="where to write the netsleuth trace (.jsonl)")
    im.add_argument("--topo", help="the topology it was recorded on, e.g. sts-mesh,3 (default: the one the "
                                   "experiment's config names, else inferred from the trace)")
    im.add_argument("--json", action="store_true", help="print the conversion report as JSON")
    im.set_defaults(func=cmd_import)
    for module in COMMAND_MODULES:
        importlib.import_module(module).add_commands(sub)
    return parser


def _internal_error(exc: BaseException, args: argparse.Namespace | None, debug: bool) -> int:
    """Exit code 3: one line naming the exception and the log that holds its traceback."""
    text = "".join(traceback.format_exception(exc))
    out_arg = getattr(args, "out", None) if args is not None else None
    log: Path | None = None
    try:
        if out_arg and Path(out_arg).is_dir():
            log = Path(out_arg) / "netsleuth-error.log"
        else:
            fd, name = tempfile.mkstemp(prefix="netsleuth-error-", suffix=".log")
            os.close(fd)
            log = Path(name)
        command = " ".join(sys.argv[1:]) if args is None else str(getattr(args, "command", ""))
        log.write_text(f"netsleuth {__version__} {time.strftime('%Y-%m-%d %H:%M:%S')} command: {command}\n{text}")
    except OSError:
        log = None
    where = str(log) if log else "the traceback printed with --debug"
    print(f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())} -- fix: this is a bug in "
          f"netsleuth; please report it with {where}", file=sys.stderr)
    if debug or log is None:
        print(text, file=sys.stderr, end="")
    return 3


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    end = argv.index("--") if "--" in argv else len(argv)
    debug = "--debug" in argv[:end]
    argv = [a for i, a in enumerate(argv) if not (i < end and a == "--debug")]
    args: argparse.Namespace | None = None
    with stop.stop_signals():  # SIGTERM and SIGHUP stop a job as Ctrl-C does
        try:
            try:
                args = build_parser().parse_args(argv)
            except SystemExit as exc:  # --help, --version, or a usage error already printed in one line
                return exc.code if isinstance(exc.code, int) else 2
            if getattr(args, "pox", None):  # for this process and the replays it starts
                os.environ["NETSLEUTH_POX"] = str(Path(args.pox).expanduser().resolve())
            return args.func(args)
        except NetsleuthError as exc:
            # One unwrapped line a user can grep for, then the evidence (e.g. the controller's log tail).
            print(f"error: {exc.one_line()}", file=sys.stderr)
            if exc.details:
                print("\n".join("  | " + line for line in exc.details.splitlines()), file=sys.stderr)
            return exc.exit_code
        except KeyboardInterrupt:
            err.print(f"stopped by {stop.stopped_by()}: partial results written", markup=False)
            return stop.exit_code()
        except Exception as exc:  # noqa: BLE001 - anything else is netsleuth's bug, and says so
            return _internal_error(exc, args, debug)


if __name__ == "__main__":
    sys.exit(main())
