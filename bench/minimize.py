"""Minimize the real os-ken simple_switch migration blackhole: wall time, replays and seconds per replay.

Records a fuzz trace of at least 60 inputs that ends in the migration
blackhole (the first seed that gives one; or ``--trace``), then minimizes it
in turns with each mode, ``--repeat`` times each, interleaved so that a
machine shared with other work slows both modes alike:

* ``before`` -- each replay starts its own controller (with setuptools'
  distutils) and judges a candidate that has not shown the violation only at
  its deadline (the recorded reaction time + 3 s), and the search starts from
  the full sequence: ``--no-focus --no-prestart --full-wait`` and
  ``SETUPTOOLS_USE_DISTUTILS=local``, the behaviour before these options;
* ``after`` -- the defaults: the inputs on the violation's hosts tried first,
  the next replay's controller started while the current replay runs, a
  replay ended once the network is at rest.

Prints per mode the min and median wall time, replays, seconds per replay
(the replay's own, and wall per replay per worker), and checks that every
run found the same minimal causal sequence; ``--executors`` compares
executors (serial, local, ray) in the ``after`` mode instead, beside STS's
1,796 s for its 29-input POX migration bug. The synthetic 200-input case is
bench/minimize_synthetic.py. Writes bench/results/minimize.json.
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

from rich.console import Console
from rich.table import Table

from netsleuth.jobs.fuzz import FuzzOptions, fuzz
from netsleuth.jobs.minimize import MinimizeOptions, run_minimize
from netsleuth.schedulers.fuzz import Rates

RESULTS = Path(__file__).resolve().parent / "results" / "minimize.json"
NOISY = Rates({"host_migration": 0.01, "traffic": 0.9, "link_failure": 0.02, "link_recovery": 0.2})
MODES = {"before": {"focus": False, "prestart": False, "early_end": False},
         "after": {"focus": True, "prestart": True, "early_end": True}}
# os-ken controllers start with the standard library's distutils unless told otherwise: "before" tells them.
DISTUTILS = {"before": "local", "after": "stdlib"}


def record(work: Path, min_inputs: int) -> tuple[Path, int]:
    for seed in range(1, 30):
        r = fuzz(FuzzOptions("osken:os_ken.app.simple_switch", "linear,3", work / f"fuzz{seed}", steps=400, seed=seed,
                             rates=NOISY, record_packets=False))
        if sum(r.data["inputs"].values()) >= min_inputs and any(
                v["persistent"] and v["invariant"] == "blackholes" for v in r.violations):
            return work / f"fuzz{seed}" / "trace.jsonl", seed
    raise SystemExit("no seed produced a migration blackhole")


def replay_seconds(out: Path) -> list[float]:
    """Each replay's own seconds (controller start to teardown), from the workers' replays.jsonl."""
    rows = [json.loads(line) for f in sorted(out.glob("replays/w*/replays.jsonl")) for line in f.read_text().split("\n")
            if line.strip()]
    return [r["seconds"] for r in rows if "replay" in r]


def one_run(trace: Path, out: Path, mode: str, executor: str, jobs: int, replays: int) -> dict:
    opts = MinimizeOptions(trace=trace, out=out, executor=executor, jobs=jobs if executor != "serial" else 1,
                           replays=replays, **MODES[mode])
    os.environ["SETUPTOOLS_USE_DISTUTILS"] = DISTUTILS[mode]
    t = time.monotonic()
    d = run_minimize(opts)
    wall = time.monotonic() - t
    secs = replay_seconds(out)
    workers = d["workers"]
    return {"mode": mode, "executor": executor, "wall_s": round(wall, 2), "inputs_before": d["inputs_before"],
            "inputs_after": d["inputs_after"], "replays": d["replays"], "inputs_replayed": d["inputs_replayed"],
            "replay_s_mean": round(statistics.fmean(secs), 3) if secs else None,
            "wall_per_replay_per_worker_s": round(wall * workers / max(1, d["replays"]), 3),
            "one_minimal": d["one_minimal"], "reproduction_rate": d["reproduction_rate"],
            "mcs": d["mcs_in_words"]}


def summary(rows: list[dict], key: str) -> dict:
    out: dict = {}
    for name in dict.fromkeys(r[key] for r in rows):
        mine = [r for r in rows if r[key] == name]
        walls = [r["wall_s"] for r in mine]
        out[name] = {"runs": len(mine), "wall_min_s": min(walls), "wall_median_s": round(statistics.median(walls), 2),
                     "replays_median": statistics.median(r["replays"] for r in mine),
                     "replay_s_median": round(statistics.median(r["replay_s_mean"] or 0.0 for r in mine), 3),
                     "wall_per_replay_median_s": round(statistics.median(r["wall_per_replay_per_worker_s"]
                                                                         for r in mine), 3),
                     "same_mcs": len({tuple(r["mcs"]) for r in mine}) == 1,
                     "reproduction_rates": [r["reproduction_rate"] for r in mine]}
    return out


def print_table(console: Console, title: str, summ: dict) -> None:
    table = Table(title=title)
    for col in ("", "runs", "wall s min", "wall s median", "replays", "s per replay", "wall s per replay/worker",
                "same MCS"):
        table.add_column(col)
    for name, s in summ.items():
        table.add_row(name, str(s["runs"]), str(s["wall_min_s"]), str(s["wall_median_s"]), str(s["replays_median"]),
                      str(s["replay_s_median"]), str(s["wall_per_replay_median_s"]), str(s["same_mcs"]))
    console.print(table)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, help="minimize this trace instead of recording one")
    ap.add_argument("--modes", default="before,after", help="comma-separated: before,after (see the docstring)")
    ap.add_argument("--executors", default="", help="compare these executors (serial,local,ray) in the after mode")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each mode, interleaved (default 3)")
    ap.add_argument("--replays", type=int, default=1, help="minimize's --replays (default 1)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--min-inputs", type=int, default=60)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    console = Console()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        t0 = time.monotonic()
        trace, seed = (args.trace, None) if args.trace else record(work, args.min_inputs)
        record_s = time.monotonic() - t0
        runs = [("after", ex) for ex in args.executors.split(",") if ex] or \
            [(m, "local") for m in args.modes.split(",") if m]
        for i in range(args.repeat):
            for mode, ex in runs:
                row = one_run(trace, work / f"min-{mode}-{ex}-{i}", mode, ex, args.jobs, args.replays)
                console.print(f"run {i + 1}/{args.repeat} {mode} ({ex}): {row['wall_s']} s, {row['replays']} replays, "
                              f"{row['inputs_before']} -> {row['inputs_after']}")
                rows.append(row)
    key = "executor" if args.executors else "mode"
    summ = summary(rows, key)
    inputs = f"{rows[0]['inputs_before']} -> {rows[0]['inputs_after']}" if rows else ""
    print_table(console, f"minimize: simple_switch migration blackhole {inputs}, --replays {args.replays}, "
                f"--jobs {args.jobs}", summ)
    if args.executors:
        console.print("STS (thesis): 1,796 s for 29 -> 3")
    if "before" in summ and "after" in summ:
        b, a = summ["before"], summ["after"]
        console.print(f"after vs before: median wall {b['wall_median_s'] / a['wall_median_s']:.2f}x faster, "
                      f"median seconds per replay {b['replay_s_median']} -> {a['replay_s_median']}; "
                      f"same MCS in every run: {len({tuple(r['mcs']) for r in rows}) == 1}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"benchmark": "minimize", "fuzz_seed": seed, "trace": str(args.trace or ""),
                                    "record_seconds": round(record_s, 2), "replays_per_candidate": args.replays,
                                    "summary": summ, "results": rows}, indent=2) + "\n")
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
