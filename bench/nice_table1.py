"""NICE Table 1: exhaustive search of pyswitch on h1 - s1 - s2 - h2, N pings, plain DFS.

h1 sends N pings without waiting for answers, h2 answers each, no symbolic
execution, no properties (NICE's benchmark model checks none), full DFS with
state matching.  For each N this prints transitions, unique states and
seconds, forward and with the enabled set explored in reverse order, beside
NICE's published numbers, and writes ``bench/results/nice_table1.json``.
An ablation row (N <= 3) drops the switches' command queues from the state
hash the way NICE's ``dump_equivalent_state`` did: distinct states then
collide and are never explored (fewer unique states than really exist); in
general which of the colliding states is explored -- and so the counts --
depends on the exploration order.

    .venv/bin/python bench/nice_table1.py                # N = 2, 3, 4, 5
    .venv/bin/python bench/nice_table1.py --pings 2 3 4  # skip the long one
    .venv/bin/python bench/nice_table1.py --baseline     # also the earlier path, same run
    .venv/bin/python bench/nice_table1.py --pings 4 5 --before e8f2bae --repeat 3  # a commit vs this tree

**Before/after a commit** (``--before REV``): ``git archive REV`` is unpacked
in a temporary directory and the same full search (forward and reverse) runs
from it and from this tree, alternately, each run in a fresh subprocess
(``--one``), ``--repeat`` times; the best CPU time of each side is reported
(on a machine shared with other work the best run is the least disturbed)
with its transitions per CPU second and peak memory, and the counts must be
identical; each side also runs the ``--dpor`` search once per order, whose
counts must be identical too.

**Baseline rows** (``--baseline``): the same full search with the earlier
path -- every switch and controller step computed afresh (``System.memo =
False``) and every new state hashed through its whole key tuple
(``SystemState.incremental_hash = False``) -- so the speed-up is measured in
one run on one machine.  The counts must be identical.  Every row also has
its CPU seconds (``time.process_time``): on a shared machine the wall clock
swings with the load, and the CPU times are the fairer before/after figure.

**DPOR rows** (``--no-dpor`` skips them): the same search with ``--dpor``, i.e.
persistent sets from predicted footprints plus the stack proviso
(netsleuth/nice/stubborn.py, explore.py), in both orders; their unique states
and transitions are printed as a fraction of the full search's.  They are
smaller than the full counts, not order-independent: which persistent set is
chosen depends on the order of the enabled set.

Why the counts differ from NICE's (530/315, 14,762/6,317, 356,469/121,320,
7,816,517/2,245,345):

* **NICE splits states that are the same.**  Its state hash serialized every
  node's list of enabled actions in the order they were enabled (history,
  not state), took buffer ids from a LIFO free list (so the same packets sit
  under ids that depend on the past), and kept packet objects with
  bookkeeping fields.  Here flow tables are canonical, enabled transitions are
  derived from the state instead of stored, and buffer ids are the lowest
  free ones.  This makes our counts *smaller*: 0.93, 0.72, 0.57 and 0.49 of NICE's transitions for
  N = 2..5 (the gap grows with N, as history-dependent splitting compounds).
* **NICE also merged states that differ.**  Its switch hash replaced the
  command queue by an empty list (a loop called ``copy_state`` without
  storing the result), so states differing only in queued controller
  commands collided and its counts depend on exploration order.  We hash the
  queues in both directions; the ablation row shows what dropping them does.
* **Pings are ICMP echoes** (sequence numbers; replies echo them), so h2's
  replies are distinguishable, where NICE's layer-2 replies were identical
  frames.  That makes our counts *larger* than a NICE-identical host model
  would.  ARP is pre-resolved, so there is no ARP traffic (NICE had none).
* **The initial state is counted** as a unique state (NICE counted states
  reached by a transition): +1.
* The transition model is NICE's: a switch's process_pkt takes the head of
  every input port at once, process_of one controller message; the
  controller handles one PACKET_IN per transition per switch channel; hosts
  send, receive and reply in separate transitions; switches join before the
  search; pyswitch installs its rule and releases the buffered packet in one
  FLOW_MOD (NOX's ``install_datapath_flow`` with a buffer id).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "bench" / "results" / "nice_table1.json"
NICE = {2: (530, 315, "1.1 s"), 3: (14_762, 6_317, "37.24 s"), 4: (356_469, 121_320, "17 min"),
        5: (7_816_517, 2_245_345, "8 h")}


def run(n: int, order: str, unsound: bool = False, dpor: bool = False, baseline: bool = False) -> dict:
    from netsleuth.nice.explore import Explorer, SearchOptions
    from netsleuth.nice.loading import make_system
    from netsleuth.nice.scenarios import build_config
    from netsleuth.nice.state import SystemState

    # unsound: NICE's hash, in which the switches' command queues are not part of the state
    SystemState.hash_command_queues = not unsound
    SystemState.incremental_hash = not baseline
    try:
        system = make_system(build_config("app:pyswitch", scenario="pings", pings=n))
        system.memo = not baseline
        cpu0 = time.process_time()
        r = Explorer(system, SearchOptions(order=order, dpor=dpor)).run()
        cpu = time.process_time() - cpu0
    finally:
        SystemState.hash_command_queues = True
        SystemState.incremental_hash = True
    return {"pings": n, "order": order, "hash": "nice-like (no command queues)" if unsound else "sound",
            "path": "baseline" if baseline else "current", "dpor": dpor, "dpor_note": r.dpor_note,
            "transitions": r.transitions, "unique_states": r.unique_states, "seconds": round(r.seconds, 2),
            "transitions_per_second": round(r.rate()), "cpu_seconds": round(cpu, 3),
            "transitions_per_cpu_second": round(r.transitions / cpu) if cpu > 0 else None, "completed": r.completed}


def _one(root: str, n: int, order: str, dpor: bool = False) -> dict:
    """One search with the netsleuth under ``root``, in a fresh subprocess (``--one``)."""
    out = subprocess.run([sys.executable, __file__, "--one", str(n), order, root] + (["dpor"] if dpor else []),
                         capture_output=True, text=True, check=True, cwd=root)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _peak_rss_mb() -> int | None:
    """This process's peak resident memory: VmHWM, which starts afresh at exec (``ru_maxrss`` keeps
    the parent's peak across fork and exec, so a child of a big bench would report the bench's)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024)
    except OSError:
        pass
    return None


def before_after(rev: str, pings: list[int], repeat: int) -> list[dict]:
    """The full search from commit ``rev`` and from this tree, alternately (see the docstring)."""
    tmp = Path(tempfile.mkdtemp(prefix="nice-table1-before-"))
    try:
        archive = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
        out = []
        for n in pings:
            for order in ("forward", "reverse"):
                runs: dict[str, list[dict]] = {"before": [], "after": []}
                for _ in range(repeat):
                    runs["before"].append(_one(str(tmp), n, order))
                    runs["after"].append(_one(str(ROOT), n, order))
                b = min(runs["before"], key=lambda r: r["cpu_seconds"])
                a = min(runs["after"], key=lambda r: r["cpu_seconds"])
                row = {"pings": n, "order": order, "before": rev, "runs": repeat,
                       "counts_identical": all((r["transitions"], r["unique_states"])
                                               == (a["transitions"], a["unique_states"])
                                               for r in runs["before"] + runs["after"]),
                       "transitions": a["transitions"], "unique_states": a["unique_states"],
                       "before_cpu_seconds": b["cpu_seconds"], "after_cpu_seconds": a["cpu_seconds"],
                       "before_transitions_per_cpu_second": round(b["transitions"] / b["cpu_seconds"]),
                       "after_transitions_per_cpu_second": round(a["transitions"] / a["cpu_seconds"]),
                       "before_cpu_seconds_all": [r["cpu_seconds"] for r in runs["before"]],
                       "after_cpu_seconds_all": [r["cpu_seconds"] for r in runs["after"]],
                       "cpu_speedup": round(b["cpu_seconds"] / a["cpu_seconds"], 2),
                       "before_max_rss_mb": max(r["max_rss_mb"] or 0 for r in runs["before"]),
                       "after_max_rss_mb": max(r["max_rss_mb"] or 0 for r in runs["after"])}
                # with --dpor: the same counts before and after (one run each; not timed for the goal)
                db, da = _one(str(tmp), n, order, dpor=True), _one(str(ROOT), n, order, dpor=True)
                row["dpor_counts"] = [da["transitions"], da["unique_states"]]
                row["dpor_counts_identical"] = ((db["transitions"], db["unique_states"])
                                                == (da["transitions"], da["unique_states"]))
                row["dpor_before_after_cpu_seconds"] = [db["cpu_seconds"], da["cpu_seconds"]]
                out.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    if len(sys.argv) in (5, 6) and sys.argv[1] == "--one":  # internal: one search, the netsleuth under argv[4]
        sys.path.insert(0, sys.argv[4])
        row = run(int(sys.argv[2]), sys.argv[3], dpor=sys.argv[5:] == ["dpor"])
        row["max_rss_mb"] = _peak_rss_mb()
        print(json.dumps(row))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pings", type=int, nargs="+", default=[2, 3, 4, 5])
    ap.add_argument("--before", metavar="REV",
                    help="also run the full search from git commit REV, alternately with this tree (fresh processes)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per side with --before (the best CPU time is kept)")
    ap.add_argument("--only-before", action="store_true", help="with --before: only the before/after rows")
    ap.add_argument("--out", type=Path, default=RESULTS, help=f"where to write the JSON (default {RESULTS})")
    ap.add_argument("--no-ablation", action="store_true", help="skip the NICE-like hash rows")
    ap.add_argument("--no-dpor", action="store_true", help="skip the --dpor rows")
    ap.add_argument("--baseline", action="store_true",
                    help="also run the full search with the earlier path (no memo, whole-key hashing)")
    args = ap.parse_args()
    from rich.console import Console
    from rich.table import Table

    if args.before and args.only_before:
        rows_ba = before_after(args.before, args.pings, args.repeat)
        _print_before_after(rows_ba)
        _write(args.out, {"before_after_commit": rows_ba})
        return 0
    rows = []
    for n in args.pings:
        for order in ("forward", "reverse"):
            rows.append(run(n, order))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
            if args.baseline:
                rows.append(run(n, order, baseline=True))
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        if not args.no_dpor:
            for order in ("forward", "reverse"):
                rows.append(run(n, order, dpor=True))
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        if not args.no_ablation and n <= 3:
            for order in ("forward", "reverse"):
                rows.append(run(n, order, unsound=True))
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    table = Table(title="NICE Table 1: pyswitch, h1-s1-s2-h2, N pings, full DFS")
    for col in ("pings", "hash", "path", "dpor", "order", "transitions", "unique states", "seconds", "trans/s",
                "cpu s", "trans/cpu s",
                "NICE transitions", "NICE unique", "NICE time"):
        table.add_column(col, justify="right")
    for r in rows:
        nt, nu, ntime = NICE.get(r["pings"], ("", "", ""))
        table.add_row(str(r["pings"]), r["hash"], r["path"], "yes" if r["dpor"] else "", r["order"],
                      f"{r['transitions']:,}", f"{r['unique_states']:,}",
                      f"{r['seconds']}", f"{r['transitions_per_second']:,}", f"{r['cpu_seconds']}",
                      f"{r['transitions_per_cpu_second'] or 0:,}", f"{nt:,}" if nt else "",
                      f"{nu:,}" if nu else "", ntime)
    Console(width=200).print(table)
    sound = [r for r in rows if r["hash"] == "sound" and not r["dpor"]]
    same = all((a["transitions"], a["unique_states"]) == (b["transitions"], b["unique_states"])
               for a in sound for b in sound if a["pings"] == b["pings"])
    print(f"sound hash: forward and reverse{' and baseline' if args.baseline else ''} counts identical: {same}")
    speedups = []
    for r in sound:
        if r["path"] == "baseline":
            cur = next(c for c in sound
                       if c["path"] == "current" and (c["pings"], c["order"]) == (r["pings"], r["order"]))
            sp = {"pings": r["pings"], "order": r["order"], "before_seconds": r["seconds"],
                  "after_seconds": cur["seconds"], "before_cpu_seconds": r["cpu_seconds"],
                  "after_cpu_seconds": cur["cpu_seconds"],
                  "cpu_speedup": round(r["cpu_seconds"] / cur["cpu_seconds"], 2) if cur["cpu_seconds"] else None}
            speedups.append(sp)
            print(f"N={r['pings']} {r['order']}: before {r['seconds']} s wall, {r['cpu_seconds']} s CPU "
                  f"({r['transitions_per_cpu_second'] or 0:,}/CPU s); after {cur['seconds']} s wall, "
                  f"{cur['cpu_seconds']} s CPU ({cur['transitions_per_cpu_second'] or 0:,}/CPU s); "
                  f"CPU x{sp['cpu_speedup']}")
    full = {(r["pings"], r["order"]): r for r in sound if r["path"] == "current"}
    dpor_rows = []
    for r in rows:
        f = full.get((r["pings"], r["order"]))
        if r["dpor"] and f is not None:
            d = {"pings": r["pings"], "order": r["order"],
                 "unique_states_ratio": round(r["unique_states"] / f["unique_states"], 3),
                 "transitions_ratio": round(r["transitions"] / f["transitions"], 3)}
            dpor_rows.append(d)
            print(f"--dpor N={r['pings']} {r['order']}: unique states {r['unique_states']:,} / {f['unique_states']:,} "
                  f"= {d['unique_states_ratio']}, transitions {r['transitions']:,} / {f['transitions']:,} "
                  f"= {d['transitions_ratio']}")
    result = {"rows": rows, "order_independent": same, "dpor_vs_full": dpor_rows, "before_after": speedups}
    if args.before:
        result["before_after_commit"] = before_after(args.before, args.pings, args.repeat)
        _print_before_after(result["before_after_commit"])
    _write(args.out, result)
    return 0


def _print_before_after(rows: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"full search, before ({rows[0]['before'] if rows else ''}) and after, best CPU of each")
    for col in ("pings", "order", "transitions", "unique states", "before cpu s", "before trans/cpu s",
                "after cpu s", "after trans/cpu s", "speedup", "counts identical", "peak MB before/after",
                "--dpor counts", "identical"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(str(r["pings"]), r["order"], f"{r['transitions']:,}", f"{r['unique_states']:,}",
                      f"{r['before_cpu_seconds']}", f"{r['before_transitions_per_cpu_second']:,}",
                      f"{r['after_cpu_seconds']}", f"{r['after_transitions_per_cpu_second']:,}",
                      f"x{r['cpu_speedup']}", str(r["counts_identical"]),
                      f"{r['before_max_rss_mb']}/{r['after_max_rss_mb']}",
                      "{:,} / {:,}".format(*r["dpor_counts"]), str(r["dpor_counts_identical"]))
    Console(width=200).print(table)


def _write(path: Path, result: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"benchmark": "nice_table1", "python": platform.python_version(),
                                   "machine": platform.machine(), "cpus": os.cpu_count(),
                                   "when": time.strftime("%Y-%m-%d"), "nice": {str(k): v for k, v in NICE.items()},
                                   **result}, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
