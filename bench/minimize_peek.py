"""Minimize the real os-ken simple_switch migration blackhole with and without PEEK (--peek).

PEEK (STS thesis, Figure 4.2) replays prefixes of each candidate to infer
which of the original internal events will still occur, so that the replay
of the candidate waits for those only. Without checkpoints of a real
controller every prefix replay starts a fresh controller, so PEEK trades
extra replays for fewer timed-out expectations. This bench measures both
sides in the same run, on the same trace, with the serial executor (one
memo, comparable replay counts):

* wall time, candidate replays, PEEK prefix replays and memo hits;
* per candidate replay, from the replayer's matcher: expected internal
  events matched, timed out (each cost up to epsilon of waiting) and new;
* the final MCS (size, 1-minimal, reproduction rate).

``--trace short`` (default) is the fixture of tests/conftest.py (a few
inputs); ``--trace long`` is bench/minimize.py's noisy trace of >= 60
inputs. Writes bench/results/minimize_peek_TRACE.json.
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

RESULTS = Path(__file__).resolve().parent / "results"
SIMPLE_SWITCH = "osken:os_ken.app.simple_switch"
TRACES = {  # name -> (rates, minimum inputs, seeds tried)
    "short": (Rates({"host_migration": 0.03, "traffic": 0.3}), 0, range(1, 6)),
    "long": (Rates({"host_migration": 0.01, "traffic": 0.9, "link_failure": 0.02, "link_recovery": 0.2}), 60,
             range(1, 30)),
}


def record(work: Path, kind: str) -> tuple[Path, int]:
    rates, min_inputs, seeds = TRACES[kind]
    for seed in seeds:
        r = fuzz(FuzzOptions(SIMPLE_SWITCH, "linear,3", work / f"fuzz{seed}", steps=400, seed=seed, rates=rates,
                             record_packets=False))
        if sum(r.data["inputs"].values()) >= min_inputs and any(
                v["persistent"] and v["invariant"] == "blackholes" for v in r.violations):
            return work / f"fuzz{seed}" / "trace.jsonl", seed
    raise SystemExit(f"no seed produced a migration blackhole ({kind} trace)")


def _sum(rows: list[dict], key: str) -> int:
    return sum(int(r.get(key) or 0) for r in rows)


def summarize(mode: str, d: dict, wall: float, out: Path) -> dict:
    rows = []
    for f in sorted((out / "replays").glob("w*/replays.jsonl")):
        rows += [json.loads(line) for line in f.read_text().splitlines()]
    cand = [r for r in rows if "replay" in r]
    peek = [r for r in rows if "peek" in r]
    n = max(1, len(cand))
    return {
        "mode": mode, "wall_s": round(wall, 2), "minimize_seconds": d["seconds"],
        "inputs_before": d["inputs_before"], "inputs_after": d["inputs_after"], "one_minimal": d["one_minimal"],
        "stop_reason": d["stop_reason"], "reproduction_rate": d["reproduction_rate"], "mcs": d["mcs_in_words"],
        "candidate_replays": d["replays"], "inputs_replayed": d["inputs_replayed"],
        "prefix_replays": len(peek), "prefix_inputs_replayed": _sum(peek, "inputs"),
        "prefix_replay_seconds": round(sum(r["seconds"] for r in peek), 2),
        "peek": d.get("peek"),
        "expected": _sum(cand, "expected"), "matched": _sum(cand, "matched"),
        "timed_out": _sum(cand, "timed_out"), "new": _sum(cand, "new"),
        "per_replay": {k: round(_sum(cand, k) / n, 2) for k in ("expected", "matched", "timed_out", "new")},
        "replays_with_timeouts": sum(1 for r in cand if r.get("timed_out")),
        # time inputs were held past their due time waiting for expected events that never came
        "timeout_wait_s": round(sum(r.get("timeout_wait_s") or 0.0 for r in cand), 2),
        "prefix_timeout_wait_s": round(sum(r.get("timeout_wait_s") or 0.0 for r in peek), 2),
        "candidate_replay_seconds": round(sum(r["seconds"] for r in cand), 2),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", choices=sorted(TRACES), default="short")
    ap.add_argument("--executor", default="serial", help="serial (default: one PEEK memo) | local | ray")
    ap.add_argument("--budget", type=float, help="seconds per minimization (both modes)")
    ap.add_argument("--epsilon", type=float, default=0.1, help="seconds to wait for an expected event")
    ap.add_argument("--out", type=Path, help="JSON output (default bench/results/minimize_peek_TRACE.json)")
    args = ap.parse_args()
    args.out = args.out or RESULTS / f"minimize_peek_{args.trace}.json"
    console = Console()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        t0 = time.monotonic()
        trace, seed = record(work, args.trace)
        record_s = time.monotonic() - t0
        for mode, peek in (("original", False), ("peek", True)):
            out = work / f"min-{mode}"
            opts = MinimizeOptions(trace=trace, out=out, executor=args.executor, jobs=1 if args.executor == "serial"
                                   else 2, budget=args.budget, epsilon=args.epsilon, peek=peek)
            t = time.monotonic()
            d = run_minimize(opts)
            rows.append(summarize(mode, d, time.monotonic() - t, out))
    table = Table(title=f"minimize with/without PEEK: simple_switch migration blackhole ({args.trace} trace, "
                        f"fuzz seed {seed}, {args.executor})")
    for col in ("mode", "wall s", "inputs", "1-min", "cand. replays", "prefix replays (memo hits)",
                "timed out / matched / new", "per replay t/o"):
        table.add_column(col)
    for r in rows:
        hits = r["peek"]["memo_hits"] if r["peek"] else "-"
        table.add_row(r["mode"], str(r["wall_s"]), f"{r['inputs_before']} -> {r['inputs_after']}",
                      str(r["one_minimal"]), str(r["candidate_replays"]), f"{r['prefix_replays']} ({hits})",
                      f"{r['timed_out']} / {r['matched']} / {r['new']}", str(r["per_replay"]["timed_out"]))
    console.print(table)
    base, pk = rows
    console.print(f"PEEK: {pk['wall_s'] / base['wall_s']:.2f}x the wall time; timeouts {base['timed_out']} -> "
                  f"{pk['timed_out']} (inputs held {base['timeout_wait_s']} s -> {pk['timeout_wait_s']} s); "
                  f"{pk['prefix_replays']} extra replays ({pk['prefix_replay_seconds']} s of them)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"benchmark": "minimize_peek", "trace": args.trace, "fuzz_seed": seed,
                                    "executor": args.executor, "epsilon": args.epsilon,
                                    "record_seconds": round(record_s, 2), "results": rows}, indent=2) + "\n")
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
