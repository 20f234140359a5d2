"""Command-line wiring of the root-causing tools (``netsleuth step``, ``viz``, ``pcap``, ...).

Each tool adds its subparser here with ``func`` set; netsleuth/cli.py lists
this module in COMMAND_MODULES. Only argument parsing and printing here; the
work is in the tool's own module.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from netsleuth.options import at_least, out_dir, out_file

if TYPE_CHECKING:  # pragma: no cover
    from netsleuth.trace.schema import Trace


def cmd_step(args: argparse.Namespace) -> int:
    from netsleuth.rootcause.step import run_step

    return run_step(args.trace, commands=args.commands, headless=args.headless, live_out=args.out,
                    controller=args.controller, ordering=args.ordering, openflow=args.openflow,
                    trust_trace_controller=args.trust_trace_controller)


def cmd_viz(args: argparse.Namespace) -> int:
    import json

    from netsleuth.console import out
    from netsleuth.rootcause.viz import viz

    d = viz(args.traces, args.html)
    if args.json:
        print(json.dumps(d, sort_keys=True))
        return 0
    lanes = ", ".join(f"{n}: {k} lanes" for n, k in d["lanes"].items())
    out.print(f"wrote {d['html']}: {d['columns']} columns ({lanes})", soft_wrap=True, markup=False, highlight=False)
    if len(args.traces) > 1:
        unmatched = ", ".join(f"{n} {k}" for n, k in d["unmatched"].items())
        out.print(f"aligned by fingerprint: {d['differences']} columns not in every trace, highlighted "
                  f"(events some other trace lacks: {unmatched})", soft_wrap=True, markup=False, highlight=False)
    return 0


# ---- pcap, diff, reduce, trace-packet -------------------------------------
def _print_lines(lines: list[str]) -> None:
    from netsleuth.console import print_lines

    print_lines(lines)


def _read(path: str) -> Trace:
    from netsleuth.trace.io import read_trace

    return read_trace(path)


def cmd_pcap(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from netsleuth.errors import NetsleuthError
    from netsleuth.rootcause.pcap import build_pcap

    export = build_pcap(_read(args.trace).events, dataplane=args.dataplane)
    try:
        Path(args.out).write_bytes(export.data)
    except OSError as exc:
        raise NetsleuthError(f"cannot write {args.out}: {exc.strerror or exc}",
                             "check that the directory exists and is writable") from None
    d = export.to_json() | {"pcap": str(args.out)}
    if args.json:
        print(json.dumps(d, sort_keys=True))
        return 0
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(export.messages.items(), key=lambda kv: -kv[1]))
    versions = " and ".join(sorted(export.versions)) or "1.0"
    lines = [f"wrote {args.out}: {export.frames} frames, {d['of_messages']} OpenFlow {versions} messages on "
             f"{export.streams} TCP streams to port 6653 ({kinds})"]
    if args.dataplane:
        lines.append(f"plus {export.packets} dataplane frames")
    lines += [f"warning: not exported: {s}" for s in export.skipped]
    dissectors = " || ".join({"1.0": "openflow_v1", "1.3": "openflow_v4"}.get(v, "openflow")
                             for v in sorted(export.versions)) or "openflow_v1"
    lines.append(f"read it with: tshark -r {args.out} -Y " + (f"'{dissectors}'" if " " in dissectors else dissectors))
    _print_lines(lines)
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    import json

    from netsleuth.rootcause.diff import diff_events

    d = diff_events(_read(args.a).events, _read(args.b).events, args.a, args.b)
    if args.json:
        print(json.dumps(d.to_json(), sort_keys=True))
    else:
        _print_lines(d.summary(limit=args.show))
    return 0 if d.identical else 1  # as diff(1): 1 means "they differ"


def cmd_reduce(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from netsleuth.rootcause.reduce import reduce_trace
    from netsleuth.trace.io import write_trace

    trace_path = Path(args.trace)
    r = reduce_trace(_read(args.trace), args.violation, at_end=args.end)
    out = Path(args.out) if args.out else trace_path.with_name(trace_path.stem + ".reduced.jsonl")
    write_trace(out, r.trace)
    d = r.to_json() | {"reduced_trace": str(out)}
    if args.json:
        print(json.dumps(d, sort_keys=True))
    else:
        _print_lines(r.summary() + [f"wrote {out} ({len(r.trace.events)} events: the kept flow_mods, "
                                    "the network's failures, moves and connections, the violation)"])
    return 0


def cmd_trace_packet(args: argparse.Namespace) -> int:
    import json

    from netsleuth.rootcause.trace_packet import trace_packet

    r = trace_packet(_read(args.trace), args.event)
    if args.json:
        print(json.dumps(r.to_json(), sort_keys=True))
    else:
        _print_lines(r.summary())
    return 0


def _add_rc_commands(sub: argparse._SubParsersAction) -> None:
    pc = sub.add_parser("pcap", help="export the control channel (and dataplane) as a pcap for Wireshark/tshark")
    pc.add_argument("trace", help="a netsleuth trace.jsonl")
    pc.add_argument("--out", required=True, type=out_file(), help="the pcap file to write")
    pc.add_argument("--dataplane", action="store_true", help="also export every recorded dataplane hop")
    pc.add_argument("--json", action="store_true", help="print the summary as JSON")
    pc.set_defaults(func=cmd_pcap)

    df = sub.add_parser("diff", help="events in one trace and not the other, by fingerprint (exit 1 if any)")
    df.add_argument("a", help="trace A")
    df.add_argument("b", help="trace B")
    df.add_argument("--json", action="store_true", help="print JSON (keys only_in_a, only_in_b, common, ...)")
    df.add_argument("--show", type=at_least(0), default=50, help="differences to print per side (default 50)")
    df.set_defaults(func=cmd_diff)

    rd = sub.add_parser("reduce", help="keep only the flow_mods that explain the flow tables at the violation")
    rd.add_argument("trace", help="a netsleuth trace.jsonl")
    rd.add_argument("--violation", type=int, default=None,
                    help="which persistent violation (0: the first, the default; -1: the last)")
    rd.add_argument("--end", action="store_true", help="the tables at the end of the trace instead")
    rd.add_argument("--out", type=out_file(),
                    help="the reduced trace to write (default: TRACE.reduced.jsonl beside it)")
    rd.add_argument("--json", action="store_true", help="print JSON (keys kept, dropped, tables, ...)")
    rd.set_defaults(func=cmd_reduce)

    tp = sub.add_parser("trace-packet", help="follow one injected packet hop by hop")
    tp.add_argument("trace", help="a netsleuth trace.jsonl (recorded with packet events)")
    tp.add_argument("event", help="the traffic input: its id (i7) or its seq")
    tp.add_argument("--json", action="store_true", help="print JSON (keys outcome, why, hops, ...)")
    tp.set_defaults(func=cmd_trace_packet)


def add_commands(sub: argparse._SubParsersAction) -> None:
    _add_rc_commands(sub)
    vz = sub.add_parser("viz", help="draw traces as a space-time (Lamport) diagram in a self-contained HTML page")
    vz.add_argument("traces", nargs="+", help="one or more netsleuth trace.jsonl (several: aligned, differences "
                                              "highlighted)")
    vz.add_argument("--html", required=True, type=out_file("--html"), help="the HTML file to write")
    vz.add_argument("--json", action="store_true", help="print the summary as JSON")
    vz.set_defaults(func=cmd_viz)

    st = sub.add_parser("step", help="step through a trace one event at a time (interactive, or --commands FILE)")
    st.add_argument("trace", help="a netsleuth trace.jsonl, or a DEFINED run (netsleuth defined run --out)")
    st.add_argument("--headless", action="store_true",
                    help="send the recorded OpenFlow commands to the switches, no controller; without it a "
                         "fresh controller is started and each step injects the trace's next input")
    st.add_argument("--commands", help="run the commands of this file (one per line) instead of a prompt")
    st.add_argument("--controller", action="append", help="override the trace's controller spec (live mode)")
    st.add_argument("--openflow", choices=["auto", "1.0", "1.3"],
                    help="live mode: OpenFlow versions the switches offer (default: what the trace's switches "
                         "negotiated)")
    st.add_argument("--trust-trace-controller", action="store_true",
                    help="live mode: run the controller the trace's header names even when it is a cmd: command")
    st.add_argument("--out", type=out_dir(),
                    help="directory for the live run's trace and controller log (default: a new temporary directory)")
    st.add_argument("--ordering", help="DEFINED runs: the ordering function to step with (default: the run's)")
    st.set_defaults(func=cmd_step)
