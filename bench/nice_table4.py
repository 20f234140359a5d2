"""NICE Table 4 for pyswitch: transitions / seconds to the first violation, per strategy, +-DPOR.

For BUG-I (host unreachable after moving: scenario ``mobile``, NoBlackHolesMobile),
BUG-II (delayed direct path: ``direct``, StrictDirectPaths) and BUG-III (loops on a
triangle: ``loop``, NoForwardingLoops) this searches pyswitch with each of NICE's
columns -- Only PKT-SEQ, NO-DELAY, FLOW-IR, UNUSUAL (each with PKT-SEQ, burst 1,
as in the paper) -- without and with DPOR, stopping at the first violation of the
bug's property, and prints "transitions/seconds" (or "Missed" when the search
completes without one, "budget" when it hits ``--budget`` transitions).  It also
checks the fixed variant under full PKT-SEQ search (expected: no violation) and
writes ``bench/results/nice_table4.json``.  A second table answers NICE's Fig. 7:
unique states under NO-DELAY, UNUSUAL and FLOW-IR relative to full search for
the Table 1 setup (NICE: about 10x and 5x smaller beyond two pings; FLOW-IR
cannot help with two hosts, since all of pyswitch's packets are one flow).

    .venv/bin/python bench/nice_table4.py [--budget 2000000]

NICE's numbers for these rows (transitions/seconds): BUG-I 2149/8.3, 1631/7.14 |
418/1.6, 355/1.34 | 2149/8.55, 1631/7.61 | 994/3.88, 819/3.17; BUG-II 540/1.65,
415/1.18 | 187/0.62, 156/0.4 | 540/1.70, 415/1.21 | 241/0.8, 179/0.45; BUG-III
23/0.22, 23/0.16 | 17/0.2, 17/0.16 | 23/0.21, 23/0.16 | 24/0.2, 24/0.18.
Counts differ because the models differ (see bench/nice_table1.py) and because
"first" depends on the DFS order of each implementation.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "bench" / "results" / "nice_table4.json"
BUGS = (("I", "mobile", "NoBlackHolesMobile"), ("II", "direct", "StrictDirectPaths"),
        ("III", "loop", "NoForwardingLoops"))
COLUMNS = (("Only PKT-SEQ", "pkt-seq"), ("NO-DELAY", "pkt-seq+no-delay"), ("FLOW-IR", "pkt-seq+flow-ir"),
           ("UNUSUAL", "pkt-seq+unusual"))
NICE = {"I": ["2149/8.3", "1631/7.14", "418/1.6", "355/1.34", "2149/8.55", "1631/7.61", "994/3.88", "819/3.17"],
        "II": ["540/1.65", "415/1.18", "187/0.62", "156/0.4", "540/1.70", "415/1.21", "241/0.8", "179/0.45"],
        "III": ["23/0.22", "23/0.16", "17/0.2", "17/0.16", "23/0.21", "23/0.16", "24/0.2", "24/0.18"]}


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
            "search_states": d["unique_states"], "completed": d["completed"]}


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
    args = ap.parse_args()
    from rich.console import Console
    from rich.table import Table

    rows = []
    table = Table(title="NICE Table 4 (pyswitch rows): transitions/seconds to the first violation")
    table.add_column("bug")
    for name, _ in COLUMNS:
        table.add_column(f"{name}\nno DPOR", justify="right")
        table.add_column(f"{name}\nDPOR", justify="right")
    table.add_column("fixed variant (PKT-SEQ, full search)")
    for bug, scenario, prop in BUGS:
        cells = []
        for _, strategy in COLUMNS:
            for dpor in (False, True):
                r = first_violation("pyswitch", scenario, prop, strategy, dpor, args.budget)
                r["bug"] = bug
                rows.append(r)
                cells.append(r["cell"])
                print(json.dumps(r), file=sys.stderr, flush=True)
        fixed = first_violation("pyswitch-fixed", scenario, prop, "pkt-seq", False, args.budget)
        fixed["bug"] = bug
        rows.append(fixed)
        fixed_cell = ("no violation (complete, "
                      f"{fixed['search_transitions']:,} transitions)" if fixed["completed"] and not fixed["found"]
                      else fixed["cell"])
        table.add_row(f"BUG-{bug}", *cells, fixed_cell)
        table.add_row("  NICE", *NICE[bug], "")
    Console(width=220).print(table)
    reduction = fig7(args.fig7_pings)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"benchmark": "nice_table4", "python": platform.python_version(),
                                   "cpus": os.cpu_count(), "when": time.strftime("%Y-%m-%d"),
                                   "budget": args.budget, "rows": rows, "nice": NICE,
                                   "fig7": reduction}, indent=2) + "\n")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
