"""`netsleuth localize MINIMIZE_OUT`, and the terminal view of a ranking (also printed by `minimize --localize`).

Argument parsing and output only; the work is jobs/localize.py's.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.markup import escape

from netsleuth.console import err, out, progress_bar
from netsleuth.localize.spectrum import FORMULAS
from netsleuth.options import at_least


def print_localization(loc: dict[str, Any]) -> None:
    """The top lines, grouped by function: ``file:line  score  failing/passing  source``."""
    if loc.get("note"):
        out.print(f"localization: {loc['note']}", markup=False, highlight=False, soft_wrap=True)
        return
    added = f", {loc['added_replays']} added" if loc.get("added_replays") else ""
    unit = "handler calls" if loc.get("spectrum") == "handler calls" else "replays"
    if loc.get("spectrum") == "exception slice":
        out.print(f"suspicious lines (no spectrum ranks this exception: {loc['failing']} failing / {loc['passing']} "
                  f"passing {unit}{added}; the line that raised, then what it depended on; {loc['scope']}):",
                  markup=False, highlight=False)
    else:
        out.print(f"suspicious lines ({loc['formula']}, {loc['failing']} failing / {loc['passing']} passing "
                  f"{unit}{added}; {loc['scope']}):", markup=False, highlight=False)
    for key in ("message", "framework_note"):
        if loc.get(key):
            out.print(f"  [yellow]{escape(loc[key])}[/yellow]", soft_wrap=True)
    if loc.get("separable") is False:
        return   # the message says why there is no ranking; listing lines would look like one
    if not loc.get("top"):
        out.print("  no line of the controller's own code ran in a failing replay"
                  + ("" if loc.get("scope", "").startswith("all") else " (try --all-code)"), markup=False)
        return
    by_line = {(i["short"], i["line"]): i for i in loc["top"]}
    for g in loc["groups"]:
        out.print(f"  [bold]{escape(g['function'])}[/bold] [dim]({escape(g['file'])})[/dim]")
        for n in g["lines"]:
            i = by_line[(g["file"], n)]
            where = f"{g['file']}:{n}"
            out.print(f"    #{i['rank']:<3} {escape(where):<40} {i['score']!s:>8}  "
                      f"{i['failing']}/{i['passing']:<4} {escape(i['source'])}", soft_wrap=True, highlight=False)
            if i.get("read_at"):
                r = i["read_at"]
                out.print(f"         [dim]stored the value an earlier call left and a later one read at "
                          f"{escape(r['short'])}:{r['line']} ({escape(r['source'])}); counts: those reads[/dim]",
                          soft_wrap=True, highlight=False)


def print_mcs(d: dict[str, Any]) -> None:
    """`minimize`'s MCS in words, then the suspicious lines when it ran with --localize."""
    out.print("minimal causal sequence:")
    for line in d["mcs_in_words"]:
        out.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)
    if d.get("localize"):
        print_localization(d["localize"])


def localize_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """MinimizeOptions' fields for the --localize options (added to `minimize` by :func:`add_commands`)."""
    return {"localize": args.localize, "formula": args.formula, "all_code": args.all_code, "top": args.top,
            "spectrum": args.spectrum}


def cmd_localize(args: argparse.Namespace) -> int:
    from netsleuth.jobs.localize import LocalizeOptions, localize

    opts = LocalizeOptions(Path(args.minimize_out), formula=args.formula, all_code=args.all_code, top=args.top,
                           spectrum=args.spectrum, extra_replays=not args.no_extra_replays, controller=args.controller,
                           trust_trace_controller=args.trust_trace_controller)
    with progress_bar() as p:
        task = p.add_task("localizing", total=None)
        loc = localize(opts, lambda text: p.update(task, description=text))
    print_localization(loc)
    err.print(f"written: {Path(args.minimize_out) / 'localize.json'}, and the ranking in its result.json and "
              "report.html", markup=False, highlight=False, soft_wrap=True)
    return 0


def add_localize_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--formula", choices=FORMULAS, default="ochiai",
                   help="suspiciousness formula: ochiai (default), dstar (DStar, *=2) or tarantula")
    p.add_argument("--all-code", action="store_true",
                   help="rank the framework's lines too (os-ken, POX core), not only the controller's own code")
    p.add_argument("--top", type=at_least(1), default=10, help="how many lines to report (default 10)")
    p.add_argument("--spectrum", choices=("auto", "windows", "replays"), default="auto",
                   help="what one run of the spectrum is: 'windows' one call of an os-ken or POX event handler (the "
                        "call that sent the violation's rule fails, the others pass), 'replays' one whole "
                        "replay; 'auto' (default) uses windows when the controller recorded them")


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``localize``; and the options that measure coverage on ``minimize`` and ``replay`` (defined before)."""
    mn, rp = sub.choices["minimize"], sub.choices["replay"]
    mn.add_argument("--localize", action="store_true",
                    help="measure the (Python) controller's lines in every replay and rank the suspicious ones")
    add_localize_options(mn)
    rp.add_argument("--coverage", action="store_true",
                    help="keep the (Python) controller's executed lines with each replay's verdict (coverage.json)")
    p = sub.add_parser("localize", help="rank the controller's source lines by how they separate the failing "
                                        "from the passing replays of a minimization (needs a Python controller)")
    p.add_argument("minimize_out", help="the --out folder of `netsleuth minimize`")
    add_localize_options(p)
    p.add_argument("--no-extra-replays", action="store_true",
                   help="rank only the replays on disk, even when they are too few to separate lines")
    p.add_argument("--controller", action="append", help="override the trace's controller spec")
    p.add_argument("--trust-trace-controller", action="store_true",
                   help="run the controller the trace's header names even when it is a cmd: command")
    p.set_defaults(func=cmd_localize)
