"""`netsleuth viz`: the space-time diagram of a real trace, rendered by headless Chromium.

The page draws its SVG with inline JS, so the tests look at what Chromium
made of it: the DOM after the script ran (--dump-dom: one lane element per
controller, switch and host; the drawing items) and a screenshot (the lane
lines really are on screen, in their colours, at the rows the layout put
them, and the space between lanes is not).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from PIL import Image

from netsleuth.cli import main
from netsleuth.model.topology import Topology
from netsleuth.rootcause.viz import DY, LANE_COLOURS, viz
from netsleuth.trace import schema as ts
from netsleuth.trace.io import read_trace, write_trace

BAR = 40  # px of the page's fixed top bar above the diagram
LABELS = 90  # px of the lane-label column left of it


def chromium(url: str, *mode: str) -> subprocess.CompletedProcess:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("chromium is not installed: run `make setup` (Debian package chromium)")
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                               "--disable-background-networking", "--disable-component-update", "--disable-sync",
                               f"--user-data-dir={profile}", "--window-size=1400,900", *mode, url],
                              capture_output=True, text=True, timeout=60)


def lanes_in(dom: str) -> list[tuple[str, str, float]]:
    """(role, node, y) of every lane element the script created, in document order."""
    out = []
    for tag in re.findall(r'<line [^>]*class="lane [^"]*"[^>]*>', dom):
        role = re.search(r'class="lane (\w+)"', tag).group(1)
        node = re.search(r'data-node="([^"]+)"', tag).group(1)
        out.append((role, node, float(re.search(r'data-y="([^"]+)"', tag).group(1))))
    return out


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]


def _share(img: Image.Image, row: int, colour: tuple[int, int, int], tol: int = 40) -> float:
    """The share of pixels of a screen row (right of the labels) within ``tol`` of ``colour``."""
    xs = range(LABELS + 5, img.width - 5)
    near = 0
    for x in xs:
        p = img.getpixel((x, row))[:3]
        if all(abs(a - b) <= tol for a, b in zip(p, colour, strict=True)):
            near += 1
    return near / len(xs)


@pytest.mark.real
def test_one_trace_renders_a_lane_per_node(migration_blackhole_trace: Path, tmp_path: Path) -> None:
    page = tmp_path / "diagram.html"
    assert main(["viz", str(migration_blackhole_trace), "--html", str(page)]) == 0
    text = page.read_text()
    assert "<script src" not in text and "http://" not in text.replace("http://www.w3.org/2000/svg", "")  # no CDN
    dom = chromium(page.as_uri(), "--dump-dom").stdout
    trace = read_trace(migration_blackhole_trace)
    topo = Topology.from_json(trace.header.topology)
    expected = [("controller", "c0")] + [("switch", s.name) for s in topo.switches] + \
        [("host", h.name) for h in topo.hosts]
    lanes = lanes_in(dom)
    assert [(r, n) for r, n, _ in lanes] == expected
    assert [y for *_, y in lanes] == sorted(y for *_, y in lanes)
    # the script drew every item: one element each, and at least a message per control event
    drawn = int(re.search(r'data-rendered="(\d+)"', dom).group(1))
    assert drawn == len(re.findall(r'class="it ', dom))
    control = sum(1 for e in trace.events if e.kind in ("of_to_switch", "of_to_controller"))
    assert len(re.findall(r'class="it line m-', dom)) >= control
    assert len(re.findall(r'class="it band viol', dom)) == sum(1 for e in trace.events if e.kind == "violation")
    assert len(re.findall(r'class="it square input', dom)) >= sum(1 for e in trace.events if e.is_input)

    shot = tmp_path / "shot.png"
    chromium(page.as_uri(), f"--screenshot={shot}")
    img = Image.open(shot).convert("RGB")
    assert img.size == (1400, 900)
    for role, node, y in lanes:
        row = BAR + int(y)
        share = max(_share(img, r, _rgb(LANE_COLOURS[role])) for r in (row - 1, row))
        assert share > 0.5, f"lane {node} not drawn at row {row} ({share:.0%} of the row in its colour)"
        between = BAR + int(y + DY / 2)
        assert _share(img, between, _rgb(LANE_COLOURS[role])) < 0.05, f"lane colour between lanes at {between}"


@pytest.mark.real
def test_two_traces_aligned_with_differences_highlighted(migration_blackhole_trace: Path, tmp_path: Path) -> None:
    a = read_trace(migration_blackhole_trace)
    # B is A without the host's move and without one packet's hops: what a pruned replay might look like
    move = next(e for e in a.events if isinstance(e, ts.HostMigration))
    pid = sorted({e.pid for e in a.events if isinstance(e, ts.PacketArrival)})[1]
    dropped = {move.seq} | {e.seq for e in a.events if isinstance(e, ts.PacketArrival) and e.pid == pid}
    b_path = tmp_path / "b.jsonl"
    write_trace(b_path, ts.Trace(a.header, [e for e in a.events if e.seq not in dropped]))
    page = tmp_path / "two.html"
    summary = viz([migration_blackhole_trace, b_path], page)
    assert summary["columns"] == len(a.events) and summary["differences"] == len(dropped)
    assert list(summary["unmatched"].values()) == [len(dropped), 0]
    dom = chromium(page.as_uri(), "--dump-dom").stdout
    lanes = lanes_in(dom)
    assert len(lanes) == 2 * (1 + 3 + 3)
    # every common event shares a column; exactly the dropped ones are highlighted, in both panels
    assert len(re.findall(r'class="halo"', dom)) == 2 * len(dropped)
    assert len(re.findall(r'class="it [a-z]+ [a-z-]* ?diff"', dom)) >= len(dropped)


def test_missing_trace_is_one_clear_error(tmp_path: Path, capsys) -> None:
    assert main(["viz", str(tmp_path / "nope.jsonl"), "--html", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not exist" in err[0] and "fix:" in err[0]


HOSTILE = ["<!--<script>", "</script><h1 id=injected>x</h1>", "a & b &amp; <b>c</b> -->"]


@pytest.mark.real
def test_markup_in_trace_fields_cannot_break_the_page(tmp_path: Path) -> None:
    """`<!--<script>` in any field once blanked the page (the HTML parser swallowed the closing tag).

    Every embedded string carries HTML-significant text here -- an event's
    detail, a violation's message, the trace's own file name -- and headless
    Chromium must still draw every lane and item, with no element injected,
    and the hover text must hold the characters as written."""
    from netsleuth.model.topo_builders import parse_topo

    topo = parse_topo("linear,2")
    events = [ts.ControllerEvent(seq=0, t=0.0, controller="c0", what="started", detail=HOSTILE[0]),
              ts.ControllerEvent(seq=1, t=0.1, controller="c0", what="log_error", detail=HOSTILE[1]),
              ts.Violation(seq=2, t=0.2, invariant="blackholes", message=HOSTILE[2], persistent=True,
                           hosts=("h1", "h2"), switches=("s1",), details={"why": HOSTILE[0] + HOSTILE[1]})]
    trace = tmp_path / "<!--<script>&.jsonl"
    write_trace(trace, ts.Trace(ts.TraceHeader(topology=topo.to_json(), topology_spec="linear,2",
                                               controller="osken:os_ken.app.simple_switch", seed=0,
                                               tool_version="test", command="fuzz"), events))
    page = tmp_path / "page.html"
    assert main(["viz", str(trace), "--html", str(page)]) == 0
    text = page.read_text()
    script = text[text.index("<script>"):]
    dom = chromium(page.as_uri(), "--dump-dom").stdout
    assert 'id="injected"' not in dom
    assert [(r, n) for r, n, _ in lanes_in(dom)] == [("controller", "c0"), ("switch", "s1"), ("switch", "s2"),
                                                      ("host", "h1"), ("host", "h2")]
    assert "<!--" not in script and "</script>" not in script[:-len("</script></body></html>\n")]
    assert int(re.search(r'data-rendered="(\d+)"', dom).group(1)) >= 3
    # the strings come back unchanged: the page's title (as text) and the data its script reads
    assert "&lt;!--&lt;script&gt;&amp;.jsonl" in dom
    blob = script[script.index("const D = ") + len("const D = "):script.index(";\nconst NS")]
    tips = "\n".join(json.loads(blob)["tips"])
    assert all(h in tips for h in HOSTILE)
