"""`netsleuth minimize`'s report: the MCS-size plot, the MCS diagram, report.html.

Fast: no controller is replayed. The minimizer runs on the inputs of a real
migration-blackhole trace with a headless oracle (a candidate reproduces if
the state rebuilt from the trace with only its inputs has the target
blackhole), then the job's own writer (jobs/minimize.py ``_write``) writes
mcs.jsonl, result.json and the report.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from PIL import Image

from netsleuth.invariants import registry
from netsleuth.jobs.minimize import _write
from netsleuth.jobs.replay import Target, find_target
from netsleuth.minimize.api import minimize
from netsleuth.minimize.oracle import ReplayVerdict
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


def test_report_plots_sizes_and_links_the_mcs_diagram(migration_blackhole_trace: Path, tmp_path: Path) -> None:
    trace = read_trace(migration_blackhole_trace)
    target = find_target(trace.events)
    inputs = [e for e in trace.events if e.is_input]
    result = minimize(inputs, HeadlessOracle(trace, target), executor="serial")
    data = {"command": "minimize", "trace": str(migration_blackhole_trace), "target": target.to_json()}
    _write(tmp_path, trace, data, result)

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
