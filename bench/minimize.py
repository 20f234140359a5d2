"""Minimize the real os-ken simple_switch migration blackhole: serial vs --jobs 2 vs Ray.

Records a fuzz trace of at least 60 inputs that ends in the migration
blackhole (the first seed that gives one), then minimizes it with each
executor and prints wall time, replays and inputs replayed, beside STS's
1,796 s for its 29-input POX migration bug. The synthetic 200-input case
is bench/minimize_synthetic.py. Writes bench/results/minimize.json.
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

from netsleuth.jobs.fuzz import FuzzOptions, fuzz
from netsleuth.jobs.minimize import MinimizeOptions, run_minimize
from netsleuth.schedulers.fuzz import Rates

RESULTS = Path(__file__).resolve().parent / "results" / "minimize.json"
NOISY = Rates({"host_migration": 0.01, "traffic": 0.9, "link_failure": 0.02, "link_recovery": 0.2})


def record(work: Path, min_inputs: int) -> tuple[Path, int]:
    for seed in range(1, 30):
        r = fuzz(FuzzOptions("osken:os_ken.app.simple_switch", "linear,3", work / f"fuzz{seed}", steps=400, seed=seed,
                             rates=NOISY, record_packets=False))
        if sum(r.data["inputs"].values()) >= min_inputs and any(
                v["persistent"] and v["invariant"] == "blackholes" for v in r.violations):
            return work / f"fuzz{seed}" / "trace.jsonl", seed
    raise SystemExit("no seed produced a migration blackhole")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--executors", default="serial,local,ray", help="comma-separated: serial,local,ray")
    ap.add_argument("--min-inputs", type=int, default=60)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    console = Console()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        t0 = time.monotonic()
        trace, seed = record(work, args.min_inputs)
        record_s = time.monotonic() - t0
        for ex in args.executors.split(","):
            opts = MinimizeOptions(trace=trace, out=work / f"min-{ex}", executor=ex, jobs=2 if ex != "serial" else 1)
            t = time.monotonic()
            d = run_minimize(opts)
            rows.append({"executor": ex, "wall_s": round(time.monotonic() - t, 2), "inputs_before": d["inputs_before"],
                         "inputs_after": d["inputs_after"], "replays": d["replays"],
                         "inputs_replayed": d["inputs_replayed"], "one_minimal": d["one_minimal"],
                         "reproduction_rate": d["reproduction_rate"], "mcs": d["mcs_in_words"]})
    table = Table(title=f"minimize: simple_switch migration blackhole (fuzz seed {seed})")
    for col in ("executor", "wall s", "inputs", "replays", "inputs replayed", "1-minimal"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["executor"], str(r["wall_s"]), f"{r['inputs_before']} -> {r['inputs_after']}",
                      str(r["replays"]),
                      str(r["inputs_replayed"]), str(r["one_minimal"]))
    table.add_row("STS (thesis)", "1796", "29 -> 3", "", "", "")
    console.print(table)
    base = next((r["wall_s"] for r in rows if r["executor"] == "serial"), None)
    if base:
        for r in rows:
            console.print(f"{r['executor']}: {base / r['wall_s']:.2f}x vs serial; {1796 / r['wall_s']:.0f}x vs STS")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"benchmark": "minimize", "fuzz_seed": seed, "record_seconds": round(record_s, 2),
                                    "results": rows}, indent=2) + "\n")
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
