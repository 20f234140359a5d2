"""A wrong value stored in one handler call and used in another, localized through the data flow between calls.

os-ken's simple_switch with its learning line seeded to learn every host at port 1
(bench/localize.py's ``ss-learn-constant``): the call that installs the wrong rule
reads the port an earlier call stored, and the storing line runs in every call, so
line coverage alone ranks it behind the whole install path (24th of 34).  The
controller process notes which call stored each value of the app's dictionaries a
call reads (controllers/covlaunch.py, ``--flows``), and the ranking puts the store
right after the read it fed.

A flipped known-destination test (``ss-flipped-known``) makes the packet-in handler
raise ``KeyError`` on the first packet: the minimal trace is that packet, and no
passing call runs the handler, so no spectrum ranks.  The exception's slice does:
the test of the key that let the missing key through (recorded in the same call),
then the read that raised.  The fuzz runs are recorded (they found the violations with the benchmark's
settings), so the tests do not fuzz.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from netsleuth.jobs.minimize import MinimizeOptions, run_minimize

pytestmark = [pytest.mark.real, pytest.mark.slow]

DATA = Path(__file__).parent / "data" / "localize" / "windows"
APP = DATA / "ss_wrong_out_port.py.txt"   # os-ken's simple_switch with line 77 seeded: restored here
TRACE = DATA / "ss_learn_constant.trace.jsonl"
LEARN, SEEDED = "self.mac_to_port[dpid][src] = msg.in_port", "self.mac_to_port[dpid][src] = 1"
READ = "out_port = self.mac_to_port[dpid][dst]"


KNOWN, FLIPPED = "if dst in self.mac_to_port[dpid]:", "if dst not in self.mac_to_port[dpid]:"


def seeded(folder: Path, name: str, old: str, new: str) -> tuple[Path, int]:
    """os-ken's simple_switch with ``old`` made ``new``; the copy and the faulty line's number."""
    lines = APP.read_text().replace("out_port = msg.in_port", READ).splitlines(keepends=True)
    (i,) = [k for k, line in enumerate(lines) if line.strip() == old]
    lines[i] = lines[i].replace(old, new)
    path = folder / f"{name}.py"
    path.write_text("".join(lines))
    return path.resolve(), i + 1


def learn_constant(folder: Path) -> tuple[Path, int]:
    """simple_switch learning every host at port 1."""
    return seeded(folder, "ss_learn_constant", LEARN, SEEDED)


def test_a_wrong_learned_value_ranks_right_after_the_read_it_fed(tmp_path: Path, capsys) -> None:
    app, line = learn_constant(tmp_path)
    spec = f"osken:{app}"
    d = run_minimize(MinimizeOptions(trace=TRACE, out=tmp_path / "min", controller=[spec], jobs=2, budget=90,
                                     localize=True))
    loc = d["localize"]
    assert loc["spectrum"] == "handler calls" and loc["separable"], loc
    top = loc["top"]
    ranks = {(t["file"], t["line"]): t for t in top}
    found = ranks.get((str(app), line))
    with capsys.disabled():
        print(f"learn-constant: the store ranks {found and found['rank']} "
              f"({loc['failing']} failing / {loc['passing']} passing calls)")
    assert found is not None and found["rank"] <= 2 and found["block"] == 1, top[:4]
    # ranked as the store of the value the failing call read, right after that read (they tie)
    assert [t["source"] for t in top[:2]] == [READ, SEEDED] and found["read_at"]["source"] == READ
    calls = [json.loads(p.read_text()) for p in sorted((tmp_path / "min").glob("*/w*/*/coverage.json"))]
    flows = [f for c in calls for w in c.get("windows", []) for f in w.get("flows", [])]
    assert any(f[0] == str(app) and f[1] == line for f in flows), flows[:5]
    assert all(f[2] != w["key"] for c in calls for w in c.get("windows", []) for f in w.get("flows", []))
    assert "read the value it stored" in (tmp_path / "min" / "report.html").read_text()


def test_an_exception_no_passing_call_can_rank_is_ranked_from_the_line_that_raised(tmp_path: Path, capsys) -> None:
    app, line = seeded(tmp_path, "ss_flipped_known", KNOWN, FLIPPED)
    spec = f"osken:{app}"
    d = run_minimize(MinimizeOptions(trace=DATA / "ss_flipped_known.trace.jsonl", out=tmp_path / "min",
                                     controller=[spec], jobs=2, budget=90, localize=True))
    assert d["target"]["invariant"] == "exceptions"
    loc = d["localize"]
    assert loc["spectrum"] == "exception slice" and loc["separable"], loc
    top = [(t["line"], t["source"], t["block"]) for t in loc["top"][:3]]
    with capsys.disabled():
        print("flipped-known, exception slice:", top)
    # the flipped test of the key, which let a missing key through, then the read that raised KeyError
    assert top[:2] == [(line, FLIPPED, 1), (line + 1, READ, 2)], top
    calls = [json.loads(p.read_text()) for p in sorted((tmp_path / "min").glob("*/w*/*/coverage.json"))]
    guards = {(g[1], g[3]) for c in calls for w in c.get("windows", []) for g in w.get("guards", [])}
    assert (line, line + 1) in guards, guards
