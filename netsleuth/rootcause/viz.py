"""`netsleuth viz TRACE [TRACE2 ...] --html OUT.html`: space-time (Lamport) diagrams.

One horizontal lane per controller, switch and host; time runs left to
right in *logical* steps (one column per event, so bursts of messages a few
microseconds apart stay readable). A message is a line from its sender's
lane to its receiver's lane ending in a dot at the receive. The trace
records deliveries, not sends, so a line starts at the sender's latest
earlier event (the PACKET_IN a controller answers, the hop a packet came
from); that is the causal predecessor the sender acted on, which is what a
Lamport diagram needs to show. Inputs are squares on every lane they touch,
violations a red band. A legend strip at the foot of the page says what each
lane colour, message colour and mark means, so the page reads on its own
(and inside the minimizer's report, which embeds it).

With several traces, events are aligned by what they are (the masked
fingerprint for messages and packets, the parameters for inputs;
:func:`netsleuth.rootcause.diff.event_key`) with an order-preserving sequence
alignment, so the same event sits in the same column in every panel and an
event missing from some trace is highlighted (comparing replays during
minimization).

The page is self-contained (inline CSS, JS and SVG, no CDN) so it opens
offline and can be attached to a bug report. The layout is computed here,
the JS only builds the SVG elements and handles hover, zoom and pan.
"""

from __future__ import annotations

import difflib
import html
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netsleuth.errors import NetsleuthError
from netsleuth.model.topology import Topology
from netsleuth.rootcause.describe import describe, nodes_of, switch_name
from netsleuth.rootcause.diff import event_key
from netsleuth.trace import schema as ts
from netsleuth.trace.controller_spec import SEPARATOR
from netsleuth.trace.io import read_trace

DX = 14          # px per column at zoom 1
DY = 34          # px between lanes
PANEL_GAP = 46   # px between two traces' panels (room for the panel title)
TOP = 30         # px above the first lane of a panel
SENDER_WINDOW = 40  # columns back to look for a message's sender event

LANE_COLOURS = {"controller": "#8e44ad", "switch": "#2f6fbf", "host": "#2e9e5b"}


class VizError(NetsleuthError):
    pass


@dataclass
class Panel:
    """One trace's lanes and drawing items, in page coordinates (x in columns)."""

    name: str
    top: float
    lanes: list[dict] = field(default_factory=list)
    items: list[list] = field(default_factory=list)   # [type, x1, y1, x2, y2, css class, tip index]
    height: float = 0.0


def lanes_of(trace: ts.Trace) -> list[tuple[str, str]]:
    """(node, role) in lane order: controllers, then switches and hosts in topology order."""
    topo = Topology.from_json(trace.header.topology)
    # only the event kinds below carry a controller (checked with getattr first)
    controllers = sorted({e.controller for e in trace.events  # type: ignore[attr-defined]
                          if isinstance(getattr(e, "controller", None), str)
                          and e.kind in ("of_to_switch", "of_to_controller", "switch_connected",
                                         "controller_event", "controller_crash", "controller_recovery",
                                         "config_change")})
    if not controllers:
        controllers = [f"c{i}" for i, _ in enumerate(trace.header.controller.split(SEPARATOR))]
    switches = [s.name for s in topo.switches]
    hosts = [h.name for h in topo.hosts]
    return [(c, "controller") for c in controllers] + [(s, "switch") for s in switches] + \
        [(h, "host") for h in hosts]


def align(traces: Sequence[ts.Trace]) -> list[list[int | None]]:
    """Columns: for each, the index of its event in every trace (None where that trace lacks it).

    Each further trace is aligned against the columns so far with an
    order-preserving longest-matching-blocks alignment (difflib), so common
    events line up and the rest get columns of their own.
    """
    keys = [[event_key(e) for e in t.events] for t in traces]
    columns: list[list[int | None]] = [[i] + [None] * (len(traces) - 1) for i in range(len(keys[0]))]
    col_keys = list(keys[0])
    for k in range(1, len(traces)):
        sm = difflib.SequenceMatcher(None, col_keys, keys[k], autojunk=False)
        new_cols: list[list[int | None]] = []
        new_keys: list[tuple] = []
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag == "equal":
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                    columns[i][k] = j
                    new_cols.append(columns[i])
                    new_keys.append(col_keys[i])
                continue
            for i in range(i1, i2):  # only in the earlier traces
                new_cols.append(columns[i])
                new_keys.append(col_keys[i])
            for j in range(j1, j2):  # only in this one
                col: list[int | None] = [None] * len(traces)
                col[k] = j
                new_cols.append(col)
                new_keys.append(keys[k][j])
        columns, col_keys = new_cols, new_keys
    return columns


def _sender(e: ts.Event) -> tuple[str | None, str | None]:
    """(sender lane, receiver lane) for a message-like event, else (None, None)."""
    if isinstance(e, ts.ControlToSwitch):
        return e.controller, switch_name(e.dpid)
    if isinstance(e, ts.ControlToController):
        return switch_name(e.dpid), e.controller
    return None, None


def _msg_class(e: ts.Event) -> str:
    t = e.msg.get("type", "") if hasattr(e, "msg") else ""
    return {"FLOW_MOD": "m-flow", "PACKET_IN": "m-pin", "PACKET_OUT": "m-pout",
            "PORT_STATUS": "m-port"}.get(t, "m-other")


def _layout_panel(name: str, trace: ts.Trace, columns: list[list[int | None]], k: int, top: float,
                  tips: list[str], diff_cols: set[int]) -> Panel:
    lanes = lanes_of(trace)
    y_of = {node: top + TOP + i * DY for i, (node, _) in enumerate(lanes)}
    panel = Panel(name, top, [{"node": n, "role": r, "y": y_of[n]} for n, r in lanes])
    panel.height = TOP + max(0, len(lanes) - 1) * DY + 24
    y_min, y_max = top + TOP - 12, top + TOP + max(0, len(lanes) - 1) * DY + 12
    last_x: dict[str, float] = {}          # node -> column of its latest event
    last_hop: dict[int, tuple[str, float]] = {}  # packet lineage -> (node, column) of its previous hop
    hosts = frozenset(n for n, r in lanes if r == "host")
    # (switch, port) -> host plugged in there, kept current through migrations: a packet's
    # first hop into a switch was sent by that host.
    attached: dict[tuple[str, int], str] = {}
    for lk in Topology.from_json(trace.header.topology).links:
        if lk.node1 in hosts:
            attached[(lk.node2, lk.port2)] = lk.node1
        elif lk.node2 in hosts:
            attached[(lk.node1, lk.port1)] = lk.node2
    for x, col in enumerate(columns):
        i = col[k]
        if i is None:
            continue
        e = trace.events[i]
        tip = len(tips)
        tips.append(f"{name} [{e.seq}] t={e.t:.6f} {e.kind}\n{describe(e)}"
                    # fp only on the event kinds that carry one (checked with getattr first)
                    + (f"\nfp {json.dumps(e.fp)}" if getattr(e, "fp", None) else "")  # type: ignore[attr-defined]
                    + ("\nnot in every trace" if x in diff_cols else ""))
        diff = " diff" if x in diff_cols else ""
        src, dst = _sender(e)
        if isinstance(e, ts.PacketArrival):
            prev = last_hop.get(e.pid)
            src, dst = (prev[0] if prev else attached.get((e.node, e.port))), e.node
            last_hop[e.pid] = (e.node, x)
            cls = "pkt"
        elif src is not None:
            cls = _msg_class(e)
        else:
            cls = ""
        if dst is not None and dst in y_of:
            if src in y_of:
                sx = last_x.get(src, x - 0.5) if src is not None else x - 0.5
                if isinstance(e, ts.PacketArrival) and prev:
                    sx = prev[1]
                if x - sx > SENDER_WINDOW:
                    sx = x - 0.5
                panel.items.append(["line", sx, y_of[src], x, y_of[dst], cls + diff, tip])
            panel.items.append(["dot", x, y_of[dst], x, y_of[dst], cls + diff, tip])
            for n in (src, dst):
                if n is not None:
                    last_x[n] = x
            continue
        touched = [n for n in nodes_of(e) if n in y_of]
        if isinstance(e, ts.Violation):
            panel.items.append(["band", x, y_min, x, y_max, "viol" + diff, tip])
            for n in touched or [lanes[0][0]]:
                panel.items.append(["dot", x, y_of[n], x, y_of[n], "viol" + diff, tip])
        elif e.is_input:
            if isinstance(e, ts.HostMigration):
                attached.pop((e.old_switch, e.old_port), None)
                attached[(e.new_switch, e.new_port)] = e.host
            if len(touched) > 1:
                ys = [y_of[n] for n in touched]
                panel.items.append(["span", x, min(ys), x, max(ys), "input" + diff, tip])
            for n in touched:
                panel.items.append(["square", x, y_of[n], x, y_of[n], "input" + diff, tip])
        else:
            for n in touched[:2] or [lanes[0][0]]:
                panel.items.append(["dot", x, y_of[n], x, y_of[n], "misc" + diff, tip])
        for n in touched:
            last_x[n] = x
    return panel


def build(traces: Sequence[ts.Trace], names: Sequence[str]) -> dict[str, Any]:
    """The diagram as data: panels, lanes, items, tips, columns and the differences."""
    if not traces:
        raise VizError("no trace to draw", "pass at least one trace.jsonl")
    columns: list[list[int | None]] = (align(traces) if len(traces) > 1
                                       else [[i] for i in range(len(traces[0].events))])
    diff_cols = {x for x, col in enumerate(columns) if any(i is None for i in col)} if len(traces) > 1 else set()
    tips: list[str] = []
    panels: list[Panel] = []
    top = 0.0
    for k, (trace, name) in enumerate(zip(traces, names, strict=True)):
        p = _layout_panel(name, trace, columns, k, top, tips, diff_cols)
        panels.append(p)
        top += p.height + PANEL_GAP
    # per trace: its events that some other trace lacks (with two traces: "only in this one")
    unmatched = {names[k]: sum(1 for col in columns if col[k] is not None and any(i is None for i in col))
                 for k in range(len(traces))} if len(traces) > 1 else {}
    return {
        "columns": len(columns), "dx": DX, "height": top - PANEL_GAP if panels else 0,
        "panels": [{"name": p.name, "top": p.top, "height": p.height, "lanes": p.lanes, "items": p.items}
                   for p in panels],
        "tips": tips, "diff_columns": sorted(diff_cols), "unmatched": unmatched,
        "events": {n: len(t.events) for n, t in zip(names, traces, strict=True)},
    }


def script_json(data: Any) -> str:
    """JSON that is safe inside an inline ``<script>``, whatever its strings hold.

    Trace fields come from controllers, topology files and users: a ``</script>``
    ends the script early, and ``<!--`` followed by ``<script`` puts the HTML
    parser in a state where the real ``</script>`` no longer closes it, so the
    rest of the page vanishes.  Writing every ``<``, ``>`` and ``&`` as a JSON
    unicode escape (they only occur inside strings) leaves the parser nothing
    to see, and the script still reads the same characters.
    """
    text = json.dumps(data, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def write_html(traces: Sequence[ts.Trace], names: Sequence[str], out: str | Path) -> dict[str, Any]:
    """Write the self-contained page; returns a summary (lanes, events, differences) for the CLI."""
    data = build(traces, names)
    title = "netsleuth space-time diagram: " + " vs ".join(names)
    blob = script_json(data)
    # one pass, so a trace name holding "__DATA__" cannot pull the data into the title
    fill = {"__TITLE__": html.escape(title), "__DATA__": blob}
    page = re.sub(r"__TITLE__|__DATA__", lambda m: fill[m.group(0)], _PAGE)
    try:
        Path(out).write_text(page, encoding="utf-8")
    except OSError as exc:
        raise VizError(f"cannot write {out}: {exc.strerror or exc}", "pass a writable path to --html") from None
    return {"html": str(out), "traces": data["events"], "columns": data["columns"],
            "lanes": {p["name"]: len(p["lanes"]) for p in data["panels"]},
            "differences": len(data["diff_columns"]), "unmatched": data["unmatched"]}


def viz(paths: Sequence[str | Path], out: str | Path) -> dict[str, Any]:
    """``netsleuth viz``: read the traces (named by file, made unique) and write the page."""
    traces = [read_trace(p) for p in paths]
    names: list[str] = []
    for p in paths:
        base = Path(p).parent.name + "/" + Path(p).name if Path(p).parent.name else Path(p).name
        name, n = base, 2
        while name in names:
            name, n = f"{base} ({n})", n + 1
        names.append(name)
    return write_html(traces, names, out)


_PAGE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>__TITLE__</title>
<style>
html,body{margin:0;padding:0;background:#fff;font:13px/1.3 system-ui,sans-serif;color:#222}
#bar{position:fixed;top:0;left:0;right:0;height:40px;box-sizing:border-box;padding:10px 12px;background:#f3f4f6;
 border-bottom:1px solid #ccc;white-space:nowrap;overflow:hidden;z-index:2}
#bar button{margin-left:6px}
#wrap{position:absolute;top:40px;left:0;right:0;bottom:28px;overflow-y:auto;overflow-x:hidden}
#legend{position:fixed;left:0;right:0;bottom:0;box-sizing:border-box;padding:3px 10px;background:#f3f4f6;
 border-top:1px solid #ccc;font-size:12px;line-height:20px;z-index:2}
#legend span{margin-right:10px;white-space:nowrap}#legend svg{vertical-align:middle;margin-right:3px}
#legend line{stroke-width:2}#legend line.lg-dot{stroke-width:7;stroke-linecap:round}
#legend line.lg-square{stroke-width:9;stroke-linecap:square}
#legend line.lg-band{stroke:#e01e1e;stroke-opacity:.25;stroke-width:10}
#labels{position:absolute;left:0;top:0;width:90px;background:#fff;z-index:1}
#main{position:absolute;left:90px;top:0;cursor:grab}
#main.drag{cursor:grabbing}
.lane{stroke-width:2;vector-effect:non-scaling-stroke}
.lane.controller{stroke:#8e44ad}.lane.switch{stroke:#2f6fbf}.lane.host{stroke:#2e9e5b}
.lbl{font:bold 12px system-ui,sans-serif}.ptitle{font:bold 13px system-ui,sans-serif;fill:#444}
.it{vector-effect:non-scaling-stroke}
line.line{stroke-width:1.2;stroke-opacity:.75}
line.dot,line.square{stroke-width:7}
line.dot{stroke-linecap:round}line.square{stroke-linecap:square;stroke-width:9}
.m-flow{stroke:#e67e22}.m-pin{stroke:#16a085}.m-pout{stroke:#1abc9c}.m-port{stroke:#c0392b}.m-other{stroke:#95a5a6}
.pkt{stroke:#7f8c8d}.input{stroke:#1f4fd1}.misc{stroke:#bbb}.viol{stroke:#e01e1e}
line.span{stroke-width:2;stroke-dasharray:4 3}
line.band{stroke:#e01e1e;stroke-opacity:.18;stroke-width:10}
line.diff.dot,line.diff.square{stroke:#f5b000}
line.diff.line{stroke:#f5b000;stroke-opacity:1;stroke-width:2}
.halo{stroke:#f5b000;stroke-opacity:.35;stroke-width:18;stroke-linecap:round;vector-effect:non-scaling-stroke}
#tip{position:fixed;display:none;max-width:560px;background:#222;color:#fff;padding:6px 8px;border-radius:4px;
 font:12px/1.35 ui-monospace,monospace;white-space:pre-wrap;pointer-events:none;z-index:3}
</style></head>
<body>
<div id="bar"><b>__TITLE__</b> <span id="info"></span>
<button id="zin" title="zoom in (wheel)">+</button><button id="zout" title="zoom out">&minus;</button>
<button id="zfit" title="whole trace">fit</button></div>
<div id="wrap"><svg id="labels" xmlns="http://www.w3.org/2000/svg"></svg>
<svg id="main" xmlns="http://www.w3.org/2000/svg" preserveAspectRatio="none"></svg></div>
<div id="legend"><b>legend</b>: lanes
<span><svg width="18" height="10"><line x1="0" y1="5" x2="18" y2="5" stroke="#8e44ad"/></svg>controller</span>
<span><svg width="18" height="10"><line x1="0" y1="5" x2="18" y2="5" stroke="#2f6fbf"/></svg>switch</span>
<span><svg width="18" height="10"><line x1="0" y1="5" x2="18" y2="5" stroke="#2e9e5b"/></svg>host</span>
&middot; messages, sender to receiver:
<span><svg width="18" height="10"><line class="m-flow" x1="0" y1="5" x2="18" y2="5"/></svg>FLOW_MOD</span>
<span><svg width="18" height="10"><line class="m-pin" x1="0" y1="5" x2="18" y2="5"/></svg>PACKET_IN</span>
<span><svg width="18" height="10"><line class="m-pout" x1="0" y1="5" x2="18" y2="5"/></svg>PACKET_OUT</span>
<span><svg width="18" height="10"><line class="m-port" x1="0" y1="5" x2="18" y2="5"/></svg>PORT_STATUS</span>
<span><svg width="18" height="10"><line class="m-other" x1="0" y1="5" x2="18" y2="5"/></svg>other OpenFlow</span>
<span><svg width="18" height="10"><line class="pkt" x1="0" y1="5" x2="18" y2="5"/></svg>packet hop</span>
&middot;
<span><svg width="14" height="12"><line class="lg-square input" x1="7" y1="6" x2="7" y2="6"/></svg>input
(host move, failure, traffic...)</span>
<span><svg width="14" height="14"><line class="lg-band" x1="7" y1="0" x2="7" y2="14"/></svg>violation</span>
<span><svg width="14" height="12"><line class="lg-dot" x1="7" y1="6" x2="7" y2="6" stroke="#f5b000"/></svg>not in
every trace</span></div>
<div id="tip"></div>
<script>
"use strict";
const T0 = performance.now();
const D = __DATA__;
const NS = "http://www.w3.org/2000/svg";
const main = document.getElementById("main"), labels = document.getElementById("labels");
const tip = document.getElementById("tip"), wrap = document.getElementById("wrap");
const W = Math.max(1, D.columns) * D.dx + 2 * D.dx, H = Math.max(40, D.height + 10);
function el(parent, name, attrs) {
  const e = document.createElementNS(NS, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  parent.appendChild(e); return e;
}
const frag = document.createDocumentFragment();
const halos = el(frag, "g", {id: "halos"}), lanesG = el(frag, "g", {id: "lanes"}),
      itemsG = el(frag, "g", {id: "items"});
const X = x => (x + 1) * D.dx;
for (const c of D.diff_columns) {
  for (const p of D.panels)
    el(halos, "line", {class: "halo", x1: X(c), x2: X(c), y1: p.top + 18, y2: p.top + p.height - 6});
}
for (const p of D.panels) {
  const pt = el(labels, "text", {class: "ptitle", x: 4, y: p.top + 14});
  pt.textContent = p.name; el(pt, "title", {}).textContent = p.name;
  for (const l of p.lanes) {
    el(lanesG, "line", {class: "lane " + l.role, x1: 0, x2: W, y1: l.y, y2: l.y, "data-node": l.node, "data-y": l.y});
    el(labels, "text", {class: "lbl", x: 8, y: l.y + 4, fill: l.role === "controller" ? "#8e44ad" :
      l.role === "switch" ? "#2f6fbf" : "#2e9e5b"}).textContent = l.node;
  }
  for (const it of p.items) {
    const [type, x1, y1, x2, y2, cls, t] = it;
    el(itemsG, "line", {class: "it " + type + " " + cls, x1: X(x1), y1: y1, x2: X(x2), y2: y2, "data-t": t});
  }
}
main.appendChild(frag);
let vx = 0, vw = W;
const legend = document.getElementById("legend");
function apply() {
  wrap.style.bottom = legend.offsetHeight + "px";  // the legend wraps to as many rows as the width needs
  const pw = Math.max(100, wrap.clientWidth - 90);
  main.setAttribute("width", pw); main.setAttribute("height", H);
  labels.setAttribute("height", H);
  main.setAttribute("viewBox", vx + " 0 " + vw + " " + H);
  document.getElementById("info").textContent = " | " + D.panels.length + " trace(s), " + D.columns +
    " columns" + (D.diff_columns.length ? ", " + D.diff_columns.length + " not in every trace (yellow)" : "") +
    " | showing columns " + Math.max(0, Math.floor(vx / D.dx)) + "-" + Math.floor((vx + vw) / D.dx);
}
function zoom(f, cx) {
  const nw = Math.min(W, Math.max(10 * D.dx, vw * f));
  vx = Math.min(Math.max(0, cx - (cx - vx) * nw / vw), Math.max(0, W - nw)); vw = nw; apply();
}
function clientToX(clientX) { const r = main.getBoundingClientRect(); return vx + (clientX - r.left) / r.width * vw; }
// Start readable: ~12 px per column, or the whole trace when it fits.
vw = Math.min(W, Math.max(10 * D.dx, (Math.max(100, wrap.clientWidth - 90)) * D.dx / 12));
apply();
main.addEventListener("wheel", ev => { ev.preventDefault(); zoom(ev.deltaY > 0 ? 1.25 : 0.8, clientToX(ev.clientX)); },
  {passive: false});
let drag = null;
main.addEventListener("mousedown", ev => { drag = {x: ev.clientX, vx: vx}; main.classList.add("drag"); });
window.addEventListener("mouseup", () => { drag = null; main.classList.remove("drag"); });
window.addEventListener("mousemove", ev => {
  if (drag) {
    const r = main.getBoundingClientRect();
    vx = Math.min(Math.max(0, drag.vx - (ev.clientX - drag.x) / r.width * vw), Math.max(0, W - vw)); apply();
  }
  const t = ev.target && ev.target.getAttribute && ev.target.getAttribute("data-t");
  if (t !== null && t !== undefined && !drag) {
    tip.textContent = D.tips[+t]; tip.style.display = "block";
    tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - 570) + "px";
    tip.style.top = (ev.clientY + 14) + "px";
  } else tip.style.display = "none";
});
document.getElementById("zin").onclick = () => zoom(0.5, vx + vw / 2);
document.getElementById("zout").onclick = () => zoom(2, vx + vw / 2);
document.getElementById("zfit").onclick = () => { vx = 0; vw = W; apply(); };
window.addEventListener("resize", apply);
document.documentElement.setAttribute("data-render-ms", (performance.now() - T0).toFixed(1));
document.documentElement.setAttribute("data-rendered", String(itemsG.childElementCount));
</script></body></html>
"""
