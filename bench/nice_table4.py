"""NICE Table 4: transitions / seconds to the first violation of BUG-I..XIII, per strategy, +-DPOR.

For BUG-I (host unreachable after moving: scenario ``mobile``, NoBlackHolesMobile),
BUG-II (delayed direct path: ``direct``, StrictDirectPaths) and BUG-III (loops on a
triangle: ``loop``, NoForwardingLoops) in pyswitch, BUG-IV..IX in the load balancer
and BUG-X..XIII in the energy-efficient TE app (scenarios ``bug-iv`` ..., see
netsleuth/nice/bug_scenarios.py), this searches the buggy variant with each of NICE's
columns -- Only PKT-SEQ, NO-DELAY, FLOW-IR, UNUSUAL (each with PKT-SEQ, burst 1,
as in the paper) -- without and with DPOR, stopping at the first violation of the
bug's property, and prints "transitions/seconds" (or "Missed" when the search
completes without one, "budget" when it hits ``--budget`` transitions).  It also
checks the fixed variant under full PKT-SEQ search (expected: no violation) and
writes ``bench/results/nice_table4.json``.  A second table answers NICE's Fig. 7:
unique states under NO-DELAY, UNUSUAL and FLOW-IR relative to full search for
the Table 1 setup (NICE: about 10x and 5x smaller beyond two pings; FLOW-IR
cannot help with two hosts, since all of pyswitch's packets are one flow).

    .venv/bin/python bench/nice_table4.py [--budget 2000000] [--json]

A further table gives, for the same runs, the unique states of each search
without and with DPOR: DPOR's persistent sets (netsleuth/nice/stubborn.py)
prune states under Only PKT-SEQ; under NO-DELAY and UNUSUAL DPOR is not
applied, under FLOW-IR and for NoBlackHolesMobile (BUG-I) only sleep sets are
(fewer transitions, the same states).

``--json`` prints ``{"bugs": [{"bug": "I", "found": true, "fixed_variant_clean": true, ...}, ...]}``.

NICE's numbers are printed under each row (``NICE`` below).  Counts differ because the models differ
(see bench/nice_table1.py) and because "first" depends on the DFS order of each implementation.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "bench" / "results" / "nice_table4.json"
# (bug, buggy app, fixed app, scenario, property violated)
BUGS = (("I", "pyswitch", "pyswitch-fixed", "mobile", "NoBlackHolesMobile"),
        ("II", "pyswitch", "pyswitch-fixed", "direct", "StrictDirectPaths"),
        ("III", "pyswitch", "pyswitch-fixed", "loop", "NoForwardingLoops"),
        *((b, f"loadbalancer-bug-{b.lower()}", "loadbalancer", f"bug-{b.lower()}",
           "FlowAffinity" if b == "IX" else "NoForgottenPackets") for b in ("IV", "V", "VI", "VII", "VIII", "IX")),
        *((b, f"energy-te-bug-{b.lower()}", "energy-te", f"bug-{b.lower()}",
           "UseCorrectRoutingTable" if b == "XII" else "NoForgottenPackets") for b in ("X", "XI", "XII", "XIII")))
COLUMNS = (("Only PKT-SEQ", "pkt-seq"), ("NO-DELAY", "pkt-seq+no-delay"), ("FLOW-IR", "pkt-seq+flow-ir"),
           ("UNUSUAL", "pkt-seq+unusual"))
# NICE's Table 4 (transitions/seconds; "m" minutes), per bug: the eight columns in order.
NICE = {
    "I": ["2149/8.3", "1631/7.14", "418/1.6", "355/1.34", "2149/8.55", "1631/7.61", "994/3.88", "819/3.17"],
    "II": ["540/1.65", "415/1.18", "187/0.62", "156/0.4", "540/1.70", "415/1.21", "241/0.8", "179/0.45"],
    "III": ["23/0.22", "23/0.16", "17/0.2", "17/0.16", "23/0.21", "23/0.16", "24/0.2", "24/0.18"],
    "IV": ["49/0.61", "49/0.36", "49/0.58", "49/0.32", "49/0.53", "49/0.47", "30/0.36", "30/0.26"],
    "V": ["52/0.59", "52/0.33", "52/0.53", "52/0.37", "52/0.59", "52/0.38", "33/0.5", "33/0.33"],
    "VI": ["738/6.65", "312/2.25", "1977/15.35", "361/1.8", "778/10.0", "306/2.31", "139/1.47", "208/1.24"],
    "VII": ["12k/93.14", "1782/13.26", "Missed", "Missed", "481/4.0", "385/2.28", "112/1.5", "49/0.38"],
    "VIII": ["1274/12.12", "245/3.74", "1237/10.31", "265/1.33", "1134/11.22", "278/2.15", "709/6.81", "200/1.54"],
    "IX": ["432.7k/66m", "33.7k/324", "33.5k/213", "15.6k/111", "Missed", "Missed", "53.5k/478", "13.4k/138"],
    "X": ["22/0.31", "22/0.19", "22/0.24", "22/0.21", "22/0.24", "22/0.21", "22/0.24", "22/0.19"],
    "XI": ["97/0.97", "53/0.63", "Missed", "Missed", "97/0.98", "53/0.61", "24/0.25", "24/0.2"],
    "XII": ["19/0.27", "19/0.21", "17/0.22", "18/0.17", "19/0.23", "19/0.21", "19/0.25", "19/0.19"],
    "XIII": ["3126/24.86", "697/6.59", "Missed", "Missed", "2287/18.54", "617/5.59", "1225/11.24", "589/4.86"],
}


def first_violation(app: str, scenario: str, prop: str, strategy: str, dpor: bool, budget: int) -> dict:
    from netsleuth.nice.job import CheckOptions, check

    d = check(CheckOptions(app=app, scenario=scenario, strategy=strategy, dpor=dpor, max_transitions=budget,
                           properties=(prop,)))
    hit = next((v for v in d["violations"] if v["property"] == prop), None)
    cell = (f"{hit['transitions_to_find']}/{hit['seconds_to_find']}" if hit
            else ("Missed" if d["completed"] else "budget"))
    return {"app": app, "scenario": scenario, "property": prop, "strategy": strategy, "dpor": dpor,
            "cell": cell, "found": hit is not None, "transitions_to_find": hit and hit["transitions_to_find"],
            "seconds_to_find": hit and hit["seconds_to_find"], "search_transitions": d["transitions"],
            "search_states": d["unique_states"], "completed": d["completed"], "dpor_note": d.get("dpor_note", "")}


def dpor_states_table(rows: list[dict]) -> Any:
    """Unique states of the search behind each cell, without -> with DPOR (same runs, no new search).

    Each search runs until the bug's property is violated and then on to the end of
    the (bounded) space, so where both complete the counts compare whole searches.
    ``*``: persistent sets not applied (NO-DELAY, UNUSUAL: no DPOR at all; FLOW-IR and
    NoBlackHolesMobile: sleep sets only, which never prune a state).
    """
    from rich.table import Table

    table = Table(title="Unique states of each complete search: no DPOR -> DPOR (* = persistent sets not applied)")
    table.add_column("bug")
    for name, _ in COLUMNS:
        table.add_column(name, justify="right")
    cells: dict[tuple[str, str], dict[bool, dict]] = {}
    for r in rows:
        if "dpor" in r and r["app"] not in ("pyswitch-fixed", "loadbalancer", "energy-te"):
            cells.setdefault((r["bug"], r["strategy"]), {})[r["dpor"]] = r
    for bug, *_ in BUGS:
        out = []
        for _, strategy in COLUMNS:
            pair = cells.get((bug, strategy), {})
            a, b = pair.get(False), pair.get(True)
            if a is None or b is None:
                out.append("")
                continue
            mark = "*" if b["dpor_note"] else ""
            done = "" if a["completed"] and b["completed"] else " (budget)"
            out.append(f"{a['search_states']:,} -> {b['search_states']:,}{mark}{done}")
        table.add_row(f"BUG-{bug}", *out)
    return table


def fig7(pings: list[int]) -> list[dict]:
    """NICE Fig. 7's question: how much smaller is the Table 1 search under each heuristic?"""
    from rich.console import Console
    from rich.table import Table

    from netsleuth.nice.job import CheckOptions, check

    out = []
    table = Table(title="State-space reduction vs full DFS (pyswitch, Table 1 setup; NICE Fig. 7)")
    for col in ("pings", "strategy", "transitions", "unique states", "unique / full"):
        table.add_column(col, justify="right")
    for n in pings:
        base = None
        for strategy in ("full", "no-delay", "unusual", "flow-ir"):
            d = check(CheckOptions(app="pyswitch", scenario="pings", pings=n, strategy=strategy))
            base = base or d["unique_states"]
            row = {"pings": n, "strategy": strategy, "transitions": d["transitions"],
                   "unique_states": d["unique_states"], "ratio": round(d["unique_states"] / base, 3)}
            out.append(row)
            table.add_row(str(n), strategy, f"{d['transitions']:,}", f"{d['unique_states']:,}", f"{row['ratio']}")
    Console(width=160).print(table)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=2_000_000, help="transitions per search at most")
    ap.add_argument("--fig7-pings", type=int, nargs="*", default=[2, 3, 4],
                    help="ping counts for the state-space reduction table (none to skip)")
    ap.add_argument("--json", action="store_true", help='print {"bugs": [...]} (one object per bug) on stdout')
    args = ap.parse_args()
    from rich.console import Console
    from rich.table import Table

    rows = []
    table = Table(title="NICE Table 4: transitions/seconds to the first violation")
    table.add_column("bug")
    for name, _ in COLUMNS:
        table.add_column(f"{name}\nno DPOR", justify="right")
        table.add_column(f"{name}\nDPOR", justify="right")
    table.add_column("fixed variant (PKT-SEQ, full search)")
    bugs = []
    for bug, app, fixed_app, scenario, prop in BUGS:
        cells, found = [], []
        for _, strategy in COLUMNS:
            for dpor in (False, True):
                r = first_violation(app, scenario, prop, strategy, dpor, args.budget)
                r["bug"] = bug
                rows.append(r)
                cells.append(r["cell"])
                found.append(r["found"])
                print(json.dumps(r), file=sys.stderr, flush=True)
        # The fixed variant under the strongest of these searches: PKT-SEQ alone, no DPOR, to completion.
        fixed = first_violation(fixed_app, scenario, prop, "pkt-seq", False, args.budget)
        fixed["bug"] = bug
        rows.append(fixed)
        clean = fixed["completed"] and not fixed["found"]
        fixed_cell = (f"no violation (complete, {fixed['search_transitions']:,} transitions)" if clean
                      else fixed["cell"])
        table.add_row(f"BUG-{bug}", *cells, fixed_cell)
        if bug in NICE:
            table.add_row("  NICE", *NICE[bug], "")
        bugs.append({"bug": bug, "app": app, "scenario": scenario, "property": prop, "found": any(found),
                     "found_by": [f"{name}{' +DPOR' if dpor else ''}" for (name, _), dpor, hit in
                                  zip([c for c in COLUMNS for _ in (0, 1)], [False, True] * len(COLUMNS), found,
                                      strict=True)
                                  if hit],
                     "cells": dict(zip([f"{name}{' +DPOR' if d else ''}" for name, _ in COLUMNS for d in (0, 1)],
                                       cells, strict=True)),
                     "fixed_variant_clean": clean, "fixed_search_transitions": fixed["search_transitions"]})
    Console(width=220, stderr=args.json).print(table)
    Console(width=220, stderr=args.json).print(dpor_states_table(rows))
    reduction = fig7(args.fig7_pings) if not args.json else []
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"benchmark": "nice_table4", "python": platform.python_version(),
                                   "cpus": os.cpu_count(), "when": time.strftime("%Y-%m-%d"),
                                   "budget": args.budget, "rows": rows, "nice": NICE,
                                   "bugs": bugs, "fig7": reduction}, indent=2) + "\n")
    if args.json:
        print(json.dumps({"bugs": bugs}))
    else:
        print(f"wrote {RESULTS}")
    return 0 if all(b["found"] and b["fixed_variant_clean"] for b in bugs) else 1


if __name__ == "__main__":
    sys.exit(main())
