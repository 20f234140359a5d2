"""Command-line wiring of ``netsleuth campaign``: flags over the campaign file, a live table, the summary.

netsleuth/cli.py lists this module in COMMAND_MODULES.  Only parsing and
printing here; the campaign itself is campaign/runner.py.  While it runs, a
rich table on stderr (a terminal only) shows jobs done, running and failed,
jobs per minute and the bug buckets so far.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from netsleuth.options import at_least, out_dir, seconds


def _spec(args: argparse.Namespace) -> Any:
    """The campaign file (if any) with every given flag laid over it."""
    from netsleuth.campaign.spec import CampaignSpec, load_campaign_file, parse_rate_set, parse_seeds

    spec = load_campaign_file(args.file) if args.file else CampaignSpec()
    if args.controller:
        spec.controllers = list(args.controller)
    if args.topo:
        spec.topologies = list(args.topo)
    if args.rate_set:
        spec.rate_sets = dict(parse_rate_set(t) for t in args.rate_set)
    if args.seeds is not None:
        spec.seeds = parse_seeds(args.seeds)
    for name in ("steps", "checks", "persist", "round_seconds", "budget_runs", "budget_seconds", "job_timeout",
                 "executor", "jobs", "address", "minimize_budget", "buffer_packets", "table_size", "warmup"):
        value = getattr(args, name)
        if value is not None:
            setattr(spec, name, value)
    if args.no_minimize:
        spec.minimize = False
    if args.localize is not None:
        spec.localize = args.localize
    if args.check_every_flowmod:
        spec.check_every_flowmod = True
    return spec


def _table(status: Any) -> Any:
    from rich.table import Table

    t = Table(title=f"netsleuth campaign: {status.phase}", show_header=False)
    t.add_row("jobs", f"{status.done + status.skipped} of {status.total} done"
              + (f" ({status.skipped} by an earlier run)" if status.skipped else "")
              + f", {status.running} running, {status.failed} failed")
    t.add_row("jobs per minute", f"{status.per_minute():.1f}")
    t.add_row("workers", status.workers or "-")
    if status.nodes:
        t.add_row("jobs per node", ", ".join(f"{n}: {c}" for n, c in sorted(status.nodes.items())))
    t.add_row("buckets", str(len(status.buckets)))
    for b in sorted(status.buckets.values(), key=lambda b: -b["count"])[:6]:
        t.add_row(f"  {b['count']} run(s)", b["text"])
    return t


def cmd_campaign(args: argparse.Namespace) -> int:
    import json

    from rich.live import Live

    from netsleuth.campaign.runner import run_campaign
    from netsleuth.console import err, out
    from netsleuth.live import stop

    spec = _spec(args)
    spec.check()
    with Live(console=err, transient=True, refresh_per_second=2, auto_refresh=err.is_terminal) as live:
        def show(status: Any) -> None:
            if err.is_terminal:
                live.update(_table(status))

        d = run_campaign(spec, Path(args.out), show)
    if args.json:
        print(json.dumps(d, sort_keys=True))
    else:
        print_summary(d, out, args.out)
    if not d["completed"]:
        err.print(f"stopped by {d.get('stopped_by', 'SIGINT')}: the partial report is written", markup=False)
        return stop.exit_code()
    return 1 if d["buckets"] else 0


def print_summary(d: dict[str, Any], out: Any, where: str) -> None:
    """The human summary of campaign.json's data ``d`` on the rich console ``out``: the runs, then each bucket
    with its MCS, whether a replay of it reproduced, and its top lines."""
    from rich.table import Table

    table = Table(title=f"netsleuth campaign into {where}", show_header=False)
    table.add_row("runs", f"{d['recorded']} of {d['planned']} ({d['finished']} finished, {d['failed']} failed), "
                          f"{d['with_bug']} with a persistent violation")
    table.add_row("buckets", str(len(d["buckets"])))
    table.add_row("report", d["report"]["html"])
    out.print(table)
    for i, b in enumerate(d["buckets"], 1):
        out.print(f"[bold]{i}.[/bold] {b['count']} run(s), first seed {b['first_seed']}: ", end="")
        out.print(b["signature"]["text"], markup=False, highlight=False, soft_wrap=True)
        m = b.get("minimized") or {}
        for w in m.get("mcs_in_words") or []:
            out.print(f"     {w}", markup=False, highlight=False, soft_wrap=True)
        if m.get("confirmed") is not None:
            out.print(f"     MCS replay {'reproduces' if m['confirmed'] else 'does NOT reproduce'} the violation")
        _print_top_lines(out, b)
    for f in d["failures"][:5]:
        out.print(f"[red]failed[/red] seed {f['seed']} {f['topo']}: ", end="")
        out.print(str(f["error"]), markup=False, highlight=False, soft_wrap=True)
    for node, n in d.get("nodes", {}).items():
        if n["error"]:
            out.print(f"[yellow]node[/yellow] {node} ({n['jobs_done']} jobs done, {n['jobs_lost']} lost): ", end="")
            out.print(n["error"], markup=False, highlight=False, soft_wrap=True)


def _print_top_lines(out: Any, bucket: dict[str, Any]) -> None:
    """The bucket's top lines under its MCS, and the bucket it likely shares a bug with."""
    from netsleuth.campaign.localized import top_line_texts

    loc = (bucket.get("minimized") or {}).get("localize")
    if not loc:
        return
    out.print(f"     top lines ({loc.get('spectrum') or 'replays'}, {loc.get('formula') or 'ochiai'}):")
    for text in top_line_texts(loc):
        out.print(f"       {text}", markup=False, highlight=False, soft_wrap=True)
    if bucket.get("same_top_lines_as"):
        out.print(f"     [yellow]same top lines as bucket {bucket['same_top_lines_as']}: likely the same bug[/yellow]")


def add_commands(sub: Any) -> None:
    c = sub.add_parser("campaign", help="many fuzz runs in parallel (processes or Ray), grouped into distinct "
                                        "bugs, each minimized")
    c.add_argument("file", nargs="?", help="campaign file (TOML); every field is also a flag, which wins")
    c.add_argument("--out", required=True, type=out_dir(),
                   help="directory for campaign.sqlite (the resumable state), runs/, buckets/, report.html")
    c.add_argument("--controller", action="append", help="a controller spec (repeat for several)")
    c.add_argument("--pox", metavar="DIR", help="the POX checkout pox: controllers run from ($NETSLEUTH_POX)")
    c.add_argument("--topo", action="append", help="a topology (repeat for several)")
    c.add_argument("--rate-set", action="append", metavar="NAME:KIND=P,...",
                   help="a named set of fuzz rates over fuzz's defaults (repeat for several)")
    c.add_argument("--seeds", help="first-last (1-100), or one seed")
    c.add_argument("--steps", type=at_least(1), help="rounds per run (default 100)")
    c.add_argument("--check", dest="checks", help="comma-separated invariants (default: fuzz's)")
    c.add_argument("--persist", type=at_least(1), help="rounds a violation must last (default 3)")
    c.add_argument("--round-seconds", type=seconds(), help="seconds per round (default 0.1)")
    c.add_argument("--buffer-packets", type=at_least(0), metavar="N",
                   help="switches buffer every PACKET_IN, up to N at once (as fuzz's; default 0: off)")
    c.add_argument("--table-size", type=at_least(0), metavar="N",
                   help="switches refuse an ADD past N entries per table (as fuzz's; default 0: no limit)")
    c.add_argument("--warmup", metavar="SECONDS|auto[:SECONDS]",
                   help="each run's warm-up after the handshakes (as fuzz's; default 0)")
    c.add_argument("--budget-runs", type=at_least(1), help="run at most this many jobs")
    c.add_argument("--budget-seconds", type=seconds(), help="start no job after this many seconds (over restarts)")
    c.add_argument("--job-timeout", type=seconds(), help="seconds one run may take (default 300); then it fails")
    c.add_argument("--executor", choices=["local", "ray"], help="local processes (default) or a Ray cluster")
    c.add_argument("--jobs", type=at_least(1),
                   help="parallel runs (default: CPU count, or the Ray cluster's free controller slots)")
    c.add_argument("--address", help="Ray cluster address (auto, HOST:6379, ray://HEAD:10001); "
                                     "default: a local Ray instance")
    c.add_argument("--no-minimize", action="store_true", help="bucket the findings but do not minimize them")
    c.add_argument("--minimize-budget", type=seconds(), help="seconds per bucket's minimization (default 300)")
    c.add_argument("--localize", action=argparse.BooleanOptionalAction, default=None,
                   help="after minimizing a bucket, rank the controller's source lines for it (as `netsleuth "
                        "localize` does: a replay of the MCS and of the MCS without each input, with the lines "
                        "measured; per handler call for os-ken, Faucet and POX) and name the top lines "
                        "(file:line, score, function) in the summary and report, marking buckets whose top lines "
                        "are the same as likely one bug. On by default: it costs about two replays per MCS input, "
                        "a fraction of the minimization; --no-localize skips it. Python controllers only")
    c.add_argument("--check-every-flowmod", action="store_true",
                   help="each run checks after every FLOW_MOD and names the message behind each violation "
                        "(see netsleuth fuzz --help); the same violations are found")
    c.add_argument("--json", action="store_true", help="print campaign.json's data instead of the summary")
    c.set_defaults(func=cmd_campaign)


__all__ = ["add_commands"]
