"""Concolic packet discovery on pyswitch: generated vs kept, paths, branch coverage, time.

NICE's engine (Python 2 bytecode tracing over STP) filtered the inputs it
generated against the domain after the fact and kept 2 of 12 for pyswitch.
Ours asserts the domain (source = the sending host, destination = another
known host or broadcast, ARP/IPv4 only, consistent ARP and IPv4 headers) in
z3, so every generated input should be kept; the independent domain check
in :meth:`Domain.accepts` is what counts "kept".

For each MAC-table state below, h1 (attached at s1:1 of a 3-host network)
is the sender, with the domain constraints *in the solver* (ours), *as a
filter* after generation (NICE's way: the solver knows only src != dst;
with every header field free, next to nothing passes -- NICE, whose
non-Ethernet fields were concrete, kept 2 of 12) and not at all (which shows
every branch of the handler is reachable); the script prints the packets' paths, generated/kept counts,
branch coverage of ``PySwitch.packet_in`` (reached / infeasible under the
domain / missed) and the seconds per discovery, and writes
``bench/results/nice_concolic.json``.

    .venv/bin/python bench/nice_concolic.py [--json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from netsleuth.model.topo_builders import parse_topo
from netsleuth.nice.apps.pyswitch import PySwitch, PySwitchFixed
from netsleuth.nice.concolic import Domain, discover_packets

HOSTS = list(parse_topo("linear,3").hosts)
H1, H2, H3 = HOSTS
STATES = {
    "empty table": {},
    "h2 learned": {H2.mac: 2},
    "h2, h3 learned (h3 on h1's port)": {H2.mac: 2, H3.mac: 1},
    "all learned": {H1.mac: 1, H2.mac: 2, H3.mac: 3},
}
NICE_PYSWITCH = {"generated": 12, "kept": 2}
FREE = Domain(src_is_sender=False, dst_is_known=False)


def run() -> dict:
    rows = []
    for cls in (PySwitch, PySwitchFixed):
        for label, table in STATES.items():
            for domain_name, domain, check in (("in solver", Domain(), Domain()),
                                               ("as filter", FREE, Domain()),
                                               ("none", FREE, FREE)):
                app = cls()
                app.st = {1: dict(table)}
                t0 = time.perf_counter()
                d = discover_packets(app, H1, HOSTS, dpid=1, in_port=1, domain=domain, filter_domain=check,
                                     coverage=True)
                secs = time.perf_counter() - t0
                cov = d.coverage
                pin = {a for a in cov.total if a.function.endswith("packet_in")}
                rows.append({
                    "app": cls.name, "state": label, "domain": domain_name, "paths": len(d.inputs),
                    "generated": d.generated, "kept": d.kept,
                    "passes_domain": sum(Domain().accepts(p, H1, HOSTS) for p in d.inputs),
                    "packet_in_branches": len(pin), "reached": len(pin & cov.reached),
                    "infeasible": len((pin & cov.infeasible) - cov.reached), "missed": len(pin & cov.missed),
                    "solver_calls": d.exploration.solver_calls, "seconds": round(secs, 4),
                    "packets": [p.summary() + f" dst={p.eth_dst:#x}" for p in d.inputs],
                })
    return {"nice_pyswitch": NICE_PYSWITCH, "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the JSON result instead of a table")
    args = ap.parse_args()
    res = run()
    out = Path(__file__).resolve().parent / "results" / "nice_concolic.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2) + "\n")
    if args.json:
        print(json.dumps(res))
        return
    t = Table(title="concolic discovery on pyswitch (sender h1 at s1:1); NICE kept 2 of 12")
    for col in ("app", "state", "domain", "paths", "generated", "kept", "branches reached/infeasible/missed",
                "s"):
        t.add_column(col)
    for r in res["rows"]:
        t.add_row(r["app"], r["state"], r["domain"], str(r["paths"]), str(r["generated"]), str(r["kept"]),
                  f"{r['reached']}/{r['infeasible']}/{r['missed']} of {r['packet_in_branches']}",
                  f"{r['seconds']:.3f}")
    Console().print(t)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
