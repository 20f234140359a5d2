"""`netsleuth minimize`'s report: the MCS-size plot, the topology, the MCS diagram, report.html.

Fast: no controller is replayed. The minimizer runs on the inputs of a real
migration-blackhole trace with a headless oracle (a candidate reproduces if
the state rebuilt from the trace with only its inputs has the target
blackhole), then the job's own writer (jobs/minimize.py ``_write``) writes
mcs.jsonl, result.json and the report. Headless Chromium renders the page:
the topology's SVG, the violation drawn in red on screen, the embedded
diagram drawn inside its frame, no script error.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from PIL import Image
from test_tools_viz import chromium

from netsleuth.invariants import registry
from netsleuth.jobs.minimize import _write
from netsleuth.jobs.replay import Target, find_target
from netsleuth.jobs.report_topology import HIGHLIGHT
from netsleuth.minimize.api import MinimizationResult, minimize
from netsleuth.minimize.oracle import ReplayVerdict
from netsleuth.model.topology import Topology
from netsleuth.trace import schema as ts
from netsleuth.trace.io import read_trace
from netsleuth.world.rebuild import rebuild

pytestmark = pytest.mark.real


class HeadlessOracle:
    """Reproduces if the recorded tables plus only the candidate's inputs show the target."""

    def __init__(self, trace: ts.Trace, target: Target) -> None:
        self.trace, self.target = trace, target

    def reproduces(self, candidate: tuple[ts.InputEvent, ...]) -> ReplayVerdict:
        keep = {e.id: e for e in candidate}
        events = [keep[e.id] if e.is_input else e for e in self.trace.events if not e.is_input or e.id in keep]
        world = rebuild(self.trace.header, events).world
        findings = registry.check(world.view(), registry.resolve(["blackholes"]))
        return ReplayVerdict(self.target.found_in(findings), {})


def _minimized(path: Path, out: Path) -> tuple[list[ts.InputEvent], MinimizationResult]:
    """Minimize the trace's inputs with the headless oracle and write the job's outputs to ``out``."""
    trace = read_trace(path)
    target = find_target(trace.events)
    assert target is not None
    inputs = [e for e in trace.events if e.is_input]
    result = minimize(inputs, HeadlessOracle(trace, target), executor="serial")
    _write(out, trace, {"command": "minimize", "trace": str(path), "target": target.to_json()}, result)
    return inputs, result


def test_report_plots_sizes_and_links_the_mcs_diagram(migration_blackhole_trace: Path, tmp_path: Path) -> None:
    inputs, result = _minimized(migration_blackhole_trace, tmp_path)

    d = json.loads((tmp_path / "result.json").read_text())
    assert d["report"] == {"plot": str(tmp_path / "sizes.png"), "diagram": str(tmp_path / "mcs.html"),
                           "html": str(tmp_path / "report.html")}
    sizes = d["sizes"]
    assert sizes[0] == len(inputs) and sizes[-1] == len(result.mcs) < len(inputs)
    assert any(m["kind"] == "host_migration" for m in d["mcs"])  # the bug needs the move

    # the plot: a PNG whose step line starts high on the left and ends low on the right
    img = Image.open(tmp_path / "sizes.png").convert("RGB")
    assert img.size == (700, 360)
    blue = [(x, y) for x in range(img.width) for y in range(img.height)
            if img.getpixel((x, y)) == (0x1F, 0x77, 0xB4)]
    assert len(blue) > 200
    left, right = min(x for x, _ in blue), max(x for x, _ in blue)
    top_left = min(y for x, y in blue if x <= left + 3)
    top_right = min(y for x, y in blue if x >= right - 3)
    assert top_left < top_right - 50  # many inputs first, few at the end

    page = (tmp_path / "report.html").read_text()
    assert '<img id="plot" src="sizes.png"' in page and '<a id="diagram" href="mcs.html">' in page
    assert len(re.findall(r"<tr><td>\d+</td>", page)) == len(sizes)
    for words in d["mcs_in_words"]:
        assert words in page
    # the linked diagram is the one of mcs.jsonl: one column per event of the MCS trace
    mcs = read_trace(tmp_path / "mcs.jsonl")
    diagram = (tmp_path / "mcs.html").read_text()
    assert f'"columns":{len(mcs.events)},' in diagram
    assert sum(1 for e in mcs.events if e.is_input) == len(result.mcs)


def _red_share(img: Image.Image, origin: tuple[int, int], a: tuple[float, float], b: tuple[float, float]) -> float:
    """The share of points along the segment a-b (its middle 60%) with a pixel of the highlight colour."""
    hits = 0
    for k in range(21):
        f = 0.2 + 0.6 * k / 20
        x, y = origin[0] + a[0] + (b[0] - a[0]) * f, origin[1] + a[1] + (b[1] - a[1]) * f
        near = [img.getpixel((int(x) + dx, int(y) + dy)) for dx in (-1, 0, 1) for dy in (-1, 0, 1)]
        hits += any(all(abs(c - h) <= 40 for c, h in zip(p, _rgb(HIGHLIGHT), strict=True)) for p in near)
    return hits / 21


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return int(hex_colour[1:3], 16), int(hex_colour[3:5], 16), int(hex_colour[5:7], 16)


def test_report_page_renders_topology_violation_and_diagram(migration_blackhole_trace: Path, tmp_path: Path) -> None:
    """What a developer sees first: every node of the topology, the blackhole's path in red, the
    rule's dead output port (where the moved host used to be) dashed red, the diagram with its legend."""
    _, result = _minimized(migration_blackhole_trace, tmp_path)
    page = tmp_path / "report.html"
    text = page.read_text()
    assert "<script src" not in text and "<iframe" in text  # self-contained, the diagram embedded
    run = chromium(page.as_uri(), "--allow-file-access-from-files", "--enable-logging=stderr", "--v=0", "--dump-dom")
    dom = run.stdout
    assert "Uncaught" not in run.stderr, run.stderr  # no script error, in the page or in its frame
    # the frame loaded mcs.html and its script drew the diagram (a count of items, not just "loaded")
    drawn = re.search(r'id="diagram-frame"[^>]*data-loaded="(\d+)"', dom)
    assert drawn and int(drawn.group(1)) > 0
    assert "squares are the MCS" in dom and "red band is the violation" in dom
    diagram = (tmp_path / "mcs.html").read_text()
    for word in ("legend", "FLOW_MOD", "PACKET_IN", "PACKET_OUT", "PORT_STATUS", "violation", "input"):
        assert word in diagram[diagram.index('<div id="legend">'):diagram.index('<div id="tip">')]

    mcs = read_trace(tmp_path / "mcs.jsonl")
    topo = Topology.from_json(mcs.header.topology)
    svg = dom[dom.index('<svg id="topology"'):dom.index("</svg>", dom.index('<svg id="topology"'))]
    drawn_nodes = sorted(n for _, n in re.findall(r'<g class="node (switch|host)[^"]*" data-node="([^"]+)"', svg))
    assert drawn_nodes == sorted([s.name for s in topo.switches] + [h.name for h in topo.hosts])
    target = json.loads((tmp_path / "result.json").read_text())["target"]
    for n in [*target["switches"], *target["hosts"]]:
        assert re.search(rf'<g class="node \w+ hl" data-node="{n}"', svg)
    links = {m.group(2): (m.group(1), tuple(float(m.group(k)) for k in (3, 4, 5, 6))) for m in re.finditer(
        r'<line class="([^"]+)" data-link="([^"]+)" x1="([\d.]+)" y1="([\d.]+)" x2="([\d.]+)" y2="([\d.]+)"', svg)}
    # the path's hops (switch:in_port) enter by links drawn red; the links off the path are not
    path = {tuple(h.split(":")) for h in target["details"]["path"]}
    on_path = {k for k in links if {tuple(end.split(":")) for end in k.split("-")} & path}
    assert len(on_path) == len(path)
    assert all(" hl" in links[k][0] for k in on_path)
    assert any(" hl" not in cls for cls, _ in links.values())
    # the dropping rule outputs to the port the host left: that old attachment is dashed red
    move = next(e for e in result.mcs if isinstance(e, ts.HostMigration))
    old = next(k for k in links if f"{move.old_switch}:{move.old_port}" in k.split("-"))
    assert links[old][0] == "link moved hl drop" and target["details"]["where"] == move.old_switch

    # on screen: red along the highlighted links, none along the others
    shot = tmp_path / "shot.png"
    chromium(page.as_uri(), "--allow-file-access-from-files", "--window-size=1400,1600", f"--screenshot={shot}")
    img = Image.open(shot).convert("RGB")
    # the SVG's background (#fcfcfc) starts at its (0, 0): the first screen row mostly of that colour
    top = next(y for y in range(img.height)
               if dict((c, n) for n, c in img.crop((0, y, img.width, y + 1)).getcolors(img.width)).get((252,) * 3, 0)
               > 600)
    origin = (next(x for x in range(img.width) if img.getpixel((x, top)) == (252,) * 3), top)
    for k, (cls, (x1, y1, x2, y2)) in links.items():
        share = _red_share(img, origin, (x1, y1), (x2, y2))
        if " hl" in cls:
            assert share > (0.3 if "drop" in cls else 0.8), f"{k} ({cls}) not drawn red: {share:.0%}"
        else:
            assert share < 0.1, f"{k} ({cls}) drawn red: {share:.0%}"
