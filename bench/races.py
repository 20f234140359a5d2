"""Race-detection benchmark: seconds per SDNRacer trace, and agreement with SDNRacer.

For every ``*.hb.json`` in the corpus (by default the SDNRacer trace corpus beside the checkout; ``--corpus DIR``)
this runs :func:`netsleuth.races.job.detect_races` with the settings
``reference.json`` records for the trace (best of ``--repeat`` runs, each in
this process), prints a rich table (load / graph / detect / total seconds,
races, harmful, agreement with the reference) and writes
``bench/results/races.json``.

    .venv/bin/python bench/races.py
    .venv/bin/python bench/races.py --repeat 5 --data-deps
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

from _corpus import DEFAULT_CORPUS, load_corpus  # noqa: E402  (bench/ is on sys.path when run)

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "bench" / "results" / "races.json"
COMPARED = ("races", "commute", "time_filtered_races", "harmful", "read", "writes", "time_edges", "per_pkt_races")


def run_one(path: Path, ref: dict | None, repeat: int, data_deps: bool | None) -> dict:
    from netsleuth.races.job import detect_races

    s = (ref or {}).get("sdnracer_settings", {})
    kwargs = {"delta": float(s.get("rw_delta", 2)), "time_edges": bool(s.get("hb_time_edges", True)),
              "data_deps": bool(s.get("data_deps", False)) if data_deps is None else data_deps}
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        rep = detect_races(path, **kwargs)
        wall = time.perf_counter() - t0
        if best is None or wall < best[0]:
            best = (wall, rep)
    wall, rep = best
    summary = rep.summary()
    ours = {**summary, "commute": summary["commuting"]}
    row = {"trace": path.name[: -len(".hb.json")], "settings": kwargs, "seconds": round(wall, 4),
           "phases": {k: round(v, 4) for k, v in rep.seconds.items()}, **summary}
    if ref is not None and data_deps in (None, bool(s.get("data_deps", False))):
        theirs = {k: ref["sdnracer"][k] for k in COMPARED}
        theirs["events"] = ref["events"]
        diff = {k: {"ours": ours[k], "sdnracer": theirs[k]} for k in theirs if ours[k] != theirs[k]}
        row["agrees_with_sdnracer"] = not diff
        if diff:
            row["differences"] = diff
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS,
                    help="directory with traces/*.hb.json and reference.json")
    ap.add_argument("--repeat", type=int, default=3, help="runs per trace; the fastest counts")
    ap.add_argument("--data-deps", action="store_true", help="also add data-dependency edges (covered races)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)

    from rich.console import Console
    from rich.table import Table

    traces, reference = load_corpus(args.corpus)
    rows = [run_one(p, reference.get(p.name[: -len(".hb.json")]), max(1, args.repeat),
                    True if args.data_deps else None) for p in traces]

    table = Table(title="netsleuth races: SDNRacer corpus (seconds)")
    for col in ("trace", "events", "load", "graph", "detect", "total", "races", "harmful", "covered",
                "=SDNRacer"):
        table.add_column(col, justify="left" if col == "trace" else "right", no_wrap=True,
                         min_width=len(col))
    for r in rows:
        ph = r["phases"]
        agree = r.get("agrees_with_sdnracer")
        short = r["trace"].replace("Topology", "").replace("-steps200", "")
        table.add_row(short, str(r["events"]), f"{ph['load']:.3f}", f"{ph['graph']:.3f}",
                      f"{ph['detect']:.3f}", f"{r['seconds']:.3f}", str(r["races"]), str(r["harmful"]),
                      str(r["covered"]), "-" if agree is None else ("yes" if agree else "NO"))
    total = sum(r["seconds"] for r in rows)
    worst = max(rows, key=lambda r: r["seconds"])
    compared = [r for r in rows if "agrees_with_sdnracer" in r]
    console = Console(width=None if sys.stdout.isatty() else 120)
    console.print(table)
    console.print(f"total {total:.2f} s, worst {worst['seconds']:.2f} s ({worst['trace']}); "
                  + (f"{sum(1 for r in compared if r['agrees_with_sdnracer'])}/{len(compared)} agree with SDNRacer"
                     if compared else "not compared with SDNRacer (other settings)"))

    try:
        from importlib.metadata import version
        ns_version = version("netsleuth")
    except Exception:  # noqa: BLE001 - not installed as a distribution
        ns_version = None
    out = {
        "benchmark": "races",
        "corpus": str(args.corpus),
        "repeat": args.repeat,
        "data_deps": args.data_deps,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "python": platform.python_version(), "netsleuth": ns_version},
        "total_seconds": round(total, 4),
        "worst_seconds": worst["seconds"],
        "results": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
