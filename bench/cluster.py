"""BigBug clustering benchmark: seconds per SDNRacer trace, and agreement with the original BigBug.

For every ``*.hb.json`` in the corpus (by default the SDNRacer trace corpus beside the checkout; ``--corpus DIR``)
this runs :func:`netsleuth.races.cluster_job.cluster_races` (race detection
included; best of ``--repeat`` runs in this process), prints a rich table
(race detection / subgraphs / features / clustering and ranking / total
seconds, harmful races, isomorphism classes, final clusters, cluster sizes, agreement with
``reference.json``'s ``bigbug`` numbers) and writes ``bench/results/cluster.json``.
The original BigBug needed ~990 s on the Floodlight load balancer; the goal
here is every trace under 10 s.

``--baseline`` also clusters every trace once with the earlier isomorphism
path (VF2 on every comparison, ``iso_method="vf2"``) on the same race report,
prints its clustering seconds beside the default path's, and checks that
both give the same isomorphism classes and the same clusters (members and
representatives, in order).  On the Floodlight load balancer on a star
(2,214 harmful races) the baseline alone takes about a minute.

    .venv/bin/python bench/cluster.py
    .venv/bin/python bench/cluster.py --repeat 5 --baseline
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

RESULTS = ROOT / "bench" / "results" / "cluster.json"
GOAL_SECONDS = 10.0
COMPARED = ("races", "iso_clusters", "final_clusters", "cluster_sizes")


def _clusters(rep) -> tuple:
    """Everything the clustering decides, in race identities independent of list order."""
    return ([[rep.race_key(i) for i in c] for c in rep.clustering.iso],
            [([rep.race_key(i) for i in c.members], rep.race_key(c.representative)) for c in rep.clusters])


def run_one(path: Path, ref: dict | None, repeat: int, baseline: bool = False) -> dict:
    from netsleuth.races.cluster_job import cluster_races

    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        rep = cluster_races(path)
        wall = time.perf_counter() - t0
        if best is None or wall < best[0]:
            best = (wall, rep)
    wall, rep = best
    d = rep.to_json()
    row = {"trace": path.name[: -len(".hb.json")], "seconds": round(wall, 4), "phases": d["phases"],
           "events": len(rep.races.graph), "races": d["races"], "iso_clusters": d["iso_clusters"],
           "final_clusters": d["final_clusters"], "cluster_sizes": d["cluster_sizes"], "iso": d["iso"],
           "under_goal": wall < GOAL_SECONDS}
    if baseline:
        t0 = time.perf_counter()
        old = cluster_races(path, report=rep.races, iso_method="vf2")
        row["baseline_wall"] = round(time.perf_counter() - t0, 4)
        row["baseline_clustering"] = round(old.seconds["clustering"], 4)
        row["same_as_baseline"] = _clusters(old) == _clusters(rep)
    bb = (ref or {}).get("bigbug")
    if bb is not None:
        diff = {k: {"ours": row[k], "bigbug": bb[k]} for k in COMPARED if k in bb and row[k] != bb[k]}
        row["agrees_with_bigbug"] = not diff
        if diff:
            row["differences"] = diff
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS,
                    help="directory with traces/*.hb.json and reference.json")
    ap.add_argument("--repeat", type=int, default=3, help="runs per trace; the fastest counts")
    ap.add_argument("--baseline", action="store_true",
                    help="also run the earlier VF2-only isomorphism path and compare (slow on big traces)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)

    from rich.console import Console
    from rich.table import Table

    traces, reference = load_corpus(args.corpus)
    rows = [run_one(p, reference.get(p.name[: -len(".hb.json")]), max(1, args.repeat),
                    args.baseline) for p in traces]

    table = Table(title="netsleuth cluster (BigBug): SDNRacer corpus (seconds)")
    for col in ("trace", "events", "detect", "subgr", "feat", "clust", "total", "races", "iso", "final", "sizes",
                "=BigBug") + (("clust before", "same") if args.baseline else ()):
        table.add_column(col, justify="left" if col in ("trace", "sizes") else "right", no_wrap=True,
                         min_width=len(col))
    for r in rows:
        ph = r["phases"]
        agree = r.get("agrees_with_bigbug")
        short = r["trace"].replace("Topology", "").replace("-steps200", "")
        sizes = ",".join(map(str, r["cluster_sizes"]))
        table.add_row(short, str(r["events"]), f"{ph.get('races', 0):.3f}", f"{ph['subgraphs']:.3f}",
                      f"{ph['features']:.3f}", f"{ph['clustering'] + ph['ranking']:.3f}", f"{r['seconds']:.3f}",
                      str(r["races"]), str(r["iso_clusters"]), str(r["final_clusters"]),
                      sizes if len(sizes) < 24 else sizes[:21] + "...",
                      "-" if agree is None else ("yes" if agree else "NO"),
                      *((f"{r['baseline_clustering']:.3f}", "yes" if r["same_as_baseline"] else "NO")
                        if args.baseline else ()))
    total = sum(r["seconds"] for r in rows)
    worst = max(rows, key=lambda r: r["seconds"])
    compared = [r for r in rows if "agrees_with_bigbug" in r]
    console = Console(width=None if sys.stdout.isatty() else 150)
    console.print(table)
    console.print(f"total {total:.2f} s, worst {worst['seconds']:.2f} s ({worst['trace']}); "
                  f"{sum(r['under_goal'] for r in rows)}/{len(rows)} under {GOAL_SECONDS:g} s; "
                  f"{sum(1 for r in compared if r['agrees_with_bigbug'])}/{len(compared)} agree with BigBug "
                  f"({len(rows) - len(compared)} without reference numbers)")
    if args.baseline:
        before = sum(r["baseline_clustering"] for r in rows)
        after = sum(r["phases"]["clustering"] for r in rows)
        console.print(f"clustering phase, same run: before (VF2 on every comparison) {before:.2f} s, "
                      f"after {after:.2f} s; same clusters on "
                      f"{sum(r['same_as_baseline'] for r in rows)}/{len(rows)} traces")

    try:
        from importlib.metadata import version
        ns_version = version("netsleuth")
    except Exception:  # noqa: BLE001 - not installed as a distribution
        ns_version = None
    out = {
        "benchmark": "cluster",
        "corpus": str(args.corpus),
        "repeat": args.repeat,
        "baseline": args.baseline,
        "goal_seconds": GOAL_SECONDS,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "python": platform.python_version(), "netsleuth": ns_version},
        "total_seconds": round(total, 4),
        "worst_seconds": worst["seconds"],
        "worst_trace": worst["trace"],
        "results": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
