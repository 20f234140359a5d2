"""Fault localization on seeded faults: does `minimize --localize` name the faulty line?

For each fault: copy a controller app from its installed package, change one
line (the seeded fault), fuzz the copy (short, seeded) until a persistent
violation, minimize with --localize, and record the rank of the faulty line
under each formula.  Also measures what coverage costs: one trace replayed
with and without it.  Writes bench/results/localize.json.

    PYTHONPATH=. .venv/bin/python bench/localize.py [--faults NAME,...] [--overhead-times 3]

Extend :data:`FAULTS`: a fault names its app (module of the controller
environment), the exact text of one line and what it becomes, and the fuzz
settings that bring the violation out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from netsleuth.controllers.external import find_controller_python
from netsleuth.jobs.fuzz import FuzzOptions, fuzz
from netsleuth.jobs.minimize import MinimizeOptions, run_minimize
from netsleuth.jobs.replay import ReplayOptions, replay
from netsleuth.localize.collect import load_runs
from netsleuth.localize.source import execution_order
from netsleuth.localize.spectrum import FORMULAS, rank
from netsleuth.schedulers.fuzz import Rates

RESULTS = Path(__file__).resolve().parent / "results" / "localize.json"
TRAFFIC = {"traffic": 0.5, "host_migration": 0.0, "switch_failure": 0.0, "link_failure": 0.0}


@dataclass(frozen=True)
class Fault:
    name: str
    module: str              # the app: a module of the controller environment, or a file of this checkout
    old: str                 # one line of its source, stripped, exactly as it is
    new: str                 # what the seeded fault makes of it
    kind: str = "osken"      # the spec kind the copy runs as
    topo: str = "linear,3"
    steps: int = 60
    rates: dict = field(default_factory=lambda: dict(TRAFFIC))
    seeds: tuple[int, ...] = (1, 2, 3)
    what: str = ""


MOVING = "tests/data/localize/moving_switch.py"
MIGRATIONS = {"host_migration": 0.03, "traffic": 0.3}

FAULTS: tuple[Fault, ...] = (
    Fault("mv-guard-flipped", MOVING, "if msg.reason != ofp.OFPPR_DELETE:", "if msg.reason == ofp.OFPPR_DELETE:",
          steps=300, rates=dict(MIGRATIONS), what="a flipped comparison: handles every port change but deletion"),
    Fault("mv-forget-others", MOVING, "gone = [mac for mac, port in table.items() if port == msg.desc.port_no]",
          "gone = [mac for mac, port in table.items() if port != msg.desc.port_no]", steps=300,
          rates=dict(MIGRATIONS), what="a flipped comparison: forgets the hosts that stayed, keeps the one that left"),
    Fault("mv-keep-mac", MOVING, "self.where.get(dpid, {}).pop(mac, None)", "pass", steps=300,
          rates=dict(MIGRATIONS), what="deletes the flows to a moved host but still knows it at its old port"),
    Fault("mv-skip-first", MOVING, "for mac in gone:", "for mac in gone[1:]:", steps=300, rates=dict(MIGRATIONS),
          what="an off-by-one: forgets all but the first host of a deleted port"),
    Fault("mv-delete-by-src", MOVING,
          "dp.send_msg(parser.OFPFlowMod(datapath=dp, match=parser.OFPMatch(dl_dst=haddr_to_bin(mac)), cookie=0,",
          "dp.send_msg(parser.OFPFlowMod(datapath=dp, match=parser.OFPMatch(dl_src=haddr_to_bin(mac)), cookie=0,",
          steps=300, rates=dict(MIGRATIONS), what="deletes the flows from a moved host instead of those to it"),
    Fault("mv-wrong-reason", MOVING, "if msg.reason != ofp.OFPPR_DELETE:", "if msg.reason != ofp.OFPPR_MODIFY:",
          steps=300, rates=dict(MIGRATIONS), what="a wrong constant: waits for a port modification, not a deletion"),
    Fault("ss-wrong-out-port", "os_ken.app.simple_switch", "out_port = self.mac_to_port[dpid][dst]",
          "out_port = msg.in_port", what="forwards a known destination back out of the port it came in on"),
    Fault("ss-wrong-key", "os_ken.app.simple_switch", "out_port = self.mac_to_port[dpid][dst]",
          "out_port = self.mac_to_port[dpid][src]", what="looks up the source's port for the destination"),
    Fault("ss13-wrong-out-port", "os_ken.app.simple_switch_13", "out_port = self.mac_to_port[dpid][dst]",
          "out_port = in_port", what="1.3: forwards a known destination back to its in port"),
)


def app_source(module: str) -> Path:
    if module.endswith(".py"):
        return Path(__file__).resolve().parents[1] / module
    py = find_controller_python()
    code = f"import importlib.util; print(importlib.util.find_spec({module!r}).origin)"
    done = subprocess.run([py, "-c", code], capture_output=True, text=True, check=True)
    return Path(done.stdout.strip())


def seed_fault(fault: Fault, folder: Path) -> tuple[Path, int]:
    """Write the app with the fault seeded into ``folder``; the file and the faulty line's number."""
    lines = app_source(fault.module).read_text().splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if line.strip() == fault.old]
    if len(hits) != 1:
        raise SystemExit(f"fault {fault.name}: {fault.old!r} is on {len(hits)} lines of {fault.module}, not one")
    i = hits[0]
    indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
    lines[i] = f"{indent}{fault.new}\n"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{fault.name.replace('-', '_')}.py"
    path.write_text("".join(lines))
    return path.resolve(), i + 1


def find_violation(fault: Fault, app: Path, out: Path) -> Path | None:
    for seed in fault.seeds:
        run = out / f"fuzz-{seed}"
        r = fuzz(FuzzOptions(f"{fault.kind}:{app}", fault.topo, run, steps=fault.steps, seed=seed,
                             rates=Rates(fault.rates), record_packets=False))
        if any(v.get("persistent") for v in r.violations):
            return run / "trace.jsonl"
    return None


def run_fault(fault: Fault, work: Path, budget: float) -> dict:
    t0 = time.monotonic()
    app, line = seed_fault(fault, work / "app")
    row: dict = {"fault": fault.name, "app": fault.module, "line": line, "old": fault.old, "new": fault.new,
                 "what": fault.what}
    trace = find_violation(fault, app, work)
    if trace is None:
        row["outcome"] = "no violation found"
        return row
    d = run_minimize(MinimizeOptions(trace=trace, out=work / "min", controller=[f"{fault.kind}:{app}"], jobs=2,
                                     budget=budget, localize=True))
    if not d.get("localize"):
        row["outcome"] = "minimize wrote no localization"
        return row
    loc = d.get("localize", {})
    row.update({"inputs": [d["inputs_before"], d["inputs_after"]], "replays": d["replays"],
                "failing": loc.get("failing"), "passing": loc.get("passing"), "message": loc.get("message", "")})
    spectrum = load_runs(sorted((work / "min").glob("*/w*/*/coverage.json")))
    order = execution_order(sorted({x for r in spectrum.runs if r.failed for x in r.lines}))
    for formula in FORMULAS:
        ranking = rank(spectrum.runs, formula, order=lambda x: order.get(x, (0, *x)))
        row[f"rank_{formula}"] = ranking.rank_of((str(app), line))
    row["seconds"] = round(time.monotonic() - t0, 1)
    return row


def overhead(trace: Path, controller: str, work: Path, times: int) -> dict:
    """Wall time of replaying ``trace`` with and without coverage, alternating."""
    plain, measured = [], []
    for i in range(times):
        for cov, acc in ((False, plain), (True, measured)):
            out = work / f"overhead-{'cov' if cov else 'plain'}-{i}"
            t0 = time.monotonic()
            replay(ReplayOptions(trace=trace, out=out, controller=controller, epsilon=0.1, coverage=cov,
                                 record_packets=False))
            acc.append(time.monotonic() - t0)
    p, m = statistics.median(plain), statistics.median(measured)
    return {"trace": str(trace), "controller": controller, "times": times, "plain_s": round(p, 2),
            "coverage_s": round(m, 2), "ratio": round(m / p, 3)}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--faults", help="comma-separated names (default: all)")
    ap.add_argument("--work", default="/tmp/netsleuth-bench-localize")
    ap.add_argument("--budget", type=float, default=240.0, help="minimize budget per fault, seconds")
    ap.add_argument("--overhead-times", type=int, default=3)
    ap.add_argument("--only-overhead", action="store_true",
                    help="keep the faults of the last results file (and their --work folders); measure the overhead")
    args = ap.parse_args(argv)
    wanted = set(args.faults.split(",")) if args.faults else None
    work = Path(args.work)
    rows = json.loads(RESULTS.read_text())["faults"] if args.only_overhead else []
    for fault in FAULTS:
        if not args.only_overhead and (wanted is None or fault.name in wanted):
            rows.append(run_fault(fault, work / fault.name, args.budget))
            print(json.dumps(rows[-1]), flush=True)
    ranked = [r for r in rows if "rank_ochiai" in r]
    summary = {"faults": len(rows), "localized": len(ranked),
               "top1_ochiai": sum(1 for r in ranked if r["rank_ochiai"] == 1),
               "top5_ochiai": sum(1 for r in ranked if r["rank_ochiai"] is not None and r["rank_ochiai"] <= 5)}
    data: dict = {"faults": rows, "summary": summary}
    source = next((r for r in ranked), None)
    if args.overhead_times and source is not None:  # the fuzz trace that minimization started from
        fault = next(f for f in FAULTS if f.name == source["fault"])
        app = seed_fault(fault, work / "overhead" / "app")[0]
        trace = sorted((work / source["fault"]).glob("fuzz-*/trace.jsonl"))[-1]
        data["overhead"] = overhead(trace, f"{fault.kind}:{app}", work / "overhead", args.overhead_times)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    print(json.dumps({"summary": summary, "overhead": data.get("overhead")}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
