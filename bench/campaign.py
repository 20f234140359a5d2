"""Campaign throughput: runs per minute with 1 and 2 local jobs and with Ray, in the same run.

The same small campaign (the real os-ken simple_switch on linear,3 and
ring,4 under host moves, link failures and traffic; ``--seeds`` seeds, no
minimization, so only the fuzz runs are timed) is run with ``--executor
local --jobs 1``, ``--executor local --jobs 2`` and ``--executor ray
--jobs 2`` (a local Ray instance that the campaign starts and stops, its
start-up counted), each into a fresh OUT.  It prints runs per minute, the
2-job speedup over 1 job, and Ray's overhead as the ratio of the 2-job
process pool's rate to Ray's, all measured in this one run; every
campaign must find the same buckets.  Writes bench/results/campaign.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from netsleuth.campaign.runner import run_campaign
from netsleuth.campaign.spec import CampaignSpec

RESULTS = Path(__file__).resolve().parent / "results" / "campaign.json"
RATES = {"host_migration": 0.1, "link_failure": 0.02, "traffic": 0.5, "switch_failure": 0.0}


def campaign(seeds: int, executor: str, jobs: int) -> CampaignSpec:
    return CampaignSpec(controllers=["osken:os_ken.app.simple_switch"], topologies=["linear,3", "ring,4"],
                        rate_sets={"moves": dict(RATES)}, seeds=list(range(1, seeds + 1)), steps=40,
                        checks="loops,blackholes,dataplane-loops", executor=executor, jobs=jobs, minimize=False)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10, help="seeds per configuration (2 configurations)")
    ap.add_argument("--configs", default="local:1,local:2,ray:2", help="executor:jobs, comma-separated")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    console = Console()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for cfg in args.configs.split(","):
            executor, _, jobs = cfg.partition(":")
            spec = campaign(args.seeds, executor, int(jobs or 1))
            t = time.monotonic()
            d = run_campaign(spec, Path(tmp) / cfg.replace(":", "-"))
            wall = time.monotonic() - t
            rows.append({"executor": executor, "jobs": int(jobs or 1), "runs": d["recorded"], "failed": d["failed"],
                         "wall_s": round(wall, 2), "runs_per_minute": round(d["recorded"] / wall * 60, 2),
                         "buckets": sorted(b["id"] for b in d["buckets"]),
                         "bucket_texts": [b["signature"]["text"] for b in d["buckets"]]})
    rate = {f"{r['executor']}:{r['jobs']}": r["runs_per_minute"] for r in rows}
    ratios = {}
    if "local:1" in rate and "local:2" in rate:
        ratios["speedup_2_jobs_over_1"] = round(rate["local:2"] / rate["local:1"], 3)
    if "local:2" in rate and "ray:2" in rate:
        ratios["ray_overhead_local2_over_ray2"] = round(rate["local:2"] / rate["ray:2"], 3)
    table = Table(title=f"netsleuth campaign throughput ({2 * args.seeds} runs each)")
    for col in ("executor", "jobs", "runs", "failed", "wall s", "runs/min", "buckets"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["executor"], str(r["jobs"]), str(r["runs"]), str(r["failed"]), str(r["wall_s"]),
                      str(r["runs_per_minute"]), str(len(r["buckets"])))
    console.print(table)
    for name, value in ratios.items():
        console.print(f"{name.replace('_', ' ')}: {value}x")
    same = len({tuple(r["buckets"]) for r in rows}) == 1
    console.print("same buckets with every executor" if same else "[red]the executors found different buckets[/red]")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"benchmark": "campaign", "seeds": args.seeds, "results": rows, "ratios": ratios,
                                    "same_buckets": same}, indent=2) + "\n")
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
