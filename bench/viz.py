"""How fast the space-time diagram of a 1,000-event trace renders in headless Chromium.

The trace is real: a fuzz run of os-ken simple_switch on linear,3 with
plenty of traffic (every packet hop recorded), cut to its first N events
(1,000 by default). For it the script reports

* ``html_seconds``: writing the page (layout in Python);
* ``render_ms``: the page's own script, from its first line to the last SVG
  element (``performance.now()``, read back from the DOM Chromium dumps);
* ``chromium_seconds``: wall time of ``chromium --headless --dump-dom`` on
  the page, browser start-up included, and the same for an empty page
  (``blank_seconds``), so the difference (``diagram_seconds``) is what the
  diagram costs over the browser's own start-up;
* ``screenshot_seconds``: the same with ``--screenshot``.

Each Chromium figure is the median of ``--repeat`` runs. Prints a table and
writes ``bench/results/viz.json``.

    .venv/bin/python bench/viz.py [--events 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import platform
import re
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

RESULTS = ROOT / "bench" / "results" / "viz.json"


def chromium(url: str, *mode: str) -> tuple[float, str]:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        sys.exit("chromium is not installed (make setup installs the Debian package)")
    with tempfile.TemporaryDirectory() as profile:
        t0 = time.perf_counter()
        p = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                            "--disable-background-networking", "--disable-component-update", "--disable-sync",
                            f"--user-data-dir={profile}", "--window-size=1400,900", *mode, url],
                           capture_output=True, text=True, timeout=120)
        return time.perf_counter() - t0, p.stdout


def record(work: Path, n: int):
    from netsleuth.jobs.fuzz import FuzzOptions, fuzz
    from netsleuth.schedulers.fuzz import Rates
    from netsleuth.trace import schema as ts
    from netsleuth.trace.io import read_trace

    rates = Rates({"traffic": 0.8, "host_migration": 0.02, "link_failure": 0.02, "link_recovery": 0.2})
    fuzz(FuzzOptions("osken:os_ken.app.simple_switch", "linear,3", work / "fuzz", steps=200, seed=7, rates=rates,
                     keep_going=True))
    trace = read_trace(work / "fuzz" / "trace.jsonl")
    if len(trace.events) < n:
        sys.exit(f"the fuzz run recorded only {len(trace.events)} events, fewer than {n}")
    return ts.Trace(trace.header, trace.events[:n])


def main() -> int:
    from rich.console import Console
    from rich.table import Table

    from netsleuth.rootcause.viz import write_html

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        trace = record(work, args.events)
        page = work / "diagram.html"
        t0 = time.perf_counter()
        summary = write_html([trace], ["bench"], page)
        html_seconds = time.perf_counter() - t0
        blank = work / "blank.html"
        blank.write_text("<!DOCTYPE html><html><body></body></html>")
        blank_runs = [chromium(blank.as_uri(), "--dump-dom")[0] for _ in range(args.repeat)]
        runs, render_ms, drawn = [], [], 0
        for _ in range(args.repeat):
            seconds, dom = chromium(page.as_uri(), "--dump-dom")
            runs.append(seconds)
            render_ms.append(float(re.search(r'data-render-ms="([\d.]+)"', dom).group(1)))
            drawn = int(re.search(r'data-rendered="(\d+)"', dom).group(1))
        shots = [chromium(page.as_uri(), f"--screenshot={work / 'shot.png'}")[0] for _ in range(args.repeat)]
        result = {
            "events": len(trace.events), "columns": summary["columns"], "svg_items": drawn,
            "html_bytes": page.stat().st_size, "html_seconds": round(html_seconds, 3),
            "render_ms": round(statistics.median(render_ms), 1),
            "chromium_seconds": round(statistics.median(runs), 3),
            "chromium_min_seconds": round(min(runs), 3),
            "blank_seconds": round(statistics.median(blank_runs), 3),
            "diagram_seconds": round(statistics.median(runs) - statistics.median(blank_runs), 3),
            "screenshot_seconds": round(statistics.median(shots), 3),
            "repeat": args.repeat, "machine": platform.platform(), "python": platform.python_version(),
        }
    table = Table(title=f"netsleuth viz: {result['events']}-event trace in headless Chromium", show_header=False)
    for k in ("events", "svg_items", "html_bytes", "html_seconds", "render_ms", "chromium_seconds",
              "chromium_min_seconds", "blank_seconds", "diagram_seconds", "screenshot_seconds"):
        table.add_row(k, str(result[k]))
    Console().print(table)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
