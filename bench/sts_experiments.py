"""STS experiments: import every recorded run and compare netsleuth's verdicts with STS's.

The public STS experiments repository (``github.com/ucb-sts/experiments``) is
data, not part of this repository. Point ``--git-dir`` at a clone (or a bare
mirror) of it; every top-level ``<experiment>/events.trace`` or ``mcs.trace``
that is not empty (172 at its newest commit) is extracted with the
experiment's config files into a temporary folder, imported with
``import_sts``, checked for liveness at the end of the trace, and compared
with every ``InvariantViolation`` STS recorded (``sts_agreement``). Prints the
totals and writes ``bench/results/sts_experiments.json``.

    .venv/bin/python bench/sts_experiments.py --git-dir ~/src/experiments/.git
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "bench" / "results" / "sts_experiments.json"
_WANTED = re.compile(r"^[^/]+/((events|mcs)\.trace|[a-z_]*config\.py)$")


def extract(git_dir: Path, rev: str, dest: Path) -> list[Path]:
    """The experiments' traces (and their config files) at ``rev``, written under ``dest``."""
    def git(*args: str) -> bytes:
        return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True).stdout

    names = [n for n in git("ls-tree", "-r", "--name-only", rev).decode().splitlines() if _WANTED.match(n)]
    traces = []
    for name in names:
        try:
            data = git("show", f"{rev}:{name}")
        except subprocess.CalledProcessError:
            continue  # a large file the mirror does not hold
        out = dest / name
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
        if name.endswith(".trace") and data.strip():
            traces.append(out)
    return sorted(traces)


def run_one(trace: Path, work: Path) -> dict:
    from netsleuth.errors import NetsleuthError
    from netsleuth.jobs.invariants_on_trace import invariants_on_trace
    from netsleuth.jobs.sts_agreement import sts_agreement
    from netsleuth.openflow.codec import decode, msg_to_json
    from netsleuth.trace.importers import import_sts
    from netsleuth.trace.io import write_trace

    row: dict = {"experiment": f"{trace.parent.name}/{trace.name}"}
    t0 = time.perf_counter()
    try:
        report = import_sts(trace, decode_openflow=lambda b: msg_to_json(decode(b)))
        out = work / f"{trace.parent.name}__{trace.stem}.jsonl"
        write_trace(out, report.trace)
        row["topology"] = report.trace.header.topology_spec
        row["liveness"] = [v["message"] for v in invariants_on_trace(out, "liveness")["violations"]]
        try:
            d = sts_agreement(out)
            row["agreement"] = [{k: r.get(k) for k in ("sts_label", "sts_check", "status", "basis", "same_place",
                                                      "reason")}
                                for r in d["violations"]]
        except NetsleuthError as exc:
            row["no_sts_violation"] = exc.one_line()
    except NetsleuthError as exc:
        row["error"] = exc.one_line()
    row["seconds"] = round(time.perf_counter() - t0, 3)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--git-dir", type=Path, required=True, help="the .git of a clone of ucb-sts/experiments")
    ap.add_argument("--rev", default="HEAD", help="commit to read (default HEAD)")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="sts-experiments-") as tmp:
        traces = extract(args.git_dir, args.rev, Path(tmp) / "experiments")
        work = Path(tmp) / "imported"
        work.mkdir()
        for trace in traces:
            rows.append(run_one(trace, work))
    statuses = collections.Counter(a["status"] for r in rows for a in r.get("agreement", []))
    totals = {
        "experiments": len(rows),
        "errors": sum("error" in r for r in rows),
        "switches_not_connected": sum(any("not connected" in m for m in r.get("liveness", [])) for r in rows),
        "controller_not_running": sum(any("not running" in m for m in r.get("liveness", [])) for r in rows),
        "with_sts_violations": sum(bool(r.get("agreement")) for r in rows),
        "all_agree": sum(bool(r.get("agreement")) and all(a["status"] == "agrees" for a in r["agreement"])
                         for r in rows),
        "sts_violations": dict(sorted(statuses.items())),
        # an agreement resting on the recording's own record of the check (a controller's exit) is circular
        "agree_by_basis": dict(sorted(collections.Counter(a.get("basis") for r in rows for a in r.get("agreement", [])
                                                          if a["status"] == "agrees").items())),
        "seconds": round(sum(r["seconds"] for r in rows), 2),
    }
    print(json.dumps(totals, indent=2))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"totals": totals, "experiments": rows}, indent=1) + "\n")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
