"""Benchmark: the trace tools (pcap, diff, reduce, trace-packet) on a real fuzz trace.

Records a fuzz trace of os-ken's simple_switch (or takes ``--trace``), then
times each tool in-process on it:

* pcap: building the control-channel (+ dataplane) pcap, and tshark reading
  it back (the check: every OpenFlow message decoded);
* diff: the trace against itself (every event keyed and paired);
* reduce: the headless rebuild with provenance, at the end of the trace;
* trace-packet: every traffic input, one full rebuild each (median and max).

Reading is timed twice in the same run, alternating over several rounds: with
the content checks of :mod:`netsleuth.trace.validate` switched off (before:
the parse and the schema alone) and on, each validated read starting with no
content remembered from earlier reads (as a first read in a new process),
then once more on (a tool reading the trace again in the same process).

Prints a rich table and writes ``bench/results/tools.json``.

    .venv/bin/python bench/tools.py                      # fuzz linear,4 for 300 rounds first
    .venv/bin/python bench/tools.py --trace OUT/trace.jsonl
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from netsleuth.rootcause.diff import diff_events  # noqa: E402
from netsleuth.rootcause.pcap import build_pcap  # noqa: E402
from netsleuth.rootcause.reduce import reduce_trace  # noqa: E402
from netsleuth.rootcause.trace_packet import trace_packet  # noqa: E402
from netsleuth.trace import schema as ts  # noqa: E402
from netsleuth.trace import validate  # noqa: E402
from netsleuth.trace.io import read_trace  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "tools.json"


def record(out: Path, steps: int, seed: int) -> Path:
    from netsleuth.jobs.fuzz import FuzzOptions, fuzz
    from netsleuth.schedulers.fuzz import Rates

    rates = Rates({"traffic": 0.5, "host_migration": 0.01, "switch_failure": 0.005, "switch_recovery": 0.2,
                   "link_failure": 0.01, "link_recovery": 0.2})
    fuzz(FuzzOptions("osken:os_ken.app.simple_switch", "linear,4", out, steps=steps, seed=seed, rates=rates,
                     keep_going=True, round_seconds=0.02))
    return out / "trace.jsonl"


def timed(fn):
    t0 = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - t0


def cpu_timed(fn):
    """``fn()``'s CPU seconds (this process's, all threads): what a shared, loaded machine leaves
    comparable between two measurements, where wall time also counts the waits for a core."""
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def time_reading(path: Path, rounds: int) -> dict:
    """Reading ``path`` with validation off and on, alternating; each figure the median of ``rounds``
    (wall and CPU seconds), each validated read starting with nothing remembered from earlier ones."""
    check = validate.TraceValidator.check
    off: list[tuple[float, float]] = []
    on: list[tuple[float, float]] = []
    again: list[tuple[float, float]] = []   # validated, with what the read before found valid remembered

    def one() -> tuple[float, float]:
        t0 = time.perf_counter()
        cpu = cpu_timed(lambda: read_trace(path))
        return time.perf_counter() - t0, cpu

    for _ in range(rounds):
        validate.TraceValidator.check = lambda self, ev, line=None: None  # bench only: the unvalidated path
        try:
            off.append(one())
        finally:
            validate.TraceValidator.check = check
        validate.forget_checked()
        on.append(one())
        again.append(one())
    wall_off, wall_on = (statistics.median(w for w, _c in xs) for xs in (off, on))
    cpu_off, cpu_on = (statistics.median(c for _w, c in xs) for xs in (off, on))
    return {"seconds": round(wall_on, 4), "unvalidated_seconds": round(wall_off, 4),
            "ratio": round(wall_on / wall_off, 3), "cpu_seconds": round(cpu_on, 4),
            "unvalidated_cpu_seconds": round(cpu_off, 4), "cpu_ratio": round(cpu_on / cpu_off, 3),
            "again_cpu_seconds": round(statistics.median(c for _w, c in again), 4),
            "again_cpu_ratio": round(statistics.median(c for _w, c in again) / cpu_off, 3), "rounds": rounds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, help="an existing trace (default: record one)")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--read-rounds", type=int, default=15, help="rounds of the reading before/after (median)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-tools-"))
    path = args.trace or record(tmp / "fuzz", args.steps, args.seed)
    validate.forget_checked()
    trace, t_first = timed(lambda: read_trace(path))
    events = trace.events
    n_of = sum(1 for e in events if isinstance(e, (ts.ControlToSwitch, ts.ControlToController)))
    rows: dict[str, dict] = {"read": {**time_reading(path, args.read_rounds), "first_seconds": round(t_first, 4)}}

    export, t = timed(lambda: build_pcap(events, dataplane=True))
    pcap = tmp / "all.pcap"
    pcap.write_bytes(export.data)
    rows["pcap"] = {"seconds": round(t, 4), "frames": export.frames, "of_messages": n_of}
    if shutil.which("tshark"):
        proc, t = timed(lambda: subprocess.run(["tshark", "-r", str(pcap), "-Y", "openflow_v1", "-T", "fields",
                                                "-e", "openflow_1_0.type", "-E", "occurrence=a",
                                                "-E", "aggregator=,"], capture_output=True, text=True))
        decoded = sum(len(line.split(",")) for line in proc.stdout.split())
        rows["tshark"] = {"seconds": round(t, 4), "decoded": decoded, "of_messages": n_of,
                          "decoded_fraction": round(decoded / n_of, 4) if n_of else None}

    d, t = timed(lambda: diff_events(events, events))
    rows["diff"] = {"seconds": round(t, 4), "common": d.common}

    r, t = timed(lambda: reduce_trace(trace, at_end=True))
    rows["reduce"] = {"seconds": round(t, 4), "flow_mods": len(r.kept) + len(r.dropped), "kept": len(r.kept),
                      "dropped_by_reason": r.reasons()}

    times, outcomes = [], {}
    for e in events:
        if isinstance(e, ts.TrafficInjection):
            rep, t = timed(lambda e=e: trace_packet(trace, e.id))
            times.append(t)
            outcomes[rep.outcome] = outcomes.get(rep.outcome, 0) + 1
    rows["trace-packet"] = {"packets": len(times), "median_seconds": round(statistics.median(times), 4) if times
                            else None, "max_seconds": round(max(times), 4) if times else None,
                            "outcomes": dict(sorted(outcomes.items()))}

    table = Table(title=f"netsleuth trace tools on {len(events)} events ({path})")
    table.add_column("tool")
    table.add_column("seconds", justify="right")
    table.add_column("figures")
    for name, row in rows.items():
        secs = row.get("seconds", row.get("median_seconds"))
        table.add_row(name, f"{secs}" + (" (median)" if "median_seconds" in row else ""),
                      ", ".join(f"{k}={v}" for k, v in row.items() if not k.endswith("seconds")))
    Console().print(table)
    read = rows["read"]
    print(f"reading {len(events)} events, medians of {read['rounds']} alternating rounds: "
          f"before (validation off) {read['unvalidated_seconds']:.4f} s, after (validated) {read['seconds']:.4f} s: "
          f"{read['ratio']:.2f}x; CPU {read['unvalidated_cpu_seconds']:.4f} s -> {read['cpu_seconds']:.4f} s: "
          f"{read['cpu_ratio']:.2f}x; read again in the same process {read['again_cpu_seconds']:.4f} s: "
          f"{read['again_cpu_ratio']:.2f}x")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"trace": str(path), "events": len(events), "of_messages": n_of,
                                   "python": platform.python_version(), "results": rows}, indent=2,
                                  sort_keys=True) + "\n")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
