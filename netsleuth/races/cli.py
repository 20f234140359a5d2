"""Command-line wiring of race detection and clustering (``netsleuth races``, ``netsleuth cluster``).

netsleuth/cli.py calls :func:`add_races` and :func:`add_cluster` where the two commands stand in its
list. Only argument parsing and printing here; the work is in :mod:`netsleuth.races.job` and
:mod:`netsleuth.races.cluster_job`.
"""

from __future__ import annotations

import argparse
from typing import Any

from rich.table import Table

from netsleuth.console import out
from netsleuth.options import at_least, out_file, seconds


def add_races(sub: Any) -> None:
    rc = sub.add_parser("races", help="happens-before race detection (SDNRacer) on a trace or an SDNRacer hb.json")
    rc.add_argument("trace", help="SDNRacer hb.json (or a netsleuth trace.jsonl)")
    rc.add_argument("--delta", type=seconds(allow_zero=True), default=2.0,
                    help="seconds apart beyond which races are time-filtered")
    rc.add_argument("--no-time-filter", action="store_true", help="keep races however far apart in time")
    rc.add_argument("--data-deps", action="store_true", help="order races covered by read-after-write dependencies")
    rc.add_argument("--all", action="store_true", help="list every race, not only the harmful ones")
    rc.add_argument("--show", type=at_least(0), default=10, help="races to print (default 10)")
    rc.add_argument("--json", action="store_true", help="print JSON (keys races, commuting, harmful, race_list)")
    rc.set_defaults(func=cmd_races)


def add_cluster(sub: Any) -> None:
    cl = sub.add_parser("cluster", help="cluster harmful races into root causes (BigBug) and rank representatives")
    cl.add_argument("trace", help="SDNRacer hb.json or a netsleuth trace.jsonl")
    cl.add_argument("--delta", type=seconds(allow_zero=True), default=2.0,
                    help="race time filter in seconds (default 2)")
    cl.add_argument("--json", action="store_true", help="print JSON (keys clusters, seconds, ...)")
    cl.add_argument("--html", type=out_file("--html"), help="write the representative subgraphs to this HTML file")
    cl.set_defaults(func=cmd_cluster)


def cmd_races(args: argparse.Namespace) -> int:
    import json

    from netsleuth.races.job import detect_races

    report = detect_races(args.trace, delta=args.delta, time_edges=not args.no_time_filter,
                          data_deps=args.data_deps)
    d = report.to_json(detail="all" if args.all else "harmful")
    if args.json:
        print(json.dumps(d, sort_keys=True))
        return 0
    if not d["races"]:
        out.print(f"no races in {args.trace}: {d['events']} events, {d['read']} flow-table reads and "
                  f"{d['writes']} writes, none of them unordered on one switch", soft_wrap=True, markup=False)
        return 0
    out.print(f"races in {args.trace}", soft_wrap=True, markup=False)
    table = Table(show_header=False)
    for key in ("events", "read", "writes", "races", "commuting", "time_filtered_races", "covered", "harmful"):
        table.add_row(key.replace("_", " "), str(d[key]))
    table.add_row("seconds", f"{sum(d['seconds'].values()):.2f}")
    out.print(table)
    for r in d.get("race_list", [])[: args.show]:
        out.print(_race_words(r), markup=False, highlight=False, soft_wrap=True)
    if len(d.get("race_list", [])) > args.show:
        out.print(f"... {len(d['race_list']) - args.show} more (use --json for all)")
    return 0


def _race_words(r: dict) -> str:
    """One race in plain words: which switch, which two operations."""
    parts = []
    for e in r.get("events", []):
        if "target" in e:   # OpenFlow 1.3: the event in words, and which table, group or meter it touched
            what = e.get("text") or e.get("flow_mod") or e.get("flow_entry") or e.get("msg_type", "?")
            parts.append(f"{what} ({'reads' if e.get('op') == 'read' else 'writes'} {e['target']}, event {e['eid']})")
            continue
        if e.get("op") == "read":
            hit = e.get("flow_entry") or "no entry (table miss)"
            parts.append(f"packet {e.get('packet', '?')} in port {e.get('in_port', '?')} matched {hit} "
                         f"(event {e['eid']})")
        else:
            parts.append(f"{e.get('flow_mod') or e.get('msg_type', 'write')} (event {e['eid']})")
    return f"{r.get('status', '')} {r.get('type', '')} race on switch {r.get('dpid', '?')}: " + "  vs  ".join(parts)


def cmd_cluster(args: argparse.Namespace) -> int:
    import json

    from netsleuth.races.cluster_job import cluster_races, render_html

    report = cluster_races(args.trace, delta=args.delta)
    d = report.to_json()
    if args.html:
        render_html(report, args.html)
    if args.json:
        print(json.dumps(d, sort_keys=True))
        return 0
    out.print(f"{args.trace}: {d['races']} harmful races -> {d['iso_clusters']} isomorphism classes -> "
              f"{d['final_clusters']} clusters in {d['seconds']:.2f} s", soft_wrap=True, markup=False)
    for i, c in enumerate(d["clusters"], 1):
        feats = ", ".join(c["common_features"]) or "no common boolean feature"
        out.print(f"[bold]cluster {i}[/bold]: {c['size']} races ({feats})")
        rep = c["representative"]
        out.print(f"  representative: {rep['text']}", markup=False, highlight=False, soft_wrap=True)
        for root in rep.get("roots", [])[:5]:
            out.print(f"    root: {root}", markup=False, highlight=False, soft_wrap=True)
    if args.html:
        out.print(f"representative subgraphs drawn in {args.html}")
    return 0
