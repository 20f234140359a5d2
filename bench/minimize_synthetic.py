"""Minimizer benchmark on the synthetic case: serial vs a local pool (--jobs J) vs Ray.

The oracle is :class:`netsleuth.minimize.synthetic.SimOracle` on 200 seeded
inputs (a bug needing a link failure and a later send; a migration
blackhole), made to sleep per replay -- ``--sleep`` seconds plus
``--per-input`` seconds per input replayed -- to emulate replays against a
real controller. For each case, strategy and executor it reports wall
seconds (and the executor's start-up, which a long real run amortizes),
replays, inputs replayed, candidates, cache hits and whether the MCS equals
the serial one; prints a rich table and writes
``bench/results/minimize_synthetic.json``.

Ray is started once up front (its start-up is reported on its own line) if
it is installed, else skipped with a note.

    .venv/bin/python bench/minimize_synthetic.py
    .venv/bin/python bench/minimize_synthetic.py --jobs 2 --sleep 0.02 --per-input 0.0005 --no-ray
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

RESULTS = ROOT / "bench" / "results" / "minimize_synthetic.json"
CASES = {"link_then_host": {}, "migration": {"scenario": "migration"}}


def main() -> int:
    from rich.console import Console
    from rich.table import Table

    from netsleuth.minimize import RayUnavailableError, minimize
    from netsleuth.minimize.executors import import_ray
    from netsleuth.minimize.synthetic import SimOracleFactory, synthetic_inputs

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--replays", default="1,3", help="K replays per candidate (comma-separated list)")
    ap.add_argument("--sleep", type=float, default=0.02, help="seconds per replay")
    ap.add_argument("--per-input", type=float, default=0.0005, help="extra seconds per input replayed")
    ap.add_argument("--strategies", default="ddmin,binary")
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    console = Console(width=None if sys.stdout.isatty() else 200)

    executors = [("serial", None), ("local", args.jobs)]
    ray_note, ray_init_seconds, ray = None, None, None
    if not args.no_ray:
        try:
            ray = import_ray()
            t0 = time.perf_counter()
            ray.init(num_cpus=args.jobs, include_dashboard=False, logging_level="error")
            ray_init_seconds = time.perf_counter() - t0
            executors.append(("ray", args.jobs))
        except RayUnavailableError as exc:
            ray_note = exc.one_line()

    rows = []
    try:
        for case, kw in CASES.items():
            inputs = synthetic_inputs(args.inputs, seed=args.seed, **kw)
            factory = SimOracleFactory("migration" if case == "migration" else "link_then_host",
                                       sleep=args.sleep, sleep_per_input=args.per_input)
            for strategy, k in [(s, int(k)) for s in args.strategies.split(",") for k in args.replays.split(",")]:
                serial_mcs = None
                for spec, jobs in executors:
                    r = minimize(inputs, factory, strategy=strategy, replays=k, executor=spec, jobs=jobs)
                    mcs = [e.id for e in r.mcs]
                    if spec == "serial":
                        serial_mcs = mcs
                    rows.append({
                        "case": case, "strategy": strategy, "K": k, "executor": r.executor, "workers": r.workers,
                        "seconds": round(r.seconds, 3), "start_seconds": round(r.executor_start_seconds, 3),
                        "stop_seconds": round(r.executor_stop_seconds, 3),
                        "search_seconds": round(r.search_seconds, 3),
                        "replays": r.replays, "inputs_replayed": r.inputs_replayed, "candidates": r.candidates,
                        "cache_hits": r.cache_hits, "unused_candidates": r.unused_candidates,
                        "inputs_before": r.inputs_before, "inputs_after": r.inputs_after, "mcs": mcs,
                        "same_as_serial": mcs == serial_mcs, "one_minimal": r.one_minimal,
                        "reproduction_rate": r.reproduction_rate,
                        "passes": [p.to_json() for p in r.passes],
                    })
                    console.print(f"  {case:15} {strategy:7} K={k} {r.executor:22} {r.seconds:7.2f} s", highlight=False)
    finally:
        if ray is not None and ray.is_initialized():
            ray.shutdown()

    table = Table(title=f"minimize: {args.inputs} inputs, one replay = {args.sleep * 1000:g} ms + "
                        f"{args.per_input * 1000:g} ms/input; speed-up = serial search s / search s")
    for col in ("case", "strategy", "K", "executor", "wall s", "start s", "search s", "stop s", "speed-up", "replays",
                "inputs replayed", "candidates", "cache hits", "MCS", "= serial"):
        table.add_column(col, justify="left" if col in ("case", "strategy", "executor") else "right")
    base: dict[tuple, float] = {}
    for row in rows:
        key = (row["case"], row["strategy"], row["K"])
        if row["executor"].startswith("serial"):
            base[key] = row["search_seconds"]
        row["search_speedup"] = round(base[key] / row["search_seconds"], 2) if row["search_seconds"] else None
        table.add_row(row["case"], row["strategy"], str(row["K"]), row["executor"], f"{row['seconds']:.2f}",
                      f"{row['start_seconds']:.2f}", f"{row['search_seconds']:.2f}", f"{row['stop_seconds']:.2f}",
                      f"{row['search_speedup']}x",
                      str(row["replays"]), str(row["inputs_replayed"]), str(row["candidates"]),
                      str(row["cache_hits"]), f"{row['inputs_before']}->{row['inputs_after']}",
                      "yes" if row["same_as_serial"] else "NO")
    console.print(table)
    if ray_init_seconds is not None:
        console.print(f"ray.init (once, not in the rows): {ray_init_seconds:.2f} s")
    if ray_note:
        console.print(f"[yellow]Ray skipped:[/] {ray_note}")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "settings": {"inputs": args.inputs, "seed": args.seed, "jobs": args.jobs,
                     "replays": [int(k) for k in args.replays.split(",")],
                     "sleep": args.sleep, "per_input": args.per_input},
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "ray_init_seconds": None if ray_init_seconds is None else round(ray_init_seconds, 3),
        "ray_note": ray_note, "rows": rows}, indent=2) + "\n")
    console.print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0 if all(r["same_as_serial"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
