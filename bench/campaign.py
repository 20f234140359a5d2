"""Campaign throughput: runs per minute on the local process pool and on Ray, at the same parallelism.

The same small campaign (the real os-ken simple_switch on linear,3 and
ring,4 under host moves, link failures and traffic; ``--seeds`` seeds, no
minimization, so only the fuzz runs are timed) is run with each
configuration of ``--configs`` into a fresh OUT, ``--repeat`` times, the
configurations interleaved (local, ray, local, ray, ...) so that a change
in the machine's load hits them alike.  ``ray`` is a local Ray instance
that the campaign starts and stops, its start-up counted, as a user gets
it; ``ray-plain`` is the same with Ray's own start-up instead of
netsleuth's quicker one (minimize/ray_local.py; ``NETSLEUTH_RAY_QUICK_START=0``);
``ray-handoff`` runs the first jobs on a process pool while Ray starts
(campaign/handoff.py, what ``ray`` does by default) and ``ray-wait`` has
the jobs wait for Ray.  Each
campaign's wall time runs from the call to its return.

It prints, per configuration, the minimum and median wall time and runs
per minute, the load average before each run, and Ray's rate as a
fraction of the process pool's (from the medians and from the minima);
every campaign must find the same buckets.  Writes
bench/results/campaign.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from netsleuth.campaign import runner
from netsleuth.campaign.runner import run_campaign
from netsleuth.campaign.spec import CampaignSpec
from netsleuth.minimize.ray_local import ENV as QUICK_START

RESULTS = Path(__file__).resolve().parent / "results" / "campaign.json"
RATES = {"host_migration": 0.1, "link_failure": 0.02, "traffic": 0.5, "switch_failure": 0.0}


def campaign(seeds: int, executor: str, jobs: int) -> CampaignSpec:
    return CampaignSpec(controllers=["osken:os_ken.app.simple_switch"], topologies=["linear,3", "ring,4"],
                        rate_sets={"moves": dict(RATES)}, seeds=list(range(1, seeds + 1)), steps=40,
                        checks="loops,blackholes,dataplane-loops", executor=executor, jobs=jobs, minimize=False)


def one_run(kind: str, jobs: int, seeds: int, out: Path) -> dict[str, Any]:
    """One campaign of configuration ``kind`` (local, ray, ray-plain, ray-wait, ray-handoff) with ``jobs`` workers."""
    default = runner.HANDOFF
    runner.HANDOFF = {"ray-handoff": True, "ray-wait": False}.get(kind, default)
    os.environ[QUICK_START] = "0" if kind == "ray-plain" else "1"
    load = os.getloadavg()[0]
    t = time.monotonic()
    d = run_campaign(campaign(seeds, "local" if kind == "local" else "ray", jobs), out)
    wall = time.monotonic() - t
    runner.HANDOFF = default
    os.environ.pop(QUICK_START)
    return {"wall_s": round(wall, 2), "runs": d["recorded"], "failed": d["failed"], "load_before": round(load, 2),
            "runs_per_minute": round(d["recorded"] / wall * 60, 2), "buckets": sorted(b["id"] for b in d["buckets"]),
            "jobs_per_node": d.get("jobs_per_node", {}), "handoff": len(d.get("jobs_per_node", {})) > 1}


def summary(kind: str, jobs: int, runs: list[dict[str, Any]]) -> dict[str, Any]:
    walls = [r["wall_s"] for r in runs]
    n = runs[0]["runs"]
    return {"config": f"{kind}:{jobs}", "executor": kind, "jobs": jobs, "runs": n, "repeats": runs,
            "wall_min_s": min(walls), "wall_median_s": round(statistics.median(walls), 2),
            "runs_per_minute_best": round(n / min(walls) * 60, 2),
            "runs_per_minute_median": round(n / statistics.median(walls) * 60, 2)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=8, help="seeds per configuration (2 configurations)")
    ap.add_argument("--configs", default="local:2,ray:2",
                    help="kind:jobs, comma-separated; kind is local, ray (as --executor ray runs), ray-plain "
                         "(Ray's own start-up), ray-wait (no hand-off: the jobs wait for Ray) or ray-handoff "
                         "(the first jobs on a process pool while Ray starts)")
    ap.add_argument("--repeat", type=int, default=3, help="campaigns per configuration")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    console = Console()
    configs = [(k, int(j or 1)) for k, _, j in (c.partition(":") for c in args.configs.split(","))]
    runs: dict[tuple[str, int], list[dict[str, Any]]] = {c: [] for c in configs}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeat):
            for kind, jobs in configs:
                r = one_run(kind, jobs, args.seeds, Path(tmp) / f"{kind}-{jobs}-{rep}")
                console.print(f"{kind}:{jobs} #{rep + 1}: {r['wall_s']} s, {r['runs_per_minute']} runs/min "
                              f"(load {r['load_before']})")
                runs[(kind, jobs)].append(r)
    rows = [summary(k, j, rs) for (k, j), rs in runs.items()]
    by = {r["config"]: r for r in rows}
    ratios = {}
    for name, row in by.items():
        base = by.get(f"local:{row['jobs']}")
        if row["executor"] != "local" and base is not None:
            for stat in ("median", "best"):
                key = f"runs_per_minute_{stat}"
                ratios[f"{name}_over_local_{stat}"] = round(row[key] / base[key], 3)
    table = Table(title=f"netsleuth campaign throughput ({2 * args.seeds} runs a campaign, "
                        f"{args.repeat} campaigns each)")
    for col in ("config", "failed", "wall min s", "wall median s", "runs/min best", "runs/min median", "buckets"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["config"], str(sum(x["failed"] for x in r["repeats"])), str(r["wall_min_s"]),
                      str(r["wall_median_s"]), str(r["runs_per_minute_best"]), str(r["runs_per_minute_median"]),
                      str(len(r["repeats"][0]["buckets"])))
    console.print(table)
    for name, value in ratios.items():
        console.print(f"{name.replace('_', ' ')}: {value}x")
    loads = [x["load_before"] for r in rows for x in r["repeats"]]
    console.print(f"load average (1 min) before the runs: {min(loads)} to {max(loads)} on {os.cpu_count()} CPUs")
    same = len({tuple(x["buckets"]) for r in rows for x in r["repeats"]}) == 1
    console.print("same buckets in every campaign" if same else "[red]the campaigns found different buckets[/red]")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"benchmark": "campaign", "seeds": args.seeds, "repeat": args.repeat,
                                    "cpus": os.cpu_count(), "results": rows, "ratios": ratios,
                                    "same_buckets": same}, indent=2) + "\n")
    console.print(f"wrote {args.out}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
