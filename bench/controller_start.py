"""What a controller start costs: cold (a fresh interpreter under guard.py) against warm (forked from
the warm-start server, controllers/warm_osken.py), in turns in the same process.

For each start of ``--app`` (simple_switch_13 by default) it measures the
wall time from ``ControllerProcess.start()`` until the controller listens,
and the CPU the controller process has used by then (its guard's too); the
warm-start server's own start (once per process) is measured and reported
apart.  Starts alternate cold, warm, cold, warm... so that the machine's
load hits both alike.  Prints min and median of each and the ratios, and
writes ``bench/results/controller_start.json``.

    .venv/bin/python bench/controller_start.py [--starts 10] [--app osken:os_ken.app.simple_switch_13]
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

import psutil
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from netsleuth.controllers import warm  # noqa: E402
from netsleuth.controllers.external import ControllerProcess  # noqa: E402
from netsleuth.trace.controller_spec import parse_all  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "controller_start.json"


def _cpu(pid: int | None) -> float:
    if pid is None:
        return 0.0
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def one_start(spec_text: str, log: Path, warm_start: bool) -> dict[str, float]:
    os.environ["NETSLEUTH_WARM_START"] = "1" if warm_start else "0"
    ctl = ControllerProcess(parse_all(spec_text)[0], log)
    t0 = time.monotonic()
    ctl.start()
    wall = time.monotonic() - t0
    try:
        assert isinstance(ctl.proc, warm.WarmProcess) == warm_start, "the start was not the kind asked for"
        controller, guard = _cpu(ctl.pid), _cpu(ctl.proc.pid if ctl.proc is not None else None)
    finally:
        ctl.stop()
    return {"wall_s": round(wall, 4), "controller_cpu_s": round(controller, 4), "guard_cpu_s": round(guard, 4)}


def summarize(rows: list[dict[str, float]]) -> dict[str, float]:
    out = {}
    for key in ("wall_s", "controller_cpu_s", "guard_cpu_s"):
        values = [r[key] for r in rows]
        out[f"{key}_min"] = round(min(values), 4)
        out[f"{key}_median"] = round(statistics.median(values), 4)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--starts", type=int, default=10, help="starts of each kind")
    ap.add_argument("--app", default="osken:os_ken.app.simple_switch_13", help="the controller spec")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    console = Console()
    kept = os.environ.get("NETSLEUTH_WARM_START")
    runs: dict[str, list[dict[str, float]]] = {"cold": [], "warm": []}
    with tempfile.TemporaryDirectory() as tmp:
        first = one_start(args.app, Path(tmp) / "first.log", True)   # starts the server too: apart
        starters = [s for s in warm._starters.values() if s is not None]
        server_cpu = _cpu(starters[0].proc.pid) if starters else 0.0
        with console.status("starting controllers") as status:
            for i in range(args.starts):
                for kind in ("cold", "warm"):
                    status.update(f"start {i + 1} of {args.starts}: {kind}")
                    runs[kind].append(one_start(args.app, Path(tmp) / f"{kind}-{i}.log", kind == "warm"))
    if kept is None:
        os.environ.pop("NETSLEUTH_WARM_START", None)
    else:
        os.environ["NETSLEUTH_WARM_START"] = kept
    cold, hot = summarize(runs["cold"]), summarize(runs["warm"])
    table = Table(title=f"{args.app}: {args.starts} starts of each kind, in turns")
    for col in ("", "wall to listening, min / median s", "controller CPU, min / median s"):
        table.add_column(col)
    for name, s in (("cold", cold), ("warm", hot)):
        table.add_row(name, f"{s['wall_s_min']:.3f} / {s['wall_s_median']:.3f}",
                      f"{s['controller_cpu_s_min']:.3f} / {s['controller_cpu_s_median']:.3f}")
    console.print(table)
    ratio_wall = hot["wall_s_median"] / cold["wall_s_median"]
    ratio_cpu = hot["controller_cpu_s_median"] / cold["controller_cpu_s_median"]
    console.print(f"warm / cold (medians): wall {ratio_wall:.2f}x, controller CPU {ratio_cpu:.2f}x; the server's own "
                  f"start: {server_cpu:.2f} CPU-s (once per netsleuth process; the first warm start, the server's "
                  f"included: {first['wall_s']:.2f} s)")
    result = {"app": args.app, "starts": args.starts, "cold": cold, "warm": hot, "runs": runs,
              "warm_over_cold_wall": round(ratio_wall, 3), "warm_over_cold_cpu": round(ratio_cpu, 3),
              "server_cpu_s": round(server_cpu, 3), "first_warm_start": first, "load_average": os.getloadavg()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
