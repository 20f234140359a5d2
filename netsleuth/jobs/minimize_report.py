"""The minimizer's human report: MCS size per iteration (PNG), the MCS's diagram, one HTML page.

``netsleuth minimize`` writes result.json for machines; people want to see
how fast delta debugging converged and what the minimal trace looks like.
This module writes, next to ``mcs.jsonl``:

* ``sizes.png``: inputs left after each iteration (size_plot.py: same bytes
  for the same data);
* ``mcs.html``: the space-time diagram of ``mcs.jsonl`` (rootcause/viz.py), and
  ``mcs-replay.html`` of a confirmation replay of the MCS when one is on disk;
* ``report.html``: target, before/after, the plot, the MCS in words, a link
  to the diagram.

Kept out of jobs/minimize.py so that file only calls :func:`write_report`.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from netsleuth.invariants.violation_text import violations_text
from netsleuth.jobs.report_topology import TOPOLOGY_CSS, topology_section
from netsleuth.jobs.size_plot import plot_sizes
from netsleuth.model.topology import Topology
from netsleuth.rootcause.viz import viz
from netsleuth.trace.io import read_trace


def write_report(out: Path, data: dict[str, Any]) -> dict[str, str]:
    """Write sizes.png, mcs.html (if mcs.jsonl exists) and report.html in ``out``; return their paths."""
    out = Path(out)
    iterations = data.get("iterations") or []
    sizes = [int(it["inputs"]) for it in iterations] or list(data.get("sizes") or [])
    passes = [str(it.get("pass", "")) for it in iterations] or [""] * len(sizes)
    files: dict[str, str] = {}
    plot = out / "sizes.png"
    plot_sizes(sizes, passes, plot)
    files["plot"] = str(plot)
    diagram = out / "mcs.html"
    if (out / "mcs.jsonl").exists():
        viz([out / "mcs.jsonl"], diagram)
        files["diagram"] = str(diagram)
    # mcs.jsonl keeps the original recording's internal events; a confirmation replay shows
    # what the controller does with the MCS alone.
    replayed = next((Path(d["dir"]) / "trace.jsonl" for d in data.get("mcs_details") or []
                     if isinstance(d, dict) and d.get("dir") and (Path(d["dir"]) / "trace.jsonl").exists()), None)
    if replayed is not None:
        viz([replayed], out / "mcs-replay.html")
        files["replay_diagram"] = str(out / "mcs-replay.html")
    report = out / "report.html"
    where = _where(out / "mcs.jsonl" if (out / "mcs.jsonl").exists() else data.get("trace"), data.get("target"))
    report.write_text(_page(data, sizes, passes, "diagram" in files, "replay_diagram" in files, where),
                      encoding="utf-8")
    files["html"] = str(report)
    return files


def _where(trace_path: object, target: dict[str, Any] | None) -> str:
    """The topology section of the trace the report is about (the MCS, else the original trace)."""
    if not trace_path or not Path(str(trace_path)).exists():
        return ""
    trace = read_trace(Path(str(trace_path)))
    return topology_section(Topology.from_json(trace.header.topology), trace.events, target or {})


DIAGRAM = """<h2 id="timeline">Space-time diagram of the MCS</h2>
<p>One lane per controller, switch and host, time left to right. The squares are the MCS's inputs (what
the minimizer kept), the red band is the violation; the lines between lanes are OpenFlow messages and packet
hops (the legend at the foot of the diagram gives their colours). Hover for details, wheel to zoom,
<a id="diagram" href="mcs.html">open it full-page</a>.</p>
<iframe id="diagram-frame" src="mcs.html" title="space-time diagram of the MCS"></iframe>
<script>
// Mark the frame once the diagram has drawn (when the browser lets a file: page look inside its
// frame): how many items it drew, or "loaded" alone.
document.getElementById("diagram-frame").addEventListener("load", ev => {
  let drawn = "loaded";
  try { drawn = ev.target.contentDocument.documentElement.getAttribute("data-rendered") || "loaded"; } catch (e) {}
  ev.target.setAttribute("data-loaded", drawn);
});
</script>"""


def localize_html(loc: dict[str, Any] | None) -> str:
    """The ranked source lines of ``minimize --localize`` (jobs/localize.py), with the code around each."""
    if not loc:
        return ""
    e = html.escape
    if loc.get("note"):
        return f'<h2 id="localize">Suspicious lines</h2><p>{e(loc["note"])}</p>'
    head = (f'<h2 id="localize">Suspicious lines</h2><p>{e(str(loc["formula"]))} over {loc["failing"]} failing and '
            f'{loc["passing"]} passing {e(str(loc.get("spectrum") or "replays"))}, {e(str(loc["scope"]))}.</p>')
    if loc.get("message"):
        head += f'<p class="thin">{e(loc["message"])}</p>'
    parts = [head]
    by_line = {(i["short"], i["line"]): i for i in loc.get("top", [])}
    for g in loc.get("groups", []):
        parts.append(f'<h3><code>{e(g["file"])}</code> &mdash; <code>{e(g["function"])}</code></h3>')
        for n in g["lines"]:
            item = by_line[(g["file"], n)]
            code = "\n".join(f"{'&gt;' if k == n else ' '} {k:5d}  {e(text)}" for k, text in item["context"])
            read = item.get("read_at")
            how = (f'read the value it stored, at <code>{e(read["short"])}:{read["line"]}</code>' if read
                   else "executed it")
            parts.append(f'<p>#{item["rank"]} <code>{e(g["file"])}:{n}</code> score {item["score"]}, '
                         f'{item["failing"]} failing / {item["passing"]} passing runs {how}</p>'
                         f"<pre>{code}</pre>")
    return "\n".join(parts)


def _page(data: dict[str, Any], sizes: list[int], passes: list[str], has_diagram: bool, has_replay: bool,
          where: str = "") -> str:
    e = html.escape
    t = data.get("target") or {}
    words = "".join(f"<li>{e(w)}</li>" for w in data.get("mcs_in_words", []))
    rows = "".join(f"<tr><td>{i}</td><td>{e(p)}</td><td>{s}</td></tr>"
                   for i, (s, p) in enumerate(zip(sizes, passes, strict=True)))
    minimal = "1-minimal" if data.get("one_minimal") else f"stopped: {e(str(data.get('stop_reason', '?')))}"
    rate = data.get("reproduction_rate")
    diagram = (DIAGRAM if has_diagram else "<p>(no mcs.jsonl: no diagram)</p>")
    if has_replay:
        diagram += ('<p><a id="replay" href="mcs-replay.html">Space-time diagram of a confirmation replay of the '
                    "MCS (what the controller did with only these inputs)</a></p>")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>netsleuth minimize report</title>
<style>body{{font:14px/1.4 system-ui,sans-serif;margin:24px;max-width:1100px}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}}
#diagram-frame{{width:100%;height:480px;border:1px solid #ddd}}
{TOPOLOGY_CSS}</style>
</head><body>
<h1>netsleuth minimize</h1>
<p>trace <code>{e(str(data.get("trace", "")))}</code><br>
target:</p><pre>{e(violations_text([t]) if t.get("invariant") else "")}</pre>
<p>inputs {data.get("inputs_before", "?")} &rarr; {data.get("inputs_after", "?")} ({minimal}),
{data.get("replays", "?")} replays, {data.get("seconds", "?")} s{
    f", the MCS reproduces in {rate:.0%} of confirmation replays" if rate is not None else ""}</p>
{where}
<h2>Minimal causal sequence</h2><ol>{words}</ol>
{diagram}
{localize_html(data.get("localize"))}
<h2>MCS size per iteration</h2>
<img id="plot" src="sizes.png" alt="MCS size per iteration">
<details><summary>iterations</summary><table><tr><th>iteration</th><th>pass</th><th>inputs</th></tr>{rows}</table>
</details>
</body></html>
"""
